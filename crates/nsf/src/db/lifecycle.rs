//! An instance's life in the open-database cache (I19) and its entry in
//! the catalog (I20).
//!
//! A [`Database`] is one *instance* of a file: opened by the engine's
//! cache when first needed and closed by it when idle, then perhaps opened
//! again as a new instance. So whatever a layer above keeps about an open
//! database belongs to the instance, not to the path: an *extension*
//! ([`Database::extension`]) lives and dies with the instance, and nothing
//! cached under a path can outlive the file it described. Work that must
//! happen before an instance goes (the views layer writing its unlogged
//! indexes and marking them clean, I14) is registered with
//! [`Database::at_close`] and run by the engine, at a cache close or at
//! engine close.
//!
//! The engine knows an instance is idle when the cache holds its only
//! `Arc`; readers that outlive the call that made them (attachment
//! streams) hold one ([`Database::pinned`]), so an instance is never closed
//! under them.
//!
//! ACL changes are serialised per instance and bracketed for the catalog:
//! a durable "changing" record before the commit, the new audience after
//! it (I20); opening an instance compares its catalog entry under the same
//! lock, so the two never interleave.

use super::Database;
use crate::catalog::{Audience, Catalog, Entry};
use crate::NsfResult;
use parking_lot::{Mutex, MutexGuard};
use std::any::Any;
use std::sync::{Arc, Weak};
use storage::pool::FileId;

/// Work a layer above does before an instance closes. A failure is
/// logged; the instance closes all the same (what the hook left undone
/// must therefore be safe to leave, as an unlogged index left dirty is:
/// it is rebuilt).
pub type CloseHook =
    Box<dyn FnOnce(&Database) -> Result<(), Box<dyn std::error::Error + Send + Sync>> + Send>;

/// The engine's links of one instance (see the module docs).
pub(crate) struct Life {
    me: Weak<Database>,
    catalog: Arc<Catalog>,
    /// Serialises ACL changes and catalog comparisons (I20).
    acl_change: Mutex<()>,
    extensions: Mutex<Vec<Arc<dyn Any + Send + Sync>>>,
    close_hooks: Mutex<Vec<CloseHook>>,
    /// The cache is closing this instance (its slot is `Closing`): a
    /// weak reference must not take it up (I19, I54).
    closing: std::sync::atomic::AtomicBool,
}

impl Life {
    /// `me` is the instance's own `Arc` (made with `Arc::new_cyclic`).
    pub(crate) fn new(me: Weak<Database>, catalog: Arc<Catalog>) -> Life {
        Life {
            me,
            catalog,
            acl_change: Mutex::new(()),
            extensions: Mutex::default(),
            close_hooks: Mutex::default(),
            closing: std::sync::atomic::AtomicBool::new(false),
        }
    }
}

/// An ACL change under way: the catalog was told durably before it, and
/// learns the outcome (whatever it was) when this is dropped (I20).
pub(crate) struct AclChange<'a> {
    db: &'a Database,
    _one: MutexGuard<'a, ()>,
}

impl Drop for AclChange<'_> {
    fn drop(&mut self) {
        self.db.record_in_catalog();
    }
}

impl Database {
    /// The state of type `T` a layer above keeps for this instance, made
    /// by `init` on first use. It is dropped with the instance, so a
    /// database closed by the cache and opened again starts afresh.
    pub fn extension<T: Any + Send + Sync>(&self, init: impl FnOnce() -> T) -> Arc<T> {
        let mut all = self.life.extensions.lock();
        if let Some(found) = all.iter().find_map(|e| e.clone().downcast::<T>().ok()) {
            return found;
        }
        let made = Arc::new(init());
        all.push(made.clone());
        made
    }

    /// Registers work to do before this instance closes (module docs).
    pub fn at_close(&self, hook: CloseHook) {
        self.life.close_hooks.lock().push(hook);
    }

