//! What a document contributes to an index, and applying that to the
//! index trees.
//!
//! A document's entries are computed from the document alone (selection,
//! then column formulas, and who may read it if `$Readers` restricts it),
//! so they can be computed outside the database's writer lock; applying
//! them inside an index transaction is then only B+tree work: remove the
//! keys the docmap remembers from the entries and restricted trees,
//! insert the new ones.

use crate::catalog::ViewState;
use crate::collate::{encode_summary, encode_value, invert_from, key_note_id};
use crate::def::{is_design_note, Compiled, Sort, DESIGN_TYPE_ITEM};
use crate::{restrict, ViewResult};
use formula::{Document, EvalContext, Value};
use nsf::{IndexTxn, ItemValue, Note, NoteId, NoteRef, ReadRestriction, Unid};
use std::sync::Arc;
use storage::{btree, PageBuf, PageId, PageStore, PageStoreMut, PageWrite, StorageResult};

/// Bytes of collation key before the note id.
const KEY_BUDGET: usize = 900;
/// Largest docmap value (all of one note's keys).
const DOCMAP_BUDGET: usize = 1900;

/// A document as an index sees it: its identity, and its items through
/// the formula language's [`Document`].
pub trait Source: Document {
    fn note_id(&self) -> NoteId;
    fn unid(&self) -> Unid;
    fn deleted(&self) -> bool;
    fn is_design(&self) -> bool;
    /// Who may read the document, if `$Readers` restricts it.
    fn restriction(&self) -> Option<ReadRestriction>;
}

/// A decoded note as the formula language sees it.
pub struct NoteDoc<'a>(pub &'a Note);

/// A formula value from an item value.
fn value_of(v: &ItemValue) -> Value {
    match v {
        ItemValue::Text(s) | ItemValue::RichText(s) => Value::text(s.clone()),
        ItemValue::TextList(l) => Value::Text(l.clone()),
        ItemValue::Number(n) => Value::number(*n),
        ItemValue::NumberList(l) => Value::Number(l.clone()),
        ItemValue::DateTime(t) => Value::DateTime(vec![t.0]),
        ItemValue::DateTimeList(l) => Value::DateTime(l.iter().map(|t| t.0).collect()),
        ItemValue::Attachment(a) => Value::text(a.name.clone()),
    }
}

impl Document for NoteDoc<'_> {
    fn item(&self, name: &str) -> Option<Value> {
        Some(value_of(&self.0.item(name)?.value))
    }
    fn created(&self) -> i64 {
        self.0.created.0
    }
    fn modified(&self) -> i64 {
        self.0.modified.0
    }
}

impl Source for NoteDoc<'_> {
    fn note_id(&self) -> NoteId {
        self.0.note_id
    }
    fn unid(&self) -> Unid {
        self.0.oid.unid
    }
    fn deleted(&self) -> bool {
        self.0.deleted
    }
    fn is_design(&self) -> bool {
        is_design_note(self.0)
    }
    fn restriction(&self) -> Option<ReadRestriction> {
        ReadRestriction::of(self.0)
    }
}

/// A note still encoded ([`NoteRef`]): items are decoded only when a
/// formula asks for them. A damaged item reads as an error value.
pub struct RefDoc<'r, 'a>(pub &'r NoteRef<'a>);

impl Document for RefDoc<'_, '_> {
    fn item(&self, name: &str) -> Option<Value> {
        match self.0.item(name) {
            Ok(v) => v.as_ref().map(value_of),
            Err(e) => Some(Value::Error(e.to_string())),
        }
    }
    fn created(&self) -> i64 {
        self.0.created.0
    }
    fn modified(&self) -> i64 {
        self.0.modified.0
    }
}

impl Source for RefDoc<'_, '_> {
    fn note_id(&self) -> NoteId {
        self.0.note_id
    }
    fn unid(&self) -> Unid {
        self.0.unid
    }
    fn deleted(&self) -> bool {
        self.0.deleted
    }
    fn is_design(&self) -> bool {
        self.0.has_item(DESIGN_TYPE_ITEM).unwrap_or(false)
    }
    /// A damaged access item restricts the document to nobody (but
    /// callers not subject to `$Readers`).
    fn restriction(&self) -> Option<ReadRestriction> {
        ReadRestriction::of_ref(self.0).unwrap_or_else(|_| Some(ReadRestriction { names: vec![] }))
    }
}

/// One index entry: collation key and summary.
pub type Entry = (Vec<u8>, Vec<u8>);

/// What one note contributes to an index: its entries and, if `$Readers`
/// restricts it, the restricted-tree record each of them gets
/// (`restrict::encode`). No entries: the note is not in the index.
#[derive(Clone, Debug, Default)]
pub struct Contribution {
    pub entries: Vec<Entry>,
    pub restricted: Option<Vec<u8>>,
}

impl Contribution {
    /// The contribution of `doc`, assuming the view selects it (or it is a
    /// member of the folder).
    pub fn of(c: &Compiled, doc: &dyn Source, ctx: &EvalContext) -> Contribution {
        Contribution {
            entries: entries_of(c, doc, ctx),
            restricted: doc.restriction().map(|r| restrict::encode(&r)),
        }
    }
}

/// Whether the view selects `doc` (folders: whether it can be a member).
pub fn selects(c: &Compiled, doc: &dyn Source, ctx: &EvalContext) -> bool {
    if doc.deleted() || doc.is_design() {
        return false;
    }
    match &c.selection {
        Some(f) => f.selects(doc, ctx),
        None => true,
    }
}

