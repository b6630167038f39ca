//! Typed calls for the requests answered by a single response.
//!
//! Each method builds one [`Request`], sends it with
//! [`Client::request`] and takes the response variant it expects apart;
//! any other variant is [`ClientError::UnexpectedResponse`], since the
//! server answers each request with exactly one kind (docs/protocol.md
//! §5.2). Where a response has no protocol type of its own, a small struct
//! here gives its fields names.

use crate::client::Client;
use crate::error::ClientError;
use protocol::{
    CollectionHandle, Cursor, DatabaseInfo, DatabaseSummary, DbHandle, DocRef, Document, Found,
    NoteMeta, ReadFlags, Request, Response, Row, Start, Statistic, Unid,
};

/// A view or folder opened with [`Client::open_collection`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CollectionInfo {
    /// The handle to use in later calls.
    pub collection: CollectionHandle,
    /// Column titles.
    pub titles: Vec<String>,
    /// Whether the first column is a category.
    pub categorized: bool,
    /// Number of document entries.
    pub count: u64,
    /// The change sequence the index reflects.
    pub seq: u64,
}

/// What [`Client::update_collection`] did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CollectionUpdate {
    /// The change sequence the index reflects now.
    pub seq: u64,
    /// Documents whose entries changed.
    pub changed: u64,
}

/// Who the server thinks the caller is, and what a database grants them
/// ([`Client::my_access`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Access {
    /// The caller's name (`None`: anonymous).
    pub user: Option<String>,
    /// Access level name, e.g. `editor`.
    pub level: String,
    /// Roles the caller holds in the database.
    pub roles: Vec<String>,
}

impl Client {
    /// Creates a database file at `path` (relative to the server's data
    /// directory).
    pub async fn create_database(
        &self,
        path: &str,
        title: &str,
    ) -> Result<DatabaseInfo, ClientError> {
        let request = Request::CreateDatabase {
            path: path.into(),
            title: title.into(),
        };
        match self.request(request).await? {
            Response::DatabaseInfo(info) => Ok(info),
            other => Err(ClientError::unexpected("DatabaseInfo", &other)),
        }
    }

    /// Lists the databases, or those under `folder` (e.g. `mail/`).
    pub async fn list_databases(
        &self,
        folder: Option<&str>,
    ) -> Result<Vec<DatabaseSummary>, ClientError> {
        let request = Request::ListDatabases {
            folder: folder.map(str::to_string),
        };
        match self.request(request).await? {
            Response::Databases(list) => Ok(list),
            other => Err(ClientError::unexpected("Databases", &other)),
        }
    }

    /// Describes a database without opening it.
    pub async fn database_info(&self, path: &str) -> Result<DatabaseInfo, ClientError> {
        let request = Request::DatabaseInfo { path: path.into() };
        match self.request(request).await? {
            Response::DatabaseInfo(info) => Ok(info),
            other => Err(ClientError::unexpected("DatabaseInfo", &other)),
        }
    }

    /// Opens a database on this connection; the handle names it in later
    /// calls (from any clone of this client).
    pub async fn open_database(&self, path: &str) -> Result<(DbHandle, DatabaseInfo), ClientError> {
        let request = Request::OpenDatabase { path: path.into() };
        match self.request(request).await? {
            Response::DatabaseOpened { db, info } => Ok((db, info)),
            other => Err(ClientError::unexpected("DatabaseOpened", &other)),
        }
    }

    /// Releases a handle from [`open_database`](Self::open_database).
    pub async fn close_database(&self, db: DbHandle) -> Result<(), ClientError> {
        done(self.request(Request::CloseDatabase { db }).await?)
    }

    /// Creates a document from a JSON object (the `nsf::json` mapping).
    pub async fn create_document(&self, db: DbHandle, json: &str) -> Result<NoteMeta, ClientError> {
        let request = Request::CreateDocument {
            db,
            json: json.into(),
        };
        saved(self.request(request).await?)
    }

    /// Reads a document (or its deletion stub) by UNID or note id.
    pub async fn read_document(&self, db: DbHandle, doc: DocRef) -> Result<Document, ClientError> {
        match self.request(Request::ReadDocument { db, doc }).await? {
            Response::Document(document) => Ok(document),
            other => Err(ClientError::unexpected("Document", &other)),
        }
    }

