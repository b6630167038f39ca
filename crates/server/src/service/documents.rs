//! Documents: create, read, update, delete, and the changes since a
//! cursor.
//!
//! Every write is checked as its caller (may create, may edit this
//! document) and made conditional on the version that was checked (I17).
//! Writes come in two forms: the blocking methods, which retry when
//! another edit slipped in between check and write, and
//! [`Service::write_then`], which checks on the caller's thread and
//! answers from the log's writer thread once the commit is durable (I16),
//! so no worker thread waits for a commit.

use super::access::{bad, denied, forbidden, hidden};
use super::wire::{document, meta};
use super::{Caller, Service};
use crate::error::nsf_err;
use crate::{ServerError, ServerResult};
use nsf::{
    items_from_json, Access, AccessLevel, Database, Item, ItemUpdate, ItemValue, Note, NsfError,
    Seq,
};
use protocol::{Cursor, DocRef, Document, NoteMeta, Unid};
use std::sync::Arc;

/// Where the outcome of a document write goes: called once, never on a
/// thread that may block for long, and it must not block either.
pub type WriteDone = Box<dyn FnOnce(ServerResult<NoteMeta>) + Send>;

/// A document's JSON object, parsed once at the door its request came in
/// by ([`Service::parse_document`]) and handed down as it is: the HTTP
/// API reads `$seq` from it, and the write builds its items from it.
#[derive(Clone, Debug, PartialEq)]
pub struct DocJson(serde_json::Value);

impl DocJson {
    /// A field of the object.
    pub fn get(&self, key: &str) -> Option<&serde_json::Value> {
        self.0.get(key)
    }
}

/// A document write, for [`Service::write_then`].
#[derive(Debug)]
pub enum DocWrite {
    Create {
        doc: DocJson,
    },
    Update {
        unid: Unid,
        based_on: Option<u32>,
        force: bool,
        doc: DocJson,
    },
    Delete {
        unid: Unid,
        based_on: Option<u32>,
        force: bool,
    },
}

/// Runs `db`'s queued writes once the connection tasks that are ready
/// now have had their turn: the task yields once first, so every request
/// read in the same wake-up is queued and they commit as one transaction.
/// Outside a runtime, at once.
/// A busy queue is run in bounded turns with a yield between them, so the
/// task never keeps its worker from the connections it serves.
fn run_queue_soon(db: Arc<Database>) {
    match tokio::runtime::Handle::try_current() {
        Ok(rt) => drop(rt.spawn(async move {
            loop {
                tokio::task::yield_now().await;
                if !db.run_queued() {
                    break;
                }
            }
        })),
        Err(_) => while db.run_queued() {},
    }
}

/// A document write that passed its checks: what the engine is to do,
/// with the version it is conditional on.
enum Checked {
    Create(Vec<Item>),
    Update(nsf::Unid, Vec<ItemUpdate>, (Option<u32>, bool)),
    Delete(nsf::Unid, (Option<u32>, bool)),
}

impl DocWrite {
    /// Whether [`Service::write_then`] can run it without waiting: always
    /// for a create; for an update or delete when no check-and-retry
    /// loop is needed (an administrator's write, or one conditional on a
    /// sequence number the caller gave).
    pub fn runs_inline(&self, caller: &Caller) -> bool {
        match self {
            DocWrite::Create { .. } => true,
            DocWrite::Update {
                based_on, force, ..
            }
            | DocWrite::Delete {
                based_on, force, ..
            } => caller.admin || (based_on.is_some() && !force),
        }
    }
}

impl Service {
    /// Parses a document's JSON text (at most `max_document_bytes`) into
    /// the object the document writes take. Each door calls this once,
    /// where the text comes in.
    pub fn parse_document(&self, json: &[u8]) -> ServerResult<DocJson> {
        self.check_size("document", json.len())?;
        match serde_json::from_slice(json) {
            Ok(v @ serde_json::Value::Object(_)) => Ok(DocJson(v)),
            Ok(_) => Err(bad("a document must be a JSON object".into())),
            Err(e) => Err(bad(format!("malformed JSON document: {e}"))),
        }
    }

