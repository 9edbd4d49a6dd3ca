//! Expressions, by precedence climbing with p4c's precedences (lowest first):
//! `?:` (grouping to the left, as p4c's `%precedence` makes it), `||`, `&&`, `==` `!=`,
//! `<` `>` `<=` `>=`, `|`, `^`, `&`, `<<` `>>`, `++` `+` `-` `|+|` `|-|`, `*` `/` `%`, then
//! the prefix operators and casts, then postfix `.m`, `[i]`, `[h:l]`, `[b+:w]`, calls and
//! explicit type arguments. Also argument lists and list/struct expressions.

use super::core::{PResult, Parser, Spec};
use crate::ast::{Argument, BinOp, Expr, ExprKind, Ident, Path, Type, TypeKind, UnOp};
use crate::lexer::Tok;
use crate::source::Span;

/// Binding power of each binary operator (higher binds tighter).
fn binop(t: &Tok) -> Option<(BinOp, u8)> {
    Some(match t {
        Tok::OrOr => (BinOp::Or, 1),
        Tok::AndAnd => (BinOp::And, 2),
        Tok::EqEq => (BinOp::Eq, 3),
        Tok::Ne => (BinOp::Ne, 3),
        Tok::Lt => (BinOp::Lt, 4),
        Tok::Gt => (BinOp::Gt, 4),
        Tok::Le => (BinOp::Le, 4),
        Tok::Ge => (BinOp::Ge, 4),
        Tok::Pipe => (BinOp::BitOr, 5),
        Tok::Caret => (BinOp::BitXor, 6),
        Tok::Amp => (BinOp::BitAnd, 7),
        Tok::Shl => (BinOp::Shl, 8),
        Tok::PlusPlus => (BinOp::Concat, 9),
        Tok::Plus => (BinOp::Add, 9),
        Tok::Minus => (BinOp::Sub, 9),
        Tok::PlusSat => (BinOp::AddSat, 9),
        Tok::MinusSat => (BinOp::SubSat, 9),
        Tok::Star => (BinOp::Mul, 10),
        Tok::Slash => (BinOp::Div, 10),
        Tok::Percent => (BinOp::Mod, 10),
        _ => return None,
    })
}

fn boxed(e: Expr) -> Box<Expr> {
    Box::new(e)
}

