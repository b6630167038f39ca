//! A fake Folio server for the client's tests: a tokio `TcpListener` on
//! `127.0.0.1:0` (optionally TLS) whose connection tasks drive the real
//! `protocol::ServerConnection` and answer from an in-memory [`Store`].
//!
//! What it does on purpose, so tests can observe the client:
//!
//! * accepts `alice`/`pw` only (401 otherwise, anonymous included);
//! * answers the requests read together **in reverse order**, so a client
//!   that matched answers by position instead of request id would fail;
//! * never answers `DatabaseInfo { path: "hold" }`, a search for the
//!   formula `"hold"` or a download of an attachment named `"hold"`
//!   (counted in [`FakeServer::held`]), so a test can leave calls pending;
//! * answers `DatabaseInfo { path: "barrier/N/..." }` only once `N` such
//!   requests are waiting on the connection, proving N were in flight;
//! * refuses uploads over [`MAX_ATTACHMENT`] with 413 as soon as it knows:
//!   at the request if the declared size is too large, or at the chunk
//!   that crosses the limit, before the `End`;
//! * streams downloads in 64 KiB chunks and search hits one item each;
//! * answers `DatabaseInfo { path: "garbage" }` with a frame of an
//!   unknown type, and records how the client said goodbye;
//! * drops every connection without a word on [`FakeServer::drop_connections`].
#![allow(dead_code)] // each test binary uses its own subset

mod store;

use client::{
    ClientOptions, CollectionHandle, Compression, DbHandle, DocRef, ErrorCode, Found, ReadFlags,
    Request, Response, Row, Start, StatValue, Statistic, Unid, Value,
};
use protocol::{
    Credentials, Phase, RequestId, ServerConfig, ServerConnection, ServerEvent, SessionId,
};
use std::collections::HashMap;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use store::{check_json, not_found, Failure, Store};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::TcpListener;
use tokio::sync::watch;
use tokio_rustls::TlsAcceptor;

pub const USER: &str = "alice";
pub const PASSWORD: &str = "pw";
/// A database that exists from the start.
pub const DB: &str = "test.fdb";
/// Uploads above this are refused with 413.
pub const MAX_ATTACHMENT: u64 = 8 << 20;
/// `DatabaseInfo` of this path, a search with this formula and a download
/// of an attachment of this name are never answered.
pub const HOLD: &str = "hold";
/// `DatabaseInfo` of this path is answered with an invalid frame.
pub const GARBAGE: &str = "garbage";
/// A frame of type 0x7f, which no protocol version defines.
const INVALID_FRAME: [u8; 10] = [6, 0, 0, 0, 0x7f, 0, 0, 0, 0, 0];
/// The only collection each database has.
pub const VIEW: &str = "All";
/// A search formula the fake refuses with 400.
pub const BAD_FORMULA: &str = "SELECT (";
const DOWNLOAD_CHUNK: usize = 64 * 1024;

/// A running fake server (its tasks live on the runtime it was started on).
pub struct FakeServer {
    pub addr: SocketAddr,
    state: Arc<State>,
}

struct State {
    store: Mutex<Store>,
    tls: Option<TlsAcceptor>,
    accepted: AtomicUsize,
    open: AtomicUsize,
    held: AtomicUsize,
    kill: watch::Sender<u64>,
    goodbyes: Mutex<Vec<(ErrorCode, String)>>,
}

impl FakeServer {
    pub async fn start() -> FakeServer {
        FakeServer::start_with(None).await
    }

    pub async fn start_tls(acceptor: TlsAcceptor) -> FakeServer {
        FakeServer::start_with(Some(acceptor)).await
    }

    async fn start_with(tls: Option<TlsAcceptor>) -> FakeServer {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let mut store = Store::default();
        store.create_db(DB, "Test").unwrap();
        let state = Arc::new(State {
            store: Mutex::new(store),
            tls,
            accepted: AtomicUsize::new(0),
            open: AtomicUsize::new(0),
            held: AtomicUsize::new(0),
            kill: watch::channel(0).0,
            goodbyes: Mutex::new(Vec::new()),
        });
        tokio::spawn(accept_loop(listener, state.clone()));
        FakeServer { addr, state }
    }

