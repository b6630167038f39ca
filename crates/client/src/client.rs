//! The async client handle: cheap to clone, shared by any number of tasks,
//! all pipelining their requests on one connection.
//!
//! A `Client` is a sender of commands to the connection task
//! ([`crate::driver`]) plus what the handshake told us. Every call builds
//! a command carrying the channel its answer will come back on, and waits
//! on that channel; the connection task matches answers to callers by
//! request id. A call therefore never waits for another caller's request,
//! only for its own answer, and the server is free to answer out of order.
//!
//! When the last clone is dropped the connection task closes the
//! connection. [`Client::close`] closes it at once for every clone.

use crate::driver::{Answer, Command, Driver, Route, Shared};
use crate::error::ClientError;
use crate::options::ClientOptions;
use crate::transport;
use protocol::{Compression, ProtocolError, Request, Response, SessionId, Shape, Welcome};
use std::sync::Arc;
use tokio::sync::{mpsc, oneshot};

/// A connection to a Folio server (see the crate docs).
#[derive(Clone)]
pub struct Client {
    inner: Arc<Inner>,
}

struct Inner {
    commands: mpsc::UnboundedSender<Command>,
    shared: Arc<Shared>,
    welcome: Welcome,
    addr: String,
    /// Upload chunk buffers, reused from chunk to chunk and upload to
    /// upload.
    chunks: Arc<crate::attachments::ChunkPool>,
}

impl Client {
    /// Connects, logs in and starts the connection task on the current
    /// tokio runtime. A refused login is [`ClientError::Server`] (401 for
    /// wrong credentials); a server that is not there is
    /// [`ClientError::Io`] naming the address.
    pub async fn connect(opts: ClientOptions) -> Result<Client, ClientError> {
        let connected = transport::connect(&opts).await?;
        let (commands, receiver) = mpsc::unbounded_channel();
        let shared = Arc::new(Shared::default());
        let driver = Driver::new(
            connected.stream,
            connected.conn,
            receiver,
            shared.clone(),
            opts.addr.clone(),
        );
        tokio::spawn(driver.run());
        Ok(Client {
            inner: Arc::new(Inner {
                commands,
                shared,
                welcome: connected.welcome,
                addr: opts.addr,
                chunks: Arc::default(),
            }),
        })
    }

    /// This connection's pool of upload chunk buffers.
    pub(crate) fn chunk_pool(&self) -> &Arc<crate::attachments::ChunkPool> {
        &self.inner.chunks
    }

    /// The session the server created for this connection.
    pub fn session(&self) -> SessionId {
        self.inner.welcome.session
    }

    /// The compression the server chose from those offered.
    pub fn compression(&self) -> Compression {
        self.inner.welcome.compression
    }

    /// The server's name and version, from its Welcome.
    pub fn server_name(&self) -> &str {
        &self.inner.welcome.server_name
    }

    /// The address connected to.
    pub fn addr(&self) -> &str {
        &self.inner.addr
    }

    /// Why the connection closed, once it has.
    pub fn closed_reason(&self) -> Option<&str> {
        self.inner.shared.reason()
    }

    /// Closes the connection for every clone of this client: pending and
    /// later calls fail with [`ClientError::Closed`].
    pub fn close(&self) {
        let _ = self.inner.commands.send(Command::Close);
    }

    /// Sends any request answered by a single response, and returns that
    /// response; the typed methods are thin wrappers over this. A server
    /// error is [`ClientError::Server`]. Streamed requests (attachments,
    /// search) have their own methods and are refused here.
    pub async fn request(&self, request: Request) -> Result<Response, ClientError> {
        if request.shape() != Shape::Single {
            return Err(ProtocolError::Misuse(format!(
                "{request:?} streams; use put_attachment, get_attachment or search"
            ))
            .into());
        }
        let (tx, rx) = oneshot::channel();
        self.submit(Command::Request {
            request,
            route: Route::Answer(tx),
            started: None,
        })?;
        self.answer(rx).await
    }

    /// Hands a command to the connection task.
    pub(crate) fn submit(&self, command: Command) -> Result<(), ClientError> {
        self.inner
            .commands
            .send(command)
            .map_err(|_| self.closed_error())
    }

    /// Waits for a final answer; a dropped channel means the connection
    /// closed.
    pub(crate) async fn answer(&self, rx: oneshot::Receiver<Answer>) -> Answer {
        rx.await.unwrap_or_else(|_| Err(self.closed_error()))
    }

    /// The error of a call made on a closed connection.
    /// What the connection task shares with its callers.
    pub(crate) fn shared(&self) -> &crate::driver::Shared {
        &self.inner.shared
    }

    pub(crate) fn closed_error(&self) -> ClientError {
        self.inner.shared.closed_error()
    }
}

impl std::fmt::Debug for Client {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Client")
            .field("addr", &self.inner.addr)
            .field("session", &self.session())
            .field("compression", &self.compression())
            .field("closed", &self.closed_reason())
            .finish()
    }
}
