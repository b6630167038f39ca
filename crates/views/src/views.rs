//! The views of every open database: creating, opening, updating,
//! rebuilding and closing view indexes.
//!
//! One [`Views`] serves a whole server. It serializes changes to each
//! index (one updater per view; readers never wait for it: they read the
//! committed trees under the database's short shared lock), remembers the
//! unlogged indexes this session has changed, and before the database
//! instance closes (the open-database cache closing it when idle, or the
//! engine closing) flushes them and marks them clean (I14, I19).
//!
//! What it keeps per database (update locks, compiled definitions, which
//! indexes were changed or rebuilt) belongs to the open *instance*
//! (`Database::extension`), never to the path: when the cache closes a
//! database and opens it again, none of it survives to describe a file
//! that may have changed meanwhile.

use crate::catalog::{self, ViewState, FLAG_LOGGED};
use crate::collection::Collection;
use crate::def::{Compiled, Kind, Refresh, ViewDef};
use crate::entries::{apply_note, selects, Contribution, IndexStore, NoteDoc};
use crate::rebuild::{self, RebuildReport};
use crate::{ViewError, ViewResult};
use formula::EvalContext;
use nsf::{Database, IndexTxn, Note, NoteId, Seq, Timestamp, Unid};
use parking_lot::Mutex;
use std::collections::{HashMap, HashSet};
use std::path::PathBuf;
use std::sync::Arc;
use storage::{btree, Backend, PageId};

/// Notes read and applied per index transaction during an update.
const UPDATE_CHUNK: usize = 512;

/// Settings of the views layer.
#[derive(Clone, Debug)]
pub struct ViewConfig {
    /// Where rebuilds put their temporary sort files (`view_rebuild_dir`).
    pub rebuild_dir: PathBuf,
    /// Memory a rebuild may use for sorting (`view_rebuild_memory`).
    pub rebuild_memory: usize,
}

impl Default for ViewConfig {
    fn default() -> Self {
        ViewConfig {
            rebuild_dir: std::env::temp_dir(),
            rebuild_memory: 64 << 20,
        }
    }
}

/// Every view of every database (see the module docs).
pub struct Views {
    pub(crate) backend: Arc<dyn Backend>,
    pub(crate) config: ViewConfig,
    /// Identifies this process's changes to unlogged indexes (I14).
    session: u64,
}

/// What the views layer keeps for one open instance of a database (module
/// docs); views are keyed by lowercased name.
#[derive(Default)]
struct DbViews {
    /// One updater per view.
    locks: Mutex<HashMap<String, Arc<Mutex<()>>>>,
    /// Compiled definitions by design note.
    defs: Mutex<HashMap<NoteId, Arc<Compiled>>>,
    /// Indexes rebuilt since this instance found its file unclean (I12).
    rebuilt_unclean: Mutex<HashSet<String>>,
    /// Unlogged indexes changed, by the session that changed them, to
    /// mark clean before the instance closes; a session is here exactly
    /// while a close hook of it is registered.
    dirtied: Mutex<HashMap<u64, HashSet<String>>>,
}

impl DbViews {
    fn of(db: &Database) -> Arc<DbViews> {
        db.extension(DbViews::default)
    }

    fn lock(&self, name: &str) -> Arc<Mutex<()>> {
        self.locks
            .lock()
            .entry(name.to_lowercase())
            .or_default()
            .clone()
    }

