//! The free-page list: trunk pages that list free page ids.
//!
//! Freed pages must be found again without scanning the file, and the
//! structure that tracks them cannot itself need allocation (it is what
//! allocation is built on). So, as in SQLite, a freed page either joins
//! the list in the head trunk or, when the head is full or absent, becomes
//! the new head trunk itself.
//!
//! ```text
//!   header.free.head ─► trunk [next | n | id id id ...] ─► trunk [...] ─► 0
//!   trunk body: 0 next trunk u32 | 4 count u32 | 8 ids u32 × count
//! ```

use crate::page::{get_u32, put_u32, PAGE_BODY};
use crate::{PageBuf, PageId, PageKind, PageStore, PageWrite, StorageError, StorageResult};
use std::collections::HashSet;

/// Ids one trunk page can list.
pub const TRUNK_CAPACITY: usize = (PAGE_BODY - 8) / 4;

/// Head of the list and the number of free pages, kept in the file header.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FreeList {
    pub head: PageId,
    pub count: u64,
}

fn read_trunk(s: &impl PageStore, id: PageId) -> StorageResult<(PageBuf, PageId, usize)> {
    let p = s.read(id)?;
    if p.kind() != Some(PageKind::FreeTrunk) {
        return Err(StorageError::corrupt(
            s.name(),
            id,
            "expected a free-list trunk page",
        ));
    }
    let next = PageId(get_u32(p.body(), 0));
    let n = get_u32(p.body(), 4) as usize;
    if n > TRUNK_CAPACITY {
        return Err(StorageError::corrupt(
            s.name(),
            id,
            format!("trunk lists {n} pages"),
        ));
    }
    Ok(((*p).clone(), next, n))
}

impl FreeList {
    /// Takes a free page, or `None` when the list is empty.
    pub fn pop(&mut self, s: &mut impl PageWrite) -> StorageResult<Option<PageId>> {
        if self.head.is_none() {
            return Ok(None);
        }
        let head = self.head;
        let (mut page, next, n) = read_trunk(s, head)?;
        let id = if n == 0 {
            self.head = next;
            head
        } else {
            let id = PageId(get_u32(page.body(), 8 + 4 * (n - 1)));
            put_u32(page.body_mut(), 4, (n - 1) as u32);
            s.write(head, page);
            id
        };
        self.count = self.count.saturating_sub(1);
        Ok(Some(id))
    }

    /// Returns a page to the list.
    pub fn push(&mut self, s: &mut impl PageWrite, id: PageId) -> StorageResult<()> {
        if id.is_none() {
            return Err(StorageError::Invalid("page 0 cannot be freed".into()));
        }
        if !self.head.is_none() {
            let (mut page, _, n) = read_trunk(s, self.head)?;
            if n < TRUNK_CAPACITY {
                put_u32(page.body_mut(), 8 + 4 * n, id.0);
                put_u32(page.body_mut(), 4, (n + 1) as u32);
                s.write(self.head, page);
                self.count += 1;
                return Ok(());
            }
        }
        let mut trunk = PageBuf::new(PageKind::FreeTrunk);
        put_u32(trunk.body_mut(), 0, self.head.0);
        put_u32(trunk.body_mut(), 4, 0);
        s.write(id, trunk);
        self.head = id;
        self.count += 1;
        Ok(())
    }

    /// Returns many pages to the list, reading and writing each trunk once
    /// rather than once per page (freeing a whole index).
    pub fn push_many(&mut self, s: &mut impl PageWrite, ids: &[PageId]) -> StorageResult<()> {
        if ids.iter().any(|id| id.is_none()) {
            return Err(StorageError::Invalid("page 0 cannot be freed".into()));
        }
        let mut rest = ids;
        while !rest.is_empty() {
            if !self.head.is_none() {
                let (mut page, _, n) = read_trunk(s, self.head)?;
                let room = (TRUNK_CAPACITY - n).min(rest.len());
                if room > 0 {
                    for (j, id) in rest[..room].iter().enumerate() {
                        put_u32(page.body_mut(), 8 + 4 * (n + j), id.0);
                    }
                    put_u32(page.body_mut(), 4, (n + room) as u32);
                    s.write(self.head, page);
                    self.count += room as u64;
                    rest = &rest[room..];
                    continue;
                }
            }
            // The head trunk is full (or there is none): the next page
            // becomes a new, empty trunk.
            self.push(s, rest[0])?;
            rest = &rest[1..];
        }
        Ok(())
    }

    /// Every free page (trunks included), for consistency checks. A cycle
    /// or a count that disagrees with the header is corruption.
    pub fn pages(&self, s: &impl PageStore) -> StorageResult<Vec<PageId>> {
        let mut out = Vec::new();
        let mut seen = HashSet::new();
        let mut at = self.head;
        while !at.is_none() {
            if !seen.insert(at) {
                return Err(StorageError::corrupt(s.name(), at, "free list has a cycle"));
            }
            let (page, next, n) = read_trunk(s, at)?;
            out.push(at);
            out.extend((0..n).map(|i| PageId(get_u32(page.body(), 8 + 4 * i))));
            at = next;
        }
        if out.len() as u64 != self.count {
            return Err(StorageError::corrupt(
                s.name(),
                self.head,
                format!(
                    "free list holds {} pages, header says {}",
                    out.len(),
                    self.count
                ),
            ));
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testutil::MemStore;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn push_pop_matches_a_set_model(ops in proptest::collection::vec(any::<bool>(), 1..6000)) {
            let mut s = MemStore::new();
            let mut fl = FreeList::default();
            let mut model: std::collections::BTreeSet<u32> = Default::default();
            let mut next = 10u32;
            for (i, push) in ops.into_iter().enumerate() {
                if i % 97 == 0 {
                    // Now and then a batch, sometimes past a trunk's capacity.
                    let n = (i * 31) % (TRUNK_CAPACITY + 300);
                    let ids: Vec<PageId> = (next..next + n as u32).map(PageId).collect();
                    fl.push_many(&mut s, &ids).unwrap();
                    model.extend(next..next + n as u32);
                    next += n as u32;
                } else if push || model.is_empty() {
                    fl.push(&mut s, PageId(next)).unwrap();
                    model.insert(next);
                    next += 1;
                } else {
                    let got = fl.pop(&mut s).unwrap().unwrap();
                    prop_assert!(model.remove(&got.0), "popped a page that was not free");
                }
                prop_assert_eq!(fl.count, model.len() as u64);
            }
            let mut listed: Vec<u32> = fl.pages(&s).unwrap().into_iter().map(|p| p.0).collect();
            listed.sort();
            prop_assert_eq!(listed, model.into_iter().collect::<Vec<_>>());
        }
    }

    #[test]
    fn trunk_overflow_and_cycle_detection() {
        let mut s = MemStore::new();
        let mut fl = FreeList::default();
        for i in 1..=(2 * TRUNK_CAPACITY as u32 + 5) {
            fl.push(&mut s, PageId(i)).unwrap();
        }
        assert_eq!(fl.pages(&s).unwrap().len() as u64, fl.count);
        let mut bad = fl;
        bad.count += 1;
        assert!(bad
            .pages(&s)
            .unwrap_err()
            .to_string()
            .contains("header says"));
        assert!(fl.push(&mut s, PageId(0)).is_err());
    }
}