    /// Options for connecting as alice (compression: loopback default).
    pub fn options(&self) -> ClientOptions {
        ClientOptions::new(self.addr.to_string()).with_credentials(USER, PASSWORD)
    }

    /// Connections accepted so far.
    pub fn connections(&self) -> usize {
        self.state.accepted.load(Ordering::SeqCst)
    }

    /// Connections still open.
    pub fn open_connections(&self) -> usize {
        self.state.open.load(Ordering::SeqCst)
    }

    /// Requests held unanswered so far.
    pub fn held(&self) -> usize {
        self.state.held.load(Ordering::SeqCst)
    }

    /// Waits until `n` requests are held (the caller guards with a timeout).
    pub async fn wait_held(&self, n: usize) {
        while self.held() < n {
            tokio::time::sleep(Duration::from_millis(2)).await;
        }
    }

    /// Waits until no connection is open (the caller guards with a timeout).
    pub async fn wait_all_closed(&self) {
        while self.open_connections() > 0 {
            tokio::time::sleep(Duration::from_millis(2)).await;
        }
    }

    /// The error frames clients closed their connections with.
    pub fn goodbyes(&self) -> Vec<(ErrorCode, String)> {
        self.state.goodbyes.lock().unwrap().clone()
    }

    /// Drops every open connection's socket, without an error frame.
    pub fn drop_connections(&self) {
        self.state.kill.send_modify(|generation| *generation += 1);
    }

    /// The stored attachment, if any.
    pub fn attachment(&self, unid: Unid, name: &str) -> Option<Vec<u8>> {
        let store = self.state.store.lock().unwrap();
        let db = store.db(DB).ok()?;
        db.attachments
            .get(&(unid, name.to_string()))
            .map(|(_, data)| data.clone())
    }
}

/// A fake server on a runtime of its own, for the blocking client's tests.
pub struct BlockingFake {
    pub server: FakeServer,
    _runtime: tokio::runtime::Runtime,
}

pub fn start_blocking() -> BlockingFake {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let server = runtime.block_on(FakeServer::start());
    BlockingFake {
        server,
        _runtime: runtime,
    }
}

/// A self-signed certificate for `localhost` and `127.0.0.1`: the server
/// side's acceptor, and the PEM file a client trusts.
pub fn self_signed_tls(dir: &Path) -> (TlsAcceptor, PathBuf) {
    use rustls::pki_types::{PrivateKeyDer, PrivatePkcs8KeyDer};
    let names = vec!["localhost".to_string(), "127.0.0.1".to_string()];
    let certified = rcgen::generate_simple_self_signed(names).unwrap();
    let pem = dir.join("server.pem");
    std::fs::write(&pem, certified.cert.pem()).unwrap();
    let key = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(certified.key_pair.serialize_der()));
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_no_client_auth()
        .with_single_cert(vec![certified.cert.der().clone()], key)
        .unwrap();
    (TlsAcceptor::from(Arc::new(config)), pem)
}

/// `len` bytes of incompressible, reproducible content.
pub fn random_bytes(len: usize, seed: u64) -> Vec<u8> {
    let mut x = seed | 1;
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x >> 24) as u8
        })
        .collect()
}

/// `len` bytes of compressible text.
pub fn text_bytes(len: usize) -> Vec<u8> {
    let line = b"Folio keeps documents in many small databases, one log for all. ";
    line.iter().copied().cycle().take(len).collect()
}

async fn accept_loop(listener: TcpListener, state: Arc<State>) {
    while let Ok((tcp, _)) = listener.accept().await {
        tcp.set_nodelay(true).unwrap();
        state.accepted.fetch_add(1, Ordering::SeqCst);
        state.open.fetch_add(1, Ordering::SeqCst);
        let state = state.clone();
        tokio::spawn(async move {
            match state.tls.clone() {
                None => serve(tcp, state.clone()).await,
                Some(acceptor) => {
                    if let Ok(tls) = acceptor.accept(tcp).await {
                        serve(tls, state.clone()).await
                    }
                }
            }
            state.open.fetch_sub(1, Ordering::SeqCst);
        });
    }
}

