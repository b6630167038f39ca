//! The machines' reads and writes, carried out on nsf databases.
//!
//! Source side: pages of changes from the change sequence
//! (`modified_since`), filtered by the selection formula (stubs always
//! travel), and documents with their revisions and attachment content.
//! Target side: what is held of some documents (version, stub, revisions),
//! write batches, and histories.
//!
//! A write batch is one nsf foreign batch (I27): every document is staged
//! first (its attachment content streamed and synced, I7), then
//! [`WriteBatch::apply`] runs inside the batch's transaction, so the puts
//! and the conflict documents they call for commit together, and the
//! call returns once that commit is durable (I2) — only then does the
//! driver acknowledge the batch to the puller (I26). Histories are stored
//! with `put_replication_history`, durable on return and not a change
//! (I30).

use super::body::{size_of, Attachment, Content, FormulaDoc, NoteBody};
use crate::apply::{ForeignStore, WriteBatch, Written};
use crate::conflict::{Applied, ConflictDoc, Held};
use crate::history::History;
use crate::ids::ContentKey;
use crate::msg::{Entry, Envelope, Summary};
use nsf::{
    Database, ForeignOutcome, ForeignTxn, Note, NoteId, NsfError, NsfResult, Seq, StagedNote,
    StoredForm, Unid,
};
use sha2::{Digest, Sha256};
use std::collections::HashSet;
use std::io::Read;
use std::sync::Arc;

/// Where a summary found a document and its version then: what the
/// source side keeps to read the document again, should the target want
/// it, with one B+tree lookup instead of two and no second digest of its
/// content.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Located {
    pub(crate) note_id: NoteId,
    pub(crate) change: Seq,
    pub(crate) version: nsf::Version,
}

/// Reads the page of changes after `after` (at most `limit`), as
/// `SourceAction::ReadChanges` asks, telling `found` where each entry's
/// document is. Documents `visible` refuses (the peer may not read them)
/// are left out like unselected ones: they move `upto` but never appear.
pub(crate) fn read_changes(
    db: &Database,
    after: Seq,
    limit: u32,
    selection: Option<&formula::Formula>,
    now: i64,
    visible: &dyn Fn(&Note) -> bool,
    found: &mut dyn FnMut(Unid, Located),
) -> NsfResult<Summary<nsf::Version>> {
    let notes = db.modified_since(after, limit as usize)?;
    let last = notes.len() < limit as usize;
    let upto = notes.last().map_or(after, |n| n.change_seq);
    let ctx = formula::EvalContext { now };
    let entries = notes
        .iter()
        .filter(|n| n.deleted || selection.is_none_or(|f| f.selects(&FormulaDoc(n), &ctx)))
        .filter(|n| visible(n))
        .map(|n| {
            let version = n.version();
            found(
                n.oid.unid,
                Located {
                    note_id: n.note_id,
                    change: n.change_seq,
                    version,
                },
            );
            Entry {
                unid: n.oid.unid,
                version,
                size: size_of(n),
                deleted: n.deleted,
                change: n.change_seq,
            }
        })
        .collect();
    Ok(Summary {
        upto,
        last,
        entries,
    })
}

/// Reads the document `unid` (`None` if gone, or if `visible` refuses
/// it, as if gone), looking first where a summary found it (`at`).
pub(crate) fn read_note(
    db: &Database,
    unid: Unid,
    at: Option<Located>,
    visible: &dyn Fn(&Note) -> bool,
    have: &HashSet<ContentKey>,
) -> NsfResult<Option<Envelope<nsf::Version, NoteBody>>> {
    let read = match at {
        Some(at) => db.get_with_revisions_at(unid, at.note_id)?,
        None => db.get_with_revisions(unid)?,
    };
    let Some((note, revisions)) = read else {
        return Ok(None);
    };
    if !visible(&note) {
        return Ok(None);
    }
    let mut attachments = Vec::new();
    for a in note.attachments() {
        let held = a
            .stored
            .filter(|c| have.contains(&ContentKey(c.hash.0)))
            .map(|c| Content::Held {
                hash: c.hash,
                size: a.size,
                crc32c: a.crc32c,
            });
        let content = match held {
            Some(reference) => reference,
            None => read_content(db, unid, &a.name, a.size)?,
        };
        attachments.push(Attachment {
            name: a.name.clone(),
            mime: a.mime.clone(),
            content,
        });
    }
    // Every write gives a note a new change number, so the same number
    // is the same content: the version the summary digested.
    let version = match at {
        Some(at) if at.change == note.change_seq => at.version,
        _ => note.version(),
    };
    Ok(Some(Envelope {
        unid,
        version,
        deleted: note.deleted,
        revisions,
        size: size_of(&note),
        body: NoteBody::of(&note, attachments),
    }))
}

/// An attachment's content as it travels: a compressed object in its
/// stored form (I47), anything else as the original bytes (an object
/// stored as is holds exactly those).
fn read_content(db: &Database, unid: Unid, name: &str, size: u64) -> NsfResult<Content> {
    match db.read_carried(unid, name)? {
        Some(c) if c.form == StoredForm::Zstd => return Ok(Content::Carried(Arc::new(c))),
        Some(c) => return Ok(Content::Original(Arc::new(c.bytes))),
        None => {}
    }
    let mut bytes = Vec::with_capacity(usize::try_from(size).unwrap_or(0));
    db.open_attachment(unid, name)?
        .read_to_end(&mut bytes)
        .map_err(|e| NsfError::Io {
            path: db.path().to_string(),
            source: e,
        })?;
    Ok(Content::Original(Arc::new(bytes)))
}

