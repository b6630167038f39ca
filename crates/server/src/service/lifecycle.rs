//! A database's end: delete (design.md I42, I43), for its Manager or a
//! server administrator. A caller who may not see the database gets the
//! answer a missing one gets ([`Service::reach`]), so a delete cannot be
//! used to probe which databases exist.

use super::{Caller, Service};
use crate::error::nsf_err;
use crate::ServerResult;

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
