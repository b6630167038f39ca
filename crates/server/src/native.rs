//! The native protocol listener: one tokio task per connection driving a
//! `protocol::ServerConnection`, and a worker pool running the requests.
//!
//! ```text
//!  socket ──read──▶ ServerConnection::receive ──events──▶ spawn_blocking(job)
//!     ▲                                                        │ Service (may wait
//!     └──write── take_output ◀── respond/send_item/chunk ◀──mpsc┘ on a commit's fsync)
//! ```
//!
//! Why this shape: requests block (a commit waits for the group fsync, a
//! page miss for the disk), so they run on the runtime's blocking pool,
//! sized by `worker_threads`; the connection task itself never blocks, so
//! it keeps reading pipelined requests and writing answers as they come.
//! Answers already waiting when it takes one go out in the same write (up
//! to `WRITE_BATCH` bytes), so a streamed result such as a replication's
//! packets costs a system call per batch, not per item.
//! There is no hand-off between the connection task and a second "reply"
//! thread, and no shared queue with a thundering herd: a job is handed to
//! an idle pool thread directly, and its answer goes back over the
//! connection's own channel. That is the coordination the classic server
//! got wrong (100 ms stalls from waking worker threads); the statistics'
//! percentiles and `folio load docs` measure that it stays out of the way.
//!
//! Document writes (create, update, delete) are the exception: they need
//! no worker. The connection task checks them and queues them with the
//! database itself (`Service::write_then`); the first write into an empty
//! queue schedules a run of the queue after one `yield`, so the writes of
//! every connection ready at that moment commit as one transaction; and
//! the log's writer thread sends each answer over its connection's
//! channel once the group's fsync is done. A commit thus crosses threads twice
//! per group (the log writer is woken by the append, and wakes the
//! connections), not four times per write, and no worker thread sleeps in
//! it.
//!
//! Uploads stream: the connection task forwards each chunk over a small
//! bounded channel to the job, which reads it as a `std::io::Read`; a full
//! channel stops the task reading the socket, so TCP's flow control slows
//! the client down instead of the server buffering a whole file. A
//! connection that ends before its upload's End frame makes the reader
//! fail, so a truncated attachment is never committed.

use crate::auth::Secret;
use crate::guard::{Guarded, OwnReads};
use crate::listener::{finish, Gate, Lifecycle, Listener};
use crate::service::{Caller, DocWrite, FolderChange, ReplicaSession, Service, WriteDone};
use crate::stats::Op;
use crate::upload::{Piece, UploadReader};
use crate::{Busy, ServerError, ServerResult};
use bytes::Bytes;
use nsf::Database;
use parking_lot::Mutex;
use protocol::{
    CollectionHandle, Compression, DbHandle, ErrorCode, ProtocolError, Request, RequestId,
    Response, ServerConfig, ServerConnection, ServerEvent, SessionId,
};
use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::TcpListener;
use tokio::sync::{mpsc, watch};

/// Settings of the native listener.
#[derive(Clone, Debug)]
pub struct NativeSettings {
    /// Connections served at once; more are refused with error 503.
    pub max_connections: usize,
    /// Compression methods offered to clients (off is always possible).
    pub compression: Vec<Compression>,
    /// Largest frame accepted or sent.
    pub max_frame_size: u32,
    /// Time a client has from connecting to the end of its Hello (TLS
    /// handshake included).
    pub handshake_timeout: Duration,
    /// Time a connection with no request in flight is kept; `None`: for
    /// ever.
    pub idle_timeout: Option<Duration>,
    /// Time an answer may wait for the client to read any of it, and an
    /// upload for the client to send more of it.
    pub stall_timeout: Duration,
    /// The highest zstd level granted to a client that asks for one
    /// (`compression_max_level`): each such connection holds a context
    /// sized for its level.
    pub max_strong_level: protocol::ZstdLevel,
}

impl Default for NativeSettings {
    fn default() -> Self {
        NativeSettings {
            max_connections: 2_000,
            compression: vec![Compression::Strong, Compression::Fast],
            max_frame_size: protocol::DEFAULT_MAX_FRAME_SIZE,
            handshake_timeout: Duration::from_secs(10),
            idle_timeout: Some(Duration::from_secs(3_600)),
            stall_timeout: Duration::from_secs(60),
            max_strong_level: protocol::ZstdLevel::MAX,
        }
    }
}

/// Bytes of an attachment read from storage per `Chunk` frame.
const DOWNLOAD_CHUNK: usize = 256 << 10;
/// Answers waiting to be written, per connection.
const OUT_QUEUE: usize = 64;
/// Output gathered from answers already waiting before one write (more
/// may follow when one answer alone is larger).
const WRITE_BATCH: usize = 256 << 10;
/// Chunks of one upload queued for the job storing them (each up to a
/// frame, 1 MiB from the client library) before the connection stops
/// reading its socket.
const CHUNK_QUEUE: usize = 4;
/// Bytes read at once between frames (thousands of mostly idle
/// connections should not each hold a large buffer). Once a large frame's
/// length is in, the decoder makes room for all of it, so an upload chunk
/// is still read in as few reads as the socket allows.
const READ_BUFFER: usize = 16 << 10;
/// Open databases and collections per connection.
const MAX_HANDLES: usize = 10_000;
/// Replication sessions open at once per connection.
const MAX_REPLICATIONS: usize = 8;
/// The longest a `WaitChanges` waits, whatever it asks.
const MAX_FEED_WAIT: Duration = Duration::from_secs(60);
/// Room left in a frame for its header and the item's tag: a replication
/// packet must fit in what remains.
const ITEM_OVERHEAD: usize = 64;

