//! The IMAP listener: the same accept loop, connection limit and shutdown
//! as the other doors (`crate::listener`): beyond `max_connections` a
//! client is told `* BYE` and closed at once, every wait for a client has
//! a deadline (`conn.rs`), and at shutdown sessions between commands are
//! told `* BYE` and closed, the rest dropped when the grace period ends.
//!
//! STARTTLS uses the server's certificate (`tls.rs`) without ALPN; so
//! does the implicit-TLS listener (`imaps_listen`), whose connections
//! shake hands before the greeting.

use super::accounts::ServerAccounts;
use super::conn::{self, ConnContext};
use super::settings::ImapSettings;
use crate::listener::{serve_admitted, Gate, Lifecycle};
use crate::stats::Stats;
use bytes::Bytes;
use std::sync::Arc;
use tokio::net::TcpListener;
use tokio::sync::watch;

/// Accepts IMAP connections until the lifecycle leaves `Serving`, then
/// lets them finish, or drops them once it reaches `Cut`.
pub(crate) async fn serve(
    listener: TcpListener,
    tls: Option<Arc<rustls::ServerConfig>>,
    accounts: Arc<ServerAccounts>,
    settings: ImapSettings,
    stats: Arc<Stats>,
    life: watch::Receiver<Lifecycle>,
) {
    let refusal = Bytes::from_static(b"* BYE too many connections, try again later\r\n");
    let door = if settings.implicit_tls {
        "IMAPS"
    } else {
        "IMAP"
    };
    let gate = Gate::new(settings.max_connections, refusal);
    let tls = tls.map(|config| crate::tls::starttls_acceptor(&config));
    let settings = Arc::new(settings);
    let refused = stats.clone();
    let watching = life.clone();
    let conns = move |socket, peer| {
        let cx = ConnContext {
            settings: settings.clone(),
            accounts: accounts.clone(),
            tls: tls.clone(),
            stats: stats.clone(),
            life: watching.clone(),
        };
        conn::serve(socket, peer, cx)
    };
    serve_admitted(
        listener,
        door,
        gate,
        move || refused.connection_refused(),
        life,
        conns,
    )
    .await;
}
