//! Entries that a `$Readers` item restricts, and an index as one caller
//! sees it.
//!
//! A document with a `$Readers` item may be read only by the callers that
//! item (or its `$Authors` item) names. A view must show each caller the
//! index as if the documents it may not read were not there: not only
//! their rows but their share of the total, of category counts and of
//! positions — and a category whose entries are all hidden not at all,
//! since its value is an item the caller may not read.
//!
//! Beside the entries, each index keeps a **restricted** tree: one record
//! per entry of a restricted document, under the entry's own collation
//! key, saying who may read it. It is maintained with the entries in the
//! same index transactions (or bulk-loaded with them by a rebuild), so it
//! is logged exactly when they are, and its length is the number of
//! restricted entries. Reading as a caller:
//!
//! ```text
//!  caller not subject to $Readers (server administrator) ─┐
//!  or restricted tree empty (most views: one page read)   ├─▶ Visible::All
//!                                                         ─┘   the counted B+tree as is, O(log n)
//!  otherwise: scan the r records, keep the h keys the caller may not read
//!  (sorted, in memory for this request) ─▶ Visible::Hiding
//!     total                 = len − h
//!     position of key k     = rank(k) − #(hidden < k)
//!     entries in [lo, hi)   = rank(hi) − rank(lo) − #(hidden in [lo, hi))
//!     entry at position p   = raw position p + j, where j hidden keys come
//!                             before it: rank(hidden_j) − j never decreases
//!                             in j, so j is a binary search of O(log h) ranks
//! ```
//!
//! A read then costs O(log n) page reads when nothing is restricted for
//! the caller, and otherwise O(r) more work — the restricted records
//! scanned and decided from their names, tens to a leaf page — plus
//! O(log h · log n) for a position, and O(h) keys of memory.
//!
//! A record holds the entries of the document's `$Readers` and `$Authors`
//! items as they were when the index took the document in (design.md
//! §2.6). If they do not fit beside the key, the record says so instead,
//! and that entry is decided by reading the note.

use crate::catalog::ViewState;
use crate::collate::key_note_id;
use crate::{ViewError, ViewResult};
use nsf::{Access, IndexRead, ReadRestriction};
use std::ops::Bound;
use storage::{btree, PageId};

/// Record tag: the names follow (u16 length, bytes; each).
const NAMES: u8 = 0;
/// Record tag: too many names to keep; decide by reading the note.
const SEE_NOTE: u8 = 1;
/// Most bytes of names a record holds (a key is at most 904 bytes, and a
/// key and its value at most `btree::MAX_ENTRY`).
const NAMES_BUDGET: usize = 1024;

/// The restricted-tree record of an entry of a document restricted as
/// `r` says.
pub fn encode(r: &ReadRestriction) -> Vec<u8> {
    let mut v = vec![NAMES];
    for n in &r.names {
        if v.len() - 1 + 2 + n.len() > NAMES_BUDGET {
            return vec![SEE_NOTE];
        }
        // Within the budget, so the length fits.
        v.extend_from_slice(&(n.len() as u16).to_le_bytes());
        v.extend_from_slice(n.as_bytes());
    }
    v
}

/// What a record says; `None` if it is malformed.
enum Record {
    Names(ReadRestriction),
    SeeNote,
}

fn decode(v: &[u8]) -> Option<Record> {
    match v.split_first()? {
        (&SEE_NOTE, []) => Some(Record::SeeNote),
        (&NAMES, mut rest) => {
            let mut names = Vec::new();
            while !rest.is_empty() {
                let len = usize::from(u16::from_le_bytes(rest.get(..2)?.try_into().ok()?));
                let name = rest.get(2..2 + len)?;
                names.push(String::from_utf8_lossy(name).into_owned());
                rest = &rest[2 + len..];
            }
            Some(Record::Names(ReadRestriction { names }))
        }
        _ => None,
    }
}

/// Number of restricted entries in an index.
pub fn count(r: &IndexRead<'_>, st: &ViewState) -> ViewResult<u64> {
    Ok(btree::len(r, st.restricted_root)?)
}

/// Which entries of an index one caller sees (see the module docs).
pub enum Visible {
    /// Every entry.
    All,
    /// All but these keys, sorted.
    Hiding(Vec<Vec<u8>>),
}

