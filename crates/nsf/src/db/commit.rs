//! One group's transaction, from private pages to the disk: the commit
//! protocol of design.md §4.
//!
//! ```text
//!  execute: check writable ─▶ Txn (each write behind a savepoint, I4)
//!    logged:   wait for log room ─▶ prepare_batch (image or delta per page, I6)
//!              ─▶ inflight.register (I8) ─▶ log.try_append (one batch, I3)
//!              ─▶ install in the pool under `state` (X) (I13, I15)
//!              ─▶ inflight.deregister ─▶ the batch end goes back to the queue,
//!                 whose callback acknowledges after the fdatasync (I2)
//!    unlogged: set the header's unlogged-open flag durably first (I12)
//!              ─▶ write every page sealed, fdatasync (I12) ─▶ install clean
//! ```
//!
//! Rules this file keeps:
//! - nothing a transaction changed reaches the shared pool before its
//!   batch is appended (I4, no-steal); a failed write changes nothing;
//! - a batch is registered as in flight before it is appended, so no
//!   checkpoint's redo LSN passes it (I8), and log room is waited for
//!   before any page is pinned, so a checkpoint never waits on a commit
//!   that waits on it;
//! - readers see all of a transaction or none of it: pages, header and
//!   the ACL cache change in one critical section (I13, I15);
//! - unlogged pages (I14) are installed with the log's end LSN;
//! - in unlogged mode a commit returns only once its pages are synced
//!   (I12), and any write or sync failure fails the database (I11).

use super::queue::WriteResult;
use super::read::AclCache;
use super::Database;
use crate::dbcore::{Durability, Inflight};
use crate::header::{DbHeader, FLAG_UNLOGGED_OPEN};
use crate::txn::{Txn, TxnPages};
use crate::Seq;
use crate::{NsfResult, Timestamp};
use std::sync::Arc;
use storage::pool::{Prepared, Stamp};
use storage::{Lsn, PageBuf, PageId};
use translog::{Batch, LogError, PageChange, TransLog};

/// What a group's transaction did.
pub(super) struct Executed {
    /// Each write's result, in queue order.
    pub results: Vec<WriteResult>,
    /// The end of the log batch, which must be durable before any write
    /// is acknowledged (I2); none if nothing was appended.
    pub durable_at: Option<Lsn>,
    /// The database's new last change sequence, if the group changed it:
    /// published to waiters once durable (I23).
    pub new_seq: Option<Seq>,
}

impl Executed {
    /// A group that changed nothing.
    fn nothing(results: Vec<WriteResult>) -> Executed {
        Executed {
            results,
            durable_at: None,
            new_seq: None,
        }
    }
}

impl Database {
    /// Runs `ops` in one transaction (each write behind a savepoint when
    /// there are several) and appends it (logged) or forces it
    /// (unlogged). A write that fails has changed nothing (I4); if the
    /// transaction itself fails, none of them has.
    pub(super) fn execute(&self, ops: Vec<super::apply::WriteOp>) -> NsfResult<Executed> {
        self.core.check_writable()?;
        let committed = self.state.read().clone();
        let mut txn = Txn::new(&self.core, committed.clone());
        let combined = ops.len() > 1;
        let mut results = Vec::with_capacity(ops.len());
        for op in ops {
            let savepoint = combined.then(|| txn.savepoint());
            let r = self.apply(&mut txn, op);
            if r.is_err() {
                match savepoint {
                    Some(sp) => txn.rollback(sp),
                    None => return Ok(Executed::nothing(vec![r])),
                }
            }
            results.push(r);
        }
        let pages = txn.into_pages(&committed);
        if pages.is_empty() {
            return Ok(Executed::nothing(results));
        }
        let new_seq =
            (pages.header.last_seq != committed.last_seq).then_some(pages.header.last_seq);
        match &self.core.durability {
            Durability::Logged { log, inflight, .. } => {
                let durable_at = self.commit_logged(log, inflight, pages)?;
                // A new sequence changes the header, a logged page, so it
                // is published only after a log write (I23).
                debug_assert!(new_seq.is_none() || durable_at.is_some());
                Ok(Executed {
                    results,
                    durable_at,
                    new_seq,
                })
            }
            Durability::Unlogged => {
                let TxnPages {
                    header,
                    mut logged,
                    unlogged,
                    acl_written,
                } = pages;
                logged.extend(unlogged);
                logged.sort_by_key(|(id, _)| *id);
                self.commit_unlogged(header, logged, acl_written)?;
                Ok(Executed {
                    results,
                    durable_at: None,
                    new_seq,
                })
            }
        }
    }

