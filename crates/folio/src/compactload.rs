//! `folio load compact`: in-place compact under a commit load.
//!
//! Builds one database of `--docs` documents (bodies of `--doc-size`
//! bytes, so most notes live in overflow pages and a delete frees them),
//! deletes every other one, then measures the commit workload of `load
//! commit` (each of `--clients` clients updating its own document in the
//! same database) twice: for `--seconds` with nothing else running, and
//! while an in-place compact of that database runs (until it ends). It
//! reports the share of the free space compact returned (pages cut off
//! the file against the free and leaked pages before), bytes before and
//! after, the compact's time, and commit p50/p99 with and without it side
//! by side, in `result.json` under `--out`. Embedded, log on, on the real
//! file system (`--dir`).

use hdrhistogram::Histogram;
use nsf::{Engine, EngineConfig, Item, ItemUpdate, ItemValue};
use serde_json::json;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Instant;
use storage::backend::FsBackend;
use translog::LogConfig;

#[derive(clap::Args, Debug)]
pub struct CompactArgs {
    /// Documents created before half of them are deleted.
    #[arg(long, default_value_t = 20_000)]
    pub docs: usize,
    /// Bytes of each document's body.
    #[arg(long, default_value_t = 4096)]
    pub doc_size: usize,
    /// Concurrent committing clients.
    #[arg(long, default_value_t = 8)]
    pub clients: usize,
    /// Seconds of the baseline measurement (without compact).
    #[arg(long, default_value_t = 5.0)]
    pub seconds: f64,
    /// Directory for the temporary data (default: the system temp dir).
    #[arg(long)]
    pub dir: Option<PathBuf>,
    #[arg(long, default_value = "folio-load-compact")]
    pub out: PathBuf,
}

const DB: &str = "bench/compact.fdb";

fn text(v: String) -> Item {
    Item {
        name: "Body".into(),
        value: ItemValue::Text(v),
    }
}

fn body(i: usize, n: usize) -> String {
    let unit = format!("{i:08} ");
    unit.repeat(n / unit.len() + 1)[..n].to_string()
}

fn hist() -> Histogram<u64> {
    Histogram::<u64>::new_with_bounds(1, 60_000_000, 3).expect("valid histogram bounds")
}

/// Runs the clients until `stop` is set; returns commits and latencies.
fn load(
    db: &Arc<nsf::Database>,
    unids: &[nsf::Unid],
    doc_size: usize,
    stop: &AtomicBool,
) -> Result<(u64, Histogram<u64>), String> {
    std::thread::scope(|s| {
        let handles: Vec<_> = unids
            .iter()
            .enumerate()
            .map(|(c, unid)| {
                let db = db.clone();
                s.spawn(move || -> Result<(u64, Histogram<u64>), String> {
                    let bodies: Vec<String> = (0..8).map(|k| body(c * 8 + k, doc_size)).collect();
                    let mut h = hist();
                    let mut n = 0u64;
                    while !stop.load(Ordering::Relaxed) {
                        let t = Instant::now();
                        let item = text(bodies[n as usize % bodies.len()].clone());
                        db.update(*unid, vec![ItemUpdate::Set(item)], None, false)
                            .map_err(|e| e.to_string())?;
                        h.saturating_record(t.elapsed().as_micros() as u64);
                        n += 1;
                    }
                    Ok((n, h))
                })
            })
            .collect();
        let mut all = hist();
        let mut total = 0;
        for h in handles {
            let (n, hh) = h
                .join()
                .map_err(|_| "a client thread panicked".to_string())??;
            total += n;
            all.add(hh).map_err(|e| e.to_string())?;
        }
        Ok((total, all))
    })
}

fn figures(commits: u64, h: &Histogram<u64>, secs: f64) -> serde_json::Value {
    json!({
        "commits": commits,
        "seconds": secs,
        "commits_per_sec": commits as f64 / secs.max(1e-9),
        "p50_us": h.value_at_quantile(0.5),
        "p99_us": h.value_at_quantile(0.99),
        "max_us": h.max(),
    })
}

