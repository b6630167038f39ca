//! Every operation the server offers, in one place, with its access rules.
//!
//! The native protocol driver and the HTTP API are two doors into the same
//! rooms: both authenticate a [`Caller`] and then call the blocking
//! methods here on a worker thread. Keeping the operations (and their ACL
//! checks, Reader/Author filtering and error mapping) in one type means a
//! rule is written once and holds on every path, and the two front ends
//! stay thin translators of bytes.
//!
//! Access rules (docs/http.md "Access control" lists them for users):
//!
//! * a database's ACL decides what a named or anonymous caller may do;
//!   a database without an ACL grants nothing to anyone but server
//!   administrators, who have full access everywhere;
//! * a document with a `$Readers` item is invisible to callers not named
//!   in it (or in `$Authors`): it is "not found", in reads, changes,
//!   searches and views alike — a view shows such a caller its rows,
//!   total, category rows and counts, positions and finds as if the
//!   document did not exist — so its existence does not leak;
//! * an Author edits only documents whose `$Authors` names them; a
//!   document an Author creates names its creator in `$Authors`;
//! * the check and the write it guards must see the same document: writes
//!   are made conditional on the sequence number that was checked and
//!   retried if another edit slipped in between.
//!
//! Document writes also come in a form that does not wait
//! ([`Service::write_then`] with a [`DocWrite`]): the checks and the write
//! run on the caller's thread — a connection task — and the answer is
//! handed to a callback once the commit is durable, from the log's writer
//! thread. No worker thread is woken or put to sleep for a commit (see
//! docs/design.md, "Commit protocol").
//!
//! ```text
//!   mod.rs          Service (the shares it runs on), Limits
//!   access.rs       Caller, authentication, ACL checks, shared refusals
//!   databases.rs    create, list, open, describe
//!   documents.rs    create, read, update, delete, changes; DocWrite
//!   attachments.rs  streamed upload and download
//!   views.rs        collections, entries, find, update, create, folders, search
//!   admin.rs        ACLs, the caller's access, statistics
//!   calendar.rs     meetings as the signed-in user: create, respond, reschedule, cancel
//!   meeting_op.rs   the same as one typed operation, for the native door and the CLI
//!   mail_users.rs   mail users: the directory and mail files (administrators)
//!   server_users.rs server users and their API tokens (administrators)
//!   mail_send.rs    sending any form over the native door, drafts, on behalf of
//!   mail_files.rs   the same with files: one upload split by declared sizes
//!   archive.rs      archiving the transaction log
//!   backup.rs       online backup
//!   replicate.rs    the server's side of a replication; the change feed's wait
//!   couch.rs        the CouchDB door's operations (databases, documents, changes)
//!   wire.rs         engine values as protocol values
//! ```

mod access;
mod admin;
mod archive;
mod attachments;
mod backup;
mod calendar;
mod compact;
mod couch;
mod databases;
mod documents;
mod fixup;
mod lifecycle;
mod mail;
mod mail_files;
mod mail_send;
mod mail_users;
mod meeting_op;
mod peer;
mod replicate;
mod server_users;
mod views;
mod wire;

pub use access::Caller;
pub use couch::{couch_error, CouchDb, FeedEvent, Keep, LocalOp};
pub use documents::{DocJson, DocWrite, WriteDone};
pub(crate) use fixup::rebuild_views_of_auto_fixups;
pub use lifecycle::Copied;
pub use mail_send::Stored;
pub use mail_users::{mail_user, RemovedPerson};
pub use peer::{EntryRun, PeerReplicator};
pub use replicate::ReplicaSession;
pub use views::{CollectionInfo, FolderChange};
pub use wire::document;

use crate::auth::UserStore;
use crate::stats::Stats;
use attachments::Turns;
use nsf::Engine;
use std::sync::Arc;

/// Limits on what one request may carry.
#[derive(Clone, Debug)]
pub struct Limits {
    /// Largest document JSON accepted, in bytes.
    pub max_document_bytes: usize,
    /// Largest attachment accepted, in bytes.
    pub max_attachment_bytes: u64,
    /// Most rows one read of entries returns.
    pub max_page_rows: u32,
    /// Most documents one `ModifiedSince` answer carries.
    pub max_changes: u32,
    /// Attachment uploads written to disk at once (0: no limit). More
    /// wait their turn: a few streams already fill the disk, and every
    /// megabyte in flight is one a small commit's log fsync waits behind.
    pub attachment_streams: usize,
    /// Mail boxes and the largest message (`POST /mail/send`).
    pub mail: ::mail::MailConfig,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_document_bytes: 8 << 20,
            max_attachment_bytes: 2 << 30,
            max_page_rows: 10_000,
            max_changes: 1_000,
            attachment_streams: 0,
            mail: ::mail::MailConfig::default(),
        }
    }
}

/// The engine behind a door (see the module docs).
pub struct Service {
    engine: Arc<Engine>,
    views: Arc<::views::Views>,
    users: Arc<UserStore>,
    stats: Arc<Stats>,
    limits: Limits,
    streams: Turns,
    /// Set once the server starts shutting down: what long waits (the
    /// change feeds) watch so they never hold shutdown up.
    draining: tokio::sync::watch::Sender<bool>,
    /// Who runs server-to-server replication (`peer.rs`), if anyone.
    peer: Option<Arc<dyn PeerReplicator>>,
}

impl Service {
    /// A service over an open engine.
    pub fn new(
        engine: Arc<Engine>,
        views: Arc<::views::Views>,
        users: Arc<UserStore>,
        stats: Arc<Stats>,
        limits: Limits,
    ) -> Service {
        Service {
            engine,
            views,
            users,
            stats,
            limits,
            streams: Turns::default(),
            draining: tokio::sync::watch::Sender::new(false),
            peer: None,
        }
    }

    /// The server is shutting down: change feeds end now.
    pub fn start_draining(&self) {
        self.draining.send_replace(true);
    }

    /// Resolves once the server starts shutting down.
    pub fn until_draining(&self) -> impl std::future::Future<Output = ()> + Send + 'static {
        let mut rx = self.draining.subscribe();
        async move {
            let _ = rx.wait_for(|d| *d).await;
        }
    }

    /// The engine.
    pub fn engine(&self) -> &Arc<Engine> {
        &self.engine
    }

    /// The views layer.
    pub fn views(&self) -> &Arc<::views::Views> {
        &self.views
    }

    /// The statistics.
    pub fn stats(&self) -> &Arc<Stats> {
        &self.stats
    }

    /// The limits.
    pub fn limits(&self) -> &Limits {
        &self.limits
    }
}
