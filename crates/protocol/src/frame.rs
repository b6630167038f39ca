//! Frames: the unit everything on a connection travels in.
//!
//! ```text
//!   0        4      5       6               10
//!   +--------+------+-------+---------------+---------------------+
//!   | length | type | flags |  request id   |  body (length - 6)  |
//!   | u32 LE |  u8  |  u8   |    u32 LE     |                     |
//!   +--------+------+-------+---------------+---------------------+
//!            \________________ length bytes ______________________/
//! ```
//!
//! Why a length prefix rather than delimiters: the reader knows how much to
//! wait for, bodies may hold any bytes (attachment chunks are raw), and a
//! length above the connection's maximum is refused from the first four
//! bytes, before anything is buffered for it. Why the request id in the
//! header rather than in the body: a driver can route a frame (or drop it)
//! without decoding the body, and raw attachment chunks need no envelope.
//!
//! [`FrameDecoder`] is the streaming half: bytes go in as they arrive from
//! the socket, in whatever pieces the reads produce, and whole frames come
//! out. Once a frame's length field is in, it reserves room for the whole
//! frame (for frames up to [`RESERVE_AHEAD_MAX`]), so a megabyte chunk
//! arriving in many socket reads lands in one buffer instead of being
//! copied through ever larger ones; a large frame gets a buffer of exactly
//! its size, so reading into it stops at its end. A peer that sends a length and then
//! nothing makes it reserve address space, never memory: pages are only
//! touched by bytes that arrive. After an error it is poisoned and keeps
//! returning that error: a stream that lost its framing cannot be trusted
//! again.

use crate::error::ProtocolError;
use crate::ids::RequestId;
use bytes::{Buf, Bytes, BytesMut};
use std::fmt;

/// Size of the length field that precedes every frame.
pub const LENGTH_LEN: usize = 4;
/// Size of the header that the length field counts: type, flags, request id.
pub const HEADER_LEN: usize = 6;
/// Default maximum frame size (the largest length field accepted): 16 MiB.
pub const DEFAULT_MAX_FRAME_SIZE: u32 = 16 << 20;
/// Frames up to this size get their whole length reserved as soon as the
/// length field arrives (module docs); longer ones grow as bytes come.
pub const RESERVE_AHEAD_MAX: usize = 4 << 20;
/// The smallest maximum frame size a connection may be configured with;
/// smaller settings are raised to it so a handshake always fits.
pub const MIN_MAX_FRAME_SIZE: u32 = 4096;

/// What a frame carries; the byte after the length field.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum FrameType {
    /// Client → server, first frame: magic, versions, compression, credentials.
    Hello = 0x01,
    /// Server → client: the handshake succeeded.
    Welcome = 0x02,
    /// Client → server: a request (the first frame of an upload).
    Request = 0x03,
    /// Server → client: the final answer to a request.
    Response = 0x04,
    /// Server → client: one streamed result of a request; more follow,
    /// then a `Response` or `Error` ends the request.
    Item = 0x05,
    /// Either way: raw bytes of an attachment being uploaded or downloaded.
    Chunk = 0x06,
    /// Client → server: the upload of this request is complete.
    End = 0x07,
    /// Server → client: the request failed (request id ≠ 0), or the
    /// connection is being closed (request id 0). Body: code and message.
    Error = 0x08,
}

impl FrameType {
    /// The type for a byte read from the wire.
    pub fn from_u8(b: u8) -> Result<FrameType, ProtocolError> {
        Ok(match b {
            0x01 => FrameType::Hello,
            0x02 => FrameType::Welcome,
            0x03 => FrameType::Request,
            0x04 => FrameType::Response,
            0x05 => FrameType::Item,
            0x06 => FrameType::Chunk,
            0x07 => FrameType::End,
            0x08 => FrameType::Error,
            other => return Err(ProtocolError::UnknownFrameType(other)),
        })
    }
}

impl fmt::Display for FrameType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self, f)
    }
}

/// The flags byte of a frame header.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Flags(u8);

impl Flags {
    /// Bit 0: the body is compressed with the connection's method.
    pub const COMPRESSED: Flags = Flags(0x01);
    /// No flag set.
    pub const NONE: Flags = Flags(0);
    const KNOWN: u8 = 0x01;

    /// Flags read from the wire; bits this version does not define are an
    /// error (they would change the meaning of the body).
    pub fn from_u8(b: u8) -> Result<Flags, ProtocolError> {
        if b & !Flags::KNOWN != 0 {
            return Err(ProtocolError::ReservedFlags(b & !Flags::KNOWN));
        }
        Ok(Flags(b))
    }

