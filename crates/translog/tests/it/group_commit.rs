//! Group commit: many concurrent committers share fdatasyncs.

use crate::common::*;
use std::sync::Arc;
use std::time::Duration;
use storage::backend::{FaultKind, FaultOp, FaultRule};
use storage::Lsn;
use translog::LogConfig;

const THREADS: u32 = 16;
const COMMITS: u32 = 200;

fn config() -> LogConfig {
    LogConfig {
        extent_size: 1 << 20,
        max_size: 16 << 20,
        ..LogConfig::new(LOG)
    }
}

/// Each thread commits COMMITS deltas to its own page, waiting for each.
fn run_committers(log: &Arc<translog::TransLog>) -> Vec<Lsn> {
    let handles: Vec<_> = (0..THREADS)
        .map(|t| {
            let log = log.clone();
            std::thread::spawn(move || {
                let mut ends = Vec::new();
                for i in 0..COMMITS {
                    let b = batch(
                        "g.fdb",
                        vec![(
                            t + 1,
                            delta(100, &[&i.to_le_bytes()[..], &t.to_le_bytes()].concat()),
                        )],
                    );
                    let a = log.append(&b).unwrap();
                    log.wait_durable(a.end_lsn).unwrap();
                    assert!(log.durable_lsn() >= a.end_lsn);
                    assert!(ends.last().is_none_or(|e| *e < a.end_lsn));
                    ends.push(a.end_lsn);
                }
                ends
            })
        })
        .collect();
    handles
        .into_iter()
        .flat_map(|h| h.join().unwrap())
        .collect()
}

#[test]
fn concurrent_committers_share_fsyncs_and_all_survive_reopen() {
    let m = mem();
    let mut model = Model::default();
    model.create_db(&m, "g.fdb", THREADS + 1);
    let faulty = faulty(&m);
    // A disk whose fdatasync takes a little while, as real ones do.
    faulty.add_rule(FaultRule {
        sticky: true,
        ..FaultRule::new(FaultOp::Sync, FaultKind::Delay(Duration::from_micros(300)))
    });
    let (log, _) = open_with(faulty.clone(), config());
    let base = log.info();
    let syncs_before = faulty.count(FaultOp::Sync);

    let ends = run_committers(&log);

    let info = log.info();
    let commits = info.commits - base.commits;
    let fsyncs = info.fsyncs - base.fsyncs;
    assert_eq!(commits, u64::from(THREADS * COMMITS));
    assert!(fsyncs < commits, "{fsyncs} fsyncs for {commits} commits");
    let counted = faulty.count(FaultOp::Sync) - syncs_before;
    assert!(
        counted >= fsyncs,
        "the backend saw {counted} syncs, the log claims {fsyncs}"
    );
    assert_eq!(info.durable_lsn, info.end_lsn);
    assert!(ends.iter().all(|e| *e <= info.durable_lsn));
    log.shutdown().unwrap();
    drop(log);

    let (_log, report) = open(&m, config());
    assert_eq!(report.committed_txns_redone, u64::from(THREADS * COMMITS));
    for t in 0..THREADS {
        let page = read_page(&m, "g.fdb", t + 1);
        let want = [&(COMMITS - 1).to_le_bytes()[..], &t.to_le_bytes()].concat();
        assert_eq!(
            &page.bytes()[100..108],
            &want[..],
            "thread {t}'s last commit"
        );
    }
}

/// `when_durable`: the callback runs only once the fdatasync covering its
/// LSN is done (I2), at once for an LSN already durable, and with the
/// error if the log fails first (I11).
#[test]
fn when_durable_callbacks_run_after_the_covering_fsync_or_with_the_failure() {
    let m = mem();
    let faulty = faulty(&m);
    faulty.add_rule(FaultRule {
        sticky: true,
        ..FaultRule::new(FaultOp::Sync, FaultKind::Delay(Duration::from_millis(20)))
    });
    let (log, _) = open_with(faulty.clone(), config());
    let (tx, rx) = std::sync::mpsc::channel();
    let a = log.append(&batch("w.fdb", vec![(1, img(1))])).unwrap();
    let durable_seen = {
        let (tx, log) = (tx.clone(), log.clone());
        move |r: Result<(), translog::LogError>| {
            tx.send((r.is_ok(), log.durable_lsn())).unwrap();
        }
    };
    log.when_durable(a.end_lsn, Box::new(durable_seen));
    let (ok, durable) = rx.recv_timeout(Duration::from_secs(10)).unwrap();
    assert!(ok && durable >= a.end_lsn, "{durable} < {}", a.end_lsn);
    // Already durable: at once, on this thread.
    let tx2 = tx.clone();
    log.when_durable(
        a.end_lsn,
        Box::new(move |r| tx2.send((r.is_ok(), Lsn(0))).unwrap()),
    );
    assert!(rx.try_recv().unwrap().0);
    // A failing fdatasync: the waiter hears it, and is never told "durable".
    faulty.clear_rules();
    faulty.add_rule(FaultRule {
        sticky: true,
        ..FaultRule::new(FaultOp::Sync, FaultKind::Eio)
    });
    let doomed = log.append(&batch("w.fdb", vec![(2, img(2))])).unwrap();
    let tx3 = tx.clone();
    log.when_durable(
        doomed.end_lsn,
        Box::new(move |r| tx3.send((r.is_ok(), Lsn(0))).unwrap()),
    );
    let (ok, _) = rx.recv_timeout(Duration::from_secs(10)).unwrap();
    assert!(!ok);
    assert!(log.durable_lsn() < doomed.end_lsn);
}
