//! Phases 4 and 5, rebuild and swap: write the repaired database beside
//! the old file and put it in its place atomically.
//!
//! The new file starts as a byte copy of the old one, so every page id
//! stays valid: attachment content and overflow chains are kept where
//! they are, and so are the view indexes (the views layer checks them
//! after fixup). Then, past the old high-water mark, new trees are
//! bulk-loaded from the kept notes — note table, UNID index, change-
//! sequence index — the pages of the old trees and of the old free list
//! become the new free list (bad pages are left unused), and a new header
//! with a new instance id is written last. The file is fdatasynced,
//! renamed over the old one and the directory fsynced (I9): a crash at
//! any point leaves the old file or the new one, never a mixture, and the
//! old instance was retired before the rename (I29).

use super::filestore::FileStore;
use super::salvage::Salvage;
use crate::header::DbHeader;
use crate::records::note_value;
use crate::store::refs::{encode_entry, note_refs, RefEntry};
use crate::ContentHash;
use crate::{DbInstanceId, NsfError, NsfResult, ReplicaId, Seq, Timestamp};
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::sync::Arc;
use storage::backend::{read_exact_at, write_all_at, OpenMode};
use storage::bulk::bulk_load;
use storage::freelist::FreeList;
use storage::{Backend, FileHandle, PageId, StorageResult, PAGE_SIZE};

const FILL: f32 = 0.9;
/// Bytes copied per I/O.
const COPY_CHUNK: usize = 128 * PAGE_SIZE;

/// What the rebuild needs besides the salvage.
pub(crate) struct NewFile<'a> {
    pub backend: &'a dyn Backend,
    pub path: &'a Path,
    pub name: &'a str,
    pub old: &'a Arc<dyn FileHandle>,
    pub bad: &'a BTreeSet<u32>,
    pub now: Timestamp,
}

/// Writes the new file under a temporary name and swaps it in. Returns the
/// new instance id.
pub(crate) fn rebuild_and_swap(nf: &NewFile<'_>, salvage: Salvage) -> NsfResult<DbInstanceId> {
    let tmp = nf.path.with_extension("fdb-fixup");
    let io = |e: std::io::Error| NsfError::Io {
        path: tmp.display().to_string(),
        source: e,
    };
    let file = nf.backend.open(&tmp, OpenMode::CreateOrOpen).map_err(io)?;
    file.set_len(0).map_err(io)?;
    let old_len = nf.old.len().map_err(io)?;
    copy(nf.old.as_ref(), file.as_ref(), old_len).map_err(io)?;
    let high_water = (old_len / PAGE_SIZE as u64) as u32;
    let mut store = FileStore::new(file.clone(), nf.name, high_water.max(1));
    let header = build(&mut store, nf, salvage)?;
    storage::PageWrite::write(&mut store, PageId(0), header.encode());
    if let Some(e) = store.take_failure() {
        return Err(io(e));
    }
    // I9: the new file is whole on disk before its name replaces the old.
    file.sync_data().map_err(io)?;
    drop(file);
    nf.backend.rename(&tmp, nf.path).map_err(io)?;
    nf.backend
        .sync_dir(nf.path.parent().unwrap_or(Path::new(".")))
        .map_err(io)?;
    Ok(header.instance_id)
}

fn copy(from: &dyn FileHandle, to: &dyn FileHandle, len: u64) -> std::io::Result<()> {
    let mut buf = vec![0u8; COPY_CHUNK];
    let mut at = 0u64;
    while at < len {
        let n = (COPY_CHUNK as u64).min(len - at) as usize;
        read_exact_at(from, &mut buf[..n], at)?;
        write_all_at(to, &buf[..n], at)?;
        at += n as u64;
    }
    Ok(())
}

