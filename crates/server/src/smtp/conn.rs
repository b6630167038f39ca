//! One SMTP connection: reads feed the `Session`, its actions are done
//! here, and every wait for the client has a deadline.
//!
//! ```text
//!   read (deadline: command or data timeout) ─▶ Session::input
//!   Session::next_action ─┬ Write           ─▶ socket (a write the client does
//!                         │                    not take fails after `stall_timeout`)
//!                         ├ VerifyRecipient ─▶ blocking pool: Mailer::verify ─▶ recipient_verdict
//!                         ├ Store           ─▶ blocking pool: Mailer::store   ─▶ stored
//!                         ├ Authenticate    ─▶ blocking pool: Submitter::authenticate,
//!                         │                    after a pause growing with the refusals
//!                         │                    so far ─▶ authenticated
//!                         ├ StartTls        ─▶ handshake (command timeout) ─▶ tls_started,
//!                         │                    then the same loop over TLS
//!                         └ Close           ─▶ flush, close
//! ```
//!
//! The session reads nothing while it waits for a verdict, a store or a
//! handshake, so the socket is not read then either: what the client
//! pipelines stays in the kernel's buffer, and TCP slows it down.
//!
//! Durability: `250` after the final dot is written only after
//! `Mailer::store` returned `Ok`, that is once the deposit's commits are
//! durable (I2, I28); any failure is answered `451`/`452`/`552`/`554` and
//! leaves nothing deposited. A timeout or a client that goes away in the
//! middle of a message stores nothing of it.
//!
//! Shutdown: once the server drains, a session waiting for a command is
//! answered `421` and closed at once; one receiving or storing a message
//! is let finish it until the grace period ends, when its task is
//! dropped. (A deposit already running on the blocking pool then still
//! completes, and the client, which got no `250`, sends the message
//! again: a duplicate rather than a loss, RFC 5321 §6.1's choice.)

use super::door::Door;
use super::settings::SmtpSettings;
use crate::guard::{Guarded, OwnReads};
use crate::listener::Lifecycle;
use crate::stats::Stats;
use mail::smtp::{Action, AuthFailure, Session, SessionLimits, StoreFailure, Verdict, Waiting};
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
    pub(crate) settings: Arc<SmtpSettings>,
    pub(crate) server_name: Arc<str>,
    pub(crate) door: Door,
    pub(crate) tls: Option<tokio_rustls::TlsAcceptor>,
    pub(crate) stats: Arc<Stats>,
    pub(crate) life: watch::Receiver<Lifecycle>,
    /// The client's address, for the `Received:` line.
    pub(crate) peer: SocketAddr,
}

/// How a pass of the loop over one stream ended.
enum Next<S> {
    /// The session closed (QUIT, 421, timeout) or the client went away.
    Closed,
    /// The session said `220` to STARTTLS: the handshake comes next.
    StartTls(S),
}

/// Serves one accepted connection to its end.
pub(crate) async fn serve(socket: TcpStream, peer: SocketAddr, mut cx: ConnContext) {
    let limits = SessionLimits {
        max_message_size: cx.settings.max_message_size,
        max_recipients: cx.settings.max_recipients,
        starttls: cx.tls.is_some() && !cx.settings.implicit_tls,
        auth: cx.door.auth_policy(peer.ip().is_loopback()),
        ..SessionLimits::default()
    };
    let started = match cx.settings.implicit_tls {
        true => Session::new_over_tls(&cx.server_name, limits),
        false => Session::new(&cx.server_name, limits),
    };
    let mut session = match started {
        Ok(s) => s,
        Err(e) => {
            tracing::error!(error = %e, "SMTP: cannot start a session");
            return;
        }
    };
    let _ = socket.set_nodelay(true);
    let stream = Guarded::new(
        socket,
        OwnReads,
        cx.settings.stall_timeout,
        cx.stats.clone(),
    );
    if cx.settings.implicit_tls {
        // RFC 8314 §3.3: the handshake first, then the greeting over TLS.
        let Some(tls) = handshake(stream, peer, &cx).await else {
            return;
        };
        if let Err(e) = drive(&mut session, tls, &mut cx).await {
            tracing::debug!(%peer, "SMTP connection ended: {e}");
        }
        return;
    }
    let plain = drive(&mut session, stream, &mut cx).await;
    let stream = match plain {
        Ok(Next::StartTls(stream)) => stream,
        Ok(Next::Closed) => return,
        Err(e) => return tracing::debug!(%peer, "SMTP connection ended: {e}"),
    };
    let Some(tls) = handshake(stream, peer, &cx).await else {
        return;
    };
    if session.tls_started().is_err() {
        return;
    }
    if let Err(e) = drive(&mut session, tls, &mut cx).await {
        tracing::debug!(%peer, "SMTP connection ended: {e}");
    }
}

