//! The control file: the one small piece of mutable metadata of the log.
//!
//! It says where recovery must start (the last checkpoint and its redo LSN)
//! and which life of the log this is (the epoch, I10). It must never be
//! half-updated, so it is never updated in place: it has two fixed slots,
//! each with its own crc and a generation number. An update writes the
//! slot *not* holding the current state and fdatasyncs it (I9); a reader
//! takes the valid slot with the higher generation. A torn write therefore
//! damages only the slot being written, and the previous state survives in
//! the other one.
//!
//! ```text
//!  slot i at byte 512*i (512 bytes, rest zero)
//!  0       8     12           20       28     32            40               48         56             64    68
//!  +-------+-----+------------+--------+------+-------------+----------------+----------+--------------+-----+
//!  | magic | ver | generation | log_id | epoch| extent_size | checkpoint_lsn | redo_lsn | archived_lsn | crc |
//!  +-------+-----+------------+--------+------+-------------+----------------+----------+--------------+-----+
//!  magic = "FOLIOCTL", ver = 2, crc = crc32c of bytes 0..64
//! ```
//! A `checkpoint_lsn` of 0 means no checkpoint has been written yet.
//! `archived_lsn` is the archive mark (I31): every extent wholly below it
//! has a verified copy in the archive directory (or lies below where
//! archive style began). Version 1 slots (no mark, crc at byte 56) are
//! still read, with a mark of 0; every update writes version 2.

use crate::LogError;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use storage::backend::{read_file, write_all_at, write_file_atomic};
use storage::page::{get_u32, get_u64};
use storage::{Backend, FileHandle, Lsn, OpenMode};

/// Name of the control file in the log directory.
pub(crate) const CONTROL_FILE: &str = "control";
const SLOT_SIZE: usize = 512;
const MAGIC: &[u8; 8] = b"FOLIOCTL";
const VERSION: u32 = 2;
const CRC_AT: usize = 64;
/// Version 1 (before the archive mark) kept its crc here.
const V1_CRC_AT: usize = 56;
/// LSNs beyond this are rejected as implausible, so arithmetic on values
/// read from disk can never overflow.
pub(crate) const MAX_LSN: u64 = 1 << 62;

/// The content of one slot.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct ControlData {
    pub(crate) generation: u64,
    pub(crate) log_id: u64,
    pub(crate) epoch: u32,
    pub(crate) extent_size: u64,
    pub(crate) checkpoint_lsn: Lsn,
    pub(crate) redo_lsn: Lsn,
    /// The archive mark (I31); 0 = nothing archived.
    pub(crate) archived_lsn: Lsn,
}

pub(crate) fn encode_slot(d: &ControlData) -> [u8; SLOT_SIZE] {
    let mut b = [0u8; SLOT_SIZE];
    b[0..8].copy_from_slice(MAGIC);
    b[8..12].copy_from_slice(&VERSION.to_le_bytes());
    b[12..20].copy_from_slice(&d.generation.to_le_bytes());
    b[20..28].copy_from_slice(&d.log_id.to_le_bytes());
    b[28..32].copy_from_slice(&d.epoch.to_le_bytes());
    b[32..40].copy_from_slice(&d.extent_size.to_le_bytes());
    b[40..48].copy_from_slice(&d.checkpoint_lsn.0.to_le_bytes());
    b[48..56].copy_from_slice(&d.redo_lsn.0.to_le_bytes());
    b[56..64].copy_from_slice(&d.archived_lsn.0.to_le_bytes());
    let crc = crc32c::crc32c(&b[..CRC_AT]);
    b[CRC_AT..CRC_AT + 4].copy_from_slice(&crc.to_le_bytes());
    b
}

/// Decodes a slot; the error says why it is unusable.
pub(crate) fn decode_slot(b: &[u8]) -> Result<ControlData, &'static str> {
    if b.len() < SLOT_SIZE {
        return Err("slot is truncated");
    }
    if &b[0..8] != MAGIC {
        return Err("bad magic");
    }
    let (crc_at, archived_lsn) = match get_u32(b, 8) {
        VERSION => (CRC_AT, Lsn(get_u64(b, 56))),
        1 => (V1_CRC_AT, Lsn::ZERO),
        _ => return Err("unsupported version"),
    };
    if get_u32(b, crc_at) != crc32c::crc32c(&b[..crc_at]) {
        return Err("checksum mismatch");
    }
    let d = ControlData {
        generation: get_u64(b, 12),
        log_id: get_u64(b, 20),
        epoch: get_u32(b, 28),
        extent_size: get_u64(b, 32),
        checkpoint_lsn: Lsn(get_u64(b, 40)),
        redo_lsn: Lsn(get_u64(b, 48)),
        archived_lsn,
    };
    check_lsns(&d)?;
    Ok(d)
}

