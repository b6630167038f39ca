//! An open collection: reading a view's index.
//!
//! Every read runs under the database's short shared lock against the
//! committed trees, so it sees one consistent state of the index and never
//! waits for a writer's fsync; a writer waits at most for one read of a
//! page of rows. Positions count document entries from 0 in collation
//! order; category rows (for a categorized first column) are synthesized
//! while reading and carry the number of entries under them, counted in
//! O(log n) from the counted B+tree.
//!
//! A collection is read as one caller sees it ([`Collection::seen_by`]):
//! entries of documents whose `$Readers` the caller is not in are left
//! out of rows, totals, category rows and counts, positions and finds
//! alike, as if those documents did not exist (`restrict` says how, and
//! what it costs).

use crate::catalog::{self, ViewState};
use crate::collate::{decode_summary, key_note_id, search_prefix};
use crate::def::{Compiled, Sort};
use crate::entries::decode_docmap;
use crate::restrict::{self, Visible};
use crate::views::{UpdateReport, Views};
use crate::{ViewError, ViewResult};
use formula::Value;
use nsf::{Access, Database, IndexRead, NoteId, Unid};
use std::ops::Bound;
use std::sync::Arc;
use storage::btree;

type EntryResult = storage::StorageResult<(Vec<u8>, Vec<u8>)>;

/// Where a read starts.
#[derive(Clone, Debug)]
pub enum Start {
    /// At this entry position (0-based).
    Position(u64),
    /// At the first entry whose first sorted column equals (or, with
    /// `prefix`, starts with) this text.
    Key { key: String, prefix: bool },
}

/// A row read from a view.
#[derive(Clone, Debug, PartialEq)]
pub enum Row {
    Entry {
        position: u64,
        note_id: NoteId,
        unid: Unid,
        columns: Vec<Value>,
    },
    Category {
        category: Value,
        count: u64,
    },
}

/// A formula value as JSON: a single value as itself, a list as an array,
/// date-times as RFC 3339 text, errors as null.
pub fn value_json(v: &Value) -> serde_json::Value {
    use serde_json::Value as J;
    let list: Vec<J> = match v {
        Value::Text(l) => l.iter().map(|s| J::from(s.as_str())).collect(),
        Value::Number(l) => l.iter().map(|n| J::from(*n)).collect(),
        Value::DateTime(l) => l
            .iter()
            .map(|t| J::from(nsf::Timestamp(*t).to_rfc3339()))
            .collect(),
        Value::Error(_) => return J::Null,
    };
    if list.len() == 1 {
        list.into_iter().next().unwrap_or(J::Null)
    } else {
        J::Array(list)
    }
}

/// Result of a find by key: where the matches start and how many.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
pub struct Found {
    pub position: u64,
    pub count: u64,
}

/// A handle on a view's index (see the module docs).
pub struct Collection<'v> {
    views: &'v Views,
    db: Arc<Database>,
    compiled: Arc<Compiled>,
    /// The index's sequence when opened (or last updated through this handle).
    pub seq: u64,
    /// Why the index was rebuilt when opened, if it was.
    pub rebuilt: Option<String>,
    /// Whose view of the index this is.
    access: Access,
}

impl<'v> Collection<'v> {
    pub(crate) fn new(
        views: &'v Views,
        db: Arc<Database>,
        compiled: Arc<Compiled>,
        seq: u64,
        rebuilt: Option<String>,
    ) -> Self {
        Collection {
            views,
            db,
            compiled,
            seq,
            rebuilt,
            access: Access::full(),
        }
    }

    /// The collection as `access` sees it: without the entries of
    /// documents it may not read. A collection as opened shows every
    /// entry ([`Access::full`]).
    pub fn seen_by(mut self, access: Access) -> Self {
        self.access = access;
        self
    }

    pub fn name(&self) -> &str {
        &self.compiled.def.name
    }

    pub fn definition(&self) -> &crate::ViewDef {
        &self.compiled.def
    }

    /// Column titles, in order.
    pub fn titles(&self) -> Vec<String> {
        self.compiled
            .def
            .columns
            .iter()
            .map(|c| c.title.clone())
            .collect()
    }

    /// Applies changes made since the index's last sequence.
    pub fn update(&mut self) -> ViewResult<UpdateReport> {
        let r = self.views.update(&self.db, self.name())?;
        self.seq = r.last_seq;
        Ok(r)
    }

