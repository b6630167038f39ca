//! The stub purge task: deletion stubs older than `purge_interval_days`
//! (folio.toml, server-wide, default 90) are removed from every database
//! of the server, at start and then once a day.
//!
//! Why server-wide: the interval is a promise about the replication
//! topology ("every replica replicates at least this often"), which is
//! the server's, and one setting is what the replication warning (I45)
//! compares a peer's last replication against. Why a task rather than at
//! compact: stubs accumulate whether or not anyone compacts, and the
//! purge is a small logged write per database (`nsf::Database::
//! purge_stubs`, durable when it returns, on the engine's clock so tests
//! use a `ManualClock`).
//!
//! ```text
//!   PurgeTask ─ at start, then every PURGE_EVERY ─▶ spawn_blocking(purge_all)
//!                 purge_all: every database ─▶ purge_stubs(interval), logged
//! ```

use futures_util::future::BoxFuture;
use nsf::Engine;
use server::{Task, TaskContext, TaskResult};
use std::sync::Arc;
use std::time::Duration;

/// The purge interval when folio.toml gives none.
pub const DEFAULT_PURGE_INTERVAL: Duration = Duration::from_secs(90 * 86_400);
/// How often the task purges.
const PURGE_EVERY: Duration = Duration::from_secs(86_400);

/// What one pass removed.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Purged {
    /// Databases looked at.
    pub databases: u64,
    /// Stubs removed.
    pub stubs: u64,
    /// Databases that could not be purged, each with why.
    pub failures: Vec<String>,
}

/// Purges every database of `engine` of stubs older than `interval`;
/// a database that fails is named and the others go on. Stops early
/// when `stop` says so.
pub fn purge_all(engine: &Engine, interval: Duration, stop: &dyn Fn() -> bool) -> Purged {
    let mut out = Purged::default();
    let paths = match engine.list_databases() {
        Ok(p) => p,
        Err(e) => {
            out.failures.push(format!("listing the databases: {e}"));
            return out;
        }
    };
    for path in paths {
        if stop() {
            break;
        }
        out.databases += 1;
        match engine
            .open_database(&path)
            .and_then(|db| db.purge_stubs(interval))
        {
            Ok(n) => out.stubs += n,
            Err(e) => out.failures.push(format!("{path}: {e}")),
        }
    }
    out
}

/// The server task running [`purge_all`] (module docs).
pub struct PurgeTask {
    engine: Arc<Engine>,
    interval: Duration,
}

impl PurgeTask {
    /// A task purging stubs older than `interval` from `engine`'s databases.
    pub fn new(engine: Arc<Engine>, interval: Duration) -> PurgeTask {
        PurgeTask { engine, interval }
    }
}

impl Task for PurgeTask {
    fn name(&self) -> &str {
        "purge"
    }

    fn run(self: Box<Self>, mut ctx: TaskContext) -> BoxFuture<'static, TaskResult> {
        Box::pin(async move {
            loop {
                let (engine, interval, c) = (self.engine.clone(), self.interval, ctx.clone());
                let pass = tokio::task::spawn_blocking(move || {
                    purge_all(&engine, interval, &|| c.is_stop_requested())
                });
                let purged = tokio::select! {
                    r = pass => r.map_err(|e| format!("the purge pass: {e}"))?,
                    _ = ctx.stop_requested() => return Ok(()),
                };
                for f in &purged.failures {
                    tracing::warn!("purging deletion stubs: {f}");
                }
                tracing::info!(
                    "purged {} deletion stub(s) older than {} days from {} database(s)",
                    purged.stubs,
                    interval.as_secs() / 86_400,
                    purged.databases
                );
                tokio::select! {
                    _ = tokio::time::sleep(PURGE_EVERY) => {}
                    _ = ctx.stop_requested() => return Ok(()),
                }
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use nsf::{EngineConfig, Item, ItemValue, ManualClock, Timestamp};

    #[test]
    fn the_interval_is_a_checked_setting() {
        let days = |text: &str| crate::config::parse(text).unwrap().purge_interval();
        assert_eq!(days(""), Ok(DEFAULT_PURGE_INTERVAL));
        assert_eq!(
            days("purge_interval_days = 30"),
            Ok(Duration::from_secs(30 * 86_400))
        );
        for bad in ["purge_interval_days = 0", "purge_interval_days = 5000"] {
            let e = days(bad).unwrap_err();
            assert!(e.contains("purge_interval_days"), "{bad}: {e}");
        }
    }

    #[test]
    fn every_database_is_purged_by_the_engine_clock() {
        const DAY: i64 = 86_400_000_000;
        let t0 = Timestamp(1_700_000_000_000_000);
        let clock = Arc::new(ManualClock::new(t0));
        let mut cfg = EngineConfig::new("/data");
        cfg.background = false;
        cfg.clock = clock.clone();
        let backend = Arc::new(storage::backend::MemBackend::new());
        let (engine, _) = Engine::open(backend, cfg).unwrap();
        for path in ["a.fdb", "sub/b.fdb"] {
            let db = engine.create_database(path, "").unwrap();
            let item = Item {
                name: "Subject".into(),
                value: ItemValue::Text("x".into()),
            };
            let unid = db.create(vec![item]).unwrap().unid;
            db.delete(unid, None, false).unwrap();
        }
        let never = || false;
        assert_eq!(purge_all(&engine, DEFAULT_PURGE_INTERVAL, &never).stubs, 0);
        clock.set(Timestamp(t0.0 + 91 * DAY));
        let purged = purge_all(&engine, DEFAULT_PURGE_INTERVAL, &never);
        assert_eq!(
            purged,
            Purged {
                databases: 2,
                stubs: 2,
                failures: vec![]
            }
        );
        assert_eq!(
            purge_all(&engine, DEFAULT_PURGE_INTERVAL, &|| true).databases,
            0
        );
        engine.close().unwrap();
    }
}
