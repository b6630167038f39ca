//! Media recovery of one database: roll a restored copy forward with the
//! log, for `folio restore`.
//!
//! Restart recovery redoes every database from the redo LSN; a restore
//! brings back one file from a backup and replays, from the backup's
//! start LSN, the committed transactions of exactly one database instance
//! (design.md I36): a record of another instance never touches the copy,
//! even at the same path. The page rules are redo's (I5), which is what
//! makes a fuzzy backup consistent (I35): the first record in the range of
//! every page the backup could have caught mid-write is a full image.
//!
//! ```text
//!  records_from(start) ─▶ Begin(iid, path) pages… Commit(time) ─▶ …
//!     ours, time ≤ until  → apply the batch's pages (I5)
//!     ours, time > until  → stop: Until
//!     same path, other iid, committed → stop: Replaced
//!     end of the valid log → stop: EndOfLog
//! ```
//!
//! Transactions are appended as contiguous batches (I3), so one batch is
//! held at a time and applied only once its Commit record is read; a batch
//! without one (a torn tail) is dropped. Touched pages stay in memory until
//! the end, then are sealed with the LSN of the last record applied to
//! them, written and fdatasynced, so running it again over its own output
//! changes nothing.

use crate::archive::{ArchivedLog, LogRecord, RecordBody};
use crate::recovery::{apply_delta_record, apply_image, load_page, seal, CachedPage};
use crate::LogError;
use std::collections::BTreeMap;
use storage::backend::write_all_at;
use storage::{FileHandle, Lsn, PageId};

/// What to roll forward.
#[derive(Clone, Debug)]
pub struct RollForward<'a> {
    /// The database's path relative to the data directory, as its Begin
    /// records name it.
    pub db_path: &'a str,
    /// The instance whose records are applied (I36).
    pub db_iid: u64,
    /// A record boundary at or below the backup's start (its redo LSN).
    pub from: Lsn,
    /// Apply only commits whose time (µs since the Unix epoch) is at most
    /// this; `None`: to the end of the log.
    pub until_micros: Option<i64>,
}

/// Why rolling forward stopped.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum RollStop {
    /// The valid log ends at `at`.
    EndOfLog { at: Lsn },
    /// The next commit of the instance, at `lsn`, is later than `until`.
    Until { lsn: Lsn, time_micros: i64 },
    /// Another instance `db_iid` committed at the same path at `lsn`: the
    /// file was replaced there (fixup, restore, copy-style compact), and
    /// this instance's history ends.
    Replaced {
        db_iid: u64,
        lsn: Lsn,
        time_micros: i64,
    },
}

/// What rolling forward did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RollOutcome {
    /// Committed transactions of the instance applied.
    pub txns_applied: u64,
    /// The LSN and time of the last commit applied.
    pub last_commit: Option<(Lsn, i64)>,
    /// The LSN up to which the copy now reflects the instance's history:
    /// the end of the last batch read before the stop.
    pub reached: Lsn,
    pub pages_written: u64,
    pub stop: RollStop,
}

/// One transaction being read.
struct Pending {
    txn: u64,
    db_iid: u64,
    db_path: String,
    pages: Vec<LogRecord>,
}

