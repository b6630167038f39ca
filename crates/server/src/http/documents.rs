//! Documents: create, read, update, delete, and the change listing.
//! Writes do not take a worker thread: they are checked and queued on
//! the connection's task and answered once durable
//! (`Service::write_then`, I16).

use super::answer::{
    bad, encode_segment, json_response, json_text, ok, with_header, Answer, ApiError,
};
use super::extract::{open_db, read_body, sign_in, Call, Credentials, Svc};
use crate::auth::Secret;
use crate::service::{DocWrite, Service, WriteDone};
use crate::stats::Op;
use crate::ServerError;
use axum::body::Body;
use axum::extract::State;
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::Response;
use protocol::{Document, NoteMeta};
use serde_json::{json, Value as Json};
use std::sync::Arc;
use std::time::Instant;

/// Documents a change listing returns when the query does not say.
const DEFAULT_CHANGES: u32 = 100;

impl Call {
    /// Runs a document write as the authenticated caller without a worker
    /// thread (`Service::write_then`): checked and queued on this task,
    /// answered when durable. A password may need hashing, so one is
    /// checked, and the write queued, on the blocking pool.
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
        let password = matches!(
            self.credentials,
            Credentials::Basic {
                secret: Secret::Password(_),
                ..
            }
        );
        if password {
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

pub(super) async fn create_document(State(s): Svc, c: Call, body: Body) -> Answer {
    c.query.allow(&[])?;
    let bytes = read_body(&c.headers, body, s.limits().max_document_bytes).await?;
    let doc = s.parse_document(&bytes)?;
    let meta = c
        .write(&s, Op::Create, c.param("db"), DocWrite::Create { doc })
        .await?;
    let location = format!("/db/{}/docs/{}", encode_segment(&c.param("db")), meta.unid);
    Ok(with_header(
        saved(StatusCode::CREATED, &meta),
        header::LOCATION,
        &location,
    ))
}

pub(super) async fn read_document(State(s): Svc, c: Call) -> Answer {
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

pub(super) async fn changes(State(s): Svc, c: Call) -> Answer {
    c.query
        .allow(&["since", "limit", "feed", "heartbeat", "timeout"])?;
    let since = protocol::Cursor(c.query.number("since")?.unwrap_or(0));
    let limit = c.query.number("limit")?.unwrap_or(DEFAULT_CHANGES);
    if c.query.text("feed").is_some() {
        return super::feed::changes_feed(s, c, since, limit).await;
    }
    if c.query.text("heartbeat").is_some() || c.query.text("timeout").is_some() {
        return Err(bad(
            "heartbeat and timeout apply to a change feed: add feed=longpoll or feed=continuous",
        ));
    }
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

pub(super) async fn update_document(State(s): Svc, c: Call, body: Body) -> Answer {
    c.query.allow(&["force"])?;
    let force = c.query.flag("force")?;
    let unid = c.unid()?;
    let bytes = read_body(&c.headers, body, s.limits().max_document_bytes).await?;
    let doc = s.parse_document(&bytes)?;
    let seq = based_on(&c.headers, doc.get("$seq"))?;
    let write = DocWrite::Update {
        unid,
        based_on: seq,
        force,
        doc,
    };
    let meta = c.write(&s, Op::Update, c.param("db"), write).await?;
    Ok(saved(StatusCode::OK, &meta))
}

pub(super) async fn delete_document(State(s): Svc, c: Call) -> Answer {
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

/// An `ETag` naming a document's sequence number.
fn etag(seq: u32) -> String {
    format!("\"{seq}\"")
}

/// A write's outcome as JSON.
pub(super) fn meta_json(m: &NoteMeta) -> Json {
    json!({
        "unid": m.unid.to_string(),
        "seq": m.seq_num,
        "note_id": m.note_id.0,
        "change": m.change.0,
    })
}

/// The answer to a saved document: its outcome, with its `ETag`.
fn saved(status: StatusCode, m: &NoteMeta) -> Response {
    with_header(
        json_response(status, &meta_json(m)),
        header::ETAG,
        &etag(m.seq_num),
    )
}

/// A document as JSON text: its items and `$` system fields; a deletion
/// stub is its system fields and `"$deleted": true`.
pub(super) fn document_text(d: &Document) -> String {
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
