//! A point-in-time view of the log for statistics (`show stats`) and
//! tests. Reading it never blocks on I/O and works in every state of the
//! log, including after a failure or while appends are refused as full.

use crate::{LogStyle, Tuning};
use std::path::PathBuf;
use std::time::SystemTime;
use storage::Lsn;

/// Configuration, positions and counters of a running log.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct LogInfo {
    pub style: LogStyle,
    pub tuning: Tuning,
    pub extent_size: u64,
    pub max_size: u64,
    /// Extent files in the log directory (in use, free and prepared).
    pub extents_on_disk: u64,
    /// Bytes of log stream the allowed extents can hold.
    pub capacity: u64,
    /// `end_lsn - redo_lsn`: log that a restart would replay.
    pub bytes_in_use: u64,
    pub checkpoint_lsn: Lsn,
    pub redo_lsn: Lsn,
    pub durable_lsn: Lsn,
    pub end_lsn: Lsn,
    pub epoch: u32,
    pub checkpoint_wanted: bool,
    /// The original error if the log has failed (I11).
    pub failed: Option<String>,
    /// Records appended (all kinds).
    pub appends: u64,
    /// Transactions (batches) appended.
    pub commits: u64,
    /// fdatasync calls on extents by the writer (group commit makes this
    /// smaller than `commits` under concurrency).
    pub fsyncs: u64,
    /// Log bytes written by the writer.
    pub bytes_written: u64,
    /// Appends refused with `LogError::Full`.
    pub log_full_events: u64,
    /// Checkpoints completed.
    pub checkpoints: u64,
    /// Where `archive` copies extents by default.
    pub archive_dir: Option<PathBuf>,
    /// Archive style: the archive mark (I31); extents wholly below it
    /// have verified copies.
    pub archived_lsn: Lsn,
    /// Archive style: completed extents not yet archived.
    pub extents_awaiting_archive: u64,
    /// Archive style: appends are being refused until extents are archived.
    pub archive_needed: bool,
    /// When the last archive run of this process finished.
    pub last_archive: Option<SystemTime>,
}
