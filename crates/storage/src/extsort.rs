//! External merge sort of (key, value) byte pairs in bounded memory.
//!
//! A view rebuild computes one index entry per document, in document order,
//! and [`crate::bulk`] needs them in key order. A million entries of ~160
//! bytes is more than one rebuild should hold on a shared server, so the
//! sorter keeps entries in memory up to a byte limit, sorts them and writes
//! them out as a sorted *run* to a temporary file, and in the end merges the
//! runs. Input that fits in memory never touches a file.
//!
//! ```text
//!  push ──▶ arena chunks + 16-byte slots ──(limit reached)──▶ sort slots ──▶ run file
//!                                                                             ⋮
//!  finish ──▶ runs > fan-in? merge consecutive groups into longer runs (a pass)
//!         ──▶ k-way heap merge of the remaining runs ──▶ Sorted (key order)
//! ```
//!
//! Why it is built this way:
//! - Entries are copied into fixed-size chunks of one arena and sorted as
//!   16-byte slots (first 8 key bytes, arena position, lengths) with
//!   `sort_unstable_by`: no allocation per entry, and most comparisons are
//!   settled by the prefix without touching the arena. Equal keys fall back
//!   to the arena position, which grows in push order (an empty entry takes
//!   one arena byte to keep positions unique), so the in-place sort keeps
//!   push order; the merge breaks ties by run number, and runs are
//!   numbered and merged in push order, so equal keys stay in push order
//!   throughout.
//! - Memory is accounted by capacity, not length, and grows only in steps
//!   that are checked against the limit first. The accounted bytes are the
//!   arena chunks, the chunk table, the slots (16 bytes per entry), the I/O
//!   block buffer, and each run reader (its block buffer, its struct and its
//!   heap slot). Their sum never exceeds the limit (raised to at least
//!   [`MIN_MEMORY_LIMIT`]); [`SortStats::peak_memory`] reports its
//!   high-water mark. Not counted: constant-size structs, and about 100
//!   bytes of bookkeeping per run (file handle, name) — 1,000 runs of a
//!   16 MiB limit, 16 GB of input, cost 100 KB.
//! - Run files are written in fixed-size blocks (the block size is the limit
//!   / 16 rounded down to a power of two, between 256 bytes and 64 KiB), each
//!   with a crc32c, so a damaged temporary file is a
//!   [`StorageError::CorruptTemp`] error rather than wrong output. Records
//!   never span blocks, which bounds an entry to a block less its headers
//!   ([`ExternalSorter::max_entry_size`], 65,520 bytes at 16 MiB).
//! - The merge holds one block per run; when there are more runs than the
//!   limit can hold blocks for, intermediate passes merge groups of
//!   consecutive runs into longer runs first.
//! - All file I/O goes through [`Backend`], so fault tests reach it. Run
//!   files are never synced: they need to survive no crash. Their names,
//!   `folio-sort-<pid>-<sorter>-<run>.tmp`, are unique within the process
//!   and created with `CreateNew`, and they are removed as soon as they have
//!   been merged, when the sorted output is exhausted, and when the sorter
//!   or its output is dropped, on error too. A crash leaves them behind;
//!   [`remove_stale_runs`], run at start-up by the owner of the temporary
//!   directory, removes those of processes that no longer exist (the
//!   directory may be shared: the system's temporary directory, or one
//!   used by a second server).
//!
//! The temporary-file format is specified in design.md §8.2.

use crate::backend::{read_exact_at, write_all_at};
use crate::page::{get_u16, get_u32, put_u16, put_u32};
use crate::{Backend, FileHandle, OpenMode, StorageError, StorageResult};
use std::io;
use std::mem::size_of;
use std::path::{Path, PathBuf};
use std::sync::atomic::{self, AtomicU64};
use std::sync::Arc;

/// The smallest memory limit; lower settings are raised to it.
pub const MIN_MEMORY_LIMIT: usize = MIN_BLOCK * BLOCKS_PER_LIMIT;

const MIN_BLOCK: usize = 256;
const MAX_BLOCK: usize = 64 * 1024;
/// The block size is the memory limit divided by this (rounded down to a
/// power of two), so a merge can read about ten runs even at the minimum.
const BLOCKS_PER_LIMIT: usize = 16;
/// Block header: crc32c u32, record bytes u32, record count u32.
const BLOCK_HDR: usize = 12;
/// Record header: key length u16, value length u16.
const RECORD_HDR: usize = 4;
/// Arena positions are u32.
const MAX_ARENA: usize = 1 << 32;
/// Slots the index starts with.
const MIN_SLOTS: usize = 64;

/// Numbers sorters within the process, for unique file names.
static NEXT_SORTER: AtomicU64 = AtomicU64::new(0);

/// What a sort did, for tuning and tests.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SortStats {
    /// Entries pushed.
    pub entries: u64,
    /// Sorted runs written from memory to temporary files.
    pub runs_spilled: u64,
    /// Intermediate merge passes (0 if all runs could be merged at once).
    pub merge_passes: u64,
    /// Bytes written to temporary files by spills and merge passes.
    pub bytes_written: u64,
    /// High-water mark of the accounted memory (see the module docs).
    pub peak_memory: usize,
    /// The memory limit in effect.
    pub memory_limit: usize,
}

/// Sizes derived from the memory limit.
#[derive(Clone, Copy, Debug)]
struct Geometry {
    limit: usize,
    /// Power of two.
    block: usize,
}

impl Geometry {
    fn new(memory_limit: usize) -> Geometry {
        let limit = memory_limit.max(MIN_MEMORY_LIMIT);
        let want = (limit / BLOCKS_PER_LIMIT).clamp(MIN_BLOCK, MAX_BLOCK);
        let block = 1 << (usize::BITS - 1 - want.leading_zeros());
        Geometry { limit, block }
    }

    fn max_entry(&self) -> usize {
        self.block - BLOCK_HDR - RECORD_HDR
    }

    /// Memory for the in-memory buffer: the limit less the block buffer
    /// that a spill writes through.
    fn buffer_budget(&self) -> usize {
        self.limit - self.block
    }

    /// Accounted bytes of one run reader in a merge.
    fn reader_cost(&self) -> usize {
        self.block + size_of::<RunReader>() + size_of::<u32>()
    }

    /// Runs one merge can read at once, next to one output block.
    fn fan_in(&self) -> usize {
        let n = (self.limit - self.block) / self.reader_cost();
        debug_assert!(n >= 2, "fan-in {n}");
        n
    }
}

