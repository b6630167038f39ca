//! What replication keeps besides notes (design.md §11.5, I27, I30):
//! revisions recorded on every local edit and stored as given by foreign
//! writes; foreign batches whose puts and conflict documents land in one
//! transaction, across power cuts too; histories that are not changes.

use nsf::{
    Database, Engine, ForeignAttachment, ForeignContent, ForeignNote, ForeignOutcome, Item,
    ItemUpdate, ItemValue, NoteId, NsfError, OriginatorId, ReplicaId, Seq, StagedNote, Timestamp,
    Unid, Version, MAX_REVISIONS,
};
use std::io::Read;
use std::sync::Arc;
use storage::backend::{CrashBackend, CrashMode, MemBackend};
use storage::Backend;

mod common;
use common::config;

const UNID: Unid = Unid([0x42; 16]);
const CONFLICT: Unid = Unid([0xC0; 16]);

fn text(name: &str, v: &str) -> Item {
    Item {
        name: name.into(),
        value: ItemValue::Text(v.into()),
    }
}

fn version(seq: u32, time: i64, body: &str) -> ForeignNote {
    ForeignNote {
        oid: OriginatorId {
            unid: UNID,
            seq_num: seq,
            seq_time: Timestamp(time),
        },
        created: Timestamp(1_000),
        modified: Timestamp(time),
        deleted: false,
        items: vec![text("Body", body)],
        attachments: Vec::new(),
        revisions: Vec::new(),
    }
}

fn with_file(mut n: ForeignNote, name: &str, bytes: Vec<u8>) -> ForeignNote {
    n.attachments.push(ForeignAttachment {
        name: name.into(),
        mime: "application/octet-stream".into(),
        content: ForeignContent::Bytes(bytes),
    });
    n
}

fn open(backend: Arc<dyn Backend>) -> Engine {
    Engine::open(backend, config(true)).unwrap().0
}

fn engine_with_db() -> (Engine, Arc<Database>) {
    let engine = open(Arc::new(MemBackend::new()));
    let db = engine.create_replica("r.fdb", ReplicaId(5), "").unwrap();
    (engine, db)
}

fn content(db: &Database, unid: Unid, name: &str) -> Vec<u8> {
    let mut out = Vec::new();
    db.open_attachment(unid, name)
        .unwrap()
        .read_to_end(&mut out)
        .unwrap();
    out
}

fn body(db: &Database, unid: Unid) -> Option<Item> {
    db.get(unid).unwrap().item("Body").cloned()
}

/// Writes `incoming` in one batch with the conflict document the rule
/// calls for: the loser of a replace, or the incoming version if it lost
/// (the replication layer's rule, reduced to what these tests need).
fn put_keeping_loser(db: &Database, incoming: ForeignNote) -> nsf::NsfResult<ForeignOutcome> {
    let staged = db.stage_foreign(incoming)?;
    let content = [staged.clone()];
    db.foreign_batch(&content, move |t| {
        let outcome = t.put(&staged)?;
        match &outcome {
            ForeignOutcome::Replaced {
                loser,
                loser_revisions,
                ..
            } => {
                let kept = StagedNote::from_note(loser.clone(), loser_revisions.clone());
                t.put_conflict(CONFLICT, UNID, &kept)?;
            }
            ForeignOutcome::Lost { .. } => {
                t.put_conflict(CONFLICT, UNID, &staged)?;
            }
            _ => {}
        }
        Ok(outcome)
    })
}

#[test]
fn every_local_edit_records_the_version_it_replaces() {
    let (engine, db) = engine_with_db();
    let meta = db.create(vec![text("Body", "1")]).unwrap();
    assert!(db.revisions(meta.unid).unwrap().is_empty());
    let v1 = db.get(meta.unid).unwrap().version();
    db.update(
        meta.unid,
        vec![ItemUpdate::Set(text("Body", "2"))],
        None,
        false,
    )
    .unwrap();
    let v2 = db.get(meta.unid).unwrap().version();
    db.delete(meta.unid, None, false).unwrap();
    assert_eq!(db.revisions(meta.unid).unwrap(), vec![v1, v2]);
    let (stub, revisions) = db.get_with_revisions(meta.unid).unwrap().unwrap();
    assert!(stub.deleted);
    assert_eq!(revisions, vec![v1, v2]);
    assert_eq!(db.get_with_revisions(Unid([1; 16])).unwrap(), None);

    let other = db.create(vec![text("Body", "0")]).unwrap();
    let mut versions = Vec::new();
    for i in 0..MAX_REVISIONS + 5 {
        versions.push(db.get(other.unid).unwrap().version());
        let set = ItemUpdate::Set(text("Body", &i.to_string()));
        db.update(other.unid, vec![set], None, false).unwrap();
    }
    let kept = db.revisions(other.unid).unwrap();
    assert_eq!(kept.len(), MAX_REVISIONS, "bounded");
    assert_eq!(kept[..], versions[5..], "the newest are kept, oldest first");
    db.check().unwrap();
    drop(db);
    engine.close().unwrap();
}

