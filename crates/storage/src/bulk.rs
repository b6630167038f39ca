//! Bottom-up construction of a B+tree from entries already in key order.
//!
//! Rebuilding a view index writes a million entries into an empty tree.
//! Inserting them one at a time costs a root-to-leaf descent and a node
//! decode and re-encode per entry, and leaves every node about half full
//! after its split. Entries that arrive sorted (from
//! [`crate::extsort::ExternalSorter`]) can instead be packed into leaves left
//! to right, each page encoded and written exactly once, and each internal
//! level built the same way from the first key of every node below it. The
//! work is O(n), and nodes are filled to a chosen fraction (`fill`) of a
//! page, so that later incremental [`btree::insert`]s find room before they
//! have to split.
//!
//! The loader keeps, for every level, the node being filled (*open*) and
//! the last full node (*held*). A held node is written only when the open
//! one fills in turn, so when the input ends the last two nodes of each
//! level can be rebalanced: the right edge of the tree has no nearly empty
//! leaf and no internal node with a single child.
//!
//! ```text
//!  level 2                              open
//!  level 1          written ... held    open      ← (first key, page, count) of each node below
//!  level 0   written ... written  held  open      ← entries arrive here
//! ```
//!
//! Memory is two nodes per level, a few pages in all, whatever the input
//! size. The pages are in exactly the format of [`crate::btree`] (slotted
//! leaves and counted internal nodes; that module keeps its encoder
//! private, so the layout is restated here), and separators are the first
//! key of the child, as `btree`'s own splits choose them.
//!
//! Errors: an entry out of order or over the size limits is refused before
//! anything changes, so the loader stays usable. If the store fails, the
//! loader is still consistent: every page written so far is reachable from
//! a held or open node. [`BulkLoader::abandon`] (and [`bulk_load`] on any
//! error) frees those pages again. A loader dropped without `finish` or
//! `abandon` leaves its pages allocated and unreachable; inside a
//! transaction they go away with it if it is rolled back.

use crate::btree::{self, MAX_ENTRY, MAX_KEY};
use crate::page::{put_u16, put_u32, put_u64, PAGE_BODY};
use crate::{PageBuf, PageId, PageKind, PageStoreMut, StorageError, StorageResult};

/// Lowest accepted fill factor. Below half a page a bulk-loaded tree would
/// be larger than one built by inserts; requiring it also guarantees that
/// the last two nodes of a level can always be rebalanced.
pub const MIN_FILL: f32 = 0.5;

// The node layout of btree.rs (see its module header).
const LEAF_HDR: usize = 4;
const INT_HDR: usize = 16;
/// Slot + klen + vlen.
const LEAF_CELL_FIXED: usize = 2 + 2 + 2;
/// Slot + klen + child + count.
const INT_CELL_FIXED: usize = 2 + 2 + 4 + 8;

/// One entry of a node being built. Leaves use the key and value; internal
/// nodes the key (the smallest key under the child), child page and count.
struct Item {
    start: usize,
    klen: usize,
    vlen: usize,
    page: PageId,
    count: u64,
}

/// A node under construction; keys and values live in one byte buffer.
struct Node {
    leaf: bool,
    data: Vec<u8>,
    items: Vec<Item>,
    /// Encoded body size in bytes.
    size: usize,
    /// Entries in the subtree.
    total: u64,
}

impl Node {
    fn new(leaf: bool) -> Node {
        Node {
            leaf,
            data: Vec::new(),
            items: Vec::new(),
            size: if leaf { LEAF_HDR } else { INT_HDR },
            total: 0,
        }
    }

    /// Bytes that appending an item with these lengths adds to the page.
    /// The leftmost child of an internal node lives in the node header.
    fn cost(&self, klen: usize, vlen: usize) -> usize {
        match (self.leaf, self.items.is_empty()) {
            (true, _) => LEAF_CELL_FIXED + klen + vlen,
            (false, true) => 0,
            (false, false) => INT_CELL_FIXED + klen,
        }
    }

