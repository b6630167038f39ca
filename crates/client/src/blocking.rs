//! The synchronous client, for the CLI, load tools and other programs
//! without an async runtime of their own.
//!
//! ```text
//!   thread A ─ block_on(call) ─┐                       shared runtime
//!   thread B ─ block_on(call) ─┼─ commands ─▶ connection task (worker) ─▶ socket
//!   thread C ─ block_on(call) ─┘
//! ```
//!
//! A [`Client`] here wraps the async [`crate::Client`] and a runtime, and
//! each method is `block_on` of the async method. The runtime is one
//! multi-threaded tokio runtime shared by every blocking client of the
//! process, created on first use: its workers run the connection tasks,
//! while each `block_on` polls its call on the calling thread. So any
//! number of threads may use one client (or clones of it) at once, each
//! call pipelined on the one connection; a runtime per client on the
//! current thread could not serve several threads.
//!
//! Attachments take `std::io::Read` / `std::io::Write`. They are bridged
//! by adapters that read or write synchronously when polled. That is
//! sound only because these futures are polled by `block_on` on the
//! caller's own thread, never on a runtime worker: blocking there blocks
//! that caller alone, exactly as the synchronous call it is. Data still
//! moves a chunk at a time, never the whole file.
//!
//! Do not call these methods from inside an async runtime (tokio refuses
//! `block_on` there); use the async client instead.

use crate::error::ClientError;
use crate::{AttachmentInfo, ClientOptions, CollectionInfo, CollectionUpdate};
use protocol::{
    CollectionHandle, Compression, Cursor, DatabaseInfo, DatabaseSummary, DbHandle, DocRef,
    Document, Found, NoteMeta, ReadFlags, Request, Response, Row, SessionId, Start, Statistic,
    Timestamp, Unid,
};
use std::future::Future;
use std::io::{self, Read, Write};
use std::pin::Pin;
use std::sync::OnceLock;
use std::task::{Context, Poll};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::runtime::Runtime;

/// A synchronous connection to a Folio server (see the module docs).
#[derive(Clone, Debug)]
pub struct Client {
    inner: crate::Client,
    runtime: &'static Runtime,
}

impl Client {
    /// Connects and logs in; see [`crate::Client::connect`].
    pub fn connect(opts: ClientOptions) -> Result<Client, ClientError> {
        let runtime = shared_runtime()?;
        let inner = runtime.block_on(crate::Client::connect(opts))?;
        Ok(Client { inner, runtime })
    }

    /// The async client underneath, sharing this connection.
    pub fn as_async(&self) -> &crate::Client {
        &self.inner
    }

    fn wait<T>(&self, call: impl Future<Output = T>) -> T {
        self.runtime.block_on(call)
    }

    /// The session the server created for this connection.
    pub fn session(&self) -> SessionId {
        self.inner.session()
    }

    /// The compression the server chose from those offered.
    pub fn compression(&self) -> Compression {
        self.inner.compression()
    }

    /// The server's name and version, from its Welcome.
    pub fn server_name(&self) -> &str {
        self.inner.server_name()
    }

    /// Why the connection closed, once it has.
    pub fn closed_reason(&self) -> Option<&str> {
        self.inner.closed_reason()
    }

    /// Closes the connection for every clone; see [`crate::Client::close`].
    pub fn close(&self) {
        self.inner.close()
    }

    /// Sends a request answered by a single response; see
    /// [`crate::Client::request`].
    pub fn request(&self, request: Request) -> Result<Response, ClientError> {
        self.wait(self.inner.request(request))
    }

    /// See [`crate::Client::create_database`].
    pub fn create_database(&self, path: &str, title: &str) -> Result<DatabaseInfo, ClientError> {
        self.wait(self.inner.create_database(path, title))
    }

    /// See [`crate::Client::delete_database`].
    pub fn delete_database(&self, path: &str) -> Result<(), ClientError> {
        self.wait(self.inner.delete_database(path))
    }

    /// See [`crate::Client::delete_attachment`].
    pub fn delete_attachment(
        &self,
        db: DbHandle,
        unid: protocol::Unid,
        name: &str,
        based_on: Option<u32>,
    ) -> Result<protocol::NoteMeta, ClientError> {
        self.wait(self.inner.delete_attachment(db, unid, name, based_on))
    }