#[test]
fn a_read_at_a_note_id_counts_only_if_the_unid_is_there() {
    let (engine, db) = engine_with_db();
    let a = db.create(vec![text("Body", "a")]).unwrap();
    let b = db.create(vec![text("Body", "b")]).unwrap();
    db.update(
        a.unid,
        vec![ItemUpdate::Set(text("Body", "a2"))],
        None,
        false,
    )
    .unwrap();
    let want = db.get_with_revisions(a.unid).unwrap();
    assert!(want.as_ref().is_some_and(|(_, r)| r.len() == 1));
    let id_a = db.get(a.unid).unwrap().note_id;
    let id_b = db.get(b.unid).unwrap().note_id;
    assert_ne!(id_a, id_b);
    assert_eq!(db.get_with_revisions_at(a.unid, id_a).unwrap(), want);
    // Another note's id, or an id no note has: found by its UNID instead.
    assert_eq!(db.get_with_revisions_at(a.unid, id_b).unwrap(), want);
    assert_eq!(
        db.get_with_revisions_at(a.unid, NoteId(u32::MAX)).unwrap(),
        want
    );
    // A UNID no note has, even at a note's id: nothing.
    assert_eq!(db.get_with_revisions_at(Unid([1; 16]), id_a).unwrap(), None);
    drop(db);
    engine.close().unwrap();
}

#[test]
fn foreign_writes_store_revisions_as_given_and_report_them() {
    let (engine, db) = engine_with_db();
    let mut first = version(1, 1_000, "a");
    let ancestor = Version {
        seq: 7,
        seq_time: Timestamp(5),
        digest: [9; 32],
    };
    first.revisions = vec![ancestor];
    db.put_foreign(first).unwrap();
    assert_eq!(db.revisions(UNID).unwrap(), vec![ancestor]);
    let held = db.get(UNID).unwrap().version();

    let mut second = version(3, 3_000, "b");
    second.revisions = vec![held];
    match db.put_foreign(second).unwrap() {
        ForeignOutcome::Replaced {
            loser_revisions, ..
        } => assert_eq!(loser_revisions, vec![ancestor]),
        other => panic!("expected Replaced, got {other:?}"),
    }
    assert_eq!(db.revisions(UNID).unwrap(), vec![held], "as given");
    let winner = db.get(UNID).unwrap().version();
    match db.put_foreign(version(2, 2_000, "c")).unwrap() {
        ForeignOutcome::Lost {
            winner: w,
            winner_revisions,
            winner_deleted,
            ..
        } => {
            assert_eq!(w, winner);
            assert_eq!(winner_revisions, vec![held]);
            assert!(!winner_deleted);
        }
        other => panic!("expected Lost, got {other:?}"),
    }
    drop(db);
    engine.close().unwrap();
}

#[test]
fn a_replaced_loser_is_kept_as_a_conflict_document_with_its_attachment() {
    let (engine, db) = engine_with_db();
    db.put_foreign(with_file(
        version(1, 1_000, "local"),
        "l.bin",
        vec![1; 9_000],
    ))
    .unwrap();
    let seq_before = db.last_seq();
    let outcome = put_keeping_loser(
        &db,
        with_file(version(2, 2_000, "far"), "f.bin", vec![2; 100]),
    )
    .unwrap();
    assert!(matches!(outcome, ForeignOutcome::Replaced { .. }));
    assert_eq!(
        db.last_seq(),
        Seq(seq_before.0 + 2),
        "two writes, one batch"
    );
    assert_eq!(body(&db, UNID), Some(text("Body", "far")));
    assert_eq!(content(&db, UNID, "f.bin"), vec![2; 100]);
    let conflict = db.get(CONFLICT).unwrap();
    assert_eq!(conflict.item("$Conflict"), Some(&text("$Conflict", "1")));
    assert_eq!(
        conflict.item("$Ref"),
        Some(&text("$Ref", &UNID.to_string()))
    );
    assert_eq!(conflict.item("Body"), Some(&text("Body", "local")));
    assert_eq!(conflict.oid.seq_num, 1, "the loser's sequence number");
    assert_eq!(
        content(&db, CONFLICT, "l.bin"),
        vec![1; 9_000],
        "the loser's content moved to the conflict document"
    );
    db.check().unwrap();
    drop(db);
    engine.close().unwrap();
}

#[test]
fn a_losing_incoming_version_is_kept_and_the_same_conflict_twice_is_already_have() {
    let (engine, db) = engine_with_db();
    db.put_foreign(version(5, 5_000, "winner")).unwrap();
    let incoming = || with_file(version(2, 2_000, "late"), "x.bin", vec![3; 5_000]);
    let outcome = put_keeping_loser(&db, incoming()).unwrap();
    assert!(matches!(outcome, ForeignOutcome::Lost { .. }));
    assert_eq!(body(&db, UNID), Some(text("Body", "winner")));
    assert_eq!(content(&db, CONFLICT, "x.bin"), vec![3; 5_000]);
    let free = db.info().unwrap().free_pages;
    let seq = db.last_seq();
    put_keeping_loser(&db, incoming()).unwrap();
    assert_eq!(db.last_seq(), seq, "nothing new: already have");
    assert!(
        db.info().unwrap().free_pages >= free,
        "the second copy's content went back to the free list"
    );
    db.check().unwrap();
    drop(db);
    engine.close().unwrap();
}

