//! Phase 1, scan: read the log from the last redo LSN to the end of the
//! valid log (I10) and remember what each record is, but not its page
//! data. Keeping only this summary bounds recovery's memory by the number
//! of records, not by the size of the log; redo reads the pages again.

use crate::control::ControlData;
use crate::geometry::{extent_path, Geometry};
use crate::reader::{LogIdentity, LogReader, Next};
use crate::record::Body;
use crate::{LogError, StopReason};
use std::io;
use std::path::Path;
use storage::{Backend, Lsn, OpenMode};

/// What one scanned record was.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum EntryKind {
    Begin { db_iid: u64, path: String },
    Page,
    Commit,
    Checkpoint { redo_lsn: Lsn, next_txn: u64 },
    Skip,
}

/// One scanned record.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Entry {
    pub(crate) lsn: Lsn,
    pub(crate) txn: u64,
    pub(crate) kind: EntryKind,
}

/// The summary of the valid log.
#[derive(Clone, Debug)]
pub(crate) struct ScanOutput {
    pub(crate) start: Lsn,
    pub(crate) entries: Vec<Entry>,
    /// The position after the last valid record.
    pub(crate) end: Lsn,
    pub(crate) stop: StopReason,
    pub(crate) bytes: u64,
}

/// Where the scan starts: the redo LSN of the last checkpoint, or the
/// first LSN of the log if there has been none.
pub(crate) fn scan_start(geo: Geometry, control: &ControlData) -> Lsn {
    control.redo_lsn.max(geo.first_lsn())
}

/// Reads every valid record from `start`.
pub(crate) fn scan(
    backend: &dyn Backend,
    dir: &Path,
    id: LogIdentity,
    start: Lsn,
) -> Result<ScanOutput, LogError> {
    let mut reader = LogReader::new(backend, dir, id, start);
    let mut entries = Vec::new();
    let mut bytes = 0;
    let stop = loop {
        match reader.next()? {
            Next::End(stop) => break stop,
            Next::Record { header, body } => {
                bytes += u64::from(header.len);
                entries.push(Entry {
                    lsn: header.lsn,
                    txn: header.txn,
                    kind: entry_kind(&body),
                });
            }
        }
    };
    Ok(ScanOutput {
        start,
        entries,
        end: reader.position(),
        stop,
        bytes,
    })
}

fn entry_kind(body: &Body<'_>) -> EntryKind {
    match body {
        Body::Begin { db_iid, path } => EntryKind::Begin {
            db_iid: *db_iid,
            path: path.to_string(),
        },
        Body::PageImage { .. } | Body::PageDelta { .. } | Body::PageSparse { .. } => {
            EntryKind::Page
        }
        Body::Commit { .. } => EntryKind::Commit,
        Body::Checkpoint {
            redo_lsn, next_txn, ..
        } => EntryKind::Checkpoint {
            redo_lsn: *redo_lsn,
            next_txn: *next_txn,
        },
        Body::Skip => EntryKind::Skip,
    }
}

/// Makes the scanned extents durable. What the scan read may only have
/// been in the OS cache (a killed process, not a power cut); redo is about
/// to write pages derived from it, and I1 requires their records to be
/// durable first.
pub(crate) fn sync_scanned(
    backend: &dyn Backend,
    dir: &Path,
    geo: Geometry,
    start: Lsn,
    end: Lsn,
) -> Result<(), LogError> {
    for seq in geo.seq_of(start)..=geo.seq_of(end) {
        let path = extent_path(dir, seq);
        match backend.open(&path, OpenMode::Existing) {
            // I1: log records are durable before pages derived from them.
            Ok(h) => h.sync_data().map_err(|e| LogError::io(&path, e))?,
            Err(e) if e.kind() == io::ErrorKind::NotFound => {}
            Err(e) => return Err(LogError::io(&path, e)),
        }
    }
    Ok(())
}
