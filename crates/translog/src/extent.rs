//! Extent files: their header, and how the writer gets one to write into.
//!
//! Extents are preallocated to exactly `extent_size` bytes so that
//! appending never changes a file's size and fdatasync has no metadata to
//! flush. The 4096-byte header names the log (`log_id`), the extent's
//! `seq` and the extent size, so recovery can reject a file that belongs to
//! another log, or a recycled file whose rename reached the disk but whose
//! new header did not.
//!
//! ```text
//!  0       8     12       20    28            36    40 ... 4096
//!  +-------+-----+--------+-----+-------------+-----+---------+
//!  | magic | ver | log_id | seq | extent_size | crc | zeros   |
//!  +-------+-----+--------+-----+-------------+-----+---------+
//!  magic = "FOLIOEXT", ver = 1, crc = crc32c of bytes 0..36
//! ```
//! When the writer needs extent `seq` it reuses the file of that name if it
//! exists (left over from before a crash), else recycles the oldest free
//! extent (one wholly below the redo LSN, I8) by renaming it, else creates
//! a new file. Renames and creations are made durable with a directory
//! sync before any record in the extent is acknowledged (I2).

use crate::geometry::{extent_path, parse_extent_name, Geometry, EXTENT_HEADER};
use crate::LogError;
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use storage::backend::write_all_at;
use storage::page::{get_u32, get_u64};
use storage::{Backend, FileHandle, OpenMode};

const MAGIC: &[u8; 8] = b"FOLIOEXT";
const VERSION: u32 = 1;
const CRC_AT: usize = 36;

/// What an extent header says about its file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct ExtentHeader {
    pub(crate) log_id: u64,
    pub(crate) seq: u64,
    pub(crate) extent_size: u64,
}

pub(crate) fn encode_header(h: &ExtentHeader) -> Vec<u8> {
    let mut b = vec![0u8; EXTENT_HEADER as usize];
    b[0..8].copy_from_slice(MAGIC);
    b[8..12].copy_from_slice(&VERSION.to_le_bytes());
    b[12..20].copy_from_slice(&h.log_id.to_le_bytes());
    b[20..28].copy_from_slice(&h.seq.to_le_bytes());
    b[28..36].copy_from_slice(&h.extent_size.to_le_bytes());
    let crc = crc32c::crc32c(&b[..CRC_AT]);
    b[CRC_AT..CRC_AT + 4].copy_from_slice(&crc.to_le_bytes());
    b
}

/// Decodes a header; `None` if it is not a valid header of any log.
pub(crate) fn decode_header(b: &[u8]) -> Option<ExtentHeader> {
    if b.len() < CRC_AT + 4 || &b[0..8] != MAGIC || get_u32(b, 8) != VERSION {
        return None;
    }
    if get_u32(b, CRC_AT) != crc32c::crc32c(&b[..CRC_AT]) {
        return None;
    }
    Some(ExtentHeader {
        log_id: get_u64(b, 12),
        seq: get_u64(b, 20),
        extent_size: get_u64(b, 28),
    })
}

/// The seqs of all extent files in `dir`.
pub(crate) fn list_extents(backend: &dyn Backend, dir: &Path) -> Result<BTreeSet<u64>, LogError> {
    let entries = backend.read_dir(dir).map_err(|e| LogError::io(dir, e))?;
    Ok(entries
        .iter()
        .filter_map(|p| parse_extent_name(p))
        .collect())
}

/// The extent files of one log as the writer sees them.
pub(crate) struct ExtentSet {
    backend: Arc<dyn Backend>,
    dir: PathBuf,
    geo: Geometry,
    log_id: u64,
    on_disk: BTreeSet<u64>,
    open: BTreeMap<u64, Arc<dyn FileHandle>>,
    count: Arc<AtomicU64>,
}

