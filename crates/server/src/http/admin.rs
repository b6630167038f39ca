//! The server and its administration: who am I, sign-in, statistics,
//! a database's ACL and the caller's own access.

use super::answer::{bad, json_text, ok, Answer};
use super::extract::{
    body_text, only_keys, parse_object, read_body, string_field, Call, Credentials, Svc,
};
use crate::stats::Op;
use axum::body::Body;
use axum::extract::State;
use axum::http::StatusCode;
use serde_json::{json, Map, Value as Json};

pub(super) async fn root(State(s): Svc, c: Call) -> Answer {
    c.query.allow(&[])?;
    let user = c
        .run(&s, Op::Admin, |_, caller| Ok(caller.user.clone()))
        .await?;
    Ok(ok(json!({
        "server": "folio",
        "version": env!("CARGO_PKG_VERSION"),
        "user": user,
    })))
}

pub(super) async fn login(State(s): Svc, c: Call, body: Body) -> Answer {
    c.query.allow(&[])?;
    let bytes = read_body(&c.headers, body, s.limits().max_document_bytes).await?;
    let m = parse_object(&bytes, "the login")?;
    only_keys(&m, &["user", "password"], "the login")?;
    let user = string_field(&m, "user", "the login")?.ok_or_else(|| bad("\"user\" is missing"))?;
    let password =
        string_field(&m, "password", "the login")?.ok_or_else(|| bad("\"password\" is missing"))?;
    let session = Call {
        credentials: Credentials::Anonymous,
        ..c
    };
    let (caller, token) = session
        .run(&s, Op::Login, move |s, _| s.login(&user, &password))
        .await?;
    Ok(ok(json!({
        "token": token,
        "user": caller.user,
        "admin": caller.admin,
    })))
}

pub(super) async fn statistics(State(s): Svc, c: Call) -> Answer {
    c.query.allow(&[])?;
    let stats = c
        .run(&s, Op::Admin, |s, caller| s.statistics(caller))
        .await?;
    let map: Map<String, Json> = stats
        .into_iter()
        .map(|st| {
            let v = match st.value {
                protocol::StatValue::Count(n) => json!(n),
                protocol::StatValue::Gauge(g) => json!(g),
                protocol::StatValue::Text(t) => json!(t),
            };
            (st.name, v)
        })
        .collect();
    Ok(ok(Json::Object(map)))
}

pub(super) async fn my_access(State(s): Svc, c: Call) -> Answer {
    c.query.allow(&[])?;
    let path = c.param("db");
    let (user, level, roles) = c
        .run(&s, Op::Admin, move |s, caller| s.my_access(caller, &path))
        .await?;
    Ok(ok(json!({"user": user, "level": level, "roles": roles})))
}

pub(super) async fn get_acl(State(s): Svc, c: Call) -> Answer {
    c.query.allow(&[])?;
    let path = c.param("db");
    let acl = c
        .run(&s, Op::Admin, move |s, caller| s.get_acl(caller, &path))
        .await?;
    Ok(json_text(StatusCode::OK, acl))
}

pub(super) async fn set_acl(State(s): Svc, c: Call, body: Body) -> Answer {
    c.query.allow(&[])?;
    let bytes = read_body(&c.headers, body, s.limits().max_document_bytes).await?;
    // Parsed once, by the ACL itself (`Service::set_acl`).
    let json = body_text(bytes)?;
    let path = c.param("db");
    let acl = c
        .run(&s, Op::Admin, move |s, caller| {
            s.set_acl(caller, &path, &json)?;
            s.get_acl(caller, &path)
        })
        .await?;
    Ok(json_text(StatusCode::OK, acl))
}
