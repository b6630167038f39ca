//! Server users (administrators only): list, add, reset a password,
//! remove, make and revoke API tokens (`service/server_users.rs` has the
//! rules; docs/http.md "Server users"). Passwords travel in bodies, never
//! in URLs, and no answer lists a secret: a token is in the answer that
//! makes it, and nowhere after.

use super::answer::{bad, encode_segment, json_response, ok, with_header, Answer};
use super::extract::{only_keys, parse_object, read_body, string_field, Call, Svc};
use crate::auth::UserInfo;
use crate::stats::Op;
use axum::body::Body;
use axum::extract::State;
use axum::http::{header, StatusCode};
use serde_json::{json, Value as Json};

fn user_json(u: &UserInfo) -> Json {
    json!({
        "name": u.name,
        "admin": u.admin,
        "created": u.created,
        "tokens": u.token_labels,
    })
}

/// `GET /_users`: every server user, by name.
pub(super) async fn list_users(State(s): Svc, c: Call) -> Answer {
    c.query.allow(&[])?;
    let users = c
        .run(&s, Op::Admin, |s, caller| s.list_server_users(caller))
        .await?;
    Ok(ok(Json::Array(users.iter().map(user_json).collect())))
}

/// `POST /_users` `{"name","password","admin"?}`: 201 with the user.
pub(super) async fn add_user(State(s): Svc, c: Call, body: Body) -> Answer {
    const WHAT: &str = "the new server user";
    c.query.allow(&[])?;
    let bytes = read_body(&c.headers, body, s.limits().max_document_bytes).await?;
    let m = parse_object(&bytes, WHAT)?;
    only_keys(&m, &["name", "password", "admin"], WHAT)?;
    let name = string_field(&m, "name", WHAT)?.ok_or_else(|| bad("\"name\" is missing"))?;
    let password =
        string_field(&m, "password", WHAT)?.ok_or_else(|| bad("\"password\" is missing"))?;
    let admin = match m.get("admin") {
        None | Some(Json::Null) => false,
        Some(Json::Bool(b)) => *b,
        Some(_) => return Err(bad(format!("\"admin\" in {WHAT} must be true or false"))),
    };
    let user = c
        .run(&s, Op::Admin, move |s, caller| {
            s.add_server_user(caller, &name, &password, admin)
        })
        .await?;
    let location = format!("/_users/{}", encode_segment(&user.name));
    Ok(with_header(
        json_response(StatusCode::CREATED, &user_json(&user)),
        header::LOCATION,
        &location,
    ))
}

/// `PUT /_users/{name}/password` `{"password"}`.
pub(super) async fn set_password(State(s): Svc, c: Call, body: Body) -> Answer {
    const WHAT: &str = "the new password";
    c.query.allow(&[])?;
    let bytes = read_body(&c.headers, body, s.limits().max_document_bytes).await?;
    let m = parse_object(&bytes, WHAT)?;
    only_keys(&m, &["password"], WHAT)?;
    let password =
        string_field(&m, "password", WHAT)?.ok_or_else(|| bad("\"password\" is missing"))?;
    let name = c.param("name");
    c.run(&s, Op::Admin, move |s, caller| {
        s.set_server_user_password(caller, &name, &password)
    })
    .await?;
    Ok(ok(json!({"ok": true, "user": c.param("name")})))
}

/// `DELETE /_users/{name}`.
pub(super) async fn remove_user(State(s): Svc, c: Call) -> Answer {
    c.query.allow(&[])?;
    let name = c.param("name");
    c.run(&s, Op::Admin, move |s, caller| {
        s.remove_server_user(caller, &name)
    })
    .await?;
    Ok(ok(json!({"ok": true, "removed": c.param("name")})))
}

/// `POST /_users/{name}/tokens` `{"label"}`: 201 with the token, shown
/// this once.
pub(super) async fn create_token(State(s): Svc, c: Call, body: Body) -> Answer {
    const WHAT: &str = "the new token";
    c.query.allow(&[])?;
    let bytes = read_body(&c.headers, body, s.limits().max_document_bytes).await?;
    let m = parse_object(&bytes, WHAT)?;
    only_keys(&m, &["label"], WHAT)?;
    let label = string_field(&m, "label", WHAT)?.ok_or_else(|| bad("\"label\" is missing"))?;
    let (name, l) = (c.param("name"), label.clone());
    let token = c
        .run(&s, Op::Admin, move |s, caller| {
            s.create_server_user_token(caller, &name, &l)
        })
        .await?;
    Ok(json_response(
        StatusCode::CREATED,
        &json!({"user": c.param("name"), "label": label, "token": token}),
    ))
}

/// `DELETE /_users/{name}/tokens/{label}`.
pub(super) async fn revoke_token(State(s): Svc, c: Call) -> Answer {
    c.query.allow(&[])?;
    let (name, label) = (c.param("name"), c.param("label"));
    c.run(&s, Op::Admin, move |s, caller| {
        s.revoke_server_user_token(caller, &name, &label)
    })
    .await?;
    Ok(ok(
        json!({"ok": true, "user": c.param("name"), "revoked": c.param("label")}),
    ))
}
