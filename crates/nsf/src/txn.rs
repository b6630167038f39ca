//! A write transaction's private view of a database's pages.
//!
//! Every page a transaction changes is staged here, never in the shared
//! buffer pool, until the whole transaction has been appended to the log
//! (I4, no-steal). A failed operation — an oversized item, a save conflict
//! discovered halfway, an I/O error — simply drops the `Txn` and nothing has
//! changed anywhere. Reads see the transaction's own staged versions first,
//! then the committed versions in the pool.
//!
//! Several writes can share one transaction (the database's combined
//! commit): a [`Savepoint`] taken before each lets a write that fails be
//! undone alone, leaving the others' staged pages as they were (I4 for
//! each write).
//!
//! Allocation takes a page from the free list, or else the next page past
//! the file's high-water mark, which is shared with attachment streaming
//! (I7) and therefore kept in the database's allocator, not here.

use crate::dbcore::DbCore;
use crate::header::DbHeader;
use crate::Timestamp;
use std::collections::BTreeMap;
use std::sync::Arc;
use storage::{PageBuf, PageId, PageStore, PageStoreMut, PageWrite, StorageResult};

pub(crate) struct Txn<'a> {
    core: &'a DbCore,
    /// Working copy of the header; staged as page 0 at commit if changed.
    pub header: DbHeader,
    staged: BTreeMap<PageId, Arc<PageBuf>>,
    /// Pages written without logging (unlogged view indexes, I14).
    unlogged: BTreeMap<PageId, Arc<PageBuf>>,
    /// The transaction wrote the ACL note, so installing it must drop the
    /// database's cached ACL (I15).
    pub acl_written: bool,
}

/// What a finished transaction changed.
pub(crate) struct TxnPages {
    pub header: DbHeader,
    /// Pages to log, in page order (page 0 included if the header changed).
    pub logged: Vec<(PageId, Arc<PageBuf>)>,
    /// Pages to install without logging (I14).
    pub unlogged: Vec<(PageId, Arc<PageBuf>)>,
    /// The ACL note changed (I15).
    pub acl_written: bool,
}

impl TxnPages {
    pub fn is_empty(&self) -> bool {
        self.logged.is_empty() && self.unlogged.is_empty()
    }
}

/// The staged state of a transaction at one moment, to return to if the
/// write that follows fails.
pub(crate) struct Savepoint {
    header: DbHeader,
    staged: BTreeMap<PageId, Arc<PageBuf>>,
    unlogged: BTreeMap<PageId, Arc<PageBuf>>,
    acl_written: bool,
}

impl<'a> Txn<'a> {
    /// The engine's attachment store (reference counts, I38).
    pub fn attach_store(&self) -> &crate::store::AttachStore {
        &self.core.store
    }

    /// Remembers what is staged now (page handles are shared, not copied).
    pub fn savepoint(&self) -> Savepoint {
        Savepoint {
            header: self.header.clone(),
            staged: self.staged.clone(),
            unlogged: self.unlogged.clone(),
            acl_written: self.acl_written,
        }
    }

    /// Forgets everything staged since `sp`. Pages taken past the
    /// high-water mark since then stay reserved, unreferenced, as they do
    /// when a whole transaction fails (reclaimed by compact).
    pub fn rollback(&mut self, sp: Savepoint) {
        self.header = sp.header;
        self.staged = sp.staged;
        self.unlogged = sp.unlogged;
        self.acl_written = sp.acl_written;
    }

    /// The database this transaction writes.
    pub fn core(&self) -> &'a DbCore {
        self.core
    }

    /// The engine clock's time, for the identities this transaction
    /// stamps (I22).
    pub fn now(&self) -> Timestamp {
        self.core.clock.now()
    }

    pub fn new(core: &'a DbCore, header: DbHeader) -> Self {
        Txn {
            core,
            header,
            staged: BTreeMap::new(),
            unlogged: BTreeMap::new(),
            acl_written: false,
        }
    }

    /// Frees many pages at once (see `FreeList::push_many`).
    pub fn free_many(&mut self, ids: &[PageId]) -> StorageResult<()> {
        for id in ids {
            self.staged.remove(id);
            self.unlogged.remove(id);
        }
        let mut free = self.header.free;
        free.push_many(self, ids)?;
        self.header.free = free;
        Ok(())
    }

    /// Stages a page that will not be logged (I14).
    pub fn write_unlogged(&mut self, id: PageId, page: PageBuf) {
        self.staged.remove(&id);
        self.unlogged.insert(id, Arc::new(page));
    }

    /// Finishes the transaction: stages the header if it changed and returns
    /// every staged page in page order (empty if nothing changed).
    pub fn into_pages(mut self, committed: &DbHeader) -> TxnPages {
        if !self.staged.is_empty() || self.header != *committed {
            self.header.page_count = self.header.page_count.max(self.core.high_water());
        }
        if self.header != *committed {
            self.staged
                .insert(PageId(0), Arc::new(self.header.encode()));
        }
        TxnPages {
            header: self.header,
            logged: self.staged.into_iter().collect(),
            unlogged: self.unlogged.into_iter().collect(),
            acl_written: self.acl_written,
        }
    }
}

impl PageStore for Txn<'_> {
    fn read(&self, id: PageId) -> StorageResult<Arc<PageBuf>> {
        match self.staged.get(&id).or_else(|| self.unlogged.get(&id)) {
            Some(p) => Ok(p.clone()),
            None => self.core.read_page(id),
        }
    }
    fn name(&self) -> &str {
        &self.core.path
    }
}

impl PageWrite for Txn<'_> {
    fn write(&mut self, id: PageId, page: PageBuf) {
        self.unlogged.remove(&id);
        self.staged.insert(id, Arc::new(page));
    }
}

impl PageStoreMut for Txn<'_> {
    fn allocate(&mut self) -> StorageResult<PageId> {
        let mut free = self.header.free;
        let popped = free.pop(self)?;
        self.header.free = free;
        Ok(match popped {
            Some(id) => id,
            None => self.core.reserve_pages(1),
        })
    }

    fn free(&mut self, id: PageId) -> StorageResult<()> {
        self.staged.remove(&id);
        self.unlogged.remove(&id);
        let mut free = self.header.free;
        free.push(self, id)?;
        self.header.free = free;
        Ok(())
    }
}
