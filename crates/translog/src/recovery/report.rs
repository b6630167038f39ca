//! What restart recovery did, for the server log and for tests.
//!
//! Recovery never silently drops anything: each phase's counts and
//! duration, where the valid log ended and why, and every database that
//! could not be brought up to date (with the reason) are reported, so the
//! server can say what happened and run fixup where needed.

use crate::StopReason;
use std::time::Duration;
use storage::Lsn;

/// How long each recovery phase took.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PhaseTimes {
    pub scan: Duration,
    pub validate: Duration,
    pub redo: Duration,
    pub undo: Duration,
    pub truncate: Duration,
}

/// Database instances whose log records recovery must never apply: (path
/// relative to the data directory, instance id) (design.md I29).
pub type Retired = std::collections::BTreeSet<(String, u64)>;

/// A database that recovery could not bring up to date.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FailedDatabase {
    /// Path relative to the data directory, as logged.
    pub path: String,
    pub reason: String,
}

/// A database with committed transactions in the replayed log.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TouchedDatabase {
    /// Path relative to the data directory, as logged.
    pub path: String,
    /// The database instance id of its last logged batch, so the caller
    /// can check the file is still the same database.
    pub db_iid: u64,
}

/// The outcome of restart recovery.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct RecoveryReport {
    /// No log existed; one was created.
    pub new_log: bool,
    pub times: PhaseTimes,
    /// Where the scan started (the last checkpoint's redo LSN).
    pub scan_start: Lsn,
    /// Where appending resumed.
    pub end_lsn: Lsn,
    /// The epoch of this life of the log (I10).
    pub epoch: u32,
    pub records_scanned: u64,
    pub bytes_scanned: u64,
    /// Why the valid log ended where it did.
    pub scan_stop: StopReason,
    /// The LSN of a partially written record at the end, if any.
    pub torn_tail: Option<Lsn>,
    pub committed_txns_redone: u64,
    /// Committed batches of retired database instances, not applied (I29).
    pub retired_txns_skipped: u64,
    pub incomplete_txns_discarded: u64,
    /// Page records applied (those skipped as already on disk not counted).
    pub pages_redone: u64,
    /// Pages written back to database files.
    pub pages_written: u64,
    /// Databases with committed transactions in the replayed log.
    pub databases_touched: Vec<TouchedDatabase>,
    /// Databases that could not be recovered (missing, unreadable, or with
    /// pages still invalid after redo).
    pub failed_databases: Vec<FailedDatabase>,
}