    /// See [`crate::Client::copy_database`].
    pub fn copy_database(
        &self,
        src: &str,
        dst: &str,
        replica: bool,
    ) -> Result<crate::DatabaseCopied, ClientError> {
        self.wait(self.inner.copy_database(src, dst, replica))
    }

    /// See [`crate::Client::list_databases`].
    pub fn list_databases(
        &self,
        folder: Option<&str>,
    ) -> Result<Vec<DatabaseSummary>, ClientError> {
        self.wait(self.inner.list_databases(folder))
    }

    /// See [`crate::Client::database_info`].
    pub fn database_info(&self, path: &str) -> Result<DatabaseInfo, ClientError> {
        self.wait(self.inner.database_info(path))
    }

    /// See [`crate::Client::open_database`].
    pub fn open_database(&self, path: &str) -> Result<(DbHandle, DatabaseInfo), ClientError> {
        self.wait(self.inner.open_database(path))
    }

    /// See [`crate::Client::close_database`].
    pub fn close_database(&self, db: DbHandle) -> Result<(), ClientError> {
        self.wait(self.inner.close_database(db))
    }

    /// See [`crate::Client::create_document`].
    pub fn create_document(&self, db: DbHandle, json: &str) -> Result<NoteMeta, ClientError> {
        self.wait(self.inner.create_document(db, json))
    }

    /// See [`crate::Client::read_document`].
    pub fn read_document(&self, db: DbHandle, doc: DocRef) -> Result<Document, ClientError> {
        self.wait(self.inner.read_document(db, doc))
    }

    /// See [`crate::Client::update_document`].
    pub fn update_document(
        &self,
        db: DbHandle,
        unid: Unid,
        based_on: Option<u32>,
        force: bool,
        json: &str,
    ) -> Result<NoteMeta, ClientError> {
        self.wait(self.inner.update_document(db, unid, based_on, force, json))
    }

    /// See [`crate::Client::delete_document`].
    pub fn delete_document(
        &self,
        db: DbHandle,
        unid: Unid,
        based_on: Option<u32>,
        force: bool,
    ) -> Result<NoteMeta, ClientError> {
        self.wait(self.inner.delete_document(db, unid, based_on, force))
    }

    /// See [`crate::Client::modified_since`].
    pub fn modified_since(
        &self,
        db: DbHandle,
        since: Cursor,
        limit: u32,
    ) -> Result<(Vec<Document>, Cursor, bool), ClientError> {
        self.wait(self.inner.modified_since(db, since, limit))
    }

    /// Uploads what `content` reads; see [`crate::Client::put_attachment`].
    pub fn put_attachment(
        &self,
        db: DbHandle,
        unid: Unid,
        name: &str,
        mime: &str,
        size: Option<u64>,
        mut content: impl Read,
    ) -> Result<u64, ClientError> {
        let content = SyncReader(&mut content);
        self.wait(
            self.inner
                .put_attachment(db, unid, name, mime, size, content),
        )
    }

    /// Downloads into `out`; see [`crate::Client::get_attachment`].
    pub fn get_attachment(
        &self,
        db: DbHandle,
        unid: Unid,
        name: &str,
        mut out: impl Write,
    ) -> Result<AttachmentInfo, ClientError> {
        let out = SyncWriter(&mut out);
        self.wait(self.inner.get_attachment(db, unid, name, out))
    }

    /// See [`crate::Client::open_collection`].
    pub fn open_collection(&self, db: DbHandle, name: &str) -> Result<CollectionInfo, ClientError> {
        self.wait(self.inner.open_collection(db, name))
    }

    /// See [`crate::Client::read_entries`].
    pub fn read_entries(
        &self,
        collection: CollectionHandle,
        start: Start,
        count: u32,
        flags: ReadFlags,
    ) -> Result<(Vec<Row>, Option<u64>), ClientError> {
        self.wait(self.inner.read_entries(collection, start, count, flags))
    }

    /// See [`crate::Client::find_by_key`].
    pub fn find_by_key(
        &self,
        collection: CollectionHandle,
        key: &str,
        prefix: bool,
    ) -> Result<Option<Found>, ClientError> {
        self.wait(self.inner.find_by_key(collection, key, prefix))
    }

    /// See [`crate::Client::update_collection`].
    pub fn update_collection(
        &self,
        collection: CollectionHandle,
    ) -> Result<CollectionUpdate, ClientError> {
        self.wait(self.inner.update_collection(collection))
    }

