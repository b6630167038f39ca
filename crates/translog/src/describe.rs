//! Looking inside a log directory without opening the log: the log half of
//! `folio dump log`.
//!
//! `TransLog::open` is restart recovery: it writes database files, bumps
//! the epoch and truncates the tail, so it is no way to *look* at a log
//! (least of all the log of a server that is running, or of a directory
//! being investigated after a failure). [`describe_log`] only reads: the
//! control file (the valid slot with the higher generation, as recovery
//! chooses it), every extent header, and records from a starting LSN
//! through the same reader recovery uses, so what it shows and where it
//! stops (the I10 rules) are exactly what recovery would see.
//!
//! Damage is never a panic: an unusable control file is `BadControl`, a
//! record whose checksum holds but whose content is malformed is
//! `Corrupt { lsn }`, and the end of the valid log is a [`StopReason`].

use crate::config::{MAX_EXTENT_SIZE, MIN_EXTENT_SIZE};
use crate::control::{ControlFile, MAX_LSN};
use crate::extent::{decode_header, list_extents};
use crate::geometry::{extent_path, Geometry, EXTENT_HEADER};
use crate::reader::{LogIdentity, LogReader, Next};
use crate::record::Body;
use crate::{LogError, StopReason};
use std::collections::HashMap;
use std::path::Path;
use storage::backend::read_exact_at;
use storage::{Backend, Lsn, OpenMode, PageId};

/// What `describe_log` found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LogDump {
    pub control: ControlSummary,
    /// Every extent file in the directory, by seq.
    pub extents: Vec<ExtentSummary>,
    /// Records from the starting LSN, at most the limit asked for.
    pub records: Vec<RecordSummary>,
    /// The LSN after the last record shown (where a next page would start).
    pub next: Lsn,
    /// Why the records end: `None` when the limit was reached first.
    pub stop: Option<StopReason>,
}

/// The control file's chosen slot.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ControlSummary {
    pub generation: u64,
    pub log_id: u64,
    pub epoch: u32,
    pub extent_size: u64,
    pub checkpoint_lsn: Lsn,
    pub redo_lsn: Lsn,
}

/// One extent file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ExtentSummary {
    pub seq: u64,
    /// The first LSN the extent holds.
    pub first_lsn: Lsn,
    pub file_len: u64,
    /// Why its header does not belong to this log at this seq, if it does not.
    pub problem: Option<String>,
}

/// One record.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RecordSummary {
    pub lsn: Lsn,
    pub len: u32,
    pub epoch: u32,
    /// 0 for Checkpoint and Skip.
    pub txn: u64,
    /// The database instance of the record's transaction, when its Begin
    /// record was among those read.
    pub db_instance: Option<u64>,
    pub detail: RecordDetail,
}

/// A record's kind and payload summary.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RecordDetail {
    Begin {
        path: String,
    },
    PageImage {
        page: PageId,
    },
    PageDelta {
        page: PageId,
        ranges: u32,
        bytes: u64,
    },
    /// A full image written as its non-zero ranges (I46).
    PageSparse {
        page: PageId,
        ranges: u32,
        bytes: u64,
    },
    Commit {
        time_micros: i64,
    },
    Checkpoint {
        redo_lsn: Lsn,
        next_txn: u64,
        time_micros: i64,
    },
    Skip,
}

impl RecordDetail {
    /// The kind's name as the spec spells it (design.md §3.2).
    pub fn kind_name(&self) -> &'static str {
        match self {
            RecordDetail::Begin { .. } => "Begin",
            RecordDetail::PageImage { .. } => "PageImage",
            RecordDetail::PageDelta { .. } => "PageDelta",
            RecordDetail::PageSparse { .. } => "PageSparse",
            RecordDetail::Commit { .. } => "Commit",
            RecordDetail::Checkpoint { .. } => "Checkpoint",
            RecordDetail::Skip => "Skip",
        }
    }
}

