//! Load workloads (`folio load ...`).
//!
//! `commit` measures the raw commit path: N clients each updating its own
//! 1 KiB document as fast as it can. Embedded, with the log on (group
//! commit) and off (unlogged: every commit forces its pages); over the
//! native protocol against the server at `--server`; over HTTP against
//! the API at `--http` — next to what the disk itself can do (sequential
//! 4 KiB and 64 KiB writes each followed by fdatasync) and, with
//! `--pgbench`, PostgreSQL's single-row inserts, all in the same run.
//! Rounds alternate the variants, so a noisy neighbour hurts them alike;
//! figures are medians over rounds and the JSON result keeps every round.
//!
//! Beside each rate the run records what explains it: log fsyncs (so
//! commits per fsync), writer-lock waits, and the machine's context
//! switches and CPU time per commit (from /proc/stat, so they include the
//! load generator's own share).

use crate::cli::Args;
use crate::progress::Progress;

mod report;
use crate::remote::Endpoint;
use hdrhistogram::Histogram;
use nsf::{Engine, EngineConfig, Item, ItemUpdate, ItemValue};
use rand::{Rng, SeedableRng};
use serde_json::json;
use std::fs::OpenOptions;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};
use storage::backend::{FaultBackend, FaultOp, FsBackend};
use translog::LogConfig;

#[derive(clap::Subcommand, Debug)]
pub enum LoadCmd {
    /// Raw commit rate: concurrent single-document updates, embedded (log
    /// on and off), over the native protocol (--server) and HTTP (--http).
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
    /// Mail users: the seven-step mail script per user over the native
    /// protocol, with sends the router delivers (WORKLOADS.md "mail").
    ///
    /// Against --server: a mail box the server does not have yet is made
    /// by the first message deposited into it, and the server's router
    /// watches a new box from its next rescan, within 10 s (it waits on
    /// the boxes it knows). On a fresh server the first deliveries
    /// therefore come up to 10 s after the first send: a run shorter than
    /// that (one iteration of ramp-up plus --seconds) can end before the
    /// router has delivered anything. Send the server mail first (`folio
    /// mail send`) and wait for its delivery, or measure for longer.
    Mail(crate::mailload::MailArgs),
    /// Replica creation and incremental replication over simulated links
    /// (lan, 256kbit, 56kbit) with compression off, network, network +
    /// attachment (WORKLOADS.md "replication"); and a large database's
    /// LAN creation rate and nothing-changed rerun.
    Replication(crate::replload::ReplArgs),
    /// In-place compact of a database with half its documents deleted,
    /// under a commit load: free space returned, commit p50/p99 with and
    /// without compact.
    Compact(crate::compactload::CompactArgs),
    /// Online backup under a commit load against the disk's sequential
    /// bandwidth, roll-forward rate, restore to a time, fixup rate.
    Backup(crate::backupload::BackupArgs),
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
    /// Also measure over HTTP against the API at this URL
    /// (http://HOST:PORT), signed in as --user (the password, or an API
    /// token sent as a bearer token, in FOLIO_PASSWORD).
    #[arg(long)]
    pub http: Option<String>,
    /// Skip the embedded variants (network only; needs --server or --http).
    #[arg(long)]
    pub no_embedded: bool,
    /// Directory for the temporary data (default: the system temp dir).
    #[arg(long)]
    pub dir: Option<PathBuf>,
    /// Where result.json and report.html are written.
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
        LoadCmd::Pool(a) => crate::docsload::pool(a, args),
        LoadCmd::Commit(a) => commit(a, args),
        LoadCmd::Bigview(a) => crate::bigview::run(a),
        LoadCmd::Dbs(a) => crate::dbsload::run(a, args),
        LoadCmd::Mail(a) => crate::mailload::run(a, args),
        LoadCmd::Replication(a) => crate::replload::run(a, args),
        LoadCmd::Compact(a) => crate::compactload::run(a),
        LoadCmd::Backup(a) => crate::backupload::run(a),
    }
}

/// One measured round of one variant.
#[derive(Clone, Debug, Default, serde::Serialize)]
pub(crate) struct Measured {
    commits_per_sec: f64,
    fsyncs_per_sec: f64,
    commits_per_fsync: f64,
    p50_us: u64,
    p95_us: u64,
    p99_us: u64,
    max_us: u64,
    log_bytes_per_commit: f64,
    /// Share of writes that found the database's writer lock taken, and
    /// their mean wait (server-side figures; none over HTTP without them).
    lock_waits_per_commit: f64,
    lock_wait_mean_us: f64,
    /// Machine-wide, load generator included.
    context_switches_per_commit: f64,
    cpu_us_per_commit: f64,
}

