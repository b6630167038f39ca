//! The client side of a connection, as a state machine with no I/O.
//!
//! ```text
//!   new(config)       Welcome                  error frame (id 0),
//!   queues Hello ─▶ Handshaking ───────▶ Open ──────────────────────▶ Closed
//!                       │                 ▲ │  any violation
//!                       └─────────────────┼─┴─────────────────────────▶
//!                                         └ requests, answers (pipelined)
//! ```
//!
//! The client library (sync or async) writes what [`ClientConnection::
//! take_output`] returns and feeds what it reads to
//! [`ClientConnection::receive`]. Request ids are allocated here, so a
//! caller can pipeline freely: send many requests, then match answers by
//! id as they come, in any order. The state machine checks the server as
//! strictly as the server checks the client: a Welcome naming a version
//! or compression the client never offered, an answer to a request not in
//! flight, an item for a request that does not stream, are protocol
//! violations that close the connection with an error frame.

use crate::compress::{Compression, ZstdLevel, DEFAULT_COMPRESSION_THRESHOLD};
use crate::error::{ErrorCode, ProtocolError};
use crate::frame::{Frame, FrameType, DEFAULT_MAX_FRAME_SIZE, MIN_MAX_FRAME_SIZE};
use crate::handshake::{Credentials, Hello, Welcome, SUPPORTED_VERSIONS};
use crate::ids::{RequestId, SessionId};
use crate::message::{Failure, Request, Response, Shape};
use crate::state::{InFlight, Phase};
use crate::wire::Wire;
use bytes::Bytes;
use std::ops::RangeInclusive;

/// Settings of the client side of a connection.
#[derive(Clone, Debug)]
pub struct ClientConfig {
    /// Sent in the Hello, for the server's logs and statistics.
    pub client_name: String,
    /// Protocol versions offered.
    pub versions: RangeInclusive<u16>,
    /// Compression methods accepted, most preferred first (default:
    /// strong, then fast; a client on loopback gains nothing from
    /// compression and should offer only `Off`).
    pub compression: Vec<Compression>,
    /// Who to log in as; `None` for anonymous access.
    pub credentials: Option<Credentials>,
    /// Bodies shorter than this are never compressed.
    pub compression_threshold: usize,
    /// Largest frame accepted or sent (its length field), raised to at
    /// least [`MIN_MAX_FRAME_SIZE`].
    pub max_frame_size: u32,
    /// The zstd level asked of the server and used by this side when the
    /// connection settles on zstd; `None` leaves it to the server (3).
    pub strong_level: Option<ZstdLevel>,
}

impl Default for ClientConfig {
    fn default() -> Self {
        ClientConfig {
            client_name: concat!("folio-client ", env!("CARGO_PKG_VERSION")).into(),
            versions: SUPPORTED_VERSIONS,
            // Measured (docs/protocol.md §4.1): zstd moves the most data
            // over links up to 100 Mbit/s and about as much as LZ4 at
            // 1 Gbit/s; LZ4 is the fallback for servers enabling only it.
            compression: vec![Compression::Strong, Compression::Fast],
            credentials: None,
            compression_threshold: DEFAULT_COMPRESSION_THRESHOLD,
            max_frame_size: DEFAULT_MAX_FRAME_SIZE,
            strong_level: None,
        }
    }
}

/// What the server's bytes said.
#[derive(Clone, Debug, PartialEq)]
pub enum ClientEvent {
    /// The handshake succeeded; requests may be sent.
    Connected(Welcome),
    /// The final answer to request `id`.
    Response {
        /// The request.
        id: RequestId,
        /// The answer.
        response: Response,
    },
    /// A streamed result of request `id`; more follow.
    Item {
        /// The request.
        id: RequestId,
        /// The result.
        item: Response,
    },
    /// Attachment bytes of download `id`, in order.
    Chunk {
        /// The request.
        id: RequestId,
        /// The bytes.
        data: Bytes,
    },
    /// Request `id` failed; it is no longer in flight.
    Failed {
        /// The request.
        id: RequestId,
        /// Why, as a code.
        code: ErrorCode,
        /// Why, in words.
        message: String,
    },
    /// The server closed the connection (refused the handshake, shut
    /// down, or found a violation).
    Closed {
        /// Its code.
        code: ErrorCode,
        /// Its message.
        message: String,
    },
}

/// The client side of one connection (see the module docs).
#[derive(Debug)]
pub struct ClientConnection {
    config: ClientConfig,
    wire: Wire,
    phase: Phase,
    welcome: Option<Welcome>,
    in_flight: InFlight,
    next_id: u32,
}