impl ExtentSet {
    /// `count` mirrors the number of extent files for statistics.
    pub(crate) fn new(
        backend: Arc<dyn Backend>,
        dir: PathBuf,
        geo: Geometry,
        log_id: u64,
        count: Arc<AtomicU64>,
    ) -> Result<Self, LogError> {
        let on_disk = list_extents(backend.as_ref(), &dir)?;
        let set = ExtentSet {
            backend,
            dir,
            geo,
            log_id,
            on_disk,
            open: BTreeMap::new(),
            count,
        };
        set.publish_count();
        Ok(set)
    }

    /// Removes free extents (below `redo_seq`) while more than `max` files
    /// exist, e.g. after `max_size` was lowered.
    pub(crate) fn trim(&mut self, redo_seq: u64, max: u64) -> Result<(), LogError> {
        let mut removed = false;
        while self.on_disk.len() as u64 > max {
            let Some(seq) = self.oldest_free(redo_seq) else {
                break;
            };
            let path = extent_path(&self.dir, seq);
            self.backend
                .remove_file(&path)
                .map_err(|e| LogError::io(&path, e))?;
            self.on_disk.remove(&seq);
            removed = true;
        }
        if removed {
            self.sync_dir()?;
        }
        self.publish_count();
        Ok(())
    }

    /// A handle on extent `seq`, preparing the file if needed. Extents
    /// below `redo_seq` are free for recycling (the caller passes the
    /// lower of the redo extent and, archive style, the archive mark's).
    pub(crate) fn handle(
        &mut self,
        seq: u64,
        redo_seq: u64,
    ) -> Result<Arc<dyn FileHandle>, LogError> {
        if let Some(h) = self.open.get(&seq) {
            return Ok(h.clone());
        }
        let h = if self.on_disk.contains(&seq) {
            self.reuse(seq)?
        } else if let Some(free) = self.oldest_free(redo_seq) {
            self.recycle(free, seq)?
        } else {
            self.create(seq)?
        };
        self.open.insert(seq, h.clone());
        self.publish_count();
        Ok(h)
    }

    /// The oldest extent file on disk.
    pub(crate) fn oldest(&self) -> Option<u64> {
        self.on_disk.first().copied()
    }

    /// Forgets cached handles of extents before `seq` (no longer written).
    pub(crate) fn close_below(&mut self, seq: u64) {
        self.open.retain(|s, _| *s >= seq);
    }

    pub(crate) fn path(&self, seq: u64) -> PathBuf {
        extent_path(&self.dir, seq)
    }

    fn oldest_free(&self, redo_seq: u64) -> Option<u64> {
        self.on_disk.first().copied().filter(|s| *s < redo_seq)
    }

    fn reuse(&mut self, seq: u64) -> Result<Arc<dyn FileHandle>, LogError> {
        let h = self.open_file(seq, OpenMode::Existing)?;
        self.init(seq, h.as_ref())?;
        Ok(h)
    }

    fn recycle(&mut self, old: u64, seq: u64) -> Result<Arc<dyn FileHandle>, LogError> {
        let (from, to) = (self.path(old), self.path(seq));
        self.open.remove(&old);
        self.backend
            .rename(&from, &to)
            .map_err(|e| LogError::io(&from, e))?;
        self.on_disk.remove(&old);
        self.on_disk.insert(seq);
        // I2: the rename is durable before any record in it is acknowledged.
        self.sync_dir()?;
        self.reuse(seq)
    }

    fn create(&mut self, seq: u64) -> Result<Arc<dyn FileHandle>, LogError> {
        let h = self.open_file(seq, OpenMode::CreateNew)?;
        self.on_disk.insert(seq);
        self.init(seq, h.as_ref())?;
        // I2: the new directory entry is durable before any record in the
        // extent is acknowledged.
        self.sync_dir()?;
        Ok(h)
    }

