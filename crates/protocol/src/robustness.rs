//! Property tests across both state machines: every message survives the
//! trip through a connected pair under every compression method, reads
//! split anywhere change nothing, and no byte stream (random, or a valid
//! session mutated) makes either side panic or come back to life after an
//! error. `PROPTEST_CASES` scales the number of cases (docs/protocol.md
//! gives the long run).

use crate::testkit::{Pair, Scripted};
use crate::{
    ClientConfig, ClientConnection, ClientEvent, Compression, Credentials, DbHandle, Phase,
    ProtocolError, Request, RequestId, Response, ServerEvent, Shape, Unid,
};
use proptest::prelude::*;
use std::collections::{HashMap, HashSet};

fn any_compression() -> impl Strategy<Value = Compression> {
    prop::sample::select(Compression::ALL.to_vec())
}

/// A client session as bytes: its Hello, then (sent after the Welcome,
/// so fed separately) `requests`, uploads carrying `upload` as content;
/// produced by a real client after a real handshake with a scripted
/// server.
fn client_stream(
    compression: Compression,
    user: &str,
    requests: &[Request],
    upload: &[u8],
) -> (Vec<u8>, Vec<u8>) {
    let mut client = new_client(compression, user);
    let hello = client.take_output();
    let mut server = Scripted::new();
    server.feed(&hello).unwrap();
    let _ = client.receive(&server.server.take_output());
    for r in requests {
        let Ok(id) = client.send_request(r) else {
            break;
        };
        if r.shape() == Shape::Upload {
            client.send_chunk(id, upload).unwrap();
            client.send_end(id).unwrap();
        }
    }
    (hello, client.take_output())
}

fn new_client(compression: Compression, user: &str) -> ClientConnection {
    ClientConnection::new(ClientConfig {
        compression: vec![compression],
        compression_threshold: 0,
        max_frame_size: 64 * 1024,
        credentials: (!user.is_empty()).then(|| Credentials {
            user: user.into(),
            password: "pw".into(),
        }),
        ..ClientConfig::default()
    })
    .unwrap()
}

/// Applies mutations (flip, insert, delete, truncate) to a byte stream.
fn mutate(mut bytes: Vec<u8>, ops: &[(u8, usize, u8)]) -> Vec<u8> {
    for &(op, at, b) in ops {
        let at = at % (bytes.len() + 1);
        match op {
            0 if at < bytes.len() => bytes[at] ^= b.max(1),
            1 => bytes.insert(at, b),
            2 if at < bytes.len() => {
                bytes.remove(at);
            }
            3 => bytes.truncate(at),
            _ => {}
        }
    }
    bytes
}

/// Feeds `bytes` to a scripted server, the first `first` bytes (the
/// Hello, answered before the client sends more) alone and the rest in
/// pieces, and checks the rules: no panic, events consistent with the
/// requests seen, and once closed (by an error or by the peer) nothing but
/// `Closed` and no more output. A `valid` stream must raise no error.
fn check_server_on(
    bytes: &[u8],
    first: usize,
    pieces: &[usize],
    valid: bool,
) -> Result<(), TestCaseError> {
    let mut s = Scripted::new();
    let mut uploads = HashSet::new();
    let mut closed_output = None;
    let mut rest = bytes;
    let first = first.min(bytes.len());
    let sizes = std::iter::once(&first).chain(pieces.iter().cycle());
    for n in sizes.take(bytes.len() + 2) {
        let (now, later) = rest.split_at((*n).min(rest.len()));
        rest = later;
        let result = s.feed(now);
        if let Some(len) = closed_output {
            prop_assert_eq!(result, Err(ProtocolError::Closed));
            prop_assert_eq!(s.server.output_len(), len);
            continue;
        }
        match result {
            Ok(events) => {
                for e in events {
                    match e {
                        ServerEvent::Request { id, request } => {
                            if request.shape() == Shape::Upload {
                                prop_assert!(uploads.insert(id));
                            }
                        }
                        ServerEvent::Chunk { id, .. } => prop_assert!(uploads.contains(&id)),
                        ServerEvent::End { id } => prop_assert!(uploads.remove(&id)),
                        ServerEvent::Authenticate { .. } | ServerEvent::PeerClosed { .. } => {}
                    }
                }
            }
            Err(e) => {
                prop_assert!(!valid, "valid stream refused: {}", e);
                prop_assert_ne!(e, ProtocolError::Closed);
                prop_assert_eq!(s.server.phase(), Phase::Closed);
                prop_assert!(s.server.output_len() > 0, "an error frame is queued");
            }
        }
        if s.server.phase() == Phase::Closed {
            closed_output = Some(s.server.output_len());
        }
    }
    Ok(())
}

