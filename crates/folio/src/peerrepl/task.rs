//! Server-to-server replication inside `folio serve`: one replicator
//! thread that runs every replication with a peer, the scheduled task
//! that feeds it `[[replication]]` entries, and the hooks that give the
//! server its `ReplicatePeer` door and its `replication.*` statistics.
//!
//! ```text
//!   ReplicatePeer (native) ─▶ Service ─▶ PeerReplicator ─┐
//!                                                         ├─▶ replicator thread ─▶ driver.rs (one at a time)
//!   ScheduleTask (tokio) ── due entry, per database ──────┘        │
//!        ▲  ▲ Schedule (schedule.rs) ◀── outcome, seen seqs ──────┤
//!        │  └ commits (watch.rs: next_change)   replication.json ◀┘ (state.rs)
//!        └─ StatsSource: replication.<name>.* in show stats, GET /stats
//!   "Run now" (POST /admin/replication/{name}/run) ─▶ Door ─▶ Schedule::run_now, wakes the task
//! ```
//!
//! The task sleeps until the next entry is due, a commit wakes an
//! on-change entry, or the server stops, whichever comes first. The run
//! itself, recording its outcome in the schedule and saving the
//! schedule's state happen together on the replicator thread, so saves
//! never overlap and a run cut off by a stop still records itself.
//!
//! Why a thread of its own: the driver is the blocking client's
//! (`client::blocking`, which refuses to run inside a tokio runtime) and
//! its writes are engine calls that block; and replicating one database
//! pair at a time means a scheduled run and a one-shot request never run
//! two sessions over the same histories at once (design.md I44). The thread holds the
//! engine weakly, so it never keeps a shutting-down server's engine alive
//! (the host closes it whoever holds it, and a replication cut short
//! there resumes from its checkpoint, I26). A scheduled run in progress
//! when the server stops is left to end on its own (or be cut by the
//! engine's close); the task returns at once.

use super::config::{Databases, Entry};
use super::driver;
use super::schedule::{Outcome, Plan, Schedule};
use super::state;
use super::watch::{self, Watched, Woken};
use crate::error::{FolioError, FolioResult};
use futures_util::future::BoxFuture;
use nsf::Engine;
use parking_lot::Mutex;
use protocol::{PeerReplicated, PeerReplication, Statistic};
use replica::local::net::Limits;
use server::service::{EntryRun, PeerReplicator};
use server::stats::StatsSource;
use server::{ServerError, ServerResult, Task, TaskContext, TaskResult};
use std::collections::BTreeMap;
use std::sync::{mpsc, Arc, Weak};
use std::time::{Duration, Instant};

/// Work for the replicator thread.
type Job = Box<dyn FnOnce(&Engine) + Send>;

/// The replicator thread's door (module docs). Cloned freely.
#[derive(Clone)]
pub struct Replicator {
    jobs: mpsc::Sender<Job>,
    /// For the warning about peers last seen too long ago (I45).
    purge_interval: Duration,
    /// What this server accepts from a peer it pulls from: its own
    /// `max_attachment_bytes`, as at its door (I48).
    limits: Limits,
}

impl Replicator {
    /// Starts the replicator thread over `engine`; replications warn
    /// about peers last seen longer ago than `purge_interval`, and pulls
    /// take from peers what `limits` allow.
    pub fn start(
        engine: &Arc<Engine>,
        purge_interval: Duration,
        limits: Limits,
    ) -> FolioResult<Replicator> {
        let (jobs, queue) = mpsc::channel::<Job>();
        let engine: Weak<Engine> = Arc::downgrade(engine);
        std::thread::Builder::new()
            .name("folio-replicator".into())
            .spawn(move || {
                for job in queue {
                    // A job for an engine already closed is dropped; its
                    // caller sees its answer channel closed.
                    if let Some(engine) = engine.upgrade() {
                        job(&engine);
                    }
                }
            })
            .map_err(|e| {
                FolioError::Internal(format!("cannot start the replicator thread: {e}"))
            })?;
        Ok(Replicator {
            jobs,
            purge_interval,
            limits,
        })
    }

    /// Queues `job`; false if the thread is gone.
    fn submit(&self, job: Job) -> bool {
        self.jobs.send(job).is_ok()
    }
}

impl PeerReplicator for Replicator {
    fn replicate(&self, request: PeerReplication) -> ServerResult<PeerReplicated> {
        driver::check(&request).map_err(to_server)?;
        let (tx, rx) = mpsc::channel();
        let (purge, limits) = (self.purge_interval, self.limits);
        let queued = self.submit(Box::new(move |engine| {
            let _ = tx.send(driver::replicate(engine, &request, purge, limits));
        }));
        let answer = queued.then(|| rx.recv().ok()).flatten();
        match answer {
            Some(Ok(r)) => {
                for w in &r.warnings {
                    tracing::warn!("peer replication: {w}");
                }
                Ok(r)
            }
            Some(Err(e)) => Err(to_server(e)),
            None => Err(ServerError::Busy(server::Busy::ShuttingDown)),
        }
    }
}

