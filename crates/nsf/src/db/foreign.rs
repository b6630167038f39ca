//! Writing notes with a foreign identity (`foreign.rs`): the narrow write
//! path replication and the mail router use, as `hooks.rs` is the views
//! layer's.
//!
//! ```text
//!  put_foreign: validate ─▶ (local version already higher? Lost, nothing read)
//!    ─▶ stage: stream attachment content to reserved pages, synced (I7),
//!       or to the attachment store, durable and pinned (I37)
//!    ─▶ a batch of one (below)
//!
//!  foreign_batch(staged notes, body) ─▶ queue WriteOp::ForeignBatch
//!    ─▶ in the group's transaction (I4), body(ForeignTxn): any number of
//!         put / put_conflict (`batch.rs`: the version order decides each)
//!       then content no stored note took goes back to the free list
//!    ─▶ commit with the group; returns once durable (I2): all of it or,
//!       on any failure, none of it (I27), the staged pages given back
//! ```
//!
//! The comparisons run inside the transaction, under the writer lock, so
//! each and the write it decides are one atomic step (I25). The UNID,
//! originator id, times, items and revisions are stored as given; this
//! database assigns only what is local: the note id, `added` and the
//! change sequence (which the views layer follows, I14).

use super::apply::WriteOp;
use super::batch::ForeignTxn;
use super::Database;
use crate::foreign::{validate, ForeignAttachment, ForeignContent, ForeignNote, ForeignOutcome};
use crate::records::NoteMeta;
use crate::store::{Pin, Pins};
use crate::{AttachmentRef, Item, ItemValue, Note, NoteId, NsfError, NsfResult, Seq, Unid};
use crate::{Version, ATTACHMENT_PREFIX, MAX_REVISIONS};
use parking_lot::Mutex;
use std::sync::Arc;

/// A version made elsewhere, its attachment content already written to
/// this database's pages and synced (I7): what a foreign batch stores.
///
/// Staged content belongs to no note until a batch stores it. Hand every
/// staged note to [`Database::foreign_batch`] (which gives back whatever
/// it does not store), or its pages stay reserved until compact.
#[derive(Clone, Debug, PartialEq)]
pub struct StagedNote {
    pub(super) note: Note,
    pub(super) version: Version,
    pub(super) revisions: Vec<Version>,
    /// Holds its content's objects in the attachment store until the
    /// batch that stores it is durable or failed (I37).
    pub(super) pins: Pins,
    /// Its streamed pages are reserved until the note is stored or given
    /// back, which happens before it is dropped (I40).
    pub(super) reserving: crate::dbcore::Hold,
}

impl StagedNote {
    /// A note as it is stored (its attachments referring to this
    /// database's pages), as content for [`ForeignTxn::put_conflict`]:
    /// typically the loser a put replaced. A batch refuses attachments
    /// that are not content it may store.
    pub fn from_note(note: Note, revisions: Vec<Version>) -> StagedNote {
        let version = note.version();
        StagedNote {
            note,
            version,
            revisions,
            pins: Pins::default(),
            reserving: crate::dbcore::Hold::default(),
        }
    }

    pub fn unid(&self) -> Unid {
        self.note.oid.unid
    }

    pub fn version(&self) -> Version {
        self.version
    }

    pub fn deleted(&self) -> bool {
        self.note.deleted
    }

    /// The note, attachments as `$FILE:` items.
    pub fn note(&self) -> &Note {
        &self.note
    }

    /// The versions it was made from, oldest first.
    pub fn revisions(&self) -> &[Version] {
        &self.revisions
    }
}

/// The body of a foreign batch, run in the group's transaction.
pub(super) type ForeignFn = Box<dyn FnOnce(&mut ForeignTxn<'_, '_>) -> NsfResult<()> + Send>;

