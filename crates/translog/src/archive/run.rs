//! `TransLog::archive`: copy completed extents to the archive directory,
//! verify the copies, and only then let the log reuse the extents.
//!
//! In archive style an extent may be reused only once it lies below both
//! the redo LSN and the archive mark (I31). The mark lives in the control
//! file and moves one extent at a time, after that extent's copy is
//! durable and verified:
//!
//! ```text
//!  for each completed extent seq at or above the mark:
//!    read ext-seq ──crc──▶ write arc-<log>-<lsn>.log.partial, fdatasync
//!    rename .partial ─▶ arc-<log>-<lsn>.log, sync the archive directory
//!    re-read the copy: length, whole-file crc32c, header, record chain
//!    control file: archived_lsn = next extent's start (I9, fdatasync)
//!    writer may now recycle ext-seq once the redo LSN is past it too
//! ```
//! A crash anywhere leaves the mark at or below the last verified copy:
//! at worst a `.partial` file, or a complete copy the mark does not yet
//! cover, both of which the next run rewrites. Only complete extents
//! (wholly below the durable LSN) are copied, so the writer never touches
//! an extent while it is read, and the extents at or above the mark are
//! never recycled, so nobody renames one away either. A failure to write
//! the archive is not a log failure: appends go on (until the log fills)
//! and the mark stays. A failure to update the control file poisons the
//! log, as for a checkpoint (I11).

use crate::extent::decode_header;
use crate::geometry::{archived_path, extent_path, Geometry};
use crate::reader::{ExtentFiles, LogIdentity, LogReader, Next, StopReason};
use crate::{LogError, LogStyle, TransLog};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};
use storage::backend::{read_exact_at, write_all_at};
use storage::{Backend, Lsn, OpenMode};

/// Bytes copied per read and write.
const CHUNK: u64 = 1 << 20;

/// What one archive run did.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct ArchiveReport {
    /// The directory the copies went to.
    pub archive_dir: PathBuf,
    /// Extents copied and verified by this run.
    pub extents_copied: u64,
    /// Bytes of extent files copied.
    pub bytes_copied: u64,
    /// The archive mark afterwards (I31): the log below it is archived.
    pub archived_lsn: Lsn,
    /// Completed extents still waiting (appended during the run).
    pub extents_waiting: u64,
    pub elapsed: Duration,
}

pub(crate) fn run(log: &TransLog, to: Option<&Path>) -> Result<ArchiveReport, LogError> {
    let started = Instant::now();
    if log.cfg.style != LogStyle::Archive {
        return Err(LogError::Invalid(format!(
            "the transaction log's style is {}; archiving needs translog.style = \"archive\"",
            log.cfg.style.as_str()
        )));
    }
    let dir = to
        .map(Path::to_path_buf)
        .or_else(|| log.cfg.archive_dir.clone())
        .ok_or_else(|| {
            LogError::Invalid(
                "no archive directory: give one (--to DIR) or set translog.archive_dir".into(),
            )
        })?;
    let _one = log.archiving.lock();
    let backend = log.backend.as_ref();
    backend
        .create_dir_all(&dir)
        .map_err(|e| LogError::io(&dir, e))?;
    let geo = log.shared.geo;
    let copier = Copier {
        backend,
        log_dir: &log.cfg.dir,
        archive_dir: &dir,
        id: LogIdentity {
            geo,
            log_id: log.control.lock().data().log_id,
            epoch: u32::MAX,
        },
    };
    let (mark, durable) = log.shared.archive_window();
    let (first, end) = (geo.seq_of(mark).max(1), geo.seq_of(durable));
    let mut report = ArchiveReport {
        archive_dir: dir.clone(),
        extents_copied: 0,
        bytes_copied: 0,
        archived_lsn: mark,
        extents_waiting: 0,
        elapsed: Duration::ZERO,
    };
    for seq in first..end {
        report.bytes_copied += copier.copy(seq)?;
        copier.verify(seq)?;
        let next = geo.extent_start(seq + 1);
        advance_mark(log, next)?;
        report.extents_copied += 1;
        report.archived_lsn = next;
    }
    log.shared.note_archive_run();
    report.extents_waiting = log.info().extents_awaiting_archive;
    report.elapsed = started.elapsed();
    tracing::info!(
        extents = report.extents_copied,
        bytes = report.bytes_copied,
        archived_lsn = %report.archived_lsn,
        dir = %dir.display(),
        "transaction log archived"
    );
    Ok(report)
}

/// I31: the mark moves past an extent only after its copy is durable and
/// verified; the control update is durable (I9) before the writer may
/// recycle the extent.
fn advance_mark(log: &TransLog, next: Lsn) -> Result<(), LogError> {
    let update = log.control.lock().update(|c| {
        c.archived_lsn = c.archived_lsn.max(next);
    });
    if let Err(e) = update {
        let reason = e.to_string();
        log.shared.poison(reason.clone());
        return Err(LogError::Failed { reason });
    }
    log.shared.complete_archive(next);
    Ok(())
}

struct Copier<'a> {
    backend: &'a dyn Backend,
    log_dir: &'a Path,
    archive_dir: &'a Path,
    id: LogIdentity,
}

