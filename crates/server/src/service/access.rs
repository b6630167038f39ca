//! Who is asking and what they may do: a [`Caller`] proved by a password
//! or a token, the caller's access to a database from its ACL, and the
//! refusals every resource shares.
//!
//! The refusals are worded so that nothing leaks: a database the caller
//! may not see answers as one that does not exist ([`unseen`]), and a
//! document the caller may not read as one that is missing ([`hidden`]).

use super::Service;
use crate::auth::Secret;
use crate::error::nsf_err;
use crate::{ServerError, ServerResult};
use nsf::{Access, AccessLevel, Acl, Database, Note, NsfError};
use std::sync::Arc;

/// Who is asking, once authenticated.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Caller {
    /// The server user's name; `None` for anonymous callers.
    pub user: Option<String>,
    /// Server administrators have full access to every database.
    pub admin: bool,
}

impl Caller {
    /// A caller who gave no credentials.
    pub fn anonymous() -> Caller {
        Caller {
            user: None,
            admin: false,
        }
    }

    /// A named server user.
    pub fn user(name: &str, admin: bool) -> Caller {
        Caller {
            user: Some(name.to_string()),
            admin,
        }
    }
}

impl Service {
    /// Checks a user's password, or an API or session token given in its
    /// place (a token names its user; a user name given with it must be
    /// that one).
    pub fn authenticate(&self, user: &str, secret: &Secret) -> ServerResult<Caller> {
        let u = match secret {
            Secret::Token(token) => {
                let u = self.users.verify_token(token)?;
                if !user.is_empty() && u.name.to_lowercase() != user.to_lowercase() {
                    return Err(ServerError::Unauthenticated(
                        "wrong user name or password".into(),
                    ));
                }
                u
            }
            Secret::Password(password) => self.users.verify_password(user, password)?,
        };
        Ok(Caller::user(&u.name, u.admin))
    }

    /// Checks a bearer token.
    pub fn authenticate_token(&self, token: &str) -> ServerResult<Caller> {
        let u = self.users.verify_token(token)?;
        Ok(Caller::user(&u.name, u.admin))
    }

    /// Issues a session token for HTTP clients (the password is checked
    /// once, by the user store that issues the token).
    pub fn login(&self, user: &str, password: &str) -> ServerResult<(Caller, String)> {
        let token = self.users.login(user, password)?;
        let caller = self.authenticate_token(&token)?;
        Ok((caller, token))
    }

    /// Ends the session of a token from [`login`](Self::login) (nothing
    /// if it is not one).
    pub fn logout(&self, token: &str) {
        self.users.logout(token);
    }

    /// What `caller` may do in `db`.
    pub fn access(&self, caller: &Caller, db: &Database) -> ServerResult<Access> {
        if caller.admin {
            return Ok(Access::full());
        }
        let acl = db.acl().map_err(nsf_err)?;
        Ok(match acl {
            Some(acl) => acl.access(caller.user.as_deref()),
            None => Acl::for_creator(None).access(caller.user.as_deref()),
        })
    }

    /// The database at `path` and the caller's access, if the caller may
    /// see it at all. A database the caller may not see and one that does
    /// not exist get the same answer, so nobody can probe which databases
    /// exist: 401 for an anonymous caller, 404 for a signed-in one (a path
    /// that is not canonical is refused as such either way, and so is
    /// an open refused because the server is shutting down, since neither
    /// says anything about what exists). Administrators get the real
    /// error.
    pub(super) fn reach(
        &self,
        caller: &Caller,
        path: &str,
    ) -> ServerResult<(Arc<Database>, Access)> {
        let opened = self.engine.open_database(path);
        if caller.admin {
            let db = opened.map_err(nsf_err)?;
            return Ok((db, Access::full()));
        }
        let db = match opened {
            Ok(db) => db,
            Err(e @ (NsfError::BadPath { .. } | NsfError::EngineClosed)) => return Err(nsf_err(e)),
            Err(e) => {
                tracing::debug!(db = path, error = %e, "open refused as unseen");
                return Err(unseen(caller, path));
            }
        };
        match self.access(caller, &db) {
            Ok(a) if a.level() > AccessLevel::NoAccess => Ok((db, a)),
            _ => Err(unseen(caller, path)),
        }
    }

    /// The caller's access to `db`, if it reaches `level`.
    pub(super) fn require(
        &self,
        caller: &Caller,
        db: &Database,
        level: AccessLevel,
    ) -> ServerResult<Access> {
        let a = self.access(caller, db)?;
        if a.level() < level {
            return Err(denied(caller, db.path()));
        }
        Ok(a)
    }

    /// Refuses unless the caller may manage `db`.
    pub(super) fn require_manager(&self, caller: &Caller, db: &Database) -> ServerResult<()> {
        if !self.access(caller, db)?.can_manage() {
            return Err(forbidden(caller, "needs Manager access for this in", db));
        }
        Ok(())
    }

    /// Whether the document `id` exists and `access` may read it.
    pub(super) fn readable(
        &self,
        access: &Access,
        db: &Database,
        id: nsf::NoteId,
    ) -> ServerResult<bool> {
        Ok(db
            .get_by_id(id)
            .map_err(nsf_err)?
            .is_some_and(|n| access.can_read(&n)))
    }
}

fn who(caller: &Caller) -> String {
    match &caller.user {
        Some(u) => format!("user {u:?}"),
        None => "an anonymous caller".into(),
    }
}

/// The one answer for a database the caller may not see, whether or not
/// it exists (no text or status tells the two apart).
pub(super) fn unseen(caller: &Caller, path: &str) -> ServerError {
    match &caller.user {
        None => ServerError::Unauthenticated(format!("{path}: sign in to open this database")),
        Some(u) => ServerError::NotFound(format!(
            "{path}: no such database, or user {u:?} may not open it"
        )),
    }
}

/// Access below what an operation needs: anonymous callers are asked
/// to sign in.
pub(super) fn denied(caller: &Caller, path: &str) -> ServerError {
    match &caller.user {
        None => {
            ServerError::Unauthenticated(format!("{path} does not allow anonymous access; sign in"))
        }
        Some(u) => ServerError::Forbidden(format!("user {u:?} has no access to {path}")),
    }
}

/// "`who` `what` `db`": an operation the ACL does not allow.
pub(super) fn forbidden(caller: &Caller, what: &str, db: &Database) -> ServerError {
    ServerError::Forbidden(format!("{} {what} {}", who(caller), db.path()))
}

/// A document the caller may not read is reported as missing.
pub(super) fn hidden(db: &Database, note: &Note) -> ServerError {
    ServerError::NotFound(format!("{}: no document {}", db.path(), note.oid.unid))
}

/// A request whose arguments are malformed.
pub(super) fn bad(msg: String) -> ServerError {
    ServerError::BadRequest(msg)
}
