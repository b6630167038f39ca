//! The design catalog: one B+tree per database (root in the header's
//! `design_root`) mapping a view's name, lowercased, to the state of its
//! index. The catalog is always logged, so after restart recovery it says
//! exactly which trees belong to which view and whether they can be
//! trusted (I14).
//!
//! ```text
//!   state (little-endian, 64 bytes)
//!    0 design note id u32   4 kind u8   5 flags u8   6 reserved u16
//!    8 entries root u32    12 docmap root u32   16 members root u32
//!   20 owned root u32      24 last seq u64      32 dirty session u64
//!   40 last update µs i64  48 restricted root u32  52 reserved 12
//! ```
//!
//! Per view, the trees are:
//! - **entries**: collation key → summary (the index itself);
//! - **docmap**: note id → the keys of that note's entries, to find and
//!   remove them when the note changes;
//! - **members** (folders): note id → nothing; always logged, membership
//!   is user data;
//! - **restricted**: collation key → who may read it, for every entry of
//!   a document with a `$Readers` item (see `restrict`); its length is the
//!   number of restricted entries, 0 for most views, which then need no
//!   per-caller work at all;
//! - **owned** (unlogged views): page id → nothing, every page of the
//!   entries, docmap and restricted trees, so a tree that a crash left
//!   inconsistent can be freed without walking it.
//!
//! A state written before the restricted tree existed reads with a
//! restricted root of 0; such an index is rebuilt before use
//! ([`ViewState::current`]).

use crate::{ViewError, ViewResult};
use nsf::{CleanMark, NoteId};
use storage::{btree, PageId, PageStore, PageStoreMut};

pub const FLAG_LOGGED: u8 = 1;
/// The index has been built at least once.
pub const FLAG_BUILT: u8 = 2;

const STATE_LEN: usize = 64;

/// A view's index state as stored in the catalog.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ViewState {
    pub design_note: NoteId,
    pub folder: bool,
    pub flags: u8,
    pub entries_root: PageId,
    pub docmap_root: PageId,
    pub members_root: PageId,
    pub owned_root: PageId,
    /// Entries of documents with `$Readers`; NONE in a state written
    /// before this tree existed.
    pub restricted_root: PageId,
    /// Every change up to here is reflected in the index.
    pub last_seq: u64,
    /// Non-zero: unlogged pages of this index may have been changed by the
    /// session with this id since they were last known to be on disk.
    pub dirty_session: u64,
    pub last_update: i64,
    /// With `dirty_session` zero: where the unlogged pages stood when
    /// they were last written at a close, durable only once a checkpoint
    /// synced them (`Database::clean_mark_durable`, I14); zero in states
    /// whose pages were synced before they were marked clean.
    pub clean: CleanMark,
}

impl ViewState {
    pub fn logged(&self) -> bool {
        self.flags & FLAG_LOGGED != 0
    }

    pub fn built(&self) -> bool {
        self.flags & FLAG_BUILT != 0
    }

    /// Built, with every tree this version reads (an index built before
    /// the restricted tree existed is not).
    pub fn current(&self) -> bool {
        self.built() && !self.restricted_root.is_none()
    }

    pub fn encode(&self) -> Vec<u8> {
        let mut b = vec![0u8; STATE_LEN];
        b[0..4].copy_from_slice(&self.design_note.0.to_le_bytes());
        b[4] = u8::from(self.folder);
        b[5] = self.flags;
        b[8..12].copy_from_slice(&self.entries_root.0.to_le_bytes());
        b[12..16].copy_from_slice(&self.docmap_root.0.to_le_bytes());
        b[16..20].copy_from_slice(&self.members_root.0.to_le_bytes());
        b[20..24].copy_from_slice(&self.owned_root.0.to_le_bytes());
        b[24..32].copy_from_slice(&self.last_seq.to_le_bytes());
        b[32..40].copy_from_slice(&self.dirty_session.to_le_bytes());
        b[40..48].copy_from_slice(&self.last_update.to_le_bytes());
        b[48..52].copy_from_slice(&self.restricted_root.0.to_le_bytes());
        b[52..60].copy_from_slice(&self.clean.lsn.to_le_bytes());
        b[60..64].copy_from_slice(&self.clean.epoch.to_le_bytes());
        b
    }