impl Copier<'_> {
    fn target(&self, seq: u64) -> PathBuf {
        archived_path(
            self.archive_dir,
            self.id.log_id,
            self.id.geo.extent_start(seq),
        )
    }

    /// Copies extent `seq` under a temporary name, makes it durable, and
    /// renames it into place durably (I31). Returns the bytes copied.
    fn copy(&self, seq: u64) -> Result<u64, LogError> {
        let (src_path, dst_path) = (extent_path(self.log_dir, seq), self.target(seq));
        let partial = dst_path.with_extension("log.partial");
        let src = self
            .backend
            .open(&src_path, OpenMode::Existing)
            .map_err(|e| LogError::io(&src_path, e))?;
        let dst = self
            .backend
            .open(&partial, OpenMode::CreateOrOpen)
            .map_err(|e| LogError::io(&partial, e))?;
        let out = |e| LogError::io(&partial, e);
        dst.set_len(0).map_err(out)?;
        let size = self.id.geo.extent_size();
        let mut buf = vec![0u8; CHUNK.min(size) as usize];
        let mut off = 0;
        while off < size {
            let n = CHUNK.min(size - off) as usize;
            read_exact_at(src.as_ref(), &mut buf[..n], off)
                .map_err(|e| LogError::io(&src_path, e))?;
            if off == 0 {
                self.check_header(&buf[..n], seq, &src_path)?;
            }
            write_all_at(dst.as_ref(), &buf[..n], off).map_err(out)?;
            off += n as u64;
        }
        // I31: the copy's bytes are durable before its final name is.
        dst.sync_data().map_err(out)?;
        drop(dst);
        self.backend
            .rename(&partial, &dst_path)
            .map_err(|e| LogError::io(&partial, e))?;
        // I31: the name is durable before the mark can move past it.
        self.backend
            .sync_dir(self.archive_dir)
            .map_err(|e| LogError::io(self.archive_dir, e))?;
        Ok(size)
    }

    fn check_header(&self, bytes: &[u8], seq: u64, path: &Path) -> Result<(), LogError> {
        let h = decode_header(bytes);
        let ok = h.is_some_and(|h| {
            h.log_id == self.id.log_id && h.seq == seq && h.extent_size == self.id.geo.extent_size()
        });
        if ok {
            return Ok(());
        }
        Err(LogError::corrupt(
            self.id.geo.extent_start(seq),
            format!(
                "{} does not carry this log's header for extent {seq}",
                path.display()
            ),
        ))
    }

    /// Re-reads the copy and checks it against the extent, byte for byte
    /// through the whole-file crc32c, then walks its records: they must
    /// chain, every checksum valid, to the extent's end.
    fn verify(&self, seq: u64) -> Result<(), LogError> {
        let (src_path, dst_path) = (extent_path(self.log_dir, seq), self.target(seq));
        let want = file_crc(self.backend, &src_path)?;
        let got = file_crc(self.backend, &dst_path)?;
        let mismatch = |reason: String| LogError::ArchiveMismatch {
            path: dst_path.clone(),
            reason,
        };
        if got != want {
            return Err(mismatch(format!(
                "length and crc32c {got:?} differ from the extent's {want:?}"
            )));
        }
        self.check_header(&read_head(self.backend, &dst_path)?, seq, &dst_path)?;
        let geo: Geometry = self.id.geo;
        let files = ExtentFiles::Single {
            seq,
            path: &dst_path,
        };
        let mut reader = LogReader::over(self.backend, files, self.id, geo.extent_start(seq));
        let stop = loop {
            if let Next::End(stop) = reader.next()? {
                break stop;
            }
        };
        let at = reader.position();
        if stop == StopReason::NoExtent && at == geo.extent_start(seq + 1) {
            return Ok(());
        }
        Err(mismatch(format!(
            "its records end at {at} ({stop:?}) before the extent's end"
        )))
    }
}

/// The length and crc32c of a whole file.
fn file_crc(backend: &dyn Backend, path: &Path) -> Result<(u64, u32), LogError> {
    let io = |e| LogError::io(path, e);
    let f = backend.open(path, OpenMode::Existing).map_err(io)?;
    let len = f.len().map_err(io)?;
    let mut buf = vec![0u8; CHUNK.min(len) as usize];
    let (mut off, mut crc) = (0, 0u32);
    while off < len {
        let n = CHUNK.min(len - off) as usize;
        read_exact_at(f.as_ref(), &mut buf[..n], off).map_err(io)?;
        crc = crc32c::crc32c_append(crc, &buf[..n]);
        off += n as u64;
    }
    Ok((len, crc))
}

fn read_head(backend: &dyn Backend, path: &Path) -> Result<Vec<u8>, LogError> {
    let io = |e| LogError::io(path, e);
    let f = backend.open(path, OpenMode::Existing).map_err(io)?;
    let mut head = vec![0u8; crate::geometry::EXTENT_HEADER as usize];
    read_exact_at(f.as_ref(), &mut head, 0).map_err(io)?;
    Ok(head)
}
