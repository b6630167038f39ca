//! Retired database instances: the durable list of (path, instance id)
//! pairs whose log records restart recovery must never apply (I29), and
//! of the databases that need fixup before they take writes again.
//!
//! Two events retire an instance:
//!
//! - **It failed** (a write or sync of its file, I11) or restart recovery
//!   could not bring it back. Its changes will never be written, so the
//!   checkpointer stops counting its dirty pages and the log may recycle
//!   the extents that hold its records — which is only safe once nothing
//!   will ever replay them: a replay of a suffix of its records onto a
//!   file that lacks the recycled prefix would apply deltas to the wrong
//!   base. So the instance is written here, synced, *before* the
//!   checkpoint may pass its records, and it stays refused ("needs
//!   fixup") across restarts.
//! - **Fixup replaced it** with a new instance id: the old instance's
//!   records may still lie in the log, and must never touch the new file.
//!
//! ```text
//!   <data>/retired   JSON, replaced atomically (write, fdatasync, rename,
//!                    directory fsync; I9)
//!   {"instances":[{"path":"a.fdb","instance":"…","needs_fixup":"why"},
//!                 {"path":"a.fdb","instance":"…","needs_fixup":null}]}
//! ```
//!
//! An entry with `needs_fixup` marks the path as refused until fixup
//! gives it a new instance; fixup then clears the mark and keeps the
//! pair, so recovery still skips the old instance's records.
//!
//! A third event retires an instance for good: **it was deleted**
//! (`Engine::delete_database`, I42). Its entry carries `"deleted":true`
//! and is written before the file is unlinked; a start that finds the
//! file still there with that instance id finishes the delete.

use crate::{DbInstanceId, NsfError, NsfResult};
use parking_lot::Mutex;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use storage::backend::{read_file, write_file_atomic};
use storage::Backend;

/// The file's name in the data directory.
pub(crate) const RETIRED_FILE: &str = "retired";

#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
struct Entry {
    path: String,
    instance: u64,
    /// Why the path needs fixup; `None` once fixup replaced the instance.
    needs_fixup: Option<String>,
    /// The database was deleted (I42): a file still holding this instance
    /// at the path is what a crash left of the delete, and is removed.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    deleted: bool,
}

#[derive(Clone, Debug, Default, serde::Serialize, serde::Deserialize)]
struct Contents {
    instances: Vec<Entry>,
}

/// The list, in memory and on disk.
pub(crate) struct RetiredList {
    backend: Arc<dyn Backend>,
    file: PathBuf,
    contents: Mutex<Contents>,
}

impl RetiredList {
    /// Reads `<data>/retired` (an absent file is an empty list; one that
    /// does not parse is an error naming it: guessing could replay records
    /// onto the wrong instance).
    pub(crate) fn load(backend: Arc<dyn Backend>, data_dir: &Path) -> NsfResult<RetiredList> {
        let file = data_dir.join(RETIRED_FILE);
        let contents = if backend.exists(&file) {
            let bytes = read_file(backend.as_ref(), &file).map_err(|e| NsfError::Io {
                path: file.display().to_string(),
                source: e,
            })?;
            serde_json::from_slice(&bytes).map_err(|e| NsfError::NotADatabase {
                path: file.display().to_string(),
                reason: format!("the list of retired database instances does not parse: {e}"),
            })?
        } else {
            Contents::default()
        };
        Ok(RetiredList {
            backend,
            file,
            contents: Mutex::new(contents),
        })
    }

    /// The pairs recovery must skip (I29).
    pub(crate) fn pairs(&self) -> translog::Retired {
        self.contents
            .lock()
            .instances
            .iter()
            .map(|e| (e.path.clone(), e.instance))
            .collect()
    }

    /// Why `path` needs fixup, if it does.
    pub(crate) fn needs_fixup(&self, path: &str) -> Option<String> {
        self.contents
            .lock()
            .instances
            .iter()
            .find(|e| e.path == path && e.needs_fixup.is_some())
            .and_then(|e| e.needs_fixup.clone())
    }

    /// Every path that needs fixup, with the reason.
    pub(crate) fn all_needing_fixup(&self) -> Vec<(String, String)> {
        self.contents
            .lock()
            .instances
            .iter()
            .filter_map(|e| e.needs_fixup.clone().map(|r| (e.path.clone(), r)))
            .collect()
    }

    /// Retires `instance` of `path` and marks the path as needing fixup;
    /// durable when it returns (I29: before a checkpoint passes its
    /// records). Retiring a pair already retired changes nothing.
    pub(crate) fn retire(&self, path: &str, instance: DbInstanceId, why: &str) -> NsfResult<()> {
        let mut c = self.contents.lock();
        if c.instances
            .iter()
            .any(|e| e.path == path && e.instance == instance.0)
        {
            return Ok(());
        }
        c.instances.push(Entry {
            path: path.to_string(),
            instance: instance.0,
            needs_fixup: Some(why.to_string()),
            deleted: false,
        });
        self.write(&c)
    }

