//! The buffer pool: one page cache shared by every open database file.
//!
//! Frames hold *immutable* page versions (`Arc<PageBuf>`). A reader clones
//! the `Arc` and never holds a latch while it works; a committing
//! transaction installs a whole new version; the flusher clones the `Arc`,
//! writes it, and only then — if nobody installed a newer version meanwhile
//! — marks the frame clean. So readers, committers and the flusher never
//! wait for one another's disk I/O: the only locks are short shard mutexes
//! around map updates, and the flusher holds none while the disk works.
//!
//! ```text
//!   readers ──read()──►  shard[hash(file,page)] ──miss──► FileHandle::read_at
//!   commit  ──prepare()/install()──► frame{data, dirty, page_lsn, rec_lsn}
//!   flusher ──flush(durable)──► sort dirty by (file, page) ─► write ─► fdatasync ─► mark clean
//!                                 (many files: a few threads, each file written in page order)
//!           ──deferred──────────► … ─► write ─► note oldest rec LSN ─► mark clean
//!   checkpoint ──sync_written()──► one syncfs per file system ─► forget the notes
//! ```
//!
//! With the log on, the engine's checkpoints and closes write *deferred*:
//! a sync per file is a disk cache flush per file (milliseconds each, for
//! thousands of mail files), where one sync of the file system costs about
//! one (`pool/unsynced.rs` says why it is safe, I8).
//!
//! Rules the pool enforces for the layers above (design.md):
//! - I1: `flush(upto)` writes only frames whose transaction's batch, up to
//!   and including its Commit record, lies below `upto` (the caller passes
//!   the log's durable LSN).
//! - I6: `prepare` says whether a change must be logged as a full page
//!   image (the frame is absent or clean) or may be a delta (the frame is
//!   dirty), and pins a dirty frame so the flusher cannot mark it clean
//!   before the delta-logged version is installed.
//! - I11: a failed write or fsync marks the file failed; its dirty frames
//!   stay dirty and are never retried.
//! - I19: `release_file` forgets a file being closed only when none of its
//!   frames is dirty, pinned or being flushed; it never discards a change.
//!
//! Eviction is a generalised CLOCK: a frame enters with no credit, each hit
//! adds credit (up to 3), the clock hand spends one credit per pass and
//! evicts clean, unpinned frames at zero. Pages touched once by a scan go
//! first; pages in steady use survive the scan. Capacity is soft: when every
//! candidate is dirty the pool grows past it and reports pressure so the
//! flusher runs, rather than blocking a reader.
//!
//! Each shard counts its dirty frames as they change state (install,
//! end of a flush, unregister, discard), so the checkpointer's question
//! "how many pages are dirty?", asked ten times a second, costs one lock
//! per shard and no walk of its frames: a walk held each shard's lock
//! against its readers for as long as it took (I54).

use crate::backend::{read_exact_at, write_all_at};
use crate::waits::{POOL_FILE_FLUSH, POOL_FLUSH_TURN};
use crate::{FileHandle, Lsn, PageBuf, PageId, StorageError, StorageResult, PAGE_SIZE};
use parking_lot::{Condvar, Mutex, RwLock};
use std::collections::{HashMap, HashSet};
use std::io;
use std::sync::atomic::{AtomicU32, AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;

mod unsynced;
use unsynced::Unsynced;

const SHARDS: usize = 16;
const MAX_CREDIT: u8 = 3;
/// Pages coalesced into one write by the flusher when their ids are
/// consecutive (1 MiB).
const MAX_COALESCE: usize = 128;
/// A flush pass over at least this many files writes them from
/// `FLUSH_THREADS` threads.
const PARALLEL_FILES: usize = 8;
/// Each file costs an fdatasync, which on most disks is a cache flush of
/// its own; concurrent ones are merged by the block layer. Measured on the
/// project machine (1,000 files of 24 KiB): one thread 394 ms, 4 threads
/// 122 ms, 16 threads 44 ms, 64 threads 64 ms.
const FLUSH_THREADS: usize = 16;

/// A file registered with the pool.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct FileId(u32);

type Key = (FileId, PageId);

/// Where a committed page version sits in the log.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Stamp {
    /// The page record itself: stamped into the page header at seal (I5).
    pub page_lsn: Lsn,
    /// Start of the transaction's batch: the redo point that covers it (I8).
    pub batch_start: Lsn,
    /// End of the batch, after its Commit record: the version may reach the
    /// database file only once the log is durable up to here (I1).
    pub batch_end: Lsn,
}

struct Frame {
    data: Arc<PageBuf>,
    /// LSN of the last log record applied to this version (stamped on seal).
    page_lsn: Lsn,
    /// The log must be durable to here before this version is written (I1).
    flush_after: Lsn,
    /// Batch start of the full page image that first dirtied the frame
    /// (I6/I8).
    rec_lsn: Lsn,
    dirty: bool,
    /// Bumped on every install, so the flusher can tell whether the version
    /// it wrote is still the current one.
    version: u64,
    /// Commits that logged a delta against this frame and have not yet
    /// installed (I6).
    delta_pins: u32,
    /// A flush pass is writing this frame right now.
    flushing: bool,
    /// The last flush could not clean this frame (replaced while written,
    /// pinned, or its batch not yet durable): its next change is logged as
    /// a full image so that its rec LSN moves forward (I6).
    fpi_due: bool,
    credit: u8,
}

#[derive(Default)]
struct Shard {
    frames: HashMap<Key, Frame>,
    clock: Vec<Key>,
    hand: usize,
    /// Frames of `frames` with `dirty` set, kept with every change of it.
    dirty: usize,
}

struct FileEntry {
    handle: Arc<dyn FileHandle>,
    name: String,
    failed: Option<String>,
}

impl Shard {
    /// Drops clock entries whose frames are gone (a released file's), once
    /// they outnumber the frames: eviction skips them anyway, but without
    /// this a shard that never fills would keep every key it ever held.
    fn drop_stale_clock_keys(&mut self) {
        if self.clock.len() > 2 * self.frames.len() + 64 {
            let frames = &self.frames;
            self.clock.retain(|k| frames.contains_key(k));
            self.hand = 0;
        }
    }
}

impl Frame {
    /// A clean, unpinned frame holding `data`, with one credit.
    fn clean(data: Arc<PageBuf>, version: u64) -> Frame {
        Frame {
            data,
            page_lsn: Lsn::ZERO,
            flush_after: Lsn::ZERO,
            rec_lsn: Lsn::ZERO,
            dirty: false,
            version,
            delta_pins: 0,
            flushing: false,
            fpi_due: false,
            credit: 1,
        }
    }
}

/// What a commit must log for one page (I6).
pub enum Prepared {
    /// The page is not dirty in the pool: log its full image.
    FullImage,
    /// The page is dirty: log a delta against this base version. The frame
    /// is pinned until `install` or `unpin`.
    Delta(Arc<PageBuf>),
}

/// Result of a flush pass.
#[derive(Debug, Default)]
pub struct FlushReport {
    pub pages_written: u64,
    /// Files written (each synced too, unless the pass was
    /// [`SyncMode::Deferred`]).
    pub files_written: u64,
    /// Written frames left dirty because a newer version or a pending delta
    /// appeared during the flush.
    pub left_dirty: u64,
    /// Dirty frames not written because their batch is not durable yet.
    pub not_durable: u64,
    /// Files that failed during this pass: (file, name, error).
    pub failures: Vec<(FileId, String, String)>,
}

/// Counters for statistics.
#[derive(Clone, Debug, Default)]
pub struct PoolStats {
    pub capacity_pages: u64,
    pub resident_pages: u64,
    pub dirty_pages: u64,
    pub hits: u64,
    pub misses: u64,
    pub evictions: u64,
    pub pages_flushed: u64,
}