    /// Marks every unlogged index this session changed clean as of now,
    /// so a later start trusts it without a rebuild once a checkpoint has
    /// synced the pages the close then writes (I14). The database's close
    /// hook: with the log on, one transaction the close's own wait for the
    /// log makes durable before it writes the pages; no sync of the file.
    fn mark_clean(&self, db: &Database, session: u64) -> ViewResult<()> {
        let dirtied = self.dirtied.lock().remove(&session).unwrap_or_default();
        if dirtied.is_empty() {
            return Ok(());
        }
        let mut names: Vec<String> = dirtied.into_iter().collect();
        names.sort();
        // Every updater held (in name order) while the marks are taken and
        // committed, so no page changes under them; one transaction for
        // all of them.
        let locks: Vec<_> = names.iter().map(|n| self.lock(n)).collect();
        let _held: Vec<_> = locks.iter().map(|l| l.lock()).collect();
        let mark = db.clean_mark_for_close();
        let path = db.path().to_string();
        // Losing the mark in a crash leaves the session id: a rebuild.
        db.index_write_visible(move |tx| -> nsf::NsfResult<ViewResult<()>> {
            for name in &names {
                let marked = with_state(tx, &path, name, |_, st| {
                    if st.dirty_session == session {
                        st.dirty_session = 0;
                        st.clean = mark;
                    }
                    Ok(())
                });
                if marked.is_err() {
                    return Ok(marked);
                }
            }
            Ok(Ok(()))
        })??;
        Ok(())
    }
}

/// Forgets what the instance of `db` kept for a deleted view (its
/// compiled definition, its marks), so a view defined later under the
/// same name starts afresh and no close hook looks for the deleted one.
pub(crate) fn forget_view(db: &Database, name: &str, design_note: NoteId) {
    let ext = DbViews::of(db);
    let key = name.to_lowercase();
    ext.defs.lock().remove(&design_note);
    ext.rebuilt_unclean.lock().remove(&key);
    for names in ext.dirtied.lock().values_mut() {
        names.remove(&key);
    }
}

/// What an update did.
#[derive(Clone, Debug, Default, serde::Serialize)]
pub struct UpdateReport {
    pub notes_seen: u64,
    pub last_seq: u64,
}

impl Views {
    /// The views layer of a process. Removes the temporary sort files
    /// that rebuilds of crashed processes left in `rebuild_dir`
    /// (`storage::extsort::remove_stale_runs`; design.md §8.2); failing
    /// to is logged, never fatal: stale files waste space, nothing more.
    pub fn new(backend: Arc<dyn Backend>, config: ViewConfig) -> Views {
        match storage::extsort::remove_stale_runs(backend.as_ref(), &config.rebuild_dir) {
            Ok(0) => {}
            Ok(n) => {
                tracing::info!(dir = %config.rebuild_dir.display(), "removed {n} temporary sort files left by a crash")
            }
            Err(e) => {
                tracing::warn!(dir = %config.rebuild_dir.display(), "cannot remove temporary sort files left by a crash: {e}")
            }
        }
        Views {
            backend,
            config,
            session: rand::random::<u64>() | 1,
        }
    }

    /// This process's session id (I14).
    pub(crate) fn session(&self) -> u64 {
        self.session
    }

    /// Remembers an unlogged index this session changed, to mark it clean
    /// before the database instance closes (the first one registers the
    /// instance's close hook).
    pub(crate) fn note_dirtied(&self, db: &Database, name: &str) {
        let ext = DbViews::of(db);
        let mut dirtied = ext.dirtied.lock();
        let names = dirtied.entry(self.session).or_insert_with(|| {
            let (ext, session) = (ext.clone(), self.session);
            db.at_close(Box::new(move |db| Ok(ext.mark_clean(db, session)?)));
            HashSet::new()
        });
        names.insert(name.to_lowercase());
    }

    pub(crate) fn lock(&self, db: &Database, name: &str) -> Arc<Mutex<()>> {
        DbViews::of(db).lock(name)
    }

    pub(crate) fn no_such(db: &Database, name: &str) -> ViewError {
        ViewError::NoSuchView {
            db: db.path().to_string(),
            name: name.to_string(),
        }
    }

    /// Reads a view's catalog state.
    pub(crate) fn state(&self, db: &Database, name: &str) -> ViewResult<ViewState> {
        db.index_read(|r| catalog::get(r, r.design_root(), db.path(), name))?
            .ok_or_else(|| Self::no_such(db, name))
    }

