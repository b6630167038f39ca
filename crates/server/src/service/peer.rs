//! Server-to-server replication asked of this server (`ReplicatePeer`):
//! the door's access rule and the hook the work goes through.
//!
//! Replicating with a peer server means being a *client* of the peer,
//! and the client library sits above this crate; so the server does not
//! run it itself. Whoever builds the server (the `folio` binary, which
//! composes engine, server and client) gives the service a
//! [`PeerReplicator`]; without one the request is refused as not
//! configured. The rule here: server administrators only (the server
//! connects where it is told, with the credentials it is given).
//!
//! The same hook makes a scheduled `[[replication]]` entry due now
//! (`POST /admin/replication/{name}/run`, the console's "Run now").
//!
//! ```text
//!   ReplicatePeer ─▶ Service::replicate_peer ─ admin? ─▶ PeerReplicator (folio)
//!                                                          ├─ connect to the peer
//!                                                          └─ pulls: this server's file ⇄ peer's Replicate door
//! ```
//!
//! Durability is the replicator's to keep and state: its answer comes
//! only once every pull's writes and history are durable on their target
//! (design.md §11.7, I26, I27).

use super::{Caller, Service};
use crate::{ServerError, ServerResult};
use protocol::{PeerReplicated, PeerReplication};
use std::sync::Arc;

/// Runs one server-to-server replication for the service (blocking: it
/// is called on a worker thread and returns when the replication ends).
pub trait PeerReplicator: Send + Sync {
    /// Replicates as `request` says; an error names what went wrong.
    fn replicate(&self, request: PeerReplication) -> ServerResult<PeerReplicated>;

    /// Makes the `[[replication]]` entry `name` (ignoring case) due now,
    /// without waiting for it to run: whether it was made due or is
    /// running already. No such entry is `NotFound`.
    fn run_entry_now(&self, name: &str) -> ServerResult<EntryRun> {
        Err(ServerError::NotFound(format!(
            "no [[replication]] entry named {name:?} on this server"
        )))
    }
}

/// What asking for a scheduled entry's run did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EntryRun {
    /// Due now: the schedule runs it next.
    Due,
    /// Running already: it is left to finish.
    Running,
}

impl Service {
    /// Hands `ReplicatePeer` requests to `replicator` from now on.
    pub fn with_peer_replicator(mut self, replicator: Option<Arc<dyn PeerReplicator>>) -> Service {
        self.peer = replicator;
        self
    }

    /// Runs the `[[replication]]` entry `name` now (server
    /// administrators only): it is made due and the schedule runs it next.
    pub fn run_replication_now(&self, caller: &Caller, name: &str) -> ServerResult<EntryRun> {
        if !caller.admin {
            return Err(match caller.user {
                None => ServerError::Unauthenticated(
                    "running replication is for server administrators: sign in as one".into(),
                ),
                Some(_) => ServerError::Forbidden(
                    "running replication is for server administrators".into(),
                ),
            });
        }
        match &self.peer {
            Some(r) => r.run_entry_now(name),
            None => Err(ServerError::NotFound(format!(
                "no [[replication]] entry named {name:?} on this server"
            ))),
        }
    }

    /// Replicates a database of this server with one on a peer
    /// (module docs). Server administrators only.
    pub fn replicate_peer(
        &self,
        caller: &Caller,
        request: PeerReplication,
    ) -> ServerResult<PeerReplicated> {
        if !caller.admin {
            return Err(ServerError::Forbidden(
                "replicating with a peer server is for server administrators".into(),
            ));
        }
        match &self.peer {
            Some(r) => r.replicate(request),
            None => Err(ServerError::BadRequest(
                "this server does not replicate with peers (no replicator is configured)".into(),
            )),
        }
    }
}
