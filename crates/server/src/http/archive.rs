//! `POST /admin/archive`: archive the transaction log's completed extents
//! (archive style; server administrators only). The body is empty or
//! `{"to": "DIR"}`, a directory on the server.

use super::answer::{ok, Answer};
use super::extract::{only_keys, parse_object, read_body, string_field, Call, Svc};
use crate::stats::Op;
use axum::body::Body;
use axum::extract::State;
use serde_json::json;

pub(super) async fn archive(State(s): Svc, c: Call, body: Body) -> Answer {
    c.query.allow(&[])?;
    let bytes = read_body(&c.headers, body, s.limits().max_document_bytes).await?;
    let to = if bytes.iter().all(u8::is_ascii_whitespace) {
        None
    } else {
        let m = parse_object(&bytes, "the archive request")?;
        only_keys(&m, &["to"], "the archive request")?;
        string_field(&m, "to", "the archive request")?
    };
    let r = c
        .run(&s, Op::Admin, move |s, caller| {
            s.archive(caller, to.as_deref())
        })
        .await?;
    Ok(ok(json!({
        "dir": r.dir,
        "extents": r.extents,
        "bytes": r.bytes,
        "archived_lsn": r.archived_lsn,
        "waiting": r.waiting,
        "millis": r.millis,
    })))
}
