//! Speed check for an index rebuild: sorts random entries through
//! `ExternalSorter` (temporary files on the real file system) and
//! bulk-loads the sorted stream into a B+tree held in memory, timing the
//! stages separately.
//!
//! ```text
//! cargo run --release -p storage --example sort_load [-- ENTRIES [LIMIT_MIB [FILL]]]
//! ```
//!
//! Defaults: 1,000,000 entries with keys of 90..=110 random bytes and
//! values of 50..=70, a 16 MiB sort limit, fill 0.9. The merge and the
//! load are interleaved in batches, so each gets its own clock; the copy
//! into a batch is charged to the merge.

use std::sync::Arc;
use std::time::{Duration, Instant};
use storage::backend::FsBackend;
use storage::btree;
use storage::bulk::BulkLoader;
use storage::extsort::ExternalSorter;
use storage::{
    Backend, PageBuf, PageId, PageStore, PageStoreMut, PageWrite, StorageError, StorageResult,
};

/// Pages in a vector indexed by page id (page 0 unused, as in a file).
struct VecStore {
    pages: Vec<Option<Arc<PageBuf>>>,
}

impl PageStore for VecStore {
    fn read(&self, id: PageId) -> StorageResult<Arc<PageBuf>> {
        self.pages
            .get(id.0 as usize)
            .cloned()
            .flatten()
            .ok_or_else(|| StorageError::corrupt("vec", id, "no such page"))
    }
    fn name(&self) -> &str {
        "vec"
    }
}

impl PageWrite for VecStore {
    fn write(&mut self, id: PageId, page: PageBuf) {
        self.pages[id.0 as usize] = Some(Arc::new(page));
    }
}

impl PageStoreMut for VecStore {
    fn allocate(&mut self) -> StorageResult<PageId> {
        self.pages.push(None);
        Ok(PageId(self.pages.len() as u32 - 1))
    }
    fn free(&mut self, id: PageId) -> StorageResult<()> {
        self.pages[id.0 as usize] = None;
        Ok(())
    }
}

/// splitmix64: fast, deterministic test data.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// Refills `buf` with `lo..=hi` random bytes.
    fn fill(&mut self, buf: &mut Vec<u8>, lo: usize, hi: usize) {
        let len = lo + (self.next() % (hi - lo + 1) as u64) as usize;
        buf.clear();
        while buf.len() < len {
            buf.extend_from_slice(&self.next().to_le_bytes());
        }
        buf.truncate(len);
    }
}

/// The process's peak resident set size in bytes.
fn max_rss() -> u64 {
    // SAFETY: rusage is a plain C struct of integers; all zeroes is valid.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: getrusage only writes the struct it is given.
    unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut usage) };
    usage.ru_maxrss as u64 * 1024
}

fn rate(n: u64, d: Duration) -> String {
    format!("{:>10.0} entries/s", n as f64 / d.as_secs_f64())
}

fn mib(bytes: u64) -> String {
    format!("{:.1} MiB", bytes as f64 / (1 << 20) as f64)
}

const BATCH: usize = 4096;

fn main() -> StorageResult<()> {
    let mut args = std::env::args().skip(1);
    let n: u64 = args
        .next()
        .map_or(1_000_000, |a| a.parse().expect("ENTRIES"));
    let limit: usize = args.next().map_or(16, |a| a.parse().expect("LIMIT_MIB")) << 20;
    let fill: f32 = args.next().map_or(0.9, |a| a.parse().expect("FILL"));
    let dir = std::env::temp_dir().join(format!("folio-sort-load-{}", std::process::id()));
    let backend: Arc<dyn Backend> = Arc::new(FsBackend);

    let (mut key, mut val) = (Vec::new(), Vec::new());
    let t = Instant::now();
    let mut rng = Rng(42);
    let mut bytes = 0u64;
    for _ in 0..n {
        rng.fill(&mut key, 90, 110);
        rng.fill(&mut val, 50, 70);
        bytes += (key.len() + val.len()) as u64;
    }
    let generate = t.elapsed();

    let t = Instant::now();
    let mut sorter = ExternalSorter::new(backend, dir.clone(), limit);
    let mut rng = Rng(42);
    for _ in 0..n {
        rng.fill(&mut key, 90, 110);
        rng.fill(&mut val, 50, 70);
        sorter.push(&key, &val)?;
    }
    let push = t.elapsed().saturating_sub(generate);
    let t = Instant::now();
    let mut sorted = sorter.finish()?;
    let finish = t.elapsed();
    let rss_sorted = max_rss();

    let mut store = VecStore { pages: vec![None] };
    let mut loader = BulkLoader::new(&mut store, fill)?;
    let (mut merge, mut load) = (Duration::ZERO, Duration::ZERO);
    let mut batch: Vec<u8> = Vec::with_capacity(BATCH * 200);
    let mut spans: Vec<(usize, usize, usize)> = Vec::with_capacity(BATCH);
    loop {
        let t = Instant::now();
        batch.clear();
        spans.clear();
        while spans.len() < BATCH {
            let Some((k, v)) = sorted.next_entry()? else {
                break;
            };
            spans.push((batch.len(), k.len(), v.len()));
            batch.extend_from_slice(k);
            batch.extend_from_slice(v);
        }
        merge += t.elapsed();
        if spans.is_empty() {
            break;
        }
        let t = Instant::now();
        for &(at, kl, vl) in &spans {
            loader.push(&batch[at..at + kl], &batch[at + kl..at + kl + vl])?;
        }
        load += t.elapsed();
    }
    let stats = sorted.stats();
    drop(sorted);
    let t = Instant::now();
    let root = loader.finish()?;
    load += t.elapsed();

    let t = Instant::now();
    let tree = btree::check(&store, root)?;
    let check = t.elapsed();
    assert_eq!(tree.entries, n);
    let _ = std::fs::remove_dir(&dir);

    let sort = push + finish + merge;
    println!(
        "{n} entries, {} of keys and values, sort limit {}, fill {fill}",
        mib(bytes),
        mib(limit as u64)
    );
    println!(
        "generate  {:>8.3} s (excluded below)",
        generate.as_secs_f64()
    );
    println!("push      {:>8.3} s", push.as_secs_f64());
    println!(
        "finish    {:>8.3} s  (last spill, intermediate passes, open merge)",
        finish.as_secs_f64()
    );
    println!("merge     {:>8.3} s", merge.as_secs_f64());
    println!("sort      {:>8.3} s  {}", sort.as_secs_f64(), rate(n, sort));
    println!("load      {:>8.3} s  {}", load.as_secs_f64(), rate(n, load));
    println!(
        "total     {:>8.3} s  {}",
        (sort + load).as_secs_f64(),
        rate(n, sort + load)
    );
    println!(
        "sorter    {} runs, {} merge passes, {} written to {}, peak {} accounted (limit {})",
        stats.runs_spilled,
        stats.merge_passes,
        mib(stats.bytes_written),
        dir.display(),
        mib(stats.peak_memory as u64),
        mib(stats.memory_limit as u64)
    );
    println!(
        "tree      {} pages ({}), depth {}; check {:.3} s",
        tree.pages,
        mib(tree.pages * storage::PAGE_SIZE as u64),
        tree.depth,
        check.as_secs_f64()
    );
    println!(
        "max RSS   {} after the sort, {} with the tree in memory",
        mib(rss_sorted),
        mib(max_rss())
    );
    Ok(())
}
