//! The doors the layer above (views) reaches index pages through: an
//! index transaction in the write queue, a consistent read, a direct
//! bulk writer, and the clean mark of an unlogged index that is about to
//! close. The types they hand out (`IndexTxn`, `IndexRead`, `BulkWriter`)
//! live in `index.rs`, below this module.

use super::apply::WriteOp;
use super::Database;
use crate::dbcore::Durability;
use crate::index::{BulkWriter, CleanMark, IndexRead, IndexTxn};
use crate::{NsfError, NsfResult};
use parking_lot::Mutex;
use std::sync::Arc;
use storage::PageId;

impl Database {
    /// Runs `f` as a transaction in the writer queue, like a document
    /// write, and returns its result once the transaction is durable (I2).
    /// If `f` fails, nothing it did is kept (I4).
    pub fn index_write<R: Send + 'static>(
        &self,
        f: impl FnOnce(&mut IndexTxn<'_, '_>) -> NsfResult<R> + Send + 'static,
    ) -> NsfResult<R> {
        let out: Arc<Mutex<Option<R>>> = Arc::new(Mutex::new(None));
        let place = out.clone();
        self.submit(WriteOp::Index(Box::new(move |tx| {
            let r = f(tx)?;
            *place.lock() = Some(r);
            Ok(())
        })))?;
        let r = out.lock().take();
        r.ok_or_else(|| NsfError::Invalid("internal error: an index write left no result".into()))
    }

    /// [`Self::index_write`] for derived data, answered once the
    /// transaction is installed (visible to every reader) instead of once
    /// it is durable: a view index's update from the change sequence, or
    /// the mark that an unlogged index may change (I14). Losing such a
    /// commit in a crash loses nothing acknowledged to a user — the index
    /// is brought up to date (or rebuilt) again from the documents — and
    /// no page it wrote reaches the file before the commit is durable
    /// (I1). So a reader that refreshes a view never waits for the log
    /// (I54). A failure of the transaction itself is still returned.
    pub fn index_write_visible<R: Send + 'static>(
        &self,
        f: impl FnOnce(&mut IndexTxn<'_, '_>) -> NsfResult<R> + Send + 'static,
    ) -> NsfResult<R> {
        let out: Arc<Mutex<Option<R>>> = Arc::new(Mutex::new(None));
        let place = out.clone();
        self.submit_as(
            WriteOp::Index(Box::new(move |tx| {
                let r = f(tx)?;
                *place.lock() = Some(r);
                Ok(())
            })),
            true,
        )?;
        let r = out.lock().take();
        r.ok_or_else(|| NsfError::Invalid("internal error: an index write left no result".into()))
    }

    /// Runs `f` over the committed state under the shared lock (one short
    /// read, I13).
    pub fn index_read<R>(&self, f: impl FnOnce(&IndexRead<'_>) -> R) -> R {
        let h = self.state.read();
        f(&IndexRead {
            core: &self.core,
            header: &h,
        })
    }

    /// A writer for a freshly built tree (see [`BulkWriter`]).
    pub fn bulk_writer(self: &Arc<Self>) -> NsfResult<BulkWriter> {
        self.core.check_writable()?;
        let db = self.clone();
        // Held by the writer, which its user keeps until the commit that
        // references its pages or their release (I40).
        let reserving = self.core.reserving();
        Ok(BulkWriter::new(
            self.core.path.clone(),
            self.core.handle.clone(),
            Box::new(move || {
                let _held = &reserving;
                db.core.reserve_pages(1)
            }),
        ))
    }

    /// Returns pages that were reserved but never referenced by a commit
    /// (an abandoned bulk build) to the free list.
    pub fn release_pages(&self, pages: &[PageId]) -> NsfResult<()> {
        let extents: Vec<(u32, u32)> = pages.iter().map(|p| (p.0, 1)).collect();
        if extents.is_empty() {
            return Ok(());
        }
        self.submit(WriteOp::Release(extents)).map(|_| ())
    }

    /// The mark an unlogged index that is about to close carries (I14):
    /// the log's end LSN and epoch. Every unlogged page installed so far
    /// has a rec LSN at or below that end, so its dirty frame, and once
    /// the close wrote it the pool's ledger, hold the redo LSN at or below
    /// the mark until a checkpoint has synced it (I8, I19); pages a bulk
    /// build wrote straight to the file are noted in the ledger at the
    /// mark here. [`Database::clean_mark_durable`] tells, after a restart,
    /// whether a checkpoint did. The close writes the pages. Unlogged,
    /// commits write their pages themselves (I12): [`CleanMark::SYNCED`].
    pub fn clean_mark_for_close(&self) -> CleanMark {
        let Durability::Logged { log, session, .. } = &self.core.durability else {
            return CleanMark::SYNCED;
        };
        let at = log.end_lsn();
        self.core.pool.note_unsynced(&self.core.handle, at);
        CleanMark {
            lsn: at.0,
            epoch: session.epoch,
        }
    }

    /// Whether the pages written before `mark` was taken are durable
    /// (I14): taken in this life of the log (the process wrote them and
    /// reads them back), or below the redo LSN restart recovery began
    /// from (a checkpoint synced them). Without a log nothing is redone,
    /// so only [`CleanMark::SYNCED`] is.
    pub fn clean_mark_durable(&self, mark: CleanMark) -> bool {
        if mark == CleanMark::SYNCED {
            return true;
        }
        match &self.core.durability {
            Durability::Logged { session, .. } => {
                mark.epoch == session.epoch || mark.lsn < session.recovered_from.0
            }
            Durability::Unlogged => false,
        }
    }
}