impl Database {
    /// Stores a version of a document made elsewhere, if it wins (I24,
    /// I25): see [`ForeignOutcome`]. Its identity is never altered. Goes
    /// through the normal write queue and commit, and returns once the
    /// write is durable (I2), exactly as [`Database::create`]; a failure
    /// changes nothing (I4). Attachment content is written to new pages
    /// and synced before the commit (I7), and given back if the version
    /// is not stored.
    pub fn put_foreign(&self, note: ForeignNote) -> NsfResult<ForeignOutcome> {
        validate(&note)?;
        self.core.check_writable()?;
        if let Some(lost) = self.loses_already(&note)? {
            return Ok(lost);
        }
        let staged = self.stage_foreign(note)?;
        let content = [staged];
        let put = content[0].clone();
        self.foreign_batch(&content, move |t| t.put(&put))
    }

    /// [`Database::put_foreign`] for several notes at once, in one
    /// transaction and one log fsync (how the mail router delivers several
    /// messages to one mail file). Each note gets its own outcome, in
    /// order: a note refused by its checks, or one that already loses, is
    /// answered alone and the rest still go; if the transaction fails,
    /// every note staged into it gets the failure and none is stored (I4).
    /// Durable when it returns (I2, I25).
    pub fn put_foreign_batch(&self, notes: Vec<ForeignNote>) -> Vec<NsfResult<ForeignOutcome>> {
        let mut out: Vec<Option<NsfResult<ForeignOutcome>>> = Vec::with_capacity(notes.len());
        let mut staged = Vec::new();
        let mut places = Vec::new();
        for note in notes {
            let early = validate(&note)
                .and_then(|()| self.core.check_writable())
                .and_then(|()| self.loses_already(&note));
            match early {
                Err(e) => out.push(Some(Err(e))),
                Ok(Some(lost)) => out.push(Some(Ok(lost))),
                Ok(None) => match self.stage_foreign(note) {
                    Err(e) => out.push(Some(Err(e))),
                    Ok(s) => {
                        places.push(out.len());
                        out.push(None);
                        staged.push(s);
                    }
                },
            }
        }
        if !staged.is_empty() {
            let puts = staged.clone();
            let done = self.foreign_batch(&staged, move |t| {
                puts.iter().map(|s| t.put(s)).collect::<NsfResult<Vec<_>>>()
            });
            match done {
                Ok(outcomes) => {
                    for (at, o) in places.into_iter().zip(outcomes) {
                        out[at] = Some(Ok(o));
                    }
                }
                Err(e) => {
                    for at in places {
                        out[at] = Some(Err(super::queue::replicate(&e)));
                    }
                }
            }
        }
        out.into_iter()
            .map(|r| {
                r.unwrap_or_else(|| {
                    Err(NsfError::Invalid(
                        "internal error: a foreign write of a batch left no outcome".into(),
                    ))
                })
            })
            .collect()
    }

