//! Source files, spans and the mapping from preprocessed text back to original files.
//!
//! Every P4 program goes through the preprocessor first. The preprocessor produces one
//! [`Expanded`] text (what the lexer sees) and, for every line of it, the file and line it came
//! from. A [`Span`] is a byte range in that expanded text; [`SourceMap::locate`] turns it into a
//! `file:line:col` position in the original file so that every diagnostic points at what the
//! user wrote.

use std::path::PathBuf;

/// Index of a file in a [`SourceMap`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct FileId(pub u32);

/// A half-open byte range `[lo, hi)` in the expanded (preprocessed) text.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Span {
    pub lo: u32,
    pub hi: u32,
}

impl Span {
    pub const DUMMY: Span = Span { lo: 0, hi: 0 };

    pub fn new(lo: u32, hi: u32) -> Span {
        Span { lo, hi }
    }

    /// The smallest span covering both.
    pub fn to(self, other: Span) -> Span {
        Span {
            lo: self.lo.min(other.lo),
            hi: self.hi.max(other.hi),
        }
    }

    pub fn is_dummy(self) -> bool {
        self.lo == 0 && self.hi == 0
    }
}

/// One original source file (on disk, or one of koi's built-in headers).
#[derive(Clone, Debug)]
pub struct SourceFile {
    /// Path as it should be printed in diagnostics.
    pub path: PathBuf,
    pub text: String,
    /// Byte offset of the start of each line.
    line_starts: Vec<u32>,
    /// True for koi's built-in architecture headers.
    pub builtin: bool,
}

impl SourceFile {
    pub fn new(path: PathBuf, text: String, builtin: bool) -> SourceFile {
        let mut line_starts = vec![0u32];
        for (i, b) in text.bytes().enumerate() {
            if b == b'\n' {
                line_starts.push(i as u32 + 1);
            }
        }
        SourceFile {
            path,
            text,
            line_starts,
            builtin,
        }
    }

    /// Text of 1-based line `line`, without its newline (empty when out of range).
    pub fn line_text(&self, line: u32) -> &str {
        let idx = line.saturating_sub(1) as usize;
        let Some(&start) = self.line_starts.get(idx) else {
            return "";
        };
        let end = self
            .line_starts
            .get(idx + 1)
            .map(|e| *e as usize)
            .unwrap_or(self.text.len());
        self.text[start as usize..end].trim_end_matches(['\n', '\r'])
    }

    pub fn line_count(&self) -> u32 {
        self.line_starts.len() as u32
    }
}

/// Where one line of expanded text came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LineOrigin {
    pub file: FileId,
    /// 1-based line in `file`.
    pub line: u32,
}

/// The output of the preprocessor: the text the lexer sees, with the origin of every line.
#[derive(Clone, Debug, Default)]
pub struct Expanded {
    pub text: String,
    /// `lines[i]` is the origin of line `i` (0-based) of `text`.
    pub lines: Vec<LineOrigin>,
    /// Byte offset of the start of each line of `text`.
    pub line_starts: Vec<u32>,
}

impl Expanded {
    /// Builds an expanded text from lines and their origins. Each string in `lines` is one
    /// line without its trailing newline.
    pub fn from_lines(lines: Vec<(String, LineOrigin)>) -> Expanded {
        let mut text = String::new();
        let mut origins = Vec::with_capacity(lines.len());
        let mut line_starts = Vec::with_capacity(lines.len());
        for (l, o) in lines {
            line_starts.push(text.len() as u32);
            text.push_str(&l);
            text.push('\n');
            origins.push(o);
        }
        Expanded {
            text,
            lines: origins,
            line_starts,
        }
    }

    /// 0-based line index and 0-based byte column of an offset in `text`.
    pub fn line_col(&self, offset: u32) -> (usize, u32) {
        if self.line_starts.is_empty() {
            return (0, offset);
        }
        let idx = match self.line_starts.binary_search(&offset) {
            Ok(i) => i,
            Err(i) => i.saturating_sub(1),
        };
        (idx, offset - self.line_starts[idx])
    }
}

/// A resolved position in an original file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Loc {
    pub file: FileId,
    /// 1-based.
    pub line: u32,
    /// 1-based, in bytes.
    pub col: u32,
}

/// All files of one compilation plus the expanded text produced from them.
#[derive(Clone, Debug, Default)]
pub struct SourceMap {
    pub files: Vec<SourceFile>,
    pub expanded: Expanded,
}

impl SourceMap {
    pub fn new() -> SourceMap {
        SourceMap::default()
    }

    pub fn add_file(&mut self, file: SourceFile) -> FileId {
        self.files.push(file);
        FileId(self.files.len() as u32 - 1)
    }

    pub fn file(&self, id: FileId) -> &SourceFile {
        &self.files[id.0 as usize]
    }

    /// Finds an already loaded file by path.
    pub fn find(&self, path: &std::path::Path) -> Option<FileId> {
        self.files
            .iter()
            .position(|f| f.path == path)
            .map(|i| FileId(i as u32))
    }

    /// Maps a byte offset of the expanded text to a position in an original file.
    pub fn locate(&self, offset: u32) -> Option<Loc> {
        let (idx, col) = self.expanded.line_col(offset);
        let origin = self.expanded.lines.get(idx)?;
        Some(Loc {
            file: origin.file,
            line: origin.line,
            col: col + 1,
        })
    }

    /// The expanded text covered by a span.
    pub fn snippet(&self, span: Span) -> &str {
        let t = &self.expanded.text;
        let lo = (span.lo as usize).min(t.len());
        let hi = (span.hi as usize).clamp(lo, t.len());
        t.get(lo..hi).unwrap_or("")
    }
}
