//! One move step and the seal, each the body of one logged transaction
//! run in the database's writer queue like any write (I41).
//!
//! A move step moves at most `budget` referenced pages from at or past
//! the limit to free pages below it, rewriting the one reference to each
//! (`storage::relocate`): B+tree nodes of every tree, overflow chains of
//! notes and histories, attachment content (the note is rewritten with
//! its new page runs; its change sequence does not move, it is the same
//! version), and the trees of view indexes (an unlogged index with pages
//! in the tail is dropped to be rebuilt on next use instead, I14).
//!
//! The seal rebuilds the free list from every unreferenced page below the
//! limit — the pages freed by the steps, the old free list, and the pages
//! interrupted commits leaked — and nothing past it, and says whether any
//! referenced page is left past the limit (I40).

use super::below::Below;
use super::catalog::ViewEntry;
use super::refs::{owned_pages, referenced};
use crate::records::{decode_note_value, note_value, overflow_of, with_overflow};
use crate::txn::Txn;
use crate::{ItemValue, NsfResult};
use std::ops::Bound;
use storage::freelist::FreeList;
use storage::relocate::{chain_pages, move_page, relocate_chain, relocate_tree, tree_pages, Moves};
use storage::{btree, overflow, PageId, PageStoreMut};

/// Notes one step looks at: the note table is scanned a slice per step
/// (a note's overflow chain and attachments are found by decoding it), so
/// no step holds the writer queue for long.
const NOTES_PER_STEP: usize = 512;

/// What one step did.
#[derive(Clone, Debug, Default)]
pub(crate) struct StepDone {
    pub moved: u64,
    pub views_reset: u64,
    /// Where the next step's slice of the note table starts (none: this
    /// step reached its end).
    pub next_note: Option<Vec<u8>>,
}

/// Moves up to `budget` referenced pages from at or past `limit` below it:
/// those of the notes from `from_note` on (a slice of the note table) and
/// of every tree.
pub(crate) fn move_step(
    txn: &mut Txn<'_>,
    limit: u32,
    budget: usize,
    from_note: Option<Vec<u8>>,
) -> NsfResult<StepDone> {
    let mut s = Below { txn, limit };
    let mut m = Moves::new(limit, budget);
    let mut done = StepDone {
        next_note: move_notes(&mut s, &mut m, from_note)?,
        ..StepDone::default()
    };
    let h = s.txn.header.clone();
    let note_root = relocate_tree(&mut s, h.note_root, &mut m)?;
    let unid_root = relocate_tree(&mut s, h.unid_root, &mut m)?;
    let seq_root = relocate_tree(&mut s, h.seq_root, &mut m)?;
    s.txn.header.note_root = note_root;
    s.txn.header.unid_root = unid_root;
    s.txn.header.seq_root = seq_root;
    if !h.repl_root.is_none() {
        move_histories(&mut s, &mut m)?;
        let root = s.txn.header.repl_root;
        s.txn.header.repl_root = relocate_tree(&mut s, root, &mut m)?;
    }
    if !h.design_root.is_none() {
        done.views_reset = move_views(&mut s, &mut m)?;
        let root = s.txn.header.design_root;
        s.txn.header.design_root = relocate_tree(&mut s, root, &mut m)?;
    }
    if !h.store_root.is_none() {
        let root = s.txn.header.store_root;
        s.txn.header.store_root = relocate_tree(&mut s, root, &mut m)?;
    }
    done.moved = m.moved;
    Ok(done)
}

fn past(limit: u32, pages: &[PageId]) -> bool {
    pages.iter().any(|p| p.0 >= limit)
}

/// Notes of the slice from `from` whose overflow chain or attachment
/// content reaches the tail; returns where the next slice starts.
fn move_notes(
    s: &mut Below<'_, '_>,
    m: &mut Moves,
    from: Option<Vec<u8>>,
) -> NsfResult<Option<Vec<u8>>> {
    let limit = m.limit;
    let mut todo = Vec::new();
    let mut next = None;
    let lo = match &from {
        Some(k) => Bound::Included(k.as_slice()),
        None => Bound::Unbounded,
    };
    let root = s.txn.header.note_root;
    for (seen, kv) in btree::range(&*s, root, lo, Bound::Unbounded).enumerate() {
        let (k, v) = kv?;
        if todo.len() >= m.budget || seen >= NOTES_PER_STEP {
            next = Some(k);
            break;
        }
        let mut chain = Vec::new();
        if let Some(first) = overflow_of(&v) {
            chain_pages(&*s, first, &mut chain)?;
        }
        let note = decode_note_value(&*s, &v)?;
        let blobs = note
            .attachments()
            .any(|a| a.extents.iter().any(|(f, c)| f + c > limit));
        if blobs || past(limit, &chain) {
            todo.push((k, v, note, blobs));
        }
    }
    for (k, v, mut note, blobs) in todo {
        let value = if blobs {
            for item in &mut note.items {
                if let ItemValue::Attachment(a) = &mut item.value {
                    a.extents = move_runs(s, m, &a.extents)?;
                }
            }
            let value = note_value(s, &note)?;
            if let Some(old) = overflow_of(&v) {
                overflow::free(s, old)?;
            }
            value
        } else {
            match overflow_of(&v) {
                Some(first) => with_overflow(&v, relocate_chain(s, first, m)?),
                None => continue,
            }
        };
        let mut root = s.txn.header.note_root;
        btree::insert(s, &mut root, &k, &value)?;
        s.txn.header.note_root = root;
    }
    Ok(next)
}

