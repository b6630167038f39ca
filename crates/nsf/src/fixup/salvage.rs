//! Phase 2, salvage: find every note that can still be read.
//!
//! The note table is walked from its root, tolerating damage
//! (`btree::salvage`): a page that cannot be read loses the key range its
//! parent gave it, and the walk goes on with its siblings. Notes in lost
//! ranges are then looked for in verified leaves that no walk reached
//! (pages are copy-on-write, so the leaves below a damaged internal node
//! are usually intact, only unreachable); a leaf entry is taken as a note
//! only if its key is a note id and its value decodes to a note with that
//! id, and of several versions found the one with the highest change
//! sequence wins. With the header lost there are no roots: every leaf is
//! searched. The UNID and change-sequence indexes are walked too, to tell
//! whether they agreed with the note table and to name the UNIDs of lost
//! notes; the free list and the old index pages become free space in the
//! rebuilt file.

use super::filestore::FileStore;
use super::report::LostNote;
use super::scan::PageScan;
use crate::header::DbHeader;
use crate::records::decode_note_value;
use crate::{Note, NoteId, Seq, Unid};
use std::collections::{BTreeMap, BTreeSet, HashMap};
use storage::btree::{self, Salvaged};
use storage::{PageId, PageStore};

/// A note kept, with the note-table value it was stored as.
pub(crate) struct Kept {
    pub note: Note,
    /// The stored value, reused as is unless `changed`.
    pub value: Vec<u8>,
    pub changed: bool,
}

#[derive(Default)]
pub(crate) struct Salvage {
    pub header: Option<DbHeader>,
    pub notes: BTreeMap<NoteId, Kept>,
    pub from_orphans: u64,
    pub lost: Vec<LostNote>,
    /// Pages of the old note table and indexes, free in the new file.
    pub old_tree_pages: BTreeSet<PageId>,
    /// The old free list, when it could be read whole.
    pub free_pages: Vec<PageId>,
    /// Pages of attachments dropped (set by the attachment phase): free
    /// in the new file, bad or not, and overwritten there.
    pub released: Vec<PageId>,
    pub indexes_agreed: bool,
    pub design_damaged: bool,
    /// The replication tree's root (revisions and histories, I30), kept
    /// in place when it reads whole; a damaged one is dropped (its pages
    /// join `old_tree_pages`) and the next replication compares every
    /// document.
    pub repl_root: PageId,
    pub repl_dropped: bool,
}

/// A key range (`lo` inclusive, `hi` exclusive; `None` unbounded).
type Range = (Option<Vec<u8>>, Option<Vec<u8>>);

fn in_range(k: &[u8], (lo, hi): &Range) -> bool {
    lo.as_deref().is_none_or(|l| k >= l) && hi.as_deref().is_none_or(|h| k < h)
}

pub(crate) fn salvage(old: &FileStore, scan: &PageScan) -> Salvage {
    let header = old
        .read(PageId(0))
        .ok()
        .and_then(|p| DbHeader::decode(&p, old.name()).ok());
    let mut out = Salvage {
        header: header.clone(),
        ..Salvage::default()
    };
    let mut visited = BTreeSet::new();
    let mut lost_ranges: Vec<Range> = Vec::new();
    let mut undecodable: BTreeMap<NoteId, String> = BTreeMap::new();
    let (unids, seqs, indexes_whole) = match &header {
        Some(h) => {
            walk_note_table(
                old,
                h.note_root,
                &mut out,
                &mut visited,
                &mut lost_ranges,
                &mut undecodable,
            );
            let (unids, unid_whole) = walk_index(old, h.unid_root, &mut out.old_tree_pages);
            let (seqs, seq_whole) = walk_index(old, h.seq_root, &mut out.old_tree_pages);
            out.free_pages = h.free.pages(old).unwrap_or_default();
            out.design_damaged = design_damaged(old, h.design_root);
            keep_repl_tree(old, h.repl_root, &mut out);
            (unids, seqs, unid_whole && seq_whole)
        }
        None => {
            lost_ranges.push((None, None));
            out.design_damaged = true;
            (BTreeMap::new(), BTreeMap::new(), false)
        }
    };
    if !lost_ranges.is_empty() {
        search_orphans(old, scan, &visited, &lost_ranges, &mut out);
    }
    drop_duplicate_unids(&mut out);
    out.indexes_agreed =
        indexes_whole && agree(&out.notes, &unids, &seqs) && lost_ranges.is_empty();
    report_lost(&mut out, &unids, &lost_ranges, undecodable);
    out
}

