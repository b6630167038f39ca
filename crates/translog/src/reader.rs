//! Reading the log back: where the valid log ends.
//!
//! Recovery has to find the end of what was really written in this log,
//! without any "end" pointer on disk (keeping one up to date would cost a
//! second fsync per commit). The reader walks records from a starting LSN
//! and stops at the first one that fails any of the I10 rules:
//!
//! - its checksum fails or it is cut short (a torn write);
//! - its stored LSN is not its position (stale bytes: a recycled extent,
//!   or a tail left behind from before the last restart);
//! - its epoch is lower than the previous record's (a valid record written
//!   by an earlier life of the log, beyond where this life has written).
//!
//! A record whose checksum is valid but whose content is malformed, or
//! whose epoch is newer than the control file's, cannot be produced by
//! this code: it is reported as corruption rather than treated as the end,
//! because silently ending there could drop committed transactions.
//!
//! Extents are read through a window of [`WINDOW`] bytes, so the whole log
//! is read sequentially in large reads without being held in memory.

use crate::control::ControlData;
use crate::extent::decode_header;
use crate::geometry::{archived_path, extent_path, Geometry, EXTENT_HEADER};
use crate::record::{self, Body, DecodeError, Header, Kind, RECORD_HEADER};
use crate::LogError;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use storage::{Backend, FileHandle, Lsn, OpenMode};

/// Bytes read from an extent at a time.
const WINDOW: usize = 1 << 20;

/// Why the valid log ends where it does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StopReason {
    /// The next extent file does not exist.
    NoExtent,
    /// The next extent file's header is invalid or belongs elsewhere.
    BadExtentHeader,
    /// Never-written (zero) bytes.
    Zeroed,
    /// A record whose stored LSN is not its position.
    StaleLsn,
    /// A valid record from an earlier epoch (I10).
    OldEpoch,
    /// A record cut short or failing its checksum.
    Torn,
}

impl StopReason {
    /// Whether the end is a partially written record (a torn tail) rather
    /// than the clean end of what was written.
    pub fn is_torn(self) -> bool {
        self == StopReason::Torn
    }
}

/// One step of the reader.
pub(crate) enum Next<'r> {
    Record { header: Header, body: Body<'r> },
    End(StopReason),
}

/// What the reader needs to know about the log it reads.
#[derive(Clone, Copy)]
pub(crate) struct LogIdentity {
    pub(crate) geo: Geometry,
    pub(crate) log_id: u64,
    /// The control file's epoch: no record can be newer.
    pub(crate) epoch: u32,
}

impl LogIdentity {
    pub(crate) fn of(geo: Geometry, control: &ControlData) -> Self {
        LogIdentity {
            geo,
            log_id: control.log_id,
            epoch: control.epoch,
        }
    }
}

/// Where the reader finds the file of extent `seq`.
#[derive(Clone, Copy)]
pub(crate) enum ExtentFiles<'a> {
    /// The live log's directory.
    Log(&'a Path),
    /// One file standing for extent `seq`; no other extent exists.
    Single { seq: u64, path: &'a Path },
    /// Archived copies (`arc-…` names) first, then the live log if given.
    Archive {
        archive: &'a Path,
        log: Option<&'a Path>,
    },
}

/// Sequential reader of records from a starting LSN.
pub(crate) struct LogReader<'a> {
    backend: &'a dyn Backend,
    files: ExtentFiles<'a>,
    id: LogIdentity,
    pos: Lsn,
    prev_epoch: u32,
    window: Option<Window>,
}

/// A buffered part of one extent file.
struct Window {
    seq: u64,
    path: PathBuf,
    handle: Arc<dyn FileHandle>,
    /// File offset of `data[0]`.
    start: u64,
    data: Vec<u8>,
}

