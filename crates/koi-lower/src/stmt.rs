//! Statements: assignments (aggregates per slot, compound operators, slices), calls, `if`,
//! `switch` (on a table's `action_run` as an apply terminator, on values as a switch
//! terminator), `return`/`exit`, loops (as CFG loops; `for .. in` over stacks and lists
//! unrolled), local declarations, and table applications with hit/miss edges.

use crate::ctx::{Bind, Lowerer, R, internal, unsupported};
use crate::loc::{Alloc, Loc, bin};
use crate::sink::Pos;
use koi_ir::{ApplyNext, BinOp, BlockId, Expr, Place, SlotKind, Stmt, Terminator, Ty as IrTy};
use koi_sema::types::Ty;
use koi_sema::{CallTarget, Resolution};
use koi_syntax::Span;
use koi_syntax::ast::{self, ExprKind, StmtKind};

impl Lowerer<'_> {
    /// A block in its own scope.
    pub fn block(&mut self, b: &ast::Block) -> R<()> {
        self.push_frame();
        let r = b.stmts.iter().try_for_each(|s| self.stmt(s));
        self.pop_frame();
        r
    }

    pub fn stmt(&mut self, s: &ast::Stmt) -> R<()> {
        if self.union_stack_stmt(s)? {
            return Ok(());
        }
        match &s.kind {
            StmtKind::Assign { lhs, op, rhs } => self.assign(lhs, *op, rhs),
            StmtKind::Call(e) if self.removed.calls.contains(&e.id) => Ok(()),
            StmtKind::Call(e) => self.call(e).map(|_| ()),
            StmtKind::Empty => Ok(()),
            StmtKind::Exit => {
                for (dst, src) in self.flow.exit_copies.clone().iter().rev() {
                    self.copy(dst, src, s.span)?;
                }
                self.terminate(Terminator::Exit, s.span)
            }
            StmtKind::Return(v) => self.ret(v.as_ref(), s.span),
            StmtKind::Break | StmtKind::Continue => {
                let Some((brk, cont)) = self.flow.loops.last().copied() else {
                    return internal(s.span, "break outside a loop");
                };
                self.jump(if matches!(s.kind, StmtKind::Break) {
                    brk
                } else {
                    cont
                });
                Ok(())
            }
            StmtKind::If {
                cond,
                then,
                otherwise,
            } => self.if_stmt(cond, then, otherwise.as_deref()),
            StmtKind::Block(b) => self.block(b),
            StmtKind::Switch { expr, cases } => self.switch(expr, cases, s.span),
            StmtKind::Decl(d) => self.local_decl(d),
            StmtKind::For {
                init,
                cond,
                update,
                body,
                ..
            } => self.for_loop(init, cond.as_ref(), update, body),
            StmtKind::ForIn {
                name,
                collection,
                body,
                ..
            } => self.for_in(name, collection, body, s.span),
            StmtKind::Invalid => internal(s.span, "invalid statement"),
        }
    }

    fn assign(&mut self, lhs: &ast::Expr, op: Option<ast::BinOp>, rhs: &ast::Expr) -> R<()> {
        if op.is_none() && matches!(rhs.kind, ExprKind::InvalidHeader) {
            let dst = self.lvalue(lhs)?;
            self.invalidate(&dst);
            return Ok(());
        }
        if let ExprKind::Slice(base, h, l) = &lhs.kind {
            let target = self.lvalue(base)?;
            if !matches!(target, Loc::Scalar(Place::Slot(_) | Place::Slice { .. }, _)) {
                let (h, l) = (self.const_u64(h)? as u32, self.const_u64(l)? as u32);
                return self.assign_slice_rmw(target, h, l, op, rhs, lhs.span);
            }
        }
        if let ExprKind::Index(base, idx) = &lhs.kind
            && self.const_value(idx).is_none()
            && self.is_bits_array(base)?
        {
            return self.assign_array_elem(base, idx, op, rhs, lhs.span);
        }
        let dst = self.lvalue(lhs)?;
        let v = match op {
            None => self.value(rhs)?,
            Some(op) => {
                let (Some(x), Some(tx)) = (dst.expr(), dst.sty()) else {
                    return unsupported(lhs.span, "compound assignment to an aggregate");
                };
                let (y, ty) = self.rvalue_s(rhs)?;
                let (r, t) = crate::expr::binop(op, x, tx, y, ty.width());
                Loc::Value(r, t)
            }
        };
        self.copy(&dst, &v, lhs.span)
    }

    /// Whether `e` is an array of bits (`bit<8> arr[16]` in a header).
    fn is_bits_array(&mut self, e: &ast::Expr) -> R<bool> {
        let ty = self.ty_of(e)?;
        Ok(self.scalar_array(ty).is_some())
    }

    /// `arr[i] = v` (or `arr[i] op= v`) with `i` known at run time: `i` and the value are
    /// evaluated once, then each element whose index equals `i` takes the value (none does
    /// past the end, where P4 leaves a write without effect).
    fn assign_array_elem(
        &mut self,
        base: &ast::Expr,
        idx: &ast::Expr,
        op: Option<ast::BinOp>,
        rhs: &ast::Expr,
        span: Span,
    ) -> R<()> {
        let Loc::Struct(elems, _) = self.lvalue(base)? else {
            return unsupported(span, "assigning an element of this array");
        };
        let Some(t) = elems.first().and_then(|(_, l)| l.sty()) else {
            return unsupported(span, "assigning an element of an empty array");
        };
        let (i, it) = self.rvalue_s(idx)?;
        let i_slot = self.new_slot("$index", it.ty, it.signed, koi_ir::SlotKind::Temp);
        self.emit(Stmt::assign(Place::Slot(i_slot), i));
        let at = |j: usize| crate::expr::index_const(j, it.width());
        let v = match op {
            None => self.rvalue(rhs)?,
            Some(op) => {
                let cur = crate::expr::array_choice(&elems, &Expr::Slot(i_slot), it.width(), t);
                let (y, ty) = self.rvalue_s(rhs)?;
                crate::expr::binop(op, cur, t, y, ty.width()).0
            }
        };
        let v_slot = self.new_slot("$elem", t.ty, t.signed, koi_ir::SlotKind::Temp);
        self.emit(Stmt::assign(Place::Slot(v_slot), v));
        for (j, (_, l)) in elems.iter().enumerate() {
            let (Some(x), Some(k)) = (l.expr(), at(j)) else {
                continue;
            };
            let hit = bin(BinOp::Eq, Expr::Slot(i_slot), k);
            let nv = Expr::mux(hit, Expr::Slot(v_slot), x);
            self.copy(l, &Loc::Value(nv, t), span)?;
        }
        Ok(())
    }

    /// `x[h:l] = v` where `x` is not a slot: read-modify-write of the whole value.
    fn assign_slice_rmw(
        &mut self,
        target: Loc,
        h: u32,
        l: u32,
        op: Option<ast::BinOp>,
        rhs: &ast::Expr,
        span: Span,
    ) -> R<()> {
        let (Some(x), Some(tx)) = (target.expr(), target.sty()) else {
            return unsupported(span, "assigning a slice of this value");
        };
        let w = tx.width();
        let sw = h - l + 1;
        let (mut y, ty) = self.rvalue_s(rhs)?;
        if let Some(op) = op {
            let cur = x.clone().slice(h, l);
            y = crate::expr::binop(op, cur, crate::loc::STy::bits(sw), y, ty.width()).0;
        }
        let mask = koi_ir::Bits::ones(sw).resize(w).shl(u64::from(l));
        let keep = bin(BinOp::BitAnd, x, Expr::Const(mask.not()));
        let ins = y.cast(koi_ir::Cast::Resize {
            width: w,
            signed: false,
        });
        let ins = bin(BinOp::Shl, ins, Expr::bits(32, u128::from(l)));
        let v = Loc::Value(bin(BinOp::BitOr, keep, ins), tx);
        self.copy(&target, &v, span)
    }

    fn ret(&mut self, v: Option<&ast::Expr>, span: Span) -> R<()> {
        match self.flow.ret.clone() {
            Some(t) => {
                if let (Some(v), Some(dst)) = (v, &t.value) {
                    let val = self.value(v)?;
                    self.copy(dst, &val, span)?;
                }
                self.jump(t.cont);
                Ok(())
            }
            None => self.terminate(Terminator::Return, span),
        }
    }

    fn if_stmt(
        &mut self,
        cond: &ast::Expr,
        then: &ast::Stmt,
        otherwise: Option<&ast::Stmt>,
    ) -> R<()> {
        // A condition known at compile time (`if (E.A == E.B)`): only the branch taken is
        // lowered, as p4c's frontend folds it, so the other one's actions are not used.
        if let Some(koi_sema::value::Value::Bool(taken)) = self.const_value(cond).cloned() {
            return match (taken, otherwise) {
                (true, _) => self.scoped_stmt(then),
                (false, Some(o)) => self.scoped_stmt(o),
                (false, None) => Ok(()),
            };
        }
        let (t, e) = match self.table_cond(cond) {
            Some((call, hit)) => {
                let table = self.applied_table(call)?;
                let b = self.body(cond.span)?;
                let (h, m) = (b.new_block(), b.new_block());
                b.terminate(Terminator::Apply {
                    table,
                    next: ApplyNext::HitMiss { hit: h, miss: m },
                });
                let (h, m) = (Pos::Block(h), Pos::Block(m));
                if hit { (h, m) } else { (m, h) }
            }
            None => {
                let c = self.cond(cond)?;
                self.branch(c)
            }
        };
        let join = self.new_pos("join");
        self.switch_to(t);
        self.scoped_stmt(then)?;
        self.jump(join);
        self.switch_to(e);
        if let Some(o) = otherwise {
            self.scoped_stmt(o)?;
        }
        self.jump(join);
        self.switch_to(join);
        Ok(())
    }

    fn scoped_stmt(&mut self, s: &ast::Stmt) -> R<()> {
        self.push_frame();
        let r = self.stmt(s);
        self.pop_frame();
        r
    }

    /// `t.apply().hit` / `.miss` / `!...` conditions: the apply call and whether the
    /// condition is true on a hit.
    fn table_cond<'e>(&self, cond: &'e ast::Expr) -> Option<(&'e ast::Expr, bool)> {
        match &cond.kind {
            ExprKind::Unary(ast::UnOp::Not, inner) => self.table_cond(inner).map(|(c, h)| (c, !h)),
            ExprKind::Member(call, _) => match self.ck.resolutions.get(&cond.id) {
                Some(Resolution::TableHit) => Some((call, true)),
                Some(Resolution::TableMiss) => Some((call, false)),
                _ => None,
            },
            _ => None,
        }
    }

    /// The table of a `t.apply()` call expression.
    pub fn applied_table(&mut self, call: &ast::Expr) -> R<koi_ir::TableId> {
        let info = self.call_info(call)?;
        if let CallTarget::Apply { callee_ty } = info.target
            && let Ty::Table { decl, .. } = self.types.get(callee_ty).clone()
        {
            return self.table_id(decl, call.span);
        }
        unsupported(call.span, "this apply call")
    }

    /// `t.apply().hit` (or `.miss`) as a value.
    pub fn table_hit_value(&mut self, call: &ast::Expr, hit: bool) -> R<Loc> {
        let table = self.applied_table(call)?;
        let slot = self.new_slot("$hit", IrTy::Bool, false, SlotKind::Temp);
        let b = self.body(call.span)?;
        let (h, m, join) = (b.new_block(), b.new_block(), b.new_block());
        b.terminate(Terminator::Apply {
            table,
            next: ApplyNext::HitMiss { hit: h, miss: m },
        });
        for (blk, v) in [(h, hit), (m, !hit)] {
            b.switch_to(blk);
            b.push(Stmt::assign(Place::Slot(slot), Expr::Bool(v)));
            b.terminate(Terminator::Goto(join));
        }
        b.switch_to(join);
        Ok(Loc::Scalar(Place::Slot(slot), crate::expr::bool_ty()))
    }

    fn switch(&mut self, expr: &ast::Expr, cases: &[ast::SwitchCase], span: Span) -> R<()> {
        let run = match &expr.kind {
            ExprKind::Member(call, _)
                if matches!(
                    self.ck.resolutions.get(&expr.id),
                    Some(Resolution::ActionRun)
                ) =>
            {
                Some(call)
            }
            _ => None,
        };
        let (table, value) = match run {
            Some(call) => (Some(self.applied_table(call)?), None),
            None => (None, Some(self.rvalue_s(expr)?)),
        };
        let join = self.body(span)?.new_block();
        let mut labels: Vec<(&ast::SwitchLabel, BlockId)> = Vec::new();
        let mut pending: Vec<&ast::SwitchLabel> = Vec::new();
        let mut bodies: Vec<(BlockId, &ast::Block)> = Vec::new();
        for c in cases {
            pending.push(&c.label);
            if let Some(b) = &c.body {
                let blk = self.body(span)?.new_block();
                labels.extend(pending.drain(..).map(|l| (l, blk)));
                bodies.push((blk, b));
            }
        }
        labels.extend(pending.drain(..).map(|l| (l, join)));
        let mut default = join;
        let mut vcases = Vec::new();
        let mut acases = Vec::new();
        for (l, blk) in &labels {
            match l {
                ast::SwitchLabel::Default(_) => default = *blk,
                ast::SwitchLabel::Expr(e) => match (table, &value) {
                    (Some(t), _) => acases.push((self.case_action(t, e)?, *blk)),
                    (None, Some((_, ty))) => {
                        vcases.push((self.const_bits(e, ty.width())?, *blk));
                    }
                    _ => {}
                },
            }
        }
        let term = match (table, value) {
            (Some(table), _) => Terminator::Apply {
                table,
                next: ApplyNext::Actions {
                    cases: acases,
                    default,
                },
            },
            (None, Some((v, _))) => Terminator::Switch {
                value: v,
                cases: vcases,
                default,
            },
            _ => return internal(span, "bad switch"),
        };
        self.terminate(term, span)?;
        for (blk, b) in bodies {
            self.switch_to(Pos::Block(blk));
            self.block(b)?;
            self.jump(Pos::Block(join));
        }
        self.switch_to(Pos::Block(join));
        Ok(())
    }

    /// The action of table `t` named by a switch label.
    fn case_action(&self, t: koi_ir::TableId, e: &ast::Expr) -> R<koi_ir::ActionId> {
        let Some(Resolution::Decl(d)) = self.ck.resolutions.get(&e.id) else {
            return internal(e.span, "switch label is not an action");
        };
        let acts = self.table_actions.get(&t);
        match acts.and_then(|a| a.iter().find(|(x, _)| x == d)) {
            Some((_, a)) => Ok(*a),
            None => internal(e.span, "switch label is not an action of the table"),
        }
    }

    /// A local declaration inside a body: a variable or a constant.
    pub fn local_decl(&mut self, d: &ast::Decl) -> R<()> {
        match &d.kind {
            ast::DeclKind::Var { name, init, .. } => {
                let id = self.decl_of(name)?;
                let ty = self.decl(id)?.ty;
                let ty = self.subst_ty(ty);
                let qname = self.qualify(&name.name);
                let loc = self.alloc(&qname, ty, Alloc::Local, name.span)?;
                self.init_var(&loc, init.as_ref())?;
                self.bind(id, Bind::Loc(loc));
                Ok(())
            }
            ast::DeclKind::Const { name, value, .. } => {
                let id = self.decl_of(name)?;
                let info = self.decl(id)?;
                let ty = info.ty;
                if let Some(v) = info.value.clone() {
                    self.bind(id, Bind::Const(v, ty));
                    return Ok(());
                }
                // Sema could not fold the value because it depends on a constructor parameter
                // (`const Mode k = m;`): known once the block is instantiated, or else computed
                // once, here, into storage of its own.
                if let Some(v) = self.const_value(value).cloned() {
                    let ty = self.subst_ty(ty);
                    self.bind(id, Bind::Const(v, ty));
                    return Ok(());
                }
                let ty = self.subst_ty(ty);
                let qname = self.qualify(&name.name);
                let loc = self.alloc(&qname, ty, Alloc::Local, name.span)?;
                self.init_var(&loc, Some(value))?;
                self.bind(id, Bind::Loc(loc));
                Ok(())
            }
            _ => unsupported(d.span, "this declaration inside a body"),
        }
    }

    /// Initialises a variable: its initializer, or invalid headers.
    pub fn init_var(&mut self, loc: &Loc, init: Option<&ast::Expr>) -> R<()> {
        match init {
            Some(e) => {
                if matches!(e.kind, ExprKind::InvalidHeader) {
                    self.invalidate(loc);
                    return Ok(());
                }
                let v = self.value(e)?;
                self.copy(loc, &v, e.span)
            }
            None => {
                self.invalidate(loc);
                Ok(())
            }
        }
    }

    fn for_loop(
        &mut self,
        init: &[ast::Stmt],
        cond: Option<&ast::Expr>,
        update: &[ast::Stmt],
        body: &ast::Stmt,
    ) -> R<()> {
        self.push_frame();
        let r = self.for_loop_inner(init, cond, update, body);
        self.pop_frame();
        r
    }

    fn for_loop_inner(
        &mut self,
        init: &[ast::Stmt],
        cond: Option<&ast::Expr>,
        update: &[ast::Stmt],
        body: &ast::Stmt,
    ) -> R<()> {
        init.iter().try_for_each(|s| self.stmt(s))?;
        let head = self.new_pos("loop");
        let (cont, exit) = (self.new_pos("next"), self.new_pos("done"));
        self.jump(head);
        self.switch_to(head);
        let start = match cond {
            Some(c) => {
                let c = self.cond(c)?;
                let b = self.new_pos("body");
                self.branch_to(c, b, exit);
                b
            }
            None => head,
        };
        self.switch_to(start);
        self.flow.loops.push((exit, cont));
        let r = self.scoped_stmt(body);
        self.flow.loops.pop();
        r?;
        self.jump(cont);
        self.switch_to(cont);
        update.iter().try_for_each(|s| self.stmt(s))?;
        self.jump(head);
        self.switch_to(exit);
        Ok(())
    }

    fn for_in(
        &mut self,
        name: &ast::Ident,
        collection: &ast::Expr,
        body: &ast::Stmt,
        span: Span,
    ) -> R<()> {
        let var = self.decl_of(name)?;
        if let ExprKind::Range(lo, hi) = &collection.kind {
            return self.for_range(var, name, lo, hi, body);
        }
        let listed = match &collection.kind {
            ExprKind::List { items, .. } => Some(items),
            ExprKind::Cast(_, inner) => match &inner.kind {
                ExprKind::List { items, .. } => Some(items),
                _ => None,
            },
            _ => None,
        };
        let items: Vec<Loc> = if let Some(listed) = listed {
            // A list expression (`{a, b}` or `(list<T>){a, b}`) is evaluated once, before the
            // first iteration: each element is copied to a temporary, which the loop variable
            // names in its iteration.
            // As p4c, the elements may have another type than the loop variable (one they can
            // be cast to): each is converted to the variable's type.
            let var_ty = self.ck.decl(var).map(|d| d.ty);
            let var_ty = var_ty.map(|t| self.subst_ty(t));
            let mut out = Vec::with_capacity(listed.len());
            for item in listed {
                let mut v = self.value(item)?;
                let mut ty = self.ty_of(item)?;
                if let Some(vt) = var_ty
                    && vt != ty
                {
                    v = self.convert(v, ty, vt, item)?;
                    ty = vt;
                }
                let tmp = self.alloc("$item", ty, Alloc::Temp, item.span)?;
                self.copy(&tmp, &v, item.span)?;
                out.push(tmp);
            }
            out
        } else {
            match self.value(collection)? {
                Loc::Stack(s, ty) => {
                    let n = self.p.phv.stacks[s].elems.len();
                    (0..n)
                        .map(|i| self.stack_elem(s, ty, i as u64, span))
                        .collect::<R<_>>()?
                }
                Loc::Struct(fs, _) => fs.into_iter().map(|(_, l)| l).collect(),
                _ => return unsupported(span, "iterating over this value"),
            }
        };
        let exit = self.new_pos("done");
        for item in items {
            let next = self.new_pos("next");
            self.push_frame();
            self.bind(var, Bind::Loc(item));
            self.flow.loops.push((exit, next));
            let r = self.stmt(body);
            self.flow.loops.pop();
            self.pop_frame();
            r?;
            self.jump(next);
            self.switch_to(next);
        }
        self.jump(exit);
        self.switch_to(exit);
        Ok(())
    }

    /// `for (x in lo .. hi)`: `x = lo; if x <= hi { loop { body; if x == hi break; x++ } }`.
    fn for_range(
        &mut self,
        var: koi_sema::DeclId,
        name: &ast::Ident,
        lo: &ast::Expr,
        hi: &ast::Expr,
        body: &ast::Stmt,
    ) -> R<()> {
        let ty = self.decl(var)?.ty;
        let ty = self.subst_ty(ty);
        let qname = self.qualify(&name.name);
        let loc = self.alloc(&qname, ty, Alloc::Local, name.span)?;
        let (Loc::Scalar(place, sty), Some(x)) = (loc.clone(), loc.expr()) else {
            return unsupported(name.span, "a loop variable of this type");
        };
        let lo = self.rvalue(lo)?;
        let hi_v = self.rvalue(hi)?;
        let hi = self.new_slot("$hi", sty.ty, sty.signed, SlotKind::Temp);
        self.emit(Stmt::assign(Place::Slot(hi), hi_v));
        self.emit(Stmt::assign(place.clone(), lo));
        let le = if sty.signed { BinOp::LeS } else { BinOp::LeU };
        let (start, exit) = self.branch(bin(le, x.clone(), Expr::Slot(hi)));
        let (cont, step) = (self.new_pos("next"), self.new_pos("step"));
        self.switch_to(start);
        self.push_frame();
        self.bind(var, Bind::Loc(loc));
        self.flow.loops.push((exit, cont));
        let r = self.stmt(body);
        self.flow.loops.pop();
        self.pop_frame();
        r?;
        self.jump(cont);
        self.switch_to(cont);
        self.branch_to(bin(BinOp::Eq, x.clone(), Expr::Slot(hi)), exit, step);
        self.switch_to(step);
        let one = Expr::Const(koi_ir::Bits::from_u64(sty.width(), 1));
        self.emit(Stmt::assign(place, bin(BinOp::Add, x, one)));
        self.jump(start);
        self.switch_to(exit);
        Ok(())
    }
}
