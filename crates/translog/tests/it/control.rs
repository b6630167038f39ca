//! The control file (I9): a torn update of one slot falls back to the
//! other, and the failure that tore it poisons the log (I11).

use crate::common::*;
use std::path::Path;
use std::sync::Arc;
use storage::backend::{FaultKind, FaultOp, FaultRule};
use translog::LogError;

#[test]
fn a_torn_control_write_falls_back_to_the_previous_slot() {
    let m = mem();
    let mut model = Model::default();
    model.create_db(&m, "c.fdb", 4);
    let faulty = faulty(&m);
    let (log, _) = open_with(faulty.clone(), cfg(8));
    commit(&log, &mut model, batch("c.fdb", vec![(1, img(1))]));
    commit(
        &log,
        &mut model,
        batch("c.fdb", vec![(2, delta(77, b"ctl"))]),
    );
    let before = m.file_bytes(&Path::new(LOG).join("control")).unwrap();

    model.flush(&m, "c.fdb");
    faulty.add_rule(FaultRule {
        path_contains: Some("control".into()),
        // Torn inside the slot's fields, as the old slot's checksum stays.
        ..FaultRule::new(FaultOp::Write, FaultKind::TornWrite(30))
    });
    let e = log.checkpoint(log.end_lsn()).unwrap_err();
    assert!(
        matches!(&e, LogError::Failed { reason } if reason.contains("os error 5")),
        "{e}"
    );
    assert!(matches!(
        log.append(&batch("c.fdb", vec![])),
        Err(LogError::Failed { .. })
    ));
    let after = m.file_bytes(&Path::new(LOG).join("control")).unwrap();
    assert_ne!(before, after, "one slot was torn");
    drop(log);

    let (_log, report) = open(&m, cfg(8));
    assert_eq!(
        report.committed_txns_redone, 2,
        "recovery starts from the previous checkpoint"
    );
    model.check(&m);
}

#[test]
fn a_control_file_with_no_valid_slot_is_refused() {
    let m = mem();
    drop(open(&m, cfg(8)));
    m.set_file_bytes(&Path::new(LOG).join("control"), vec![0x5a; 1024]);
    let e = translog::TransLog::open(Arc::new(m.clone()), Path::new(DATA), cfg(8))
        .err()
        .unwrap();
    assert!(
        matches!(&e, LogError::BadControl { reason, .. } if reason.contains("no valid slot")),
        "{e}"
    );
}
