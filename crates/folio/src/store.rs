//! What the commands run over: one [`Store`] trait, two implementations.
//!
//! Every command exists embedded (the data directory opened by the
//! command itself) and with `--server` (a running server, through the
//! client library). Written twice, the two drifted apart; so each command
//! is written once, in `commands.rs` and `viewcli.rs`, over this trait,
//! and prints through one formatter (`output.rs`):
//!
//! ```text
//!   cli.rs ─ parse, pick the store ─▶ commands.rs / viewcli.rs ─▶ output.rs ─▶ stdout
//!                                          │
//!                                     dyn Store
//!                       ┌──────────────────┴──────────────────┐
//!          LocalStore (local.rs)                     RemoteStore (remote.rs)
//!   server::Service in-process, as a           client::blocking::Client over the
//!   server administrator                       native protocol to server::Service
//!          └──────────── the same access rules, defaults and checks ──┘
//! ```
//!
//! The embedded store is the server's own `Service` run in-process, so a
//! rule (a new database's ACL names its creator, an ACL keeps a Manager,
//! the change feed leaves out design notes, a view is refreshed when
//! opened) is the same code whichever way a command runs. The trait
//! speaks in typed values (the protocol's descriptions of databases,
//! documents and rows; `nsf`'s ACL; `views`' reports), never in printed
//! text.
//!
//! A few operations need the data directory's files (`db check`, `view
//! list`, `view rebuild`, `log info`) and one needs a server (`show
//! stats`); the store that cannot do one refuses it with
//! [`FolioError::NeedsDataDirectory`] or [`FolioError::NeedsServer`].
//! The mail user operations (the directory and mail files) are the
//! service's too, for server administrators; a running server keeps a
//! removed person's mail file (it cannot delete a database it may have
//! open), so `remove-user --delete-file` works embedded only. Sending
//! runs embedded only until the server has a send door; the networked
//! store refuses it with [`FolioError::NotYetOverServer`].
//!
//! [`FolioError::NeedsDataDirectory`]: crate::error::FolioError::NeedsDataDirectory
//! [`FolioError::NeedsServer`]: crate::error::FolioError::NeedsServer
//! [`FolioError::NotYetOverServer`]: crate::error::FolioError::NotYetOverServer

use crate::error::{FolioError, FolioResult};
use nsf::{Acl, CheckReport, Unid};
use protocol::{
    Cursor, DatabaseInfo, DatabaseSummary, Found, NoteMeta, ReadFlags, Row, Start, Statistic,
    Timestamp,
};
use std::io::{Read, Write};
use views::{Kind, RebuildReport, ViewDef};

/// A JSON object: a document's items (and `$` system fields).
pub type JsonObject = serde_json::Map<String, serde_json::Value>;

/// A document as a store returns it.
#[derive(Clone, Debug, PartialEq)]
pub struct Doc {
    /// Its ids and version.
    pub meta: NoteMeta,
    /// Whether this is a deletion stub.
    pub deleted: bool,
    /// Its items and system fields (`nsf::json`'s mapping); empty for a
    /// deletion stub.
    pub json: JsonObject,
}

impl Doc {
    /// A document as the protocol carries it, its JSON text parsed.
    pub fn from_protocol(d: protocol::Document) -> FolioResult<Doc> {
        let json = match serde_json::from_str(&d.json) {
            Ok(serde_json::Value::Object(m)) => m,
            _ => {
                return Err(FolioError::Internal(format!(
                    "document {} came back as something other than a JSON object",
                    d.meta.unid
                )))
            }
        };
        Ok(Doc {
            meta: d.meta,
            deleted: d.deleted,
            json,
        })
    }
}

/// A page of the change feed: documents and deletion stubs changed after
/// a cursor, oldest first.
#[derive(Clone, Debug)]
pub struct Changes {
    /// The documents the caller may see (design notes are not in it).
    pub docs: Vec<Doc>,
    /// Where the next page starts.
    pub next: Cursor,
    /// Whether there may be more after `next`.
    pub more: bool,
}

impl Changes {
    /// A page as the service and the client both hand it out.
    pub fn from_protocol(
        (docs, next, more): (Vec<protocol::Document>, Cursor, bool),
    ) -> FolioResult<Changes> {
        let docs = docs
            .into_iter()
            .map(Doc::from_protocol)
            .collect::<FolioResult<_>>()?;
        Ok(Changes { docs, next, more })
    }
}

/// Rows read from a view or folder.
#[derive(Clone, Debug)]
pub struct ViewPage {
    /// Column titles, in order.
    pub titles: Vec<String>,
    /// The rows.
    pub rows: Vec<Row>,
    /// Document entries in the view, when asked for.
    pub total: Option<u64>,
}

