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

use crate::service::{Caller, DocWrite, Service, WriteDone};
use crate::stats::Op;
use crate::upload::{Piece, UploadReader, UPLOAD_QUEUE};
use crate::{ServerError, ServerResult};
use axum::body::{Body, BodyDataStream, Bytes};
use axum::extract::{FromRequestParts, Query, RawPathParams, Request, State};
use axum::http::request::Parts;
use axum::http::{header, HeaderMap, HeaderValue, Method, StatusCode, Uri};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::Router;
use base64::Engine as _;
use bytes::BytesMut;
use futures_util::StreamExt;
use nsf::Database;
use protocol::{Document, NoteMeta, ReadFlags, Start, Unid};
use serde_json::{json, Map, Value as Json};
use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::sync::mpsc;

pub use crate::http_conn::{serve, HttpSettings};

/// Bytes of an attachment read from storage per body chunk.
const DOWNLOAD_CHUNK: usize = 256 << 10;
/// Chunks waiting to be written to the client, per streamed response.
const DOWNLOAD_QUEUE: usize = 8;
/// Search results are sent to the client in batches of about this size.
const SEARCH_BATCH: usize = 32 << 10;
/// Rows a view read returns when the query does not say.
const DEFAULT_VIEW_ROWS: u32 = 40;
/// Documents a change listing returns when the query does not say.
const DEFAULT_CHANGES: u32 = 100;
/// Most bytes of a refused request's body read and dropped (see
/// `discard_rest`), and for how long.
const DISCARD_MAX: usize = 16 << 20;
const DISCARD_TIME: Duration = Duration::from_secs(5);
/// The realm named in `WWW-Authenticate`.
const REALM: &str = "Basic realm=\"folio\"";

/// The routes of the API, over `service`.
pub fn router(service: Arc<Service>) -> Router {
    Router::new()
        .route("/", get(root))
        .route("/_session", post(login))
        .route("/stats", get(statistics))
        .route("/dbs", get(list_databases))
        .route("/db/{db}", get(database_info).put(create_database))
        .route("/db/{db}/_access", get(my_access))
        .route("/db/{db}/_acl", get(get_acl).put(set_acl))
        .route("/db/{db}/docs", get(changes).post(create_document))
        .route(
            "/db/{db}/docs/{unid}",
            get(read_document)
                .put(update_document)
                .delete(delete_document),
        )
        .route(
            "/db/{db}/docs/{unid}/attachments/{name}",
            get(get_attachment).put(put_attachment),
        )
        .route("/db/{db}/views", post(create_view))
        .route("/db/{db}/views/{name}", get(read_view))
        .route("/db/{db}/views/{name}/find", get(find_in_view))
        .route("/db/{db}/views/{name}/update", post(update_view))
        .route("/db/{db}/folders/{name}", get(read_view))
        .route("/db/{db}/folders/{name}/add", post(folder_add))
        .route("/db/{db}/folders/{name}/remove", post(folder_remove))
        .route("/db/{db}/search", post(search))
        .fallback(no_route)
        .method_not_allowed_fallback(wrong_method)
        .layer(axum::middleware::from_fn_with_state(
            service.clone(),
            count_request,
        ))
        .with_state(service)
}

// --------------------------------------------------------------- errors

/// An error answer: its status and the JSON body every failure carries.
#[derive(Debug)]
struct ApiError {
    status: StatusCode,
    reason: String,
}

impl ApiError {
    fn new(status: StatusCode, reason: impl Into<String>) -> ApiError {
        ApiError {
            status,
            reason: reason.into(),
        }
    }
}

impl From<ServerError> for ApiError {
    fn from(e: ServerError) -> ApiError {
        let status = StatusCode::from_u16(e.code().as_u16())
            .ok()
            .filter(|s| s.is_client_error() || s.is_server_error())
            .unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
        ApiError::new(status, e.to_string())
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let mut r = json_response(self.status, &error_body(self.status, &self.reason));
        let h = r.headers_mut();
        match self.status {
            StatusCode::UNAUTHORIZED => {
                h.insert(header::WWW_AUTHENTICATE, HeaderValue::from_static(REALM));
            }
            // The log frees space as soon as a checkpoint runs.
            StatusCode::SERVICE_UNAVAILABLE => {
                h.insert(header::RETRY_AFTER, HeaderValue::from_static("1"));
            }
            _ => {}
        }
        r
    }
}

fn error_body(status: StatusCode, reason: &str) -> Json {
    json!({
        "error": error_name(status),
        "code": status.as_u16(),
        "reason": reason,
    })
}

/// The name in an error body: the protocol's name for the code.
fn error_name(status: StatusCode) -> &'static str {
    match status.as_u16() {
        400 => "bad_request",
        401 => "unauthenticated",
        403 => "forbidden",
        404 => "not_found",
        405 => "method_not_allowed",
        409 => "save_conflict",
        413 => "too_large",
        503 => "busy",
        _ => "server_error",
    }
}

fn bad(reason: impl Into<String>) -> ApiError {
    ApiError::new(StatusCode::BAD_REQUEST, reason)
}

async fn no_route(method: Method, uri: Uri) -> ApiError {
    ApiError::new(
        StatusCode::NOT_FOUND,
        format!("no such route: {method} {}", uri.path()),
    )
}

async fn wrong_method(method: Method, uri: Uri) -> ApiError {
    ApiError::new(
        StatusCode::METHOD_NOT_ALLOWED,
        format!("{} does not take {method}", uri.path()),
    )
}

