//! `GET|POST /{db}/_changes`: the change feed in its four forms.
//!
//! ```text
//!   feed=normal      one JSON answer: results, last_seq
//!   feed=longpoll    the same, once something changed (or timeout/heartbeat)
//!   feed=continuous  one JSON line per change as it happens, "\n" as a
//!                    heartbeat, {"last_seq"} as the last line
//!   feed=eventsource Server-Sent Events: `id: seq` + `data: row` per
//!                    change, `event: heartbeat`; Last-Event-ID resumes
//! ```
//!
//! Filters: `_doc_ids` (`doc_ids`, JSON, or a POST body's) and
//! `_selector` (a POST body's `selector`, or the `selector` parameter;
//! `couch::Selector`, a subset of Mango). Every form shows only documents
//! the caller may read, and `last_seq` only ever names a change the caller
//! may read (`couch::ChangesPage`): a hidden document's change is neither
//! a row nor a jump of `last_seq`. A continuous feed runs on a worker
//! thread that writes rows into a bounded channel the answer's body
//! reads; it ends when the client goes, at `timeout`, or at shutdown.

use super::call::{json, json_body, CouchCall, Fail, Reply};
use super::db::strings;
use crate::service::{FeedEvent, Keep, Service};
use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::{header, HeaderValue, Method, StatusCode};
use axum::response::{IntoResponse, Response};
use couch::{Change, CouchError, Selector};
use serde_json::{json, Value};
use std::collections::HashSet;
use std::sync::Arc;
use std::time::Duration;

type Svc = State<Arc<Service>>;

/// Most rows a change feed answer carries when the client sets no limit
/// (a client pages with `since` = `last_seq`).
const MAX_CHANGES: usize = 10_000;

/// Longest wait of `feed=longpoll`, and a continuous feed's timeout when
/// it names none and no heartbeat.
const MAX_WAIT: Duration = Duration::from_secs(60);

/// Longest a continuous feed stays open (it holds a worker thread).
const MAX_FEED: Duration = Duration::from_secs(600);

/// Largest filter body (`doc_ids`, `selector`).
const MAX_FILTER_BODY: usize = 8 << 20;

/// Rows a continuous feed may have written ahead of a slow client.
const FEED_QUEUE: usize = 64;

#[derive(Clone, Copy, PartialEq, Eq)]
enum Form {
    Normal,
    LongPoll,
    Continuous,
    EventSource,
}

pub(super) async fn changes(State(s): Svc, c: CouchCall, method: Method, body: Body) -> Reply {
    let name = c.param("db");
    let since = match since(&c)? {
        Since::Now => None,
        Since::At(n) => Some(n),
    };
    let limit = match c.number("limit")? {
        Some(0) | None => MAX_CHANGES,
        Some(n) => (n as usize).min(MAX_CHANGES),
    };
    let all_leaves = match c.text("style") {
        None | Some("main_only") => false,
        Some("all_docs") => true,
        Some(v) => {
            return Err(Fail(CouchError::bad_request(format!(
                "Invalid style {v:?}"
            ))))
        }
    };
    let include_docs = c.flag("include_docs")?;
    let descending = c.flag("descending")?;
    let form = match c.text("feed") {
        None | Some("normal") => Form::Normal,
        Some("longpoll") => Form::LongPoll,
        Some("continuous") => Form::Continuous,
        Some("eventsource") => Form::EventSource,
        Some(f) => {
            return Err(Fail(CouchError::bad_request(format!(
                "Invalid feed {f:?}: normal, longpoll, continuous or eventsource"
            ))))
        }
    };
    if descending && form != Form::Normal {
        return Err(Fail(CouchError::not_implemented(
            "descending change feeds are normal feeds only",
        )));
    }
    let ms = |k| c.number(k).map(|n| n.map(Duration::from_millis));
    let (timeout, heartbeat) = (ms("timeout")?, ms("heartbeat")?.filter(|h| !h.is_zero()));
    let keep = filter(&c, method, body).await?;
    if matches!(form, Form::Continuous | Form::EventSource) {
        let timeout = match (timeout, heartbeat) {
            (Some(t), _) => t.min(MAX_FEED),
            (None, Some(_)) => MAX_FEED,
            (None, None) => MAX_WAIT,
        };
        // Refuse a database the caller may not read with an error answer,
        // before the stream starts.
        let check = name.clone();
        c.run(&s, move |s, caller| {
            s.couch_db(caller, &check, nsf::AccessLevel::Reader)
                .map(|_| ())
        })
        .await?;
        let feed = Feed {
            name,
            since,
            limit,
            docs: (all_leaves, include_docs),
            keep,
            timing: (heartbeat, timeout),
            sse: form == Form::EventSource,
        };
        return Ok(stream(&s, &c, feed));
    }
    let wait = (form == Form::LongPoll).then(|| {
        let t = timeout.unwrap_or(MAX_WAIT).min(MAX_WAIT);
        heartbeat.map_or(t, |h| t.min(h))
    });
    // A descending feed is the newest rows of an ascending one (at most
    // MAX_CHANGES of them read), newest first.
    let read = if descending { MAX_CHANGES } else { limit };
    let page = c
        .run(&s, move |s, caller| {
            s.couch_changes(
                caller,
                &name,
                since,
                read,
                (all_leaves, include_docs),
                &keep,
                wait,
            )
        })
        .await?;
    let mut results: Vec<Value> = page.rows.into_iter().map(row).collect();
    let mut last_seq = json!(page.last_seq);
    if descending {
        results.reverse();
        results.truncate(limit);
        if let Some(oldest) = results.last() {
            last_seq = oldest["seq"].clone();
        }
    }
    Ok(json(
        StatusCode::OK,
        &json!({"results": results, "last_seq": last_seq, "pending": 0}),
    ))
}