    /// Checks a foreign note and streams its attachment content to new
    /// pages, synced (I7), for a later [`Database::foreign_batch`]. A
    /// failure gives back what was streamed and changes nothing.
    pub fn stage_foreign(&self, mut note: ForeignNote) -> NsfResult<StagedNote> {
        validate(&note)?;
        self.core.check_writable()?;
        let unid = note.oid.unid;
        let mut items = std::mem::take(&mut note.items);
        let reserving = crate::dbcore::Hold::new(self.core.reserving());
        let mut streamed: Vec<AttachmentRef> = Vec::new();
        let mut pins = Vec::new();
        for a in &mut note.attachments {
            match self.write_foreign_content(a) {
                Ok((blob, pin)) => {
                    streamed.push(blob);
                    pins.extend(pin);
                }
                Err(e) => {
                    streamed.iter().for_each(|b| self.abandon_content(b));
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
        if let Err(e) = crate::validate_items(&stored.items) {
            streamed.iter().for_each(|b| self.abandon_content(b));
            return Err(NsfError::BadForeignNote {
                unid,
                reason: e.to_string(),
            });
        }
        let mut revisions = note.revisions;
        revisions.drain(..revisions.len().saturating_sub(MAX_REVISIONS));
        let mut staged = StagedNote::from_note(stored, revisions);
        staged.pins = Pins::new(pins);
        staged.reserving = reserving;
        Ok(staged)
    }

    /// Writes a foreign attachment's content: carried content in its
    /// stored form where this store keeps it compressed (I47), anything
    /// else through [`Self::write_content`].
    fn write_foreign_content(
        &self,
        a: &mut ForeignAttachment,
    ) -> NsfResult<(AttachmentRef, Option<Pin>)> {
        match &a.content {
            ForeignContent::Carried(c) => {
                if let Some(written) = self.write_carried(&a.name, &a.mime, c)? {
                    return Ok(written);
                }
            }
            ForeignContent::Held { hash, size, crc32c } => {
                let (aref, pin) = self.write_held(&a.name, &a.mime, *hash, *size, *crc32c)?;
                return Ok((aref, Some(pin)));
            }
            ForeignContent::Bytes(_) | ForeignContent::Reader(_) => {}
        }
        let mut content = a.content.reader().map_err(NsfError::Content)?;
        self.write_content(&a.name, &a.mime, &mut *content)
    }

    /// Runs `body` in one transaction through the normal logged group
    /// commit, and returns its result once that transaction is durable
    /// (I2). `content` are the staged notes the body may store (and the
    /// body may also store, as conflict documents, versions its puts
    /// replace): whatever of it no stored note takes goes back to the
    /// free list in the same transaction. All of the body's writes become
    /// durable together or, if the body or the commit fails, none do
    /// (I4, I27) and the staged pages are given back.
    pub fn foreign_batch<R: Send + 'static>(
        &self,
        content: &[StagedNote],
        body: impl FnOnce(&mut ForeignTxn<'_, '_>) -> NsfResult<R> + Send + 'static,
    ) -> NsfResult<R> {
        let blobs: Vec<AttachmentRef> = content
            .iter()
            .flat_map(|s| s.note.attachments().cloned())
            .collect();
        let extents = extents_of(&blobs);
        let result = self.run_foreign_batch(content, blobs, body);
        if result.is_err() {
            self.release_blob(extents);
        }
        // Stored content the batch did not take (or all of it, if it
        // failed) is the next sweep's (I39).
        if content.iter().any(|s| !s.pins.is_empty()) {
            self.core.store.note_released();
        }
        result
    }

    fn run_foreign_batch<R: Send + 'static>(
        &self,
        content: &[StagedNote],
        blobs: Vec<AttachmentRef>,
        body: impl FnOnce(&mut ForeignTxn<'_, '_>) -> NsfResult<R> + Send + 'static,
    ) -> NsfResult<R> {
        self.core.check_writable()?;
        // I20: the ACL note replicates like any document, and its change
        // is announced to the catalog like set_acl's.
        let acl = self.acl_unid();
        let _change = content
            .iter()
            .any(|s| s.unid() == acl)
            .then(|| self.begin_acl_change())
            .transpose()?;
        let slot: Arc<Mutex<Option<R>>> = Arc::default();
        let out = slot.clone();
        let run: ForeignFn = Box::new(move |t| {
            let r = body(t)?;
            *out.lock() = Some(r);
            Ok(())
        });
        self.submit(WriteOp::ForeignBatch { blobs, body: run })?;
        let result = slot.lock().take();
        result.ok_or_else(|| {
            NsfError::Invalid("internal error: a foreign batch left no result".into())
        })
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
        if !ahead {
            return Ok(None);
        }
        Ok(Some(ForeignOutcome::Lost {
            local: meta_of(&local),
            winner: local.version(),
            winner_revisions: self.revisions(local.oid.unid)?,
            winner_deleted: local.deleted,
        }))
    }
}

fn extents_of(blobs: &[AttachmentRef]) -> Vec<(u32, u32)> {
    blobs.iter().flat_map(|b| b.extents.clone()).collect()
}

/// What a write would return for `note` as stored.
pub(super) fn meta_of(note: &Note) -> NoteMeta {
    NoteMeta {
        note_id: note.note_id,
        unid: note.oid.unid,
        seq_num: note.oid.seq_num,
        change_seq: note.change_seq,
    }
}
