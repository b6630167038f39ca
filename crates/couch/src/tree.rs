//! A document as CouchDB sees it: its leaves, the winner among them, the
//! ancestry of each, and which revisions it knows (`_revs_diff`).
//!
//! ```text
//!   leaves   = the note with the document's UNID (live or a stub)
//!            + its conflict documents (ConflictIndex), each live or a stub
//!              — only those the caller may read ($Readers), so a hidden
//!              leaf is never shown, counted or diffed
//!   winner   = CouchDB's rule: a live leaf before a deleted one, then the
//!              higher generation, then the larger hash (as text)
//!   ancestry = $Revs when $Rev names this version; otherwise the note's
//!              nsf revisions back to the version $Rev names, then $Rev
//!              and its $Revs (a native edit of a document edited here)
//! ```
//!
//! Design and ACL notes (`$DesignType`) are never documents here.

use crate::body::doc_json;
use crate::conflicts::{answers, ConflictIndex};
use crate::id::{doc_id_of, unid_of_id};
use crate::rev::Rev;
use nsf::{Database, ItemValue, Note, NsfResult, Unid, Version, CONFLICT_ITEMS, COUCH_ITEMS};
use serde_json::{json, Map, Value};

/// Whether the caller may read a note (its `$Readers`, the ACL).
pub type ReadCheck<'a> = &'a (dyn Fn(&Note) -> bool + Sync);

/// One leaf of a document's revision tree: a note that is the document or
/// one of its conflict documents.
#[derive(Clone, Debug)]
pub struct Leaf {
    pub note: Note,
    /// The nsf revisions of the note, oldest first.
    pub revisions: Vec<Version>,
    pub rev: Rev,
    /// The revisions before this one, newest first, consecutive.
    pub ancestry: Vec<Rev>,
    /// Whether the note is a conflict document.
    pub conflict: bool,
}

impl Leaf {
    pub fn new(note: Note, revisions: Vec<Version>) -> Leaf {
        let rev = rev_of(&note);
        let ancestry = ancestry(&note, &revisions, &rev);
        Leaf {
            conflict: answers(&note).is_some(),
            note,
            revisions,
            rev,
            ancestry,
        }
    }

    pub fn deleted(&self) -> bool {
        self.note.deleted
    }

    /// `_revisions`: the generation of this revision and the hashes back
    /// from it.
    pub fn revisions_json(&self) -> Value {
        let ids: Vec<&str> = std::iter::once(&self.rev)
            .chain(&self.ancestry)
            .map(|r| r.hash.as_str())
            .collect();
        json!({"start": self.rev.gen, "ids": ids})
    }

    /// `_revs_info`: this revision (`available`, or `deleted` for a stub)
    /// and its ancestors, whose bodies are not kept (`missing`).
    pub fn revs_info_json(&self) -> Value {
        let own = if self.deleted() {
            "deleted"
        } else {
            "available"
        };
        let mut out = vec![json!({"rev": self.rev.to_string(), "status": own})];
        out.extend(
            self.ancestry
                .iter()
                .map(|r| json!({"rev": r.to_string(), "status": "missing"})),
        );
        Value::Array(out)
    }

    /// Whether `rev` is this leaf or one of its ancestors.
    pub fn knows(&self, rev: &Rev) -> bool {
        self.rev == *rev || self.ancestry.contains(rev)
    }

    /// The document body of this leaf under `id`: its fields, `_id`,
    /// `_rev`, `_deleted` for a stub, `_revisions` if `revs`.
    pub fn to_json(&self, id: &str, revs: bool) -> Map<String, Value> {
        let mut doc = if self.deleted() {
            Map::new()
        } else {
            doc_json(&self.note)
        };
        doc.insert("_id".into(), json!(id));
        doc.insert("_rev".into(), json!(self.rev.to_string()));
        if self.deleted() {
            doc.insert("_deleted".into(), json!(true));
        }
        if revs {
            doc.insert("_revisions".into(), self.revisions_json());
        }
        doc
    }
}

