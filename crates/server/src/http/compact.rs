//! `POST /db/{db}/compact`: compact a database (docs/design.md §2.10;
//! Manager access or a server administrator). The body is empty or
//! `{"copy": bool, "dry_run": bool}`; the answer is the summary the
//! native `Compacted` carries, as JSON.

use super::answer::{ok, Answer};
use super::extract::{only_keys, parse_object, read_body, Call, Svc};
use crate::stats::Op;
use crate::ServerError;
use axum::body::Body;
use axum::extract::State;

pub(super) async fn compact(State(s): Svc, c: Call, body: Body) -> Answer {
    c.query.allow(&[])?;
    let bytes = read_body(&c.headers, body, s.limits().max_document_bytes).await?;
    let (copy, dry_run) = if bytes.iter().all(u8::is_ascii_whitespace) {
        (false, false)
    } else {
        let m = parse_object(&bytes, "the compact request")?;
        only_keys(&m, &["copy", "dry_run"], "the compact request")?;
        let flag = |k: &str| match m.get(k) {
            None => Ok(false),
            Some(serde_json::Value::Bool(b)) => Ok(*b),
            Some(_) => Err(ServerError::BadRequest(format!(
                "the compact request: \"{k}\" must be true or false"
            ))),
        };
        (flag("copy")?, flag("dry_run")?)
    };
    let path = c.param("db");
    let r = c
        .run(&s, Op::Admin, move |s, caller| {
            s.compact(caller, &path, copy, dry_run)
        })
        .await?;
    let v = serde_json::to_value(&r)
        .map_err(|e| ServerError::Internal(format!("compact summary: {e}")))?;
    Ok(ok(v))
}
