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