/// Rolls `file` (named `name` in errors) forward with `log`. Durable when
/// it returns: touched pages are written and the file fdatasynced. A page
/// still invalid at the end (the copy was damaged beyond what the log can
/// rebuild) is [`LogError::Invalid`] naming it.
pub fn roll_forward(
    log: &ArchivedLog,
    file: &dyn FileHandle,
    name: &str,
    req: &RollForward<'_>,
) -> Result<RollOutcome, LogError> {
    let mut pages: BTreeMap<PageId, CachedPage> = BTreeMap::new();
    let mut pending: Option<Pending> = None;
    let mut out = RollOutcome {
        txns_applied: 0,
        last_commit: None,
        reached: req.from,
        pages_written: 0,
        stop: RollStop::EndOfLog { at: req.from },
    };
    let mut records = log.records_from(req.from);
    let stop = loop {
        let Some(rec) = records.next() else {
            break RollStop::EndOfLog {
                at: records.position(),
            };
        };
        let rec = rec?;
        let lsn = rec.lsn;
        match &rec.body {
            RecordBody::Begin { db_iid, db_path } => {
                pending = Some(Pending {
                    txn: rec.txn.0,
                    db_iid: *db_iid,
                    db_path: db_path.clone(),
                    pages: Vec::new(),
                });
            }
            RecordBody::PageImage { .. } | RecordBody::PageDelta { .. } => {
                if let Some(p) = pending.as_mut().filter(|p| p.txn == rec.txn.0) {
                    if p.db_iid == req.db_iid {
                        p.pages.push(rec);
                    }
                }
            }
            RecordBody::Commit { time_micros } => {
                let Some(p) = pending.take().filter(|p| p.txn == rec.txn.0) else {
                    continue;
                };
                let late = req.until_micros.is_some_and(|u| *time_micros > u);
                if p.db_iid == req.db_iid {
                    if late {
                        break RollStop::Until {
                            lsn,
                            time_micros: *time_micros,
                        };
                    }
                    for r in &p.pages {
                        apply(&mut pages, file, name, r)?;
                    }
                    out.txns_applied += 1;
                    out.last_commit = Some((lsn, *time_micros));
                } else if p.db_path == req.db_path {
                    if late {
                        break RollStop::Until {
                            lsn,
                            time_micros: *time_micros,
                        };
                    }
                    break RollStop::Replaced {
                        db_iid: p.db_iid,
                        lsn,
                        time_micros: *time_micros,
                    };
                }
            }
            RecordBody::Checkpoint { .. } => {}
        }
        if pending.is_none() {
            out.reached = records.position();
        }
    };
    out.stop = stop;
    out.pages_written = write_back(file, name, pages)?;
    Ok(out)
}

/// Applies one page record of a committed batch (I5).
fn apply(
    pages: &mut BTreeMap<PageId, CachedPage>,
    file: &dyn FileHandle,
    name: &str,
    rec: &LogRecord,
) -> Result<(), LogError> {
    let id = match &rec.body {
        RecordBody::PageImage { page, .. } | RecordBody::PageDelta { page, .. } => *page,
        _ => return Ok(()),
    };
    let page = match pages.entry(id) {
        std::collections::btree_map::Entry::Occupied(e) => e.into_mut(),
        std::collections::btree_map::Entry::Vacant(e) => {
            let page = load_page(file, name, id).map_err(|err| {
                LogError::Invalid(format!(
                    "{name}: cannot read {id} while rolling forward: {err}"
                ))
            })?;
            e.insert(page)
        }
    };
    match &rec.body {
        RecordBody::PageImage { image, .. } => {
            let image: &[u8; storage::PAGE_SIZE] = image.as_slice().try_into().map_err(|_| {
                LogError::Invalid(format!("{name}: page image at {} is not a page", rec.lsn))
            })?;
            apply_image(page, rec.lsn, image);
        }
        RecordBody::PageDelta { ranges, .. } => {
            apply_delta_record(page, rec.lsn, ranges);
        }
        _ => {}
    }
    Ok(())
}

/// Seals, writes and syncs the touched pages; any left invalid is an error.
fn write_back(
    file: &dyn FileHandle,
    name: &str,
    mut pages: BTreeMap<PageId, CachedPage>,
) -> Result<u64, LogError> {
    let io = |e| LogError::io(std::path::Path::new(name), e);
    let mut written = 0;
    let mut invalid = Vec::new();
    for (id, page) in &mut pages {
        match seal(*id, page, name) {
            Ok(false) => {}
            Ok(true) => {
                write_all_at(file, page.buf.bytes(), id.offset()).map_err(io)?;
                written += 1;
            }
            Err(reason) => invalid.push(reason),
        }
    }
    file.sync_data().map_err(io)?;
    match invalid.first() {
        None => Ok(written),
        Some(first) => Err(LogError::Invalid(format!(
            "{name}: {} page(s) invalid after rolling forward (the backup copy is damaged beyond \
             what the log rebuilds), first: {first}",
            invalid.len()
        ))),
    }
}
