//! A database's end over the native protocol: `DeleteDatabase`
//! (docs/protocol.md §5.2), for the database's Manager or a server
//! administrator.

use crate::client::Client;
use crate::error::ClientError;
use protocol::{Request, Response};

impl Client {
    /// Deletes the database at `path`; durable when this returns. Handles
    /// to it that any connection holds answer "the database was deleted"
    /// (404) from then on.
    pub async fn delete_database(&self, path: &str) -> Result<(), ClientError> {
        let request = Request::DeleteDatabase { path: path.into() };
        match self.request(request).await? {
            Response::Done => Ok(()),
            other => Err(ClientError::unexpected("Done", &other)),
        }
    }
}

/// What a server-side copy made (`CopyDatabase`).
#[derive(Clone, Debug, PartialEq)]
pub struct DatabaseCopied {
    /// The new database.
    pub info: protocol::DatabaseInfo,
    /// Documents copied.
    pub documents: u64,
    /// View and folder definitions defined on a non-replica copy.
    pub views: u64,
}

impl Client {
    /// Copies `src` into a new database `dst` on the server (server
    /// administrators): with `replica`, a new replica filled by a full
    /// replication; otherwise a non-replica copy (new replica id, same
    /// documents). Durable when this returns.
    pub async fn copy_database(
        &self,
        src: &str,
        dst: &str,
        replica: bool,
    ) -> Result<DatabaseCopied, ClientError> {
        let request = Request::CopyDatabase {
            src: src.into(),
            dst: dst.into(),
            replica,
        };
        match self.request(request).await? {
            Response::DatabaseCopied {
                info,
                documents,
                views,
            } => Ok(DatabaseCopied {
                info,
                documents,
                views,
            }),
            other => Err(ClientError::unexpected("DatabaseCopied", &other)),
        }
    }
}
