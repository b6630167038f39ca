//! Append, commit, reopen: recovery redoes exactly the committed batches
//! into the database files, reports what it did, and is idempotent.

use crate::common::*;
use std::path::Path;
use storage::backend::MemBackend;
use storage::Backend;
use storage::PageId;
use translog::{FailedDatabase, LogError, StopReason};

#[test]
fn committed_batches_are_redone_into_database_files_on_reopen() {
    let m = mem();
    let mut model = Model::default();
    model.create_db(&m, "mail/a.fdb", 8);
    let (log, report) = open(&m, cfg(8));
    assert!(report.new_log);
    assert_eq!(report.epoch, 1);
    let before = model.clone();
    commit(
        &log,
        &mut model,
        batch(
            "mail/a.fdb",
            vec![(1, full_img(0x11)), (2, delta(100, b"hello"))],
        ),
    );
    commit(
        &log,
        &mut model,
        batch(
            "mail/a.fdb",
            vec![(1, delta(4000, b"again")), (3, img(0x33))],
        ),
    );
    let info = log.info();
    assert_eq!(
        (info.commits, info.appends),
        (2, 9),
        "8 batch records and the restart checkpoint"
    );
    assert_eq!(info.durable_lsn, info.end_lsn);
    log.shutdown().unwrap();
    drop(log);
    before.check(&m); // nothing reached the database files yet

    let (log, report) = open(&m, cfg(8));
    assert!(!report.new_log);
    assert_eq!(report.epoch, 2);
    assert_eq!(report.committed_txns_redone, 2);
    assert_eq!(report.incomplete_txns_discarded, 0);
    assert_eq!(report.pages_redone, 4);
    assert_eq!(report.pages_written, 3);
    assert_eq!(report.databases_touched.len(), 1);
    assert_eq!(
        (
            report.databases_touched[0].path.as_str(),
            report.databases_touched[0].db_iid
        ),
        ("mail/a.fdb", 7)
    );
    assert_eq!(report.failed_databases, vec![]);
    assert_eq!(report.torn_tail, None);
    assert_eq!(report.scan_stop, StopReason::Zeroed);
    model.check(&m);
    drop(log);

    let (_log, report) = open(&m, cfg(8));
    assert_eq!(
        report.records_scanned, 1,
        "only the restart checkpoint lies after the redo LSN"
    );
    assert_eq!(report.committed_txns_redone, 0);
    model.check(&m);
}

#[test]
fn missing_and_unrecoverable_databases_are_reported_without_stopping_recovery() {
    let m = mem();
    let mut model = Model::default();
    model.create_db(&m, "good.fdb", 4);
    model.create_db(&m, "bad.fdb", 4);
    let (log, _) = open(&m, cfg(8));
    commit(&log, &mut model, batch("good.fdb", vec![(1, img(1))]));
    let lost = batch("gone.fdb", vec![(1, img(2))]);
    log.wait_durable(log.append(&lost).unwrap().end_lsn)
        .unwrap();
    let broken = batch("bad.fdb", vec![(2, delta(500, b"x")), (3, img(3))]);
    let a = log.append(&broken).unwrap();
    log.wait_durable(a.end_lsn).unwrap();
    drop(log);
    // Damage page 2 of bad.fdb: the delta has no valid base and no image follows.
    let bad = Path::new(DATA).join("bad.fdb");
    let mut bytes = m.file_bytes(&bad).unwrap();
    bytes[PageId(2).offset() as usize + 1000] ^= 1;
    m.set_file_bytes(&bad, bytes);

    let (_log, report) = open(&m, cfg(8));
    assert_eq!(report.committed_txns_redone, 3);
    let failed: Vec<&str> = report
        .failed_databases
        .iter()
        .map(|f| f.path.as_str())
        .collect();
    assert_eq!(failed, vec!["bad.fdb", "gone.fdb"]);
    assert!(reason(&report.failed_databases, "gone.fdb").contains("missing"));
    let why = reason(&report.failed_databases, "bad.fdb");
    assert!(
        why.contains("invalid after redo") && why.contains("page 2") && why.contains("checksum"),
        "{why}"
    );
    model.check_db(&m, "good.fdb");
    // The image for bad.fdb page 3 was still applied and sealed.
    let p3 = read_page(&m, "bad.fdb", 3);
    assert_eq!(p3.lsn(), a.page_lsns[1]);
    p3.verify("bad.fdb", PageId(3)).unwrap();
}

