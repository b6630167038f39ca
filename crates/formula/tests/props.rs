//! Property tests: the parser never panics on any input, arithmetic agrees
//! with a tiny reference evaluator, and evaluation never panics on random
//! well-formed formulas against random documents.

mod common;

use common::{ctx, MapDoc};
use formula::{Formula, Value};
use proptest::prelude::*;

const VALID: &[&str] = &[
    r#"SELECT @Contains(Subject; "x") & Amount > 2"#,
    r#"@If(@IsAvailable(Tags); @Elements(Tags); -1)"#,
    r#"x : "b" : {c} : @Text(@Adjust([2026-11-21]; 1; 2; 3; 4; 5; 6))"#,
    r#"@Left(@Uppercase(Subject); " ") + @Right(Subject; 3); SELECT @All"#,
    r#"@Sum(1 : 2; Amount) / (3 - 3) != @Length("abc")"#,
    r#"!(@Created < @Now) | @Modified >= @Today - 86400"#,
];

/// One random edit: insert, delete or replace a character.
fn mutate(src: &str, edits: &[(usize, u8, char)]) -> String {
    let mut chars: Vec<char> = src.chars().collect();
    for &(at, kind, c) in edits {
        let at = at % (chars.len() + 1);
        match kind % 3 {
            0 => chars.insert(at, c),
            1 if at < chars.len() => {
                chars.remove(at);
            }
            _ if at < chars.len() => chars[at] = c,
            _ => chars.push(c),
        }
    }
    chars.into_iter().collect()
}

fn formula_char() -> impl Strategy<Value = char> {
    prop::sample::select(
        "+-*/=<>!&|:;(){}[]\"\\@ aZ9_$.e\n"
            .chars()
            .collect::<Vec<_>>(),
    )
}

fn eval_everything(src: &str, doc: &MapDoc) {
    if let Ok(f) = Formula::parse(src) {
        let _ = f.eval(doc, &ctx());
        let _ = f.selects(doc, &ctx());
    }
}

proptest! {
    #[test]
    fn parse_never_panics_on_arbitrary_strings(src in any::<String>()) {
        let _ = Formula::parse(&src);
    }

    #[test]
    fn parse_never_panics_on_formula_like_noise(
        src in proptest::collection::vec(formula_char(), 0..300)
    ) {
        let src: String = src.into_iter().collect();
        eval_everything(&src, &MapDoc::default());
    }

    #[test]
    fn parse_and_eval_never_panic_on_mutated_formulas(
        base in prop::sample::select(VALID),
        edits in proptest::collection::vec((any::<usize>(), any::<u8>(), formula_char()), 1..6),
        doc in document(),
    ) {
        prop_assert!(Formula::parse(base).is_ok(), "{base}");
        eval_everything(&mutate(base, &edits), &doc);
    }
}

/// Arithmetic over small integers, with the reference result.
#[derive(Debug, Clone)]
enum Arith {
    Int(i32),
    Neg(Box<Arith>),
    Bin(char, Box<Arith>, Box<Arith>),
}

fn arith() -> impl Strategy<Value = Arith> {
    (-20i32..=20)
        .prop_map(Arith::Int)
        .prop_recursive(6, 64, 2, |inner| {
            prop_oneof![
                inner.clone().prop_map(|e| Arith::Neg(Box::new(e))),
                (
                    prop::sample::select(vec!['+', '-', '*', '/']),
                    inner.clone(),
                    inner
                )
                    .prop_map(|(op, a, b)| Arith::Bin(
                        op,
                        Box::new(a),
                        Box::new(b)
                    )),
            ]
        })
}

impl Arith {
    fn render(&self) -> String {
        match self {
            Arith::Int(n) if *n < 0 => format!("({n})"),
            Arith::Int(n) => n.to_string(),
            Arith::Neg(e) => format!("-{}", e.render()),
            Arith::Bin(op, a, b) => format!("({} {op} {})", a.render(), b.render()),
        }
    }

    /// `None` means division by zero somewhere.
    fn reference(&self) -> Option<f64> {
        match self {
            Arith::Int(n) => Some(f64::from(*n)),
            Arith::Neg(e) => e.reference().map(|x| -x),
            Arith::Bin(op, a, b) => {
                let (a, b) = (a.reference()?, b.reference()?);
                match op {
                    '+' => Some(a + b),
                    '-' => Some(a - b),
                    '*' => Some(a * b),
                    _ if b == 0.0 => None,
                    _ => Some(a / b),
                }
            }
        }
    }
}

/// A flat `a op b op c ...` with the usual precedence, evaluated by the
/// reference as sums of products.
fn flat_reference(first: i32, rest: &[(char, i32)]) -> f64 {
    let mut sum = 0.0;
    let mut sign = 1.0;
    let mut product = f64::from(first);
    for &(op, n) in rest {
        let n = f64::from(n);
        match op {
            '*' => product *= n,
            _ => {
                sum += sign * product;
                sign = if op == '+' { 1.0 } else { -1.0 };
                product = n;
            }
        }
    }
    sum + sign * product
}

