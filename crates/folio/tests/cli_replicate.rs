//! `folio db copy SRC DST --replica` and `folio replicate` through the
//! real binary: a replica made and filled, edits on both sides carried
//! both ways, a rerun that carries nothing, a selection formula, and the
//! options that do not apply refused on one line.

mod common;
use common::{fails, folio, json, ok};
use std::collections::BTreeMap;

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

#[test]
fn copy_as_replica_then_replicate_both_ways() {
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path();
    ok(d, &["db", "create", "a.fdb", "--title", "Team"], "");
    let first = ok(
        d,
        &["doc", "put", "a.fdb"],
        r#"{"Subject":"one","Kind":"x"}"#,
    );
    ok(
        d,
        &["doc", "put", "a.fdb"],
        r#"{"Subject":"two","Kind":"y"}"#,
    );

    let copy = json(&ok(d, &["db", "copy", "a.fdb", "b.fdb", "--replica"], ""));
    let a_info = json(&ok(d, &["db", "info", "a.fdb"], ""));
    assert_eq!(copy["database"]["replica_id"], a_info["replica_id"]);
    assert_ne!(copy["database"]["instance_id"], a_info["instance_id"]);
    assert_eq!(copy["database"]["title"], "Team");
    assert_eq!(copy["database"]["note_count"], a_info["note_count"]);
    assert_eq!(
        copy["pull"]["documents"], a_info["note_count"],
        "every note, the ACL note included"
    );
    let doc = json(&ok(d, &["doc", "get", "b.fdb", first.trim()], ""));
    assert_eq!(doc["Subject"], "one");

    ok(
        d,
        &["doc", "update", "b.fdb", first.trim()],
        r#"{"Subject":"one, edited on b"}"#,
    );
    ok(
        d,
        &["doc", "put", "a.fdb"],
        r#"{"Subject":"three","Kind":"x"}"#,
    );
    let both = json(&ok(
        d,
        &["replicate", "a.fdb", "b.fdb", "--direction", "both"],
        "",
    ));
    assert_eq!(
        both["pulls"][0]["documents"], 1,
        "the new document, a into b"
    );
    assert_eq!(both["pulls"][1]["documents"], 1, "the edit, b into a");
    let doc = json(&ok(d, &["doc", "get", "a.fdb", first.trim()], ""));
    assert_eq!(doc["Subject"], "one, edited on b");
    let list_a = documents(&ok(d, &["doc", "list", "a.fdb"], ""));
    assert_eq!(list_a.len(), 3);
    assert_eq!(
        list_a,
        documents(&ok(d, &["doc", "list", "b.fdb"], "")),
        "identical documents"
    );

    for (src, dst) in [("a.fdb", "b.fdb"), ("b.fdb", "a.fdb")] {
        let rerun = json(&ok(d, &["replicate", src, dst, "--direction", "both"], ""));
        for p in rerun["pulls"].as_array().unwrap() {
            assert_eq!(p["documents"], 0, "a rerun carries nothing: {p}");
        }
    }
}

#[test]
fn a_selection_formula_and_refused_options() {
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path();
    ok(d, &["db", "create", "a.fdb"], "");
    ok(
        d,
        &["doc", "put", "a.fdb"],
        r#"{"Subject":"keep","Kind":"x"}"#,
    );
    ok(
        d,
        &["doc", "put", "a.fdb"],
        r#"{"Subject":"skip","Kind":"y"}"#,
    );
    ok(d, &["db", "create", "other.fdb"], "");

    // A plain copy is a new database, not a replica.
    ok(d, &["db", "copy", "a.fdb", "plain.fdb"], "");
    fails(
        d,
        &["replicate", "a.fdb", "plain.fdb"],
        "",
        "is not a replica of a.fdb",
    );
    fails(
        d,
        &["replicate", "c.fdb", "a.fdb", "--create"],
        "",
        "--create makes a local replica of a server database",
    );
    fails(
        d,
        &["replicate", "a.fdb", "other.fdb"],
        "",
        "is not a replica of a.fdb",
    );
    let sideways = folio(
        d,
        &["replicate", "a.fdb", "b.fdb", "--direction", "sideways"],
        "",
    );
    assert!(!sideways.status.success());
    assert!(String::from_utf8_lossy(&sideways.stderr).contains("invalid value 'sideways'"));
    fails(
        d,
        &["replicate", "a.fdb", "a.fdb"],
        "",
        "cannot replicate with itself",
    );

    // An empty replica, then a selective pull into it.
    let made = json(&ok(d, &["db", "copy", "a.fdb", "b.fdb", "--replica"], ""));
    assert_eq!(made["pull"]["documents"], made["database"]["note_count"]);
    ok(
        d,
        &["doc", "put", "a.fdb"],
        r#"{"Subject":"new x","Kind":"x"}"#,
    );
    ok(
        d,
        &["doc", "put", "a.fdb"],
        r#"{"Subject":"new y","Kind":"y"}"#,
    );
    fails(
        d,
        &["replicate", "a.fdb", "b.fdb", "--selection", "SELECT ("],
        "",
        "selection formula",
    );
    let pulled = json(&ok(
        d,
        &[
            "replicate",
            "a.fdb",
            "b.fdb",
            "--selection",
            r#"SELECT Kind = "x""#,
        ],
        "",
    ));
    assert_eq!(pulled["pulls"][0]["documents"], 1);
    let b = ok(d, &["doc", "list", "b.fdb"], "");
    assert!(b.contains("new x") && !b.contains("new y"), "{b}");
}
