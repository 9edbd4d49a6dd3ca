//! Reading a source file line by line: physical lines (`\n` or `\r\n`), logical lines (joined
//! by backslash-newline), block-comment state across lines, and telling directive lines (whose
//! first token is `#`, outside a comment) from text lines.

use super::lex::{Kind, Scanner};
use std::rc::Rc;

/// One logical line: one physical line, or several joined by backslash-newline (or, for a
/// directive, by a block comment that runs onto the next lines).
#[derive(Clone, Debug)]
pub struct Logical {
    /// The text, without line splices and without the final newline.
    pub text: String,
    /// 1-based number of its first physical line.
    pub first: u32,
    /// Number of physical lines it covers (at least 1).
    pub count: u32,
    /// Whether the line starts inside a block comment.
    pub start_in_comment: bool,
    /// Whether it is a directive line.
    pub directive: bool,
}

/// A cursor over the lines of one file.
#[derive(Clone, Debug)]
pub struct Reader {
    text: Rc<str>,
    pos: usize,
    next_line: u32,
    in_comment: bool,
}

impl Reader {
    pub fn new(text: Rc<str>) -> Reader {
        Reader {
            text,
            pos: 0,
            next_line: 1,
            in_comment: false,
        }
    }

    /// The next physical line, without its newline and a `\r` before it.
    fn physical(&mut self) -> Option<&str> {
        let rest = self.text.get(self.pos..)?;
        if rest.is_empty() {
            return None;
        }
        let (line, advance) = match rest.find('\n') {
            Some(i) => (rest.get(..i).unwrap_or(""), i + 1),
            None => (rest, rest.len()),
        };
        self.pos += advance;
        self.next_line = self.next_line.saturating_add(1);
        Some(line.strip_suffix('\r').unwrap_or(line))
    }

    /// Reads the next logical line (joining backslash-newline splices), classifies it and
    /// updates the comment state.
    pub fn next_logical(&mut self) -> Option<Logical> {
        let first = self.next_line;
        let (text, count) = self.next_logical_raw()?;
        let start_in_comment = self.in_comment;
        let mut sc = Scanner::new(&text, start_in_comment);
        let directive = match sc.next_raw() {
            Some(r) => {
                !start_in_comment && r.kind == Kind::Punct && r.end - r.start == 1 && {
                    text.as_bytes().get(r.start) == Some(&b'#')
                }
            }
            None => false,
        };
        while sc.next_raw().is_some() {}
        self.in_comment = sc.in_comment;
        let mut l = Logical {
            text,
            first,
            count,
            start_in_comment,
            directive,
        };
        if directive && self.in_comment {
            self.continue_comment(&mut l);
        }
        Some(l)
    }

    /// A directive line that ends inside a block comment goes on until the comment ends: the
    /// following lines are joined to it (with `\n`, which is whitespace to the scanner).
    fn continue_comment(&mut self, l: &mut Logical) {
        while self.in_comment {
            let Some(next) = self.next_logical_raw() else {
                return;
            };
            let mut sc = Scanner::new(&next.0, true);
            while sc.next_raw().is_some() {}
            self.in_comment = sc.in_comment;
            l.text.push('\n');
            l.text.push_str(&next.0);
            l.count += next.1;
        }
    }

    /// The next logical line's text and physical line count, without classifying it.
    fn next_logical_raw(&mut self) -> Option<(String, u32)> {
        let mut text = self.physical()?.to_string();
        let mut count = 1;
        while text.ends_with('\\') {
            text.pop();
            match self.physical() {
                Some(next) => {
                    text.push_str(next);
                    count += 1;
                }
                None => break,
            }
        }
        Some((text, count))
    }

    /// The next logical line if it is a text line; a directive line (or the end of the file)
    /// is left unread.
    pub fn fetch_text(&mut self) -> Option<Logical> {
        let saved = self.clone();
        let l = self.next_logical()?;
        if l.directive {
            *self = saved;
            return None;
        }
        Some(l)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn all(text: &str) -> Vec<Logical> {
        let mut r = Reader::new(text.into());
        std::iter::from_fn(|| r.next_logical()).collect()
    }

    #[test]
    fn crlf_and_splices() {
        let l = all("a\r\nb \\\r\nc\r\n#x\n");
        assert_eq!(l.len(), 3);
        assert_eq!(l[0].text, "a");
        assert_eq!(l[1].text, "b c");
        assert_eq!((l[1].first, l[1].count), (2, 2));
        assert!(l[2].directive);
        assert_eq!(l[2].first, 4);
    }

    #[test]
    fn no_directives_inside_comments() {
        let l = all("/* a\n#define X\n*/ #define Y\n  # define Z");
        assert!(!l[1].directive);
        assert!(l[1].start_in_comment);
        assert!(!l[2].directive);
        assert!(l[3].directive);
    }

    #[test]
    fn directive_comment_continues_to_next_lines() {
        let l = all("#define X 1 /* a\nb */ 2\ny");
        assert_eq!(l.len(), 2);
        assert_eq!(l[0].text, "#define X 1 /* a\nb */ 2");
        assert_eq!(l[0].count, 2);
        assert_eq!(l[1].first, 3);
    }

    #[test]
    fn fetch_text_stops_at_directives() {
        let mut r = Reader::new("a\n#if 1\nb".into());
        assert!(r.fetch_text().is_some());
        assert!(r.fetch_text().is_none());
        assert!(r.next_logical().is_some_and(|l| l.directive));
    }
}