fn reason<'a>(failed: &'a [FailedDatabase], path: &str) -> &'a str {
    &failed.iter().find(|f| f.path == path).unwrap().reason
}

/// Recovery after a crash that hit after redo wrote the database files but
/// before the truncate phase's checkpoint: the second redo must produce
/// identical files and apply nothing.
#[test]
fn redo_is_idempotent() {
    let m = mem();
    let mut model = Model::default();
    model.create_db(&m, "i.fdb", 6);
    let (log, _) = open(&m, cfg(8));
    for round in 0..10u8 {
        commit(
            &log,
            &mut model,
            batch("i.fdb", vec![(1 + round as u32 % 5, img(round))]),
        );
        commit(
            &log,
            &mut model,
            batch(
                "i.fdb",
                vec![(
                    1 + (round as u32 + 2) % 5,
                    delta(200 + round as u16, &[round; 9]),
                )],
            ),
        );
    }
    drop(log);
    let crashed = m.snapshot();

    let first = crashed.snapshot();
    let (_log, r1) = open(&first, cfg(8));
    assert_eq!(r1.committed_txns_redone, 20);
    model.check(&first);
    let redone_db = first.file_bytes(&Path::new(DATA).join("i.fdb")).unwrap();
    let twin = crashed.snapshot();
    drop(open(&twin, cfg(8)));
    assert_eq!(
        twin.file_bytes(&Path::new(DATA).join("i.fdb")).unwrap(),
        redone_db,
        "redo is deterministic"
    );

    let again = crashed.snapshot();
    again.set_file_bytes(&Path::new(DATA).join("i.fdb"), redone_db.clone());
    let (_log, r2) = open(&again, cfg(8));
    assert_eq!(r2.committed_txns_redone, 20);
    assert_eq!((r2.pages_redone, r2.pages_written), (0, 0));
    assert_eq!(
        again.file_bytes(&Path::new(DATA).join("i.fdb")).unwrap(),
        redone_db
    );
}

#[test]
fn bad_arguments_and_configs_are_typed_errors() {
    let m = mem();
    let (log, _) = open(&m, cfg(8));
    let far = storage::Lsn(log.end_lsn().0 + 1);
    assert!(matches!(log.wait_durable(far), Err(LogError::Invalid(_))));
    assert!(matches!(log.checkpoint(far), Err(LogError::Invalid(_))));
    assert!(matches!(
        log.append(&batch("../escape.fdb", vec![])),
        Err(LogError::Invalid(_))
    ));
    drop(log);
    let other_size = translog::LogConfig {
        extent_size: 2 * EXT,
        ..cfg(8)
    };
    let e = translog::TransLog::open(std::sync::Arc::new(m.clone()), Path::new(DATA), other_size)
        .err()
        .unwrap();
    assert!(
        matches!(e, LogError::Config(ref s) if s.contains("differs")),
        "{e}"
    );
    let empty = MemBackend::new();
    empty.create_dir_all(Path::new(LOG)).unwrap();
    empty.set_file_bytes(
        &Path::new(LOG).join("ext-0000000000000001.log"),
        vec![0; 10],
    );
    let e = translog::TransLog::open(std::sync::Arc::new(empty), Path::new(DATA), cfg(8))
        .err()
        .unwrap();
    assert!(matches!(e, LogError::BadControl { .. }), "{e}");
}