/// Accounted memory and its high-water mark.
struct Meter {
    limit: usize,
    current: usize,
    peak: usize,
}

impl Meter {
    fn grow(&mut self, bytes: usize) {
        self.current += bytes;
        self.peak = self.peak.max(self.current);
        debug_assert!(
            self.current <= self.limit,
            "{} bytes held, limit {}",
            self.current,
            self.limit
        );
    }

    fn shrink(&mut self, bytes: usize) {
        self.current -= bytes;
    }
}

fn io_error(path: &Path, e: io::Error) -> StorageError {
    StorageError::io(path.display().to_string(), e)
}

fn corrupt(path: &Path, offset: u64, reason: impl Into<String>) -> StorageError {
    StorageError::CorruptTemp {
        file: path.display().to_string(),
        offset,
        reason: reason.into(),
    }
}

// ------------------------------------------------------------ memory buffer

/// One buffered entry: the first 8 key bytes (big-endian, zero-padded, so
/// they order like the key), and where the key and value are in the arena.
#[derive(Clone, Copy, Debug)]
struct Slot {
    prefix: u64,
    pos: u32,
    klen: u16,
    vlen: u16,
}

fn key_prefix(key: &[u8]) -> u64 {
    let mut p = [0u8; 8];
    let n = key.len().min(8);
    p[..n].copy_from_slice(&key[..n]);
    u64::from_be_bytes(p)
}

/// Entries in memory: key+value bytes in fixed-size chunks (an entry never
/// spans two), and one slot per entry.
struct Buffer {
    chunk_size: usize,
    /// Allocated once with room for every chunk the budget allows.
    chunks: Vec<Vec<u8>>,
    /// Chunks in use; entries go to `chunks[used - 1]`. Chunks past it are
    /// kept from earlier runs for reuse.
    used: usize,
    slots: Vec<Slot>,
}

impl Buffer {
    fn new(chunk_size: usize, budget: usize) -> Buffer {
        Buffer {
            chunk_size,
            chunks: Vec::with_capacity(budget.min(MAX_ARENA) / chunk_size),
            used: 0,
            slots: Vec::new(),
        }
    }

    /// Accounted bytes: capacities, not lengths.
    fn held(&self) -> usize {
        self.chunks.capacity() * size_of::<Vec<u8>>()
            + self.chunks.iter().map(Vec::capacity).sum::<usize>()
            + self.slots.capacity() * size_of::<Slot>()
    }

    fn is_empty(&self) -> bool {
        self.slots.is_empty()
    }

    /// Makes room for an entry of `len` bytes and its slot, growing within
    /// `budget`. Returns the bytes grown, or `None` if the budget does not
    /// allow it (time to spill).
    fn reserve(&mut self, len: usize, budget: usize) -> Option<usize> {
        let len = arena_len(len);
        let need_chunk = self.used == 0 || self.chunks[self.used - 1].len() + len > self.chunk_size;
        let need_slot = self.slots.len() == self.slots.capacity();
        if !need_chunk && !need_slot {
            return Some(0);
        }
        let before = self.held();
        let mut after = before;
        if need_chunk {
            let new_chunk = self.used == self.chunks.len();
            if (new_chunk && self.used == self.chunks.capacity())
                || (self.used + 1) * self.chunk_size > MAX_ARENA
            {
                return None;
            }
            if new_chunk {
                after += self.chunk_size;
            }
        }
        let mut slot_cap = self.slots.capacity();
        if need_slot {
            let fit = budget.saturating_sub(after) / size_of::<Slot>();
            slot_cap = self.next_slot_capacity(len, budget).min(slot_cap + fit);
            if slot_cap == self.slots.len() {
                return None;
            }
            after += (slot_cap - self.slots.capacity()) * size_of::<Slot>();
        }
        if after > budget {
            return None;
        }
        if need_chunk {
            if self.used == self.chunks.len() {
                self.chunks.push(Vec::with_capacity(self.chunk_size));
            } else {
                self.chunks[self.used].clear();
            }
            self.used += 1;
        }
        if need_slot {
            self.slots.reserve_exact(slot_cap - self.slots.len());
        }
        Some(self.held() - before)
    }

    /// How many slots to grow to: double, but no more than the entries of
    /// the average size so far that the budget can hold (so that slots do
    /// not crowd out entries and force an early spill), and at least an
    /// eighth more, to keep reallocations rare.
    fn next_slot_capacity(&self, len: usize, budget: usize) -> usize {
        let cap = self.slots.capacity();
        let arena = match self.used {
            0 => 0,
            n => (n - 1) * self.chunk_size + self.chunks[n - 1].len(),
        };
        let avg = (arena + len) / (self.slots.len() + 1);
        let estimate = budget / (avg + size_of::<Slot>());
        (2 * cap).min(estimate).max(cap + cap / 8).max(MIN_SLOTS)
    }

    /// Appends an entry; [`Buffer::reserve`] made room for it.
    fn append(&mut self, key: &[u8], value: &[u8]) {
        let chunk = &mut self.chunks[self.used - 1];
        let pos = (self.used - 1) * self.chunk_size + chunk.len();
        chunk.extend_from_slice(key);
        chunk.extend_from_slice(value);
        if key.is_empty() && value.is_empty() {
            chunk.push(0);
        }
        self.slots.push(Slot {
            prefix: key_prefix(key),
            pos: pos as u32,
            klen: key.len() as u16,
            vlen: value.len() as u16,
        });
    }

    fn entry(&self, slot: Slot) -> (&[u8], &[u8]) {
        entry_in(&self.chunks, self.chunk_size, slot)
    }

    /// Sorts the slots by key, equal keys in push order.
    fn sort(&mut self) {
        let (chunks, size) = (&self.chunks, self.chunk_size);
        self.slots.sort_unstable_by(|a, b| {
            a.prefix
                .cmp(&b.prefix)
                .then_with(|| {
                    entry_in(chunks, size, *a)
                        .0
                        .cmp(entry_in(chunks, size, *b).0)
                })
                .then(a.pos.cmp(&b.pos))
        });
    }

    /// Forgets the entries, keeping the memory for the next run.
    fn reset(&mut self) {
        self.used = 0;
        self.slots.clear();
    }
}

/// Arena bytes of an entry of `len` key + value bytes. An empty entry takes
/// one byte, so that positions are unique and order entries by push.
fn arena_len(len: usize) -> usize {
    len.max(1)
}

