//! Load workloads (`folio load ...`).
//!
//! `commit` measures the raw commit path: N clients each updating its own
//! 1 KiB document as fast as it can, with the log on (group commit) and off
//! (unlogged: every commit forces its pages), next to what the disk itself
//! can do — sequential 4 KiB and 64 KiB writes each followed by fdatasync —
//! measured in the same run on the same file system. Figures are medians
//! over repeated rounds; the JSON result keeps every round.

use crate::cli::Args;
use hdrhistogram::Histogram;
use nsf::{Engine, EngineConfig, Item, ItemUpdate, ItemValue};
use rand::{Rng, SeedableRng};
use serde_json::json;
use std::fs::OpenOptions;
use std::io::Write;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use storage::backend::{FaultBackend, FaultOp, FsBackend};
use translog::LogConfig;

#[derive(clap::Subcommand, Debug)]
pub enum LoadCmd {
    /// Raw commit rate: concurrent single-document updates, log on vs off.
    Commit(CommitArgs),
    /// Very large folders and views: folder operations against size, and a
    /// rebuild of a sorted view over every document.
    Bigview(crate::bigview::BigviewArgs),
    /// Parallel documents with attachments, over the network and embedded.
    Docs(crate::docsload::DocsArgs),
    /// Response times of small operations against 1, 30, 100 clients.
    Pool(crate::docsload::PoolArgs),
    /// Tens of thousands of databases on one server: create, read, list,
    /// kill and restart, with the server's memory and descriptors sampled.
    Dbs(crate::dbsload::DbsArgs),
}

#[derive(clap::Args, Debug)]
pub struct CommitArgs {
    /// Comma-separated client counts.
    #[arg(long, default_value = "1,8,32", value_delimiter = ',')]
    pub clients: Vec<usize>,
    /// Seconds per measurement.
    #[arg(long, default_value_t = 5.0)]
    pub seconds: f64,
    /// Rounds per variant (figures are medians over rounds).
    #[arg(long, default_value_t = 3)]
    pub rounds: usize,
    /// Databases the clients are spread over (1 = all in one file).
    #[arg(long, default_value_t = 1)]
    pub databases: usize,
    /// Bytes of the document body.
    #[arg(long, default_value_t = 1024)]
    pub doc_size: usize,
    /// Directory for the temporary data (default: the system temp dir).
    #[arg(long)]
    pub dir: Option<PathBuf>,
    /// Where result.json is written.
    #[arg(long, default_value = "folio-load-commit")]
    pub out: PathBuf,
    /// Also run PostgreSQL's pgbench (single-row 1 KiB inserts, same client
    /// counts, default durable settings) in a throwaway cluster.
    #[arg(long)]
    pub pgbench: bool,
}

pub fn run(cmd: &LoadCmd, args: &Args) -> Result<(), String> {
    match cmd {
        LoadCmd::Docs(a) => crate::docsload::run(a, args),
        LoadCmd::Pool(a) => crate::docsload::pool(a),
        LoadCmd::Commit(a) => commit(a),
        LoadCmd::Bigview(a) => crate::bigview::run(a),
        LoadCmd::Dbs(a) => crate::dbsload::run(a, args),
    }
}

/// One measured variant.
#[derive(Clone, Debug, serde::Serialize)]
struct Measured {
    commits_per_sec: f64,
    fsyncs_per_sec: f64,
    p50_us: u64,
    p99_us: u64,
    max_us: u64,
    log_bytes_per_commit: f64,
}

