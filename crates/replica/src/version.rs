//! What the machines need of a document version: a total order, and bytes
//! that name it.
//!
//! The machines are generic over the version type so they can be tested
//! with simple types and run later over `nsf::Version` (sequence number,
//! sequence time, digest; ordered lexicographically, higher wins). Two
//! promises are assumed of every implementation, and the conflict rule
//! (docs/design.md §11.4) rests on them:
//!
//! 1. **Higher wins, everywhere.** `Ord` is total and the same on every
//!    replica, so whichever order replications run in, every replica keeps
//!    the same winner: the maximum.
//! 2. **Equal versions are equal documents.** Two notes with the same UNID
//!    and an equal version hold the same content (the digest sees to that
//!    for `nsf::Version`), so "I already have it" needs no byte comparison.
//!
//! An edit (a delete included) produces a version greater than the one it
//! was made from, and records that one among its *revisions*: that is how
//! a replica tells a newer edit of what it holds from a concurrent one.

use std::fmt::Debug;

/// A document version as replication sees it.
pub trait Version: Ord + Clone + Debug {
    /// Appends bytes that identify this version and no other, the same on
    /// every replica. Conflict documents' UNIDs are derived from them
    /// ([`crate::conflict_unid`]), so changing them changes those UNIDs.
    fn identity(&self, out: &mut Vec<u8>);
}
