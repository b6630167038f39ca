//! Recursive-descent parser, one function per precedence level. Two guards
//! keep hostile input from overflowing the stack: a descent counter checked
//! on every recursive entry (parentheses, argument lists, prefix
//! operators), and a height computed for every node. Both are limited to
//! [`MAX_DEPTH`], and exceeding either is an ordinary syntax error.
//!
//! Precedence, loosest first: `&` `|` (equal, left to right); prefix `!`;
//! comparisons; `+ -`; `* /`; prefix `- +`; list `:`.

use crate::ast::{BinOp, Expr, Statement};
use crate::functions::Func;
use crate::lexer::{tokenize, Pos, Sym, Tok, Token};
use crate::FormulaError;

/// The deepest nesting a formula may have.
pub const MAX_DEPTH: usize = 200;

type Result<T> = std::result::Result<T, FormulaError>;

/// A parsed expression and the height of its tree.
struct Node {
    expr: Expr,
    height: usize,
}

pub(crate) fn parse(src: &str) -> Result<Vec<Statement>> {
    let mut parser = Parser {
        toks: tokenize(src)?,
        at: 0,
        depth: 0,
    };
    parser.program()
}

struct Parser {
    toks: Vec<Token>,
    at: usize,
    depth: usize,
}

fn logical_op(tok: &Tok) -> Option<BinOp> {
    match tok {
        Tok::Sym(Sym::And) => Some(BinOp::And),
        Tok::Sym(Sym::Or) => Some(BinOp::Or),
        _ => None,
    }
}

fn compare_op(tok: &Tok) -> Option<BinOp> {
    match tok {
        Tok::Sym(Sym::Eq) => Some(BinOp::Eq),
        Tok::Sym(Sym::Ne) => Some(BinOp::Ne),
        Tok::Sym(Sym::Lt) => Some(BinOp::Lt),
        Tok::Sym(Sym::Gt) => Some(BinOp::Gt),
        Tok::Sym(Sym::Le) => Some(BinOp::Le),
        Tok::Sym(Sym::Ge) => Some(BinOp::Ge),
        _ => None,
    }
}

fn additive_op(tok: &Tok) -> Option<BinOp> {
    match tok {
        Tok::Sym(Sym::Plus) => Some(BinOp::Add),
        Tok::Sym(Sym::Minus) => Some(BinOp::Sub),
        _ => None,
    }
}

fn multiplicative_op(tok: &Tok) -> Option<BinOp> {
    match tok {
        Tok::Sym(Sym::Star) => Some(BinOp::Mul),
        Tok::Sym(Sym::Slash) => Some(BinOp::Div),
        _ => None,
    }
}

impl Parser {
    fn token(&self) -> Option<&Token> {
        self.toks.get(self.at).or_else(|| self.toks.last())
    }

    fn peek(&self) -> &Tok {
        self.token().map_or(&Tok::End, |t| &t.tok)
    }

    fn pos(&self) -> Pos {
        self.token().map_or(Pos { line: 1, column: 1 }, |t| t.pos)
    }

    fn advance(&mut self) -> Option<Token> {
        let token = self.toks.get(self.at).cloned();
        self.at += 1;
        token
    }

    fn eat(&mut self, sym: Sym) -> bool {
        let hit = *self.peek() == Tok::Sym(sym);
        if hit {
            self.at += 1;
        }
        hit
    }

    fn expect(&mut self, sym: Sym, message: &str) -> Result<()> {
        if self.eat(sym) {
            Ok(())
        } else {
            Err(self.pos().syntax(message))
        }
    }

    fn at_end(&self) -> bool {
        *self.peek() == Tok::End
    }

