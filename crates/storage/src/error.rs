//! The storage layer's error type. Corruption errors say where: the file
//! (as the caller registered it) and the page.

use crate::PageId;
use std::io;

pub type StorageResult<T> = Result<T, StorageError>;

#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StorageError {
    #[error("I/O error on {file}: {source}")]
    Io {
        file: String,
        #[source]
        source: io::Error,
    },
    #[error("corrupt page in {file}, {page}: {reason}")]
    Corrupt {
        file: String,
        page: PageId,
        reason: String,
    },
    #[error("{file} has failed after an earlier write or fsync error; writes are refused until it is reopened")]
    Failed { file: String },
    #[error("entry too large: {size} bytes (limit {limit})")]
    TooLarge { size: usize, limit: usize },
    #[error("invalid argument: {0}")]
    Invalid(String),
    /// Input that must arrive in strictly increasing key order (a B+tree
    /// bulk load) did not: entry `index` (0-based) is not greater than the
    /// one before it.
    #[error("input out of order: entry {index} is not greater than the entry before it")]
    OutOfOrder { index: u64 },
    /// A temporary file (an external-sort run) failed its checksum or
    /// structure checks at byte `offset`: the data read back is not what
    /// was written.
    #[error("corrupt temporary file {file} at byte {offset}: {reason}")]
    CorruptTemp {
        file: String,
        offset: u64,
        reason: String,
    },
}

impl StorageError {
    pub fn io(file: impl Into<String>, source: io::Error) -> Self {
        StorageError::Io {
            file: file.into(),
            source,
        }
    }

    pub fn corrupt(file: impl Into<String>, page: PageId, reason: impl Into<String>) -> Self {
        StorageError::Corrupt {
            file: file.into(),
            page,
            reason: reason.into(),
        }
    }
}
