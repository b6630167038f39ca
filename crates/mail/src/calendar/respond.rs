//! The invitee's side: accepting or declining a meeting they were
//! invited to.
//!
//! The invitation is the latest Invitation or Reschedule about the
//! meeting in the invitee's own mail file (`notices.rs`); none there is
//! `NotInvited`, a Cancel there `MeetingCancelled`, and nothing is
//! written. Then, each write durable when it returns (I2):
//!
//! ```text
//!   accept   the invitee's entry (derived UNID) made or brought up to date ──▶ deposit Accept
//!   decline  the invitee's entry deleted if there is one ──────────────────▶ deposit Decline
//! ```
//!
//! The entry comes first, so a crash between leaves the invitee's own
//! calendar right and the chair not yet told; answering again sends the
//! answer (the entry's write finds it there, I34). Answering twice sends
//! two answers; the chair's entry keeps the later (`apply.rs`).

use super::entry::{attendee_entry_unid, notice_date, NOTICE_DATE};
use super::notices::{answer, latest_from_chair};
use crate::directory::Person;
use crate::mailbox::{deposit, DepositId};
use crate::mailfile::open_mail_file;
use crate::message::{datetime, Header, Notice, NoticeType};
use crate::router::foreign;
use crate::{Appointment, MailConfig, MailError, MailResult, Message};
use nsf::{Database, Engine, ItemUpdate, NsfError, OriginatorId, Timestamp, Unid};
use views::Views;

/// An invitee's answer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Response {
    Accept,
    Decline,
}

impl Response {
    /// `accept` or `decline`, any case.
    pub fn parse(s: &str) -> MailResult<Response> {
        match s.to_ascii_lowercase().as_str() {
            "accept" => Ok(Response::Accept),
            "decline" => Ok(Response::Decline),
            _ => Err(MailError::BadMessage(format!(
                "{:?} is not a response (accept or decline)",
                s.chars().take(40).collect::<String>()
            ))),
        }
    }
}

/// Answers the meeting `appt` for `invitee` (see the module docs).
pub fn respond(
    engine: &Engine,
    views: &Views,
    config: &MailConfig,
    invitee: &Person,
    appt: Unid,
    response: Response,
) -> MailResult<DepositId> {
    let db = open_mail_file(engine, views, invitee)?;
    let notice = latest_from_chair(views, &db, appt)?.ok_or_else(|| MailError::NotInvited {
        meeting: appt,
        person: invitee.full_name.clone(),
    })?;
    if notice.notice_type == NoticeType::Cancel {
        return Err(MailError::MeetingCancelled { meeting: appt });
    }
    let Some(chair) = notice.chair.clone().or_else(|| notice.header.from.clone()) else {
        return Err(MailError::BadStored {
            db: db.path().to_string(),
            unid: appt,
            reason: "the invitation names no chair".into(),
        });
    };
    let unid = attendee_entry_unid(appt, &invitee.mail_file);
    let kind = match response {
        Response::Accept => {
            put_entry(&db, unid, &notice)?;
            NoticeType::Accept
        }
        Response::Decline => {
            remove_entry(&db, unid)?;
            NoticeType::Decline
        }
    };
    deposit(
        engine,
        views,
        config,
        invitee,
        answer(&notice, chair, kind),
        &mut [],
    )
}

/// The invitee's entry for the meeting `notice` describes, as of it.
fn entry_items(notice: &Notice) -> MailResult<Vec<nsf::Item>> {
    let (Some(start), Some(end)) = (notice.start, notice.end) else {
        return Err(MailError::BadMessage(
            "the invitation has no start and end".into(),
        ));
    };
    let mut header = Header::new(&notice.header.subject, &notice.header.body);
    header.from = notice.header.from.clone();
    let a = Appointment {
        header,
        appt_unid: notice.appt_unid,
        start,
        end,
        location: notice.location.clone(),
        chair: notice.chair.clone(),
        required_attendees: notice.header.send_to.clone(),
    };
    let mut items = Message::Appointment(a).to_items();
    let posted = notice.header.posted.unwrap_or(Timestamp(0));
    items.push(datetime(NOTICE_DATE, posted));
    Ok(items)
}

/// Makes the entry `unid` say what `notice` says: new, brought up to
/// date (unless it already reflects a later notice), or made again over
/// a deletion (a newer version of the stub, I24).
fn put_entry(db: &Database, unid: Unid, notice: &Notice) -> MailResult<()> {
    let items = entry_items(notice)?;
    let now = Timestamp::now();
    match db.get_any(unid) {
        Err(NsfError::NoSuchDocument { .. }) => {
            db.put_foreign(foreign(unid, items, now))?;
        }
        Ok(stub) if stub.deleted => {
            let mut note = foreign(unid, items, now);
            note.oid = OriginatorId {
                unid,
                seq_num: stub.oid.seq_num.saturating_add(1),
                seq_time: Timestamp(now.0.max(stub.oid.seq_time.0.saturating_add(1))),
            };
            db.put_foreign(note)?;
        }
        Ok(live) => {
            if notice_date(&live.items)? < notice.header.posted {
                let updates = items.into_iter().map(ItemUpdate::Set).collect();
                db.update(unid, updates, None, true)?;
            }
        }
        Err(e) => return Err(e.into()),
    }
    Ok(())
}

/// Deletes the entry `unid` if it is there and live.
pub(crate) fn remove_entry(db: &Database, unid: Unid) -> MailResult<()> {
    match db.get_any(unid) {
        Ok(n) if !n.deleted => {
            db.delete(unid, None, true)?;
            Ok(())
        }
        Ok(_) | Err(NsfError::NoSuchDocument { .. }) => Ok(()),
        Err(e) => Err(e.into()),
    }
}
