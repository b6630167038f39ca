//! The console in a real browser: headless Chromium driven by Python
//! Selenium (`tests/browser/*.py`; Debian's `chromium`,
//! `chromium-driver` and `python3-selenium`, installed by
//! `scripts/install-console-tools.sh`), against `folio serve`:
//!
//! - `console.py`: signs in, watches the dashboard move during `folio
//!   load commit`, and checks that a Subject made of HTML shows as text;
//! - `console_manage.py`: an administrator creates, copies, compacts and
//!   deletes databases, pages through a view and a folder, downloads an
//!   attachment, edits a document into a save conflict (409, nothing
//!   overwritten), and administers server and mail users;
//! - `console_reader.py`: a Reader is offered no change, is refused one
//!   she forces (the page shows the refusal), and never sees a document
//!   `$Readers` hides from her, in any list or count.
//!
//! A missing tool is installed by that script the first time; where it
//! cannot be (not root, no network), the test says loudly that it is
//! skipped. Screenshots go to `FOLIO_CONSOLE_SCREENSHOTS` (docs/console/
//! holds a checked set), or a temporary directory.

mod common;

use common::{Server, ADMIN_PW};
use std::path::Path;
use std::process::Command;

const XSS: &str = "<img src=x onerror=alert(1)>";

/// The Python with Selenium: FOLIO_PYTHON, or Debian's.
fn python() -> String {
    std::env::var("FOLIO_PYTHON").unwrap_or_else(|_| "/usr/bin/python3".into())
}

/// Whether the browser tools are there (installed by the project's
/// script the first time they are missing); if they cannot be, says
/// loudly that the test is skipped.
fn tools_present() -> bool {
    match common::console_tools() {
        Ok(()) => true,
        Err(why) => {
            eprintln!("\n*** WARNING: the console browser test is SKIPPED: {why} ***\n");
            false
        }
    }
}

#[test]
fn the_console_in_chromium_signs_in_charts_the_load_and_escapes_items() {
    if !tools_present() {
        return;
    }
    let tmp = common::users_dir(&[]);
    let srv = Server::start(tmp.path());
    let admin = srv.admin();
    admin.create_database("xss.fdb", "Hostile titles").unwrap();
    let (db, _) = admin.open_database("xss.fdb").unwrap();
    let doc = serde_json::json!({"Subject": XSS, "Body": "an ordinary body"});
    admin.create_document(db, &doc.to_string()).unwrap();
    let shots = match std::env::var("FOLIO_CONSOLE_SCREENSHOTS") {
        Ok(dir) => std::path::PathBuf::from(dir),
        Err(_) => tmp.path().join("screenshots"),
    };
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/browser/console.py");
    let out = Command::new(python())
        .arg(&script)
        .arg(format!("http://{}", srv.http))
        .arg(ADMIN_PW)
        .arg(&shots)
        .arg(env!("CARGO_BIN_EXE_folio"))
        .arg(&srv.native)
        .output()
        .unwrap();
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "the browser test failed:\n{said}");
    assert!(said.contains("console browser test passed"), "{said}");
    eprintln!("{said}");
}

/// Where screenshots go: `FOLIO_CONSOLE_SCREENSHOTS`, or under `tmp`.
fn screenshots(tmp: &Path) -> std::path::PathBuf {
    match std::env::var("FOLIO_CONSOLE_SCREENSHOTS") {
        Ok(dir) => std::path::PathBuf::from(dir),
        Err(_) => tmp.join("screenshots"),
    }
}

/// Runs `tests/browser/{script}` with `args`; fails the test unless it
/// passed (it prints `{passed}`).
fn browser(script: &str, args: &[&str], passed: &str) {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/browser")
        .join(script);
    let out = Command::new(python())
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
}

/// An HTTP call as the administrator (a `null` body sends none); the
/// answer's JSON.
fn http(srv: &Server, method: &str, path: &str, body: &serde_json::Value) -> serde_json::Value {
    let body = match body {
        serde_json::Value::Null => String::new(),
        b => b.to_string(),
    };
    http_bytes(srv, method, path, "application/json", body.as_bytes())
}

fn http_bytes(
    srv: &Server,
    method: &str,
    path: &str,
    content_type: &str,
    body: &[u8],
) -> serde_json::Value {
    let auth = base64::Engine::encode(
        &base64::engine::general_purpose::STANDARD,
        format!("admin:{ADMIN_PW}"),
    );
    let r = ureq::request(method, &format!("http://{}{path}", srv.http))
        .set("Authorization", &format!("Basic {auth}"))
        .set("Content-Type", content_type)
        .send_bytes(body)
        .unwrap_or_else(|e| panic!("{method} {path}: {e}"));
    serde_json::from_str(&r.into_string().unwrap()).unwrap()
}

