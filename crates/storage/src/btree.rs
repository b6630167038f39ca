//! A B+tree of byte-string keys and values, with counted internal nodes.
//!
//! Every index in a database file is one of these: the note table, the UNID
//! and change-sequence indexes, and (later) view indexes of a million
//! entries that must answer "entry at position N" and "position of this
//! key" without scanning. So each internal cell stores its child's entry
//! count, making `len`, `nth` and `rank` O(log n).
//!
//! Pages are slotted: a slot array of u16 offsets in key order grows from
//! the front, cells grow from the back. Lookups binary-search the slots in
//! place without decoding the page (reads are the hot path); writes decode
//! the one node they change, edit it, and re-encode it, splitting by bytes
//! so entries of any permitted size always fit after a split.
//!
//! ```text
//! leaf body:      0 n u16 | 2 cell start u16 | 4 slots u16×n ... cells: [klen u16][vlen u16][key][value]
//! internal body:  0 n u16 | 2 cell start u16 | 4 leftmost child u32 | 8 leftmost count u64
//!                 | 16 slots u16×n ... cells: [klen u16][child u32][count u64][key]
//! ```
//! A separator key k sends keys ≥ k to its child. Pages are copy-on-write
//! inside transactions, so there are no sibling links: scans keep a
//! root-to-leaf stack. Deletion frees emptied leaves and collapses a root
//! with one child but does not merge underfull nodes.

use crate::page::{get_u16, get_u32, get_u64, put_u16, put_u32, put_u64, PAGE_BODY};
use crate::{PageBuf, PageId, PageKind, PageStore, PageStoreMut, StorageError, StorageResult};
use std::ops::Bound;
use std::sync::Arc;

mod inplace;

/// Longest key.
pub const MAX_KEY: usize = 1024;
/// Longest key + value.
pub const MAX_ENTRY: usize = 2048;

const LEAF_HDR: usize = 4;
const INT_HDR: usize = 16;
const LEAF_CELL_FIXED: usize = 2 + 2 + 2; // slot + klen + vlen
const INT_CELL_FIXED: usize = 2 + 2 + 4 + 8; // slot + klen + child + count

type Entry = (Vec<u8>, Vec<u8>);

/// One child of an internal node: (separator key — empty for the
/// leftmost —, child page, entries under it).
#[derive(Clone, Debug)]
struct Child {
    key: Vec<u8>,
    page: PageId,
    count: u64,
}

enum Node {
    Leaf(Vec<Entry>),
    Internal(Vec<Child>),
}

/// Statistics returned by [`check`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TreeStats {
    pub entries: u64,
    pub depth: u32,
    pub pages: u64,
}

fn corrupt(s: &impl PageStore, id: PageId, why: impl Into<String>) -> StorageError {
    StorageError::corrupt(s.name(), id, why)
}

// ------------------------------------------------------------ page access

/// A verified view of one node page for in-place reads.
struct View<'p> {
    id: PageId,
    body: &'p [u8],
    leaf: bool,
    n: usize,
}

impl<'p> View<'p> {
    fn new(s: &impl PageStore, id: PageId, page: &'p PageBuf) -> StorageResult<View<'p>> {
        let leaf = match page.kind() {
            Some(PageKind::BTreeLeaf) => true,
            Some(PageKind::BTreeInternal) => false,
            _ => return Err(corrupt(s, id, "expected a B+tree page")),
        };
        let body = page.body();
        let n = get_u16(body, 0) as usize;
        let hdr = if leaf { LEAF_HDR } else { INT_HDR };
        if hdr + 2 * n > PAGE_BODY {
            return Err(corrupt(s, id, format!("{n} slots do not fit")));
        }
        Ok(View { id, body, leaf, n })
    }

    fn slot(&self, s: &impl PageStore, i: usize) -> StorageResult<usize> {
        let hdr = if self.leaf { LEAF_HDR } else { INT_HDR };
        let off = get_u16(self.body, hdr + 2 * i) as usize;
        if off < hdr + 2 * self.n || off >= PAGE_BODY {
            return Err(corrupt(
                s,
                self.id,
                format!("slot {i} points outside the page"),
            ));
        }
        Ok(off)
    }

    fn bytes(&self, s: &impl PageStore, off: usize, len: usize) -> StorageResult<&'p [u8]> {
        self.body
            .get(off..off + len)
            .ok_or_else(|| corrupt(s, self.id, "cell runs past the end of the page"))
    }

    fn leaf_cell(&self, s: &impl PageStore, i: usize) -> StorageResult<(&'p [u8], &'p [u8])> {
        let off = self.slot(s, i)?;
        let h = self.bytes(s, off, 4)?;
        let (kl, vl) = (get_u16(h, 0) as usize, get_u16(h, 2) as usize);
        Ok((
            self.bytes(s, off + 4, kl)?,
            self.bytes(s, off + 4 + kl, vl)?,
        ))
    }

    fn int_cell(&self, s: &impl PageStore, i: usize) -> StorageResult<(&'p [u8], PageId, u64)> {
        let off = self.slot(s, i)?;
        let h = self.bytes(s, off, 14)?;
        let kl = get_u16(h, 0) as usize;
        Ok((
            self.bytes(s, off + 14, kl)?,
            PageId(get_u32(h, 2)),
            get_u64(h, 6),
        ))
    }

