//! The machines driven by hand with hostile or mistaken input: a peer
//! that breaks the protocol ends the session with a typed error, writes
//! nothing and moves no history; a driver that answers what was not asked
//! is refused, and the session goes on as if the call never happened.

mod common;

use common::unid;
use nsf::{DbInstanceId, Seq, Timestamp};
use replica::msg::{ChangesSince, Entry, Hello, Summary, ToSource, ToTarget, Want};
use replica::testkit::{Body, ModelVersion, MODEL_REPLICA};
use replica::{
    BatchId, Envelope, ErrorCode, Failure, Opening, Packet, Peer, PullAction, PullConfig,
    PullPhase, Puller, QueryId, ReplicaError, Role, SessionId, Source, SourceAction, SourceConfig,
    SourcePhase,
};

type P = Puller<ModelVersion, Body>;
type S = Source<ModelVersion, Body>;

const SESSION: SessionId = SessionId(1);

fn peer(instance: u64) -> Peer {
    Peer {
        replica: MODEL_REPLICA,
        instance: DbInstanceId(instance),
    }
}

fn version(seq: u32) -> ModelVersion {
    ModelVersion {
        seq,
        time: 0,
        digest: 0,
    }
}

fn entry(i: u32, change: u64) -> Entry<ModelVersion> {
    Entry {
        unid: unid(i),
        version: version(1),
        size: 10,
        deleted: false,
        change: Seq(change),
    }
}

fn note(i: u32) -> Envelope<ModelVersion, Body> {
    Envelope {
        unid: unid(i),
        version: version(1),
        deleted: false,
        revisions: Vec::new(),
        size: 10,
        body: Body::default(),
    }
}

fn summary(
    upto: u64,
    last: bool,
    entries: Vec<Entry<ModelVersion>>,
) -> ToTarget<ModelVersion, Body> {
    ToTarget::Summary(Summary {
        upto: Seq(upto),
        last,
        entries,
    })
}

fn packet<M>(n: u32, body: M) -> Packet<M> {
    Packet {
        session: SESSION,
        n,
        body,
    }
}

fn drain_puller(p: &mut P) -> Vec<PullAction<ModelVersion, Body>> {
    std::iter::from_fn(|| p.next_action()).collect()
}

fn drain_source(s: &mut S) -> Vec<SourceAction<ModelVersion, Body>> {
    std::iter::from_fn(|| s.next_action()).collect()
}

fn sent_by_puller(actions: &[PullAction<ModelVersion, Body>]) -> Vec<ToSource> {
    actions
        .iter()
        .filter_map(|a| match a {
            PullAction::Send(p) => Some(p.body.clone()),
            _ => None,
        })
        .collect()
}

fn sent_by_source(
    actions: &[SourceAction<ModelVersion, Body>],
) -> Vec<ToTarget<ModelVersion, Body>> {
    actions
        .iter()
        .filter_map(|a| match a {
            SourceAction::Send(p) => Some(p.body.clone()),
            _ => None,
        })
        .collect()
}

/// A puller (instance 2) that has greeted a source (instance 1) and
/// asked for changes; the source's next packet is number 1.
fn streaming_puller(window: u16) -> P {
    let mut config = PullConfig::new(peer(2), Opening::Initiate(SESSION));
    config.window = window;
    let mut p = P::new(config, Vec::new(), Timestamp(0));
    let hello = ToTarget::Hello(Hello {
        peer: peer(1),
        role: Role::Source,
        high: Seq(100),
    });
    p.receive(packet(0, hello)).expect("a good Hello");
    let sent = sent_by_puller(&drain_puller(&mut p));
    assert!(matches!(
        sent.as_slice(),
        [ToSource::Hello(_), ToSource::ChangesSince(_)]
    ));
    assert_eq!(p.phase(), PullPhase::Streaming);
    p
}

