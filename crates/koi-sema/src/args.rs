//! Calling conventions: signatures of callables, matching of positional and named arguments to
//! parameters (defaults and `@optional` parameters included), overload resolution by argument
//! count and names, type inference of generic callees, and the direction rules of arguments
//! (`out`/`inout` arguments must be l-values, `_` only for `out`).

use crate::checked::{CallInfo, CallTarget};
use crate::checker::Checker;
use crate::decls::{DeclId, DeclKind};
use crate::generics::{Infer, Subst, substitute};
use crate::types::{Dir, ParamTy, Ty, TypeId};
use koi_syntax::Span;
use koi_syntax::ast::{Argument, Direction, Expr, ExprKind, Type};
use std::collections::HashSet;

/// One parameter of a callee.
#[derive(Clone, Debug)]
pub struct SigParam {
    pub name: String,
    pub dir: Dir,
    pub ty: TypeId,
    pub has_default: bool,
    pub optional: bool,
    pub span: Span,
}

/// What a call needs to know about its callee.
#[derive(Clone, Debug)]
pub struct Sig {
    pub name: String,
    pub params: Vec<SigParam>,
    pub type_params: Vec<DeclId>,
    pub ret: TypeId,
    /// Arguments must be compile-time known (constructor calls).
    pub ctk_args: bool,
}

/// How the arguments of one call are checked.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ArgMode {
    /// Ordinary calls.
    Call,
    /// Constructor calls: every argument must be compile-time known.
    Constructor,
}

