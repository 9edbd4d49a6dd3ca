//! `#include`: reading the header name (also when it comes from a macro), searching for the
//! file, loading it into the source map once, and entering it.
//!
//! `#include <f>` searches koi's built-in headers, then the `-I` directories in order.
//! `#include "f"` searches the including file's directory (for a built-in header: the
//! built-in headers), then the `-I` directories, and finally the built-in headers.

use super::Pp;
use super::directive::Directive;
use super::lex::{Kind, Tok};
use crate::source::{FileId, SourceFile};
use std::path::{Path, PathBuf};
use std::rc::Rc;

/// Deepest nesting of `#include`.
pub const MAX_DEPTH: usize = 200;
/// Most `#include`s processed in one program.
const MAX_INCLUDES: u64 = 100_000;
/// Where built-in headers appear to be, in diagnostics.
pub const BUILTIN_DIR: &str = "koi/p4include";

/// The directory a file's `#include "..."` searches first.
#[derive(Clone, Debug)]
pub enum Dir {
    Builtin,
    Path(PathBuf),
}

/// A header that was found.
enum Found {
    Builtin(String, &'static str),
    File(PathBuf),
}

/// A header name: its text, whether it was `<...>`, and its column and length.
struct HeaderName {
    name: String,
    angle: bool,
    col: u32,
    len: usize,
}

impl HeaderName {
    fn spelled(&self) -> String {
        if self.angle {
            format!("<{}>", self.name)
        } else {
            format!("\"{}\"", self.name)
        }
    }
}

/// A built-in header by `name`, whose `.` and empty path segments (`./psa.p4`, `.//core.p4`) are
/// dropped: cpp joins the name to p4c's include directory, where they name the same file.
fn builtin(name: &str) -> Option<Found> {
    let segments: Vec<&str> = name
        .split('/')
        .filter(|s| !s.is_empty() && *s != ".")
        .collect();
    let name = segments.join("/");
    crate::builtin::header(&name).map(|t| Found::Builtin(name, t))
}

fn in_dirs(name: &str, dirs: &[PathBuf]) -> Option<Found> {
    dirs.iter()
        .map(|d| d.join(name))
        .find(|p| p.is_file())
        .map(Found::File)
}

/// Searches for header `name`.
fn search(name: &str, angle: bool, from: &Dir, dirs: &[PathBuf]) -> Option<Found> {
    if angle {
        return builtin(name).or_else(|| in_dirs(name, dirs));
    }
    let local = match from {
        Dir::Builtin => builtin(name),
        Dir::Path(d) => Some(d.join(name)).filter(|p| p.is_file()).map(Found::File),
    };
    local
        .or_else(|| in_dirs(name, dirs))
        .or_else(|| builtin(name))
}

impl Pp<'_> {
    pub(super) fn do_include(&mut self, d: &Directive) {
        let Some(h) = self.header_name(d) else {
            let msg = "#include expects \"FILENAME\" or <FILENAME>";
            let col = d.args.first().map_or(d.end_col, |t| t.col);
            self.out.error(d.idx, col, 1, msg);
            return;
        };
        if h.name.is_empty() {
            self.out
                .error(d.idx, h.col, h.len, "empty filename in #include");
            return;
        }
        if self.stack.len() >= MAX_DEPTH {
            let msg = format!("#include nested depth {MAX_DEPTH} exceeds maximum of {MAX_DEPTH}");
            self.out.error(d.idx, h.col, h.len, msg);
            return;
        }
        self.includes += 1;
        if self.includes > MAX_INCLUDES {
            self.fail("too many #include directives processed");
            return;
        }
        let from = self.stack.last().map_or(Dir::Builtin, |fs| fs.dir.clone());
        match search(&h.name, h.angle, &from, &self.opts.include_dirs) {
            None => {
                let msg = format!("cannot find include file {}", h.spelled());
                self.out.error(d.idx, h.col, h.len, msg);
            }
            Some(found) => match self.load(found) {
                Ok((id, name, dir, text)) => self.push_file(id, name, dir, text),
                Err(e) => {
                    let msg = format!("cannot read include file {}: {e}", h.spelled());
                    self.out.error(d.idx, h.col, h.len, msg);
                }
            },
        }
    }

