//! The consistency check (`folio db check`): every tree's invariants,
//! every note decoding, agreement between the note table, the UNID
//! index and the change-sequence index, and no page both referenced and
//! free (the leaked ones are counted, I40). It reads one consistent state
//! under the shared lock (I13).

use super::Database;
use crate::dbcore::Committed;
use crate::records::{decode_note_value, lookup_unid};
use crate::{NsfError, NsfResult};
use std::collections::HashSet;
use std::ops::Bound;
use storage::btree;

/// Result of a consistency check.
#[derive(Clone, Debug, Default, serde::Serialize)]
pub struct CheckReport {
    pub notes: u64,
    pub stubs: u64,
    pub pages_in_trees: u64,
    pub free_pages: u64,
    pub attachment_pages: u64,
    /// Pages neither referenced nor free: leaked by commits a crash or an
    /// error interrupted; compact reclaims them (I40).
    pub leaked_pages: u64,
}

impl Database {
    /// Full consistency check: every tree's invariants, note decoding, and
    /// agreement between the note table, the UNID index and the seq index.
    pub fn check(&self) -> NsfResult<CheckReport> {
        let h = self.state.read();
        let store = Committed(&self.core);
        let mut report = CheckReport::default();
        for root in [h.note_root, h.unid_root, h.seq_root] {
            report.pages_in_trees += btree::check(&store, root)?.pages;
        }
        if h.repl_root != storage::PageId::NONE {
            report.pages_in_trees += btree::check(&store, h.repl_root)?.pages;
        }
        let corrupt = |reason: String| {
            NsfError::Storage(storage::StorageError::corrupt(
                &self.core.path,
                h.note_root,
                reason,
            ))
        };
        let mut seqs = HashSet::new();
        for kv in btree::range(&store, h.note_root, Bound::Unbounded, Bound::Unbounded) {
            let (k, v) = kv?;
            let note = decode_note_value(&store, &v)?;
            if k != note.note_id.0.to_be_bytes() {
                return Err(corrupt(format!(
                    "note table key {k:?} holds note {}",
                    note.note_id
                )));
            }
            if lookup_unid(&store, &h, note.oid.unid)? != Some(note.note_id) {
                return Err(corrupt(format!(
                    "UNID index disagrees for note {}",
                    note.note_id
                )));
            }
            let s = btree::get(&store, h.seq_root, &note.change_seq.0.to_be_bytes())?;
            if s.as_deref() != Some(&note.note_id.0.to_be_bytes()[..]) {
                return Err(corrupt(format!(
                    "seq index disagrees for note {}",
                    note.note_id
                )));
            }
            seqs.insert(note.change_seq);
            for a in note.attachments() {
                report.attachment_pages += a.extents.iter().map(|e| u64::from(e.1)).sum::<u64>();
            }
            if note.deleted {
                report.stubs += 1;
            } else {
                report.notes += 1;
            }
        }
        let unids = btree::len(&store, h.unid_root)?;
        let seq_entries = btree::len(&store, h.seq_root)?;
        let total = report.notes + report.stubs;
        if unids != total || seq_entries != total || seqs.len() as u64 != total {
            return Err(corrupt(format!(
                "index sizes differ: notes {total}, UNIDs {unids}, seqs {seq_entries}"
            )));
        }
        let free = h.free.pages(&store)?;
        report.free_pages = free.len() as u64;
        let refs = crate::compact::referenced(&store, &h)?;
        if let Some(p) = free.iter().find(|p| refs.contains(&p.0)) {
            return Err(corrupt(format!("{p} is both referenced and free")));
        }
        if let Some(p) = free.iter().find(|p| p.0 >= h.page_count) {
            return Err(corrupt(format!("free {p} lies past the page count")));
        }
        if let Some(p) = refs.range(h.page_count..).next() {
            return Err(corrupt(format!(
                "page {p} is referenced past the page count"
            )));
        }
        report.leaked_pages =
            u64::from(h.page_count).saturating_sub(refs.len() as u64 + report.free_pages);
        Ok(report)
    }
}
