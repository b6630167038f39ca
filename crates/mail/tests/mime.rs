//! MIME messages into `InboundMessage`: bodies, attachments in every
//! transfer encoding, charsets, names, and what is refused.

use mail::mime::{to_document, Address, InboundMessage, NotAMessage, MAX_ATTACHMENTS, MAX_NAME};
use mail::MailError;
use proptest::prelude::*;

/// Writes a message with CRLF line ends, as SMTP delivers it.
fn crlf(text: &str) -> Vec<u8> {
    text.replace('\n', "\r\n").into_bytes()
}

fn convert(text: &str) -> InboundMessage {
    to_document(&crlf(text)).expect("a message")
}

#[test]
fn plain_text_message_and_its_headers() {
    let m = convert(
        "From: \"Alice Example\" <alice@example.com>, second@example.com
To: bob@example.com, Team: carol@example.com, dave@example.com;
Cc: <eve@example.com>
Subject: Quarterly report
Date: Tue, 1 Jul 2025 09:30:00 -0700
Message-ID: <abc.123@example.com>

Hello Bob,
the report is attached.
",
    );
    assert_eq!(
        m.from,
        Some(Address {
            name: Some("Alice Example".into()),
            email: "alice@example.com".into()
        })
    );
    let to: Vec<&str> = m.to.iter().map(|a| a.email.as_str()).collect();
    assert_eq!(
        to,
        ["bob@example.com", "carol@example.com", "dave@example.com"]
    );
    assert_eq!(m.cc[0].email, "eve@example.com");
    assert_eq!(m.subject.as_deref(), Some("Quarterly report"));
    let date = m.date.unwrap();
    assert_eq!(date.unix_seconds, 1_751_387_400);
    assert_eq!(date.utc_offset_minutes, -420);
    assert_eq!(m.message_id.as_deref(), Some("abc.123@example.com"));
    assert_eq!(m.body_text, "Hello Bob,\nthe report is attached.\n");
    assert_eq!(m.body_html, None);
    assert!(m.attachments.is_empty());
}

#[test]
fn multipart_alternative_gives_text_and_html_bodies() {
    let m = convert(
        "From: a@example.com
Subject: alt
MIME-Version: 1.0
Content-Type: multipart/alternative; boundary=\"b1\"

--b1
Content-Type: text/plain; charset=utf-8

Plain version
--b1
Content-Type: text/html; charset=utf-8

<p>HTML <b>version</b></p>
--b1--
",
    );
    assert_eq!(m.body_text, "Plain version");
    assert_eq!(m.body_html.as_deref(), Some("<p>HTML <b>version</b></p>"));
    assert!(m.attachments.is_empty());
}

#[test]
fn html_only_message_gets_a_text_rendering() {
    let m = convert(
        "From: a@example.com
Content-Type: text/html

<html><body><p>Hello</p><p>world</p></body></html>
",
    );
    assert!(
        m.body_text.contains("Hello") && m.body_text.contains("world"),
        "{:?}",
        m.body_text
    );
    assert!(!m.body_text.contains('<'));
    assert!(m.body_html.unwrap().contains("<p>Hello</p>"));
}

#[test]
fn attachments_in_base64_and_quoted_printable() {
    let m = convert(
        "From: a@example.com
Subject: files
Content-Type: multipart/mixed; boundary=\"xyz\"

--xyz
Content-Type: text/plain

See attached.
--xyz
Content-Type: application/pdf; name=\"report.pdf\"
Content-Transfer-Encoding: base64
Content-Disposition: attachment; filename=\"report.pdf\"

JVBERi0xLjQKJeLjz9MK
AAEC/w==
--xyz
Content-Type: text/plain; charset=iso-8859-1
Content-Transfer-Encoding: quoted-printable
Content-Disposition: attachment; filename=\"notes.txt\"

caf=E9 cr=E8me, a long line that is soft=
 broken
--xyz--
",
    );
    assert_eq!(m.body_text, "See attached.");
    assert_eq!(m.attachments.len(), 2);
    let pdf = &m.attachments[0];
    assert_eq!(pdf.name, "report.pdf");
    assert_eq!(pdf.mime, "application/pdf");
    assert_eq!(pdf.bytes, b"%PDF-1.4\n%\xe2\xe3\xcf\xd3\n\x00\x01\x02\xff");
    let notes = &m.attachments[1];
    assert_eq!(notes.name, "notes.txt");
    assert_eq!(notes.mime, "text/plain; charset=utf-8");
    assert_eq!(
        String::from_utf8(notes.bytes.clone()).unwrap(),
        "café crème, a long line that is soft broken"
    );
}

