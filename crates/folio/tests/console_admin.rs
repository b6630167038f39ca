//! The console's administration pages against `folio serve`, from
//! outside: the access-control editor, views and folders (define with a
//! formula error shown, rebuild, read with categories folded and
//! unfolded) and fixup.
//!
//! - `console_admin_api.py` calls the routes behind them with Python
//!   `requests`, holding a console session (cookie and CSRF token) as a
//!   Manager, a Designer, an Editor, a Reader, a stranger and nobody,
//!   with strange spellings and attacker reads (docs/http.md, "Console");
//! - `console_admin.py` drives the pages in headless Chromium as each of
//!   them;
//! - `console_fixup_kill.py` runs a fixup from the page and the test
//!   kills the server (SIGKILL) while the fixup writes its new file: the
//!   page says the server did not answer, and the restarted server serves
//!   the database whole, fixes it up again, and lists no stray file;
//! - `console_compact_kill.py` starts a compact from the page and kills
//!   the server at several moments after: the page says it did not
//!   answer (or shows the report), every document reads whole after the
//!   restart, and a compact that finishes leaks no page;
//! - `console_mail.py` reads the mail queue and the replication entries,
//!   runs one now, and backs up: the backup history (GET /admin/backups)
//!   shows the run, not a refused one, a failed one with its reason, and
//!   an archive, and the same history after a restart.
//!
//! Tools (Chromium, ChromeDriver, Selenium, requests) come from
//! `scripts/install-console-tools.sh`, run the first time one is missing;
//! where it cannot install them the test says loudly that it is skipped.

mod common;

use common::{Server, ADMIN_PW};
use serde_json::{json, Value};
use std::path::Path;
use std::process::Command;

const SECRET: &str = "Secret salaries";

fn tools_present() -> bool {
    match common::console_tools() {
        Ok(()) => true,
        Err(why) => {
            eprintln!("\n*** WARNING: the console administration test is SKIPPED: {why} ***\n");
            false
        }
    }
}

/// An HTTP call as the administrator; the answer's JSON (it must succeed).
fn http(srv: &Server, method: &str, path: &str, body: &Value) -> Value {
    let auth = base64::Engine::encode(
        &base64::engine::general_purpose::STANDARD,
        format!("admin:{ADMIN_PW}"),
    );
    let body = match body {
        Value::Null => String::new(),
        b => b.to_string(),
    };
    let r = ureq::request(method, &format!("http://{}{path}", srv.http))
        .set("Authorization", &format!("Basic {auth}"))
        .set("Content-Type", "application/json")
        .send_string(&body)
        .unwrap_or_else(|e| panic!("{method} {path}: {e}"));
    common::json(&r.into_string().unwrap())
}

/// Runs `tests/browser/{script}` with `args` through Debian's Python;
/// fails the test unless it printed `passed`. Its output.
fn python(script: &str, args: &[&str], passed: &str) -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/browser")
        .join(script);
    let out = Command::new("/usr/bin/python3")
        .arg(&path)
        .args(args)
        .output()
        .unwrap();
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "{script} failed:\n{said}");
    assert!(said.contains(passed), "{said}");
    eprintln!("{said}");
    said
}

fn screenshots(tmp: &Path) -> std::path::PathBuf {
    match std::env::var("FOLIO_CONSOLE_SCREENSHOTS") {
        Ok(dir) => std::path::PathBuf::from(dir),
        Err(_) => tmp.join("screenshots"),
    }
}

/// team.fdb: a Manager (mona), a Designer (dave), an Editor (eddie) and a
/// Reader (rita); sam has no entry. A categorized view "By category" over
/// eight documents, three of them readable by mona alone (`$Readers`):
/// the category "Board" holds only hidden ones, "Mixed" one of its three.
/// A folder "Pinned" holds one open and one hidden document.
fn team(srv: &Server) -> Value {
    http(srv, "PUT", "/db/team.fdb", &json!({"title": "Team"}));
    http(
        srv,
        "PUT",
        "/db/team.fdb/_acl",
        &json!({"roles": ["Sales"], "entries": [
            {"name": "admin", "level": "manager"},
            {"name": "mona", "level": "manager"},
            {"name": "dave", "level": "designer"},
            {"name": "eddie", "level": "editor", "roles": ["Sales"]},
            {"name": "rita", "level": "reader"}]}),
    );
    let docs = [
        ("Open", "Agenda", false),
        ("Open", "Minutes", false),
        ("Open", "Rota", false),
        ("Mixed", "Budget outline", false),
        ("Mixed", "Travel policy", false),
        ("Mixed", SECRET, true),
        ("Board", &format!("{SECRET} 2027"), true),
        ("Board", &format!("{SECRET} 2028"), true),
    ];
    let mut open = None;
    let mut hidden = None;
    for (cat, subject, secret) in docs {
        let mut doc = json!({"Category": cat, "Subject": subject, "Author": "mona"});
        if secret {
            doc["$Readers"] = json!(["mona"]);
        }
        let unid = http(srv, "POST", "/db/team.fdb/docs", &doc)["unid"]
            .as_str()
            .unwrap()
            .to_string();
        if secret {
            hidden.get_or_insert(unid);
        } else {
            open.get_or_insert(unid);
        }
    }
    http(
        srv,
        "POST",
        "/db/team.fdb/views",
        &json!({"name": "By category", "kind": "view", "selection": "SELECT @All",
            "columns": [{"title": "Category", "formula": "Category", "sort": "asc", "categorized": true},
                        {"title": "Subject", "formula": "Subject", "sort": "asc"}]}),
    );
    http(
        srv,
        "POST",
        "/db/team.fdb/views",
        &json!({"name": "Pinned", "kind": "folder",
            "columns": [{"title": "Subject", "formula": "Subject"}]}),
    );
    http(
        srv,
        "POST",
        "/db/team.fdb/folders/Pinned/add",
        &json!({"unids": [open, hidden]}),
    );
    json!({"admin_password": ADMIN_PW, "documents": 8, "visible_to_rita": 5,
           "hidden_category": "Board", "secret": SECRET, "hidden": hidden, "open": open})
}

