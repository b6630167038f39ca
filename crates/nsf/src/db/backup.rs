//! What an online backup reads of an open database instance (design.md
//! §3.6): its file handle, identity and the high-water mark at the start,
//! so the copier can re-read the pages attachments may have been streamed
//! to during the copy (I7 content is not in the log).

use super::Database;
use crate::{DbInstanceId, NsfResult, ReplicaId};
use std::sync::Arc;
use storage::FileHandle;

/// An open instance as the backup copier sees it.
pub(crate) struct BackupSource {
    pub handle: Arc<dyn FileHandle>,
    pub replica_id: ReplicaId,
    pub instance_id: DbInstanceId,
    /// Every page at or past this was never used when the copy started:
    /// attachment content streamed during the copy lies there (I7).
    pub high_water: u32,
}

impl Database {
    /// The instance's file and identity for a backup. A database that
    /// refuses writes (failed, needing fixup, I21) is refused: its pages may
    /// be missing from the log the backup relies on (I29).
    pub(crate) fn backup_source(&self) -> NsfResult<BackupSource> {
        self.core.check_writable()?;
        let h = self.state.read();
        Ok(BackupSource {
            handle: self.core.handle.clone(),
            replica_id: h.replica_id,
            instance_id: h.instance_id,
            high_water: self.core.high_water(),
        })
    }
}
