//! Writing a note with a foreign identity (`foreign.rs`): the narrow write
//! path replication and the mail router use, as `hooks.rs` is the views
//! layer's.
//!
//! ```text
//!  put_foreign: validate ─▶ (local version already higher? Lost, nothing read)
//!    ─▶ stream attachment content to reserved pages, synced (I7)
//!    ─▶ queue WriteOp::Foreign ─▶ in the group's transaction (I4):
//!         no note with the UNID   → store as given, new note id      Stored
//!         foreign version higher  → replace, free the loser's blobs  Replaced
//!         equal                   → free the streamed blobs          AlreadyHave
//!         lower                   → free the streamed blobs          Lost
//!    ─▶ commit with the group; returns once durable (I2), as `create`
//! ```
//!
//! The comparison runs inside the transaction, under the writer lock, so
//! it and the write it decides are one atomic step (I25). The UNID,
//! originator id, times and items are stored as given; this database
//! assigns only what is local: the note id, `added` and the change
//! sequence (which the views layer follows, I14).

use super::apply::WriteOp;
use super::Database;
use crate::attach::{self, BlobWriter};
use crate::foreign::{validate, ForeignNote, ForeignOutcome};
use crate::records::{load_stored, lookup_unid, store_note};
use crate::txn::Txn;
use crate::{
    AttachmentRef, Item, ItemValue, Note, NoteId, NoteMeta, NsfError, NsfResult, Seq,
    ATTACHMENT_PREFIX,
};
use parking_lot::Mutex;
use std::cmp::Ordering;
use std::sync::Arc;
use storage::btree;

/// Where the transaction leaves a foreign write's outcome for its caller.
pub(super) type OutcomeSlot = Arc<Mutex<Option<ForeignOutcome>>>;

impl Database {
    /// Stores a version of a document made elsewhere, if it wins (I24,
    /// I25): see [`ForeignOutcome`]. Its identity is never altered. Goes
    /// through the normal write queue and commit, and returns once the
    /// write is durable (I2), exactly as [`Database::create`]; a failure
    /// changes nothing (I4). Attachment content is written to new pages
    /// and synced before the commit (I7), and given back if the version
    /// is not stored.
    pub fn put_foreign(&self, note: ForeignNote) -> NsfResult<ForeignOutcome> {
        // I20: the ACL note replicates like any document, and its change
        // is announced to the catalog like set_acl's.
        let _change = (note.oid.unid == self.acl_unid())
            .then(|| self.begin_acl_change())
            .transpose()?;
        let (op, slot, extents) = match self.prepare_foreign(note)? {
            Prepared::Decided(outcome) => return Ok(outcome),
            Prepared::Write { op, slot, extents } => (op, slot, extents),
        };
        if let Err(e) = self.submit(op) {
            self.release_blob(extents);
            return Err(e);
        }
        take_outcome(&slot)
    }

    /// [`Database::put_foreign`] for several notes at once: every one is
    /// queued before the queue runs, so up to the group limit they share
    /// one transaction and one log fsync (how the mail router delivers
    /// several messages to one mail file). Each note gets its own outcome,
    /// in order; the durability contract is `put_foreign`'s for each (I2,
    /// I4, I25): an outcome is known only once its write is durable.
    pub fn put_foreign_batch(&self, notes: Vec<ForeignNote>) -> Vec<NsfResult<ForeignOutcome>> {
        let mut out: Vec<Option<NsfResult<ForeignOutcome>>> = Vec::new();
        let mut queued = Vec::new();
        for note in notes {
            if note.oid.unid == self.acl_unid() {
                // The ACL note goes alone, announced as put_foreign does.
                out.push(Some(self.put_foreign(note)));
                continue;
            }
            match self.prepare_foreign(note) {
                Err(e) => out.push(Some(Err(e))),
                Ok(Prepared::Decided(outcome)) => out.push(Some(Ok(outcome))),
                Ok(Prepared::Write { op, slot, extents }) => {
                    let waiter = Arc::new(super::queue::Slot::default());
                    let filled = waiter.clone();
                    let (ticket, _) =
                        self.enqueue(op, Box::new(move |r| filled.fill(r)), Some(waiter.clone()));
                    queued.push((out.len(), ticket, waiter, slot, extents));
                    out.push(None);
                }
            }
        }
        if let Some((_, first, ..)) = queued.first() {
            self.drain(Some(*first), None);
        }
        for (at, ticket, waiter, slot, extents) in queued {
            let r = waiter.wait(|| {
                self.drain(Some(ticket), None);
            });
            out[at] = Some(match r {
                Ok(_) => take_outcome(&slot),
                Err(e) => {
                    self.release_blob(extents);
                    Err(e)
                }
            });
        }
        out.into_iter()
            .map(|r| {
                r.unwrap_or_else(|| {
                    Err(NsfError::Invalid(
                        "internal error: a queued foreign write left no result".into(),
                    ))
                })
            })
            .collect()
    }