/// A scripted server's Welcome and its answers to `requests` (fed
/// separately: they come after the client's requests), and a fresh
/// client, ready to be fed them, that will send the same requests (with
/// the same ids) once connected.
fn server_stream(
    compression: Compression,
    requests: &[Request],
) -> (Vec<u8>, Vec<u8>, ClientConnection) {
    let mut server = Scripted::new();
    let mut client = new_client(compression, "");
    server.feed(&client.take_output()).unwrap();
    let welcome = server.server.take_output();
    client.receive(&welcome).unwrap();
    send_all(&mut client, requests);
    server.feed(&client.take_output()).unwrap();
    let mut fresh = new_client(compression, "");
    fresh.take_output();
    (welcome, server.server.take_output(), fresh)
}

/// Sends `requests`, uploads with a little content.
fn send_all(client: &mut ClientConnection, requests: &[Request]) -> Vec<RequestId> {
    let mut ids = Vec::new();
    for r in requests {
        let id = client.send_request(r).unwrap();
        if r.shape() == Shape::Upload {
            client.send_chunk(id, b"data").unwrap();
            client.send_end(id).unwrap();
        }
        ids.push(id);
    }
    ids
}

/// What a client that sends `requests` once connected makes of `pieces`.
fn client_events(
    client: &mut ClientConnection,
    requests: &[Request],
    pieces: &[&[u8]],
) -> Vec<ClientEvent> {
    let mut all = Vec::new();
    for piece in pieces {
        let events = client.receive(piece).unwrap();
        if matches!(events.first(), Some(ClientEvent::Connected(_))) {
            send_all(client, requests);
        }
        all.extend(events);
    }
    all
}

/// Feeds a server's bytes to `client` (which will send `requests` once
/// connected), the first `first` bytes alone and the rest in pieces, and
/// checks the rules, as for the server.
fn check_client_on(
    mut client: ClientConnection,
    requests: &[Request],
    bytes: &[u8],
    first: usize,
    pieces: &[usize],
    valid: bool,
) -> Result<(), TestCaseError> {
    let mut answered: HashMap<RequestId, bool> = HashMap::new();
    let mut closed_output = None;
    let mut rest = bytes;
    let first = first.min(bytes.len());
    let sizes = std::iter::once(&first).chain(pieces.iter().cycle());
    for n in sizes.take(bytes.len() + 2) {
        let (now, later) = rest.split_at((*n).min(rest.len()));
        rest = later;
        let result = client.receive(now);
        if let Some(len) = closed_output {
            prop_assert_eq!(result, Err(ProtocolError::Closed));
            prop_assert_eq!(client.output_len(), len);
            continue;
        }
        match result {
            Ok(events) => {
                for e in events {
                    match e {
                        ClientEvent::Connected(_) => {
                            for id in send_all(&mut client, requests) {
                                answered.insert(id, false);
                            }
                        }
                        ClientEvent::Response { id, .. } | ClientEvent::Failed { id, .. } => {
                            let done = answered.get_mut(&id);
                            prop_assert_eq!(done.as_deref(), Some(&false));
                            answered.insert(id, true);
                        }
                        ClientEvent::Item { id, .. } | ClientEvent::Chunk { id, .. } => {
                            prop_assert_eq!(answered.get(&id), Some(&false));
                        }
                        ClientEvent::Closed { .. } => {}
                    }
                }
            }
            Err(e) => {
                prop_assert!(!valid, "valid stream refused: {}", e);
                prop_assert_ne!(e, ProtocolError::Closed);
                prop_assert_eq!(client.phase(), Phase::Closed);
            }
        }
        if client.phase() == Phase::Closed {
            closed_output = Some(client.output_len());
        }
    }
    Ok(())
}

fn small_requests() -> impl Strategy<Value = Vec<Request>> {
    prop::collection::vec(any::<Request>(), 0..6)
}

fn put() -> Request {
    Request::PutAttachment {
        db: DbHandle(1),
        unid: Unid([3; 16]),
        name: "notes.txt".into(),
        mime: "text/plain".into(),
        size: None,
    }
}

