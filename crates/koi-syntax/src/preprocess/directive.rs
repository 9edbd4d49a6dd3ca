//! Directive lines: dispatch, and `#define`, `#undef`, `#line`, `#error`, `#warning` and
//! `#pragma` (conditionals are in `cond`, `#include` in `include`). Any other `#` line is text
//! to cpp in assembler mode, as p4c runs it, and passes through like `#pragma`.

use super::lex::{Kind, Tok, tokens};
use super::reader::Logical;
use super::{Pp, Presumed, macros};
use crate::source::SourceFile;

/// Highest line number `#line` accepts (as C).
const MAX_LINE_NUMBER: u64 = 2_147_483_647;

/// One directive line, already emitted as an empty output line.
pub struct Directive {
    /// Output line of the directive.
    pub idx: usize,
    /// Its first physical line and how many physical lines it covers.
    pub first: u32,
    pub count: u32,
    /// Column of the `#`.
    pub hash_col: u32,
    pub name: Tok,
    /// Tokens after the directive name.
    pub args: Vec<Tok>,
    /// Column of the end of the directive text.
    pub end_col: u32,
    pub text: String,
}

impl Directive {
    /// Warns about tokens after the first `n` arguments.
    pub fn extra_tokens(&self, pp: &mut Pp<'_>, n: usize) {
        if let Some(t) = self.args.get(n) {
            let msg = format!("extra tokens at end of #{} directive", self.name.text);
            pp.out.warning(self.idx, t.col, t.text.len(), msg);
        }
    }

    /// The source text after the directive name, trimmed.
    fn rest(&self) -> &str {
        let from = self.name.col as usize + self.name.text.len();
        self.text.get(from..).unwrap_or("").trim()
    }
}

