//! The SASL exchanges of submission's `AUTH` (RFC 4954): PLAIN (RFC
//! 4616) and LOGIN (the de-facto mechanism every mail program still
//! offers), each with or without an initial response.
//!
//! ```text
//!   AUTH PLAIN <b64>                      ─▶ check
//!   AUTH PLAIN        ─ 334 ─ <b64>       ─▶ check
//!   AUTH LOGIN [<b64 user>] ─ 334 Username: ─ <b64 user>
//!                           ─ 334 Password: ─ <b64 password> ─▶ check
//!   a response of "*" ─▶ 501 cancelled;  not base64 ─▶ 501
//! ```
//!
//! Only decoding lives here: whether the transport may carry a password
//! and what the credentials are worth are the session's and the
//! driver's questions.

use super::action::Credentials;
use super::reply::{text, Reply};
use base64::Engine as _;

/// `Username:` and `Password:`, base64, as LOGIN's challenges.
const ASK_USER: &str = "VXNlcm5hbWU6";
const ASK_PASSWORD: &str = "UGFzc3dvcmQ6";

/// Where an exchange is, between a challenge and its response.
#[derive(Clone, Debug)]
pub(crate) enum Exchange {
    Plain,
    LoginUser,
    LoginPassword { user: String },
}

/// What the session does next.
#[derive(Debug)]
pub(crate) enum Next {
    /// Send `334 <challenge>` and read the response into the exchange.
    Ask(Exchange, &'static str),
    /// Ask the driver about these credentials.
    Check(Credentials),
    /// Answer this and end the exchange.
    Refuse(Reply),
}

/// `AUTH mechanism [initial]`.
pub(crate) fn start(mechanism: &str, initial: Option<&str>) -> Next {
    match (mechanism, initial) {
        ("PLAIN", None) => Next::Ask(Exchange::Plain, ""),
        ("PLAIN", Some(response)) => respond(Exchange::Plain, response.as_bytes()),
        ("LOGIN", None) => Next::Ask(Exchange::LoginUser, ASK_USER),
        ("LOGIN", Some(response)) => respond(Exchange::LoginUser, response.as_bytes()),
        _ => Next::Refuse(Reply::new(504, text::UNKNOWN_MECHANISM)),
    }
}

/// The client's response line (without its CRLF) to the last challenge.
pub(crate) fn respond(exchange: Exchange, line: &[u8]) -> Next {
    if line == b"*" {
        return Next::Refuse(Reply::new(501, text::AUTH_CANCELLED));
    }
    let Some(bytes) = decode(line) else {
        return Next::Refuse(Reply::new(501, text::AUTH_NOT_BASE64));
    };
    match exchange {
        Exchange::Plain => plain(&bytes),
        Exchange::LoginUser => match String::from_utf8(bytes) {
            Ok(user) => Next::Ask(Exchange::LoginPassword { user }, ASK_PASSWORD),
            Err(_) => Next::Refuse(Reply::new(501, text::AUTH_NOT_UTF8)),
        },
        Exchange::LoginPassword { user } => match String::from_utf8(bytes) {
            Ok(password) => Next::Check(Credentials { user, password }),
            Err(_) => Next::Refuse(Reply::new(501, text::AUTH_NOT_UTF8)),
        },
    }
}

/// `=` is an empty response (RFC 4954 §4); anything else is base64.
fn decode(line: &[u8]) -> Option<Vec<u8>> {
    if line == b"=" {
        return Some(Vec::new());
    }
    base64::engine::general_purpose::STANDARD.decode(line).ok()
}

/// `[authzid] NUL authcid NUL password`. An authorization identity, if
/// given, must be the user: nobody submits as another here.
fn plain(bytes: &[u8]) -> Next {
    let parts: Vec<&[u8]> = bytes.split(|&b| b == 0).collect();
    let [authz, user, password] = parts[..] else {
        return Next::Refuse(Reply::new(501, text::AUTH_PLAIN_FORM));
    };
    let (Ok(user), Ok(password)) = (std::str::from_utf8(user), std::str::from_utf8(password))
    else {
        return Next::Refuse(Reply::new(501, text::AUTH_NOT_UTF8));
    };
    if !authz.is_empty() && authz != user.as_bytes() {
        return Next::Refuse(Reply::new(535, text::AUTH_AS_ANOTHER));
    }
    Next::Check(Credentials {
        user: user.to_string(),
        password: password.to_string(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn b64(s: &[u8]) -> String {
        base64::engine::general_purpose::STANDARD.encode(s)
    }

    fn checked(next: Next) -> Credentials {
        match next {
            Next::Check(c) => c,
            other => panic!("expected credentials, got {other:?}"),
        }
    }

    fn refused(next: Next) -> u16 {
        match next {
            Next::Refuse(r) => r.code(),
            other => panic!("expected a refusal, got {other:?}"),
        }
    }

    #[test]
    fn plain_with_and_without_an_initial_response() {
        let c = checked(start("PLAIN", Some(&b64(b"\0alice\0s3cret"))));
        assert_eq!((c.user.as_str(), c.password.as_str()), ("alice", "s3cret"));
        let Next::Ask(exchange, "") = start("PLAIN", None) else {
            panic!("PLAIN asks with an empty challenge")
        };
        let c = checked(respond(exchange, b64(b"alice\0alice\0pw").as_bytes()));
        assert_eq!(c.user, "alice");
    }

    #[test]
    fn login_asks_for_the_user_then_the_password() {
        let Next::Ask(exchange, ASK_USER) = start("LOGIN", None) else {
            panic!("LOGIN asks for the user first")
        };
        let Next::Ask(exchange, ASK_PASSWORD) = respond(exchange, b64(b"bob").as_bytes()) else {
            panic!("then for the password")
        };
        let c = checked(respond(exchange, b64(b"pw").as_bytes()));
        assert_eq!((c.user.as_str(), c.password.as_str()), ("bob", "pw"));
        let Next::Ask(_, ASK_PASSWORD) = start("LOGIN", Some(&b64(b"bob"))) else {
            panic!("an initial response is the user")
        };
    }

    #[test]
    fn bad_responses_are_refused() {
        assert_eq!(refused(start("CRAM-MD5", None)), 504);
        assert_eq!(refused(start("PLAIN", Some("not base64!"))), 501);
        assert_eq!(refused(start("PLAIN", Some(&b64(b"alice\0pw")))), 501);
        assert_eq!(refused(start("PLAIN", Some(&b64(b"bob\0alice\0pw")))), 535);
        assert_eq!(refused(start("PLAIN", Some(&b64(b"\0\xff\0pw")))), 501);
        assert_eq!(refused(respond(Exchange::LoginUser, b"*")), 501);
        assert_eq!(refused(start("PLAIN", Some("="))), 501);
    }
}
