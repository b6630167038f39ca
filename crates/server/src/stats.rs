//! Server statistics: what `folio show stats` and `GET /stats` report.
//!
//! Response times are recorded per operation in HDR histograms (1 µs to
//! 60 s, 3 significant digits), one mutex per operation so that two
//! different operations never contend and one operation's lock is held
//! for a single `record` (tens of nanoseconds). Rates (transactions per
//! minute, log bytes and fsyncs per second) are differences between
//! samples a once-a-second ticker takes of the monotonic counters, over
//! the last minute: a reading is a recent average, not a lifetime one,
//! and it costs the hot path nothing.
//!
//! ```text
//!   request ──▶ Stats::record(op, µs) ──▶ histogram[op], transactions += 1
//!   ticker (1 s) ──▶ Sample { transactions, log commits, fsyncs, bytes } ring (61)
//!   snapshot() = histograms + rates over the ring + engine gauges
//!                + every background task's state (task.<name>.state)
//!                + what each added source reports (scheduled replication)
//! ```
//!
//! The ticker is the server's first background task ([`Ticker`], named
//! `stats`), so its state shows in the statistics it keeps. Each tick
//! also adds a second to the [`History`] (`history.rs`): for that, every
//! operation has a second, coarser histogram of the current second next
//! to its lifetime one, recorded under the same lock and swapped out by
//! the ticker.

use crate::history::{self, History, LogState, OpSecond, Reading};
use crate::tasks::{Task, TaskBoard, TaskContext, TaskResult};
use futures_util::future::BoxFuture;
use hdrhistogram::Histogram;
use nsf::Engine;
use parking_lot::Mutex;
use protocol::{StatValue, Statistic};
use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The operations whose response times are kept apart.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(usize)]
pub enum Op {
    /// Handshake, including password verification.
    Login,
    /// Create, list, describe, open or close a database.
    Database,
    /// Create a document.
    Create,
    /// Read a document.
    Read,
    /// Update a document.
    Update,
    /// Delete a document.
    Delete,
    /// List changes since a cursor.
    Changes,
    /// Store an attachment.
    PutAttachment,
    /// Fetch an attachment.
    GetAttachment,
    /// Open a view or folder.
    OpenCollection,
    /// Read a page of rows, find by key.
    ReadEntries,
    /// Update a collection, change folder membership.
    UpdateCollection,
    /// Formula search.
    Search,
    /// Statistics, access-control reads and changes, and the rest.
    Admin,
}

impl Op {
    /// Every operation, in report order.
    pub const ALL: [Op; 14] = [
        Op::Login,
        Op::Database,
        Op::Create,
        Op::Read,
        Op::Update,
        Op::Delete,
        Op::Changes,
        Op::PutAttachment,
        Op::GetAttachment,
        Op::OpenCollection,
        Op::ReadEntries,
        Op::UpdateCollection,
        Op::Search,
        Op::Admin,
    ];

    /// The name used in statistics (`op.<name>.p99_ms`).
    pub fn name(self) -> &'static str {
        match self {
            Op::Login => "login",
            Op::Database => "database",
            Op::Create => "create",
            Op::Read => "read",
            Op::Update => "update",
            Op::Delete => "delete",
            Op::Changes => "changes",
            Op::PutAttachment => "put_attachment",
            Op::GetAttachment => "get_attachment",
            Op::OpenCollection => "open_collection",
            Op::ReadEntries => "read_entries",
            Op::UpdateCollection => "update_collection",
            Op::Search => "search",
            Op::Admin => "admin",
        }
    }
}

/// One reading of the monotonic counters.
#[derive(Clone, Copy, Debug)]
struct Sample {
    at: Instant,
    transactions: u64,
    commits: u64,
    fsyncs: u64,
    log_bytes: u64,
    checkpoints: u64,
}

/// Statistics kept by a part of the server built outside this crate
/// (scheduled replication, in the binary), added to every snapshot.
pub trait StatsSource: Send + Sync {
    /// Appends this source's statistics, each named `group.name`.
    fn statistics(&self, out: &mut Vec<Statistic>);
}

