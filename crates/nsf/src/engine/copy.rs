//! A non-replica copy of a database: a new database (new replica id, new
//! instance id) holding the same documents — the same UNIDs, originator
//! ids, times, items and attachment content — and the same access-control
//! list. It is not a replica: replication with the source is refused
//! (the replica ids differ), so no revisions or histories are copied.
//!
//! Design notes are not copied here: the ACL note's UNID follows from the
//! replica id (design.md §2.7), so the list is set anew on the copy, and
//! view and folder definitions belong to the views layer, which defines
//! them on the copy (their indexes are its own). Deletion stubs are not
//! copied either: the copy has no replica to tell of deletions.
//!
//! Documents go over in batches, each one transaction of `put_foreign`
//! (durable before the next, I2, I25), attachment content streamed from
//! the source's pages into the copy's own (I7). The source is read while
//! its users go on writing: each document is copied as it was when read.

use super::Engine;
use crate::{ForeignAttachment, ForeignContent, ForeignNote, Note, NsfResult};

/// Documents per transaction of a copy.
const BATCH: usize = 64;

/// What a copy did.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct CopyReport {
    /// The source and the new database.
    pub src: String,
    pub dst: String,
    /// Documents copied (deletion stubs and design notes are not).
    pub documents: u64,
    /// Attachments copied, and their bytes.
    pub attachments: u64,
    pub attachment_bytes: u64,
}

impl Engine {
    /// Copies the documents and the ACL of `src` into a new database at
    /// `dst` with a new replica id and `src`'s title. `dst` must not
    /// exist. Durable when it returns; a failure or a crash part way
    /// leaves `dst` with the documents copied so far (remove it with
    /// [`Engine::delete_database`] and copy again); the source is never
    /// written.
    pub fn copy_database(&self, src: &str, dst: &str) -> NsfResult<CopyReport> {
        let source = self.open_database(src)?;
        let info = source.info()?;
        let acl = source.acl()?;
        let target = self.create_database(dst, &info.title)?;
        let mut report = CopyReport {
            src: source.path().to_string(),
            dst: target.path().to_string(),
            ..CopyReport::default()
        };
        let mut batch: Vec<ForeignNote> = Vec::with_capacity(BATCH);
        let store = |batch: &mut Vec<ForeignNote>| -> NsfResult<()> {
            for r in target.put_foreign_batch(std::mem::take(batch)) {
                r?;
            }
            Ok(())
        };
        source.for_each_note(|note| {
            if note.item("$DesignType").is_some() {
                return Ok(());
            }
            let copy = as_foreign(&source, &note)?;
            report.documents += 1;
            report.attachments += copy.attachments.len() as u64;
            report.attachment_bytes += note.attachments().map(|a| a.size).sum::<u64>();
            batch.push(copy);
            if batch.len() >= BATCH {
                store(&mut batch)?;
            }
            Ok(())
        })?;
        store(&mut batch)?;
        if let Some(acl) = acl {
            target.set_acl(&acl)?;
        }
        Ok(report)
    }
}

/// `note` as a version made elsewhere, its attachments streamed from the
/// source.
fn as_foreign(source: &crate::Database, note: &Note) -> NsfResult<ForeignNote> {
    let mut attachments = Vec::new();
    for a in note.attachments() {
        let reader = source.open_attachment(note.oid.unid, &a.name)?;
        attachments.push(ForeignAttachment {
            name: a.name.clone(),
            mime: a.mime.clone(),
            content: ForeignContent::Reader(Box::new(reader)),
        });
    }
    Ok(ForeignNote {
        oid: note.oid,
        created: note.created,
        modified: note.modified,
        deleted: false,
        items: note.plain_items().cloned().collect(),
        attachments,
        revisions: Vec::new(),
    })
}
