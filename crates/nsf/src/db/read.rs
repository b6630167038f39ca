//! Reads: documents by UNID or note id, scans in note-id and change
//! order, the ACL, attachment streams, and the database's description.
//!
//! Every read holds the database's `state` lock shared for one short
//! operation and sees all of a transaction or none of it (I13). Scans
//! read in chunks of [`SCAN_CHUNK`] notes per lock hold, so a long scan
//! never holds writers off; callbacks run with no lock held.

use super::Database;
use crate::acl::{acl_of_note, acl_unid};
use crate::attach::AttachmentReader;
use crate::dbcore::{Committed, Durability};
use crate::lineage;
use crate::records::{
    decode_note_value, load_note, lookup_unid, missing, note_bytes, note_id_from,
};
use crate::state::DbState;
use crate::store::{self, CarriedContent, ObjectReader};
use crate::{
    Acl, AttachmentRef, Note, NoteId, NoteRef, NsfError, NsfResult, Seq, Timestamp, Unid, Version,
};
use std::ops::Bound;
use std::sync::Arc;
use storage::btree;

/// Notes read per lock hold when scanning (keeps writers flowing).
const SCAN_CHUNK: usize = 256;

/// The ACL note as last read.
pub(super) enum AclCache {
    /// Not read since the database opened or the ACL note last changed.
    Unread,
    /// What the ACL note held (`None`: no list was ever set).
    Read(Option<Arc<Acl>>),
}

/// A database's description. Values stay typed; they are formatted once,
/// at the edge that shows them (serialised, ids are 16 hex digits and the
/// creation time RFC 3339).
#[derive(Clone, Debug, serde::Serialize)]
pub struct DbInfo {
    pub path: String,
    pub title: String,
    pub replica_id: crate::ReplicaId,
    pub instance_id: crate::DbInstanceId,
    pub created: Timestamp,
    pub note_count: u64,
    pub file_size: u64,
    pub page_count: u32,
    pub free_pages: u64,
    pub sequence: u64,
    pub needs_fixup: bool,
    /// The id the next note stored here will get: ids are never reused
    /// within an instance (IMAP's UIDNEXT, design.md I55).
    pub next_note_id: u32,
}

impl Database {
    pub fn info(&self) -> NsfResult<DbInfo> {
        // I42: a deleted database answers nothing.
        self.core.check_not_deleted()?;
        let h = self.state.read();
        let notes = btree::len(&Committed(&self.core), h.note_root)?;
        let file_size = self.core.handle.len().map_err(|e| NsfError::Io {
            path: self.core.path.clone(),
            source: e,
        })?;
        Ok(DbInfo {
            path: self.core.path.clone(),
            title: h.title.clone(),
            replica_id: h.replica_id,
            instance_id: h.instance_id,
            created: h.created,
            note_count: notes,
            file_size,
            page_count: h.page_count,
            free_pages: h.free.count,
            sequence: h.last_seq.0,
            next_note_id: h.next_note_id,
            needs_fixup: {
                // I12 (unlogged, not closed cleanly) or I29 (retired).
                let state = self.core.state();
                state.unclean_open()
                    || state
                        .refusal()
                        .is_some_and(|r| r.kind == crate::ReasonKind::NeedsFixup)
            },
        })
    }

    /// Reads a document by UNID. Deletion stubs are `Deleted` errors.
    pub fn get(&self, unid: Unid) -> NsfResult<Note> {
        let note = self.get_any(unid)?;
        if note.deleted {
            return Err(NsfError::Deleted {
                db: self.core.path.clone(),
                unid,
            });
        }
        Ok(note)
    }

    /// Reads a document or its deletion stub by UNID.
    pub fn get_any(&self, unid: Unid) -> NsfResult<Note> {
        // I42: a deleted database answers nothing.
        self.core.check_not_deleted()?;
        let h = self.state.read();
        let store = Committed(&self.core);
        match lookup_unid(&store, &h, unid)? {
            Some(id) => load_note(&store, &h, id)?.ok_or_else(|| self.missing(unid)),
            None => Err(self.missing(unid)),
        }
    }

