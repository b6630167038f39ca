//! Mail from outside: a message received by SMTP, deposited in a mail box
//! like one sent here, but with a sender nobody here vouches for.
//!
//! `deposit` takes its sender from the directory and refuses a `From`
//! naming anyone else, because a signed-in user could otherwise send as
//! another. A message arriving by SMTP has no signed-in sender: its
//! `From` is whatever the remote author wrote, and its recipients are
//! the envelope's (`RCPT TO`, already resolved to local people), not the
//! `To:` and `Cc:` headers, which are only shown (a Bcc recipient is in
//! the envelope and in no header). So it has an entry point of its own,
//! [`deposit_received`], narrow on purpose:
//!
//! ```text
//!   raw bytes ─ mime::to_document ─▶ InboundMessage
//!     ─ memo_from ─▶ Memo   From      the header's first author, else the
//!                                     envelope sender (display only)
//!                           SendTo/CopyTo  the To/Cc headers (display only)
//!                           Subject   one line, cut to the limit
//!                           Body      the text parts (rich text)
//!                           MessageID a fresh one (see below)
//!                  files    every other part; the HTML body as `message.html`
//!     ─ deposit_inbound ─▶ mail box document (I28), delivery state for
//!                          the envelope recipients, InboundFrom = the
//!                          envelope sender
//! ```
//!
//! The deposit's `MessageID` is a fresh one, never the message's own
//! `Message-ID:`: the router recognises a copy it already filed by that
//! id, and a sender who picked another message's id could otherwise make
//! the router take a new message for one it had delivered.
//!
//! `InboundFrom` marks the deposit as received: it has no local sender,
//! so there is no Sent copy to file, and a report about it goes back to
//! the envelope sender (`""` for a bounce, which gets none).

use crate::attach::Attachment;
use crate::mailbox::{self, DepositId};
use crate::message::{text, Address, Header, Memo, Message, MAX_RECIPIENTS, MAX_SUBJECT_BYTES};
use crate::mime::{self, InboundMessage};
use crate::{MailConfig, MailError, MailResult};
use nsf::Engine;
use std::collections::HashSet;
use views::Views;

/// The name the HTML body is attached under (made unique if a part
/// already has it).
pub const HTML_BODY_NAME: &str = "message.html";

/// The name the message as received is attached under (made unique if a
/// part already has it); the item `OriginalMIME` names it.
pub const ORIGINAL_MIME_NAME: &str = "original.eml";

/// Deposits a message received by SMTP: `raw` as received (CRLF line
/// ends, dot-unstuffed), `envelope_sender` the reverse-path (`None` for
/// `<>`), `recipients` the accepted envelope recipients. Refused before
/// anything is stored: bytes that are not a message (`NotAMessage`), no
/// recipient, anything over a limit known beforehand. Durable when this
/// returns (I2, I28); on any error nothing is deposited.
pub fn deposit_received(
    engine: &Engine,
    views: &Views,
    config: &MailConfig,
    raw: &[u8],
    envelope_sender: Option<&str>,
    recipients: &[Address],
) -> MailResult<DepositId> {
    deposit_mime(
        engine,
        views,
        config,
        raw,
        envelope_sender,
        recipients,
        None,
    )
}

/// Deposits a message a signed-in person submitted (RFC 6409): as
/// [`deposit_received`] (the bytes kept as sent, a fresh `MessageID`,
/// the envelope's recipients), with `SubmittedBy` = `person` (their full
/// name), to whom the router sends its reports. No copy is filed in
/// their Sent: a mail program files its own (IMAP APPEND), as RFC 6409
/// leaves it to. Durable when this returns (I2, I28).
pub fn deposit_submitted(
    engine: &Engine,
    views: &Views,
    config: &MailConfig,
    raw: &[u8],
    envelope_sender: &str,
    person: &str,
    recipients: &[Address],
) -> MailResult<DepositId> {
    deposit_mime(
        engine,
        views,
        config,
        raw,
        Some(envelope_sender),
        recipients,
        Some(person),
    )
}