    /// Fewest items a finished node may hold: one entry, or two children
    /// (an internal node with one child would be a useless level).
    fn min_items(&self) -> usize {
        if self.leaf {
            1
        } else {
            2
        }
    }

    /// Whether an item of `cost` bytes may still be appended: it must fit
    /// the page, and the fill target unless the node is below its minimum.
    fn has_room(&self, cost: usize, target: usize) -> bool {
        let after = self.size + cost;
        after <= PAGE_BODY && (self.items.len() < self.min_items() || after <= target)
    }

    fn push(&mut self, key: &[u8], val: &[u8], page: PageId, count: u64) {
        self.size += self.cost(key.len(), val.len());
        let start = self.data.len();
        self.data.extend_from_slice(key);
        self.data.extend_from_slice(val);
        self.items.push(Item {
            start,
            klen: key.len(),
            vlen: val.len(),
            page,
            count,
        });
        self.total += count;
    }

    fn key(&self, i: usize) -> &[u8] {
        let it = &self.items[i];
        &self.data[it.start..it.start + it.klen]
    }

    fn val(&self, i: usize) -> &[u8] {
        let it = &self.items[i];
        &self.data[it.start + it.klen..it.start + it.klen + it.vlen]
    }

    fn last_key(&self) -> Option<&[u8]> {
        (!self.items.is_empty()).then(|| self.key(self.items.len() - 1))
    }

    fn is_empty(&self) -> bool {
        self.items.is_empty()
    }

    /// Items `range` of this node, as a new node.
    fn slice(&self, range: std::ops::Range<usize>) -> Node {
        let mut out = Node::new(self.leaf);
        for i in range {
            let it = &self.items[i];
            out.push(self.key(i), self.val(i), it.page, it.count);
        }
        out
    }

    /// Appends every item of `other`.
    fn extend(&mut self, other: &Node) {
        for (i, it) in other.items.iter().enumerate() {
            self.push(other.key(i), other.val(i), it.page, it.count);
        }
    }

    fn encode(&self) -> PageBuf {
        debug_assert!(self.size <= PAGE_BODY, "node of {} bytes", self.size);
        if self.leaf {
            self.encode_leaf()
        } else {
            self.encode_internal()
        }
    }

    /// Cells from the end of the page in entry order, as `btree` lays them
    /// out, so a bulk-loaded leaf is byte-identical to an inserted one.
    fn encode_leaf(&self) -> PageBuf {
        let mut p = PageBuf::new(PageKind::BTreeLeaf);
        let b = p.body_mut();
        put_u16(b, 0, self.items.len() as u16);
        let mut end = PAGE_BODY;
        for (i, it) in self.items.iter().enumerate() {
            let len = it.klen + it.vlen;
            end -= 4 + len;
            put_u16(b, end, it.klen as u16);
            put_u16(b, end + 2, it.vlen as u16);
            b[end + 4..end + 4 + len].copy_from_slice(&self.data[it.start..it.start + len]);
            put_u16(b, LEAF_HDR + 2 * i, end as u16);
        }
        put_u16(b, 2, end as u16);
        p
    }

    fn encode_internal(&self) -> PageBuf {
        let mut p = PageBuf::new(PageKind::BTreeInternal);
        let b = p.body_mut();
        let first = &self.items[0];
        put_u16(b, 0, (self.items.len() - 1) as u16);
        put_u32(b, 4, first.page.0);
        put_u64(b, 8, first.count);
        let mut end = PAGE_BODY;
        for (i, it) in self.items.iter().enumerate().skip(1) {
            end -= 14 + it.klen;
            put_u16(b, end, it.klen as u16);
            put_u32(b, end + 2, it.page.0);
            put_u64(b, end + 6, it.count);
            b[end + 14..end + 14 + it.klen]
                .copy_from_slice(&self.data[it.start..it.start + it.klen]);
            put_u16(b, INT_HDR + 2 * (i - 1), end as u16);
        }
        put_u16(b, 2, end as u16);
        p
    }
}

