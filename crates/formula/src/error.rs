//! The one error type of the crate. Only *parse-time* problems are Rust
//! errors: a formula is checked once when it is stored (a view's selection,
//! a column) and then evaluated against many documents, so everything that
//! can be rejected up front — syntax, unknown functions, argument counts,
//! size and nesting limits — is rejected here, with a 1-based line and
//! column, and evaluation itself can never fail (it yields error values).

use thiserror::Error;

/// Why a formula could not be parsed.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[non_exhaustive]
pub enum FormulaError {
    /// The text is not a well-formed formula (including nesting too deep).
    #[error("line {line}, column {column}: {message}")]
    Syntax {
        line: u32,
        column: u32,
        message: String,
    },
    /// An `@Function` name that the language does not define.
    #[error("line {line}, column {column}: unknown function @{name}")]
    UnknownFunction {
        line: u32,
        column: u32,
        name: String,
    },
    /// A known function called with the wrong number of arguments.
    #[error("line {line}, column {column}: @{name} takes {expected} arguments, got {found}")]
    ArgumentCount {
        line: u32,
        column: u32,
        name: String,
        expected: &'static str,
        found: usize,
    },
    /// The source text exceeds [`crate::MAX_SOURCE_LEN`] bytes.
    #[error("formula is {len} bytes; the limit is {limit} bytes")]
    TooLong { len: usize, limit: usize },
}
