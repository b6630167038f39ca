//! The operators. Every operator works on whole lists: two lists are
//! combined pairwise, the shorter list's last element repeating, which is
//! how a scalar (a list of one) meets a list. Any failure — mismatched
//! types, division by zero, overflow — becomes a [`Value::Error`], and an
//! error operand passes straight through, so errors propagate to the result.

use std::cmp::Ordering;

use crate::ast::BinOp;
use crate::Value;

type Pairwise<T> = Result<Vec<T>, String>;

/// Combines `a` and `b` element by element; an empty list yields an empty list.
pub(crate) fn pairwise<A, B, R>(
    a: &[A],
    b: &[B],
    mut f: impl FnMut(&A, &B) -> Result<R, String>,
) -> Pairwise<R> {
    let (Some(last_a), Some(last_b)) = (a.last(), b.last()) else {
        return Ok(Vec::new());
    };
    (0..a.len().max(b.len()))
        .map(|i| f(a.get(i).unwrap_or(last_a), b.get(i).unwrap_or(last_b)))
        .collect()
}

fn wrap<T>(result: Pairwise<T>, make: fn(Vec<T>) -> Value) -> Value {
    result.map_or_else(Value::Error, make)
}

/// Applies a binary operator.
pub(crate) fn binary(op: BinOp, a: Value, b: Value) -> Value {
    match (&a, &b) {
        (Value::Error(_), _) => a,
        (_, Value::Error(_)) => b,
        _ => match op {
            BinOp::Add | BinOp::Sub | BinOp::Mul | BinOp::Div => arithmetic(op, &a, &b),
            BinOp::And | BinOp::Or => logical(op, &a, &b),
            _ => compare(op, &a, &b),
        },
    }
}

fn op_text(op: BinOp) -> &'static str {
    match op {
        BinOp::Add => "+",
        BinOp::Sub => "-",
        BinOp::Mul => "*",
        BinOp::Div => "/",
        BinOp::Eq => "=",
        BinOp::Ne => "!=",
        BinOp::Lt => "<",
        BinOp::Gt => ">",
        BinOp::Le => "<=",
        BinOp::Ge => ">=",
        BinOp::And => "&",
        BinOp::Or => "|",
    }
}

fn mismatch(op: BinOp, a: &Value, b: &Value) -> Value {
    Value::Error(format!(
        "type mismatch: cannot apply {} to {} and {}",
        op_text(op),
        a.kind(),
        b.kind()
    ))
}

fn arithmetic(op: BinOp, a: &Value, b: &Value) -> Value {
    match (op, a, b) {
        (BinOp::Add, Value::Text(x), Value::Text(y)) => {
            wrap(pairwise(x, y, |p, q| Ok(format!("{p}{q}"))), Value::Text)
        }
        (_, Value::Number(x), Value::Number(y)) => {
            wrap(pairwise(x, y, |p, q| number(op, *p, *q)), Value::Number)
        }
        (BinOp::Add, Value::DateTime(x), Value::Number(y)) => {
            wrap(pairwise(x, y, |t, s| shift(*t, *s)), Value::DateTime)
        }
        (BinOp::Add, Value::Number(x), Value::DateTime(y)) => {
            wrap(pairwise(x, y, |s, t| shift(*t, *s)), Value::DateTime)
        }
        (BinOp::Sub, Value::DateTime(x), Value::Number(y)) => {
            wrap(pairwise(x, y, |t, s| shift(*t, -*s)), Value::DateTime)
        }
        (BinOp::Sub, Value::DateTime(x), Value::DateTime(y)) => wrap(
            pairwise(x, y, |p, q| Ok(seconds_between(*p, *q))),
            Value::Number,
        ),
        _ => mismatch(op, a, b),
    }
}

