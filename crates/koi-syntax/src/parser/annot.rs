//! Annotations: `@name`, `@name(tokens...)` (kept as tokens, and also read as an expression
//! list when they form one), `@name[e1, e2]`, `@name[k = e, ...]`, and the P4-14-style
//! `@pragma name tokens...` that runs to the end of its line.

use super::core::{PResult, Parser};
use crate::ast::{Annotation, AnnotationBody, AnnotationToken, Expr};
use crate::lexer::Tok;

/// Annotations that p4c parses with a required body (so `@pkginfo` alone is an error there).
const NEED_BODY: &[&str] = &["name", "deprecated", "noWarn", "pkginfo"];

impl Parser<'_> {
    /// `optAnnotations`.
    pub(super) fn annotations(&mut self) -> PResult<Vec<Annotation>> {
        let mut list = Vec::new();
        while matches!(self.peek(), Tok::At | Tok::Pragma) {
            list.push(self.annotation()?);
        }
        Ok(list)
    }

    fn annotation(&mut self) -> PResult<Annotation> {
        if self.at(&Tok::Pragma) {
            return self.pragma();
        }
        let lo = self.bump();
        let name = self.name()?;
        let body = match self.peek() {
            Tok::LParen => self.unstructured()?,
            Tok::LBracket => self.structured()?,
            _ => AnnotationBody::Empty,
        };
        if body == AnnotationBody::Empty && NEED_BODY.contains(&name.name.as_str()) {
            let span = name.span;
            self.error(
                span,
                format!("syntax error, annotation @{} needs an argument", name.name),
            );
        }
        Ok(Annotation {
            name,
            body,
            span: self.since(lo),
        })
    }

    /// `@pragma name tokens... <end of line>`
    fn pragma(&mut self) -> PResult<Annotation> {
        let lo = self.bump();
        let name = self.name()?;
        let start = self.pos();
        while !matches!(self.peek(), Tok::EndPragma | Tok::Eof) {
            self.bump();
        }
        let end = self.pos();
        self.eat(&Tok::EndPragma);
        let body = self.token_body(start, end, self.pos());
        Ok(Annotation {
            name,
            body,
            span: self.since(lo),
        })
    }

    /// `( annotationBody )`: balanced parentheses around any tokens.
    fn unstructured(&mut self) -> PResult<AnnotationBody> {
        self.bump();
        let start = self.pos();
        let mut depth = 0usize;
        loop {
            match self.peek() {
                Tok::Eof => return Err(self.unexpected(")")),
                Tok::LParen => depth += 1,
                Tok::RParen if depth == 0 => break,
                Tok::RParen => depth -= 1,
                _ => {}
            }
            self.bump();
        }
        let end = self.pos();
        self.bump();
        Ok(self.token_body(start, end, self.pos()))
    }

    /// The tokens `[start, end)` as an unstructured body; the parser resumes at `resume`.
    fn token_body(&mut self, start: usize, end: usize, resume: usize) -> AnnotationBody {
        let mut tokens = Vec::new();
        for i in start..end {
            let span = self.tok_at(i).span;
            tokens.push(AnnotationToken {
                text: self.text(span).to_string(),
                span,
            });
        }
        let exprs = self.parse_range(start, end, resume, |p| p.expr_list_until(&Tok::Eof));
        AnnotationBody::Unstructured { tokens, exprs }
    }

    /// `[ expressionList ]` or `[ kvList ]`, with an optional trailing comma.
    fn structured(&mut self) -> PResult<AnnotationBody> {
        self.bump();
        let body = if self.is_name_at(0) && *self.nth(1) == Tok::Assign {
            let mut kvs = Vec::new();
            loop {
                let k = self.name()?;
                self.expect(&Tok::Assign)?;
                kvs.push((k, self.expr()?));
                if !self.eat(&Tok::Comma) || self.at(&Tok::RBracket) {
                    break;
                }
            }
            AnnotationBody::StructuredKv(kvs)
        } else {
            AnnotationBody::StructuredList(self.bracket_exprs()?)
        };
        if !self.eat(&Tok::RBracket) {
            return Err(self.unexpected("]"));
        }
        Ok(body)
    }

    fn bracket_exprs(&mut self) -> PResult<Vec<Expr>> {
        let mut list = Vec::new();
        while !self.at(&Tok::RBracket) {
            list.push(self.expr()?);
            if !self.eat(&Tok::Comma) {
                break;
            }
        }
        Ok(list)
    }
}