/// One connection: read, let the state machine decode, answer, write.
async fn serve<S: AsyncRead + AsyncWrite + Unpin>(stream: S, state: Arc<State>) {
    let mut kill = state.kill.subscribe();
    let (mut reader, mut writer) = tokio::io::split(stream);
    let mut session = Session::new(state);
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        let n = tokio::select! {
            read = reader.read(&mut buf) => match read {
                Ok(0) | Err(_) => return,
                Ok(n) => n,
            },
            _ = kill.changed() => return,
        };
        let open = session.receive(&buf[..n]);
        let mut output = session.conn.take_output();
        if std::mem::take(&mut session.garbage) {
            output.extend_from_slice(&INVALID_FRAME);
        }
        if writer.write_all(&output).await.is_err() || !open {
            let _ = writer.shutdown().await;
            return;
        }
    }
}

/// One request's complete answer, sent when the read's answers go out.
enum Answer {
    Respond(RequestId, Response),
    Fail(RequestId, Failure),
    Stream(RequestId, Vec<Response>, Response),
    Download(RequestId, Response, Vec<u8>),
}

impl Answer {
    fn of(id: RequestId, outcome: Result<Response, Failure>) -> Answer {
        match outcome {
            Ok(response) => Answer::Respond(id, response),
            Err(failure) => Answer::Fail(id, failure),
        }
    }

    fn send(self, conn: &mut ServerConnection) {
        match self {
            Answer::Respond(id, response) => conn.respond(id, &response).unwrap(),
            Answer::Fail(id, (code, message)) => conn.fail(id, code, &message).unwrap(),
            Answer::Stream(id, items, last) => {
                for item in &items {
                    conn.send_item(id, item).unwrap();
                }
                conn.respond(id, &last).unwrap();
            }
            Answer::Download(id, header, data) => {
                conn.send_item(id, &header).unwrap();
                for piece in data.chunks(DOWNLOAD_CHUNK) {
                    conn.send_chunk(id, piece).unwrap();
                }
                let size = data.len() as u64;
                conn.respond(id, &Response::AttachmentSent { size })
                    .unwrap();
            }
        }
    }
}

struct Upload {
    db: String,
    unid: Unid,
    name: String,
    mime: String,
    data: Vec<u8>,
}

/// One connection's state: the protocol state machine, handles, uploads.
struct Session {
    conn: ServerConnection,
    state: Arc<State>,
    dbs: Vec<String>,
    collections: Vec<String>,
    uploads: HashMap<RequestId, Upload>,
    barrier: Vec<(RequestId, String)>,
    garbage: bool,
}

impl Session {
    fn new(state: Arc<State>) -> Session {
        let config = ServerConfig {
            server_name: "fake folio".into(),
            compression: vec![Compression::Fast, Compression::Strong],
            ..ServerConfig::default()
        };
        Session {
            conn: ServerConnection::new(config),
            state,
            dbs: Vec::new(),
            collections: Vec::new(),
            uploads: HashMap::new(),
            barrier: Vec::new(),
            garbage: false,
        }
    }

    /// Feeds bytes and answers them; false once the connection is closed.
    fn receive(&mut self, bytes: &[u8]) -> bool {
        let Ok(events) = self.conn.receive(bytes) else {
            return false;
        };
        let mut answers = Vec::new();
        for event in events {
            self.handle(event, &mut answers);
        }
        // Reverse order: clients must match answers by request id.
        for answer in answers.into_iter().rev() {
            answer.send(&mut self.conn);
        }
        self.conn.phase() != Phase::Closed
    }

    fn handle(&mut self, event: ServerEvent, answers: &mut Vec<Answer>) {
        match event {
            ServerEvent::Authenticate { credentials, .. } => self.authenticate(credentials),
            ServerEvent::Request { id, request } => answers.extend(self.request(id, request)),
            ServerEvent::Chunk { id, data } => answers.extend(self.chunk(id, &data)),
            ServerEvent::End { id } => answers.extend(self.end(id)),
            ServerEvent::PeerClosed { code, message } => {
                self.state.goodbyes.lock().unwrap().push((code, message))
            }
        }
    }

