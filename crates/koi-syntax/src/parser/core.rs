//! The parser's state and its low-level machinery: token access, diagnostics, node ids, the
//! nesting-depth guard, memoised speculation (backtracking) and error recovery.

use super::MAX_DEPTH;
use super::names::Names;
use crate::Diagnostics;
use crate::ast::{Expr, ExprKind, Ident, NodeId, Path};
use crate::lexer::{Tok, Token};
use crate::source::Span;
use std::collections::HashMap;

/// Marker of a syntax error that has been reported; the nearest enclosing list recovers.
#[derive(Debug)]
pub(super) struct Recover;

pub(super) type PResult<T> = Result<T, Recover>;

/// What a speculative parse at some position tried to recognise (the memo key).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(super) enum Spec {
    Cast,
    TypeArgsCall,
    Decl,
    TupleKeyset,
    ForInTyped,
    TypeThenParen,
    ExternObject,
}

/// Everything needed to undo a speculative parse.
struct Snapshot {
    pos: usize,
    next_id: u32,
    diags: usize,
}

pub(super) struct Parser<'a> {
    text: &'a str,
    toks: Vec<Token>,
    pos: usize,
    /// Index of the first token not visible to the parser (the end of an annotation body being
    /// re-read as expressions, or the final `Eof`).
    limit: usize,
    eof: Token,
    diags: Diagnostics,
    next_id: u32,
    depth: u32,
    /// True while reading the width of `bit<...>`, where `>` closes instead of comparing.
    no_gt: bool,
    pub(super) names: Names,
    memo: HashMap<(Spec, usize, usize), bool>,
}

impl<'a> Parser<'a> {
    pub(super) fn new(text: &'a str, toks: Vec<Token>) -> Parser<'a> {
        let eof = toks.last().cloned().unwrap_or(Token {
            kind: Tok::Eof,
            span: Span::DUMMY,
        });
        let limit = toks.len().saturating_sub(1);
        Parser {
            text,
            toks,
            pos: 0,
            limit,
            eof,
            diags: Diagnostics::new(),
            next_id: 0,
            depth: 0,
            no_gt: false,
            names: Names::new(),
            memo: HashMap::new(),
        }
    }

    pub(super) fn into_diags(self) -> Diagnostics {
        self.diags
    }

    // ---- tokens -------------------------------------------------------------------------

    /// The token `n` positions ahead (`Eof` past the end).
    pub(super) fn tok(&self, n: usize) -> &Token {
        let i = self.pos.saturating_add(n);
        if i < self.limit {
            self.toks.get(i).unwrap_or(&self.eof)
        } else {
            &self.eof
        }
    }

    /// The token at absolute index `i` (`Eof` past the end).
    pub(super) fn tok_at(&self, i: usize) -> &Token {
        self.toks.get(i).unwrap_or(&self.eof)
    }

    pub(super) fn nth(&self, n: usize) -> &Tok {
        &self.tok(n).kind
    }

    pub(super) fn peek(&self) -> &Tok {
        self.nth(0)
    }

    pub(super) fn at(&self, t: &Tok) -> bool {
        self.peek() == t
    }

    pub(super) fn span(&self) -> Span {
        self.tok(0).span
    }

    /// The span of the last consumed token (for the end of a node).
    pub(super) fn prev_span(&self) -> Span {
        match self.pos.checked_sub(1).and_then(|i| self.toks.get(i)) {
            Some(t) => t.span,
            None => self.span(),
        }
    }

    /// A span from `lo` to the end of the last consumed token.
    pub(super) fn since(&self, lo: Span) -> Span {
        let hi = self.prev_span();
        if hi.hi < lo.lo { lo } else { lo.to(hi) }
    }

    pub(super) fn pos(&self) -> usize {
        self.pos
    }

    pub(super) fn bump(&mut self) -> Span {
        let s = self.span();
        if self.pos < self.limit {
            self.pos += 1;
        }
        s
    }

    pub(super) fn eat(&mut self, t: &Tok) -> bool {
        if self.at(t) {
            self.bump();
            true
        } else {
            false
        }
    }

    pub(super) fn expect(&mut self, t: &Tok) -> PResult<Span> {
        if self.at(t) {
            Ok(self.bump())
        } else {
            Err(self.unexpected(&t.describe()))
        }
    }

    /// The source text of a span.
    pub(super) fn text(&self, span: Span) -> &'a str {
        self.text
            .get(span.lo as usize..span.hi as usize)
            .unwrap_or("")
    }

