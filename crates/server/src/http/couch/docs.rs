//! Documents: read (a revision, `open_revs`, `revs`, `conflicts`), write
//! (`PUT`, `POST /{db}`, `DELETE`, `_bulk_docs` in both modes), what a
//! replicator asks (`_revs_diff`, `_bulk_get`) and `_local` documents.
//!
//! A request whose documents are malformed (JSON, `_rev`, `_revisions`,
//! a field) is refused whole with 400 before anything is written; a
//! well-formed request is one transaction (`couch::write_docs`) whose
//! documents each succeed or fail (`conflict`, `forbidden`) on their own.

use super::super::extract::read_body;
use super::call::{json, json_body, CouchCall, Fail, Reply};
use super::multipart::{self, Revision};
use super::server::new_uuid;
use crate::service::{LocalOp, Service};
use axum::body::Body;
use axum::extract::State;
use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use couch::{AttMode, CouchError, CouchResult, Doc, Edit, Leaf, Mode, Rev};
use nsf::AccessLevel;
use serde_json::{json, Map, Value};
use std::sync::Arc;

type Svc = State<Arc<Service>>;

/// Most documents one `_bulk_docs`, `_bulk_get` or `_revs_diff` names.
const MAX_DOCS: usize = 10_000;

/// The document id a route names (`/{db}/_design/{ddoc}` or `/{db}/{id}`).
fn doc_id(c: &CouchCall) -> String {
    match c.param("ddoc") {
        d if d.is_empty() => c.param("id"),
        d => format!("_design/{d}"),
    }
}

/// The body limit of a request carrying many documents.
fn bulk_limit(s: &Service) -> usize {
    s.limits().max_document_bytes.saturating_mul(8)
}

