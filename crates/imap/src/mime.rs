//! What FETCH reads out of a message's bytes: body sections
//! (`BODY[HEADER]`, `BODY[1.2]`, `BODY[1.MIME]`, ...), the ENVELOPE and the
//! BODYSTRUCTURE, through mail-parser's offsets so every section is a
//! slice of the bytes as stored, never a re-encoding.
//!
//! Part numbers follow RFC 9051 §6.4.5: the parts of a multipart are 1, 2,
//! ...; a message that is not multipart has one part, 1, its body; a part
//! that is itself a message (message/rfc822) is numbered inside like a
//! message.

use imap_next::imap_types::body::{BasicFields, Body, BodyStructure, SpecificFields};
use imap_next::imap_types::core::{IString, NString};
use imap_next::imap_types::envelope::{Address, Envelope};
use imap_next::imap_types::fetch::Section;
use mail_parser::{Message, MessageParser, MessagePart, MimeHeaders, PartType};

/// Parses a message; bytes mail-parser cannot read are served as one
/// text part (every message here was read by it once already).
pub(crate) fn parse(raw: &[u8]) -> Option<Message<'_>> {
    MessageParser::default().parse(raw)
}

/// The bytes of `section` of the message `raw` (all of it for `None`).
pub(crate) fn section(raw: &[u8], section: Option<&Section<'_>>) -> Vec<u8> {
    let Some(section) = section else {
        return raw.to_vec();
    };
    let Some(msg) = parse(raw) else {
        return Vec::new();
    };
    let (path, what) = match section {
        Section::Part(p) => (nums(p), What::Body),
        Section::Header(p) => (p.as_ref().map(nums).unwrap_or_default(), What::Header),
        Section::Text(p) => (p.as_ref().map(nums).unwrap_or_default(), What::Text),
        Section::Mime(p) => (nums(p), What::Mime),
        Section::HeaderFields(p, names) => (
            p.as_ref().map(nums).unwrap_or_default(),
            What::Fields(names.as_ref().iter().map(lower).collect(), true),
        ),
        Section::HeaderFieldsNot(p, names) => (
            p.as_ref().map(nums).unwrap_or_default(),
            What::Fields(names.as_ref().iter().map(lower).collect(), false),
        ),
    };
    pick(raw, &msg, &path, &what).unwrap_or_default()
}

enum What {
    Body,
    Header,
    Text,
    Mime,
    Fields(Vec<String>, bool),
}

fn nums(p: &imap_next::imap_types::fetch::Part) -> Vec<u32> {
    p.0.as_ref().iter().map(|n| n.get()).collect()
}

fn lower(a: &imap_next::imap_types::core::AString<'_>) -> String {
    String::from_utf8_lossy(a.as_ref()).to_ascii_lowercase()
}

/// Walks `path` from the message `msg` (whose bytes are `raw`).
fn pick(raw: &[u8], msg: &Message<'_>, path: &[u32], what: &What) -> Option<Vec<u8>> {
    let root = msg.root_part();
    let Some((&first, rest)) = path.split_first() else {
        // The message itself: HEADER, TEXT, HEADER.FIELDS.
        let header = slice(raw, root.offset_header, root.offset_body);
        return Some(match what {
            What::Header => header.to_vec(),
            What::Text | What::Body => slice(raw, root.offset_body, root.offset_end).to_vec(),
            What::Fields(names, keep) => fields(header, names, *keep),
            What::Mime => return None,
        });
    };
    let part = child(msg, root, first)?;
    if rest.is_empty() {
        return Some(match what {
            What::Body => slice(raw, part.offset_body, part.offset_end).to_vec(),
            What::Mime => slice(raw, part.offset_header, part.offset_body).to_vec(),
            // HEADER/TEXT of a part are those of the message it holds.
            _ => {
                let PartType::Message(inner) = &part.body else {
                    return None;
                };
                return pick(inner.raw_message(), inner, &[], what);
            }
        });
    }
    match &part.body {
        PartType::Message(inner) => pick(inner.raw_message(), inner, rest, what),
        PartType::Multipart(_) => {
            // Deeper parts of a multipart inside this message.
            let mut here = part;
            let mut left = rest;
            while let Some((&n, more)) = left.split_first() {
                let PartType::Multipart(ids) = &here.body else {
                    break;
                };
                here = msg.part(*ids.get(n as usize - 1)?)?;
                left = more;
                if let PartType::Message(inner) = &here.body {
                    if !left.is_empty() {
                        return pick(inner.raw_message(), inner, left, what);
                    }
                }
            }
            if !left.is_empty() {
                return None;
            }
            Some(match what {
                What::Body => slice(raw, here.offset_body, here.offset_end).to_vec(),
                What::Mime => slice(raw, here.offset_header, here.offset_body).to_vec(),
                _ => match &here.body {
                    PartType::Message(inner) => return pick(inner.raw_message(), inner, &[], what),
                    _ => return None,
                },
            })
        }
        _ => None,
    }
}