/// A source (instance 1) that has greeted a target (instance 2) and got
/// its request; the target's next packet is number 2.
fn streaming_source() -> (S, Vec<SourceAction<ModelVersion, Body>>) {
    let mut s = S::new(
        SourceConfig::new(peer(1), Opening::Respond),
        Seq(100),
        Timestamp(0),
    );
    let hello = ToSource::Hello(Hello {
        peer: peer(2),
        role: Role::Target,
        high: Seq(0),
    });
    s.receive(packet(0, hello)).expect("a good Hello");
    let request = ToSource::ChangesSince(ChangesSince {
        since: Seq(0),
        selection: None,
        window: 4,
    });
    s.receive(packet(1, request)).expect("a good request");
    let actions = drain_source(&mut s);
    (s, actions)
}

/// Asserts the puller failed with `expected`, told the source, and never
/// asked for a write or a history save.
fn assert_failed_cleanly(
    p: &mut P,
    got: Result<(), ReplicaError>,
    expected: ReplicaError,
    before: &[PullAction<ModelVersion, Body>],
) {
    assert_eq!(got, Err(expected.clone()));
    assert_eq!(p.phase(), PullPhase::Failed);
    assert_eq!(p.error(), Some(&expected));
    let after = drain_puller(p);
    let all: Vec<_> = before.iter().chain(&after).collect();
    assert!(
        !all.iter()
            .any(|a| matches!(a, PullAction::Write(_) | PullAction::SaveHistory(_))),
        "nothing written, no history: {all:?}"
    );
    assert!(matches!(
        sent_by_puller(&after).as_slice(),
        [ToSource::Error(Failure {
            code: ErrorCode::Protocol,
            ..
        })]
    ));
}

#[test]
fn a_document_nobody_wanted_ends_the_session() {
    let mut p = streaming_puller(4);
    p.receive(packet(1, summary(5, true, vec![entry(1, 3)])))
        .expect("page");
    let actions = drain_puller(&mut p);
    let Some(PullAction::QueryLocal { query, .. }) = actions.first() else {
        panic!("a local query: {actions:?}");
    };
    p.local_versions(*query, vec![None]).expect("answer");
    let mut before = drain_puller(&mut p);
    assert!(matches!(
        sent_by_puller(&before).as_slice(),
        [ToSource::Want(_)]
    ));
    let got = p.receive(packet(2, ToTarget::Note(note(2))));
    before.extend(actions);
    assert_failed_cleanly(
        &mut p,
        got,
        ReplicaError::Unwanted { unid: unid(2) },
        &before,
    );
}

#[test]
fn a_document_before_any_want_ends_the_session() {
    let mut p = streaming_puller(4);
    let got = p.receive(packet(1, ToTarget::Note(note(1))));
    let expected = ReplicaError::Unexpected {
        message: "Note",
        state: "streaming",
    };
    assert_failed_cleanly(&mut p, got, expected, &[]);
}

#[test]
fn pages_that_go_backwards_or_hold_strangers_end_the_session() {
    let cases: Vec<(Vec<ToTarget<ModelVersion, Body>>, ReplicaError)> = vec![
        (
            vec![
                summary(5, false, vec![entry(1, 4)]),
                summary(3, false, vec![]),
            ],
            ReplicaError::PageOrder {
                after: Seq(5),
                upto: Seq(3),
            },
        ),
        (
            // An empty page that does not move is only allowed as the last.
            vec![summary(0, false, vec![])],
            ReplicaError::PageOrder {
                after: Seq(0),
                upto: Seq(0),
            },
        ),
        (
            vec![summary(5, false, vec![entry(1, 7)])],
            ReplicaError::EntryOutOfPage {
                unid: unid(1),
                change: Seq(7),
                after: Seq(0),
                upto: Seq(5),
            },
        ),
        (
            vec![summary(5, false, vec![entry(1, 2), entry(1, 3)])],
            ReplicaError::DuplicateEntry {
                upto: Seq(5),
                unid: unid(1),
            },
        ),
        (
            vec![summary(5, false, vec![entry(1, 3), entry(2, 2)])],
            ReplicaError::EntryOutOfPage {
                unid: unid(2),
                change: Seq(2),
                after: Seq(0),
                upto: Seq(5),
            },
        ),
    ];
    for (pages, expected) in cases {
        let mut p = streaming_puller(4);
        let mut last = Ok(());
        let mut before = Vec::new();
        for (n, page) in pages.into_iter().enumerate() {
            last = p.receive(packet(n as u32 + 1, page));
            if last.is_err() {
                break;
            }
            before.extend(drain_puller(&mut p));
        }
        assert_failed_cleanly(&mut p, last, expected, &before);
    }
}

