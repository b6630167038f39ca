//! Cutting or damaging the log at every byte of the last batch: exactly
//! the committed prefix survives, the damaged batch is discarded, and the
//! log continues and survives another restart.

use crate::common::*;
use std::path::Path;
use storage::backend::MemBackend;
use storage::Lsn;
use translog::Appended;

/// A log with three committed batches and a small last batch `last`,
/// shut down cleanly; `model` excludes `last`.
fn setup() -> (MemBackend, Model, Appended) {
    let m = mem();
    let mut model = Model::default();
    model.create_db(&m, "t.fdb", 4);
    let (log, _) = open(&m, cfg(8));
    commit(&log, &mut model, batch("t.fdb", vec![(1, img(1))]));
    commit(
        &log,
        &mut model,
        batch("t.fdb", vec![(2, img(2)), (1, delta(300, b"abc"))]),
    );
    commit(
        &log,
        &mut model,
        batch("t.fdb", vec![(3, delta(64, b"xyz"))]),
    );
    let mut ignored = model.clone();
    let last = commit(
        &log,
        &mut ignored,
        batch("t.fdb", vec![(2, delta(900, b"LASTBATCH"))]),
    );
    log.shutdown().unwrap();
    (m, model, last)
}

enum Damage {
    Truncate,
    FlipByte,
}

fn damaged(base: &MemBackend, lsn: Lsn, how: &Damage) -> MemBackend {
    let m = base.snapshot();
    let (path, off) = locate(Path::new(LOG), lsn);
    let mut bytes = m.file_bytes(&path).unwrap();
    match how {
        Damage::Truncate => bytes.truncate(off),
        Damage::FlipByte => bytes[off] ^= 0xa5,
    }
    m.set_file_bytes(&path, bytes);
    m
}

/// Recovers `m`, checks the committed prefix, then appends one more batch
/// and checks it survives another restart.
fn recover_and_continue(m: &MemBackend, model: &Model, last: &Appended, at: Lsn, how: &Damage) {
    let (log, report) = open(m, cfg(8));
    assert_eq!(report.committed_txns_redone, 3, "damage at {at}");
    assert_eq!(
        report.end_lsn, last.start_lsn,
        "appending resumes at the discarded batch"
    );
    if let Damage::Truncate = how {
        assert!(
            report.torn_tail.is_some(),
            "a short extent is a torn tail (damage at {at})"
        );
    }
    model.check(m);
    let mut next = model.clone();
    commit(
        &log,
        &mut next,
        batch("t.fdb", vec![(3, delta(2000, b"after"))]),
    );
    drop(log);
    let (_log, report) = open(m, cfg(8));
    assert_eq!(report.committed_txns_redone, 1, "damage at {at}");
    next.check(m);
}

#[test]
fn truncating_anywhere_in_the_last_batch_keeps_exactly_the_committed_prefix() {
    let (base, model, last) = setup();
    for lsn in last.start_lsn.0..last.end_lsn.0 {
        let m = damaged(&base, Lsn(lsn), &Damage::Truncate);
        recover_and_continue(&m, &model, &last, Lsn(lsn), &Damage::Truncate);
    }
}

#[test]
fn a_damaged_byte_anywhere_in_the_last_batch_discards_exactly_that_batch() {
    let (base, model, last) = setup();
    for lsn in last.start_lsn.0..last.end_lsn.0 {
        let m = damaged(&base, Lsn(lsn), &Damage::FlipByte);
        recover_and_continue(&m, &model, &last, Lsn(lsn), &Damage::FlipByte);
    }
}

#[test]
fn the_undamaged_log_keeps_the_last_batch() {
    let (base, mut model, last) = setup();
    let (_log, report) = open(&base, cfg(8));
    assert_eq!(report.committed_txns_redone, 4);
    assert_eq!(report.torn_tail, None);
    model.apply(&batch("t.fdb", vec![(2, delta(900, b"LASTBATCH"))]), &last);
    model.check(&base);
}
