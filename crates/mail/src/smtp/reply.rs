//! Replies: a three-digit code and one or more lines of text.
//!
//! Reply text is built only from this file's fixed strings, the server's
//! own name and ids the session validated, never from the client's
//! bytes, so a reply cannot be made to carry a line break or a second
//! reply. Multi-line replies (EHLO) use `250-` on every line but the last
//! (RFC 5321 §4.2.1).

#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Reply {
    code: u16,
    lines: Vec<String>,
}

impl Reply {
    pub(crate) fn new(code: u16, text: impl Into<String>) -> Reply {
        Reply {
            code,
            lines: vec![text.into()],
        }
    }

    /// A reply of several lines; `lines` must not be empty.
    pub(crate) fn multiline(code: u16, lines: Vec<String>) -> Reply {
        debug_assert!(!lines.is_empty());
        Reply { code, lines }
    }

    /// Appends the reply's wire form to `out`.
    pub(crate) fn write_to(&self, out: &mut Vec<u8>) {
        let last = self.lines.len().saturating_sub(1);
        for (i, line) in self.lines.iter().enumerate() {
            let separator = if i == last { ' ' } else { '-' };
            out.extend_from_slice(format!("{}{separator}{line}\r\n", self.code).as_bytes());
        }
    }

    #[cfg(test)]
    pub(crate) fn code(&self) -> u16 {
        self.code
    }

    /// Whether this reply counts against `max_bad_commands`: the client
    /// sent something it should not have.
    pub(crate) fn is_bad_command(&self) -> bool {
        matches!(self.code, 500..=503 | 555)
    }
}

/// The fixed texts, one per situation, so the codes are reviewed in one
/// place (docs/design.md "SMTP session" lists them).
pub(crate) mod text {
    pub(crate) const SENDER_OK: &str = "Sender OK";
    pub(crate) const RECIPIENT_OK: &str = "Recipient OK";
    pub(crate) const OK: &str = "OK";
    pub(crate) const RESET: &str = "Reset";
    pub(crate) const START_DATA: &str = "End data with <CR><LF>.<CR><LF>";
    pub(crate) const READY_FOR_TLS: &str = "Ready to start TLS";
    pub(crate) const HELP: &str = "Commands: EHLO HELO MAIL RCPT DATA RSET NOOP QUIT VRFY";
    pub(crate) const CANNOT_VRFY: &str =
        "Cannot VRFY user, but will accept message and attempt delivery";
    pub(crate) const NO_SUCH_USER: &str = "No such user here";
    pub(crate) const NO_RELAY: &str = "Relaying not permitted";
    pub(crate) const TRY_LATER: &str = "Mailbox unavailable, try again later";
    pub(crate) const LOCAL_ERROR: &str = "Local error, message not stored; try again later";
    pub(crate) const NO_STORAGE: &str = "Insufficient system storage, message not stored";
    pub(crate) const TOO_MANY_RECIPIENTS: &str = "Too many recipients";
    pub(crate) const UNRECOGNIZED: &str = "Command not recognized";
    pub(crate) const LINE_TOO_LONG: &str = "Line too long";
    pub(crate) const BARE_LF_COMMAND: &str =
        "Bare LF in command; lines must end with CRLF (RFC 5321 2.3.8)";
    pub(crate) const NOT_IMPLEMENTED: &str = "Command not implemented";
    pub(crate) const NEED_HELLO: &str = "Bad sequence of commands: send EHLO or HELO first";
    pub(crate) const NESTED_MAIL: &str = "Bad sequence of commands: sender already given";
    pub(crate) const NEED_MAIL: &str = "Bad sequence of commands: need MAIL first";
    pub(crate) const IN_TRANSACTION: &str =
        "Bad sequence of commands: mail transaction in progress";
    pub(crate) const TLS_ACTIVE: &str = "Bad sequence of commands: TLS already active";
    pub(crate) const MESSAGE_TOO_BIG: &str = "Message size exceeds fixed maximum message size";
    pub(crate) const STORAGE_EXCEEDED: &str = "Exceeded storage allocation, message not stored";
    pub(crate) const NO_VALID_RECIPIENTS: &str = "No valid recipients";
    pub(crate) const BARE_LF_DATA: &str =
        "Bare CR or LF in message; lines must end with CRLF (RFC 5321 2.3.8)";
    pub(crate) const REFUSED: &str = "Transaction failed: message refused";
    pub(crate) const AUTH_REQUIRED: &str = "5.7.0 Authentication required";
    pub(crate) const AUTH_OK: &str = "2.7.0 Authentication successful";
    pub(crate) const AUTH_FAILED: &str = "5.7.8 Authentication credentials invalid";
    pub(crate) const AUTH_NO_SENDER: &str =
        "5.7.8 This user is no person in the directory, so sends no mail";
    pub(crate) const AUTH_UNAVAILABLE: &str = "4.7.0 Temporary authentication failure";
    pub(crate) const AUTH_TOO_MANY: &str = "4.7.0 Too many failed sign-ins, closing connection";
    pub(crate) const AUTH_NEEDS_TLS: &str =
        "5.7.11 Encryption required for requested authentication mechanism";
    pub(crate) const AUTH_ALREADY: &str = "5.5.1 Already authenticated";
    pub(crate) const UNKNOWN_MECHANISM: &str = "5.5.4 Unrecognized authentication type";
    pub(crate) const AUTH_CANCELLED: &str = "5.0.0 Authentication cancelled";
    pub(crate) const AUTH_NOT_BASE64: &str = "5.5.2 Cannot decode the response (base64)";
    pub(crate) const AUTH_NOT_UTF8: &str = "5.5.2 User names and passwords must be UTF-8";
    pub(crate) const AUTH_PLAIN_FORM: &str = "5.5.2 PLAIN wants authzid NUL user NUL password";
    pub(crate) const AUTH_AS_ANOTHER: &str = "5.7.8 Submitting as another user is not allowed";
    pub(crate) const NOT_YOUR_ADDRESS: &str =
        "5.7.1 Sender address is not one of the signed-in user's addresses";
    pub(crate) const UNKNOWN_PARAMETER: &str =
        "MAIL FROM/RCPT TO parameters not recognized or not implemented";
}

#[cfg(test)]
mod tests {
    use super::*;

    fn wire(reply: &Reply) -> String {
        let mut out = Vec::new();
        reply.write_to(&mut out);
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn single_and_multiline_forms() {
        assert_eq!(wire(&Reply::new(250, "OK")), "250 OK\r\n");
        let ehlo = Reply::multiline(
            250,
            vec!["host".into(), "SIZE 10".into(), "8BITMIME".into()],
        );
        assert_eq!(wire(&ehlo), "250-host\r\n250-SIZE 10\r\n250 8BITMIME\r\n");
    }

    #[test]
    fn bad_command_codes() {
        for code in [500, 501, 502, 503, 555] {
            assert!(Reply::new(code, "x").is_bad_command());
        }
        for code in [250, 354, 421, 450, 451, 452, 550, 552, 554] {
            assert!(!Reply::new(code, "x").is_bad_command());
        }
    }
}
