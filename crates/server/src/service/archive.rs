//! Archiving the transaction log (archive style): the one implementation
//! behind the native `Archive` request, `POST /admin/archive` and the
//! embedded `folio archive`.

use super::{Caller, Service};
use crate::error::nsf_err;
use crate::{ServerError, ServerResult};
use protocol::ArchiveSummary;
use std::path::Path;

impl Service {
    /// Copies the completed log extents not yet archived to `to` (a
    /// directory on the server; default `translog.archive_dir`), verifies
    /// them, and lets the log reuse them. Server administrators only: the
    /// server writes where it is told. Durable when it returns.
    pub fn archive(&self, caller: &Caller, to: Option<&str>) -> ServerResult<ArchiveSummary> {
        if !caller.admin {
            return Err(ServerError::Forbidden(
                "archiving the transaction log is for server administrators".into(),
            ));
        }
        if let Some(d) = to {
            super::backup::check_server_dir(d, "the archive directory")?;
        }
        let r = self.engine.archive(to.map(Path::new)).map_err(nsf_err)?;
        Ok(ArchiveSummary {
            dir: r.archive_dir.display().to_string(),
            extents: r.extents_copied,
            bytes: r.bytes_copied,
            archived_lsn: r.archived_lsn.0,
            waiting: r.extents_waiting,
            millis: u64::try_from(r.elapsed.as_millis()).unwrap_or(u64::MAX),
        })
    }
}
