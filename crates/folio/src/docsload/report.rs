//! The pages of `load docs` and `load pool`.
//!
//! docs: settings, the disk against the runs, each run's figures, the
//! response-time percentiles of every operation per variant; then one
//! chart per operation with the embedded and network distributions side
//! by side. pool: settings and response times against clients, then the
//! percentiles against clients and the distribution at each client count.

use super::Times;
use crate::report::{self, Axes, Page, Scale, Series, Table, Unit};
use hdrhistogram::Histogram;
use serde_json::Value;
use std::path::Path;

/// Operations in the order a thread does them.
const OPS: [&str; 4] = ["create_db", "create", "attach", "search"];

/// Writes the docs workload's `result.json` and `report.html`; `times`
/// are each variant's response times (µs), all rounds together.
pub(super) fn write_docs(
    out: &Path,
    result: &Value,
    dd: f64,
    times: &[(&str, &Times)],
) -> Result<(), String> {
    let mut page = Page::new("Folio docs workload");
    page.table(report::settings_table(result));
    page.table(summary(result, dd));
    page.table(runs(result, dd));
    let mut rows = Vec::new();
    for (variant, t) in times {
        for op in OPS {
            if let Some(h) = find(t, op) {
                rows.push((format!("{variant}: {op}"), h));
            }
        }
    }
    let named: Vec<(&str, &Histogram<u64>)> = rows.iter().map(|(n, h)| (n.as_str(), *h)).collect();
    page.table(report::percentile_table(
        "Response times per operation (all rounds)",
        Unit::Microseconds,
        &named,
    ));
    if let Some(t) = server_create(result) {
        page.table(t);
    }
    for op in OPS {
        let series: Vec<(&str, &Histogram<u64>)> = times
            .iter()
            .filter_map(|(variant, t)| Some((*variant, find(t, op)?)))
            .collect();
        if !series.is_empty() {
            page.chart(report::percentile_curves(
                &format!("{op}: response time distribution"),
                Unit::Microseconds,
                &series,
            ));
        }
    }
    page.note(
        "create_db is the setup of each thread's mail file (database, design, ACL); \
         small operations are all but attach, search and create_db.",
    );
    report::write(out, result, &page)
}

fn find<'a>(t: &'a Times, op: &str) -> Option<&'a Histogram<u64>> {
    t.ops.iter().find(|(n, _)| *n == op).map(|(_, h)| h)
}

fn num(v: &Value, digits: usize) -> String {
    v.as_f64()
        .map_or_else(|| "–".to_string(), |x| format!("{x:.digits$}"))
}

/// The disk and the two variants side by side.
fn summary(result: &Value, dd: f64) -> Table {
    let mut s = Table::new("The disk and the two variants", &["figure", "value"]);
    s.row(vec!["dd bandwidth, MB/s".into(), format!("{dd:.0}")]);
    if let Some(f) = result["network_attach_fraction_of_dd"].as_f64() {
        s.row(vec![
            "network attachments, share of dd".into(),
            format!("{:.0}%", 100.0 * f),
        ]);
    }
    if let Some(r) = result["network_over_embedded_elapsed"].as_f64() {
        s.row(vec!["network / embedded elapsed".into(), format!("{r:.2}")]);
    }
    s
}

/// Each run's figures against the disk.
fn runs(result: &Value, dd: f64) -> Table {
    let mut t = Table::new(
        "Runs (attachment throughput against dd in the same run)",
        &[
            "variant",
            "round",
            "elapsed s",
            "documents/s",
            "attachments MB/s",
            "% of dd",
            "small ops p50 ms",
            "small ops p99 ms",
        ],
    );
    for variant in ["embedded", "network"] {
        for (i, r) in result[variant].as_array().into_iter().flatten().enumerate() {
            t.row(vec![
                variant.into(),
                (i + 1).to_string(),
                num(&r["elapsed_s"], 1),
                num(&r["docs_per_s"], 1),
                num(&r["attach_mb_per_s"], 0),
                format!(
                    "{:.0}%",
                    100.0 * r["attach_mb_per_s"].as_f64().unwrap_or(0.0) / dd.max(1e-9)
                ),
                num(&r["small_p50_ms"], 2),
                num(&r["small_p99_ms"], 2),
            ]);
        }
    }
    t
}

/// Document creation as the loopback server timed it, per network round
/// (none against `--server`).
fn server_create(result: &Value) -> Option<Table> {
    let mut t = Table::new(
        "create, as the loopback server timed it (request in to answer queued)",
        &["round", "p50 ms", "p95 ms", "p99 ms", "max ms"],
    );
    for (i, r) in result["network"]
        .as_array()
        .into_iter()
        .flatten()
        .enumerate()
    {
        let s = &r["server_create_ms"];
        if s.is_object() {
            t.row(vec![
                (i + 1).to_string(),
                num(&s["p50"], 3),
                num(&s["p95"], 3),
                num(&s["p99"], 3),
                num(&s["max"], 3),
            ]);
        }
    }
    (!t.is_empty()).then_some(t)
}

/// Writes the pool workload's files; `hists` are the response times (µs)
/// at each client count.
pub(super) fn write_pool(
    out: &Path,
    result: &Value,
    hists: &[(usize, Histogram<u64>)],
) -> Result<(), String> {
    let mut page = Page::new("Folio pool workload");
    page.table(report::settings_table(result));
    let rows = result["rows"].as_array().map_or(&[][..], Vec::as_slice);
    let mut t = Table::new(
        "Small operations against clients",
        &[
            "clients",
            "operations/s",
            "p50 ms",
            "p95 ms",
            "p99 ms",
            "max ms",
        ],
    );
    for r in rows {
        t.row(vec![
            r["clients"].to_string(),
            num(&r["ops_per_s"], 0),
            num(&r["p50_ms"], 3),
            num(&r["p95_ms"], 3),
            num(&r["p99_ms"], 3),
            num(&r["max_ms"], 3),
        ]);
    }
    page.table(t);
    let points = |k: &str| -> Vec<(f64, f64)> {
        rows.iter()
            .map(|r| {
                (
                    r["clients"].as_f64().unwrap_or(0.0),
                    r[k].as_f64().unwrap_or(0.0),
                )
            })
            .collect()
    };
    page.chart(report::lines_over_x(
        "Response time against clients",
        Axes {
            x_label: "clients",
            y_label: "ms",
            x: Scale::Log,
            y: Scale::Linear,
        },
        &[
            Series::new("p50", points("p50_ms")),
            Series::new("p95", points("p95_ms")),
            Series::new("p99", points("p99_ms")),
        ],
    ));
    let names: Vec<String> = hists
        .iter()
        .map(|(n, _)| report::count_of(*n, "client"))
        .collect();
    let series: Vec<(&str, &Histogram<u64>)> = names
        .iter()
        .zip(hists)
        .map(|(n, (_, h))| (n.as_str(), h))
        .collect();
    page.chart(report::percentile_curves(
        "Response time distribution at each client count",
        Unit::Microseconds,
        &series,
    ));
    report::write(out, result, &page)
}