#[test]
fn non_utf8_charsets_are_decoded() {
    let latin1 = crlf("From: a@example.com\nSubject: =?ISO-8859-1?Q?caf=E9?=\nContent-Type: text/plain; charset=ISO-8859-1\nContent-Transfer-Encoding: 8bit\n\nna\u{0}ve\n");
    // Put a raw ISO-8859-1 byte (é = 0xE9) in the body.
    let raw: Vec<u8> = latin1
        .iter()
        .map(|&b| if b == 0 { 0xE9 } else { b })
        .collect();
    let m = to_document(&raw).unwrap();
    assert_eq!(m.subject.as_deref(), Some("café"));
    assert_eq!(m.body_text, "naéve\n");

    let m = convert("From: a@example.com\nSubject: =?UTF-8?B?w7xiZXIgZGVuIFJoZWlu?=\nContent-Type: text/plain; charset=windows-1252\nContent-Transfer-Encoding: quoted-printable\n\n=80 10\n");
    assert_eq!(m.subject.as_deref(), Some("über den Rhein"));
    assert_eq!(m.body_text, "€ 10\n");

    // ISO-2022-JP (7-bit escapes): "日本語".
    let m = convert("From: a@example.com\nContent-Type: text/plain; charset=ISO-2022-JP\n\n\u{1b}$BF|K\\8l\u{1b}(B\n");
    assert_eq!(m.body_text, "日本語\n");

    // Shift_JIS bytes for "テスト" in base64.
    let m = convert("From: a@example.com\nContent-Type: text/plain; charset=Shift_JIS\nContent-Transfer-Encoding: base64\n\ng2WDWINn\n");
    assert_eq!(m.body_text, "テスト");
}

#[test]
fn malformed_headers_do_not_lose_the_message() {
    let m = convert(
        "From: a@example.com
this line is not a header
Subject: =?UTF-8?Q?broken=ZZ?= word
Date: the day after tomorrow
To: not an address at all
Message-ID: no brackets

body survives
",
    );
    assert_eq!(m.from.unwrap().email, "a@example.com");
    assert!(m.subject.unwrap().contains("word"));
    assert_eq!(m.date, None, "an unreadable date is no date");
    assert!(m.to.iter().all(|a| !a.email.is_empty()));
    assert_eq!(m.body_text, "body survives\n");
}

#[test]
fn broken_base64_is_kept_not_fatal() {
    let m = convert(
        "From: a@example.com
Content-Type: multipart/mixed; boundary=\"q\"

--q
Content-Type: text/plain

text
--q
Content-Type: application/octet-stream
Content-Transfer-Encoding: base64
Content-Disposition: attachment; filename=\"x.bin\"

!!!! not base64 @@@@
--q--
",
    );
    assert_eq!(m.body_text, "text");
    assert!(m.attachments.len() <= 1);
}

#[test]
fn unsafe_and_duplicate_names_are_made_safe() {
    let m = convert(
        "From: a@example.com
Content-Type: multipart/mixed; boundary=\"n\"

--n
Content-Type: text/plain

body
--n
Content-Type: application/octet-stream
Content-Disposition: attachment; filename=\"../../etc/passwd\"

one
--n
Content-Type: application/octet-stream
Content-Disposition: attachment; filename=\"C:\\\\temp\\\\PASSWD\"

two
--n
Content-Type: image/png
Content-Disposition: attachment

three
--n
Content-Type: application/octet-stream
Content-Disposition: attachment; filename*=UTF-8''na%C3%AFve%0D%0A.txt

four
--n--
",
    );
    let names: Vec<&str> = m.attachments.iter().map(|a| a.name.as_str()).collect();
    assert_eq!(
        names,
        ["passwd", "PASSWD-2", "attachment.png", "naïve__.txt"]
    );
    for a in &m.attachments {
        assert!(!a.name.is_empty() && a.name.len() <= MAX_NAME);
        assert!(!a.name.contains(['/', '\\']) && !a.name.chars().any(char::is_control));
    }
}

