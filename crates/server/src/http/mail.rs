//! Mail: `POST /mail/send` deposits a message from the signed-in user
//! (docs/http.md). The body is a JSON object: `to`, `cc`, `bcc` (each an
//! address list as a string, `"a, b"`, or an array of addresses),
//! `subject` and `body` (strings); nothing else. With files it is a
//! `multipart/form-data` form (`multipart.rs`): that object as the part
//! `message`, each file a part `attachment` with a `filename` (and a
//! `Content-Type`, default `application/octet-stream`). The answer, 201
//! once the deposit and every file are durable: `{"message_id",
//! "mail_box"}`. Files and body over `mail.max_message_size` are 413 and
//! store nothing.

use super::answer::{bad, json_response, Answer, ApiError};
use super::extract::{only_keys, parse_object, read_body, string_field, Call, Svc};
use super::multipart;
use crate::stats::Op;
use axum::body::Body;
use axum::extract::State;
use axum::http::StatusCode;
use bytes::Bytes;
use mail::{Address, Attachment, Header, Memo, Message};
use serde_json::{json, Map, Value as Json};

const WHAT: &str = "the message";

pub(super) async fn send(State(s): Svc, c: Call, body: Body) -> Answer {
    c.query.allow(&[])?;
    let limit = s.limits().mail.max_message_bytes().min(64 << 20) as usize;
    let content_type = c
        .headers
        .get(axum::http::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("");
    let form = multipart::boundary(content_type)?;
    // A form's own framing and headers ride on top of the message.
    let max = if form.is_some() {
        limit + (1 << 20)
    } else {
        limit
    };
    let bytes = read_body(&c.headers, body, max).await?;
    let (json, files) = match form {
        None => (bytes, Vec::new()),
        Some(b) => form_parts(multipart::parse(&bytes, &b)?)?,
    };
    let msg = memo(&parse_object(&json, WHAT)?)?;
    let sent = c
        .run(&s, Op::Create, move |s, caller| {
            let mut readers: Vec<&[u8]> = files.iter().map(|f| &f.data[..]).collect();
            let mut attachments: Vec<Attachment<'_>> = files
                .iter()
                .zip(readers.iter_mut())
                .map(|(f, r)| Attachment {
                    name: f.filename.clone().unwrap_or_default(),
                    mime: f
                        .content_type
                        .clone()
                        .unwrap_or_else(|| "application/octet-stream".into()),
                    size: Some(f.data.len() as u64),
                    content: r,
                })
                .collect();
            s.send_mail(caller, msg, &mut attachments)
        })
        .await?;
    Ok(json_response(
        StatusCode::CREATED,
        &json!({"message_id": sent.message_id, "mail_box": sent.mail_box}),
    ))
}

/// The memo a send's JSON object describes.
fn memo(m: &Map<String, Json>) -> Result<Message, ApiError> {
    only_keys(m, &["to", "cc", "bcc", "subject", "body"], WHAT)?;
    let subject = string_field(m, "subject", WHAT)?.unwrap_or_default();
    let text = string_field(m, "body", WHAT)?.unwrap_or_default();
    let mut h = Header::new(&subject, &text);
    h.send_to = addresses(m, "to")?;
    h.copy_to = addresses(m, "cc")?;
    h.blind_copy_to = addresses(m, "bcc")?;
    Ok(Message::Memo(Memo { header: h }))
}

/// A form's `message` part (the JSON object) and its `attachment` parts
/// (each with a file name); any other part is refused.
fn form_parts(parts: Vec<multipart::Part>) -> Result<(Bytes, Vec<multipart::Part>), ApiError> {
    let mut message = None;
    let mut files = Vec::new();
    for p in parts {
        match p.name.as_str() {
            "message" if message.is_none() => message = Some(p.data),
            "message" => return Err(bad("the form has two \"message\" parts")),
            "attachment" if p.filename.as_deref().is_some_and(|n| !n.is_empty()) => files.push(p),
            "attachment" => return Err(bad("an \"attachment\" part needs a filename")),
            other => {
                return Err(bad(format!(
                    "the form has a part {:?}; only \"message\" and \"attachment\" are known",
                    other.chars().take(60).collect::<String>()
                )))
            }
        }
    }
    let message = message.ok_or_else(|| bad("the form has no \"message\" part"))?;
    Ok((message, files))
}

/// An address list field: a comma-separated string or an array of
/// addresses; absent is empty.
pub(super) fn addresses(m: &Map<String, Json>, key: &str) -> Result<Vec<Address>, ApiError> {
    let parse = |s: &str| Address::parse_list(s).map_err(|e| bad(format!("{key:?}: {e}")));
    match m.get(key) {
        None | Some(Json::Null) => Ok(Vec::new()),
        Some(Json::String(s)) => parse(s),
        Some(Json::Array(a)) => {
            let mut out = Vec::new();
            for v in a {
                let Json::String(s) = v else {
                    return Err(bad(format!("{key:?} must hold addresses as strings")));
                };
                out.push(Address::parse(s).map_err(|e| bad(format!("{key:?}: {e}")))?);
            }
            Ok(out)
        }
        Some(_) => Err(bad(format!(
            "{key:?} must be a string or an array of strings"
        ))),
    }
}
