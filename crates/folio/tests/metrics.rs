//! `GET /metrics` end to end: the real `folio serve`, its access rule
//! (administrators and `http_metrics_users`; anonymous 401, anyone else
//! 403), and its text checked by Prometheus' own `promtool check metrics`
//! (Debian's `prometheus` package: `scripts/install-console-tools.sh`).
//! A missing promtool is installed by that script the first time; where
//! it cannot be (not root, no network), the rest runs and the test says
//! loudly that promtool did not check the text.

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
        // Beside the load, alice writes to bob: the router delivers.
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
