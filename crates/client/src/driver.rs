//! The connection task: the one owner of the socket and of the protocol
//! state machine.
//!
//! ```text
//!   callers (any task)              connection task                   server
//!   ─────────────────               ───────────────                   ──────
//!   Command ──(unbounded mpsc)──▶ ClientConnection ── output queue ──▶ write
//!   answer ◀── oneshot ─────────┐      │ receive()
//!   items  ◀── unbounded mpsc ──┼── dispatch by request id ◀────────── read
//!   chunks ◀── bounded mpsc ────┘  (backlog: reading pauses while a
//!                                   download's consumer is full)
//! ```
//!
//! One `tokio::select!` loop waits on four things at once: room to write
//! queued output, bytes to read, room in a slow download's channel, and
//! the next command. Reading and writing are never sequenced against each
//! other, so a large upload cannot deadlock against a server that is
//! answering (each side would otherwise wait for the other to read).
//!
//! **Routing.** A command carries the channel its answers go to; once the
//! state machine has given the request its id, the route is kept under
//! that id until the final answer. Single answers go through a oneshot,
//! search hits through an unbounded channel, download chunks through a
//! small bounded channel.
//!
//! **Backpressure**, and why it differs by kind:
//!
//! * *Output*: commands are taken only while less than
//!   [`OUTPUT_HIGH_WATER`] bytes wait to be written, and an upload's next
//!   chunk is read only once the previous one is queued, so a fast file
//!   and a slow link hold at most about a megabyte here.
//! * *Downloads*: when a download's consumer (the caller writing the
//!   attachment out) is full, the delivery waits in a backlog and the task
//!   stops reading the socket until there is room. TCP then slows the
//!   server down: nothing is buffered without bound. The price is that
//!   other answers on the connection wait too (there is no per-request
//!   flow control in the protocol), which is why only our own download
//!   loop consumes these channels and it never waits on other requests.
//! * *Search hits* are queued without bound. A caller handling hits one by
//!   one may well issue other requests on the same client meanwhile (read
//!   or update each hit); if an unread hit could stop the socket, the
//!   answers those requests wait for could never be read. The hits queued
//!   are what the search returns, as a collected result would be.
//!
//! **Closing.** The first cause (the server's close frame, end of stream,
//! an I/O error, a protocol violation, `Client::close`, an abandoned
//! upload, or every handle being dropped) is stored as the reason, then
//! every route is dropped. Callers see their channel close and report
//! [`ClientError::Closed`] with that reason; the command channel is
//! closed so later calls fail the same way at once. Deliveries already in
//! the backlog are still handed over, then queued output (such as the
//! error frame reporting a violation) is written and the stream shut
//! down, within [`FINISH_TIMEOUT`].

use crate::error::ClientError;
use crate::transport::Transport;
use bytes::{Buf, Bytes};
use protocol::{ClientConnection, ClientEvent, Request, RequestId, Response};
use std::collections::{HashMap, VecDeque};
use std::io;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt, ReadHalf, WriteHalf};
use tokio::sync::mpsc::error::{SendError, TrySendError};
use tokio::sync::mpsc::{self, OwnedPermit};
use tokio::sync::oneshot;

/// Commands are not taken while this many bytes wait to be written.
pub(crate) const OUTPUT_HIGH_WATER: usize = 1 << 20;
/// Output segments handed to one vectored write.
const WRITE_SEGMENTS: usize = 16;
/// How long a closing connection may take to write its last bytes.
pub(crate) const FINISH_TIMEOUT: Duration = Duration::from_secs(1);
/// Size of each socket read.
const READ_BUFFER: usize = 64 * 1024;

/// The final answer to a request.
pub(crate) type Answer = Result<Response, ClientError>;

/// What a caller asks of the connection task.
pub(crate) enum Command {
    /// Send a request; its answers go to `route`. `started` receives the
    /// request's id as soon as it is queued (an upload needs it for its
    /// chunks).
    Request {
        request: Request,
        route: Route,
        started: Option<oneshot::Sender<RequestId>>,
    },
    /// Queue bytes of upload `id` (as they are: the output holds them
    /// until written); `queued` is told once they are.
    Chunk {
        id: RequestId,
        data: Bytes,
        queued: oneshot::Sender<()>,
    },
    /// End upload `id`.
    End { id: RequestId },
    /// The caller of upload `id` went away before its end. The protocol
    /// cannot cancel an upload and an `End` would store a truncated
    /// attachment, so the connection closes.
    Abandon { id: RequestId },
    /// Close the connection.
    Close,
}