    /// True if the token at `n` is an adjacent `>` `>` pair (a shift, not two closing angles).
    pub(super) fn shift_right_at(&self, n: usize) -> bool {
        let (a, b) = (self.tok(n), self.tok(n + 1));
        a.kind == Tok::Gt && matches!(b.kind, Tok::Gt | Tok::Ge) && a.span.hi == b.span.lo
    }

    /// Whether `>` is currently a closing angle bracket rather than an operator.
    pub(super) fn gt_closes(&self) -> bool {
        self.no_gt
    }

    /// Runs `f` with `>` closing (`closes`) or comparing, then restores the previous mode.
    pub(super) fn with_gt_closing<T>(&mut self, closes: bool, f: impl FnOnce(&mut Self) -> T) -> T {
        let saved = std::mem::replace(&mut self.no_gt, closes);
        let r = f(self);
        self.no_gt = saved;
        r
    }

    // ---- names --------------------------------------------------------------------------

    /// Whether the token at `n` is a `nonTypeName` keyword usable as a name.
    pub(super) fn is_name_keyword(t: &Tok) -> bool {
        matches!(
            t,
            Tok::Apply
                | Tok::Key
                | Tok::Actions
                | Tok::State
                | Tok::Entries
                | Tok::Type
                | Tok::Priority
        )
    }

    /// `name`: an identifier, a type name, `list`, or a keyword allowed as a name.
    pub(super) fn is_name_at(&self, n: usize) -> bool {
        let t = self.nth(n);
        *t == Tok::Ident || *t == Tok::List || Self::is_name_keyword(t)
    }

    /// True if the token at `n` is an identifier currently naming a type.
    pub(super) fn is_type_name_at(&self, n: usize) -> bool {
        let t = self.tok(n);
        t.kind == Tok::Ident && self.names.is_type(self.text(t.span))
    }

    /// Reads a `name`.
    pub(super) fn name(&mut self) -> PResult<Ident> {
        if self.is_name_at(0) {
            let s = self.bump();
            Ok(Ident::new(self.text(s), s))
        } else {
            Err(self.unexpected(""))
        }
    }

    /// Reads a `nonTypeName` (a name that is not a known type name and not `list`).
    pub(super) fn non_type_name(&mut self) -> PResult<Ident> {
        let t = self.peek();
        if (*t == Tok::Ident && !self.is_type_name_at(0)) || Self::is_name_keyword(t) {
            let s = self.bump();
            Ok(Ident::new(self.text(s), s))
        } else {
            Err(self.unexpected(""))
        }
    }

    /// Reads the name after a `.` prefix: a name that is not a top-level type.
    pub(super) fn global_non_type_name(&mut self) -> PResult<Ident> {
        let t = self.tok(0);
        let ok = (t.kind == Tok::Ident && !self.names.is_global_type(self.text(t.span)))
            || Self::is_name_keyword(&t.kind);
        if !ok {
            return Err(self.unexpected(""));
        }
        let s = self.bump();
        Ok(Ident::new(self.text(s), s))
    }

    pub(super) fn path(&mut self, global: bool, lo: Span, name: Ident) -> Path {
        let span = lo.to(name.span);
        Path { global, name, span }
    }

    // ---- nodes and errors ---------------------------------------------------------------

    pub(super) fn mk_expr(&mut self, kind: ExprKind, span: Span) -> Expr {
        let id = NodeId(self.next_id);
        self.next_id = self.next_id.wrapping_add(1);
        Expr { id, kind, span }
    }

    pub(super) fn error(&mut self, span: Span, msg: impl Into<String>) -> Recover {
        self.diags.error(span, msg);
        Recover
    }

    /// Reports `syntax error, unexpected X[, expected Y]` at the current token.
    pub(super) fn unexpected(&mut self, expected: &str) -> Recover {
        let t = self.tok(0);
        let what = if t.kind == Tok::Ident && self.names.is_type(self.text(t.span)) {
            "TYPE_IDENTIFIER".to_string()
        } else {
            t.kind.describe()
        };
        let span = t.span;
        if t.kind == Tok::Unexpected {
            let c = self.text(span).escape_debug().to_string();
            return self.error(span, format!("syntax error, invalid character '{c}'"));
        }
        let msg = if expected.is_empty() {
            format!("syntax error, unexpected {what}")
        } else {
            format!("syntax error, unexpected {what}, expected {expected}")
        };
        self.error(span, msg)
    }

    /// Runs `f` one nesting level deeper, failing once [`MAX_DEPTH`] is exceeded.
    pub(super) fn nested<T>(&mut self, f: impl FnOnce(&mut Self) -> PResult<T>) -> PResult<T> {
        self.depth += 1;
        let r = if self.depth > MAX_DEPTH {
            let span = self.span();
            Err(self.error(
                span,
                format!("syntax error, nesting too deep (more than {MAX_DEPTH} levels)"),
            ))
        } else {
            f(self)
        };
        self.depth -= 1;
        r
    }

