//! The part of a connection both sides share: incoming bytes to frames,
//! frames to outgoing bytes, and the negotiated compression in between.
//!
//! Outgoing frames are appended to one buffer that the driver takes and
//! writes to its socket; keeping it inside the state machine (rather than
//! returning bytes from each call) is what lets `receive` answer a broken
//! stream with an error frame of its own. A body the caller already holds
//! as `Bytes` (an upload chunk) can be queued without a copy: the output
//! then becomes a list of segments, the bytes before the body, the body
//! itself, and so on, which a driver writes in order (vectored, ideally). Only the bodies of frames that
//! can be large (`Request`, `Response`, `Item`, `Chunk`) are ever
//! compressed; handshake and error frames never are, so they stay readable
//! whatever was negotiated.

use crate::compress::{BodyCodec, Compression, ZstdLevel};
use crate::error::ProtocolError;
use crate::frame::{
    write_frame, write_frame_head, Flags, Frame, FrameDecoder, FrameType, HEADER_LEN,
};
use crate::ids::RequestId;
use crate::message::Failure;
use bytes::Bytes;
use std::collections::VecDeque;

/// Frame decoder, output buffer and compression of one connection.
#[derive(Debug)]
pub(crate) struct Wire {
    decoder: FrameDecoder,
    /// Output queued ahead of `out`, in order (module docs).
    segments: VecDeque<Bytes>,
    segments_len: usize,
    out: Vec<u8>,
    codec: BodyCodec,
    threshold: usize,
}

impl Wire {
    /// A wire with no compression until [`Wire::start_compression`].
    pub(crate) fn new(max_frame_size: u32, threshold: usize) -> Wire {
        Wire {
            decoder: FrameDecoder::new(max_frame_size),
            segments: VecDeque::new(),
            segments_len: 0,
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

    /// Switches both directions to `method` (after the handshake), this
    /// side's zstd compressing at `level`.
    pub(crate) fn start_compression(&mut self, method: Compression, level: ZstdLevel) {
        self.codec = BodyCodec::with_level(method, self.threshold, level);
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

    /// [`send`](Self::send) for a body held as `Bytes`: unless it is
    /// compressed, it is queued as it is, not copied (module docs).
    pub(crate) fn send_shared(
        &mut self,
        kind: FrameType,
        id: RequestId,
        body: Bytes,
    ) -> Result<(), ProtocolError> {
        if compressible(kind) && self.codec.would_compress(body.len()) {
            return self.send(kind, id, &body);
        }
        let max = self.max_frame_size();
        write_frame_head(&mut self.out, max, kind, Flags::NONE, id, body.len())?;
        let head = Bytes::from(std::mem::take(&mut self.out));
        self.push_segment(head);
        self.push_segment(body);
        Ok(())
    }

    fn push_segment(&mut self, bytes: Bytes) {
        if !bytes.is_empty() {
            self.segments_len += bytes.len();
            self.segments.push_back(bytes);
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

    /// Everything queued, as one buffer (copying any shared bodies).
    pub(crate) fn take_output(&mut self) -> Vec<u8> {
        if self.segments.is_empty() {
            return std::mem::take(&mut self.out);
        }
        let mut all = Vec::with_capacity(self.output_len());
        for s in self.take_output_segments() {
            all.extend_from_slice(&s);
        }
        all
    }

    /// Everything queued, as the segments to write in order.
    pub(crate) fn take_output_segments(&mut self) -> VecDeque<Bytes> {
        let tail = Bytes::from(std::mem::take(&mut self.out));
        self.push_segment(tail);
        self.segments_len = 0;
        std::mem::take(&mut self.segments)
    }

    pub(crate) fn output_len(&self) -> usize {
        self.segments_len + self.out.len()
    }
}

/// Whether frames of this type may have compressed bodies.
fn compressible(kind: FrameType) -> bool {
    matches!(
        kind,
        FrameType::Request | FrameType::Response | FrameType::Item | FrameType::Chunk
    )
}
