//! Page relocation for in-place compact: moving the pages of a structure
//! that lie at or past a limit into pages the caller allocates lower down,
//! so the file's tail can be cut off (design.md §2.10, I40).
//!
//! Every page in a database file has exactly one reference: a B+tree
//! node its parent's child pointer (or a root in the header or in a
//! catalog entry), an overflow page the previous link (or the note table
//! entry), a blob page its attachment item. So moving a page is: copy it
//! to a newly allocated id, rewrite the one page that points at it, free
//! the old id — all in the caller's transaction, so the move commits (or
//! not) like any other write (I41). Which ids `allocate` hands out and
//! what `free` does with an id past the limit is the caller's business
//! (compact keeps freed tail pages off the free list).
//!
//! ```text
//!   before:  parent ─▶ 9000 (past the limit)
//!   after:   parent' ─▶ 42 (a copy of 9000)     9000: freed
//! ```
//!
//! Each call moves at most `Moves::budget` pages, so one compact step is
//! one small transaction; a walk visits the whole structure (pages are
//! found by walking, never by scanning the file).

use crate::btree::{child_pages, with_child_pages};
use crate::page::{get_u32, put_u32};
use crate::{PageId, PageKind, PageStore, PageStoreMut, StorageError, StorageResult};
use std::collections::HashSet;

/// Which pages move (ids at or past `limit`) and how many more may move in
/// this step.
#[derive(Clone, Copy, Debug)]
pub struct Moves {
    pub limit: u32,
    pub budget: usize,
    pub moved: u64,
}

impl Moves {
    pub fn new(limit: u32, budget: usize) -> Moves {
        Moves {
            limit,
            budget,
            moved: 0,
        }
    }

    /// Whether `id` must move and the step may still move it (counted
    /// as moved when it must).
    pub fn take(&mut self, id: PageId) -> bool {
        if id.0 < self.limit || self.budget == 0 {
            return false;
        }
        self.budget -= 1;
        self.moved += 1;
        true
    }
}

/// Copies page `id` to a new page and frees `id`; returns the new id.
pub fn move_page(s: &mut impl PageStoreMut, id: PageId) -> StorageResult<PageId> {
    let page = (*s.read(id)?).clone();
    let to = s.allocate()?;
    s.write(to, page);
    s.free(id)?;
    Ok(to)
}

/// Appends every page of the tree at `root` to `out`.
pub fn tree_pages(s: &impl PageStore, root: PageId, out: &mut Vec<PageId>) -> StorageResult<()> {
    let mut stack = vec![root];
    let mut seen = HashSet::new();
    while let Some(id) = stack.pop() {
        if !seen.insert(id) {
            return Err(StorageError::corrupt(
                s.name(),
                id,
                "B+tree page reached twice",
            ));
        }
        let page = s.read(id)?;
        stack.extend(child_pages(s, id, &page)?);
        out.push(id);
    }
    Ok(())
}

/// Moves the tree's pages at or past the limit (within the budget) and
/// returns its root, new if the root itself moved. A node whose child
/// moved is rewritten where it is, or moved itself.
pub fn relocate_tree(
    s: &mut impl PageStoreMut,
    root: PageId,
    m: &mut Moves,
) -> StorageResult<PageId> {
    let page = s.read(root)?;
    let children = child_pages(s, root, &page)?;
    let mut moved_child = false;
    let mut now = Vec::with_capacity(children.len());
    for c in children.iter().copied() {
        let to = relocate_tree(s, c, m)?;
        moved_child |= to != c;
        now.push(to);
    }
    let moves = m.take(root);
    if !moved_child && !moves {
        return Ok(root);
    }
    let content = if moved_child {
        with_child_pages(s, root, &page, &now)?
    } else {
        (*page).clone()
    };
    if moves {
        let to = s.allocate()?;
        s.write(to, content);
        s.free(root)?;
        return Ok(to);
    }
    s.write(root, content);
    Ok(root)
}

/// Appends every page of the overflow chain at `first` to `out`.
pub fn chain_pages(s: &impl PageStore, first: PageId, out: &mut Vec<PageId>) -> StorageResult<()> {
    let mut seen = HashSet::new();
    let mut at = first;
    while !at.is_none() {
        if !seen.insert(at) {
            return Err(StorageError::corrupt(
                s.name(),
                at,
                "overflow chain has a cycle",
            ));
        }
        let p = s.read(at)?;
        if p.kind() != Some(PageKind::Overflow) {
            return Err(StorageError::corrupt(
                s.name(),
                at,
                "expected an overflow page",
            ));
        }
        out.push(at);
        at = PageId(get_u32(p.body(), 0));
    }
    Ok(())
}

