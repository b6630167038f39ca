//! Meetings on behalf of the signed-in user: the server's door to
//! `mail::create_meeting`, `respond`, `reschedule_meeting` and
//! `cancel_meeting` (HTTP `/mail/meetings`).
//!
//! The acting person is the caller's directory person (`person_of`, as
//! for sending); only a server administrator may name another
//! (`on_behalf_of`, `Service::acting_person`), as for sending. Only the
//! chair may move or cancel a meeting (the mail layer checks the chair's own entry). Every
//! call answers once its writes are durable (I2, I28; I16), and the
//! router applies the notices it deposits on delivery (I34).

use super::mail::mail_err;
use super::{Caller, Service};
use crate::ServerResult;
use mail::{AttendeeStatus, NewMeeting, NewTime, Response};
use nsf::Unid;

/// A meeting as its chair's entry holds it, for answers.
#[derive(Clone, Debug)]
pub struct MeetingInfo {
    pub appt_unid: Unid,
    pub subject: String,
    pub start: nsf::Timestamp,
    pub end: nsf::Timestamp,
    pub location: String,
    pub chair: String,
    /// Each invitee's full name and answer.
    pub attendees: Vec<(String, AttendeeStatus)>,
}

impl Service {
    /// Creates `m` chaired by the caller; the meeting's id and the
    /// invitation's message id.
    pub fn create_meeting(
        &self,
        caller: &Caller,
        on_behalf_of: Option<&str>,
        m: NewMeeting,
    ) -> ServerResult<(Unid, String)> {
        let chair = self.acting_person(caller, on_behalf_of)?;
        let (appt, id) =
            mail::create_meeting(self.engine(), self.views(), &self.limits().mail, &chair, m)
                .map_err(mail_err)?;
        Ok((appt, id.message_id.as_str().to_string()))
    }

    /// Answers meeting `appt` as the caller; the answer's message id.
    pub fn respond_meeting(
        &self,
        caller: &Caller,
        on_behalf_of: Option<&str>,
        appt: Unid,
        r: Response,
    ) -> ServerResult<String> {
        self.as_person(caller, on_behalf_of, |me, mail| {
            mail::respond(self.engine(), self.views(), mail, me, appt, r)
        })
    }

    /// Moves meeting `appt`, which the caller chairs.
    pub fn reschedule_meeting(
        &self,
        caller: &Caller,
        on_behalf_of: Option<&str>,
        appt: Unid,
        t: NewTime,
    ) -> ServerResult<String> {
        self.as_person(caller, on_behalf_of, |chair, mail| {
            mail::reschedule_meeting(self.engine(), self.views(), mail, chair, appt, t)
        })
    }

    /// Cancels meeting `appt`, which the caller chairs.
    pub fn cancel_meeting(
        &self,
        caller: &Caller,
        on_behalf_of: Option<&str>,
        appt: Unid,
    ) -> ServerResult<String> {
        self.as_person(caller, on_behalf_of, |chair, mail| {
            mail::cancel_meeting(self.engine(), self.views(), mail, chair, appt)
        })
    }

    /// Runs `act` as the caller's directory person; the message id of
    /// the notice it deposited.
    fn as_person(
        &self,
        caller: &Caller,
        on_behalf_of: Option<&str>,
        act: impl FnOnce(&mail::Person, &mail::MailConfig) -> mail::MailResult<mail::DepositId>,
    ) -> ServerResult<String> {
        let me = self.acting_person(caller, on_behalf_of)?;
        let id = act(&me, &self.limits().mail).map_err(mail_err)?;
        Ok(id.message_id.as_str().to_string())
    }

    /// Meeting `appt` as the caller's own entry for it holds it: the
    /// chair's (with every answer) or, for an invitee who accepted,
    /// theirs (without answers).
    pub fn meeting(
        &self,
        caller: &Caller,
        on_behalf_of: Option<&str>,
        appt: Unid,
    ) -> ServerResult<MeetingInfo> {
        let me = self.acting_person(caller, on_behalf_of)?;
        let db = mail::open_mail_file(self.engine(), self.views(), &me).map_err(mail_err)?;
        let chaired = mail::read_meeting(&db, appt).map_err(mail_err)?;
        let (a, statuses) = match chaired {
            Some(m) => (m.appointment, m.statuses),
            None => match accepted(&db, appt, &me.mail_file)? {
                Some(a) => (a, Vec::new()),
                None => {
                    return Err(mail_err(mail::MailError::UnknownMeeting {
                        meeting: appt,
                        mail_file: me.mail_file.to_string(),
                    }))
                }
            },
        };
        let attendees = if statuses.is_empty() {
            Vec::new()
        } else {
            a.required_attendees
                .iter()
                .zip(statuses)
                .map(|(who, (s, _))| (who.to_string(), s))
                .collect()
        };
        Ok(MeetingInfo {
            appt_unid: appt,
            subject: a.header.subject,
            start: a.start,
            end: a.end,
            location: a.location,
            chair: a.chair.map(|c| c.to_string()).unwrap_or_default(),
            attendees,
        })
    }
}

/// An invitee's own entry for `appt`, if they accepted it.
fn accepted(
    db: &nsf::Database,
    appt: Unid,
    mail_file: &nsf::DbPath,
) -> ServerResult<Option<mail::Appointment>> {
    let unid = mail::attendee_entry_unid(appt, mail_file);
    match db.get(unid) {
        Ok(note) => match mail::Message::from_items(&note.items) {
            Ok(mail::Message::Appointment(a)) => Ok(Some(a)),
            _ => Ok(None),
        },
        Err(nsf::NsfError::NoSuchDocument { .. }) => Ok(None),
        Err(e) => Err(crate::error::nsf_err(e)),
    }
}
