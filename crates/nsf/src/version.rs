//! The order of a document's versions, the same on every replica.
//!
//! Replicas edit a document independently, so two of them can hold
//! different versions under one UNID. Which one wins must not depend on
//! where the comparison runs or in which order versions arrive (I24):
//! every replica compares the same three things, taken from the version
//! itself and nothing local to a file.
//!
//! ```text
//!   Version = (seq, seq_time, digest)     compared left to right, higher wins
//!     seq       the originator id's sequence number: more edits win
//!     seq_time  then the later edit
//!     digest    then the larger SHA-256 of the content (a tie-break that
//!               only identical content can tie: the same version)
//! ```
//!
//! The digest covers the note's content: the deleted flag, then every
//! item in its stored encoding, sorted by name (folded as names are
//! matched), an attachment being its name, type, size and content
//! checksum (crc32c; where its pages are is the file's business). Not
//! covered: the note id, the change sequence and the times `created`,
//! `modified` and `added`, which a version carries but does not decide.

use crate::note::{folded, write_canonical_item};
use crate::{Note, Timestamp};
use sha2::{Digest, Sha256};
use std::fmt;

/// Prefix of the digested bytes: a new digest layout gets a new tag.
const DIGEST_TAG: &[u8] = b"folio-version-1";

/// One version of a document, in the order replicas agree on (module
/// docs): the derived `Ord` compares `seq`, then `seq_time`, then
/// `digest`. Equal in all three is the same version.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Version {
    pub seq: u32,
    pub seq_time: Timestamp,
    pub digest: [u8; 32],
}

impl fmt::Display for Version {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} at {} (", self.seq, self.seq_time.to_rfc3339())?;
        for b in &self.digest[..6] {
            write!(f, "{b:02x}")?;
        }
        write!(f, "…)")
    }
}

impl Note {
    /// This note's place in the version order (module docs, I24).
    pub fn version(&self) -> Version {
        Version {
            seq: self.oid.seq_num,
            seq_time: self.oid.seq_time,
            digest: content_digest(self),
        }
    }
}

/// SHA-256 of the note's canonical content (module docs).
fn content_digest(note: &Note) -> [u8; 32] {
    let mut items: Vec<(String, &crate::Item)> =
        note.items.iter().map(|i| (folded(&i.name), i)).collect();
    items.sort_by(|a, b| a.0.cmp(&b.0).then_with(|| a.1.name.cmp(&b.1.name)));
    let mut h = Sha256::new();
    h.update(DIGEST_TAG);
    h.update([u8::from(note.deleted)]);
    h.update((items.len() as u64).to_le_bytes());
    let mut buf = Vec::new();
    for (_, item) in items {
        buf.clear();
        write_canonical_item(item, &mut buf);
        h.update((buf.len() as u64).to_le_bytes());
        h.update(&buf);
    }
    h.finalize().into()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{AttachmentRef, Item, ItemValue, NoteId, OriginatorId, Seq, Unid};

    fn note(seq: u32, time: i64, items: Vec<Item>) -> Note {
        Note {
            note_id: NoteId(1),
            oid: OriginatorId {
                unid: Unid([7; 16]),
                seq_num: seq,
                seq_time: Timestamp(time),
            },
            created: Timestamp(1),
            modified: Timestamp(time),
            added: Timestamp(2),
            change_seq: Seq(3),
            deleted: false,
            items,
        }
    }

    fn text(name: &str, v: &str) -> Item {
        Item {
            name: name.into(),
            value: ItemValue::Text(v.into()),
        }
    }

    fn file(blob_id: u64, extents: Vec<(u32, u32)>) -> Item {
        Item {
            name: "$FILE:a.txt".into(),
            value: ItemValue::Attachment(AttachmentRef {
                name: "a.txt".into(),
                mime: "text/plain".into(),
                size: 5,
                crc32c: 9,
                blob_id,
                extents,
                stored: None,
            }),
        }
    }

    #[test]
    fn sequence_then_time_then_digest() {
        let a = note(2, 100, vec![text("S", "x")]).version();
        let b = note(3, 50, vec![text("S", "x")]).version();
        let c = note(3, 60, vec![text("S", "x")]).version();
        assert!(a < b && b < c, "more edits win, then the later edit");
        let d = note(3, 60, vec![text("S", "y")]).version();
        assert_ne!(c, d);
        assert_eq!(c.cmp(&d), c.digest.cmp(&d.digest), "then the digest");
    }

    #[test]
    fn the_digest_is_of_content_only() {
        let base = note(
            1,
            5,
            vec![text("A", "1"), text("B", "2"), file(11, vec![(9, 1)])],
        );
        let mut other = note(
            1,
            5,
            vec![file(99, vec![(40, 1)]), text("B", "2"), text("A", "1")],
        );
        other.note_id = NoteId(77);
        other.change_seq = Seq(1000);
        other.created = Timestamp(-5);
        other.added = Timestamp(123);
        assert_eq!(
            base.version(),
            other.version(),
            "item order, local ids, blob placement and times do not count"
        );
        let mut stub = base.clone();
        stub.deleted = true;
        assert_ne!(base.version(), stub.version(), "the deleted flag counts");
        let renamed = note(
            1,
            5,
            vec![text("a", "1"), text("B", "2"), file(11, vec![(9, 1)])],
        );
        assert_ne!(
            base.version(),
            renamed.version(),
            "a name's spelling counts"
        );
    }
}