fn deposit_mime(
    engine: &Engine,
    views: &Views,
    config: &MailConfig,
    raw: &[u8],
    envelope_sender: Option<&str>,
    recipients: &[Address],
    submitted_by: Option<&str>,
) -> MailResult<DepositId> {
    let inbound = mime::to_document(raw)?;
    let mut msg = memo_from(&inbound, envelope_sender);
    let mut contents: Vec<(String, String, &[u8])> = inbound
        .attachments
        .iter()
        .map(|a| (a.name.clone(), a.mime.clone(), a.bytes.as_slice()))
        .collect();
    if let Some(html) = &inbound.body_html {
        let taken: HashSet<String> = contents.iter().map(|c| c.0.to_lowercase()).collect();
        let name = free_name(HTML_BODY_NAME, &taken);
        contents.push((name, "text/html; charset=utf-8".into(), html.as_bytes()));
    }
    let taken: HashSet<String> = contents.iter().map(|c| c.0.to_lowercase()).collect();
    msg.header_mut().original_mime = Some(free_name(ORIGINAL_MIME_NAME, &taken));
    let mut readers: Vec<&[u8]> = contents.iter().map(|c| c.2).collect();
    let mut files: Vec<Attachment<'_>> = contents
        .iter()
        .zip(readers.iter_mut())
        .map(|((name, mime, bytes), reader)| Attachment {
            name: name.clone(),
            mime: mime.clone(),
            size: Some(bytes.len() as u64),
            content: reader,
        })
        .collect();
    deposit_inbound(
        engine,
        views,
        config,
        msg,
        recipients,
        envelope_sender,
        submitted_by,
        &mut files,
        Some(raw),
    )
}

