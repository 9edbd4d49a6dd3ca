//! The preprocessor's output: the expanded lines with their origins, the diagnostics waiting
//! for the expanded text to exist (they are kept as output line + column), and the text of the
//! files that `#line` made up, so that diagnostics can show the source line.

use crate::diag::Severity;
use crate::source::{Expanded, FileId, LineOrigin, SourceFile, SourceMap, Span};
use crate::{Diagnostic, Diagnostics};
use std::collections::BTreeMap;

/// Highest line number of a `#line` file whose text is kept for diagnostics.
const MAX_VIRTUAL_LINE: u32 = 1 << 20;
/// Total lines of `#line` files' texts.
const MAX_VIRTUAL_TOTAL: u64 = 4 << 20;

/// A diagnostic at a column of an output line.
struct Pending {
    line: usize,
    col: usize,
    len: usize,
    severity: Severity,
    msg: String,
}

#[derive(Default)]
pub struct Output {
    pub lines: Vec<(String, LineOrigin)>,
    pending: Vec<Pending>,
    global: Vec<Diagnostic>,
    /// For each `#line` file: its line number → (real file, physical line).
    virtual_lines: BTreeMap<FileId, BTreeMap<u32, (FileId, u32)>>,
}

impl Output {
    pub fn error(&mut self, line: usize, col: u32, len: usize, msg: impl Into<String>) {
        self.diag(line, col, len, Severity::Error, msg.into());
    }

    pub fn warning(&mut self, line: usize, col: u32, len: usize, msg: impl Into<String>) {
        self.diag(line, col, len, Severity::Warning, msg.into());
    }

    /// An error or warning (of length 1) from macro expansion.
    pub fn report(&mut self, line: usize, col: u32, msg: String, warning: bool) {
        let severity = if warning {
            Severity::Warning
        } else {
            Severity::Error
        };
        self.diag(line, col, 1, severity, msg);
    }

    fn diag(&mut self, line: usize, col: u32, len: usize, severity: Severity, msg: String) {
        self.pending.push(Pending {
            line,
            col: col as usize,
            len: len.clamp(1, 256),
            severity,
            msg,
        });
    }

    /// A diagnostic without a position.
    pub fn global(&mut self, d: Diagnostic) {
        self.global.push(d);
    }

    /// Records that line `line` of `#line` file `file` is physical line `phys` of `real`.
    pub fn note_virtual(&mut self, file: FileId, line: u32, real: FileId, phys: u32) {
        self.virtual_lines
            .entry(file)
            .or_default()
            .entry(line)
            .or_insert((real, phys));
    }

    /// Builds `sm.expanded` and the diagnostics.
    pub fn finish(mut self, sm: &mut SourceMap) -> Diagnostics {
        self.fill_virtual(sm);
        let mut placed = Vec::new();
        for p in std::mem::take(&mut self.pending) {
            match self.place(sm, &p) {
                Some((col, len)) => placed.push((p, col, len)),
                None => self.global.push(Diagnostic {
                    severity: p.severity,
                    span: None,
                    message: p.msg,
                    notes: Vec::new(),
                }),
            }
        }
        sm.expanded = Expanded::from_lines(self.lines);
        let mut diags = Diagnostics::new();
        diags.extend(self.global);
        for (p, col, len) in placed {
            let start = sm.expanded.line_starts.get(p.line).copied().unwrap_or(0);
            let lo = start.saturating_add(u32::try_from(col).unwrap_or(u32::MAX));
            let span = Span::new(lo, lo.saturating_add(u32::try_from(len).unwrap_or(0)));
            diags.push(Diagnostic {
                severity: p.severity,
                span: Some(span),
                message: p.msg,
                notes: Vec::new(),
            });
        }
        diags
    }

    /// Pads output line `p.line` with spaces so that the diagnostic's columns exist in it, and
    /// moves the column back to a character boundary (of the output and the source line).
    fn place(&mut self, sm: &SourceMap, p: &Pending) -> Option<(usize, usize)> {
        let (text, origin) = self.lines.get_mut(p.line)?;
        let src = sm.files.get(origin.file.0 as usize)?.line_text(origin.line);
        let mut col = p.col.min(1 << 16);
        let end = col + p.len;
        if text.len() < end {
            text.extend(std::iter::repeat_n(' ', end - text.len()));
        }
        while col > 0
            && (!text.is_char_boundary(col) || (col < src.len() && !src.is_char_boundary(col)))
        {
            col -= 1;
        }
        let len = p.len.min(text.len().saturating_sub(col)).max(1);
        Some((col, len))
    }

    /// Gives each `#line` file the text of the lines reported in it.
    fn fill_virtual(&self, sm: &mut SourceMap) {
        let mut total: u64 = 0;
        for (vfile, lines) in &self.virtual_lines {
            let last = lines
                .range(..=MAX_VIRTUAL_LINE)
                .next_back()
                .map_or(0, |(l, _)| *l);
            total += u64::from(last);
            if total > MAX_VIRTUAL_TOTAL {
                break;
            }
            let mut text = String::new();
            let mut at = 1u32;
            for (line, (real, phys)) in lines.range(1..=MAX_VIRTUAL_LINE) {
                while at < *line {
                    text.push('\n');
                    at += 1;
                }
                if let Some(f) = sm.files.get(real.0 as usize) {
                    text.push_str(f.line_text(*phys));
                }
            }
            if let Some(f) = sm.files.get_mut(vfile.0 as usize) {
                *f = SourceFile::new(f.path.clone(), text, false);
            }
        }
    }
}
