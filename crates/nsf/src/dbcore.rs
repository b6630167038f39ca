//! The innards of one open database that everything writing its pages
//! shares: transactions (`txn.rs`), attachment streaming (`attach.rs`),
//! the index hooks (`index.rs`) and the database itself (`db/`).
//!
//! It sits below all of them, so none of them needs the `Database` type
//! to reach the file: a `DbCore` is the file's handle and pool id, how
//! commits reach the disk, the high-water mark that transactions and
//! attachment streaming both allocate from (I7), and the instance's
//! lifecycle ([`DbState`], `state.rs`): whether writes are still allowed
//! (I11).
//!
//! ```text
//!   db/ (Database) ─▶ records ─▶ txn ─▶ dbcore ◀─ attach, index
//! ```

use crate::changes::Changes;
use crate::clock::Clock;
use crate::state::{DbState, Reason};
use crate::store::AttachStore;
use crate::{NsfError, NsfResult, Seq};
use parking_lot::Mutex;
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use storage::backend::write_all_at;
use storage::pool::{BufferPool, FileId};
use storage::{FileHandle, Lsn, PageBuf, PageId, PageStore, StorageResult};
use translog::TransLog;

/// How commits reach the disk.
pub(crate) enum Durability {
    Logged {
        log: Arc<TransLog>,
        inflight: Arc<Inflight>,
        session: LogSession,
    },
    Unlogged,
}

/// This life of the log, as an unlogged index closed in it is marked
/// (design.md I14): its epoch (I10), and the redo LSN restart recovery
/// began from — a checkpoint of an earlier life had made every page
/// written below it durable (I8).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct LogSession {
    pub epoch: u32,
    pub recovered_from: Lsn,
}

/// Batches appended to the log whose pages are not yet installed in the
/// pool; a checkpoint's redo LSN must not pass them (I8).
#[derive(Default)]
pub(crate) struct Inflight {
    entries: Mutex<BTreeMap<u64, Lsn>>,
    next: AtomicU64,
}

impl Inflight {
    /// Registers a batch about to be appended; `floor` is the log's end
    /// before the append, a lower bound of the batch's start.
    pub fn register(&self, floor: Lsn) -> u64 {
        let t = self.next.fetch_add(1, Ordering::Relaxed);
        self.entries.lock().insert(t, floor);
        t
    }
    pub fn deregister(&self, ticket: u64) {
        self.entries.lock().remove(&ticket);
    }
    pub fn min(&self) -> Option<Lsn> {
        self.entries.lock().values().min().copied()
    }
}

/// A [`Reserving`] carried by a value that is cloned, compared and
/// printed (a staged foreign note): shared by the clones, equal to any
/// other, shown as nothing.
#[derive(Clone, Default)]
pub(crate) struct Hold {
    _held: Option<Arc<Reserving>>,
}

impl Hold {
    pub fn new(r: Reserving) -> Hold {
        Hold {
            _held: Some(Arc::new(r)),
        }
    }
}

impl PartialEq for Hold {
    fn eq(&self, _: &Hold) -> bool {
        true
    }
}

impl std::fmt::Debug for Hold {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Hold")
    }
}

/// What every database of an engine shares with it.
pub(crate) struct EngineLinks {
    /// How commits reach the disk (the engine's log, or none).
    pub durability: Durability,
    /// The engine-wide gate on attachment write-back.
    pub writeback: Arc<crate::writeback::Writeback>,
    /// Set when the engine is shut down: writes are refused from then on.
    pub engine_closed: Arc<AtomicBool>,
    /// Where identity times come from (I22).
    pub clock: Arc<dyn Clock>,
    /// The server-wide attachment store (design.md §2.9).
    pub store: Arc<AttachStore>,
}

/// The shared innards of a database, used by transactions and attachments.
pub(crate) struct DbCore {
    pub path: String,
    pub pool: Arc<BufferPool>,
    pub file: FileId,
    pub handle: Arc<dyn FileHandle>,
    pub durability: Durability,
    /// Next page id past the high-water mark (I7).
    high_water: Mutex<u32>,
    /// Where the instance is in its life; changed only through the
    /// transitions of `state.rs`.
    state: Mutex<DbState>,
    /// The engine-wide gate on attachment write-back.
    pub writeback: Arc<crate::writeback::Writeback>,
    /// Set when the engine is shut down: writes are refused from then on.
    engine_closed: Arc<AtomicBool>,
    /// Where identity times come from (I22).
    pub clock: Arc<dyn Clock>,
    /// The durable change sequence and its waiters (I23).
    pub changes: Arc<Changes>,
    /// The server-wide attachment store (design.md §2.9).
    pub store: Arc<AttachStore>,
    /// Reservations whose pages a commit still to come may reference
    /// (attachment streaming, bulk builds): compact's seal and cut wait
    /// until there is none (I40).
    reserving: Arc<AtomicU64>,
}

/// Held while pages reserved past the high-water mark may still be
/// referenced by a commit to come (see `DbCore::reserving`).
pub(crate) struct Reserving(Arc<AtomicU64>);

impl Drop for Reserving {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::AcqRel);
    }
}

impl DbCore {
    pub fn new(
        path: String,
        pool: Arc<BufferPool>,
        handle: Arc<dyn FileHandle>,
        (page_count, last_seq): (u32, Seq),
        state: DbState,
        links: EngineLinks,
    ) -> DbCore {
        let file = pool.register(handle.clone(), &path);
        DbCore {
            path,
            pool,
            file,
            handle,
            durability: links.durability,
            high_water: Mutex::new(page_count),
            state: Mutex::new(state),
            writeback: links.writeback,
            engine_closed: links.engine_closed,
            clock: links.clock,
            store: links.store,
            changes: Arc::new(Changes::new(last_seq)),
            reserving: Arc::new(AtomicU64::new(0)),
        }
    }

