//! The page-access traits that the B+tree, free list and overflow chains are
//! written against.
//!
//! Structures never touch files or the buffer pool directly. A reader hands
//! them something that returns committed page versions; a write transaction
//! hands them its private copy-on-write view, which stages new page images
//! in memory until commit. That is what makes a failed operation change
//! nothing: the staged pages are simply dropped.

use crate::{PageBuf, PageId, StorageResult};
use std::sync::Arc;

/// Read access to a consistent set of page versions.
pub trait PageStore {
    /// Returns the page, checksum-verified. Errors name the file and page.
    fn read(&self, id: PageId) -> StorageResult<Arc<PageBuf>>;
    /// A name for error messages (the database's path).
    fn name(&self) -> &str;
}

/// Staging of new page images, without allocation. The free list is
/// written against this narrower trait because it is itself what
/// allocation is built on.
pub trait PageWrite: PageStore {
    /// Stage a new image for `id` (the header's id/lsn/crc fields are filled
    /// in when the page is sealed for disk; callers need not set them).
    fn write(&mut self, id: PageId, page: PageBuf);
}

/// Write access within one transaction. New versions are staged privately;
/// nothing is visible to other readers until the owner commits.
pub trait PageStoreMut: PageWrite {
    /// A fresh page id for a new page (from the free list or the file end).
    fn allocate(&mut self) -> StorageResult<PageId>;
    /// Give a page back; its content is garbage from now on.
    fn free(&mut self, id: PageId) -> StorageResult<()>;
}
