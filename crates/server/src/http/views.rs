//! Views and folders (read, find, update, create, delete, change a folder) and
//! formula searches, streamed as NDJSON.

use super::answer::{
    bad, encode_segment, error_body, json_response, ok, with_header, Answer, ApiError,
};
use super::documents::document_text;
use super::extract::{
    only_keys, open_db, parse_object, parse_unid, read_body, string_field, Call, Svc,
};
use super::stream::{stream_job, streamed, DOWNLOAD_QUEUE};
use crate::service::FolderChange;
use crate::stats::Op;
use crate::ServerError;
use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::{header, StatusCode};
use protocol::{ReadFlags, Start};
use serde_json::{json, Value as Json};
use tokio::sync::mpsc;
use views::Kind;

/// Search results are sent to the client in batches of about this size.
const SEARCH_BATCH: usize = 32 << 10;
/// Rows a view read returns when the query does not say.
const DEFAULT_VIEW_ROWS: u32 = 40;

pub(super) async fn search(State(s): Svc, c: Call, body: Body) -> Answer {
    c.query.allow(&[])?;
    let bytes = read_body(&c.headers, body, s.limits().max_document_bytes).await?;
    let m = parse_object(&bytes, "the search")?;
    only_keys(&m, &["formula", "since"], "the search")?;
    let formula =
        string_field(&m, "formula", "the search")?.ok_or_else(|| bad("\"formula\" is missing"))?;
    formula::Formula::parse(&formula).map_err(|e| bad(format!("search formula: {e}")))?;
    let since = match string_field(&m, "since", "the search")? {
        None => None,
        Some(t) => Some(
            nsf::Timestamp::parse_rfc3339(&t)
                .map(|t| protocol::Timestamp(t.0))
                .ok_or_else(|| bad(format!("\"since\" {t:?} is not an RFC 3339 date-time")))?,
        ),
    };
    let path = c.param("db");
    let (tx, rx) = mpsc::channel(DOWNLOAD_QUEUE);
    stream_job(&s, &c, Op::Search, tx, move |s, caller, out| {
        let db = open_db(s, caller, &path)?;
        let mut batch = Vec::with_capacity(SEARCH_BATCH);
        let found = s.search(caller, &db, &formula, since, |doc| {
            batch.extend_from_slice(document_text(&doc).as_bytes());
            batch.push(b'\n');
            if batch.len() >= SEARCH_BATCH {
                if !out.started {
                    out.start(NDJSON.into(), None)?;
                }
                out.data(Bytes::from(std::mem::take(&mut batch)))?;
            }
            Ok(())
        })?;
        if !out.started {
            out.start(NDJSON.into(), None)?;
        }
        batch.extend_from_slice(format!("{}\n", json!({"found": found})).as_bytes());
        out.data(Bytes::from(batch))
    });
    streamed(rx, |e| {
        let status = ApiError::from(e);
        let line = error_body(status.status, &status.reason);
        Ok(Bytes::from(format!("{line}\n")))
    })
    .await
}

const NDJSON: &str = "application/x-ndjson";

// ---------------------------------------------------------------- views

pub(super) async fn read_view(State(s): Svc, c: Call) -> Answer {
    c.query.allow(&[
        "start",
        "count",
        "key",
        "prefix",
        "backward",
        "categories",
        "total",
    ])?;
    let position = c.query.number::<u64>("start")?;
    let key = c.query.text("key");
    let prefix = c.query.flag("prefix")?;
    let start = match (position, key) {
        (Some(_), Some(_)) => return Err(bad("give start or key, not both")),
        (_, None) if prefix => return Err(bad("prefix=true needs a key")),
        (p, None) => Start::Position(p.unwrap_or(0)),
        (None, Some(key)) => Start::Key { key, prefix },
    };
    let count = c.query.number("count")?.unwrap_or(DEFAULT_VIEW_ROWS);
    let flags = ReadFlags {
        backward: c.query.flag("backward")?,
        categories: c.query.flag("categories")?,
        count: c.query.flag("total")?,
    };
    let (path, name) = (c.param("db"), c.param("name"));
    let (info, rows, total) = c
        .run(&s, Op::ReadEntries, move |s, caller| {
            let db = open_db(s, caller, &path)?;
            let info = s.open_collection(caller, &db, &name)?;
            let (rows, total) = s.read_entries(caller, &db, &name, &start, count, flags)?;
            Ok((info, rows, total))
        })
        .await?;
    let rows: Vec<Json> = rows
        .iter()
        .map(|r| crate::json::row(r, &info.titles))
        .collect();
    let mut out = json!({
        "titles": info.titles,
        "categorized": info.categorized,
        "seq": info.seq,
        "rows": rows,
    });
    if let Some(total) = total {
        out["total"] = json!(total);
    }
    Ok(ok(out))
}

/// `GET /db/{db}/views`: the views and folders, `[{"name","kind"}]`.
pub(super) async fn list_views(State(s): Svc, c: Call) -> Answer {
    c.query.allow(&[])?;
    let path = c.param("db");
    let list = c
        .run(&s, Op::OpenCollection, move |s, caller| {
            s.list_collections(caller, &open_db(s, caller, &path)?)
        })
        .await?;
    let list: Vec<Json> = list
        .into_iter()
        .map(|(name, kind)| {
            let kind = match kind {
                Kind::View => "view",
                Kind::Folder => "folder",
            };
            json!({"name": name, "kind": kind})
        })
        .collect();
    Ok(ok(Json::Array(list)))
}