/// Accepts connections until the lifecycle leaves `Serving`, then waits
/// for every connection to finish its in-flight requests, or drops those
/// still open once it reaches `Cut`.
pub async fn serve(
    listener: TcpListener,
    tls: Option<tokio_rustls::TlsAcceptor>,
    service: Arc<Service>,
    settings: NativeSettings,
    mut life: watch::Receiver<Lifecycle>,
) {
    let refusal = match tls {
        // A TLS client could not read a plain frame: it is just closed.
        Some(_) => Bytes::new(),
        None => busy_frame(&settings),
    };
    let gate = Gate::new(settings.max_connections, refusal);
    let mut tasks = tokio::task::JoinSet::new();
    let mut listener = Listener::new(listener, "native");
    while let Some((socket, peer)) = listener.accept(&mut life).await {
        let accepted = Instant::now();
        let Some((socket, slot)) = gate.admit(socket) else {
            service.stats().connection_refused();
            continue;
        };
        let _ = socket.set_nodelay(true);
        let stats = service.stats().clone();
        let stream = Guarded::new(socket, OwnReads, settings.stall_timeout, stats.clone());
        let (service, settings, life, tls) =
            (service.clone(), settings.clone(), life.clone(), tls.clone());
        tasks.spawn(async move {
            let _slot = slot;
            let Some(acceptor) = tls else {
                return connection(stream, service, settings, life, accepted).await;
            };
            let deadline = accepted + settings.handshake_timeout;
            match tokio::time::timeout_at(deadline.into(), acceptor.accept(stream)).await {
                Ok(Ok(s)) => connection(s, service, settings, life, accepted).await,
                Ok(Err(e)) => tracing::info!(%peer, "TLS handshake failed: {e}"),
                Err(_) => {
                    stats.connection_timed_out();
                    tracing::info!(%peer, "TLS handshake timed out");
                }
            }
        });
        while tasks.try_join_next().is_some() {}
    }
    drop(listener);
    finish(tasks, life).await;
}

fn protocol_config(settings: &NativeSettings) -> ServerConfig {
    ServerConfig {
        compression: settings.compression.clone(),
        max_frame_size: settings.max_frame_size,
        max_strong_level: settings.max_strong_level,
        ..ServerConfig::default()
    }
}

/// What a client over the connection limit is told before it is closed.
fn busy_frame(settings: &NativeSettings) -> Bytes {
    let mut conn = ServerConnection::new(protocol_config(settings));
    let busy = ServerError::Busy(Busy::NativeConnections {
        max: settings.max_connections,
    });
    conn.close(busy.code(), &busy.to_string());
    conn.take_output().into()
}

/// What a job sends back to its connection task.
enum Out {
    /// The handshake's verdict.
    Auth(ServerResult<Caller>),
    /// A streamed result (search hit, download header).
    Item(RequestId, Response),
    /// Attachment bytes of a download.
    Chunk(RequestId, Bytes),
    /// The final answer; the job is over.
    Final {
        id: RequestId,
        result: ServerResult<Response>,
        op: Op,
        started: Instant,
    },
}

/// Handles a connection has handed out.
#[derive(Default)]
struct Handles {
    next: u32,
    dbs: HashMap<DbHandle, HeldDb>,
    collections: HashMap<CollectionHandle, (DbHandle, String)>,
    /// Replication sessions by the caller's id: the database and
    /// direction they were opened on, and the server's side.
    replications: HashMap<u64, (DbHandle, Arc<Mutex<ReplicaSession>>)>,
}

impl Handles {
    fn next_id(&mut self) -> ServerResult<u32> {
        if self.dbs.len() + self.collections.len() >= MAX_HANDLES {
            return Err(ServerError::TooLarge(format!(
                "a connection may hold at most {MAX_HANDLES} open databases and collections"
            )));
        }
        self.next = self.next.wrapping_add(1).max(1);
        Ok(self.next)
    }

    fn held(&self, h: DbHandle) -> ServerResult<HeldDb> {
        self.dbs
            .get(&h)
            .cloned()
            .ok_or_else(|| ServerError::NotFound(format!("no open database with handle {}", h.0)))
    }

    fn collection(&self, h: CollectionHandle) -> ServerResult<(HeldDb, String)> {
        let (db, name) = self.collections.get(&h).ok_or_else(|| {
            ServerError::NotFound(format!("no open collection with handle {}", h.0))
        })?;
        Ok((self.held(*db)?, name.clone()))
    }
}