    /// A document or its deletion stub with its revisions (`lineage.rs`),
    /// read together (I13); `None` if no note has the UNID.
    pub fn get_with_revisions(&self, unid: Unid) -> NsfResult<Option<(Note, Vec<Version>)>> {
        // I42: a deleted database answers nothing.
        self.core.check_not_deleted()?;
        let h = self.state.read();
        let store = Committed(&self.core);
        let Some(id) = lookup_unid(&store, &h, unid)? else {
            return Ok(None);
        };
        match load_note(&store, &h, id)? {
            Some(note) => Ok(Some((note, lineage::revisions(&store, &h, unid)?))),
            None => Ok(None),
        }
    }

    /// [`Database::get_with_revisions`], looking first at note `id`, where
    /// a recent read (a change scan) found `unid`: one B+tree lookup
    /// instead of two. Note ids are this file's own and may be given to
    /// another note after a purge, so the note there counts only if it
    /// still has `unid`; otherwise the UNID index is asked as usual.
    pub fn get_with_revisions_at(
        &self,
        unid: Unid,
        id: NoteId,
    ) -> NsfResult<Option<(Note, Vec<Version>)>> {
        // I42: a deleted database answers nothing.
        self.core.check_not_deleted()?;
        let h = self.state.read();
        let store = Committed(&self.core);
        let note = match load_note(&store, &h, id)? {
            Some(note) if note.oid.unid == unid => Some(note),
            _ => match lookup_unid(&store, &h, unid)? {
                Some(id) => load_note(&store, &h, id)?,
                None => None,
            },
        };
        match note {
            Some(note) => Ok(Some((note, lineage::revisions(&store, &h, unid)?))),
            None => Ok(None),
        }
    }

    /// The versions the note `unid` was made from, oldest first (empty if
    /// none are kept, or no note has the UNID).
    pub fn revisions(&self, unid: Unid) -> NsfResult<Vec<Version>> {
        // I42: a deleted database answers nothing.
        self.core.check_not_deleted()?;
        let h = self.state.read();
        lineage::revisions(&Committed(&self.core), &h, unid)
    }

    /// Every replication history entry, by key (`lineage.rs`).
    pub fn replication_histories(&self) -> NsfResult<Vec<(Vec<u8>, Vec<u8>)>> {
        // I42: a deleted database answers nothing.
        self.core.check_not_deleted()?;
        let h = self.state.read();
        lineage::histories(&Committed(&self.core), &h)
    }

    /// Reads a document by note id (stubs included).
    pub fn get_by_id(&self, id: NoteId) -> NsfResult<Option<Note>> {
        // I42: a deleted database answers nothing.
        self.core.check_not_deleted()?;
        let h = self.state.read();
        load_note(&Committed(&self.core), &h, id)
    }

    pub(super) fn missing(&self, unid: Unid) -> NsfError {
        missing(&self.core.path, unid)
    }

    /// Calls `f` for every document (not stubs) in note-id order. Reads in
    /// chunks so writers are not held off for a long scan.
    pub fn for_each_note(&self, mut f: impl FnMut(Note) -> NsfResult<()>) -> NsfResult<()> {
        // I42: a deleted database answers nothing.
        self.core.check_not_deleted()?;
        let mut from: Bound<Vec<u8>> = Bound::Unbounded;
        loop {
            let chunk = {
                let h = self.state.read();
                let store = Committed(&self.core);
                let lo = match &from {
                    Bound::Unbounded => Bound::Unbounded,
                    Bound::Excluded(k) => Bound::Excluded(k.as_slice()),
                    Bound::Included(k) => Bound::Included(k.as_slice()),
                };
                let mut out = Vec::with_capacity(SCAN_CHUNK);
                let mut range = btree::range(&store, h.note_root, lo, Bound::Unbounded);
                while out.len() < SCAN_CHUNK {
                    // Decode straight from the page: no copy of the value.
                    let next =
                        range.next_with(|k, v| (k.to_vec(), decode_note_value(&store, v)))?;
                    match next {
                        Some((k, note)) => out.push((k, note?)),
                        None => break,
                    }
                }
                out
            };
            let Some((last, _)) = chunk.last() else {
                return Ok(());
            };
            from = Bound::Excluded(last.clone());
            let done = chunk.len() < SCAN_CHUNK;
            for (_, note) in chunk {
                if !note.deleted {
                    f(note)?;
                }
            }
            if done {
                return Ok(());
            }
        }
    }

