//! In-place edits of node pages: the cheap write path of the B+tree.
//!
//! Replica creation and every other write load insert entries one at a
//! time, and each insert touches one page per level. Decoding a node into
//! owned entries and re-encoding it costs an allocation per entry; most
//! inserts only add one cell to a leaf that has room and add one to a count
//! in each internal node above it. So this module edits the page bytes
//! directly and the decode/encode path in `btree.rs` is left to splits,
//! emptied children and pages that do not have the shape these edits rely
//! on.
//!
//! The on-disk format is unchanged (module header of `btree.rs`): the
//! header's cell start still names the lowest cell and the bytes between
//! the slot array and it are free, so a page edited here reads like one
//! encoded whole. What differs is only where cells lie: a new cell takes
//! the free bytes just below the cell start, whatever its key, while
//! `encode_leaf` lays cells out in key order from the end.
//!
//! ```text
//! insert at slot i:   [hdr][slots 0..i][NEW][slots i..n]  free  [new cell][cells ...]
//!                                                                ^ cell start moves down
//! remove slot i:      cells below cell i move up by its size (their slots follow),
//!                     the slot is taken out, the vacated bytes are zeroed
//! ```
//!
//! An edit applies only to a page whose cell start is its lowest slot
//! offset and lies above the slot array; otherwise it returns `None` and
//! the caller takes the decode path, which rejects a bad page with a
//! `Corrupt` error. Every byte touched is bounds-checked through [`View`],
//! so a damaged page gives an error or a fallback, never a panic. Page
//! images are still written whole through `PageWrite::write`: the log's
//! deltas are computed by diffing the staged image against the last logged
//! one (`page::page_delta`, I6), so an in-place edit is logged like any
//! other change.

use super::{corrupt, View, INT_HDR, LEAF_HDR};
use crate::page::{get_u16, put_u16, put_u32, put_u64, PAGE_BODY};
use crate::{PageBuf, PageId, PageStore, StorageResult};

/// The geometry of a page that can be edited in place.
struct Layout {
    hdr: usize,
    n: usize,
    /// Offset of the lowest cell (`PAGE_BODY` when there are none).
    start: usize,
}

impl Layout {
    /// `None` unless the header's cell start is the lowest slot offset and
    /// lies between the end of the slot array and the end of the body.
    fn of(v: &View) -> Option<Layout> {
        let hdr = if v.leaf { LEAF_HDR } else { INT_HDR };
        let start = get_u16(v.body, 2) as usize;
        if start < hdr + 2 * v.n || start > PAGE_BODY {
            return None;
        }
        let lowest = (0..v.n)
            .map(|i| get_u16(v.body, hdr + 2 * i) as usize)
            .min()
            .unwrap_or(PAGE_BODY);
        (lowest == start).then_some(Layout { hdr, n: v.n, start })
    }

    /// Contiguous free bytes between the slot array and the cells.
    fn free(&self) -> usize {
        self.start - (self.hdr + 2 * self.n)
    }

    fn slot_at(&self, i: usize) -> usize {
        self.hdr + 2 * i
    }

    fn store_header(&self, b: &mut [u8]) {
        put_u16(b, 0, self.n as u16);
        put_u16(b, 2, self.start as u16);
    }

    /// Reserves `size` bytes below the cell start and a slot at index `i`
    /// pointing to them; returns the new cell's offset. The caller has
    /// checked `free() >= size + 2`.
    fn insert_cell(&mut self, b: &mut [u8], i: usize, size: usize) -> usize {
        self.start -= size;
        b.copy_within(self.slot_at(i)..self.slot_at(self.n), self.slot_at(i) + 2);
        put_u16(b, self.slot_at(i), self.start as u16);
        self.n += 1;
        self.store_header(b);
        self.start
    }

