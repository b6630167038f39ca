//! Envelope addresses: the paths of `MAIL FROM:` and `RCPT TO:`.
//!
//! RFC 5321 §4.1.2 grammar, ASCII only (SMTPUTF8 is not offered):
//!
//! ```text
//!   Path      = "<" [ A-d-l ":" ] Mailbox ">"     source route accepted, ignored
//!   Mailbox   = Local-part "@" ( Domain / address-literal )
//!   Local-part = Dot-string / Quoted-string        at most 64 octets
//!   Domain    = sub-domain *("." sub-domain)       at most 255 octets
//! ```
//!
//! plus `<>` (the null reverse-path of bounces, MAIL only) and
//! `<Postmaster>` (RCPT only, which every server must accept without a
//! domain). A parsed address holds only characters the grammar allows,
//! so it can never carry a CR, LF or control byte into a reply, a log
//! line or a document.

use std::fmt;

const MAX_LOCAL_PART: usize = 64;
const MAX_DOMAIN: usize = 255;
const MAX_PATH: usize = 256;

/// `local-part@domain`, as the client wrote it (a quoted local part keeps
/// its quotes; case is kept: only the directory knows what is equal).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Mailbox {
    local: String,
    domain: String,
}

impl Mailbox {
    /// The part before the `@` (with its quotes, if it was quoted).
    pub fn local_part(&self) -> &str {
        &self.local
    }

    /// The part after the `@`: a domain name or an address literal
    /// (`[192.0.2.1]`).
    pub fn domain(&self) -> &str {
        &self.domain
    }

    /// Parses a bare mailbox (`user@example.com`), as written inside the
    /// angle brackets of a path.
    pub fn parse(text: &str) -> Result<Mailbox, PathError> {
        let at = local_part_end(text)?;
        let (local, domain) = (&text[..at], &text[at + 1..]);
        if local.len() > MAX_LOCAL_PART {
            return Err(PathError("local part longer than 64 characters"));
        }
        check_domain_or_literal(domain)?;
        Ok(Mailbox {
            local: local.to_string(),
            domain: domain.to_string(),
        })
    }
}

impl fmt::Display for Mailbox {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}@{}", self.local, self.domain)
    }
}

/// Who a `RCPT TO:` names.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Recipient {
    /// `<Postmaster>` with no domain (RFC 5321 §4.1.1.3): this server's
    /// postmaster.
    Postmaster,
    /// Any other mailbox.
    Mailbox(Mailbox),
}

impl fmt::Display for Recipient {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Recipient::Postmaster => f.write_str("Postmaster"),
            Recipient::Mailbox(mailbox) => mailbox.fmt(f),
        }
    }
}

/// Why a path could not be read; the text goes into a 501 reply.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PathError(pub &'static str);

impl fmt::Display for PathError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.0)
    }
}

/// Splits `<path> rest` into the text inside the brackets and what
/// follows (the ESMTP parameters).
fn split_path(arg: &str) -> Result<(&str, &str), PathError> {
    let Some(inner) = arg.strip_prefix('<') else {
        return Err(PathError("address must be in angle brackets"));
    };
    let close = closing_bracket(inner)?;
    if close + 2 > MAX_PATH {
        return Err(PathError("path longer than 256 characters"));
    }
    let rest = &inner[close + 1..];
    if !(rest.is_empty() || rest.starts_with(' ')) {
        return Err(PathError("text after the closing angle bracket"));
    }
    Ok((&inner[..close], rest.trim_start_matches(' ')))
}

/// The position of the `>` that closes the path, skipping quoted strings
/// (a quoted local part may hold a `>`).
fn closing_bracket(inner: &str) -> Result<usize, PathError> {
    let bytes = inner.as_bytes();
    let mut quoted = false;
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'\\' if quoted => i += 1,
            b'"' => quoted = !quoted,
            b'>' if !quoted => return Ok(i),
            _ => {}
        }
        i += 1;
    }
    Err(PathError("missing closing angle bracket"))
}

/// Drops a source route (`@a,@b:`), which RFC 5321 §4.1.1.3 says to
/// accept and ignore, after checking its syntax.
fn strip_source_route(path: &str) -> Result<&str, PathError> {
    if !path.starts_with('@') {
        return Ok(path);
    }
    let Some(colon) = path.find(':') else {
        return Err(PathError("source route without a colon"));
    };
    for hop in path[..colon].split(',') {
        let Some(domain) = hop.strip_prefix('@') else {
            return Err(PathError("malformed source route"));
        };
        check_domain(domain)?;
    }
    Ok(&path[colon + 1..])
}

/// Parses the argument of `MAIL FROM:`: the reverse-path (`None` for the
/// null path `<>`) and the parameter text after it.
pub(crate) fn parse_reverse_path(arg: &str) -> Result<(Option<Mailbox>, &str), PathError> {
    let (path, rest) = split_path(arg)?;
    if path.is_empty() {
        return Ok((None, rest));
    }
    let mailbox = Mailbox::parse(strip_source_route(path)?)?;
    Ok((Some(mailbox), rest))
}

/// Parses the argument of `RCPT TO:`: the forward-path and the parameter
/// text after it.
pub(crate) fn parse_forward_path(arg: &str) -> Result<(Recipient, &str), PathError> {
    let (path, rest) = split_path(arg)?;
    if path.is_empty() {
        return Err(PathError("the null path <> is not a recipient"));
    }
    if path.eq_ignore_ascii_case("postmaster") {
        return Ok((Recipient::Postmaster, rest));
    }
    let mailbox = Mailbox::parse(strip_source_route(path)?)?;
    Ok((Recipient::Mailbox(mailbox), rest))
}

