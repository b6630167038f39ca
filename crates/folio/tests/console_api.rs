//! The routes the console's Databases and Users pages added to the HTTP
//! API, end to end against `folio serve`, as curl would call them: who
//! may, what a refusal changes (nothing), and what an answer never
//! carries (secrets; totals that count documents hidden by `$Readers`;
//! an attachment a browser would open as a page of this origin).

mod common;

use common::{json, Server, ADMIN_PW};
use serde_json::{json, Value};

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

    /// Asserts the status (and for an error, the JSON error body).
    fn expect(self, status: u16) -> Answer {
        assert_eq!(self.status, status, "body: {}", self.body);
        if status >= 400 {
            let e = self.json();
            assert_eq!(e["code"], status, "{e}");
            assert!(e["reason"].as_str().is_some_and(|r| !r.is_empty()), "{e}");
        }
        self
    }
}

/// Who a request signs in as.
#[derive(Clone, Copy)]
enum As<'a> {
    Nobody,
    /// Basic authentication: name and password.
    Basic(&'a str, &'a str),
    Bearer(&'a str),
    /// The console's cookie, with the CSRF token (or none).
    Cookie(&'a str, Option<&'a str>),
}

const ADMIN: As = As::Basic("admin", ADMIN_PW);
const CAROL: As = As::Basic("carol", "carol-password");
const RITA: As = As::Basic("rita", "rita-password");

fn call(srv: &Server, method: &str, path: &str, who: As, body: &str) -> Answer {
    call_typed(srv, method, path, who, None, body.as_bytes())
}

fn call_typed(
    srv: &Server,
    method: &str,
    path: &str,
    who: As,
    content_type: Option<&str>,
    body: &[u8],
) -> Answer {
    let mut req = ureq::request(method, &format!("http://{}{path}", srv.http));
    match who {
        As::Nobody => {}
        As::Basic(u, p) => {
            let b = base64::Engine::encode(
                &base64::engine::general_purpose::STANDARD,
                format!("{u}:{p}"),
            );
            req = req.set("Authorization", &format!("Basic {b}"));
        }
        As::Bearer(t) => req = req.set("Authorization", &format!("Bearer {t}")),
        As::Cookie(c, csrf) => {
            req = req.set("Cookie", c);
            if let Some(t) = csrf {
                req = req.set("X-Folio-CSRF", t);
            }
        }
    }
    if let Some(t) = content_type {
        req = req.set("Content-Type", t);
    }
    let resp = match req.send_bytes(body) {
        Ok(r) => r,
        Err(ureq::Error::Status(_, r)) => r,
        Err(e) => panic!("{method} {path}: {e}"),
    };
    let headers = resp
        .headers_names()
        .into_iter()
        .map(|n| {
            let v = resp.header(&n).unwrap_or_default().to_string();
            (n, v)
        })
        .collect();
    Answer {
        status: resp.status(),
        headers,
        body: resp.into_string().unwrap(),
    }
}

/// Signs in for the console's cookie: the `Cookie` header and the CSRF token.
fn cookie(srv: &Server, user: &str, password: &str) -> (String, String) {
    let a = call(
        srv,
        "POST",
        "/_session?cookie=true",
        As::Nobody,
        &json!({"user": user, "password": password}).to_string(),
    )
    .expect(200);
    let set = a.header("set-cookie").unwrap().to_string();
    let csrf = a.json()["csrf"].as_str().unwrap().to_string();
    (set.split(';').next().unwrap().to_string(), csrf)
}

fn users(srv: &Server) -> Value {
    call(srv, "GET", "/_users", ADMIN, "").expect(200).json()
}

