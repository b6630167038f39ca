//! A database's lifecycle beyond create: delete (design.md I42, I43),
//! for its Manager or a server administrator, and copy (a replica, or a
//! non-replica copy), for administrators. A caller who may not see the
//! database gets the answer a missing one gets ([`Service::reach`]), so
//! neither can be used to probe which databases exist.

use super::wire::database_info;
use super::{Caller, Service};
use crate::error::{nsf_err, view_err};
use crate::{ServerError, ServerResult};
use replica::local::LocalOptions;
use views::ViewDef;

impl Service {
    /// Deletes the database at `path`; durable when it returns (I42).
    /// Handles to it that connections, views or the router still hold
    /// refuse from then on (404, "the database was deleted", I43).
    pub fn delete_database(&self, caller: &Caller, path: &str) -> ServerResult<()> {
        let (db, _) = self.reach(caller, path)?;
        self.require_manager(caller, &db)?;
        let path = db.path().to_string();
        drop(db);
        self.engine.delete_database(&path).map_err(nsf_err)
    }
}

/// What a copy made.
#[derive(Clone, Debug)]
pub struct Copied {
    /// The new database.
    pub info: protocol::DatabaseInfo,
    /// Documents copied (a replica copy: stored by the replication).
    pub documents: u64,
    /// View and folder definitions defined on a non-replica copy.
    pub views: u64,
}

impl Service {
    /// Copies `src` into a new database `dst` (server administrators,
    /// who alone create databases). `replica`: a new replica (the same
    /// replica id) filled by a full local replication, design notes and
    /// ACL included. Otherwise a non-replica copy (`Engine::copy_database`:
    /// a new replica id, the same documents and ACL) on which the
    /// source's views and folders are defined again (folders start
    /// empty: membership is index state). Durable when it returns.
    pub fn copy_database(
        &self,
        caller: &Caller,
        src: &str,
        dst: &str,
        replica: bool,
    ) -> ServerResult<Copied> {
        if !caller.admin {
            return Err(ServerError::Forbidden(
                "only server administrators may copy databases (a copy is a new database)".into(),
            ));
        }
        let (source, _) = self.reach(caller, src)?;
        if replica {
            let info = source.info().map_err(nsf_err)?;
            let target = self
                .engine
                .create_replica(dst, info.replica_id, &info.title)
                .map_err(nsf_err)?;
            let report =
                replica::local::pull(&source, &target, &LocalOptions::default()).map_err(|f| {
                    ServerError::Internal(format!(
                        "replicating {src} into {dst}: {} (a rerun of `folio replicate` resumes)",
                        f.error
                    ))
                })?;
            return Ok(Copied {
                info: database_info(&target)?,
                documents: report.pull.stored + report.pull.replaced,
                views: 0,
            });
        }
        let report = self.engine.copy_database(src, dst).map_err(nsf_err)?;
        let target = self.engine.open_database(&report.dst).map_err(nsf_err)?;
        let mut defs = Vec::new();
        source
            .for_each_note(|note| {
                if note.item("$ViewDef").is_some() {
                    defs.push(ViewDef::from_note(&note));
                }
                Ok(())
            })
            .map_err(nsf_err)?;
        let views = defs.len() as u64;
        for def in defs {
            self.views
                .create(&target, def.map_err(view_err)?)
                .map_err(view_err)?;
        }
        Ok(Copied {
            info: database_info(&target)?,
            documents: report.documents,
            views,
        })
    }
}
