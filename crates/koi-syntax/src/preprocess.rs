//! The C-preprocessor-compatible front of the pipeline.
//!
//! It does what p4c's `cpp -C -undef -nostdinc -x assembler-with-cpp` does for P4 programs:
//! `#include` (koi's built-in headers first for `<...>`), `#define`/`#undef` with cpp's
//! expansion rules, conditionals with C integer expressions, `#line`, `#error`, `#warning`,
//! and passes `#pragma` lines through. Comments stay in the output for the lexer, and a line in
//! which nothing expands is copied byte for byte, so columns stay right. The output is one
//! [`Expanded`] line per input line (directives leave an empty line), each with the file and
//! line it came from, so that every diagnostic points at what the user wrote.
//!
//! Nothing here panics or runs away on hostile input: include depth, argument nesting, `#if`
//! nesting and the amount of macro expansion are all bounded and reported as errors.

mod cond;
mod directive;
mod expand;
mod expr;
mod include;
mod lex;
mod macros;
mod output;
mod reader;
mod subst;
#[cfg(test)]
mod tests;
#[cfg(test)]
mod tests_more;

use crate::source::{FileId, LineOrigin, SourceFile, SourceMap};
use crate::{Diagnostic, Diagnostics, PpOptions};
use cond::Cond;
use expand::{Base, Env, Expander};
use include::Dir;
use lex::{Kind, Lead, Scanner, Tok, make_tok};
use macros::{Macro, MacroKind, Macros};
use output::Output;
use reader::{Logical, Reader};
use std::collections::{HashMap, VecDeque};
use std::path::Path;
use std::rc::Rc;

/// Expansion steps allowed for one line.
const LINE_STEPS: u64 = 1 << 20;
/// Expansion steps allowed for the whole program.
const TOTAL_STEPS: u64 = 32 << 20;
/// Output lines allowed for the whole program (includes without guards can multiply).
const MAX_LINES: usize = 4 << 20;
/// Output bytes allowed for the whole program (spans are `u32` offsets into it).
const MAX_BYTES: usize = 256 << 20;

/// Preprocesses the file at `path` into `sm.expanded`.
pub fn preprocess_file(sm: &mut SourceMap, path: &Path, opts: &PpOptions) -> Diagnostics {
    let mut d = Diagnostics::new();
    match crate::input::read_text(path, crate::input::MAX_SOURCE) {
        Ok(text) => return preprocess_str(sm, &path.display().to_string(), &text, opts),
        Err(e) => d.push(Diagnostic::global(e.to_string())),
    }
    d
}

/// Preprocesses `text` (named `name` in diagnostics) into `sm.expanded`. `#include "..."`
/// searches the directory of `name` first.
pub fn preprocess_str(sm: &mut SourceMap, name: &str, text: &str, opts: &PpOptions) -> Diagnostics {
    let id = sm.add_file(SourceFile::new(name.into(), text.to_string(), false));
    let dir = Path::new(name)
        .parent()
        .map(Path::to_path_buf)
        .unwrap_or_default();
    let mut pp = Pp::new(sm, opts);
    pp.predefine();
    pp.push_file(id, name.into(), Dir::Path(dir), text.into());
    pp.run();
    pp.finish()
}

/// Where `#line` says the lines of a file come from.
#[derive(Clone, Debug)]
struct Presumed {
    /// The file (made for the name given to `#line`) that the lines are reported in.
    file: FileId,
    name: Rc<str>,
    /// Physical line that has presumed number `line`.
    phys: u32,
    line: u32,
}

/// One file being read (the main file or an included one).
struct FileState {
    id: FileId,
    name: Rc<str>,
    dir: Dir,
    reader: Reader,
    conds: Vec<Cond>,
    /// Tokens of text lines read but not yet expanded (lines read ahead to find the `(` of a
    /// macro invocation).
    queue: VecDeque<Tok>,
    /// `(first physical line, count)` of each line whose tokens are in `queue`.
    lines: VecDeque<(u32, u32)>,
    presumed: Option<Presumed>,
}

/// The preprocessor.
struct Pp<'a> {
    sm: &'a mut SourceMap,
    opts: &'a PpOptions,
    macros: Macros,
    stack: Vec<FileState>,
    out: Output,
    texts: HashMap<FileId, Rc<str>>,
    virtual_files: HashMap<Rc<str>, FileId>,
    /// Source token sequence counter.
    seq: u32,
    steps: u64,
    includes: u64,
    /// Bytes of output so far.
    bytes: usize,
    fatal: bool,
}

