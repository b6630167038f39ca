//! `multipart/form-data` (RFC 7578) bodies, read whole: the parts of a
//! `POST /mail/send` that carries files.
//!
//! The body is already in memory, within the send's size limit
//! (`read_body`), so parsing is slicing: find each delimiter
//! (`CRLF--boundary`), read the part's headers up to the blank line, and
//! keep its content as a cheap slice of the body. Only what a form sends
//! is understood: `Content-Disposition: form-data; name="…"[;
//! filename="…"]` and `Content-Type`. Anything malformed — no boundary,
//! a part without a name, a missing closing delimiter, a header that is
//! not one — is a 400 naming the problem, never a panic.

use super::answer::{bad, ApiError};
use bytes::Bytes;

/// Most parts one body may have.
const MAX_PARTS: usize = 200;
/// Longest header block of one part.
const MAX_PART_HEADERS: usize = 8 << 10;

/// One part of a form.
#[derive(Debug)]
pub(super) struct Part {
    /// The form field's name.
    pub(super) name: String,
    /// The file's name, for a file.
    pub(super) filename: Option<String>,
    /// The part's `Content-Type`, if given.
    pub(super) content_type: Option<String>,
    pub(super) data: Bytes,
}

/// The boundary of a `multipart/form-data` content type, or `None` if
/// the type is another.
pub(super) fn boundary(content_type: &str) -> Result<Option<String>, ApiError> {
    let mut params = content_type.split(';');
    let kind = params.next().unwrap_or("").trim();
    if !kind.eq_ignore_ascii_case("multipart/form-data") {
        return Ok(None);
    }
    let b = params
        .filter_map(|p| p.split_once('='))
        .find(|(k, _)| k.trim().eq_ignore_ascii_case("boundary"))
        .map(|(_, v)| v.trim().trim_matches('"').to_string())
        .ok_or_else(|| bad("multipart/form-data needs a boundary parameter"))?;
    if b.is_empty() || b.len() > 70 {
        return Err(bad("a multipart boundary is 1 to 70 characters"));
    }
    Ok(Some(b))
}

/// The parts of `body`, delimited by `boundary`.
pub(super) fn parse(body: &Bytes, boundary: &str) -> Result<Vec<Part>, ApiError> {
    let delimiter = format!("\r\n--{boundary}");
    let finder = memchr::memmem::Finder::new(delimiter.as_bytes());
    // The first delimiter may open the body without the CRLF before it.
    let mut at = if body.starts_with(&delimiter.as_bytes()[2..]) {
        delimiter.len() - 2
    } else {
        let start = finder
            .find(body)
            .ok_or_else(|| bad("the multipart body has no delimiter"))?;
        start + delimiter.len()
    };
    let mut parts = Vec::new();
    loop {
        let rest = &body[at..];
        if rest.starts_with(b"--") {
            return Ok(parts);
        }
        let after_line =
            skip_line_end(rest).ok_or_else(|| bad("a multipart delimiter must end its line"))?;
        let start = at + after_line;
        let len = finder
            .find(&body[start..])
            .ok_or_else(|| bad("the multipart body ends without its closing delimiter"))?;
        if parts.len() == MAX_PARTS {
            return Err(bad(format!("more than {MAX_PARTS} parts")));
        }
        parts.push(part(body.slice(start..start + len))?);
        at = start + len + delimiter.len();
    }
}

/// Past the rest of a delimiter line (transport padding, then CRLF).
fn skip_line_end(rest: &[u8]) -> Option<usize> {
    let end = memchr::memmem::find(rest, b"\r\n")?;
    rest[..end]
        .iter()
        .all(|b| *b == b' ' || *b == b'\t')
        .then_some(end + 2)
}

