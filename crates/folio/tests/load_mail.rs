//! `folio load mail` end to end: the real binary prepares mail users,
//! starts its own server, runs the mail script and writes its result;
//! then the kept data directory is opened to see that the work was real
//! (documents updated, deleted and drafted in the mail files, messages
//! delivered to Inboxes). No timing is asserted.

mod common;
use common::{json, ok};
use std::path::Path;
use std::process::Command;

fn lines(s: &str) -> Vec<serde_json::Value> {
    s.lines().map(json).collect()
}

const USERS: usize = 12;
const DOCS: usize = 5;

#[test]
fn a_small_mail_run_does_real_work_and_reports_it() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("out");
    let o = Command::new(env!("CARGO_BIN_EXE_folio"))
        .args([
            "load",
            "mail",
            "--users",
            &USERS.to_string(),
            "--docs",
            &DOCS.to_string(),
        ])
        .args([
            "--max-doc-kib",
            "4",
            "--time-scale",
            "900",
            "--seconds",
            "6",
        ])
        .args(["--connections", "4", "--mailboxes", "3", "--keep-data"])
        .arg("--dir")
        .arg(tmp.path())
        .arg("--out")
        .arg(&out)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let r = json(&std::fs::read_to_string(out.join("result.json")).unwrap());
    assert_eq!(r["workload"], "mail");
    let run = &r["runs"][0];
    assert_eq!(run["users"], USERS);
    assert_eq!(run["prepared"]["docs"], USERS * DOCS);
    assert!(run["trans_per_min"].as_f64().unwrap() > 0.0);
    assert_eq!(run["errors"], json("{}"), "no operation failed");
    let ops = run["response"]["per_operation"].as_object().unwrap();
    for op in [
        "open mail file",
        "open Inbox",
        "read 40 entries",
        "read document",
        "update document",
        "delete document",
        "add draft",
        "send message",
        "close mail file",
    ] {
        assert!(ops[op]["count"].as_u64().unwrap() > 0, "{op} ran");
        assert!(ops[op]["p50_ms"].as_f64().unwrap() <= ops[op]["max_ms"].as_f64().unwrap());
    }
    for k in [
        "cpu_user_percent",
        "cpu_system_percent",
        "bytes_written_data",
        "bytes_written_log",
        "log_fsyncs",
        "rss_bytes_at_end",
        "open_fds_at_end",
    ] {
        assert!(run["server"][k].is_number(), "{k}: {}", run["server"]);
    }
    assert!(run["server"]["delivered"].as_u64().unwrap() > 0);
    assert!(run["deliveries"]["offered"].as_u64().unwrap() > 0);
    assert!(run["driver"]["cpu_percent"].is_number(), "the driver's CPU");
    assert!(run["server"]["rss_bytes_at_end"].as_u64().unwrap() > 0);
    assert!(run["server"]["open_fds_at_end"].as_u64().unwrap() > 0);
    let html = std::fs::read_to_string(out.join("report.html")).unwrap();
    assert!(html.contains("trans/min") && html.contains("<svg"));

    // The mail files afterwards.
    let data = Path::new(run["data_dir"].as_str().unwrap());
    let (mut prefilled, mut refiled, mut drafts, mut delivered) = (0, 0, 0, 0);
    for u in 0..USERS {
        let file = format!("mail/user{u:05}.fdb");
        for d in lines(&ok(data, &["doc", "list", &file], "")) {
            let subject = d["Subject"].as_str().unwrap_or("");
            prefilled += usize::from(subject.starts_with("Prefilled"));
            refiled += usize::from(d["Categories"] == "Re-filed");
        }
        drafts += lines(&ok(data, &["view", "read", &file, "Drafts"], "")).len();
        let inbox = ok(data, &["view", "read", &file, "Inbox"], "");
        delivered += inbox
            .lines()
            .filter(|l| {
                ["Memo ", "Appointment ", "Invitation "]
                    .iter()
                    .any(|k| l.contains(k))
            })
            .count();
    }
    assert!(refiled > 0, "updates stored");
    assert!(prefilled < USERS * DOCS, "deletes stored: {prefilled} left");
    assert!(drafts > 0, "drafts saved");
    assert!(delivered > 0, "messages delivered to Inboxes");
}

/// `--view-logging`: two runs on identical fresh data, every Inbox logged
/// in the first and not in the second, side by side with the ratios
/// (on ÷ off throughout); mail still reaches the logged Inboxes.
#[test]
fn a_view_logging_run_compares_logged_inboxes_with_unlogged_ones() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("out");
    let o = Command::new(env!("CARGO_BIN_EXE_folio"))
        .args(["load", "mail", "--users", "4", "--docs", "3"])
        .args([
            "--max-doc-kib",
            "2",
            "--time-scale",
            "900",
            "--seconds",
            "3",
        ])
        .args(["--connections", "2", "--mailboxes", "2", "--view-logging"])
        .arg("--keep-data")
        .arg("--dir")
        .arg(tmp.path())
        .arg("--out")
        .arg(&out)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let r = json(&std::fs::read_to_string(out.join("result.json")).unwrap());
    assert_eq!(r["mode"], "view-logging");
    let runs = r["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 2);
    assert_eq!(
        (
            runs[0]["inbox_logged"].clone(),
            runs[1]["inbox_logged"].clone()
        ),
        (true.into(), false.into())
    );
    for run in runs {
        assert_eq!(run["logging"], true, "the log is on in both runs");
        assert_eq!(run["errors"], json("{}"));
        assert!(run["server"]["log_bytes_per_transaction"].as_f64().unwrap() > 0.0);
    }
    let c = &r["comparison"];
    assert_eq!(c["compared"], "view-logging");
    let rows = c["rows"].as_array().unwrap();
    for fig in [
        "CPU user %",
        "CPU system %",
        "response p95 ms",
        "response p99 ms",
    ] {
        let row = rows.iter().find(|x| x["figure"] == fig).unwrap();
        assert_eq!(row["ratio_is"], "on ÷ off", "{fig}");
        assert!(
            row["on"].is_number() && row["off"].is_number(),
            "{fig}: {row}"
        );
    }
    let html = std::fs::read_to_string(out.join("report.html")).unwrap();
    assert!(html.contains("View logging on every Inbox"));
    let data = Path::new(runs[0]["data_dir"].as_str().unwrap());
    let delivered: usize = (0..4)
        .map(|u| {
            let file = format!("mail/user{u:05}.fdb");
            ok(data, &["view", "read", &file, "Inbox"], "")
                .lines()
                .filter(|l| l.contains("Memo ") || l.contains("Invitation "))
                .count()
        })
        .sum();
    assert!(delivered > 0, "mail delivered into the logged Inboxes");
}

