//! Who may read mail over IMAP: the server's own users, with the same
//! passwords (argon2) and tokens as HTTP and the native protocol; each
//! reads only the mail file of the directory person who signs in as them,
//! through the access that file's ACL gives them ($Readers included).

use crate::auth::Secret;
use crate::service::Service;
use crate::ServerError;
use imap::{Accounts, LoginRefused, MailFileStore, Mailstore};
use std::sync::Arc;

/// [`imap::Accounts`] over the server's users.
pub(crate) struct ServerAccounts {
    service: Arc<Service>,
}

impl ServerAccounts {
    pub(crate) fn new(service: Arc<Service>) -> ServerAccounts {
        ServerAccounts { service }
    }
}

impl Accounts for ServerAccounts {
    fn login(&self, user: &str, password: &str) -> Result<Box<dyn Mailstore>, LoginRefused> {
        let s = &self.service;
        let caller = s
            .authenticate(user, &Secret::parse(password.to_string()))
            .map_err(|e| match e {
                ServerError::Unauthenticated(_) => {
                    tracing::info!("IMAP: sign-in refused for user {user:?}");
                    LoginRefused::BadCredentials
                }
                e => {
                    tracing::warn!("IMAP sign-in could not be checked: {e}");
                    LoginRefused::Unavailable("the user store cannot be read".into())
                }
            })?;
        let name = caller.user.clone().unwrap_or_default();
        let person = s.person_of(&name).map_err(|_| LoginRefused::NoMailFile)?;
        let db = mail::open_mail_file(s.engine(), s.views(), &person).map_err(|e| {
            tracing::warn!("IMAP: the mail file of {name:?} cannot be opened: {e}");
            LoginRefused::Unavailable("the mail file cannot be opened".into())
        })?;
        let access = s
            .access(&caller, &db)
            .map_err(|_| LoginRefused::NoMailFile)?;
        Ok(Box::new(MailFileStore::new(db, s.views().clone(), access)))
    }
}
