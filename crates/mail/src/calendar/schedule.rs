//! The chair's side: creating a meeting, moving it, cancelling it.
//!
//! Each is the chair's entry (in their own mail file, UNID = `ApptUNID`)
//! and one deposit of a notice to every invitee; the router delivers it
//! and applies it to each invitee's calendar (`apply.rs`, I34). Every
//! write is durable when it returns (I2, I28). The order makes a crash
//! between the two writes harmless to retry:
//!
//! ```text
//!   create      entry ──▶ Invitation     (crash between: a meeting nobody was
//!                                         invited to; reschedule or cancel it)
//!   reschedule  Reschedule ──▶ entry     (crash between: run it again; the
//!   cancel      Cancel ──▶ delete entry   invitees apply the later notice)
//! ```
//!
//! Refused before anything is written: no invitee, an invitee the
//! directory does not know (or knows twice), an end before the start,
//! anything over a limit; reschedule and cancel of a meeting the caller's
//! mail file does not hold (`UnknownMeeting`) or does not chair
//! (`NotChair`).

use super::entry::{read_meeting, AttendeeStatus, Meeting};
use super::notices::{clip, from_chair};
use crate::directory::{Directory, Person};
use crate::mailbox::{deposit, DepositId};
use crate::mailfile::open_mail_file;
use crate::message::{Address, Header, NoticeType};
use crate::router::foreign;
use crate::{Appointment, MailConfig, MailError, MailResult, Message};
use nsf::{Database, Engine, ItemUpdate, Timestamp, Unid};
use std::sync::Arc;
use views::Views;

/// A meeting to create.
#[derive(Clone, Debug, PartialEq)]
pub struct NewMeeting {
    pub subject: String,
    /// Markdown.
    pub body: String,
    pub start: Timestamp,
    pub end: Timestamp,
    pub location: String,
    /// Each resolved through the directory; at least one.
    pub invitees: Vec<Address>,
}

/// A meeting's new time and, if given, place.
#[derive(Clone, Debug, PartialEq)]
pub struct NewTime {
    pub start: Timestamp,
    pub end: Timestamp,
    pub location: Option<String>,
}

/// Creates `m` chaired by `chair`: the entry in the chair's Calendar,
/// then an Invitation deposited to every invitee (see the module docs).
/// Returns the meeting's id (`ApptUNID`) and where the invitation went.
pub fn create_meeting(
    engine: &Engine,
    views: &Views,
    config: &MailConfig,
    chair: &Person,
    m: NewMeeting,
) -> MailResult<(Unid, DepositId)> {
    if m.invitees.is_empty() {
        return Err(MailError::BadMessage(
            "a meeting needs at least one invitee".into(),
        ));
    }
    let invitees = resolve_invitees(engine, views, chair, &m.invitees)?;
    let now = Timestamp::now();
    let appt = Unid::random();
    let mut header = Header::new(&m.subject, &m.body);
    header.from = Some(Address::parse(&chair.full_name)?);
    header.posted = Some(now);
    let appointment = Appointment {
        header,
        appt_unid: appt,
        start: m.start,
        end: m.end,
        location: m.location,
        chair: Some(Address::parse(&chair.full_name)?),
        required_attendees: invitees,
    };
    let invitation = from_chair(&appointment, NoticeType::Invitation, &m.subject);
    // Everything the deposit would refuse, refused before the entry.
    invitation.validate_for_sending()?;
    let meeting = Meeting {
        statuses: vec![(AttendeeStatus::NeedsAction, now); appointment.required_attendees.len()],
        appointment,
    };
    Message::Appointment(meeting.appointment.clone()).validate()?;
    let db = open_mail_file(engine, views, chair)?;
    // I34: the entry (UNID = ApptUNID) is durable before any notice names it.
    db.put_foreign(foreign(appt, meeting.to_items(), now))?;
    let id = deposit(engine, views, config, chair, invitation, &mut [])?;
    Ok((appt, id))
}

/// Moves the meeting `appt` that `chair` chairs (see the module docs).
pub fn reschedule_meeting(
    engine: &Engine,
    views: &Views,
    config: &MailConfig,
    chair: &Person,
    appt: Unid,
    t: NewTime,
) -> MailResult<DepositId> {
    let (db, mut meeting) = chaired(engine, views, chair, appt)?;
    let a = &mut meeting.appointment;
    a.start = t.start;
    a.end = t.end;
    if let Some(l) = t.location {
        a.location = l;
    }
    Message::Appointment(a.clone()).validate()?;
    let subject = clip(&format!("Rescheduled: {}", a.header.subject));
    let notice = from_chair(a, NoticeType::Reschedule, &subject);
    let id = deposit(engine, views, config, chair, notice, &mut [])?;
    let updates = Message::Appointment(a.clone())
        .to_items()
        .into_iter()
        .map(ItemUpdate::Set)
        .collect();
    db.update(appt, updates, None, true)?;
    Ok(id)
}

/// Cancels the meeting `appt` that `chair` chairs: a Cancel to every
/// invitee, then the chair's entry deleted (see the module docs).
pub fn cancel_meeting(
    engine: &Engine,
    views: &Views,
    config: &MailConfig,
    chair: &Person,
    appt: Unid,
) -> MailResult<DepositId> {
    let (db, meeting) = chaired(engine, views, chair, appt)?;
    let a = &meeting.appointment;
    let subject = clip(&format!("Cancelled: {}", a.header.subject));
    let id = deposit(
        engine,
        views,
        config,
        chair,
        from_chair(a, NoticeType::Cancel, &subject),
        &mut [],
    )?;
    db.delete(appt, None, true)?;
    Ok(id)
}

/// The chair's mail file and the meeting `appt` in it, if `chair` chairs it.
fn chaired(
    engine: &Engine,
    views: &Views,
    chair: &Person,
    appt: Unid,
) -> MailResult<(Arc<Database>, Meeting)> {
    let db = open_mail_file(engine, views, chair)?;
    let meeting = read_meeting(&db, appt)?.ok_or_else(|| MailError::UnknownMeeting {
        meeting: appt,
        mail_file: chair.mail_file.to_string(),
    })?;
    let chairs = meeting
        .appointment
        .chair
        .as_ref()
        .is_some_and(|c| chair.answers_to(&c.lookup_key()));
    if !chairs {
        return Err(MailError::NotChair {
            meeting: appt,
            person: chair.full_name.clone(),
        });
    }
    Ok((db, meeting))
}

/// Each invitee's full name, resolved through the directory (each once;
/// the chair is not their own invitee).
fn resolve_invitees(
    engine: &Engine,
    views: &Views,
    chair: &Person,
    invitees: &[Address],
) -> MailResult<Vec<Address>> {
    let dir = Directory::open(engine, views)?;
    let mut out: Vec<Address> = Vec::new();
    for a in invitees {
        let p = dir.person(a.addr())?;
        if p.unid == chair.unid {
            return Err(MailError::BadMessage(format!(
                "{a} is the chair; a chair does not invite themselves"
            )));
        }
        let name = Address::parse(&p.full_name)?;
        if !out.contains(&name) {
            out.push(name);
        }
    }
    Ok(out)
}
