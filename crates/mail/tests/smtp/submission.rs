//! Submission (RFC 6409) through the session's public face: the sign-in
//! in front of the transaction, the sender rule, and AUTH's refusals.

use crate::driver::{codes, limits, Driver};
use mail::smtp::{AuthPolicy, SessionLimits};

fn submission(cleartext: bool) -> SessionLimits {
    SessionLimits {
        auth: AuthPolicy::Required { cleartext },
        ..limits()
    }
}

fn b64(s: &str) -> String {
    use base64::Engine as _;
    base64::engine::general_purpose::STANDARD.encode(s)
}

#[test]
fn sign_in_then_send_from_ones_own_address() {
    let mut d = Driver::new(submission(true));
    let ehlo = d.send("EHLO laptop\r\n");
    assert!(ehlo.contains("AUTH PLAIN LOGIN\r\n"), "{ehlo}");
    assert_eq!(codes(&d.send("MAIL FROM:<alice@example.com>\r\n")), [530]);
    assert_eq!(codes(&d.send("RCPT TO:<bob@example.com>\r\n")), [530]);
    assert_eq!(codes(&d.send("DATA\r\n")), [530]);
    let plain = b64("\0alice\0pw");
    assert_eq!(codes(&d.send(format!("AUTH PLAIN {plain}\r\n"))), [235]);
    assert!(
        !d.send("EHLO laptop\r\n").contains("AUTH"),
        "not offered again"
    );
    assert_eq!(codes(&d.send(format!("AUTH PLAIN {plain}\r\n"))), [503]);
    assert_eq!(codes(&d.send("MAIL FROM:<bob@example.com>\r\n")), [553]);
    assert_eq!(codes(&d.send("MAIL FROM:<>\r\n")), [553]);
    let sent = d.send("MAIL FROM:<Alice@Example.COM>\r\nRCPT TO:<bob@example.com>\r\nDATA\r\nSubject: x\r\n\r\nHi\r\n.\r\n");
    assert_eq!(codes(&sent), [250, 250, 354, 250]);
    let envelope = &d.stored[0].envelope;
    assert_eq!(envelope.authenticated.as_ref().unwrap().person, "Alice");
    assert_eq!(
        envelope.sender.as_ref().unwrap().to_string(),
        "Alice@Example.COM"
    );
}

#[test]
fn login_exchange_and_hostile_responses() {
    let mut d = Driver::new(submission(true));
    d.send("EHLO laptop\r\n");
    assert_eq!(d.send("AUTH LOGIN\r\n"), "334 VXNlcm5hbWU6\r\n");
    assert_eq!(
        d.send(format!("{}\r\n", b64("alice"))),
        "334 UGFzc3dvcmQ6\r\n"
    );
    assert_eq!(codes(&d.send(format!("{}\r\n", b64("pw")))), [235]);

    let mut d = Driver::new(submission(true));
    d.send("EHLO laptop\r\n");
    assert_eq!(codes(&d.send("AUTH LOGIN\r\n*\r\n")), [334, 501]);
    assert_eq!(codes(&d.send("AUTH PLAIN !!!\r\n")), [501]);
    assert_eq!(codes(&d.send("AUTH DIGEST-MD5\r\n")), [504]);
    let other = b64("bob\0alice\0pw");
    assert_eq!(codes(&d.send(format!("AUTH PLAIN {other}\r\n"))), [535]);
    assert_eq!(
        codes(&d.send(format!("AUTH PLAIN {}\r\n", b64("\0broken\0x")))),
        [454]
    );
    // Three refusals end the session.
    for _ in 0..2 {
        assert_eq!(
            codes(&d.send(format!("AUTH PLAIN {}\r\n", b64("\0alice\0no")))),
            [535]
        );
    }
    assert_eq!(d.session.auth_failures(), 2);
    let last = d.send(format!("AUTH PLAIN {}\r\n", b64("\0mallory\0no")));
    assert_eq!(codes(&last), [535, 421]);
    assert!(d.closed);
}

#[test]
fn passwords_wait_for_tls_off_loopback() {
    let mut d = Driver::new(submission(false));
    let ehlo = d.send("EHLO laptop\r\n");
    assert!(!ehlo.contains("AUTH"), "{ehlo}");
    assert!(ehlo.contains("STARTTLS"));
    assert_eq!(
        codes(&d.send(format!("AUTH PLAIN {}\r\n", b64("\0alice\0pw")))),
        [538]
    );
    assert_eq!(codes(&d.send("STARTTLS\r\n")), [220]);
    assert!(d.send("EHLO laptop\r\n").contains("AUTH PLAIN LOGIN"));
    assert_eq!(
        codes(&d.send(format!("AUTH PLAIN {}\r\n", b64("\0alice\0pw")))),
        [235]
    );
}

#[test]
fn inbound_offers_no_auth() {
    let mut d = Driver::greeted();
    assert_eq!(codes(&d.send("AUTH PLAIN AGFsaWNlAHB3\r\n")), [500]);
    assert_eq!(codes(&d.send("MAIL FROM:<anyone@else.example>\r\n")), [250]);
}
