//! `folio archive` end to end, against the real binary: a server whose log
//! is in archive style fills up when nobody archives, refuses writes at
//! once saying archiving is needed (reads go on, `show stats` says why),
//! and writes resume once `folio archive --server` (or `POST
//! /admin/archive`) has copied the extents; embedded, `folio archive`
//! archives the data directory's log.

mod common;

use common::{json, ok, users_dir, Server, ADMIN_PW};
use protocol::{DocRef, ErrorCode};
use std::path::Path;

/// A data directory with an administrator, a user `bob`, and a tiny
/// archive-style log (three 64 KiB extents).
fn archive_data_dir() -> tempfile::TempDir {
    let d = users_dir(&["bob"]);
    std::fs::write(
        d.path().join("folio.toml"),
        "[translog]\nstyle = \"archive\"\nextent_size = 65536\nmax_size = 196608\nfull_wait_ms = 300\n",
    )
    .unwrap();
    d
}

fn doc(i: usize) -> String {
    format!(
        r#"{{"Form": "Memo", "N": {i}, "Body": "{}"}}"#,
        "x".repeat(3000)
    )
}

fn archived_files(data: &Path) -> usize {
    std::fs::read_dir(data.join("archive"))
        .map(|d| {
            d.filter(|e| {
                e.as_ref()
                    .is_ok_and(|e| e.file_name().to_string_lossy().ends_with(".log"))
            })
            .count()
        })
        .unwrap_or(0)
}

fn basic(user: &str, pw: &str) -> String {
    use base64::Engine;
    format!(
        "Basic {}",
        base64::engine::general_purpose::STANDARD.encode(format!("{user}:{pw}"))
    )
}

#[test]
fn a_full_archive_log_refuses_writes_until_folio_archive_runs_over_the_server() {
    let data = archive_data_dir();
    let srv = Server::start(data.path());
    let admin = srv.admin();
    admin.create_database("a.fdb", "A").unwrap();
    let (db, _) = admin.open_database("a.fdb").unwrap();
    let mut written = Vec::new();
    let refusal = loop {
        match admin.create_document(db, &doc(written.len())) {
            Ok(meta) => written.push(meta.unid),
            Err(e) => break e,
        }
        assert!(written.len() < 2000, "the log never filled");
    };
    match &refusal {
        client::ClientError::Server { code, message } => {
            assert_eq!(*code, ErrorCode::Busy, "{message}");
            assert!(message.contains("wait to be archived"), "{message}");
            assert!(message.contains("folio archive"), "{message}");
        }
        other => panic!("{other}"),
    }
    // Reads go on.
    let first = admin.read_document(db, DocRef::Unid(written[0])).unwrap();
    assert!(first.json.contains("\"N\""));

    // `show stats` says why.
    let o = srv.cli(&["show", "stats"], "");
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let stats = json(&String::from_utf8_lossy(&o.stdout));
    let state = stats["log.state"].as_str().unwrap_or_default();
    assert!(state.contains("wait to be archived"), "{stats}");
    assert!(stats["log.extents_awaiting_archive"].as_u64() >= Some(1));
    assert_eq!(stats["log.style"], "archive");
    assert!(stats["log.last_archive"]
        .as_str()
        .is_some_and(|t| t.starts_with("never")));

    // Not for ordinary users.
    let bob = srv.client(Some(("bob", "bob-password"))).unwrap();
    let e = bob.archive(None).unwrap_err();
    assert!(
        matches!(
            &e,
            client::ClientError::Server {
                code: ErrorCode::Forbidden,
                ..
            }
        ),
        "{e}"
    );

    let o = srv.cli(&["archive"], "");
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let report = json(&String::from_utf8_lossy(&o.stdout));
    let copied = report["extents_copied"].as_u64().unwrap();
    assert!(copied >= 1, "{report}");
    assert_eq!(report["bytes_copied"].as_u64(), Some(copied * 65536));
    assert!(report["millis"].is_u64());
    assert_eq!(archived_files(data.path()) as u64, copied);

    // Writes resume; the log fills again and HTTP archives it too.
    let mut more = 0;
    while admin.create_document(db, &doc(more)).is_ok() {
        more += 1;
        assert!(more < 2000, "the log never filled again");
    }
    assert!(more >= 1, "archiving made room");
    let agent = ureq::AgentBuilder::new().build();
    let url = format!("http://{}/admin/archive", srv.http);
    let refused = agent
        .post(&url)
        .set("Authorization", &basic("bob", "bob-password"))
        .send_string("");
    assert!(matches!(refused, Err(ureq::Error::Status(403, _))));
    let r = agent
        .post(&url)
        .set("Authorization", &basic("admin", ADMIN_PW))
        .send_string("")
        .unwrap();
    let body = json(&r.into_string().unwrap());
    assert!(body["extents"].as_u64() >= Some(1), "{body}");
    admin
        .create_document(db, &doc(9999))
        .expect("writes resume after the HTTP archive");
    assert!(srv.stop().success());

    // Embedded, on the data directory: the rest (nothing may be waiting).
    let out = ok(data.path(), &["archive"], "");
    let report = json(&out);
    assert_eq!(report["extents_waiting"].as_u64(), Some(0), "{report}");
    let info = json(&ok(data.path(), &["log", "info"], ""));
    assert_eq!(info["style"], "archive");
    assert_eq!(info["extents_awaiting_archive"].as_u64(), Some(0), "{info}");
}

#[test]
fn archive_in_another_style_is_refused_with_the_reason() {
    let data = tempfile::tempdir().unwrap();
    let o = common::folio(data.path(), &["archive"], "");
    assert!(!o.status.success());
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.starts_with("folio: ") && err.contains("translog.style = \"archive\""),
        "{err}"
    );
}