/// Counts every request, routed or not.
async fn count_request(State(s): State<Arc<Service>>, req: Request, next: Next) -> Response {
    s.stats().http_request();
    next.run(req).await
}

// ------------------------------------------------------------- requests

/// Who the request says it is, checked on the worker thread.
#[derive(Clone, Debug)]
enum Credentials {
    Anonymous,
    /// `Basic base64(user:secret)`; the secret is a password or a token.
    Basic {
        user: String,
        secret: String,
    },
    Bearer(String),
}

impl Credentials {
    fn from_headers(headers: &HeaderMap) -> Result<Credentials, ApiError> {
        let Some(value) = headers.get(header::AUTHORIZATION) else {
            return Ok(Credentials::Anonymous);
        };
        let malformed = |why: &str| {
            ApiError::new(
                StatusCode::UNAUTHORIZED,
                format!("malformed Authorization header: {why}"),
            )
        };
        let value = value.to_str().map_err(|_| malformed("not ASCII"))?.trim();
        let (scheme, rest) = value.split_once(' ').unwrap_or((value, ""));
        let rest = rest.trim();
        if rest.is_empty() {
            return Err(malformed("no credentials after the scheme"));
        }
        if scheme.eq_ignore_ascii_case("bearer") {
            return Ok(Credentials::Bearer(rest.to_string()));
        }
        if !scheme.eq_ignore_ascii_case("basic") {
            return Err(malformed("expected Basic or Bearer"));
        }
        let decoded = base64::engine::general_purpose::STANDARD
            .decode(rest)
            .map_err(|_| malformed("Basic credentials are not base64"))?;
        let decoded =
            String::from_utf8(decoded).map_err(|_| malformed("Basic credentials are not UTF-8"))?;
        let (user, secret) = decoded
            .split_once(':')
            .ok_or_else(|| malformed("Basic credentials lack the ':' between name and password"))?;
        Ok(Credentials::Basic {
            user: user.to_string(),
            secret: secret.to_string(),
        })
    }

    /// The caller these credentials prove (blocking: argon2).
    fn caller(&self, s: &Service) -> ServerResult<Caller> {
        match self {
            Credentials::Anonymous => Ok(Caller::anonymous()),
            Credentials::Basic { user, secret } => s.authenticate(user, secret),
            Credentials::Bearer(token) => s.authenticate_token(token),
        }
    }
}

/// What every handler starts from: path parameters, query, credentials
/// and headers, all checked for form before any work is done.
struct Call {
    params: HashMap<String, String>,
    query: QueryArgs,
    credentials: Credentials,
    headers: HeaderMap,
}

impl<S: Send + Sync> FromRequestParts<S> for Call {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Call, ApiError> {
        let params = match RawPathParams::from_request_parts(parts, state).await {
            Ok(p) => p
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
            Err(axum::extract::rejection::RawPathParamsRejection::MissingPathParams(_)) => {
                HashMap::new()
            }
            Err(e) => return Err(bad(e.body_text())),
        };
        Ok(Call {
            params,
            query: QueryArgs::parse(&parts.uri)?,
            credentials: Credentials::from_headers(&parts.headers)?,
            headers: parts.headers.clone(),
        })
    }
}

impl Call {
    /// A path parameter (present by the route's definition).
    fn param(&self, name: &str) -> String {
        self.params.get(name).cloned().unwrap_or_default()
    }

    /// The `{unid}` path parameter.
    fn unid(&self) -> Result<Unid, ApiError> {
        parse_unid(&self.param("unid"))
    }

    /// Runs `job` on the worker pool as the authenticated caller and
    /// records its time under `op`.
    async fn run<T, F>(&self, s: &Arc<Service>, op: Op, job: F) -> Result<T, ApiError>
    where
        T: Send + 'static,
        F: FnOnce(&Service, &Caller) -> ServerResult<T> + Send + 'static,
    {
        let (s, credentials) = (s.clone(), self.credentials.clone());
        let work = move || {
            let started = Instant::now();
            let r = as_caller(&s, &credentials, job);
            s.stats().record(op, started.elapsed(), r.is_ok());
            r
        };
        let failed = |e: &dyn std::fmt::Display| {
            ApiError::new(
                StatusCode::INTERNAL_SERVER_ERROR,
                format!("the request failed: {e}"),
            )
        };
        if op == Op::PutAttachment {
            // Bulk work, at a lower CPU priority (upload::spawn_bulk).
            let (tx, rx) = tokio::sync::oneshot::channel();
            crate::upload::spawn_bulk(move || {
                let _ = tx.send(work());
            });
            return match rx.await {
                Ok(r) => r.map_err(ApiError::from),
                Err(e) => Err(failed(&e)),
            };
        }
        match tokio::task::spawn_blocking(work).await {
            Ok(r) => r.map_err(ApiError::from),
            Err(e) => Err(failed(&e)),
        }
    }
}

