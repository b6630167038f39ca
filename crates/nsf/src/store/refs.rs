//! A database's store reference tree (design.md §2.9, I38): for each
//! object its notes reference, how many stored attachment items name it,
//! with the object's original and stored sizes (so `db info` can report
//! the saving without opening objects).
//!
//! ```text
//!   store reference tree (header store_root; page 0 until first used)
//!   SHA-256 (32 bytes) -> count u32, original size u64, stored size u64
//! ```
//!
//! Every note write goes through `records::store_note`, which calls
//! [`adjust`] with the references of the version it replaces and of the
//! new one, inside the same transaction: the counts commit, recover and
//! roll forward exactly with the references (I38).

use super::content::ContentHash;
use crate::header::DbHeader;
use crate::txn::Txn;
use crate::{Note, NsfError, NsfResult};
use std::collections::BTreeMap;
use std::ops::Bound;
use storage::{btree, PageId, PageStore};

const VALUE_LEN: usize = 20;

/// One object as a database references it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RefEntry {
    pub count: u32,
    pub size: u64,
    pub stored_size: u64,
}

/// The store references of a note: hash, original size, stored size,
/// one per stored attachment item.
pub(crate) fn note_refs(note: &Note) -> Vec<(ContentHash, u64, u64)> {
    note.attachments()
        .filter_map(|a| a.stored.map(|s| (s.hash, a.size, s.stored_size)))
        .collect()
}

fn corrupt(store: &impl PageStore, root: PageId, why: String) -> NsfError {
    NsfError::Storage(storage::StorageError::corrupt(store.name(), root, why))
}

fn decode(store: &impl PageStore, root: PageId, v: &[u8]) -> NsfResult<RefEntry> {
    if v.len() != VALUE_LEN {
        return Err(corrupt(
            store,
            root,
            format!("store reference of {} bytes, expected {VALUE_LEN}", v.len()),
        ));
    }
    let u64_at = |o: usize| u64::from_le_bytes(v[o..o + 8].try_into().expect("8 bytes"));
    Ok(RefEntry {
        count: u32::from_le_bytes(v[0..4].try_into().expect("4 bytes")),
        size: u64_at(4),
        stored_size: u64_at(12),
    })
}

pub(crate) fn encode_entry(e: &RefEntry) -> [u8; VALUE_LEN] {
    let mut v = [0u8; VALUE_LEN];
    v[0..4].copy_from_slice(&e.count.to_le_bytes());
    v[4..12].copy_from_slice(&e.size.to_le_bytes());
    v[12..20].copy_from_slice(&e.stored_size.to_le_bytes());
    v
}

/// I38: moves the counts from the references `old` (the version a write
/// replaces) to `new` (the version it writes). Returns true if some
/// object lost its last reference in this database.
pub(crate) fn adjust(
    txn: &mut Txn<'_>,
    old: &[(ContentHash, u64, u64)],
    new: &[(ContentHash, u64, u64)],
) -> NsfResult<bool> {
    let mut delta: BTreeMap<ContentHash, (i64, u64, u64)> = BTreeMap::new();
    for (h, size, stored) in old {
        delta.entry(*h).or_insert((0, *size, *stored)).0 -= 1;
    }
    for (h, size, stored) in new {
        delta.entry(*h).or_insert((0, *size, *stored)).0 += 1;
    }
    let mut released = false;
    for (hash, (d, size, stored_size)) in delta {
        if d == 0 {
            continue;
        }
        if txn.header.store_root == PageId::NONE {
            txn.header.store_root = btree::create(txn)?;
        }
        let mut root = txn.header.store_root;
        let current = match btree::get(txn, root, &hash.0)? {
            Some(v) => decode(txn, root, &v)?,
            None => RefEntry {
                count: 0,
                size,
                stored_size,
            },
        };
        let count = i64::from(current.count) + d;
        if count < 0 {
            return Err(corrupt(
                txn,
                root,
                format!("store reference count of {hash} would go below zero"),
            ));
        }
        if count == 0 {
            btree::remove(txn, &mut root, &hash.0)?;
            released = true;
        } else {
            let count = u32::try_from(count).map_err(|_| {
                NsfError::Invalid(format!("too many references to attachment content {hash}"))
            })?;
            let e = RefEntry { count, ..current };
            btree::insert(txn, &mut root, &hash.0, &encode_entry(&e))?;
        }
        txn.header.store_root = root;
    }
    Ok(released)
}

/// Every object the database references, with its count.
pub(crate) fn all(store: &impl PageStore, h: &DbHeader) -> NsfResult<Vec<(ContentHash, RefEntry)>> {
    if h.store_root == PageId::NONE {
        return Ok(Vec::new());
    }
    let mut out = Vec::new();
    for kv in btree::range(store, h.store_root, Bound::Unbounded, Bound::Unbounded) {
        let (k, v) = kv?;
        let hash: [u8; 32] = k.as_slice().try_into().map_err(|_| {
            corrupt(
                store,
                h.store_root,
                format!("store reference key of {} bytes", k.len()),
            )
        })?;
        out.push((ContentHash(hash), decode(store, h.store_root, &v)?));
    }
    Ok(out)
}