/// Where the answers to one request go.
pub(crate) enum Route {
    /// A single final answer (most requests, uploads).
    Answer(oneshot::Sender<Answer>),
    /// Items then the final answer, queued without bound (searches).
    Items(mpsc::UnboundedSender<Delivery>),
    /// Items, chunks, then the final answer, with backpressure (downloads).
    Download(mpsc::Sender<Delivery>),
}

/// One thing said about a streamed request, in order.
pub(crate) enum Delivery {
    /// A streamed result (search hit, attachment header).
    Item(Response),
    /// Attachment bytes.
    Chunk(Bytes),
    /// The final answer; nothing follows.
    Final(Answer),
}

/// What the connection task and its callers share: why it closed, and
/// the bytes it moved since the handshake.
#[derive(Debug, Default)]
pub(crate) struct Shared {
    reason: OnceLock<String>,
    sent: AtomicU64,
    received: AtomicU64,
}

impl Shared {
    /// Bytes written to and read from the socket since the handshake
    /// (as they travel: framed, compressed, before TLS).
    pub(crate) fn traffic(&self) -> (u64, u64) {
        (
            self.sent.load(Ordering::Relaxed),
            self.received.load(Ordering::Relaxed),
        )
    }

    /// Why the connection closed, once it has.
    pub(crate) fn reason(&self) -> Option<&str> {
        self.reason.get().map(String::as_str)
    }

    /// The error a call gets once the connection is closed.
    pub(crate) fn closed_error(&self) -> ClientError {
        ClientError::Closed {
            reason: self
                .reason()
                .unwrap_or("the connection task ended")
                .to_string(),
        }
    }
}

/// The connection's life: open, then closing (delivering what was
/// already read) until the task ends.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Life {
    Open,
    Closing,
}

/// What a write step did.
enum Wrote {
    Bytes(usize),
    Flushed,
}

/// The connection task's state (see the module docs).
pub(crate) struct Driver {
    conn: ClientConnection,
    reader: ReadHalf<Box<dyn Transport>>,
    writer: WriteHalf<Box<dyn Transport>>,
    commands: mpsc::UnboundedReceiver<Command>,
    commands_open: bool,
    routes: HashMap<RequestId, Route>,
    /// Download deliveries waiting for room in their channel, in order.
    backlog: VecDeque<(mpsc::Sender<Delivery>, Delivery)>,
    /// Bytes queued for the server, and how many.
    out: VecDeque<Bytes>,
    out_len: usize,
    /// Bytes were written since the last flush (TLS buffers records).
    unflushed: bool,
    inbuf: Box<[u8]>,
    life: Life,
    shared: Arc<Shared>,
    addr: String,
}

impl Driver {
    pub(crate) fn new(
        stream: Box<dyn Transport>,
        conn: ClientConnection,
        commands: mpsc::UnboundedReceiver<Command>,
        shared: Arc<Shared>,
        addr: String,
    ) -> Driver {
        let (reader, writer) = tokio::io::split(stream);
        Driver {
            conn,
            reader,
            writer,
            commands,
            commands_open: true,
            routes: HashMap::new(),
            backlog: VecDeque::new(),
            out: VecDeque::new(),
            out_len: 0,
            unflushed: false,
            inbuf: vec![0; READ_BUFFER].into_boxed_slice(),
            life: Life::Open,
            shared,
            addr,
        }
    }

    /// Runs the connection until it closes and what was read is delivered.
    pub(crate) async fn run(mut self) {
        while self.life == Life::Open || !self.backlog.is_empty() {
            self.step().await;
        }
        self.finish().await;
    }

    /// Waits for the first thing that can happen and handles it.
    async fn step(&mut self) {
        let open = self.life == Life::Open;
        let blocked = self.backlog.front().map(|(tx, _)| tx.clone());
        tokio::select! {
            wrote = write_some(&mut self.writer, &self.out),
                if open && (!self.out.is_empty() || self.unflushed) => self.wrote(wrote),
            read = self.reader.read(&mut self.inbuf),
                if open && self.backlog.is_empty() => self.read(read),
            permit = reserve(blocked), if !self.backlog.is_empty() => self.deliver_backlog(permit),
            command = self.commands.recv(),
                if self.commands_open && (!open || self.out_len < OUTPUT_HIGH_WATER) => {
                self.command(command)
            }
        }
    }

