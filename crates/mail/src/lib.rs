//! Mail and calendar: the mail template, and (to come) the directory of
//! people, the router that delivers deposited messages exactly once, and
//! meeting invitations.
//!
//! This crate sits above `views` (a mail file's Inbox is a folder, its
//! Sent and Calendar are views) and below `server`, which will run the
//! router as one of its background tasks.

mod error;
pub mod mime;
pub mod smtp;
mod template;

pub use error::{MailError, MailResult};
pub use template::{create_design, design};
