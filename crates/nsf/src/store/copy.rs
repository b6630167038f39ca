//! Objects copied out of and back into the store: into a backup and, in
//! archive style, into the archive when a sweep reclaims them; back into
//! the store when a restored database references an object the store no
//! longer has (design.md §2.9, §3.6).
//!
//! The rule that makes roll-forward work: an object is named by its
//! content and never rewritten, so any copy of it is as good as the
//! original. A backup keeps the objects its databases referenced; in
//! archive style a sweep moves an object to the archive instead of
//! deleting it, as extents are archived before reuse. So every object a
//! rolled-forward record references is in the live store, the backup or
//! the archive.

use super::content::ContentHash;
use super::registry::{io_err, AttachStore};
use crate::NsfResult;
use std::io;
use std::path::{Path, PathBuf};
use storage::backend::{read_exact_at, write_all_at};
use storage::{Backend, OpenMode};

const STEP: usize = 1 << 20;

/// Where object `hash` lives under a store-shaped directory `root`.
pub(crate) fn object_under(root: &Path, hash: &ContentHash) -> PathBuf {
    let hex = hash.to_hex();
    root.join("objects").join(&hex[..2]).join(hex)
}

/// Copies the file `from` to `to` durably: a temporary file, synced,
/// renamed, its directory synced (I9). Returns the bytes copied.
pub(crate) fn copy_durably(be: &dyn Backend, from: &Path, to: &Path) -> io::Result<u64> {
    let src = be.open(from, OpenMode::Existing)?;
    let len = src.len()?;
    let dir = to.parent().unwrap_or(Path::new("."));
    be.create_dir_all(dir)?;
    let tmp = to.with_extension("part");
    let dst = be.open(&tmp, OpenMode::CreateOrOpen)?;
    dst.set_len(0)?;
    let mut buf = vec![0u8; STEP];
    let mut at = 0u64;
    while at < len {
        let n = (STEP as u64).min(len - at) as usize;
        read_exact_at(src.as_ref(), &mut buf[..n], at)?;
        write_all_at(dst.as_ref(), &buf[..n], at)?;
        at += n as u64;
    }
    dst.sync_data()?;
    drop(dst);
    be.rename(&tmp, to)?;
    be.sync_dir(dir)?;
    if let Some(up) = dir.parent() {
        be.sync_dir(up)?;
    }
    Ok(len)
}

impl AttachStore {
    /// Copies the objects `hashes` into the store-shaped directory
    /// `root` (a backup's `attachstore/`), skipping those already there;
    /// an object a sweep moved meanwhile is taken from the archive.
    /// Returns the bytes copied.
    pub(crate) fn copy_objects_to(&self, hashes: &[ContentHash], root: &Path) -> NsfResult<u64> {
        let be = self.backend.as_ref();
        let mut bytes = 0;
        for h in hashes {
            let to = object_under(root, h);
            if be.exists(&to) {
                continue;
            }
            let from = [Some(self.object_path(h)), self.archived_path(h)]
                .into_iter()
                .flatten()
                .find(|p| be.exists(p))
                .unwrap_or_else(|| self.object_path(h));
            bytes += copy_durably(be, &from, &to).map_err(|e| io_err(&from, e))?;
        }
        Ok(bytes)
    }

    /// Brings back into the store each object of `hashes` it lacks, from
    /// the first of `roots` (store-shaped directories) that has it, for
    /// database `db`, which becomes a user (I37). Returns the objects
    /// found nowhere.
    pub(crate) fn fetch_objects(
        &self,
        hashes: &[ContentHash],
        roots: &[PathBuf],
        db: &str,
    ) -> NsfResult<Vec<ContentHash>> {
        let be = self.backend.as_ref();
        let mut st = self.state.lock();
        self.register_user(&mut st, db)?;
        let mut missing = Vec::new();
        for h in hashes {
            if self.has_object(h) {
                continue;
            }
            let Some(from) = roots
                .iter()
                .map(|r| object_under(r, h))
                .find(|p| be.exists(p))
            else {
                missing.push(*h);
                continue;
            };
            let to = self.object_path(h);
            copy_durably(be, &from, &to).map_err(|e| self.fail(&to, "restoring", e))?;
            if let Some(header) = self.header_of(&to) {
                self.stats.object(header.stored_size, header.size, true);
            }
        }
        Ok(missing)
    }

    /// Where a sweep in archive style keeps object `hash`.
    pub(crate) fn archived_path(&self, hash: &ContentHash) -> Option<PathBuf> {
        self.archive.as_ref().map(|a| object_under(a, hash))
    }
}
