//! `GET /metrics` end to end: the real `folio serve`, its access rule
//! (administrators and `http_metrics_users`; anonymous 401, anyone else
//! 403), and its text checked by Prometheus' own `promtool check metrics`
//! (Debian's `prometheus` package: `scripts/install-console-tools.sh`).
//! A missing promtool is installed by that script the first time; where
//! it cannot be (not root, no network), the rest runs and the test says
//! loudly that promtool did not check the text. The backup history's
//! figures appear after `folio backup` runs, equal to `GET
//! /admin/backups` in base units, without its paths.

mod common;

use common::{Server, ADMIN_PW};
use std::io::Write;
use std::process::{Command, Stdio};

fn get(srv: &Server, user: Option<(&str, &str)>, path: &str) -> (u16, String, String) {
    let mut req = ureq::get(&format!("http://{}{path}", srv.http));
    if let Some((u, p)) = user {
        let auth = base64::Engine::encode(
            &base64::engine::general_purpose::STANDARD,
            format!("{u}:{p}"),
        );
        req = req.set("Authorization", &format!("Basic {auth}"));
    }
    let resp = match req.call() {
        Ok(r) => r,
        Err(ureq::Error::Status(_, r)) => r,
        Err(e) => panic!("GET {path}: {e}"),
    };
    let status = resp.status();
    let ctype = resp.header("content-type").unwrap_or_default().to_string();
    (status, ctype, resp.into_string().unwrap())
}

