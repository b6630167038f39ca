//! Deleting a database (design.md I42, I43): the file goes, every handle
//! still held refuses, and the log's records of it are never applied
//! again — not to a database created later at the same path either.
//!
//! A delete is ordered so that a crash at any point leaves the database
//! either whole or gone once the next start is over:
//!
//! ```text
//!   claim the path in the cache ── no new instance, no create meanwhile
//!   instance → Deleted           ── under its writer lock: no transaction
//!                                   in flight; later reads/writes refuse
//!   retire (path, instance, deleted), synced          (I29)  ◀─ crash here:
//!   discard its frames from the pool                          the start finds
//!   unlink the file, sync the directory                       the file, sees
//!   forget it in the catalog, free the path                   the instance
//!                                                             retired as
//!                                                             deleted, and
//!                                                             unlinks it
//! ```
//!
//! Before the retirement is durable nothing has changed: restart recovery
//! replays the database as usual. From then on recovery skips its records
//! and the start finishes the delete ([`finish_interrupted_deletes`]), so
//! the frames can be dropped unwritten: the checkpointer stops counting
//! them and the log may recycle the records, which nothing will replay.

use super::{Engine, Slot};
use crate::dbpath::DbPath;
use crate::retired::RetiredList;
use crate::{NsfError, NsfResult};
use std::path::Path;
use std::sync::Arc;
use storage::{Backend, OpenMode};

impl Engine {
    /// Deletes the database at `path` (I42): durable when it returns (the
    /// instance is retired and synced, the file unlinked and the
    /// directory synced). Every handle to it still held — a connection's,
    /// a view's, an attachment stream's — refuses from then on with
    /// [`NsfError::DatabaseDeleted`] and never writes its file again
    /// (I43). A missing database is [`NsfError::NoSuchDatabase`] and
    /// changes nothing; so is a path inside the log directory. Access
    /// control is the caller's (the server asks for Manager access).
    pub fn delete_database(&self, path: &str) -> NsfResult<()> {
        self.check_open()?;
        let key = DbPath::parse(path)?;
        self.outside_log(&key)?;
        let db = self.open_database(key.as_str())?;
        let s = &*self.shared;
        // Claim the path: the slot becomes `Opening`, so an open or create
        // of it waits until the delete is over, then finds no file.
        let claim = {
            let mut dbs = s.dbs.lock();
            match dbs.slots.get(&key) {
                Some(Slot::Open { db: cached, .. }) if Arc::ptr_eq(cached, &db) => {}
                _ => {
                    return Err(NsfError::Invalid(format!(
                        "{key} was closed or replaced while being deleted; try again"
                    )))
                }
            }
            if let Some(Slot::Open { file, .. }) = dbs.slots.insert(key.clone(), Slot::Opening) {
                if let Some(f) = file {
                    dbs.by_file.remove(&f);
                }
                dbs.instances -= 1;
            }
            super::Claim {
                shared: s,
                key: key.clone(),
                filled: false,
            }
        };
        db.mark_deleted();
        let instance = db.instance_id();
        // I42: retired before a frame is dropped or the file unlinked.
        if let Err(e) = s.retired.retire_deleted(key.as_str(), instance) {
            // Nothing is deleted: every page of the instance is written
            // out before the path is freed, so the next instance reads
            // the file as the log left it (I19).
            let victim = super::Victim {
                key: key.clone(),
                db: db.clone(),
                file: None,
            };
            super::write_out(s, std::slice::from_ref(&victim));
            if let Err(dirty) = db.release_pool() {
                // They could not be written either: the refusing instance
                // stays in the cache, so no new one reads the file under
                // them; a restart replays the log (nothing was retired).
                tracing::error!(db = %key, dirty, "a failed delete left pages unwritten; the database refuses until restart");
                let mut claim = claim;
                let mut dbs = s.dbs.lock();
                let used = dbs.tick();
                dbs.slots.insert(
                    key.clone(),
                    Slot::Open {
                        db: db.clone(),
                        used,
                        file: None,
                    },
                );
                dbs.instances += 1;
                claim.filled = true;
                s.dbs_changed.notify_all();
            }
            return Err(e);
        }
        // I43: nothing of it is written again, and no checkpoint waits
        // for its pages.
        let discarded = s.pool.unregister(db.pool_file());
        let full = self.full_path(key.as_str());
        remove_and_sync(s.backend.as_ref(), &full, key.as_str())?;
        s.catalog.forget(key.as_str());
        // Its store references went with the file: the next sweep (at
        // shutdown at the latest) reclaims what only it held (I39).
        s.store.note_released();
        tracing::info!(db = %key, instance = %instance, discarded_pages = discarded, "database deleted");
        drop(claim);
        Ok(())
    }
}

/// Unlinks a database file and makes the removal durable (I9).
fn remove_and_sync(be: &dyn Backend, full: &Path, name: &str) -> NsfResult<()> {
    let io = |e| NsfError::Io {
        path: name.to_string(),
        source: e,
    };
    be.remove_file(full).map_err(io)?;
    be.sync_dir(full.parent().unwrap_or(Path::new(".")))
        .map_err(io)
}

/// At a start, after restart recovery (which skipped their records):
/// every file still at the path of a deleted instance and holding that
/// instance is what a crash left of its delete, and is removed (I42). A
/// file holding another instance is a database created there since, and
/// stays; one whose header cannot be read stays too (it is reported when
/// opened) — deleting what cannot be identified could lose a database.
pub(super) fn finish_interrupted_deletes(
    backend: &dyn Backend,
    data_dir: &Path,
    retired: &RetiredList,
) -> NsfResult<()> {
    for (path, instance) in retired.deleted() {
        let full = data_dir.join(&path);
        if !backend.exists(&full) {
            continue;
        }
        let held = backend
            .open(&full, OpenMode::Existing)
            .map_err(|e| NsfError::Io {
                path: path.clone(),
                source: e,
            })
            .and_then(|f| super::read_header(f.as_ref(), &path));
        match held {
            Ok(h) if h.instance_id == instance => {
                remove_and_sync(backend, &full, &path)?;
                tracing::warn!(db = %path, instance = %instance, "finished a database delete a crash interrupted");
            }
            Ok(_) => {}
            Err(e) => {
                tracing::warn!(db = %path, error = %e, "a deleted database's path holds a file that cannot be identified; left alone");
            }
        }
    }
    Ok(())
}