    /// The flags byte.
    pub fn bits(self) -> u8 {
        self.0
    }

    /// Whether the body is compressed.
    pub fn is_compressed(self) -> bool {
        self.0 & Flags::COMPRESSED.0 != 0
    }
}

/// One decoded frame. The body is still as sent (compressed if the flag
/// says so); the connection state machines decompress it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Frame {
    /// What the frame carries.
    pub kind: FrameType,
    /// Its flags.
    pub flags: Flags,
    /// The request it belongs to (0: the connection itself).
    pub request_id: RequestId,
    /// The body bytes.
    pub body: Bytes,
}

impl Frame {
    /// Appends the frame's bytes to `out`, refusing a frame whose length
    /// field would exceed `max_frame_size`.
    pub fn encode(&self, max_frame_size: u32, out: &mut Vec<u8>) -> Result<(), ProtocolError> {
        write_frame(
            out,
            max_frame_size,
            self.kind,
            self.flags,
            self.request_id,
            &self.body,
        )
    }
}

/// Appends one frame to `out`; the building block of every `send_*`.
pub(crate) fn write_frame(
    out: &mut Vec<u8>,
    max_frame_size: u32,
    kind: FrameType,
    flags: Flags,
    id: RequestId,
    body: &[u8],
) -> Result<(), ProtocolError> {
    out.reserve(LENGTH_LEN + HEADER_LEN + body.len());
    write_frame_head(out, max_frame_size, kind, flags, id, body.len())?;
    out.extend_from_slice(body);
    Ok(())
}

/// Appends the length field and header of a frame whose body of
/// `body_len` bytes follows separately.
pub(crate) fn write_frame_head(
    out: &mut Vec<u8>,
    max_frame_size: u32,
    kind: FrameType,
    flags: Flags,
    id: RequestId,
    body_len: usize,
) -> Result<(), ProtocolError> {
    let length = (HEADER_LEN + body_len) as u64;
    if length > u64::from(max_frame_size) {
        return Err(ProtocolError::FrameTooLarge {
            length,
            max: max_frame_size,
        });
    }
    out.extend_from_slice(&(length as u32).to_le_bytes());
    out.push(kind as u8);
    out.push(flags.bits());
    out.extend_from_slice(&id.0.to_le_bytes());
    Ok(())
}

/// Turns a byte stream into frames (see the module docs).
#[derive(Debug)]
pub struct FrameDecoder {
    buf: BytesMut,
    max_frame_size: u32,
    poisoned: Option<ProtocolError>,
}

impl FrameDecoder {
    /// A decoder refusing frames whose length field exceeds
    /// `max_frame_size` (raised to at least [`HEADER_LEN`]).
    pub fn new(max_frame_size: u32) -> FrameDecoder {
        FrameDecoder {
            buf: BytesMut::new(),
            max_frame_size: max_frame_size.max(HEADER_LEN as u32),
            poisoned: None,
        }
    }

    /// The largest length field this decoder accepts.
    pub fn max_frame_size(&self) -> u32 {
        self.max_frame_size
    }

    /// Appends bytes read from the peer. Ignored once the decoder is
    /// poisoned, so a misbehaving peer cannot make it buffer anything more.
    pub fn feed(&mut self, mut data: &[u8]) {
        if self.poisoned.is_some() {
            return;
        }
        // Complete the length field of the frame at the front, then make
        // room for the rest of that frame (module docs).
        let missing = LENGTH_LEN.saturating_sub(self.buf.len()).min(data.len());
        self.buf.extend_from_slice(&data[..missing]);
        data = &data[missing..];
        self.reserve_ahead(data.len());
        self.buf.extend_from_slice(data);
    }

    /// Room to read the next bytes from the peer into directly, instead
    /// of reading into a buffer of one's own and [`feed`](Self::feed)ing
    /// a copy: the buffer of bytes not yet returned as frames, with at
    /// least `at_least` bytes of spare capacity (more when the frame at
    /// the front needs it, as `feed` reserves). Append to it (for example
    /// with `tokio::io::AsyncReadExt::read_buf`), then take frames with
    /// [`next_frame`](Self::next_frame). A poisoned decoder hands out an
    /// emptied buffer and ignores what is put there.
    pub fn read_buffer(&mut self, at_least: usize) -> &mut BytesMut {
        if self.poisoned.is_some() {
            self.buf.clear();
        }
        if self.buf.is_empty() && self.buf.capacity() > 4 * at_least.max(1 << 12) {
            // Done with a large frame: give its room back rather than keep
            // it for an idle connection.
            self.buf = BytesMut::new();
        }
        self.reserve_ahead(at_least);
        &mut self.buf
    }

