//! Deleting a database (I42, I43): handles still held refuse with a typed
//! error, the log's records of it are never replayed — not into a
//! database created later at the same path either — and a power cut at
//! any point of a delete leaves the database whole or gone.

use nsf::{DbState, Engine, Item, ItemValue, NsfError};
use std::path::Path;
use std::sync::Arc;
use storage::backend::{CrashBackend, CrashMode, MemBackend};
use storage::Backend;

mod common;
use common::config;

fn doc(subject: &str) -> Vec<Item> {
    vec![Item {
        name: "Subject".into(),
        value: ItemValue::Text(subject.into()),
    }]
}

fn subjects(engine: &Engine, path: &str) -> Vec<String> {
    let db = engine.open_database(path).unwrap();
    let mut out = Vec::new();
    db.for_each_note(|n| {
        if let Some(ItemValue::Text(t)) = n.item("Subject").map(|i| &i.value) {
            out.push(t.clone());
        }
        Ok(())
    })
    .unwrap();
    out.sort();
    out
}

fn assert_deleted<T: std::fmt::Debug>(r: nsf::NsfResult<T>, what: &str) {
    match r {
        Err(NsfError::DatabaseDeleted(p)) => assert_eq!(p, "a.fdb", "{what}"),
        other => panic!("{what}: expected DatabaseDeleted, got {other:?}"),
    }
}

#[test]
fn a_held_handle_refuses_reads_and_writes_after_a_delete() {
    let disk = MemBackend::new();
    let (engine, _) = Engine::open(Arc::new(disk.clone()), config(true)).unwrap();
    let held = engine.create_database("a.fdb", "A").unwrap();
    let unid = held.create(doc("one")).unwrap().unid;
    engine.delete_database("a.fdb").unwrap();

    assert_eq!(held.state(), DbState::Deleted);
    assert_deleted(held.get(unid), "a read");
    assert_deleted(held.info(), "info");
    assert_deleted(held.acl(), "the ACL");
    assert_deleted(held.modified_since(nsf::Seq(0), 10), "modified since");
    assert_deleted(held.create(doc("late")), "a create");
    assert_deleted(held.delete(unid, None, true), "a delete");
    let mut src: &[u8] = &[7u8; 100_000];
    assert_deleted(
        held.put_attachment(unid, "f.bin", "x/y", &mut src),
        "an attachment",
    );
    assert!(!disk.exists(Path::new("/data/a.fdb")));
    assert!(matches!(
        engine.open_database("a.fdb"),
        Err(NsfError::NoSuchDatabase(_))
    ));
    assert!(engine.list_databases().unwrap().is_empty());
    // Deleting it again is "no such database", and changes nothing.
    assert!(matches!(
        engine.delete_database("a.fdb"),
        Err(NsfError::NoSuchDatabase(_))
    ));
    assert!(matches!(
        engine.delete_database("../x.fdb"),
        Err(NsfError::BadPath { .. })
    ));
}

/// The deleted database's records are still in the log when a new one is
/// created at its path and the server crashes: recovery applies none of
/// them to the new file (its records were retired, I29).
#[test]
fn a_new_database_at_a_deleted_path_gets_none_of_the_old_records() {
    let disk = Arc::new(CrashBackend::new());
    let (engine, _) = Engine::open(disk.clone(), config(true)).unwrap();
    let old = engine.create_database("a.fdb", "Old").unwrap();
    for i in 0..20 {
        old.create(doc(&format!("old {i}"))).unwrap();
    }
    drop(old);
    engine.delete_database("a.fdb").unwrap();
    let new = engine.create_database("a.fdb", "New").unwrap();
    new.create(doc("new")).unwrap();
    drop(new);
    let image = disk.crash_now(CrashMode::DropUnsynced);
    let (after, report) = Engine::open(Arc::new(image), config(true)).unwrap();
    assert!(report.unwrap().retired_txns_skipped > 0);
    assert_eq!(subjects(&after, "a.fdb"), ["new"]);
    assert_eq!(after.list_databases().unwrap(), ["a.fdb"]);
    assert!(after.needing_fixup().is_empty());
}

