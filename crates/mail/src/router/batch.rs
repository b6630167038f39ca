//! Delivery into one mail file: every copy waiting for it in this pass,
//! as one batch of foreign writes (one transaction, up to nsf's group
//! limit) and one change of the Inbox folder.
//!
//! ```text
//!   open the mail file ──fails──▶ every job waits (the reason: the error)
//!   per job: the copy's UNID (notices.rs) already here?  live → Inbox only
//!                                                        stub → done (the user deleted it)
//!            else a foreign note ──▶ put_foreign_batch ──▶ per note: stored/already → Inbox
//!                                                                    error → waits
//!   Inbox += the recipients' live copies (adding twice is harmless) ──fails──▶ they wait
//!   each filed Notice ──▶ calendar::apply_delivered ──fails──▶ it waits
//! ```
//!
//! A filed Notice is then applied to the mail file's calendar
//! (`calendar/apply.rs`, I34). Only what this returns as filed may be
//! marked delivered (I33).

use super::notices::{copy_items, copy_unid, foreign, sent_items, sent_unid};
use super::state::Routing;
use super::stats::{RouterStats, Step};
use crate::directory::Person;
use crate::mailfile::open_mail_file;
use crate::template::INBOX;
use nsf::{
    Database, Engine, ForeignAttachment, ForeignContent, ForeignNote, NsfError, Timestamp, Unid,
};
use std::sync::Arc;
use std::time::Instant;
use views::Views;

/// Which copy of a message a job files.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Copy {
    /// Recipient `i`'s.
    Recipient(usize),
    /// The sender's, in Sent.
    Sender,
}

/// One copy to file: of the message `work[routing]`.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Job {
    pub routing: usize,
    pub copy: Copy,
}

/// What became of a job.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Filed {
    /// The copy is durable in the mail file (and a recipient's in the Inbox).
    Done,
    /// The mail file cannot take it now; why.
    Wait(String),
}

/// Files `jobs`, all for `person`'s mail file (see the module docs).
pub(crate) fn deliver(
    engine: &Engine,
    views: &Views,
    person: &Person,
    jobs: &[Job],
    work: &[(Arc<Database>, Routing)],
    now: Timestamp,
    stats: &RouterStats,
) -> Vec<Filed> {
    let t = Instant::now();
    let opened = open_mail_file(engine, views, person);
    let t = stats.step(Step::Open, t);
    let db = match opened {
        Ok(db) => db,
        Err(e) => {
            return vec![Filed::Wait(format!("mail file {}: {e}", person.mail_file)); jobs.len()]
        }
    };
    let mut out: Vec<Option<Filed>> = vec![None; jobs.len()];
    let mut to_inbox: Vec<(usize, Unid)> = Vec::new();
    let mut notes: Vec<ForeignNote> = Vec::new();
    let mut noted: Vec<(usize, Unid)> = Vec::new();
    for (j, job) in jobs.iter().enumerate() {
        let (box_db, r) = &work[job.routing];
        let unid = match job.copy {
            Copy::Recipient(_) => copy_unid(r.deposit.unid, &person.mail_file),
            Copy::Sender => sent_unid(r.deposit.unid, &person.mail_file),
        };
        match db.get_any(unid) {
            Ok(note) => {
                if job.copy != Copy::Sender && !note.deleted {
                    to_inbox.push((j, unid));
                } else {
                    out[j] = Some(Filed::Done);
                }
            }
            Err(NsfError::NoSuchDocument { .. }) => match copy_note(box_db, r, job.copy, unid, now)
            {
                Ok(note) => {
                    notes.push(note);
                    noted.push((j, unid));
                }
                Err(e) => out[j] = Some(Filed::Wait(format!("reading the message: {e}"))),
            },
            Err(e) => out[j] = Some(Filed::Wait(format!("mail file {}: {e}", person.mail_file))),
        }
    }
    // One transaction for the lot (I33: each copy durable before it is
    // recorded as delivered).
    for ((j, unid), result) in noted.into_iter().zip(db.put_foreign_batch(notes)) {
        match result {
            Ok(_) if jobs[j].copy == Copy::Sender => out[j] = Some(Filed::Done),
            Ok(_) => to_inbox.push((j, unid)),
            Err(e) => out[j] = Some(Filed::Wait(format!("mail file {}: {e}", person.mail_file))),
        }
    }
    let t = stats.step(Step::Copies, t);
    if !to_inbox.is_empty() {
        let unids: Vec<Unid> = to_inbox.iter().map(|&(_, u)| u).collect();
        let filed = match views.folder_add(&db, INBOX, &unids) {
            Ok(()) => Filed::Done,
            Err(e) => Filed::Wait(format!("Inbox of {}: {e}", person.mail_file)),
        };
        for (j, _) in to_inbox {
            out[j] = Some(filed.clone());
        }
    }
    let t = stats.step(Step::Inbox, t);
    let mut out: Vec<Filed> = out
        .into_iter()
        .map(|f| f.unwrap_or_else(|| Filed::Wait("internal error: a job had no outcome".into())))
        .collect();
    // I34: a filed notice is applied to the calendar before it is
    // recorded delivered; a failure leaves the recipient pending.
    for (job, filed) in jobs.iter().zip(out.iter_mut()) {
        if job.copy == Copy::Sender || *filed != Filed::Done {
            continue;
        }
        let msg = &work[job.routing].1.deposit.message;
        if let Err(e) = crate::calendar::apply_delivered(&db, person, msg) {
            *filed = Filed::Wait(format!("calendar of {}: {e}", person.mail_file));
        }
    }
    stats.step(Step::Calendar, t);
    out
}

/// The foreign note of one copy, its attachments read from the box.
fn copy_note(
    box_db: &Arc<Database>,
    r: &Routing,
    copy: Copy,
    unid: Unid,
    now: Timestamp,
) -> nsf::NsfResult<ForeignNote> {
    let items = match copy {
        Copy::Recipient(_) => copy_items(&r.deposit.message, now),
        Copy::Sender => sent_items(&r.deposit.message),
    };
    let mut note = foreign(unid, items, now);
    for name in &r.attachments {
        let reader = box_db.open_attachment(r.deposit.unid, name)?;
        note.attachments.push(ForeignAttachment {
            name: name.clone(),
            mime: reader.attachment().mime.clone(),
            content: ForeignContent::Reader(Box::new(reader)),
        });
    }
    Ok(note)
}
