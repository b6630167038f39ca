//! The server's own resources: the welcome, sessions, the database list
//! and fresh ids.

use super::call::{json, json_body, CouchCall, Fail, Reply, SESSION_COOKIE};
use crate::http::extract::Credentials;
use crate::service::{couch_error, Caller, Service};
use axum::body::Body;
use axum::extract::State;
use axum::http::{header, HeaderValue, StatusCode};
use couch::CouchError;
use serde_json::{json, Value};
use std::sync::Arc;

/// Most ids one `/_uuids` request gets.
const MAX_UUIDS: u64 = 1_000;

/// Largest sign-in body.
const MAX_SIGN_IN: usize = 64 << 10;

type Svc = State<Arc<Service>>;

/// `GET /`: CouchDB's welcome, with a version replicators accept.
pub(super) async fn welcome(State(s): Svc) -> Reply {
    Ok(json(
        StatusCode::OK,
        &json!({
            "couchdb": "Welcome",
            "version": "3.3.3",
            "git_sha": "folio",
            "uuid": s.couch_server_uuid(),
            "features": [],
            "vendor": {"name": "Folio", "version": env!("CARGO_PKG_VERSION")},
        }),
    ))
}

fn user_ctx(caller: &Caller) -> Value {
    let roles: Vec<&str> = if caller.admin { vec!["_admin"] } else { vec![] };
    json!({"name": caller.user, "roles": roles})
}

/// `GET /_session`: who the credentials sign in as (anonymous too).
pub(super) async fn session(State(s): Svc, c: CouchCall) -> Reply {
    let how = match c.credentials {
        Credentials::Anonymous => Value::Null,
        Credentials::Bearer(_) => json!("cookie"),
        _ => json!("default"),
    };
    let caller = c.run(&s, |_, caller| Ok(caller.clone())).await?;
    Ok(json(
        StatusCode::OK,
        &json!({
            "ok": true,
            "userCtx": user_ctx(&caller),
            "info": {"authentication_handlers": ["cookie", "default"], "authenticated": how},
        }),
    ))
}

/// `POST /_session`: signs in with `name` and `password` (JSON or a
/// form) and sets the `AuthSession` cookie.
pub(super) async fn sign_in(State(s): Svc, c: CouchCall, body: Body) -> Reply {
    let form = c
        .headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("application/x-www-form-urlencoded"));
    let (name, password) = if form {
        let bytes = super::super::extract::read_body(&c.headers, body, MAX_SIGN_IN).await?;
        let uri: axum::http::Uri = format!("/?{}", String::from_utf8_lossy(&bytes))
            .parse()
            .map_err(|_| CouchError::bad_request("malformed form"))?;
        let axum::extract::Query(pairs) =
            axum::extract::Query::<Vec<(String, String)>>::try_from_uri(&uri)
                .map_err(|_| CouchError::bad_request("malformed form"))?;
        let get = |k: &str| pairs.iter().find(|(n, _)| n == k).map(|(_, v)| v.clone());
        (get("name"), get("password"))
    } else {
        let v = json_body(&c.headers, body, MAX_SIGN_IN).await?;
        let get = |k: &str| v.get(k).and_then(Value::as_str).map(str::to_string);
        (get("name"), get("password"))
    };
    let (Some(name), Some(password)) = (name, password) else {
        return Err(Fail(CouchError::bad_request(
            "sign in with name and password",
        )));
    };
    let (caller, token) = {
        let s = s.clone();
        tokio::task::spawn_blocking(move || s.login(&name, &password))
            .await
            .map_err(|e| Fail(CouchError::internal(e.to_string())))?
            .map_err(|e| Fail(couch_error(e)))?
    };
    let mut r = json(
        StatusCode::OK,
        &json!({"ok": true, "name": caller.user, "roles": user_ctx(&caller)["roles"]}),
    );
    let cookie =
        format!("{SESSION_COOKIE}={token}; Path=/; Max-Age=43200; HttpOnly; SameSite=Strict");
    if let Ok(v) = HeaderValue::from_str(&cookie) {
        r.headers_mut().insert(header::SET_COOKIE, v);
    }
    Ok(r)
}

/// `DELETE /_session`: ends the cookie's session and clears it.
pub(super) async fn sign_out(State(s): Svc, c: CouchCall) -> Reply {
    if let Credentials::Bearer(token) = &c.credentials {
        s.logout(token);
    }
    let mut r = json(StatusCode::OK, &json!({"ok": true}));
    r.headers_mut().insert(
        header::SET_COOKIE,
        HeaderValue::from_static("AuthSession=; Path=/; Max-Age=0; HttpOnly; SameSite=Strict"),
    );
    Ok(r)
}

/// `GET /_all_dbs`: the databases the caller may see, by name.
pub(super) async fn all_dbs(State(s): Svc, c: CouchCall) -> Reply {
    let names = c.run(&s, |s, caller| s.couch_all_dbs(caller)).await?;
    Ok(json(StatusCode::OK, &json!(names)))
}

/// `GET /_uuids?count=N`: fresh random ids.
pub(super) async fn uuids(c: CouchCall) -> Reply {
    let count = c.number("count")?.unwrap_or(1);
    if count > MAX_UUIDS {
        return Err(Fail(CouchError::bad_request(format!(
            "count must be at most {MAX_UUIDS}"
        ))));
    }
    let ids: Vec<String> = (0..count).map(|_| new_uuid()).collect();
    Ok(json(StatusCode::OK, &json!({"uuids": ids})))
}

/// A random id, as CouchDB makes them (32 lower-case hex digits).
pub(super) fn new_uuid() -> String {
    let bytes: [u8; 16] = rand::random();
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}
