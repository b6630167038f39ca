//! Folder changes that belong to somebody else's transaction, and
//! renaming a view or folder.
//!
//! `folder_add` commits a membership change on its own. A caller that
//! stores documents and files them (an IMAP COPY or MOVE: copies made,
//! filed in the destination, originals deleted or taken out of the
//! source) needs all of it in one commit, or a crash between two commits
//! leaves a copy filed nowhere or a message in both folders. So it asks
//! for a [`FolderEdit`] per folder, then applies them inside its own
//! transaction (`nsf::ForeignTxn::index`):
//!
//! ```text
//!   with_folder_edits(db, [dest, source], |edits|      updater locks held,
//!       db.foreign_batch(staged, |t| {                 indexes rebuilt first
//!           t.put(copy) ...                            if they had to be,
//!           edits[0].add(&mut t.index(), copies)       unlogged ones marked
//!           edits[1].remove(&mut t.index(), originals) dirty (I14)
//!       }))                                            ─▶ one commit (I4, I56)
//! ```
//!
//! A rename is one index transaction too: the catalog entry moves to the
//! new name with its trees, and the design note is replaced by one naming
//! the new name, so a crash leaves the old name or the new one, never
//! both or neither.

use crate::catalog;
use crate::def::{Compiled, Kind, ViewDef};
use crate::views::{change_members, forget_view, Views};
use crate::{ViewError, ViewResult};
use nsf::{Database, IndexTxn, NoteId, Unid};
use parking_lot::Mutex;
use std::sync::Arc;
use storage::btree;

/// One folder's membership, to change inside another transaction (see
/// the module docs). Valid while [`Views::with_folder_edits`] runs.
pub struct FolderEdit {
    path: String,
    name: String,
    compiled: Arc<Compiled>,
}

impl FolderEdit {
    /// Files documents in the folder, in `tx`. Documents `tx` does not
    /// have (or has deleted) are skipped.
    pub fn add(&self, tx: &mut IndexTxn<'_, '_>, unids: &[Unid]) -> ViewResult<()> {
        change_members(tx, &self.path, &self.name, &self.compiled, unids, true)
    }

    /// Takes documents out of the folder, in `tx` (they stay in the
    /// database).
    pub fn remove(&self, tx: &mut IndexTxn<'_, '_>, unids: &[Unid]) -> ViewResult<()> {
        change_members(tx, &self.path, &self.name, &self.compiled, unids, false)
    }

    pub fn name(&self) -> &str {
        &self.name
    }
}

impl Views {
    /// Runs `f` with a [`FolderEdit`] for each of `names` (in that order),
    /// holding each folder's updater lock while it runs, so `f` can change
    /// their membership inside a transaction of its own. An index that
    /// must be rebuilt is rebuilt first, as `folder_add` does.
    pub fn with_folder_edits<R>(
        &self,
        db: &Arc<Database>,
        names: &[&str],
        f: impl FnOnce(Vec<FolderEdit>) -> R,
    ) -> ViewResult<R> {
        for name in names {
            let st = self.state(db, name)?;
            if let Some(why) = self.rebuild_reason(db, name, &st) {
                tracing::info!(db = %db.path(), folder = %name, "building folder index: {why}");
                self.rebuild(db, name)?;
            }
        }
        let mut keys: Vec<String> = names.iter().map(|n| n.to_lowercase()).collect();
        keys.sort();
        keys.dedup();
        // Always taken in name order: two callers never wait on each other.
        let locks: Vec<_> = keys.iter().map(|k| self.lock(db, k)).collect();
        let _held: Vec<_> = locks.iter().map(|l| l.lock()).collect();
        let mut edits = Vec::with_capacity(names.len());
        for name in names {
            let st = self.state(db, name)?;
            let compiled = self.compiled(db, &st)?;
            if compiled.def.kind != Kind::Folder {
                return Err(ViewError::NotAFolder {
                    name: name.to_string(),
                });
            }
            self.mark_dirty(db, name)?;
            edits.push(FolderEdit {
                path: db.path().to_string(),
                name: name.to_string(),
                compiled,
            });
        }
        Ok(f(edits))
    }

