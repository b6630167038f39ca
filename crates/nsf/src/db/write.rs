//! The public write operations: documents, attachments, the ACL.
//!
//! Each comes in a blocking form, which returns once the write is durable
//! (I2) or has failed and changed nothing (I4), and the document writes
//! also in a `_then` form, which queues the write and hands its outcome
//! to a completion instead (how the server writes without blocking a
//! thread). Both queue a [`WriteOp`] (`apply.rs` says what each does);
//! `queue.rs` runs the queue.

use super::apply::WriteOp;
use super::queue::RUNNER_GROUPS;
use super::Database;
use crate::attach::{self, BlobWriter};
use crate::store::{self, Pin, STORE_MIN};
use crate::{
    validate_items, Acl, AclError, AttachmentRef, Item, ItemUpdate, NoteMeta, NsfError, NsfResult,
    Unid, MAX_ACL_JSON_BYTES,
};
use std::io::{self, Read};

/// Content read before deciding where it goes: enough to tell small
/// attachments from large ones and to try compression on (design.md §2.9).
const FIRST_CHUNK: usize = 1 << 20;

/// Document writes always produce metadata; only `Release` does not.
pub(super) fn expect_meta(m: Option<NoteMeta>) -> NsfResult<NoteMeta> {
    m.ok_or_else(|| {
        NsfError::Invalid("internal error: a document write returned no metadata".into())
    })
}

impl Database {
    /// Creates a document; returns once it is durable (I2).
    pub fn create(&self, items: Vec<Item>) -> NsfResult<NoteMeta> {
        validate_items(&items)?;
        self.submit(WriteOp::Create(items)).and_then(expect_meta)
    }

    /// Updates a document's items (JSON `null` removes an item). With
    /// `based_on`, an update whose sequence number is stale is a
    /// `SaveConflict` unless `force`.
    pub fn update(
        &self,
        unid: Unid,
        updates: Vec<ItemUpdate>,
        based_on: Option<u32>,
        force: bool,
    ) -> NsfResult<NoteMeta> {
        self.submit(WriteOp::Update {
            unid,
            updates,
            based_on,
            force,
        })
        .and_then(expect_meta)
    }

    /// Deletes a document, leaving a deletion stub (UNID, originator id,
    /// time) so replication can carry the deletion.
    pub fn delete(&self, unid: Unid, based_on: Option<u32>, force: bool) -> NsfResult<NoteMeta> {
        self.submit(WriteOp::Delete {
            unid,
            based_on,
            force,
        })
        .and_then(expect_meta)
    }

    /// [`Self::create`] without waiting: queues the write, and `done` gets
    /// the outcome once the document is durable (or the write failed).
    /// `done` runs on whichever thread runs the queue, or on the log's
    /// writer thread, and must not block.
    ///
    /// Nothing runs here: if this returns true the queue was empty, and
    /// the caller must see that [`Self::run_queued`] is called — soon, but
    /// preferably after other callers ready at the same moment have queued
    /// theirs, so they share one transaction. (If it returns false a run
    /// is already due.) In unlogged mode running the queue includes its
    /// fdatasync.
    #[must_use = "if true, the caller must arrange a call to run_queued"]
    pub fn create_then(
        &self,
        items: Vec<Item>,
        done: impl FnOnce(NsfResult<NoteMeta>) + Send + 'static,
    ) -> bool {
        if let Err(e) = validate_items(&items) {
            done(Err(e.into()));
            return false;
        }
        self.enqueue(
            WriteOp::Create(items),
            Box::new(move |r| done(r.and_then(expect_meta))),
            None,
        )
        .1
    }

    /// [`Self::update`] without waiting (see [`Self::create_then`]).
    #[must_use = "if true, the caller must arrange a call to run_queued"]
    pub fn update_then(
        &self,
        unid: Unid,
        updates: Vec<ItemUpdate>,
        (based_on, force): (Option<u32>, bool),
        done: impl FnOnce(NsfResult<NoteMeta>) + Send + 'static,
    ) -> bool {
        self.enqueue(
            WriteOp::Update {
                unid,
                updates,
                based_on,
                force,
            },
            Box::new(move |r| done(r.and_then(expect_meta))),
            None,
        )
        .1
    }