/// Reads the log in `dir` without changing anything: the control file,
/// the extents, and up to `limit` records from `from` (default: the start
/// of the oldest extent whose header belongs to this log, else the redo
/// LSN).
pub fn describe_log(
    backend: &dyn Backend,
    dir: &Path,
    from: Option<Lsn>,
    limit: usize,
) -> Result<LogDump, LogError> {
    let control = ControlFile::load(backend, dir)?.data().clone();
    if !(MIN_EXTENT_SIZE..=MAX_EXTENT_SIZE).contains(&control.extent_size) {
        return Err(LogError::BadControl {
            path: ControlFile::path(dir),
            reason: format!("extent size {} is impossible", control.extent_size),
        });
    }
    let geo = Geometry::new(control.extent_size);
    let id = LogIdentity::of(geo, &control);
    let extents = list_extents(backend, dir)?
        .into_iter()
        .map(|seq| extent_summary(backend, dir, id, seq))
        .collect::<Result<Vec<_>, _>>()?;
    let start = match from {
        Some(lsn) if lsn.0 >= MAX_LSN => {
            return Err(LogError::Invalid(format!("{lsn} is beyond any log")))
        }
        Some(lsn) => lsn,
        None => extents
            .iter()
            .find(|e| e.problem.is_none())
            .map_or(control.redo_lsn, |e| e.first_lsn),
    };
    let (records, next, stop) = read_records(backend, dir, id, start, limit)?;
    Ok(LogDump {
        control: ControlSummary {
            generation: control.generation,
            log_id: control.log_id,
            epoch: control.epoch,
            extent_size: control.extent_size,
            checkpoint_lsn: control.checkpoint_lsn,
            redo_lsn: control.redo_lsn,
        },
        extents,
        records,
        next,
        stop,
    })
}

fn extent_summary(
    backend: &dyn Backend,
    dir: &Path,
    id: LogIdentity,
    seq: u64,
) -> Result<ExtentSummary, LogError> {
    let path = extent_path(dir, seq);
    let io = |e| LogError::io(&path, e);
    let f = backend.open(&path, OpenMode::Existing).map_err(io)?;
    let file_len = f.len().map_err(io)?;
    let mut head = vec![0u8; EXTENT_HEADER as usize];
    let problem = if file_len < EXTENT_HEADER {
        Some(format!("{file_len} bytes, shorter than its header"))
    } else {
        read_exact_at(f.as_ref(), &mut head, 0).map_err(io)?;
        match decode_header(&head) {
            None => Some("invalid header (magic, version or checksum)".to_string()),
            Some(h) if h.log_id != id.log_id => Some(format!("belongs to log {:#x}", h.log_id)),
            Some(h) if h.seq != seq => Some(format!("header says seq {}", h.seq)),
            Some(h) if h.extent_size != id.geo.extent_size() => {
                Some(format!("header says extent size {}", h.extent_size))
            }
            Some(_) => None,
        }
    };
    Ok(ExtentSummary {
        seq,
        first_lsn: id.geo.extent_start(seq),
        file_len,
        problem,
    })
}

type Records = (Vec<RecordSummary>, Lsn, Option<StopReason>);

fn read_records(
    backend: &dyn Backend,
    dir: &Path,
    id: LogIdentity,
    start: Lsn,
    limit: usize,
) -> Result<Records, LogError> {
    let mut reader = LogReader::new(backend, dir, id, start);
    let mut instances: HashMap<u64, u64> = HashMap::new();
    let mut out = Vec::new();
    while out.len() < limit {
        let (header, detail) = match reader.next()? {
            Next::End(stop) => return Ok((out, reader.position(), Some(stop))),
            Next::Record { header, body } => {
                if let Body::Begin { db_iid, .. } = body {
                    instances.insert(header.txn, db_iid);
                }
                (header, detail_of(&body))
            }
        };
        out.push(RecordSummary {
            lsn: header.lsn,
            len: header.len,
            epoch: header.epoch,
            txn: header.txn,
            db_instance: instances.get(&header.txn).copied(),
            detail,
        });
    }
    Ok((out, reader.position(), None))
}

fn detail_of(body: &Body<'_>) -> RecordDetail {
    match body {
        Body::Begin { path, .. } => RecordDetail::Begin {
            path: path.to_string(),
        },
        Body::PageImage { page, .. } => RecordDetail::PageImage { page: *page },
        Body::PageDelta { page, ranges } => RecordDetail::PageDelta {
            page: *page,
            ranges: ranges.len() as u32,
            bytes: ranges.iter().map(|r| r.bytes.len() as u64).sum(),
        },
        Body::PageSparse { page, ranges } => RecordDetail::PageSparse {
            page: *page,
            ranges: ranges.len() as u32,
            bytes: ranges.iter().map(|r| r.bytes.len() as u64).sum(),
        },
        Body::Commit { time_micros } => RecordDetail::Commit {
            time_micros: *time_micros,
        },
        Body::Checkpoint {
            redo_lsn,
            next_txn,
            time_micros,
        } => RecordDetail::Checkpoint {
            redo_lsn: *redo_lsn,
            next_txn: *next_txn,
            time_micros: *time_micros,
        },
        Body::Skip => RecordDetail::Skip,
    }
}