    fn key(&self, s: &impl PageStore, i: usize) -> StorageResult<&'p [u8]> {
        if self.leaf {
            Ok(self.leaf_cell(s, i)?.0)
        } else {
            Ok(self.int_cell(s, i)?.0)
        }
    }

    /// Number of children of an internal node.
    fn children(&self) -> usize {
        self.n + 1
    }

    fn child(&self, s: &impl PageStore, i: usize) -> StorageResult<(PageId, u64)> {
        if i == 0 {
            Ok((PageId(get_u32(self.body, 4)), get_u64(self.body, 8)))
        } else {
            let (_, c, n) = self.int_cell(s, i - 1)?;
            Ok((c, n))
        }
    }

    /// Leaf: first index with key ≥ `key` (and whether it is equal).
    fn lower_bound(&self, s: &impl PageStore, key: &[u8]) -> StorageResult<(usize, bool)> {
        let (mut lo, mut hi) = (0, self.n);
        while lo < hi {
            let mid = (lo + hi) / 2;
            if self.key(s, mid)? < key {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        let eq = lo < self.n && self.key(s, lo)? == key;
        Ok((lo, eq))
    }

    /// Internal: index of the child whose range holds `key`.
    fn child_for(&self, s: &impl PageStore, key: &[u8]) -> StorageResult<usize> {
        let (mut lo, mut hi) = (0, self.n);
        while lo < hi {
            let mid = (lo + hi) / 2;
            if self.key(s, mid)? <= key {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        Ok(lo)
    }

    /// Entries under children `0..c` of an internal node. When the node's
    /// own total is known (from its parent's cell), the shorter side is
    /// summed.
    fn count_before(&self, s: &impl PageStore, c: usize, total: Option<u64>) -> StorageResult<u64> {
        match total {
            Some(t) if c > self.children() / 2 => {
                let after = (c..self.children()).try_fold(0u64, |acc, i| {
                    Ok::<_, StorageError>(acc + self.child(s, i)?.1)
                })?;
                t.checked_sub(after).ok_or_else(|| {
                    corrupt(s, self.id, "child counts exceed the count in the parent")
                })
            }
            _ => (0..c).try_fold(0u64, |acc, i| Ok(acc + self.child(s, i)?.1)),
        }
    }

    fn total(&self, s: &impl PageStore) -> StorageResult<u64> {
        if self.leaf {
            return Ok(self.n as u64);
        }
        (0..self.children()).try_fold(0u64, |acc, i| Ok(acc + self.child(s, i)?.1))
    }
}

fn decode(s: &impl PageStore, id: PageId, page: &PageBuf) -> StorageResult<Node> {
    let v = View::new(s, id, page)?;
    if v.leaf {
        let mut out = Vec::with_capacity(v.n);
        for i in 0..v.n {
            let (k, val) = v.leaf_cell(s, i)?;
            if k.len() > MAX_KEY || k.len() + val.len() > MAX_ENTRY {
                return Err(corrupt(s, id, format!("entry {i} exceeds the size limits")));
            }
            out.push((k.to_vec(), val.to_vec()));
        }
        // Overlapping cells could decode to more than a page holds; such a
        // node could not be re-encoded even after a split.
        if leaf_size(&out) > PAGE_BODY {
            return Err(corrupt(s, id, "cells overlap"));
        }
        return Ok(Node::Leaf(out));
    }
    let mut out = Vec::with_capacity(v.children());
    let (p0, c0) = v.child(s, 0)?;
    out.push(Child {
        key: Vec::new(),
        page: p0,
        count: c0,
    });
    for i in 0..v.n {
        let (k, p, c) = v.int_cell(s, i)?;
        if k.len() > MAX_KEY {
            return Err(corrupt(
                s,
                id,
                format!("separator {i} exceeds the key limit"),
            ));
        }
        out.push(Child {
            key: k.to_vec(),
            page: p,
            count: c,
        });
    }
    if int_size(&out) > PAGE_BODY {
        return Err(corrupt(s, id, "cells overlap"));
    }
    Ok(Node::Internal(out))
}

/// What a dump shows of one node page ([`describe_node`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum NodeSummary {
    Leaf {
        entries: u32,
        /// Body bytes not used by slots and cells.
        free_bytes: u32,
    },
    Internal {
        /// Child pages, leftmost first, with the entries under each.
        children: Vec<(PageId, u64)>,
        free_bytes: u32,
    },
}

/// Decodes one node page with every check a read makes (slots inside the
/// page, cells within it and within the size limits, no overlap), for
/// `folio dump page`; a bad node is `Corrupt` naming the page.
pub fn describe_node(s: &impl PageStore, id: PageId, page: &PageBuf) -> StorageResult<NodeSummary> {
    Ok(match decode(s, id, page)? {
        Node::Leaf(entries) => NodeSummary::Leaf {
            entries: entries.len() as u32,
            free_bytes: (PAGE_BODY - leaf_size(&entries)) as u32,
        },
        Node::Internal(children) => NodeSummary::Internal {
            free_bytes: (PAGE_BODY - int_size(&children)) as u32,
            children: children.iter().map(|c| (c.page, c.count)).collect(),
        },
    })
}

fn leaf_size(entries: &[Entry]) -> usize {
    LEAF_HDR
        + entries
            .iter()
            .map(|(k, v)| LEAF_CELL_FIXED + k.len() + v.len())
            .sum::<usize>()
}

fn int_size(children: &[Child]) -> usize {
    INT_HDR
        + children[1..]
            .iter()
            .map(|c| INT_CELL_FIXED + c.key.len())
            .sum::<usize>()
}

fn encode_leaf(entries: &[Entry]) -> PageBuf {
    let mut p = PageBuf::new(PageKind::BTreeLeaf);
    let b = p.body_mut();
    let mut end = PAGE_BODY;
    put_u16(b, 0, entries.len() as u16);
    for (i, (k, v)) in entries.iter().enumerate() {
        end -= 4 + k.len() + v.len();
        put_u16(b, end, k.len() as u16);
        put_u16(b, end + 2, v.len() as u16);
        b[end + 4..end + 4 + k.len()].copy_from_slice(k);
        b[end + 4 + k.len()..end + 4 + k.len() + v.len()].copy_from_slice(v);
        put_u16(b, LEAF_HDR + 2 * i, end as u16);
    }
    put_u16(b, 2, end as u16);
    p
}

fn encode_internal(children: &[Child]) -> PageBuf {
    let mut p = PageBuf::new(PageKind::BTreeInternal);
    let b = p.body_mut();
    put_u16(b, 0, (children.len() - 1) as u16);
    put_u32(b, 4, children[0].page.0);
    put_u64(b, 8, children[0].count);
    let mut end = PAGE_BODY;
    for (i, c) in children[1..].iter().enumerate() {
        end -= 14 + c.key.len();
        put_u16(b, end, c.key.len() as u16);
        put_u32(b, end + 2, c.page.0);
        put_u64(b, end + 6, c.count);
        b[end + 14..end + 14 + c.key.len()].copy_from_slice(&c.key);
        put_u16(b, INT_HDR + 2 * i, end as u16);
    }
    put_u16(b, 2, end as u16);
    p
}

/// Index at which to split so the left part holds about half the bytes.
fn split_point(sizes: impl Iterator<Item = usize>, total: usize) -> usize {
    let mut acc = 0;
    for (i, sz) in sizes.enumerate() {
        acc += sz;
        if acc >= total / 2 {
            return i + 1;
        }
    }
    1
}

// ------------------------------------------------------------ public API

/// Creates an empty tree (one empty leaf) and returns its root.
pub fn create(s: &mut impl PageStoreMut) -> StorageResult<PageId> {
    let id = s.allocate()?;
    s.write(id, encode_leaf(&[]));
    Ok(id)
}

fn check_sizes(key: &[u8], val: &[u8]) -> StorageResult<()> {
    if key.len() > MAX_KEY {
        return Err(StorageError::TooLarge {
            size: key.len(),
            limit: MAX_KEY,
        });
    }
    if key.len() + val.len() > MAX_ENTRY {
        return Err(StorageError::TooLarge {
            size: key.len() + val.len(),
            limit: MAX_ENTRY,
        });
    }
    Ok(())
}

/// Looks up `key`.
pub fn get(s: &impl PageStore, root: PageId, key: &[u8]) -> StorageResult<Option<Vec<u8>>> {
    let mut id = root;
    for _ in 0..64 {
        let page = s.read(id)?;
        let v = View::new(s, id, &page)?;
        if v.leaf {
            let (i, eq) = v.lower_bound(s, key)?;
            return Ok(if eq {
                Some(v.leaf_cell(s, i)?.1.to_vec())
            } else {
                None
            });
        }
        id = v.child(s, v.child_for(s, key)?)?.0;
    }
    Err(corrupt(s, root, "tree deeper than 64 levels"))
}

/// Number of entries.
pub fn len(s: &impl PageStore, root: PageId) -> StorageResult<u64> {
    let page = s.read(root)?;
    View::new(s, root, &page)?.total(s)
}

/// The entry at position `i` (0-based, key order).
pub fn nth(s: &impl PageStore, root: PageId, mut i: u64) -> StorageResult<Option<Entry>> {
    let mut id = root;
    for _ in 0..64 {
        let page = s.read(id)?;
        let v = View::new(s, id, &page)?;
        if v.leaf {
            if i >= v.n as u64 {
                return Ok(None);
            }
            let (k, val) = v.leaf_cell(s, i as usize)?;
            return Ok(Some((k.to_vec(), val.to_vec())));
        }
        let mut next = None;
        for c in 0..v.children() {
            let (child, count) = v.child(s, c)?;
            if i < count {
                next = Some(child);
                break;
            }
            i -= count;
        }
        match next {
            Some(c) => id = c,
            None => return Ok(None),
        }
    }
    Err(corrupt(s, root, "tree deeper than 64 levels"))
}

/// Number of keys strictly less than `key`.
pub fn rank(s: &impl PageStore, root: PageId, key: &[u8]) -> StorageResult<u64> {
    rank_in(s, root, key, None, 0)
}

/// Number of keys strictly less than `lo` and strictly less than `hi`,
/// in one descent for as long as both lie under the same child (a range
/// count costs about one `rank`, not two).
pub fn rank_pair(
    s: &impl PageStore,
    root: PageId,
    lo: &[u8],
    hi: &[u8],
) -> StorageResult<(u64, u64)> {
    let mut id = root;
    let mut total = None;
    let mut before = 0;
    for depth in 0..64 {
        let page = s.read(id)?;
        let v = View::new(s, id, &page)?;
        if v.leaf {
            return Ok((
                before + v.lower_bound(s, lo)?.0 as u64,
                before + v.lower_bound(s, hi)?.0 as u64,
            ));
        }
        let (cl, ch) = (v.child_for(s, lo)?, v.child_for(s, hi)?);
        if cl != ch {
            let (lo_child, lo_count) = v.child(s, cl)?;
            let (hi_child, hi_count) = v.child(s, ch)?;
            let a = before + v.count_before(s, cl, total)?;
            let b = before + v.count_before(s, ch, total)?;
            return Ok((
                rank_in(s, lo_child, lo, Some(lo_count), depth + 1)? + a,
                rank_in(s, hi_child, hi, Some(hi_count), depth + 1)? + b,
            ));
        }
        before += v.count_before(s, cl, total)?;
        let (child, count) = v.child(s, cl)?;
        total = Some(count);
        id = child;
    }
    Err(corrupt(s, root, "tree deeper than 64 levels"))
}

/// `rank` within the subtree at `id`, which holds `total` entries if known.
fn rank_in(
    s: &impl PageStore,
    mut id: PageId,
    key: &[u8],
    mut total: Option<u64>,
    depth: usize,
) -> StorageResult<u64> {
    let mut before = 0;
    for _ in depth..64 {
        let page = s.read(id)?;
        let v = View::new(s, id, &page)?;
        if v.leaf {
            return Ok(before + v.lower_bound(s, key)?.0 as u64);
        }
        let c = v.child_for(s, key)?;
        before += v.count_before(s, c, total)?;
        let (child, count) = v.child(s, c)?;
        total = Some(count);
        id = child;
    }
    Err(corrupt(s, id, "tree deeper than 64 levels"))
}

enum Grew {
    No,
    /// The node split; the new right sibling holds keys ≥ `key`.
    Split(Child),
}

/// Inserts or replaces; returns the previous value.
pub fn insert(
    s: &mut impl PageStoreMut,
    root: &mut PageId,
    key: &[u8],
    val: &[u8],
) -> StorageResult<Option<Vec<u8>>> {
    check_sizes(key, val)?;
    let (old, grew) = insert_rec(s, *root, key, val, 0)?;
    if let Grew::Split(right) = grew {
        let left_count = len(s, *root)?;
        let new_root = s.allocate()?;
        let children = [
            Child {
                key: Vec::new(),
                page: *root,
                count: left_count,
            },
            right,
        ];
        s.write(new_root, encode_internal(&children));
        *root = new_root;
    }
    Ok(old)
}

fn insert_rec(
    s: &mut impl PageStoreMut,
    id: PageId,
    key: &[u8],
    val: &[u8],
    depth: u32,
) -> StorageResult<(Option<Vec<u8>>, Grew)> {
    if depth > 64 {
        return Err(corrupt(s, id, "tree deeper than 64 levels"));
    }
    let page = s.read(id)?;
    let v = View::new(s, id, &page)?;
    if v.leaf {
        if let Some((edited, old)) = inplace::leaf_put(s, &v, &page, key, val)? {
            s.write(id, edited);
            return Ok((old, Grew::No));
        }
        return insert_splitting_leaf(s, id, &page, key, val);
    }
    let c = v.child_for(s, key)?;
    let (child, count) = v.child(s, c)?;
    let (old, grew) = insert_rec(s, child, key, val, depth + 1)?;
    let added = u64::from(old.is_none());
    match grew {
        Grew::No if added == 0 => {}
        Grew::No => s.write(id, inplace::add_to_count(s, &v, &page, c, 1)?),
        Grew::Split(right) => {
            let left_count = count
                .checked_add(added)
                .and_then(|n| n.checked_sub(right.count));
            let left_count = left_count.ok_or_else(|| {
                corrupt(
                    s,
                    id,
                    format!("child {} counts fewer entries than its split", child.0),
                )
            })?;
            let sibling = (right.key.as_slice(), right.page, right.count);
            match inplace::insert_child(s, &v, &page, c, left_count, sibling)? {
                Some(edited) => s.write(id, edited),
                None => {
                    return Ok((
                        old,
                        insert_splitting_internal(s, id, &page, c, left_count, right)?,
                    ))
                }
            }
        }
    }
    Ok((old, Grew::No))
}

/// The decode path of a leaf insert: the entry did not fit the free bytes
/// in place, so the leaf is rebuilt and split.
fn insert_splitting_leaf(
    s: &mut impl PageStoreMut,
    id: PageId,
    page: &PageBuf,
    key: &[u8],
    val: &[u8],
) -> StorageResult<(Option<Vec<u8>>, Grew)> {
    let Node::Leaf(mut entries) = decode(s, id, page)? else {
        return Err(corrupt(s, id, "expected a leaf"));
    };
    let pos = entries.binary_search_by(|(k, _)| k.as_slice().cmp(key));
    let appended = pos == Err(entries.len());
    let old = match pos {
        Ok(i) => Some(std::mem::replace(&mut entries[i].1, val.to_vec())),
        Err(i) => {
            entries.insert(i, (key.to_vec(), val.to_vec()));
            None
        }
    };
    Ok((old, write_leaf(s, id, entries, appended)?))
}

/// The decode path after child `c` split and its separator did not fit in
/// place: the node is rebuilt with the new child and split if it must.
fn insert_splitting_internal(
    s: &mut impl PageStoreMut,
    id: PageId,
    page: &PageBuf,
    c: usize,
    left_count: u64,
    right: Child,
) -> StorageResult<Grew> {
    let Node::Internal(mut children) = decode(s, id, page)? else {
        return Err(corrupt(s, id, "expected an internal node"));
    };
    children[c].count = left_count;
    children.insert(c + 1, right);
    write_internal(s, id, children)
}

/// Writes a leaf, splitting it if it overflows. A leaf that overflowed
/// because a key was appended after all of its keys (ascending inserts:
/// note ids, change sequences) keeps everything it held and the new entry
/// starts the right sibling, so ascending loads fill leaves instead of
/// leaving each one half empty.
fn write_leaf(
    s: &mut impl PageStoreMut,
    id: PageId,
    mut entries: Vec<Entry>,
    appended: bool,
) -> StorageResult<Grew> {
    let total = leaf_size(&entries);
    if total <= PAGE_BODY {
        s.write(id, encode_leaf(&entries));
        return Ok(Grew::No);
    }
    let at = if appended && entries.len() >= 2 {
        entries.len() - 1
    } else {
        split_point(
            entries
                .iter()
                .map(|(k, v)| LEAF_CELL_FIXED + k.len() + v.len()),
            total - LEAF_HDR,
        )
    }
    .clamp(1, entries.len() - 1);
    let right = entries.split_off(at);
    let right_id = s.allocate()?;
    let sep = right[0].0.clone();
    let count = right.len() as u64;
    s.write(id, encode_leaf(&entries));
    s.write(right_id, encode_leaf(&right));
    Ok(Grew::Split(Child {
        key: sep,
        page: right_id,
        count,
    }))
}

fn write_internal(
    s: &mut impl PageStoreMut,
    id: PageId,
    mut children: Vec<Child>,
) -> StorageResult<Grew> {
    let total = int_size(&children);
    if total <= PAGE_BODY {
        s.write(id, encode_internal(&children));
        return Ok(Grew::No);
    }
    let at = split_point(
        children[1..].iter().map(|c| INT_CELL_FIXED + c.key.len()),
        total - INT_HDR,
    )
    .clamp(1, children.len() - 2)
        + 1;
    // children[at] becomes the leftmost child of the right node; its key is
    // the separator pushed up.
    let mut right = children.split_off(at);
    let sep = std::mem::take(&mut right[0].key);
    let count = right.iter().map(|c| c.count).sum();
    let right_id = s.allocate()?;
    s.write(id, encode_internal(&children));
    s.write(right_id, encode_internal(&right));
    Ok(Grew::Split(Child {
        key: sep,
        page: right_id,
        count,
    }))
}

/// Removes `key`; returns its value if it was present.
pub fn remove(
    s: &mut impl PageStoreMut,
    root: &mut PageId,
    key: &[u8],
) -> StorageResult<Option<Vec<u8>>> {
    let (old, _) = remove_rec(s, *root, key, 0, true)?;
    if old.is_some() {
        collapse_root(s, root)?;
    }
    Ok(old)
}

/// Replaces a root internal node that has a single child by that child.
fn collapse_root(s: &mut impl PageStoreMut, root: &mut PageId) -> StorageResult<()> {
    loop {
        let page = s.read(*root)?;
        let v = View::new(s, *root, &page)?;
        if v.leaf || v.n > 0 {
            return Ok(());
        }
        let only = v.child(s, 0)?.0;
        s.free(*root)?;
        *root = only;
    }
}

/// Returns (old value, node is now empty). The root is never reported
/// empty-and-freed: an empty root stays as an empty leaf.
fn remove_rec(
    s: &mut impl PageStoreMut,
    id: PageId,
    key: &[u8],
    depth: u32,
    is_root: bool,
) -> StorageResult<(Option<Vec<u8>>, bool)> {
    if depth > 64 {
        return Err(corrupt(s, id, "tree deeper than 64 levels"));
    }
    let page = s.read(id)?;
    let v = View::new(s, id, &page)?;
    if v.leaf {
        let (i, eq) = v.lower_bound(s, key)?;
        if !eq {
            return Ok((None, false));
        }
        if let Some((edited, old)) = inplace::leaf_remove(s, &v, &page, i)? {
            s.write(id, edited);
            return Ok((Some(old), v.n == 1));
        }
        return remove_by_decode(s, id, &page, key);
    }
    let c = v.child_for(s, key)?;
    let child = v.child(s, c)?.0;
    let (old, child_empty) = remove_rec(s, child, key, depth + 1, false)?;
    if old.is_none() {
        return Ok((None, false));
    }
    if !child_empty {
        s.write(id, inplace::add_to_count(s, &v, &page, c, -1)?);
        return Ok((old, false));
    }
    let Node::Internal(mut children) = decode(s, id, &page)? else {
        return Err(corrupt(s, id, "expected an internal node"));
    };
    s.free(children[c].page)?;
    children.remove(c);
    if children.is_empty() {
        if is_root {
            s.write(id, encode_leaf(&[]));
        }
        return Ok((old, true));
    }
    children[0].key.clear();
    s.write(id, encode_internal(&children));
    Ok((old, false))
}

/// The decode path of a leaf removal, for a page without the layout an
/// in-place edit needs.
fn remove_by_decode(
    s: &mut impl PageStoreMut,
    id: PageId,
    page: &PageBuf,
    key: &[u8],
) -> StorageResult<(Option<Vec<u8>>, bool)> {
    let Node::Leaf(mut entries) = decode(s, id, page)? else {
        return Err(corrupt(s, id, "expected a leaf"));
    };
    match entries.binary_search_by(|(k, _)| k.as_slice().cmp(key)) {
        Ok(i) => {
            let (_, old) = entries.remove(i);
            s.write(id, encode_leaf(&entries));
            Ok((Some(old), entries.is_empty()))
        }
        Err(_) => Ok((None, false)),
    }
}

/// The child pages of a node, leftmost first; empty for a leaf. For the
/// page relocation of compact (`relocate.rs`).
pub(crate) fn child_pages(
    s: &impl PageStore,
    id: PageId,
    page: &PageBuf,
) -> StorageResult<Vec<PageId>> {
    Ok(match decode(s, id, page)? {
        Node::Leaf(_) => Vec::new(),
        Node::Internal(children) => children.iter().map(|c| c.page).collect(),
    })
}

/// The node `page` with its child pointers replaced by `pages` (same
/// number, same order; keys and counts kept).
pub(crate) fn with_child_pages(
    s: &impl PageStore,
    id: PageId,
    page: &PageBuf,
    pages: &[PageId],
) -> StorageResult<PageBuf> {
    match decode(s, id, page)? {
        Node::Internal(mut children) if children.len() == pages.len() => {
            for (c, p) in children.iter_mut().zip(pages) {
                c.page = *p;
            }
            Ok(encode_internal(&children))
        }
        _ => Err(corrupt(s, id, "child pointers changed under relocation")),
    }
}

/// Frees every page of the tree.
pub fn free_all(s: &mut impl PageStoreMut, root: PageId) -> StorageResult<()> {
    let page = s.read(root)?;
    if let Node::Internal(children) = decode(s, root, &page)? {
        for c in children {
            free_all(s, c.page)?;
        }
    }
    s.free(root)
}

/// Full invariant check: page kinds, key order, keys within their parent's
/// separators, uniform depth, stored counts equal to actual counts, no page
/// reached twice.
pub fn check(s: &impl PageStore, root: PageId) -> StorageResult<TreeStats> {
    let mut stats = TreeStats::default();
    let mut seen = std::collections::HashSet::new();
    let mut leaf_depth = None;
    let n = check_rec(
        s,
        root,
        None,
        None,
        1,
        &mut leaf_depth,
        &mut seen,
        &mut stats,
    )?;
    stats.entries = n;
    stats.depth = leaf_depth.unwrap_or(1);
    Ok(stats)
}

#[allow(clippy::too_many_arguments)]
fn check_rec(
    s: &impl PageStore,
    id: PageId,
    lo: Option<&[u8]>,
    hi: Option<&[u8]>,
    depth: u32,
    leaf_depth: &mut Option<u32>,
    seen: &mut std::collections::HashSet<PageId>,
    stats: &mut TreeStats,
) -> StorageResult<u64> {
    if !seen.insert(id) || depth > 64 {
        return Err(corrupt(s, id, "page reached twice (cycle or shared child)"));
    }
    stats.pages += 1;
    let page = s.read(id)?;
    let node = decode(s, id, &page)?;
    let in_bounds = |k: &[u8]| lo.is_none_or(|l| k >= l) && hi.is_none_or(|h| k < h);
    match node {
        Node::Leaf(entries) => {
            if *leaf_depth.get_or_insert(depth) != depth {
                return Err(corrupt(s, id, "leaves at different depths"));
            }
            for w in entries.windows(2) {
                if w[0].0 >= w[1].0 {
                    return Err(corrupt(s, id, "keys out of order"));
                }
            }
            if entries.iter().any(|(k, _)| !in_bounds(k)) {
                return Err(corrupt(s, id, "key outside its parent's range"));
            }
            Ok(entries.len() as u64)
        }
        Node::Internal(children) => {
            for w in children[1..].windows(2) {
                if w[0].key >= w[1].key {
                    return Err(corrupt(s, id, "separators out of order"));
                }
            }
            let mut total = 0;
            for (i, c) in children.iter().enumerate() {
                let clo = if i == 0 { lo } else { Some(c.key.as_slice()) };
                if i > 0 && !in_bounds(&c.key) {
                    return Err(corrupt(s, id, "separator outside its parent's range"));
                }
                let chi = children.get(i + 1).map(|n| n.key.as_slice()).or(hi);
                let actual = check_rec(s, c.page, clo, chi, depth + 1, leaf_depth, seen, stats)?;
                if actual != c.count {
                    return Err(corrupt(
                        s,
                        id,
                        format!(
                            "child {} holds {actual} entries, parent says {}",
                            c.page.0, c.count
                        ),
                    ));
                }
                total += actual;
            }
            Ok(total)
        }
    }
}

// ------------------------------------------------------------ salvage

/// What [`salvage`] found at one page of a damaged tree.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Salvaged {
    /// A readable leaf and its entries.
    Leaf {
        page: PageId,
        entries: Vec<(Vec<u8>, Vec<u8>)>,
    },
    /// A readable internal node (its children are visited too).
    Internal { page: PageId },
    /// A page that could not be read or decoded: everything under it, the
    /// keys in `lo..hi` (per the parent's separators; `None` unbounded),
    /// is unreachable from the root.
    Lost {
        page: PageId,
        reason: String,
        lo: Option<Vec<u8>>,
        hi: Option<Vec<u8>>,
    },
}

/// Walks a tree that may be damaged (fixup): every page reachable from
/// `root` is reported to `visit`, a page that cannot be read or decoded as
/// `Lost` with the key range it covered, and the walk goes on with its
/// siblings. A page reached twice is lost the second time (no cycles).
pub fn salvage(s: &impl PageStore, root: PageId, visit: &mut dyn FnMut(Salvaged)) {
    let mut seen = std::collections::HashSet::new();
    salvage_rec(s, root, None, None, 1, &mut seen, visit);
}

fn salvage_rec(
    s: &impl PageStore,
    id: PageId,
    lo: Option<&[u8]>,
    hi: Option<&[u8]>,
    depth: u32,
    seen: &mut std::collections::HashSet<PageId>,
    visit: &mut dyn FnMut(Salvaged),
) {
    let lost = |reason: String| Salvaged::Lost {
        page: id,
        reason,
        lo: lo.map(<[u8]>::to_vec),
        hi: hi.map(<[u8]>::to_vec),
    };
    if depth > 64 || !seen.insert(id) {
        visit(lost("page reached twice (cycle or shared child)".into()));
        return;
    }
    let node = s.read(id).and_then(|page| decode(s, id, &page));
    match node {
        Err(e) => visit(lost(e.to_string())),
        Ok(Node::Leaf(entries)) => visit(Salvaged::Leaf { page: id, entries }),
        Ok(Node::Internal(children)) => {
            visit(Salvaged::Internal { page: id });
            for (i, c) in children.iter().enumerate() {
                let clo = if i == 0 { lo } else { Some(c.key.as_slice()) };
                let chi = children.get(i + 1).map(|n| n.key.as_slice()).or(hi);
                salvage_rec(s, c.page, clo, chi, depth + 1, seen, visit);
            }
        }
    }
}

/// The entries of one leaf page read on its own (fixup's scan of pages no
/// tree reaches any more); `None` if it is not a readable leaf.
pub fn leaf_entries(s: &impl PageStore, id: PageId, page: &PageBuf) -> Option<Vec<Entry>> {
    match decode(s, id, page) {
        Ok(Node::Leaf(entries)) => Some(entries),
        _ => None,
    }
}

// ------------------------------------------------------------ range scans

/// An iterator over entries between two bounds, forward or backward, that
/// keeps a root-to-leaf stack of (page, position).
pub struct Range<'a, S: PageStore> {
    s: &'a S,
    stack: Vec<(PageId, Arc<PageBuf>, usize)>,
    lo: Bound<Vec<u8>>,
    hi: Bound<Vec<u8>>,
    forward: bool,
    started: bool,
    root: PageId,
    done: bool,
}

