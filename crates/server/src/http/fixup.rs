//! `POST /db/{db}/fixup`: check a database page by page and repair it
//! (docs/design.md §2.8), or with `{"dry_run": true}` only check it.
//! Server administrators only (the report names every note); the
//! database must be idle. The answer is the report `folio fixup` prints,
//! as JSON.

use super::answer::{ok, Answer};
use super::extract::{only_keys, parse_object, read_body, Call, Svc};
use crate::stats::Op;
use crate::ServerError;
use axum::body::Body;
use axum::extract::State;
use nsf::FixupReport;
use serde_json::{json, Value as Json};

pub(super) async fn fixup(State(s): Svc, c: Call, body: Body) -> Answer {
    c.query.allow(&[])?;
    let bytes = read_body(&c.headers, body, s.limits().max_document_bytes).await?;
    let dry_run = if bytes.iter().all(u8::is_ascii_whitespace) {
        false
    } else {
        let m = parse_object(&bytes, "the fixup request")?;
        only_keys(&m, &["dry_run"], "the fixup request")?;
        match m.get("dry_run") {
            None => false,
            Some(Json::Bool(b)) => *b,
            Some(_) => {
                return Err(ServerError::BadRequest(
                    "the fixup request: \"dry_run\" must be true or false".into(),
                )
                .into())
            }
        }
    };
    let path = c.param("db");
    let r = c
        .run(&s, Op::Admin, move |s, caller| {
            s.fixup_as(caller, &path, dry_run)
        })
        .await?;
    Ok(ok(report_json(&r)))
}

fn report_json(r: &FixupReport) -> Json {
    json!({
        "path": r.path,
        "dry_run": r.dry_run,
        "clean": r.clean(),
        "lost_anything": r.lost_anything(),
        "pages": r.pages,
        "pages_ok": r.pages_ok,
        "pages_bad": r.pages_bad,
        "bad_pages": r.bad_pages.iter()
            .map(|p| json!({"page": p.page, "reason": p.reason}))
            .collect::<Vec<_>>(),
        "header_lost": r.header_lost,
        "notes_salvaged": r.notes_salvaged,
        "notes_from_orphan_pages": r.notes_from_orphan_pages,
        "notes_lost": r.notes_lost.iter()
            .map(|n| json!({"note_id": n.note_id.0, "unid": n.unid.map(|u| u.to_string()),
                            "reason": n.reason}))
            .collect::<Vec<_>>(),
        "attachments_checked": r.attachments_checked,
        "attachments_lost": r.attachments_lost.iter()
            .map(|a| json!({"note_id": a.note_id.0, "unid": a.unid.to_string(),
                            "name": a.name, "reason": a.reason}))
            .collect::<Vec<_>>(),
        "indexes_agreed": r.indexes_agreed,
        "indexes_rebuilt": r.indexes_rebuilt,
        "design_catalog_damaged": r.design_catalog_damaged,
        "old_instance": r.old_instance.map(|i| i.to_string()),
        "new_instance": r.new_instance.map(|i| i.to_string()),
    })
}
