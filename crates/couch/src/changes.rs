//! The change feed and the document listing as CouchDB rows.
//!
//! `_changes` follows the database's change sequence (`modified_since`),
//! so its `seq` values are Folio change numbers, and a client's
//! checkpoint is one. A change of a conflict document is a change of the
//! document it answers. A row names the document's winning revision, or
//! every leaf (`style=all_docs`), as the caller sees it: a change of a
//! note the caller may not read is no row (it moves `last_seq` only, as
//! it moves the native feed's cursor), and a hidden leaf is never listed.
//! A document changed twice within one answer has one row, at its later
//! change.
//!
//! `_all_docs` and the document counts read every note (a first version:
//! neither is kept as an index yet), counting only what the caller may
//! read.

use crate::attach::AttMode;
use crate::conflicts::{answers, ConflictIndex};
use crate::tree::{doc_of, id_answers, is_design, read_leaves, Doc, ReadCheck};
use nsf::{Database, Note, NsfResult, Seq, Unid};
use serde_json::{Map, Value};
use std::collections::{BTreeMap, HashMap};

/// Changes read from the database per step.
const STEP: usize = 500;

/// One row of the feed.
#[derive(Clone, Debug)]
pub struct Change {
    pub seq: u64,
    pub id: String,
    /// The winner first, then (all_docs) the other leaves.
    pub revs: Vec<String>,
    pub deleted: bool,
    /// The winner's body, if asked for.
    pub doc: Option<Map<String, Value>>,
}

/// An answer of the feed.
#[derive(Clone, Debug)]
pub struct ChangesPage {
    pub rows: Vec<Change>,
    /// Where the next request starts (`since`): the last change the
    /// caller may read that this answer looked at (filtered out or not),
    /// or the `since` asked for — never a change of a document hidden
    /// from the caller, so `last_seq` cannot count those.
    pub last_seq: u64,
    /// How far the answer read (hidden changes included): where the
    /// server, not the caller, goes on waiting from.
    pub scanned: u64,
}

/// The changes after `since`, at most `limit` rows (module docs).
pub fn changes(
    db: &Database,
    index: &ConflictIndex,
    since: Seq,
    limit: usize,
    (all_leaves, include_docs): (bool, bool),
    visible: ReadCheck<'_>,
    keep: &(dyn Fn(&Doc) -> bool + Sync),
) -> NsfResult<ChangesPage> {
    let mut rows: Vec<Option<Change>> = Vec::new();
    let mut at: HashMap<Unid, usize> = HashMap::new();
    let mut count = 0usize;
    let mut upto = since;
    let mut seen = since;
    'read: loop {
        let notes = db.modified_since(upto, STEP)?;
        let end = notes.len() < STEP;
        for n in notes {
            if count >= limit {
                break 'read;
            }
            upto = n.change_seq;
            if is_design(&n) || !visible(&n) {
                continue;
            }
            let main = answers(&n).unwrap_or(n.oid.unid);
            let id = id_answers(&n, main);
            let Some(doc) = doc_of(&id, main, read_leaves(db, index, main)?, visible) else {
                continue;
            };
            seen = n.change_seq;
            if let Some(old) = at.remove(&main) {
                rows[old] = None;
                count -= 1;
            }
            if !keep(&doc) {
                continue;
            }
            at.insert(main, rows.len());
            rows.push(Some(row(
                db,
                n.change_seq.0,
                &doc,
                all_leaves,
                include_docs,
            )));
            count += 1;
        }
        if end {
            break;
        }
    }
    Ok(ChangesPage {
        rows: rows.into_iter().flatten().collect(),
        last_seq: seen.0,
        scanned: upto.0,
    })
}

fn row(db: &Database, seq: u64, doc: &Doc, all_leaves: bool, include_docs: bool) -> Change {
    let winner = doc.winner();
    let mut revs = vec![winner.rev.to_string()];
    if all_leaves {
        revs.extend(
            doc.leaves
                .iter()
                .filter(|l| l.rev != winner.rev)
                .map(|l| l.rev.to_string()),
        );
    }
    Change {
        seq,
        id: doc.id.clone(),
        revs,
        deleted: winner.deleted(),
        // With its attachments' stubs; one that changed since it was read
        // is shown without (the feed moves on to its change).
        doc: include_docs.then(|| {
            crate::attach::leaf_body(db, winner, &doc.id, false, AttMode::Stubs, &[])
                .map(|(body, _)| body)
                .unwrap_or_else(|_| winner.to_json(&doc.id, false))
        }),
    }
}

/// One document of `_all_docs`.
#[derive(Clone, Debug)]
pub struct AllDocsRow {
    pub id: String,
    pub rev: String,
    pub doc: Map<String, Value>,
}

/// Every live document the caller may read, by id (byte order).
pub fn all_docs(
    db: &Database,
    index: &ConflictIndex,
    visible: ReadCheck<'_>,
) -> NsfResult<Vec<AllDocsRow>> {
    let mut out = BTreeMap::new();
    for doc in every_doc(db, index, visible)? {
        if doc.is_deleted() {
            continue;
        }
        let w = doc.winner();
        out.insert(
            doc.id.clone(),
            AllDocsRow {
                id: doc.id.clone(),
                rev: w.rev.to_string(),
                // With its attachments' stubs, as the feed's include_docs.
                doc: crate::attach::leaf_body(db, w, &doc.id, false, AttMode::Stubs, &[])
                    .map(|(body, _)| body)
                    .unwrap_or_else(|_| w.to_json(&doc.id, false)),
            },
        );
    }
    Ok(out.into_values().collect())
}

/// `doc_count` and `doc_del_count` as the caller sees them.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DocCounts {
    pub live: u64,
    pub deleted: u64,
    /// The last change among them (`update_seq` as the caller sees it).
    pub last_seq: u64,
}

/// The caller's document counts.
pub fn doc_counts(
    db: &Database,
    index: &ConflictIndex,
    visible: ReadCheck<'_>,
) -> NsfResult<DocCounts> {
    let mut c = DocCounts::default();
    for doc in every_doc(db, index, visible)? {
        let newest = doc.leaves.iter().map(|l| l.note.change_seq.0).max();
        c.last_seq = c.last_seq.max(newest.unwrap_or(0));
        if doc.is_deleted() {
            c.deleted += 1;
        } else {
            c.live += 1;
        }
    }
    Ok(c)
}

/// Every document with a leaf the caller may read.
fn every_doc(db: &Database, index: &ConflictIndex, visible: ReadCheck<'_>) -> NsfResult<Vec<Doc>> {
    let mut mains: BTreeMap<Unid, Vec<Note>> = BTreeMap::new();
    db.for_each_note(|n| {
        if !is_design(&n) {
            let main = answers(&n).unwrap_or(n.oid.unid);
            mains.entry(main).or_default().push(n);
        }
        Ok(())
    })?;
    let mut docs = Vec::new();
    for (main, notes) in mains {
        let Some(first) = notes.first() else { continue };
        let id = id_answers(first, main);
        let leaves = if index.conflicts_of(main).is_empty() {
            notes
                .into_iter()
                .map(|n| db.revisions(n.oid.unid).map(|r| (n, r)))
                .collect::<NsfResult<Vec<_>>>()?
        } else {
            read_leaves(db, index, main)?
        };
        if let Some(doc) = doc_of(&id, main, leaves, visible) {
            docs.push(doc);
        }
    }
    Ok(docs)
}
