//! A database: create, describe, delete; its document listing and
//! `_ensure_full_commit` (every write is durable when
//! answered, so there is nothing to flush).

use super::call::{json, json_body, CouchCall, Fail, Reply};
use crate::service::Service;
use axum::body::Body;
use axum::extract::State;
use axum::http::{Method, StatusCode};
use couch::{CouchError, CouchResult};
use serde_json::{json, Map, Value};
use std::sync::Arc;

type Svc = State<Arc<Service>>;

/// Largest body of a listing request (`keys`, `doc_ids`).
const MAX_LIST_BODY: usize = 8 << 20;

pub(super) async fn create(State(s): Svc, c: CouchCall) -> Reply {
    let name = c.param("db");
    c.run(&s, move |s, caller| s.couch_create_db(caller, &name))
        .await?;
    Ok(json(StatusCode::CREATED, &json!({"ok": true})))
}

pub(super) async fn info(State(s): Svc, c: CouchCall) -> Reply {
    let name = c.param("db");
    let info = c
        .run(&s, move |s, caller| s.couch_db_info(caller, &name))
        .await?;
    Ok(json(StatusCode::OK, &info))
}

pub(super) async fn delete(State(s): Svc, c: CouchCall) -> Reply {
    let name = c.param("db");
    c.run(&s, move |s, caller| s.couch_delete_db(caller, &name))
        .await?;
    Ok(json(StatusCode::OK, &json!({"ok": true})))
}

pub(super) async fn ensure_full_commit(State(s): Svc, c: CouchCall) -> Reply {
    let name = c.param("db");
    c.run(&s, move |s, caller| {
        s.couch_db(caller, &name, nsf::AccessLevel::Reader)
            .map(|_| ())
    })
    .await?;
    Ok(json(
        StatusCode::CREATED,
        &json!({"ok": true, "instance_start_time": "0"}),
    ))
}

pub(super) fn strings(v: Option<Value>, what: &str) -> Result<Vec<String>, Fail> {
    let bad = || {
        Fail(CouchError::bad_request(format!(
            "{what} must be a list of strings"
        )))
    };
    match v {
        Some(Value::Array(a)) => a
            .into_iter()
            .map(|v| match v {
                Value::String(s) => Ok(s),
                _ => Err(bad()),
            })
            .collect(),
        _ => Err(bad()),
    }
}

/// The key bounds and paging of `_all_docs`.
struct Range {
    start: Option<String>,
    end: Option<String>,
    inclusive_end: bool,
    descending: bool,
    skip: usize,
    limit: usize,
}

fn key_param(c: &CouchCall, names: &[&str]) -> CouchResult<Option<String>> {
    for n in names {
        if let Some(v) = c.json(n)? {
            return match v {
                Value::String(s) => Ok(Some(s)),
                _ => Err(CouchError::bad_request(format!(
                    "{n} must be a JSON string"
                ))),
            };
        }
    }
    Ok(None)
}

/// `GET|POST /{db}/_all_docs`: `include_docs`, `keys` (or a body's), `key`,
/// `startkey`/`start_key`, `endkey`/`end_key`, `inclusive_end`,
/// `descending`, `skip`, `limit`, `update_seq`. Rows and `total_rows` hold
/// only documents the caller may read.
pub(super) async fn all_docs(State(s): Svc, c: CouchCall, method: Method, body: Body) -> Reply {
    let name = c.param("db");
    let include_docs = c.flag("include_docs")?;
    let keys = if method == Method::POST {
        let b = json_body(&c.headers, body, MAX_LIST_BODY).await?;
        match b.get("keys") {
            None => None,
            v => Some(strings(v.cloned(), "keys")?),
        }
    } else {
        c.json("keys")?
            .map(|v| strings(Some(v), "keys"))
            .transpose()?
    };
    let key = key_param(&c, &["key"])?;
    let descending = c.flag("descending")?;
    let mut range = Range {
        start: key.clone().or(key_param(&c, &["startkey", "start_key"])?),
        end: key.or(key_param(&c, &["endkey", "end_key"])?),
        inclusive_end: c.text("inclusive_end") != Some("false"),
        descending,
        skip: c.number("skip")?.unwrap_or(0) as usize,
        limit: c.number("limit")?.map_or(usize::MAX, |n| n as usize),
    };
    if keys.is_some() && (range.start.is_some() || range.end.is_some()) {
        return Err(Fail(CouchError::query_parse(
            "`keys` is incompatible with `key`, `start_key` and `end_key`",
        )));
    }
    let update_seq = c.flag("update_seq")?;
    let name2 = name.clone();
    let (rows, seq) = c
        .run(&s, move |s, caller| {
            s.couch_all_docs(caller, &name2, update_seq)
        })
        .await?;
    let total = rows.len();
    let row_json = |r: &couch::AllDocsRow| {
        let mut v = json!({"id": r.id, "key": r.id, "value": {"rev": r.rev}});
        if include_docs {
            v["doc"] = Value::Object(r.doc.clone());
        }
        v
    };
    let out: Vec<Value> = match keys {
        Some(mut keys) => {
            // Rows come in the order of `keys` (reversed if descending),
            // then skip and limit apply, as in CouchDB.
            if range.descending {
                keys.reverse();
            }
            let docs = c
                .run(&s, move |s, caller| {
                    let found = s.couch_docs(caller, &name, &keys)?;
                    Ok(keys.into_iter().zip(found).collect::<Vec<_>>())
                })
                .await?;
            docs.into_iter()
                .skip(range.skip)
                .take(range.limit)
                .map(|(key, doc)| match doc {
                    None => json!({"key": key, "error": "not_found"}),
                    Some(d) => {
                        let w = d.winner();
                        let mut v =
                            json!({"id": d.id, "key": key, "value": {"rev": w.rev.to_string()}});
                        if w.deleted() {
                            v["value"]["deleted"] = json!(true);
                            if include_docs {
                                v["doc"] = Value::Null;
                            }
                        } else if include_docs {
                            v["doc"] = Value::Object(w.to_json(&d.id, false));
                        }
                        v
                    }
                })
                .collect()
        }
        None => {
            if range.descending {
                std::mem::swap(&mut range.start, &mut range.end);
            }
            let within = |id: &str| {
                range.start.as_deref().is_none_or(|s| id >= s)
                    && range.end.as_deref().is_none_or(|e| {
                        if range.inclusive_end || range.descending {
                            id <= e
                        } else {
                            id < e
                        }
                    })
                    && !(range.descending
                        && !range.inclusive_end
                        && range.start.as_deref() == Some(id))
            };
            let selected: Box<dyn Iterator<Item = &couch::AllDocsRow>> = if range.descending {
                Box::new(rows.iter().rev())
            } else {
                Box::new(rows.iter())
            };
            selected
                .filter(|r| within(&r.id))
                .skip(range.skip)
                .take(range.limit)
                .map(row_json)
                .collect()
        }
    };
    let mut answer = Map::new();
    answer.insert("total_rows".into(), json!(total));
    answer.insert("offset".into(), json!(range.skip));
    answer.insert("rows".into(), json!(out));
    if update_seq {
        answer.insert("update_seq".into(), json!(seq));
    }
    Ok(json(StatusCode::OK, &Value::Object(answer)))
}