#[test]
fn a_source_overrunning_the_window_ends_the_session() {
    let mut p = streaming_puller(1);
    p.receive(packet(1, summary(5, false, vec![entry(1, 4)])))
        .expect("first page");
    let before = drain_puller(&mut p);
    let got = p.receive(packet(2, summary(9, false, vec![entry(2, 8)])));
    assert_failed_cleanly(
        &mut p,
        got,
        ReplicaError::WindowExceeded { window: 1 },
        &before,
    );
}

#[test]
fn duplicates_and_strangers_are_ignored_and_a_gap_ends_the_session() {
    let mut p = streaming_puller(4);
    let hello_again = ToTarget::Hello(Hello {
        peer: peer(1),
        role: Role::Source,
        high: Seq(100),
    });
    assert_eq!(p.receive(packet(0, hello_again)), Ok(()), "a duplicate");
    let stranger = Packet {
        session: SessionId(99),
        n: 1,
        body: summary(5, true, vec![]),
    };
    assert_eq!(p.receive(stranger), Ok(()), "another session's packet");
    assert!(drain_puller(&mut p).is_empty());
    assert_eq!(p.phase(), PullPhase::Streaming);
    let got = p.receive(packet(3, summary(5, true, vec![])));
    assert_failed_cleanly(
        &mut p,
        got,
        ReplicaError::Gap {
            expected: 1,
            got: 3,
        },
        &[],
    );
}

#[test]
fn a_peer_error_ends_the_session_without_an_answer() {
    let mut p = streaming_puller(4);
    let failure = Failure {
        code: ErrorCode::Local,
        message: "disk full".into(),
    };
    let got = p.receive(packet(1, ToTarget::Error(failure)));
    assert!(matches!(
        got,
        Err(ReplicaError::Remote {
            code: ErrorCode::Local,
            ..
        })
    ));
    assert!(drain_puller(&mut p).is_empty(), "the peer is not answered");
}

#[test]
fn hellos_from_the_wrong_side_are_refused() {
    let mut s = S::new(
        SourceConfig::new(peer(1), Opening::Respond),
        Seq(0),
        Timestamp(0),
    );
    let as_source = ToSource::Hello(Hello {
        peer: peer(2),
        role: Role::Source,
        high: Seq(0),
    });
    assert_eq!(
        s.receive(packet(0, as_source)),
        Err(ReplicaError::WrongRole {
            ours: Role::Source,
            got: Role::Source
        })
    );
    assert_eq!(s.phase(), SourcePhase::Failed);

    let mut s = S::new(
        SourceConfig::new(peer(1), Opening::Respond),
        Seq(0),
        Timestamp(0),
    );
    let request = ToSource::ChangesSince(ChangesSince {
        since: Seq(0),
        selection: None,
        window: 1,
    });
    assert!(matches!(
        s.receive(packet(0, request)),
        Err(ReplicaError::Unexpected {
            message: "ChangesSince",
            ..
        })
    ));
}

#[test]
fn requests_out_of_range_are_refused() {
    for (window, selection) in [(0, None), (4, Some("x".repeat(64 * 1024 + 1)))] {
        let mut s = S::new(
            SourceConfig::new(peer(1), Opening::Respond),
            Seq(0),
            Timestamp(0),
        );
        let hello = ToSource::Hello(Hello {
            peer: peer(2),
            role: Role::Target,
            high: Seq(0),
        });
        s.receive(packet(0, hello)).expect("hello");
        let request = ToSource::ChangesSince(ChangesSince {
            since: Seq(0),
            selection,
            window,
        });
        assert!(matches!(
            s.receive(packet(1, request)),
            Err(ReplicaError::BadRequest(_))
        ));
        let actions = drain_source(&mut s);
        assert!(!actions
            .iter()
            .any(|a| matches!(a, SourceAction::ReadChanges { .. })));
    }
}

