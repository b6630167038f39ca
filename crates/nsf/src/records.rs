//! Notes as records of a database's three trees: how a note is stored,
//! found and replaced inside a transaction.
//!
//! ```text
//!   note table   note id (u32 BE)   -> tag 0 + encoded note, or
//!                                      tag 1 + overflow first page + length + crc32c
//!   UNID index   UNID (16 bytes)    -> note id
//!   seq index    change seq (u64 BE) -> note id
//! ```
//!
//! Every write of a note, whoever makes it (document writes, the ACL,
//! design notes from the views layer), goes through [`store_note`], which
//! gives it the next change sequence and keeps the seq index in step, and
//! marks the transaction when the note is the ACL note (I15). These
//! helpers need only a transaction or a page store, never the
//! `Database`, so the index hooks (`index.rs`) use them too.

use crate::acl::acl_unid;
use crate::header::DbHeader;
use crate::lineage;
use crate::note::stub_keeps;
use crate::store::{self, ContentHash};
use crate::txn::Txn;
use crate::{
    decode_note, encode_note, Item, Note, NoteId, NsfError, NsfResult, OriginatorId, Seq,
    Timestamp, Unid, Version, DESIGN_ITEMS,
};
use std::borrow::Cow;
use storage::{btree, overflow, PageId, PageStore, PageStoreMut};

/// Largest encoded note stored inside the note table entry; larger notes
/// go to an overflow chain.
const INLINE_MAX: usize = 1800;
const TAG_INLINE: u8 = 0;
const TAG_OVERFLOW: u8 = 1;

/// What a write returns: enough to find and re-update the document.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NoteMeta {
    pub note_id: NoteId,
    pub unid: Unid,
    pub seq_num: u32,
    pub change_seq: Seq,
}

/// Where the version of a note that a write replaces is stored.
pub(crate) struct Stored {
    /// Its overflow chain, freed when the new version is written.
    overflow: Option<PageId>,
    /// Its change-sequence index entry, replaced by the new one.
    change_seq: Seq,
    /// Its version: a local edit records it among the new version's
    /// revisions (`lineage.rs`).
    version: Version,
    /// Its attachment store references, whose counts move to the new
    /// version's (I38).
    store_refs: Vec<(ContentHash, u64, u64)>,
}

pub(crate) fn missing(db: &str, unid: Unid) -> NsfError {
    NsfError::NoSuchDocument {
        db: db.to_string(),
        unid,
    }
}

pub(crate) fn lookup_unid(
    store: &impl PageStore,
    h: &DbHeader,
    unid: Unid,
) -> NsfResult<Option<NoteId>> {
    match btree::get(store, h.unid_root, &unid.0)? {
        Some(v) => Ok(Some(note_id_from(&v, store.name())?)),
        None => Ok(None),
    }
}

pub(crate) fn note_id_from(v: &[u8], path: &str) -> NsfResult<NoteId> {
    let b: [u8; 4] = v.try_into().map_err(|_| {
        NsfError::Storage(storage::StorageError::corrupt(
            path,
            PageId(0),
            format!("index value of {} bytes, expected a note id", v.len()),
        ))
    })?;
    Ok(NoteId(u32::from_be_bytes(b)))
}

pub(crate) fn load_note(
    store: &impl PageStore,
    h: &DbHeader,
    id: NoteId,
) -> NsfResult<Option<Note>> {
    match btree::get(store, h.note_root, &id.0.to_be_bytes())? {
        Some(v) => Ok(Some(decode_note_value(store, &v)?)),
        None => Ok(None),
    }
}

/// Loads note `id` (live or a stub) as this transaction sees it, with
/// what [`store_note`] needs to replace its stored version.
pub(crate) fn load_stored(txn: &Txn<'_>, unid: Unid, id: NoteId) -> NsfResult<(Note, Stored)> {
    let value = btree::get(txn, txn.header.note_root, &id.0.to_be_bytes())?
        .ok_or_else(|| missing(txn.name(), unid))?;
    let note = decode_note_value(txn, &value)?;
    let stored = Stored {
        overflow: overflow_of(&value),
        change_seq: note.change_seq,
        version: note.version(),
        store_refs: store::refs::note_refs(&note),
    };
    Ok((note, stored))
}

/// Decodes a note-table value: the note inline, or a pointer to an
/// overflow chain (first page, length, crc32c of the encoded note).
pub(crate) fn decode_note_value(store: &impl PageStore, v: &[u8]) -> NsfResult<Note> {
    Ok(decode_note(&note_bytes(store, v)?)?)
}