fn commit(a: &CommitArgs) -> Result<(), String> {
    let base = match &a.dir {
        Some(d) => tempfile::tempdir_in(d),
        None => tempfile::tempdir(),
    }
    .map_err(|e| format!("cannot create a temporary directory: {e}"))?;
    let secs = Duration::from_secs_f64(a.seconds);
    let mut rows = Vec::new();
    let disk4 = disk_rate(base.path(), 4096, secs)?;
    let disk64 = disk_rate(base.path(), 65536, secs)?;
    println!("disk: 4 KiB write+fdatasync {disk4:.0}/s, 64 KiB write+fdatasync {disk64:.0}/s");
    println!(
        "{:>7} {:>9} {:>12} {:>10} {:>9} {:>9} {:>12}",
        "clients", "log", "commits/s", "fsyncs/s", "p50 µs", "p99 µs", "log B/commit"
    );
    for &c in &a.clients {
        let mut logged = Vec::new();
        let mut unlogged = Vec::new();
        for round in 0..a.rounds {
            logged.push(run_variant(base.path(), a, c, true, round)?);
            unlogged.push(run_variant(base.path(), a, c, false, round)?);
        }
        let (l, u) = (median(&logged), median(&unlogged));
        for (name, m) in [("on", &l), ("off", &u)] {
            println!(
                "{:>7} {:>9} {:>12.0} {:>10.0} {:>9} {:>9} {:>12.0}",
                c,
                name,
                m.commits_per_sec,
                m.fsyncs_per_sec,
                m.p50_us,
                m.p99_us,
                m.log_bytes_per_commit
            );
        }
        println!(
            "{:>7} ratio log on/off: {:.1}x commits/s; commits per log fsync {:.1}",
            c,
            l.commits_per_sec / u.commits_per_sec.max(1e-9),
            l.commits_per_sec / l.fsyncs_per_sec.max(1e-9)
        );
        rows.push(json!({"clients": c, "log_on": l, "log_off": u, "rounds_on": logged, "rounds_off": unlogged,
            "ratio_on_off": l.commits_per_sec / u.commits_per_sec.max(1e-9)}));
    }
    let pg = if a.pgbench {
        Some(pgbench::run(&a.clients, a.seconds, base.path())?)
    } else {
        None
    };
    if let Some(pg) = &pg {
        for (c, tps) in pg {
            let ours = rows
                .iter()
                .find(|r| r["clients"] == *c)
                .and_then(|r| r["log_on"]["commits_per_sec"].as_f64())
                .unwrap_or(0.0);
            println!(
                "{c:>7} pgbench inserts/s {tps:.0}; Folio log on / PostgreSQL: {:.2}x",
                ours / tps.max(1e-9)
            );
        }
    }
    let result = json!({
        "workload": "commit",
        "pgbench": pg.map(|v| v.into_iter().map(|(c, tps)| json!({"clients": c, "tps": tps})).collect::<Vec<_>>()),
        "settings": {"clients": a.clients, "seconds": a.seconds, "rounds": a.rounds, "databases": a.databases, "doc_size": a.doc_size},
        "machine": machine(),
        "disk": {"write4k_fdatasync_per_sec": disk4, "write64k_fdatasync_per_sec": disk64},
        "results": rows,
    });
    std::fs::create_dir_all(&a.out).map_err(|e| format!("{}: {e}", a.out.display()))?;
    let path = a.out.join("result.json");
    std::fs::write(
        &path,
        serde_json::to_string_pretty(&result).unwrap_or_default(),
    )
    .map_err(|e| format!("{}: {e}", path.display()))?;
    println!("wrote {}", path.display());
    Ok(())
}

fn median(ms: &[Measured]) -> Measured {
    let mut v = ms.to_vec();
    v.sort_by(|a, b| a.commits_per_sec.total_cmp(&b.commits_per_sec));
    v[v.len() / 2].clone()
}

pub(crate) fn machine() -> serde_json::Value {
    let read = |p: &str| std::fs::read_to_string(p).unwrap_or_default();
    let mem_kib: u64 = read("/proc/meminfo")
        .lines()
        .find(|l| l.starts_with("MemTotal:"))
        .and_then(|l| l.split_whitespace().nth(1)?.parse().ok())
        .unwrap_or(0);
    json!({
        "cores": std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1),
        "ram_bytes": mem_kib * 1024,
        "kernel": read("/proc/sys/kernel/osrelease").trim(),
    })
}

/// The disk's own rate of `size`-byte sequential writes each followed by
/// fdatasync, over a preallocated file (as the log's extents are).
fn disk_rate(dir: &Path, size: usize, secs: Duration) -> Result<f64, String> {
    let path = dir.join(format!("disk-probe-{size}"));
    let f = OpenOptions::new()
        .create(true)
        .truncate(true)
        .read(true)
        .write(true)
        .open(&path)
        .map_err(|e| e.to_string())?;
    let span = 64u64 << 20;
    f.set_len(span).map_err(|e| e.to_string())?;
    let buf = vec![0x5au8; size];
    let mut off = 0u64;
    let mut done = 0u64;
    let start = Instant::now();
    while start.elapsed() < secs {
        f.write_all_at(&buf, off).map_err(|e| e.to_string())?;
        f.sync_data().map_err(|e| e.to_string())?;
        off = (off + size as u64) % (span - size as u64);
        done += 1;
    }
    let rate = done as f64 / start.elapsed().as_secs_f64();
    let _ = std::fs::remove_file(&path);
    Ok(rate)
}