/// The driver's error as the server answers it: bad input stays 400, a
/// missing database 404, the rest is the server's failure.
fn to_server(e: FolioError) -> ServerError {
    match e {
        FolioError::BadInput(m) | FolioError::Usage(m) => ServerError::BadRequest(m),
        FolioError::NotFound(m) => ServerError::NotFound(m),
        FolioError::Engine(nsf::NsfError::NoSuchDatabase(m)) => ServerError::NotFound(m),
        FolioError::Engine(e @ nsf::NsfError::BadPath { .. }) => {
            ServerError::BadRequest(e.to_string())
        }
        FolioError::Engine(e @ nsf::NsfError::DatabaseExists(_)) => {
            ServerError::SaveConflict(e.to_string())
        }
        other => ServerError::Internal(format!("replicating with the peer: {other}")),
    }
}

/// Gives `host` its `ReplicatePeer` door, the stub purge task
/// (`purge.rs`) and, with `entries`, the scheduled replication task and
/// its statistics, its state restored from the data directory's
/// `replication.json` (`state.rs`; one that cannot be read is warned
/// about and the schedule starts afresh).
pub fn install(
    host: &mut server::Host,
    entries: Vec<Entry>,
    purge_interval: Duration,
    limits: Limits,
) -> FolioResult<()> {
    let replicator = Replicator::start(host.engine(), purge_interval, limits)?;
    host.add_task(super::purge::PurgeTask::new(
        host.engine().clone(),
        purge_interval,
    ))?;
    if entries.is_empty() {
        host.set_peer_replicator(Arc::new(Door {
            replicator,
            scheduled: None,
        }));
        return Ok(());
    }
    let origin = Instant::now();
    let plans = entries
        .iter()
        .map(|e| Plan {
            name: e.name.clone(),
            peer: e.peer.clone(),
            interval: e.interval,
            on_change: e.on_change,
        })
        .collect();
    let mut schedule = Schedule::new(plans, Duration::ZERO);
    let store = StateStore {
        backend: host.engine().backend(),
        data_dir: host.engine().data_dir().to_path_buf(),
    };
    match state::load(store.backend.as_ref(), &store.data_dir) {
        Ok(Some(saved)) => schedule.restore(&saved, Duration::ZERO, nsf::Timestamp::now().0),
        Ok(None) => {}
        Err(e) => tracing::warn!("{e}; the replication schedule starts afresh"),
    }
    let schedule = Arc::new(Mutex::new(schedule));
    host.stats().add_source(Arc::new(Board {
        schedule: schedule.clone(),
        origin,
    }));
    let kick = Arc::new(tokio::sync::Notify::new());
    host.set_peer_replicator(Arc::new(Door {
        replicator: replicator.clone(),
        scheduled: Some((
            Board {
                schedule: schedule.clone(),
                origin,
            },
            kick.clone(),
        )),
    }));
    let watched = vec![Vec::new(); entries.len()];
    host.add_task(ScheduleTask {
        entries: Arc::new(entries),
        schedule,
        origin,
        replicator,
        store: Arc::new(store),
        watched,
        kick,
    })?;
    Ok(())
}

/// The server's hook (`PeerReplicator`): one-shot replications go to the
/// replicator thread; "Run now" makes a scheduled entry due and wakes the
/// task (a wake while it runs another entry is kept for its next wait).
struct Door {
    replicator: Replicator,
    scheduled: Option<(Board, Arc<tokio::sync::Notify>)>,
}

impl PeerReplicator for Door {
    fn replicate(&self, request: PeerReplication) -> ServerResult<PeerReplicated> {
        self.replicator.replicate(request)
    }

    fn run_entry_now(&self, name: &str) -> ServerResult<EntryRun> {
        let missing = || {
            ServerError::NotFound(format!(
                "no [[replication]] entry named {name:?} on this server"
            ))
        };
        let (board, kick) = self.scheduled.as_ref().ok_or_else(missing)?;
        let running = board
            .schedule
            .lock()
            .run_now(name, board.origin.elapsed())
            .ok_or_else(missing)?;
        kick.notify_one();
        Ok(if running {
            EntryRun::Running
        } else {
            EntryRun::Due
        })
    }
}

/// Where the schedule's state is saved.
struct StateStore {
    backend: Arc<dyn storage::backend::Backend>,
    data_dir: std::path::PathBuf,
}

