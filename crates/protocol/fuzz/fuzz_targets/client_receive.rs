//! Arbitrary bytes into `ClientConnection::receive`: must never panic,
//! and once the connection has failed or closed it must stay closed.
//!
//! The first input byte steers the run: bit 7 starts behind a valid
//! Welcome (compression from bits 5-6) with four requests in flight, one
//! of each shape (ids 1 to 4: statistics, search, download, upload), so
//! answers, items and chunks can match; bits 0-4 set the read size.

#![no_main]

use libfuzzer_sys::fuzz_target;
use protocol::{
    ClientConfig, ClientConnection, Compression, DbHandle, Flags, Frame, FrameType, Phase,
    ProtocolError, Request, RequestId, SessionId, Unid, Welcome,
};

fuzz_target!(|data: &[u8]| {
    let Some((&mode, data)) = data.split_first() else {
        return;
    };
    let mut client = ClientConnection::new(ClientConfig {
        compression: Compression::ALL.to_vec(),
        compression_threshold: 0,
        max_frame_size: 64 * 1024,
        ..ClientConfig::default()
    })
    .expect("hello fits");
    if mode & 0x80 != 0 {
        let method = Compression::ALL[usize::from(mode >> 5 & 0x03) % 3];
        client
            .receive(&welcome(method))
            .expect("a valid Welcome is accepted");
        for r in requests() {
            client.send_request(&r).expect("request fits");
        }
        assert_eq!(client.phase(), Phase::Open);
    }
    let piece = 1 + usize::from(mode & 0x1f) * 16;
    let mut closed = false;
    for chunk in data.chunks(piece) {
        match client.receive(chunk) {
            Ok(_) => assert!(!closed, "events after the connection closed"),
            Err(ProtocolError::Closed) => assert!(closed, "closed without a cause"),
            Err(_) => {
                assert!(!closed, "a second error after the connection closed");
                assert_eq!(client.phase(), Phase::Closed);
            }
        }
        closed = client.phase() == Phase::Closed;
        client.take_output();
    }
});

fn welcome(method: Compression) -> Vec<u8> {
    let body = Welcome {
        version: 1,
        compression: method,
        session: SessionId(1),
        server_name: "fuzz".into(),
    }
    .encode()
    .expect("encodes");
    let frame = Frame {
        kind: FrameType::Welcome,
        flags: Flags::NONE,
        request_id: RequestId(0),
        body: body.into(),
    };
    let mut out = Vec::new();
    frame.encode(64 * 1024, &mut out).expect("fits");
    out
}

fn requests() -> [Request; 4] {
    let db = DbHandle(1);
    let unid = Unid([1; 16]);
    [
        Request::Statistics,
        Request::Search {
            db,
            formula: "SELECT @All".into(),
            since: None,
        },
        Request::GetAttachment {
            db,
            unid,
            name: "a".into(),
        },
        Request::PutAttachment {
            db,
            unid,
            name: "a".into(),
            mime: "x/y".into(),
            size: None,
        },
    ]
}