    /// Takes out cell `i`, lying at `off` with `size` bytes (checked to be
    /// inside the page): the cells below it move up by `size`, the slots
    /// pointing to them follow, and the vacated bytes are zeroed as an
    /// encoded page's free bytes are.
    fn remove_cell(&mut self, b: &mut [u8], i: usize, off: usize, size: usize) {
        b.copy_within(self.start..off, self.start + size);
        for j in (0..self.n).filter(|&j| j != i) {
            let o = get_u16(b, self.slot_at(j)) as usize;
            if o < off {
                put_u16(b, self.slot_at(j), (o + size) as u16);
            }
        }
        b.copy_within(self.slot_at(i + 1)..self.slot_at(self.n), self.slot_at(i));
        b[self.slot_at(self.n - 1)..self.slot_at(self.n)].fill(0);
        b[self.start..self.start + size].fill(0);
        self.start += size;
        self.n -= 1;
        self.store_header(b);
    }
}

fn fill_leaf_cell(b: &mut [u8], at: usize, key: &[u8], val: &[u8]) {
    put_u16(b, at, key.len() as u16);
    put_u16(b, at + 2, val.len() as u16);
    b[at + 4..at + 4 + key.len()].copy_from_slice(key);
    b[at + 4 + key.len()..at + 4 + key.len() + val.len()].copy_from_slice(val);
}

/// Inserts or replaces `key` in the leaf `v` (of `page`) in place; returns
/// the new image and the previous value, or `None` if the entry does not
/// fit the free bytes (or the page does not have an editable layout): the
/// caller then splits by the decode path. Sizes are checked by the caller.
pub(super) fn leaf_put(
    s: &impl PageStore,
    v: &View,
    page: &PageBuf,
    key: &[u8],
    val: &[u8],
) -> StorageResult<Option<(PageBuf, Option<Vec<u8>>)>> {
    let Some(mut l) = Layout::of(v) else {
        return Ok(None);
    };
    let size = 4 + key.len() + val.len();
    let (i, eq) = v.lower_bound(s, key)?;
    if !eq {
        if l.free() < size + 2 {
            return Ok(None);
        }
        let mut p = page.clone();
        let b = p.body_mut();
        let at = l.insert_cell(b, i, size);
        fill_leaf_cell(b, at, key, val);
        return Ok(Some((p, None)));
    }
    let off = v.slot(s, i)?;
    let old = v.leaf_cell(s, i)?.1;
    let mut p = page.clone();
    let b = p.body_mut();
    if old.len() == val.len() {
        b[off + 4 + key.len()..off + 4 + key.len() + val.len()].copy_from_slice(val);
        return Ok(Some((p, Some(old.to_vec()))));
    }
    let old_size = 4 + key.len() + old.len();
    if l.free() + old_size < size {
        return Ok(None);
    }
    l.remove_cell(b, i, off, old_size);
    let at = l.insert_cell(b, i, size);
    fill_leaf_cell(b, at, key, val);
    Ok(Some((p, Some(old.to_vec()))))
}

/// Removes entry `i` of the leaf `v` (of `page`) in place; returns the new
/// image and the removed value, or `None` if the page does not have an
/// editable layout.
pub(super) fn leaf_remove(
    s: &impl PageStore,
    v: &View,
    page: &PageBuf,
    i: usize,
) -> StorageResult<Option<(PageBuf, Vec<u8>)>> {
    let Some(mut l) = Layout::of(v) else {
        return Ok(None);
    };
    let off = v.slot(s, i)?;
    let (key, old) = v.leaf_cell(s, i)?;
    let mut p = page.clone();
    l.remove_cell(p.body_mut(), i, off, 4 + key.len() + old.len());
    Ok(Some((p, old.to_vec())))
}

/// Offset of child `c`'s count in an internal node's body.
fn count_offset(s: &impl PageStore, v: &View, c: usize) -> StorageResult<usize> {
    if c == 0 {
        return Ok(8);
    }
    v.int_cell(s, c - 1)?;
    Ok(v.slot(s, c - 1)? + 6)
}

/// The internal node `v` (of `page`) with child `c`'s count changed by
/// `delta` (±1 per inserted or removed entry below it). A count that
/// would leave the u64 range is `Corrupt`.
pub(super) fn add_to_count(
    s: &impl PageStore,
    v: &View,
    page: &PageBuf,
    c: usize,
    delta: i64,
) -> StorageResult<PageBuf> {
    let count = v.child(s, c)?.1;
    let new = count
        .checked_add_signed(delta)
        .ok_or_else(|| corrupt(s, v.id, format!("child {c} counts {count} entries")))?;
    let at = count_offset(s, v, c)?;
    let mut p = page.clone();
    put_u64(p.body_mut(), at, new);
    Ok(p)
}

