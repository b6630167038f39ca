//! `POST /admin/backup`: online backup of databases into a directory on
//! the server (archive style; server administrators only). The body is
//! `{"dest": "DIR", "dbs": ["a.fdb", ...]}`; `dbs` may be left out (every
//! database). `GET /admin/backups`: the backup history (the last backup
//! and archive runs, newest first; administrators only).

use super::answer::{ok, Answer};
use super::extract::{only_keys, parse_object, read_body, string_field, Call, Svc};
use crate::stats::Op;
use crate::ServerError;
use axum::body::Body;
use axum::extract::State;
use serde_json::json;

pub(super) async fn backup(State(s): Svc, c: Call, body: Body) -> Answer {
    c.query.allow(&[])?;
    let bytes = read_body(&c.headers, body, s.limits().max_document_bytes).await?;
    let m = parse_object(&bytes, "the backup request")?;
    only_keys(&m, &["dest", "dbs"], "the backup request")?;
    let dest = string_field(&m, "dest", "the backup request")?.ok_or_else(|| {
        ServerError::BadRequest(
            "the backup request needs \"dest\", a directory on the server".into(),
        )
    })?;
    let dbs = match m.get("dbs") {
        None | Some(serde_json::Value::Null) => Vec::new(),
        Some(serde_json::Value::Array(a)) => a
            .iter()
            .map(|v| {
                v.as_str().map(str::to_string).ok_or_else(|| {
                    ServerError::BadRequest("\"dbs\" must be a list of database paths".into())
                })
            })
            .collect::<Result<Vec<_>, _>>()?,
        Some(_) => {
            return Err(
                ServerError::BadRequest("\"dbs\" must be a list of database paths".into()).into(),
            )
        }
    };
    let r = c
        .run(&s, Op::Admin, move |s, caller| {
            s.backup(caller, &dest, &dbs)
        })
        .await?;
    Ok(ok(json!({
        "dest": r.dest,
        "databases": r.databases,
        "log_id": r.log_id,
        "start_lsn": r.start_lsn,
        "end_lsn": r.end_lsn,
        "bytes": r.bytes,
        "millis": r.millis,
    })))
}

pub(super) async fn history(State(s): Svc, c: Call) -> Answer {
    c.query.allow(&["limit"])?;
    let limit = match c.query.number::<usize>("limit")? {
        Some(n) if (1..=nsf::BACKUP_HISTORY_RUNS).contains(&n) => Some(n),
        Some(n) => {
            return Err(ServerError::BadRequest(format!(
                "query parameter limit={n}: expected 1 to {}",
                nsf::BACKUP_HISTORY_RUNS
            ))
            .into())
        }
        None => None,
    };
    let runs = c
        .run(&s, Op::Admin, move |s, caller| s.backup_history(caller))
        .await?;
    let kept = limit.map_or(runs.len(), |n| runs.len().min(n));
    Ok(ok(json!({
        "capacity": nsf::BACKUP_HISTORY_RUNS,
        "runs": &runs[..kept],
    })))
}
