//! Online backup: the one implementation behind the native `Backup`
//! request, `POST /admin/backup` and the embedded `folio backup`
//! (design.md §3.6).

use super::{Caller, Service};
use crate::error::nsf_err;
use crate::{ServerError, ServerResult};
use nsf::BackupRun;
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
        check_server_dir(dest, "the backup directory")?;
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

    /// The backup history, newest first (`nsf::BackupRun`; durable in
    /// `<data>/backups.json`). Server administrators only: it names the
    /// server's directories and every database backed up.
    pub fn backup_history(&self, caller: &Caller) -> ServerResult<Vec<BackupRun>> {
        if !caller.admin {
            return Err(ServerError::Forbidden(
                "the backup history is for server administrators".into(),
            ));
        }
        self.engine.backup_history().map_err(nsf_err)
    }

    /// The backup history for `GET /metrics`, whose own access rule
    /// (administrators and `http_metrics_users`) the caller has passed:
    /// it exports figures only, never the directories and databases the
    /// history names. None (and a warning in the log) if the history
    /// cannot be read.
    pub(crate) fn backup_figures(&self) -> Option<Vec<BackupRun>> {
        self.engine
            .backup_history()
            .map_err(|e| tracing::warn!(error = %e, "/metrics: the backup history cannot be read"))
            .ok()
    }
}

/// A directory on the server named in a request: absolute, spelt
/// plainly (no `.` or `..` step, no NUL) and within the file system's
/// limits (a step of at most 255 bytes, 4,095 in all), so that a bad name
/// is refused before anything is copied rather than failing part-way.
pub(super) fn check_server_dir(dir: &str, what: &str) -> ServerResult<()> {
    let bad = |why: &str| Err(ServerError::BadRequest(format!("{what} {why}")));
    if !Path::new(dir).is_absolute() {
        return bad("must be an absolute path on the server");
    }
    if dir.contains('\0') || dir.len() > 4095 {
        return bad("is not a usable path (a NUL byte, or longer than 4,095 bytes)");
    }
    for step in dir.split('/') {
        if step == "." || step == ".." {
            return bad("must be spelt without . or .. steps");
        }
        if step.len() > 255 {
            return bad("has a step longer than 255 bytes");
        }
    }
    Ok(())
}
