//! Deleting a view or folder, and freeing an index's trees.
//!
//! A view is three things in the database file: its catalog entry, its
//! index trees and its design note. Deleting it removes all three in one
//! index transaction, which commits through the log like any write (I2,
//! I3, I4): a crash before the commit record is durable leaves the view
//! whole, one after leaves nothing of it, never a catalog entry without
//! its note or trees that nobody owns. The design note becomes a deletion
//! stub that keeps `$DesignType`, so it stays out of views and listings.
//! The name is then free: defining it again creates a fresh note and
//! fresh, empty trees, built on first use.
//!
//! ```text
//!   index transaction (one log batch)
//!     catalog entry  ── removed
//!     trees          ── logged: entries, docmap, restricted freed by walking them
//!                       unlogged (I14): every page the owned tree lists, then it
//!                       folders: the members tree (always logged)
//!     design note    ── deletion stub (IndexTxn::delete_note)
//! ```
//!
//! An unlogged index's trees are freed from its owned tree, never by
//! walking them: after a crash they may be inconsistent (I14), and the
//! owned tree (logged) is what says which pages are theirs.

use crate::catalog::{self, ViewState};
use crate::views::{forget_view, Views};
use crate::{ViewError, ViewResult};
use nsf::{Database, IndexTxn, NoteId};
use std::sync::Arc;
use storage::{btree, PageId};

impl Views {
    /// Deletes a view or folder: its catalog entry, its index trees and
    /// its design note, in one logged transaction. Durable when it
    /// returns (I2); a crash before leaves the view as it was, and a
    /// failure changes nothing. An unknown name is
    /// [`ViewError::NoSuchView`].
    pub fn delete(&self, db: &Arc<Database>, name: &str) -> ViewResult<()> {
        let lock = self.lock(db, name);
        let _g = lock.lock();
        let (path, vname) = (db.path().to_string(), name.to_string());
        let design_note = db.index_write(move |tx| -> nsf::NsfResult<ViewResult<NoteId>> {
            Ok(delete_in(tx, &path, &vname))
        })??;
        forget_view(db, name, design_note);
        Ok(())
    }
}

fn delete_in(tx: &mut IndexTxn<'_, '_>, path: &str, name: &str) -> ViewResult<NoteId> {
    let st =
        catalog::get(&*tx, tx.design_root(), path, name)?.ok_or_else(|| ViewError::NoSuchView {
            db: path.to_string(),
            name: name.to_string(),
        })?;
    free_trees(tx, name, &st)?;
    if !st.members_root.is_none() {
        btree::free_all(tx, st.members_root)?;
    }
    let mut root = tx.design_root();
    btree::remove(tx, &mut root, &catalog::name_key(name))?;
    tx.set_design_root(root);
    // A catalog entry whose note is gone (damage) is removed all the same:
    // deleting is the remedy for it.
    if tx.note(st.design_note)?.is_some_and(|n| !n.deleted) {
        tx.delete_note(st.design_note)?;
    }
    Ok(st.design_note)
}

/// Frees an index's entries, docmap and restricted trees: by walking them
/// if they are logged, else every page the owned tree lists, and the
/// owned tree itself (see the module docs). The members tree of a folder
/// is not the index's: it stays.
pub(crate) fn free_trees(tx: &mut IndexTxn<'_, '_>, name: &str, st: &ViewState) -> ViewResult<()> {
    if st.logged() {
        for root in [st.entries_root, st.docmap_root, st.restricted_root] {
            if !root.is_none() {
                btree::free_all(tx, root)?;
            }
        }
        return Ok(());
    }
    let owned: Vec<PageId> = btree::range(
        &*tx,
        st.owned_root,
        std::ops::Bound::Unbounded,
        std::ops::Bound::Unbounded,
    )
    .map(|kv| {
        let (k, _) = kv?;
        let id: [u8; 4] = k.as_slice().try_into().map_err(|_| ViewError::Corrupt {
            db: tx.path().to_string(),
            name: name.to_string(),
            reason: format!("owned-pages key of {} bytes", k.len()),
        })?;
        Ok(PageId(u32::from_be_bytes(id)))
    })
    .collect::<ViewResult<_>>()?;
    tx.free_many(&owned)?;
    btree::free_all(tx, st.owned_root)?;
    Ok(())
}
