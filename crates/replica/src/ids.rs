//! The replication layer's own small identifiers.
//!
//! Document and database ids come from `nsf` (`Unid`, `ReplicaId`,
//! `DbInstanceId`, `Seq`, `Timestamp`); what is added here names the
//! things only replication has: one side of a replication (a [`Peer`]: the
//! replica id every copy shares plus the instance id of this one file), a
//! session on one connection, and the requests a machine hands its driver
//! (a local query, a write batch), whose answers come back by id.

use crate::wire;
use nsf::{DbInstanceId, ReplicaId};
use serde::{Deserialize, Serialize};
use std::fmt;

/// One database taking part in a replication.
///
/// All replicas of a database share `replica`; `instance` tells this file
/// apart, and changes when the file's identity does (restore, copy-style
/// compact, rebuilding fixup). A history entry is kept per peer *instance*:
/// another instance's change sequence is another numbering, so an entry
/// for an old instance says nothing about a new one.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Peer {
    /// Shared by every replica of the database.
    #[serde(with = "wire::replica_id")]
    pub replica: ReplicaId,
    /// This file's identity.
    #[serde(with = "wire::instance_id")]
    pub instance: DbInstanceId,
}

impl fmt::Display for Peer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "replica {} instance {}", self.replica, self.instance)
    }
}

/// One replication session on one connection, chosen by the side that
/// opens it. Packets of another session are ignored, so a late packet
/// from an interrupted session can never be taken for a new one's.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct SessionId(pub u64);

/// A local query the puller asked its driver for ("which versions of these
/// UNIDs do you hold?"); the answer names it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct QueryId(pub u64);

/// A write batch the puller asked its driver to make durable; the
/// acknowledgement names it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct BatchId(pub u64);

/// Content a target already holds, named by its digest (for nsf, the
/// SHA-256 of an attachment's original bytes). A Want lists the keys of
/// the versions it replaces, and the source sends such content as a
/// reference instead of its bytes: an edit of a document does not send
/// its unchanged attachments again.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct ContentKey(pub [u8; 32]);

/// Which way documents flow for the side that says it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Role {
    /// Sends summaries and documents.
    Source,
    /// Receives them, writes them and keeps the history.
    Target,
}

/// Who speaks first on a session: the side that opened the connection.
///
/// A pull is opened by the target, a push by the source; the protocol is
/// the same either way, only the first Hello moves.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Opening {
    /// This side sends its Hello at once, on a session id it chose.
    Initiate(SessionId),
    /// This side waits for the peer's Hello and adopts its session id.
    Respond,
}
