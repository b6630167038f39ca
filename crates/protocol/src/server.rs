//! The server side of a connection, as a state machine with no I/O.
//!
//! ```text
//!            Hello                 accept(session)
//!  Handshaking ──▶ Authenticating ────────────────▶ Open ──┐ requests,
//!      │                 │ refuse(code, reason)      │  ◀──┘ responses
//!      │                 ▼                           │
//!      └──────────────▶ Closed ◀─────────────────────┘
//!        any violation, a peer's error frame, close()
//! ```
//!
//! The driver (the `server` crate's connection task) feeds it whatever it
//! reads from the socket with [`ServerConnection::receive`], acts on the
//! events that come back (checks credentials, runs requests on its worker
//! pool) and answers through the `accept`/`refuse`/`respond`/`send_*`
//! methods, which queue bytes; [`ServerConnection::take_output`] hands
//! them over for writing. Nothing here blocks, spawns or reads a clock,
//! so every rule is tested by feeding bytes.
//!
//! Rules enforced on the client's bytes, each closing the connection with
//! an error frame and a typed error: nothing but a Hello before the
//! handshake, nothing at all while the caller authenticates, requests only
//! once open, no request id used twice while in flight, chunks and ends
//! only for an upload in progress, no frame type or body this version does
//! not understand. After that error `receive` only ever returns
//! [`ProtocolError::Closed`]: events decoded earlier in the same read are
//! dropped, since no answer to them could be delivered.

use crate::compress::{Compression, ZstdLevel, DEFAULT_COMPRESSION_THRESHOLD};
use crate::error::{ErrorCode, ProtocolError};
use crate::frame::{Frame, FrameType, DEFAULT_MAX_FRAME_SIZE, MIN_MAX_FRAME_SIZE};
use crate::handshake::{
    negotiate_compression, negotiate_version, Credentials, Hello, Welcome, SUPPORTED_VERSIONS,
};
use crate::ids::{RequestId, SessionId};
use crate::message::{Failure, Request, Response, Shape};
use crate::state::{InFlight, Phase};
use crate::wire::Wire;
use bytes::Bytes;
use std::ops::RangeInclusive;

/// Settings of the server side of connections.
#[derive(Clone, Debug)]
pub struct ServerConfig {
    /// Sent in the Welcome, for the client's logs.
    pub server_name: String,
    /// Protocol versions accepted.
    pub versions: RangeInclusive<u16>,
    /// Compression methods the server is willing to use (`off` always is).
    pub compression: Vec<Compression>,
    /// Bodies shorter than this are never compressed.
    pub compression_threshold: usize,
    /// Largest frame accepted or sent (its length field), raised to at
    /// least [`MIN_MAX_FRAME_SIZE`].
    pub max_frame_size: u32,
    /// The highest zstd level granted to a client that asks for one: a
    /// client asking for more gets this (and the Welcome says so).
    pub max_strong_level: ZstdLevel,
}

impl Default for ServerConfig {
    fn default() -> Self {
        ServerConfig {
            server_name: concat!("folio ", env!("CARGO_PKG_VERSION")).into(),
            versions: SUPPORTED_VERSIONS,
            compression: vec![Compression::Fast, Compression::Strong],
            compression_threshold: DEFAULT_COMPRESSION_THRESHOLD,
            max_frame_size: DEFAULT_MAX_FRAME_SIZE,
            max_strong_level: ZstdLevel::MAX,
        }
    }
}

/// What the client's bytes asked of the server's caller.
#[derive(Clone, Debug, PartialEq)]
pub enum ServerEvent {
    /// The client said Hello: check its credentials and answer with
    /// [`ServerConnection::accept`] or [`ServerConnection::refuse`].
    Authenticate {
        /// The client program's name.
        client_name: String,
        /// Who it claims to be; `None` asks for anonymous access.
        credentials: Option<Credentials>,
        /// The version the connection will speak.
        version: u16,
        /// The compression it will use.
        compression: Compression,
    },
    /// A request to run; answer it with `respond` or `fail` (after
    /// `send_item`/`send_chunk` for streamed answers).
    Request {
        /// Its id.
        id: RequestId,
        /// What it asks.
        request: Request,
    },
    /// Bytes of an upload (`PutAttachment`), in order.
    Chunk {
        /// The upload's request id.
        id: RequestId,
        /// The bytes.
        data: Bytes,
    },
    /// The upload `id` is complete.
    End {
        /// The upload's request id.
        id: RequestId,
    },
    /// The client closed the connection with an error frame.
    PeerClosed {
        /// Its code.
        code: ErrorCode,
        /// Its message.
        message: String,
    },
}

/// The server side of one connection (see the module docs).
#[derive(Debug)]
pub struct ServerConnection {
    config: ServerConfig,
    wire: Wire,
    phase: Phase,
    /// Chosen when the Hello arrives, in effect once accepted.
    version: u16,
    compression: Compression,
    /// The zstd level the client asked for, if it did.
    strong_level: Option<ZstdLevel>,
    session: Option<SessionId>,
    in_flight: InFlight,
}