    fn authenticate(&mut self, credentials: Option<Credentials>) {
        let valid = credentials.is_some_and(|c| c.user == USER && c.password == PASSWORD);
        if valid {
            let session = self.state.accepted.load(Ordering::SeqCst) as u64;
            self.conn.accept(SessionId(session)).unwrap();
        } else {
            self.conn
                .refuse(ErrorCode::Unauthenticated, "wrong user name or password")
                .unwrap();
        }
    }

    fn request(&mut self, id: RequestId, request: Request) -> Vec<Answer> {
        match request {
            Request::DatabaseInfo { path } if path == HOLD => self.hold(),
            Request::DatabaseInfo { path } if path == GARBAGE => {
                self.garbage = true;
                vec![]
            }
            Request::Search { formula, .. } if formula == HOLD => self.hold(),
            Request::GetAttachment { name, .. } if name == HOLD => self.hold(),
            Request::DatabaseInfo { path } if path.starts_with("barrier/") => {
                self.barrier_wait(id, path)
            }
            Request::PutAttachment {
                db,
                unid,
                name,
                mime,
                size,
            } => self.start_upload(id, db, unid, name, mime, size),
            Request::GetAttachment { db, unid, name } => vec![self.download(id, db, unid, &name)],
            Request::Search { db, formula, .. } => vec![self.search(id, db, &formula)],
            other => vec![Answer::of(id, self.single(other))],
        }
    }

    fn hold(&self) -> Vec<Answer> {
        self.state.held.fetch_add(1, Ordering::SeqCst);
        vec![]
    }

    /// Holds the request until the number its path names are waiting,
    /// then answers them all.
    fn barrier_wait(&mut self, id: RequestId, path: String) -> Vec<Answer> {
        let wanted: usize = path.split('/').nth(1).unwrap().parse().unwrap();
        self.barrier.push((id, path));
        if self.barrier.len() < wanted {
            return vec![];
        }
        let store = self.state.store.lock().unwrap();
        let mut info = store.info(DB).unwrap();
        std::mem::take(&mut self.barrier)
            .into_iter()
            .map(|(id, path)| {
                info.path = path;
                Answer::Respond(id, Response::DatabaseInfo(info.clone()))
            })
            .collect()
    }