    pub(super) fn commit_logged(
        &self,
        log: &TransLog,
        inflight: &Inflight,
        pages: TxnPages,
    ) -> NsfResult<Option<Lsn>> {
        let c = &self.core;
        let TxnPages {
            header,
            logged: pages,
            unlogged,
            acl_written,
        } = pages;
        if pages.is_empty() {
            // Only unlogged pages: nothing to append (I14).
            let mut state = self.state.write();
            let lsn = log.end_lsn();
            for (id, page) in unlogged {
                c.pool.install_unlogged(c.file, id, page, lsn);
            }
            *state = header;
            if acl_written {
                *self.acl.lock() = AclCache::Unread; // I15
            }
            return Ok(None);
        }
        let mut attempts = 0;
        let appended = loop {
            // Wait for log space before pinning anything: a checkpoint
            // must never wait on pins held by a commit that waits on it.
            log.wait_for_room(pages.len() + 2)?;
            let (batch, pinned) = self.prepare_batch(&header, &pages);
            // I8: register before appending so a checkpoint cannot pass this batch.
            let ticket = inflight.register(log.end_lsn());
            match log.try_append(&batch) {
                Ok(a) => break (a, pinned, ticket),
                Err(e) => {
                    inflight.deregister(ticket);
                    for id in pinned {
                        c.pool.unpin(c.file, id);
                    }
                    attempts += 1;
                    if !matches!(e, LogError::Full { .. }) || attempts >= 5 {
                        return Err(e.into());
                    }
                }
            }
        };
        let (appended, pinned, ticket) = appended;
        {
            // I13: readers see all of the transaction or none of it.
            let mut state = self.state.write();
            for ((id, page), lsn) in pages.into_iter().zip(&appended.page_lsns) {
                let delta = pinned.contains(&id);
                let stamp = Stamp {
                    page_lsn: *lsn,
                    batch_start: appended.start_lsn,
                    batch_end: appended.end_lsn,
                };
                c.pool.install(c.file, id, page, stamp, delta);
            }
            for (id, page) in unlogged {
                c.pool.install_unlogged(c.file, id, page, appended.end_lsn);
            }
            *state = header;
            if acl_written {
                // I15: in the same critical section as the install.
                *self.acl.lock() = AclCache::Unread;
            }
        }
        inflight.deregister(ticket);
        Ok(Some(appended.end_lsn))
    }

    /// Builds the log batch for `pages`, choosing a full image or a delta
    /// for each (I6); returns the pages pinned for deltas.
    fn prepare_batch(
        &self,
        header: &DbHeader,
        pages: &[(PageId, Arc<PageBuf>)],
    ) -> (Batch, Vec<PageId>) {
        let c = &self.core;
        let mut changes = Vec::with_capacity(pages.len());
        let mut pinned = Vec::new();
        for (id, page) in pages {
            match c.pool.prepare(c.file, *id) {
                Prepared::FullImage => changes.push((*id, PageChange::Image((**page).clone()))),
                Prepared::Delta(base) => {
                    pinned.push(*id);
                    changes.push((
                        *id,
                        PageChange::Delta(storage::page::page_delta(&base, page)),
                    ));
                }
            }
        }
        let batch = Batch {
            db_iid: header.instance_id.0,
            db_path: c.path.clone(),
            pages: changes,
            time_micros: Timestamp::now().0,
        };
        (batch, pinned)
    }

    /// I12: pages go to the file and are synced before the commit returns.
    pub(super) fn commit_unlogged(
        &self,
        mut header: DbHeader,
        mut pages: Vec<(PageId, Arc<PageBuf>)>,
        acl_written: bool,
    ) -> NsfResult<()> {
        let c = &self.core;
        if self.state.read().flags & FLAG_UNLOGGED_OPEN == 0 {
            let mut marked = self.state.read().clone();
            marked.flags |= FLAG_UNLOGGED_OPEN;
            self.write_header_direct(&marked)?;
            self.state.write().flags = marked.flags;
        }
        header.flags |= FLAG_UNLOGGED_OPEN;
        if let Some(p) = pages.iter_mut().find(|(id, _)| id.0 == 0) {
            p.1 = Arc::new(header.encode());
        }
        c.force_pages(&pages)?;
        let mut state = self.state.write();
        for (id, page) in pages {
            c.pool.install_clean(c.file, id, page);
        }
        *state = header;
        if acl_written {
            // I15: in the same critical section as the install.
            *self.acl.lock() = AclCache::Unread;
        }
        Ok(())
    }

    /// Writes and syncs page 0 directly (unlogged-mode flag changes).
    pub(crate) fn write_header_direct(&self, header: &DbHeader) -> NsfResult<()> {
        let c = &self.core;
        let page = Arc::new(header.encode());
        c.force_pages(&[(PageId(0), page.clone())])?;
        c.pool.install_clean(c.file, PageId(0), page);
        Ok(())
    }

    /// Clears the unlogged-open flag at a clean close (I12), unless this
    /// instance found it set: a crash left the file needing fixup, and
    /// closing it cleanly now does not undo that; nor if a write of it
    /// failed. At engine shutdown the engine is already closed, so no
    /// write can follow once the writer lock is ours (which is why this
    /// asks the state whether the flag may go, not whether writes are
    /// allowed).
    pub(crate) fn close_unlogged(&self) -> NsfResult<()> {
        let r = self.clear_unlogged_flag();
        // Writes queued meanwhile found the lock taken (see `drain`).
        self.drain(None, None);
        r
    }

    fn clear_unlogged_flag(&self) -> NsfResult<()> {
        let _w = self.writer.lock();
        let mut h = self.state.read().clone();
        if h.flags & FLAG_UNLOGGED_OPEN != 0 && self.core.state().may_clear_unlogged_flag() {
            h.flags &= !FLAG_UNLOGGED_OPEN;
            self.write_header_direct(&h)?;
            *self.state.write() = h;
        }
        Ok(())
    }
}
