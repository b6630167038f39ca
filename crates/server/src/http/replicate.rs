//! `POST /db/{db}/_replicate`: this server replicates its database with
//! one on a peer server, as the native `ReplicatePeer` does (design.md
//! §11.8; server administrators only). The body:
//!
//! ```text
//!   {"peer": "HOST:PORT", "remote": "PATH",            required
//!    "direction": "pull" | "push" | "both",            default pull (peer into here)
//!    "selection": "FORMULA", "create": bool,           pulls only
//!    "user": "NAME", "password": "SECRET"}             to sign in to the peer; both or neither
//! ```
//!
//! Unknown fields, wrong types and a half-given sign-in are refused
//! (400) before anything runs. The answer, once every pull's writes and
//! history are durable on its target, is `PeerReplicated` as JSON: one
//! summary per pull (documents, bytes, bytes on the wire, attachments
//! skipped, time) and the warnings.
//!
//! `POST /admin/replication/{name}/run`: a scheduled `[[replication]]`
//! entry made due now (administrators); answered at once (202), the run
//! reported in its `replication.<name>.*` statistics.

use super::answer::{bad, ok, Answer, ApiError};
use super::extract::{only_keys, parse_object, read_body, string_field, Call, Svc};
use crate::stats::Op;
use crate::ServerError;
use axum::body::Body;
use axum::extract::State;
use protocol::{PeerDirection, PeerReplication};
use serde_json::{Map, Value as Json};

const FIELDS: &[&str] = &[
    "peer",
    "remote",
    "direction",
    "selection",
    "create",
    "user",
    "password",
];
const WHAT: &str = "the replication request";

pub(super) async fn replicate(State(s): Svc, c: Call, body: Body) -> Answer {
    c.query.allow(&[])?;
    let bytes = read_body(&c.headers, body, s.limits().max_document_bytes).await?;
    let m = parse_object(&bytes, WHAT)?;
    let request = request(c.param("db"), &m)?;
    let r = c
        .run(&s, Op::Admin, move |s, caller| {
            s.replicate_peer(caller, request)
        })
        .await?;
    let v = serde_json::to_value(&r)
        .map_err(|e| ServerError::Internal(format!("replication summary: {e}")))?;
    Ok(ok(v))
}

/// The request the body asks for (module docs).
fn request(local: String, m: &Map<String, Json>) -> Result<PeerReplication, ApiError> {
    only_keys(m, FIELDS, WHAT)?;
    let required = |key: &str| -> Result<String, ApiError> {
        match string_field(m, key, WHAT)? {
            Some(v) if !v.trim().is_empty() => Ok(v),
            _ => Err(bad(format!("{WHAT} needs \"{key}\" (a non-empty string)"))),
        }
    };
    let (peer, remote) = (required("peer")?, required("remote")?);
    let direction = match string_field(m, "direction", WHAT)?.as_deref() {
        None | Some("pull") => PeerDirection::Pull,
        Some("push") => PeerDirection::Push,
        Some("both") => PeerDirection::Both,
        Some(other) => {
            return Err(bad(format!(
                "{WHAT}: \"direction\" is pull, push or both, not {other:?}"
            )))
        }
    };
    let create = match m.get("create") {
        None | Some(Json::Null) => false,
        Some(Json::Bool(b)) => *b,
        Some(_) => return Err(bad(format!("{WHAT}: \"create\" must be true or false"))),
    };
    let credentials = match (
        string_field(m, "user", WHAT)?,
        string_field(m, "password", WHAT)?,
    ) {
        (Some(u), Some(p)) => Some((u, p)),
        (None, None) => None,
        _ => {
            return Err(bad(format!(
                "{WHAT}: \"user\" and \"password\" go together (the peer's sign-in)"
            )))
        }
    };
    Ok(PeerReplication {
        local,
        peer,
        remote,
        credentials,
        direction,
        selection: string_field(m, "selection", WHAT)?,
        create,
    })
}

pub(super) async fn run_entry(State(s): Svc, c: Call) -> Answer {
    c.query.allow(&[])?;
    let name = c.param("name");
    let run = c
        .run(&s, Op::Admin, move |s, caller| {
            s.run_replication_now(caller, &name)
        })
        .await?;
    let state = match run {
        crate::service::EntryRun::Due => "due",
        crate::service::EntryRun::Running => "running",
    };
    Ok(super::answer::json_response(
        axum::http::StatusCode::ACCEPTED,
        &serde_json::json!({"entry": c.param("name"), "state": state}),
    ))
}