fn walk_note_table(
    old: &FileStore,
    root: PageId,
    out: &mut Salvage,
    visited: &mut BTreeSet<PageId>,
    lost_ranges: &mut Vec<Range>,
    undecodable: &mut BTreeMap<NoteId, String>,
) {
    btree::salvage(old, root, &mut |found| match found {
        Salvaged::Leaf { page, entries } => {
            visited.insert(page);
            out.old_tree_pages.insert(page);
            for (k, v) in entries {
                match note_of(old, &k, &v) {
                    Ok(note) => {
                        out.notes.insert(
                            note.note_id,
                            Kept {
                                note,
                                value: v,
                                changed: false,
                            },
                        );
                    }
                    Err(reason) => {
                        if let Ok(b) = <[u8; 4]>::try_from(k.as_slice()) {
                            undecodable.insert(NoteId(u32::from_be_bytes(b)), reason);
                        }
                    }
                }
            }
        }
        Salvaged::Internal { page } => {
            visited.insert(page);
            out.old_tree_pages.insert(page);
        }
        Salvaged::Lost { lo, hi, .. } => lost_ranges.push((lo, hi)),
    });
}

/// A note-table entry as a note: the key must be the note's id.
fn note_of(old: &FileStore, k: &[u8], v: &[u8]) -> Result<Note, String> {
    let id = <[u8; 4]>::try_from(k).map_err(|_| format!("key of {} bytes", k.len()))?;
    let note = decode_note_value(old, v).map_err(|e| e.to_string())?;
    if note.note_id.0 != u32::from_be_bytes(id) {
        return Err(format!(
            "entry for note {} holds note {}",
            u32::from_be_bytes(id),
            note.note_id
        ));
    }
    Ok(note)
}

/// Walks an index (key → note id); returns its entries and whether the
/// whole tree could be read. Readable pages become free space.
fn walk_index(
    old: &FileStore,
    root: PageId,
    pages: &mut BTreeSet<PageId>,
) -> (BTreeMap<Vec<u8>, NoteId>, bool) {
    let mut entries = BTreeMap::new();
    let mut whole = true;
    btree::salvage(old, root, &mut |found| match found {
        Salvaged::Leaf { page, entries: es } => {
            pages.insert(page);
            for (k, v) in es {
                if let Ok(b) = <[u8; 4]>::try_from(v.as_slice()) {
                    entries.insert(k, NoteId(u32::from_be_bytes(b)));
                } else {
                    whole = false;
                }
            }
        }
        Salvaged::Internal { page } => {
            pages.insert(page);
        }
        Salvaged::Lost { .. } => whole = false,
    });
    (entries, whole)
}

/// Keeps the replication tree when every page of it reads; else frees
/// what can be reached of it.
fn keep_repl_tree(old: &FileStore, root: PageId, out: &mut Salvage) {
    if root.is_none() {
        out.repl_root = PageId::NONE;
        return;
    }
    let mut pages = BTreeSet::new();
    let mut whole = true;
    btree::salvage(old, root, &mut |found| match found {
        Salvaged::Leaf { page, .. } | Salvaged::Internal { page } => {
            pages.insert(page);
        }
        Salvaged::Lost { .. } => whole = false,
    });
    if whole {
        out.repl_root = root;
    } else {
        out.repl_root = PageId::NONE;
        out.repl_dropped = true;
        out.old_tree_pages.extend(pages);
    }
}

fn design_damaged(old: &FileStore, root: PageId) -> bool {
    if root.is_none() {
        return false;
    }
    let mut damaged = false;
    btree::salvage(old, root, &mut |found| {
        if matches!(found, Salvaged::Lost { .. }) {
            damaged = true;
        }
    });
    damaged
}