    /// Names of every view and folder in `db`, with their kind.
    pub fn list(&self, db: &Database) -> ViewResult<Vec<(String, Kind)>> {
        let entries = db.index_read(|r| catalog::list(r, r.design_root()))?;
        let mut out = Vec::new();
        for (_, st) in entries {
            let c = self.compiled(db, &st)?;
            out.push((c.def.name.clone(), c.def.kind));
        }
        Ok(out)
    }

    /// The names of the views and folders of `db` as the catalog keys them
    /// (lower case), without reading or compiling any definition: what a
    /// check for missing views needs, on every first open of a database.
    pub fn names(&self, db: &Database) -> ViewResult<HashSet<String>> {
        let entries = db.index_read(|r| catalog::list(r, r.design_root()))?;
        Ok(entries.into_iter().map(|(name, _)| name).collect())
    }

    /// The parsed definition of a view, cached.
    pub(crate) fn compiled(&self, db: &Database, st: &ViewState) -> ViewResult<Arc<Compiled>> {
        let ext = DbViews::of(db);
        if let Some(c) = ext.defs.lock().get(&st.design_note) {
            return Ok(c.clone());
        }
        let note = db.index_read(|r| r.note(st.design_note))?.ok_or_else(|| {
            ViewError::BadDefinition(format!("design note {} is missing", st.design_note))
        })?;
        let c = Arc::new(ViewDef::from_note(&note)?.compile()?);
        ext.defs.lock().insert(st.design_note, c.clone());
        Ok(c)
    }

    /// Creates a view or folder. Bad formulas and duplicate names change
    /// nothing. `Auto` views are built at once.
    pub fn create(&self, db: &Arc<Database>, def: ViewDef) -> ViewResult<()> {
        def.check_new()?;
        let compiled = def.compile()?;
        let items = def.to_items()?;
        let name = def.name.clone();
        let path = db.path().to_string();
        let logged = def.logged;
        let folder = def.kind == Kind::Folder;
        db.index_write(move |tx| -> nsf::NsfResult<Result<(), ViewError>> {
            Ok(create_in(tx, &path, &name, items, logged, folder))
        })??;
        if compiled.def.refresh == Refresh::Auto {
            self.rebuild(db, &def.name)?;
        }
        Ok(())
    }