/// The shared buffer pool.
pub struct BufferPool {
    shards: Vec<Mutex<Shard>>,
    shard_capacity: usize,
    files: RwLock<HashMap<FileId, FileEntry>>,
    next_file: AtomicU32,
    next_version: AtomicU64,
    hits: AtomicU64,
    misses: AtomicU64,
    evictions: AtomicU64,
    flushed: AtomicU64,
    /// Files a flush pass is writing right now (I54): each file belongs
    /// to one pass at a time, so two passes never race on mark-clean, and
    /// passes over different files run side by side.
    busy: Mutex<HashSet<FileId>>,
    /// Signalled when a pass gives its files back.
    busy_cv: Condvar,
    /// Pages written by passes that left their sync to
    /// [`BufferPool::sync_written`] (`pool/unsynced.rs`, I8).
    unsynced: Unsynced,
}

fn shard_of(key: &Key) -> usize {
    let h = (u64::from(key.0 .0) << 32 | u64::from(key.1 .0)).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    (h >> 60) as usize % SHARDS
}

impl BufferPool {
    /// A pool holding about `capacity_bytes` of pages (at least 64 pages).
    pub fn new(capacity_bytes: usize) -> Arc<Self> {
        let pages = (capacity_bytes / PAGE_SIZE).max(64);
        Arc::new(BufferPool {
            shards: (0..SHARDS).map(|_| Mutex::new(Shard::default())).collect(),
            shard_capacity: pages.div_ceil(SHARDS),
            files: RwLock::new(HashMap::new()),
            next_file: AtomicU32::new(1),
            next_version: AtomicU64::new(1),
            hits: AtomicU64::new(0),
            misses: AtomicU64::new(0),
            evictions: AtomicU64::new(0),
            flushed: AtomicU64::new(0),
            busy: Mutex::default(),
            busy_cv: Condvar::new(),
            unsynced: Unsynced::default(),
        })
    }

    /// A long-lived handle on the file system of the database files,
    /// through which [`BufferPool::sync_written`] syncs it, so that no
    /// database's descriptor outlives its close.
    pub fn anchor_sync(&self, handle: Arc<dyn FileHandle>) {
        self.unsynced.anchor(handle);
    }

    /// Makes durable every page written by a pass that left its sync here
    /// ([`SyncMode::Deferred`]): one sync per file system. Returns how many
    /// file systems were synced. A failure is sticky: the redo LSN stays
    /// behind those pages for good (`pool/unsynced.rs`).
    pub fn sync_written(&self) -> io::Result<usize> {
        self.unsynced.sync()
    }

    /// Notes that `handle`'s file was written outside the pool (pages a
    /// bulk build wrote straight to it) with changes no older than
    /// `oldest`: the redo LSN stays at or below it until
    /// [`BufferPool::sync_written`] made them durable.
    pub fn note_unsynced(&self, handle: &Arc<dyn FileHandle>, oldest: Lsn) {
        self.unsynced.note(handle, oldest);
    }

    /// Registers an open file; `name` appears in error messages.
    pub fn register(&self, handle: Arc<dyn FileHandle>, name: &str) -> FileId {
        let id = FileId(self.next_file.fetch_add(1, Ordering::Relaxed));
        self.files.write().insert(
            id,
            FileEntry {
                handle,
                name: name.to_string(),
                failed: None,
            },
        );
        id
    }

    /// Forgets a file and all its frames. The caller flushes first; returns
    /// how many dirty frames were discarded (non-zero only for a failed file).
    pub fn unregister(&self, file: FileId) -> usize {
        let mut dropped = 0;
        for shard in &self.shards {
            let mut s = shard.lock();
            let mut gone = 0;
            s.frames.retain(|k, f| {
                let keep = k.0 != file;
                if !keep && f.dirty {
                    gone += 1;
                }
                keep
            });
            s.dirty -= gone;
            dropped += gone;
            s.clock.retain(|k| k.0 != file);
            s.hand = 0;
        }
        self.files.write().remove(&file);
        dropped
    }

    /// Forgets a file that is being closed, if nothing of it is left to
    /// write: drops its clean frames and, when none is dirty, pinned or
    /// being flushed, the file itself, so the pool holds no memory or
    /// handle of it. Returns the frames dropped, or `Err(n)` with the `n`
    /// frames still dirty (the file stays registered; nothing dirty is ever
    /// discarded). `pages` is the file's page count: the pool probes those
    /// page ids when that is cheaper than a sweep of every frame. The
    /// caller guarantees that no transaction of the file runs meanwhile.
    pub fn release_file(&self, file: FileId, pages: u32) -> Result<u64, u64> {
        let resident = self.resident_frames();
        let (mut dropped, mut dirty) = (0u64, 0u64);
        let mut take = |s: &mut Shard, key: &Key| match s.frames.get(key) {
            Some(f) if f.dirty || f.delta_pins > 0 || f.flushing => dirty += 1,
            Some(_) => {
                s.frames.remove(key);
                dropped += 1;
            }
            None => {}
        };
        if (pages as usize) < resident {
            for p in 0..pages {
                let key = (file, PageId(p));
                take(&mut self.shards[shard_of(&key)].lock(), &key);
            }
        } else {
            for shard in &self.shards {
                let mut s = shard.lock();
                let keys: Vec<Key> = s.frames.keys().filter(|k| k.0 == file).copied().collect();
                for key in &keys {
                    take(&mut s, key);
                }
            }
        }
        for shard in &self.shards {
            shard.lock().drop_stale_clock_keys();
        }
        if dirty > 0 {
            return Err(dirty);
        }
        self.files.write().remove(&file);
        Ok(dropped)
    }

    /// Drops every frame of `file` at page `first` or past it, dirty or
    /// not, and returns how many. Only for pages no state references and
    /// no log record in the redo range touches: compact cut them off the
    /// end of the file (I41), and a stale frame must neither be written
    /// back past the new end nor serve as a delta base when the page id
    /// is allocated again. Waits for a flush pass writing the file, so none
    /// is left writing such a frame once this returns.
    pub fn discard_from(&self, file: FileId, first: PageId) -> u64 {
        let _turn = self.claim_waiting(&[file]);
        let mut dropped = 0;
        for shard in &self.shards {
            let mut s = shard.lock();
            let (before, mut dirty_gone) = (s.frames.len(), 0);
            s.frames.retain(|k, f| {
                let keep = k.0 != file || k.1 .0 < first.0;
                dirty_gone += usize::from(!keep && f.dirty);
                keep
            });
            s.dirty -= dirty_gone;
            dropped += (before - s.frames.len()) as u64;
            s.drop_stale_clock_keys();
        }
        dropped
    }

    fn name_of(&self, file: FileId) -> String {
        self.files
            .read()
            .get(&file)
            .map(|f| f.name.clone())
            .unwrap_or_else(|| format!("file #{}", file.0))
    }

    fn handle_of(&self, file: FileId) -> StorageResult<(Arc<dyn FileHandle>, String)> {
        let files = self.files.read();
        let f = files
            .get(&file)
            .ok_or_else(|| StorageError::Invalid(format!("file #{} is not registered", file.0)))?;
        Ok((f.handle.clone(), f.name.clone()))
    }

    /// The failure recorded for a file, if any (I11).
    pub fn failure(&self, file: FileId) -> Option<String> {
        self.files.read().get(&file).and_then(|f| f.failed.clone())
    }

    /// Records a failure for a file (also used by callers whose own direct
    /// writes to the file failed).
    pub fn mark_failed(&self, file: FileId, reason: String) {
        if let Some(f) = self.files.write().get_mut(&file) {
            f.failed.get_or_insert(reason);
        }
    }

