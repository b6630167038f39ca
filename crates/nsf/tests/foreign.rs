//! Versions made elsewhere (`Database::put_foreign`, design.md I24, I25):
//! stored as given or not at all by the version order, idempotent,
//! atomic across crashes, and converging to one note whatever order the
//! versions arrive in.

use nsf::{
    Database, Engine, ForeignAttachment, ForeignContent, ForeignNote, ForeignOutcome, Item,
    ItemValue, ManualClock, Note, NoteId, NsfError, OriginatorId, ReplicaId, Seq, Timestamp, Unid,
    Version,
};
use proptest::prelude::*;
use std::io::Read;
use std::sync::Arc;
use storage::backend::{CrashBackend, CrashMode, MemBackend};
use storage::Backend;

mod common;
use common::config;

const UNID: Unid = Unid([0x42; 16]);

fn text(name: &str, v: &str) -> Item {
    Item {
        name: name.into(),
        value: ItemValue::Text(v.into()),
    }
}

fn version(seq: u32, time: i64, items: Vec<Item>) -> ForeignNote {
    ForeignNote {
        oid: OriginatorId {
            unid: UNID,
            seq_num: seq,
            seq_time: Timestamp(time),
        },
        created: Timestamp(1_000),
        modified: Timestamp(time),
        deleted: false,
        items,
        attachments: Vec::new(),
        revisions: Vec::new(),
    }
}

fn stub(seq: u32, time: i64) -> ForeignNote {
    ForeignNote {
        deleted: true,
        ..version(seq, time, vec![])
    }
}

fn with_file(mut n: ForeignNote, name: &str, content: ForeignContent) -> ForeignNote {
    n.attachments.push(ForeignAttachment {
        name: name.into(),
        mime: "application/octet-stream".into(),
        content,
    });
    n
}

/// The note a foreign version without attachments is stored as, for its
/// version (the note id and local times do not count).
fn as_note(n: &ForeignNote) -> Note {
    Note {
        note_id: NoteId(1),
        oid: n.oid,
        created: n.created,
        modified: n.modified,
        added: Timestamp(0),
        change_seq: Seq(0),
        deleted: n.deleted,
        items: n.items.clone(),
    }
}

fn open(backend: Arc<dyn Backend>) -> Engine {
    Engine::open(backend, config(true)).unwrap().0
}

fn engine_with_db(path: &str) -> (Engine, Arc<Database>) {
    let engine = open(Arc::new(MemBackend::new()));
    let db = engine.create_database(path, "").unwrap();
    (engine, db)
}

fn content(db: &Database, name: &str) -> Vec<u8> {
    let mut out = Vec::new();
    db.open_attachment(UNID, name)
        .unwrap()
        .read_to_end(&mut out)
        .unwrap();
    out
}

#[test]
fn a_new_unid_is_stored_exactly_as_given_and_twice_is_already_have() {
    let clock = Arc::new(ManualClock::new(Timestamp(77_000)));
    let mut cfg = config(true);
    cfg.clock = clock.clone();
    let (engine, _) = Engine::open(Arc::new(MemBackend::new()), cfg).unwrap();
    let db = engine.create_database("f.fdb", "").unwrap();
    db.create(vec![text("Local", "x")]).unwrap();
    let make = || {
        with_file(
            version(3, 5_000, vec![text("Subject", "hello"), text("To", "bob")]),
            "a.bin",
            ForeignContent::Bytes(vec![9; 4_000]),
        )
    };
    let first = db.put_foreign(make()).unwrap();
    let ForeignOutcome::Stored(meta) = first else {
        panic!("{first:?}");
    };
    let stored = db.get(UNID).unwrap();
    assert_eq!(stored.oid, make().oid, "the identity is kept");
    assert_eq!(
        (stored.created, stored.modified),
        (Timestamp(1_000), Timestamp(5_000))
    );
    assert_eq!(stored.added, Timestamp(77_000), "added here, by this clock");
    assert_eq!(stored.item("Subject"), Some(&text("Subject", "hello")));
    assert_eq!(content(&db, "a.bin"), vec![9; 4_000]);
    assert_eq!(meta.change_seq, db.last_seq());
    let seq = db.last_seq();

    let again = db.put_foreign(make()).unwrap();
    assert_eq!(again, ForeignOutcome::AlreadyHave(meta));
    assert_eq!(db.last_seq(), seq, "nothing changed");
    let report = db.check().unwrap();
    assert_eq!((report.notes, report.stubs), (2, 0));
    assert_eq!(
        report.attachment_pages, 1,
        "the second copy's page went back to the free list"
    );
    assert_eq!(db.modified_since(Seq(0), 10).unwrap().len(), 2);
    drop(db);
    engine.close().unwrap();
}