/// `promtool check metrics` on `text`: its complaints, or None when
/// promtool is missing and could not be installed (said loudly).
fn promtool(text: &str) -> Option<String> {
    if let Err(why) = common::console_tools() {
        eprintln!("\n*** WARNING: /metrics was NOT checked by promtool: {why} ***\n");
        return None;
    }
    let mut child = Command::new("promtool")
        .args(["check", "metrics"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("promtool runs once installed");
    child
        .stdin
        .take()
        .unwrap()
        .write_all(text.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        out.status.success(),
        "promtool check metrics failed:\n{said}"
    );
    Some(said)
}

#[test]
fn metrics_are_for_administrators_and_named_readers_and_pass_promtool() {
    let tmp = common::users_dir(&["prom", "bob"]);
    std::fs::write(
        tmp.path().join("folio.toml"),
        "http_metrics_users = [\"Prom\"]\n",
    )
    .unwrap();
    let srv = Server::start(tmp.path());
    let admin = srv.admin();
    admin.create_database("m.fdb", "Metrics").unwrap();
    let (db, _) = admin.open_database("m.fdb").unwrap();
    for i in 0..20 {
        admin
            .create_document(db, &format!(r#"{{"Subject":"doc {i}"}}"#))
            .unwrap();
    }

    let (status, _, body) = get(&srv, None, "/metrics");
    assert_eq!(status, 401, "{body}");
    let (status, _, body) = get(&srv, Some(("bob", "bob-password")), "/metrics");
    assert_eq!(status, 403, "{body}");
    assert!(body.contains("http_metrics_users"), "{body}");

    let (status, ctype, text) = get(&srv, Some(("prom", "prom-password")), "/metrics");
    assert_eq!(status, 200, "{text}");
    assert!(ctype.starts_with("text/plain; version=0.0.4"), "{ctype}");
    let (status, _, _) = get(&srv, Some(("admin", ADMIN_PW)), "/metrics");
    assert_eq!(status, 200);

    for family in [
        "# TYPE folio_transactions_total counter",
        "# TYPE folio_response_seconds histogram",
        "# TYPE folio_log_fsyncs_total counter",
        "# TYPE folio_wait_seconds summary",
        "# TYPE folio_pool_dirty_pages gauge",
        "# TYPE folio_connections gauge",
        "folio_log_state{state=\"ok\"} 1",
        "folio_task_state{task=\"stats\",state=\"running\"} 1",
    ] {
        assert!(text.contains(family), "{family} missing from:\n{text}");
    }
    let created = text
        .lines()
        .find(|l| l.starts_with("folio_response_seconds_count{op=\"create\"}"))
        .unwrap_or_else(|| panic!("no create count in:\n{text}"));
    assert!(created.ends_with(" 20"), "{created}");
    assert!(
        !text.contains("unmapped statistic"),
        "a statistic has no rule in crates/server/src/metrics.rs:\n{}",
        text.lines()
            .filter(|l| l.contains("unmapped"))
            .collect::<Vec<_>>()
            .join("\n")
    );
    if let Some(said) = promtool(&text) {
        assert!(said.trim().is_empty(), "promtool's lint:\n{said}");
    }
}

/// A POST as `user` that must succeed.
fn post(srv: &Server, user: (&str, &str), path: &str, body: &str) {
    let auth = base64::Engine::encode(
        &base64::engine::general_purpose::STANDARD,
        format!("{}:{}", user.0, user.1),
    );
    ureq::post(&format!("http://{}{path}", srv.http))
        .set("Authorization", &format!("Basic {auth}"))
        .set("Content-Type", "application/json")
        .send_string(body)
        .unwrap_or_else(|e| panic!("POST {path}: {e}"));
}

/// The number after `name ` in the exposition `text` (a series without
/// labels), if it is there.
fn sample(text: &str, name: &str) -> Option<f64> {
    text.lines()
        .find_map(|l| l.strip_prefix(name)?.strip_prefix(' ')?.parse().ok())
}

#[test]
fn metrics_scraped_during_a_mail_load_pass_promtool() {
    let tmp = common::users_dir(&["prom", "alice", "bob"]);
    std::fs::write(
        tmp.path().join("folio.toml"),
        "http_metrics_users = [\"prom\"]\n\n[mail]\nboxes = 2\n",
    )
    .unwrap();
    let srv = Server::start(tmp.path());
    for name in ["alice", "bob"] {
        post(
            &srv,
            ("admin", ADMIN_PW),
            "/mail/users",
            &format!(r#"{{"name":"{name}"}}"#),
        );
    }
    // `folio load mail` against this server: it makes its mail users and
    // their mail files over the native protocol, then reads, writes and
    // sends mail as they would.
    let mut load = Command::new(env!("CARGO_BIN_EXE_folio"))
        .args(["--server", &srv.native, "--user", "admin"])
        .env("FOLIO_PASSWORD", ADMIN_PW)
        .args(["load", "mail", "--users", "8", "--docs", "3"])
        .args(["--max-doc-kib", "4", "--attach-percent", "0"])
        .args([
            "--time-scale",
            "900",
            "--seconds",
            "6",
            "--connections",
            "4",
        ])
        // The server's mail boxes, which its router reads.
        .args(["--mailboxes", "2"])
        .arg("--out")
        .arg(tmp.path().join("load-out"))
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Scrape until the load ends; keep the scrapes made while it ran.
    let mut during = Vec::new();
    let last = loop {
        let running = load.try_wait().unwrap().is_none();
        let (status, _, text) = get(&srv, Some(("prom", "prom-password")), "/metrics");
        assert_eq!(status, 200, "{text}");
        if !running {
            break text;
        }
        during.push(text);
        // Beside the load, alice writes to bob: the router delivers. (The
        // load alone may deliver nothing while it runs: on a fresh server
        // its first deposits make the mail boxes, which the router finds
        // at its next rescan, within 10 s; docs/benchmarks.md, "mail".)
        post(
            &srv,
            ("alice", "alice-password"),
            "/mail/send",
            r#"{"to":"bob","subject":"figures","body":"attached"}"#,
        );
        std::thread::sleep(std::time::Duration::from_millis(250));
    };
    // The router's pass after the last message (waited for, not timed).
    let mut last = last;
    for _ in 0..240 {
        if sample(&last, "folio_router_delivered_total").is_some_and(|d| d > 0.0) {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(250));
        last = get(&srv, Some(("prom", "prom-password")), "/metrics").2;
    }
    let out = load.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(!during.is_empty(), "no scrape while the load ran");
    // The load sent mail and the router delivered it.
    let delivered = sample(&last, "folio_router_delivered_total");
    assert!(
        delivered.is_some_and(|d| d > 0.0),
        "no delivery counted:\n{}",
        last.lines()
            .filter(|l| l.contains("router"))
            .collect::<Vec<_>>()
            .join("\n")
    );
    // The first, a middle and the last scrape made under load, each
    // checked by promtool.
    let picks = [0, during.len() / 2, during.len() - 1];
    for &i in &picks {
        let text = &during[i];
        assert!(text.contains("# TYPE folio_router_delivered_total counter"));
        assert!(text.contains("folio_response_seconds_count{op=\"create\"}"));
        if let Some(said) = promtool(text) {
            assert!(
                said.trim().is_empty(),
                "promtool's lint (scrape {i}):\n{said}"
            );
        }
    }
    let counts: Vec<f64> = during
        .iter()
        .chain([&last])
        .filter_map(|t| sample(t, "folio_router_delivered_total"))
        .collect();
    assert!(
        counts.windows(2).all(|w| w[0] <= w[1]),
        "a counter went down: {counts:?}"
    );
}

/// The series of `text` whose name and labels begin with `prefix`, as
/// (the rest of the name and labels, value).
fn series<'a>(text: &'a str, prefix: &str) -> Vec<(&'a str, f64)> {
    text.lines()
        .filter(|l| !l.starts_with('#'))
        .filter_map(|l| {
            let (name, value) = l.rsplit_once(' ')?;
            Some((name.strip_prefix(prefix)?, value.parse().ok()?))
        })
        .collect()
}

#[test]
fn backups_appear_in_the_metrics_in_base_units_for_the_same_readers() {
    let tmp = common::users_dir(&["prom", "bob"]);
    std::fs::write(
        tmp.path().join("folio.toml"),
        "http_metrics_users = [\"prom\"]\n\n[translog]\nstyle = \"archive\"\n",
    )
    .unwrap();
    let srv = Server::start(tmp.path());
    let admin = srv.admin();
    admin.create_database("b.fdb", "Backed up").unwrap();
    let (db, _) = admin.open_database("b.fdb").unwrap();
    for i in 0..20 {
        admin
            .create_document(
                db,
                &format!(r#"{{"Subject":"doc {i}","Body":"{}"}}"#, "x".repeat(400)),
            )
            .unwrap();
    }
    let prom = Some(("prom", "prom-password"));

    // Before any run: the history is read, holds nothing, and no run's
    // time is made up.
    let (status, _, before) = get(&srv, prom, "/metrics");
    assert_eq!(status, 200, "{before}");
    assert!(
        before.contains("folio_backup_history_readable 1\n"),
        "{before}"
    );
    assert!(before.contains("folio_backup_runs{kind=\"backup\",result=\"ok\"} 0\n"));
    assert!(!before.contains("folio_backup_last_success"), "{before}");
    assert!(!before.contains("folio_log_last_archive_timestamp_seconds"));

    // `folio backup` against the server, then one that fails on the way
    // (its directory cannot be made), then an archive.
    let dest = tmp.path().join("backup-1");
    let o = srv.cli(&["backup", dest.to_str().unwrap()], "");
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let o = srv.cli(&["backup", "/dev/null/nightly"], "");
    assert!(!o.status.success(), "a backup under /dev/null succeeded");
    post(&srv, ("admin", ADMIN_PW), "/admin/archive", "{}");

    // The same figures as GET /admin/backups, in base units.
    let auth = base64::Engine::encode(
        &base64::engine::general_purpose::STANDARD,
        format!("admin:{ADMIN_PW}"),
    );
    let history: serde_json::Value = serde_json::from_str(
        &ureq::get(&format!("http://{}/admin/backups", srv.http))
            .set("Authorization", &format!("Basic {auth}"))
            .call()
            .unwrap()
            .into_string()
            .unwrap(),
    )
    .unwrap();
    let runs = history["runs"].as_array().unwrap();
    let good = runs
        .iter()
        .find(|r| r["kind"] == "backup" && r["result"] == "ok")
        .unwrap_or_else(|| panic!("no good backup in {history}"));
    let started = chrono::DateTime::parse_from_rfc3339(good["started"].as_str().unwrap()).unwrap();

    let (status, _, text) = get(&srv, prom, "/metrics");
    assert_eq!(status, 200, "{text}");
    let runs_by: Vec<(&str, f64)> = series(&text, "folio_backup_runs");
    for (labels, n) in [
        ("{kind=\"backup\",result=\"ok\"}", 1.0),
        ("{kind=\"backup\",result=\"failed\"}", 1.0),
        ("{kind=\"archive\",result=\"ok\"}", 1.0),
        ("{kind=\"archive\",result=\"failed\"}", 0.0),
    ] {
        assert!(
            runs_by.contains(&(labels, n)),
            "{labels} {n} not in {runs_by:?}"
        );
    }
    let last = |metric: &str, kind: &str| -> f64 {
        let want = format!("{{kind=\"{kind}\"}}");
        series(&text, metric)
            .into_iter()
            .find(|(l, _)| *l == want)
            .unwrap_or_else(|| panic!("no {metric}{want} in:\n{text}"))
            .1
    };
    let at = last("folio_backup_last_success_timestamp_seconds", "backup");
    let expected = started.timestamp_micros() as f64 * 1e-6;
    assert!((at - expected).abs() < 1e-3, "{at} vs {expected}");
    assert_eq!(
        last("folio_backup_last_success_bytes", "backup"),
        good["bytes"].as_u64().unwrap() as f64
    );
    assert!(good["bytes"].as_u64().unwrap() > 0, "{good}");
    assert_eq!(
        last("folio_backup_last_success_duration_seconds", "backup"),
        good["millis"].as_u64().unwrap() as f64 / 1000.0
    );
    assert!(last("folio_backup_last_success_timestamp_seconds", "archive") >= at);
    // The log's last archive (the archive run, or the backup's own last
    // step), a moment after the backup began.
    let archived = sample(&text, "folio_log_last_archive_timestamp_seconds")
        .unwrap_or_else(|| panic!("no last archive in:\n{text}"));
    assert!(archived >= at, "{archived} < {at}");
    // Figures, never the paths and names the history holds.
    assert!(!text.contains("backup-1") && !text.contains("nightly") && !text.contains("b.fdb"));
    if let Some(said) = promtool(&text) {
        assert!(said.trim().is_empty(), "promtool's lint:\n{said}");
    }

    // The same readers as every other figure: anonymous 401, anyone not
    // named 403 (and nothing of the backups said to them).
    let (status, _, body) = get(&srv, None, "/metrics");
    assert_eq!(status, 401, "{body}");
    let (status, _, body) = get(&srv, Some(("bob", "bob-password")), "/metrics");
    assert_eq!(status, 403, "{body}");
    assert!(!body.contains("folio_backup"), "{body}");
}