    /// Runs `f` on the committed index.
    fn with_state<R>(
        &self,
        f: impl FnOnce(&IndexRead<'_>, &ViewState) -> ViewResult<R>,
    ) -> ViewResult<R> {
        let name = self.name().to_string();
        self.db.index_read(|r| {
            let st = catalog::get(r, r.design_root(), self.db.path(), &name)?
                .ok_or_else(|| Views::no_such(&self.db, &name))?;
            if !st.current() {
                return Err(self.corrupt("the index must be rebuilt before use".into()));
            }
            f(r, &st)
        })
    }

    /// Runs `f` on the committed index with what this collection's caller
    /// sees of it.
    fn with_visible<R>(
        &self,
        f: impl FnOnce(&IndexRead<'_>, &ViewState, &Visible) -> ViewResult<R>,
    ) -> ViewResult<R> {
        self.with_state(|r, st| {
            let visible = Visible::of(r, st, &self.access, &|m| self.corrupt(m))?;
            f(r, st, &visible)
        })
    }

    /// Number of document entries.
    pub fn count(&self) -> ViewResult<u64> {
        self.with_visible(|r, st, visible| visible.len(r, st.entries_root))
    }

    /// Number of entries of documents with `$Readers`, whoever reads: 0
    /// means every caller sees the whole index at O(log n) cost.
    pub fn restricted(&self) -> ViewResult<u64> {
        self.with_state(restrict::count)
    }

    /// Reads up to `count` rows starting at `start`, forward or backward,
    /// with category rows if `categories` and the view is categorized.
    pub fn read(
        &self,
        start: &Start,
        count: usize,
        backward: bool,
        categories: bool,
    ) -> ViewResult<Vec<Row>> {
        let categories = categories && self.compiled.categorized();
        self.with_visible(|r, st, visible| {
            let root = st.entries_root;
            let entries = match start {
                Start::Position(p) => {
                    let raw = visible.raw_position(r, root, *p)?;
                    match btree::nth(r, root, raw)? {
                        Some((k, _)) => from_key(r, root, &k, backward),
                        None => return Ok(Vec::new()),
                    }
                }
                Start::Key { key, prefix } => {
                    let p = self.search_prefix(key, *prefix)?;
                    if backward {
                        // From the last entry matching the prefix.
                        let hi = successor(&p);
                        Box::new(btree::range_rev(r, root, Bound::Unbounded, bound_of(&hi)))
                    } else {
                        from_key(r, root, &p, false)
                    }
                }
            };
            let mut pos = match start {
                Start::Position(p) => Some(*p),
                Start::Key { .. } => None,
            };
            let mut rows = Vec::with_capacity(count.min(1024));
            let mut last_cat: Option<Vec<u8>> = None;
            let shown = entries.filter(|kv| kv.as_ref().map_or(true, |(k, _)| !visible.hides(k)));
            for kv in shown.take(count) {
                let (k, v) = kv?;
                if categories {
                    let cat = category_prefix(&k).to_vec();
                    if last_cat.as_ref() != Some(&cat) {
                        rows.push(self.category_row(r, root, visible, &cat, &v)?);
                        last_cat = Some(cat);
                    }
                }
                let here = match pos {
                    Some(p) => p,
                    None => visible.position_of(r, root, &k)?,
                };
                rows.push(self.entry_row(here, &k, &v)?);
                pos = Some(if backward {
                    here.saturating_sub(1)
                } else {
                    here + 1
                });
            }
            Ok(rows)
        })
    }

    /// The category row for the category `cat` of the entry `v`: its
    /// value from that entry, and the number of entries under it.
    fn category_row(
        &self,
        r: &IndexRead<'_>,
        root: storage::PageId,
        visible: &Visible,
        cat: &[u8],
        v: &[u8],
    ) -> ViewResult<Row> {
        let (lo, hi) = prefix_ranks(r, root, cat)?;
        let (_, cols) = self.decode(v)?;
        Ok(Row::Category {
            category: cols.into_iter().next().unwrap_or(Value::Text(vec![])),
            count: hi - lo - visible.hidden_between(cat, &successor(cat)),
        })
    }

    /// Finds the entries whose first sorted column equals (or starts with)
    /// `key`: the position of the first and how many there are.
    pub fn find(&self, key: &str, prefix: bool) -> ViewResult<Option<Found>> {
        let p = self.search_prefix(key, prefix)?;
        self.with_visible(|r, st, visible| {
            let (lo, hi) = prefix_ranks(r, st.entries_root, &p)?;
            let count = hi - lo - visible.hidden_between(&p, &successor(&p));
            // Every entry from `p` up to the first match is hidden.
            let position = visible.position_of(r, st.entries_root, &p)?;
            Ok((count > 0).then_some(Found { position, count }))
        })
    }

    /// The position of a document's (first) entry, if it is in the view.
    pub fn position(&self, unid: Unid) -> ViewResult<Option<u64>> {
        self.with_visible(|r, st, visible| {
            let Some(id) = r.note_id_of(unid)? else {
                return Ok(None);
            };
            let Some(v) = btree::get(r, st.docmap_root, &id.0.to_be_bytes())? else {
                return Ok(None);
            };
            let keys = decode_docmap(&v)
                .ok_or_else(|| self.corrupt(format!("docmap entry of note {id}")))?;
            match keys.first() {
                Some(k) if !visible.hides(k) => {
                    Ok(Some(visible.position_of(r, st.entries_root, k)?))
                }
                _ => Ok(None),
            }
        })
    }

    fn search_prefix(&self, key: &str, prefix: bool) -> ViewResult<Vec<u8>> {
        let sorted = self.compiled.sorted_columns();
        let Some(&first) = sorted.first() else {
            return Err(ViewError::NotSorted {
                db: self.db.path().to_string(),
                name: self.name().to_string(),
            });
        };
        let col = &self.compiled.def.columns[first];
        Ok(search_prefix(
            key,
            col.case_sensitive,
            col.sort == Sort::Desc,
            prefix,
        ))
    }

    fn decode(&self, v: &[u8]) -> ViewResult<(Unid, Vec<Value>)> {
        decode_summary(v).ok_or_else(|| self.corrupt("undecodable entry summary".into()))
    }

    fn entry_row(&self, position: u64, k: &[u8], v: &[u8]) -> ViewResult<Row> {
        let (unid, columns) = self.decode(v)?;
        let id = key_note_id(k).unwrap_or(NoteId(0));
        Ok(Row::Entry {
            position,
            note_id: id,
            unid,
            columns,
        })
    }

    fn corrupt(&self, reason: String) -> ViewError {
        ViewError::Corrupt {
            db: self.db.path().to_string(),
            name: self.name().to_string(),
            reason,
        }
    }
}

/// The entries from `key` (inclusive) on, in reading order.
fn from_key<'r>(
    r: &'r IndexRead<'_>,
    root: storage::PageId,
    key: &[u8],
    backward: bool,
) -> Box<dyn Iterator<Item = EntryResult> + 'r> {
    let from = Bound::Included(key);
    if backward {
        Box::new(btree::range_rev(r, root, Bound::Unbounded, from))
    } else {
        Box::new(btree::range(r, root, from, Bound::Unbounded))
    }
}