/// One part: its headers, a blank line, its content.
fn part(raw: Bytes) -> Result<Part, ApiError> {
    let (head_len, body_start) = if raw.starts_with(b"\r\n") {
        (0, 2)
    } else {
        let end = memchr::memmem::find(&raw, b"\r\n\r\n")
            .ok_or_else(|| bad("a multipart part has no blank line after its headers"))?;
        (end, end + 4)
    };
    if head_len > MAX_PART_HEADERS {
        return Err(bad("a multipart part's headers are too long"));
    }
    let head = std::str::from_utf8(&raw[..head_len])
        .map_err(|_| bad("a multipart part's headers are not UTF-8"))?;
    let (mut disposition, mut content_type) = (None, None);
    for line in head.split("\r\n").filter(|l| !l.is_empty()) {
        let (name, value) = line
            .split_once(':')
            .ok_or_else(|| bad(format!("{:?} is not a header", clip(line))))?;
        if name.trim().eq_ignore_ascii_case("content-disposition") {
            disposition = Some(value.trim().to_string());
        } else if name.trim().eq_ignore_ascii_case("content-type") {
            content_type = Some(value.trim().to_string());
        }
    }
    let disposition =
        disposition.ok_or_else(|| bad("a multipart part has no Content-Disposition"))?;
    let mut params = disposition.split(';');
    if !params
        .next()
        .unwrap_or("")
        .trim()
        .eq_ignore_ascii_case("form-data")
    {
        return Err(bad("a part's Content-Disposition must be form-data"));
    }
    let (mut name, mut filename) = (None, None);
    for p in params {
        let Some((k, v)) = p.split_once('=') else {
            continue;
        };
        let v = v.trim().trim_matches('"').to_string();
        match k.trim().to_ascii_lowercase().as_str() {
            "name" => name = Some(v),
            "filename" => filename = Some(v),
            _ => {}
        }
    }
    Ok(Part {
        name: name.ok_or_else(|| bad("a multipart part has no name"))?,
        filename,
        content_type,
        data: raw.slice(body_start..),
    })
}

fn clip(s: &str) -> String {
    s.chars().take(60).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn body(s: &str) -> Bytes {
        Bytes::from(s.replace('\n', "\r\n"))
    }

    #[test]
    fn fields_and_files_come_out_whole() {
        let b = body(
            "preamble\n--XY\nContent-Disposition: form-data; name=\"message\"\n\n{\"to\":\"bob\"}\n\
             --XY\nContent-Disposition: form-data; name=\"attachment\"; filename=\"a.txt\"\n\
             Content-Type: text/plain\n\nline one\nline two\n--XY--\n",
        );
        let parts = parse(&b, "XY").unwrap();
        assert_eq!(parts.len(), 2);
        assert_eq!(parts[0].name, "message");
        assert_eq!(&parts[0].data[..], b"{\"to\":\"bob\"}");
        assert_eq!(parts[1].filename.as_deref(), Some("a.txt"));
        assert_eq!(parts[1].content_type.as_deref(), Some("text/plain"));
        assert_eq!(&parts[1].data[..], b"line one\r\nline two");
        assert_eq!(
            boundary("multipart/form-data; boundary=\"XY\"").unwrap(),
            Some("XY".into())
        );
        assert_eq!(boundary("application/json").unwrap(), None);
    }

    #[test]
    fn malformed_bodies_are_refused_not_panicked_on() {
        for b in [
            "",
            "--XY",
            "--XY\n",
            "--XY\nContent-Disposition: form-data; name=\"a\"\n\nno end",
            "--XY\nContent-Disposition: form-data\n\nx\n--XY--",
            "--XY\nnot a header\n\nx\n--XY--",
            "--XY\nContent-Disposition: attachment; name=\"a\"\n\nx\n--XY--",
            "--XYgarbage\n\nx\n--XY--",
        ] {
            assert!(parse(&body(b), "XY").is_err(), "{b:?}");
        }
        assert!(boundary("multipart/form-data").is_err());
    }

    proptest::proptest! {
        #[test]
        fn any_bytes_parse_or_are_refused(raw in proptest::collection::vec(proptest::num::u8::ANY, 0..300)) {
            let _ = parse(&Bytes::from(raw), "XY");
        }
    }
}