/// Deposits `msg` for `recipients` (the envelope's, compared as names
/// are, each once), marked as received from `envelope_sender`. Its
/// `From` is kept as given: see the module docs for why this is not
/// `deposit`. `original`, the message as received, is kept as the
/// attachment `msg`'s `original_mime` names (so IMAP serves it byte for
/// byte); it does not count against `mail.max_message_size`.
#[allow(clippy::too_many_arguments)]
pub fn deposit_inbound(
    engine: &Engine,
    views: &Views,
    config: &MailConfig,
    msg: Message,
    recipients: &[Address],
    envelope_sender: Option<&str>,
    submitted_by: Option<&str>,
    files: &mut [Attachment<'_>],
    original: Option<&[u8]>,
) -> MailResult<DepositId> {
    msg.validate()?;
    let deliveries = mailbox::pending(recipients.iter());
    if deliveries.is_empty() {
        return Err(MailError::BadMessage(
            "a received message needs at least one envelope recipient".into(),
        ));
    }
    if deliveries.len() > MAX_RECIPIENTS {
        return Err(MailError::TooLarge {
            what: "the envelope recipient list".into(),
            size: deliveries.len() as u64,
            limit: MAX_RECIPIENTS as u64,
            unit: "addresses".into(),
        });
    }
    let mut origin = vec![text(
        mailbox::item::INBOUND_FROM,
        envelope_sender.unwrap_or(""),
    )];
    origin.extend(submitted_by.map(|p| text(mailbox::item::SUBMITTED_BY, p)));
    mailbox::commit(
        engine, views, config, msg, deliveries, origin, files, original,
    )
}

/// The memo a received message becomes (see the module docs). Header
/// addresses that are not addresses here are left out: they are only
/// shown, and delivery follows the envelope.
pub fn memo_from(inbound: &InboundMessage, envelope_sender: Option<&str>) -> Message {
    let mut header = Header::new(
        &one_line(inbound.subject.as_deref().unwrap_or("")),
        &inbound.body_text,
    );
    header.from = inbound
        .from
        .as_ref()
        .and_then(address)
        .or_else(|| envelope_sender.and_then(|s| Address::parse(s).ok()));
    header.send_to = inbound.to.iter().filter_map(address).collect();
    header.copy_to = inbound.cc.iter().filter_map(address).collect();
    header.received = inbound.received.clone();
    Message::Memo(Memo { header })
}

/// `Name <email>`, or the bare email when the name cannot be written in
/// an address here, or nothing.
fn address(a: &mime::Address) -> Option<Address> {
    let named = a
        .name
        .as_ref()
        .and_then(|n| Address::parse(&format!("{n} <{}>", a.email)).ok());
    named.or_else(|| Address::parse(&a.email).ok())
}

/// A subject as one line: control characters (a folded header's line
/// ends) become spaces, runs of white space one, cut to the limit at a
/// character boundary.
fn one_line(s: &str) -> String {
    let spaced: String = s
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    let mut line = spaced.split_whitespace().collect::<Vec<_>>().join(" ");
    if line.len() > MAX_SUBJECT_BYTES {
        let mut cut = MAX_SUBJECT_BYTES;
        while !line.is_char_boundary(cut) {
            cut -= 1;
        }
        line.truncate(cut);
    }
    line
}

/// `wanted`, or `stem-2.ext`, `stem-3.ext`, … when `taken` (lowercase)
/// holds it.
fn free_name(wanted: &str, taken: &HashSet<String>) -> String {
    if !taken.contains(&wanted.to_lowercase()) {
        return wanted.to_string();
    }
    let (stem, ext) = wanted.rsplit_once('.').unwrap_or((wanted, ""));
    (2..)
        .map(|n| format!("{stem}-{n}.{ext}"))
        .find(|c| !taken.contains(&c.to_lowercase()))
        .expect("a finite set leaves a free name")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::directory::{Directory, NewPerson};
    use crate::mailbox::{item, read_deposit, DeliveryState};
    use crate::sysdb::testing;
    use crate::{create_user, open_box};
    use nsf::ItemValue;

    const RAW: &[u8] = b"From: \"Eve Outside\" <eve@example.net>\r\n\
To: Alice <alice@example.com>, bob@example.com\r\n\
Cc: \"Smith, Carol\" <carol@example.org>\r\n\
Subject: Quarterly\r\n figures\r\n\
Message-ID: <chosen@example.net>\r\n\
MIME-Version: 1.0\r\n\
Content-Type: multipart/mixed; boundary=\"b1\"\r\n\
\r\n\
--b1\r\n\
Content-Type: text/plain; charset=utf-8\r\n\
\r\n\
See the attached file.\r\n\
--b1\r\n\
Content-Type: application/pdf\r\n\
Content-Disposition: attachment; filename=\"q3.pdf\"\r\n\
Content-Transfer-Encoding: base64\r\n\
\r\n\
JVBERi0xLjQK\r\n\
--b1--\r\n";

    fn people(engine: &Engine, views: &Views) {
        let dir = Directory::open(engine, views).unwrap();
        for name in ["Alice", "Bob"] {
            let new = NewPerson {
                name: name.into(),
                ..NewPerson::default()
            };
            create_user(engine, views, &dir, &new).unwrap();
        }
    }

    #[test]
    fn a_received_message_is_deposited_for_its_envelope_recipients() {
        let (engine, views) = testing::engine();
        people(&engine, &views);
        let config = MailConfig::new(1, 1 << 20).unwrap();
        let rcpts = [
            Address::parse("Alice").unwrap(),
            Address::parse("bob").unwrap(),
        ];
        let id = deposit_received(
            &engine,
            &views,
            &config,
            RAW,
            Some("bounces@example.net"),
            &rcpts,
        )
        .unwrap();
        assert_ne!(id.message_id.as_str(), "chosen@example.net");
        let db = open_box(&engine, &views, &id.mail_box).unwrap();
        let d = read_deposit(&db, id.unid).unwrap();
        let h = d.message.header();
        assert_eq!(
            h.from.as_ref().unwrap().to_string(),
            "Eve Outside <eve@example.net>"
        );
        assert_eq!(h.subject, "Quarterly figures");
        assert_eq!(h.body, "See the attached file.");
        assert_eq!(h.send_to.len(), 2);
        assert_eq!(
            h.copy_to[0].to_string(),
            "\"Smith, Carol\" <carol@example.org>"
        );
        let delivered: Vec<String> = d
            .deliveries
            .iter()
            .map(|d| d.recipient.to_string())
            .collect();
        assert_eq!(delivered, ["Alice", "bob"], "the envelope, not the headers");
        assert!(d
            .deliveries
            .iter()
            .all(|d| d.state == DeliveryState::Pending));
        assert!(d.deposited.is_some());
        let note = db.get(id.unid).unwrap();
        assert_eq!(
            note.item(item::INBOUND_FROM).unwrap().value,
            ItemValue::Text("bounces@example.net".into())
        );
        let mut pdf = Vec::new();
        std::io::Read::read_to_end(
            &mut db.open_attachment(id.unid, "q3.pdf").unwrap(),
            &mut pdf,
        )
        .unwrap();
        assert_eq!(pdf, b"%PDF-1.4\n");
        assert_eq!(h.original_mime.as_deref(), Some(ORIGINAL_MIME_NAME));
        let mut original = Vec::new();
        std::io::Read::read_to_end(
            &mut db.open_attachment(id.unid, ORIGINAL_MIME_NAME).unwrap(),
            &mut original,
        )
        .unwrap();
        assert_eq!(original, RAW, "kept byte for byte");
    }

    #[test]
    fn the_original_does_not_count_against_the_size_limit() {
        let (engine, views) = testing::engine();
        people(&engine, &views);
        // The PDF (9 bytes) and the body fit; the whole message does not.
        let config = MailConfig::new(1, 1 << 10).unwrap();
        let long = String::from_utf8(RAW.to_vec())
            .unwrap()
            .replace("Quarterly", &"Quarterly".repeat(100));
        let rcpts = [Address::parse("Alice").unwrap()];
        let id = deposit_received(&engine, &views, &config, long.as_bytes(), None, &rcpts);
        assert!(id.is_ok(), "{id:?}");
    }

    #[test]
    fn what_cannot_be_deposited_stores_nothing() {
        let (engine, views) = testing::engine();
        people(&engine, &views);
        let config = MailConfig::new(1, 1 << 20).unwrap();
        let rcpts = [Address::parse("Alice").unwrap()];
        let e = deposit_received(&engine, &views, &config, b"\r\n", None, &rcpts).unwrap_err();
        assert!(matches!(e, MailError::NotAMessage(_)), "{e}");
        let e = deposit_received(&engine, &views, &config, RAW, None, &[]).unwrap_err();
        assert!(matches!(e, MailError::BadMessage(_)), "{e}");
        // A 1.5 KiB attachment over a 1 KiB mail.max_message_size.
        let small = MailConfig::new(1, 1 << 10).unwrap();
        let big = String::from_utf8(RAW.to_vec())
            .unwrap()
            .replace("JVBERi0xLjQK", &"QUFB".repeat(512));
        let e =
            deposit_received(&engine, &views, &small, big.as_bytes(), None, &rcpts).unwrap_err();
        assert!(matches!(e, MailError::TooLarge { .. }), "{e}");
        let db = open_box(&engine, &views, &mailbox::box_path(0, 1)).unwrap();
        let mut messages = 0;
        db.for_each_note(|n| {
            messages += usize::from(n.item(crate::message::item::MESSAGE_ID).is_some());
            Ok(())
        })
        .unwrap();
        assert_eq!(messages, 0, "nothing was stored");
    }

    #[test]
    fn subjects_become_one_line_within_the_limit() {
        assert_eq!(one_line("a\r\n\tb  c"), "a b c");
        let long = "é".repeat(MAX_SUBJECT_BYTES);
        let cut = one_line(&long);
        assert!(cut.len() <= MAX_SUBJECT_BYTES && cut.len() >= MAX_SUBJECT_BYTES - 1);
    }

    #[test]
    fn the_html_body_gets_a_free_name() {
        let taken: HashSet<String> = ["message.html".to_string(), "message-2.html".to_string()]
            .into_iter()
            .collect();
        assert_eq!(free_name("message.html", &taken), "message-3.html");
        assert_eq!(free_name("message.html", &HashSet::new()), "message.html");
    }
}