/// Looks for notes of the lost ranges in verified leaves no walk reached.
fn search_orphans(
    old: &FileStore,
    scan: &PageScan,
    visited: &BTreeSet<PageId>,
    lost: &[Range],
    out: &mut Salvage,
) {
    let mut found: HashMap<NoteId, Kept> = HashMap::new();
    for &id in scan.leaves.iter().filter(|id| !visited.contains(id)) {
        let Ok(page) = old.read(id) else { continue };
        let Some(entries) = btree::leaf_entries(old, id, &page) else {
            continue;
        };
        for (k, v) in entries {
            if k.len() != 4 || !lost.iter().any(|r| in_range(&k, r)) {
                continue;
            }
            let Ok(note) = note_of(old, &k, &v) else {
                continue;
            };
            if out.notes.contains_key(&note.note_id) {
                continue;
            }
            let newer = found
                .get(&note.note_id)
                .is_none_or(|k| k.note.change_seq < note.change_seq);
            if newer {
                found.insert(
                    note.note_id,
                    Kept {
                        note,
                        value: v,
                        changed: false,
                    },
                );
            }
        }
    }
    out.from_orphans = found.len() as u64;
    out.notes.extend(found);
}

/// Two notes claiming one UNID (a stale version found among orphans, or
/// damage): the higher change sequence stays.
fn drop_duplicate_unids(out: &mut Salvage) {
    let mut by_unid: HashMap<Unid, (NoteId, Seq)> = HashMap::new();
    let mut drop = Vec::new();
    for (id, k) in &out.notes {
        let mine = (*id, k.note.change_seq);
        match by_unid.get(&k.note.oid.unid) {
            Some(&(_, seq)) if seq >= mine.1 => drop.push(*id),
            Some(&(other, _)) => {
                drop.push(other);
                by_unid.insert(k.note.oid.unid, mine);
            }
            None => {
                by_unid.insert(k.note.oid.unid, mine);
            }
        }
    }
    for id in drop {
        if let Some(k) = out.notes.remove(&id) {
            out.lost.push(LostNote {
                note_id: id,
                unid: Some(k.note.oid.unid),
                reason: "an older version of a document kept under another note id".into(),
            });
        }
    }
}

fn agree(
    notes: &BTreeMap<NoteId, Kept>,
    unids: &BTreeMap<Vec<u8>, NoteId>,
    seqs: &BTreeMap<Vec<u8>, NoteId>,
) -> bool {
    unids.len() == notes.len()
        && seqs.len() == notes.len()
        && notes.values().all(|k| {
            unids.get(&k.note.oid.unid.0[..]) == Some(&k.note.note_id)
                && seqs.get(&k.note.change_seq.0.to_be_bytes()[..]) == Some(&k.note.note_id)
        })
}

/// Lost notes: entries that did not decode, and notes the UNID index
/// names in a lost range that no orphan leaf gave back.
fn report_lost(
    out: &mut Salvage,
    unids: &BTreeMap<Vec<u8>, NoteId>,
    lost_ranges: &[Range],
    undecodable: BTreeMap<NoteId, String>,
) {
    let unid_of: HashMap<NoteId, Unid> = unids
        .iter()
        .filter_map(|(k, id)| {
            <[u8; 16]>::try_from(k.as_slice())
                .ok()
                .map(|u| (*id, Unid(u)))
        })
        .collect();
    let mut lost: BTreeMap<NoteId, String> = undecodable
        .into_iter()
        .filter(|(id, _)| !out.notes.contains_key(id))
        .collect();
    for id in unid_of.keys() {
        let key = id.0.to_be_bytes();
        if !out.notes.contains_key(id) && lost_ranges.iter().any(|r| in_range(&key, r)) {
            lost.entry(*id)
                .or_insert_with(|| "its note table page is unreadable".into());
        }
    }
    for (id, reason) in lost {
        out.lost.push(LostNote {
            note_id: id,
            unid: unid_of.get(&id).copied(),
            reason,
        });
    }
    out.lost.sort_by_key(|l| l.note_id);
}