impl<'a> Pp<'a> {
    fn new(sm: &'a mut SourceMap, opts: &'a PpOptions) -> Pp<'a> {
        Pp {
            sm,
            opts,
            macros: Macros::new(),
            stack: Vec::new(),
            out: Output::default(),
            texts: HashMap::new(),
            virtual_files: HashMap::new(),
            seq: 0,
            steps: 0,
            includes: 0,
            bytes: 0,
            fatal: false,
        }
    }

    /// `__LINE__`, `__FILE__`, `__koi__` and the `-D` definitions.
    fn predefine(&mut self) {
        self.macros
            .insert("__LINE__".into(), Macro::builtin(MacroKind::Line));
        self.macros
            .insert("__FILE__".into(), Macro::builtin(MacroKind::File));
        let koi = macros::parse_define_text("__koi__ 1");
        if let Ok((name, m)) = koi {
            self.macros.insert(name, m);
        }
        for (name, value) in &self.opts.defines {
            let text = format!("{name} {}", value.as_deref().unwrap_or("1"));
            match macros::parse_define_text(&text) {
                Ok((n, m)) => {
                    self.macros.insert(n, m);
                }
                Err(e) => self
                    .out
                    .global(Diagnostic::global(format!("-D {name}: {}", e.msg))),
            }
        }
    }

    fn push_file(&mut self, id: FileId, name: Rc<str>, dir: Dir, text: Rc<str>) {
        self.stack.push(FileState {
            id,
            name,
            dir,
            reader: Reader::new(text),
            conds: Vec::new(),
            queue: VecDeque::new(),
            lines: VecDeque::new(),
            presumed: None,
        });
    }

    fn run(&mut self) {
        while !self.fatal {
            let Some(fs) = self.stack.last_mut() else {
                break;
            };
            if !fs.queue.is_empty() {
                self.round();
                continue;
            }
            match fs.reader.next_logical() {
                None => self.end_file(),
                Some(l) if l.directive => self.directive(l),
                Some(l) => self.text_line(l),
            }
            if self.out.lines.len() > MAX_LINES || self.bytes > MAX_BYTES {
                self.fail("preprocessor output is too large");
            }
        }
    }

    /// Stops preprocessing with an error at the last output line.
    fn fail(&mut self, msg: &str) {
        self.fatal = true;
        match self.out.lines.len().checked_sub(1) {
            Some(idx) => self.out.error(idx, 0, 1, msg),
            None => self.out.global(Diagnostic::global(msg)),
        }
    }

    fn end_file(&mut self) {
        if let Some(fs) = self.stack.pop() {
            for c in fs.conds {
                self.out
                    .error(c.line, c.col, 1, format!("unterminated #{}", c.kind));
            }
        }
    }

    /// Whether the current file is inside a group that is skipped.
    fn skipping(&self) -> bool {
        self.stack
            .last()
            .and_then(|fs| fs.conds.last())
            .is_some_and(|c| !c.is_active())
    }

    /// The origin of physical line `phys` of the current file (after `#line`).
    fn origin(&mut self, phys: u32) -> LineOrigin {
        let Some(fs) = self.stack.last() else {
            return LineOrigin {
                file: FileId(0),
                line: phys,
            };
        };
        match &fs.presumed {
            None => LineOrigin {
                file: fs.id,
                line: phys,
            },
            Some(p) => {
                let line = p.line.saturating_add(phys.saturating_sub(p.phys));
                self.out.note_virtual(p.file, line, fs.id, phys);
                LineOrigin { file: p.file, line }
            }
        }
    }

    /// Presumed line number and file name of physical line `phys` (for `__LINE__`).
    fn presumed(&self, phys: u32) -> (u32, Rc<str>) {
        match self.stack.last() {
            Some(FileState {
                presumed: Some(p), ..
            }) => (
                p.line.saturating_add(phys.saturating_sub(p.phys)),
                p.name.clone(),
            ),
            Some(fs) => (phys, fs.name.clone()),
            None => (phys, "".into()),
        }
    }

    /// Emits output lines for physical lines `first..first+count`: `text` on the first, empty
    /// lines for the others. Returns the index of the first.
    fn emit(&mut self, first: u32, count: u32, text: String) -> usize {
        let idx = self.out.lines.len();
        let text = if text.contains('\n') {
            text.replace('\n', " ")
        } else {
            text
        };
        self.bytes = self.bytes.saturating_add(text.len() + count as usize);
        let mut text = Some(text);
        for k in 0..count.max(1) {
            let o = self.origin(first.saturating_add(k));
            self.out.lines.push((text.take().unwrap_or_default(), o));
        }
        idx
    }

    fn text_line(&mut self, l: Logical) {
        if self.skipping() || !self.has_macro(&l) {
            let text = if self.skipping() {
                String::new()
            } else {
                l.text
            };
            self.emit(l.first, l.count, text);
            return;
        }
        if let Some(fs) = self.stack.last_mut() {
            push_line(fs, &mut self.seq, l);
        }
        self.round();
    }

    /// Whether an identifier of the line names a macro (else it is copied as is).
    fn has_macro(&self, l: &Logical) -> bool {
        let mut sc = Scanner::new(&l.text, l.start_in_comment);
        while let Some(r) = sc.next_raw() {
            if r.kind == Kind::Ident
                && l.text
                    .get(r.start..r.end)
                    .is_some_and(|id| self.macros.contains_key(id))
            {
                return true;
            }
        }
        false
    }

    /// Expands the queued tokens up to the end of a line and emits the result.
    fn round(&mut self) {
        let Some(fs) = self.stack.last_mut() else {
            return;
        };
        let start = fs.lines.front().copied().unwrap_or((1, 1));
        let (line, file) = match &fs.presumed {
            Some(p) => (
                p.line.saturating_add(start.0.saturating_sub(p.phys)),
                p.name.clone(),
            ),
            None => (start.0, fs.name.clone()),
        };
        let limit = LINE_STEPS.min(TOTAL_STEPS.saturating_sub(self.steps));
        let mut env = Env::new(&self.macros, limit, line, file);
        let mut base = TextBase {
            fs,
            seq: &mut self.seq,
            consumed: Vec::new(),
        };
        let text = Expander::new(&mut env, &mut base, 0).run_line();
        let mut consumed = base.consumed;
        let (errors, steps) = (env.errors, env.steps);
        if consumed.is_empty() {
            consumed.push(start);
        }
        self.steps = self.steps.saturating_add(steps);
        let mut text = Some(text);
        let mut first = None;
        for (l, n) in consumed {
            let idx = self.emit(l, n, text.take().unwrap_or_default());
            first.get_or_insert(idx);
        }
        let idx = first.unwrap_or(0);
        for e in errors {
            self.out.report(idx, e.col, e.msg, e.warning);
        }
        if self.steps >= TOTAL_STEPS {
            self.fail("macro expansion of the program is too large");
        }
    }

    /// Expands the tokens of a directive (`#if`, `#include`, `#line`) at physical line `phys`;
    /// errors go to output line `idx`.
    fn expand_directive(&mut self, toks: &[Tok], idx: usize, phys: u32, if_mode: bool) -> Vec<Tok> {
        let (line, file) = self.presumed(phys);
        let limit = LINE_STEPS.min(TOTAL_STEPS.saturating_sub(self.steps));
        let mut env = Env::new(&self.macros, limit, line, file);
        env.if_mode = if_mode;
        let mut base = expand::VecBase::new(toks.to_vec());
        let out = Expander::new(&mut env, &mut base, 0).expand_all();
        self.steps = self.steps.saturating_add(env.steps);
        let failed = env.errors.iter().any(|e| !e.warning);
        for e in env.errors {
            self.out.report(idx, e.col, e.msg, e.warning);
        }
        if failed { Vec::new() } else { out }
    }

    fn finish(self) -> Diagnostics {
        self.out.finish(self.sm)
    }
}