fn check_lsns(d: &ControlData) -> Result<(), &'static str> {
    if d.checkpoint_lsn.0 >= MAX_LSN || d.redo_lsn > d.checkpoint_lsn {
        return Err("implausible checkpoint or redo LSN");
    }
    if d.archived_lsn.0 >= MAX_LSN {
        return Err("implausible archive mark");
    }
    Ok(())
}

/// The open control file and the state of its newest slot.
pub(crate) struct ControlFile {
    path: PathBuf,
    handle: Arc<dyn FileHandle>,
    data: ControlData,
    slot: usize,
}

impl ControlFile {
    pub(crate) fn path(dir: &Path) -> PathBuf {
        dir.join(CONTROL_FILE)
    }

    /// Creates the control file of a new log (slot 0 valid, slot 1 empty),
    /// atomically: a crash leaves either no control file or this one.
    pub(crate) fn create(
        backend: &dyn Backend,
        dir: &Path,
        data: ControlData,
    ) -> Result<Self, LogError> {
        let path = Self::path(dir);
        let mut bytes = encode_slot(&data).to_vec();
        bytes.resize(2 * SLOT_SIZE, 0);
        write_file_atomic(backend, &path, &bytes).map_err(|e| LogError::io(&path, e))?;
        let handle = open_existing(backend, &path)?;
        Ok(ControlFile {
            path,
            handle,
            data,
            slot: 0,
        })
    }

    /// Opens an existing control file and picks the valid slot with the
    /// higher generation (I9).
    pub(crate) fn load(backend: &dyn Backend, dir: &Path) -> Result<Self, LogError> {
        let path = Self::path(dir);
        let bytes = read_file(backend, &path).map_err(|e| LogError::io(&path, e))?;
        let (slot, data) = newest_slot(&bytes).map_err(|reason| LogError::BadControl {
            path: path.clone(),
            reason,
        })?;
        let handle = open_existing(backend, &path)?;
        Ok(ControlFile {
            path,
            handle,
            data,
            slot,
        })
    }

    pub(crate) fn data(&self) -> &ControlData {
        &self.data
    }

    /// Applies `change` and makes it durable in the other slot.
    pub(crate) fn update(&mut self, change: impl FnOnce(&mut ControlData)) -> Result<(), LogError> {
        let mut next = self.data.clone();
        change(&mut next);
        next.generation += 1;
        let slot = 1 - self.slot;
        let io = |e| LogError::io(&self.path, e);
        // I9: write the slot not holding the current state, then fdatasync;
        // only then is the new state the one readers will choose.
        write_all_at(
            self.handle.as_ref(),
            &encode_slot(&next),
            (slot * SLOT_SIZE) as u64,
        )
        .map_err(io)?;
        self.handle.sync_data().map_err(io)?;
        self.data = next;
        self.slot = slot;
        Ok(())
    }
}

fn open_existing(backend: &dyn Backend, path: &Path) -> Result<Arc<dyn FileHandle>, LogError> {
    backend
        .open(path, OpenMode::Existing)
        .map_err(|e| LogError::io(path, e))
}

