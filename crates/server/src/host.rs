//! The Host: what one server process runs on, built once and closed once.
//!
//! ```text
//!   Host::new(engine, views)
//!     ├─ engine   Arc<nsf::Engine>     ─┐
//!     ├─ views    Arc<views::Views>     ├─▶ host.service(limits): the Service
//!     ├─ users    Arc<UserStore>        │   both front ends call
//!     ├─ stats    Arc<Stats>           ─┘
//!     └─ tasks    the background-task registry (tasks.rs); `stats` first
//!   run(): start the tasks ─ serve ─ stop the tasks (reverse order, by the
//!          shutdown deadline)
//!   close(): views marked clean (bounded wait) ─ Engine::shutdown
//! ```
//!
//! Why one owner: a request job, a background task and the shutdown path
//! all reach the engine, and shutdown must not depend on every one of them
//! having let go of it. The Host holds the things every part shares, hands
//! them out as `Arc`s, and at the end closes the engine *while shared*
//! (`Engine::shutdown`): flushed, checkpointed and its log shut whatever a
//! stuck job still holds, which from then on gets "the engine is closed".
//! A new subsystem (the mail router, scheduled replication) is added as a
//! [`Task`] with [`Host::add_task`] before `run`.

use crate::auth::UserStore;
use crate::service::{Limits, PeerReplicator, Service};
use crate::stats::{Stats, Ticker};
use crate::tasks::{Task, Tasks};
use crate::{ServerError, ServerResult};
use nsf::Engine;
use std::sync::Arc;
use views::Views;

/// The engine, views, users, statistics and background tasks of one
/// server (see the module docs).
pub struct Host {
    engine: Arc<Engine>,
    views: Arc<Views>,
    users: Arc<UserStore>,
    stats: Arc<Stats>,
    tasks: Tasks,
    peer: Option<Arc<dyn PeerReplicator>>,
}

impl Host {
    /// A host over an open engine and its views: reads the server users
    /// (`users.json`) and registers the built-in tasks (the statistics
    /// ticker). On failure the engine is closed cleanly.
    pub fn new(engine: Engine, views: Views) -> ServerResult<Host> {
        let users = match UserStore::open(engine.backend(), engine.data_dir()) {
            Ok(u) => Arc::new(u),
            Err(e) => {
                drop(views);
                if let Err(c) = engine.close() {
                    tracing::error!(error = %c, "closing the engine");
                }
                return Err(e);
            }
        };
        // Fixup rebuilt the note tables; their view indexes follow.
        crate::service::rebuild_views_of_auto_fixups(&engine, &views);
        let engine = Arc::new(engine);
        let stats = Arc::new(Stats::new());
        let mut tasks = Tasks::new(stats.tasks().clone());
        tasks.add(Box::new(Ticker::new(stats.clone(), engine.clone())))?;
        Ok(Host {
            engine,
            views: Arc::new(views),
            users,
            stats,
            tasks,
            peer: None,
        })
    }

    /// The engine.
    pub fn engine(&self) -> &Arc<Engine> {
        &self.engine
    }

    /// The views layer.
    pub fn views(&self) -> &Arc<Views> {
        &self.views
    }

    /// The server users.
    pub fn users(&self) -> &Arc<UserStore> {
        &self.users
    }

    /// The statistics (with every task's state).
    pub fn stats(&self) -> &Arc<Stats> {
        &self.stats
    }

    /// Adds a background task, started with the others when the server
    /// starts (in the order added, after the built-in ones) and stopped in
    /// reverse order at shutdown. Its name must be new and fit a statistic
    /// name (`task.<name>.state`).
    pub fn add_task(&mut self, task: impl Task) -> ServerResult<()> {
        self.tasks.add(Box::new(task))
    }

    /// Hands the service's server-to-server replications (the native
    /// `ReplicatePeer`) to `replicator` (`service/peer.rs`).
    pub fn set_peer_replicator(&mut self, replicator: Arc<dyn PeerReplicator>) {
        self.peer = Some(replicator);
    }

    /// The service both front ends call, over this host's engine, views,
    /// users and statistics.
    pub fn service(&self, limits: Limits) -> Arc<Service> {
        Arc::new(
            Service::new(
                self.engine.clone(),
                self.views.clone(),
                self.users.clone(),
                self.stats.clone(),
                limits,
            )
            .with_peer_replicator(self.peer.clone()),
        )
    }

    pub(crate) fn tasks_mut(&mut self) -> &mut Tasks {
        &mut self.tasks
    }

    /// Closes what the server ran on, whoever still holds it: marks the
    /// view indexes clean, then shuts the engine down (flush, checkpoint,
    /// log closed). Call once the tasks are stopped and the requests have
    /// ended or been cut.
    pub fn close(self) -> ServerResult<()> {
        // Unlogged view indexes are marked clean by the databases' close
        // hooks, which the engine's shutdown runs (I14, I19).
        drop(self.views);
        let holders = Arc::strong_count(&self.engine) - 1;
        if holders > 0 {
            tracing::warn!(
                "{holders} holder(s) of the engine (jobs or tasks that have not ended) remain; \
                 closing it anyway: they now get \"the engine is closed\""
            );
        }
        self.engine
            .shutdown()
            .map_err(|e| ServerError::Internal(format!("closing the engine: {e}")))
    }
}
