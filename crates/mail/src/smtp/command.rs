//! One command line, read into a typed command.
//!
//! Parsing knows nothing of the session's state: whether a command is
//! allowed now is the session's question (503), whether it can be read at
//! all is this file's (500 for an unknown verb, 501 for bad arguments,
//! 555 for an ESMTP parameter this server does not implement). Verbs and
//! parameter names are case-insensitive. The session has already
//! removed the CRLF and checked the line's length.

use super::address::{parse_forward_path, parse_reverse_path, Mailbox, Recipient};

/// The body type a client declared with `BODY=` (RFC 6152).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum BodyType {
    /// No `BODY=`, or `BODY=7BIT`.
    #[default]
    SevenBit,
    /// `BODY=8BITMIME`.
    EightBitMime,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Command {
    Ehlo(String),
    Helo(String),
    Mail {
        sender: Option<Mailbox>,
        size: Option<u64>,
        body: BodyType,
    },
    Rcpt(Recipient),
    Data,
    Rset,
    Noop,
    Quit,
    StartTls,
    Vrfy,
    Expn,
    Help,
    /// `AUTH mechanism [initial-response]` (RFC 4954 §4); the mechanism
    /// in capitals, the response as sent (base64, or `=` for empty).
    Auth {
        mechanism: String,
        initial: Option<String>,
    },
}

/// Why a line is not a command the session can act on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum CommandError {
    /// 500: not a verb this server knows (or not text at all).
    Unrecognized,
    /// 501: a known verb with arguments that do not parse.
    Syntax(&'static str),
    /// 555: a MAIL or RCPT parameter this server does not implement.
    UnknownParameter,
}

/// Parses one command line (without its CRLF).
pub(crate) fn parse(line: &[u8]) -> Result<Command, CommandError> {
    let (verb, arg) = match line.iter().position(|&b| b == b' ') {
        Some(space) => (&line[..space], &line[space + 1..]),
        None => (line, &b""[..]),
    };
    if !verb.iter().all(u8::is_ascii_alphabetic) {
        return Err(CommandError::Unrecognized);
    }
    let verb = std::str::from_utf8(verb)
        .map_err(|_| CommandError::Unrecognized)?
        .to_ascii_uppercase();
    if !arg.iter().all(|b| matches!(b, 32..=126)) {
        return Err(CommandError::Syntax(
            "non-ASCII or control characters (SMTPUTF8 is not offered)",
        ));
    }
    let arg = std::str::from_utf8(arg)
        .map_err(|_| CommandError::Unrecognized)?
        .trim_matches(' ');
    match verb.as_str() {
        "EHLO" => Ok(Command::Ehlo(client_domain(arg)?)),
        "HELO" => Ok(Command::Helo(client_domain(arg)?)),
        "MAIL" => parse_mail(arg),
        "RCPT" => parse_rcpt(arg),
        "DATA" => no_argument(arg, Command::Data),
        "RSET" => no_argument(arg, Command::Rset),
        "QUIT" => no_argument(arg, Command::Quit),
        "STARTTLS" => no_argument(arg, Command::StartTls),
        "NOOP" => Ok(Command::Noop),
        "HELP" => Ok(Command::Help),
        "EXPN" => Ok(Command::Expn),
        "VRFY" if arg.is_empty() => Err(CommandError::Syntax("VRFY needs an argument")),
        "VRFY" => Ok(Command::Vrfy),
        "AUTH" => parse_auth(arg),
        _ => Err(CommandError::Unrecognized),
    }
}

fn parse_auth(arg: &str) -> Result<Command, CommandError> {
    let mut words = arg.split(' ').filter(|w| !w.is_empty());
    let Some(mechanism) = words.next() else {
        return Err(CommandError::Syntax("AUTH needs a mechanism"));
    };
    let initial = words.next().map(str::to_string);
    if words.next().is_some() {
        return Err(CommandError::Syntax(
            "AUTH takes a mechanism and one response",
        ));
    }
    Ok(Command::Auth {
        mechanism: mechanism.to_ascii_uppercase(),
        initial,
    })
}

