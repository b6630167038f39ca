//! The `@functions`. Each is named once in [`FUNCTIONS`] (so lookup is
//! case-insensitive and unknown names are caught at parse time) and has a
//! declared argument count that the parser enforces. Implementations still
//! match their arguments by slice pattern rather than indexing, so even a
//! hand-built call with the wrong arguments yields an error value.

use chrono::{DateTime, Months, SecondsFormat, TimeDelta, Utc};

use crate::ast::Expr;
use crate::eval::{eval_expr, Env};
use crate::Value;

/// A built-in function.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Func {
    All,
    Contains,
    Begins,
    IsAvailable,
    Created,
    Modified,
    Now,
    Today,
    Adjust,
    Lowercase,
    Uppercase,
    Text,
    Left,
    Right,
    Length,
    If,
    Elements,
    Sum,
}

const FUNCTIONS: &[(&str, Func)] = &[
    ("All", Func::All),
    ("Contains", Func::Contains),
    ("Begins", Func::Begins),
    ("IsAvailable", Func::IsAvailable),
    ("Created", Func::Created),
    ("Modified", Func::Modified),
    ("Now", Func::Now),
    ("Today", Func::Today),
    ("Adjust", Func::Adjust),
    ("Lowercase", Func::Lowercase),
    ("Uppercase", Func::Uppercase),
    ("Text", Func::Text),
    ("Left", Func::Left),
    ("Right", Func::Right),
    ("Length", Func::Length),
    ("If", Func::If),
    ("Elements", Func::Elements),
    ("Sum", Func::Sum),
];

const MICROS_PER_DAY: i64 = 86_400_000_000;

impl Func {
    /// Finds a function by name (without the `@`), ignoring case.
    pub fn lookup(name: &str) -> Option<Func> {
        FUNCTIONS
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, f)| *f)
    }

    fn name(self) -> &'static str {
        FUNCTIONS
            .iter()
            .find(|(_, f)| *f == self)
            .map_or("?", |(n, _)| n)
    }

    /// Whether the function takes `n` arguments.
    pub fn accepts(self, n: usize) -> bool {
        match self {
            Func::All | Func::Created | Func::Modified | Func::Now | Func::Today => n == 0,
            Func::Contains | Func::Begins | Func::Left | Func::Right => n == 2,
            Func::Adjust => n == 7,
            Func::Sum => n >= 1,
            Func::If => n >= 3 && n % 2 == 1,
            _ => n == 1,
        }
    }

    /// The accepted argument count, for error messages.
    pub fn expected(self) -> &'static str {
        match self {
            Func::All | Func::Created | Func::Modified | Func::Now | Func::Today => "0",
            Func::Contains | Func::Begins | Func::Left | Func::Right => "2",
            Func::Adjust => "7",
            Func::Sum => "1 or more",
            Func::If => "an odd number (3 or more) of",
            _ => "1",
        }
    }
}

/// Evaluates a call. `@If` and `@IsAvailable` look at their arguments
/// unevaluated; every other function evaluates all of them first and
/// returns the first error among them.
pub(crate) fn call(func: Func, args: &[Expr], env: &Env) -> Value {
    match (func, args) {
        (Func::If, _) => eval_if(args, env),
        (Func::IsAvailable, [Expr::Item(name)]) => Value::boolean(env.doc.item(name).is_some()),
        (Func::All, _) => Value::boolean(true),
        (Func::Created, _) => Value::datetime(env.doc.created()),
        (Func::Modified, _) => Value::datetime(env.doc.modified()),
        (Func::Now, _) => Value::datetime(env.ctx.now),
        (Func::Today, _) => today(env.ctx.now),
        _ => {
            let values: Vec<Value> = args.iter().map(|a| eval_expr(a, env)).collect();
            match values.iter().find(|v| matches!(v, Value::Error(_))) {
                Some(error) => error.clone(),
                None => apply(func, &values),
            }
        }
    }
}

