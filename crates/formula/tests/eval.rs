//! Evaluation: every operator and function, list semantics and error values.

mod common;

use common::{ctx, eval, eval_on, MapDoc, NOW};
use formula::{Formula, Value};

fn num(x: f64) -> Value {
    Value::number(x)
}

fn nums(xs: &[f64]) -> Value {
    Value::Number(xs.to_vec())
}

fn text(s: &str) -> Value {
    Value::text(s)
}

fn texts(xs: &[&str]) -> Value {
    Value::Text(xs.iter().map(|s| s.to_string()).collect())
}

/// Microseconds for an RFC 3339 string.
fn at(s: &str) -> i64 {
    chrono::DateTime::parse_from_rfc3339(s)
        .map(|d| d.timestamp_micros())
        .unwrap_or_else(|e| panic!("{s}: {e}"))
}

fn is_error(v: &Value, needle: &str) -> bool {
    matches!(v, Value::Error(m) if m.contains(needle))
}

fn doc() -> MapDoc {
    MapDoc {
        created: at("2026-01-02T03:04:05Z"),
        modified: at("2026-02-03T04:05:06Z"),
        ..MapDoc::default()
    }
    .with("Subject", text("Quarterly Report"))
    .with("Tags", texts(&["red", "green", "blue"]))
    .with("Amounts", nums(&[1.0, 2.0, 3.5]))
}

