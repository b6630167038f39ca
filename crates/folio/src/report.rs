//! `report.html` for the load workloads: self-contained HTML with inline
//! SVG charts, so a result can be opened anywhere without a network.

use std::fmt::Write;
use std::path::Path;

/// One line of a chart: a name and its (x, y) points.
pub struct Series {
    pub name: String,
    pub points: Vec<(f64, f64)>,
}

const COLORS: [&str; 8] = [
    "#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#17becf",
];

fn escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

/// A tick label with as many decimals as the axis range needs.
fn tick(y: f64, top: f64) -> String {
    let decimals = match top {
        t if t >= 100.0 => 0,
        t if t >= 1.0 => 2,
        _ => 3,
    };
    format!("{y:.decimals$}")
}

/// A line chart; with `log_x` the x axis is logarithmic.
pub fn line_chart(
    title: &str,
    x_label: &str,
    y_label: &str,
    series: &[Series],
    log_x: bool,
) -> String {
    let (w, h, l, r, t, b) = (760.0, 400.0, 90.0, 190.0, 40.0, 50.0);
    let fx = |x: f64| if log_x { x.max(1e-9).log10() } else { x };
    let pts = series.iter().flat_map(|s| s.points.iter());
    let (mut x0, mut x1, mut y1) = (f64::MAX, f64::MIN, 0.0f64);
    for &(x, y) in pts {
        x0 = x0.min(fx(x));
        x1 = x1.max(fx(x));
        y1 = y1.max(y);
    }
    if x0 >= x1 {
        // One x value: put it in the middle.
        x0 -= 1.0;
        x1 += 2.0;
    }
    let y1 = if y1 <= 0.0 { 1.0 } else { y1 * 1.1 };
    let px = |x: f64| l + (fx(x) - x0) / (x1 - x0) * (w - l - r);
    let py = |y: f64| h - b - y / y1 * (h - t - b);
    let mut s = String::new();
    let _ = write!(
        s,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" font-family="sans-serif" font-size="12">"#
    );
    let _ = write!(
        s,
        r#"<text x="{}" y="20" font-size="15" text-anchor="middle">{}</text>"#,
        (w - r + l) / 2.0,
        escape(title)
    );
    let _ = write!(
        s,
        r#"<line x1="{l}" y1="{}" x2="{}" y2="{}" stroke="black"/>"#,
        h - b,
        w - r,
        h - b
    );
    let _ = write!(
        s,
        r#"<line x1="{l}" y1="{t}" x2="{l}" y2="{}" stroke="black"/>"#,
        h - b
    );
    for i in 0..=4 {
        let y = y1 * f64::from(i) / 4.0;
        let _ = write!(
            s,
            r##"<line x1="{l}" y1="{0}" x2="{1}" y2="{0}" stroke="#ddd"/><text x="{2}" y="{0}" text-anchor="end" dy="4">{3}</text>"##,
            py(y),
            w - r,
            l - 6.0,
            tick(y, y1)
        );
    }
    let mut xs: Vec<f64> = series
        .iter()
        .flat_map(|s| s.points.iter().map(|p| p.0))
        .collect();
    xs.sort_by(f64::total_cmp);
    xs.dedup();
    for x in xs {
        let _ = write!(
            s,
            r#"<text x="{}" y="{}" text-anchor="middle">{}</text>"#,
            px(x),
            h - b + 16.0,
            x
        );
    }
    let _ = write!(
        s,
        r#"<text x="{}" y="{}" text-anchor="middle">{}</text>"#,
        (w - r + l) / 2.0,
        h - 10.0,
        escape(x_label)
    );
    let _ = write!(
        s,
        r#"<text x="16" y="{}" transform="rotate(-90 16 {})" text-anchor="middle">{}</text>"#,
        h / 2.0,
        h / 2.0,
        escape(y_label)
    );
    for (i, se) in series.iter().enumerate() {
        let c = COLORS[i % COLORS.len()];
        let path: Vec<String> = se
            .points
            .iter()
            .map(|&(x, y)| format!("{:.1},{:.1}", px(x), py(y)))
            .collect();
        let _ = write!(
            s,
            r#"<polyline fill="none" stroke="{c}" stroke-width="2" points="{}"/>"#,
            path.join(" ")
        );
        for &(x, y) in &se.points {
            let _ = write!(
                s,
                r#"<circle cx="{:.1}" cy="{:.1}" r="3" fill="{c}"/>"#,
                px(x),
                py(y)
            );
        }
        let ly = t + 18.0 * i as f64;
        let _ = write!(
            s,
            r#"<rect x="{}" y="{}" width="12" height="12" fill="{c}"/><text x="{}" y="{}">{}</text>"#,
            w - r + 12.0,
            ly,
            w - r + 30.0,
            ly + 10.0,
            escape(&se.name)
        );
    }
    s.push_str("</svg>");
    s
}

