//! A database's side of the attachment store (design.md §2.9): its
//! reference counts as committed (read by sweeps, I39), the check that
//! they equal the references its notes hold (I38), and what the store
//! saves it (`db info`).

use super::Database;
use crate::dbcore::Committed;
use crate::records::decode_note_value;
use crate::store::refs::{self, note_refs, RefEntry};
use crate::{ContentHash, NsfResult};
use std::collections::BTreeMap;
use std::ops::Bound;
use storage::btree;

/// What `check_store_refs` found.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct StoreRefCheck {
    /// Stored attachment items of the notes.
    pub references: u64,
    /// Objects whose recorded count differs from the notes' references:
    /// (object, references found in notes, count recorded).
    pub mismatches: Vec<(String, u32, u32)>,
    /// Objects referenced but not in the store.
    pub missing_objects: Vec<String>,
}

impl StoreRefCheck {
    pub fn is_ok(&self) -> bool {
        self.mismatches.is_empty() && self.missing_objects.is_empty()
    }
}

/// Attachment bytes of a database: as its documents see them and as the
/// store keeps them.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct AttachmentUsage {
    /// Stored attachment items (references to the store).
    pub references: u64,
    /// Distinct objects referenced.
    pub objects: u64,
    /// Original bytes of every reference (duplicates counted each time).
    pub logical_bytes: u64,
    /// Stored bytes of the distinct objects (compressed where it helped).
    pub stored_bytes: u64,
}

impl Database {
    /// The objects this database references, with their counts, as
    /// committed (I38).
    pub fn store_references(&self) -> NsfResult<Vec<(ContentHash, RefEntry)>> {
        let h = self.state.read();
        refs::all(&Committed(&self.core), &h)
    }

    /// Counts the stored references of every note (live or stub) and
    /// compares them with the reference tree, and checks that each
    /// object referenced is in the store (I37, I38).
    pub fn check_store_refs(&self) -> NsfResult<StoreRefCheck> {
        let (found, recorded) = {
            let h = self.state.read();
            let store = Committed(&self.core);
            let mut found: BTreeMap<ContentHash, u32> = BTreeMap::new();
            for kv in btree::range(&store, h.note_root, Bound::Unbounded, Bound::Unbounded) {
                let (_, v) = kv?;
                for (hash, _, _) in note_refs(&decode_note_value(&store, &v)?) {
                    *found.entry(hash).or_default() += 1;
                }
            }
            (found, refs::all(&store, &h)?)
        };
        let mut report = StoreRefCheck {
            references: found.values().map(|&n| u64::from(n)).sum(),
            ..StoreRefCheck::default()
        };
        let recorded: BTreeMap<ContentHash, u32> =
            recorded.into_iter().map(|(h, e)| (h, e.count)).collect();
        let hashes: std::collections::BTreeSet<&ContentHash> =
            found.keys().chain(recorded.keys()).collect();
        for h in hashes {
            let (f, r) = (
                found.get(h).copied().unwrap_or(0),
                recorded.get(h).copied().unwrap_or(0),
            );
            if f != r {
                report.mismatches.push((h.to_hex(), f, r));
            }
            if f > 0 && !self.core.store.has_object(h) {
                report.missing_objects.push(h.to_hex());
            }
        }
        Ok(report)
    }

    /// What the store holds for this database (`folio db info`).
    pub fn attachment_usage(&self) -> NsfResult<AttachmentUsage> {
        let mut u = AttachmentUsage::default();
        for (_, e) in self.store_references()? {
            u.references += u64::from(e.count);
            u.objects += 1;
            u.logical_bytes += u64::from(e.count) * e.size;
            u.stored_bytes += e.stored_size;
        }
        Ok(u)
    }
}