/// Checks the local part at the start of `text` and returns the position
/// of the `@` that ends it.
fn local_part_end(text: &str) -> Result<usize, PathError> {
    let bytes = text.as_bytes();
    if bytes.first() == Some(&b'"') {
        let mut i = 1;
        while i < bytes.len() {
            match bytes[i] {
                b'\\' => {
                    if !matches!(bytes.get(i + 1), Some(32..=126)) {
                        return Err(PathError("bad quoted pair in local part"));
                    }
                    i += 2;
                }
                b'"' => {
                    return match bytes.get(i + 1) {
                        Some(b'@') if i > 1 => Ok(i + 1),
                        Some(b'@') => Err(PathError("empty local part")),
                        _ => Err(PathError("missing @ after the quoted local part")),
                    };
                }
                32..=126 => i += 1,
                _ => return Err(PathError("bad character in quoted local part")),
            }
        }
        return Err(PathError("unterminated quoted local part"));
    }
    let Some(at) = text.rfind('@') else {
        return Err(PathError("missing @ in address"));
    };
    let local = &text[..at];
    if local.is_empty() {
        return Err(PathError("empty local part"));
    }
    if !local.split('.').all(is_atom) {
        return Err(PathError("bad character in local part"));
    }
    Ok(at)
}

fn is_atom(atom: &str) -> bool {
    !atom.is_empty() && atom.bytes().all(is_atext)
}

/// RFC 5322 atext.
fn is_atext(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b"!#$%&'*+-/=?^_`{|}~".contains(&b)
}

fn check_domain_or_literal(domain: &str) -> Result<(), PathError> {
    if let Some(literal) = domain.strip_prefix('[') {
        let Some(inner) = literal.strip_suffix(']') else {
            return Err(PathError("unterminated address literal"));
        };
        // dcontent of RFC 5321 §4.1.3's General-address-literal.
        let ok = !inner.is_empty() && inner.bytes().all(|b| matches!(b, 33..=90 | 94..=126));
        if !ok || domain.len() > MAX_DOMAIN {
            return Err(PathError("malformed address literal"));
        }
        return Ok(());
    }
    check_domain(domain)
}

/// RFC 5321 Domain: dot-separated labels of letters, digits and inner
/// hyphens.
fn check_domain(domain: &str) -> Result<(), PathError> {
    if domain.is_empty() {
        return Err(PathError("empty domain"));
    }
    if domain.len() > MAX_DOMAIN {
        return Err(PathError("domain longer than 255 characters"));
    }
    let label_ok = |label: &str| {
        let b = label.as_bytes();
        !b.is_empty()
            && b[0].is_ascii_alphanumeric()
            && b[b.len() - 1].is_ascii_alphanumeric()
            && b.iter().all(|&c| c.is_ascii_alphanumeric() || c == b'-')
    };
    if domain.split('.').all(label_ok) {
        Ok(())
    } else {
        Err(PathError("malformed domain"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mailbox(text: &str) -> Mailbox {
        Mailbox::parse(text).unwrap()
    }

    #[test]
    fn reverse_paths() {
        assert_eq!(parse_reverse_path("<>").unwrap(), (None, ""));
        let (sender, rest) = parse_reverse_path("<a.b@example.com> SIZE=10").unwrap();
        assert_eq!(sender, Some(mailbox("a.b@example.com")));
        assert_eq!(rest, "SIZE=10");
        let (sender, _) = parse_reverse_path("<@relay.org,@other.net:joe@example.com>").unwrap();
        assert_eq!(sender.unwrap().to_string(), "joe@example.com");
    }

    #[test]
    fn forward_paths() {
        assert_eq!(
            parse_forward_path("<postMaster>").unwrap(),
            (Recipient::Postmaster, "")
        );
        let (rcpt, _) = parse_forward_path("<Postmaster@example.com>").unwrap();
        assert_eq!(rcpt, Recipient::Mailbox(mailbox("Postmaster@example.com")));
        assert!(parse_forward_path("<>").is_err());
    }

    #[test]
    fn quoted_local_parts_and_literals() {
        let m = mailbox("\"john smith>\"@[192.0.2.1]");
        assert_eq!(m.local_part(), "\"john smith>\"");
        assert_eq!(m.domain(), "[192.0.2.1]");
        let (rcpt, rest) = parse_forward_path("<\"a>b\"@example.com> X=1").unwrap();
        assert_eq!(rcpt.to_string(), "\"a>b\"@example.com");
        assert_eq!(rest, "X=1");
    }

    #[test]
    fn malformed_paths_are_refused() {
        for bad in [
            "joe@example.com",
            "<joe@example.com",
            "<joe@example.com>junk",
            "<joe>",
            "<@example.com>",
            "<joe@>",
            "<joe@-example.com>",
            "<joe@exa mple.com>",
            "<jo..e@example.com>",
            "<.joe@example.com>",
            "<jo\"e@example.com>",
            "<\"joe@example.com>",
            "<\"\"@example.com>",
            "<joe@[]>",
            "<@relay.org joe@example.com>",
        ] {
            assert!(parse_reverse_path(bad).is_err(), "{bad}");
        }
        let long_local = format!("<{}@example.com>", "a".repeat(65));
        assert!(parse_reverse_path(&long_local).is_err());
        let long_path = format!("<a@{}.com>", "b".repeat(300));
        assert!(parse_reverse_path(&long_path).is_err());
    }
}