/// A source that sent one page offering documents 1 and 2 (upto 5).
fn source_with_a_page() -> S {
    let (mut s, actions) = streaming_source();
    assert!(matches!(
        actions.last(),
        Some(SourceAction::ReadChanges { after: Seq(0), .. })
    ));
    s.changes_read(Summary {
        upto: Seq(5),
        last: true,
        entries: vec![entry(1, 2), entry(2, 4)],
    })
    .expect("the page asked for");
    drain_source(&mut s);
    s
}

#[test]
fn wants_acks_and_dones_for_the_wrong_page_are_refused() {
    let cases: Vec<(ToSource, ReplicaError)> = vec![
        (
            ToSource::Want(Want {
                upto: Seq(4),
                unids: vec![unid(1)],
                have: Vec::new(),
            }),
            ReplicaError::WrongPage {
                message: "Want",
                upto: Seq(4),
            },
        ),
        (
            ToSource::Want(Want {
                upto: Seq(5),
                unids: vec![unid(3)],
                have: Vec::new(),
            }),
            ReplicaError::NotOffered {
                upto: Seq(5),
                unid: unid(3),
            },
        ),
        (
            ToSource::Want(Want {
                upto: Seq(5),
                unids: vec![unid(1), unid(1)],
                have: Vec::new(),
            }),
            ReplicaError::NotOffered {
                upto: Seq(5),
                unid: unid(1),
            },
        ),
        (
            ToSource::Want(Want {
                upto: Seq(5),
                unids: vec![unid(1)],
                have: vec![replica::ContentKey([1; 32]); replica::msg::MAX_HAVE + 1],
            }),
            ReplicaError::HaveTooLong {
                upto: Seq(5),
                len: replica::msg::MAX_HAVE + 1,
                max: replica::msg::MAX_HAVE,
            },
        ),
        (
            ToSource::Ack { upto: Seq(3) },
            ReplicaError::WrongPage {
                message: "Ack",
                upto: Seq(3),
            },
        ),
        (
            ToSource::Done { upto: Seq(4) },
            ReplicaError::WrongPage {
                message: "Done",
                upto: Seq(4),
            },
        ),
    ];
    for (message, expected) in cases {
        let mut s = source_with_a_page();
        assert_eq!(s.receive(packet(2, message)), Err(expected.clone()));
        assert_eq!(s.error(), Some(&expected));
        let actions = drain_source(&mut s);
        assert!(!actions
            .iter()
            .any(|a| matches!(a, SourceAction::ReadNotes { .. })));
        assert!(matches!(
            sent_by_source(&actions).as_slice(),
            [ToTarget::Error(Failure {
                code: ErrorCode::Protocol,
                ..
            })]
        ));
    }
}

#[test]
fn done_before_the_wanted_documents_were_sent_is_refused() {
    let mut s = source_with_a_page();
    let want = ToSource::Want(Want {
        upto: Seq(5),
        unids: vec![unid(2)],
        have: Vec::new(),
    });
    s.receive(packet(2, want)).expect("want");
    assert!(matches!(
        s.receive(packet(3, ToSource::Done { upto: Seq(5) })),
        Err(ReplicaError::WrongPage {
            message: "Done",
            ..
        })
    ));
}

#[test]
fn a_puller_refuses_answers_it_did_not_ask_for_and_goes_on() {
    let mut p = streaming_puller(4);
    p.receive(packet(1, summary(5, true, vec![entry(1, 2), entry(2, 3)])))
        .expect("page");
    let actions = drain_puller(&mut p);
    let Some(PullAction::QueryLocal { query, unids }) = actions.first() else {
        panic!("a query");
    };
    assert_eq!(unids, &vec![unid(1), unid(2)]);
    assert_eq!(
        p.local_versions(QueryId(77), vec![None, None]),
        Err(ReplicaError::UnknownQuery(QueryId(77)))
    );
    assert_eq!(
        p.local_versions(*query, vec![None]),
        Err(ReplicaError::AnswerMismatch {
            what: "local versions",
            expected: 2,
            got: 1
        })
    );
    assert_eq!(
        p.written(BatchId(5), vec![]),
        Err(ReplicaError::UnknownBatch(BatchId(5)))
    );
    assert!(
        drain_puller(&mut p).is_empty(),
        "refused answers change nothing"
    );
    assert_eq!(p.phase(), PullPhase::Streaming);
    p.local_versions(*query, vec![None, None])
        .expect("the right answer");
    let want = sent_by_puller(&drain_puller(&mut p));
    assert!(matches!(want.as_slice(), [ToSource::Want(w)] if w.unids == vec![unid(1), unid(2)]));
}

