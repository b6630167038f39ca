//! What every listener shares: the server's lifecycle, the accept loop's
//! error handling, the connection limit, and shutdown.
//!
//! ```text
//!   Lifecycle:  Serving ──signal──▶ Draining ──grace over / 2nd signal──▶ Cut
//!
//!   accept ─▶ Gate::admit ─ slot free ──▶ connection task (holds its slot)
//!                          └ no slot ────▶ refused: a "busy" answer written
//!                                          without waiting, closed (lingering
//!                                          a moment so the client reads it)
//!   Draining: stop accepting (the port is released), connections finish
//!             what is in flight and close; idle ones close at once
//!   Cut:      the connection tasks still running are dropped
//! ```
//!
//! Why: a client must never be able to hold the server. Connections cost
//! a descriptor each, so their number is bounded (the limit is fitted
//! under the process's descriptor limit by `descriptors`), and beyond it
//! a new connection is turned away at once, so established ones are
//! never affected. An accept that fails for lack of descriptors or
//! memory leaves the connection queued and the listener readable: retried
//! at once, the loop would spin a core, so it backs off briefly; it never
//! gives up, since the shortage is usually over in a moment. Shutdown
//! has a deadline: the lifecycle moves to `Cut` when the grace period is
//! over, whatever the clients do.

use bytes::Bytes;
use std::io::ErrorKind;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{watch, OwnedSemaphorePermit, Semaphore};
use tokio::task::JoinSet;
use tokio::time::Instant;

/// Where the server is in its life; every listener and connection
/// watches it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Lifecycle {
    /// Accepting and serving.
    Serving,
    /// Shutting down: no new connections; requests in flight finish.
    Draining,
    /// The grace period is over: every connection still open is closed.
    Cut,
}

/// Refused connections being closed at once, per listener (each holds a
/// descriptor for at most `LINGER`; more are closed without lingering).
pub(crate) const REFUSING: usize = 64;
/// How long a refused connection is kept to let the client read why.
const LINGER: Duration = Duration::from_secs(1);
/// Pause after an accept failed for lack of resources.
const ACCEPT_BACKOFF: Duration = Duration::from_millis(100);
/// At most one warning about failing accepts per this period.
const ACCEPT_WARN_EVERY: Duration = Duration::from_secs(10);

/// A listening socket and the accept failures it has seen.
pub(crate) struct Listener {
    socket: TcpListener,
    /// "native" or "HTTP", for the log.
    what: &'static str,
    failures: u64,
    warned: Option<Instant>,
}

impl Listener {
    pub(crate) fn new(socket: TcpListener, what: &'static str) -> Listener {
        Listener {
            socket,
            what,
            failures: 0,
            warned: None,
        }
    }

    /// Waits for the next connection while the server is serving; `None`
    /// once it is not (or its lifecycle is gone).
    pub(crate) async fn accept(
        &mut self,
        life: &mut watch::Receiver<Lifecycle>,
    ) -> Option<(TcpStream, SocketAddr)> {
        loop {
            if *life.borrow_and_update() != Lifecycle::Serving {
                return None;
            }
            let accepted = tokio::select! {
                a = self.socket.accept() => a,
                changed = life.changed() => match changed {
                    Ok(()) => continue,
                    Err(_) => return None,
                },
            };
            let e = match accepted {
                Ok(a) => return Some(a),
                Err(e) => e,
            };
            // The peer gave up between its connect and our accept: next.
            if matches!(
                e.kind(),
                ErrorKind::ConnectionAborted | ErrorKind::ConnectionReset | ErrorKind::Interrupted
            ) {
                continue;
            }
            // Out of descriptors or memory (EMFILE, ENFILE, ENOBUFS,
            // ENOMEM) or anything else: the connection stays queued.
            self.failures += 1;
            if self.warned.is_none_or(|w| w.elapsed() >= ACCEPT_WARN_EVERY) {
                tracing::warn!(
                    "{} listener: cannot accept connections ({e}); {} failures so far, \
                     retrying every {} ms",
                    self.what,
                    self.failures,
                    ACCEPT_BACKOFF.as_millis()
                );
                self.warned = Some(Instant::now());
            }
            tokio::select! {
                _ = tokio::time::sleep(ACCEPT_BACKOFF) => {}
                changed = life.changed() => if changed.is_err() {
                    return None;
                },
            }
        }
    }
}