/// A database a connection opened. The handle does not keep the instance
/// open (I54): with thousands of users each holding a mail file open,
/// descriptors and memory are bounded by `max_open_databases`, not by
/// handles. While the instance is open (used by anyone, or kept by the
/// cache) the handle reaches it directly; once the cache has closed it,
/// the next request opens the file again through the cache, with the
/// caller's access checked again, and refuses it if the file is no longer
/// the instance the handle opened (a restore, a copy-style compact or a
/// fixup replaced it).
#[derive(Clone)]
struct HeldDb {
    handle: DbHandle,
    path: String,
    instance: nsf::DbInstanceId,
    live: std::sync::Weak<Database>,
}

impl HeldDb {
    fn of(handle: DbHandle, db: &Arc<Database>) -> HeldDb {
        HeldDb {
            handle,
            path: db.path().to_string(),
            instance: db.instance_id(),
            live: Arc::downgrade(db),
        }
    }

    /// The instance if it is open now, with no I/O and no wait; not one
    /// the cache is closing (I19: nobody takes that up; the cache opens
    /// the path again once it is closed).
    fn live(&self) -> Option<Arc<Database>> {
        self.live.upgrade().filter(|db| !db.is_closing())
    }

    /// The instance, opened again through the cache if it was closed.
    /// May read the file's header: call it where blocking is allowed.
    fn reach(&self, service: &Service, caller: &Caller) -> ServerResult<Arc<Database>> {
        if let Some(db) = self.live() {
            return Ok(db);
        }
        let (db, _) = service
            .open_database(caller, &self.path)
            .map_err(|e| match e {
                // What the handle opened is gone: deleted (I42), or no longer
                // the caller's to see. Either way the handle is dead.
                ServerError::NotFound(_) => ServerError::NotFound(format!(
                "database handle {}: {} was deleted or is no longer reachable since it was opened",
                self.handle.0, self.path
            )),
                other => other,
            })?;
        if db.instance_id() != self.instance {
            return Err(ServerError::NotFound(format!(
                "database handle {} is stale: {} was replaced since it was opened \
                 (restore, copy-style compact or fixup); open it again",
                self.handle.0, self.path
            )));
        }
        Ok(db)
    }
}

/// One connection's state, owned by its task.
struct Conn {
    proto: ServerConnection,
    service: Arc<Service>,
    caller: Option<Arc<Caller>>,
    handles: Arc<Mutex<Handles>>,
    uploads: HashMap<RequestId, mpsc::Sender<Piece>>,
    jobs: usize,
    tx: mpsc::Sender<Out>,
    life: watch::Receiver<Lifecycle>,
    max_item: usize,
}

/// Counts an open native connection for the statistics while it lives
/// (its task may be dropped at `Cut` rather than return).
struct Open(Arc<crate::stats::Stats>);

impl Open {
    fn new(stats: Arc<crate::stats::Stats>) -> Open {
        stats.connection_opened();
        Open(stats)
    }
}

impl Drop for Open {
    fn drop(&mut self) {
        self.0.connection_closed();
    }
}

/// What a connection waits for from its client, with a deadline.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Wait {
    /// The Hello, since connecting.
    Handshake,
    /// A request, since the last activity (nothing in flight).
    Request,
    /// More of an upload in progress, since the last bytes.
    Upload,
}

impl Wait {
    /// Why the connection is closed when the wait is over.
    fn reason(self, s: &NativeSettings) -> String {
        let secs = |d: Duration| d.as_secs_f64();
        match self {
            Wait::Handshake => format!(
                "no handshake within {} s of connecting (handshake_timeout_secs)",
                secs(s.handshake_timeout)
            ),
            Wait::Request => format!(
                "closed after {} s without a request (idle_timeout_secs); reconnect to go on",
                secs(s.idle_timeout.unwrap_or_default())
            ),
            Wait::Upload => format!(
                "the upload in progress sent nothing for {} s (stall_timeout_secs)",
                secs(s.stall_timeout)
            ),
        }
    }
}

