//! Tokens of the non-packet STF lines (`add`, `setdefault`, `remove`): identifiers (with `$`,
//! or double-quoted), numbers (decimal, `0x` and `0b` with `*` wildcard digits) and punctuation.

use crate::number::Number;
use std::fmt;

#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Tok {
    Id(String),
    Num(Number),
    Colon,
    Comma,
    Dot,
    LBracket,
    RBracket,
    LParen,
    RParen,
    Assign,
    Slash,
    /// A comparison operator (`==`, `!=`, `<`, `<=`, `>`, `>=`).
    Cmp(String),
    End,
}

impl fmt::Display for Tok {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Tok::Id(s) => write!(f, "'{s}'"),
            Tok::Num(n) => write!(f, "number '{}'", n.text()),
            Tok::Colon => f.write_str("':'"),
            Tok::Comma => f.write_str("','"),
            Tok::Dot => f.write_str("'.'"),
            Tok::LBracket => f.write_str("'['"),
            Tok::RBracket => f.write_str("']'"),
            Tok::LParen => f.write_str("'('"),
            Tok::RParen => f.write_str("')'"),
            Tok::Assign => f.write_str("'='"),
            Tok::Slash => f.write_str("'/'"),
            Tok::Cmp(s) => write!(f, "'{s}'"),
            Tok::End => f.write_str("end of line"),
        }
    }
}

pub(crate) struct Lexer<'a> {
    s: &'a str,
    pos: usize,
    peeked: Option<Tok>,
}

impl<'a> Lexer<'a> {
    pub(crate) fn new(s: &'a str) -> Lexer<'a> {
        Lexer {
            s,
            pos: 0,
            peeked: None,
        }
    }

    pub(crate) fn peek(&mut self) -> Result<Tok, String> {
        if self.peeked.is_none() {
            self.peeked = Some(self.lex()?);
        }
        Ok(self.peeked.clone().unwrap_or(Tok::End))
    }

    pub(crate) fn next_tok(&mut self) -> Result<Tok, String> {
        match self.peeked.take() {
            Some(t) => Ok(t),
            None => self.lex(),
        }
    }

    pub(crate) fn expect_end(&mut self) -> Result<(), String> {
        match self.next_tok()? {
            Tok::End => Ok(()),
            t => Err(format!("unexpected {t} at the end of the line")),
        }
    }

    pub(crate) fn number(&mut self) -> Result<Number, String> {
        match self.next_tok()? {
            Tok::Num(n) => Ok(n),
            t => Err(format!("expected a number, found {t}")),
        }
    }

    /// `ID ([N])? (. ID ([N])?)*`, with `$N` in identifiers rewritten to `[N]`.
    pub(crate) fn qualified_name(&mut self) -> Result<String, String> {
        let mut name = match self.next_tok()? {
            Tok::Id(s) => s,
            t => return Err(format!("expected a name, found {t}")),
        };
        loop {
            match self.peek()? {
                Tok::LBracket => {
                    self.next_tok()?;
                    let n = self.number()?;
                    if !n.is_decimal() {
                        return Err(format!("index '{}' must be decimal", n.text()));
                    }
                    match self.next_tok()? {
                        Tok::RBracket => {}
                        t => return Err(format!("expected ']', found {t}")),
                    }
                    name.push_str(&format!("[{}]", n.digits()));
                }
                Tok::Dot => {
                    self.next_tok()?;
                    match self.next_tok()? {
                        Tok::Id(s) => {
                            name.push('.');
                            name.push_str(&s);
                        }
                        t => return Err(format!("expected a name after '.', found {t}")),
                    }
                }
                _ => return Ok(rewrite_dollar_index(&name)),
            }
        }
    }

    fn rest(&self) -> &'a str {
        self.s.get(self.pos..).unwrap_or("")
    }

    fn lex(&mut self) -> Result<Tok, String> {
        let rest = self.rest();
        let trimmed = rest.trim_start();
        self.pos += rest.len() - trimmed.len();
        let Some(c) = trimmed.chars().next() else {
            return Ok(Tok::End);
        };
        if c == '#' {
            self.pos = self.s.len();
            return Ok(Tok::End);
        }
        if c.is_ascii_alphabetic() || c == '_' || c == '$' {
            let len = trimmed
                .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == '$'))
                .unwrap_or(trimmed.len());
            self.pos += len;
            return Ok(Tok::Id(trimmed[..len].to_string()));
        }
        if c == '"' {
            let body = &trimmed[1..];
            let Some(end) = body.find('"') else {
                return Err("unterminated string".into());
            };
            self.pos += end + 2;
            return Ok(Tok::Id(body[..end].to_string()));
        }
        if c.is_ascii_digit() {
            let (n, len) = Number::lex(trimmed)?;
            self.pos += len;
            return Ok(Tok::Num(n));
        }
        let two = trimmed.get(..2).unwrap_or("");
        if matches!(two, "==" | "!=" | "<=" | ">=") {
            self.pos += 2;
            return Ok(Tok::Cmp(two.to_string()));
        }
        self.pos += c.len_utf8();
        Ok(match c {
            ':' => Tok::Colon,
            ',' => Tok::Comma,
            '.' => Tok::Dot,
            '[' => Tok::LBracket,
            ']' => Tok::RBracket,
            '(' => Tok::LParen,
            ')' => Tok::RParen,
            '=' => Tok::Assign,
            '/' => Tok::Slash,
            '<' | '>' => Tok::Cmp(c.to_string()),
            _ => return Err(format!("unexpected character '{c}'")),
        })
    }
}

/// `extra$0.h` → `extra[0].h` (p4c's runner rewrites `$<digits>` this way).
fn rewrite_dollar_index(name: &str) -> String {
    let mut out = String::with_capacity(name.len());
    let mut chars = name.char_indices().peekable();
    while let Some((_, c)) = chars.next() {
        if c == '$' && chars.peek().is_some_and(|(_, d)| d.is_ascii_digit()) {
            out.push('[');
            while let Some(&(_, d)) = chars.peek() {
                if !d.is_ascii_digit() {
                    break;
                }
                out.push(d);
                chars.next();
            }
            out.push(']');
        } else {
            out.push(c);
        }
    }
    out
}
