//! Statements: assignments (with l-value and compound-operator rules), calls, `if`, blocks,
//! `return`/`exit`/`break`/`continue` (where each is allowed), local declarations, and `for`
//! loops. `switch` has its own module.

use crate::checker::{Checker, MAX_DEPTH, Place};
use crate::decls::{DeclInfo, DeclKind};
use crate::scope::ScopeKind;
use crate::types::{Ty, TypeId};
use koi_syntax::ast::{
    Block, Decl, DeclKind as AstDeclKind, Expr, ExprKind, Ident, Stmt, StmtKind, Type,
};

impl Checker<'_> {
    /// Checks a block in a new scope.
    pub fn check_block(&mut self, b: &Block) {
        self.check_annotations(&b.annotations);
        self.scoped(ScopeKind::Block, |c| c.check_stmts(&b.stmts));
    }

    /// Checks statements in the current scope.
    pub fn check_stmts(&mut self, stmts: &[Stmt]) {
        for s in stmts {
            self.check_stmt(s);
        }
    }

    pub fn check_stmt(&mut self, s: &Stmt) {
        if self.depth > MAX_DEPTH {
            self.error(s.span, "statements are nested too deeply");
            return;
        }
        self.depth += 1;
        self.check_stmt_kind(s);
        self.depth -= 1;
    }

    fn check_stmt_kind(&mut self, s: &Stmt) {
        match &s.kind {
            StmtKind::Assign { lhs, op, rhs } => self.check_assign(lhs, *op, rhs),
            StmtKind::Call(e) => {
                if !matches!(e.kind, ExprKind::Call { .. }) {
                    self.error(e.span, "this expression is not a statement");
                }
                self.check_expr(e);
            }
            StmtKind::Empty | StmtKind::Invalid => {}
            StmtKind::Exit => self.check_exit(s),
            StmtKind::Return(v) => self.check_return(s, v.as_ref()),
            StmtKind::Break | StmtKind::Continue => {
                if self.cx.loop_depth == 0 {
                    let w = if matches!(s.kind, StmtKind::Break) {
                        "break"
                    } else {
                        "continue"
                    };
                    self.error(s.span, format!("{w} statement outside of a loop"));
                }
            }
            StmtKind::If {
                cond,
                then,
                otherwise,
            } => {
                self.check_condition(cond, "IfStatement");
                self.scoped(ScopeKind::Block, |c| c.check_stmt(then));
                if let Some(o) = otherwise {
                    self.scoped(ScopeKind::Block, |c| c.check_stmt(o));
                }
            }
            StmtKind::Block(b) => self.check_block(b),
            StmtKind::Switch { expr, cases } => self.check_switch(s, expr, cases),
            StmtKind::Decl(d) => self.check_local_decl(d),
            StmtKind::For {
                annotations,
                init,
                cond,
                update,
                body,
            } => {
                self.check_annotations(annotations);
                self.scoped(ScopeKind::Block, |c| {
                    c.check_stmts(init);
                    if let Some(cond) = cond {
                        c.check_condition(cond, "ForStatement");
                    }
                    c.check_stmts(update);
                    c.check_loop_body(body);
                });
            }
            StmtKind::ForIn {
                annotations,
                ty,
                name,
                collection,
                body,
            } => {
                self.check_annotations(annotations);
                self.check_for_in(ty.as_ref(), name, collection, body)
            }
        }
    }

    fn check_loop_body(&mut self, body: &Stmt) {
        self.cx.loop_depth += 1;
        self.scoped(ScopeKind::Block, |c| c.check_stmt(body));
        self.cx.loop_depth -= 1;
    }

    fn check_assign(&mut self, lhs: &Expr, op: Option<koi_syntax::ast::BinOp>, rhs: &Expr) {
        let lt = self.check_expr(lhs);
        let target_ok = self.check_assign_target(lhs);
        if self.is_err(lt) {
            self.check_expr(rhs);
            return;
        }
        let Some(op) = op else {
            if matches!(rhs.kind, ExprKind::Dots) {
                self.set_type(rhs, lt);
                return;
            }
            self.check_expr_as(rhs, lt);
            return;
        };
        let rt = self.check_expr(rhs);
        if self.is_err(rt) || !target_ok {
            return;
        }
        let t = self.binary_type(op, lhs, rhs, lhs.span.to(rhs.span));
        if !self.is_err(t) && t != lt {
            self.mismatch(rhs.span, t, lt);
        }
    }

    fn check_exit(&mut self, s: &Stmt) {
        match self.cx.place {
            Place::ControlApply | Place::Action => {}
            Place::ParserState | Place::ParserTop => {
                self.error(s.span, "exit statements are not allowed in parsers")
            }
            _ => self.error(
                s.span,
                "exit statements are only allowed in controls and actions",
            ),
        }
    }

    fn check_return(&mut self, s: &Stmt, v: Option<&Expr>) {
        match (self.cx.place, self.cx.ret) {
            (Place::Function | Place::MethodImpl, Some(ret)) => match v {
                Some(e) if ret == TypeId::VOID => {
                    self.check_expr(e);
                    self.error(e.span, "return expression in function with void return");
                }
                Some(e) if has_dots(e) => {
                    self.check_expr_as(e, ret);
                    self.error(
                        s.span,
                        "Default values {...} cannot be used in a return statement",
                    );
                }
                Some(e) => {
                    self.check_expr_as(e, ret);
                }
                None if ret != TypeId::VOID && !self.is_err(ret) => {
                    let r = self.show(ret);
                    self.error(
                        s.span,
                        format!("return with no expression in a function returning {r}"),
                    );
                }
                None => {}
            },
            (Place::ControlApply | Place::Action, _) => {
                if let Some(e) = v {
                    self.check_expr(e);
                    self.error(
                        e.span,
                        "return statements in actions and controls cannot return a value",
                    );
                }
            }
            _ => self.error(s.span, "return statements are not allowed here"),
        }
    }

    fn check_for_in(&mut self, ty: Option<&Type>, name: &Ident, collection: &Expr, body: &Stmt) {
        // As in p4c, the range bounds and the elements of a list expression are converted to
        // the loop variable's type when it is given (`for (bit<8> i in 1 .. 3)`,
        // `for (bit<8> v in {1, 2, 5})`); other collections must have elements of that type.
        let declared = ty.map(|t| self.resolve_type(t));
        let elem = self.for_in_element(collection, declared.filter(|t| !self.is_err(*t)));
        self.scoped(ScopeKind::Block, |c| {
            let vt = match declared {
                Some(vt) => {
                    if !c.is_err(vt) && !c.is_err(elem) && !c.p4c_can_cast(elem, vt) {
                        let (a, b) = (c.show(vt), c.show(elem));
                        c.error(collection.span, format!("type mismatch: the loop variable has type {a} but the elements have type {b}"));
                    }
                    vt
                }
                None => elem,
            };
            let id = c.new_decl(DeclInfo::new(&name.name, name.span, DeclKind::Var, vt));
            c.bind(id);
            c.check_loop_body(body);
        });
    }

    /// The element type of a `for (x in collection)` collection: a range or a stack/list value,
    /// with range bounds and list expression elements converted to `declared` when given.
    fn for_in_element(&mut self, collection: &Expr, declared: Option<TypeId>) -> TypeId {
        if let ExprKind::Range(lo, hi) = &collection.kind {
            if let Some(vt) = declared {
                let lt = self.check_expr_as(lo, vt);
                let ht = self.check_expr_as(hi, vt);
                if self.is_err(lt) || self.is_err(ht) {
                    return TypeId::ERROR;
                }
                if !matches!(self.ty(vt), Ty::Bit(_) | Ty::Int(_)) {
                    let s = self.show(vt);
                    self.error(
                        collection.span,
                        format!("a range cannot have elements of type {s}"),
                    );
                    return TypeId::ERROR;
                }
                self.set_type(collection, vt);
                return vt;
            }
            let lt = self.check_expr(lo);
            let ht = self.check_expr(hi);
            if self.is_err(lt) || self.is_err(ht) {
                return TypeId::ERROR;
            }
            let t = self.binary_type(koi_syntax::ast::BinOp::Le, lo, hi, collection.span);
            if self.is_err(t) {
                return t;
            }
            let elem = if lt == TypeId::INF_INT { ht } else { lt };
            self.set_type(collection, elem);
            return elem;
        }
        if let (ExprKind::List { items, dots: false }, Some(vt)) = (&collection.kind, declared) {
            let tuple = self.intern(Ty::Tuple(vec![vt; items.len()]));
            let t = self.check_expr_as(collection, tuple);
            return if self.is_err(t) { t } else { vt };
        }
        let ct = self.check_expr(collection);
        match self.ty(ct).clone() {
            Ty::Stack { elem, .. } | Ty::List(elem) => elem,
            // A list expression (the spec's "list expression"), not a tuple-typed value:
            // p4c cannot iterate over tuples.
            Ty::Tuple(ts)
                if matches!(collection.kind, ExprKind::List { .. })
                    && ts.windows(2).all(|w| w[0] == w[1]) =>
            {
                ts.first().copied().unwrap_or(TypeId::ERROR)
            }
            Ty::Error => TypeId::ERROR,
            _ => {
                let s = self.show(ct);
                self.error(
                    collection.span,
                    format!("cannot iterate over a value of type {s}"),
                );
                TypeId::ERROR
            }
        }
    }

    /// A declaration inside a block: variable, constant or instantiation.
    fn check_local_decl(&mut self, d: &Decl) {
        match &d.kind {
            AstDeclKind::Instantiation { name, .. } => {
                let bad = match self.cx.place {
                    Place::ControlApply => {
                        Some("Instantiations cannot be in a control 'apply' block.")
                    }
                    // Actions may instantiate (p4c's sample action-register.p4); functions
                    // and abstract method implementations may not.
                    Place::Function | Place::MethodImpl => {
                        Some("Instantiations cannot be in a function or method.")
                    }
                    _ => None,
                };
                if let Some(msg) = bad {
                    self.error(
                        name.span,
                        format!("{}: invalid declaration. {msg}", name.name),
                    );
                    return;
                }
                self.check_decl(d);
            }
            AstDeclKind::Var { .. } | AstDeclKind::Const { .. } => {
                self.check_decl(d);
            }
            _ => {
                let what = d.name().map(|n| n.name.clone()).unwrap_or_default();
                self.error(
                    d.span,
                    format!("{what}: this declaration is not allowed in a block"),
                );
            }
        }
    }

    /// True when every path through the statements ends in `return` or `exit`.
    pub fn always_returns(stmts: &[Stmt]) -> bool {
        returns_at(stmts, 0)
    }
}