async fn connection<S>(
    stream: S,
    service: Arc<Service>,
    settings: NativeSettings,
    mut life: watch::Receiver<Lifecycle>,
    accepted: Instant,
) where
    S: AsyncRead + AsyncWrite + Unpin,
{
    let _open = Open::new(service.stats().clone());
    let (mut rd, mut wr) = tokio::io::split(stream);
    let (tx, mut rx) = mpsc::channel(OUT_QUEUE);
    let mut c = Conn {
        proto: ServerConnection::new(protocol_config(&settings)),
        service: service.clone(),
        caller: None,
        handles: Arc::default(),
        uploads: HashMap::new(),
        jobs: 0,
        tx,
        life: life.clone(),
        max_item: (settings.max_frame_size as usize).saturating_sub(ITEM_OVERHEAD),
    };
    let mut reading = true;
    let mut stopping = *life.borrow() != Lifecycle::Serving;
    // The client's deadline, checked when the timer fires; the timer is
    // moved only when the deadline comes sooner, not at every read.
    let mut last_active = accepted;
    let timer = tokio::time::sleep_until((accepted + settings.handshake_timeout).into());
    tokio::pin!(timer);
    let mut armed = Some(accepted + settings.handshake_timeout);
    loop {
        if let Some((deadline, _)) = c.client_deadline(&settings, accepted, last_active) {
            if armed.is_none_or(|a| deadline < a) {
                timer.as_mut().reset(deadline.into());
                armed = Some(deadline);
            }
        }
        tokio::select! {
            // Straight into the protocol's buffer: no copy of the bytes.
            // Once stopping, only an upload in flight is still read.
            r = rd.read_buf(c.proto.read_buffer(READ_BUFFER)),
                if reading && (!stopping || !c.uploads.is_empty()) => match r {
                Ok(0) | Err(_) => {
                    reading = false;
                    // Uploads without their End fail: nothing is committed.
                    c.uploads.clear();
                }
                Ok(_) => {
                    c.receive().await;
                    last_active = Instant::now();
                }
            },
            Some(out) = rx.recv() => {
                c.deliver(out);
                c.deliver_queued(&mut rx);
                last_active = Instant::now();
            }
            _ = life.changed(), if !stopping => stopping = true,
            () = &mut timer, if armed.is_some() => {
                armed = None;
                if let Some((deadline, wait)) = c.client_deadline(&settings, accepted, last_active) {
                    if deadline <= Instant::now() {
                        service.stats().connection_timed_out();
                        c.proto.close(ErrorCode::Other(408), &wait.reason(&settings));
                    }
                }
            }
        }
        let out = c.proto.take_output();
        if !out.is_empty() && wr.write_all(&out).await.is_err() {
            break;
        }
        if c.proto.phase() == protocol::Phase::Closed || (!reading && c.jobs == 0) {
            break;
        }
        if stopping && c.jobs == 0 {
            let busy = ServerError::Busy(Busy::ShuttingDown);
            c.proto.close(busy.code(), &busy.to_string());
            let _ = wr.write_all(&c.proto.take_output()).await;
            break;
        }
    }
    // Jobs still running see their answers go nowhere; uploads in
    // progress are aborted (their readers fail, nothing is committed).
    drop(c);
    let _ = wr.shutdown().await;
}

impl Conn {
    /// What the connection waits for from its client and until when;
    /// `None` while the server is the one working (authenticating, or
    /// running requests that need nothing more from the client).
    fn client_deadline(
        &self,
        s: &NativeSettings,
        accepted: Instant,
        last_active: Instant,
    ) -> Option<(Instant, Wait)> {
        match self.proto.phase() {
            protocol::Phase::Handshaking => Some((accepted + s.handshake_timeout, Wait::Handshake)),
            protocol::Phase::Open if self.jobs == 0 => {
                s.idle_timeout.map(|t| (last_active + t, Wait::Request))
            }
            protocol::Phase::Open if !self.uploads.is_empty() => {
                Some((last_active + s.stall_timeout, Wait::Upload))
            }
            _ => None,
        }
    }

    /// Handles what the last read appended to the protocol's buffer.
    async fn receive(&mut self) {
        let events = match self.proto.receive_buffered() {
            Ok(ev) => ev,
            Err(ProtocolError::Closed) => return,
            Err(e) => {
                tracing::info!("native connection closed: {e}");
                return;
            }
        };
        for ev in events {
            self.event(ev).await;
        }
    }

    async fn event(&mut self, ev: ServerEvent) {
        match ev {
            ServerEvent::Authenticate { credentials, .. } => {
                let (service, tx) = (self.service.clone(), self.tx.clone());
                let started = Instant::now();
                tokio::task::spawn_blocking(move || {
                    let r = match credentials {
                        None => Ok(Caller::anonymous()),
                        Some(c) => service.authenticate(&c.user, &Secret::parse(c.password)),
                    };
                    service
                        .stats()
                        .record(Op::Login, started.elapsed(), r.is_ok());
                    let _ = tx.blocking_send(Out::Auth(r));
                });
            }
            ServerEvent::Request { id, request } => self.request(id, request),
            ServerEvent::Chunk { id, data } => {
                if let Some(up) = self.uploads.get(&id) {
                    if up.send(Piece::Data(data)).await.is_err() {
                        // The job stopped reading (it failed early).
                        self.uploads.remove(&id);
                    }
                }
            }
            ServerEvent::End { id } => {
                if let Some(up) = self.uploads.remove(&id) {
                    let _ = up.send(Piece::End).await;
                }
            }
            ServerEvent::PeerClosed { .. } => {}
        }
    }

    /// Delivers the answers already waiting in the channel too, up to
    /// [`WRITE_BATCH`] bytes of output, so that a stream of items (a
    /// replication's packets, a search's hits) goes out in one write
    /// instead of a system call per item. It never waits for more.
    fn deliver_queued(&mut self, rx: &mut mpsc::Receiver<Out>) {
        while self.proto.output_len() < WRITE_BATCH {
            match rx.try_recv() {
                Ok(out) => self.deliver(out),
                Err(_) => break,
            }
        }
    }

