//! Diagnostics: errors and warnings with a position, rendered as `FILE:LINE:COL: error: ...`
//! followed by the source line and a caret under the offending text.

use crate::source::{SourceMap, Span};
use std::fmt::Write as _;

/// How many diagnostics one run prints before it stops and says how many more there were:
/// p4c's default error limit (its `ErrorReporter` gives up past 20 errors).
pub const MAX_SHOWN: usize = 20;

/// Characters of source shown on each side of a diagnostic's column (and at most this many
/// underlined): a diagnostic on a line of megabytes stays a few lines long.
pub const EXCERPT_HALF: usize = 60;

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
            // Underline the span on this line only (multi-line spans end at the line end), at
            // most EXCERPT_HALF characters of it.
            let len = (span.hi.saturating_sub(span.lo) as usize).max(1);
            let end = floor_boundary(line, start + len);
            let end = advance_chars(line, start, EXCERPT_HALF).min(end);
            // Show a window of the line around the column, so that a diagnostic on a very long
            // line stays short; "..." marks the cut ends.
            let lo = back_chars(line, start, EXCERPT_HALF);
            let hi = advance_chars(line, end, EXCERPT_HALF);
            let (pre, post) = (
                if lo > 0 { "..." } else { "" },
                if hi < line.len() { "..." } else { "" },
            );
            let carets = line[start..end].chars().count().max(1);
            let pad: String = pre
                .chars()
                .chain(line[lo..start].chars())
                .map(|c| if c == '\t' { '\t' } else { ' ' })
                .collect();
            let _ = writeln!(out, "  {pre}{}{post}", &line[lo..hi]);
            let _ = writeln!(out, "  {pad}{}", "^".repeat(carets));
        }
    }
}

/// The byte index `n` characters after `i` in `s` (or its end); `i` is a char boundary.
fn advance_chars(s: &str, i: usize, n: usize) -> usize {
    s[i..].char_indices().nth(n).map_or(s.len(), |(k, _)| i + k)
}

/// The byte index `n` characters before `i` in `s` (or 0); `i` is a char boundary.
fn back_chars(s: &str, i: usize, n: usize) -> usize {
    match n.checked_sub(1) {
        None => i,
        Some(m) => s[..i].char_indices().rev().nth(m).map_or(0, |(k, _)| k),
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

    /// Renders the first `limit` diagnostics one at a time into `sink` (each a bounded string:
    /// its excerpts are windows), then, when there were more, one line saying how many errors
    /// and warnings were not shown. Nothing proportional to the number of diagnostics is built.
    pub fn emit(&self, sm: &SourceMap, limit: usize, mut sink: impl FnMut(&str)) {
        for d in self.list.iter().take(limit) {
            sink(&d.render(sm));
        }
        let rest = self.list.get(limit..).unwrap_or_default();
        if rest.is_empty() {
            return;
        }
        let errors = rest.iter().filter(|d| d.is_error()).count();
        let others = rest.len() - errors;
        let plural = |n: usize, w: &str| format!("{n} more {w}{}", if n == 1 { "" } else { "s" });
        let what = match (errors, others) {
            (e, 0) => plural(e, "error"),
            (0, w) => plural(w, "warning"),
            (e, w) => format!("{} and {}", plural(e, "error"), plural(w, "warning")),
        };
        sink(&format!("{what} not shown (koi shows the first {limit})\n"));
    }

    /// [`Diagnostics::emit`] into a string, the first [`MAX_SHOWN`] diagnostics.
    pub fn render(&self, sm: &SourceMap) -> String {
        let mut out = String::new();
        self.emit(sm, MAX_SHOWN, |s| out.push_str(s));
        out
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

    fn one_line(text: &str) -> SourceMap {
        let mut sm = SourceMap::new();
        let f = sm.add_file(SourceFile::new("t.p4".into(), format!("{text}\n"), false));
        sm.expanded = Expanded::from_lines(vec![(text.into(), LineOrigin { file: f, line: 1 })]);
        sm
    }

    #[test]
    fn excerpt_of_a_long_line_is_a_window_around_the_column() {
        let line = format!("{}@@@{}", "a".repeat(100_000), "b".repeat(100_000));
        let sm = one_line(&line);
        let d = Diagnostic::error(Span::new(100_000, 100_003), "m");
        let r = d.render(&sm);
        let lines: Vec<&str> = r.lines().collect();
        assert_eq!(lines[0], "t.p4:1:100001: error: m");
        let window = format!(
            "  ...{}@@@{}...",
            "a".repeat(EXCERPT_HALF),
            "b".repeat(EXCERPT_HALF)
        );
        assert_eq!(lines[1], window);
        // The carets stand under the span.
        assert_eq!(lines[2], format!("  {}^^^", " ".repeat(3 + EXCERPT_HALF)));
        assert_eq!(lines.len(), 3);
    }

    #[test]
    fn excerpt_of_a_short_line_is_the_whole_line() {
        let sm = one_line("const bit<8> x = y + ;");
        let r = Diagnostic::error(Span::new(21, 22), "m").render(&sm);
        assert_eq!(
            r,
            "t.p4:1:22: error: m\n  const bit<8> x = y + ;\n                       ^\n"
        );
    }

    #[test]
    fn a_span_longer_than_the_window_is_underlined_in_part() {
        let line = "x".repeat(1000);
        let sm = one_line(&line);
        let r = Diagnostic::error(Span::new(0, 1000), "m").render(&sm);
        let lines: Vec<&str> = r.lines().collect();
        assert_eq!(lines[1].len(), 2 + 2 * EXCERPT_HALF + 3);
        assert_eq!(lines[2], format!("  {}", "^".repeat(EXCERPT_HALF)));
    }

    #[test]
    fn emit_stops_at_the_limit_and_counts_the_rest() {
        let sm = one_line("x");
        let mut d = Diagnostics::new();
        for _ in 0..30 {
            d.error(Span::new(0, 1), "e");
        }
        d.warning(Span::new(0, 1), "w");
        let mut chunks = Vec::new();
        d.emit(&sm, 20, |s| chunks.push(s.to_string()));
        assert_eq!(chunks.len(), 21);
        assert!(
            chunks[..20]
                .iter()
                .all(|c| c.starts_with("t.p4:1:1: error: e\n"))
        );
        assert_eq!(
            chunks[20],
            "10 more errors and 1 more warning not shown (koi shows the first 20)\n"
        );
        let mut all = 0;
        d.emit(&sm, 31, |_| all += 1);
        assert_eq!(all, 31, "no summary when everything is shown");
    }
}
