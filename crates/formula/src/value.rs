//! Formula values. Every value is a list — a scalar is a list of one — so
//! that item values (which are lists in a document) and literals flow
//! through the same operators without special cases. Errors are values too:
//! a view evaluates one formula against thousands of documents, and one bad
//! document must yield an error for that row, never abort the whole view.

/// A formula value: a typed list, or an error that propagates.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    /// A list of text strings.
    Text(Vec<String>),
    /// A list of numbers; logical results are numbers 1 (true) and 0 (false).
    Number(Vec<f64>),
    /// A list of date-times, in microseconds since the Unix epoch, UTC.
    DateTime(Vec<i64>),
    /// An evaluation error (type mismatch, division by zero, ...).
    Error(String),
}

impl Value {
    /// A single text string.
    pub fn text(s: impl Into<String>) -> Value {
        Value::Text(vec![s.into()])
    }

    /// A single number.
    pub fn number(n: f64) -> Value {
        Value::Number(vec![n])
    }

    /// A single date-time (microseconds since the epoch, UTC).
    pub fn datetime(us: i64) -> Value {
        Value::DateTime(vec![us])
    }

    /// The logical value 1 (true) or 0 (false).
    pub fn boolean(b: bool) -> Value {
        Value::number(if b { 1.0 } else { 0.0 })
    }

    /// True when this is a number list with at least one non-zero element.
    pub fn is_true(&self) -> bool {
        matches!(self, Value::Number(xs) if xs.iter().any(|x| *x != 0.0))
    }

    /// The type's name, for error messages.
    pub fn kind(&self) -> &'static str {
        match self {
            Value::Text(_) => "text",
            Value::Number(_) => "number",
            Value::DateTime(_) => "date-time",
            Value::Error(_) => "error",
        }
    }
}