    fn deliver(&mut self, out: Out) {
        let r = match out {
            Out::Auth(Ok(caller)) => {
                self.caller = Some(Arc::new(caller));
                self.proto.accept(SessionId(rand::random()))
            }
            Out::Auth(Err(e)) => self.proto.refuse(e.code(), &e.to_string()),
            Out::Item(id, item) => self.proto.send_item(id, &item),
            Out::Chunk(id, data) => self.proto.send_chunk(id, &data),
            Out::Final {
                id,
                result,
                op,
                started,
            } => {
                self.jobs -= 1;
                self.uploads.remove(&id);
                self.service
                    .stats()
                    .record(op, started.elapsed(), result.is_ok());
                self.answer(id, result)
            }
        };
        if let Err(e) = r {
            if e != ProtocolError::Closed {
                tracing::warn!("native connection: {e}");
            }
        }
    }

    /// Sends a final answer; one too large for a frame becomes error 413.
    fn answer(
        &mut self,
        id: RequestId,
        result: ServerResult<Response>,
    ) -> Result<(), ProtocolError> {
        match result {
            Ok(resp) => match self.proto.respond(id, &resp) {
                Err(ProtocolError::FrameTooLarge { length, max }) => self.proto.fail(
                    id,
                    ErrorCode::TooLarge,
                    &format!("the answer of {length} bytes does not fit the {max}-byte frame limit; ask for fewer results"),
                ),
                r => r,
            },
            Err(e) => self.proto.fail(id, e.code(), &e.to_string()),
        }
    }

    /// Starts a job for a request on the worker pool (a document write
    /// is queued with its database instead, see the module docs).
    fn request(&mut self, id: RequestId, request: Request) {
        let started = Instant::now();
        let Some(caller) = self.caller.clone() else {
            return;
        };
        let request = match self.document_write(id, request, &caller, started) {
            Some(other) => other,
            None => return,
        };
        let request = match self.change_feed(id, request, &caller, started) {
            Some(other) => other,
            None => return,
        };
        let upload = if request.shape() == protocol::Shape::Upload {
            let (utx, urx) = mpsc::channel(CHUNK_QUEUE);
            self.uploads.insert(id, utx);
            Some(urx)
        } else {
            None
        };
        self.jobs += 1;
        let op = op_of(&request);
        let bulk = upload.is_some();
        let job = Job {
            service: self.service.clone(),
            caller,
            handles: self.handles.clone(),
            tx: self.tx.clone(),
            id,
            max_item: self.max_item,
        };
        let work = move || {
            let result = job.run(request, upload);
            let _ = job.tx.blocking_send(Out::Final {
                id,
                result,
                op,
                started,
            });
        };
        if bulk {
            crate::upload::spawn_bulk(work);
        } else {
            tokio::task::spawn_blocking(work);
        }
    }
}

impl Conn {
    /// Runs a `WaitChanges` as a task of its own: it waits on the
    /// database's commits, not on a worker thread, and answers at once
    /// when the server starts shutting down (so a feed never holds
    /// shutdown); other requests are handed back.
    fn change_feed(
        &mut self,
        id: RequestId,
        request: Request,
        caller: &Arc<Caller>,
        started: Instant,
    ) -> Option<Request> {
        let Request::WaitChanges {
            db,
            since,
            limit,
            timeout_ms,
        } = request
        else {
            return Some(request);
        };
        self.jobs += 1;
        let (service, caller, tx) = (self.service.clone(), caller.clone(), self.tx.clone());
        let held = self.handles.lock().held(db);
        let mut life = self.life.clone();
        tokio::spawn(async move {
            let database = match held.map(|h| (h.live(), h)) {
                Ok((Some(database), _)) => Ok(database),
                Ok((None, held)) => {
                    let (service, caller) = (service.clone(), caller.clone());
                    tokio::task::spawn_blocking(move || held.reach(&service, &caller))
                        .await
                        .unwrap_or_else(|e| Err(ServerError::Internal(e.to_string())))
                }
                Err(e) => Err(e),
            };
            let stop = async move {
                while *life.borrow() == Lifecycle::Serving {
                    if life.changed().await.is_err() {
                        return;
                    }
                }
            };
            let wait = Duration::from_millis(u64::from(timeout_ms)).min(MAX_FEED_WAIT);
            let result = match database {
                Ok(database) => service
                    .changes_after(&caller, &database, since, limit, wait, stop)
                    .await
                    .map(|(docs, next, more)| Response::Changes { docs, next, more }),
                Err(e) => Err(e),
            };
            let _ = tx
                .send(Out::Final {
                    id,
                    result,
                    op: Op::Changes,
                    started,
                })
                .await;
        });
        None
    }

