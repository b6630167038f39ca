//! The mail layer's one error type.
//!
//! Bad input (an address, a name, a size) gets a variant of its own that
//! names the offending value, and is found before anything is written.
//! What a stored document holds that the mail layer cannot use (a person
//! or message document edited by hand, or brought by replication) names
//! the database and the document.

use nsf::Unid;
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
    #[error(transparent)]
    Nsf(#[from] nsf::NsfError),
    /// An address that cannot be a recipient or sender.
    #[error("bad address {address:?}: {reason}")]
    BadAddress { address: String, reason: String },
    /// A person's name or alias the directory cannot hold.
    #[error("bad name {name:?}: {reason}")]
    BadName { name: String, reason: String },
    /// A directory name (full name, short name or alias) another person
    /// already answers to.
    #[error("{name:?} is already a name of {holder:?} in the directory")]
    NameTaken { name: String, holder: String },
    /// No person answers to this name.
    #[error("no person named {0:?} in the directory")]
    UnknownPerson(String),
    /// More than one person answers to this name.
    #[error("{name:?} names more than one person in the directory: {}", candidates.join(", "))]
    AmbiguousPerson {
        name: String,
        candidates: Vec<String>,
    },
    /// A message whose From is not its sender.
    #[error("the message says it is from {claimed:?}, but its sender is {sender:?}")]
    ForgedSender { claimed: String, sender: String },
    /// A message that cannot be sent or stored as it is.
    #[error("bad message: {0}")]
    BadMessage(String),
    /// Something above a size or count limit.
    #[error("{what} is {size} {unit}; the limit is {limit}")]
    TooLarge {
        what: String,
        size: u64,
        limit: u64,
        unit: String,
    },
    /// A mail setting out of range.
    #[error("invalid setting {key}: {reason}")]
    Setting { key: String, reason: String },
    /// The mail file a new person would get exists already.
    #[error(
        "mail file {path} already exists (kept from a removed person?); the person was not added"
    )]
    MailFileExists { path: String },
    /// A stored document the mail layer cannot read as what it should be.
    #[error("{db}: document {unid}: {reason}")]
    BadStored {
        db: String,
        unid: Unid,
        reason: String,
    },
    /// The caller's mail file holds no such meeting (never made there,
    /// or cancelled).
    #[error("no meeting {meeting} in {mail_file}")]
    UnknownMeeting { meeting: Unid, mail_file: String },
    /// Only a meeting's chair may move or cancel it.
    #[error("{person:?} does not chair meeting {meeting}")]
    NotChair { meeting: Unid, person: String },
    /// No invitation to the meeting is in the person's mail file.
    #[error("{person:?} has no invitation to meeting {meeting}")]
    NotInvited { meeting: Unid, person: String },
    /// The chair cancelled the meeting.
    #[error("meeting {meeting} was cancelled")]
    MeetingCancelled { meeting: Unid },
}

pub type MailResult<T> = Result<T, MailError>;