    /// Updates a document with the items of `json` (`null` removes one).
    /// With `based_on: Some(seq)` and `force: false`, fails with a save
    /// conflict ([`ClientError::is_conflict`]) if the document's sequence
    /// number is no longer `seq`.
    pub async fn update_document(
        &self,
        db: DbHandle,
        unid: Unid,
        based_on: Option<u32>,
        force: bool,
        json: &str,
    ) -> Result<NoteMeta, ClientError> {
        let request = Request::UpdateDocument {
            db,
            unid,
            based_on,
            force,
            json: json.into(),
        };
        saved(self.request(request).await?)
    }

    /// Deletes a document, leaving a deletion stub; `based_on` and `force`
    /// as for [`update_document`](Self::update_document).
    pub async fn delete_document(
        &self,
        db: DbHandle,
        unid: Unid,
        based_on: Option<u32>,
        force: bool,
    ) -> Result<NoteMeta, ClientError> {
        let request = Request::DeleteDocument {
            db,
            unid,
            based_on,
            force,
        };
        saved(self.request(request).await?)
    }

    /// Up to `limit` documents and deletion stubs changed after `since`,
    /// oldest change first; then the cursor to continue from and whether
    /// more changes wait.
    pub async fn modified_since(
        &self,
        db: DbHandle,
        since: Cursor,
        limit: u32,
    ) -> Result<(Vec<Document>, Cursor, bool), ClientError> {
        let request = Request::ModifiedSince { db, since, limit };
        match self.request(request).await? {
            Response::Changes { docs, next, more } => Ok((docs, next, more)),
            other => Err(ClientError::unexpected("Changes", &other)),
        }
    }

    /// Opens a view or folder index by name.
    pub async fn open_collection(
        &self,
        db: DbHandle,
        name: &str,
    ) -> Result<CollectionInfo, ClientError> {
        let request = Request::OpenCollection {
            db,
            name: name.into(),
        };
        match self.request(request).await? {
            Response::CollectionOpened {
                collection,
                titles,
                categorized,
                count,
                seq,
            } => Ok(CollectionInfo {
                collection,
                titles,
                categorized,
                count,
                seq,
            }),
            other => Err(ClientError::unexpected("CollectionOpened", &other)),
        }
    }

    /// Reads up to `count` document rows from `start`; the total number of
    /// entries comes back if `flags.count` asked for it.
    pub async fn read_entries(
        &self,
        collection: CollectionHandle,
        start: Start,
        count: u32,
        flags: ReadFlags,
    ) -> Result<(Vec<Row>, Option<u64>), ClientError> {
        let request = Request::ReadEntries {
            collection,
            start,
            count,
            flags,
        };
        match self.request(request).await? {
            Response::Entries { rows, total } => Ok((rows, total)),
            other => Err(ClientError::unexpected("Entries", &other)),
        }
    }

    /// Where the entries with `key` (or, with `prefix`, starting with it)
    /// begin and how many there are; `None` if there are none.
    pub async fn find_by_key(
        &self,
        collection: CollectionHandle,
        key: &str,
        prefix: bool,
    ) -> Result<Option<Found>, ClientError> {
        let request = Request::FindByKey {
            collection,
            key: key.into(),
            prefix,
        };
        match self.request(request).await? {
            Response::Found(found) => Ok(found),
            other => Err(ClientError::unexpected("Found", &other)),
        }
    }

    /// Applies the database's changes since the index was last updated.
    pub async fn update_collection(
        &self,
        collection: CollectionHandle,
    ) -> Result<CollectionUpdate, ClientError> {
        match self
            .request(Request::UpdateCollection { collection })
            .await?
        {
            Response::CollectionUpdated { seq, changed } => Ok(CollectionUpdate { seq, changed }),
            other => Err(ClientError::unexpected("CollectionUpdated", &other)),
        }
    }

    /// Releases a handle from [`open_collection`](Self::open_collection).
    pub async fn close_collection(&self, collection: CollectionHandle) -> Result<(), ClientError> {
        done(
            self.request(Request::CloseCollection { collection })
                .await?,
        )
    }

    /// Adds documents to a folder.
    pub async fn folder_add(
        &self,
        db: DbHandle,
        folder: &str,
        unids: &[Unid],
    ) -> Result<(), ClientError> {
        let request = Request::FolderAdd {
            db,
            folder: folder.into(),
            unids: unids.to_vec(),
        };
        done(self.request(request).await?)
    }

