//! MIME for a document that did not arrive as MIME (a memo sent through
//! Folio's own API, a draft, a router notice): RFC 5322 headers from its
//! items, the body as UTF-8 text, each attachment as a base64 part.
//!
//! The output is a pure function of the document (the date is
//! `PostedDate` or the creation time, the boundary comes from the UNID),
//! so RFC822.SIZE and every FETCH of the same version agree byte for
//! byte, and a message the outbound queue sends is what IMAP serves. Mail that came by SMTP is never rendered: its original bytes
//! are served (`mailfile.rs`).

use base64::Engine as _;
use nsf::{ItemValue, Note, Timestamp};

/// The message for `note`; `attachment` reads an attachment's content
/// by name.
pub fn render(
    note: &Note,
    unid: &str,
    attachment: &mut dyn FnMut(&str) -> Option<Vec<u8>>,
) -> Vec<u8> {
    let text = |name: &str| -> String {
        match note.item(name).map(|i| &i.value) {
            Some(ItemValue::Text(s)) | Some(ItemValue::RichText(s)) => s.clone(),
            Some(ItemValue::TextList(l)) => l.join(", "),
            _ => String::new(),
        }
    };
    let when = match note.item("PostedDate").map(|i| &i.value) {
        Some(ItemValue::DateTime(t)) => *t,
        _ => note.created,
    };
    let mut out = String::new();
    header(&mut out, "Date", &rfc5322_date(when));
    for (field, item) in [("From", "From"), ("To", "SendTo"), ("Cc", "CopyTo")] {
        let v = text(item);
        if !v.is_empty() {
            header(&mut out, field, &encode_words(&v));
        }
    }
    header(&mut out, "Subject", &encode_words(&text("Subject")));
    let id = text("MessageID");
    if !id.is_empty() {
        header(
            &mut out,
            "Message-ID",
            &format!("<{}>", id.trim_matches(['<', '>'])),
        );
    }
    header(&mut out, "MIME-Version", "1.0");
    let body = text("Body");
    let files: Vec<(String, String)> = note
        .attachments()
        .map(|a| (a.name.clone(), a.mime.clone()))
        .collect();
    let mut bytes;
    if files.is_empty() {
        text_part_headers(&mut out);
        out.push_str("\r\n");
        bytes = out.into_bytes();
        bytes.extend(base64_lines(body.as_bytes()));
    } else {
        let boundary = format!("folio-{unid}");
        header(
            &mut out,
            "Content-Type",
            &format!("multipart/mixed; boundary=\"{boundary}\""),
        );
        out.push_str("\r\n");
        out.push_str(&format!("--{boundary}\r\n"));
        text_part_headers(&mut out);
        out.push_str("\r\n");
        bytes = out.into_bytes();
        bytes.extend(base64_lines(body.as_bytes()));
        for (name, mime) in files {
            let content = attachment(&name).unwrap_or_default();
            let safe = name.replace(['"', '\\'], "_");
            let part = format!(
                "--{boundary}\r\nContent-Type: {mime}; name=\"{safe}\"\r\n\
                 Content-Disposition: attachment; filename=\"{safe}\"\r\n\
                 Content-Transfer-Encoding: base64\r\n\r\n"
            );
            bytes.extend(part.into_bytes());
            bytes.extend(base64_lines(&content));
        }
        bytes.extend(format!("--{boundary}--\r\n").into_bytes());
    }
    bytes
}

/// `message` (as [`render`] made it) with the sender's `address` added
/// to its `From:` when that names no address (a person's full name, as
/// the items hold it): what leaves the server must say where replies go
/// (RFC 5322 §3.6.2). A name with specials is quoted; an encoded word is
/// kept as it is. A `From:` that has an `@` already, or none, is left.
pub fn with_sender_address(message: Vec<u8>, address: &str) -> Vec<u8> {
    let end = message
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .unwrap_or(message.len());
    let head = &message[..end];
    let mut at = 0;
    while at < head.len() {
        let line_end = head[at..]
            .windows(2)
            .position(|w| w == b"\r\n")
            .map_or(head.len(), |p| at + p);
        let line = &head[at..line_end];
        if let Some(name) = line.strip_prefix(b"From: ") {
            if name.contains(&b'@') {
                return message;
            }
            let name = String::from_utf8_lossy(name).into_owned();
            let specials = |c: char| "()<>[]:;@\\,.\"".contains(c);
            let phrase = if !name.starts_with("=?") && name.contains(specials) {
                format!("\"{}\"", name.replace('\\', "\\\\").replace('"', "\\\""))
            } else {
                name
            };
            let mut out = message[..at].to_vec();
            out.extend_from_slice(format!("From: {phrase} <{address}>").as_bytes());
            out.extend_from_slice(&message[line_end..]);
            return out;
        }
        at = line_end + 2;
    }
    message
}

