//! The last hour of the server's figures, one sample a second, for the
//! console's charts (`GET /_stats/history`).
//!
//! ```text
//!   Stats::tick (the `stats` task, once a second)
//!     ├─ Reading: counters, engine gauges, router, replication
//!     ├─ per-operation percentiles of the last second (the `recent`
//!     │  histograms, swapped out under their lock)
//!     └─▶ History::push ─▶ deltas against the previous reading
//!                          ─▶ Sample ─▶ ring of CAPACITY (oldest dropped)
//!   GET /_stats/history?since=T ─▶ samples after T, as columns of JSON
//! ```
//!
//! Why it is built this way:
//!
//! - **Off the hot path.** A request pays only what it paid before plus
//!   one more histogram record under the lock it already holds (the
//!   per-second histogram next to the lifetime one). Everything else —
//!   rates, percentiles, engine gauges, the descriptor count — is read by
//!   the once-a-second ticker.
//! - **Bounded memory, stated.** The ring holds [`CAPACITY`] fixed-size
//!   [`Sample`]s (no strings, no per-sample allocation): at most
//!   `CAPACITY × size_of::<Sample>()`, about 1.2 MiB (a test keeps it
//!   under [`MEMORY_BOUND`]). The per-second histograms have 2
//!   significant digits and 32-bit counts (about 10 KiB each, two per
//!   operation: 0.3 MiB). Nothing grows with databases, users or load.
//! - **Columns, not rows.** The answer is one array per figure, which is
//!   what a chart draws from and half the size of an array of objects.
//!   A figure with no value in a second (a percentile with no requests, a
//!   hit rate with no lookups) is `null`, so a chart shows a gap rather
//!   than a made-up zero.

use crate::stats::Op;
use hdrhistogram::Histogram;
use parking_lot::Mutex;
use serde_json::{json, Map, Value as Json};
use std::collections::VecDeque;
use std::time::{Instant, SystemTime, UNIX_EPOCH};

/// Samples kept: one hour at one a second.
pub const CAPACITY: usize = 3_600;

/// What the ring may take at most, in bytes (checked by a test).
pub const MEMORY_BOUND: usize = 3 << 19;

/// The transaction log's state in a sample.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LogState {
    Ok,
    /// Archive style, waiting for `folio archive`: writes are refused.
    Full,
    /// A write or fsync failed: writes are refused until restart.
    Failed,
    /// Unlogged mode.
    Disabled,
}

impl LogState {
    fn as_str(self) -> &'static str {
        match self {
            LogState::Ok => "ok",
            LogState::Full => "full",
            LogState::Failed => "failed",
            LogState::Disabled => "disabled",
        }
    }
}

/// The figures of one moment, as the ticker reads them (counters are
/// totals since start; the history turns them into rates).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Reading {
    pub at: Instant,
    pub transactions: u64,
    pub log_commits: u64,
    pub log_fsyncs: u64,
    pub log_bytes: u64,
    pub log_used_bytes: u64,
    pub log_capacity_bytes: u64,
    pub log_state: LogState,
    pub checkpoint_age_s: f64,
    pub pool_hits: u64,
    pub pool_misses: u64,
    pub pool_dirty_pages: u64,
    pub pool_resident_bytes: u64,
    pub lock_waits: u64,
    pub db_open: u64,
    pub db_open_limit: u64,
    /// Descriptors the process has open (None where it cannot be told).
    pub descriptors: Option<u64>,
    pub native_connections: u64,
    pub http_connections: u64,
    pub router_queue_depth: u64,
    pub router_retrying: u64,
    pub router_delivered: u64,
    pub router_latency_p50_ms: f64,
    pub router_latency_p99_ms: f64,
    pub replication_runs: u64,
    pub replication_failures: u64,
}

/// One operation in one second.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct OpSecond {
    pub count: u32,
    pub p50_us: f32,
    pub p95_us: f32,
    pub p99_us: f32,
}

