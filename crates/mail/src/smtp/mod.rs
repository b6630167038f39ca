//! Inbound SMTP (RFC 5321 with SIZE, 8BITMIME, PIPELINING, STARTTLS) as a
//! sans-I/O session; the server crate's listener drives it.

mod action;
mod address;
mod command;
mod data;
mod limits;
mod reply;
mod session;
mod trace;

pub use action::{Action, Delivery, DeliveryId, Envelope, StoreFailure, Verdict, Waiting};
pub use address::{Mailbox, PathError, Recipient};
pub use command::BodyType;
pub use limits::{SessionLimits, MIN_LINE_LENGTH, MIN_RECIPIENTS};
pub use session::Session;
pub use trace::{received_line, MAX_RECEIVED};
