//! Every message is plain data: it survives postcard (what the native
//! protocol will carry) and JSON unchanged, and so do history entries.

mod common;

use common::unid;
use nsf::{DbInstanceId, Seq, Timestamp};
use replica::msg::{ChangesSince, Entry, Hello, Summary, ToSource, ToTarget, Want};
use replica::testkit::{Body, ModelVersion, MODEL_REPLICA};
use replica::{Envelope, ErrorCode, Failure, History, Packet, Peer, Role, SessionId};
use serde::de::DeserializeOwned;
use serde::Serialize;
use std::fmt::Debug;

fn round_trips<T: Serialize + DeserializeOwned + PartialEq + Debug>(value: &T) {
    let bytes = postcard::to_allocvec(value).expect("postcard encodes");
    let back: T = postcard::from_bytes(&bytes).expect("postcard decodes");
    assert_eq!(&back, value);
    let text = serde_json::to_string(value).expect("JSON encodes");
    let back: T = serde_json::from_str(&text).expect("JSON decodes");
    assert_eq!(&back, value);
}

fn peer() -> Peer {
    Peer {
        replica: MODEL_REPLICA,
        instance: DbInstanceId(u64::MAX),
    }
}

fn version() -> ModelVersion {
    ModelVersion {
        seq: 7,
        time: -5,
        digest: u64::MAX,
    }
}

#[test]
fn every_message_round_trips() {
    let mut body = Body::with_item("Subject", "héllo");
    body.attachments.insert("a.bin".into(), vec![0, 1, 255]);
    body.conflict_of = Some(unid(9));
    let to_source = [
        ToSource::Hello(Hello {
            peer: peer(),
            role: Role::Target,
            high: Seq(0),
        }),
        ToSource::ChangesSince(ChangesSince {
            since: Seq(u64::MAX),
            selection: Some(r#"SELECT Form = "Memo""#.into()),
            window: 3,
        }),
        ToSource::Want(Want {
            upto: Seq(4),
            unids: vec![unid(1), unid(2)],
            have: Vec::new(),
        }),
        ToSource::Ack { upto: Seq(4) },
        ToSource::Done { upto: Seq(9) },
        ToSource::Error(Failure {
            code: ErrorCode::BadSelection,
            message: "line 1".into(),
        }),
    ];
    for (n, body) in to_source.into_iter().enumerate() {
        round_trips(&Packet {
            session: SessionId(3),
            n: n as u32,
            body,
        });
    }
    let to_target: [ToTarget<ModelVersion, Body>; 5] = [
        ToTarget::Hello(Hello {
            peer: peer(),
            role: Role::Source,
            high: Seq(12),
        }),
        ToTarget::Summary(Summary {
            upto: Seq(12),
            last: true,
            entries: vec![Entry {
                unid: unid(1),
                version: version(),
                size: 3,
                deleted: true,
                change: Seq(11),
            }],
        }),
        ToTarget::Note(Envelope {
            unid: unid(1),
            version: version(),
            deleted: false,
            revisions: vec![version(), version()],
            size: 40,
            body,
        }),
        ToTarget::Sent { upto: Seq(12) },
        ToTarget::Error(Failure {
            code: ErrorCode::TimedOut,
            message: String::new(),
        }),
    ];
    for (n, body) in to_target.into_iter().enumerate() {
        round_trips(&Packet {
            session: SessionId(3),
            n: n as u32,
            body,
        });
    }
}

#[test]
fn history_entries_round_trip() {
    round_trips(&History {
        peer: peer(),
        selection: None,
        seen_upto: Seq(77),
        at: Timestamp(-1),
    });
}

#[test]
fn a_truncated_message_does_not_decode() {
    let packet = Packet {
        session: SessionId(1),
        n: 0,
        body: ToSource::Want(Want {
            upto: Seq(4),
            unids: vec![unid(1), unid(2)],
            have: Vec::new(),
        }),
    };
    let bytes = postcard::to_allocvec(&packet).expect("encodes");
    for cut in 0..bytes.len() {
        assert!(postcard::from_bytes::<Packet<ToSource>>(&bytes[..cut]).is_err());
    }
}