fn header(out: &mut String, name: &str, value: &str) {
    let value: String = value
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    out.push_str(name);
    out.push_str(": ");
    out.push_str(&value);
    out.push_str("\r\n");
}

fn text_part_headers(out: &mut String) {
    header(out, "Content-Type", "text/plain; charset=utf-8");
    header(out, "Content-Transfer-Encoding", "base64");
}

/// Base64 in lines of 76 characters, each ended with CRLF.
fn base64_lines(bytes: &[u8]) -> Vec<u8> {
    let b64 = base64::engine::general_purpose::STANDARD.encode(bytes);
    let mut out = Vec::with_capacity(b64.len() + b64.len() / 38 + 2);
    for chunk in b64.as_bytes().chunks(76) {
        out.extend_from_slice(chunk);
        out.extend_from_slice(b"\r\n");
    }
    out
}

/// Non-ASCII text as one RFC 2047 encoded word (base64, UTF-8).
fn encode_words(s: &str) -> String {
    if s.is_ascii() {
        return s.to_string();
    }
    let b64 = base64::engine::general_purpose::STANDARD.encode(s.as_bytes());
    format!("=?utf-8?B?{b64}?=")
}

fn rfc5322_date(t: Timestamp) -> String {
    chrono::DateTime::<chrono::Utc>::from_timestamp_micros(t.0)
        .unwrap_or_default()
        .format("%a, %d %b %Y %H:%M:%S +0000")
        .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use nsf::{Item, NoteId, OriginatorId, Seq, Unid};

    fn note(items: Vec<Item>) -> Note {
        Note {
            note_id: NoteId(7),
            oid: OriginatorId {
                unid: Unid([1; 16]),
                seq_num: 1,
                seq_time: Timestamp(0),
            },
            created: Timestamp(1_700_000_000_000_000),
            modified: Timestamp(0),
            added: Timestamp(0),
            change_seq: Seq(1),
            deleted: false,
            items,
        }
    }

    #[test]
    fn a_memo_renders_the_same_every_time_and_parses_back() {
        let n = note(vec![
            Item {
                name: "Subject".into(),
                value: ItemValue::Text("Grüße".into()),
            },
            Item {
                name: "Body".into(),
                value: ItemValue::RichText("Hello\nthere".into()),
            },
        ]);
        let a = render(&n, "u", &mut |_| None);
        assert_eq!(a, render(&n, "u", &mut |_| None));
        let m = mail_parser::MessageParser::default().parse(&a[..]).unwrap();
        assert_eq!(m.subject(), Some("Grüße"));
        assert_eq!(m.body_text(0).unwrap().trim_end(), "Hello\nthere");
    }

    #[test]
    fn the_sender_address_joins_a_from_that_has_none() {
        let from = |name: &str| {
            note(vec![Item {
                name: "From".into(),
                value: ItemValue::Text(name.into()),
            }])
        };
        let sent = |name: &str| {
            let bytes = with_sender_address(render(&from(name), "u", &mut |_| None), "a@x.org");
            let m = mail_parser::MessageParser::default()
                .parse(&bytes[..])
                .unwrap();
            let f = m.from().unwrap().first().unwrap();
            (
                f.name().map(str::to_string),
                f.address().map(str::to_string),
            )
        };
        assert_eq!(
            sent("Alice Smith"),
            (Some("Alice Smith".into()), Some("a@x.org".into()))
        );
        assert_eq!(
            sent("Smith, Alice J."),
            (Some("Smith, Alice J.".into()), Some("a@x.org".into()))
        );
        assert_eq!(sent("Zoë"), (Some("Zoë".into()), Some("a@x.org".into())));
        let kept = render(&from("b@y.org"), "u", &mut |_| None);
        assert_eq!(with_sender_address(kept.clone(), "a@x.org"), kept);
    }
}