    /// Whether the folder `name` holds the document with note id `id`.
    pub fn folder_holds(&self, db: &Database, name: &str, id: NoteId) -> ViewResult<bool> {
        let st = self.state(db, name)?;
        if !st.folder {
            return Err(ViewError::NotAFolder {
                name: name.to_string(),
            });
        }
        Ok(db
            .index_read(|r| btree::get(r, st.members_root, &id.0.to_be_bytes()))?
            .is_some())
    }

    /// Renames views or folders (`(from, to)` pairs, applied in order),
    /// indexes and members included, in one transaction (see the module
    /// docs): all of them or none. A name another view or folder has is
    /// refused; a change of case only is allowed.
    pub fn rename(&self, db: &Arc<Database>, pairs: &[(String, String)]) -> ViewResult<()> {
        let mut keys: Vec<String> = pairs
            .iter()
            .flat_map(|(a, b)| [a.to_lowercase(), b.to_lowercase()])
            .collect();
        keys.sort();
        keys.dedup();
        let locks: Vec<_> = keys.iter().map(|k| self.lock(db, k)).collect();
        let _held: Vec<_> = locks.iter().map(|l| l.lock()).collect();
        let (path, todo) = (db.path().to_string(), pairs.to_vec());
        // A refusal must undo the renames before it: the transaction
        // fails, and the refusal itself comes back through `why`.
        let why: Arc<Mutex<Option<ViewError>>> = Arc::default();
        let said = why.clone();
        let renamed = db.index_write(move |tx| -> nsf::NsfResult<Vec<NoteId>> {
            let mut old = Vec::with_capacity(todo.len());
            for (from, to) in &todo {
                match rename_in(tx, &path, from, to) {
                    Ok(n) => old.push(n),
                    Err(ViewError::Nsf(e)) => return Err(e),
                    Err(e) => {
                        let text = e.to_string();
                        *said.lock() = Some(e);
                        return Err(nsf::NsfError::Invalid(text));
                    }
                }
            }
            Ok(old)
        });
        let old_notes = match renamed {
            Ok(n) => n,
            Err(e) => return Err(why.lock().take().unwrap_or(ViewError::Nsf(e))),
        };
        for ((from, _), note) in pairs.iter().zip(old_notes) {
            forget_view(db, from, note);
        }
        Ok(())
    }
}

/// The rename's transaction: answers the old design note's id.
fn rename_in(tx: &mut IndexTxn<'_, '_>, path: &str, from: &str, to: &str) -> ViewResult<NoteId> {
    let missing = || ViewError::NoSuchView {
        db: path.to_string(),
        name: from.to_string(),
    };
    let mut st = catalog::get(&*tx, tx.design_root(), path, from)?.ok_or_else(missing)?;
    let same_key = catalog::name_key(from) == catalog::name_key(to);
    if !same_key && catalog::get(&*tx, tx.design_root(), path, to)?.is_some() {
        return Err(ViewError::ViewExists {
            db: path.to_string(),
            name: to.to_string(),
        });
    }
    let note = tx.note(st.design_note)?.ok_or_else(missing)?;
    let mut def = ViewDef::from_note(&note)?;
    def.name = to.to_string();
    def.check_new()?;
    let items = def.to_items()?;
    let old_note = st.design_note;
    tx.delete_note(old_note)?;
    st.design_note = tx.create_note(items)?.note_id;
    let mut root = tx.design_root();
    btree::remove(tx, &mut root, &catalog::name_key(from))?;
    tx.set_design_root(root);
    let root = catalog::put(tx, tx.design_root(), to, &st)?;
    tx.set_design_root(root);
    Ok(old_note)
}