/// What the target holds of each document, in order, with the content
/// it could reuse: the attachment-store objects of the version held, if
/// `offer` lets the peer have that version's content.
pub(crate) fn held(
    db: &Database,
    unids: &[Unid],
    offer: &dyn Fn(&Note) -> bool,
) -> NsfResult<Vec<Option<Held<nsf::Version>>>> {
    unids
        .iter()
        .map(|&unid| {
            Ok(db.get_with_revisions(unid)?.map(|(note, revisions)| {
                let have = if offer(&note) {
                    note.attachments()
                        .filter_map(|a| a.stored.map(|c| ContentKey(c.hash.0)))
                        .collect()
                } else {
                    Vec::new()
                };
                Held {
                    version: note.version(),
                    deleted: note.deleted,
                    revisions,
                    have,
                }
            }))
        })
        .collect()
}

/// Writes `batch` in one transaction with its conflict documents (I27);
/// returns once durable (I2), or fails having written none of it.
pub(crate) fn write_batch(
    db: &Database,
    batch: &WriteBatch<nsf::Version, NoteBody>,
) -> NsfResult<Vec<Written>> {
    let mut staged = Vec::with_capacity(batch.notes.len());
    for note in &batch.notes {
        match db.stage_foreign(note.body.to_foreign(note.revisions.clone())) {
            Ok(s) => staged.push(s),
            Err(e) => {
                // Give back what was staged, in a batch that stores nothing.
                db.foreign_batch(&staged, |_| Ok(()))?;
                return Err(e);
            }
        }
    }
    let in_txn = WriteBatch {
        id: batch.id,
        notes: batch
            .notes
            .iter()
            .zip(&staged)
            .map(|(e, s)| Envelope {
                unid: e.unid,
                version: s.version(),
                deleted: e.deleted,
                revisions: e.revisions.clone(),
                size: e.size,
                body: s.clone(),
            })
            .collect(),
    };
    db.foreign_batch(&staged, move |t| in_txn.apply(&mut TxnStore(t)))
}

/// One foreign batch's transaction as a [`ForeignStore`].
struct TxnStore<'t, 'a, 'b>(&'t mut ForeignTxn<'a, 'b>);

impl ForeignStore<nsf::Version, StagedNote> for TxnStore<'_, '_, '_> {
    type Error = NsfError;

    fn put_foreign(
        &mut self,
        note: &Envelope<nsf::Version, StagedNote>,
    ) -> NsfResult<Applied<nsf::Version, StagedNote>> {
        Ok(match self.0.put(&note.body)? {
            ForeignOutcome::Stored(_) => Applied::Stored,
            ForeignOutcome::AlreadyHave(_) => Applied::AlreadyHave,
            ForeignOutcome::Replaced {
                loser,
                loser_revisions,
                ..
            } => Applied::Replaced {
                loser: Envelope {
                    unid: note.unid,
                    version: loser.version(),
                    deleted: loser.deleted,
                    revisions: loser_revisions.clone(),
                    size: size_of(&loser),
                    body: StagedNote::from_note(loser, loser_revisions),
                },
            },
            ForeignOutcome::Lost {
                winner,
                winner_revisions,
                winner_deleted,
                ..
            } => Applied::Lost {
                winner: Held {
                    version: winner,
                    deleted: winner_deleted,
                    revisions: winner_revisions,
                    have: Vec::new(),
                },
            },
        })
    }

    fn put_conflict(&mut self, doc: &ConflictDoc<nsf::Version, StagedNote>) -> NsfResult<()> {
        self.0
            .put_conflict(doc.unid, doc.response_to, &doc.body)
            .map(|_| ())
    }
}

/// The histories `db` keeps. An entry that does not decode is left out:
/// starting from 0 is always correct (§11.3).
pub fn load_histories(db: &Database) -> NsfResult<Vec<History>> {
    Ok(db
        .replication_histories()?
        .into_iter()
        .filter_map(|(_, v)| serde_json::from_slice(&v).ok())
        .collect())
}

/// Stores `entry`, replacing the one for its peer and selection.
pub(crate) fn save_history(db: &Database, entry: &History) -> NsfResult<()> {
    let value = serde_json::to_vec(entry)
        .map_err(|e| NsfError::Invalid(format!("a history entry that does not encode: {e}")))?;
    db.put_replication_history(&history_key(entry), &value)
}

/// SHA-256 of the peer (replica, instance) and the selection.
fn history_key(entry: &History) -> [u8; 32] {
    let mut h = Sha256::new();
    h.update(entry.peer.replica.0.to_le_bytes());
    h.update(entry.peer.instance.0.to_le_bytes());
    match &entry.selection {
        Some(s) => {
            h.update([1]);
            h.update(s.as_bytes());
        }
        None => h.update([0]),
    }
    h.finalize().into()
}
