//! What the SMTP listeners are set to (`smtp_listen` and `[smtp]`,
//! `submission_listen` and `[submission]` in `folio.toml`), with the
//! defaults RFC 5321 §4.5.3 asks of a server. The submission listener
//! takes the `[smtp]` limits too, and adds its own sign-in rule.

use mail::MailConfig;
use std::time::Duration;

/// Settings of an SMTP listener (inbound or submission).
#[derive(Clone, Debug)]
pub struct SmtpSettings {
    /// The address to listen on (`smtp_listen`, `submission_listen`).
    pub listen: String,
    /// Connections served at once; more are answered `421` and closed.
    pub max_connections: usize,
    /// Largest message, bytes (advertised as `SIZE`; larger: `552`).
    pub max_message_size: u64,
    /// Most recipients of one transaction (at least 100, RFC 5321
    /// §4.5.3.1.8).
    pub max_recipients: usize,
    /// How long the server waits for the next command (and for a
    /// STARTTLS handshake): RFC 5321 §4.5.3.2.7 asks for 5 minutes.
    pub command_timeout: Duration,
    /// How long it waits for more of a message after `354`: RFC 5321
    /// §4.5.3.2.5 gives 3 minutes per block.
    pub data_timeout: Duration,
    /// How long a reply may wait for the client to read any of it.
    pub stall_timeout: Duration,
    /// The name in the greeting and the EHLO reply; `None`: the machine's
    /// host name, else `localhost`.
    pub server_name: Option<String>,
    /// Where messages are deposited (`[mail]`: the boxes, the largest
    /// message).
    pub mail: MailConfig,
    /// Submission only: passwords accepted without TLS on a connection
    /// that is not loopback (`submission.plaintext_auth`; off: `AUTH`
    /// is offered only after STARTTLS there).
    pub plaintext_auth: bool,
    /// TLS from the first byte (`submissions_listen`, RFC 8314 §3.3)
    /// instead of STARTTLS.
    pub implicit_tls: bool,
}

impl Default for SmtpSettings {
    fn default() -> Self {
        SmtpSettings {
            listen: "127.0.0.1:2525".into(),
            max_connections: 100,
            max_message_size: 25 << 20,
            max_recipients: mail::smtp::MIN_RECIPIENTS,
            command_timeout: Duration::from_secs(300),
            data_timeout: Duration::from_secs(180),
            stall_timeout: Duration::from_secs(60),
            server_name: None,
            mail: MailConfig::default(),
            plaintext_auth: false,
            implicit_tls: false,
        }
    }
}
