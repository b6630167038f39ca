//! Running the server: runtime, listeners, statistics ticker, shutdown.
//!
//! ```text
//!   run() ─ raise the descriptor limit, fit the connection limits under it
//!         ─ tokio runtime: io threads (accept, read, write)
//!            │             + blocking pool of `worker_threads` (requests)
//!            ├─ native::serve   127.0.0.1:1352
//!            ├─ http::serve     127.0.0.1:8080
//!            ├─ stats ticker    once a second
//!            └─ wait for SIGTERM / SIGINT / the stop handle
//!   shutdown: Draining — stop accepting, close idle and half-open
//!             connections, let in-flight requests finish (their commits
//!             included);
//!             Cut — after `shutdown_grace` (or at a second signal) drop
//!             the connections still open, so their jobs fail and end;
//!             then hand the engine back for a clean close (flush and
//!             checkpoint).
//! ```
//!
//! Shutdown is bounded: no client, however slow or silent, keeps the
//! process past the grace period (plus `JOBS_AFTER_CUT` for jobs to see
//! their connection gone, and the final checkpoint).

use crate::auth::UserStore;
use crate::http_conn::HttpSettings;
use crate::listener::Lifecycle;
use crate::native::{self, NativeSettings};
use crate::service::{Limits, Service};
use crate::stats::Stats;
use crate::tls::{server_tls_config, TlsSettings};
use crate::{http, ServerError, ServerResult};
use nsf::Engine;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::net::TcpListener;
use tokio::sync::watch;
use views::Views;

/// Every server setting (`folio.toml` maps onto these).
#[derive(Clone, Debug)]
pub struct ServerSettings {
    /// Native protocol address.
    pub listen: String,
    /// HTTP/JSON API address; `None` turns the HTTP API off.
    pub http_listen: Option<String>,
    /// Threads running requests (the worker pool).
    pub worker_threads: usize,
    /// Threads doing network I/O (accept, read, write).
    pub io_threads: usize,
    /// Native listener settings.
    pub native: NativeSettings,
    /// HTTP listener settings.
    pub http: HttpSettings,
    /// At shutdown, how long requests in flight may take to finish before
    /// their connections are cut.
    pub shutdown_grace: Duration,
    /// Per-request limits.
    pub limits: Limits,
    /// TLS for both listeners.
    pub tls: TlsSettings,
}

impl Default for ServerSettings {
    fn default() -> Self {
        let cores = std::thread::available_parallelism().map_or(2, |n| n.get());
        ServerSettings {
            listen: "127.0.0.1:1352".into(),
            http_listen: Some("127.0.0.1:8080".into()),
            worker_threads: 64,
            io_threads: cores.clamp(1, 8),
            native: NativeSettings::default(),
            http: HttpSettings::default(),
            shutdown_grace: Duration::from_secs(10),
            limits: Limits::default(),
            tls: TlsSettings::default(),
        }
    }
}

/// Where a running server listens (reported once both are bound).
#[derive(Clone, Debug)]
pub struct Bound {
    /// Native protocol address.
    pub native: SocketAddr,
    /// HTTP address, if on.
    pub http: Option<SocketAddr>,
    /// The certificate clients should trust, when TLS is on.
    pub tls_cert: Option<std::path::PathBuf>,
}

/// After the connections are cut, how long jobs still running get to see
/// it and end before the engine is needed back.
const JOBS_AFTER_CUT: Duration = Duration::from_secs(5);

