//! The document layer's error type. Every variant says what went wrong in
//! terms an administrator can act on: which database, which document, which
//! limit.

use crate::{AclError, CodecError, JsonError, Unid};
use storage::StorageError;
use translog::LogError;

pub type NsfResult<T> = Result<T, NsfError>;

#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum NsfError {
    #[error(transparent)]
    Storage(#[from] StorageError),
    #[error(transparent)]
    Log(LogError),
    #[error("the transaction log is full; writes are refused until a checkpoint frees space (reads continue)")]
    LogFull,
    /// Archive style: the log is full of extents waiting to be archived;
    /// no checkpoint can help, so this comes at once.
    #[error(
        "the transaction log is full: {waiting_extents} extent(s) wait to be archived; writes \
         are refused until `folio archive` copies them to the archive directory (reads continue)"
    )]
    LogArchiveNeeded { waiting_extents: u64 },
    /// A transaction larger than the log accepts at all
    /// (`translog::LogError::TransactionTooLarge`): refused at once,
    /// nothing written; only a larger `translog.max_size` helps.
    #[error(
        "transaction of {size} bytes exceeds the log's capacity for one transaction, \
         {limit} bytes (half of its {capacity} bytes); raise translog.max_size; nothing was written"
    )]
    TransactionTooLarge {
        size: u64,
        limit: u64,
        capacity: u64,
    },
    #[error(
        "the transaction log has failed ({0}); writes are refused until restart (reads continue)"
    )]
    LogFailed(String),
    #[error("{path}: database has failed ({reason}); writes are refused until it is reopened (reads continue)")]
    DatabaseFailed { path: String, reason: String },
    #[error("{path}: I/O error: {source}")]
    Io {
        path: String,
        #[source]
        source: std::io::Error,
    },
    /// The source an attachment's content was read from failed (a client
    /// that went away, a limit the caller's reader enforces): nothing is
    /// committed, and the caller can tell why from the kind.
    #[error("reading attachment content: {0}")]
    Content(#[source] std::io::Error),
    #[error("no database {0}")]
    NoSuchDatabase(String),
    /// The database was deleted while this handle to it was held (I42).
    #[error("{0}: the database was deleted")]
    DatabaseDeleted(String),
    #[error("{0}: a database with this path already exists")]
    DatabaseExists(String),
    #[error("{path} is not a Folio database: {reason}")]
    NotADatabase { path: String, reason: String },
    #[error("invalid database path {path:?}: {reason}")]
    BadPath { path: String, reason: String },
    /// A second path to a file that is already open under another (I16).
    #[error("{path} is the same file as the open database {open_as}; use that path")]
    SameFile { path: String, open_as: String },
    #[error("{db}: no document {unid}")]
    NoSuchDocument { db: String, unid: Unid },
    #[error("{db}: document {unid} was deleted")]
    Deleted { db: String, unid: Unid },
    #[error("{db}: document {unid} has no attachment named {name:?}")]
    NoSuchAttachment {
        db: String,
        unid: Unid,
        name: String,
    },
    #[error("save conflict on {unid}: the update is based on sequence {based_on}, but the document is at sequence {current}")]
    SaveConflict {
        unid: Unid,
        based_on: u32,
        current: u32,
    },
    #[error(transparent)]
    Codec(#[from] CodecError),
    #[error(transparent)]
    Json(#[from] JsonError),
    #[error(transparent)]
    Acl(#[from] AclError),
    #[error("{db}: the stored access-control list cannot be used: {reason}")]
    BadStoredAcl { db: String, reason: String },
    #[error("{db}: document {unid} is the access-control list; it is changed only as a whole, with set_acl")]
    AclNote { db: String, unid: Unid },
    /// An ordinary delete of the design note of a view or folder: it goes
    /// only with its index, by the views layer's delete.
    #[error("{db}: document {unid} defines the view or folder {name:?}; delete it with `folio view delete` (HTTP DELETE /db/{{db}}/views/{{name}}), which removes its index too")]
    ViewDesignNote {
        db: String,
        unid: Unid,
        name: String,
    },
    /// A foreign version (`Database::put_foreign`) breaks a rule; nothing
    /// was written for it.
    #[error("foreign version of document {unid} refused: {reason}")]
    BadForeignNote { unid: Unid, reason: String },
    #[error("invalid setting {key}: {reason}")]
    Setting { key: String, reason: String },
    #[error("{0}")]
    Invalid(String),
    /// The engine was shut down (`Engine::shutdown`) while something still
    /// held it: nothing more is written, nothing is opened.
    #[error("the engine is closed (it was shut down); nothing was written")]
    EngineClosed,
    /// A backup directory that cannot be restored from: no manifest (the
    /// backup did not finish), a manifest that does not parse, a copy
    /// whose checksum or size differs from the manifest's.
    #[error("{dir}: not a usable backup: {reason}")]
    BadBackup { dir: String, reason: String },
    /// The backup's copy, or the log it needs, belongs to another database
    /// instance than the one the restore rolls forward (I36).
    #[error("{path}: cannot restore: database instance id mismatch: {reason}")]
    InstanceMismatch { path: String, reason: String },
    /// The requested point cannot be reached from this backup and log
    /// (a missing extent is `Log(MissingExtent)`, which names it).
    #[error("{path}: cannot restore to {wanted}: {reason}")]
    RestoreUnreachable {
        path: String,
        wanted: String,
        reason: String,
    },
    /// The attachment store (design.md §2.9) cannot store or serve
    /// content: a failed write or sync (sticky until restart, I11), or an
    /// object that is missing or damaged (naming the object).
    #[error("attachment store: {what}: {reason}")]
    Store { what: String, reason: String },
}

impl From<LogError> for NsfError {
    fn from(e: LogError) -> Self {
        match e {
            LogError::Full { .. } => NsfError::LogFull,
            LogError::ArchiveNeeded {
                waiting_extents, ..
            } => NsfError::LogArchiveNeeded { waiting_extents },
            LogError::TransactionTooLarge {
                size,
                limit,
                capacity,
            } => NsfError::TransactionTooLarge {
                size,
                limit,
                capacity,
            },
            LogError::Failed { reason } => NsfError::LogFailed(reason),
            LogError::ShutDown => NsfError::EngineClosed,
            other => NsfError::Log(other),
        }
    }
}
