//! Inbound SMTP: the listener (off unless `smtp_listen` is set) and the
//! driver of `mail::smtp::Session`, one tokio task per connection.
//!
//! ```text
//!   settings.rs  SmtpSettings: address, limits, timeouts, connection limit
//!   listener.rs  accept, connection limit, shutdown (as the other doors)
//!   conn.rs      a connection: socket ⇄ Session, timeouts, STARTTLS
//!   mailer.rs    the session's questions on the blocking pool: recipients
//!                through the directory, messages into a mail box
//! ```

mod conn;
mod listener;
mod mailer;
mod settings;

pub(crate) use listener::serve;
pub(crate) use mailer::Mailer;
pub use settings::SmtpSettings;
