//! The console end to end, without a browser: its page and policy, the
//! cookie session it signs in with (HttpOnly, SameSite=Strict, CSRF token
//! for changes), the history its dashboard draws and who may read it,
//! and `console = false`. The browser test is `console_browser.rs`.

mod common;

use common::{json, Server, ADMIN_PW};
use serde_json::Value;

struct Answer {
    status: u16,
    headers: Vec<(String, String)>,
    body: String,
}

impl Answer {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    fn json(&self) -> Value {
        json(&self.body)
    }
}

fn call(srv: &Server, method: &str, path: &str, headers: &[(&str, &str)], body: &str) -> Answer {
    let mut req = ureq::request(method, &format!("http://{}{path}", srv.http));
    for (k, v) in headers {
        req = req.set(k, v);
    }
    let resp = match req.send_string(body) {
        Ok(r) => r,
        Err(ureq::Error::Status(_, r)) => r,
        Err(e) => panic!("{method} {path}: {e}"),
    };
    let headers = resp
        .headers_names()
        .into_iter()
        .flat_map(|n| {
            resp.all(&n)
                .into_iter()
                .map(|v| (n.clone(), v.to_string()))
                .collect::<Vec<_>>()
        })
        .collect();
    Answer {
        status: resp.status(),
        headers,
        body: resp.into_string().unwrap(),
    }
}