impl Window {
    /// Makes `[off, off + len)` available if the file has it; false at EOF.
    fn load(&mut self, off: u64, len: usize, file_end: u64) -> io::Result<bool> {
        let have = off >= self.start && off + len as u64 <= self.start + self.data.len() as u64;
        if have {
            return Ok(true);
        }
        let want = (len.max(WINDOW) as u64).min(file_end.saturating_sub(off)) as usize;
        self.data.resize(want, 0);
        let got = read_some(self.handle.as_ref(), &mut self.data, off)?;
        self.data.truncate(got);
        self.start = off;
        Ok(got >= len)
    }

    fn slice(&self, off: u64, len: usize) -> &[u8] {
        let at = (off - self.start) as usize;
        &self.data[at..at + len]
    }
}

/// Reads as much of `buf` as the file has at `off`.
fn read_some(f: &dyn FileHandle, buf: &mut [u8], off: u64) -> io::Result<usize> {
    let mut got = 0;
    while got < buf.len() {
        let n = f.read_at(&mut buf[got..], off + got as u64)?;
        if n == 0 {
            break;
        }
        got += n;
    }
    Ok(got)
}

impl<'a> LogReader<'a> {
    pub(crate) fn new(
        backend: &'a dyn Backend,
        dir: &'a Path,
        id: LogIdentity,
        start: Lsn,
    ) -> Self {
        Self::over(backend, ExtentFiles::Log(dir), id, start)
    }

    /// A reader over extent files found as `files` says.
    pub(crate) fn over(
        backend: &'a dyn Backend,
        files: ExtentFiles<'a>,
        id: LogIdentity,
        start: Lsn,
    ) -> Self {
        LogReader {
            backend,
            files,
            id,
            pos: start,
            prev_epoch: 0,
            window: None,
        }
    }

    /// The LSN of the next record (after the last one returned).
    pub(crate) fn position(&self) -> Lsn {
        self.pos
    }