/// A table of figures: the first thing a report shows.
pub struct Table {
    pub caption: String,
    pub header: Vec<String>,
    pub rows: Vec<Vec<String>>,
}

impl Table {
    pub fn new(caption: &str, header: &[&str]) -> Table {
        Table {
            caption: caption.into(),
            header: header.iter().map(|h| h.to_string()).collect(),
            rows: Vec::new(),
        }
    }

    pub fn row(&mut self, cells: Vec<String>) {
        self.rows.push(cells);
    }

    fn html(&self) -> String {
        let mut s = format!("<table><caption>{}</caption><tr>", escape(&self.caption));
        for h in &self.header {
            let _ = write!(s, "<th>{}</th>", escape(h));
        }
        s.push_str("</tr>");
        for r in &self.rows {
            s.push_str("<tr>");
            for (i, c) in r.iter().enumerate() {
                let class = if i == 0 { "" } else { " class=\"n\"" };
                let _ = write!(s, "<td{class}>{}</td>", escape(c));
            }
            s.push_str("</tr>");
        }
        s.push_str("</table>");
        s
    }
}

const STYLE: &str = "body{font-family:sans-serif;margin:1.5em}\
table{border-collapse:collapse;margin:1em 0}caption{text-align:left;font-weight:bold;padding:.3em 0}\
table{font-size:13px}th,td{border:1px solid #ccc;padding:.2em .5em}th{background:#f0f0f0}td.n{text-align:right;font-variant-numeric:tabular-nums}\
p.note{color:#444}";

/// A whole report page: the summary tables first, then the charts, then
/// notes (settings, machine) as plain sentences.
pub fn page(title: &str, tables: &[Table], charts: &[String], notes: &[String]) -> String {
    let mut s = format!(
        "<!doctype html><html><head><meta charset=\"utf-8\"><title>{0}</title><style>{STYLE}</style></head><body><h1>{0}</h1>",
        escape(title)
    );
    for t in tables {
        s.push_str(&t.html());
    }
    for c in charts {
        s.push_str("<div>");
        s.push_str(c);
        s.push_str("</div>");
    }
    for n in notes {
        let _ = write!(s, "<p class=\"note\">{}</p>", escape(n));
    }
    s.push_str("</body></html>");
    s
}

/// The machine and settings of a result, as one sentence each.
pub fn notes(result: &serde_json::Value) -> Vec<String> {
    let m = &result["machine"];
    let mut out = vec![format!(
        "Machine: {} cores, {:.0} GiB RAM, kernel {}.",
        m["cores"],
        m["ram_bytes"].as_f64().unwrap_or(0.0) / f64::from(1u32 << 30),
        m["kernel"].as_str().unwrap_or("?")
    )];
    if let Some(settings) = result["settings"].as_object() {
        let list: Vec<String> = settings
            .iter()
            .filter(|(_, v)| !v.is_null())
            .map(|(k, v)| format!("{k} = {v}"))
            .collect();
        out.push(format!("Settings: {}.", list.join(", ")));
    }
    out.push("Every figure, round by round, is in result.json beside this page.".into());
    out
}

/// Writes `result.json` and `report.html` into `out`.
pub fn write(out: &Path, result: &serde_json::Value, html: &str) -> Result<(), String> {
    std::fs::create_dir_all(out).map_err(|e| format!("{}: {e}", out.display()))?;
    let json = out.join("result.json");
    std::fs::write(
        &json,
        serde_json::to_string_pretty(result).map_err(|e| e.to_string())?,
    )
    .map_err(|e| format!("{}: {e}", json.display()))?;
    let page = out.join("report.html");
    std::fs::write(&page, html).map_err(|e| format!("{}: {e}", page.display()))?;
    println!("wrote {} and {}", json.display(), page.display());
    Ok(())
}

