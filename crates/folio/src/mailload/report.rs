//! The mail workload's `result.json` and `report.html`: a summary table
//! first — per run (trans/min, response percentiles, router latency and
//! deliveries, the server's and the driver's CPU, bytes written to the
//! device and by the server, fsyncs), or for a sweep per user count and
//! arm with each arm's capacity marked — then the logging comparison or
//! the sweep's capacity per arm, the percentiles per operation, and
//! charts: for a sweep p95, trans/min and router p99 against users per
//! arm first, then response-time distributions, response and CPU second
//! by second with the log's checkpoints marked.

use super::sweep::{self, ROUTER_P99_MS};
use crate::report::{self, Axes, Marker, Page, Scale, Series, Table, Unit};
use hdrhistogram::Histogram;
use serde_json::{json, Value};
use std::path::Path;

/// One run: its figures, and the histograms behind them.
pub struct Run {
    pub json: Value,
    pub overall: Histogram<u64>,
    pub per_op: Vec<(String, Histogram<u64>)>,
}

fn ratio(a: Option<f64>, b: Option<f64>) -> Value {
    match (a, b) {
        (Some(a), Some(b)) if b > 0.0 => json!(a / b),
        _ => Value::Null,
    }
}

/// What a two-run comparison switches between its runs (on first).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Compared {
    /// `--compare-logging`: the transaction log.
    Log,
    /// `--view-logging`: view logging on every Inbox (log on in both).
    ViewLog,
}

impl Compared {
    pub fn mode(self) -> &'static str {
        match self {
            Compared::Log => "compare-logging",
            Compared::ViewLog => "view-logging",
        }
    }

    fn title(self) -> &'static str {
        match self {
            Compared::Log => "Log on against log off",
            Compared::ViewLog => "View logging on every Inbox: on against off",
        }
    }

    /// Whether a response-time ratio is off ÷ on (how many times faster
    /// with it on) rather than on ÷ off (what turning it on costs).
    fn response_off_over_on(self) -> bool {
        self == Compared::Log
    }
}

/// The setting on (first run) against off (second): each figure and the
/// ratio. For response times with [`Compared::Log`] the ratio is off ÷ on
/// (how many times faster with the log); otherwise on ÷ off (the cost of
/// turning it on).
pub fn comparison(runs: &[Run], what: Compared) -> Value {
    let (Some(on), Some(off)) = (runs.first(), runs.get(1)) else {
        return Value::Null;
    };
    let (on, off) = (&on.json, &off.json);
    let pick = |r: &Value, path: &[&str]| path.iter().fold(r, |v, k| &v[*k]).as_f64();
    let rows = [
        ("trans/min", &["trans_per_min"][..], false),
        (
            "response p50 ms",
            &["response", "overall", "p50_ms"][..],
            true,
        ),
        (
            "response p95 ms",
            &["response", "overall", "p95_ms"][..],
            true,
        ),
        (
            "response p99 ms",
            &["response", "overall", "p99_ms"][..],
            true,
        ),
        ("CPU user + system %", &["server", "cpu_percent"][..], false),
        ("CPU user %", &["server", "cpu_user_percent"][..], false),
        ("CPU system %", &["server", "cpu_system_percent"][..], false),
        (
            "driver CPU user + system %",
            &["driver", "cpu_percent"][..],
            false,
        ),
        (
            "router delivery p99 ms",
            &["server", "router_latency_p99_ms"][..],
            true,
        ),
        ("deliveries offered", &["deliveries", "offered"][..], false),
        (
            "deliveries delivered",
            &["deliveries", "delivered"][..],
            false,
        ),
        (
            "device bytes written (all writers)",
            &["server", "device_bytes_written"][..],
            false,
        ),
        (
            "bytes written, data (write calls)",
            &["server", "bytes_written_data"][..],
            false,
        ),
        (
            "bytes written, log",
            &["server", "bytes_written_log"][..],
            false,
        ),
        (
            "log bytes per transaction",
            &["server", "log_bytes_per_transaction"][..],
            false,
        ),
        ("log fsyncs", &["server", "log_fsyncs"][..], false),
        ("fsyncs of every file", &["server", "file_syncs"][..], false),
        ("log checkpoints", &["server", "log_checkpoints"][..], false),
    ];
    let rows = rows.iter().map(|(name, path, response)| {
        let faster = *response && what.response_off_over_on();
        (name, path, faster)
    });
    json!({
        "compared": what.mode(),
        "title": what.title(),
        "rows": rows
            .map(|(name, path, faster)| {
                let (a, b) = (pick(on, path), pick(off, path));
                json!({"figure": name, "on": a, "off": b,
                       "ratio": if faster { ratio(b, a) } else { ratio(a, b) },
                       "ratio_is": if faster { "off ÷ on" } else { "on ÷ off" }})
            })
            .collect::<Vec<_>>(),
    })
}

