//! Mango selectors, the subset the door answers: `filter=_selector` on the
//! change feed, and `_find`.
//!
//! ```text
//!   {"field": value}                   equal ($eq)
//!   {"field": {"$eq"|"$ne"|"$gt"|"$gte"|"$lt"|"$lte": value}}
//!   {"field": {"$in": [values]}}       equal to one of them
//!   {"field": {"$exists": bool}}
//!   {"$and": [selectors]}, {"$or": [selectors]}
//!   {"a.b": …} or {"a": {"b": …}}      a field inside an object
//!   several keys in one object         all of them ($and)
//! ```
//!
//! Any other operator is refused with 400 naming it, never ignored (a
//! selector that silently matched more than asked would leak a filtered
//! sync's intent into what it fetches). Values compare in CouchDB's
//! collation order of types (null < false < true < numbers < strings <
//! arrays < objects); strings compare by code point, where CouchDB uses
//! ICU collation (they differ for letters of different case or accents).

use crate::error::{CouchError, CouchResult};
use serde_json::{Map, Value};
use std::cmp::Ordering;

/// Most conditions one selector may hold (a bound on the work per
/// document).
const MAX_CONDITIONS: usize = 1_000;

/// A parsed selector.
#[derive(Clone, Debug, PartialEq)]
pub enum Selector {
    And(Vec<Selector>),
    Or(Vec<Selector>),
    Field(Vec<String>, Cond),
}

/// One condition on a field's value.
#[derive(Clone, Debug, PartialEq)]
pub enum Cond {
    Cmp(Op, Value),
    In(Vec<Value>),
    Exists(bool),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Op {
    Eq,
    Ne,
    Gt,
    Gte,
    Lt,
    Lte,
}

impl Selector {
    /// Parses a selector (a JSON object).
    pub fn parse(v: &Value) -> CouchResult<Selector> {
        let mut count = 0;
        let s = parse_object(v, &[], &mut count)?;
        Ok(s)
    }

    /// Whether the document `doc` matches.
    pub fn matches(&self, doc: &Map<String, Value>) -> bool {
        match self {
            Selector::And(all) => all.iter().all(|s| s.matches(doc)),
            Selector::Or(any) => any.iter().any(|s| s.matches(doc)),
            Selector::Field(path, cond) => cond.holds(lookup(doc, path)),
        }
    }
}

fn bad(why: String) -> CouchError {
    CouchError::bad_request(why)
}

fn parse_object(v: &Value, path: &[String], count: &mut usize) -> CouchResult<Selector> {
    let Value::Object(obj) = v else {
        return Err(bad("a selector must be a JSON object".into()));
    };
    let mut all = Vec::new();
    for (key, value) in obj {
        *count += 1;
        if *count > MAX_CONDITIONS {
            return Err(bad(format!(
                "a selector may hold at most {MAX_CONDITIONS} conditions"
            )));
        }
        all.push(parse_entry(key, value, path, count)?);
    }
    Ok(match all.len() {
        1 => all.pop().expect("one"),
        _ => Selector::And(all),
    })
}

fn parse_entry(
    key: &str,
    value: &Value,
    path: &[String],
    count: &mut usize,
) -> CouchResult<Selector> {
    match key {
        "$and" | "$or" => {
            let Value::Array(list) = value else {
                return Err(bad(format!("{key} takes a list of selectors")));
            };
            let parts = list
                .iter()
                .map(|s| parse_object(s, path, count))
                .collect::<CouchResult<Vec<_>>>()?;
            Ok(if key == "$and" {
                Selector::And(parts)
            } else {
                Selector::Or(parts)
            })
        }
        k if k.starts_with('$') => {
            if path.is_empty() {
                return Err(unsupported(k));
            }
            Ok(Selector::Field(path.to_vec(), parse_cond(k, value)?))
        }
        field => {
            let mut p = path.to_vec();
            p.extend(field.split('.').map(str::to_string));
            match value {
                Value::Object(o) if !o.is_empty() => parse_object(value, &p, count),
                _ => Ok(Selector::Field(p, Cond::Cmp(Op::Eq, value.clone()))),
            }
        }
    }
}

fn unsupported(op: &str) -> CouchError {
    bad(format!(
        "selector operator {op} is not supported (supported: $eq, $ne, $gt, $gte, $lt, $lte, \
         $in, $exists, $and, $or)"
    ))
}

fn parse_cond(op: &str, value: &Value) -> CouchResult<Cond> {
    let cmp = |o| Ok(Cond::Cmp(o, value.clone()));
    match op {
        "$eq" => cmp(Op::Eq),
        "$ne" => cmp(Op::Ne),
        "$gt" => cmp(Op::Gt),
        "$gte" => cmp(Op::Gte),
        "$lt" => cmp(Op::Lt),
        "$lte" => cmp(Op::Lte),
        "$in" => match value {
            Value::Array(list) => Ok(Cond::In(list.clone())),
            _ => Err(bad("$in takes a list".into())),
        },
        "$exists" => match value {
            Value::Bool(b) => Ok(Cond::Exists(*b)),
            _ => Err(bad("$exists takes true or false".into())),
        },
        other => Err(unsupported(other)),
    }
}

fn lookup<'d>(doc: &'d Map<String, Value>, path: &[String]) -> Option<&'d Value> {
    let (first, rest) = path.split_first()?;
    let mut v = doc.get(first)?;
    for key in rest {
        v = v.as_object()?.get(key)?;
    }
    Some(v)
}

