//! One attachment: `GET`, `PUT` and `DELETE /{db}/{id}/{name}`.
//!
//! A `PUT` or `DELETE` is an edit of the revision `?rev=` (or `If-Match`)
//! names: a new revision with the attachment stored or dropped and every
//! other attachment kept as it was, written as any edit is
//! (`couch::write_docs`, one transaction). A document the caller may not
//! read answers exactly as a missing one: 404 for a read, 409 for an edit
//! of a revision it names.

use super::super::extract::read_body;
use super::call::{CouchCall, Reply};
use super::docs::{mode_of, pick, raw, write_single};
use super::server::new_uuid;
use crate::service::Service;
use axum::body::Body;
use axum::extract::State;
use axum::http::{header, HeaderValue, StatusCode};
use couch::{AttIn, CouchError, CouchResult, Edit, Mode, Rev};
use nsf::AccessLevel;
use serde_json::{json, Value};
use std::sync::Arc;

type Svc = State<Arc<Service>>;

/// The policy on every attachment answer: nothing in it may run as this
/// origin (its type and content are whatever the writer said).
const ATTACHMENT_CSP: &str = "sandbox; default-src 'none'";

/// The document id and attachment name a route names.
fn names(c: &CouchCall) -> (String, String) {
    let id = match c.param("ddoc") {
        d if d.is_empty() => c.param("id"),
        d => format!("_design/{d}"),
    };
    (id, c.param("att"))
}

fn rev_param(c: &CouchCall) -> CouchResult<Option<Rev>> {
    c.text("rev")
        .map(str::to_string)
        .or_else(|| {
            c.headers
                .get(header::IF_MATCH)
                .and_then(|v| v.to_str().ok())
                .map(|v| v.trim_matches('"').to_string())
        })
        .map(|r| r.parse::<Rev>().map_err(CouchError::bad_request))
        .transpose()
}

/// `GET /{db}/{id}/{name}` (`?rev=`): the content, typed as stored.
pub(super) async fn get(State(s): Svc, c: CouchCall) -> Reply {
    let name = c.param("db");
    let (id, att) = names(&c);
    couch::validate_att_name(&att)?;
    let rev = rev_param(&c)?;
    let (info, bytes) = c
        .run(&s, move |s, caller| {
            let d = s.couch_db(caller, &name, AccessLevel::Reader)?;
            let doc = d
                .doc(&id)?
                .ok_or_else(|| CouchError::not_found("missing"))?;
            let leaf = match &rev {
                Some(r) => pick(&doc, r, false).ok_or_else(|| CouchError::not_found("missing"))?,
                None if doc.is_deleted() => return Err(CouchError::not_found("deleted")),
                None => doc.winner(),
            };
            let info = couch::attachment_infos(&d.db, leaf)?
                .into_iter()
                .find(|i| i.name == att)
                .ok_or_else(|| CouchError::not_found("Document is missing attachment"))?;
            let bytes = couch::read_content(&d.db, &leaf.note, &att)?;
            Ok((info, bytes))
        })
        .await?;
    let mut r = raw(StatusCode::OK, &info.mime, bytes);
    let h = r.headers_mut();
    if let Ok(v) = HeaderValue::from_str(&format!("\"{}\"", info.digest)) {
        h.insert(header::ETAG, v);
    }
    if let Ok(v) = HeaderValue::from_str(info.digest.trim_start_matches("md5-")) {
        h.insert("content-md5", v);
    }
    h.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(ATTACHMENT_CSP),
    );
    h.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    Ok(r)
}

/// `PUT /{db}/{id}/{name}?rev=`: stores the body as the attachment (a new
/// document if there is none and no `rev`).
pub(super) async fn put(State(s): Svc, c: CouchCall, body: Body) -> Reply {
    let (id, att) = names(&c);
    couch::validate_att_name(&att)?;
    let rev = rev_param(&c)?;
    let max = s.limits().max_attachment_bytes;
    let mime = match c.headers.get(header::CONTENT_TYPE) {
        None => "application/octet-stream".to_string(),
        Some(v) => v
            .to_str()
            .ok()
            .filter(|v| !v.is_empty())
            .ok_or_else(|| CouchError::bad_request("malformed Content-Type header"))?
            .to_string(),
    };
    let bytes = read_body(&c.headers, body, usize::try_from(max).unwrap_or(usize::MAX)).await?;
    let data = AttIn::Data {
        name: att.clone(),
        mime,
        bytes: bytes.to_vec(),
        revpos: None,
    };
    let edit = edit_of(&s, &c, &id, rev, &att, Some(data)).await?;
    let name = c.param("db");
    write_single(&s, &c, name, edit, mode_of(true), StatusCode::CREATED).await
}

/// `DELETE /{db}/{id}/{name}?rev=`: a new revision without it.
pub(super) async fn delete(State(s): Svc, c: CouchCall) -> Reply {
    let (id, att) = names(&c);
    couch::validate_att_name(&att)?;
    let rev = rev_param(&c)?.ok_or_else(CouchError::conflict)?;
    let edit = edit_of(&s, &c, &id, Some(rev), &att, None).await?;
    let name = c.param("db");
    write_single(&s, &c, name, edit, mode_of(true), StatusCode::OK).await
}

/// The edit of revision `rev` (none: a new document) that stores `data`
/// as attachment `att` (`None`: drops it), keeping its fields and other
/// attachments.
async fn edit_of(
    s: &Arc<Service>,
    c: &CouchCall,
    id: &str,
    rev: Option<Rev>,
    att: &str,
    data: Option<AttIn>,
) -> Result<Edit, super::call::Fail> {
    let (name, id, att) = (c.param("db"), id.to_string(), att.to_string());
    let max = s.limits().max_attachment_bytes;
    let edit = c
        .run(s, move |s, caller| {
            let d = s.couch_db(caller, &name, AccessLevel::Author)?;
            let doc = d.doc(&id)?;
            let base = match (&rev, &doc) {
                (Some(r), Some(doc)) => Some(doc.leaf(r).ok_or_else(CouchError::conflict)?),
                (Some(_), None) => return Err(CouchError::conflict()),
                (None, Some(doc)) if !doc.is_deleted() => return Err(CouchError::conflict()),
                (None, _) => None,
            };
            let mut body = match base {
                Some(l) if !l.deleted() => l.to_json(&id, false),
                Some(l) => {
                    let mut m = serde_json::Map::new();
                    m.insert("_id".into(), json!(id));
                    m.insert("_rev".into(), json!(l.rev.to_string()));
                    m
                }
                None => {
                    let mut m = serde_json::Map::new();
                    m.insert("_id".into(), json!(id));
                    m
                }
            };
            let infos = match base {
                Some(l) => couch::attachment_infos(&d.db, l)?,
                None => Vec::new(),
            };
            if data.is_none() && !infos.iter().any(|i| i.name == att) {
                return Err(CouchError::not_found("Document is missing attachment"));
            }
            let stubs: serde_json::Map<String, Value> = infos
                .iter()
                .filter(|i| i.name != att)
                .map(|i| (i.name.clone(), i.stub()))
                .collect();
            body.insert("_attachments".into(), Value::Object(stubs));
            let mut edit = couch::parse_edit(
                &Value::Object(body),
                Mode::NewEdits,
                Some(&id),
                &mut new_uuid,
                max,
            )?;
            edit.attachments.extend(data);
            Ok(edit)
        })
        .await?;
    Ok(edit)
}