    /// Queues a document write with its database, answering when it is
    /// durable; other requests are handed back.
    fn document_write(
        &mut self,
        id: RequestId,
        request: Request,
        caller: &Caller,
        started: Instant,
    ) -> Option<Request> {
        let op = op_of(&request);
        // The document's text is parsed once, here, where it came in.
        let parse = |json: String| self.service.parse_document(json.as_bytes());
        let (db, write) = match request {
            Request::CreateDocument { db, json } => {
                (db, parse(json).map(|doc| DocWrite::Create { doc }))
            }
            Request::UpdateDocument {
                db,
                unid,
                based_on,
                force,
                json,
            } => (
                db,
                parse(json).map(|doc| DocWrite::Update {
                    unid,
                    based_on,
                    force,
                    doc,
                }),
            ),
            Request::DeleteDocument {
                db,
                unid,
                based_on,
                force,
            } => (
                db,
                Ok(DocWrite::Delete {
                    unid,
                    based_on,
                    force,
                }),
            ),
            other => return Some(other),
        };
        self.jobs += 1;
        let tx = self.tx.clone();
        let runtime = tokio::runtime::Handle::current();
        let done: WriteDone = Box::new(move |result| {
            let out = Out::Final {
                id,
                result: result.map(Response::Saved),
                op,
                started,
            };
            // Usually there is room; this may run on the log's writer
            // thread, which must not wait for a slow reader.
            if let Err(mpsc::error::TrySendError::Full(out)) = tx.try_send(out) {
                runtime.spawn(async move {
                    let _ = tx.send(out).await;
                });
            }
        });
        match (self.handles.lock().held(db), write) {
            (Ok(held), Ok(write)) => match held.live() {
                Some(database) => self.service.write_then(caller, &database, write, done),
                // Closed by the cache since: opened again where blocking
                // is allowed, then queued as usual (I54).
                None => {
                    let (service, caller) = (self.service.clone(), caller.clone());
                    tokio::task::spawn_blocking(move || match held.reach(&service, &caller) {
                        Ok(database) => service.write_then(&caller, &database, write, done),
                        Err(e) => done(Err(e)),
                    });
                }
            },
            (Err(e), _) | (_, Err(e)) => done(Err(e)),
        }
        None
    }
}

/// The statistics bucket of a request.
fn op_of(r: &Request) -> Op {
    use Request as R;
    match r {
        R::CreateDatabase { .. }
        | R::ListDatabases { .. }
        | R::DatabaseInfo { .. }
        | R::OpenDatabase { .. }
        | R::CloseDatabase { .. }
        | R::DeleteDatabase { .. }
        | R::CopyDatabase { .. } => Op::Database,
        R::CreateDocument { .. } | R::SendMail { .. } | R::SendMailFiles { .. } => Op::Create,
        R::ReadDocument { .. } => Op::Read,
        R::UpdateDocument { .. } => Op::Update,
        R::DeleteDocument { .. } => Op::Delete,
        R::ModifiedSince { .. } => Op::Changes,
        R::PutAttachment { .. } | R::DeleteAttachment { .. } => Op::PutAttachment,
        R::GetAttachment { .. } => Op::GetAttachment,
        R::OpenCollection { .. } => Op::OpenCollection,
        R::ReadEntries { .. } | R::FindByKey { .. } | R::CloseCollection { .. } => Op::ReadEntries,
        R::UpdateCollection { .. }
        | R::FolderAdd { .. }
        | R::FolderRemove { .. }
        | R::CreateView { .. }
        | R::DeleteView { .. } => Op::UpdateCollection,
        R::Search { .. } => Op::Search,
        R::Replicate { .. } | R::WaitChanges { .. } => Op::Changes,
        R::Meeting { op, .. } => match op {
            protocol::MeetingRequest::Create { .. } => Op::Create,
            protocol::MeetingRequest::Read { .. } => Op::Read,
            protocol::MeetingRequest::Cancel { .. } => Op::Delete,
            _ => Op::Update,
        },
        _ => Op::Admin,
    }
}

/// One request running on a worker thread.
struct Job {
    service: Arc<Service>,
    caller: Arc<Caller>,
    handles: Arc<Mutex<Handles>>,
    tx: mpsc::Sender<Out>,
    id: RequestId,
    max_item: usize,
}

impl Job {
    fn db(&self, h: DbHandle) -> ServerResult<Arc<Database>> {
        let held = self.handles.lock().held(h)?;
        held.reach(&self.service, &self.caller)
    }

    fn send(&self, out: Out) -> ServerResult<()> {
        self.tx
            .blocking_send(out)
            .map_err(|_| ServerError::Internal("the connection closed".into()))
    }

