//! The commit workload's page: settings, then one row per client count
//! and variant (median rounds), the comparison with PostgreSQL and the
//! disk; then commits/s and p99 against clients, and the latency
//! distribution of each variant at each client count.

use crate::report::{self, Axes, Page, Scale, Series, Table, Unit};
use hdrhistogram::Histogram;
use serde_json::Value;
use std::path::Path;

/// The commit latencies (µs) of one client count: each variant's median
/// round, in the order of the variants.
pub(super) struct Latencies {
    pub clients: usize,
    pub hists: Vec<Histogram<u64>>,
}

/// Writes `result.json` and `report.html`; `variants` are (key in the
/// result, name shown).
pub(super) fn write(
    out: &Path,
    result: &Value,
    variants: &[(&str, &str)],
    latencies: &[Latencies],
) -> Result<(), String> {
    let mut page = Page::new("Folio commit workload");
    page.table(report::settings_table(result));
    for t in tables(result, variants) {
        page.table(t);
    }
    let rows = result["results"].as_array().map_or(&[][..], Vec::as_slice);
    let axes = |y_label| Axes {
        x_label: "clients",
        y_label,
        x: Scale::Log,
        y: Scale::Linear,
    };
    let mut rate = by_variant(rows, variants, "commits_per_sec", 1.0);
    let pg = pgbench(result);
    if !pg.is_empty() {
        rate.push(Series::new("PostgreSQL pgbench", pg));
    }
    page.chart(report::lines_over_x(
        "Commits per second against clients (median round)",
        axes("commits/s"),
        &rate,
    ));
    page.chart(report::lines_over_x(
        "p99 commit latency against clients (median round)",
        axes("p99 ms"),
        &by_variant(rows, variants, "p99_us", 1e-3),
    ));
    for l in latencies {
        let series: Vec<(&str, &Histogram<u64>)> = variants
            .iter()
            .map(|(_, name)| *name)
            .zip(&l.hists)
            .collect();
        page.chart(report::percentile_curves(
            &format!(
                "Commit latency at {} (median round)",
                report::count_of(l.clients, "client")
            ),
            Unit::Microseconds,
            &series,
        ));
    }
    page.note(
        "Rounds alternate the variants; each figure is that of the median round by commit rate. \
         Context switches and CPU per commit are machine-wide, load generator included.",
    );
    report::write(out, result, &page)
}

fn f(v: &Value, k: &str) -> f64 {
    v[k].as_f64().unwrap_or(0.0)
}

/// (clients, PostgreSQL inserts/s) of the pgbench run, if there was one.
fn pgbench(result: &Value) -> Vec<(f64, f64)> {
    result["pgbench"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|p| (f(p, "clients"), f(p, "tps")))
        .collect()
}

/// One series per variant: `metric` of its median round (times `scale`)
/// against clients.
fn by_variant(rows: &[Value], variants: &[(&str, &str)], metric: &str, scale: f64) -> Vec<Series> {
    variants
        .iter()
        .map(|(key, name)| {
            let points = rows
                .iter()
                .map(|r| (f(r, "clients"), f(&r[*key]["median"], metric) * scale))
                .collect();
            Series::new(*name, points)
        })
        .collect()
}

/// The figures: rates and latencies, against PostgreSQL, the disk.
fn tables(result: &Value, variants: &[(&str, &str)]) -> Vec<Table> {
    let rows = result["results"].as_array().map_or(&[][..], Vec::as_slice);
    let mut rate = Table::new(
        "Commit rate and latency (median round)",
        &[
            "clients",
            "variant",
            "commits/s",
            "p50 ms",
            "p95 ms",
            "p99 ms",
            "max ms",
        ],
    );
    let mut costs = Table::new(
        "Log, locks and machine per commit (same rounds)",
        &[
            "clients",
            "variant",
            "fsyncs/s",
            "commits per fsync",
            "log bytes/commit",
            "lock waits/commit",
            "context switches/commit",
            "CPU µs/commit",
        ],
    );
    for r in rows {
        for (key, name) in variants {
            let m = &r[*key]["median"];
            let ms = |k: &str| report::ms(f(m, k) / 1e3);
            rate.row(vec![
                r["clients"].to_string(),
                name.to_string(),
                format!("{:.0}", f(m, "commits_per_sec")),
                ms("p50_us"),
                ms("p95_us"),
                ms("p99_us"),
                ms("max_us"),
            ]);
            costs.row(vec![
                r["clients"].to_string(),
                name.to_string(),
                format!("{:.0}", f(m, "fsyncs_per_sec")),
                format!("{:.1}", f(m, "commits_per_fsync")),
                format!("{:.0}", f(m, "log_bytes_per_commit")),
                format!("{:.2}", f(m, "lock_waits_per_commit")),
                format!("{:.1}", f(m, "context_switches_per_commit")),
                format!("{:.0}", f(m, "cpu_us_per_commit")),
            ]);
        }
    }
    let mut tables = vec![rate, costs];
    let pg = pgbench(result);
    if !pg.is_empty() {
        let mut header = vec!["clients".to_string(), "PostgreSQL inserts/s".to_string()];
        header.extend(variants.iter().map(|(_, n)| format!("{n} / PostgreSQL")));
        let mut c = Table {
            caption: "Against PostgreSQL pgbench (same run)".into(),
            header,
            rows: Vec::new(),
        };
        for r in rows {
            let clients = f(r, "clients");
            let Some(&(_, tps)) = pg.iter().find(|(c, _)| *c == clients) else {
                continue;
            };
            let mut cells = vec![r["clients"].to_string(), format!("{tps:.0}")];
            for (key, _) in variants {
                let ours = f(&r[*key]["median"], "commits_per_sec");
                cells.push(format!("{:.2}×", ours / tps.max(1e-9)));
            }
            c.row(cells);
        }
        tables.push(c);
    }
    let disk = &result["disk"];
    let mut d = Table::new("The disk, same run", &["write + fdatasync", "per second"]);
    d.row(vec![
        "4 KiB sequential".into(),
        format!("{:.0}", f(disk, "write4k_fdatasync_per_sec")),
    ]);
    d.row(vec![
        "64 KiB sequential".into(),
        format!("{:.0}", f(disk, "write64k_fdatasync_per_sec")),
    ]);
    tables.push(d);
    tables
}