#[test]
fn a_failing_batch_changes_nothing_and_refuses_content_it_was_not_given() {
    let (engine, db) = engine_with_db();
    db.put_foreign(version(1, 1_000, "old")).unwrap();
    let seq = db.last_seq();
    let staged = db.stage_foreign(version(2, 2_000, "new")).unwrap();
    let content = [staged.clone()];
    let e = db
        .foreign_batch(&content, move |t| {
            t.put(&staged)?;
            Err::<(), _>(NsfError::Invalid("the body gave up".into()))
        })
        .unwrap_err();
    assert!(e.to_string().contains("gave up"), "{e}");
    assert_eq!(db.last_seq(), seq);
    assert_eq!(body(&db, UNID), Some(text("Body", "old")));

    let smuggled = db
        .stage_foreign(with_file(version(3, 3_000, "x"), "s.bin", vec![1; 10]))
        .unwrap();
    let e = db
        .foreign_batch(&[], move |t| t.put(&smuggled))
        .unwrap_err();
    assert!(
        matches!(&e, NsfError::BadForeignNote { reason, .. } if reason.contains("not content of this batch")),
        "{e}"
    );
    assert_eq!(body(&db, UNID), Some(text("Body", "old")));
    db.check().unwrap();
    drop(db);
    engine.close().unwrap();
}

/// A power cut at every sync point of a batch that replaces a version and
/// keeps it as a conflict document: after recovery both writes are there
/// or neither is (I27), and both once the batch returned.
#[test]
fn a_torn_batch_leaves_both_writes_or_neither() {
    let old = || with_file(version(1, 1_000, "old"), "o.bin", vec![1; 30_000]);
    let new = || with_file(version(2, 2_000, "new"), "n.bin", vec![2; 1 << 20]);
    let mut crashed = 0;
    for k in 1.. {
        let disk = Arc::new(CrashBackend::new());
        let engine = open(disk.clone());
        let db = engine.create_replica("c.fdb", ReplicaId(9), "").unwrap();
        db.put_foreign(old()).unwrap();
        let mode = CrashMode::Torn { seed: k };
        disk.arm_crash(disk.sync_count() + k, mode);
        let put = put_keeping_loser(&db, new());
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
        let replaced = body(&db, UNID) == Some(text("Body", "new"));
        let kept = db.get_any(CONFLICT).is_ok();
        assert_eq!(replaced, kept, "sync point {k}: both or neither");
        if put.is_ok() {
            assert!(replaced, "sync point {k}: returned, so durable");
        }
        if replaced {
            assert_eq!(content(&db, UNID, "n.bin").len(), 1 << 20);
            assert_eq!(content(&db, CONFLICT, "o.bin"), vec![1; 30_000]);
        } else {
            assert_eq!(content(&db, UNID, "o.bin"), vec![1; 30_000]);
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

#[test]
fn histories_are_stored_durably_and_are_not_changes() {
    let backend: Arc<dyn Backend> = Arc::new(MemBackend::new());
    let engine = open(backend.clone());
    let db = engine.create_replica("h.fdb", ReplicaId(3), "").unwrap();
    db.create(vec![text("Body", "x")]).unwrap();
    let seq = db.last_seq();
    db.put_replication_history(b"peer-a", b"upto 10").unwrap();
    db.put_replication_history(b"peer-b", &vec![7; 50_000])
        .unwrap();
    db.put_replication_history(b"peer-a", b"upto 12").unwrap();
    assert_eq!(db.last_seq(), seq, "saving a history is not a change (I30)");
    assert!(db.modified_since(seq, 10).unwrap().is_empty());
    for (key, len) in [(&[][..], 0), (&[1u8; 65][..], 65)] {
        let e = db.put_replication_history(key, b"x").unwrap_err();
        assert!(
            e.to_string().contains(&format!("key of {len} bytes")),
            "{e}"
        );
    }
    let e = db
        .put_replication_history(b"k", &vec![0; nsf::MAX_HISTORY_BYTES + 1])
        .unwrap_err();
    assert!(e.to_string().contains("history entry of"), "{e}");
    db.check().unwrap();
    drop(db);
    engine.close().unwrap();

    let engine = open(backend);
    let db = engine.open_database("h.fdb").unwrap();
    assert_eq!(
        db.replication_histories().unwrap(),
        vec![
            (b"peer-a".to_vec(), b"upto 12".to_vec()),
            (b"peer-b".to_vec(), vec![7; 50_000]),
        ]
    );
    drop(db);
    engine.close().unwrap();
}
