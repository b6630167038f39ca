//! A received message (RFC 5322 + MIME), read into the parts a mail
//! document is made of.
//!
//! Parsing is `mail-parser`'s: it decodes transfer encodings (base64,
//! quoted-printable), charsets (UTF-8 out, whatever came in) and
//! RFC 2047 encoded words, and it is forgiving: a malformed header is
//! kept as text or dropped, a date it cannot read is no date, a part
//! whose encoding is broken is kept as text. What it cannot forgive
//! (no header at all) and what we refuse (no bytes, too many parts) is a
//! [`MailError::NotAMessage`], which the SMTP driver answers with 554.
//!
//! The result is independent of how documents are stored: the router
//! maps an [`InboundMessage`] to items. The choices made here:
//!
//! ```text
//!   body_text    every inline text part in reading order, joined by a
//!                blank line, line ends as LF (an HTML-only message: its
//!                text rendering)
//!   body_html    the inline HTML parts, if the message has any
//!   attachments  every other part: files, inline images, text parts
//!                that are not the body, nested messages (.eml),
//!                named safely (names.rs)
//! ```

mod names;
mod render;

use crate::{MailError, MailResult};
use mail_parser::{
    Address as ParsedAddress, Message, MessageParser, MessagePart, MimeHeaders, PartType,
};
use names::NameSet;
use std::fmt;

pub use names::MAX_NAME;
pub use render::{render, with_sender_address};

/// Most attachments one message may carry and still become a document.
pub const MAX_ATTACHMENTS: usize = 1000;

/// A message as a mail document sees it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct InboundMessage {
    /// The first author in `From:` (a message may list several; the
    /// first is the one shown).
    pub from: Option<Address>,
    pub to: Vec<Address>,
    pub cc: Vec<Address>,
    pub subject: Option<String>,
    pub date: Option<MessageDate>,
    /// `Message-ID:` without its angle brackets.
    pub message_id: Option<String>,
    /// The text body, lines ending in `\n` (empty when the message has
    /// none).
    pub body_text: String,
    pub body_html: Option<String>,
    pub attachments: Vec<Attachment>,
    /// The `Received:` trace lines, top (newest) first, each unfolded to
    /// one line.
    pub received: Vec<String>,
}

/// A mailbox from a header: `"Name" <email>`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Address {
    pub name: Option<String>,
    pub email: String,
}

/// `Date:` as an instant and the sender's UTC offset.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MessageDate {
    /// Seconds since 1970-01-01T00:00:00Z.
    pub unix_seconds: i64,
    /// The offset the sender wrote, in minutes east of UTC.
    pub utc_offset_minutes: i32,
}

/// One part that is not the body.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Attachment {
    /// Safe and unique within the message (see `names.rs`).
    pub name: String,
    /// `type/subtype`, lowercase; text parts were decoded to UTF-8 and say
    /// `; charset=utf-8`.
    pub mime: String,
    /// The content, transfer encoding removed.
    pub bytes: Vec<u8>,
}

/// Why bytes cannot become a mail document.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum NotAMessage {
    /// No bytes, or only white space.
    Empty,
    /// No header could be read.
    NoHeaders,
    /// More attachments than [`MAX_ATTACHMENTS`].
    TooManyAttachments(usize),
    /// More `Received:` lines than `smtp::MAX_RECEIVED`: a mail loop.
    TooManyHops(usize),
}

impl fmt::Display for NotAMessage {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            NotAMessage::Empty => f.write_str("the message is empty"),
            NotAMessage::NoHeaders => f.write_str("no header could be read"),
            NotAMessage::TooManyAttachments(n) => {
                write!(f, "{n} attachments, more than {MAX_ATTACHMENTS}")
            }
            NotAMessage::TooManyHops(n) => write!(
                f,
                "{n} Received lines, more than {}: a mail loop",
                crate::smtp::MAX_RECEIVED
            ),
        }
    }
}

/// Reads raw message bytes (as received by SMTP, CRLF line ends) into an
/// [`InboundMessage`].
pub fn to_document(raw: &[u8]) -> MailResult<InboundMessage> {
    let refuse = |why| Err(MailError::NotAMessage(why));
    if raw.iter().all(u8::is_ascii_whitespace) {
        return refuse(NotAMessage::Empty);
    }
    let Some(message) = MessageParser::default().parse(raw) else {
        return refuse(NotAMessage::NoHeaders);
    };
    if !message.headers().iter().any(|h| is_field_name(h.name())) {
        return refuse(NotAMessage::NoHeaders);
    }
    let count = message.attachment_count();
    if count > MAX_ATTACHMENTS {
        return refuse(NotAMessage::TooManyAttachments(count));
    }
    let received = received(&message, raw);
    if received.len() > crate::smtp::MAX_RECEIVED {
        return refuse(NotAMessage::TooManyHops(received.len()));
    }
    Ok(InboundMessage {
        from: message.from().and_then(|a| addresses(a).into_iter().next()),
        to: message.to().map(addresses).unwrap_or_default(),
        cc: message.cc().map(addresses).unwrap_or_default(),
        subject: message.subject().map(str::to_string),
        date: message
            .date()
            .filter(|d| d.is_valid())
            .map(|d| MessageDate {
                unix_seconds: d.to_timestamp(),
                utc_offset_minutes: offset_minutes(d.tz_before_gmt, d.tz_hour, d.tz_minute),
            }),
        message_id: message.message_id().map(str::to_string),
        body_text: body_text(&message),
        body_html: body_html(&message),
        attachments: attachments(&message),
        received,
    })
}