    fn run(
        &self,
        request: Request,
        upload: Option<mpsc::Receiver<Piece>>,
    ) -> ServerResult<Response> {
        let (s, caller) = (&*self.service, &*self.caller);
        use Request as R;
        Ok(match request {
            R::CreateDatabase { path, title } => {
                Response::DatabaseInfo(s.create_database(caller, &path, &title)?)
            }
            R::ListDatabases { folder } => {
                Response::Databases(s.list_databases(caller, folder.as_deref())?)
            }
            R::DatabaseInfo { path } => Response::DatabaseInfo(s.database_info(caller, &path)?),
            R::OpenDatabase { path } => {
                let (db, info) = s.open_database(caller, &path)?;
                let mut h = self.handles.lock();
                let handle = DbHandle(h.next_id()?);
                h.dbs.insert(handle, HeldDb::of(handle, &db));
                Response::DatabaseOpened { db: handle, info }
            }
            R::CloseDatabase { db } => {
                let mut h = self.handles.lock();
                h.dbs.remove(&db).ok_or_else(|| {
                    ServerError::NotFound(format!("no open database with handle {}", db.0))
                })?;
                h.collections.retain(|_, (d, _)| *d != db);
                Response::Done
            }
            R::ReadDocument { db, doc } => {
                Response::Document(s.read_document(caller, &*self.db(db)?, doc)?)
            }
            R::CreateDocument { .. } | R::UpdateDocument { .. } | R::DeleteDocument { .. } => {
                return Err(ServerError::Internal(
                    "document writes are queued with their database, not run as jobs".into(),
                ))
            }
            R::ModifiedSince { db, since, limit } => {
                let (docs, next, more) = s.modified_since(caller, &*self.db(db)?, since, limit)?;
                Response::Changes { docs, next, more }
            }
            R::PutAttachment {
                db,
                unid,
                name,
                mime,
                size,
            } => {
                let db = self.db(db)?;
                let mut reader = UploadReader::new(
                    upload
                        .ok_or_else(|| ServerError::Internal("upload without a channel".into()))?,
                );
                let size = s.put_attachment(caller, &db, unid, &name, &mime, size, &mut reader)?;
                Response::AttachmentStored { size }
            }
            R::GetAttachment { db, unid, name } => self.download(&*self.db(db)?, unid, &name)?,
            R::OpenCollection { db, name } => {
                let database = self.db(db)?;
                let info = s.open_collection(caller, &database, &name)?;
                let mut h = self.handles.lock();
                let handle = CollectionHandle(h.next_id()?);
                h.collections.insert(handle, (db, name));
                Response::CollectionOpened {
                    collection: handle,
                    titles: info.titles,
                    categorized: info.categorized,
                    count: info.count,
                    seq: info.seq,
                }
            }
            R::ReadEntries {
                collection,
                start,
                count,
                flags,
            } => {
                let (held, name) = self.handles.lock().collection(collection)?;
                let db = held.reach(&self.service, &self.caller)?;
                let (rows, total) = s.read_entries(caller, &db, &name, &start, count, flags)?;
                Response::Entries { rows, total }
            }
            R::FindByKey {
                collection,
                key,
                prefix,
            } => {
                let (held, name) = self.handles.lock().collection(collection)?;
                let db = held.reach(&self.service, &self.caller)?;
                Response::Found(s.find_by_key(caller, &db, &name, &key, prefix)?)
            }
            R::UpdateCollection { collection } => {
                let (held, name) = self.handles.lock().collection(collection)?;
                let db = held.reach(&self.service, &self.caller)?;
                let (seq, changed) = s.update_collection(caller, &db, &name)?;
                Response::CollectionUpdated { seq, changed }
            }
            R::CloseCollection { collection } => {
                self.handles
                    .lock()
                    .collections
                    .remove(&collection)
                    .ok_or_else(|| {
                        ServerError::NotFound(format!(
                            "no open collection with handle {}",
                            collection.0
                        ))
                    })?;
                Response::Done
            }
            R::FolderAdd { db, folder, unids } => {
                s.folder_change(caller, &self.db(db)?, &folder, &unids, FolderChange::Add)?;
                Response::Done
            }
            R::FolderRemove { db, folder, unids } => {
                s.folder_change(caller, &self.db(db)?, &folder, &unids, FolderChange::Remove)?;
                Response::Done
            }
            R::Search { db, formula, since } => {
                let found = s.search(caller, &*self.db(db)?, &formula, since, |doc| {
                    self.send(Out::Item(self.id, Response::SearchHit(doc)))
                })?;
                Response::SearchDone { found }
            }
            R::Statistics => Response::Statistics(s.statistics(caller)?),
            R::GetAcl { path } => Response::Acl {
                json: s.get_acl(caller, &path)?,
            },
            R::SetAcl { path, json } => {
                s.set_acl(caller, &path, &json)?;
                Response::Done
            }
            R::CreateView { db, json } => {
                s.create_view(caller, &self.db(db)?, s.parse_view(json.as_bytes())?)?;
                Response::Done
            }
            R::DeleteView { db, name } => {
                s.delete_view(caller, &self.db(db)?, &name)?;
                Response::Done
            }
            R::MyAccess { path } => {
                let (user, level, roles) = s.my_access(caller, &path)?;
                Response::Access { user, level, roles }
            }
            R::MailAdmin(request) => Response::MailAdmin(s.mail_admin(caller, request)?),
            R::Archive { to } => Response::Archived(s.archive(caller, to.as_deref())?),
            R::Backup { dest, dbs } => Response::BackedUp(s.backup(caller, &dest, &dbs)?),
            R::Compact {
                path,
                copy,
                dry_run,
            } => Response::Compacted(s.compact(caller, &path, copy, dry_run)?),
            R::Replicate {
                db,
                session,
                direction,
                packets,
            } => self.replicate(db, session, direction, packets)?,
            R::WaitChanges { .. } => {
                return Err(ServerError::Internal(
                    "a change feed runs as a task of its own, not as a job".into(),
                ))
            }
            R::ReplicatePeer(request) => {
                Response::PeerReplicated(s.replicate_peer(caller, request)?)
            }
            R::SendMail {
                json,
                draft,
                on_behalf_of,
            } => {
                let sent = s.send_mail_json(caller, &json, draft, on_behalf_of.as_deref())?;
                Response::MailSent {
                    message_id: sent.message_id,
                    stored_in: sent.stored_in,
                    unid: protocol::Unid(sent.unid.0),
                    draft: sent.draft,
                }
            }
            R::SendMailFiles {
                json,
                draft,
                on_behalf_of,
                files,
            } => {
                let mut reader = UploadReader::new(
                    upload
                        .ok_or_else(|| ServerError::Internal("upload without a channel".into()))?,
                );
                let sent = s.send_mail_files(
                    caller,
                    &json,
                    draft,
                    on_behalf_of.as_deref(),
                    &files,
                    &mut reader,
                )?;
                Response::MailSent {
                    message_id: sent.message_id,
                    stored_in: sent.stored_in,
                    unid: protocol::Unid(sent.unid.0),
                    draft: sent.draft,
                }
            }
            R::Meeting { op, on_behalf_of } => {
                Response::Meeting(s.meeting_op(caller, op, on_behalf_of.as_deref())?)
            }
            R::DeleteDatabase { path } => {
                s.delete_database(caller, &path)?;
                Response::Done
            }
            R::DeleteAttachment {
                db,
                unid,
                name,
                based_on,
            } => Response::Saved(s.remove_attachment(
                caller,
                &*self.db(db)?,
                unid,
                &name,
                based_on,
            )?),
            R::CopyDatabase { src, dst, replica } => {
                let c = s.copy_database(caller, &src, &dst, replica)?;
                Response::DatabaseCopied {
                    info: c.info,
                    documents: c.documents,
                    views: c.views,
                }
            }
        })
    }

