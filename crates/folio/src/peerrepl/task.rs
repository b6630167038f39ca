//! Server-to-server replication inside `folio serve`: one replicator
//! thread that runs every replication with a peer, the scheduled task
//! that feeds it `[[replication]]` entries, and the hooks that give the
//! server its `ReplicatePeer` door and its `replication.*` statistics.
//!
//! ```text
//!   ReplicatePeer (native) ─▶ Service ─▶ PeerReplicator ─┐
//!                                                         ├─▶ replicator thread ─▶ driver.rs (one at a time)
//!   ScheduleTask (tokio) ── due entry, per database ──────┘        │
//!        ▲  Schedule (schedule.rs) ◀── outcome ───────────────────┘
//!        └─ StatsSource: replication.<name>.* in show stats, GET /stats
//! ```
//!
//! Why a thread of its own: the driver is the blocking client's
//! (`client::blocking`, which refuses to run inside a tokio runtime) and
//! its writes are engine calls that block; and replicating one database
//! pair at a time means a scheduled run and a one-shot request never run
//! two sessions over the same histories at once. The thread holds the
//! engine weakly, so it never keeps a shutting-down server's engine alive
//! (the host closes it whoever holds it, and a replication cut short
//! there resumes from its checkpoint, I26). A scheduled run in progress
//! when the server stops is left to end on its own (or be cut by the
//! engine's close); the task returns at once.

use super::config::{Databases, Entry};
use super::driver;
use super::schedule::{Outcome, Schedule};
use crate::error::{FolioError, FolioResult};
use futures_util::future::BoxFuture;
use nsf::Engine;
use parking_lot::Mutex;
use protocol::{PeerReplicated, PeerReplication, Statistic};
use replica::local::net::Limits;
use server::service::PeerReplicator;
use server::stats::StatsSource;
use server::{ServerError, ServerResult, Task, TaskContext, TaskResult};
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
        other => ServerError::Internal(format!("replicating with the peer: {other}")),
    }
}

/// Gives `host` its `ReplicatePeer` door, the stub purge task
/// (`purge.rs`) and, with `entries`, the scheduled replication task and
/// its statistics.
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
    host.set_peer_replicator(Arc::new(replicator.clone()));
    if entries.is_empty() {
        return Ok(());
    }
    let origin = Instant::now();
    let names = entries
        .iter()
        .map(|e| (e.name.clone(), e.interval))
        .collect();
    let schedule = Arc::new(Mutex::new(Schedule::new(names, Duration::ZERO)));
    host.stats().add_source(Arc::new(Board {
        schedule: schedule.clone(),
        origin,
    }));
    host.add_task(ScheduleTask {
        entries,
        schedule,
        origin,
        replicator,
    })?;
    Ok(())
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

/// Runs the `[[replication]]` entries as they fall due (module docs).
struct ScheduleTask {
    entries: Vec<Entry>,
    schedule: Arc<Mutex<Schedule>>,
    origin: Instant,
    replicator: Replicator,
}

/// How long the task sleeps when nothing is scheduled to wake it.
const IDLE: Duration = Duration::from_secs(3600);

impl Task for ScheduleTask {
    fn name(&self) -> &str {
        "replication"
    }

    fn run(self: Box<Self>, mut ctx: TaskContext) -> BoxFuture<'static, TaskResult> {
        Box::pin(async move {
            loop {
                let now = self.origin.elapsed();
                let due = self.schedule.lock().due(now);
                let Some(i) = due else {
                    let wait = self.schedule.lock().wake_in(now).unwrap_or(IDLE);
                    tokio::select! {
                        _ = tokio::time::sleep(wait) => continue,
                        _ = ctx.stop_requested() => return Ok(()),
                    }
                };
                self.schedule.lock().started(i);
                let entry = self.entries[i].clone();
                let (tx, rx) = tokio::sync::oneshot::channel();
                let (purge, limits) = (self.replicator.purge_interval, self.replicator.limits);
                self.replicator.submit(Box::new(move |engine| {
                    let _ = tx.send(run_entry(engine, &entry, purge, limits));
                }));
                let outcome = tokio::select! {
                    r = rx => r.unwrap_or_else(|_| Outcome {
                        failures: vec!["the replicator thread is gone".into()],
                        ..Outcome::default()
                    }),
                    _ = ctx.stop_requested() => return Ok(()),
                };
                let wall = nsf::Timestamp::now().0;
                self.schedule
                    .lock()
                    .finished(i, self.origin.elapsed(), wall, outcome);
            }
        })
    }
}

/// One run of `entry`: each of its databases in turn, pull and/or push
/// with the peer; a database that fails is named and the others go on.
fn run_entry(engine: &Engine, entry: &Entry, purge_interval: Duration, limits: Limits) -> Outcome {
    let mut outcome = Outcome::default();
    let paths = match &entry.databases {
        Databases::List(list) => list.clone(),
        Databases::Folder(folder) => match engine.list_databases() {
            Ok(all) => in_folder(all, folder),
            Err(e) => {
                outcome.failures.push(format!("listing {folder}/: {e}"));
                return outcome;
            }
        },
    };
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
            }
        }
    }
    outcome
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
