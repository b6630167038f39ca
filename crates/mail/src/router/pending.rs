//! Finding work: the mail boxes there are, and in each the deposits its
//! `(Pending)` view lists (complete, with a recipient or the sender's
//! copy still pending), oldest first, read with their routing state.
//!
//! Only boxes that exist are read (the router never makes one): every
//! `mail.box.fdb` and `mailN.box.fdb`, so a change of `mail.boxes`
//! leaves no message behind. A document the view lists but that does not
//! read as a deposit is skipped and counted, never guessed at.

use super::state::Routing;
use crate::mailbox::{open_box, PENDING_VIEW};
use crate::MailResult;
use nsf::{Database, DbPath, Engine};
use std::sync::Arc;
use views::{Row, Start, Views};

/// Rows read from a view at a time.
const PAGE: usize = 500;

/// Whether `path` names a mail box.
pub(crate) fn is_box(path: &str) -> bool {
    let Some(stem) = path.strip_suffix(".box.fdb") else {
        return false;
    };
    let Some(n) = stem.strip_prefix("mail") else {
        return false;
    };
    n.is_empty() || (n.len() <= 3 && n.bytes().all(|b| b.is_ascii_digit()) && !n.starts_with('0'))
}

/// The mail boxes in the data directory.
pub(crate) fn boxes(engine: &Engine) -> MailResult<Vec<DbPath>> {
    Ok(engine
        .list_databases()?
        .into_iter()
        .filter(|p| is_box(p))
        .filter_map(|p| DbPath::parse(&p).ok())
        .collect())
}

/// What one box holds for the router: at most `limit` deposits.
pub(crate) struct Scanned {
    pub db: Arc<Database>,
    pub work: Vec<Routing>,
    /// Listed documents that are not deposits.
    pub damaged: usize,
    /// The view listed more than `limit`.
    pub more: bool,
}

/// Reads box `path`'s pending deposits (see the module docs).
pub(crate) fn scan(
    engine: &Engine,
    views: &Views,
    path: &DbPath,
    limit: usize,
) -> MailResult<Scanned> {
    let db = open_box(engine, views, path)?;
    let view = views.open(&db, PENDING_VIEW)?;
    let mut out = Scanned {
        db: db.clone(),
        work: Vec::new(),
        damaged: 0,
        more: false,
    };
    let mut at = 0u64;
    loop {
        let rows = view.read(&Start::Position(at), PAGE, false, false)?;
        let done = rows.len() < PAGE;
        at += rows.len() as u64;
        for row in rows {
            let Row::Entry { unid, .. } = row else {
                continue;
            };
            if out.work.len() == limit {
                out.more = true;
                return Ok(out);
            }
            match db.get(unid) {
                Ok(note) => match Routing::read(&db, &note) {
                    Ok(r) => out.work.push(r),
                    Err(_) => out.damaged += 1,
                },
                // Gone since the view was read: nothing to do.
                Err(nsf::NsfError::NoSuchDocument { .. }) => {}
                Err(e) => return Err(e.into()),
            }
        }
        if done {
            return Ok(out);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn box_names_are_recognised() {
        for p in ["mail.box.fdb", "mail1.box.fdb", "mail64.box.fdb"] {
            assert!(is_box(p), "{p}");
        }
        for p in [
            "mail0.box.fdb",
            "mailx.box.fdb",
            "names.fdb",
            "mail/a.fdb",
            "mail1.fdb",
        ] {
            assert!(!is_box(p), "{p}");
        }
    }
}
