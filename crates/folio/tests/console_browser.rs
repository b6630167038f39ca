//! The console in a real browser: headless Chromium driven by Python
//! Selenium (`tests/browser/console.py`; Debian's `chromium`,
//! `chromium-driver` and `python3-selenium`, installed by
//! `scripts/install-console-tools.sh`). Signs in, watches the dashboard
//! move during `folio load commit`, and checks that a Subject made of
//! HTML shows as text. A missing tool is installed by that script the
//! first time; where it cannot be (not root, no network), the test says
//! loudly that it is skipped. Screenshots go
//! to `FOLIO_CONSOLE_SCREENSHOTS` (docs/console/ holds a checked set), or
//! a temporary directory.

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
