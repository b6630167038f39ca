//! Mail user administration against the real `folio serve`: over HTTP
//! (`ureq`), over the native protocol (`folio --server`, the client
//! library), and refused to everyone but server administrators, with
//! nothing changed by any refused request.

mod common;
use common::{users_dir, Server, ADMIN_PW};
use serde_json::{json, Value as Json};
use std::process::Command;

/// Status and JSON body of an HTTP answer.
fn answer(r: Result<ureq::Response, ureq::Error>) -> (u16, Json, Option<String>) {
    let r = match r {
        Ok(r) => r,
        Err(ureq::Error::Status(_, r)) => r,
        Err(e) => panic!("{e}"),
    };
    let status = r.status();
    let www = r.header("WWW-Authenticate").map(str::to_string);
    let body = r.into_string().unwrap();
    let json = serde_json::from_str(&body).unwrap_or_else(|e| panic!("{e}: {body}"));
    (status, json, www)
}

fn basic(user: &str, pw: &str) -> String {
    use base64::Engine;
    format!(
        "Basic {}",
        base64::engine::general_purpose::STANDARD.encode(format!("{user}:{pw}"))
    )
}

/// One HTTP caller: who, and where.
struct Http {
    base: String,
    auth: Option<String>,
}

impl Http {
    fn new(srv: &Server, user: Option<(&str, &str)>) -> Http {
        Http {
            base: format!("http://{}", srv.http),
            auth: user.map(|(u, p)| basic(u, p)),
        }
    }

    fn req(&self, method: &str, path: &str) -> ureq::Request {
        let r = ureq::request(method, &format!("{}{path}", self.base));
        match &self.auth {
            Some(a) => r.set("Authorization", a),
            None => r,
        }
    }

    fn get(&self, path: &str) -> (u16, Json, Option<String>) {
        answer(self.req("GET", path).call())
    }

    fn post(&self, path: &str, body: &str) -> (u16, Json, Option<String>) {
        answer(
            self.req("POST", path)
                .set("Content-Type", "application/json")
                .send_string(body),
        )
    }

    fn delete(&self, path: &str) -> (u16, Json, Option<String>) {
        answer(self.req("DELETE", path).call())
    }
}

/// What a refused request must leave as it was: the directory and the
/// databases (an anonymous or plain caller sees neither, so ask as the
/// administrator).
fn state(admin: &Http) -> (Json, Json) {
    let (s, users, _) = admin.get("/mail/users");
    assert_eq!(s, 200, "{users}");
    let (s, dbs, _) = admin.get("/dbs");
    assert_eq!(s, 200, "{dbs}");
    (users, dbs)
}

fn reason(body: &Json) -> &str {
    body["reason"].as_str().unwrap_or_default()
}

