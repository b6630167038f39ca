//! In-place compact of an open database, while others read and write
//! (design.md §2.10, I40, I41).
//!
//! ```text
//!   plan     walk the committed state: live pages → limit (live + slack)
//!   move     logged steps in the writer queue, each moving at most
//!            STEP_PAGES pages from the tail below the limit
//!   seal     one logged step: no reference left past the limit → the
//!            free list becomes every unreferenced page below it (leaked
//!            pages reclaimed, I40)
//!   pass     checkpoint until the redo LSN is past the seal, so restart
//!            recovery never replays a record that touched the tail (I41)
//!   cut      writer lock and high-water mark held: the header with the
//!            new page count is logged and made durable, the tail's pool
//!            frames dropped, the file truncated and synced
//! ```
//!
//! Each move step is one small transaction like any write, so writers
//! wait for it no longer than for one another's group; only the cut holds
//! the writer lock across a log fsync.

use super::Database;
use crate::compact::{move_step, referenced, seal, CompactReport, NO_ROOM};
use crate::dbcore::{Committed, Durability};
use crate::txn::TxnPages;
use crate::{NsfError, NsfResult};
use std::sync::Arc;
use storage::{Lsn, PageId, StorageError, PAGE_SIZE};

/// Pages one move step moves at most.
const STEP_PAGES: usize = 256;
/// Move–seal–cut rounds before giving up on cutting (writers kept
/// growing the file).
const ROUNDS: usize = 6;
/// Checkpoints tried for one seal.
const CHECKPOINTS: usize = 6;

/// How compact asks the engine for a checkpoint (its redo LSN, none in
/// unlogged mode).
pub(crate) type CheckpointFn<'a> = &'a dyn Fn() -> NsfResult<Option<Lsn>>;

impl Database {
    /// Compacts the file in place (see the module docs): the instance id
    /// stays. Durable when it returns: every step and the new end were
    /// committed through the log (I2); a crash at any point leaves a
    /// database that restart recovery makes whole, at worst with tail
    /// pages off the free list that the next compact reclaims (I40, I41).
    pub(crate) fn compact_in_place(
        &self,
        checkpoint: CheckpointFn<'_>,
        dry_run: bool,
    ) -> NsfResult<CompactReport> {
        if !dry_run {
            self.core.check_writable()?;
        }
        let (h0, refs, free) = {
            let h = self.state.read();
            let store = Committed(&self.core);
            let refs = referenced(&store, &h)?;
            let free = h.free.pages(&store)?.len() as u64;
            (h.clone(), refs, free)
        };
        let bytes_before = self.size(h0.page_count)?;
        let live = refs.len() as u32;
        // A little room below the limit for the splits a step's rewrites
        // may cause and for writers meanwhile.
        let mut limit = (live + live / 128 + 2).min(h0.page_count);
        let leaked = u64::from(h0.page_count).saturating_sub(u64::from(live) + free);
        let mut report = CompactReport {
            path: self.core.path.clone(),
            style: "in-place".into(),
            dry_run,
            bytes_before,
            bytes_after: bytes_before,
            pages_before: h0.page_count,
            pages_after: h0.page_count,
            free_pages_before: free,
            leaked_pages: leaked,
            instance_before: h0.instance_id.0,
            instance_after: h0.instance_id.0,
            ..CompactReport::default()
        };
        if dry_run {
            report.pages_after = limit;
            report.bytes_after = u64::from(limit) * PAGE_SIZE as u64;
            return Ok(report);
        }
        if limit >= h0.page_count && leaked == 0 {
            return Ok(report); // nothing to give back
        }
        if leaked > 0 {
            // Leaked pages first go back on the free list, so the moves
            // find room below the limit (I40).
            self.seal_below(u32::MAX)?;
        }
        for _ in 0..ROUNDS {
            let moved_all = self.move_tail(limit, &mut report)?;
            let Some((hw, clean)) = self.seal_below(limit)? else {
                continue;
            };
            if !moved_all || !clean {
                continue; // the moves find the room the seal listed
            }
            if limit >= hw {
                break; // leaked pages reclaimed; no tail to cut
            }
            if !self.pass_checkpoint(checkpoint)? {
                continue;
            }
            if self.cut(limit, hw)? {
                report.truncated = true;
                break;
            }
            // Writers took more pages than the free list held and grew
            // the file meanwhile: leave them more room next round.
            let grown = self.core.high_water().saturating_sub(hw);
            limit = limit.saturating_add(2 * grown + 8);
        }
        let pages_after = self.state.read().page_count;
        report.pages_after = pages_after;
        report.bytes_after = self.size(pages_after)?;
        Ok(report)
    }