    pub fn decode(b: &[u8]) -> Option<ViewState> {
        if b.len() != STATE_LEN || b[4] > 1 {
            return None;
        }
        let u32_at = |i: usize| u32::from_le_bytes(b[i..i + 4].try_into().unwrap());
        let u64_at = |i: usize| u64::from_le_bytes(b[i..i + 8].try_into().unwrap());
        Some(ViewState {
            design_note: NoteId(u32_at(0)),
            folder: b[4] == 1,
            flags: b[5],
            entries_root: PageId(u32_at(8)),
            docmap_root: PageId(u32_at(12)),
            members_root: PageId(u32_at(16)),
            owned_root: PageId(u32_at(20)),
            restricted_root: PageId(u32_at(48)),
            last_seq: u64_at(24),
            dirty_session: u64_at(32),
            last_update: u64_at(40) as i64,
            clean: CleanMark {
                lsn: u64_at(52),
                epoch: u32_at(60),
            },
        })
    }
}

/// The catalog key of a view name.
pub fn name_key(name: &str) -> Vec<u8> {
    name.to_lowercase().into_bytes()
}

/// Reads a view's state; `None` if there is no such view.
pub fn get(
    s: &impl PageStore,
    root: PageId,
    db: &str,
    name: &str,
) -> ViewResult<Option<ViewState>> {
    if root.is_none() {
        return Ok(None);
    }
    match btree::get(s, root, &name_key(name))? {
        None => Ok(None),
        Some(v) => ViewState::decode(&v)
            .map(Some)
            .ok_or_else(|| ViewError::Corrupt {
                db: db.to_string(),
                name: name.to_string(),
                reason: format!("catalog entry of {} bytes", v.len()),
            }),
    }
}

/// Writes a view's state, creating the catalog if needed; returns the
/// (possibly new) catalog root.
pub fn put(
    s: &mut impl PageStoreMut,
    root: PageId,
    name: &str,
    st: &ViewState,
) -> ViewResult<PageId> {
    let mut root = if root.is_none() {
        btree::create(s)?
    } else {
        root
    };
    btree::insert(s, &mut root, &name_key(name), &st.encode())?;
    Ok(root)
}

/// Every catalog entry: (lowercased name, state).
pub fn list(s: &impl PageStore, root: PageId) -> ViewResult<Vec<(String, ViewState)>> {
    let mut out = Vec::new();
    if root.is_none() {
        return Ok(out);
    }
    for kv in btree::range(
        s,
        root,
        std::ops::Bound::Unbounded,
        std::ops::Bound::Unbounded,
    ) {
        let (k, v) = kv?;
        if let Some(st) = ViewState::decode(&v) {
            out.push((String::from_utf8_lossy(&k).into_owned(), st));
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn state_round_trips() {
        let st = ViewState {
            design_note: NoteId(9),
            folder: true,
            flags: FLAG_LOGGED | FLAG_BUILT,
            entries_root: PageId(3),
            docmap_root: PageId(4),
            members_root: PageId(5),
            owned_root: PageId::NONE,
            restricted_root: PageId(6),
            last_seq: 77,
            dirty_session: 0xABCD,
            last_update: -5,
            clean: CleanMark {
                lsn: 1 << 40,
                epoch: 7,
            },
        };
        assert_eq!(ViewState::decode(&st.encode()), Some(st.clone()));
        assert_eq!(ViewState::decode(&[0; 10]), None);
        assert!(st.current());
    }

    #[test]
    fn a_state_from_before_the_restricted_tree_is_not_current() {
        let mut b = ViewState {
            design_note: NoteId(9),
            folder: false,
            flags: FLAG_BUILT,
            entries_root: PageId(3),
            docmap_root: PageId(4),
            members_root: PageId::NONE,
            owned_root: PageId::NONE,
            restricted_root: PageId(6),
            last_seq: 1,
            dirty_session: 0,
            last_update: 0,
            clean: CleanMark::SYNCED,
        }
        .encode();
        b[48..64].fill(0); // reserved, and zero, when such states were written
        let st = ViewState::decode(&b).unwrap();
        assert!(st.built() && !st.current());
    }
}
