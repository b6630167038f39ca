//! Mail and calendar: the mail template, the message model, the
//! directory of people, mail files and sending (deposit into a mail
//! box); the router that delivers deposited messages exactly once;
//! meetings: invitations, answers, reschedules and cancellations.
//!
//! This crate sits above `views` (a mail file's Inbox is a folder, its
//! Sent and Calendar are views; the directory is looked up through a
//! view) and below `server`, which will run the router as one of its
//! background tasks. It names databases only by `nsf::DbPath` (I18).
//! docs/mail.md describes the databases and the items of each form.
//!
//! ```text
//!   message.rs    forms as typed values ⇄ items; addresses; limits
//!   directory.rs  names.fdb: person documents, resolve, unique names
//!   mailfile.rs   mail/<short name>.fdb from the template; drafts
//!   mailbox.rs    mail.box databases: deposit, delivery state
//!   inbound.rs    mail received by SMTP, deposited for its envelope recipients
//!   router/       the router: exactly-once delivery, backoff, NDRs, stats
//!   outbound/     mail for other domains: the durable queue, attempts, DSNs
//!   calendar/     meetings: the chair's entry, invitations, answers (I34)
//!   attach.rs     files sent with a message, within its size limit
//!   sysdb.rs      making a database with its design and ACL, crash-safely
//!   template.rs   the mail file design
//! ```

mod attach;
mod calendar;
mod config;
mod directory;
mod error;
mod inbound;
mod mailbox;
mod mailfile;
mod message;
pub mod mime;
pub mod outbound;
mod router;
pub mod smtp;
mod sysdb;
mod template;

pub use attach::{Attachment, MAX_ATTACHMENTS};
pub use calendar::{
    attendee_entry_unid, cancel_meeting, create_meeting, read_meeting, reschedule_meeting, respond,
    AttendeeStatus, Meeting, NewMeeting, NewTime, Response, ATTENDEE_STATUS, ATTENDEE_STATUS_DATE,
    NOTICES_VIEW, NOTICE_DATE,
};
pub use config::MailConfig;
pub use directory::{
    Directory, NewPerson, Person, Resolved, DIRECTORY_PATH, MAIL_FOLDER, MAX_ALIASES,
    MAX_NAME_BYTES, NAMES_VIEW, PEOPLE_VIEW,
};
pub use error::{MailError, MailResult};
pub use inbound::{
    deposit_inbound, deposit_received, deposit_submitted, memo_from, HTML_BODY_NAME,
    ORIGINAL_MIME_NAME,
};
pub use mailbox::{
    box_for, box_path, deposit, item as box_item, open_box, read_deposit, Delivery, DeliveryState,
    Deposit, DepositId, ORIGINAL_MIME_TYPE, PENDING_VIEW,
};
pub use mailfile::{create_mail_file, create_user, open_mail_file, save_draft, Draft};
pub use message::{
    item, Address, Appointment, Form, Header, Memo, Message, MessageId, Notice, NoticeType, Reply,
    MAX_ADDRESS_BYTES, MAX_BODY_BYTES, MAX_MESSAGE_ID_BYTES, MAX_RECIPIENTS, MAX_SUBJECT_BYTES,
};
pub use router::{
    backoff, copy_unid, queue_listing, Pass, QueueListing, QueuedMessage, QueuedRecipient, Router,
    RouterConfig, RouterStats, StatsSnapshot, BACKOFF,
};
pub use template::{create_design, design, INBOX};