/// Moves an attachment's pages in the tail (within the budget) and
/// returns its page runs.
fn move_runs(
    s: &mut Below<'_, '_>,
    m: &mut Moves,
    extents: &[(u32, u32)],
) -> NsfResult<Vec<(u32, u32)>> {
    let mut runs: Vec<(u32, u32)> = Vec::new();
    for (first, count) in extents {
        for p in *first..first + count {
            let at = if m.take(PageId(p)) {
                move_page(s, PageId(p))?.0
            } else {
                p
            };
            match runs.last_mut() {
                Some((f, c)) if *f + *c == at => *c += 1,
                _ => runs.push((at, 1)),
            }
        }
    }
    Ok(runs)
}

/// Replication histories stored in overflow chains that reach the tail.
fn move_histories(s: &mut Below<'_, '_>, m: &mut Moves) -> NsfResult<()> {
    let mut todo = Vec::new();
    for kv in btree::range(
        &*s,
        s.txn.header.repl_root,
        Bound::Unbounded,
        Bound::Unbounded,
    ) {
        let (k, v) = kv?;
        if k.first() != Some(&b'h') {
            continue;
        }
        if let Some(first) = overflow_of(&v) {
            let mut chain = Vec::new();
            chain_pages(&*s, first, &mut chain)?;
            if past(m.limit, &chain) {
                todo.push((k, v, first));
            }
        }
    }
    for (k, v, first) in todo {
        let value = with_overflow(&v, relocate_chain(s, first, m)?);
        let mut root = s.txn.header.repl_root;
        btree::insert(s, &mut root, &k, &value)?;
        s.txn.header.repl_root = root;
    }
    Ok(())
}

/// View-index trees; returns how many unlogged indexes were dropped.
fn move_views(s: &mut Below<'_, '_>, m: &mut Moves) -> NsfResult<u64> {
    let mut entries = Vec::new();
    for kv in btree::range(
        &*s,
        s.txn.header.design_root,
        Bound::Unbounded,
        Bound::Unbounded,
    ) {
        let (k, v) = kv?;
        if let Some(e) = ViewEntry::parse(&v) {
            entries.push((k, e));
        }
    }
    let mut reset = 0;
    for (k, mut e) in entries {
        let mut changed = false;
        if let Some(owned) = e.owned_root() {
            let listed = owned_pages(&*s, owned)?;
            let mut tree = Vec::new();
            tree_pages(&*s, owned, &mut tree)?;
            if past(m.limit, &listed) || past(m.limit, &tree) {
                for p in listed {
                    s.free(p)?;
                }
                btree::free_all(s, owned)?;
                let fresh = btree::create(s)?;
                e.reset_unlogged(fresh);
                changed = true;
                reset += 1;
            }
        }
        for (at, root) in e.walked_roots() {
            let to = relocate_tree(s, root, m)?;
            if to != root {
                e.replace_root(at, to);
                changed = true;
            }
        }
        if changed {
            let mut root = s.txn.header.design_root;
            btree::insert(s, &mut root, &k, &e.0)?;
            s.txn.header.design_root = root;
        }
    }
    Ok(reset)
}

/// Rebuilds the free list from every unreferenced page below `limit` and
/// nothing past it; returns whether no referenced page is left at or
/// past `limit` (the tail may be cut). The caller guarantees that no
/// page is reserved for a commit still to come (attachment streaming,
/// bulk builds): such a page would look leaked.
pub(crate) fn seal(txn: &mut Txn<'_>, limit: u32) -> NsfResult<bool> {
    let h = txn.header.clone();
    let refs = referenced(&*txn, &h)?;
    // Highest first: allocation pops the last id of the head trunk, so
    // the lowest pages are used first and the tail stays free.
    let ids: Vec<PageId> = (1..limit.min(h.page_count))
        .rev()
        .filter(|p| !refs.contains(p))
        .map(PageId)
        .collect();
    let mut free = FreeList::default();
    free.push_many(txn, &ids)?;
    txn.header.free = free;
    Ok(refs.range(limit..).next().is_none())
}