/// The server's side of a TLS handshake on `stream`, within the command
/// timeout; `None` (logged) if it failed or there is no certificate.
async fn handshake<S: AsyncRead + AsyncWrite + Unpin>(
    stream: S,
    peer: SocketAddr,
    cx: &ConnContext,
) -> Option<tokio_rustls::server::TlsStream<S>> {
    let acceptor = cx.tls.clone()?;
    let handshake = tokio::time::timeout(cx.settings.command_timeout, acceptor.accept(stream));
    match handshake.await {
        Ok(Ok(tls)) => Some(tls),
        Ok(Err(e)) => {
            tracing::info!(%peer, "SMTP: TLS handshake failed: {e}");
            None
        }
        Err(_) => {
            cx.stats.connection_timed_out();
            tracing::info!(%peer, "SMTP: TLS handshake timed out");
            None
        }
    }
}

/// Runs the session over `stream` until it closes or asks for TLS.
async fn drive<S: AsyncRead + AsyncWrite + Unpin>(
    session: &mut Session,
    mut stream: S,
    cx: &mut ConnContext,
) -> io::Result<Next<S>> {
    let mut buf = vec![0u8; READ_BUFFER];
    loop {
        while let Some(action) = session.next_action() {
            match action {
                Action::Write(bytes) => stream.write_all(&bytes).await?,
                Action::VerifyRecipient(recipient) => {
                    let door = cx.door.clone();
                    let verdict = tokio::task::spawn_blocking(move || door.verify(&recipient))
                        .await
                        .unwrap_or(Verdict::TryLater);
                    session
                        .recipient_verdict(verdict)
                        .map_err(io::Error::other)?;
                }
                Action::Store(mut delivery) => {
                    // Replies so far reach the client while the deposit runs.
                    stream.flush().await?;
                    // RFC 5321 §4.4: the trace line goes on top.
                    let line = mail::smtp::received_line(
                        &delivery.envelope,
                        cx.peer.ip(),
                        &cx.server_name,
                        chrono::Utc::now(),
                    );
                    delivery.data.splice(0..0, line.into_bytes());
                    let door = cx.door.clone();
                    let stored = tokio::task::spawn_blocking(move || door.store(&delivery))
                        .await
                        .unwrap_or(Err(StoreFailure::Transient));
                    session.stored(stored).map_err(io::Error::other)?;
                }
                Action::Authenticate(credentials) => {
                    stream.flush().await?;
                    // Each refusal so far costs the next attempt a second
                    // more (at most 5), as IMAP's LOGIN does.
                    let pause = u64::from(session.auth_failures().min(5));
                    tokio::time::sleep(std::time::Duration::from_secs(pause)).await;
                    let door = cx.door.clone();
                    let result =
                        tokio::task::spawn_blocking(move || door.authenticate(&credentials))
                            .await
                            .unwrap_or(Err(AuthFailure::Unavailable));
                    session.authenticated(result).map_err(io::Error::other)?;
                }
                Action::StartTls => {
                    stream.flush().await?;
                    return Ok(Next::StartTls(stream));
                }
                Action::Close => {
                    stream.flush().await?;
                    let _ = stream.shutdown().await;
                    return Ok(Next::Closed);
                }
            }
        }
        stream.flush().await?;
        let timeout = match session.waiting_for() {
            Waiting::Command | Waiting::AuthResponse => cx.settings.command_timeout,
            Waiting::MessageData => cx.settings.data_timeout,
            // Only the driver answers these, and it just did.
            _ => return Ok(Next::Closed),
        };
        let idle = session.waiting_for() == Waiting::Command;
        let read = tokio::select! {
            r = tokio::time::timeout(timeout, stream.read(&mut buf)) => r,
            _ = draining(&mut cx.life), if idle => {
                let bye = format!("421 {} Service shutting down, closing connection\r\n", cx.server_name);
                stream.write_all(bye.as_bytes()).await?;
                stream.flush().await?;
                let _ = stream.shutdown().await;
                return Ok(Next::Closed);
            }
        };
        match read {
            Err(_) => {
                cx.stats.connection_timed_out();
                session.timed_out();
            }
            // The client went away; an unfinished message is dropped.
            Ok(Ok(0)) => return Ok(Next::Closed),
            Ok(Ok(n)) => session.input(&buf[..n]),
            Ok(Err(e)) => return Err(e),
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