/// The encoded note a note-table value holds: borrowed when inline, read
/// from its overflow chain (and checked against its crc32c) otherwise.
pub(crate) fn note_bytes<'v>(store: &impl PageStore, v: &'v [u8]) -> NsfResult<Cow<'v, [u8]>> {
    let corrupt = |r: &str| {
        NsfError::Storage(storage::StorageError::corrupt(
            store.name(),
            PageId(0),
            format!("note table value: {r}"),
        ))
    };
    match v.first() {
        Some(&TAG_INLINE) => Ok(Cow::Borrowed(&v[1..])),
        Some(&TAG_OVERFLOW) if v.len() == 17 => {
            let first = PageId(u32::from_le_bytes(v[1..5].try_into().unwrap()));
            let len = u64::from_le_bytes(v[5..13].try_into().unwrap());
            let crc = u32::from_le_bytes(v[13..17].try_into().unwrap());
            let bytes = overflow::read(store, first, len)?;
            if crc32c::crc32c(&bytes) != crc {
                return Err(corrupt("overflow content checksum mismatch"));
            }
            Ok(Cow::Owned(bytes))
        }
        _ => Err(corrupt("unknown value tag")),
    }
}

/// The tree value for `bytes`: inline with its tag, or written to an
/// overflow chain and pointed to (the form [`note_bytes`] reads).
pub(crate) fn store_value(txn: &mut impl PageStoreMut, bytes: &[u8]) -> NsfResult<Vec<u8>> {
    if bytes.len() <= INLINE_MAX {
        let mut v = Vec::with_capacity(bytes.len() + 1);
        v.push(TAG_INLINE);
        v.extend_from_slice(bytes);
        return Ok(v);
    }
    let first = overflow::write(txn, bytes)?;
    let mut v = vec![TAG_OVERFLOW];
    v.extend_from_slice(&first.0.to_le_bytes());
    v.extend_from_slice(&(bytes.len() as u64).to_le_bytes());
    v.extend_from_slice(&crc32c::crc32c(bytes).to_le_bytes());
    Ok(v)
}

/// The stored value `v` pointing at the chain starting at `first`
/// instead (the chain moved, compact; length and checksum unchanged).
pub(crate) fn with_overflow(v: &[u8], first: PageId) -> Vec<u8> {
    let mut out = v.to_vec();
    out[1..5].copy_from_slice(&first.0.to_le_bytes());
    out
}

/// Frees the overflow chain a value made by [`store_value`] points to.
pub(crate) fn free_value(txn: &mut Txn<'_>, v: &[u8]) -> NsfResult<()> {
    if let Some(first) = overflow_of(v) {
        overflow::free(txn, first)?;
    }
    Ok(())
}

/// The first page of the overflow chain a stored value points to.
pub(crate) fn overflow_of(v: &[u8]) -> Option<PageId> {
    (v.first() == Some(&TAG_OVERFLOW) && v.len() == 17)
        .then(|| PageId(u32::from_le_bytes(v[1..5].try_into().unwrap())))
}

/// Writes `note` (new change seq assigned here) into the note table and the
/// seq index; `replaces` describes the stored version it supersedes, which
/// joins the note's revisions (a write of a version made elsewhere then
/// sets them as given, `lineage::set_revisions`).
pub(crate) fn store_note(
    txn: &mut Txn<'_>,
    note: &mut Note,
    replaces: Option<Stored>,
) -> NsfResult<NoteMeta> {
    let key = note.note_id.0.to_be_bytes();
    // I38: the reference counts change in the note's own transaction.
    let old_refs = replaces.as_ref().map(|o| o.store_refs.as_slice());
    if store::refs::adjust(txn, old_refs.unwrap_or(&[]), &store::refs::note_refs(note))? {
        txn.attach_store().note_released();
    }
    if let Some(old) = replaces {
        lineage::record_edit(txn, note.oid.unid, old.version)?;
        if let Some(first) = old.overflow {
            overflow::free(txn, first)?;
        }
        let mut seq_root = txn.header.seq_root;
        btree::remove(txn, &mut seq_root, &old.change_seq.0.to_be_bytes())?;
        txn.header.seq_root = seq_root;
    }
    if note.oid.unid == acl_unid(txn.header.replica_id) {
        txn.acl_written = true;
    }
    txn.header.last_seq.0 += 1;
    note.change_seq = txn.header.last_seq;
    let value = note_value(txn, note)?;
    let mut note_root = txn.header.note_root;
    btree::insert(txn, &mut note_root, &key, &value)?;
    txn.header.note_root = note_root;
    let mut seq_root = txn.header.seq_root;
    btree::insert(txn, &mut seq_root, &note.change_seq.0.to_be_bytes(), &key)?;
    txn.header.seq_root = seq_root;
    Ok(NoteMeta {
        note_id: note.note_id,
        unid: note.oid.unid,
        seq_num: note.oid.seq_num,
        change_seq: note.change_seq,
    })
}

