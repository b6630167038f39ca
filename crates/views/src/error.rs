//! The views layer's error type: every failure names what was wrong.

use formula::FormulaError;
use nsf::NsfError;
use storage::StorageError;

#[derive(Debug, thiserror::Error)]
pub enum ViewError {
    #[error(transparent)]
    Nsf(#[from] NsfError),
    #[error(transparent)]
    Storage(#[from] StorageError),
    #[error("bad {what} formula: {error}")]
    Formula { what: String, error: FormulaError },
    #[error("no view or folder named {name:?} in {db}")]
    NoSuchView { db: String, name: String },
    #[error("a view or folder named {name:?} already exists in {db}")]
    ViewExists { db: String, name: String },
    #[error("{name:?} is a view, not a folder: its documents are chosen by its selection formula")]
    NotAFolder { name: String },
    #[error("bad view definition: {0}")]
    BadDefinition(String),
    #[error("view {name:?} in {db} has no sorted column to find keys in")]
    NotSorted { db: String, name: String },
    #[error("writing results: {0}")]
    Output(std::io::Error),
    #[error("view index of {name:?} in {db} is damaged: {reason}")]
    Corrupt {
        db: String,
        name: String,
        reason: String,
    },
}

pub type ViewResult<T> = Result<T, ViewError>;
