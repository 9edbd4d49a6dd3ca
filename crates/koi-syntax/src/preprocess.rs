//! The C-preprocessor-compatible front of the pipeline (to be written).

use crate::source::{Expanded, LineOrigin, SourceFile, SourceMap};
use crate::{Diagnostic, Diagnostics, PpOptions};
use std::path::Path;

/// Preprocesses the file at `path` into `sm.expanded`.
pub fn preprocess_file(sm: &mut SourceMap, path: &Path, opts: &PpOptions) -> Diagnostics {
    let mut d = Diagnostics::new();
    match std::fs::read_to_string(path) {
        Ok(text) => return preprocess_str(sm, &path.display().to_string(), &text, opts),
        Err(e) => d.push(Diagnostic::global(format!("{}: {e}", path.display()))),
    }
    d
}

/// Preprocesses `text` (named `name` in diagnostics) into `sm.expanded`.
pub fn preprocess_str(sm: &mut SourceMap, name: &str, text: &str, _opts: &PpOptions) -> Diagnostics {
    let id = sm.add_file(SourceFile::new(name.into(), text.to_string(), false));
    let lines = text
        .lines()
        .enumerate()
        .map(|(i, l)| (l.to_string(), LineOrigin { file: id, line: i as u32 + 1 }))
        .collect();
    sm.expanded = Expanded::from_lines(lines);
    Diagnostics::new()
}