    fn wrote(&mut self, wrote: io::Result<Wrote>) {
        match wrote {
            Ok(Wrote::Bytes(0)) => self.close(format!("{} stopped accepting bytes", self.addr)),
            Ok(Wrote::Bytes(n)) => {
                self.shared.sent.fetch_add(n as u64, Ordering::Relaxed);
                self.consume_output(n);
                self.unflushed = true;
            }
            Ok(Wrote::Flushed) => self.unflushed = false,
            Err(e) => self.close(format!("writing to {} failed: {e}", self.addr)),
        }
    }

    fn consume_output(&mut self, mut n: usize) {
        self.out_len -= n;
        while n > 0 {
            let front = self.out.front_mut().expect("written bytes were queued");
            let step = n.min(front.len());
            front.advance(step);
            n -= step;
            if front.is_empty() {
                self.out.pop_front();
            }
        }
    }

    /// Moves what the state machine queued to the output queue.
    fn collect_output(&mut self) {
        for bytes in self.conn.take_output_segments() {
            self.out_len += bytes.len();
            self.out.push_back(bytes);
        }
    }

    fn read(&mut self, read: io::Result<usize>) {
        match read {
            Ok(0) => self.close(format!("{} closed the connection", self.addr)),
            Ok(n) => match self.received(n) {
                Ok(events) => events.into_iter().for_each(|e| self.dispatch(e)),
                Err(e) => self.close(format!("the server broke the protocol: {e}")),
            },
            Err(e) => self.close(format!("reading from {} failed: {e}", self.addr)),
        }
        // A violation queued an error frame for the server.
        self.collect_output();
    }

    /// Counts `n` bytes read and hands them to the protocol.
    fn received(&mut self, n: usize) -> Result<Vec<ClientEvent>, protocol::ProtocolError> {
        self.shared.received.fetch_add(n as u64, Ordering::Relaxed);
        self.conn.receive(&self.inbuf[..n])
    }

    fn dispatch(&mut self, event: ClientEvent) {
        match event {
            ClientEvent::Response { id, response } => self.finish_request(id, Ok(response)),
            ClientEvent::Failed { id, code, message } => {
                self.finish_request(id, Err(ClientError::Server { code, message }))
            }
            ClientEvent::Item { id, item } => self.stream(id, Delivery::Item(item)),
            ClientEvent::Chunk { id, data } => self.stream(id, Delivery::Chunk(data)),
            ClientEvent::Closed { code, message } => self.close(format!(
                "the server closed the connection: {code}: {message}"
            )),
            // Only during the handshake, which is over.
            ClientEvent::Connected(_) => {}
        }
    }

    fn finish_request(&mut self, id: RequestId, answer: Answer) {
        match self.routes.remove(&id) {
            Some(Route::Answer(tx)) => drop(tx.send(answer)),
            Some(Route::Items(tx)) => drop(tx.send(Delivery::Final(answer))),
            Some(Route::Download(tx)) => self.deliver_download(tx, Delivery::Final(answer)),
            None => tracing::warn!(%id, "answer to a request nobody waits for"),
        }
    }

    fn stream(&mut self, id: RequestId, delivery: Delivery) {
        match self.routes.get(&id) {
            Some(Route::Items(tx)) => drop(tx.send(delivery)),
            Some(Route::Download(tx)) => self.deliver_download(tx.clone(), delivery),
            // The state machine lets items through only for streamed
            // requests, and every request in flight has a route.
            _ => tracing::warn!(%id, "streamed answer to a request that does not stream"),
        }
    }

    /// Delivers in order; what does not fit waits in the backlog, and
    /// reading pauses until it is delivered.
    fn deliver_download(&mut self, tx: mpsc::Sender<Delivery>, delivery: Delivery) {
        self.backlog.push_back((tx, delivery));
        self.drain_backlog();
    }

    /// Delivers the backlog's head with the room `permit` reserved, then
    /// whatever else fits.
    fn deliver_backlog(&mut self, permit: Result<OwnedPermit<Delivery>, SendError<()>>) {
        if let Some((_tx, delivery)) = self.backlog.pop_front() {
            // No permit: the consumer is gone, and so is its delivery.
            if let Ok(permit) = permit {
                permit.send(delivery);
            }
        }
        self.drain_backlog();
    }

    fn drain_backlog(&mut self) {
        while let Some((tx, delivery)) = self.backlog.pop_front() {
            if let Err(TrySendError::Full(delivery)) = tx.try_send(delivery) {
                self.backlog.push_front((tx, delivery));
                return;
            }
        }
    }