impl Pp<'_> {
    pub(super) fn directive(&mut self, l: Logical) {
        let idx = self.emit(l.first, l.count, String::new());
        let (mut toks, sc) = tokens(&l.text, false);
        let end_col = u32::try_from(sc.pos()).unwrap_or(u32::MAX);
        let mut rest = toks.split_off(1.min(toks.len()));
        let hash_col = toks.first().map_or(0, |t| t.col);
        if rest.is_empty() {
            return;
        }
        let name = rest.remove(0);
        let d = Directive {
            idx,
            first: l.first,
            count: l.count,
            hash_col,
            name,
            args: rest,
            end_col,
            text: l.text,
        };
        self.dispatch(&d);
    }

    fn dispatch(&mut self, d: &Directive) {
        let name = if d.name.kind == Kind::Ident {
            &*d.name.text
        } else {
            ""
        };
        match name {
            "if" => self.do_if(d, "if"),
            "ifdef" => self.do_if(d, "ifdef"),
            "ifndef" => self.do_if(d, "ifndef"),
            "elif" => self.do_elif(d),
            "else" => self.do_else(d),
            "endif" => self.do_endif(d),
            _ if self.skipping() => {}
            "define" => self.do_define(d),
            "undef" => self.do_undef(d),
            "include" => self.do_include(d),
            "line" => self.do_line(d),
            "error" | "warning" => self.do_message(d, name == "error"),
            "pragma" => self.do_pragma(d),
            _ if d.name.kind == Kind::Number => self.do_line(d),
            // cpp in assembler mode (`-x assembler-with-cpp`, as p4c runs it) takes a `#` line
            // that is no directive for text (a comment in assembly) and passes it on; p4c's
            // lexer then skips a line that starts with `#`, as koi's does.
            _ => self.do_pragma(d),
        }
    }

    fn do_define(&mut self, d: &Directive) {
        match macros::parse_define(&d.args, d.end_col) {
            Ok((name, m)) => {
                if self.macros.get(&name).is_some_and(|old| !old.same_as(&m)) {
                    let (col, len) = d.args.first().map_or((0, 1), |t| (t.col, t.text.len()));
                    self.out
                        .warning(d.idx, col, len, format!("\"{name}\" redefined"));
                }
                self.macros.insert(name, m);
            }
            Err(e) => self.out.error(d.idx, e.col, 1, e.msg),
        }
    }

    fn do_undef(&mut self, d: &Directive) {
        let Some(name) = d.args.first() else {
            let msg = "no macro name given in #undef directive";
            self.out.error(d.idx, d.end_col, 1, msg);
            return;
        };
        match macros::check_name(name, "undef") {
            Ok(()) => {
                self.macros.remove(&name.text);
                d.extra_tokens(self, 1);
            }
            Err(e) => self.out.error(d.idx, e.col, name.text.len(), e.msg),
        }
    }

    fn do_message(&mut self, d: &Directive, error: bool) {
        let msg = format!("#{} {}", d.name.text, d.rest());
        let msg = msg.trim_end().to_string();
        let (col, len) = (d.name.col, d.name.text.len());
        if error {
            self.out.error(d.idx, col, len, msg);
        } else {
            self.out.warning(d.idx, col, len, msg);
        }
    }

    /// `#pragma` lines, and `#` lines that are no directive, are passed to the lexer unchanged.
    fn do_pragma(&mut self, d: &Directive) {
        if let Some((text, _)) = self.out.lines.get_mut(d.idx) {
            *text = d.text.replace('\n', " ");
        }
    }

    /// `#line N ["file"]` (and the `# N "file"` form of cpp's output).
    fn do_line(&mut self, d: &Directive) {
        let args = if d.name.kind == Kind::Number {
            std::slice::from_ref(&d.name).to_vec()
        } else if d.args.first().is_some_and(|t| t.kind == Kind::Number) {
            d.args.clone()
        } else {
            self.expand_directive(&d.args, d.idx, d.first, false)
        };
        let what = if d.name.kind == Kind::Number {
            d.args.first()
        } else {
            args.get(1)
        };
        let Some(num) = args.first() else {
            self.out.error(
                d.idx,
                d.end_col,
                1,
                "#line directive requires a line number",
            );
            return;
        };
        let line = match parse_line_number(&num.text) {
            Ok(n) => n,
            Err(msg) => {
                self.out.error(d.idx, num.col, num.text.len(), msg);
                return;
            }
        };
        let name = match what {
            None => None,
            Some(t) if t.kind == Kind::Str => Some(unquote(&t.text)),
            Some(t) => {
                let msg = format!("invalid filename \"{}\" in #line directive", t.text);
                self.out.error(d.idx, t.col, t.text.len(), msg);
                return;
            }
        };
        self.set_presumed(line, name, d.first.saturating_add(d.count));
    }

    /// From physical line `phys` on, lines are line `line` and on of `name`.
    fn set_presumed(&mut self, line: u32, name: Option<String>, phys: u32) {
        let Some(current) = self.stack.last().map(|fs| match &fs.presumed {
            Some(p) => p.name.clone(),
            None => fs.name.clone(),
        }) else {
            return;
        };
        let name: std::rc::Rc<str> = name.map_or(current, Into::into);
        let file = match self.virtual_files.get(&name) {
            Some(f) => *f,
            None => {
                let f = self.sm.add_file(SourceFile::new(
                    name.to_string().into(),
                    String::new(),
                    false,
                ));
                self.virtual_files.insert(name.clone(), f);
                f
            }
        };
        if let Some(fs) = self.stack.last_mut() {
            fs.presumed = Some(Presumed {
                file,
                name,
                phys,
                line,
            });
        }
    }
}

fn parse_line_number(text: &str) -> Result<u32, String> {
    if text.is_empty() || !text.bytes().all(|b| b.is_ascii_digit()) {
        return Err(format!("\"{text}\" after #line is not a positive integer"));
    }
    match text.parse::<u64>() {
        Ok(n) if n <= MAX_LINE_NUMBER => Ok(u32::try_from(n).unwrap_or(u32::MAX)),
        _ => Err("line number out of range".to_string()),
    }
}

/// The contents of a string literal, with `\\` and `\"` unescaped.
pub fn unquote(lit: &str) -> String {
    let inner = lit
        .strip_prefix('"')
        .map(|s| s.strip_suffix('"').unwrap_or(s))
        .unwrap_or(lit);
    let mut out = String::with_capacity(inner.len());
    let mut chars = inner.chars();
    while let Some(c) = chars.next() {
        if c == '\\' {
            match chars.next() {
                Some(e @ ('\\' | '"')) => out.push(e),
                Some(e) => {
                    out.push('\\');
                    out.push(e);
                }
                None => out.push('\\'),
            }
        } else {
            out.push(c);
        }
    }
    out
}
