//! Waiting for the local commits that make an on-change entry run: the
//! change feed of each of its databases (`nsf::Database::next_change`),
//! so the task sleeps until a commit is durable, with no polling.
//!
//! ```text
//!   run starts ─▶ open the entry's databases, note each durable seq (`seen`)
//!   task idle  ─▶ next_change(seen) on every database of every entry that
//!                 waits (Schedule::waits_for_change) ─▶ the first to answer
//!                 ─▶ Schedule::changed(entry)
//! ```
//!
//! Waiting from the sequence seen when the entry's last run *started*
//! means a commit made during the run (a user's, or the run's own pull
//! writing the peer's documents) makes one more run; a commit the
//! replicator wrote is then found already held on the other side and
//! writes nothing, so the exchange settles (I51). A database whose
//! replication failed keeps no sequence: its wait starts from 0 and so
//! wakes at once, and the schedule backs the retries off. A database waited on
//! stays open (nsf's `watch.rs`), so an entry watches at most
//! `MAX_WATCHED` databases; the others follow its interval.

use super::config::Entry;
use futures_util::future::BoxFuture;
use nsf::{Database, Engine, Seq};
use std::collections::BTreeMap;
use std::sync::Arc;

/// The most databases one entry waits on.
pub const MAX_WATCHED: usize = 64;

/// A database an entry waits on, by path.
pub type Watched = (String, Arc<Database>);

/// Opens the first `MAX_WATCHED` of `paths` for entry `entry`'s waits;
/// one that cannot be opened is left out (its run reports why).
pub fn open(engine: &Engine, entry: &Entry, paths: &[String]) -> Vec<Watched> {
    if entry.on_change.is_none() {
        return Vec::new();
    }
    if paths.len() > MAX_WATCHED {
        tracing::warn!(
            entry = %entry.name,
            "{} databases: only the first {MAX_WATCHED} replicate on change, the others every interval",
            paths.len()
        );
    }
    paths
        .iter()
        .take(MAX_WATCHED)
        .filter_map(|p| engine.open_database(p).ok().map(|db| (p.clone(), db)))
        .collect()
}

/// Each watched database's durable change sequence now.
pub fn seen_now(watched: &[Watched]) -> BTreeMap<String, u64> {
    watched
        .iter()
        .map(|(p, db)| (p.clone(), db.durable_seq().0))
        .collect()
}

/// Where a wait on `db` starts: the sequence `seen` holds for it, or 0
/// when it holds none or one past the database's own (a database
/// replaced since), so that those count as changed.
fn start_of(seen: &BTreeMap<String, u64>, path: &str, db: &Database) -> Seq {
    let held = seen.get(path).copied().unwrap_or(0);
    Seq(if held > db.durable_seq().0 { 0 } else { held })
}

/// What a wait ended with: entry `entry`'s database `path` has a commit
/// past what was seen, or can have none (closed, failed: stop waiting on
/// it).
pub enum Woken {
    Changed {
        entry: usize,
    },
    Gone {
        entry: usize,
        path: String,
        why: nsf::NsfError,
    },
}

/// Waits for the first commit on any database of the entries given as
/// `(index, watched, seen)`; pending for ever when there is none to wait
/// on (the caller selects it beside its timer and stop signal).
pub async fn first_change(waits: Vec<(usize, Vec<Watched>, BTreeMap<String, u64>)>) -> Woken {
    let mut futures: Vec<BoxFuture<'static, Woken>> = Vec::new();
    for (entry, watched, seen) in waits {
        for (path, db) in watched {
            let after = start_of(&seen, &path, &db);
            futures.push(Box::pin(async move {
                match db.next_change(after).await {
                    Ok(_) => Woken::Changed { entry },
                    Err(why) => Woken::Gone { entry, path, why },
                }
            }));
        }
    }
    if futures.is_empty() {
        return std::future::pending().await;
    }
    futures_util::future::select_all(futures).await.0
}

#[cfg(test)]
mod tests {
    use super::*;
    use nsf::EngineConfig;

    fn engine() -> Engine {
        let mut cfg = EngineConfig::new("/data");
        cfg.background = false;
        Engine::open(Arc::new(storage::backend::MemBackend::new()), cfg)
            .unwrap()
            .0
    }

    fn commit(db: &Database) {
        db.create(vec![nsf::Item {
            name: "Subject".into(),
            value: nsf::ItemValue::Text("one".into()),
        }])
        .unwrap();
    }

    #[test]
    fn a_commit_wakes_the_entry_that_watches_its_database() {
        let engine = engine();
        let (a, b) = (
            engine.create_database("a.fdb", "").unwrap(),
            engine.create_database("b.fdb", "").unwrap(),
        );
        commit(&a);
        let waits = vec![
            (
                1,
                vec![("a.fdb".to_string(), a.clone())],
                seen_now(&[("a.fdb".to_string(), a.clone())]),
            ),
            (
                4,
                vec![("b.fdb".to_string(), b.clone())],
                seen_now(&[("b.fdb".to_string(), b.clone())]),
            ),
        ];
        let rt = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        let writer = {
            let b = b.clone();
            std::thread::spawn(move || commit(&b))
        };
        let woken = rt.block_on(first_change(waits));
        writer.join().unwrap();
        assert!(matches!(woken, Woken::Changed { entry: 4 }), "b's entry");

        // A database that can have no change any more ends its wait.
        let seen = seen_now(&[("a.fdb".to_string(), a.clone())]);
        let waits = vec![(2, vec![("a.fdb".to_string(), a.clone())], seen)];
        drop(b);
        engine.close().unwrap();
        match rt.block_on(first_change(waits)) {
            Woken::Gone { entry, path, .. } => assert_eq!((entry, path.as_str()), (2, "a.fdb")),
            Woken::Changed { .. } => panic!("no commit was made"),
        }
    }

    #[test]
    fn a_wait_starts_at_the_seen_sequence_or_at_zero() {
        let engine = engine();
        let db = engine.create_database("a.fdb", "").unwrap();
        commit(&db);
        let now = db.durable_seq().0;
        assert!(now > 0);
        let seen = |s: u64| BTreeMap::from([("a.fdb".to_string(), s)]);
        assert_eq!(start_of(&seen(now), "a.fdb", &db), Seq(now));
        assert_eq!(start_of(&seen(now - 1), "a.fdb", &db), Seq(now - 1));
        assert_eq!(start_of(&seen(now + 5), "a.fdb", &db), Seq(0), "replaced");
        assert_eq!(start_of(&seen(now), "b.fdb", &db), Seq(0), "never seen");
        drop(db);
        engine.close().unwrap();
    }
}
