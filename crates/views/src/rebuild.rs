//! Rebuilding an index from scratch in bounded memory.
//!
//! Every selected document's entries go through an external merge sort
//! (temporary runs in `view_rebuild_dir`, memory bounded by
//! `view_rebuild_memory`), then the sorted stream is bulk-loaded bottom-up
//! into brand-new pages written straight to the file and synced (like
//! attachment content, I7). One small logged transaction then frees the
//! old trees and points the catalog at the new ones, so a crash at any
//! point leaves either the old index or the new one, never a mixture.
//! The rebuilt index reflects every change up to the sequence read before
//! the scan began; changes made during the scan are applied again by the
//! next update, which is idempotent.

use crate::catalog::{ViewState, FLAG_BUILT};
use crate::def::Compiled;
use crate::entries::{encode_docmap, entries_of, selects, NoteDoc, RefDoc, Source};
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
    let (entries_root, docmap_root) = match built {
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
                if st.logged() {
                    btree::free_all(tx, st.entries_root)?;
                    btree::free_all(tx, st.docmap_root)?;
                } else {
                    let owned: Vec<PageId> = btree::range(
                        &*tx,
                        st.owned_root,
                        std::ops::Bound::Unbounded,
                        std::ops::Bound::Unbounded,
                    )
                    .map(|kv| {
                        kv.map(|(k, _)| {
                            PageId(u32::from_be_bytes(k[..4].try_into().unwrap_or_default()))
                        })
                    })
                    .collect::<Result<_, _>>()?;
                    tx.free_many(&owned)?;
                    btree::free_all(tx, st.owned_root)?;
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
                st.entries_root = entries_root;
                st.docmap_root = docmap_root;
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

/// Scans the documents and writes the new entries and docmap trees.
/// Documents arrive in note-id order, so the docmap (keyed by note id) is
/// loaded as they come; only the entries go through the external sort.
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
) -> ViewResult<(PageId, PageId)> {
    let mut entries =
        ExternalSorter::new(views.backend.clone(), views.config.rebuild_dir.clone(), mem);
    let mut docmap = BulkLoader::new(w, FILL)?;
    let mut add = |n: &dyn Source| -> ViewResult<()> {
        if !selects(c, n, ctx) {
            return Ok(());
        }
        let e = entries_of(c, n, ctx);
        docmap.push(&n.note_id().0.to_be_bytes(), &encode_docmap(&e))?;
        for (k, v) in &e {
            entries.push(k, v)?;
        }
        report.documents += 1;
        report.entries += e.len() as u64;
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
    let sorted = entries.finish()?;
    let stats = sorted.stats();
    report.sort_peak_memory = stats.peak_memory as u64;
    report.sort_runs = stats.runs_spilled;
    report.temp_bytes = stats.bytes_written;
    let entries_root = load(w, sorted)?;
    // A logged index must be on disk before the logged switch points at
    // it (I7); an unlogged one is marked dirty instead and rebuilt if a
    // crash comes first (I14).
    w.finish(st.logged() && db.is_logged())?;
    report.load_seconds = t1.elapsed().as_secs_f64();
    Ok((entries_root, docmap_root))
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
