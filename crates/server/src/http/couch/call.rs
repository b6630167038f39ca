//! What every handler of the door starts from, and how it answers.
//!
//! Credentials are the HTTP API's (`Authorization: Basic` with a password
//! or token, `Bearer`), plus CouchDB's session cookie `AuthSession`
//! (set by `POST /_session`; `SameSite=Strict`, so another site's page
//! cannot make a browser send it). Query parameters are CouchDB's: ones
//! a handler does not use are ignored, as CouchDB ignores them, but a
//! parameter it uses must be well formed. Every failure is a CouchDB
//! error object with CouchDB's status.

use super::super::answer::ApiError;
use super::super::extract::{read_body, Credentials};
use crate::service::{couch_error, Caller, Service};
use axum::body::Body;
use axum::extract::{FromRequestParts, Query, RawPathParams};
use axum::http::request::Parts;
use axum::http::{header, HeaderMap, HeaderValue, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use couch::{CouchError, CouchResult};
use serde_json::Value;
use std::collections::HashMap;
use std::sync::Arc;

/// CouchDB's session cookie.
pub(super) const SESSION_COOKIE: &str = "AuthSession";

/// A failure, answered as CouchDB does.
#[derive(Debug)]
pub(super) struct Fail(pub(super) CouchError);

impl From<CouchError> for Fail {
    fn from(e: CouchError) -> Fail {
        Fail(e)
    }
}

impl From<ApiError> for Fail {
    fn from(e: ApiError) -> Fail {
        Fail(match e.status.as_u16() {
            401 => CouchError::unauthorized(e.reason),
            408 => CouchError {
                status: 408,
                error: "request_timeout",
                reason: e.reason,
            },
            413 => CouchError::too_large(e.reason),
            s if s < 500 => CouchError::bad_request(e.reason),
            _ => CouchError::internal(e.reason),
        })
    }
}

impl IntoResponse for Fail {
    fn into_response(self) -> Response {
        let status =
            StatusCode::from_u16(self.0.status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
        json(status, &self.0.to_json())
    }
}

pub(super) type Reply = Result<Response, Fail>;

/// A JSON answer.
pub(super) fn json(status: StatusCode, body: &Value) -> Response {
    let mut r = (status, body.to_string()).into_response();
    r.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    r
}

pub(super) async fn no_route(uri: Uri) -> Fail {
    Fail(CouchError::not_found(format!(
        "no such path in the CouchDB API: {}",
        uri.path()
    )))
}

pub(super) async fn wrong_method() -> Fail {
    Fail(CouchError {
        status: 405,
        error: "method_not_allowed",
        reason: "This method is not allowed here.".into(),
    })
}

/// The request: path parameters, query, credentials, headers.
pub(super) struct CouchCall {
    params: HashMap<String, String>,
    query: HashMap<String, String>,
    pub(super) credentials: Credentials,
    pub(super) headers: HeaderMap,
}

impl<S: Send + Sync> FromRequestParts<S> for CouchCall {
    type Rejection = Fail;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<CouchCall, Fail> {
        let params = match RawPathParams::from_request_parts(parts, state).await {
            Ok(p) => p
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
            Err(axum::extract::rejection::RawPathParamsRejection::MissingPathParams(_)) => {
                HashMap::new()
            }
            Err(e) => return Err(Fail(CouchError::bad_request(e.body_text()))),
        };
        let Query(pairs) = Query::<Vec<(String, String)>>::try_from_uri(&parts.uri)
            .map_err(|e| CouchError::bad_request(format!("malformed query: {}", e.body_text())))?;
        let query = pairs.into_iter().collect();
        let credentials = match parts.headers.get(header::AUTHORIZATION) {
            Some(_) => Credentials::from_headers(&parts.method, &parts.headers)?,
            None => match session_cookie(&parts.headers) {
                Some(token) => Credentials::Bearer(token),
                None => Credentials::Anonymous,
            },
        };
        Ok(CouchCall {
            params,
            query,
            credentials,
            headers: parts.headers.clone(),
        })
    }
}

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

impl CouchCall {
    /// A path parameter (present by the route's definition).
    pub(super) fn param(&self, name: &str) -> String {
        self.params.get(name).cloned().unwrap_or_default()
    }

    /// A query parameter's text.
    pub(super) fn text(&self, key: &str) -> Option<&str> {
        self.query.get(key).map(String::as_str)
    }

    /// A flag: `true` or `false`.
    pub(super) fn flag(&self, key: &str) -> CouchResult<bool> {
        match self.text(key) {
            None | Some("false") => Ok(false),
            Some("true") => Ok(true),
            Some(v) => Err(CouchError::bad_request(format!(
                "Invalid boolean parameter {key}={v:?}"
            ))),
        }
    }

    /// A non-negative whole number.
    pub(super) fn number(&self, key: &str) -> CouchResult<Option<u64>> {
        self.text(key)
            .map(|v| {
                v.trim_matches('"').parse::<u64>().map_err(|_| {
                    CouchError::bad_request(format!("Invalid number parameter {key}={v:?}"))
                })
            })
            .transpose()
    }

    /// A JSON-encoded parameter (`startkey`, `open_revs`, `keys`).
    pub(super) fn json(&self, key: &str) -> CouchResult<Option<Value>> {
        self.text(key)
            .map(|v| {
                serde_json::from_str(v).map_err(|e| {
                    CouchError::bad_request(format!("Invalid JSON in parameter {key}: {e}"))
                })
            })
            .transpose()
    }

    /// Runs `job` on the worker pool as the authenticated caller. An
    /// anonymous caller refused for lack of rights is asked to sign in.
    pub(super) async fn run<T, F>(&self, s: &Arc<Service>, job: F) -> Result<T, Fail>
    where
        T: Send + 'static,
        F: FnOnce(&Service, &Caller) -> CouchResult<T> + Send + 'static,
    {
        let (s, credentials) = (s.clone(), self.credentials.clone());
        let work = move || {
            let caller = credentials.caller(&s).map_err(couch_error)?;
            let anonymous = caller.user.is_none() && !caller.admin;
            job(&s, &caller).map_err(|e| match e.status {
                403 if anonymous => CouchError::unauthorized(e.reason),
                _ => e,
            })
        };
        match tokio::task::spawn_blocking(work).await {
            Ok(r) => r.map_err(Fail),
            Err(e) => Err(Fail(CouchError::internal(format!(
                "the request failed: {e}"
            )))),
        }
    }
}

/// Reads a JSON body of at most `max` bytes.
pub(super) async fn json_body(headers: &HeaderMap, body: Body, max: usize) -> Result<Value, Fail> {
    let bytes = read_body(headers, body, max).await?;
    serde_json::from_slice(&bytes)
        .map_err(|e| Fail(CouchError::bad_request(format!("invalid UTF-8 JSON: {e}"))))
}
