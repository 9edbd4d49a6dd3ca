//! Statements and blocks: assignments (plain and compound), method calls and direct
//! applications, `if`, `switch`, `for` (both forms), `return`, `exit`, `break`, `continue`,
//! blocks and local declarations. Parser states accept only the statements p4c's
//! `parserStatement` does.

use super::core::{PResult, Parser, Spec};
use crate::ast::{
    Annotation, BinOp, Block, Expr, ExprKind, Stmt, StmtKind, SwitchCase, SwitchLabel,
};
use crate::lexer::Tok;
use crate::source::Span;

/// Where a statement stands: in an ordinary block or in a parser state.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Ctx {
    Block,
    ParserState,
}

fn stmt(kind: StmtKind, span: Span) -> Stmt {
    Stmt { kind, span }
}

/// The operator of a compound assignment token.
fn compound_op(t: &Tok) -> Option<BinOp> {
    Some(match t {
        Tok::PlusAssign => BinOp::Add,
        Tok::MinusAssign => BinOp::Sub,
        Tok::StarAssign => BinOp::Mul,
        Tok::SlashAssign => BinOp::Div,
        Tok::PercentAssign => BinOp::Mod,
        Tok::ShlAssign => BinOp::Shl,
        Tok::AmpAssign => BinOp::BitAnd,
        Tok::PipeAssign => BinOp::BitOr,
        Tok::CaretAssign => BinOp::BitXor,
        Tok::PlusSatAssign => BinOp::AddSat,
        Tok::MinusSatAssign => BinOp::SubSat,
        _ => return None,
    })
}

