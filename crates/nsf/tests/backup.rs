//! Online backup and point-in-time restore (design.md §3.6, I35, I36):
//! a backup taken while threads write restores to exactly the live
//! database; a restore to a time has every commit up to it and none after;
//! a missing extent is named; a restore cut short by an I/O error leaves
//! the target usable and a second run finishes it.

use nsf::{
    BackupReport, Engine, EngineConfig, Item, ItemValue, NsfError, RestoreOptions, Timestamp, Unid,
};
use std::collections::BTreeMap;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;
use storage::backend::{FaultBackend, FaultKind, FaultOp, FaultRule, MemBackend};
use storage::Backend;
use storage::Lsn;
use translog::{ArchivedLog, LogError, LogStyle, RecordBody};

mod common;

/// An archive-style engine on `/data`, flushing in the background so the
/// backup copies pages the flusher is writing.
fn cfg() -> EngineConfig {
    let mut cfg = common::config(true);
    cfg.background = true;
    cfg.flush_interval = Duration::from_millis(5);
    let lc = cfg.log.as_mut().unwrap();
    lc.style = LogStyle::Archive;
    lc.max_size = 64 << 20;
    lc.archive_dir = Some("/data/archive".into());
    cfg
}

fn doc(i: u64, body: &str) -> Vec<Item> {
    vec![
        Item {
            name: "N".into(),
            value: ItemValue::Number(i as f64),
        },
        Item {
            name: "Body".into(),
            value: ItemValue::Text(body.repeat(20)),
        },
    ]
}

/// Every live document: UNID → (sequence number, items).
fn contents(engine: &Engine, path: &str) -> BTreeMap<Unid, (u32, Vec<Item>)> {
    let db = engine.open_database(path).unwrap();
    let mut out = BTreeMap::new();
    db.for_each_note(|n| {
        if !n.deleted {
            out.insert(n.oid.unid, (n.oid.seq_num, n.items));
        }
        Ok(())
    })
    .unwrap();
    out
}

fn write_some(engine: &Engine, path: &str, from: u64, n: u64) -> Vec<Unid> {
    let db = engine.open_database(path).unwrap();
    (from..from + n)
        .map(|i| db.create(doc(i, "w")).unwrap().unid)
        .collect()
}

/// Takes a backup of `a.fdb` while three threads create and update
/// documents.
fn backup_under_load(engine: &Arc<Engine>) -> BackupReport {
    backup_under_load_to(engine, "/backup")
}

fn backup_under_load_to(engine: &Arc<Engine>, dest: &str) -> BackupReport {
    let stop = Arc::new(AtomicBool::new(false));
    let writers: Vec<_> = (0..3u64)
        .map(|t| {
            let (engine, stop) = (engine.clone(), stop.clone());
            std::thread::spawn(move || {
                let db = engine.open_database("a.fdb").unwrap();
                let mut i = 0u64;
                let mut last = None;
                while !stop.load(Ordering::Relaxed) || i < 50 {
                    let meta = db.create(doc(t * 1_000_000 + i, "x")).unwrap();
                    if let Some(prev) = last.replace(meta.unid) {
                        db.update(
                            prev,
                            vec![nsf::ItemUpdate::Set(doc(i, "u").remove(1))],
                            None,
                            true,
                        )
                        .unwrap();
                    }
                    i += 1;
                }
            })
        })
        .collect();
    std::thread::sleep(Duration::from_millis(20));
    let report = engine.backup(Path::new(dest), &[]).unwrap();
    stop.store(true, Ordering::Relaxed);
    for w in writers {
        w.join().unwrap();
    }
    report
}

/// The time of the first commit between the backup's start and end, read
/// back from the archive and the live log.
fn first_commit_within(disk: &MemBackend, report: &BackupReport) -> Option<i64> {
    let log = ArchivedLog::open(
        Arc::new(disk.clone()),
        Path::new("/data/archive"),
        Some(Path::new("/data/translog")),
    )
    .unwrap();
    log.records_from(Lsn(report.manifest.start_lsn))
        .map(Result::unwrap)
        .take_while(|r| r.lsn.0 < report.manifest.end_lsn)
        .find_map(|r| match r.body {
            RecordBody::Commit { time_micros } => Some(time_micros),
            _ => None,
        })
}

