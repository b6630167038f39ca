//! The CouchDB door: CouchDB's HTTP API at the root of a listener of its
//! own (`couchdb_listen`, off by default), so a CouchDB client pointed at
//! `http://host:port/` — PouchDB's replicator above all — works
//! unchanged. docs/couchdb.md lists what it answers; the protocol logic
//! (revision ids, the revision tree, revs_diff, the change feed) is the
//! `couch` crate's, the access rules `service/couch.rs`'s. This module
//! only turns requests into calls and answers into CouchDB's JSON.
//!
//! ```text
//!   request ─▶ CouchCall (credentials: Basic, Bearer or the AuthSession
//!              cookie; path; query) ─▶ handler: parse body and parameters
//!              ─▶ spawn_blocking(authenticate ─▶ Service::couch_*)
//!   answer  ◀─ JSON, or {"error": kind, "reason": text} with CouchDB's status
//! ```
//!
//! It is served by the same connection handling as the HTTP API
//! (`http_conn::serve_app`: limits, timeouts, TLS, shutdown) and shares
//! its users, sessions and per-database ACLs.
//!
//! ```text
//!   call.rs     the request as a handler starts from it; errors; running a job
//!   server.rs   /, /_session, /_all_dbs, /_uuids
//!   db.rs       /{db}: create, info, delete; _changes, _all_docs, _ensure_full_commit
//!   docs.rs     documents, _bulk_docs, _bulk_get, _revs_diff, _local
//! ```

mod call;
mod db;
mod docs;
mod server;

use crate::http_conn::HttpSettings;
use crate::listener::Lifecycle;
use crate::service::Service;
use axum::routing::{get, post};
use axum::Router;
use std::sync::Arc;
use tokio::net::TcpListener;
use tokio::sync::watch;

/// The door's routes over `service`.
pub fn router(service: Arc<Service>) -> Router {
    let db = || {
        get(db::info)
            .head(db::info)
            .put(db::create)
            .delete(db::delete)
            .post(docs::post)
    };
    let doc = || get(docs::get).put(docs::put).delete(docs::delete);
    Router::new()
        .route("/", get(server::welcome))
        .route(
            "/_session",
            get(server::session)
                .post(server::sign_in)
                .delete(server::sign_out),
        )
        .route("/_all_dbs", get(server::all_dbs))
        .route("/_uuids", get(server::uuids))
        .route("/{db}", db())
        .route("/{db}/", db())
        .route("/{db}/_all_docs", get(db::all_docs).post(db::all_docs))
        .route("/{db}/_changes", get(db::changes).post(db::changes))
        .route("/{db}/_ensure_full_commit", post(db::ensure_full_commit))
        .route("/{db}/_bulk_docs", post(docs::bulk_docs))
        .route("/{db}/_bulk_get", post(docs::bulk_get))
        .route("/{db}/_revs_diff", post(docs::revs_diff))
        .route(
            "/{db}/_local/{id}",
            get(docs::get_local)
                .put(docs::put_local)
                .delete(docs::delete_local),
        )
        .route("/{db}/_design/{ddoc}", doc())
        .route("/{db}/{id}", doc())
        .fallback(call::no_route)
        .method_not_allowed_fallback(call::wrong_method)
        .layer(axum::middleware::from_fn(super::unread::close_if_unread))
        .layer(axum::middleware::from_fn_with_state(
            service.clone(),
            super::count_request,
        ))
        .with_state(service)
}

/// Serves the door on `listener` until the lifecycle leaves `Serving`,
/// as [`crate::http::serve`] serves the API.
pub async fn serve_couch(
    listener: TcpListener,
    tls: Option<tokio_rustls::TlsAcceptor>,
    service: Arc<Service>,
    settings: HttpSettings,
    life: watch::Receiver<Lifecycle>,
) {
    let app = router(service.clone());
    crate::http_conn::serve_app(app, listener, tls, service, settings, life).await
}
