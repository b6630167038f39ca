//! A transaction that allocates only below compact's limit.
//!
//! A move step must put every page it writes below the limit, and must
//! not put a page past the limit back on the free list, where the next
//! allocation would find it again. So allocation pops the free list until
//! it finds a page below the limit, and a page past the limit that is
//! popped or freed is simply dropped: unreferenced and off the list,
//! like a page an interrupted commit leaked. The seal (or, after a crash,
//! the next compact) accounts for it (I40).

use crate::txn::Txn;
use std::sync::Arc;
use storage::{PageBuf, PageId, PageStore, PageStoreMut, PageWrite, StorageError, StorageResult};

pub(crate) struct Below<'t, 'a> {
    pub txn: &'t mut Txn<'a>,
    pub limit: u32,
}

/// The text of the error a step fails with when no free page is left
/// below the limit (the step then changes nothing, I4).
pub(crate) const NO_ROOM: &str = "compact: no free page left below the limit";

impl PageStore for Below<'_, '_> {
    fn read(&self, id: PageId) -> StorageResult<Arc<PageBuf>> {
        self.txn.read(id)
    }
    fn name(&self) -> &str {
        self.txn.name()
    }
}

impl PageWrite for Below<'_, '_> {
    fn write(&mut self, id: PageId, page: PageBuf) {
        debug_assert!(
            id.0 < self.limit,
            "I40: compact writes only below its limit"
        );
        self.txn.write(id, page);
    }
}

impl PageStoreMut for Below<'_, '_> {
    fn allocate(&mut self) -> StorageResult<PageId> {
        loop {
            let mut free = self.txn.header.free;
            let popped = free.pop(self.txn)?;
            self.txn.header.free = free;
            match popped {
                None => return Err(StorageError::Invalid(NO_ROOM.into())),
                Some(id) if id.0 >= self.limit => continue, // dropped (I40)
                Some(id) => return Ok(id),
            }
        }
    }

    fn free(&mut self, id: PageId) -> StorageResult<()> {
        if id.0 >= self.limit {
            return Ok(()); // dropped (I40)
        }
        self.txn.free(id)
    }
}