/// Removes the stored note `id` from the note table and the seq index and
/// frees its overflow chain (the caller keeps the UNID index in step).
pub(crate) fn free_stored(txn: &mut Txn<'_>, id: NoteId, stored: Stored) -> NsfResult<()> {
    if let Some(first) = stored.overflow {
        overflow::free(txn, first)?;
    }
    let mut note_root = txn.header.note_root;
    btree::remove(txn, &mut note_root, &id.0.to_be_bytes())?;
    txn.header.note_root = note_root;
    let mut seq_root = txn.header.seq_root;
    btree::remove(txn, &mut seq_root, &stored.change_seq.0.to_be_bytes())?;
    txn.header.seq_root = seq_root;
    Ok(())
}

/// The note-table value of `note`: inline, or written to a new overflow
/// chain in `s` when its encoding is too large.
pub(crate) fn note_value(s: &mut impl PageStoreMut, note: &Note) -> NsfResult<Vec<u8>> {
    store_value(s, &encode_note(note)?)
}

/// Cuts a note's items to what a stub keeps: [`stub_keeps`]'s (the access
/// items, conflict marks and CouchDB identity) and `$DesignType` (a
/// design note's stub stays out of views, change listings and searches,
/// as the note was). A stub stored by a deletion here and a losing stub
/// kept as a conflict document (`ForeignTxn::put_conflict`) keep the same.
pub(crate) fn cut_to_stub(note: &mut Note) {
    note.items
        .retain(|i| stub_keeps(&i.name) || i.name.eq_ignore_ascii_case(DESIGN_ITEMS[0]));
}

/// Replaces the live `note` with its deletion stub: its attachments'
/// pages freed, its items cut to what a stub keeps — [`stub_keeps`]'s
/// (the access items, conflict marks and CouchDB identity) and `$DesignType` (a design note's stub stays out of views, change
/// listings and searches, as the note was).
pub(crate) fn store_stub(txn: &mut Txn<'_>, mut note: Note, stored: Stored) -> NsfResult<NoteMeta> {
    for a in note.attachments().cloned().collect::<Vec<_>>() {
        crate::attach::free_blob(txn, &a)?;
    }
    cut_to_stub(&mut note);
    note.deleted = true;
    bump(&mut note, txn.now());
    store_note(txn, &mut note, Some(stored))
}

/// Creates a note with a fresh UNID.
pub(crate) fn create_note(txn: &mut Txn<'_>, items: Vec<Item>) -> NsfResult<NoteMeta> {
    let unid = fresh_unid(txn)?;
    create_with_unid(txn, unid, items)
}

/// Creates a note under `unid`, which no note has yet.
pub(crate) fn create_with_unid(
    txn: &mut Txn<'_>,
    unid: Unid,
    items: Vec<Item>,
) -> NsfResult<NoteMeta> {
    let now = txn.now();
    let note_id = NoteId(txn.header.next_note_id);
    txn.header.next_note_id += 1;
    let mut note = Note {
        note_id,
        oid: OriginatorId {
            unid,
            seq_num: 1,
            seq_time: now,
        },
        created: now,
        modified: now,
        added: now,
        change_seq: Seq(0),
        deleted: false,
        items,
    };
    let meta = store_note(txn, &mut note, None)?;
    let mut root = txn.header.unid_root;
    btree::insert(txn, &mut root, &unid.0, &note_id.0.to_be_bytes())?;
    txn.header.unid_root = root;
    Ok(meta)
}

/// Makes `note` the next edit of itself at `now` (the engine clock's
/// time): sequence number and time. I22: the sequence time never goes
/// back, whatever the clock did since the version it follows.
pub(crate) fn bump(note: &mut Note, now: Timestamp) {
    let at = now.max(note.oid.seq_time);
    note.oid.seq_num += 1;
    note.oid.seq_time = at;
    note.modified = at;
}

/// A random UNID no note has, and never the ACL note's.
fn fresh_unid(txn: &Txn<'_>) -> NsfResult<Unid> {
    let reserved = acl_unid(txn.header.replica_id);
    loop {
        let u = Unid::random();
        if u != reserved && lookup_unid(txn, &txn.header, u)?.is_none() {
            return Ok(u);
        }
    }
}
