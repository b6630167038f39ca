//! `POST /{db}/_find`: Mango queries over the selector subset
//! (`couch::Selector`), answered by a scan of the documents the caller
//! may read — no index yet, so the scan is bounded: it stops after
//! `MAX_SCANNED` documents and says so in `warning`, and a `sort` (which
//! needs an index to be bounded) is refused.
//!
//! ```text
//!   {"selector": {...}, "limit": 25, "skip": 0, "fields": ["_id", "a.b"]}
//!     -> {"docs": [...], "bookmark": "nil", "warning": "..."}
//! ```

use super::call::{json, json_body, CouchCall, Fail, Reply};
use crate::service::Service;
use axum::body::Body;
use axum::extract::State;
use axum::http::StatusCode;
use couch::{CouchError, Selector};
use serde_json::{json, Map, Value};
use std::sync::Arc;

type Svc = State<Arc<Service>>;

/// Most rows a query answers when it names no limit (CouchDB's default).
const DEFAULT_LIMIT: usize = 25;

/// Most documents one query looks at.
const MAX_SCANNED: usize = 100_000;

/// Largest query body.
const MAX_QUERY: usize = 1 << 20;

pub(super) async fn find(State(s): Svc, c: CouchCall, body: Body) -> Reply {
    let name = c.param("db");
    let q = json_body(&c.headers, body, MAX_QUERY).await?;
    let Value::Object(q) = q else {
        return Err(Fail(CouchError::bad_request("a query is a JSON object")));
    };
    let selector = Selector::parse(
        q.get("selector")
            .ok_or_else(|| CouchError::bad_request("a query needs a selector"))?,
    )?;
    for key in q.keys() {
        if ![
            "selector",
            "limit",
            "skip",
            "fields",
            "sort",
            "use_index",
            "bookmark",
            "execution_stats",
            "r",
            "conflicts",
            "update",
            "stable",
            "stale",
        ]
        .contains(&key.as_str())
        {
            return Err(Fail(CouchError::bad_request(format!(
                "invalid query field {key:?}"
            ))));
        }
    }
    let number = |k: &str, default: usize| match q.get(k) {
        None => Ok(default),
        Some(v) => v
            .as_u64()
            .map(|n| n as usize)
            .ok_or_else(|| CouchError::bad_request(format!("{k} must be a whole number"))),
    };
    let (limit, skip) = (number("limit", DEFAULT_LIMIT)?, number("skip", 0)?);
    if q.get("sort")
        .is_some_and(|v| v.as_array().is_none_or(|a| !a.is_empty()))
    {
        return Err(Fail(CouchError::bad_request(
            "sort needs an index, and this server has none for _find yet",
        )));
    }
    let fields = match q.get("fields") {
        None => None,
        Some(Value::Array(a)) => Some(
            a.iter()
                .map(|f| {
                    f.as_str()
                        .map(str::to_string)
                        .ok_or_else(|| CouchError::bad_request("fields must be strings"))
                })
                .collect::<Result<Vec<_>, _>>()?,
        ),
        Some(_) => return Err(Fail(CouchError::bad_request("fields must be a list"))),
    };
    let (rows, _) = c
        .run(&s, move |s, caller| s.couch_all_docs(caller, &name, false))
        .await?;
    let scanned = rows.len().min(MAX_SCANNED);
    let docs: Vec<Value> = rows
        .into_iter()
        .take(MAX_SCANNED)
        .filter(|r| selector.matches(&r.doc))
        .skip(skip)
        .take(limit)
        .map(|r| Value::Object(project(r.doc, fields.as_deref())))
        .collect();
    let mut warning =
        "No matching index found, create an index to optimize query time.".to_string();
    if scanned == MAX_SCANNED {
        warning.push_str(&format!(
            " The scan stopped after {MAX_SCANNED} documents: narrow the selector by _id."
        ));
    }
    Ok(json(
        StatusCode::OK,
        &json!({"docs": docs, "bookmark": "nil", "warning": warning}),
    ))
}

/// The fields asked for (dotted paths into objects), or the whole document.
fn project(doc: Map<String, Value>, fields: Option<&[String]>) -> Map<String, Value> {
    let Some(fields) = fields else {
        return doc;
    };
    let mut out = Map::new();
    for f in fields {
        let path: Vec<&str> = f.split('.').collect();
        let mut v = doc.get(path[0]);
        for key in &path[1..] {
            v = v.and_then(|x| x.get(*key));
        }
        if let Some(v) = v {
            insert_path(&mut out, &path, v.clone());
        }
    }
    out
}

fn insert_path(out: &mut Map<String, Value>, path: &[&str], v: Value) {
    match path {
        [last] => {
            out.insert(last.to_string(), v);
        }
        [first, rest @ ..] => {
            let inner = out
                .entry(first.to_string())
                .or_insert_with(|| Value::Object(Map::new()));
            if let Value::Object(m) = inner {
                insert_path(m, rest, v);
            }
        }
        [] => {}
    }
}