fn session_requests() -> Vec<Request> {
    vec![
        Request::OpenDatabase {
            path: "mail/alice.fdb".into(),
        },
        put(),
        Request::Search {
            db: DbHandle(1),
            formula: "SELECT Form = \"Memo\"".into(),
            since: None,
        },
        Request::GetAttachment {
            db: DbHandle(1),
            unid: Unid([3; 16]),
            name: "notes.txt".into(),
        },
        Request::Statistics,
    ]
}

#[test]
fn every_split_point_of_a_session_gives_the_same_events_and_answers() {
    let upload = b"the quick brown fox jumps over the lazy dog; ".repeat(30);
    for compression in Compression::ALL {
        let (hello, bytes) = client_stream(compression, "alice", &session_requests(), &upload);
        let mut whole = Scripted::new();
        let mut want = whole.feed(&hello).unwrap();
        want.extend(whole.feed(&bytes).unwrap());
        let want_out = whole.server.take_output();
        assert_eq!(want.len(), 1 + 5 + 1 + 1, "{want:?}");
        for cut in 0..=bytes.len() {
            let mut s = Scripted::new();
            let mut got = s.feed(&hello).unwrap();
            got.extend(s.feed(&bytes[..cut]).unwrap());
            got.extend(s.feed(&bytes[cut..]).unwrap());
            assert_eq!(got, want, "{compression} cut at {cut}");
            assert_eq!(s.server.take_output(), want_out);
        }
    }
    // And the answers, split anywhere, reach the client the same.
    for compression in Compression::ALL {
        let (welcome, bytes, mut client) = server_stream(compression, &session_requests());
        let want = client_events(&mut client, &session_requests(), &[&welcome, &bytes]);
        assert_eq!(client.in_flight(), 0, "{compression}: {want:?}");
        assert_eq!(want.len(), 1 + 1 + 1 + 2 + 3 + 1, "{want:?}");
        for cut in 0..=bytes.len() {
            let (_, _, mut client) = server_stream(compression, &session_requests());
            let got = client_events(
                &mut client,
                &session_requests(),
                &[&welcome, &bytes[..cut], &bytes[cut..]],
            );
            assert_eq!(got, want, "{compression} cut at {cut}");
        }
    }
}

