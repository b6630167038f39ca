//! SMTP (RFC 5321 with SIZE, 8BITMIME, PIPELINING, STARTTLS) as a sans-I/O
//! session, inbound or for message submission (RFC 6409, with AUTH PLAIN
//! and LOGIN, RFC 4954); the server crate's listeners drive it.

mod action;
mod address;
mod auth;
mod command;
mod data;
mod limits;
mod reply;
mod session;
mod trace;

pub use action::{
    Action, AuthFailure, Credentials, Delivery, DeliveryId, Envelope, Identity, StoreFailure,
    Verdict, Waiting,
};
pub use address::{Mailbox, PathError, Recipient};
pub use command::BodyType;
pub use limits::{AuthPolicy, SessionLimits, MIN_LINE_LENGTH, MIN_RECIPIENTS};
pub use session::Session;
pub use trace::{received_line, MAX_RECEIVED};
