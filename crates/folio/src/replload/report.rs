//! The page of `load replication`: settings, the corpus and its
//! best-compressed size, one table per scenario (time, bytes on the
//! wire, documents, savings against compression off, wire bytes against
//! the best-compressed size), charts of bytes and time against the link
//! rate per variant, and the large scenario's figures against targets.

use super::links::{CREATE, INCREMENTAL};
use crate::report::{self, Axes, Page, Scale, Series, Table};
use serde_json::Value;
use std::path::Path;

/// Writes `result.json` and `report.html` into `out`.
pub fn write(out: &Path, result: &Value) -> Result<(), String> {
    let mut page = Page::new("Folio replication workload");
    page.table(report::settings_table(result));
    let links = &result["links"];
    if !links.is_null() {
        page.table(corpus(&links["corpus"]));
        let rows = links["rows"].as_array().map(Vec::as_slice).unwrap_or(&[]);
        for (scenario, floor) in [
            (CREATE, &links["corpus"]["best_compressed_bytes"]),
            (INCREMENTAL, &links["corpus"]["added_best_compressed_bytes"]),
        ] {
            page.table(scenario_table(scenario, rows, floor.as_f64()));
            for (what, key, scale) in [
                ("bytes on the wire (MB)", "wire_bytes", 1e-6),
                ("time (s)", "seconds", 1.0),
            ] {
                page.chart(report::lines_over_x(
                    &format!("{scenario}: {what} against the link rate"),
                    Axes {
                        x_label: "link rate (kbit/s)",
                        y_label: what,
                        x: Scale::Log,
                        y: Scale::Linear,
                    },
                    &series(scenario, rows, key, scale),
                ));
            }
        }
        page.note("Bytes on the wire: what the link's proxy relayed both ways, from connecting to the pull's return (handshake and open included). Time: from connecting to every document durable on the target. Savings are against compression off in the same run; the LAN link is left out of the charts (no rate).");
    }
    let large = &result["large"];
    if !large.is_null() {
        page.table(large_table(large));
    }
    report::write(out, result, &page)
}

fn corpus(c: &Value) -> Table {
    let mut t = Table::new(
        "Corpus",
        &["", "documents", "bytes", "zstd -19 (best-compressed)"],
    );
    t.row(vec![
        "replica creation".into(),
        c["documents"].to_string(),
        c["bytes"].to_string(),
        c["best_compressed_bytes"].to_string(),
    ]);
    t.row(vec![
        "incremental (added)".into(),
        c["added_documents"].to_string(),
        c["added_bytes"].to_string(),
        c["added_best_compressed_bytes"].to_string(),
    ]);
    t
}

fn scenario_table(scenario: &str, rows: &[Value], floor: Option<f64>) -> Table {
    let mut t = Table::new(
        &format!("Scenario: {scenario}"),
        &[
            "link",
            "variant",
            "time (s)",
            "bytes on the wire",
            "documents",
            "round trips",
            "time saved",
            "bytes saved",
            "wire ÷ best-compressed",
            "wire ÷ rate (s)",
        ],
    );
    for r in rows.iter().filter(|r| r["scenario"] == scenario) {
        let (link, variant) = (text(&r["link"]), text(&r["variant"]));
        if let Some(why) = r["unavailable"].as_str() {
            t.row(vec![link, variant, format!("unavailable: {why}")]);
            continue;
        }
        let wire = r["wire_bytes"].as_f64().unwrap_or(0.0);
        t.row(vec![
            link,
            variant,
            num(&r["seconds"], 2),
            r["wire_bytes"].to_string(),
            r["pull"]["documents"].to_string(),
            r["pull"]["round_trips"].to_string(),
            pct(&r["time_saved_percent"]),
            pct(&r["bytes_saved_percent"]),
            floor.map_or("–".into(), |f| format!("{:.2}", wire / f)),
            num(&r["link_seconds"], 1),
        ]);
    }
    t
}

fn series(scenario: &str, rows: &[Value], key: &str, scale: f64) -> Vec<Series> {
    let mut variants: Vec<String> = Vec::new();
    for r in rows {
        let v = text(&r["variant"]);
        if !variants.contains(&v) {
            variants.push(v);
        }
    }
    variants
        .into_iter()
        .map(|v| {
            let points = rows
                .iter()
                .filter(|r| r["scenario"] == scenario && r["variant"] == v.as_str())
                .filter_map(|r| {
                    let rate = r["link"].as_str()?.parse::<super::link::Link>().ok()?;
                    let kbit = rate.bits_per_s? as f64 / 1e3;
                    Some((kbit, r[key].as_f64()? * scale))
                })
                .collect();
            Series::new(v, points)
        })
        .collect()
}

fn large_table(l: &Value) -> Table {
    let mut t = Table::new(
        &format!("Large database: {} documents of 1 KiB", l["documents"]),
        &["figure", "measured", "target"],
    );
    t.row(vec![
        "LAN replica creation, documents/s (durable on the target)".into(),
        num(&l["create_documents_per_s"], 0),
        "≥ 20000".into(),
    ]);
    t.row(vec![
        "LAN replica creation, documents per CPU second (both processes)".into(),
        num(&l["create_documents_per_cpu_s"], 0),
        "–".into(),
    ]);
    t.row(vec![
        "LAN replica creation, seconds".into(),
        num(&l["create"]["seconds"], 2),
        "–".into(),
    ]);
    t.row(vec![
        "nothing changed: round trips".into(),
        l["nothing_changed"]["round_trips"].to_string(),
        "≤ 4".into(),
    ]);
    t.row(vec![
        "nothing changed: bytes in the session".into(),
        l["nothing_changed"]["session_wire_bytes"].to_string(),
        "≤ 2048".into(),
    ]);
    t.row(vec![
        "nothing changed: bytes on the connection (with handshake and open)".into(),
        l["nothing_changed"]["wire_bytes"].to_string(),
        "–".into(),
    ]);
    t
}

fn text(v: &Value) -> String {
    v.as_str().unwrap_or("?").to_string()
}

fn num(v: &Value, decimals: usize) -> String {
    v.as_f64().map_or("–".into(), |x| format!("{x:.decimals$}"))
}

fn pct(v: &Value) -> String {
    v.as_f64().map_or("–".into(), |x| format!("{x:.0}%"))
}