pub(super) async fn create_view(State(s): Svc, c: Call, body: Body) -> Answer {
    c.query.allow(&[])?;
    let bytes = read_body(&c.headers, body, s.limits().max_document_bytes).await?;
    let def = s.parse_view(&bytes)?;
    let name = def.name.clone();
    let kind = match def.kind {
        Kind::Folder => "folders",
        Kind::View => "views",
    };
    let path = c.param("db");
    c.run(&s, Op::UpdateCollection, move |s, caller| {
        s.create_view(caller, &open_db(s, caller, &path)?, def)
    })
    .await?;
    let location = format!(
        "/db/{}/{kind}/{}",
        encode_segment(&c.param("db")),
        encode_segment(&name)
    );
    Ok(with_header(
        json_response(StatusCode::CREATED, &json!({"ok": true, "name": name})),
        header::LOCATION,
        &location,
    ))
}

pub(super) async fn delete_view(State(s): Svc, c: Call) -> Answer {
    c.query.allow(&[])?;
    let (path, name) = (c.param("db"), c.param("name"));
    c.run(&s, Op::UpdateCollection, move |s, caller| {
        s.delete_view(caller, &open_db(s, caller, &path)?, &name)
    })
    .await?;
    Ok(ok(json!({"ok": true, "name": c.param("name")})))
}

pub(super) async fn find_in_view(State(s): Svc, c: Call) -> Answer {
    c.query.allow(&["key", "prefix"])?;
    let key = c.query.text("key").ok_or_else(|| bad("key is missing"))?;
    let prefix = c.query.flag("prefix")?;
    let (path, name) = (c.param("db"), c.param("name"));
    let found = c
        .run(&s, Op::ReadEntries, move |s, caller| {
            let db = open_db(s, caller, &path)?;
            s.find_by_key(caller, &db, &name, &key, prefix)?
                .ok_or_else(|| {
                    ServerError::NotFound(format!("no entry with key {key:?} in {name:?}"))
                })
        })
        .await?;
    Ok(ok(
        json!({"position": found.position, "count": found.count}),
    ))
}

pub(super) async fn update_view(State(s): Svc, c: Call) -> Answer {
    c.query.allow(&[])?;
    let (path, name) = (c.param("db"), c.param("name"));
    let (seq, changed) = c
        .run(&s, Op::UpdateCollection, move |s, caller| {
            s.update_collection(caller, &open_db(s, caller, &path)?, &name)
        })
        .await?;
    Ok(ok(json!({"seq": seq, "changed": changed})))
}

/// `POST /db/{db}/views/{name}/rebuild` (or `/folders/…`): the index
/// built afresh. Counts only for callers `$Readers` does not restrict.
pub(super) async fn rebuild_view(State(s): Svc, c: Call) -> Answer {
    c.query.allow(&[])?;
    let (path, name) = (c.param("db"), c.param("name"));
    let (seconds, report) = c
        .run(&s, Op::UpdateCollection, move |s, caller| {
            s.rebuild_view(caller, &open_db(s, caller, &path)?, &name)
        })
        .await?;
    let mut out = json!({"ok": true, "name": c.param("name"), "seconds": seconds});
    if let Some(r) = report {
        out["documents"] = json!(r.documents);
        out["entries"] = json!(r.entries);
        out["restricted_entries"] = json!(r.restricted_entries);
        out["sort_runs"] = json!(r.sort_runs);
        out["pages"] = json!(r.pages);
    }
    Ok(ok(out))
}

pub(super) async fn folder_add(state: Svc, c: Call, body: Body) -> Answer {
    folder_change(state, c, body, FolderChange::Add).await
}

pub(super) async fn folder_remove(state: Svc, c: Call, body: Body) -> Answer {
    folder_change(state, c, body, FolderChange::Remove).await
}

async fn folder_change(State(s): Svc, c: Call, body: Body, change: FolderChange) -> Answer {
    c.query.allow(&[])?;
    let bytes = read_body(&c.headers, body, s.limits().max_document_bytes).await?;
    let m = parse_object(&bytes, "the folder change")?;
    only_keys(&m, &["unids"], "the folder change")?;
    let unids = match m.get("unids") {
        Some(Json::Array(l)) => l
            .iter()
            .map(|u| {
                u.as_str()
                    .map_or_else(|| Err(bad("\"unids\" must hold strings")), parse_unid)
            })
            .collect::<Result<Vec<_>, _>>()?,
        _ => return Err(bad("\"unids\" must be an array of UNIDs")),
    };
    let (path, name) = (c.param("db"), c.param("name"));
    let n = unids.len();
    c.run(&s, Op::UpdateCollection, move |s, caller| {
        s.folder_change(caller, &open_db(s, caller, &path)?, &name, &unids, change)
    })
    .await?;
    Ok(ok(json!({"ok": true, "unids": n})))
}