/// Splits the items of `held` followed by `open` into two nodes of about
/// equal size, each within a page and at its minimum item count. Keeps the
/// split as it is if no better one exists.
fn rebalance(held: &mut Node, open: &mut Node) {
    let mut all = Node::new(held.leaf);
    all.extend(held);
    all.extend(open);
    let n = all.items.len();
    // prefix[i]: cell bytes of items 0..i, counting every item as a cell.
    let mut prefix = Vec::with_capacity(n + 1);
    prefix.push(0);
    for it in &all.items {
        let cell = if all.leaf {
            LEAF_CELL_FIXED + it.klen + it.vlen
        } else {
            INT_CELL_FIXED + it.klen
        };
        prefix.push(prefix[prefix.len() - 1] + cell);
    }
    // The node of items a..b; an internal node's first child is in its header.
    let size = |a: usize, b: usize| {
        let hdr = if all.leaf { LEAF_HDR } else { INT_HDR };
        let first = if all.leaf {
            0
        } else {
            prefix[a + 1] - prefix[a]
        };
        hdr + prefix[b] - prefix[a] - first
    };
    let min = all.min_items();
    let mut best = (usize::MAX, held.items.len());
    for at in min..=n.saturating_sub(min) {
        let (left, right) = (size(0, at), size(at, n));
        if left <= PAGE_BODY && right <= PAGE_BODY && left.abs_diff(right) < best.0 {
            best = (left.abs_diff(right), at);
        }
    }
    *held = all.slice(0..best.1);
    *open = all.slice(best.1..n);
}

/// One level of the tree under construction.
struct Level {
    held: Option<Node>,
    open: Node,
}

impl Level {
    fn new(leaf: bool) -> Level {
        Level {
            held: None,
            open: Node::new(leaf),
        }
    }
}

/// Builds a new B+tree from entries pushed in strictly increasing key
/// order. See the module documentation for the fill policy and for what an
/// error leaves behind.
pub struct BulkLoader<'s, S: PageStoreMut> {
    store: &'s mut S,
    /// Level 0 holds leaves; the last level is the highest so far.
    levels: Vec<Level>,
    /// Fill target in body bytes.
    target: usize,
    /// Entries accepted so far.
    pushed: u64,
}

impl<'s, S: PageStoreMut> BulkLoader<'s, S> {
    /// A loader that fills nodes to about `fill` of a page; `fill` must be
    /// within [`MIN_FILL`]`..=1.0`.
    pub fn new(store: &'s mut S, fill: f32) -> StorageResult<Self> {
        if !(MIN_FILL..=1.0).contains(&fill) {
            return Err(StorageError::Invalid(format!(
                "bulk-load fill factor {fill} is outside {MIN_FILL}..=1.0"
            )));
        }
        Ok(BulkLoader {
            store,
            levels: vec![Level::new(true)],
            target: (fill * PAGE_BODY as f32) as usize,
            pushed: 0,
        })
    }

    /// Entries accepted so far.
    pub fn len(&self) -> u64 {
        self.pushed
    }

    /// Whether no entry was accepted yet.
    pub fn is_empty(&self) -> bool {
        self.pushed == 0
    }

    /// Appends one entry. The key must be greater than every key before it
    /// ([`StorageError::OutOfOrder`]) and within the size limits of
    /// [`btree`] ([`StorageError::TooLarge`]); a refused entry changes
    /// nothing.
    pub fn push(&mut self, key: &[u8], val: &[u8]) -> StorageResult<()> {
        check_sizes(key, val)?;
        if self.levels[0]
            .open
            .last_key()
            .is_some_and(|last| key <= last)
        {
            return Err(StorageError::OutOfOrder { index: self.pushed });
        }
        self.append(0, key, val, PageId::NONE, 1)?;
        self.pushed += 1;
        Ok(())
    }

    /// Writes the remaining nodes and returns the root. An empty input
    /// gives an empty leaf, as [`btree::create`] does. If the store fails,
    /// the pages written so far are freed (best effort) before the error
    /// is returned.
    pub fn finish(mut self) -> StorageResult<PageId> {
        match self.write_right_edge() {
            Ok(root) => Ok(root),
            Err(e) => {
                let _ = self.abandon();
                Err(e)
            }
        }
    }

