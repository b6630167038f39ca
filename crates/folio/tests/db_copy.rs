//! `folio db copy SRC DST [--replica]`, embedded and against a running
//! server: a plain copy has a new replica id and the same documents,
//! views and folders; a replica copy keeps the replica id; only
//! administrators copy.

mod common;

use client::{DocRef, ErrorCode};
use common::{json, ok, Server};

#[test]
fn the_embedded_cli_copies_documents_and_views_under_a_new_replica_id() {
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path();
    ok(
        d,
        &["db", "create", "a.fdb", "--mail", "--title", "Mail"],
        "",
    );
    let unid = ok(d, &["doc", "put", "a.fdb"], r#"{"Subject":"kept"}"#);
    let unid = unid.trim();
    let copied = json(&ok(d, &["db", "copy", "a.fdb", "b.fdb"], ""));
    assert_eq!(copied["documents"], 1, "{copied}");
    assert_eq!(copied["views"], 6, "{copied}");
    assert_eq!(copied["database"]["title"], "Mail", "{copied}");
    let doc = json(&ok(d, &["doc", "get", "b.fdb", unid], ""));
    assert_eq!(doc["Subject"], "kept");
    let (a, b) = (
        json(&ok(d, &["db", "info", "a.fdb"], "")),
        json(&ok(d, &["db", "info", "b.fdb"], "")),
    );
    assert_ne!(a["replica_id"], b["replica_id"]);
    let views = ok(d, &["view", "list", "b.fdb"], "");
    assert!(views.contains("Inbox"), "{views}");
    // A replica copy keeps the replica id (the embedded path replicates).
    ok(d, &["db", "copy", "a.fdb", "r.fdb", "--replica"], "");
    let r = json(&ok(d, &["db", "info", "r.fdb"], ""));
    assert_eq!(a["replica_id"], r["replica_id"]);
    common::fails(d, &["db", "copy", "a.fdb", "b.fdb"], "", "already exists");
}

#[test]
fn a_server_copies_for_administrators_plain_and_as_a_replica() {
    let tmp = common::users_dir(&["dana"]);
    let srv = Server::start(tmp.path());
    let admin = srv.admin();
    admin.create_database("src.fdb", "Source").unwrap();
    admin
        .set_acl(
            "src.fdb",
            r#"{"default":"noaccess","entries":[{"name":"admin","level":"manager"},{"name":"dana","level":"manager"}]}"#,
        )
        .unwrap();
    let (db, info) = admin.open_database("src.fdb").unwrap();
    let saved = admin.create_document(db, r#"{"Subject":"one"}"#).unwrap();

    let dana = srv.client(Some(("dana", "dana-password"))).unwrap();
    let e = dana
        .copy_database("src.fdb", "mine.fdb", false)
        .unwrap_err();
    assert_eq!(e.code(), Some(ErrorCode::Forbidden), "{e}");

    let plain = admin.copy_database("src.fdb", "plain.fdb", false).unwrap();
    assert_ne!(plain.info.replica_id, info.replica_id);
    assert_eq!(plain.documents, 1);
    let replica = admin.copy_database("src.fdb", "replica.fdb", true).unwrap();
    assert_eq!(replica.info.replica_id, info.replica_id);
    assert!(replica.documents >= 1);
    for path in ["plain.fdb", "replica.fdb"] {
        let (h, _) = admin.open_database(path).unwrap();
        let doc = admin.read_document(h, DocRef::Unid(saved.unid)).unwrap();
        assert!(doc.json.contains("one"), "{path}: {}", doc.json);
    }
    // The ACL came along: dana manages the copies too.
    let (h, _) = dana.open_database("plain.fdb").unwrap();
    dana.read_document(h, DocRef::Unid(saved.unid)).unwrap();

    let out = srv.cli(&["db", "copy", "src.fdb", "cli.fdb", "--replica"], "");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let copied = json(&String::from_utf8(out.stdout).unwrap());
    assert_eq!(copied["database"]["path"], "cli.fdb", "{copied}");

    // HTTP: 201 for an administrator, 403 for dana.
    let url = format!("http://{}/db/src.fdb/_copy?to=http.fdb", srv.http);
    let auth = |u: &str, p: &str| {
        format!(
            "Basic {}",
            base64::Engine::encode(
                &base64::engine::general_purpose::STANDARD,
                format!("{u}:{p}")
            )
        )
    };
    let r = ureq::post(&url)
        .set("Authorization", &auth("admin", common::ADMIN_PW))
        .call()
        .unwrap();
    assert_eq!(r.status(), 201);
    let body = json(&r.into_string().unwrap());
    assert_eq!(body["documents"], 1, "{body}");
    match ureq::post(&url.replace("http.fdb", "dana.fdb"))
        .set("Authorization", &auth("dana", "dana-password"))
        .call()
    {
        Err(ureq::Error::Status(403, _)) => {}
        other => panic!("expected 403, got {other:?}"),
    }
}
