//! Test helpers shared by the state machines' tests: a client and a
//! server wired back to back, and raw frame building.

use crate::frame::{write_frame, Flags, FrameType, DEFAULT_MAX_FRAME_SIZE};
use crate::{
    ClientConfig, ClientConnection, ClientEvent, Compression, Phase, RequestId, ServerConfig,
    ServerConnection, ServerEvent, SessionId,
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