/// Positions of the first key starting with `p` and of the first key
/// after all of them.
fn prefix_ranks(r: &IndexRead<'_>, root: storage::PageId, p: &[u8]) -> ViewResult<(u64, u64)> {
    let succ = successor(p);
    if succ.is_empty() {
        return Ok((btree::rank(r, root, p)?, btree::len(r, root)?));
    }
    Ok(btree::rank_pair(r, root, p, &succ)?)
}

/// The smallest byte string greater than every string starting with `p`
/// (empty: unbounded).
fn successor(p: &[u8]) -> Vec<u8> {
    let mut s = p.to_vec();
    while let Some(last) = s.pop() {
        if last < 0xFF {
            s.push(last + 1);
            return s;
        }
    }
    s
}

fn bound_of(hi: &[u8]) -> Bound<&[u8]> {
    if hi.is_empty() {
        Bound::Unbounded
    } else {
        Bound::Excluded(hi)
    }
}

/// The bytes of a key that encode its first column (the category).
fn category_prefix(key: &[u8]) -> &[u8] {
    let body = &key[..key.len().saturating_sub(4)];
    // The first column's encoding ends at its list terminator. It may be
    // inverted (descending): detect by the first byte's tag range.
    let inverted = body.first().is_some_and(|&b| b >= 0x80);
    let norm = |b: u8| if inverted { !b } else { b };
    let mut i = 0;
    while i < body.len() {
        match norm(body[i]) {
            0x00 => return &body[..i + 1],
            0x10 => i += 1,
            0x20 | 0x30 => i += 9,
            0x40 => {
                i += 1;
                while i + 1 < body.len() && !(norm(body[i]) == 0 && norm(body[i + 1]) == 1) {
                    i += if norm(body[i]) == 0 { 2 } else { 1 };
                }
                i += 2;
            }
            _ => return body,
        }
    }
    body
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::collate::{encode_value, invert_from};

    #[test]
    fn category_prefix_finds_the_first_column() {
        for desc in [false, true] {
            let mut k = Vec::new();
            encode_value(&mut k, &Value::Text(vec!["a\0b".into()]), false);
            let n = k.len();
            if desc {
                invert_from(&mut k, 0);
            }
            encode_value(&mut k, &Value::number(3.0), false);
            k.extend_from_slice(&7u32.to_be_bytes());
            assert_eq!(category_prefix(&k).len(), n, "desc {desc}");
        }
    }

    #[test]
    fn successor_bounds_a_prefix() {
        assert_eq!(successor(&[1, 0xFF]), vec![2]);
        assert!(successor(&[0xFF]).is_empty());
    }
}