impl Call {
    /// Runs a document write as the authenticated caller without a worker
    /// thread (`Service::write_then`): checked and queued on this task,
    /// answered when durable. Basic credentials may need a password hash,
    /// so those are checked, and the write queued, on the blocking pool.
    async fn write(
        &self,
        s: &Arc<Service>,
        op: Op,
        path: String,
        write: DocWrite,
    ) -> Result<NoteMeta, ApiError> {
        let started = Instant::now();
        let (tx, rx) = tokio::sync::oneshot::channel();
        let begin = {
            let (s, credentials) = (s.clone(), self.credentials.clone());
            move || {
                let caller = match credentials.caller(&s) {
                    Ok(c) => c,
                    Err(e) => return drop(tx.send(Err(e))),
                };
                let anonymous = caller.user.is_none() && !caller.admin;
                let done: WriteDone = Box::new(move |r| {
                    let _ = tx.send(r.map_err(|e| sign_in(e, anonymous)));
                });
                match open_db(&s, &caller, &path) {
                    Ok(db) => s.write_then(&caller, &db, write, done),
                    Err(e) => done(Err(e)),
                }
            }
        };
        if matches!(self.credentials, Credentials::Basic { .. }) {
            drop(tokio::task::spawn_blocking(begin));
        } else {
            begin();
        }
        let r = rx
            .await
            .unwrap_or_else(|_| Err(ServerError::Internal("the write was dropped".into())));
        s.stats().record(op, started.elapsed(), r.is_ok());
        r.map_err(ApiError::from)
    }
}

/// An anonymous caller refused for lack of rights is asked to sign in.
fn sign_in(e: ServerError, anonymous: bool) -> ServerError {
    match e {
        ServerError::Forbidden(m) if anonymous => {
            ServerError::Unauthenticated(format!("{m}; sign in"))
        }
        e => e,
    }
}

/// Authenticates, then runs `job`; an anonymous caller refused for lack
/// of rights is asked to sign in (401) rather than told no (403).
fn as_caller<T>(
    s: &Service,
    credentials: &Credentials,
    job: impl FnOnce(&Service, &Caller) -> ServerResult<T>,
) -> ServerResult<T> {
    let caller = credentials.caller(s)?;
    let anonymous = caller.user.is_none() && !caller.admin;
    job(s, &caller).map_err(|e| sign_in(e, anonymous))
}

/// The query string's parameters; each handler names the ones it takes,
/// and any other is a mistake worth reporting (a misspelt `limit` must
/// not silently mean the default).
struct QueryArgs(HashMap<String, String>);

impl QueryArgs {
    fn parse(uri: &Uri) -> Result<QueryArgs, ApiError> {
        let Query(pairs) = Query::<Vec<(String, String)>>::try_from_uri(uri)
            .map_err(|e| bad(format!("malformed query string: {}", e.body_text())))?;
        let mut map = HashMap::new();
        for (k, v) in pairs {
            if map.insert(k.clone(), v).is_some() {
                return Err(bad(format!("query parameter {k:?} is given twice")));
            }
        }
        Ok(QueryArgs(map))
    }

    /// Refuses parameters other than `allowed`.
    fn allow(&self, allowed: &[&str]) -> Result<(), ApiError> {
        match self.0.keys().find(|k| !allowed.contains(&k.as_str())) {
            None => Ok(()),
            Some(k) if allowed.is_empty() => Err(bad(format!(
                "unknown query parameter {k:?}: this route takes none"
            ))),
            Some(k) => Err(bad(format!(
                "unknown query parameter {k:?}: this route takes {}",
                allowed.join(", ")
            ))),
        }
    }

    fn text(&self, key: &str) -> Option<String> {
        self.0.get(key).cloned()
    }

    fn number<N: std::str::FromStr>(&self, key: &str) -> Result<Option<N>, ApiError> {
        self.0
            .get(key)
            .map(|v| {
                v.parse().map_err(|_| {
                    bad(format!(
                        "query parameter {key}={v:?}: expected a non-negative whole number in range"
                    ))
                })
            })
            .transpose()
    }

    fn flag(&self, key: &str) -> Result<bool, ApiError> {
        match self.0.get(key).map(String::as_str) {
            None | Some("false") => Ok(false),
            Some("true") => Ok(true),
            Some(v) => Err(bad(format!(
                "query parameter {key}={v:?}: expected true or false"
            ))),
        }
    }
}

fn parse_unid(s: &str) -> Result<Unid, ApiError> {
    s.parse::<nsf::Unid>()
        .map(|u| Unid(u.0))
        .map_err(|e| bad(e.to_string()))
}

/// Reads a body of at most `max` bytes; a larger one is refused as soon
/// as its declared length (or its bytes so far) says so.
async fn read_body(headers: &HeaderMap, body: Body, max: usize) -> Result<Bytes, ApiError> {
    let too_large = |n: u64| {
        ApiError::from(ServerError::TooLarge(format!(
            "request body of {n} bytes or more is above the limit of {max} bytes"
        )))
    };
    let mut stream = body.into_data_stream();
    if let Some(n) = content_length(headers)?.filter(|n| *n > max as u64) {
        discard_rest(headers, stream);
        return Err(too_large(n));
    }
    let mut buf = BytesMut::new();
    while let Some(chunk) = stream.next().await {
        let chunk = chunk.map_err(|e| bad(format!("the request body could not be read: {e}")))?;
        if buf.len() + chunk.len() > max {
            let n = (buf.len() + chunk.len()) as u64;
            discard_rest(headers, stream);
            return Err(too_large(n));
        }
        buf.extend_from_slice(&chunk);
    }
    Ok(buf.freeze())
}

