//! The replication tree: what replication keeps of a database besides its
//! notes — each note's revisions, and the replication histories.
//!
//! **Revisions** are the versions a note was made from, oldest first (as
//! Notes' `$Revisions`): replication tells an update of what a replica
//! holds from a concurrent edit by asking whether the held version is
//! among the incoming one's revisions (design.md §11.4). Every local edit
//! appends the version it replaces ([`record_edit`], called by
//! `records::store_note`); a version made elsewhere brings its own,
//! stored as given ([`set_revisions`]). The list is bounded: the newest
//! [`MAX_REVISIONS`] are kept, so an edit older than that many edits reads
//! as concurrent, and is at worst kept as a conflict document.
//!
//! **Histories** are opaque entries (a key and bytes) the replication
//! layer stores per peer. They live here, not in notes, because saving one
//! must not be a change: a note write takes a change sequence number, and
//! a history saved at the end of every run would then be a change the next
//! run finds (I30).
//!
//! Both are kept outside the notes so the note format and the version
//! digest stay as they are; they are written in the same transactions as
//! the notes they describe (a note and its revisions are never apart).
//!
//! ```text
//!   replication tree (header repl_root; page 0 until first written)
//!     'r' + UNID (16)      -> u8 count, count × (u32 seq, i64 seq_time, [32] digest)
//!     'h' + key (≤ 64)     -> history bytes, inline or in an overflow chain
//! ```

use crate::header::DbHeader;
use crate::records::{free_value, note_bytes, store_value};
use crate::txn::Txn;
use crate::{NsfError, NsfResult, Timestamp, Unid, Version};
use std::ops::Bound;
use storage::{btree, PageId, PageStore};

/// The most revisions a note keeps.
pub const MAX_REVISIONS: usize = 32;
/// The longest history key, in bytes.
pub const MAX_HISTORY_KEY: usize = 64;
/// The largest history entry, in bytes.
pub const MAX_HISTORY_BYTES: usize = 256 * 1024;

const REVISIONS: u8 = b'r';
const HISTORY: u8 = b'h';
const REVISION_BYTES: usize = 4 + 8 + 32;

/// The revisions of the note `unid`, oldest first (empty if none are kept).
pub(crate) fn revisions(
    store: &impl PageStore,
    h: &DbHeader,
    unid: Unid,
) -> NsfResult<Vec<Version>> {
    if h.repl_root == PageId::NONE {
        return Ok(Vec::new());
    }
    match btree::get(store, h.repl_root, &revisions_key(unid))? {
        Some(v) => decode_revisions(&v).ok_or_else(|| {
            NsfError::Storage(storage::StorageError::corrupt(
                store.name(),
                h.repl_root,
                format!("revisions of {unid}: {} bytes that do not decode", v.len()),
            ))
        }),
        None => Ok(Vec::new()),
    }
}

/// Sets the revisions of `unid` as given (the newest [`MAX_REVISIONS`]).
pub(crate) fn set_revisions(txn: &mut Txn<'_>, unid: Unid, revisions: &[Version]) -> NsfResult<()> {
    let newest = &revisions[revisions.len().saturating_sub(MAX_REVISIONS)..];
    let key = revisions_key(unid);
    let mut root = tree(txn)?;
    if newest.is_empty() {
        btree::remove(txn, &mut root, &key)?;
    } else {
        btree::insert(txn, &mut root, &key, &encode_revisions(newest))?;
    }
    txn.header.repl_root = root;
    Ok(())
}

/// A local edit replaced `previous`: it joins the note's revisions.
pub(crate) fn record_edit(txn: &mut Txn<'_>, unid: Unid, previous: Version) -> NsfResult<()> {
    let mut list = revisions(txn, &txn.header, unid)?;
    list.push(previous);
    set_revisions(txn, unid, &list)
}