    /// Removes documents from a folder.
    pub async fn folder_remove(
        &self,
        db: DbHandle,
        folder: &str,
        unids: &[Unid],
    ) -> Result<(), ClientError> {
        let request = Request::FolderRemove {
            db,
            folder: folder.into(),
            unids: unids.to_vec(),
        };
        done(self.request(request).await?)
    }

    /// Deletes a view or folder with its index (needs Designer access);
    /// the name may then be defined again.
    pub async fn delete_view(&self, db: DbHandle, name: &str) -> Result<(), ClientError> {
        let request = Request::DeleteView {
            db,
            name: name.into(),
        };
        done(self.request(request).await?)
    }

    /// The server's statistics.
    pub async fn statistics(&self) -> Result<Vec<Statistic>, ClientError> {
        match self.request(Request::Statistics).await? {
            Response::Statistics(stats) => Ok(stats),
            other => Err(ClientError::unexpected("Statistics", &other)),
        }
    }

    /// Archive style: the server copies its completed log extents to
    /// `to` (a directory on the server; default its
    /// `translog.archive_dir`), verifies them and lets its log reuse them.
    /// Server administrators only.
    pub async fn archive(&self, to: Option<&str>) -> Result<protocol::ArchiveSummary, ClientError> {
        let to = to.map(str::to_string);
        match self.request(Request::Archive { to }).await? {
            Response::Archived(summary) => Ok(summary),
            other => Err(ClientError::unexpected("Archived", &other)),
        }
    }

    /// Compacts a database on the server (docs/design.md §2.10): in place,
    /// or with `copy` rewritten under a new instance id; `dry_run` only
    /// reports. Manager access or a server administrator.
    pub async fn compact(
        &self,
        path: &str,
        copy: bool,
        dry_run: bool,
    ) -> Result<protocol::CompactSummary, ClientError> {
        let path = path.to_string();
        match self
            .request(Request::Compact {
                path,
                copy,
                dry_run,
            })
            .await?
        {
            Response::Compacted(summary) => Ok(summary),
            other => Err(ClientError::unexpected("Compacted", &other)),
        }
    }

    /// Online backup (archive style) of `dbs` (every database when empty)
    /// into `dest`, an absolute directory on the server. Server
    /// administrators only.
    pub async fn backup(
        &self,
        dest: &str,
        dbs: &[String],
    ) -> Result<protocol::BackupSummary, ClientError> {
        let req = Request::Backup {
            dest: dest.to_string(),
            dbs: dbs.to_vec(),
        };
        match self.request(req).await? {
            Response::BackedUp(summary) => Ok(summary),
            other => Err(ClientError::unexpected("BackedUp", &other)),
        }
    }

    /// A database's access-control list as JSON (needs Manager access).
    pub async fn get_acl(&self, path: &str) -> Result<String, ClientError> {
        match self.request(Request::GetAcl { path: path.into() }).await? {
            Response::Acl { json } => Ok(json),
            other => Err(ClientError::unexpected("Acl", &other)),
        }
    }

    /// Replaces a database's access-control list (JSON, as docs/http.md
    /// "Access control" shows it).
    pub async fn set_acl(&self, path: &str, json: &str) -> Result<(), ClientError> {
        let request = Request::SetAcl {
            path: path.into(),
            json: json.into(),
        };
        done(self.request(request).await?)
    }

    /// Who the server thinks the caller is and what `path` grants them.
    pub async fn my_access(&self, path: &str) -> Result<Access, ClientError> {
        match self
            .request(Request::MyAccess { path: path.into() })
            .await?
        {
            Response::Access { user, level, roles } => Ok(Access { user, level, roles }),
            other => Err(ClientError::unexpected("Access", &other)),
        }
    }
}

fn done(response: Response) -> Result<(), ClientError> {
    match response {
        Response::Done => Ok(()),
        other => Err(ClientError::unexpected("Done", &other)),
    }
}

fn saved(response: Response) -> Result<NoteMeta, ClientError> {
    match response {
        Response::Saved(meta) => Ok(meta),
        other => Err(ClientError::unexpected("Saved", &other)),
    }
}
