//! The HTTP/JSON API: axum routes over the same [`Service`] as the native
//! protocol (docs/http.md lists every route). The connections they are
//! served on (limit, timeouts, shutdown) are `http_conn.rs`'s.
//!
//! ```text
//!  request ─▶ count_request ─▶ route ─▶ handler (async: parse path, query, body)
//!                                          │ spawn_blocking(job)
//!                                          ▼
//!                          authenticate (argon2 / token) ─▶ Service call
//!                                          │
//!  response ◀── JSON, or a body streamed from a bounded channel ◀─┘
//! ```
//!
//! Why this shape:
//!
//! - **Handlers never block.** Authentication (argon2, slow on purpose)
//!   and every `Service` call (a commit waits for the group fsync) run in
//!   one job on the runtime's blocking pool, the same worker pool the
//!   native listener uses; the handler only translates bytes to arguments
//!   and answers to JSON.
//! - **A malformed request changes nothing.** Path, query and body are
//!   parsed and checked before the job runs; every mistake is a 400 with
//!   the same JSON error body as every other failure. Bodies are read as
//!   bytes and parsed with serde_json here (axum's `Json` extractor would
//!   answer 415/422 with a text body), and read through a limit of
//!   `max_document_bytes`: a body is refused with 413 as soon as its
//!   declared length, or its bytes so far, pass it. What is left of a
//!   refused body is read off and dropped (within bounds), because
//!   closing a socket with unread input resets it, and a client that
//!   writes its whole body before reading would see the reset instead of
//!   the answer.
//! - **Attachments stream both ways.** An upload's body is forwarded chunk
//!   by chunk over a small bounded channel to the job, which reads it as a
//!   `std::io::Read`; a full channel stops the handler reading the socket,
//!   so TCP flow control slows the client down instead of the server
//!   buffering a file. A body that ends early (the client went away)
//!   makes the reader fail, so a truncated attachment is never committed.
//!   A download is read a chunk at a time by the job and sent over a
//!   bounded channel into the response body. Searches stream the same way,
//!   as NDJSON.
//! - **Errors before streaming are real statuses.** A streaming job
//!   reports its first event before the response starts: a failure there
//!   (no access, bad formula, missing attachment) is an ordinary error
//!   answer; only a failure after the first byte is reported in-band (a
//!   last NDJSON line) or by cutting the body short.
//! - **One error vocabulary.** `ServerError::code()` is the status: the
//!   codes below 1000 are HTTP statuses, so the native protocol and this
//!   API answer the same mistake the same way. An anonymous caller refused
//!   for lack of rights gets 401 with `WWW-Authenticate`, since signing in
//!   may help; a named one gets 403.
//!
//! ```text
//!   mod.rs          the routes table
//!   extract.rs      what a handler starts from: credentials, path, query, body
//!   answer.rs       error answers and JSON responses
//!   stream.rs       answers fed by a job as it goes (downloads, searches)
//!   databases.rs    list, create, describe
//!   documents.rs    create, read, update, delete, changes
//!   feed.rs         the change feed: longpoll and continuous (NDJSON)
//!   attachments.rs  streamed upload and download
//!   views.rs        views, folders, searches
//!   admin.rs        root, sign-in, statistics, ACLs, the caller's access
//!   mail_users.rs   mail users: create, list, remove; the mail queue (administrators)
//!   users.rs        server users: list, add, password, remove, tokens (administrators)
//!   unread.rs       `Connection: close` on an answer that left the body unread
//!   archive.rs      archiving the transaction log
//!   mail.rs         sending mail as the signed-in user (JSON, or a form with files)
//!   multipart.rs    multipart/form-data bodies, read whole
//!   calendar.rs     meetings as the signed-in user
//!   backup.rs       online backup
//!   fixup.rs        fixup of one database (administrators)
//!   observe.rs      what monitoring reads: /metrics, /_stats/history
//!   console.rs      the console's page and assets, compiled in
//!   couch/          the CouchDB door, on a listener of its own (`couchdb_listen`)
//! ```

mod admin;
mod answer;
mod archive;
mod attachments;
mod backup;
mod calendar;
mod compact;
mod console;
mod couch;
mod databases;
mod documents;
mod extract;
mod feed;
mod fixup;
mod mail;
mod mail_users;
mod multipart;
mod observe;
mod replicate;
mod stream;
mod unread;
mod users;
mod views;

use crate::service::Service;
use answer::{no_route, wrong_method};
use axum::extract::{Request, State};
use axum::middleware::Next;
use axum::response::Response;
use axum::routing::{delete, get, post, put};
use axum::Router;
use std::sync::Arc;

