//! One server-to-server replication: this server's own database with a
//! database on a peer server, over the peer's native `Replicate` door.
//!
//! The server is the peer's client here: it signs in with the
//! credentials it was given, opens the peer's database, checks that the
//! two are replicas (the same replica id) and runs each pull with the
//! network driver (`replnet.rs`) on its own file — exactly what `folio
//! replicate --server` does from a data directory, so the durability
//! contract is the same: a pull into this server returns once its
//! batches and history are durable here; a push once the peer's target
//! sent `Done`, i.e. after its last batch and history are durable there
//! (I2, I26, I27). A cut connection or a killed server leaves each side's
//! history at its last checkpoint; the next run resumes from it.
//!
//! Access: the peer applies its ACL to the name this server signs in
//! with; here, a pull writes the peer's ACL changes only if that same
//! name is a Manager of this server's replica (the classic rule,
//! `replica::local::ActingFor`), whatever else it writes.
//!
//! ```text
//!   this server's Engine ── open/create local ──┐
//!                                               ├─ replnet::pull / push ─▶ peer's Replicate
//!   client::blocking::Client ── sign in, open ──┘
//! ```
//!
//! Blocking: it runs on the replicator thread (`task.rs`), never on a
//! runtime worker.

use crate::error::{FolioError, FolioResult};
use crate::remote::Endpoint;
use crate::replnet::{self, NetReport};
use nsf::{Database, Engine};
use protocol::{PeerDirection, PeerPull, PeerReplicated, PeerReplication};
use replica::local::net::Limits;
use replica::local::{load_histories, ActingFor, LocalOptions};
use std::sync::Arc;
use std::time::Duration;

/// The client name the server signs in to its peers with.
const CLIENT_NAME: &str = "folio peer replication";

/// Checks a request before anything connects: a selection must parse and
/// applies to pulls only (a push carries no formula); `create` makes the
/// local replica by a pull, so it cannot go with a push alone.
pub fn check(request: &PeerReplication) -> FolioResult<()> {
    if let Some(f) = &request.selection {
        formula::Formula::parse(f)
            .map_err(|e| FolioError::BadInput(format!("selection formula {f:?}: {e}")))?;
        if request.direction != PeerDirection::Pull {
            return Err(FolioError::BadInput(
                "a selection applies to pulls only (a push to a peer carries no formula yet)"
                    .into(),
            ));
        }
    }
    if request.create && request.direction == PeerDirection::Push {
        return Err(FolioError::BadInput(
            "create makes a new local replica by a pull: use direction pull or both".into(),
        ));
    }
    if request.peer.is_empty() {
        return Err(FolioError::BadInput("the peer's address is empty".into()));
    }
    Ok(())
}

/// Replicates as `request` says, on `engine`'s database `request.local`
/// and the peer's `request.remote` (module docs): a pull, a push, or a
/// pull then a push.
/// With `purge_interval`, the answer warns when this server last
/// replicated from the peer's database longer ago than that (I45); a pull
/// takes from the peer what `limits` allow (I48).
pub fn replicate(
    engine: &Engine,
    request: &PeerReplication,
    purge_interval: Duration,
    limits: Limits,
) -> FolioResult<PeerReplicated> {
    check(request)?;
    // The database here first: a bad path, a missing database (or, to
    // create, one already there) is answered before the peer is called.
    let here = match engine.open_database(&request.local) {
        Ok(_) if request.create => {
            return Err(nsf::NsfError::DatabaseExists(request.local.clone()).into())
        }
        Err(nsf::NsfError::NoSuchDatabase(_)) if request.create => None,
        Ok(db) => Some(db),
        Err(e) => return Err(e.into()),
    };
    let endpoint = Endpoint {
        addr: request.peer.clone(),
        credentials: request.credentials.clone(),
        tls_ca: None,
        compression: client::NetCompression::Auto,
    };
    let client = endpoint.connect(CLIENT_NAME)?;
    let result = replicate_with(engine, here, &client, request, purge_interval, limits);
    client.close();
    result
}