fn entry_in(chunks: &[Vec<u8>], chunk_size: usize, slot: Slot) -> (&[u8], &[u8]) {
    let pos = slot.pos as usize;
    let chunk = &chunks[pos / chunk_size];
    let at = pos % chunk_size;
    let (k, v) = (slot.klen as usize, slot.vlen as usize);
    (&chunk[at..at + k], &chunk[at + k..at + k + v])
}

// ------------------------------------------------------------ run files

/// The temporary files of one sort: created with unique names, removed when
/// merged, and all removed on drop.
struct TempFiles {
    backend: Arc<dyn Backend>,
    dir: PathBuf,
    sorter: u64,
    next_run: u64,
    dir_ready: bool,
    live: Vec<PathBuf>,
}

impl TempFiles {
    fn new(backend: Arc<dyn Backend>, dir: PathBuf) -> TempFiles {
        TempFiles {
            backend,
            dir,
            sorter: NEXT_SORTER.fetch_add(1, atomic::Ordering::Relaxed),
            next_run: 0,
            dir_ready: false,
            live: Vec::new(),
        }
    }

    /// A new, empty run file. A name left behind by an earlier process
    /// with the same pid is skipped, not reused.
    fn create(&mut self) -> StorageResult<(PathBuf, Arc<dyn FileHandle>)> {
        if !self.dir_ready {
            self.backend
                .create_dir_all(&self.dir)
                .map_err(|e| io_error(&self.dir, e))?;
            self.dir_ready = true;
        }
        loop {
            let name = format!(
                "folio-sort-{}-{}-{}.tmp",
                std::process::id(),
                self.sorter,
                self.next_run
            );
            self.next_run += 1;
            let path = self.dir.join(name);
            match self.backend.open(&path, OpenMode::CreateNew) {
                Ok(f) => {
                    self.live.push(path.clone());
                    return Ok((path, f));
                }
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists => continue,
                Err(e) => return Err(io_error(&path, e)),
            }
        }
    }

    /// Removes one file; if that fails, drop will try again.
    fn remove(&mut self, path: &Path) {
        if let Some(i) = self.live.iter().position(|p| p == path) {
            if self.backend.remove_file(path).is_ok() {
                self.live.swap_remove(i);
            }
        }
    }

    fn remove_all(&mut self) {
        self.live
            .retain(|p| self.backend.remove_file(p).is_err() && self.backend.exists(p));
    }
}

impl Drop for TempFiles {
    fn drop(&mut self) {
        self.remove_all();
    }
}

/// A finished run file.
struct Run {
    path: PathBuf,
    file: Arc<dyn FileHandle>,
    entries: u64,
    blocks: u64,
}

/// Writes records into blocks and blocks to a run file.
struct RunWriter<'b> {
    run: Run,
    block: &'b mut [u8],
    /// Record bytes in the current block.
    used: usize,
    count: u32,
}

impl<'b> RunWriter<'b> {
    fn new(path: PathBuf, file: Arc<dyn FileHandle>, block: &'b mut [u8]) -> RunWriter<'b> {
        RunWriter {
            run: Run {
                path,
                file,
                entries: 0,
                blocks: 0,
            },
            block,
            used: 0,
            count: 0,
        }
    }

    fn push(&mut self, key: &[u8], value: &[u8]) -> StorageResult<()> {
        let len = RECORD_HDR + key.len() + value.len();
        if BLOCK_HDR + self.used + len > self.block.len() {
            self.flush()?;
        }
        let at = BLOCK_HDR + self.used;
        let b = &mut *self.block;
        put_u16(b, at, key.len() as u16);
        put_u16(b, at + 2, value.len() as u16);
        b[at + RECORD_HDR..at + RECORD_HDR + key.len()].copy_from_slice(key);
        b[at + RECORD_HDR + key.len()..at + len].copy_from_slice(value);
        self.used += len;
        self.count += 1;
        self.run.entries += 1;
        Ok(())
    }

    /// Seals the current block (zero padding, header, checksum) and writes
    /// it at its place in the file.
    fn flush(&mut self) -> StorageResult<()> {
        if self.count == 0 {
            return Ok(());
        }
        let b = &mut *self.block;
        b[BLOCK_HDR + self.used..].fill(0);
        put_u32(b, 4, self.used as u32);
        put_u32(b, 8, self.count);
        let crc = crc32c::crc32c(&b[4..]);
        put_u32(b, 0, crc);
        let offset = self.run.blocks * b.len() as u64;
        write_all_at(self.run.file.as_ref(), b, offset).map_err(|e| io_error(&self.run.path, e))?;
        self.run.blocks += 1;
        self.used = 0;
        self.count = 0;
        Ok(())
    }

    /// The complete run and the bytes written.
    fn finish(mut self) -> StorageResult<(Run, u64)> {
        self.flush()?;
        let bytes = self.run.blocks * self.block.len() as u64;
        Ok((self.run, bytes))
    }
}

/// Reads a run back block by block, verifying each block.
struct RunReader {
    run: Run,
    buf: Vec<u8>,
    next_block: u64,
    /// Next record within `buf`, end of the records, records left.
    pos: usize,
    end: usize,
    left: u32,
    /// The current record.
    key_at: usize,
    klen: usize,
    vlen: usize,
    /// Records read so far.
    seen: u64,
}

impl RunReader {
    fn new(run: Run, block: usize) -> RunReader {
        RunReader {
            run,
            buf: vec![0; block],
            next_block: 0,
            pos: 0,
            end: 0,
            left: 0,
            key_at: 0,
            klen: 0,
            vlen: 0,
            seen: 0,
        }
    }

    fn offset(&self, in_block: usize) -> u64 {
        self.next_block.saturating_sub(1) * self.buf.len() as u64 + in_block as u64
    }