fn own(b: Bound<&[u8]>) -> Bound<Vec<u8>> {
    match b {
        Bound::Included(k) => Bound::Included(k.to_vec()),
        Bound::Excluded(k) => Bound::Excluded(k.to_vec()),
        Bound::Unbounded => Bound::Unbounded,
    }
}

/// Entries with `lo ≤ key ≤ hi` (per the bounds), in ascending key order.
pub fn range<'a, S: PageStore>(
    s: &'a S,
    root: PageId,
    lo: Bound<&[u8]>,
    hi: Bound<&[u8]>,
) -> Range<'a, S> {
    Range {
        s,
        stack: Vec::new(),
        lo: own(lo),
        hi: own(hi),
        forward: true,
        started: false,
        root,
        done: false,
    }
}

/// The same entries in descending key order.
pub fn range_rev<'a, S: PageStore>(
    s: &'a S,
    root: PageId,
    lo: Bound<&[u8]>,
    hi: Bound<&[u8]>,
) -> Range<'a, S> {
    Range {
        s,
        stack: Vec::new(),
        lo: own(lo),
        hi: own(hi),
        forward: false,
        started: false,
        root,
        done: false,
    }
}

impl<S: PageStore> Range<'_, S> {
    /// Positions the stack at the first entry in scan order (forward: the
    /// first key ≥ lo; backward: one past the last key ≤ hi).
    fn seek(&mut self) -> StorageResult<()> {
        let s = self.s;
        let mut id = self.root;
        loop {
            if self.stack.len() > 64 {
                return Err(corrupt(s, id, "tree deeper than 64 levels"));
            }
            let page = s.read(id)?;
            let v = View::new(s, id, &page)?;
            let (bound, fwd) = (if self.forward { &self.lo } else { &self.hi }, self.forward);
            if v.leaf {
                let pos = match (bound, fwd) {
                    (Bound::Unbounded, true) => 0,
                    (Bound::Unbounded, false) => v.n,
                    (Bound::Included(k), true) => v.lower_bound(s, k)?.0,
                    (Bound::Excluded(k), true) => {
                        let (i, eq) = v.lower_bound(s, k)?;
                        i + usize::from(eq)
                    }
                    (Bound::Included(k), false) => {
                        let (i, eq) = v.lower_bound(s, k)?;
                        i + usize::from(eq)
                    }
                    (Bound::Excluded(k), false) => v.lower_bound(s, k)?.0,
                };
                self.stack.push((id, page, pos));
                return Ok(());
            }
            let c = match bound {
                Bound::Unbounded if fwd => 0,
                Bound::Unbounded => v.children() - 1,
                Bound::Included(k) | Bound::Excluded(k) => v.child_for(s, k)?,
            };
            let child = v.child(s, c)?.0;
            self.stack.push((id, page, c));
            id = child;
        }
    }

    /// Moves to the neighbouring leaf in scan direction; false at the end.
    fn advance_leaf(&mut self) -> StorageResult<bool> {
        let s = self.s;
        self.stack.pop();
        loop {
            let Some((id, page, c)) = self.stack.pop() else {
                return Ok(false);
            };
            let v = View::new(s, id, &page)?;
            let next = if self.forward {
                (c + 1 < v.children()).then_some(c + 1)
            } else {
                c.checked_sub(1)
            };
            let Some(next) = next else { continue };
            let mut child = v.child(s, next)?.0;
            self.stack.push((id, page, next));
            loop {
                if self.stack.len() > 64 {
                    return Err(corrupt(s, child, "tree deeper than 64 levels"));
                }
                let page = s.read(child)?;
                let v = View::new(s, child, &page)?;
                let c = if self.forward {
                    0
                } else if v.leaf {
                    v.n
                } else {
                    v.children() - 1
                };
                let leaf = v.leaf;
                let grandchild = if leaf { None } else { Some(v.child(s, c)?.0) };
                self.stack.push((child, page, c));
                match grandchild {
                    None => return Ok(true),
                    Some(g) => child = g,
                }
            }
        }
    }

    fn next_entry(&mut self) -> StorageResult<Option<Entry>> {
        self.next_with(|k, v| (k.to_vec(), v.to_vec()))
    }

    /// Hands the next entry to `f` straight from the page, without copying
    /// it (for scans that decode every value anyway).
    pub fn next_with<R>(&mut self, f: impl FnOnce(&[u8], &[u8]) -> R) -> StorageResult<Option<R>> {
        if !self.started {
            self.started = true;
            self.seek()?;
        }
        loop {
            let s = self.s;
            let Some((id, page, pos)) = self.stack.last().cloned() else {
                return Ok(None);
            };
            let v = View::new(s, id, &page)?;
            let has = if self.forward { pos < v.n } else { pos > 0 };
            if !has {
                if !self.advance_leaf()? {
                    return Ok(None);
                }
                continue;
            }
            let i = if self.forward { pos } else { pos - 1 };
            let (k, val) = v.leaf_cell(s, i)?;
            let within = if self.forward {
                match &self.hi {
                    Bound::Unbounded => true,
                    Bound::Included(h) => k <= h.as_slice(),
                    Bound::Excluded(h) => k < h.as_slice(),
                }
            } else {
                match &self.lo {
                    Bound::Unbounded => true,
                    Bound::Included(l) => k >= l.as_slice(),
                    Bound::Excluded(l) => k > l.as_slice(),
                }
            };
            if !within {
                return Ok(None);
            }
            let entry = f(k, val);
            if let Some(top) = self.stack.last_mut() {
                top.2 = if self.forward { pos + 1 } else { pos - 1 };
            }
            return Ok(Some(entry));
        }
    }
}

