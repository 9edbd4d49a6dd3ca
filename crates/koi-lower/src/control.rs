//! Block instances: binding a parser or control instance's constructor parameters, parameters
//! and locals; inlining `c.apply(...)` of sub-controls and sub-parsers; lowering the
//! architecture's top-level controls; and actions (one IR action per action declaration and
//! block instance, directionless parameters as control-plane data).

use crate::ctx::{Bind, BlockInst, Flow, Lowerer, R, internal, unsupported};
use crate::loc::{Alloc, Loc};
use crate::names;
use crate::sink::Sink;
use koi_ir::entity::EntityId;
use koi_ir::{Action, ActionId, ActionParam, BodyBuilder, Expr, Role};
use koi_sema::types::Ty;
use koi_sema::{CallInfo, CallTarget, DeclId, Subst};
use koi_syntax::Span;
use koi_syntax::ast::{self, ExprKind};

impl Lowerer<'_> {
    /// The block instance created by the constructor call `info` with `args`, named `path`.
    pub fn block_inst(
        &mut self,
        info: &CallInfo,
        args: &[ast::Argument],
        path: String,
        span: Span,
    ) -> R<BlockInst> {
        let CallTarget::Constructor { decl, .. } = info.target else {
            return internal(span, "not a constructor call");
        };
        let d = self.decl(decl)?;
        let in_package = matches!(d.kind, koi_sema::DeclKind::PackageType);
        let mut subst = Subst::new();
        for (tp, ta) in d.type_params.iter().zip(&info.type_args) {
            let t = self.subst_ty(*ta);
            subst.insert(*tp, t);
        }
        let mut ctor = Vec::new();
        for (i, p) in d.ctor_params.clone().into_iter().enumerate() {
            let Some(a) = Self::arg(info, args, i) else {
                // An omitted argument takes the parameter's default value (an `@optional`
                // parameter without one stays unbound).
                let pd = self.decl(p)?;
                let default = pd.param().and_then(|pi| pi.default);
                let ty = pd.ty;
                if let Some(v) = default.and_then(|n| self.ck.consts.get(&n)).cloned() {
                    let ty = koi_sema::substitute(&mut self.types, ty, &subst);
                    let ty = self.subst_ty(ty);
                    ctor.push((p, Bind::Const(v, ty)));
                }
                continue;
            };
            let pname = self.decl(p)?.name.clone();
            let b = self.ctor_arg(a, &format!("{path}.{pname}"), in_package)?;
            ctor.push((p, b));
        }
        Ok(BlockInst {
            decl,
            path,
            ctor,
            subst,
        })
    }

    /// The binding of a constructor argument: a constant, an instance, or an instance
    /// constructed in place.
    /// Blocks constructed in place as arguments of a package are named after their type, as
    /// p4c names them.
    fn ctor_arg(&mut self, a: &ast::Expr, path: &str, in_package: bool) -> R<Bind> {
        if let Some(v) = self.const_value(a).cloned() {
            let ty = self.ty_of(a)?;
            return Ok(Bind::Const(v, ty));
        }
        if let Some(b) = self.instance_of(a)? {
            return Ok(b);
        }
        if let ExprKind::Call { args, .. } = &a.kind
            && let Some(info) = self.ck.calls.get(&a.id).cloned()
            && let CallTarget::Constructor { ty, .. } = info.target
        {
            if matches!(self.types.get(ty), Ty::Extern(_)) {
                let ext = self.make_extern(path.to_string(), &[], &info, args, a.span)?;
                return Ok(Bind::Extern(self.p.externs.push(ext)));
            }
            let path = match (&info.target, in_package) {
                (CallTarget::Constructor { decl, .. }, true) => self.decl(*decl)?.name.clone(),
                _ => path.to_string(),
            };
            let inst = self.block_inst(&info, args, path, a.span)?;
            return Ok(Bind::Block(Box::new(inst)));
        }
        unsupported(a.span, "this constructor argument")
    }

    /// Enters a block instance: path and substitution set, a frame with its constructor
    /// parameters; returns what to restore.
    pub fn enter_block(&mut self, inst: &BlockInst) -> (String, Subst) {
        let n = self.inst_seq.len() as u32 + 1;
        self.inst_seq.entry(inst.path.clone()).or_insert(n);
        let saved = (
            std::mem::replace(&mut self.path, inst.path.clone()),
            std::mem::replace(&mut self.subst, inst.subst.clone()),
        );
        self.push_frame();
        for (d, b) in &inst.ctor {
            self.bind(*d, b.clone());
        }
        saved
    }

    pub fn leave_block(&mut self, saved: (String, Subst)) {
        self.pop_frame();
        self.path = saved.0;
        self.subst = saved.1;
    }

    /// Binds and initialises the locals of a block instance (in declaration order).
    pub fn block_locals(&mut self, locals: &[ast::Decl]) -> R<()> {
        for l in locals {
            match &l.kind {
                ast::DeclKind::Var { name, init, .. } => {
                    let id = self.decl_of(name)?;
                    let key = (self.path.clone(), id);
                    let loc = match self.locals.get(&key) {
                        Some(loc) => loc.clone(),
                        None => {
                            let ty = self.decl(id)?.ty;
                            let ty = self.subst_ty(ty);
                            let q = self.qualify(&name.name);
                            let loc = self.alloc(&q, ty, Alloc::Local, name.span)?;
                            self.locals.insert(key, loc.clone());
                            loc
                        }
                    };
                    self.init_var(&loc, init.as_ref())?;
                    self.bind(id, Bind::Loc(loc));
                }
                ast::DeclKind::Const { .. } => self.local_decl(l)?,
                ast::DeclKind::Instantiation { name, .. } => {
                    let id = self.decl_of(name)?;
                    if self.removed.instances.contains(&id) {
                        continue;
                    }
                    let b = self.instance_binding(id, l)?;
                    self.bind(id, b);
                }
                ast::DeclKind::ValueSet {
                    name,
                    elem: _,
                    size,
                } => {
                    let id = self.decl_of(name)?;
                    let vs = self.value_set(id, l, size)?;
                    self.bind(id, Bind::ValueSet(vs));
                }
                _ => {}
            }
        }
        Ok(())
    }

    /// The binding of an instance declaration `T(args) name;` in the current scope.
    pub fn instance_binding(&mut self, id: DeclId, d: &ast::Decl) -> R<Bind> {
        let ast::DeclKind::Instantiation { name, args, .. } = &d.kind else {
            return internal(d.span, "not an instantiation");
        };
        let Some(info) = self.ck.instantiations.get(&id).cloned() else {
            return internal(d.span, "instance without constructor call");
        };
        let CallTarget::Constructor { ty, .. } = info.target else {
            return internal(d.span, "not a constructor call");
        };
        if matches!(self.types.get(ty), Ty::Extern(_)) {
            return Ok(Bind::Extern(self.extern_instance(id, d)?));
        }
        let prefix = if self.decl(id)?.parent.is_none() {
            String::new()
        } else {
            self.path.clone()
        };
        let path = names::cp_name(&prefix, &d.annotations, &name.name);
        let inst = self.block_inst(&info, args, path, d.span)?;
        Ok(Bind::Block(Box::new(inst)))
    }

    /// Binds the apply parameters of a block to `binds` (one per parameter).
    pub fn bind_params(&mut self, decl: DeclId, binds: Vec<Bind>) -> R<()> {
        let params = self.decl(decl)?.params.clone();
        for (p, b) in params.into_iter().zip(binds) {
            self.bind(p, b);
        }
        Ok(())
    }

    /// `c.apply(args)` / `p.apply(args)` of a sub-control or sub-parser: inlined, with the
    /// arguments that are plain locations aliased and the others copied in (and, for `out`
    /// and `inout` parameters, copied back after the block). An instance applied more than
    /// once with different arguments ([`Lowerer::shared_params`], controls only: a
    /// sub-parser's states are inlined afresh each time) has every argument copied
    /// into and out of storage of its own, the same at each application: its tables and
    /// actions exist once and read the parameters wherever the first application put them.
    pub fn apply_block(
        &mut self,
        inst: &BlockInst,
        info: &CallInfo,
        args: &[ast::Argument],
        span: Span,
    ) -> R<()> {
        let params = self.params_of(info);
        let shared = self.shared_params.contains(&inst.path);
        let mut binds = Vec::new();
        let mut aliases: Vec<Option<Loc>> = Vec::new();
        let mut written_back = Vec::new();
        for (i, p) in params.iter().enumerate() {
            let Some(a) = Self::arg(info, args, i) else {
                binds.push(self.default_arg(inst.decl, i, p.ty, span)?);
                aliases.push(None);
                continue;
            };
            if let Some(b @ (Bind::Packet | Bind::Extern(_) | Bind::Block(_))) =
                self.instance_of(a)?
            {
                binds.push(b);
                aliases.push(None);
                continue;
            }
            if is_location(a) && !shared {
                aliases.push(Some(self.lvalue(a)?));
                binds.push(Bind::Packet);
                continue;
            }
            let name = format!("{}.{}", inst.path, p.name);
            let stored = shared
                .then(|| self.param_store.get(&(inst.path.clone(), i)).cloned())
                .flatten();
            let tmp = match stored {
                Some(l) => l,
                None => self.alloc(&name, p.ty, Alloc::Temp, a.span)?,
            };
            if shared {
                self.param_store.insert((inst.path.clone(), i), tmp.clone());
            }
            if shared && p.dir == Some(ast::Direction::Out) {
                self.invalidate(&tmp);
            }
            // An `out` or `inout` argument that is not a plain location (a slice) goes
            // through a copy, written back after the block.
            if p.dir.is_some_and(|d| d != ast::Direction::In) {
                let target = self.lvalue(a)?;
                if p.dir == Some(ast::Direction::InOut) {
                    let v = self.value(a)?;
                    self.copy(&tmp, &v, a.span)?;
                }
                written_back.push((target, tmp.clone()));
            } else {
                let v = self.value(a)?;
                self.copy(&tmp, &v, a.span)?;
            }
            binds.push(Bind::Loc(tmp));
            aliases.push(None);
        }
        let mut copies = self.bind_locations(inst, &params, &aliases, &mut binds, span)?;
        copies.extend(written_back);
        let Some(d) = self.idx.decls.get(&inst.decl).copied() else {
            return internal(span, "block declaration not found");
        };
        // A sub-parser's states are inlined afresh at each application, so only controls
        // (whose tables and actions exist once) need their parameters in one place.
        if matches!(d.kind, ast::DeclKind::Control { .. }) {
            self.note_binding(inst, &binds);
        }
        let n = self.flow.exit_copies.len();
        self.flow.exit_copies.extend(copies.iter().cloned());
        let r = match &d.kind {
            ast::DeclKind::Control { locals, body, .. } => {
                let saved = self.enter_block(inst);
                let r = self.inline_control(inst.decl, binds, locals, body);
                self.leave_block(saved);
                r
            }
            ast::DeclKind::Parser { .. } => self.inline_parser(inst, binds, d, span),
            _ => unsupported(span, "applying this block"),
        };
        self.flow.exit_copies.truncate(n);
        r?;
        for (dst, src) in &copies {
            self.copy(dst, src, span)?;
        }
        Ok(())
    }

    /// Remembers what `inst`'s parameters are bound to at its first application; a later
    /// application that binds them differently puts the instance in [`Lowerer::rebind`].
    fn note_binding(&mut self, inst: &BlockInst, binds: &[Bind]) {
        let now: Vec<Option<Loc>> = binds
            .iter()
            .map(|b| match b {
                Bind::Loc(l) => Some(l.clone()),
                _ => None,
            })
            .collect();
        match self.param_binds.get(&inst.path) {
            Some(first) if *first != now => {
                self.rebind.insert(inst.path.clone());
            }
            Some(_) => {}
            None => {
                self.param_binds.insert(inst.path.clone(), now);
            }
        }
    }

    /// Binds the arguments that are locations: aliased, unless they overlap another argument
    /// (then copied in and out, as P4 specifies). Returns the copy-outs `(argument, copy)`.
    fn bind_locations(
        &mut self,
        inst: &BlockInst,
        params: &[koi_sema::types::ParamTy],
        aliases: &[Option<Loc>],
        binds: &mut [Bind],
        span: Span,
    ) -> R<Vec<(Loc, Loc)>> {
        let prints: Vec<Vec<koi_ir::SlotId>> = aliases
            .iter()
            .map(|a| a.as_ref().map(|l| self.footprint(l)).unwrap_or_default())
            .collect();
        let overlaps = |i: usize| {
            (0..prints.len()).any(|j| j != i && prints[i].iter().any(|s| prints[j].contains(s)))
        };
        let mut copies = Vec::new();
        for (i, (p, a)) in params.iter().zip(aliases).enumerate() {
            let Some(l) = a else { continue };
            let out = p.dir == Some(ast::Direction::Out);
            if !overlaps(i) {
                if out {
                    self.invalidate(l);
                }
                binds[i] = Bind::Loc(l.clone());
                continue;
            }
            let name = format!("{}.{}", inst.path, p.name);
            let tmp = self.alloc(&name, p.ty, Alloc::Temp, span)?;
            if out {
                self.invalidate(&tmp);
            } else {
                self.copy(&tmp, l, span)?;
            }
            if p.dir.is_some_and(|d| d != ast::Direction::In) {
                copies.push((l.clone(), tmp.clone()));
            }
            binds[i] = Bind::Loc(tmp);
        }
        Ok(copies)
    }

    /// The default value of apply parameter `i` of block `decl`.
    fn default_arg(&mut self, decl: DeclId, i: usize, ty: koi_sema::TypeId, span: Span) -> R<Bind> {
        let params = self.decl(decl)?.params.clone();
        let default = match params.get(i) {
            Some(p) => self.decl(*p)?.param().and_then(|pi| pi.default),
            None => None,
        };
        match default.and_then(|n| self.ck.consts.get(&n)).cloned() {
            Some(v) => Ok(Bind::Loc(self.const_loc(&v, ty, span)?)),
            None => unsupported(
                span,
                "omitted arguments of apply without a constant default",
            ),
        }
    }

    fn inline_control(
        &mut self,
        decl: DeclId,
        binds: Vec<Bind>,
        locals: &[ast::Decl],
        body: &ast::Block,
    ) -> R<()> {
        self.bind_params(decl, binds)?;
        self.block_locals(locals)?;
        self.inline_body(body, &[], None)
    }

    /// Lowers a top-level control instance bound to `role`.
    pub fn lower_control(&mut self, inst: &BlockInst, binds: Vec<Bind>, role: Role) -> R<()> {
        let Some(d) = self.idx.decls.get(&inst.decl).copied() else {
            return internal(Span::DUMMY, "control declaration not found");
        };
        let ast::DeclKind::Control { locals, body, .. } = &d.kind else {
            return unsupported(d.span, "this block as a control");
        };
        self.sink = Sink::Body(BodyBuilder::new());
        self.flow = Flow::default();
        let saved = self.enter_block(inst);
        let r = self
            .bind_params(inst.decl, binds)
            .and_then(|_| self.block_locals(locals))
            .and_then(|_| self.block(body));
        self.leave_block(saved);
        r?;
        let Sink::Body(b) = std::mem::take(&mut self.sink) else {
            return internal(d.span, "lost the control body");
        };
        self.p.add_control(&inst.path, b.finish(), Some(role));
        Ok(())
    }

    /// The IR action for action declaration `d` in the current block instance; `bound` are
    /// the locations of its directional parameters (bound in a table's action list).
    pub fn action_id(&mut self, d: DeclId, bound: &[Loc], span: Span) -> R<ActionId> {
        self.ref_pos = span.lo;
        self.action_in(d, bound, None, span)
    }

    /// [`Lowerer::action_id`] for a table named `context`, whose name qualifies a second
    /// specialisation of the action.
    pub fn action_in(
        &mut self,
        d: DeclId,
        bound: &[Loc],
        context: Option<&str>,
        span: Span,
    ) -> R<ActionId> {
        let top = self.decl(d)?.parent.is_none();
        let prefix = if top {
            String::new()
        } else {
            self.path.clone()
        };
        let akey = (prefix.clone(), d);
        if let Some(a) = self.actions.get(&akey).and_then(|v| {
            v.iter()
                .find(|(b, _)| b.as_slice() == bound)
                .map(|(_, a)| *a)
        }) {
            if top {
                // A top-level action is listed where it is first referenced in the earliest
                // instance that uses it (p4c copies it into every block using it; the first
                // copy wins), not where lowering happened to create it.
                let seq = self.inst_seq.get(&self.path).copied().unwrap_or(0);
                if let Some(k) = self.action_keys.get_mut(a.index() as usize) {
                    *k = (*k).min((seq, 0, self.ref_pos, k.3));
                }
            }
            return Ok(a);
        }
        let Some(ad) = self.idx.decls.get(&d).copied() else {
            return internal(span, "action declaration not found");
        };
        let ast::DeclKind::Action { name, params, body } = &ad.kind else {
            return internal(span, "not an action");
        };
        let mut cp = names::cp_name(&prefix, &ad.annotations, &name.name);
        // The control plane knows every specialisation by the source action's name.
        let mut cp_name = None;
        if self.p.action_by_name(&cp).is_some() {
            cp_name = Some(cp.clone());
            // Another binding of the directional parameters in another table: the name must
            // stay unique; it still ends with the action's name.
            cp = match context {
                Some(t) => format!("{t}.{}", name.name),
                None => (1..)
                    .map(|k| format!("{cp}_{k}"))
                    .find(|n| self.p.action_by_name(n).is_none())
                    .unwrap_or_default(),
            };
        }
        let saved_sink = std::mem::replace(&mut self.sink, Sink::Body(BodyBuilder::new()));
        let saved_flow = std::mem::take(&mut self.flow);
        let saved_in = std::mem::replace(&mut self.in_action, true);
        self.push_frame();
        let r = self.action_params(d, params, bound).and_then(|ps| {
            self.block(body)?;
            Ok(ps)
        });
        self.pop_frame();
        self.in_action = saved_in;
        self.flow = saved_flow;
        let sink = std::mem::replace(&mut self.sink, saved_sink);
        let ps = r?;
        let Sink::Body(b) = sink else {
            return internal(span, "lost the action body");
        };
        let mut action = Action::new(&cp, ps, vec![]);
        action.preamble = names::preamble(cp, &ad.annotations);
        action.body = b.finish();
        action.cp_name = cp_name;
        let n = self.action_keys.len();
        let key = if top {
            let seq = self.inst_seq.get(&self.path).copied().unwrap_or(0);
            (seq, 0, self.ref_pos, n as u32)
        } else {
            self.order_key(&prefix, self.decl(d)?.span.lo, n)
        };
        self.action_keys.push(key);
        let id = self.p.actions.push(action);
        self.actions
            .entry(akey)
            .or_default()
            .push((bound.to_vec(), id));
        Ok(id)
    }

    /// Binds an action's parameters: directionless ones to `Param(i)`, the others to `bound`.
    fn action_params(
        &mut self,
        d: DeclId,
        params: &[ast::Param],
        bound: &[Loc],
    ) -> R<Vec<ActionParam>> {
        let decls = self.decl(d)?.params.clone();
        let mut out = Vec::new();
        let mut bound = bound.iter();
        for (pd, ap) in decls.into_iter().zip(params) {
            let ty = self.decl(pd)?.ty;
            let ty = self.subst_ty(ty);
            if ap.direction.is_some() {
                let Some(l) = bound.next() else {
                    return unsupported(ap.span, "an action with unbound directional parameters");
                };
                self.bind(pd, Bind::Loc(l.clone()));
                continue;
            }
            let s = self.scalar_or(ty, ap.span)?;
            let i = out.len() as u32;
            out.push(ActionParam {
                name: names::name_annotation(&ap.annotations)
                    .unwrap_or_else(|| ap.name.name.clone()),
                ty: s.ty,
                signed: s.signed,
                type_name: self.type_name(ty, ap.span)?,
                id: names::int_annotation(&ap.annotations, "id").map(|v| v as u32),
                annotations: names::annotations(&ap.annotations),
            });
            self.bind(pd, Bind::Loc(Loc::Value(Expr::Param(i), s)));
        }
        Ok(out)
    }
}

/// Whether an argument is a plain location (a name, field, constant index or slice of one).
pub fn is_location(e: &ast::Expr) -> bool {
    match &e.kind {
        ExprKind::Path(_) => true,
        ExprKind::Member(b, _) => is_location(b),
        ExprKind::Index(b, i) => is_location(b) && matches!(i.kind, ExprKind::Int(_)),
        _ => false,
    }
}