/// `--compare-logging --sweep`: both arms at every count on fresh data,
/// the arm that runs first alternating; each arm's points and capacity
/// in result.json, and the page opens with the per-count summary.
#[test]
fn a_compared_sweep_runs_both_arms_per_count_and_reports_each_capacity() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("out");
    let o = Command::new(env!("CARGO_BIN_EXE_folio"))
        .args(["load", "mail", "--compare-logging", "--sweep", "3,5"])
        .args(["--docs", "3", "--max-doc-kib", "2", "--attach-percent", "0"])
        .args(["--time-scale", "900", "--seconds", "3"])
        .args(["--connections", "2", "--mailboxes", "2"])
        .arg("--dir")
        .arg(tmp.path())
        .arg("--out")
        .arg(&out)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let r = json(&std::fs::read_to_string(out.join("result.json")).unwrap());
    assert_eq!(r["mode"], "compare-logging sweep");
    let runs = r["runs"].as_array().unwrap();
    let order: Vec<(u64, bool, u64)> = runs
        .iter()
        .map(|x| {
            (
                x["users"].as_u64().unwrap(),
                x["logging"].as_bool().unwrap(),
                x["turn"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        order,
        [(3, true, 1), (3, false, 2), (5, false, 1), (5, true, 2)],
        "both arms per count, the first alternating"
    );
    for run in runs {
        assert_eq!(run["errors"], json("{}"), "{}", run["label"]);
        assert!(
            run["deliveries"]["offered"].is_u64(),
            "{}",
            run["deliveries"]
        );
        assert!(run["deliveries"]["delivered"].is_u64());
        assert!(run["driver"]["cpu_percent"].as_f64().unwrap() >= 0.0);
        let server = run["server"].as_object().unwrap();
        assert!(server["cpu_percent"].is_number());
        // A number where the data directory is on a block device, null
        // where it is not (tmpfs); never the write calls' figure.
        assert!(server.contains_key("device_bytes_written"));
        assert!(!server.contains_key("proc_write_bytes"));
    }
    let arms = r["sweep"]["arms"].as_array().unwrap();
    assert_eq!(arms.len(), 2);
    for (arm, logging) in arms.iter().zip([true, false]) {
        assert_eq!(arm["logging"], logging);
        let users: Vec<u64> = arm["points"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| p["users"].as_u64().unwrap())
            .collect();
        assert_eq!(users, [3, 5]);
        assert!(arm.as_object().unwrap().contains_key("capacity_users"));
        for p in arm["points"].as_array().unwrap() {
            assert!(p["met"].is_boolean() && p["missed"].is_array(), "{p}");
        }
    }
    assert!(r["sweep"]
        .as_object()
        .unwrap()
        .contains_key("capacity_ratio_on_over_off"));
    let html = std::fs::read_to_string(out.join("report.html")).unwrap();
    let at = |s: &str| html.find(s).unwrap_or_else(|| panic!("no {s:?}"));
    assert!(
        at("Summary per user count") < at("<table"),
        "the summary first"
    );
    assert!(at("<table") < at("Capacity per arm"));
    assert!(at("Capacity per arm") < at("Settings"));
    assert!(at("Response time p95 against users") < at("Trans/min against users"));
    assert_eq!(
        std::fs::read_dir(tmp.path()).unwrap().count(),
        1,
        "the data directories are gone, the report stays"
    );
}

/// `folio load mail ARGS` fails with one line containing `needle`.
fn refused(dir: &Path, args: &[&str], needle: &str) {
    let o = Command::new(env!("CARGO_BIN_EXE_folio"))
        .args(["load", "mail", "--dir"])
        .arg(dir)
        .args(args)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success(), "{args:?} should fail");
    assert_eq!(err.trim_end().lines().count(), 1, "one line: {err:?}");
    assert!(err.contains(needle), "{args:?}: {needle:?} not in {err:?}");
}

#[test]
fn view_logging_is_its_own_run_against_servers_the_tool_starts() {
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path();
    let separate = "--view-logging is a run of its own";
    refused(d, &["--view-logging", "--compare-logging"], separate);
    refused(d, &["--view-logging", "--sweep", "5,10"], separate);
    refused(
        d,
        &["--view-logging", "--server", "127.0.0.1:1"],
        "--view-logging needs servers the tool starts",
    );
    assert_eq!(std::fs::read_dir(d).unwrap().count(), 0, "nothing prepared");
}