/// The revision id of a note (rev.rs): its `$Rev` when that names this
/// version, else the hash of its version — a conflict document's taken
/// without its conflict marks, so the loser keeps the id it had.
fn rev_of(note: &Note) -> Rev {
    if let Some(r) = stored_rev(note).filter(|r| r.gen == note.oid.seq_num) {
        return r;
    }
    if answers(note).is_some() {
        let mut plain = note.clone();
        plain.items.retain(|i| {
            !CONFLICT_ITEMS
                .iter()
                .any(|c| c.eq_ignore_ascii_case(&i.name))
        });
        return Rev::of_version(&plain.version());
    }
    Rev::of_version(&note.version())
}

fn stored_rev(note: &Note) -> Option<Rev> {
    match &note.item(COUCH_ITEMS[1])?.value {
        ItemValue::Text(r) => r.parse().ok(),
        _ => None,
    }
}

fn stored_ancestors(note: &Note) -> Vec<Rev> {
    match note.item(COUCH_ITEMS[2]).map(|i| &i.value) {
        Some(ItemValue::TextList(l)) => l.iter().map_while(|r| r.parse().ok()).collect(),
        _ => Vec::new(),
    }
}

/// The ancestry of `note` (module docs), newest first, cut where a
/// generation is missing.
fn ancestry(note: &Note, revisions: &[Version], rev: &Rev) -> Vec<Rev> {
    let stored = stored_rev(note);
    let mut out = Vec::new();
    if stored.as_ref() == Some(rev) {
        out = stored_ancestors(note);
    } else {
        // Native edits since the version $Rev names (if any): their nsf
        // revisions, newest first, down to that generation.
        let floor = stored.as_ref().map_or(0, |s| s.gen);
        let mut want = rev.gen.saturating_sub(1);
        for v in revisions.iter().rev() {
            if want <= floor || v.seq != want {
                break;
            }
            out.push(Rev::of_version(v));
            want -= 1;
        }
        if let Some(s) = stored.filter(|s| s.gen == want && want > 0) {
            out.push(s);
            out.extend(stored_ancestors(note));
        }
    }
    let mut gen = rev.gen;
    let mut run = Vec::new();
    for r in out {
        if r.gen.checked_add(1) != Some(gen) || run.len() == crate::rev::MAX_ANCESTORS {
            break;
        }
        gen = r.gen;
        run.push(r);
    }
    run
}

/// A document: its id, the UNID of its note and the leaves the caller
/// may read (at least one).
#[derive(Clone, Debug)]
pub struct Doc {
    pub id: String,
    pub unid: Unid,
    pub leaves: Vec<Leaf>,
}

impl Doc {
    /// The winning leaf, by CouchDB's rule (module docs).
    pub fn winner(&self) -> &Leaf {
        self.leaves
            .iter()
            .max_by(|a, b| (!a.deleted(), &a.rev).cmp(&(!b.deleted(), &b.rev)))
            .expect("a document has a leaf")
    }

    /// The live leaves that lost (`_conflicts`).
    pub fn conflicts(&self) -> Vec<&Leaf> {
        let w = &self.winner().rev;
        self.leaves
            .iter()
            .filter(|l| !l.deleted() && l.rev != *w)
            .collect()
    }

    /// The deleted leaves that lost (`_deleted_conflicts`).
    pub fn deleted_conflicts(&self) -> Vec<&Leaf> {
        let w = &self.winner().rev;
        self.leaves
            .iter()
            .filter(|l| l.deleted() && l.rev != *w)
            .collect()
    }

    /// The leaf with revision `rev`.
    pub fn leaf(&self, rev: &Rev) -> Option<&Leaf> {
        self.leaves.iter().find(|l| l.rev == *rev)
    }

    /// Whether `rev` is a leaf or an ancestor of one.
    pub fn knows(&self, rev: &Rev) -> bool {
        self.leaves.iter().any(|l| l.knows(rev))
    }

