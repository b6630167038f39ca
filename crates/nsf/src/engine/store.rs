//! The engine's doors to the attachment store (design.md §2.9): sweeps
//! (I39), which need the open-database cache and the log, and the
//! store's statistics.

use super::Engine;
use crate::dbpath::DbPath;
use crate::store::sweep;
use crate::{ContentHash, NsfError, NsfResult, RefEntry, StoreStats, SweepReport};

impl Engine {
    /// Removes every object no committed state references and no write
    /// in flight has pinned, and leftover temporary files (I39). Reads
    /// the reference tree of every database that may hold references; if
    /// one of them cannot be read (it needs fixup, say) nothing is
    /// removed and the error says which.
    pub fn sweep_attachment_store(&self) -> NsfResult<SweepReport> {
        self.check_open()?;
        let s = &*self.shared;
        let mut refs = |path: &str| -> NsfResult<Option<Vec<(ContentHash, RefEntry)>>> {
            // A line that is no database path (a damaged `users`) names
            // no database.
            let Ok(key) = DbPath::parse(path) else {
                return Ok(None);
            };
            if !s.backend.exists(&s.cfg.data_dir.join(key.as_str())) {
                return Ok(None);
            }
            let db = match self.open_database(key.as_str()) {
                Ok(db) => db,
                Err(NsfError::NoSuchDatabase(_)) => return Ok(None),
                Err(e) => return Err(e),
            };
            Ok(Some(db.store_references()?))
        };
        let mut durable = || -> NsfResult<()> {
            if let Some(log) = &s.log {
                log.wait_durable(log.end_lsn())?;
            }
            Ok(())
        };
        sweep(&s.store, &mut refs, &mut durable)
    }

    /// The attachment store's counters since the engine opened.
    pub fn attachment_store_stats(&self) -> StoreStats {
        self.shared.store.stats()
    }

    /// At open after a crash: content a lost commit would have referenced
    /// is reclaimed now (I39). A failure is logged; the next clean
    /// shutdown or explicit sweep tries again.
    pub(super) fn sweep_after_crash(&self) {
        match self.sweep_attachment_store() {
            Ok(r) if r.removed + r.temporary_removed > 0 => {
                tracing::info!(
                    removed = r.removed,
                    bytes = r.removed_bytes,
                    temporary = r.temporary_removed,
                    "attachment store: unreferenced content reclaimed after an unclean stop"
                );
            }
            Ok(_) => {}
            Err(e) => {
                tracing::warn!(error = %e, "attachment store: sweep after an unclean stop failed");
            }
        }
    }

    /// At shutdown, before writes are refused: sweeps if a reference
    /// went or content was abandoned this session. Returns whether the
    /// store may be marked clean (nothing left to reclaim).
    pub(super) fn sweep_at_shutdown(&self) -> bool {
        if !self.shared.store.released() {
            return true;
        }
        match self.sweep_attachment_store() {
            Ok(_) => true,
            Err(e) => {
                tracing::warn!(error = %e, "attachment store: sweep at shutdown failed; the next start sweeps");
                false
            }
        }
    }
}
