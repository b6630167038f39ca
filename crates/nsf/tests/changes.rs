//! Commit notification (design.md I23): a waiter for a database's change
//! sequence wakes once a commit past its value is durable — never before —
//! and learns at once when no change can come (shutdown, failure).

use nsf::{Database, Engine, Item, ItemValue, NsfError, Seq};
use std::sync::{mpsc, Arc};
use std::time::Duration;
use storage::backend::MemBackend;
use storage::backend::{CrashBackend, CrashMode, FaultBackend, FaultKind, FaultOp, FaultRule};

mod common;
use common::config;

/// Long enough never to end a test that works; a broken wake-up makes
/// the test fail (the waiter answers with the unchanged sequence).
const LONG: Duration = Duration::from_secs(120);

fn doc(subject: &str) -> Vec<Item> {
    vec![Item {
        name: "Subject".into(),
        value: ItemValue::Text(subject.into()),
    }]
}

/// Starts a thread waiting on `db` past `after`; returns where its
/// answer arrives. (Whether the thread is already asleep when the test
/// goes on does not matter: either way the answer must be the same.)
fn waiter(db: &Arc<Database>, after: Seq) -> mpsc::Receiver<nsf::NsfResult<Seq>> {
    let (tx, rx) = mpsc::channel();
    let db = db.clone();
    std::thread::spawn(move || {
        let _ = tx.send(db.wait_for_change(after, LONG));
    });
    rx
}

#[test]
fn a_waiter_wakes_with_the_new_sequence_once_the_commit_is_durable() {
    let disk = Arc::new(CrashBackend::new());
    let (engine, _) = Engine::open(disk.clone(), config(true)).unwrap();
    let db = engine.create_database("w.fdb", "").unwrap();
    db.create(doc("first")).unwrap();
    let before = db.last_seq();
    assert_eq!(db.durable_seq(), before);

    let (db2, disk2) = (db.clone(), disk.clone());
    let waiting = std::thread::spawn(move || {
        let seq = db2.wait_for_change(before, LONG);
        // What a power cut would leave right now: the change must be in it.
        (seq, disk2.crash_now(CrashMode::DropUnsynced))
    });
    let meta = db.create(doc("second")).unwrap();
    let (seq, image) = waiting.join().unwrap();
    assert_eq!(seq.unwrap(), meta.change_seq);
    assert!(meta.change_seq > before);
    drop(db);
    drop(engine);

    let (engine, _) = Engine::open(Arc::new(image), config(true)).unwrap();
    let db = engine.open_database("w.fdb").unwrap();
    assert!(
        db.get(meta.unid).is_ok(),
        "the waiter was woken before the change was durable"
    );
    drop(db);
    engine.close().unwrap();
}

#[test]
fn a_wait_that_times_out_returns_the_sequence_unchanged() {
    for logged in [true, false] {
        let (engine, _) = Engine::open(Arc::new(MemBackend::new()), config(logged)).unwrap();
        let db = engine.create_database("t.fdb", "").unwrap();
        db.create(doc("one")).unwrap();
        let now = db.last_seq();
        assert_eq!(
            db.wait_for_change(now, Duration::from_millis(20)).unwrap(),
            now
        );
        // A value already passed answers at once, whatever the timeout.
        assert_eq!(db.wait_for_change(Seq(0), Duration::ZERO).unwrap(), now);
        drop(db);
        engine.close().unwrap();
    }
}

#[test]
fn unlogged_commits_wake_waiters_too() {
    let (engine, _) = Engine::open(Arc::new(MemBackend::new()), config(false)).unwrap();
    let db = engine.create_database("u.fdb", "").unwrap();
    let answer = waiter(&db, db.last_seq());
    let meta = db.create(doc("x")).unwrap();
    assert_eq!(answer.recv().unwrap().unwrap(), meta.change_seq);
    drop(db);
    engine.close().unwrap();
}

#[test]
fn shutdown_wakes_waiters_with_engine_closed() {
    let (engine, _) = Engine::open(Arc::new(MemBackend::new()), config(true)).unwrap();
    let db = engine.create_database("s.fdb", "").unwrap();
    let answer = waiter(&db, db.last_seq());
    engine.shutdown().unwrap();
    assert!(matches!(
        answer.recv().unwrap(),
        Err(NsfError::EngineClosed)
    ));
    assert!(matches!(
        db.wait_for_change(db.last_seq(), LONG),
        Err(NsfError::EngineClosed)
    ));
}

#[test]
fn a_failed_database_wakes_its_waiters() {
    let faulty = Arc::new(FaultBackend::new(Arc::new(MemBackend::new())));
    let (engine, _) = Engine::open(faulty.clone(), config(false)).unwrap();
    let db = engine.create_database("f.fdb", "").unwrap();
    db.create(doc("kept")).unwrap();
    let answer = waiter(&db, db.last_seq());
    faulty.add_rule(FaultRule {
        path_contains: Some("f.fdb".into()),
        sticky: true,
        ..FaultRule::new(FaultOp::Write, FaultKind::Eio)
    });
    assert!(db.create(doc("lost")).is_err());
    assert!(matches!(
        answer.recv().unwrap(),
        Err(NsfError::DatabaseFailed { .. })
    ));
    drop(db);
    drop(engine);
}

#[test]
fn async_waiters_wake_without_polling() {
    let (engine, _) = Engine::open(Arc::new(MemBackend::new()), config(true)).unwrap();
    let db = engine.create_database("a.fdb", "").unwrap();
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    let after = db.last_seq();
    let writer = {
        let db = db.clone();
        std::thread::spawn(move || db.create(doc("async")).unwrap())
    };
    let seq = rt.block_on(db.next_change(after)).unwrap();
    let meta = writer.join().unwrap();
    assert_eq!(seq, meta.change_seq);

    // A future that is never woken stays pending: bounded by the caller.
    let quiet = rt.block_on(async {
        tokio::select! {
            r = db.next_change(db.last_seq()) => Some(r),
            () = std::future::ready(()) => None,
        }
    });
    assert!(quiet.is_none());
    drop(db);
    engine.close().unwrap();
}