/// `GET /{db}/{id}`: `rev`, `revs`, `revs_info`, `open_revs`, `latest`,
/// `conflicts`, `deleted_conflicts`, `attachments` with `atts_since`. With `open_revs`
/// and `Accept: multipart/mixed`, or `attachments=true` and `Accept:
/// multipart/related`, attachments come as parts (multipart.rs).
pub(super) async fn get(State(s): Svc, c: CouchCall) -> Reply {
    let name = c.param("db");
    let id = doc_id(&c);
    let revs = c.flag("revs")?;
    let latest = c.flag("latest")?;
    let open_revs = match c.text("open_revs") {
        None => None,
        Some("all") => Some(None),
        Some(_) => Some(Some(rev_list(c.json("open_revs")?, "open_revs")?)),
    };
    let rev = c
        .text("rev")
        .map(|r| r.parse::<Rev>().map_err(CouchError::bad_request))
        .transpose()?;
    let (conflicts, deleted_conflicts) = (c.flag("conflicts")?, c.flag("deleted_conflicts")?);
    let revs_info = c.flag("revs_info")?;
    let atts_since = match c.json("atts_since")? {
        None => Vec::new(),
        v => rev_list(v, "atts_since")?,
    };
    let accepts = |what: &str| {
        c.headers
            .get_all(header::ACCEPT)
            .iter()
            .filter_map(|v| v.to_str().ok())
            .any(|v| v.contains(what))
    };
    let parts = if open_revs.is_some() {
        accepts("multipart/mixed")
    } else {
        accepts("multipart/related")
    };
    let mode = match (c.flag("attachments")?, parts) {
        (false, _) => AttMode::Stubs,
        (true, false) => AttMode::Inline,
        (true, true) => AttMode::Follows,
    };
    if let Some(wanted) = open_revs {
        let revisions = c
            .run(&s, move |s, caller| {
                let d = s.couch_db(caller, &name, AccessLevel::Reader)?;
                let doc = d.doc(&id)?;
                let picked: Vec<Result<&Leaf, String>> = match (&wanted, &doc) {
                    (None, Some(doc)) => doc.leaves.iter().map(Ok).collect(),
                    (None, None) => return Err(CouchError::not_found("missing")),
                    (Some(list), _) => list
                        .iter()
                        .map(|r| {
                            doc.as_ref()
                                .and_then(|doc| pick(doc, r, latest))
                                .ok_or_else(|| r.to_string())
                        })
                        .collect(),
                };
                picked
                    .into_iter()
                    .map(|p| match p {
                        Ok(leaf) => {
                            let (body, parts) =
                                couch::leaf_body(&d.db, leaf, &id, revs, mode, &atts_since)?;
                            Ok(Revision::Found(body, parts))
                        }
                        Err(missing) => Ok(Revision::Missing(missing)),
                    })
                    .collect::<CouchResult<Vec<Revision>>>()
            })
            .await?;
        if mode == AttMode::Follows {
            let (ct, bytes) = multipart::mixed(&revisions);
            return Ok(raw(StatusCode::OK, &ct, bytes));
        }
        let answers: Vec<Value> = revisions
            .into_iter()
            .map(|r| match r {
                Revision::Found(body, _) => json!({"ok": body}),
                Revision::Missing(rev) => json!({"missing": rev}),
            })
            .collect();
        return Ok(json(StatusCode::OK, &json!(answers)));
    }
    let (body, parts, etag) = c
        .run(&s, move |s, caller| {
            let d = s.couch_db(caller, &name, AccessLevel::Reader)?;
            let doc = d
                .doc(&id)?
                .ok_or_else(|| CouchError::not_found("missing"))?;
            let leaf = match &rev {
                Some(r) => pick(&doc, r, latest).ok_or_else(|| CouchError::not_found("missing"))?,
                None if doc.is_deleted() => return Err(CouchError::not_found("deleted")),
                None => doc.winner(),
            };
            let (mut body, parts) = couch::leaf_body(&d.db, leaf, &id, revs, mode, &atts_since)?;
            let list =
                |ls: Vec<&Leaf>| json!(ls.iter().map(|l| l.rev.to_string()).collect::<Vec<_>>());
            if conflicts && !doc.conflicts().is_empty() {
                body.insert("_conflicts".into(), list(doc.conflicts()));
            }
            if deleted_conflicts && !doc.deleted_conflicts().is_empty() {
                body.insert("_deleted_conflicts".into(), list(doc.deleted_conflicts()));
            }
            if revs_info {
                body.insert("_revs_info".into(), leaf.revs_info_json());
            }
            Ok((body, parts, leaf.rev.to_string()))
        })
        .await?;
    let mut r = if mode == AttMode::Follows {
        let (ct, bytes) = multipart::related(&body, &parts);
        raw(StatusCode::OK, &ct, bytes)
    } else {
        json(StatusCode::OK, &Value::Object(body))
    };
    if let Ok(etag) = format!("\"{etag}\"").parse() {
        r.headers_mut().insert(header::ETAG, etag);
    }
    Ok(r)
}

/// An answer of `content_type` made of `bytes`.
pub(super) fn raw(status: StatusCode, content_type: &str, bytes: Vec<u8>) -> Response {
    let mut r = (status, bytes).into_response();
    if let Ok(v) = HeaderValue::from_str(content_type) {
        r.headers_mut().insert(header::CONTENT_TYPE, v);
    }
    r
}

/// The leaf `rev` names; with `latest`, the leaf that descends from it.
pub(super) fn pick<'d>(doc: &'d Doc, rev: &Rev, latest: bool) -> Option<&'d Leaf> {
    doc.leaf(rev).or_else(|| {
        latest
            .then(|| doc.leaves.iter().find(|l| l.knows(rev)))
            .flatten()
    })
}

fn rev_list(v: Option<Value>, what: &str) -> CouchResult<Vec<Rev>> {
    let bad = || CouchError::bad_request(format!("{what} must be a list of revisions"));
    match v {
        Some(Value::Array(a)) => a
            .iter()
            .map(|r| {
                r.as_str()
                    .ok_or_else(bad)?
                    .parse::<Rev>()
                    .map_err(CouchError::bad_request)
            })
            .collect(),
        _ => Err(bad()),
    }
}