/// The entries `note` has in the index, assuming it is selected (or a
/// member): one, or one per category value when the first column is
/// categorized and evaluates to a list.
pub fn entries_of(c: &Compiled, doc: &dyn Source, ctx: &EvalContext) -> Vec<Entry> {
    let cols: Vec<Value> = c.columns.iter().map(|f| f.eval(doc, ctx)).collect();
    let mut rows = vec![cols];
    if c.categorized() {
        rows = split_categories(rows.pop().unwrap_or_default());
    }
    let sorted = c.sorted_columns();
    let mut out: Vec<Entry> = Vec::with_capacity(rows.len());
    let mut docmap_size = 0;
    for row in rows {
        let key = make_key(c, sorted, &row, doc.note_id());
        docmap_size += key.len() + 2;
        if docmap_size > DOCMAP_BUDGET {
            break; // more category values than a docmap entry holds
        }
        if out.iter().any(|(k, _)| *k == key) {
            continue;
        }
        out.push((key, encode_summary(doc.unid(), &row)));
    }
    out
}

fn split_categories(cols: Vec<Value>) -> Vec<Vec<Value>> {
    let singles: Vec<Value> = match &cols[0] {
        Value::Text(l) if l.len() > 1 => l.iter().map(|s| Value::text(s.clone())).collect(),
        Value::Number(l) if l.len() > 1 => l.iter().map(|n| Value::number(*n)).collect(),
        Value::DateTime(l) if l.len() > 1 => l.iter().map(|t| Value::DateTime(vec![*t])).collect(),
        _ => return vec![cols],
    };
    singles
        .into_iter()
        .map(|v| {
            let mut row = cols.clone();
            row[0] = v;
            row
        })
        .collect()
}

fn make_key(c: &Compiled, sorted: &[usize], row: &[Value], id: NoteId) -> Vec<u8> {
    let mut key = Vec::with_capacity(64);
    for &i in sorted {
        let col = &c.def.columns[i];
        let start = key.len();
        encode_value(&mut key, &row[i], col.case_sensitive);
        if col.sort == Sort::Desc {
            invert_from(&mut key, start);
        }
    }
    key.truncate(KEY_BUDGET);
    key.extend_from_slice(&id.0.to_be_bytes());
    key
}

/// Encodes a docmap value: the keys of one note's entries.
pub fn encode_docmap(entries: &[Entry]) -> Vec<u8> {
    let mut v = Vec::new();
    for (k, _) in entries {
        v.extend_from_slice(&(k.len() as u16).to_le_bytes());
        v.extend_from_slice(k);
    }
    v
}

/// Decodes a docmap value; `None` if malformed.
pub fn decode_docmap(mut v: &[u8]) -> Option<Vec<Vec<u8>>> {
    let mut keys = Vec::new();
    while !v.is_empty() {
        let len = u16::from_le_bytes(v.get(..2)?.try_into().ok()?) as usize;
        keys.push(v.get(2..2 + len)?.to_vec());
        v = &v[2 + len..];
    }
    Some(keys)
}

/// The page store an index's own trees live in: the transaction itself
/// for a logged index; for an unlogged one, pages are written unlogged
/// and every page allocated or freed is recorded in the (logged) owned
/// tree (I14).
pub struct IndexStore<'x, 't, 'a> {
    pub tx: &'x mut IndexTxn<'t, 'a>,
    pub unlogged: bool,
    pub owned_root: PageId,
}

impl PageStore for IndexStore<'_, '_, '_> {
    fn read(&self, id: PageId) -> StorageResult<Arc<PageBuf>> {
        self.tx.read(id)
    }
    fn name(&self) -> &str {
        self.tx.name()
    }
}

impl PageWrite for IndexStore<'_, '_, '_> {
    fn write(&mut self, id: PageId, page: PageBuf) {
        if self.unlogged {
            self.tx.write_unlogged(id, page);
        } else {
            self.tx.write(id, page);
        }
    }
}

impl PageStoreMut for IndexStore<'_, '_, '_> {
    fn allocate(&mut self) -> StorageResult<PageId> {
        let id = self.tx.allocate()?;
        if self.unlogged {
            btree::insert(
                &mut *self.tx,
                &mut self.owned_root,
                &id.0.to_be_bytes(),
                &[],
            )?;
        }
        Ok(id)
    }
    fn free(&mut self, id: PageId) -> StorageResult<()> {
        if self.unlogged {
            btree::remove(&mut *self.tx, &mut self.owned_root, &id.0.to_be_bytes())?;
        }
        self.tx.free(id)
    }
}

/// Replaces the entries of note `id` in the index with `new` (no
/// entries: the note leaves the index).
pub fn apply_note(
    s: &mut IndexStore<'_, '_, '_>,
    st: &mut ViewState,
    id: NoteId,
    new: &Contribution,
    db: &str,
    view: &str,
) -> ViewResult<()> {
    let idkey = id.0.to_be_bytes();
    if let Some(old) = btree::get(s, st.docmap_root, &idkey)? {
        let keys = decode_docmap(&old).ok_or_else(|| crate::ViewError::Corrupt {
            db: db.to_string(),
            name: view.to_string(),
            reason: format!("docmap entry of note {id}"),
        })?;
        for k in keys {
            if key_note_id(&k) == Some(id) {
                btree::remove(s, &mut st.entries_root, &k)?;
                btree::remove(s, &mut st.restricted_root, &k)?;
            }
        }
    }
    if new.entries.is_empty() {
        btree::remove(s, &mut st.docmap_root, &idkey)?;
        return Ok(());
    }
    for (k, v) in &new.entries {
        btree::insert(s, &mut st.entries_root, k, v)?;
        if let Some(r) = &new.restricted {
            btree::insert(s, &mut st.restricted_root, k, r)?;
        }
    }
    btree::insert(s, &mut st.docmap_root, &idkey, &encode_docmap(&new.entries))?;
    Ok(())
}
