//! Turns source text into tokens, each tagged with its 1-based line and
//! column. Literals (numbers, both string forms, bracketed date-times) are
//! fully decoded here so the parser only ever sees finished values, and
//! every malformed literal is reported at the position where it starts.

use chrono::{DateTime, NaiveDate};

use crate::FormulaError;

/// A 1-based source position.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Pos {
    pub line: u32,
    pub column: u32,
}

impl Pos {
    pub fn syntax(self, message: impl Into<String>) -> FormulaError {
        FormulaError::Syntax {
            line: self.line,
            column: self.column,
            message: message.into(),
        }
    }
}

/// Operators and punctuation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Sym {
    Plus,
    Minus,
    Star,
    Slash,
    Eq,
    Ne,
    Lt,
    Gt,
    Le,
    Ge,
    And,
    Or,
    Not,
    Colon,
    Semi,
    LParen,
    RParen,
}

impl Sym {
    /// The symbol as written in source.
    pub fn text(self) -> &'static str {
        match self {
            Sym::Plus => "+",
            Sym::Minus => "-",
            Sym::Star => "*",
            Sym::Slash => "/",
            Sym::Eq => "=",
            Sym::Ne => "!=",
            Sym::Lt => "<",
            Sym::Gt => ">",
            Sym::Le => "<=",
            Sym::Ge => ">=",
            Sym::And => "&",
            Sym::Or => "|",
            Sym::Not => "!",
            Sym::Colon => ":",
            Sym::Semi => ";",
            Sym::LParen => "(",
            Sym::RParen => ")",
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Tok {
    Number(f64),
    Text(String),
    DateTime(i64),
    Ident(String),
    Func(String),
    Select,
    Sym(Sym),
    End,
}

#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Token {
    pub tok: Tok,
    pub pos: Pos,
}

/// Splits `src` into tokens, ending with a [`Tok::End`] token.
pub(crate) fn tokenize(src: &str) -> Result<Vec<Token>, FormulaError> {
    let mut lexer = Lexer {
        chars: src.chars().collect(),
        at: 0,
        pos: Pos { line: 1, column: 1 },
    };
    let mut out = Vec::new();
    loop {
        lexer.skip_space();
        let pos = lexer.pos;
        let Some(c) = lexer.peek() else {
            out.push(Token { tok: Tok::End, pos });
            return Ok(out);
        };
        let tok = lexer.token(c, pos)?;
        out.push(Token { tok, pos });
    }
}

fn is_ident_start(c: char) -> bool {
    c.is_alphabetic() || c == '_' || c == '$'
}

fn is_ident(c: char) -> bool {
    is_ident_start(c) || c.is_ascii_digit()
}

struct Lexer {
    chars: Vec<char>,
    at: usize,
    pos: Pos,
}

impl Lexer {
    fn peek(&self) -> Option<char> {
        self.chars.get(self.at).copied()
    }

    fn peek_at(&self, ahead: usize) -> Option<char> {
        self.chars.get(self.at + ahead).copied()
    }

    fn bump(&mut self) -> Option<char> {
        let c = self.peek()?;
        self.at += 1;
        if c == '\n' {
            self.pos.line = self.pos.line.saturating_add(1);
            self.pos.column = 1;
        } else {
            self.pos.column = self.pos.column.saturating_add(1);
        }
        Some(c)
    }

    fn eat(&mut self, c: char) -> bool {
        let hit = self.peek() == Some(c);
        if hit {
            self.bump();
        }
        hit
    }

    fn skip_space(&mut self) {
        while self.peek().is_some_and(char::is_whitespace) {
            self.bump();
        }
    }

    fn take_while(&mut self, keep: fn(char) -> bool) -> String {
        let mut s = String::new();
        while let Some(c) = self.peek().filter(|c| keep(*c)) {
            s.push(c);
            self.bump();
        }
        s
    }

    fn token(&mut self, c: char, pos: Pos) -> Result<Tok, FormulaError> {
        match c {
            '0'..='9' => self.number(pos),
            '"' => self.quoted(pos),
            '{' => self.braced(pos),
            '[' => self.date(pos),
            '@' => self.function(pos),
            c if is_ident_start(c) => Ok(self.word()),
            _ => self.symbol(c, pos).map(Tok::Sym),
        }
    }