    /// Gives the file its exact size and this log's header for `seq`. A new
    /// file is written with zeros end to end rather than left sparse: later
    /// log writes then overwrite allocated blocks, so each group commit's
    /// fdatasync flushes data only, with no block-allocation metadata.
    fn init(&self, seq: u64, h: &dyn FileHandle) -> Result<(), LogError> {
        let path = self.path(seq);
        let io = |e| LogError::io(&path, e);
        let size = self.geo.extent_size();
        if h.len().map_err(io)? != size {
            let zeros = vec![0u8; (1 << 20).min(size as usize)];
            let mut off = 0;
            while off < size {
                let n = zeros.len().min((size - off) as usize);
                write_all_at(h, &zeros[..n], off).map_err(io)?;
                off += n as u64;
            }
        }
        let header = ExtentHeader {
            log_id: self.log_id,
            seq,
            extent_size: self.geo.extent_size(),
        };
        write_all_at(h, &encode_header(&header), 0).map_err(io)?;
        h.sync_data().map_err(io)
    }

    fn open_file(&self, seq: u64, mode: OpenMode) -> Result<Arc<dyn FileHandle>, LogError> {
        let path = self.path(seq);
        self.backend
            .open(&path, mode)
            .map_err(|e| LogError::io(&path, e))
    }

    fn sync_dir(&self) -> Result<(), LogError> {
        self.backend
            .sync_dir(&self.dir)
            .map_err(|e| LogError::io(&self.dir, e))
    }

    fn publish_count(&self) {
        self.count
            .store(self.on_disk.len() as u64, Ordering::Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use storage::backend::MemBackend;

    fn set(mem: &MemBackend) -> ExtentSet {
        let dir = PathBuf::from("/log");
        mem.create_dir_all(&dir).unwrap();
        ExtentSet::new(
            Arc::new(mem.clone()),
            dir,
            Geometry::new(65536),
            9,
            Arc::default(),
        )
        .unwrap()
    }

    fn header_of(mem: &MemBackend, seq: u64) -> Option<ExtentHeader> {
        decode_header(&mem.file_bytes(&extent_path(Path::new("/log"), seq))?)
    }

    #[test]
    fn header_round_trips_and_rejects_damage() {
        let h = ExtentHeader {
            log_id: 1,
            seq: 2,
            extent_size: 65536,
        };
        let mut b = encode_header(&h);
        assert_eq!(decode_header(&b), Some(h));
        b[21] ^= 1;
        assert_eq!(decode_header(&b), None);
        assert_eq!(decode_header(&b[..10]), None);
    }

    #[test]
    fn creates_then_recycles_the_oldest_free_extent() {
        let mem = MemBackend::new();
        let mut s = set(&mem);
        for seq in 1..=3 {
            s.handle(seq, 1).unwrap();
        }
        assert_eq!(s.count.load(Ordering::Relaxed), 3);
        s.close_below(3);
        s.handle(4, 3).unwrap();
        assert_eq!(
            s.on_disk.iter().copied().collect::<Vec<_>>(),
            vec![2, 3, 4],
            "1 was recycled"
        );
        assert_eq!(header_of(&mem, 4).map(|h| h.seq), Some(4));
        assert_eq!(
            mem.file_bytes(&extent_path(Path::new("/log"), 4))
                .unwrap()
                .len(),
            65536
        );
    }

    #[test]
    fn reuse_repairs_size_and_header() {
        let mem = MemBackend::new();
        let mut s = set(&mem);
        s.handle(5, 1).unwrap();
        let path = extent_path(Path::new("/log"), 5);
        mem.set_file_bytes(&path, vec![7; 100]);
        let mut s = set(&mem);
        s.handle(5, 1).unwrap();
        assert_eq!(header_of(&mem, 5).map(|h| h.seq), Some(5));
        assert_eq!(mem.file_bytes(&path).unwrap().len(), 65536);
    }

    #[test]
    fn trim_removes_only_free_extents() {
        let mem = MemBackend::new();
        let mut s = set(&mem);
        for seq in 1..=4 {
            s.handle(seq, 1).unwrap();
        }
        s.trim(3, 2).unwrap();
        assert_eq!(s.on_disk.iter().copied().collect::<Vec<_>>(), vec![3, 4]);
        s.trim(3, 1).unwrap();
        assert_eq!(
            s.on_disk.len(),
            2,
            "extents at or above the redo extent stay"
        );
    }
}