#[test]
fn the_higher_version_wins_whichever_arrives_first() {
    let cases: Vec<(&str, ForeignNote, ForeignNote)> = vec![
        (
            "more edits",
            version(2, 9_000, vec![text("S", "old")]),
            version(3, 1_000, vec![text("S", "new")]),
        ),
        (
            "same edits, later",
            version(3, 1_000, vec![text("S", "early")]),
            version(3, 2_000, vec![text("S", "late")]),
        ),
        (
            "a stub with more edits",
            version(2, 1_000, vec![text("S", "live")]),
            stub(3, 1_000),
        ),
        (
            "a document revived past its stub",
            stub(2, 5_000),
            version(4, 1_000, vec![text("S", "back")]),
        ),
    ];
    for (what, low, high) in cases {
        let expected = as_note(&high).version();
        // Low first: the high version replaces it.
        let (engine, db) = engine_with_db("a.fdb");
        db.put_foreign(copy(&low)).unwrap();
        match db.put_foreign(copy(&high)).unwrap() {
            ForeignOutcome::Replaced { loser, .. } => {
                assert_eq!(loser.version(), as_note(&low).version(), "{what}")
            }
            other => panic!("{what}: {other:?}"),
        }
        assert_eq!(db.get_any(UNID).unwrap().version(), expected, "{what}");
        drop(db);
        engine.close().unwrap();
        // High first: the low version loses and changes nothing.
        let (engine, db) = engine_with_db("b.fdb");
        db.put_foreign(copy(&high)).unwrap();
        let seq = db.last_seq();
        match db.put_foreign(copy(&low)).unwrap() {
            ForeignOutcome::Lost { winner, .. } => assert_eq!(winner, expected, "{what}"),
            other => panic!("{what}: {other:?}"),
        }
        assert_eq!(db.last_seq(), seq, "{what}");
        assert_eq!(db.get_any(UNID).unwrap().version(), expected, "{what}");
        db.check().unwrap();
        drop(db);
        engine.close().unwrap();
    }
}

#[test]
fn equal_sequence_and_time_are_decided_by_the_digest() {
    let a = version(2, 1_000, vec![text("S", "a")]);
    let b = version(2, 1_000, vec![text("S", "b")]);
    let (va, vb) = (as_note(&a).version(), as_note(&b).version());
    let (win, lose) = if va > vb { (&a, &b) } else { (&b, &a) };
    for order in [[win, lose], [lose, win]] {
        let (engine, db) = engine_with_db("d.fdb");
        for v in order {
            db.put_foreign(copy(v)).unwrap();
        }
        assert_eq!(db.get_any(UNID).unwrap().items, win.items);
        drop(db);
        engine.close().unwrap();
    }
}

#[test]
fn a_replaced_version_gives_its_attachments_back_and_a_losing_one_streams_nothing() {
    let (engine, db) = engine_with_db("r.fdb");
    let v1 = with_file(
        version(1, 1_000, vec![text("S", "one")]),
        "x.bin",
        // Under 4 KiB: in this file's blob pages, which the test counts.
        ForeignContent::Reader(Box::new(std::io::repeat(1).take(4_000))),
    );
    db.put_foreign(v1).unwrap();
    assert_eq!(content(&db, "x.bin"), vec![1; 4_000]);
    assert!(db.check().unwrap().attachment_pages > 0);
    db.put_foreign(stub(2, 1_000)).unwrap();
    let report = db.check().unwrap();
    assert_eq!((report.stubs, report.attachment_pages), (1, 0));

    /// A reader that must never be read: the version it belongs to loses.
    struct Untouchable;
    impl Read for Untouchable {
        fn read(&mut self, _: &mut [u8]) -> std::io::Result<usize> {
            panic!("the content of a version that loses was read")
        }
    }
    let old = with_file(
        version(1, 500, vec![text("S", "older")]),
        "y.bin",
        ForeignContent::Reader(Box::new(Untouchable)),
    );
    assert!(matches!(
        db.put_foreign(old).unwrap(),
        ForeignOutcome::Lost { .. }
    ));
    drop(db);
    engine.close().unwrap();
}

