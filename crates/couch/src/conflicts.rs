//! Which conflict documents answer which document.
//!
//! A conflict document's UNID is derived from the document's and the
//! losing version's (design.md §11.4), so the document alone does not say
//! which conflict documents it has; each says which document it answers
//! (`$Ref`). This index maps a document's UNID to its conflict
//! documents' UNIDs. It lives with the open database (an extension of
//! `nsf::Database`), is built by one pass over the change sequence the
//! first time it is asked, and is brought up to date from where it left
//! off before every use, so it always covers every commit made before
//! the request. It holds only conflict documents, so it stays small.
//!
//! ```text
//!   catch_up: modified_since(upto) ─▶ each note with $Conflict and $Ref
//!             ─▶ by_doc[$Ref] += its UNID ─▶ upto = its change number
//! ```
//!
//! A stub of a conflict document keeps `$Conflict` and `$Ref`
//! (`nsf::stub_keeps`), so a conflict deleted stays a deleted leaf.

use nsf::{Database, ItemValue, Note, NsfResult, Seq, Unid, CONFLICT_ITEMS};
use parking_lot::Mutex;
use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;

/// Changes read per step while catching up.
const STEP: usize = 2_000;

/// The index of one database (module docs).
#[derive(Default)]
pub struct ConflictIndex {
    inner: Mutex<Inner>,
}

#[derive(Default)]
struct Inner {
    upto: Seq,
    by_doc: HashMap<Unid, BTreeSet<Unid>>,
}

impl ConflictIndex {
    /// The index of `db`, caught up with every commit so far.
    pub fn of(db: &Database) -> NsfResult<Arc<ConflictIndex>> {
        let index = db.extension(ConflictIndex::default);
        index.catch_up(db)?;
        Ok(index)
    }

    /// The conflict documents known to answer `doc`.
    pub fn conflicts_of(&self, doc: Unid) -> Vec<Unid> {
        self.inner
            .lock()
            .by_doc
            .get(&doc)
            .map(|s| s.iter().copied().collect())
            .unwrap_or_default()
    }

    fn catch_up(&self, db: &Database) -> NsfResult<()> {
        let mut inner = self.inner.lock();
        loop {
            let notes = db.modified_since(inner.upto, STEP)?;
            for n in &notes {
                if let Some(doc) = answers(n) {
                    inner.by_doc.entry(doc).or_default().insert(n.oid.unid);
                }
            }
            match notes.last() {
                Some(last) => inner.upto = last.change_seq,
                None => return Ok(()),
            }
            if notes.len() < STEP {
                return Ok(());
            }
        }
    }
}

/// The document a conflict document answers (`$Ref`), if `note` is one.
pub(crate) fn answers(note: &Note) -> Option<Unid> {
    note.item(CONFLICT_ITEMS[0])?;
    match &note.item(CONFLICT_ITEMS[1])?.value {
        ItemValue::Text(r) => r.parse().ok(),
        _ => None,
    }
}