impl ClientConnection {
    /// A new connection with its Hello queued in the output.
    pub fn new(mut config: ClientConfig) -> Result<ClientConnection, ProtocolError> {
        config.max_frame_size = config.max_frame_size.max(MIN_MAX_FRAME_SIZE);
        let mut wire = Wire::new(config.max_frame_size, config.compression_threshold);
        let hello = Hello {
            versions: config.versions.clone(),
            client_name: config.client_name.clone(),
            compression: config.compression.clone(),
            credentials: config.credentials.clone(),
            strong_level: config.strong_level,
        };
        wire.send(FrameType::Hello, RequestId::CONNECTION, &hello.encode()?)?;
        Ok(ClientConnection {
            config,
            wire,
            phase: Phase::Handshaking,
            welcome: None,
            in_flight: InFlight::default(),
            next_id: 1,
        })
    }

    /// Where the connection is in its life.
    pub fn phase(&self) -> Phase {
        self.phase
    }

    /// The server's Welcome, once connected.
    pub fn welcome(&self) -> Option<&Welcome> {
        self.welcome.as_ref()
    }

    /// The session the server created, once connected.
    pub fn session(&self) -> Option<SessionId> {
        self.welcome.as_ref().map(|w| w.session)
    }

    /// Number of requests in flight.
    pub fn in_flight(&self) -> usize {
        self.in_flight.len()
    }

    /// Takes the bytes queued for the server, as one buffer.
    pub fn take_output(&mut self) -> Vec<u8> {
        self.wire.take_output()
    }

    /// Takes the bytes queued for the server as segments to write in
    /// order: chunks queued with [`send_chunk_shared`](Self::send_chunk_shared)
    /// come out as they went in, without a copy.
    pub fn take_output_segments(&mut self) -> std::collections::VecDeque<bytes::Bytes> {
        self.wire.take_output_segments()
    }

    /// Number of bytes queued for the server.
    pub fn output_len(&self) -> usize {
        self.wire.output_len()
    }

    /// Feeds bytes read from the server; returns what they said. On a
    /// violation an error frame is queued, the connection is closed and
    /// the error returned; after that, only [`ProtocolError::Closed`].
    pub fn receive(&mut self, bytes: &[u8]) -> Result<Vec<ClientEvent>, ProtocolError> {
        if self.phase == Phase::Closed {
            return Err(ProtocolError::Closed);
        }
        self.wire.feed(bytes);
        let mut events = Vec::new();
        while self.phase != Phase::Closed {
            let step = match self.wire.next_frame() {
                Ok(None) => break,
                Ok(Some(frame)) => self.handle(frame, &mut events),
                Err(e) => Err(e),
            };
            if let Err(e) = step {
                self.phase = Phase::Closed;
                self.wire.send_failure(
                    RequestId::CONNECTION,
                    &Failure::new(e.code(), &e.to_string()),
                );
                return Err(e);
            }
        }
        Ok(events)
    }

    fn handle(&mut self, frame: Frame, events: &mut Vec<ClientEvent>) -> Result<(), ProtocolError> {
        let id = frame.request_id;
        match (self.phase, frame.kind) {
            (_, FrameType::Error) if id == RequestId::CONNECTION => {
                let f = Failure::decode(&self.wire.open(&frame)?)?;
                self.phase = Phase::Closed;
                events.push(ClientEvent::Closed {
                    code: f.code,
                    message: f.message,
                });
            }
            (Phase::Handshaking, FrameType::Welcome) if id == RequestId::CONNECTION => {
                let welcome = Welcome::decode(&self.wire.open(&frame)?)?;
                let welcome = self.check_welcome(welcome)?;
                // The level asked for, which the Welcome echoes when the
                // server heard it (the client library checks that).
                let level = self.config.strong_level.unwrap_or_default();
                self.wire.start_compression(welcome.compression, level);
                self.welcome = Some(welcome.clone());
                self.phase = Phase::Open;
                events.push(ClientEvent::Connected(welcome));
            }
            (Phase::Open, FrameType::Response) => {
                self.in_flight
                    .check(frame.kind, id, "awaiting its answer", |p| !p.answered)?;
                let response = Response::decode(&self.wire.open(&frame)?, frame.kind)?;
                self.in_flight.answer(id);
                events.push(ClientEvent::Response { id, response });
            }
            (Phase::Open, FrameType::Error) => {
                self.in_flight
                    .check(frame.kind, id, "awaiting its answer", |p| !p.answered)?;
                let f = Failure::decode(&self.wire.open(&frame)?)?;
                self.in_flight.answer(id);
                events.push(ClientEvent::Failed {
                    id,
                    code: f.code,
                    message: f.message,
                });
            }
            (Phase::Open, FrameType::Item) => {
                self.in_flight
                    .check(frame.kind, id, "a search or download", |p| {
                        !p.answered && matches!(p.shape, Shape::Stream | Shape::Download)
                    })?;
                let item = Response::decode(&self.wire.open(&frame)?, frame.kind)?;
                events.push(ClientEvent::Item { id, item });
            }
            (Phase::Open, FrameType::Chunk) => {
                self.in_flight.check(frame.kind, id, "a download", |p| {
                    !p.answered && p.shape == Shape::Download
                })?;
                let data = self.wire.open(&frame)?;
                events.push(ClientEvent::Chunk { id, data });
            }
            (phase, kind) => {
                return Err(ProtocolError::UnexpectedFrame {
                    frame: kind,
                    state: phase.describe(),
                })
            }
        }
        Ok(())
    }

