//! Format fixtures (design.md §13): data directories written by earlier
//! releases' code, checked in under `tests/fixtures/format-vN/`, opened by
//! today's code. A format change that breaks one fails here, so changing
//! a format is a deliberate upgrade (a new version, a converter, a new
//! fixture beside the old one), never an accident.
//!
//! Each fixture holds `data/` (a database `fx.fdb` with documents, an
//! attachment, a view, a folder, a deletion stub and an ACL; its catalog;
//! the transaction log), `unids.txt`, and `expected/` (what `folio dump`
//! printed for it when it was made). Made by
//! `scripts/make-format-fixtures.sh`.

mod common;
use common::{fails, json, ok};
use std::path::{Path, PathBuf};
use std::process::Command;

fn fixture(version: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(version)
}

fn unid(fx: &Path, subject: &str) -> String {
    let list = std::fs::read_to_string(fx.join("unids.txt")).unwrap();
    list.lines()
        .find_map(|l| l.strip_prefix(&format!("{subject} ")))
        .unwrap()
        .to_string()
}

/// A copy of the fixture's data directory (opening it writes: recovery,
/// checkpoints), so the checked-in files never change.
fn copy_of(fx: &Path) -> tempfile::TempDir {
    let tmp = tempfile::tempdir().unwrap();
    copy_dir(&fx.join("data"), tmp.path());
    tmp
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        let dest = to.join(e.file_name());
        if e.file_type().unwrap().is_dir() {
            copy_dir(&e.path(), &dest);
        } else {
            std::fs::copy(e.path(), dest).unwrap();
        }
    }
}

fn dump(args: &[&str]) -> String {
    let o = Command::new(env!("CARGO_BIN_EXE_folio"))
        .arg("dump")
        .args(args)
        .output()
        .unwrap();
    assert!(
        o.status.success(),
        "dump {args:?}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8(o.stdout).unwrap()
}

fn files_of(dir: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            out.extend(files_of(&p));
        } else {
            out.push((p.clone(), std::fs::read(&p).unwrap()));
        }
    }
    out.sort();
    out
}

#[test]
fn format_v1_opens_with_its_documents_views_attachment_and_acl() {
    let fx = fixture("format-v1");
    let tmp = copy_of(&fx);
    let d = tmp.path();
    let (a, b, c) = (unid(&fx, "alpha"), unid(&fx, "bravo"), unid(&fx, "charlie"));
    let doc = json(&ok(d, &["doc", "get", "fx.fdb", &b], ""));
    assert_eq!(doc["Subject"], "bravo");
    assert_eq!(doc["Tags"], serde_json::json!(["x", "y"]));
    fails(d, &["doc", "get", "fx.fdb", &c], "", "was deleted");
    let rows: Vec<_> = ok(d, &["view", "read", "fx.fdb", "BySubject"], "")
        .lines()
        .map(json)
        .collect();
    let subjects: Vec<_> = rows
        .iter()
        .map(|r| r["columns"]["Subject"].clone())
        .collect();
    assert_eq!(subjects, ["alpha", "bravo"]);
    assert_eq!(rows[0]["unid"], a.as_str());
    let pinned = ok(d, &["view", "read", "fx.fdb", "Pinned"], "");
    assert_eq!(json(pinned.trim())["unid"], b.as_str());
    let o = common::folio(d, &["attach", "get", "fx.fdb", &a, "a.txt"], "");
    assert!(o.status.success());
    assert_eq!(o.stdout, vec![b'A'; 20_000]);
    let acl = json(&ok(d, &["acl", "show", "fx.fdb"], ""));
    assert_eq!(acl["default"], "reader");
    let check = json(&ok(d, &["db", "check", "fx.fdb"], ""));
    assert_eq!(
        (check["notes"].clone(), check["stubs"].clone()),
        (5.into(), 1.into())
    );
    // Today's code can go on writing to it.
    let e = ok(
        d,
        &["doc", "put", "fx.fdb"],
        r#"{"Form":"Memo","Subject":"delta"}"#,
    );
    assert_eq!(e.trim().len(), 32);
    let rows = ok(d, &["view", "read", "fx.fdb", "BySubject"], "");
    assert_eq!(rows.lines().count(), 3);
}

#[test]
fn format_v1_dumps_as_it_did_and_dumping_changes_nothing() {
    let fx = fixture("format-v1");
    let before = files_of(&fx.join("data"));
    let db = fx.join("data/fx.fdb");
    let log = fx.join("data/translog");
    let db = db.to_str().unwrap();
    let cases = [
        ("dump-db.json", dump(&["db", db])),
        ("dump-page-0.json", dump(&["page", db, "0"])),
        ("dump-log.json", dump(&["log", log.to_str().unwrap()])),
    ];
    for (name, got) in cases {
        let want = std::fs::read_to_string(fx.join("expected").join(name)).unwrap();
        assert_eq!(got, want, "{name} differs from the fixture's");
    }
    let d = json(&dump(&["db", db]));
    assert_eq!(d["notes"]["stubs"], 1);
    assert_eq!(d["notes"]["attachment_bytes"], 20_000);
    assert_eq!(d["pages"]["bad"], serde_json::json!([]));
    assert_eq!(
        files_of(&fx.join("data")),
        before,
        "a dump wrote to the fixture"
    );
}

#[test]
fn dumps_of_damaged_or_missing_files_fail_with_one_line_naming_the_place() {
    let fx = fixture("format-v1");
    let tmp = copy_of(&fx);
    let db = tmp.path().join("fx.fdb");
    let mut bytes = std::fs::read(&db).unwrap();
    bytes[8192 + 3000] ^= 0xFF;
    std::fs::write(&db, bytes).unwrap();
    let dbs = db.to_str().unwrap();
    let bad = json(&dump(&["page", dbs, "1"]));
    assert_eq!(bad["problem"], "checksum mismatch");
    let nowhere = tempfile::tempdir().unwrap();
    let n = nowhere.path().to_str().unwrap();
    dump_fails(&["page", dbs, "4000"], "page 4000 is past the end");
    dump_fails(&["db", dbs], "page 1: checksum mismatch");
    dump_fails(&["log", n], "control");
    fails(
        tmp.path(),
        &["dump", "db", dbs],
        "",
        "--data does not apply to dump",
    );
}

/// A dump that fails with exactly one line on stderr containing `needle`.
fn dump_fails(args: &[&str], needle: &str) {
    let o = Command::new(env!("CARGO_BIN_EXE_folio"))
        .arg("dump")
        .args(args)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success(), "dump {args:?} should fail");
    assert_eq!(err.trim_end().lines().count(), 1, "one line: {err:?}");
    assert!(
        err.contains(needle),
        "dump {args:?}: {needle:?} not in {err:?}"
    );
}
