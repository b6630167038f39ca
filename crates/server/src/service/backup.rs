//! Online backup: the one implementation behind the native `Backup`
//! request, `POST /admin/backup` and the embedded `folio backup`
//! (design.md §3.6).

use super::{Caller, Service};
use crate::error::nsf_err;
use crate::{ServerError, ServerResult};
use protocol::BackupSummary;
use std::path::Path;
use std::time::Instant;

impl Service {
    /// Copies `dbs` (every database when empty) into `dest`, a directory
    /// on the server, while writers go on; the log range that makes the
    /// copies consistent is archived. Server administrators only: the
    /// server writes where it is told. Durable when it returns (the
    /// manifest, written last, completes the backup).
    pub fn backup(
        &self,
        caller: &Caller,
        dest: &str,
        dbs: &[String],
    ) -> ServerResult<BackupSummary> {
        if !caller.admin {
            return Err(ServerError::Forbidden(
                "backing up databases is for server administrators".into(),
            ));
        }
        if !Path::new(dest).is_absolute() {
            return Err(ServerError::BadRequest(
                "the backup directory must be an absolute path on the server".into(),
            ));
        }
        let started = Instant::now();
        let r = self.engine.backup(Path::new(dest), dbs).map_err(nsf_err)?;
        Ok(BackupSummary {
            dest: r.dest.display().to_string(),
            databases: r
                .manifest
                .databases
                .iter()
                .map(|d| d.path.clone())
                .collect(),
            log_id: r.manifest.log_id.clone(),
            start_lsn: r.manifest.start_lsn,
            end_lsn: r.manifest.end_lsn,
            bytes: r.bytes_copied,
            millis: u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX),
        })
    }
}
