//! The innards of one open database that everything writing its pages
//! shares: transactions (`txn.rs`), attachment streaming (`attach.rs`),
//! the index hooks (`index.rs`) and the database itself (`db/`).
//!
//! It sits below all of them, so none of them needs the `Database` type
//! to reach the file: a `DbCore` is the file's handle and pool id, how
//! commits reach the disk, the high-water mark that transactions and
//! attachment streaming both allocate from (I7), and whether writes are
//! still allowed (I11).
//!
//! ```text
//!   db/ (Database) ─▶ records ─▶ txn ─▶ dbcore ◀─ attach, index
//! ```

use crate::{NsfError, NsfResult};
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
    },
    Unlogged,
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

/// The shared innards of a database, used by transactions and attachments.
pub(crate) struct DbCore {
    pub path: String,
    pub pool: Arc<BufferPool>,
    pub file: FileId,
    pub handle: Arc<dyn FileHandle>,
    pub durability: Durability,
    /// Next page id past the high-water mark (I7).
    high_water: Mutex<u32>,
    /// Why the database refuses writes, beyond pool-detected I/O failures
    /// (e.g. restart recovery could not apply its log records).
    refused: Option<String>,
    /// The engine-wide gate on attachment write-back.
    pub writeback: Arc<crate::writeback::Writeback>,
    /// Set when the engine is shut down: writes are refused from then on.
    engine_closed: Arc<AtomicBool>,
}

impl DbCore {
    pub fn new(
        path: String,
        pool: Arc<BufferPool>,
        handle: Arc<dyn FileHandle>,
        durability: Durability,
        page_count: u32,
        refused: Option<String>,
        (writeback, engine_closed): (Arc<crate::writeback::Writeback>, Arc<AtomicBool>),
    ) -> DbCore {
        let file = pool.register(handle.clone(), &path);
        DbCore {
            path,
            pool,
            file,
            handle,
            durability,
            high_water: Mutex::new(page_count),
            refused,
            writeback,
            engine_closed,
        }
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

    pub fn check_writable(&self) -> NsfResult<()> {
        if self.engine_closed.load(Ordering::Acquire) {
            return Err(NsfError::EngineClosed);
        }
        match self.failure() {
            Some(reason) => Err(NsfError::DatabaseFailed {
                path: self.path.clone(),
                reason,
            }),
            None => Ok(()),
        }
    }

    /// Why the database refuses writes, if it failed (I11) or recovery
    /// could not bring it back.
    pub fn failure(&self) -> Option<String> {
        self.refused
            .clone()
            .or_else(|| self.pool.failure(self.file))
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

    pub fn fail(&self, what: &str, e: std::io::Error) -> NsfError {
        let reason = format!("{what}: {e}");
        // I11: sticky; never retried.
        self.pool.mark_failed(self.file, reason.clone());
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
