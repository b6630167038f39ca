//! Deleting a database end to end (design.md I42, I43): the real `folio
//! serve` over HTTP and the native protocol, and the embedded CLI. Its
//! Manager or an administrator deletes it; an Editor is refused; a caller
//! who may not see it gets the answer a missing database gets; a handle
//! another connection holds answers "the database was deleted"; and a new
//! database at the path starts empty, across a restart too.

mod common;

use client::{DocRef, ErrorCode};
use common::{json, Server, ADMIN_PW};
use serde_json::Value;

const DB: &str = "apps/d.fdb";
const SEGMENT: &str = "apps%2Fd.fdb";

fn http(srv: &Server, method: &str, user: Option<&str>, path: &str) -> (u16, Value) {
    let mut req = ureq::request(method, &format!("http://{}{path}", srv.http));
    if let Some(user) = user {
        let password = if user == "admin" {
            ADMIN_PW.to_string()
        } else {
            format!("{user}-password")
        };
        let auth = base64::Engine::encode(
            &base64::engine::general_purpose::STANDARD,
            format!("{user}:{password}"),
        );
        req = req.set("Authorization", &format!("Basic {auth}"));
    }
    let resp = match req.call() {
        Ok(r) => r,
        Err(ureq::Error::Status(_, r)) => r,
        Err(e) => panic!("{method} {path}: {e}"),
    };
    let status = resp.status();
    (status, json(&resp.into_string().unwrap()))
}

#[test]
fn a_manager_deletes_a_database_and_held_handles_answer_deleted() {
    let tmp = common::users_dir(&["dana", "eve", "bob"]);
    let srv = Server::start(tmp.path());
    let admin = srv.admin();
    admin.create_database(DB, "Doomed").unwrap();
    admin
        .set_acl(
            DB,
            r#"{"default":"noaccess","anonymous":"noaccess","entries":[
                {"name":"admin","level":"manager"},
                {"name":"dana","level":"manager"},
                {"name":"eve","level":"editor"}]}"#,
        )
        .unwrap();
    let (held, _) = admin.open_database(DB).unwrap();
    let saved = admin.create_document(held, r#"{"Subject":"old"}"#).unwrap();
    let path = format!("/db/{SEGMENT}");

    // Refused, changing nothing: an Editor (403, both doors); bob, who
    // may not see it, and an anonymous caller, as for a missing database.
    assert_eq!(http(&srv, "DELETE", Some("eve"), &path).0, 403);
    let eve = srv.client(Some(("eve", "eve-password"))).unwrap();
    let e = eve.delete_database(DB).unwrap_err();
    assert_eq!(e.code(), Some(ErrorCode::Forbidden), "{e}");
    let (unseen, unseen_body) = http(&srv, "DELETE", Some("bob"), &path);
    let (missing, missing_body) = http(&srv, "DELETE", Some("bob"), "/db/nope.fdb");
    assert_eq!(
        (unseen, missing),
        (404, 404),
        "{unseen_body} {missing_body}"
    );
    assert_eq!(
        unseen_body["reason"]
            .as_str()
            .unwrap()
            .replace(DB, "nope.fdb"),
        missing_body["reason"].as_str().unwrap()
    );
    let (anon, _) = http(&srv, "DELETE", None, &path);
    assert_eq!(anon, http(&srv, "DELETE", None, "/db/nope.fdb").0);
    assert_eq!(anon, 401);
    let bob = srv.client(Some(("bob", "bob-password"))).unwrap();
    let e = bob.delete_database(DB).unwrap_err();
    assert_eq!(e.code(), Some(ErrorCode::NotFound), "{e}");
    admin
        .read_document(held, DocRef::Unid(saved.unid))
        .expect("still there");

    // The Manager deletes it over HTTP.
    let (status, body) = http(&srv, "DELETE", Some("dana"), &path);
    assert_eq!(status, 200, "{body}");
    assert_eq!(http(&srv, "GET", Some("admin"), &path).0, 404);
    // The administrator's connection still holds a handle: reads and
    // writes through it answer 404 "deleted", the connection goes on.
    let e = admin
        .read_document(held, DocRef::Unid(saved.unid))
        .unwrap_err();
    assert_eq!(e.code(), Some(ErrorCode::NotFound), "{e}");
    assert!(e.to_string().contains("deleted"), "{e}");
    let e = admin
        .create_document(held, r#"{"Subject":"late"}"#)
        .unwrap_err();
    assert!(e.to_string().contains("deleted"), "{e}");
    assert!(admin.list_databases(None).unwrap().is_empty());

    // A new database at the path starts empty; the native door deletes
    // it too, for an administrator; so does the CLI with --server.
    admin.create_database(DB, "Again").unwrap();
    let (again, info) = admin.open_database(DB).unwrap();
    assert_eq!(info.title, "Again");
    admin
        .create_document(again, r#"{"Subject":"new"}"#)
        .unwrap();
    let e = admin
        .read_document(again, DocRef::Unid(saved.unid))
        .unwrap_err();
    assert_eq!(e.code(), Some(ErrorCode::NotFound), "{e}");
    admin.delete_database(DB).unwrap();
    admin.create_database(DB, "Third").unwrap();
    let out = srv.cli(&["db", "delete", DB], "");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let out = srv.cli(&["db", "delete", DB], "");
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("no database"));
}

#[test]
fn the_embedded_cli_deletes_and_a_new_database_there_starts_empty() {
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path();
    common::ok(data, &["db", "create", "a.fdb"], "");
    let unid = common::ok(data, &["doc", "put", "a.fdb"], r#"{"Subject":"old"}"#);
    let unid = unid.trim();
    assert_eq!(
        common::ok(data, &["db", "delete", "a.fdb"], "").trim(),
        "deleted a.fdb"
    );
    assert!(!data.join("a.fdb").exists());
    assert_eq!(common::ok(data, &["db", "list"], ""), "");
    common::fails(data, &["db", "info", "a.fdb"], "", "a.fdb");
    common::fails(data, &["db", "delete", "a.fdb"], "", "no database a.fdb");
    common::ok(data, &["db", "create", "a.fdb"], "");
    // Every command opens the data directory afresh: restart recovery
    // ran before each, and applied none of the old records to the new file.
    common::fails(data, &["doc", "get", "a.fdb", unid], "", unid);
}
