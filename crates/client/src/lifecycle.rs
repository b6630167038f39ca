//! Lifecycle requests over the native protocol (docs/protocol.md §5.2):
//! `DeleteDatabase` (the database's Manager or a server administrator),
//! `CopyDatabase` (administrators) and `DeleteAttachment` (whoever may
//! edit the document).

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

impl Client {
    /// Removes the attachment `name` from a document (Editor access, or
    /// an Author named in its Author items), as an update that drops it;
    /// `based_on` makes it conditional on that sequence number. Durable
    /// when this returns; a missing attachment is 404 naming it.
    pub async fn delete_attachment(
        &self,
        db: protocol::DbHandle,
        unid: protocol::Unid,
        name: &str,
        based_on: Option<u32>,
    ) -> Result<protocol::NoteMeta, ClientError> {
        let request = Request::DeleteAttachment {
            db,
            unid,
            name: name.into(),
            based_on,
        };
        match self.request(request).await? {
            Response::Saved(meta) => Ok(meta),
            other => Err(ClientError::unexpected("Saved", &other)),
        }
    }
}