    /// See [`crate::Client::close_collection`].
    pub fn close_collection(&self, collection: CollectionHandle) -> Result<(), ClientError> {
        self.wait(self.inner.close_collection(collection))
    }

    /// See [`crate::Client::folder_add`].
    pub fn folder_add(
        &self,
        db: DbHandle,
        folder: &str,
        unids: &[Unid],
    ) -> Result<(), ClientError> {
        self.wait(self.inner.folder_add(db, folder, unids))
    }

    /// See [`crate::Client::folder_remove`].
    pub fn folder_remove(
        &self,
        db: DbHandle,
        folder: &str,
        unids: &[Unid],
    ) -> Result<(), ClientError> {
        self.wait(self.inner.folder_remove(db, folder, unids))
    }

    /// See [`crate::Client::delete_view`].
    pub fn delete_view(&self, db: DbHandle, name: &str) -> Result<(), ClientError> {
        self.wait(self.inner.delete_view(db, name))
    }

    /// Starts a search whose hits are read by iterating; see
    /// [`crate::Client::search_hits`].
    pub fn search_hits(
        &self,
        db: DbHandle,
        formula: &str,
        since: Option<Timestamp>,
    ) -> Result<SearchHits, ClientError> {
        Ok(SearchHits {
            inner: self.inner.search_hits(db, formula, since)?,
            runtime: self.runtime,
        })
    }

    /// Runs a search, calling `on_hit` with each document found; returns
    /// the number found. See [`crate::Client::search`].
    pub fn search(
        &self,
        db: DbHandle,
        formula: &str,
        since: Option<Timestamp>,
        on_hit: impl FnMut(Document),
    ) -> Result<u64, ClientError> {
        self.wait(self.inner.search(db, formula, since, on_hit))
    }

    /// One step of a replication session; see [`crate::Client::replicate`].
    pub fn replicate(
        &self,
        db: DbHandle,
        session: u64,
        direction: protocol::ReplicaDirection,
        packets: Vec<Vec<u8>>,
        on_packet: impl FnMut(Vec<u8>),
    ) -> Result<bool, ClientError> {
        self.wait(
            self.inner
                .replicate(db, session, direction, packets, on_packet),
        )
    }

    /// One turn of the change feed; see [`crate::Client::wait_changes`].
    pub fn wait_changes(
        &self,
        db: DbHandle,
        since: Cursor,
        limit: u32,
        timeout_ms: u32,
    ) -> Result<(Vec<Document>, Cursor, bool), ClientError> {
        self.wait(self.inner.wait_changes(db, since, limit, timeout_ms))
    }

    /// Bytes this connection wrote and read; see [`crate::Client::traffic`].
    pub fn traffic(&self) -> (u64, u64) {
        self.inner.traffic()
    }

    /// See [`crate::Client::statistics`].
    pub fn statistics(&self) -> Result<Vec<Statistic>, ClientError> {
        self.wait(self.inner.statistics())
    }

    /// Asks the server to replicate one of its databases with a peer;
    /// see [`crate::Client::replicate_peer`].
    pub fn replicate_peer(
        &self,
        request: protocol::PeerReplication,
    ) -> Result<protocol::PeerReplicated, ClientError> {
        self.wait(self.inner.replicate_peer(request))
    }

    /// See [`crate::Client::archive`].
    pub fn archive(&self, to: Option<&str>) -> Result<protocol::ArchiveSummary, ClientError> {
        self.wait(self.inner.archive(to))
    }

    /// See [`crate::Client::compact`].
    pub fn compact(
        &self,
        path: &str,
        copy: bool,
        dry_run: bool,
    ) -> Result<protocol::CompactSummary, ClientError> {
        self.wait(self.inner.compact(path, copy, dry_run))
    }

    /// See [`crate::Client::backup`].
    pub fn backup(
        &self,
        dest: &str,
        dbs: &[String],
    ) -> Result<protocol::BackupSummary, ClientError> {
        self.wait(self.inner.backup(dest, dbs))
    }

    /// See [`crate::Client::get_acl`].
    pub fn get_acl(&self, path: &str) -> Result<String, ClientError> {
        self.wait(self.inner.get_acl(path))
    }

    /// See [`crate::Client::set_acl`].
    pub fn set_acl(&self, path: &str, json: &str) -> Result<(), ClientError> {
        self.wait(self.inner.set_acl(path, json))
    }