fn apply(func: Func, values: &[Value]) -> Value {
    match (func, values) {
        (Func::Contains, [t, s]) => text_test(func, t, s, |a, b| a.contains(b)),
        (Func::Begins, [t, s]) => text_test(func, t, s, |a, b| a.starts_with(b)),
        (Func::Adjust, [dt, parts @ ..]) => adjust(dt, parts),
        (Func::Lowercase, [v]) => map_text(func, v, |s| s.to_lowercase()),
        (Func::Uppercase, [v]) => map_text(func, v, |s| s.to_uppercase()),
        (Func::Text, [v]) => to_text(v),
        (Func::Left, [t, n]) => left_right(func, t, n),
        (Func::Right, [t, n]) => left_right(func, t, n),
        (Func::Length, [v]) => length(v),
        (Func::Elements, [v]) => Value::number(elements(v) as f64),
        (Func::Sum, vs) => sum(vs),
        _ => Value::Error(format!("@{} called with the wrong arguments", func.name())),
    }
}

fn needs(func: Func, what: &str, got: &Value) -> Value {
    Value::Error(format!("@{} needs {what}, got {}", func.name(), got.kind()))
}

fn eval_if(args: &[Expr], env: &Env) -> Value {
    let mut rest = args;
    while let [cond, then, tail @ ..] = rest {
        match eval_expr(cond, env) {
            Value::Number(xs) if xs.iter().any(|x| *x != 0.0) => return eval_expr(then, env),
            Value::Number(_) => rest = tail,
            error @ Value::Error(_) => return error,
            other => return needs(Func::If, "a number as condition", &other),
        }
    }
    match rest {
        [otherwise] => eval_expr(otherwise, env),
        _ => Value::Error("@If needs an else value".to_string()),
    }
}

fn today(now: i64) -> Value {
    now.checked_sub(now.rem_euclid(MICROS_PER_DAY)).map_or_else(
        || Value::Error("date-time out of range".to_string()),
        Value::datetime,
    )
}

/// True when any element of `t` and any element of `s` satisfy `test`.
fn text_test(func: Func, t: &Value, s: &Value, test: fn(&str, &str) -> bool) -> Value {
    match (t, s) {
        (Value::Text(ts), Value::Text(ss)) => {
            Value::boolean(ts.iter().any(|a| ss.iter().any(|b| test(a, b))))
        }
        (Value::Text(_), other) | (other, _) => needs(func, "text", other),
    }
}

/// Maps every element of a text list to new text.
fn map_text(func: Func, v: &Value, f: fn(&str) -> String) -> Value {
    match v {
        Value::Text(xs) => Value::Text(xs.iter().map(|s| f(s)).collect()),
        other => needs(func, "text", other),
    }
}

/// `@Length`: the number of characters of each element.
fn length(v: &Value) -> Value {
    match v {
        Value::Text(xs) => Value::Number(xs.iter().map(|s| s.chars().count() as f64).collect()),
        other => needs(Func::Length, "text", other),
    }
}

/// `@Elements`: a single empty string counts as no elements, as a missing
/// item evaluates to `""`.
fn elements(v: &Value) -> usize {
    match v {
        Value::Text(xs) if matches!(xs.as_slice(), [only] if only.is_empty()) => 0,
        Value::Text(xs) => xs.len(),
        Value::Number(xs) => xs.len(),
        Value::DateTime(xs) => xs.len(),
        Value::Error(_) => 0,
    }
}

fn sum(values: &[Value]) -> Value {
    let mut total = 0.0;
    for v in values {
        match v {
            Value::Number(xs) => total += xs.iter().sum::<f64>(),
            other => return needs(Func::Sum, "numbers", other),
        }
    }
    Value::number(total)
}

/// `@Text`: numbers without a needless `.0`, date-times as RFC 3339 UTC.
fn to_text(v: &Value) -> Value {
    match v {
        Value::Number(xs) => Value::Text(xs.iter().map(|x| format_number(*x)).collect()),
        Value::DateTime(xs) => xs
            .iter()
            .map(|t| format_datetime(*t))
            .collect::<Result<Vec<_>, _>>()
            .map_or_else(Value::Error, Value::Text),
        other => other.clone(),
    }
}

fn format_number(x: f64) -> String {
    if x == 0.0 {
        "0".to_string()
    } else {
        x.to_string()
    }
}

