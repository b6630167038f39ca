//! Rebuilding an index from scratch in bounded memory.
//!
//! Every selected document's entries go through an external merge sort
//! (temporary runs in `view_rebuild_dir`, memory bounded by
//! `view_rebuild_memory`), then the sorted stream is bulk-loaded bottom-up
//! into brand-new pages written straight to the file and synced (like
//! attachment content, I7). The records of entries that `$Readers`
//! restricts take the same way through a second, smaller sorter (an
//! eighth of the memory, at least 32 KiB, so the longest record fits) into
//! the restricted tree. One small logged transaction then frees the
//! old trees and points the catalog at the new ones, so a crash at any
//! point leaves either the old index or the new one, never a mixture.
//! The rebuilt index reflects every change up to the sequence read before
//! the scan began; changes made during the scan are applied again by the
//! next update, which is idempotent.

use crate::catalog::{ViewState, FLAG_BUILT};
use crate::def::Compiled;
use crate::delete::free_trees;
use crate::entries::{encode_docmap, selects, Contribution, NoteDoc, RefDoc, Source};
use crate::views::{with_state, Views};
use crate::ViewResult;
use formula::EvalContext;
use nsf::{Database, Note, NoteId, Timestamp};
use std::sync::Arc;
use std::time::Instant;
use storage::bulk::BulkLoader;
use storage::extsort::{ExternalSorter, Sorted};
use storage::{btree, PageId};

/// Leaves are filled to this fraction so later inserts rarely split.
const FILL: f32 = 0.9;

/// What a rebuild did.
#[derive(Clone, Debug, Default, serde::Serialize)]
pub struct RebuildReport {
    pub documents: u64,
    pub entries: u64,
    /// Entries of documents with `$Readers`.
    pub restricted_entries: u64,
    pub seconds: f64,
    pub documents_per_sec: f64,
    /// Sorted runs written to temporary files (0: sorted in memory).
    pub sort_runs: u64,
    pub temp_bytes: u64,
    /// Most bytes the sorters held in memory at once.
    pub sort_peak_memory: u64,
    pub pages: u64,
    /// Reading and evaluating the documents (and the docmap load).
    pub scan_seconds: f64,
    /// Merging the sorted entries into the new tree.
    pub load_seconds: f64,
    /// The logged switch: freeing the old trees, pointing at the new ones.
    pub switch_seconds: f64,
}

pub(crate) fn rebuild(
    views: &Views,
    db: &Arc<Database>,
    name: &str,
    st: &ViewState,
    c: &Compiled,
) -> ViewResult<RebuildReport> {
    let t0 = Instant::now();
    let seq = db.last_seq().0;
    let ctx = EvalContext {
        now: Timestamp::now().0,
    };
    let mem = views.config.rebuild_memory.max(64 << 10);
    let mut report = RebuildReport::default();
    let mut w = db.bulk_writer()?;
    let built = build(views, db, st, c, &ctx, mem, &mut w, &mut report, t0);
    let trees = match built {
        Ok(r) => r,
        Err(e) => {
            let _ = db.release_pages(w.pages());
            return Err(e);
        }
    };
    let pages = w.pages().to_vec();
    report.pages = pages.len() as u64;
    let t2 = Instant::now();
    let (path, vname) = (db.path().to_string(), name.to_string());
    let dirty = if !st.logged() && db.is_logged() {
        views.session()
    } else {
        0
    };
    let switched = db.index_write({
        let pages = pages.clone();
        move |tx| -> nsf::NsfResult<ViewResult<()>> {
            Ok(with_state(tx, &path, &vname, |tx, st| {
                free_trees(tx, &vname, st)?;
                if !st.logged() {
                    // The new pages were reserved in ascending order.
                    let mut sorted = pages.clone();
                    sorted.sort_unstable();
                    sorted.dedup();
                    let mut owned = BulkLoader::new(tx, FILL)?;
                    for p in &sorted {
                        owned.push(&p.0.to_be_bytes(), &[])?;
                    }
                    st.owned_root = owned.finish()?;
                }
                st.entries_root = trees.entries;
                st.docmap_root = trees.docmap;
                st.restricted_root = trees.restricted;
                st.last_seq = seq;
                st.flags |= FLAG_BUILT;
                st.dirty_session = dirty;
                st.last_update = Timestamp::now().0;
                Ok(())
            }))
        }
    });
    match switched {
        Ok(Ok(())) if dirty != 0 => views.note_dirtied(db, name),
        Ok(Ok(())) => {}
        Ok(Err(e)) => {
            let _ = db.release_pages(&pages);
            return Err(e);
        }
        Err(e) => {
            let _ = db.release_pages(&pages);
            return Err(e.into());
        }
    }
    report.switch_seconds = t2.elapsed().as_secs_f64();
    report.seconds = t0.elapsed().as_secs_f64();
    report.documents_per_sec = report.documents as f64 / report.seconds.max(1e-9);
    Ok(report)
}

