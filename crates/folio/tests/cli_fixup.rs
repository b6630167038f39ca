//! `folio fixup` through the real binary: a dry run writes nothing, a
//! fixup gives a new instance id, a damaged attachment is reported and
//! the exit status says something was lost, and `--server` is refused.

mod common;
use common::{fails, folio, json, ok};
use std::io::{Read, Seek, SeekFrom, Write};

const PAGE: u64 = 8192;

fn instance(d: &std::path::Path) -> String {
    json(&ok(d, &["db", "info", "a.fdb"], ""))["instance_id"]
        .as_str()
        .unwrap()
        .to_string()
}

#[test]
fn fixup_reports_repairs_and_exits_non_zero_on_loss() {
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path();
    ok(d, &["db", "create", "a.fdb", "--title", "A"], "");
    let unids: Vec<String> = (0..3)
        .map(|i| {
            ok(d, &["doc", "put", "a.fdb"], &format!(r#"{{"N":{i}}}"#))
                .trim()
                .to_string()
        })
        .collect();
    let file = d.join("big.bin");
    // Under 4 KiB: kept in blob pages, which this test damages.
    std::fs::write(&file, vec![9u8; 4_000]).unwrap();
    ok(
        d,
        &["attach", "put", "a.fdb", &unids[0], file.to_str().unwrap()],
        "",
    );

    let before = instance(d);
    let bytes = std::fs::read(d.join("a.fdb")).unwrap();
    let dry = ok(d, &["fixup", "a.fdb", "--dry-run"], "");
    assert!(dry.contains("dry run") && dry.contains("0 lost"), "{dry}");
    assert_eq!(
        std::fs::read(d.join("a.fdb")).unwrap(),
        bytes,
        "a dry run writes nothing"
    );
    assert_eq!(instance(d), before);

    let clean = ok(d, &["fixup", "a.fdb"], "");
    assert!(clean.contains("new backup"), "{clean}");
    let after = instance(d);
    assert_ne!(after, before, "a new instance id");

    // Damage the first attachment (blob) page.
    let mut f = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(d.join("a.fdb"))
        .unwrap();
    let pages = f.metadata().unwrap().len() / PAGE;
    let mut blob = None;
    for p in 1..pages {
        let mut kind = [0u8; 1];
        f.seek(SeekFrom::Start(p * PAGE + 4)).unwrap();
        f.read_exact(&mut kind).unwrap();
        if kind[0] == 6 {
            blob = Some(p);
            break;
        }
    }
    let blob = blob.expect("an attachment page");
    f.seek(SeekFrom::Start(blob * PAGE + 3000)).unwrap();
    f.write_all(b"not what was written").unwrap();
    drop(f);

    let out = folio(d, &["fixup", "a.fdb"], "");
    assert!(
        !out.status.success(),
        "something was lost: the exit status says so"
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stdout.contains("big.bin") && stdout.contains(&format!("page {blob}")),
        "{stdout}"
    );
    assert!(stderr.contains("1 attachment(s)"), "{stderr}");
    assert_ne!(instance(d), after);
    for (i, u) in unids.iter().enumerate() {
        let doc = json(&ok(d, &["doc", "get", "a.fdb", u], ""));
        assert_eq!(
            doc["N"],
            serde_json::json!(i as f64),
            "every document is still there"
        );
    }
    ok(d, &["doc", "put", "a.fdb"], r#"{"N":9}"#);
    let again = ok(d, &["fixup", "a.fdb"], "");
    assert!(again.contains("0 bad"), "{again}");

    fails(
        d,
        &["--server", "127.0.0.1:1", "fixup", "a.fdb"],
        "",
        "without --server",
    );
    fails(d, &["fixup", "nope.fdb"], "", "nope.fdb");
}
