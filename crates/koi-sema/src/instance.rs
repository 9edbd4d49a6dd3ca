//! Instantiation: constructor calls `T(args)` and instance declarations `T(args) name;` of
//! externs, parsers, controls and packages, with inference of the type arguments of generic
//! types from the constructor arguments, the rule that constructor arguments are compile-time
//! known, and where each kind of object may be instantiated.

use crate::args::{ArgMode, Sig};
use crate::checked::{CallInfo, CallTarget};
use crate::checker::{Checker, Place};
use crate::decls::{DeclId, DeclInfo, DeclKind};
use crate::generics::Subst;
use crate::typeref::Generic;
use crate::types::{Ty, TypeId};
use koi_syntax::Span;
use koi_syntax::ast::{Argument, Decl, Expr, Ident, Type};

impl Checker<'_> {
    /// A constructor call in an expression (`Checksum16()`, `MyParser()`).
    pub fn check_constructor_of_type(
        &mut self,
        e: &Expr,
        ty: TypeId,
        span: Span,
        args: &[Argument],
        in_expr: bool,
    ) -> TypeId {
        let (ret, info) = self.construct(e.span, ty, span, args, in_expr);
        if let Some(info) = info {
            self.out.calls.insert(e.id, info);
        }
        if !self.is_err(ret) {
            self.set_ctk(e);
        }
        ret
    }

    /// Checks the construction of an object of type `ty` (a declaration's type, possibly
    /// specialised); returns the instance type and the call facts.
    fn construct(
        &mut self,
        call: Span,
        ty: TypeId,
        name_span: Span,
        args: &[Argument],
        in_expr: bool,
    ) -> (TypeId, Option<CallInfo>) {
        let (decl, generic) = match self.ty(ty).clone() {
            Ty::Extern(n) => (n.decl, self.is_unspecialized(n.decl, &n.args)),
            Ty::Parser(b) | Ty::Control(b) => (b.decl, self.is_unspecialized(b.decl, &b.args)),
            Ty::Package(n) => (n.decl, self.is_unspecialized(n.decl, &n.args)),
            Ty::Error => {
                self.check_args_loosely(args);
                return (TypeId::ERROR, None);
            }
            _ => {
                let s = self.show(ty);
                self.error(name_span, format!("cannot allocate objects of type {s}"));
                self.check_args_loosely(args);
                return (TypeId::ERROR, None);
            }
        };
        let kind = self.decl_kind(decl).cloned();
        let cands = match kind {
            Some(DeclKind::Extern) => {
                if in_expr && self.has_abstract_methods(decl) {
                    let n = self.decl_name(decl);
                    let ds = self.decl_span(decl);
                    self.error_note(
                        name_span,
                        format!("{n}: extern type {n} with abstract methods cannot be instantiated using a constructor call; consider using a declaration"),
                        ds,
                        "declared here",
                    );
                }
                self.extern_ctors(decl, ty, generic)
            }
            Some(DeclKind::PackageType | DeclKind::Parser | DeclKind::Control) => {
                self.block_ctors(decl, ty, generic)
            }
            _ => {
                let n = self.decl_name(decl);
                let what = kind.map(|k| k.describe()).unwrap_or("");
                self.error(
                    name_span,
                    format!("{n}: a {what} cannot be instantiated; it is only an interface"),
                );
                self.check_args_loosely(args);
                return (TypeId::ERROR, None);
            }
        };
        if cands.is_empty() {
            let n = self.decl_name(decl);
            self.error(call, format!("{n}: type {n} has no matching constructor"));
            self.check_args_loosely(args);
            return (TypeId::ERROR, None);
        }
        let what = self.decl_name(decl);
        let Some((chosen, sig, map)) = self.resolve_overload(&cands, args, call, &what) else {
            self.check_args_loosely(args);
            return (TypeId::ERROR, None);
        };
        let decl = if matches!(
            self.decl_kind(chosen),
            Some(DeclKind::PackageType | DeclKind::Parser | DeclKind::Control)
        ) {
            chosen
        } else {
            decl
        };
        let target = CallTarget::Constructor { decl, ty };
        let (ret, mut info) =
            self.check_args_at(call, target, &sig, &map, args, &[], ArgMode::Constructor);
        info.target = CallTarget::Constructor { decl, ty: ret };
        (ret, Some(info))
    }

    /// The type arguments of an extern, parser, control or package type.
    fn type_args_of(&self, ty: TypeId) -> Vec<TypeId> {
        match self.ty(ty) {
            Ty::Extern(n) | Ty::Package(n) => n.args.clone(),
            Ty::Parser(b) | Ty::Control(b) => b.args.clone(),
            _ => Vec::new(),
        }
    }

    /// True when a generic declaration is used without type arguments (they are inferred).
    fn is_unspecialized(&self, decl: DeclId, args: &[TypeId]) -> bool {
        let Some(i) = self.decl(decl) else {
            return false;
        };
        !i.type_params.is_empty()
            && i.type_params
                .iter()
                .map(|t| self.decl_ty(*t))
                .eq(args.iter().copied())
    }

    /// Constructors of an extern as signatures producing an instance of `ty`.
    fn extern_ctors(&mut self, decl: DeclId, ty: TypeId, generic: bool) -> Vec<(DeclId, Sig)> {
        let Some(info) = self.decl(decl).cloned() else {
            return Vec::new();
        };
        let subst = match self.ty(ty) {
            Ty::Extern(n) if !generic => self.extern_subst(decl, &n.args.clone()),
            _ => Subst::new(),
        };
        let mut out = Vec::new();
        for m in info.members {
            let is_ctor = self
                .decl(m)
                .is_some_and(|d| d.name == info.name && d.ret.is_none());
            if !is_ctor {
                continue;
            }
            let mut sig = self.sig_of(m, &subst, true);
            self.make_ctor_sig(&mut sig, decl, ty, generic);
            out.push((m, sig));
        }
        out
    }

    /// The (possibly overloaded) package, parser or control declarations named like `first`,
    /// as constructors.
    fn block_ctors(&mut self, first: DeclId, ty: TypeId, generic: bool) -> Vec<(DeclId, Sig)> {
        let name = self.decl_name(first);
        let kind = self.decl_kind(first).cloned();
        let mut ds: Vec<DeclId> = self
            .scopes
            .lookup(&name)
            .iter()
            .copied()
            .filter(|d| self.decl_kind(*d) == kind.as_ref())
            .collect();
        if !ds.contains(&first) {
            ds = vec![first];
        }
        let args = self.type_args_of(ty);
        let mut out = Vec::new();
        for d in ds {
            let own = self.decl_ty(d);
            let own_generic = self.decl(d).is_some_and(|i| !i.type_params.is_empty());
            if generic || !own_generic {
                let mut sig = self.sig_of(d, &Subst::new(), true);
                self.make_ctor_sig(&mut sig, d, own, own_generic && generic);
                out.push((d, sig));
                continue;
            }
            let tps = self
                .decl(d)
                .map(|i| i.type_params.clone())
                .unwrap_or_default();
            if tps.len() != args.len() {
                continue;
            }
            let subst: Subst = tps.into_iter().zip(args.iter().copied()).collect();
            let mut sig = self.sig_of(d, &subst, true);
            let ret = crate::generics::substitute(&mut self.out.types, own, &subst);
            self.make_ctor_sig(&mut sig, d, ret, false);
            out.push((d, sig));
        }
        out
    }

    fn make_ctor_sig(&self, sig: &mut Sig, decl: DeclId, ty: TypeId, generic: bool) {
        sig.ret = ty;
        sig.ctk_args = true;
        sig.type_params = if generic {
            self.decl(decl)
                .map(|i| i.type_params.clone())
                .unwrap_or_default()
        } else {
            Vec::new()
        };
    }

    /// `T(args) name [= { ... }];`
    pub fn check_instantiation(
        &mut self,
        ty: &Type,
        args: &[Argument],
        name: &Ident,
        init: Option<&[Decl]>,
    ) -> DeclId {
        let t = self.resolve_type_g(ty, Generic::Infer);
        if !self.is_err(t) && !self.instantiation_allowed(t, name) {
            self.check_args_loosely(args);
            return self.declare(DeclInfo::new(
                &name.name,
                name.span,
                DeclKind::Instance,
                TypeId::ERROR,
            ));
        }
        let (rt, info) = self.construct(name.span, t, ty.span, args, false);
        let id = self.new_decl(DeclInfo::new(&name.name, name.span, DeclKind::Instance, rt));
        if let Some(info) = info {
            self.out.instantiations.insert(id, info);
        }
        if let Some(init) = init {
            self.with_parent(id, |c| c.check_initializer(name, rt, init));
        } else if let Ty::Extern(n) = self.ty(rt)
            && self.has_abstract_methods(n.decl)
        {
            let en = n.name.clone();
            self.error(
                name.span,
                format!("{}: must declare abstract methods for {en}", name.name),
            );
        }
        self.bind(id);
        id
    }

    /// The spec's table of where parsers, controls and packages may be instantiated.
    fn instantiation_allowed(&mut self, t: TypeId, name: &Ident) -> bool {
        let kind = match self.ty(t) {
            Ty::Parser(_) => "parser",
            Ty::Control(_) => "control",
            Ty::Package(_) => "package",
            _ => return true,
        };
        let ok = match self.cx.place {
            Place::TopLevel => kind == "package",
            Place::ParserTop | Place::ParserState => kind == "parser",
            Place::ControlTop => kind == "control",
            _ => false,
        };
        if !ok {
            let msg = match self.cx.place {
                Place::TopLevel => format!("{}: cannot instantiate at top-level", name.name),
                Place::ParserTop | Place::ParserState => {
                    format!("{}: instantiation of {kind} in parser", name.name)
                }
                Place::ControlTop => format!("{}: instantiation of {kind} in control", name.name),
                _ => format!("{}: a {kind} cannot be instantiated here", name.name),
            };
            self.error(name.span, msg);
        }
        ok
    }

    /// Checks the program's `main` declaration.
    pub fn check_main(&mut self) {
        let found: Vec<DeclId> = self.scopes.lookup_global("main").to_vec();
        let Some(&d) = found.first() else {
            if self.opts.require_main {
                self.diags.push(koi_syntax::Diagnostic::global(
                    "the program has no 'main' declaration",
                ));
            }
            return;
        };
        let (kind, ty, span) = match self.decl(d) {
            Some(i) => (i.kind.clone(), i.ty, i.span),
            None => return,
        };
        if self.is_err(ty) {
            return;
        }
        match (kind, self.ty(ty).clone()) {
            (DeclKind::Instance, Ty::Package(n)) => {
                self.out.main = Some(crate::checked::MainInfo {
                    decl: d,
                    package: n.decl,
                    ty,
                });
            }
            (DeclKind::Instance, _) => {
                let s = self.show(ty);
                self.error(
                    span,
                    format!("main: expected package declaration, found an instance of {s}"),
                );
            }
            (
                DeclKind::Extern | DeclKind::PackageType | DeclKind::Parser | DeclKind::Control,
                _,
            ) => self.error(span, "main: must be a package declaration"),
            _ => {}
        }
    }
}
