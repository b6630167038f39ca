//! HTTP connections: accepting, the connection limit, every timeout a
//! client could otherwise hold a connection open with, and shutdown;
//! hyper serves the routes of `http/` on each connection.
//!
//! ```text
//!   accept ─▶ Gate (http_max_connections; beyond it 503 and close)
//!     └▶ task: [TLS handshake] ─▶ hyper http1 ─▶ ConnService ─▶ axum Router
//!              Guarded socket      │                 │ request body: TimedBody
//!              (read deadline from │                 │ answer body: holds the
//!               HttpConn, write    │                 │   connection Busy until sent
//!               stall)             └─ graceful_shutdown when Draining
//! ```
//!
//! A connection is always in one phase ([`Phase`]); the phase decides how
//! long the server waits for the client's next bytes:
//!
//! | phase | read deadline |
//! |---|---|
//! | `New` (TLS handshake, first header) | `http_header_timeout_secs` after connecting |
//! | `Idle` (keep-alive, between requests) | `http_idle_timeout_secs` after the last answer |
//! | `Header` (part of the next header is in) | `http_header_timeout_secs` after its first byte |
//! | `Busy` (a request is being answered) | none here: the body is timed by `TimedBody`, the answer by the write stall |
//!
//! A request body must arrive within `http_body_timeout_secs` plus one
//! second per `http_body_min_rate` bytes received (or it is answered
//! 408, [`BodyTooSlow`]); only time spent
//! waiting for the client counts, so a server slow to take an upload (a
//! full upload queue, a busy disk) never fails the client for it. That
//! bound, unlike a gap between reads, also stops a client that drips a
//! byte now and then. An answer the client stops reading is cut after
//! `stall_timeout_secs` (`guard.rs`).
//!
//! At shutdown (`Draining`) hyper is asked to close gracefully: an idle
//! connection closes at once, a request being answered finishes first;
//! and a connection that is not `Busy` stops waiting for its client at
//! once, so a half-sent header never holds shutdown up. At `Cut` the
//! tasks still running are dropped (`listener::finish`).

use crate::guard::{fires, Guarded, ReadDeadline};
use crate::listener::{finish, Gate, Lifecycle, Listener};
use crate::service::Service;
use crate::stats::Stats;
use crate::{Busy, ServerError};
use axum::body::{Body, Bytes, HttpBody};
use axum::{BoxError, Router};
use http_body::{Frame, SizeHint};
use hyper::body::Incoming;
use hyper::service::Service as HyperService;
use hyper_util::rt::TokioIo;
use hyper_util::service::TowerToHyperService;
use parking_lot::Mutex;
use std::convert::Infallible;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{watch, Notify};
use tokio::task::JoinSet;
use tokio::time::{Instant, Sleep};

/// Settings of the HTTP listener.
#[derive(Clone, Debug)]
pub struct HttpSettings {
    /// Connections served at once; more are answered 503 and closed.
    pub max_connections: usize,
    /// Time a client has to send a request's whole header: from connecting
    /// (TLS handshake included) for the first, from its first byte for
    /// the next ones.
    pub header_timeout: Duration,
    /// Time a kept-alive connection may wait for its next request.
    pub idle_timeout: Duration,
    /// Time a request body may take to arrive, before `body_min_rate`
    /// extends it.
    pub body_timeout: Duration,
    /// Bytes per second a request body must average past `body_timeout`
    /// (0: the whole body must arrive within `body_timeout`).
    pub body_min_rate: u64,
    /// Time an answer may wait for the client to read any of it.
    pub stall_timeout: Duration,
    /// Users besides administrators who may read `GET /metrics` and
    /// `GET /_stats/history` (`http_metrics_users`).
    pub metrics_users: Vec<String>,
    /// Serve the console at `/_console/` (`console`).
    pub console: bool,
}

impl Default for HttpSettings {
    fn default() -> Self {
        HttpSettings {
            max_connections: 1_000,
            header_timeout: Duration::from_secs(10),
            idle_timeout: Duration::from_secs(60),
            body_timeout: Duration::from_secs(30),
            body_min_rate: 1 << 10,
            stall_timeout: Duration::from_secs(60),
            metrics_users: Vec::new(),
            console: true,
        }
    }
}

/// Serves the API on `listener` (over TLS when `tls` is given) until the
/// lifecycle leaves `Serving`; then lets requests in flight finish, or
/// drops the connections still open once it reaches `Cut`.
pub async fn serve(
    listener: TcpListener,
    tls: Option<tokio_rustls::TlsAcceptor>,
    service: Arc<Service>,
    settings: HttpSettings,
    life: watch::Receiver<Lifecycle>,
) {
    let app = crate::http::router(service.clone(), &settings, tls.is_some());
    serve_app(app, listener, tls, service, settings, life).await
}

