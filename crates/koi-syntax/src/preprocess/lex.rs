//! Preprocessing tokens: the scanner that splits one logical line into cpp tokens.
//!
//! Comments and whitespace are not tokens: each token carries the text that preceded it (its
//! "lead"), so that a line in which no macro expands can be written out byte for byte. Block
//! comments may run across lines: the scanner takes and returns whether it is inside one.
//! Tokens are cpp's: identifiers, pp-numbers (which swallow P4 literals such as `8w0xFF`),
//! string and character literals, C punctuators and single "other" characters.

use std::rc::Rc;

/// The class of a preprocessing token.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Ident,
    Number,
    Str,
    Char,
    Punct,
    Other,
    /// End of a source line (only in the token stream of text lines); its lead is the trailing
    /// whitespace and comments of the line.
    Eol,
}

/// What precedes a token: nothing, one space, or the exact source text (whitespace, comments).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Lead {
    None,
    Space,
    Text(Rc<str>),
}

impl Lead {
    /// The lead for the source text `t` found before a token.
    pub fn from_trivia(t: &str) -> Lead {
        match t {
            "" => Lead::None,
            " " => Lead::Space,
            _ => Lead::Text(t.into()),
        }
    }

    /// Whether whitespace (or a comment) precedes the token.
    pub fn has_space(&self) -> bool {
        !matches!(self, Lead::None)
    }

    /// The lead reduced to "space or not", as inside macro bodies and arguments.
    pub fn normalized(&self) -> Lead {
        if self.has_space() {
            Lead::Space
        } else {
            Lead::None
        }
    }

    /// The text this lead stands for in output.
    pub fn as_str(&self) -> &str {
        match self {
            Lead::None => "",
            Lead::Space => " ",
            Lead::Text(t) => t,
        }
    }
}

/// A preprocessing token.
#[derive(Clone, Debug)]
pub struct Tok {
    pub kind: Kind,
    pub text: Rc<str>,
    pub lead: Lead,
    /// Set on an identifier that named a macro while that macro was being expanded: it is
    /// never expanded again ("painted blue").
    pub painted: bool,
    /// Position in the source token stream of a file (consecutive numbers are adjacent in the
    /// source); 0 for tokens made by the preprocessor.
    pub seq: u32,
    /// Byte column in its logical source line, for diagnostics.
    pub col: u32,
}

impl Tok {
    pub fn new(kind: Kind, text: &str) -> Tok {
        Tok {
            kind,
            text: text.into(),
            lead: Lead::None,
            painted: false,
            seq: 0,
            col: 0,
        }
    }

    pub fn is_punct(&self, p: &str) -> bool {
        self.kind == Kind::Punct && &*self.text == p
    }

    pub fn is_ident(&self) -> bool {
        self.kind == Kind::Ident
    }
}

/// A token found by the [`Scanner`]: byte offsets of its lead, start and end.
#[derive(Clone, Copy, Debug)]
pub struct Raw {
    pub kind: Kind,
    pub lead: usize,
    pub start: usize,
    pub end: usize,
}

const PUNCT3: &[&str] = &["...", "<<=", ">>="];
const PUNCT2: &[&str] = &[
    "->", "++", "--", "<<", ">>", "<=", ">=", "==", "!=", "&&", "||", "*=", "/=", "%=", "+=", "-=",
    "&=", "^=", "|=", "##",
];
const PUNCT1: &[u8] = b"[](){}.&*+-~!/%<>^|?:;=,#";

/// Splits a line (or a few lines joined by `\n` inside a block comment) into raw tokens.
pub struct Scanner<'a> {
    text: &'a str,
    pos: usize,
    /// Whether the scanner is inside a block comment.
    pub in_comment: bool,
}