impl StateStore {
    /// Saves `schedule`'s state (`state.rs`: atomic and durable, I9); a
    /// failure is logged and the server goes on (a lost state only makes
    /// entries run at the next start).
    fn save(&self, schedule: &Mutex<Schedule>) {
        let saved = schedule.lock().saved();
        if let Err(e) = state::save(self.backend.as_ref(), &self.data_dir, &saved) {
            tracing::warn!("replication schedule: {e}");
        }
    }
}

/// The schedule's statistics, read by every snapshot.
struct Board {
    schedule: Arc<Mutex<Schedule>>,
    origin: Instant,
}

impl StatsSource for Board {
    fn statistics(&self, out: &mut Vec<Statistic>) {
        self.schedule.lock().statistics(self.origin.elapsed(), out);
    }
}

/// Runs the `[[replication]]` entries as they fall due, or as their
/// databases change (module docs).
struct ScheduleTask {
    entries: Arc<Vec<Entry>>,
    schedule: Arc<Mutex<Schedule>>,
    origin: Instant,
    replicator: Replicator,
    store: Arc<StateStore>,
    /// Per entry, the databases its on-change waits follow (`watch.rs`).
    watched: Vec<Vec<Watched>>,
    /// Woken when an entry is asked for by hand (`Door::run_entry_now`).
    kick: Arc<tokio::sync::Notify>,
}

/// How long the task sleeps when nothing is scheduled to wake it.
const IDLE: Duration = Duration::from_secs(3600);

/// What the task's wait ended with.
enum Wake {
    Timer,
    Commit(Woken),
    Stop,
}

impl Task for ScheduleTask {
    fn name(&self) -> &str {
        "replication"
    }

    fn run(mut self: Box<Self>, mut ctx: TaskContext) -> BoxFuture<'static, TaskResult> {
        Box::pin(async move {
            let Some(watched) = self.open_watches(&mut ctx).await else {
                return Ok(());
            };
            self.watched = watched;
            loop {
                let now = self.origin.elapsed();
                let due = self.schedule.lock().due(now);
                let Some(i) = due else {
                    match self.wait(&mut ctx, now).await {
                        Wake::Timer => {}
                        Wake::Commit(Woken::Changed { entry }) => {
                            self.schedule.lock().changed(entry, self.origin.elapsed());
                        }
                        Wake::Commit(Woken::Gone { entry, path, why }) => {
                            tracing::warn!(entry = %self.entries[entry].name, "no longer waiting for commits of {path}: {why}");
                            self.watched[entry].retain(|(p, _)| *p != path);
                        }
                        Wake::Stop => return Ok(()),
                    }
                    continue;
                };
                match self.run_due(&mut ctx, i).await {
                    Some(watched) => self.watched[i] = watched,
                    None => return Ok(()),
                }
            }
        })
    }
}

impl ScheduleTask {
    /// Opens the databases of every on-change entry for its waits, on the
    /// replicator thread; `None` if the server stops first.
    async fn open_watches(&self, ctx: &mut TaskContext) -> Option<Vec<Vec<Watched>>> {
        let (tx, rx) = tokio::sync::oneshot::channel();
        let entries = self.entries.clone();
        self.replicator.submit(Box::new(move |engine| {
            let all = entries
                .iter()
                .map(|e| match entry_paths(engine, e) {
                    Ok(paths) => watch::open(engine, e, &paths),
                    Err(_) => Vec::new(),
                })
                .collect::<Vec<_>>();
            let _ = tx.send(all);
        }));
        tokio::select! {
            r = rx => Some(r.unwrap_or_else(|_| vec![Vec::new(); self.entries.len()])),
            _ = ctx.stop_requested() => None,
        }
    }

    /// Sleeps until the next entry is due, a commit wakes an on-change
    /// entry, or the server stops (a wait never holds up the stop).
    async fn wait(&self, ctx: &mut TaskContext, now: Duration) -> Wake {
        let (sleep, waits) = {
            let schedule = self.schedule.lock();
            let waits = (0..self.entries.len())
                .filter(|&i| schedule.waits_for_change(i, now))
                .filter_map(|i| {
                    let seen = schedule.state(i)?.seen.clone();
                    Some((i, self.watched[i].clone(), seen))
                })
                .collect();
            (schedule.wake_in(now).unwrap_or(IDLE), waits)
        };
        tokio::select! {
            _ = tokio::time::sleep(sleep) => Wake::Timer,
            w = watch::first_change(waits) => Wake::Commit(w),
            _ = self.kick.notified() => Wake::Timer,
            _ = ctx.stop_requested() => Wake::Stop,
        }
    }