/// How the clients reach the engine.
#[derive(Clone, Debug)]
enum Variant {
    Embedded { logged: bool },
    Native(Endpoint),
    Http(HttpTarget),
}

impl Variant {
    fn name(&self) -> &'static str {
        match self {
            Variant::Embedded { logged: true } => "embedded, log on",
            Variant::Embedded { logged: false } => "embedded, log off",
            Variant::Native(_) => "native (--server)",
            Variant::Http(_) => "HTTP (--http)",
        }
    }

    fn key(&self) -> &'static str {
        match self {
            Variant::Embedded { logged: true } => "embedded_log_on",
            Variant::Embedded { logged: false } => "embedded_log_off",
            Variant::Native(_) => "native",
            Variant::Http(_) => "http",
        }
    }
}

fn variants(a: &CommitArgs, args: &Args) -> Result<Vec<Variant>, String> {
    let mut v = Vec::new();
    if !a.no_embedded {
        v.push(Variant::Embedded { logged: true });
        v.push(Variant::Embedded { logged: false });
    }
    if let Some(server) = &args.server {
        v.push(Variant::Native(Endpoint::from_args(args, server)?));
    }
    if let Some(url) = &a.http {
        v.push(Variant::Http(HttpTarget::new(url, args)?));
    }
    if v.is_empty() {
        return Err(
            "--no-embedded leaves nothing to measure: add --server HOST:PORT or --http URL".into(),
        );
    }
    Ok(v)
}

fn commit(a: &CommitArgs, args: &Args) -> Result<(), String> {
    if a.clients.contains(&0) || a.rounds == 0 || a.databases == 0 || a.seconds <= 0.0 {
        return Err("--clients, --rounds, --databases and --seconds must be above zero".into());
    }
    let variants = variants(a, args)?;
    let base = match &a.dir {
        Some(d) => tempfile::tempdir_in(d),
        None => tempfile::tempdir(),
    }
    .map_err(|e| format!("cannot create a temporary directory: {e}"))?;
    let secs = Duration::from_secs_f64(a.seconds);
    let steps = 2 + a.clients.len() * a.rounds * variants.len() + usize::from(a.pgbench);
    let progress = Progress::new("commit", steps as u64);
    progress.step("disk: 4 KiB writes + fdatasync");
    let disk4 = disk_rate(base.path(), 4096, secs)?;
    progress.step("disk: 64 KiB writes + fdatasync");
    let disk64 = disk_rate(base.path(), 65536, secs)?;
    progress.line(&format!(
        "disk: 4 KiB write+fdatasync {disk4:.0}/s, 64 KiB write+fdatasync {disk64:.0}/s"
    ));
    progress.line(&format!(
        "{:>7} {:>18} {:>10} {:>9} {:>8} {:>8} {:>8} {:>9} {:>11} {:>9} {:>9}",
        "clients",
        "variant",
        "commits/s",
        "fsyncs/s",
        "c/fsync",
        "p50 µs",
        "p99 µs",
        "log B/c",
        "lock waits",
        "ctxsw/c",
        "cpu µs/c"
    ));
    let run_id = rand::random::<u32>();
    let mut rows = Vec::new();
    let mut latencies = Vec::new();
    for &c in &a.clients {
        let mut rounds: Vec<Vec<(Measured, Histogram<u64>)>> = vec![Vec::new(); variants.len()];
        for round in 0..a.rounds {
            for (i, v) in variants.iter().enumerate() {
                progress.step(&format!("{c} clients, {}, round {}", v.name(), round + 1));
                let measured = match v {
                    Variant::Embedded { logged } => {
                        run_embedded(base.path(), a, c, *logged, round)?
                    }
                    Variant::Native(e) => {
                        let tag = format!("{run_id:08x}-{}-c{c}-r{round}", v.key());
                        run_native(e, a, c, &tag)?
                    }
                    Variant::Http(h) => {
                        let tag = format!("{run_id:08x}-{}-c{c}-r{round}", v.key());
                        run_remote(h, a, c, &tag)?
                    }
                };
                rounds[i].push(measured);
            }
        }
        let mut row = serde_json::Map::new();
        row.insert("clients".into(), json!(c));
        let mut hists = Vec::new();
        for (v, rs) in variants.iter().zip(&rounds) {
            let ms: Vec<Measured> = rs.iter().map(|r| r.0.clone()).collect();
            let mid = median_round(&ms);
            let m = &ms[mid];
            progress.line(&format!(
                "{:>7} {:>18} {:>10.0} {:>9.0} {:>8.1} {:>8} {:>8} {:>9.0} {:>10.0}% {:>9.1} {:>9.0}",
                c,
                v.name(),
                m.commits_per_sec,
                m.fsyncs_per_sec,
                m.commits_per_fsync,
                m.p50_us,
                m.p99_us,
                m.log_bytes_per_commit,
                100.0 * m.lock_waits_per_commit,
                m.context_switches_per_commit,
                m.cpu_us_per_commit
            ));
            row.insert(v.key().into(), json!({"median": m, "rounds": ms}));
            hists.push(rs[mid].1.clone());
        }
        rows.push(serde_json::Value::Object(row));
        latencies.push(report::Latencies { clients: c, hists });
    }
    let pg = if a.pgbench {
        progress.step("PostgreSQL pgbench");
        Some(pgbench::run(&a.clients, a.seconds, base.path())?)
    } else {
        None
    };
    if let Some(pg) = &pg {
        for (c, tps) in pg {
            progress.line(&format!("{c:>7} {:>18} {tps:>10.0}", "PostgreSQL pgbench"));
        }
    }
    progress.finish();
    let result = json!({
        "workload": "commit",
        "pgbench": pg.map(|v| v.into_iter().map(|(c, tps)| json!({"clients": c, "tps": tps})).collect::<Vec<_>>()),
        "settings": {"clients": a.clients, "seconds": a.seconds, "rounds": a.rounds, "databases": a.databases,
                     "doc_size": a.doc_size, "server": args.server, "http": a.http,
                     "variants": variants.iter().map(Variant::key).collect::<Vec<_>>()},
        "machine": machine(),
        "disk": {"write4k_fdatasync_per_sec": disk4, "write64k_fdatasync_per_sec": disk64},
        "results": rows,
    });
    report::write(
        &a.out,
        &result,
        &variants
            .iter()
            .map(|v| (v.key(), v.name()))
            .collect::<Vec<_>>(),
        &latencies,
    )
}

