//! Server-to-server replication against two real `folio serve`
//! processes (issue 14, "What it must show"): server A makes a replica of
//! B's database over the network, both sides are edited, A replicates
//! both ways until both hold the same documents and conflict documents,
//! a deletion travels, a rerun carries nothing; A replicates on a
//! schedule from `[[replication]]` with its state in the statistics; and
//! either server killed with SIGKILL in the middle of a replication
//! loses nothing, duplicates nothing and is not sent again what it had
//! written, once the replication is run again. Two servers replicating
//! both ways on change carry an edit at once, settle after a bounded
//! number of runs, and keep their schedule's state across a restart.

mod common;
use common::{json, Server, ADMIN_PW};
use std::collections::BTreeMap;
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

const DB: &str = "team.fdb";

/// `folio --server A replicate SRC DST --peer B ARGS`, as A's and B's
/// administrator.
fn peer_command(a: &Server, b: &Server, src: &str, dst: &str, args: &[&str]) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_folio"));
    cmd.args([
        "--server",
        &a.native,
        "--user",
        "admin",
        "replicate",
        src,
        dst,
    ])
    .args(["--peer", &b.native, "--peer-user", "admin"])
    .args(args)
    .env("FOLIO_PASSWORD", ADMIN_PW)
    .env("FOLIO_PEER_PASSWORD", ADMIN_PW)
    .stdin(Stdio::null());
    cmd
}

fn peer_replicate(a: &Server, b: &Server, args: &[&str]) -> Output {
    peer_command(a, b, DB, DB, args).output().unwrap()
}