fn num(v: &Value, digits: usize) -> String {
    match v.as_f64() {
        Some(x) => format!("{x:.digits$}"),
        None => "–".into(),
    }
}

fn mb(v: &Value) -> String {
    match v.as_f64() {
        Some(x) => format!("{:.1} MB", x / 1e6),
        None => "–".into(),
    }
}

fn kb(v: &Value) -> String {
    match v.as_f64() {
        Some(x) => format!("{:.1}", x / 1e3),
        None => "–".into(),
    }
}

fn errors(run: &Value) -> u64 {
    run["errors"]
        .as_object()
        .map_or(0, |m| m.values().filter_map(Value::as_u64).sum())
}

fn pair(a: String, b: String) -> String {
    format!("{a} / {b}")
}

/// Delivered / offered in the window.
fn deliveries(run: &Value) -> String {
    let d = &run["deliveries"];
    pair(num(&d["delivered"], 0), num(&d["offered"], 0))
}

/// Delivered as a percentage of offered.
fn delivered_percent(run: &Value) -> String {
    match run["deliveries"]["delivered_share"].as_f64() {
        Some(s) => format!("{:.1}%", 100.0 * s),
        None => "–".into(),
    }
}

/// One row per run: the figures of each run beside the others.
fn summary(runs: &[Run], caption: &str) -> Table {
    let mut t = Table::new(
        caption,
        &[
            "run",
            "trans/min",
            "p50 / p95 / p99 ms",
            "router p50 / p99 ms",
            "delivered / offered",
            "server CPU user / system %",
            "driver CPU user / system %",
            "machine: others / stolen / idle %",
            "device written (all writers)",
            "server wrote data / log",
            "log KB / trans",
            "log fsyncs",
            "fsyncs of every file",
            "errors",
        ],
    );
    for r in runs {
        let j = &r.json;
        let o = &j["response"]["overall"];
        let s = &j["server"];
        let c = &j["driver"];
        t.row(vec![
            j["label"].as_str().unwrap_or("").to_string(),
            num(&j["trans_per_min"], 0),
            format!(
                "{} / {} / {}",
                num(&o["p50_ms"], 2),
                num(&o["p95_ms"], 2),
                num(&o["p99_ms"], 2)
            ),
            pair(
                num(&s["router_latency_p50_ms"], 0),
                num(&s["router_latency_p99_ms"], 0),
            ),
            deliveries(j),
            pair(
                num(&s["cpu_user_percent"], 1),
                num(&s["cpu_system_percent"], 1),
            ),
            pair(
                num(&c["cpu_user_percent"], 1),
                num(&c["cpu_system_percent"], 1),
            ),
            format!(
                "{} / {} / {}",
                num(&j["machine"]["other_percent"], 1),
                num(&j["machine"]["steal_percent"], 1),
                num(&j["machine"]["idle_percent"], 1)
            ),
            mb(&s["device_bytes_written"]),
            pair(mb(&s["bytes_written_data"]), mb(&s["bytes_written_log"])),
            kb(&s["log_bytes_per_transaction"]),
            num(&s["log_fsyncs"], 0),
            num(&s["file_syncs"], 0),
            errors(j).to_string(),
        ]);
    }
    t
}

/// An arm's capacity in words.
fn capacity_words(users: &Value) -> String {
    match users.as_u64() {
        Some(u) => format!("{u} users"),
        None => "none of the counts".into(),
    }
}

