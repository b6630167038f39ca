//! What each kind of write does inside the group's transaction.
//!
//! A [`WriteOp`] is a write as it waits in the queue; [`Database::apply`]
//! runs its body against the transaction's private pages (I4). A body
//! that fails returns an error and the queue runner rolls the
//! transaction back to the savepoint taken before it, so it changes
//! nothing, whatever the other writes of its group do.

use super::batch::ForeignTxn;
use super::Database;
use crate::acl::{acl_note_items, acl_unid, is_acl_note};
use crate::attach;
use crate::index::IndexTxn;
use crate::lineage;
use crate::records::{
    bump, create_note, create_with_unid, load_stored, lookup_unid, store_note, store_stub, Stored,
};
use crate::txn::Txn;
use crate::{
    validate_items, AttachmentRef, Item, ItemUpdate, ItemValue, Note, NoteMeta, NsfError,
    NsfResult, Unid, ATTACHMENT_PREFIX, DESIGN_ITEMS,
};
use storage::{PageId, PageStoreMut};

/// A write, queued until the writer lock's holder runs it.
pub(super) enum WriteOp {
    Create(Vec<Item>),
    Update {
        unid: Unid,
        updates: Vec<ItemUpdate>,
        based_on: Option<u32>,
        force: bool,
    },
    Delete {
        unid: Unid,
        based_on: Option<u32>,
        force: bool,
    },
    Attach {
        unid: Unid,
        blob: AttachmentRef,
    },
    Release(Vec<(u32, u32)>),
    /// Creates or replaces the ACL note with this JSON.
    SetAcl(String),
    /// An index transaction from the layer above (views).
    Index(IndexFn),
    /// A replication history entry (`lineage.rs`; not a change, I30).
    History {
        key: Vec<u8>,
        value: Vec<u8>,
    },
    /// Removes the deletion stubs among `unids` older than `age_micros`
    /// (`purge.rs`), counting them in `removed`.
    PurgeStubs {
        unids: Vec<Unid>,
        age_micros: i64,
        removed: std::sync::Arc<std::sync::atomic::AtomicU64>,
    },
    /// Versions made elsewhere, stored if they win, with the conflict
    /// documents they call for, in one transaction (`foreign.rs`).
    ForeignBatch {
        /// The staged attachment content the body may store.
        blobs: Vec<AttachmentRef>,
        body: super::foreign::ForeignFn,
    },
}

/// The body of an index transaction; it leaves its result in a place the
/// caller captured.
pub(super) type IndexFn = Box<dyn FnOnce(&mut IndexTxn<'_, '_>) -> NsfResult<()> + Send>;

impl Database {
    /// The body of each kind of write, run inside its own transaction.
    pub(super) fn apply(&self, txn: &mut Txn<'_>, op: WriteOp) -> NsfResult<Option<NoteMeta>> {
        match op {
            WriteOp::Create(items) => create_note(txn, items).map(Some),
            WriteOp::Update {
                unid,
                updates,
                based_on,
                force,
            } => {
                let (mut note, stored) = self.load_for_write(txn, unid)?;
                check_conflict(&note, based_on, force)?;
                let before: Vec<AttachmentRef> = note.attachments().cloned().collect();
                for u in updates {
                    match u {
                        ItemUpdate::Set(item) => note.set_item(item),
                        ItemUpdate::Remove(name) => {
                            note.remove_item(&name);
                        }
                    }
                }
                validate_items(&note.items)?;
                free_dropped_attachments(txn, &before, &note)?;
                bump(&mut note, txn.now());
                store_note(txn, &mut note, Some(stored)).map(Some)
            }
            WriteOp::Delete {
                unid,
                based_on,
                force,
            } => {
                let (note, stored) = self.load_for_write(txn, unid)?;
                check_conflict(&note, based_on, force)?;
                if let Some(name) = view_design_name(&note) {
                    return Err(NsfError::ViewDesignNote {
                        db: self.core.path.clone(),
                        unid,
                        name,
                    });
                }
                store_stub(txn, note, stored).map(Some)
            }
            WriteOp::Attach { unid, blob } => {
                let (mut note, stored) = self.load_for_write(txn, unid)?;
                let item_name = format!("{ATTACHMENT_PREFIX}{}", blob.name);
                if let Some(Item {
                    value: ItemValue::Attachment(old),
                    ..
                }) = note.remove_item(&item_name)
                {
                    attach::free_blob(txn, &old)?;
                }
                // I52: small content is logged with its reference.
                attach::log_small_blob(txn, &blob)?;
                note.set_item(Item {
                    name: item_name,
                    value: ItemValue::Attachment(blob),
                });
                bump(&mut note, txn.now());
                store_note(txn, &mut note, Some(stored)).map(Some)
            }
            WriteOp::Release(extents) => {
                for (first, count) in &extents {
                    for p in *first..first + count {
                        txn.free(PageId(p))?;
                    }
                }
                Ok(None)
            }
            WriteOp::SetAcl(json) => self.apply_set_acl(txn, json).map(Some),
            WriteOp::Index(f) => {
                f(&mut IndexTxn { txn })?;
                Ok(None)
            }
            WriteOp::History { key, value } => {
                lineage::put_history(txn, &key, &value)?;
                Ok(None)
            }
            WriteOp::PurgeStubs {
                unids,
                age_micros,
                removed,
            } => {
                super::purge::purge(txn, &unids, age_micros, &removed)?;
                Ok(None)
            }
            WriteOp::ForeignBatch { blobs, body } => {
                let mut batch = ForeignTxn::new(txn, blobs);
                body(&mut batch)?;
                batch.finish()?;
                Ok(None)
            }
        }
    }