/// The roots of a freshly built index.
struct Trees {
    entries: PageId,
    docmap: PageId,
    restricted: PageId,
}

/// Memory of the restricted records' sorter: an eighth of the whole, and
/// enough for its blocks to hold the longest record (key and names).
fn restricted_memory(mem: usize) -> usize {
    (mem / 8).max(32 << 10)
}

/// Scans the documents and writes the new entries, docmap and restricted
/// trees. Documents arrive in note-id order, so the docmap (keyed by note
/// id) is loaded as they come; the entries and the restricted records go
/// through external sorts.
#[allow(clippy::too_many_arguments)]
fn build(
    views: &Views,
    db: &Arc<Database>,
    st: &ViewState,
    c: &Compiled,
    ctx: &EvalContext,
    mem: usize,
    w: &mut nsf::BulkWriter,
    report: &mut RebuildReport,
    t0: Instant,
) -> ViewResult<Trees> {
    let sorter =
        |mem| ExternalSorter::new(views.backend.clone(), views.config.rebuild_dir.clone(), mem);
    let mut restricted = sorter(restricted_memory(mem));
    let mut entries = sorter(mem.saturating_sub(restricted_memory(mem)));
    let mut docmap = BulkLoader::new(w, FILL)?;
    let mut add = |n: &dyn Source| -> ViewResult<()> {
        if !selects(c, n, ctx) {
            return Ok(());
        }
        let e = Contribution::of(c, n, ctx);
        docmap.push(&n.note_id().0.to_be_bytes(), &encode_docmap(&e.entries))?;
        for (k, v) in &e.entries {
            entries.push(k, v)?;
            if let Some(r) = &e.restricted {
                restricted.push(k, r)?;
                report.restricted_entries += 1;
            }
        }
        report.documents += 1;
        report.entries += e.entries.len() as u64;
        Ok(())
    };
    if st.folder {
        for_each_member(db, st.members_root, &mut |n| add(&NoteDoc(n)))?;
    } else {
        db.for_each_note_ref(|n| add(&RefDoc(n)))?;
    }
    let docmap_root = docmap.finish()?;
    report.scan_seconds = t0.elapsed().as_secs_f64();
    let t1 = Instant::now();
    let mut trees = Trees {
        entries: PageId::NONE,
        docmap: docmap_root,
        restricted: PageId::NONE,
    };
    for (sorter, root) in [
        (entries, &mut trees.entries),
        (restricted, &mut trees.restricted),
    ] {
        let sorted = sorter.finish()?;
        // Both sorters hold their memory until the scan ends.
        let stats = sorted.stats();
        report.sort_peak_memory += stats.peak_memory as u64;
        report.sort_runs += stats.runs_spilled;
        report.temp_bytes += stats.bytes_written;
        *root = load(w, sorted)?;
    }
    // A logged index must be on disk before the logged switch points at
    // it (I7); an unlogged one is marked dirty instead and rebuilt if a
    // crash comes first (I14).
    w.finish(st.logged() && db.is_logged())?;
    report.load_seconds = t1.elapsed().as_secs_f64();
    Ok(trees)
}

/// Bulk-loads a sorted stream into a new tree.
fn load(w: &mut nsf::BulkWriter, mut sorted: Sorted) -> ViewResult<PageId> {
    let mut loader = BulkLoader::new(w, FILL)?;
    while let Some((k, v)) = sorted.next_entry()? {
        loader.push(k, v)?;
    }
    Ok(loader.finish()?)
}

/// Calls `f` for every live member of a folder, reading the membership in
/// chunks so writers are not held off.
fn for_each_member(
    db: &Database,
    root: PageId,
    f: &mut impl FnMut(&Note) -> ViewResult<()>,
) -> ViewResult<()> {
    let mut after: Option<[u8; 4]> = None;
    loop {
        let chunk: Vec<Note> = db.index_read(|r| -> ViewResult<Vec<Note>> {
            let lo = match &after {
                Some(k) => std::ops::Bound::Excluded(&k[..]),
                None => std::ops::Bound::Unbounded,
            };
            let mut out = Vec::new();
            for kv in btree::range(r, root, lo, std::ops::Bound::Unbounded).take(256) {
                let (k, _) = kv?;
                let id = NoteId(u32::from_be_bytes(k[..4].try_into().unwrap_or_default()));
                after = Some(id.0.to_be_bytes());
                if let Some(n) = r.note(id)? {
                    out.push(n);
                }
            }
            Ok(out)
        })?;
        if chunk.is_empty() {
            return Ok(());
        }
        for n in &chunk {
            f(n)?;
        }
    }
}
