//! Sending mail on behalf of the signed-in user: the server's door to
//! `mail::deposit` (HTTP `POST /mail/send`).
//!
//! The sender is the person in the directory whose server user is the
//! caller (by a name lookup first, then by the server-user field), never
//! whoever the request names: `From` in the request is refused unless it
//! is the caller. A deposit is durable when this returns (I28), so the
//! answer follows durability (I16).

use super::{Caller, Service};
use crate::error::{nsf_err, view_err};
use crate::{ServerError, ServerResult};
use mail::{Directory, MailError, Message, Person, Resolved};

/// Where a sent message went.
#[derive(Clone, Debug)]
pub struct Sent {
    pub message_id: String,
    pub mail_box: String,
}

impl Service {
    /// Deposits `msg` from the caller's person (see the module docs).
    pub fn send_mail(
        &self,
        caller: &Caller,
        msg: Message,
        files: &mut [mail::Attachment<'_>],
    ) -> ServerResult<Sent> {
        let user = caller.user.as_deref().ok_or_else(|| {
            ServerError::Unauthenticated("sending mail needs a signed-in user".into())
        })?;
        let sender = self.person_of(user)?;
        let id = mail::deposit(
            self.engine(),
            self.views(),
            &self.limits().mail,
            &sender,
            msg,
            files,
        )
        .map_err(mail_err)?;
        Ok(Sent {
            message_id: id.message_id.as_str().to_string(),
            mail_box: id.mail_box.to_string(),
        })
    }

    /// The directory person who signs in as `user`.
    pub(crate) fn person_of(&self, user: &str) -> ServerResult<Person> {
        let dir = Directory::open(self.engine(), self.views()).map_err(mail_err)?;
        let signs_in = |p: &Person| p.server_user.eq_ignore_ascii_case(user);
        if let Ok(Resolved::Person(p)) = dir.resolve(user) {
            if signs_in(&p) {
                return Ok(p);
            }
        }
        dir.list()
            .map_err(mail_err)?
            .into_iter()
            .find(signs_in)
            .ok_or_else(|| {
                ServerError::Forbidden(format!(
                    "server user {user:?} is no person in the directory, so cannot send mail"
                ))
            })
    }
}

/// The server's answer for a mail error.
pub(crate) fn mail_err(e: MailError) -> ServerError {
    match e {
        MailError::Nsf(e) => nsf_err(e),
        MailError::View(e) => view_err(e),
        e @ MailError::TooLarge { .. } => ServerError::TooLarge(e.to_string()),
        e @ (MailError::UnknownPerson(_)
        | MailError::AmbiguousPerson { .. }
        | MailError::UnknownMeeting { .. }
        | MailError::NotInvited { .. }) => ServerError::NotFound(e.to_string()),
        e @ MailError::NotChair { .. } => ServerError::Forbidden(e.to_string()),
        e @ MailError::MeetingCancelled { .. } => ServerError::SaveConflict(e.to_string()),
        e @ (MailError::BadAddress { .. }
        | MailError::BadName { .. }
        | MailError::BadMessage(_)
        | MailError::ForgedSender { .. }) => ServerError::BadRequest(e.to_string()),
        e => ServerError::Internal(e.to_string()),
    }
}
