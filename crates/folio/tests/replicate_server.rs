//! `folio replicate LOCAL REMOTE --server` against the real `folio serve`:
//! a new replica made over the network, edits on both sides (a conflict,
//! a deletion) carried both ways until both hold the same documents, a
//! rerun that carries nothing, a selection formula, the ACL on both
//! sides (a document behind `$Readers` never travels to a caller it does
//! not name; a Reader cannot push), and a server killed with SIGKILL in
//! the middle of a replication, after which a rerun converges.

mod common;
use common::{json, ok, Server, ADMIN_PW};
use std::collections::BTreeMap;
use std::path::Path;
use std::process::{Command, Output, Stdio};

const DB: &str = "team.fdb";

/// `folio --data LOCAL --server … --user USER replicate ARGS`.
fn replicate(local: &Path, srv: &Server, user: (&str, &str), args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_folio"))
        .arg("--data")
        .arg(local)
        .args(["--server", &srv.native, "--user", user.0, "replicate"])
        .args(args)
        .env("FOLIO_PASSWORD", user.1)
        .stdin(Stdio::null())
        .output()
        .unwrap()
}

fn replicate_ok(
    local: &Path,
    srv: &Server,
    user: (&str, &str),
    args: &[&str],
) -> serde_json::Value {
    let o = replicate(local, srv, user, args);
    assert!(
        o.status.success(),
        "replicate {args:?} failed: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    json(&String::from_utf8(o.stdout).unwrap())
}

const ADMIN: (&str, &str) = ("admin", ADMIN_PW);

/// Runs the CLI against the server as the administrator; its stdout.
fn on_server(srv: &Server, args: &[&str], stdin: &str) -> String {
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
fn documents(list: &str) -> BTreeMap<String, serde_json::Value> {
    list.lines()
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

/// A server whose `team.fdb` lets alice edit and bob read, with four
/// documents, one of them readable by alice only.
fn team_server(data: &Path) -> (Server, Vec<String>) {
    let srv = Server::start(data);
    on_server(&srv, &["db", "create", DB, "--title", "Team"], "");
    srv.admin()
        .set_acl(
            DB,
            r#"{"default":"noaccess","entries":[
                {"name":"admin","level":"manager"},
                {"name":"alice","level":"editor"},
                {"name":"bob","level":"reader"}]}"#,
        )
        .unwrap();
    let unids = [
        r#"{"Subject":"one","Kind":"x"}"#,
        r#"{"Subject":"two","Kind":"y"}"#,
        r#"{"Subject":"secret","Kind":"x","$Readers":["alice"]}"#,
        r#"{"Subject":"four","Kind":"x"}"#,
    ]
    .iter()
    .map(|d| on_server(&srv, &["doc", "put", DB], d).trim().to_string())
    .collect();
    (srv, unids)
}

#[test]
fn a_local_file_and_a_server_database_converge_both_ways() {
    let data = common::users_dir(&["alice", "bob"]);
    let (srv, unids) = team_server(data.path());
    let local = tempfile::tempdir().unwrap();
    let l = local.path();

    let created = replicate_ok(l, &srv, ADMIN, &["mine.fdb", DB, "--create"]);
    let info = json(&on_server(&srv, &["db", "info", DB], ""));
    let mine = json(&ok(l, &["db", "info", "mine.fdb"], ""));
    assert_eq!(mine["replica_id"], info["replica_id"]);
    assert_ne!(mine["instance_id"], info["instance_id"]);
    assert_eq!(
        created["pulls"][0]["documents"], info["note_count"],
        "every note, the ACL note included, for a Manager"
    );
    let pull = &created["pulls"][0];
    assert!(pull["bytes_on_wire"].as_u64().unwrap() > 0);
    assert!(pull["bytes_uncompressed"].as_u64().unwrap() > 0);
    assert_eq!(
        documents(&ok(l, &["doc", "list", "mine.fdb"], "")),
        documents(&on_server(&srv, &["doc", "list", DB], "")),
    );

    // Edits on both sides: the same document (a conflict), one each, a
    // deletion here and a new document there.
    let (one, two, four) = (&unids[0], &unids[1], &unids[3]);
    ok(
        l,
        &["doc", "update", "mine.fdb", one],
        r#"{"Subject":"one, here"}"#,
    );
    ok(l, &["doc", "delete", "mine.fdb", four], "");
    on_server(
        &srv,
        &["doc", "update", DB, one],
        r#"{"Subject":"one, there"}"#,
    );
    on_server(
        &srv,
        &["doc", "update", DB, two],
        r#"{"Subject":"two, there"}"#,
    );
    on_server(
        &srv,
        &["doc", "put", DB],
        r#"{"Subject":"five","Kind":"y"}"#,
    );

    let both = replicate_ok(l, &srv, ADMIN, &["mine.fdb", DB, "--direction", "both"]);
    let (pulled, pushed) = (&both["pulls"][0], &both["pulls"][1]);
    assert_eq!(pulled["from"], DB);
    assert_eq!(pulled["documents"], 3, "one, two and five: {both}");
    assert_eq!(pulled["conflicts"], 1, "one was edited on both sides");
    assert!(
        pushed["documents"].as_u64().unwrap() >= 2,
        "the deletion and the conflict document at least: {both}"
    );
    let here = documents(&ok(l, &["doc", "list", "mine.fdb"], ""));
    let there = documents(&on_server(&srv, &["doc", "list", DB], ""));
    assert_eq!(here, there, "identical documents and conflict documents");
    assert!(!here.contains_key(four.as_str()), "the deletion travelled");
    assert_eq!(
        subjects(&here),
        ["five", "one, here", "one, there", "secret", "two, there"],
        "the winner and the loser kept as a conflict document"
    );
    assert_eq!(
        here.values()
            .filter(|d| d.get("$Conflict").is_some())
            .count(),
        1
    );

    // Nothing changed: nothing travels either way.
    let again = replicate_ok(l, &srv, ADMIN, &["mine.fdb", DB, "--direction", "both"]);
    assert_eq!(again["pulls"][0]["documents"], 0, "{again}");
    assert_eq!(again["pulls"][1]["documents"], 0, "{again}");
    assert!(again["pulls"][0]["round_trips"].as_u64().unwrap() <= 4);

    // A selective new replica: only Kind = "x" (and stubs) travel.
    let sel = replicate_ok(
        l,
        &srv,
        ADMIN,
        &[
            "sel.fdb",
            DB,
            "--create",
            "--selection",
            r#"SELECT Kind = "x""#,
        ],
    );
    assert!(sel["pulls"][0]["documents"].as_u64().unwrap() >= 2);
    let selected = documents(&ok(l, &["doc", "list", "sel.fdb"], ""));
    assert!(selected.values().all(|d| d["Kind"] == "x"), "{selected:?}");
    assert!(selected.contains_key(unids[0].as_str()));
    assert!(!selected.contains_key(unids[1].as_str()));
}

#[test]
fn the_acl_decides_what_travels_each_way() {
    let data = common::users_dir(&["alice", "bob"]);
    let (srv, unids) = team_server(data.path());
    let local = tempfile::tempdir().unwrap();
    let l = local.path();
    let bob = ("bob", "bob-password");
    let alice = ("alice", "alice-password");

    // bob may read, but not the document behind $Readers, nor the ACL.
    let pulled = replicate_ok(l, &srv, bob, &["bob.fdb", DB, "--create"]);
    assert_eq!(pulled["pulls"][0]["documents"], 3, "{pulled}");
    let bobs = documents(&ok(l, &["doc", "list", "bob.fdb"], ""));
    assert_eq!(subjects(&bobs), ["four", "one", "two"]);
    assert!(!bobs.contains_key(unids[2].as_str()));

    // bob, a Reader, cannot push: refused, nothing changes there.
    ok(
        l,
        &["doc", "update", "bob.fdb", &unids[0]],
        r#"{"Subject":"bob was here"}"#,
    );
    let o = replicate(l, &srv, bob, &["bob.fdb", DB, "--direction", "push"]);
    assert!(!o.status.success());
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("no access"), "{err}");
    let one = json(&on_server(&srv, &["doc", "get", DB, &unids[0]], ""));
    assert_eq!(one["Subject"], "one");

    // alice, an Editor, pushes; she sees the secret document too.
    let made = replicate_ok(l, &srv, alice, &["alice.fdb", DB, "--create"]);
    assert_eq!(made["pulls"][0]["documents"], 4, "{made}");
    ok(
        l,
        &["doc", "update", "alice.fdb", &unids[2]],
        r#"{"Subject":"secret, edited"}"#,
    );
    let pushed = replicate_ok(l, &srv, alice, &["alice.fdb", DB, "--direction", "push"]);
    assert_eq!(pushed["pulls"][0]["documents"], 1, "{pushed}");
    let secret = json(&on_server(&srv, &["doc", "get", DB, &unids[2]], ""));
    assert_eq!(secret["Subject"], "secret, edited");

    // bob's next pull still never sees it.
    let again = replicate_ok(l, &srv, bob, &["bob.fdb", DB]);
    assert_eq!(again["pulls"][0]["documents"], 0, "{again}");
    assert!(!documents(&ok(l, &["doc", "list", "bob.fdb"], "")).contains_key(unids[2].as_str()));
}