/// The index of the median round by commit rate (rounds is never empty:
/// `--rounds` is at least 1).
fn median_round(ms: &[Measured]) -> usize {
    let mut order: Vec<usize> = (0..ms.len()).collect();
    order.sort_by(|&a, &b| ms[a].commits_per_sec.total_cmp(&ms[b].commits_per_sec));
    order[order.len() / 2]
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

/// Machine-wide context switches and busy CPU time, from /proc/stat.
#[derive(Clone, Copy, Default)]
struct MachineCounters {
    context_switches: u64,
    busy_ticks: u64,
}

impl MachineCounters {
    fn now() -> MachineCounters {
        let text = std::fs::read_to_string("/proc/stat").unwrap_or_default();
        let mut c = MachineCounters::default();
        for line in text.lines() {
            let mut f = line.split_whitespace();
            match f.next() {
                Some("ctxt") => {
                    c.context_switches = f.next().and_then(|v| v.parse().ok()).unwrap_or(0)
                }
                Some("cpu") => {
                    // user nice system idle iowait irq softirq steal: busy
                    // is everything but idle and iowait.
                    let v: Vec<u64> = f.filter_map(|x| x.parse().ok()).collect();
                    c.busy_ticks = v
                        .iter()
                        .enumerate()
                        .filter(|(i, _)| *i != 3 && *i != 4 && *i < 8)
                        .map(|(_, x)| x)
                        .sum();
                }
                _ => {}
            }
        }
        c
    }

    /// (context switches, CPU µs) per commit since `before`.
    fn per_commit(before: MachineCounters, commits: u64) -> (f64, f64) {
        let after = MachineCounters::now();
        // SAFETY: sysconf has no preconditions.
        let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) }.max(1) as f64;
        let n = commits.max(1) as f64;
        (
            after
                .context_switches
                .saturating_sub(before.context_switches) as f64
                / n,
            after.busy_ticks.saturating_sub(before.busy_ticks) as f64 * 1e6 / hz / n,
        )
    }
}

