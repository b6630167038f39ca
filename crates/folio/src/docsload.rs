//! `folio load docs`: the parallel document and attachment loader.
//!
//! Each of `--threads` threads creates its own mail file from the mail
//! template, then `--docs` documents each carrying the `--attach` file as
//! an attachment, then (with `--search`) runs a formula search for every
//! document of its file. The same work runs twice in one invocation:
//! *embedded* (in-process calls into the engine, no network) and
//! *network* (a `folio` server on loopback, or the one at `--server`,
//! through the client library, one connection per thread), next to the
//! disk's own streaming bandwidth measured with `dd … conv=fdatasync` on
//! the same file system. The classic figure this reproduces: 30 threads ×
//! 100 documents × 2 MiB, where the network run should cost little more
//! than the local one and small operations stay fast while attachments
//! stream.

use crate::cli::Args;
use hdrhistogram::Histogram;

mod report;
use nsf::{Engine, Item};
use rand::{Rng, SeedableRng};
use serde_json::json;
use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

#[derive(clap::Args, Debug)]
pub struct DocsArgs {
    /// Concurrent threads (each with its own mail file and connection).
    #[arg(long, default_value_t = 30)]
    pub threads: usize,
    /// Documents per thread.
    #[arg(long, default_value_t = 100)]
    pub docs: usize,
    /// File attached to every document (default: a generated 2 MiB file).
    #[arg(long)]
    pub attach: Option<PathBuf>,
    /// After writing, each thread searches its file for every document.
    #[arg(long)]
    pub search: bool,
    /// Rounds (each runs embedded, then network); figures are medians.
    #[arg(long, default_value_t = 1)]
    pub rounds: usize,
    /// MiB `dd` writes to measure the disk (0: as much as one run writes
    /// in attachments, so the disk is measured over the same volume and a
    /// write cache cannot absorb it all).
    #[arg(long, default_value_t = 0)]
    pub dd_mib: u64,
    /// Skip the embedded run (network only).
    #[arg(long)]
    pub no_embedded: bool,
    /// Directory for the temporary data (default: the system temp dir).
    #[arg(long)]
    pub dir: Option<PathBuf>,
    /// Where result.json and report.html are written.
    #[arg(long, default_value = "folio-load-docs")]
    pub out: PathBuf,
    /// Seed of the generated attachment and document bodies.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
}

/// A histogram of microseconds, 1 µs to an hour (fixed bounds: a
/// saturating record never resizes, so the bounds must hold every value).
fn hist() -> Histogram<u64> {
    Histogram::new_with_bounds(1, 3_600_000_000, 3).expect("valid histogram bounds")
}

/// Per-operation response times of one run, in microseconds.
struct Times {
    ops: Vec<(&'static str, Histogram<u64>)>,
}

impl Times {
    fn new() -> Times {
        Times { ops: Vec::new() }
    }

    fn record(&mut self, op: &'static str, d: Duration) {
        let us = (d.as_micros() as u64).max(1);
        match self.ops.iter_mut().find(|(n, _)| *n == op) {
            Some((_, h)) => h.saturating_record(us),
            None => {
                let mut h = hist();
                h.saturating_record(us);
                self.ops.push((op, h));
            }
        }
    }

    fn merge(&mut self, other: &Times) {
        for (op, h) in &other.ops {
            match self.ops.iter_mut().find(|(n, _)| n == op) {
                Some((_, mine)) => mine.add(h).expect("same histogram bounds"),
                None => self.ops.push((op, h.clone())),
            }
        }
    }