    /// The Welcome, if it chose what the client offered.
    fn check_welcome(&self, w: Welcome) -> Result<Welcome, ProtocolError> {
        if !self.config.versions.contains(&w.version) {
            return Err(ProtocolError::BadChoice {
                what: format!("protocol version {}", w.version),
            });
        }
        if w.compression != Compression::Off && !self.config.compression.contains(&w.compression) {
            return Err(ProtocolError::BadChoice {
                what: format!("compression {}", w.compression),
            });
        }
        Ok(w)
    }

    /// Queues a request and returns its id. For `PutAttachment`, follow
    /// with [`send_chunk`](Self::send_chunk)s and one
    /// [`send_end`](Self::send_end). Nothing is queued if the request does
    /// not fit in a frame.
    pub fn send_request(&mut self, request: &Request) -> Result<RequestId, ProtocolError> {
        self.require_open()?;
        let body = request.encode()?;
        let id = self.free_id();
        self.wire.send(FrameType::Request, id, &body)?;
        self.in_flight.open(id, request.shape())?;
        Ok(id)
    }

    /// Queues bytes of upload `id`, split into as many frames as the
    /// maximum frame size needs. If the server already answered (refused)
    /// the upload, the bytes are not sent; end it with `send_end`.
    pub fn send_chunk(&mut self, id: RequestId, data: &[u8]) -> Result<(), ProtocolError> {
        self.require_open()?;
        let p = self.upload(id)?;
        if p.answered {
            return Ok(());
        }
        for piece in data.chunks(self.wire.max_body().max(1)) {
            self.wire.send(FrameType::Chunk, id, piece)?;
        }
        Ok(())
    }

    /// [`send_chunk`](Self::send_chunk) for bytes held as `Bytes`: queued
    /// without a copy unless compressed (take them with
    /// [`take_output_segments`](Self::take_output_segments)).
    pub fn send_chunk_shared(&mut self, id: RequestId, data: Bytes) -> Result<(), ProtocolError> {
        self.require_open()?;
        let p = self.upload(id)?;
        if p.answered {
            return Ok(());
        }
        let step = self.wire.max_body().max(1);
        let mut at = 0;
        while at < data.len() {
            let end = (at + step).min(data.len());
            self.wire
                .send_shared(FrameType::Chunk, id, data.slice(at..end))?;
            at = end;
        }
        Ok(())
    }

    /// Ends upload `id`; its answer follows.
    pub fn send_end(&mut self, id: RequestId) -> Result<(), ProtocolError> {
        self.require_open()?;
        self.upload(id)?;
        self.wire.send(FrameType::End, id, &[])?;
        self.in_flight.end_upload(id);
        Ok(())
    }

    /// Closes the connection, telling the server why (an error frame with
    /// request id 0), unless already closed.
    pub fn close(&mut self, code: ErrorCode, reason: &str) {
        if self.phase != Phase::Closed {
            self.wire
                .send_failure(RequestId::CONNECTION, &Failure::new(code, reason));
            self.phase = Phase::Closed;
        }
    }

    fn upload(&self, id: RequestId) -> Result<crate::state::Pending, ProtocolError> {
        self.in_flight
            .check(FrameType::Chunk, id, "an upload in progress", |p| {
                p.uploading
            })
            .map_err(|e| ProtocolError::Misuse(e.to_string()))
    }

