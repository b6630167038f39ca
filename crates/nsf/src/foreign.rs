//! Notes with a foreign identity: versions made elsewhere (another
//! replica, a router delivering a message exactly once) that this
//! database stores as they are — their UNID, originator id and times are
//! never changed here — or not at all, by the version order (I24).
//!
//! This module holds what a caller hands over and gets back, and checks
//! the input; `db/foreign.rs` writes it. Nothing here makes conflict
//! documents: the outcome names the version that lost, and replication
//! decides what to do with it.

use crate::note::stub_keeps;
use crate::{
    attach, validate_items, Item, ItemValue, Note, NoteMeta, NsfError, NsfResult, OriginatorId,
    Timestamp, Version,
};
use std::collections::HashSet;
use std::io::Read;

/// A version of a document made elsewhere, to store as given.
#[derive(Debug)]
pub struct ForeignNote {
    /// UNID, sequence number (at least 1) and sequence time, kept as given.
    pub oid: OriginatorId,
    pub created: Timestamp,
    pub modified: Timestamp,
    /// A deletion stub: no attachments, and no items but those a local
    /// stub keeps ([`crate::stub_keeps`]).
    pub deleted: bool,
    /// The items, attachments excepted (they come with their content in
    /// `attachments` and are stored as `$FILE:` items).
    pub items: Vec<Item>,
    pub attachments: Vec<ForeignAttachment>,
    /// The versions this one was made from, oldest first; stored as given
    /// (the newest [`crate::MAX_REVISIONS`]), see `lineage.rs`.
    pub revisions: Vec<Version>,
}

/// An attachment of a foreign note, with its content.
#[derive(Debug)]
pub struct ForeignAttachment {
    pub name: String,
    pub mime: String,
    pub content: ForeignContent,
}

/// Where an attachment's content is read from.
pub enum ForeignContent {
    Bytes(Vec<u8>),
    Reader(Box<dyn Read + Send>),
    /// Content in another store's stored form, checked and kept in that
    /// form where this store would keep it compressed (design.md §2.9
    /// "Replication", I47). Shared, so a replication target stages it
    /// without a copy of the stream.
    Carried(std::sync::Arc<crate::CarriedContent>),
    /// Content this server's attachment store already holds, named by
    /// the SHA-256 of its original, with the original's size and crc32c
    /// (which must match the object's). Nothing is read or written: the
    /// object gains a reference (design.md §2.9 "Replication"). The
    /// caller vouches that the writer may have it: replication offers
    /// only what the target's own copy of the document holds.
    Held {
        hash: crate::ContentHash,
        size: u64,
        crc32c: u32,
    },
}

impl std::fmt::Debug for ForeignContent {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ForeignContent::Bytes(b) => write!(f, "Bytes({} bytes)", b.len()),
            ForeignContent::Reader(_) => f.write_str("Reader"),
            ForeignContent::Carried(c) => write!(f, "{c:?}"),
            ForeignContent::Held { hash, size, .. } => write!(f, "Held({hash}, {size} bytes)"),
        }
    }
}

impl ForeignContent {
    /// The original content as a stream, whichever form it came in
    /// (carried content decoded and checked as it is read).
    pub(crate) fn reader(&mut self) -> std::io::Result<Box<dyn Read + '_>> {
        Ok(match self {
            ForeignContent::Bytes(b) => Box::new(b.as_slice()),
            ForeignContent::Reader(r) => Box::new(r),
            ForeignContent::Carried(c) => Box::new(c.original()?),
            ForeignContent::Held { hash, .. } => {
                return Err(std::io::Error::other(format!(
                    "content {hash} is held by reference and has no stream here"
                )))
            }
        })
    }
}

/// What [`crate::Database::put_foreign`] did.
#[derive(Clone, Debug, PartialEq)]
pub enum ForeignOutcome {
    /// No note had the UNID: the foreign note is stored.
    Stored(NoteMeta),
    /// A note had the UNID and lost to the foreign version, which replaced
    /// it. `loser` is the version replaced, for the caller to make a
    /// conflict document of; its attachment items describe content that
    /// is freed with the replacement and can no longer be read here.
    Replaced {
        stored: NoteMeta,
        loser: Note,
        loser_revisions: Vec<Version>,
    },
    /// This very version (equal in the version order) is already here;
    /// nothing changed.
    AlreadyHave(NoteMeta),
    /// The note here wins: nothing changed. `winner` is its version,
    /// `winner_revisions` the versions it was made from, and
    /// `winner_deleted` whether it is a deletion stub.
    Lost {
        local: NoteMeta,
        winner: Version,
        winner_revisions: Vec<Version>,
        winner_deleted: bool,
    },
}

/// Refuses a foreign note that breaks the rules, naming the problem;
/// nothing is written for it.
pub(crate) fn validate(note: &ForeignNote) -> NsfResult<()> {
    let bad = |reason: String| NsfError::BadForeignNote {
        unid: note.oid.unid,
        reason,
    };
    if note.oid.seq_num == 0 {
        return Err(bad("sequence number 0 (sequence numbers start at 1)".into()));
    }
    if let Some(i) = note
        .items
        .iter()
        .find(|i| matches!(i.value, ItemValue::Attachment(_)))
    {
        return Err(bad(format!(
            "item {:?} is an attachment reference; attachments come with their content",
            i.name
        )));
    }
    validate_items(&note.items).map_err(|e| bad(e.to_string()))?;
    if note.deleted {
        if !note.attachments.is_empty() {
            return Err(bad("a deletion stub has no attachments".into()));
        }
        if let Some(i) = note.items.iter().find(|i| !stub_keeps(&i.name)) {
            return Err(bad(format!(
                "a deletion stub keeps only $Readers, $Authors, conflict marks and \
                 CouchDB identity items, not {:?}",
                i.name
            )));
        }
    }
    let mut names = HashSet::new();
    for a in &note.attachments {
        attach::validate_name(&a.name).map_err(|e| bad(e.to_string()))?;
        if !names.insert(a.name.as_str()) {
            return Err(bad(format!("two attachments named {:?}", a.name)));
        }
    }
    Ok(())
}