#[test]
fn a_server_killed_mid_replication_converges_on_rerun() {
    let data = common::users_dir(&[]);
    let srv = Server::start(data.path());
    on_server(&srv, &["db", "create", "big.fdb", "--title", "Big"], "");
    // 5,000 documents of about 1 KiB (ten summary pages), written by 8
    // pipelined writers.
    let filler: String = (0..1024)
        .map(|i| char::from(b'a' + (i * 7 % 26) as u8))
        .collect();
    let writers: Vec<_> = (0..8)
        .map(|w| {
            let (admin, filler) = (srv.admin(), filler.clone());
            std::thread::spawn(move || {
                let (db, _) = admin.open_database("big.fdb").unwrap();
                for i in 0..625 {
                    let doc = serde_json::json!({"Subject": format!("{w}-{i}"), "Body": filler});
                    admin.create_document(db, &doc.to_string()).unwrap();
                }
            })
        })
        .collect();
    writers.into_iter().for_each(|w| w.join().unwrap());

    let local = tempfile::tempdir().unwrap();
    let l = local.path();
    let mut child = Command::new(env!("CARGO_BIN_EXE_folio"))
        .arg("--data")
        .arg(l)
        .args(["--server", &srv.native, "--user", "admin", "replicate"])
        .args(["copy.fdb", "big.fdb", "--create"])
        .env("FOLIO_PASSWORD", ADMIN_PW)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    // Kill the server once four replication steps are done: Hello, the
    // first summaries, their documents, and an Ack answered by the next
    // summary; pages are still to come.
    let watcher = srv.admin();
    let steps = || {
        watcher
            .statistics()
            .unwrap()
            .into_iter()
            .find(|s| s.name == "op.changes.count")
            .map_or(0, |s| match s.value {
                client::StatValue::Count(n) => n,
                _ => 0,
            })
    };
    let start = std::time::Instant::now();
    while steps() < 4
        && start.elapsed() < std::time::Duration::from_secs(60)
        && child.try_wait().unwrap().is_none()
    {
        std::thread::sleep(std::time::Duration::from_millis(1));
    }
    srv.kill();
    let first = child.wait().unwrap();
    assert!(!first.success(), "the server was killed mid-replication");

    let srv = Server::start(data.path());
    let rerun = replicate_ok(l, &srv, ADMIN, &["copy.fdb", "big.fdb"]);
    // The pages written before the kill are not sent again (I26).
    assert!(
        rerun["pulls"][0]["documents"].as_u64().unwrap() < 5001,
        "{rerun}"
    );
    let here = documents(&ok(l, &["doc", "list", "copy.fdb"], ""));
    let there = documents(&on_server(&srv, &["doc", "list", "big.fdb"], ""));
    assert_eq!(
        there.len(),
        5000,
        "every acknowledged write survived the kill"
    );
    assert_eq!(here, there, "converged after the rerun");
    let again = replicate_ok(
        l,
        &srv,
        ADMIN,
        &["copy.fdb", "big.fdb", "--direction", "both"],
    );
    assert_eq!(again["pulls"][0]["documents"], 0, "{again}");
    assert_eq!(again["pulls"][1]["documents"], 0, "{again}");
}

