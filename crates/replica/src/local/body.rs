//! What a document is on its way between two local files, and nsf's
//! versions as replication versions.
//!
//! A document travels as its nsf items (attachment items excepted) and
//! each attachment's name, type and content: the original bytes, or, for
//! an object the source's store keeps compressed, that object's zstd
//! stream as stored ([`Content::Carried`], I47). The target writes the
//! content into its own pages or store (`nsf::Database::stage_foreign`),
//! so the pages of one file never leak into the other. Its version is
//! computed from the note on each side (I24) and is the same on both,
//! since the digest covers an attachment's name, type, size and checksum
//! of the original, not where or in which form it is stored.

use crate::version::Version;
use formula::{Document, Value};
use nsf::{ForeignAttachment, ForeignContent, ForeignNote, Item, ItemValue, Note, OriginatorId};
use std::io::Cursor;
use std::sync::Arc;

impl Version for nsf::Version {
    /// Sequence number, sequence time (both little-endian) and digest.
    fn identity(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.seq.to_le_bytes());
        out.extend_from_slice(&self.seq_time.0.to_le_bytes());
        out.extend_from_slice(&self.digest);
    }
}

/// One attachment on its way.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Attachment {
    /// Its file name.
    pub name: String,
    /// Its MIME type.
    pub mime: String,
    /// Its content.
    pub content: Content,
}

/// An attachment's content on its way.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Content {
    /// The original bytes.
    Original(Arc<Vec<u8>>),
    /// A compressed object's stored form: its zstd stream and the
    /// original's size, crc32c and SHA-256, which the target checks
    /// before it stores anything (I47).
    Carried(Arc<nsf::CarriedContent>),
    /// A reference to content the target said it holds (a Want's
    /// `have`): the SHA-256 of the original, its size and crc32c. No
    /// bytes travel; the target's store gains a reference (§2.9).
    Held {
        /// SHA-256 of the original.
        hash: nsf::ContentHash,
        /// The original's size.
        size: u64,
        /// The original's crc32c.
        crc32c: u32,
    },
}

/// A document's content on its way from one local file to another.
#[derive(Clone, Debug, PartialEq)]
pub struct NoteBody {
    /// The originator id (UNID, sequence number and time).
    pub oid: OriginatorId,
    /// Created, as stored at the source.
    pub created: nsf::Timestamp,
    /// Modified, as stored at the source.
    pub modified: nsf::Timestamp,
    /// A deletion stub.
    pub deleted: bool,
    /// The items, attachment items excepted.
    pub items: Vec<Item>,
    /// The attachments, with their content.
    pub attachments: Vec<Attachment>,
}

impl NoteBody {
    /// The body of `note`, whose attachments' content is `attachments`.
    pub(crate) fn of(note: &Note, attachments: Vec<Attachment>) -> NoteBody {
        NoteBody {
            oid: note.oid,
            created: note.created,
            modified: note.modified,
            deleted: note.deleted,
            items: note.plain_items().cloned().collect(),
            attachments,
        }
    }

    /// The references to held content it carries, and their original
    /// bytes (what the target did not have to receive).
    pub fn held_content(&self) -> (u64, u64) {
        self.attachments
            .iter()
            .filter_map(|a| match a.content {
                Content::Held { size, .. } => Some(size),
                _ => None,
            })
            .fold((0, 0), |(n, bytes), size| (n + 1, bytes + size))
    }

    /// The note this body stands for, as an access check or the wire
    /// form sees it: its items (no attachment items) under its identity,
    /// with no local ids (note id 1, change 0).
    pub fn to_note(&self) -> Note {
        Note {
            note_id: nsf::NoteId(1),
            oid: self.oid,
            created: self.created,
            modified: self.modified,
            added: self.modified,
            change_seq: nsf::Seq(0),
            deleted: self.deleted,
            items: self.items.clone(),
        }
    }

    /// The foreign note to stage at the target, with `revisions`; its
    /// content is shared with this body, not copied.
    pub(crate) fn to_foreign(&self, revisions: Vec<nsf::Version>) -> ForeignNote {
        ForeignNote {
            oid: self.oid,
            created: self.created,
            modified: self.modified,
            deleted: self.deleted,
            items: self.items.clone(),
            attachments: self
                .attachments
                .iter()
                .map(|a| ForeignAttachment {
                    name: a.name.clone(),
                    mime: a.mime.clone(),
                    content: match &a.content {
                        Content::Original(b) => {
                            ForeignContent::Reader(Box::new(Cursor::new(Shared(b.clone()))))
                        }
                        Content::Carried(c) => ForeignContent::Carried(c.clone()),
                        Content::Held { hash, size, crc32c } => ForeignContent::Held {
                            hash: *hash,
                            size: *size,
                            crc32c: *crc32c,
                        },
                    },
                })
                .collect(),
            revisions,
        }
    }
}

/// Original bytes read where they are (through a `Cursor`), so staging a
/// document's content costs no copy of it (the write batch already holds
/// it).
struct Shared(Arc<Vec<u8>>);

impl AsRef<[u8]> for Shared {
    fn as_ref(&self) -> &[u8] {
        &self.0
    }
}

/// The size a summary announces for `note`: its encoded items and its
/// attachments' content.
pub(crate) fn size_of(note: &Note) -> u64 {
    let items = nsf::encode_note(note).map_or(0, |b| b.len() as u64);
    items + note.attachments().map(|a| a.size).sum::<u64>()
}

/// A note as the formula language sees it (selection formulas).
pub(crate) struct FormulaDoc<'a>(pub &'a Note);

impl Document for FormulaDoc<'_> {
    fn item(&self, name: &str) -> Option<Value> {
        Some(match &self.0.item(name)?.value {
            ItemValue::Text(s) | ItemValue::RichText(s) => Value::text(s.clone()),
            ItemValue::TextList(l) => Value::Text(l.clone()),
            ItemValue::Number(n) => Value::number(*n),
            ItemValue::NumberList(l) => Value::Number(l.clone()),
            ItemValue::DateTime(t) => Value::DateTime(vec![t.0]),
            ItemValue::DateTimeList(l) => Value::DateTime(l.iter().map(|t| t.0).collect()),
            ItemValue::Attachment(a) => Value::text(a.name.clone()),
        })
    }

    fn created(&self) -> i64 {
        self.0.created.0
    }

    fn modified(&self) -> i64 {
        self.0.modified.0
    }
}