    /// The file's size as it is or will be once its pages are flushed.
    fn size(&self, pages: u32) -> NsfResult<u64> {
        let len = self.core.handle.len().map_err(|e| NsfError::Io {
            path: self.core.path.clone(),
            source: e,
        })?;
        Ok(len.max(u64::from(pages) * PAGE_SIZE as u64))
    }

    /// The seal as a logged step: the high-water mark it saw and whether
    /// no referenced page is left at or past `limit`; none if a
    /// reservation was open (then nothing changed).
    fn seal_below(&self, limit: u32) -> NsfResult<Option<(u32, bool)>> {
        self.index_write(move |tx| {
            if tx.txn.core().reservations_open() {
                return Ok(None);
            }
            let hw = tx.txn.core().high_water();
            Ok(Some((hw, seal(tx.txn, limit)?)))
        })
    }

    /// Runs move steps until nothing is left to move; false if a step
    /// found no free page below the limit (it changed nothing, I4).
    fn move_tail(&self, limit: u32, report: &mut CompactReport) -> NsfResult<bool> {
        let mut from = None;
        loop {
            let step = self.index_write(move |tx| move_step(tx.txn, limit, STEP_PAGES, from));
            let done = match step {
                Ok(d) => d,
                Err(NsfError::Storage(StorageError::Invalid(m))) if m == NO_ROOM => {
                    return Ok(false)
                }
                Err(e) => return Err(e),
            };
            report.steps += 1;
            report.pages_moved += done.moved;
            report.views_reset += done.views_reset;
            if done.next_note.is_none() && done.moved == 0 && done.views_reset == 0 {
                return Ok(true);
            }
            from = done.next_note;
        }
    }

    /// I41: checkpoints until the redo LSN is past everything durable
    /// now (the seal included); false if it could not get there.
    fn pass_checkpoint(&self, checkpoint: CheckpointFn<'_>) -> NsfResult<bool> {
        let Durability::Logged { log, .. } = &self.core.durability else {
            return Ok(true); // unlogged: nothing is ever replayed
        };
        let upto = log.durable_lsn();
        for _ in 0..CHECKPOINTS {
            if checkpoint()?.is_some_and(|redo| redo >= upto) {
                return Ok(true);
            }
        }
        Ok(false)
    }

    /// Cuts the file at `limit` if nothing was reserved since the seal
    /// (the high-water mark is still `hw`); true if it did.
    fn cut(&self, limit: u32, hw: u32) -> NsfResult<bool> {
        let guard = self.writer.lock();
        let cut = self.cut_locked(limit, hw);
        drop(guard);
        // Writes queued meanwhile found the lock taken (see `drain`).
        self.drain(None, None);
        cut
    }

    fn cut_locked(&self, limit: u32, seal_hw: u32) -> NsfResult<bool> {
        self.core.check_writable()?;
        let c = &self.core;
        let mut hw = c.hold_high_water();
        let h = self.state.read().clone();
        if *hw != seal_hw || *hw != h.page_count || c.reservations_open() || limit >= *hw {
            return Ok(false);
        }
        let mut cut = h.clone();
        cut.page_count = limit;
        let page = Arc::new(cut.encode());
        match &c.durability {
            Durability::Logged { log, inflight, .. } => {
                let pages = TxnPages {
                    header: cut,
                    logged: vec![(PageId(0), page)],
                    unlogged: Vec::new(),
                    acl_written: false,
                };
                // I41: the new end is durable before the file is cut.
                if let Some(end) = self.commit_logged(log, inflight, pages)? {
                    log.wait_durable(end)?;
                }
            }
            Durability::Unlogged => self.commit_unlogged(cut, vec![(PageId(0), page)], false)?,
        }
        c.pool.discard_from(c.file, PageId(limit));
        c.handle
            .set_len(u64::from(limit) * PAGE_SIZE as u64)
            .map_err(|e| c.fail("truncate", e))?;
        c.handle.sync_data().map_err(|e| c.fail("fdatasync", e))?;
        *hw = limit;
        Ok(true)
    }
}