/// `PUT /{db}/{id}` (`?new_edits=false` takes a replicated revision): a
/// JSON document, or a `multipart/related` one whose attachments follow.
pub(super) async fn put(State(s): Svc, c: CouchCall, body: Body) -> Reply {
    let name = c.param("db");
    let id = doc_id(&c);
    let max_att = s.limits().max_attachment_bytes;
    let boundary = c
        .headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .and_then(multipart::related_boundary)
        .transpose()?;
    let (mut doc, parts) = match boundary {
        Some(b) => {
            let limit = usize::try_from(max_att)
                .unwrap_or(usize::MAX)
                .saturating_add(s.limits().max_document_bytes);
            let bytes = read_body(&c.headers, body, limit).await?;
            let (doc, parts) = multipart::parse_related(b, bytes).await?;
            (doc, Some(parts))
        }
        None => (
            json_body(&c.headers, body, s.limits().max_document_bytes).await?,
            None,
        ),
    };
    let mode = mode_of(c.text("new_edits").map(|v| v != "false").unwrap_or(true));
    if let (Some(r), Some(obj)) = (c.text("rev"), doc.as_object_mut()) {
        obj.entry("_rev").or_insert_with(|| json!(r));
    }
    let mut edit = couch::parse_edit(&doc, mode, Some(&id), &mut new_uuid, max_att)?;
    if let Some(parts) = parts {
        multipart::fill_follows(&mut edit.attachments, parts, max_att)?;
    }
    write_single(&s, &c, name, edit, mode, StatusCode::CREATED).await
}

/// `POST /{db}`: a new document (an id made here if it has none).
pub(super) async fn post(State(s): Svc, c: CouchCall, body: Body) -> Reply {
    let name = c.param("db");
    let doc = json_body(&c.headers, body, s.limits().max_document_bytes).await?;
    let max_att = s.limits().max_attachment_bytes;
    let edit = couch::parse_edit(&doc, Mode::NewEdits, None, &mut new_uuid, max_att)?;
    write_single(&s, &c, name, edit, Mode::NewEdits, StatusCode::CREATED).await
}

/// `DELETE /{db}/{id}?rev=…` (or `If-Match`).
pub(super) async fn delete(State(s): Svc, c: CouchCall) -> Reply {
    let name = c.param("db");
    let id = doc_id(&c);
    let rev = c
        .text("rev")
        .map(str::to_string)
        .or_else(|| {
            c.headers
                .get(header::IF_MATCH)
                .and_then(|v| v.to_str().ok())
                .map(|v| v.trim_matches('"').to_string())
        })
        .ok_or_else(CouchError::conflict)?;
    let doc = json!({"_id": id, "_rev": rev, "_deleted": true});
    let edit = couch::parse_edit(&doc, Mode::NewEdits, Some(&id), &mut new_uuid, 0)?;
    write_single(&s, &c, name, edit, Mode::NewEdits, StatusCode::OK).await
}

pub(super) fn mode_of(new_edits: bool) -> Mode {
    if new_edits {
        Mode::NewEdits
    } else {
        Mode::Replicated
    }
}

pub(super) async fn write_single(
    s: &Arc<Service>,
    c: &CouchCall,
    name: String,
    edit: Edit,
    mode: Mode,
    status: StatusCode,
) -> Reply {
    let id = edit.id.clone();
    let mut results = c
        .run(s, move |s, caller| {
            s.couch_write(caller, &name, vec![edit], mode)
        })
        .await?;
    let rev = results
        .pop()
        .unwrap_or_else(|| Err(CouchError::internal("no result")))?;
    Ok(json(
        status,
        &json!({"ok": true, "id": id, "rev": rev.to_string()}),
    ))
}

