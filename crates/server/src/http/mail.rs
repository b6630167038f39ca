//! Mail: `POST /mail/send` deposits a message from the signed-in user
//! (docs/http.md). The body is a JSON object: `to`, `cc`, `bcc` (each an
//! address list as a string, `"a, b"`, or an array of addresses),
//! `subject` and `body` (strings); nothing else. The answer, 201 once the
//! deposit is durable: `{"message_id", "mail_box"}`.

use super::answer::{bad, json_response, Answer, ApiError};
use super::extract::{only_keys, parse_object, read_body, string_field, Call, Svc};
use crate::stats::Op;
use axum::body::Body;
use axum::extract::State;
use axum::http::StatusCode;
use mail::{Address, Header, Memo, Message};
use serde_json::{json, Map, Value as Json};

const WHAT: &str = "the message";

pub(super) async fn send(State(s): Svc, c: Call, body: Body) -> Answer {
    c.query.allow(&[])?;
    let max = s.limits().mail.max_message_bytes().min(64 << 20) as usize;
    let bytes = read_body(&c.headers, body, max).await?;
    let m = parse_object(&bytes, WHAT)?;
    only_keys(&m, &["to", "cc", "bcc", "subject", "body"], WHAT)?;
    let subject = string_field(&m, "subject", WHAT)?.unwrap_or_default();
    let text = string_field(&m, "body", WHAT)?.unwrap_or_default();
    let mut h = Header::new(&subject, &text);
    h.send_to = addresses(&m, "to")?;
    h.copy_to = addresses(&m, "cc")?;
    h.blind_copy_to = addresses(&m, "bcc")?;
    let msg = Message::Memo(Memo { header: h });
    let sent = c
        .run(&s, Op::Create, move |s, caller| s.send_mail(caller, msg))
        .await?;
    Ok(json_response(
        StatusCode::CREATED,
        &json!({"message_id": sent.message_id, "mail_box": sent.mail_box}),
    ))
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