    /// Moves to the next record; false at the end of the run.
    fn advance(&mut self) -> StorageResult<bool> {
        if self.left == 0 {
            if self.next_block == self.run.blocks {
                if self.seen != self.run.entries {
                    let end = self.run.blocks * self.buf.len() as u64;
                    return Err(corrupt(
                        &self.run.path,
                        end,
                        format!(
                            "run ends after {} of {} records",
                            self.seen, self.run.entries
                        ),
                    ));
                }
                return Ok(false);
            }
            self.load_block()?;
        }
        let at = self.pos;
        if at + RECORD_HDR > self.end {
            return Err(corrupt(
                &self.run.path,
                self.offset(at),
                "record header past the end of the block",
            ));
        }
        let (klen, vlen) = (
            get_u16(&self.buf, at) as usize,
            get_u16(&self.buf, at + 2) as usize,
        );
        let next = at + RECORD_HDR + klen + vlen;
        if next > self.end {
            return Err(corrupt(
                &self.run.path,
                self.offset(at),
                "record past the end of the block",
            ));
        }
        (self.key_at, self.klen, self.vlen) = (at + RECORD_HDR, klen, vlen);
        self.pos = next;
        self.left -= 1;
        self.seen += 1;
        if self.left == 0 && self.pos != self.end {
            return Err(corrupt(
                &self.run.path,
                self.offset(self.pos),
                "bytes after the last record of the block",
            ));
        }
        if self.seen > self.run.entries {
            return Err(corrupt(
                &self.run.path,
                self.offset(at),
                "more records than were written",
            ));
        }
        Ok(true)
    }

    fn load_block(&mut self) -> StorageResult<()> {
        let offset = self.next_block * self.buf.len() as u64;
        read_exact_at(self.run.file.as_ref(), &mut self.buf, offset)
            .map_err(|e| io_error(&self.run.path, e))?;
        if get_u32(&self.buf, 0) != crc32c::crc32c(&self.buf[4..]) {
            return Err(corrupt(&self.run.path, offset, "block checksum mismatch"));
        }
        let (used, count) = (get_u32(&self.buf, 4) as usize, get_u32(&self.buf, 8));
        if count == 0 || used > self.buf.len() - BLOCK_HDR {
            return Err(corrupt(&self.run.path, offset, "block header out of range"));
        }
        (self.pos, self.end, self.left) = (BLOCK_HDR, BLOCK_HDR + used, count);
        self.next_block += 1;
        Ok(())
    }

    fn key(&self) -> &[u8] {
        &self.buf[self.key_at..self.key_at + self.klen]
    }

    fn value(&self) -> &[u8] {
        let at = self.key_at + self.klen;
        &self.buf[at..at + self.vlen]
    }
}

/// A k-way merge of runs: a binary min-heap of reader indexes ordered by
/// (current key, run number). The top reader is advanced lazily, on the
/// next step, so the current entry can be lent out of its block.
struct Merger {
    readers: Vec<RunReader>,
    heap: Vec<u32>,
    advance_top: bool,
}

impl Merger {
    fn new(runs: Vec<Run>, block: usize) -> StorageResult<Merger> {
        let mut readers = Vec::with_capacity(runs.len());
        for run in runs {
            let mut r = RunReader::new(run, block);
            if !r.advance()? {
                return Err(corrupt(&r.run.path, 0, "empty run"));
            }
            readers.push(r);
        }
        let mut m = Merger {
            heap: (0..readers.len() as u32).collect(),
            readers,
            advance_top: false,
        };
        for i in (0..m.heap.len() / 2).rev() {
            m.sift_down(i);
        }
        Ok(m)
    }

    fn less(&self, a: u32, b: u32) -> bool {
        let (ka, kb) = (
            self.readers[a as usize].key(),
            self.readers[b as usize].key(),
        );
        ka < kb || (ka == kb && a < b)
    }

    fn sift_down(&mut self, mut i: usize) {
        let n = self.heap.len();
        loop {
            let left = 2 * i + 1;
            if left >= n {
                return;
            }
            let right = left + 1;
            let child = if right < n && self.less(self.heap[right], self.heap[left]) {
                right
            } else {
                left
            };
            if !self.less(self.heap[child], self.heap[i]) {
                return;
            }
            self.heap.swap(i, child);
            i = child;
        }
    }

    /// Moves to the next entry in key order; false when all runs are done.
    fn step(&mut self) -> StorageResult<bool> {
        if std::mem::take(&mut self.advance_top) {
            let top = self.heap[0] as usize;
            if !self.readers[top].advance()? {
                self.heap.swap_remove(0);
            }
            self.sift_down(0);
        }
        self.advance_top = !self.heap.is_empty();
        Ok(self.advance_top)
    }

    /// The entry [`Merger::step`] moved to.
    fn current(&self) -> (&[u8], &[u8]) {
        let r = &self.readers[self.heap[0] as usize];
        (r.key(), r.value())
    }
}

// ------------------------------------------------------------ the sorter

/// Sorts (key, value) pairs in bounded memory, spilling sorted runs to
/// temporary files. See the module documentation for the memory bound and
/// the file handling.
pub struct ExternalSorter {
    geo: Geometry,
    buf: Buffer,
    /// The I/O block that spills and merge passes write through; empty
    /// until the first spill.
    block: Vec<u8>,
    runs: Vec<Run>,
    meter: Meter,
    stats: SortStats,
    temp: TempFiles,
}

impl ExternalSorter {
    /// A sorter holding at most `memory_limit_bytes` (at least
    /// [`MIN_MEMORY_LIMIT`]) in memory, with run files in `temp_dir`
    /// (created on the first spill) through `backend`.
    pub fn new(backend: Arc<dyn Backend>, temp_dir: PathBuf, memory_limit_bytes: usize) -> Self {
        let geo = Geometry::new(memory_limit_bytes);
        let buf = Buffer::new(geo.block, geo.buffer_budget());
        let mut meter = Meter {
            limit: geo.limit,
            current: 0,
            peak: 0,
        };
        meter.grow(buf.held());
        ExternalSorter {
            geo,
            buf,
            block: Vec::new(),
            runs: Vec::new(),
            meter,
            stats: SortStats {
                memory_limit: geo.limit,
                ..SortStats::default()
            },
            temp: TempFiles::new(backend, temp_dir),
        }
    }

    /// The largest key + value this sorter accepts.
    pub fn max_entry_size(&self) -> usize {
        self.geo.max_entry()
    }

    /// What the sort did so far.
    pub fn stats(&self) -> SortStats {
        SortStats {
            peak_memory: self.meter.peak,
            ..self.stats
        }
    }

