//! Mail user administration (server administrators only): add a person
//! to the directory with a mail file, list the directory, take a person
//! out keeping their mail file. One `MailAdmin` request each
//! (docs/protocol.md §5.2).

use crate::client::Client;
use crate::error::ClientError;
use protocol::{MailAdminAnswer, MailAdminRequest, MailFileFate, MailUser, Request, Response};

impl Client {
    /// Adds a person named `name` to the directory and makes their mail
    /// file; `server_user` is who they sign in as (`None`: `name`).
    /// Durable when this returns.
    pub async fn create_mail_user(
        &self,
        name: &str,
        aliases: &[String],
        server_user: Option<&str>,
    ) -> Result<MailUser, ClientError> {
        let request = MailAdminRequest::CreateUser {
            name: name.into(),
            aliases: aliases.to_vec(),
            server_user: server_user.map(str::to_string),
        };
        match self.mail_admin(request).await? {
            MailAdminAnswer::Created(user) => Ok(user),
            other => Err(unexpected("Created", other)),
        }
    }

    /// Every person in the directory, by full name.
    pub async fn list_mail_users(&self) -> Result<Vec<MailUser>, ClientError> {
        match self.mail_admin(MailAdminRequest::ListUsers).await? {
            MailAdminAnswer::Users(users) => Ok(users),
            other => Err(unexpected("Users", other)),
        }
    }

    /// Takes the person `name` names out of the directory; their mail
    /// file is kept unless `delete_file` (then deleted first; a file
    /// another person also uses is refused, 409). Durable when this
    /// returns.
    pub async fn remove_mail_user(
        &self,
        name: &str,
        delete_file: bool,
    ) -> Result<(MailUser, MailFileFate), ClientError> {
        let request = MailAdminRequest::RemoveUser {
            name: name.into(),
            delete_file,
        };
        match self.mail_admin(request).await? {
            MailAdminAnswer::Removed { user, file } => Ok((user, file)),
            other => Err(unexpected("Removed", other)),
        }
    }

    async fn mail_admin(&self, request: MailAdminRequest) -> Result<MailAdminAnswer, ClientError> {
        match self.request(Request::MailAdmin(request)).await? {
            Response::MailAdmin(answer) => Ok(answer),
            other => Err(ClientError::unexpected("MailAdmin", &other)),
        }
    }
}

fn unexpected(expected: &str, got: MailAdminAnswer) -> ClientError {
    ClientError::unexpected(&format!("MailAdmin({expected})"), &Response::MailAdmin(got))
}