#[test]
fn nested_messages_and_inline_images_are_attachments() {
    let m = convert(
        "From: a@example.com
Content-Type: multipart/mixed; boundary=\"outer\"

--outer
Content-Type: multipart/related; boundary=\"rel\"

--rel
Content-Type: text/html

<p>logo: <img src=\"cid:logo\"></p>
--rel
Content-Type: image/gif
Content-ID: <logo>
Content-Transfer-Encoding: base64

R0lGODlhAQABAAAAACw=
--rel--
--outer
Content-Type: message/rfc822

From: b@example.com
Subject: Original

forwarded body
--outer--
",
    );
    assert!(m.body_html.unwrap().contains("cid:logo"));
    let summary: Vec<(&str, &str)> = m
        .attachments
        .iter()
        .map(|a| (a.name.as_str(), a.mime.as_str()))
        .collect();
    assert_eq!(
        summary,
        [
            ("attachment.gif", "image/gif"),
            ("Original.eml", "message/rfc822")
        ]
    );
    assert!(m.attachments[0].bytes.starts_with(b"GIF89a"));
    let nested = to_document(&m.attachments[1].bytes).unwrap();
    assert_eq!(nested.subject.as_deref(), Some("Original"));
}

#[test]
fn what_cannot_be_a_document() {
    let refused = |raw: &[u8]| match to_document(raw) {
        Err(MailError::NotAMessage(why)) => why,
        other => panic!("{raw:?}: {other:?}"),
    };
    assert_eq!(refused(b""), NotAMessage::Empty);
    assert_eq!(refused(b"\r\n \r\n"), NotAMessage::Empty);
    assert_eq!(refused(b"just some text\r\n"), NotAMessage::NoHeaders);
    assert_eq!(refused(b"just some text"), NotAMessage::NoHeaders);
    assert_eq!(refused(b"\x00\x01\x02"), NotAMessage::NoHeaders);

    let mut many =
        String::from("From: a@example.com\nContent-Type: multipart/mixed; boundary=\"m\"\n\n");
    for i in 0..=MAX_ATTACHMENTS {
        many.push_str(&format!(
            "--m\nContent-Type: application/octet-stream\nContent-Disposition: attachment; filename=\"f{i}\"\n\nx\n"
        ));
    }
    many.push_str("--m--\n");
    assert_eq!(
        refused(&crlf(&many)),
        NotAMessage::TooManyAttachments(MAX_ATTACHMENTS + 1)
    );
}

/// Found by the `to_document` fuzz target: a nested message/rfc822 in a
/// broken multipart reaches a `debug_assert!(false)` in mail-parser. The
/// workspace turns that crate's debug assertions off; this keeps the case.
#[test]
fn a_broken_nested_multipart_is_not_a_panic() {
    let raw =
        b"Fm: a@b.c\r\nContent-Type: multipart/m%xed; boundary=\"b\"\r\n--\r\n-\r\n\r\nhi\r\n\
--b\r\nContent-Type:message/rfc822\n\r\nContent-Type:message/rfc822\n\r\n\nType:mes\r\n--b--\r\n";
    assert_eq!(raw.len(), 152);
    assert!(to_document(raw).is_ok());
}

#[test]
fn headers_only_message_has_an_empty_body() {
    let m = convert("From: a@example.com\nSubject: nothing else\n");
    assert_eq!(m.body_text, "");
    assert!(m.attachments.is_empty());
}

proptest! {
    #[test]
    fn arbitrary_bytes_never_panic_and_names_stay_safe(
        raw in prop::collection::vec(any::<u8>(), 0..3000),
    ) {
        if let Ok(m) = to_document(&raw) {
            let mut seen = std::collections::HashSet::new();
            for a in &m.attachments {
                prop_assert!(!a.name.is_empty() && a.name.len() <= MAX_NAME);
                prop_assert!(!a.name.contains(['/', '\\']));
                prop_assert!(!a.name.chars().any(char::is_control));
                prop_assert!(seen.insert(a.name.to_lowercase()), "duplicate {}", a.name);
            }
        }
    }

    #[test]
    fn arbitrary_multipart_bodies_never_panic(
        parts in prop::collection::vec(
            (
                "[ -~]{0,40}",
                prop::sample::select(vec!["base64", "quoted-printable", "8bit", "x-junk"]),
                prop::collection::vec(any::<u8>(), 0..200),
            ),
            0..6,
        ),
    ) {
        let mut raw = b"From: a@example.com\r\nContent-Type: multipart/mixed; boundary=\"p\"\r\n\r\n".to_vec();
        for (name, encoding, body) in &parts {
            raw.extend_from_slice(format!(
                "--p\r\nContent-Type: application/octet-stream; name=\"{name}\"\r\nContent-Transfer-Encoding: {encoding}\r\n\r\n"
            ).as_bytes());
            raw.extend_from_slice(body);
            raw.extend_from_slice(b"\r\n");
        }
        raw.extend_from_slice(b"--p--\r\n");
        let m = to_document(&raw).unwrap();
        prop_assert!(m.attachments.len() <= parts.len());
    }
}