    /// Refuses JSON text of `len` bytes above `max_document_bytes`.
    pub(super) fn check_size(&self, what: &str, len: usize) -> ServerResult<()> {
        let max = self.limits.max_document_bytes;
        if len > max {
            return Err(ServerError::TooLarge(format!(
                "{what} of {len} bytes is above the limit of {max} bytes"
            )));
        }
        Ok(())
    }

    /// Creates a document from a JSON object.
    pub fn create_document(
        &self,
        caller: &Caller,
        db: &Database,
        doc: &DocJson,
    ) -> ServerResult<NoteMeta> {
        let access = self.access(caller, db)?;
        let items = new_items(caller, &access, db, doc)?;
        db.create(items).map(meta).map_err(nsf_err)
    }

    /// Runs a document write without waiting for its commit: the checks
    /// run here and `done` gets the outcome once the write is durable.
    /// For a write that [`DocWrite::runs_inline`] refuses, or a database
    /// in unlogged mode (whose commit syncs the file on the committing
    /// thread), the blocking form runs on the runtime's blocking pool
    /// instead (or here, outside a runtime).
    pub fn write_then(
        self: &Arc<Self>,
        caller: &Caller,
        db: &Arc<Database>,
        write: DocWrite,
        done: WriteDone,
    ) {
        if !write.runs_inline(caller) || !db.is_logged() {
            let (s, caller, db) = (self.clone(), caller.clone(), db.clone());
            let blocking = move || done(s.write_blocking(&caller, &db, write));
            match tokio::runtime::Handle::try_current() {
                Ok(rt) => drop(rt.spawn_blocking(blocking)),
                Err(_) => blocking(),
            }
            return;
        }
        let write = match self.checked(caller, db, write) {
            Ok(w) => w,
            Err(e) => return done(Err(e)),
        };
        let done = move |r: nsf::NsfResult<nsf::NoteMeta>| done(r.map(meta).map_err(nsf_err));
        let lead = match write {
            Checked::Create(items) => db.create_then(items, done),
            Checked::Update(unid, updates, version) => db.update_then(unid, updates, version, done),
            Checked::Delete(unid, version) => db.delete_then(unid, version, done),
        };
        if lead {
            run_queue_soon(db.clone());
        }
    }

    /// The blocking form of [`Self::write_then`]'s writes.
    fn write_blocking(
        &self,
        caller: &Caller,
        db: &Database,
        write: DocWrite,
    ) -> ServerResult<NoteMeta> {
        match write {
            DocWrite::Create { doc } => self.create_document(caller, db, &doc),
            DocWrite::Update {
                unid,
                based_on,
                force,
                doc,
            } => self.update_document(caller, db, unid, based_on, force, &doc),
            DocWrite::Delete {
                unid,
                based_on,
                force,
            } => self.delete_document(caller, db, unid, based_on, force),
        }
    }

    /// Checks `write` as `caller` and turns it into the engine's write.
    fn checked(&self, caller: &Caller, db: &Database, write: DocWrite) -> ServerResult<Checked> {
        let access = self.access(caller, db)?;
        Ok(match write {
            DocWrite::Create { doc } => Checked::Create(new_items(caller, &access, db, &doc)?),
            DocWrite::Update {
                unid,
                based_on,
                force,
                doc,
            } => {
                let updates = items_from_json(&doc.0).map_err(|e| bad(e.to_string()))?;
                let version =
                    self.checked_version(caller, &access, db, unid, based_on, WriteRule::Edit)?;
                Checked::Update(
                    nsf::Unid(unid.0),
                    updates,
                    version.unwrap_or((based_on, force)),
                )
            }
            DocWrite::Delete {
                unid,
                based_on,
                force,
            } => {
                let version =
                    self.checked_version(caller, &access, db, unid, based_on, WriteRule::Delete)?;
                Checked::Delete(nsf::Unid(unid.0), version.unwrap_or((based_on, force)))
            }
        })
    }

