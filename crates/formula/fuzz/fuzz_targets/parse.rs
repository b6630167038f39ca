//! Fuzzes the parser with arbitrary text, and evaluates whatever parses
//! against an empty document: neither may panic or overflow the stack.

#![no_main]

use formula::{Document, EvalContext, Formula, Value};
use libfuzzer_sys::fuzz_target;

struct Empty;

impl Document for Empty {
    fn item(&self, _: &str) -> Option<Value> {
        None
    }
    fn created(&self) -> i64 {
        0
    }
    fn modified(&self) -> i64 {
        0
    }
}

fuzz_target!(|src: &str| {
    if let Ok(f) = Formula::parse(src) {
        let ctx = EvalContext { now: 0 };
        let _ = f.eval(&Empty, &ctx);
        let _ = f.selects(&Empty, &ctx);
    }
});