/// The `Received:` headers as written, top first, each unfolded to one
/// line of printable text within the subject's limit.
fn received(message: &Message<'_>, raw: &[u8]) -> Vec<String> {
    message
        .headers()
        .iter()
        .filter(|h| h.name().eq_ignore_ascii_case("Received"))
        .filter_map(|h| raw.get(h.offset_start() as usize..h.offset_end() as usize))
        .map(|v| {
            let text = String::from_utf8_lossy(v);
            let mut line = text
                .chars()
                .map(|c| if c.is_control() { ' ' } else { c })
                .collect::<String>()
                .split_whitespace()
                .collect::<Vec<_>>()
                .join(" ");
            let mut cut = line.len().min(crate::message::MAX_SUBJECT_BYTES);
            while !line.is_char_boundary(cut) {
                cut -= 1;
            }
            line.truncate(cut);
            line
        })
        .collect()
}

/// RFC 5322 §3.6.8 field name: printable ASCII except the colon. The
/// parser reads any first line as a header; text with no real header is
/// not a message.
fn is_field_name(name: &str) -> bool {
    !name.is_empty() && name.bytes().all(|b| b.is_ascii_graphic() && b != b':')
}

fn offset_minutes(before_gmt: bool, hours: u8, minutes: u8) -> i32 {
    let offset = i32::from(hours) * 60 + i32::from(minutes);
    if before_gmt {
        -offset
    } else {
        offset
    }
}

/// Every mailbox in an address header, groups flattened; entries without
/// an address (an empty group's name) are skipped.
fn addresses(header: &ParsedAddress<'_>) -> Vec<Address> {
    header
        .iter()
        .filter_map(|a| {
            let email = a.address()?.trim();
            (!email.is_empty()).then(|| Address {
                name: a
                    .name()
                    .map(str::trim)
                    .filter(|n| !n.is_empty())
                    .map(str::to_string),
                email: email.to_string(),
            })
        })
        .collect()
}

fn body_text(message: &Message<'_>) -> String {
    let texts: Vec<String> = (0..message.text_body_count())
        .filter_map(|i| message.body_text(i))
        .map(|text| text.replace("\r\n", "\n"))
        .collect();
    texts.join("\n\n")
}

fn body_html(message: &Message<'_>) -> Option<String> {
    let html: Vec<&str> = message
        .html_bodies()
        .filter_map(|part| match &part.body {
            PartType::Html(html) => Some(html.as_ref()),
            _ => None,
        })
        .collect();
    (!html.is_empty()).then(|| html.join("\n"))
}

fn attachments(message: &Message<'_>) -> Vec<Attachment> {
    let mut names = NameSet::default();
    message
        .attachments()
        .filter_map(|part| {
            let (mime, bytes, fallback_name) = content(part)?;
            let wanted = part.attachment_name().map(str::to_string).or(fallback_name);
            let name = names.name(wanted.as_deref(), &mime);
            Some(Attachment { name, mime, bytes })
        })
        .collect()
}

/// A part's type and bytes, and a name to use when its headers give none
/// (a nested message's subject).
fn content(part: &MessagePart<'_>) -> Option<(String, Vec<u8>, Option<String>)> {
    let declared = declared_type(part);
    match &part.body {
        PartType::Text(text) | PartType::Html(text) => {
            let essence = declared.unwrap_or_else(|| default_text_type(&part.body));
            Some((
                format!("{essence}; charset=utf-8"),
                text.as_bytes().to_vec(),
                None,
            ))
        }
        PartType::Binary(bytes) | PartType::InlineBinary(bytes) => Some((
            declared.unwrap_or_else(|| "application/octet-stream".to_string()),
            bytes.to_vec(),
            None,
        )),
        PartType::Message(nested) => Some((
            "message/rfc822".to_string(),
            nested.raw_message().to_vec(),
            nested.subject().map(|s| format!("{s}.eml")),
        )),
        PartType::Multipart(_) => None,
    }
}

fn default_text_type(body: &PartType<'_>) -> String {
    match body {
        PartType::Html(_) => "text/html".to_string(),
        _ => "text/plain".to_string(),
    }
}

/// `type/subtype` from Content-Type, lowercase, if it is a well-formed
/// token pair.
fn declared_type(part: &MessagePart<'_>) -> Option<String> {
    let ct = part.content_type()?;
    let subtype = ct.subtype()?;
    let token = |s: &str| {
        !s.is_empty()
            && s.len() <= 127
            && s.bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"!#$&-^_.+".contains(&b))
    };
    let (kind, subtype) = (ct.ctype(), subtype);
    (token(kind) && token(subtype)).then(|| format!("{kind}/{subtype}").to_ascii_lowercase())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn offsets_east_and_west() {
        assert_eq!(offset_minutes(false, 5, 30), 330);
        assert_eq!(offset_minutes(true, 8, 0), -480);
    }

    #[test]
    fn nothing_is_not_a_message() {
        for raw in [&b""[..], b"\r\n\r\n  \t"] {
            assert!(matches!(
                to_document(raw),
                Err(MailError::NotAMessage(NotAMessage::Empty))
            ));
        }
    }
}
