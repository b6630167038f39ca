//! What every handler answers with: the JSON error body every failure
//! carries, with its status (and `WWW-Authenticate` or `Retry-After`
//! where they help), and the JSON responses of success.

use crate::ServerError;
use axum::http::{header, HeaderValue, Method, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use serde_json::{json, Value as Json};

/// The realm named in `WWW-Authenticate`.
const REALM: &str = "Basic realm=\"folio\"";

pub(super) type Answer = Result<Response, ApiError>;

/// An error answer: its status and the JSON body every failure carries.
#[derive(Debug)]
pub(super) struct ApiError {
    pub(super) status: StatusCode,
    pub(super) reason: String,
}

impl ApiError {
    pub(super) fn new(status: StatusCode, reason: impl Into<String>) -> ApiError {
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
            // A checkpoint frees log space within a second or so; a
            // restarting server, or a free connection, may take longer,
            // but asking again soon costs little.
            StatusCode::SERVICE_UNAVAILABLE => {
                h.insert(header::RETRY_AFTER, HeaderValue::from_static("1"));
            }
            _ => {}
        }
        r
    }
}

pub(super) fn error_body(status: StatusCode, reason: &str) -> Json {
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
        408 => "request_timeout",
        409 => "save_conflict",
        413 => "too_large",
        503 => "busy",
        _ => "server_error",
    }
}

pub(super) fn bad(reason: impl Into<String>) -> ApiError {
    ApiError::new(StatusCode::BAD_REQUEST, reason)
}

pub(super) async fn no_route(method: Method, uri: Uri) -> ApiError {
    ApiError::new(
        StatusCode::NOT_FOUND,
        format!("no such route: {method} {}", uri.path()),
    )
}

pub(super) async fn wrong_method(method: Method, uri: Uri) -> ApiError {
    ApiError::new(
        StatusCode::METHOD_NOT_ALLOWED,
        format!("{} does not take {method}", uri.path()),
    )
}

pub(super) fn json_response(status: StatusCode, body: &Json) -> Response {
    json_text(status, body.to_string())
}

pub(super) fn json_text(status: StatusCode, text: String) -> Response {
    (status, [(header::CONTENT_TYPE, "application/json")], text).into_response()
}

pub(super) fn ok(body: Json) -> Response {
    json_response(StatusCode::OK, &body)
}

/// Percent-encodes one path segment (database paths keep their slashes
/// inside one segment: `mail%2Falice.fdb`).
pub(super) fn encode_segment(s: &str) -> String {
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

pub(super) fn with_header(mut r: Response, name: header::HeaderName, value: &str) -> Response {
    if let Ok(v) = HeaderValue::from_str(value) {
        r.headers_mut().insert(name, v);
    }
    r
}