    /// Returns the current version of a page, reading and verifying it on a
    /// miss.
    pub fn read(&self, file: FileId, page: PageId) -> StorageResult<Arc<PageBuf>> {
        let key = (file, page);
        {
            let mut s = self.shards[shard_of(&key)].lock();
            if let Some(f) = s.frames.get_mut(&key) {
                f.credit = (f.credit + 1).min(MAX_CREDIT);
                self.hits.fetch_add(1, Ordering::Relaxed);
                return Ok(f.data.clone());
            }
        }
        self.misses.fetch_add(1, Ordering::Relaxed);
        let (handle, name) = self.handle_of(file)?;
        let mut buf = PageBuf::zeroed();
        match read_exact_at(handle.as_ref(), buf.bytes_mut(), page.offset()) {
            Ok(()) => {}
            Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => {
                return Err(StorageError::corrupt(
                    name,
                    page,
                    "page lies beyond the end of the file",
                ))
            }
            Err(e) => return Err(StorageError::io(name, e)),
        }
        buf.verify(&name, page)?;
        let lsn = buf.lsn();
        Ok(self.insert_clean(key, Arc::new(buf), lsn))
    }

    /// Adds a frame that is not resident yet, making room for it first.
    fn add_frame(&self, s: &mut Shard, key: Key, frame: Frame) {
        self.make_room(s);
        s.dirty += usize::from(frame.dirty);
        if let Some(old) = s.frames.insert(key, frame) {
            s.dirty -= usize::from(old.dirty);
        }
        s.clock.push(key);
    }

    /// Inserts a page read from disk unless a version is already resident
    /// (a concurrent install wins); returns the resident version.
    fn insert_clean(&self, key: Key, data: Arc<PageBuf>, lsn: Lsn) -> Arc<PageBuf> {
        let mut s = self.shards[shard_of(&key)].lock();
        if let Some(f) = s.frames.get(&key) {
            return f.data.clone();
        }
        self.add_frame(
            &mut s,
            key,
            Frame {
                page_lsn: lsn,
                credit: 0,
                ..Frame::clean(
                    data.clone(),
                    self.next_version.fetch_add(1, Ordering::Relaxed),
                )
            },
        );
        data
    }

    /// Evicts clean, unpinned, zero-credit frames until the shard is under
    /// capacity or one full sweep found nothing (then the shard grows).
    fn make_room(&self, s: &mut Shard) {
        let mut budget = s.clock.len() * (MAX_CREDIT as usize + 1);
        while s.frames.len() >= self.shard_capacity && budget > 0 && !s.clock.is_empty() {
            budget -= 1;
            if s.hand >= s.clock.len() {
                s.hand = 0;
            }
            let key = s.clock[s.hand];
            let evict = match s.frames.get_mut(&key) {
                None => true,
                Some(f) if f.credit > 0 => {
                    f.credit -= 1;
                    false
                }
                Some(f) => !f.dirty && f.delta_pins == 0,
            };
            if evict {
                if s.frames.remove(&key).is_some() {
                    self.evictions.fetch_add(1, Ordering::Relaxed);
                }
                s.clock.swap_remove(s.hand);
            } else {
                s.hand += 1;
            }
        }
    }

    /// Decides how a commit logs its new version of `page` (I6): a full
    /// image when the frame is absent, clean, being flushed right now, or
    /// left dirty by the last flush; otherwise a delta against the current
    /// version.
    pub fn prepare(&self, file: FileId, page: PageId) -> Prepared {
        let key = (file, page);
        let mut s = self.shards[shard_of(&key)].lock();
        match s.frames.get_mut(&key) {
            Some(f) if f.dirty && !f.flushing && !f.fpi_due => {
                f.delta_pins += 1;
                Prepared::Delta(f.data.clone())
            }
            _ => Prepared::FullImage,
        }
    }

    /// Releases a pin taken by `prepare` when the commit failed before
    /// installing.
    pub fn unpin(&self, file: FileId, page: PageId) {
        let key = (file, page);
        if let Some(f) = self.shards[shard_of(&key)].lock().frames.get_mut(&key) {
            f.delta_pins = f.delta_pins.saturating_sub(1);
        }
    }

    /// Installs a committed version logged at `stamp`. `delta` says whether
    /// `prepare` returned `Delta` for it (then the pin is released). A full
    /// image holds the whole page, so redo from its batch rebuilds the page
    /// whatever the disk holds: it becomes the frame's rec LSN (I6).
    pub fn install(
        &self,
        file: FileId,
        page: PageId,
        data: Arc<PageBuf>,
        stamp: Stamp,
        delta: bool,
    ) {
        let key = (file, page);
        let version = self.next_version.fetch_add(1, Ordering::Relaxed);
        let mut s = self.shards[shard_of(&key)].lock();
        let Shard { frames, dirty, .. } = &mut *s;
        if let Some(f) = frames.get_mut(&key) {
            if delta {
                f.delta_pins = f.delta_pins.saturating_sub(1);
            }
            debug_assert!(
                f.dirty || !delta,
                "I6: a delta was logged against a clean frame"
            );
            if !delta {
                f.rec_lsn = stamp.batch_start;
                f.fpi_due = false;
            }
            f.data = data;
            f.page_lsn = stamp.page_lsn;
            f.flush_after = stamp.batch_end;
            *dirty += usize::from(!f.dirty);
            f.dirty = true;
            f.version = version;
            f.credit = (f.credit + 1).min(MAX_CREDIT);
            return;
        }
        debug_assert!(!delta, "I6: a delta was logged for a page not in the pool");
        self.add_frame(
            &mut s,
            key,
            Frame {
                page_lsn: stamp.page_lsn,
                flush_after: stamp.batch_end,
                rec_lsn: stamp.batch_start,
                dirty: true,
                ..Frame::clean(data, version)
            },
        );
    }

    /// Installs a version that is *not* in the log (an unlogged view
    /// index page, I14). It is sealed with `lsn` — the log's end when it
    /// was made, above every record that ever touched the page, so redo
    /// never overwrites it with an older logged version (I5) — and may be
    /// flushed once the log is durable to `lsn`. Its next logged change is
    /// a full image (I6): the page's on-disk state is unknown to the log.
    pub fn install_unlogged(&self, file: FileId, page: PageId, data: Arc<PageBuf>, lsn: Lsn) {
        let key = (file, page);
        let version = self.next_version.fetch_add(1, Ordering::Relaxed);
        let mut s = self.shards[shard_of(&key)].lock();
        let Shard { frames, dirty, .. } = &mut *s;
        if let Some(f) = frames.get_mut(&key) {
            if !f.dirty {
                f.rec_lsn = lsn;
                *dirty += 1;
            }
            f.data = data;
            f.page_lsn = f.page_lsn.max(lsn);
            f.flush_after = f.flush_after.max(lsn);
            f.dirty = true;
            f.fpi_due = true;
            f.version = version;
            f.credit = (f.credit + 1).min(MAX_CREDIT);
            return;
        }
        self.add_frame(
            &mut s,
            key,
            Frame {
                page_lsn: lsn,
                flush_after: lsn,
                rec_lsn: lsn,
                dirty: true,
                fpi_due: true,
                ..Frame::clean(data, version)
            },
        );
    }

    /// Installs a version that is already on disk (unlogged mode writes
    /// pages itself before installing them).
    pub fn install_clean(&self, file: FileId, page: PageId, data: Arc<PageBuf>) {
        let key = (file, page);
        let version = self.next_version.fetch_add(1, Ordering::Relaxed);
        let mut s = self.shards[shard_of(&key)].lock();
        if let Some(f) = s.frames.get_mut(&key) {
            f.data = data;
            f.version = version;
            return;
        }
        self.add_frame(&mut s, key, Frame::clean(data, version));
    }

    /// The smallest `rec_lsn` over dirty frames: no change below it is only
    /// in memory (input to a checkpoint's redo LSN, I8).
    pub fn min_rec_lsn(&self) -> Option<Lsn> {
        self.min_rec_lsn_except(&[])
    }

    /// [`BufferPool::min_rec_lsn`] without the frames of `detached` files:
    /// failed files whose changes will never be written (I11), so they do
    /// not hold the log back (design.md I29). Pages written but not yet
    /// synced count as dirty, and are read after the frames
    /// (`pool/unsynced.rs`, 3).
    pub fn min_rec_lsn_except(&self, detached: &[FileId]) -> Option<Lsn> {
        let frames = self
            .shards
            .iter()
            .filter_map(|s| {
                s.lock()
                    .frames
                    .iter()
                    .filter(|(k, f)| f.dirty && !detached.contains(&k.0))
                    .map(|(_, f)| f.rec_lsn)
                    .min()
            })
            .min();
        [frames, self.unsynced.oldest()].into_iter().flatten().min()
    }