#[test]
fn the_console_creates_copies_compacts_deletes_edits_and_administers_users() {
    if !tools_present() {
        return;
    }
    let tmp = common::users_dir(&["carol"]);
    let srv = Server::start(tmp.path());
    http(
        &srv,
        "PUT",
        "/db/crm.fdb",
        &serde_json::json!({"title": "Customers"}),
    );
    let mut unids = Vec::new();
    for i in 0..60 {
        let doc = if i == 0 {
            serde_json::json!({"Subject": "Customer 00", "Revenue": 1000, "Tags": ["gold", "emea"],
                "Due": {"$type": "datetime", "v": "2030-01-31T12:00:00Z"},
                "Notes": {"$type": "richtext", "v": "# Renewal"}})
        } else {
            serde_json::json!({"Subject": format!("Customer {i:02}")})
        };
        let made = http(&srv, "POST", "/db/crm.fdb/docs", &doc);
        unids.push(made["unid"].as_str().unwrap().to_string());
    }
    let attachment = "the contract, plain text\n".repeat(40);
    http_bytes(
        &srv,
        "PUT",
        &format!("/db/crm.fdb/docs/{}/attachments/contract.txt", unids[0]),
        "text/plain",
        attachment.as_bytes(),
    );
    http(
        &srv,
        "POST",
        "/db/crm.fdb/views",
        &serde_json::json!({"name": "By subject", "kind": "view", "selection": "SELECT @All",
            "columns": [{"title": "Subject", "formula": "Subject", "sort": "asc"},
                        {"title": "Revenue", "formula": "Revenue"}]}),
    );
    http(
        &srv,
        "POST",
        "/db/crm.fdb/views",
        &serde_json::json!({"name": "Key accounts", "kind": "folder",
            "columns": [{"title": "Subject", "formula": "Subject"}]}),
    );
    http(
        &srv,
        "POST",
        "/db/crm.fdb/folders/Key%20accounts/add",
        &serde_json::json!({"unids": [unids[0], unids[1]]}),
    );
    let setup = serde_json::json!({"doc": unids[0], "attachment": attachment});
    let shots = screenshots(tmp.path());
    browser(
        "console_manage.py",
        &[
            &format!("http://{}", srv.http),
            ADMIN_PW,
            shots.to_str().unwrap(),
            &setup.to_string(),
        ],
        "console manage test passed",
    );
}

#[test]
fn a_reader_in_the_console_changes_nothing_and_sees_no_hidden_document() {
    if !tools_present() {
        return;
    }
    let tmp = common::users_dir(&["rita"]);
    let srv = Server::start(tmp.path());
    http(
        &srv,
        "PUT",
        "/db/team.fdb",
        &serde_json::json!({"title": "Team"}),
    );
    http(
        &srv,
        "PUT",
        "/db/team.fdb/_acl",
        &serde_json::json!({"entries": [{"name": "admin", "level": "manager"},
                                        {"name": "rita", "level": "reader"}]}),
    );
    let open = http(
        &srv,
        "POST",
        "/db/team.fdb/docs",
        &serde_json::json!({"Subject": "Open agenda"}),
    )["unid"]
        .as_str()
        .unwrap()
        .to_string();
    let secret = "Secret salaries";
    let hidden = http(
        &srv,
        "POST",
        "/db/team.fdb/docs",
        &serde_json::json!({"Subject": secret, "$Readers": ["admin"]}),
    )["unid"]
        .as_str()
        .unwrap()
        .to_string();
    http(
        &srv,
        "POST",
        "/db/team.fdb/views",
        &serde_json::json!({"name": "By subject", "kind": "view", "selection": "SELECT @All",
            "columns": [{"title": "Subject", "formula": "Subject", "sort": "asc"}]}),
    );
    http(
        &srv,
        "POST",
        "/db/team.fdb/views",
        &serde_json::json!({"name": "Pinned", "kind": "folder",
            "columns": [{"title": "Subject", "formula": "Subject"}]}),
    );
    http(
        &srv,
        "POST",
        "/db/team.fdb/folders/Pinned/add",
        &serde_json::json!({"unids": [open, hidden]}),
    );
    let setup = serde_json::json!({"open": open, "hidden": hidden, "secret": secret});
    let shots = screenshots(tmp.path());
    browser(
        "console_reader.py",
        &[
            &format!("http://{}", srv.http),
            "rita-password",
            shots.to_str().unwrap(),
            &setup.to_string(),
        ],
        "console reader test passed",
    );
    // Nothing she tried changed the document.
    let doc = http(
        &srv,
        "GET",
        &format!("/db/team.fdb/docs/{open}"),
        &serde_json::Value::Null,
    );
    assert_eq!(doc["Subject"], "Open agenda");
    assert_eq!(doc["$seq"], 1, "{doc}");
}
