//! The engine's door to compact (design.md §2.10): in place on the open
//! instance, or by copy through fixup's rebuild and swap (§2.8, I29) and
//! then in place on the new file.

use super::Engine;
use crate::{CompactReport, NsfError, NsfResult};
use storage::{OpenMode, PAGE_SIZE};

impl Engine {
    /// Compacts the database at `path`. In place (`copy` false) it runs
    /// while others read and write and keeps the instance id; by copy it
    /// needs the database closed (as fixup does), rewrites it under a new
    /// instance id — the remedy for damage — and then compacts the new
    /// file in place. Durable when it returns; a dry run writes nothing.
    /// Bad requests (a bad path, no such database) change nothing.
    pub fn compact(&self, path: &str, copy: bool, dry_run: bool) -> NsfResult<CompactReport> {
        self.check_open()?;
        let checkpoint = || self.checkpoint();
        if !copy || dry_run {
            let db = self.open_database(path)?;
            let mut r = db.compact_in_place(&checkpoint, dry_run)?;
            if copy {
                r.style = "copy".into();
            }
            return Ok(r);
        }
        let key = crate::dbpath::DbPath::parse(path)?;
        let full = self.shared.cfg.data_dir.join(key.as_str());
        let bytes_before = self
            .shared
            .backend
            .open(&full, OpenMode::Existing)
            .and_then(|f| f.len())
            .map_err(|e| match e.kind() {
                std::io::ErrorKind::NotFound => NsfError::NoSuchDatabase(key.to_string()),
                _ => NsfError::Io {
                    path: key.to_string(),
                    source: e,
                },
            })?;
        let fixed = self.fixup(key.as_str(), false)?;
        let db = self.open_database(key.as_str())?;
        let mut r = db.compact_in_place(&checkpoint, false)?;
        r.style = "copy".into();
        r.bytes_before = bytes_before;
        r.pages_before = (bytes_before / PAGE_SIZE as u64) as u32;
        r.instance_before = fixed.old_instance.map_or(0, |i| i.0);
        r.notes_lost = fixed.notes_lost.len() as u64;
        r.attachments_lost = fixed.attachments_lost.len() as u64;
        Ok(r)
    }
}