fn names(list: &Value) -> Vec<String> {
    list.as_array()
        .unwrap()
        .iter()
        .map(|u| u["name"].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn server_users_are_for_administrators_and_no_answer_holds_a_secret() {
    let tmp = common::users_dir(&["carol"]);
    let srv = Server::start(tmp.path());
    let dave = json!({"name": "dave", "password": "dave-password-1"}).to_string();

    // Anyone but an administrator gets one answer, and nothing changes.
    call(&srv, "GET", "/_users", As::Nobody, "").expect(401);
    call(&srv, "GET", "/_users", CAROL, "").expect(403);
    call(&srv, "POST", "/_users", CAROL, &dave).expect(403);
    call(&srv, "DELETE", "/_users/admin", CAROL, "").expect(403);
    call(
        &srv,
        "PUT",
        "/_users/admin/password",
        CAROL,
        r#"{"password":"taken-over-1"}"#,
    )
    .expect(403);
    call(
        &srv,
        "POST",
        "/_users/admin/tokens",
        CAROL,
        r#"{"label":"x"}"#,
    )
    .expect(403);
    call(&srv, "GET", "/", ADMIN, "").expect(200);
    assert_eq!(names(&users(&srv)), ["admin", "carol"]);

    // A cookie session changes nothing without the CSRF token.
    let (admin_cookie, csrf) = cookie(&srv, "admin", ADMIN_PW);
    call(
        &srv,
        "POST",
        "/_users",
        As::Cookie(&admin_cookie, None),
        &dave,
    )
    .expect(403);
    assert_eq!(names(&users(&srv)), ["admin", "carol"]);

    // Add: 201, where it is, and the user signs in.
    let made = call(
        &srv,
        "POST",
        "/_users",
        As::Cookie(&admin_cookie, Some(&csrf)),
        &dave,
    )
    .expect(201);
    assert_eq!(made.header("location"), Some("/_users/dave"));
    assert_eq!(made.json()["name"], "dave");
    assert_eq!(made.json()["admin"], false);
    let who = call(&srv, "GET", "/", As::Basic("dave", "dave-password-1"), "").expect(200);
    assert_eq!(who.json()["user"], "dave");

    // Bad input is a 400 (or 409 for a name taken) and adds nobody.
    for (body, status) in [
        (json!({"name": "DAVE", "password": "another-one-1"}), 409),
        (json!({"name": "erin", "password": "short"}), 400),
        (json!({"name": "", "password": "long-enough-1"}), 400),
        (
            json!({"name": "erin", "password": "long-enough-1", "admn": true}),
            400,
        ),
        (
            json!({"name": "erin", "password": "long-enough-1", "admin": "yes"}),
            400,
        ),
        (json!({"name": "erin"}), 400),
    ] {
        call(&srv, "POST", "/_users", ADMIN, &body.to_string()).expect(status);
    }
    assert_eq!(names(&users(&srv)), ["admin", "carol", "dave"]);

    // Reset a password: the old one stops working at once.
    call(
        &srv,
        "PUT",
        "/_users/dave/password",
        ADMIN,
        r#"{"password":"dave-password-2"}"#,
    )
    .expect(200);
    call(&srv, "GET", "/", As::Basic("dave", "dave-password-1"), "").expect(401);
    call(&srv, "GET", "/", As::Basic("dave", "dave-password-2"), "").expect(200);
    call(
        &srv,
        "PUT",
        "/_users/nobody/password",
        ADMIN,
        r#"{"password":"whatever-long-1"}"#,
    )
    .expect(404);
    call(
        &srv,
        "PUT",
        "/_users/dave/password",
        ADMIN,
        r#"{"password":"short"}"#,
    )
    .expect(400);

    // A token: shown once, listed by label only, revoked.
    let t = call(
        &srv,
        "POST",
        "/_users/dave/tokens",
        ADMIN,
        r#"{"label":"scrape"}"#,
    )
    .expect(201)
    .json();
    let token = t["token"].as_str().unwrap().to_string();
    assert!(token.starts_with("folio_"), "{t}");
    let who = call(&srv, "GET", "/", As::Bearer(&token), "").expect(200);
    assert_eq!(who.json()["user"], "dave");
    call(
        &srv,
        "POST",
        "/_users/dave/tokens",
        ADMIN,
        r#"{"label":"scrape"}"#,
    )
    .expect(400);
    let listed = call(&srv, "GET", "/_users", ADMIN, "").expect(200);
    assert!(!listed.body.contains(&token), "{}", listed.body);
    assert!(!listed.body.contains("argon2"), "{}", listed.body);
    let d = &listed.json()[2];
    assert_eq!(d["tokens"], json!(["scrape"]), "{d}");
    call(&srv, "DELETE", "/_users/dave/tokens/scrape", ADMIN, "").expect(200);
    call(&srv, "GET", "/", As::Bearer(&token), "").expect(401);
    call(&srv, "DELETE", "/_users/dave/tokens/scrape", ADMIN, "").expect(404);

    // Remove: not oneself; then the user no longer signs in.
    call(&srv, "DELETE", "/_users/admin", ADMIN, "").expect(400);
    call(&srv, "DELETE", "/_users/Dave", ADMIN, "").expect(200);
    call(&srv, "GET", "/", As::Basic("dave", "dave-password-2"), "").expect(401);
    call(&srv, "DELETE", "/_users/dave", ADMIN, "").expect(404);
    assert_eq!(names(&users(&srv)), ["admin", "carol"]);
    // What `folio user list` reads is the same file.
    let listed = common::ok(tmp.path(), &["user", "list"], "");
    assert!(
        !listed.contains("dave") && listed.contains("carol"),
        "{listed}"
    );
}

/// A database `team.fdb`: rita is a Reader, carol has no access; one
/// document everyone with access reads, one `$Readers` hides from rita
/// (with an attachment), a view and a folder holding both.
fn team(srv: &Server) -> (String, String) {
    call(srv, "PUT", "/db/team.fdb", ADMIN, r#"{"title":"Team"}"#).expect(201);
    call(
        srv,
        "PUT",
        "/db/team.fdb/_acl",
        ADMIN,
        r#"{"entries":[{"name":"admin","level":"manager"},{"name":"rita","level":"reader"}]}"#,
    )
    .expect(200);
    let open = call(
        srv,
        "POST",
        "/db/team.fdb/docs",
        ADMIN,
        r#"{"Subject":"Open agenda"}"#,
    )
    .expect(201)
    .json()["unid"]
        .as_str()
        .unwrap()
        .to_string();
    let hidden = call(
        srv,
        "POST",
        "/db/team.fdb/docs",
        ADMIN,
        r#"{"Subject":"Secret salaries","$Readers":["admin"]}"#,
    )
    .expect(201)
    .json()["unid"]
        .as_str()
        .unwrap()
        .to_string();
    call_typed(
        srv,
        "PUT",
        &format!("/db/team.fdb/docs/{hidden}/attachments/pay.txt"),
        ADMIN,
        Some("text/plain"),
        &[b'x'; 5000],
    )
    .expect(201);
    call(
        srv,
        "POST",
        "/db/team.fdb/views",
        ADMIN,
        r#"{"name":"By subject","kind":"view","selection":"SELECT @All",
            "columns":[{"title":"Subject","formula":"Subject","sort":"asc"}]}"#,
    )
    .expect(201);
    call(
        srv,
        "POST",
        "/db/team.fdb/views",
        ADMIN,
        r#"{"name":"Pinned","kind":"folder","columns":[{"title":"Subject","formula":"Subject"}]}"#,
    )
    .expect(201);
    call(
        srv,
        "POST",
        "/db/team.fdb/folders/Pinned/add",
        ADMIN,
        &json!({"unids": [open, hidden]}).to_string(),
    )
    .expect(200);
    (open, hidden)
}

#[test]
fn views_and_folders_are_listed_to_whoever_may_read_them() {
    let tmp = common::users_dir(&["carol", "rita"]);
    let srv = Server::start(tmp.path());
    team(&srv);
    let expected =
        json!([{"name": "By subject", "kind": "view"}, {"name": "Pinned", "kind": "folder"}]);
    for who in [ADMIN, RITA] {
        let list = call(&srv, "GET", "/db/team.fdb/views", who, "").expect(200);
        assert_eq!(list.json(), expected);
    }
    // No access: the answer a missing database gets.
    let refused = call(&srv, "GET", "/db/team.fdb/views", CAROL, "").expect(404);
    let missing = call(&srv, "GET", "/db/none.fdb/views", CAROL, "").expect(404);
    assert_eq!(
        refused.json()["reason"]
            .as_str()
            .unwrap()
            .replace("team.fdb", "X"),
        missing.json()["reason"]
            .as_str()
            .unwrap()
            .replace("none.fdb", "X")
    );
    call(&srv, "GET", "/db/team.fdb/views", As::Nobody, "").expect(401);
    call(&srv, "GET", "/db/team.fdb/views?all=true", ADMIN, "").expect(400);
}

#[test]
fn a_reader_is_told_no_total_that_counts_documents_hidden_from_them() {
    let tmp = common::users_dir(&["carol", "rita"]);
    let srv = Server::start(tmp.path());
    team(&srv);
    let admin = call(&srv, "GET", "/db/team.fdb", ADMIN, "")
        .expect(200)
        .json();
    assert!(admin["note_count"].as_u64().unwrap() >= 2, "{admin}");
    assert_eq!(admin["attachment_logical_bytes"], 5000, "{admin}");
    let rita = call(&srv, "GET", "/db/team.fdb", RITA, "")
        .expect(200)
        .json();
    for k in [
        "note_count",
        "attachment_logical_bytes",
        "attachment_stored_bytes",
    ] {
        assert!(rita[k].is_null(), "{k} shown to a Reader: {rita}");
    }
    assert_eq!(rita["path"], "team.fdb");
    // Every list and count the console draws leaves the document out.
    let changes = call(&srv, "GET", "/db/team.fdb/docs?since=0", RITA, "").expect(200);
    assert!(!changes.body.contains("Secret"), "{}", changes.body);
    for route in ["views/By%20subject", "folders/Pinned"] {
        let v = call(
            &srv,
            "GET",
            &format!("/db/team.fdb/{route}?total=true&categories=true"),
            RITA,
            "",
        )
        .expect(200);
        assert_eq!(v.json()["total"], 1, "{}", v.body);
        assert!(!v.body.contains("Secret"), "{}", v.body);
    }
}

#[test]
fn a_readers_edit_is_refused_and_changes_nothing_however_it_is_sent() {
    let tmp = common::users_dir(&["carol", "rita"]);
    let srv = Server::start(tmp.path());
    let (open, hidden) = team(&srv);
    let (rita_cookie, csrf) = cookie(&srv, "rita", "rita-password");
    let edit = r#"{"$seq":1,"Subject":"Edited by a Reader"}"#;
    let url = format!("/db/team.fdb/docs/{open}");
    // With the CSRF token, as the console's page would send it: 403.
    call(
        &srv,
        "PUT",
        &url,
        As::Cookie(&rita_cookie, Some(&csrf)),
        edit,
    )
    .expect(403);
    call(&srv, "PUT", &format!("{url}?force=true"), RITA, edit).expect(403);
    call(
        &srv,
        "DELETE",
        &format!("{url}?seq=1"),
        As::Cookie(&rita_cookie, Some(&csrf)),
        "",
    )
    .expect(403);
    call_typed(
        &srv,
        "PUT",
        &format!("{url}/attachments/x.txt"),
        As::Cookie(&rita_cookie, Some(&csrf)),
        Some("text/plain"),
        b"x",
    )
    .expect(403);
    // A document hidden from her is missing, whatever she tries.
    let hidden_url = format!("/db/team.fdb/docs/{hidden}");
    call(&srv, "GET", &hidden_url, RITA, "").expect(404);
    call(&srv, "PUT", &hidden_url, RITA, edit).expect(404);
    let doc = call(&srv, "GET", &url, ADMIN, "").expect(200).json();
    assert_eq!(doc["Subject"], "Open agenda");
    assert_eq!(doc["$seq"], 1);
    // A save conflict: 409, and the newer version stays.
    call(
        &srv,
        "PUT",
        &url,
        ADMIN,
        r#"{"$seq":1,"Subject":"Second version"}"#,
    )
    .expect(200);
    call(&srv, "PUT", &url, ADMIN, r#"{"$seq":1,"Subject":"Stale"}"#).expect(409);
    let doc = call(&srv, "GET", &url, ADMIN, "").expect(200).json();
    assert_eq!(doc["Subject"], "Second version");
}

#[test]
fn an_attachment_is_a_download_never_a_page_of_the_console_origin() {
    let tmp = common::users_dir(&[]);
    let srv = Server::start(tmp.path());
    call(&srv, "PUT", "/db/files.fdb", ADMIN, "").expect(201);
    let unid = call(
        &srv,
        "POST",
        "/db/files.fdb/docs",
        ADMIN,
        r#"{"Subject":"files"}"#,
    )
    .expect(201)
    .json()["unid"]
        .as_str()
        .unwrap()
        .to_string();
    let page = b"<script>fetch('/_session').then(r=>r.json()).then(alert)</script>";
    // `résumé "x".html`: quotes and letters beyond ASCII.
    let encoded = "r%C3%A9sum%C3%A9%20%22x%22.html";
    call_typed(
        &srv,
        "PUT",
        &format!("/db/files.fdb/docs/{unid}/attachments/{encoded}"),
        ADMIN,
        Some("text/html"),
        page,
    )
    .expect(201);
    let got = call(
        &srv,
        "GET",
        &format!("/db/files.fdb/docs/{unid}/attachments/{encoded}"),
        ADMIN,
        "",
    )
    .expect(200);
    assert_eq!(got.body.as_bytes(), page);
    assert_eq!(got.header("content-type"), Some("text/html"));
    assert_eq!(
        got.header("content-disposition"),
        Some(
            "attachment; filename=\"r_sum_ _x_.html\"; \
             filename*=UTF-8''r%C3%A9sum%C3%A9%20%22x%22.html"
        )
    );
    let csp = got.header("content-security-policy").unwrap();
    assert!(
        csp.contains("sandbox") && csp.contains("default-src 'none'"),
        "{csp}"
    );
    assert_eq!(got.header("x-content-type-options"), Some("nosniff"));
}
