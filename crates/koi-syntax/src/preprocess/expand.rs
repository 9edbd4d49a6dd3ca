//! Macro expansion by cpp's rules: a stack of replacement lists being rescanned over a base
//! token stream, function-like invocations whose arguments may come from later lines, no
//! recursive re-expansion of a macro inside its own replacement ("blue paint"), and the
//! `defined` operator of `#if`. Every token read or produced is charged to a budget, so that
//! exponential definitions end with an error instead of exhausting memory.

use super::lex::{Kind, Lead, Tok, would_paste};
use super::macros::{Macro, MacroKind, Macros};
use std::collections::{HashMap, VecDeque};
use std::rc::Rc;

/// How deeply macro arguments may nest (each level expands an argument inside an argument).
const MAX_DEPTH: u32 = 100;
/// Most expansion errors kept per line.
const MAX_ERRORS: usize = 50;
/// Largest output line, in bytes.
const MAX_LINE: usize = 4 << 20;

/// Where the tokens being expanded come from.
pub trait Base {
    /// The next token; `None` at the end.
    fn next(&mut self) -> Option<Tok>;
    /// The `i`-th next token, without consuming it (reading more lines when needed).
    fn peek(&mut self, i: usize) -> Option<&Tok>;
}

/// A base stream over a fixed list of tokens (an argument, a directive).
pub struct VecBase {
    toks: VecDeque<Tok>,
}

impl VecBase {
    pub fn new(toks: Vec<Tok>) -> VecBase {
        VecBase { toks: toks.into() }
    }
}

impl Base for VecBase {
    fn next(&mut self) -> Option<Tok> {
        self.toks.pop_front()
    }

    fn peek(&mut self, i: usize) -> Option<&Tok> {
        self.toks.get(i)
    }
}

/// An error (or warning) found while expanding, at a byte column of the line being expanded.
#[derive(Clone, Debug)]
pub struct ExpError {
    pub col: u32,
    pub msg: String,
    pub warning: bool,
}

/// State shared by an expansion and the nested expansions of its arguments.
pub struct Env<'m> {
    pub macros: &'m Macros,
    /// Macros whose replacement is being rescanned, with a count of nested uses.
    disabled: HashMap<Rc<str>, u32>,
    pub steps: u64,
    limit: u64,
    /// Set when the budget is exhausted; expansion then stops.
    pub overflow: bool,
    pub errors: Vec<ExpError>,
    /// Expanding the expression of `#if`/`#elif`: `defined` is an operator.
    pub if_mode: bool,
    /// Value of `__LINE__`.
    pub line: u32,
    /// Value of `__FILE__` (unquoted).
    pub file: Rc<str>,
}

impl<'m> Env<'m> {
    pub fn new(macros: &'m Macros, limit: u64, line: u32, file: Rc<str>) -> Env<'m> {
        Env {
            macros,
            disabled: HashMap::new(),
            steps: 0,
            limit,
            overflow: false,
            errors: Vec::new(),
            if_mode: false,
            line,
            file,
        }
    }

    /// Records an error (none after the budget is spent: they would only be consequences).
    pub fn error(&mut self, col: u32, msg: impl Into<String>) {
        self.report(col, msg.into(), false);
    }

    fn report(&mut self, col: u32, msg: String, warning: bool) {
        if self.errors.len() < MAX_ERRORS && !self.overflow {
            self.errors.push(ExpError { col, msg, warning });
        }
    }

    fn is_disabled(&self, name: &str) -> bool {
        self.disabled.get(name).is_some_and(|n| *n > 0)
    }

    /// Charges `n` steps; false (and `overflow` set) once the budget is spent.
    fn charge(&mut self, n: usize) -> bool {
        self.steps = self.steps.saturating_add(n as u64);
        if self.steps > self.limit && !self.overflow {
            self.error(0, "macro expansion is too large (limit exceeded)");
            self.overflow = true;
        }
        !self.overflow
    }
}

/// One replacement list being rescanned.
struct Ctx {
    toks: Vec<Tok>,
    pos: usize,
    mac: Rc<str>,
}

/// What happened to an identifier.
enum Step {
    /// A token to output.
    Out(Tok),
    /// A macro was entered (or an invocation was dropped): read on.
    Again,
}

/// The expansion engine over one base stream.
pub struct Expander<'e, 'm> {
    pub(super) env: &'e mut Env<'m>,
    base: &'e mut dyn Base,
    ctxs: Vec<Ctx>,
    pub(super) depth: u32,
    /// Lead of the macro name whose expansion is being output, for its first token.
    pending_lead: Option<Lead>,
}

impl<'e, 'm> Expander<'e, 'm> {
    pub fn new(env: &'e mut Env<'m>, base: &'e mut dyn Base, depth: u32) -> Expander<'e, 'm> {
        Expander {
            env,
            base,
            ctxs: Vec::new(),
            depth,
            pending_lead: None,
        }
    }