    /// [`Self::delete`] without waiting (see [`Self::create_then`]).
    #[must_use = "if true, the caller must arrange a call to run_queued"]
    pub fn delete_then(
        &self,
        unid: Unid,
        (based_on, force): (Option<u32>, bool),
        done: impl FnOnce(NsfResult<NoteMeta>) + Send + 'static,
    ) -> bool {
        self.enqueue(
            WriteOp::Delete {
                unid,
                based_on,
                force,
            },
            Box::new(move |r| done(r.and_then(expect_meta))),
            None,
        )
        .1
    }

    /// Runs the queued writes (see [`Self::create_then`]), unless another
    /// caller holds the writer lock, which then runs them.
    /// Returns true if writes are still queued after a bounded turn: the
    /// caller must arrange another call (after letting others run).
    #[must_use = "if true, the caller must arrange another call to run_queued"]
    pub fn run_queued(&self) -> bool {
        self.drain(None, Some(RUNNER_GROUPS))
    }

    /// Streams `content` into the database and attaches it to the document
    /// under `name` (replacing an attachment of that name). Content of at
    /// least [`crate::STORE_MIN`] bytes goes to the server's attachment
    /// store (design.md §2.9): stored once per server, compressed where
    /// that helps, durable and pinned before the commit that references
    /// it (I37). Smaller content is written once, directly to new pages
    /// of this file, and synced before that commit (I7). Returns once the
    /// commit is durable (I2); a failure changes nothing (I4), and content
    /// written for it is reclaimed by the next sweep (I39).
    pub fn put_attachment(
        &self,
        unid: Unid,
        name: &str,
        mime: &str,
        content: &mut dyn Read,
    ) -> NsfResult<AttachmentRef> {
        attach::validate_name(name)?;
        self.core.check_writable()?;
        self.get(unid)?;
        // Until the commit below (or the release): compact must not take
        // these pages for leaked (I40).
        let _reserving = self.core.reserving();
        let (aref, pin) = self.write_content(name, mime, content)?;
        let committed = self.submit(WriteOp::Attach {
            unid,
            blob: aref.clone(),
        });
        // I37: unpinned only now that the commit is durable or failed.
        drop(pin);
        if committed.is_err() {
            self.abandon_content(&aref);
        }
        committed.map(|_| aref)
    }

    /// Writes an attachment's content where it belongs: to the
    /// attachment store when it is at least [`STORE_MIN`] bytes (durable
    /// and pinned, I37), else to new blob pages of this file (synced,
    /// I7). Nothing references it yet; a failure leaves nothing behind
    /// but what the next sweep or compact reclaims.
    pub(super) fn write_content(
        &self,
        name: &str,
        mime: &str,
        content: &mut dyn Read,
    ) -> NsfResult<(AttachmentRef, Option<Pin>)> {
        let mut first = vec![0u8; FIRST_CHUNK];
        let n = attach::read_full(content, &mut first).map_err(NsfError::Content)?;
        first.truncate(n);
        if (n as u64) < STORE_MIN {
            let mut small = io::Cursor::new(first).chain(content);
            return Ok((self.write_blob(name, mime, &mut small)?, None));
        }
        let staged = store::stage(&self.core.store, &self.core.path, &first, content)?;
        let (aref, pin) = stored_ref(name, mime, staged);
        Ok((aref, Some(pin)))
    }