    /// Opens a view for reading, bringing its index up to date as its
    /// refresh option says, and rebuilding it first if it was never built
    /// or a crash left it untrustworthy.
    pub fn open<'v>(&'v self, db: &Arc<Database>, name: &str) -> ViewResult<Collection<'v>> {
        let st = self.state(db, name)?;
        let compiled = self.compiled(db, &st)?;
        let mut rebuilt = None;
        let mut seq = st.last_seq;
        if let Some(why) = self.rebuild_reason(db, name, &st) {
            if st.built() {
                tracing::warn!(db = %db.path(), view = %compiled.def.name, "rebuilding view index: {why}");
            } else {
                tracing::info!(db = %db.path(), view = %compiled.def.name, "building view index: {why}");
            }
            self.rebuild(db, name)?;
            rebuilt = Some(why);
            seq = self.state(db, name)?.last_seq;
        } else {
            // Nothing changed since the last update: no work, no lock.
            let changed = db.last_seq().0 > st.last_seq;
            let stale = changed
                && match compiled.def.refresh {
                    Refresh::Auto | Refresh::AutoAfterFirstUse => true,
                    Refresh::Manual => false,
                    Refresh::EveryHours(h) => {
                        Timestamp::now().0 - st.last_update > i64::from(h) * 3_600_000_000
                    }
                };
            if stale {
                seq = self.update(db, name)?.last_seq;
            }
        }
        Ok(Collection::new(self, db.clone(), compiled, seq, rebuilt))
    }

    /// A handle on a view's index as it stands, without applying the
    /// changes made since its last update (unless it must be rebuilt
    /// first, which `open` does). A server refreshes a collection when a
    /// client opens or explicitly updates it; the page reads in between
    /// must not each pay for a refresh, and must not move under the
    /// reader's feet.
    pub fn open_as_is<'v>(&'v self, db: &Arc<Database>, name: &str) -> ViewResult<Collection<'v>> {
        let st = self.state(db, name)?;
        if self.rebuild_reason(db, name, &st).is_some() {
            return self.open(db, name);
        }
        let compiled = self.compiled(db, &st)?;
        Ok(Collection::new(
            self,
            db.clone(),
            compiled,
            st.last_seq,
            None,
        ))
    }

    /// Why the index must be rebuilt before use, if it must.
    pub(crate) fn rebuild_reason(
        &self,
        db: &Database,
        name: &str,
        st: &ViewState,
    ) -> Option<String> {
        if !st.built() {
            return Some("first use".into());
        }
        if !st.current() {
            return Some("the index predates the record of entries that $Readers restricts".into());
        }
        if st.dirty_session != 0 && st.dirty_session != self.session {
            return Some("the server stopped without writing this unlogged index to disk".into());
        }
        if st.dirty_session == 0 && !db.clean_mark_durable(st.clean) {
            return Some(
                "the server stopped before a checkpoint synced this unlogged index".into(),
            );
        }
        let rebuilt = || {
            DbViews::of(db)
                .rebuilt_unclean
                .lock()
                .contains(&name.to_lowercase())
        };
        if db.opened_unclean() && !rebuilt() {
            return Some("the database was written unlogged and not closed cleanly".into());
        }
        None
    }

    /// Applies every change since the index's last sequence.
    pub fn update(&self, db: &Arc<Database>, name: &str) -> ViewResult<UpdateReport> {
        let st = self.state(db, name)?;
        if !st.current() || self.rebuild_reason(db, name, &st).is_some() {
            // Never built (or built by a version without every tree): a
            // rebuild is the fast way to apply everything.
            let r = self.rebuild(db, name)?;
            return Ok(UpdateReport {
                notes_seen: r.documents,
                last_seq: self.state(db, name)?.last_seq,
            });
        }
        let lock = self.lock(db, name);
        let _g = lock.lock();
        let st = self.state(db, name)?;
        let compiled = self.compiled(db, &st)?;
        let mut report = UpdateReport {
            last_seq: st.last_seq,
            ..Default::default()
        };
        let mut since = st.last_seq;
        loop {
            let notes = db.modified_since(Seq(since), UPDATE_CHUNK)?;
            let Some(last) = notes.last().map(|n| n.change_seq.0) else {
                break;
            };
            self.mark_dirty(db, name)?;
            let ctx = EvalContext {
                now: Timestamp::now().0,
            };
            let changes: Vec<(NoteId, Contribution, bool)> = notes
                .iter()
                .map(|n| {
                    let d = NoteDoc(n);
                    let e = if selects(&compiled, &d, &ctx) {
                        Contribution::of(&compiled, &d, &ctx)
                    } else {
                        Contribution::default()
                    };
                    (n.note_id, e, n.deleted)
                })
                .collect();
            report.notes_seen += changes.len() as u64;
            let (path, vname) = (db.path().to_string(), name.to_string());
            // Derived from committed documents: readers go on once it is
            // installed (I54); a crash that loses it leaves the index at
            // its older sequence, and the next update applies it again.
            db.index_write_visible(move |tx| -> nsf::NsfResult<ViewResult<()>> {
                Ok(apply_changes(tx, &path, &vname, changes, last))
            })??;
            since = last;
            report.last_seq = last;
        }
        Ok(report)
    }

    /// Before an unlogged index's pages change for the first time in this
    /// session, durably records that this session may change them (I14).
    pub(crate) fn mark_dirty(&self, db: &Arc<Database>, name: &str) -> ViewResult<()> {
        let st = self.state(db, name)?;
        if st.logged() || !db.is_logged() || st.dirty_session == self.session {
            return Ok(());
        }
        let (path, vname, session) = (db.path().to_string(), name.to_string(), self.session);
        // Durable before any page it covers reaches the file (I1: those
        // pages are installed with a later LSN), so nobody waits for it.
        db.index_write_visible(move |tx| -> nsf::NsfResult<ViewResult<()>> {
            Ok(with_state(tx, &path, &vname, |_, st| {
                st.dirty_session = session;
                Ok(())
            }))
        })??;
        self.note_dirtied(db, name);
        Ok(())
    }

    /// Rebuilds a view's index from scratch (external sort, bulk load).
    pub fn rebuild(&self, db: &Arc<Database>, name: &str) -> ViewResult<RebuildReport> {
        let lock = self.lock(db, name);
        let _g = lock.lock();
        let st = self.state(db, name)?;
        let compiled = self.compiled(db, &st)?;
        let report = rebuild::rebuild(self, db, name, &st, &compiled)?;
        if db.opened_unclean() {
            DbViews::of(db)
                .rebuilt_unclean
                .lock()
                .insert(name.to_lowercase());
        }
        Ok(report)
    }

    /// Adds documents to a folder.
    pub fn folder_add(&self, db: &Arc<Database>, name: &str, unids: &[Unid]) -> ViewResult<()> {
        self.folder_change(db, name, unids, true)
    }

    /// Removes documents from a folder (the documents stay in the database).
    pub fn folder_remove(&self, db: &Arc<Database>, name: &str, unids: &[Unid]) -> ViewResult<()> {
        self.folder_change(db, name, unids, false)
    }

    fn folder_change(
        &self,
        db: &Arc<Database>,
        name: &str,
        unids: &[Unid],
        add: bool,
    ) -> ViewResult<()> {
        // An unlogged index a crash left untrustworthy is rebuilt (from
        // the logged membership) before it is changed: changing it in
        // place would build on pages the crash lost (I14).
        let st = self.state(db, name)?;
        if let Some(why) = self.rebuild_reason(db, name, &st) {
            if st.built() {
                tracing::warn!(db = %db.path(), folder = %name, "rebuilding folder index: {why}");
            } else {
                tracing::info!(db = %db.path(), folder = %name, "building folder index: {why}");
            }
            self.rebuild(db, name)?;
        }
        let lock = self.lock(db, name);
        let _g = lock.lock();
        let st = self.state(db, name)?;
        let compiled = self.compiled(db, &st)?;
        if compiled.def.kind != Kind::Folder {
            return Err(ViewError::NotAFolder {
                name: name.to_string(),
            });
        }
        // Every UNID must name a live document: no half-applied change.
        for u in unids {
            db.get(*u)?;
        }
        self.mark_dirty(db, name)?;
        for chunk in unids.chunks(UPDATE_CHUNK) {
            let (path, vname, chunk) = (db.path().to_string(), name.to_string(), chunk.to_vec());
            let c = compiled.clone();
            db.index_write(move |tx| -> nsf::NsfResult<ViewResult<()>> {
                Ok(change_members(tx, &path, &vname, &c, &chunk, add))
            })??;
        }
        Ok(())
    }
}