#[test]
fn bad_foreign_notes_are_refused_by_name_and_change_nothing() {
    let (engine, db) = engine_with_db("bad.fdb");
    let seq = db.last_seq();
    let refuse = |n: ForeignNote, what: &str| {
        let e = db.put_foreign(n).unwrap_err();
        assert!(matches!(e, NsfError::BadForeignNote { .. }), "{what}: {e}");
        assert!(e.to_string().contains(&UNID.to_string()), "{what}: {e}");
    };
    refuse(version(0, 1, vec![]), "sequence 0");
    refuse(
        with_file(stub(2, 1), "a", ForeignContent::Bytes(vec![1])),
        "a stub with a file",
    );
    refuse(
        ForeignNote {
            deleted: true,
            ..version(2, 1, vec![text("S", "x")])
        },
        "a stub with items",
    );
    refuse(version(1, 1, vec![text("$Secret", "x")]), "a reserved name");
    let twice = with_file(
        with_file(version(1, 1, vec![]), "a", ForeignContent::Bytes(vec![1])),
        "a",
        ForeignContent::Bytes(vec![2]),
    );
    refuse(twice, "two files of one name");
    let e = db
        .put_foreign(with_file(
            version(1, 1, vec![]),
            "f",
            ForeignContent::Reader(Box::new(FailingReader)),
        ))
        .unwrap_err();
    assert!(matches!(e, NsfError::Content(_)), "{e}");
    assert_eq!(db.last_seq(), seq);
    assert!(matches!(
        db.get_any(UNID),
        Err(NsfError::NoSuchDocument { .. })
    ));
    db.check().unwrap();
    drop(db);
    engine.close().unwrap();
}

struct FailingReader;
impl Read for FailingReader {
    fn read(&mut self, _: &mut [u8]) -> std::io::Result<usize> {
        Err(std::io::Error::other("the peer went away"))
    }
}

#[test]
fn a_replica_is_created_with_the_given_id() {
    let engine = open(Arc::new(MemBackend::new()));
    let id = ReplicaId(0x0123_4567_89AB_CDEF);
    let db = engine.create_replica("rep.fdb", id, "Replica").unwrap();
    assert_eq!(db.info().unwrap().replica_id, id);
    assert_eq!(db.acl_unid().0[..8], id.0.to_be_bytes());
    assert!(matches!(
        engine.create_replica("rep.fdb", id, ""),
        Err(NsfError::DatabaseExists(_))
    ));
    drop(db);
    engine.close().unwrap();
}

/// A power cut at every sync point of a `put_foreign` that replaces a
/// version (attachment content, then the log) leaves either the old or
/// the new version after recovery, never a mix, and the new one once
/// `put_foreign` returned.
#[test]
fn a_torn_put_foreign_leaves_the_old_or_the_new_version() {
    let old = || {
        with_file(
            version(1, 1_000, vec![text("S", "old")]),
            "o.bin",
            ForeignContent::Bytes(vec![1; 30_000]),
        )
    };
    let new = || {
        with_file(
            version(2, 2_000, vec![text("S", "new")]),
            "n.bin",
            ForeignContent::Bytes(vec![2; 3 << 20]),
        )
    };
    let mut crashed = 0;
    for k in 1.. {
        let disk = Arc::new(CrashBackend::new());
        let engine = open(disk.clone());
        let db = engine.create_replica("c.fdb", ReplicaId(9), "").unwrap();
        db.put_foreign(old()).unwrap();
        let old_version = db.get_any(UNID).unwrap().version();
        let mode = CrashMode::Torn { seed: k };
        disk.arm_crash(disk.sync_count() + k, mode);
        let put = db.put_foreign(new());
        let image = match disk.crashed_image() {
            Some(image) => {
                crashed += 1;
                image
            }
            None => disk.crash_now(mode),
        };
        let done = !disk.has_crashed();
        drop(db);
        drop(engine);

        let engine = open(Arc::new(image));
        let db = engine.open_database("c.fdb").unwrap();
        let note = db.get_any(UNID).unwrap();
        if put.is_ok() {
            assert_eq!(note.item("S"), Some(&text("S", "new")), "sync point {k}");
            assert_eq!(content(&db, "n.bin").len(), 3 << 20);
        } else if note.version() == old_version {
            assert_eq!(content(&db, "o.bin"), vec![1; 30_000], "sync point {k}");
        } else {
            assert_eq!(note.item("S"), Some(&text("S", "new")), "sync point {k}");
            assert_eq!(content(&db, "n.bin"), vec![2; 3 << 20], "sync point {k}");
        }
        db.check().unwrap();
        drop(db);
        engine.close().unwrap();
        if done {
            break;
        }
    }
    assert!(crashed >= 2, "only {crashed} sync points were cut");
}

fn copy(n: &ForeignNote) -> ForeignNote {
    assert!(n.attachments.is_empty(), "copies carry no content");
    ForeignNote {
        items: n.items.clone(),
        attachments: Vec::new(),
        revisions: n.revisions.clone(),
        ..*n
    }
}

/// A version as the property test draws it: sequence, time, body, stub.
type Drawn = (u32, i64, u8, bool);