fn body(rng: &mut impl Rng, n: usize) -> String {
    (0..n).map(|_| rng.gen_range(b'a'..=b'z') as char).collect()
}

fn run_variant(
    base: &Path,
    a: &CommitArgs,
    clients: usize,
    logged: bool,
    round: usize,
) -> Result<Measured, String> {
    let dir = base.join(format!(
        "c{clients}-{}-{round}",
        if logged { "on" } else { "off" }
    ));
    let mut cfg = EngineConfig::new(&dir);
    cfg.buffer_pool_size = 256 << 20;
    if logged {
        cfg.log = Some(LogConfig::new(dir.join("translog")));
    }
    // A fault backend with no rules: it only counts operations, so fsyncs
    // are measured, not assumed, in both modes.
    let disk = Arc::new(FaultBackend::new(Arc::new(FsBackend)));
    let (engine, _) = Engine::open(disk.clone(), cfg).map_err(|e| e.to_string())?;
    let engine = Arc::new(engine);
    let mut targets = Vec::new();
    let mut rng = rand::rngs::StdRng::seed_from_u64(round as u64);
    for d in 0..a.databases {
        engine
            .create_database(&format!("bench/c{d}.fdb"), "commit benchmark")
            .map_err(|e| e.to_string())?;
    }
    for c in 0..clients {
        let path = format!("bench/c{}.fdb", c % a.databases);
        let db = engine.open_database(&path).map_err(|e| e.to_string())?;
        let meta = db
            .create(vec![Item {
                name: "Body".into(),
                value: ItemValue::Text(body(&mut rng, a.doc_size)),
            }])
            .map_err(|e| e.to_string())?;
        targets.push((db, meta.unid));
    }
    let before = engine.log_info();
    let syncs_before = disk.count(FaultOp::Sync);
    let stop = Arc::new(AtomicBool::new(false));
    let start = Instant::now();
    let handles: Vec<_> = targets
        .into_iter()
        .enumerate()
        .map(|(i, (db, unid))| {
            let (stop, size) = (stop.clone(), a.doc_size);
            std::thread::spawn(move || -> Result<(u64, Histogram<u64>), String> {
                let mut h = Histogram::<u64>::new_with_bounds(1, 60_000_000, 3)
                    .map_err(|e| e.to_string())?;
                // Bodies are made before timing starts, so the load generator
                // does not compete with the server for the two cores.
                let mut rng = rand::rngs::StdRng::seed_from_u64(i as u64 + 1000);
                let bodies: Vec<String> = (0..16).map(|_| body(&mut rng, size)).collect();
                let mut n = 0;
                while !stop.load(Ordering::Relaxed) {
                    let text = bodies[n as usize % bodies.len()].clone();
                    let item = Item {
                        name: "Body".into(),
                        value: ItemValue::Text(text),
                    };
                    let t = Instant::now();
                    db.update(unid, vec![ItemUpdate::Set(item)], None, false)
                        .map_err(|e| e.to_string())?;
                    h.saturating_record(t.elapsed().as_micros() as u64);
                    n += 1;
                }
                Ok((n, h))
            })
        })
        .collect();
    std::thread::sleep(Duration::from_secs_f64(a.seconds));
    stop.store(true, Ordering::Relaxed);
    let mut total = 0;
    let mut hist =
        Histogram::<u64>::new_with_bounds(1, 60_000_000, 3).map_err(|e| e.to_string())?;
    for h in handles {
        let (n, hh) = h
            .join()
            .map_err(|_| "client thread panicked".to_string())??;
        total += n;
        hist.add(hh).map_err(|e| e.to_string())?;
    }
    let elapsed = start.elapsed().as_secs_f64();
    let after = engine.log_info();
    let all_syncs = (disk.count(FaultOp::Sync) - syncs_before) as f64;
    // Logged: the log's own fdatasyncs (what group commit shares); database
    // file syncs by the flusher happen off the commit path. Unlogged: every
    // fdatasync, all of them on the commit path.
    let (fsyncs, log_bytes) = match (before, after) {
        (Some(b), Some(a)) => (
            (a.fsyncs - b.fsyncs) as f64,
            (a.bytes_written - b.bytes_written) as f64,
        ),
        _ => (all_syncs, 0.0),
    };
    if let Ok(e) = Arc::try_unwrap(engine) {
        e.close().map_err(|e| e.to_string())?;
    }
    let _ = std::fs::remove_dir_all(&dir);
    let _ = std::io::stdout().flush();
    Ok(Measured {
        commits_per_sec: total as f64 / elapsed,
        fsyncs_per_sec: fsyncs / elapsed,
        p50_us: hist.value_at_quantile(0.5),
        p99_us: hist.value_at_quantile(0.99),
        max_us: hist.max(),
        log_bytes_per_commit: if total > 0 {
            log_bytes / total as f64
        } else {
            0.0
        },
    })
}

