//! The backup history, `<data>/backups.json`: the last backups and log
//! archives this data directory made, what each copied, how long it took
//! and whether it succeeded, so an administrator can see when the last
//! good backup was without reading the server's log. It outlives the
//! process (a backup is taken once a day, a restart is routine), which
//! the in-memory figures of `show stats` do not.
//!
//! ```text
//!   Engine::backup ──▶ take_backup ── manifest durable (I49) ──┐
//!   Engine::archive ─▶ TransLog::archive ── mark durable ──────┤
//!                                                              ▼
//!                     record: read backups.json, add the run, keep the
//!                     newest BACKUP_HISTORY_RUNS, write_file_atomic (I9)
//! ```
//!
//! A run is recorded after its own work is durable, so a run the history
//! calls `ok` names a complete backup (I64); a crash between the two
//! leaves a complete backup the history does not list, never the other
//! way round. A request refused before it copies anything (a bad path,
//! another log style) is not a run and is not recorded; a run that fails
//! part-way is, with its reason. The file is small and bounded (at most
//! [`BACKUP_HISTORY_RUNS`] runs, a few hundred bytes each); a history that
//! cannot be read is set aside as `backups.json.unreadable` by the next
//! run rather than blocking backups.

use super::Engine;
use crate::{NsfError, NsfResult, Timestamp};
use serde::{Deserialize, Serialize};
use std::path::PathBuf;
use std::time::Instant;
use storage::backend::{read_file, write_file_atomic};

/// The history's file name, in the data directory.
pub const BACKUP_HISTORY_FILE: &str = "backups.json";

/// Runs kept: the newest this many.
pub const BACKUP_HISTORY_RUNS: usize = 100;

/// What a run did.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum RunKind {
    /// An online backup (design.md §3.6).
    Backup,
    /// Completed log extents copied to the archive (§3.5).
    Archive,
}

/// One backup or archive run, as the history keeps it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct BackupRun {
    pub kind: RunKind,
    /// When it started, RFC 3339.
    pub started: String,
    /// How long it took, in milliseconds.
    pub millis: u64,
    /// `ok`, or `failed: <reason>`.
    pub result: String,
    /// The directory it wrote to (the backup, or the archive).
    pub dir: String,
    /// The databases a backup copied (asked for, if it failed).
    #[serde(default)]
    pub databases: Vec<String>,
    /// Bytes copied.
    pub bytes: u64,
    /// Log extents archived (by an archive, or by a backup as its last step).
    #[serde(default)]
    pub extents: u64,
    /// The log range a backup's copies are consistent through.
    #[serde(default)]
    pub start_lsn: Option<u64>,
    #[serde(default)]
    pub end_lsn: Option<u64>,
}

#[derive(Serialize, Deserialize)]
struct HistoryFile {
    version: u32,
    /// Oldest first.
    runs: Vec<BackupRun>,
}

const VERSION: u32 = 1;

/// A run under way: its start, to be finished with its outcome.
pub(super) struct RunClock {
    started: Timestamp,
    at: Instant,
}

impl RunClock {
    pub(super) fn start(now: Timestamp) -> RunClock {
        RunClock {
            started: now,
            at: Instant::now(),
        }
    }

    /// The run's record; `result` is `ok` or the error that ended it.
    pub(super) fn finish<T>(
        &self,
        kind: RunKind,
        dir: String,
        result: &NsfResult<T>,
        fill: impl FnOnce(&T, &mut BackupRun),
    ) -> BackupRun {
        let mut run = BackupRun {
            kind,
            started: self.started.to_rfc3339(),
            millis: u64::try_from(self.at.elapsed().as_millis()).unwrap_or(u64::MAX),
            result: "ok".into(),
            dir,
            databases: Vec::new(),
            bytes: 0,
            extents: 0,
            start_lsn: None,
            end_lsn: None,
        };
        match result {
            Ok(r) => fill(r, &mut run),
            Err(e) => run.result = format!("failed: {e}"),
        }
        run
    }
}

impl Engine {
    /// The backup history, newest first (module docs). An absent file is
    /// an empty history; one that does not parse is an error naming it.
    pub fn backup_history(&self) -> NsfResult<Vec<BackupRun>> {
        let mut runs = self.read_history()?;
        runs.reverse();
        Ok(runs)
    }

    fn history_path(&self) -> PathBuf {
        self.shared.cfg.data_dir.join(BACKUP_HISTORY_FILE)
    }

    fn read_history(&self) -> NsfResult<Vec<BackupRun>> {
        let path = self.history_path();
        let bytes = match read_file(self.shared.backend.as_ref(), &path) {
            Ok(b) => b,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(source) => {
                return Err(NsfError::Io {
                    path: path.display().to_string(),
                    source,
                })
            }
        };
        let file: HistoryFile = serde_json::from_slice(&bytes).map_err(|e| {
            NsfError::Invalid(format!(
                "the backup history {} cannot be read ({e}); the next backup sets it aside",
                path.display()
            ))
        })?;
        if file.version != VERSION {
            return Err(NsfError::Invalid(format!(
                "the backup history {} has version {}, this server reads version {VERSION}",
                path.display(),
                file.version
            )));
        }
        Ok(file.runs)
    }

    /// Adds `run` to the history, durably (I9), keeping the newest
    /// [`BACKUP_HISTORY_RUNS`]. Called only once the run's own work is
    /// durable (I64). A failure to record is logged and does not undo
    /// the run: the backup is there either way.
    pub(super) fn record_run(&self, run: BackupRun) {
        let s = &*self.shared;
        let _one = s.history_writing.lock();
        let mut runs = match self.read_history() {
            Ok(runs) => runs,
            Err(e) => {
                let path = self.history_path();
                let aside = path.with_extension("json.unreadable");
                tracing::warn!(error = %e, aside = %aside.display(), "backup history set aside");
                if let Err(e) = s.backend.rename(&path, &aside) {
                    tracing::error!(error = %e, "backup history: cannot set the unreadable file aside; the run is not recorded");
                    return;
                }
                Vec::new()
            }
        };
        runs.push(run);
        let excess = runs.len().saturating_sub(BACKUP_HISTORY_RUNS);
        runs.drain(..excess);
        let file = HistoryFile {
            version: VERSION,
            runs,
        };
        let bytes = serde_json::to_vec_pretty(&file).expect("the history serialises");
        // I64: the run's own work is durable before it is recorded; I9:
        // the history is replaced whole or not at all.
        if let Err(e) = write_file_atomic(s.backend.as_ref(), &self.history_path(), &bytes) {
            tracing::error!(error = %e, "backup history: the run is not recorded");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_failed_run_says_why_and_an_ok_one_is_filled_in() {
        let clock = RunClock::start(Timestamp(0));
        let failed: NsfResult<u64> = Err(NsfError::Invalid("disk full".into()));
        let run = clock.finish(RunKind::Backup, "/b".into(), &failed, |_, _| {
            unreachable!("a failed run is not filled in")
        });
        assert_eq!(run.result, "failed: disk full");
        assert_eq!(run.started, "1970-01-01T00:00:00.000000Z");
        let ok: NsfResult<u64> = Ok(7);
        let run = clock.finish(RunKind::Archive, "/a".into(), &ok, |n, r| r.bytes = *n);
        assert_eq!((run.result.as_str(), run.bytes), ("ok", 7));
        let text = serde_json::to_string(&run).unwrap();
        assert!(text.contains("\"kind\":\"archive\""), "{text}");
    }
}