fn no_argument(arg: &str, command: Command) -> Result<Command, CommandError> {
    if arg.is_empty() {
        Ok(command)
    } else {
        Err(CommandError::Syntax("this command takes no argument"))
    }
}

/// The EHLO/HELO argument: a domain or an address literal. Clients in the
/// wild send names with underscores and worse, so anything printable in
/// one word is taken; only its absence is an error (RFC 5321 §4.1.1.1).
fn client_domain(arg: &str) -> Result<String, CommandError> {
    match arg.split(' ').next() {
        Some(word) if !word.is_empty() => Ok(word.to_string()),
        _ => Err(CommandError::Syntax("EHLO and HELO need a domain")),
    }
}

/// `FROM:` then the path; one space after the colon is tolerated, as
/// many clients send it.
fn after_keyword<'a>(arg: &'a str, keyword: &str) -> Result<&'a str, CommandError> {
    let head = arg.get(..keyword.len()).unwrap_or("");
    if !head.eq_ignore_ascii_case(keyword) {
        return Err(CommandError::Syntax(if keyword == "FROM:" {
            "expected MAIL FROM:<address>"
        } else {
            "expected RCPT TO:<address>"
        }));
    }
    Ok(arg[keyword.len()..].trim_start_matches(' '))
}

fn parse_mail(arg: &str) -> Result<Command, CommandError> {
    let path = after_keyword(arg, "FROM:")?;
    let (sender, params) = parse_reverse_path(path).map_err(|e| CommandError::Syntax(e.0))?;
    let mut size = None;
    let mut body = None;
    for param in params.split(' ').filter(|p| !p.is_empty()) {
        let (key, value) = param.split_once('=').unwrap_or((param, ""));
        if key.eq_ignore_ascii_case("SIZE") {
            if size.is_some() {
                return Err(CommandError::Syntax("SIZE given twice"));
            }
            size = Some(parse_size(value)?);
        } else if key.eq_ignore_ascii_case("BODY") {
            if body.is_some() {
                return Err(CommandError::Syntax("BODY given twice"));
            }
            body = Some(parse_body(value)?);
        } else {
            return Err(CommandError::UnknownParameter);
        }
    }
    Ok(Command::Mail {
        sender,
        size,
        body: body.unwrap_or_default(),
    })
}

/// RFC 1870: `SIZE=` 1 to 20 digits. A value too large for a u64 is
/// larger than any limit, so it saturates rather than failing.
fn parse_size(value: &str) -> Result<u64, CommandError> {
    if value.is_empty() || value.len() > 20 || !value.bytes().all(|b| b.is_ascii_digit()) {
        return Err(CommandError::Syntax("SIZE must be a number of bytes"));
    }
    Ok(value.bytes().fold(0u64, |n, d| {
        n.saturating_mul(10).saturating_add(u64::from(d - b'0'))
    }))
}

fn parse_body(value: &str) -> Result<BodyType, CommandError> {
    if value.eq_ignore_ascii_case("7BIT") {
        Ok(BodyType::SevenBit)
    } else if value.eq_ignore_ascii_case("8BITMIME") {
        Ok(BodyType::EightBitMime)
    } else {
        Err(CommandError::Syntax("BODY must be 7BIT or 8BITMIME"))
    }
}

