//! `folio load bigview`: very large folders and views (WORKLOADS.md).
//!
//! One mail-like database grows through the folder sizes of the sweep
//! (1k, 10k, 80k, 200k, 1M by default); at each size the Inbox folder is
//! timed for: open collection, read the first and a middle page of 40
//! entries, find by key, add one document and update the collection, and
//! remove one — each repeated `--reps` times into HDR histograms. Then a
//! sorted 3-column view over all the documents is rebuilt, with the sort's
//! temporary files on the data disk and on tmpfs. The claim to check is
//! that every folder operation at 1M entries stays within 2× of its time
//! at 1k: medians from the same run.

use crate::report::{self, Axes, Page, Scale, Series, Table};
use hdrhistogram::Histogram;
use nsf::{Engine, EngineConfig, Item, ItemValue, Unid};
use rand::{Rng, SeedableRng};
use serde_json::json;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;
use storage::backend::FsBackend;
use translog::LogConfig;
use views::{ColumnDef, Start, ViewConfig, ViewDef, Views};

#[derive(clap::Args, Debug)]
pub struct BigviewArgs {
    /// Folder sizes to sweep, ascending.
    #[arg(
        long,
        default_value = "1000,10000,80000,200000,1000000",
        value_delimiter = ','
    )]
    pub sizes: Vec<u64>,
    /// Repetitions of each timed operation at each size.
    #[arg(long, default_value_t = 1000)]
    pub reps: usize,
    /// Documents the rebuild runs over (0: skip; default: the largest size).
    #[arg(long)]
    pub rebuild_docs: Option<u64>,
    /// `view_rebuild_memory` settings to rebuild with (each with its sort
    /// files on the data disk and on tmpfs).
    #[arg(long, default_value = "64MiB,256MiB", value_delimiter = ',')]
    pub rebuild_memory: Vec<String>,
    /// A tmpfs directory for the second rebuild (skipped if absent).
    #[arg(long, default_value = "/dev/shm")]
    pub tmpfs: PathBuf,
    /// Directory for the temporary data (default: the system temp dir).
    #[arg(long)]
    pub dir: Option<PathBuf>,
    #[arg(long, default_value = "folio-load-bigview")]
    pub out: PathBuf,
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
}

const OPS: [&str; 6] = [
    "open",
    "read_first_page",
    "read_middle_page",
    "find_by_key",
    "add_and_update",
    "remove",
];

fn hist() -> Histogram<u64> {
    Histogram::new_with_bounds(1, 60_000_000_000, 3).expect("valid histogram bounds")
}

fn err(e: impl std::fmt::Display) -> String {
    e.to_string()
}

/// A ~2 KiB mail message (stored inline in the note table).
fn message(rng: &mut impl Rng, i: u64) -> Vec<Item> {
    const WORDS: [&str; 12] = [
        "budget", "meeting", "report", "lunch", "release", "server", "folder", "review", "quarter",
        "travel", "invoice", "design",
    ];
    let subject: Vec<&str> = (0..4)
        .map(|_| WORDS[rng.gen_range(0..WORDS.len())])
        .collect();
    let body: String = (0..1500)
        .map(|_| char::from(b'a' + rng.gen_range(0..26u8)))
        .collect();
    vec![
        text("Form", "Memo"),
        text(
            "From",
            &format!("user{:04}@example.com", rng.gen_range(0..5000)),
        ),
        text("SendTo", "owner@example.com"),
        text("Subject", &format!("{} #{i}", subject.join(" "))),
        text("Body", &body),
    ]
}

fn text(name: &str, v: &str) -> Item {
    Item {
        name: name.into(),
        value: ItemValue::Text(v.into()),
    }
}

fn col(s: &str) -> Result<ColumnDef, String> {
    ColumnDef::parse(s).map_err(err)
}