    /// The database `instance` at `path` is being deleted (I42): its
    /// records are never applied again, the path no longer needs fixup
    /// (the file goes), and a start that finds the file still there with
    /// this instance removes it. Durable when it returns.
    pub(crate) fn retire_deleted(&self, path: &str, instance: DbInstanceId) -> NsfResult<()> {
        let mut c = self.contents.lock();
        for e in c.instances.iter_mut().filter(|e| e.path == path) {
            e.needs_fixup = None;
            if e.instance == instance.0 {
                e.deleted = true;
            }
        }
        if !c
            .instances
            .iter()
            .any(|e| e.path == path && e.instance == instance.0)
        {
            c.instances.push(Entry {
                path: path.to_string(),
                instance: instance.0,
                needs_fixup: None,
                deleted: true,
            });
        }
        self.write(&c)
    }

    /// Whether `instance` of `path` was deleted (I42).
    pub(crate) fn is_deleted(&self, path: &str, instance: DbInstanceId) -> bool {
        self.contents
            .lock()
            .instances
            .iter()
            .any(|e| e.deleted && e.path == path && e.instance == instance.0)
    }

    /// Every deleted instance (path, instance id), for a start to finish
    /// deletes a crash interrupted (I42).
    pub(crate) fn deleted(&self) -> Vec<(String, DbInstanceId)> {
        self.contents
            .lock()
            .instances
            .iter()
            .filter(|e| e.deleted)
            .map(|e| (e.path.clone(), DbInstanceId(e.instance)))
            .collect()
    }

    /// Fixup gave `path` a new instance: `old` stays retired (its records
    /// are never applied to the new file) and the path no longer needs
    /// fixup. Durable when it returns.
    pub(crate) fn fixed(&self, path: &str, old: Option<DbInstanceId>) -> NsfResult<()> {
        let mut c = self.contents.lock();
        for e in c.instances.iter_mut().filter(|e| e.path == path) {
            e.needs_fixup = None;
        }
        if let Some(old) = old {
            if !c
                .instances
                .iter()
                .any(|e| e.path == path && e.instance == old.0)
            {
                c.instances.push(Entry {
                    path: path.to_string(),
                    instance: old.0,
                    needs_fixup: None,
                    deleted: false,
                });
            }
        }
        self.write(&c)
    }

    fn write(&self, c: &Contents) -> NsfResult<()> {
        let bytes = serde_json::to_vec_pretty(c).map_err(|e| NsfError::Invalid(e.to_string()))?;
        write_file_atomic(self.backend.as_ref(), &self.file, &bytes).map_err(|e| NsfError::Io {
            path: self.file.display().to_string(),
            source: e,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use storage::backend::MemBackend;

    #[test]
    fn retire_and_fix_survive_a_reload() {
        let be: Arc<dyn Backend> = Arc::new(MemBackend::new());
        let dir = Path::new("/d");
        be.create_dir_all(dir).unwrap();
        let list = RetiredList::load(be.clone(), dir).unwrap();
        list.retire("a.fdb", DbInstanceId(7), "write: EIO").unwrap();
        list.retire("a.fdb", DbInstanceId(7), "again").unwrap();
        let again = RetiredList::load(be.clone(), dir).unwrap();
        assert_eq!(again.needs_fixup("a.fdb").as_deref(), Some("write: EIO"));
        assert_eq!(again.pairs().len(), 1);
        again.fixed("a.fdb", Some(DbInstanceId(7))).unwrap();
        let third = RetiredList::load(be, dir).unwrap();
        assert_eq!(third.needs_fixup("a.fdb"), None);
        assert!(third.pairs().contains(&("a.fdb".to_string(), 7)));
    }

    #[test]
    fn a_delete_clears_the_fixup_mark_and_survives_a_reload() {
        let be: Arc<dyn Backend> = Arc::new(MemBackend::new());
        let dir = Path::new("/d");
        be.create_dir_all(dir).unwrap();
        let list = RetiredList::load(be.clone(), dir).unwrap();
        list.retire("a.fdb", DbInstanceId(7), "write: EIO").unwrap();
        list.retire_deleted("a.fdb", DbInstanceId(7)).unwrap();
        list.retire_deleted("b.fdb", DbInstanceId(9)).unwrap();
        let again = RetiredList::load(be.clone(), dir).unwrap();
        assert_eq!(again.needs_fixup("a.fdb"), None);
        assert_eq!(
            again.deleted(),
            vec![
                ("a.fdb".to_string(), DbInstanceId(7)),
                ("b.fdb".to_string(), DbInstanceId(9))
            ]
        );
        assert_eq!(again.pairs().len(), 2);
    }

    #[test]
    fn a_list_written_before_deletes_existed_still_reads() {
        let be: Arc<dyn Backend> = Arc::new(MemBackend::new());
        let dir = Path::new("/d");
        be.create_dir_all(dir).unwrap();
        let old = br#"{"instances":[{"path":"a.fdb","instance":3,"needs_fixup":null}]}"#;
        write_file_atomic(be.as_ref(), &dir.join(RETIRED_FILE), old).unwrap();
        let list = RetiredList::load(be, dir).unwrap();
        assert_eq!(list.pairs().len(), 1);
        assert!(list.deleted().is_empty());
    }

    #[test]
    fn a_damaged_list_is_an_error_naming_it() {
        let be: Arc<dyn Backend> = Arc::new(MemBackend::new());
        let dir = Path::new("/d");
        be.create_dir_all(dir).unwrap();
        write_file_atomic(be.as_ref(), &dir.join(RETIRED_FILE), b"{nope").unwrap();
        let e = RetiredList::load(be, dir).err().unwrap();
        assert!(e.to_string().contains("retired"), "{e}");
    }
}
