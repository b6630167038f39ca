//! Extent rollover and recycling with small extents: the number of extent
//! files never exceeds max_size / extent_size, and the stale content of
//! recycled extents never comes back after a restart.

use crate::common::*;
use std::path::Path;
use storage::backend::MemBackend;
use translog::TransLog;

const MAX_EXTENTS: u64 = 6;

fn assert_extents_bounded(m: &MemBackend, log: &TransLog) {
    let files = extent_files(m, Path::new(LOG)).len() as u64;
    assert!(files <= MAX_EXTENTS, "{files} extent files");
    assert_eq!(log.info().extents_on_disk, files);
}

/// Commits `n` batches of an image and a delta, writing each batch's pages
/// through to the database (an engine that flushes eagerly) and
/// checkpointing whenever the log asks and once at the end.
fn run_with_checkpoints(m: &MemBackend, log: &TransLog, model: &mut Model, n: u32) {
    for i in 0..n {
        let b = batch(
            "r.fdb",
            vec![
                (i % 16, img(i as u8)),
                ((i + 5) % 16, delta(128, &i.to_le_bytes())),
            ],
        );
        commit(log, model, b);
        model.flush(m, "r.fdb");
        if log.checkpoint_wanted() {
            log.checkpoint(log.end_lsn()).unwrap();
        }
        assert_extents_bounded(m, log);
    }
    log.checkpoint(log.end_lsn()).unwrap();
}

/// Commits `n` batches that stay only in the log (a crash before flush).
fn run_unflushed(log: &TransLog, model: &mut Model, n: u32) {
    for i in 0..n {
        commit(
            log,
            model,
            batch("r.fdb", vec![(i % 16, img(0xf0 | i as u8))]),
        );
    }
    assert!(
        !log.checkpoint_wanted(),
        "the scenario must not need a checkpoint here"
    );
}

#[test]
fn extents_are_recycled_within_max_and_stale_records_never_resurface() {
    let m = mem();
    let mut model = Model::default();
    model.create_db(&m, "r.fdb", 16);
    let (log, _) = open(&m, cfg(MAX_EXTENTS));
    run_with_checkpoints(&m, &log, &mut model, 400);
    let info = log.info();
    assert!(info.checkpoints > 10, "{info:?}");
    assert!(
        info.end_lsn.0 / P > 3 * MAX_EXTENTS,
        "the log wrapped around several times: {info:?}"
    );
    run_unflushed(&log, &mut model, 5);
    drop(log);

    let (log, report) = open(&m, cfg(MAX_EXTENTS));
    assert_eq!(
        report.committed_txns_redone, 5,
        "only batches after the last checkpoint"
    );
    assert_eq!(report.failed_databases, vec![]);
    model.check(&m);
    assert_extents_bounded(&m, &log);

    run_with_checkpoints(&m, &log, &mut model, 150);
    run_unflushed(&log, &mut model, 3);
    drop(log);
    let (log, report) = open(&m, cfg(MAX_EXTENTS));
    assert_eq!(report.committed_txns_redone, 3);
    model.check(&m);
    assert_extents_bounded(&m, &log);
}

#[test]
fn lowering_max_size_trims_free_extents_at_open() {
    let m = mem();
    let mut model = Model::default();
    model.create_db(&m, "r.fdb", 16);
    let (log, _) = open(&m, cfg(MAX_EXTENTS));
    run_with_checkpoints(&m, &log, &mut model, 100);
    drop(log);
    let (log, _) = open(&m, cfg(3));
    let files = extent_files(&m, Path::new(LOG)).len();
    assert!(files <= 3, "{files} extent files");
    assert_eq!(log.info().extents_on_disk, files as u64);
}
