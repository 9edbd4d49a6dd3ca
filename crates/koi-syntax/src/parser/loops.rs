//! `for` statements: `for (init; cond; update) body` and `for (T x in collection) body`,
//! where the collection is an expression, a range `a .. b`, or a type.

use super::core::{PResult, Parser, Spec};
use crate::ast::{Annotation, ExprKind, Stmt, StmtKind};
use crate::lexer::Tok;
use crate::source::Span;

impl Parser<'_> {
    /// `optAnnotations FOR ( ... ) statement`; the annotations are already read.
    pub(super) fn for_stmt(&mut self, annotations: Vec<Annotation>, lo: Span) -> PResult<Stmt> {
        self.bump();
        self.expect(&Tok::LParen)?;
        self.names.push();
        let r = self.for_rest(annotations);
        self.names.pop();
        Ok(Stmt {
            kind: r?,
            span: self.since(lo),
        })
    }

    fn for_rest(&mut self, outer: Vec<Annotation>) -> PResult<StmtKind> {
        let inner = self.annotations()?;
        // `for (T x in e)`: the loop variable's type is required (the grammar's `typeRef name
        // IN`; p4c reports `for (i in ...)` as a syntax error at `in`).
        if !inner.is_empty() || self.is_typed_for_in() {
            return self.for_in(outer, inner);
        }
        let init = self.for_list(&Tok::Semi, true)?;
        self.expect(&Tok::Semi)?;
        let cond = self.expr()?;
        self.expect(&Tok::Semi)?;
        let update = self.for_list(&Tok::RParen, false)?;
        self.expect(&Tok::RParen)?;
        let body = Box::new(self.statement()?);
        Ok(StmtKind::For {
            annotations: outer,
            init,
            cond: Some(cond),
            update,
            body,
        })
    }

    /// `typeRef name in`
    fn is_typed_for_in(&mut self) -> bool {
        self.starts_type(0, true)
            && self.speculate(Spec::ForInTyped, |p| {
                p.type_ref().is_ok() && p.is_name_at(0) && *p.nth(1) == Tok::In
            })
    }

    fn for_in(
        &mut self,
        annotations: Vec<Annotation>,
        inner: Vec<Annotation>,
    ) -> PResult<StmtKind> {
        let mut annotations = annotations;
        annotations.extend(inner);
        let ty = Some(self.type_ref()?);
        let name = self.name()?;
        self.names.declare_object(&name.name);
        self.expect(&Tok::In)?;
        let collection = self.for_collection()?;
        self.expect(&Tok::RParen)?;
        let body = Box::new(self.statement()?);
        Ok(StmtKind::ForIn {
            annotations,
            ty,
            name,
            collection,
            body,
        })
    }

    /// `expression`, `expression .. expression`, or a type.
    fn for_collection(&mut self) -> PResult<crate::ast::Expr> {
        let is_type = self.starts_type(0, false)
            && self.speculate(Spec::TypeThenParen, |p| {
                p.type_ref().is_ok() && p.at(&Tok::RParen)
            });
        if is_type {
            let ty = self.type_ref()?;
            let span = ty.span;
            return Ok(self.mk_expr(ExprKind::TypeRef(Box::new(ty)), span));
        }
        let e = self.expr()?;
        if !self.eat(&Tok::Range) {
            return Ok(e);
        }
        let hi = self.expr()?;
        let span = e.span.to(hi.span);
        Ok(self.mk_expr(ExprKind::Range(Box::new(e), Box::new(hi)), span))
    }

    /// The comma-separated init (with declarations) or update statements, up to `end`.
    fn for_list(&mut self, end: &Tok, allow_decl: bool) -> PResult<Vec<Stmt>> {
        let mut list = Vec::new();
        if self.at(end) {
            return Ok(list);
        }
        loop {
            let lo = self.span();
            let kind = if allow_decl && self.starts_type(0, true) && self.is_decl_start() {
                let ty = self.type_ref()?;
                let d = self.var_rest(Vec::new(), lo, ty)?;
                StmtKind::Decl(Box::new(d))
            } else {
                self.assign_or_call(false)?
            };
            list.push(Stmt {
                kind,
                span: self.since(lo),
            });
            if !self.eat(&Tok::Comma) {
                return Ok(list);
            }
        }
    }
}
