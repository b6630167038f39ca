//! Running the server: runtime, listeners, statistics ticker, shutdown.
//!
//! ```text
//!   run() ─ tokio runtime: io threads (accept, read, write)
//!            │             + blocking pool of `worker_threads` (requests)
//!            ├─ native::serve   127.0.0.1:1352
//!            ├─ http::serve     127.0.0.1:8080
//!            ├─ stats ticker    once a second
//!            └─ wait for SIGTERM / SIGINT / the stop handle
//!   shutdown: stop accepting, let in-flight requests finish (their
//!   commits included), then hand the engine back for a clean close
//!   (flush and checkpoint).
//! ```

use crate::auth::UserStore;
use crate::native::{self, NativeSettings};
use crate::service::{Limits, Service};
use crate::stats::Stats;
use crate::tls::{server_tls_config, TlsSettings};
use crate::{http, ServerError, ServerResult};
use nsf::Engine;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;
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

/// Runs the server until SIGTERM or SIGINT (or `stop` turns true), then
/// returns the engine and views for the caller to close cleanly.
/// `on_bound` is called once the listeners are up.
pub fn run(
    settings: ServerSettings,
    engine: Engine,
    views: Views,
    on_bound: impl FnOnce(&Bound),
    stop: Option<watch::Receiver<bool>>,
) -> ServerResult<(Engine, Views)> {
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
    runtime.shutdown_timeout(Duration::from_secs(10));
    result?;
    let engine = Arc::try_unwrap(engine)
        .map_err(|_| ServerError::Internal("requests still hold the engine at shutdown".into()))?;
    let views = Arc::try_unwrap(views)
        .map_err(|_| ServerError::Internal("requests still hold the views at shutdown".into()))?;
    Ok((engine, views))
}

async fn bind(addr: &str, what: &str) -> ServerResult<TcpListener> {
    TcpListener::bind(addr)
        .await
        .map_err(|e| ServerError::Setting {
            key: what.into(),
            reason: format!("cannot listen on {addr}: {e}"),
        })
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
    let (tx, rx) = watch::channel(false);
    let acceptor = tls
        .as_ref()
        .map(|t| tokio_rustls::TlsAcceptor::from(t.config.clone()));
    let native = tokio::spawn(native::serve(
        native_listener,
        acceptor.clone(),
        service.clone(),
        settings.native.clone(),
        rx.clone(),
    ));
    let web =
        http_listener.map(|l| tokio::spawn(http::serve(l, acceptor, service.clone(), rx.clone())));
    let ticker = tokio::spawn(tick(service.clone(), rx.clone()));
    wait_for_stop(stop).await;
    tracing::info!("shutting down: finishing requests in flight");
    let _ = tx.send(true);
    let _ = native.await;
    if let Some(w) = web {
        let _ = w.await;
    }
    let _ = ticker.await;
    Ok(())
}

/// Samples the statistics once a second.
async fn tick(service: Arc<Service>, mut stop: watch::Receiver<bool>) {
    let mut every = tokio::time::interval(Duration::from_secs(1));
    loop {
        tokio::select! {
            _ = every.tick() => service.stats().tick(service.engine()),
            _ = stop.changed() => return,
        }
    }
}

async fn wait_for_stop(stop: Option<watch::Receiver<bool>>) {
    use tokio::signal::unix::{signal, SignalKind};
    let (Ok(mut term), Ok(mut int)) = (
        signal(SignalKind::terminate()),
        signal(SignalKind::interrupt()),
    ) else {
        tracing::error!("cannot install signal handlers; stop the server with SIGKILL");
        std::future::pending::<()>().await;
        return;
    };
    let external = async {
        match stop {
            Some(mut s) => {
                while !*s.borrow() {
                    if s.changed().await.is_err() {
                        std::future::pending::<()>().await;
                    }
                }
            }
            None => std::future::pending::<()>().await,
        }
    };
    tokio::select! {
        _ = term.recv() => {},
        _ = int.recv() => {},
        _ = external => {},
    }
}
