//! The view-index roots inside design catalog entries.
//!
//! Compact must know every page reference in the file (I40), and the
//! design catalog's entries hold the roots of the view indexes. Their
//! layout is part of the file format (design.md §2.6; the views crate
//! owns the meaning, `views/src/catalog.rs`), so this reads and writes
//! only the root fields and the two flags compact needs, and leaves the
//! rest of each 64-byte entry as it is.

use storage::PageId;

const LEN: usize = 64;
const FLAGS: usize = 5;
const FLAG_LOGGED: u8 = 1;
const FLAG_BUILT: u8 = 2;
const ENTRIES: usize = 8;
const DOCMAP: usize = 12;
const MEMBERS: usize = 16;
const OWNED: usize = 20;
const DIRTY_SESSION: usize = 32;
const RESTRICTED: usize = 48;

/// One catalog entry's bytes.
#[derive(Clone)]
pub(crate) struct ViewEntry(pub Vec<u8>);

impl ViewEntry {
    pub fn parse(v: &[u8]) -> Option<ViewEntry> {
        (v.len() == LEN).then(|| ViewEntry(v.to_vec()))
    }

    fn root(&self, at: usize) -> PageId {
        PageId(u32::from_le_bytes([
            self.0[at],
            self.0[at + 1],
            self.0[at + 2],
            self.0[at + 3],
        ]))
    }

    fn set_root(&mut self, at: usize, p: PageId) {
        self.0[at..at + 4].copy_from_slice(&p.0.to_le_bytes());
    }

    /// Whether its index trees are logged (else the owned tree lists
    /// their pages, I14).
    pub fn logged(&self) -> bool {
        self.0[FLAGS] & FLAG_LOGGED != 0
    }

    /// The roots of trees that are walked (logged ones, and the members
    /// tree, always logged), with their offsets.
    pub fn walked_roots(&self) -> Vec<(usize, PageId)> {
        let mut at = vec![MEMBERS, OWNED];
        if self.logged() {
            at = vec![ENTRIES, DOCMAP, MEMBERS, RESTRICTED];
        }
        at.into_iter()
            .map(|o| (o, self.root(o)))
            .filter(|(_, p)| !p.is_none())
            .collect()
    }

    /// The owned tree of an unlogged index (page ids as u32 BE keys).
    pub fn owned_root(&self) -> Option<PageId> {
        let p = self.root(OWNED);
        (!self.logged() && !p.is_none()).then_some(p)
    }

    pub fn replace_root(&mut self, at: usize, p: PageId) {
        self.set_root(at, p);
    }

    /// Forgets an unlogged index: no trees but an empty owned tree
    /// (`owned`), not built, not dirty; the views layer rebuilds it on
    /// next use, as after a crash (I14).
    pub fn reset_unlogged(&mut self, owned: PageId) {
        for at in [ENTRIES, DOCMAP, RESTRICTED] {
            self.set_root(at, PageId::NONE);
        }
        self.set_root(OWNED, owned);
        self.0[FLAGS] &= !FLAG_BUILT;
        self.0[DIRTY_SESSION..DIRTY_SESSION + 8].fill(0);
    }
}
