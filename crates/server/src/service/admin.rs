//! Administration: a database's access-control list, the caller's own
//! access, and the server's statistics.

use super::access::bad;
use super::{Caller, Service};
use crate::error::nsf_err;
use crate::{ServerError, ServerResult};
use nsf::{AccessLevel, Acl};

impl Service {
    /// A database's ACL as JSON (Manager access).
    pub fn get_acl(&self, caller: &Caller, path: &str) -> ServerResult<String> {
        let (db, _) = self.reach(caller, path)?;
        self.require_manager(caller, &db)?;
        let acl = db
            .acl()
            .map_err(nsf_err)?
            .unwrap_or_else(|| Acl::for_creator(None));
        Ok(acl.to_json())
    }

    /// Replaces a database's ACL (Manager access). An ACL must keep at
    /// least one Manager, or no one could ever change it again.
    pub fn set_acl(&self, caller: &Caller, path: &str, json: &str) -> ServerResult<()> {
        let (db, _) = self.reach(caller, path)?;
        self.require_manager(caller, &db)?;
        let acl = Acl::parse_json(json).map_err(|e| bad(e.to_string()))?;
        if !acl.entries.iter().any(|e| e.level == AccessLevel::Manager) {
            return Err(bad(
                "an access-control list needs at least one entry with Manager access".into(),
            ));
        }
        db.set_acl(&acl).map_err(nsf_err)?;
        Ok(())
    }

    /// The caller's level and roles in a database.
    pub fn my_access(
        &self,
        caller: &Caller,
        path: &str,
    ) -> ServerResult<(Option<String>, String, Vec<String>)> {
        let (_, a) = self.reach(caller, path)?;
        Ok((
            caller.user.clone(),
            a.level().as_str().to_string(),
            a.roles().to_vec(),
        ))
    }

    /// Server statistics (for named callers; anonymous ones see nothing).
    pub fn statistics(&self, caller: &Caller) -> ServerResult<Vec<protocol::Statistic>> {
        if caller.user.is_none() && !caller.admin {
            return Err(ServerError::Unauthenticated(
                "statistics are for signed-in users".into(),
            ));
        }
        Ok(self.stats.snapshot(&self.engine))
    }
}