    /// Loads a live document for rewriting, with what `store_note` needs
    /// to replace its stored version. The ACL note is refused: it changes
    /// only through `set_acl`.
    fn load_for_write(&self, txn: &Txn<'_>, unid: Unid) -> NsfResult<(Note, Stored)> {
        let id = lookup_unid(txn, &txn.header, unid)?.ok_or_else(|| self.missing(unid))?;
        let (note, stored) = load_stored(txn, unid, id)?;
        if note.deleted {
            return Err(NsfError::Deleted {
                db: self.core.path.clone(),
                unid,
            });
        }
        if unid == acl_unid(txn.header.replica_id) {
            return Err(NsfError::AclNote {
                db: self.core.path.clone(),
                unid,
            });
        }
        Ok((note, stored))
    }

    /// Writes the ACL note: creates it under its fixed UNID, or rewrites it
    /// (a deletion stub of it, which only replication can leave, comes
    /// back to life).
    fn apply_set_acl(&self, txn: &mut Txn<'_>, json: String) -> NsfResult<NoteMeta> {
        let unid = acl_unid(txn.header.replica_id);
        let items = acl_note_items(json);
        let Some(id) = lookup_unid(txn, &txn.header, unid)? else {
            return create_with_unid(txn, unid, items);
        };
        let (mut note, stored) = load_stored(txn, unid, id)?;
        if !note.deleted && !is_acl_note(&note) {
            return Err(NsfError::BadStoredAcl {
                db: self.core.path.clone(),
                reason: format!("note {unid} has the ACL note's UNID but is not an ACL note"),
            });
        }
        note.deleted = false;
        note.items = items;
        bump(&mut note, txn.now());
        store_note(txn, &mut note, Some(stored))
    }
}

/// The name of the view or folder `note` defines, if it is the design
/// note of one (`$DesignType` `view` or `folder`): such a note is deleted
/// only with its index, by the views layer (`IndexTxn::delete_note`).
fn view_design_name(note: &Note) -> Option<String> {
    let kind = note.item(DESIGN_ITEMS[0])?;
    let ItemValue::Text(kind) = &kind.value else {
        return None;
    };
    if kind != "view" && kind != "folder" {
        return None;
    }
    Some(match note.item(DESIGN_ITEMS[1]).map(|i| &i.value) {
        Some(ItemValue::Text(title)) => title.clone(),
        _ => String::new(),
    })
}

fn check_conflict(note: &Note, based_on: Option<u32>, force: bool) -> NsfResult<()> {
    match based_on {
        Some(b) if b != note.oid.seq_num && !force => Err(NsfError::SaveConflict {
            unid: note.oid.unid,
            based_on: b,
            current: note.oid.seq_num,
        }),
        _ => Ok(()),
    }
}

fn free_dropped_attachments(
    txn: &mut Txn<'_>,
    before: &[AttachmentRef],
    note: &Note,
) -> NsfResult<()> {
    for a in before {
        if !note.attachments().any(|b| b.blob_id == a.blob_id) {
            attach::free_blob(txn, a)?;
        }
    }
    Ok(())
}