    fn enter(&mut self) -> Result<()> {
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            return Err(self.too_deep(self.pos()));
        }
        Ok(())
    }

    fn leave(&mut self) {
        self.depth = self.depth.saturating_sub(1);
    }

    fn too_deep(&self, pos: Pos) -> FormulaError {
        pos.syntax(format!("formula nests deeper than {MAX_DEPTH} levels"))
    }

    fn node(&self, expr: Expr, height: usize, pos: Pos) -> Result<Node> {
        if height > MAX_DEPTH {
            return Err(self.too_deep(pos));
        }
        Ok(Node { expr, height })
    }

    fn program(&mut self) -> Result<Vec<Statement>> {
        let mut statements = Vec::new();
        loop {
            while self.eat(Sym::Semi) {}
            if self.at_end() {
                break;
            }
            statements.push(self.statement()?);
            if !self.at_end() {
                self.expect(Sym::Semi, "expected ';' between statements")?;
            }
        }
        if statements.is_empty() {
            return Err(self.pos().syntax("formula has no statements"));
        }
        Ok(statements)
    }

    fn statement(&mut self) -> Result<Statement> {
        if *self.peek() == Tok::Select {
            self.at += 1;
            return Ok(Statement::Select(self.expr()?.expr));
        }
        Ok(Statement::Expr(self.expr()?.expr))
    }

    fn expr(&mut self) -> Result<Node> {
        self.chain(logical_op, Self::negation)
    }

    fn chain(
        &mut self,
        op_of: fn(&Tok) -> Option<BinOp>,
        operand: fn(&mut Self) -> Result<Node>,
    ) -> Result<Node> {
        let pos = self.pos();
        let first = operand(self)?;
        let mut height = first.height;
        let mut rest = Vec::new();
        while let Some(op) = op_of(self.peek()) {
            self.at += 1;
            let next = operand(self)?;
            height = height.max(next.height);
            rest.push((op, next.expr));
        }
        if rest.is_empty() {
            return Ok(first);
        }
        let first = Box::new(first.expr);
        self.node(Expr::Chain { first, rest }, height + 1, pos)
    }

    fn negation(&mut self) -> Result<Node> {
        if !self.eat(Sym::Not) {
            return self.chain(compare_op, Self::additive);
        }
        self.prefix(Self::negation, Expr::Not)
    }

    /// Parses the operand of a prefix operator and wraps it with `wrap`.
    fn prefix(
        &mut self,
        operand: fn(&mut Self) -> Result<Node>,
        wrap: fn(Box<Expr>) -> Expr,
    ) -> Result<Node> {
        let pos = self.pos();
        self.enter()?;
        let inner = operand(self)?;
        self.leave();
        self.node(wrap(Box::new(inner.expr)), inner.height + 1, pos)
    }

    fn additive(&mut self) -> Result<Node> {
        self.chain(additive_op, Self::multiplicative)
    }

    fn multiplicative(&mut self) -> Result<Node> {
        self.chain(multiplicative_op, Self::unary)
    }

    fn unary(&mut self) -> Result<Node> {
        self.signed(Self::unary, Self::list)
    }

    /// A run of `-`/`+` signs before `operand`; `+` is accepted and ignored.
    fn signed(
        &mut self,
        again: fn(&mut Self) -> Result<Node>,
        operand: fn(&mut Self) -> Result<Node>,
    ) -> Result<Node> {
        if self.eat(Sym::Minus) {
            return self.prefix(again, Expr::Neg);
        }
        if !self.eat(Sym::Plus) {
            return operand(self);
        }
        self.enter()?;
        let inner = again(self);
        self.leave();
        inner
    }

    fn list(&mut self) -> Result<Node> {
        let pos = self.pos();
        let first = self.element()?;
        if *self.peek() != Tok::Sym(Sym::Colon) {
            return Ok(first);
        }
        let mut height = first.height;
        let mut items = vec![first.expr];
        while self.eat(Sym::Colon) {
            let next = self.element()?;
            height = height.max(next.height);
            items.push(next.expr);
        }
        self.node(Expr::List(items), height + 1, pos)
    }

    fn element(&mut self) -> Result<Node> {
        self.signed(Self::element, Self::primary)
    }

    fn primary(&mut self) -> Result<Node> {
        let pos = self.pos();
        let Some(token) = self.advance() else {
            return Err(pos.syntax("unexpected end of formula"));
        };
        let expr = match token.tok {
            Tok::Number(n) => Expr::Number(n),
            Tok::Text(s) => Expr::Text(s),
            Tok::DateTime(t) => Expr::DateTime(t),
            Tok::Ident(name) => Expr::Item(name),
            Tok::Func(name) => return self.call(name, pos),
            Tok::Sym(Sym::LParen) => return self.parenthesized(),
            Tok::End => return Err(pos.syntax("unexpected end of formula")),
            Tok::Select => {
                return Err(
                    pos.syntax("unexpected SELECT (only allowed at the start of a statement)")
                )
            }
            Tok::Sym(sym) => return Err(pos.syntax(format!("unexpected '{}'", sym.text()))),
        };
        Ok(Node { expr, height: 1 })
    }

    fn parenthesized(&mut self) -> Result<Node> {
        self.enter()?;
        let inner = self.expr()?;
        self.expect(Sym::RParen, "expected ')'")?;
        self.leave();
        Ok(inner)
    }

    fn call(&mut self, name: String, pos: Pos) -> Result<Node> {
        let Some(func) = Func::lookup(&name) else {
            return Err(FormulaError::UnknownFunction {
                line: pos.line,
                column: pos.column,
                name,
            });
        };
        let args = if self.eat(Sym::LParen) {
            self.arguments()?
        } else {
            Vec::new()
        };
        check_arity(func, &name, args.len(), pos)?;
        let height = args.iter().map(|a| a.height).max().unwrap_or(0) + 1;
        let args: Vec<Expr> = args.into_iter().map(|a| a.expr).collect();
        if func == Func::IsAvailable && !matches!(args.as_slice(), [Expr::Item(_)]) {
            return Err(pos.syntax("@IsAvailable takes an item name"));
        }
        self.node(Expr::Call { func, args }, height, pos)
    }

    fn arguments(&mut self) -> Result<Vec<Node>> {
        self.enter()?;
        let mut args = Vec::new();
        if !self.eat(Sym::RParen) {
            loop {
                args.push(self.expr()?);
                if self.eat(Sym::RParen) {
                    break;
                }
                self.expect(Sym::Semi, "expected ';' or ')' in argument list")?;
            }
        }
        self.leave();
        Ok(args)
    }
}

fn check_arity(func: Func, name: &str, found: usize, pos: Pos) -> Result<()> {
    if func.accepts(found) {
        return Ok(());
    }
    Err(FormulaError::ArgumentCount {
        line: pos.line,
        column: pos.column,
        name: name.to_string(),
        expected: func.expected(),
        found,
    })
}
