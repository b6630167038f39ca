//! Mail users (server administrators only): add a person with a mail
//! file, list the directory, take a person out keeping the file
//! (`service/mail_users.rs` has the rules; docs/http.md "Mail users");
//! and the mail queue, read-only.

use super::answer::{bad, encode_segment, json_response, ok, with_header, Answer, ApiError};
use super::extract::{only_keys, parse_object, read_body, string_field, Call, Svc};
use crate::stats::Op;
use axum::body::Body;
use axum::extract::State;
use axum::http::{header, StatusCode};
use mail::NewPerson;
use serde_json::{Map, Value as Json};

const WHAT: &str = "the new mail user";

pub(super) async fn create_user(State(s): Svc, c: Call, body: Body) -> Answer {
    c.query.allow(&[])?;
    let bytes = read_body(&c.headers, body, s.limits().max_document_bytes).await?;
    let new = new_person(&parse_object(&bytes, WHAT)?)?;
    let person = c
        .run(&s, Op::Admin, move |s, caller| {
            s.create_mail_user(caller, &new)
        })
        .await?;
    let location = format!("/mail/users/{}", encode_segment(&person.full_name));
    Ok(with_header(
        json_response(StatusCode::CREATED, &crate::json::person(&person)),
        header::LOCATION,
        &location,
    ))
}

pub(super) async fn list_users(State(s): Svc, c: Call) -> Answer {
    c.query.allow(&[])?;
    let people = c
        .run(&s, Op::Admin, |s, caller| s.list_mail_users(caller))
        .await?;
    Ok(ok(Json::Array(
        people.iter().map(crate::json::person).collect(),
    )))
}

pub(super) async fn remove_user(State(s): Svc, c: Call) -> Answer {
    c.query.allow(&["delete_file"])?;
    let delete_file = c.query.flag("delete_file")?;
    let name = c.param("name");
    let removed = c
        .run(&s, Op::Admin, move |s, caller| {
            s.remove_mail_user(caller, &name, delete_file)
        })
        .await?;
    Ok(ok(crate::json::removed_person(
        &removed.person,
        removed.file,
    )))
}

/// The body of `POST /mail/users`: `name`, and optionally `aliases` (an
/// array of strings) and `server_user`.
fn new_person(m: &Map<String, Json>) -> Result<NewPerson, ApiError> {
    only_keys(m, &["name", "aliases", "server_user"], WHAT)?;
    let name = string_field(m, "name", WHAT)?.ok_or_else(|| bad("\"name\" is missing"))?;
    let aliases = match m.get("aliases") {
        None | Some(Json::Null) => Vec::new(),
        Some(Json::Array(list)) => list
            .iter()
            .map(|a| match a {
                Json::String(a) => Ok(a.clone()),
                _ => Err(bad(format!(
                    "\"aliases\" in {WHAT} must be an array of strings"
                ))),
            })
            .collect::<Result<_, _>>()?,
        Some(_) => {
            return Err(bad(format!(
                "\"aliases\" in {WHAT} must be an array of strings"
            )))
        }
    };
    Ok(NewPerson {
        name,
        aliases,
        server_user: string_field(m, "server_user", WHAT)?,
    })
}

/// Messages listed per mail box when the query does not say.
const QUEUE_LIMIT: usize = 100;
/// The most a query may ask for.
const QUEUE_MAX: usize = 1000;

/// `GET /mail/queue[?limit=N]`: what waits in the mail boxes.
pub(super) async fn queue(State(s): Svc, c: Call) -> Answer {
    c.query.allow(&["limit"])?;
    let limit = c.query.number::<usize>("limit")?.unwrap_or(QUEUE_LIMIT);
    if limit == 0 || limit > QUEUE_MAX {
        return Err(bad(format!("limit must be 1 to {QUEUE_MAX}, not {limit}")));
    }
    let q = c
        .run(&s, Op::Admin, move |s, caller| s.mail_queue(caller, limit))
        .await?;
    let time = |t: nsf::Timestamp| t.to_rfc3339();
    let messages: Vec<Json> = q
        .messages
        .iter()
        .map(|m| {
            serde_json::json!({
                "mail_box": m.mail_box,
                "unid": m.unid.to_string(),
                "from": m.from,
                "subject": m.subject,
                "deposited": time(m.deposited),
                "recipients": m.recipients.iter().map(|r| serde_json::json!({
                    "address": r.address,
                    "state": r.state,
                    "attempts": r.attempts,
                    "reason": r.reason,
                    "next_attempt": r.next_attempt.map(time),
                })).collect::<Vec<_>>(),
            })
        })
        .collect();
    let boxes: Vec<Json> = q
        .boxes
        .iter()
        .map(|(path, pending)| serde_json::json!({"path": path, "pending": pending}))
        .collect();
    Ok(ok(serde_json::json!({
        "boxes": boxes,
        "messages": messages,
        "unreadable": q.damaged,
    })))
}