    /// The header name of `#include`, as written or after macro expansion.
    fn header_name(&mut self, d: &Directive) -> Option<HeaderName> {
        let first = d.args.first()?;
        if first.kind == Kind::Str {
            d.extra_tokens(self, 1);
            return Some(quoted(first));
        }
        if first.is_punct("<") {
            let start = first.col as usize + 1;
            let rest = d.text.get(start..)?;
            let end = rest.find('>')?;
            let close = u32::try_from(start + end).unwrap_or(u32::MAX);
            if let Some(t) = d.args.iter().find(|t| t.col > close) {
                let msg = "extra tokens at end of #include directive";
                self.out.warning(d.idx, t.col, t.text.len(), msg);
            }
            return Some(HeaderName {
                name: rest.get(..end)?.to_string(),
                angle: true,
                col: first.col,
                len: end + 2,
            });
        }
        let toks = self.expand_directive(&d.args, d.idx, d.first, false);
        from_tokens(&toks, first.col)
    }

    /// Loads a found header into the source map (once) and returns what entering it needs.
    fn load(&mut self, found: Found) -> Result<(FileId, Rc<str>, Dir, Rc<str>), String> {
        let (path, is_builtin, dir) = match &found {
            Found::Builtin(name, _) => (Path::new(BUILTIN_DIR).join(name), true, Dir::Builtin),
            Found::File(p) => {
                let parent = p.parent().map(Path::to_path_buf).unwrap_or_default();
                (p.clone(), false, Dir::Path(parent))
            }
        };
        let known = self
            .sm
            .files
            .iter()
            .position(|f| f.path == path && f.builtin == is_builtin)
            .and_then(|i| u32::try_from(i).ok())
            .map(FileId);
        let id = match known {
            Some(id) => id,
            None => {
                let text = match found {
                    Found::Builtin(_, t) => t.to_string(),
                    Found::File(p) => crate::input::read_text(&p, crate::input::MAX_SOURCE)
                        .map_err(|e| e.to_string())?,
                };
                self.sm
                    .add_file(SourceFile::new(path.clone(), text, is_builtin))
            }
        };
        let text = match self.texts.get(&id) {
            Some(t) => t.clone(),
            None => {
                let t: Rc<str> = self
                    .sm
                    .files
                    .get(id.0 as usize)
                    .map_or("", |f| &f.text)
                    .into();
                self.texts.insert(id, t.clone());
                t
            }
        };
        Ok((id, path.display().to_string().into(), dir, text))
    }
}

fn quoted(t: &Tok) -> HeaderName {
    let inner = t.text.strip_prefix('"').unwrap_or(&t.text);
    let inner = inner.strip_suffix('"').unwrap_or(inner);
    HeaderName {
        name: inner.to_string(),
        angle: false,
        col: t.col,
        len: t.text.len(),
    }
}

/// A header name made by macro expansion: a string literal, or `<` tokens `>`.
fn from_tokens(toks: &[Tok], col: u32) -> Option<HeaderName> {
    let first = toks.first()?;
    if first.kind == Kind::Str {
        let mut h = quoted(first);
        h.col = col;
        return Some(h);
    }
    if !first.is_punct("<") {
        return None;
    }
    let mut name = String::new();
    for t in toks.get(1..)? {
        if t.is_punct(">") {
            return Some(HeaderName {
                len: name.len() + 2,
                name,
                angle: true,
                col,
            });
        }
        if !name.is_empty() && t.lead.has_space() {
            name.push(' ');
        }
        name.push_str(&t.text);
    }
    None
}