    fn require_open(&self) -> Result<(), ProtocolError> {
        match self.phase {
            Phase::Open => Ok(()),
            Phase::Closed => Err(ProtocolError::Closed),
            phase => Err(ProtocolError::Misuse(format!(
                "requests wait for the Welcome ({})",
                phase.describe()
            ))),
        }
    }

    /// The next request id that is neither 0 nor in flight.
    fn free_id(&mut self) -> RequestId {
        loop {
            let id = RequestId(self.next_id);
            self.next_id = self.next_id.wrapping_add(1);
            if id != RequestId::CONNECTION && !self.in_flight.contains(id) {
                return id;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::frame::FrameDecoder;
    use crate::ids::{DbHandle, Unid};
    use crate::testkit::{raw, Pair};
    use crate::{ServerConfig, ServerConnection, ServerEvent};

    fn welcome_bytes(version: u16, compression: Compression) -> Vec<u8> {
        let w = Welcome {
            version,
            compression,
            session: SessionId(1),
            server_name: "s".into(),
            strong_level: None,
        };
        raw(FrameType::Welcome, 0, 0, &w.encode().unwrap())
    }

    fn connected_client() -> ClientConnection {
        let mut c = ClientConnection::new(ClientConfig {
            compression: vec![Compression::Fast],
            ..ClientConfig::default()
        })
        .unwrap();
        c.take_output();
        c.receive(&welcome_bytes(1, Compression::Fast)).unwrap();
        c
    }

    /// An upload request of unknown size.
    fn put_unsized() -> Request {
        Request::PutAttachment {
            db: DbHandle(1),
            unid: Unid([2; 16]),
            name: "big".into(),
            mime: "x/y".into(),
            size: None,
        }
    }

    #[test]
    fn shared_chunks_go_out_as_copied_ones_would() {
        let put = put_unsized();
        let data: Vec<u8> = (0..20_000u32).map(|i| (i % 7) as u8).collect();
        for compression in [Compression::Off, Compression::Fast, Compression::Strong] {
            let (mut copied, mut shared) = (
                crate::testkit::Pair::connected(compression),
                crate::testkit::Pair::connected(compression),
            );
            let id = copied.client.send_request(&put).unwrap();
            assert_eq!(shared.client.send_request(&put).unwrap(), id);
            copied.client.send_chunk(id, &data).unwrap();
            copied.client.send_chunk(id, &[]).unwrap();
            copied.client.send_end(id).unwrap();
            let body = Bytes::from(data.clone());
            shared.client.send_chunk_shared(id, body.clone()).unwrap();
            shared.client.send_chunk_shared(id, Bytes::new()).unwrap();
            shared.client.send_end(id).unwrap();
            let len = shared.client.output_len();
            let segments = shared.client.take_output_segments();
            assert_eq!(shared.client.output_len(), 0);
            assert_eq!(segments.iter().map(Bytes::len).sum::<usize>(), len);
            if compression == Compression::Off {
                assert!(
                    segments.iter().any(|s| s.as_ptr() == body.as_ptr()),
                    "the body went out uncopied"
                );
            }
            let mut wire = Vec::new();
            segments.iter().for_each(|s| wire.extend_from_slice(s));
            assert_eq!(wire, copied.client.take_output(), "{compression:?}");
        }
    }

    #[test]
    fn shared_chunks_are_split_at_the_maximum_frame_size() {
        let mut c = ClientConnection::new(ClientConfig {
            compression: vec![],
            ..ClientConfig::default()
        })
        .unwrap();
        c.take_output();
        c.receive(&welcome_bytes(1, Compression::Off)).unwrap();
        c.wire = Wire::new(MIN_MAX_FRAME_SIZE, 0);
        let put = put_unsized();
        let id = c.send_request(&put).unwrap();
        c.send_chunk_shared(id, Bytes::from(vec![7u8; 10_000]))
            .unwrap();
        // take_output joins the segments into one buffer.
        let mut dec = FrameDecoder::new(MIN_MAX_FRAME_SIZE);
        dec.feed(&c.take_output());
        let mut sizes = Vec::new();
        while let Some(f) = dec.next_frame().unwrap() {
            if f.kind == FrameType::Chunk {
                sizes.push(f.body.len());
            }
        }
        let max = MIN_MAX_FRAME_SIZE as usize - crate::frame::HEADER_LEN;
        assert_eq!(sizes, vec![max, max, 10_000 - 2 * max]);
    }

    fn get() -> Request {
        Request::GetAttachment {
            db: DbHandle(1),
            unid: Unid([2; 16]),
            name: "report.pdf".into(),
        }
    }

    /// Asserts the client closed with a protocol-violation frame to the
    /// server and stays closed.
    fn assert_violation(c: &mut ClientConnection) {
        assert_eq!(c.phase(), Phase::Closed);
        let mut dec = FrameDecoder::new(DEFAULT_MAX_FRAME_SIZE);
        dec.feed(&c.take_output());
        let mut last = None;
        while let Some(f) = dec.next_frame().unwrap() {
            last = Some(f);
        }
        let f = last.expect("an error frame");
        assert_eq!((f.kind, f.request_id), (FrameType::Error, RequestId(0)));
        assert_eq!(
            Failure::decode(&f.body).unwrap().code,
            ErrorCode::ProtocolViolation
        );
        assert_eq!(c.receive(&[0]), Err(ProtocolError::Closed));
    }

    #[test]
    fn the_hello_is_queued_at_creation() {
        let mut c = ClientConnection::new(ClientConfig::default()).unwrap();
        let mut dec = FrameDecoder::new(DEFAULT_MAX_FRAME_SIZE);
        dec.feed(&c.take_output());
        let f = dec.next_frame().unwrap().unwrap();
        assert_eq!(f.kind, FrameType::Hello);
        let hello = Hello::decode(&f.body).unwrap();
        assert_eq!(hello.versions, SUPPORTED_VERSIONS);
        assert_eq!(c.phase(), Phase::Handshaking);
        assert!(matches!(
            c.send_request(&Request::Statistics),
            Err(ProtocolError::Misuse(_))
        ));
    }

    #[test]
    fn a_welcome_choosing_what_was_not_offered_is_a_violation() {
        for (version, compression) in [(2, Compression::Fast), (1, Compression::Strong)] {
            let mut c = ClientConnection::new(ClientConfig {
                compression: vec![Compression::Fast],
                ..ClientConfig::default()
            })
            .unwrap();
            c.take_output();
            let err = c.receive(&welcome_bytes(version, compression)).unwrap_err();
            assert!(matches!(err, ProtocolError::BadChoice { .. }), "{err}");
            assert_violation(&mut c);
        }
        // Off is always acceptable.
        let mut c = ClientConnection::new(ClientConfig::default()).unwrap();
        assert!(c.receive(&welcome_bytes(1, Compression::Off)).is_ok());
    }

    #[test]
    fn answers_to_requests_not_in_flight_are_violations() {
        let mut c = connected_client();
        let body = Response::Done.encode().unwrap();
        let err = c
            .receive(&raw(FrameType::Response, 0, 77, &body))
            .unwrap_err();
        assert!(matches!(err, ProtocolError::UnknownRequest { .. }));
        assert_violation(&mut c);
        // Nor may a request be answered twice.
        let mut c = connected_client();
        let id = c.send_request(&Request::Statistics).unwrap();
        let mut bytes = raw(FrameType::Response, 0, id.0, &body);
        bytes.extend(raw(FrameType::Error, 0, id.0, &[0x94, 0x01]));
        assert!(c.receive(&bytes).is_err());
    }

    #[test]
    fn items_and_chunks_only_for_requests_that_stream() {
        let body = Response::Done.encode().unwrap();
        for kind in [FrameType::Item, FrameType::Chunk] {
            let mut c = connected_client();
            let id = c.send_request(&Request::Statistics).unwrap();
            assert!(c.receive(&raw(kind, 0, id.0, &body)).is_err(), "{kind}");
            assert_violation(&mut c);
        }
        let mut c = connected_client();
        let search = Request::Search {
            db: DbHandle(1),
            formula: "SELECT @All".into(),
            since: None,
        };
        let id = c.send_request(&search).unwrap();
        assert!(c.receive(&raw(FrameType::Chunk, 0, id.0, b"x")).is_err());
    }

    #[test]
    fn a_download_arrives_as_header_chunks_and_final_answer() {
        let mut p = Pair::connected(Compression::Fast);
        let id = p.client.send_request(&get()).unwrap();
        assert!(matches!(
            &p.deliver_to_server()[..],
            [ServerEvent::Request { .. }]
        ));
        let header = Response::AttachmentHeader {
            name: "report.pdf".into(),
            mime: "application/pdf".into(),
            size: 6,
        };
        p.server.send_item(id, &header).unwrap();
        p.server.send_chunk(id, b"abc").unwrap();
        p.server.send_chunk(id, b"def").unwrap();
        p.server
            .respond(id, &Response::AttachmentSent { size: 6 })
            .unwrap();
        assert_eq!(
            p.deliver_to_client(),
            [
                ClientEvent::Item { id, item: header },
                ClientEvent::Chunk {
                    id,
                    data: Bytes::from_static(b"abc")
                },
                ClientEvent::Chunk {
                    id,
                    data: Bytes::from_static(b"def")
                },
                ClientEvent::Response {
                    id,
                    response: Response::AttachmentSent { size: 6 }
                },
            ]
        );
        assert_eq!(p.client.in_flight(), 0);
    }

    #[test]
    fn large_chunks_are_split_to_fit_frames() {
        let mut c = ClientConnection::new(ClientConfig {
            max_frame_size: MIN_MAX_FRAME_SIZE,
            compression: vec![],
            ..ClientConfig::default()
        })
        .unwrap();
        c.take_output();
        c.receive(&welcome_bytes(1, Compression::Off)).unwrap();
        let put = Request::PutAttachment {
            db: DbHandle(1),
            unid: Unid([2; 16]),
            name: "big".into(),
            mime: "x/y".into(),
            size: Some(10_000),
        };
        let id = c.send_request(&put).unwrap();
        c.send_chunk(id, &[7u8; 10_000]).unwrap();
        c.send_end(id).unwrap();
        let mut s = ServerConnection::new(ServerConfig {
            max_frame_size: MIN_MAX_FRAME_SIZE,
            ..ServerConfig::default()
        });
        // Skip the server's handshake: feed a Hello of our own first.
        let hello = Hello {
            versions: 1..=1,
            client_name: "t".into(),
            compression: vec![],
            credentials: None,
            strong_level: None,
        };
        s.receive(&raw(FrameType::Hello, 0, 0, &hello.encode().unwrap()))
            .unwrap();
        s.accept(SessionId(1)).unwrap();
        let events = s.receive(&c.take_output()).unwrap();
        let chunks: Vec<usize> = events
            .iter()
            .filter_map(|e| match e {
                ServerEvent::Chunk { data, .. } => Some(data.len()),
                _ => None,
            })
            .collect();
        assert_eq!(chunks, [4090, 4090, 1820]);
        assert_eq!(events.last(), Some(&ServerEvent::End { id }));
    }

    #[test]
    fn a_closing_server_delivers_earlier_answers_first() {
        let mut p = Pair::connected(Compression::Off);
        let id = p.client.send_request(&Request::Statistics).unwrap();
        p.deliver_to_server();
        p.server.respond(id, &Response::Done).unwrap();
        p.server.close(ErrorCode::Busy, "shutting down");
        assert_eq!(
            p.deliver_to_client(),
            [
                ClientEvent::Response {
                    id,
                    response: Response::Done
                },
                ClientEvent::Closed {
                    code: ErrorCode::Busy,
                    message: "shutting down".into()
                },
            ]
        );
        assert_eq!(p.client.receive(&[]), Err(ProtocolError::Closed));
    }

    #[test]
    fn request_ids_skip_zero_and_ids_in_flight() {
        let mut c = connected_client();
        c.next_id = u32::MAX;
        let a = c.send_request(&Request::Statistics).unwrap();
        let b = c.send_request(&Request::Statistics).unwrap();
        assert_eq!((a, b), (RequestId(u32::MAX), RequestId(1)));
        c.next_id = u32::MAX;
        let c3 = c.send_request(&Request::Statistics).unwrap();
        assert_eq!(c3, RequestId(2));
    }

    #[test]
    fn uploads_refused_early_send_no_more_chunks() {
        let mut p = Pair::connected(Compression::Off);
        let put = Request::PutAttachment {
            db: DbHandle(1),
            unid: Unid([2; 16]),
            name: "big".into(),
            mime: "x/y".into(),
            size: Some(1 << 40),
        };
        let id = p.client.send_request(&put).unwrap();
        p.deliver_to_server();
        p.server.fail(id, ErrorCode::TooLarge, "too big").unwrap();
        assert!(matches!(
            &p.deliver_to_client()[..],
            [ClientEvent::Failed { .. }]
        ));
        p.client.send_chunk(id, b"more").unwrap();
        assert_eq!(p.client.output_len(), 0);
        p.client.send_end(id).unwrap();
        assert_eq!(p.deliver_to_server(), []);
        assert_eq!((p.client.in_flight(), p.server.in_flight()), (0, 0));
        assert!(matches!(
            p.client.send_end(id),
            Err(ProtocolError::Misuse(_))
        ));
    }
}
