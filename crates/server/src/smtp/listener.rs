//! The SMTP listener: the same accept loop, connection limit and
//! shutdown as the native and HTTP listeners (`crate::listener`), so no
//! client can hold the server: beyond `max_connections` a client is told
//! `421` and closed at once, every wait for a client has a deadline
//! (`conn.rs`), and at shutdown idle sessions close at once and the rest
//! are dropped when the grace period ends.
//!
//! STARTTLS uses the server's certificate (`tls.rs`) without the ALPN
//! offer the HTTP listener makes: SMTP names no ALPN protocol.

use super::conn::{self, ConnContext};
use super::door::Door;
use super::settings::SmtpSettings;
use crate::listener::{serve_admitted, Gate, Lifecycle};
use crate::stats::Stats;
use bytes::Bytes;
use std::sync::Arc;
use tokio::net::TcpListener;
use tokio::sync::watch;

/// Accepts SMTP connections (inbound or submission, as `door` says)
/// until the lifecycle leaves `Serving`, then lets them finish, or drops
/// them once it reaches `Cut`.
pub(crate) async fn serve(
    listener: TcpListener,
    tls: Option<Arc<rustls::ServerConfig>>,
    door: Door,
    settings: SmtpSettings,
    stats: Arc<Stats>,
    life: watch::Receiver<Lifecycle>,
) {
    let server_name: Arc<str> = server_name(&settings).into();
    let refusal = format!("421 {server_name} Too many connections, try again later\r\n");
    let gate = Gate::new(settings.max_connections, Bytes::from(refusal));
    let tls = tls.map(|config| crate::tls::starttls_acceptor(&config));
    let settings = Arc::new(settings);
    let name = door.name();
    let refused = stats.clone();
    let watching = life.clone();
    let conns = move |socket, peer| {
        let cx = ConnContext {
            settings: settings.clone(),
            server_name: server_name.clone(),
            door: door.clone(),
            tls: tls.clone(),
            stats: stats.clone(),
            life: watching.clone(),
            peer,
        };
        conn::serve(socket, peer, cx)
    };
    serve_admitted(
        listener,
        name,
        gate,
        move || refused.connection_refused(),
        life,
        conns,
    )
    .await;
}

/// The configured name, else the machine's host name, else `localhost`.
fn server_name(settings: &SmtpSettings) -> String {
    settings
        .server_name
        .clone()
        .or_else(crate::tls::host_name)
        .unwrap_or_else(|| "localhost".into())
}
