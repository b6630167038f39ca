//! Receiving the message after `354`: finding its end, undoing dot
//! stuffing, and bounding what is kept.
//!
//! The message ends at the first `CRLF . CRLF` and nowhere else (the CRLF
//! before the dot is the last line's end, and part of the message); a
//! line that starts with a dot loses that dot (RFC 5321 §4.5.2). A bare
//! LF or a bare CR anywhere is not a line end: it marks the message as
//! refused (554 after the final dot), so `LF . LF` or `LF . CRLF` can
//! never end a message here while ending it somewhere downstream (the
//! "SMTP smuggling" confusion).
//!
//! The receiver is a byte-at-a-time state machine, so a read may end
//! anywhere, even between the CR and the LF of the terminator, and the
//! result is the same as if the whole message had come in one read:
//!
//! ```text
//!   LineStart ──'.'──▶ Dot ──CR──▶ DotCr ──LF──▶ end
//!      │  ▲             └─other: drop the dot──▶ Mid
//!      CR │LF
//!      ▼  │
//!      Cr ◀──CR── Mid (bytes kept as they come)
//! ```
//!
//! Memory: bytes are kept only while the message is within
//! `max_message_size`; past it the buffer is dropped and the rest is
//! only scanned for the terminator, then refused with 552.

/// Where the receiver is within the current line.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum LineState {
    /// After a CRLF (or at the start of the data).
    LineStart,
    /// A dot at the start of a line.
    Dot,
    /// A dot and a CR at the start of a line.
    DotCr,
    /// Inside a line.
    Mid,
    /// After a CR inside a line (or at its start).
    Cr,
}

/// How a message's data ended.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum DataEnd {
    /// The message, dot-unstuffed, within the size limit.
    Complete(Vec<u8>),
    /// It grew past the size limit; nothing of it was kept.
    TooBig,
    /// It held a bare CR or LF.
    BareNewline,
}

pub(crate) struct DataReceiver {
    state: LineState,
    kept: Vec<u8>,
    size: u64,
    max_size: u64,
    bare_newline: bool,
}

impl DataReceiver {
    pub(crate) fn new(max_size: u64) -> DataReceiver {
        DataReceiver {
            state: LineState::LineStart,
            kept: Vec::new(),
            size: 0,
            max_size,
            bare_newline: false,
        }
    }

    fn oversized(&self) -> bool {
        self.size > self.max_size
    }

    /// Adds message bytes, dropping everything once the limit is passed.
    fn keep(&mut self, bytes: &[u8]) {
        self.size = self.size.saturating_add(bytes.len() as u64);
        if self.oversized() {
            self.kept = Vec::new();
        } else {
            self.kept.extend_from_slice(bytes);
        }
    }

    fn bare(&mut self, bytes: &[u8]) {
        self.bare_newline = true;
        self.keep(bytes);
    }

    /// Consumes `input` up to and including the terminator. Returns how
    /// many bytes were consumed and, when the terminator was among them,
    /// how the message ended; bytes after it are the next command's.
    pub(crate) fn feed(&mut self, input: &[u8]) -> (usize, Option<DataEnd>) {
        let mut i = 0;
        while i < input.len() {
            let b = input[i];
            match self.state {
                LineState::Mid => {
                    let rest = &input[i..];
                    let run = rest
                        .iter()
                        .position(|&c| c == b'\r' || c == b'\n')
                        .unwrap_or(rest.len());
                    self.keep(&rest[..run]);
                    i += run;
                    match input.get(i) {
                        Some(b'\r') => self.state = LineState::Cr,
                        Some(_) => self.bare(b"\n"),
                        None => break,
                    }
                }
                LineState::LineStart => {
                    self.state = match b {
                        b'.' => LineState::Dot,
                        b'\r' => LineState::Cr,
                        _ => LineState::Mid,
                    };
                    if b == b'\n' {
                        self.bare(b"\n");
                    } else if b != b'.' && b != b'\r' {
                        self.keep(&[b]);
                    }
                }
                LineState::Dot => {
                    // The leading dot is dropped whatever follows it.
                    self.state = match b {
                        b'\r' => LineState::DotCr,
                        _ => LineState::Mid,
                    };
                    if b == b'\n' {
                        self.bare(b"\n");
                    } else if b != b'\r' {
                        self.keep(&[b]);
                    }
                }
                LineState::DotCr => {
                    if b == b'\n' {
                        return (i + 1, Some(self.finish()));
                    }
                    // A bare CR after a leading dot; `b` is read again as
                    // an ordinary byte.
                    self.bare(b"\r");
                    self.state = LineState::Mid;
                    continue;
                }
                LineState::Cr => {
                    if b == b'\n' {
                        self.keep(b"\r\n");
                        self.state = LineState::LineStart;
                    } else {
                        self.bare(b"\r");
                        self.state = LineState::Mid;
                        continue;
                    }
                }
            }
            i += 1;
        }
        (input.len(), None)
    }

