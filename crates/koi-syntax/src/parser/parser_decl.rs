//! Parser and control declarations (and their type declarations): local elements, parser
//! states with `transition` and `select` (keysets: values, masks, ranges, `default`, `_`,
//! tuples), value sets, and the control's `apply` block.

use super::core::{PResult, Parser, Spec};
use super::stmt::Ctx;
use crate::ast::{
    Annotation, Decl, DeclKind, Expr, ExprKind, Ident, Param, ParserState, Path, SelectCase,
    Transition, TransitionKind,
};
use crate::lexer::Tok;
use crate::source::Span;

/// The common head of parser and control declarations.
struct Head {
    name: Ident,
    type_params: Vec<Ident>,
    params: Vec<Param>,
}

/// An element of a parser's body.
enum Elem {
    Local(Decl),
    State(ParserState),
}

impl Parser<'_> {
    /// `name optTypeParameters ( parameterList )` after `parser`/`control`, inside the
    /// declaration's own scope (already pushed).
    fn head(&mut self, name: Ident) -> PResult<Head> {
        let type_params = self.opt_type_params()?;
        let params = self.params()?;
        Ok(Head {
            name,
            type_params,
            params,
        })
    }

    /// Reads the keyword and the name, declares it as a type and opens its scope.
    fn open_container(&mut self) -> PResult<Ident> {
        self.bump();
        let name = self.name()?;
        self.names.declare_type(&name.name);
        self.names.push();
        Ok(name)
    }

    pub(super) fn parser_decl(&mut self, annos: Vec<Annotation>, lo: Span) -> PResult<Decl> {
        let name = self.open_container()?;
        let r = self.parser_rest(name);
        self.names.pop();
        Ok(self.mk_decl(annos, r?, lo))
    }

    fn parser_rest(&mut self, name: Ident) -> PResult<DeclKind> {
        let h = self.head(name)?;
        if self.eat(&Tok::Semi) {
            return Ok(DeclKind::ParserType {
                name: h.name,
                type_params: h.type_params,
                params: h.params,
            });
        }
        let ctor_params = self.opt_ctor_params()?;
        self.expect(&Tok::LBrace)?;
        let (locals, states) = self.parser_body();
        self.expect(&Tok::RBrace)?;
        Ok(DeclKind::Parser {
            name: h.name,
            type_params: h.type_params,
            params: h.params,
            ctor_params,
            locals,
            states,
        })
    }

    fn opt_ctor_params(&mut self) -> PResult<Vec<Param>> {
        if self.at(&Tok::LParen) {
            self.params()
        } else {
            Ok(Vec::new())
        }
    }

    /// `parserLocalElements parserStates` up to the closing `}`.
    fn parser_body(&mut self) -> (Vec<Decl>, Vec<ParserState>) {
        let (mut locals, mut states) = (Vec::new(), Vec::new());
        while !matches!(self.peek(), Tok::RBrace | Tok::Eof) {
            let in_states = !states.is_empty();
            let item = self.list_item(&[Tok::State], |p| {
                let lo = p.span();
                let annos = p.annotations()?;
                if p.at(&Tok::State) {
                    return p.parser_state(annos, lo).map(Elem::State);
                }
                if in_states {
                    return Err(p.unexpected("STATE"));
                }
                p.parser_local(annos, lo).map(Elem::Local)
            });
            match item {
                Some(Elem::Local(d)) => locals.push(d),
                Some(Elem::State(s)) => states.push(s),
                None => {}
            }
        }
        if states.is_empty() {
            let _ = self.unexpected("STATE");
        }
        (locals, states)
    }

    /// `constantDeclaration | instantiation | variableDeclaration | valueSetDeclaration`
    fn parser_local(&mut self, annos: Vec<Annotation>, lo: Span) -> PResult<Decl> {
        match self.peek() {
            Tok::Const => self.const_decl(annos, lo),
            Tok::ValueSet => self.value_set(annos, lo),
            _ => self.var_or_instance(annos, lo, true),
        }
    }

    /// `value_set < type > ( size ) name ;`
    fn value_set(&mut self, annos: Vec<Annotation>, lo: Span) -> PResult<Decl> {
        self.bump();
        self.expect(&Tok::Lt)?;
        let elem = self.type_ref()?;
        self.expect(&Tok::Gt)?;
        self.expect(&Tok::LParen)?;
        let size = self.expr()?;
        self.expect(&Tok::RParen)?;
        let name = self.name()?;
        self.expect(&Tok::Semi)?;
        self.names.declare_object(&name.name);
        Ok(self.mk_decl(annos, DeclKind::ValueSet { elem, size, name }, lo))
    }

    /// `optAnnotations STATE name { parserStatements transitionStatement }`
    fn parser_state(&mut self, annotations: Vec<Annotation>, lo: Span) -> PResult<ParserState> {
        self.bump();
        let name = self.name()?;
        self.expect(&Tok::LBrace)?;
        self.names.push();
        let body = self.stmt_list(Ctx::ParserState, &[Tok::Transition]);
        let transition = if self.at(&Tok::Transition) {
            self.list_item(&[], |p| p.transition())
        } else {
            None
        };
        self.names.pop();
        if !self.at(&Tok::RBrace) {
            // Anything after the transition: report it once and skip to the state's end.
            let _ = self.unexpected("}");
            self.skip_to_close();
        }
        self.expect(&Tok::RBrace)?;
        Ok(ParserState {
            annotations,
            name,
            body,
            transition,
            span: self.since(lo),
        })
    }

    /// `TRANSITION name ;` or `TRANSITION select (...) { cases }`
    fn transition(&mut self) -> PResult<Transition> {
        let lo = self.bump();
        let kind = if self.at(&Tok::Select) {
            self.select()?
        } else {
            let name = self.name()?;
            self.expect(&Tok::Semi)?;
            TransitionKind::Direct(Path {
                global: false,
                span: name.span,
                name,
            })
        };
        Ok(Transition {
            kind,
            span: self.since(lo),
        })
    }

    fn select(&mut self) -> PResult<TransitionKind> {
        self.bump();
        self.expect(&Tok::LParen)?;
        let exprs = self.expr_list_until(&Tok::RParen)?;
        self.expect(&Tok::RParen)?;
        self.expect(&Tok::LBrace)?;
        let mut cases = Vec::new();
        while !matches!(self.peek(), Tok::RBrace | Tok::Eof) {
            cases.extend(self.list_item(&[], |p| p.select_case()));
        }
        self.expect(&Tok::RBrace)?;
        Ok(TransitionKind::Select { exprs, cases })
    }

    /// `keysetExpression : name ;`
    fn select_case(&mut self) -> PResult<SelectCase> {
        let lo = self.span();
        let keyset = self.keyset()?;
        self.expect(&Tok::Colon)?;
        let name = self.name()?;
        self.expect(&Tok::Semi)?;
        Ok(SelectCase {
            keyset,
            next: Path {
                global: false,
                span: name.span,
                name,
            },
            span: self.since(lo),
        })
    }

    /// `keysetExpression`: a tuple `(k1, k2)` (or a parenthesised mask, range, `default`,
    /// `_`), or a simple keyset.
    pub(super) fn keyset(&mut self) -> PResult<Expr> {
        if !(self.at(&Tok::LParen) && self.is_tuple_keyset()) {
            return self.simple_keyset();
        }
        let lo = self.bump();
        let mut items = vec![self.simple_keyset()?];
        while self.eat(&Tok::Comma) {
            items.push(self.simple_keyset()?);
        }
        self.expect(&Tok::RParen)?;
        let span = self.since(lo);
        Ok(self.mk_expr(ExprKind::List { items, dots: false }, span))
    }

    fn is_tuple_keyset(&mut self) -> bool {
        self.speculate(Spec::TupleKeyset, |p| {
            p.bump();
            let Ok(k) = p.simple_keyset() else {
                return false;
            };
            let reduced = matches!(
                k.kind,
                ExprKind::Mask(..) | ExprKind::Range(..) | ExprKind::Default | ExprKind::DontCare
            );
            p.at(&Tok::Comma) || (p.at(&Tok::RParen) && reduced)
        })
    }

    /// `expression [&&& expression | .. expression] | DEFAULT | _`
    fn simple_keyset(&mut self) -> PResult<Expr> {
        let kind = match self.peek() {
            Tok::Default => ExprKind::Default,
            Tok::DontCare => ExprKind::DontCare,
            _ => {
                let e = self.expr()?;
                let mk: fn(Box<Expr>, Box<Expr>) -> ExprKind = match self.peek() {
                    Tok::Mask => ExprKind::Mask,
                    Tok::Range => ExprKind::Range,
                    _ => return Ok(e),
                };
                self.bump();
                let rhs = self.expr()?;
                let span = e.span.to(rhs.span);
                return Ok(self.mk_expr(mk(Box::new(e), Box::new(rhs)), span));
            }
        };
        let span = self.bump();
        Ok(self.mk_expr(kind, span))
    }

    pub(super) fn control_decl(&mut self, annos: Vec<Annotation>, lo: Span) -> PResult<Decl> {
        let name = self.open_container()?;
        let r = self.control_rest(name);
        self.names.pop();
        Ok(self.mk_decl(annos, r?, lo))
    }

    fn control_rest(&mut self, name: Ident) -> PResult<DeclKind> {
        let h = self.head(name)?;
        if self.eat(&Tok::Semi) {
            return Ok(DeclKind::ControlType {
                name: h.name,
                type_params: h.type_params,
                params: h.params,
            });
        }
        let ctor_params = self.opt_ctor_params()?;
        self.expect(&Tok::LBrace)?;
        let mut locals = Vec::new();
        let stops = [Tok::Action, Tok::Table, Tok::Apply, Tok::Const];
        while !matches!(self.peek(), Tok::Apply | Tok::RBrace | Tok::Eof) {
            locals.extend(self.list_item(&stops, |p| p.control_local()));
        }
        self.expect(&Tok::Apply)?;
        let blo = self.span();
        let annos = self.annotations()?;
        let body = self.block(annos, blo, Ctx::Block)?;
        self.expect(&Tok::RBrace)?;
        Ok(DeclKind::Control {
            name: h.name,
            type_params: h.type_params,
            params: h.params,
            ctor_params,
            locals,
            body,
        })
    }

    /// `constantDeclaration | actionDeclaration | tableDeclaration | instantiation |
    /// variableDeclaration`
    fn control_local(&mut self) -> PResult<Decl> {
        let lo = self.span();
        let annos = self.annotations()?;
        match self.peek() {
            Tok::Const => self.const_decl(annos, lo),
            Tok::Action => self.action_decl(annos, lo),
            Tok::Table => self.table_decl(annos, lo),
            _ => self.var_or_instance(annos, lo, true),
        }
    }
}
