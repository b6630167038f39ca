//! Many simulated users over few connections: one tokio task per user
//! running its [`UserScript`], users spread round-robin over
//! `--connections` native connections (each pipelines the requests of
//! its users), all on one small runtime beside the server.
//!
//! ```text
//!   user task ×N ── script.next() ─ sleep until due ─ request ─ record ─┐
//!        │ (user i on connection i mod C)                              │
//!   sampler ── every second: server CPU, bytes, stats ────────────────┤
//!                                                                      ▼
//!                                Recorder: per-op and overall HDR histograms
//!                                (steady-state window), per-second histograms
//! ```
//!
//! The clock: users start evenly over the first iteration (ramp-up, not
//! counted); the steady-state window is the `--seconds` after it. An
//! operation counts when it starts inside the window; trans/min is the
//! operations counted per minute of window. A message sent inside the
//! window offers the router one delivery per recipient; those are counted
//! too, to set beside what the router delivered in the window.

use super::args::{MailArgs, MAX_RESPONSE_US};
use super::content::{self, mail_file, user_name};
use super::device::Device;
use super::measure::{self, Reading};
use super::script::{Op, SendKind, UserScript, OP_NAMES, PAGE};
use crate::progress::Progress;
use client::{
    Client, ClientOptions, CollectionHandle, DbHandle, DocRef, ReadFlags, Row, Start, Unid,
};
use hdrhistogram::Histogram;
use rand::rngs::StdRng;
use rand::SeedableRng;
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Where the users connect and as whom.
#[derive(Clone, Debug)]
pub struct Target {
    pub addr: String,
    pub user: String,
    pub password: String,
    /// The server's process id, for /proc.
    pub pid: Option<u32>,
    /// The block device holding the server's data directory.
    pub device: Option<Device>,
}

impl Target {
    pub async fn connect(&self) -> Result<Client, String> {
        let o = ClientOptions::new(self.addr.as_str()).with_credentials(&self.user, &self.password);
        Client::connect(o)
            .await
            .map_err(|e| format!("connecting to {}: {e}", self.addr))
    }

    pub async fn connect_many(&self, n: usize) -> Result<Vec<Client>, String> {
        let mut out = Vec::with_capacity(n);
        for _ in 0..n {
            out.push(self.connect().await?);
        }
        Ok(out)
    }
}

fn histogram() -> Histogram<u64> {
    Histogram::new_with_bounds(1, MAX_RESPONSE_US, 3).expect("valid histogram bounds")
}

/// Response times and counts, shared by the user tasks.
pub struct Recorder {
    window: (Duration, Duration),
    pub per_op: BTreeMap<&'static str, Histogram<u64>>,
    pub overall: Histogram<u64>,
    /// Every second of the run (ramp-up included), all operations.
    pub per_second: Vec<Histogram<u64>>,
    pub errors: BTreeMap<String, u64>,
    /// Deliveries offered to the router in the window: recipients of the
    /// messages sent (and accepted) inside it.
    pub offered_deliveries: u64,
}

impl Recorder {
    fn new(window: (Duration, Duration)) -> Recorder {
        Recorder {
            window,
            per_op: OP_NAMES.iter().map(|n| (*n, histogram())).collect(),
            overall: histogram(),
            per_second: Vec::new(),
            errors: BTreeMap::new(),
            offered_deliveries: 0,
        }
    }

    fn record(&mut self, op: &Op<Unid>, started: Duration, us: u64, error: Option<String>) {
        let name = op.name();
        if let Some(e) = error {
            let e: String = e.chars().take(160).collect();
            *self.errors.entry(format!("{name}: {e}")).or_default() += 1;
            return;
        }
        let us = us.clamp(1, MAX_RESPONSE_US);
        let s = started.as_secs() as usize;
        if self.per_second.len() <= s {
            self.per_second.resize_with(s + 1, histogram);
        }
        self.per_second[s].saturating_record(us);
        if started >= self.window.0 && started < self.window.1 {
            self.overall.saturating_record(us);
            if let Some(h) = self.per_op.get_mut(name) {
                h.saturating_record(us);
            }
            self.offered_deliveries += op.deliveries() as u64;
        }
    }
}