/// Server-side counters read before and after a remote measurement.
#[derive(Clone, Copy, Default)]
struct ServerCounters {
    fsyncs: u64,
    log_bytes: u64,
    lock_waits: u64,
    lock_wait_us: u64,
}

impl ServerCounters {
    fn from_stats(get: impl Fn(&str) -> Option<u64>) -> ServerCounters {
        ServerCounters {
            fsyncs: get("log.fsyncs").unwrap_or(0),
            log_bytes: get("log.bytes_written").unwrap_or(0),
            lock_waits: get("lock.waits").unwrap_or(0),
            lock_wait_us: get("lock.wait_us").unwrap_or(0),
        }
    }
}

/// What one client thread did.
type ClientRun = Result<(u64, Histogram<u64>), String>;

fn hist() -> Histogram<u64> {
    Histogram::<u64>::new_with_bounds(1, 60_000_000, 3).expect("valid histogram bounds")
}

/// Runs `clients` threads, each doing `one()` (its own closure) until the
/// time is up; the clock starts once every thread is ready.
fn drive<F>(clients: Vec<F>, seconds: f64) -> Result<(u64, Histogram<u64>, f64), String>
where
    F: FnMut() -> Result<(), String> + Send,
{
    let (total, h, elapsed, ()) = drive_while(clients, || {
        std::thread::sleep(Duration::from_secs_f64(seconds))
    })?;
    Ok((total, h, elapsed))
}

/// Runs `clients` threads, each doing `one()` (its own closure), while
/// `during` runs on the calling thread (the clock starts once every
/// thread is ready); returns commits, latencies, seconds and what
/// `during` returned.
pub(crate) fn drive_while<F, R>(
    clients: Vec<F>,
    during: impl FnOnce() -> R,
) -> Result<(u64, Histogram<u64>, f64, R), String>
where
    F: FnMut() -> Result<(), String> + Send,
{
    let stop = AtomicBool::new(false);
    let ready = Barrier::new(clients.len() + 1);
    std::thread::scope(|s| {
        let handles: Vec<_> = clients
            .into_iter()
            .map(|mut one| {
                let (stop, ready) = (&stop, &ready);
                s.spawn(move || -> ClientRun {
                    let mut h = hist();
                    ready.wait();
                    let mut n = 0;
                    while !stop.load(Ordering::Relaxed) {
                        let t = Instant::now();
                        one()?;
                        h.saturating_record(t.elapsed().as_micros() as u64);
                        n += 1;
                    }
                    Ok((n, h))
                })
            })
            .collect();
        ready.wait();
        let start = Instant::now();
        let out = during();
        stop.store(true, Ordering::Relaxed);
        let mut total = 0;
        let mut all = hist();
        let mut failure = None;
        for h in handles {
            match h.join() {
                Ok(Ok((n, hh))) => {
                    total += n;
                    all.add(hh).map_err(|e| e.to_string())?;
                }
                Ok(Err(e)) => failure = failure.or(Some(e)),
                Err(_) => failure = failure.or(Some("a client thread panicked".to_string())),
            }
        }
        let elapsed = start.elapsed().as_secs_f64();
        match failure {
            Some(e) => Err(e),
            None => Ok((total, all, elapsed, out)),
        }
    })
}

