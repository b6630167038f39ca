//! Databases: list (from the catalog), create, describe, delete, copy.

use super::answer::{encode_segment, json_response, ok, with_header, Answer};
use super::extract::{only_keys, parse_object, read_body, string_field, Call, Svc};
use crate::stats::Op;
use axum::body::Body;
use axum::extract::State;
use axum::http::{header, StatusCode};
use serde_json::{json, Value as Json};

pub(super) async fn list_databases(State(s): Svc, c: Call) -> Answer {
    c.query.allow(&["folder"])?;
    let folder = c.query.text("folder");
    let dbs = c
        .run(&s, Op::Database, move |s, caller| {
            s.list_databases(caller, folder.as_deref())
        })
        .await?;
    let list: Vec<Json> = dbs
        .iter()
        .map(|d| json!({"path": d.path, "title": d.title}))
        .collect();
    Ok(ok(Json::Array(list)))
}

pub(super) async fn create_database(State(s): Svc, c: Call, body: Body) -> Answer {
    c.query.allow(&[])?;
    let bytes = read_body(&c.headers, body, s.limits().max_document_bytes).await?;
    let title = if bytes.iter().all(u8::is_ascii_whitespace) {
        String::new()
    } else {
        let m = parse_object(&bytes, "the database description")?;
        only_keys(&m, &["title"], "the database description")?;
        string_field(&m, "title", "the database description")?.unwrap_or_default()
    };
    let path = c.param("db");
    let info = c
        .run(&s, Op::Database, move |s, caller| {
            s.create_database(caller, &path, &title)
        })
        .await?;
    let location = format!("/db/{}", encode_segment(&info.path));
    Ok(with_header(
        json_response(StatusCode::CREATED, &crate::json::database_info(&info)),
        header::LOCATION,
        &location,
    ))
}

pub(super) async fn database_info(State(s): Svc, c: Call) -> Answer {
    c.query.allow(&[])?;
    let path = c.param("db");
    let (info, sees_all) = c
        .run(&s, Op::Database, move |s, caller| {
            s.database_info_seen(caller, &path)
        })
        .await?;
    let mut out = crate::json::database_info(&info);
    if !sees_all {
        // Totals over every document, hidden ones included: not for a
        // caller `$Readers` may restrict (`database_info_seen`).
        for k in [
            "note_count",
            "attachment_logical_bytes",
            "attachment_stored_bytes",
        ] {
            out[k] = Json::Null;
        }
    }
    Ok(ok(out))
}

/// `DELETE /db/{db}`: the database's Manager or an administrator (I42).
pub(super) async fn delete_database(State(s): Svc, c: Call) -> Answer {
    c.query.allow(&[])?;
    let path = c.param("db");
    c.run(&s, Op::Database, move |s, caller| {
        s.delete_database(caller, &path)
    })
    .await?;
    Ok(ok(json!({"ok": true, "deleted": c.param("db")})))
}

/// `POST /db/{db}/_copy?to=DST[&replica=true]`: administrators; 201 with
/// the new database's description and where it is.
pub(super) async fn copy_database(State(s): Svc, c: Call) -> Answer {
    c.query.allow(&["to", "replica"])?;
    let to = c.query.text("to").ok_or_else(|| {
        crate::ServerError::BadRequest("to (the new database's path) is missing".into())
    })?;
    let replica = c.query.flag("replica")?;
    let src = c.param("db");
    let copied = c
        .run(&s, Op::Database, move |s, caller| {
            s.copy_database(caller, &src, &to, replica)
        })
        .await?;
    let location = format!("/db/{}", encode_segment(&copied.info.path));
    Ok(with_header(
        json_response(
            StatusCode::CREATED,
            &json!({
                "database": crate::json::database_info(&copied.info),
                "documents": copied.documents,
                "views": copied.views,
            }),
        ),
        header::LOCATION,
        &location,
    ))
}
