//! One IMAP connection: reads feed the `imap::Session`, its steps are
//! done here, and every wait for the client has a deadline.
//!
//! ```text
//!   read (deadline: imap.idle_timeout_secs) ─▶ Session::receive
//!   Session::step (block_in_place: it reads and writes the mail file)
//!        ├ Write    ─▶ socket (a write the client does not take fails
//!        │             after `stall_timeout_secs`)
//!        ├ NeedInput ─▶ read; during IDLE also a look at the mailbox's
//!        │             change marker every `imap.idle_poll_ms`, and a
//!        │             refresh when it moved
//!        ├ StartTls ─▶ handshake ─▶ Session::tls_started, same loop over TLS
//!        │             (on `imaps_listen` the handshake comes first of all)
//!        ├ Pause    ─▶ sleep (after a refused sign-in), nothing read
//!        └ Close    ─▶ flush, close
//! ```
//!
//! Durability: a tagged `OK` to STORE, EXPUNGE or APPEND is produced only
//! after the store call returned, that is once its commit is durable (I2).
//! A session that times out is told `* BYE` and closed.

use super::accounts::ServerAccounts;
use super::settings::ImapSettings;
use crate::guard::{Guarded, OwnReads};
use crate::listener::Lifecycle;
use crate::stats::Stats;
use imap::{Session, SessionLimits, Step, Transport};
use std::io;
use std::net::SocketAddr;
use std::sync::Arc;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::sync::watch;

/// Bytes read from the client at once.
const READ_BUFFER: usize = 16 << 10;

/// What a connection needs besides its socket.
pub(crate) struct ConnContext {
    pub(crate) settings: Arc<ImapSettings>,
    pub(crate) accounts: Arc<ServerAccounts>,
    pub(crate) tls: Option<tokio_rustls::TlsAcceptor>,
    pub(crate) stats: Arc<Stats>,
    pub(crate) life: watch::Receiver<Lifecycle>,
}

/// How a pass of the loop over one stream ended.
enum Next<S> {
    Closed,
    StartTls(S),
}

/// Serves one accepted connection to its end.
pub(crate) async fn serve(socket: TcpStream, peer: SocketAddr, mut cx: ConnContext) {
    let limits = SessionLimits {
        max_command_bytes: cx.settings.max_command_size,
        max_literal_bytes: cx.settings.max_message_size,
        plaintext_login: cx.settings.plaintext_login,
        ..SessionLimits::default()
    };
    let implicit = cx.settings.implicit_tls;
    let transport = Transport {
        tls: implicit,
        loopback: peer.ip().is_loopback(),
        starttls: cx.tls.is_some() && !implicit,
    };
    let accounts: Arc<dyn imap::Accounts> = cx.accounts.clone();
    let mut session = Session::new(accounts, limits, transport);
    let _ = socket.set_nodelay(true);
    let stream = Guarded::new(
        socket,
        OwnReads,
        cx.settings.stall_timeout,
        cx.stats.clone(),
    );
    if implicit {
        // RFC 8314 §3.2: the handshake first, then the greeting over TLS.
        let Some(tls) = handshake(stream, peer, &cx).await else {
            return;
        };
        if let Err(e) = drive(&mut session, tls, &mut cx).await {
            tracing::debug!(%peer, "IMAPS connection ended: {e}");
        }
        return;
    }
    let stream = match drive(&mut session, stream, &mut cx).await {
        Ok(Next::StartTls(stream)) => stream,
        Ok(Next::Closed) => return,
        Err(e) => return tracing::debug!(%peer, "IMAP connection ended: {e}"),
    };
    let Some(tls) = handshake(stream, peer, &cx).await else {
        return;
    };
    session.tls_started();
    if let Err(e) = drive(&mut session, tls, &mut cx).await {
        tracing::debug!(%peer, "IMAP connection ended: {e}");
    }
}

/// The server's side of a TLS handshake on `stream`, within the idle
/// timeout; `None` (logged) if it failed or there is no certificate.
async fn handshake<S: AsyncRead + AsyncWrite + Unpin>(
    stream: S,
    peer: SocketAddr,
    cx: &ConnContext,
) -> Option<tokio_rustls::server::TlsStream<S>> {
    let acceptor = cx.tls.clone()?;
    let handshake = tokio::time::timeout(cx.settings.idle_timeout, acceptor.accept(stream));
    match handshake.await {
        Ok(Ok(tls)) => Some(tls),
        Ok(Err(e)) => {
            tracing::info!(%peer, "IMAP: TLS handshake failed: {e}");
            None
        }
        Err(_) => {
            cx.stats.connection_timed_out();
            tracing::info!(%peer, "IMAP: TLS handshake timed out");
            None
        }
    }
}

/// Runs `f` on the session where blocking is allowed: a step may read
/// or write the mail file (the runtime moves this worker's other tasks
/// elsewhere meanwhile).
fn blocking<T>(session: &mut Session, f: impl FnOnce(&mut Session) -> T) -> T {
    tokio::task::block_in_place(|| f(session))
}

/// Runs the session over `stream` until it closes or asks for TLS.
async fn drive<S: AsyncRead + AsyncWrite + Unpin>(
    session: &mut Session,
    mut stream: S,
    cx: &mut ConnContext,
) -> io::Result<Next<S>> {
    let mut buf = vec![0u8; READ_BUFFER];
    let mut seen_marker = None;
    loop {
        match blocking(session, |s| s.step()) {
            Step::Write(bytes) => {
                stream.write_all(&bytes).await?;
                continue;
            }
            Step::StartTls => {
                stream.flush().await?;
                return Ok(Next::StartTls(stream));
            }
            Step::Close => {
                stream.flush().await?;
                let _ = stream.shutdown().await;
                return Ok(Next::Closed);
            }
            Step::Pause(p) => {
                stream.flush().await?;
                tokio::time::sleep(p).await;
                continue;
            }
            Step::NeedInput => stream.flush().await?,
        }
        let idling = session.idling();
        if idling && seen_marker.is_none() {
            seen_marker = session.change_marker();
        }
        let between = session.between_commands();
        tokio::select! {
            r = tokio::time::timeout(cx.settings.idle_timeout, stream.read(&mut buf)) => match r {
                Err(_) => {
                    cx.stats.connection_timed_out();
                    session.shutdown("autologout: idle for too long");
                }
                Ok(Ok(0)) => return Ok(Next::Closed),
                Ok(Ok(n)) => {
                    let bytes = buf[..n].to_vec();
                    session.receive(&bytes);
                    if !session.idling() {
                        seen_marker = None;
                    }
                }
                Ok(Err(e)) => return Err(e),
            },
            _ = tokio::time::sleep(cx.settings.idle_poll), if idling => {
                let now = session.change_marker();
                if now != seen_marker {
                    seen_marker = now;
                    blocking(session, |s| s.refresh());
                }
            }
            _ = draining(&mut cx.life), if between => {
                session.shutdown("the server is shutting down");
            }
        }
    }
}

/// Returns once the server stops serving (or its lifecycle is gone).
async fn draining(life: &mut watch::Receiver<Lifecycle>) {
    let _ = life
        .wait_for(|l| *l != Lifecycle::Serving)
        .await
        .map(|_| ());
}
