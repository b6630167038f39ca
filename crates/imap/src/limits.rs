//! What one session may cost and how it is reached.
//!
//! The codec (imap-next) reads a command whole, literals included, before
//! the session sees it, so `max_command_bytes` bounds a session's input
//! memory; a literal announced over `max_literal_bytes` is refused before
//! its bytes are read (synchronizing literals) or read and dropped
//! (non-synchronizing ones, which the client sends unasked).

/// Limits of one session (settings `[imap]`, docs/mail.md).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SessionLimits {
    /// Largest command, literals included, in bytes.
    pub max_command_bytes: u32,
    /// Largest literal (an APPENDed message), in bytes.
    pub max_literal_bytes: u32,
    /// Bad commands in a row before the session is closed.
    pub max_bad_commands: u32,
    /// LOGIN and AUTHENTICATE PLAIN without TLS on a connection that is
    /// not loopback.
    pub plaintext_login: bool,
}

impl Default for SessionLimits {
    fn default() -> Self {
        SessionLimits {
            max_command_bytes: 64 << 10,
            max_literal_bytes: 25 << 20,
            max_bad_commands: 20,
            plaintext_login: false,
        }
    }
}

/// How the client reached the session.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct Transport {
    /// The connection is encrypted (implicit TLS, or after STARTTLS).
    pub tls: bool,
    /// The peer is on this machine (127.0.0.0/8, ::1).
    pub loopback: bool,
    /// STARTTLS can be offered (the server has a certificate).
    pub starttls: bool,
}

impl Transport {
    /// Passwords may be sent on this connection.
    pub fn may_send_passwords(&self, limits: &SessionLimits) -> bool {
        self.tls || self.loopback || limits.plaintext_login
    }
}
