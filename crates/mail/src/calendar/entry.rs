//! Calendar entries: the chair's (the meeting itself, with each
//! invitee's answer) and an invitee's (their copy of an accepted
//! meeting), both ordinary `Appointment` documents in the Calendar view.
//!
//! Both have UNIDs anyone can compute, so every write of them finds the
//! one already there (I34): the chair's entry *is* the meeting, its UNID
//! the `ApptUNID`; an invitee's is derived from the `ApptUNID` and their
//! mail file, like the router's copies (`router/notices.rs`).
//!
//! ```text
//!   chair's entry    Appointment items + AttendeeStatus      text list ∥ RequiredAttendees
//!                                      + AttendeeStatusDate  date-time list: PostedDate of the
//!                                                            answer that set each status
//!   invitee's entry  Appointment items + NoticeDate          PostedDate of the notice it reflects
//! ```
//!
//! `RequiredAttendees` on the chair's entry holds each invitee's full
//! name as the directory resolved it at creation, so an answer (whose
//! `From` the deposit sets to the sender's full name) finds its line.

use crate::message::{fold_name, Items};
use crate::{Appointment, MailError, MailResult, Message};
use nsf::{Database, DbPath, Item, ItemValue, NsfError, Timestamp, Unid};

/// The hidden view of a mail file listing its Notices by `ApptUNID`.
pub const NOTICES_VIEW: &str = "(Notices)";
/// The chair's entry: each invitee's answer, parallel to `RequiredAttendees`.
pub const ATTENDEE_STATUS: &str = "AttendeeStatus";
/// The chair's entry: the `PostedDate` of the answer behind each status.
pub const ATTENDEE_STATUS_DATE: &str = "AttendeeStatusDate";
/// An invitee's entry: the `PostedDate` of the notice it reflects.
pub const NOTICE_DATE: &str = "NoticeDate";

/// An invitee's answer as the chair's entry records it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AttendeeStatus {
    /// No answer yet.
    NeedsAction,
    Accepted,
    Declined,
}

impl AttendeeStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            AttendeeStatus::NeedsAction => "needs-action",
            AttendeeStatus::Accepted => "accepted",
            AttendeeStatus::Declined => "declined",
        }
    }

    fn parse(s: &str) -> Option<AttendeeStatus> {
        use AttendeeStatus::*;
        [NeedsAction, Accepted, Declined]
            .into_iter()
            .find(|t| t.as_str() == s)
    }
}

/// A meeting as its chair's entry holds it.
#[derive(Clone, Debug, PartialEq)]
pub struct Meeting {
    pub appointment: Appointment,
    /// Per invitee (as `appointment.required_attendees`): the answer and
    /// the `PostedDate` of the notice that gave it.
    pub statuses: Vec<(AttendeeStatus, Timestamp)>,
}

impl Meeting {
    /// The invitee whose full name is `name`, by index.
    pub(crate) fn attendee(&self, name: &str) -> Option<usize> {
        let key = fold_name(name);
        self.appointment
            .required_attendees
            .iter()
            .position(|a| a.lookup_key() == key)
    }

    /// The chair's entry's items.
    pub(crate) fn to_items(&self) -> Vec<Item> {
        let mut items = Message::Appointment(self.appointment.clone()).to_items();
        items.extend(self.status_items());
        items
    }

    /// Only the status lists.
    pub(crate) fn status_items(&self) -> Vec<Item> {
        vec![
            Item {
                name: ATTENDEE_STATUS.into(),
                value: ItemValue::TextList(
                    self.statuses
                        .iter()
                        .map(|(s, _)| s.as_str().to_string())
                        .collect(),
                ),
            },
            Item {
                name: ATTENDEE_STATUS_DATE.into(),
                value: ItemValue::DateTimeList(self.statuses.iter().map(|(_, t)| *t).collect()),
            },
        ]
    }
}

/// The UNID of `mail_file`'s entry for the meeting `appt`.
pub fn attendee_entry_unid(appt: Unid, mail_file: &DbPath) -> Unid {
    crate::router::derive_unid(
        "calendar",
        appt,
        &[mail_file.as_str().to_lowercase().as_bytes()],
    )
}

/// Reads the meeting `appt` from its chair's mail file `db`: `None` if
/// there is no live entry (never made, or cancelled).
pub fn read_meeting(db: &Database, appt: Unid) -> MailResult<Option<Meeting>> {
    let note = match db.get_any(appt) {
        Ok(n) if n.deleted => return Ok(None),
        Ok(n) => n,
        Err(NsfError::NoSuchDocument { .. }) => return Ok(None),
        Err(e) => return Err(e.into()),
    };
    let stored = |reason: String| MailError::BadStored {
        db: db.path().to_string(),
        unid: appt,
        reason,
    };
    let appointment = match Message::from_items(&note.items) {
        Ok(Message::Appointment(a)) if a.appt_unid == appt => a,
        Ok(_) => return Err(stored("not the meeting's Appointment".into())),
        Err(e) => return Err(stored(e.to_string())),
    };
    let r = Items(&note.items);
    let names = r
        .text_list(ATTENDEE_STATUS)
        .map_err(|e| stored(e.to_string()))?;
    let dates = match r.get(ATTENDEE_STATUS_DATE) {
        None => Vec::new(),
        Some(ItemValue::DateTimeList(l)) => l.clone(),
        Some(ItemValue::DateTime(t)) => vec![*t],
        Some(_) => return Err(stored(format!("{ATTENDEE_STATUS_DATE} must be date-times"))),
    };
    let n = appointment.required_attendees.len();
    if names.len() != n || dates.len() != n {
        return Err(stored(format!(
            "{n} attendees but {} statuses and {} status dates",
            names.len(),
            dates.len()
        )));
    }
    let statuses = names
        .iter()
        .zip(dates)
        .map(|(s, t)| {
            AttendeeStatus::parse(s)
                .map(|s| (s, t))
                .ok_or_else(|| stored(format!("{s:?} is not an attendee status")))
        })
        .collect::<MailResult<Vec<_>>>()?;
    Ok(Some(Meeting {
        appointment,
        statuses,
    }))
}

/// The `NoticeDate` of an invitee's entry (`None`: absent).
pub(crate) fn notice_date(items: &[Item]) -> MailResult<Option<Timestamp>> {
    Items(items).datetime(NOTICE_DATE)
}