impl OpSecond {
    /// The second's figures from its histogram (µs).
    pub(crate) fn of(h: &Histogram<u32>) -> OpSecond {
        if h.is_empty() {
            return OpSecond::default();
        }
        let q = |q: f64| h.value_at_quantile(q) as f32;
        OpSecond {
            count: h.len().min(u32::MAX as u64) as u32,
            p50_us: q(0.50),
            p95_us: q(0.95),
            p99_us: q(0.99),
        }
    }
}

/// One second of history: fixed size, no allocation.
#[derive(Clone, Copy, Debug)]
struct Sample {
    /// Unix time in milliseconds.
    at_ms: u64,
    trans_per_min: f32,
    log_bytes_per_s: f32,
    log_fsyncs_per_s: f32,
    log_commits_per_s: f32,
    log_used_bytes: u64,
    log_capacity_bytes: u64,
    log_state: LogState,
    checkpoint_age_s: f32,
    /// NaN: no lookups in the second.
    pool_hit_rate: f32,
    pool_dirty_pages: u32,
    pool_resident_bytes: u64,
    lock_waits_per_s: f32,
    db_open: u32,
    db_open_limit: u32,
    /// NaN: unknown.
    descriptors: f32,
    native_connections: u32,
    http_connections: u32,
    router_queue_depth: u32,
    router_retrying: u32,
    router_delivered_per_s: f32,
    router_latency_p50_ms: f32,
    router_latency_p99_ms: f32,
    replication_runs: u32,
    replication_failures: u32,
    ops: [OpSecond; Op::ALL.len()],
}

struct Ring {
    samples: VecDeque<Sample>,
    last: Option<Reading>,
}

/// The ring of the last [`CAPACITY`] samples (see the module docs).
pub struct History {
    ring: Mutex<Ring>,
}

impl Default for History {
    fn default() -> Self {
        History::new()
    }
}

impl History {
    /// An empty history, its ring allocated in full now.
    pub fn new() -> History {
        History {
            ring: Mutex::new(Ring {
                samples: VecDeque::with_capacity(CAPACITY),
                last: None,
            }),
        }
    }

    /// Adds the sample of `now` (the first reading only sets the base the
    /// next one's rates are measured from).
    pub(crate) fn push(&self, now: Reading, ops: [OpSecond; Op::ALL.len()]) {
        let wall = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_millis() as u64);
        let mut ring = self.ring.lock();
        let Some(before) = ring.last.replace(now) else {
            return;
        };
        let sample = Sample::between(&before, &now, wall, ops);
        if ring.samples.len() == CAPACITY {
            ring.samples.pop_front();
        }
        ring.samples.push_back(sample);
    }

    /// Samples taken after `since_ms` (Unix milliseconds), as columns.
    pub fn to_json(&self, since_ms: u64) -> Json {
        let samples: Vec<Sample> = {
            let ring = self.ring.lock();
            ring.samples
                .iter()
                .filter(|s| s.at_ms > since_ms)
                .copied()
                .collect()
        };
        columns(&samples)
    }

    /// Samples held now.
    pub fn len(&self) -> usize {
        self.ring.lock().samples.len()
    }

    /// True before the second sample.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

impl Sample {
    fn between(a: &Reading, b: &Reading, at_ms: u64, ops: [OpSecond; Op::ALL.len()]) -> Sample {
        let dt = b.at.duration_since(a.at).as_secs_f64().max(1e-3);
        let rate = |x: u64, y: u64| (y.saturating_sub(x) as f64 / dt) as f32;
        let small = |n: u64| n.min(u32::MAX as u64) as u32;
        let hits = b.pool_hits.saturating_sub(a.pool_hits);
        let lookups = hits + b.pool_misses.saturating_sub(a.pool_misses);
        Sample {
            at_ms,
            trans_per_min: rate(a.transactions, b.transactions) * 60.0,
            log_bytes_per_s: rate(a.log_bytes, b.log_bytes),
            log_fsyncs_per_s: rate(a.log_fsyncs, b.log_fsyncs),
            log_commits_per_s: rate(a.log_commits, b.log_commits),
            log_used_bytes: b.log_used_bytes,
            log_capacity_bytes: b.log_capacity_bytes,
            log_state: b.log_state,
            checkpoint_age_s: b.checkpoint_age_s as f32,
            pool_hit_rate: if lookups == 0 {
                f32::NAN
            } else {
                hits as f32 / lookups as f32
            },
            pool_dirty_pages: small(b.pool_dirty_pages),
            pool_resident_bytes: b.pool_resident_bytes,
            lock_waits_per_s: rate(a.lock_waits, b.lock_waits),
            db_open: small(b.db_open),
            db_open_limit: small(b.db_open_limit),
            descriptors: b.descriptors.map_or(f32::NAN, |n| n as f32),
            native_connections: small(b.native_connections),
            http_connections: small(b.http_connections),
            router_queue_depth: small(b.router_queue_depth),
            router_retrying: small(b.router_retrying),
            router_delivered_per_s: rate(a.router_delivered, b.router_delivered),
            router_latency_p50_ms: b.router_latency_p50_ms as f32,
            router_latency_p99_ms: b.router_latency_p99_ms as f32,
            replication_runs: small(b.replication_runs),
            replication_failures: small(b.replication_failures),
            ops,
        }
    }
}