    /// Runs (once) every hook registered with [`Database::at_close`].
    pub(crate) fn run_close_hooks(&self) {
        let hooks = std::mem::take(&mut *self.life.close_hooks.lock());
        for hook in hooks {
            if let Err(e) = hook(self) {
                tracing::warn!(db = %self.core.path, error = %e, "work before closing the database failed");
            }
        }
    }

    /// Whether closing this instance would cost nothing but dropping it:
    /// no close hook to run and no page left to write (I54: the only
    /// closes an open may make itself).
    pub(crate) fn closes_quietly(&self) -> bool {
        // Unlogged, a written instance clears its open flag at close
        // (I12): a header write and an fdatasync.
        let flag_set = self.state.read().flags & crate::header::FLAG_UNLOGGED_OPEN != 0;
        !flag_set
            && self.life.close_hooks.lock().is_empty()
            && !self
                .core
                .pool
                .has_unwritten(self.core.file, self.core.high_water())
    }

    /// Whether the cache is closing this instance. Whoever holds only a
    /// weak reference to it (a native handle, I54) and upgraded it must
    /// let go and open the path through the cache, which waits for the
    /// close: nobody may take up an instance being closed (I19).
    pub fn is_closing(&self) -> bool {
        self.life.closing.load(std::sync::atomic::Ordering::SeqCst)
    }

    pub(crate) fn set_closing(&self, closing: bool) {
        self.life
            .closing
            .store(closing, std::sync::atomic::Ordering::SeqCst);
    }

    /// This instance's `Arc`, for a reader that must keep it open after
    /// the call that made it returns (I19).
    pub(crate) fn pinned(&self) -> Arc<Database> {
        self.life
            .me
            .upgrade()
            .expect("a database is used only through the Arc the engine made")
    }

    /// Drops this instance's frames from the pool once none is left to
    /// write (I19); `Err` with the number of frames still dirty.
    pub(crate) fn release_pool(&self) -> Result<u64, u64> {
        self.core
            .pool
            .release_file(self.core.file, self.core.high_water())
    }

    /// The engine was shut down: the instance is `Closing` from now on
    /// (I21), and whoever waits for its changes is told (I23).
    pub(crate) fn engine_shut_down(&self) {
        self.core.catch_up();
    }

    /// The database is being deleted (I42, I43): the instance becomes
    /// `Deleted` under the writer lock, so no transaction of it is being
    /// built or installed once this returns; writes still queued are
    /// then run, and refused, so no submitter waits for a turn.
    pub(crate) fn mark_deleted(&self) {
        {
            let _writer = self.writer.lock();
            self.core.mark_deleted();
        }
        self.drain(None, None);
    }

    /// The instance id of the file this instance has open.
    pub fn instance_id(&self) -> crate::DbInstanceId {
        self.state.read().instance_id
    }

    /// The pool's name for this instance's file.
    pub(crate) fn pool_file(&self) -> FileId {
        self.core.file
    }

    /// The pool's name for this instance's file and its page count.
    pub(crate) fn pool_extent(&self) -> (FileId, u32) {
        (self.core.file, self.core.high_water())
    }

    /// Compares the catalog's entry with this instance and corrects it.
    pub(crate) fn refresh_catalog(&self) {
        let _one = self.life.acl_change.lock();
        self.record_in_catalog();
    }

    /// Starts an ACL change: waits for any other, then durably tells the
    /// catalog (I20).
    pub(crate) fn begin_acl_change(&self) -> NsfResult<AclChange<'_>> {
        let one = self.life.acl_change.lock();
        self.life.catalog.acl_changing(&self.core.path)?;
        Ok(AclChange {
            db: self,
            _one: one,
        })
    }

    fn record_in_catalog(&self) {
        let (title, instance) = {
            let h = self.state.read();
            (h.title.clone(), h.instance_id)
        };
        let audience = Audience::of(&self.acl());
        self.life.catalog.note(
            &self.core.path,
            Entry {
                title,
                instance,
                audience,
            },
        );
    }
}
