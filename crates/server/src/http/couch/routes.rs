//! The door's routes table, served by the HTTP API's connection handling.

use super::{atts, call, changes, db, docs, find, server};
use crate::http_conn::HttpSettings;
use crate::listener::Lifecycle;
use crate::service::Service;
use axum::routing::{get, post};
use axum::Router;
use std::sync::Arc;
use tokio::net::TcpListener;
use tokio::sync::watch;

/// The door's routes over `service`, answering the browser pages of
/// `cors_origins` (cors.rs).
fn router(service: Arc<Service>, cors_origins: &[String]) -> Router {
    let db = || {
        get(db::info)
            .head(db::info)
            .put(db::create)
            .delete(db::delete)
            .post(docs::post)
    };
    let doc = || get(docs::get).put(docs::put).delete(docs::delete);
    let att = || get(atts::get).put(atts::put).delete(atts::delete);
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
        .route(
            "/{db}/_changes",
            get(changes::changes).post(changes::changes),
        )
        .route("/{db}/_ensure_full_commit", post(db::ensure_full_commit))
        .route("/{db}/_bulk_docs", post(docs::bulk_docs))
        .route("/{db}/_find", post(find::find))
        .route("/{db}/_bulk_get", post(docs::bulk_get))
        .route("/{db}/_revs_diff", post(docs::revs_diff))
        .route(
            "/{db}/_local/{id}",
            get(docs::get_local)
                .put(docs::put_local)
                .delete(docs::delete_local),
        )
        .route("/{db}/_design/{ddoc}", doc())
        .route("/{db}/_design/{ddoc}/{*att}", att())
        .route("/{db}/{id}", doc())
        .route("/{db}/{id}/{*att}", att())
        .fallback(call::no_route)
        .method_not_allowed_fallback(call::wrong_method)
        .layer(axum::middleware::from_fn(
            super::super::unread::close_if_unread,
        ))
        .layer(axum::middleware::from_fn_with_state(
            service.clone(),
            super::super::count_request,
        ))
        .layer(super::cors::layer(cors_origins))
        .with_state(service)
}

/// Serves the door on `listener` until the lifecycle leaves `Serving`,
/// as [`crate::http::serve`] serves the API.
pub async fn serve_couch(
    listener: TcpListener,
    tls: Option<tokio_rustls::TlsAcceptor>,
    service: Arc<Service>,
    (settings, cors_origins): (HttpSettings, Vec<String>),
    life: watch::Receiver<Lifecycle>,
) {
    let app = router(service.clone(), &cors_origins);
    crate::http_conn::serve_app(app, listener, tls, service, settings, life).await
}
