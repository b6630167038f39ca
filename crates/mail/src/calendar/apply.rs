//! What a delivered notice changes: the router's one hook into the
//! calendar (I34).
//!
//! The router calls [`apply_delivered`] for each Notice it filed in a
//! recipient's mail file, after the copy is durable and in the Inbox and
//! before the box document records the recipient delivered (I33). A
//! failure leaves the recipient pending, so the next pass finds the copy
//! by its UNID and applies it again; applying is idempotent and ordered
//! by `PostedDate`, so a notice applied twice writes once, and an older
//! notice never undoes a newer one:
//!
//! ```text
//!   Accept/Decline  in the chair's file: the sender's AttendeeStatus, if the
//!                   notice is later than AttendeeStatusDate (no entry: ignored)
//!   Reschedule      in an invitee's file: their entry's time and place, if it
//!                   exists and the notice is later than its NoticeDate
//!   Cancel          in an invitee's file: their entry deleted (a stub: final)
//!   Invitation      nothing (it waits in the Inbox for an answer)
//! ```
//!
//! Only the chair of the entry may move or cancel it, and only an
//! invitee may answer; a notice from anyone else changes nothing.

use super::entry::{attendee_entry_unid, notice_date, read_meeting, AttendeeStatus, NOTICE_DATE};
use super::respond::remove_entry;
use crate::directory::Person;
use crate::message::{datetime, item, text, Items, Notice, NoticeType};
use crate::{MailResult, Message};
use nsf::{Database, ItemUpdate, NsfError, Timestamp};

/// Applies `msg`, just filed in `person`'s mail file `db`, if it is a
/// notice (see the module docs).
pub(crate) fn apply_delivered(db: &Database, person: &Person, msg: &Message) -> MailResult<()> {
    let Message::Notice(n) = msg else {
        return Ok(());
    };
    let (Some(from), Some(posted)) = (&n.header.from, n.header.posted) else {
        return Ok(());
    };
    match n.notice_type {
        NoticeType::Invitation => Ok(()),
        NoticeType::Accept => answer(db, n, from.addr(), posted, AttendeeStatus::Accepted),
        NoticeType::Decline => answer(db, n, from.addr(), posted, AttendeeStatus::Declined),
        NoticeType::Reschedule | NoticeType::Cancel => {
            let unid = attendee_entry_unid(n.appt_unid, &person.mail_file);
            let entry = match db.get_any(unid) {
                Ok(e) if !e.deleted => e,
                Ok(_) | Err(NsfError::NoSuchDocument { .. }) => return Ok(()),
                Err(e) => return Err(e.into()),
            };
            let chair = Items(&entry.items)
                .text(item::CHAIR)?
                .map(crate::message::fold_name);
            if chair.as_deref() != Some(&from.lookup_key()) {
                return Ok(());
            }
            if n.notice_type == NoticeType::Cancel {
                return remove_entry(db, unid);
            }
            if notice_date(&entry.items)? >= Some(posted) {
                return Ok(());
            }
            db.update(unid, moved(n, posted), None, true)?;
            Ok(())
        }
    }
}

/// The updates moving an invitee's entry to what `n` says.
fn moved(n: &Notice, posted: Timestamp) -> Vec<ItemUpdate> {
    let mut v: Vec<ItemUpdate> = [
        n.start.map(|t| datetime(item::START, t)),
        n.end.map(|t| datetime(item::END, t)),
    ]
    .into_iter()
    .flatten()
    .map(ItemUpdate::Set)
    .collect();
    v.push(ItemUpdate::Set(text(item::LOCATION, &n.location)));
    v.push(ItemUpdate::Set(datetime(NOTICE_DATE, posted)));
    v
}

/// Records `status` from the invitee named `from` on the chair's entry,
/// if the answer is later than the one it holds.
fn answer(
    db: &Database,
    n: &Notice,
    from: &str,
    posted: Timestamp,
    status: AttendeeStatus,
) -> MailResult<()> {
    let Some(mut meeting) = read_meeting(db, n.appt_unid)? else {
        return Ok(());
    };
    let Some(i) = meeting.attendee(from) else {
        return Ok(());
    };
    if meeting.statuses[i].1 >= posted {
        return Ok(());
    }
    meeting.statuses[i] = (status, posted);
    let updates = meeting
        .status_items()
        .into_iter()
        .map(ItemUpdate::Set)
        .collect();
    db.update(n.appt_unid, updates, None, true)?;
    Ok(())
}
