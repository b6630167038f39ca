//! Sending over the native door (`Request::SendMail`): a message of any
//! form of the mail template, given as its items in JSON, deposited for
//! the router or saved as a draft.
//!
//! The JSON is the same mapping documents use everywhere (`nsf::json`),
//! so the wire needs no second encoding of the four forms: the items are
//! checked into a typed [`Message`] (`Message::from_items` refuses what
//! its form does not allow) before anything is stored.
//!
//! The sender is the signed-in user's person ([`Service::person_of`]). A
//! server administrator may name another person with `on_behalf_of`: a
//! gateway or load driver multiplexes many people over few connections,
//! and an administrator has full access to every mail file anyway. Anyone
//! else naming a person other than themselves is refused (403) before
//! the message is looked at.
//!
//! Durability: a deposit is durable when this returns (I28), a draft and
//! its commit likewise; the answer follows durability (I16).

use super::mail::mail_err;
use super::{Caller, Service};
use crate::{ServerError, ServerResult};
use mail::{Message, Person};
use nsf::{Item, ItemUpdate, Unid};

/// What a native send stored.
#[derive(Clone, Debug)]
pub struct Stored {
    pub message_id: String,
    /// The mail box it waits in, or the sender's mail file for a draft.
    pub stored_in: String,
    pub unid: Unid,
    pub draft: bool,
}

impl Service {
    /// Sends (or with `draft` saves) the message whose items `json`
    /// holds, from the caller's person or, for an administrator, from
    /// `on_behalf_of` (see the module docs).
    pub fn send_mail_json(
        &self,
        caller: &Caller,
        json: &str,
        draft: bool,
        on_behalf_of: Option<&str>,
    ) -> ServerResult<Stored> {
        let sender = self.acting_person(caller, on_behalf_of)?;
        let msg = message_of(json)?;
        self.store_message(&sender, msg, draft, &mut [])
            .map_err(mail_err)
    }

    /// Deposits `msg` from `sender` with `files`, or with `draft` saves it
    /// in the sender's mail file; durable when this returns (I28).
    pub(super) fn store_message(
        &self,
        sender: &Person,
        msg: Message,
        draft: bool,
        files: &mut [mail::Attachment<'_>],
    ) -> mail::MailResult<Stored> {
        let (engine, views, config) = (self.engine(), self.views(), &self.limits().mail);
        if draft {
            let message_id = msg.header().message_id.as_str().to_string();
            let d = mail::save_draft(engine, views, config, sender, msg, files)?;
            Ok(Stored {
                message_id,
                stored_in: d.mail_file.to_string(),
                unid: d.unid,
                draft: true,
            })
        } else {
            let d = mail::deposit(engine, views, config, sender, msg, files)?;
            Ok(Stored {
                message_id: d.message_id.as_str().to_string(),
                stored_in: d.mail_box.to_string(),
                unid: d.unid,
                draft: false,
            })
        }
    }

    /// Who acts (sends, chairs, answers): the caller's person, or the
    /// person a server administrator names (an embedded command runs as
    /// an administrator nobody signed in as, and always names one).
    pub(super) fn acting_person(
        &self,
        caller: &Caller,
        on_behalf_of: Option<&str>,
    ) -> ServerResult<Person> {
        if let (Some(name), true) = (on_behalf_of, caller.admin) {
            let dir = mail::Directory::open(self.engine(), self.views()).map_err(mail_err)?;
            return dir.person(name).map_err(mail_err);
        }
        let user = caller.user.as_deref().ok_or_else(|| {
            ServerError::Unauthenticated("mail and meetings need a signed-in user".into())
        })?;
        match on_behalf_of {
            None => self.person_of(user),
            Some(name) if name.eq_ignore_ascii_case(user) => self.person_of(user),
            Some(name) => Err(ServerError::Forbidden(format!(
                "only a server administrator may act on behalf of {name:?}"
            ))),
        }
    }
}

/// The message `json` holds: a JSON object of items (no removals, no
/// attachments), one of the template's forms.
pub(super) fn message_of(json: &str) -> ServerResult<Message> {
    let value: serde_json::Value = serde_json::from_str(json)
        .map_err(|e| ServerError::BadRequest(format!("the message is not JSON: {e}")))?;
    let bad = |e: nsf::JsonError| ServerError::BadRequest(format!("the message: {e}"));
    let items = nsf::items_from_json(&value)
        .map_err(bad)?
        .into_iter()
        .map(|u| match u {
            ItemUpdate::Set(i) => Ok(i),
            ItemUpdate::Remove(name) => Err(ServerError::BadRequest(format!(
                "the message: item {name:?} is null; leave it out instead"
            ))),
        })
        .collect::<ServerResult<Vec<Item>>>()?;
    Message::from_items(&items).map_err(mail_err)
}
