//! Where threads wait, measured: named wait points with a count, a total,
//! a maximum and a log2 histogram of their durations.
//!
//! Response time under load is decided less by what threads compute than
//! by what they wait for: a log fsync, space in the log, a flush pass, a
//! database being opened or closed by someone else. Each layer declares
//! its wait points as statics (`storage::waits`, `translog::waits`,
//! `nsf::waits`) and times every wait on them; the server publishes them
//! in `show stats` as `wait.<name>.*`, so an administrator sees which wait
//! lies on the request path and how long it lasts (design.md I54).
//!
//! The points are process-wide: one server runs per process. Recording
//! costs four relaxed atomic adds and a compare-exchange loop for the
//! maximum, no lock.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// Buckets of the histogram: bucket `i` counts waits of less than `2^i`
/// microseconds (bucket 0: under 1 µs); the last one takes the rest.
const BUCKETS: usize = 32;

/// One named place where a thread can wait.
pub struct WaitPoint {
    name: &'static str,
    count: AtomicU64,
    total_us: AtomicU64,
    max_us: AtomicU64,
    buckets: [AtomicU64; BUCKETS],
}

/// A copy of a wait point's figures.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct WaitStats {
    pub name: &'static str,
    /// Waits recorded.
    pub count: u64,
    /// Their total duration, µs.
    pub total_us: u64,
    /// The longest one, µs.
    pub max_us: u64,
    /// The 99th percentile, µs, as the upper bound of its log2 bucket (so
    /// within a factor of two above the true value).
    pub p99_us: u64,
}

impl WaitPoint {
    /// A wait point with nothing recorded.
    pub const fn new(name: &'static str) -> WaitPoint {
        WaitPoint {
            name,
            count: AtomicU64::new(0),
            total_us: AtomicU64::new(0),
            max_us: AtomicU64::new(0),
            buckets: [const { AtomicU64::new(0) }; BUCKETS],
        }
    }

    pub fn name(&self) -> &'static str {
        self.name
    }

    /// Records one wait of `d`.
    pub fn record(&self, d: Duration) {
        let us = u64::try_from(d.as_micros()).unwrap_or(u64::MAX);
        self.count.fetch_add(1, Ordering::Relaxed);
        self.total_us.fetch_add(us, Ordering::Relaxed);
        self.max_us.fetch_max(us, Ordering::Relaxed);
        let bucket = (u64::BITS - us.leading_zeros()) as usize;
        self.buckets[bucket.min(BUCKETS - 1)].fetch_add(1, Ordering::Relaxed);
    }

    /// Records the time since `since`.
    pub fn since(&self, since: Instant) {
        self.record(since.elapsed());
    }

    /// Runs `f` and records how long it took.
    pub fn time<T>(&self, f: impl FnOnce() -> T) -> T {
        let started = Instant::now();
        let r = f();
        self.since(started);
        r
    }

    pub fn stats(&self) -> WaitStats {
        let count = self.count.load(Ordering::Relaxed);
        let counts: Vec<u64> = self
            .buckets
            .iter()
            .map(|b| b.load(Ordering::Relaxed))
            .collect();
        let total: u64 = counts.iter().sum();
        // The smallest bucket bound below which 99% of the waits lie.
        let mut p99_us = 0;
        let need = total - total / 100;
        let mut seen = 0;
        for (i, c) in counts.iter().enumerate() {
            seen += c;
            if *c > 0 && seen >= need {
                p99_us = 1u64 << i;
                break;
            }
        }
        let max_us = self.max_us.load(Ordering::Relaxed);
        WaitStats {
            name: self.name,
            count,
            total_us: self.total_us.load(Ordering::Relaxed),
            max_us,
            p99_us: p99_us.min(max_us.max(1)),
        }
    }
}

/// A flush pass waiting for another to end: only `discard_from` (compact
/// cutting a file's end) still waits for one (I54).
pub static POOL_FLUSH_TURN: WaitPoint = WaitPoint::new("pool.flush_turn");
/// Writing and syncing one file of a flush pass (not a wait of any
/// request: the flusher's own time per file).
pub static POOL_FILE_FLUSH: WaitPoint = WaitPoint::new("pool.file_flush");

/// One fdatasync of any file on the real file system (a data file, a log
/// extent, an attachment object): its count is every sync the process
/// made, so two configurations are compared by the syncs they cost, not
/// only by the log's.
pub static FILE_SYNC: WaitPoint = WaitPoint::new("file.sync");
/// A sync of a whole file system (`FileHandle::sync_fs`): the checkpoint's
/// one sync of the pages it and the closer wrote (I8).
pub static FS_SYNC: WaitPoint = WaitPoint::new("fs.sync");

/// The storage layer's wait points.
pub fn all() -> [&'static WaitPoint; 4] {
    [&POOL_FLUSH_TURN, &POOL_FILE_FLUSH, &FILE_SYNC, &FS_SYNC]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn figures_follow_what_was_recorded() {
        let w = WaitPoint::new("t");
        assert_eq!(w.stats().count, 0);
        assert_eq!(w.stats().p99_us, 0);
        for _ in 0..99 {
            w.record(Duration::from_micros(3));
        }
        w.record(Duration::from_millis(50));
        let s = w.stats();
        assert_eq!(s.count, 100);
        assert_eq!(s.total_us, 99 * 3 + 50_000);
        assert_eq!(s.max_us, 50_000);
        // 99 of 100 waits were 3 µs: the bucket below 4 µs.
        assert_eq!(s.p99_us, 4);
        for _ in 0..10 {
            w.record(Duration::from_millis(50));
        }
        let s = w.stats();
        assert!(s.p99_us >= 50_000 / 2 && s.p99_us <= 50_000, "{s:?}");
    }
}