const PEOPLE: &[&str] = &["mona", "dave", "eddie", "rita", "sam"];

#[test]
fn the_acl_views_and_fixup_routes_refuse_whom_they_must_and_change_nothing_when_they_do() {
    if !tools_present() {
        return;
    }
    let tmp = common::users_dir(PEOPLE);
    let srv = Server::start(tmp.path());
    let setup = team(&srv);
    python(
        "console_admin_api.py",
        &[&format!("http://{}", srv.http), &setup.to_string()],
        "console admin api test passed",
    );
}

#[test]
fn the_console_edits_the_acl_defines_and_reads_views_and_runs_fixup_for_each_level() {
    if !tools_present() {
        return;
    }
    let tmp = common::users_dir(PEOPLE);
    let srv = Server::start(tmp.path());
    let setup = team(&srv);
    let shots = screenshots(tmp.path());
    python(
        "console_admin.py",
        &[
            &format!("http://{}", srv.http),
            shots.to_str().unwrap(),
            &setup.to_string(),
        ],
        "console admin test passed",
    );
}

/// Text that does not compress, `len` bytes of it (a fixed seed).
fn noise(seed: u64, len: usize) -> String {
    let mut x = seed | 1;
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (b'a' + (x % 26) as u8) as char
        })
        .collect()
}

#[test]
fn a_fixup_run_from_the_console_survives_kill_9_of_the_server() {
    if !tools_present() {
        return;
    }
    let tmp = common::users_dir(&[]);
    let srv = Server::start(tmp.path());
    http(&srv, "PUT", "/db/big.fdb", &json!({"title": "Big"}));
    // Large enough that fixup's copy and sync of the file take a while.
    let mut unids = Vec::new();
    for i in 0..48 {
        let doc = json!({"Subject": format!("bulk {i:02}"), "Body": noise(i + 1, 1 << 20)});
        unids.push(
            http(&srv, "POST", "/db/big.fdb/docs", &doc)["unid"]
                .as_str()
                .unwrap()
                .to_string(),
        );
    }
    let shots = screenshots(tmp.path());
    let said = python(
        "console_fixup_kill.py",
        &[
            &format!("http://{}", srv.http),
            ADMIN_PW,
            shots.to_str().unwrap(),
            &srv.pid().to_string(),
            tmp.path().join("big.fdb-fixup").to_str().unwrap(),
        ],
        "console fixup kill test passed",
    );
    assert!(said.contains("killed during fixup"), "{said}");
    drop(srv);

    // The restart is clean: every document reads whole, a fixup finds
    // the file sound, and the half-written copy is nobody's database.
    let srv = Server::start(tmp.path());
    let listed = http(&srv, "GET", "/dbs", &Value::Null);
    let paths: Vec<&str> = listed
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["path"].as_str().unwrap())
        .collect();
    assert_eq!(paths, ["big.fdb"], "{listed}");
    for (i, unid) in unids.iter().enumerate() {
        let doc = http(
            &srv,
            "GET",
            &format!("/db/big.fdb/docs/{unid}"),
            &Value::Null,
        );
        assert_eq!(doc["Subject"], format!("bulk {i:02}"));
        assert_eq!(doc["Body"], noise(i as u64 + 1, 1 << 20), "document {i}");
    }
    let report = http(&srv, "POST", "/db/big.fdb/fixup", &Value::Null);
    assert_eq!(report["clean"], true, "{report}");
    assert_eq!(report["notes_salvaged"].as_u64(), Some(49), "{report}");
    assert!(!tmp.path().join("big.fdb-fixup").exists());
}