/// One operation's response times: since start, and in the current
/// second (for the history).
struct OpTimes {
    total: Histogram<u64>,
    second: Histogram<u32>,
}

/// A histogram of one second's response times: 2 significant digits are
/// plenty for a chart, and keep it near 10 KiB.
fn second_histogram() -> Histogram<u32> {
    Histogram::new_with_bounds(1, 60_000_000, 2).expect("valid histogram bounds")
}

/// Counters and histograms shared by every connection (see module docs).
pub struct Stats {
    started: Instant,
    histograms: Vec<Mutex<OpTimes>>,
    /// Emptied second histograms, swapped with the full ones at each tick.
    spares: Mutex<Vec<Histogram<u32>>>,
    history: History,
    transactions: AtomicU64,
    errors: AtomicU64,
    connections: AtomicU64,
    connections_total: AtomicU64,
    connections_refused: AtomicU64,
    connections_timed_out: AtomicU64,
    http_connections: AtomicU64,
    http_connections_refused: AtomicU64,
    http_requests: AtomicU64,
    samples: Mutex<VecDeque<Sample>>,
    /// When the checkpoint counter last moved.
    last_checkpoint: Mutex<(u64, Instant)>,
    /// The background tasks' states, kept by the task registry.
    tasks: Arc<TaskBoard>,
    /// The mail router, once its task is registered.
    router: std::sync::OnceLock<Arc<mail::Router>>,
    /// Sources added from outside the crate, in the order added.
    sources: Mutex<Vec<Arc<dyn StatsSource>>>,
}

const WINDOW: usize = 61;

impl Default for Stats {
    fn default() -> Self {
        Self::new()
    }
}

impl Stats {
    /// Empty statistics.
    pub fn new() -> Stats {
        let hist = || {
            Mutex::new(OpTimes {
                total: Histogram::new_with_bounds(1, 60_000_000, 3)
                    .expect("valid histogram bounds"),
                second: second_histogram(),
            })
        };
        let now = Instant::now();
        Stats {
            started: now,
            histograms: Op::ALL.iter().map(|_| hist()).collect(),
            spares: Mutex::new(Op::ALL.iter().map(|_| second_histogram()).collect()),
            history: History::new(),
            transactions: AtomicU64::new(0),
            errors: AtomicU64::new(0),
            connections: AtomicU64::new(0),
            connections_total: AtomicU64::new(0),
            connections_refused: AtomicU64::new(0),
            connections_timed_out: AtomicU64::new(0),
            http_connections: AtomicU64::new(0),
            http_connections_refused: AtomicU64::new(0),
            http_requests: AtomicU64::new(0),
            samples: Mutex::new(VecDeque::with_capacity(WINDOW)),
            last_checkpoint: Mutex::new((0, now)),
            tasks: Arc::default(),
            router: std::sync::OnceLock::new(),
            sources: Mutex::new(Vec::new()),
        }
    }

    /// Reports `router`'s statistics (`router.*`) from now on; the first
    /// router set is the one reported.
    pub fn set_router(&self, router: Arc<mail::Router>) {
        let _ = self.router.set(router);
    }

    /// Adds `source`'s statistics to every snapshot from now on.
    pub fn add_source(&self, source: Arc<dyn StatsSource>) {
        self.sources.lock().push(source);
    }