    fn command(&mut self, command: Option<Command>) {
        let Some(command) = command else {
            self.commands_open = false;
            self.close("every handle to the client was dropped".into());
            return;
        };
        self.execute(command);
        // Take what else is waiting, so pipelined requests leave in one
        // write rather than one system call (and TCP segment) each.
        while self.life == Life::Open && self.out_len + self.conn.output_len() < OUTPUT_HIGH_WATER {
            match self.commands.try_recv() {
                Ok(command) => self.execute(command),
                Err(_) => break,
            }
        }
        self.collect_output();
    }

    fn execute(&mut self, command: Command) {
        if self.life == Life::Closing {
            // Dropped with its routes: the caller reports the reason.
            return;
        }
        match command {
            Command::Request {
                request,
                route,
                started,
            } => self.send_request(&request, route, started),
            Command::Chunk { id, data, queued } => {
                if let Err(e) = self.conn.send_chunk_shared(id, data) {
                    self.fail_request(id, e.into());
                }
                let _ = queued.send(());
            }
            Command::End { id } => {
                if let Err(e) = self.conn.send_end(id) {
                    self.fail_request(id, e.into());
                }
            }
            Command::Abandon { id } => self.abandon(id),
            Command::Close => self.close("closed by the client".into()),
        }
    }

    fn send_request(
        &mut self,
        request: &Request,
        route: Route,
        started: Option<oneshot::Sender<RequestId>>,
    ) {
        let id = match self.conn.send_request(request) {
            Ok(id) => id,
            Err(e) => return route.fail(e.into()),
        };
        self.routes.insert(id, route);
        if let Some(started) = started {
            if started.send(id).is_err() {
                self.abandon(id);
            }
        }
    }

    /// Closes the connection for an upload whose caller went away.
    fn abandon(&mut self, id: RequestId) {
        self.close(format!(
            "upload {id} was abandoned before its end; the protocol cannot cancel an upload, \
             so the connection was closed"
        ));
    }

    fn fail_request(&mut self, id: RequestId, error: ClientError) {
        if let Some(route) = self.routes.remove(&id) {
            route.fail(error);
        }
    }

    /// Starts closing for `reason` (the first reason wins): callers of
    /// pending and later calls get `Closed` with it.
    fn close(&mut self, reason: String) {
        if self.life == Life::Closing {
            return;
        }
        tracing::debug!(addr = %self.addr, %reason, "connection closing");
        let _ = self.shared.reason.set(reason);
        self.life = Life::Closing;
        self.commands.close();
        self.routes.clear();
    }

    /// Writes what is still queued (bounded in time) and shuts the stream
    /// down (TLS close_notify, TCP FIN).
    async fn finish(mut self) {
        let flush = async {
            for bytes in &self.out {
                self.writer.write_all(bytes).await?;
            }
            self.writer.shutdown().await
        };
        let _ = tokio::time::timeout(FINISH_TIMEOUT, flush).await;
    }
}

impl Route {
    /// Answers the request with `error`.
    fn fail(self, error: ClientError) {
        let answer = Err(error);
        match self {
            Route::Answer(tx) => drop(tx.send(answer)),
            Route::Items(tx) => drop(tx.send(Delivery::Final(answer))),
            // A fresh route's channel has room.
            Route::Download(tx) => drop(tx.try_send(Delivery::Final(answer))),
        }
    }
}

/// Writes from the front of the output (several segments in one
/// vectored write: a chunk's frame header and the chunk itself leave
/// together), or flushes once it is empty.
async fn write_some(
    writer: &mut WriteHalf<Box<dyn Transport>>,
    out: &VecDeque<Bytes>,
) -> io::Result<Wrote> {
    if out.is_empty() {
        return writer.flush().await.map(|()| Wrote::Flushed);
    }
    let mut slices = [io::IoSlice::new(&[]); WRITE_SEGMENTS];
    let mut n = 0;
    for (slot, bytes) in slices.iter_mut().zip(out) {
        *slot = io::IoSlice::new(bytes);
        n += 1;
    }
    writer.write_vectored(&slices[..n]).await.map(Wrote::Bytes)
}

/// Room in a blocked download's channel (never completes without one).
async fn reserve(
    tx: Option<mpsc::Sender<Delivery>>,
) -> Result<OwnedPermit<Delivery>, SendError<()>> {
    match tx {
        Some(tx) => tx.reserve_owned().await,
        None => std::future::pending().await,
    }
}