impl Checker<'_> {
    /// The signature of a callable declaration; `subst` specialises the types (the type
    /// arguments of an extern instance for its methods). Constructor parameters are used for
    /// packages, parsers and controls when `ctor` is true.
    pub fn sig_of(&mut self, d: DeclId, subst: &Subst, ctor: bool) -> Sig {
        let Some(info) = self.decl(d).cloned() else {
            return Sig {
                name: String::new(),
                params: Vec::new(),
                type_params: Vec::new(),
                ret: TypeId::ERROR,
                ctk_args: ctor,
            };
        };
        let ids = if ctor && !matches!(info.kind, DeclKind::Method { .. }) {
            &info.ctor_params
        } else {
            &info.params
        };
        let mut params = Vec::with_capacity(ids.len());
        for p in ids {
            let Some(pi) = self.decl(*p).cloned() else {
                continue;
            };
            let (dir, optional, has_default) = pi
                .param()
                .map(|x| (x.dir, x.optional, x.default.is_some()))
                .unwrap_or((None, false, false));
            params.push(SigParam {
                name: pi.name.clone(),
                dir,
                ty: substitute(&mut self.out.types, pi.ty, subst),
                has_default,
                optional,
                span: pi.span,
            });
        }
        let ret = info.ret.unwrap_or(TypeId::VOID);
        Sig {
            name: info.name.clone(),
            params,
            type_params: info.type_params.clone(),
            ret: substitute(&mut self.out.types, ret, subst),
            ctk_args: ctor,
        }
    }

    /// Binds arguments to parameters. Reports problems when `report` is true; returns `None`
    /// when the arguments do not fit the signature.
    pub fn match_args(
        &mut self,
        sig: &Sig,
        args: &[Argument],
        call: Span,
        report: bool,
    ) -> Option<Vec<Option<usize>>> {
        let named = args.iter().filter(|a| a.name.is_some()).count();
        if named != 0 && named != args.len() {
            if report {
                let a = args
                    .iter()
                    .find(|a| a.name.is_none())
                    .map(|a| a.span)
                    .unwrap_or(call);
                self.error(
                    a,
                    "either all or none of the arguments of a call must be named",
                );
            }
            return None;
        }
        let mut map: Vec<Option<usize>> = vec![None; sig.params.len()];
        if named == 0 {
            if args.len() > sig.params.len() {
                if report {
                    self.error(
                        call,
                        format!(
                            "{}: too many arguments: expected at most {}, found {}",
                            sig.name,
                            sig.params.len(),
                            args.len()
                        ),
                    );
                }
                return None;
            }
            for (i, slot) in map.iter_mut().enumerate().take(args.len()) {
                *slot = Some(i);
            }
        } else {
            let mut seen: HashSet<&str> = HashSet::new();
            for (j, a) in args.iter().enumerate() {
                let Some(n) = &a.name else { continue };
                if !seen.insert(&n.name) {
                    if report {
                        self.error(a.span, format!("{}: same argument name used twice", n.name));
                    }
                    return None;
                }
                match sig.params.iter().position(|p| p.name == n.name) {
                    Some(i) => map[i] = Some(j),
                    None => {
                        if report {
                            self.error(
                                n.span,
                                format!("{}: no parameter named {}", sig.name, n.name),
                            );
                        }
                        return None;
                    }
                }
            }
        }
        for (p, slot) in sig.params.iter().zip(&map) {
            let omitted_dots = slot.is_some_and(|j| {
                args.get(j)
                    .is_some_and(|a| matches!(a.value.kind, ExprKind::Dots))
            });
            if (slot.is_none() || omitted_dots) && !p.has_default && !p.optional {
                if report {
                    self.error_note(
                        call,
                        format!(
                            "{}: No argument supplied for parameter {}",
                            sig.name, p.name
                        ),
                        p.span,
                        "parameter declared here",
                    );
                }
                return None;
            }
        }
        Some(map)
    }

    /// Picks the candidate whose signature the arguments fit, reporting when none or several
    /// do.
    pub fn resolve_overload(
        &mut self,
        cands: &[(DeclId, Sig)],
        args: &[Argument],
        call: Span,
        what: &str,
    ) -> Option<(DeclId, Sig, Vec<Option<usize>>)> {
        if let [(d, sig)] = cands {
            let m = self.match_args(sig, args, call, true)?;
            return Some((*d, sig.clone(), m));
        }
        let fits: Vec<(DeclId, Sig, Vec<Option<usize>>)> = cands
            .iter()
            .filter_map(|(d, s)| {
                self.match_args(s, args, call, false)
                    .map(|m| (*d, s.clone(), m))
            })
            .collect();
        // Prefer candidates that need no default values.
        let exact: Vec<&(DeclId, Sig, Vec<Option<usize>>)> = fits
            .iter()
            .filter(|(_, s, _)| s.params.len() == args.len())
            .collect();
        match (fits.len(), exact.len()) {
            (0, _) => {
                self.error(
                    call,
                    format!(
                        "{what}: no overload matches this call with {} arguments",
                        args.len()
                    ),
                );
                None
            }
            (1, _) => fits.into_iter().next(),
            (_, 1) => exact.first().map(|x| (*x).clone()),
            _ => {
                self.error(call, format!("Ambiguous call of {what}"));
                None
            }
        }
    }

    /// Checks the arguments of a resolved call against `sig`, inferring type arguments, and
    /// records the call. Returns the (specialised) return type.
    #[allow(clippy::too_many_arguments)]
    pub fn check_call_args(
        &mut self,
        call: &Expr,
        target: CallTarget,
        sig: &Sig,
        map: &[Option<usize>],
        args: &[Argument],
        type_args: &[Type],
        mode: ArgMode,
    ) -> TypeId {
        let (ret, info) = self.check_args_at(call.span, target, sig, map, args, type_args, mode);
        self.out.calls.insert(call.id, info);
        ret
    }

    /// Like [`Checker::check_call_args`] for a call without an expression node (an
    /// instantiation): returns the call facts instead of recording them.
    #[allow(clippy::too_many_arguments)]
    pub fn check_args_at(
        &mut self,
        call: Span,
        target: CallTarget,
        sig: &Sig,
        map: &[Option<usize>],
        args: &[Argument],
        type_args: &[Type],
        mode: ArgMode,
    ) -> (TypeId, CallInfo) {
        let mut info = CallInfo {
            target,
            type_args: Vec::new(),
            params: Vec::new(),
            arg_of_param: map.to_vec(),
        };
        let mut inf = Infer::new(sig.type_params.clone());
        if !self.bind_type_args(&mut inf, sig, type_args, call) {
            return (TypeId::ERROR, info);
        }
        let mut ok = true;
        for (p, slot) in sig.params.iter().zip(map) {
            let Some(arg) = slot.and_then(|j| args.get(j)) else {
                continue;
            };
            ok &= self.infer_arg(&mut inf, p, &arg.value);
        }
        if !ok {
            return (TypeId::ERROR, info);
        }
        let Some(subst) = self.finish_inference(&inf, sig, map, call, mode) else {
            return (TypeId::ERROR, info);
        };
        let params: Vec<ParamTy> = sig
            .params
            .iter()
            .map(|p| ParamTy {
                name: p.name.clone(),
                dir: p.dir,
                ty: substitute(&mut self.out.types, p.ty, &subst),
            })
            .collect();
        for ((p, sp), slot) in params.iter().zip(&sig.params).zip(map) {
            if p.dir.is_some()
                && matches!(self.ty(p.ty), Ty::String | Ty::Extern(_))
                && sp.ty != p.ty
            {
                let s = self.show(p.ty);
                self.error(
                    sp.span,
                    format!(
                        "{}: a parameter with type {s} cannot have a direction",
                        p.name
                    ),
                );
                ok = false;
                continue;
            }
            if let Some(arg) = slot.and_then(|j| args.get(j)) {
                ok &= self.convert_arg(p, &arg.value, mode);
            }
        }
        let ret = substitute(&mut self.out.types, sig.ret, &subst);
        info.type_args = sig
            .type_params
            .iter()
            .map(|v| subst.get(v).copied().unwrap_or(TypeId::ERROR))
            .collect();
        info.params = params;
        (if ok { ret } else { TypeId::ERROR }, info)
    }

    fn bind_type_args(
        &mut self,
        inf: &mut Infer,
        sig: &Sig,
        type_args: &[Type],
        span: Span,
    ) -> bool {
        if type_args.is_empty() {
            return true;
        }
        if type_args.len() != sig.type_params.len() {
            self.error(
                span,
                format!(
                    "{}: {} type parameters expected, but {} type arguments supplied",
                    sig.name,
                    sig.type_params.len(),
                    type_args.len()
                ),
            );
            return false;
        }
        for (v, t) in sig.type_params.iter().zip(type_args) {
            let ty = self.resolve_type_arg(t);
            if self.is_err(ty) || !self.check_type_argument(ty, t.span) {
                return false;
            }
            if ty != TypeId::DONT_CARE {
                inf.bound.insert(*v, ty);
                inf.explicit.push(*v);
            }
        }
        true
    }

    /// Checks one argument and unifies its type with the parameter's.
    fn infer_arg(&mut self, inf: &mut Infer, p: &SigParam, arg: &Expr) -> bool {
        if matches!(arg.kind, ExprKind::DontCare) {
            self.set_type(arg, TypeId::DONT_CARE);
            if p.dir != Some(Direction::Out) {
                self.error(
                    arg.span,
                    "don't care argument is only allowed for out parameters",
                );
                return false;
            }
            return true;
        }
        if matches!(arg.kind, ExprKind::Dots) {
            self.set_type(arg, TypeId::DONT_CARE);
            return true;
        }
        let at = self.check_expr(arg);
        if self.is_err(at) {
            return false;
        }
        if matches!(self.ty(p.ty), Ty::DontCare) {
            // A parameter whose type is a type variable bound to `_` (as in `E<_>`): p4c
            // cannot give the argument a type.
            self.error_note(
                arg.span,
                format!(
                    "Could not infer a type for parameter {} (inferred type is don't care '_')",
                    p.name
                ),
                p.span,
                "parameter declared here",
            );
            return false;
        }
        if self.not_a_value(at)
            && !matches!(
                self.ty(p.ty),
                Ty::Parser(_) | Ty::Control(_) | Ty::Package(_) | Ty::Extern(_)
            )
        {
            let s = self.show(at);
            self.error(arg.span, format!("argument cannot have type {s}"));
            return false;
        }
        if matches!(self.ty(at), Ty::StructLit(_))
            && self.out.types.has_vars(p.ty)
            && matches!(self.ty(p.ty), Ty::Var { .. })
        {
            self.error(
                arg.span,
                "Cannot infer type for unknown struct type initializer",
            );
            return false;
        }
        if !inf.unify(&mut self.out.types, p.ty, at) {
            let (x, f) = (self.show(p.ty), self.show(at));
            self.error(
                arg.span,
                format!(
                    "type mismatch for parameter '{}': expected {x}, found {f}",
                    p.name
                ),
            );
            return false;
        }
        true
    }

    /// Types of objects that cannot be passed as run-time values.
    pub fn not_a_value(&self, t: TypeId) -> bool {
        matches!(
            self.ty(t),
            Ty::Table { .. }
                | Ty::Parser(_)
                | Ty::Control(_)
                | Ty::Package(_)
                | Ty::State
                | Ty::Action { .. }
                | Ty::TypeName(_)
        )
    }

    /// Whether a type is or contains `int` (as a tuple, list or stack element or a field), which
    /// p4c cannot bind a type variable to (its `BindTypeVariables`: "could not infer a width").
    fn contains_inf_int(&self, t: TypeId, depth: u32) -> bool {
        if depth > 32 {
            return false;
        }
        match self.ty(t) {
            Ty::InfInt => true,
            Ty::Tuple(ts) => ts.iter().any(|t| self.contains_inf_int(*t, depth + 1)),
            Ty::List(e) | Ty::Stack { elem: e, .. } => self.contains_inf_int(*e, depth + 1),
            Ty::Agg(a) => a
                .fields
                .iter()
                .any(|f| self.contains_inf_int(f.ty, depth + 1)),
            _ => false,
        }
    }

    /// The final substitution; reports type variables that could not be inferred.
    fn finish_inference(
        &mut self,
        inf: &Infer,
        sig: &Sig,
        map: &[Option<usize>],
        call: Span,
        mode: ArgMode,
    ) -> Option<Subst> {
        let mut subst = inf.bound.clone();
        for v in &sig.type_params {
            match subst.get(v).copied() {
                Some(t) if self.contains_inf_int(t, 0) => {
                    self.error(
                        call,
                        format!(
                            "{}: could not infer a width for type variable {}",
                            sig.name,
                            self.decl_name(*v)
                        ),
                    );
                    return None;
                }
                Some(_) => {}
                None => {
                    let name = self.decl_name(*v);
                    let relevant = |p: &SigParam, m: &Option<usize>| {
                        m.is_some() || (p.has_default && !p.optional)
                    };
                    let used = sig
                        .params
                        .iter()
                        .zip(map)
                        .any(|(p, m)| relevant(p, m) && self.mentions(p.ty, *v))
                        || (mode == ArgMode::Call && self.mentions(sig.ret, *v));
                    if used {
                        self.error(
                            call,
                            format!("{}: could not infer a type for variable {name}", sig.name),
                        );
                        return None;
                    }
                    subst.insert(*v, TypeId::DONT_CARE);
                }
            }
        }
        Some(subst)
    }

    fn mentions(&self, ty: TypeId, v: DeclId) -> bool {
        if matches!(self.ty(ty), Ty::Var { decl, .. } if *decl == v) {
            return true;
        }
        self.out
            .types
            .children(ty)
            .into_iter()
            .any(|c| self.mentions(c, v))
    }

    /// Converts an argument to its (specialised) parameter type, with direction rules.
    fn convert_arg(&mut self, p: &ParamTy, arg: &Expr, mode: ArgMode) -> bool {
        if matches!(arg.kind, ExprKind::DontCare | ExprKind::Dots) {
            return true;
        }
        match p.dir {
            Some(Direction::Out) | Some(Direction::InOut) => {
                if !self.is_lvalue(arg) {
                    self.error(
                        arg.span,
                        format!("Read-only value used for out/inout parameter '{}'", p.name),
                    );
                    return false;
                }
                let at = self.type_of(arg);
                if at != p.ty && !self.is_err(at) && !self.is_err(p.ty) && p.ty != TypeId::DONT_CARE
                {
                    let (x, f) = (self.show(p.ty), self.show(at));
                    self.error(
                        arg.span,
                        format!(
                            "type mismatch for {} parameter '{}': expected {x}, found {f}",
                            dir_name(p.dir),
                            p.name
                        ),
                    );
                    return false;
                }
                true
            }
            _ => {
                if !self.coerce(arg, p.ty) {
                    return false;
                }
                if mode == ArgMode::Constructor
                    && !self.is_ctk(arg)
                    && !matches!(
                        self.ty(p.ty),
                        Ty::Extern(_) | Ty::Parser(_) | Ty::Control(_) | Ty::Package(_)
                    )
                {
                    self.error(arg.span, "cannot evaluate to a compile-time constant");
                    return false;
                }
                // An extern-valued constructor argument may come from a factory function,
                // evaluated at instantiation: its own arguments must be compile-time known.
                if let (ArgMode::Constructor, ExprKind::Call { args: inner, .. }, Ty::Extern(_)) =
                    (mode, &arg.kind, self.ty(p.ty))
                    && let Some(bad) = inner.iter().find(|a| {
                        !matches!(a.value.kind, ExprKind::DontCare) && !self.is_ctk(&a.value)
                    })
                {
                    self.error(
                        bad.value.span,
                        "an argument of a factory call in a constructor argument must be a compile-time constant",
                    );
                    return false;
                }
                true
            }
        }
    }
}

/// `in`, `out`, `inout` or `directionless`.
pub fn dir_name(d: Dir) -> &'static str {
    match d {
        Some(Direction::In) => "in",
        Some(Direction::Out) => "out",
        Some(Direction::InOut) => "inout",
        None => "directionless",
    }
}