    fn single(&mut self, request: Request) -> Result<Response, Failure> {
        let mut store = self.state.store.lock().unwrap();
        match request {
            Request::CreateDatabase { path, title } => {
                store.create_db(&path, &title).map(Response::DatabaseInfo)
            }
            Request::ListDatabases { folder } => {
                Ok(Response::Databases(store.list(folder.as_deref())))
            }
            Request::DatabaseInfo { path } => store.info(&path).map(Response::DatabaseInfo),
            Request::OpenDatabase { path } => {
                let info = store.info(&path)?;
                self.dbs.push(path);
                let db = DbHandle(self.dbs.len() as u32);
                Ok(Response::DatabaseOpened { db, info })
            }
            Request::CloseDatabase { db } => self.db_path(db).map(|_| Response::Done),
            Request::CreateDocument { db, json } => {
                let path = self.db_path(db)?;
                store.create_doc(&path, &json).map(Response::Saved)
            }
            Request::ReadDocument { db, doc } => {
                let db = store.db(&self.db_path(db)?)?;
                let doc = match doc {
                    DocRef::Unid(unid) => db.doc(&unid)?,
                    DocRef::NoteId(note) => db.doc_by_note(note)?,
                };
                Ok(Response::Document(doc.document()))
            }
            Request::UpdateDocument {
                db,
                unid,
                based_on,
                force,
                json,
            } => {
                check_json(&json)?;
                let db = store.db_mut(&self.db_path(db)?)?;
                db.edit(&unid, based_on, force, |d| d.json = json)
                    .map(Response::Saved)
            }
            Request::DeleteDocument {
                db,
                unid,
                based_on,
                force,
            } => {
                let db = store.db_mut(&self.db_path(db)?)?;
                let stub = |d: &mut store::Doc| {
                    d.deleted = true;
                    d.json = "{}".into();
                };
                db.edit(&unid, based_on, force, stub).map(Response::Saved)
            }
            Request::ModifiedSince { db, since, limit } => {
                let (docs, next, more) = store.db(&self.db_path(db)?)?.changes(since, limit);
                Ok(Response::Changes { docs, next, more })
            }
            Request::OpenCollection { db, name } => {
                let path = self.db_path(db)?;
                let db = store.db(&path)?;
                if name != VIEW {
                    return Err(not_found(format!("view {name}")));
                }
                self.collections.push(path);
                Ok(Response::CollectionOpened {
                    collection: CollectionHandle(self.collections.len() as u32),
                    titles: vec!["Document".into()],
                    categorized: false,
                    count: db.matching("SELECT @All").len() as u64,
                    seq: db.seq,
                })
            }
            Request::ReadEntries {
                collection,
                start,
                count,
                flags,
            } => {
                let db = store.db(&self.collection_path(collection)?)?;
                Ok(read_entries(
                    &db.matching("SELECT @All"),
                    start,
                    count,
                    flags,
                ))
            }
            Request::FindByKey {
                collection, key, ..
            } => {
                let db = store.db(&self.collection_path(collection)?)?;
                let docs = db.matching("SELECT @All");
                let hits: Vec<usize> = (0..docs.len())
                    .filter(|&i| docs[i].json.contains(&key))
                    .collect();
                Ok(Response::Found(hits.first().map(|&first| Found {
                    position: first as u64,
                    count: hits.len() as u64,
                })))
            }
            Request::UpdateCollection { collection } => {
                let db = store.db(&self.collection_path(collection)?)?;
                Ok(Response::CollectionUpdated {
                    seq: db.seq,
                    changed: 0,
                })
            }
            Request::CloseCollection { collection } => {
                self.collection_path(collection).map(|_| Response::Done)
            }
            Request::FolderAdd { db, folder, unids } => {
                let db = store.db_mut(&self.db_path(db)?)?;
                db.folders.entry(folder).or_default().extend(unids);
                Ok(Response::Done)
            }
            Request::FolderRemove { db, folder, unids } => {
                let db = store.db_mut(&self.db_path(db)?)?;
                let members = db.folders.entry(folder).or_default();
                for unid in &unids {
                    members.remove(unid);
                }
                Ok(Response::Done)
            }
            Request::Statistics => Ok(Response::Statistics(vec![
                statistic("server.connections", StatValue::Count(1)),
                statistic("server.load", StatValue::Gauge(0.5)),
                statistic("server.name", StatValue::Text("fake".into())),
            ])),
            Request::GetAcl { path } => Ok(Response::Acl {
                json: store.db(&path)?.acl.clone(),
            }),
            Request::SetAcl { path, json } => {
                check_json(&json)?;
                store.db_mut(&path)?.acl = json;
                Ok(Response::Done)
            }
            Request::MyAccess { path } => {
                store.db(&path)?;
                Ok(Response::Access {
                    user: Some(USER.into()),
                    level: "manager".into(),
                    roles: vec!["[Admin]".into()],
                })
            }
            other => panic!("not a single request: {other:?}"),
        }
    }

    fn db_path(&self, db: DbHandle) -> Result<String, Failure> {
        let index = (db.0 as usize).wrapping_sub(1);
        self.dbs
            .get(index)
            .cloned()
            .ok_or_else(|| not_found(format!("database handle {}", db.0)))
    }

    fn collection_path(&self, collection: CollectionHandle) -> Result<String, Failure> {
        let index = (collection.0 as usize).wrapping_sub(1);
        self.collections
            .get(index)
            .cloned()
            .ok_or_else(|| not_found(format!("collection handle {}", collection.0)))
    }