fn setup() -> (MemBackend, Arc<Engine>) {
    let disk = MemBackend::new();
    let (engine, _) = Engine::open(Arc::new(disk.clone()), cfg()).unwrap();
    engine.create_database("a.fdb", "A").unwrap();
    write_some(&engine, "a.fdb", 0, 200);
    (disk, Arc::new(engine))
}

fn close(engine: Arc<Engine>) {
    Arc::into_inner(engine).unwrap().close().unwrap();
}

#[test]
fn backup_under_concurrent_writes_restores_to_the_live_database() {
    let (disk, engine) = setup();
    let report = backup_under_load(&engine);
    assert_eq!(report.manifest.databases.len(), 1);
    assert!(report.manifest.start_lsn <= report.manifest.end_lsn);
    write_some(&engine, "a.fdb", 5000, 100);
    let live = contents(&engine, "a.fdb");
    let old_instance = engine
        .open_database("a.fdb")
        .unwrap()
        .info()
        .unwrap()
        .instance_id;
    close(engine);

    disk.remove_file(Path::new("/data/a.fdb")).unwrap();
    let (engine, _) = Engine::open(Arc::new(disk.clone()), cfg()).unwrap();
    let reports = engine
        .restore(Path::new("/backup"), &RestoreOptions::default())
        .unwrap();
    assert_eq!(reports.len(), 1);
    assert_eq!(reports[0].from_instance, old_instance);
    assert_ne!(reports[0].new_instance, old_instance);
    assert!(reports[0].txns_applied > 0);
    assert_eq!(contents(&engine, "a.fdb"), live);
    let db = engine.open_database("a.fdb").unwrap();
    assert_eq!(db.info().unwrap().instance_id, reports[0].new_instance);
    // The restored database takes writes, and they survive a restart.
    db.check().unwrap();
    let more = write_some(&engine, "a.fdb", 9000, 5);
    assert_eq!(contents(&engine, "a.fdb").len(), live.len() + 5);
    drop(db);
    engine.close().unwrap();
    let (engine, _) = Engine::open(Arc::new(disk), cfg()).unwrap();
    let after = contents(&engine, "a.fdb");
    assert_eq!(after.len(), live.len() + 5);
    assert!(more.iter().all(|u| after.contains_key(u)));
}

#[test]
fn restore_until_a_time_has_every_commit_before_it_and_none_after() {
    let (disk, engine) = setup();
    // A backup during which a commit happened (the copy of a small
    // database can be quicker than a commit; try again then).
    let (dest, report) = (0..50)
        .map(|i| {
            let dest = format!("/backup{i}");
            let report = backup_under_load_to(&engine, &dest);
            (dest, report)
        })
        .find(|(_, r)| first_commit_within(&disk, r).is_some())
        .expect("a backup with a commit during its copy");
    let dest = Path::new(&dest);
    let before = write_some(&engine, "a.fdb", 5000, 40);
    std::thread::sleep(Duration::from_millis(5));
    let t = Timestamp::now();
    std::thread::sleep(Duration::from_millis(5));
    let after = write_some(&engine, "a.fdb", 6000, 40);
    let at_t: BTreeMap<_, _> = contents(&engine, "a.fdb")
        .into_iter()
        .filter(|(u, _)| !after.contains(u))
        .collect();
    close(engine);

    let (engine, _) = Engine::open(Arc::new(disk.clone()), cfg()).unwrap();
    let opts = RestoreOptions {
        until: Some(t),
        to: Some("b.fdb".into()),
        ..RestoreOptions::default()
    };
    let reports = engine.restore(dest, &opts).unwrap();
    assert!(reports[0].last_commit.unwrap() <= t);
    let restored = contents(&engine, "b.fdb");
    assert!(before.iter().all(|u| restored.contains_key(u)));
    assert!(after.iter().all(|u| !restored.contains_key(u)));
    assert_eq!(restored, at_t);
    // The original is untouched and keeps its own instance.
    assert_eq!(contents(&engine, "a.fdb").len(), at_t.len() + after.len());

    // A time before a commit the copy may already hold cannot be reached.
    let commit = first_commit_within(&disk, &report).expect("a commit during the backup");
    let early = RestoreOptions {
        until: Some(Timestamp(commit - 1)),
        to: Some("c.fdb".into()),
        ..RestoreOptions::default()
    };
    let err = engine.restore(dest, &early).unwrap_err();
    assert!(matches!(err, NsfError::RestoreUnreachable { .. }), "{err}");
    assert!(!engine
        .list_databases()
        .unwrap()
        .contains(&"c.fdb".to_string()));
    // --to an existing database is refused.
    let onto = RestoreOptions {
        to: Some("a.fdb".into()),
        ..RestoreOptions::default()
    };
    assert!(matches!(
        engine.restore(dest, &onto).unwrap_err(),
        NsfError::DatabaseExists(_)
    ));
}

