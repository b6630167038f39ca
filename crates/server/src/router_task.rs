//! The mail router as a server task (`router`): it drives
//! `mail::Router::pass`, which has no thread, sleep or poll of its own.
//!
//! ```text
//!   loop:  [blocking] durable seq of every mail box ─▶ pass
//!          wait for the first of:  stop requested ─▶ return
//!                                  a mail box commits past its seq (I23)
//!                                  the pass's next_due (earliest retry)
//!                                  RESCAN (a mail box made since)
//!          (a pass that left work runs again at once)
//! ```
//!
//! The seqs are read before the pass, so a deposit committed during it
//! wakes the next wait at once; the router's own writes to the boxes do
//! too, and the pass after finds nothing due and writes nothing. A failed
//! pass (the directory cannot be read) is logged and tried again after
//! RESCAN; a stop is honoured between passes (a pass is bounded: at most
//! 500 deposits from all the boxes, delivered by at most `router.workers`
//! threads of its own, all joined before the pass returns).

use crate::stats::Stats;
use crate::tasks::{Task, TaskContext, TaskResult};
use futures_util::future::BoxFuture;
use mail::{Router, RouterConfig};
use nsf::{Database, Engine, Seq, SystemClock, Timestamp};
use std::sync::Arc;
use std::time::Duration;
use views::Views;

/// Longest wait between passes: how soon a mail box made since the last
/// pass (its first deposit) is watched.
const RESCAN: Duration = Duration::from_secs(10);

/// The router task (see the module docs).
pub struct RouterTask {
    router: Arc<Router>,
    engine: Arc<Engine>,
    views: Arc<Views>,
}

impl RouterTask {
    /// The router over `engine` and `views` with `config`, queueing mail
    /// for other domains as `outbound` says, its statistics reported with
    /// `stats` (`router.*`).
    pub fn new(
        engine: Arc<Engine>,
        views: Arc<Views>,
        stats: &Stats,
        config: RouterConfig,
        outbound: mail::outbound::OutboundConfig,
    ) -> RouterTask {
        let router = Arc::new(Router::new(config, Arc::new(SystemClock)).with_outbound(outbound));
        stats.set_router(router.clone());
        RouterTask {
            router,
            engine,
            views,
        }
    }
}

/// The mail boxes there are, with their durable change sequence.
fn watched(engine: &Engine) -> Vec<(Arc<Database>, Seq)> {
    let Ok(paths) = engine.list_databases() else {
        return Vec::new();
    };
    paths
        .iter()
        .filter(|p| p.ends_with(".box.fdb") && p.starts_with("mail"))
        .filter_map(|p| engine.open_database(p).ok())
        .map(|db| {
            let seq = db.durable_seq();
            (db, seq)
        })
        .collect()
}

impl Task for RouterTask {
    fn name(&self) -> &str {
        "router"
    }

    fn run(self: Box<Self>, mut ctx: TaskContext) -> BoxFuture<'static, TaskResult> {
        Box::pin(async move {
            loop {
                if ctx.is_stop_requested() {
                    return Ok(());
                }
                let (router, engine, views) =
                    (self.router.clone(), self.engine.clone(), self.views.clone());
                let (boxes, pass) = tokio::task::spawn_blocking(move || {
                    let boxes = watched(&engine);
                    (boxes, router.pass(&engine, &views))
                })
                .await?;
                let wait = match pass {
                    Ok(p) if p.more => Duration::ZERO,
                    Ok(p) => p
                        .next_due
                        .map_or(RESCAN, |due| until(due, self.router.now())),
                    Err(e) => {
                        tracing::warn!(error = %e, "mail router: a pass failed; trying again");
                        RESCAN
                    }
                };
                if wait.is_zero() {
                    continue;
                }
                let changes = async {
                    if boxes.is_empty() {
                        return std::future::pending::<()>().await;
                    }
                    let waits = boxes.iter().map(|(db, seq)| Box::pin(db.next_change(*seq)));
                    let _ = futures_util::future::select_all(waits).await;
                };
                tokio::select! {
                    _ = ctx.stop_requested() => return Ok(()),
                    _ = changes => {}
                    _ = tokio::time::sleep(wait.min(RESCAN)) => {}
                }
            }
        })
    }
}

/// The wait from `now` until `due` (zero if past).
fn until(due: Timestamp, now: Timestamp) -> Duration {
    Duration::from_micros(due.0.saturating_sub(now.0).max(0) as u64)
}