/// Stores history entry `key` (replacing one with that key). Not a change:
/// the change sequence does not move (I30).
pub(crate) fn put_history(txn: &mut Txn<'_>, key: &[u8], value: &[u8]) -> NsfResult<()> {
    if key.is_empty() || key.len() > MAX_HISTORY_KEY {
        return Err(NsfError::Invalid(format!(
            "a replication history key of {} bytes (1 to {MAX_HISTORY_KEY})",
            key.len()
        )));
    }
    if value.len() > MAX_HISTORY_BYTES {
        return Err(NsfError::Invalid(format!(
            "a replication history entry of {} bytes (at most {MAX_HISTORY_BYTES})",
            value.len()
        )));
    }
    let full = history_key(key);
    let mut root = tree(txn)?;
    if let Some(old) = btree::get(txn, root, &full)? {
        free_value(txn, &old)?;
    }
    let stored = store_value(txn, value)?;
    btree::insert(txn, &mut root, &full, &stored)?;
    txn.header.repl_root = root;
    Ok(())
}

/// Every history entry, by key.
pub(crate) fn histories(
    store: &impl PageStore,
    h: &DbHeader,
) -> NsfResult<Vec<(Vec<u8>, Vec<u8>)>> {
    if h.repl_root == PageId::NONE {
        return Ok(Vec::new());
    }
    let lo = [HISTORY];
    let hi = [HISTORY + 1];
    let mut out = Vec::new();
    for kv in btree::range(
        store,
        h.repl_root,
        Bound::Included(&lo[..]),
        Bound::Excluded(&hi[..]),
    ) {
        let (k, v) = kv?;
        out.push((k[1..].to_vec(), note_bytes(store, &v)?.into_owned()));
    }
    Ok(out)
}

/// The tree's root, created on first use.
fn tree(txn: &mut Txn<'_>) -> NsfResult<PageId> {
    if txn.header.repl_root == PageId::NONE {
        txn.header.repl_root = btree::create(txn)?;
    }
    Ok(txn.header.repl_root)
}

fn revisions_key(unid: Unid) -> [u8; 17] {
    let mut k = [0u8; 17];
    k[0] = REVISIONS;
    k[1..].copy_from_slice(&unid.0);
    k
}

fn history_key(key: &[u8]) -> Vec<u8> {
    let mut k = Vec::with_capacity(key.len() + 1);
    k.push(HISTORY);
    k.extend_from_slice(key);
    k
}

fn encode_revisions(list: &[Version]) -> Vec<u8> {
    let mut out = Vec::with_capacity(1 + list.len() * REVISION_BYTES);
    out.push(list.len() as u8);
    for v in list {
        out.extend_from_slice(&v.seq.to_le_bytes());
        out.extend_from_slice(&v.seq_time.0.to_le_bytes());
        out.extend_from_slice(&v.digest);
    }
    out
}

fn decode_revisions(b: &[u8]) -> Option<Vec<Version>> {
    let (&n, rest) = b.split_first()?;
    let n = usize::from(n);
    if n > MAX_REVISIONS || rest.len() != n * REVISION_BYTES {
        return None;
    }
    Some(
        rest.chunks_exact(REVISION_BYTES)
            .map(|c| Version {
                seq: u32::from_le_bytes([c[0], c[1], c[2], c[3]]),
                seq_time: Timestamp(i64::from_le_bytes([
                    c[4], c[5], c[6], c[7], c[8], c[9], c[10], c[11],
                ])),
                digest: c[12..44].try_into().unwrap_or([0; 32]),
            })
            .collect(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(seq: u32) -> Version {
        Version {
            seq,
            seq_time: Timestamp(i64::from(seq) * 10),
            digest: [seq as u8; 32],
        }
    }

    #[test]
    fn revisions_round_trip_and_damage_is_refused() {
        let list: Vec<Version> = (1..=MAX_REVISIONS as u32).map(v).collect();
        let bytes = encode_revisions(&list);
        assert_eq!(decode_revisions(&bytes), Some(list));
        assert_eq!(decode_revisions(&bytes[..bytes.len() - 1]), None);
        assert_eq!(decode_revisions(&[]), None);
        assert_eq!(decode_revisions(&[MAX_REVISIONS as u8 + 1]), None);
    }
}
