//! A page store straight over a file handle, for fixup: reads verify each
//! page (checksum and id), writes seal it (page LSN 0: a new instance has
//! no log records yet) and go to the file at once, allocation takes pages
//! past the high-water mark. No buffer pool, no log.

use std::io;
use std::sync::Arc;
use storage::backend::{read_exact_at, write_all_at};
use storage::{
    FileHandle, Lsn, PageBuf, PageId, PageStore, PageStoreMut, PageWrite, StorageError,
    StorageResult, PAGE_SIZE,
};

pub(crate) struct FileStore {
    handle: Arc<dyn FileHandle>,
    name: String,
    /// The next page `allocate` hands out.
    next: u32,
    /// The first write that failed (`PageWrite::write` cannot return it).
    failed: Option<io::Error>,
}

impl FileStore {
    pub(crate) fn new(handle: Arc<dyn FileHandle>, name: &str, high_water: u32) -> FileStore {
        FileStore {
            handle,
            name: name.to_string(),
            next: high_water,
            failed: None,
        }
    }

    pub(crate) fn high_water(&self) -> u32 {
        self.next
    }

    /// The first write error, if any write failed.
    pub(crate) fn take_failure(&mut self) -> Option<io::Error> {
        self.failed.take()
    }

    /// Reads a page without verifying it.
    pub(crate) fn read_raw(&self, id: PageId) -> io::Result<PageBuf> {
        let mut page = PageBuf::zeroed();
        read_exact_at(self.handle.as_ref(), page.bytes_mut(), id.offset())?;
        Ok(page)
    }
}

impl PageStore for FileStore {
    fn read(&self, id: PageId) -> StorageResult<Arc<PageBuf>> {
        let page = self
            .read_raw(id)
            .map_err(|e| StorageError::corrupt(&self.name, id, format!("cannot read: {e}")))?;
        page.verify(&self.name, id)?;
        if page.bytes().iter().all(|b| *b == 0) {
            return Err(StorageError::corrupt(
                &self.name,
                id,
                "page was never written",
            ));
        }
        Ok(Arc::new(page))
    }
    fn name(&self) -> &str {
        &self.name
    }
}

impl PageWrite for FileStore {
    fn write(&mut self, id: PageId, mut page: PageBuf) {
        page.seal(id, Lsn::ZERO);
        debug_assert_eq!(page.bytes().len(), PAGE_SIZE);
        if let Err(e) = write_all_at(self.handle.as_ref(), page.bytes(), id.offset()) {
            self.failed.get_or_insert(e);
        }
    }
}

impl PageStoreMut for FileStore {
    fn allocate(&mut self) -> StorageResult<PageId> {
        let id = PageId(self.next);
        self.next = self
            .next
            .checked_add(1)
            .ok_or_else(|| StorageError::Invalid("database file is full".into()))?;
        Ok(id)
    }
    fn free(&mut self, _id: PageId) -> StorageResult<()> {
        // Only a failed bulk load frees, and fixup abandons the whole file
        // then; the page is simply left unused.
        Ok(())
    }
}
