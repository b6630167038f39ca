//! The mail layer's one error type.

use thiserror::Error;

#[derive(Debug, Error)]
#[non_exhaustive]
pub enum MailError {
    #[error(transparent)]
    View(#[from] views::ViewError),
    /// An SMTP session setting (limits, server name) is out of range.
    #[error("invalid SMTP setting: {0}")]
    SmtpSetting(String),
    /// The driver answered a question the SMTP session had not asked.
    #[error("the SMTP session is not waiting for {0}")]
    SmtpNotWaiting(&'static str),
    /// A store's id for a message would not fit in a reply line.
    #[error(
        "invalid delivery id {0:?}: must be 1 to 64 printable ASCII characters without spaces"
    )]
    InvalidDeliveryId(String),
    /// Raw message bytes that cannot become a mail document.
    #[error("not a mail message: {0}")]
    NotAMessage(crate::mime::NotAMessage),
}

pub type MailResult<T> = Result<T, MailError>;
