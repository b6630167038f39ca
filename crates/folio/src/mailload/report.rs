//! The mail workload's `result.json` and `report.html`: a summary table
//! first (per run: trans/min, response percentiles, router latency, the
//! server's CPU split, bytes written, fsyncs), then the logging
//! comparison or the sweep with its capacity, the percentiles per
//! operation, and charts: response-time distributions, response and CPU
//! second by second with the log's checkpoints marked, and for a sweep
//! response and trans/min against users.

use crate::report::{self, Axes, Marker, Page, Scale, Series, Table, Unit};
use hdrhistogram::Histogram;
use serde_json::{json, Value};
use std::path::Path;

/// The p95 (ms) a user count must stay within to count as capacity.
pub const CAPACITY_P95_MS: f64 = 50.0;
/// How far below proportional growth trans/min may fall and still count
/// as growing in line with users.
pub const IN_LINE: f64 = 0.9;

/// One run: its figures, and the histograms behind them.
pub struct Run {
    pub json: Value,
    pub overall: Histogram<u64>,
    pub per_op: Vec<(String, Histogram<u64>)>,
}

fn f(v: &Value) -> Option<f64> {
    v.as_f64()
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
            "bytes written, data",
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

/// The sweep's points and its capacity: the largest user count whose p95
/// is within [`CAPACITY_P95_MS`] and whose trans/min is at least
/// [`IN_LINE`] of proportional to the smallest count's.
pub fn sweep(runs: &[Run]) -> Value {
    let points: Vec<(f64, f64, f64, f64)> = runs
        .iter()
        .filter_map(|r| {
            let j = &r.json;
            Some((
                f(&j["users"])?,
                f(&j["trans_per_min"])?,
                f(&j["response"]["overall"]["p50_ms"])?,
                f(&j["response"]["overall"]["p95_ms"])?,
            ))
        })
        .collect();
    let per_user = points.first().map(|p| p.1 / p.0).unwrap_or(0.0);
    let capacity = points
        .iter()
        .filter(|(u, t, _, p95)| *p95 <= CAPACITY_P95_MS && *t >= IN_LINE * per_user * u)
        .map(|p| p.0)
        .fold(None, |m: Option<f64>, u| Some(m.map_or(u, |m| m.max(u))));
    json!({
        "points": points.iter().map(|(u, t, p50, p95)| json!({"users": u, "trans_per_min": t, "p50_ms": p50, "p95_ms": p95})).collect::<Vec<_>>(),
        "capacity_users": capacity,
        "rule": format!("largest user count with p95 ≤ {CAPACITY_P95_MS} ms and trans/min ≥ {IN_LINE} × proportional to the smallest count"),
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

fn summary(runs: &[Run]) -> Table {
    let mut t = Table::new(
        "Summary (steady-state window)",
        &[
            "run",
            "trans/min",
            "p50 ms",
            "p95 ms",
            "p99 ms",
            "router p50 / p99 ms",
            "CPU user / system %",
            "written data / log",
            "log KB / trans",
            "log fsyncs",
            "errors",
        ],
    );
    for r in runs {
        let j = &r.json;
        let o = &j["response"]["overall"];
        let s = &j["server"];
        let errors: u64 = j["errors"]
            .as_object()
            .map_or(0, |m| m.values().filter_map(Value::as_u64).sum());
        t.row(vec![
            j["label"].as_str().unwrap_or("").to_string(),
            num(&j["trans_per_min"], 0),
            num(&o["p50_ms"], 2),
            num(&o["p95_ms"], 2),
            num(&o["p99_ms"], 2),
            format!(
                "{} / {}",
                num(&s["router_latency_p50_ms"], 0),
                num(&s["router_latency_p99_ms"], 0)
            ),
            format!(
                "{} / {}",
                num(&s["cpu_user_percent"], 1),
                num(&s["cpu_system_percent"], 1)
            ),
            format!(
                "{} / {}",
                mb(&s["bytes_written_data"]),
                mb(&s["bytes_written_log"])
            ),
            kb(&s["log_bytes_per_transaction"]),
            num(&s["log_fsyncs"], 0),
            errors.to_string(),
        ]);
    }
    t
}

/// A comparison figure as the summary shows it: counts whole, CPU to a
/// tenth, sizes in MB or KB, response times to the hundredth.
fn comparison_cell(figure: &str, v: &Value) -> String {
    if figure.starts_with("bytes") {
        mb(v)
    } else if figure.ends_with("per transaction") {
        format!("{} KB", kb(v))
    } else if figure.starts_with("CPU") {
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

fn sweep_table(s: &Value) -> Table {
    let mut t = Table::new(
        "Capacity sweep",
        &["users", "trans/min", "p50 ms", "p95 ms"],
    );
    for p in s["points"].as_array().into_iter().flatten() {
        t.row(vec![
            num(&p["users"], 0),
            num(&p["trans_per_min"], 0),
            num(&p["p50_ms"], 2),
            num(&p["p95_ms"], 2),
        ]);
    }
    t.row(vec![
        "capacity".into(),
        match s["capacity_users"].as_f64() {
            Some(u) => format!("{u:.0} users"),
            None => "none of the counts".into(),
        },
        String::new(),
        String::new(),
    ]);
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

/// Writes both files.
pub fn write(out: &Path, result: &Value, runs: &[Run]) -> Result<(), String> {
    let mut page = Page::new("Folio: mail users (load mail)");
    page.table(summary(runs));
    page.table(report::settings_table(result));
    if !result["comparison"].is_null() {
        page.table(comparison_table(&result["comparison"]));
    }
    if !result["sweep"].is_null() {
        page.table(sweep_table(&result["sweep"]));
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
    if !result["sweep"].is_null() {
        let pts = |k: &str| -> Vec<(f64, f64)> {
            result["sweep"]["points"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|p| Some((p["users"].as_f64()?, p[k].as_f64()?)))
                .collect()
        };
        let axes = |y: &'static str| Axes {
            x_label: "users",
            y_label: y,
            x: Scale::Linear,
            y: Scale::Linear,
        };
        page.chart(report::lines_over_x(
            "Response time against users",
            axes("ms"),
            &[
                Series::new("p50", pts("p50_ms")),
                Series::new("p95", pts("p95_ms")),
            ],
        ));
        page.chart(report::lines_over_x(
            "Trans/min against users",
            axes("trans/min"),
            &[Series::new("trans/min", pts("trans_per_min"))],
        ));
    }
    page.note(
        "A transaction is one request of the script (open mail file, open Inbox, read 40 entries, \
         read, update, delete, add draft, send, close). Users start evenly over the first iteration \
         (ramp-up, not counted); figures are over the steady-state window after it. Router latency \
         is the server's router.latency_p50_ms / _p99_ms (deposit to the recipient's Inbox, since \
         the server started). Bytes written to the log are log.bytes_written, to data files the \
         server's write calls (/proc/PID/io wchar) less the log's bytes (replies to sockets \
         included, a small share); fsyncs are the log's (with \
         the log off the server does not count the syncs of data files). Checkpoints are marked \
         when there are at most 20 in a run. All mail files are under mail/ (the mail layer names them \
         mail/<short name>.fdb), on one file system. Meeting invitations go through the calendar \
         (native Meeting create): the chair's Calendar entry, then one Invitation notice the router \
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

    #[test]
    fn capacity_is_the_largest_count_within_p95_and_growing_in_line() {
        let runs = [
            run(100, 1000.0, 5.0),
            run(200, 1990.0, 9.0),
            run(400, 3000.0, 20.0),
            run(800, 7900.0, 80.0),
        ];
        let s = sweep(&runs);
        assert_eq!(s["capacity_users"], 200.0);
        assert_eq!(s["points"].as_array().unwrap().len(), 4);
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