/// Reads and drops what is left of a refused request's body, in the
/// background and within bounds, so that a client writing its whole body
/// before it reads the answer gets the answer, not a connection reset
/// (closing a socket with unread input resets it). A client that sent
/// `Expect: 100-continue` was never asked for its body: nothing to read.
fn discard_rest(headers: &HeaderMap, mut rest: BodyDataStream) {
    let expects_continue = headers
        .get(header::EXPECT)
        .is_some_and(|v| v.as_bytes().eq_ignore_ascii_case(b"100-continue"));
    if expects_continue {
        return;
    }
    tokio::spawn(async move {
        let mut left = DISCARD_MAX;
        let drain = async {
            while let Some(Ok(chunk)) = rest.next().await {
                left = left.saturating_sub(chunk.len());
                if left == 0 {
                    return;
                }
            }
        };
        let _ = tokio::time::timeout(DISCARD_TIME, drain).await;
    });
}

fn content_length(headers: &HeaderMap) -> Result<Option<u64>, ApiError> {
    headers
        .get(header::CONTENT_LENGTH)
        .map(|v| {
            v.to_str()
                .ok()
                .and_then(|v| v.trim().parse::<u64>().ok())
                .ok_or_else(|| bad("malformed Content-Length header"))
        })
        .transpose()
}

/// A JSON body that must be an object.
fn parse_object(bytes: &[u8], what: &str) -> Result<Map<String, Json>, ApiError> {
    match serde_json::from_slice::<Json>(bytes) {
        Ok(Json::Object(m)) => Ok(m),
        Ok(_) => Err(bad(format!("{what} must be a JSON object"))),
        Err(e) => Err(bad(format!("malformed JSON in {what}: {e}"))),
    }
}

/// A body as text (documents and ACLs are handed on as JSON text).
fn body_text(bytes: Bytes) -> Result<String, ApiError> {
    String::from_utf8(Vec::from(bytes)).map_err(|_| bad("the request body is not UTF-8"))
}

/// Refuses keys of a JSON body other than `allowed`.
fn only_keys(m: &Map<String, Json>, allowed: &[&str], what: &str) -> Result<(), ApiError> {
    match m.keys().find(|k| !allowed.contains(&k.as_str())) {
        None => Ok(()),
        Some(k) => Err(bad(format!(
            "unknown field {k:?} in {what}; expected {}",
            allowed.join(", ")
        ))),
    }
}

fn string_field(m: &Map<String, Json>, key: &str, what: &str) -> Result<Option<String>, ApiError> {
    match m.get(key) {
        None | Some(Json::Null) => Ok(None),
        Some(Json::String(s)) => Ok(Some(s.clone())),
        Some(_) => Err(bad(format!("{key:?} in {what} must be a string"))),
    }
}

/// The sequence number an edit is based on: `$seq` in the body or the
/// `If-Match` header (`"N"`); both, if given, must agree.
fn based_on(headers: &HeaderMap, body_seq: Option<&Json>) -> Result<Option<u32>, ApiError> {
    let from_body = match body_seq {
        None | Some(Json::Null) => None,
        Some(v) => Some(
            v.as_u64()
                .and_then(|n| u32::try_from(n).ok())
                .ok_or_else(|| bad("\"$seq\" must be a document's sequence number"))?,
        ),
    };
    let from_header = match headers.get(header::IF_MATCH) {
        None => None,
        Some(v) => Some(
            v.to_str()
                .ok()
                .map(|v| v.trim().trim_matches('"'))
                .and_then(|v| v.parse::<u32>().ok())
                .ok_or_else(|| bad("If-Match must be a sequence number, e.g. \"3\""))?,
        ),
    };
    match (from_body, from_header) {
        (Some(a), Some(b)) if a != b => {
            Err(bad(format!("\"$seq\" ({a}) and If-Match ({b}) disagree")))
        }
        (a, b) => Ok(a.or(b)),
    }
}

/// Opens a database the caller has some access to.
fn open_db(s: &Service, caller: &Caller, path: &str) -> ServerResult<Arc<Database>> {
    s.open_database(caller, path).map(|(db, _)| db)
}

// ------------------------------------------------------------ responses

fn json_response(status: StatusCode, body: &Json) -> Response {
    json_text(status, body.to_string())
}

fn json_text(status: StatusCode, text: String) -> Response {
    (status, [(header::CONTENT_TYPE, "application/json")], text).into_response()
}

fn ok(body: Json) -> Response {
    json_response(StatusCode::OK, &body)
}

