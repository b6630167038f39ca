//! Fixup with the views layer: the engine repairs the note table and its
//! indexes (design.md §2.8) but owns no view index, so once a database is
//! fixed up every view and folder index of it is rebuilt here from the
//! repaired note table (folders keep their members; an entry for a lost
//! document goes with the rebuild), and named in the report's
//! `indexes_rebuilt`. The same runs at start-up for the databases the
//! engine fixed up automatically as it opened.

use super::access::forbidden;
use super::{Caller, Service};
use crate::error::{nsf_err, view_err};
use crate::ServerResult;
use nsf::{Engine, FixupReport};
use views::Views;

impl Service {
    /// Fixes up the database at `path` (it must not be open), then
    /// rebuilds its view and folder indexes; `dry_run` checks only and
    /// writes nothing. Durable when it returns.
    pub fn fixup_database(&self, path: &str, dry_run: bool) -> ServerResult<FixupReport> {
        let mut report = self.engine.fixup(path, dry_run).map_err(nsf_err)?;
        if !dry_run {
            rebuild_views(&self.engine, &self.views, &mut report)?;
        }
        Ok(report)
    }

    /// [`Service::fixup_database`] for a caller of the HTTP API: server
    /// administrators only, since the report counts and names every note
    /// of the file, `$Readers` or not. Anyone else is told what the
    /// database's other routes tell them: 401/404 if they may not see
    /// it, 403 if they may. The database must be idle (no request has it
    /// open); the engine closes it, claims its path for the run, and
    /// refuses with 400 if it is in use.
    pub fn fixup_as(
        &self,
        caller: &Caller,
        path: &str,
        dry_run: bool,
    ) -> ServerResult<FixupReport> {
        if !caller.admin {
            let (db, _) = self.reach(caller, path)?;
            return Err(forbidden(
                caller,
                "is not a server administrator: fixup is for administrators, in",
                &db,
            ));
        }
        self.fixup_database(path, dry_run)
    }
}

/// Rebuilds every view and folder index of the database `report` fixed
/// up, adding each to `report.indexes_rebuilt`.
pub(crate) fn rebuild_views(
    engine: &Engine,
    views: &Views,
    report: &mut FixupReport,
) -> ServerResult<()> {
    let db = engine.open_database(&report.path).map_err(nsf_err)?;
    for (name, kind) in views.list(&db).map_err(view_err)? {
        views.rebuild(&db, &name).map_err(view_err)?;
        report
            .indexes_rebuilt
            .push(format!("{kind:?} {name}").to_lowercase());
    }
    Ok(())
}

/// At start-up: the view indexes of the databases the engine fixed up as
/// it opened (`translog.auto_fixup`) are rebuilt before anyone reads
/// them. A failure is logged; the views layer rebuilds on next use.
pub(crate) fn rebuild_views_of_auto_fixups(engine: &Engine, views: &Views) {
    for report in engine.fixups() {
        let mut r = report.clone();
        match rebuild_views(engine, views, &mut r) {
            Ok(()) => {
                tracing::warn!(db = %r.path, indexes = ?r.indexes_rebuilt, "view indexes rebuilt after automatic fixup")
            }
            Err(e) => {
                tracing::error!(db = %r.path, error = %e, "rebuilding view indexes after automatic fixup failed")
            }
        }
    }
}
