//! koi's P4-16 syntax layer: everything from source text to an abstract syntax tree.
//!
//! The pipeline is [`preprocess`] (cpp-compatible, with a line map back to the original files)
//! then [`parser::parse`] (a hand-written, error-resilient recursive-descent parser over the
//! tokens of [`lexer`]) producing an [`ast::Program`]. Diagnostics of every phase are
//! [`diag::Diagnostic`]s whose spans are byte ranges in the preprocessed text; the
//! [`source::SourceMap`] maps them back to `file:line:col`.

pub mod ast;
pub mod builtin;
pub mod diag;
pub mod input;
pub mod lexer;
pub mod parser;
pub mod preprocess;
pub mod source;

pub use diag::{Diagnostic, Diagnostics, Severity};
pub use source::{FileId, SourceMap, Span};

use std::path::Path;

/// Options of the preprocessor: `-I` directories and `-D` definitions.
#[derive(Clone, Debug, Default)]
pub struct PpOptions {
    /// Searched, in order, for `#include <...>` (after koi's built-in headers) and for
    /// `#include "..."` (after the including file's directory).
    pub include_dirs: Vec<std::path::PathBuf>,
    /// `-D NAME[=VALUE]`: `(NAME, VALUE)`; a definition without value is `1`.
    pub defines: Vec<(String, Option<String>)>,
}

/// Preprocesses and parses the file at `path`. The returned source map holds every file read
/// and the expanded text the spans refer to.
pub fn parse_file(path: &Path, opts: &PpOptions) -> (SourceMap, ast::Program, Diagnostics) {
    let mut sm = SourceMap::new();
    let mut diags = preprocess::preprocess_file(&mut sm, path, opts);
    if diags.has_errors() {
        return (sm, ast::Program::default(), diags);
    }
    let (program, pdiags) = parser::parse(&sm.expanded.text);
    diags.extend(pdiags.list);
    (sm, program, diags)
}

/// Like [`parse_file`] for a program given as text (`name` is used in diagnostics).
pub fn parse_str(
    name: &str,
    text: &str,
    opts: &PpOptions,
) -> (SourceMap, ast::Program, Diagnostics) {
    let mut sm = SourceMap::new();
    let mut diags = preprocess::preprocess_str(&mut sm, name, text, opts);
    if diags.has_errors() {
        return (sm, ast::Program::default(), diags);
    }
    let (program, pdiags) = parser::parse(&sm.expanded.text);
    diags.extend(pdiags.list);
    (sm, program, diags)
}