impl Parser<'_> {
    /// `optAnnotations { statOrDeclList }`; `lo` is where the annotations started.
    pub(super) fn block(
        &mut self,
        annotations: Vec<Annotation>,
        lo: Span,
        ctx: Ctx,
    ) -> PResult<Block> {
        // Not `nested`: every statement of the list is, which bounds the recursion.
        self.expect(&Tok::LBrace)?;
        self.names.push();
        let stmts = self.stmt_list(ctx, &[]);
        self.names.pop();
        self.expect(&Tok::RBrace)?;
        Ok(Block {
            annotations,
            stmts,
            span: self.since(lo),
        })
    }

    /// Statements up to a `}` (not consumed) or one of `until`, recovering from errors.
    pub(super) fn stmt_list(&mut self, ctx: Ctx, until: &[Tok]) -> Vec<Stmt> {
        let mut stmts = Vec::new();
        while !matches!(self.peek(), Tok::RBrace | Tok::Eof) && !until.contains(self.peek()) {
            let lo = self.span();
            let s = self.list_item(until, |p| p.nested(|p| p.stmt_inner(ctx, true)));
            stmts.push(s.unwrap_or_else(|| stmt(StmtKind::Invalid, self.since(lo))));
        }
        stmts
    }

    /// `statement`: no declarations.
    pub(super) fn statement(&mut self) -> PResult<Stmt> {
        self.nested(|p| p.stmt_inner(Ctx::Block, false))
    }

    // The statement functions are split so that the frames on the recursion through nested
    // statements stay small (deep nesting must fit unoptimised builds' stacks too).
    fn stmt_inner(&mut self, ctx: Ctx, allow_decl: bool) -> PResult<Stmt> {
        let lo = self.span();
        let annos = self.annotations()?;
        match self.peek() {
            Tok::LBrace => return self.block_stmt(annos, lo, ctx),
            Tok::For if ctx == Ctx::Block => return self.for_stmt(annos, lo),
            Tok::Const if allow_decl => return self.const_stmt(annos, lo),
            _ => {}
        }
        if allow_decl && self.starts_type(0, true) && self.is_decl_start() {
            return self.decl_stmt(annos, lo, ctx);
        }
        if !annos.is_empty() {
            return Err(self.unexpected(""));
        }
        match (self.peek(), ctx) {
            (Tok::If, _) => self.if_stmt(),
            (Tok::Switch, Ctx::Block) => self.switch_stmt(),
            _ => self.simple_stmt(lo, ctx),
        }
    }

    fn block_stmt(&mut self, annos: Vec<Annotation>, lo: Span, ctx: Ctx) -> PResult<Stmt> {
        let b = self.block(annos, lo, ctx)?;
        let span = b.span;
        Ok(stmt(StmtKind::Block(b), span))
    }

    fn const_stmt(&mut self, annos: Vec<Annotation>, lo: Span) -> PResult<Stmt> {
        let d = self.const_decl(annos, lo)?;
        Ok(stmt(StmtKind::Decl(Box::new(d)), self.since(lo)))
    }

    fn decl_stmt(&mut self, annos: Vec<Annotation>, lo: Span, ctx: Ctx) -> PResult<Stmt> {
        let d = self.var_or_instance(annos, lo, ctx == Ctx::Block)?;
        Ok(stmt(StmtKind::Decl(Box::new(d)), self.since(lo)))
    }

    /// Statements without sub-statements.
    fn simple_stmt(&mut self, lo: Span, ctx: Ctx) -> PResult<Stmt> {
        let kind = match (self.peek(), ctx) {
            (Tok::Semi, _) => {
                self.bump();
                StmtKind::Empty
            }
            (Tok::Return, Ctx::Block) => self.return_stmt()?,
            (Tok::Exit, Ctx::Block) => self.keyword_stmt(StmtKind::Exit)?,
            (Tok::Break, Ctx::Block) => self.keyword_stmt(StmtKind::Break)?,
            (Tok::Continue, Ctx::Block) => self.keyword_stmt(StmtKind::Continue)?,
            _ => self.assign_or_call(true)?,
        };
        Ok(stmt(kind, self.since(lo)))
    }

    /// Whether a declaration starts here: a type followed by a name (a variable) or by
    /// `( ... )` and a name (an instantiation).
    pub(super) fn is_decl_start(&mut self) -> bool {
        self.speculate(Spec::Decl, |p| {
            if p.type_ref().is_err() {
                return false;
            }
            if p.is_name_at(0) || p.at(&Tok::DontCare) {
                return true;
            }
            p.at(&Tok::LParen) && p.skip_parens() && p.is_name_at(0)
        })
    }

    /// Skips a balanced `( ... )`; false at the end of input.
    fn skip_parens(&mut self) -> bool {
        let mut depth = 0usize;
        loop {
            match self.peek() {
                Tok::LParen => depth += 1,
                Tok::RParen => {
                    depth = depth.saturating_sub(1);
                    if depth == 0 {
                        self.bump();
                        return true;
                    }
                }
                Tok::Eof => return false,
                _ => {}
            }
            self.bump();
        }
    }

    fn keyword_stmt(&mut self, kind: StmtKind) -> PResult<StmtKind> {
        self.bump();
        self.expect(&Tok::Semi)?;
        Ok(kind)
    }

    fn return_stmt(&mut self) -> PResult<StmtKind> {
        self.bump();
        if self.eat(&Tok::Semi) {
            return Ok(StmtKind::Return(None));
        }
        let e = self.expr()?;
        self.expect(&Tok::Semi)?;
        Ok(StmtKind::Return(Some(e)))
    }

    /// An assignment, a compound assignment, a method call or a direct application, with its
    /// `;` when `semi`.
    pub(super) fn assign_or_call(&mut self, semi: bool) -> PResult<StmtKind> {
        let lhs = self.lvalue()?;
        let assign_op = if self.at(&Tok::Assign) {
            Some((None, 1))
        } else if self.shift_right_at(0) && *self.nth(1) == Tok::Ge {
            Some((Some(BinOp::Shr), 2))
        } else {
            compound_op(self.peek()).map(|op| (Some(op), 1))
        };
        let kind = if let Some((op, ntoks)) = assign_op {
            for _ in 0..ntoks {
                self.bump();
            }
            let rhs = self.expr()?;
            StmtKind::Assign { lhs, op, rhs }
        } else if self.at(&Tok::LParen) {
            StmtKind::Call(self.call(lhs, Vec::new())?)
        } else if self.at(&Tok::Lt) {
            self.bump();
            let targs = self.type_arg_list()?;
            self.expect(&Tok::Gt)?;
            StmtKind::Call(self.call(lhs, targs)?)
        } else {
            return Err(self.unexpected(""));
        };
        if semi {
            self.expect(&Tok::Semi)?;
        }
        Ok(kind)
    }

    /// `lvalue` (also the type name of a direct application `T.apply(...)`).
    fn lvalue(&mut self) -> PResult<Expr> {
        let s = self.span();
        let mut e = match self.peek() {
            Tok::This => {
                self.bump();
                let path = crate::ast::Path {
                    global: false,
                    name: crate::ast::Ident::new("this", s),
                    span: s,
                };
                self.mk_expr(ExprKind::Path(path), s)
            }
            Tok::LParen => self.nested(|p| {
                p.bump();
                let e = p.lvalue()?;
                p.expect(&Tok::RParen)?;
                Ok(e)
            })?,
            Tok::Dot | Tok::Ident if self.starts_type(0, false) => {
                let ty = self.named_type()?;
                let span = ty.span;
                match ty.kind {
                    crate::ast::TypeKind::Named(path) => self.mk_expr(ExprKind::Path(path), span),
                    kind => {
                        let ty = crate::ast::Type { kind, span };
                        self.mk_expr(ExprKind::TypeRef(Box::new(ty)), span)
                    }
                }
            }
            _ => {
                let global = self.eat(&Tok::Dot);
                let name = if global {
                    self.global_non_type_name()?
                } else {
                    self.non_type_name()?
                };
                let path = self.path(global, s, name);
                let span = path.span;
                self.mk_expr(ExprKind::Path(path), span)
            }
        };
        let mut chain = 0;
        loop {
            e = match self.peek() {
                Tok::Dot => self.member(e)?,
                Tok::LBracket => self.index(e)?,
                _ => return Ok(e),
            };
            chain += 1;
            self.check_chain(chain)?;
        }
    }

    fn if_stmt(&mut self) -> PResult<Stmt> {
        let lo = self.bump();
        self.expect(&Tok::LParen)?;
        let cond = self.expr()?;
        self.expect(&Tok::RParen)?;
        let then = Box::new(self.statement()?);
        let otherwise = if self.eat(&Tok::Else) {
            Some(Box::new(self.statement()?))
        } else {
            None
        };
        Ok(stmt(
            StmtKind::If {
                cond,
                then,
                otherwise,
            },
            self.since(lo),
        ))
    }

    fn switch_stmt(&mut self) -> PResult<Stmt> {
        let lo = self.bump();
        self.expect(&Tok::LParen)?;
        let expr = self.expr()?;
        self.expect(&Tok::RParen)?;
        self.expect(&Tok::LBrace)?;
        let mut cases = Vec::new();
        while !matches!(self.peek(), Tok::RBrace | Tok::Eof) {
            if let Some(c) = self.list_item(&[], |p| p.switch_case()) {
                cases.push(c);
            }
        }
        self.expect(&Tok::RBrace)?;
        Ok(stmt(StmtKind::Switch { expr, cases }, self.since(lo)))
    }

    fn switch_case(&mut self) -> PResult<SwitchCase> {
        let lo = self.span();
        let label = match self.peek() {
            Tok::Default => SwitchLabel::Default(self.bump()),
            Tok::LBrace => return Err(self.unexpected("")),
            _ => SwitchLabel::Expr(self.expr()?),
        };
        self.expect(&Tok::Colon)?;
        let body = if matches!(self.peek(), Tok::LBrace | Tok::At | Tok::Pragma) {
            let blo = self.span();
            let annos = self.annotations()?;
            Some(self.block(annos, blo, Ctx::Block)?)
        } else {
            None
        };
        Ok(SwitchCase {
            label,
            body,
            span: self.since(lo),
        })
    }
}
