//! What the IMAP listener is set to (`imap_listen` and `[imap]` in
//! `folio.toml`, docs/mail.md "IMAP").

use std::time::Duration;

/// Settings of the IMAP listener.
#[derive(Clone, Debug)]
pub struct ImapSettings {
    /// The address to listen on (`imap_listen`).
    pub listen: String,
    /// Sessions served at once; more are told `* BYE` and closed.
    pub max_connections: usize,
    /// How long a session may wait for the next command, IDLE included:
    /// RFC 9051 §5.4 asks for at least 30 minutes.
    pub idle_timeout: Duration,
    /// Largest command line, literals aside, in bytes.
    pub max_command_size: u32,
    /// Largest message APPEND takes, in bytes.
    pub max_message_size: u32,
    /// Passwords accepted without TLS on a connection that is not
    /// loopback (off: LOGINDISABLED there).
    pub plaintext_login: bool,
    /// How often an idling session looks for changes to its mailbox
    /// (a look is one read of the change sequence).
    pub idle_poll: Duration,
    /// How long a response may wait for the client to read any of it.
    pub stall_timeout: Duration,
    /// TLS from the first byte (`imaps_listen`, RFC 8314 §3.2) instead
    /// of STARTTLS.
    pub implicit_tls: bool,
}

impl Default for ImapSettings {
    fn default() -> Self {
        ImapSettings {
            listen: "127.0.0.1:1143".into(),
            max_connections: 1_000,
            idle_timeout: Duration::from_secs(30 * 60),
            max_command_size: 64 << 10,
            max_message_size: 25 << 20,
            plaintext_login: false,
            idle_poll: Duration::from_millis(50),
            stall_timeout: Duration::from_secs(60),
            implicit_tls: false,
        }
    }
}
