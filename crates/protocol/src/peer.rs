//! Server-to-server replication asked of a server: the request's
//! parameters and the answer's summaries.
//!
//! A server administrator asks one server to replicate one of its own
//! databases with a database on a peer server (`ReplicatePeer`); the
//! server connects to the peer with the credentials given, runs the
//! pulls itself (its own file on one end, the peer's `Replicate` door on
//! the other) and answers with one summary per pull. These are the
//! fields that request and answer carry; the work is the `folio`
//! binary's (the one crate that sees both the replica layer and the
//! client), reached through a hook the server holds.

use serde::{Deserialize, Serialize};

#[cfg(test)]
use proptest_derive::Arbitrary;

/// Which way documents flow between the server's database and the peer's.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(test, derive(Arbitrary))]
pub enum PeerDirection {
    /// From the peer into the server's database.
    Pull,
    /// From the server's database to the peer.
    Push,
    /// A pull, then a push.
    Both,
}

/// One server-to-server replication, as asked (`ReplicatePeer`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(test, derive(Arbitrary))]
pub struct PeerReplication {
    /// The database here, relative to the data directory.
    pub local: String,
    /// The peer's native address, HOST:PORT.
    pub peer: String,
    /// The database on the peer, relative to its data directory.
    pub remote: String,
    /// The user to sign in to the peer as, and its password (or API
    /// token); `None` signs in anonymously.
    pub credentials: Option<(String, String)>,
    /// Which way documents flow.
    pub direction: PeerDirection,
    /// Only documents this formula selects travel (pulls only).
    pub selection: Option<String>,
    /// Make `local` a new replica of `remote` first (pulls only).
    pub create: bool,
}

/// What one pull of a server-to-server replication did.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(test, derive(Arbitrary))]
pub struct PeerPull {
    /// `local` or `peer:remote`, whichever sent.
    pub from: String,
    /// The other end.
    pub to: String,
    /// Documents that travelled.
    pub documents: u64,
    /// Their content bytes.
    pub bytes: u64,
    /// Conflict documents made (pulls into this server only).
    pub conflicts: u64,
    /// Bytes the connection moved both ways (framed, compressed).
    pub bytes_on_wire: u64,
    /// Replication packets' bytes both ways, before compression.
    pub bytes_uncompressed: u64,
    /// `Replicate` requests sent to the peer.
    pub round_trips: u64,
    /// Attachments that did not travel because the receiving side held
    /// them already (sent as references).
    pub attachments_skipped: u64,
    /// Their original bytes.
    pub attachment_bytes_skipped: u64,
    /// How long it took, in milliseconds.
    pub millis: u64,
}

/// The answer to `ReplicatePeer`: one summary per pull, and warnings
/// (such as a peer last seen longer ago than the purge interval).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(test, derive(Arbitrary))]
pub struct PeerReplicated {
    /// One per pull, in the order run.
    pub pulls: Vec<PeerPull>,
    /// What the replication warns about.
    pub warnings: Vec<String>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Request, Response};

    /// Server-to-server replication sits at request tag 34 and its
    /// answer at response tag 26.
    #[test]
    fn replicate_peer_has_its_tags() {
        let r = Request::ReplicatePeer(PeerReplication {
            local: "a".into(),
            peer: "p".into(),
            remote: "b".into(),
            credentials: None,
            direction: PeerDirection::Both,
            selection: None,
            create: false,
        });
        assert_eq!(
            r.encode().unwrap(),
            [34, 1, b'a', 1, b'p', 1, b'b', 0, 2, 0, 0]
        );
        let a = Response::PeerReplicated(PeerReplicated::default());
        assert_eq!(a.encode().unwrap(), [26, 0, 0]);
    }
}
