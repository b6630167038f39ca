//! `folio load dbs`: tens of thousands of databases on one server.
//!
//! The workload of the brief's "databases on one server" row: a real
//! `folio serve` (a child process on loopback, or the server at `--http`)
//! gets `--databases` databases over HTTP from `--threads` client threads,
//! each with one document; every `--reader-every`th database's ACL also
//! lets the user `reader` in. Then every document is read back, `GET /dbs`
//! is timed as the administrator (every database) and as `reader` (the few
//! it may see), the server is killed with SIGKILL and started again (timed
//! until it serves), and the listing and every read are repeated. All the
//! while a sampler reads the server's resident memory and open descriptors
//! from `/proc/PID` and its open-database count from `GET /stats`.
//!
//! Each `--max-open` value is a complete run on a fresh data directory:
//! side by side, the runs show whether the server's memory and
//! descriptors follow `max_open_databases` or the number of databases
//! (design.md I19), and whether listing stays fast (I20).
//!
//! ```text
//!   run(max_open) ─ folio.toml, users ─ spawn serve ─┬─ sampler (250 ms)
//!     create ── read ── list ── SIGKILL ── restart ──┴─ list ── read ── stop
//! ```

use crate::cli::Args;
use crate::report::{self, Marker, Series};
use hdrhistogram::Histogram;
use serde_json::{json, Value};
use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

#[derive(clap::Args, Debug)]
pub struct DbsArgs {
    /// Databases to create, one document each.
    #[arg(long, default_value_t = 20_000)]
    pub databases: usize,
    /// Client threads (one HTTP connection each).
    #[arg(long, default_value_t = 16)]
    pub threads: usize,
    /// `max_open_databases` of each run (a fresh server each).
    #[arg(long, default_value = "500,2000", value_delimiter = ',')]
    pub max_open: Vec<usize>,
    /// Every Nth database also admits the user `reader` (0: none).
    #[arg(long, default_value_t = 100)]
    pub reader_every: usize,
    /// Times each listing is repeated (figures: median and worst).
    #[arg(long, default_value_t = 5)]
    pub list_repeats: usize,
    /// Use the server at this HTTP address (HOST:PORT) instead of starting
    /// one, signing in as --user with the password in FOLIO_PASSWORD; its
    /// databases must not exist yet, and it is not killed.
    #[arg(long)]
    pub http: Option<String>,
    /// With --http: the server's process id, to sample its memory and
    /// descriptors.
    #[arg(long)]
    pub pid: Option<u32>,
    /// Directory for the data directories (default: the system temp dir).
    #[arg(long)]
    pub dir: Option<PathBuf>,
    /// Where result.json and report.html are written.
    #[arg(long, default_value = "folio-load-dbs")]
    pub out: PathBuf,
}

const READER: &str = "reader";
const READER_PW: &str = "reader-password-1";
const ADMIN: &str = "admin";
const SAMPLE_EVERY: Duration = Duration::from_millis(250);

/// A histogram of microseconds, 1 µs to an hour.
fn hist() -> Histogram<u64> {
    Histogram::new_with_bounds(1, 3_600_000_000, 3).expect("valid histogram bounds")
}

fn percentiles(h: &Histogram<u64>) -> Value {
    let ms = |q: f64| h.value_at_quantile(q) as f64 / 1000.0;
    json!({"count": h.len(), "p50_ms": ms(0.5), "p90_ms": ms(0.9), "p95_ms": ms(0.95), "p99_ms": ms(0.99),
           "max_ms": h.max() as f64 / 1000.0})
}

/// Requests to one server as one user, timed. A 503 (the server is busy:
/// its log is full until a checkpoint frees space) is retried after a
/// pause, as a client should, and counted.
#[derive(Clone)]
struct Http {
    agent: ureq::Agent,
    base: String,
    auth: String,
    busy: Arc<AtomicUsize>,
}

/// Pause before retrying a 503, and how many retries of one request.
const BUSY_PAUSE: Duration = Duration::from_millis(50);
const BUSY_RETRIES: usize = 600;

