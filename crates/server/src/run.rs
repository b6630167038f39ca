//! Running the server: runtime, listeners, background tasks, shutdown.
//!
//! ```text
//!   run(host) ─ raise the descriptor limit, fit the connection limits under it
//!         ─ tokio runtime: io threads (accept, read, write)
//!            │             + blocking pool of `worker_threads` (requests)
//!            ├─ bind 127.0.0.1:1352 (native) and 127.0.0.1:8080 (HTTP),
//!            │  and `smtp_listen`, `submission_listen`, `imap_listen`, `couchdb_listen`
//!            │  if set (off by default)
//!            ├─ start the host's background tasks, in order (tasks.rs)
//!            ├─ native::serve, http::serve, smtp::serve, imap::serve, http::serve_couch
//!            └─ wait for SIGTERM / SIGINT / the stop handle
//!   shutdown: Draining — stop accepting, close idle and half-open
//!             connections, let in-flight requests finish (their commits
//!             included); meanwhile stop the tasks, in reverse order;
//!             Cut — after `shutdown_grace` (or at a second signal) drop
//!             the connections still open, so their jobs fail and end;
//!             the tasks not yet stopped get `LAST_CALL` more, then are
//!             aborted and named (at a second signal, at once);
//!             then, after `JOBS_AFTER_CUT` at most, the host closes the
//!             engine (flush, checkpoint) whoever still holds it.
//! ```
//!
//! Shutdown is bounded: no client, however slow or silent, and no task
//! keeps the process past the grace period (plus `LAST_CALL` for tasks,
//! `JOBS_AFTER_CUT` for jobs to see their connection gone, and the final
//! checkpoint), and it ends in a checkpoint even if a job never lets go of
//! the engine.

use crate::host::Host;
use crate::http_conn::HttpSettings;
use crate::imap::{self, ImapSettings, ServerAccounts};
use crate::listener::Lifecycle;
use crate::native::{self, NativeSettings};
use crate::service::{Limits, Service};
use crate::smtp::{self, Door, Mailer, SmtpSettings, Submitter};
use crate::tasks::Tasks;
use crate::tls::{server_tls_config, TlsSettings};
use crate::{http, ServerError, ServerResult};
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;
use tokio::net::TcpListener;
use tokio::sync::watch;

/// Every server setting (`folio.toml` maps onto these).
#[derive(Clone, Debug)]
pub struct ServerSettings {
    /// Native protocol address.
    pub listen: String,
    /// HTTP/JSON API address; `None` turns the HTTP API off.
    pub http_listen: Option<String>,
    /// The CouchDB replication protocol's address (`http::couch`); `None`
    /// (the default) turns it off. It shares the HTTP settings.
    pub couchdb_listen: Option<String>,
    /// Origins whose pages may call the CouchDB door (CORS; `"*"`: any);
    /// none by default.
    pub couchdb_cors: Vec<String>,
    /// Threads running requests (the worker pool).
    pub worker_threads: usize,
    /// Threads doing network I/O (accept, read, write).
    pub io_threads: usize,
    /// Native listener settings.
    pub native: NativeSettings,
    /// HTTP listener settings.
    pub http: HttpSettings,
    /// At shutdown, how long requests in flight may take to finish before
    /// their connections are cut, and background tasks to stop before
    /// they are aborted.
    pub shutdown_grace: Duration,
    /// Per-request limits.
    pub limits: Limits,
    /// TLS for every listener (STARTTLS for SMTP).
    pub tls: TlsSettings,
    /// The SMTP listener; `None` (the default) turns it off.
    pub smtp: Option<SmtpSettings>,
    /// The submission listener (RFC 6409); `None` (the default) turns it
    /// off.
    pub submission: Option<SmtpSettings>,
    /// The IMAP listener; `None` (the default) turns it off.
    pub imap: Option<ImapSettings>,
    /// The IMAP listener with implicit TLS (RFC 8314 §3.2, `imaps_listen`);
    /// `None` (the default) turns it off. Needs TLS.
    pub imaps: Option<ImapSettings>,
    /// The submission listener with implicit TLS (RFC 8314 §3.3,
    /// `submissions_listen`); `None` (the default) turns it off. Needs TLS.
    pub submissions: Option<SmtpSettings>,
    /// This server's mail domains and the routes to others (what the
    /// SMTP doors accept for elsewhere).
    pub outbound: mail::outbound::OutboundConfig,
}

