//! Meetings as the signed-in user (docs/http.md "Meetings"):
//!
//! ```text
//!   POST /mail/meetings                       {"subject","body","start","end","location","invitees"} → 201
//!   GET  /mail/meetings/{apptunid}            the caller's entry (the chair's with every answer)
//!   POST /mail/meetings/{apptunid}/respond    {"response": "accept" | "decline"}
//!   POST /mail/meetings/{apptunid}/reschedule {"start","end","location"?}   (the chair only)
//!   POST /mail/meetings/{apptunid}/cancel     {} or no body                  (the chair only)
//! ```
//!
//! Times are RFC 3339 text. Each write answers once it is durable, with
//! the message id of the notice it deposited; the router delivers it.

use super::answer::{bad, json_response, ok, Answer, ApiError};
use super::extract::{only_keys, parse_object, read_body, string_field, Call, Svc};
use super::mail::addresses;
use crate::stats::Op;
use axum::body::Body;
use axum::extract::State;
use axum::http::StatusCode;
use mail::{NewMeeting, NewTime, Response};
use nsf::{Timestamp, Unid};
use serde_json::{json, Map, Value as Json};

/// The largest request body (a meeting's body is a message body).
const MAX_BODY: usize = 9 << 20;

pub(super) async fn create(State(s): Svc, c: Call, body: Body) -> Answer {
    c.query.allow(&[])?;
    let m = object(&c, body, "the meeting").await?;
    only_keys(
        &m,
        &["subject", "body", "start", "end", "location", "invitees"],
        "the meeting",
    )?;
    let meeting = NewMeeting {
        subject: string_field(&m, "subject", "the meeting")?.unwrap_or_default(),
        body: string_field(&m, "body", "the meeting")?.unwrap_or_default(),
        start: time(&m, "start")?,
        end: time(&m, "end")?,
        location: string_field(&m, "location", "the meeting")?.unwrap_or_default(),
        invitees: addresses(&m, "invitees")?,
    };
    let (appt, message_id) = c
        .run(&s, Op::Create, move |s, caller| {
            s.create_meeting(caller, None, meeting)
        })
        .await?;
    Ok(json_response(
        StatusCode::CREATED,
        &json!({"apptunid": appt.to_string(), "message_id": message_id}),
    ))
}

pub(super) async fn read(State(s): Svc, c: Call) -> Answer {
    c.query.allow(&[])?;
    let appt = appt_unid(&c)?;
    let m = c
        .run(&s, Op::Read, move |s, caller| s.meeting(caller, None, appt))
        .await?;
    let attendees: Vec<Json> = m
        .attendees
        .iter()
        .map(|(who, st)| json!({"name": who, "status": st.as_str()}))
        .collect();
    Ok(ok(json!({
        "apptunid": m.appt_unid.to_string(),
        "subject": m.subject,
        "start": m.start.to_rfc3339(),
        "end": m.end.to_rfc3339(),
        "location": m.location,
        "chair": m.chair,
        "attendees": attendees,
    })))
}

pub(super) async fn respond(State(s): Svc, c: Call, body: Body) -> Answer {
    c.query.allow(&[])?;
    let appt = appt_unid(&c)?;
    let m = object(&c, body, "the response").await?;
    only_keys(&m, &["response"], "the response")?;
    let r = string_field(&m, "response", "the response")?
        .ok_or_else(|| bad("\"response\" is missing"))?;
    let r = Response::parse(&r).map_err(|e| bad(e.to_string()))?;
    let id = c
        .run(&s, Op::Update, move |s, caller| {
            s.respond_meeting(caller, None, appt, r)
        })
        .await?;
    Ok(ok(json!({"message_id": id})))
}

pub(super) async fn reschedule(State(s): Svc, c: Call, body: Body) -> Answer {
    c.query.allow(&[])?;
    let appt = appt_unid(&c)?;
    let m = object(&c, body, "the new time").await?;
    only_keys(&m, &["start", "end", "location"], "the new time")?;
    let t = NewTime {
        start: time(&m, "start")?,
        end: time(&m, "end")?,
        location: string_field(&m, "location", "the new time")?,
    };
    let id = c
        .run(&s, Op::Update, move |s, caller| {
            s.reschedule_meeting(caller, None, appt, t)
        })
        .await?;
    Ok(ok(json!({"message_id": id})))
}

pub(super) async fn cancel(State(s): Svc, c: Call, body: Body) -> Answer {
    c.query.allow(&[])?;
    let appt = appt_unid(&c)?;
    let bytes = read_body(&c.headers, body, MAX_BODY).await?;
    if !bytes.iter().all(u8::is_ascii_whitespace) {
        only_keys(&parse_object(&bytes, "the request")?, &[], "the request")?;
    }
    let id = c
        .run(&s, Op::Delete, move |s, caller| {
            s.cancel_meeting(caller, None, appt)
        })
        .await?;
    Ok(ok(json!({"message_id": id})))
}

async fn object(c: &Call, body: Body, what: &str) -> Result<Map<String, Json>, ApiError> {
    let bytes = read_body(&c.headers, body, MAX_BODY).await?;
    parse_object(&bytes, what)
}

/// A required RFC 3339 time field.
fn time(m: &Map<String, Json>, key: &str) -> Result<Timestamp, ApiError> {
    let s =
        string_field(m, key, "the meeting")?.ok_or_else(|| bad(format!("{key:?} is missing")))?;
    Timestamp::parse_rfc3339(&s)
        .ok_or_else(|| bad(format!("{key:?}: {s:?} is not an RFC 3339 time")))
}

/// The `{apptunid}` path parameter: 32 hex digits.
fn appt_unid(c: &Call) -> Result<Unid, ApiError> {
    let p = c.param("apptunid");
    p.parse()
        .map_err(|e: nsf::BadUnid| bad(format!("meeting id {p:?}: {e}")))
}
