//! A document too large for the transaction log to hold at all: the
//! embedded CLI says so in one line naming the setting to raise, and the
//! server answers 413 over HTTP (not 503: retrying cannot help); neither
//! waits for a checkpoint, and nothing is written.

mod common;

use common::{Server, ADMIN_PW};

const SMALL_LOG: &str = "[translog]\nextent_size = \"64KiB\"\nmax_size = \"128KiB\"\n";

fn big_document() -> String {
    format!(r#"{{"Body":"{}"}}"#, "x".repeat(200 << 10))
}

#[test]
fn the_cli_names_the_setting_to_raise() {
    let tmp = common::users_dir(&[]);
    std::fs::write(tmp.path().join("folio.toml"), SMALL_LOG).unwrap();
    common::ok(tmp.path(), &["db", "create", "big.fdb"], "");
    let out = common::folio(tmp.path(), &["doc", "put", "big.fdb"], &big_document());
    assert!(!out.status.success());
    let err = String::from_utf8(out.stderr).unwrap();
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.starts_with("folio: transaction of "), "{err}");
    assert!(err.contains("raise translog.max_size"), "{err}");
    let listed = common::ok(tmp.path(), &["doc", "list", "big.fdb"], "");
    assert_eq!(listed.trim(), "", "nothing was written");
}

#[test]
fn http_answers_413() {
    let tmp = common::users_dir(&[]);
    std::fs::write(tmp.path().join("folio.toml"), SMALL_LOG).unwrap();
    let srv = Server::start(tmp.path());
    srv.admin().create_database("big.fdb", "").unwrap();
    let auth = base64::Engine::encode(
        &base64::engine::general_purpose::STANDARD,
        format!("admin:{ADMIN_PW}"),
    );
    let r = ureq::post(&format!("http://{}/db/big.fdb/docs", srv.http))
        .set("Authorization", &format!("Basic {auth}"))
        .send_string(&big_document());
    let resp = match r {
        Err(ureq::Error::Status(_, r)) => r,
        other => panic!("expected an error status, got {other:?}"),
    };
    assert_eq!(resp.status(), 413);
    assert!(resp.header("Retry-After").is_none());
    let body: serde_json::Value = resp.into_json().unwrap();
    let reason = body["reason"].as_str().unwrap();
    assert!(reason.contains("raise translog.max_size"), "{body}");
    let small = ureq::post(&format!("http://{}/db/big.fdb/docs", srv.http))
        .set("Authorization", &format!("Basic {auth}"))
        .send_string(r#"{"Subject":"small"}"#)
        .unwrap();
    assert_eq!(small.status(), 201);
}