/// Part `n` (1-based) directly under `root`.
fn child<'m>(
    msg: &'m Message<'_>,
    root: &'m MessagePart<'_>,
    n: u32,
) -> Option<&'m MessagePart<'m>> {
    match &root.body {
        PartType::Multipart(ids) => msg.part(*ids.get((n as usize).checked_sub(1)?)?),
        _ if n == 1 => Some(root),
        _ => None,
    }
}

fn slice(raw: &[u8], from: u32, to: u32) -> &[u8] {
    let to = (to as usize).min(raw.len());
    let from = (from as usize).min(to);
    &raw[from..to]
}

/// The header fields of `header` named (or, `keep` false, not named) in
/// `names`, each with its continuation lines, then the empty line.
fn fields(header: &[u8], names: &[String], keep: bool) -> Vec<u8> {
    let mut out = Vec::new();
    let mut take = false;
    for line in header.split_inclusive(|b| *b == b'\n') {
        if line == b"\r\n" || line == b"\n" {
            break;
        }
        if !line.starts_with(b" ") && !line.starts_with(b"\t") {
            let name = line
                .split(|b| *b == b':')
                .next()
                .map(|n| String::from_utf8_lossy(n).trim().to_ascii_lowercase())
                .unwrap_or_default();
            take = names.contains(&name) == keep;
        }
        if take {
            out.extend_from_slice(line);
        }
    }
    out.extend_from_slice(b"\r\n");
    out
}

/// The ENVELOPE of a message (RFC 9051 §7.5.2): raw header values,
/// addresses as parsed.
pub(crate) fn envelope(msg: &Message<'_>) -> Envelope<'static> {
    let raw = |name: &str| -> NString<'static> {
        msg.header_raw(name)
            .map(unfold)
            .and_then(|v| nstring(v.into_bytes()))
            .unwrap_or(NString(None))
    };
    let from = addresses(msg.from());
    let sender = match msg.sender() {
        Some(a) => addresses(Some(a)),
        None => from.clone(),
    };
    let reply_to = match msg.reply_to() {
        Some(a) => addresses(Some(a)),
        None => from.clone(),
    };
    Envelope {
        date: raw("Date"),
        subject: raw("Subject"),
        from,
        sender,
        reply_to,
        to: addresses(msg.to()),
        cc: addresses(msg.cc()),
        bcc: addresses(msg.bcc()),
        in_reply_to: raw("In-Reply-To"),
        message_id: raw("Message-ID"),
    }
}

fn unfold(v: &str) -> String {
    v.replace(['\r', '\n'], "").trim().to_string()
}

fn addresses(a: Option<&mail_parser::Address<'_>>) -> Vec<Address<'static>> {
    let Some(a) = a else { return Vec::new() };
    a.iter()
        .map(|addr| {
            let email = addr.address.as_deref().unwrap_or("");
            let (mailbox, host) = email.split_once('@').unwrap_or((email, ""));
            Address {
                name: addr
                    .name
                    .as_deref()
                    .and_then(|n| nstring(n.as_bytes().to_vec()))
                    .unwrap_or(NString(None)),
                adl: NString(None),
                mailbox: nstring(mailbox.as_bytes().to_vec()).unwrap_or(NString(None)),
                host: nstring(host.as_bytes().to_vec()).unwrap_or(NString(None)),
            }
        })
        .collect()
}

/// A string value: quoted where it can be, else a literal; `None` if it
/// holds a NUL, which no IMAP string may.
pub(crate) fn nstring(bytes: Vec<u8>) -> Option<NString<'static>> {
    IString::try_from(bytes).ok().map(|s| NString(Some(s)))
}

fn istring(s: &str) -> IString<'static> {
    IString::try_from(s.to_string())
        .unwrap_or_else(|_| IString::try_from("x".to_string()).expect("a string"))
}

