//! `GET /metrics`: the figures of `show stats` in the Prometheus text
//! exposition format (version 0.0.4), for monitoring systems to scrape.
//!
//! ```text
//!   Stats::snapshot ──▶ [Statistic] ──▶ rule per name ──▶ Exposition ──▶ text
//!   Stats::response_histograms ──▶ folio_response_seconds (histogram) ─┤
//!   the backup history ──▶ folio_backup_* (backups.rs) ────────────────┘
//! ```
//!
//! Why it is written by hand rather than with `prometheus-client`: the
//! figures already live in [`Stats`](crate::stats::Stats), the engine and
//! the router as plain counters; a client library wants to own them in its
//! own registry of atomics, which would mean a second copy kept in step
//! on the hot path, or a custom collector that reformats our snapshot
//! anyway. What is left is the format itself, which is small and fixed:
//! `# HELP`, `# TYPE`, one family's samples together, label values
//! escaped (`\\`, `\"`, `\n`), floats as Go prints them (`+Inf`, `NaN`).
//! The end-to-end test checks the result with `promtool check metrics`,
//! which also lints names and units.
//!
//! How `show stats` names become metrics:
//!
//! - **Base units.** Milliseconds and microseconds become seconds,
//!   sizes are bytes: `op.read.p99_ms` → `folio_response_seconds`,
//!   `wait.<point>.us` → `folio_wait_seconds_sum{point=…}`.
//! - **Counters end in `_total`**, gauges do not; a figure that only
//!   grows (`log.fsyncs`) is a counter even where `show stats` calls it a
//!   count, and a count that goes down (`db.open`) is a gauge.
//! - **Response times are histograms** with fixed buckets (100 µs to
//!   60 s), filled from the per-operation HDR histograms, so they can be
//!   summed across servers and any quantile computed; `wait.*` figures,
//!   which hold a count, a total, a maximum and a p99, are a summary with
//!   one quantile (0.99) plus a `_max_seconds` gauge.
//! - **Rates are left to Prometheus.** `server.trans_per_min`,
//!   `log.bytes_per_s`, `log.fsyncs_per_s` and the like are differences
//!   of counters exported here (`rate(folio_transactions_total[1m]) * 60`);
//!   exporting both would only invite two answers to one question.
//! - **Text figures** are states, exported the usual way: one series per
//!   state with value 1 for the current one (`folio_log_state{state="ok"} 1`);
//!   free text (retry reasons, the last fixed database) stays in
//!   `GET /stats`. A moment (`log.last_archive`) is Unix seconds
//!   (`folio_log_last_archive_timestamp_seconds`).
//! - **A figure this module does not know** is still exported, as an
//!   untyped gauge whose help says so; a test fails if the real server
//!   produces one, so a new statistic gets its proper name here.

mod backups;

use crate::stats::{Op, ResponseHistogram};
use nsf::BackupRun;
use protocol::{StatValue, Statistic};
use std::collections::HashMap;
use std::fmt::Write as _;

/// The `Content-Type` of the exposition.
pub const CONTENT_TYPE: &str = "text/plain; version=0.0.4; charset=utf-8";

/// Upper bounds (seconds) of the response-time histogram's buckets; the
/// last bucket (`+Inf`) is implied.
const RESPONSE_BUCKETS: [f64; 18] = [
    0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5,
    5.0, 10.0, 30.0, 60.0,
];

/// The states `log.state` can be in (its text up to the first `:`).
const LOG_STATES: [&str; 4] = ["ok", "full", "failed", "disabled"];

/// The exposition of `stats`, the response-time histograms `ops` and
/// the backup history `backups` (newest first; None if it could not be
/// read).
pub fn render(
    stats: &[Statistic],
    ops: &[(Op, ResponseHistogram)],
    backups: Option<&[BackupRun]>,
) -> String {
    let mut x = Exposition::default();
    for (op, h) in ops {
        add_response_histogram(&mut x, *op, h);
    }
    for st in stats {
        add_statistic(&mut x, st);
    }
    backups::add(&mut x, backups);
    x.text()
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    Counter,
    Gauge,
    Histogram,
    Summary,
    Untyped,
}

