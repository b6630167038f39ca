//! COPY and MOVE on a mail file (docs/mail.md "IMAP", design.md I56).
//!
//! A copy is a new document, not a second folder membership of the
//! same one. UIDs are note ids (I55), and a message that joins a mailbox
//! must get a UID above every UID that mailbox has had (RFC 9051
//! §2.3.1.1, RFC 4315 COPYUID); the original's note id is below, a new
//! document gets the next one. And a copy's flags are its own: a STORE or
//! an EXPUNGE in one mailbox never touches the message in another. The
//! attachment content is not copied where the server's attachment store
//! holds it (`ForeignContent::Held`: the copy adds a reference).
//!
//! ```text
//!   originals the user may read (and, for MOVE, delete)
//!     ─▶ copies: a new UNID; items fitted to the destination (below);
//!        INTERNALDATE kept (IMAPDate); flags kept (RFC 9051 §6.4.7)
//!     ─▶ staged: content streamed and synced (I7)
//!     ─▶ ONE transaction: the copies stored, filed in the destination
//!        folder, and for MOVE each original taken out of the source folder
//!        (when another folder holds it too) or deleted (a stub)
//!     ─▶ durable (I2): the copies' UIDs, for COPYUID
//! ```
//!
//! Fitting a copy to where it goes, so it shows there and nowhere else:
//! a folder gets `PostedDate` and `DeliveredDate` if it lacks them (filed
//! mail, not the owner's Sent or Drafts, as APPEND does); Sent keeps or
//! gets `PostedDate` and loses `DeliveredDate`; Drafts loses both (and a
//! form that is no memo becomes one). All Documents is computed: nothing
//! is copied into it.

use crate::mailfile::{MailFileStore, Source, IMAP_DATE_ITEM};
use crate::store::{SpecialUse, Transfer};
use crate::{ImapError, ImapResult};
use mail::item;
use nsf::{
    ForeignAttachment, ForeignContent, ForeignNote, ForeignOutcome, Item, ItemValue, Note, NoteId,
    NsfError, OriginatorId, StagedNote, Timestamp, Unid,
};
use views::FolderEdit;

/// Where a copy goes, as far as its items are concerned.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Place {
    Folder,
    Sent,
    Drafts,
}

impl Place {
    fn of(dest: &Source) -> ImapResult<Place> {
        match dest.special {
            _ if dest.folder => Ok(Place::Folder),
            Some(SpecialUse::Sent) => Ok(Place::Sent),
            Some(SpecialUse::Drafts) => Ok(Place::Drafts),
            _ => Err(ImapError::Refused(
                "All Documents shows every document: copy to a folder, Drafts or Sent".into(),
            )),
        }
    }
}

/// What happens to one original of a MOVE.
enum Leaving {
    /// Another folder holds it too: only this folder lets it go.
    Unfile(Unid),
    Delete(NoteId),
}

impl MailFileStore {
    pub(crate) fn transfer_messages(
        &self,
        from: &str,
        uids: &[u32],
        to: &str,
        how: Transfer,
    ) -> ImapResult<Vec<u32>> {
        let dest = self.source(to)?;
        let place = Place::of(&dest)?;
        let origin = self.source(from)?;
        if !self.access.can_create() {
            return Err(ImapError::Refused(
                "your access to this mail file does not let you create documents".into(),
            ));
        }
        let others = match how {
            Transfer::Move if origin.folder => self.other_folders(&origin.design)?,
            _ => Vec::new(),
        };
        let now = Timestamp::now();
        let mut copies = Vec::with_capacity(uids.len());
        let mut leaving = Vec::new();
        for &uid in uids {
            let note = self.note(uid)?;
            if how == Transfer::Move {
                if !self.access.can_delete(&note) {
                    return Err(ImapError::Refused(format!(
                        "your access does not let you remove message {uid}"
                    )));
                }
                leaving.push(self.leaving(&note, &others)?);
            }
            copies.push(self.copy_of(&note, place, now)?);
        }
        let staged = self.stage(copies)?;
        let filed: Vec<Unid> = staged.iter().map(|s| s.unid()).collect();
        let mut folders: Vec<&str> = Vec::new();
        if dest.folder {
            folders.push(&dest.design);
        }
        let unfiling = leaving.iter().any(|l| matches!(l, Leaving::Unfile(_)));
        if unfiling {
            folders.push(&origin.design);
        }
        let to_folder = dest.folder;
        let db = self.db.clone();
        let content = staged.clone();
        let ids = self
            .views
            .with_folder_edits(&self.db, &folders, move |edits| {
                db.foreign_batch(&content, move |t| {
                    let mut ids = Vec::with_capacity(staged.len());
                    for s in &staged {
                        match t.put(s)? {
                            ForeignOutcome::Stored(m) => ids.push(m.note_id.0),
                            other => {
                                return Err(NsfError::Invalid(format!(
                                    "a copy was not stored: {other:?}"
                                )))
                            }
                        }
                    }
                    let mut ix = t.index();
                    let mut edits = edits.into_iter();
                    if to_folder {
                        file(edits.next(), |e| e.add(&mut ix, &filed))?;
                    }
                    let unfiled: Vec<Unid> = leaving
                        .iter()
                        .filter_map(|l| match l {
                            Leaving::Unfile(u) => Some(*u),
                            Leaving::Delete(_) => None,
                        })
                        .collect();
                    if unfiling {
                        file(edits.next(), |e| e.remove(&mut ix, &unfiled))?;
                    }
                    for l in &leaving {
                        if let Leaving::Delete(id) = l {
                            ix.delete_note(*id)?;
                        }
                    }
                    Ok(ids)
                })
            })??;
        Ok(ids)
    }

