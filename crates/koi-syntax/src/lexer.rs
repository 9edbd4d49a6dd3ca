//! The P4-16 lexer: turns preprocessed text into a vector of [`Token`]s.
//!
//! It follows p4c's lexer: comments and whitespace are skipped, as are lines the preprocessor
//! left behind (a `#` that is the first non-blank character of a line starts a directive such as
//! `# 1 "file"` or `#pragma`, skipped to the end of the line). `>` is always a token of its own,
//! so that `tuple<bit<8>>` closes two type-argument lists; the parser joins two adjacent `>` into
//! a shift in expressions. `@pragma` starts a P4-14-style annotation that runs to the end of the
//! line: the lexer then emits [`Tok::EndPragma`] at that newline.
//!
//! Errors (unterminated comments or strings, malformed integer literals) are reported as
//! diagnostics and the offending text is skipped; the lexer never fails. A character that
//! starts no token becomes a [`Tok::Unexpected`] token (p4c accepts those in annotation bodies);
//! the parser reports it as an invalid character anywhere else.

mod int;
mod token;

pub use int::parse_int;
pub use token::{Tok, Token};

use crate::Diagnostics;
use crate::source::Span;

/// Lexes `text` into tokens. The last token is always [`Tok::Eof`], placed at the end of the
/// last real token (so that "unexpected end of file" points at the line where the input stops).
pub fn lex(text: &str) -> (Vec<Token>, Diagnostics) {
    let mut lx = Lexer {
        src: text.as_bytes(),
        pos: 0,
        line_start: true,
        in_pragma: false,
        tokens: Vec::new(),
        diags: Diagnostics::new(),
    };
    if text.len() > u32::MAX as usize {
        lx.diags
            .error(Span::DUMMY, "input too large (more than 4 GiB)");
    } else {
        lx.run();
    }
    let end = lx.tokens.last().map(|t| t.span.hi).unwrap_or(0);
    lx.tokens.push(Token {
        kind: Tok::Eof,
        span: Span::new(end, end),
    });
    (lx.tokens, lx.diags)
}

struct Lexer<'a> {
    src: &'a [u8],
    pos: usize,
    /// True while only blanks have been seen since the last newline.
    line_start: bool,
    /// True between `@pragma` and the end of its line.
    in_pragma: bool,
    tokens: Vec<Token>,
    diags: Diagnostics,
}

fn is_ident_start(b: u8) -> bool {
    b.is_ascii_alphabetic() || b == b'_'
}

fn is_ident_char(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_'
}

impl Lexer<'_> {
    fn at(&self, n: usize) -> u8 {
        self.src.get(self.pos + n).copied().unwrap_or(0)
    }

    fn span(&self, lo: usize) -> Span {
        Span::new(lo as u32, self.pos as u32)
    }

    fn push(&mut self, kind: Tok, lo: usize) {
        self.tokens.push(Token {
            kind,
            span: self.span(lo),
        });
        self.line_start = false;
    }

    fn run(&mut self) {
        while self.pos < self.src.len() {
            let b = self.at(0);
            match b {
                b'\n' => self.newline(),
                b' ' | b'\t' | b'\r' | 0x0b | 0x0c => self.pos += 1,
                b'#' if self.line_start => self.skip_line(),
                b'/' if self.at(1) == b'/' => self.skip_line(),
                b'/' if self.at(1) == b'*' => self.block_comment(),
                b'"' => self.string(),
                b'0'..=b'9' => self.number(),
                _ if is_ident_start(b) => self.ident(),
                _ => self.punct(),
            }
        }
        if self.in_pragma {
            self.end_pragma(self.pos);
        }
    }

    fn newline(&mut self) {
        if self.in_pragma {
            self.end_pragma(self.pos);
        }
        self.pos += 1;
        self.line_start = true;
    }

    fn end_pragma(&mut self, at: usize) {
        self.in_pragma = false;
        self.tokens.push(Token {
            kind: Tok::EndPragma,
            span: Span::new(at as u32, at as u32),
        });
    }

    /// Skips to the end of the line (not consuming the newline).
    fn skip_line(&mut self) {
        while self.pos < self.src.len() && self.at(0) != b'\n' {
            self.pos += 1;
        }
    }

    fn block_comment(&mut self) {
        let lo = self.pos;
        self.pos += 2;
        let mut saw_newline = false;
        loop {
            if self.pos >= self.src.len() {
                self.diags
                    .error(Span::new(lo as u32, lo as u32 + 2), "unterminated comment");
                return;
            }
            if self.at(0) == b'*' && self.at(1) == b'/' {
                self.pos += 2;
                break;
            }
            saw_newline |= self.at(0) == b'\n';
            self.pos += 1;
        }
        if saw_newline && self.in_pragma {
            self.end_pragma(self.pos);
        }
    }

    /// A string literal: up to the first `"` not escaped by a backslash. The token carries the
    /// text between the quotes as written (P4 gives escapes no meaning of their own).
    fn string(&mut self) {
        let lo = self.pos;
        self.pos += 1;
        let start = self.pos;
        loop {
            match self.src.get(self.pos) {
                None => {
                    self.diags
                        .error(self.span(lo), "unterminated string literal");
                    break;
                }
                Some(b'\\') => self.pos += 2,
                Some(b'"') => break,
                Some(_) => self.pos += 1,
            }
        }
        let end = self.pos.min(self.src.len());
        let body = String::from_utf8_lossy(self.src.get(start..end).unwrap_or(&[])).into_owned();
        self.pos = (end + 1).min(self.src.len());
        self.push(Tok::Str(body), lo);
    }

    fn ident(&mut self) {
        let lo = self.pos;
        while is_ident_char(self.at(0)) {
            self.pos += 1;
        }
        let word = std::str::from_utf8(self.src.get(lo..self.pos).unwrap_or(&[])).unwrap_or("");
        let kind = Tok::keyword(word).unwrap_or(Tok::Ident);
        self.push(kind, lo);
    }

    fn number(&mut self) {
        let lo = self.pos;
        let rest = self.src.get(lo..).unwrap_or(&[]);
        let (len, lit) = int::scan(rest);
        self.pos += len.max(1);
        match lit {
            Ok(lit) => self.push(Tok::Int(Box::new(lit)), lo),
            Err(msg) => {
                self.diags.error(self.span(lo), msg);
                self.line_start = false;
            }
        }
    }

    fn punct(&mut self) {
        let lo = self.pos;
        if self.at(0) == b'@'
            && self.src.get(lo + 1..lo + 7) == Some(b"pragma".as_slice())
            && !is_ident_char(self.at(7))
        {
            self.pos += 7;
            self.push(Tok::Pragma, lo);
            self.in_pragma = true;
            return;
        }
        match token::punct(self.src.get(lo..).unwrap_or(&[])) {
            Some((kind, len)) => {
                self.pos += len;
                self.push(kind, lo);
            }
            None => self.invalid_char(lo),
        }
    }

    /// A character that starts no token: p4c's `UNEXPECTED_TOKEN`. It is allowed inside
    /// annotation bodies; the parser reports it anywhere else.
    fn invalid_char(&mut self, lo: usize) {
        self.pos += 1;
        // Take the rest of a multi-byte UTF-8 character.
        while self.pos < self.src.len() && (self.at(0) & 0xC0) == 0x80 {
            self.pos += 1;
        }
        self.push(Tok::Unexpected, lo);
    }
}
