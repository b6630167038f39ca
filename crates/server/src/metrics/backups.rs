//! The backup history (`<data>/backups.json`, `GET /admin/backups`) as
//! metrics, so monitoring can alert on a backup that is late or failed
//! without reading the history itself.
//!
//! The figures are those of `GET /admin/backups`, in base units: for each
//! kind of run (`backup`, `archive`), when the newest successful one
//! started (Unix seconds), how long it took and what it copied, and how
//! many runs of each result the history holds. The history keeps the
//! newest `nsf::BACKUP_HISTORY_RUNS` runs, so those counts are gauges (they
//! stop growing once it is full), not counters. Directories and database
//! names stay in `GET /admin/backups`, which is for administrators only;
//! a reader of `/metrics` sees figures, not paths. A history that cannot
//! be read is said so (`folio_backup_history_readable 0`) rather than
//! shown as empty.

use super::{Exposition, Kind};
use nsf::{BackupRun, RunKind};

const KINDS: [(RunKind, &str); 2] = [(RunKind::Backup, "backup"), (RunKind::Archive, "archive")];

/// Adds the backup families: `runs` newest first, or None when the
/// history could not be read.
pub(super) fn add(x: &mut Exposition, runs: Option<&[BackupRun]>) {
    x.put(
        "folio_backup_history_readable",
        Kind::Gauge,
        "1 if the backup history (backups.json) could be read; 0 if not, and the backup figures are left out.",
        vec![],
        if runs.is_some() { 1.0 } else { 0.0 },
    );
    let Some(runs) = runs else {
        return;
    };
    for (kind, name) in KINDS {
        let of_kind = || runs.iter().filter(move |r| r.kind == kind);
        let ok = of_kind().filter(|r| r.result == "ok").count();
        for (result, n) in [("ok", ok), ("failed", of_kind().count() - ok)] {
            x.put(
                "folio_backup_runs",
                Kind::Gauge,
                "Runs in the backup history (its newest 100), by kind and result.",
                vec![("kind", name.into()), ("result", result.into())],
                n as f64,
            );
        }
        let Some(last) = of_kind().find(|r| r.result == "ok") else {
            continue;
        };
        let label = || vec![("kind", name.to_string())];
        if let Some(t) = unix_seconds(&last.started) {
            x.put(
                "folio_backup_last_success_timestamp_seconds",
                Kind::Gauge,
                "When the newest successful run of each kind started (Unix time).",
                label(),
                t,
            );
        }
        x.put(
            "folio_backup_last_success_duration_seconds",
            Kind::Gauge,
            "How long the newest successful run of each kind took.",
            label(),
            last.millis as f64 * 1e-3,
        );
        x.put(
            "folio_backup_last_success_bytes",
            Kind::Gauge,
            "Bytes the newest successful run of each kind copied.",
            label(),
            last.bytes as f64,
        );
    }
}

/// An RFC 3339 time as Unix seconds (with fractions), if it is one.
pub(super) fn unix_seconds(rfc3339: &str) -> Option<f64> {
    let t = chrono::DateTime::parse_from_rfc3339(rfc3339).ok()?;
    Some(t.timestamp() as f64 + f64::from(t.timestamp_subsec_micros()) * 1e-6)
}

#[cfg(test)]
mod tests {
    use super::super::render;

    fn run(kind: nsf::RunKind, started: &str, result: &str, bytes: u64) -> nsf::BackupRun {
        nsf::BackupRun {
            kind,
            started: started.into(),
            millis: 1500,
            result: result.into(),
            dir: "/backups/secret-path".into(),
            databases: vec!["hr/salaries.fdb".into()],
            bytes,
            extents: 0,
            start_lsn: None,
            end_lsn: None,
        }
    }

    #[test]
    fn the_newest_good_run_of_each_kind_in_base_units_and_no_paths() {
        use nsf::RunKind::Backup;
        let runs = [
            run(
                Backup,
                "2026-11-29T02:00:10.500000Z",
                "failed: disk full",
                0,
            ),
            run(Backup, "2026-11-29T01:00:00.000000Z", "ok", 2048),
            run(Backup, "2026-11-28T01:00:00.000000Z", "ok", 1024),
        ];
        let text = render(&[], &[], Some(&runs));
        for line in [
            "folio_backup_history_readable 1\n",
            "folio_backup_runs{kind=\"backup\",result=\"ok\"} 2\n",
            "folio_backup_runs{kind=\"backup\",result=\"failed\"} 1\n",
            "folio_backup_runs{kind=\"archive\",result=\"ok\"} 0\n",
            "folio_backup_last_success_timestamp_seconds{kind=\"backup\"} 1795914000\n",
            "folio_backup_last_success_duration_seconds{kind=\"backup\"} 1.5\n",
            "folio_backup_last_success_bytes{kind=\"backup\"} 2048\n",
        ] {
            assert!(text.contains(line), "{line} missing from:\n{text}");
        }
        assert!(
            !text.contains("kind=\"archive\"}"),
            "no good archive run: {text}"
        );
        assert!(
            !text.contains("secret-path") && !text.contains("salaries"),
            "{text}"
        );
    }

    #[test]
    fn an_unreadable_history_is_said_not_shown_empty() {
        let text = render(&[], &[], None);
        assert!(text.contains("folio_backup_history_readable 0\n"), "{text}");
        assert!(!text.contains("folio_backup_runs"), "{text}");
    }
}
