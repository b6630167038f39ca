//! An in-memory page store for the structure tests.

use crate::{PageBuf, PageId, PageStore, PageStoreMut, PageWrite, StorageError, StorageResult};
use std::collections::{HashMap, HashSet};
use std::sync::Arc;

#[derive(Default)]
pub(crate) struct MemStore {
    pub pages: HashMap<PageId, Arc<PageBuf>>,
    pub free: HashSet<PageId>,
    next: u32,
    pub frees: u64,
}

impl MemStore {
    pub fn new() -> Self {
        MemStore {
            next: 1,
            ..Default::default()
        }
    }
    pub fn live_pages(&self) -> usize {
        self.pages.len() - self.free.len()
    }
}

impl PageStore for MemStore {
    fn read(&self, id: PageId) -> StorageResult<Arc<PageBuf>> {
        if self.free.contains(&id) {
            return Err(StorageError::corrupt("mem", id, "read of a freed page"));
        }
        self.pages
            .get(&id)
            .cloned()
            .ok_or_else(|| StorageError::corrupt("mem", id, "no such page"))
    }
    fn name(&self) -> &str {
        "mem"
    }
}

impl PageWrite for MemStore {
    fn write(&mut self, id: PageId, page: PageBuf) {
        self.pages.insert(id, Arc::new(page));
    }
}

impl PageStoreMut for MemStore {
    fn allocate(&mut self) -> StorageResult<PageId> {
        if let Some(&id) = self.free.iter().next() {
            self.free.remove(&id);
            return Ok(id);
        }
        self.next += 1;
        Ok(PageId(self.next - 1))
    }
    fn free(&mut self, id: PageId) -> StorageResult<()> {
        assert!(self.free.insert(id), "double free of {id}");
        self.frees += 1;
        Ok(())
    }
}
