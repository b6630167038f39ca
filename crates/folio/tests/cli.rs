//! End to end through the real binary: the documented command forms work,
//! and bad input gets one line on stderr, a non-zero exit, and changes
//! nothing.

mod common;
use common::{fails, folio, json, ok};

#[test]
fn documented_commands_round_trip() {
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path();
    let info = json(&ok(
        d,
        &["db", "create", "mail/alice.fdb", "--title", "Alice"],
        "",
    ));
    assert_eq!(info["title"], "Alice");
    assert_eq!(ok(d, &["db", "list"], ""), "mail/alice.fdb\n");
    let unid = ok(
        d,
        &["doc", "put", "mail/alice.fdb"],
        r#"{"Subject":"Hi","N":[1,2],"When":{"$type":"datetime","v":"2026-01-02T03:04:05Z"}}"#,
    );
    let unid = unid.trim();
    assert_eq!(unid.len(), 32);
    let doc = json(&ok(d, &["doc", "get", "mail/alice.fdb", unid], ""));
    assert_eq!(doc["Subject"], "Hi");
    assert_eq!(doc["N"], serde_json::json!([1.0, 2.0]));
    assert_eq!(doc["$seq"], 1);
    ok(
        d,
        &["doc", "update", "mail/alice.fdb", unid],
        r#"{"$seq":1,"Subject":"Again","N":null}"#,
    );
    let doc = json(&ok(d, &["doc", "get", "mail/alice.fdb", unid], ""));
    assert_eq!(doc["Subject"], "Again");
    assert!(doc.get("N").is_none());
    let content: Vec<u8> = (0..300_000u32).map(|i| (i * 31 % 251) as u8).collect();
    let file = d.join("report.bin");
    std::fs::write(&file, &content).unwrap();
    ok(
        d,
        &[
            "attach",
            "put",
            "mail/alice.fdb",
            unid,
            file.to_str().unwrap(),
        ],
        "",
    );
    let got = folio(
        d,
        &["attach", "get", "mail/alice.fdb", unid, "report.bin"],
        "",
    );
    assert!(got.status.success());
    assert_eq!(got.stdout, content);
    let list = ok(d, &["doc", "list", "mail/alice.fdb"], "");
    assert_eq!(list.lines().count(), 1);
    assert!(json(list.lines().next().unwrap())["$unid"] == unid);
    let info = json(&ok(d, &["db", "info", "mail/alice.fdb"], ""));
    assert_eq!(info["note_count"], 1);
    assert_eq!(info["sequence"], 3);
    ok(d, &["doc", "delete", "mail/alice.fdb", unid], "");
    assert_eq!(ok(d, &["doc", "list", "mail/alice.fdb"], ""), "");
    let log = json(&ok(d, &["log", "info"], ""));
    assert_eq!(log["style"], "circular");
    assert!(log["checkpoint_lsn"].as_u64().unwrap() > 0);
}

#[test]
fn bad_input_is_one_line_and_changes_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path();
    ok(d, &["db", "create", "a.fdb"], "");
    let unid = ok(d, &["doc", "put", "a.fdb"], r#"{"S":"x"}"#);
    let unid = unid.trim();
    let before = ok(d, &["db", "info", "a.fdb"], "");
    fails(d, &["doc", "put", "a.fdb"], "{not json", "malformed JSON");
    fails(d, &["doc", "put", "a.fdb"], r#"{"B":true}"#, "\"B\"");
    fails(
        d,
        &["doc", "put", "a.fdb"],
        r#"{"$x":"y","Y":{"nested":1}}"#,
        "\"Y\"",
    );
    fails(
        d,
        &["doc", "put", "nope.fdb"],
        r#"{"S":"x"}"#,
        "no database nope.fdb",
    );
    fails(
        d,
        &["doc", "get", "a.fdb", "00112233445566778899AABBCCDDEEFF"],
        "",
        "no document",
    );
    fails(d, &["doc", "get", "a.fdb", "xyz"], "", "invalid UNID");
    fails(
        d,
        &["doc", "update", "a.fdb", unid],
        r#"{"$seq":7,"S":"late"}"#,
        "save conflict",
    );
    fails(d, &["db", "create", "a.fdb"], "", "already exists");
    fails(
        d,
        &["db", "create", "../escape.fdb"],
        "",
        "'.' and '..' are not allowed",
    );
    fails(d, &["db", "create", "noext"], "", ".fdb");
    std::fs::write(d.join("junk.fdb"), b"definitely not a database").unwrap();
    fails(d, &["db", "info", "junk.fdb"], "", "not a Folio database");
    fails(
        d,
        &["attach", "put", "a.fdb", unid, "/nonexistent/file"],
        "",
        "cannot open",
    );
    fails(
        d,
        &["attach", "get", "a.fdb", unid, "missing.bin"],
        "",
        "no attachment",
    );
    assert_eq!(
        ok(d, &["db", "info", "a.fdb"], ""),
        before,
        "nothing changed"
    );
    assert_eq!(json(&ok(d, &["doc", "get", "a.fdb", unid], ""))["S"], "x");

    let cfg = d.join("bad.toml");
    std::fs::write(&cfg, "[translog]\nenabeld = false\n").unwrap();
    fails(
        d,
        &["--config", cfg.to_str().unwrap(), "db", "list"],
        "",
        "enabeld",
    );
    std::fs::write(&cfg, "[translog]\nstyle = \"spiral\"\n").unwrap();
    fails(
        d,
        &["--config", cfg.to_str().unwrap(), "db", "list"],
        "",
        "translog.style",
    );
}

#[test]
fn a_second_process_on_the_same_directory_is_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path();
    // Handlers are installed before serve announces itself (start waits
    // for that line).
    let server = common::Server::start(d);
    fails(d, &["db", "list"], "", "in use by another Folio process");
    assert!(
        server.stop().success(),
        "serve shuts down cleanly on SIGTERM"
    );
    ok(d, &["db", "list"], "");
}
