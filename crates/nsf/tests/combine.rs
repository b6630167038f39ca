//! Combined commits: writes queued behind the writer lock's holder run in
//! one transaction, each behind a savepoint, and are acknowledged together
//! once that transaction is durable.

mod common;

use nsf::{Engine, Item, ItemUpdate, ItemValue, NsfError, NsfResult};
use std::sync::mpsc;
use std::sync::Arc;
use storage::backend::MemBackend;

fn text(name: &str, v: &str) -> Item {
    Item {
        name: name.into(),
        value: ItemValue::Text(v.into()),
    }
}

/// Holds `db`'s writer lock (an index transaction that waits) until the
/// returned sender is dropped or sent to; returns once the lock is held.
fn hold_writer_lock(db: &Arc<nsf::Database>) -> (mpsc::Sender<()>, std::thread::JoinHandle<()>) {
    let (held_tx, held_rx) = mpsc::channel();
    let (release_tx, release_rx) = mpsc::channel::<()>();
    let db = db.clone();
    let holder = std::thread::spawn(move || {
        db.index_write(move |_| {
            held_tx.send(()).unwrap();
            let _ = release_rx.recv();
            Ok(())
        })
        .unwrap();
    });
    held_rx.recv().unwrap();
    (release_tx, holder)
}

fn combined_writes_fail_alone(logged: bool) {
    let engine = Engine::open(Arc::new(MemBackend::new()), common::config(logged))
        .unwrap()
        .0;
    let db = engine.create_database("a.fdb", "").unwrap();
    let x = db.create(vec![text("S", "original")]).unwrap();
    let commits_before = engine.log_info().map(|i| i.commits);
    let (release, holder) = hold_writer_lock(&db);
    let (tx, rx) = mpsc::channel::<(usize, NsfResult<nsf::NoteMeta>)>();
    let done = |i: usize| {
        let tx = tx.clone();
        move |r| tx.send((i, r)).unwrap()
    };
    // All three are queued; the first asks for a run, which finds the
    // lock taken and leaves them to its holder.
    assert!(db.create_then(vec![text("S", "first")], done(0)));
    assert!(!db.update_then(
        x.unid,
        vec![ItemUpdate::Set(text("S", "stale"))],
        (Some(99), false),
        done(1),
    ));
    assert!(!db.create_then(vec![text("S", "third")], done(2)));
    assert!(!db.run_queued(), "the holder runs them, not this turn");
    assert!(rx.try_recv().is_err(), "nothing is acknowledged early");
    release.send(()).unwrap();
    holder.join().unwrap();
    let mut results: Vec<_> = (0..3).map(|_| rx.recv().unwrap()).collect();
    results.sort_by_key(|(i, _)| *i);
    let first = results[0].1.as_ref().unwrap();
    assert!(matches!(results[1].1, Err(NsfError::SaveConflict { .. })));
    let third = results[2].1.as_ref().unwrap();
    assert_eq!(
        db.get(first.unid).unwrap().items[0].value,
        ItemValue::Text("first".into())
    );
    assert_eq!(
        db.get(third.unid).unwrap().items[0].value,
        ItemValue::Text("third".into())
    );
    // The failed write changed nothing, and took nothing of the others.
    let kept = db.get(x.unid).unwrap();
    assert_eq!(kept.oid.seq_num, 1);
    assert_eq!(kept.items[0].value, ItemValue::Text("original".into()));
    assert!(third.change_seq.0 > first.change_seq.0);
    db.check().unwrap();
    if let Some(before) = commits_before {
        // The empty index transaction logged nothing; the three writes
        // went to the log as one batch.
        let after = engine.log_info().unwrap().commits;
        assert_eq!(after - before, 1);
    }
    drop(db);
    engine.close().unwrap();
}

#[test]
fn logged_writes_queued_behind_the_lock_commit_as_one_batch_and_fail_alone() {
    combined_writes_fail_alone(true);
}

#[test]
fn unlogged_writes_queued_behind_the_lock_commit_together_and_fail_alone() {
    combined_writes_fail_alone(false);
}

#[test]
fn a_combined_batch_whose_fsync_fails_acknowledges_none_of_its_writes() {
    use storage::backend::{FaultBackend, FaultKind, FaultOp, FaultRule};
    let faulty = Arc::new(FaultBackend::new(Arc::new(MemBackend::new())));
    let engine = Engine::open(faulty.clone(), common::config(true))
        .unwrap()
        .0;
    let db = engine.create_database("a.fdb", "").unwrap();
    let (release, holder) = hold_writer_lock(&db);
    let (tx, rx) = mpsc::channel::<NsfResult<nsf::NoteMeta>>();
    for i in 0..4 {
        let tx = tx.clone();
        if db.create_then(vec![text("N", &i.to_string())], move |r| {
            tx.send(r).unwrap()
        }) {
            assert!(!db.run_queued());
        }
    }
    faulty.add_rule(FaultRule {
        path_contains: Some("translog".into()),
        ..FaultRule::new(FaultOp::Sync, FaultKind::Eio)
    });
    release.send(()).unwrap();
    holder.join().unwrap();
    for _ in 0..4 {
        let r = rx.recv().unwrap();
        assert!(matches!(r, Err(NsfError::LogFailed(_))), "{r:?}");
    }
    drop(db);
    let _ = engine.close();
}