/// Signs in for a cookie: the `Cookie` header to send and the CSRF token.
fn sign_in(srv: &Server, user: &str, password: &str) -> (String, String) {
    let a = call(
        srv,
        "POST",
        "/_session?cookie=true",
        &[],
        &format!(r#"{{"user":"{user}","password":"{password}"}}"#),
    );
    assert_eq!(a.status, 200, "{}", a.body);
    let set = a
        .header("set-cookie")
        .expect("a session cookie")
        .to_string();
    for attr in ["HttpOnly", "SameSite=Strict", "Path=/"] {
        assert!(set.contains(attr), "{attr} missing from {set}");
    }
    let body = a.json();
    assert!(
        body.get("token").is_none(),
        "the token stays in the cookie: {body}"
    );
    let cookie = set.split(';').next().unwrap().to_string();
    (cookie, body["csrf"].as_str().unwrap().to_string())
}

#[test]
fn the_page_is_compiled_in_and_forbids_inline_script() {
    let tmp = common::users_dir(&[]);
    let srv = Server::start(tmp.path());
    let page = call(&srv, "GET", "/_console/", &[], "");
    assert_eq!(page.status, 200);
    assert!(page
        .header("content-type")
        .unwrap()
        .starts_with("text/html"));
    assert!(page.body.contains("<script src=\"app.js\"></script>"));
    let csp = page.header("content-security-policy").unwrap();
    assert!(
        csp.contains("script-src 'self'") && !csp.contains("unsafe"),
        "{csp}"
    );
    assert!(csp.contains("frame-ancestors 'none'"), "{csp}");
    for (file, ctype) in [("app.js", "text/javascript"), ("app.css", "text/css")] {
        let a = call(&srv, "GET", &format!("/_console/{file}"), &[], "");
        assert_eq!(a.status, 200, "{file}");
        assert!(a.header("content-type").unwrap().starts_with(ctype));
        assert!(a.header("content-security-policy").is_some());
    }
    assert!(!call(&srv, "GET", "/_console/app.js", &[], "")
        .body
        .contains("innerHTML"));
    assert_eq!(call(&srv, "GET", "/_console/other.js", &[], "").status, 404);
    let moved = call(&srv, "GET", "/_console", &[], "");
    assert_eq!(moved.status, 200, "followed to /_console/");
}

#[test]
fn the_console_is_off_with_console_false() {
    let tmp = common::users_dir(&[]);
    std::fs::write(tmp.path().join("folio.toml"), "console = false\n").unwrap();
    let srv = Server::start(tmp.path());
    assert_eq!(call(&srv, "GET", "/_console/", &[], "").status, 404);
    assert_eq!(call(&srv, "GET", "/_console/app.js", &[], "").status, 404);
}

#[test]
fn cookie_sessions_need_the_csrf_token_for_changes() {
    let tmp = common::users_dir(&["carol"]);
    let srv = Server::start(tmp.path());
    // The page's own requests get no browser password dialog.
    let anon = call(&srv, "GET", "/_session", &[("X-Folio-Console", "1")], "");
    assert_eq!(anon.status, 401);
    assert!(anon.header("www-authenticate").is_none());
    assert!(call(&srv, "GET", "/_session", &[], "")
        .header("www-authenticate")
        .is_some());

    let (cookie, csrf) = sign_in(&srv, "admin", ADMIN_PW);
    let who = call(&srv, "GET", "/_session", &[("Cookie", &cookie)], "");
    assert_eq!(who.status, 200);
    assert_eq!(who.json()["user"], "admin");
    assert_eq!(who.json()["csrf"], csrf.as_str());
    assert_eq!(
        call(&srv, "GET", "/dbs", &[("Cookie", &cookie)], "").status,
        200
    );

    let forged = call(&srv, "PUT", "/db/c.fdb", &[("Cookie", &cookie)], "");
    assert_eq!(forged.status, 403, "{}", forged.body);
    assert!(forged.body.contains("X-Folio-CSRF") || forged.body.contains("x-folio-csrf"));
    let wrong = call(
        &srv,
        "PUT",
        "/db/c.fdb",
        &[("Cookie", &cookie), ("X-Folio-CSRF", "0123")],
        "",
    );
    assert_eq!(wrong.status, 403);
    let made = call(
        &srv,
        "PUT",
        "/db/c.fdb",
        &[("Cookie", &cookie), ("X-Folio-CSRF", &csrf)],
        "",
    );
    assert_eq!(made.status, 201, "{}", made.body);

    // A plain user's cookie reads what the API lets them, not the history.
    let (carol, _) = sign_in(&srv, "carol", "carol-password");
    let history = call(&srv, "GET", "/_stats/history", &[("Cookie", &carol)], "");
    assert_eq!(history.status, 403, "{}", history.body);
    // The same 404 for a forbidden database as for a missing one.
    assert_eq!(
        call(&srv, "GET", "/db/c.fdb", &[("Cookie", &carol)], "").status,
        404
    );

    let out = call(
        &srv,
        "DELETE",
        "/_session",
        &[("Cookie", &cookie), ("X-Folio-CSRF", &csrf)],
        "",
    );
    assert_eq!(out.status, 200, "{}", out.body);
    assert!(out.header("set-cookie").unwrap().contains("Max-Age=0"));
    assert_eq!(
        call(&srv, "GET", "/_session", &[("Cookie", &cookie)], "").status,
        401
    );
}

#[test]
fn the_history_grows_a_sample_a_second() {
    let tmp = common::users_dir(&[]);
    let srv = Server::start(tmp.path());
    let admin = srv.admin();
    admin.create_database("h.fdb", "History").unwrap();
    let (db, _) = admin.open_database("h.fdb").unwrap();
    let auth = [("Authorization", "Basic YWRtaW46YWRtaW4tcGFzc3dvcmQtMQ==")];
    assert_eq!(
        base64::Engine::encode(
            &base64::engine::general_purpose::STANDARD,
            format!("admin:{ADMIN_PW}")
        ),
        "YWRtaW46YWRtaW4tcGFzc3dvcmQtMQ=="
    );
    for i in 0..30 {
        admin
            .create_document(db, &format!(r#"{{"Subject":"h{i}"}}"#))
            .unwrap();
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    let a = call(&srv, "GET", "/_stats/history", &auth, "");
    assert_eq!(a.status, 200, "{}", a.body);
    let h = a.json();
    let t = h["t"].as_array().unwrap();
    assert!(t.len() >= 2, "{h}");
    assert_eq!(h["capacity"], 3600);
    assert!(h["trans_per_min"].as_array().unwrap().len() == t.len());
    let created: u64 = h["ops"]["create"]["count"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c.as_u64().unwrap())
        .sum();
    assert!(created > 0, "{h}");
    let last = t.last().unwrap().as_u64().unwrap();
    let later = call(
        &srv,
        "GET",
        &format!("/_stats/history?since={last}"),
        &auth,
        "",
    );
    assert!(later.json()["t"]
        .as_array()
        .unwrap()
        .iter()
        .all(|x| x.as_u64().unwrap() > last));
    assert_eq!(call(&srv, "GET", "/_stats/history", &[], "").status, 401);
    assert_eq!(
        call(&srv, "GET", "/_stats/history?sinse=1", &auth, "").status,
        400
    );
}