/// Percent-encodes one path segment (database paths keep their slashes
/// inside one segment: `mail%2Falice.fdb`).
fn encode_segment(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~') {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

fn with_header(mut r: Response, name: header::HeaderName, value: &str) -> Response {
    if let Ok(v) = HeaderValue::from_str(value) {
        r.headers_mut().insert(name, v);
    }
    r
}

fn etag(seq: u32) -> String {
    format!("\"{seq}\"")
}

fn meta_json(m: &NoteMeta) -> Json {
    json!({
        "unid": m.unid.to_string(),
        "seq": m.seq_num,
        "note_id": m.note_id.0,
        "change": m.change.0,
    })
}

fn saved(status: StatusCode, m: &NoteMeta) -> Response {
    with_header(
        json_response(status, &meta_json(m)),
        header::ETAG,
        &etag(m.seq_num),
    )
}

/// A document as JSON text: its items and `$` system fields; a deletion
/// stub is its system fields and `"$deleted": true`.
fn document_text(d: &Document) -> String {
    if !d.deleted {
        return d.json.clone();
    }
    json!({
        "$unid": d.meta.unid.to_string(),
        "$noteid": d.meta.note_id.0,
        "$seq": d.meta.seq_num,
        "$changeseq": d.meta.change.0,
        "$deleted": true,
    })
    .to_string()
}

// ------------------------------------------------------------- handlers

type Answer = Result<Response, ApiError>;
type Svc = State<Arc<Service>>;

async fn root(State(s): Svc, c: Call) -> Answer {
    c.query.allow(&[])?;
    let user = c
        .run(&s, Op::Admin, |_, caller| Ok(caller.user.clone()))
        .await?;
    Ok(ok(json!({
        "server": "folio",
        "version": env!("CARGO_PKG_VERSION"),
        "user": user,
    })))
}

async fn login(State(s): Svc, c: Call, body: Body) -> Answer {
    c.query.allow(&[])?;
    let bytes = read_body(&c.headers, body, s.limits().max_document_bytes).await?;
    let m = parse_object(&bytes, "the login")?;
    only_keys(&m, &["user", "password"], "the login")?;
    let user = string_field(&m, "user", "the login")?.ok_or_else(|| bad("\"user\" is missing"))?;
    let password =
        string_field(&m, "password", "the login")?.ok_or_else(|| bad("\"password\" is missing"))?;
    let session = Call {
        credentials: Credentials::Anonymous,
        ..c
    };
    let (caller, token) = session
        .run(&s, Op::Login, move |s, _| s.login(&user, &password))
        .await?;
    Ok(ok(json!({
        "token": token,
        "user": caller.user,
        "admin": caller.admin,
    })))
}

async fn statistics(State(s): Svc, c: Call) -> Answer {
    c.query.allow(&[])?;
    let stats = c
        .run(&s, Op::Admin, |s, caller| s.statistics(caller))
        .await?;
    let map: Map<String, Json> = stats
        .into_iter()
        .map(|st| {
            let v = match st.value {
                protocol::StatValue::Count(n) => json!(n),
                protocol::StatValue::Gauge(g) => json!(g),
                protocol::StatValue::Text(t) => json!(t),
            };
            (st.name, v)
        })
        .collect();
    Ok(ok(Json::Object(map)))
}

async fn list_databases(State(s): Svc, c: Call) -> Answer {
    c.query.allow(&["folder"])?;
    let folder = c.query.text("folder");
    let dbs = c
        .run(&s, Op::Database, move |s, caller| {
            s.list_databases(caller, folder.as_deref())
        })
        .await?;
    let list: Vec<Json> = dbs
        .iter()
        .map(|d| json!({"path": d.path, "title": d.title}))
        .collect();
    Ok(ok(Json::Array(list)))
}

async fn create_database(State(s): Svc, c: Call, body: Body) -> Answer {
    c.query.allow(&[])?;
    let bytes = read_body(&c.headers, body, s.limits().max_document_bytes).await?;
    let title = if bytes.iter().all(u8::is_ascii_whitespace) {
        String::new()
    } else {
        let m = parse_object(&bytes, "the database description")?;
        only_keys(&m, &["title"], "the database description")?;
        string_field(&m, "title", "the database description")?.unwrap_or_default()
    };
    let path = c.param("db");
    let info = c
        .run(&s, Op::Database, move |s, caller| {
            s.create_database(caller, &path, &title)
        })
        .await?;
    let location = format!("/db/{}", encode_segment(&info.path));
    Ok(with_header(
        json_response(StatusCode::CREATED, &crate::json::database_info(&info)),
        header::LOCATION,
        &location,
    ))
}

async fn database_info(State(s): Svc, c: Call) -> Answer {
    c.query.allow(&[])?;
    let path = c.param("db");
    let info = c
        .run(&s, Op::Database, move |s, caller| {
            s.database_info(caller, &path)
        })
        .await?;
    Ok(ok(crate::json::database_info(&info)))
}

async fn my_access(State(s): Svc, c: Call) -> Answer {
    c.query.allow(&[])?;
    let path = c.param("db");
    let (user, level, roles) = c
        .run(&s, Op::Admin, move |s, caller| s.my_access(caller, &path))
        .await?;
    Ok(ok(json!({"user": user, "level": level, "roles": roles})))
}

async fn get_acl(State(s): Svc, c: Call) -> Answer {
    c.query.allow(&[])?;
    let path = c.param("db");
    let acl = c
        .run(&s, Op::Admin, move |s, caller| s.get_acl(caller, &path))
        .await?;
    Ok(json_text(StatusCode::OK, acl))
}

async fn set_acl(State(s): Svc, c: Call, body: Body) -> Answer {
    c.query.allow(&[])?;
    let bytes = read_body(&c.headers, body, s.limits().max_document_bytes).await?;
    parse_object(&bytes, "the access-control list")?;
    let json = body_text(bytes)?;
    let path = c.param("db");
    let acl = c
        .run(&s, Op::Admin, move |s, caller| {
            s.set_acl(caller, &path, &json)?;
            s.get_acl(caller, &path)
        })
        .await?;
    Ok(json_text(StatusCode::OK, acl))
}

async fn create_document(State(s): Svc, c: Call, body: Body) -> Answer {
    c.query.allow(&[])?;
    let bytes = read_body(&c.headers, body, s.limits().max_document_bytes).await?;
    parse_object(&bytes, "a document")?;
    let json = body_text(bytes)?;
    let meta = c
        .write(&s, Op::Create, c.param("db"), DocWrite::Create { json })
        .await?;
    let location = format!("/db/{}/docs/{}", encode_segment(&c.param("db")), meta.unid);
    Ok(with_header(
        saved(StatusCode::CREATED, &meta),
        header::LOCATION,
        &location,
    ))
}

async fn read_document(State(s): Svc, c: Call) -> Answer {
    c.query.allow(&[])?;
    let unid = c.unid()?;
    let path = c.param("db");
    let doc = c
        .run(&s, Op::Read, move |s, caller| {
            let db = open_db(s, caller, &path)?;
            s.read_document(caller, &db, protocol::DocRef::Unid(unid))
        })
        .await?;
    Ok(with_header(
        json_text(StatusCode::OK, document_text(&doc)),
        header::ETAG,
        &etag(doc.meta.seq_num),
    ))
}

async fn changes(State(s): Svc, c: Call) -> Answer {
    c.query.allow(&["since", "limit"])?;
    let since = protocol::Cursor(c.query.number("since")?.unwrap_or(0));
    let limit = c.query.number("limit")?.unwrap_or(DEFAULT_CHANGES);
    let path = c.param("db");
    let (docs, next, more) = c
        .run(&s, Op::Changes, move |s, caller| {
            let db = open_db(s, caller, &path)?;
            s.modified_since(caller, &db, since, limit)
        })
        .await?;
    let mut out = String::from("{\"docs\":[");
    for (i, d) in docs.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        out.push_str(&document_text(d));
    }
    out.push_str(&format!("],\"next\":{},\"more\":{more}}}", next.0));
    Ok(json_text(StatusCode::OK, out))
}

