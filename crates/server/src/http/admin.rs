//! The server and its administration: who am I, sign-in (a token, or
//! the console's session cookie), sign-out, statistics, a database's ACL
//! and the caller's own access.
//!
//! The console signs in with `POST /_session?cookie=true`: the session
//! token goes into a cookie script cannot read (`HttpOnly`) and no other
//! site's request carries (`SameSite=Strict`), and the answer gives the
//! page the session's CSRF token instead, which every change made with
//! the cookie must carry (`X-Folio-CSRF`, checked in `extract.rs`).

use super::answer::{bad, json_text, ok, with_header, Answer};
use super::extract::{
    body_text, only_keys, parse_object, read_body, string_field, Call, Credentials, Svc,
    SESSION_COOKIE,
};
use crate::stats::Op;
use axum::body::Body;
use axum::extract::{Extension, State};
use axum::http::{header, StatusCode};
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

/// Whether session cookies are marked `Secure` (the listener has TLS).
#[derive(Clone, Copy, Debug)]
pub(super) struct SecureCookies(pub(super) bool);

pub(super) async fn login(
    State(s): Svc,
    Extension(secure): Extension<SecureCookies>,
    c: Call,
    body: Body,
) -> Answer {
    c.query.allow(&["cookie"])?;
    let cookie = c.query.flag("cookie")?;
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
    if !cookie {
        return Ok(ok(json!({
            "token": token,
            "user": caller.user,
            "admin": caller.admin,
        })));
    }
    let lifetime = crate::auth::DEFAULT_SESSION_LIFETIME.as_secs();
    let answer = ok(json!({
        "user": caller.user,
        "admin": caller.admin,
        "csrf": crate::auth::csrf_token(&token),
    }));
    Ok(with_header(
        answer,
        header::SET_COOKIE,
        &session_cookie(&token, lifetime, secure),
    ))
}

/// The `Set-Cookie` value of a session cookie (`max_age` 0 removes it).
fn session_cookie(token: &str, max_age: u64, secure: SecureCookies) -> String {
    let secure = if secure.0 { "; Secure" } else { "" };
    format!(
        "{SESSION_COOKIE}={token}; Path=/; Max-Age={max_age}; HttpOnly; SameSite=Strict{secure}"
    )
}

/// `GET /_session`: who the credentials sign in as, and (for the
/// session cookie) the session's CSRF token, for a page reloaded.
pub(super) async fn session_info(State(s): Svc, c: Call) -> Answer {
    c.query.allow(&[])?;
    let csrf = match &c.credentials {
        Credentials::Cookie { token, .. } => Some(crate::auth::csrf_token(token)),
        _ => None,
    };
    let caller = c
        .run(&s, Op::Admin, |_, caller| {
            if caller.user.is_none() && !caller.admin {
                return Err(crate::ServerError::Unauthenticated("not signed in".into()));
            }
            Ok(caller.clone())
        })
        .await?;
    let mut body = json!({"user": caller.user, "admin": caller.admin});
    if let Some(csrf) = csrf {
        body["csrf"] = json!(csrf);
    }
    Ok(ok(body))
}

/// `DELETE /_session`: ends the session of the token or cookie the
/// request signs in with, and removes the cookie.
pub(super) async fn logout(
    State(s): Svc,
    Extension(secure): Extension<SecureCookies>,
    c: Call,
) -> Answer {
    c.query.allow(&[])?;
    let token = c
        .credentials
        .session_token()
        .map(str::to_string)
        .ok_or_else(|| bad("no session to end: sign in with a session token or cookie"))?;
    c.run(&s, Op::Login, move |s, _| {
        s.logout(&token);
        Ok(())
    })
    .await?;
    Ok(with_header(
        ok(json!({"ok": true})),
        header::SET_COOKIE,
        &session_cookie("", 0, secure),
    ))
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