    /// The next valid record, or why the valid log ends here.
    pub(crate) fn next(&mut self) -> Result<Next<'_>, LogError> {
        if let Some(stop) = self.enter_extent()? {
            return Ok(Next::End(stop));
        }
        let geo = self.id.geo;
        let (pos, off, room) = (self.pos, geo.file_offset(self.pos), geo.room_left(self.pos));
        let Some(win) = self.window.as_mut() else {
            return Ok(Next::End(StopReason::NoExtent));
        };
        if !win
            .load(off, RECORD_HEADER, geo.extent_size())
            .map_err(|e| LogError::io(&win.path, e))?
        {
            return Ok(Next::End(StopReason::Torn));
        }
        let Ok(head) = <&[u8; RECORD_HEADER]>::try_from(win.slice(off, RECORD_HEADER)) else {
            return Ok(Next::End(StopReason::Torn));
        };
        if head.iter().all(|b| *b == 0) {
            return Ok(Next::End(StopReason::Zeroed));
        }
        let (len, lsn) = record::peek(head);
        if lsn != pos {
            return Ok(Next::End(StopReason::StaleLsn));
        }
        let len = len as usize;
        if len < RECORD_HEADER || len as u64 > room {
            return Ok(Next::End(StopReason::Torn));
        }
        if !win
            .load(off, len, geo.extent_size())
            .map_err(|e| LogError::io(&win.path, e))?
        {
            return Ok(Next::End(StopReason::Torn));
        }
        let (header, body) = match record::decode(win.slice(off, len)) {
            Ok(r) => r,
            Err(DecodeError::Length | DecodeError::Checksum) => {
                return Ok(Next::End(StopReason::Torn))
            }
            Err(DecodeError::Format(why)) => return Err(LogError::corrupt(pos, why)),
        };
        if let Some(stop) = check_epoch(&header, self.prev_epoch, self.id.epoch)? {
            return Ok(Next::End(stop));
        }
        self.prev_epoch = header.epoch;
        self.pos = match header.kind {
            Kind::Skip => geo.next_extent_start(pos),
            _ => Lsn(pos.0 + len as u64),
        };
        Ok(Next::Record { header, body })
    }

    /// Moves past an extent tail too short for a record header and makes
    /// sure the window is on the extent holding `pos`.
    fn enter_extent(&mut self) -> Result<Option<StopReason>, LogError> {
        let geo = self.id.geo;
        if geo.room_left(self.pos) < RECORD_HEADER as u64 {
            self.pos = geo.next_extent_start(self.pos);
        }
        let seq = geo.seq_of(self.pos);
        if self.window.as_ref().is_some_and(|w| w.seq == seq) {
            return Ok(None);
        }
        self.window = None;
        let Some(path) = self.locate(seq) else {
            return Ok(Some(StopReason::NoExtent));
        };
        let handle = match self.backend.open(&path, OpenMode::Existing) {
            Ok(h) => h,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Some(StopReason::NoExtent)),
            Err(e) => return Err(LogError::io(&path, e)),
        };
        let mut win = Window {
            seq,
            path,
            handle,
            start: 0,
            data: Vec::new(),
        };
        let loaded = win
            .load(0, EXTENT_HEADER as usize, geo.extent_size())
            .map_err(|e| LogError::io(&win.path, e))?;
        if !loaded || !self.header_matches(win.slice(0, EXTENT_HEADER as usize), seq) {
            return Ok(Some(StopReason::BadExtentHeader));
        }
        self.window = Some(win);
        Ok(None)
    }

    /// The file to read extent `seq` from, if there can be one.
    fn locate(&self, seq: u64) -> Option<PathBuf> {
        match self.files {
            ExtentFiles::Log(dir) => Some(extent_path(dir, seq)),
            ExtentFiles::Single { seq: only, path } => (only == seq).then(|| path.to_path_buf()),
            ExtentFiles::Archive { archive, log } => {
                let first = self.id.geo.extent_start(seq);
                let copy = archived_path(archive, self.id.log_id, first);
                match log {
                    Some(dir) if !self.backend.exists(&copy) => Some(extent_path(dir, seq)),
                    _ => Some(copy),
                }
            }
        }
    }

    fn header_matches(&self, bytes: &[u8], seq: u64) -> bool {
        decode_header(bytes).is_some_and(|h| {
            h.log_id == self.id.log_id && h.seq == seq && h.extent_size == self.id.geo.extent_size()
        })
    }
}