    /// For a caller who is not an administrator: checks that the document
    /// may be edited (or deleted) and returns the version the write must
    /// be conditional on (I17: the one checked, or the caller's own).
    /// Administrators write as asked (`None`).
    fn checked_version(
        &self,
        caller: &Caller,
        access: &Access,
        db: &Database,
        unid: Unid,
        based_on: Option<u32>,
        what: WriteRule,
    ) -> ServerResult<Option<(Option<u32>, bool)>> {
        if caller.admin {
            return Ok(None);
        }
        let note = db.get(nsf::Unid(unid.0)).map_err(nsf_err)?;
        what.check(caller, access, db, &note)?;
        Ok(Some((Some(based_on.unwrap_or(note.oid.seq_num)), false)))
    }

    /// Reads a document (or, by note id, a deletion stub).
    pub fn read_document(
        &self,
        caller: &Caller,
        db: &Database,
        doc: DocRef,
    ) -> ServerResult<Document> {
        let access = self.access(caller, db)?;
        if access.level() < AccessLevel::Reader {
            return Err(denied(caller, db.path()));
        }
        let note = match doc {
            DocRef::Unid(u) => db.get(nsf::Unid(u.0)).map_err(nsf_err)?,
            DocRef::NoteId(id) => db
                .get_by_id(nsf::NoteId(id.0))
                .map_err(nsf_err)?
                .ok_or_else(|| ServerError::NotFound(format!("no document {}", id.0)))?,
        };
        if !access.can_read(&note) {
            return Err(hidden(db, &note));
        }
        Ok(document(&note))
    }

    /// Updates a document's items; `based_on` makes it conditional.
    pub fn update_document(
        &self,
        caller: &Caller,
        db: &Database,
        unid: Unid,
        based_on: Option<u32>,
        force: bool,
        changes: &DocJson,
    ) -> ServerResult<NoteMeta> {
        let updates = items_from_json(&changes.0).map_err(|e| bad(e.to_string()))?;
        self.checked_write(
            caller,
            db,
            unid,
            based_on,
            force,
            WriteRule::Edit,
            |seq, f| db.update(nsf::Unid(unid.0), updates.clone(), seq, f),
        )
    }

    /// Deletes a document, leaving a deletion stub.
    pub fn delete_document(
        &self,
        caller: &Caller,
        db: &Database,
        unid: Unid,
        based_on: Option<u32>,
        force: bool,
    ) -> ServerResult<NoteMeta> {
        self.checked_write(
            caller,
            db,
            unid,
            based_on,
            force,
            WriteRule::Delete,
            |seq, f| db.delete(nsf::Unid(unid.0), seq, f),
        )
    }

    /// Runs `write` on a document the caller may edit (or delete), made
    /// conditional on the version that was checked (I17, module docs).
    #[allow(clippy::too_many_arguments)]
    pub(super) fn checked_write(
        &self,
        caller: &Caller,
        db: &Database,
        unid: Unid,
        based_on: Option<u32>,
        force: bool,
        what: WriteRule,
        write: impl Fn(Option<u32>, bool) -> nsf::NsfResult<nsf::NoteMeta>,
    ) -> ServerResult<NoteMeta> {
        let access = self.access(caller, db)?;
        if caller.admin {
            return write(based_on, force).map(meta).map_err(nsf_err);
        }
        for _ in 0..8 {
            let note = db.get(nsf::Unid(unid.0)).map_err(nsf_err)?;
            what.check(caller, &access, db, &note)?;
            let current = note.oid.seq_num;
            let seq = match based_on {
                Some(b) if !force => b,
                _ => current,
            };
            match write(Some(seq), false) {
                Err(NsfError::SaveConflict { .. }) if (based_on.is_none() || force) => continue,
                r => return r.map(meta).map_err(nsf_err),
            }
        }
        Err(ServerError::SaveConflict(format!(
            "document {} kept changing while it was being saved; try again",
            nsf::Unid(unid.0)
        )))
    }

