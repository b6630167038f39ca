//! Finding work: the mail boxes there are, and in each the deposits its
//! `(Pending)` view lists (complete, with a recipient or the sender's
//! copy still pending), oldest first, read with their routing state.
//!
//! Only boxes that exist are read (the router never makes one): every
//! `mail.box.fdb` and `mailN.box.fdb`, so a change of `mail.boxes`
//! leaves no message behind. A document the view lists but that does not
//! read as a deposit is skipped and counted, never guessed at.
//!
//! A pass takes a bounded number of deposits, shared fairly among the
//! boxes ([`shares`]): a pass stays short (its deliveries are recorded
//! when it ends, so its length is their latency), and a box that fills
//! faster than the others cannot starve them.

use super::state::Routing;
use crate::mailbox::{open_box, PENDING_VIEW};
use crate::MailResult;
use nsf::{Database, DbPath, Engine};
use std::sync::Arc;
use views::{Collection, Row, Start, Views};

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

/// One box's queue: its `(Pending)` view, and how many deposits it lists.
pub(crate) struct Queue<'v> {
    pub db: Arc<Database>,
    view: Collection<'v>,
    pub pending: u64,
}

/// What one box gives a pass: at most its share of deposits.
pub(crate) struct Scanned {
    pub work: Vec<Routing>,
    /// Listed documents that are not deposits.
    pub damaged: usize,
    /// The view listed more than the share.
    pub more: bool,
}

/// Opens box `path`'s queue.
pub(crate) fn queue<'v>(engine: &Engine, views: &'v Views, path: &DbPath) -> MailResult<Queue<'v>> {
    let db = open_box(engine, views, path)?;
    let view = views.open(&db, PENDING_VIEW)?;
    let pending = view.count()?;
    Ok(Queue { db, view, pending })
}

/// How many deposits a pass takes from each box, `budget` in all: the
/// same share from every box that has that many, what a box lacks
/// shared among the others (water-filling). So a box with a long queue
/// never holds up the others' mail, and a pass is full whenever the
/// boxes hold enough together.
pub(crate) fn shares(pending: &[u64], budget: usize) -> Vec<usize> {
    let mut out = vec![0usize; pending.len()];
    let mut left = budget;
    loop {
        let open: Vec<usize> = (0..pending.len())
            .filter(|&i| (out[i] as u64) < pending[i])
            .collect();
        if open.is_empty() || left == 0 {
            return out;
        }
        let each = (left / open.len()).max(1);
        for i in open {
            let take = (each as u64)
                .min(pending[i] - out[i] as u64)
                .min(left as u64) as usize;
            out[i] += take;
            left -= take;
            if left == 0 {
                return out;
            }
        }
    }
}

/// Reads the oldest `limit` of `q`'s pending deposits (see the module docs).
pub(crate) fn scan(q: &Queue<'_>, limit: usize) -> MailResult<Scanned> {
    let mut out = Scanned {
        work: Vec::new(),
        damaged: 0,
        more: q.pending > limit as u64,
    };
    let mut at = 0u64;
    while out.work.len() < limit {
        let rows = q.view.read(&Start::Position(at), PAGE, false, false)?;
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
            match q.db.get(unid) {
                Ok(note) => match Routing::read(&q.db, &note) {
                    Ok(r) => out.work.push(r),
                    Err(_) => out.damaged += 1,
                },
                // Gone since the view was read: nothing to do.
                Err(nsf::NsfError::NoSuchDocument { .. }) => {}
                Err(e) => return Err(e.into()),
            }
        }
        if done {
            break;
        }
    }
    Ok(out)
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

    #[test]
    fn every_box_gets_its_share_and_what_others_leave() {
        // Enough everywhere: equal shares.
        assert_eq!(shares(&[1000, 1000, 1000, 1000], 400), [100, 100, 100, 100]);
        // A long queue beside short ones: the short ones are emptied,
        // the long one takes what they leave, never all of it.
        assert_eq!(shares(&[5000, 3, 0, 10], 400), [387, 3, 0, 10]);
        assert_eq!(shares(&[5000, 5000, 7, 0], 401), [197, 197, 7, 0]);
        // Less than the budget in all: everything.
        assert_eq!(shares(&[5, 2, 0], 400), [5, 2, 0]);
        // A budget smaller than the boxes: one each, in order.
        assert_eq!(shares(&[9, 9, 9], 2), [1, 1, 0]);
        assert!(shares(&[], 10).is_empty());
        for (pending, budget) in [(vec![3u64, 900, 41, 0, 77], 100usize), (vec![1; 50], 7)] {
            let s = shares(&pending, budget);
            let total: usize = s.iter().sum();
            let all: u64 = pending.iter().sum();
            assert_eq!(total as u64, all.min(budget as u64));
            assert!(s.iter().zip(&pending).all(|(&t, &p)| t as u64 <= p));
        }
    }
}
