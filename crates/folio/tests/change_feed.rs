//! The change feed against the real `folio serve`: HTTP longpoll wakes on
//! a write the caller may read (and not on one it may not), times out
//! empty; continuous sends documents as lines and blank heartbeats; the
//! native `WaitChanges` does the same; and SIGTERM with a feed open ends
//! the feed and the server well before the grace deadline. Times are
//! only generous bounds.

mod common;
use common::{json, Server};
use std::io::{BufRead, BufReader};
use std::time::Duration;

const DB: &str = "feed.fdb";

fn basic(user: &str, pw: &str) -> String {
    use base64::Engine;
    format!(
        "Basic {}",
        base64::engine::general_purpose::STANDARD.encode(format!("{user}:{pw}"))
    )
}

fn get(srv: &Server, user: (&str, &str), path: &str) -> ureq::Response {
    ureq::get(&format!("http://{}{path}", srv.http))
        .set("Authorization", &basic(user.0, user.1))
        .call()
        .unwrap_or_else(|e| panic!("GET {path}: {e}"))
}

/// A server (grace 30 s) whose feed.fdb bob may read.
fn feed_server() -> (tempfile::TempDir, Server) {
    let data = common::users_dir(&["bob"]);
    std::fs::write(data.path().join("folio.toml"), "shutdown_grace_secs = 30\n").unwrap();
    let srv = Server::start(data.path());
    let admin = srv.admin();
    admin.create_database(DB, "Feed").unwrap();
    admin
        .set_acl(
            DB,
            r#"{"default":"noaccess","entries":[
                {"name":"admin","level":"manager"},
                {"name":"bob","level":"reader"}]}"#,
        )
        .unwrap();
    (data, srv)
}

fn put(srv: &Server, doc: &str) {
    let admin = srv.admin();
    let (db, _) = admin.open_database(DB).unwrap();
    admin.create_document(db, doc).unwrap();
}

const BOB: (&str, &str) = ("bob", "bob-password");

#[test]
fn longpoll_wakes_on_a_readable_write_and_times_out_empty() {
    let (_data, srv) = feed_server();
    let now = json(
        &get(&srv, BOB, &format!("/db/{DB}/docs"))
            .into_string()
            .unwrap(),
    );
    let since = now["next"].as_u64().unwrap();

    let empty = json(
        &get(
            &srv,
            BOB,
            &format!("/db/{DB}/docs?since={since}&feed=longpoll&timeout=100"),
        )
        .into_string()
        .unwrap(),
    );
    assert_eq!(empty["docs"], serde_json::json!([]));
    assert_eq!(empty["next"], since);

    let (http, path) = (
        srv.http.clone(),
        format!("/db/{DB}/docs?since={since}&feed=longpoll"),
    );
    let waiter = std::thread::spawn(move || {
        ureq::get(&format!("http://{http}{path}"))
            .set("Authorization", &basic(BOB.0, BOB.1))
            .call()
            .unwrap()
            .into_string()
            .unwrap()
    });
    std::thread::sleep(Duration::from_millis(100));
    // Hidden from bob: does not wake him, never appears.
    put(&srv, r#"{"Subject":"hidden","$Readers":["admin"]}"#);
    put(&srv, r#"{"Subject":"hello"}"#);
    let woke = json(&waiter.join().unwrap());
    let docs = woke["docs"].as_array().unwrap();
    assert_eq!(docs.len(), 1, "{woke}");
    assert_eq!(docs[0]["Subject"], "hello");
    assert!(woke["next"].as_u64().unwrap() > since);

    let refused = ureq::get(&format!("http://{}/db/{DB}/docs?feed=sideways", srv.http))
        .set("Authorization", &basic(BOB.0, BOB.1))
        .call();
    assert!(matches!(refused, Err(ureq::Error::Status(400, _))));
}

#[test]
fn continuous_streams_lines_and_heartbeats() {
    let (_data, srv) = feed_server();
    put(&srv, r#"{"Subject":"before"}"#);
    put(&srv, r#"{"Subject":"secret","$Readers":["admin"]}"#);
    let r = get(
        &srv,
        BOB,
        &format!("/db/{DB}/docs?since=0&feed=continuous&heartbeat=50&timeout=600"),
    );
    assert_eq!(r.header("Content-Type"), Some("application/x-ndjson"));
    let body = r.into_string().unwrap();
    let lines: Vec<&str> = body.split('\n').collect();
    let docs: Vec<serde_json::Value> = lines
        .iter()
        .filter(|l| !l.is_empty())
        .map(|l| json(l))
        .collect();
    assert!(
        docs.iter().all(|d| d["Subject"] != "secret"),
        "hidden documents never appear: {body:?}"
    );
    assert!(docs.iter().any(|d| d["Subject"] == "before"), "{body:?}");
    assert!(
        lines.iter().filter(|l| l.is_empty()).count() >= 2,
        "blank heartbeat lines: {body:?}"
    );
}

#[test]
fn native_wait_changes_answers_on_a_write_or_empty() {
    let (_data, srv) = feed_server();
    let bob = srv.client(Some(BOB)).unwrap();
    let (db, info) = bob.open_database(DB).unwrap();
    let (docs, next, _) = bob.wait_changes(db, info.sequence, 100, 50).unwrap();
    assert!(docs.is_empty());
    assert_eq!(next, info.sequence);
    put(&srv, r#"{"Subject":"native"}"#);
    let (docs, next, _) = bob.wait_changes(db, info.sequence, 100, 30_000).unwrap();
    assert_eq!(docs.len(), 1);
    assert!(json(&docs[0].json)["Subject"] == "native");
    assert!(next > info.sequence);
}

#[test]
fn sigterm_ends_an_open_feed_and_the_server_within_the_grace_deadline() {
    let (_data, srv) = feed_server();
    let r = get(
        &srv,
        BOB,
        &format!("/db/{DB}/docs?feed=continuous&heartbeat=100"),
    );
    let mut lines = BufReader::new(r.into_reader());
    let mut first = String::new();
    lines.read_line(&mut first).unwrap();
    // The native feed too, waiting on its own connection.
    let native = srv.client(Some(BOB)).unwrap();
    let (db, info) = native.open_database(DB).unwrap();
    let waiting = std::thread::spawn(move || native.wait_changes(db, info.sequence, 10, 60_000));

    let (status, took) = srv.stop_within(Duration::from_secs(25));
    assert!(status.success(), "{status:?}");
    assert!(took < Duration::from_secs(25));
    // The feed's body ended instead of being cut mid-line.
    let mut rest = String::new();
    while lines.read_line(&mut rest).unwrap_or(0) > 0 {}
    assert!(rest.lines().all(|l| l.is_empty() || l.starts_with('{')));
    // The wait is answered, never left hanging: empty if it reached the
    // server before the drain began, else refused as shutting down (the
    // thread may send it only after SIGTERM).
    let answered = waiting.join().unwrap();
    let refused_as_shutting_down =
        matches!(&answered, Err(e) if e.to_string().contains("shutting down"));
    assert!(
        matches!(&answered, Ok((docs, _, _)) if docs.is_empty()) || refused_as_shutting_down,
        "{answered:?}"
    );
}