/// Runs the server until SIGTERM or SIGINT (or `stop` turns true), then
/// returns the engine and views for the caller to close cleanly.
/// `on_bound` is called once the listeners are up.
pub fn run(
    mut settings: ServerSettings,
    engine: Engine,
    views: Views,
    on_bound: impl FnOnce(&Bound),
    stop: Option<watch::Receiver<bool>>,
) -> ServerResult<(Engine, Views)> {
    fit_descriptors(&mut settings)?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(settings.io_threads.max(1))
        .max_blocking_threads(settings.worker_threads.max(1))
        .thread_name("folio-net")
        .enable_all()
        .build()
        .map_err(|e| ServerError::Internal(format!("cannot start the runtime: {e}")))?;
    let engine = Arc::new(engine);
    let views = Arc::new(views);
    let backend = engine.backend();
    let users = Arc::new(UserStore::open(backend.clone(), engine.data_dir())?);
    let tls = server_tls_config(&settings.tls, engine.data_dir(), backend)?;
    let stats = Arc::new(Stats::new());
    let service = Arc::new(Service::new(
        engine.clone(),
        views.clone(),
        users,
        stats.clone(),
        settings.limits.clone(),
    ));
    let result = runtime.block_on(serve(settings, service, tls, on_bound, stop));
    let jobs_deadline = Instant::now() + JOBS_AFTER_CUT;
    runtime.shutdown_timeout(JOBS_AFTER_CUT);
    result?;
    let engine = take_back(engine, jobs_deadline, "engine")?;
    let views = take_back(views, jobs_deadline, "views")?;
    Ok((engine, views))
}

/// Raises the process's descriptor limit and lowers the connection limits
/// if they would not leave the engine its reserve (`descriptors.rs`).
fn fit_descriptors(settings: &mut ServerSettings) -> ServerResult<()> {
    let limit = crate::descriptors::raise_limit()?;
    let http = settings
        .http_listen
        .as_ref()
        .map(|_| settings.http.max_connections);
    let fit = crate::descriptors::fit(limit.soft, settings.native.max_connections, http)?;
    tracing::info!(
        "descriptor limit {} (was {}, hard limit {}); {} kept for database and log files",
        limit.soft,
        limit.before,
        limit.hard,
        fit.reserve
    );
    if fit.lowered {
        tracing::warn!(
            "the descriptor limit of {} cannot hold max_connections = {} and \
             http_max_connections = {} next to the {} descriptors kept for database and log \
             files: serving at most {} native and {} HTTP connections; raise the hard limit \
             (ulimit -Hn, LimitNOFILE) to get the configured figures",
            limit.soft,
            settings.native.max_connections,
            http.unwrap_or(0),
            fit.reserve,
            fit.native,
            fit.http.unwrap_or(0),
        );
    }
    settings.native.max_connections = fit.native;
    if let Some(n) = fit.http {
        settings.http.max_connections = n;
    }
    Ok(())
}

/// Takes sole ownership back once the last job holding `shared` has ended
/// (waiting until `deadline` at most).
fn take_back<T>(mut shared: Arc<T>, deadline: Instant, what: &str) -> ServerResult<T> {
    loop {
        match Arc::try_unwrap(shared) {
            Ok(t) => return Ok(t),
            Err(still) if Instant::now() < deadline => {
                shared = still;
                std::thread::sleep(Duration::from_millis(10));
            }
            Err(_) => {
                return Err(ServerError::Internal(format!(
                    "requests still hold the {what} at shutdown; not closed cleanly \
                     (restart recovery will replay the log)"
                )))
            }
        }
    }
}

/// Connections the kernel queues for a listener before the server
/// accepts them (capped by `net.core.somaxconn`). The usual 128 overflows
/// when thousands of clients connect at once while the accepting thread
/// is busy; an overflowing queue drops connection attempts, which
/// clients retry only after a second.
const LISTEN_BACKLOG: u32 = 4_096;

async fn bind(addr: &str, what: &str) -> ServerResult<TcpListener> {
    let failed = |e: std::io::Error| ServerError::Setting {
        key: what.into(),
        reason: format!("cannot listen on {addr}: {e}"),
    };
    let mut last = None;
    for a in tokio::net::lookup_host(addr).await.map_err(failed)? {
        let socket = match a {
            SocketAddr::V4(_) => tokio::net::TcpSocket::new_v4(),
            SocketAddr::V6(_) => tokio::net::TcpSocket::new_v6(),
        };
        let listening = socket.and_then(|s| {
            s.set_reuseaddr(true)?;
            s.bind(a)?;
            s.listen(LISTEN_BACKLOG)
        });
        match listening {
            Ok(l) => return Ok(l),
            Err(e) => last = Some(e),
        }
    }
    Err(failed(last.unwrap_or_else(|| {
        std::io::Error::new(std::io::ErrorKind::NotFound, "no address")
    })))
}