#[test]
fn a_source_refuses_answers_it_did_not_ask_for_and_goes_on() {
    let (mut s, _) = streaming_source();
    let too_long = Summary {
        upto: Seq(5000),
        last: true,
        entries: (1..=501).map(|i| entry(i, u64::from(i))).collect(),
    };
    assert!(matches!(
        s.changes_read(too_long),
        Err(ReplicaError::BadAnswer(_))
    ));
    s.changes_read(Summary {
        upto: Seq(5),
        last: true,
        entries: vec![entry(1, 2), entry(2, 4)],
    })
    .expect("the page asked for");
    assert!(matches!(
        s.changes_read(Summary {
            upto: Seq(6),
            last: true,
            entries: vec![]
        }),
        Err(ReplicaError::BadAnswer(_))
    ));
    drain_source(&mut s);
    let want = ToSource::Want(Want {
        upto: Seq(5),
        unids: vec![unid(2), unid(1)],
        have: Vec::new(),
    });
    s.receive(packet(2, want)).expect("want");
    let reads = drain_source(&mut s);
    assert!(matches!(
        reads.as_slice(),
        [SourceAction::ReadNotes { upto: Seq(5), .. }]
    ));
    assert!(matches!(
        s.notes_read(Seq(5), vec![note(3)], true),
        Err(ReplicaError::BadAnswer(_))
    ));
    assert!(matches!(
        s.notes_read(Seq(5), vec![note(1), note(1)], false),
        Err(ReplicaError::BadAnswer(_))
    ));
    assert!(
        drain_source(&mut s).is_empty(),
        "nothing sent for a refused answer"
    );
    s.notes_read(Seq(5), vec![note(1), note(2)], true)
        .expect("the documents asked for");
    let sent = sent_by_source(&drain_source(&mut s));
    assert!(matches!(
        sent.as_slice(),
        [
            ToTarget::Note(_),
            ToTarget::Note(_),
            ToTarget::Sent { upto: Seq(5) }
        ]
    ));
}

#[test]
fn an_idle_session_times_out_and_says_so() {
    let mut p = streaming_puller(4);
    p.tick(Timestamp(59_999_999));
    assert_eq!(p.phase(), PullPhase::Streaming);
    p.tick(Timestamp(60_000_000));
    assert!(matches!(p.error(), Some(ReplicaError::TimedOut { .. })));
    assert!(matches!(
        sent_by_puller(&drain_puller(&mut p)).as_slice(),
        [ToSource::Error(Failure {
            code: ErrorCode::TimedOut,
            ..
        })]
    ));
}

#[test]
fn a_cancelled_session_tells_the_peer_and_ignores_late_answers() {
    let mut p = streaming_puller(4);
    p.receive(packet(1, summary(5, true, vec![entry(1, 2)])))
        .expect("page");
    let Some(PullAction::QueryLocal { query, .. }) = drain_puller(&mut p).into_iter().next() else {
        panic!("a query");
    };
    p.cancel();
    assert!(matches!(
        sent_by_puller(&drain_puller(&mut p)).as_slice(),
        [ToSource::Error(Failure {
            code: ErrorCode::Cancelled,
            ..
        })]
    ));
    assert_eq!(p.local_versions(query, vec![None]), Ok(()), "late, ignored");
    assert_eq!(p.written(BatchId(0), vec![]), Ok(()), "late, ignored");
    assert!(drain_puller(&mut p).is_empty());
}

#[test]
fn a_responder_needs_the_first_packet_first() {
    let mut s = S::new(
        SourceConfig::new(peer(1), Opening::Respond),
        Seq(0),
        Timestamp(0),
    );
    let ack = ToSource::Ack { upto: Seq(1) };
    assert_eq!(
        s.receive(packet(4, ack)),
        Err(ReplicaError::Gap {
            expected: 0,
            got: 4
        })
    );
}
