//! The IMAP listener: the same accept loop, connection limit and shutdown
//! as the other doors (`crate::listener`): beyond `max_connections` a
//! client is told `* BYE` and closed at once, every wait for a client has
//! a deadline (`conn.rs`), and at shutdown sessions between commands are
//! told `* BYE` and closed, the rest dropped when the grace period ends.
//!
//! STARTTLS uses the server's certificate (`tls.rs`) without ALPN.

use super::accounts::ServerAccounts;
use super::conn::{self, ConnContext};
use super::settings::ImapSettings;
use crate::listener::{finish, Gate, Lifecycle, Listener};
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
    mut life: watch::Receiver<Lifecycle>,
) {
    let refusal = Bytes::from_static(b"* BYE too many connections, try again later\r\n");
    let gate = Gate::new(settings.max_connections, refusal);
    let tls = tls.map(|config| {
        let mut imap = (*config).clone();
        imap.alpn_protocols.clear();
        tokio_rustls::TlsAcceptor::from(Arc::new(imap))
    });
    let settings = Arc::new(settings);
    let mut tasks = tokio::task::JoinSet::new();
    let mut listener = Listener::new(listener, "IMAP");
    while let Some((socket, peer)) = listener.accept(&mut life).await {
        let Some((socket, slot)) = gate.admit(socket) else {
            stats.connection_refused();
            continue;
        };
        let cx = ConnContext {
            settings: settings.clone(),
            accounts: accounts.clone(),
            tls: tls.clone(),
            stats: stats.clone(),
            life: life.clone(),
        };
        tasks.spawn(async move {
            let _slot = slot;
            conn::serve(socket, peer, cx).await;
        });
        while tasks.try_join_next().is_some() {}
    }
    drop(listener);
    finish(tasks, life).await;
}
