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
use nsf::Engine;
use protocol::{PeerDirection, PeerPull, PeerReplicated, PeerReplication};
use replica::local::{ActingFor, LocalOptions};

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
pub fn replicate(engine: &Engine, request: &PeerReplication) -> FolioResult<PeerReplicated> {
    check(request)?;
    let endpoint = Endpoint {
        addr: request.peer.clone(),
        credentials: request.credentials.clone(),
        tls_ca: None,
    };
    let client = endpoint.connect(CLIENT_NAME)?;
    let result = replicate_with(engine, &client, request);
    client.close();
    result
}

fn replicate_with(
    engine: &Engine,
    client: &client::blocking::Client,
    request: &PeerReplication,
) -> FolioResult<PeerReplicated> {
    let (local, remote) = (request.local.as_str(), request.remote.as_str());
    let (db, info) = client.open_database(remote)?;
    let theirs = nsf::ReplicaId(info.replica_id);
    let target = if request.create {
        engine.create_replica(local, theirs, &info.title)?
    } else {
        let target = engine.open_database(local)?;
        let ours = target.info()?.replica_id;
        if ours != theirs {
            return Err(FolioError::BadInput(format!(
                "{local} (replica id {ours}) is not a replica of {remote} on {} (replica id {theirs})",
                request.peer
            )));
        }
        target
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
        ..LocalOptions::default()
    };
    let there = format!("{}:{remote}", request.peer);
    let mut answer = PeerReplicated::default();
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
        millis: u64::try_from(r.elapsed.as_millis()).unwrap_or(u64::MAX),
    }
}