#[test]
fn literals() {
    assert_eq!(eval("1"), num(1.0));
    assert_eq!(eval("2.5"), num(2.5));
    assert_eq!(eval("1.5e3"), num(1500.0));
    assert_eq!(
        eval(r#""say \"hi\" \\ there""#),
        text(r#"say "hi" \ there"#)
    );
    assert_eq!(eval("{brace \"text\"}"), text("brace \"text\""));
    assert_eq!(
        eval("[2026-11-21]"),
        Value::datetime(at("2026-11-21T00:00:00Z"))
    );
    assert_eq!(
        eval("[2026-11-21T10:00:00Z]"),
        Value::datetime(at("2026-11-21T10:00:00Z"))
    );
    assert_eq!(
        eval("[2026-11-21T12:00:00+02:00]"),
        Value::datetime(at("2026-11-21T10:00:00Z"))
    );
}

#[test]
fn items_are_case_insensitive_and_missing_is_empty_text() {
    let d = doc();
    assert_eq!(eval_on("subject", &d), text("Quarterly Report"));
    assert_eq!(eval_on("SUBJECT", &d), text("Quarterly Report"));
    assert_eq!(eval_on("Nope", &d), text(""));
    assert_eq!(eval_on("$Ref_2", &d), text(""));
}

#[test]
fn lists_concatenate() {
    let d = doc();
    assert_eq!(
        eval_on(r#""a" : "b" : Tags"#, &d),
        texts(&["a", "b", "red", "green", "blue"])
    );
    assert_eq!(eval("1 : 2 : 3"), nums(&[1.0, 2.0, 3.0]));
    assert_eq!(eval("1 : -2"), nums(&[1.0, -2.0]));
    assert!(is_error(&eval(r#"1 : "a""#), "cannot make a list"));
}

#[test]
fn arithmetic() {
    assert_eq!(eval("1 + 2 * 3"), num(7.0));
    assert_eq!(eval("(1 + 2) * 3"), num(9.0));
    assert_eq!(eval("10 - 4 - 3"), num(3.0));
    assert_eq!(eval("12 / 4 / 3"), num(1.0));
    assert_eq!(eval("-3 + 1"), num(-2.0));
    assert_eq!(eval("--3"), num(3.0));
    assert_eq!(eval("+3"), num(3.0));
    assert_eq!(eval(r#""ab" + "cd""#), text("abcd"));
}

#[test]
fn list_binds_tighter_than_unary_and_arithmetic() {
    assert_eq!(eval("-1 : 2"), nums(&[-1.0, -2.0]));
    assert_eq!(eval("1 + 2 : 3"), nums(&[3.0, 4.0]));
}

#[test]
fn pairwise_operations_repeat_the_shorter_lists_last_element() {
    assert_eq!(eval("(1 : 2 : 3) + (10 : 20)"), nums(&[11.0, 22.0, 23.0]));
    assert_eq!(eval("(1 : 2) * 10"), nums(&[10.0, 20.0]));
    assert_eq!(eval(r#""x" + ("a" : "b")"#), texts(&["xa", "xb"]));
}

#[test]
fn arithmetic_errors_are_values() {
    assert!(is_error(&eval(r#""a" - 1"#), "type mismatch"));
    assert!(is_error(&eval(r#""a" + 1"#), "type mismatch"));
    assert!(is_error(&eval("1 / 0"), "division by zero"));
    assert!(is_error(&eval("1e308 * 10"), "overflow"));
    assert!(is_error(&eval(r#"-"a""#), "cannot negate"));
    // Errors propagate through later operators.
    assert!(is_error(&eval("(1 / 0) + 1 = 2"), "division by zero"));
    assert!(is_error(&eval("@Text(1 / 0)"), "division by zero"));
}

#[test]
fn date_arithmetic_is_in_seconds() {
    let t = at("2026-11-21T10:00:00Z");
    assert_eq!(
        eval("[2026-11-21T10:00:00Z] + 60"),
        Value::datetime(t + 60_000_000)
    );
    assert_eq!(
        eval("60 + [2026-11-21T10:00:00Z]"),
        Value::datetime(t + 60_000_000)
    );
    assert_eq!(
        eval("[2026-11-21T10:00:00Z] - 1"),
        Value::datetime(t - 1_000_000)
    );
    assert_eq!(eval("[2026-11-22] - [2026-11-21]"), num(86_400.0));
    assert!(is_error(
        &eval("[2026-11-22] + [2026-11-21]"),
        "type mismatch"
    ));
    assert!(is_error(&eval("[2026-11-22] + 1e300"), "out of range"));
}

#[test]
fn comparisons() {
    assert_eq!(eval("1 = 1"), num(1.0));
    assert_eq!(eval("1 != 1"), num(0.0));
    assert_eq!(eval("1 <> 2"), num(1.0));
    assert_eq!(eval("1 < 2"), num(1.0));
    assert_eq!(eval("2 > 1"), num(1.0));
    assert_eq!(eval("2 <= 2"), num(1.0));
    assert_eq!(eval("1 >= 2"), num(0.0));
    assert_eq!(eval(r#""abc" < "abd""#), num(1.0));
    assert_eq!(eval(r#""a" = "A""#), num(0.0));
    assert_eq!(eval("[2026-01-01] < [2026-01-02]"), num(1.0));
    assert!(is_error(&eval(r#"1 = "1""#), "type mismatch"));
}

#[test]
fn list_comparisons_are_true_if_any_pair_matches() {
    let d = doc();
    assert_eq!(eval_on(r#"Tags = "green""#, &d), num(1.0));
    assert_eq!(eval_on(r#"Tags = "black""#, &d), num(0.0));
    // != is true if any pair differs.
    assert_eq!(eval_on(r#"Tags != "red""#, &d), num(1.0));
    assert_eq!(eval(r#"("a" : "a") != "a""#), num(0.0));
    // Pairwise, not all-pairs: (1,3) and (2,3) are the pairs.
    assert_eq!(eval("(1 : 2) = (3 : 1)"), num(0.0));
    assert_eq!(eval("(1 : 2) = (3 : 2)"), num(1.0));
}

#[test]
fn logical_operators() {
    assert_eq!(eval("1 & 1"), num(1.0));
    assert_eq!(eval("1 & 0"), num(0.0));
    assert_eq!(eval("0 | 1"), num(1.0));
    assert_eq!(eval("0 | 0"), num(0.0));
    assert_eq!(eval("!0"), num(1.0));
    assert_eq!(eval("!5"), num(0.0));
    assert_eq!(eval("!1 = 2"), num(1.0));
    // & and | have equal precedence, left to right.
    assert_eq!(eval("1 | 0 & 0"), num(0.0));
    assert_eq!(eval("1 = 1 & 2 = 2"), num(1.0));
    assert!(is_error(&eval(r#""a" & 1"#), "type mismatch"));
    assert!(is_error(&eval(r#"!"a""#), "cannot apply !"));
}

#[test]
fn statements_and_select() {
    let d = doc();
    let f = Formula::parse(r#"1; SELECT Subject = "Quarterly Report"; 0"#).unwrap();
    assert_eq!(f.eval(&d, &ctx()), num(0.0));
    assert!(f.selects(&d, &ctx()));
    let f = Formula::parse(r#"select Subject = "Other""#).unwrap();
    assert!(!f.selects(&d, &ctx()));
    // Without SELECT the last statement decides.
    assert!(Formula::parse("0; 1").unwrap().selects(&d, &ctx()));
    assert!(!Formula::parse("1; 0;").unwrap().selects(&d, &ctx()));
    // Text and errors never select; an error stops the formula.
    assert!(!Formula::parse(r#"SELECT "yes""#)
        .unwrap()
        .selects(&d, &ctx()));
    let f = Formula::parse("SELECT 1; 1 / 0; SELECT 1").unwrap();
    assert!(!f.selects(&d, &ctx()));
    assert!(is_error(&f.eval(&d, &ctx()), "division by zero"));
}

#[test]
fn all_contains_begins() {
    let d = doc();
    assert_eq!(eval("@All"), num(1.0));
    assert!(Formula::parse("SELECT @All").unwrap().selects(&d, &ctx()));
    assert_eq!(eval_on(r#"@Contains(Subject; "Report")"#, &d), num(1.0));
    assert_eq!(eval_on(r#"@Contains(Subject; "report")"#, &d), num(0.0));
    assert_eq!(eval_on(r#"@Contains(Tags; "x" : "ree")"#, &d), num(1.0));
    assert_eq!(eval_on(r#"@Begins(Subject; "Quarter")"#, &d), num(1.0));
    assert_eq!(eval_on(r#"@Begins(Subject; "Report")"#, &d), num(0.0));
    assert_eq!(eval_on(r#"@begins(Tags; "bl")"#, &d), num(1.0));
    assert!(is_error(
        &eval("@Contains(1; \"a\")"),
        "@Contains needs text"
    ));
    assert!(is_error(&eval("@Begins(\"a\"; 1)"), "@Begins needs text"));
}

#[test]
fn is_available() {
    let d = doc();
    assert_eq!(eval_on("@IsAvailable(Subject)", &d), num(1.0));
    assert_eq!(eval_on("@IsAvailable(subject)", &d), num(1.0));
    assert_eq!(eval_on("@IsAvailable(Missing)", &d), num(0.0));
}

#[test]
fn clock_functions() {
    let d = doc();
    assert_eq!(eval_on("@Created", &d), Value::datetime(d.created));
    assert_eq!(eval_on("@Modified", &d), Value::datetime(d.modified));
    assert_eq!(eval("@Now"), Value::datetime(NOW));
    assert_eq!(eval("@Now()"), Value::datetime(NOW));
    assert_eq!(eval("@Today"), Value::datetime(at("2026-11-21T00:00:00Z")));
    assert_eq!(eval("@Created > @Now"), num(0.0));
    assert_eq!(eval_on("@Created < @Now", &d), num(1.0));
}

#[test]
fn adjust() {
    assert_eq!(
        eval("@Adjust([2026-01-31T10:00:00Z]; 0; 1; 0; 0; 0; 0)"),
        Value::datetime(at("2026-02-28T10:00:00Z"))
    );
    assert_eq!(
        eval("@Adjust([2026-11-21T10:00:00Z]; 1; -2; 3; 4; 5; 6)"),
        Value::datetime(at("2027-09-24T14:05:06Z"))
    );
    assert_eq!(
        eval("@Adjust([2026-01-01] : [2026-06-01]; 0; 0; -1; 0; 0; 0)"),
        Value::DateTime(vec![at("2025-12-31T00:00:00Z"), at("2026-05-31T00:00:00Z")])
    );
    assert!(is_error(
        &eval("@Adjust(1; 0; 0; 0; 0; 0; 0)"),
        "needs a date-time"
    ));
    assert!(is_error(
        &eval("@Adjust(@Now; 0.5; 0; 0; 0; 0; 0)"),
        "whole numbers"
    ));
    assert!(is_error(
        &eval("@Adjust(@Now; 0; \"x\"; 0; 0; 0; 0)"),
        "needs numbers"
    ));
    assert!(is_error(
        &eval("@Adjust(@Now; 999999999; 0; 0; 0; 0; 0)"),
        "out of range"
    ));
}

#[test]
fn case_functions() {
    let d = doc();
    assert_eq!(eval_on("@Lowercase(Subject)", &d), text("quarterly report"));
    assert_eq!(
        eval_on("@Uppercase(Tags)", &d),
        texts(&["RED", "GREEN", "BLUE"])
    );
    assert!(is_error(&eval("@Uppercase(1)"), "@Uppercase needs text"));
}

#[test]
fn text_function() {
    assert_eq!(eval("@Text(3)"), text("3"));
    assert_eq!(eval("@Text(2.5)"), text("2.5"));
    assert_eq!(eval("@Text(-0)"), text("0"));
    assert_eq!(eval("@Text(1 : 2)"), texts(&["1", "2"]));
    assert_eq!(eval("@Text(\"a\")"), text("a"));
    assert_eq!(
        eval("@Text([2026-11-21T10:00:00Z])"),
        text("2026-11-21T10:00:00Z")
    );
    let d = MapDoc::default().with("When", Value::datetime(i64::MAX));
    assert!(is_error(&eval_on("@Text(When)", &d), "out of range"));
}

#[test]
fn left_and_right() {
    assert_eq!(eval(r#"@Left("Folio"; 3)"#), text("Fol"));
    assert_eq!(eval(r#"@Left("Folio"; 99)"#), text("Folio"));
    assert_eq!(eval(r#"@Left("Folio"; -1)"#), text(""));
    assert_eq!(eval(r#"@Right("Folio"; 2)"#), text("io"));
    assert_eq!(eval(r#"@Right("héllo"; 4)"#), text("éllo"));
    assert_eq!(eval(r#"@Left("Ada Lovelace"; " ")"#), text("Ada"));
    assert_eq!(eval(r#"@Right("Ada Lovelace"; " ")"#), text("Lovelace"));
    assert_eq!(eval(r#"@Left("Ada"; "x")"#), text(""));
    assert_eq!(eval(r#"@Right("a:b" : "c:d"; ":")"#), texts(&["b", "d"]));
    assert!(is_error(&eval("@Left(1; 1)"), "@Left needs text"));
    assert!(is_error(
        &eval("@Right(\"a\"; [2026-01-01])"),
        "a count or a substring"
    ));
}

#[test]
fn length_elements_sum() {
    let d = doc();
    assert_eq!(eval(r#"@Length("héllo")"#), num(5.0));
    assert_eq!(eval_on("@Length(Tags)", &d), nums(&[3.0, 5.0, 4.0]));
    assert!(is_error(&eval("@Length(12)"), "@Length needs text"));
    assert_eq!(eval_on("@Elements(Tags)", &d), num(3.0));
    assert_eq!(eval_on("@Elements(Missing)", &d), num(0.0));
    assert_eq!(eval("@Elements(1 : 2)"), num(2.0));
    assert_eq!(eval_on("@Sum(Amounts)", &d), num(6.5));
    assert_eq!(eval_on("@Sum(Amounts; 10; 1 : 2)", &d), num(19.5));
    assert!(is_error(&eval(r#"@Sum(1; "a")"#), "@Sum needs numbers"));
}

#[test]
fn if_is_lazy_and_picks_the_first_true_branch() {
    assert_eq!(eval(r#"@If(1; "a"; "b")"#), text("a"));
    assert_eq!(eval(r#"@If(0; "a"; "b")"#), text("b"));
    assert_eq!(eval(r#"@If(0; "a"; 1; "b"; "c")"#), text("b"));
    assert_eq!(eval(r#"@If(0; 1 / 0; 2)"#), num(2.0));
    assert!(is_error(&eval(r#"@If("x"; 1; 2)"#), "@If needs a number"));
    assert!(is_error(&eval(r#"@If(1 / 0; 1; 2)"#), "division by zero"));
}

#[test]
fn function_arguments_propagate_errors() {
    assert!(is_error(
        &eval(r#"@Contains(1 / 0; "a")"#),
        "division by zero"
    ));
    assert!(is_error(&eval(r#"@Lowercase("a" - 1)"#), "type mismatch"));
}

#[test]
fn empty_lists_from_documents_do_not_panic() {
    let d = MapDoc::default()
        .with("E", Value::Number(Vec::new()))
        .with("T", Value::Text(Vec::new()));
    assert_eq!(eval_on("E + 1", &d), Value::Number(Vec::new()));
    assert_eq!(eval_on("E = 1", &d), num(0.0));
    assert!(is_error(
        &eval_on("@Left(\"abc\"; E)", &d),
        "a count or a substring"
    ));
    assert_eq!(eval_on("@Elements(T)", &d), num(0.0));
    assert_eq!(eval_on("T : \"x\"", &d), text("x"));
}
