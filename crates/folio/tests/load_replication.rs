//! `folio load replication` end to end: the real binary starts its own
//! source server, replicates a tiny corpus over a LAN link and a
//! rate-limited one per compression variant, then a small "large"
//! database, and writes its result. Asserted: the documents that
//! travelled, compression shrinking the wire, each timed pull no faster
//! than its bytes at the link's rate (a lower bound, which cannot flake),
//! the nothing-changed rerun within its targets, and bad options refused.

mod common;
use common::json;
use std::process::Command;

const DOCS: u64 = 20;
const ADD: u64 = 5;
const LARGE: u64 = 400;

#[test]
fn a_tiny_replication_run_measures_every_variant_and_link() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("out");
    let o = Command::new(env!("CARGO_BIN_EXE_folio"))
        .args(["load", "replication", "--scenario", "links,large"])
        .args(["--corpus-mb", "0.3", "--docs", &DOCS.to_string()])
        .args(["--add", &ADD.to_string(), "--link", "lan,4mbit"])
        .args(["--large-docs", &LARGE.to_string()])
        .args([
            "--network-compression",
            "zstd:19",
            "--attachment-level",
            "9",
        ])
        .arg("--dir")
        .arg(tmp.path())
        .arg("--out")
        .arg(&out)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let r = json(&std::fs::read_to_string(out.join("result.json")).unwrap());
    assert_eq!(r["workload"], "replication");
    let settings = &r["settings"];
    assert_eq!(settings["attachment level"], 9);
    assert!(
        settings["network compression"]
            .as_str()
            .is_some_and(|s| s.starts_with("zstd:19")),
        "{settings}"
    );
    let parts = &r["links"]["corpus"]["parts"];
    for part in ["bodies", "text attachments", "random attachments"] {
        let p = &parts[part];
        let (bytes, best) = (
            p["bytes"].as_u64().unwrap(),
            p["zstd19_one_stream"].as_u64().unwrap(),
        );
        assert!(
            best > 0 && p["zstd3_each"].as_u64().unwrap() >= best,
            "{part}: {p}"
        );
        if part == "random attachments" {
            assert!(best >= bytes, "random does not shrink: {p}");
        } else {
            assert!(best < bytes / 2, "{part} compresses: {p}");
        }
    }
    let rows = r["links"]["rows"].as_array().unwrap();
    assert_eq!(rows.len(), 2 * 3 * 2, "scenario × link × variant");
    let find = |scenario: &str, link: &str, variant: &str| {
        rows.iter()
            .find(|x| x["scenario"] == scenario && x["link"] == link && x["variant"] == variant)
            .unwrap_or_else(|| panic!("{scenario} {link} {variant}"))
    };
    for link in ["lan", "4mbit"] {
        for variant in ["off", "network", "network + attachment"] {
            let created = find("create replica", link, variant);
            let added = find("incremental", link, variant);
            if let Some(why) = created["unavailable"].as_str() {
                assert_eq!(variant, "network + attachment", "{why}");
                assert!(why.contains("attachment_compression"), "{why}");
                continue;
            }
            // The corpus and its database's ACL note; then the added ones.
            assert_eq!(created["pull"]["documents"], DOCS + 1, "{link} {variant}");
            assert_eq!(added["pull"]["documents"], ADD, "{link} {variant}");
            let expected = if variant == "off" { "off" } else { "strong" };
            assert_eq!(created["pull"]["compression"], expected);
            if link == "4mbit" {
                // Downstream bytes at 500,000 bytes/s, plus one delay.
                for row in [created, added] {
                    let down = row["pull"]["wire_bytes_down"].as_f64().unwrap();
                    let floor = down / 500_000.0 + 0.05;
                    assert!(row["seconds"].as_f64().unwrap() >= floor, "{row}");
                }
            }
        }
        let off = find("create replica", link, "off")["wire_bytes"]
            .as_u64()
            .unwrap();
        let net = find("create replica", link, "network");
        assert!(net["wire_bytes"].as_u64().unwrap() < off * 9 / 10, "{net}");
        assert!(net["bytes_saved_percent"].as_f64().unwrap() > 10.0, "{net}");
    }
    let best = r["links"]["corpus"]["best_compressed_bytes"]
        .as_u64()
        .unwrap();
    assert!(best > 0 && best < r["links"]["corpus"]["bytes"].as_u64().unwrap());

    let large = &r["large"];
    assert!(large["create"]["documents"].as_u64().unwrap() >= LARGE);
    assert!(large["create_documents_per_s"].as_f64().unwrap() > 0.0);
    let rerun = &large["nothing_changed"];
    assert_eq!(rerun["documents"], 0, "nothing travels again");
    assert!(rerun["round_trips"].as_u64().unwrap() <= 4, "{rerun}");
    assert!(
        rerun["session_wire_bytes"].as_u64().unwrap() <= 2048,
        "{rerun}"
    );

    let html = std::fs::read_to_string(out.join("report.html")).unwrap();
    for needle in [
        "Scenario: create replica",
        "Scenario: incremental",
        "Large database",
        "<svg",
    ] {
        assert!(html.contains(needle), "{needle} in the report");
    }
}

#[test]
fn bad_options_are_refused_before_anything_runs() {
    let tmp = tempfile::tempdir().unwrap();
    for (args, needle) in [
        (vec!["--link", "56kb"], "link \"56kb\""),
        (vec!["--corpus-mb", "0"], "--corpus-mb"),
        (vec!["--docs", "0"], "--docs must be at least 1"),
        (
            vec!["--network-compression", "lz4"],
            "--network-compression lz4",
        ),
        (vec!["--network-compression", "zstd:20"], "1 to 19"),
        (vec!["--attachment-level", "0"], "--attachment-level 0"),
    ] {
        let o = Command::new(env!("CARGO_BIN_EXE_folio"))
            .args(["load", "replication"])
            .args(&args)
            .arg("--out")
            .arg(tmp.path().join("out"))
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(
            !o.status.success() && err.contains(needle),
            "{args:?}: {err}"
        );
    }
    let o = Command::new(env!("CARGO_BIN_EXE_folio"))
        .args(["--compression", "zstd", "load", "replication"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        !o.status.success() && err.contains("--compression does not apply"),
        "{err}"
    );
    assert!(!tmp.path().join("out").exists(), "nothing written");
}
