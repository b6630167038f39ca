//! Running the real `folio` binary from the end-to-end tests.
#![allow(dead_code)] // each test binary uses its own subset

use std::io::Write;
use std::path::Path;
use std::process::{Command, Output, Stdio};

pub fn folio(data: &Path, args: &[&str], stdin: &str) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_folio"))
        .arg("--data")
        .arg(data)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(stdin.as_bytes())
        .unwrap();
    child.wait_with_output().unwrap()
}

pub fn ok(data: &Path, args: &[&str], stdin: &str) -> String {
    let o = folio(data, args, stdin);
    assert!(
        o.status.success(),
        "{args:?} failed: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8(o.stdout).unwrap()
}

/// Fails with exactly one line on stderr containing `needle`.
pub fn fails(data: &Path, args: &[&str], stdin: &str, needle: &str) {
    let o = folio(data, args, stdin);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success(), "{args:?} should fail");
    assert_eq!(err.trim_end().lines().count(), 1, "one line: {err:?}");
    assert!(
        err.contains(needle),
        "{args:?}: expected {needle:?} in {err:?}"
    );
}

pub fn json(s: &str) -> serde_json::Value {
    serde_json::from_str(s).unwrap()
}
