//! The part of a connection both sides share: incoming bytes to frames,
//! frames to outgoing bytes, and the negotiated compression in between.
//!
//! Outgoing frames are appended to one buffer that the driver takes and
//! writes to its socket; keeping it inside the state machine (rather than
//! returning bytes from each call) is what lets `receive` answer a broken
//! stream with an error frame of its own. Only the bodies of frames that
//! can be large (`Request`, `Response`, `Item`, `Chunk`) are ever
//! compressed; handshake and error frames never are, so they stay readable
//! whatever was negotiated.

use crate::compress::{BodyCodec, Compression};
use crate::error::ProtocolError;
use crate::frame::{write_frame, Flags, Frame, FrameDecoder, FrameType, HEADER_LEN};
use crate::ids::RequestId;
use crate::message::Failure;
use bytes::Bytes;

/// Frame decoder, output buffer and compression of one connection.
#[derive(Debug)]
pub(crate) struct Wire {
    decoder: FrameDecoder,
    out: Vec<u8>,
    codec: BodyCodec,
    threshold: usize,
}

impl Wire {
    /// A wire with no compression until [`Wire::start_compression`].
    pub(crate) fn new(max_frame_size: u32, threshold: usize) -> Wire {
        Wire {
            decoder: FrameDecoder::new(max_frame_size),
            out: Vec::new(),
            codec: BodyCodec::new(Compression::Off, threshold),
            threshold,
        }
    }

    pub(crate) fn max_frame_size(&self) -> u32 {
        self.decoder.max_frame_size()
    }

    /// The largest body a frame may carry.
    pub(crate) fn max_body(&self) -> usize {
        self.max_frame_size() as usize - HEADER_LEN
    }

    /// Switches both directions to `method` (after the handshake).
    pub(crate) fn start_compression(&mut self, method: Compression) {
        self.codec = BodyCodec::new(method, self.threshold);
    }

    pub(crate) fn compression(&self) -> Compression {
        self.codec.method()
    }

    pub(crate) fn feed(&mut self, bytes: &[u8]) {
        self.decoder.feed(bytes);
    }

    pub(crate) fn read_buffer(&mut self, at_least: usize) -> &mut bytes::BytesMut {
        self.decoder.read_buffer(at_least)
    }

    pub(crate) fn next_frame(&mut self) -> Result<Option<Frame>, ProtocolError> {
        self.decoder.next_frame()
    }

    /// Queues one frame, compressing its body when that is allowed and
    /// pays. Nothing is queued if the frame would be too large.
    pub(crate) fn send(
        &mut self,
        kind: FrameType,
        id: RequestId,
        body: &[u8],
    ) -> Result<(), ProtocolError> {
        let max = self.max_frame_size();
        let compressed = if compressible(kind) {
            self.codec.compress(body)
        } else {
            None
        };
        match compressed {
            Some(z) => write_frame(&mut self.out, max, kind, Flags::COMPRESSED, id, &z),
            None => write_frame(&mut self.out, max, kind, Flags::NONE, id, body),
        }
    }

    /// Queues an error frame (never compressed, message already bounded).
    pub(crate) fn send_failure(&mut self, id: RequestId, failure: &Failure) {
        let body = failure.encode();
        let max = self.max_frame_size();
        // A failure's body is at most 2 + MAX_ERROR_MESSAGE bytes, below
        // the smallest maximum frame size, so this cannot fail; should it
        // ever, the peer still sees the connection close.
        let _ = write_frame(&mut self.out, max, FrameType::Error, Flags::NONE, id, &body);
    }

    /// A frame's body as sent before compression.
    pub(crate) fn open(&mut self, frame: &Frame) -> Result<Bytes, ProtocolError> {
        if !frame.flags.is_compressed() {
            return Ok(frame.body.clone());
        }
        if !compressible(frame.kind) || self.codec.method() == Compression::Off {
            return Err(ProtocolError::UnexpectedCompression(frame.kind));
        }
        let max = self.max_body();
        self.codec.decompress(&frame.body, max).map(Bytes::from)
    }

    pub(crate) fn take_output(&mut self) -> Vec<u8> {
        std::mem::take(&mut self.out)
    }

    pub(crate) fn output_len(&self) -> usize {
        self.out.len()
    }
}

/// Whether frames of this type may have compressed bodies.
fn compressible(kind: FrameType) -> bool {
    matches!(
        kind,
        FrameType::Request | FrameType::Response | FrameType::Item | FrameType::Chunk
    )
}