    /// Calls `f` for every document (not stubs) in note-id order, as a
    /// [`NoteRef`] whose items are decoded only when asked for. Each chunk
    /// of encoded notes is copied out under the shared lock and handed out
    /// after it is released, so `f` never holds writers off.
    pub fn for_each_note_ref<E: From<NsfError>>(
        &self,
        mut f: impl FnMut(&NoteRef<'_>) -> Result<(), E>,
    ) -> Result<(), E> {
        // I42: a deleted database answers nothing.
        self.core.check_not_deleted()?;
        let mut arena: Vec<u8> = Vec::new();
        let mut spans: Vec<(usize, usize)> = Vec::with_capacity(SCAN_CHUNK);
        let mut after: Option<[u8; 4]> = None;
        loop {
            arena.clear();
            spans.clear();
            {
                let h = self.state.read();
                let store = Committed(&self.core);
                let lo = match &after {
                    Some(k) => Bound::Excluded(&k[..]),
                    None => Bound::Unbounded,
                };
                let mut range = btree::range(&store, h.note_root, lo, Bound::Unbounded);
                while spans.len() < SCAN_CHUNK {
                    let start = arena.len();
                    let next = range.next_with(|k, v| {
                        let key: Option<[u8; 4]> = k.try_into().ok();
                        let copied = note_bytes(&store, v).map(|b| arena.extend_from_slice(&b));
                        (key, copied)
                    });
                    let next = next.map_err(NsfError::from)?;
                    let Some((key, copied)) = next else { break };
                    copied?;
                    after = Some(key.ok_or_else(|| {
                        NsfError::Storage(storage::StorageError::corrupt(
                            &self.core.path,
                            h.note_root,
                            "note table key is not a note id",
                        ))
                    })?);
                    spans.push((start, arena.len()));
                }
            }
            for &(a, b) in &spans {
                let note = NoteRef::new(&arena[a..b]).map_err(NsfError::from)?;
                if !note.deleted {
                    f(&note)?;
                }
            }
            if spans.len() < SCAN_CHUNK {
                return Ok(());
            }
        }
    }

    /// Documents and stubs changed after `since`, in change order, at most
    /// `limit` of them (a cursor: pass the last `change_seq` to continue).
    pub fn modified_since(&self, since: Seq, limit: usize) -> NsfResult<Vec<Note>> {
        // I42: a deleted database answers nothing.
        self.core.check_not_deleted()?;
        let h = self.state.read();
        let store = Committed(&self.core);
        let lo = (since.0 + 1).to_be_bytes();
        let mut out = Vec::new();
        for kv in btree::range(
            &store,
            h.seq_root,
            Bound::Included(&lo[..]),
            Bound::Unbounded,
        )
        .take(limit)
        {
            let (_, v) = kv?;
            let id = note_id_from(&v, &self.core.path)?;
            if let Some(n) = load_note(&store, &h, id)? {
                out.push(n);
            }
        }
        Ok(out)
    }

    /// The database's access-control list; `None` if none was ever set.
    /// Parsed once and cached until the ACL note next changes (I15), so it
    /// is cheap to ask on every request. A stored list that cannot be used
    /// is an error every time (never cached), so callers fail closed.
    pub fn acl(&self) -> NsfResult<Option<Acl>> {
        // I42: a deleted database answers nothing.
        self.core.check_not_deleted()?;
        if let AclCache::Read(acl) = &*self.acl.lock() {
            return Ok(acl.as_deref().cloned());
        }
        // I15: fill the cache under the shared state lock, so no install
        // of a newer ACL note can come between the read and the fill.
        let h = self.state.read();
        let mut cache = self.acl.lock();
        if let AclCache::Read(acl) = &*cache {
            return Ok(acl.as_deref().cloned());
        }
        let store = Committed(&self.core);
        let acl = match lookup_unid(&store, &h, acl_unid(h.replica_id))? {
            None => None,
            Some(id) => match load_note(&store, &h, id)? {
                None => None,
                Some(note) => acl_of_note(&note)
                    .map_err(|reason| NsfError::BadStoredAcl {
                        db: self.core.path.clone(),
                        reason,
                    })?
                    .map(Arc::new),
            },
        };
        *cache = AclCache::Read(acl.clone());
        Ok(acl.as_deref().cloned())
    }

    /// The UNID of this database's ACL note, the same in every replica:
    /// the replica id (big-endian) followed by the bytes `FOLIOACL`.
    pub fn acl_unid(&self) -> Unid {
        acl_unid(self.state.read().replica_id)
    }

    /// The attachment `name` of document `unid`: `NoSuchAttachment` naming
    /// both when the document has none of that name.
    fn attachment_ref(&self, unid: Unid, name: &str) -> NsfResult<AttachmentRef> {
        let note = self.get(unid)?;
        let found = note.attachments().find(|a| a.name == name);
        found.cloned().ok_or_else(|| NsfError::NoSuchAttachment {
            db: self.core.path.clone(),
            unid,
            name: name.to_string(),
        })
    }

    /// Opens an attachment of a document for streaming. The reader keeps
    /// this instance open until it is dropped (I19).
    pub fn open_attachment(&self, unid: Unid, name: &str) -> NsfResult<AttachmentReader> {
        let a = self.attachment_ref(unid, name)?;
        let Some(content) = a.stored else {
            return Ok(AttachmentReader::from_pages(
                self.pinned(),
                self.core.handle.clone(),
                self.core.path.clone(),
                a.clone(),
            )
            .with_pool(self.core.pool.clone(), self.core.file));
        };
        let what = format!("{}: attachment {:?}", self.core.path, a.name);
        let object = ObjectReader::open(&self.core.store, &content, (a.size, a.crc32c), what)
            .map_err(|e| NsfError::Store {
                what: format!("{}: attachment {:?} of {unid}", self.core.path, a.name),
                reason: e.to_string(),
            })?;
        Ok(AttachmentReader::from_store(
            self.pinned(),
            a.clone(),
            object,
        ))
    }

    /// An attachment's content in its stored form, for replication to
    /// carry as is (design.md §2.9, I47): `None` when it is in this
    /// file's blob pages (small, or written before the store). The object
    /// must agree with the item and its stored bytes with their crc32c.
    pub fn read_carried(&self, unid: Unid, name: &str) -> NsfResult<Option<CarriedContent>> {
        let a = self.attachment_ref(unid, name)?;
        let Some(content) = a.stored else {
            return Ok(None);
        };
        store::read_carried(&self.core.store, &content, (a.size, a.crc32c))
            .map(Some)
            .map_err(|reason| NsfError::Store {
                what: format!("{}: attachment {:?} of {unid}", self.core.path, a.name),
                reason,
            })
    }

    /// Whether the database was found written in unlogged mode and not
    /// closed cleanly (its indexes cannot be trusted, I12).
    pub fn opened_unclean(&self) -> bool {
        self.core.state().unclean_open()
    }

    /// Where this instance is in its life: open, refused, failed or
    /// closing (design.md §5, database lifecycle).
    pub fn state(&self) -> DbState {
        self.core.state()
    }

    /// Whether commits go through the transaction log.
    pub fn is_logged(&self) -> bool {
        matches!(self.core.durability, Durability::Logged { .. })
    }

    /// The database's last change sequence.
    pub fn last_seq(&self) -> Seq {
        self.state.read().last_seq
    }
}