    /// Gives up the load: frees every page written so far. Returns the
    /// first error from the store, after trying to free everything.
    pub fn abandon(self) -> StorageResult<()> {
        let mut first_err = Ok(());
        for level in &self.levels[1..] {
            for node in level.held.iter().chain([&level.open]) {
                for it in &node.items {
                    if let Err(e) = btree::free_all(self.store, it.page) {
                        first_err = first_err.and(Err(e));
                    }
                }
            }
        }
        first_err
    }

    /// Appends an item to the open node of `level`, first moving a full
    /// open node to held (and writing the previous held one).
    fn append(
        &mut self,
        level: usize,
        key: &[u8],
        val: &[u8],
        page: PageId,
        count: u64,
    ) -> StorageResult<()> {
        let open = &self.levels[level].open;
        if !open.has_room(open.cost(key.len(), val.len()), self.target) {
            self.rotate(level)?;
        }
        self.levels[level].open.push(key, val, page, count);
        Ok(())
    }

    /// Writes the held node of `level` and makes the open node held.
    fn rotate(&mut self, level: usize) -> StorageResult<()> {
        self.write_held(level)?;
        let lv = &mut self.levels[level];
        let leaf = lv.open.leaf;
        lv.held = Some(std::mem::replace(&mut lv.open, Node::new(leaf)));
        Ok(())
    }

    /// Writes the held node of `level`, if any, and records it in the
    /// level above. On error the node stays held.
    fn write_held(&mut self, level: usize) -> StorageResult<()> {
        let Some(node) = self.levels[level].held.take() else {
            return Ok(());
        };
        let r = self.write_node(level, &node);
        if r.is_err() {
            self.levels[level].held = Some(node);
        }
        r
    }

    /// Writes the open node of `level` and records it in the level above.
    /// On error the node stays open.
    fn write_open(&mut self, level: usize) -> StorageResult<()> {
        let leaf = self.levels[level].open.leaf;
        let node = std::mem::replace(&mut self.levels[level].open, Node::new(leaf));
        let r = self.write_node(level, &node);
        if r.is_err() {
            self.levels[level].open = node;
        }
        r
    }

    /// Writes `node` (from `level`) to a new page and appends it to the
    /// level above. Room in the parent is made before the page is
    /// allocated, so that a failure never leaves a written page that no
    /// node refers to.
    fn write_node(&mut self, level: usize, node: &Node) -> StorageResult<()> {
        if level + 1 == self.levels.len() {
            self.levels.push(Level::new(false));
        }
        let key = node.key(0);
        let parent = &self.levels[level + 1].open;
        if !parent.has_room(parent.cost(key.len(), 0), self.target) {
            self.rotate(level + 1)?;
        }
        let id = self.store.allocate()?;
        self.store.write(id, node.encode());
        self.levels[level + 1].open.push(key, &[], id, node.total);
        Ok(())
    }

