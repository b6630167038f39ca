//! One foreign batch's transaction, as its body sees it (`foreign.rs`).
//!
//! Each [`ForeignTxn::put`] decides by the version order (I24) and writes,
//! exactly as a single `put_foreign`; [`ForeignTxn::put_conflict`] writes
//! a conflict document the same way. What is new is the attachment
//! content's bookkeeping across the puts of one batch:
//!
//! ```text
//!   available  staged content of the batch, and the content of every
//!              version a put replaces (not freed at once: a conflict
//!              document may keep it)
//!   used       content a note of this batch stored
//!   finish     frees available − used, in the same transaction, and
//!              logs the one-page content of used (I52)
//! ```
//!
//! A note may only store content that is available and not yet used, so
//! no page is ever referenced twice and none a caller made up is
//! referenced at all.

use super::foreign::{meta_of, StagedNote};
use crate::attach;
use crate::foreign::ForeignOutcome;
use crate::index::IndexTxn;
use crate::lineage;
use crate::records::{cut_to_stub, load_stored, lookup_unid, store_note};
use crate::txn::Txn;
use crate::{AttachmentRef, Item, ItemValue, Note, NoteId, NsfError, NsfResult, Unid};
use crate::{Version, CONFLICT_ITEMS};
use std::cmp::Ordering;
use std::collections::{HashMap, HashSet};
use storage::btree;

/// The transaction of one foreign batch (module docs).
pub struct ForeignTxn<'a, 'b> {
    txn: &'a mut Txn<'b>,
    available: HashMap<u64, AttachmentRef>,
    used: HashSet<u64>,
}

impl<'a, 'b> ForeignTxn<'a, 'b> {
    pub(super) fn new(txn: &'a mut Txn<'b>, content: Vec<AttachmentRef>) -> Self {
        ForeignTxn {
            txn,
            available: content.into_iter().map(|a| (a.blob_id, a)).collect(),
            used: HashSet::new(),
        }
    }

    /// The same transaction as an index transaction, for the layer above
    /// to change folder membership (and delete notes) in the commit that
    /// stores this batch's notes: all of it durable together, or none of
    /// it (I4). How an IMAP COPY or MOVE files its copies (design.md I56).
    pub fn index(&mut self) -> IndexTxn<'_, 'b> {
        IndexTxn {
            txn: &mut *self.txn,
        }
    }

    /// Stores `note` if it wins (I24, I25): as `Database::put_foreign`.
    /// Content of a version it replaces stays readable to this batch
    /// (for a conflict document) and is freed at its end otherwise.
    pub fn put(&mut self, note: &StagedNote) -> NsfResult<ForeignOutcome> {
        self.check_content(&note.note)?;
        self.apply(note.note.clone(), note.version, &note.revisions)
    }

    /// Writes the conflict document `unid` keeping `content` (a losing
    /// version: a staged note that lost, or a loser a put replaced) as a
    /// response to `response_to`: `content`'s items, sequence number and
    /// time, marked with `$Conflict` and `$Ref` (design.md §11.4; a
    /// losing version of a conflict document keeps the `$Ref` it has, the
    /// document that one answers). A
    /// losing deletion stub is kept as a conflict document that is a stub
    /// (its items are a stub's, which keep the marks: a deleted leaf,
    /// I63). Decided by the version order like any foreign write, so the
    /// same document arriving again is `AlreadyHave`.
    pub fn put_conflict(
        &mut self,
        unid: Unid,
        response_to: Unid,
        content: &StagedNote,
    ) -> NsfResult<ForeignOutcome> {
        self.check_content(&content.note)?;
        // A losing version of a conflict document answers the document
        // that conflict document answers, so every leaf of a document is
        // found from the document itself (design.md §11.9).
        let response_to = answered(&content.note).unwrap_or(response_to);
        let mut note = content.note.clone();
        note.oid.unid = unid;
        if note.deleted {
            cut_to_stub(&mut note);
        }
        note.items.retain(|i| {
            !CONFLICT_ITEMS
                .iter()
                .any(|c| c.eq_ignore_ascii_case(&i.name))
        });
        note.items.push(text(CONFLICT_ITEMS[0], "1"));
        note.items
            .push(text(CONFLICT_ITEMS[1], &response_to.to_string()));
        let version = note.version();
        self.apply(note, version, &content.revisions)
    }