    /// Every registered file with a recorded failure (I11): id, name and
    /// the failure.
    pub fn failed_files(&self) -> Vec<(FileId, String, String)> {
        self.files
            .read()
            .iter()
            .filter_map(|(id, f)| f.failed.clone().map(|r| (*id, f.name.clone(), r)))
            .collect()
    }

    /// Number of dirty frames, and whether they exceed half the capacity
    /// (the flusher should run now).
    pub fn dirty_pressure(&self) -> (u64, bool) {
        let dirty: usize = self.shards.iter().map(|s| s.lock().dirty).sum();
        (dirty as u64, dirty > self.shard_capacity * SHARDS / 2)
    }

    /// Writes every dirty frame whose batch is durable (`flush_after ≤ upto`,
    /// I1), in (file, page) order with consecutive pages coalesced,
    /// fdatasyncs each file, then marks the written versions clean. `only`
    /// restricts the pass to one file. No lock is held while the disk
    /// works. A pass over every file (`only` = None) skips the files
    /// another pass is writing right now: their frames stay dirty and keep
    /// holding the redo LSN (I8), and the next pass takes them. A pass
    /// over one file waits for such a pass to end first, so that on return
    /// every durable version of it is on disk (I14, I19).
    pub fn flush(&self, upto: Lsn, only: Option<FileId>) -> FlushReport {
        match only {
            None => self.flush_all(upto, SyncMode::EachFile),
            Some(f) => self.flush_files(upto, &[f]),
        }
    }

    /// [`BufferPool::flush`] over every file, syncing as `mode` says: with
    /// [`SyncMode::Deferred`] the written pages wait for
    /// [`BufferPool::sync_written`] and hold the redo LSN until then.
    pub fn flush_all(&self, upto: Lsn, mode: SyncMode) -> FlushReport {
        let mut mine = HashMap::new();
        let report = self.flush_where(
            upto,
            &mut |f| *mine.entry(f).or_insert_with(|| self.busy.lock().insert(f)),
            mode,
        );
        self.give_back(mine.into_iter().filter(|(_, m)| *m).map(|(f, _)| f));
        report
    }

    /// [`BufferPool::flush`] restricted to `files` (the open-database cache
    /// writes the databases it is about to close in one pass). Waits for
    /// passes writing any of them.
    pub fn flush_files(&self, upto: Lsn, files: &[FileId]) -> FlushReport {
        let turn = self.claim_waiting(files);
        self.flush_where(upto, &mut |f| turn.files.contains(&f), SyncMode::EachFile)
    }