/// The index and content of the valid slot with the higher generation.
fn newest_slot(bytes: &[u8]) -> Result<(usize, ControlData), String> {
    let decoded: Vec<_> = (0..2)
        .map(|i| decode_slot(bytes.get(i * SLOT_SIZE..).unwrap_or(&[])))
        .collect();
    let best = decoded
        .iter()
        .enumerate()
        .filter_map(|(i, d)| d.as_ref().ok().map(|d| (i, d.clone())))
        .max_by_key(|(_, d)| d.generation);
    best.ok_or_else(|| {
        let why = |d: &Result<ControlData, &'static str>| d.as_ref().err().copied().unwrap_or("");
        format!(
            "no valid slot (slot 0: {}; slot 1: {})",
            why(&decoded[0]),
            why(&decoded[1])
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use storage::backend::MemBackend;

    fn data() -> ControlData {
        ControlData {
            generation: 1,
            log_id: 42,
            epoch: 1,
            extent_size: 65536,
            checkpoint_lsn: Lsn(0),
            redo_lsn: Lsn(0),
            archived_lsn: Lsn(0),
        }
    }

    fn setup() -> (MemBackend, PathBuf) {
        let mem = MemBackend::new();
        let dir = PathBuf::from("/log");
        mem.create_dir_all(&dir).unwrap();
        (mem, dir)
    }

    #[test]
    fn updates_alternate_slots_and_survive_reload() {
        let (mem, dir) = setup();
        let mut c = ControlFile::create(&mem, &dir, data()).unwrap();
        c.update(|d| d.epoch = 2).unwrap();
        c.update(|d| d.checkpoint_lsn = Lsn(100)).unwrap();
        let back = ControlFile::load(&mem, &dir).unwrap();
        assert_eq!(back.data(), c.data());
        assert_eq!((back.data().generation, back.data().epoch), (3, 2));
        assert_eq!(back.slot, 0, "generation 3 went to slot 0");
    }

    #[test]
    fn torn_newest_slot_falls_back_to_the_other() {
        let (mem, dir) = setup();
        let mut c = ControlFile::create(&mem, &dir, data()).unwrap();
        c.update(|d| d.epoch = 7).unwrap(); // generation 2 in slot 1
        let path = ControlFile::path(&dir);
        let good = mem.file_bytes(&path).unwrap();
        for damage in [0usize, 30, 50, 60, 65] {
            let mut bytes = good.clone();
            bytes[SLOT_SIZE + damage] ^= 0x40;
            mem.set_file_bytes(&path, bytes);
            let back = ControlFile::load(&mem, &dir).unwrap();
            assert_eq!(
                (back.data().generation, back.data().epoch),
                (1, 1),
                "damage at {damage}"
            );
        }
        let mut padding = good.clone();
        padding[SLOT_SIZE + 511] ^= 0x40;
        mem.set_file_bytes(&path, padding);
        assert_eq!(
            ControlFile::load(&mem, &dir).unwrap().data().generation,
            2,
            "padding carries no data"
        );
        let mut cut = good;
        cut.truncate(SLOT_SIZE + 100);
        mem.set_file_bytes(&path, cut);
        assert_eq!(ControlFile::load(&mem, &dir).unwrap().data().generation, 1);
        assert_eq!(c.data().generation, 2);
    }

    #[test]
    fn no_valid_slot_is_a_named_error() {
        let (mem, dir) = setup();
        ControlFile::create(&mem, &dir, data()).unwrap();
        mem.set_file_bytes(&ControlFile::path(&dir), vec![0xee; 2 * SLOT_SIZE]);
        let e = ControlFile::load(&mem, &dir).err().unwrap().to_string();
        assert!(
            e.contains("no valid slot") && e.contains("bad magic"),
            "{e}"
        );
    }

    #[test]
    fn implausible_lsns_are_rejected() {
        let bad = ControlData {
            checkpoint_lsn: Lsn(10),
            redo_lsn: Lsn(20),
            ..data()
        };
        assert!(decode_slot(&encode_slot(&bad)).is_err());
        let huge = ControlData {
            checkpoint_lsn: Lsn(u64::MAX),
            ..data()
        };
        assert!(decode_slot(&encode_slot(&huge)).is_err());
    }

    /// A control file written by version 1 (checked in, from before the
    /// archive mark) opens with a mark of 0; the next update writes a
    /// version-2 slot that carries the mark, and both load again.
    #[test]
    fn version_1_control_files_are_read_and_upgraded() {
        let (mem, dir) = setup();
        let v1 = include_bytes!("../tests/fixtures/control-v1");
        mem.set_file_bytes(&ControlFile::path(&dir), v1.to_vec());
        let mut c = ControlFile::load(&mem, &dir).unwrap();
        let want = ControlData {
            generation: 7,
            log_id: 0x1234_5678_9abc_def0,
            epoch: 3,
            extent_size: 65536,
            checkpoint_lsn: Lsn(0x1_2000),
            redo_lsn: Lsn(0x1_1000),
            archived_lsn: Lsn::ZERO,
        };
        assert_eq!((c.data(), c.slot), (&want, 1));
        c.update(|d| d.archived_lsn = Lsn(0x1_0000)).unwrap();
        let bytes = mem.file_bytes(&ControlFile::path(&dir)).unwrap();
        assert_eq!(get_u32(&bytes, 8), VERSION, "slot 0 was rewritten as v2");
        assert_eq!(get_u32(&bytes, SLOT_SIZE + 8), 1, "slot 1 is still v1");
        let back = ControlFile::load(&mem, &dir).unwrap();
        assert_eq!(back.data().archived_lsn, Lsn(0x1_0000));
        assert_eq!(back.data().generation, 8);
        let mut torn = bytes;
        torn[60] ^= 1;
        mem.set_file_bytes(&ControlFile::path(&dir), torn);
        assert_eq!(
            ControlFile::load(&mem, &dir).unwrap().data(),
            &want,
            "a torn v2 slot falls back to the v1 one"
        );
    }

    #[test]
    fn unknown_versions_are_named() {
        let mut b = encode_slot(&data());
        b[8] = 9;
        let crc = crc32c::crc32c(&b[..CRC_AT]);
        b[CRC_AT..CRC_AT + 4].copy_from_slice(&crc.to_le_bytes());
        assert_eq!(decode_slot(&b), Err("unsupported version"));
    }
}