/// Moves the chain's pages at or past the limit (within the budget) and
/// returns its first page, new if that one moved. Links are rewritten
/// from the end, so each page is written once with its final `next`.
pub fn relocate_chain(
    s: &mut impl PageStoreMut,
    first: PageId,
    m: &mut Moves,
) -> StorageResult<PageId> {
    let mut ids = Vec::new();
    chain_pages(s, first, &mut ids)?;
    let mut next = PageId::NONE;
    for (i, &id) in ids.iter().enumerate().rev() {
        let old_next = ids.get(i + 1).copied().unwrap_or(PageId::NONE);
        let mut page = (*s.read(id)?).clone();
        if next != old_next {
            put_u32(page.body_mut(), 0, next.0);
        }
        if m.take(id) {
            let to = s.allocate()?;
            s.write(to, page);
            s.free(id)?;
            next = to;
        } else {
            if next != old_next {
                s.write(id, page);
            }
            next = id;
        }
    }
    Ok(next)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testutil::MemStore;
    use crate::{btree, overflow, PageBuf};
    use std::ops::Bound;

    /// Allocates only from `low` and keeps freed pages off it, as compact
    /// does with pages past its limit.
    struct Low {
        mem: MemStore,
        low: Vec<PageId>,
    }

    impl PageStore for Low {
        fn read(&self, id: PageId) -> StorageResult<std::sync::Arc<PageBuf>> {
            self.mem.read(id)
        }
        fn name(&self) -> &str {
            "low"
        }
    }
    impl crate::PageWrite for Low {
        fn write(&mut self, id: PageId, page: PageBuf) {
            self.mem.write(id, page)
        }
    }
    impl PageStoreMut for Low {
        fn allocate(&mut self) -> StorageResult<PageId> {
            self.low
                .pop()
                .ok_or_else(|| StorageError::Invalid("no low page".into()))
        }
        fn free(&mut self, id: PageId) -> StorageResult<()> {
            self.mem.pages.remove(&id);
            Ok(())
        }
    }

    fn fill_low(s: &mut MemStore, n: u32) -> Vec<PageId> {
        (0..n).map(|_| s.allocate().unwrap()).collect()
    }

    #[test]
    fn a_tree_moved_below_the_limit_keeps_every_entry() {
        let mut s = MemStore::new();
        let low = fill_low(&mut s, 400);
        let mut root = btree::create(&mut s).unwrap();
        for i in 0..3000u32 {
            btree::insert(&mut s, &mut root, &i.to_be_bytes(), &[7u8; 40]).unwrap();
        }
        let limit = low.last().unwrap().0 + 1;
        let mut pages = Vec::new();
        tree_pages(&s, root, &mut pages).unwrap();
        assert!(pages.iter().all(|p| p.0 >= limit));
        let mut s = Low { mem: s, low };
        let mut steps = 0;
        loop {
            let mut m = Moves::new(limit, 7);
            root = relocate_tree(&mut s, root, &mut m).unwrap();
            steps += 1;
            if m.moved == 0 {
                break;
            }
        }
        assert!(steps > 2, "the budget splits the work into steps");
        let mut after = Vec::new();
        tree_pages(&s, root, &mut after).unwrap();
        assert!(after.iter().all(|p| p.0 < limit), "{after:?}");
        assert_eq!(btree::check(&s, root).unwrap().entries, 3000);
        let got: Vec<_> = btree::range(&s, root, Bound::Unbounded, Bound::Unbounded)
            .map(|kv| kv.unwrap().0)
            .collect();
        let want: Vec<_> = (0..3000u32).map(|i| i.to_be_bytes().to_vec()).collect();
        assert_eq!(got, want);
    }

    #[test]
    fn a_chain_moved_below_the_limit_reads_the_same() {
        let mut s = MemStore::new();
        let data: Vec<u8> = (0..100_000u32).map(|i| (i % 253) as u8).collect();
        let low = fill_low(&mut s, 20);
        let first = overflow::write(&mut s, &data).unwrap();
        let limit = low.last().unwrap().0 + 1;
        let mut s = Low { mem: s, low };
        let mut m = Moves::new(limit, 5);
        let first = relocate_chain(&mut s, first, &mut m).unwrap();
        assert_eq!(m.moved, 5);
        assert_eq!(overflow::read(&s, first, data.len() as u64).unwrap(), data);
        let mut m = Moves::new(limit, 100);
        let first = relocate_chain(&mut s, first, &mut m).unwrap();
        let mut pages = Vec::new();
        chain_pages(&s, first, &mut pages).unwrap();
        assert!(pages.iter().all(|p| p.0 < limit));
        assert_eq!(overflow::read(&s, first, data.len() as u64).unwrap(), data);
    }

    #[test]
    fn a_moved_page_is_a_copy() {
        let mut s = MemStore::new();
        use crate::PageWrite;
        let mut p = PageBuf::new(PageKind::Blob);
        p.body_mut()[0] = 9;
        let id = s.allocate().unwrap();
        s.write(id, p);
        let to = move_page(&mut s, id).unwrap();
        assert_ne!(to, id);
        assert_eq!(s.read(to).unwrap().body()[0], 9);
        assert!(s.read(id).is_err());
    }
}
