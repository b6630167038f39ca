//! PouchDB in a real browser syncing with the real `folio serve` through
//! CORS: headless Chromium driven by Python Selenium
//! (`tests/browser/couch_sync.py`; the console's browser tools, installed
//! by `scripts/install-console-tools.sh` on first miss), PouchDB's own
//! browser build (npm `pouchdb`, `scripts/install-pouchdb.sh`), a page
//! served from an origin `[couchdb] cors_origins` lists and from one it
//! does not. Where the browser tools cannot be installed, the test says
//! loudly that it is skipped, as the console's does.

mod common;
#[path = "couch/support.rs"]
mod support;

use common::{users_dir, Server};
use serde_json::{json, Value};
use std::path::Path;
use std::process::Command;
use support::*;

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

fn start_cors(data: &Path, origins: &str) -> Server {
    Server::start_with_env(
        data,
        &[
            ("FOLIO__COUCHDB_LISTEN", "127.0.0.1:0"),
            ("FOLIO__COUCHDB__CORS_ORIGINS", origins),
        ],
    )
}

/// The CORS headers of an answer to `method` from `origin`.
fn cors_headers(
    method: &str,
    url: &str,
    origin: &str,
    preflight: bool,
) -> (u16, Vec<(String, String)>) {
    let mut r = ureq::request(method, url).set("Origin", origin);
    if preflight {
        r = r.set("Access-Control-Request-Method", "POST").set(
            "Access-Control-Request-Headers",
            "authorization,content-type",
        );
    }
    let resp = match r.call() {
        Ok(r) => r,
        Err(ureq::Error::Status(_, r)) => r,
        Err(e) => panic!("{method} {url}: {e}"),
    };
    let status = resp.status();
    let headers = resp
        .headers_names()
        .into_iter()
        .filter(|n| n.starts_with("access-control-") || n == "vary")
        .map(|n| (n.clone(), resp.header(&n).unwrap_or("").to_string()))
        .collect();
    (status, headers)
}

fn header<'h>(h: &'h [(String, String)], name: &str) -> Option<&'h str> {
    h.iter().find(|(n, _)| n == name).map(|(_, v)| v.as_str())
}

#[test]
fn cors_answers_listed_origins_only() {
    let data = users_dir(&["alice", "bob", "carol"]);
    let listed = "http://127.0.0.1:8123";
    let s = start_cors(data.path(), &format!("[\"{listed}\"]"));
    let db = team_db(&s, "cors");
    let (st, h) = cors_headers("OPTIONS", &format!("{db}/_bulk_docs"), listed, true);
    assert!((200..300).contains(&st), "{st} {h:?}");
    assert_eq!(header(&h, "access-control-allow-origin"), Some(listed));
    assert_eq!(header(&h, "access-control-allow-credentials"), Some("true"));
    let methods = header(&h, "access-control-allow-methods")
        .unwrap()
        .to_ascii_uppercase();
    assert!(
        methods.contains("POST") && methods.contains("PUT"),
        "{methods}"
    );
    let allowed = header(&h, "access-control-allow-headers")
        .unwrap()
        .to_ascii_lowercase();
    assert!(
        allowed.contains("authorization") && allowed.contains("content-type"),
        "{allowed}"
    );
    let (_, h) = cors_headers("GET", &format!("{}/", couch_url(&s)), listed, false);
    assert_eq!(header(&h, "access-control-allow-origin"), Some(listed));
    assert!(header(&h, "access-control-expose-headers")
        .unwrap()
        .to_ascii_lowercase()
        .contains("etag"));
    // Even an error answer carries them (the page can read why).
    let (st, h) = cors_headers("GET", &format!("{db}/nothere"), listed, false);
    assert_eq!(st, 401);
    assert_eq!(header(&h, "access-control-allow-origin"), Some(listed));
    // Another origin, a look-alike, or none: no CORS header at all.
    for origin in [
        "http://127.0.0.1:8124",
        "http://127.0.0.1:8123.evil",
        "null",
        "HTTP://127.0.0.1:8123",
    ] {
        let (_, h) = cors_headers("OPTIONS", &format!("{db}/_bulk_docs"), origin, true);
        assert_eq!(header(&h, "access-control-allow-origin"), None, "{origin}");
        let (_, h) = cors_headers("GET", &format!("{}/", couch_url(&s)), origin, false);
        assert_eq!(header(&h, "access-control-allow-origin"), None, "{origin}");
    }
    drop(s);
    // By default no origin is listed.
    let s = start(data.path());
    let (_, h) = cors_headers(
        "OPTIONS",
        &format!("{}/cors/_bulk_docs", couch_url(&s)),
        listed,
        true,
    );
    assert_eq!(header(&h, "access-control-allow-origin"), None);
    drop(s);
    // A malformed origin is refused at startup, naming the setting.
    let out = Command::new(env!("CARGO_BIN_EXE_folio"))
        .env("FOLIO__COUCHDB_LISTEN", "127.0.0.1:0")
        .env(
            "FOLIO__COUCHDB__CORS_ORIGINS",
            "[\"http://a.example/path\"]",
        )
        .arg("--data")
        .arg(data.path())
        .args([
            "serve",
            "--listen",
            "127.0.0.1:0",
            "--http-listen",
            "127.0.0.1:0",
        ])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(said.contains("couchdb.cors_origins"), "{said}");
}

