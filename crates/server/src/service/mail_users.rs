//! Mail user administration: adding people to the directory (each with
//! a mail file from the template), listing them, taking them out.
//!
//! The `mail` crate does the work (`names.fdb`, `mail/<short name>.fdb`;
//! docs/mail.md); this file decides who may ask and what a running
//! server will not do. The embedded `folio mail …` commands come through
//! here too (as an administrator), so both ways run the same checks and
//! refuse with the same words.
//!
//! Who may: server administrators only. The check comes first, before
//! the input is looked at or the directory opened, so a caller who is
//! not an administrator gets the same answer whatever the name (401 when
//! anonymous, 403 when signed in) and learns nothing about who is in the
//! directory from these operations. (Signed-in users can read the
//! directory as a database, `names.fdb`, whose ACL gives them Reader
//! access: mail clients look names up.)
//!
//! Removing a person may delete their mail file too (`delete_file`):
//! first the file, as `DeleteDatabase` deletes a database (design.md
//! I42, I43: handles the router or a connection still hold refuse from
//! then on), then the person. A crash between the two leaves a person
//! without a file — the state a crash during creation may leave too
//! (docs/mail.md), which a rerun finishes — never a file nobody's
//! directory entry names. A file another person also uses is refused
//! (409) and nothing is removed.
//!
//! Bad input changes nothing: names are checked before the directory is
//! opened (opening it makes it on first use), and removing or listing
//! with no directory yet makes none.

use super::{Caller, Service};
use crate::error::{mail_err, nsf_err};
use crate::{ServerError, ServerResult};
use mail::{Directory, NewPerson, Person, DIRECTORY_PATH};
use protocol::{MailAdminAnswer, MailAdminRequest, MailFileFate, MailUser};

/// A person taken out of the directory, and what became of their mail
/// file.
#[derive(Clone, Debug)]
pub struct RemovedPerson {
    pub person: Person,
    pub file: MailFileFate,
}

impl Service {
    /// Adds a person to the directory and makes their mail file (server
    /// administrators only). Durable when this returns: the person
    /// document, then the mail file, each committed through the log (I2);
    /// a crash between them leaves a person without a file, never a file
    /// without a person (design.md §12).
    pub fn create_mail_user(&self, caller: &Caller, new: &NewPerson) -> ServerResult<Person> {
        require_admin(caller)?;
        new.check().map_err(mail_err)?;
        let dir = Directory::open(&self.engine, &self.views).map_err(mail_err)?;
        mail::create_user(&self.engine, &self.views, &dir, new).map_err(mail_err)
    }

    /// Every person in the directory, by full name (server administrators
    /// only).
    pub fn list_mail_users(&self, caller: &Caller) -> ServerResult<Vec<Person>> {
        require_admin(caller)?;
        match self.directory()? {
            Some(dir) => dir.list().map_err(mail_err),
            None => Ok(Vec::new()),
        }
    }

    /// Takes the person `name` names (any of their names) out of the
    /// directory (server administrators only), and with `delete_file`
    /// deletes their mail file first (see the module docs). Durable when
    /// this returns (I2, I42).
    pub fn remove_mail_user(
        &self,
        caller: &Caller,
        name: &str,
        delete_file: bool,
    ) -> ServerResult<RemovedPerson> {
        require_admin(caller)?;
        let Some(dir) = self.directory()? else {
            return Err(mail_err(mail::MailError::UnknownPerson(name.to_string())));
        };
        let file = if delete_file {
            let person = dir.person(name).map_err(mail_err)?;
            let people = dir.list().map_err(mail_err)?;
            let sharing = people
                .iter()
                .find(|p| p.unid != person.unid && p.mail_file == person.mail_file);
            if let Some(other) = sharing {
                return Err(ServerError::SaveConflict(format!(
                    "{} is also the mail file of {:?}: nothing was removed",
                    person.mail_file, other.full_name
                )));
            }
            match self.engine.delete_database(person.mail_file.as_str()) {
                Ok(()) => MailFileFate::Deleted,
                Err(nsf::NsfError::NoSuchDatabase(_)) => MailFileFate::Absent,
                Err(e) => return Err(nsf_err(e)),
            }
        } else {
            MailFileFate::Kept
        };
        let person = dir.remove_person(name).map_err(mail_err)?;
        Ok(RemovedPerson { person, file })
    }

    /// A mail administration request of the native protocol, answered.
    pub fn mail_admin(
        &self,
        caller: &Caller,
        request: MailAdminRequest,
    ) -> ServerResult<MailAdminAnswer> {
        Ok(match request {
            MailAdminRequest::CreateUser {
                name,
                aliases,
                server_user,
            } => {
                let new = NewPerson {
                    name,
                    aliases,
                    server_user,
                };
                MailAdminAnswer::Created(mail_user(&self.create_mail_user(caller, &new)?))
            }
            MailAdminRequest::ListUsers => MailAdminAnswer::Users(
                self.list_mail_users(caller)?
                    .iter()
                    .map(mail_user)
                    .collect(),
            ),
            MailAdminRequest::RemoveUser { name, delete_file } => {
                let removed = self.remove_mail_user(caller, &name, delete_file)?;
                MailAdminAnswer::Removed {
                    user: mail_user(&removed.person),
                    file: removed.file,
                }
            }
        })
    }

    /// The directory, if it has been made.
    fn directory(&self) -> ServerResult<Option<Directory<'_>>> {
        let path = self.engine.data_dir().join(DIRECTORY_PATH);
        if !self.engine.backend().exists(&path) {
            return Ok(None);
        }
        Directory::open(&self.engine, &self.views)
            .map(Some)
            .map_err(mail_err)
    }
}

/// A person as the protocol carries one.
pub fn mail_user(p: &Person) -> MailUser {
    MailUser {
        unid: protocol::Unid(p.unid.0),
        full_name: p.full_name.clone(),
        short_name: p.short_name.clone(),
        aliases: p.aliases.clone(),
        mail_file: p.mail_file.to_string(),
        server_user: p.server_user.clone(),
    }
}

impl Service {
    /// The mail queue (server administrators: it names every sender,
    /// recipient and subject): at most `limit` messages from each mail
    /// box, read without taking or changing any (`mail::queue_listing`).
    pub fn mail_queue(&self, caller: &Caller, limit: usize) -> ServerResult<mail::QueueListing> {
        require_admin(caller)?;
        mail::queue_listing(&self.engine, &self.views, limit).map_err(mail_err)
    }
}

/// Refuses callers who are not server administrators, whatever they ask.
fn require_admin(caller: &Caller) -> ServerResult<()> {
    match (&caller.user, caller.admin) {
        (_, true) => Ok(()),
        (None, false) => Err(ServerError::Unauthenticated(
            "mail user administration is for server administrators: sign in as one".into(),
        )),
        (Some(u), false) => Err(ServerError::Forbidden(format!(
            "user {u:?} is not a server administrator: mail user administration is for \
             server administrators"
        ))),
    }
}