/// The internal node `v` (of `page`) after child `c` split: `c` now holds
/// `left_count` entries and `(key, right, right_count)` becomes child
/// `c + 1`. `None` if the separator does not fit the free bytes (or the
/// page does not have an editable layout): the caller splits the node.
pub(super) fn insert_child(
    s: &impl PageStore,
    v: &View,
    page: &PageBuf,
    c: usize,
    left_count: u64,
    (key, right, right_count): (&[u8], PageId, u64),
) -> StorageResult<Option<PageBuf>> {
    let Some(mut l) = Layout::of(v) else {
        return Ok(None);
    };
    let size = 14 + key.len();
    if l.free() < size + 2 {
        return Ok(None);
    }
    let count_at = count_offset(s, v, c)?;
    let mut p = page.clone();
    let b = p.body_mut();
    put_u64(b, count_at, left_count);
    let at = l.insert_cell(b, c, size);
    put_u16(b, at, key.len() as u16);
    put_u32(b, at + 2, right.0);
    put_u64(b, at + 6, right_count);
    b[at + 14..at + 14 + key.len()].copy_from_slice(key);
    Ok(Some(p))
}

#[cfg(test)]
mod tests {
    use super::super::{
        check, create, decode, encode_leaf, get, insert, len, nth, range, rank, remove, Node,
    };
    use crate::page::page_delta;
    use crate::testutil::MemStore;
    use crate::{PageStore, PageWrite, StorageResult};
    use proptest::prelude::*;
    use std::collections::BTreeMap;
    use std::ops::Bound;

    fn leaf_entries(s: &MemStore, id: crate::PageId) -> Vec<(Vec<u8>, Vec<u8>)> {
        match decode(s, id, &s.read(id).unwrap()).unwrap() {
            Node::Leaf(e) => e,
            Node::Internal(_) => panic!("expected a leaf"),
        }
    }

    #[test]
    fn an_insert_with_room_edits_the_leaf_and_logs_a_small_delta() {
        let mut s = MemStore::new();
        let mut root = create(&mut s).unwrap();
        for k in [b"b", b"d", b"f"] {
            insert(&mut s, &mut root, k, &[1; 100]).unwrap();
        }
        let before = s.read(root).unwrap();
        insert(&mut s, &mut root, b"c", &[2; 100]).unwrap();
        let after = s.read(root).unwrap();
        let want: Vec<_> = [(b"b", 1), (b"c", 2), (b"d", 1), (b"f", 1)]
            .iter()
            .map(|(k, v)| (k.to_vec(), vec![*v; 100]))
            .collect();
        assert_eq!(leaf_entries(&s, root), want);
        // The decode path would lay the cells out in key order; the edit
        // put the new cell below the others, so only it, the slots and the
        // header changed.
        assert_ne!(*after, encode_leaf(&want));
        let changed: usize = page_delta(&before, &after)
            .iter()
            .map(|r| r.bytes.len())
            .sum();
        assert!(changed < 4 + 1 + 100 + 40, "{changed} bytes changed");
    }

    #[test]
    fn removes_and_resized_overwrites_keep_the_leaf_packed() {
        let mut s = MemStore::new();
        let mut root = create(&mut s).unwrap();
        for i in 0u8..20 {
            insert(&mut s, &mut root, &[i], &vec![i; 10 + i as usize]).unwrap();
        }
        for i in (0u8..20).step_by(3) {
            remove(&mut s, &mut root, &[i]).unwrap();
        }
        for i in (1u8..20).step_by(3) {
            insert(&mut s, &mut root, &[i], &[0xee; 7]).unwrap();
        }
        let page = s.read(root).unwrap();
        let entries = leaf_entries(&s, root);
        let used: usize = entries.iter().map(|(k, v)| 4 + k.len() + v.len()).sum();
        let body = page.body();
        let start = crate::page::get_u16(body, 2) as usize;
        assert_eq!(
            start + used,
            crate::page::PAGE_BODY,
            "no holes between cells"
        );
        assert!(body[super::LEAF_HDR + 2 * entries.len()..start]
            .iter()
            .all(|&b| b == 0));
        assert_eq!(check(&s, root).unwrap().entries, entries.len() as u64);
    }