    /// Makes room for `incoming` bytes, and for the rest of the frame at
    /// the front once its length field is in (module docs).
    ///
    /// A frame whose rest is at least `incoming` gets a buffer of exactly
    /// its size when the current one lacks the room, rather than growing
    /// the current one: earlier frames may still share that allocation
    /// (growing it then means allocating anew anyway) or, unshared, it is
    /// reallocated with everything before the front frame still in it and
    /// copied whole. A fresh buffer copies only the few bytes of the front
    /// frame already in, and as it ends where the frame ends, reads into it
    /// stop at the frame's last byte.
    fn reserve_ahead(&mut self, incoming: usize) {
        let spare = self.buf.capacity() - self.buf.len();
        match self.rest_of_front_frame() {
            Some(rest) if rest >= incoming && rest > spare => {
                let mut fresh = BytesMut::with_capacity(self.buf.len() + rest);
                fresh.extend_from_slice(&self.buf);
                self.buf = fresh;
            }
            Some(rest) if rest >= incoming => {}
            // Not `reserve`: on a buffer earlier frames came from, that
            // allocates as much as the buffer once held (up to 64 KiB).
            _ if self.buf.is_empty() && spare < incoming => {
                self.buf = BytesMut::with_capacity(incoming)
            }
            _ => self.buf.reserve(incoming),
        }
    }

    /// Bytes still to come of the frame at the front, once its length
    /// field is in and if it is one whose room is reserved ahead.
    fn rest_of_front_frame(&self) -> Option<usize> {
        let length = le_u32(self.buf.get(..LENGTH_LEN)?);
        let total = LENGTH_LEN + length as usize;
        (total <= RESERVE_AHEAD_MAX && length <= self.max_frame_size)
            .then(|| total.saturating_sub(self.buf.len()))
    }

    /// Bytes fed but not yet returned as frames.
    pub fn buffered(&self) -> usize {
        self.buf.len()
    }

    /// The next complete frame, `None` if more bytes are needed, or the
    /// error that makes the stream unusable (returned again on every later
    /// call).
    pub fn next_frame(&mut self) -> Result<Option<Frame>, ProtocolError> {
        if let Some(e) = &self.poisoned {
            return Err(e.clone());
        }
        match self.parse() {
            Err(e) => {
                self.buf = BytesMut::new();
                self.poisoned = Some(e.clone());
                Err(e)
            }
            ok => ok,
        }
    }

    fn parse(&mut self) -> Result<Option<Frame>, ProtocolError> {
        let Some(prefix) = self.buf.get(..LENGTH_LEN + HEADER_LEN) else {
            // Even a short prefix is enough to refuse an absurd length.
            if let Some(len) = self.buf.get(..LENGTH_LEN) {
                self.check_length(le_u32(len))?;
            }
            return Ok(None);
        };
        let length = le_u32(&prefix[..LENGTH_LEN]);
        self.check_length(length)?;
        let kind = FrameType::from_u8(prefix[4])?;
        let flags = Flags::from_u8(prefix[5])?;
        let request_id = RequestId(le_u32(&prefix[6..10]));
        let total = LENGTH_LEN + length as usize;
        if self.buf.len() < total {
            return Ok(None);
        }
        self.buf.advance(LENGTH_LEN + HEADER_LEN);
        let body = self.buf.split_to(total - LENGTH_LEN - HEADER_LEN).freeze();
        Ok(Some(Frame {
            kind,
            flags,
            request_id,
            body,
        }))
    }

    fn check_length(&self, length: u32) -> Result<(), ProtocolError> {
        if length > self.max_frame_size {
            return Err(ProtocolError::FrameTooLarge {
                length: length.into(),
                max: self.max_frame_size,
            });
        }
        if (length as usize) < HEADER_LEN {
            return Err(ProtocolError::FrameTooShort {
                length,
                header: HEADER_LEN as u32,
            });
        }
        Ok(())
    }
}

