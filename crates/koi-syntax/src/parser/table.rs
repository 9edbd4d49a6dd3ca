//! Table declarations and their properties: `key`, `actions` (with optional arguments),
//! `[const] entries` (with `priority = N :` and per-entry `const`), and any other
//! `[const] name = expression;` (`default_action`, `size`, `implementation`, ...).

use super::core::{PResult, Parser};
use crate::ast::{
    ActionRef, Annotation, Decl, DeclKind, Entry, Expr, ExprKind, KeyElement, Path, TableProperty,
    TablePropertyKind,
};
use crate::lexer::Tok;
use crate::source::Span;

impl Parser<'_> {
    /// `optAnnotations TABLE name { tablePropertyList }`
    pub(super) fn table_decl(&mut self, annos: Vec<Annotation>, lo: Span) -> PResult<Decl> {
        self.bump();
        let name = self.name()?;
        self.expect(&Tok::LBrace)?;
        let mut properties = Vec::new();
        if self.at(&Tok::RBrace) {
            return Err(self.unexpected("a table property"));
        }
        while !matches!(self.peek(), Tok::RBrace | Tok::Eof) {
            properties.extend(self.list_item(&[], |p| p.table_property()));
        }
        self.expect(&Tok::RBrace)?;
        Ok(self.mk_decl(annos, DeclKind::Table { name, properties }, lo))
    }

    fn table_property(&mut self) -> PResult<TableProperty> {
        let lo = self.span();
        let annotations = self.annotations()?;
        let is_const = self.eat(&Tok::Const);
        let plain = annotations.is_empty() && !is_const && *self.nth(1) == Tok::Assign;
        let kind = match self.peek() {
            Tok::Key if plain => self.key_property()?,
            Tok::Actions if plain => self.actions_property()?,
            Tok::Entries => self.entries_property(is_const)?,
            Tok::Ident | Tok::Apply | Tok::State | Tok::Type | Tok::Priority => {
                let name = self.name()?;
                self.expect(&Tok::Assign)?;
                let value = self.expr()?;
                self.expect(&Tok::Semi)?;
                TablePropertyKind::Other {
                    is_const,
                    name,
                    value,
                }
            }
            _ => return Err(self.unexpected("")),
        };
        Ok(TableProperty {
            annotations,
            kind,
            span: self.since(lo),
        })
    }

    /// Reads `NAME = {` of a list-valued property.
    fn open_list_property(&mut self) -> PResult<()> {
        self.bump();
        self.expect(&Tok::Assign)?;
        self.expect(&Tok::LBrace)?;
        Ok(())
    }

    /// Elements up to the closing `}` (consumed), each read by `f` with recovery.
    fn brace_list<T>(&mut self, f: impl Fn(&mut Self) -> PResult<T>) -> PResult<Vec<T>> {
        let mut items = Vec::new();
        while !matches!(self.peek(), Tok::RBrace | Tok::Eof) {
            items.extend(self.list_item(&[], &f));
        }
        self.expect(&Tok::RBrace)?;
        Ok(items)
    }

    /// `KEY = { expression : name optAnnotations ; ... }`
    fn key_property(&mut self) -> PResult<TablePropertyKind> {
        self.open_list_property()?;
        let keys = self.brace_list(|p| {
            let lo = p.span();
            let expr = p.expr()?;
            p.expect(&Tok::Colon)?;
            let match_kind = p.name()?;
            let annotations = p.annotations()?;
            p.expect(&Tok::Semi)?;
            Ok(KeyElement {
                annotations,
                expr,
                match_kind,
                span: p.since(lo),
            })
        })?;
        Ok(TablePropertyKind::Key(keys))
    }

    /// `ACTIONS = { optAnnotations actionRef ; ... }`
    fn actions_property(&mut self) -> PResult<TablePropertyKind> {
        self.open_list_property()?;
        let refs = self.brace_list(|p| {
            let lo = p.span();
            let annotations = p.annotations()?;
            let (name, args) = p.action_ref()?;
            p.expect(&Tok::Semi)?;
            Ok(ActionRef {
                annotations,
                name,
                args,
                span: p.since(lo),
            })
        })?;
        Ok(TablePropertyKind::Actions(refs))
    }

    /// `prefixedNonTypeName [( argumentList )]`
    fn action_ref(&mut self) -> PResult<(Path, Option<Vec<crate::ast::Argument>>)> {
        let lo = self.span();
        let global = self.eat(&Tok::Dot);
        let name = if self.at(&Tok::Ident) {
            let s = self.bump();
            crate::ast::Ident::new(self.text(s), s)
        } else {
            self.non_type_name()?
        };
        let path = self.path(global, lo, name);
        let args = if self.at(&Tok::LParen) {
            Some(self.args()?)
        } else {
            None
        };
        Ok((path, args))
    }

    /// `optCONST ENTRIES = { entry ... }` (annotations and `const` already read).
    fn entries_property(&mut self, is_const: bool) -> PResult<TablePropertyKind> {
        self.open_list_property()?;
        let entries = self.brace_list(|p| p.entry())?;
        Ok(TablePropertyKind::Entries { is_const, entries })
    }

    /// `optCONST [PRIORITY = N :] keysetExpression : actionRef optAnnotations ;`
    fn entry(&mut self) -> PResult<Entry> {
        let lo = self.span();
        let is_const = self.eat(&Tok::Const);
        let priority = if self.at(&Tok::Priority) && *self.nth(1) == Tok::Assign {
            self.bump();
            self.bump();
            let p = self.priority_value()?;
            self.expect(&Tok::Colon)?;
            Some(p)
        } else {
            None
        };
        let keyset = self.keyset()?;
        self.expect(&Tok::Colon)?;
        let alo = self.span();
        let (path, args) = self.action_ref()?;
        let span = path.span;
        let mut action = self.mk_expr(ExprKind::Path(path), span);
        if let Some(args) = args {
            let kind = ExprKind::Call {
                callee: Box::new(action),
                type_args: Vec::new(),
                args,
            };
            let span = self.since(alo);
            action = self.mk_expr(kind, span);
        }
        let annotations = self.annotations()?;
        self.expect(&Tok::Semi)?;
        Ok(Entry {
            annotations,
            is_const,
            priority,
            keyset,
            action,
            span: self.since(lo),
        })
    }

    /// `INTEGER` or `( expression )` after `priority =`.
    fn priority_value(&mut self) -> PResult<Expr> {
        match self.peek() {
            Tok::Int(lit) => {
                let kind = ExprKind::Int((**lit).clone());
                let span = self.bump();
                Ok(self.mk_expr(kind, span))
            }
            Tok::LParen => {
                self.bump();
                let e = self.expr()?;
                self.expect(&Tok::RParen)?;
                Ok(e)
            }
            _ => Err(self.unexpected("an integer or (")),
        }
    }
}