    /// Claims `files` for the calling pass, waiting while another pass
    /// holds any of them. Claimed in file order, all at once, so two
    /// waiting passes never hold one file each and wait for the other's.
    fn claim_waiting(&self, files: &[FileId]) -> Turn<'_> {
        let mut files = files.to_vec();
        files.sort_unstable();
        files.dedup();
        let started = std::time::Instant::now();
        let mut waited = false;
        let mut busy = self.busy.lock();
        while files.iter().any(|f| busy.contains(f)) {
            waited = true;
            self.busy_cv.wait(&mut busy);
        }
        busy.extend(files.iter().copied());
        drop(busy);
        if waited {
            POOL_FLUSH_TURN.since(started);
        }
        Turn { pool: self, files }
    }

    /// Frames resident now: a file of fewer pages is looked up page by
    /// page rather than by a sweep of every frame.
    fn resident_frames(&self) -> usize {
        self.shards.iter().map(|s| s.lock().frames.len()).sum()
    }

    /// Whether a flush pass is writing `file` right now.
    pub fn is_being_flushed(&self, file: FileId) -> bool {
        self.busy.lock().contains(&file)
    }

    fn give_back(&self, files: impl Iterator<Item = FileId>) {
        let mut busy = self.busy.lock();
        for f in files {
            busy.remove(&f);
        }
        drop(busy);
        self.busy_cv.notify_all();
    }

    /// Whether any frame of `file` (of `pages` pages) is dirty, pinned or
    /// being written: closing it would need a flush first (I19).
    pub fn has_unwritten(&self, file: FileId, pages: u32) -> bool {
        let busy = |f: &Frame| f.dirty || f.delta_pins > 0 || f.flushing;
        let resident = self.resident_frames();
        if (pages as usize) < resident {
            (0..pages).any(|p| {
                let key = (file, PageId(p));
                self.shards[shard_of(&key)]
                    .lock()
                    .frames
                    .get(&key)
                    .is_some_and(busy)
            })
        } else {
            self.shards
                .iter()
                .any(|s| s.lock().frames.iter().any(|(k, f)| k.0 == file && busy(f)))
        }
    }

    /// One pass over the files `mine` says belong to it (called once per
    /// file met with a dirty frame; it may claim the file then).
    fn flush_where(
        &self,
        upto: Lsn,
        mine: &mut dyn FnMut(FileId) -> bool,
        mode: SyncMode,
    ) -> FlushReport {
        let (work, not_durable) = self.collect_dirty(upto, mine);
        self.write_collected(work, not_durable, mode)
    }

    /// [`BufferPool::flush_files`] for files whose page counts are known:
    /// when they hold fewer pages than the pool, their frames are looked
    /// up page by page instead of by a sweep of every frame (a close
    /// writes one small file out of thousands resident).
    pub fn flush_sized(&self, upto: Lsn, files: &[(FileId, u32)], mode: SyncMode) -> FlushReport {
        let ids: Vec<FileId> = files.iter().map(|(f, _)| *f).collect();
        let turn = self.claim_waiting(&ids);
        let pages: usize = files.iter().map(|(_, n)| *n as usize).sum();
        let resident = self.resident_frames();
        if pages >= resident {
            return self.flush_where(upto, &mut |f| turn.files.contains(&f), mode);
        }
        let failed: Vec<FileId> = self
            .files
            .read()
            .iter()
            .filter(|(id, f)| f.failed.is_some() && ids.contains(id))
            .map(|(id, _)| *id)
            .collect();
        let (mut work, mut not_durable) = (Vec::new(), 0);
        for (file, n) in files.iter().filter(|(f, _)| !failed.contains(f)) {
            for p in 0..*n {
                let key = (*file, PageId(p));
                let mut s = self.shards[shard_of(&key)].lock();
                if let Some(f) = s.frames.get_mut(&key) {
                    take_for_flush(key, f, upto, &mut |_| true, &mut work, &mut not_durable);
                }
            }
        }
        self.write_collected(work, not_durable, mode)
    }

    fn write_collected(
        &self,
        mut work: Vec<FlushItem>,
        not_durable: u64,
        mode: SyncMode,
    ) -> FlushReport {
        work.sort_by_key(|w| (w.key.0, w.key.1));
        let mut report = FlushReport {
            not_durable,
            ..FlushReport::default()
        };
        let files: Vec<&[FlushItem]> = work.chunk_by(|a, b| a.key.0 == b.key.0).collect();
        for (items, written) in files.iter().zip(self.write_files(&files, mode)) {
            let file = items[0].key.0;
            match written {
                Ok(()) => {
                    report.pages_written += items.len() as u64;
                    report.files_written += 1;
                    report.left_dirty += self.end_flush(items, true);
                }
                Err(e) => {
                    self.end_flush(items, false);
                    let name = self.name_of(file);
                    // I11: never retried; the file stays failed until reopened.
                    self.mark_failed(file, e.to_string());
                    report.failures.push((file, name, e.to_string()));
                }
            }
        }
        self.flushed
            .fetch_add(report.pages_written, Ordering::Relaxed);
        report
    }

    fn collect_dirty(
        &self,
        upto: Lsn,
        mine: &mut dyn FnMut(FileId) -> bool,
    ) -> (Vec<FlushItem>, u64) {
        let mut not_durable = 0;
        let failed: Vec<FileId> = self
            .files
            .read()
            .iter()
            .filter(|(_, f)| f.failed.is_some())
            .map(|(id, _)| *id)
            .collect();
        let mut work = Vec::new();
        for shard in &self.shards {
            let mut s = shard.lock();
            for (key, f) in s.frames.iter_mut() {
                if !failed.contains(&key.0) {
                    take_for_flush(*key, f, upto, mine, &mut work, &mut not_durable);
                }
            }
        }
        (work, not_durable)
    }

    /// Writes and syncs each file's items (one slice per file), the
    /// outcome of each in order. Many files are spread over a few threads:
    /// each file is one fdatasync, and one thread issuing hundreds of them
    /// in turn (a checkpoint after many databases were written, the cache
    /// closing them) leaves the disk's queue nearly empty.
    fn write_files(&self, files: &[&[FlushItem]], mode: SyncMode) -> Vec<io::Result<()>> {
        let each = |items: &&[FlushItem]| self.flush_file_pages(items[0].key.0, items, mode);
        if files.len() < PARALLEL_FILES {
            return files.iter().map(each).collect();
        }
        let next = AtomicUsize::new(0);
        let mut done: Vec<(usize, io::Result<()>)> = std::thread::scope(|scope| {
            let workers: Vec<_> = (0..FLUSH_THREADS)
                .map(|_| {
                    scope.spawn(|| {
                        let mut out = Vec::new();
                        loop {
                            let i = next.fetch_add(1, Ordering::Relaxed);
                            let Some(items) = files.get(i) else {
                                return out;
                            };
                            out.push((i, each(items)));
                        }
                    })
                })
                .collect();
            workers
                .into_iter()
                .flat_map(|w| w.join().expect("a flush thread panicked"))
                .collect()
        });
        done.sort_by_key(|(i, _)| *i);
        done.into_iter().map(|(_, r)| r).collect()
    }

    fn flush_file_pages(
        &self,
        file: FileId,
        items: &[FlushItem],
        mode: SyncMode,
    ) -> io::Result<()> {
        let started = std::time::Instant::now();
        let r = self.write_file_pages(file, items, mode);
        POOL_FILE_FLUSH.since(started);
        r
    }

    /// Writes one file's items; syncs the file, or (deferred) notes the
    /// oldest rec LSN written in the ledger before the caller marks the
    /// frames clean (`pool/unsynced.rs`, 1).
    fn write_file_pages(
        &self,
        file: FileId,
        items: &[FlushItem],
        mode: SyncMode,
    ) -> io::Result<()> {
        let (handle, _) = self
            .handle_of(file)
            .map_err(|e| io::Error::other(e.to_string()))?;
        let mut i = 0;
        while i < items.len() {
            let mut run = 1;
            while i + run < items.len()
                && run < MAX_COALESCE
                && items[i + run].key.1 .0 == items[i].key.1 .0 + run as u32
            {
                run += 1;
            }
            let mut buf = Vec::with_capacity(run * PAGE_SIZE);
            for it in &items[i..i + run] {
                let mut p = (*it.data).clone();
                p.seal(it.key.1, it.page_lsn);
                buf.extend_from_slice(p.bytes());
            }
            write_all_at(handle.as_ref(), &buf, items[i].key.1.offset())?;
            i += run;
        }
        match mode {
            SyncMode::EachFile => handle.sync_data(),
            SyncMode::Deferred => {
                if let Some(oldest) = items.iter().map(|it| it.rec_lsn).min() {
                    self.unsynced.note(&handle, oldest);
                }
                Ok(())
            }
        }
    }

    /// Ends the flush of `items`. A written version nobody replaced (and
    /// with no pending delta) is clean. Any other frame stays dirty and its
    /// next change is logged as a full image, which moves its rec LSN
    /// forward (I6): hot pages never pin the redo LSN.
    fn end_flush(&self, items: &[FlushItem], written: bool) -> u64 {
        let mut left = 0;
        for it in items {
            let mut s = self.shards[shard_of(&it.key)].lock();
            let Shard { frames, dirty, .. } = &mut *s;
            let Some(f) = frames.get_mut(&it.key) else {
                continue;
            };
            f.flushing = false;
            if written && f.version == it.version && f.delta_pins == 0 {
                *dirty -= usize::from(f.dirty);
                f.dirty = false;
            } else {
                f.fpi_due = true;
                left += 1;
            }
        }
        left
    }

    pub fn stats(&self) -> PoolStats {
        let (mut resident, mut dirty) = (0u64, 0u64);
        for s in &self.shards {
            let s = s.lock();
            resident += s.frames.len() as u64;
            dirty += s.dirty as u64;
        }
        PoolStats {
            capacity_pages: (self.shard_capacity * SHARDS) as u64,
            resident_pages: resident,
            dirty_pages: dirty,
            hits: self.hits.load(Ordering::Relaxed),
            misses: self.misses.load(Ordering::Relaxed),
            evictions: self.evictions.load(Ordering::Relaxed),
            pages_flushed: self.flushed.load(Ordering::Relaxed),
        }
    }
}

/// One frame's part in a flush pass: a dirty version whose whole batch,
/// Commit included, is durable (I1), of a file this pass holds (I54), is
/// marked in flight and taken; a dirty one not yet durable is counted and
/// its next change logged whole, so a hot page's rec LSN still moves (I6).
fn take_for_flush(
    key: Key,
    f: &mut Frame,
    upto: Lsn,
    mine: &mut dyn FnMut(FileId) -> bool,
    work: &mut Vec<FlushItem>,
    not_durable: &mut u64,
) {
    if !f.dirty {
        return;
    }
    if f.flush_after > upto {
        *not_durable += 1;
        f.fpi_due = true;
        return;
    }
    if mine(key.0) {
        debug_assert!(!f.flushing, "I54: a file is written by one pass at a time");
        f.flushing = true;
        work.push(FlushItem {
            key,
            data: f.data.clone(),
            page_lsn: f.page_lsn,
            rec_lsn: f.rec_lsn,
            version: f.version,
        });
    }
}

/// Files a pass claimed and waits for nobody else to write; given back
/// when dropped.
struct Turn<'p> {
    pool: &'p BufferPool,
    files: Vec<FileId>,
}

impl Drop for Turn<'_> {
    fn drop(&mut self) {
        self.pool.give_back(self.files.iter().copied());
    }
}

struct FlushItem {
    key: Key,
    data: Arc<PageBuf>,
    page_lsn: Lsn,
    rec_lsn: Lsn,
    version: u64,
}