/// A listener's connection limit, and how it turns clients away beyond it.
pub(crate) struct Gate {
    slots: Arc<Semaphore>,
    refusing: Arc<Semaphore>,
    /// What a refused client is sent before the connection closes.
    refusal: Bytes,
}

impl Gate {
    pub(crate) fn new(max_connections: usize, refusal: Bytes) -> Gate {
        Gate {
            slots: Arc::new(Semaphore::new(max_connections)),
            refusing: Arc::new(Semaphore::new(REFUSING)),
            refusal,
        }
    }

    /// A slot for `socket`, or `None` after refusing it (which never waits).
    pub(crate) fn admit(&self, socket: TcpStream) -> Option<(TcpStream, OwnedSemaphorePermit)> {
        match self.slots.clone().try_acquire_owned() {
            Ok(slot) => Some((socket, slot)),
            Err(_) => {
                self.refuse(socket);
                None
            }
        }
    }

    /// Writes the refusal without waiting (a new socket's send buffer is
    /// empty) and closes. Closing a socket with unread input resets it,
    /// which can destroy the refusal before the client reads it; so, while
    /// few refusals are pending, the connection is half-closed and what
    /// the client sends is read and dropped for a moment before the close.
    fn refuse(&self, mut socket: TcpStream) {
        let _ = socket.try_write(&self.refusal);
        let Ok(turn) = self.refusing.clone().try_acquire_owned() else {
            return;
        };
        tokio::spawn(async move {
            let _ = socket.shutdown().await;
            let mut sink = [0u8; 4096];
            let drain = async {
                while let Ok(n) = socket.read(&mut sink).await {
                    if n == 0 {
                        break;
                    }
                }
            };
            let _ = tokio::time::timeout(LINGER, drain).await;
            drop(turn);
        });
    }
}

/// The accept loop of a door whose connections need nothing before their
/// task starts (SMTP, IMAP): each admitted connection runs `serve` in a
/// task that holds its slot, a refused one is counted by `refused`, and
/// once the lifecycle leaves `Serving` the loop ends as [`finish`] says.
pub(crate) async fn serve_admitted<F, Fut>(
    listener: TcpListener,
    what: &'static str,
    gate: Gate,
    refused: impl Fn(),
    mut life: watch::Receiver<Lifecycle>,
    mut serve: F,
) where
    F: FnMut(TcpStream, SocketAddr) -> Fut,
    Fut: std::future::Future<Output = ()> + Send + 'static,
{
    let mut tasks = JoinSet::new();
    let mut listener = Listener::new(listener, what);
    while let Some((socket, peer)) = listener.accept(&mut life).await {
        let Some((socket, slot)) = gate.admit(socket) else {
            refused();
            continue;
        };
        let conn = serve(socket, peer);
        tasks.spawn(async move {
            let _slot = slot;
            conn.await;
        });
        while tasks.try_join_next().is_some() {}
    }
    drop(listener);
    finish(tasks, life).await;
}

/// After the listener stopped: waits for its connections to finish, or
/// drops those still open once the lifecycle reaches `Cut`.
pub(crate) async fn finish(mut conns: JoinSet<()>, mut life: watch::Receiver<Lifecycle>) {
    loop {
        let cut = tokio::select! {
            done = conns.join_next() => match done {
                None => return,
                Some(_) => false,
            },
            _ = life.wait_for(|l| *l == Lifecycle::Cut) => true,
        };
        if cut {
            conns.abort_all();
            while conns.join_next().await.is_some() {}
            return;
        }
    }
}
