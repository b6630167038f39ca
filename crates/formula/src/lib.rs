//! A small subset of the Notes formula language, for view selection and
//! column formulas.
//!
//! The crate is a leaf: it knows nothing of databases or notes. Callers
//! expose a document through the [`Document`] trait, and the clock through
//! [`EvalContext`], so evaluation is a pure function of its inputs and is
//! deterministic in tests. A formula is parsed once ([`Formula::parse`],
//! which reports every static problem as a [`FormulaError`] with line and
//! column) and evaluated many times; evaluation never fails or panics —
//! problems become [`Value::Error`] values. The language is described in
//! `docs/formula.md`.

mod ast;
mod error;
mod eval;
mod functions;
mod lexer;
mod ops;
mod parser;
mod value;

pub use error::FormulaError;
pub use parser::MAX_DEPTH;
pub use value::Value;

/// The longest formula source accepted, in bytes.
pub const MAX_SOURCE_LEN: usize = 64 * 1024;

/// A document as a formula sees it.
pub trait Document {
    /// The value of the item `name`, or `None` if the document lacks it.
    /// Item names are case-insensitive: implementations must match `name`
    /// (given as written in the formula) ignoring case.
    fn item(&self, name: &str) -> Option<Value>;
    /// When the document was created, in microseconds since the epoch, UTC.
    fn created(&self) -> i64;
    /// When the document was last modified, in microseconds since the epoch, UTC.
    fn modified(&self) -> i64;
}

/// Everything besides the document that evaluation depends on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EvalContext {
    /// The value of `@Now`, in microseconds since the epoch, UTC.
    pub now: i64,
}

/// A parsed formula, ready to evaluate against any number of documents.
#[derive(Debug, Clone, PartialEq)]
pub struct Formula {
    statements: Vec<ast::Statement>,
}

impl Formula {
    /// Parses `src`, rejecting syntax errors, unknown functions, wrong
    /// argument counts, nesting deeper than [`MAX_DEPTH`] and sources
    /// longer than [`MAX_SOURCE_LEN`].
    pub fn parse(src: &str) -> Result<Formula, FormulaError> {
        if src.len() > MAX_SOURCE_LEN {
            return Err(FormulaError::TooLong {
                len: src.len(),
                limit: MAX_SOURCE_LEN,
            });
        }
        Ok(Formula {
            statements: parser::parse(src)?,
        })
    }

    /// The value of the last statement, or the first error value met.
    pub fn eval(&self, doc: &dyn Document, ctx: &EvalContext) -> Value {
        eval::run(&self.statements, &eval::Env { doc, ctx }).last
    }

    /// Whether the formula selects `doc`: the value of its last `SELECT`
    /// statement (or, without one, of its last statement) is true — a
    /// number list with a non-zero element. Error values never select.
    pub fn selects(&self, doc: &dyn Document, ctx: &EvalContext) -> bool {
        let outcome = eval::run(&self.statements, &eval::Env { doc, ctx });
        outcome.selected.unwrap_or(outcome.last).is_true()
    }
}
