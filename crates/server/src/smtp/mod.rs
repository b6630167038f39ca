//! SMTP: the inbound listener (off unless `smtp_listen` is set), the
//! submission listener (RFC 6409, off unless `submission_listen` is
//! set) and the driver of `mail::smtp::Session` both use, one tokio task
//! per connection.
//!
//! ```text
//!   settings.rs  SmtpSettings: address, limits, timeouts, connection limit
//!   listener.rs  accept, connection limit, shutdown (as the other doors)
//!   conn.rs      a connection: socket ⇄ Session, timeouts, STARTTLS
//!   mailer.rs    the session's questions on the blocking pool: recipients
//!                through the directory, messages into a mail box
//!   submission.rs  submission's: sign-in with the server's users, the
//!                person's addresses, deposits marked as theirs
//!   door.rs      which of the two a connection came in by
//! ```

mod conn;
mod door;
mod listener;
mod mailer;
mod settings;
mod submission;

pub(crate) use door::Door;
pub(crate) use listener::serve;
pub(crate) use mailer::Mailer;
pub use settings::SmtpSettings;
pub(crate) use submission::Submitter;