async fn update_document(State(s): Svc, c: Call, body: Body) -> Answer {
    c.query.allow(&["force"])?;
    let force = c.query.flag("force")?;
    let unid = c.unid()?;
    let bytes = read_body(&c.headers, body, s.limits().max_document_bytes).await?;
    let m = parse_object(&bytes, "a document")?;
    let seq = based_on(&c.headers, m.get("$seq"))?;
    let json = body_text(bytes)?;
    let write = DocWrite::Update {
        unid,
        based_on: seq,
        force,
        json,
    };
    let meta = c.write(&s, Op::Update, c.param("db"), write).await?;
    Ok(saved(StatusCode::OK, &meta))
}

async fn delete_document(State(s): Svc, c: Call) -> Answer {
    c.query.allow(&["seq", "force"])?;
    let force = c.query.flag("force")?;
    let unid = c.unid()?;
    let seq = c.query.number::<u32>("seq")?.map(|n| json!(n));
    let seq = based_on(&c.headers, seq.as_ref())?;
    let write = DocWrite::Delete {
        unid,
        based_on: seq,
        force,
    };
    let meta = c.write(&s, Op::Delete, c.param("db"), write).await?;
    Ok(ok(meta_json(&meta)))
}

// ---------------------------------------------------------- attachments

async fn put_attachment(State(s): Svc, c: Call, body: Body) -> Answer {
    c.query.allow(&[])?;
    let unid = c.unid()?;
    let name = c.param("name");
    if name.is_empty() {
        return Err(bad("an attachment needs a name"));
    }
    let size = content_length(&c.headers)?;
    let mime = match c.headers.get(header::CONTENT_TYPE) {
        None => "application/octet-stream".to_string(),
        Some(v) => v
            .to_str()
            .map_err(|_| bad("malformed Content-Type header"))?
            .to_string(),
    };
    let path = c.param("db");
    let (tx, rx) = mpsc::channel(UPLOAD_QUEUE);
    let job = c.run(&s, Op::PutAttachment, move |s, caller| {
        let db = open_db(s, caller, &path)?;
        let mut content = UploadReader::new(rx);
        s.put_attachment(caller, &db, unid, &name, &mime, size, &mut content)
    });
    tokio::pin!(job);
    let mut stream = body.into_data_stream();
    // The job may answer before the body ends (413, 404): stop feeding it.
    let stored = tokio::select! {
        r = &mut job => r,
        () = feed_upload(&mut stream, tx) => job.await,
    };
    if stored.is_err() {
        discard_rest(&c.headers, stream);
    }
    Ok(json_response(
        StatusCode::CREATED,
        &json!({"size": stored?}),
    ))
}

/// Forwards a request body to its job; ends without `End` if the body
/// fails (the client went away), so the job's reader fails too.
async fn feed_upload(stream: &mut BodyDataStream, tx: mpsc::Sender<Piece>) {
    while let Some(chunk) = stream.next().await {
        match chunk {
            Ok(data) if data.is_empty() => {}
            Ok(data) => {
                if tx.send(Piece::Data(data)).await.is_err() {
                    return;
                }
            }
            Err(e) => {
                tracing::info!("HTTP upload aborted: {e}");
                return;
            }
        }
    }
    let _ = tx.send(Piece::End).await;
}

async fn get_attachment(State(s): Svc, c: Call) -> Answer {
    c.query.allow(&[])?;
    let unid = c.unid()?;
    let (path, name) = (c.param("db"), c.param("name"));
    let (tx, rx) = mpsc::channel(DOWNLOAD_QUEUE);
    stream_job(&s, &c, Op::GetAttachment, tx, move |s, caller, out| {
        let db = open_db(s, caller, &path)?;
        let mut r = s.open_attachment(caller, &db, unid, &name)?;
        let a = r.attachment().clone();
        out.start(a.mime.clone(), Some(a.size))?;
        let mut buf = vec![0u8; DOWNLOAD_CHUNK];
        loop {
            let n = nsf::read_full(&mut r, &mut buf)
                .map_err(|e| ServerError::Internal(format!("reading attachment {name:?}: {e}")))?;
            if n == 0 {
                return Ok(());
            }
            out.data(Bytes::copy_from_slice(&buf[..n]))?;
        }
    });
    streamed(rx, |e| Err(std::io::Error::other(e.to_string()))).await
}