    /// The documents and stubs changed after `since` that the caller may
    /// see, oldest first, with the cursor to continue from.
    pub fn modified_since(
        &self,
        caller: &Caller,
        db: &Database,
        since: Cursor,
        limit: u32,
    ) -> ServerResult<(Vec<Document>, Cursor, bool)> {
        let access = self.access(caller, db)?;
        if access.level() < AccessLevel::Reader {
            return Err(denied(caller, db.path()));
        }
        let limit = limit.clamp(1, self.limits.max_changes) as usize;
        let notes = db.modified_since(Seq(since.0), limit).map_err(nsf_err)?;
        let more = notes.len() == limit;
        let next = notes.last().map_or(since, |n| Cursor(n.change_seq.0));
        let docs = notes
            .iter()
            .filter(|n| access.can_read(n) && !views::is_design_note(n))
            .map(document)
            .collect();
        Ok((docs, next, more))
    }
}

/// A write to an existing document, as its access rule sees it: each
/// has its own rule (an Author edits, and deletes, only documents whose
/// `$Authors` names them; deleting may need more than editing).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum WriteRule {
    /// Changing items or attachments.
    Edit,
    Delete,
}

impl WriteRule {
    fn verb(self) -> &'static str {
        match self {
            WriteRule::Edit => "edit",
            WriteRule::Delete => "delete",
        }
    }

    /// Refuses unless `access` may write `note` this way; a document the
    /// caller may not read is reported as missing.
    pub(super) fn check(
        self,
        caller: &Caller,
        access: &Access,
        db: &Database,
        note: &Note,
    ) -> ServerResult<()> {
        if !access.can_read(note) {
            return Err(hidden(db, note));
        }
        let allowed = match self {
            WriteRule::Edit => access.can_edit(note),
            WriteRule::Delete => access.can_delete(note),
        };
        if !allowed {
            return Err(forbidden(
                caller,
                &format!("may not {} document {} in", self.verb(), note.oid.unid),
                db,
            ));
        }
        Ok(())
    }
}

/// The items of a document `caller` creates, if its access allows:
/// `null` values make no sense there, and an Author is named in
/// `$Authors`.
fn new_items(
    caller: &Caller,
    access: &Access,
    db: &Database,
    doc: &DocJson,
) -> ServerResult<Vec<Item>> {
    if !access.can_create() {
        return Err(forbidden(caller, "may not create documents in", db));
    }
    let mut items = items_from_json(&doc.0)
        .map_err(|e| bad(e.to_string()))?
        .into_iter()
        .map(|u| match u {
            ItemUpdate::Set(item) => Ok(item),
            ItemUpdate::Remove(name) => Err(bad(format!(
                "item {name:?} is null; a new document cannot remove items"
            ))),
        })
        .collect::<ServerResult<Vec<_>>>()?;
    if access.level() == AccessLevel::Author {
        name_author(&mut items, caller);
    }
    Ok(items)
}

/// An Author can edit only documents naming them in `$Authors`: a
/// document an Author creates names its creator, or they could never
/// edit it again.
fn name_author(items: &mut Vec<Item>, caller: &Caller) {
    let Some(user) = &caller.user else { return };
    match items
        .iter_mut()
        .find(|i| i.name.eq_ignore_ascii_case("$Authors"))
    {
        Some(i) => match &mut i.value {
            ItemValue::TextList(l) if !l.iter().any(|n| n.eq_ignore_ascii_case(user)) => {
                l.push(user.clone())
            }
            ItemValue::Text(t) if !t.eq_ignore_ascii_case(user) => {
                i.value = ItemValue::TextList(vec![t.clone(), user.clone()])
            }
            _ => {}
        },
        None => items.push(Item {
            name: "$Authors".into(),
            value: ItemValue::TextList(vec![user.clone()]),
        }),
    }
}