/// One variant's figures: rate and latency from the load generator, log
/// and lock figures from the counters' differences, and the machine's
/// context switches and CPU per commit (`per_commit`).
fn measured(
    total: u64,
    h: &Histogram<u64>,
    elapsed: f64,
    (context_switches_per_commit, cpu_us_per_commit): (f64, f64),
    (before, after): (ServerCounters, ServerCounters),
) -> Measured {
    let mut m = Measured {
        commits_per_sec: total as f64 / elapsed,
        p50_us: h.value_at_quantile(0.5),
        p95_us: h.value_at_quantile(0.95),
        p99_us: h.value_at_quantile(0.99),
        max_us: h.max(),
        context_switches_per_commit,
        cpu_us_per_commit,
        ..Measured::default()
    };
    let fsyncs = after.fsyncs.saturating_sub(before.fsyncs) as f64;
    let waits = after.lock_waits.saturating_sub(before.lock_waits) as f64;
    let n = total.max(1) as f64;
    m.fsyncs_per_sec = fsyncs / elapsed;
    m.commits_per_fsync = if fsyncs > 0.0 {
        total as f64 / fsyncs
    } else {
        0.0
    };
    m.log_bytes_per_commit = after.log_bytes.saturating_sub(before.log_bytes) as f64 / n;
    m.lock_waits_per_commit = waits / n;
    m.lock_wait_mean_us = if waits > 0.0 {
        after.lock_wait_us.saturating_sub(before.lock_wait_us) as f64 / waits
    } else {
        0.0
    };
    m
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

/// One commit-workload client: updates its own document.
pub(crate) type CommitClient = Box<dyn FnMut() -> Result<(), String> + Send>;

/// The commit workload's clients on an embedded engine: client `c`
/// creates its own `doc_size`-byte document in `paths[c % len]` and each
/// call updates it with the next of 16 pre-made bodies.
pub(crate) fn embedded_clients(
    engine: &Engine,
    paths: &[String],
    clients: usize,
    doc_size: usize,
    seed: u64,
) -> Result<Vec<CommitClient>, String> {
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
    let mut workers: Vec<CommitClient> = Vec::new();
    for c in 0..clients {
        let path = &paths[c % paths.len().max(1)];
        let db = engine.open_database(path).map_err(|e| e.to_string())?;
        let meta = db
            .create(vec![Item {
                name: "Body".into(),
                value: ItemValue::Text(body(&mut rng, doc_size)),
            }])
            .map_err(|e| e.to_string())?;
        // Bodies are made before timing starts, so the load generator
        // does not compete with the engine for the two cores.
        let mut rng = rand::rngs::StdRng::seed_from_u64(c as u64 + 1000);
        let bodies: Vec<String> = (0..16).map(|_| body(&mut rng, doc_size)).collect();
        let mut n = 0usize;
        workers.push(Box::new(move || {
            let item = Item {
                name: "Body".into(),
                value: ItemValue::Text(bodies[n % bodies.len()].clone()),
            };
            n += 1;
            db.update(meta.unid, vec![ItemUpdate::Set(item)], None, false)
                .map(drop)
                .map_err(|e| e.to_string())
        }));
    }
    Ok(workers)
}

fn run_embedded(
    base: &Path,
    a: &CommitArgs,
    clients: usize,
    logged: bool,
    round: usize,
) -> Result<(Measured, Histogram<u64>), String> {
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
    for d in 0..a.databases {
        engine
            .create_database(&format!("bench/c{d}.fdb"), "commit benchmark")
            .map_err(|e| e.to_string())?;
    }
    let paths: Vec<String> = (0..a.databases)
        .map(|d| format!("bench/c{d}.fdb"))
        .collect();
    let workers = embedded_clients(&engine, &paths, clients, a.doc_size, round as u64)?;
    let counters = |e: &Engine| {
        let l = e.lock_stats();
        let log = e.log_info();
        ServerCounters {
            fsyncs: log.as_ref().map_or(disk.count(FaultOp::Sync), |i| i.fsyncs),
            log_bytes: log.as_ref().map_or(0, |i| i.bytes_written),
            lock_waits: l.waits,
            lock_wait_us: l.wait_micros,
        }
    };
    // Logged: the log's own fdatasyncs (what group commit shares); database
    // file syncs by the flusher happen off the commit path. Unlogged: every
    // fdatasync, all of them on the commit path.
    let before = counters(&engine);
    let machine = MachineCounters::now();
    let (total, h, elapsed) = drive(workers, a.seconds)?;
    let per_commit = MachineCounters::per_commit(machine, total);
    let after = counters(&engine);
    let m = measured(total, &h, elapsed, per_commit, (before, after));
    if let Ok(e) = Arc::try_unwrap(engine) {
        e.close().map_err(|e| e.to_string())?;
    }
    let _ = std::fs::remove_dir_all(&dir);
    Ok((m, h))
}

/// A server the clients reach over the network: one connection per
/// client, set up before the clock starts.
trait RemoteLoad {
    /// Creates the database `name` (the caller must be allowed to).
    fn create_database(&self, name: &str) -> Result<(), String>;
    /// One client: a connection and its document in `db`; returns the
    /// update it repeats.
    fn client(
        &self,
        db: &str,
        bodies: Vec<String>,
    ) -> Result<Box<dyn FnMut() -> Result<(), String> + Send>, String>;
    /// The server's counters (log, locks), if it tells.
    fn counters(&self) -> Result<ServerCounters, String>;
}

fn run_remote(
    target: &dyn RemoteLoad,
    a: &CommitArgs,
    clients: usize,
    tag: &str,
) -> Result<(Measured, Histogram<u64>), String> {
    let names: Vec<String> = (0..a.databases)
        .map(|d| format!("load-commit/{tag}-d{d}.fdb"))
        .collect();
    for n in &names {
        target.create_database(n)?;
    }
    let mut workers = Vec::new();
    for c in 0..clients {
        let mut rng = rand::rngs::StdRng::seed_from_u64(c as u64 + 1000);
        let bodies: Vec<String> = (0..16).map(|_| body(&mut rng, a.doc_size)).collect();
        workers.push(target.client(&names[c % names.len()], bodies)?);
    }
    let before = target.counters()?;
    let machine = MachineCounters::now();
    let (total, h, elapsed) = drive(workers, a.seconds)?;
    let per_commit = MachineCounters::per_commit(machine, total);
    let after = target.counters()?;
    let m = measured(total, &h, elapsed, per_commit, (before, after));
    Ok((m, h))
}

/// The server's counters, asked over the native protocol.
fn native_counters(e: &Endpoint) -> Result<ServerCounters, String> {
    let stats = e
        .connect("folio-load")?
        .statistics()
        .map_err(|e| e.to_string())?;
    Ok(ServerCounters::from_stats(|name| {
        stats
            .iter()
            .find(|s| s.name == name)
            .and_then(|s| match s.value {
                client::StatValue::Count(n) => Some(n),
                _ => None,
            })
    }))
}

/// Threads of the native load generator's event loop (wrk's `-t2`).
const LOAD_THREADS: usize = 2;

/// Over the native protocol: one connection per client, all driven by a
/// small event loop (the async client on a runtime of [`LOAD_THREADS`]),
/// not a thread per client, so the load generator leaves the cores to the
/// server as wrk does for HTTP.
fn run_native(
    e: &Endpoint,
    a: &CommitArgs,
    clients: usize,
    tag: &str,
) -> Result<(Measured, Histogram<u64>), String> {
    let setup = e.connect("folio-load")?;
    let names: Vec<String> = (0..a.databases)
        .map(|d| format!("load-commit/{tag}-d{d}.fdb"))
        .collect();
    for n in &names {
        setup
            .create_database(n, "commit benchmark")
            .map_err(|err| format!("creating {n} on {}: {err}", e.addr))?;
    }
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(LOAD_THREADS)
        .enable_all()
        .build()
        .map_err(|e| e.to_string())?;
    let err = |e: client::ClientError| e.to_string();
    let mut conns = Vec::new();
    for c in 0..clients {
        let mut rng = rand::rngs::StdRng::seed_from_u64(c as u64 + 1000);
        let docs: Vec<String> = (0..16)
            .map(|_| json!({ "Body": body(&mut rng, a.doc_size) }).to_string())
            .collect();
        let opts = e.options("folio-load");
        let name = names[c % names.len()].clone();
        conns.push(rt.block_on(async move {
            let conn = client::Client::connect(opts).await.map_err(err)?;
            let (h, _) = conn.open_database(&name).await.map_err(err)?;
            let unid = conn.create_document(h, &docs[0]).await.map_err(err)?.unid;
            Ok::<_, String>((conn, h, unid, docs))
        })?);
    }
    let before = native_counters(e)?;
    let machine = MachineCounters::now();
    let stop = Arc::new(AtomicBool::new(false));
    let start = Instant::now();
    let (total, h) = rt.block_on(async {
        let tasks: Vec<_> = conns
            .into_iter()
            .map(|(conn, db, unid, docs)| {
                let stop = stop.clone();
                tokio::spawn(async move {
                    let mut h = hist();
                    let mut n = 0u64;
                    while !stop.load(Ordering::Relaxed) {
                        let t = Instant::now();
                        let doc = &docs[n as usize % docs.len()];
                        conn.update_document(db, unid, None, false, doc)
                            .await
                            .map_err(err)?;
                        h.saturating_record(t.elapsed().as_micros() as u64);
                        n += 1;
                    }
                    Ok::<_, String>((n, h))
                })
            })
            .collect();
        tokio::time::sleep(Duration::from_secs_f64(a.seconds)).await;
        stop.store(true, Ordering::Relaxed);
        let mut total = 0;
        let mut all = hist();
        for t in tasks {
            let (n, h) = t.await.map_err(|e| e.to_string())??;
            total += n;
            all.add(h).map_err(|e| e.to_string())?;
        }
        Ok::<_, String>((total, all))
    })?;
    let elapsed = start.elapsed().as_secs_f64();
    let per_commit = MachineCounters::per_commit(machine, total);
    let after = native_counters(e)?;
    let m = measured(total, &h, elapsed, per_commit, (before, after));
    Ok((m, h))
}

/// The HTTP API: one keep-alive connection per client.
#[derive(Clone, Debug)]
struct HttpTarget {
    base: String,
    authorization: Option<String>,
}

impl HttpTarget {
    fn new(url: &str, args: &Args) -> Result<HttpTarget, String> {
        let base = url.trim_end_matches('/').to_string();
        if !base.starts_with("http://") {
            return Err(format!(
                "--http {url}: expected a plain http://HOST:PORT URL"
            ));
        }
        let authorization = match &args.user {
            Some(user) => {
                let secret = std::env::var(crate::remote::PASSWORD_ENV).map_err(|_| {
                    format!(
                        "--user {user}: set the password (or an API token) in {}",
                        crate::remote::PASSWORD_ENV
                    )
                })?;
                Some(http_authorization(user, &secret))
            }
            None => None,
        };
        Ok(HttpTarget {
            base,
            authorization,
        })
    }

    fn agent() -> ureq::Agent {
        ureq::AgentBuilder::new()
            .timeout(Duration::from_secs(60))
            .max_idle_connections_per_host(1)
            .build()
    }

    fn call(
        &self,
        agent: &ureq::Agent,
        method: &str,
        path: &str,
        body: Option<&str>,
    ) -> Result<serde_json::Value, String> {
        let url = format!("{}{path}", self.base);
        let mut req = agent.request(method, &url);
        if let Some(a) = &self.authorization {
            req = req.set("Authorization", a);
        }
        let resp = match body {
            Some(b) => req.set("Content-Type", "application/json").send_string(b),
            None => req.call(),
        };
        match resp {
            Ok(r) => r
                .into_json::<serde_json::Value>()
                .map_err(|e| format!("{method} {url}: {e}")),
            Err(ureq::Error::Status(code, r)) => Err(format!(
                "{method} {url}: {code} {}",
                r.into_string().unwrap_or_default().trim()
            )),
            Err(e) => Err(format!("{method} {url}: {e}")),
        }
    }
}

/// `Bearer TOKEN` for an API token, else `Basic` with user and password.
fn http_authorization(user: &str, secret: &str) -> String {
    use base64::Engine as _;
    if secret.starts_with("folio_") {
        format!("Bearer {secret}")
    } else {
        let b = base64::engine::general_purpose::STANDARD.encode(format!("{user}:{secret}"));
        format!("Basic {b}")
    }
}

/// A path segment as the API expects it (`/` inside a database path
/// escaped).
fn segment(s: &str) -> String {
    s.replace('%', "%25").replace('/', "%2F")
}

impl RemoteLoad for HttpTarget {
    fn create_database(&self, name: &str) -> Result<(), String> {
        self.call(
            &HttpTarget::agent(),
            "PUT",
            &format!("/db/{}", segment(name)),
            Some(r#"{"title":"commit benchmark"}"#),
        )
        .map(drop)
    }

    fn client(
        &self,
        db: &str,
        bodies: Vec<String>,
    ) -> Result<Box<dyn FnMut() -> Result<(), String> + Send>, String> {
        let agent = HttpTarget::agent();
        let docs: Vec<String> = bodies
            .iter()
            .map(|b| json!({ "Body": b }).to_string())
            .collect();
        let db = segment(db);
        let created = self.call(&agent, "POST", &format!("/db/{db}/docs"), Some(&docs[0]))?;
        let unid = created["unid"]
            .as_str()
            .ok_or_else(|| format!("creating a document answered {created}"))?
            .to_string();
        let path = format!("/db/{db}/docs/{unid}");
        let target = self.clone();
        let mut n = 0usize;
        Ok(Box::new(move || {
            n += 1;
            target
                .call(&agent, "PUT", &path, Some(&docs[n % docs.len()]))
                .map(drop)
        }))
    }

    fn counters(&self) -> Result<ServerCounters, String> {
        let stats = self.call(&HttpTarget::agent(), "GET", "/stats", None)?;
        Ok(ServerCounters::from_stats(|name| stats[name].as_u64()))
    }
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
