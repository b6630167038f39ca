//! I54: no reader waits for log I/O, a checkpoint or a flush, and a
//! writer waits only for its own group's fsync. A database file's sync is
//! held by the fault backend (a disk stalled for as long as the test
//! needs, `FaultKind::Hold`) while a checkpoint or the open-database
//! cache's closer is writing it; reads, writes, opens and creates of
//! every database, the stalled one included, still complete, and the
//! held flush is still held when they have (an order, not a timing).

use nsf::{Engine, Item, ItemUpdate, ItemValue, Unid};
use std::sync::Arc;
use std::thread;
use std::time::Duration;
use storage::backend::{FaultBackend, FaultKind, FaultOp, FaultRule, MemBackend};

mod common;
use common::config;

fn doc(i: usize) -> Vec<Item> {
    vec![
        Item {
            name: "N".into(),
            value: ItemValue::Number(i as f64),
        },
        Item {
            name: "Body".into(),
            value: ItemValue::Text("y".repeat(200 + i * 53 % 2000)),
        },
    ]
}

fn set(i: usize) -> Vec<ItemUpdate> {
    doc(i).into_iter().map(ItemUpdate::Set).collect()
}

fn number(engine: &Engine, db: &str, unid: Unid) -> f64 {
    let n = engine.open_database(db).unwrap().get(unid).unwrap();
    match n.item("N").unwrap().value {
        ItemValue::Number(v) => v,
        _ => panic!("N is not a number"),
    }
}

fn hold_syncs_of(faulty: &FaultBackend, path: &str) {
    faulty.add_rule(FaultRule {
        path_contains: Some(path.into()),
        sticky: true,
        ..FaultRule::new(FaultOp::Sync, FaultKind::Hold)
    });
}

#[test]
fn a_checkpoint_stalled_on_one_file_holds_up_no_read_and_no_write() {
    let disk = MemBackend::new();
    let faulty = Arc::new(FaultBackend::new(Arc::new(disk.clone())));
    let (engine, _) = Engine::open(faulty.clone(), config(true)).unwrap();
    let engine = Arc::new(engine);
    let a = engine.create_database("a.fdb", "").unwrap();
    let b = engine.create_database("b.fdb", "").unwrap();
    let ua: Vec<Unid> = (0..40).map(|i| a.create(doc(i)).unwrap().unid).collect();
    let ub: Vec<Unid> = (0..40).map(|i| b.create(doc(i)).unwrap().unid).collect();
    engine.checkpoint().unwrap();
    // Dirty both again, then stall every sync of a.fdb.
    for (i, u) in ua.iter().enumerate().take(10) {
        a.update(*u, set(100 + i), None, false).unwrap();
    }
    b.update(ub[0], set(100), None, false).unwrap();
    hold_syncs_of(&faulty, "a.fdb");
    let checkpoint = {
        let engine = engine.clone();
        thread::spawn(move || engine.checkpoint())
    };
    faulty.wait_held(1);

    // Reads of the stalled database and of another.
    for (i, u) in ua.iter().enumerate() {
        let want = if i < 10 { 100 + i } else { i };
        assert_eq!(number(&engine, "a.fdb", *u), want as f64);
    }
    assert_eq!(number(&engine, "b.fdb", ub[0]), 100.0);
    assert_eq!(number(&engine, "b.fdb", ub[1]), 1.0);
    // Writes: to another database, and to the stalled one (its pages are
    // being written: the new versions are logged whole, nothing waits).
    let nb = b.create(doc(7)).unwrap().unid;
    let na = a.create(doc(8)).unwrap().unid;
    a.update(ua[0], set(200), None, false).unwrap();
    a.update(ua[20], set(201), None, false).unwrap();
    // A new database is created and written.
    let c = engine.create_database("c.fdb", "").unwrap();
    let nc = c.create(doc(9)).unwrap().unid;

    assert!(
        !checkpoint.is_finished(),
        "the checkpoint was held all along"
    );
    assert_eq!(faulty.held(), 1, "held in a.fdb's sync");
    faulty.clear_rules();
    faulty.release_holds();
    let redo = checkpoint.join().unwrap().unwrap();
    assert!(redo.is_some());

    // Everything acknowledged survives a restart from the disk as it is.
    drop((a, b, c));
    Arc::into_inner(engine).unwrap().close().unwrap();
    let (engine, _) = Engine::open(Arc::new(disk), config(true)).unwrap();
    assert_eq!(number(&engine, "a.fdb", ua[0]), 200.0);
    assert_eq!(number(&engine, "a.fdb", ua[20]), 201.0);
    assert_eq!(number(&engine, "a.fdb", ua[5]), 105.0);
    assert_eq!(number(&engine, "a.fdb", na), 8.0);
    assert_eq!(number(&engine, "b.fdb", nb), 7.0);
    assert_eq!(number(&engine, "c.fdb", nc), 9.0);
    for db in ["a.fdb", "b.fdb", "c.fdb"] {
        engine.open_database(db).unwrap().check().unwrap();
    }
}