impl Kind {
    fn as_str(self) -> &'static str {
        match self {
            Kind::Counter => "counter",
            Kind::Gauge => "gauge",
            Kind::Histogram => "histogram",
            Kind::Summary => "summary",
            Kind::Untyped => "untyped",
        }
    }
}

/// A sample's labels, in order.
type Labels = Vec<(&'static str, String)>;

/// One metric family: its samples are written together, after its
/// `# HELP` and `# TYPE` lines.
struct Family {
    name: String,
    kind: Kind,
    help: String,
    /// (name suffix such as `_bucket`, labels, value)
    samples: Vec<(&'static str, Labels, f64)>,
}

/// Families in the order first seen.
#[derive(Default)]
struct Exposition {
    families: Vec<Family>,
    index: HashMap<String, usize>,
}

impl Exposition {
    fn family(&mut self, name: &str, kind: Kind, help: &str) -> &mut Family {
        let i = *self.index.entry(name.to_string()).or_insert_with(|| {
            self.families.push(Family {
                name: name.to_string(),
                kind,
                help: help.to_string(),
                samples: Vec::new(),
            });
            self.families.len() - 1
        });
        &mut self.families[i]
    }

    /// Adds one sample of a counter or gauge family.
    fn put(&mut self, name: &str, kind: Kind, help: &str, labels: Labels, value: f64) {
        self.family(name, kind, help)
            .samples
            .push(("", labels, value));
    }

    fn text(&self) -> String {
        let mut out = String::new();
        for f in &self.families {
            let _ = writeln!(out, "# HELP {} {}", f.name, escape_help(&f.help));
            let _ = writeln!(out, "# TYPE {} {}", f.name, f.kind.as_str());
            for (suffix, labels, value) in &f.samples {
                out.push_str(&f.name);
                out.push_str(suffix);
                if !labels.is_empty() {
                    out.push('{');
                    for (i, (k, v)) in labels.iter().enumerate() {
                        if i > 0 {
                            out.push(',');
                        }
                        let _ = write!(out, "{k}=\"{}\"", escape_label(v));
                    }
                    out.push('}');
                }
                let _ = writeln!(out, " {}", number(*value));
            }
        }
        out
    }
}

/// A sample value as the format writes it.
fn number(v: f64) -> String {
    if v.is_nan() {
        "NaN".into()
    } else if v == f64::INFINITY {
        "+Inf".into()
    } else if v == f64::NEG_INFINITY {
        "-Inf".into()
    } else {
        format!("{v}")
    }
}

fn escape_label(v: &str) -> String {
    v.replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

fn escape_help(v: &str) -> String {
    v.replace('\\', "\\\\").replace('\n', "\\n")
}

fn add_response_histogram(x: &mut Exposition, op: Op, h: &ResponseHistogram) {
    let f = x.family(
        "folio_response_seconds",
        Kind::Histogram,
        "Time to answer a request, by operation (both listeners).",
    );
    let label = |le: Option<String>| {
        let mut l = vec![("op", op.name().to_string())];
        if let Some(le) = le {
            l.push(("le", le));
        }
        l
    };
    let mut cumulative = 0;
    let mut counts = h.bucket_counts(&RESPONSE_BUCKETS).into_iter();
    for bound in RESPONSE_BUCKETS {
        cumulative += counts.next().unwrap_or(0);
        f.samples
            .push(("_bucket", label(Some(number(bound))), cumulative as f64));
    }
    f.samples
        .push(("_bucket", label(Some("+Inf".into())), h.count as f64));
    f.samples.push(("_sum", label(None), h.sum_seconds));
    f.samples.push(("_count", label(None), h.count as f64));
}

/// How one plainly named statistic is exported.
struct Rule {
    stat: &'static str,
    metric: &'static str,
    kind: Kind,
    /// Multiplies the value into the metric's base unit.
    scale: f64,
    label: Option<(&'static str, &'static str)>,
    help: &'static str,
}

const fn rule(
    stat: &'static str,
    metric: &'static str,
    kind: Kind,
    scale: f64,
    help: &'static str,
) -> Rule {
    Rule {
        stat,
        metric,
        kind,
        scale,
        label: None,
        help,
    }
}

const fn labelled(
    stat: &'static str,
    metric: &'static str,
    kind: Kind,
    label: (&'static str, &'static str),
    help: &'static str,
) -> Rule {
    Rule {
        stat,
        metric,
        kind,
        scale: 1.0,
        label: Some(label),
        help,
    }
}

use Kind::{Counter, Gauge};

const MS: f64 = 1e-3;

const RULES: &[Rule] = &[
    rule(
        "server.uptime_s",
        "folio_uptime_seconds",
        Gauge,
        1.0,
        "Seconds since the server started.",
    ),
    rule(
        "server.transactions",
        "folio_transactions_total",
        Counter,
        1.0,
        "Requests answered, every operation.",
    ),
    rule(
        "server.errors",
        "folio_errors_total",
        Counter,
        1.0,
        "Requests answered with an error.",
    ),
    labelled(
        "server.connections",
        "folio_connections",
        Gauge,
        ("listener", "native"),
        "Connections open now, by listener.",
    ),
    labelled(
        "server.http_connections",
        "folio_connections",
        Gauge,
        ("listener", "http"),
        "Connections open now, by listener.",
    ),
    rule(
        "server.connections_total",
        "folio_native_connections_accepted_total",
        Counter,
        1.0,
        "Native connections accepted.",
    ),
    labelled(
        "server.connections_refused",
        "folio_connections_refused_total",
        Counter,
        ("listener", "native"),
        "Connections refused at the connection limit, by listener.",
    ),
    labelled(
        "server.http_connections_refused",
        "folio_connections_refused_total",
        Counter,
        ("listener", "http"),
        "Connections refused at the connection limit, by listener.",
    ),
    rule(
        "server.connections_timed_out",
        "folio_connections_timed_out_total",
        Counter,
        1.0,
        "Connections closed because the client kept the server waiting.",
    ),
    rule(
        "server.http_requests",
        "folio_http_requests_total",
        Counter,
        1.0,
        "HTTP requests received, routed or not.",
    ),
    rule(
        "pool.capacity_bytes",
        "folio_pool_capacity_bytes",
        Gauge,
        1.0,
        "Buffer pool size.",
    ),
    rule(
        "pool.resident_bytes",
        "folio_pool_resident_bytes",
        Gauge,
        1.0,
        "Bytes of pages held in the buffer pool.",
    ),
    rule(
        "pool.dirty_pages",
        "folio_pool_dirty_pages",
        Gauge,
        1.0,
        "Pages in the buffer pool not yet written back.",
    ),
    rule(
        "pool.hits",
        "folio_pool_hits_total",
        Counter,
        1.0,
        "Page lookups found in the buffer pool.",
    ),
    rule(
        "pool.misses",
        "folio_pool_misses_total",
        Counter,
        1.0,
        "Page lookups read from disk.",
    ),
    rule(
        "pool.evictions",
        "folio_pool_evictions_total",
        Counter,
        1.0,
        "Pages evicted from the buffer pool.",
    ),
    rule(
        "pool.pages_flushed",
        "folio_pool_flushed_pages_total",
        Counter,
        1.0,
        "Dirty pages written back.",
    ),
    rule(
        "pool.hit_rate",
        "folio_pool_hit_ratio",
        Gauge,
        1.0,
        "Hits over lookups since start (1 before any lookup).",
    ),
    rule(
        "db.open",
        "folio_databases_open",
        Gauge,
        1.0,
        "Database instances open (or being closed).",
    ),
    rule(
        "db.open_limit",
        "folio_databases_open_limit",
        Gauge,
        1.0,
        "max_open_databases.",
    ),
    rule(
        "db.opened",
        "folio_databases_opened_total",
        Counter,
        1.0,
        "Database opens.",
    ),
    rule(
        "db.closed",
        "folio_databases_closed_total",
        Counter,
        1.0,
        "Database closes.",
    ),
    rule(
        "attachstore.objects",
        "folio_attachstore_objects",
        Gauge,
        1.0,
        "Distinct attachments in the attachment store.",
    ),
    rule(
        "attachstore.stored_bytes",
        "folio_attachstore_stored_bytes",
        Gauge,
        1.0,
        "Bytes the attachment store holds on disk.",
    ),
    rule(
        "attachstore.original_bytes",
        "folio_attachstore_original_bytes",
        Gauge,
        1.0,
        "Bytes of the stored attachments before compression.",
    ),
    rule(
        "attachstore.compression_saved_bytes",
        "folio_attachstore_compression_saved_bytes",
        Gauge,
        1.0,
        "Bytes saved by compressing attachments.",
    ),
    rule(
        "attachstore.logical_bytes",
        "folio_attachstore_logical_bytes",
        Gauge,
        1.0,
        "Bytes of every attachment reference, as if none were shared.",
    ),
    rule(
        "attachstore.dedup_saved_bytes",
        "folio_attachstore_dedup_saved_bytes",
        Gauge,
        1.0,
        "Bytes saved by sharing identical attachments.",
    ),
    rule(
        "attachstore.stored",
        "folio_attachstore_stored_total",
        Counter,
        1.0,
        "Attachments stored.",
    ),
    rule(
        "attachstore.dedup_hits",
        "folio_attachstore_dedup_hits_total",
        Counter,
        1.0,
        "Attachments stored as a reference to an identical one.",
    ),
    rule(
        "attachstore.reclaimed",
        "folio_attachstore_reclaimed_total",
        Counter,
        1.0,
        "Attachments removed once no document referred to them.",
    ),
    rule(
        "lock.writes",
        "folio_lock_writes_total",
        Counter,
        1.0,
        "Database writer locks taken.",
    ),
    rule(
        "lock.waits",
        "folio_lock_waits_total",
        Counter,
        1.0,
        "Writer locks that had to wait.",
    ),
    rule(
        "lock.wait_us",
        "folio_lock_wait_seconds_total",
        Counter,
        1e-6,
        "Time spent waiting for writer locks.",
    ),
    rule(
        "fixup.databases_fixed",
        "folio_fixup_databases_fixed_total",
        Counter,
        1.0,
        "Databases fixed up since start.",
    ),
    rule(
        "fixup.databases_detached",
        "folio_fixup_databases_detached",
        Gauge,
        1.0,
        "Failed databases detached from the log.",
    ),
    rule(
        "fixup.databases_needing_fixup",
        "folio_fixup_databases_needing_fixup",
        Gauge,
        1.0,
        "Databases waiting for fixup.",
    ),
    rule(
        "log.commits",
        "folio_log_commits_total",
        Counter,
        1.0,
        "Transactions committed to the log.",
    ),
    rule(
        "log.fsyncs",
        "folio_log_fsyncs_total",
        Counter,
        1.0,
        "Log fsyncs (group commit shares them).",
    ),
    rule(
        "log.bytes_written",
        "folio_log_written_bytes_total",
        Counter,
        1.0,
        "Bytes written to the log.",
    ),
    rule(
        "log.bytes_in_use",
        "folio_log_used_bytes",
        Gauge,
        1.0,
        "Log bytes recovery still needs.",
    ),
    rule(
        "log.capacity",
        "folio_log_capacity_bytes",
        Gauge,
        1.0,
        "Log bytes available in all.",
    ),
    rule(
        "log.full_events",
        "folio_log_full_events_total",
        Counter,
        1.0,
        "Times a commit found the log full.",
    ),
    rule(
        "log.checkpoints",
        "folio_log_checkpoints_total",
        Counter,
        1.0,
        "Checkpoints taken.",
    ),
    rule(
        "log.bytes_since_checkpoint",
        "folio_log_since_checkpoint_bytes",
        Gauge,
        1.0,
        "Log bytes written since the last checkpoint.",
    ),
    rule(
        "log.extents_awaiting_archive",
        "folio_log_extents_awaiting_archive",
        Gauge,
        1.0,
        "Completed extents not yet archived (archive style).",
    ),
    rule(
        "log.archived_lsn",
        "folio_log_archived_lsn",
        Gauge,
        1.0,
        "Log position archived up to (archive style).",
    ),
    rule(
        "log.checkpoint_age_s",
        "folio_log_checkpoint_age_seconds",
        Gauge,
        1.0,
        "Seconds since the last checkpoint (or start).",
    ),
    rule(
        "router.waiting",
        "folio_router_waiting",
        Gauge,
        1.0,
        "Deposits with a recipient still pending, as of the last pass.",
    ),
    rule(
        "router.retrying",
        "folio_router_retrying",
        Gauge,
        1.0,
        "Recipients waiting after a failed attempt.",
    ),
    rule(
        "router.delivered",
        "folio_router_delivered_total",
        Counter,
        1.0,
        "Copies delivered into mail files.",
    ),
    rule(
        "router.latency_p50_ms",
        "folio_router_delivery_latency_p50_seconds",
        Gauge,
        MS,
        "Deposit to delivery, median over recent deliveries.",
    ),
    rule(
        "router.latency_p99_ms",
        "folio_router_delivery_latency_p99_seconds",
        Gauge,
        MS,
        "Deposit to delivery, 99th percentile over recent deliveries.",
    ),
    rule(
        "router.ndr",
        "folio_router_ndr_total",
        Counter,
        1.0,
        "Non-delivery reports sent.",
    ),
    rule(
        "router.delay_notices",
        "folio_router_delay_notices_total",
        Counter,
        1.0,
        "Delay notices sent.",
    ),
    rule(
        "router.passes",
        "folio_router_passes_total",
        Counter,
        1.0,
        "Router passes over the mail boxes.",
    ),
    rule(
        "router.queue_depth",
        "folio_router_queue_depth",
        Gauge,
        1.0,
        "Deposits pending when the last pass began.",
    ),
    rule(
        "router.oldest_pending_ms",
        "folio_router_oldest_pending_seconds",
        Gauge,
        MS,
        "Age of the oldest deposit the last pass took.",
    ),
    rule(
        "router.in_flight",
        "folio_router_in_flight",
        Gauge,
        1.0,
        "Copies being filed into mail files now.",
    ),
    rule(
        "router.workers_busy",
        "folio_router_workers_busy",
        Gauge,
        1.0,
        "Mail files being delivered into now.",
    ),
    rule(
        "router.passes_behind",
        "folio_router_passes_behind_total",
        Counter,
        1.0,
        "Passes that left deposits for the next.",
    ),
    rule(
        "outbound.waiting",
        "folio_outbound_waiting",
        Gauge,
        1.0,
        "Recipients in other domains waiting for their first attempt.",
    ),
    rule(
        "outbound.retrying",
        "folio_outbound_retrying",
        Gauge,
        1.0,
        "Recipients in other domains waiting after a failed attempt.",
    ),
    rule(
        "outbound.delivered",
        "folio_outbound_delivered_total",
        Counter,
        1.0,
        "Recipients handed over to the next SMTP server.",
    ),
    rule(
        "outbound.failed",
        "folio_outbound_failed_total",
        Counter,
        1.0,
        "Recipients given up (refused for good, or past router.expire_hours).",
    ),
    rule(
        "outbound.attempts",
        "folio_outbound_attempts_total",
        Counter,
        1.0,
        "Outbound delivery attempts (one message to one host).",
    ),
    rule(
        "outbound.dsns",
        "folio_outbound_dsns_total",
        Counter,
        1.0,
        "Delivery status notifications sent back for failed recipients.",
    ),
    rule(
        "outbound.delay_notices",
        "folio_outbound_delay_notices_total",
        Counter,
        1.0,
        "Delay notices sent for recipients still waiting.",
    ),
    rule(
        "outbound.connections",
        "folio_outbound_connections_total",
        Counter,
        1.0,
        "SMTP connections made to other servers.",
    ),
];

/// Statistics not exported (see the module docs: rates and free text).
const LEFT_OUT: &[&str] = &[
    "server.trans_per_min",
    "log.bytes_per_s",
    "log.fsyncs_per_s",
    "log.commits_per_s",
    "log.commits_per_fsync",
    "router.delivered_per_min",
    "router.retrying_reasons",
    "fixup.last_database",
    "fixup.last_time",
];

fn value_of(v: &StatValue) -> Option<f64> {
    match v {
        StatValue::Count(n) => Some(*n as f64),
        StatValue::Gauge(g) => Some(*g),
        StatValue::Text(_) => None,
    }
}

fn add_statistic(x: &mut Exposition, st: &Statistic) {
    let name = st.name.as_str();
    if LEFT_OUT.contains(&name) || name.starts_with("op.") {
        // Response times come from the histograms themselves.
        return;
    }
    if let Some(r) = RULES.iter().find(|r| r.stat == name) {
        if let Some(v) = value_of(&st.value) {
            let labels = r
                .label
                .map(|(k, v)| vec![(k, v.to_string())])
                .unwrap_or_default();
            x.put(r.metric, r.kind, r.help, labels, v * r.scale);
        }
        return;
    }
    if add_patterned(x, name, &st.value) {
        return;
    }
    add_unknown(x, name, &st.value);
}

/// Statistics named after something (a wait point, a task, a replication
/// entry, a router phase) or holding a state; false if `name` is none.
fn add_patterned(x: &mut Exposition, name: &str, value: &StatValue) -> bool {
    let v = value_of(value);
    let text = match value {
        StatValue::Text(t) => Some(t.as_str()),
        _ => None,
    };
    if let (Some((point, figure)), Some(v)) = (
        name.strip_prefix("wait.").and_then(|r| r.rsplit_once('.')),
        v,
    ) {
        add_wait(x, point, figure, v);
        return true;
    }
    let parts: Vec<&str> = name.split('.').collect();
    match (parts.as_slice(), v, text) {
        (["router", "pass_ms", phase], Some(v), _) => x.put(
            "folio_router_pass_seconds_total",
            Counter,
            "Time router passes spent, by phase.",
            vec![("phase", phase.to_string())],
            v * MS,
        ),
        (["router", "delivery_ms", step], Some(v), _) => x.put(
            "folio_router_delivery_step_seconds_total",
            Counter,
            "Time deliveries into mail files spent, by step (side by side ones add up).",
            vec![("step", step.to_string())],
            v * MS,
        ),
        (["replication", .., _], _, _) if parts.len() >= 3 => {
            let entry = parts[1..parts.len() - 1].join(".");
            return add_replication(x, &entry, parts[parts.len() - 1], value);
        }
        (["task", .., "state"], _, Some(state)) if parts.len() >= 3 => x.put(
            "folio_task_state",
            Gauge,
            "Background tasks: 1 for each task's current state.",
            vec![
                ("task", parts[1..parts.len() - 1].join(".")),
                ("state", state.to_string()),
            ],
            1.0,
        ),
        (["log", "state"], _, Some(state)) => {
            let current = state.split(':').next().unwrap_or(state).trim();
            for s in LOG_STATES {
                x.put(
                    "folio_log_state",
                    Gauge,
                    "The transaction log's state: 1 for the current one (full and failed refuse writes).",
                    vec![("state", s.to_string())],
                    if s == current { 1.0 } else { 0.0 },
                );
            }
        }
        (["log", "style"], _, Some(style)) => x.put(
            "folio_log_style",
            Gauge,
            "The transaction log's style (circular, linear, archive): 1 for the one in use.",
            vec![("style", style.to_string())],
            1.0,
        ),
        (["log", "last_archive"], _, Some(t)) => {
            // "never (since the server started)" is no moment: no sample.
            if let Some(secs) = backups::unix_seconds(t) {
                x.put(
                    "folio_log_last_archive_timestamp_seconds",
                    Gauge,
                    "When the log was last archived (Unix time; archive style, since the server started).",
                    vec![],
                    secs,
                );
            }
        }
        (["fixup", "backup_needed"], _, Some(t)) => x.put(
            "folio_fixup_backup_needed",
            Gauge,
            "1 if a fixed-up database needs a new backup (see GET /stats).",
            vec![],
            if t.starts_with("yes") { 1.0 } else { 0.0 },
        ),
        _ => return false,
    }
    true
}

/// `wait.<point>.count|us|max_us|p99_us` as a summary and a gauge.
fn add_wait(x: &mut Exposition, point: &str, figure: &str, v: f64) {
    const HELP: &str = "Time threads waited at a wait point (design.md I54): count, total and p99.";
    let point = vec![("point", point.to_string())];
    let mut summary = |suffix: &'static str, labels: Labels, v: f64| {
        x.family("folio_wait_seconds", Kind::Summary, HELP)
            .samples
            .push((suffix, labels, v));
    };
    match figure {
        "count" => summary("_count", point, v),
        "us" => summary("_sum", point, v * 1e-6),
        "p99_us" => {
            let mut l = point;
            l.push(("quantile", "0.99".into()));
            summary("", l, v * 1e-6);
        }
        "max_us" => x.put(
            "folio_wait_max_seconds",
            Gauge,
            "Longest wait at a wait point since start.",
            point,
            v * 1e-6,
        ),
        _ => add_unknown(
            x,
            &format!("wait.{}.{figure}", point[0].1),
            &StatValue::Gauge(v),
        ),
    }
}

/// `replication.<entry>.…`: a scheduled replication entry's figures.
fn add_replication(x: &mut Exposition, entry: &str, figure: &str, value: &StatValue) -> bool {
    let labels = vec![("entry", entry.to_string())];
    match (figure, value) {
        ("runs", v) | ("errors", v) | ("documents", v) | ("bytes", v) | ("next_run_s", v)
            if value_of(v).is_some() =>
        {
            let v = value_of(v).unwrap_or_default();
            let (metric, kind, help) = match figure {
                "runs" => (
                    "folio_replication_runs_total",
                    Counter,
                    "Scheduled replication runs.",
                ),
                "errors" => (
                    "folio_replication_failures_total",
                    Counter,
                    "Scheduled replication runs that failed.",
                ),
                "documents" => (
                    "folio_replication_last_documents",
                    Gauge,
                    "Documents the last run transferred.",
                ),
                "bytes" => (
                    "folio_replication_last_bytes",
                    Gauge,
                    "Bytes on the wire of the last run.",
                ),
                _ => (
                    "folio_replication_next_run_seconds",
                    Gauge,
                    "Seconds until the next run (0 while running).",
                ),
            };
            x.put(metric, kind, help, labels, v);
        }
        ("result", StatValue::Text(t)) => {
            let state = t.split(':').next().unwrap_or(t).trim();
            let mut l = labels;
            l.push(("result", state.to_string()));
            x.put(
                "folio_replication_result",
                Gauge,
                "The last run's result (ok, warning, failed, running, never run): 1 for the current one.",
                l,
                1.0,
            );
        }
        ("last_run", StatValue::Text(_)) => {}
        _ => return false,
    }
    true
}

/// A statistic with no rule: exported so nothing is lost, flagged so a
/// test notices.
fn add_unknown(x: &mut Exposition, name: &str, value: &StatValue) {
    let Some(v) = value_of(value) else {
        return;
    };
    let metric: String = format!("folio_{name}")
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
        .collect();
    let help = format!("unmapped statistic {name} (give it a rule in metrics.rs)");
    x.put(&metric, Kind::Untyped, &help, vec![], v);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::Stats;
    use std::time::Duration;

    fn stat(name: &str, value: StatValue) -> Statistic {
        Statistic {
            name: name.into(),
            value,
        }
    }

    #[test]
    fn counters_gauges_and_units() {
        let text = render(
            &[
                stat("server.transactions", StatValue::Count(7)),
                stat("server.connections", StatValue::Count(3)),
                stat("server.http_connections", StatValue::Count(2)),
                stat("lock.wait_us", StatValue::Count(1_500_000)),
                stat("server.trans_per_min", StatValue::Gauge(5.0)),
            ],
            &[],
            Some(&[]),
        );
        assert!(
            text.contains("# TYPE folio_transactions_total counter\nfolio_transactions_total 7\n")
        );
        assert!(text.contains(
            "# TYPE folio_connections gauge\nfolio_connections{listener=\"native\"} 3\n\
             folio_connections{listener=\"http\"} 2\n"
        ));
        assert!(text.contains("folio_lock_wait_seconds_total 1.5\n"));
        assert!(!text.contains("trans_per_min"), "{text}");
    }

    #[test]
    fn the_outbound_queue_has_rules() {
        let names = [
            "waiting",
            "retrying",
            "delivered",
            "failed",
            "attempts",
            "dsns",
            "delay_notices",
            "connections",
        ];
        let stats: Vec<Statistic> = names
            .iter()
            .map(|n| stat(&format!("outbound.{n}"), StatValue::Count(2)))
            .collect();
        let text = render(&stats, &[], Some(&[]));
        assert!(!text.contains("unmapped"), "{text}");
        assert!(text.contains("# TYPE folio_outbound_retrying gauge\nfolio_outbound_retrying 2\n"));
        assert!(text.contains("# TYPE folio_outbound_delivered_total counter\n"));
    }

    #[test]
    fn states_and_labels_are_escaped() {
        let text = render(
            &[
                stat(
                    "log.state",
                    StatValue::Text("full: 2 extent(s) wait".into()),
                ),
                stat("task.a\"b.state", StatValue::Text("running".into())),
            ],
            &[],
            Some(&[]),
        );
        assert!(text.contains("folio_log_state{state=\"full\"} 1\n"));
        assert!(text.contains("folio_log_state{state=\"ok\"} 0\n"));
        assert!(text.contains("folio_task_state{task=\"a\\\"b\",state=\"running\"} 1\n"));
    }

    #[test]
    fn waits_are_a_summary_in_seconds() {
        let text = render(
            &[
                stat("wait.pool.flush_turn.count", StatValue::Count(4)),
                stat("wait.pool.flush_turn.us", StatValue::Count(2_000)),
                stat("wait.pool.flush_turn.max_us", StatValue::Count(1_000)),
                stat("wait.pool.flush_turn.p99_us", StatValue::Count(900)),
            ],
            &[],
            Some(&[]),
        );
        assert!(text.contains(
            "# TYPE folio_wait_seconds summary\nfolio_wait_seconds_count{point=\"pool.flush_turn\"} 4\n\
             folio_wait_seconds_sum{point=\"pool.flush_turn\"} 0.002\n\
             folio_wait_seconds{point=\"pool.flush_turn\",quantile=\"0.99\"} 0.0009\n"
        ), "{text}");
        assert!(text.contains("folio_wait_max_seconds{point=\"pool.flush_turn\"} 0.001\n"));
    }

    #[test]
    fn response_times_are_cumulative_buckets() {
        let s = Stats::new();
        for ms in [1, 2, 3, 200] {
            s.record(Op::Read, Duration::from_millis(ms), true);
        }
        let text = render(&[], &s.response_histograms(), Some(&[]));
        assert!(
            text.contains("folio_response_seconds_bucket{op=\"read\",le=\"0.001\"} 1\n"),
            "{text}"
        );
        assert!(text.contains("folio_response_seconds_bucket{op=\"read\",le=\"0.005\"} 3\n"));
        assert!(text.contains("folio_response_seconds_bucket{op=\"read\",le=\"0.25\"} 4\n"));
        assert!(text.contains("folio_response_seconds_bucket{op=\"read\",le=\"+Inf\"} 4\n"));
        assert!(text.contains("folio_response_seconds_count{op=\"read\"} 4\n"));
        assert!(text.contains("folio_response_seconds_count{op=\"create\"} 0\n"));
        assert_eq!(
            text.matches("# TYPE folio_response_seconds histogram")
                .count(),
            1
        );
    }
}
