//! Arbitrary bytes into `ServerConnection::receive`: must never panic,
//! and once the connection has failed or closed it must stay closed.
//!
//! The first input byte steers the run so the fuzzer reaches every phase:
//! bit 7 starts behind a valid Hello (already accepted), bits 5-6 pick the
//! compression that Hello offers, bits 0-4 the size of the reads the rest
//! of the input is cut into. A scripted caller accepts every Hello and
//! answers every request completely (items, chunks, final answers), so
//! uploads, streams and id reuse are all exercised.

#![no_main]

use libfuzzer_sys::fuzz_target;
use protocol::{
    Compression, ErrorCode, Flags, Frame, FrameType, Hello, Phase, ProtocolError, Request,
    RequestId, Response, ServerConfig, ServerConnection, ServerEvent, SessionId, Shape,
};

fuzz_target!(|data: &[u8]| {
    let Some((&mode, data)) = data.split_first() else {
        return;
    };
    let mut server = ServerConnection::new(ServerConfig {
        max_frame_size: 64 * 1024,
        compression_threshold: 0,
        ..ServerConfig::default()
    });
    if mode & 0x80 != 0 {
        let method = Compression::ALL[usize::from(mode >> 5 & 0x03) % 3];
        let events = server
            .receive(&hello(method))
            .expect("a valid Hello is accepted");
        answer(&mut server, events);
        assert_eq!(server.phase(), Phase::Open);
    }
    let piece = 1 + usize::from(mode & 0x1f) * 16;
    let mut closed = false;
    for chunk in data.chunks(piece) {
        match server.receive(chunk) {
            Ok(events) => {
                assert!(!closed, "events after the connection closed");
                answer(&mut server, events);
            }
            Err(ProtocolError::Closed) => assert!(closed, "closed without a cause"),
            Err(_) => {
                assert!(!closed, "a second error after the connection closed");
                assert_eq!(server.phase(), Phase::Closed);
            }
        }
        closed = server.phase() == Phase::Closed;
        server.take_output();
    }
});

fn hello(method: Compression) -> Vec<u8> {
    let body = Hello {
        versions: 1..=1,
        client_name: "fuzz".into(),
        compression: vec![method],
        credentials: None,
        strong_level: None,
    }
    .encode()
    .expect("encodes");
    let frame = Frame {
        kind: FrameType::Hello,
        flags: Flags::NONE,
        request_id: RequestId(0),
        body: body.into(),
    };
    let mut out = Vec::new();
    frame.encode(64 * 1024, &mut out).expect("fits");
    out
}

/// Plays the server's caller. Every answer must be accepted, since it
/// only answers what the events asked, unless the same read also closed
/// the connection (a client's error frame after its requests): then
/// answers get `Closed`.
fn answer(server: &mut ServerConnection, events: Vec<ServerEvent>) {
    for event in events {
        let closed = server.phase() == Phase::Closed;
        let check = |r: Result<(), ProtocolError>, what: &str| match r {
            Ok(()) => assert!(!closed, "{what} accepted on a closed connection"),
            Err(ProtocolError::Closed) if closed => {}
            Err(e) => panic!("{what}: {e}"),
        };
        match event {
            ServerEvent::Authenticate { .. } => check(server.accept(SessionId(1)), "accept"),
            ServerEvent::Request { id, request } => match request.shape() {
                Shape::Single => check(server.respond(id, &Response::Done), "respond"),
                Shape::Stream => {
                    check(
                        server.send_item(id, &Response::SearchDone { found: 0 }),
                        "item",
                    );
                    check(
                        server.respond(id, &Response::SearchDone { found: 1 }),
                        "respond",
                    );
                }
                Shape::Download => {
                    check(
                        server.send_item(id, &Response::AttachmentSent { size: 2 }),
                        "item",
                    );
                    check(server.send_chunk(id, b"ok"), "chunk");
                    check(
                        server.respond(id, &Response::AttachmentSent { size: 2 }),
                        "respond",
                    );
                }
                Shape::Upload => {
                    if let Request::PutAttachment { size: Some(0), .. } = request {
                        check(
                            server.fail(id, ErrorCode::TooLarge, "refused early"),
                            "fail",
                        );
                    }
                }
            },
            ServerEvent::End { id } => check(server.respond(id, &Response::Done), "respond"),
            ServerEvent::Chunk { .. } | ServerEvent::PeerClosed { .. } => {}
        }
    }
}
