//! Folio's transaction log: one write-ahead log for the whole server.
//!
//! Every change to any database is appended here, as one contiguous batch
//! per transaction, before any of its pages may reach a database file
//! (I1). The log write, fdatasynced, is the commit (I2); concurrent
//! committers share fdatasyncs through a dedicated writer thread (group
//! commit). The log lives in fixed-size, preallocated, recycled extent
//! files in its own directory, addressed by LSN = byte position in one
//! endless stream; a two-slot control file records the last checkpoint
//! and the epoch. Opening the log runs restart recovery in named phases
//! (scan, validate, redo, undo, truncate) so that exactly the committed
//! prefix of the log is in the database files afterwards.
//!
//! In archive style extents are also kept until `archive` has copied and
//! verified them (I31), and `ArchivedLog` reads the log back across the
//! archive directory and the live log, for restore.
//!
//! Module map, bottom-up: `geometry` (LSN arithmetic), `record`
//! (framing), `control` and `extent` (on-disk metadata), `reader` (the
//! I10 scan rules), `describe` (read-only dumps for `folio dump log`),
//! `recovery` (the phases), `rollforward` (media recovery of one
//! database for restore), `space` (capacity and
//! checkpoint policy), `shared` and `writer` (append, group commit,
//! poisoning), `archive` (copying out and reading back), `log` and `open`
//! (the public face). The invariants cited in comments (I1..I11, I31) are
//! those of the project's design spec.

mod archive;
mod batch;
mod config;
mod control;
mod describe;
mod error;
mod extent;
mod geometry;
mod info;
mod log;
mod open;
mod reader;
mod record;
mod recovery;
mod rollforward;
mod shared;
mod space;
pub mod waits;
mod writer;

pub use archive::{ArchiveReport, ArchivedLog, LogRecord, RecordBody, Records};
pub use batch::{Appended, Batch, PageChange, TxnId};
pub use config::{
    LogConfig, LogStyle, Tuning, CIRCULAR_MAX_SIZE, DEFAULT_EXTENT_SIZE, DEFAULT_MAX_SIZE,
    LINEAR_MAX_SIZE, MAX_EXTENT_SIZE, MAX_FULL_WAIT, MIN_EXTENT_SIZE,
};
pub use describe::{
    describe_log, ControlSummary, ExtentSummary, LogDump, RecordDetail, RecordSummary,
};
pub use error::LogError;
pub use info::LogInfo;
pub use log::TransLog;
pub use reader::StopReason;
pub use recovery::{FailedDatabase, PhaseTimes, RecoveryReport, Retired, TouchedDatabase};
pub use rollforward::{roll_forward, RollForward, RollOutcome, RollStop};
pub use shared::DurableFn;