    /// Current depth plus `extra`, checked against the limit (for long left-leaning chains
    /// such as `a + b + c ...` that are built in a loop but nest in the tree).
    pub(super) fn check_chain(&mut self, extra: u32) -> PResult<()> {
        if self.depth.saturating_add(extra) > MAX_DEPTH {
            let span = self.span();
            return Err(self.error(
                span,
                format!(
                    "syntax error, expression too deeply nested (more than {MAX_DEPTH} levels)"
                ),
            ));
        }
        Ok(())
    }

    // ---- speculation --------------------------------------------------------------------

    fn snapshot(&self) -> Snapshot {
        Snapshot {
            pos: self.pos,
            next_id: self.next_id,
            diags: self.diags.list.len(),
        }
    }

    fn restore(&mut self, s: Snapshot) {
        self.pos = s.pos;
        self.next_id = s.next_id;
        self.diags.list.truncate(s.diags);
    }

    /// Runs the recogniser `f` at the current position and undoes everything it did; the
    /// answer is memoised per (kind, position), which keeps nested speculation linear.
    pub(super) fn speculate(&mut self, kind: Spec, f: impl FnOnce(&mut Self) -> bool) -> bool {
        let key = (kind, self.pos, self.limit);
        if let Some(&b) = self.memo.get(&key) {
            return b;
        }
        let snap = self.snapshot();
        let ok = f(self);
        self.restore(snap);
        self.memo.insert(key, ok);
        ok
    }

    /// Parses the tokens `[start, end)` with `f`, which must consume all of them; returns
    /// `None` (and leaves no trace) otherwise. The position afterwards is `resume`.
    pub(super) fn parse_range<T>(
        &mut self,
        start: usize,
        end: usize,
        resume: usize,
        f: impl FnOnce(&mut Self) -> PResult<T>,
    ) -> Option<T> {
        let snap = self.snapshot();
        let saved_limit = self.limit;
        let saved_eof = self.eof.clone();
        self.pos = start;
        self.limit = end.min(saved_limit);
        if let Some(t) = self.toks.get(self.limit) {
            self.eof = Token {
                kind: Tok::Eof,
                span: Span::new(t.span.lo, t.span.lo),
            };
        }
        let r = f(self);
        let complete = self.pos >= self.limit;
        self.limit = saved_limit;
        self.eof = saved_eof;
        let out = match r {
            Ok(v) if complete => {
                self.diags.list.truncate(snap.diags);
                Some(v)
            }
            _ => {
                self.restore(snap);
                None
            }
        };
        self.pos = resume;
        out
    }

    // ---- recovery -----------------------------------------------------------------------

    /// Skips to a synchronisation point after an error: past the next `;`, or up to the `}`
    /// closing the current nesting (consumed if the skipped text opened it), or up to one of
    /// `stops` at the current nesting. Always makes progress from `from` unless at a `}` or a
    /// stop token of the current nesting.
    pub(super) fn recover(&mut self, stops: &[Tok]) {
        let mut depth = 0usize;
        loop {
            match self.peek() {
                Tok::Eof => return,
                Tok::Semi if depth == 0 => {
                    self.bump();
                    return;
                }
                Tok::RBrace if depth == 0 => return,
                Tok::RBrace => {
                    depth -= 1;
                    self.bump();
                    if depth == 0 {
                        return;
                    }
                }
                Tok::LBrace => {
                    depth += 1;
                    self.bump();
                }
                t if depth == 0 && stops.contains(t) => return,
                _ => {
                    self.bump();
                }
            }
        }
    }

    /// Skips to the `}` closing the current nesting (not consumed).
    pub(super) fn skip_to_close(&mut self) {
        while !matches!(self.peek(), Tok::RBrace | Tok::Eof) {
            self.recover(&[]);
        }
    }

    /// Runs one element of a list with recovery: on error, skips as [`Parser::recover`] does
    /// and makes sure at least one token was consumed.
    pub(super) fn list_item<T>(
        &mut self,
        stops: &[Tok],
        f: impl FnOnce(&mut Self) -> PResult<T>,
    ) -> Option<T> {
        let before = self.pos;
        match f(self) {
            Ok(v) => Some(v),
            Err(Recover) => {
                self.recover(stops);
                if self.pos == before && !self.at(&Tok::RBrace) && !self.at(&Tok::Eof) {
                    self.bump();
                }
                None
            }
        }
    }
}