    /// Runs entry `i` on the replicator thread: the databases it watches
    /// from now on, or `None` if the server stops first (the run is left
    /// to end on its own, and records and saves its outcome then).
    async fn run_due(&self, ctx: &mut TaskContext, i: usize) -> Option<Vec<Watched>> {
        self.schedule.lock().started(i);
        let (tx, rx) = tokio::sync::oneshot::channel();
        let (entries, schedule, store) = (
            self.entries.clone(),
            self.schedule.clone(),
            self.store.clone(),
        );
        let (origin, purge) = (self.origin, self.replicator.purge_interval);
        let limits = self.replicator.limits;
        let queued = self.replicator.submit(Box::new(move |engine| {
            let entry = &entries[i];
            let (outcome, watched, seen) = run_entry(engine, entry, purge, limits);
            let wall = nsf::Timestamp::now().0;
            schedule
                .lock()
                .finished(i, origin.elapsed(), wall, outcome, seen);
            store.save(&schedule);
            let _ = tx.send(watched);
        }));
        if !queued {
            let gone = Outcome {
                failures: vec!["the replicator thread is gone".into()],
                ..Outcome::default()
            };
            let wall = nsf::Timestamp::now().0;
            self.schedule
                .lock()
                .finished(i, self.origin.elapsed(), wall, gone, BTreeMap::new());
            return Some(Vec::new());
        }
        tokio::select! {
            r = rx => Some(r.unwrap_or_default()),
            _ = ctx.stop_requested() => None,
        }
    }
}

/// The databases `entry` replicates now (a folder is listed each time).
fn entry_paths(engine: &Engine, entry: &Entry) -> Result<Vec<String>, String> {
    match &entry.databases {
        Databases::List(list) => Ok(list.clone()),
        Databases::Folder(folder) => engine
            .list_databases()
            .map(|all| in_folder(all, folder))
            .map_err(|e| format!("listing {folder}/: {e}")),
    }
}

/// One run of `entry`: each of its databases in turn, pull and/or push
/// with the peer; a database that fails is named and the others go on.
/// An on-change entry first opens its databases and notes their change
/// sequences (`watch.rs`): they are returned with those sequences, to be
/// waited on from there.
fn run_entry(
    engine: &Engine,
    entry: &Entry,
    purge_interval: Duration,
    limits: Limits,
) -> (Outcome, Vec<Watched>, BTreeMap<String, u64>) {
    let mut outcome = Outcome::default();
    let paths = match entry_paths(engine, entry) {
        Ok(paths) => paths,
        Err(why) => {
            outcome.failures.push(why);
            return (outcome, Vec::new(), BTreeMap::new());
        }
    };
    let watched = watch::open(engine, entry, &paths);
    let mut seen = watch::seen_now(&watched);
    for path in paths {
        let request = PeerReplication {
            local: path.clone(),
            peer: entry.peer.clone(),
            remote: path.clone(),
            credentials: entry.credentials.clone(),
            direction: entry.direction,
            selection: entry.selection.clone(),
            create: false,
        };
        match driver::replicate(engine, &request, purge_interval, limits) {
            Ok(r) => {
                for p in &r.pulls {
                    outcome.documents += p.documents;
                    outcome.bytes += p.bytes_on_wire;
                }
                for w in r.warnings {
                    tracing::warn!(entry = %entry.name, "replication of {path}: {w}");
                    outcome.warnings.push(format!("{path}: {w}"));
                }
                tracing::info!(entry = %entry.name, "replicated {path} with {}", entry.peer);
            }
            Err(e) => {
                tracing::warn!(entry = %entry.name, "replicating {path} with {}: {e}", entry.peer);
                outcome.failures.push(format!("{path}: {e}"));
                // Its commits are still to replicate: waits on it start
                // from 0 and so wake at once (the delay backs off, I51).
                seen.remove(&path);
            }
        }
    }
    (outcome, watched, seen)
}

/// The paths of `all` inside `folder` (every one for the empty folder).
fn in_folder(all: Vec<String>, folder: &str) -> Vec<String> {
    if folder.is_empty() {
        return all;
    }
    let prefix = format!("{folder}/");
    all.into_iter().filter(|p| p.starts_with(&prefix)).collect()
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_folder_holds_its_own_paths_only() {
        let all = vec![
            "mail/a.fdb".into(),
            "mailx.fdb".into(),
            "mail/sub/b.fdb".into(),
        ];
        assert_eq!(
            super::in_folder(all.clone(), "mail"),
            ["mail/a.fdb", "mail/sub/b.fdb"]
        );
        assert_eq!(super::in_folder(all.clone(), "").len(), 3);
    }
}
