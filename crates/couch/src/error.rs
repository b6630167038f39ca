//! CouchDB's error objects: `{"error": kind, "reason": text}` with the
//! HTTP status CouchDB gives that kind, so a client's handling of each
//! (PouchDB retries some, reports others) works unchanged.

use serde_json::{json, Value};

/// One CouchDB error: its HTTP status, its `error` word and its reason.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{error}: {reason}")]
pub struct CouchError {
    pub status: u16,
    pub error: &'static str,
    pub reason: String,
}

pub type CouchResult<T> = Result<T, CouchError>;

impl CouchError {
    fn new(status: u16, error: &'static str, reason: impl Into<String>) -> CouchError {
        CouchError {
            status,
            error,
            reason: reason.into(),
        }
    }

    /// Malformed input (JSON, a revision, a parameter): 400.
    pub fn bad_request(reason: impl Into<String>) -> CouchError {
        CouchError::new(400, "bad_request", reason)
    }

    /// Query parameters that do not go together: 400.
    pub fn query_parse(reason: impl Into<String>) -> CouchError {
        CouchError::new(400, "query_parse_error", reason)
    }

    /// A document that breaks a rule of the format: 400.
    pub fn invalid(reason: impl Into<String>) -> CouchError {
        CouchError::new(400, "doc_validation", reason)
    }

    /// Sign in first: 401.
    pub fn unauthorized(reason: impl Into<String>) -> CouchError {
        CouchError::new(401, "unauthorized", reason)
    }

    /// Not allowed for this user: 403.
    pub fn forbidden(reason: impl Into<String>) -> CouchError {
        CouchError::new(403, "forbidden", reason)
    }

    /// No such database or document (or not one this caller may see): 404.
    pub fn not_found(reason: impl Into<String>) -> CouchError {
        CouchError::new(404, "not_found", reason)
    }

    /// An edit of a revision that is not a leaf: 409.
    pub fn conflict() -> CouchError {
        CouchError::new(409, "conflict", "Document update conflict.")
    }

    /// An attachment stub naming content the revision's ancestors do not
    /// hold: 412.
    pub fn missing_stub(name: &str) -> CouchError {
        CouchError::new(
            412,
            "missing_stub",
            format!("Invalid attachment stub for {name:?}: no such attachment in its ancestors"),
        )
    }

    /// The database exists already: 412.
    pub fn file_exists() -> CouchError {
        CouchError::new(
            412,
            "file_exists",
            "The database could not be created, the file already exists.",
        )
    }

    /// A body or document above a limit: 413.
    pub fn too_large(reason: impl Into<String>) -> CouchError {
        CouchError::new(413, "too_large", reason)
    }

    /// What this door does not do yet: 501.
    pub fn not_implemented(reason: impl Into<String>) -> CouchError {
        CouchError::new(501, "not_implemented", reason)
    }

    /// The server cannot answer now: 503.
    pub fn unavailable(reason: impl Into<String>) -> CouchError {
        CouchError::new(503, "service_unavailable", reason)
    }

    /// Anything else: 500.
    pub fn internal(reason: impl Into<String>) -> CouchError {
        CouchError::new(500, "unknown_error", reason)
    }

    /// The error object.
    pub fn to_json(&self) -> Value {
        json!({"error": self.error, "reason": self.reason})
    }

    /// The error object naming the document it is about (`_bulk_docs`).
    pub fn for_doc(&self, id: &str, rev: Option<&str>) -> Value {
        let mut v = json!({"id": id, "error": self.error, "reason": self.reason});
        if let Some(r) = rev {
            v["rev"] = json!(r);
        }
        v
    }
}

impl From<nsf::NsfError> for CouchError {
    fn from(e: nsf::NsfError) -> CouchError {
        use nsf::NsfError as E;
        match e {
            E::NoSuchDocument { .. } => CouchError::not_found("missing"),
            E::EngineClosed | E::LogFull => CouchError::unavailable(e.to_string()),
            E::Invalid(_) | E::BadForeignNote { .. } | E::Codec(_) => {
                CouchError::invalid(e.to_string())
            }
            _ => CouchError::internal(e.to_string()),
        }
    }
}