    /// Rebalances and writes the last nodes of each level, bottom up, until
    /// a level consists of a single node: the root.
    fn write_right_edge(&mut self) -> StorageResult<PageId> {
        let mut level = 0;
        loop {
            let top = level + 1 == self.levels.len();
            let lv = &mut self.levels[level];
            if top && lv.held.is_none() {
                let id = self.store.allocate()?;
                self.store.write(id, lv.open.encode());
                return Ok(id);
            }
            if let Some(held) = lv.held.as_mut() {
                rebalance(held, &mut lv.open);
            }
            self.write_held(level)?;
            if !self.levels[level].open.is_empty() {
                self.write_open(level)?;
            }
            level += 1;
        }
    }
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

/// Builds a new tree from `entries` in strictly increasing key order,
/// filling nodes to about `fill` of a page, and returns its root. Pages come
/// from `store.allocate()`. On any error — from the input, its order or
/// sizes, or the store — the pages written so far are freed again (best
/// effort) and the error is returned.
pub fn bulk_load<S, I>(store: &mut S, entries: I, fill: f32) -> StorageResult<PageId>
where
    S: PageStoreMut,
    I: IntoIterator<Item = StorageResult<(Vec<u8>, Vec<u8>)>>,
{
    let mut loader = BulkLoader::new(store, fill)?;
    for entry in entries {
        if let Err(e) = entry.and_then(|(k, v)| loader.push(&k, &v)) {
            let _ = loader.abandon();
            return Err(e);
        }
    }
    loader.finish()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::btree::{check, create, free_all, get, insert, len, nth, range, range_rev, rank};
    use crate::page::{get_u16, get_u32, get_u64};
    use crate::testutil::MemStore;
    use crate::{PageStore, PageWrite};
    use proptest::prelude::*;
    use std::collections::BTreeMap;
    use std::ops::Bound;

    type Model = BTreeMap<Vec<u8>, Vec<u8>>;

    fn load(s: &mut MemStore, model: &Model, fill: f32) -> StorageResult<PageId> {
        let entries = model.iter().map(|(k, v)| Ok((k.clone(), v.clone())));
        bulk_load(s, entries, fill)
    }

    /// Every read operation of `btree` agrees with the model.
    fn assert_matches(s: &MemStore, root: PageId, model: &Model) {
        assert_eq!(check(s, root).unwrap().entries, model.len() as u64);
        assert_eq!(len(s, root).unwrap(), model.len() as u64);
        for (i, (k, v)) in model.iter().enumerate() {
            assert_eq!(get(s, root, k).unwrap().as_ref(), Some(v));
            assert_eq!(rank(s, root, k).unwrap(), i as u64);
            assert_eq!(
                nth(s, root, i as u64).unwrap(),
                Some((k.clone(), v.clone()))
            );
        }
        assert_eq!(nth(s, root, model.len() as u64).unwrap(), None);
        let want: Vec<_> = model.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
        let all = || (Bound::Unbounded, Bound::Unbounded);
        let (lo, hi) = all();
        let got: Vec<_> = range(s, root, lo, hi)
            .collect::<StorageResult<_>>()
            .unwrap();
        assert_eq!(got, want);
        let (lo, hi) = all();
        let mut rev: Vec<_> = range_rev(s, root, lo, hi)
            .collect::<StorageResult<_>>()
            .unwrap();
        rev.reverse();
        assert_eq!(rev, want);
    }

    /// Every leaf holds an entry and every internal node two children:
    /// what the rebalanced right edge guarantees, beyond `check`.
    fn assert_no_thin_nodes(s: &MemStore, id: PageId, root: bool) {
        let page = s.read(id).unwrap();
        let body = page.body();
        let n = get_u16(body, 0) as usize;
        if page.kind() == Some(PageKind::BTreeLeaf) {
            assert!(n >= 1 || root, "leaf {id} is empty");
            return;
        }
        assert!(n >= 1, "internal {id} has a single child");
        assert_no_thin_nodes(s, PageId(get_u32(body, 4)), false);
        for i in 0..n {
            let cell = get_u16(body, INT_HDR + 2 * i) as usize;
            assert_no_thin_nodes(s, PageId(get_u32(body, cell + 2)), false);
        }
    }

    fn key() -> impl Strategy<Value = Vec<u8>> {
        prop_oneof![
            proptest::collection::vec(0u8..4, 0..4),
            proptest::collection::vec(any::<u8>(), 0..64),
            proptest::collection::vec(any::<u8>(), 900..=1024),
        ]
    }

    fn val() -> impl Strategy<Value = Vec<u8>> {
        prop_oneof![
            4 => proptest::collection::vec(any::<u8>(), 0..40),
            1 => proptest::collection::vec(any::<u8>(), 900..1024),
        ]
    }

    #[derive(Debug, Clone)]
    enum Op {
        Insert(Vec<u8>, Vec<u8>),
        Remove(Vec<u8>),
        /// Removes the model's entry at this position (modulo its length),
        /// so removals hit loaded keys.
        RemoveNth(usize),
    }

    fn op() -> impl Strategy<Value = Op> {
        prop_oneof![
            2 => (key(), val()).prop_map(|(k, v)| Op::Insert(k, v)),
            1 => key().prop_map(Op::Remove),
            2 => any::<usize>().prop_map(Op::RemoveNth),
        ]
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(48))]
        #[test]
        fn bulk_loaded_tree_matches_model_and_stays_editable(
            model in proptest::collection::btree_map(key(), val(), 0..1500),
            fill in 0.5f32..=1.0,
            ops in proptest::collection::vec(op(), 0..300),
        ) {
            let mut s = MemStore::new();
            let mut model = model;
            let mut root = load(&mut s, &model, fill).unwrap();
            assert_matches(&s, root, &model);
            assert_no_thin_nodes(&s, root, true);
            for op in ops {
                match op {
                    Op::Insert(k, v) => prop_assert_eq!(insert(&mut s, &mut root, &k, &v).unwrap(), model.insert(k, v)),
                    Op::Remove(k) => prop_assert_eq!(btree::remove(&mut s, &mut root, &k).unwrap(), model.remove(&k)),
                    Op::RemoveNth(i) if !model.is_empty() => {
                        let k = model.keys().nth(i % model.len()).unwrap().clone();
                        prop_assert_eq!(btree::remove(&mut s, &mut root, &k).unwrap(), model.remove(&k));
                    }
                    Op::RemoveNth(_) => {}
                }
            }
            assert_matches(&s, root, &model);
            free_all(&mut s, root).unwrap();
            prop_assert_eq!(s.live_pages(), 0);
        }
    }

    #[test]
    fn the_external_sorters_output_loads_directly() {
        use crate::backend::MemBackend;
        use crate::extsort::{ExternalSorter, MIN_MEMORY_LIMIT};
        let model: Model = (0u32..5000)
            .map(|i| {
                (
                    format!("{:08}", i.wrapping_mul(2_654_435_761) % 1_000_000).into_bytes(),
                    i.to_le_bytes().to_vec(),
                )
            })
            .collect();
        let backend = std::sync::Arc::new(MemBackend::new());
        let mut sorter = ExternalSorter::new(backend, "sort".into(), MIN_MEMORY_LIMIT);
        for i in 0u32..5000 {
            let k = format!("{:08}", i.wrapping_mul(2_654_435_761) % 1_000_000);
            sorter.push(k.as_bytes(), &i.to_le_bytes()).unwrap();
        }
        let sorted = sorter.finish().unwrap();
        assert!(sorted.stats().runs_spilled > 1);
        let mut s = MemStore::new();
        let root = bulk_load(&mut s, sorted, 0.9).unwrap();
        assert_matches(&s, root, &model);
    }

    #[test]
    fn empty_input_is_the_tree_create_makes() {
        let mut s = MemStore::new();
        let root = load(&mut s, &Model::new(), 0.9).unwrap();
        let mut t = MemStore::new();
        let want = create(&mut t).unwrap();
        assert_eq!(s.read(root).unwrap(), t.read(want).unwrap());
        assert_eq!(s.live_pages(), 1);
        let mut root = root;
        insert(&mut s, &mut root, b"a", b"1").unwrap();
        assert_matches(&s, root, &Model::from([(b"a".to_vec(), b"1".to_vec())]));
    }

    #[test]
    fn single_leaf_is_byte_identical_to_one_built_by_inserts() {
        for n in [1u32, 2, 37] {
            let model: Model = (0..n)
                .map(|i| (i.to_be_bytes().to_vec(), vec![i as u8; 20]))
                .collect();
            let mut s = MemStore::new();
            let root = load(&mut s, &model, 1.0).unwrap();
            let mut t = MemStore::new();
            let mut want = create(&mut t).unwrap();
            for (k, v) in &model {
                insert(&mut t, &mut want, k, v).unwrap();
            }
            assert_eq!(s.read(root).unwrap(), t.read(want).unwrap(), "{n} entries");
        }
    }

    /// Four cells of 2041 bytes fill a leaf body (8168 bytes) exactly.
    fn exact_leaf(n: u32) -> Model {
        let cell = (PAGE_BODY - LEAF_HDR) / 4;
        (0..n)
            .map(|i| {
                (
                    i.to_be_bytes().to_vec(),
                    vec![7; cell - LEAF_CELL_FIXED - 4],
                )
            })
            .collect()
    }

    #[test]
    fn exactly_one_full_leaf_and_one_entry_more() {
        let mut s = MemStore::new();
        let mut root = load(&mut s, &exact_leaf(4), 1.0).unwrap();
        let st = check(&s, root).unwrap();
        assert_eq!((st.entries, st.depth, st.pages), (4, 1, 1));
        insert(&mut s, &mut root, b"zz", b"after").unwrap();
        assert_eq!(check(&s, root).unwrap().depth, 2);

        let mut s = MemStore::new();
        let root = load(&mut s, &exact_leaf(5), 1.0).unwrap();
        let st = check(&s, root).unwrap();
        assert_eq!((st.entries, st.depth, st.pages), (5, 2, 3));
        assert_matches(&s, root, &exact_leaf(5));
    }

    #[test]
    fn keys_and_entries_of_the_maximum_size() {
        let model: Model = (0u32..300)
            .map(|i| {
                let mut k = vec![0xab; MAX_KEY];
                k[..4].copy_from_slice(&i.to_be_bytes());
                (k, vec![i as u8; MAX_ENTRY - MAX_KEY])
            })
            .collect();
        for fill in [MIN_FILL, 0.9, 1.0] {
            let mut s = MemStore::new();
            let mut root = load(&mut s, &model, fill).unwrap();
            assert!(check(&s, root).unwrap().depth >= 3);
            assert_matches(&s, root, &model);
            let mut big = vec![0xff; MAX_KEY];
            big[0] = 0;
            insert(&mut s, &mut root, &big, &[1; MAX_ENTRY - MAX_KEY]).unwrap();
            check(&s, root).unwrap();
        }
    }

    #[test]
    fn fill_sets_how_full_the_nodes_are() {
        let model: Model = (0u32..20_000)
            .map(|i| (i.to_be_bytes().to_vec(), vec![1; 60]))
            .collect();
        let pages = |fill| {
            let mut s = MemStore::new();
            let root = load(&mut s, &model, fill).unwrap();
            check(&s, root).unwrap().pages as f64
        };
        let (half, full) = (pages(0.5), pages(1.0));
        assert!((1.8..2.2).contains(&(half / full)), "{half} vs {full}");
        // A full leaf holds 8164 / 70 = 116 entries.
        assert!(full <= (20_000.0 / 116.0_f64).ceil() + 3.0, "{full} pages");
    }

    #[test]
    fn right_edge_is_rebalanced() {
        // A full leaf holds 116 of these entries: one more makes two leaves,
        // which share them evenly instead of holding 116 and 1.
        let mut s = MemStore::new();
        let model: Model = (0u32..117)
            .map(|i| (i.to_be_bytes().to_vec(), vec![1; 60]))
            .collect();
        let root = load(&mut s, &model, 1.0).unwrap();
        let page = s.read(root).unwrap();
        assert_eq!(get_u16(page.body(), 0), 1, "two children");
        let left = get_u64(page.body(), 8);
        assert!((58..=59).contains(&left), "left leaf holds {left}");
    }

    #[test]
    fn out_of_order_input_is_refused_and_frees_what_was_written() {
        for bad in [b"k000100".to_vec(), b"k004999".to_vec(), b"a".to_vec()] {
            let mut s = MemStore::new();
            let good = (0..5000).map(|i| Ok((format!("k{i:06}").into_bytes(), vec![0; 40])));
            let entries = good.chain([Ok((bad, vec![]))]);
            let err = bulk_load(&mut s, entries, 0.9).unwrap_err();
            assert!(
                matches!(err, StorageError::OutOfOrder { index: 5000 }),
                "{err}"
            );
            assert_eq!(s.live_pages(), 0, "every written page is freed");
        }
    }

    #[test]
    fn oversized_entries_are_refused() {
        let cases = [
            (vec![1; MAX_KEY + 1], vec![], MAX_KEY),
            (vec![1; 10], vec![2; MAX_ENTRY - 9], MAX_ENTRY),
        ];
        for (k, v, limit) in cases {
            let mut s = MemStore::new();
            let entries = (0u32..3000)
                .map(|i| Ok((i.to_be_bytes().to_vec(), vec![0; 30])))
                .chain([Ok((k, v))]);
            let err = bulk_load(&mut s, entries, 0.9).unwrap_err();
            assert!(
                matches!(err, StorageError::TooLarge { limit: l, .. } if l == limit),
                "{err}"
            );
            assert_eq!(s.live_pages(), 0);
        }
    }

    #[test]
    fn an_input_error_is_passed_on_and_frees_what_was_written() {
        let mut s = MemStore::new();
        let entries = (0u32..3000)
            .map(|i| Ok((i.to_be_bytes().to_vec(), vec![0; 30])))
            .chain([Err(StorageError::Invalid("source failed".into()))]);
        let err = bulk_load(&mut s, entries, 0.9).unwrap_err();
        assert!(matches!(err, StorageError::Invalid(ref m) if m == "source failed"));
        assert_eq!(s.live_pages(), 0);
    }

    #[test]
    fn a_refused_entry_leaves_the_loader_usable() {
        let mut s = MemStore::new();
        let mut l = BulkLoader::new(&mut s, 0.9).unwrap();
        let mut model = Model::new();
        for i in 0u32..2000 {
            let k = (i * 2).to_be_bytes().to_vec();
            l.push(&k, b"v").unwrap();
            model.insert(k, b"v".to_vec());
            assert!(l.push(&(i * 2).to_be_bytes(), b"dup").is_err());
            assert!(l.push(&[0; MAX_KEY + 1], b"").is_err());
        }
        assert_eq!(l.len(), 2000);
        let root = l.finish().unwrap();
        assert_matches(&s, root, &model);
    }

    #[test]
    fn fill_outside_the_accepted_range_is_invalid() {
        let mut s = MemStore::new();
        for fill in [0.0, 0.49, 1.01, f32::NAN] {
            assert!(matches!(
                BulkLoader::new(&mut s, fill),
                Err(StorageError::Invalid(_))
            ));
        }
    }

    /// A store whose `allocate` fails from the `fail_at`-th call on.
    struct FailingStore {
        inner: MemStore,
        allocs: u64,
        fail_at: u64,
    }

    impl PageStore for FailingStore {
        fn read(&self, id: PageId) -> StorageResult<std::sync::Arc<PageBuf>> {
            self.inner.read(id)
        }
        fn name(&self) -> &str {
            "failing"
        }
    }

    impl PageWrite for FailingStore {
        fn write(&mut self, id: PageId, page: PageBuf) {
            self.inner.write(id, page)
        }
    }

    impl PageStoreMut for FailingStore {
        fn allocate(&mut self) -> StorageResult<PageId> {
            self.allocs += 1;
            if self.allocs >= self.fail_at {
                return Err(StorageError::Invalid("no space".into()));
            }
            self.inner.allocate()
        }
        fn free(&mut self, id: PageId) -> StorageResult<()> {
            self.inner.free(id)
        }
    }

    #[test]
    fn a_failing_allocation_at_any_point_frees_every_written_page() {
        let model: Model = (0u32..4000)
            .map(|i| (i.to_be_bytes().to_vec(), vec![1; 100]))
            .collect();
        let mut s = MemStore::new();
        let root = load(&mut s, &model, 0.9).unwrap();
        let pages = check(&s, root).unwrap().pages;
        for fail_at in 1..=pages {
            let mut s = FailingStore {
                inner: MemStore::new(),
                allocs: 0,
                fail_at,
            };
            let entries = model.iter().map(|(k, v)| Ok((k.clone(), v.clone())));
            assert!(bulk_load(&mut s, entries, 0.9).is_err());
            assert_eq!(s.inner.live_pages(), 0, "fail at allocation {fail_at}");
        }
    }
}
