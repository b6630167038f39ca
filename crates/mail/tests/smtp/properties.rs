//! Properties over arbitrary input: the session's replies do not depend
//! on how the input was split into reads, no input makes it panic, and a
//! message is stored only when its DATA ended properly within the size
//! limit, exactly as the client meant it.

use crate::driver::Driver;
use mail::smtp::{Delivery, SessionLimits};
use proptest::prelude::*;

const MAX_SIZE: u64 = 200;

fn test_limits() -> SessionLimits {
    SessionLimits {
        max_message_size: MAX_SIZE,
        max_recipients: 100,
        max_line_length: 512,
        max_bad_commands: 20,
        // STARTTLS is left out: where the clear text ends depends on when
        // the handshake happens, which is the one thing a split changes.
        starttls: false,
        ..SessionLimits::default()
    }
}

/// Pieces of conversations, good and bad, that meet in every order.
fn fragment() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        4 => prop::sample::select(vec![
            "EHLO client.example.org\r\n",
            "HELO client\r\n",
            "MAIL FROM:<a@b.org>\r\n",
            "MAIL FROM:<>\r\n",
            "MAIL FROM:<a@b.org> SIZE=5000\r\n",
            "MAIL FROM:<a@b.org> BODY=8BITMIME\r\n",
            "RCPT TO:<alice@example.com>\r\n",
            "RCPT TO:<nobody@example.com>\r\n",
            "RCPT TO:<later@example.com>\r\n",
            "RCPT TO:<Postmaster>\r\n",
            "DATA\r\n",
            "RSET\r\n",
            "NOOP\r\n",
            "STARTTLS\r\n",
            "VRFY x\r\n",
            "Subject: hello\r\n",
            "..stuffed\r\n",
            ".\r\n",
            "\r\n.\r\n",
            "\r\n",
            "\n",
            "\r",
            ".",
        ])
        .prop_map(|s| s.as_bytes().to_vec()),
        1 => Just(b"QUIT\r\n".to_vec()),
        1 => Just(vec![b'x'; 600]),
        1 => Just(vec![b'y'; 150]),
        2 => prop::collection::vec(any::<u8>(), 0..24),
    ]
}

fn conversation() -> impl Strategy<Value = Vec<u8>> {
    prop::collection::vec(fragment(), 0..40).prop_map(|parts| parts.concat())
}

/// Everything observable about a run.
#[derive(Debug, PartialEq)]
struct Outcome {
    written: Vec<u8>,
    stored: Vec<Delivery>,
    asked: usize,
    closed: bool,
}

fn run(input: &[u8], cuts: &[usize]) -> Outcome {
    let mut d = Driver::new(test_limits());
    let mut start = 0;
    let mut cuts: Vec<usize> = cuts.iter().map(|&c| c.min(input.len())).collect();
    cuts.sort_unstable();
    cuts.push(input.len());
    for cut in cuts {
        d.send(&input[start..cut]);
        start = cut;
    }
    Outcome {
        written: d.written,
        stored: d.stored,
        asked: d.asked.len(),
        closed: d.closed,
    }
}

fn count(haystack: &[u8], needle: &[u8]) -> usize {
    haystack
        .windows(needle.len())
        .filter(|w| *w == needle)
        .count()
}

/// A message a client could mean: lines without CR or LF, each ended by
/// CRLF.
fn message_lines() -> impl Strategy<Value = Vec<Vec<u8>>> {
    let byte = any::<u8>().prop_filter("no line ends", |b| *b != b'\r' && *b != b'\n');
    let line = prop_oneof![
        3 => prop::collection::vec(byte, 0..60),
        1 => prop::collection::vec(prop::sample::select(vec![b'.', b'a']), 0..4),
    ];
    prop::collection::vec(line, 0..12)
}

const TRANSACTION: &[u8] =
    b"EHLO c.example.org\r\nMAIL FROM:<a@b.org>\r\nRCPT TO:<alice@example.com>\r\nDATA\r\n";

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn replies_do_not_depend_on_how_input_is_split(
        input in conversation(),
        cuts in prop::collection::vec(0usize..4000, 0..12),
    ) {
        prop_assert_eq!(run(&input, &cuts), run(&input, &[]));
    }

    #[test]
    fn byte_at_a_time_is_the_same_as_all_at_once(input in conversation()) {
        let every: Vec<usize> = (0..input.len()).collect();
        prop_assert_eq!(run(&input, &every), run(&input, &[]));
    }

    #[test]
    fn arbitrary_input_stores_only_well_formed_messages(
        noise in prop::collection::vec(any::<u8>(), 0..2000),
        input in conversation(),
    ) {
        let input = [input, noise].concat();
        let mut d = Driver::new(test_limits());
        d.send(&input);
        d.session.timed_out();
        d.drain();
        prop_assert!(d.closed);
        prop_assert!(d.stored.len() <= count(&input, b"\r\n.\r\n"));
        for delivery in &d.stored {
            let data = &delivery.data;
            prop_assert!(data.len() as u64 <= MAX_SIZE);
            prop_assert!(data.is_empty() || data.ends_with(b"\r\n"));
            prop_assert_eq!(count(data, b"\r"), count(data, b"\r\n"), "no bare CR");
            prop_assert_eq!(count(data, b"\n"), count(data, b"\r\n"), "no bare LF");
            prop_assert!(!delivery.envelope.recipients.is_empty());
        }
    }

    #[test]
    fn an_unterminated_message_is_never_stored(
        body in prop::collection::vec(
            prop_oneof![Just(b'\r'), Just(b'\n'), Just(b'.'), any::<u8>()], 0..600),
        cuts in prop::collection::vec(0usize..700, 0..6),
    ) {
        let input = [TRANSACTION, &body].concat();
        prop_assume!(count(&input, b"\r\n.\r\n") == 0);
        let mut d = Driver::new(test_limits());
        let mut start = 0;
        let mut cuts: Vec<usize> = cuts.iter().map(|&c| c.min(input.len())).collect();
        cuts.sort_unstable();
        cuts.push(input.len());
        for cut in cuts {
            d.send(&input[start..cut]);
            start = cut;
        }
        prop_assert!(d.stored.is_empty());
        d.session.timed_out();
        d.drain();
        prop_assert!(d.stored.is_empty());
    }

    #[test]
    fn a_dot_stuffed_message_arrives_as_meant_or_is_552(lines in message_lines()) {
        let meant: Vec<u8> = lines.iter().flat_map(|l| [l.as_slice(), b"\r\n"].concat()).collect();
        let stuffed: Vec<u8> = lines
            .iter()
            .flat_map(|l| {
                let dot: &[u8] = if l.first() == Some(&b'.') { b"." } else { b"" };
                [dot, l.as_slice(), b"\r\n"].concat()
            })
            .collect();
        let mut d = Driver::new(test_limits());
        d.send(TRANSACTION);
        let out = d.send([stuffed.as_slice(), b".\r\n"].concat());
        if meant.len() as u64 <= MAX_SIZE {
            prop_assert_eq!(&out, "250 OK queued as Q1-1\r\n");
            prop_assert_eq!(&d.stored[0].data, &meant);
        } else {
            prop_assert!(out.starts_with("552 "), "{}", out);
            prop_assert!(d.stored.is_empty());
        }
    }
}
