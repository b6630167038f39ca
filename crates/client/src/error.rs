//! The client's one error type.
//!
//! Callers mostly need to tell apart three situations, and the variants
//! follow them:
//!
//! * the server answered the request with an error ([`ClientError::Server`]:
//!   404, 409, 413, 503, ...); the connection is fine and the next request
//!   may succeed. [`ClientError::code`] gives the code and
//!   [`ClientError::is_conflict`] recognizes the save conflict an
//!   optimistic update must handle;
//! * the connection is gone ([`ClientError::Closed`], with the reason the
//!   connection ended: every call pending at that moment and every later
//!   call fails with it), or could not be made (`Io`, `Tls`, `Timeout`,
//!   `Server` with 401 for refused credentials);
//! * the two sides disagree about the protocol (`Protocol`,
//!   `UnexpectedResponse`): a bug on one side or the other.

use protocol::{ErrorCode, ProtocolError, Response};

/// Everything a client call can fail with.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ClientError {
    /// The server answered with an error frame: for a request, that
    /// request failed and the connection stays usable; during the
    /// handshake, the server refused the connection (e.g. 401).
    #[error("server error {code}: {message}")]
    Server {
        /// The error code (HTTP-like below 1000).
        code: ErrorCode,
        /// The server's explanation.
        message: String,
    },
    /// The protocol state machine refused what was sent or received.
    #[error("protocol error: {0}")]
    Protocol(#[from] ProtocolError),
    /// A socket or file operation failed (connect failures name the
    /// address).
    #[error("I/O error: {0}")]
    Io(#[from] std::io::Error),
    /// TLS could not be set up: unreadable CA file, bad server name,
    /// failed TLS handshake.
    #[error("TLS error: {0}")]
    Tls(String),
    /// The connection is closed; the reason says why and when it was
    /// first noticed.
    #[error("connection closed: {reason}")]
    Closed {
        /// Why the connection ended.
        reason: String,
    },
    /// Connecting took longer than `ClientOptions::connect_timeout`.
    #[error("timed out connecting to the server")]
    Timeout,
    /// The server answered with a response of the wrong kind.
    #[error("unexpected response: {0}")]
    UnexpectedResponse(String),
    /// A forced network compression (`ClientOptions::with_compression`)
    /// was not agreed to: the server does not enable that method.
    #[error("the server does not enable {asked} network compression (it settled on {got}); enable it in the server's `compression` setting or connect with auto")]
    CompressionRefused {
        /// The protocol method asked for (`off`, `fast`, `strong`).
        asked: &'static str,
        /// The method the server settled on.
        got: &'static str,
    },
    /// A zstd level was asked for (`zstd:N`) and the server's Welcome did
    /// not say it sends with that level: a server from before the level,
    /// which compresses at its own.
    #[error("the server did not agree to zstd level {asked} ({}); upgrade it or connect with plain zstd", match said { Some(l) => format!("it said level {l}"), None => "it does not know levels".to_string() })]
    CompressionLevelRefused {
        /// The level asked for.
        asked: u8,
        /// The level the server said, if any.
        said: Option<u8>,
    },
}

impl ClientError {
    /// The server's error code, if the server answered with one.
    pub fn code(&self) -> Option<ErrorCode> {
        match self {
            ClientError::Server { code, .. } => Some(*code),
            _ => None,
        }
    }

    /// Whether this is a save conflict (409): the document changed since
    /// the version an update or deletion was based on.
    pub fn is_conflict(&self) -> bool {
        self.code() == Some(ErrorCode::SaveConflict)
    }

    /// An answer of the wrong kind, described briefly (a whole page of
    /// documents would make an unreadable message).
    pub(crate) fn unexpected(expected: &str, got: &Response) -> ClientError {
        const LIMIT: usize = 200;
        let mut text = format!("{got:?}");
        if text.len() > LIMIT {
            let mut end = LIMIT;
            while !text.is_char_boundary(end) {
                end -= 1;
            }
            text.truncate(end);
            text.push('…');
        }
        ClientError::UnexpectedResponse(format!("expected {expected}, got {text}"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_409_is_a_conflict_and_keeps_its_code() {
        let e = ClientError::Server {
            code: ErrorCode::SaveConflict,
            message: "changed".into(),
        };
        assert!(e.is_conflict());
        assert_eq!(e.code(), Some(ErrorCode::SaveConflict));
        assert_eq!(e.to_string(), "server error 409 (save conflict): changed");
        let closed = ClientError::Closed { reason: "x".into() };
        assert!(!closed.is_conflict() && closed.code().is_none());
    }

    #[test]
    fn unexpected_answers_are_described_briefly() {
        let big = Response::Acl {
            json: "x".repeat(10_000),
        };
        let e = ClientError::unexpected("Done", &big);
        assert!(e.to_string().len() < 300, "{e}");
        assert!(e
            .to_string()
            .starts_with("unexpected response: expected Done, got Acl"));
    }
}
