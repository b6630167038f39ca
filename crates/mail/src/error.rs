//! The mail layer's one error type.

use thiserror::Error;

#[derive(Debug, Error)]
#[non_exhaustive]
pub enum MailError {
    #[error(transparent)]
    View(#[from] views::ViewError),
}

pub type MailResult<T> = Result<T, MailError>;