async fn serve(
    settings: ServerSettings,
    service: Arc<Service>,
    tls: Option<crate::tls::TlsConfig>,
    on_bound: impl FnOnce(&Bound),
    stop: Option<watch::Receiver<bool>>,
) -> ServerResult<()> {
    let native_listener = bind(&settings.listen, "listen").await?;
    let http_listener = match &settings.http_listen {
        Some(a) => Some(bind(a, "http_listen").await?),
        None => None,
    };
    let local = |l: &TcpListener| {
        l.local_addr()
            .map_err(|e| ServerError::Internal(format!("listener address: {e}")))
    };
    on_bound(&Bound {
        native: local(&native_listener)?,
        http: http_listener.as_ref().map(local).transpose()?,
        tls_cert: tls.as_ref().map(|t| t.cert_path.clone()),
    });
    let (life_tx, life) = watch::channel(Lifecycle::Serving);
    let acceptor = tls
        .as_ref()
        .map(|t| tokio_rustls::TlsAcceptor::from(t.config.clone()));
    let native = tokio::spawn(native::serve(
        native_listener,
        acceptor.clone(),
        service.clone(),
        settings.native.clone(),
        life.clone(),
    ));
    let web = http_listener.map(|l| {
        tokio::spawn(http::serve(
            l,
            acceptor,
            service.clone(),
            settings.http.clone(),
            life.clone(),
        ))
    });
    let ticker = tokio::spawn(tick(service.clone(), life.clone()));
    let mut signals = StopSignals::new(stop);
    signals.next().await;
    let grace = settings.shutdown_grace;
    tracing::info!(
        "shutting down: finishing requests in flight (for {} s at most)",
        grace.as_secs_f64()
    );
    let _ = life_tx.send(Lifecycle::Draining);
    let listeners = async {
        let _ = native.await;
        if let Some(w) = web {
            let _ = w.await;
        }
    };
    tokio::pin!(listeners);
    let cut = tokio::select! {
        _ = &mut listeners => None,
        _ = tokio::time::sleep(grace) => Some("the shutdown grace period is over"),
        _ = signals.next() => Some("a second signal came"),
    };
    if let Some(why) = cut {
        tracing::warn!("{why}: closing the connections still open");
        let _ = life_tx.send(Lifecycle::Cut);
        listeners.await;
    }
    let _ = ticker.await;
    Ok(())
}

/// Samples the statistics once a second, while serving.
async fn tick(service: Arc<Service>, mut life: watch::Receiver<Lifecycle>) {
    let mut every = tokio::time::interval(Duration::from_secs(1));
    loop {
        tokio::select! {
            _ = every.tick() => service.stats().tick(service.engine()),
            _ = life.changed() => return,
        }
    }
}

/// What stops the server: SIGTERM, SIGINT or the caller's stop handle.
/// The first stops accepting; a second cuts the connections at once.
struct StopSignals {
    signals: Option<(tokio::signal::unix::Signal, tokio::signal::unix::Signal)>,
    external: Option<watch::Receiver<bool>>,
}

impl StopSignals {
    fn new(external: Option<watch::Receiver<bool>>) -> StopSignals {
        use tokio::signal::unix::{signal, SignalKind};
        let signals = match (
            signal(SignalKind::terminate()),
            signal(SignalKind::interrupt()),
        ) {
            (Ok(term), Ok(int)) => Some((term, int)),
            _ => {
                tracing::error!("cannot install signal handlers; stop the server with SIGKILL");
                None
            }
        };
        StopSignals { signals, external }
    }

    /// Waits for the next request to stop.
    async fn next(&mut self) {
        let external = async {
            match &mut self.external {
                Some(s) => {
                    // Fires once: the handle only ever turns true.
                    if s.wait_for(|stop| *stop).await.is_ok() {
                        self.external = None;
                        return;
                    }
                    std::future::pending::<()>().await
                }
                None => std::future::pending::<()>().await,
            }
        };
        match &mut self.signals {
            Some((term, int)) => tokio::select! {
                _ = term.recv() => {},
                _ = int.recv() => {},
                _ = external => {},
            },
            None => external.await,
        }
    }
}