/// I10: a record older than its predecessor ends the log; one newer than
/// the control file cannot exist and means the log and control disagree.
fn check_epoch(h: &Header, prev: u32, current: u32) -> Result<Option<StopReason>, LogError> {
    if h.epoch < prev {
        return Ok(Some(StopReason::OldEpoch));
    }
    if h.epoch > current {
        return Err(LogError::corrupt(
            h.lsn,
            format!(
                "record epoch {} is newer than the control file's {current}",
                h.epoch
            ),
        ));
    }
    Ok(None)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::control::ControlFile;
    use crate::{Batch, LogConfig, PageChange, TransLog};
    use storage::backend::MemBackend;
    use storage::page::DeltaRange;
    use storage::{PageBuf, PageId, PageKind};

    const EXT: u64 = 65536;

    /// A log holding `images` batches of one page image each, shut down.
    fn log_with(images: u32) -> (MemBackend, LogIdentity, Lsn) {
        let m = MemBackend::new();
        let cfg = LogConfig {
            extent_size: EXT,
            max_size: 16 * EXT,
            ..LogConfig::new("/log")
        };
        let (log, report) = TransLog::open(Arc::new(m.clone()), Path::new("/data"), cfg).unwrap();
        let delta = PageChange::Delta(vec![DeltaRange {
            offset: 64,
            bytes: vec![1; 8],
        }]);
        let a = log.append(&batch(vec![(PageId(2), delta)])).unwrap();
        for _ in 0..images {
            // No zero byte, so each is written as a PageImage (I46).
            let mut page = PageBuf::new(PageKind::BTreeLeaf);
            page.bytes_mut().fill(0x5a);
            let image = PageChange::Image(page);
            log.append(&batch(vec![(PageId(1), image)])).unwrap();
        }
        log.wait_durable(log.end_lsn()).unwrap();
        assert!(a.start_lsn > report.end_lsn);
        drop(log);
        let control = ControlFile::load(&m, Path::new("/log")).unwrap();
        (
            m,
            LogIdentity::of(Geometry::new(EXT), control.data()),
            report.end_lsn,
        )
    }

    fn batch(pages: Vec<(PageId, PageChange)>) -> Batch {
        Batch {
            db_iid: 1,
            db_path: "a.fdb".into(),
            pages,
            time_micros: 0,
        }
    }

    fn read_all(m: &MemBackend, id: LogIdentity, start: Lsn) -> (Vec<Kind>, StopReason, Lsn) {
        let mut r = LogReader::new(m, Path::new("/log"), id, start);
        let mut kinds = Vec::new();
        loop {
            match r.next().unwrap() {
                Next::Record { header, .. } => kinds.push(header.kind),
                Next::End(stop) => return (kinds, stop, r.position()),
            }
        }
    }

    fn edit(m: &MemBackend, seq: u64, f: impl FnOnce(&mut Vec<u8>)) {
        let path = extent_path(Path::new("/log"), seq);
        let mut bytes = m.file_bytes(&path).unwrap();
        f(&mut bytes);
        m.set_file_bytes(&path, bytes);
    }

    #[test]
    fn reads_every_record_in_order_then_stops_at_zeroes() {
        let (m, id, start) = log_with(2);
        let (kinds, stop, _) = read_all(&m, id, start);
        use Kind::*;
        let want = [
            Checkpoint, Begin, PageDelta, Commit, Begin, PageImage, Commit, Begin, PageImage,
            Commit,
        ];
        assert_eq!(kinds, want);
        assert_eq!(stop, StopReason::Zeroed);
    }

    #[test]
    fn records_move_to_the_next_extent_behind_a_skip() {
        let (m, id, start) = log_with(12);
        let (kinds, stop, end) = read_all(&m, id, start);
        assert_eq!(kinds.iter().filter(|k| **k == Kind::Skip).count(), 1);
        assert_eq!(kinds.iter().filter(|k| **k == Kind::Commit).count(), 13);
        assert_eq!((stop, id.geo.seq_of(end)), (StopReason::Zeroed, 2));
    }

    #[test]
    fn a_cut_record_is_torn_and_a_misplaced_one_is_stale() {
        let (m, id, start) = log_with(2);
        let at = id.geo.file_offset(start) as usize + 56 + 10;
        let cut = m.snapshot();
        edit(&cut, 1, |b| b.truncate(at));
        let (kinds, stop, end) = read_all(&cut, id, start);
        assert_eq!(
            (kinds.len(), stop, end),
            (1, StopReason::Torn, Lsn(start.0 + 56))
        );
        edit(&m, 1, |b| b[at - 10 + 8] ^= 1); // the Begin's stored LSN
        let (_, stop, _) = read_all(&m, id, start);
        assert_eq!(stop, StopReason::StaleLsn);
    }

    #[test]
    fn foreign_or_missing_extents_end_the_log() {
        let (m, id, start) = log_with(12);
        let other = LogIdentity {
            log_id: id.log_id ^ 1,
            ..id
        };
        assert_eq!(read_all(&m, other, start).1, StopReason::BadExtentHeader);
        m.remove_file(&extent_path(Path::new("/log"), 2)).unwrap();
        let (kinds, stop, _) = read_all(&m, id, start);
        assert_eq!(stop, StopReason::NoExtent);
        assert_eq!(kinds.last(), Some(&Kind::Skip));
    }
}
