//! Purging old deletion stubs.
//!
//! A deletion travels to the other replicas as a stub (design.md §11.4),
//! so a stub must outlive the longest time a replica may go without
//! replicating; after that it is dead weight in every change listing and
//! every first replication. [`Database::purge_stubs`] removes the stubs
//! whose deletion is older than the purge interval — by the later of its
//! sequence time (stamped by the engine clock for a deletion made here,
//! I22) and its modified time (when a version whose sequence time is no
//! clock's was stored: a CouchDB revision's is `Rev::order_time`, before
//! 1979, design.md §11.9, so by it alone every such stub would look
//! decades old and go at the next start, I63): the note, its UNID and change
//! sequence index entries, its overflow chain and its revisions, in one
//! logged transaction. The change sequence does not move (a purge is not
//! a change: nothing replicates it, like a history, I30).
//!
//! The risk it brings is the classic one, I45: a replica that last
//! replicated with this one longer ago than the interval may still hold
//! a document whose stub is gone here, and would send it back as new. The
//! replication drivers warn about such a peer (`folio/src/peerrepl`).
//!
//! ```text
//!   purge_stubs(age) ─ scan the changes (committed reads): stubs ─▶ candidates
//!                    ─ one write: for each candidate, under the writer,
//!                      still a stub and deleted_at < now − age? ─▶ remove
//! ```

use super::apply::WriteOp;
use super::Database;
use crate::records::{free_stored, load_stored, lookup_unid};
use crate::txn::Txn;
use crate::{lineage, NsfResult, Unid};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;
use storage::btree;

/// Changes read per step of the scan for stubs.
const SCAN_PAGE: usize = 1000;

impl Database {
    /// Removes every deletion stub whose deletion is older than `age` by
    /// the engine's clock; returns how many it removed. Durable when it
    /// returns (I2); a failure or a crash removes none (I3, I4). Live
    /// documents are never touched, whatever their age.
    pub fn purge_stubs(&self, age: Duration) -> NsfResult<u64> {
        let mut candidates = Vec::new();
        let mut since = crate::Seq(0);
        loop {
            let page = self.modified_since(since, SCAN_PAGE)?;
            let Some(last) = page.last() else { break };
            since = last.change_seq;
            candidates.extend(page.iter().filter(|n| n.deleted).map(|n| n.oid.unid));
        }
        if candidates.is_empty() {
            return Ok(0);
        }
        let removed = Arc::new(AtomicU64::new(0));
        self.submit(WriteOp::PurgeStubs {
            unids: candidates,
            age_micros: i64::try_from(age.as_micros()).unwrap_or(i64::MAX),
            removed: removed.clone(),
        })?;
        Ok(removed.load(Ordering::Relaxed))
    }
}

/// The body of the purge's write: removes each of `unids` that is still
/// a stub older than `age_micros` at this transaction's time.
pub(super) fn purge(
    txn: &mut Txn<'_>,
    unids: &[Unid],
    age_micros: i64,
    removed: &AtomicU64,
) -> NsfResult<()> {
    let cutoff = txn.now().0.saturating_sub(age_micros);
    for &unid in unids {
        let Some(id) = lookup_unid(txn, &txn.header, unid)? else {
            continue;
        };
        let (note, stored) = load_stored(txn, unid, id)?;
        if !note.deleted || deleted_at(&note) >= cutoff {
            continue;
        }
        free_stored(txn, id, stored)?;
        let mut unid_root = txn.header.unid_root;
        btree::remove(txn, &mut unid_root, &unid.0)?;
        txn.header.unid_root = unid_root;
        if txn.header.repl_root != storage::PageId::NONE {
            lineage::set_revisions(txn, unid, &[])?;
        }
        removed.fetch_add(1, Ordering::Relaxed);
    }
    Ok(())
}

/// When a stub's deletion happened, as far as this file can tell (module
/// docs): the later of its sequence time and its modified time, in
/// microseconds.
fn deleted_at(note: &crate::Note) -> i64 {
    note.oid.seq_time.0.max(note.modified.0)
}