/// The sweep's summary, first on the page: a row per user count and arm
/// (the log on first within a count, whichever ran first), with each
/// point's verdict and the arm's capacity marked; the capacities and
/// their ratio in the caption.
fn sweep_summary(sweep: &Value, runs: &[Value]) -> Table {
    let arms: Vec<&Value> = sweep["arms"].as_array().into_iter().flatten().collect();
    let capacities: Vec<String> = arms
        .iter()
        .map(|a| {
            format!(
                "{} {}",
                a["arm"].as_str().unwrap_or(""),
                capacity_words(&a["capacity_users"])
            )
        })
        .collect();
    let ratio = match sweep["capacity_ratio_on_over_off"].as_f64() {
        Some(r) => format!("; ratio on ÷ off {r:.2}"),
        None if arms.len() == 2 => "; ratio on ÷ off: –".into(),
        None => String::new(),
    };
    let mut t = Table::new(
        &format!(
            "Summary per user count (steady-state window). Capacity: {}{ratio}",
            capacities.join(", ")
        ),
        &[
            "users",
            "log",
            "ran",
            "trans/min",
            "p50 / p95 / p99 ms",
            "p99 ms: read document / read 40 entries / open Inbox",
            "router p50 / p99 ms",
            "delivered / offered",
            "delivered %",
            "CPU % server / driver",
            "errors",
            "capacity rule",
        ],
    );
    let mut rows: Vec<(u64, usize, &Value, &Value)> = arms
        .iter()
        .enumerate()
        .flat_map(|(i, a)| {
            a["points"]
                .as_array()
                .into_iter()
                .flatten()
                .map(move |p| (p["users"].as_u64().unwrap_or(0), i, p, *a))
        })
        .collect();
    rows.sort_by_key(|(users, arm, _, _)| (*users, *arm));
    for (users, _, p, arm) in rows {
        let Some(j) = p["run"].as_u64().and_then(|i| runs.get(i as usize)) else {
            continue;
        };
        let o = &j["response"]["overall"];
        let op = |name: &str| num(&j["response"]["per_operation"][name]["p99_ms"], 2);
        let s = &j["server"];
        let turn = match j["turn"].as_u64() {
            Some(1) => "1st",
            Some(_) => "2nd",
            None => "–",
        };
        let at_capacity = arm["capacity_users"].as_u64() == Some(users);
        let verdict = if p["met"].as_bool() == Some(true) {
            if at_capacity {
                "met ◀ capacity".to_string()
            } else {
                "met".to_string()
            }
        } else {
            let missed: Vec<&str> = p["missed"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(Value::as_str)
                .collect();
            format!("missed: {}", missed.join("; "))
        };
        t.row(vec![
            users.to_string(),
            arm["arm"]
                .as_str()
                .unwrap_or("")
                .trim_start_matches("log ")
                .to_string(),
            turn.to_string(),
            num(&j["trans_per_min"], 0),
            format!(
                "{} / {} / {}",
                num(&o["p50_ms"], 2),
                num(&o["p95_ms"], 2),
                num(&o["p99_ms"], 2)
            ),
            format!(
                "{} / {} / {}",
                op("read document"),
                op("read 40 entries"),
                op("open Inbox")
            ),
            pair(
                num(&s["router_latency_p50_ms"], 0),
                num(&s["router_latency_p99_ms"], 0),
            ),
            deliveries(j),
            delivered_percent(j),
            pair(
                num(&s["cpu_percent"], 1),
                num(&j["driver"]["cpu_percent"], 1),
            ),
            errors(j).to_string(),
            verdict,
        ]);
    }
    t
}

/// Each arm's capacity, the counts that met the rule, and the ratio.
fn capacity_table(sweep: &Value) -> Table {
    let mut t = Table::new(
        &format!(
            "Capacity per arm (p95 ≤ {} ms, router p99 ≤ {ROUTER_P99_MS} ms, delivered ≥ {:.0}% \
             of offered, trans/min in line)",
            sweep::P95_MS,
            100.0 * sweep::DELIVERED_SHARE
        ),
        &[
            "arm",
            "capacity",
            "counts that met the rule",
            "counts that missed it",
        ],
    );
    let arms: Vec<&Value> = sweep["arms"].as_array().into_iter().flatten().collect();
    for a in &arms {
        let counts = |met: bool| -> String {
            let c: Vec<String> = a["points"]
                .as_array()
                .into_iter()
                .flatten()
                .filter(|p| p["met"].as_bool() == Some(met))
                .map(|p| num(&p["users"], 0))
                .collect();
            if c.is_empty() {
                "–".into()
            } else {
                c.join(", ")
            }
        };
        t.row(vec![
            a["arm"].as_str().unwrap_or("").to_string(),
            capacity_words(&a["capacity_users"]),
            counts(true),
            counts(false),
        ]);
    }
    if arms.len() == 2 {
        t.row(vec![
            "ratio on ÷ off".into(),
            match sweep["capacity_ratio_on_over_off"].as_f64() {
                Some(r) => format!("{r:.2}×"),
                None => "– (an arm has no capacity)".into(),
            },
            String::new(),
            String::new(),
        ]);
    }
    t
}

/// A comparison figure as the summary shows it: counts whole, CPU to a
/// tenth, sizes in MB or KB, response times to the hundredth.
fn comparison_cell(figure: &str, v: &Value) -> String {
    if figure.contains("bytes written") {
        mb(v)
    } else if figure.ends_with("per transaction") {
        format!("{} KB", kb(v))
    } else if figure.contains("CPU") {
        num(v, 1)
    } else if figure.starts_with("response") {
        num(v, 2)
    } else {
        num(v, 0)
    }
}

fn comparison_table(c: &Value) -> Table {
    let mut t = Table::new(
        c["title"].as_str().unwrap_or("On against off"),
        &["figure", "on", "off", "ratio"],
    );
    for row in c["rows"].as_array().into_iter().flatten() {
        let fig = row["figure"].as_str().unwrap_or("");
        let cell = |v: &Value| comparison_cell(fig, v);
        t.row(vec![
            fig.to_string(),
            cell(&row["on"]),
            cell(&row["off"]),
            format!(
                "{} ({})",
                num(&row["ratio"], 2),
                row["ratio_is"].as_str().unwrap_or("")
            ),
        ]);
    }
    t
}

/// The seconds at which the log took a checkpoint in run `i`.
fn checkpoints(run: &Value, i: usize) -> Vec<Marker> {
    let mut out = Vec::new();
    let mut last: Option<u64> = None;
    for s in run["samples"].as_array().into_iter().flatten() {
        let (Some(n), Some(t)) = (s["log_checkpoints"].as_u64(), s["t_s"].as_f64()) else {
            continue;
        };
        if last.is_some_and(|l| n > l) {
            out.push(Marker {
                label: "checkpoint".into(),
                at_s: t,
                series: Some(i),
            });
        }
        last = Some(n);
    }
    out
}

fn per_second(run: &Value, field: &str) -> Vec<(f64, f64)> {
    run["per_second"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|s| s["ops"].as_u64().unwrap_or(0) > 0)
        .filter_map(|s| Some((s["t_s"].as_f64()?, s[field].as_f64()?)))
        .collect()
}

/// CPU percent per second from the samples (user + system).
fn cpu_per_second(run: &Value) -> Vec<(f64, f64)> {
    let s: Vec<&Value> = run["samples"].as_array().into_iter().flatten().collect();
    s.windows(2)
        .filter_map(|w| {
            let cpu = |v: &Value| Some(v["cpu_user_s"].as_f64()? + v["cpu_system_s"].as_f64()?);
            let dt = w[1]["t_s"].as_f64()? - w[0]["t_s"].as_f64()?;
            (dt > 0.0).then_some((
                w[1]["t_s"].as_f64()?,
                100.0 * (cpu(w[1])? - cpu(w[0])?) / dt,
            ))
        })
        .collect()
}

/// A sweep's figures against users, one line per arm: p95 (with the
/// capacity limit), trans/min, and the router's delivery p99 (with its
/// limit). Latencies on a log scale: the arms may differ by orders.
fn against_users(sweep: &Value) -> Vec<report::Chart> {
    let arms: Vec<&Value> = sweep["arms"].as_array().into_iter().flatten().collect();
    let line = |key: &str| -> Vec<Series> {
        arms.iter()
            .map(|a| {
                let pts = a["points"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter_map(|p| Some((p["users"].as_f64()?, p[key].as_f64()?)))
                    .collect();
                Series::new(a["arm"].as_str().unwrap_or(""), pts)
            })
            .collect()
    };
    let users: Vec<f64> = arms
        .iter()
        .flat_map(|a| a["points"].as_array().into_iter().flatten())
        .filter_map(|p| p["users"].as_f64())
        .collect();
    let limit = |name: String, y: f64| {
        let lo = users.iter().copied().fold(f64::INFINITY, f64::min);
        let hi = users.iter().copied().fold(0.0, f64::max);
        Series::new(
            name,
            if users.is_empty() {
                Vec::new()
            } else {
                vec![(lo, y), (hi, y)]
            },
        )
    };
    let axes = |y_label: &'static str, y: Scale| Axes {
        x_label: "users",
        y_label,
        x: Scale::Linear,
        y,
    };
    let mut p95 = line("p95_ms");
    p95.push(limit(format!("limit {} ms", sweep::P95_MS), sweep::P95_MS));
    let mut router = line("router_p99_ms");
    router.push(limit(format!("limit {ROUTER_P99_MS} ms"), ROUTER_P99_MS));
    vec![
        report::lines_over_x(
            "Response time p95 against users, per arm",
            axes("p95, ms (log scale)", Scale::Log),
            &p95,
        ),
        report::lines_over_x(
            "Trans/min against users, per arm",
            axes("trans/min", Scale::Linear),
            &line("trans_per_min"),
        )
        .captioned(
            "Both arms' users offer the same load, so where both servers keep up the lines \
             coincide and the one drawn last hides the other.",
        ),
        report::lines_over_x(
            "Router delivery p99 against users, per arm",
            axes("router p99, ms (log scale)", Scale::Log),
            &router,
        ),
    ]
}

/// Writes both files.
pub fn write(out: &Path, result: &Value, runs: &[Run]) -> Result<(), String> {
    let mut page = Page::new("Folio: mail users (load mail)");
    let sweep = &result["sweep"];
    if sweep.is_null() {
        page.table(summary(runs, "Summary (steady-state window)"));
        page.table(report::settings_table(result));
    } else {
        let jsons: Vec<Value> = runs.iter().map(|r| r.json.clone()).collect();
        page.table(sweep_summary(sweep, &jsons));
        page.table(capacity_table(sweep));
        page.table(report::settings_table(result));
        page.table(summary(
            runs,
            "Each run (steady-state window), in the order run",
        ));
        for c in against_users(sweep) {
            page.chart(c);
        }
    }
    if !result["comparison"].is_null() {
        page.table(comparison_table(&result["comparison"]));
    }
    for r in runs {
        let rows: Vec<(&str, &Histogram<u64>)> = r
            .per_op
            .iter()
            .filter(|(_, h)| !h.is_empty())
            .map(|(n, h)| (n.as_str(), h))
            .chain([("all operations", &r.overall)])
            .collect();
        page.table(report::percentile_table(
            &format!(
                "Response times per operation: {}",
                r.json["label"].as_str().unwrap_or("")
            ),
            Unit::Microseconds,
            &rows,
        ));
    }
    let labels: Vec<String> = runs
        .iter()
        .map(|r| r.json["label"].as_str().unwrap_or("").to_string())
        .collect();
    let overall: Vec<(&str, &Histogram<u64>)> = labels
        .iter()
        .map(String::as_str)
        .zip(runs.iter().map(|r| &r.overall))
        .collect();
    page.chart(report::percentile_curves(
        "Response time distribution, all operations",
        Unit::Microseconds,
        &overall,
    ));
    if let Some(first) = runs.first() {
        let ops: Vec<(&str, &Histogram<u64>)> = first
            .per_op
            .iter()
            .filter(|(_, h)| !h.is_empty())
            .map(|(n, h)| (n.as_str(), h))
            .collect();
        page.chart(report::percentile_curves(
            &format!("Response time per operation: {}", labels[0]),
            Unit::Microseconds,
            &ops,
        ));
    }
    let markers: Vec<Marker> = runs
        .iter()
        .enumerate()
        .flat_map(|(i, r)| checkpoints(&r.json, i))
        .collect();
    // Dozens of lines would hide the curve: too many are only counted
    // (in the summary), and the title says so.
    let p99_title = if markers.len() <= 20 {
        "Response time p99, second by second (log checkpoints marked)".to_string()
    } else {
        format!(
            "Response time p99, second by second ({} checkpoints in {} runs, not marked)",
            markers.len(),
            runs.len()
        )
    };
    let mut markers = if markers.len() <= 20 {
        markers
    } else {
        Vec::new()
    };
    // Where the counted window starts (every run ramps up alike).
    if let Some(ramp) = runs.first().and_then(|r| r.json["ramp_s"].as_f64()) {
        markers.push(Marker {
            label: "measured from here".into(),
            at_s: ramp,
            series: None,
        });
    }
    let series = |field: &str| -> Vec<Series> {
        runs.iter()
            .zip(&labels)
            .map(|(r, l)| Series::new(l.as_str(), per_second(&r.json, field)))
            .collect()
    };
    page.chart(report::per_second(
        &p99_title,
        "p99, ms",
        &series("p99_ms"),
        &markers,
    ));
    page.chart(report::per_second(
        "Response time p50, second by second",
        "p50, ms",
        &series("p50_ms"),
        &markers,
    ));
    let cpu: Vec<Series> = runs
        .iter()
        .zip(&labels)
        .map(|(r, l)| Series::new(l.as_str(), cpu_per_second(&r.json)))
        .collect();
    if cpu.iter().any(|s| !s.points.is_empty()) {
        page.chart(report::per_second(
            "Server CPU (user + system), second by second",
            "% of one core",
            &cpu,
            &markers,
        ));
    }
    page.note(
        "A transaction is one request of the script (open mail file, open Inbox, read 40 entries, \
         read, update, delete, add draft, send, close). Users start evenly over the first iteration \
         (ramp-up, not counted); figures are over the steady-state window after it. Router latency \
         is the server's router.latency_p50_ms / _p99_ms (deposit to the recipient's Inbox), over \
         every delivery since the server started, ramp-up included: the server keeps no window of \
         its own. Deliveries offered are the recipients of the messages sent in the window (a \
         meeting invitation is one notice to each invitee); delivered is the router's \
         router.delivered counted over the window, so a backlog from the ramp-up can be delivered \
         in it, and messages sent near the window's end are delivered after it.",
    );
    page.note(
        "Server CPU is the server process's (/proc/PID/stat), driver CPU this tool's own \
         (getrusage: the simulated users, their connections and the sampling); both in percent of \
         one core, sharing the machine's cores. Machine is /proc/stat over the window, in percent of \
         all the cores' time: what other processes used, what the hypervisor gave to other guests \
         (stolen) and idle; a run with much of either was not measured on a quiet machine. Device written is the sectors written to the block \
         device holding the data directory (/sys/dev/block/MAJ:MIN/stat × 512 bytes) over the \
         window: what reached the disk, by every writer on that device, not only the server. \
         Server wrote data / log is what the server asked for: the log's log.bytes_written, and \
         for data files its write calls (/proc/PID/io wchar) less the log's bytes, replies to \
         sockets included (a small share) and every rewrite of a cached page counted, so it may \
         exceed what reached the disk. Log fsyncs are the log's; fsyncs of every file count \
         each fdatasync the server made (wait.file.sync.count: data files, log extents and \
         attachment objects alike), so both arms compare by the syncs they cost. Checkpoints are marked when there are at most 20 in \
         a run. All mail files are under mail/ (the mail layer names them mail/<short \
         name>.fdb), on one file system. Meeting invitations go through the calendar (native \
         Meeting create): the chair's Calendar entry, then one Invitation notice the router \
         delivers to each invitee.",
    );
    report::write(out, result, &page)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(users: u64, tpm: f64, p95: f64) -> Run {
        Run {
            json: json!({"users": users, "trans_per_min": tpm,
                         "response": {"overall": {"p50_ms": p95 / 2.0, "p95_ms": p95}}}),
            overall: Histogram::new(3).unwrap(),
            per_op: Vec::new(),
        }
    }

    fn swept(users: u64, logging: bool, turn: u64, p95: f64) -> Value {
        json!({"users": users, "logging": logging, "turn": turn,
               "trans_per_min": 16.0 * users as f64,
               "response": {"overall": {"p50_ms": 1.0, "p95_ms": p95, "p99_ms": 2.0 * p95},
                            "per_operation": {"read document": {"p99_ms": 3.0},
                                              "read 40 entries": {"p99_ms": 4.0},
                                              "open Inbox": {"p99_ms": 5.0}}},
               "server": {"router_latency_p50_ms": 2.0, "router_latency_p99_ms": 20.0,
                          "cpu_percent": 40.0},
               "driver": {"cpu_percent": 12.5},
               "deliveries": {"offered": 90, "delivered": 90, "delivered_share": 1.0},
               "errors": {}})
    }

    #[test]
    fn the_sweep_summary_has_both_arms_per_count_and_marks_each_capacity() {
        let runs = [
            swept(100, true, 1, 4.0),
            swept(100, false, 2, 6.0),
            swept(200, false, 1, 70.0),
            swept(200, true, 2, 9.0),
        ];
        let s = sweep::result(&runs);
        let t = sweep_summary(&s, &runs);
        assert!(
            t.caption
                .ends_with("Capacity: log on 200 users, log off 100 users; ratio on ÷ off 2.00"),
            "{}",
            t.caption
        );
        let cells = |i: usize| {
            let r = &t.rows[i];
            (r[0].as_str(), r[1].as_str(), r[2].as_str(), r[11].as_str())
        };
        assert_eq!(cells(0), ("100", "on", "1st", "met"));
        assert_eq!(cells(1), ("100", "off", "2nd", "met ◀ capacity"));
        assert_eq!(cells(2), ("200", "on", "2nd", "met ◀ capacity"));
        assert_eq!(cells(3), ("200", "off", "1st", "missed: p95 > 50 ms"));
        assert_eq!(t.rows[0][5], "3.00 / 4.00 / 5.00", "the reads' p99");
        assert_eq!(t.rows[0][7..9], ["90 / 90", "100.0%"]);
        assert_eq!(t.rows[0][9], "40.0 / 12.5", "server and driver CPU");
        let c = capacity_table(&s);
        assert_eq!(c.rows.last().unwrap()[..2], ["ratio on ÷ off", "2.00×"]);
    }

    #[test]
    fn the_comparison_puts_response_ratios_as_times_faster_with_the_log() {
        let on = run(10, 2000.0, 10.0);
        let off = run(10, 1000.0, 40.0);
        let c = comparison(&[on, off], Compared::Log);
        let row = |name: &str| {
            c["rows"]
                .as_array()
                .unwrap()
                .iter()
                .find(|r| r["figure"] == name)
                .unwrap()
                .clone()
        };
        assert_eq!(row("trans/min")["ratio"], 2.0);
        assert_eq!(row("response p95 ms")["ratio"], 4.0);
    }

    #[test]
    fn the_view_logging_comparison_puts_every_ratio_as_the_cost_of_turning_it_on() {
        let on = run(10, 1000.0, 12.0);
        let off = run(10, 1000.0, 10.0);
        let c = comparison(&[on, off], Compared::ViewLog);
        assert_eq!(c["compared"], "view-logging");
        let p95 = c["rows"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["figure"] == "response p95 ms")
            .unwrap()
            .clone();
        assert_eq!(p95["ratio"], 1.2);
        assert_eq!(p95["ratio_is"], "on ÷ off");
    }

    #[test]
    fn comparison_cells_read_as_counts_percentages_and_sizes() {
        assert_eq!(comparison_cell("trans/min", &json!(12800.0)), "12800");
        assert_eq!(comparison_cell("log fsyncs", &json!(30809.0)), "30809");
        assert_eq!(comparison_cell("CPU user + system %", &json!(14.6)), "14.6");
        assert_eq!(comparison_cell("response p95 ms", &json!(3.543)), "3.54");
        assert_eq!(
            comparison_cell("log bytes per transaction", &json!(16927.2)),
            "16.9 KB"
        );
        assert_eq!(
            comparison_cell("bytes written, log", &json!(216_667_679.0)),
            "216.7 MB"
        );
        assert_eq!(comparison_cell("log checkpoints", &Value::Null), "–");
    }
}