fn number(op: BinOp, a: f64, b: f64) -> Result<f64, String> {
    let result = match op {
        BinOp::Add => a + b,
        BinOp::Sub => a - b,
        BinOp::Mul => a * b,
        _ if b == 0.0 => return Err("division by zero".to_string()),
        _ => a / b,
    };
    if result.is_finite() || !(a.is_finite() && b.is_finite()) {
        Ok(result)
    } else {
        Err("numeric overflow".to_string())
    }
}

/// Moves a date-time by a number of seconds.
fn shift(t: i64, seconds: f64) -> Result<i64, String> {
    let micros = (seconds * 1e6).round();
    if !micros.is_finite() || micros.abs() >= 9.2e18 {
        return Err("date-time out of range".to_string());
    }
    t.checked_add(micros as i64)
        .ok_or_else(|| "date-time out of range".to_string())
}

fn seconds_between(a: i64, b: i64) -> f64 {
    (i128::from(a) - i128::from(b)) as f64 / 1e6
}

fn compare(op: BinOp, a: &Value, b: &Value) -> Value {
    let hits = match (a, b) {
        (Value::Text(x), Value::Text(y)) => pairwise(x, y, |p, q| Ok(test(op, Some(p.cmp(q))))),
        (Value::Number(x), Value::Number(y)) => {
            pairwise(x, y, |p, q| Ok(test(op, p.partial_cmp(q))))
        }
        (Value::DateTime(x), Value::DateTime(y)) => {
            pairwise(x, y, |p, q| Ok(test(op, Some(p.cmp(q)))))
        }
        _ => return mismatch(op, a, b),
    };
    wrap(hits, |hits| Value::boolean(hits.contains(&true)))
}

/// Whether the ordering of one pair satisfies comparison `op`; an
/// unordered pair (NaN) only satisfies `!=`.
fn test(op: BinOp, ord: Option<Ordering>) -> bool {
    match op {
        BinOp::Eq => ord == Some(Ordering::Equal),
        BinOp::Lt => ord == Some(Ordering::Less),
        BinOp::Gt => ord == Some(Ordering::Greater),
        BinOp::Le => matches!(ord, Some(Ordering::Less | Ordering::Equal)),
        BinOp::Ge => matches!(ord, Some(Ordering::Greater | Ordering::Equal)),
        _ => ord != Some(Ordering::Equal),
    }
}

fn logical(op: BinOp, a: &Value, b: &Value) -> Value {
    match (a, b) {
        (Value::Number(_), Value::Number(_)) if op == BinOp::And => {
            Value::boolean(a.is_true() && b.is_true())
        }
        (Value::Number(_), Value::Number(_)) => Value::boolean(a.is_true() || b.is_true()),
        _ => mismatch(op, a, b),
    }
}

/// Prefix `-`.
pub(crate) fn negate(v: Value) -> Value {
    match v {
        Value::Number(xs) => Value::Number(xs.into_iter().map(|x| -x).collect()),
        Value::Error(_) => v,
        other => Value::Error(format!("type mismatch: cannot negate {}", other.kind())),
    }
}

/// Prefix `!`.
pub(crate) fn not(v: Value) -> Value {
    match v {
        Value::Number(_) => Value::boolean(!v.is_true()),
        Value::Error(_) => v,
        other => Value::Error(format!("type mismatch: cannot apply ! to {}", other.kind())),
    }
}

/// Appends `b` to list `a` (the `:` operator); both must have one type.
pub(crate) fn append(a: Value, b: Value) -> Value {
    match (a, b) {
        (a @ Value::Error(_), _) | (_, a @ Value::Error(_)) => a,
        (Value::Text(mut x), Value::Text(y)) => {
            x.extend(y);
            Value::Text(x)
        }
        (Value::Number(mut x), Value::Number(y)) => {
            x.extend(y);
            Value::Number(x)
        }
        (Value::DateTime(mut x), Value::DateTime(y)) => {
            x.extend(y);
            Value::DateTime(x)
        }
        (a, b) => Value::Error(format!(
            "type mismatch: cannot make a list of {} and {}",
            a.kind(),
            b.kind()
        )),
    }
}