impl Visible {
    /// What `access` sees of the index `st`. `corrupt` names a damaged
    /// record.
    pub fn of(
        r: &IndexRead<'_>,
        st: &ViewState,
        access: &Access,
        corrupt: &dyn Fn(String) -> ViewError,
    ) -> ViewResult<Visible> {
        if access.sees_every_document() || count(r, st)? == 0 {
            return Ok(Visible::All);
        }
        let mut hidden = Vec::new();
        let all = btree::range(r, st.restricted_root, Bound::Unbounded, Bound::Unbounded);
        for kv in all {
            let (k, v) = kv?;
            let readable = match decode(&v) {
                Some(Record::Names(names)) => access.can_read_restricted(&names),
                Some(Record::SeeNote) => match key_note_id(&k) {
                    Some(id) => r.note(id)?.is_some_and(|n| access.can_read(&n)),
                    None => false,
                },
                None => return Err(corrupt(format!("restricted entry record {v:?}"))),
            };
            if !readable {
                hidden.push(k);
            }
        }
        Ok(if hidden.is_empty() {
            Visible::All
        } else {
            Visible::Hiding(hidden)
        })
    }

    /// Whether the entry with `key` is hidden.
    pub fn hides(&self, key: &[u8]) -> bool {
        match self {
            Visible::All => false,
            Visible::Hiding(h) => h.binary_search_by(|x| x.as_slice().cmp(key)).is_ok(),
        }
    }

    /// Hidden entries with keys before `key`.
    fn hidden_below(&self, key: &[u8]) -> u64 {
        match self {
            Visible::All => 0,
            Visible::Hiding(h) => h.partition_point(|x| x.as_slice() < key) as u64,
        }
    }

    /// Hidden entries with keys from `lo` up to `hi` (exclusive; empty:
    /// no upper bound).
    pub fn hidden_between(&self, lo: &[u8], hi: &[u8]) -> u64 {
        let below_hi = match self {
            Visible::Hiding(h) if hi.is_empty() => h.len() as u64,
            _ => self.hidden_below(hi),
        };
        below_hi - self.hidden_below(lo)
    }

    /// Number of entries the caller sees in the tree at `root`.
    pub fn len(&self, r: &IndexRead<'_>, root: PageId) -> ViewResult<u64> {
        Ok(btree::len(r, root)? - self.hidden_between(&[], &[]))
    }

    /// The caller's position of the (visible) entry with `key`, or of
    /// where it would be.
    pub fn position_of(&self, r: &IndexRead<'_>, root: PageId, key: &[u8]) -> ViewResult<u64> {
        Ok(btree::rank(r, root, key)? - self.hidden_below(key))
    }

    /// The raw position (in the whole index) of the entry the caller sees
    /// at position `p`; past the end if there is none.
    pub fn raw_position(&self, r: &IndexRead<'_>, root: PageId, p: u64) -> ViewResult<u64> {
        let Visible::Hiding(h) = self else {
            return Ok(p);
        };
        // j = the number of hidden keys before the target: the first j
        // with rank(h[j]) − j > p (module docs).
        let (mut lo, mut hi) = (0usize, h.len());
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            if btree::rank(r, root, &h[mid])? - mid as u64 <= p {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        Ok(p + lo as u64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(l: &[&str]) -> ReadRestriction {
        ReadRestriction {
            names: l.iter().map(|s| s.to_string()).collect(),
        }
    }

    #[test]
    fn records_round_trip_and_long_lists_defer_to_the_note() {
        for r in [names(&[]), names(&["alice", "[Sales]", "*", ""])] {
            match decode(&encode(&r)) {
                Some(Record::Names(back)) => assert_eq!(back, r),
                _ => panic!("{r:?} did not round-trip"),
            }
        }
        let many: Vec<String> = (0..200).map(|i| format!("user-number-{i}")).collect();
        let long = ReadRestriction { names: many };
        assert_eq!(encode(&long), vec![SEE_NOTE]);
        assert!(matches!(decode(&[SEE_NOTE]), Some(Record::SeeNote)));
        for bad in [&[][..], &[2], &[SEE_NOTE, 0], &[NAMES, 5, 0, b'a']] {
            assert!(decode(bad).is_none(), "{bad:?}");
        }
    }

    #[test]
    fn hidden_keys_count_below_and_between() {
        let v = Visible::Hiding(vec![vec![2], vec![4], vec![6]]);
        assert!(v.hides(&[4]) && !v.hides(&[5]));
        assert_eq!(v.hidden_below(&[4]), 1);
        assert_eq!(v.hidden_between(&[3], &[7]), 2);
        assert_eq!(v.hidden_between(&[3], &[]), 2);
        assert_eq!(v.hidden_between(&[], &[]), 3);
        assert_eq!(Visible::All.hidden_between(&[], &[]), 0);
    }
}