pub use crate::http_conn::{serve, HttpSettings};
pub use couch::serve_couch;

/// The routes of the API, over `service`, as `settings` configure them;
/// `tls` says whether the listener has TLS (session cookies are then
/// `Secure`).
pub fn router(service: Arc<Service>, settings: &HttpSettings, tls: bool) -> Router {
    let mut routes = Router::new()
        .route("/", get(admin::root))
        .route("/metrics", get(observe::metrics))
        .route("/_stats/history", get(observe::history))
        .route(
            "/_session",
            post(admin::login)
                .get(admin::session_info)
                .delete(admin::logout),
        )
        .route("/stats", get(admin::statistics))
        .route("/admin/archive", post(archive::archive))
        .route("/admin/backup", post(backup::backup))
        .route("/admin/backups", get(backup::history))
        .route("/admin/replication/{name}/run", post(replicate::run_entry))
        .route("/dbs", get(databases::list_databases))
        .route("/mail/send", post(mail::send))
        .route("/mail/meetings", post(calendar::create))
        .route("/mail/meetings/{apptunid}", get(calendar::read))
        .route("/mail/meetings/{apptunid}/respond", post(calendar::respond))
        .route(
            "/mail/meetings/{apptunid}/reschedule",
            post(calendar::reschedule),
        )
        .route("/mail/meetings/{apptunid}/cancel", post(calendar::cancel))
        .route(
            "/db/{db}",
            get(databases::database_info)
                .put(databases::create_database)
                .delete(databases::delete_database),
        )
        .route("/db/{db}/_access", get(admin::my_access))
        .route("/db/{db}/_copy", post(databases::copy_database))
        .route("/db/{db}/compact", post(compact::compact))
        .route("/db/{db}/fixup", post(fixup::fixup))
        .route("/db/{db}/_replicate", post(replicate::replicate))
        .route("/db/{db}/_acl", get(admin::get_acl).put(admin::set_acl))
        .route(
            "/db/{db}/docs",
            get(documents::changes).post(documents::create_document),
        )
        .route(
            "/db/{db}/docs/{unid}",
            get(documents::read_document)
                .put(documents::update_document)
                .delete(documents::delete_document),
        )
        .route(
            "/db/{db}/docs/{unid}/attachments/{name}",
            get(attachments::get_attachment)
                .put(attachments::put_attachment)
                .delete(attachments::delete_attachment),
        )
        .route(
            "/db/{db}/views",
            get(views::list_views).post(views::create_view),
        )
        .route(
            "/db/{db}/views/{name}",
            get(views::read_view).delete(views::delete_view),
        )
        .route("/db/{db}/views/{name}/find", get(views::find_in_view))
        .route("/db/{db}/views/{name}/update", post(views::update_view))
        .route("/db/{db}/views/{name}/rebuild", post(views::rebuild_view))
        .route("/db/{db}/folders/{name}/rebuild", post(views::rebuild_view))
        .route(
            "/db/{db}/folders/{name}",
            get(views::read_view).delete(views::delete_view),
        )
        .route("/db/{db}/folders/{name}/add", post(views::folder_add))
        .route("/db/{db}/folders/{name}/remove", post(views::folder_remove))
        .route("/db/{db}/search", post(views::search))
        .route(
            "/mail/users",
            get(mail_users::list_users).post(mail_users::create_user),
        )
        .route("/mail/users/{name}", delete(mail_users::remove_user))
        .route("/mail/queue", get(mail_users::queue))
        .route("/_users", get(users::list_users).post(users::add_user))
        .route("/_users/{name}", delete(users::remove_user))
        .route("/_users/{name}/password", put(users::set_password))
        .route("/_users/{name}/tokens", post(users::create_token))
        .route("/_users/{name}/tokens/{label}", delete(users::revoke_token));
    if settings.console {
        routes = routes
            .route("/_console", get(console::redirect))
            .route("/_console/", get(console::index))
            .route("/_console/{file}", get(console::file));
    }
    routes
        .fallback(no_route)
        .method_not_allowed_fallback(wrong_method)
        .layer(axum::Extension(observe::Observers::new(
            &settings.metrics_users,
        )))
        .layer(axum::Extension(admin::SecureCookies(tls)))
        .layer(axum::middleware::from_fn(unread::close_if_unread))
        .layer(axum::middleware::from_fn(console::no_browser_prompt))
        .layer(axum::middleware::from_fn_with_state(
            service.clone(),
            count_request,
        ))
        .with_state(service)
}

/// Counts every request, routed or not.
async fn count_request(State(s): State<Arc<Service>>, req: Request, next: Next) -> Response {
    s.stats().http_request();
    next.run(req).await
}