pub fn run(a: &CompactArgs) -> Result<(), String> {
    let base = a.dir.clone().unwrap_or_else(std::env::temp_dir);
    let dir = base.join(format!("folio-load-compact-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let mut cfg = EngineConfig::new(&dir);
    cfg.buffer_pool_size = 256 << 20;
    cfg.log = Some(LogConfig::new(dir.join("translog")));
    let (engine, _) = Engine::open(Arc::new(FsBackend), cfg).map_err(|e| e.to_string())?;
    let db = engine
        .create_database(DB, "compact benchmark")
        .map_err(|e| e.to_string())?;
    eprintln!("building {} documents of {} bytes", a.docs, a.doc_size);
    let mut all = Vec::with_capacity(a.docs);
    for i in 0..a.docs {
        let m = db
            .create(vec![text(body(i, a.doc_size))])
            .map_err(|e| e.to_string())?;
        all.push(m.unid);
    }
    for (i, u) in all.iter().enumerate() {
        if i % 2 == 1 {
            db.delete(*u, None, false).map_err(|e| e.to_string())?;
        }
    }
    engine.checkpoint().map_err(|e| e.to_string())?;
    let clients: Vec<nsf::Unid> = all
        .iter()
        .step_by(2)
        .take(a.clients.max(1))
        .copied()
        .collect();

    eprintln!("baseline: {} clients for {} s", clients.len(), a.seconds);
    let stop = AtomicBool::new(false);
    let t = Instant::now();
    let (base_n, base_h) = std::thread::scope(|s| {
        let run = s.spawn(|| load(&db, &clients, a.doc_size, &stop));
        std::thread::sleep(std::time::Duration::from_secs_f64(a.seconds));
        stop.store(true, Ordering::Relaxed);
        run.join()
            .map_err(|_| "the load panicked".to_string())
            .and_then(|r| r)
    })?;
    let base_secs = t.elapsed().as_secs_f64();

    eprintln!("in-place compact under the same load");
    let stop = AtomicBool::new(false);
    let t = Instant::now();
    let (report, (during_n, during_h)) = std::thread::scope(|s| {
        let run = s.spawn(|| load(&db, &clients, a.doc_size, &stop));
        let report = engine.compact(DB, false, false);
        stop.store(true, Ordering::Relaxed);
        let loaded = run
            .join()
            .map_err(|_| "the load panicked".to_string())
            .and_then(|r| r);
        Ok::<_, String>((report.map_err(|e| e.to_string())?, loaded?))
    })?;
    let during_secs = t.elapsed().as_secs_f64();
    let check = db.check().map_err(|e| e.to_string())?;
    let reclaimable = report.free_pages_before + report.leaked_pages;
    let returned = u64::from(report.pages_before.saturating_sub(report.pages_after));
    let result = json!({
        "workload": "compact",
        "docs": a.docs,
        "doc_size": a.doc_size,
        "clients": clients.len(),
        "compact": report,
        "compact_seconds": during_secs,
        "free_pages_before": reclaimable,
        "pages_returned": returned,
        "free_space_returned_pct": 100.0 * returned as f64 / (reclaimable.max(1)) as f64,
        "commit_without_compact": figures(base_n, &base_h, base_secs),
        "commit_during_compact": figures(during_n, &during_h, during_secs),
        "p99_ratio": during_h.value_at_quantile(0.99) as f64
            / (base_h.value_at_quantile(0.99).max(1)) as f64,
        "check_after": check,
    });
    drop(db);
    engine.shutdown().map_err(|e| e.to_string())?;
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&a.out).map_err(|e| format!("{}: {e}", a.out.display()))?;
    let text = serde_json::to_string_pretty(&result).map_err(|e| e.to_string())?;
    std::fs::write(a.out.join("result.json"), &text)
        .map_err(|e| format!("{}: {e}", a.out.display()))?;
    println!("{text}");
    Ok(())
}