// ------------------------------------------------------------ streaming

/// What a streaming job sends to the response it feeds.
enum Feed {
    /// The response may start: its content type and length, if known.
    Start {
        mime: String,
        size: Option<u64>,
    },
    Data(Bytes),
    Failed(ServerError),
}

/// A streaming job's side of the channel.
struct Out {
    tx: mpsc::Sender<Feed>,
    started: bool,
}

impl Out {
    fn send(&self, f: Feed) -> ServerResult<()> {
        self.tx
            .blocking_send(f)
            .map_err(|_| ServerError::Internal("the client went away".into()))
    }

    fn start(&mut self, mime: String, size: Option<u64>) -> ServerResult<()> {
        self.started = true;
        self.send(Feed::Start { mime, size })
    }

    fn data(&self, data: Bytes) -> ServerResult<()> {
        self.send(Feed::Data(data))
    }
}

/// Runs a streaming job on the worker pool; its time (to the last byte
/// handed over) is recorded under `op`. A failure is sent on as `Failed`.
fn stream_job<F>(s: &Arc<Service>, c: &Call, op: Op, tx: mpsc::Sender<Feed>, job: F)
where
    F: FnOnce(&Service, &Caller, &mut Out) -> ServerResult<()> + Send + 'static,
{
    let (s, credentials) = (s.clone(), c.credentials.clone());
    tokio::task::spawn_blocking(move || {
        let started = Instant::now();
        let mut out = Out { tx, started: false };
        let r = as_caller(&s, &credentials, |s, caller| job(s, caller, &mut out));
        s.stats().record(op, started.elapsed(), r.is_ok());
        if let Err(e) = r {
            let _ = out.send(Feed::Failed(e));
        }
    });
}

/// The response a streaming job feeds: an error answer if it fails before
/// starting; otherwise its data as the body, with a failure after the
/// start turned into a last body item by `late`.
async fn streamed(
    mut rx: mpsc::Receiver<Feed>,
    late: fn(ServerError) -> Result<Bytes, std::io::Error>,
) -> Answer {
    let (mime, size) = match rx.recv().await {
        Some(Feed::Start { mime, size }) => (mime, size),
        Some(Feed::Failed(e)) => return Err(e.into()),
        Some(Feed::Data(_)) | None => {
            return Err(
                ServerError::Internal("a streamed answer ended before it began".into()).into(),
            )
        }
    };
    let body = futures_util::stream::unfold(rx, move |mut rx| async move {
        let item = match rx.recv().await? {
            Feed::Data(b) => Ok(b),
            Feed::Failed(e) => late(e),
            Feed::Start { .. } => Ok(Bytes::new()),
        };
        Some((item, rx))
    });
    let mut r = Response::new(Body::from_stream(body));
    let h = r.headers_mut();
    let mime = HeaderValue::from_str(&mime)
        .unwrap_or_else(|_| HeaderValue::from_static("application/octet-stream"));
    h.insert(header::CONTENT_TYPE, mime);
    if let Some(n) = size {
        h.insert(header::CONTENT_LENGTH, HeaderValue::from(n));
    }
    Ok(r)
}

// ------------------------------------------------------------- searches

async fn search(State(s): Svc, c: Call, body: Body) -> Answer {
    c.query.allow(&[])?;
    let bytes = read_body(&c.headers, body, s.limits().max_document_bytes).await?;
    let m = parse_object(&bytes, "the search")?;
    only_keys(&m, &["formula", "since"], "the search")?;
    let formula =
        string_field(&m, "formula", "the search")?.ok_or_else(|| bad("\"formula\" is missing"))?;
    formula::Formula::parse(&formula).map_err(|e| bad(format!("search formula: {e}")))?;
    let since = match string_field(&m, "since", "the search")? {
        None => None,
        Some(t) => Some(
            nsf::Timestamp::parse_rfc3339(&t)
                .map(|t| protocol::Timestamp(t.0))
                .ok_or_else(|| bad(format!("\"since\" {t:?} is not an RFC 3339 date-time")))?,
        ),
    };
    let path = c.param("db");
    let (tx, rx) = mpsc::channel(DOWNLOAD_QUEUE);
    stream_job(&s, &c, Op::Search, tx, move |s, caller, out| {
        let db = open_db(s, caller, &path)?;
        let mut batch = Vec::with_capacity(SEARCH_BATCH);
        let found = s.search(caller, &db, &formula, since, |doc| {
            batch.extend_from_slice(document_text(&doc).as_bytes());
            batch.push(b'\n');
            if batch.len() >= SEARCH_BATCH {
                if !out.started {
                    out.start(NDJSON.into(), None)?;
                }
                out.data(Bytes::from(std::mem::take(&mut batch)))?;
            }
            Ok(())
        })?;
        if !out.started {
            out.start(NDJSON.into(), None)?;
        }
        batch.extend_from_slice(format!("{}\n", json!({"found": found})).as_bytes());
        out.data(Bytes::from(batch))
    });
    streamed(rx, |e| {
        let status = ApiError::from(e);
        let line = error_body(status.status, &status.reason);
        Ok(Bytes::from(format!("{line}\n")))
    })
    .await
}