    /// Everything of a foreign write before it is queued: checks, the
    /// early `Lost`, attachment content streamed and synced (I7). The ACL
    /// note's announcement (I20) is the caller's.
    fn prepare_foreign(&self, mut note: ForeignNote) -> NsfResult<Prepared> {
        validate(&note)?;
        self.core.check_writable()?;
        let unid = note.oid.unid;
        if let Some(lost) = self.loses_already(&note)? {
            return Ok(Prepared::Decided(lost));
        }
        let mut items = std::mem::take(&mut note.items);
        let mut streamed: Vec<AttachmentRef> = Vec::new();
        for a in &mut note.attachments {
            match self.stream(&a.name, &a.mime, &mut *a.content.reader()) {
                Ok(blob) => streamed.push(blob),
                Err(e) => {
                    self.release_blob(streamed.iter().flat_map(|b| b.extents.clone()).collect());
                    return Err(e);
                }
            }
        }
        items.extend(streamed.iter().map(|blob| Item {
            name: format!("{ATTACHMENT_PREFIX}{}", blob.name),
            value: ItemValue::Attachment(blob.clone()),
        }));
        let stored = Note {
            note_id: NoteId(0),
            oid: note.oid,
            created: note.created,
            modified: note.modified,
            added: note.modified,
            change_seq: Seq(0),
            deleted: note.deleted,
            items,
        };
        let extents: Vec<(u32, u32)> = streamed.iter().flat_map(|b| b.extents.clone()).collect();
        if let Err(e) = crate::validate_items(&stored.items) {
            self.release_blob(extents);
            return Err(NsfError::BadForeignNote {
                unid,
                reason: e.to_string(),
            });
        }
        let slot: OutcomeSlot = Arc::default();
        let op = WriteOp::Foreign {
            note: Box::new(stored),
            outcome: slot.clone(),
        };
        Ok(Prepared::Write { op, slot, extents })
    }

    /// `Lost` if the note here already has a higher sequence number, or
    /// the same and a later time: it wins whatever the content, so no
    /// content is streamed for nothing. (The transaction decides again.)
    fn loses_already(&self, note: &ForeignNote) -> NsfResult<Option<ForeignOutcome>> {
        let local = match self.get_any(note.oid.unid) {
            Ok(local) => local,
            Err(NsfError::NoSuchDocument { .. }) => return Ok(None),
            Err(e) => return Err(e),
        };
        let ahead = (local.oid.seq_num, local.oid.seq_time) > (note.oid.seq_num, note.oid.seq_time);
        Ok(ahead.then(|| ForeignOutcome::Lost {
            local: meta_of(&local),
            winner: local.version(),
        }))
    }

    /// Streams one attachment's content to new pages, synced (I7).
    fn stream(
        &self,
        name: &str,
        mime: &str,
        content: &mut dyn std::io::Read,
    ) -> NsfResult<AttachmentRef> {
        let mut w = BlobWriter::new(&self.core, name, mime);
        match w.write_all_from(content).and_then(|()| w.finish()) {
            Ok(blob) => Ok(blob),
            Err(e) => {
                self.release_blob(w.reserved());
                Err(e)
            }
        }
    }

    /// The body of a foreign write, in the group's transaction (module
    /// docs): decides by the version order and stores the winner.
    pub(super) fn apply_foreign(
        &self,
        txn: &mut Txn<'_>,
        mut note: Note,
    ) -> NsfResult<ForeignOutcome> {
        let unid = note.oid.unid;
        let Some(id) = lookup_unid(txn, &txn.header, unid)? else {
            note.note_id = NoteId(txn.header.next_note_id);
            txn.header.next_note_id += 1;
            note.added = txn.now();
            let meta = store_note(txn, &mut note, None)?;
            let mut root = txn.header.unid_root;
            btree::insert(txn, &mut root, &unid.0, &note.note_id.0.to_be_bytes())?;
            txn.header.unid_root = root;
            return Ok(ForeignOutcome::Stored(meta));
        };
        let (local, stored) = load_stored(txn, unid, id)?;
        let have = local.version();
        match note.version().cmp(&have) {
            Ordering::Greater => {
                for a in local.attachments() {
                    attach::free_blob(txn, a)?;
                }
                note.note_id = id;
                note.added = local.added;
                let meta = store_note(txn, &mut note, Some(stored))?;
                Ok(ForeignOutcome::Replaced {
                    stored: meta,
                    loser: local,
                })
            }
            order => {
                // Not stored: its content goes back to the free list in
                // this same transaction.
                for a in note.attachments() {
                    attach::free_blob(txn, a)?;
                }
                let local_meta = meta_of(&local);
                Ok(if order == Ordering::Equal {
                    ForeignOutcome::AlreadyHave(local_meta)
                } else {
                    ForeignOutcome::Lost {
                        local: local_meta,
                        winner: have,
                    }
                })
            }
        }
    }
}

/// A foreign write checked and ready to queue, or already decided.
enum Prepared {
    Decided(ForeignOutcome),
    Write {
        op: WriteOp,
        slot: OutcomeSlot,
        extents: Vec<(u32, u32)>,
    },
}

/// The outcome the transaction left for a durable foreign write.
fn take_outcome(slot: &OutcomeSlot) -> NsfResult<ForeignOutcome> {
    let outcome = slot.lock().take();
    outcome
        .ok_or_else(|| NsfError::Invalid("internal error: a foreign write left no outcome".into()))
}

/// What a write would return for `note` as stored.
fn meta_of(note: &Note) -> NoteMeta {
    NoteMeta {
        note_id: note.note_id,
        unid: note.oid.unid,
        seq_num: note.oid.seq_num,
        change_seq: note.change_seq,
    }
}
