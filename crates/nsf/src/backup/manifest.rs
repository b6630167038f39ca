//! The backup manifest: what a backup directory holds and the log range
//! that makes its copies consistent (I35).
//!
//! ```text
//!   DEST/manifest.json        written last, atomically (I9): a backup
//!                             without it did not finish
//!   DEST/files/<db path>      each database's copy, page by page
//! ```
//!
//! Ids are hex strings (as `db info` prints them), so the JSON reads the
//! same in any language; LSNs and times are plain numbers.

use crate::{DbInstanceId, NsfError, NsfResult, ReplicaId};
use std::path::{Path, PathBuf};
use storage::backend::read_file;
use storage::Backend;

/// The manifest's file name in a backup directory.
pub(crate) const MANIFEST_FILE: &str = "manifest.json";
/// The folder of database copies in a backup directory.
pub(crate) const FILES_DIR: &str = "files";
/// The manifest's format version.
pub(crate) const MANIFEST_FORMAT: u32 = 1;

/// One database in a backup.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct BackedUpDb {
    /// Path relative to the data directory.
    pub path: String,
    /// Replica id, 16 hex digits.
    pub replica_id: String,
    /// The instance whose log records roll the copy forward (I36).
    pub instance_id: String,
    /// Bytes copied.
    pub size: u64,
    /// crc32c of the copy.
    pub crc32c: u32,
}

impl BackedUpDb {
    pub(crate) fn new(path: &str, replica: ReplicaId, instance: DbInstanceId) -> BackedUpDb {
        BackedUpDb {
            path: path.to_string(),
            replica_id: format!("{replica}"),
            instance_id: format!("{instance}"),
            size: 0,
            crc32c: 0,
        }
    }

    pub fn instance(&self) -> Option<DbInstanceId> {
        u64::from_str_radix(&self.instance_id, 16)
            .ok()
            .map(DbInstanceId)
    }
}

/// What a backup directory holds.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct BackupManifest {
    pub format: u32,
    /// The log the range belongs to, 16 hex digits.
    pub log_id: String,
    /// Restore rolls forward from here: the redo LSN of the checkpoint
    /// taken before the first page was copied.
    pub start_lsn: u64,
    /// The durable LSN after the last page was copied: a restore must
    /// reach at least this point (no copied page is newer, I1).
    pub end_lsn: u64,
    /// When the copy started and finished, µs since the Unix epoch.
    pub started_micros: i64,
    pub finished_micros: i64,
    pub databases: Vec<BackedUpDb>,
}

impl BackupManifest {
    /// Reads `dir/manifest.json`.
    pub(crate) fn load(backend: &dyn Backend, dir: &Path) -> NsfResult<BackupManifest> {
        let bad = |reason: String| NsfError::BadBackup {
            dir: dir.display().to_string(),
            reason,
        };
        let file = dir.join(MANIFEST_FILE);
        if !backend.exists(&file) {
            return Err(bad(format!(
                "it has no {MANIFEST_FILE} (the backup did not finish, or this is not a backup directory)"
            )));
        }
        let bytes = read_file(backend, &file)
            .map_err(|e| bad(format!("cannot read {MANIFEST_FILE}: {e}")))?;
        let m: BackupManifest = serde_json::from_slice(&bytes)
            .map_err(|e| bad(format!("{MANIFEST_FILE} does not parse: {e}")))?;
        if m.format != MANIFEST_FORMAT {
            return Err(bad(format!(
                "manifest format {} is not the one this version reads ({MANIFEST_FORMAT})",
                m.format
            )));
        }
        if u64::from_str_radix(&m.log_id, 16).is_err() {
            return Err(bad(format!("log id {:?} is not hexadecimal", m.log_id)));
        }
        if m.start_lsn > m.end_lsn {
            return Err(bad(format!(
                "start LSN {} lies after end LSN {}",
                m.start_lsn, m.end_lsn
            )));
        }
        for d in &m.databases {
            crate::DbPath::parse(&d.path)?;
            if d.instance().is_none() {
                return Err(bad(format!(
                    "{}: instance id {:?} is not hexadecimal",
                    d.path, d.instance_id
                )));
            }
        }
        Ok(m)
    }

    pub fn log_id(&self) -> u64 {
        u64::from_str_radix(&self.log_id, 16).unwrap_or(0)
    }
}

/// What `Engine::backup` did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BackupReport {
    /// The backup directory.
    pub dest: PathBuf,
    pub manifest: BackupManifest,
    /// Bytes read from database files (pages re-read at the end included).
    pub bytes_copied: u64,
}