impl ServerConnection {
    /// A new connection waiting for the client's Hello.
    pub fn new(mut config: ServerConfig) -> ServerConnection {
        config.max_frame_size = config.max_frame_size.max(MIN_MAX_FRAME_SIZE);
        ServerConnection {
            wire: Wire::new(config.max_frame_size, config.compression_threshold),
            config,
            phase: Phase::Handshaking,
            version: 0,
            compression: Compression::Off,
            strong_level: None,
            session: None,
            in_flight: InFlight::default(),
        }
    }

    /// Where the connection is in its life.
    pub fn phase(&self) -> Phase {
        self.phase
    }

    /// The session accepted for this connection.
    pub fn session(&self) -> Option<SessionId> {
        self.session
    }

    /// The negotiated protocol version, once open.
    pub fn version(&self) -> Option<u16> {
        (self.phase == Phase::Open).then_some(self.version)
    }

    /// The compression in use (`Off` until open).
    pub fn compression(&self) -> Compression {
        self.wire.compression()
    }

    /// Number of requests in flight.
    pub fn in_flight(&self) -> usize {
        self.in_flight.len()
    }

    /// Takes the bytes queued for the client.
    pub fn take_output(&mut self) -> Vec<u8> {
        self.wire.take_output()
    }

    /// Number of bytes queued for the client.
    pub fn output_len(&self) -> usize {
        self.wire.output_len()
    }

    /// Feeds bytes read from the client; returns what they ask. On a
    /// violation an error frame is queued, the connection is closed and
    /// the error returned (see the module docs).
    pub fn receive(&mut self, bytes: &[u8]) -> Result<Vec<ServerEvent>, ProtocolError> {
        if self.phase == Phase::Closed {
            return Err(ProtocolError::Closed);
        }
        self.wire.feed(bytes);
        self.receive_buffered()
    }

    /// Where to read the client's next bytes directly (no copy into the
    /// state machine): at least `at_least` bytes of room. After appending
    /// to it, call [`receive_buffered`](Self::receive_buffered).
    pub fn read_buffer(&mut self, at_least: usize) -> &mut bytes::BytesMut {
        self.wire.read_buffer(at_least)
    }