/// `POST /{db}/_bulk_docs`: `{"docs": [...], "new_edits": bool}`.
pub(super) async fn bulk_docs(State(s): Svc, c: CouchCall, body: Body) -> Reply {
    let name = c.param("db");
    let body = json_body(&c.headers, body, bulk_limit(&s)).await?;
    let docs = body
        .get("docs")
        .and_then(Value::as_array)
        .ok_or_else(|| CouchError::bad_request("POST body must include `docs` parameter."))?;
    if docs.len() > MAX_DOCS {
        return Err(Fail(CouchError::too_large(format!(
            "at most {MAX_DOCS} documents per request"
        ))));
    }
    let new_edits = match body.get("new_edits") {
        None => true,
        Some(Value::Bool(b)) => *b,
        Some(_) => return Err(Fail(CouchError::bad_request("new_edits must be a boolean"))),
    };
    let mode = mode_of(new_edits);
    let max_att = s.limits().max_attachment_bytes;
    // `_local` documents may come in the same request (CouchDB takes them
    // there too); they are written as at `/_local/{id}`, after the rest.
    let (locals, docs): (Vec<&Value>, Vec<&Value>) = docs.iter().partition(|d| {
        d.get("_id")
            .and_then(Value::as_str)
            .is_some_and(|id| id.starts_with("_local/"))
    });
    let locals: Vec<(String, LocalOp)> = locals.into_iter().map(local_op).collect();
    let edits = docs
        .iter()
        .map(|d| couch::parse_edit(d, mode, None, &mut new_uuid, max_att))
        .collect::<CouchResult<Vec<Edit>>>()?;
    let ids: Vec<String> = edits.iter().map(|e| e.id.clone()).collect();
    let (results, local_results) = c
        .run(&s, move |s, caller| {
            let results = s.couch_write(caller, &name, edits, mode)?;
            let locals = locals
                .into_iter()
                .map(|(id, op)| {
                    let answer = s.couch_local(caller, &name, &id, op);
                    (format!("_local/{id}"), answer)
                })
                .collect::<Vec<_>>();
            Ok((results, locals))
        })
        .await?;
    let mut answers: Vec<Value> = ids
        .iter()
        .zip(results)
        .filter_map(|(id, r)| match r {
            Ok(rev) if new_edits => Some(json!({"ok": true, "id": id, "rev": rev.to_string()})),
            Ok(_) => None,
            Err(e) => Some(e.for_doc(id, None)),
        })
        .collect();
    for (id, r) in local_results {
        match r {
            Ok(a) if new_edits => answers.push(a),
            Ok(_) => {}
            Err(e) => answers.push(e.for_doc(&id, None)),
        }
    }
    Ok(json(StatusCode::CREATED, &json!(answers)))
}

/// A `_local/{id}` document of a `_bulk_docs` request as the write it
/// asks for: a deletion of the revision it names, or a put.
fn local_op(doc: &Value) -> (String, LocalOp) {
    let body = doc.as_object().cloned().unwrap_or_default();
    let id = body["_id"].as_str().unwrap_or_default()["_local/".len()..].to_string();
    let op = match body.get("_deleted") {
        Some(Value::Bool(true)) => {
            LocalOp::Delete(body.get("_rev").and_then(Value::as_str).map(str::to_string))
        }
        _ => LocalOp::Put(body),
    };
    (id, op)
}

/// `POST /{db}/_bulk_get`: `{"docs": [{"id", "rev"}]}`, `?revs=true`.
pub(super) async fn bulk_get(State(s): Svc, c: CouchCall, body: Body) -> Reply {
    let name = c.param("db");
    let revs = c.flag("revs")?;
    let latest = c.flag("latest")?;
    let body = json_body(&c.headers, body, bulk_limit(&s)).await?;
    let wanted = body
        .get("docs")
        .and_then(Value::as_array)
        .ok_or_else(|| CouchError::bad_request("POST body must include `docs` parameter."))?;
    if wanted.len() > MAX_DOCS {
        return Err(Fail(CouchError::too_large(format!(
            "at most {MAX_DOCS} documents per request"
        ))));
    }
    let wanted = wanted
        .iter()
        .map(|w| {
            let id = w
                .get("id")
                .and_then(Value::as_str)
                .ok_or_else(|| CouchError::bad_request("each of docs needs an id"))?;
            let rev = match w.get("rev") {
                None => None,
                Some(Value::String(r)) => Some(r.parse::<Rev>().map_err(CouchError::bad_request)?),
                Some(_) => return Err(CouchError::bad_request("rev must be a string")),
            };
            Ok((id.to_string(), rev))
        })
        .collect::<CouchResult<Vec<(String, Option<Rev>)>>>()?;
    let mode = match c.flag("attachments")? {
        true => AttMode::Inline,
        false => AttMode::Stubs,
    };
    let results = c
        .run(&s, move |s, caller| {
            let d = s.couch_db(caller, &name, AccessLevel::Reader)?;
            wanted
                .iter()
                .map(|(id, rev)| {
                    let doc = d.doc(id)?;
                    let leaf = doc.as_ref().and_then(|d| match rev {
                        Some(r) => pick(d, r, latest),
                        None => Some(d.winner()),
                    });
                    let one = match leaf {
                        Some(l) => {
                            json!({"ok": couch::leaf_body(&d.db, l, id, revs, mode, &[])?.0})
                        }
                        None => json!({"error": {
                            "id": id,
                            "rev": rev.as_ref().map(Rev::to_string),
                            "error": "not_found",
                            "reason": "missing",
                        }}),
                    };
                    Ok(json!({"id": id, "docs": [one]}))
                })
                .collect::<CouchResult<Vec<Value>>>()
        })
        .await?;
    Ok(json(StatusCode::OK, &json!({"results": results})))
}