    /// All small operations together: everything but attachment
    /// transfers, searches and the creation of each thread's mail file
    /// (a file, its design and its ACL: setup, not a transaction).
    fn small(&self) -> Histogram<u64> {
        let mut all = hist();
        for (op, h) in &self.ops {
            if !matches!(*op, "attach" | "search" | "create_db") {
                all.add(h).expect("same histogram bounds");
            }
        }
        all
    }
}

/// What one run measured.
#[derive(Clone, Debug, serde::Serialize)]
struct RunResult {
    variant: String,
    elapsed_s: f64,
    docs_per_s: f64,
    attach_mb_per_s: f64,
    ops: serde_json::Value,
    small_p50_ms: f64,
    small_p99_ms: f64,
    /// Document creation as the loopback server timed it (request in to
    /// answer queued), beside the client's figure: the difference is the
    /// transport and the scheduling of the threads on both sides.
    #[serde(skip_serializing_if = "Option::is_none")]
    server_create_ms: Option<serde_json::Value>,
}

fn ms(h: &Histogram<u64>, q: f64) -> f64 {
    h.value_at_quantile(q) as f64 / 1000.0
}

fn summarize(variant: &str, t: &Times, elapsed: Duration, docs: usize, bytes: u64) -> RunResult {
    let secs = elapsed.as_secs_f64();
    let ops = t
        .ops
        .iter()
        .map(|(op, h)| {
            (
                op.to_string(),
                json!({"count": h.len(), "p50_ms": ms(h, 0.5), "p95_ms": ms(h, 0.95), "p99_ms": ms(h, 0.99), "max_ms": h.max() as f64 / 1000.0}),
            )
        })
        .collect::<serde_json::Map<_, _>>();
    let small = t.small();
    RunResult {
        variant: variant.into(),
        elapsed_s: secs,
        docs_per_s: docs as f64 / secs,
        attach_mb_per_s: bytes as f64 / 1e6 / secs,
        ops: serde_json::Value::Object(ops),
        small_p50_ms: ms(&small, 0.5),
        small_p99_ms: ms(&small, 0.99),
        server_create_ms: None,
    }
}

/// The server's own create percentiles (module docs of [`RunResult`]).
fn server_create_times(c: &client::blocking::Client) -> Result<serde_json::Value, String> {
    let stats = c.statistics().map_err(|e| e.to_string())?;
    let mut out = serde_json::Map::new();
    for s in stats {
        if let (Some(q), protocol::StatValue::Gauge(v)) =
            (s.name.strip_prefix("op.create."), s.value)
        {
            out.insert(q.trim_end_matches("_ms").to_string(), json!(v));
        }
    }
    Ok(serde_json::Value::Object(out))
}

/// A way of reaching the engine: each thread gets its own mail file
/// through it, and the one loop in [`run_thread`] does the same work,
/// timed the same way, whichever way that is.
trait Target: Send + Sync {
    /// Creates thread `t`'s mail file from the mail template.
    fn create_mail_file(&self, t: usize) -> Result<Box<dyn MailFile>, String>;
}

/// One thread's mail file.
trait MailFile {
    /// Creates a document; returns its UNID.
    fn create(&mut self, doc: &serde_json::Value) -> Result<[u8; 16], String>;
    /// Attaches `content` (of `size` bytes) to a document.
    fn attach(
        &mut self,
        unid: [u8; 16],
        name: &str,
        content: File,
        size: u64,
    ) -> Result<(), String>;
    /// Searches for every document; returns how many were found.
    fn search_all(&mut self) -> Result<u64, String>;
}

fn memo(rng: &mut impl Rng, t: usize, i: usize) -> serde_json::Value {
    let words: String = (0..rng.gen_range(20..200))
        .map(|_| {
            [
                "report", "meeting", "budget", "plan", "review", "draft", "notes",
            ][rng.gen_range(0..7)]
        })
        .collect::<Vec<_>>()
        .join(" ");
    json!({"Form": "Memo", "Subject": format!("Load document {i} of thread {t}"), "From": format!("loader{t}"), "Body": words})
}

/// The work of thread `t` (WORKLOADS.md "docs").
fn run_thread(
    target: &dyn Target,
    t: usize,
    a: &DocsArgs,
    attach: &Path,
    times: &mut Times,
) -> Result<(), String> {
    let mut rng = rand::rngs::StdRng::seed_from_u64(a.seed ^ t as u64);
    let s = Instant::now();
    let mut file = target.create_mail_file(t)?;
    times.record("create_db", s.elapsed());
    let name = attach_name(attach);
    for i in 0..a.docs {
        let doc = memo(&mut rng, t, i);
        let s = Instant::now();
        let unid = file.create(&doc)?;
        times.record("create", s.elapsed());
        let content = File::open(attach).map_err(|e| e.to_string())?;
        let size = content.metadata().map_err(|e| e.to_string())?.len();
        let s = Instant::now();
        file.attach(unid, &name, content, size)?;
        times.record("attach", s.elapsed());
    }
    if a.search {
        let s = Instant::now();
        let n = file.search_all()?;
        times.record("search", s.elapsed());
        check_found(n, a.docs)?;
    }
    Ok(())
}

/// In-process: straight calls into the engine.
struct Embedded {
    engine: Arc<Engine>,
    views: Arc<views::Views>,
}

impl Target for Embedded {
    fn create_mail_file(&self, t: usize) -> Result<Box<dyn MailFile>, String> {
        let db = self
            .engine
            .create_database(&format!("load/embedded{t:03}.fdb"), "load")
            .map_err(|e| e.to_string())?;
        mail::create_design(&self.views, &db).map_err(|e| e.to_string())?;
        Ok(Box::new(db))
    }
}

impl MailFile for Arc<nsf::Database> {
    fn create(&mut self, doc: &serde_json::Value) -> Result<[u8; 16], String> {
        let items = nsf::items_from_json(doc)
            .map_err(|e| e.to_string())?
            .into_iter()
            .map(|u| match u {
                nsf::ItemUpdate::Set(i) => Ok(i),
                nsf::ItemUpdate::Remove(n) => Err(format!("item {n:?} is null")),
            })
            .collect::<Result<Vec<Item>, _>>()?;
        let meta = nsf::Database::create(self, items).map_err(|e| e.to_string())?;
        Ok(meta.unid.0)
    }