impl Http {
    fn new(addr: &str, auth: String) -> Http {
        Http {
            agent: ureq::AgentBuilder::new()
                .timeout(Duration::from_secs(120))
                .build(),
            base: format!("http://{addr}"),
            auth,
            busy: Arc::default(),
        }
    }

    /// 503 answers retried so far.
    fn busy(&self) -> usize {
        self.busy.load(Ordering::Relaxed)
    }

    /// Sends a request; the JSON answer of a 2xx and the time it took,
    /// retries included.
    fn call(
        &self,
        method: &str,
        path: &str,
        body: Option<&Value>,
    ) -> Result<(Value, Duration), String> {
        let started = Instant::now();
        for _ in 0..BUSY_RETRIES {
            let req = self
                .agent
                .request(method, &format!("{}{path}", self.base))
                .set("Authorization", &self.auth);
            let r = match body {
                Some(b) => req.send_string(&b.to_string()),
                None => req.call(),
            };
            match r {
                Ok(resp) => {
                    let v = resp
                        .into_json::<Value>()
                        .map_err(|e| format!("{method} {path}: {e}"))?;
                    return Ok((v, started.elapsed()));
                }
                Err(ureq::Error::Status(503, _)) => {
                    self.busy.fetch_add(1, Ordering::Relaxed);
                    std::thread::sleep(BUSY_PAUSE);
                }
                Err(ureq::Error::Status(code, resp)) => {
                    return Err(format!(
                        "{method} {path}: {code} {}",
                        resp.into_string().unwrap_or_default()
                    ))
                }
                Err(e) => return Err(format!("{method} {path}: {e}")),
            }
        }
        Err(format!(
            "{method} {path}: still 503 after {BUSY_RETRIES} tries"
        ))
    }
}

fn db_path(i: usize) -> String {
    format!("load/{:02}/db{i:05}.fdb", i % 100)
}

fn db_url(i: usize) -> String {
    format!("/db/{}", db_path(i).replace('/', "%2F"))
}

/// A `folio serve` child process (killed if dropped still running).
pub(crate) struct ServerProc {
    child: Child,
    /// Its native protocol address.
    pub(crate) native: String,
    http: String,
    /// From spawn until it said it serves.
    start_s: f64,
    ended: bool,
}