/// PostgreSQL's pgbench, run side by side with the commit workload.
mod pgbench {
    use std::path::Path;
    use std::process::Command;

    /// Runs `program args` as the `postgres` user when we are root (the
    /// server refuses to run as root), else as ourselves.
    fn as_postgres(program: &str, args: &[&str]) -> Command {
        // SAFETY: geteuid has no preconditions.
        if unsafe { libc::geteuid() } == 0 {
            let mut c = Command::new("runuser");
            c.args(["-u", "postgres", "--", program]).args(args);
            c
        } else {
            let mut c = Command::new(program);
            c.args(args);
            c
        }
    }

    fn check(cmd: &mut Command, what: &str) -> Result<String, String> {
        let out = cmd.output().map_err(|e| format!("{what}: {e}"))?;
        if !out.status.success() {
            return Err(format!(
                "{what} failed: {}",
                String::from_utf8_lossy(&out.stderr).trim()
            ));
        }
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    }

    /// inserts/s for each client count.
    pub fn run(clients: &[usize], seconds: f64, base: &Path) -> Result<Vec<(usize, f64)>, String> {
        let dir = base.join("pg");
        std::fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
        let d = dir
            .to_str()
            .ok_or("temporary path is not UTF-8")?
            .to_string();
        // SAFETY: geteuid has no preconditions.
        if unsafe { libc::geteuid() } == 0 {
            check(Command::new("chown").args(["-R", "postgres", &d]), "chown")?;
        }
        let data = format!("{d}/data");
        check(
            &mut as_postgres("initdb", &["-D", &data, "-A", "trust", "-U", "postgres"]),
            "initdb",
        )?;
        let opts = format!("-p 55432 -k {d} -c listen_addresses=''");
        check(
            &mut as_postgres(
                "pg_ctl",
                &[
                    "-D",
                    &data,
                    "-o",
                    &opts,
                    "-w",
                    "-l",
                    &format!("{d}/log"),
                    "start",
                ],
            ),
            "pg_ctl start",
        )?;
        let result = measure(clients, seconds, &d);
        let _ = check(
            &mut as_postgres("pg_ctl", &["-D", &data, "-m", "fast", "-w", "stop"]),
            "pg_ctl stop",
        );
        result
    }

    fn measure(clients: &[usize], seconds: f64, d: &str) -> Result<Vec<(usize, f64)>, String> {
        let conn = ["-h", d, "-p", "55432", "-U", "postgres"];
        let mut psql = Command::new("psql");
        psql.args(conn).args([
            "-q",
            "-c",
            "CREATE TABLE t (id bigserial PRIMARY KEY, body text)",
            "postgres",
        ]);
        check(&mut psql, "create table")?;
        let script = format!("{d}/insert.sql");
        std::fs::write(
            &script,
            "INSERT INTO t (body) VALUES (repeat('x', 1024));\n",
        )
        .map_err(|e| e.to_string())?;
        let secs = (seconds.ceil() as u64).max(1).to_string();
        let mut out = Vec::new();
        for &c in clients {
            let (cs, js) = (c.to_string(), c.min(2).to_string());
            let mut cmd = Command::new("pgbench");
            cmd.args(conn).args([
                "-n", "-f", &script, "-c", &cs, "-j", &js, "-T", &secs, "postgres",
            ]);
            let text = check(&mut cmd, "pgbench")?;
            let tps = text
                .lines()
                .find(|l| l.starts_with("tps ="))
                .and_then(|l| l.split_whitespace().nth(2)?.parse::<f64>().ok())
                .ok_or_else(|| format!("no tps line in pgbench output: {text}"))?;
            out.push((c, tps));
        }
        Ok(out)
    }
}
