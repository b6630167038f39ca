//! Removing an attachment end to end: HTTP `DELETE …/attachments/{name}`,
//! the native `DeleteAttachment` and `folio attach delete`. Checked like
//! a document edit: an Author named in the Author items and an Editor
//! may, a Reader may not; a missing name is 404 naming it; the document
//! gets a new sequence number and keeps its other attachments.

mod common;

use client::{DocRef, ErrorCode};
use common::{json, ok, Server, ADMIN_PW};
use serde_json::Value;

const DB: &str = "att.fdb";

fn http(srv: &Server, method: &str, user: &str, path: &str) -> (u16, Value) {
    let password = if user == "admin" {
        ADMIN_PW.to_string()
    } else {
        format!("{user}-password")
    };
    let auth = base64::Engine::encode(
        &base64::engine::general_purpose::STANDARD,
        format!("{user}:{password}"),
    );
    let r = ureq::request(method, &format!("http://{}{path}", srv.http))
        .set("Authorization", &format!("Basic {auth}"))
        .call();
    let resp = match r {
        Ok(r) => r,
        Err(ureq::Error::Status(_, r)) => r,
        Err(e) => panic!("{method} {path}: {e}"),
    };
    let status = resp.status();
    let text = resp.into_string().unwrap();
    (status, serde_json::from_str(&text).unwrap_or(Value::Null))
}

#[test]
fn authors_and_editors_remove_attachments_readers_may_not() {
    let tmp = common::users_dir(&["ann", "eve", "rita"]);
    let srv = Server::start(tmp.path());
    let admin = srv.admin();
    admin.create_database(DB, "Files").unwrap();
    admin
        .set_acl(
            DB,
            r#"{"default":"noaccess","entries":[{"name":"admin","level":"manager"},
                {"name":"ann","level":"author"},{"name":"eve","level":"editor"},
                {"name":"rita","level":"reader"}]}"#,
        )
        .unwrap();
    let (db, _) = admin.open_database(DB).unwrap();
    let saved = admin
        .create_document(db, r#"{"Subject":"files","$Authors":["ann"]}"#)
        .unwrap();
    let unid = saved.unid;
    for name in ["a.bin", "b.bin", "c.bin"] {
        let bytes = vec![7u8; 10_000];
        admin
            .put_attachment(db, unid, name, "x/y", Some(10_000), &bytes[..])
            .unwrap();
    }
    let seq = admin
        .read_document(db, DocRef::Unid(unid))
        .unwrap()
        .meta
        .seq_num;
    let at = |name: &str| format!("/db/{DB}/docs/{unid}/attachments/{name}");

    // Refused, changing nothing: a Reader; a missing name (named).
    assert_eq!(http(&srv, "DELETE", "rita", &at("a.bin")).0, 403);
    let (status, body) = http(&srv, "DELETE", "ann", &at("nope.bin"));
    assert_eq!(status, 404, "{body}");
    assert!(
        body["reason"].as_str().unwrap().contains("nope.bin"),
        "{body}"
    );
    let (status, _) = http(
        &srv,
        "DELETE",
        "ann",
        &format!("{}?seq={}", at("a.bin"), seq - 1),
    );
    assert_eq!(status, 409);
    assert_eq!(
        admin
            .read_document(db, DocRef::Unid(unid))
            .unwrap()
            .meta
            .seq_num,
        seq
    );

    // The named Author removes one over HTTP.
    let (status, body) = http(&srv, "DELETE", "ann", &at("a.bin"));
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["seq"], seq + 1, "{body}");
    assert_eq!(http(&srv, "GET", "ann", &at("a.bin")).0, 404);
    assert_eq!(http(&srv, "GET", "ann", &at("b.bin")).0, 200);

    // An Editor over the native protocol; a Reader is refused there too.
    let rita = srv.client(Some(("rita", "rita-password"))).unwrap();
    let (rdb, _) = rita.open_database(DB).unwrap();
    let e = rita
        .delete_attachment(rdb, unid, "b.bin", None)
        .unwrap_err();
    assert_eq!(e.code(), Some(ErrorCode::Forbidden), "{e}");
    let eve = srv.client(Some(("eve", "eve-password"))).unwrap();
    let (edb, _) = eve.open_database(DB).unwrap();
    let meta = eve.delete_attachment(edb, unid, "b.bin", None).unwrap();
    assert_eq!(meta.seq_num, seq + 2);
    let e = eve.delete_attachment(edb, unid, "b.bin", None).unwrap_err();
    assert_eq!(e.code(), Some(ErrorCode::NotFound), "{e}");
    assert!(e.to_string().contains("b.bin"), "{e}");

    // The CLI against the server, as the administrator.
    let out = srv.cli(&["attach", "delete", DB, &unid.to_string(), "c.bin"], "");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(http(&srv, "GET", "admin", &at("c.bin")).0, 404);
}

#[test]
fn the_embedded_cli_removes_an_attachment() {
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path();
    ok(d, &["db", "create", "a.fdb"], "");
    let unid = ok(d, &["doc", "put", "a.fdb"], r#"{"Subject":"x"}"#);
    let unid = unid.trim();
    let file = d.join("f.txt");
    std::fs::write(&file, b"hello").unwrap();
    ok(
        d,
        &["attach", "put", "a.fdb", unid, file.to_str().unwrap()],
        "",
    );
    ok(d, &["attach", "delete", "a.fdb", unid, "f.txt"], "");
    common::fails(d, &["attach", "get", "a.fdb", unid, "f.txt"], "", "f.txt");
    common::fails(
        d,
        &["attach", "delete", "a.fdb", unid, "f.txt"],
        "",
        "f.txt",
    );
    let doc = json(&ok(d, &["doc", "get", "a.fdb", unid], ""));
    assert_eq!(doc["Subject"], "x");
}