/// Runs `f` on a view's state inside an index transaction and writes the
/// state back.
pub(crate) fn with_state(
    tx: &mut IndexTxn<'_, '_>,
    path: &str,
    name: &str,
    f: impl FnOnce(&mut IndexTxn<'_, '_>, &mut ViewState) -> ViewResult<()>,
) -> ViewResult<()> {
    let mut st =
        catalog::get(&*tx, tx.design_root(), path, name)?.ok_or_else(|| ViewError::NoSuchView {
            db: path.to_string(),
            name: name.to_string(),
        })?;
    f(tx, &mut st)?;
    let root = catalog::put(tx, tx.design_root(), name, &st)?;
    tx.set_design_root(root);
    Ok(())
}

fn create_in(
    tx: &mut IndexTxn<'_, '_>,
    path: &str,
    name: &str,
    items: Vec<nsf::Item>,
    logged: bool,
    folder: bool,
) -> ViewResult<()> {
    if catalog::get(&*tx, tx.design_root(), path, name)?.is_some() {
        return Err(ViewError::ViewExists {
            db: path.to_string(),
            name: name.to_string(),
        });
    }
    let meta = tx.create_note(items)?;
    let owned_root = if logged {
        PageId::NONE
    } else {
        btree::create(tx)?
    };
    let mut s = IndexStore {
        tx,
        unlogged: !logged,
        owned_root,
    };
    let entries_root = btree::create(&mut s)?;
    let docmap_root = btree::create(&mut s)?;
    let restricted_root = btree::create(&mut s)?;
    let owned_root = s.owned_root;
    let members_root = if folder {
        btree::create(tx)?
    } else {
        PageId::NONE
    };
    let st = ViewState {
        design_note: meta.note_id,
        folder,
        flags: if logged { FLAG_LOGGED } else { 0 },
        entries_root,
        docmap_root,
        members_root,
        owned_root,
        restricted_root,
        last_seq: 0,
        dirty_session: 0,
        last_update: 0,
        clean: nsf::CleanMark::SYNCED,
    };
    let root = catalog::put(tx, tx.design_root(), name, &st)?;
    tx.set_design_root(root);
    Ok(())
}