proptest! {
    #[test]
    fn arithmetic_matches_the_reference(e in arith()) {
        let src = e.render();
        let got = common::eval(&src);
        match e.reference() {
            Some(x) => prop_assert_eq!(got, Value::number(x), "{}", src),
            None => prop_assert!(
                matches!(&got, Value::Error(m) if m == "division by zero"),
                "{} gave {:?}", src, got
            ),
        }
    }

    #[test]
    fn precedence_matches_the_reference(
        first in 0i32..10,
        rest in proptest::collection::vec((prop::sample::select(vec!['+', '-', '*']), 0i32..10), 0..12),
    ) {
        let src = rest.iter().fold(first.to_string(), |s, (op, n)| format!("{s} {op} {n}"));
        prop_assert_eq!(common::eval(&src), Value::number(flat_reference(first, &rest)), "{}", src);
    }
}

fn value() -> impl Strategy<Value = Value> {
    let number = prop_oneof![
        -5.0f64..5.0,
        Just(0.0),
        Just(f64::NAN),
        Just(f64::INFINITY),
        Just(f64::MAX),
        Just(-1e300)
    ];
    let time = prop_oneof![
        any::<i64>(),
        Just(i64::MAX),
        Just(i64::MIN),
        0i64..4_000_000_000_000_000
    ];
    let word = prop_oneof![Just(String::new()), "[a-c ]{0,4}", any::<String>()];
    prop_oneof![
        proptest::collection::vec(word, 0..3).prop_map(Value::Text),
        proptest::collection::vec(number, 0..3).prop_map(Value::Number),
        proptest::collection::vec(time, 0..3).prop_map(Value::DateTime),
        Just(Value::Error("stored error".to_string())),
    ]
}

fn document() -> impl Strategy<Value = MapDoc> {
    (
        proptest::collection::vec(prop::option::of(value()), 3),
        any::<i64>(),
        any::<i64>(),
    )
        .prop_map(|(values, created, modified)| {
            let mut doc = MapDoc {
                created,
                modified,
                ..MapDoc::default()
            };
            for (name, v) in ["A", "B", "C"].iter().zip(values) {
                if let Some(v) = v {
                    doc = doc.with(name, v);
                }
            }
            doc
        })
}

fn leaf() -> impl Strategy<Value = String> {
    prop_oneof![
        (-3i32..100).prop_map(|n| format!("({n})")),
        Just("2.5".to_string()),
        Just("1e300".to_string()),
        Just(r#""a b""#.to_string()),
        Just("{}".to_string()),
        Just("[2026-11-21]".to_string()),
        Just("[2026-11-21T10:00:00Z]".to_string()),
        prop::sample::select(vec!["A", "b", "C", "Missing"]).prop_map(String::from),
        prop::sample::select(vec!["@All", "@Created", "@Modified", "@Now", "@Today"])
            .prop_map(String::from),
        prop::sample::select(vec!["A", "B", "C"]).prop_map(|n| format!("@IsAvailable({n})")),
    ]
}

fn well_formed() -> impl Strategy<Value = String> {
    leaf().prop_recursive(5, 48, 7, |inner| {
        let op = prop::sample::select(vec![
            "+", "-", "*", "/", "=", "!=", "<", ">", "<=", ">=", "&", "|", ":",
        ]);
        let unary = prop::sample::select(vec!["-", "!"]);
        let one = prop::sample::select(vec![
            "@Lowercase",
            "@Uppercase",
            "@Text",
            "@Length",
            "@Elements",
            "@Sum",
        ]);
        let two = prop::sample::select(vec!["@Contains", "@Begins", "@Left", "@Right"]);
        prop_oneof![
            (inner.clone(), op, inner.clone()).prop_map(|(a, op, b)| format!("({a} {op} {b})")),
            (unary, inner.clone()).prop_map(|(u, a)| format!("({u}({a}))")),
            (one, inner.clone()).prop_map(|(f, a)| format!("{f}({a})")),
            (two, inner.clone(), inner.clone()).prop_map(|(f, a, b)| format!("{f}({a}; {b})")),
            proptest::collection::vec(inner.clone(), 7)
                .prop_map(|a| format!("@Adjust({})", a.join("; "))),
            proptest::collection::vec(inner.clone(), 3)
                .prop_map(|a| format!("@If({})", a.join("; "))),
        ]
    })
}

/// One statement, or a statement followed by a `SELECT`.
fn well_formed_formula() -> impl Strategy<Value = String> {
    (well_formed(), prop::option::of(well_formed())).prop_map(|(a, select)| match select {
        Some(b) => format!("{a}; SELECT {b}"),
        None => a,
    })
}

proptest! {
    #[test]
    fn eval_never_panics_on_well_formed_formulas(src in well_formed_formula(), doc in document()) {
        let f = Formula::parse(&src);
        prop_assert!(f.is_ok(), "{} -> {:?}", src, f);
        if let Ok(f) = f {
            let value = f.eval(&doc, &ctx());
            let selected = f.selects(&doc, &ctx());
            // Selection agrees with the value when there is no SELECT.
            if !src.contains("SELECT") {
                prop_assert_eq!(selected, value.is_true());
            }
        }
    }
}
