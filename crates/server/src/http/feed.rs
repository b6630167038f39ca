//! The change feed over HTTP: `GET /db/{db}/docs?since=N&feed=longpoll`
//! and `feed=continuous`.
//!
//! Both follow the database's commits (`nsf::Database::next_change`, via
//! `Service::changes_after`) rather than polling, and show only what the
//! caller may read: a change to a document behind `$Readers` moves the
//! cursor but never wakes the caller or appears.
//!
//! ```text
//!   longpoll     {"docs":[…],"next":N,"more":b} once something changed,
//!                or with no docs when `timeout` ms (default 60 s) pass
//!   continuous   one document per line (NDJSON, `$changeseq` its cursor)
//!                as changes commit; a blank line every `heartbeat` ms
//!                (default 30 s) with nothing to say; ends after `timeout`
//!                ms if given, when the client goes, or at shutdown
//! ```
//!
//! A feed holds one HTTP connection, so the connection limit bounds the
//! feeds; it holds no worker thread while it waits. At shutdown every
//! feed ends at once (`Service::until_draining`): a longpoll answers with
//! what it has, a continuous feed ends its body, so no feed holds the
//! server past `shutdown_grace_secs`.

use super::answer::{bad, json_text, Answer, ApiError};
use super::documents::document_text;
use super::extract::{open_db, Call};
use crate::service::Service;
use crate::stats::Op;
use axum::body::{Body, Bytes};
use axum::http::{header, HeaderValue, StatusCode};
use axum::response::Response;
use protocol::Cursor;
use std::sync::Arc;
use std::time::Duration;

/// Longest a longpoll waits, and its default.
const MAX_LONGPOLL: Duration = Duration::from_secs(300);
const DEFAULT_LONGPOLL: Duration = Duration::from_secs(60);
/// A continuous feed's blank line when nothing changed, by default.
const DEFAULT_HEARTBEAT: Duration = Duration::from_secs(30);
/// The shortest heartbeat accepted, so a feed cannot be made to spin.
const MIN_HEARTBEAT: Duration = Duration::from_millis(10);

/// Which feed a request asks for.
enum Feed {
    Longpoll,
    Continuous,
}

/// Answers a change listing with `feed=…` (documents.rs hands it over).
pub(super) async fn changes_feed(s: Arc<Service>, c: Call, since: Cursor, limit: u32) -> Answer {
    let feed = match c.query.text("feed").as_deref() {
        Some("longpoll") => Feed::Longpoll,
        Some("continuous") => Feed::Continuous,
        Some(other) => {
            return Err(bad(format!(
                "query parameter feed={other:?}: expected longpoll or continuous"
            )))
        }
        None => return Err(bad("a change feed needs feed=longpoll or feed=continuous")),
    };
    let millis = |key: &str| -> Result<Option<Duration>, ApiError> {
        Ok(c.query.number::<u64>(key)?.map(Duration::from_millis))
    };
    let timeout = millis("timeout")?;
    let heartbeat = millis("heartbeat")?.unwrap_or(DEFAULT_HEARTBEAT);
    if heartbeat < MIN_HEARTBEAT {
        return Err(bad(format!(
            "query parameter heartbeat: at least {} ms",
            MIN_HEARTBEAT.as_millis()
        )));
    }
    let path = c.param("db");
    let (caller, db) = c
        .run(&s, Op::Changes, move |s, caller| {
            let db = open_db(s, caller, &path)?;
            s.require_reader(caller, &db)?;
            Ok((Arc::new(caller.clone()), db))
        })
        .await?;
    match feed {
        Feed::Longpoll => {
            let wait = timeout.unwrap_or(DEFAULT_LONGPOLL).min(MAX_LONGPOLL);
            let (docs, next, more) = s
                .changes_after(&caller, &db, since, limit, wait, s.until_draining())
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
        Feed::Continuous => {
            let end = timeout.map(|t| tokio::time::Instant::now() + t);
            let state = (s, caller, db, since, end, false);
            let body = futures_util::stream::unfold(state, move |st| async move {
                let (s, caller, db, since, end, over) = st;
                if over || end.is_some_and(|e| tokio::time::Instant::now() >= e) {
                    return None;
                }
                let wait = match end {
                    Some(e) => heartbeat.min(e - tokio::time::Instant::now()),
                    None => heartbeat,
                };
                let stop = s.until_draining();
                let draining = s.until_draining();
                let step = s
                    .changes_after(&caller, &db, since, limit, wait, stop)
                    .await;
                let stopping = futures_util::FutureExt::now_or_never(draining).is_some();
                match step {
                    Ok((docs, next, _)) => {
                        let mut out = String::new();
                        for d in &docs {
                            out.push_str(&document_text(d));
                            out.push('\n');
                        }
                        if docs.is_empty() {
                            out.push('\n');
                        }
                        let item: Result<Bytes, std::io::Error> = Ok(Bytes::from(out));
                        Some((item, (s, caller, db, next, end, stopping)))
                    }
                    Err(e) => {
                        let line = format!("{}\n", serde_json::json!({ "error": e.to_string() }));
                        Some((Ok(Bytes::from(line)), (s, caller, db, since, end, true)))
                    }
                }
            });
            let mut r = Response::new(Body::from_stream(body));
            r.headers_mut().insert(
                header::CONTENT_TYPE,
                HeaderValue::from_static("application/x-ndjson"),
            );
            Ok(r)
        }
    }
}