/// Serves `app` on `listener` as [`serve`] serves the API: the same
/// connection limit, timeouts and shutdown (the CouchDB door's routes
/// are served this way, `http::couch`).
pub(crate) async fn serve_app(
    app: Router,
    listener: TcpListener,
    tls: Option<tokio_rustls::TlsAcceptor>,
    service: Arc<Service>,
    settings: HttpSettings,
    mut life: watch::Receiver<Lifecycle>,
) {
    let stats = service.stats().clone();
    let refusal = match tls {
        // A TLS client could not read a plain answer: it is just closed.
        Some(_) => Bytes::new(),
        None => busy_answer(settings.max_connections),
    };
    let gate = Gate::new(settings.max_connections, refusal);
    let settings = Arc::new(settings);
    let mut conns = JoinSet::new();
    let mut listener = Listener::new(listener, "HTTP");
    while let Some((socket, peer)) = listener.accept(&mut life).await {
        let Some((socket, slot)) = gate.admit(socket) else {
            stats.http_connection_refused();
            continue;
        };
        let _ = socket.set_nodelay(true);
        let conn = Connection {
            app: app.clone(),
            settings: settings.clone(),
            stats: stats.clone(),
            life: life.clone(),
        };
        let tls = tls.clone();
        conns.spawn(async move {
            let _slot = slot;
            conn.run(socket, peer, tls).await;
        });
        while conns.try_join_next().is_some() {}
    }
    drop(listener);
    finish(conns, life).await;
}

/// The 503 a client over the limit reads before the connection closes.
fn busy_answer(max: usize) -> Bytes {
    let busy = ServerError::Busy(Busy::HttpConnections { max });
    let body = serde_json::json!({
        "error": "busy",
        "code": busy.code().as_u16(),
        "reason": busy.to_string(),
    })
    .to_string();
    format!(
        "HTTP/1.1 503 Service Unavailable\r\ncontent-type: application/json\r\n\
         content-length: {}\r\nretry-after: 1\r\nconnection: close\r\n\r\n{body}",
        body.len()
    )
    .into()
}

/// What one connection's task needs.
struct Connection {
    app: Router,
    settings: Arc<HttpSettings>,
    stats: Arc<Stats>,
    life: watch::Receiver<Lifecycle>,
}

/// Counts an open HTTP connection for the statistics while it lives
/// (its task may be dropped at `Cut` rather than return).
struct Open(Arc<Stats>);

impl Open {
    fn new(stats: Arc<Stats>) -> Open {
        stats.http_connection_opened();
        Open(stats)
    }
}

impl Drop for Open {
    fn drop(&mut self) {
        self.0.http_connection_closed();
    }
}

impl Connection {
    async fn run(
        mut self,
        socket: TcpStream,
        peer: std::net::SocketAddr,
        tls: Option<tokio_rustls::TlsAcceptor>,
    ) {
        let _open = Open::new(self.stats.clone());
        let state = Arc::new(HttpConn::new(self.settings.clone()));
        let io = Guarded::new(
            socket,
            state.clone(),
            self.settings.stall_timeout,
            self.stats.clone(),
        );
        let Some(acceptor) = tls else {
            return self.serve(io, state).await;
        };
        // The `New` phase's read deadline bounds the handshake too.
        let handshake = tokio::select! {
            h = acceptor.accept(io) => h,
            _ = self.life.wait_for(|l| *l != Lifecycle::Serving) => return,
        };
        match handshake {
            Ok(stream) => self.serve(stream, state).await,
            Err(e) => tracing::debug!(%peer, "HTTP TLS handshake failed: {e}"),
        }
    }

    /// Runs hyper on the connection until it ends, asking it to close
    /// gracefully when the server starts draining.
    async fn serve<S>(mut self, io: S, state: Arc<HttpConn>)
    where
        S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
    {
        let service = ConnService {
            app: TowerToHyperService::new(self.app.clone()),
            conn: state.clone(),
        };
        let served =
            hyper::server::conn::http1::Builder::new().serve_connection(TokioIo::new(io), service);
        tokio::pin!(served);
        let mut draining = false;
        loop {
            tokio::select! {
                r = served.as_mut() => {
                    if let Err(e) = r {
                        tracing::debug!("HTTP connection ended: {e}");
                    }
                    return;
                }
                _ = self.life.wait_for(|l| *l != Lifecycle::Serving), if !draining => {
                    draining = true;
                    state.drain();
                    served.as_mut().graceful_shutdown();
                }
                // Polled again, hyper waits for the next request through
                // the socket, which arms the idle deadline. (Without this
                // nothing would: it was last woken by its answer's write.)
                () = state.answered.notified() => {}
            }
        }
    }
}

