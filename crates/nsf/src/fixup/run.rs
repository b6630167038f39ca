//! Runs the phases in order on one file no instance has open (the engine
//! holds the path's slot meanwhile, I18) and puts the report together.

use super::attachments;
use super::filestore::FileStore;
use super::rebuild::{rebuild_and_swap, NewFile};
use super::report::FixupReport;
use super::salvage::salvage;
use super::scan::scan;
use crate::store::AttachStore;
use crate::{DbInstanceId, NsfError, NsfResult, Timestamp};
use std::path::Path;
use storage::{Backend, OpenMode};

/// The file to fix and how.
pub(crate) struct FixupTarget<'a> {
    pub backend: &'a dyn Backend,
    /// The file on disk.
    pub full_path: &'a Path,
    /// Its path relative to the data directory (reports, errors).
    pub name: &'a str,
    pub dry_run: bool,
    pub now: Timestamp,
    /// Called with the old instance id (if known) before the new file is
    /// written, so before it is renamed into place: the caller retires
    /// the old instance durably there (I29). Not called for a dry run.
    pub before_swap: &'a mut dyn FnMut(Option<DbInstanceId>) -> NsfResult<()>,
    /// The attachment store: stored attachments are verified against it,
    /// and what a fixup drops is reclaimed by its next sweep (I39).
    pub store: &'a AttachStore,
}

pub(crate) fn fixup_file(t: FixupTarget<'_>) -> NsfResult<FixupReport> {
    let io = |e: std::io::Error| NsfError::Io {
        path: t.name.to_string(),
        source: e,
    };
    let handle = t
        .backend
        .open(t.full_path, OpenMode::Existing)
        .map_err(|e| match e.kind() {
            std::io::ErrorKind::NotFound => NsfError::NoSuchDatabase(t.name.to_string()),
            _ => io(e),
        })?;
    let pages = scan(handle.as_ref(), t.name).map_err(io)?;
    let old = FileStore::new(handle.clone(), t.name, 0);
    let mut found = salvage(&old, &pages);
    let (checked, lost_attachments, released) =
        attachments::verify((&handle, t.store), t.name, &mut found.notes);
    found.released = released;
    let mut report = FixupReport {
        path: t.name.to_string(),
        dry_run: t.dry_run,
        pages: pages.pages,
        pages_ok: pages.ok,
        bad_pages: pages.listed.clone(),
        pages_bad: pages.bad.len() as u64,
        header_lost: found.header.is_none(),
        notes_salvaged: found.notes.len() as u64,
        notes_from_orphan_pages: found.from_orphans,
        notes_lost: std::mem::take(&mut found.lost),
        attachments_checked: checked,
        attachments_lost: lost_attachments,
        indexes_rebuilt: vec![
            "note table".into(),
            "UNID index".into(),
            "change-sequence index".into(),
            "store reference tree".into(),
            "free list".into(),
        ],
        indexes_agreed: found.indexes_agreed,
        design_catalog_damaged: found.design_damaged,
        old_instance: found.header.as_ref().map(|h| h.instance_id),
        new_instance: None,
    };
    if t.dry_run {
        return Ok(report);
    }
    (t.before_swap)(report.old_instance)?;
    let nf = NewFile {
        backend: t.backend,
        path: t.full_path,
        name: t.name,
        old: &handle,
        bad: &pages.bad,
        now: t.now,
    };
    report.new_instance = Some(rebuild_and_swap(&nf, found)?);
    Ok(report)
}
