//! Types: base types, named and specialised types, header stacks and arrays, `tuple<..>`,
//! `list<..>`, type arguments and type parameters.

use super::core::{PResult, Parser};
use crate::ast::{Expr, Ident, Type, TypeKind, TypeParams};
use crate::lexer::Tok;

impl Parser<'_> {
    /// Whether the token at `n` can start a type. With `lenient`, any identifier counts (a
    /// type the parser does not know, reported later by name resolution); otherwise only
    /// base-type keywords and names known to denote types.
    pub(super) fn starts_type(&self, n: usize, lenient: bool) -> bool {
        match self.nth(n) {
            Tok::Bool
            | Tok::MatchKind
            | Tok::Error
            | Tok::Bit
            | Tok::String_
            | Tok::Int_
            | Tok::Varbit
            | Tok::Tuple
            | Tok::List => true,
            Tok::Ident => lenient || self.is_type_name_at(n),
            Tok::Dot => {
                let t = self.tok(n + 1);
                t.kind == Tok::Ident && (lenient || self.names.is_global_type(self.text(t.span)))
            }
            _ => false,
        }
    }

    /// `typeRef`.
    pub(super) fn type_ref(&mut self) -> PResult<Type> {
        self.nested(|p| {
            let lo = p.span();
            let mut ty = p.type_atom()?;
            let mut chain = 0;
            while p.at(&Tok::LBracket) {
                chain += 1;
                p.check_chain(chain)?;
                p.bump();
                let size = p.expr()?;
                p.expect(&Tok::RBracket)?;
                let span = p.since(lo);
                ty = Type {
                    kind: TypeKind::Stack {
                        elem: Box::new(ty),
                        size: Box::new(size),
                    },
                    span,
                };
            }
            Ok(ty)
        })
    }

    /// `typeOrVoid`.
    pub(super) fn type_or_void(&mut self) -> PResult<Type> {
        if self.at(&Tok::Void) {
            let span = self.bump();
            return Ok(Type {
                kind: TypeKind::Void,
                span,
            });
        }
        self.type_ref()
    }

    fn simple(&mut self, kind: TypeKind) -> PResult<Type> {
        let span = self.bump();
        Ok(Type { kind, span })
    }

    fn type_atom(&mut self) -> PResult<Type> {
        let lo = self.span();
        let kind = match self.peek() {
            Tok::Bool => return self.simple(TypeKind::Bool),
            Tok::MatchKind => return self.simple(TypeKind::MatchKind),
            Tok::Error => return self.simple(TypeKind::Error),
            Tok::String_ => return self.simple(TypeKind::String),
            Tok::Bit => {
                self.bump();
                let w = if self.at(&Tok::Lt) {
                    Some(Box::new(self.width()?))
                } else {
                    None
                };
                TypeKind::Bit(w)
            }
            Tok::Int_ => {
                self.bump();
                if self.at(&Tok::Lt) {
                    TypeKind::Int(Box::new(self.width()?))
                } else {
                    TypeKind::InfInt
                }
            }
            Tok::Varbit => {
                self.bump();
                TypeKind::Varbit(Box::new(self.width()?))
            }
            Tok::Tuple => {
                self.bump();
                self.expect(&Tok::Lt)?;
                let args = self.type_arg_list()?;
                self.expect(&Tok::Gt)?;
                TypeKind::Tuple(args)
            }
            Tok::List => {
                self.bump();
                self.expect(&Tok::Lt)?;
                let arg = self.type_arg()?;
                self.expect(&Tok::Gt)?;
                TypeKind::List(Box::new(arg))
            }
            Tok::Dot | Tok::Ident => return self.named_type(),
            _ => return Err(self.unexpected("a type")),
        };
        Ok(Type {
            kind,
            span: self.since(lo),
        })
    }

    /// `prefixedType` optionally followed by type arguments.
    pub(super) fn named_type(&mut self) -> PResult<Type> {
        let lo = self.span();
        let global = self.eat(&Tok::Dot);
        if !self.at(&Tok::Ident) {
            return Err(self.unexpected("a type name"));
        }
        let s = self.bump();
        let name = Ident::new(self.text(s), s);
        let base = self.path(global, lo, name);
        if !self.at(&Tok::Lt) {
            return Ok(Type {
                span: base.span,
                kind: TypeKind::Named(base),
            });
        }
        self.bump();
        let args = self.type_arg_list()?;
        self.expect(&Tok::Gt)?;
        Ok(Type {
            kind: TypeKind::Specialized { base, args },
            span: self.since(lo),
        })
    }

    /// The width of `bit<W>`, `int<W>`, `varbit<W>`: an integer, a parenthesised expression,
    /// or (as p4c accepts) any expression in which `>` closes the type.
    fn width(&mut self) -> PResult<Expr> {
        self.expect(&Tok::Lt)?;
        let w = self.with_gt_closing(true, |p| p.expr())?;
        self.expect(&Tok::Gt)?;
        Ok(w)
    }

    /// `typeArg`: a type, a name (a type variable), `void` or `_`.
    pub(super) fn type_arg(&mut self) -> PResult<Type> {
        match self.peek() {
            Tok::Void => self.simple(TypeKind::Void),
            Tok::DontCare => self.simple(TypeKind::DontCare),
            t if Self::is_name_keyword(t) => {
                let s = self.bump();
                let name = Ident::new(self.text(s), s);
                let path = self.path(false, s, name);
                Ok(Type {
                    kind: TypeKind::Named(path),
                    span: s,
                })
            }
            _ => self.type_ref(),
        }
    }

    /// `typeArgumentList` up to (not including) the closing `>`; may be empty.
    pub(super) fn type_arg_list(&mut self) -> PResult<Vec<Type>> {
        let mut args = Vec::new();
        if self.at(&Tok::Gt) {
            return Ok(args);
        }
        loop {
            args.push(self.type_arg()?);
            if !self.eat(&Tok::Comma) {
                return Ok(args);
            }
        }
    }

    /// `optTypeParameters`: `<A, B>`; each is declared as a type in the current scope.
    pub(super) fn opt_type_params(&mut self) -> PResult<TypeParams> {
        let mut params = Vec::new();
        if !self.eat(&Tok::Lt) {
            return Ok(params);
        }
        loop {
            let n = self.name()?;
            self.names.declare_type(&n.name);
            params.push(n);
            if !self.eat(&Tok::Comma) {
                break;
            }
        }
        self.expect(&Tok::Gt)?;
        Ok(params)
    }
}
