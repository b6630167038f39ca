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
    // The document and the ACL note every new database gets.
    let info = json(&ok(d, &["db", "info", "mail/alice.fdb"], ""));
    assert_eq!(info["note_count"], 2);
    assert_eq!(info["sequence"], 4);
    // The attachment went to the store, compressed (its bytes repeat).
    assert_eq!(info["attachment_logical_bytes"], 300_000);
    let stored = info["attachment_stored_bytes"].as_u64().unwrap();
    assert!(stored > 0 && stored < 150_000, "{info}");
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

// ---------------------------------------------- options honoured or refused

/// A data directory whose server has an administrator.
fn admin_data_dir() -> tempfile::TempDir {
    let tmp = tempfile::tempdir().unwrap();
    let store =
        server::auth::UserStore::open(std::sync::Arc::new(storage::backend::FsBackend), tmp.path())
            .unwrap();
    store.add_user("admin", common::ADMIN_PW, true).unwrap();
    tmp
}

/// Runs the binary with exactly `args` (no --data), in `cwd`, as the
/// server's administrator, giving up after `secs`: `None` if it was still
/// running then.
fn folio_bare(cwd: &std::path::Path, args: &[&str], secs: u64) -> Option<std::process::Output> {
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_folio"))
        .current_dir(cwd)
        .args(args)
        .env("FOLIO_PASSWORD", common::ADMIN_PW)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(secs);
    while std::time::Instant::now() < deadline {
        if child.try_wait().unwrap().is_some() {
            return Some(child.wait_with_output().unwrap());
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let _ = child.kill();
    let _ = child.wait();
    None
}

/// Fails at once with one line on stderr containing `needle`.
fn refused(cwd: &std::path::Path, args: &[&str], needle: &str) {
    let o = folio_bare(cwd, args, 20)
        .unwrap_or_else(|| panic!("{args:?} ran on instead of refusing its options"));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success(), "{args:?} should fail");
    assert_eq!(err.trim_end().lines().count(), 1, "one line: {err:?}");
    assert!(
        err.contains(needle),
        "{args:?}: expected {needle:?} in {err:?}"
    );
}

/// `op.NAME.count` in the server's statistics.
fn op_count(srv: &common::Server, op: &str) -> u64 {
    let stats = srv.admin().statistics().unwrap();
    let name = format!("op.{op}.count");
    match stats.iter().find(|s| s.name == name).map(|s| &s.value) {
        Some(client::StatValue::Count(n)) => *n,
        other => panic!("{name}: {other:?}"),
    }
}

#[test]
fn load_commit_measures_the_server_and_http_api_it_is_given() {
    let data = admin_data_dir();
    let srv = common::Server::start(data.path());
    let work = tempfile::tempdir().unwrap();
    let out = work.path().join("out");
    let http = format!("http://{}", srv.http);
    let o = folio_bare(
        work.path(),
        &[
            "--server",
            &srv.native,
            "--user",
            "admin",
            "load",
            "commit",
            "--clients",
            "2",
            "--seconds",
            "0.3",
            "--rounds",
            "1",
            "--http",
            &http,
            "--out",
            out.to_str().unwrap(),
        ],
        120,
    )
    .expect("load commit finishes");
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let result = json(&std::fs::read_to_string(out.join("result.json")).unwrap());
    let row = &result["results"][0];
    for variant in ["embedded_log_on", "embedded_log_off", "native", "http"] {
        let rate = row[variant]["median"]["commits_per_sec"].as_f64();
        assert!(rate.is_some_and(|r| r > 0.0), "{variant}: {row}");
    }
    // The updates reached the server: the figures are the server's.
    assert!(op_count(&srv, "update") > 10);
    let report = std::fs::read_to_string(out.join("report.html")).unwrap();
    assert!(report.find("<table").unwrap() < report.find("<svg").unwrap());
    assert!(report.contains("native (--server)") && !report.contains("\"commits_per_sec\""));
}

#[test]
fn load_pool_runs_against_the_server_it_is_given() {
    let data = admin_data_dir();
    let srv = common::Server::start(data.path());
    let work = tempfile::tempdir().unwrap();
    let out = work.path().join("out");
    let o = folio_bare(
        work.path(),
        &[
            "--server",
            &srv.native,
            "--user",
            "admin",
            "load",
            "pool",
            "--clients",
            "1",
            "--seconds",
            "0.2",
            "--out",
            out.to_str().unwrap(),
        ],
        120,
    )
    .expect("load pool finishes");
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    // Its 1,000 documents were created on this server, not a private one.
    assert!(op_count(&srv, "create") >= 1000);
    assert!(out.join("report.html").exists());
}

#[test]
fn options_a_command_would_ignore_are_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path();
    let data = d.to_str().unwrap();
    let out = d.join("out");
    let out = out.to_str().unwrap();
    // Embedded commands have no server to sign in to.
    refused(
        d,
        &["--data", data, "--user", "admin", "db", "list"],
        "--user applies only with --server",
    );
    refused(
        d,
        &["--data", data, "--tls-ca", "ca.pem", "db", "list"],
        "--tls-ca applies only with --server",
    );
    // With --server the server's own data directory is used.
    refused(
        d,
        &["--server", "127.0.0.1:9", "--data", data, "db", "list"],
        "--data does not apply with --server",
    );
    // User commands change the local users file only.
    refused(
        d,
        &["--data", data, "--server", "127.0.0.1:9", "user", "list"],
        "--server does not apply to user commands",
    );
    // serve listens; it does not connect anywhere.
    refused(
        d,
        &[
            "--data",
            data,
            "--server",
            "127.0.0.1:9",
            "serve",
            "--listen",
            "127.0.0.1:0",
            "--http-listen",
            "off",
        ],
        "--server does not apply to serve",
    );
    // bigview measures the embedded engine only.
    refused(
        d,
        &[
            "--server",
            "127.0.0.1:9",
            "load",
            "bigview",
            "--sizes",
            "10",
            "--reps",
            "1",
            "--rebuild-docs",
            "0",
            "--out",
            out,
        ],
        "--server does not apply to load bigview",
    );
    // Load workloads make their own data.
    refused(
        d,
        &[
            "--data", data, "load", "bigview", "--sizes", "10", "--reps", "1", "--out", out,
        ],
        "--data does not apply to load workloads",
    );
    // Credentials without a server to give them to.
    refused(
        d,
        &[
            "--user",
            "admin",
            "load",
            "docs",
            "--threads",
            "1",
            "--docs",
            "1",
            "--no-embedded",
            "--out",
            out,
        ],
        "--user applies only with --server",
    );
    refused(
        d,
        &["--data", data, "show", "stats"],
        "--data does not apply to show stats",
    );
}