/// The BODYSTRUCTURE of a message (RFC 9051 §7.5.2), without extension
/// data.
pub(crate) fn body_structure(raw: &[u8], msg: &Message<'_>) -> BodyStructure<'static> {
    structure(raw, msg, msg.root_part(), 0)
}

fn structure(
    raw: &[u8],
    msg: &Message<'_>,
    part: &MessagePart<'_>,
    depth: u32,
) -> BodyStructure<'static> {
    let ct = part.content_type();
    let ctype = ct.map_or("text", |c| c.ctype()).to_ascii_lowercase();
    let subtype = ct
        .and_then(|c| c.subtype())
        .map(str::to_ascii_lowercase)
        .unwrap_or_else(|| {
            if ctype == "text" {
                "plain".into()
            } else {
                "octet-stream".into()
            }
        });
    if let PartType::Multipart(ids) = &part.body {
        let bodies: Vec<BodyStructure<'static>> = ids
            .iter()
            .filter_map(|id| msg.part(*id))
            .filter(|_| depth < 32)
            .map(|p| structure(raw, msg, p, depth + 1))
            .collect();
        if let Ok(bodies) = bodies.try_into() {
            return BodyStructure::Multi {
                bodies,
                subtype: istring(&subtype),
                extension_data: None,
            };
        }
    }
    let body = slice(raw, part.offset_body, part.offset_end);
    let lines = body.iter().filter(|b| **b == b'\n').count() as u32;
    let params: Vec<(IString<'static>, IString<'static>)> = ct
        .and_then(|c| c.attributes())
        .unwrap_or(&[])
        .iter()
        .map(|a| (istring(&a.name.to_ascii_lowercase()), istring(&a.value)))
        .collect();
    let basic = BasicFields {
        parameter_list: params,
        id: part
            .content_id()
            .and_then(|v| nstring(format!("<{v}>").into_bytes()))
            .unwrap_or(NString(None)),
        description: part
            .content_description()
            .and_then(|v| nstring(v.as_bytes().to_vec()))
            .unwrap_or(NString(None)),
        content_transfer_encoding: istring(
            &part
                .content_transfer_encoding()
                .unwrap_or("7bit")
                .to_ascii_lowercase(),
        ),
        size: body.len() as u32,
    };
    let specific = match &part.body {
        PartType::Message(inner) if depth < 32 => SpecificFields::Message {
            envelope: Box::new(envelope(inner)),
            body_structure: Box::new(structure(
                inner.raw_message(),
                inner,
                inner.root_part(),
                depth + 1,
            )),
            number_of_lines: lines,
        },
        _ if ctype == "text" => SpecificFields::Text {
            subtype: istring(&subtype),
            number_of_lines: lines,
        },
        _ => SpecificFields::Basic {
            r#type: istring(&ctype),
            subtype: istring(&subtype),
        },
    };
    BodyStructure::Single {
        body: Body { basic, specific },
        extension_data: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use imap_next::imap_types::fetch::Part;

    const MULTI: &[u8] = b"From: a@example.com\r\n\
Subject: Hi\r\n\
Content-Type: multipart/mixed; boundary=\"b\"\r\n\
\r\n\
--b\r\n\
Content-Type: text/plain\r\n\
\r\n\
hello\r\n\
--b\r\n\
Content-Type: application/octet-stream\r\n\
\r\n\
AAAA\r\n\
--b--\r\n";

    fn part(n: &[u32]) -> Part {
        let v: Vec<std::num::NonZeroU32> = n
            .iter()
            .map(|x| std::num::NonZeroU32::new(*x).unwrap())
            .collect();
        Part(v.try_into().unwrap())
    }

    #[test]
    fn sections_are_slices_of_the_bytes() {
        assert_eq!(section(MULTI, None), MULTI);
        let header = section(MULTI, Some(&Section::Header(None)));
        assert!(header.starts_with(b"From: a@example.com\r\n"));
        assert!(header.ends_with(b"\r\n\r\n"));
        assert_eq!(section(MULTI, Some(&Section::Part(part(&[1])))), b"hello");
        assert_eq!(section(MULTI, Some(&Section::Part(part(&[2])))), b"AAAA");
        assert!(section(MULTI, Some(&Section::Part(part(&[3])))).is_empty());
        let mime = section(MULTI, Some(&Section::Mime(part(&[1]))));
        assert!(mime.starts_with(b"Content-Type: text/plain"), "{mime:?}");
    }

    #[test]
    fn header_fields_keep_only_the_names_asked() {
        let names = vec!["subject".to_string()];
        assert_eq!(
            fields(b"From: x\r\nSubject: a\r\n b\r\n\r\n", &names, true),
            b"Subject: a\r\n b\r\n\r\n"
        );
        assert_eq!(
            fields(b"From: x\r\nSubject: a\r\n\r\n", &names, false),
            b"From: x\r\n\r\n"
        );
    }

    #[test]
    fn a_single_part_message_has_part_one() {
        let m = b"Subject: x\r\n\r\nbody\r\n";
        assert_eq!(section(m, Some(&Section::Part(part(&[1])))), b"body\r\n");
        let msg = parse(m).unwrap();
        assert!(matches!(
            body_structure(m, &msg),
            BodyStructure::Single { .. }
        ));
        let msg = parse(MULTI).unwrap();
        assert!(matches!(
            body_structure(MULTI, &msg),
            BodyStructure::Multi { .. }
        ));
    }
}