pub fn run(a: &BigviewArgs) -> Result<(), String> {
    let base = match &a.dir {
        Some(d) => tempfile::tempdir_in(d),
        None => tempfile::tempdir(),
    }
    .map_err(|e| format!("cannot create a temporary directory: {e}"))?;
    let memories = a
        .rebuild_memory
        .iter()
        .map(|m| crate::config::parse_size(m).map(|n| n as usize))
        .collect::<Result<Vec<usize>, String>>()?;
    let rebuild_memory = *memories.first().ok_or("--rebuild-memory needs a size")?;
    let mut cfg = EngineConfig::new(base.path().join("data"));
    cfg.buffer_pool_size = 512 << 20;
    let mut lc = LogConfig::new(base.path().join("data/translog"));
    lc.max_size = 4 << 30;
    cfg.log = Some(lc);
    let (engine, _) = Engine::open(Arc::new(FsBackend), cfg).map_err(err)?;
    let sort_dir = base.path().join("sort");
    std::fs::create_dir_all(&sort_dir).map_err(err)?;
    let views = Views::new(
        engine.backend(),
        ViewConfig {
            rebuild_dir: sort_dir.clone(),
            rebuild_memory,
        },
    );
    let db = engine
        .create_database("bigview.fdb", "bigview")
        .map_err(err)?;
    views
        .create(
            &db,
            ViewDef::folder(
                "Inbox",
                vec![
                    col("Date=@Created:desc")?,
                    col("From=From")?,
                    col("Subject=Subject")?,
                ],
            ),
        )
        .map_err(err)?;
    let mut rng = rand::rngs::StdRng::seed_from_u64(a.seed);
    let mut members: Vec<Unid> = Vec::new();
    let mut rows = Vec::new();
    crate::progress::line(&format!(
        "{:>9} {:>18} {:>9} {:>9} {:>9} {:>9}",
        "entries", "operation", "p50 µs", "p95 µs", "p99 µs", "max µs"
    ));
    let rebuild_runs = if a.rebuild_docs == Some(0) {
        0
    } else {
        2 * memories.len()
    };
    let progress = crate::progress::Progress::new("bigview", (a.sizes.len() + rebuild_runs) as u64);
    for &size in &a.sizes {
        progress.step(&format!("folder of {size} entries"));
        let t = Instant::now();
        grow(&db, &views, &mut rng, &mut members, size)?;
        let grow_secs = t.elapsed().as_secs_f64();
        // Measure in steady state: the pages the growth dirtied are on
        // disk, not being flushed under the measured operations.
        engine.checkpoint().map_err(err)?;
        let h = measure(&db, &views, &mut rng, &mut members, a.reps)?;
        let mut ops = serde_json::Map::new();
        for (name, hh) in OPS.iter().zip(&h) {
            let us = |q: f64| hh.value_at_quantile(q) as f64 / 1000.0;
            crate::progress::line(&format!(
                "{:>9} {:>18} {:>9.1} {:>9.1} {:>9.1} {:>9.1}",
                size,
                name,
                us(0.5),
                us(0.95),
                us(0.99),
                hh.max() as f64 / 1000.0
            ));
            ops.insert(
                (*name).into(),
                json!({"p50_us": us(0.5), "p95_us": us(0.95), "p99_us": us(0.99),
                       "max_us": hh.max() as f64 / 1000.0, "count": hh.len()}),
            );
        }
        rows.push(json!({"entries": size, "populate_seconds": grow_secs, "operations": ops}));
    }
    let ratios = ratio_table(&rows);
    let rebuild_docs = a.rebuild_docs.unwrap_or(*a.sizes.last().unwrap_or(&0));
    let mut rebuilds = Vec::new();
    if rebuild_docs > 0 {
        grow_docs(&db, &mut rng, rebuild_docs)?;
        views
            .create(
                &db,
                ViewDef::view(
                    "By Author",
                    "SELECT Form = \"Memo\"",
                    vec![
                        col("From=From:asc")?,
                        col("Subject=Subject:asc")?,
                        col("Date=@Created:desc")?,
                    ],
                ),
            )
            .map_err(err)?;
        // The rebuild is measured alone, not against the flush of the
        // pages that creating a million documents left dirty.
        engine.checkpoint().map_err(err)?;
        let mut dirs = vec![("data disk", sort_dir.clone())];
        if a.tmpfs.is_dir() {
            let d = tempfile::tempdir_in(&a.tmpfs).map_err(err)?.keep();
            dirs.push(("tmpfs", d));
        }
        let runs = memories
            .iter()
            .flat_map(|&m| dirs.iter().map(move |(l, d)| (m, *l, d.clone())));
        for (rebuild_memory, label, dir) in runs {
            progress.step(&format!("rebuild, sort files on {label}"));
            let v = Views::new(
                engine.backend(),
                ViewConfig {
                    rebuild_dir: dir.clone(),
                    rebuild_memory,
                },
            );
            reset_peak_rss();
            let rss0 = rss_kib("VmRSS");
            let r = v.rebuild(&db, "By Author").map_err(err)?;
            let peak = rss_kib("VmHWM");
            crate::progress::line(&format!(
                "rebuild ({label}, {} MiB): {} documents in {:.2} s (scan {:.2}, load {:.2}, switch {:.2}) = {:.0} documents/s; sort runs {}, temp {} MiB, sort memory peak {} MiB, RSS peak {} MiB (+{} MiB)",
                rebuild_memory >> 20, r.documents, r.seconds, r.scan_seconds, r.load_seconds, r.switch_seconds, r.documents_per_sec, r.sort_runs, r.temp_bytes >> 20,
                r.sort_peak_memory >> 20, peak >> 10, peak.saturating_sub(rss0) >> 10
            ));
            rebuilds.push(
                json!({"sort_dir": label, "report": r, "rss_peak_kib": peak, "rss_before_kib": rss0,
                "rebuild_memory": rebuild_memory}),
            );
        }
        for (label, dir) in &dirs {
            if *label == "tmpfs" {
                let _ = std::fs::remove_dir_all(dir);
            }
        }
    }
    let result = json!({
        "workload": "bigview",
        "settings": {"sizes": a.sizes, "reps": a.reps, "rebuild_docs": rebuild_docs,
                     "rebuild_memory": memories, "seed": a.seed, "page_rows": 40},
        "machine": crate::load::machine(),
        "results": rows,
        "ratio_largest_to_smallest_p50": ratios,
        "rebuilds": rebuilds,
    });
    drop(db);
    engine.close().map_err(err)?;
    progress.finish();
    write_outputs(&a.out, &result)
}