/// `folio replicate SRC DST` with the server in the spelling itself
/// (`HOST:PORT/PATH`), documents flowing SRC into DST whichever end is
/// where; the same server named twice is refused.
#[test]
fn host_port_path_ends_replicate_src_into_dst() {
    let data = common::users_dir(&["alice", "bob"]);
    let (srv, unids) = team_server(data.path());
    let local = tempfile::tempdir().unwrap();
    let l = local.path();
    let remote = format!("{}/{DB}", srv.native);
    let run = |args: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_folio"))
            .arg("--data")
            .arg(l)
            .args(["--user", "admin", "replicate"])
            .args(args)
            .env("FOLIO_PASSWORD", ADMIN_PW)
            .stdin(Stdio::null())
            .output()
            .unwrap()
    };
    let o = run(&[&remote, "mine.fdb", "--create"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let created = json(&String::from_utf8(o.stdout).unwrap());
    assert_eq!(created["pulls"][0]["to"], "mine.fdb", "{created}");
    assert_eq!(
        documents(&ok(l, &["doc", "list", "mine.fdb"], "")),
        documents(&on_server(&srv, &["doc", "list", DB], "")),
    );

    // Local into the server: an edit here travels there, nothing comes
    // back this way.
    ok(
        l,
        &["doc", "update", "mine.fdb", &unids[0]],
        r#"{"Subject":"one, sent"}"#,
    );
    let o = run(&["mine.fdb", &remote]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let pushed = json(&String::from_utf8(o.stdout).unwrap());
    assert_eq!(pushed["pulls"].as_array().unwrap().len(), 1, "{pushed}");
    assert_eq!(pushed["pulls"][0]["from"], "mine.fdb", "{pushed}");
    assert_eq!(pushed["pulls"][0]["documents"], 1, "{pushed}");
    let there = documents(&on_server(&srv, &["doc", "list", DB], ""));
    assert_eq!(there[&unids[0]]["Subject"], "one, sent");

    // --both, --select; and the server named twice.
    let o = run(&["mine.fdb", &remote, "--both"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let o = run(&[&remote, "mine.fdb", "--select", "SELECT Kind = \"x\""]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let o = Command::new(env!("CARGO_BIN_EXE_folio"))
        .arg("--data")
        .arg(l)
        .args(["--server", &srv.native, "replicate", &remote, "mine.fdb"])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(!o.status.success());
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("name the server once"),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
}
