//! Delivering into many mail files at once, with a bounded number of
//! workers.
//!
//! Each delivery into a mail file waits for its commits to be durable
//! (I33 (1)–(2)), and durability is an fsync of the server-wide log. One
//! mail file after another, a pass costs (mail files) × (fsync latency),
//! however idle the disk. Delivered side by side, the commits of many
//! mail files reach the log together and share its group-commit fsyncs,
//! so a pass costs about (mail files / workers) fsyncs. (Opening a mail
//! file is the other cost, and where the engine serializes opens — its
//! open-database cache over its limit closes idle files inline — the
//! workers wait there instead: `router.delivery_ms.open` shows it.)
//!
//! ```text
//!   files, oldest deposit first ──▶ next (an atomic index)
//!      worker 1: take next ─▶ batch::deliver ─▶ its outcomes, the time ─┐
//!      worker 2: take next ─▶ batch::deliver ─▶ …                       ├─▶ per file
//!      … at most router.workers, none more than there are files         │
//!   every worker done (a scope) ◀───────────────────────────────────────┘
//! ```
//!
//! A pass hands out files only for a bounded time (`until`): its
//! deliveries are recorded when it ends, so however slowly mail files
//! open or commit, a pass ends soon and records what it filed; the files
//! it did not reach stay pending, due, for the next pass at once.
//!
//! Nothing is recorded here: the pass records a deposit only after every
//! worker is done, so each copy is durable (and in the Inbox) before its
//! box document says so, whichever worker filed it (I33 (4)). A worker
//! never takes a mail file another holds, so the copies for one file
//! stay one batch (one transaction) and one Inbox change.

use super::batch::{self, Filed, Job};
use super::state::Routing;
use super::stats::RouterStats;
use crate::directory::Person;
use nsf::{Clock, Database, Engine, Timestamp};
use parking_lot::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Instant;
use views::Views;

/// The copies for one mail file, delivered by one worker.
pub(crate) struct FileJobs<'a> {
    pub person: &'a Person,
    pub jobs: &'a [Job],
}

/// What became of one mail file's jobs, and when its delivery ended.
pub(crate) struct FileDone {
    pub filed: Vec<Filed>,
    pub at: Timestamp,
}

/// What the workers share: the pass's work, read only.
pub(crate) struct Shared<'a> {
    pub engine: &'a Engine,
    pub views: &'a Views,
    pub work: &'a [(Arc<Database>, Routing)],
    pub now: Timestamp,
    pub clock: &'a dyn Clock,
    pub stats: &'a RouterStats,
}

/// Delivers entries of `files` with at most `workers` at once, in the
/// order given as far as workers are free, until every one is delivered
/// or `until` has passed: a file not yet taken then is left (None), its
/// copies untouched for the next pass. Each worker takes its first file
/// whatever the time, so every pass makes progress. Returns each file's
/// outcome, in the order of `files`.
pub(crate) fn deliver_all(
    shared: &Shared<'_>,
    files: &[FileJobs<'_>],
    workers: usize,
    until: Instant,
) -> Vec<Option<FileDone>> {
    let next = AtomicUsize::new(0);
    let done: Vec<Mutex<Option<FileDone>>> = files.iter().map(|_| Mutex::new(None)).collect();
    let threads = workers.clamp(1, files.len().max(1));
    let work = || loop {
        let i = next.fetch_add(1, Ordering::Relaxed);
        if i >= threads && Instant::now() >= until {
            return;
        }
        let Some(f) = files.get(i) else { return };
        *done[i].lock() = Some(deliver_one(shared, f));
    };
    if threads == 1 {
        work();
    } else {
        std::thread::scope(|s| {
            for _ in 0..threads {
                s.spawn(work);
            }
        });
    }
    done.into_iter().map(Mutex::into_inner).collect()
}

/// One mail file's delivery, counted in flight while it runs.
fn deliver_one(shared: &Shared<'_>, f: &FileJobs<'_>) -> FileDone {
    let _busy = shared.stats.start_delivery(f.jobs.len());
    let filed = batch::deliver(
        shared.engine,
        shared.views,
        f.person,
        f.jobs,
        shared.work,
        shared.now,
        shared.stats,
    );
    FileDone {
        filed,
        at: shared.clock.now(),
    }
}