/// The commit workload's report: one row per client count and variant,
/// then the comparison with PostgreSQL, then charts.
pub fn write_commit(
    out: &Path,
    result: &serde_json::Value,
    variants: &[(&str, &str)],
) -> Result<(), String> {
    let rows = result["results"].as_array().cloned().unwrap_or_default();
    let pg: Vec<(f64, f64)> = result["pgbench"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|p| {
            (
                p["clients"].as_f64().unwrap_or(0.0),
                p["tps"].as_f64().unwrap_or(0.0),
            )
        })
        .collect();
    let mut t = Table::new(
        "Commit rate (medians over rounds)",
        &[
            "clients",
            "variant",
            "commits/s",
            "fsyncs/s",
            "commits per fsync",
            "p50 µs",
            "p99 µs",
            "max µs",
            "log bytes/commit",
            "lock waits/commit",
            "context switches/commit",
            "CPU µs/commit",
        ],
    );
    let f = |v: &serde_json::Value, k: &str| v[k].as_f64().unwrap_or(0.0);
    for r in &rows {
        for (key, name) in variants {
            let m = &r[*key]["median"];
            t.row(vec![
                r["clients"].to_string(),
                name.to_string(),
                format!("{:.0}", f(m, "commits_per_sec")),
                format!("{:.0}", f(m, "fsyncs_per_sec")),
                format!("{:.1}", f(m, "commits_per_fsync")),
                format!("{:.0}", f(m, "p50_us")),
                format!("{:.0}", f(m, "p99_us")),
                format!("{:.0}", f(m, "max_us")),
                format!("{:.0}", f(m, "log_bytes_per_commit")),
                format!("{:.2}", f(m, "lock_waits_per_commit")),
                format!("{:.1}", f(m, "context_switches_per_commit")),
                format!("{:.0}", f(m, "cpu_us_per_commit")),
            ]);
        }
    }
    let mut tables = vec![t];
    if !pg.is_empty() {
        let mut header = vec!["clients".to_string(), "PostgreSQL inserts/s".to_string()];
        header.extend(variants.iter().map(|(_, n)| format!("{n} / PostgreSQL")));
        let mut c = Table {
            caption: "Against PostgreSQL pgbench (same run)".into(),
            header,
            rows: Vec::new(),
        };
        for r in &rows {
            let clients = r["clients"].as_f64().unwrap_or(0.0);
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
    let series = |metric: &str, scale: f64| -> Vec<Series> {
        let mut v: Vec<Series> = variants
            .iter()
            .map(|(key, name)| Series {
                name: name.to_string(),
                points: rows
                    .iter()
                    .map(|r| {
                        (
                            r["clients"].as_f64().unwrap_or(0.0),
                            f(&r[*key]["median"], metric) * scale,
                        )
                    })
                    .collect(),
            })
            .collect();
        if metric == "commits_per_sec" && !pg.is_empty() {
            v.push(Series {
                name: "PostgreSQL".into(),
                points: pg.clone(),
            });
        }
        v
    };
    let charts = vec![
        line_chart(
            "Commits per second against clients",
            "clients (log scale)",
            "commits/s",
            &series("commits_per_sec", 1.0),
            true,
        ),
        line_chart(
            "p99 commit latency against clients",
            "clients (log scale)",
            "p99 ms",
            &series("p99_us", 0.001),
            true,
        ),
    ];
    let html = page("Folio commit workload", &tables, &charts, &notes(result));
    write(out, result, &html)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn charts_are_well_formed_svg() {
        let svg = line_chart(
            "t<1>",
            "x",
            "y",
            &[Series {
                name: "a".into(),
                points: vec![(1000.0, 1.0), (1_000_000.0, 2.0)],
            }],
            true,
        );
        assert!(svg.starts_with("<svg") && svg.ends_with("</svg>"));
        assert!(svg.contains("t&lt;1&gt;") && svg.contains("polyline"));
    }
}