/// Builds the trees and the free list in `store` and returns the header.
fn build(store: &mut FileStore, nf: &NewFile<'_>, mut s: Salvage) -> NsfResult<DbHeader> {
    let old = s.header.clone();
    let mut last_seq = old.as_ref().map_or(0, |h| h.last_seq.0);
    last_seq = last_seq.max(
        s.notes
            .values()
            .map(|k| k.note.change_seq.0)
            .max()
            .unwrap_or(0),
    );
    // Change sequences must be unique (the seq index is keyed by them); a
    // changed note takes a new one so whoever follows the sequence sees it.
    let mut used = BTreeSet::new();
    for k in s.notes.values_mut() {
        if k.changed || !used.insert(k.note.change_seq.0) {
            last_seq += 1;
            k.note.change_seq = Seq(last_seq);
            used.insert(last_seq);
            k.changed = true;
        }
    }
    let mut rows = Vec::with_capacity(s.notes.len());
    for (id, k) in &s.notes {
        let value = if k.changed {
            note_value(store, &k.note)?
        } else {
            k.value.clone()
        };
        rows.push((id.0.to_be_bytes().to_vec(), value));
    }
    let note_root = bulk_load(store, rows.into_iter().map(Ok), FILL)?;
    let mut unids: Vec<_> = s
        .notes
        .values()
        .map(|k| {
            (
                k.note.oid.unid.0.to_vec(),
                k.note.note_id.0.to_be_bytes().to_vec(),
            )
        })
        .collect();
    unids.sort();
    let unid_root = bulk_load(store, unids.into_iter().map(Ok), FILL)?;
    let mut seqs: Vec<_> = s
        .notes
        .values()
        .map(|k| {
            (
                k.note.change_seq.0.to_be_bytes().to_vec(),
                k.note.note_id.0.to_be_bytes().to_vec(),
            )
        })
        .collect();
    seqs.sort();
    let seq_root = bulk_load(store, seqs.into_iter().map(Ok), FILL)?;
    let store_root = store_ref_tree(store, &s)?;
    let free = free_list(store, &s, nf.bad)?;
    let max_id = s.notes.keys().map(|n| n.0).max().unwrap_or(0);
    let replica_id = old
        .as_ref()
        .map(|h| h.replica_id)
        .unwrap_or_else(|| replica_from_acl(&s));
    let mut instance = DbInstanceId(rand::random());
    while Some(instance) == old.as_ref().map(|h| h.instance_id) || instance.0 == 0 {
        instance = DbInstanceId(rand::random());
    }
    Ok(DbHeader {
        replica_id,
        instance_id: instance,
        created: old.as_ref().map_or(nf.now, |h| h.created),
        page_count: store.high_water(),
        free,
        note_root,
        unid_root,
        seq_root,
        design_root: old.as_ref().map_or(PageId::NONE, |h| h.design_root),
        repl_root: s.repl_root,
        store_root,
        next_note_id: old.as_ref().map_or(1, |h| h.next_note_id).max(max_id + 1),
        last_seq: Seq(last_seq),
        // I12: fixup is what clears "written unlogged, not closed cleanly".
        flags: 0,
        title: old.map(|h| h.title).unwrap_or_default(),
    })
}

/// I38: the store reference tree, counted afresh from the kept notes
/// (the old tree's pages are left unreferenced, reclaimed by compact).
fn store_ref_tree(store: &mut FileStore, s: &Salvage) -> NsfResult<PageId> {
    let mut counts: BTreeMap<ContentHash, RefEntry> = BTreeMap::new();
    for k in s.notes.values() {
        for (hash, size, stored_size) in note_refs(&k.note) {
            counts
                .entry(hash)
                .or_insert(RefEntry {
                    count: 0,
                    size,
                    stored_size,
                })
                .count += 1;
        }
    }
    if counts.is_empty() {
        return Ok(PageId::NONE);
    }
    let rows = counts
        .into_iter()
        .map(|(h, e)| Ok((h.0.to_vec(), encode_entry(&e).to_vec())));
    Ok(bulk_load(store, rows, FILL)?)
}

/// The old trees' pages and the old free list, minus bad pages, as the
/// new free list.
fn free_list(store: &mut FileStore, s: &Salvage, bad: &BTreeSet<u32>) -> StorageResult<FreeList> {
    // A dropped attachment's pages are unreferenced now: each is
    // overwritten with an empty page, so a damaged one no longer reads bad.
    for &p in &s.released {
        if p.0 != 0 && p.0 < store.high_water() {
            storage::PageWrite::write(store, p, storage::PageBuf::new(storage::PageKind::Free));
        }
    }
    let ids: BTreeSet<PageId> = s
        .old_tree_pages
        .iter()
        .chain(&s.free_pages)
        .copied()
        .filter(|p| p.0 != 0 && !bad.contains(&p.0))
        .chain(
            s.released
                .iter()
                .copied()
                .filter(|p| p.0 != 0 && p.0 < store.high_water()),
        )
        .collect();
    let ids: Vec<PageId> = ids.into_iter().collect();
    let mut free = FreeList {
        head: PageId::NONE,
        count: 0,
    };
    free.push_many(store, &ids)?;
    Ok(free)
}

/// With the header lost, the ACL note's UNID still carries the replica
/// id (design.md §2.7); else a new one.
fn replica_from_acl(s: &Salvage) -> ReplicaId {
    s.notes
        .values()
        .find(|k| k.note.oid.unid.0[8..] == *b"FOLIOACL")
        .map(|k| {
            ReplicaId(u64::from_be_bytes(
                k.note.oid.unid.0[..8].try_into().unwrap_or_default(),
            ))
        })
        .unwrap_or_else(|| ReplicaId(rand::random()))
}