impl Cond {
    fn holds(&self, v: Option<&Value>) -> bool {
        match (self, v) {
            (Cond::Exists(want), v) => v.is_some() == *want,
            (_, None) => false,
            (Cond::In(list), Some(v)) => list.iter().any(|x| collate(v, x) == Ordering::Equal),
            (Cond::Cmp(op, x), Some(v)) => {
                let o = collate(v, x);
                match op {
                    Op::Eq => o == Ordering::Equal,
                    Op::Ne => o != Ordering::Equal,
                    Op::Gt => o == Ordering::Greater,
                    Op::Gte => o != Ordering::Less,
                    Op::Lt => o == Ordering::Less,
                    Op::Lte => o != Ordering::Greater,
                }
            }
        }
    }
}

fn rank(v: &Value) -> u8 {
    match v {
        Value::Null => 0,
        Value::Bool(false) => 1,
        Value::Bool(true) => 2,
        Value::Number(_) => 3,
        Value::String(_) => 4,
        Value::Array(_) => 5,
        Value::Object(_) => 6,
    }
}

/// CouchDB's order of JSON values (module docs).
fn collate(a: &Value, b: &Value) -> Ordering {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => {
            let (x, y) = (x.as_f64().unwrap_or(0.0), y.as_f64().unwrap_or(0.0));
            x.partial_cmp(&y).unwrap_or(Ordering::Equal)
        }
        (Value::String(x), Value::String(y)) => x.cmp(y),
        (Value::Array(x), Value::Array(y)) => x
            .iter()
            .zip(y)
            .map(|(a, b)| collate(a, b))
            .find(|o| *o != Ordering::Equal)
            .unwrap_or(x.len().cmp(&y.len())),
        (Value::Object(x), Value::Object(y)) => x
            .iter()
            .zip(y)
            .map(|((ka, va), (kb, vb))| ka.cmp(kb).then_with(|| collate(va, vb)))
            .find(|o| *o != Ordering::Equal)
            .unwrap_or(x.len().cmp(&y.len())),
        _ => rank(a).cmp(&rank(b)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn m(sel: Value, doc: Value) -> bool {
        Selector::parse(&sel)
            .unwrap()
            .matches(doc.as_object().unwrap())
    }

    #[test]
    fn the_subset_matches_as_couchdb_does() {
        let d =
            json!({"_id": "a", "type": "note", "n": 5, "tags": ["x"], "o": {"k": "v"}, "z": null});
        assert!(m(json!({"type": "note"}), d.clone()));
        assert!(!m(json!({"type": "mail"}), d.clone()));
        assert!(m(json!({"n": {"$gt": 4, "$lte": 5}}), d.clone()));
        assert!(!m(json!({"n": {"$lt": 5}}), d.clone()));
        assert!(m(json!({"n": {"$in": [1, 5.0]}}), d.clone()));
        assert!(m(json!({"missing": {"$exists": false}}), d.clone()));
        assert!(m(json!({"z": {"$exists": true}}), d.clone()));
        assert!(!m(json!({"missing": {"$ne": 1}}), d.clone()));
        assert!(m(json!({"o.k": "v"}), d.clone()));
        assert!(m(json!({"o": {"k": {"$eq": "v"}}}), d.clone()));
        assert!(m(json!({"$or": [{"type": "mail"}, {"n": 5}]}), d.clone()));
        assert!(!m(json!({"$and": [{"type": "note"}, {"n": 6}]}), d.clone()));
        assert!(m(json!({"tags": ["x"]}), d.clone()));
        assert!(
            m(json!({"n": {"$lt": "a string"}}), d.clone()),
            "numbers sort before strings"
        );
        assert!(m(json!({}), d));
    }

    #[test]
    fn other_operators_are_refused_by_name() {
        for (sel, op) in [
            (json!({"a": {"$regex": "x"}}), "$regex"),
            (json!({"$nor": [{"a": 1}]}), "$nor"),
            (json!({"a": {"$elemMatch": {"b": 1}}}), "$elemMatch"),
            (json!({"$not": {"a": 1}}), "$not"),
        ] {
            let e = Selector::parse(&sel).unwrap_err();
            assert_eq!(e.status, 400);
            assert!(e.reason.contains(op), "{}", e.reason);
        }
        assert_eq!(Selector::parse(&json!([1])).unwrap_err().status, 400);
        assert_eq!(
            Selector::parse(&json!({"a": {"$in": 1}}))
                .unwrap_err()
                .status,
            400
        );
    }
}