/// A little-endian u32 from the first four bytes of `b` (callers pass
/// exactly four).
fn le_u32(b: &[u8]) -> u32 {
    let mut a = [0u8; 4];
    a.copy_from_slice(&b[..4]);
    u32::from_le_bytes(a)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn frame(kind: FrameType, id: u32, body: &[u8]) -> Frame {
        Frame {
            kind,
            flags: Flags::NONE,
            request_id: RequestId(id),
            body: Bytes::copy_from_slice(body),
        }
    }

    fn encode_all(frames: &[Frame]) -> Vec<u8> {
        let mut out = Vec::new();
        for f in frames {
            f.encode(DEFAULT_MAX_FRAME_SIZE, &mut out).unwrap();
        }
        out
    }

    fn decode_all(dec: &mut FrameDecoder) -> Vec<Frame> {
        let mut got = Vec::new();
        while let Some(f) = dec.next_frame().unwrap() {
            got.push(f);
        }
        got
    }

    #[test]
    fn layout_is_byte_exact() {
        let f = Frame {
            kind: FrameType::Request,
            flags: Flags::COMPRESSED,
            request_id: RequestId(0x0403_0201),
            body: Bytes::from_static(b"ab"),
        };
        let mut out = Vec::new();
        f.encode(DEFAULT_MAX_FRAME_SIZE, &mut out).unwrap();
        assert_eq!(
            out,
            [8, 0, 0, 0, 0x03, 0x01, 0x01, 0x02, 0x03, 0x04, b'a', b'b']
        );
    }

    #[test]
    fn several_frames_in_one_read_come_out_in_order() {
        let frames = [
            frame(FrameType::Request, 1, b"one"),
            frame(FrameType::Chunk, 1, b""),
            frame(FrameType::End, 2, &[0u8; 1000]),
        ];
        let mut dec = FrameDecoder::new(DEFAULT_MAX_FRAME_SIZE);
        dec.feed(&encode_all(&frames));
        assert_eq!(decode_all(&mut dec), frames);
        assert_eq!(dec.buffered(), 0);
    }

    #[test]
    fn every_split_point_of_a_stream_decodes_the_same_frames() {
        let frames = [
            frame(FrameType::Hello, 0, b"hello"),
            frame(FrameType::Request, 7, &[9u8; 300]),
            frame(FrameType::Error, 0, b""),
        ];
        let bytes = encode_all(&frames);
        for cut in 0..=bytes.len() {
            let mut dec = FrameDecoder::new(DEFAULT_MAX_FRAME_SIZE);
            dec.feed(&bytes[..cut]);
            let mut got = decode_all(&mut dec);
            dec.feed(&bytes[cut..]);
            got.extend(decode_all(&mut dec));
            assert_eq!(got, frames, "split at {cut}");
        }
        // And one byte at a time.
        let mut dec = FrameDecoder::new(DEFAULT_MAX_FRAME_SIZE);
        let mut got = Vec::new();
        for b in &bytes {
            dec.feed(std::slice::from_ref(b));
            got.extend(decode_all(&mut dec));
        }
        assert_eq!(got, frames);
    }

    #[test]
    fn oversize_length_is_refused_from_the_length_field_alone() {
        let mut dec = FrameDecoder::new(1024);
        dec.feed(&1025u32.to_le_bytes());
        assert_eq!(
            dec.next_frame(),
            Err(ProtocolError::FrameTooLarge {
                length: 1025,
                max: 1024
            })
        );
        // Poisoned: further bytes are not buffered, the error repeats.
        dec.feed(&[0u8; 4096]);
        assert_eq!(dec.buffered(), 0);
        assert!(matches!(
            dec.next_frame(),
            Err(ProtocolError::FrameTooLarge { .. })
        ));
        // An HTTP request on the native port is refused the same way.
        let mut dec = FrameDecoder::new(DEFAULT_MAX_FRAME_SIZE);
        dec.feed(b"GET / HTTP/1.1\r\n");
        assert!(matches!(
            dec.next_frame(),
            Err(ProtocolError::FrameTooLarge { .. })
        ));
    }

    #[test]
    fn encoding_refuses_a_frame_above_the_maximum() {
        let mut out = Vec::new();
        let f = frame(FrameType::Chunk, 1, &[0u8; 100]);
        assert!(f.encode(105, &mut out).is_err());
        assert!(out.is_empty());
        assert!(f.encode(106, &mut out).is_ok());
    }

    #[test]
    fn room_for_a_frame_is_reserved_once_its_length_is_in() {
        let body = vec![5u8; 1 << 20];
        let wire = encode_all(&[frame(FrameType::Chunk, 1, &body)]);
        let mut d = FrameDecoder::new(DEFAULT_MAX_FRAME_SIZE);
        d.feed(&wire[..2]);
        d.feed(&wire[2..100]);
        assert!(d.buf.capacity() >= wire.len(), "{}", d.buf.capacity());
        let before = d.buf.as_ptr();
        for piece in wire[100..].chunks(65_536) {
            d.feed(piece);
        }
        assert_eq!(d.buf.as_ptr(), before, "no reallocation while it arrives");
        assert_eq!(d.next_frame().unwrap().unwrap().body.len(), body.len());

        // Read into: the room ends where the frame ends, whatever was asked.
        let mut d = FrameDecoder::new(DEFAULT_MAX_FRAME_SIZE);
        d.read_buffer(4096).extend_from_slice(&wire[..4096]);
        let buf = d.read_buffer(4096);
        assert_eq!(buf.capacity() - buf.len(), wire.len() - 4096);
        buf.extend_from_slice(&wire[4096..]);
        let first = d.next_frame().unwrap().unwrap();
        // The next frame gets a buffer of its own; the first is untouched.
        d.read_buffer(4096).extend_from_slice(&wire[..100]);
        let buf = d.read_buffer(4096);
        assert_eq!(buf.capacity() - buf.len(), wire.len() - 100);
        buf.extend_from_slice(&wire[100..]);
        assert_eq!(d.next_frame().unwrap().unwrap(), first);
        assert_eq!(first.body, body);

        // Beyond the reserve-ahead size, or the connection's maximum:
        // nothing is reserved beyond what arrived.
        for (length, max) in [(8u32 << 20, DEFAULT_MAX_FRAME_SIZE), (1 << 20, 1 << 16)] {
            let mut d = FrameDecoder::new(max);
            let mut head = length.to_le_bytes().to_vec();
            head.extend_from_slice(&[FrameType::Chunk as u8, 0, 1, 0, 0, 0]);
            d.feed(&head);
            assert!(d.buf.capacity() < 1 << 16, "{length}: {}", d.buf.capacity());
        }
    }

    #[test]
    fn reading_into_the_decoder_gives_the_frames_feeding_gives() {
        let frames: Vec<Frame> = (0..5u32)
            .map(|i| frame(FrameType::Chunk, i + 1, &vec![i as u8; 70_000 * i as usize]))
            .collect();
        let wire = encode_all(&frames);
        let mut d = FrameDecoder::new(DEFAULT_MAX_FRAME_SIZE);
        let mut got = Vec::new();
        for piece in wire.chunks(12_345) {
            let buf = d.read_buffer(4096);
            assert!(buf.capacity() - buf.len() >= 4096);
            buf.extend_from_slice(piece);
            while let Some(f) = d.next_frame().unwrap() {
                got.push(f);
            }
        }
        assert_eq!(got, frames);
        // Emptied after a large frame: the room goes back.
        assert!(d.read_buffer(4096).capacity() < 1 << 16);

        let mut d = FrameDecoder::new(DEFAULT_MAX_FRAME_SIZE);
        d.feed(&[0, 0, 0, 0]);
        assert!(d.next_frame().is_err());
        d.read_buffer(16).extend_from_slice(b"ignored");
        assert!(d.next_frame().is_err(), "still poisoned");
        assert!(d.read_buffer(16).is_empty());
    }

    #[test]
    fn short_lengths_unknown_types_and_reserved_flags_are_errors() {
        for (bytes, want) in [
            (
                vec![5, 0, 0, 0],
                ProtocolError::FrameTooShort {
                    length: 5,
                    header: 6,
                },
            ),
            (
                vec![6, 0, 0, 0, 0x09, 0, 1, 0, 0, 0],
                ProtocolError::UnknownFrameType(0x09),
            ),
            (
                vec![6, 0, 0, 0, 0x03, 0x82, 1, 0, 0, 0],
                ProtocolError::ReservedFlags(0x82),
            ),
        ] {
            let mut dec = FrameDecoder::new(DEFAULT_MAX_FRAME_SIZE);
            dec.feed(&bytes);
            assert_eq!(dec.next_frame(), Err(want));
        }
    }

    proptest! {
        #[test]
        fn frames_round_trip_through_arbitrary_read_sizes(
            bodies in proptest::collection::vec(proptest::collection::vec(any::<u8>(), 0..200), 0..8),
            ids in proptest::collection::vec(any::<u32>(), 8),
            reads in proptest::collection::vec(1usize..64, 1..50),
        ) {
            let frames: Vec<Frame> = bodies
                .iter()
                .zip(&ids)
                .map(|(b, id)| frame(FrameType::Response, *id, b))
                .collect();
            let bytes = encode_all(&frames);
            let mut dec = FrameDecoder::new(DEFAULT_MAX_FRAME_SIZE);
            let mut got = Vec::new();
            let mut rest = &bytes[..];
            for n in reads.iter().cycle() {
                if rest.is_empty() {
                    break;
                }
                let (now, later) = rest.split_at((*n).min(rest.len()));
                dec.feed(now);
                got.extend(decode_all(&mut dec));
                rest = later;
            }
            prop_assert_eq!(got, frames);
        }
    }
}