/// What a run of the users produced.
pub struct Driven {
    pub recorder: Recorder,
    pub iterations: u64,
    pub window_s: f64,
    pub ramp_s: f64,
    /// Server readings once a second, and at the window's edges.
    pub samples: Vec<Reading>,
    pub at_window_start: Reading,
    pub at_window_end: Reading,
}

/// Runs `users` users against `target` for one iteration of ramp-up and
/// `--seconds` of steady state, on a runtime of its own.
pub fn drive(
    target: &Target,
    a: &MailArgs,
    users: usize,
    progress: &Progress,
) -> Result<Driven, String> {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .map_err(|e| format!("cannot start a runtime: {e}"))?;
    rt.block_on(drive_async(target, a, users, progress))
}

async fn drive_async(
    target: &Target,
    a: &MailArgs,
    users: usize,
    progress: &Progress,
) -> Result<Driven, String> {
    let clients = target.connect_many(a.connections.min(users)).await?;
    let monitor = target.connect().await?;
    let ramp = a.iteration();
    let window = (ramp, ramp + Duration::from_secs_f64(a.seconds));
    let rec = Arc::new(Mutex::new(Recorder::new(window)));
    let start = Instant::now();
    let mut tasks = tokio::task::JoinSet::new();
    for i in 0..users {
        let client = clients[i % clients.len()].clone();
        let (rec, seed) = (rec.clone(), a.seed);
        let iteration = a.iteration();
        tasks.spawn(async move {
            let mut user = User::new(i, users, iteration, client, seed);
            user.run(start, window.1, &rec).await
        });
    }
    progress.step(&format!(
        "{users} users: ramp-up {:.0} s, then {:.0} s measured",
        ramp.as_secs_f64(),
        a.seconds
    ));
    let mut samples = Vec::new();
    let mut edges = (None, None);
    let mut tick = tokio::time::interval(Duration::from_secs(1));
    loop {
        tick.tick().await;
        let t = start.elapsed();
        let r = measure::read(
            &monitor,
            target.pid,
            target.device.as_ref(),
            t.as_secs_f64(),
        )
        .await;
        if edges.0.is_none() && t >= window.0 {
            edges.0 = Some(r.clone());
        }
        // The window's end is read before the users close their mail
        // files, which they do once it is over.
        if t >= window.1 {
            edges.1 = Some(r.clone());
            samples.push(r);
            break;
        }
        samples.push(r);
    }
    let mut iterations = 0;
    while let Some(r) = tasks.join_next().await {
        iterations += r.map_err(|e| format!("a user task failed: {e}"))?;
    }
    for c in clients.iter().chain([&monitor]) {
        c.close();
    }
    let recorder = Arc::try_unwrap(rec)
        .map_err(|_| "the recorder is still shared".to_string())?
        .into_inner()
        .map_err(|_| "a user task panicked while recording".to_string())?;
    let at_window_start = edges.0.unwrap_or_default();
    let at_window_end = edges.1.unwrap_or_default();
    Ok(Driven {
        recorder,
        iterations,
        window_s: a.seconds,
        ramp_s: ramp.as_secs_f64(),
        samples,
        at_window_start,
        at_window_end,
    })
}

/// One simulated user: its script, connection and open handles.
struct User {
    index: usize,
    name: String,
    script: UserScript<Unid>,
    client: Client,
    rng: StdRng,
    db: Option<DbHandle>,
    inbox: Option<CollectionHandle>,
}

impl User {
    fn new(index: usize, users: usize, iteration: Duration, client: Client, seed: u64) -> User {
        User {
            index,
            name: user_name(index),
            script: UserScript::new(index, users, iteration),
            client,
            rng: StdRng::seed_from_u64(seed.wrapping_mul(0x9E37_79B9) ^ index as u64),
            db: None,
            inbox: None,
        }
    }

