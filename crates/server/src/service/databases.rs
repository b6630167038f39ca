//! Databases: create, list, open and describe. Listing reads the
//! catalog and opens nothing; opening goes through [`Service::reach`], so
//! a database the caller may not see is never told apart from one that
//! does not exist.

use super::wire::database_info;
use super::{Caller, Service};
use crate::error::nsf_err;
use crate::{ServerError, ServerResult};
use nsf::{Acl, Database};
use protocol::{DatabaseInfo, DatabaseSummary};
use std::sync::Arc;

impl Service {
    /// Creates a database; its creator becomes its Manager. Only server
    /// administrators create databases.
    pub fn create_database(
        &self,
        caller: &Caller,
        path: &str,
        title: &str,
    ) -> ServerResult<DatabaseInfo> {
        if !caller.admin {
            return Err(ServerError::Forbidden(
                "only server administrators may create databases".into(),
            ));
        }
        let db = self.engine.create_database(path, title).map_err(nsf_err)?;
        db.set_acl(&Acl::for_creator(caller.user.as_deref()))
            .map_err(nsf_err)?;
        database_info(&db)
    }

    /// Databases under `folder` the caller has any access to, from the
    /// catalog: listing opens no database, however many there are, and a
    /// caller learns of no database its ACL does not admit (design.md
    /// I20). A database without a usable list admits only administrators,
    /// as [`Service::access`] does.
    pub fn list_databases(
        &self,
        caller: &Caller,
        folder: Option<&str>,
    ) -> ServerResult<Vec<DatabaseSummary>> {
        let user = caller.user.as_deref();
        let listed = self.engine.list_databases_where(folder, |audience| {
            caller.admin || audience.admits(user).unwrap_or(false)
        });
        Ok(listed
            .into_iter()
            .map(|l| DatabaseSummary {
                path: l.path,
                title: l.title,
            })
            .collect())
    }

    /// Opens a database the caller has some access to.
    pub fn open_database(
        &self,
        caller: &Caller,
        path: &str,
    ) -> ServerResult<(Arc<Database>, DatabaseInfo)> {
        let (db, _) = self.reach(caller, path)?;
        let info = database_info(&db)?;
        Ok((db, info))
    }

    /// A database's description.
    pub fn database_info(&self, caller: &Caller, path: &str) -> ServerResult<DatabaseInfo> {
        self.open_database(caller, path).map(|(_, info)| info)
    }

    /// A database's description, and whether the caller sees every
    /// document in it (an administrator: `$Readers` restricts everyone
    /// else). The note count and attachment totals count every document,
    /// so a door shows them only to such a caller: to anyone else they
    /// would tell of documents hidden from them (docs/http.md).
    pub fn database_info_seen(
        &self,
        caller: &Caller,
        path: &str,
    ) -> ServerResult<(DatabaseInfo, bool)> {
        let (db, access) = self.reach(caller, path)?;
        Ok((database_info(&db)?, access.sees_every_document()))
    }
}