#[test]
fn a_missing_archived_extent_is_named() {
    let (disk, engine) = setup();
    let report = backup_under_load(&engine);
    // Enough log for the extents after the backup to be archived and
    // their live files recycled.
    for round in 0..12 {
        write_some(&engine, "a.fdb", 10_000 + round * 100, 100);
        engine.checkpoint().unwrap();
        engine.archive(None).unwrap();
    }
    close(engine);
    let archived: Vec<_> = disk
        .read_dir(Path::new("/data/archive"))
        .unwrap()
        .into_iter()
        .filter(|p| p.extension().is_some_and(|e| e == "log"))
        .collect();
    let live: Vec<_> = disk.read_dir(Path::new("/data/translog")).unwrap();
    // The first archived extent after the backup's end whose live file is gone.
    let name = |p: &std::path::PathBuf| p.file_name().unwrap().to_string_lossy().to_string();
    let lsn_of = |p: &std::path::PathBuf| u64::from_str_radix(&name(p)[21..37], 16).unwrap();
    let mut candidates: Vec<_> = archived
        .iter()
        .filter(|p| lsn_of(p) > report.manifest.end_lsn)
        .collect();
    candidates.sort_by_key(|p| lsn_of(p));
    let victim = candidates[0];
    assert!(live.len() < archived.len());
    disk.remove_file(victim).unwrap();

    let (engine, _) = Engine::open(Arc::new(disk.clone()), cfg()).unwrap();
    let opts = RestoreOptions {
        to: Some("b.fdb".into()),
        ..RestoreOptions::default()
    };
    let err = engine.restore(Path::new("/backup"), &opts).unwrap_err();
    match err {
        NsfError::Log(LogError::MissingExtent { first_lsn, .. }) => {
            assert_eq!(first_lsn.0, lsn_of(victim))
        }
        other => panic!("expected a missing extent, got {other}"),
    }
    assert!(!disk.exists(Path::new("/data/b.fdb")));
}

#[test]
fn a_restore_cut_short_leaves_the_target_usable_and_a_rerun_finishes_it() {
    let (disk, engine) = setup();
    backup_under_load(&engine);
    let live = contents(&engine, "a.fdb");
    close(engine);

    for (op, nth) in [
        (FaultOp::Write, 3),
        (FaultOp::Sync, 1),
        (FaultOp::Rename, 1),
    ] {
        let faulty = Arc::new(FaultBackend::new(Arc::new(disk.clone())));
        let (engine, _) = Engine::open(faulty.clone(), cfg()).unwrap();
        faulty.add_rule(FaultRule {
            path_contains: Some("a.fdb-restore".into()),
            nth,
            ..FaultRule::new(op, FaultKind::Eio)
        });
        let err = engine
            .restore(Path::new("/backup"), &RestoreOptions::default())
            .unwrap_err();
        assert!(
            matches!(
                err,
                NsfError::Io { .. } | NsfError::Log(LogError::Io { .. })
            ),
            "{op:?}: {err}"
        );
        drop(engine);
        // The target is what it was: the live database, readable.
        let (engine, _) = Engine::open(Arc::new(disk.clone()), cfg()).unwrap();
        let a = contents(&engine, "a.fdb");
        assert_eq!(a, live, "{op:?}");
        engine.close().unwrap();
    }
    let (engine, _) = Engine::open(Arc::new(disk.clone()), cfg()).unwrap();
    engine
        .restore(Path::new("/backup"), &RestoreOptions::default())
        .unwrap();
    assert_eq!(contents(&engine, "a.fdb"), live);
}