impl<'a> Scanner<'a> {
    pub fn new(text: &'a str, in_comment: bool) -> Scanner<'a> {
        Scanner {
            text,
            pos: 0,
            in_comment,
        }
    }

    /// Byte offset of the scanner (after the last token returned, or the end of the text).
    pub fn pos(&self) -> usize {
        self.pos
    }

    fn byte(&self, i: usize) -> u8 {
        self.text.as_bytes().get(i).copied().unwrap_or(0)
    }

    fn skip_trivia(&mut self) {
        let len = self.text.len();
        loop {
            if self.in_comment {
                match self.text.get(self.pos..).and_then(|r| r.find("*/")) {
                    Some(i) => {
                        self.pos += i + 2;
                        self.in_comment = false;
                    }
                    None => {
                        self.pos = len;
                        return;
                    }
                }
                continue;
            }
            let b = self.byte(self.pos);
            if matches!(b, b' ' | b'\t' | b'\r' | b'\n' | 0x0b | 0x0c) {
                self.pos += 1;
            } else if b == b'/' && self.byte(self.pos + 1) == b'/' {
                self.pos = len;
            } else if b == b'/' && self.byte(self.pos + 1) == b'*' {
                self.pos += 2;
                self.in_comment = true;
            } else {
                return;
            }
        }
    }

    /// The next token, or `None` at the end of the text (the trailing trivia is then
    /// `text[lead..]` where `lead` was the position before the call).
    pub fn next_raw(&mut self) -> Option<Raw> {
        let lead = self.pos;
        self.skip_trivia();
        let start = self.pos;
        if start >= self.text.len() {
            return None;
        }
        let (kind, end) = self.token_at(start);
        self.pos = end;
        Some(Raw {
            kind,
            lead,
            start,
            end,
        })
    }

    fn token_at(&self, start: usize) -> (Kind, usize) {
        let b = self.byte(start);
        let next = self.byte(start + 1);
        if b == b'L' && matches!(next, b'"' | b'\'') {
            // A wide string or character literal (the only prefix cpp knows in assembler
            // mode, as p4c runs it).
            let (kind, end) = self.token_at(start + 1);
            if matches!(kind, Kind::Str | Kind::Char) {
                return (kind, end);
            }
        }
        if b.is_ascii_alphabetic() || b == b'_' {
            (
                Kind::Ident,
                self.skip_while(start, |c| c.is_ascii_alphanumeric() || c == b'_'),
            )
        } else if b.is_ascii_digit() || (b == b'.' && next.is_ascii_digit()) {
            (Kind::Number, self.number_end(start))
        } else if b == b'"' {
            (
                Kind::Str,
                self.quoted_end(start, b'"').unwrap_or(self.text.len()),
            )
        } else if b == b'\'' {
            match self.quoted_end(start, b'\'') {
                Some(end) => (Kind::Char, end),
                None => (Kind::Other, start + 1),
            }
        } else {
            self.punct_at(start)
        }
    }

    fn skip_while(&self, mut i: usize, f: impl Fn(u8) -> bool) -> usize {
        while i < self.text.len() && f(self.byte(i)) {
            i += 1;
        }
        i
    }

    fn number_end(&self, mut i: usize) -> usize {
        i += 1;
        loop {
            let c = self.byte(i);
            if matches!(c, b'e' | b'E' | b'p' | b'P') && matches!(self.byte(i + 1), b'+' | b'-') {
                i += 2;
            } else if c.is_ascii_alphanumeric() || c == b'_' || c == b'.' {
                i += 1;
            } else {
                return i;
            }
        }
    }

    /// End (after the closing quote) of a literal starting at `start`; `None` when it is not
    /// closed on this line.
    fn quoted_end(&self, start: usize, q: u8) -> Option<usize> {
        let mut i = start + 1;
        while i < self.text.len() {
            let c = self.byte(i);
            if c == b'\\' {
                i += 2;
            } else if c == q {
                return Some(i + 1);
            } else if c == b'\n' {
                return None;
            } else {
                i += 1;
            }
        }
        None
    }

    fn punct_at(&self, start: usize) -> (Kind, usize) {
        let rest = self.text.get(start..).unwrap_or("");
        for p in PUNCT3.iter().chain(PUNCT2) {
            if rest.starts_with(p) {
                return (Kind::Punct, start + p.len());
            }
        }
        let b = self.byte(start);
        if PUNCT1.contains(&b) {
            return (Kind::Punct, start + 1);
        }
        let len = rest.chars().next().map_or(1, char::len_utf8);
        (Kind::Other, start + len)
    }
}

/// Tokens of `text` (a directive or a macro definition) with their leads; the scanner is
/// returned so that the caller can see where the text ends and the comment state.
pub fn tokens(text: &str, in_comment: bool) -> (Vec<Tok>, Scanner<'_>) {
    let mut sc = Scanner::new(text, in_comment);
    let mut out = Vec::new();
    while let Some(r) = sc.next_raw() {
        out.push(make_tok(text, r, 0));
    }
    (out, sc)
}

/// The token for a raw token of `text`, with source sequence number `seq`.
pub fn make_tok(text: &str, r: Raw, seq: u32) -> Tok {
    Tok {
        kind: r.kind,
        text: text.get(r.start..r.end).unwrap_or("").into(),
        lead: Lead::from_trivia(text.get(r.lead..r.start).unwrap_or("")),
        painted: false,
        seq,
        col: u32::try_from(r.start).unwrap_or(u32::MAX),
    }
}

/// The single token that `text` is, if it is exactly one token (used by `##`).
pub fn single_token(text: &str) -> Option<Kind> {
    let mut sc = Scanner::new(text, false);
    let r = sc.next_raw()?;
    if r.start != 0 || r.end != text.len() {
        return None;
    }
    Some(r.kind)
}

/// Whether writing `b` right after `a` would lex differently from the two tokens (so that a
/// space must separate them in output).
pub fn would_paste(a: &str, b: &str) -> bool {
    if a.is_empty() || b.is_empty() {
        return false;
    }
    // `.` `.` is not a token, but a third `.` would make `...` of them.
    if a.ends_with('.') && b.starts_with('.') {
        return true;
    }
    let joined = format!("{a}{b}");
    let mut sc = Scanner::new(&joined, false);
    match sc.next_raw() {
        Some(r) => r.start != 0 || r.end != a.len(),
        None => true,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kinds(text: &str) -> Vec<(Kind, String)> {
        tokens(text, false)
            .0
            .into_iter()
            .map(|t| (t.kind, t.text.to_string()))
            .collect()
    }

    #[test]
    fn p4_literals_are_single_pp_numbers() {
        let k = kinds("x = 8w0xFF + 32s5 + 1e+5;");
        assert_eq!(k[2], (Kind::Number, "8w0xFF".into()));
        assert_eq!(k[4], (Kind::Number, "32s5".into()));
        assert_eq!(k[6], (Kind::Number, "1e+5".into()));
    }

    #[test]
    fn comments_are_leads_and_block_comments_span_lines() {
        let (t, sc) = tokens("a /* x */ b /* open", false);
        assert_eq!(t.len(), 2);
        assert_eq!(t[1].lead, Lead::Text(" /* x */ ".into()));
        assert!(sc.in_comment);
        let (t, sc) = tokens("still */ c // tail", true);
        assert_eq!(t.len(), 1);
        assert_eq!(&*t[0].text, "c");
        assert!(!sc.in_comment);
    }

    #[test]
    fn strings_chars_and_punctuators() {
        let k = kinds(r#""a\"b" 'c' don't ## <<= @"#);
        assert_eq!(k[0], (Kind::Str, r#""a\"b""#.into()));
        assert_eq!(k[1], (Kind::Char, "'c'".into()));
        assert_eq!(k[2], (Kind::Ident, "don".into()));
        assert_eq!(k[3], (Kind::Other, "'".into()));
        assert_eq!(k[5], (Kind::Punct, "##".into()));
        assert_eq!(k[6], (Kind::Punct, "<<=".into()));
        assert_eq!(k[7], (Kind::Other, "@".into()));
    }

    #[test]
    fn non_ascii_is_one_other_token() {
        let k = kinds("a ⟶ b");
        assert_eq!(k[1], (Kind::Other, "⟶".into()));
    }

    #[test]
    fn paste_checks() {
        assert_eq!(single_token("ab"), Some(Kind::Ident));
        assert_eq!(single_token("+="), Some(Kind::Punct));
        assert_eq!(single_token("+-"), None);
        assert_eq!(single_token("//"), None);
        assert!(would_paste("-", "-"));
        assert!(would_paste("a", "b"));
        assert!(would_paste("/", "/"));
        assert!(would_paste(".", "."));
        assert!(!would_paste("a", "+"));
        assert!(!would_paste("(", "("));
    }
}
