//! Parse-time errors: every kind, with its 1-based line and column.

use formula::{Formula, FormulaError, MAX_DEPTH, MAX_SOURCE_LEN};

fn error(src: &str) -> FormulaError {
    match Formula::parse(src) {
        Ok(_) => panic!("{src:?} parsed but should not"),
        Err(e) => e,
    }
}

fn syntax_at(src: &str) -> (u32, u32, String) {
    match error(src) {
        FormulaError::Syntax {
            line,
            column,
            message,
        } => (line, column, message),
        other => panic!("{src:?}: expected a syntax error, got {other:?}"),
    }
}

#[test]
fn unknown_function_reports_position_and_name() {
    let e = error("Subj + @Foo(1)");
    assert_eq!(
        e,
        FormulaError::UnknownFunction {
            line: 1,
            column: 8,
            name: "Foo".to_string()
        }
    );
    assert_eq!(e.to_string(), "line 1, column 8: unknown function @Foo");
    let e = error("1;\n  @Nope");
    assert_eq!(e.to_string(), "line 2, column 3: unknown function @Nope");
}

#[test]
fn wrong_argument_counts() {
    let e = error("@Left(\"a\")");
    assert_eq!(
        e.to_string(),
        "line 1, column 1: @Left takes 2 arguments, got 1"
    );
    assert!(matches!(
        error("@If(1; 2)"),
        FormulaError::ArgumentCount { found: 2, .. }
    ));
    assert!(matches!(
        error("@If(1; 2; 3; 4)"),
        FormulaError::ArgumentCount { .. }
    ));
    assert!(matches!(
        error("@Now(1)"),
        FormulaError::ArgumentCount { .. }
    ));
    assert!(matches!(
        error("@Sum()"),
        FormulaError::ArgumentCount { .. }
    ));
    assert!(matches!(
        error("@Adjust(@Now; 1)"),
        FormulaError::ArgumentCount { .. }
    ));
    // Function names ignore case; the message uses the name as written.
    assert_eq!(
        error("@LEFT(1)").to_string(),
        "line 1, column 1: @LEFT takes 2 arguments, got 1"
    );
}

#[test]
fn syntax_errors_have_positions() {
    assert_eq!(syntax_at("1 +").0, 1);
    assert_eq!(syntax_at("1 +").1, 4);
    assert_eq!(syntax_at("(1 + 2").2, "expected ')'");
    let (line, column, message) = syntax_at("1;\n\"open");
    assert_eq!((line, column), (2, 1));
    assert_eq!(message, "unterminated string");
    assert_eq!(syntax_at("{open").2, "unterminated {string}");
    assert_eq!(
        syntax_at("[2026-13-45]").2,
        "invalid date-time [2026-13-45]"
    );
    assert_eq!(syntax_at("[2026-01-01").2, "unterminated [date-time]");
    assert_eq!(syntax_at("1 # 2").1, 3);
    assert_eq!(syntax_at("1 2").2, "expected ';' between statements");
    assert_eq!(syntax_at("@(1)").2, "expected a function name after @");
    assert_eq!(
        syntax_at("@IsAvailable(\"x\")").2,
        "@IsAvailable takes an item name"
    );
    assert_eq!(
        syntax_at("@Left(\"a\" 1)").2,
        "expected ';' or ')' in argument list"
    );
    assert!(syntax_at("1 + SELECT 2").2.contains("SELECT"));
    assert_eq!(syntax_at("").2, "formula has no statements");
    assert_eq!(syntax_at(" ; ;").2, "formula has no statements");
    assert!(syntax_at("1e999").2.contains("out of range"));
    assert_eq!(syntax_at("a = !b").1, 5);
}

#[test]
fn error_display_matches_the_documented_form() {
    assert_eq!(error("(1").to_string(), "line 1, column 3: expected ')'");
}

#[test]
fn source_length_is_limited() {
    let long = "1".repeat(MAX_SOURCE_LEN + 1);
    assert_eq!(
        error(&long),
        FormulaError::TooLong {
            len: MAX_SOURCE_LEN + 1,
            limit: MAX_SOURCE_LEN
        }
    );
    let max = format!("{}1", " ".repeat(MAX_SOURCE_LEN - 1));
    assert!(Formula::parse(&max).is_ok());
}

fn assert_too_deep(src: &str) {
    let (_, _, message) = syntax_at(src);
    assert!(message.contains("nests deeper"), "{message}");
}

#[test]
fn nesting_up_to_the_limit_parses_and_beyond_it_is_a_syntax_error() {
    let ok = format!(
        "{}1{}",
        "(".repeat(MAX_DEPTH - 1),
        ")".repeat(MAX_DEPTH - 1)
    );
    assert!(Formula::parse(&ok).is_ok());
    let deep = MAX_DEPTH + 1;
    assert_too_deep(&format!("{}1{}", "(".repeat(deep), ")".repeat(deep)));
    assert_too_deep(&"-".repeat(deep * 100));
    assert_too_deep(&format!("{}1", "!".repeat(deep)));
    assert_too_deep(&format!("{}1{}", "@Text(".repeat(deep), ")".repeat(deep)));
}

#[test]
fn huge_nesting_inside_the_size_limit_does_not_overflow_the_stack() {
    let n = MAX_SOURCE_LEN / 2;
    for src in [
        format!("{}{}", "(".repeat(n), ")".repeat(n)),
        "(".repeat(MAX_SOURCE_LEN),
        format!("{}1", "-(".repeat(n - 1)),
        format!("{}1", "@If(1;".repeat(MAX_SOURCE_LEN / 6 - 1)),
    ] {
        assert!(Formula::parse(&src).is_err());
    }
}

#[test]
fn long_flat_chains_are_not_nesting() {
    let sum = format!("1{}", " + 1".repeat(5_000));
    let list = format!("1{}", " : 1".repeat(5_000));
    assert!(Formula::parse(&sum).is_ok());
    assert!(Formula::parse(&list).is_ok());
    let negated = format!("{}1", "1:-".repeat(MAX_SOURCE_LEN / 3 - 1));
    assert!(Formula::parse(&negated).is_ok());
}

#[test]
fn formulas_at_the_depth_limit_evaluate() {
    let doc = NoItems;
    let ctx = formula::EvalContext { now: 0 };
    let n = MAX_DEPTH / 2 - 1;
    let sums = format!("{}1{}", "1 + (".repeat(n), ")".repeat(n));
    let f = Formula::parse(&sums).unwrap();
    assert_eq!(f.eval(&doc, &ctx), formula::Value::number((n + 1) as f64));
    let ifs = format!("{}1{}", "@If(0; 0; ".repeat(n), ")".repeat(n));
    let f = Formula::parse(&ifs).unwrap();
    assert_eq!(f.eval(&doc, &ctx), formula::Value::number(1.0));
}

struct NoItems;

impl formula::Document for NoItems {
    fn item(&self, _: &str) -> Option<formula::Value> {
        None
    }
    fn created(&self) -> i64 {
        0
    }
    fn modified(&self) -> i64 {
        0
    }
}
