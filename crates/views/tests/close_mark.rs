//! An unlogged index that the open-database cache wrote out when it
//! closed its database is trusted after a power cut only once a
//! checkpoint has synced the file system past its clean mark: the close
//! itself syncs no file (design.md I8, I14, I19).

mod common;

use nsf::{Engine, Item, ItemValue, Unid};
use std::sync::Arc;
use std::time::{Duration, Instant};
use storage::backend::{CrashBackend, CrashMode, FaultBackend, FaultKind, FaultOp, FaultRule};
use storage::Backend;
use views::{ColumnDef, Row, Start, ViewDef, Views};

/// An engine whose cache keeps one database open and whose background
/// thread closes the others, with no timed checkpoint in the test's span.
fn open(backend: Arc<dyn Backend>) -> (Engine, Views) {
    common::open_logged(backend, |cfg| {
        cfg.max_open_databases = 1;
        cfg.flush_interval = Duration::from_secs(3600);
    })
}

fn doc(engine: &Engine, key: &str) -> Unid {
    let db = engine.open_database("f.fdb").unwrap();
    db.create(vec![Item {
        name: "Key".into(),
        value: ItemValue::Text(key.into()),
    }])
    .unwrap()
    .unid
}

/// Fills folder F of f.fdb, then opens another database so that the
/// cache closes f.fdb (its close hook writes the index and marks it
/// clean), and waits for that close.
fn fill_and_close(engine: &Engine, views: &Views) -> Vec<Unid> {
    let db = engine.create_database("f.fdb", "").unwrap();
    let mut def = ViewDef::folder("F", vec![ColumnDef::parse("K=Key:asc").unwrap()]);
    def.logged = false;
    views.create(&db, def).unwrap();
    let mut unids: Vec<Unid> = ["a", "b", "c"].iter().map(|k| doc(engine, k)).collect();
    views.folder_add(&db, "F", &unids).unwrap();
    drop(db);
    // g.fdb stays in use, so f.fdb is the one idle database to close.
    let g = engine.create_database("g.fdb", "").unwrap();
    let deadline = Instant::now() + Duration::from_secs(30);
    while engine.cache_stats().open > 1 {
        assert!(Instant::now() < deadline, "the cache never closed f.fdb");
        std::thread::sleep(Duration::from_millis(20));
    }
    drop(g);
    unids.sort();
    unids
}

/// The folder's members and why its index was rebuilt when opened.
fn read(engine: &Engine, views: &Views) -> (Vec<Unid>, Option<String>) {
    let db = engine.open_database("f.fdb").unwrap();
    let c = views.open(&db, "F").unwrap();
    let mut out: Vec<Unid> = c
        .read(&Start::Position(0), 100, false, false)
        .unwrap()
        .into_iter()
        .filter_map(|r| match r {
            Row::Entry { unid, .. } => Some(unid),
            _ => None,
        })
        .collect();
    out.sort();
    (out, c.rebuilt.clone())
}

#[test]
fn an_index_closed_but_not_yet_synced_is_rebuilt_after_a_power_cut() {
    let disk = Arc::new(CrashBackend::new());
    let (engine, views) = open(disk.clone());
    let members = fill_and_close(&engine, &views);
    // Power cut before any checkpoint: what the close wrote may be lost.
    let image = disk.crash_now(CrashMode::DropUnsynced);
    drop((views, engine));

    let (engine, views) = open(Arc::new(image));
    let (got, rebuilt) = read(&engine, &views);
    let why = rebuilt.expect("the index was trusted though no checkpoint synced it");
    assert!(why.contains("checkpoint"), "{why}");
    assert_eq!(got, members, "rebuilt from the logged membership");
    engine.close().unwrap();
}

#[test]
fn an_index_closed_then_checkpointed_is_trusted_after_a_power_cut() {
    let disk = Arc::new(CrashBackend::new());
    let (engine, views) = open(disk.clone());
    let members = fill_and_close(&engine, &views);
    engine.checkpoint().unwrap();
    let image = disk.crash_now(CrashMode::DropUnsynced);
    drop((views, engine));

    let (engine, views) = open(Arc::new(image));
    let (got, rebuilt) = read(&engine, &views);
    assert_eq!(rebuilt, None, "the checkpoint synced the index");
    assert_eq!(got, members);
    engine.close().unwrap();
}

/// In the process that closed it, the index is trusted when the
/// database opens again: its pages are in the file, synced or not.
#[test]
fn an_index_closed_and_reopened_in_the_same_life_is_trusted() {
    let disk = Arc::new(CrashBackend::new());
    let (engine, views) = open(disk.clone());
    let members = fill_and_close(&engine, &views);
    let (got, rebuilt) = read(&engine, &views);
    assert_eq!(rebuilt, None);
    assert_eq!(got, members);
    engine.close().unwrap();
}

/// A clean shutdown's last checkpoint covers the marks its close hooks
/// committed: the next start trusts every index, with nothing to rebuild.
#[test]
fn an_index_closed_by_a_clean_shutdown_is_trusted_at_the_next_start() {
    let disk = Arc::new(CrashBackend::new());
    let faulty = Arc::new(FaultBackend::new(disk.clone()));
    let (engine, views) = open(faulty.clone());
    let db = engine.create_database("f.fdb", "").unwrap();
    let mut def = ViewDef::folder("F", vec![ColumnDef::parse("K=Key:asc").unwrap()]);
    def.logged = false;
    views.create(&db, def).unwrap();
    let mut members: Vec<Unid> = ["a", "b"].iter().map(|k| doc(&engine, k)).collect();
    views.folder_add(&db, "F", &members).unwrap();
    members.sort();
    drop((db, views));
    // A slow log: the hooks' marks are not yet durable when the shutdown
    // reaches its last checkpoint unless it waits for them.
    faulty.add_rule(FaultRule {
        path_contains: Some("translog".into()),
        sticky: true,
        ..FaultRule::new(FaultOp::Sync, FaultKind::Delay(Duration::from_millis(50)))
    });
    engine.close().unwrap();
    let image = disk.crash_now(CrashMode::DropUnsynced);

    let (engine, views) = open(Arc::new(image));
    let (got, rebuilt) = read(&engine, &views);
    assert_eq!(rebuilt, None, "the shutdown's checkpoint synced the index");
    assert_eq!(got, members);
    engine.close().unwrap();
}