    /// Whether every leaf is deleted.
    pub fn is_deleted(&self) -> bool {
        self.winner().deleted()
    }
}

/// Every leaf of the document `unid` (the note and its conflict
/// documents), whoever may read them, as `(note, revisions)`.
pub(crate) fn read_leaves(
    db: &Database,
    index: &ConflictIndex,
    unid: Unid,
) -> NsfResult<Vec<(Note, Vec<Version>)>> {
    let mut out = Vec::new();
    if let Some(main) = db.get_with_revisions(unid)? {
        out.push(main);
    }
    for c in index.conflicts_of(unid) {
        if let Some((note, revs)) = db.get_with_revisions(c)? {
            if answers(&note) == Some(unid) {
                out.push((note, revs));
            }
        }
    }
    Ok(out)
}

/// Whether a note is a design or ACL note (never a document here).
pub(crate) fn is_design(note: &Note) -> bool {
    note.item(nsf::DESIGN_ITEMS[0]).is_some()
}

/// The document with CouchDB id `id` as the caller sees it, if any leaf
/// of it is visible.
pub fn load_doc(
    db: &Database,
    index: &ConflictIndex,
    id: &str,
    visible: ReadCheck<'_>,
) -> NsfResult<Option<Doc>> {
    let unid = unid_of_id(id);
    let leaves = read_leaves(db, index, unid)?;
    Ok(doc_of(id, unid, leaves, visible))
}

/// The document made of `leaves` (read by [`read_leaves`]), keeping those
/// the caller may read and that answer to `id`.
pub(crate) fn doc_of(
    id: &str,
    unid: Unid,
    leaves: Vec<(Note, Vec<Version>)>,
    visible: ReadCheck<'_>,
) -> Option<Doc> {
    let mut leaves: Vec<Leaf> = leaves
        .into_iter()
        .filter(|(n, _)| !is_design(n) && id_answers(n, unid) == id && visible(n))
        .map(|(n, r)| Leaf::new(n, r))
        .collect();
    // A conflict document whose revision another leaf descends from (a
    // Folio peer edited that version in its own note, and the edit came
    // here natively) is an ancestor, not a leaf, as in CouchDB's tree; and
    // one revision held by two notes is one leaf.
    let superseded: Vec<Rev> = leaves
        .iter()
        .filter(|l| leaves.iter().any(|m| m.ancestry.contains(&l.rev)))
        .map(|l| l.rev.clone())
        .collect();
    leaves.retain(|l| !superseded.contains(&l.rev));
    let mut seen = Vec::new();
    leaves.retain(|l| {
        let first = !seen.contains(&l.rev);
        seen.push(l.rev.clone());
        first
    });
    (!leaves.is_empty()).then(|| Doc {
        id: id.to_string(),
        unid,
        leaves,
    })
}

/// The id a leaf of the document `unid` answers to: its `$DocId`, or the
/// document's UNID.
pub(crate) fn id_answers(note: &Note, unid: Unid) -> String {
    match note.item(COUCH_ITEMS[0]).map(|i| &i.value) {
        Some(ItemValue::Text(id)) => id.clone(),
        _ if note.oid.unid == unid => doc_id_of(note),
        _ => unid.to_string(),
    }
}

/// `_revs_diff` for one document: the revisions asked about that it does
/// not know, and its leaves of a lower generation than the newest of
/// them (`possible_ancestors`).
pub fn revs_diff(doc: Option<&Doc>, revs: &[Rev]) -> (Vec<Rev>, Vec<Rev>) {
    let missing: Vec<Rev> = revs
        .iter()
        .filter(|r| !doc.is_some_and(|d| d.knows(r)))
        .cloned()
        .collect();
    let top = missing.iter().map(|r| r.gen).max().unwrap_or(0);
    let possible = doc
        .map(|d| {
            d.leaves
                .iter()
                .filter(|l| l.rev.gen < top)
                .map(|l| l.rev.clone())
                .collect()
        })
        .unwrap_or_default();
    (missing, possible)
}
