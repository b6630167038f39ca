//! Test helpers shared by the state machines' tests: a client and a
//! server wired back to back, raw frame building, and a scripted server
//! caller that answers every request so streams can run deep.

use crate::frame::{write_frame, Flags, FrameType, DEFAULT_MAX_FRAME_SIZE};
use crate::{
    ClientConfig, ClientConnection, ClientEvent, Compression, ErrorCode, Phase, ProtocolError,
    Request, RequestId, Response, ServerConfig, ServerConnection, ServerEvent, SessionId, Shape,
};

/// The bytes of one frame, for feeding hand-made (often hostile) input.
pub(crate) fn raw(kind: FrameType, flags: u8, id: u32, body: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    write_frame(
        &mut out,
        DEFAULT_MAX_FRAME_SIZE,
        kind,
        Flags::NONE,
        RequestId(id),
        body,
    )
    .expect("test frames fit");
    out[5] = flags;
    out
}

/// A client and a server whose bytes the test moves by hand.
pub(crate) struct Pair {
    pub(crate) client: ClientConnection,
    pub(crate) server: ServerConnection,
}

impl Pair {
    /// A pair that completed the handshake with the given compression
    /// (threshold 0: every body that shrinks is compressed).
    pub(crate) fn connected(compression: Compression) -> Pair {
        let mut pair = Pair {
            client: ClientConnection::new(ClientConfig {
                compression: vec![compression],
                compression_threshold: 0,
                ..ClientConfig::default()
            })
            .expect("hello fits"),
            server: ServerConnection::new(ServerConfig {
                compression: vec![compression],
                compression_threshold: 0,
                ..ServerConfig::default()
            }),
        };
        let events = pair.deliver_to_server();
        assert!(matches!(events[..], [ServerEvent::Authenticate { .. }]));
        pair.server.accept(SessionId(42)).unwrap();
        let events = pair.deliver_to_client();
        assert!(matches!(events[..], [ClientEvent::Connected(_)]));
        assert_eq!(pair.client.phase(), Phase::Open);
        assert_eq!(pair.server.phase(), Phase::Open);
        pair
    }

    /// Delivers the client's queued bytes to the server.
    pub(crate) fn deliver_to_server(&mut self) -> Vec<ServerEvent> {
        let bytes = self.client.take_output();
        self.server.receive(&bytes).expect("server accepts")
    }

    /// Delivers the server's queued bytes to the client.
    pub(crate) fn deliver_to_client(&mut self) -> Vec<ClientEvent> {
        let bytes = self.server.take_output();
        self.client.receive(&bytes).expect("client accepts")
    }
}

/// A server and a scripted caller: accepts every Hello and answers every
/// request completely (items and chunks included), so a client stream
/// can go as deep as its bytes allow.
pub(crate) struct Scripted {
    pub(crate) server: ServerConnection,
}

impl Scripted {
    pub(crate) fn new() -> Scripted {
        Scripted {
            server: ServerConnection::new(ServerConfig {
                compression_threshold: 0,
                max_frame_size: 64 * 1024,
                ..ServerConfig::default()
            }),
        }
    }

    /// Feeds bytes and answers what they asked; returns the receive result.
    pub(crate) fn feed(&mut self, bytes: &[u8]) -> Result<Vec<ServerEvent>, ProtocolError> {
        let events = self.server.receive(bytes)?;
        for e in &events {
            self.answer(e);
        }
        Ok(events)
    }

    /// Answers one event. Every answer must be accepted, unless the same
    /// read also closed the connection (a client's error frame after its
    /// requests): then answers get `Closed`.
    fn answer(&mut self, event: &ServerEvent) {
        let closed = self.server.phase() == Phase::Closed;
        let check = |r: Result<(), ProtocolError>| match r {
            Ok(()) => assert!(!closed, "answer accepted on a closed connection"),
            Err(ProtocolError::Closed) if closed => {}
            Err(e) => panic!("{e}"),
        };
        let s = &mut self.server;
        let done = Response::Done;
        match event {
            ServerEvent::Authenticate { credentials, .. } => {
                if credentials.as_ref().is_some_and(|c| c.user == "mallory") {
                    check(s.refuse(ErrorCode::Unauthenticated, "no"));
                } else {
                    check(s.accept(SessionId(1)));
                }
            }
            ServerEvent::Request { id, request } => match request.shape() {
                Shape::Single => check(s.respond(*id, &done)),
                Shape::Stream => {
                    check(s.send_item(*id, &Response::SearchDone { found: 0 }));
                    check(s.respond(*id, &Response::SearchDone { found: 1 }));
                }
                Shape::Download => {
                    check(s.send_item(*id, &Response::AttachmentSent { size: 3 }));
                    check(s.send_chunk(*id, b"abc"));
                    check(s.respond(*id, &Response::AttachmentSent { size: 3 }));
                }
                Shape::Upload => {
                    if let Request::PutAttachment { size: Some(0), .. } = request {
                        check(s.fail(*id, ErrorCode::TooLarge, "refused early"));
                    }
                }
            },
            ServerEvent::End { id } => check(s.respond(*id, &done)),
            ServerEvent::Chunk { .. } | ServerEvent::PeerClosed { .. } => {}
        }
    }
}