    /// The note `unid` as this transaction sees it (earlier puts of the
    /// batch included), with its revisions, oldest first; `None` if no
    /// note has the UNID. A caller that decides what to put from what is
    /// held reads it here, under the writer lock, so the decision and the
    /// write are one atomic step (I25).
    pub fn get(&mut self, unid: Unid) -> NsfResult<Option<(Note, Vec<Version>)>> {
        let txn = &mut *self.txn;
        let Some(id) = lookup_unid(txn, &txn.header, unid)? else {
            return Ok(None);
        };
        let (note, _) = load_stored(txn, unid, id)?;
        let revisions = lineage::revisions(txn, &txn.header, unid)?;
        Ok(Some((note, revisions)))
    }

    /// Frees the content no stored note took, and logs the content of
    /// one page that stored notes took (I52; content a replaced version
    /// held was logged by its own commit, and logging it again is
    /// harmless).
    pub(super) fn finish(self) -> NsfResult<()> {
        for (id, blob) in &self.available {
            if self.used.contains(id) {
                attach::log_small_blob(self.txn, blob)?;
            } else {
                attach::free_blob(self.txn, blob)?;
            }
        }
        Ok(())
    }

    /// Every attachment of `note` must be content of this batch, unused.
    fn check_content(&self, note: &Note) -> NsfResult<()> {
        for a in note.attachments() {
            let ok = self.available.get(&a.blob_id) == Some(a) && !self.used.contains(&a.blob_id);
            if !ok {
                return Err(NsfError::BadForeignNote {
                    unid: note.oid.unid,
                    reason: format!(
                        "attachment {:?} is not content of this batch (or is stored already)",
                        a.name
                    ),
                });
            }
        }
        Ok(())
    }

    /// Decides by the version order and stores the winner (module docs of
    /// `foreign.rs`).
    fn apply(
        &mut self,
        mut note: Note,
        version: Version,
        revisions: &[Version],
    ) -> NsfResult<ForeignOutcome> {
        let txn = &mut *self.txn;
        let unid = note.oid.unid;
        let Some(id) = lookup_unid(txn, &txn.header, unid)? else {
            note.note_id = NoteId(txn.header.next_note_id);
            txn.header.next_note_id += 1;
            note.added = txn.now();
            let meta = store_note(txn, &mut note, None)?;
            let mut root = txn.header.unid_root;
            btree::insert(txn, &mut root, &unid.0, &note.note_id.0.to_be_bytes())?;
            txn.header.unid_root = root;
            lineage::set_revisions(txn, unid, revisions)?;
            self.used.extend(note.attachments().map(|a| a.blob_id));
            return Ok(ForeignOutcome::Stored(meta));
        };
        let (local, stored) = load_stored(txn, unid, id)?;
        let have = local.version();
        let local_revisions = lineage::revisions(txn, &txn.header, unid)?;
        match version.cmp(&have) {
            Ordering::Greater => {
                note.note_id = id;
                note.added = local.added;
                let meta = store_note(txn, &mut note, Some(stored))?;
                lineage::set_revisions(txn, unid, revisions)?;
                self.used.extend(note.attachments().map(|a| a.blob_id));
                // The loser's content stays readable until the batch ends
                // (even if an earlier put of this batch stored it).
                for a in local.attachments() {
                    self.used.remove(&a.blob_id);
                    self.available.insert(a.blob_id, a.clone());
                }
                Ok(ForeignOutcome::Replaced {
                    stored: meta,
                    loser: local,
                    loser_revisions: local_revisions,
                })
            }
            Ordering::Equal => Ok(ForeignOutcome::AlreadyHave(meta_of(&local))),
            Ordering::Less => Ok(ForeignOutcome::Lost {
                local: meta_of(&local),
                winner: have,
                winner_revisions: local_revisions,
                winner_deleted: local.deleted,
            }),
        }
    }
}

/// The document a conflict document's version answers (its `$Ref`), if
/// it is one.
fn answered(note: &Note) -> Option<Unid> {
    note.item(CONFLICT_ITEMS[0])?;
    match &note.item(CONFLICT_ITEMS[1])?.value {
        ItemValue::Text(r) => r.parse().ok(),
        _ => None,
    }
}

fn text(name: &str, value: &str) -> Item {
    Item {
        name: name.into(),
        value: ItemValue::Text(value.into()),
    }
}