const NDJSON: &str = "application/x-ndjson";

// ---------------------------------------------------------------- views

async fn read_view(State(s): Svc, c: Call) -> Answer {
    c.query.allow(&[
        "start",
        "count",
        "key",
        "prefix",
        "backward",
        "categories",
        "total",
    ])?;
    let position = c.query.number::<u64>("start")?;
    let key = c.query.text("key");
    let prefix = c.query.flag("prefix")?;
    let start = match (position, key) {
        (Some(_), Some(_)) => return Err(bad("give start or key, not both")),
        (_, None) if prefix => return Err(bad("prefix=true needs a key")),
        (p, None) => Start::Position(p.unwrap_or(0)),
        (None, Some(key)) => Start::Key { key, prefix },
    };
    let count = c.query.number("count")?.unwrap_or(DEFAULT_VIEW_ROWS);
    let flags = ReadFlags {
        backward: c.query.flag("backward")?,
        categories: c.query.flag("categories")?,
        count: c.query.flag("total")?,
    };
    let (path, name) = (c.param("db"), c.param("name"));
    let (info, rows, total) = c
        .run(&s, Op::ReadEntries, move |s, caller| {
            let db = open_db(s, caller, &path)?;
            let info = s.open_collection(caller, &db, &name)?;
            let (rows, total) = s.read_entries(caller, &db, &name, &start, count, flags)?;
            Ok((info, rows, total))
        })
        .await?;
    let rows: Vec<Json> = rows
        .iter()
        .map(|r| crate::json::row(r, &info.titles))
        .collect();
    let mut out = json!({
        "titles": info.titles,
        "categorized": info.categorized,
        "seq": info.seq,
        "rows": rows,
    });
    if let Some(total) = total {
        out["total"] = json!(total);
    }
    Ok(ok(out))
}

async fn create_view(State(s): Svc, c: Call, body: Body) -> Answer {
    c.query.allow(&[])?;
    let bytes = read_body(&c.headers, body, s.limits().max_document_bytes).await?;
    let m = parse_object(&bytes, "the view definition")?;
    let name = string_field(&m, "name", "the view definition")?
        .ok_or_else(|| bad("\"name\" is missing"))?;
    let kind = match m.get("kind").and_then(Json::as_str) {
        Some("folder") => "folders",
        _ => "views",
    };
    let json = body_text(bytes)?;
    let path = c.param("db");
    c.run(&s, Op::UpdateCollection, move |s, caller| {
        s.create_view(caller, &open_db(s, caller, &path)?, &json)
    })
    .await?;
    let location = format!(
        "/db/{}/{kind}/{}",
        encode_segment(&c.param("db")),
        encode_segment(&name)
    );
    Ok(with_header(
        json_response(StatusCode::CREATED, &json!({"ok": true, "name": name})),
        header::LOCATION,
        &location,
    ))
}

async fn find_in_view(State(s): Svc, c: Call) -> Answer {
    c.query.allow(&["key", "prefix"])?;
    let key = c.query.text("key").ok_or_else(|| bad("key is missing"))?;
    let prefix = c.query.flag("prefix")?;
    let (path, name) = (c.param("db"), c.param("name"));
    let found = c
        .run(&s, Op::ReadEntries, move |s, caller| {
            let db = open_db(s, caller, &path)?;
            s.find_by_key(caller, &db, &name, &key, prefix)?
                .ok_or_else(|| {
                    ServerError::NotFound(format!("no entry with key {key:?} in {name:?}"))
                })
        })
        .await?;
    Ok(ok(
        json!({"position": found.position, "count": found.count}),
    ))
}

async fn update_view(State(s): Svc, c: Call) -> Answer {
    c.query.allow(&[])?;
    let (path, name) = (c.param("db"), c.param("name"));
    let (seq, changed) = c
        .run(&s, Op::UpdateCollection, move |s, caller| {
            s.update_collection(caller, &open_db(s, caller, &path)?, &name)
        })
        .await?;
    Ok(ok(json!({"seq": seq, "changed": changed})))
}

async fn folder_add(state: Svc, c: Call, body: Body) -> Answer {
    folder_change(state, c, body, true).await
}

async fn folder_remove(state: Svc, c: Call, body: Body) -> Answer {
    folder_change(state, c, body, false).await
}

async fn folder_change(State(s): Svc, c: Call, body: Body, add: bool) -> Answer {
    c.query.allow(&[])?;
    let bytes = read_body(&c.headers, body, s.limits().max_document_bytes).await?;
    let m = parse_object(&bytes, "the folder change")?;
    only_keys(&m, &["unids"], "the folder change")?;
    let unids = match m.get("unids") {
        Some(Json::Array(l)) => l
            .iter()
            .map(|u| {
                u.as_str()
                    .map_or_else(|| Err(bad("\"unids\" must hold strings")), parse_unid)
            })
            .collect::<Result<Vec<_>, _>>()?,
        _ => return Err(bad("\"unids\" must be an array of UNIDs")),
    };
    let (path, name) = (c.param("db"), c.param("name"));
    let n = unids.len();
    c.run(&s, Op::UpdateCollection, move |s, caller| {
        s.folder_change(caller, &open_db(s, caller, &path)?, &name, &unids, add)
    })
    .await?;
    Ok(ok(json!({"ok": true, "unids": n})))
}