/// A server with mail users alice and bob, and carol whose mail file is
/// gone (the router retries her, saying why); an archive-style log; and
/// a `[[replication]]` entry whose peer does not answer (it fails at
/// start, says so, and runs again only when asked: "Run now"). The
/// console's Mail and Replication pages, and the routes behind them, as
/// the administrator, alice and nobody.
#[test]
fn the_mail_queue_and_replication_pages_show_what_waits_and_why() {
    if !tools_present() {
        return;
    }
    let tmp = common::users_dir(&["alice", "bob", "carol"]);
    // A port nothing listens on: bound, then let go.
    let dead = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap();
    std::fs::write(
        tmp.path().join("folio.toml"),
        format!(
            "[translog]\nstyle = \"archive\"\n\n[[replication]]\nname = \"branch\"\npeer = \"{dead}\"\n\
             user = \"admin\"\npassword_env = \"BRANCH_PASSWORD\"\ndatabases = [\"team.fdb\"]\n\
             interval_secs = 3600\n"
        ),
    )
    .unwrap();
    let srv = Server::start_with_env(tmp.path(), &[("BRANCH_PASSWORD", ADMIN_PW)]);
    http(&srv, "PUT", "/db/team.fdb", &json!({"title": "Team"}));
    for name in ["alice", "bob", "carol"] {
        http(&srv, "POST", "/mail/users", &json!({ "name": name }));
    }
    http(&srv, "DELETE", "/db/mail%2Fcarol.fdb", &Value::Null);
    let backups = tmp.path().join("backups-here");
    let shots = screenshots(tmp.path());
    python(
        "console_mail.py",
        &[
            &format!("http://{}", srv.http),
            ADMIN_PW,
            shots.to_str().unwrap(),
            backups.to_str().unwrap(),
        ],
        "console mail test passed",
    );
    assert!(backups.join("manifest.json").exists());

    // The backup history outlives the server: the same runs after a
    // restart, read from <data>/backups.json.
    let before = http(&srv, "GET", "/admin/backups", &Value::Null);
    drop(srv);
    let srv = Server::start_with_env(tmp.path(), &[("BRANCH_PASSWORD", ADMIN_PW)]);
    let after = http(&srv, "GET", "/admin/backups", &Value::Null);
    assert_eq!(before, after);
    let kinds: Vec<&str> = after["runs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["kind"].as_str().unwrap())
        .collect();
    assert_eq!(kinds, ["archive", "backup", "backup"], "{after}");
    assert_eq!(after["runs"][2]["dir"], backups.to_str().unwrap());
    assert_eq!(after["runs"][2]["result"], "ok");
}

/// big.fdb with 40 documents of 256 KiB, every other one deleted, so a
/// compact has pages to move; the kept documents' numbers.
fn half_deleted_big(srv: &Server) -> Vec<(String, u64)> {
    http(srv, "PUT", "/db/big.fdb", &json!({"title": "Big"}));
    let mut kept = Vec::new();
    for i in 0..40u64 {
        let doc = json!({"Subject": format!("bulk {i:02}"), "Body": noise(i + 1, 256 << 10)});
        let unid = http(srv, "POST", "/db/big.fdb/docs", &doc)["unid"]
            .as_str()
            .unwrap()
            .to_string();
        if i % 2 == 0 {
            kept.push((unid, i));
        } else {
            http(
                srv,
                "DELETE",
                &format!("/db/big.fdb/docs/{unid}"),
                &Value::Null,
            );
        }
    }
    kept
}

#[test]
fn a_compact_run_from_the_console_survives_kill_9_of_the_server() {
    if !tools_present() {
        return;
    }
    let tmp = common::users_dir(&[]);
    let srv = Server::start(tmp.path());
    let kept = half_deleted_big(&srv);
    let shots = screenshots(tmp.path());
    let mut srv = Some(srv);
    // The moment of the kill cannot be tied to a file here (compaction
    // is in place), so it is tried at several: every one must leave the
    // database whole.
    for delay in ["0", "0.05", "0.3"] {
        let s = srv.take().unwrap();
        python(
            "console_compact_kill.py",
            &[
                &format!("http://{}", s.http),
                ADMIN_PW,
                shots.to_str().unwrap(),
                &s.pid().to_string(),
                delay,
            ],
            "console compact kill test passed",
        );
        drop(s);
        let s = Server::start(tmp.path());
        for (unid, i) in &kept {
            let doc = http(&s, "GET", &format!("/db/big.fdb/docs/{unid}"), &Value::Null);
            assert_eq!(
                doc["Body"],
                noise(i + 1, 256 << 10),
                "document {i}, delay {delay}"
            );
        }
        srv = Some(s);
    }
    // A compact that finishes leaves nothing leaked, and the file holds
    // exactly the kept documents.
    let s = srv.take().unwrap();
    http(&s, "POST", "/db/big.fdb/compact", &Value::Null);
    assert!(s.stop().success());
    let check = common::json(&common::ok(tmp.path(), &["db", "check", "big.fdb"], ""));
    assert_eq!(check["leaked_pages"], 0, "{check}");
}