    /// The folders other than `design` (the Inbox and user folders).
    pub(crate) fn other_folders(&self, design: &str) -> ImapResult<Vec<String>> {
        let mut all = self.user_folders()?;
        all.push(mail::INBOX.to_string());
        all.retain(|f| !f.eq_ignore_ascii_case(design));
        Ok(all)
    }

    /// Whether another folder holds `note` (then leaving a folder only
    /// unfiles it).
    pub(crate) fn held_elsewhere(&self, note: &Note, others: &[String]) -> ImapResult<bool> {
        for f in others {
            if self.views.folder_holds(&self.db, f, note.note_id)? {
                return Ok(true);
            }
        }
        Ok(false)
    }

    fn leaving(&self, note: &Note, others: &[String]) -> ImapResult<Leaving> {
        Ok(if self.held_elsewhere(note, others)? {
            Leaving::Unfile(note.oid.unid)
        } else {
            Leaving::Delete(note.note_id)
        })
    }

    /// The copy of `note` for `place` (module docs).
    fn copy_of(&self, note: &Note, place: Place, now: Timestamp) -> ImapResult<ForeignNote> {
        let mut items: Vec<Item> = note
            .items
            .iter()
            .filter(|i| !matches!(i.value, ItemValue::Attachment(_)))
            .cloned()
            .collect();
        let has =
            |items: &[Item], name: &str| items.iter().any(|i| i.name.eq_ignore_ascii_case(name));
        let remove = |items: &mut Vec<Item>, name: &str| {
            items.retain(|i| !i.name.eq_ignore_ascii_case(name))
        };
        let date = |name: &str| Item {
            name: name.into(),
            value: ItemValue::DateTime(now),
        };
        if !has(&items, IMAP_DATE_ITEM) {
            items.push(Item {
                name: IMAP_DATE_ITEM.into(),
                value: ItemValue::DateTime(note.added),
            });
        }
        match place {
            Place::Folder => {
                for name in [item::POSTED_DATE, item::DELIVERED_DATE] {
                    if !has(&items, name) {
                        items.push(date(name));
                    }
                }
            }
            Place::Sent => {
                remove(&mut items, item::DELIVERED_DATE);
                if !has(&items, item::POSTED_DATE) {
                    items.push(date(item::POSTED_DATE));
                }
            }
            Place::Drafts => {
                remove(&mut items, item::DELIVERED_DATE);
                remove(&mut items, item::POSTED_DATE);
                let memo = items.iter().any(|i| {
                    i.name.eq_ignore_ascii_case(item::FORM)
                        && matches!(&i.value, ItemValue::Text(f) if f == "Memo" || f == "Reply")
                });
                if !memo {
                    remove(&mut items, item::FORM);
                    items.push(Item {
                        name: item::FORM.into(),
                        value: ItemValue::Text("Memo".into()),
                    });
                }
            }
        }
        let mut attachments = Vec::new();
        for a in note.attachments() {
            let content = match &a.stored {
                Some(stored) => ForeignContent::Held {
                    hash: stored.hash,
                    size: a.size,
                    crc32c: a.crc32c,
                },
                None => {
                    ForeignContent::Bytes(self.read_attachment(note.oid.unid, &a.name).ok_or_else(
                        || ImapError::Refused(format!("the message's {} cannot be read", a.name)),
                    )?)
                }
            };
            attachments.push(ForeignAttachment {
                name: a.name.clone(),
                mime: a.mime.clone(),
                content,
            });
        }
        Ok(ForeignNote {
            oid: OriginatorId {
                unid: Unid::random(),
                seq_num: 1,
                seq_time: now,
            },
            created: note.created,
            modified: now,
            deleted: false,
            items,
            attachments,
            revisions: Vec::new(),
        })
    }

    /// Streams the copies' content (I7). A failure hands what was staged
    /// to an empty batch, which gives its pages back.
    fn stage(&self, copies: Vec<ForeignNote>) -> ImapResult<Vec<StagedNote>> {
        let mut staged = Vec::with_capacity(copies.len());
        for c in copies {
            match self.db.stage_foreign(c) {
                Ok(s) => staged.push(s),
                Err(e) => {
                    let _ = self.db.foreign_batch(&staged, |_| Ok(()));
                    return Err(e.into());
                }
            }
        }
        Ok(staged)
    }
}

/// Runs a folder change inside the batch, as an error the batch rolls
/// back on.
fn file(
    edit: Option<FolderEdit>,
    f: impl FnOnce(&FolderEdit) -> views::ViewResult<()>,
) -> nsf::NsfResult<()> {
    let edit =
        edit.ok_or_else(|| NsfError::Invalid("internal error: a folder edit is missing".into()))?;
    f(&edit).map_err(|e| match e {
        views::ViewError::Nsf(e) => e,
        e => NsfError::Invalid(format!("folder {}: {e}", edit.name())),
    })
}