    fn finish(&mut self) -> DataEnd {
        if self.oversized() {
            DataEnd::TooBig
        } else if self.bare_newline {
            DataEnd::BareNewline
        } else {
            DataEnd::Complete(std::mem::take(&mut self.kept))
        }
    }

    /// Bytes held now (bounded by the size limit).
    #[cfg(test)]
    fn held(&self) -> usize {
        self.kept.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn receive(max: u64, input: &[u8]) -> (usize, Option<DataEnd>) {
        DataReceiver::new(max).feed(input)
    }

    fn complete(input: &[u8]) -> Vec<u8> {
        match receive(1 << 20, input) {
            (_, Some(DataEnd::Complete(message))) => message,
            other => panic!("{input:?}: {other:?}"),
        }
    }

    #[test]
    fn ends_at_crlf_dot_crlf_and_keeps_the_last_line_end() {
        assert_eq!(
            complete(b"Subject: x\r\n\r\nhi\r\n.\r\n"),
            b"Subject: x\r\n\r\nhi\r\n"
        );
        let (used, end) = receive(100, b"a\r\n.\r\nQUIT\r\n");
        assert_eq!(used, 6);
        assert_eq!(end, Some(DataEnd::Complete(b"a\r\n".to_vec())));
    }

    #[test]
    fn an_empty_message() {
        assert_eq!(complete(b".\r\n"), b"");
    }

    #[test]
    fn dot_unstuffing() {
        assert_eq!(
            complete(b"..\r\n...x\r\n.y\r\nz.\r\n.\r\n"),
            b".\r\n..x\r\ny\r\nz.\r\n"
        );
    }

    #[test]
    fn no_terminator_no_end() {
        for input in [
            &b"a\r\n."[..],
            b"a\r\n.\r",
            b"a\r\n",
            b"a.\r\n",
            b"a\r\n .\r\n",
        ] {
            assert_eq!(receive(100, input), (input.len(), None), "{input:?}");
        }
    }

    #[test]
    fn bare_newlines_never_end_and_are_refused() {
        for body in [
            &b"a\n.\n"[..],
            b"a\n.\r\n",
            b"a\r\n.\n",
            b"a\r.\r\n",
            b"a\rb",
            b"\n.",
            b".\r.",
        ] {
            assert_eq!(receive(100, body), (body.len(), None), "{body:?}");
            let mut input = body.to_vec();
            input.extend_from_slice(b"\r\n.\r\n");
            assert_eq!(
                receive(100, &input),
                (input.len(), Some(DataEnd::BareNewline)),
                "{body:?}"
            );
        }
    }

    #[test]
    fn oversized_messages_are_dropped_as_they_come() {
        let mut receiver = DataReceiver::new(10);
        assert_eq!(receiver.feed(b"0123456789"), (10, None));
        assert_eq!(receiver.held(), 10);
        assert_eq!(receiver.feed(b"\r\nmore and more"), (15, None));
        assert_eq!(receiver.held(), 0);
        assert_eq!(receiver.feed(b"\r\n.\r\n"), (5, Some(DataEnd::TooBig)));
        // Exactly at the limit is accepted.
        assert_eq!(
            receive(5, b"abc\r\n.\r\n").1,
            Some(DataEnd::Complete(b"abc\r\n".to_vec()))
        );
    }

    proptest! {
        #[test]
        fn any_split_gives_the_same_end(
            input in proptest::collection::vec(
                prop_oneof![Just(b'\r'), Just(b'\n'), Just(b'.'), Just(b'a')], 0..40),
            cut in 0usize..41,
        ) {
            let mut data = input.clone();
            data.extend_from_slice(b"\r\n.\r\n");
            let cut = cut.min(data.len());
            let whole = receive(8, &data);
            let mut receiver = DataReceiver::new(8);
            let (first, end) = receiver.feed(&data[..cut]);
            let split = match end {
                Some(end) => (first, Some(end)),
                None => {
                    let (second, end) = receiver.feed(&data[cut..]);
                    (first + second, end)
                }
            };
            prop_assert_eq!(whole, split);
        }
    }
}
