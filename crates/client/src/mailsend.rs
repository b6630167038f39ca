//! Sending mail: one `SendMail` request (docs/protocol.md §5.2) carrying
//! a message of the mail template as its items in JSON (the mapping
//! documents use, docs/mail.md lists each form's items), deposited for
//! the router or saved as a draft. The sender is the signed-in user's
//! person; a server administrator may name another (`on_behalf_of`).

use crate::client::Client;
use crate::error::ClientError;
use protocol::{MailFile, Request, Response, Unid};
use tokio::io::AsyncRead;

/// Where a sent message was stored.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MailSent {
    /// The message's id, the same in every delivered copy.
    pub message_id: String,
    /// The mail box it waits in for the router, or for a draft the
    /// sender's mail file.
    pub stored_in: String,
    /// The stored document.
    pub unid: Unid,
    /// Whether it was saved as a draft.
    pub draft: bool,
}

impl Client {
    /// Sends the message whose items `json` holds (with `draft`, saves it
    /// in the sender's mail file instead). Durable when this returns.
    pub async fn send_mail(
        &self,
        json: &str,
        draft: bool,
        on_behalf_of: Option<&str>,
    ) -> Result<MailSent, ClientError> {
        let request = Request::SendMail {
            json: json.into(),
            draft,
            on_behalf_of: on_behalf_of.map(str::to_string),
        };
        sent(self.request(request).await?)
    }

    /// Sends (or saves) the message `json` holds with `files` attached,
    /// their bytes read from `content` back to back, each exactly its
    /// declared size (docs/protocol.md `SendMailFiles`). A message over
    /// the server's size limit is refused before any byte is sent on.
    /// Durable when this returns.
    pub async fn send_mail_files(
        &self,
        json: &str,
        draft: bool,
        on_behalf_of: Option<&str>,
        files: Vec<MailFile>,
        mut content: impl AsyncRead + Unpin,
    ) -> Result<MailSent, ClientError> {
        let request = Request::SendMailFiles {
            json: json.into(),
            draft,
            on_behalf_of: on_behalf_of.map(str::to_string),
            files,
        };
        sent(self.upload(request, &mut content).await?)
    }
}

/// The `MailSent` answer.
fn sent(answer: Response) -> Result<MailSent, ClientError> {
    match answer {
        Response::MailSent {
            message_id,
            stored_in,
            unid,
            draft,
        } => Ok(MailSent {
            message_id,
            stored_in,
            unid,
            draft,
        }),
        other => Err(ClientError::unexpected("MailSent", &other)),
    }
}