/// What bringing a view's index up to date did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ViewUpdate {
    /// Documents whose entries were looked at.
    pub notes_seen: u64,
    /// The change sequence the index reflects now.
    pub last_seq: u64,
}

/// A view or folder of a database.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ViewSummary {
    /// Its name.
    pub name: String,
    /// View or folder.
    pub kind: Kind,
}

/// Adding documents to a folder or taking them out: the server's own
/// type, so the embedded store hands it on as it is.
pub use server::service::FolderChange;

/// What became of a removed person's mail file: the protocol's type,
/// which both stores hand on as it is.
pub use protocol::MailFileFate;

/// A person taken out of the directory, and what became of their file:
/// the server's own type.
pub use server::service::RemovedPerson as RemovedUser;

/// Where a message went.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Sent {
    /// Into a mail box, for the router to deliver.
    Deposited(mail::DepositId),
    /// Into the sender's mail file, as a draft.
    Draft(mail::Draft),
}

/// Where documents are stored and views read: a data directory opened by
/// this process, or a server (see the module docs). Every path is a
/// database path relative to the data directory.
pub trait Store {
    // ------------------------------------------------------------ databases

    /// Creates a database; its ACL makes the caller its Manager.
    fn create_database(&self, path: &str, title: &str) -> FolioResult<DatabaseInfo>;
    /// The databases the caller may open.
    fn list_databases(&self) -> FolioResult<Vec<DatabaseSummary>>;
    /// A database's description.
    fn database_info(&self, path: &str) -> FolioResult<DatabaseInfo>;
    /// Deletes a database (its Manager or an administrator); durable when
    /// it returns (design.md I42).
    fn delete_database(&self, path: &str) -> FolioResult<()>;
    /// Copies a database into a new one (administrators): a replica, or
    /// a non-replica copy (new replica id, same documents). Durable when
    /// it returns.
    fn copy_database(&self, src: &str, dst: &str, replica: bool) -> FolioResult<server::Copied>;
    /// Checks a database's trees, indexes and note encoding (data
    /// directory only).
    fn check_database(&self, path: &str) -> FolioResult<CheckReport>;
    /// Fixes up a database (`dry_run`: checks only, writes nothing).
    fn fixup_database(&self, path: &str, dry_run: bool) -> FolioResult<nsf::FixupReport>;
    /// Compacts a database in place or, with `copy`, by rewriting it
    /// (`dry_run`: reports only). Durable when it returns.
    fn compact_database(
        &self,
        path: &str,
        copy: bool,
        dry_run: bool,
    ) -> FolioResult<protocol::CompactSummary>;

    // ------------------------------------------------------------ documents

    /// Creates a document from its items.
    fn create_document(&self, path: &str, items: &JsonObject) -> FolioResult<NoteMeta>;
    /// Reads a document.
    fn read_document(&self, path: &str, unid: Unid) -> FolioResult<Doc>;
    /// Changes a document's items (`null` removes one); with `based_on`,
    /// only if the document is still at that sequence number, unless
    /// `force`.
    fn update_document(
        &self,
        path: &str,
        unid: Unid,
        based_on: Option<u32>,
        force: bool,
        changes: &JsonObject,
    ) -> FolioResult<NoteMeta>;
    /// Deletes a document, leaving a stub; with `based_on`, only if the
    /// document is still at that sequence number.
    fn delete_document(
        &self,
        path: &str,
        unid: Unid,
        based_on: Option<u32>,
    ) -> FolioResult<NoteMeta>;
    /// A page of at most `limit` changes after `since`.
    fn changes(&self, path: &str, since: Cursor, limit: u32) -> FolioResult<Changes>;

    // ---------------------------------------------------------- attachments

    /// Stores what `content` reads as an attachment of a document; the
    /// size stored. `size`, when known, lets a too-large file be refused
    /// before it is sent.
    fn put_attachment(
        &self,
        path: &str,
        unid: Unid,
        name: &str,
        mime: &str,
        size: Option<u64>,
        content: &mut dyn Read,
    ) -> FolioResult<u64>;
    /// Removes an attachment from a document (an update that drops it);
    /// `based_on` makes it conditional on that sequence number.
    fn delete_attachment(
        &self,
        path: &str,
        unid: Unid,
        name: &str,
        based_on: Option<u32>,
    ) -> FolioResult<NoteMeta>;
    /// Writes an attachment's content to `out`; its size.
    fn get_attachment(
        &self,
        path: &str,
        unid: Unid,
        name: &str,
        out: &mut dyn Write,
    ) -> FolioResult<u64>;

    // ----------------------------------------------------- views and folders