    /// Adds an entry. An entry over [`ExternalSorter::max_entry_size`] is
    /// [`StorageError::TooLarge`]. When memory is full the buffered entries
    /// are spilled first; if that fails the entries stay buffered and the
    /// sorter stays usable.
    pub fn push(&mut self, key: &[u8], value: &[u8]) -> StorageResult<()> {
        let len = key.len() + value.len();
        if len > self.geo.max_entry() {
            return Err(StorageError::TooLarge {
                size: len,
                limit: self.geo.max_entry(),
            });
        }
        loop {
            if let Some(grown) = self.buf.reserve(len, self.geo.buffer_budget()) {
                self.meter.grow(grown);
                break;
            }
            if self.buf.is_empty() {
                return Err(StorageError::Invalid(format!(
                    "sort memory limit of {} bytes cannot hold one entry",
                    self.geo.limit
                )));
            }
            self.spill()?;
        }
        self.buf.append(key, value);
        self.stats.entries += 1;
        Ok(())
    }

    /// Ends the input and returns the entries in key order.
    pub fn finish(mut self) -> StorageResult<Sorted> {
        if self.runs.is_empty() {
            self.buf.sort();
            return Ok(Sorted {
                stats: self.stats(),
                state: SortedState::Memory {
                    buf: self.buf,
                    next: 0,
                },
                temp: self.temp,
            });
        }
        self.spill()?;
        self.meter.shrink(self.buf.held());
        self.buf = Buffer::new(self.geo.block, 0);
        while self.runs.len() > self.geo.fan_in() {
            self.merge_pass()?;
        }
        self.meter.shrink(self.block.len());
        self.block = Vec::new();
        self.meter.grow(self.runs.len() * self.geo.reader_cost());
        let merger = Merger::new(std::mem::take(&mut self.runs), self.geo.block)?;
        Ok(Sorted {
            stats: self.stats(),
            state: SortedState::Merging(merger),
            temp: self.temp,
        })
    }

    /// Sorts the buffered entries and writes them as a new run.
    fn spill(&mut self) -> StorageResult<()> {
        if self.buf.is_empty() {
            return Ok(());
        }
        self.ensure_block();
        self.buf.sort();
        let (path, file) = self.temp.create()?;
        let mut w = RunWriter::new(path, file, &mut self.block);
        for &slot in &self.buf.slots {
            let (k, v) = self.buf.entry(slot);
            w.push(k, v)?;
        }
        let (run, bytes) = w.finish()?;
        self.stats.runs_spilled += 1;
        self.stats.bytes_written += bytes;
        self.runs.push(run);
        self.buf.reset();
        Ok(())
    }

    fn ensure_block(&mut self) {
        if self.block.is_empty() {
            self.block = vec![0; self.geo.block];
            self.meter.grow(self.block.len());
        }
    }

    /// Merges consecutive groups of fan-in runs into one run each, keeping
    /// run order (and so the push order of equal keys).
    fn merge_pass(&mut self) -> StorageResult<()> {
        let fan_in = self.geo.fan_in();
        let mut rest = std::mem::take(&mut self.runs).into_iter().peekable();
        let mut out = Vec::new();
        while rest.peek().is_some() {
            let group: Vec<Run> = rest.by_ref().take(fan_in).collect();
            if group.len() == 1 {
                out.extend(group);
                continue;
            }
            let inputs: Vec<PathBuf> = group.iter().map(|r| r.path.clone()).collect();
            let cost = group.len() * self.geo.reader_cost();
            self.meter.grow(cost);
            let (path, file) = self.temp.create()?;
            let mut merger = Merger::new(group, self.geo.block)?;
            let mut w = RunWriter::new(path, file, &mut self.block);
            while merger.step()? {
                let (k, v) = merger.current();
                w.push(k, v)?;
            }
            let (run, bytes) = w.finish()?;
            drop(merger);
            self.meter.shrink(cost);
            self.stats.bytes_written += bytes;
            for p in &inputs {
                self.temp.remove(p);
            }
            out.push(run);
        }
        self.runs = out;
        self.stats.merge_passes += 1;
        Ok(())
    }
}

// ------------------------------------------------------------ output

/// Where the sorted output comes from.
enum SortedState {
    /// Everything fit in memory: the sorted buffer and the next slot.
    Memory { buf: Buffer, next: usize },
    /// Runs on disk, merged as the output is read.
    Merging(Merger),
    /// Exhausted, or failed.
    Done,
}

/// The sorted entries, from [`ExternalSorter::finish`]. Read them without
/// copying through [`Sorted::next_entry`], or as an iterator of owned pairs.
/// After an error the output ends. Temporary files are removed when the
/// output is exhausted, fails, or is dropped.
pub struct Sorted {
    stats: SortStats,
    state: SortedState,
    // Declared after `state`: the files are closed before they are removed.
    temp: TempFiles,
}

impl Sorted {
    /// What the sort did.
    pub fn stats(&self) -> SortStats {
        self.stats
    }

    /// The next entry in key order, borrowed until the next call.
    pub fn next_entry(&mut self) -> StorageResult<Option<(&[u8], &[u8])>> {
        match self.step() {
            Ok(true) => Ok(Some(self.current())),
            Ok(false) => {
                self.end();
                Ok(None)
            }
            Err(e) => {
                self.end();
                Err(e)
            }
        }
    }

    fn step(&mut self) -> StorageResult<bool> {
        match &mut self.state {
            SortedState::Memory { buf, next } => {
                let more = *next < buf.slots.len();
                *next += usize::from(more);
                Ok(more)
            }
            SortedState::Merging(m) => m.step(),
            SortedState::Done => Ok(false),
        }
    }

    fn current(&self) -> (&[u8], &[u8]) {
        match &self.state {
            SortedState::Memory { buf, next } => buf.entry(buf.slots[*next - 1]),
            SortedState::Merging(m) => m.current(),
            SortedState::Done => unreachable!("current() follows a successful step()"),
        }
    }

    /// Releases the memory and the temporary files.
    fn end(&mut self) {
        self.state = SortedState::Done;
        self.temp.remove_all();
    }
}

impl Iterator for Sorted {
    type Item = StorageResult<(Vec<u8>, Vec<u8>)>;

