//! The notices a meeting sends, and the latest one a mail file received
//! about a meeting.
//!
//! An invitee's mail file holds every Invitation, Reschedule and Cancel
//! the router delivered; which is current is decided by `PostedDate`
//! (the chair's deposits are ordered in time), never by arrival, so a
//! late copy of an older notice changes nothing. They are found by
//! `ApptUNID` through the hidden view [`NOTICES_VIEW`] of the mail
//! template.

use super::entry::NOTICES_VIEW;
use crate::message::{Address, Header, Notice, NoticeType};
use crate::{Appointment, MailResult, Message};
use nsf::{Database, Unid};
use std::sync::Arc;
use views::{Row, Start, Views};

/// Most notices about one meeting read from one mail file (more is
/// damage or abuse; the latest among these still decides).
const MOST: u64 = 1_000;

/// A notice from the chair about `a` to `to`, of `kind`, saying the
/// meeting's current time and place.
pub(crate) fn from_chair(a: &Appointment, kind: NoticeType, subject: &str) -> Message {
    let mut h = Header::new(subject, &a.header.body);
    h.send_to = a.required_attendees.clone();
    Message::Notice(Notice {
        header: h,
        notice_type: kind,
        appt_unid: a.appt_unid,
        start: Some(a.start),
        end: Some(a.end),
        location: a.location.clone(),
        chair: a.chair.clone(),
    })
}

/// An invitee's answer `kind` to `invitation`, to its chair.
pub(crate) fn answer(invitation: &Notice, chair: Address, kind: NoticeType) -> Message {
    let verb = match kind {
        NoticeType::Accept => "Accepted",
        _ => "Declined",
    };
    let subject = clip(&format!("{verb}: {}", invitation.header.subject));
    let mut h = Header::new(&subject, "");
    h.send_to = vec![chair.clone()];
    Message::Notice(Notice {
        header: h,
        notice_type: kind,
        appt_unid: invitation.appt_unid,
        start: None,
        end: None,
        location: String::new(),
        chair: Some(chair),
    })
}

/// `s` cut to the subject limit at a character boundary.
pub(crate) fn clip(s: &str) -> String {
    let mut end = s.len().min(crate::MAX_SUBJECT_BYTES);
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    s[..end].to_string()
}

/// The latest Invitation, Reschedule or Cancel about `appt` in `db`,
/// by `PostedDate` (`None`: none there).
pub(crate) fn latest_from_chair(
    views: &Views,
    db: &Arc<Database>,
    appt: Unid,
) -> MailResult<Option<Notice>> {
    let view = views.open(db, NOTICES_VIEW)?;
    let key = appt.to_string();
    let Some(found) = view.find(&key, false)? else {
        return Ok(None);
    };
    let rows = view.read(
        &Start::Position(found.position),
        found.count.min(MOST) as usize,
        false,
        false,
    )?;
    let mut latest: Option<Notice> = None;
    for row in rows {
        let Row::Entry { unid, .. } = row else {
            continue;
        };
        // A document that is not a readable notice is not one.
        let Ok(note) = db.get(unid) else { continue };
        let Ok(Message::Notice(n)) = Message::from_items(&note.items) else {
            continue;
        };
        let from_chair = matches!(
            n.notice_type,
            NoticeType::Invitation | NoticeType::Reschedule | NoticeType::Cancel
        );
        if n.appt_unid != appt || !from_chair {
            continue;
        }
        if latest
            .as_ref()
            .is_none_or(|l| n.header.posted > l.header.posted)
        {
            latest = Some(n);
        }
    }
    Ok(latest)
}
