//! From a P4 file to a verified pipeline: the whole frontend and lowering, with diagnostics
//! rendered against the original files.

use koi_syntax::{Diagnostics, PpOptions, SourceMap};
use std::path::Path;

/// A compiled program.
pub struct Compiled {
    pub sm: SourceMap,
    pub pipeline: koi_ir::Pipeline,
    /// Warnings found on the way.
    pub diags: Diagnostics,
}

/// Why a program did not compile.
pub struct CompileError {
    pub sm: SourceMap,
    pub diags: Diagnostics,
}

impl CompileError {
    /// The program file itself could not be read (missing, too large, not a regular file, not
    /// UTF-8): an I/O error, exit code 2 for the command line, not a diagnostic of the program.
    /// Nothing was read into the source map then.
    pub fn unreadable(&self) -> bool {
        self.sm.files.is_empty()
    }

    /// The diagnostics rendered as `FILE:LINE:COL: error: ...` with their snippets: the first
    /// [`koi_syntax::diag::MAX_SHOWN`], then a line saying how many more there were.
    pub fn render(&self) -> String {
        self.diags.render(&self.sm)
    }

    /// The first error's message on one line, for summaries.
    pub fn first_line(&self) -> String {
        let mut first = String::new();
        self.diags.emit(&self.sm, 1, |s| {
            if first.is_empty() {
                first = s.lines().next().unwrap_or("").to_string();
            }
        });
        first
    }
}

/// Preprocesses, parses, checks (requiring `main`) and lowers the program at `path`.
pub fn compile(path: &Path, opts: &PpOptions) -> Result<Compiled, CompileError> {
    let text = match koi_syntax::input::read_text(path, koi_syntax::input::MAX_SOURCE) {
        Ok(t) => t,
        Err(e) => {
            let mut diags = Diagnostics::new();
            diags.push(koi_syntax::Diagnostic::global(e.to_string()));
            return Err(CompileError {
                sm: SourceMap::new(),
                diags,
            });
        }
    };
    lower_parsed(koi_syntax::parse_str(
        &path.display().to_string(),
        &text,
        opts,
    ))
}

/// [`compile`] for a program given as text; `name` is the file name its diagnostics show.
/// `#include "..."` is searched in `opts`' directories only.
pub fn compile_str(name: &str, text: &str, opts: &PpOptions) -> Result<Compiled, CompileError> {
    lower_parsed(koi_syntax::parse_str(name, text, opts))
}

/// Checks (requiring `main`) and lowers a parsed program.
fn lower_parsed(
    (sm, program, mut diags): (SourceMap, koi_syntax::ast::Program, Diagnostics),
) -> Result<Compiled, CompileError> {
    if diags.has_errors() {
        return Err(CompileError { sm, diags });
    }
    let copts = koi_sema::CheckOptions { require_main: true };
    let (checked, sdiags) = koi_sema::check(&program, &copts);
    diags.extend(sdiags.list);
    if diags.has_errors() {
        return Err(CompileError { sm, diags });
    }
    match koi_lower::lower(&program, &checked) {
        Ok(pipeline) => Ok(Compiled {
            sm,
            pipeline,
            diags,
        }),
        Err(ldiags) => {
            diags.extend(ldiags.list);
            Err(CompileError { sm, diags })
        }
    }
}
