//! Diagnostics: errors and warnings with a position, rendered as `FILE:LINE:COL: error: ...`
//! followed by the source line and a caret under the offending text.

use crate::source::{SourceMap, Span};
use std::fmt::Write as _;

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Severity {
    Note,
    Warning,
    Error,
}

impl Severity {
    fn label(self) -> &'static str {
        match self {
            Severity::Note => "note",
            Severity::Warning => "warning",
            Severity::Error => "error",
        }
    }
}

/// A secondary position attached to a diagnostic ("declared here").
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Note {
    pub span: Option<Span>,
    pub message: String,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Diagnostic {
    pub severity: Severity,
    /// Position in the expanded text; `None` for diagnostics without a position.
    pub span: Option<Span>,
    pub message: String,
    pub notes: Vec<Note>,
}

impl Diagnostic {
    pub fn error(span: Span, message: impl Into<String>) -> Diagnostic {
        Diagnostic {
            severity: Severity::Error,
            span: Some(span),
            message: message.into(),
            notes: Vec::new(),
        }
    }

    pub fn warning(span: Span, message: impl Into<String>) -> Diagnostic {
        Diagnostic {
            severity: Severity::Warning,
            span: Some(span),
            message: message.into(),
            notes: Vec::new(),
        }
    }

    /// An error with no position (an I/O problem, a missing `main`).
    pub fn global(message: impl Into<String>) -> Diagnostic {
        Diagnostic {
            severity: Severity::Error,
            span: None,
            message: message.into(),
            notes: Vec::new(),
        }
    }

    pub fn with_note(mut self, span: Span, message: impl Into<String>) -> Diagnostic {
        self.notes.push(Note {
            span: Some(span),
            message: message.into(),
        });
        self
    }

    pub fn is_error(&self) -> bool {
        self.severity == Severity::Error
    }

    /// Renders this diagnostic in the `file:line:col: severity: message` form with a source
    /// snippet and caret, followed by its notes.
    pub fn render(&self, sm: &SourceMap) -> String {
        let mut out = String::new();
        render_one(
            &mut out,
            sm,
            self.span,
            self.severity.label(),
            &self.message,
        );
        for n in &self.notes {
            render_one(&mut out, sm, n.span, "note", &n.message);
        }
        out
    }

    /// `(file path, line)` of this diagnostic's primary position, if it has one.
    pub fn line(&self, sm: &SourceMap) -> Option<(String, u32)> {
        let loc = sm.locate(self.span?.lo)?;
        Some((sm.file(loc.file).path.display().to_string(), loc.line))
    }
}

fn render_one(out: &mut String, sm: &SourceMap, span: Option<Span>, sev: &str, msg: &str) {
    let loc = span.and_then(|s| sm.locate(s.lo).map(|l| (s, l)));
    match loc {
        None => {
            let _ = writeln!(out, "{sev}: {msg}");
        }
        Some((span, loc)) => {
            let file = sm.file(loc.file);
            let _ = writeln!(
                out,
                "{}:{}:{}: {sev}: {msg}",
                file.path.display(),
                loc.line,
                loc.col
            );
            let line = file.line_text(loc.line);
            if line.is_empty() {
                return;
            }
            // Columns come from the expanded text; after a macro expansion they may fall
            // inside a multi-byte character of the original line, so snap to boundaries.
            let start = floor_boundary(line, (loc.col as usize).saturating_sub(1));
            // Underline the span on this line only (multi-line spans end at the line end).
            let len = (span.hi.saturating_sub(span.lo) as usize).max(1);
            let end = floor_boundary(line, start + len);
            let carets = line[start..end].chars().count().max(1);
            let pad: String = line[..start]
                .chars()
                .map(|c| if c == '\t' { '\t' } else { ' ' })
                .collect();
            let _ = writeln!(out, "  {line}");
            let _ = writeln!(out, "  {pad}{}", "^".repeat(carets));
        }
    }
}

/// The largest char boundary of `s` at or below `i` (clamped to `s.len()`).
fn floor_boundary(s: &str, i: usize) -> usize {
    let mut i = i.min(s.len());
    while !s.is_char_boundary(i) {
        i -= 1;
    }
    i
}

/// A list of diagnostics collected by one phase.
#[derive(Clone, Debug, Default)]
pub struct Diagnostics {
    pub list: Vec<Diagnostic>,
}

impl Diagnostics {
    pub fn new() -> Diagnostics {
        Diagnostics::default()
    }

    pub fn push(&mut self, d: Diagnostic) {
        self.list.push(d);
    }

    pub fn error(&mut self, span: Span, message: impl Into<String>) {
        self.push(Diagnostic::error(span, message));
    }

    pub fn warning(&mut self, span: Span, message: impl Into<String>) {
        self.push(Diagnostic::warning(span, message));
    }

    pub fn has_errors(&self) -> bool {
        self.list.iter().any(|d| d.is_error())
    }

    pub fn error_count(&self) -> usize {
        self.list.iter().filter(|d| d.is_error()).count()
    }

    pub fn extend(&mut self, other: impl IntoIterator<Item = Diagnostic>) {
        self.list.extend(other);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::source::{Expanded, LineOrigin, SourceFile};

    #[test]
    fn render_snaps_columns_to_char_boundaries() {
        let mut sm = SourceMap::new();
        let f = sm.add_file(SourceFile::new(
            "t.p4".into(),
            "x = FOO \u{27f6};\n".into(),
            false,
        ));
        // The expanded line is longer than the original (FOO -> 1234).
        sm.expanded = Expanded::from_lines(vec![(
            "x = 1234 \u{27f6};".into(),
            LineOrigin { file: f, line: 1 },
        )]);
        for lo in 0..20 {
            let d = Diagnostic::error(Span::new(lo, lo + 3), "m");
            let r = d.render(&sm);
            assert!(r.starts_with("t.p4:1:"), "{r}");
        }
    }
}
