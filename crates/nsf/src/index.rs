//! Hooks for the layer above (view indexes): transactions over raw pages,
//! consistent reads, and direct bulk writes.
//!
//! View indexes are B+trees in the database file, but this crate knows
//! nothing of views. It lends the `views` crate three things:
//!
//! - [`IndexTxn`]: a write transaction that runs in the database's writer
//!   queue like any document write, so index pages and document pages
//!   commit through the same log, atomically, with the same durability
//!   (I2, I4). It can also write pages *unlogged* (I14) for indexes whose
//!   owner chose not to log them, and create and delete design notes in
//!   the same transaction.
//! - [`IndexRead`]: committed pages and the header, read under the same
//!   short shared lock as document reads (I13), so index readers never
//!   wait for a writer's fsync and writers never wait for a long scan.
//! - [`BulkWriter`]: writes a freshly built tree straight to never-used
//!   pages and syncs them, like attachment content (I7), so a rebuild of a
//!   million entries neither stages its pages in memory nor copies them
//!   into the log; one small logged transaction then points at it.

use crate::dbcore::DbCore;
use crate::header::DbHeader;
use crate::records::{create_note, load_note, load_stored, lookup_unid, store_stub};
use crate::txn::Txn;
use crate::{Item, Note, NoteId, NoteMeta, NsfError, NsfResult, Seq};
use std::sync::Arc;
use storage::backend::{read_exact_at, write_all_at};
use storage::{
    FileHandle, Lsn, PageBuf, PageId, PageStore, PageStoreMut, PageWrite, StorageError,
    StorageResult,
};

/// A write transaction over index pages (see the module docs).
pub struct IndexTxn<'t, 'a> {
    pub(crate) txn: &'t mut Txn<'a>,
}

impl IndexTxn<'_, '_> {
    /// Root of the design catalog, or [`PageId::NONE`].
    pub fn design_root(&self) -> PageId {
        self.txn.header.design_root
    }

    pub fn set_design_root(&mut self, root: PageId) {
        self.txn.header.design_root = root;
    }

    /// The database's last change sequence as this transaction sees it.
    pub fn last_seq(&self) -> Seq {
        self.txn.header.last_seq
    }

    /// Creates a note in this transaction (design notes for views).
    pub fn create_note(&mut self, items: Vec<Item>) -> NsfResult<NoteMeta> {
        crate::validate_items(&items)?;
        create_note(self.txn, items)
    }

    /// Deletes a live note in this transaction, leaving a deletion stub
    /// (which keeps `$DesignType`, so a design note's stub stays a design
    /// note). The views layer deletes a view's design note this way, in
    /// the transaction that removes its index; ordinary deletes refuse
    /// those notes (`NsfError::ViewDesignNote`).
    pub fn delete_note(&mut self, id: NoteId) -> NsfResult<NoteMeta> {
        let missing = || NsfError::Invalid(format!("{}: no note {id} to delete", self.txn.name()));
        let unid = load_note(&*self.txn, &self.txn.header, id)?
            .ok_or_else(missing)?
            .oid
            .unid;
        let (note, stored) = load_stored(self.txn, unid, id)?;
        if note.deleted {
            return Err(NsfError::Deleted {
                db: self.txn.name().to_string(),
                unid,
            });
        }
        store_stub(self.txn, note, stored)
    }

    /// Reads a note (or stub) by id as this transaction sees it.
    pub fn note(&self, id: NoteId) -> NsfResult<Option<Note>> {
        load_note(&*self.txn, &self.txn.header, id)
    }

    /// Finds a live note's id by UNID as this transaction sees it.
    pub fn note_id_of(&self, unid: crate::Unid) -> NsfResult<Option<NoteId>> {
        lookup_unid(&*self.txn, &self.txn.header, unid)
    }

    /// Frees many pages at once (a whole index), touching each free-list
    /// trunk once.
    pub fn free_many(&mut self, ids: &[PageId]) -> NsfResult<()> {
        Ok(self.txn.free_many(ids)?)
    }

    /// Stages a page that is installed but never logged (I14): after a
    /// crash its content on disk is whatever the flusher last wrote, so
    /// only structures that are rebuilt after a crash may use it.
    pub fn write_unlogged(&mut self, id: PageId, page: PageBuf) {
        self.txn.write_unlogged(id, page);
    }

    pub fn path(&self) -> &str {
        self.txn.name()
    }
}

impl PageStore for IndexTxn<'_, '_> {
    fn read(&self, id: PageId) -> StorageResult<Arc<PageBuf>> {
        self.txn.read(id)
    }
    fn name(&self) -> &str {
        self.txn.name()
    }
}

impl PageWrite for IndexTxn<'_, '_> {
    fn write(&mut self, id: PageId, page: PageBuf) {
        self.txn.write(id, page);
    }
}

impl PageStoreMut for IndexTxn<'_, '_> {
    fn allocate(&mut self) -> StorageResult<PageId> {
        self.txn.allocate()
    }
    fn free(&mut self, id: PageId) -> StorageResult<()> {
        self.txn.free(id)
    }
}

/// Committed pages and header, for one read under the shared lock.
pub struct IndexRead<'a> {
    pub(crate) core: &'a DbCore,
    pub(crate) header: &'a DbHeader,
}

impl IndexRead<'_> {
    pub fn design_root(&self) -> PageId {
        self.header.design_root
    }

    pub fn last_seq(&self) -> Seq {
        self.header.last_seq
    }

    /// Finds a note's id by UNID.
    pub fn note_id_of(&self, unid: crate::Unid) -> NsfResult<Option<NoteId>> {
        lookup_unid(self, self.header, unid)
    }

    /// A committed note (or stub) by id.
    pub fn note(&self, id: NoteId) -> NsfResult<Option<Note>> {
        load_note(self, self.header, id)
    }
}