/// Creates documents in batches (one transaction each) and adds them to
/// the Inbox until it holds `size` entries.
fn grow(
    db: &Arc<nsf::Database>,
    views: &Views,
    rng: &mut impl Rng,
    members: &mut Vec<Unid>,
    size: u64,
) -> Result<(), String> {
    while (members.len() as u64) < size {
        let n = (size - members.len() as u64).min(500);
        let unids = create_batch(db, rng, members.len() as u64, n)?;
        views.folder_add(db, "Inbox", &unids).map_err(err)?;
        members.extend(unids);
    }
    Ok(())
}

/// Adds documents outside the folder until the database holds `total`.
fn grow_docs(db: &Arc<nsf::Database>, rng: &mut impl Rng, total: u64) -> Result<(), String> {
    let mut have = db.info().map_err(err)?.note_count;
    while have < total {
        let n = (total - have).min(500);
        create_batch(db, rng, have, n)?;
        have += n;
    }
    Ok(())
}

fn create_batch(
    db: &Arc<nsf::Database>,
    rng: &mut impl Rng,
    first: u64,
    n: u64,
) -> Result<Vec<Unid>, String> {
    let docs: Vec<Vec<Item>> = (0..n).map(|i| message(rng, first + i)).collect();
    db.index_write(move |tx| {
        docs.into_iter()
            .map(|items| tx.create_note(items).map(|m| m.unid))
            .collect::<nsf::NsfResult<Vec<_>>>()
    })
    .map_err(err)
}

