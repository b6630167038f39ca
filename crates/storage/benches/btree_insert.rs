//! Random-key B+tree inserts and removes of ~100-byte values in a tree of
//! 100,000 entries: the per-document index work of replica creation
//! (docs/benchmarks.md "storage: B+tree inserts").
//!
//! No criterion in the workspace, so this is a plain timing binary:
//! `cargo bench -p storage --bench btree_insert`. Each sample starts from
//! the same 100,000-entry tree (a copy-on-write clone of an in-memory page
//! store, as a write transaction stages pages) and inserts, then removes,
//! 10,000 new random keys; the figure is the median over the samples in
//! nanoseconds per operation, with the spread. The machine is shared, so
//! compare medians taken back to back.

use rand::{rngs::StdRng, Rng, SeedableRng};
use std::collections::HashMap;
use std::sync::Arc;
use std::time::Instant;
use storage::{btree, PageBuf, PageId, PageStore, PageStoreMut, PageWrite, StorageResult};

const BASE: usize = 100_000;
const BATCH: usize = 10_000;
const SAMPLES: usize = 15;
const VALUE: usize = 100;

/// Pages in memory behind `Arc`s, so a clone shares them until written.
#[derive(Clone, Default)]
struct Mem {
    pages: HashMap<PageId, Arc<PageBuf>>,
    free: Vec<PageId>,
    next: u32,
}

impl PageStore for Mem {
    fn read(&self, id: PageId) -> StorageResult<Arc<PageBuf>> {
        self.pages
            .get(&id)
            .cloned()
            .ok_or_else(|| storage::StorageError::corrupt("bench", id, "no such page"))
    }
    fn name(&self) -> &str {
        "bench"
    }
}

impl PageWrite for Mem {
    fn write(&mut self, id: PageId, page: PageBuf) {
        self.pages.insert(id, Arc::new(page));
    }
}

impl PageStoreMut for Mem {
    fn allocate(&mut self) -> StorageResult<PageId> {
        Ok(self.free.pop().unwrap_or_else(|| {
            self.next += 1;
            PageId(self.next)
        }))
    }
    fn free(&mut self, id: PageId) -> StorageResult<()> {
        self.pages.remove(&id);
        self.free.push(id);
        Ok(())
    }
}

fn random_key(rng: &mut StdRng) -> [u8; 16] {
    rng.gen()
}

fn median(mut xs: Vec<f64>) -> (f64, f64, f64) {
    xs.sort_by(f64::total_cmp);
    (xs[xs.len() / 2], xs[0], xs[xs.len() - 1])
}

fn main() -> StorageResult<()> {
    let mut rng = StdRng::seed_from_u64(48);
    let value = [0x5au8; VALUE];
    let mut base = Mem::default();
    let mut root = btree::create(&mut base)?;
    for _ in 0..BASE {
        btree::insert(&mut base, &mut root, &random_key(&mut rng), &value)?;
    }
    let stats = btree::check(&base, root)?;
    println!(
        "tree: {} entries, depth {}, {} pages; {BATCH} ops per sample, {SAMPLES} samples",
        stats.entries, stats.depth, stats.pages
    );
    let (mut ins, mut rem) = (Vec::new(), Vec::new());
    for _ in 0..SAMPLES {
        let keys: Vec<[u8; 16]> = (0..BATCH).map(|_| random_key(&mut rng)).collect();
        let mut s = base.clone();
        let mut r = root;
        let t = Instant::now();
        for k in &keys {
            btree::insert(&mut s, &mut r, k, &value)?;
        }
        ins.push(t.elapsed().as_nanos() as f64 / BATCH as f64);
        let t = Instant::now();
        for k in &keys {
            btree::remove(&mut s, &mut r, k)?;
        }
        rem.push(t.elapsed().as_nanos() as f64 / BATCH as f64);
        assert_eq!(btree::len(&s, r)?, BASE as u64, "every insert was removed");
    }
    for (name, xs) in [("insert", ins), ("remove", rem)] {
        let (med, lo, hi) = median(xs);
        println!("{name}: median {med:.0} ns/op (min {lo:.0}, max {hi:.0})");
    }
    Ok(())
}
