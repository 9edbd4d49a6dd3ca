//! Calls: the dispatch of every call expression (built-in methods, functions, actions, extern
//! methods and functions, packet operations, table and block applications), and the binding of
//! parameters with copy-in/copy-out for the callables that are inlined (functions, actions with
//! directional parameters).

use crate::ctx::{Bind, Flow, Lowerer, R, RetTarget, internal, unsupported};
use crate::loc::{Alloc, Loc, or_all};
use koi_ir::{Expr, HeaderRef, Stmt};
use koi_sema::types::{ParamTy, Ty};
use koi_sema::{Builtin, CallInfo, CallTarget, DeclId};
use koi_syntax::Span;
use koi_syntax::ast::{self, Direction, ExprKind};

/// How an argument is bound to a parameter of an inlined callable.
pub struct Bound {
    pub param: DeclId,
    pub loc: Loc,
    /// Where to copy the parameter's final value (`out`/`inout`).
    pub copy_out: Option<Loc>,
}

impl Lowerer<'_> {
    pub fn call_info(&self, e: &ast::Expr) -> R<&CallInfo> {
        match self.ck.calls.get(&e.id) {
            Some(c) => Ok(c),
            None => internal(e.span, "call was not resolved"),
        }
    }

    /// The argument bound to parameter `i`, if given.
    pub fn arg<'e>(info: &CallInfo, args: &'e [ast::Argument], i: usize) -> Option<&'e ast::Expr> {
        let a = info.arg_of_param.get(i).copied().flatten()?;
        args.get(a).map(|a| &a.value)
    }

    /// Lowers a call expression; returns its result, if it has one.
    pub fn call(&mut self, e: &ast::Expr) -> R<Option<Loc>> {
        let ExprKind::Call { callee, args, .. } = &e.kind else {
            return internal(e.span, "not a call");
        };
        let info = self.call_info(e)?.clone();
        match info.target.clone() {
            CallTarget::Builtin(b) => self.builtin_method(e, b, callee, &info, args),
            CallTarget::Function(d) => self.inline_function(e, d, &info, args),
            CallTarget::ExternFunction(d) => self.extern_function(e, d, &info, args),
            CallTarget::Action(d) => self.call_action(e, d, &info, args).map(|_| None),
            CallTarget::Method { method, .. } => self.method_call(e, callee, method, &info, args),
            CallTarget::Apply { callee_ty } => self.apply_call(e, callee, callee_ty, &info, args),
            CallTarget::Constructor { .. } => unsupported(e.span, "a constructor call here"),
        }
    }

    /// The receiver of a method call (`x` in `x.m(...)`).
    pub fn receiver(callee: &ast::Expr) -> Option<&ast::Expr> {
        match &callee.kind {
            ExprKind::Member(base, _) => Some(base),
            _ => None,
        }
    }

    fn builtin_method(
        &mut self,
        e: &ast::Expr,
        b: Builtin,
        callee: &ast::Expr,
        info: &CallInfo,
        args: &[ast::Argument],
    ) -> R<Option<Loc>> {
        if let Some(l) = self.const_loc_of_call(e)? {
            return Ok(Some(l));
        }
        let Some(recv) = Self::receiver(callee) else {
            return unsupported(e.span, "this built-in call");
        };
        let target = self.lvalue(recv)?;
        match (b, &target) {
            (Builtin::IsValid, Loc::Header(h, _)) => Ok(Some(Loc::Value(
                Expr::IsValid(h.clone()),
                crate::expr::bool_ty(),
            ))),
            (Builtin::IsValid, Loc::Union(ms, _)) => {
                let vs = ms.iter().map(|m| Expr::is_valid(*m)).collect();
                Ok(Some(Loc::Value(or_all(vs), crate::expr::bool_ty())))
            }
            (Builtin::SetValid, Loc::Header(h, _)) => {
                self.emit(Stmt::SetValid(h.clone()));
                Ok(None)
            }
            (Builtin::SetInvalid, Loc::Header(..) | Loc::Union(..)) => {
                self.invalidate(&target);
                Ok(None)
            }
            (Builtin::PushFront | Builtin::PopFront, Loc::Stack(s, _)) => {
                let count = match Self::arg(info, args, 0) {
                    Some(c) => self.const_u64(c)? as u32,
                    None => 1,
                };
                self.emit(if b == Builtin::PushFront {
                    Stmt::PushFront { stack: *s, count }
                } else {
                    Stmt::PopFront { stack: *s, count }
                });
                Ok(None)
            }
            (Builtin::PushFront | Builtin::PopFront, Loc::Struct(..)) => {
                let Some(u) = self.union_stack_of(&target) else {
                    return unsupported(e.span, "this built-in method");
                };
                let count = match Self::arg(info, args, 0) {
                    Some(c) => self.const_u64(c)?,
                    None => 1,
                };
                self.union_stack_shift(&u, count, b == Builtin::PushFront, e.span)?;
                Ok(None)
            }
            _ => unsupported(e.span, "this built-in method"),
        }
    }

    fn const_loc_of_call(&mut self, e: &ast::Expr) -> R<Option<Loc>> {
        let Some(v) = self.const_value(e).cloned() else {
            return Ok(None);
        };
        let ty = self.ty_of(e)?;
        if matches!(self.types.get(ty), Ty::InfInt) {
            let Some(i) = v.as_int() else { return Ok(None) };
            let w = (i.bits() as u32 + 1).max(32);
            let c = crate::consts::int_bits(i, w);
            return Ok(Some(Loc::Value(Expr::Const(c), crate::loc::STy::bits(w))));
        }
        Ok(self
            .scalar(ty)
            .and_then(|s| self.scalar_const(&v, ty).map(|c| Loc::Value(c, s))))
    }

    /// The parameter types of a call, substituted.
    pub fn params_of(&mut self, info: &CallInfo) -> Vec<ParamTy> {
        info.params
            .iter()
            .map(|p| ParamTy {
                name: p.name.clone(),
                dir: p.dir,
                ty: self.subst_ty(p.ty),
            })
            .collect()
    }

    /// Binds the arguments of a call to fresh parameter storage, copying in.
    pub fn bind_args(
        &mut self,
        callee: DeclId,
        info: &CallInfo,
        args: &[ast::Argument],
        prefix: &str,
        span: Span,
    ) -> R<Vec<Bound>> {
        let params = self.params_of(info);
        let decls = self.decl(callee)?.params.clone();
        let mut out = Vec::new();
        for (i, (p, d)) in params.iter().zip(decls).enumerate() {
            let arg = Self::arg(info, args, i);
            let b = self.bind_one(p, d, arg, prefix, span)?;
            out.push(b);
        }
        Ok(out)
    }

    fn bind_one(
        &mut self,
        p: &ParamTy,
        d: DeclId,
        arg: Option<&ast::Expr>,
        prefix: &str,
        span: Span,
    ) -> R<Bound> {
        let name = format!("{prefix}.{}", p.name);
        let Some(arg) = arg else {
            let default = self.decl(d)?.param().and_then(|pi| pi.default);
            let v = default.and_then(|n| self.ck.consts.get(&n)).cloned();
            let loc = match v {
                Some(v) => self.const_loc(&v, p.ty, span)?,
                None => self.alloc(&name, p.ty, Alloc::Temp, span)?,
            };
            return Ok(Bound {
                param: d,
                loc,
                copy_out: None,
            });
        };
        match p.dir {
            None | Some(Direction::In) => {
                let v = self.value(arg)?;
                if let Loc::Value(Expr::Const(_) | Expr::Bool(_), _) = v {
                    return Ok(Bound {
                        param: d,
                        loc: v,
                        copy_out: None,
                    });
                }
                let tmp = self.alloc(&name, p.ty, Alloc::Temp, span)?;
                self.copy(&tmp, &v, arg.span)?;
                Ok(Bound {
                    param: d,
                    loc: tmp,
                    copy_out: None,
                })
            }
            Some(dir) => {
                let dont_care = matches!(arg.kind, ExprKind::DontCare);
                let target = self.arg_target(arg, p.ty)?;
                let tmp = self.alloc(&name, p.ty, Alloc::Temp, span)?;
                if dir == Direction::InOut {
                    self.copy(&tmp, &target, arg.span)?;
                } else {
                    self.invalidate(&tmp);
                }
                Ok(Bound {
                    param: d,
                    loc: tmp,
                    copy_out: (!dont_care).then_some(target),
                })
            }
        }
    }

    /// Copies `out`/`inout` parameters back to their arguments.
    pub fn copy_out(&mut self, bound: &[Bound], span: Span) -> R<()> {
        for b in bound {
            if let Some(dst) = &b.copy_out {
                self.copy(dst, &b.loc, span)?;
            }
        }
        Ok(())
    }

    /// Inlines a function call; returns the result storage.
    fn inline_function(
        &mut self,
        e: &ast::Expr,
        d: DeclId,
        info: &CallInfo,
        args: &[ast::Argument],
    ) -> R<Option<Loc>> {
        let Some(ast::DeclKind::Function { body, .. }) = self.idx.decls.get(&d).map(|x| &x.kind)
        else {
            return unsupported(e.span, "calling this function");
        };
        let info_d = self.decl(d)?;
        let fname = info_d.name.clone();
        let tparams = info_d.type_params.clone();
        let ret_ty = info_d.ret;
        let prefix = self.qualify(&fname);
        let bound = self.bind_args(d, info, args, &prefix, e.span)?;
        let mut subst = self.subst.clone();
        for (tp, ta) in tparams.iter().zip(&info.type_args) {
            let t = self.subst_ty(*ta);
            subst.insert(*tp, t);
        }
        let saved_subst = std::mem::replace(&mut self.subst, subst);
        let ret_ty = ret_ty.map(|t| self.subst_ty(t));
        let value = match ret_ty {
            Some(t) if !matches!(self.types.get(t), Ty::Void) => {
                Some(self.alloc(&format!("{prefix}.$ret"), t, Alloc::Temp, e.span)?)
            }
            _ => None,
        };
        let r = self.inline_body(body, &bound, value.clone());
        self.subst = saved_subst;
        r?;
        self.copy_out(&bound, e.span)?;
        Ok(value)
    }

    /// Lowers `body` in place with `bound` parameters; `return` jumps past it.
    pub fn inline_body(&mut self, body: &ast::Block, bound: &[Bound], value: Option<Loc>) -> R<()> {
        let cont = self.new_pos("ret");
        let mut exit_copies = self.flow.exit_copies.clone();
        for b in bound {
            if let Some(dst) = &b.copy_out {
                exit_copies.push((dst.clone(), b.loc.clone()));
            }
        }
        let flow = Flow {
            ret: Some(RetTarget { cont, value }),
            loops: Vec::new(),
            exit_copies,
        };
        let saved = std::mem::replace(&mut self.flow, flow);
        self.push_frame();
        for b in bound {
            self.bind(b.param, Bind::Loc(b.loc.clone()));
        }
        let r = self.block(body);
        self.pop_frame();
        self.flow = saved;
        r?;
        self.jump(cont);
        self.switch_to(cont);
        Ok(())
    }

    /// A direct action call: `CallAction` when every parameter is directionless, otherwise
    /// the body inlined with copy-in/copy-out.
    fn call_action(
        &mut self,
        e: &ast::Expr,
        d: DeclId,
        info: &CallInfo,
        args: &[ast::Argument],
    ) -> R<()> {
        if self.in_parser() {
            return unsupported(e.span, "action calls in parsers");
        }
        if self.action_may_exit(d, 0) && info.params.iter().any(|p| p.dir.is_some()) {
            if let Some(bound) = self.aliased_args(info, args)?
                && !self.specialised_otherwise(d, &bound)?
            {
                return self.call_aliased(e, d, info, args, &bound);
            }
            return self.inline_action(e, d, info, args);
        }
        if self.shares_table_binding(d, info)?
            && let Some(bound) = self.aliased_args(info, args)?
            && !self.specialised_otherwise(d, &bound)?
        {
            // The same action as the table's that binds these locations (one action, as p4c
            // lists it), not a copy-in/copy-out specialisation of its own.
            return self.call_aliased(e, d, info, args, &bound);
        }
        let params = self.params_of(info);
        let locs = self.direct_params(d, &params, e.span)?;
        let mut vals = Vec::new();
        let mut outs = Vec::new();
        let mut k = 0;
        for (i, p) in params.iter().enumerate() {
            let Some(a) = Self::arg(info, args, i) else {
                if matches!(p.dir, Some(Direction::Out | Direction::InOut)) {
                    return unsupported(e.span, "omitted out action arguments");
                }
                let pd = self.decl(d)?.params.get(i).copied();
                let default = match pd {
                    Some(pd) => self.decl(pd)?.param().and_then(|pi| pi.default),
                    None => None,
                };
                let Some(v) = default.and_then(|n| self.ck.consts.get(&n)).cloned() else {
                    return unsupported(e.span, "omitted action arguments");
                };
                let l = self.const_loc(&v, p.ty, e.span)?;
                if p.dir.is_some() {
                    let loc = locs[k].clone();
                    k += 1;
                    self.copy(&loc, &l, e.span)?;
                    continue;
                }
                match l.expr() {
                    Some(x) => vals.push(x),
                    None => return unsupported(e.span, "an aggregate default argument"),
                }
                continue;
            };
            let Some(dir) = p.dir else {
                vals.push(self.rvalue(a)?);
                continue;
            };
            let loc = locs[k].clone();
            k += 1;
            if dir == Direction::In {
                let v = self.value(a)?;
                self.copy(&loc, &v, a.span)?;
                continue;
            }
            let dont_care = matches!(a.kind, ExprKind::DontCare);
            let target = self.arg_target(a, p.ty)?;
            if dir == Direction::InOut {
                self.copy(&loc, &target, a.span)?;
            } else {
                self.invalidate(&loc);
            }
            if !dont_care {
                outs.push((target, loc));
            }
        }
        let action = self.action_id(d, &locs, e.span)?;
        self.emit(Stmt::CallAction { action, args: vals });
        for (target, loc) in outs {
            self.copy(&target, &loc, e.span)?;
        }
        Ok(())
    }

    /// The locations of the directional arguments, if they can be bound directly (plain,
    /// non-overlapping locations): an `exit` in the action then needs no copy-out.
    fn aliased_args(&mut self, info: &CallInfo, args: &[ast::Argument]) -> R<Option<Vec<Loc>>> {
        let mut locs = Vec::new();
        for (i, p) in info.params.iter().enumerate() {
            if p.dir.is_none() {
                continue;
            }
            match Self::arg(info, args, i) {
                Some(a) if crate::control::is_location(a) => match self.lvalue(a)? {
                    Loc::Value(..) => return Ok(None),
                    l => locs.push(l),
                },
                _ => return Ok(None),
            }
        }
        let prints: Vec<_> = locs.iter().map(|l| self.footprint(l)).collect();
        let overlap = prints.iter().enumerate().any(|(i, a)| {
            prints[i + 1..]
                .iter()
                .any(|b| a.iter().any(|s| b.contains(s)))
        });
        Ok((!overlap).then_some(locs))
    }

    /// Whether a direct call of action `d` may bind its directional parameters to the
    /// argument locations, as a table's action list does, so that the call and the table
    /// share one action: `d` is a top-level action (its body reaches no storage but its
    /// parameters, so binding plain, non-overlapping locations equals copy-in/copy-out), has
    /// directional parameters, none `in` (an `in` parameter is the action's own copy), and
    /// some table lists it.
    fn shares_table_binding(&self, d: DeclId, info: &CallInfo) -> R<bool> {
        let dirs = || info.params.iter().filter_map(|p| p.dir);
        Ok(self.decl(d)?.parent.is_none()
            && dirs().next().is_some()
            && dirs().all(|dir| dir != Direction::In)
            && self.ck.tables.values().any(|t| t.actions.contains(&d)))
    }

    /// Whether action `d` already exists, bound to other locations (a second specialisation
    /// would need another name; the call is inlined instead).
    fn specialised_otherwise(&self, d: DeclId, bound: &[Loc]) -> R<bool> {
        let top = self.decl(d)?.parent.is_none();
        let prefix = if top {
            String::new()
        } else {
            self.path.clone()
        };
        Ok(self
            .actions
            .get(&(prefix, d))
            .is_some_and(|v| !v.is_empty() && v.iter().all(|(b, _)| b.as_slice() != bound)))
    }

    /// A call of the action specialised for the argument locations.
    fn call_aliased(
        &mut self,
        e: &ast::Expr,
        d: DeclId,
        info: &CallInfo,
        args: &[ast::Argument],
        bound: &[Loc],
    ) -> R<()> {
        let mut vals = Vec::new();
        let mut k = 0;
        for (i, p) in info.params.iter().enumerate() {
            match p.dir {
                None => match Self::arg(info, args, i) {
                    Some(a) => vals.push(self.rvalue(a)?),
                    None => return unsupported(e.span, "omitted action arguments"),
                },
                Some(Direction::Out) => {
                    self.invalidate(&bound[k]);
                    k += 1;
                }
                Some(_) => k += 1,
            }
        }
        let action = self.action_id(d, bound, e.span)?;
        self.emit(Stmt::CallAction { action, args: vals });
        Ok(())
    }

    /// An action call inlined with copy-in/copy-out (actions that may `exit`: the copy-out
    /// must happen on `exit` too, which only the call site can do).
    fn inline_action(
        &mut self,
        e: &ast::Expr,
        d: DeclId,
        info: &CallInfo,
        args: &[ast::Argument],
    ) -> R<()> {
        let Some(ast::DeclKind::Action { body, .. }) = self.idx.decls.get(&d).map(|x| &x.kind)
        else {
            return internal(e.span, "action declaration not found");
        };
        let name = self.decl(d)?.name.clone();
        let prefix = self.qualify(&name);
        let bound = self.bind_args(d, info, args, &prefix, e.span)?;
        self.inline_body(body, &bound, None)?;
        self.copy_out(&bound, e.span)
    }

    /// Whether the body of action `d` (or an action it calls) contains `exit`.
    fn action_may_exit(&self, d: DeclId, depth: u32) -> bool {
        let Some(ast::DeclKind::Action { body, .. }) = self.idx.decls.get(&d).map(|x| &x.kind)
        else {
            return false;
        };
        depth < 16 && body.stmts.iter().any(|s| self.stmt_may_exit(s, depth))
    }

    fn stmt_may_exit(&self, s: &ast::Stmt, depth: u32) -> bool {
        use ast::StmtKind as K;
        match &s.kind {
            K::Exit => true,
            K::Call(c) => match self.ck.calls.get(&c.id).map(|i| &i.target) {
                Some(CallTarget::Action(a)) => self.action_may_exit(*a, depth + 1),
                _ => false,
            },
            K::If {
                then, otherwise, ..
            } => {
                self.stmt_may_exit(then, depth)
                    || otherwise
                        .as_ref()
                        .is_some_and(|o| self.stmt_may_exit(o, depth))
            }
            K::Block(b) => b.stmts.iter().any(|s| self.stmt_may_exit(s, depth)),
            K::Switch { cases, .. } => cases.iter().any(|c| {
                c.body
                    .as_ref()
                    .is_some_and(|b| b.stmts.iter().any(|s| self.stmt_may_exit(s, depth)))
            }),
            K::For { body, .. } | K::ForIn { body, .. } => self.stmt_may_exit(body, depth),
            _ => false,
        }
    }

    /// The storage of the directional parameters of action `d` for direct calls (shared by
    /// every call site, so that the action exists once).
    fn direct_params(&mut self, d: DeclId, params: &[ParamTy], span: Span) -> R<Vec<Loc>> {
        let top = self.decl(d)?.parent.is_none();
        let prefix = if top {
            String::new()
        } else {
            self.path.clone()
        };
        if let Some(l) = self.direct_params.get(&(prefix.clone(), d)) {
            return Ok(l.clone());
        }
        let name = self.decl(d)?.name.clone();
        let base = if prefix.is_empty() {
            name
        } else {
            format!("{prefix}.{name}")
        };
        let mut locs = Vec::new();
        for p in params.iter().filter(|p| p.dir.is_some()) {
            locs.push(self.alloc(&format!("{base}.{}", p.name), p.ty, Alloc::Temp, span)?);
        }
        self.direct_params.insert((prefix, d), locs.clone());
        Ok(locs)
    }

    fn method_call(
        &mut self,
        e: &ast::Expr,
        callee: &ast::Expr,
        method: DeclId,
        info: &CallInfo,
        args: &[ast::Argument],
    ) -> R<Option<Loc>> {
        let Some(recv) = Self::receiver(callee) else {
            return unsupported(e.span, "this method call");
        };
        let mname = self.decl(method)?.name.clone();
        match self.instance_of(recv)? {
            Some(Bind::Packet) => self.packet_method(e, &mname, info, args),
            Some(Bind::Extern(id)) => self.extern_method(e, id, &mname, info, args),
            _ => unsupported(e.span, format!("calling method {mname} here")),
        }
    }

    /// What an instance expression (a name) is bound to.
    pub fn instance_of(&self, recv: &ast::Expr) -> R<Option<Bind>> {
        match self.ck.resolutions.get(&recv.id) {
            Some(koi_sema::Resolution::Decl(d)) => Ok(self.lookup(*d).cloned()),
            _ => Ok(None),
        }
    }

    /// `h` as a header reference (for packet operations).
    /// The location an `out` or `inout` argument names; `_` (P4-16 §6.7: a don't-care
    /// argument, its value discarded) gets fresh scratch storage of the parameter's type
    /// `ty`.
    pub fn arg_target(&mut self, a: &ast::Expr, ty: koi_sema::TypeId) -> R<Loc> {
        if matches!(a.kind, ExprKind::DontCare) {
            let l = self.alloc("$dontcare", ty, Alloc::Temp, a.span)?;
            self.invalidate(&l);
            return Ok(l);
        }
        self.lvalue(a)
    }

    pub fn header_ref(&mut self, e: &ast::Expr) -> R<HeaderRef> {
        match self.lvalue(e)? {
            Loc::Header(h, _) => Ok(h),
            _ => unsupported(e.span, "this value as a header"),
        }
    }

    fn apply_call(
        &mut self,
        e: &ast::Expr,
        callee: &ast::Expr,
        callee_ty: koi_sema::TypeId,
        info: &CallInfo,
        args: &[ast::Argument],
    ) -> R<Option<Loc>> {
        let Some(recv) = Self::receiver(callee) else {
            return unsupported(e.span, "this apply call");
        };
        if let Ty::Table { decl, .. } = self.types.get(callee_ty).clone() {
            let t = self.table_id(decl, e.span)?;
            self.body(e.span)?.apply(t);
            return Ok(None);
        }
        match self.instance_of(recv)? {
            Some(Bind::Block(inst)) => {
                self.apply_block(&inst, info, args, e.span)?;
                Ok(None)
            }
            None => {
                let inst = self.direct_instance(recv)?;
                self.apply_block(&inst, info, args, e.span)?;
                Ok(None)
            }
            _ => unsupported(e.span, "applying this value"),
        }
    }

    /// The implicit instance of `C.apply()` on a control or parser type without constructor
    /// parameters (named after the type inside the current block).
    fn direct_instance(&mut self, recv: &ast::Expr) -> R<crate::ctx::BlockInst> {
        let Some(koi_sema::Resolution::Decl(d)) = self.ck.resolutions.get(&recv.id) else {
            return unsupported(recv.span, "applying this value");
        };
        let info = self.decl(*d)?;
        if !matches!(
            info.kind,
            koi_sema::DeclKind::Control | koi_sema::DeclKind::Parser
        ) || !info.ctor_params.is_empty()
        {
            return unsupported(recv.span, "applying this value");
        }
        Ok(crate::ctx::BlockInst {
            decl: *d,
            path: self.qualify(&info.name),
            ctor: Vec::new(),
            subst: koi_sema::Subst::new(),
        })
    }
}