    /// Writes carried content as an object in its stored form, without
    /// recompressing it (I47), when this store would keep it compressed:
    /// a zstd stream of at least [`STORE_MIN`] bytes of original, and
    /// `attachment_compression` not `off`. `None` when it does not apply
    /// (the caller writes the decoded original instead). The content is
    /// verified before anything is written; durable and pinned like
    /// [`Self::write_content`]'s objects (I37).
    pub(super) fn write_carried(
        &self,
        name: &str,
        mime: &str,
        carried: &store::CarriedContent,
    ) -> NsfResult<Option<(AttachmentRef, Option<Pin>)>> {
        let keeps_it = carried.form == store::StoredForm::Zstd
            && carried.size >= STORE_MIN
            && self.core.store.compression != store::AttachmentCompression::Off;
        if !keeps_it {
            return Ok(None);
        }
        let staged = store::stage_carried(&self.core.store, &self.core.path, carried)?;
        let (aref, pin) = stored_ref(name, mime, staged);
        Ok(Some((aref, Some(pin))))
    }

    /// References content the store already holds (`ForeignContent::Held`):
    /// the object must be there with this original size and crc32c; it
    /// is pinned for the referencing commit like a dedup hit (I37).
    pub(super) fn write_held(
        &self,
        name: &str,
        mime: &str,
        hash: store::ContentHash,
        size: u64,
        crc32c: u32,
    ) -> NsfResult<(AttachmentRef, Pin)> {
        let staged = store::stage_held(&self.core.store, &self.core.path, hash, size, crc32c)?;
        Ok(stored_ref(name, mime, staged))
    }

    /// Content written by [`Self::write_content`] that no commit took:
    /// blob pages go back to the free list, an object to the next sweep.
    pub(super) fn abandon_content(&self, aref: &AttachmentRef) {
        if aref.stored.is_some() {
            self.core.store.note_released();
        } else {
            self.release_blob(aref.extents.clone());
        }
    }

    /// Writes content to new blob pages of this file, synced (§2.5, I7).
    fn write_blob(
        &self,
        name: &str,
        mime: &str,
        content: &mut dyn Read,
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

    /// Returns the pages of an attachment that was never committed to the
    /// free list (best effort: if this fails the pages are leaked until
    /// compact, never corrupted).
    pub(super) fn release_blob(&self, extents: Vec<(u32, u32)>) {
        if extents.is_empty() {
            return;
        }
        if let Err(e) = self.submit(WriteOp::Release(extents)) {
            tracing::warn!(db = %self.core.path, error = %e, "could not return unused attachment pages");
        }
    }

    /// Stores replication history entry `key` (at most
    /// [`crate::MAX_HISTORY_KEY`] bytes; the value at most
    /// [`crate::MAX_HISTORY_BYTES`]), replacing the entry with that key.
    /// Outside the notes: the change sequence does not move (I30).
    /// Returns once durable (I2), logged like any write; a failure changes
    /// nothing (I4).
    pub fn put_replication_history(&self, key: &[u8], value: &[u8]) -> NsfResult<()> {
        self.submit(WriteOp::History {
            key: key.to_vec(),
            value: value.to_vec(),
        })
        .map(|_| ())
    }

    /// Replaces the access-control list (creating the ACL note the first
    /// time); returns once it is durable (I2), like a document write.
    pub fn set_acl(&self, acl: &Acl) -> NsfResult<NoteMeta> {
        acl.validate()?;
        let json = acl.to_json();
        if json.len() > MAX_ACL_JSON_BYTES {
            return Err(AclError::TooLarge {
                size: json.len(),
                limit: MAX_ACL_JSON_BYTES,
            }
            .into());
        }
        // I20: the catalog hears of the change durably before it can be
        // durable, and of its outcome after.
        let _change = self.begin_acl_change()?;
        self.submit(WriteOp::SetAcl(json)).and_then(expect_meta)
    }
}

/// The item of content staged in the attachment store, and its pin (I37).
fn stored_ref(name: &str, mime: &str, staged: store::Staged) -> (AttachmentRef, Pin) {
    let aref = AttachmentRef {
        name: name.to_string(),
        mime: mime.to_string(),
        size: staged.size,
        crc32c: staged.crc32c,
        blob_id: rand::random::<u64>() | 1,
        extents: Vec::new(),
        stored: Some(staged.content),
    };
    (aref, staged.pin)
}