    /// Marks a reservation open until the guard drops, which must be
    /// after the commit that references its pages (or their release).
    pub fn reserving(&self) -> Reserving {
        self.reserving.fetch_add(1, Ordering::AcqRel);
        Reserving(self.reserving.clone())
    }

    /// Whether any reservation is open.
    pub fn reservations_open(&self) -> bool {
        self.reserving.load(Ordering::Acquire) != 0
    }

    /// Holds the high-water mark (no page can be reserved meanwhile).
    pub fn hold_high_water(&self) -> parking_lot::MutexGuard<'_, u32> {
        self.high_water.lock()
    }

    pub fn read_page(&self, id: PageId) -> StorageResult<Arc<PageBuf>> {
        self.pool.read(self.file, id)
    }

    pub fn high_water(&self) -> u32 {
        *self.high_water.lock()
    }

    /// Reserves `n` consecutive never-used pages at the end of the file.
    pub fn reserve_pages(&self, n: u32) -> PageId {
        let mut hw = self.high_water.lock();
        let first = *hw;
        *hw += n;
        PageId(first)
    }

    /// Refuses a write the instance's state does not allow. The engine's
    /// own shutdown comes first: after it every write is `EngineClosed`,
    /// whatever happened to the database before.
    pub fn check_writable(&self) -> NsfResult<()> {
        if self.engine_closed.load(Ordering::Acquire) {
            return Err(NsfError::EngineClosed);
        }
        match self.state() {
            DbState::Open { .. } => Ok(()),
            DbState::Closing { .. } => Err(NsfError::EngineClosed),
            DbState::Deleted => Err(NsfError::DatabaseDeleted(self.path.clone())),
            DbState::Refused { reason, .. } | DbState::Failed { reason, .. } => {
                Err(NsfError::DatabaseFailed {
                    path: self.path.clone(),
                    reason: reason.text,
                })
            }
        }
    }

    /// The instance's state now. Two events are found rather than told:
    /// a write the flusher could not make (the pool records it, I11) and
    /// the engine's shutdown (a flag the engine sets); each is applied
    /// here, through its transition, when first seen.
    pub fn state(&self) -> DbState {
        if matches!(
            *self.state.lock(),
            DbState::Open { .. } | DbState::Closing { .. }
        ) {
            if let Some(text) = self.pool.failure(self.file) {
                self.transition(|s| s.failed(Reason::io(text)));
            }
        }
        if self.engine_closed.load(Ordering::Acquire) {
            self.transition(DbState::closing);
        }
        self.state.lock().clone()
    }

    /// Refuses any use of an instance whose database was deleted (I42):
    /// reads too, since its pages have left the pool and its file is gone.
    pub fn check_not_deleted(&self) -> NsfResult<()> {
        match *self.state.lock() {
            DbState::Deleted => Err(NsfError::DatabaseDeleted(self.path.clone())),
            _ => Ok(()),
        }
    }

    /// The database was deleted (I42): every later read and write of this
    /// instance refuses, and whoever waits for its changes is woken.
    pub fn mark_deleted(&self) {
        self.transition(DbState::deleted);
    }

    /// Applies now what [`DbCore::state`] would find when next asked, so
    /// that waiters learn of it at once (the engine's shutdown, I23).
    pub fn catch_up(&self) {
        self.state();
    }

    /// Applies one transition of `state.rs`; if the state changed, wakes
    /// whoever waits for a change (I23), since a state that refuses
    /// writes is an answer for them.
    fn transition(&self, to: impl FnOnce(DbState) -> DbState) {
        let changed = {
            let mut state = self.state.lock();
            let next = to(state.clone());
            let changed = next != *state;
            *state = next;
            changed
        };
        if changed {
            self.changes.wake_all();
        }
    }

    /// Unlogged writes (I12): seals each page, writes it in place and
    /// fdatasyncs the file; any failure fails the database (I11).
    pub fn force_pages(&self, pages: &[(PageId, Arc<PageBuf>)]) -> NsfResult<()> {
        for (id, page) in pages {
            let mut sealed = (**page).clone();
            sealed.seal(*id, Lsn::ZERO);
            write_all_at(self.handle.as_ref(), sealed.bytes(), id.offset())
                .map_err(|e| self.fail("write", e))?;
        }
        self.handle
            .sync_data()
            .map_err(|e| self.fail("fdatasync", e))
    }

    /// A write or sync of the file failed: the database fails (I11,
    /// sticky, never retried); returns the error for the caller.
    pub fn fail(&self, what: &str, e: std::io::Error) -> NsfError {
        let reason = format!("{what}: {e}");
        // The pool keeps the file's dirty frames from then on (I11).
        self.pool.mark_failed(self.file, reason.clone());
        self.transition(|s| s.failed(Reason::io(reason.clone())));
        NsfError::DatabaseFailed {
            path: self.path.clone(),
            reason,
        }
    }
}

/// A read-only view of committed pages (used while holding the database's
/// state lock).
pub(crate) struct Committed<'a>(pub &'a DbCore);

impl PageStore for Committed<'_> {
    fn read(&self, id: PageId) -> StorageResult<Arc<PageBuf>> {
        self.0.read_page(id)
    }
    fn name(&self) -> &str {
        &self.0.path
    }
}