impl Default for ServerSettings {
    fn default() -> Self {
        let cores = std::thread::available_parallelism().map_or(2, |n| n.get());
        ServerSettings {
            listen: "127.0.0.1:1352".into(),
            http_listen: Some("127.0.0.1:8080".into()),
            couchdb_listen: None,
            couchdb_cors: Vec::new(),
            worker_threads: 64,
            io_threads: cores.clamp(1, 8),
            native: NativeSettings::default(),
            http: HttpSettings::default(),
            shutdown_grace: Duration::from_secs(10),
            limits: Limits::default(),
            tls: TlsSettings::default(),
            smtp: None,
            submission: None,
            imap: None,
            imaps: None,
            submissions: None,
            outbound: Default::default(),
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
    /// SMTP address, if on.
    pub smtp: Option<SocketAddr>,
    /// Submission address, if on.
    pub submission: Option<SocketAddr>,
    /// IMAP address, if on.
    pub imap: Option<SocketAddr>,
    /// IMAP-over-TLS address, if on.
    pub imaps: Option<SocketAddr>,
    /// Submission-over-TLS address, if on.
    pub submissions: Option<SocketAddr>,
    /// CouchDB protocol address, if on.
    pub couchdb: Option<SocketAddr>,
    /// The certificate clients should trust, when TLS is on.
    pub tls_cert: Option<std::path::PathBuf>,
}

/// After the connections are cut, how long jobs still running get to see
/// it and end before the engine is closed under them.
const JOBS_AFTER_CUT: Duration = Duration::from_secs(5);

/// Runs the server on `host` until SIGTERM or SIGINT (or `stop` turns
/// true), then closes the host: the engine is flushed and checkpointed
/// even if a job or task still holds it. `on_bound` is called once the
/// listeners are up and the background tasks started. Whatever fails, the
/// engine is closed before this returns.
pub fn run(
    settings: ServerSettings,
    mut host: Host,
    on_bound: impl FnOnce(&Bound),
    stop: Option<watch::Receiver<bool>>,
) -> ServerResult<()> {
    let served = serve_host(settings, &mut host, on_bound, stop);
    let closed = host.close();
    if let (Err(_), Err(e)) = (&served, &closed) {
        tracing::error!(error = %e, "the engine did not close cleanly either");
    }
    served.and(closed)
}

/// Runs the runtime and the listeners until shutdown, with every job
/// and task ended or abandoned when it returns.
fn serve_host(
    mut settings: ServerSettings,
    host: &mut Host,
    on_bound: impl FnOnce(&Bound),
    stop: Option<watch::Receiver<bool>>,
) -> ServerResult<()> {
    crate::descriptors::fit_settings(&mut settings, true)?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(settings.io_threads.max(1))
        .max_blocking_threads(settings.worker_threads.max(1))
        .thread_name("folio-net")
        .enable_all()
        .build()
        .map_err(|e| ServerError::Internal(format!("cannot start the runtime: {e}")))?;
    let engine = host.engine();
    let tls = server_tls_config(&settings.tls, engine.data_dir(), engine.backend())?;
    let service = host.service(settings.limits.clone());
    let mailer = settings
        .smtp
        .as_ref()
        .or(settings.submission.as_ref())
        .or(settings.submissions.as_ref())
        .map(|s| {
            Arc::new(Mailer::new(
                host.engine().clone(),
                host.views().clone(),
                s.mail,
                settings.outbound.clone(),
            ))
        });
    let result = runtime.block_on(serve(
        settings,
        service,
        mailer,
        host.tasks_mut(),
        tls,
        on_bound,
        stop,
    ));
    runtime.shutdown_timeout(JOBS_AFTER_CUT);
    result
}

/// Connections the kernel queues for a listener before the server
/// accepts them (capped by `net.core.somaxconn`). The usual 128 overflows
/// when thousands of clients connect at once while the accepting thread
/// is busy; an overflowing queue drops connection attempts, which
/// clients retry only after a second.
const LISTEN_BACKLOG: u32 = 4_096;

/// [`bind`] for a listener that speaks TLS from the first byte: refused
/// at start unless the server has a certificate.
async fn bind_tls(
    addr: &str,
    what: &str,
    tls: &Option<crate::tls::TlsConfig>,
) -> ServerResult<TcpListener> {
    if tls.is_none() {
        return Err(ServerError::Setting {
            key: what.into(),
            reason: "needs TLS: set [tls] cert and key, or tls.self_signed".into(),
        });
    }
    bind(addr, what).await
}

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

#[allow(clippy::too_many_arguments)]
async fn serve(
    settings: ServerSettings,
    service: Arc<Service>,
    mailer: Option<Arc<Mailer>>,
    tasks: &mut Tasks,
    tls: Option<crate::tls::TlsConfig>,
    on_bound: impl FnOnce(&Bound),
    stop: Option<watch::Receiver<bool>>,
) -> ServerResult<()> {
    // Installed first, so a signal during start-up is a stop, not a kill.
    let mut signals = StopSignals::new(stop);
    let native_listener = bind(&settings.listen, "listen").await?;
    let http_listener = match &settings.http_listen {
        Some(a) => Some(bind(a, "http_listen").await?),
        None => None,
    };
    let smtp_listener = match (&settings.smtp, &mailer) {
        (Some(s), Some(m)) => Some((bind(&s.listen, "smtp_listen").await?, s.clone(), m.clone())),
        _ => None,
    };
    let submission_listener = match (&settings.submission, &mailer) {
        (Some(s), Some(m)) => Some((
            bind(&s.listen, "submission_listen").await?,
            s.clone(),
            m.clone(),
        )),
        _ => None,
    };
    let imap_listener = match &settings.imap {
        Some(s) => Some((bind(&s.listen, "imap_listen").await?, s.clone())),
        None => None,
    };
    let imaps_listener = match &settings.imaps {
        Some(s) => Some((bind_tls(&s.listen, "imaps_listen", &tls).await?, s.clone())),
        None => None,
    };
    let submissions_listener = match (&settings.submissions, &mailer) {
        (Some(s), Some(m)) => Some((
            bind_tls(&s.listen, "submissions_listen", &tls).await?,
            s.clone(),
            m.clone(),
        )),
        _ => None,
    };
    let couch_listener = match &settings.couchdb_listen {
        Some(a) => Some(bind(a, "couchdb_listen").await?),
        None => None,
    };
    let local = |l: &TcpListener| {
        l.local_addr()
            .map_err(|e| ServerError::Internal(format!("listener address: {e}")))
    };
    let bound = Bound {
        native: local(&native_listener)?,
        http: http_listener.as_ref().map(local).transpose()?,
        smtp: smtp_listener.as_ref().map(|l| local(&l.0)).transpose()?,
        submission: submission_listener
            .as_ref()
            .map(|l| local(&l.0))
            .transpose()?,
        imap: imap_listener.as_ref().map(|l| local(&l.0)).transpose()?,
        imaps: imaps_listener.as_ref().map(|l| local(&l.0)).transpose()?,
        submissions: submissions_listener
            .as_ref()
            .map(|l| local(&l.0))
            .transpose()?,
        couchdb: couch_listener.as_ref().map(local).transpose()?,
        tls_cert: tls.as_ref().map(|t| t.cert_path.clone()),
    };
    tasks.start_all().await;
    on_bound(&bound);
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
            acceptor.clone(),
            service.clone(),
            settings.http.clone(),
            life.clone(),
        ))
    });
    let couch = couch_listener.map(|l| {
        tokio::spawn(http::serve_couch(
            l,
            acceptor,
            service.clone(),
            (settings.http.clone(), settings.couchdb_cors.clone()),
            life.clone(),
        ))
    });
    let mail = smtp_listener.map(|(l, s, m)| {
        tokio::spawn(smtp::serve(
            l,
            tls.as_ref().map(|t| t.config.clone()),
            Door::Inbound(m),
            s,
            service.stats().clone(),
            life.clone(),
        ))
    });
    let submit = submission_listener.map(|(l, s, m)| {
        let door = Door::Submission {
            submitter: Arc::new(Submitter::new(service.clone(), m)),
            plaintext_auth: s.plaintext_auth,
        };
        tokio::spawn(smtp::serve(
            l,
            tls.as_ref().map(|t| t.config.clone()),
            door,
            s,
            service.stats().clone(),
            life.clone(),
        ))
    });
    let accounts = Arc::new(ServerAccounts::new(service.clone()));
    let mailread: Vec<_> = [imap_listener, imaps_listener]
        .into_iter()
        .flatten()
        .map(|(l, s)| {
            tokio::spawn(imap::serve(
                l,
                tls.as_ref().map(|t| t.config.clone()),
                accounts.clone(),
                s,
                service.stats().clone(),
                life.clone(),
            ))
        })
        .collect();
    let submits_tls = submissions_listener.map(|(l, s, m)| {
        let door = Door::Submission {
            submitter: Arc::new(Submitter::new(service.clone(), m)),
            plaintext_auth: s.plaintext_auth,
        };
        tokio::spawn(smtp::serve(
            l,
            tls.as_ref().map(|t| t.config.clone()),
            door,
            s,
            service.stats().clone(),
            life.clone(),
        ))
    });
    signals.next().await;
    let grace = settings.shutdown_grace;
    tracing::info!(
        "shutting down: finishing requests in flight and stopping background tasks \
         (for {} s at most)",
        grace.as_secs_f64()
    );
    let _ = life_tx.send(Lifecycle::Draining);
    service.start_draining();
    let deadline = tokio::time::Instant::now() + grace;
    let listeners = async {
        let _ = native.await;
        if let Some(w) = web {
            let _ = w.await;
        }
        if let Some(c) = couch {
            let _ = c.await;
        }
        if let Some(m) = mail {
            let _ = m.await;
        }
        if let Some(m) = submit {
            let _ = m.await;
        }
        for m in mailread {
            let _ = m.await;
        }
        if let Some(m) = submits_tls {
            let _ = m.await;
        }
    };
    // A second signal cuts the tasks' stop short as well.
    let (hurry, hurried) = tokio::sync::oneshot::channel::<()>();
    let tasks_stopped = tasks.stop_all(deadline, async move {
        if hurried.await.is_err() {
            std::future::pending::<()>().await;
        }
    });
    tokio::pin!(listeners, tasks_stopped);
    let grace_over = tokio::time::sleep_until(deadline);
    tokio::pin!(grace_over);
    let (mut listening, mut tasks_running) = (true, true);
    let (mut cut, mut hurry) = (false, Some(hurry));
    while listening || tasks_running {
        tokio::select! {
            _ = &mut listeners, if listening => listening = false,
            _ = &mut tasks_stopped, if tasks_running => tasks_running = false,
            _ = &mut grace_over, if listening && !cut => {
                tracing::warn!("the shutdown grace period is over: closing the connections still open");
                let _ = life_tx.send(Lifecycle::Cut);
                cut = true;
            }
            _ = signals.next(), if hurry.is_some() => {
                tracing::warn!("a second signal came: closing the connections still open, aborting the background tasks");
                let _ = life_tx.send(Lifecycle::Cut);
                cut = true;
                if let Some(h) = hurry.take() {
                    let _ = h.send(());
                }
            }
        }
    }
    Ok(())
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
