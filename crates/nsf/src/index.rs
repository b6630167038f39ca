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
//!   owner chose not to log them, and create design notes in the same
//!   transaction.
//! - [`IndexRead`]: committed pages and the header, read under the same
//!   short shared lock as document reads (I13), so index readers never
//!   wait for a writer's fsync and writers never wait for a long scan.
//! - [`BulkWriter`]: writes a freshly built tree straight to never-used
//!   pages and syncs them, like attachment content (I7), so a rebuild of a
//!   million entries neither stages its pages in memory nor copies them
//!   into the log; one small logged transaction then points at it.

use crate::db::{Database, DbCore};
use crate::header::DbHeader;
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
    pub(crate) db: &'t Database,
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
        self.db.apply_create(self.txn, items)
    }

    /// Reads a note (or stub) by id as this transaction sees it.
    pub fn note(&self, id: NoteId) -> NsfResult<Option<Note>> {
        crate::db::load_note(&*self.txn, &self.txn.header, id)
    }

    /// Finds a live note's id by UNID as this transaction sees it.
    pub fn note_id_of(&self, unid: crate::Unid) -> NsfResult<Option<NoteId>> {
        crate::db::lookup_unid(&*self.txn, &self.txn.header, unid)
    }

    /// Stages a page that is installed but never logged (I14): after a
    /// crash its content on disk is whatever the flusher last wrote, so
    /// only structures that are rebuilt after a crash may use it.
    pub fn write_unlogged(&mut self, id: PageId, page: PageBuf) {
        self.txn.write_unlogged(id, page);
    }

    pub fn path(&self) -> &str {
        self.db.path()
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
        crate::db::lookup_unid(self, self.header, unid)
    }

    /// A committed note (or stub) by id.
    pub fn note(&self, id: NoteId) -> NsfResult<Option<Note>> {
        crate::db::load_note(self, self.header, id)
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
}

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
        }
    }

    /// Every page reserved so far.
    pub fn pages(&self) -> &[PageId] {
        &self.pages
    }

    /// Syncs the written pages (I7). Any earlier write error surfaces here.
    pub fn finish(&self) -> NsfResult<()> {
        if let Some(reason) = &self.failed {
            return Err(NsfError::Io {
                path: self.core_path.clone(),
                source: std::io::Error::other(reason.clone()),
            });
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
        if let Err(e) = write_all_at(self.handle.as_ref(), page.bytes(), id.offset()) {
            self.failed = Some(format!("write of page {id}: {e}"));
        }
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