/// A power cut at every sync point of a delete (and after it): the
/// database is afterwards either there with every document written
/// before the delete, or gone (file, listing), and a database created at
/// the path then starts empty.
#[test]
fn a_delete_cut_at_every_sync_point_leaves_the_database_whole_or_gone() {
    for mode in [CrashMode::DropUnsynced, CrashMode::Torn { seed: 3 }] {
        for n in 0.. {
            let disk = Arc::new(CrashBackend::new());
            let (engine, _) = Engine::open(disk.clone(), config(true)).unwrap();
            let db = engine.create_database("a.fdb", "A").unwrap();
            let mut written: Vec<String> = (0..10).map(|i| format!("doc {i}")).collect();
            for s in &written {
                db.create(doc(s)).unwrap();
            }
            written.sort();
            disk.arm_crash(disk.sync_count() + n, mode);
            let acked = engine.delete_database("a.fdb").is_ok();
            let image = match disk.crashed_image() {
                Some(image) => image,
                None => disk.crash_now(mode),
            };
            let (after, _) = Engine::open(Arc::new(image.snapshot()), config(true)).unwrap();
            let listed = after.list_databases().unwrap();
            if image.exists(Path::new("/data/a.fdb")) && !acked {
                // Whole: every document, and it takes writes.
                assert_eq!(subjects(&after, "a.fdb"), written, "{mode:?} at {n}");
                assert_eq!(listed, ["a.fdb"], "{mode:?} at {n}");
                let db = after.open_database("a.fdb").unwrap();
                db.create(doc("after")).unwrap();
            } else {
                // Gone, and a new database there starts empty.
                assert!(
                    !image.exists(Path::new("/data/a.fdb")),
                    "{mode:?} at {n}: an acknowledged delete left the file"
                );
                assert!(listed.is_empty(), "{mode:?} at {n}: {listed:?}");
                after.create_database("a.fdb", "B").unwrap();
                assert!(subjects(&after, "a.fdb").is_empty(), "{mode:?} at {n}");
            }
            if !disk.has_crashed() {
                break;
            }
        }
    }
}

/// The same from the other side of a restart: the file still there with
/// the deleted instance (the crash came between the retirement and the
/// unlink) is removed by the next start.
#[test]
fn a_start_finishes_a_delete_the_crash_interrupted() {
    let disk = Arc::new(CrashBackend::new());
    let (engine, _) = Engine::open(disk.clone(), config(true)).unwrap();
    let db = engine.create_database("a.fdb", "A").unwrap();
    db.create(doc("x")).unwrap();
    drop(db);
    engine.close().unwrap();
    let keep = disk.crash_now(CrashMode::DropUnsynced);
    let (engine, _) = Engine::open(disk.clone(), config(true)).unwrap();
    engine.delete_database("a.fdb").unwrap();
    let after_delete = disk.crash_now(CrashMode::DropUnsynced);
    // Put the file back as it was before the delete: the retired list
    // says "deleted" and the file holds that instance.
    let bytes = storage::backend::read_file(&keep, Path::new("/data/a.fdb")).unwrap();
    storage::backend::write_file_atomic(&after_delete, Path::new("/data/a.fdb"), &bytes).unwrap();
    let (after, _) = Engine::open(Arc::new(after_delete.snapshot()), config(true)).unwrap();
    assert!(after.list_databases().unwrap().is_empty());
    assert!(matches!(
        after.open_database("a.fdb"),
        Err(NsfError::NoSuchDatabase(_))
    ));
}

/// A delete whose unlink fails after the retirement: the file stays, but
/// no new instance opens it (its records would not be replayed), and the
/// next start finishes the delete.
#[test]
fn a_failed_unlink_leaves_the_file_unopenable_until_the_next_start_removes_it() {
    use storage::backend::{FaultBackend, FaultKind, FaultOp, FaultRule};
    let mem = MemBackend::new();
    let faulty = Arc::new(FaultBackend::new(Arc::new(mem.clone())));
    let (engine, _) = Engine::open(faulty.clone(), config(true)).unwrap();
    engine.create_database("a.fdb", "A").unwrap();
    faulty.add_rule(FaultRule {
        path_contains: Some("a.fdb".into()),
        ..FaultRule::new(FaultOp::Remove, FaultKind::Eio)
    });
    assert!(matches!(
        engine.delete_database("a.fdb"),
        Err(NsfError::Io { .. })
    ));
    assert!(mem.exists(Path::new("/data/a.fdb")));
    assert!(matches!(
        engine.open_database("a.fdb"),
        Err(NsfError::DatabaseDeleted(_))
    ));
    engine.close().unwrap();
    let (after, _) = Engine::open(Arc::new(mem.clone()), config(true)).unwrap();
    assert!(!mem.exists(Path::new("/data/a.fdb")));
    assert!(after.list_databases().unwrap().is_empty());
}
