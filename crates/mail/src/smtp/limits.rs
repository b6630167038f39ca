//! What one SMTP session will accept, fixed when it is created.
//!
//! Every limit bounds memory or work a client can make the server spend:
//! the message size bounds the one buffer that grows with input (the
//! message being received), the line length bounds the command buffer,
//! the recipient count bounds the envelope and the directory lookups, and
//! the bad-command count ends sessions that only send noise. They are
//! checked once, in [`SessionLimits::validate`], so the session itself
//! never meets a nonsensical one.

use crate::{MailError, MailResult};

/// RFC 5321 §4.5.3.1.4: a command line is at least 512 octets, CRLF
/// included; a server must accept that much.
pub const MIN_LINE_LENGTH: usize = 512;
/// RFC 5321 §4.5.3.1.8: a server must accept at least 100 recipients.
pub const MIN_RECIPIENTS: usize = 100;

/// The limits of one session.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SessionLimits {
    /// Largest message accepted, in bytes after dot-unstuffing (CRLF line
    /// ends included). Advertised in the EHLO reply as `SIZE n`; a larger
    /// `SIZE=` on MAIL is refused there, and a larger message is discarded
    /// while it arrives and refused with 552 after its final dot.
    pub max_message_size: u64,
    /// Most recipients in one transaction; the next RCPT gets 452.
    pub max_recipients: usize,
    /// Longest command line, CRLF included; a longer one gets 500.
    /// (Message lines are bounded only by the message size.)
    pub max_line_length: usize,
    /// After this many commands answered with an error (500, 501, 502,
    /// 503, 555) the session answers 421 and closes.
    pub max_bad_commands: u32,
    /// Whether STARTTLS is advertised and accepted (the driver has a
    /// certificate to offer).
    pub starttls: bool,
    /// Whether `AUTH` is offered and required before `MAIL` (message
    /// submission, RFC 6409) or not offered at all (inbound).
    pub auth: AuthPolicy,
}

/// Whether a session signs its clients in.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum AuthPolicy {
    /// Inbound (port 25): no `AUTH`; mail comes for local people.
    #[default]
    Off,
    /// Submission (RFC 6409): `AUTH PLAIN` and `AUTH LOGIN`, required
    /// before `MAIL`. Both send the password in the clear, so they are
    /// offered only over TLS unless `cleartext` (a loopback connection,
    /// or the setting that allows it).
    Required { cleartext: bool },
}

impl Default for SessionLimits {
    fn default() -> Self {
        SessionLimits {
            max_message_size: 25 * 1024 * 1024,
            max_recipients: MIN_RECIPIENTS,
            max_line_length: 1000,
            max_bad_commands: 10,
            starttls: false,
            auth: AuthPolicy::Off,
        }
    }
}

impl SessionLimits {
    /// Refuses limits below what RFC 5321 requires a server to accept, or
    /// that would make every session fail.
    pub fn validate(&self) -> MailResult<()> {
        let bad = |why: String| Err(MailError::SmtpSetting(why));
        if self.max_message_size == 0 {
            return bad("max_message_size must be at least 1 byte".into());
        }
        if self.max_recipients < MIN_RECIPIENTS {
            return bad(format!(
                "max_recipients must be at least {MIN_RECIPIENTS} (RFC 5321 §4.5.3.1.8), not {}",
                self.max_recipients
            ));
        }
        if self.max_line_length < MIN_LINE_LENGTH {
            return bad(format!(
                "max_line_length must be at least {MIN_LINE_LENGTH} (RFC 5321 §4.5.3.1.4), not {}",
                self.max_line_length
            ));
        }
        if self.max_bad_commands == 0 {
            return bad("max_bad_commands must be at least 1".into());
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_are_valid() {
        SessionLimits::default().validate().unwrap();
    }

    #[test]
    fn limits_below_the_rfc_minimums_are_refused() {
        let cases = [
            SessionLimits {
                max_message_size: 0,
                ..SessionLimits::default()
            },
            SessionLimits {
                max_recipients: 99,
                ..SessionLimits::default()
            },
            SessionLimits {
                max_line_length: 511,
                ..SessionLimits::default()
            },
            SessionLimits {
                max_bad_commands: 0,
                ..SessionLimits::default()
            },
        ];
        for limits in cases {
            let err = limits.validate().unwrap_err();
            assert!(
                matches!(err, MailError::SmtpSetting(_)),
                "{limits:?}: {err}"
            );
        }
    }
}
