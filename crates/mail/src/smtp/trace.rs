//! The `Received:` trace line an SMTP server puts at the top of every
//! message it accepts (RFC 5321 §4.4), written from the envelope, the
//! peer's address and the time: the driver knows the last two, so it
//! calls [`received_line`] when it stores a message.
//!
//! ```text
//!   Received: from client.example ([192.0.2.7]) by folio.example
//!           with ESMTPS for <bob@example.com>; Tue, 24 Nov 2026 19:10:00 +0000
//! ```
//!
//! `with` is the protocol as RFC 3848 names it: `SMTP` after HELO,
//! `ESMTP` after EHLO, `ESMTPS` over TLS, `ESMTPA`/`ESMTPSA` once
//! signed in (submission). `for` names the recipient only
//! when there is one (RFC 5321 §4.4: naming several would show each the
//! others, Bcc ones too). The line is one line: the client's domain is
//! checked printable when given (`command.rs`), and anything else that is
//! not printable ASCII is replaced, so the line cannot fold into a
//! header of the sender's choosing.

use super::action::Envelope;
use std::net::IpAddr;

/// Most `Received:` lines a message may carry: RFC 5321 §6.3's loop
/// detection (a message with more is refused, 554).
pub const MAX_RECEIVED: usize = 100;

/// The trace line for a message received with `envelope` from `peer`
/// by `server_name` at `at`, CRLF-terminated, to put before its first
/// header.
pub fn received_line(
    envelope: &Envelope,
    peer: IpAddr,
    server_name: &str,
    at: chrono::DateTime<chrono::Utc>,
) -> String {
    let with = match (
        envelope.esmtp,
        envelope.tls,
        envelope.authenticated.is_some(),
    ) {
        (_, true, true) => "ESMTPSA",
        (_, false, true) => "ESMTPA",
        (_, true, false) => "ESMTPS",
        (true, false, false) => "ESMTP",
        (false, false, false) => "SMTP",
    };
    let peer = match peer {
        IpAddr::V4(a) => format!("[{a}]"),
        IpAddr::V6(a) => format!("[IPv6:{a}]"),
    };
    let rcpt = match envelope.recipients.as_slice() {
        [one] => format!(" for <{}>", printable(&one.to_string())),
        _ => String::new(),
    };
    format!(
        "Received: from {} ({peer}) by {} with {with}{rcpt}; {}\r\n",
        printable(&envelope.client_domain),
        printable(server_name),
        at.to_rfc2822(),
    )
}

/// `s` with anything but printable ASCII (and so any line end) as `?`.
fn printable(s: &str) -> String {
    s.chars()
        .map(|c| if c.is_ascii_graphic() { c } else { '?' })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::smtp::{BodyType, Mailbox, Recipient};
    use chrono::TimeZone;

    fn envelope(esmtp: bool, tls: bool, rcpts: &[&str]) -> Envelope {
        Envelope {
            client_domain: "client.example".into(),
            esmtp,
            tls,
            sender: None,
            recipients: rcpts
                .iter()
                .map(|r| Recipient::Mailbox(Mailbox::parse(r).unwrap()))
                .collect(),
            body: BodyType::SevenBit,
            declared_size: None,
            authenticated: None,
        }
    }

    #[test]
    fn the_line_names_peer_protocol_and_the_one_recipient() {
        let at = chrono::Utc
            .with_ymd_and_hms(2026, 11, 24, 19, 10, 0)
            .unwrap();
        let ip: IpAddr = "192.0.2.7".parse().unwrap();
        assert_eq!(
            received_line(
                &envelope(true, false, &["bob@example.com"]),
                ip,
                "folio.example",
                at
            ),
            "Received: from client.example ([192.0.2.7]) by folio.example with ESMTP \
             for <bob@example.com>; Tue, 24 Nov 2026 19:10:00 +0000\r\n"
        );
        let two = received_line(&envelope(false, false, &["a@x", "b@x"]), ip, "s", at);
        assert!(two.contains(" with SMTP; "), "{two}");
        assert!(
            !two.contains(" for "),
            "several recipients are not named: {two}"
        );
        let v6: IpAddr = "2001:db8::1".parse().unwrap();
        let tls = received_line(&envelope(true, true, &["a@x"]), v6, "s", at);
        assert!(
            tls.contains("([IPv6:2001:db8::1]) by s with ESMTPS"),
            "{tls}"
        );
    }

    #[test]
    fn nothing_in_the_line_can_break_it() {
        let mut e = envelope(true, false, &["a@x"]);
        e.client_domain = "evil\r\nX-Injected: yes".into();
        let line = received_line(&e, "127.0.0.1".parse().unwrap(), "s", chrono::Utc::now());
        assert_eq!(line.matches("\r\n").count(), 1);
        assert!(line.ends_with("\r\n"));
    }
}