/// Times each operation `reps` times against the Inbox at its current size.
fn measure(
    db: &Arc<nsf::Database>,
    views: &Views,
    rng: &mut impl Rng,
    members: &mut Vec<Unid>,
    reps: usize,
) -> Result<Vec<Histogram<u64>>, String> {
    let mut h: Vec<Histogram<u64>> = OPS.iter().map(|_| hist()).collect();
    let mut rec = |i: usize, t: Instant| {
        let _ = h[i].record(t.elapsed().as_nanos().max(1) as u64);
    };
    let coll = views.open(db, "Inbox").map_err(err)?;
    let n = coll.count().map_err(err)?;
    for i in 0..reps {
        let t = Instant::now();
        let c = views.open(db, "Inbox").map_err(err)?;
        rec(0, t);
        let t = Instant::now();
        let first = c.read(&Start::Position(0), 40, false, false).map_err(err)?;
        rec(1, t);
        let t = Instant::now();
        let mid = c
            .read(&Start::Position(n / 2), 40, false, false)
            .map_err(err)?;
        rec(2, t);
        if first.len() != 40.min(n as usize) || mid.is_empty() {
            return Err(format!(
                "short read at {n} entries: {} and {}",
                first.len(),
                mid.len()
            ));
        }
        // The key to find: the Date column of a random entry (untimed).
        let key = key_at(&c, rng.gen_range(0..n))?;
        let t = Instant::now();
        let found = c.find(&key, false).map_err(err)?;
        rec(3, t);
        if found.is_none() {
            return Err(format!("key {key:?} not found"));
        }
        // Add one new document to the folder and bring the index up to date.
        let unid = create_batch(db, rng, 10_000_000 + i as u64, 1)?[0];
        let t = Instant::now();
        views.folder_add(db, "Inbox", &[unid]).map_err(err)?;
        views.update(db, "Inbox").map_err(err)?;
        rec(4, t);
        // Remove one (a random older member), keeping the size steady.
        let k = rng.gen_range(0..members.len());
        let victim = members.swap_remove(k);
        let t = Instant::now();
        views.folder_remove(db, "Inbox", &[victim]).map_err(err)?;
        rec(5, t);
        members.push(unid);
    }
    Ok(h)
}

fn key_at(c: &views::Collection<'_>, pos: u64) -> Result<String, String> {
    let rows = c
        .read(&Start::Position(pos), 1, false, false)
        .map_err(err)?;
    match rows.first() {
        Some(views::Row::Entry { columns, .. }) => match views::value_json(&columns[0]) {
            serde_json::Value::String(s) => Ok(s),
            other => Err(format!("unexpected Date column {other}")),
        },
        _ => Err(format!("no entry at position {pos}")),
    }
}

fn ratio_table(rows: &[serde_json::Value]) -> serde_json::Value {
    let (Some(lo), Some(hi)) = (rows.first(), rows.last()) else {
        return json!({});
    };
    let mut m = serde_json::Map::new();
    crate::progress::line(&format!(
        "ratio of p50 at {} entries to p50 at {} entries:",
        hi["entries"], lo["entries"]
    ));
    for op in OPS {
        let a = lo["operations"][op]["p50_us"].as_f64().unwrap_or(0.0);
        let b = hi["operations"][op]["p50_us"].as_f64().unwrap_or(0.0);
        let r = b / a.max(0.001);
        crate::progress::line(&format!("  {op:>18}: {r:.2}x"));
        m.insert(op.into(), json!(r));
    }
    serde_json::Value::Object(m)
}

