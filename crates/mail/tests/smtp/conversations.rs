//! The example conversations of RFC 5321 Appendix D, RFC 2920 §3 and
//! RFC 3207 §5, replayed against the session (names moved to this
//! test directory's example.com; reply texts are ours, codes are the
//! RFCs').
//!
//! Script lines: `C: text` is sent by the client (consecutive C lines go
//! in one read, as a pipelining client sends them), `S: code` is the
//! reply expected, in order.

use crate::driver::{codes, limits, Driver};
use mail::smtp::SessionLimits;

fn replay(limits: SessionLimits, script: &str) -> Driver {
    let mut d = Driver::new(limits);
    let mut expected = Vec::new();
    let mut sent = String::new();
    let mut got = codes(&d.greeting);
    for line in script.lines().map(str::trim).filter(|l| !l.is_empty()) {
        if let Some(text) = line.strip_prefix("C:") {
            let text = text.strip_prefix(' ').unwrap_or(text);
            sent.push_str(text);
            sent.push_str("\r\n");
            continue;
        }
        let code = line.strip_prefix("S: ").expect("C: or S: lines");
        expected.push(code.parse::<u16>().expect("a code"));
        if !sent.is_empty() {
            got.extend(codes(&d.send(std::mem::take(&mut sent))));
        }
    }
    if !sent.is_empty() {
        got.extend(codes(&d.send(sent)));
    }
    assert_eq!(got, expected, "script:\n{script}");
    d
}

#[test]
fn rfc5321_d1_a_typical_transaction() {
    let d = replay(
        limits(),
        "S: 220
         C: EHLO bar.com
         S: 250
         C: MAIL FROM:<Smith@bar.com>
         S: 250
         C: RCPT TO:<Jones@example.com>
         S: 250
         C: RCPT TO:<Green@example.com>
         S: 550
         C: RCPT TO:<Brown@example.com>
         S: 250
         C: DATA
         S: 354
         C: Blah blah blah...
         C: ...etc. etc. etc.
         C: .
         S: 250
         C: QUIT
         S: 221",
    );
    assert_eq!(d.stored.len(), 1);
    assert_eq!(
        d.stored[0].data,
        b"Blah blah blah...\r\n..etc. etc. etc.\r\n"
    );
    let to: Vec<String> = d.stored[0]
        .envelope
        .recipients
        .iter()
        .map(|r| r.to_string())
        .collect();
    assert_eq!(to, ["Jones@example.com", "Brown@example.com"]);
    assert!(d.closed);
}

#[test]
fn rfc5321_d2_an_aborted_transaction() {
    let d = replay(
        limits(),
        "S: 220
         C: EHLO bar.com
         S: 250
         C: MAIL FROM:<Smith@bar.com>
         S: 250
         C: RCPT TO:<Jones@example.com>
         S: 250
         C: RCPT TO:<Green@example.com>
         S: 550
         C: RSET
         S: 250
         C: QUIT
         S: 221",
    );
    assert!(d.stored.is_empty());
}

#[test]
fn rfc5321_d3_relaying_is_refused() {
    let d = replay(
        limits(),
        "S: 220
         C: EHLO bar.com
         S: 250
         C: MAIL FROM:<JQP@bar.com>
         S: 250
         C: RCPT TO:<Jones@other.org>
         S: 550
         C: DATA
         S: 554
         C: QUIT
         S: 221",
    );
    assert!(d.stored.is_empty());
}

#[test]
fn rfc5321_d4_verifying_and_sending() {
    replay(
        limits(),
        "S: 220
         C: EHLO bar.com
         S: 250
         C: VRFY Crispin
         S: 252
         C: MAIL FROM:<EAK@bar.com>
         S: 250
         C: RCPT TO:<Jones@example.com>
         S: 250
         C: DATA
         S: 354
         C: Blah blah blah...
         C: .
         S: 250
         C: QUIT
         S: 221",
    );
}

#[test]
fn rfc2920_pipelined_transaction() {
    let d = replay(
        limits(),
        "S: 220
         C: EHLO dbc.mtview.ca.us
         S: 250
         C: MAIL FROM:<mrose@dbc.mtview.ca.us>
         C: RCPT TO:<ned@example.com>
         C: RCPT TO:<dan@example.com>
         C: RCPT TO:<kvc@example.com>
         C: DATA
         S: 250
         S: 250
         S: 250
         S: 250
         S: 354
         C: Subject: pipelined
         C:
         C: body
         C: .
         C: QUIT
         S: 250
         S: 221",
    );
    assert_eq!(d.stored[0].envelope.recipients.len(), 3);
}

#[test]
fn rfc2920_pipelined_with_a_failed_recipient() {
    let d = replay(
        limits(),
        "S: 220
         C: EHLO dbc.mtview.ca.us
         S: 250
         C: MAIL FROM:<mrose@dbc.mtview.ca.us>
         C: RCPT TO:<ned@example.com>
         C: RCPT TO:<nosuchuser@example.com>
         C: RCPT TO:<dan@example.com>
         C: DATA
         S: 250
         S: 250
         S: 550
         S: 250
         S: 354
         C: .
         C: QUIT
         S: 250
         S: 221",
    );
    assert_eq!(d.stored[0].envelope.recipients.len(), 2);
    assert_eq!(d.stored[0].data, b"");
}

#[test]
fn rfc1870_size_declared_too_large() {
    let d = replay(
        limits(),
        "S: 220
         C: EHLO thor.innosoft.com
         S: 250
         C: MAIL FROM:<ned@thor.innosoft.com> SIZE=500000
         S: 552
         C: QUIT
         S: 221",
    );
    assert!(d.stored.is_empty());
}

#[test]
fn rfc3207_starttls() {
    let d = replay(
        limits(),
        "S: 220
         C: EHLO mail.example.com
         S: 250
         C: STARTTLS
         S: 220
         C: EHLO mail.example.com
         S: 250
         C: MAIL FROM:<a@mail.example.com>
         S: 250
         C: RCPT TO:<alice@example.com>
         S: 250
         C: DATA
         S: 354
         C: secret
         C: .
         S: 250
         C: QUIT
         S: 221",
    );
    assert_eq!(d.handshakes, 1);
    assert!(d.stored[0].envelope.tls);
}