    #[test]
    fn a_leaf_whose_cell_start_is_not_its_lowest_cell_takes_the_decode_path() {
        let mut s = MemStore::new();
        let mut root = create(&mut s).unwrap();
        let entries = vec![
            (b"a".to_vec(), b"1".to_vec()),
            (b"c".to_vec(), b"3".to_vec()),
        ];
        let mut page = encode_leaf(&entries);
        crate::page::put_u16(page.body_mut(), 2, 100);
        s.write(root, page);
        insert(&mut s, &mut root, b"b", b"2").unwrap();
        let mut want = entries;
        want.insert(1, (b"b".to_vec(), b"2".to_vec()));
        assert_eq!(s.read(root).unwrap().as_ref(), &encode_leaf(&want));
    }

    #[derive(Debug, Clone)]
    enum Op {
        Put(Vec<u8>, Vec<u8>),
        Remove(Vec<u8>),
        Nth(u64),
        Rank(Vec<u8>),
        Range(Vec<u8>, Vec<u8>),
    }

    /// Few distinct keys (so overwrites and removes hit), some long ones.
    fn key() -> impl Strategy<Value = Vec<u8>> {
        prop_oneof![
            6 => proptest::collection::vec(0u8..12, 1..5),
            1 => proptest::collection::vec(0u8..4, 300..1024),
        ]
    }

    /// Mostly small values, some large enough that a few fill a leaf.
    fn val() -> impl Strategy<Value = Vec<u8>> {
        prop_oneof![
            5 => proptest::collection::vec(any::<u8>(), 0..120),
            2 => proptest::collection::vec(any::<u8>(), 600..1024),
        ]
    }

    fn op() -> impl Strategy<Value = Op> {
        prop_oneof![
            8 => (key(), val()).prop_map(|(k, v)| Op::Put(k, v)),
            4 => key().prop_map(Op::Remove),
            1 => (0u64..400).prop_map(Op::Nth),
            1 => key().prop_map(Op::Rank),
            1 => (key(), key()).prop_map(|(a, b)| Op::Range(a, b)),
        ]
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(48))]
        /// Every operation against a `BTreeMap`, with the full invariant
        /// check after each one and no page leaked at the end.
        #[test]
        fn edits_in_place_match_a_btreemap_step_by_step(ops in proptest::collection::vec(op(), 1..300)) {
            let mut s = MemStore::new();
            let mut root = create(&mut s).unwrap();
            let mut model: BTreeMap<Vec<u8>, Vec<u8>> = BTreeMap::new();
            for op in &ops {
                match op {
                    Op::Put(k, v) => prop_assert_eq!(insert(&mut s, &mut root, k, v).unwrap(), model.insert(k.clone(), v.clone())),
                    Op::Remove(k) => prop_assert_eq!(remove(&mut s, &mut root, k).unwrap(), model.remove(k)),
                    Op::Nth(i) => prop_assert_eq!(nth(&s, root, *i).unwrap(), model.iter().nth(*i as usize).map(|(k, v)| (k.clone(), v.clone()))),
                    Op::Rank(k) => prop_assert_eq!(rank(&s, root, k).unwrap(), model.range::<Vec<u8>, _>(..k.clone()).count() as u64),
                    Op::Range(a, b) => {
                        let (a, b) = if a <= b { (a, b) } else { (b, a) };
                        let got: Vec<_> = range(&s, root, Bound::Included(a), Bound::Excluded(b)).collect::<StorageResult<_>>().unwrap();
                        let want: Vec<_> = model.range::<Vec<u8>, _>(a.clone()..b.clone()).map(|(k, v)| (k.clone(), v.clone())).collect();
                        prop_assert_eq!(got, want);
                    }
                }
                let st = check(&s, root).unwrap();
                prop_assert_eq!(st.entries, model.len() as u64);
                prop_assert_eq!(st.pages, s.live_pages() as u64, "pages leaked or shared");
            }
            prop_assert_eq!(len(&s, root).unwrap(), model.len() as u64);
            for (k, v) in &model {
                prop_assert_eq!(get(&s, root, k).unwrap(), Some(v.clone()));
            }
        }
    }
}