/// `POST /{db}/_revs_diff`: `{id: [rev, …]}` → the revisions missing here.
pub(super) async fn revs_diff(State(s): Svc, c: CouchCall, body: Body) -> Reply {
    let name = c.param("db");
    let body = json_body(&c.headers, body, bulk_limit(&s)).await?;
    let Value::Object(asked) = body else {
        return Err(Fail(CouchError::bad_request(
            "Request body must be a JSON object",
        )));
    };
    if asked.len() > MAX_DOCS {
        return Err(Fail(CouchError::too_large(format!(
            "at most {MAX_DOCS} documents per request"
        ))));
    }
    let asked = asked
        .into_iter()
        .map(|(id, revs)| Ok((id, rev_list(Some(revs), "each id's revisions")?)))
        .collect::<CouchResult<Vec<(String, Vec<Rev>)>>>()?;
    let ids: Vec<String> = asked.iter().map(|(id, _)| id.clone()).collect();
    let docs = c
        .run(&s, move |s, caller| s.couch_docs(caller, &name, &ids))
        .await?;
    let mut out = Map::new();
    for ((id, revs), doc) in asked.into_iter().zip(docs) {
        let (missing, possible) = couch::revs_diff(doc.as_ref(), &revs);
        if missing.is_empty() {
            continue;
        }
        let mut entry = json!({"missing": missing.iter().map(Rev::to_string).collect::<Vec<_>>()});
        if !possible.is_empty() {
            entry["possible_ancestors"] =
                json!(possible.iter().map(Rev::to_string).collect::<Vec<_>>());
        }
        out.insert(id, entry);
    }
    Ok(json(StatusCode::OK, &Value::Object(out)))
}

async fn local(s: &Arc<Service>, c: &CouchCall, op: LocalOp) -> Result<Value, Fail> {
    let (name, id) = (c.param("db"), c.param("id"));
    c.run(s, move |s, caller| s.couch_local(caller, &name, &id, op))
        .await
}

/// `GET /{db}/_local/{id}`.
pub(super) async fn get_local(State(s): Svc, c: CouchCall) -> Reply {
    let doc = local(&s, &c, LocalOp::Get).await?;
    Ok(json(StatusCode::OK, &doc))
}

/// `PUT /{db}/_local/{id}`.
pub(super) async fn put_local(State(s): Svc, c: CouchCall, body: Body) -> Reply {
    let body = json_body(&c.headers, body, s.limits().max_document_bytes).await?;
    let Value::Object(body) = body else {
        return Err(Fail(CouchError::bad_request(
            "Document must be a JSON object",
        )));
    };
    let answer = local(&s, &c, LocalOp::Put(body)).await?;
    Ok(json(StatusCode::CREATED, &answer))
}

/// `DELETE /{db}/_local/{id}?rev=…`.
pub(super) async fn delete_local(State(s): Svc, c: CouchCall) -> Reply {
    let rev = c.text("rev").map(str::to_string);
    let answer = local(&s, &c, LocalOp::Delete(rev)).await?;
    Ok(json(StatusCode::OK, &answer))
}