    /// Records one completed transaction of kind `op` that took `elapsed`.
    pub fn record(&self, op: Op, elapsed: Duration, ok: bool) {
        let us = (elapsed.as_micros() as u64).clamp(1, 60_000_000);
        {
            let mut h = self.histograms[op as usize].lock();
            h.total.saturating_record(us);
            h.second.saturating_record(us);
        }
        self.transactions.fetch_add(1, Ordering::Relaxed);
        if !ok {
            self.errors.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// A native connection was opened.
    pub fn connection_opened(&self) {
        self.connections.fetch_add(1, Ordering::Relaxed);
        self.connections_total.fetch_add(1, Ordering::Relaxed);
    }

    /// A native connection was closed.
    pub fn connection_closed(&self) {
        self.connections.fetch_sub(1, Ordering::Relaxed);
    }

    /// A connection was refused because `max_connections` were open.
    pub fn connection_refused(&self) {
        self.connections_refused.fetch_add(1, Ordering::Relaxed);
    }

    /// A connection (either listener) was closed because its client kept
    /// the server waiting: no handshake or header in time, idle too long,
    /// or an answer it stopped reading.
    pub fn connection_timed_out(&self) {
        self.connections_timed_out.fetch_add(1, Ordering::Relaxed);
    }

    /// Connections closed for a timeout so far.
    pub fn connections_timed_out(&self) -> u64 {
        self.connections_timed_out.load(Ordering::Relaxed)
    }

    /// An HTTP connection was opened.
    pub fn http_connection_opened(&self) {
        self.http_connections.fetch_add(1, Ordering::Relaxed);
    }

    /// An HTTP connection was closed.
    pub fn http_connection_closed(&self) {
        self.http_connections.fetch_sub(1, Ordering::Relaxed);
    }

    /// An HTTP connection was refused because `http_max_connections` were open.
    pub fn http_connection_refused(&self) {
        self.http_connections_refused
            .fetch_add(1, Ordering::Relaxed);
    }

    /// An HTTP request was served.
    pub fn http_request(&self) {
        self.http_requests.fetch_add(1, Ordering::Relaxed);
    }

    /// The background tasks' states, for the task registry to keep.
    pub fn tasks(&self) -> &Arc<TaskBoard> {
        &self.tasks
    }

    /// Takes a sample of the counters; the server calls this once a second.
    pub fn tick(&self, engine: &Engine) {
        let log = engine.log_info();
        let s = Sample {
            at: Instant::now(),
            transactions: self.transactions.load(Ordering::Relaxed),
            commits: log.as_ref().map_or(0, |l| l.commits),
            fsyncs: log.as_ref().map_or(0, |l| l.fsyncs),
            log_bytes: log.as_ref().map_or(0, |l| l.bytes_written),
            checkpoints: log.as_ref().map_or(0, |l| l.checkpoints),
        };
        {
            let mut last = self.last_checkpoint.lock();
            if s.checkpoints != last.0 {
                *last = (s.checkpoints, s.at);
            }
        }
        {
            let mut q = self.samples.lock();
            if q.len() == WINDOW {
                q.pop_front();
            }
            q.push_back(s);
        }
        let reading = self.reading(engine, &s);
        self.history.push(reading, self.take_second());
    }

    /// The last hour, a sample a second.
    pub fn history(&self) -> &History {
        &self.history
    }

    /// Every operation's figures of the second just ended: its histogram
    /// is swapped for an empty spare under the lock (no copy, no
    /// allocation), read, emptied and kept as the next spare.
    fn take_second(&self) -> [OpSecond; Op::ALL.len()] {
        let mut out = [OpSecond::default(); Op::ALL.len()];
        let mut spares = self.spares.lock();
        for (i, spare) in spares.iter_mut().enumerate() {
            std::mem::swap(&mut self.histograms[i].lock().second, spare);
            out[i] = OpSecond::of(spare);
            spare.reset();
        }
        out
    }

    /// What the history samples, read now (`s` is this tick's counters).
    fn reading(&self, engine: &Engine, s: &Sample) -> Reading {
        let log = engine.log_info();
        let pool = engine.pool_stats();
        let cache = engine.cache_stats();
        let router = self.router.get().map(|r| r.stats().snapshot(r.now()));
        let (replication_runs, replication_failures) = self.replication_totals();
        Reading {
            at: s.at,
            transactions: s.transactions,
            log_commits: s.commits,
            log_fsyncs: s.fsyncs,
            log_bytes: s.log_bytes,
            log_used_bytes: log.as_ref().map_or(0, |l| l.bytes_in_use),
            log_capacity_bytes: log.as_ref().map_or(0, |l| l.capacity),
            log_state: match &log {
                None => LogState::Disabled,
                Some(l) if l.failed.is_some() => LogState::Failed,
                Some(l) if l.archive_needed => LogState::Full,
                Some(_) => LogState::Ok,
            },
            checkpoint_age_s: self.last_checkpoint.lock().1.elapsed().as_secs_f64(),
            pool_hits: pool.hits,
            pool_misses: pool.misses,
            pool_dirty_pages: pool.dirty_pages,
            pool_resident_bytes: pool.resident_pages * storage::PAGE_SIZE as u64,
            lock_waits: engine.lock_stats().waits,
            db_open: cache.open,
            db_open_limit: cache.limit,
            descriptors: history::open_descriptors(),
            native_connections: self.connections.load(Ordering::Relaxed),
            http_connections: self.http_connections.load(Ordering::Relaxed),
            router_queue_depth: router.as_ref().map_or(0, |r| r.queue_depth),
            router_retrying: router.as_ref().map_or(0, |r| r.retrying),
            router_delivered: router.as_ref().map_or(0, |r| r.delivered),
            router_latency_p50_ms: router.as_ref().map_or(0.0, |r| r.latency_p50_ms),
            router_latency_p99_ms: router.as_ref().map_or(0.0, |r| r.latency_p99_ms),
            replication_runs,
            replication_failures,
        }
    }

    /// Scheduled replication runs and failures, summed over the entries
    /// (`replication.<entry>.runs|errors` of the added sources).
    fn replication_totals(&self) -> (u64, u64) {
        let mut figures = Vec::new();
        for source in self.sources.lock().clone() {
            source.statistics(&mut figures);
        }
        let mut totals = (0, 0);
        for st in figures
            .iter()
            .filter(|s| s.name.starts_with("replication."))
        {
            match (st.name.rsplit('.').next(), &st.value) {
                (Some("runs"), StatValue::Count(n)) => totals.0 += n,
                (Some("errors"), StatValue::Count(n)) => totals.1 += n,
                _ => {}
            }
        }
        totals
    }

    /// Every statistic, named `group.name`, for `folio show stats`.
    pub fn snapshot(&self, engine: &Engine) -> Vec<Statistic> {
        let mut out = Vec::new();
        let count = |out: &mut Vec<Statistic>, name: &str, v: u64| {
            out.push(Statistic {
                name: name.into(),
                value: StatValue::Count(v),
            })
        };
        let gauge = |out: &mut Vec<Statistic>, name: &str, v: f64| {
            out.push(Statistic {
                name: name.into(),
                value: StatValue::Gauge(v),
            })
        };
        gauge(
            &mut out,
            "server.uptime_s",
            self.started.elapsed().as_secs_f64(),
        );
        count(
            &mut out,
            "server.transactions",
            self.transactions.load(Ordering::Relaxed),
        );
        count(
            &mut out,
            "server.errors",
            self.errors.load(Ordering::Relaxed),
        );
        count(
            &mut out,
            "server.connections",
            self.connections.load(Ordering::Relaxed),
        );
        count(
            &mut out,
            "server.connections_total",
            self.connections_total.load(Ordering::Relaxed),
        );
        count(
            &mut out,
            "server.connections_refused",
            self.connections_refused.load(Ordering::Relaxed),
        );
        count(
            &mut out,
            "server.connections_timed_out",
            self.connections_timed_out.load(Ordering::Relaxed),
        );
        count(
            &mut out,
            "server.http_connections",
            self.http_connections.load(Ordering::Relaxed),
        );
        count(
            &mut out,
            "server.http_connections_refused",
            self.http_connections_refused.load(Ordering::Relaxed),
        );
        count(
            &mut out,
            "server.http_requests",
            self.http_requests.load(Ordering::Relaxed),
        );
        self.rates(&mut out);
        self.response_times(&mut out);
        engine_gauges(&mut out, engine);
        let age = self.last_checkpoint.lock().1.elapsed().as_secs_f64();
        gauge(&mut out, "log.checkpoint_age_s", age);
        if let Some(r) = self.router.get() {
            router_stats(&mut out, &r.stats().snapshot(r.now()));
        }
        let sources = self.sources.lock().clone();
        for source in sources {
            source.statistics(&mut out);
        }
        for (name, state) in self.tasks.states() {
            out.push(Statistic {
                name: format!("task.{name}.state"),
                value: StatValue::Text(state.to_string()),
            });
        }
        out
    }

    /// Per-minute and per-second rates over the sample window.
    fn rates(&self, out: &mut Vec<Statistic>) {
        let q = self.samples.lock();
        let (Some(first), Some(last)) = (q.front(), q.back()) else {
            return;
        };
        let dt = last.at.duration_since(first.at).as_secs_f64();
        if dt <= 0.0 {
            return;
        }
        let per_s = |a: u64, b: u64| (b.saturating_sub(a)) as f64 / dt;
        let commits = last.commits.saturating_sub(first.commits);
        let fsyncs = last.fsyncs.saturating_sub(first.fsyncs);
        let mut put = |name: &str, v: f64| {
            out.push(Statistic {
                name: name.into(),
                value: StatValue::Gauge(v),
            })
        };
        put(
            "server.trans_per_min",
            per_s(first.transactions, last.transactions) * 60.0,
        );
        put("log.bytes_per_s", per_s(first.log_bytes, last.log_bytes));
        put("log.fsyncs_per_s", per_s(first.fsyncs, last.fsyncs));
        put("log.commits_per_s", per_s(first.commits, last.commits));
        put(
            "log.commits_per_fsync",
            if fsyncs == 0 {
                0.0
            } else {
                commits as f64 / fsyncs as f64
            },
        );
    }

    /// Every operation's response times since start, in report order.
    pub fn response_histograms(&self) -> Vec<(Op, ResponseHistogram)> {
        Op::ALL
            .iter()
            .map(|&op| {
                let h = self.histograms[op as usize].lock().total.clone();
                (op, ResponseHistogram::new(h))
            })
            .collect()
    }

    fn response_times(&self, out: &mut Vec<Statistic>) {
        for op in Op::ALL {
            let h = self.histograms[op as usize].lock().total.clone();
            if h.is_empty() {
                continue;
            }
            let name = op.name();
            out.push(Statistic {
                name: format!("op.{name}.count"),
                value: StatValue::Count(h.len()),
            });
            for (label, q) in [("p50", 0.50), ("p95", 0.95), ("p99", 0.99)] {
                out.push(Statistic {
                    name: format!("op.{name}.{label}_ms"),
                    value: StatValue::Gauge(h.value_at_quantile(q) as f64 / 1000.0),
                });
            }
            out.push(Statistic {
                name: format!("op.{name}.max_ms"),
                value: StatValue::Gauge(h.max() as f64 / 1000.0),
            });
        }
    }
}

/// One operation's response times since start, as `GET /metrics`
/// exports them (a copy of the HDR histogram).
pub struct ResponseHistogram {
    histogram: Histogram<u64>,
    /// Requests recorded.
    pub count: u64,
    /// Their total time, in seconds.
    pub sum_seconds: f64,
}

impl ResponseHistogram {
    fn new(histogram: Histogram<u64>) -> ResponseHistogram {
        let count = histogram.len();
        let sum_seconds = histogram.mean() * count as f64 / 1e6;
        ResponseHistogram {
            histogram,
            count,
            sum_seconds,
        }
    }

    /// How many requests fall in each bucket: the first holds those up to
    /// `bounds_s[0]` seconds, the next those above it up to `bounds_s[1]`,
    /// and so on; requests above the last bound are in none. A value is
    /// placed by the lowest value the histogram cannot tell it from
    /// (3 significant digits).
    pub fn bucket_counts(&self, bounds_s: &[f64]) -> Vec<u64> {
        let bounds_us: Vec<u64> = bounds_s.iter().map(|b| (b * 1e6).round() as u64).collect();
        let mut counts = vec![0; bounds_us.len()];
        for v in self.histogram.iter_recorded() {
            let us = self.histogram.lowest_equivalent(v.value_iterated_to());
            if let Some(i) = bounds_us.iter().position(|&b| us <= b) {
                counts[i] += v.count_at_value();
            }
        }
        counts
    }
}

/// Samples the statistics once a second: the background task `stats`.
pub struct Ticker {
    stats: Arc<Stats>,
    engine: Arc<Engine>,
}

impl Ticker {
    /// A ticker sampling `stats` and `engine`'s counters.
    pub fn new(stats: Arc<Stats>, engine: Arc<Engine>) -> Ticker {
        Ticker { stats, engine }
    }
}

impl Task for Ticker {
    fn name(&self) -> &str {
        "stats"
    }

    fn run(self: Box<Self>, mut ctx: TaskContext) -> BoxFuture<'static, TaskResult> {
        Box::pin(async move {
            let mut every = tokio::time::interval(Duration::from_secs(1));
            loop {
                tokio::select! {
                    _ = every.tick() => self.stats.tick(&self.engine),
                    _ = ctx.stop_requested() => return Ok(()),
                }
            }
        })
    }
}

/// The mail router's figures (docs/mail.md).
fn router_stats(out: &mut Vec<Statistic>, s: &mail::StatsSnapshot) {
    let mut put = |name: &str, value: StatValue| {
        out.push(Statistic {
            name: format!("router.{name}"),
            value,
        })
    };
    put("waiting", StatValue::Count(s.waiting));
    put("retrying", StatValue::Count(s.retrying));
    let reasons: Vec<String> = s
        .retry_reasons
        .iter()
        .map(|(why, n)| format!("{n}: {why}"))
        .collect();
    put("retrying_reasons", StatValue::Text(reasons.join("; ")));
    put("delivered", StatValue::Count(s.delivered));
    put(
        "delivered_per_min",
        StatValue::Gauge(s.delivered_per_min as f64),
    );
    put("latency_p50_ms", StatValue::Gauge(s.latency_p50_ms));
    put("latency_p99_ms", StatValue::Gauge(s.latency_p99_ms));
    put("ndr", StatValue::Count(s.ndr));
    put("delay_notices", StatValue::Count(s.delay_notices));
    put("passes", StatValue::Count(s.passes));
    put("queue_depth", StatValue::Gauge(s.queue_depth as f64));
    put(
        "oldest_pending_ms",
        StatValue::Gauge(s.oldest_pending_ms as f64),
    );
    put("in_flight", StatValue::Gauge(s.in_flight as f64));
    put("workers_busy", StatValue::Gauge(s.workers_busy as f64));
    put("passes_behind", StatValue::Count(s.passes_behind));
    for (phase, ms) in &s.phase_ms {
        put(&format!("pass_ms.{phase}"), StatValue::Count(*ms));
    }
    for (step, ms) in &s.step_ms {
        put(&format!("delivery_ms.{step}"), StatValue::Count(*ms));
    }
}

/// Buffer pool, log and lock figures straight from the engine.
fn engine_gauges(out: &mut Vec<Statistic>, engine: &Engine) {
    let mut count = |name: &str, v: u64| {
        out.push(Statistic {
            name: name.into(),
            value: StatValue::Count(v),
        })
    };
    let p = engine.pool_stats();
    count(
        "pool.capacity_bytes",
        p.capacity_pages * storage::PAGE_SIZE as u64,
    );
    count(
        "pool.resident_bytes",
        p.resident_pages * storage::PAGE_SIZE as u64,
    );
    count("pool.dirty_pages", p.dirty_pages);
    count("pool.hits", p.hits);
    count("pool.misses", p.misses);
    count("pool.evictions", p.evictions);
    count("pool.pages_flushed", p.pages_flushed);
    let c = engine.cache_stats();
    count("db.open", c.open);
    count("db.open_limit", c.limit);
    count("db.opened", c.opened);
    count("db.closed", c.closed);
    let a = engine.attachment_store_stats();
    count("attachstore.objects", a.objects);
    count("attachstore.stored_bytes", a.stored_bytes);
    count("attachstore.original_bytes", a.original_bytes);
    count(
        "attachstore.compression_saved_bytes",
        a.original_bytes.saturating_sub(a.stored_bytes),
    );
    count("attachstore.logical_bytes", a.logical_bytes);
    count(
        "attachstore.dedup_saved_bytes",
        a.logical_bytes.saturating_sub(a.original_bytes),
    );
    count("attachstore.stored", a.stored);
    count("attachstore.dedup_hits", a.dedup_hits);
    count("attachstore.reclaimed", a.reclaimed);
    // Where threads waited (design.md I54): every wait point of the
    // layers below, `wait.<name>.count|us|max_us|p99_us`.
    let points = storage::waits::all()
        .into_iter()
        .chain(translog::waits::all())
        .chain(nsf::waits::all());
    for w in points.map(|p| p.stats()) {
        count(&format!("wait.{}.count", w.name), w.count);
        count(&format!("wait.{}.us", w.name), w.total_us);
        count(&format!("wait.{}.max_us", w.name), w.max_us);
        count(&format!("wait.{}.p99_us", w.name), w.p99_us);
    }
    let l = engine.lock_stats();
    count("lock.writes", l.writes);
    count("lock.waits", l.waits);
    count("lock.wait_us", l.wait_micros);
    let lookups = p.hits + p.misses;
    out.push(Statistic {
        name: "pool.hit_rate".into(),
        value: StatValue::Gauge(if lookups == 0 {
            1.0
        } else {
            p.hits as f64 / lookups as f64
        }),
    });
    out.extend(crate::stats_fixup::fixup_stats(&engine.fixup_state()));
    match engine.log_info() {
        Some(i) => {
            let mut count = |name: &str, v: u64| {
                out.push(Statistic {
                    name: name.into(),
                    value: StatValue::Count(v),
                })
            };
            count("log.commits", i.commits);
            count("log.fsyncs", i.fsyncs);
            count("log.bytes_written", i.bytes_written);
            count("log.bytes_in_use", i.bytes_in_use);
            count("log.capacity", i.capacity);
            count("log.full_events", i.log_full_events);
            count("log.checkpoints", i.checkpoints);
            count(
                "log.bytes_since_checkpoint",
                i.end_lsn.0.saturating_sub(i.checkpoint_lsn.0),
            );
            if i.style == translog::LogStyle::Archive {
                count("log.extents_awaiting_archive", i.extents_awaiting_archive);
                count("log.archived_lsn", i.archived_lsn.0);
            }
            out.extend(log_texts(&i));
        }
        None => out.push(Statistic {
            name: "log.state".into(),
            value: StatValue::Text("disabled".into()),
        }),
    }
}

/// The log's state, style and (archive style) archiving, as text: a full
/// archive-style log says what to do.
fn log_texts(i: &translog::LogInfo) -> Vec<Statistic> {
    let text = |name: &str, v: String| Statistic {
        name: name.into(),
        value: StatValue::Text(v),
    };
    let state = match &i.failed {
        Some(e) => format!("failed: {e}"),
        None if i.archive_needed => format!(
            "full: {} extent(s) wait to be archived; writes are refused until \
             `folio archive` copies them (reads go on)",
            i.extents_awaiting_archive
        ),
        None => "ok".into(),
    };
    let mut out = vec![
        text("log.state", state),
        text("log.style", i.style.as_str().into()),
    ];
    if i.style == translog::LogStyle::Archive {
        let last = i.last_archive.map_or_else(
            || "never (since the server started)".to_string(),
            |t| chrono::DateTime::<chrono::Utc>::from(t).to_rfc3339(),
        );
        out.push(text("log.last_archive", last));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_come_from_what_was_recorded() {
        let s = Stats::new();
        for ms in 1..=100u64 {
            s.record(Op::Read, Duration::from_millis(ms), true);
        }
        s.record(Op::Create, Duration::from_micros(300), false);
        let mut out = Vec::new();
        s.response_times(&mut out);
        let get = |name: &str| {
            out.iter()
                .find(|x| x.name == name)
                .map(|x| x.value.clone())
                .unwrap_or_else(|| panic!("{name} missing from {out:?}"))
        };
        assert_eq!(get("op.read.count"), StatValue::Count(100));
        let StatValue::Gauge(p50) = get("op.read.p50_ms") else {
            panic!()
        };
        assert!((49.0..=51.0).contains(&p50), "{p50}");
        let StatValue::Gauge(p99) = get("op.read.p99_ms") else {
            panic!()
        };
        assert!((98.0..=100.5).contains(&p99), "{p99}");
        assert_eq!(get("op.create.count"), StatValue::Count(1));
        assert!(out.iter().all(|x| !x.name.starts_with("op.search")));
        assert_eq!(s.errors.load(Ordering::Relaxed), 1);
    }
}