    /// One step of a replication session: opens it on its first step,
    /// streams the server's packets as items, forgets it once over.
    fn replicate(
        &self,
        db: DbHandle,
        id: u64,
        direction: protocol::ReplicaDirection,
        packets: Vec<Vec<u8>>,
    ) -> ServerResult<Response> {
        let database = self.db(db)?;
        let existing = self.handles.lock().replications.get(&id).cloned();
        let session = match existing {
            Some((on, session)) => {
                if on != db || session.lock().direction() != direction {
                    return Err(ServerError::BadRequest(format!(
                        "replication session {id} was opened on another database or direction"
                    )));
                }
                session
            }
            None => {
                let opened = self
                    .service
                    .open_replication(&self.caller, &database, direction)?;
                let session = Arc::new(Mutex::new(opened));
                let mut h = self.handles.lock();
                if h.replications.len() >= MAX_REPLICATIONS {
                    return Err(ServerError::TooLarge(format!(
                        "a connection may run at most {MAX_REPLICATIONS} replication sessions at once"
                    )));
                }
                h.replications.insert(id, (db, session.clone()));
                session
            }
        };
        let mut send = |bytes: Vec<u8>| {
            if bytes.len() > self.max_item {
                return Err(ServerError::TooLarge(format!(
                    "a replication fragment of {} bytes does not fit the frame limit \
                     (max_frame_size must leave room for {} bytes)",
                    bytes.len(),
                    replica::local::net::FRAGMENT_BYTES + replica::local::net::FRAGMENT_HEADER
                )));
            }
            self.send(Out::Item(self.id, Response::ReplicationPacket(bytes)))
        };
        let step = {
            let mut session = session.lock();
            self.service
                .replicate_step(&mut session, &database, packets, &mut send)
        };
        let over = match step {
            Ok(over) => over,
            Err(e) => {
                self.handles.lock().replications.remove(&id);
                return Err(e);
            }
        };
        if over {
            self.handles.lock().replications.remove(&id);
        }
        Ok(Response::Replicated { over })
    }

    /// Streams an attachment: a header item, then chunks as read.
    fn download(&self, db: &Database, unid: protocol::Unid, name: &str) -> ServerResult<Response> {
        let mut r = self.service.open_attachment(&self.caller, db, unid, name)?;
        let a = r.attachment().clone();
        self.send(Out::Item(
            self.id,
            Response::AttachmentHeader {
                name: a.name.clone(),
                mime: a.mime.clone(),
                size: a.size,
            },
        ))?;
        let mut sent = 0u64;
        let mut buf = vec![0u8; DOWNLOAD_CHUNK];
        loop {
            let n = nsf::read_full(&mut r, &mut buf)
                .map_err(|e| ServerError::Internal(format!("reading attachment {name:?}: {e}")))?;
            if n == 0 {
                break;
            }
            sent += n as u64;
            self.send(Out::Chunk(self.id, Bytes::copy_from_slice(&buf[..n])))?;
        }
        Ok(Response::AttachmentSent { size: sent })
    }
}
