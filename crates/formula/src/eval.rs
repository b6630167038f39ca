//! Tree-walking evaluation. The parser bounds tree height, so plain
//! recursion is safe here; long operator runs are folded in a loop. A
//! formula's statements run in order and the first error value stops the
//! run, so a failed statement can never be mistaken for a selection.

use crate::ast::{Expr, Statement};
use crate::functions::call;
use crate::ops::{append, binary, negate, not};
use crate::{Document, EvalContext, Value};

/// What an expression is evaluated against.
pub(crate) struct Env<'a> {
    pub doc: &'a dyn Document,
    pub ctx: &'a EvalContext,
}

/// The result of running a formula.
pub(crate) struct Outcome {
    /// The value of the last statement (or the first error).
    pub last: Value,
    /// The value of the last `SELECT` statement that ran, if any.
    pub selected: Option<Value>,
}

pub(crate) fn run(statements: &[Statement], env: &Env) -> Outcome {
    let mut outcome = Outcome {
        last: Value::text(""),
        selected: None,
    };
    for statement in statements {
        let value = match statement {
            Statement::Select(e) => eval_expr(e, env),
            Statement::Expr(e) => eval_expr(e, env),
        };
        if matches!(value, Value::Error(_)) || matches!(statement, Statement::Select(_)) {
            outcome.selected = Some(value.clone());
        }
        let failed = matches!(value, Value::Error(_));
        outcome.last = value;
        if failed {
            break;
        }
    }
    outcome
}

pub(crate) fn eval_expr(expr: &Expr, env: &Env) -> Value {
    match expr {
        Expr::Number(n) => Value::number(*n),
        Expr::Text(s) => Value::text(s.clone()),
        Expr::DateTime(t) => Value::datetime(*t),
        Expr::Item(name) => env.doc.item(name).unwrap_or_else(|| Value::text("")),
        Expr::List(items) => list(items, env),
        Expr::Neg(e) => negate(eval_expr(e, env)),
        Expr::Not(e) => not(eval_expr(e, env)),
        Expr::Chain { first, rest } => {
            rest.iter()
                .fold(eval_expr(first, env), |acc, (op, e)| match acc {
                    Value::Error(_) => acc,
                    acc => binary(*op, acc, eval_expr(e, env)),
                })
        }
        Expr::Call { func, args } => call(*func, args, env),
    }
}

/// `a : b : ...`: concatenates the elements' lists.
fn list(items: &[Expr], env: &Env) -> Value {
    let mut values = items.iter().map(|e| eval_expr(e, env));
    let first = values.next().unwrap_or(Value::Text(Vec::new()));
    values.fold(first, append)
}
