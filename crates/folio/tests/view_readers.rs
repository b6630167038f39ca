//! `$Readers` and views end to end: the real `folio serve`, read over
//! HTTP (ureq, an ordinary client) and with the CLI (`--server`, the
//! native protocol) by a user who may not read some of the documents.
//! He must see the view as if they did not exist: no category that only
//! they fill, no share of totals or counts, no gaps in positions.

mod common;

use common::{json, Server, ADMIN_PW};
use serde_json::json as j;
use serde_json::Value;
use std::process::Command;

const DB: &str = "apps/crm.fdb";

/// `folio --server … --user USER ARGS`, which must succeed; its stdout.
fn cli_as(srv: &Server, user: &str, args: &[&str]) -> String {
    let password = if user == "admin" {
        ADMIN_PW.to_string()
    } else {
        format!("{user}-password")
    };
    let out = Command::new(env!("CARGO_BIN_EXE_folio"))
        .args(["--server", &srv.native, "--user", user])
        .args(args)
        .env("FOLIO_PASSWORD", password)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

fn http_get(srv: &Server, user: &str, path: &str) -> (u16, Value) {
    let password = if user == "admin" {
        ADMIN_PW.to_string()
    } else {
        format!("{user}-password")
    };
    let auth = base64::Engine::encode(
        &base64::engine::general_purpose::STANDARD,
        format!("{user}:{password}"),
    );
    let r = ureq::get(&format!("http://{}{path}", srv.http))
        .set("Authorization", &format!("Basic {auth}"))
        .call();
    let resp = match r {
        Ok(r) => r,
        Err(ureq::Error::Status(_, r)) => r,
        Err(e) => panic!("{path}: {e}"),
    };
    (resp.status(), resp.into_json().unwrap())
}

/// Rows as (category, count) or (position, subject).
fn summary(rows: &[Value]) -> Vec<Value> {
    rows.iter()
        .map(|r| match r.get("category") {
            Some(c) => j!([c, r["count"]]),
            None => j!([r["position"], r["columns"]["Subject"]]),
        })
        .collect()
}

fn lines(text: &str) -> Vec<Value> {
    text.lines().map(json).collect()
}

#[test]
fn hidden_documents_leave_no_trace_in_views_over_http_and_the_cli() {
    let tmp = common::users_dir(&["bob", "alice"]);
    let srv = Server::start(tmp.path());
    let admin = srv.admin();
    admin.create_database(DB, "CRM").unwrap();
    admin
        .set_acl(
            DB,
            r#"{"default":"noaccess","entries":[
                {"name":"admin","level":"manager"},
                {"name":"alice","level":"editor"},
                {"name":"bob","level":"reader"}]}"#,
        )
        .unwrap();
    let (db, _) = admin.open_database(DB).unwrap();
    for doc in [
        r#"{"Cat":"Plans","Subject":"alpha"}"#,
        r#"{"Cat":"Plans","Subject":"beta","$Readers":["alice"]}"#,
        r#"{"Cat":"Secret","Subject":"merger","$Readers":["alice"]}"#,
        r#"{"Cat":"Plans","Subject":"delta"}"#,
        r#"{"Cat":"Zoo","Subject":"epsilon","$Readers":["bob"]}"#,
        r#"{"Cat":"Zoo","Subject":"zeta"}"#,
    ] {
        admin.create_document(db, doc).unwrap();
    }
    cli_as(
        &srv,
        "admin",
        &[
            "view",
            "create",
            DB,
            "ByCat",
            "--select",
            "SELECT @All",
            "--column",
            "Cat=Cat:cat",
            "--column",
            "Subject=Subject:asc",
        ],
    );
    let bobs_view = j!([
        ["Plans", 2],
        [0, "alpha"],
        [1, "delta"],
        ["Zoo", 2],
        [2, "epsilon"],
        [3, "zeta"]
    ]);

    // HTTP, as bob: the whole view, a page from a position, finds.
    let view = "/db/apps%2Fcrm.fdb/views/ByCat";
    let (status, page) = http_get(
        &srv,
        "bob",
        &format!("{view}?categories=true&total=true&count=100"),
    );
    assert_eq!(status, 200, "{page}");
    assert_eq!(page["total"], 4, "{page}");
    let rows = page["rows"].as_array().unwrap();
    assert_eq!(j!(summary(rows)), bobs_view, "{page}");
    assert!(!page.to_string().contains("Secret"), "{page}");
    assert!(!page.to_string().contains("merger"), "{page}");
    let (_, page) = http_get(&srv, "bob", &format!("{view}?start=2&count=1"));
    assert_eq!(
        summary(page["rows"].as_array().unwrap()),
        [j!([2, "epsilon"])]
    );
    let (_, page) = http_get(
        &srv,
        "bob",
        &format!("{view}?start=3&count=5&backward=true"),
    );
    let positions: Vec<&Value> = page["rows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| &r["position"])
        .collect();
    assert_eq!(positions, [3, 2, 1, 0]);
    assert_eq!(
        http_get(&srv, "bob", &format!("{view}/find?key=Zoo")),
        (200, json(r#"{"position":2,"count":2}"#))
    );
    assert_eq!(
        http_get(&srv, "bob", &format!("{view}/find?key=Secret")).0,
        404
    );

    // The administrator sees everything.
    let (_, page) = http_get(
        &srv,
        "admin",
        &format!("{view}?categories=true&total=true&count=100"),
    );
    assert_eq!(page["total"], 6);
    assert!(page["rows"]
        .as_array()
        .unwrap()
        .contains(&json(r#"{"category":"Secret","count":1}"#)));
    assert_eq!(
        http_get(&srv, "admin", &format!("{view}/find?key=Zoo")),
        (200, json(r#"{"position":4,"count":2}"#))
    );

    // The CLI over the native protocol, as bob: the same.
    let out = lines(&cli_as(
        &srv,
        "bob",
        &["view", "read", DB, "ByCat", "--categories", "--total"],
    ));
    let (total, rows) = out.split_last().unwrap();
    assert_eq!(*total, json(r#"{"total":4}"#));
    assert_eq!(j!(summary(rows)), bobs_view);
    let out = lines(&cli_as(
        &srv,
        "bob",
        &["view", "read", DB, "ByCat", "--start", "2", "--count", "1"],
    ));
    assert_eq!(summary(&out), [j!([2, "epsilon"])]);
    let found = |key| json(&cli_as(&srv, "bob", &["view", "find", DB, "ByCat", key]));
    assert_eq!(found("Zoo"), json(r#"{"position":2,"count":2}"#));
    assert_eq!(found("Secret"), json(r#"{"position":null,"count":0}"#));
}