fn parse_rcpt(arg: &str) -> Result<Command, CommandError> {
    let path = after_keyword(arg, "TO:")?;
    let (recipient, params) = parse_forward_path(path).map_err(|e| CommandError::Syntax(e.0))?;
    if !params.is_empty() {
        return Err(CommandError::UnknownParameter);
    }
    Ok(Command::Rcpt(recipient))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ok(line: &str) -> Command {
        parse(line.as_bytes()).unwrap()
    }

    fn err(line: &[u8]) -> CommandError {
        parse(line).unwrap_err()
    }

    #[test]
    fn verbs_are_case_insensitive() {
        assert_eq!(
            ok("ehlo client.example"),
            Command::Ehlo("client.example".into())
        );
        assert_eq!(ok("HeLo x"), Command::Helo("x".into()));
        assert_eq!(ok("dAtA"), Command::Data);
        assert_eq!(ok("StartTLS"), Command::StartTls);
        assert_eq!(ok("noop anything at all"), Command::Noop);
    }

    #[test]
    fn ehlo_takes_any_printable_word() {
        assert_eq!(ok("EHLO my_pc"), Command::Ehlo("my_pc".into()));
        assert_eq!(ok("EHLO [127.0.0.1]"), Command::Ehlo("[127.0.0.1]".into()));
        assert_eq!(
            err(b"EHLO"),
            CommandError::Syntax("EHLO and HELO need a domain")
        );
        assert_eq!(
            err(b"HELO   "),
            CommandError::Syntax("EHLO and HELO need a domain")
        );
    }

    #[test]
    fn mail_with_parameters() {
        let sender = Mailbox::parse("a@b.example").ok();
        assert_eq!(
            ok("MAIL FROM:<a@b.example> size=1000 BODY=8bitmime"),
            Command::Mail {
                sender: sender.clone(),
                size: Some(1000),
                body: BodyType::EightBitMime
            }
        );
        assert_eq!(
            ok("mail from: <a@b.example>"),
            Command::Mail {
                sender,
                size: None,
                body: BodyType::SevenBit
            }
        );
        assert_eq!(
            ok("MAIL FROM:<> SIZE=99999999999999999999"),
            Command::Mail {
                sender: None,
                size: Some(u64::MAX),
                body: BodyType::SevenBit
            }
        );
    }

    #[test]
    fn bad_mail_and_rcpt_arguments() {
        assert!(matches!(err(b"MAIL <a@b.c>"), CommandError::Syntax(_)));
        assert!(matches!(err(b"MAIL FROM:a@b.c"), CommandError::Syntax(_)));
        assert!(matches!(
            err(b"MAIL FROM:<a@b.c> SIZE=x"),
            CommandError::Syntax(_)
        ));
        assert!(matches!(
            err(b"MAIL FROM:<a@b.c> SIZE=1 SIZE=2"),
            CommandError::Syntax(_)
        ));
        assert!(matches!(
            err(b"MAIL FROM:<a@b.c> BODY=BINARYMIME"),
            CommandError::Syntax(_)
        ));
        assert_eq!(
            err(b"MAIL FROM:<a@b.c> SMTPUTF8"),
            CommandError::UnknownParameter
        );
        assert_eq!(
            err(b"RCPT TO:<a@b.c> NOTIFY=NEVER"),
            CommandError::UnknownParameter
        );
        assert!(matches!(err(b"RCPT FROM:<a@b.c>"), CommandError::Syntax(_)));
        assert!(matches!(err(b"RCPT TO:<>"), CommandError::Syntax(_)));
    }

    #[test]
    fn arguments_where_none_belong() {
        for line in [&b"DATA now"[..], b"RSET x", b"QUIT please", b"STARTTLS x"] {
            assert!(matches!(err(line), CommandError::Syntax(_)), "{line:?}");
        }
        assert!(matches!(err(b"VRFY"), CommandError::Syntax(_)));
    }

    #[test]
    fn auth_takes_a_mechanism_and_maybe_a_response() {
        assert_eq!(
            ok("auth plain AGEAYg=="),
            Command::Auth {
                mechanism: "PLAIN".into(),
                initial: Some("AGEAYg==".into())
            }
        );
        assert_eq!(
            ok("AUTH Login"),
            Command::Auth {
                mechanism: "LOGIN".into(),
                initial: None
            }
        );
        assert!(matches!(err(b"AUTH"), CommandError::Syntax(_)));
        assert!(matches!(err(b"AUTH PLAIN a b"), CommandError::Syntax(_)));
    }

    #[test]
    fn unknown_verbs_and_bytes() {
        assert_eq!(err(b"FOO"), CommandError::Unrecognized);
        assert_eq!(err(b""), CommandError::Unrecognized);
        assert_eq!(err(b"\xffHLO x"), CommandError::Unrecognized);
        assert_eq!(err(b"MA1L FROM:<>"), CommandError::Unrecognized);
        assert!(matches!(
            err(b"RCPT TO:<j\xc3\xb6@b.c>"),
            CommandError::Syntax(_)
        ));
        assert!(matches!(err(b"NOOP \x00"), CommandError::Syntax(_)));
    }
}
