//! What every handler starts from, checked for form before any work is
//! done: the credentials (proved later, on the worker thread), the path
//! parameters, the query string and the body, read through its limit.
//! A malformed request is refused here with a 400 and changes nothing.

use super::answer::{bad, ApiError};
use crate::auth::Secret;
use crate::http_conn::is_body_too_slow;
use crate::service::{Caller, Service};
use crate::stats::Op;
use crate::{ServerError, ServerResult};
use axum::body::{Body, BodyDataStream, Bytes};
use axum::extract::{FromRequestParts, Query, RawPathParams, State};
use axum::http::request::Parts;
use axum::http::{header, HeaderMap, Method, StatusCode, Uri};
use base64::Engine as _;
use bytes::BytesMut;
use futures_util::StreamExt;
use nsf::Database;
use protocol::Unid;
use serde_json::{Map, Value as Json};
use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Most bytes of a refused request's body read and dropped (see
/// `discard_rest`), and for how long.
const DISCARD_MAX: usize = 16 << 20;
const DISCARD_TIME: Duration = Duration::from_secs(5);

pub(super) type Svc = State<Arc<Service>>;

/// Who the request says it is, checked on the worker thread.
#[derive(Clone, Debug)]
pub(super) enum Credentials {
    Anonymous,
    /// `Basic base64(user:secret)`; the secret is a password or a token.
    Basic {
        user: String,
        secret: Secret,
    },
    Bearer(String),
    /// The console's session cookie (`session.rs`). `csrf_ok` says whether
    /// the request may use it: a safe method, or one carrying the
    /// session's CSRF token.
    Cookie {
        token: String,
        csrf_ok: bool,
    },
}

impl Credentials {
    pub(super) fn from_headers(
        method: &Method,
        headers: &HeaderMap,
    ) -> Result<Credentials, ApiError> {
        let Some(value) = headers.get(header::AUTHORIZATION) else {
            return Ok(match session_cookie(headers) {
                Some(token) => Credentials::Cookie {
                    csrf_ok: csrf_ok(method, headers, &token),
                    token,
                },
                None => Credentials::Anonymous,
            });
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
            secret: Secret::parse(secret.to_string()),
        })
    }

    /// The caller these credentials prove (blocking: argon2).
    pub(super) fn caller(&self, s: &Service) -> ServerResult<Caller> {
        match self {
            Credentials::Anonymous => Ok(Caller::anonymous()),
            Credentials::Basic { user, secret } => s.authenticate(user, secret),
            Credentials::Bearer(token) => s.authenticate_token(token),
            Credentials::Cookie { token, csrf_ok } => {
                if !csrf_ok {
                    return Err(ServerError::Forbidden(format!(
                        "a change made with the session cookie needs the session's \
                         {CSRF_HEADER} header"
                    )));
                }
                s.authenticate_token(token)
            }
        }
    }

    /// The session token these credentials carry, if a session's.
    pub(super) fn session_token(&self) -> Option<&str> {
        match self {
            Credentials::Bearer(t) | Credentials::Cookie { token: t, .. } => Some(t),
            Credentials::Basic {
                secret: Secret::Token(t),
                ..
            } => Some(t),
            _ => None,
        }
    }
}

/// The console's session cookie, and the header a change made with it
/// must carry (docs/http.md, "Console sessions").
pub(super) const SESSION_COOKIE: &str = "folio_session";
pub(super) const CSRF_HEADER: &str = "x-folio-csrf";

/// The value of the session cookie, if the request has one.
fn session_cookie(headers: &HeaderMap) -> Option<String> {
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|pair| pair.trim().split_once('='))
        .find(|(name, _)| *name == SESSION_COOKIE)
        .map(|(_, value)| value.trim().to_string())
        .filter(|v| !v.is_empty())
}

/// Whether a request may act with the cookie `token`: reads always
/// (GET and HEAD change nothing), changes only with the CSRF token that
/// sign-in gave the page, which another site's page cannot read.
fn csrf_ok(method: &Method, headers: &HeaderMap, token: &str) -> bool {
    if matches!(*method, Method::GET | Method::HEAD) {
        return true;
    }
    headers
        .get(CSRF_HEADER)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| crate::auth::csrf_matches(token, v))
}

/// What every handler starts from: path parameters, query, credentials
/// and headers, all checked for form before any work is done.
pub(super) struct Call {
    pub(super) params: HashMap<String, String>,
    pub(super) query: QueryArgs,
    pub(super) credentials: Credentials,
    pub(super) headers: HeaderMap,
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
            credentials: Credentials::from_headers(&parts.method, &parts.headers)?,
            headers: parts.headers.clone(),
        })
    }
}

impl Call {
    /// A path parameter (present by the route's definition).
    pub(super) fn param(&self, name: &str) -> String {
        self.params.get(name).cloned().unwrap_or_default()
    }

    /// The `{unid}` path parameter.
    pub(super) fn unid(&self) -> Result<Unid, ApiError> {
        parse_unid(&self.param("unid"))
    }