    /// See [`crate::Client::my_access`].
    pub fn my_access(&self, path: &str) -> Result<crate::Access, ClientError> {
        self.wait(self.inner.my_access(path))
    }

    /// See [`crate::Client::create_mail_user`].
    pub fn create_mail_user(
        &self,
        name: &str,
        aliases: &[String],
        server_user: Option<&str>,
    ) -> Result<crate::MailUser, ClientError> {
        self.wait(self.inner.create_mail_user(name, aliases, server_user))
    }

    /// See [`crate::Client::list_mail_users`].
    pub fn list_mail_users(&self) -> Result<Vec<crate::MailUser>, ClientError> {
        self.wait(self.inner.list_mail_users())
    }

    /// See [`crate::Client::remove_mail_user`].
    pub fn remove_mail_user(
        &self,
        name: &str,
        delete_file: bool,
    ) -> Result<(crate::MailUser, crate::MailFileFate), ClientError> {
        self.wait(self.inner.remove_mail_user(name, delete_file))
    }

    /// See [`crate::Client::send_mail`].
    pub fn send_mail(
        &self,
        json: &str,
        draft: bool,
        on_behalf_of: Option<&str>,
    ) -> Result<crate::MailSent, ClientError> {
        self.wait(self.inner.send_mail(json, draft, on_behalf_of))
    }

    /// Sends with files whose bytes `content` reads back to back; see
    /// [`crate::Client::send_mail_files`].
    pub fn send_mail_files(
        &self,
        json: &str,
        draft: bool,
        on_behalf_of: Option<&str>,
        files: Vec<crate::MailFile>,
        mut content: impl Read,
    ) -> Result<crate::MailSent, ClientError> {
        let content = SyncReader(&mut content);
        self.wait(
            self.inner
                .send_mail_files(json, draft, on_behalf_of, files, content),
        )
    }

    /// See [`crate::Client::meeting`].
    pub fn meeting(
        &self,
        op: crate::MeetingRequest,
        on_behalf_of: Option<&str>,
    ) -> Result<crate::MeetingAnswer, ClientError> {
        self.wait(self.inner.meeting(op, on_behalf_of))
    }
}

/// The hits of a running search as an iterator; after the last hit,
/// [`found`](Self::found) has the count.
#[derive(Debug)]
pub struct SearchHits {
    inner: crate::SearchHits,
    runtime: &'static Runtime,
}

impl SearchHits {
    /// The number of documents found, once the iteration is over.
    pub fn found(&self) -> Option<u64> {
        self.inner.found()
    }
}

impl Iterator for SearchHits {
    type Item = Result<Document, ClientError>;

    fn next(&mut self) -> Option<Self::Item> {
        self.runtime.block_on(self.inner.next()).transpose()
    }
}

/// The process's runtime for blocking clients, created on first use.
fn shared_runtime() -> Result<&'static Runtime, ClientError> {
    static RUNTIME: OnceLock<Runtime> = OnceLock::new();
    if let Some(runtime) = RUNTIME.get() {
        return Ok(runtime);
    }
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .thread_name("folio-client")
        .enable_all()
        .build()?;
    // Another thread may have won the race; its runtime is the one kept.
    Ok(RUNTIME.get_or_init(|| runtime))
}

/// `std::io::Read` as `AsyncRead`, reading synchronously when polled
/// (sound only under `block_on` on the caller's thread; module docs).
struct SyncReader<'a, R>(&'a mut R);

impl<R: Read> AsyncRead for SyncReader<'_, R> {
    fn poll_read(
        self: Pin<&mut Self>,
        _cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let reader = &mut self.get_mut().0;
        loop {
            match reader.read(buf.initialize_unfilled()) {
                Ok(n) => {
                    buf.advance(n);
                    return Poll::Ready(Ok(()));
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Poll::Ready(Err(e)),
            }
        }
    }
}

/// `std::io::Write` as `AsyncWrite`, writing synchronously when polled
/// (sound only under `block_on` on the caller's thread; module docs).
struct SyncWriter<'a, W>(&'a mut W);

impl<W: Write> AsyncWrite for SyncWriter<'_, W> {
    fn poll_write(
        self: Pin<&mut Self>,
        _cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Poll::Ready(self.get_mut().0.write(buf))
    }

    fn poll_flush(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(self.get_mut().0.flush())
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        self.poll_flush(cx)
    }
}