    /// [`receive`](Self::receive) for bytes already appended to the
    /// [`read_buffer`](Self::read_buffer).
    pub fn receive_buffered(&mut self) -> Result<Vec<ServerEvent>, ProtocolError> {
        if self.phase == Phase::Closed {
            return Err(ProtocolError::Closed);
        }
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

    fn handle(&mut self, frame: Frame, events: &mut Vec<ServerEvent>) -> Result<(), ProtocolError> {
        let unexpected = |phase: Phase| ProtocolError::UnexpectedFrame {
            frame: frame.kind,
            state: phase.describe(),
        };
        match (self.phase, frame.kind) {
            (_, FrameType::Error) => self.peer_closed(&frame, events),
            (Phase::Handshaking, FrameType::Hello) => self.hello(&frame, events),
            (Phase::Open, FrameType::Request) => self.request(&frame, events),
            (Phase::Open, FrameType::Chunk) => self.chunk(&frame, events),
            (Phase::Open, FrameType::End) => self.end(&frame, events),
            (phase, _) => Err(unexpected(phase)),
        }
    }

    fn peer_closed(
        &mut self,
        frame: &Frame,
        events: &mut Vec<ServerEvent>,
    ) -> Result<(), ProtocolError> {
        // Clients only send connection-level errors (id 0).
        if frame.request_id != RequestId::CONNECTION {
            return Err(ProtocolError::UnknownRequest {
                frame: FrameType::Error,
                id: frame.request_id,
                expected: "0 (clients only send connection-level errors)",
            });
        }
        let f = Failure::decode(&self.wire.open(frame)?)?;
        self.phase = Phase::Closed;
        events.push(ServerEvent::PeerClosed {
            code: f.code,
            message: f.message,
        });
        Ok(())
    }

    fn hello(&mut self, frame: &Frame, events: &mut Vec<ServerEvent>) -> Result<(), ProtocolError> {
        if frame.request_id != RequestId::CONNECTION {
            return Err(ProtocolError::UnknownRequest {
                frame: FrameType::Hello,
                id: frame.request_id,
                expected: "0 (the handshake is connection-level)",
            });
        }
        let hello = Hello::decode(&self.wire.open(frame)?)?;
        self.version = negotiate_version(&hello.versions, &self.config.versions)?;
        self.compression = negotiate_compression(&hello.compression, &self.config.compression);
        // Granted up to the server's cap; the Welcome says what was.
        self.strong_level = hello
            .strong_level
            .map(|l| l.min(self.config.max_strong_level));
        self.phase = Phase::Authenticating;
        events.push(ServerEvent::Authenticate {
            client_name: hello.client_name,
            credentials: hello.credentials,
            version: self.version,
            compression: self.compression,
        });
        Ok(())
    }

    fn request(
        &mut self,
        frame: &Frame,
        events: &mut Vec<ServerEvent>,
    ) -> Result<(), ProtocolError> {
        let id = frame.request_id;
        if id == RequestId::CONNECTION {
            return Err(ProtocolError::ZeroRequestId);
        }
        if self.in_flight.contains(id) {
            return Err(ProtocolError::DuplicateRequestId(id));
        }
        let request = Request::decode(&self.wire.open(frame)?)?;
        self.in_flight.open(id, request.shape())?;
        events.push(ServerEvent::Request { id, request });
        Ok(())
    }

    fn chunk(&mut self, frame: &Frame, events: &mut Vec<ServerEvent>) -> Result<(), ProtocolError> {
        let id = frame.request_id;
        let p = self
            .in_flight
            .check(FrameType::Chunk, id, "an upload in progress", |p| {
                p.uploading
            })?;
        let data = self.wire.open(frame)?;
        // An upload already answered (refused early) drops its chunks.
        if !p.answered {
            events.push(ServerEvent::Chunk { id, data });
        }
        Ok(())
    }

    fn end(&mut self, frame: &Frame, events: &mut Vec<ServerEvent>) -> Result<(), ProtocolError> {
        let id = frame.request_id;
        let p = self
            .in_flight
            .check(FrameType::End, id, "an upload in progress", |p| p.uploading)?;
        if !frame.body.is_empty() {
            return Err(ProtocolError::BadBody {
                frame: FrameType::End,
                reason: format!("an End frame has no body, got {} bytes", frame.body.len()),
            });
        }
        self.in_flight.end_upload(id);
        if !p.answered {
            events.push(ServerEvent::End { id });
        }
        Ok(())
    }

    /// Accepts the client authenticated after an `Authenticate` event:
    /// queues the Welcome and opens the connection.
    pub fn accept(&mut self, session: SessionId) -> Result<(), ProtocolError> {
        self.require_authenticating("accept")?;
        let welcome = Welcome {
            version: self.version,
            compression: self.compression,
            session,
            server_name: self.config.server_name.clone(),
            // Said when asked for and zstd is the method, so the client
            // sees it was heard (and a Welcome to a client that did not
            // ask is the same bytes as before the level existed).
            strong_level: self
                .strong_level
                .filter(|_| self.compression == Compression::Strong),
        };
        self.wire.send(
            FrameType::Welcome,
            RequestId::CONNECTION,
            &welcome.encode()?,
        )?;
        self.wire
            .start_compression(self.compression, self.strong_level.unwrap_or_default());
        self.session = Some(session);
        self.phase = Phase::Open;
        Ok(())
    }

    /// Refuses the client after an `Authenticate` event (usually with
    /// `Unauthenticated` or `Forbidden`): queues the error frame and
    /// closes the connection.
    pub fn refuse(&mut self, code: ErrorCode, reason: &str) -> Result<(), ProtocolError> {
        self.require_authenticating("refuse")?;
        self.close(code, reason);
        Ok(())
    }

    /// Closes the connection (shutdown, idle timeout): queues an error
    /// frame with request id 0 unless already closed.
    pub fn close(&mut self, code: ErrorCode, reason: &str) {
        if self.phase != Phase::Closed {
            self.wire
                .send_failure(RequestId::CONNECTION, &Failure::new(code, reason));
            self.phase = Phase::Closed;
        }
    }

    /// Sends the final answer to request `id`. Nothing is sent and the
    /// request stays in flight if the answer does not fit in a frame
    /// (`FrameTooLarge`), so the caller can `fail` it instead.
    pub fn respond(&mut self, id: RequestId, response: &Response) -> Result<(), ProtocolError> {
        self.answerable(FrameType::Response, id, "awaiting its answer", |_| true)?;
        self.wire
            .send(FrameType::Response, id, &response.encode()?)?;
        self.in_flight.answer(id);
        Ok(())
    }

    /// Sends one streamed result of a `Search` or the header of a
    /// `GetAttachment`; the request stays in flight.
    pub fn send_item(&mut self, id: RequestId, item: &Response) -> Result<(), ProtocolError> {
        self.answerable(FrameType::Item, id, "a search or download", |s| {
            matches!(s, Shape::Stream | Shape::Download)
        })?;
        self.wire.send(FrameType::Item, id, &item.encode()?)
    }

    /// Sends attachment bytes of a `GetAttachment`, split into as many
    /// frames as the maximum frame size needs.
    pub fn send_chunk(&mut self, id: RequestId, data: &[u8]) -> Result<(), ProtocolError> {
        self.answerable(FrameType::Chunk, id, "a download", |s| s == Shape::Download)?;
        for piece in data.chunks(self.wire.max_body().max(1)) {
            self.wire.send(FrameType::Chunk, id, piece)?;
        }
        Ok(())
    }

    /// Answers request `id` with an error frame. For an upload still in
    /// progress, its remaining chunks are dropped when they arrive.
    pub fn fail(
        &mut self,
        id: RequestId,
        code: ErrorCode,
        message: &str,
    ) -> Result<(), ProtocolError> {
        self.answerable(FrameType::Error, id, "awaiting its answer", |_| true)?;
        self.wire.send_failure(id, &Failure::new(code, message));
        self.in_flight.answer(id);
        Ok(())
    }

    /// Checks that the caller may send a `frame` for request `id`.
    fn answerable(
        &self,
        frame: FrameType,
        id: RequestId,
        expected: &'static str,
        shape_ok: impl Fn(Shape) -> bool,
    ) -> Result<(), ProtocolError> {
        match self.phase {
            Phase::Open => {}
            Phase::Closed => return Err(ProtocolError::Closed),
            _ => return Err(self.misuse("answer", "the connection is not open")),
        }
        self.in_flight
            .check(frame, id, expected, |p| !p.answered && shape_ok(p.shape))
            .map(drop)
            .map_err(|e| ProtocolError::Misuse(e.to_string()))
    }

    /// `Closed` if the client left meanwhile, misuse if nothing is pending.
    fn require_authenticating(&self, what: &str) -> Result<(), ProtocolError> {
        match self.phase {
            Phase::Authenticating => Ok(()),
            Phase::Closed => Err(ProtocolError::Closed),
            _ => Err(self.misuse(what, "no authentication is pending")),
        }
    }

    fn misuse(&self, what: &str, why: &str) -> ProtocolError {
        ProtocolError::Misuse(format!("{what}: {why} ({})", self.phase.describe()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::frame::FrameDecoder;
    use crate::ids::{DbHandle, Unid};
    use crate::message::{DocRef, ReadFlags, Start};
    use crate::testkit::{raw, Pair};
    use crate::{ClientConfig, ClientConnection, ClientEvent, ClientEvent::Closed};

    fn hello_bytes(versions: RangeInclusive<u16>) -> Vec<u8> {
        hello_offering(versions, Compression::Fast)
    }

    fn hello_offering(versions: RangeInclusive<u16>, compression: Compression) -> Vec<u8> {
        let hello = Hello {
            versions,
            client_name: "test".into(),
            compression: vec![compression],
            credentials: None,
            strong_level: None,
        };
        raw(FrameType::Hello, 0, 0, &hello.encode().unwrap())
    }

    fn open_server(compression: Compression) -> ServerConnection {
        let mut s = ServerConnection::new(ServerConfig {
            compression: vec![compression],
            ..ServerConfig::default()
        });
        let events = s.receive(&hello_offering(1..=1, compression)).unwrap();
        assert!(matches!(events[..], [ServerEvent::Authenticate { .. }]));
        s.accept(SessionId(9)).unwrap();
        assert_eq!(s.compression(), compression);
        s.take_output();
        s
    }

    fn request_bytes(id: u32, r: &Request) -> Vec<u8> {
        raw(FrameType::Request, 0, id, &r.encode().unwrap())
    }

    /// The connection-level error frame a closed server sent last.
    fn closing_failure(s: &mut ServerConnection) -> Failure {
        let mut dec = FrameDecoder::new(DEFAULT_MAX_FRAME_SIZE);
        dec.feed(&s.take_output());
        let mut last = None;
        while let Some(f) = dec.next_frame().unwrap() {
            last = Some(f);
        }
        let f = last.expect("an error frame");
        assert_eq!(f.kind, FrameType::Error);
        assert_eq!(f.request_id, RequestId::CONNECTION);
        Failure::decode(&f.body).unwrap()
    }

    /// Asserts the server closed with `code` and stays closed.
    fn assert_closed_with(s: &mut ServerConnection, code: ErrorCode) {
        assert_eq!(s.phase(), Phase::Closed);
        assert_eq!(closing_failure(s).code, code);
        assert_eq!(s.receive(&hello_bytes(1..=1)), Err(ProtocolError::Closed));
        assert_eq!(s.output_len(), 0);
    }

    fn stats() -> Request {
        Request::Statistics
    }

    #[test]
    fn pipelined_requests_are_answered_out_of_order() {
        let mut p = Pair::connected(Compression::Fast);
        let a = p.client.send_request(&stats()).unwrap();
        let read = Request::ReadDocument {
            db: DbHandle(1),
            doc: DocRef::Unid(Unid([7; 16])),
        };
        let b = p.client.send_request(&read).unwrap();
        let c = p.client.send_request(&stats()).unwrap();
        assert_eq!(p.client.in_flight(), 3);
        let events = p.deliver_to_server();
        assert_eq!(
            events,
            [
                ServerEvent::Request {
                    id: a,
                    request: stats()
                },
                ServerEvent::Request {
                    id: b,
                    request: read
                },
                ServerEvent::Request {
                    id: c,
                    request: stats()
                },
            ]
        );
        assert_eq!(p.server.in_flight(), 3);
        p.server.respond(c, &Response::Done).unwrap();
        p.server
            .fail(a, ErrorCode::Forbidden, "not for you")
            .unwrap();
        p.server.respond(b, &Response::Found(None)).unwrap();
        assert_eq!(p.server.in_flight(), 0);
        assert_eq!(
            p.deliver_to_client(),
            [
                ClientEvent::Response {
                    id: c,
                    response: Response::Done
                },
                ClientEvent::Failed {
                    id: a,
                    code: ErrorCode::Forbidden,
                    message: "not for you".into()
                },
                ClientEvent::Response {
                    id: b,
                    response: Response::Found(None)
                },
            ]
        );
        assert_eq!(p.client.in_flight(), 0);
    }

    #[test]
    fn requests_before_the_handshake_close_the_connection() {
        let mut s = ServerConnection::new(ServerConfig::default());
        let err = s.receive(&request_bytes(1, &stats())).unwrap_err();
        assert!(matches!(
            err,
            ProtocolError::UnexpectedFrame {
                frame: FrameType::Request,
                ..
            }
        ));
        assert_closed_with(&mut s, ErrorCode::ProtocolViolation);
    }

    #[test]
    fn nothing_but_an_answer_is_expected_while_authenticating() {
        let mut s = ServerConnection::new(ServerConfig::default());
        let mut bytes = hello_bytes(1..=1);
        bytes.extend(request_bytes(1, &stats()));
        let err = s.receive(&bytes).unwrap_err();
        assert!(
            matches!(err, ProtocolError::UnexpectedFrame { .. }),
            "{err}"
        );
        assert_closed_with(&mut s, ErrorCode::ProtocolViolation);
        // A second Hello is no better.
        let mut s = ServerConnection::new(ServerConfig::default());
        let mut bytes = hello_bytes(1..=1);
        bytes.extend(hello_bytes(1..=1));
        assert!(s.receive(&bytes).is_err());
    }

    #[test]
    fn no_common_version_is_refused_with_both_ranges() {
        let mut s = ServerConnection::new(ServerConfig::default());
        let err = s.receive(&hello_bytes(5..=9)).unwrap_err();
        assert_eq!(
            err,
            ProtocolError::NoCommonVersion {
                client_min: 5,
                client_max: 9,
                server_min: 1,
                server_max: 1
            }
        );
        // The client sees a clear refusal.
        let mut c = ClientConnection::new(ClientConfig {
            versions: 5..=9,
            ..ClientConfig::default()
        })
        .unwrap();
        let events = c.receive(&s.take_output()).unwrap();
        match &events[..] {
            [Closed { code, message }] => {
                assert_eq!(*code, ErrorCode::UnsupportedVersion);
                assert!(
                    message.contains("5..=9") && message.contains("1..=1"),
                    "{message}"
                );
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(c.phase(), Phase::Closed);
    }

    #[test]
    fn a_hello_without_the_magic_is_refused() {
        let mut s = ServerConnection::new(ServerConfig::default());
        let err = s
            .receive(&raw(FrameType::Hello, 0, 0, b"HELLO12345"))
            .unwrap_err();
        assert_eq!(err, ProtocolError::BadMagic);
        assert_closed_with(&mut s, ErrorCode::ProtocolViolation);
    }

    #[test]
    fn an_oversize_length_is_refused_before_buffering() {
        let mut s = open_server(Compression::Off);
        let err = s
            .receive(&(DEFAULT_MAX_FRAME_SIZE + 1).to_le_bytes())
            .unwrap_err();
        assert!(matches!(err, ProtocolError::FrameTooLarge { .. }));
        assert_closed_with(&mut s, ErrorCode::TooLarge);
    }

    #[test]
    fn a_decompression_bomb_is_refused() {
        for method in [Compression::Fast, Compression::Strong] {
            let mut s = open_server(method);
            // Claims 2 GiB after decompression.
            let body = [0, 0, 0, 0x80, 0x1f, 0, 0, 0];
            let err = s
                .receive(&raw(FrameType::Request, 1, 1, &body))
                .unwrap_err();
            assert!(
                matches!(err, ProtocolError::DecompressedTooLarge { .. }),
                "{err}"
            );
            assert_closed_with(&mut s, ErrorCode::TooLarge);
        }
    }

    #[test]
    fn compressed_frames_need_negotiated_compression() {
        let mut s = open_server(Compression::Off);
        let err = s
            .receive(&raw(FrameType::Request, 1, 1, &[1, 0, 0, 0, 0x10, 20]))
            .unwrap_err();
        assert_eq!(
            err,
            ProtocolError::UnexpectedCompression(FrameType::Request)
        );
        // Nor is an End ever compressed.
        let mut s = open_server(Compression::Fast);
        assert!(s.receive(&raw(FrameType::End, 1, 1, &[])).is_err());
    }

    #[test]
    fn a_duplicate_request_id_in_flight_is_a_violation() {
        let mut s = open_server(Compression::Off);
        s.receive(&request_bytes(5, &stats())).unwrap();
        // Once answered, the id may be used again.
        s.respond(RequestId(5), &Response::Done).unwrap();
        s.receive(&request_bytes(5, &stats())).unwrap();
        let err = s.receive(&request_bytes(5, &stats())).unwrap_err();
        assert_eq!(err, ProtocolError::DuplicateRequestId(RequestId(5)));
        assert_closed_with(&mut s, ErrorCode::ProtocolViolation);
        // Id 0 is never a request.
        let mut s = open_server(Compression::Off);
        assert_eq!(
            s.receive(&request_bytes(0, &stats())),
            Err(ProtocolError::ZeroRequestId)
        );
    }

    #[test]
    fn bodies_that_fail_to_decode_close_the_connection() {
        let mut s = open_server(Compression::Off);
        let err = s
            .receive(&raw(FrameType::Request, 0, 1, &[250, 1]))
            .unwrap_err();
        assert!(matches!(err, ProtocolError::BadBody { .. }));
        assert_closed_with(&mut s, ErrorCode::ProtocolViolation);
    }

    #[test]
    fn frames_a_client_never_sends_are_violations() {
        for kind in [
            FrameType::Welcome,
            FrameType::Response,
            FrameType::Item,
            FrameType::Hello,
        ] {
            let mut s = open_server(Compression::Off);
            assert!(s.receive(&raw(kind, 0, 1, &[0])).is_err(), "{kind}");
            assert_closed_with(&mut s, ErrorCode::ProtocolViolation);
        }
        let mut s = open_server(Compression::Off);
        let mut bytes = 6u32.to_le_bytes().to_vec();
        bytes.extend_from_slice(&[0x7f, 0, 1, 0, 0, 0]);
        assert_eq!(
            s.receive(&bytes),
            Err(ProtocolError::UnknownFrameType(0x7f))
        );
        assert_closed_with(&mut s, ErrorCode::ProtocolViolation);
    }

    fn put(size: Option<u64>) -> Request {
        Request::PutAttachment {
            db: DbHandle(1),
            unid: Unid([1; 16]),
            name: "a.bin".into(),
            mime: "application/octet-stream".into(),
            size,
        }
    }

    /// Prose-like bytes: a few hundred words, so zstd's levels differ.
    fn prose(len: usize) -> Vec<u8> {
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        let mut out = Vec::with_capacity(len + 16);
        while out.len() < len {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let w = (x % 400) * (x % 400) / 400;
            out.extend_from_slice(format!("w{w:x}{} ", "ab".repeat((w % 4) as usize)).as_bytes());
        }
        out.truncate(len);
        out
    }

    /// A zstd pair whose client asked for `level`; the Welcome's level
    /// and both sides' bytes for the same 256 KiB of prose (the client's
    /// upload chunk, the server's download chunk), checked to arrive whole.
    fn strong_pair_bytes(level: Option<i64>) -> (Option<ZstdLevel>, usize, usize) {
        let level = level.map(|l| ZstdLevel::new(l).unwrap());
        let mut p = Pair {
            client: ClientConnection::new(ClientConfig {
                compression: vec![Compression::Strong],
                compression_threshold: 0,
                strong_level: level,
                ..ClientConfig::default()
            })
            .unwrap(),
            server: ServerConnection::new(ServerConfig {
                compression: vec![Compression::Strong],
                compression_threshold: 0,
                ..ServerConfig::default()
            }),
        };
        p.deliver_to_server();
        p.server.accept(SessionId(1)).unwrap();
        let welcome = match &p.deliver_to_client()[..] {
            [ClientEvent::Connected(w)] => w.clone(),
            other => panic!("{other:?}"),
        };
        let text = prose(256 << 10);
        let up = p.client.send_request(&put(None)).unwrap();
        p.client.send_chunk(up, &text).unwrap();
        let sent = p.client.take_output();
        let events = p.server.receive(&sent).unwrap();
        assert_eq!(
            events[1],
            ServerEvent::Chunk {
                id: up,
                data: text.clone().into()
            }
        );
        let get = Request::GetAttachment {
            db: DbHandle(1),
            unid: Unid([1; 16]),
            name: "a.txt".into(),
        };
        let down = p.client.send_request(&get).unwrap();
        p.deliver_to_server();
        p.server.send_chunk(down, &text).unwrap();
        let answered = p.server.take_output();
        let events = p.client.receive(&answered).unwrap();
        assert_eq!(
            events,
            [ClientEvent::Chunk {
                id: down,
                data: text.into()
            }]
        );
        (welcome.strong_level, sent.len(), answered.len())
    }

    #[test]
    fn the_zstd_level_a_client_asks_for_is_used_both_ways_and_echoed() {
        let (said, up3, down3) = strong_pair_bytes(None);
        assert_eq!(said, None, "not asked, not said");
        let (said, up19, down19) = strong_pair_bytes(Some(19));
        assert_eq!(said, Some(ZstdLevel::new(19).unwrap()));
        assert!(up19 < up3, "client side: level 19 {up19}, level 3 {up3}");
        assert!(
            down19 < down3,
            "server side: level 19 {down19}, level 3 {down3}"
        );
    }

    #[test]
    fn a_server_grants_no_more_than_its_highest_level_and_says_so() {
        let mut s = ServerConnection::new(ServerConfig {
            compression: vec![Compression::Strong],
            max_strong_level: ZstdLevel::new(9).unwrap(),
            ..ServerConfig::default()
        });
        let mut c = ClientConnection::new(ClientConfig {
            compression: vec![Compression::Strong],
            strong_level: Some(ZstdLevel::new(19).unwrap()),
            ..ClientConfig::default()
        })
        .unwrap();
        s.receive(&c.take_output()).unwrap();
        s.accept(SessionId(1)).unwrap();
        match &c.receive(&s.take_output()).unwrap()[..] {
            [ClientEvent::Connected(w)] => {
                assert_eq!(w.strong_level, Some(ZstdLevel::new(9).unwrap()))
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn a_hello_asking_an_invalid_level_closes_the_connection_naming_it() {
        let mut s = ServerConnection::new(ServerConfig::default());
        let mut body = Hello {
            versions: 1..=1,
            client_name: "t".into(),
            compression: vec![Compression::Strong],
            credentials: None,
            strong_level: None,
        }
        .encode()
        .unwrap();
        body.push(20);
        let e = s.receive(&raw(FrameType::Hello, 0, 0, &body)).unwrap_err();
        assert_eq!(e, ProtocolError::CompressionLevel { level: 20 });
        assert_eq!(s.phase(), Phase::Closed);
        let f = closing_failure(&mut s);
        assert_eq!(f.code, ErrorCode::ProtocolViolation);
        assert!(f.message.contains("level 20"), "{}", f.message);
    }

    #[test]
    fn an_upload_streams_chunks_then_ends() {
        let mut p = Pair::connected(Compression::Strong);
        let id = p.client.send_request(&put(None)).unwrap();
        let text = b"attachment text, attachment text, attachment text. ".repeat(100);
        p.client.send_chunk(id, &text).unwrap();
        p.client.send_chunk(id, b"tail").unwrap();
        p.client.send_end(id).unwrap();
        let events = p.deliver_to_server();
        assert_eq!(events.len(), 4);
        assert!(matches!(&events[0], ServerEvent::Request { .. }));
        assert_eq!(
            events[1],
            ServerEvent::Chunk {
                id,
                data: text.into()
            }
        );
        assert_eq!(
            events[2],
            ServerEvent::Chunk {
                id,
                data: Bytes::from_static(b"tail")
            }
        );
        assert_eq!(events[3], ServerEvent::End { id });
        p.server
            .respond(id, &Response::AttachmentStored { size: 5204 })
            .unwrap();
        assert_eq!(p.deliver_to_client().len(), 1);
        assert_eq!((p.client.in_flight(), p.server.in_flight()), (0, 0));
    }

    #[test]
    fn an_upload_refused_early_drops_its_chunks_and_frees_its_id_at_the_end() {
        let mut s = open_server(Compression::Off);
        s.receive(&request_bytes(3, &put(Some(1 << 40)))).unwrap();
        s.fail(RequestId(3), ErrorCode::TooLarge, "1 TiB is too much")
            .unwrap();
        // Chunks already on their way are dropped, not errors.
        assert_eq!(s.receive(&raw(FrameType::Chunk, 0, 3, b"xx")), Ok(vec![]));
        // The id is still taken until the End.
        assert!(s.receive(&request_bytes(3, &stats())).is_err());
        let mut s = open_server(Compression::Off);
        s.receive(&request_bytes(3, &put(None))).unwrap();
        s.fail(RequestId(3), ErrorCode::Forbidden, "no").unwrap();
        assert_eq!(s.receive(&raw(FrameType::End, 0, 3, b"")), Ok(vec![]));
        assert_eq!(s.in_flight(), 0);
        assert!(s.receive(&request_bytes(3, &stats())).is_ok());
    }

    #[test]
    fn chunks_and_ends_need_an_upload_in_progress() {
        for (setup, frame) in [
            (None, raw(FrameType::Chunk, 0, 1, b"x")),
            (Some(stats()), raw(FrameType::Chunk, 0, 1, b"x")),
            (Some(stats()), raw(FrameType::End, 0, 1, b"")),
            (Some(put(None)), raw(FrameType::End, 0, 1, b"body")),
        ] {
            let mut s = open_server(Compression::Off);
            if let Some(r) = setup {
                s.receive(&request_bytes(1, &r)).unwrap();
            }
            assert!(s.receive(&frame).is_err());
            assert_closed_with(&mut s, ErrorCode::ProtocolViolation);
        }
        // A chunk after the End is one too many.
        let mut s = open_server(Compression::Off);
        let mut bytes = request_bytes(1, &put(None));
        bytes.extend(raw(FrameType::End, 0, 1, b""));
        bytes.extend(raw(FrameType::Chunk, 0, 1, b"late"));
        assert!(matches!(
            s.receive(&bytes),
            Err(ProtocolError::UnknownRequest { .. })
        ));
    }

    #[test]
    fn refusing_authentication_closes_with_the_callers_reason() {
        let mut p = Pair {
            client: ClientConnection::new(ClientConfig {
                credentials: Some(Credentials {
                    user: "bob".into(),
                    password: "wrong".into(),
                }),
                ..ClientConfig::default()
            })
            .unwrap(),
            server: ServerConnection::new(ServerConfig::default()),
        };
        match &p.deliver_to_server()[..] {
            [ServerEvent::Authenticate {
                credentials: Some(c),
                version: 1,
                ..
            }] => {
                assert_eq!((c.user.as_str(), c.password.as_str()), ("bob", "wrong"));
            }
            other => panic!("{other:?}"),
        }
        p.server
            .refuse(ErrorCode::Unauthenticated, "bad user name or password")
            .unwrap();
        assert_eq!(p.server.phase(), Phase::Closed);
        assert_eq!(
            p.deliver_to_client(),
            [Closed {
                code: ErrorCode::Unauthenticated,
                message: "bad user name or password".into()
            }]
        );
        assert_eq!(p.client.phase(), Phase::Closed);
        assert!(matches!(
            p.client.send_request(&stats()),
            Err(ProtocolError::Closed)
        ));
    }

    #[test]
    fn caller_mistakes_are_misuse_and_keep_the_connection() {
        let mut s = ServerConnection::new(ServerConfig::default());
        assert!(matches!(
            s.accept(SessionId(1)),
            Err(ProtocolError::Misuse(_))
        ));
        let mut s = open_server(Compression::Off);
        assert!(matches!(
            s.accept(SessionId(1)),
            Err(ProtocolError::Misuse(_))
        ));
        assert!(matches!(
            s.respond(RequestId(1), &Response::Done),
            Err(ProtocolError::Misuse(_))
        ));
        s.receive(&request_bytes(1, &stats())).unwrap();
        assert!(s.send_item(RequestId(1), &Response::Done).is_err());
        assert!(s.send_chunk(RequestId(1), b"x").is_err());
        s.respond(RequestId(1), &Response::Done).unwrap();
        assert!(s.respond(RequestId(1), &Response::Done).is_err());
        assert_eq!(s.phase(), Phase::Open);
    }

    #[test]
    fn an_answer_too_large_for_a_frame_is_refused_and_can_be_failed() {
        let mut s = ServerConnection::new(ServerConfig {
            max_frame_size: MIN_MAX_FRAME_SIZE,
            ..ServerConfig::default()
        });
        s.receive(&hello_bytes(1..=1)).unwrap();
        s.accept(SessionId(1)).unwrap();
        s.take_output();
        s.receive(&request_bytes(1, &stats())).unwrap();
        // Pseudo-random letters, so compression cannot make it fit.
        let mut x = 1u32;
        let path = (0..5000)
            .map(|_| {
                x = x.wrapping_mul(1_103_515_245).wrapping_add(12345);
                char::from(b'a' + (x >> 16) as u8 % 26)
            })
            .collect();
        let huge = Response::Databases(vec![crate::message::DatabaseSummary {
            path,
            title: String::new(),
        }]);
        assert!(matches!(
            s.respond(RequestId(1), &huge),
            Err(ProtocolError::FrameTooLarge { .. })
        ));
        assert_eq!((s.output_len(), s.in_flight()), (0, 1));
        s.fail(RequestId(1), ErrorCode::TooLarge, "too many databases")
            .unwrap();
        assert_eq!(s.in_flight(), 0);
    }

    #[test]
    fn a_client_closing_is_reported_and_ends_the_connection() {
        let mut p = Pair::connected(Compression::Off);
        p.client
            .close(ErrorCode::ServerError, "client shutting down");
        assert_eq!(
            p.deliver_to_server(),
            [ServerEvent::PeerClosed {
                code: ErrorCode::ServerError,
                message: "client shutting down".into()
            }]
        );
        assert_eq!(p.server.phase(), Phase::Closed);
        assert_eq!(
            p.server.output_len(),
            0,
            "no error frame back to a closed peer"
        );
        // Request-level error frames are not the client's to send.
        let mut s = open_server(Compression::Off);
        assert!(s.receive(&raw(FrameType::Error, 0, 1, &[0x90, 1])).is_err());
    }

    #[test]
    fn requests_before_a_clients_close_are_delivered_but_cannot_be_answered() {
        let mut s = open_server(Compression::Off);
        let mut bytes = request_bytes(1, &stats());
        bytes.extend(raw(
            FrameType::Error,
            0,
            0,
            &Failure::new(ErrorCode::ServerError, "bye").encode(),
        ));
        let events = s.receive(&bytes).unwrap();
        assert_eq!(events.len(), 2);
        assert!(matches!(events[1], ServerEvent::PeerClosed { .. }));
        assert_eq!(
            s.respond(RequestId(1), &Response::Done),
            Err(ProtocolError::Closed)
        );
        // Likewise a Hello followed at once by a close.
        let mut s = ServerConnection::new(ServerConfig::default());
        let mut bytes = hello_bytes(1..=1);
        bytes.extend(raw(FrameType::Error, 0, 0, &[0xf4, 0x01]));
        assert_eq!(s.receive(&bytes).unwrap().len(), 2);
        assert_eq!(s.accept(SessionId(1)), Err(ProtocolError::Closed));
        assert_eq!(
            s.refuse(ErrorCode::Forbidden, "x"),
            Err(ProtocolError::Closed)
        );
        assert_eq!(s.output_len(), 0);
    }

    #[test]
    fn read_entries_with_flags_reaches_the_server_intact() {
        let mut p = Pair::connected(Compression::Fast);
        let r = Request::ReadEntries {
            collection: crate::ids::CollectionHandle(2),
            start: Start::Key {
                key: "Smith".into(),
                prefix: true,
            },
            count: 50,
            flags: ReadFlags {
                backward: true,
                categories: true,
                count: true,
            },
        };
        let id = p.client.send_request(&r).unwrap();
        assert_eq!(
            p.deliver_to_server(),
            [ServerEvent::Request { id, request: r }]
        );
    }
}