    /// Runs `job` on the worker pool as the authenticated caller and
    /// records its time under `op`.
    pub(super) async fn run<T, F>(&self, s: &Arc<Service>, op: Op, job: F) -> Result<T, ApiError>
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

/// An anonymous caller refused for lack of rights is asked to sign in.
pub(super) fn sign_in(e: ServerError, anonymous: bool) -> ServerError {
    match e {
        ServerError::Forbidden(m) if anonymous => {
            ServerError::Unauthenticated(format!("{m}; sign in"))
        }
        e => e,
    }
}

/// Authenticates, then runs `job`; an anonymous caller refused for lack
/// of rights is asked to sign in (401) rather than told no (403).
pub(super) fn as_caller<T>(
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
pub(super) struct QueryArgs(HashMap<String, String>);

impl QueryArgs {
    pub(super) fn parse(uri: &Uri) -> Result<QueryArgs, ApiError> {
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
    pub(super) fn allow(&self, allowed: &[&str]) -> Result<(), ApiError> {
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

    pub(super) fn text(&self, key: &str) -> Option<String> {
        self.0.get(key).cloned()
    }

    pub(super) fn number<N: std::str::FromStr>(&self, key: &str) -> Result<Option<N>, ApiError> {
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

    pub(super) fn flag(&self, key: &str) -> Result<bool, ApiError> {
        match self.0.get(key).map(String::as_str) {
            None | Some("false") => Ok(false),
            Some("true") => Ok(true),
            Some(v) => Err(bad(format!(
                "query parameter {key}={v:?}: expected true or false"
            ))),
        }
    }
}

pub(super) fn parse_unid(s: &str) -> Result<Unid, ApiError> {
    s.parse::<nsf::Unid>()
        .map(|u| Unid(u.0))
        .map_err(|e| bad(e.to_string()))
}

/// Reads a body of at most `max` bytes; a larger one is refused as soon
/// as its declared length (or its bytes so far) says so.
pub(super) async fn read_body(
    headers: &HeaderMap,
    body: Body,
    max: usize,
) -> Result<Bytes, ApiError> {
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
        let chunk = chunk.map_err(body_failed)?;
        if buf.len() + chunk.len() > max {
            let n = (buf.len() + chunk.len()) as u64;
            discard_rest(headers, stream);
            return Err(too_large(n));
        }
        buf.extend_from_slice(&chunk);
    }
    Ok(buf.freeze())
}

/// The answer to a request whose body failed to arrive: 408 if it came
/// too slowly (`http_conn::TimedBody`), otherwise 400.
pub(super) fn body_failed(e: axum::Error) -> ApiError {
    if is_body_too_slow(&e) {
        return ApiError::new(StatusCode::REQUEST_TIMEOUT, e.to_string());
    }
    bad(format!("the request body could not be read: {e}"))
}

/// Reads and drops what is left of a refused request's body, in the
/// background and within bounds, so that a client writing its whole body
/// before it reads the answer gets the answer, not a connection reset
/// (closing a socket with unread input resets it). A client that sent
/// `Expect: 100-continue` was never asked for its body: nothing to read.
pub(super) fn discard_rest(headers: &HeaderMap, mut rest: BodyDataStream) {
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

pub(super) fn content_length(headers: &HeaderMap) -> Result<Option<u64>, ApiError> {
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

/// A JSON body that must be an object, each of its keys once: JSON
/// parsers differ on which of two equal keys wins, so `{"dest": "/a",
/// "dest": "/b"}` is refused rather than read as either.
pub(super) fn parse_object(bytes: &[u8], what: &str) -> Result<Map<String, Json>, ApiError> {
    match serde_json::from_slice::<Json>(bytes) {
        Ok(Json::Object(_)) => serde_json::from_slice::<UniqueKeys>(bytes)
            .map(|u| u.0)
            .map_err(|e| bad(format!("{what}: {e}"))),
        Ok(_) => Err(bad(format!("{what} must be a JSON object"))),
        Err(e) => Err(bad(format!("malformed JSON in {what}: {e}"))),
    }
}

/// A JSON object whose top-level keys are all different.
struct UniqueKeys(Map<String, Json>);

impl<'de> serde::Deserialize<'de> for UniqueKeys {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Keys;
        impl<'de> serde::de::Visitor<'de> for Keys {
            type Value = UniqueKeys;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a JSON object")
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                mut a: A,
            ) -> Result<UniqueKeys, A::Error> {
                let mut m = Map::new();
                while let Some(k) = a.next_key::<String>()? {
                    let v: Json = a.next_value()?;
                    if m.contains_key(&k) {
                        return Err(serde::de::Error::custom(format!(
                            "duplicate key {k:?}: give each key once"
                        )));
                    }
                    m.insert(k, v);
                }
                Ok(UniqueKeys(m))
            }
        }
        d.deserialize_map(Keys)
    }
}

/// A body as text (documents and ACLs are handed on as JSON text).
pub(super) fn body_text(bytes: Bytes) -> Result<String, ApiError> {
    String::from_utf8(Vec::from(bytes)).map_err(|_| bad("the request body is not UTF-8"))
}

/// Refuses keys of a JSON body other than `allowed`.
pub(super) fn only_keys(
    m: &Map<String, Json>,
    allowed: &[&str],
    what: &str,
) -> Result<(), ApiError> {
    match m.keys().find(|k| !allowed.contains(&k.as_str())) {
        None => Ok(()),
        Some(k) => Err(bad(format!(
            "unknown field {k:?} in {what}; expected {}",
            allowed.join(", ")
        ))),
    }
}

pub(super) fn string_field(
    m: &Map<String, Json>,
    key: &str,
    what: &str,
) -> Result<Option<String>, ApiError> {
    match m.get(key) {
        None | Some(Json::Null) => Ok(None),
        Some(Json::String(s)) => Ok(Some(s.clone())),
        Some(_) => Err(bad(format!("{key:?} in {what} must be a string"))),
    }
}

/// Opens a database the caller has some access to.
pub(super) fn open_db(s: &Service, caller: &Caller, path: &str) -> ServerResult<Arc<Database>> {
    s.open_database(caller, path).map(|(db, _)| db)
}