impl Drop for ServerProc {
    fn drop(&mut self) {
        if !self.ended {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

impl ServerProc {
    pub(crate) fn spawn(data: &Path) -> Result<ServerProc, String> {
        let exe = std::env::current_exe().map_err(|e| e.to_string())?;
        let started = Instant::now();
        let mut child = Command::new(exe)
            .arg("--data")
            .arg(data)
            .args([
                "serve",
                "--listen",
                "127.0.0.1:0",
                "--http-listen",
                "127.0.0.1:0",
            ])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| format!("cannot start folio serve: {e}"))?;
        let mut err = BufReader::new(child.stderr.take().expect("piped stderr"));
        let mut line = String::new();
        loop {
            line.clear();
            if err.read_line(&mut line).map_err(|e| e.to_string())? == 0 {
                let _ = child.kill();
                return Err("folio serve exited before serving".into());
            }
            if line.contains("serving data directory") {
                break;
            }
            eprint!("server: {line}");
        }
        let start_s = started.elapsed().as_secs_f64();
        let http = line
            .split("http ")
            .nth(1)
            .and_then(|r| r.split([',', ';']).next())
            .map(|s| s.trim().to_string())
            .ok_or_else(|| format!("no HTTP address in {line:?}"))?;
        let native = line
            .split("native ")
            .nth(1)
            .and_then(|r| r.split([',', ';']).next())
            .map(|s| s.trim().to_string())
            .ok_or_else(|| format!("no native address in {line:?}"))?;
        // Keep draining stderr so the server never blocks on the pipe.
        std::thread::spawn(move || {
            let mut sink = String::new();
            let _ = err.read_to_string(&mut sink);
        });
        Ok(ServerProc {
            child,
            native,
            http,
            start_s,
            ended: false,
        })
    }

    pub(crate) fn pid(&self) -> u32 {
        self.child.id()
    }

    fn kill(mut self) -> Result<(), String> {
        self.child.kill().map_err(|e| e.to_string())?;
        self.child.wait().map_err(|e| e.to_string())?;
        self.ended = true;
        Ok(())
    }

    pub(crate) fn stop(mut self) -> Result<(), String> {
        // SAFETY: a signal to our own child, whose id we hold.
        unsafe { libc::kill(self.child.id() as i32, libc::SIGTERM) };
        let status = self.child.wait().map_err(|e| e.to_string())?;
        self.ended = true;
        if !status.success() {
            return Err(format!("folio serve stopped with {status}"));
        }
        Ok(())
    }
}

/// One reading of the server's resources.
#[derive(Clone, Debug, serde::Serialize)]
struct Sample {
    t_s: f64,
    phase: &'static str,
    rss_mib: f64,
    fds: usize,
    db_open: Option<u64>,
}

/// Reads the server's memory, descriptors and open databases in the
/// background; the phase is set by the run.
struct Sampler {
    samples: Arc<Mutex<Vec<Sample>>>,
    phase: Arc<Mutex<&'static str>>,
    pid: Arc<Mutex<Option<u32>>>,
    http: Arc<Mutex<Option<Http>>>,
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Sampler {
    fn start(pid: Option<u32>, http: Http) -> Sampler {
        let s = Sampler {
            samples: Arc::default(),
            phase: Arc::new(Mutex::new("start")),
            pid: Arc::new(Mutex::new(pid)),
            http: Arc::new(Mutex::new(Some(http))),
            stop: Arc::default(),
            thread: None,
        };
        let (samples, phase, pid, http, stop) = (
            s.samples.clone(),
            s.phase.clone(),
            s.pid.clone(),
            s.http.clone(),
            s.stop.clone(),
        );
        let started = Instant::now();
        let thread = std::thread::spawn(move || {
            let mut n = 0u64;
            while !stop.load(Ordering::Relaxed) {
                let pid = *pid.lock().expect("sampler lock");
                // Open databases once a second: a request of its own.
                let db_open = match (n % 4, http.lock().expect("sampler lock").clone()) {
                    (0, Some(h)) => h
                        .call("GET", "/stats", None)
                        .ok()
                        .and_then(|(v, _)| v["db.open"].as_u64()),
                    _ => None,
                };
                if let Some(pid) = pid {
                    let sample = Sample {
                        t_s: started.elapsed().as_secs_f64(),
                        phase: *phase.lock().expect("sampler lock"),
                        rss_mib: proc_status_kib(pid, "VmRSS:") as f64 / 1024.0,
                        fds: open_fds(pid),
                        db_open,
                    };
                    samples.lock().expect("sampler lock").push(sample);
                }
                n += 1;
                std::thread::sleep(SAMPLE_EVERY);
            }
        });
        Sampler {
            thread: Some(thread),
            ..s
        }
    }

    fn phase(&self, p: &'static str) {
        *self.phase.lock().expect("sampler lock") = p;
    }

    /// Follows a restarted server.
    fn follow(&self, pid: Option<u32>, http: Option<Http>) {
        *self.pid.lock().expect("sampler lock") = pid;
        *self.http.lock().expect("sampler lock") = http;
    }

    fn finish(mut self) -> Vec<Sample> {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
        std::mem::take(&mut *self.samples.lock().expect("sampler lock"))
    }
}

fn proc_status_kib(pid: u32, field: &str) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .unwrap_or_default()
        .lines()
        .find(|l| l.starts_with(field))
        .and_then(|l| l.split_whitespace().nth(1)?.parse().ok())
        .unwrap_or(0)
}

fn open_fds(pid: u32) -> usize {
    std::fs::read_dir(format!("/proc/{pid}/fd")).map_or(0, |d| d.count())
}

/// Runs `work(i)` for every i below `n` on `threads` threads, each with
/// its own histogram; returns the merged histogram and the elapsed time.
/// The first failure stops every thread and is returned.
fn spread(
    n: usize,
    threads: usize,
    work: impl Fn(usize, &mut Histogram<u64>) -> Result<(), String> + Sync,
) -> Result<(Histogram<u64>, Duration), String> {
    let next = AtomicUsize::new(0);
    let failed = AtomicBool::new(false);
    let started = Instant::now();
    let results: Vec<Result<Histogram<u64>, String>> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..threads)
            .map(|_| {
                s.spawn(|| {
                    let mut h = hist();
                    loop {
                        let i = next.fetch_add(1, Ordering::Relaxed);
                        if i >= n || failed.load(Ordering::Relaxed) {
                            return Ok(h);
                        }
                        if let Err(e) = work(i, &mut h) {
                            failed.store(true, Ordering::Relaxed);
                            return Err(e);
                        }
                    }
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| {
                h.join()
                    .unwrap_or_else(|_| Err("a load thread panicked".into()))
            })
            .collect()
    });
    let elapsed = started.elapsed();
    let mut all = hist();
    for r in results {
        all.add(r?).expect("same histogram bounds");
    }
    Ok((all, elapsed))
}

fn record(h: &mut Histogram<u64>, d: Duration) {
    h.saturating_record((d.as_micros() as u64).max(1));
}

/// Creates every database with its document (and, for some, an ACL that
/// admits `reader`); returns each document's UNID.
fn create_all(http: &Http, a: &DbsArgs) -> Result<(Vec<String>, Value), String> {
    let unids: Vec<Mutex<String>> = (0..a.databases).map(|_| Mutex::default()).collect();
    let hists = Mutex::new((hist(), hist(), hist()));
    let done = AtomicUsize::new(0);
    let step = (a.databases / 20).max(1);
    let acl = json!({"entries": [{"name": ADMIN, "level": "manager"},
                                 {"name": READER, "level": "reader"}]});
    let (total, elapsed) = spread(a.databases, a.threads, |i, h| {
        let started = Instant::now();
        let (_, d_db) = http.call(
            "PUT",
            &db_url(i),
            Some(&json!({"title": format!("Database {i}")})),
        )?;
        let d_acl = if a.reader_every > 0 && i % a.reader_every == 0 {
            Some(
                http.call("PUT", &format!("{}/_acl", db_url(i)), Some(&acl))?
                    .1,
            )
        } else {
            None
        };
        let doc = json!({"N": i, "Subject": format!("the document of database {i}"),
                         "Body": "x".repeat(200)});
        let (made, d_doc) = http.call("POST", &format!("{}/docs", db_url(i)), Some(&doc))?;
        let unid = made["unid"]
            .as_str()
            .ok_or_else(|| format!("no unid in {made}"))?;
        *unids[i].lock().expect("unid lock") = unid.to_string();
        record(h, started.elapsed());
        {
            let mut hs = hists.lock().expect("histogram lock");
            record(&mut hs.0, d_db);
            record(&mut hs.1, d_doc);
            if let Some(d) = d_acl {
                record(&mut hs.2, d);
            }
        }
        let n = done.fetch_add(1, Ordering::Relaxed) + 1;
        if n.is_multiple_of(step) {
            println!("  created {n}/{}", a.databases);
        }
        Ok(())
    })?;
    let (db_h, doc_h, acl_h) = hists.into_inner().expect("histogram lock");
    let secs = elapsed.as_secs_f64();
    let figures = json!({
        "elapsed_s": secs,
        "databases_per_s": a.databases as f64 / secs,
        "per_database": percentiles(&total),
        "create_database": percentiles(&db_h),
        "create_document": percentiles(&doc_h),
        "set_acl": percentiles(&acl_h),
    });
    let unids = unids
        .into_iter()
        .map(|m| m.into_inner().expect("unid lock"))
        .collect();
    Ok((unids, figures))
}

/// Reads every document and checks it is the one written.
fn read_all(http: &Http, a: &DbsArgs, unids: &[String]) -> Result<Value, String> {
    let (h, elapsed) = spread(unids.len(), a.threads, |i, h| {
        let (doc, d) = http.call("GET", &format!("{}/docs/{}", db_url(i), unids[i]), None)?;
        if doc["N"].as_f64() != Some(i as f64) {
            return Err(format!("{}: read {doc}, wrote N = {i}", db_path(i)));
        }
        record(h, d);
        Ok(())
    })?;
    let secs = elapsed.as_secs_f64();
    Ok(
        json!({"elapsed_s": secs, "reads_per_s": unids.len() as f64 / secs,
              "read": percentiles(&h)}),
    )
}

/// Times `GET /dbs` for the administrator and for `reader`, and checks
/// that each sees exactly what it should.
fn list_all(admin: &Http, reader: &Http, a: &DbsArgs) -> Result<Value, String> {
    let want_reader = if a.reader_every == 0 {
        0
    } else {
        a.databases.div_ceil(a.reader_every)
    };
    let mut out = json!({});
    for (who, http, want) in [
        ("admin", admin, a.databases),
        ("reader", reader, want_reader),
    ] {
        let mut times = Vec::new();
        let mut bytes = 0;
        for _ in 0..a.list_repeats.max(1) {
            let (list, d) = http.call("GET", "/dbs?folder=load/", None)?;
            let n = list.as_array().map_or(0, Vec::len);
            if n != want {
                return Err(format!("GET /dbs as {who}: {n} databases, expected {want}"));
            }
            bytes = list.to_string().len();
            times.push(d.as_secs_f64() * 1000.0);
        }
        let mut sorted = times.clone();
        sorted.sort_by(f64::total_cmp);
        out[who] = json!({"databases": want, "json_bytes": bytes, "ms": times,
                          "median_ms": sorted[sorted.len() / 2],
                          "max_ms": sorted[sorted.len() - 1]});
    }
    Ok(out)
}

/// Highest RSS, descriptors and open databases per phase.
fn peaks(samples: &[Sample]) -> Value {
    let mut out = json!({});
    for s in samples {
        let p = &mut out[s.phase];
        let max = |v: &Value, x: f64| v.as_f64().map_or(x, |m| m.max(x));
        p["rss_mib_max"] = json!(max(&p["rss_mib_max"], s.rss_mib));
        p["fds_max"] = json!(max(&p["fds_max"], s.fds as f64) as u64);
        if let Some(o) = s.db_open {
            p["db_open_max"] = json!(max(&p["db_open_max"], o as f64) as u64);
        }
    }
    out
}

fn basic(user: &str, pw: &str) -> String {
    use base64::Engine as _;
    let b = base64::engine::general_purpose::STANDARD.encode(format!("{user}:{pw}"));
    format!("Basic {b}")
}

/// One complete run against a fresh server with `max_open` (or, with
/// `--http`, against that server).
fn run_one(
    a: &DbsArgs,
    args: &Args,
    max_open: Option<usize>,
    base: &Path,
) -> Result<Value, String> {
    let (mut server, admin, reader, pid) = match (&a.http, max_open) {
        (Some(addr), _) => {
            let user = args.user.clone().unwrap_or_else(|| ADMIN.into());
            let pw = std::env::var(crate::remote::PASSWORD_ENV)
                .map_err(|_| format!("--http: set the password of {user} in FOLIO_PASSWORD"))?;
            let admin = Http::new(addr, basic(&user, &pw));
            (
                None,
                admin,
                Http::new(addr, basic(READER, READER_PW)),
                a.pid,
            )
        }
        (None, Some(n)) => {
            let data = base.join(format!("data-{n}"));
            std::fs::create_dir_all(&data).map_err(|e| e.to_string())?;
            std::fs::write(
                data.join("folio.toml"),
                format!("max_open_databases = {n}\n"),
            )
            .map_err(|e| e.to_string())?;
            let users = server::auth::UserStore::open(Arc::new(storage::backend::FsBackend), &data)
                .map_err(|e| e.to_string())?;
            users
                .add_user(ADMIN, "admin-password-1", true)
                .map_err(|e| e.to_string())?;
            users
                .add_user(READER, READER_PW, false)
                .map_err(|e| e.to_string())?;
            let token = users
                .create_token(ADMIN, "load")
                .map_err(|e| e.to_string())?;
            let s = ServerProc::spawn(&data)?;
            let admin = Http::new(&s.http, format!("Bearer {token}"));
            let reader = Http::new(&s.http, basic(READER, READER_PW));
            let pid = Some(s.pid());
            (Some((s, data)), admin, reader, pid)
        }
        (None, None) => return Err("no max_open_databases to run with".into()),
    };
    let label = max_open.map_or_else(
        || "server".to_string(),
        |n| format!("max_open_databases = {n}"),
    );
    println!("{label}: {} databases, {} threads", a.databases, a.threads);
    let sampler = Sampler::start(pid, admin.clone());
    let mut result = json!({"label": label, "max_open_databases": max_open,
                            "databases": a.databases, "threads": a.threads});
    sampler.phase("create");
    let (unids, mut created) = create_all(&admin, a)?;
    created["busy_retries"] = json!(admin.busy());
    println!(
        "  create: {:.0} databases/s (database + document{}), per database p50 {:.1} ms p99 {:.1} ms; {} answers 503 (busy) retried",
        created["databases_per_s"].as_f64().unwrap_or(0.0),
        if a.reader_every > 0 { ", some with an ACL" } else { "" },
        created["per_database"]["p50_ms"].as_f64().unwrap_or(0.0),
        created["per_database"]["p99_ms"].as_f64().unwrap_or(0.0),
        created["busy_retries"],
    );
    result["create"] = created;
    sampler.phase("read");
    result["read"] = read_all(&admin, a, &unids)?;
    print_read("read", &result["read"]);
    sampler.phase("list");
    result["list"] = list_all(&admin, &reader, a)?;
    print_list("list", &result["list"]);
    if let Some((s, data)) = server.take() {
        sampler.phase("restart");
        s.kill()?;
        sampler.follow(None, None);
        let s = ServerProc::spawn(&data)?;
        println!("  SIGKILL, then serving again after {:.2} s", s.start_s);
        result["restart_s"] = json!(s.start_s);
        let admin = Http {
            base: format!("http://{}", s.http),
            ..admin.clone()
        };
        let reader = Http {
            base: format!("http://{}", s.http),
            ..reader.clone()
        };
        sampler.follow(Some(s.pid()), Some(admin.clone()));
        sampler.phase("list after restart");
        result["list_after_restart"] = list_all(&admin, &reader, a)?;
        print_list("list after restart", &result["list_after_restart"]);
        sampler.phase("read after restart");
        result["read_after_restart"] = read_all(&admin, a, &unids)?;
        print_read("read after restart", &result["read_after_restart"]);
        result["server_stats"] = admin.call("GET", "/stats", None)?.0;
        sampler.phase("stop");
        s.stop()?;
    } else {
        result["server_stats"] = admin.call("GET", "/stats", None)?.0;
    }
    let samples = sampler.finish();
    result["busy_retries"] = json!(admin.busy());
    result["peaks"] = peaks(&samples);
    print_peaks(&result["peaks"]);
    result["samples"] = json!(samples);
    Ok(result)
}

fn print_read(what: &str, r: &Value) {
    println!(
        "  {what}: {:.0} reads/s, p50 {:.2} ms p99 {:.2} ms",
        r["reads_per_s"].as_f64().unwrap_or(0.0),
        r["read"]["p50_ms"].as_f64().unwrap_or(0.0),
        r["read"]["p99_ms"].as_f64().unwrap_or(0.0),
    );
}

fn print_list(what: &str, l: &Value) {
    println!(
        "  {what}: GET /dbs {} databases median {:.1} ms (worst {:.1}); as reader {} databases median {:.1} ms",
        l["admin"]["databases"],
        l["admin"]["median_ms"].as_f64().unwrap_or(0.0),
        l["admin"]["max_ms"].as_f64().unwrap_or(0.0),
        l["reader"]["databases"],
        l["reader"]["median_ms"].as_f64().unwrap_or(0.0),
    );
}

fn print_peaks(p: &Value) {
    if let Some(m) = p.as_object() {
        for (phase, v) in m {
            println!(
                "  {phase:>20}: RSS ≤ {:.0} MiB, descriptors ≤ {}, open databases ≤ {}",
                v["rss_mib_max"].as_f64().unwrap_or(0.0),
                v["fds_max"],
                v["db_open_max"],
            );
        }
    }
}

pub fn run(a: &DbsArgs, args: &Args) -> Result<(), String> {
    if a.threads == 0 || a.databases == 0 {
        return Err("--threads and --databases must be above 0".into());
    }
    let base = match &a.dir {
        Some(d) => tempfile::tempdir_in(d),
        None => tempfile::tempdir(),
    }
    .map_err(|e| format!("cannot create a temporary directory: {e}"))?;
    let settings: Vec<Option<usize>> = match &a.http {
        Some(_) => vec![None],
        None => a.max_open.iter().copied().map(Some).collect(),
    };
    // A run that fails is reported as such; the others still count.
    let runs: Vec<Value> = settings
        .into_iter()
        .map(|n| {
            run_one(a, args, n, base.path()).unwrap_or_else(|e| {
                eprintln!("folio: the run with max_open_databases {n:?} failed: {e}");
                json!({"label": format!("max_open_databases = {n:?} (failed)"),
                       "max_open_databases": n, "error": e})
            })
        })
        .collect();
    let result = json!({
        "workload": "dbs",
        "settings": {"databases": a.databases, "threads": a.threads, "max_open": a.max_open,
                     "reader_every": a.reader_every, "list_repeats": a.list_repeats,
                     "server": a.http},
        "machine": crate::load::machine(),
        "runs": runs,
    });
    write_outputs(&a.out, &result)
}

/// Writes `result.json` and `report.html`: the tables, then the server's
/// memory, descriptors and open databases over each run, with the start
/// of each phase marked in the run's colour.
fn write_outputs(out: &Path, result: &Value) -> Result<(), String> {
    let runs = result["runs"].as_array().map_or(&[][..], Vec::as_slice);
    let mut page = report::Page::new("Folio: databases on one server");
    page.table(report::settings_table(result));
    for t in summary_tables(runs) {
        page.table(t);
    }
    let markers = phase_markers(runs);
    let chart = |title: &str, y: &str, field: &str| {
        let series: Vec<Series> = runs
            .iter()
            .map(|r| {
                Series::new(
                    r["label"].as_str().unwrap_or(""),
                    sampled(
                        r["samples"].as_array().map_or(&[][..], Vec::as_slice),
                        field,
                    ),
                )
            })
            .collect();
        report::per_second(title, y, &series, &markers)
    };
    page.chart(chart("Server resident memory", "RSS, MiB", "rss_mib"));
    page.chart(chart("Server open descriptors", "descriptors", "fds"));
    page.chart(chart(
        "Open databases (db.open, read once a second)",
        "databases",
        "db_open",
    ));
    page.note(
        "Samples every 250 ms from /proc/PID (resident memory, descriptors) and GET /stats \
         (open databases); the clock of each run starts with its server. While the server \
         restarts there is nothing to sample.",
    );
    report::write(out, result, &page)
}

/// The (time, value) of every sample that has `field`.
fn sampled(samples: &[Value], field: &str) -> Vec<(f64, f64)> {
    samples
        .iter()
        .filter_map(|s| Some((s["t_s"].as_f64()?, s[field].as_f64()?)))
        .collect()
}

/// The first sample of each phase of each run, as a marker in the run's
/// colour (the sampler's initial "start" is not a phase of the work).
fn phase_markers(runs: &[Value]) -> Vec<Marker> {
    let mut out = Vec::new();
    for (i, r) in runs.iter().enumerate() {
        let mut last = "start";
        for s in r["samples"].as_array().into_iter().flatten() {
            let (Some(phase), Some(t)) = (s["phase"].as_str(), s["t_s"].as_f64()) else {
                continue;
            };
            if phase != last {
                out.push(Marker {
                    label: phase.to_string(),
                    at_s: t,
                    series: Some(i),
                });
                last = phase;
            }
        }
    }
    out
}

/// The report's summary: one row per run (per `max_open_databases`).
fn summary_tables(runs: &[Value]) -> Vec<report::Table> {
    let num = |v: &Value, digits: usize| {
        v.as_f64()
            .map_or_else(|| "–".to_string(), |x| format!("{x:.digits$}"))
    };
    let mut work = report::Table::new(
        "Work (client-observed)",
        &[
            "run",
            "databases/s",
            "create p50 ms",
            "create p99 ms",
            "reads/s",
            "read p99 ms",
            "GET /dbs median ms",
            "restart s",
            "503 retried",
        ],
    );
    let mut ops = report::Table::new(
        "Response times per operation (client-observed)",
        &[
            "run",
            "operation",
            "count",
            "p50 ms",
            "p95 ms",
            "p99 ms",
            "max ms",
        ],
    );
    let mut bounds = report::Table::new(
        "Server resources (highest seen in each phase)",
        &["run", "phase", "RSS MiB", "descriptors", "open databases"],
    );
    for r in runs {
        let label = r["label"].as_str().unwrap_or("?").to_string();
        if let Some(e) = r["error"].as_str() {
            work.row(vec![label, format!("failed: {e}")]);
            continue;
        }
        work.row(vec![
            label.clone(),
            num(&r["create"]["databases_per_s"], 0),
            num(&r["create"]["per_database"]["p50_ms"], 1),
            num(&r["create"]["per_database"]["p99_ms"], 1),
            num(&r["read"]["reads_per_s"], 0),
            num(&r["read"]["read"]["p99_ms"], 1),
            num(&r["list"]["admin"]["median_ms"], 1),
            num(&r["restart_s"], 2),
            r["busy_retries"].to_string(),
        ]);
        for (op, p) in [
            ("create database + document", &r["create"]["per_database"]),
            ("create database", &r["create"]["create_database"]),
            ("create document", &r["create"]["create_document"]),
            ("set ACL", &r["create"]["set_acl"]),
            ("read", &r["read"]["read"]),
            ("read after restart", &r["read_after_restart"]["read"]),
        ] {
            if p.is_object() {
                ops.row(vec![
                    label.clone(),
                    op.into(),
                    num(&p["count"], 0),
                    num(&p["p50_ms"], 2),
                    num(&p["p95_ms"], 2),
                    num(&p["p99_ms"], 2),
                    num(&p["max_ms"], 2),
                ]);
            }
        }
        if let Some(phases) = r["peaks"].as_object() {
            for (phase, p) in phases {
                bounds.row(vec![
                    label.clone(),
                    phase.clone(),
                    num(&p["rss_mib_max"], 0),
                    num(&p["fds_max"], 0),
                    num(&p["db_open_max"], 0),
                ]);
            }
        }
    }
    vec![work, ops, bounds]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn samples_become_points_and_phases_become_markers() {
        let s: Vec<Value> = [
            (0.1, "start", Some(3)),
            (0.4, "create", None),
            (0.9, "create", Some(5)),
            (1.2, "read", Some(1)),
        ]
        .iter()
        .map(|(t, p, v)| json!({"t_s": t, "phase": p, "db_open": v}))
        .collect();
        assert_eq!(sampled(&s, "db_open"), [(0.1, 3.0), (0.9, 5.0), (1.2, 1.0)]);
        let runs = [json!({"samples": s}), json!({"error": "failed"})];
        let m = phase_markers(&runs);
        let got: Vec<(&str, f64, Option<usize>)> = m
            .iter()
            .map(|m| (m.label.as_str(), m.at_s, m.series))
            .collect();
        assert_eq!(got, [("create", 0.4, Some(0)), ("read", 1.2, Some(0))]);
        assert_eq!(db_path(12345), "load/45/db12345.fdb");
        assert_eq!(db_url(7), "/db/load%2F07%2Fdb00007.fdb");
    }
}