fn make(&(seq, t, body, deleted): &Drawn) -> ForeignNote {
    let time = 1_000 + t;
    if deleted {
        stub(seq, time)
    } else {
        version(seq, time, vec![text("Body", &body.to_string())])
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    /// Every order of the same versions ends in the same note: the
    /// greatest version (I24).
    #[test]
    fn any_order_of_versions_converges_on_the_greatest(
        (versions, shuffled) in prop::collection::vec((1u32..4, 0i64..3, 0u8..3, any::<bool>()), 1..7)
            .prop_flat_map(|v| (Just(v.clone()), Just(v).prop_shuffle()))
    ) {
        let greatest: Version = versions.iter().map(|v| as_note(&make(v)).version()).max().unwrap();
        let engine = open(Arc::new(MemBackend::new()));
        let mut finals = Vec::new();
        for (path, order) in [("in.fdb", &versions), ("shuffled.fdb", &shuffled)] {
            let db = engine.create_replica(path, ReplicaId(5), "").unwrap();
            for v in order {
                db.put_foreign(make(v)).unwrap();
            }
            let note = db.get_any(UNID).unwrap();
            prop_assert_eq!(note.version(), greatest);
            let report = db.check().unwrap();
            prop_assert_eq!(report.notes + report.stubs, 1);
            finals.push((note.oid, note.created, note.modified, note.deleted, note.items));
        }
        prop_assert_eq!(&finals[0], &finals[1]);
        engine.close().unwrap();
    }
}

#[test]
fn a_batch_of_foreign_notes_shares_one_commit_and_answers_each() {
    let (engine, db) = engine_with_db("batch.fdb");
    let note = |i: u8| ForeignNote {
        oid: OriginatorId {
            unid: Unid([i; 16]),
            seq_num: 1,
            seq_time: Timestamp(5_000),
        },
        ..version(1, 5_000, vec![text("Subject", &format!("n{i}"))])
    };
    db.put_foreign(note(3)).unwrap();
    let before = engine.log_info().unwrap().commits;
    let bad = ForeignNote {
        oid: OriginatorId {
            seq_num: 0,
            ..note(9).oid
        },
        ..note(9)
    };
    let out = db.put_foreign_batch(vec![note(1), note(2), note(3), bad, note(4)]);
    assert_eq!(engine.log_info().unwrap().commits - before, 1, "one commit");
    assert!(matches!(out[0], Ok(ForeignOutcome::Stored(_))));
    assert!(matches!(out[1], Ok(ForeignOutcome::Stored(_))));
    assert!(matches!(out[2], Ok(ForeignOutcome::AlreadyHave(_))));
    assert!(matches!(out[3], Err(NsfError::BadForeignNote { .. })));
    assert!(matches!(out[4], Ok(ForeignOutcome::Stored(_))));
    for i in [1u8, 2, 4] {
        assert_eq!(db.get(Unid([i; 16])).unwrap().oid.seq_num, 1);
    }
    assert!(db.get(Unid([9; 16])).is_err());
    db.check().unwrap();
    drop(db);
    engine.close().unwrap();
}

/// Content held by reference (`ForeignContent::Held`) links to the object
/// the store already has, when the size and crc32c match it; a reference
/// to an object that is not there, or that holds other content, is
/// refused and writes nothing.
#[test]
fn held_content_links_an_existing_object_or_is_refused() {
    use sha2::Digest;
    let (_engine, db) = engine_with_db("held.fdb");
    let bytes: Vec<u8> = (0..50_000u32).map(|i| (i * 7 % 251) as u8).collect();
    let hash = nsf::ContentHash(sha2::Sha256::digest(&bytes).into());
    let crc = crc32c::crc32c(&bytes);
    let held = |seq, size, crc32c| {
        with_file(
            version(seq, i64::from(seq) * 1_000, vec![text("S", "v")]),
            "f.bin",
            ForeignContent::Held { hash, size, crc32c },
        )
    };
    // Not in the store yet.
    assert!(matches!(
        db.put_foreign(held(1, bytes.len() as u64, crc)),
        Err(NsfError::Store { .. })
    ));
    assert!(db.get_any(UNID).is_err(), "nothing written");

    let other = db.create(vec![text("S", "owner")]).unwrap().unid;
    db.put_attachment(other, "f.bin", "x/y", &mut &bytes[..])
        .unwrap();
    // There, but the reference claims other content.
    assert!(matches!(
        db.put_foreign(held(1, bytes.len() as u64, crc ^ 1)),
        Err(NsfError::Store { .. })
    ));
    assert!(matches!(
        db.put_foreign(held(1, bytes.len() as u64 + 1, crc)),
        Err(NsfError::Store { .. })
    ));
    assert!(db.get_any(UNID).is_err(), "nothing written");

    db.put_foreign(held(1, bytes.len() as u64, crc)).unwrap();
    let mut read = Vec::new();
    db.open_attachment(UNID, "f.bin")
        .unwrap()
        .read_to_end(&mut read)
        .unwrap();
    assert_eq!(read, bytes);
    let refs = db.check_store_refs().unwrap();
    assert_eq!(refs.references, 2, "{refs:?}");
    assert!(refs.mismatches.is_empty() && refs.missing_objects.is_empty());
}
