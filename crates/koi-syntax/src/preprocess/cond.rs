//! Conditional groups: `#if`, `#ifdef`, `#ifndef`, `#elif`, `#else` and `#endif`, with the
//! checks that they are balanced within each file.

use super::directive::Directive;
use super::{Pp, expr};

/// Where a conditional stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum State {
    /// The current group is being output.
    Active,
    /// No group has been taken yet; a later `#elif`/`#else` may be.
    Pending,
    /// A group was taken; the rest are skipped.
    Done,
    /// Inside a skipped group: every group is skipped.
    Dead,
}

/// One open conditional.
#[derive(Clone, Debug)]
pub struct Cond {
    pub state: State,
    pub seen_else: bool,
    /// Output line and column of its `#if`, for "unterminated" errors.
    pub line: usize,
    pub col: u32,
    pub kind: &'static str,
}

impl Cond {
    pub fn is_active(&self) -> bool {
        self.state == State::Active
    }
}

impl Pp<'_> {
    /// `#if`, `#ifdef` and `#ifndef`.
    pub(super) fn do_if(&mut self, d: &Directive, kind: &'static str) {
        let state = if self.skipping() {
            State::Dead
        } else {
            let taken = match kind {
                "if" => self.eval_if(d),
                _ => self.eval_ifdef(d, kind) == (kind == "ifdef"),
            };
            if taken { State::Active } else { State::Pending }
        };
        let cond = Cond {
            state,
            seen_else: false,
            line: d.idx,
            col: d.hash_col,
            kind,
        };
        if let Some(fs) = self.stack.last_mut() {
            fs.conds.push(cond);
        }
    }

    /// Whether the macro named by `#ifdef`/`#ifndef` is defined.
    fn eval_ifdef(&mut self, d: &Directive, kind: &str) -> bool {
        let Some(name) = d.args.first() else {
            let msg = format!("no macro name given in #{kind} directive");
            self.out.error(d.idx, d.end_col, 1, msg);
            return false;
        };
        if !name.is_ident() {
            self.out.error(
                d.idx,
                name.col,
                name.text.len(),
                "macro names must be identifiers",
            );
            return false;
        }
        d.extra_tokens(self, 1);
        self.macros.contains_key(&name.text)
    }

    /// The value of the expression of `#if`/`#elif` (false after an error).
    fn eval_if(&mut self, d: &Directive) -> bool {
        let toks = self.expand_directive(&d.args, d.idx, d.first, true);
        if toks.is_empty() && !d.args.is_empty() {
            return false;
        }
        match expr::eval(&toks, d.end_col) {
            Ok(v) => v.bits != 0,
            Err(e) => {
                self.out.error(d.idx, e.col, 1, e.msg);
                false
            }
        }
    }

    fn top_cond(&mut self, d: &Directive, what: &str) -> Option<Cond> {
        let c = self.stack.last().and_then(|fs| fs.conds.last()).cloned();
        if c.is_none() {
            self.out
                .error(d.idx, d.hash_col, 1, format!("#{what} without #if"));
        }
        c
    }

    fn set_top(&mut self, c: Cond) {
        if let Some(top) = self.stack.last_mut().and_then(|fs| fs.conds.last_mut()) {
            *top = c;
        }
    }

    pub(super) fn do_elif(&mut self, d: &Directive) {
        let Some(mut c) = self.top_cond(d, "elif") else {
            return;
        };
        if c.seen_else {
            self.out.error(d.idx, d.hash_col, 1, "#elif after #else");
        }
        c.state = match c.state {
            State::Active => State::Done,
            State::Pending if self.eval_if(d) => State::Active,
            s => s,
        };
        self.set_top(c);
    }

    pub(super) fn do_else(&mut self, d: &Directive) {
        let Some(mut c) = self.top_cond(d, "else") else {
            return;
        };
        if c.seen_else {
            self.out.error(d.idx, d.hash_col, 1, "#else after #else");
        }
        c.seen_else = true;
        c.state = match c.state {
            State::Active => State::Done,
            State::Pending => State::Active,
            s => s,
        };
        if c.state != State::Dead {
            d.extra_tokens(self, 0);
        }
        self.set_top(c);
    }

    pub(super) fn do_endif(&mut self, d: &Directive) {
        if self.top_cond(d, "endif").is_none() {
            return;
        }
        let dead = self.skipping_outer();
        if let Some(fs) = self.stack.last_mut() {
            fs.conds.pop();
        }
        if !dead {
            d.extra_tokens(self, 0);
        }
    }

    /// Whether the group around the innermost conditional is skipped.
    fn skipping_outer(&self) -> bool {
        self.stack
            .last()
            .and_then(|fs| fs.conds.iter().rev().nth(1))
            .is_some_and(|c| !c.is_active())
    }
}
