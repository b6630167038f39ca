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