fn peer_ok(a: &Server, b: &Server, args: &[&str]) -> serde_json::Value {
    let o = peer_replicate(a, b, args);
    assert!(
        o.status.success(),
        "replicate --peer {args:?} failed: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    json(&String::from_utf8(o.stdout).unwrap())
}

/// Runs the CLI against the server as the administrator; its stdout.
fn on(srv: &Server, args: &[&str], stdin: &str) -> String {
    let o = srv.cli(args, stdin);
    assert!(
        o.status.success(),
        "{args:?} on the server failed: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8(o.stdout).unwrap()
}

/// The documents of a `doc list`, by UNID, without what is local to a
/// file (note id, change sequence).
fn documents(srv: &Server, db: &str) -> BTreeMap<String, serde_json::Value> {
    on(srv, &["doc", "list", db], "")
        .lines()
        .map(|l| {
            let mut doc = json(l);
            let fields = doc.as_object_mut().unwrap();
            fields.remove("$noteid");
            fields.remove("$changeseq");
            (fields["$unid"].as_str().unwrap().to_owned(), doc)
        })
        .collect()
}

fn subjects(docs: &BTreeMap<String, serde_json::Value>) -> Vec<String> {
    let mut s: Vec<String> = docs
        .values()
        .map(|d| d["Subject"].as_str().unwrap_or("").to_string())
        .collect();
    s.sort();
    s
}

fn total(answer: &serde_json::Value, field: &str) -> u64 {
    answer["pulls"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p[field].as_u64().unwrap())
        .sum()
}

/// A statistic of `srv` by name.
fn stat(srv: &Server, name: &str) -> Option<client::StatValue> {
    srv.admin()
        .statistics()
        .unwrap()
        .into_iter()
        .find(|s| s.name == name)
        .map(|s| s.value)
}

fn count(srv: &Server, name: &str) -> u64 {
    match stat(srv, name) {
        Some(client::StatValue::Count(n)) => n,
        _ => 0,
    }
}

/// Waits (up to a generous bound, for a loaded machine) until `done`.
fn wait_for(what: &str, mut done: impl FnMut() -> bool) {
    let start = Instant::now();
    while !done() {
        assert!(
            start.elapsed() < Duration::from_secs(120),
            "gave up waiting for {what}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn two_servers_converge_by_one_shot_and_scheduled_replication() {
    let (data_a, data_b) = (common::users_dir(&[]), common::users_dir(&[]));
    let b = Server::start(data_b.path());
    on(&b, &["db", "create", DB, "--title", "Team"], "");
    let unids: Vec<String> = ["one", "two", "three", "four"]
        .iter()
        .map(|s| {
            on(&b, &["doc", "put", DB], &format!(r#"{{"Subject":"{s}"}}"#))
                .trim()
                .to_string()
        })
        .collect();
    let a = Server::start(data_a.path());

    // A makes a new replica of B's database, server to server.
    let created = peer_ok(&a, &b, &["--create"]);
    let info_a = json(&on(&a, &["db", "info", DB], ""));
    let info_b = json(&on(&b, &["db", "info", DB], ""));
    assert_eq!(info_a["replica_id"], info_b["replica_id"]);
    assert_ne!(info_a["instance_id"], info_b["instance_id"]);
    assert_eq!(created["pulls"][0]["documents"], info_b["note_count"]);
    assert!(created["pulls"][0]["bytes_on_wire"].as_u64().unwrap() > 0);
    assert_eq!(documents(&a, DB), documents(&b, DB));

    // Edits on both sides: the same document on both (a conflict), one
    // each, a deletion on A, a new document on B.
    on(
        &a,
        &["doc", "update", DB, &unids[0]],
        r#"{"Subject":"one, on a"}"#,
    );
    on(&a, &["doc", "delete", DB, &unids[3]], "");
    on(
        &b,
        &["doc", "update", DB, &unids[0]],
        r#"{"Subject":"one, on b"}"#,
    );
    on(
        &b,
        &["doc", "update", DB, &unids[1]],
        r#"{"Subject":"two, on b"}"#,
    );
    on(&b, &["doc", "put", DB], r#"{"Subject":"five"}"#);

    let both = peer_ok(&a, &b, &["--direction", "both"]);
    let (pulled, pushed) = (&both["pulls"][0], &both["pulls"][1]);
    assert_eq!(pulled["to"], DB, "{both}");
    assert_eq!(pulled["documents"], 3, "one, two and five: {both}");
    assert_eq!(pulled["conflicts"], 1, "one was edited on both: {both}");
    assert!(pushed["documents"].as_u64().unwrap() >= 2, "{both}");
    let (on_a, on_b) = (documents(&a, DB), documents(&b, DB));
    assert_eq!(on_a, on_b, "identical documents and conflict documents");
    assert!(
        !on_b.contains_key(unids[3].as_str()),
        "the deletion travelled"
    );
    assert_eq!(
        subjects(&on_b),
        ["five", "one, on a", "one, on b", "three", "two, on b"]
    );
    assert_eq!(
        on_b.values()
            .filter(|d| d.get("$Conflict").is_some())
            .count(),
        1
    );

    // Nothing changed: nothing travels either way.
    let again = peer_ok(&a, &b, &["--direction", "both"]);
    assert_eq!(total(&again, "documents"), 0, "{again}");

    // Refused before anything runs: a selection on a push, a database
    // that is not a replica, a caller who is not an administrator.
    let o = peer_replicate(
        &a,
        &b,
        &["--direction", "push", "--selection", "Subject = \"x\""],
    );
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("pulls only"), "{err}");
    on(&b, &["db", "create", "other.fdb"], "");
    let o = peer_command(&a, &b, DB, "other.fdb", &[]).output().unwrap();
    assert!(!o.status.success());
    assert!(String::from_utf8_lossy(&o.stderr).contains("is not a replica"));

    // Scheduled: A replicates with B every second from [[replication]].
    a.stop();
    std::fs::write(
        data_a.path().join("folio.toml"),
        format!(
            "[[replication]]\nname = \"hub\"\npeer = \"{}\"\nuser = \"admin\"\n\
             password_env = \"HUB_PASSWORD\"\ndatabases = [\"{DB}\"]\ninterval_secs = 1\n",
            b.native
        ),
    )
    .unwrap();
    std::env::set_var("HUB_PASSWORD", ADMIN_PW);
    let a = Server::start(data_a.path());
    let six = on(&b, &["doc", "put", DB], r#"{"Subject":"six"}"#);
    let seven = on(&a, &["doc", "put", DB], r#"{"Subject":"seven"}"#);
    wait_for("two scheduled runs", || {
        count(&a, "replication.hub.runs") >= 2
    });
    assert!(
        documents(&a, DB).contains_key(six.trim()),
        "pulled on schedule"
    );
    assert!(
        documents(&b, DB).contains_key(seven.trim()),
        "pushed on schedule"
    );
    assert_eq!(documents(&a, DB), documents(&b, DB));
    assert_eq!(
        stat(&a, "replication.hub.result"),
        Some(client::StatValue::Text("ok".into()))
    );
    assert_eq!(count(&a, "replication.hub.errors"), 0);
    assert!(matches!(
        stat(&a, "replication.hub.last_run"),
        Some(client::StatValue::Text(t)) if t != "never"
    ));
    assert!(matches!(
        stat(&a, "replication.hub.next_run_s"),
        Some(client::StatValue::Gauge(_))
    ));
    assert_eq!(
        stat(&a, "task.replication.state"),
        Some(client::StatValue::Text("running".into()))
    );
    // The same in GET /stats.
    let http = ureq::get(&format!("http://{}/stats", a.http))
        .set("Authorization", &basic("admin", ADMIN_PW))
        .call()
        .unwrap()
        .into_string()
        .unwrap();
    assert!(http.contains("replication.hub.runs"), "{http}");
}

/// A free local address for a server to listen on.
fn free_addr() -> String {
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    l.local_addr().unwrap().to_string()
}

/// `[[replication]]` "mesh": both ways with `peer` on change (half a
/// second after a commit), every hour otherwise.
fn on_change_entry(peer: &str) -> String {
    format!(
        "[[replication]]\nname = \"mesh\"\npeer = \"{peer}\"\nuser = \"admin\"\n\
         password_env = \"HUB_PASSWORD\"\ndatabases = [\"{DB}\"]\ninterval_secs = 3600\n\
         on_change = true\non_change_delay_secs = 0.5\n"
    )
}

/// The "mesh" entry's run count, and whether it is idle: not running and
/// not due soon (no commit waiting to be replicated).
fn mesh(srv: &Server) -> (u64, bool) {
    let idle = !matches!(
        stat(srv, "replication.mesh.result"),
        Some(client::StatValue::Text(t)) if t == "running"
    ) && matches!(
        stat(srv, "replication.mesh.next_run_s"),
        Some(client::StatValue::Gauge(s)) if s > 60.0
    );
    (count(srv, "replication.mesh.runs"), idle)
}

/// Waits until neither server has a run going or due, twice in a row
/// (a commit's wake-up is asynchronous): their run counts then.
fn settled(a: &Server, b: &Server) -> (u64, u64) {
    let mut last = None;
    let start = Instant::now();
    loop {
        assert!(
            start.elapsed() < Duration::from_secs(120),
            "the servers never settled: {last:?}"
        );
        let ((ra, ia), (rb, ib), (ra2, ia2)) = (mesh(a), mesh(b), mesh(a));
        let now = (ia && ib && ia2 && ra == ra2).then_some((ra, rb));
        if now.is_some() && now == last {
            return (ra, rb);
        }
        last = now;
        std::thread::sleep(Duration::from_millis(1500));
    }
}

#[test]
fn two_servers_replicating_both_ways_on_change_settle_and_keep_their_state() {
    let (data_a, data_b) = (common::users_dir(&[]), common::users_dir(&[]));
    let b = Server::start(data_b.path());
    on(&b, &["db", "create", DB, "--title", "Team"], "");
    on(&b, &["doc", "put", DB], r#"{"Subject":"zero"}"#);
    let a = Server::start(data_a.path());
    peer_ok(&a, &b, &["--create"]);
    a.stop();
    b.stop();

    // Each names the other; B's schedule state is garbage: a warning and
    // a fresh schedule, not a refusal to start.
    let (addr_a, addr_b) = (free_addr(), free_addr());
    std::fs::write(data_a.path().join("folio.toml"), on_change_entry(&addr_b)).unwrap();
    std::fs::write(data_b.path().join("folio.toml"), on_change_entry(&addr_a)).unwrap();
    std::fs::write(data_b.path().join("replication.json"), "{\"format\":").unwrap();
    std::env::set_var("HUB_PASSWORD", ADMIN_PW);
    let a = Server::start_on(data_a.path(), &addr_a);
    let b = Server::start_on(data_b.path(), &addr_b);
    wait_for("the runs at start", || mesh(&a).0 >= 1 && mesh(&b).0 >= 1);
    let (a0, b0) = settled(&a, &b);
    let state = std::fs::read_to_string(data_b.path().join("replication.json")).unwrap();
    assert!(
        state.contains("\"folio-replication-state\"") && state.contains("\"mesh\""),
        "B's state was written afresh: {state}"
    );

    // An edit on A is on B long before the hour is up, and the exchange
    // settles: A's run pushes it, B's run (B's database changed) finds
    // nothing new either way.
    let eight = on(&a, &["doc", "put", DB], r#"{"Subject":"eight"}"#);
    wait_for("eight on B", || {
        documents(&b, DB).contains_key(eight.trim())
    });
    let (a1, b1) = settled(&a, &b);
    assert!(
        (1..=3).contains(&(a1 - a0)) && b1 - b0 <= 3,
        "runs after one edit: A {a0} → {a1}, B {b0} → {b1}"
    );
    let nine = on(&b, &["doc", "put", DB], r#"{"Subject":"nine"}"#);
    wait_for("nine on A", || documents(&a, DB).contains_key(nine.trim()));
    let (a2, b2) = settled(&a, &b);
    assert!(
        a2 - a1 <= 3 && (1..=3).contains(&(b2 - b1)),
        "runs after one edit: A {a1} → {a2}, B {b1} → {b2}"
    );
    assert_eq!(documents(&a, DB), documents(&b, DB));
    for srv in [&a, &b] {
        assert_eq!(
            stat(srv, "replication.mesh.result"),
            Some(client::StatValue::Text("ok".into()))
        );
    }

    // A restarted keeps its history and does not run at start: it ran
    // within its interval.
    let (stopped, _) = a.stop_within(Duration::from_secs(60));
    assert!(stopped.success());
    let a = Server::start_on(data_a.path(), &addr_a);
    assert_eq!(count(&a, "replication.mesh.runs"), a2);
    assert!(mesh(&a).1, "not due at start");
    assert_eq!(
        stat(&a, "replication.mesh.result"),
        Some(client::StatValue::Text("ok".into()))
    );
    // And it still replicates on change.
    let ten = on(&a, &["doc", "put", DB], r#"{"Subject":"ten"}"#);
    wait_for("ten on B", || documents(&b, DB).contains_key(ten.trim()));
    wait_for("that run counted", || {
        count(&a, "replication.mesh.runs") > a2
    });
}

fn basic(user: &str, password: &str) -> String {
    use base64::Engine;
    format!(
        "Basic {}",
        base64::engine::general_purpose::STANDARD.encode(format!("{user}:{password}"))
    )
}

#[test]
fn a_bad_replication_entry_stops_the_server_at_start() {
    let data = common::users_dir(&[]);
    std::fs::write(
        data.path().join("folio.toml"),
        "[[replication]]\npeer = \"h:1\"\ndatabases = [\"a.fdb\"]\ninterval_secs = 60\ndirection = \"sideways\"\n",
    )
    .unwrap();
    let o = common::folio(
        data.path(),
        &[
            "serve",
            "--listen",
            "127.0.0.1:0",
            "--http-listen",
            "127.0.0.1:0",
        ],
        "",
    );
    assert!(!o.status.success());
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("replication[0].direction"), "{err}");
}

/// Fills `db` on `srv` with `n` documents of about 1 KiB, by 8 writers.
fn fill(srv: &Server, db: &str, n: usize, tag: &str) {
    let filler: String = (0..1024)
        .map(|i| char::from(b'a' + (i * 7 % 26) as u8))
        .collect();
    let writers: Vec<_> = (0..8)
        .map(|w| {
            let (admin, filler, db, tag) =
                (srv.admin(), filler.clone(), db.to_string(), tag.to_string());
            std::thread::spawn(move || {
                let (h, _) = admin.open_database(&db).unwrap();
                for i in (w..n).step_by(8) {
                    let doc = serde_json::json!({"Subject": format!("{tag}-{i}"), "Body": filler});
                    admin.create_document(h, &doc.to_string()).unwrap();
                }
            })
        })
        .collect();
    writers.into_iter().for_each(|w| w.join().unwrap());
}

/// Starts `cmd` and kills `victim` with SIGKILL once the server
/// `watcher` is connected to has answered four more replication steps
/// than `before` (pages remain to come);
/// the command must then fail.
fn kill_mid_replication(
    mut cmd: Command,
    watcher: client::blocking::Client,
    victim: Server,
    before: u64,
) {
    let mut child: Child = cmd
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let steps = || {
        watcher
            .statistics()
            .map(|all| {
                all.into_iter()
                    .find(|s| s.name == "op.changes.count")
                    .map_or(0, |s| match s.value {
                        client::StatValue::Count(n) => n,
                        _ => 0,
                    })
            })
            .unwrap_or(u64::MAX)
    };
    let start = Instant::now();
    while steps() < before + 4
        && start.elapsed() < Duration::from_secs(120)
        && child.try_wait().unwrap().is_none()
    {
        std::thread::sleep(Duration::from_millis(1));
    }
    victim.kill();
    let first = child.wait().unwrap();
    assert!(!first.success(), "a server was killed mid-replication");
}

#[test]
fn either_server_killed_mid_replication_loses_and_resends_nothing() {
    const N: usize = 4000;
    let (data_a, data_b) = (common::users_dir(&[]), common::users_dir(&[]));
    let b = Server::start(data_b.path());
    on(&b, &["db", "create", "big.fdb", "--title", "Big"], "");
    fill(&b, "big.fdb", N, "b");
    let a = Server::start(data_a.path());

    // B (the source) killed while A pulls a new replica.
    let before = count(&b, "op.changes.count");
    kill_mid_replication(
        peer_command(&a, &b, "big.fdb", "big.fdb", &["--create"]),
        b.admin(),
        b,
        before,
    );
    let b = Server::start(data_b.path());
    let rerun = peer_ok_on(&a, &b, "big.fdb", &[]);
    assert!(
        total(&rerun, "documents") < N as u64,
        "pages written before the kill are not sent again: {rerun}"
    );
    let (on_a, on_b) = (documents(&a, "big.fdb"), documents(&b, "big.fdb"));
    assert_eq!(on_b.len(), N);
    assert_eq!(on_a, on_b, "nothing lost, nothing duplicated");

    // A (the source of a push) killed while it pushes its own writes
    // (after a push that gives B a history of A's changes so far).
    peer_ok_on(&a, &b, "big.fdb", &["--direction", "push"]);
    fill(&a, "big.fdb", N, "a");
    let before = count(&b, "op.changes.count");
    kill_mid_replication(
        peer_command(&a, &b, "big.fdb", "big.fdb", &["--direction", "push"]),
        b.admin(),
        a,
        before,
    );
    let a = Server::start(data_a.path());
    let rerun = peer_ok_on(&a, &b, "big.fdb", &["--direction", "push"]);
    assert!(
        total(&rerun, "documents") < N as u64,
        "pages written before the kill are not sent again: {rerun}"
    );
    let (on_a, on_b) = (documents(&a, "big.fdb"), documents(&b, "big.fdb"));
    assert_eq!(on_a.len(), 2 * N);
    assert_eq!(on_a, on_b, "nothing lost, nothing duplicated");
    let again = peer_ok_on(&a, &b, "big.fdb", &["--direction", "both"]);
    assert_eq!(total(&again, "documents"), 0, "{again}");
}

fn peer_ok_on(a: &Server, b: &Server, db: &str, args: &[&str]) -> serde_json::Value {
    let o = peer_command(a, b, db, db, args).output().unwrap();
    assert!(
        o.status.success(),
        "replicate --peer {args:?} failed: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    json(&String::from_utf8(o.stdout).unwrap())
}

/// `POST /db/{db}/_replicate` on A's HTTP door (curl-like, with ureq):
/// A makes a replica of B's database and the documents match; a body
/// with an unknown field is 400 and nothing runs; an anonymous caller
/// is 401 and a missing database here 404, before B is called.
#[test]
fn http_asks_a_server_to_replicate_with_its_peer() {
    let (data_a, data_b) = (common::users_dir(&[]), common::users_dir(&[]));
    let (a, b) = (Server::start(data_a.path()), Server::start(data_b.path()));
    on(&b, &["db", "create", "h.fdb", "--title", "H"], "");
    for s in ["one", "two"] {
        on(
            &b,
            &["doc", "put", "h.fdb"],
            &format!(r#"{{"Subject":"{s}"}}"#),
        );
    }
    let post = |path: &str, body: &str, signed_in: bool| {
        let mut r =
            ureq::post(&format!("http://{}{path}", a.http)).set("Content-Type", "application/json");
        if signed_in {
            let auth = base64::Engine::encode(
                &base64::engine::general_purpose::STANDARD,
                format!("admin:{ADMIN_PW}"),
            );
            r = r.set("Authorization", &format!("Basic {auth}"));
        }
        let resp = match r.send_string(body) {
            Ok(r) => r,
            Err(ureq::Error::Status(_, r)) => r,
            Err(e) => panic!("POST {path}: {e}"),
        };
        let status = resp.status();
        (status, resp.into_string().unwrap())
    };
    let body = format!(
        r#"{{"peer":"{}","remote":"h.fdb","create":true,"user":"admin","password":"{ADMIN_PW}"}}"#,
        b.native
    );
    let (status, text) = post(
        "/db/h.fdb/_replicate",
        &body.replace("create", "creat"),
        true,
    );
    assert_eq!(status, 400, "{text}");
    assert!(text.contains("unknown field"), "{text}");
    assert_eq!(post("/db/h.fdb/_replicate", &body, false).0, 401);
    let (status, text) = post(
        "/db/gone.fdb/_replicate",
        &body.replace(",\"create\":true", ""),
        true,
    );
    assert_eq!(status, 404, "{text}");

    let (status, text) = post("/db/h.fdb/_replicate", &body, true);
    assert_eq!(status, 200, "{text}");
    let answer = json(&text);
    assert_eq!(
        total(&answer, "documents"),
        3,
        "two documents and the ACL: {answer}"
    );
    assert_eq!(documents(&a, "h.fdb"), documents(&b, "h.fdb"));
}