impl PageStore for IndexRead<'_> {
    fn read(&self, id: PageId) -> StorageResult<Arc<PageBuf>> {
        self.core.read_page(id)
    }
    fn name(&self) -> &str {
        &self.core.path
    }
}

/// Writes a new tree to never-used pages past the high-water mark,
/// straight to the file (see the module docs). Nothing references these
/// pages until [`BulkWriter::finish`] has synced them and a later logged
/// transaction points at them (I7). If that never happens, hand
/// [`BulkWriter::pages`] to [`Database::release_pages`].
pub struct BulkWriter {
    core_path: String,
    handle: Arc<dyn FileHandle>,
    reserve: Box<dyn Fn() -> PageId + Send>,
    pages: Vec<PageId>,
    failed: Option<String>,
    /// Consecutive sealed pages not yet written, from `pending_first`:
    /// written in one call when the run breaks or reaches `PENDING_MAX`.
    pending: Vec<u8>,
    pending_first: PageId,
}

/// Bytes of consecutive pages a bulk writer gathers into one write.
const PENDING_MAX: usize = 1 << 20;

impl BulkWriter {
    pub(crate) fn new(
        core_path: String,
        handle: Arc<dyn FileHandle>,
        reserve: Box<dyn Fn() -> PageId + Send>,
    ) -> Self {
        BulkWriter {
            core_path,
            handle,
            reserve,
            pages: Vec::new(),
            failed: None,
            pending: Vec::with_capacity(PENDING_MAX),
            pending_first: PageId(0),
        }
    }

    fn pending_pages(&self) -> u32 {
        (self.pending.len() / storage::PAGE_SIZE) as u32
    }

    /// Where page `id` sits in the pending run, if it does.
    fn pending_slot(&self, id: PageId) -> Option<usize> {
        let i = id.0.checked_sub(self.pending_first.0)?;
        (i < self.pending_pages()).then_some(i as usize * storage::PAGE_SIZE)
    }

    fn write_pending(&mut self) {
        if self.pending.is_empty() || self.failed.is_some() {
            self.pending.clear();
            return;
        }
        if let Err(e) = write_all_at(
            self.handle.as_ref(),
            &self.pending,
            self.pending_first.offset(),
        ) {
            self.failed = Some(format!("write of pages from {}: {e}", self.pending_first));
        }
        self.pending.clear();
    }

    /// Every page reserved so far.
    pub fn pages(&self) -> &[PageId] {
        &self.pages
    }

    /// Ends the writing; with `sync`, fdatasyncs the pages first (I7). An
    /// index that is rebuilt after a crash anyway (I14) need not wait for
    /// the disk. Any earlier write error surfaces here.
    pub fn finish(&mut self, sync: bool) -> NsfResult<()> {
        self.write_pending();
        if let Some(reason) = &self.failed {
            return Err(NsfError::Io {
                path: self.core_path.clone(),
                source: std::io::Error::other(reason.clone()),
            });
        }
        if !sync {
            return Ok(());
        }
        self.handle.sync_data().map_err(|e| NsfError::Io {
            path: self.core_path.clone(),
            source: e,
        })
    }
}

impl PageStore for BulkWriter {
    fn read(&self, id: PageId) -> StorageResult<Arc<PageBuf>> {
        let mut buf = PageBuf::zeroed();
        if let Some(at) = self.pending_slot(id) {
            buf.bytes_mut()
                .copy_from_slice(&self.pending[at..at + storage::PAGE_SIZE]);
            buf.verify(&self.core_path, id)?;
            return Ok(Arc::new(buf));
        }
        read_exact_at(self.handle.as_ref(), buf.bytes_mut(), id.offset())
            .map_err(|e| StorageError::io(&self.core_path, e))?;
        buf.verify(&self.core_path, id)?;
        Ok(Arc::new(buf))
    }
    fn name(&self) -> &str {
        &self.core_path
    }
}

impl PageWrite for BulkWriter {
    fn write(&mut self, id: PageId, mut page: PageBuf) {
        if self.failed.is_some() {
            return;
        }
        page.seal(id, Lsn::ZERO);
        if let Some(at) = self.pending_slot(id) {
            self.pending[at..at + storage::PAGE_SIZE].copy_from_slice(page.bytes());
            return;
        }
        let next = PageId(self.pending_first.0 + self.pending_pages());
        if self.pending.is_empty() || id != next || self.pending.len() >= PENDING_MAX {
            self.write_pending();
            self.pending_first = id;
        }
        self.pending.extend_from_slice(page.bytes());
    }
}

impl PageStoreMut for BulkWriter {
    fn allocate(&mut self) -> StorageResult<PageId> {
        let id = (self.reserve)();
        self.pages.push(id);
        Ok(id)
    }
    fn free(&mut self, id: PageId) -> StorageResult<()> {
        Err(StorageError::Invalid(format!(
            "a bulk writer cannot free page {id}"
        )))
    }
}

/// Where an unlogged index stood when its database instance closed
/// (design.md I14): the log's end LSN after its pages were written, and
/// the log's epoch then. Its pages are durable once a checkpoint synced
/// the file system past `lsn`, which [`crate::Database::clean_mark_durable`]
/// can tell after a restart. [`CleanMark::SYNCED`] (all zero) marks pages
/// synced before the mark was written.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CleanMark {
    pub lsn: u64,
    pub epoch: u32,
}

impl CleanMark {
    /// Pages synced before the mark was written.
    pub const SYNCED: CleanMark = CleanMark { lsn: 0, epoch: 0 };
}