impl<S: PageStore> Iterator for Range<'_, S> {
    type Item = StorageResult<Entry>;
    fn next(&mut self) -> Option<Self::Item> {
        if self.done {
            return None;
        }
        match self.next_entry() {
            Ok(Some(e)) => Some(Ok(e)),
            Ok(None) => {
                self.done = true;
                None
            }
            Err(e) => {
                self.done = true;
                Some(Err(e))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testutil::MemStore;
    use crate::PageWrite;
    use proptest::prelude::*;
    use std::collections::BTreeMap;

    #[derive(Debug, Clone)]
    enum Op {
        Insert(Vec<u8>, Vec<u8>),
        Remove(Vec<u8>),
    }

    fn key() -> impl Strategy<Value = Vec<u8>> {
        prop_oneof![
            proptest::collection::vec(0u8..8, 0..4),
            proptest::collection::vec(any::<u8>(), 0..64),
            proptest::collection::vec(any::<u8>(), 900..1024),
        ]
    }

    fn val() -> impl Strategy<Value = Vec<u8>> {
        prop_oneof![4 => proptest::collection::vec(any::<u8>(), 0..40), 1 => proptest::collection::vec(any::<u8>(), 900..1000)]
    }

    fn op() -> impl Strategy<Value = Op> {
        prop_oneof![3 => (key(), val()).prop_map(|(k, v)| Op::Insert(k, v)), 1 => key().prop_map(Op::Remove)]
    }

    fn bound(b: &Option<(Vec<u8>, bool)>) -> Bound<&[u8]> {
        match b {
            None => Bound::Unbounded,
            Some((k, true)) => Bound::Included(k),
            Some((k, false)) => Bound::Excluded(k),
        }
    }

    fn in_range(k: &[u8], lo: Bound<&[u8]>, hi: Bound<&[u8]>) -> bool {
        let above = match lo {
            Bound::Unbounded => true,
            Bound::Included(l) => k >= l,
            Bound::Excluded(l) => k > l,
        };
        let below = match hi {
            Bound::Unbounded => true,
            Bound::Included(h) => k <= h,
            Bound::Excluded(h) => k < h,
        };
        above && below
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]
        #[test]
        fn matches_btreemap_model(ops in proptest::collection::vec(op(), 1..400),
                                  lo in proptest::option::of((key(), any::<bool>())),
                                  hi in proptest::option::of((key(), any::<bool>()))) {
            let mut s = MemStore::new();
            let mut root = create(&mut s).unwrap();
            let mut model = BTreeMap::new();
            for (i, op) in ops.iter().enumerate() {
                match op {
                    Op::Insert(k, v) => prop_assert_eq!(insert(&mut s, &mut root, k, v).unwrap(), model.insert(k.clone(), v.clone())),
                    Op::Remove(k) => prop_assert_eq!(remove(&mut s, &mut root, k).unwrap(), model.remove(k)),
                }
                if i % 50 == 0 {
                    prop_assert_eq!(check(&s, root).unwrap().entries, model.len() as u64);
                }
            }
            prop_assert_eq!(check(&s, root).unwrap().entries, model.len() as u64);
            prop_assert_eq!(len(&s, root).unwrap(), model.len() as u64);
            for (i, (k, v)) in model.iter().enumerate() {
                prop_assert_eq!(get(&s, root, k).unwrap(), Some(v.clone()));
                prop_assert_eq!(nth(&s, root, i as u64).unwrap(), Some((k.clone(), v.clone())));
                prop_assert_eq!(rank(&s, root, k).unwrap(), i as u64);
            }
            prop_assert_eq!(nth(&s, root, model.len() as u64).unwrap(), None);
            if let (Some((a, _)), Some((b, _))) = (&lo, &hi) {
                let (a, b) = if a <= b { (a, b) } else { (b, a) };
                let want = (
                    model.range::<Vec<u8>, _>(..a.clone()).count() as u64,
                    model.range::<Vec<u8>, _>(..b.clone()).count() as u64,
                );
                prop_assert_eq!(rank_pair(&s, root, a, b).unwrap(), want);
                prop_assert_eq!((rank(&s, root, a).unwrap(), rank(&s, root, b).unwrap()), want);
            }
            let (lo_b, hi_b) = (bound(&lo), bound(&hi));
            {
                let want: Vec<_> = model.iter().filter(|(k, _)| in_range(k, lo_b, hi_b)).map(|(k, v)| (k.clone(), v.clone())).collect();
                let got: Vec<_> = range(&s, root, lo_b, hi_b).collect::<StorageResult<_>>().unwrap();
                prop_assert_eq!(&got, &want);
                let mut rev: Vec<_> = range_rev(&s, root, lo_b, hi_b).collect::<StorageResult<_>>().unwrap();
                rev.reverse();
                prop_assert_eq!(&rev, &want);
            }
        }

        #[test]
        fn corrupt_nodes_are_errors_not_panics(flips in proptest::collection::vec((24usize..crate::PAGE_SIZE, any::<u8>()), 1..8)) {
            let mut s = MemStore::new();
            let mut root = create(&mut s).unwrap();
            for i in 0u32..400 {
                insert(&mut s, &mut root, &i.to_be_bytes(), &[7u8; 30]).unwrap();
            }
            let ids: Vec<PageId> = s.pages.keys().copied().collect();
            for (n, (off, b)) in flips.into_iter().enumerate() {
                let id = ids[n % ids.len()];
                let mut p = (*s.pages[&id]).clone();
                p.bytes_mut()[off] ^= b | 1;
                s.write(id, p);
            }
            let _ = check(&s, root);
            for i in 0u32..400 {
                let _ = get(&s, root, &i.to_be_bytes());
            }
            let _ = range(&s, root, Bound::Unbounded, Bound::Unbounded).take(1000).count();
            let _ = nth(&s, root, 200);
            let _ = insert(&mut s, &mut root, b"x", b"y");
        }
    }

    #[test]
    fn sequential_fill_and_drain_frees_every_page() {
        let mut s = MemStore::new();
        let mut root = create(&mut s).unwrap();
        for i in 0u64..100_000 {
            insert(&mut s, &mut root, &i.to_be_bytes(), b"").unwrap();
        }
        let st = check(&s, root).unwrap();
        assert_eq!(st.entries, 100_000);
        assert!(st.depth >= 2);
        for i in 0u64..100_000 {
            assert!(remove(&mut s, &mut root, &i.to_be_bytes())
                .unwrap()
                .is_some());
        }
        assert_eq!(len(&s, root).unwrap(), 0);
        assert_eq!(s.live_pages(), 1, "only the empty root leaf remains");
        assert_eq!(
            check(&s, root).unwrap(),
            TreeStats {
                entries: 0,
                depth: 1,
                pages: 1
            }
        );
    }

    #[test]
    fn oversized_entries_are_refused() {
        let mut s = MemStore::new();
        let mut root = create(&mut s).unwrap();
        assert!(matches!(
            insert(&mut s, &mut root, &[1; 1025], b""),
            Err(StorageError::TooLarge { .. })
        ));
        assert!(matches!(
            insert(&mut s, &mut root, b"k", &[1; 2048]),
            Err(StorageError::TooLarge { .. })
        ));
        insert(&mut s, &mut root, &[1; 1024], &[2; 1024]).unwrap();
    }
}
