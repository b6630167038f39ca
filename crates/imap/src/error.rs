//! The crate's one error type: what a store call can fail with, worded
//! for the client (the session puts the text after `NO`).

use thiserror::Error;

/// Why a store operation failed.
#[derive(Debug, Error)]
#[non_exhaustive]
pub enum ImapError {
    #[error("no mailbox {0:?}")]
    NoMailbox(String),
    #[error("mailbox {0:?} already exists")]
    MailboxExists(String),
    #[error("no message with UID {0}")]
    NoMessage(u32),
    #[error("{0}")]
    Refused(String),
    #[error("not a message: {0}")]
    NotAMessage(String),
    #[error(transparent)]
    Mail(#[from] mail::MailError),
    #[error(transparent)]
    Nsf(#[from] nsf::NsfError),
    #[error(transparent)]
    View(#[from] views::ViewError),
}

pub type ImapResult<T> = Result<T, ImapError>;
