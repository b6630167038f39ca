//! A document held in a map, for tests: item names are stored lowercased
//! so lookups ignore case, as the `Document` contract requires.

use std::collections::HashMap;

use formula::{Document, EvalContext, Formula, Value};

/// 2026-11-21T10:00:00Z in microseconds.
pub const NOW: i64 = 1_795_255_200_000_000;

#[derive(Debug, Clone, Default)]
pub struct MapDoc {
    pub items: HashMap<String, Value>,
    pub created: i64,
    pub modified: i64,
}

impl MapDoc {
    pub fn with(mut self, name: &str, value: Value) -> MapDoc {
        self.items.insert(name.to_lowercase(), value);
        self
    }
}

impl Document for MapDoc {
    fn item(&self, name: &str) -> Option<Value> {
        self.items.get(&name.to_lowercase()).cloned()
    }
    fn created(&self) -> i64 {
        self.created
    }
    fn modified(&self) -> i64 {
        self.modified
    }
}

pub fn ctx() -> EvalContext {
    EvalContext { now: NOW }
}

/// Parses and evaluates `src` against `doc`, panicking (in the test) on a
/// parse error.
pub fn eval_on(src: &str, doc: &MapDoc) -> Value {
    match Formula::parse(src) {
        Ok(f) => f.eval(doc, &ctx()),
        Err(e) => panic!("{src:?} failed to parse: {e}"),
    }
}

pub fn eval(src: &str) -> Value {
    eval_on(src, &MapDoc::default())
}