#[test]
fn opens_past_the_cache_limit_never_wait_for_a_stalled_close() {
    let disk = MemBackend::new();
    let faulty = Arc::new(FaultBackend::new(Arc::new(disk.clone())));
    let mut cfg = config(true);
    cfg.background = true;
    cfg.max_open_databases = 4;
    // Only the log's own demand makes the background thread checkpoint.
    cfg.flush_interval = Duration::from_secs(3600);
    let (engine, _) = Engine::open(faulty.clone(), cfg).unwrap();
    let engine = Arc::new(engine);
    let names: Vec<String> = (0..12).map(|i| format!("d{i:02}.fdb")).collect();
    let mut unids = Vec::new();
    for n in &names {
        let db = engine.create_database(n, "").unwrap();
        unids.push(db.create(doc(1)).unwrap().unid);
    }
    // x.fdb is idle and dirty: the closer's first victim, and its
    // write-out is stalled.
    let x = engine.create_database("x.fdb", "").unwrap();
    let ux = x.create(doc(5)).unwrap().unid;
    drop(x);
    hold_syncs_of(&faulty, "x.fdb");
    let checkpoint = {
        let engine = engine.clone();
        thread::spawn(move || engine.checkpoint())
    };
    faulty.wait_held(1);

    // Every other database opened, read and written, each held open so
    // the cache stays past twice its limit.
    let mut held = Vec::new();
    for (n, u) in names.iter().zip(&unids) {
        let db = engine.open_database(n).unwrap();
        assert_eq!(number(&engine, n, *u), 1.0);
        db.update(*u, set(2), None, false).unwrap();
        held.push(db);
    }
    let y = engine.create_database("y.fdb", "").unwrap();
    y.create(doc(3)).unwrap();
    held.push(y);
    assert!(engine.open_databases() > 8, "past twice the limit");
    assert!(
        !checkpoint.is_finished(),
        "x.fdb's write was held all along"
    );

    faulty.clear_rules();
    faulty.release_holds();
    checkpoint.join().unwrap().unwrap();
    drop(held);
    assert_eq!(number(&engine, "x.fdb", ux), 5.0);
    Arc::into_inner(engine).unwrap().close().unwrap();
    let (engine, _) = Engine::open(Arc::new(disk), config(true)).unwrap();
    for (n, u) in names.iter().zip(&unids) {
        assert_eq!(number(&engine, n, *u), 2.0);
    }
    assert_eq!(number(&engine, "x.fdb", ux), 5.0);
}

/// Unlogged, an instance that wrote must clear its open flag when it
/// closes (I12): the closes an open makes itself (I54) never take one,
/// so none is left looking as if the server had crashed.
#[test]
fn unlogged_closes_past_the_limit_leave_every_file_clean() {
    let disk = MemBackend::new();
    let mut cfg = config(false);
    cfg.background = true;
    cfg.max_open_databases = 4;
    let (engine, _) = Engine::open(Arc::new(disk.clone()), cfg).unwrap();
    let names: Vec<String> = (0..24).map(|i| format!("u{i:02}.fdb")).collect();
    for (i, n) in names.iter().enumerate() {
        let db = engine.create_database(n, "").unwrap();
        db.create(doc(i)).unwrap();
    }
    // Opened again, read, let go: the cache closes them as it goes.
    for _ in 0..3 {
        for n in &names {
            engine.open_database(n).unwrap().info().unwrap();
        }
    }
    engine.close().unwrap();
    let (engine, _) = Engine::open(Arc::new(disk), config(false)).unwrap();
    for n in &names {
        let db = engine.open_database(n).unwrap();
        assert!(!db.opened_unclean(), "{n} was left with its open flag set");
    }
}
