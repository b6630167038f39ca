//! Phase 3, redo: bring every database touched by a committed batch up to
//! the log.
//!
//! The log is read again from the scan's start, and every page record of a
//! committed batch is applied under I5: a full image when the page on disk
//! fails verification or is older than the record, a delta only onto a
//! page that verifies and is older. Touched pages are kept in memory until
//! the end, then sealed with the LSN of the last record applied, written
//! back and fdatasynced once per file. Because the decision compares page
//! LSNs, running redo again over its own output changes nothing.
//!
//! A database is never allowed to stop recovery of the others: a missing
//! or unreadable file, or a page that is still invalid at the end (a delta
//! with no valid base and no later image), marks that database failed with
//! a reason, and redo carries on.

use crate::batch::check_db_path;
use crate::reader::{LogIdentity, LogReader, Next};
use crate::record::Body;
use crate::recovery::{FailedDatabase, Plan};
use crate::LogError;
use std::collections::{BTreeMap, HashMap};
use std::io;
use std::path::Path;
use std::sync::Arc;
use storage::backend::{read_exact_at, write_all_at};
use storage::page::{apply_delta, DeltaRange};
use storage::{Backend, FileHandle, Lsn, OpenMode, PageBuf, PageId, PAGE_SIZE};

/// Where redo reads the log and finds the databases.
pub(crate) struct RedoInput<'a> {
    pub(crate) backend: &'a dyn Backend,
    pub(crate) log_dir: &'a Path,
    pub(crate) data_dir: &'a Path,
    pub(crate) id: LogIdentity,
    pub(crate) start: Lsn,
    /// The end of the valid log found by the scan.
    pub(crate) end: Lsn,
}

/// What redo did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct RedoOutcome {
    pub(crate) pages_redone: u64,
    pub(crate) pages_written: u64,
    pub(crate) failed: Vec<FailedDatabase>,
}

pub(crate) fn redo(input: &RedoInput<'_>, plan: &Plan) -> Result<RedoOutcome, LogError> {
    let owners: HashMap<u64, &str> = plan
        .committed
        .iter()
        .map(|t| (t.txn, t.db_path.as_str()))
        .collect();
    let mut dbs: BTreeMap<&str, Database> = BTreeMap::new();
    for path in owners.values() {
        dbs.entry(path)
            .or_insert_with(|| Database::open(input.backend, input.data_dir, path));
    }
    let mut out = RedoOutcome::default();
    let mut reader = LogReader::new(input.backend, input.log_dir, input.id, input.start);
    while let Next::Record { header, body } = reader.next()? {
        if header.lsn >= input.end {
            break;
        }
        let Some(db) = owners.get(&header.txn).and_then(|p| dbs.get_mut(p)) else {
            continue;
        };
        out.pages_redone += u64::from(db.apply(header.lsn, &body));
    }
    for db in dbs.into_values() {
        match db.finish() {
            Ok(written) => out.pages_written += written,
            Err(failure) => out.failed.push(failure),
        }
    }
    Ok(out)
}

/// A touched page as redo sees it.
pub(crate) enum PageState {
    /// Verified (or rebuilt from an image); `lsn` is its page LSN.
    Valid { lsn: Lsn, dirty: bool },
    /// Failed verification and no image has replaced it yet.
    Invalid(String),
}

pub(crate) struct CachedPage {
    pub(crate) buf: PageBuf,
    pub(crate) state: PageState,
}

/// One database file being redone.
struct Database {
    path: String,
    file: Result<Arc<dyn FileHandle>, String>,
    pages: BTreeMap<PageId, CachedPage>,
}

impl Database {
    fn open(backend: &dyn Backend, data_dir: &Path, path: &str) -> Self {
        let file = check_db_path(path).and_then(|()| {
            backend
                .open(&data_dir.join(path), OpenMode::Existing)
                .map_err(|e| match e.kind() {
                    io::ErrorKind::NotFound => "database file is missing".to_string(),
                    _ => format!("cannot open database file: {e}"),
                })
        });
        Database {
            path: path.to_string(),
            file,
            pages: BTreeMap::new(),
        }
    }

    /// Applies one page record; true if it changed the page.
    fn apply(&mut self, lsn: Lsn, body: &Body<'_>) -> bool {
        let sparse;
        let (id, change) = match body {
            Body::PageImage { page, image } => (*page, Change::Image(image)),
            Body::PageSparse { page, ranges } => {
                sparse = crate::record::sparse_to_image(ranges);
                (*page, Change::Image(&sparse))
            }
            Body::PageDelta { page, ranges } => (*page, Change::Delta(ranges)),
            _ => return false,
        };
        let Some(page) = self.page(id) else {
            return false;
        };
        match change {
            Change::Image(image) => apply_image(page, lsn, image),
            Change::Delta(ranges) => apply_delta_record(page, lsn, ranges),
        }
    }