    /// Leaves every replacement list (re-enabling its macro).
    pub fn finish(&mut self) {
        while let Some(c) = self.ctxs.pop() {
            self.enable(&c.mac);
        }
    }

    fn enable(&mut self, mac: &Rc<str>) {
        if let Some(n) = self.env.disabled.get_mut(mac) {
            *n = n.saturating_sub(1);
        }
    }

    /// The next token without macro expansion, leaving finished replacement lists.
    pub(super) fn next_raw(&mut self) -> Option<Tok> {
        if !self.env.charge(1) {
            return None;
        }
        loop {
            let Some(c) = self.ctxs.last_mut() else {
                return self.base.next();
            };
            if let Some(t) = c.toks.get(c.pos) {
                c.pos += 1;
                return Some(t.clone());
            }
            if let Some(c) = self.ctxs.pop() {
                self.enable(&c.mac);
            }
        }
    }

    /// The next token after macro expansion.
    pub fn next_expanded(&mut self) -> Option<Tok> {
        loop {
            let tok = self.next_raw()?;
            if let Step::Out(mut t) = self.expand_ident(tok) {
                if let Some(lead) = self.pending_lead.take() {
                    merge_lead(lead, &mut t);
                }
                return Some(t);
            }
        }
    }

    fn expand_ident(&mut self, mut tok: Tok) -> Step {
        if tok.kind != Kind::Ident || tok.painted {
            return Step::Out(tok);
        }
        if self.env.if_mode && &*tok.text == "defined" {
            return Step::Out(self.defined_op(tok));
        }
        let macros = self.env.macros;
        let Some(mac) = macros.get(&tok.text) else {
            return Step::Out(tok);
        };
        if self.env.is_disabled(&tok.text) {
            tok.painted = true;
            return Step::Out(tok);
        }
        match &mac.kind {
            MacroKind::Line => {
                Step::Out(self.builtin(tok, Kind::Number, self.env.line.to_string()))
            }
            MacroKind::File => {
                let s = format!("\"{}\"", escape(&self.env.file));
                Step::Out(self.builtin(tok, Kind::Str, s))
            }
            MacroKind::Object => {
                let body = self.substitute(mac, &tok, Vec::new());
                self.enter(tok, body);
                Step::Again
            }
            MacroKind::Function { .. } => self.invoke(mac, tok),
        }
    }

    fn builtin(&self, tok: Tok, kind: Kind, text: String) -> Tok {
        Tok {
            kind,
            text: text.into(),
            seq: 0,
            ..tok
        }
    }

    /// A function-like macro name: expands it when `(` follows.
    fn invoke(&mut self, mac: &Macro, mut tok: Tok) -> Step {
        if !self.peek_lparen() {
            return Step::Out(tok);
        }
        while let Some(t) = self.next_raw() {
            if t.is_punct("(") {
                break;
            }
        }
        let Some(mut args) = self.collect_args(mac, &tok) else {
            tok.painted = true;
            return Step::Out(tok);
        };
        if !self.check_arity(mac, &tok, &args) {
            tok.painted = true;
            return Step::Out(tok);
        }
        if mac.params().is_empty() {
            args.clear();
        } else if args.len() < mac.params().len() {
            args.push(Vec::new());
        }
        let body = self.substitute(mac, &tok, args);
        self.enter(tok, body);
        Step::Again
    }

    /// Pushes the replacement of macro `name`.
    fn enter(&mut self, name: Tok, mut body: Vec<Tok>) {
        if !self.env.charge(body.len()) {
            return;
        }
        if self.pending_lead.is_none() {
            self.pending_lead = Some(name.lead.clone());
        }
        for t in &mut body {
            t.col = name.col;
        }
        *self.env.disabled.entry(name.text.clone()).or_insert(0) += 1;
        self.ctxs.push(Ctx {
            toks: body,
            pos: 0,
            mac: name.text,
        });
    }

    /// Whether the next token (skipping line ends, reading further lines) is `(`.
    fn peek_lparen(&mut self) -> bool {
        for c in self.ctxs.iter().rev() {
            if let Some(t) = c.toks.get(c.pos) {
                return t.is_punct("(");
            }
        }
        let mut i = 0;
        loop {
            match self.base.peek(i) {
                Some(t) if t.kind == Kind::Eol => i += 1,
                Some(t) => return t.is_punct("("),
                None => return false,
            }
        }
    }

    /// Reads the arguments of an invocation after its `(`, up to the matching `)`.
    fn collect_args(&mut self, mac: &Macro, name: &Tok) -> Option<Vec<Vec<Tok>>> {
        let (nparams, variadic) = (mac.params().len(), mac.is_variadic());
        let mut args: Vec<Vec<Tok>> = vec![Vec::new()];
        let mut depth = 0u32;
        let mut space = false;
        loop {
            let Some(mut t) = self.next_raw() else {
                let msg = format!(
                    "unterminated argument list invoking macro \"{}\"",
                    name.text
                );
                self.env.error(name.col, msg);
                return None;
            };
            if t.kind == Kind::Eol {
                space = true;
                continue;
            }
            t.lead = if space {
                Lead::Space
            } else {
                t.lead.normalized()
            };
            t.seq = 0;
            space = false;
            if t.is_punct("(") {
                depth += 1;
            } else if t.is_punct(")") {
                if depth == 0 {
                    return Some(args);
                }
                depth -= 1;
            } else if t.is_punct(",") && depth == 0 && !(variadic && args.len() >= nparams) {
                args.push(Vec::new());
                continue;
            }
            if let Some(a) = args.last_mut() {
                a.push(t);
            }
        }
    }