    fn attach(
        &mut self,
        unid: [u8; 16],
        name: &str,
        mut content: File,
        _: u64,
    ) -> Result<(), String> {
        self.put_attachment(
            nsf::Unid(unid),
            name,
            "application/octet-stream",
            &mut content,
        )
        .map(drop)
        .map_err(|e| e.to_string())
    }

    fn search_all(&mut self) -> Result<u64, String> {
        views::search(self, "SELECT @All", None, |_| Ok(())).map_err(|e| e.to_string())
    }
}

/// Over the native protocol, one connection per thread.
struct Network {
    connect: Box<dyn Fn() -> Result<client::blocking::Client, String> + Send + Sync>,
    run_id: u64,
}

impl Target for Network {
    fn create_mail_file(&self, t: usize) -> Result<Box<dyn MailFile>, String> {
        let c = (self.connect)()?;
        let path = format!("load/r{:x}/network{t:03}.fdb", self.run_id);
        c.create_database(&path, "load")
            .map_err(|e| e.to_string())?;
        let (h, _) = c.open_database(&path).map_err(|e| e.to_string())?;
        for def in mail::design() {
            crate::remote::create_view(&c, h, &def)?;
        }
        Ok(Box::new(RemoteFile { c, h }))
    }
}

/// A mail file on a server, through one client connection.
struct RemoteFile {
    c: client::blocking::Client,
    h: client::DbHandle,
}

impl MailFile for RemoteFile {
    fn create(&mut self, doc: &serde_json::Value) -> Result<[u8; 16], String> {
        let meta = self
            .c
            .create_document(self.h, &doc.to_string())
            .map_err(|e| e.to_string())?;
        Ok(meta.unid.0)
    }

    fn attach(
        &mut self,
        unid: [u8; 16],
        name: &str,
        content: File,
        size: u64,
    ) -> Result<(), String> {
        self.c
            .put_attachment(
                self.h,
                client::Unid(unid),
                name,
                "application/octet-stream",
                Some(size),
                content,
            )
            .map(drop)
            .map_err(|e| e.to_string())
    }

