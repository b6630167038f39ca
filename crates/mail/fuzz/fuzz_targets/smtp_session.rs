//! Arbitrary bytes into an SMTP session, in reads of a size the first
//! byte picks, with a driver that answers every question at once (the
//! first byte also picks TLS, the verdicts and the store's answer). No
//! input may panic, and a stored message must be within the size limit,
//! have recipients and no bare CR or LF.

#![no_main]

use libfuzzer_sys::fuzz_target;
use mail::smtp::{Action, DeliveryId, Session, SessionLimits, StoreFailure, Verdict};

const MAX_SIZE: u64 = 300;

fn drain(session: &mut Session, knobs: u8) {
    while let Some(action) = session.next_action() {
        match action {
            Action::Write(bytes) => assert!(bytes.ends_with(b"\r\n")),
            Action::VerifyRecipient(_) => {
                let verdict = if knobs & 2 == 0 { Verdict::Accept } else { Verdict::NoSuchUser };
                session.recipient_verdict(verdict).unwrap();
            }
            Action::Store(delivery) => {
                let data = &delivery.data;
                assert!(data.len() as u64 <= MAX_SIZE);
                assert!(!delivery.envelope.recipients.is_empty());
                let crlf = data.windows(2).filter(|w| w == b"\r\n").count();
                assert_eq!(data.iter().filter(|&&b| b == b'\r').count(), crlf);
                assert_eq!(data.iter().filter(|&&b| b == b'\n').count(), crlf);
                let _ = mail::mime::to_document(data);
                let answer = if knobs & 4 == 0 {
                    Ok(DeliveryId::new("Q1").unwrap())
                } else {
                    Err(StoreFailure::Transient)
                };
                session.stored(answer).unwrap();
            }
            Action::StartTls => session.tls_started().unwrap(),
            Action::Close => assert!(session.is_closed()),
        }
    }
}

fuzz_target!(|data: &[u8]| {
    let Some((&knobs, input)) = data.split_first() else {
        return;
    };
    let limits = SessionLimits {
        max_message_size: MAX_SIZE,
        max_recipients: 100,
        max_line_length: 512,
        max_bad_commands: 50,
        starttls: knobs & 1 == 1,
    };
    let mut session = Session::new("mx.example.com", limits).unwrap();
    drain(&mut session, knobs);
    let read_size = usize::from(knobs >> 3) + 1;
    for read in input.chunks(read_size) {
        session.input(read);
        drain(&mut session, knobs);
    }
    session.timed_out();
    drain(&mut session, knobs);
    assert!(session.is_closed());
});