    /// Runs the script until an operation would be due after `end`, and
    /// keeps the mail file open until `end` before closing it; returns
    /// the iterations begun.
    ///
    /// Closing at once would close every user's mail file within the last
    /// tenth of an iteration before the window's end (each user's next
    /// operation is at most that far off), a burst of closes and cache
    /// evictions no steady state has, and the window's last seconds would
    /// measure it.
    async fn run(&mut self, start: Instant, end: Duration, rec: &Mutex<Recorder>) -> u64 {
        loop {
            let (op, due) = self.script.next(&mut self.rng);
            if due >= end {
                break;
            }
            tokio::time::sleep_until((start + due).into()).await;
            let began = Instant::now();
            let result = self.exec(&op).await;
            let us = began.elapsed().as_micros() as u64;
            let failed = result.is_err();
            if let Ok(mut r) = rec.lock() {
                r.record(&op, began - start, us, result.err());
            }
            if failed && matches!(op, Op::OpenDb | Op::OpenInbox | Op::ReadEntries) {
                self.close().await;
                self.script.abandon_iteration();
            }
        }
        tokio::time::sleep_until((start + end).into()).await;
        self.close().await;
        self.script.iterations()
    }

    async fn exec(&mut self, op: &Op<Unid>) -> Result<(), String> {
        let c = &self.client;
        let e = |e: client::ClientError| e.to_string();
        let db = || self.db.ok_or_else(|| "no open mail file".to_string());
        match op {
            Op::OpenDb => {
                let (db, _) = c.open_database(&mail_file(self.index)).await.map_err(e)?;
                self.db = Some(db);
            }
            Op::OpenInbox => {
                let info = c.open_collection(db()?, mail::INBOX).await.map_err(e)?;
                self.inbox = Some(info.collection);
            }
            Op::ReadEntries => {
                let coll = self.inbox.ok_or("no open Inbox")?;
                let (rows, _) = c
                    .read_entries(coll, Start::Position(0), PAGE, ReadFlags::default())
                    .await
                    .map_err(e)?;
                let docs = rows
                    .into_iter()
                    .filter_map(|r| match r {
                        Row::Entry { unid, .. } => Some(unid),
                        _ => None,
                    })
                    .collect();
                self.script.page_read(docs, &mut self.rng);
            }
            Op::Read(unid) => {
                c.read_document(db()?, DocRef::Unid(*unid))
                    .await
                    .map_err(e)?;
            }
            Op::Update(unid) => {
                let json =
                    serde_json::json!({"Importance": "1", "Categories": "Re-filed"}).to_string();
                c.update_document(db()?, *unid, None, true, &json)
                    .await
                    .map_err(e)?;
            }
            Op::Delete(unid) => {
                c.delete_document(db()?, *unid, None, true)
                    .await
                    .map_err(e)?;
            }
            Op::AddDraft => {
                let json = content::draft(&mut self.rng);
                c.send_mail(&json, true, Some(&self.name))
                    .await
                    .map_err(e)?;
            }
            Op::Send {
                kind: SendKind::Invitation,
                to,
            } => {
                let to: Vec<String> = to.iter().map(|&i| user_name(i)).collect();
                let op = content::meeting(&mut self.rng, &to);
                c.meeting(op, Some(&self.name)).await.map_err(e)?;
            }
            Op::Send { kind, to } => {
                let to: Vec<String> = to.iter().map(|&i| user_name(i)).collect();
                let json = content::message(&mut self.rng, *kind, &to);
                c.send_mail(&json, false, Some(&self.name))
                    .await
                    .map_err(e)?;
            }
            Op::Close => {
                self.close().await;
            }
        }
        Ok(())
    }

    /// Closes the Inbox and the mail file if open.
    async fn close(&mut self) {
        if let Some(coll) = self.inbox.take() {
            let _ = self.client.close_collection(coll).await;
        }
        if let Some(db) = self.db.take() {
            let _ = self.client.close_database(db).await;
        }
    }
}