    fn search_all(&mut self) -> Result<u64, String> {
        self.c
            .search(self.h, "SELECT @All", None, |_| {})
            .map_err(|e| e.to_string())
    }
}

fn check_found(n: u64, docs: usize) -> Result<(), String> {
    if n != docs as u64 {
        return Err(format!("search found {n} documents, expected {docs}"));
    }
    Ok(())
}

fn attach_name(p: &Path) -> String {
    p.file_name()
        .and_then(|n| n.to_str())
        .unwrap_or("attachment.bin")
        .to_string()
}

/// Joins every thread (all of them: a panic left unjoined would take the
/// scope down) and returns the first failure, an error a thread returned
/// or a panic of `who`.
fn first_failure<T>(
    handles: Vec<std::thread::ScopedJoinHandle<'_, Result<T, String>>>,
    who: &str,
) -> Option<String> {
    let failures: Vec<String> = handles
        .into_iter()
        .filter_map(|h| {
            h.join()
                .map_err(|_| format!("{who} panicked"))
                .and_then(|r| r)
                .err()
        })
        .collect();
    failures.into_iter().next()
}

/// Runs every thread of one variant; returns the merged times and elapsed.
fn run_variant(
    target: Arc<dyn Target>,
    a: &DocsArgs,
    attach: &Path,
) -> Result<(Times, Duration), String> {
    let merged = Arc::new(Mutex::new(Times::new()));
    let start = Instant::now();
    let failure = std::thread::scope(|s| {
        let handles: Vec<_> = (0..a.threads)
            .map(|t| {
                let (target, merged) = (target.clone(), merged.clone());
                s.spawn(move || {
                    let mut times = Times::new();
                    let r = run_thread(&*target, t, a, attach, &mut times);
                    merged.lock().expect("no poisoned lock").merge(&times);
                    r
                })
            })
            .collect();
        first_failure(handles, "a load thread")
    });
    let elapsed = start.elapsed();
    if let Some(e) = failure {
        return Err(e);
    }
    let times = Arc::try_unwrap(merged)
        .map_err(|_| "load threads still running".to_string())?
        .into_inner()
        .map_err(|_| "poisoned lock".to_string())?;
    Ok((times, elapsed))
}

/// Removes a run's files (or the dd probe) and waits until the file
/// system has finished with the removal.
///
/// Freeing gigabytes is not free: the journal commits it later, and on a
/// file system mounted with online discard (as this project's test
/// machines are) the commit also discards every freed extent. Left to
/// happen in the background, that work lands in the middle of the next
/// measured run and slows whichever variant comes next; `syncfs` makes it
/// happen here, between runs, for every variant alike.
fn remove_and_settle(path: &Path) {
    let _ = if path.is_dir() {
        std::fs::remove_dir_all(path)
    } else {
        std::fs::remove_file(path)
    };
    let Some(parent) = path.parent() else { return };
    if let Ok(dir) = std::fs::File::open(parent) {
        // SAFETY: syncfs takes a valid open descriptor, held by `dir`.
        unsafe { libc::syncfs(std::os::fd::AsRawFd::as_raw_fd(&dir)) };
    }
}

/// MiB for `dd` to write: `requested`, or with 0 as much as one run
/// writes in attachments (rounded up, at least 1).
fn dd_volume_mib(requested: u64, run_bytes: u64) -> u64 {
    match requested {
        0 => run_bytes.div_ceil(1 << 20).max(1),
        n => n,
    }
}

/// `dd if=/dev/zero of=DIR/dd.probe bs=1M count=N conv=fdatasync`: the
/// disk's streaming write bandwidth, in MB/s, as the classic test took it.
fn dd_bandwidth(dir: &Path, mib: u64) -> Result<f64, String> {
    let probe = dir.join("dd.probe");
    let start = Instant::now();
    let out = std::process::Command::new("dd")
        .arg("if=/dev/zero")
        .arg(format!("of={}", probe.display()))
        .arg("bs=1M")
        .arg(format!("count={mib}"))
        .arg("conv=fdatasync")
        .output()
        .map_err(|e| format!("cannot run dd: {e}"))?;
    let secs = start.elapsed().as_secs_f64();
    remove_and_settle(&probe);
    if !out.status.success() {
        return Err(format!(
            "dd failed: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    // dd's own figure excludes process start-up; use it when it parses.
    let text = String::from_utf8_lossy(&out.stderr);
    let dd_secs = text.split(", ").find_map(|p| {
        p.strip_suffix(" s")
            .and_then(|n| n.trim().parse::<f64>().ok())
    });
    Ok((mib << 20) as f64 / 1e6 / dd_secs.unwrap_or(secs))
}

/// A generated attachment: text-like bytes, seeded.
fn generated_attachment(dir: &Path, seed: u64) -> Result<PathBuf, String> {
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
    let mut buf = Vec::with_capacity(2 << 20);
    while buf.len() < 2 << 20 {
        let w = [
            "quarterly",
            "figures",
            "attached",
            "please",
            "review",
            "the",
            "draft",
            "before",
            "Friday",
        ];
        buf.extend_from_slice(w[rng.gen_range(0..w.len())].as_bytes());
        buf.push(if rng.gen_range(0..12) == 0 {
            b'\n'
        } else {
            b' '
        });
    }
    buf.truncate(2 << 20);
    let p = dir.join("attachment-2MiB.txt");
    std::fs::write(&p, &buf).map_err(|e| format!("cannot write {}: {e}", p.display()))?;
    Ok(p)
}

/// A data directory with a server on loopback, for the network run.
struct LocalServer {
    addr: String,
    stop: tokio::sync::watch::Sender<bool>,
    thread: Option<std::thread::JoinHandle<Result<(), String>>>,
}

const LOAD_USER: &str = "load";

impl LocalServer {
    fn start(dir: &Path, password: &str) -> Result<LocalServer, String> {
        // Default settings, with FOLIO__ environment overrides.
        let file = crate::config::parse_with_env("", std::env::vars())?;
        let users = server::auth::UserStore::open(Arc::new(storage::backend::FsBackend), dir)
            .map_err(|e| e.to_string())?;
        users
            .add_user(LOAD_USER, password, true)
            .map_err(|e| e.to_string())?;
        let mut settings = file.server_settings(dir)?;
        settings.listen = "127.0.0.1:0".into();
        settings.http_listen = None;
        let dd = crate::datadir::open(dir, (file.engine_config(dir)?, file.view_config()?))?;
        let (engine, views, lock) = dd.into_parts();
        let (stop, stop_rx) = tokio::sync::watch::channel(false);
        let (addr_tx, addr_rx) = std::sync::mpsc::channel();
        let thread = std::thread::spawn(move || {
            let host = server::Host::new(engine, views).map_err(|e| e.to_string())?;
            let r = server::run(
                settings,
                host,
                |b| {
                    let _ = addr_tx.send(b.native.to_string());
                },
                Some(stop_rx),
            );
            drop(lock);
            r.map_err(|e| e.to_string())
        });
        let addr = addr_rx
            .recv_timeout(Duration::from_secs(30))
            .map_err(|_| "the loopback server did not start".to_string())?;
        Ok(LocalServer {
            addr,
            stop,
            thread: Some(thread),
        })
    }

    fn stop(mut self) -> Result<(), String> {
        let _ = self.stop.send(true);
        match self.thread.take().map(|t| t.join()) {
            Some(Ok(r)) => r,
            Some(Err(_)) => Err("the loopback server panicked".into()),
            None => Ok(()),
        }
    }
}

fn median_by(rs: &[RunResult], f: impl Fn(&RunResult) -> f64) -> f64 {
    let mut v: Vec<f64> = rs.iter().map(f).collect();
    v.sort_by(f64::total_cmp);
    v.get(v.len() / 2).copied().unwrap_or(0.0)
}

pub fn run(a: &DocsArgs, args: &Args) -> Result<(), String> {
    if a.threads == 0 || a.docs == 0 || a.rounds == 0 {
        return Err("--threads, --docs and --rounds must be at least 1".into());
    }
    let base = match &a.dir {
        Some(d) => tempfile::tempdir_in(d),
        None => tempfile::tempdir(),
    }
    .map_err(|e| format!("cannot create a temporary directory: {e}"))?;
    let attach = match &a.attach {
        Some(p) => p.clone(),
        None => generated_attachment(base.path(), a.seed)?,
    };
    let attach_size = std::fs::metadata(&attach)
        .map_err(|e| format!("{}: {e}", attach.display()))?
        .len();
    let total_docs = a.threads * a.docs;
    let total_bytes = attach_size * total_docs as u64;
    crate::progress::line(&format!(
        "docs workload: {} threads x {} documents x {} bytes = {:.0} MB of attachments per run",
        a.threads,
        a.docs,
        attach_size,
        total_bytes as f64 / 1e6
    ));
    let dd_mib = dd_volume_mib(a.dd_mib, total_bytes);
    let runs_per_round = if a.no_embedded { 1 } else { 2 };
    let progress = crate::progress::Progress::new("docs", 1 + (a.rounds * runs_per_round) as u64);
    progress.step(&format!("disk: dd of {dd_mib} MiB"));
    let dd = dd_bandwidth(base.path(), dd_mib)?;
    crate::progress::line(&format!(
        "disk: dd bs=1M count={dd_mib} conv=fdatasync: {dd:.0} MB/s"
    ));
    let mut embedded = Vec::new();
    let mut network = Vec::new();
    // Every round's response times together, per variant, for the report.
    let (mut embedded_times, mut network_times) = (Times::new(), Times::new());
    for round in 0..a.rounds {
        if !a.no_embedded {
            progress.step(&format!("round {}: embedded", round + 1));
            let dir = base.path().join(format!("embedded-{round}"));
            let file = crate::config::parse_with_env("", std::env::vars())?;
            let dd_ = crate::datadir::open(&dir, (file.engine_config(&dir)?, file.view_config()?))?;
            let (engine, views, lock) = dd_.into_parts();
            let target = Arc::new(Embedded {
                engine: Arc::new(engine),
                views: Arc::new(views),
            });
            let (t, el) = run_variant(target.clone(), a, &attach)?;
            let r = summarize("embedded", &t, el, total_docs, total_bytes);
            print_run(&r);
            embedded.push(r);
            embedded_times.merge(&t);
            let Embedded { engine, views } =
                Arc::try_unwrap(target).map_err(|_| "engine still in use")?;
            drop(views);
            Arc::try_unwrap(engine)
                .map_err(|_| "engine still in use")?
                .close()
                .map_err(|e| e.to_string())?;
            drop(lock);
            remove_and_settle(&dir);
        }
        progress.step(&format!("round {}: network", round + 1));
        let run_id = rand::random::<u64>() >> 16;
        let (r, t) = match &args.server {
            Some(server) => {
                let endpoint = crate::remote::Endpoint::from_args(args, server)?;
                let connect = move || endpoint.connect("folio-load").map_err(|e| e.to_string());
                let target = Arc::new(Network {
                    connect: Box::new(connect),
                    run_id,
                });
                let (t, el) = run_variant(target, a, &attach)?;
                (summarize("network", &t, el, total_docs, total_bytes), t)
            }
            None => {
                let dir = base.path().join(format!("network-{round}"));
                let password: String = format!("load-{:x}", rand::random::<u64>());
                let srv = LocalServer::start(&dir, &password)?;
                let addr = srv.addr.clone();
                let connect = move || {
                    let opts = client::ClientOptions::new(addr.as_str())
                        .with_credentials(LOAD_USER, &password);
                    client::blocking::Client::connect(opts).map_err(|e| e.to_string())
                };
                let target = Arc::new(Network {
                    connect: Box::new(connect),
                    run_id,
                });
                let res = run_variant(target.clone(), a, &attach);
                let server_times = (target.connect)().and_then(|c| server_create_times(&c));
                srv.stop()?;
                remove_and_settle(&dir);
                let (t, el) = res?;
                let mut r = summarize("network", &t, el, total_docs, total_bytes);
                r.server_create_ms = Some(server_times?);
                (r, t)
            }
        };
        print_run(&r);
        network.push(r);
        network_times.merge(&t);
    }
    progress.finish();
    let times = [("embedded", &embedded_times), ("network", &network_times)];
    report(a, (dd_mib, dd), attach_size, (&embedded, &network), &times)
}

fn print_run(r: &RunResult) {
    crate::progress::line(&format!(
        "{:>9}: {:>7.1} s  {:>7.1} docs/s  {:>7.1} MB/s attachments  small ops p50 {:.2} ms p99 {:.2} ms",
        r.variant, r.elapsed_s, r.docs_per_s, r.attach_mb_per_s, r.small_p50_ms, r.small_p99_ms
    ));
    if let Some(t) = &r.server_create_ms {
        crate::progress::line(&format!(
            "           server's own create times: p50 {:.2} ms p99 {:.2} ms",
            t["p50"].as_f64().unwrap_or(0.0),
            t["p99"].as_f64().unwrap_or(0.0)
        ));
    }
}

/// Sums up the runs, then writes `result.json` and `report.html`;
/// `times` are each variant's response times, all rounds together.
fn report(
    a: &DocsArgs,
    (dd_mib, dd): (u64, f64),
    attach_size: u64,
    (embedded, network): (&[RunResult], &[RunResult]),
    times: &[(&str, &Times)],
) -> Result<(), String> {
    let net_mb = median_by(network, |r| r.attach_mb_per_s);
    let net_el = median_by(network, |r| r.elapsed_s);
    let net_p99 = median_by(network, |r| r.small_p99_ms);
    let mut summary = format!(
        "dd bandwidth {dd:.0} MB/s\nnetwork: attachments {net_mb:.0} MB/s = {:.0}% of dd; small-op p99 {net_p99:.2} ms; elapsed {net_el:.1} s\n",
        100.0 * net_mb / dd
    );
    let mut ratio = serde_json::Value::Null;
    if !embedded.is_empty() {
        let emb_mb = median_by(embedded, |r| r.attach_mb_per_s);
        let emb_el = median_by(embedded, |r| r.elapsed_s);
        let emb_p99 = median_by(embedded, |r| r.small_p99_ms);
        summary.push_str(&format!(
            "embedded: attachments {emb_mb:.0} MB/s = {:.0}% of dd; small-op p99 {emb_p99:.2} ms; elapsed {emb_el:.1} s\nnetwork / embedded elapsed: {:.2}\n",
            100.0 * emb_mb / dd,
            net_el / emb_el
        ));
        ratio = json!(net_el / emb_el);
    }
    crate::progress::line(summary.trim_end());
    let result = json!({
        "workload": "docs",
        "settings": {"threads": a.threads, "docs": a.docs, "attachment_bytes": attach_size, "search": a.search, "rounds": a.rounds, "dd_mib": dd_mib, "dd_defaults_to_run_volume": a.dd_mib == 0},
        "machine": crate::load::machine(),
        "dd_mb_per_s": dd,
        "embedded": embedded,
        "network": network,
        "network_over_embedded_elapsed": ratio,
        "network_attach_fraction_of_dd": net_mb / dd,
    });
    report::write_docs(&a.out, &result, dd, times)
}

#[derive(clap::Args, Debug)]
pub struct PoolArgs {
    /// Comma-separated concurrent client counts.
    #[arg(long, default_value = "1,30,100", value_delimiter = ',')]
    pub clients: Vec<usize>,
    /// Seconds per client count.
    #[arg(long, default_value_t = 5.0)]
    pub seconds: f64,
    /// Per mille of operations that are document creates (the rest read).
    #[arg(long, default_value_t = 200)]
    pub writes_per_mille: u32,
    /// Directory for the temporary data (default: the system temp dir).
    #[arg(long)]
    pub dir: Option<PathBuf>,
    /// Where result.json and report.html are written.
    #[arg(long, default_value = "folio-load-pool")]
    pub out: PathBuf,
}

/// `folio load pool`: response times of small operations against a
/// loopback server as the number of concurrent clients grows. Each client
/// has its own connection and loops without think time: reads of random
/// documents and (a share of) 1 KiB creates. What it shows is whether the
/// worker pool hands requests over without stalls: at 30 clients the p99
/// should stay within a few milliseconds of the median.
pub fn pool(a: &PoolArgs, args: &Args) -> Result<(), String> {
    let base = match &a.dir {
        Some(d) => tempfile::tempdir_in(d),
        None => tempfile::tempdir(),
    }
    .map_err(|e| format!("cannot create a temporary directory: {e}"))?;
    // A running server (--server), or one of our own on loopback.
    let (srv, endpoint) = match &args.server {
        Some(server) => (None, crate::remote::Endpoint::from_args(args, server)?),
        None => {
            let password = format!("load-{:x}", rand::random::<u64>());
            let srv = LocalServer::start(base.path(), &password)?;
            let endpoint = crate::remote::Endpoint {
                addr: srv.addr.clone(),
                credentials: Some((LOAD_USER.into(), password)),
                tls_ca: None,
                compression: client::NetCompression::Auto,
            };
            (Some(srv), endpoint)
        }
    };
    let connect = || endpoint.connect("folio-load");
    let db_path = format!("load/pool-{:x}.fdb", rand::random::<u64>() >> 16);
    let setup = connect()?;
    setup
        .create_database(&db_path, "pool")
        .map_err(|e| e.to_string())?;
    let (h, _) = setup.open_database(&db_path).map_err(|e| e.to_string())?;
    let body = "x".repeat(1024);
    let unids: Vec<client::Unid> = (0..1000)
        .map(|i| {
            setup
                .create_document(h, &json!({"N": i, "Body": body}).to_string())
                .map(|m| m.unid)
                .map_err(|e| e.to_string())
        })
        .collect::<Result<_, _>>()?;
    let mut rows = Vec::new();
    let mut hists = Vec::new();
    crate::progress::line(&format!(
        "{:>8} {:>10} {:>9} {:>9} {:>9} {:>9}",
        "clients", "ops/s", "p50 ms", "p95 ms", "p99 ms", "max ms"
    ));
    let progress = crate::progress::Progress::new("pool", a.clients.len() as u64);
    for &n in &a.clients {
        progress.step(&format!("{n} clients"));
        let merged = Mutex::new(hist());
        let ops = std::sync::atomic::AtomicU64::new(0);
        let deadline = Instant::now() + Duration::from_secs_f64(a.seconds);
        let started = Instant::now();
        let failure = std::thread::scope(|s| {
            let hs: Vec<_> = (0..n)
                .map(|t| {
                    let (merged, ops, unids, body) = (&merged, &ops, &unids, &body);
                    let c = connect();
                    let db_path = &db_path;
                    s.spawn(move || -> Result<(), String> {
                        let c = c?;
                        let (h, _) = c.open_database(db_path).map_err(|e| e.to_string())?;
                        let mut rng = rand::rngs::StdRng::seed_from_u64(t as u64);
                        let mut local = hist();
                        while Instant::now() < deadline {
                            let st = Instant::now();
                            if rng.gen_range(0..1000) < a.writes_per_mille {
                                c.create_document(h, &json!({"T": t, "Body": body}).to_string())
                                    .map_err(|e| e.to_string())?;
                            } else {
                                let u = unids[rng.gen_range(0..unids.len())];
                                c.read_document(h, client::DocRef::Unid(u))
                                    .map_err(|e| e.to_string())?;
                            }
                            local.saturating_record(st.elapsed().as_micros() as u64);
                            ops.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                        }
                        merged
                            .lock()
                            .map_err(|_| "poisoned")?
                            .add(&local)
                            .map_err(|e| e.to_string())
                    })
                })
                .collect();
            first_failure(hs, "a client thread")
        });
        if let Some(e) = failure {
            return Err(e);
        }
        let secs = started.elapsed().as_secs_f64();
        let hh = merged.into_inner().map_err(|_| "poisoned")?;
        let total = ops.into_inner();
        crate::progress::line(&format!(
            "{:>8} {:>10.0} {:>9.3} {:>9.3} {:>9.3} {:>9.3}",
            n,
            total as f64 / secs,
            ms(&hh, 0.5),
            ms(&hh, 0.95),
            ms(&hh, 0.99),
            hh.max() as f64 / 1000.0
        ));
        rows.push(json!({"clients": n, "ops_per_s": total as f64 / secs, "p50_ms": ms(&hh, 0.5), "p95_ms": ms(&hh, 0.95), "p99_ms": ms(&hh, 0.99), "max_ms": hh.max() as f64 / 1000.0}));
        hists.push((n, hh));
    }
    drop(setup);
    if let Some(srv) = srv {
        srv.stop()?;
    }
    progress.finish();
    let result = json!({"workload": "pool", "settings": {"clients": a.clients, "seconds": a.seconds, "writes_per_mille": a.writes_per_mille, "server": args.server}, "machine": crate::load::machine(), "rows": rows});
    report::write_pool(&a.out, &result, &hists)
}

#[cfg(test)]
mod tests {
    use super::dd_volume_mib;

    #[test]
    fn dd_defaults_to_the_run_volume() {
        // 30 x 100 x 2 MiB
        assert_eq!(dd_volume_mib(0, 30 * 100 * (2 << 20)), 6000);
        assert_eq!(dd_volume_mib(0, (1 << 20) + 1), 2);
        assert_eq!(dd_volume_mib(0, 0), 1);
        assert_eq!(dd_volume_mib(512, 30 * 100 * (2 << 20)), 512);
    }
}