/// Where a connection is between and within its requests (module docs).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Phase {
    /// Connected; the first request's header (and the TLS handshake) is
    /// awaited since `since`.
    New { since: Instant },
    /// Kept alive; nothing of the next request yet; answered at `since`.
    Idle { since: Instant },
    /// The next request's header began arriving at `since`.
    Header { since: Instant },
    /// `open` requests are being answered.
    Busy { open: usize },
}

/// One connection's phase, shared by its socket, its requests and the
/// bodies of their answers.
struct HttpConn {
    settings: Arc<HttpSettings>,
    state: Mutex<ConnState>,
    /// Told when the last answer in flight is done.
    answered: Notify,
}

struct ConnState {
    phase: Phase,
    /// The server is shutting down.
    draining: bool,
}

impl HttpConn {
    fn new(settings: Arc<HttpSettings>) -> HttpConn {
        HttpConn {
            settings,
            state: Mutex::new(ConnState {
                phase: Phase::New {
                    since: Instant::now(),
                },
                draining: false,
            }),
            answered: Notify::new(),
        }
    }

    /// A request's header is in: the connection is busy until the
    /// returned guard (carried by the answer's body) is dropped.
    fn request_started(self: &Arc<Self>) -> Answering {
        let mut s = self.state.lock();
        s.phase = match s.phase {
            Phase::Busy { open } => Phase::Busy { open: open + 1 },
            _ => Phase::Busy { open: 1 },
        };
        Answering(self.clone())
    }

    fn answered(&self) {
        let mut s = self.state.lock();
        s.phase = match s.phase {
            Phase::Busy { open } if open > 1 => Phase::Busy { open: open - 1 },
            _ => {
                self.answered.notify_one();
                Phase::Idle {
                    since: Instant::now(),
                }
            }
        };
    }

    /// The server is shutting down: waiting for a client that is not
    /// being answered ends now.
    fn drain(&self) {
        self.state.lock().draining = true;
    }
}

impl ReadDeadline for HttpConn {
    fn read_deadline(&self) -> Option<Instant> {
        let (phase, draining) = {
            let s = self.state.lock();
            (s.phase, s.draining)
        };
        let s = &self.settings;
        match phase {
            Phase::Busy { .. } => None,
            // Waiting for a request that will not be answered: stop now.
            Phase::New { .. } | Phase::Header { .. } if draining => Some(Instant::now()),
            Phase::New { since } | Phase::Header { since } => Some(since + s.header_timeout),
            // Not while draining: the last answer's body may still be in
            // hyper's write buffer (its guard is dropped when hyper has
            // taken the last frame, not when the client has it), and a
            // failed read would make hyper drop it. Hyper's own graceful
            // shutdown closes the connection once the answer is written;
            // `Cut` and the stall timeout bound a client that never reads.
            Phase::Idle { since } => Some(since + s.idle_timeout),
        }
    }

    fn bytes_read(&self) {
        let mut s = self.state.lock();
        if let Phase::Idle { .. } = s.phase {
            s.phase = Phase::Header {
                since: Instant::now(),
            };
        }
    }
}

/// Keeps its connection `Busy` until dropped.
struct Answering(Arc<HttpConn>);

impl Drop for Answering {
    fn drop(&mut self) {
        self.0.answered();
    }
}

/// The routes, as hyper calls them on one connection: each request's body
/// is timed, and its answer's body holds the connection busy.
#[derive(Clone)]
struct ConnService {
    app: TowerToHyperService<Router>,
    conn: Arc<HttpConn>,
}

type Answer = axum::http::Response<Answered>;

impl HyperService<axum::http::Request<Incoming>> for ConnService {
    type Response = Answer;
    type Error = Infallible;
    type Future = Pin<Box<dyn Future<Output = Result<Answer, Infallible>> + Send>>;

    fn call(&self, req: axum::http::Request<Incoming>) -> Self::Future {
        let answering = self.conn.request_started();
        let s = &self.conn.settings;
        let req = req.map(|b| Body::new(TimedBody::new(b, s.body_timeout, s.body_min_rate)));
        let answer = self.app.call(req);
        Box::pin(async move {
            let answer = answer.await?;
            Ok(answer.map(|body| Answered {
                body,
                _answering: answering,
            }))
        })
    }
}

/// An answer's body, holding its connection `Busy` until hyper is done
/// with it.
struct Answered {
    body: Body,
    _answering: Answering,
}

impl HttpBody for Answered {
    type Data = Bytes;
    type Error = axum::Error;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, axum::Error>>> {
        Pin::new(&mut self.get_mut().body).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.body.size_hint()
    }
}