/// Writes `result.json` and `report.html`: the tables, then the median
/// and the p99 of each folder operation against the folder's size.
fn write_outputs(out: &std::path::Path, result: &serde_json::Value) -> Result<(), String> {
    let mut page = Page::new("Folio bigview workload");
    page.table(report::settings_table(result));
    for t in summary_tables(result) {
        page.table(t);
    }
    let series = |field: &str| -> Vec<Series> {
        OPS.iter()
            .map(|op| {
                let points = result["results"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .map(|r| {
                        (
                            r["entries"].as_f64().unwrap_or(0.0),
                            r["operations"][op][field].as_f64().unwrap_or(0.0) / 1000.0,
                        )
                    })
                    .collect();
                Series::new(*op, points)
            })
            .collect()
    };
    for (field, what) in [("p50_us", "median"), ("p99_us", "p99")] {
        page.chart(report::lines_over_x(
            &format!("Inbox folder: {what} operation time against folder size"),
            Axes {
                x_label: "entries in the folder",
                y_label: &format!("{what}, ms (log scale)"),
                x: Scale::Log,
                y: Scale::Log,
            },
            &series(field),
        ));
    }
    page.note(
        "Each operation is timed --reps times at each size, after a checkpoint; \
         the claim to check is that every median at the largest size is within 2× of the smallest.",
    );
    report::write(out, result, &page)
}

/// Folder operations by size, the largest-to-smallest ratios, rebuilds.
fn summary_tables(result: &serde_json::Value) -> Vec<Table> {
    let mut ratio = Table::new(
        "Median at the largest size / median at the smallest (target: at most 2×)",
        &["operation", "ratio"],
    );
    for op in OPS {
        let r = result["ratio_largest_to_smallest_p50"][op]
            .as_f64()
            .unwrap_or(0.0);
        ratio.row(vec![op.into(), format!("{r:.2}×")]);
    }
    let mut ops = Table::new(
        "Inbox folder operations (µs)",
        &["entries", "operation", "p50", "p95", "p99", "max", "count"],
    );
    for r in result["results"].as_array().into_iter().flatten() {
        for op in OPS {
            let o = &r["operations"][op];
            let f = |k: &str| format!("{:.1}", o[k].as_f64().unwrap_or(0.0));
            ops.row(vec![
                r["entries"].to_string(),
                op.into(),
                f("p50_us"),
                f("p95_us"),
                f("p99_us"),
                f("max_us"),
                o["count"].to_string(),
            ]);
        }
    }
    let mut rebuilds = Table::new(
        "View rebuild",
        &[
            "sort files on",
            "sort memory MiB",
            "documents",
            "seconds",
            "documents/s",
            "temp MiB",
            "RSS peak MiB",
        ],
    );
    for b in result["rebuilds"].as_array().into_iter().flatten() {
        let r = &b["report"];
        let mib = |v: &serde_json::Value| format!("{:.0}", v.as_f64().unwrap_or(0.0) / 1048576.0);
        rebuilds.row(vec![
            b["sort_dir"].as_str().unwrap_or("?").into(),
            mib(&b["rebuild_memory"]),
            r["documents"].to_string(),
            format!("{:.2}", r["seconds"].as_f64().unwrap_or(0.0)),
            format!("{:.0}", r["documents_per_sec"].as_f64().unwrap_or(0.0)),
            mib(&r["temp_bytes"]),
            format!("{:.0}", b["rss_peak_kib"].as_f64().unwrap_or(0.0) / 1024.0),
        ]);
    }
    let mut tables = vec![ratio, ops];
    if !rebuilds.rows.is_empty() {
        tables.push(rebuilds);
    }
    tables
}

fn rss_kib(field: &str) -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .unwrap_or_default()
        .lines()
        .find(|l| l.starts_with(field))
        .and_then(|l| l.split_whitespace().nth(1)?.parse().ok())
        .unwrap_or(0)
}

/// Resets the peak-RSS counter so the rebuild's own peak is measured.
fn reset_peak_rss() {
    let _ = std::fs::write("/proc/self/clear_refs", "5");
}