/// Tokenizes a text line into the file's queue, ending with its [`Kind::Eol`].
fn push_line(fs: &mut FileState, seq: &mut u32, l: Logical) {
    let mut sc = Scanner::new(&l.text, l.start_in_comment);
    let mut end = 0;
    while let Some(r) = sc.next_raw() {
        *seq = seq.wrapping_add(1);
        fs.queue.push_back(make_tok(&l.text, r, *seq));
        end = r.end;
    }
    *seq = seq.wrapping_add(1);
    let mut eol = Tok::new(Kind::Eol, "");
    eol.lead = Lead::from_trivia(l.text.get(end..).unwrap_or(""));
    eol.seq = *seq;
    eol.col = u32::try_from(end).unwrap_or(u32::MAX);
    fs.queue.push_back(eol);
    fs.lines.push_back((l.first, l.count));
}

/// The base stream of text lines: the queue of the current file, read ahead (up to the next
/// directive) when an invocation needs more lines.
struct TextBase<'a> {
    fs: &'a mut FileState,
    seq: &'a mut u32,
    /// Lines whose end has been read.
    consumed: Vec<(u32, u32)>,
}

impl Base for TextBase<'_> {
    fn next(&mut self) -> Option<Tok> {
        if self.fs.queue.is_empty() {
            let l = self.fs.reader.fetch_text()?;
            push_line(self.fs, self.seq, l);
        }
        let t = self.fs.queue.pop_front()?;
        if t.kind == Kind::Eol
            && let Some(l) = self.fs.lines.pop_front()
        {
            self.consumed.push(l);
        }
        Some(t)
    }

    fn peek(&mut self, i: usize) -> Option<&Tok> {
        while self.fs.queue.len() <= i {
            let l = self.fs.reader.fetch_text()?;
            push_line(self.fs, self.seq, l);
        }
        self.fs.queue.get(i)
    }
}
