//! `report.html` of `folio load backup`: the settings, each figure
//! beside its target (met or missed, in words), and what the disk itself
//! did in the same run.

use crate::report::{self, Page, Table};
use serde_json::Value;
use std::path::Path;

fn f(v: &Value) -> f64 {
    v.as_f64().unwrap_or(0.0)
}

/// One row of the targets table: what, the figure, the target, met.
fn row(t: &mut Table, what: &str, got: String, target: &str, met: bool) {
    let verdict = if met { "met" } else { "missed" };
    t.row(vec![what.into(), got, target.into(), verdict.into()]);
}

fn targets(r: &Value) -> Table {
    let mut t = Table::new(
        "Figures against the targets (docs/benchmarks.md)",
        &["figure", "measured", "target", "verdict"],
    );
    let share = f(&r["targets"]["backup_share_of_sequential"]["got"]);
    row(
        &mut t,
        "online backup, share of sequential write bandwidth",
        format!(
            "{:.0}% ({:.1} of {:.1} MiB/s)",
            share * 100.0,
            f(&r["backup"]["mib_per_sec"]),
            f(&r["disk"]["sequential_write_fdatasync_mib_per_sec"])
        ),
        "≥ 50%",
        share >= 0.5,
    );
    let ratio = f(&r["p99_ratio"]);
    row(
        &mut t,
        "commit p99 during backup / without",
        format!(
            "{ratio:.2}× ({} µs / {} µs)",
            r["commit_during_backup"]["p99_us"], r["commit_without_backup"]["p99_us"]
        ),
        "≤ 2×",
        ratio <= 2.0,
    );
    let roll = f(&r["restore"]["roll_forward_mib_per_sec"]);
    row(
        &mut t,
        "roll-forward",
        format!("{roll:.1} MiB/s of log"),
        "≥ 64 MiB/s",
        roll >= 64.0,
    );
    let lands = r["restore"]["until_lands_exactly"].as_bool() == Some(true);
    row(
        &mut t,
        "restore to a time lands on the last commit before it",
        lands.to_string(),
        "true",
        lands,
    );
    let fixup = f(&r["fixup"]["mib_per_sec"]);
    row(
        &mut t,
        "fixup",
        format!("{fixup:.1} MiB/s"),
        "≥ 200 MiB/s",
        fixup >= 200.0,
    );
    t
}

fn details(r: &Value) -> Table {
    let mut t = Table::new("Details", &["figure", "value"]);
    let mib = |v: &Value| format!("{:.1} MiB", f(v) / f64::from(1u32 << 20));
    let secs = |v: &Value| format!("{:.2} s", f(v));
    let rows = [
        ("databases backed up", mib(&r["backup"]["database_bytes"])),
        ("backup time", secs(&r["backup"]["seconds"])),
        (
            "disk sequential read (page cache evicted)",
            format!("{:.1} MiB/s", f(&r["disk"]["sequential_read_mib_per_sec"])),
        ),
        (
            "commits/s without backup",
            format!("{:.0}", f(&r["commit_without_backup"]["commits_per_sec"])),
        ),
        (
            "commits/s during backup",
            format!("{:.0}", f(&r["commit_during_backup"]["commits_per_sec"])),
        ),
        ("log rolled forward", mib(&r["restore"]["log_bytes_rolled"])),
        ("restore, copy only", secs(&r["restore"]["copy_seconds"])),
        (
            "restore, copy + roll-forward",
            secs(&r["restore"]["full_seconds"]),
        ),
        ("database fixed up", mib(&r["fixup"]["bytes"])),
        ("fixup time", secs(&r["fixup"]["seconds"])),
    ];
    for (k, v) in rows {
        t.row(vec![k.into(), v]);
    }
    t
}

pub fn write(out: &Path, result: &Value) -> Result<(), String> {
    let mut page = Page::new("Folio: backup, restore, fixup");
    page.table(report::settings_table(result));
    page.table(targets(result));
    page.table(details(result));
    page.note(
        "Backup bandwidth counts the databases' bytes over the backup's wall time; the \
         disk's sequential write (1 MiB steps, one fdatasync) and read (after evicting \
         the page cache) are measured over a file of the same size in the same run. \
         Roll-forward is the log between the backup's end and the latest commit over the \
         difference of two restores' times (to the backup's end: the copy alone; to the \
         latest: copy and roll-forward).",
    );
    report::write(out, result, &page)
}