    fn number(&mut self, pos: Pos) -> Result<Tok, FormulaError> {
        let mut s = self.take_while(|c| c.is_ascii_digit());
        if self.peek() == Some('.') && self.peek_at(1).is_some_and(|c| c.is_ascii_digit()) {
            self.bump();
            s.push('.');
            s.push_str(&self.take_while(|c| c.is_ascii_digit()));
        }
        s.push_str(&self.exponent());
        match s.parse::<f64>() {
            Ok(n) if n.is_finite() => Ok(Tok::Number(n)),
            _ => Err(pos.syntax(format!("number {s} is out of range"))),
        }
    }

    fn exponent(&mut self) -> String {
        let signed = matches!(self.peek_at(1), Some('+' | '-'));
        let digit_at = if signed { 2 } else { 1 };
        let is_exp = matches!(self.peek(), Some('e' | 'E'))
            && self.peek_at(digit_at).is_some_and(|c| c.is_ascii_digit());
        if !is_exp {
            return String::new();
        }
        let mut s = String::from("e");
        self.bump();
        if signed {
            s.extend(self.bump());
        }
        s.push_str(&self.take_while(|c| c.is_ascii_digit()));
        s
    }

    fn quoted(&mut self, pos: Pos) -> Result<Tok, FormulaError> {
        self.bump();
        let mut s = String::new();
        loop {
            match self.bump() {
                None => return Err(pos.syntax("unterminated string")),
                Some('"') => return Ok(Tok::Text(s)),
                Some('\\') => match self.bump() {
                    Some(c) => s.push(c),
                    None => return Err(pos.syntax("unterminated string")),
                },
                Some(c) => s.push(c),
            }
        }
    }

    fn braced(&mut self, pos: Pos) -> Result<Tok, FormulaError> {
        self.bump();
        let s = self.take_while(|c| c != '}');
        if self.eat('}') {
            Ok(Tok::Text(s))
        } else {
            Err(pos.syntax("unterminated {string}"))
        }
    }

    fn date(&mut self, pos: Pos) -> Result<Tok, FormulaError> {
        self.bump();
        let s = self.take_while(|c| c != ']');
        if !self.eat(']') {
            return Err(pos.syntax("unterminated [date-time]"));
        }
        parse_datetime(s.trim())
            .map(Tok::DateTime)
            .ok_or_else(|| pos.syntax(format!("invalid date-time [{s}]")))
    }

    fn function(&mut self, pos: Pos) -> Result<Tok, FormulaError> {
        self.bump();
        let name = self.take_while(is_ident);
        if name.is_empty() {
            return Err(pos.syntax("expected a function name after @"));
        }
        Ok(Tok::Func(name))
    }

    fn word(&mut self) -> Tok {
        let word = self.take_while(is_ident);
        if word.eq_ignore_ascii_case("select") {
            Tok::Select
        } else {
            Tok::Ident(word)
        }
    }

    fn symbol(&mut self, c: char, pos: Pos) -> Result<Sym, FormulaError> {
        self.bump();
        let sym = match c {
            '+' => Sym::Plus,
            '-' => Sym::Minus,
            '*' => Sym::Star,
            '/' => Sym::Slash,
            '=' => Sym::Eq,
            '&' => Sym::And,
            '|' => Sym::Or,
            ':' => Sym::Colon,
            ';' => Sym::Semi,
            '(' => Sym::LParen,
            ')' => Sym::RParen,
            '!' if self.eat('=') => Sym::Ne,
            '!' => Sym::Not,
            '<' if self.eat('=') => Sym::Le,
            '<' if self.eat('>') => Sym::Ne,
            '<' => Sym::Lt,
            '>' if self.eat('=') => Sym::Ge,
            '>' => Sym::Gt,
            _ => return Err(pos.syntax(format!("unexpected character {c:?}"))),
        };
        Ok(sym)
    }
}

/// Parses `YYYY-MM-DD` (midnight UTC) or an RFC 3339 date-time into
/// microseconds since the epoch.
pub(crate) fn parse_datetime(s: &str) -> Option<i64> {
    if let Ok(day) = NaiveDate::parse_from_str(s, "%Y-%m-%d") {
        return Some(day.and_hms_opt(0, 0, 0)?.and_utc().timestamp_micros());
    }
    DateTime::parse_from_rfc3339(s)
        .ok()
        .map(|dt| dt.timestamp_micros())
}