fn format_datetime(t: i64) -> Result<String, String> {
    DateTime::<Utc>::from_timestamp_micros(t)
        .map(|dt| dt.to_rfc3339_opts(SecondsFormat::AutoSi, true))
        .ok_or_else(|| "date-time out of range".to_string())
}

/// `@Left`/`@Right` by a character count (number) or up to/after the
/// first occurrence of a substring (text; `""` when it does not occur).
fn left_right(func: Func, t: &Value, by: &Value) -> Value {
    let Value::Text(xs) = t else {
        return needs(func, "text", t);
    };
    let left = func == Func::Left;
    match by {
        Value::Number(n) => match n.first() {
            Some(n) => {
                let count = n.max(0.0) as usize;
                Value::Text(xs.iter().map(|s| take_chars(s, count, left)).collect())
            }
            None => needs(func, "a count or a substring", by),
        },
        Value::Text(sub) => match sub.first() {
            Some(sub) => Value::Text(xs.iter().map(|s| split_at_sub(s, sub, left)).collect()),
            None => needs(func, "a count or a substring", by),
        },
        other => needs(func, "a count or a substring", other),
    }
}

fn take_chars(s: &str, count: usize, left: bool) -> String {
    if left {
        return s.chars().take(count).collect();
    }
    let skip = s.chars().count().saturating_sub(count);
    s.chars().skip(skip).collect()
}

fn split_at_sub(s: &str, sub: &str, left: bool) -> String {
    match s.split_once(sub) {
        Some((before, _)) if left => before.to_string(),
        Some((_, after)) => after.to_string(),
        None => String::new(),
    }
}

/// `@Adjust(dt; years; months; days; hours; minutes; seconds)`.
fn adjust(dt: &Value, parts: &[Value]) -> Value {
    let Value::DateTime(ts) = dt else {
        return needs(Func::Adjust, "a date-time", dt);
    };
    let (months, delta) = match adjustment(parts) {
        Ok(adjustment) => adjustment,
        Err(e) => return Value::Error(e),
    };
    ts.iter()
        .map(|t| adjust_one(*t, months, delta))
        .collect::<Option<Vec<i64>>>()
        .map_or_else(
            || Value::Error("date-time out of range".to_string()),
            Value::DateTime,
        )
}

/// The six `@Adjust` amounts as whole months plus a fixed duration.
fn adjustment(parts: &[Value]) -> Result<(i64, TimeDelta), String> {
    let amounts = parts
        .iter()
        .map(integer)
        .collect::<Result<Vec<i64>, String>>()?;
    let [years, months, days, hours, minutes, seconds] = amounts.as_slice() else {
        return Err("@Adjust takes 7 arguments".to_string());
    };
    let out_of_range = || "@Adjust amount out of range".to_string();
    let total_months = years
        .checked_mul(12)
        .and_then(|y| y.checked_add(*months))
        .ok_or_else(out_of_range)?;
    let delta = [
        TimeDelta::try_days(*days),
        TimeDelta::try_hours(*hours),
        TimeDelta::try_minutes(*minutes),
        TimeDelta::try_seconds(*seconds),
    ]
    .into_iter()
    .try_fold(TimeDelta::zero(), |acc, d| acc.checked_add(&d?))
    .ok_or_else(out_of_range)?;
    Ok((total_months, delta))
}

fn adjust_one(t: i64, months: i64, delta: TimeDelta) -> Option<i64> {
    let dt = DateTime::<Utc>::from_timestamp_micros(t)?;
    let step = Months::new(u32::try_from(months.unsigned_abs()).ok()?);
    let dt = if months >= 0 {
        dt.checked_add_months(step)?
    } else {
        dt.checked_sub_months(step)?
    };
    Some(dt.checked_add_signed(delta)?.timestamp_micros())
}

/// The first element of a number list, which must be a whole number.
fn integer(v: &Value) -> Result<i64, String> {
    match v {
        Value::Number(xs) => match xs.first() {
            Some(x) if x.fract() == 0.0 && x.abs() < 1e15 => Ok(*x as i64),
            _ => Err("@Adjust needs whole numbers".to_string()),
        },
        other => Err(format!("@Adjust needs numbers, got {}", other.kind())),
    }
}