    fn start_upload(
        &mut self,
        id: RequestId,
        db: DbHandle,
        unid: Unid,
        name: String,
        mime: String,
        size: Option<u64>,
    ) -> Vec<Answer> {
        let checked = self.db_path(db).and_then(|path| {
            self.state.store.lock().unwrap().db(&path)?.doc(&unid)?;
            match size {
                Some(size) if size > MAX_ATTACHMENT => Err(too_large(size)),
                _ => Ok(path),
            }
        });
        match checked {
            Ok(db) => {
                let upload = Upload {
                    db,
                    unid,
                    name,
                    mime,
                    data: Vec::new(),
                };
                self.uploads.insert(id, upload);
                vec![]
            }
            Err(failure) => vec![Answer::Fail(id, failure)],
        }
    }

    fn chunk(&mut self, id: RequestId, data: &[u8]) -> Vec<Answer> {
        let Some(upload) = self.uploads.get_mut(&id) else {
            return vec![]; // refused earlier in this read
        };
        upload.data.extend_from_slice(data);
        let size = upload.data.len() as u64;
        if size <= MAX_ATTACHMENT {
            return vec![];
        }
        self.uploads.remove(&id);
        vec![Answer::Fail(id, too_large(size))]
    }

    fn end(&mut self, id: RequestId) -> Vec<Answer> {
        let Some(upload) = self.uploads.remove(&id) else {
            return vec![];
        };
        let size = upload.data.len() as u64;
        let mut store = self.state.store.lock().unwrap();
        let db = store.db_mut(&upload.db).unwrap();
        db.attachments
            .insert((upload.unid, upload.name), (upload.mime, upload.data));
        vec![Answer::Respond(id, Response::AttachmentStored { size })]
    }

    fn download(&mut self, id: RequestId, db: DbHandle, unid: Unid, name: &str) -> Answer {
        let found = self.db_path(db).and_then(|path| {
            let store = self.state.store.lock().unwrap();
            let db = store.db(&path)?;
            db.attachments
                .get(&(unid, name.to_string()))
                .cloned()
                .ok_or_else(|| not_found(format!("attachment {name}")))
        });
        match found {
            Ok((mime, data)) => {
                let header = Response::AttachmentHeader {
                    name: name.into(),
                    mime,
                    size: data.len() as u64,
                };
                Answer::Download(id, header, data)
            }
            Err(failure) => Answer::Fail(id, failure),
        }
    }

    fn search(&mut self, id: RequestId, db: DbHandle, formula: &str) -> Answer {
        if formula == BAD_FORMULA {
            return Answer::Fail(id, (ErrorCode::BadRequest, "bad formula".into()));
        }
        let hits = self.db_path(db).and_then(|path| {
            let store = self.state.store.lock().unwrap();
            Ok(store.db(&path)?.matching(formula))
        });
        match hits {
            Ok(hits) => {
                let found = hits.len() as u64;
                let items = hits.into_iter().map(Response::SearchHit).collect();
                Answer::Stream(id, items, Response::SearchDone { found })
            }
            Err(failure) => Answer::Fail(id, failure),
        }
    }
}

fn too_large(size: u64) -> Failure {
    (
        ErrorCode::TooLarge,
        format!("attachment of {size} bytes exceeds the {MAX_ATTACHMENT}-byte limit"),
    )
}

fn statistic(name: &str, value: StatValue) -> Statistic {
    Statistic {
        name: name.into(),
        value,
    }
}

/// A page of the one view: a row per live document, its JSON as column.
fn read_entries(docs: &[client::Document], start: Start, count: u32, flags: ReadFlags) -> Response {
    let first = match start {
        Start::Position(p) => p as usize,
        Start::Key { key, .. } => docs
            .iter()
            .position(|d| d.json.contains(&key))
            .unwrap_or(docs.len()),
    };
    let rows = docs
        .iter()
        .enumerate()
        .skip(first)
        .take(count as usize)
        .map(|(position, d)| Row::Entry {
            position: position as u64,
            note_id: d.meta.note_id,
            unid: d.meta.unid,
            columns: vec![Value::Text(vec![d.json.clone()])],
        })
        .collect();
    let total = flags.count.then_some(docs.len() as u64);
    Response::Entries { rows, total }
}