/// How a flush pass makes what it wrote durable.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SyncMode {
    /// An fdatasync per file before its frames are marked clean: the
    /// pages are durable when the pass returns.
    EachFile,
    /// No sync: the oldest rec LSN written is noted in the ledger, which
    /// holds the redo LSN until [`BufferPool::sync_written`] syncs the
    /// file system (logged databases only: the log covers the pages
    /// meanwhile, I8, I19).
    Deferred,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backend::{Backend, MemBackend, OpenMode};
    use crate::PageKind;
    use std::path::Path;

    fn at(lsn: u64) -> Stamp {
        Stamp {
            page_lsn: Lsn(lsn),
            batch_start: Lsn(lsn - 1),
            batch_end: Lsn(lsn + 5),
        }
    }

    fn page_with(byte: u8) -> Arc<PageBuf> {
        let mut p = PageBuf::new(PageKind::Overflow);
        p.body_mut()[0] = byte;
        Arc::new(p)
    }

    fn setup() -> (MemBackend, Arc<BufferPool>, FileId) {
        let be = MemBackend::new();
        be.create_dir_all(Path::new("/d")).unwrap();
        let h = be
            .open(Path::new("/d/a.fdb"), OpenMode::CreateOrOpen)
            .unwrap();
        let pool = BufferPool::new(64 * PAGE_SIZE);
        let f = pool.register(h, "a.fdb");
        (be, pool, f)
    }

    impl BufferPool {
        /// The dirty frames found by walking every shard: what the kept
        /// counts must always equal.
        fn dirty_by_walk(&self) -> u64 {
            let walk = |s: &Shard| s.frames.values().filter(|f| f.dirty).count();
            self.shards.iter().map(|s| walk(&s.lock()) as u64).sum()
        }
    }

    proptest::proptest! {
        /// The per-shard dirty counts follow every change of state: logged
        /// and unlogged installs, deltas, flushes (some not yet durable),
        /// releases, discards, unregistering, and eviction in a small pool.
        #[test]
        fn dirty_counts_equal_a_walk_of_the_frames(
            ops in proptest::collection::vec((0u8..8, 0u32..40, 1u64..60), 1..200)
        ) {
            let (be, pool, f) = setup();
            let h = be.open(Path::new("/d/b.fdb"), OpenMode::CreateOrOpen).unwrap();
            let mut g = Some(pool.register(h, "b.fdb"));
            let mut lsn = 10;
            for (op, page, upto) in ops {
                lsn += 10;
                let file = match (page % 2, g) {
                    (1, Some(g)) => g,
                    _ => f,
                };
                let page = PageId(page);
                match op {
                    0 | 1 => match pool.prepare(file, page) {
                        Prepared::Delta(_) => pool.install(file, page, page_with(1), at(lsn), true),
                        Prepared::FullImage => pool.install(file, page, page_with(2), at(lsn), false),
                    },
                    2 => pool.install_unlogged(file, page, page_with(3), Lsn(lsn)),
                    3 => {
                        pool.flush(Lsn(lsn - upto.min(lsn)), None);
                    }
                    4 => {
                        pool.flush(Lsn(lsn + 10), Some(file));
                    }
                    5 => {
                        let _ = pool.release_file(file, 40);
                    }
                    6 => {
                        pool.discard_from(file, page);
                    }
                    _ => {
                        if let Some(gone) = g.take() {
                            pool.unregister(gone);
                        }
                    }
                }
                proptest::prop_assert_eq!(pool.stats().dirty_pages, pool.dirty_by_walk());
                proptest::prop_assert_eq!(pool.dirty_pressure().0, pool.dirty_by_walk());
            }
        }
    }

    #[test]
    fn a_sized_flush_writes_its_files_durable_pages_only() {
        let (be, pool, f) = setup();
        let other = be
            .open(Path::new("/d/b.fdb"), OpenMode::CreateOrOpen)
            .unwrap();
        let g = pool.register(other, "b.fdb");
        // Enough resident frames of `g` that probing `f` page by page is
        // the cheaper way.
        for p in 0..20 {
            pool.install(g, PageId(p), page_with(9), at(10), false);
        }
        pool.install(f, PageId(1), page_with(1), at(10), false);
        pool.install(f, PageId(2), page_with(2), at(40), false);
        let r = pool.flush_sized(Lsn(30), &[(f, 3)], SyncMode::EachFile);
        assert_eq!(r.pages_written, 1, "page 2's batch is not durable (I1)");
        assert_eq!(r.not_durable, 1);
        assert_eq!(pool.stats().dirty_pages, 21, "g's frames were not touched");
        assert!(!pool.is_being_flushed(f), "the file was given back");
        let mut on_disk = vec![0u8; PAGE_SIZE];
        let h = be.open(Path::new("/d/a.fdb"), OpenMode::Existing).unwrap();
        read_exact_at(h.as_ref(), &mut on_disk, PageId(1).offset()).unwrap();
        assert_eq!(on_disk[crate::page::PAGE_HEADER], 1);
        let r = pool.flush_sized(Lsn(100), &[(f, 3), (g, 20)], SyncMode::EachFile);
        assert_eq!(r.pages_written, 21);
        assert_eq!(pool.stats().dirty_pages, 0);
    }

    /// A file whose syncs are counted, and fail while `fail` is set.
    struct SyncProbe {
        inner: Arc<dyn FileHandle>,
        file_syncs: AtomicU64,
        fs_syncs: AtomicU64,
        fail: std::sync::atomic::AtomicBool,
    }

    impl FileHandle for SyncProbe {
        fn read_at(&self, b: &mut [u8], o: u64) -> io::Result<usize> {
            self.inner.read_at(b, o)
        }
        fn write_at(&self, b: &[u8], o: u64) -> io::Result<usize> {
            self.inner.write_at(b, o)
        }
        fn sync_data(&self) -> io::Result<()> {
            self.file_syncs.fetch_add(1, Ordering::SeqCst);
            self.inner.sync_data()
        }
        fn sync_fs(&self) -> io::Result<()> {
            self.fs_syncs.fetch_add(1, Ordering::SeqCst);
            if self.fail.load(Ordering::SeqCst) {
                return Err(io::Error::from_raw_os_error(libc::EIO));
            }
            self.inner.sync_fs()
        }
        fn len(&self) -> io::Result<u64> {
            self.inner.len()
        }
        fn set_len(&self, l: u64) -> io::Result<()> {
            self.inner.set_len(l)
        }
    }

    fn probe(be: &MemBackend, path: &str) -> Arc<SyncProbe> {
        Arc::new(SyncProbe {
            inner: be.open(Path::new(path), OpenMode::CreateOrOpen).unwrap(),
            file_syncs: AtomicU64::new(0),
            fs_syncs: AtomicU64::new(0),
            fail: std::sync::atomic::AtomicBool::new(false),
        })
    }

    /// I8/I19 with deferred syncs: written pages leave the dirty set (a
    /// closing file can be released) but hold the redo LSN until one sync
    /// of the file system, through the anchor, covers them; no file is
    /// synced on its own.
    #[test]
    fn deferred_pages_hold_the_redo_lsn_until_the_file_system_sync() {
        let (be, pool, _) = setup();
        let anchor = probe(&be, "/d/catalog");
        pool.anchor_sync(anchor.clone());
        let a = probe(&be, "/d/x.fdb");
        let b = probe(&be, "/d/y.fdb");
        let fa = pool.register(a.clone(), "x.fdb");
        let fb = pool.register(b.clone(), "y.fdb");
        pool.install(fa, PageId(1), page_with(1), at(10), false);
        pool.install(fb, PageId(1), page_with(2), at(20), false);
        pool.install(fb, PageId(2), page_with(3), at(90), false);
        let r = pool.flush_sized(Lsn(50), &[(fa, 2)], SyncMode::Deferred);
        assert_eq!(r.pages_written, 1);
        assert!(
            pool.release_file(fa, 2).is_ok(),
            "written: the file can be released"
        );
        assert_eq!(
            pool.min_rec_lsn(),
            Some(Lsn(9)),
            "the closed file's page still holds the redo LSN"
        );
        let r = pool.flush_all(Lsn(50), SyncMode::Deferred);
        assert_eq!((r.pages_written, r.not_durable), (1, 1));
        assert_eq!(pool.min_rec_lsn(), Some(Lsn(9)));
        assert_eq!(pool.sync_written().unwrap(), 1, "one file system");
        assert_eq!(
            anchor.fs_syncs.load(Ordering::SeqCst),
            1,
            "synced through the anchor"
        );
        assert_eq!(
            a.file_syncs.load(Ordering::SeqCst) + b.file_syncs.load(Ordering::SeqCst),
            0
        );
        assert_eq!(
            a.fs_syncs.load(Ordering::SeqCst) + b.fs_syncs.load(Ordering::SeqCst),
            0
        );
        assert_eq!(
            pool.min_rec_lsn(),
            Some(Lsn(89)),
            "only the page not yet durable is left"
        );
        assert_eq!(
            pool.sync_written().unwrap(),
            0,
            "nothing written since: no sync"
        );
        assert_eq!(anchor.fs_syncs.load(Ordering::SeqCst), 1);
    }

    /// A failed sync of the file system is sticky: the redo LSN never
    /// passes what it was to make durable, and every later sync fails.
    #[test]
    fn a_failed_file_system_sync_keeps_the_redo_lsn_for_good() {
        let (be, pool, _) = setup();
        let anchor = probe(&be, "/d/catalog");
        pool.anchor_sync(anchor.clone());
        let a = probe(&be, "/d/x.fdb");
        let fa = pool.register(a.clone(), "x.fdb");
        pool.install(fa, PageId(1), page_with(1), at(10), false);
        pool.flush_all(Lsn(50), SyncMode::Deferred);
        anchor.fail.store(true, Ordering::SeqCst);
        assert!(pool.sync_written().is_err());
        anchor.fail.store(false, Ordering::SeqCst);
        pool.install(fa, PageId(2), page_with(2), at(30), false);
        pool.flush_all(Lsn(50), SyncMode::Deferred);
        let again = pool.sync_written().unwrap_err();
        assert!(again.to_string().contains("earlier sync"), "{again}");
        assert_eq!(anchor.fs_syncs.load(Ordering::SeqCst), 1, "never retried");
        assert_eq!(pool.min_rec_lsn(), Some(Lsn(9)));
    }

    /// Without an anchor on its file system, a written file's own handle
    /// syncs it, and is let go once it has.
    #[test]
    fn without_an_anchor_a_written_file_syncs_its_file_system() {
        let (be, pool, _) = setup();
        let a = probe(&be, "/d/x.fdb");
        let fa = pool.register(a.clone(), "x.fdb");
        pool.install(fa, PageId(1), page_with(1), at(10), false);
        pool.flush_all(Lsn(50), SyncMode::Deferred);
        pool.release_file(fa, 2).unwrap();
        pool.unregister(fa);
        assert_eq!(
            Arc::strong_count(&a),
            2,
            "the ledger keeps the handle until the sync"
        );
        assert_eq!(pool.sync_written().unwrap(), 1);
        assert_eq!(a.fs_syncs.load(Ordering::SeqCst), 1);
        assert_eq!(Arc::strong_count(&a), 1, "and lets it go after");
        assert_eq!(pool.min_rec_lsn(), None);
    }

    #[test]
    fn discarded_frames_are_neither_written_nor_delta_bases() {
        let (_be, pool, f) = setup();
        pool.install(f, PageId(1), page_with(1), at(10), false);
        pool.install(f, PageId(5), page_with(5), at(10), false);
        pool.install(f, PageId(6), page_with(6), at(10), false);
        assert_eq!(pool.discard_from(f, PageId(5)), 2);
        assert!(matches!(pool.prepare(f, PageId(5)), Prepared::FullImage));
        let r = pool.flush(Lsn(100), None);
        assert_eq!(r.pages_written, 1, "only the page below the cut");
        assert_eq!(pool.stats().dirty_pages, 0);
    }

    #[test]
    fn flush_respects_durable_lsn_and_marks_clean() {
        let (be, pool, f) = setup();
        pool.install(f, PageId(1), page_with(1), at(10), false);
        pool.install(f, PageId(2), page_with(2), at(20), false);
        let r = pool.flush(Lsn(24), None);
        assert_eq!(
            r.pages_written, 1,
            "I1: the batch of the page at lsn 20 is not durable yet"
        );
        assert_eq!(pool.min_rec_lsn(), Some(Lsn(19)));
        pool.flush(Lsn(25), None);
        assert_eq!(pool.min_rec_lsn(), None);
        let bytes = be.file_bytes(Path::new("/d/a.fdb")).unwrap();
        let on_disk = PageBuf::from_bytes(&bytes[PAGE_SIZE..2 * PAGE_SIZE]).unwrap();
        on_disk.verify("a", PageId(1)).unwrap();
        assert_eq!(on_disk.lsn(), Lsn(10));
        assert_eq!(on_disk.body()[0], 1);
    }

    #[test]
    fn delta_pin_keeps_frame_dirty_through_a_flush() {
        let (_be, pool, f) = setup();
        pool.install(f, PageId(1), page_with(1), at(10), false);
        assert!(matches!(pool.prepare(f, PageId(1)), Prepared::Delta(_)));
        pool.flush(Lsn(100), None);
        assert_eq!(
            pool.min_rec_lsn(),
            Some(Lsn(9)),
            "I6: pinned frame stays dirty"
        );
        pool.install(f, PageId(1), page_with(2), at(30), true);
        pool.flush(Lsn(100), None);
        assert_eq!(pool.min_rec_lsn(), None);
        assert!(matches!(pool.prepare(f, PageId(1)), Prepared::FullImage));
    }

    #[test]
    fn read_miss_verifies_and_reports_corruption_with_page() {
        let (be, pool, f) = setup();
        let mut p = PageBuf::new(PageKind::Overflow);
        p.seal(PageId(0), Lsn(1));
        let mut bytes = p.bytes().to_vec();
        bytes[500] ^= 0xff;
        be.set_file_bytes(Path::new("/d/a.fdb"), bytes);
        let e = pool.read(f, PageId(0)).unwrap_err().to_string();
        assert!(e.contains("a.fdb") && e.contains("page 0"), "{e}");
        let e = pool.read(f, PageId(9)).unwrap_err().to_string();
        assert!(e.contains("beyond the end"), "{e}");
    }

    #[test]
    fn scan_does_not_evict_hot_pages() {
        let (be, pool, f) = setup();
        let h = be.open(Path::new("/d/a.fdb"), OpenMode::Existing).unwrap();
        for i in 0..2000u32 {
            let mut p = PageBuf::new(PageKind::Overflow);
            p.seal(PageId(i), Lsn(1));
            write_all_at(h.as_ref(), p.bytes(), PageId(i).offset()).unwrap();
        }
        for _ in 0..4 {
            for i in 0..8 {
                pool.read(f, PageId(i)).unwrap();
            }
        }
        let misses_before = pool.stats().misses;
        for i in 100..2000 {
            pool.read(f, PageId(i)).unwrap();
        }
        let after_scan = pool.stats().misses;
        for i in 0..8 {
            pool.read(f, PageId(i)).unwrap();
        }
        assert!(after_scan > misses_before);
        assert!(
            pool.stats().misses - after_scan <= 2,
            "hot pages survived the scan"
        );
        assert!(pool.stats().resident_pages <= 64 + SHARDS as u64);
    }

    /// A file whose first write runs a hook, to act during a flush.
    struct HookFile {
        inner: Arc<dyn FileHandle>,
        hook: Mutex<Option<Box<dyn FnOnce() + Send>>>,
    }

    impl FileHandle for HookFile {
        fn read_at(&self, b: &mut [u8], o: u64) -> io::Result<usize> {
            self.inner.read_at(b, o)
        }
        fn write_at(&self, b: &[u8], o: u64) -> io::Result<usize> {
            if let Some(h) = self.hook.lock().take() {
                h();
            }
            self.inner.write_at(b, o)
        }
        fn sync_data(&self) -> io::Result<()> {
            self.inner.sync_data()
        }
        fn sync_fs(&self) -> io::Result<()> {
            self.inner.sync_fs()
        }
        fn len(&self) -> io::Result<u64> {
            self.inner.len()
        }
        fn set_len(&self, l: u64) -> io::Result<()> {
            self.inner.set_len(l)
        }
    }

    #[test]
    fn change_during_flush_is_a_full_image_and_advances_rec_lsn() {
        let (be, pool, _) = setup();
        let inner = be.open(Path::new("/d/a.fdb"), OpenMode::Existing).unwrap();
        let hooked = Arc::new(HookFile {
            inner,
            hook: Mutex::new(None),
        });
        let f = pool.register(hooked.clone(), "h.fdb");
        pool.install(f, PageId(1), page_with(1), at(10), false);
        assert!(matches!(pool.prepare(f, PageId(1)), Prepared::Delta(_)));
        pool.install(f, PageId(1), page_with(2), at(20), true);
        let p2 = pool.clone();
        *hooked.hook.lock() = Some(Box::new(move || {
            // I6: a page being flushed is logged whole.
            assert!(matches!(p2.prepare(f, PageId(1)), Prepared::FullImage));
            p2.install(f, PageId(1), page_with(3), at(40), false);
        }));
        pool.flush(Lsn(100), None);
        assert_eq!(
            pool.min_rec_lsn(),
            Some(Lsn(39)),
            "rec LSN moved to the full image written during the flush"
        );
        assert!(
            matches!(pool.prepare(f, PageId(1)), Prepared::FullImage),
            "left dirty by the flush: next change is whole"
        );
        pool.flush(Lsn(100), None);
        assert_eq!(pool.min_rec_lsn(), None);
    }

    #[test]
    fn delta_installed_during_flush_keeps_the_old_rec_lsn() {
        let (be, pool, _) = setup();
        let inner = be.open(Path::new("/d/a.fdb"), OpenMode::Existing).unwrap();
        let hooked = Arc::new(HookFile {
            inner,
            hook: Mutex::new(None),
        });
        let f = pool.register(hooked.clone(), "h.fdb");
        pool.install(f, PageId(1), page_with(1), at(10), false);
        assert!(matches!(pool.prepare(f, PageId(1)), Prepared::Delta(_)));
        let p2 = pool.clone();
        *hooked.hook.lock() = Some(Box::new(move || {
            p2.install(f, PageId(1), page_with(2), at(30), true)
        }));
        pool.flush(Lsn(100), None);
        assert_eq!(
            pool.min_rec_lsn(),
            Some(Lsn(9)),
            "a delta prepared before the flush is not a safe redo start"
        );
        assert!(matches!(pool.prepare(f, PageId(1)), Prepared::FullImage));
        pool.install(f, PageId(1), page_with(3), at(50), false);
        assert_eq!(
            pool.min_rec_lsn(),
            Some(Lsn(49)),
            "the next full image moves the rec LSN"
        );
    }

    #[test]
    fn page_not_yet_durable_at_flush_gets_a_full_image_next() {
        let (_be, pool, f) = setup();
        pool.install(f, PageId(1), page_with(1), at(10), false);
        assert!(matches!(pool.prepare(f, PageId(1)), Prepared::Delta(_)));
        pool.install(f, PageId(1), page_with(2), at(20), true);
        let r = pool.flush(Lsn(12), None);
        assert_eq!((r.pages_written, r.not_durable), (0, 1));
        assert!(matches!(pool.prepare(f, PageId(1)), Prepared::FullImage));
        pool.install(f, PageId(1), page_with(3), at(30), false);
        assert_eq!(
            pool.min_rec_lsn(),
            Some(Lsn(29)),
            "rec LSN advanced without a flush"
        );
    }

    #[test]
    fn a_flush_over_many_files_writes_each_and_fails_only_the_bad_one() {
        struct FailingSync;
        impl FileHandle for FailingSync {
            fn read_at(&self, _: &mut [u8], _: u64) -> io::Result<usize> {
                Ok(0)
            }
            fn write_at(&self, b: &[u8], _: u64) -> io::Result<usize> {
                Ok(b.len())
            }
            fn sync_data(&self) -> io::Result<()> {
                Err(io::Error::from_raw_os_error(libc::EIO))
            }
            fn sync_fs(&self) -> io::Result<()> {
                Err(io::Error::from_raw_os_error(libc::EIO))
            }
            fn len(&self) -> io::Result<u64> {
                Ok(0)
            }
            fn set_len(&self, _: u64) -> io::Result<()> {
                Ok(())
            }
        }
        let (be, pool, _) = setup();
        let mut files = Vec::new();
        for i in 0..3 * PARALLEL_FILES as u8 {
            let path = format!("/d/f{i}.fdb");
            let h = be.open(Path::new(&path), OpenMode::CreateOrOpen).unwrap();
            let f = pool.register(h, &path);
            pool.install(f, PageId(0), page_with(i), at(10), false);
            pool.install(f, PageId(1), page_with(i), at(10), false);
            files.push((f, path));
        }
        let bad = pool.register(Arc::new(FailingSync), "bad.fdb");
        pool.install(bad, PageId(0), page_with(9), at(10), false);
        let r = pool.flush(Lsn(100), None);
        assert_eq!(r.pages_written, 2 * files.len() as u64);
        assert_eq!(r.failures.len(), 1);
        assert!(pool.failure(bad).is_some(), "I11");
        assert_eq!(pool.stats().dirty_pages, 1, "only the bad file's page");
        for (i, (_, path)) in files.iter().enumerate() {
            let bytes = be.file_bytes(Path::new(path)).unwrap();
            let p = PageBuf::from_bytes(&bytes[PAGE_SIZE..2 * PAGE_SIZE]).unwrap();
            p.verify(path, PageId(1)).unwrap();
            assert_eq!(p.body()[0], i as u8);
        }
    }

    #[test]
    fn release_keeps_a_file_with_dirty_frames_and_forgets_a_clean_one() {
        let (be, pool, f) = setup();
        let other = be
            .open(Path::new("/d/b.fdb"), OpenMode::CreateOrOpen)
            .unwrap();
        let g = pool.register(other, "b.fdb");
        pool.install(f, PageId(1), page_with(1), at(10), false);
        pool.install(f, PageId(2), page_with(2), at(20), false);
        pool.install(f, PageId(3), page_with(3), at(30), false);
        pool.flush(Lsn(25), None);
        assert_eq!(
            pool.release_file(f, 4),
            Err(1),
            "I19: the page whose batch is not durable is kept"
        );
        assert_eq!(pool.stats().resident_pages, 1, "the clean frames went");
        assert_eq!(pool.read(f, PageId(3)).unwrap().body()[0], 3);
        pool.flush_files(Lsn(100), &[g]);
        assert_eq!(pool.stats().dirty_pages, 1, "another file's flush left it");
        pool.flush_files(Lsn(100), &[f]);
        assert_eq!(pool.release_file(f, 4), Ok(1));
        assert_eq!(pool.stats().resident_pages, 0);
        let e = pool.read(f, PageId(1)).unwrap_err().to_string();
        assert!(e.contains("not registered"), "{e}");
    }

    #[test]
    fn released_frames_leave_no_clock_entries_behind() {
        let (be, pool, _) = setup();
        for round in 0..50u32 {
            let h = be.open(Path::new("/d/a.fdb"), OpenMode::Existing).unwrap();
            let f = pool.register(h, "a.fdb");
            for p in 0..8 {
                pool.install_clean(f, PageId(p), page_with(round as u8));
            }
            assert_eq!(pool.release_file(f, 8), Ok(8));
        }
        let keys: usize = pool.shards.iter().map(|s| s.lock().clock.len()).sum();
        assert!(keys <= SHARDS * 64, "{keys} stale clock keys");
    }

    #[test]
    fn failed_file_is_never_retried() {
        use crate::backend::{FaultBackend, FaultKind, FaultOp, FaultRule, MemBackend};
        use crate::{Backend, OpenMode};
        let fault = FaultBackend::new(Arc::new(MemBackend::new()));
        fault.add_rule(FaultRule {
            sticky: true,
            ..FaultRule::new(FaultOp::Write, FaultKind::Eio)
        });
        let file = fault
            .open(std::path::Path::new("bad.fdb"), OpenMode::CreateOrOpen)
            .unwrap();
        let pool = BufferPool::new(0);
        let f = pool.register(file, "bad.fdb");
        pool.install(f, PageId(1), page_with(1), at(1), false);
        let r = pool.flush(Lsn(10), None);
        assert_eq!(r.failures.len(), 1);
        assert!(pool.failure(f).is_some());
        let r2 = pool.flush(Lsn(10), None);
        assert!(
            r2.failures.is_empty() && r2.pages_written == 0,
            "I11: not retried"
        );
        assert_eq!(pool.min_rec_lsn(), Some(Lsn(0)), "dirty page kept");
    }
}