    /// Creates a view or folder.
    fn create_view(&self, path: &str, def: &ViewDef) -> FolioResult<()>;
    /// Deletes a view or folder with its index.
    fn delete_view(&self, path: &str, name: &str) -> FolioResult<()>;
    /// A database's views and folders (data directory only).
    fn list_views(&self, path: &str) -> FolioResult<Vec<ViewSummary>>;
    /// Opens a view (refreshing its index as its refresh option says) and
    /// reads a page of at most `count` rows from `start`.
    fn read_view(
        &self,
        path: &str,
        name: &str,
        start: &Start,
        count: u32,
        flags: ReadFlags,
    ) -> FolioResult<ViewPage>;
    /// Opens a view and finds the entries whose first sorted column is
    /// (or, with `prefix`, starts with) `key`.
    fn find_in_view(
        &self,
        path: &str,
        name: &str,
        key: &str,
        prefix: bool,
    ) -> FolioResult<Option<Found>>;
    /// Opens a view and applies the changes since its index's last update.
    fn update_view(&self, path: &str, name: &str) -> FolioResult<ViewUpdate>;
    /// Rebuilds a view's index from scratch (data directory only).
    fn rebuild_view(&self, path: &str, name: &str) -> FolioResult<RebuildReport>;
    /// Puts documents into a folder or takes them out, all or none.
    fn change_folder(
        &self,
        path: &str,
        folder: &str,
        unids: &[Unid],
        change: FolderChange,
    ) -> FolioResult<()>;

    // --------------------------------------------------------------- search

    /// Calls `hit` with each document `formula` selects (modified at or
    /// after `since`, if given) as it is found; stops at the first error
    /// `hit` returns. The number found.
    fn search(
        &self,
        path: &str,
        formula: &str,
        since: Option<Timestamp>,
        hit: &mut dyn FnMut(Doc) -> FolioResult<()>,
    ) -> FolioResult<u64>;

    // ------------------------------------------------------- access control

    /// A database's access-control list (Manager access).
    fn acl(&self, path: &str) -> FolioResult<Acl>;
    /// Replaces a database's access-control list (Manager access); it must
    /// keep a Manager.
    fn set_acl(&self, path: &str, acl: &Acl) -> FolioResult<()>;

    // ------------------------------------------------------------------ mail

    /// Adds a person to the directory (`names.fdb`) and makes their mail
    /// file from the mail template; both are durable when this returns.
    fn create_mail_user(&self, new: &mail::NewPerson) -> FolioResult<mail::Person>;
    /// Every person in the directory, by full name.
    fn list_mail_users(&self) -> FolioResult<Vec<mail::Person>>;
    /// Takes the person `name` names out of the directory (durable when
    /// this returns). Their mail file is kept, unless `delete_file`: then
    /// it is deleted once nothing can write it any more (embedded: when
    /// the store closes, after the engine's final checkpoint; the command
    /// fails if that fails). A server refuses `delete_file`, removing
    /// nothing.
    fn remove_mail_user(&self, name: &str, delete_file: bool) -> FolioResult<RemovedUser>;
    /// Sends `msg` with `files` attached from `sender` (embedded: the
    /// person `--from` names; over a server it will be the signed-in
    /// user, `None`): deposited in a mail box for the router, or with
    /// `draft` saved in the sender's own mail file. Durable when this
    /// returns.
    fn send_mail(
        &self,
        sender: Option<&str>,
        msg: mail::Message,
        files: &mut [mail::Attachment<'_>],
        draft: bool,
    ) -> FolioResult<Sent>;
    /// Runs a meeting operation as `acting` (embedded: the person
    /// `--from` names; over a server the signed-in user, `None`).
    /// Durable when this returns.
    fn meeting(
        &self,
        acting: Option<&str>,
        op: protocol::MeetingRequest,
    ) -> FolioResult<protocol::MeetingAnswer>;

    // ---------------------------------------------------- server and log

    /// The server's statistics (a server only).
    fn statistics(&self) -> FolioResult<Vec<Statistic>>;
    /// The transaction log's state (data directory only).
    fn log_info(&self) -> FolioResult<translog::LogInfo>;
    /// Archive style: copies the completed log extents not yet archived
    /// to `to` (default `translog.archive_dir`; over a server, a
    /// directory on the server), verifies them and lets the log reuse
    /// them; durable when it returns. Server administrators only.
    fn archive(&self, to: Option<&std::path::Path>) -> FolioResult<protocol::ArchiveSummary>;
    /// Online backup of `dbs` (every database when empty) into `dest`
    /// (over a server, an absolute directory on the server) while writers
    /// go on; archive style. Durable when it returns. Server
    /// administrators only.
    fn backup(
        &self,
        dest: &std::path::Path,
        dbs: &[String],
    ) -> FolioResult<protocol::BackupSummary>;
    /// Restores from a backup and rolls forward (data directory only, the
    /// server stopped). Durable when it returns.
    fn restore(
        &self,
        backup: &std::path::Path,
        opts: &nsf::RestoreOptions,
    ) -> FolioResult<Vec<nsf::RestoreReport>>;
}