    fn check_arity(&mut self, mac: &Macro, name: &Tok, args: &[Vec<Tok>]) -> bool {
        let want = mac.params().len();
        let given = match args {
            [only] if only.is_empty() && want == 0 => 0,
            _ => args.len(),
        };
        let ok = if mac.is_variadic() {
            given + 1 >= want
        } else {
            given == want
        };
        if !ok {
            let msg = if given > want {
                format!(
                    "macro \"{}\" passed {given} arguments, but takes just {want}",
                    name.text
                )
            } else {
                format!(
                    "macro \"{}\" requires {want} arguments, but only {given} given",
                    name.text
                )
            };
            self.env.error(name.col, msg);
        }
        ok
    }

    /// `defined NAME` or `defined(NAME)` in `#if`.
    fn defined_op(&mut self, tok: Tok) -> Tok {
        let mut next = self.next_raw();
        let paren = next.as_ref().is_some_and(|t| t.is_punct("("));
        if paren {
            next = self.next_raw();
        }
        let value = match &next {
            Some(t) if t.is_ident() => self.env.macros.contains_key(&t.text),
            _ => {
                self.env
                    .error(tok.col, "operator \"defined\" requires an identifier");
                false
            }
        };
        if paren && next.as_ref().is_some_and(Tok::is_ident) {
            match self.next_raw() {
                Some(t) if t.is_punct(")") => {}
                _ => self.env.error(tok.col, "missing ')' after \"defined\""),
            }
        }
        let text = if value { "1" } else { "0" };
        self.builtin(tok, Kind::Number, text.to_string())
    }

    /// Fully expands a list of tokens (a macro argument) on its own.
    pub(super) fn expand_list(&mut self, toks: Vec<Tok>, col: u32) -> Vec<Tok> {
        if self.depth >= MAX_DEPTH {
            self.env.error(col, "macro arguments nested too deeply");
            return toks;
        }
        let mut base = VecBase::new(toks);
        let mut sub = Expander::new(&mut *self.env, &mut base, self.depth + 1);
        let mut out = Vec::new();
        while let Some(t) = sub.next_expanded() {
            out.push(t);
        }
        sub.finish();
        out
    }

    /// Expands everything (for directives); tokens are returned as they come.
    pub fn expand_all(&mut self) -> Vec<Tok> {
        let mut out = Vec::new();
        while let Some(t) = self.next_expanded() {
            out.push(t);
        }
        self.finish();
        out
    }

    /// Expands up to the end of the current line (an [`Kind::Eol`] read outside any
    /// invocation) and writes the output text.
    pub fn run_line(&mut self) -> String {
        let mut out = String::new();
        let mut prev: Option<Tok> = None;
        while let Some(t) = self.next_expanded() {
            if t.kind == Kind::Eol {
                out.push_str(t.lead.as_str());
                return out;
            }
            write_tok(&mut out, prev.as_ref(), &t);
            prev = Some(t);
            if out.len() > MAX_LINE {
                self.env
                    .error(0, "macro expansion is too large (limit exceeded)");
                self.env.overflow = true;
            }
        }
        if self.env.overflow {
            self.finish();
            while let Some(t) = self.base.next() {
                if t.kind == Kind::Eol {
                    break;
                }
            }
            return String::new();
        }
        out
    }
}

/// Gives token `t` the lead of the macro name it replaces, unless it is a source token with
/// comments before it (which must stay, as a block comment may run on to the next line).
fn merge_lead(lead: Lead, t: &mut Tok) {
    let keep = matches!(t.lead, Lead::Text(_)) && t.seq != 0;
    if !keep && (t.seq == 0 || lead.has_space()) {
        t.lead = lead;
    }
}

/// Appends one output token, with its lead, or a space where two tokens would otherwise run
/// together into a different token.
fn write_tok(out: &mut String, prev: Option<&Tok>, t: &Tok) {
    match &t.lead {
        Lead::None => {
            if let Some(p) = prev {
                let adjacent = p.seq != 0 && t.seq == p.seq.wrapping_add(1);
                if !adjacent && would_paste(&p.text, &t.text) {
                    out.push(' ');
                }
            }
        }
        lead => out.push_str(lead.as_str()),
    }
    out.push_str(&t.text);
}

/// Escapes `\` and `"` for a string literal.
pub fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        if c == '"' || c == '\\' {
            out.push('\\');
        }
        out.push(c);
    }
    out
}