fn returns_at(stmts: &[Stmt], depth: u32) -> bool {
    depth < MAX_DEPTH && stmts.iter().any(|s| stmt_returns(s, depth + 1))
}

fn stmt_returns(s: &Stmt, depth: u32) -> bool {
    match &s.kind {
        StmtKind::Return(_) | StmtKind::Exit => true,
        StmtKind::Block(b) => returns_at(&b.stmts, depth),
        StmtKind::If {
            then,
            otherwise: Some(o),
            ..
        } => depth < MAX_DEPTH && stmt_returns(then, depth + 1) && stmt_returns(o, depth + 1),
        StmtKind::Switch { cases, .. } => {
            cases
                .iter()
                .any(|c| matches!(c.label, koi_syntax::ast::SwitchLabel::Default(_)))
                && cases
                    .iter()
                    .all(|c| c.body.as_ref().is_none_or(|b| returns_at(&b.stmts, depth)))
        }
        _ => false,
    }
}

/// Whether `e` is `...` or a list or struct expression ending in `...` (p4c gives those their
/// default values only where a declaration, an assignment or an argument gives them a type).
pub fn has_dots(e: &Expr) -> bool {
    matches!(
        e.kind,
        ExprKind::Dots
            | ExprKind::List { dots: true, .. }
            | ExprKind::StructInit { dots: true, .. }
    )
}
