//! The backup history (`<data>/backups.json`, I64): each backup and
//! archive run that started is recorded once its work is durable, failed
//! runs with their reason; a request refused before it starts is not a
//! run; the history survives a reopen, keeps the newest
//! `BACKUP_HISTORY_RUNS`, and an unreadable file is set aside by the next
//! run instead of blocking it.

use nsf::{Engine, EngineConfig, Item, ItemValue, NsfError, RunKind, BACKUP_HISTORY_RUNS};
use std::path::Path;
use std::sync::Arc;
use storage::backend::{
    write_file_atomic, FaultBackend, FaultKind, FaultOp, FaultRule, MemBackend,
};
use storage::Backend;
use translog::LogStyle;

mod common;

fn cfg() -> EngineConfig {
    let mut cfg = common::config(true);
    let lc = cfg.log.as_mut().unwrap();
    lc.style = LogStyle::Archive;
    lc.archive_dir = Some("/data/archive".into());
    cfg
}

fn open(disk: Arc<dyn Backend>) -> Engine {
    Engine::open(disk, cfg()).unwrap().0
}

fn fill(engine: &Engine) {
    let db = engine.open_database("a.fdb").unwrap();
    for i in 0..50 {
        db.create(vec![Item {
            name: "N".into(),
            value: ItemValue::Number(f64::from(i)),
        }])
        .unwrap();
    }
}

#[test]
fn runs_are_recorded_durably_failed_ones_with_their_reason_refusals_not_at_all() {
    let disk = MemBackend::new();
    let faulty = Arc::new(FaultBackend::new(Arc::new(disk.clone())));
    let engine = open(faulty.clone());
    assert!(engine.backup_history().unwrap().is_empty());
    engine.create_database("a.fdb", "A").unwrap();
    fill(&engine);

    let r = engine.backup(Path::new("/b1"), &[]).unwrap();
    let runs = engine.backup_history().unwrap();
    assert_eq!(runs.len(), 1, "{runs:?}");
    let ok = &runs[0];
    assert_eq!((ok.kind, ok.result.as_str()), (RunKind::Backup, "ok"));
    assert_eq!(ok.dir, "/b1");
    assert_eq!(ok.databases, ["a.fdb"]);
    assert_eq!(ok.bytes, r.bytes_copied);
    assert!(ok.bytes > 0);
    assert_eq!(ok.start_lsn, Some(r.manifest.start_lsn));
    assert_eq!(ok.end_lsn, Some(r.manifest.end_lsn));

    // Refused before it starts: the same directory again, an unknown
    // database. Not runs.
    let e = engine.backup(Path::new("/b1"), &[]).unwrap_err();
    assert!(matches!(e, NsfError::Invalid(_)), "{e}");
    engine
        .backup(Path::new("/b9"), &["nope.fdb".into()])
        .unwrap_err();
    assert_eq!(engine.backup_history().unwrap().len(), 1);

    // A run that fails part-way: recorded, with why.
    faulty.add_rule(FaultRule {
        path_contains: Some("/b2/".into()),
        nth: 1,
        ..FaultRule::new(FaultOp::Write, FaultKind::Eio)
    });
    engine.backup(Path::new("/b2"), &[]).unwrap_err();
    faulty.clear_rules();
    fill(&engine);
    let a = engine.archive(None).unwrap();
    let runs = engine.backup_history().unwrap();
    assert_eq!(runs.len(), 3, "{runs:?}");
    assert_eq!(runs[0].kind, RunKind::Archive);
    assert_eq!(runs[0].result, "ok");
    assert_eq!(runs[0].dir, a.archive_dir.display().to_string());
    assert_eq!(runs[0].extents, a.extents_copied);
    assert_eq!(runs[1].kind, RunKind::Backup);
    assert_eq!(runs[1].dir, "/b2");
    assert!(runs[1].result.starts_with("failed: "), "{}", runs[1].result);
    assert!(runs[1].result.contains("/b2"), "{}", runs[1].result);
    assert_eq!(runs[2], *ok);
    drop(engine);

    // Durable: a reopened engine (a crash leaves the same, since the file
    // is replaced atomically and synced) reads the same history.
    let engine = open(Arc::new(disk.clone()));
    assert_eq!(engine.backup_history().unwrap(), runs);
}

#[test]
fn the_history_is_bounded_and_an_unreadable_one_is_set_aside() {
    let disk = MemBackend::new();
    let engine = open(Arc::new(disk.clone()));
    for _ in 0..BACKUP_HISTORY_RUNS + 5 {
        engine.archive(None).unwrap();
    }
    assert_eq!(engine.backup_history().unwrap().len(), BACKUP_HISTORY_RUNS);

    write_file_atomic(&disk, Path::new("/data/backups.json"), b"{not json").unwrap();
    let e = engine.backup_history().unwrap_err();
    assert!(e.to_string().contains("/data/backups.json"), "{e}");
    engine.archive(None).unwrap();
    assert_eq!(engine.backup_history().unwrap().len(), 1);
    assert!(disk.exists(Path::new("/data/backups.json.unreadable")));
}