enum Since {
    Now,
    At(u64),
}

/// `since` (a number or `now`), or an event source's `Last-Event-ID`.
fn since(c: &CouchCall) -> Result<Since, Fail> {
    let given = c.text("since").map(str::to_string).or_else(|| {
        c.headers
            .get("last-event-id")
            .and_then(|v| v.to_str().ok())
            .map(str::to_string)
    });
    match given.as_deref().map(|v| v.trim_matches('"')) {
        None => Ok(Since::At(0)),
        Some("now") => Ok(Since::Now),
        Some(v) => v.parse::<u64>().map(Since::At).map_err(|_| {
            Fail(CouchError::bad_request(format!(
                "Invalid since {v:?}: expected a sequence number"
            )))
        }),
    }
}

/// The filter a request names (none: every document).
async fn filter(c: &CouchCall, method: Method, body: Body) -> Result<Keep, Fail> {
    let posted = if method == Method::POST && c.text("filter").is_some() {
        Some(json_body(&c.headers, body, MAX_FILTER_BODY).await?)
    } else {
        None
    };
    let part = |key: &str| -> Result<Option<Value>, Fail> {
        match &posted {
            Some(b) => Ok(b.get(key).cloned()),
            None => Ok(c.json(key)?),
        }
    };
    match c.text("filter") {
        None => Ok(Box::new(|_| true)),
        Some("_doc_ids") => {
            let ids: HashSet<String> = strings(part("doc_ids")?, "doc_ids")?.into_iter().collect();
            Ok(Box::new(move |d| ids.contains(&d.id)))
        }
        Some("_selector") => {
            let v = part("selector")?
                .ok_or_else(|| CouchError::bad_request("filter=_selector needs a selector"))?;
            let selector = Selector::parse(&v)?;
            Ok(Box::new(move |d| {
                let w = d.winner();
                selector.matches(&w.to_json(&d.id, false))
            }))
        }
        Some(f) => Err(Fail(CouchError::not_implemented(format!(
            "filter {f:?} is not supported (only _doc_ids and _selector)"
        )))),
    }
}

/// One row of the feed as CouchDB writes it.
fn row(r: Change) -> Value {
    let mut row = json!({
        "seq": r.seq,
        "id": r.id,
        "changes": r.revs.iter().map(|rev| json!({"rev": rev})).collect::<Vec<_>>(),
    });
    if r.deleted {
        row["deleted"] = json!(true);
    }
    if let Some(doc) = r.doc {
        row["doc"] = Value::Object(doc);
    }
    row
}

/// What a continuous feed was asked for.
struct Feed {
    name: String,
    since: Option<u64>,
    limit: usize,
    docs: (bool, bool),
    keep: Keep,
    timing: (Option<Duration>, Duration),
    sse: bool,
}

/// Runs a continuous feed on a worker thread and answers with its output
/// as it comes.
fn stream(s: &Arc<Service>, c: &CouchCall, feed: Feed) -> Response {
    let (tx, mut rx) = tokio::sync::mpsc::channel::<Bytes>(FEED_QUEUE);
    let (s, credentials) = (s.clone(), c.credentials.clone());
    let sse = feed.sse;
    tokio::task::spawn_blocking(move || {
        let Ok(caller) = credentials.caller(&s) else {
            return;
        };
        let send = |b: String| tx.blocking_send(Bytes::from(b)).is_ok();
        let mut out = |e: FeedEvent| match e {
            FeedEvent::Row(r) if sse => {
                let seq = r.seq;
                send(format!("id: {seq}\ndata: {}\n\n", row(r)))
            }
            FeedEvent::Row(r) => send(format!("{}\n", row(r))),
            FeedEvent::Heartbeat if sse => send("event: heartbeat\ndata: \n\n".into()),
            FeedEvent::Heartbeat => send("\n".into()),
            FeedEvent::Tick => !tx.is_closed(),
            FeedEvent::End(_) if sse => true,
            FeedEvent::End(seq) => send(format!("{}\n", json!({"last_seq": seq, "pending": 0}))),
        };
        if let Err(e) = s.couch_feed(
            &caller,
            &feed.name,
            feed.since,
            feed.limit,
            feed.docs,
            &feed.keep,
            feed.timing,
            &mut out,
        ) {
            tracing::info!(db = %feed.name, error = %e, "a CouchDB change feed ended early");
        }
    });
    let body = futures_util::stream::poll_fn(move |cx| {
        rx.poll_recv(cx).map(|b| b.map(Ok::<_, std::io::Error>))
    });
    let mut r = (StatusCode::OK, Body::from_stream(body)).into_response();
    let ct = if sse {
        "text/event-stream"
    } else {
        "application/json"
    };
    r.headers_mut()
        .insert(header::CONTENT_TYPE, HeaderValue::from_static(ct));
    r.headers_mut()
        .insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    r
}