impl Parser<'_> {
    /// `expression`.
    pub(super) fn expr(&mut self) -> PResult<Expr> {
        self.nested(|p| p.ternary())
    }

    fn ternary(&mut self) -> PResult<Expr> {
        let mut lhs = self.binary(0)?;
        let mut chain = 0;
        while self.eat(&Tok::Question) {
            chain += 1;
            self.check_chain(chain)?;
            let mid = self.expr()?;
            self.expect(&Tok::Colon)?;
            let rhs = self.binary(0)?;
            let span = lhs.span.to(rhs.span);
            lhs = self.mk_expr(ExprKind::Ternary(boxed(lhs), boxed(mid), boxed(rhs)), span);
        }
        Ok(lhs)
    }

    /// The binary operator at the current token: operator, binding power, tokens it spans.
    fn binop_here(&self) -> Option<(BinOp, u8, usize)> {
        match self.peek() {
            // `a[b +: w]`: the `+` belongs to the slice.
            Tok::Plus if *self.nth(1) == Tok::Colon => None,
            Tok::Gt if self.gt_closes() => None,
            Tok::Gt if self.shift_right_at(0) => {
                (*self.nth(1) == Tok::Gt).then_some((BinOp::Shr, 8, 2))
            }
            t => binop(t).map(|(op, bp)| (op, bp, 1)),
        }
    }

    fn binary(&mut self, min: u8) -> PResult<Expr> {
        let mut lhs = self.unary()?;
        let mut chain = 0;
        while let Some((op, bp, ntoks)) = self.binop_here() {
            if bp < min {
                break;
            }
            chain += 1;
            self.check_chain(chain)?;
            for _ in 0..ntoks {
                self.bump();
            }
            let rhs = self.binary(bp + 1)?;
            let span = lhs.span.to(rhs.span);
            lhs = self.mk_expr(ExprKind::Binary(op, boxed(lhs), boxed(rhs)), span);
        }
        Ok(lhs)
    }

    // Expression functions are split so that the frames on the recursion through nested
    // expressions stay small (deep nesting must fit unoptimised builds' stacks too).
    fn unary(&mut self) -> PResult<Expr> {
        if self.at(&Tok::LParen) && self.is_cast() {
            return self.cast();
        }
        let op = match self.peek() {
            Tok::Not => UnOp::Not,
            Tok::Tilde => UnOp::BitNot,
            Tok::Minus => UnOp::Neg,
            Tok::Plus => UnOp::Plus,
            _ => return self.postfix(),
        };
        self.prefix(op)
    }

    fn prefix(&mut self, op: UnOp) -> PResult<Expr> {
        let lo = self.bump();
        let e = self.nested(|p| p.unary())?;
        let span = lo.to(e.span);
        Ok(self.mk_expr(ExprKind::Unary(op, boxed(e)), span))
    }

    /// `(` starts a cast when what follows is a type and then `)`.
    fn is_cast(&mut self) -> bool {
        if !self.starts_type(1, false) {
            return false;
        }
        self.speculate(Spec::Cast, |p| {
            p.bump();
            p.type_ref().is_ok() && p.at(&Tok::RParen)
        })
    }

    fn cast(&mut self) -> PResult<Expr> {
        let lo = self.bump();
        let ty = self.type_ref()?;
        self.expect(&Tok::RParen)?;
        let e = self.nested(|p| p.unary())?;
        let span = lo.to(e.span);
        Ok(self.mk_expr(ExprKind::Cast(Box::new(ty), boxed(e)), span))
    }

    fn postfix(&mut self) -> PResult<Expr> {
        let e = self.primary()?;
        self.postfix_ops(e)
    }

    fn postfix_ops(&mut self, mut e: Expr) -> PResult<Expr> {
        let mut chain = 0;
        loop {
            let targs = self.at(&Tok::Lt) && self.is_type_args_call();
            e = match self.peek() {
                Tok::Dot => self.member(e)?,
                Tok::LBracket => self.index(e)?,
                Tok::LParen => self.call(e, Vec::new())?,
                Tok::Lt if targs => self.type_args_call(e)?,
                _ => return Ok(e),
            };
            chain += 1;
            self.check_chain(chain)?;
        }
    }

    fn type_args_call(&mut self, e: Expr) -> PResult<Expr> {
        self.bump();
        let targs = self.type_arg_list()?;
        self.expect(&Tok::Gt)?;
        self.call(e, targs)
    }

    /// `e < T, ... > (` — explicit type arguments of a call. Like p4c's `realTypeArgumentList`
    /// the first argument must be a type (a known type name or a type keyword), `void` or `_`.
    fn is_type_args_call(&mut self) -> bool {
        let first_ok =
            matches!(self.nth(1), Tok::Void | Tok::DontCare) || self.starts_type(1, false);
        if !first_ok {
            return false;
        }
        self.speculate(Spec::TypeArgsCall, |p| {
            p.bump();
            p.type_arg_list().is_ok() && p.eat(&Tok::Gt) && p.at(&Tok::LParen)
        })
    }

    /// `e.name`
    pub(super) fn member(&mut self, e: Expr) -> PResult<Expr> {
        self.bump();
        let m = self.name()?;
        let span = e.span.to(m.span);
        Ok(self.mk_expr(ExprKind::Member(boxed(e), m), span))
    }

    /// `e[i]`, `e[h:l]` or `e[b+:w]`.
    pub(super) fn index(&mut self, e: Expr) -> PResult<Expr> {
        self.with_gt_closing(false, |p| p.index_inner(e))
    }

    fn index_inner(&mut self, e: Expr) -> PResult<Expr> {
        self.bump();
        let base = boxed(e);
        let a = boxed(self.expr()?);
        self.index_tail(base, a)
    }

    /// After `e[a`: `]`, `: b]` or `+: w]`.
    fn index_tail(&mut self, base: Box<Expr>, a: Box<Expr>) -> PResult<Expr> {
        let lo = base.span;
        let kind = if self.eat(&Tok::Colon) {
            ExprKind::Slice(base, a, boxed(self.expr()?))
        } else if self.at(&Tok::Plus) && *self.nth(1) == Tok::Colon {
            self.bump();
            self.bump();
            ExprKind::SliceWidth(base, a, boxed(self.expr()?))
        } else {
            ExprKind::Index(base, a)
        };
        let close = self.expect(&Tok::RBracket)?;
        Ok(self.mk_expr(kind, lo.to(close)))
    }

    /// `callee(args)` with the given explicit type arguments.
    pub(super) fn call(&mut self, callee: Expr, type_args: Vec<Type>) -> PResult<Expr> {
        let args = self.args()?;
        let span = self.since(callee.span);
        Ok(self.mk_expr(
            ExprKind::Call {
                callee: boxed(callee),
                type_args,
                args,
            },
            span,
        ))
    }

    /// `( argumentList )`
    pub(super) fn args(&mut self) -> PResult<Vec<Argument>> {
        self.with_gt_closing(false, |p| p.args_inner())
    }

    fn args_inner(&mut self) -> PResult<Vec<Argument>> {
        self.expect(&Tok::LParen)?;
        let mut args = Vec::new();
        if self.eat(&Tok::RParen) {
            return Ok(args);
        }
        loop {
            args.push(self.argument()?);
            if !self.eat(&Tok::Comma) {
                break;
            }
        }
        self.expect(&Tok::RParen)?;
        Ok(args)
    }

    fn argument(&mut self) -> PResult<Argument> {
        let lo = self.span();
        let name = if self.is_name_at(0) && *self.nth(1) == Tok::Assign {
            let n = self.name()?;
            self.bump();
            Some(n)
        } else {
            None
        };
        let value = if self.at(&Tok::DontCare) {
            let s = self.bump();
            self.mk_expr(ExprKind::DontCare, s)
        } else {
            self.expr()?
        };
        let span = lo.to(value.span);
        Ok(Argument { name, value, span })
    }

    fn primary(&mut self) -> PResult<Expr> {
        match self.peek() {
            Tok::LBrace => self.with_gt_closing(false, |p| p.brace_expr()),
            Tok::LParen => self.paren(),
            Tok::Error if *self.nth(1) == Tok::Dot => self.error_member(),
            Tok::Dot | Tok::Ident if self.starts_type(0, false) => self.type_expr(),
            Tok::Dot => self.global_path_expr(),
            t if *t == Tok::Ident || Self::is_name_keyword(t) => self.path_expr(),
            _ => self.literal(),
        }
    }

    /// Literals, `this`, `...` and `{#}`.
    fn literal(&mut self) -> PResult<Expr> {
        let s = self.span();
        let kind = match self.peek() {
            Tok::Int(lit) => ExprKind::Int((**lit).clone()),
            Tok::Str(text) => ExprKind::Str(text.clone()),
            Tok::True => ExprKind::Bool(true),
            Tok::False => ExprKind::Bool(false),
            Tok::Dots => ExprKind::Dots,
            Tok::InvalidHeader => ExprKind::InvalidHeader,
            Tok::This => ExprKind::Path(self.keyword_path(s)),
            _ => return Err(self.unexpected("")),
        };
        self.bump();
        Ok(self.mk_expr(kind, s))
    }

    /// `error.name`
    fn error_member(&mut self) -> PResult<Expr> {
        let s = self.bump();
        let e = self.mk_expr(ExprKind::Path(self.keyword_path(s)), s);
        self.member(e)
    }

    /// `.name`
    fn global_path_expr(&mut self) -> PResult<Expr> {
        let s = self.bump();
        let name = self.global_non_type_name()?;
        let path = self.path(true, s, name);
        let span = path.span;
        Ok(self.mk_expr(ExprKind::Path(path), span))
    }

    fn path_expr(&mut self) -> PResult<Expr> {
        let name = self.non_type_name()?;
        let span = name.span;
        let path = Path {
            global: false,
            span,
            name,
        };
        Ok(self.mk_expr(ExprKind::Path(path), span))
    }

    /// The path of a keyword used as an expression (`this`, `error`).
    fn keyword_path(&self, s: Span) -> Path {
        Path {
            global: false,
            name: Ident::new(self.text(s), s),
            span: s,
        }
    }

    /// `( expression )`: the expression, its span widened to the parentheses.
    fn paren(&mut self) -> PResult<Expr> {
        let lo = self.bump();
        let mut e = self.with_gt_closing(false, |p| p.expr())?;
        let hi = self.expect(&Tok::RParen)?;
        e.span = lo.to(hi);
        Ok(e)
    }

    /// A type name in an expression: `T.member`, `T(args)` (a constructor call), or
    /// `T<args>(..)`; a bare type name is not an expression.
    fn type_expr(&mut self) -> PResult<Expr> {
        let ty = self.named_type()?;
        let span = ty.span;
        let callee = match ty.kind {
            TypeKind::Named(path) => self.mk_expr(ExprKind::Path(path), span),
            kind => self.mk_expr(ExprKind::TypeRef(Box::new(Type { kind, span })), span),
        };
        match self.peek() {
            Tok::Dot => self.member(callee),
            Tok::LParen => self.call(callee, Vec::new()),
            _ => Err(self.unexpected("( or .")),
        }
    }

    /// `{ e1, e2 }`, `{ f = e, ... }`, with an optional trailing `...` and comma.
    fn brace_expr(&mut self) -> PResult<Expr> {
        let lo = self.bump();
        let kv = self.is_name_at(0) && *self.nth(1) == Tok::Assign;
        let kind = if kv {
            self.struct_fields()?
        } else {
            self.list_items()?
        };
        self.expect(&Tok::RBrace)?;
        let span = self.since(lo);
        Ok(self.mk_expr(kind, span))
    }

    /// A `...` closing a list: followed by `}` or by `,` `}`.
    fn closing_dots(&self) -> bool {
        self.at(&Tok::Dots)
            && (*self.nth(1) == Tok::RBrace
                || (*self.nth(1) == Tok::Comma && *self.nth(2) == Tok::RBrace))
    }

    fn list_items(&mut self) -> PResult<ExprKind> {
        let mut items = Vec::new();
        let mut dots = false;
        while !self.at(&Tok::RBrace) {
            if self.closing_dots() {
                self.bump();
                self.eat(&Tok::Comma);
                dots = true;
                break;
            }
            items.push(self.expr()?);
            if !self.eat(&Tok::Comma) {
                break;
            }
        }
        Ok(ExprKind::List { items, dots })
    }

    fn struct_fields(&mut self) -> PResult<ExprKind> {
        let mut fields = Vec::new();
        let mut dots = false;
        while !self.at(&Tok::RBrace) {
            if !fields.is_empty() && self.closing_dots() {
                self.bump();
                self.eat(&Tok::Comma);
                dots = true;
                break;
            }
            let name = self.name()?;
            self.expect(&Tok::Assign)?;
            fields.push((name, self.expr()?));
            if !self.eat(&Tok::Comma) {
                break;
            }
        }
        Ok(ExprKind::StructInit { fields, dots })
    }

    /// A comma-separated expression list up to the end of the visible tokens (used for
    /// annotation bodies and `select`).
    pub(super) fn expr_list_until(&mut self, end: &Tok) -> PResult<Vec<Expr>> {
        let mut list = Vec::new();
        if self.at(end) {
            return Ok(list);
        }
        loop {
            list.push(self.expr()?);
            if !self.eat(&Tok::Comma) {
                return Ok(list);
            }
        }
    }
}
