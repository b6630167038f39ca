//! The parsed form of a formula. Runs of operators of equal precedence are
//! kept flat ([`Expr::Chain`], [`Expr::List`]) instead of as nested binary
//! nodes, so a long `a + b + c + ...` or `"a" : "b" : ...` stays shallow:
//! tree height, and with it evaluation recursion, is bounded by the
//! nesting limit alone rather than by the formula's length.

use crate::functions::Func;

/// An infix operator.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum BinOp {
    Add,
    Sub,
    Mul,
    Div,
    Eq,
    Ne,
    Lt,
    Gt,
    Le,
    Ge,
    And,
    Or,
}

#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Expr {
    Number(f64),
    Text(String),
    DateTime(i64),
    Item(String),
    List(Vec<Expr>),
    Neg(Box<Expr>),
    Not(Box<Expr>),
    /// `first op1 e1 op2 e2 ...`, evaluated left to right.
    Chain {
        first: Box<Expr>,
        rest: Vec<(BinOp, Expr)>,
    },
    Call {
        func: Func,
        args: Vec<Expr>,
    },
}

#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Statement {
    Select(Expr),
    Expr(Expr),
}
