//! Compacting a database (docs/design.md §2.10): the one implementation
//! behind the native `Compact` request, `POST /db/{db}/compact` and the
//! embedded `folio compact`, so all three report the same figures.

use super::{Caller, Service};
use crate::error::nsf_err;
use crate::ServerResult;
use protocol::CompactSummary;

impl Service {
    /// Compacts `path` in place (others go on reading and writing) or,
    /// with `copy`, rewrites it under a new instance id (the database
    /// must not be in use). Needs Manager access (a server administrator
    /// has it everywhere). Durable when it returns; a dry run writes
    /// nothing.
    pub fn compact(
        &self,
        caller: &Caller,
        path: &str,
        copy: bool,
        dry_run: bool,
    ) -> ServerResult<CompactSummary> {
        {
            // Checked, then let go: a copy needs the instance closed.
            let (db, _) = self.reach(caller, path)?;
            self.require_manager(caller, &db)?;
        }
        let r = self.engine.compact(path, copy, dry_run).map_err(nsf_err)?;
        Ok(CompactSummary {
            path: r.path,
            style: r.style,
            dry_run: r.dry_run,
            bytes_before: r.bytes_before,
            bytes_after: r.bytes_after,
            pages_before: r.pages_before,
            pages_after: r.pages_after,
            free_pages_before: r.free_pages_before,
            leaked_pages: r.leaked_pages,
            pages_moved: r.pages_moved,
            steps: r.steps,
            views_reset: r.views_reset,
            truncated: r.truncated,
            instance_before: r.instance_before,
            instance_after: r.instance_after,
            notes_lost: r.notes_lost,
            attachments_lost: r.attachments_lost,
        })
    }
}
