//! Fixup and the views layer: `folio fixup` rebuilds every view index
//! from the repaired note table and names it in its report; an automatic
//! fixup at start-up does the same, and `show stats` tells how many
//! databases were fixed up, the last one, and that a new backup is needed.

mod common;
use common::{json, ok, Server};

fn setup(d: &std::path::Path) {
    ok(d, &["db", "create", "a.fdb", "--title", "A"], "");
    ok(
        d,
        &[
            "view",
            "create",
            "a.fdb",
            "Subjects",
            "--select",
            "SELECT @All",
            "--column",
            "Subject=Subject:asc",
        ],
        "",
    );
    for s in ["pear", "apple", "fig"] {
        ok(
            d,
            &["doc", "put", "a.fdb"],
            &format!(r#"{{"Subject":"{s}"}}"#),
        );
    }
}

#[test]
fn fixup_rebuilds_view_indexes_and_names_them() {
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path();
    setup(d);
    let report = ok(d, &["fixup", "a.fdb"], "");
    assert!(report.contains("view subjects"), "{report}");
    let rows = ok(d, &["view", "read", "a.fdb", "Subjects"], "");
    for s in ["apple", "fig", "pear"] {
        assert!(rows.contains(s), "{rows}");
    }
    let dry = ok(d, &["fixup", "a.fdb", "--dry-run"], "");
    assert!(
        !dry.contains("view subjects"),
        "a dry run rebuilds nothing: {dry}"
    );
}

#[test]
fn an_automatic_fixup_at_start_shows_in_stats_and_asks_for_a_backup() {
    let tmp = common::users_dir(&[]);
    let d = tmp.path();
    setup(d);
    let info = json(&ok(d, &["db", "info", "a.fdb"], ""));
    let instance = u64::from_str_radix(info["instance_id"].as_str().unwrap(), 16).unwrap();
    // Mark it as needing fixup, as a failed database is (I29).
    std::fs::write(
        d.join("retired"),
        format!(
            r#"{{"instances":[{{"path":"a.fdb","instance":{instance},"needs_fixup":"a test"}}]}}"#
        ),
    )
    .unwrap();
    let srv = Server::start(d);
    let out = srv.cli(&["show", "stats"], "");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stats = String::from_utf8(out.stdout).unwrap();
    let line = |name: &str| {
        stats
            .lines()
            .find(|l| l.contains(name))
            .unwrap_or_else(|| panic!("{name} missing in {stats}"))
            .to_string()
    };
    assert!(line("fixup.databases_fixed").contains('1'), "{stats}");
    assert!(line("fixup.last_database").contains("a.fdb"), "{stats}");
    assert!(line("fixup.backup_needed").contains("yes"), "{stats}");
    assert!(
        line("fixup.databases_needing_fixup").contains('0'),
        "{stats}"
    );
    let admin = srv.admin();
    let (db, info) = admin.open_database("a.fdb").unwrap();
    assert_ne!(info.instance_id, instance);
    let c = admin.open_collection(db, "Subjects").unwrap();
    assert_eq!(c.count, 3);
}
