//! The view, folder and search commands end to end through the real
//! binary: documented forms work, rows come out in collation order as JSON
//! lines, and bad formulas or unknown views change nothing.

mod common;
use common::{fails, json, ok};
use std::path::Path;

fn lines(s: &str) -> Vec<serde_json::Value> {
    s.lines().map(json).collect()
}

fn put(d: &Path, subject: &str, from: &str, n: u32) -> String {
    let doc = format!(r#"{{"Form":"Memo","Subject":"{subject}","From":"{from}","N":{n}}}"#);
    ok(d, &["doc", "put", "m.fdb"], &doc).trim().to_string()
}

#[test]
fn views_folders_and_search_from_the_command_line() {
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path();
    ok(d, &["db", "create", "m.fdb", "--mail"], "");
    let a = put(d, "banana", "bob", 1);
    let b = put(d, "Apple", "amy", 2);
    let c = put(d, "cherry", "bob", 3);
    ok(
        d,
        &[
            "view",
            "create",
            "m.fdb",
            "BySubject",
            "--select",
            "SELECT N >= 2",
            "--column",
            "Subject=Subject:asc",
            "--column",
            "Who=From",
            "--logged",
        ],
        "",
    );
    let rows = lines(&ok(d, &["view", "read", "m.fdb", "BySubject"], ""));
    let subjects: Vec<&str> = rows
        .iter()
        .map(|r| r["columns"]["Subject"].as_str().unwrap())
        .collect();
    assert_eq!(
        subjects,
        ["Apple", "cherry"],
        "selection and case-insensitive order"
    );
    assert_eq!(rows[0]["unid"], b.as_str());
    assert_eq!(rows[1]["position"], 1);
    // Incremental: a change moves the entry; a new document appears.
    ok(d, &["doc", "update", "m.fdb", &b], r#"{"Subject":"zebra"}"#);
    put(d, "date", "dan", 9);
    let rows = lines(&ok(
        d,
        &[
            "view",
            "read",
            "m.fdb",
            "BySubject",
            "--start",
            "1",
            "--count",
            "5",
        ],
        "",
    ));
    let subjects: Vec<&str> = rows
        .iter()
        .map(|r| r["columns"]["Subject"].as_str().unwrap())
        .collect();
    assert_eq!(subjects, ["date", "zebra"]);
    let rows = lines(&ok(
        d,
        &[
            "view",
            "read",
            "m.fdb",
            "BySubject",
            "--key",
            "DA",
            "--prefix",
        ],
        "",
    ));
    assert_eq!(rows[0]["columns"]["Subject"], "date");
    let found = json(&ok(d, &["view", "find", "m.fdb", "BySubject", "zebra"], ""));
    assert_eq!(
        (found["position"].as_u64(), found["count"].as_u64()),
        (Some(2), Some(1))
    );
    let r = json(&ok(d, &["view", "rebuild", "m.fdb", "BySubject"], ""));
    assert_eq!(r["documents"], 3);
    assert_eq!(r["restricted_entries"], 0);
    let rows = lines(&ok(
        d,
        &[
            "view",
            "read",
            "m.fdb",
            "BySubject",
            "--count",
            "1",
            "--total",
        ],
        "",
    ));
    assert_eq!(rows.len(), 2);
    assert_eq!(rows[1], json(r#"{"total":3}"#));
    // The mail design: Inbox is a folder, All Documents shows everything.
    ok(d, &["folder", "add", "m.fdb", "Inbox", &a, &c], "");
    let inbox = lines(&ok(d, &["view", "read", "m.fdb", "Inbox"], ""));
    assert_eq!(inbox.len(), 2);
    ok(d, &["folder", "remove", "m.fdb", "Inbox", &a], "");
    let inbox = lines(&ok(d, &["view", "read", "m.fdb", "Inbox"], ""));
    assert_eq!(inbox.len(), 1);
    assert_eq!(inbox[0]["unid"], c.as_str());
    let all = lines(&ok(
        d,
        &["view", "read", "m.fdb", "All Documents", "--count", "100"],
        "",
    ));
    assert_eq!(all.len(), 4, "design notes are not documents");
    let listed = ok(d, &["view", "list", "m.fdb"], "");
    assert_eq!(
        listed.lines().count(),
        7,
        "the six of the mail design (with the hidden (Notices)) and BySubject"
    );
    // Search streams matching documents.
    let hits = lines(&ok(d, &["search", "m.fdb", "SELECT From = \"bob\""], ""));
    assert_eq!(hits.len(), 2);
    let hits = lines(&ok(
        d,
        &[
            "search",
            "m.fdb",
            "@Contains(Subject; \"an\")",
            "--since",
            "2000-01-01T00:00:00Z",
        ],
        "",
    ));
    assert_eq!(hits.len(), 1);
    ok(d, &["db", "check", "m.fdb"], "");
}

#[test]
fn bad_formulas_and_unknown_views_change_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path();
    ok(d, &["db", "create", "m.fdb"], "");
    let a = put(d, "one", "x", 1);
    fails(
        d,
        &[
            "view",
            "create",
            "m.fdb",
            "V",
            "--select",
            "SELECT N >",
            "--column",
            "S=Subject",
        ],
        "",
        "line 1",
    );
    fails(
        d,
        &[
            "view",
            "create",
            "m.fdb",
            "V",
            "--select",
            "SELECT @All",
            "--column",
            "S=@Bogus(1)",
        ],
        "",
        "unknown function",
    );
    fails(
        d,
        &["view", "create", "m.fdb", "V", "--column", "nothing"],
        "",
        "TITLE=FORMULA",
    );
    fails(
        d,
        &[
            "view",
            "create",
            "m.fdb",
            "V",
            "--column",
            "S=Subject",
            "--refresh",
            "often",
        ],
        "",
        "refresh",
    );
    assert_eq!(
        ok(d, &["view", "list", "m.fdb"], ""),
        "",
        "nothing was created"
    );
    fails(
        d,
        &["view", "read", "m.fdb", "Nope"],
        "",
        "no view or folder named \"Nope\"",
    );
    fails(
        d,
        &["search", "m.fdb", "SELECT ((("],
        "",
        "bad search formula",
    );
    ok(
        d,
        &[
            "view",
            "create",
            "m.fdb",
            "V",
            "--select",
            "SELECT @All",
            "--column",
            "S=Subject:asc",
        ],
        "",
    );
    fails(
        d,
        &[
            "view",
            "create",
            "m.fdb",
            "v",
            "--select",
            "SELECT @All",
            "--column",
            "S=Subject",
        ],
        "",
        "already exists",
    );
    fails(d, &["folder", "add", "m.fdb", "V", &a], "", "not a folder");
    ok(
        d,
        &[
            "view",
            "create",
            "m.fdb",
            "F",
            "--folder",
            "--column",
            "S=Subject",
        ],
        "",
    );
    fails(
        d,
        &[
            "folder",
            "add",
            "m.fdb",
            "F",
            &a,
            "00000000000000000000000000000001",
        ],
        "",
        "no document",
    );
    assert_eq!(
        ok(d, &["view", "read", "m.fdb", "F"], ""),
        "",
        "no half-applied folder change"
    );
    fails(
        d,
        &["view", "find", "m.fdb", "F", "x"],
        "",
        "no sorted column",
    );
    ok(d, &["db", "check", "m.fdb"], "");
}