/// `here` is the database `request.local`, open, or `None` to create it.
fn replicate_with(
    engine: &Engine,
    here: Option<Arc<Database>>,
    client: &client::blocking::Client,
    request: &PeerReplication,
    purge_interval: Duration,
    limits: Limits,
) -> FolioResult<PeerReplicated> {
    let (local, remote) = (request.local.as_str(), request.remote.as_str());
    let (db, info) = client.open_database(remote)?;
    let theirs = nsf::ReplicaId(info.replica_id);
    let target = match here {
        None => engine.create_replica(local, theirs, &info.title)?,
        Some(target) => {
            let ours = target.info()?.replica_id;
            if ours != theirs {
                return Err(FolioError::BadInput(format!(
                "{local} (replica id {ours}) is not a replica of {remote} on {} (replica id {theirs})",
                request.peer
            )));
            }
            target
        }
    };
    // The peer's ACL changes are written here only if the name this
    // server signs in to the peer with is a Manager here (acl_rule.rs).
    let acting_for = match &request.credentials {
        Some((user, _)) => ActingFor::User(user.clone()),
        None => ActingFor::Anonymous,
    };
    let options = LocalOptions {
        selection: request.selection.clone(),
        acting_for,
        limits,
        ..LocalOptions::default()
    };
    let there = format!("{}:{remote}", request.peer);
    let mut answer = PeerReplicated::default();
    if let Some(w) = stale_peer(&target, info.instance_id, purge_interval, &there)? {
        answer.warnings.push(w);
    }
    if request.direction != PeerDirection::Push {
        let r = replnet::pull(client, db, &target, &options)?;
        answer.pulls.push(summary(&there, local, &r));
    }
    if request.direction != PeerDirection::Pull {
        let r = replnet::push(client, db, &target)?;
        answer.pulls.push(summary(local, &there, &r));
    }
    let _ = client.close_database(db);
    Ok(answer)
}

/// I45: a warning when the last pull from the peer's database
/// (instance `instance`) into `target` is older than `purge_interval`:
/// stubs of deletions made since may be purged on either side, so those
/// documents could come back. No warning before a first replication.
fn stale_peer(
    target: &nsf::Database,
    instance: u64,
    purge_interval: Duration,
    there: &str,
) -> FolioResult<Option<String>> {
    let last = load_histories(target)?
        .into_iter()
        .filter(|h| h.peer.instance.0 == instance)
        .map(|h| h.at)
        .max();
    let Some(last) = last else {
        return Ok(None);
    };
    let age = nsf::Timestamp::now().0.saturating_sub(last.0);
    let limit = i64::try_from(purge_interval.as_micros()).unwrap_or(i64::MAX);
    Ok((age > limit).then(|| {
        format!(
            "{} last replicated with {there} at {}, longer ago than the purge interval \
             ({} days): documents deleted since could come back",
            target.path(),
            last.to_rfc3339(),
            purge_interval.as_secs() / 86_400
        )
    }))
}

fn summary(from: &str, to: &str, r: &NetReport) -> PeerPull {
    PeerPull {
        from: from.to_string(),
        to: to.to_string(),
        documents: r.documents,
        bytes: r.document_bytes,
        conflicts: r.conflicts,
        bytes_on_wire: r.bytes_on_wire,
        bytes_uncompressed: r.bytes_uncompressed,
        round_trips: r.round_trips,
        attachments_skipped: r.attachments_skipped,
        attachment_bytes_skipped: r.skipped_bytes,
        millis: u64::try_from(r.elapsed.as_millis()).unwrap_or(u64::MAX),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use nsf::{DbInstanceId, EngineConfig, Seq, Timestamp};

    const DAY: i64 = 86_400_000_000;

    /// I45: a peer last pulled from longer ago than the purge interval
    /// is warned about; a recent one, or another instance, is not.
    #[test]
    fn a_peer_last_seen_before_the_purge_interval_is_warned_about() {
        let mut cfg = EngineConfig::new("/data");
        cfg.background = false;
        let (engine, _) = Engine::open(Arc::new(storage::backend::MemBackend::new()), cfg).unwrap();
        let db = engine.create_database("a.fdb", "").unwrap();
        let ninety = Duration::from_secs(90 * 86_400);
        let history = |key: u8, instance: u64, days_ago: i64| {
            let entry = replica::History {
                peer: replica::Peer {
                    replica: db.info().unwrap().replica_id,
                    instance: DbInstanceId(instance),
                },
                selection: None,
                seen_upto: Seq(3),
                at: Timestamp(Timestamp::now().0 - days_ago * DAY),
            };
            db.put_replication_history(&[key], &serde_json::to_vec(&entry).unwrap())
                .unwrap();
        };
        assert_eq!(stale_peer(&db, 7, ninety, "b:1:a.fdb").unwrap(), None);
        history(1, 7, 100);
        history(2, 8, 10);
        let w = stale_peer(&db, 7, ninety, "b:1:a.fdb").unwrap().unwrap();
        assert!(
            w.contains("b:1:a.fdb") && w.contains("could come back"),
            "{w}"
        );
        assert_eq!(stale_peer(&db, 8, ninety, "c:1:a.fdb").unwrap(), None);
        history(3, 7, 1);
        assert_eq!(
            stale_peer(&db, 7, ninety, "b:1:a.fdb").unwrap(),
            None,
            "the latest entry for the peer counts"
        );
        drop(db);
        engine.close().unwrap();
    }
}
