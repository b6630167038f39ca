//! Server users through a door (the HTTP API's `/_users`, which the
//! console's Users page uses): list, add, reset a password, remove, and
//! make or revoke API tokens. `folio user …` does the same on the data
//! directory; both end in the one [`UserStore`](crate::auth::UserStore),
//! which reloads `users.json` when the other changed it.
//!
//! Who may: server administrators only, checked before anything else, so
//! anyone else gets one answer whatever the name (401 anonymous, 403
//! signed in) and learns nothing about which users exist. Secrets go one
//! way: passwords come in and are stored as argon2 hashes, a token is
//! answered once, when it is made; neither is ever listed.
//!
//! An administrator may not remove themselves: the last administrator
//! doing so would leave a server nobody can administer through its
//! doors (`folio user add --admin` on the data directory still could).

use super::{Caller, Service};
use crate::auth::UserInfo;
use crate::{ServerError, ServerResult};

impl Service {
    /// Every server user, without secrets (administrators only).
    pub fn list_server_users(&self, caller: &Caller) -> ServerResult<Vec<UserInfo>> {
        require_admin(caller)?;
        self.users.list_users()
    }

    /// Adds a server user (administrators only); 409 if the name is
    /// taken (ignoring case), 400 for a bad name or a short password.
    pub fn add_server_user(
        &self,
        caller: &Caller,
        name: &str,
        password: &str,
        admin: bool,
    ) -> ServerResult<UserInfo> {
        require_admin(caller)?;
        self.users.add_user(name, password, admin)?;
        self.server_user(name)
    }

    /// Replaces a user's password (administrators only). The user's
    /// sessions and remembered sign-ins stop counting at once; API tokens
    /// stay.
    pub fn set_server_user_password(
        &self,
        caller: &Caller,
        name: &str,
        password: &str,
    ) -> ServerResult<()> {
        require_admin(caller)?;
        self.users.set_password(name, password)
    }

    /// Removes a user with their tokens and sessions (administrators
    /// only; not the caller themselves).
    pub fn remove_server_user(&self, caller: &Caller, name: &str) -> ServerResult<()> {
        require_admin(caller)?;
        if caller
            .user
            .as_deref()
            .is_some_and(|me| me.to_lowercase() == name.to_lowercase())
        {
            return Err(ServerError::BadRequest(format!(
                "user {name:?} is who this request signs in as: another administrator must \
                 remove them"
            )));
        }
        self.users.remove_user(name)
    }

    /// Makes an API token for a user, labelled; the token is answered
    /// this once (administrators only).
    pub fn create_server_user_token(
        &self,
        caller: &Caller,
        name: &str,
        label: &str,
    ) -> ServerResult<String> {
        require_admin(caller)?;
        self.users.create_token(name, label)
    }

    /// Revokes a user's API token by its label (administrators only).
    pub fn revoke_server_user_token(
        &self,
        caller: &Caller,
        name: &str,
        label: &str,
    ) -> ServerResult<()> {
        require_admin(caller)?;
        self.users.revoke_token(name, label)
    }

    fn server_user(&self, name: &str) -> ServerResult<UserInfo> {
        let key = name.to_lowercase();
        self.users
            .list_users()?
            .into_iter()
            .find(|u| u.name.to_lowercase() == key)
            .ok_or_else(|| ServerError::NoSuchUser(name.to_string()))
    }
}

fn require_admin(caller: &Caller) -> ServerResult<()> {
    match (&caller.user, caller.admin) {
        (_, true) => Ok(()),
        (None, false) => Err(ServerError::Unauthenticated(
            "server user administration is for server administrators: sign in as one".into(),
        )),
        (Some(u), false) => Err(ServerError::Forbidden(format!(
            "user {u:?} is not a server administrator: server user administration is for \
             server administrators"
        ))),
    }
}
