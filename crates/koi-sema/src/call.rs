//! Call expressions: functions, extern functions, actions, extern methods, `apply` of parsers,
//! controls and tables, and built-in methods of headers, unions, stacks and types. Where a call
//! may be made (the spec's table of run-time calls) is checked here too.

use crate::args::{ArgMode, Sig};
use crate::checked::{Builtin, CallInfo, CallTarget, Resolution};
use crate::checker::{Checker, Place};
use crate::decls::{DeclId, DeclKind};
use crate::generics::Subst;
use crate::types::{AggKind, BlockTy, Ty, TypeId};
use crate::value::Value;
use koi_syntax::ast::{Argument, Expr, ExprKind, Ident, Path, Type};
use num_bigint::BigInt;

impl Checker<'_> {
    pub fn check_call(
        &mut self,
        e: &Expr,
        callee: &Expr,
        type_args: &[Type],
        args: &[Argument],
    ) -> TypeId {
        let t = self.check_call_kind(e, callee, type_args, args);
        let is_ctor = matches!(
            self.out.calls.get(&e.id).map(|c| &c.target),
            Some(CallTarget::Constructor { .. })
        );
        if !is_ctor
            && matches!(
                self.ty(t),
                Ty::Parser(_) | Ty::Control(_) | Ty::Package(_) | Ty::Table { .. }
            )
        {
            let s = self.show(t);
            self.error(e.span, format!("illegal return type {s}"));
            return TypeId::ERROR;
        }
        if is_ctor && self.cx.place == Place::Action {
            // p4c's ValidateParsedProgram: no object is constructed by an action.
            self.error(e.span, "Constructor calls not allowed in actions");
            return TypeId::ERROR;
        }
        if matches!(self.ty(t), Ty::Extern(_)) {
            if !is_ctor
                && !args
                    .iter()
                    .all(|a| matches!(a.value.kind, ExprKind::DontCare) || self.is_ctk(&a.value))
            {
                // Only factories evaluated at compile time may return extern objects.
                let s = self.show(t);
                self.error(e.span, format!("illegal return type {s}"));
                return TypeId::ERROR;
            }
            self.set_ctk(e);
        }
        t
    }

    fn check_call_kind(
        &mut self,
        e: &Expr,
        callee: &Expr,
        type_args: &[Type],
        args: &[Argument],
    ) -> TypeId {
        match &callee.kind {
            ExprKind::Member(base, name) => {
                self.check_method_call(e, callee, base, name, type_args, args)
            }
            ExprKind::Path(p) => self.check_path_call(e, callee, p, type_args, args),
            ExprKind::TypeRef(t) => {
                let ct = self.check_expr(callee);
                match self.ty(ct).clone() {
                    Ty::TypeName(inner) => {
                        self.check_constructor_of_type(e, inner, t.span, args, true)
                    }
                    _ => TypeId::ERROR,
                }
            }
            ExprKind::Call { .. } => {
                self.check_expr(callee);
                self.error(e.span, "Cannot invoke the result of a call");
                TypeId::ERROR
            }
            _ => {
                let t = self.check_expr(callee);
                if !self.is_err(t) {
                    self.error(callee.span, "this expression is not a method");
                }
                self.check_args_loosely(args);
                TypeId::ERROR
            }
        }
    }

    /// Checks arguments of a call that could not be resolved (for their own diagnostics).
    pub fn check_args_loosely(&mut self, args: &[Argument]) {
        for a in args {
            if !matches!(a.value.kind, ExprKind::DontCare | ExprKind::Dots) {
                self.check_expr(&a.value);
            }
        }
    }

    fn check_path_call(
        &mut self,
        e: &Expr,
        callee: &Expr,
        p: &Path,
        type_args: &[Type],
        args: &[Argument],
    ) -> TypeId {
        let found: Vec<DeclId> = self.lookup_path(p).to_vec();
        let Some(&first) = found.first() else {
            self.report_not_found(&p.name.name, p.span);
            self.check_args_loosely(args);
            return TypeId::ERROR;
        };
        let kind = self.decl_kind(first).cloned();
        match kind {
            Some(DeclKind::Function | DeclKind::ExternFunction) => {
                self.call_function(e, callee, &found, type_args, args)
            }
            Some(DeclKind::Action) => self.call_action(e, callee, first, type_args, args),
            Some(k) if k.is_type() => {
                self.resolve_to(callee, Resolution::Decl(first));
                let ty = self.decl_ty(first);
                self.check_constructor_of_type(e, ty, p.span, args, true)
            }
            _ => {
                let what = self.decl(first).map(|d| d.kind.describe()).unwrap_or("");
                self.error(
                    callee.span,
                    format!("{}: a {what} cannot be called", p.name.name),
                );
                self.check_args_loosely(args);
                TypeId::ERROR
            }
        }
    }

    fn call_function(
        &mut self,
        e: &Expr,
        callee: &Expr,
        found: &[DeclId],
        type_args: &[Type],
        args: &[Argument],
    ) -> TypeId {
        let fns: Vec<DeclId> = found
            .iter()
            .copied()
            .filter(|d| {
                matches!(
                    self.decl_kind(*d),
                    Some(DeclKind::Function | DeclKind::ExternFunction)
                )
            })
            .collect();
        let cands: Vec<(DeclId, Sig)> = fns
            .into_iter()
            .map(|d| (d, self.sig_of(d, &Subst::new(), false)))
            .collect();
        let name = self.decl_name(found[0]);
        let Some((d, sig, map)) = self.resolve_overload(&cands, args, e.span, &name) else {
            self.check_args_loosely(args);
            return TypeId::ERROR;
        };
        self.resolve_to(callee, Resolution::Decl(d));
        let is_extern = matches!(self.decl_kind(d), Some(DeclKind::ExternFunction));
        let returns_extern = matches!(self.ty(sig.ret), Ty::Extern(_));
        if self.cx.place == Place::TopLevel && name != "static_assert" && !returns_extern {
            self.error(
                e.span,
                format!("{name}: functions cannot be called at the top level"),
            );
        }
        if is_extern && name == "verify" && !self.cx.in_parser() {
            self.error(e.span, "verify: may only be invoked in parsers");
        }
        let target = if is_extern {
            CallTarget::ExternFunction(d)
        } else {
            CallTarget::Function(d)
        };
        let ret = self.check_call_args(e, target, &sig, &map, args, type_args, ArgMode::Call);
        // As p4c: a call is compile-time known when its arguments are and it is a factory
        // (returns an extern object), `static_assert` or a `@pure` function.
        if is_extern
            && (returns_extern || name == "static_assert" || self.pure_functions.contains(&d))
            && args.iter().all(|a| self.is_ctk(&a.value))
        {
            self.set_ctk(e);
        }
        if is_extern && name == "static_assert" {
            self.static_assert(e, args);
        }
        self.set_type(callee, ret);
        ret
    }

    fn static_assert(&mut self, e: &Expr, args: &[Argument]) {
        let Some(cond) = args.first() else { return };
        match self.const_of(&cond.value).and_then(Value::as_bool) {
            Some(true) => self.set_const(e, Value::Bool(true)),
            Some(false) => {
                let msg = args
                    .get(1)
                    .and_then(|a| match self.const_of(&a.value) {
                        Some(Value::Str(s)) => Some(s.clone()),
                        _ => None,
                    })
                    .unwrap_or_else(|| "static assertion failed".to_string());
                self.error(e.span, format!("static_assert: {msg}"));
            }
            None => self.error(
                cond.value.span,
                "static_assert: the condition must be a compile-time constant",
            ),
        }
    }

    fn call_action(
        &mut self,
        e: &Expr,
        callee: &Expr,
        d: DeclId,
        type_args: &[Type],
        args: &[Argument],
    ) -> TypeId {
        self.resolve_to(callee, Resolution::Decl(d));
        let name = self.decl_name(d);
        if let Some(t) = type_args.first() {
            self.error(
                t.span,
                format!("{name}: Cannot supply type parameters for an action invocation"),
            );
            return TypeId::ERROR;
        }
        let bad = match self.cx.place {
            Place::ParserTop | Place::ParserState => {
                Some("Action calls are not allowed within parsers")
            }
            Place::Function | Place::MethodImpl => Some("Functions cannot call actions"),
            Place::TopLevel | Place::ControlTop => Some("actions cannot be called here"),
            Place::ControlApply | Place::Action => None,
        };
        if let Some(msg) = bad {
            self.error(e.span, format!("{name}(): {msg}"));
        }
        let sig = self.sig_of(d, &Subst::new(), false);
        let Some(map) = self.match_args(&sig, args, e.span, true) else {
            self.check_args_loosely(args);
            return TypeId::ERROR;
        };
        self.check_call_args(
            e,
            CallTarget::Action(d),
            &sig,
            &map,
            args,
            &[],
            ArgMode::Call,
        );
        self.set_type(callee, TypeId::VOID);
        TypeId::VOID
    }

    fn check_method_call(
        &mut self,
        e: &Expr,
        callee: &Expr,
        base: &Expr,
        name: &Ident,
        type_args: &[Type],
        args: &[Argument],
    ) -> TypeId {
        let bt = self.check_expr(base);
        if self.is_err(bt) {
            self.check_args_loosely(args);
            return TypeId::ERROR;
        }
        self.resolve_to(callee, Resolution::Method);
        let ret = match self.ty(bt).clone() {
            Ty::Extern(n) => self.call_extern_method(e, bt, n.decl, &n.args, name, type_args, args),
            Ty::Parser(b) | Ty::Control(b) if name.name == "apply" => {
                self.call_block_apply(e, bt, &b, args)
            }
            Ty::Table { .. } if name.name == "apply" => self.call_table_apply(e, bt, args),
            Ty::TypeName(t) if name.name == "apply" && self.directly_invocable(t) => {
                match self.ty(t).clone() {
                    Ty::Parser(b) | Ty::Control(b) => self.call_block_apply(e, t, &b, args),
                    _ => TypeId::ERROR,
                }
            }
            _ => match Builtin::from_name(&name.name) {
                Some(b) => self.call_builtin(e, base, bt, b, name, type_args, args),
                None => {
                    self.error(
                        name.span,
                        format!(
                            "{}: no such method on a value of type {}",
                            name.name,
                            self.show(bt)
                        ),
                    );
                    self.check_args_loosely(args);
                    TypeId::ERROR
                }
            },
        };
        self.set_type(callee, ret);
        ret
    }

    /// A parser or control declaration without constructor parameters may be applied by its
    /// type name (direct type invocation).
    fn directly_invocable(&self, t: TypeId) -> bool {
        let d = match self.ty(t) {
            Ty::Parser(b) | Ty::Control(b) => b.decl,
            _ => return false,
        };
        self.decl(d).is_some_and(|i| {
            matches!(i.kind, DeclKind::Parser | DeclKind::Control)
                && i.ctor_params.is_empty()
                && i.type_params.is_empty()
        })
    }

    #[allow(clippy::too_many_arguments)]
    fn call_extern_method(
        &mut self,
        e: &Expr,
        ext_ty: TypeId,
        ext: DeclId,
        ext_args: &[TypeId],
        name: &Ident,
        type_args: &[Type],
        args: &[Argument],
    ) -> TypeId {
        let Some(info) = self.decl(ext).cloned() else {
            return TypeId::ERROR;
        };
        let subst: Subst = info
            .type_params
            .iter()
            .copied()
            .zip(ext_args.iter().copied())
            .collect();
        let ms: Vec<DeclId> = info
            .members
            .iter()
            .copied()
            .filter(|m| {
                self.decl(*m)
                    .is_some_and(|d| d.name == name.name && d.ret.is_some())
            })
            .collect();
        let cands: Vec<(DeclId, Sig)> = ms
            .into_iter()
            .map(|m| (m, self.sig_of(m, &subst, false)))
            .collect();
        if cands.is_empty() {
            self.error(
                name.span,
                format!(
                    "{}: extern {} has no method {}",
                    name.name, info.name, name.name
                ),
            );
            self.check_args_loosely(args);
            return TypeId::ERROR;
        }
        let what = format!("{}.{}", info.name, name.name);
        let Some((m, sig, map)) = self.resolve_overload(&cands, args, e.span, &what) else {
            self.check_args_loosely(args);
            return TypeId::ERROR;
        };
        if self.cx.place == Place::TopLevel {
            self.error(
                e.span,
                format!("{what}: extern methods cannot be called at the top level"),
            );
        }
        let target = CallTarget::Method {
            extern_ty: ext_ty,
            method: m,
        };
        let ret = self.check_call_args(e, target, &sig, &map, args, type_args, ArgMode::Call);
        self.check_packet_method(e, &info.name, &name.name, args);
        ret
    }

    /// The checks p4c applies to the core library's packet methods.
    fn check_packet_method(&mut self, e: &Expr, ext: &str, method: &str, args: &[Argument]) {
        let type_arg = self
            .out
            .calls
            .get(&e.id)
            .and_then(|c| c.type_args.first().copied());
        let Some(t) = type_arg else { return };
        if self.is_err(t) || matches!(self.ty(t), Ty::Var { .. } | Ty::DontCare) {
            return;
        }
        match (ext, method) {
            ("packet_in", "extract") if !self.out.types.is_header(t) => {
                let span = args.first().map(|a| a.value.span).unwrap_or(e.span);
                self.error(
                    span,
                    format!("extract: argument must be a header, not {}", self.show(t)),
                );
            }
            ("packet_in", "extract") => {
                // As p4c: the one-argument form reads a fixed-size header, the two-argument
                // form a header with a varbit field.
                let varbits = self.check_one_varbit(t);
                let span = args.first().map(|a| a.value.span).unwrap_or(e.span);
                if args.len() == 1 && varbits > 0 {
                    self.error(span, "extract: argument cannot contain varbit fields");
                } else if args.len() == 2 && varbits == 0 {
                    self.error(span, "extract: argument should contain a varbit field");
                }
            }
            ("packet_out", "emit") if !self.emittable(t, 0) => {
                self.error(
                    e.span,
                    format!(
                        "emit: argument must be a header, stack or union, or a struct or tuple of such types, not {}",
                        self.show(t)
                    ),
                );
            }
            ("packet_in", "lookahead") if self.check_one_varbit(t) > 1 => {}
            ("packet_in", "lookahead") if self.has_union(t) => {
                self.error(
                    e.span,
                    format!("{}: type argument must be a fixed-width type", self.show(t)),
                );
            }
            ("packet_in", "lookahead") if self.out.types.width(t).is_none() => {
                self.error(
                    e.span,
                    format!("{}: illegal type argument for 'lookahead'", self.show(t)),
                );
            }
            _ => {}
        }
    }

    /// The number of varbit fields of the header, struct or union `t`, reporting (once per
    /// declaration, at its first varbit field as p4c does) one with more than one: the length
    /// `extract` is given can size only one field.
    fn check_one_varbit(&mut self, t: TypeId) -> usize {
        let Some(a) = self.out.types.agg(t) else {
            return 0;
        };
        let varbit: Vec<usize> = a
            .fields
            .iter()
            .enumerate()
            .filter(|(_, f)| matches!(self.ty(f.ty), Ty::Varbit(_)))
            .map(|(i, _)| i)
            .collect();
        let (decl, names) = (
            a.decl,
            varbit
                .iter()
                .map(|i| a.fields[*i].name.clone())
                .collect::<Vec<_>>(),
        );
        if varbit.len() > 1 && self.multi_varbit_reported.insert(decl) {
            let spans = self.field_spans.get(&decl);
            let at = |i: usize| spans.and_then(|s| s.get(i)).copied();
            if let (Some(first), Some(second)) = (at(varbit[0]), at(varbit[1])) {
                self.error_note(
                    first,
                    format!(
                        "{} and {}: multiple varbit fields in a header",
                        names[0], names[1]
                    ),
                    second,
                    "second varbit field",
                );
            }
        }
        varbit.len()
    }

    /// True for a header union, or a stack or tuple of them (p4c's `hasVarbitsOrUnions`, which
    /// does not look into struct fields): `lookahead` cannot read one.
    fn has_union(&self, t: TypeId) -> bool {
        match self.ty(t) {
            Ty::Agg(a) => a.kind == AggKind::HeaderUnion,
            Ty::Stack { elem, .. } => self.has_union(*elem),
            Ty::Tuple(ts) => ts.iter().any(|t| self.has_union(*t)),
            _ => false,
        }
    }

    /// What `packet_out.emit` takes (p4c's `checkEmitType`): headers, stacks and unions, and
    /// structs and tuples of them.
    fn emittable(&self, t: TypeId, depth: u32) -> bool {
        if depth > crate::checker::MAX_DEPTH {
            return true;
        }
        match self.ty(t) {
            Ty::Agg(a) if a.kind == AggKind::Struct => {
                a.fields.iter().all(|f| self.emittable(f.ty, depth + 1))
            }
            Ty::Agg(_) | Ty::Stack { .. } | Ty::Error | Ty::Var { .. } | Ty::DontCare => true,
            Ty::Tuple(ts) => ts.iter().all(|t| self.emittable(*t, depth + 1)),
            Ty::List(t) => self.emittable(*t, depth + 1),
            _ => false,
        }
    }

    fn call_block_apply(&mut self, e: &Expr, bt: TypeId, b: &BlockTy, args: &[Argument]) -> TypeId {
        let is_parser = matches!(self.ty(bt), Ty::Parser(_));
        let bad = match self.cx.place {
            Place::Action => Some("apply cannot be called from actions"),
            Place::ParserState if is_parser => None,
            Place::ControlApply if !is_parser => None,
            _ if is_parser => Some("parsers can only be applied in parser states"),
            _ => Some("controls can only be applied in control apply blocks"),
        };
        if let Some(msg) = bad {
            self.error(e.span, format!("{}.apply(): {msg}", b.name));
        }
        let subst = self.extern_subst(b.decl, &b.args);
        let mut sig = self.sig_of(b.decl, &subst, false);
        sig.name = format!("{}.apply", b.name);
        sig.type_params = Vec::new();
        sig.ret = TypeId::VOID;
        if sig.params.len() != b.params.len() {
            sig.params = b
                .params
                .iter()
                .map(|p| crate::args::SigParam {
                    name: p.name.clone(),
                    dir: p.dir,
                    ty: p.ty,
                    has_default: false,
                    optional: false,
                    span: e.span,
                })
                .collect();
        } else {
            for (sp, bp) in sig.params.iter_mut().zip(&b.params) {
                sp.ty = bp.ty;
            }
        }
        let Some(map) = self.match_args(&sig, args, e.span, true) else {
            self.check_args_loosely(args);
            return TypeId::ERROR;
        };
        self.check_call_args(
            e,
            CallTarget::Apply { callee_ty: bt },
            &sig,
            &map,
            args,
            &[],
            ArgMode::Call,
        );
        TypeId::VOID
    }

    fn call_table_apply(&mut self, e: &Expr, bt: TypeId, args: &[Argument]) -> TypeId {
        let Ty::Table { decl, name } = self.ty(bt).clone() else {
            return TypeId::ERROR;
        };
        match self.cx.place {
            Place::ControlApply | Place::ControlTop => {}
            Place::Action => self.error(
                e.span,
                format!("{name}.apply(): apply cannot be called from actions"),
            ),
            _ => self.error(
                e.span,
                format!("{name}.apply(): tables can only be applied in control apply blocks"),
            ),
        }
        if self.in_action_list_args {
            // As p4c: an action list's arguments are evaluated with the table's action, after
            // the lookup; applying a table there is not supported.
            self.error(
                e.span,
                format!("{name}.apply: table invocation in action argument"),
            );
        }
        if let Some(a) = args.first() {
            self.error(a.span, format!("{name}.apply(): tables take no arguments"));
        }
        self.out.calls.insert(
            e.id,
            CallInfo {
                target: CallTarget::Apply { callee_ty: bt },
                type_args: Vec::new(),
                params: Vec::new(),
                arg_of_param: Vec::new(),
            },
        );
        self.intern(Ty::TableResult { table: decl })
    }

    #[allow(clippy::too_many_arguments)]
    fn call_builtin(
        &mut self,
        e: &Expr,
        base: &Expr,
        bt: TypeId,
        b: Builtin,
        name: &Ident,
        type_args: &[Type],
        args: &[Argument],
    ) -> TypeId {
        if let Some(t) = type_args.first() {
            self.error(
                t.span,
                format!("{}: built-in methods take no type arguments", name.name),
            );
            return TypeId::ERROR;
        }
        let recv = match self.ty(bt) {
            Ty::TypeName(t) => *t,
            _ => bt,
        };
        let is_type = recv != bt;
        let ret = if b.is_size() {
            self.builtin_size(e, recv, b, name)
        } else {
            let r = if is_type {
                TypeId::ERROR
            } else {
                self.builtin_validity(base, recv, b)
            };
            if self.is_err(r) {
                self.error(
                    name.span,
                    format!("{}: not a method of {}", name.name, self.show(bt)),
                );
            }
            r
        };
        if self.is_err(ret) {
            return TypeId::ERROR;
        }
        let expected_args = usize::from(matches!(b, Builtin::PushFront | Builtin::PopFront));
        if args.len() != expected_args {
            self.error(
                e.span,
                format!(
                    "{}: expected {expected_args} arguments, found {}",
                    name.name,
                    args.len()
                ),
            );
            return TypeId::ERROR;
        }
        if let Some(a) = args.first() {
            if a.name.is_some() {
                self.error(
                    a.span,
                    format!(
                        "{}: arguments of built-in methods cannot be named",
                        name.name
                    ),
                );
            }
            if let Some(n) = self.const_int(&a.value, "the count of push_front/pop_front")
                && n.sign() == num_bigint::Sign::Minus
            {
                // The spec: "a compile-time known value that is a positive integer".
                self.error(
                    a.value.span,
                    format!("{n}: the count of {} must be a positive integer", name.name),
                );
            }
        }
        self.out.calls.insert(
            e.id,
            CallInfo {
                target: CallTarget::Builtin(b),
                type_args: Vec::new(),
                params: Vec::new(),
                arg_of_param: (0..expected_args).map(Some).collect(),
            },
        );
        ret
    }

    /// `isValid`, `setValid`, `setInvalid`, `push_front`, `pop_front`.
    fn builtin_validity(&mut self, base: &Expr, recv: TypeId, b: Builtin) -> TypeId {
        match (b, self.ty(recv)) {
            (Builtin::IsValid, Ty::Agg(a)) if a.kind != AggKind::Struct => TypeId::BOOL,
            (Builtin::SetValid | Builtin::SetInvalid, Ty::Agg(a)) if a.kind == AggKind::Header => {
                self.require_lvalue_receiver(base);
                TypeId::VOID
            }
            (Builtin::PushFront | Builtin::PopFront, Ty::Stack { elem, .. })
                if self.out.types.is_header_like(*elem) =>
            {
                if self.cx.in_parser() {
                    self.error(
                        base.span,
                        "'push_front' and 'pop_front' for stacks cannot be used in a parser",
                    );
                }
                self.require_lvalue_receiver(base);
                TypeId::VOID
            }
            _ => TypeId::ERROR,
        }
    }

    fn require_lvalue_receiver(&mut self, base: &Expr) {
        if !self.is_lvalue(base) {
            self.error(base.span, "the receiver of this method must be an l-value");
        }
    }

    /// `minSizeInBits()` and friends: compile-time known unless the type is generic.
    fn builtin_size(&mut self, e: &Expr, t: TypeId, b: Builtin, name: &Ident) -> TypeId {
        if self.out.types.has_vars(t) {
            self.set_ctk(e);
            return TypeId::INF_INT;
        }
        let Some((lo, hi)) = self.out.types.size_range(t) else {
            self.error(
                name.span,
                format!("{}: not defined for type {}", name.name, self.show(t)),
            );
            return TypeId::ERROR;
        };
        let bits = match b {
            Builtin::MinSizeInBits | Builtin::MinSizeInBytes => lo,
            Builtin::MaxSizeInBits | Builtin::MaxSizeInBytes => hi,
            _ => {
                if lo != hi {
                    self.error(
                        name.span,
                        format!("{}: type {} has no fixed size", name.name, self.show(t)),
                    );
                    return TypeId::ERROR;
                }
                lo
            }
        };
        let v = match b {
            Builtin::MinSizeInBytes | Builtin::MaxSizeInBytes | Builtin::SizeInBytes => {
                bits.div_ceil(8)
            }
            _ => bits,
        };
        self.set_const(e, Value::Int(BigInt::from(v)));
        TypeId::INF_INT
    }
}