    fn next(&mut self) -> Option<Self::Item> {
        self.next_entry()
            .map(|e| e.map(|(k, v)| (k.to_vec(), v.to_vec())))
            .transpose()
    }
}

/// Removes the run files a crashed process left in `dir`: every
/// `folio-sort-<pid>-*.tmp` whose process no longer exists. Files of live
/// processes (this one, another server sharing the directory) are left
/// alone. Returns how many were removed; a missing directory has none.
pub fn remove_stale_runs(backend: &dyn Backend, dir: &Path) -> io::Result<usize> {
    if !backend.is_dir(dir) {
        return Ok(0);
    }
    let mut removed = 0;
    for path in backend.read_dir(dir)? {
        let stale = run_file_pid(&path).is_some_and(|pid| !process_exists(pid));
        if stale {
            match backend.remove_file(&path) {
                Ok(()) => removed += 1,
                // Another process cleaning the same directory got there first.
                Err(e) if e.kind() == io::ErrorKind::NotFound => {}
                Err(e) => return Err(e),
            }
        }
    }
    Ok(removed)
}

/// The pid in a run file's name, or `None` for any other file.
fn run_file_pid(path: &Path) -> Option<u32> {
    let name = path.file_name()?.to_str()?;
    let rest = name.strip_prefix("folio-sort-")?.strip_suffix(".tmp")?;
    let parts: Vec<&str> = rest.split('-').collect();
    let [pid, sorter, run] = parts[..] else {
        return None;
    };
    let numbered = sorter.parse::<u64>().is_ok() && run.parse::<u64>().is_ok();
    numbered.then(|| pid.parse().ok()).flatten()
}

/// Whether a process with this pid exists (signal 0 checks without
/// sending; EPERM means it exists but belongs to someone else).
fn process_exists(pid: u32) -> bool {
    let Ok(pid) = libc::pid_t::try_from(pid) else {
        return false;
    };
    if pid <= 0 {
        return false;
    }
    // SAFETY: kill with signal 0 only checks for the process; it has no
    // memory-safety preconditions.
    let r = unsafe { libc::kill(pid, 0) };
    r == 0 || io::Error::last_os_error().raw_os_error() == Some(libc::EPERM)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backend::{FaultBackend, FaultKind, FaultOp, FaultRule, MemBackend};
    use proptest::prelude::*;

    type Entries = Vec<(Vec<u8>, Vec<u8>)>;

    fn dir() -> PathBuf {
        PathBuf::from("tmp/sort")
    }

    /// Files left in the temporary directory.
    fn leftovers(b: &dyn Backend) -> Vec<PathBuf> {
        b.read_dir(&dir()).unwrap_or_default()
    }

    fn sort_all(
        backend: Arc<dyn Backend>,
        entries: &Entries,
        limit: usize,
    ) -> StorageResult<(Entries, SortStats)> {
        let mut s = ExternalSorter::new(backend, dir(), limit);
        for (k, v) in entries {
            s.push(k, v)?;
        }
        let sorted = s.finish()?;
        let stats = sorted.stats();
        Ok((sorted.collect::<StorageResult<_>>()?, stats))
    }

    /// What the sorter must produce: a stable sort by key.
    fn expected(entries: &Entries) -> Entries {
        let mut want = entries.clone();
        want.sort_by(|a, b| a.0.cmp(&b.0));
        want
    }

    /// `n` entries with keys of about 20 bytes, some equal.
    fn sample(n: u32) -> Entries {
        (0..n)
            .map(|i| {
                let k = format!("key-{:08}", (i as u64 * 7919) % (n as u64 / 2 + 1));
                (k.into_bytes(), format!("value {i}").into_bytes())
            })
            .collect()
    }

    fn entry() -> impl Strategy<Value = (Vec<u8>, Vec<u8>)> {
        let key = prop_oneof![
            proptest::collection::vec(0u8..3, 0..5),
            proptest::collection::vec(any::<u8>(), 0..40),
        ];
        (key, proptest::collection::vec(any::<u8>(), 0..60))
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]
        #[test]
        fn sorts_like_a_stable_sort(
            entries in proptest::collection::vec(entry(), 0..3000),
            limit in prop_oneof![Just(0usize), Just(MIN_MEMORY_LIMIT), 4096usize..40_000, Just(1 << 20)],
        ) {
            let mem = MemBackend::new();
            let (got, stats) = sort_all(Arc::new(mem.clone()), &entries, limit).unwrap();
            prop_assert_eq!(&got, &expected(&entries));
            prop_assert_eq!(stats.entries, entries.len() as u64);
            prop_assert!(stats.peak_memory <= stats.memory_limit);
            prop_assert!(stats.memory_limit >= limit.max(MIN_MEMORY_LIMIT));
            prop_assert!(leftovers(&mem).is_empty());
        }

        #[test]
        fn damaged_blocks_with_valid_checksums_are_errors_not_panics(
            flips in proptest::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 1..6),
        ) {
            let mem = MemBackend::new();
            let mut s = ExternalSorter::new(Arc::new(mem.clone()), dir(), MIN_MEMORY_LIMIT);
            for (k, v) in sample(400) {
                s.push(&k, &v).unwrap();
            }
            let block = s.geo.block;
            let runs: Vec<PathBuf> = s.runs.iter().map(|r| r.path.clone()).collect();
            for (i, (at, x)) in flips.iter().enumerate() {
                let path = &runs[i % runs.len()];
                let f = mem.open(path, OpenMode::Existing).unwrap();
                let mut bytes = mem.file_bytes(path).unwrap();
                let off = at.index(bytes.len() - 4) + 4;
                bytes[off] ^= x | 1;
                let start = off / block * block;
                let crc = crc32c::crc32c(&bytes[start + 4..start + block]);
                put_u32(&mut bytes[start..], 0, crc);
                f.write_at(&bytes, 0).unwrap();
            }
            if let Ok(sorted) = s.finish() {
                let _ = sorted.count();
            }
            prop_assert!(leftovers(&mem).is_empty());
        }
    }

    #[test]
    fn input_that_fits_writes_no_file() {
        let mem = MemBackend::new();
        let entries = sample(1000);
        let (got, stats) = sort_all(Arc::new(mem.clone()), &entries, 1 << 20).unwrap();
        assert_eq!(got, expected(&entries));
        assert_eq!((stats.runs_spilled, stats.bytes_written), (0, 0));
        assert!(!mem.exists(&dir()), "the directory is not even created");
    }

    #[test]
    fn many_runs_take_intermediate_passes_within_the_limit() {
        let mem = MemBackend::new();
        let entries = sample(30_000);
        let (got, stats) = sort_all(Arc::new(mem.clone()), &entries, MIN_MEMORY_LIMIT).unwrap();
        assert_eq!(got, expected(&entries));
        assert!(stats.runs_spilled > 100, "{stats:?}");
        assert!(stats.merge_passes >= 2, "{stats:?}");
        assert!(stats.peak_memory <= MIN_MEMORY_LIMIT, "{stats:?}");
        assert!(leftovers(&mem).is_empty());
    }

    #[test]
    fn memory_is_used_up_to_the_limit() {
        let entries = sample(50_000);
        let limit = 256 * 1024;
        let (_, stats) = sort_all(Arc::new(MemBackend::new()), &entries, limit).unwrap();
        assert!(stats.peak_memory <= limit);
        assert!(stats.peak_memory > limit * 9 / 10, "{stats:?}");
        // About 36 bytes per entry (20 + 16 bytes of slot): 7,000 a run.
        assert!(stats.runs_spilled <= 50_000 / 6000 + 1, "{stats:?}");
    }

    #[test]
    fn equal_keys_keep_push_order_across_runs() {
        let entries: Entries = (0u32..5000)
            .map(|i| (vec![(i % 3) as u8], i.to_be_bytes().to_vec()))
            .collect();
        let (got, stats) =
            sort_all(Arc::new(MemBackend::new()), &entries, MIN_MEMORY_LIMIT).unwrap();
        assert!(stats.merge_passes >= 1);
        assert_eq!(got, expected(&entries));
    }

    #[test]
    fn empty_keys_and_values_keep_push_order() {
        let entries: Entries = (0u32..4000)
            .map(|i| match i % 3 {
                0 => (vec![], vec![]),
                1 => (vec![], i.to_be_bytes().to_vec()),
                _ => (vec![1], vec![]),
            })
            .collect();
        for limit in [MIN_MEMORY_LIMIT, 1 << 20] {
            let (got, _) = sort_all(Arc::new(MemBackend::new()), &entries, limit).unwrap();
            assert_eq!(got, expected(&entries));
        }
    }

    #[test]
    fn next_entry_lends_the_same_entries_the_iterator_gives() {
        let mem: Arc<dyn Backend> = Arc::new(MemBackend::new());
        let entries = sample(3000);
        let mut s = ExternalSorter::new(mem, dir(), 8192);
        for (k, v) in &entries {
            s.push(k, v).unwrap();
        }
        let mut sorted = s.finish().unwrap();
        let mut got = Vec::new();
        while let Some((k, v)) = sorted.next_entry().unwrap() {
            got.push((k.to_vec(), v.to_vec()));
        }
        assert_eq!(got, expected(&entries));
        assert!(sorted.next_entry().unwrap().is_none());
    }

    #[test]
    fn entries_over_a_block_are_refused() {
        let mut s = ExternalSorter::new(Arc::new(MemBackend::new()), dir(), MIN_MEMORY_LIMIT);
        let max = s.max_entry_size();
        assert_eq!(max, 256 - BLOCK_HDR - RECORD_HDR);
        s.push(&[1; 100], &vec![2; max - 100]).unwrap();
        assert!(matches!(
            s.push(&[1; 100], &vec![2; max - 99]),
            Err(StorageError::TooLarge { .. })
        ));
        let big = ExternalSorter::new(Arc::new(MemBackend::new()), dir(), 16 << 20);
        assert_eq!(big.max_entry_size(), 65_520);
    }

    #[test]
    fn temp_file_names_are_unique_per_sorter_and_run() {
        let mem = MemBackend::new();
        let mut a = ExternalSorter::new(Arc::new(mem.clone()), dir(), MIN_MEMORY_LIMIT);
        let mut b = ExternalSorter::new(Arc::new(mem.clone()), dir(), MIN_MEMORY_LIMIT);
        for (k, v) in sample(500) {
            a.push(&k, &v).unwrap();
            b.push(&v, &k).unwrap();
        }
        let files = leftovers(&mem);
        assert_eq!(
            files.len() as u64,
            a.stats().runs_spilled + b.stats().runs_spilled
        );
        let name = files[0].file_name().unwrap().to_string_lossy().into_owned();
        assert!(
            name.starts_with(&format!("folio-sort-{}-", std::process::id())),
            "{name}"
        );
        assert!(name.ends_with(".tmp"));
        drop(a);
        assert_eq!(leftovers(&mem).len() as u64, b.stats().runs_spilled);
        drop(b);
        assert!(leftovers(&mem).is_empty());
    }

    #[test]
    fn a_name_left_by_an_earlier_process_is_skipped() {
        let mem = MemBackend::new();
        let s = ExternalSorter::new(Arc::new(mem.clone()), dir(), MIN_MEMORY_LIMIT);
        mem.create_dir_all(&dir()).unwrap();
        let stale = dir().join(format!(
            "folio-sort-{}-{}-0.tmp",
            std::process::id(),
            s.temp.sorter
        ));
        mem.set_file_bytes(&stale, b"old".to_vec());
        let entries = sample(400);
        let mut s = s;
        for (k, v) in &entries {
            s.push(k, v).unwrap();
        }
        let got: Entries = s.finish().unwrap().collect::<StorageResult<_>>().unwrap();
        assert_eq!(got, expected(&entries));
        assert_eq!(mem.file_bytes(&stale).unwrap(), b"old");
        assert_eq!(leftovers(&mem), vec![stale]);
    }

    #[test]
    fn dropping_the_sorter_or_its_output_midway_removes_temp_files() {
        let mem = MemBackend::new();
        let mut s = ExternalSorter::new(Arc::new(mem.clone()), dir(), MIN_MEMORY_LIMIT);
        for (k, v) in sample(2000) {
            s.push(&k, &v).unwrap();
        }
        assert!(!leftovers(&mem).is_empty());
        drop(s);
        assert!(leftovers(&mem).is_empty());

        let mut s = ExternalSorter::new(Arc::new(mem.clone()), dir(), MIN_MEMORY_LIMIT);
        for (k, v) in sample(2000) {
            s.push(&k, &v).unwrap();
        }
        let mut sorted = s.finish().unwrap();
        assert!(sorted.next_entry().unwrap().is_some());
        assert!(!leftovers(&mem).is_empty());
        drop(sorted);
        assert!(leftovers(&mem).is_empty());
    }

    /// Runs a sort of `entries` to the end; the first error, if any.
    fn run_to_end(backend: Arc<dyn Backend>, entries: &Entries) -> StorageResult<Entries> {
        sort_all(backend, entries, MIN_MEMORY_LIMIT).map(|(got, _)| got)
    }

    #[test]
    fn an_injected_write_or_open_fault_is_an_error_and_leaves_no_file() {
        let entries = sample(1500);
        let clean = FaultBackend::new(Arc::new(MemBackend::new()));
        let clean = Arc::new(clean);
        run_to_end(clean.clone(), &entries).unwrap();
        for (op, total) in [
            (FaultOp::Write, clean.count(FaultOp::Write)),
            (FaultOp::Open, clean.count(FaultOp::Open)),
        ] {
            assert!(total > 20, "{op:?}: {total}");
            for kind in [FaultKind::Eio, FaultKind::Enospc] {
                for nth in 1..=total {
                    let mem = MemBackend::new();
                    let fault = Arc::new(FaultBackend::new(Arc::new(mem.clone())));
                    fault.add_rule(FaultRule {
                        nth,
                        path_contains: Some("folio-sort-".into()),
                        ..FaultRule::new(op, kind)
                    });
                    let err = run_to_end(fault.clone(), &entries).unwrap_err();
                    assert!(
                        matches!(err, StorageError::Io { .. }),
                        "{op:?} {nth}: {err}"
                    );
                    assert_eq!(fault.injected(), 1);
                    assert!(leftovers(&mem).is_empty(), "{op:?} {nth}");
                }
            }
        }
    }

    #[test]
    fn short_writes_are_completed() {
        let entries = sample(1500);
        let fault = Arc::new(FaultBackend::new(Arc::new(MemBackend::new())));
        fault.add_rule(FaultRule {
            sticky: true,
            ..FaultRule::new(FaultOp::Write, FaultKind::ShortWrite)
        });
        assert_eq!(run_to_end(fault, &entries).unwrap(), expected(&entries));
    }

    /// Every read of a run failing (EIO) or coming back with a flipped bit
    /// is an error, never a wrong or short output, and leaves no file.
    #[test]
    fn an_injected_read_fault_is_an_error_and_leaves_no_file() {
        let entries = sample(1500);
        let clean = Arc::new(FaultBackend::new(Arc::new(MemBackend::new())));
        run_to_end(clean.clone(), &entries).unwrap();
        let total = clean.count(FaultOp::Read);
        assert!(total > 20, "{total} reads");
        for kind in [FaultKind::Eio, FaultKind::Corrupt] {
            for nth in 1..=total {
                let mem = MemBackend::new();
                let fault = Arc::new(FaultBackend::new(Arc::new(mem.clone())));
                fault.add_rule(FaultRule {
                    nth,
                    ..FaultRule::new(FaultOp::Read, kind)
                });
                let err = run_to_end(fault, &entries).unwrap_err();
                let expected = match kind {
                    FaultKind::Eio => matches!(err, StorageError::Io { .. }),
                    _ => matches!(err, StorageError::CorruptTemp { .. }),
                };
                assert!(expected, "{kind:?} on read {nth}: {err}");
                assert!(leftovers(&mem).is_empty(), "{kind:?} on read {nth}");
            }
        }
    }

    /// A sorter over `mem` with its runs spilled but not yet merged.
    fn spilled(mem: &MemBackend, entries: &Entries, limit: usize) -> ExternalSorter {
        let mut s = ExternalSorter::new(Arc::new(mem.clone()), dir(), limit);
        for (k, v) in entries {
            s.push(k, v).unwrap();
        }
        s
    }

    /// Merges to the end and returns the first error; checks that the
    /// output ends there and that no temporary file is left.
    fn first_error(s: ExternalSorter, mem: &MemBackend) -> StorageError {
        let err = match s.finish() {
            Err(e) => e,
            Ok(mut sorted) => loop {
                match sorted.next_entry() {
                    Ok(Some(_)) => continue,
                    Ok(None) => panic!("the damage went unnoticed"),
                    Err(e) => {
                        assert!(sorted.next_entry().unwrap().is_none(), "the output ends");
                        assert!(leftovers(mem).is_empty(), "files go with the error");
                        break e;
                    }
                }
            },
        };
        assert!(leftovers(mem).is_empty());
        err
    }

    #[test]
    fn a_flipped_bit_in_a_temp_file_is_detected() {
        for limit in [8192, 64 * 1024] {
            let mem = MemBackend::new();
            let s = spilled(&mem, &sample(3000), limit);
            let block = s.geo.block as u64;
            let run = &s.runs[0];
            assert!(run.blocks >= 3);
            let at = block * 2 + 100;
            let mut byte = [0u8];
            run.file.read_at(&mut byte, at).unwrap();
            run.file.write_at(&[byte[0] ^ 0x10], at).unwrap();
            let err = first_error(s, &mem);
            assert!(
                matches!(&err, StorageError::CorruptTemp { offset, reason, .. } if *offset == block * 2 && reason.contains("checksum")),
                "{err}"
            );
        }
    }

    #[test]
    fn a_truncated_temp_file_is_detected() {
        for limit in [8192, 64 * 1024] {
            let mem = MemBackend::new();
            let s = spilled(&mem, &sample(3000), limit);
            let block = s.geo.block as u64;
            s.runs[0].file.set_len(block * 2).unwrap();
            let err = first_error(s, &mem);
            assert!(
                matches!(&err, StorageError::Io { source, .. } if source.kind() == io::ErrorKind::UnexpectedEof),
                "{err}"
            );
        }
    }

    #[test]
    fn stale_runs_of_dead_processes_are_removed_and_live_ones_kept() {
        let m = crate::backend::MemBackend::new();
        let dir = Path::new("/sort");
        m.create_dir_all(dir).unwrap();
        let dead = i32::MAX as u32; // above any pid_max: never a process
        let mine = std::process::id();
        let names = [
            format!("folio-sort-{dead}-1-0.tmp"),
            format!("folio-sort-{dead}-2-13.tmp"),
            format!("folio-sort-{mine}-1-0.tmp"),
            format!("folio-sort-{dead}-1.tmp"),
            "folio-sort-x-1-0.tmp".to_string(),
            "notes.txt".to_string(),
        ];
        for n in &names {
            m.open(&dir.join(n), OpenMode::CreateNew).unwrap();
        }
        assert_eq!(remove_stale_runs(&m, dir).unwrap(), 2);
        let left: Vec<String> = m
            .read_dir(dir)
            .unwrap()
            .iter()
            .map(|p| p.file_name().unwrap().to_str().unwrap().to_string())
            .collect();
        let mut want: Vec<String> = names[2..].to_vec();
        want.sort();
        assert_eq!(left, want);
        assert_eq!(remove_stale_runs(&m, Path::new("/none")).unwrap(), 0);
    }
}