#[test]
fn administrators_manage_mail_users_over_http() {
    let dir = users_dir(&["bob"]);
    let srv = Server::start(dir.path());
    let admin = Http::new(&srv, Some(("admin", ADMIN_PW)));

    // Nobody yet, and asking made no directory.
    let (s, users, _) = admin.get("/mail/users");
    assert_eq!((s, users), (200, json!([])));
    let (_, dbs, _) = admin.get("/dbs");
    assert_eq!(dbs, json!([]));

    let (s, alice, _) = admin.post(
        "/mail/users",
        r#"{"name":"Alice  Smith","aliases":["alice@example.com"],"server_user":"alice"}"#,
    );
    assert_eq!(s, 201, "{alice}");
    assert_eq!(alice["name"], "Alice Smith");
    assert_eq!(alice["short_name"], "alice.smith");
    assert_eq!(alice["aliases"], json!(["alice@example.com"]));
    assert_eq!(alice["mail_file"], "mail/alice.smith.fdb");
    assert_eq!(alice["server_user"], "alice");
    assert_eq!(alice["unid"].as_str().map(str::len), Some(32));
    let (s, bob, _) = admin.post("/mail/users", r#"{"name":"bob"}"#);
    assert_eq!(s, 201, "{bob}");
    assert_eq!(bob["server_user"], "bob");

    let (s, users, _) = admin.get("/mail/users");
    assert_eq!(s, 200);
    assert_eq!(users, json!([alice, bob]), "by full name");

    // The mail file is bob's: he opens it, as its Manager.
    let bob_http = Http::new(&srv, Some(("bob", "bob-password")));
    let (s, access, _) = bob_http.get("/db/mail%2Fbob.fdb/_access");
    assert_eq!(s, 200, "{access}");
    assert_eq!(access["level"], "manager");

    // Each bad request is refused, naming the problem, and changes nothing.
    let before = state(&admin);
    let refused = [
        // Taken names: the full name, ignoring case and spaces; an alias.
        (
            r#"{"name":"ALICE smith"}"#,
            409,
            "\"ALICE smith\" is already a name of \"Alice Smith\"",
        ),
        (
            r#"{"name":"Carol","aliases":["Alice@Example.com"]}"#,
            409,
            "\"Alice@Example.com\" is already a name of \"Alice Smith\"",
        ),
        (
            r#"{"name":"Bob"}"#,
            409,
            "\"Bob\" is already a name of \"bob\"",
        ),
        // Bad names.
        (
            r#"{"name":"Eve, the Spy"}"#,
            400,
            "bad name \"Eve, the Spy\"",
        ),
        (r#"{"name":"   "}"#, 400, "a name cannot be empty"),
        (
            r#"{"name":"Carol","aliases":["x<y"]}"#,
            400,
            "bad name \"x<y\"",
        ),
        (
            r#"{"name":"Carol","aliases":["carol"]}"#,
            400,
            "repeats another name",
        ),
        // Malformed bodies.
        (
            r#"{"name":"Carol","alias":["c"]}"#,
            400,
            "unknown field \"alias\"",
        ),
        (
            r#"{"name":"Carol","aliases":"c"}"#,
            400,
            "must be an array of strings",
        ),
        (
            r#"{"name":"Carol","aliases":[1]}"#,
            400,
            "must be an array of strings",
        ),
        (r#"{"aliases":[]}"#, 400, "\"name\" is missing"),
        (r#"["Carol"]"#, 400, "must be a JSON object"),
        ("{not json", 400, "malformed JSON"),
    ];
    for (body, status, says) in refused {
        let (s, e, _) = admin.post("/mail/users", body);
        assert_eq!(s, status, "{body}: {e}");
        assert!(reason(&e).contains(says), "{body}: {e}");
        assert_eq!(state(&admin), before, "{body} changed something");
    }
    let long = format!(r#"{{"name":"{}"}}"#, "x".repeat(121));
    let (s, e, _) = admin.post("/mail/users", &long);
    assert_eq!(s, 400, "{e}");
    assert!(reason(&e).contains("at most 120 bytes"), "{e}");
    let (s, e, _) = admin.delete("/mail/users/nobody");
    assert_eq!(s, 404, "{e}");
    assert_eq!(reason(&e), "no person named \"nobody\" in the directory");
    let (s, e, _) = admin.delete("/mail/users/bob?delete_file=yes");
    assert_eq!(s, 400, "{e}");
    let (s, e, _) = admin.delete("/mail/users/bob?force=true");
    assert_eq!(s, 400, "{e}");
    assert!(
        reason(&e).contains("unknown query parameter \"force\""),
        "{e}"
    );
    assert_eq!(state(&admin), before);

    // Removing keeps the file; any of the person's names will do.
    let (s, removed, _) = admin.delete("/mail/users/alice%40example.com");
    assert_eq!(s, 200, "{removed}");
    assert_eq!(
        removed,
        json!({"removed":"Alice Smith","mail_file":"mail/alice.smith.fdb","file":"kept"})
    );
    let (_, users, _) = admin.get("/mail/users");
    assert_eq!(users, json!([bob]));
    let (_, dbs, _) = admin.get("/dbs");
    let paths: Vec<&str> = dbs
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|d| d["path"].as_str())
        .collect();
    assert!(paths.contains(&"mail/alice.smith.fdb"), "{dbs}");
    // The kept file stands in the way of a new Alice Smith, and says so.
    let (s, e, _) = admin.post("/mail/users", r#"{"name":"Alice Smith"}"#);
    assert_eq!(s, 409, "{e}");
    assert!(
        reason(&e).contains("mail/alice.smith.fdb already exists"),
        "{e}"
    );
    let (_, users, _) = admin.get("/mail/users");
    assert_eq!(users, json!([bob]));

    // With delete_file the mail file goes first, then the person; the
    // name is free again.
    let path = format!(
        "/mail/users/{}?delete_file=true",
        bob["short_name"].as_str().unwrap()
    );
    let (s, removed, _) = admin.delete(&path);
    assert_eq!(s, 200, "{removed}");
    assert_eq!(removed["file"], "deleted", "{removed}");
    assert_eq!(removed["mail_file"], bob["mail_file"]);
    let (_, users, _) = admin.get("/mail/users");
    assert_eq!(users, json!([]));
    let (_, dbs, _) = admin.get("/dbs");
    assert!(
        !dbs.to_string().contains(bob["mail_file"].as_str().unwrap()),
        "{dbs}"
    );
    let name = bob["name"].as_str().unwrap();
    let (s, again, _) = admin.post("/mail/users", &json!({ "name": name }).to_string());
    assert_eq!(s, 201, "{again}");
    assert!(srv.stop().success());
}

/// Anonymous callers are asked to sign in and plain users are refused,
/// with one answer whatever the name: neither can tell who is in the
/// directory from these routes, and neither changes anything.
#[test]
fn only_administrators_may_and_nobody_else_can_probe() {
    let dir = users_dir(&["bob"]);
    let srv = Server::start(dir.path());
    let admin = Http::new(&srv, Some(("admin", ADMIN_PW)));
    let (s, _, _) = admin.post("/mail/users", r#"{"name":"Alice Smith"}"#);
    assert_eq!(s, 201);
    let before = state(&admin);

    let anonymous = Http::new(&srv, None);
    let bob = Http::new(&srv, Some(("bob", "bob-password")));
    for (who, caller, status) in [("anonymous", &anonymous, 401), ("bob", &bob, 403)] {
        let answers = [
            caller.get("/mail/users"),
            caller.post("/mail/users", r#"{"name":"Carol"}"#),
            caller.post("/mail/users", r#"{"name":"Alice Smith"}"#),
            caller.post("/mail/users", r#"{"name":"bad, name"}"#),
            caller.delete("/mail/users/Alice%20Smith"),
            caller.delete("/mail/users/nobody"),
            caller.delete("/mail/users/Alice%20Smith?delete_file=true"),
        ];
        let first = answers[0].1.clone();
        for (s, body, www) in &answers {
            assert_eq!(*s, status, "{who}: {body}");
            assert_eq!(*body, first, "{who}: every answer the same");
            assert_eq!(www.is_some(), status == 401, "{who}: {body}");
        }
        assert!(reason(&first).contains("server administrators"), "{first}");
        assert!(!reason(&first).contains("Alice"), "{first}");
        assert_eq!(state(&admin), before, "{who} changed something");
    }
    let (s, e, _) = Http::new(&srv, Some(("bob", "wrong"))).get("/mail/users");
    assert_eq!(s, 401, "{e}");
    assert!(srv.stop().success());
}

/// The same through the native protocol: `folio --server` as the
/// administrator and as a plain user, and the client library.
#[test]
fn mail_users_over_the_native_protocol() {
    let dir = users_dir(&["bob"]);
    let srv = Server::start(dir.path());
    let cli_as = |user: &str, pw: &str, args: &[&str]| {
        let out = Command::new(env!("CARGO_BIN_EXE_folio"))
            .args(["--server", &srv.native, "--user", user])
            .args(args)
            .env("FOLIO_PASSWORD", pw)
            .output()
            .unwrap();
        (
            out.status.success(),
            String::from_utf8(out.stdout).unwrap(),
            String::from_utf8(out.stderr).unwrap(),
        )
    };
    let (ok, out, err) = srv_cli(&srv, &["mail", "create-user", "Carol", "--alias", "cc"]);
    assert!(ok, "{err}");
    let carol: Json = serde_json::from_str(&out).unwrap();
    assert_eq!(carol["mail_file"], "mail/carol.fdb");

    // A plain user is refused, the same whatever the name, changing nothing.
    for args in [
        &["mail", "list-users"][..],
        &["mail", "create-user", "Dave"],
        &["mail", "remove-user", "Carol"],
        &["mail", "remove-user", "nobody"],
    ] {
        let (ok, out, err) = cli_as("bob", "bob-password", args);
        assert!(!ok && out.is_empty(), "{args:?}");
        assert_eq!(
            err.trim_end(),
            "folio: user \"bob\" is not a server administrator: mail user administration \
             is for server administrators",
            "{args:?}"
        );
    }
    let (ok, out, _) = srv_cli(&srv, &["mail", "list-users"]);
    assert!(ok);
    assert_eq!(out.lines().count(), 1, "{out}");

    // --delete-file over the network deletes the mail file as well.
    let (ok, _, err) = srv_cli(&srv, &["mail", "create-user", "Dave"]);
    assert!(ok, "{err}");
    let (ok, out, err) = srv_cli(&srv, &["mail", "remove-user", "dave", "--delete-file"]);
    assert!(ok, "{err}");
    let removed: Json = serde_json::from_str(&out).unwrap();
    assert_eq!(
        removed,
        serde_json::json!({"removed":"Dave","mail_file":"mail/dave.fdb","file":"deleted"})
    );
    let (_, listed, _) = srv_cli(&srv, &["mail", "list-users"]);
    assert_eq!(listed, out_of(&carol));

    // The client library: anonymous callers are asked to sign in.
    let anonymous = srv.client(None).unwrap();
    let e = anonymous.list_mail_users().unwrap_err();
    assert!(
        matches!(&e, client::ClientError::Server { code: client::ErrorCode::Unauthenticated, message } if message.contains("sign in")),
        "{e:?}"
    );
    let admin = srv.admin();
    let (removed, file) = admin.remove_mail_user("CC", false).unwrap();
    assert_eq!(removed.full_name, "Carol");
    assert_eq!(file, client::MailFileFate::Kept);
    assert!(admin.list_mail_users().unwrap().is_empty());
    let dbs = admin.list_databases(Some("mail/")).unwrap();
    assert_eq!(dbs.len(), 1, "the mail file is kept: {dbs:?}");
    assert!(srv.stop().success());
}

/// `folio --server` as the administrator: ok, stdout, stderr.
fn srv_cli(srv: &Server, args: &[&str]) -> (bool, String, String) {
    let o = srv.cli(args, "");
    (
        o.status.success(),
        String::from_utf8(o.stdout).unwrap(),
        String::from_utf8(o.stderr).unwrap(),
    )
}

/// The line `mail list-users` prints for a person `create-user` printed.
fn out_of(person: &Json) -> String {
    format!("{person}\n")
}
