//! What a session asks of its driver, and the answers the driver gives.
//!
//! The session never does I/O; it queues [`Action`]s. Three of them pause
//! it until answered, so that the slow parts (a directory lookup, a
//! logged commit, a TLS handshake) can be async in the driver while the
//! session stays a plain state machine:
//!
//! ```text
//!   Action::VerifyRecipient ── Session::recipient_verdict(Verdict)
//!   Action::Store           ── Session::stored(Ok(DeliveryId) | Err(StoreFailure))
//!   Action::StartTls        ── Session::tls_started()
//!   Action::Authenticate    ── Session::authenticated(Ok(Identity) | Err(AuthFailure))
//! ```

use super::address::{Mailbox, Recipient};
use super::command::BodyType;
use crate::{MailError, MailResult};
use std::fmt;

/// The next thing the driver must do.
#[derive(Debug, PartialEq, Eq)]
pub enum Action {
    /// Write these bytes (one or more replies) to the client.
    Write(Vec<u8>),
    /// Look this recipient up; the session reads no further input until
    /// [`super::Session::recipient_verdict`].
    VerifyRecipient(Recipient),
    /// Make this message durable (a logged commit in a mail.box), then
    /// call [`super::Session::stored`]; the session reads no further input
    /// until then. On failure nothing may have been stored.
    Store(Delivery),
    /// Write everything queued before this action, then run the TLS
    /// handshake on the connection and call
    /// [`super::Session::tls_started`].
    StartTls,
    /// Check these credentials (submission's `AUTH`), then call
    /// [`super::Session::authenticated`]; the session reads no further
    /// input until then.
    Authenticate(Credentials),
    /// Flush what was written and close the connection.
    Close,
}

/// A user name and password from `AUTH PLAIN` or `AUTH LOGIN`.
#[derive(Clone, PartialEq, Eq)]
pub struct Credentials {
    pub user: String,
    pub password: String,
}

impl fmt::Debug for Credentials {
    /// The password never reaches a log line.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Credentials")
            .field("user", &self.user)
            .finish_non_exhaustive()
    }
}

/// Who signed in, as the driver answers [`Action::Authenticate`]: the
/// server user, the directory person they send as, and the envelope
/// senders (`MAIL FROM`) that person may use.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Identity {
    pub user: String,
    pub person: String,
    pub addresses: Vec<String>,
}

impl Identity {
    /// Whether `sender` is one of this person's addresses (compared
    /// without regard to case: the directory's names are).
    pub fn may_send_as(&self, sender: &Mailbox) -> bool {
        let sender = sender.to_string();
        self.addresses
            .iter()
            .any(|a| a.eq_ignore_ascii_case(&sender))
    }
}

/// Why [`Action::Authenticate`] signed nobody in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AuthFailure {
    /// A wrong user name or password (one answer for both): 535.
    BadCredentials,
    /// The user is no person in the directory, so has no address: 535.
    NoSender,
    /// The user store cannot be read now: 454, try again later.
    Unavailable,
}

/// A complete message and its envelope, ready to store.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Delivery {
    pub envelope: Envelope,
    /// The message as received, dot-unstuffed, every line ending in CRLF.
    pub data: Vec<u8>,
}

/// The SMTP envelope of one transaction, and what the driver needs to
/// write a `Received:` trace line (the peer address and the time are
/// its own).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Envelope {
    /// The EHLO or HELO argument, as given (not checked against DNS).
    pub client_domain: String,
    /// Whether the client greeted with EHLO (ESMTP) rather than HELO.
    pub esmtp: bool,
    /// Whether the transaction ran over TLS (after STARTTLS).
    pub tls: bool,
    /// The reverse-path; `None` for the null path `<>` of bounces.
    pub sender: Option<Mailbox>,
    /// The accepted recipients, in RCPT order (at least one).
    pub recipients: Vec<Recipient>,
    pub body: BodyType,
    /// `SIZE=` from MAIL, if given.
    pub declared_size: Option<u64>,
    /// Who signed in with `AUTH` (submission), if anyone.
    pub authenticated: Option<Identity>,
}

/// The driver's answer to [`Action::VerifyRecipient`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// A local user: 250.
    Accept,
    /// No such local user: 550.
    NoSuchUser,
    /// Not a domain this server delivers for: 550 (no relaying).
    NoRelay,
    /// The directory cannot answer now: 450, the client retries later.
    TryLater,
}

/// Why a message could not be stored; nothing of it was. Each maps to
/// the reply RFC 5321 §4.2.3 gives for it after the final dot.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StoreFailure {
    /// The write or its commit failed: 451, try again later.
    Transient,
    /// The server is out of space: 452, try again later.
    InsufficientStorage,
    /// A recipient's mail file is over its quota: 552.
    ExceedsStorage,
    /// The message cannot become a document (see `mime::to_document`):
    /// 554, do not retry.
    Rejected,
}

/// What the store calls the message it made durable, quoted in the 250
/// reply after the final dot. Printable ASCII without spaces, at most 64
/// characters, so it cannot break the reply line.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct DeliveryId(String);

const MAX_DELIVERY_ID: usize = 64;

impl DeliveryId {
    pub fn new(id: impl Into<String>) -> MailResult<DeliveryId> {
        let id = id.into();
        let printable = id.bytes().all(|b| b.is_ascii_graphic());
        if id.is_empty() || id.len() > MAX_DELIVERY_ID || !printable {
            return Err(MailError::InvalidDeliveryId(id));
        }
        Ok(DeliveryId(id))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for DeliveryId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// What the session waits for, so the driver can apply its time limits
/// (RFC 5321 §4.5.3.2.7: at least 5 minutes for a command) and knows
/// when to read from the socket.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Waiting {
    /// The next command line.
    Command,
    /// More of the message, after 354.
    MessageData,
    /// The driver's [`Verdict`] (no socket reads until then).
    RecipientVerdict,
    /// The driver's store result (no socket reads until then).
    StoreResult,
    /// The driver's TLS handshake.
    TlsHandshake,
    /// The next line of an `AUTH` exchange (a base64 response).
    AuthResponse,
    /// The driver's check of `AUTH` credentials (no socket reads).
    AuthResult,
    /// Nothing: the session is closed.
    Closed,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn delivery_ids_cannot_break_a_reply() {
        assert_eq!(
            DeliveryId::new("0000000A-42").unwrap().as_str(),
            "0000000A-42"
        );
        for bad in ["", "a b", "a\r\n250 OK", "é", &"x".repeat(65)] {
            assert!(matches!(
                DeliveryId::new(bad),
                Err(MailError::InvalidDeliveryId(_))
            ));
        }
    }
}