proptest! {
    #[test]
    fn requests_round_trip_through_a_connected_pair(
        compression in any_compression(),
        requests in prop::collection::vec(any::<Request>(), 1..8),
    ) {
        let mut p = Pair::connected(compression);
        let ids: Vec<RequestId> = requests
            .iter()
            .map(|r| p.client.send_request(r).unwrap())
            .collect();
        let events = p.deliver_to_server();
        prop_assert_eq!(events.len(), requests.len());
        for ((e, id), r) in events.iter().zip(&ids).zip(&requests) {
            match e {
                ServerEvent::Request { id: got, request } => {
                    prop_assert_eq!(got, id);
                    prop_assert_eq!(format!("{request:?}"), format!("{r:?}"));
                }
                other => prop_assert!(false, "unexpected {:?}", other),
            }
        }
    }

    #[test]
    fn responses_and_items_round_trip_through_a_connected_pair(
        compression in any_compression(),
        responses in prop::collection::vec(any::<Response>(), 1..8),
    ) {
        let mut p = Pair::connected(compression);
        let search = Request::Search { db: DbHandle(1), formula: "SELECT @All".into(), since: None };
        let id = p.client.send_request(&search).unwrap();
        p.deliver_to_server();
        let (last, items) = responses.split_last().unwrap();
        for item in items {
            p.server.send_item(id, item).unwrap();
        }
        p.server.respond(id, last).unwrap();
        let events = p.deliver_to_client();
        prop_assert_eq!(events.len(), responses.len());
        for (e, want) in events.iter().zip(&responses) {
            let got = match e {
                ClientEvent::Item { item, .. } => item,
                ClientEvent::Response { response, .. } => response,
                other => return Err(TestCaseError::fail(format!("unexpected {other:?}"))),
            };
            prop_assert_eq!(format!("{got:?}"), format!("{want:?}"));
        }
        prop_assert_eq!(p.client.in_flight(), 0);
    }

    #[test]
    fn random_reads_of_a_session_give_the_same_events(
        compression in any_compression(),
        requests in small_requests(),
        pieces in prop::collection::vec(1usize..200, 1..20),
    ) {
        let (hello, bytes) = client_stream(compression, "", &requests, b"x");
        let mut whole = Scripted::new();
        let mut want = whole.feed(&hello).unwrap();
        want.extend(whole.feed(&bytes).unwrap());
        let mut s = Scripted::new();
        let mut got = s.feed(&hello).unwrap();
        let mut rest = &bytes[..];
        for n in pieces.iter().cycle() {
            if rest.is_empty() {
                break;
            }
            let (now, later) = rest.split_at((*n).min(rest.len()));
            got.extend(s.feed(now).unwrap());
            rest = later;
        }
        prop_assert_eq!(format!("{got:?}"), format!("{want:?}"));
    }

    #[test]
    fn random_bytes_never_panic_either_side(
        bytes in prop::collection::vec(any::<u8>(), 0..600),
        pieces in prop::collection::vec(1usize..64, 1..8),
    ) {
        check_server_on(&bytes, pieces[0], &pieces, false)?;
        // Behind a valid Hello, the random bytes reach the open phase.
        let (mut hello, _) = client_stream(Compression::Fast, "", &[], b"");
        let first = hello.len();
        hello.extend_from_slice(&bytes);
        check_server_on(&hello, first, &pieces, false)?;
        check_client_on(new_client(Compression::Fast, ""), &[], &bytes, pieces[0], &pieces, false)?;
    }

    #[test]
    fn mutated_sessions_never_panic_either_side(
        compression in any_compression(),
        user in prop::sample::select(vec!["", "alice", "mallory"]),
        requests in prop::collection::vec(any::<Request>(), 1..8),
        ops in prop::collection::vec((0u8..4, any::<usize>(), any::<u8>()), 0..4),
        pieces in prop::collection::vec(1usize..300, 1..8),
    ) {
        let (mut bytes, rest) = client_stream(compression, user, &requests, b"some attachment bytes");
        let first = bytes.len();
        bytes.extend(rest);
        check_server_on(&mutate(bytes, &ops), first, &pieces, ops.is_empty())?;
        let (mut answers, rest, client) = server_stream(compression, &requests);
        let first = answers.len();
        answers.extend(rest);
        check_client_on(
            client,
            &requests,
            &mutate(answers, &ops),
            first,
            &pieces,
            ops.is_empty(),
        )?;
    }
}

/// The session shown byte by byte in docs/protocol.md: a format fixture,
/// so the documented bytes and the code cannot drift apart.
#[test]
fn the_documented_session_bytes_are_exact() {
    fn hex(s: &str) -> Vec<u8> {
        s.split(' ')
            .map(|b| u8::from_str_radix(b, 16).unwrap())
            .collect()
    }
    let mut c = ClientConnection::new(ClientConfig {
        client_name: "cli".into(),
        compression: vec![Compression::Strong, Compression::Fast],
        credentials: Some(Credentials {
            user: "alice".into(),
            password: "pw".into(),
        }),
        ..ClientConfig::default()
    })
    .unwrap();
    let hello = c.take_output();
    assert_eq!(
        hello,
        hex("20 00 00 00 01 00 00 00 00 00 46 4f 4c 49 4f 01 00 01 00 03 63 6c 69 02 02 01 01 05 61 6c 69 63 65 02 70 77")
    );
    let mut s = crate::ServerConnection::new(crate::ServerConfig {
        server_name: "folio".into(),
        ..crate::ServerConfig::default()
    });
    s.receive(&hello).unwrap();
    s.accept(crate::SessionId(42)).unwrap();
    let welcome = s.take_output();
    assert_eq!(
        welcome,
        hex("17 00 00 00 02 00 00 00 00 00 01 00 02 2a 00 00 00 00 00 00 00 05 66 6f 6c 69 6f")
    );
    c.receive(&welcome).unwrap();
    let read = Request::ReadDocument {
        db: DbHandle(1),
        doc: crate::DocRef::NoteId(crate::NoteId(300)),
    };
    let id = c.send_request(&read).unwrap();
    let request = c.take_output();
    assert_eq!(request, hex("0b 00 00 00 03 00 01 00 00 00 06 01 01 ac 02"));
    s.receive(&request).unwrap();
    s.fail(id, crate::ErrorCode::NotFound, "no document 300")
        .unwrap();
    assert_eq!(
        s.take_output(),
        hex("17 00 00 00 08 00 01 00 00 00 94 01 6e 6f 20 64 6f 63 75 6d 65 6e 74 20 33 30 30")
    );
}