/// A number for JSON: NaN (no value) is `null`; floats keep 4
/// significant digits, which is all a chart shows.
fn num(v: f32) -> Json {
    if !v.is_finite() {
        return Json::Null;
    }
    let v = v as f64;
    if v == v.trunc() && v.abs() < 1e15 {
        return json!(v as i64);
    }
    let digits = 4 - (v.abs().log10().floor() as i32 + 1);
    let scale = 10f64.powi(digits.clamp(0, 12));
    json!((v * scale).round() / scale)
}

/// A figure of the answer: its name and how a sample gives it.
type Column = (&'static str, fn(&Sample) -> Json);

fn columns(samples: &[Sample]) -> Json {
    let mut out = Map::new();
    out.insert("interval_s".into(), json!(1));
    out.insert("capacity".into(), json!(CAPACITY));
    let col = |f: &dyn Fn(&Sample) -> Json| Json::Array(samples.iter().map(f).collect());
    out.insert("t".into(), col(&|s| json!(s.at_ms)));
    let figures: [Column; 25] = [
        ("trans_per_min", |s| num(s.trans_per_min)),
        ("log_bytes_per_s", |s| num(s.log_bytes_per_s)),
        ("log_fsyncs_per_s", |s| num(s.log_fsyncs_per_s)),
        ("log_commits_per_s", |s| num(s.log_commits_per_s)),
        ("log_used_bytes", |s| json!(s.log_used_bytes)),
        ("log_capacity_bytes", |s| json!(s.log_capacity_bytes)),
        ("log_state", |s| json!(s.log_state.as_str())),
        ("checkpoint_age_s", |s| num(s.checkpoint_age_s)),
        ("pool_hit_rate", |s| num(s.pool_hit_rate)),
        ("pool_dirty_pages", |s| json!(s.pool_dirty_pages)),
        ("pool_resident_bytes", |s| json!(s.pool_resident_bytes)),
        ("lock_waits_per_s", |s| num(s.lock_waits_per_s)),
        ("db_open", |s| json!(s.db_open)),
        ("db_open_limit", |s| json!(s.db_open_limit)),
        ("descriptors_open", |s| num(s.descriptors)),
        ("connections_native", |s| json!(s.native_connections)),
        ("connections_http", |s| json!(s.http_connections)),
        ("router_queue_depth", |s| json!(s.router_queue_depth)),
        ("router_retrying", |s| json!(s.router_retrying)),
        ("router_delivered_per_s", |s| num(s.router_delivered_per_s)),
        ("router_latency_p50_ms", |s| num(s.router_latency_p50_ms)),
        ("router_latency_p99_ms", |s| num(s.router_latency_p99_ms)),
        ("replication_runs", |s| json!(s.replication_runs)),
        ("replication_failures", |s| json!(s.replication_failures)),
        ("log_capacity_used", |s| {
            if s.log_capacity_bytes == 0 {
                Json::Null
            } else {
                num(s.log_used_bytes as f32 / s.log_capacity_bytes as f32)
            }
        }),
    ];
    for (name, f) in figures {
        out.insert(name.into(), col(&f));
    }
    let mut ops = Map::new();
    for (i, op) in Op::ALL.iter().enumerate() {
        if samples.iter().all(|s| s.ops[i].count == 0) {
            continue;
        }
        let busy = |f: &dyn Fn(&OpSecond) -> f32| {
            Json::Array(
                samples
                    .iter()
                    .map(|s| match s.ops[i].count {
                        0 => Json::Null,
                        _ => num(f(&s.ops[i]) / 1000.0),
                    })
                    .collect(),
            )
        };
        ops.insert(
            op.name().into(),
            json!({
                "count": samples.iter().map(|s| s.ops[i].count).collect::<Vec<_>>(),
                "p50_ms": busy(&|o| o.p50_us),
                "p95_ms": busy(&|o| o.p95_us),
                "p99_ms": busy(&|o| o.p99_us),
            }),
        );
    }
    out.insert("ops".into(), Json::Object(ops));
    Json::Object(out)
}

/// Descriptors the process has open: the entries of `/proc/self/fd`
/// (Linux; None elsewhere).
pub(crate) fn open_descriptors() -> Option<u64> {
    std::fs::read_dir("/proc/self/fd")
        .ok()
        .map(|d| d.count().saturating_sub(1) as u64)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn reading(at: Instant, transactions: u64, hits: u64) -> Reading {
        Reading {
            at,
            transactions,
            log_commits: transactions,
            log_fsyncs: transactions / 2,
            log_bytes: transactions * 1000,
            log_used_bytes: 10,
            log_capacity_bytes: 100,
            log_state: LogState::Ok,
            checkpoint_age_s: 3.0,
            pool_hits: hits,
            pool_misses: 0,
            pool_dirty_pages: 5,
            pool_resident_bytes: 8192,
            lock_waits: 0,
            db_open: 2,
            db_open_limit: 10,
            descriptors: Some(40),
            native_connections: 1,
            http_connections: 1,
            router_queue_depth: 0,
            router_retrying: 0,
            router_delivered: 0,
            router_latency_p50_ms: 0.0,
            router_latency_p99_ms: 0.0,
            replication_runs: 0,
            replication_failures: 0,
        }
    }

    #[test]
    fn the_ring_is_bounded_in_samples_and_bytes() {
        assert!(
            CAPACITY * std::mem::size_of::<Sample>() <= MEMORY_BOUND,
            "{} bytes a sample",
            std::mem::size_of::<Sample>()
        );
        let h = History::new();
        let t0 = Instant::now();
        for i in 0..(CAPACITY as u64 + 10) {
            let at = t0 + Duration::from_secs(i);
            h.push(
                reading(at, i * 100, i),
                [OpSecond::default(); Op::ALL.len()],
            );
        }
        assert_eq!(h.len(), CAPACITY);
    }

    #[test]
    fn rates_percentiles_and_gaps() {
        let h = History::new();
        let t0 = Instant::now();
        let mut ops = [OpSecond::default(); Op::ALL.len()];
        h.push(reading(t0, 0, 0), ops);
        let mut read = Histogram::<u32>::new_with_bounds(1, 60_000_000, 2).unwrap();
        for us in 1..=100 {
            read.record(us * 1000).unwrap();
        }
        ops[Op::Read as usize] = OpSecond::of(&read);
        h.push(reading(t0 + Duration::from_secs(2), 10, 0), ops);
        let j = h.to_json(0);
        assert_eq!(j["trans_per_min"][0], json!(300));
        assert_eq!(j["log_bytes_per_s"][0], json!(5000));
        assert_eq!(j["pool_hit_rate"][0], Json::Null);
        assert_eq!(j["log_state"][0], json!("ok"));
        assert_eq!(j["log_capacity_used"][0], json!(0.1));
        let p50 = j["ops"]["read"]["p50_ms"][0].as_f64().unwrap();
        assert!((49.0..=51.0).contains(&p50), "{p50}");
        assert_eq!(j["ops"]["read"]["count"][0], json!(100));
        assert!(j["ops"].get("create").is_none());
        let later = j["t"][0].as_u64().unwrap();
        assert_eq!(h.to_json(later)["t"], json!([]));
    }
}