/// A request body that must keep arriving: the time spent waiting for it
/// may not pass `grace` plus one second per `min_rate` bytes received.
struct TimedBody {
    inner: Incoming,
    grace: Duration,
    min_rate: u64,
    received: u64,
    /// Time spent waiting for the client before the current wait.
    waited: Duration,
    /// When the current wait began.
    waiting_since: Option<Instant>,
    timer: Option<Pin<Box<Sleep>>>,
    expired: bool,
}

impl TimedBody {
    fn new(inner: Incoming, grace: Duration, min_rate: u64) -> TimedBody {
        TimedBody {
            inner,
            grace,
            min_rate,
            received: 0,
            waited: Duration::ZERO,
            waiting_since: None,
            timer: None,
            expired: false,
        }
    }

    /// The waiting the bytes received so far have earned.
    fn allowance(&self) -> Duration {
        let earned = match self.min_rate {
            0 => Duration::ZERO,
            r => Duration::from_secs_f64(self.received as f64 / r as f64),
        };
        self.grace + earned
    }

    fn too_slow(&self) -> BoxError {
        Box::new(BodyTooSlow {
            received: self.received,
            waited: self.waited,
            grace: self.grace,
            min_rate: self.min_rate,
        })
    }
}

/// A request body that did not arrive in time: the handler reading it
/// answers 408 Request Timeout ([`is_body_too_slow`]), not 400, since the
/// request itself may have been fine.
#[derive(Debug, thiserror::Error)]
#[error(
    "the request body came too slowly: {received} bytes after waiting {:.1} s for it \
     (http_body_timeout_secs {}, http_body_min_rate {min_rate} bytes a second)",
    waited.as_secs_f64(),
    grace.as_secs_f64()
)]
pub(crate) struct BodyTooSlow {
    received: u64,
    waited: Duration,
    grace: Duration,
    min_rate: u64,
}

/// Whether a body's read failed because [`TimedBody`] ran out of time
/// (the error arrives wrapped by axum and hyper; its sources are walked).
pub(crate) fn is_body_too_slow(e: &(dyn std::error::Error + 'static)) -> bool {
    let mut next = Some(e);
    while let Some(e) = next {
        if e.is::<BodyTooSlow>() {
            return true;
        }
        next = e.source();
    }
    false
}

impl HttpBody for TimedBody {
    type Data = Bytes;
    type Error = BoxError;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, BoxError>>> {
        let this = self.get_mut();
        if this.expired {
            // Never an end: a truncated body must not look complete.
            return Poll::Ready(Some(Err(this.too_slow())));
        }
        match Pin::new(&mut this.inner).poll_frame(cx) {
            Poll::Ready(frame) => {
                if let Some(since) = this.waiting_since.take() {
                    this.waited += since.elapsed();
                }
                if let Some(Ok(f)) = &frame {
                    this.received += f.data_ref().map_or(0, |d| d.len() as u64);
                }
                Poll::Ready(frame.map(|r| r.map_err(BoxError::from)))
            }
            Poll::Pending => {
                let now = Instant::now();
                let since = *this.waiting_since.get_or_insert(now);
                let deadline = since + this.allowance().saturating_sub(this.waited);
                if deadline <= now || fires(&mut this.timer, deadline, cx) {
                    this.waited += now - since;
                    this.waiting_since = None;
                    this.expired = true;
                    return Poll::Ready(Some(Err(this.too_slow())));
                }
                Poll::Pending
            }
        }
    }

    fn is_end_stream(&self) -> bool {
        !self.expired && self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn conn(settings: HttpSettings) -> Arc<HttpConn> {
        Arc::new(HttpConn::new(Arc::new(settings)))
    }

    #[test]
    fn each_phase_has_its_read_deadline() {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .start_paused(true)
            .build()
            .unwrap();
        rt.block_on(async {
            let s = HttpSettings::default();
            let (header, idle) = (s.header_timeout, s.idle_timeout);
            let c = conn(s);
            let start = Instant::now();
            assert_eq!(c.read_deadline(), Some(start + header));
            // Bytes of the first header do not extend the first deadline.
            tokio::time::advance(Duration::from_secs(3)).await;
            c.bytes_read();
            assert_eq!(c.read_deadline(), Some(start + header));
            let answering = c.request_started();
            assert_eq!(c.read_deadline(), None);
            tokio::time::advance(Duration::from_secs(100)).await;
            drop(answering);
            let answered = Instant::now();
            assert_eq!(c.read_deadline(), Some(answered + idle));
            tokio::time::advance(Duration::from_secs(5)).await;
            c.bytes_read();
            assert_eq!(c.read_deadline(), Some(Instant::now() + header));
            c.drain();
            assert!(c.read_deadline().unwrap() <= Instant::now());
            let _busy = c.request_started();
            assert_eq!(c.read_deadline(), None, "a request in flight may finish");
        });
    }
}
