//! IMAP: the listener (off unless `imap_listen` is set) and the driver of
//! `imap::Session`, one tokio task per connection.
//!
//! ```text
//!   settings.rs  ImapSettings: address, limits, timeouts, connection limit
//!   listener.rs  accept, connection limit, shutdown (as the other doors)
//!   conn.rs      a connection: socket ⇄ Session, timeouts, STARTTLS, IDLE
//!   accounts.rs  sign-in with the server's users; the user's mail file
//! ```

mod accounts;
mod conn;
mod listener;
mod settings;

pub(crate) use accounts::ServerAccounts;
pub(crate) use listener::serve;
pub use settings::ImapSettings;