    /// The cached page, read from the file on first touch; `None` once the
    /// database has failed.
    fn page(&mut self, id: PageId) -> Option<&mut CachedPage> {
        let file = self.file.as_ref().ok()?.clone();
        if !self.pages.contains_key(&id) {
            match load_page(file.as_ref(), &self.path, id) {
                Ok(page) => {
                    self.pages.insert(id, page);
                }
                Err(e) => {
                    self.file = Err(format!("cannot read {id}: {e}"));
                    return None;
                }
            }
        }
        self.pages.get_mut(&id)
    }

    /// Seals and writes every changed page, syncs the file, and reports
    /// pages left invalid. Returns the number of pages written.
    fn finish(mut self) -> Result<u64, FailedDatabase> {
        let file = match &self.file {
            Ok(f) => f.clone(),
            Err(reason) => return Err(failed(&self.path, reason.clone())),
        };
        let mut invalid = Vec::new();
        let mut written = 0;
        for (id, page) in &mut self.pages {
            match seal(*id, page, &self.path) {
                Ok(false) => {}
                Ok(true) => {
                    write_all_at(file.as_ref(), page.buf.bytes(), id.offset())
                        .map_err(|e| failed(&self.path, format!("cannot write {id}: {e}")))?;
                    written += 1;
                }
                Err(reason) => invalid.push(reason),
            }
        }
        // I8: redone pages are durable before the truncate phase's checkpoint
        // declares their records no longer needed.
        file.sync_data()
            .map_err(|e| failed(&self.path, format!("cannot sync: {e}")))?;
        match invalid.first() {
            None => Ok(written),
            Some(first) => Err(failed(
                &self.path,
                format!(
                    "{} page(s) invalid after redo, first: {first}",
                    invalid.len()
                ),
            )),
        }
    }
}

fn failed(path: &str, reason: String) -> FailedDatabase {
    FailedDatabase {
        path: path.to_string(),
        reason,
    }
}

enum Change<'a> {
    Image(&'a [u8; PAGE_SIZE]),
    Delta(&'a [DeltaRange]),
}

/// Reads and verifies a page; past the end of the file it is invalid.
pub(crate) fn load_page(file: &dyn FileHandle, path: &str, id: PageId) -> io::Result<CachedPage> {
    let mut buf = PageBuf::zeroed();
    match read_exact_at(file, buf.bytes_mut(), id.offset()) {
        Ok(()) => {}
        Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => buf = PageBuf::zeroed(),
        Err(e) => return Err(e),
    }
    let state = match buf.verify(path, id) {
        Ok(()) => PageState::Valid {
            lsn: buf.lsn(),
            dirty: false,
        },
        Err(e) => PageState::Invalid(e.to_string()),
    };
    Ok(CachedPage { buf, state })
}

/// I5: an image replaces a page that fails verification or is older than
/// the record.
pub(crate) fn apply_image(page: &mut CachedPage, lsn: Lsn, image: &[u8; PAGE_SIZE]) -> bool {
    let needed = match page.state {
        PageState::Valid { lsn: have, .. } => have < lsn,
        PageState::Invalid(_) => true,
    };
    if needed {
        page.buf.bytes_mut().copy_from_slice(image);
        page.state = PageState::Valid { lsn, dirty: true };
    }
    needed
}

/// I5: a delta applies only to a page that verifies and is older than the
/// record; a delta that does not fit the page leaves it invalid.
pub(crate) fn apply_delta_record(page: &mut CachedPage, lsn: Lsn, ranges: &[DeltaRange]) -> bool {
    let PageState::Valid { lsn: have, .. } = page.state else {
        return false;
    };
    if have >= lsn {
        return false;
    }
    page.state = match apply_delta(&mut page.buf, ranges) {
        Ok(()) => PageState::Valid { lsn, dirty: true },
        Err(e) => PageState::Invalid(format!("delta at {lsn} does not apply: {e}")),
    };
    matches!(page.state, PageState::Valid { .. })
}

/// I5: a changed page gets the LSN of the last record applied. Returns
/// whether the page must be written, or why it is unrecoverable.
pub(crate) fn seal(id: PageId, page: &mut CachedPage, path: &str) -> Result<bool, String> {
    match page.state {
        PageState::Invalid(ref reason) => Err(reason.clone()),
        PageState::Valid { dirty: false, .. } => Ok(false),
        PageState::Valid { lsn, dirty: true } => {
            page.buf.seal(id, lsn);
            page.buf.verify(path, id).map_err(|e| e.to_string())?;
            Ok(true)
        }
    }
}