/// Applies computed entries for changed notes and advances the index's
/// sequence to `last`.
fn apply_changes(
    tx: &mut IndexTxn<'_, '_>,
    path: &str,
    name: &str,
    changes: Vec<(NoteId, Contribution, bool)>,
    last: u64,
) -> ViewResult<()> {
    with_state(tx, path, name, |tx, st| {
        for (id, entries, deleted) in changes {
            let member = if st.folder {
                let key = id.0.to_be_bytes();
                if deleted {
                    btree::remove(tx, &mut st.members_root, &key)?;
                }
                btree::get(&*tx, st.members_root, &key)?.is_some()
            } else {
                true
            };
            let entries = if member {
                entries
            } else {
                Contribution::default()
            };
            let mut s = IndexStore {
                unlogged: !st.logged(),
                owned_root: st.owned_root,
                tx: &mut *tx,
            };
            apply_note(&mut s, st, id, &entries, path, name)?;
            st.owned_root = s.owned_root;
        }
        st.last_seq = st.last_seq.max(last);
        st.last_update = Timestamp::now().0;
        Ok(())
    })
}

pub(crate) fn change_members(
    tx: &mut IndexTxn<'_, '_>,
    path: &str,
    name: &str,
    c: &Compiled,
    unids: &[Unid],
    add: bool,
) -> ViewResult<()> {
    let ctx = EvalContext {
        now: Timestamp::now().0,
    };
    with_state(tx, path, name, |tx, st| {
        for u in unids {
            let Some(id) = tx.note_id_of(*u)? else {
                continue;
            };
            let key = id.0.to_be_bytes();
            let note: Option<Note> = tx.note(id)?;
            let entries = match (&note, add) {
                (Some(n), true) if selects(c, &NoteDoc(n), &ctx) => {
                    btree::insert(tx, &mut st.members_root, &key, &[])?;
                    Contribution::of(c, &NoteDoc(n), &ctx)
                }
                _ => {
                    btree::remove(tx, &mut st.members_root, &key)?;
                    Contribution::default()
                }
            };
            // An index not current is rebuilt from the members before use.
            if st.current() {
                let mut s = IndexStore {
                    unlogged: !st.logged(),
                    owned_root: st.owned_root,
                    tx: &mut *tx,
                };
                apply_note(&mut s, st, id, &entries, path, name)?;
                st.owned_root = s.owned_root;
            }
        }
        Ok(())
    })
}