#[test]
fn pouchdb_in_chromium_syncs_through_cors_from_a_listed_origin_only() {
    if let Err(why) = common::console_tools() {
        eprintln!("\n*** WARNING: the CouchDB browser test is SKIPPED: {why} ***\n");
        return;
    }
    let (listed, other) = (free_port(), free_port());
    let data = users_dir(&["alice", "bob", "carol"]);
    let s = start_cors(data.path(), &format!("[\"http://127.0.0.1:{listed}\"]"));
    let db = team_db(&s, "web");
    let server_text = b"made on the server".to_vec();
    ok(
        "PUT",
        &format!("{db}/from-server"),
        ALICE,
        Some(json!({"made": "on the server", "_attachments": {
            "s.txt": {"content_type": "text/plain", "data": b64(&server_text)}}})),
    );
    let pouch_js = pouch_modules().join("pouchdb/dist/pouchdb.js");
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/browser/couch_sync.py");
    let python = std::env::var("FOLIO_PYTHON").unwrap_or_else(|_| "/usr/bin/python3".into());
    let out = Command::new(python)
        .arg(&script)
        .args([couch_url(&s).as_str(), "web", ALICE.0, ALICE.1])
        .args([listed.to_string(), other.to_string()])
        .arg(&pouch_js)
        .output()
        .unwrap();
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "the browser script failed:\n{said}");
    let line = |label: &str| -> Value {
        let l = said
            .lines()
            .find_map(|l| l.strip_prefix(label))
            .unwrap_or_else(|| panic!("no {label} in:\n{said}"));
        serde_json::from_str(l.trim()).unwrap()
    };
    let result = line("RESULT ");
    assert_eq!(result["ok"], json!(true), "{result}");
    assert_eq!(result["pushed"], json!(1), "{result}");
    assert_eq!(result["pulled"], json!(1), "{result}");
    assert_eq!(
        (
            result["pull_failures"].as_u64(),
            result["push_failures"].as_u64()
        ),
        (Some(0), Some(0))
    );
    assert_eq!(result["got"]["made"], json!("on the server"));
    assert_eq!(
        result["got"]["_attachments"]["s.txt"]["data"],
        json!(b64(&server_text))
    );
    // What the browser pushed is at the server, attachment byte for byte.
    let pushed = ok("GET", &format!("{db}/from-listed"), BOB, None);
    assert_eq!(pushed["made"], json!("in the browser"));
    let (st, _, bytes) = raw(
        "GET",
        &format!("{db}/from-listed/b.txt"),
        Some(BOB),
        &[],
        &[],
    );
    assert_eq!(
        (st, bytes),
        (200, b"made in the browser at listed".to_vec())
    );
    // From the origin not listed the browser withholds every answer:
    // the sync fails and nothing of it arrives.
    let refused = line("REFUSED ");
    assert_eq!(refused["ok"], json!(false), "{refused}");
    assert_eq!(
        req("GET", &format!("{db}/from-other"), Some(ALICE), None).0,
        404
    );
    assert_eq!(ok("GET", &db, ALICE, None)["doc_count"], json!(2));
}
