//! Sticky failure (I11): a failed fdatasync poisons the log; the waiting
//! committer gets the error, everything after fails with `Failed` naming
//! the original error, and a reopen recovers everything acknowledged.

use crate::common::*;
use storage::backend::{FaultKind, FaultOp, FaultRule};
use translog::LogError;

fn failed_reason(e: LogError) -> String {
    match e {
        LogError::Failed { reason } => reason,
        other => panic!("expected Failed, got {other}"),
    }
}

#[test]
fn a_failed_fsync_poisons_the_log_until_reopen() {
    let m = mem();
    let mut model = Model::default();
    model.create_db(&m, "p.fdb", 6);
    let faulty = faulty(&m);
    let (log, _) = open_with(faulty.clone(), cfg(8));
    let mut acked = Vec::new();
    for i in 1..=3 {
        acked.push(commit(
            &log,
            &mut model,
            batch("p.fdb", vec![(i, img(i as u8))]),
        ));
    }

    faulty.add_rule(FaultRule {
        sticky: true,
        ..FaultRule::new(FaultOp::Sync, FaultKind::Eio)
    });
    let doomed = log.append(&batch("p.fdb", vec![(5, img(0x55))])).unwrap();
    let reason = failed_reason(log.wait_durable(doomed.end_lsn).unwrap_err());
    assert!(reason.contains("os error 5"), "{reason}");

    faulty.clear_rules();
    let later = log.append(&batch("p.fdb", vec![(4, img(4))])).unwrap_err();
    assert!(
        failed_reason(later).contains("os error 5"),
        "never retried, even once the disk recovers"
    );
    assert!(matches!(
        log.checkpoint(log.durable_lsn()),
        Err(LogError::Failed { .. })
    ));
    log.wait_durable(acked[2].end_lsn).unwrap();
    let info = log.info();
    assert!(
        info.failed
            .as_deref()
            .is_some_and(|r| r.contains("os error 5")),
        "{info:?}"
    );
    assert!(!log.checkpoint_wanted());
    assert!(matches!(log.shutdown(), Err(LogError::Failed { .. })));
    drop(log);

    let (_log, report) = open(&m, cfg(8));
    assert!(report.committed_txns_redone >= 3);
    for i in 1..=3 {
        model.check_page(&m, "p.fdb", i);
    }
}
