//! The one error type of the transaction log.
//!
//! Callers (the database layer, the server) need to react differently to a
//! handful of situations: a full log is retried after a checkpoint, a failed
//! log refuses everything until it is reopened (I11), corruption must name
//! the LSN so an administrator can find it, and a bad configuration must say
//! which setting is wrong. Each of those is a variant here; everything else
//! is an I/O error that names the file it happened on.

use std::io;
use std::path::PathBuf;
use std::time::Duration;
use storage::Lsn;

/// Everything that can go wrong in the transaction log.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum LogError {
    /// A configuration value is out of range or contradicts the log on disk.
    #[error("invalid transaction log configuration: {0}")]
    Config(String),
    /// A caller passed something the log cannot accept (a bad batch, an LSN
    /// outside the log).
    #[error("invalid argument: {0}")]
    Invalid(String),
    /// A record is larger than an extent can ever hold.
    #[error("{what} of {size} bytes exceeds the limit of {limit} bytes")]
    TooLarge {
        what: &'static str,
        size: u64,
        limit: u64,
    },
    /// A transaction's batch is larger than the log accepts at all (half
    /// its capacity, so that it fits once a checkpoint has freed the log):
    /// waiting or retrying cannot help, only a larger `translog.max_size`.
    /// Refused at once; nothing was appended.
    #[error(
        "transaction of {size} bytes exceeds the log's capacity for one transaction, \
         {limit} bytes (half of its {capacity} bytes); raise translog.max_size"
    )]
    TransactionTooLarge {
        size: u64,
        limit: u64,
        capacity: u64,
    },
    /// An I/O error while opening, recovering or checkpointing.
    #[error("I/O error on {path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    /// The control file has no usable slot, or is missing while extents exist.
    #[error("transaction log control file {path}: {reason}")]
    BadControl { path: PathBuf, reason: String },
    /// The log contradicts itself at a given position.
    #[error("transaction log corrupt at {lsn}: {reason}")]
    Corrupt { lsn: Lsn, reason: String },
    /// No room for the batch even after waiting for a checkpoint.
    #[error(
        "transaction log full: {used} of {capacity} bytes in use after waiting {waited:?} \
         for a checkpoint to free space"
    )]
    Full {
        used: u64,
        capacity: u64,
        waited: Duration,
    },
    /// Archive style: no room because extents wait to be archived, which
    /// no checkpoint can change. Returned at once, without waiting.
    #[error(
        "transaction log full: {waiting_extents} extent(s) wait to be archived ({used} of \
         {capacity} bytes held); writes are refused until `folio archive` copies them to \
         the archive directory (reads go on)"
    )]
    ArchiveNeeded {
        used: u64,
        capacity: u64,
        waiting_extents: u64,
    },
    /// A copy in the archive directory does not match its extent; the
    /// archive mark did not move past it (I31).
    #[error("archived copy {path} failed verification: {reason}")]
    ArchiveMismatch { path: PathBuf, reason: String },
    /// Reading the log back across the archive: extent `seq` (the LSNs
    /// from `first_lsn`) is neither in the archive nor in the log, though
    /// later extents are.
    #[error(
        "log extent {seq} (LSN {first_lsn} onward) is missing from the archive directory \
         {archive_dir} and from the log"
    )]
    MissingExtent {
        seq: u64,
        first_lsn: Lsn,
        archive_dir: PathBuf,
    },
    /// An earlier write or fsync of the log failed (I11); nothing is
    /// accepted until the log is reopened.
    #[error("transaction log has failed ({reason}); refusing until it is reopened")]
    Failed { reason: String },
    /// `shutdown` was called.
    #[error("transaction log is shut down")]
    ShutDown,
}

impl LogError {
    pub(crate) fn io(path: impl Into<PathBuf>, source: io::Error) -> Self {
        LogError::Io {
            path: path.into(),
            source,
        }
    }

    pub(crate) fn corrupt(lsn: Lsn, reason: impl Into<String>) -> Self {
        LogError::Corrupt {
            lsn,
            reason: reason.into(),
        }
    }
}
