//! Reclaiming objects no committed state references (design.md §2.9,
//! I39): a mark-and-sweep over the reference trees of the databases in
//! `users`, holding the store's lock throughout so that no write can pin
//! an object between the decision and the removal.
//!
//! The store does not open databases itself (it sits below the engine):
//! the engine hands it a function that reads one database's references
//! and one that makes the log durable to its end.

use super::content::ContentHash;
use super::copy::copy_durably;
use super::refs::RefEntry;
use super::registry::AttachStore;
use crate::NsfResult;
use std::collections::{BTreeSet, HashSet};
use std::path::PathBuf;
use std::sync::atomic::Ordering;

/// What a sweep did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SweepReport {
    /// Objects found in the store.
    pub objects: u64,
    /// Objects still referenced (or pinned) and kept.
    pub kept: u64,
    /// Unreferenced objects removed, and their stored bytes.
    pub removed: u64,
    pub removed_bytes: u64,
    /// Of those, how many were moved to the archive (archive style).
    pub archived: u64,
    /// Leftover temporary files removed.
    pub temporary_removed: u64,
    /// Databases whose references were read.
    pub databases: u64,
}

/// Reads one database's references (`None`: it no longer exists).
pub(crate) type DbRefs<'a> =
    dyn FnMut(&str) -> NsfResult<Option<Vec<(ContentHash, RefEntry)>>> + 'a;

/// Runs a sweep. `refs(path)` reads database `path`'s referenced hashes
/// (`None` when the database no longer exists); an error stops the sweep
/// before anything is removed. `durable()` makes the log durable to its
/// end, after every state read (I39).
pub(crate) fn sweep(
    store: &AttachStore,
    refs: &mut DbRefs<'_>,
    durable: &mut dyn FnMut() -> NsfResult<()>,
) -> NsfResult<SweepReport> {
    let mut st = store.lock();
    let mut report = SweepReport::default();
    let mut referenced: HashSet<ContentHash> = HashSet::new();
    let mut users = BTreeSet::new();
    let mut logical = 0u64;
    for db in AttachStore::users(&st) {
        if let Some(entries) = refs(&db)? {
            report.databases += 1;
            for (hash, e) in entries {
                logical += u64::from(e.count) * e.size;
                referenced.insert(hash);
            }
            users.insert(db);
        }
    }
    durable()?;
    let backend = store.backend.as_ref();
    for (hash, path) in objects(store)? {
        report.objects += 1;
        if referenced.contains(&hash) || AttachStore::is_pinned(&st, &hash) {
            report.kept += 1;
            continue;
        }
        let header = store.header_of(&path);
        // Archive style: kept in the archive for restores (`copy.rs`).
        if let Some(to) = store.archived_path(&hash) {
            if !backend.exists(&to) {
                copy_durably(backend, &path, &to).map_err(|e| store.fail(&to, "archiving", e))?;
            }
            report.archived += 1;
        }
        backend
            .remove_file(&path)
            .map_err(|e| store.fail(&path, "removing", e))?;
        report.removed += 1;
        if let Some(h) = header {
            report.removed_bytes += h.stored_size;
            store.stats.object(h.stored_size, h.size, false);
        }
    }
    let tmp = store.tmp_dir();
    let leftovers = backend
        .read_dir(&tmp)
        .map_err(|e| store.fail(&tmp, "listing", e))?;
    for path in leftovers {
        if !AttachStore::is_writing(&st, &path) {
            backend
                .remove_file(&path)
                .map_err(|e| store.fail(&path, "removing", e))?;
            report.temporary_removed += 1;
        }
    }
    store.rewrite_users(&mut st, users)?;
    store
        .stats
        .reclaimed
        .fetch_add(report.removed, Ordering::Relaxed);
    store.stats.logical_bytes.store(logical, Ordering::Relaxed);
    Ok(report)
}

/// Every object file, by hash (names that are not a hash are left alone).
pub(crate) fn objects(store: &AttachStore) -> NsfResult<Vec<(ContentHash, PathBuf)>> {
    let backend = store.backend.as_ref();
    let root = store.dir.join("objects");
    let mut out = Vec::new();
    let dirs = backend
        .read_dir(&root)
        .map_err(|e| store.fail(&root, "listing", e))?;
    for dir in dirs.into_iter().filter(|d| backend.is_dir(d)) {
        let files = backend
            .read_dir(&dir)
            .map_err(|e| store.fail(&dir, "listing", e))?;
        for f in files {
            let name = f.file_name().and_then(|n| n.to_str()).unwrap_or("");
            if let Some(h) = ContentHash::from_hex(name) {
                out.push((h, f));
            }
        }
    }
    Ok(out)
}
