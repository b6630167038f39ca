//! End to end: the real `folio serve` binary on loopback, driven through
//! the client library, the CLI (`--server`) and HTTP.

mod common;

use client::{DocRef, ErrorCode, ReadFlags, Start};
use common::{folio, json, Server, ADMIN_PW};
use std::io::{Read, Write};
use std::time::Duration;

fn unid_text(u: client::Unid) -> String {
    nsf::Unid(u.0).to_string()
}

#[test]
fn documents_attachments_views_and_stats_through_client_cli_and_http() {
    let tmp = common::users_dir(&[]);
    let srv = Server::start(tmp.path());
    let c = srv.admin();

    // Client: a mail file, documents, a conflict, an attachment.
    let out = srv.cli(
        &[
            "db",
            "create",
            "mail/alice.fdb",
            "--title",
            "Alice",
            "--mail",
        ],
        "",
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let (db, info) = c.open_database("mail/alice.fdb").unwrap();
    assert_eq!(info.title, "Alice");
    let a = c
        .create_document(db, r#"{"Form":"Memo","Subject":"Hello"}"#)
        .unwrap();
    let b = c
        .create_document(db, r#"{"Form":"Memo","Subject":"Budget"}"#)
        .unwrap();
    let doc = c.read_document(db, DocRef::Unid(a.unid)).unwrap();
    assert_eq!(json(&doc.json)["Subject"], "Hello");
    let a2 = c
        .update_document(
            db,
            a.unid,
            Some(a.seq_num),
            false,
            r#"{"Subject":"Hello again"}"#,
        )
        .unwrap();
    assert_eq!(a2.seq_num, a.seq_num + 1);
    let stale = c
        .update_document(db, a.unid, Some(a.seq_num), false, r#"{"Subject":"lost"}"#)
        .unwrap_err();
    assert!(stale.is_conflict(), "{stale}");
    let content: Vec<u8> = (0..3_000_000u32).map(|i| (i * 7 % 251) as u8).collect();
    let stored = c
        .put_attachment(
            db,
            b.unid,
            "data.bin",
            "application/octet-stream",
            Some(content.len() as u64),
            &content[..],
        )
        .unwrap();
    assert_eq!(stored, content.len() as u64);
    let mut back = Vec::new();
    c.get_attachment(db, b.unid, "data.bin", &mut back).unwrap();
    assert!(back == content, "attachment round trip");

    // Views and folders over the network.
    c.folder_add(db, "Inbox", &[a.unid, b.unid]).unwrap();
    let inbox = c.open_collection(db, "Inbox").unwrap();
    assert_eq!(inbox.count, 2);
    let (rows, total) = c
        .read_entries(
            inbox.collection,
            Start::Position(0),
            40,
            ReadFlags {
                count: true,
                ..Default::default()
            },
        )
        .unwrap();
    assert_eq!((rows.len(), total), (2, Some(2)));
    let mut hits = Vec::new();
    let found = c
        .search(db, r#"SELECT @Contains(Subject; "again")"#, None, |d| {
            hits.push(d)
        })
        .unwrap();
    assert_eq!((found, hits.len()), (1, 1));
    let bad = c.search(db, "SELECT (", None, |_| {}).unwrap_err();
    assert_eq!(bad.code(), Some(ErrorCode::BadRequest), "{bad}");

    // CLI with --server: the same commands as on a data directory.
    let out = srv.cli(&["db", "list"], "");
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).trim(),
        "mail/alice.fdb"
    );
    let out = srv.cli(&["doc", "get", "mail/alice.fdb", &unid_text(a.unid)], "");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        json(&String::from_utf8_lossy(&out.stdout))["Subject"],
        "Hello again"
    );
    let out = srv.cli(
        &["doc", "put", "mail/alice.fdb"],
        r#"{"Form":"Memo","Subject":"from the CLI"}"#,
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let out = srv.cli(
        &[
            "search",
            "mail/alice.fdb",
            r#"SELECT Subject = "from the CLI""#,
        ],
        "",
    );
    assert_eq!(String::from_utf8_lossy(&out.stdout).lines().count(), 1);
    let out = srv.cli(&["doc", "get", "mail/alice.fdb", "not-a-unid"], "");
    assert!(!out.status.success());
    let out = srv.cli(&["show", "stats"], "");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stats = json(&String::from_utf8_lossy(&out.stdout));
    assert!(stats["op.create.count"].as_u64().unwrap() >= 3, "{stats}");
    for key in [
        "server.connections",
        "pool.hit_rate",
        "log.fsyncs",
        "log.checkpoint_age_s",
        "db.open",
        "lock.waits",
        "op.create.p99_ms",
    ] {
        assert!(stats.get(key).is_some(), "{key} missing from {stats}");
    }

    // HTTP: the same data, with basic authentication.
    let http = format!("http://{}", srv.http);
    let auth = format!(
        "Basic {}",
        base64::Engine::encode(
            &base64::engine::general_purpose::STANDARD,
            format!("admin:{ADMIN_PW}")
        )
    );
    let r = ureq::get(&format!(
        "{http}/db/mail%2Falice.fdb/docs/{}",
        unid_text(a.unid)
    ))
    .set("Authorization", &auth)
    .call()
    .unwrap();
    assert_eq!(
        r.into_json::<serde_json::Value>().unwrap()["Subject"],
        "Hello again"
    );
    let r = ureq::get(&format!("{http}/stats"))
        .set("Authorization", &auth)
        .call()
        .unwrap();
    let stats = r.into_json::<serde_json::Value>().unwrap();
    assert!(
        stats["server.transactions"].as_u64().unwrap() > 0,
        "{stats}"
    );
    let before = c.database_info("mail/alice.fdb").unwrap();
    let e = ureq::post(&format!("{http}/db/mail%2Falice.fdb/docs"))
        .set("Authorization", &auth)
        .send_string("{not json")
        .unwrap_err();
    assert!(matches!(e, ureq::Error::Status(400, _)), "{e:?}");
    let after = c.database_info("mail/alice.fdb").unwrap();
    assert_eq!(
        (before.note_count, before.sequence),
        (after.note_count, after.sequence)
    );

    // SIGTERM: a clean stop; the data directory then opens without recovery work.
    drop(c);
    assert!(srv.stop().success(), "serve exits 0 on SIGTERM");
    let o = folio(
        tmp.path(),
        &["doc", "get", "mail/alice.fdb", &unid_text(b.unid)],
        "",
    );
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
}

#[test]
fn kill_9_loses_no_acknowledged_document() {
    let tmp = common::users_dir(&[]);
    let srv = Server::start(tmp.path());
    let c = srv.admin();
    c.create_database("k.fdb", "").unwrap();
    let (db, _) = c.open_database("k.fdb").unwrap();
    let acked: Vec<_> = (0..200)
        .map(|i| {
            c.create_document(db, &format!(r#"{{"N":{i}}}"#))
                .unwrap()
                .unid
        })
        .collect();
    drop(c);
    srv.kill();
    let srv = Server::start(tmp.path());
    let c = srv.admin();
    let (db, info) = c.open_database("k.fdb").unwrap();
    assert!(info.note_count >= 200, "{info:?}");
    for (i, u) in acked.iter().enumerate() {
        let d = c.read_document(db, DocRef::Unid(*u)).unwrap();
        assert_eq!(json(&d.json)["N"].as_f64(), Some(i as f64));
    }
    drop(c);
    assert!(srv.stop().success());
}

#[test]
fn unauthenticated_writes_and_bad_credentials_are_refused() {
    let tmp = common::users_dir(&["bob"]);
    let srv = Server::start(tmp.path());
    let admin = srv.admin();
    admin.create_database("apps/crm.fdb", "CRM").unwrap();
    let (adb, _) = admin.open_database("apps/crm.fdb").unwrap();
    let doc = admin.create_document(adb, r#"{"Name":"Acme"}"#).unwrap();
    let before = admin.database_info("apps/crm.fdb").unwrap();

    let e = srv.client(Some(("admin", "wrong"))).unwrap_err();
    assert_eq!(e.code(), Some(ErrorCode::Unauthenticated), "{e}");
    let e = srv.client(Some(("nobody", "whatever1"))).unwrap_err();
    assert_eq!(e.code(), Some(ErrorCode::Unauthenticated), "{e}");

    let anon = srv.client(None).unwrap();
    let e = anon.create_database("anon.fdb", "").unwrap_err();
    assert_eq!(e.code(), Some(ErrorCode::Forbidden), "{e}");
    let e = anon.open_database("apps/crm.fdb").unwrap_err();
    assert_eq!(e.code(), Some(ErrorCode::Unauthenticated), "{e}");
    let bob = srv.client(Some(("bob", "bob-password"))).unwrap();
    // A database bob may not see answers like a missing one (tests/doors.rs).
    let e = bob.open_database("apps/crm.fdb").unwrap_err();
    assert_eq!(e.code(), Some(ErrorCode::NotFound), "{e}");

    let http = format!("http://{}", srv.http);
    let e = ureq::post(&format!("{http}/db/apps%2Fcrm.fdb/docs"))
        .send_string(r#"{"Name":"anonymous"}"#)
        .unwrap_err();
    assert!(matches!(e, ureq::Error::Status(401, _)), "{e:?}");
    let e = ureq::put(&format!(
        "{http}/db/apps%2Fcrm.fdb/docs/{}",
        unid_text(doc.unid)
    ))
    .set("Authorization", "Bearer folio_not-a-token")
    .send_string(r#"{"Name":"x"}"#)
    .unwrap_err();
    assert!(matches!(e, ureq::Error::Status(401, _)), "{e:?}");
    let after = admin.database_info("apps/crm.fdb").unwrap();
    assert_eq!(
        (before.note_count, before.sequence),
        (after.note_count, after.sequence)
    );
}

#[test]
fn garbage_on_the_native_port_closes_that_connection_only() {
    let tmp = common::users_dir(&[]);
    let srv = Server::start(tmp.path());
    for garbage in [
        b"GET / HTTP/1.1\r\nHost: x\r\n\r\n".to_vec(),
        vec![0xff; 64],
        vec![10, 0, 0, 0, 3, 0, 1, 0, 0, 0, 9, 9, 9, 9],
    ] {
        let mut s = std::net::TcpStream::connect(&srv.native).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        s.write_all(&garbage).unwrap();
        let mut answer = Vec::new();
        let _ = s.read_to_end(&mut answer);
        assert!(answer.len() >= 12, "an error frame comes back: {answer:?}");
        assert_eq!(answer[4], 0x08, "frame type Error: {answer:?}");
    }
    let c = srv.admin();
    c.create_database("still.fdb", "").unwrap();
    drop(c);
    assert!(srv.stop().success());
}

#[test]
fn tls_self_signed_serves_clients_that_trust_the_certificate() {
    let tmp = common::users_dir(&[]);
    let srv = Server::start_with(tmp.path(), &["--tls-self-signed"]);
    let cert = tmp.path().join("tls").join("cert.pem");
    assert!(cert.exists(), "the certificate is made in <data>/tls");
    let trusting = client::ClientOptions::new(srv.native.as_str())
        .with_credentials("admin", ADMIN_PW)
        .with_tls(client::TlsOptions {
            ca_cert: cert.clone(),
            server_name: None,
        });
    let c = client::blocking::Client::connect(trusting).unwrap();
    c.create_database("tls.fdb", "over TLS").unwrap();
    // A client speaking plain TCP to the TLS port gets no session.
    assert!(srv.client(Some(("admin", ADMIN_PW))).is_err());
    // The CLI trusts the same certificate with --tls-ca.
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_folio"))
        .args(["--server", &srv.native, "--user", "admin", "--tls-ca"])
        .arg(&cert)
        .args(["db", "info", "tls.fdb"])
        .env("FOLIO_PASSWORD", ADMIN_PW)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        json(&String::from_utf8_lossy(&out.stdout))["title"],
        "over TLS"
    );
    drop(c);
    assert!(srv.stop().success());
}
