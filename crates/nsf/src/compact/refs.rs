//! Every page the committed state references, found by walking it from
//! the header: the header itself, the note table, UNID and change-sequence
//! indexes, overflow chains of large notes and histories, attachment
//! content, the replication tree, the store reference tree (§2.9), the
//! design catalog and the view-index trees its entries name (logged
//! trees walked, unlogged ones through their owned tree, I14). A page of the file that is neither referenced
//! nor on the free list was leaked by a commit that never happened (I40).

use super::catalog::ViewEntry;
use crate::header::DbHeader;
use crate::records::{decode_note_value, overflow_of};
use crate::NsfResult;
use std::collections::BTreeSet;
use std::ops::Bound;
use storage::relocate::{chain_pages, tree_pages};
use storage::{btree, PageId, PageStore, StorageError};

/// The ids of every referenced page (page 0 included).
pub(crate) fn referenced(s: &impl PageStore, h: &DbHeader) -> NsfResult<BTreeSet<u32>> {
    let mut out = vec![PageId(0)];
    tree_pages(s, h.note_root, &mut out)?;
    for kv in btree::range(s, h.note_root, Bound::Unbounded, Bound::Unbounded) {
        let (_, v) = kv?;
        if let Some(first) = overflow_of(&v) {
            chain_pages(s, first, &mut out)?;
        }
        let note = decode_note_value(s, &v)?;
        for a in note.attachments() {
            for (first, count) in &a.extents {
                out.extend((*first..first + count).map(PageId));
            }
        }
    }
    tree_pages(s, h.unid_root, &mut out)?;
    tree_pages(s, h.seq_root, &mut out)?;
    if !h.repl_root.is_none() {
        tree_pages(s, h.repl_root, &mut out)?;
        for kv in btree::range(s, h.repl_root, Bound::Unbounded, Bound::Unbounded) {
            let (k, v) = kv?;
            if k.first() == Some(&b'h') {
                if let Some(first) = overflow_of(&v) {
                    chain_pages(s, first, &mut out)?;
                }
            }
        }
    }
    if !h.design_root.is_none() {
        tree_pages(s, h.design_root, &mut out)?;
        for kv in btree::range(s, h.design_root, Bound::Unbounded, Bound::Unbounded) {
            let (_, v) = kv?;
            let e = ViewEntry::parse(&v).ok_or_else(|| {
                StorageError::corrupt(s.name(), h.design_root, "design catalog entry size")
            })?;
            for (_, root) in e.walked_roots() {
                tree_pages(s, root, &mut out)?;
            }
            if let Some(owned) = e.owned_root() {
                out.extend(owned_pages(s, owned)?);
            }
        }
    }
    if !h.store_root.is_none() {
        tree_pages(s, h.store_root, &mut out)?;
    }
    Ok(out.into_iter().map(|p| p.0).collect())
}

/// The pages an unlogged index's owned tree lists (keys: page id u32 BE).
pub(crate) fn owned_pages(s: &impl PageStore, owned: PageId) -> NsfResult<Vec<PageId>> {
    let mut out = Vec::new();
    for kv in btree::range(s, owned, Bound::Unbounded, Bound::Unbounded) {
        let (k, _) = kv?;
        let id: [u8; 4] = k.as_slice().try_into().map_err(|_| {
            StorageError::corrupt(
                s.name(),
                owned,
                format!("owned-pages key of {} bytes", k.len()),
            )
        })?;
        out.push(PageId(u32::from_be_bytes(id)));
    }
    Ok(out)
}
