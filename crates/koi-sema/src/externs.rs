//! Extern object declarations (constructors, methods, abstract methods, overloading) and the
//! implementations of abstract methods given in instance initializers.

use crate::checker::{BodyCx, Checker, Place};
use crate::decls::{DeclId, DeclInfo, DeclKind};
use crate::params::ParamOwner;
use crate::scope::ScopeKind;
use crate::types::{NominalTy, Ty, TypeId};
use koi_syntax::ast::{Decl, DeclKind as D, FunctionProto, Ident, TypeParams};

impl Checker<'_> {
    /// `extern E<T> { ... }`
    pub fn check_extern(
        &mut self,
        name: &Ident,
        tps: &TypeParams,
        methods: &[FunctionProto],
    ) -> DeclId {
        let id = self.new_decl(DeclInfo::new(
            &name.name,
            name.span,
            DeclKind::Extern,
            TypeId::ERROR,
        ));
        self.defining.push(id);
        let members = self.with_parent(id, |c| {
            c.scoped(ScopeKind::TypeParams, |c| {
                let tp = c.declare_type_params(tps);
                let args = tp.iter().map(|t| c.decl_ty(*t)).collect();
                let ty = c.intern(Ty::Extern(NominalTy {
                    decl: id,
                    name: name.name.clone(),
                    args,
                }));
                c.set_signature(id, tp, Vec::new(), None, ty);
                c.scoped(ScopeKind::Body, |c| {
                    methods
                        .iter()
                        .map(|m| c.check_method_proto(&name.name, m))
                        .collect::<Vec<_>>()
                })
            })
        });
        self.defining.pop();
        if let Some(i) = self.decl_mut(id) {
            i.members = members;
        }
        self.bind(id);
        id
    }

    fn check_method_proto(&mut self, ext: &str, m: &FunctionProto) -> DeclId {
        let is_ctor = m.name.name == ext;
        if is_ctor && m.ret.is_some() {
            self.error(
                m.name.span,
                format!(
                    "{}: invalid constructor; cannot have a return type.",
                    m.name.name
                ),
            );
        }
        if !is_ctor && m.ret.is_none() {
            self.error(
                m.name.span,
                format!("{}: invalid type; method has no return type.", m.name.name),
            );
        }
        let kind = DeclKind::Method {
            is_abstract: m.is_abstract,
        };
        self.check_annotations(&m.annotations);
        let optional = m.annotations.iter().any(|a| a.name.name == "optional");
        let id = self.new_decl(DeclInfo::new(
            &m.name.name,
            m.name.span,
            kind,
            TypeId::ERROR,
        ));
        let owner = if is_ctor {
            ParamOwner::ExternCtor
        } else {
            ParamOwner::ExternMethod
        };
        let (tps, ret, ps) = self.with_parent(id, |c| {
            c.scoped(ScopeKind::Params, |c| {
                let tps = c.declare_type_params(&m.type_params);
                let ret = m.ret.as_ref().map(|r| c.resolve_type(r));
                let ps = c.declare_params(&m.params, owner);
                (tps, ret, ps)
            })
        });
        let ret = if is_ctor {
            None
        } else {
            Some(ret.unwrap_or(TypeId::ERROR))
        };
        // As p4c: an extern method cannot return `int` or `string`.
        if let (Some(rt), Some(r)) = (ret, m.ret.as_ref())
            && matches!(self.ty(rt), Ty::InfInt | Ty::String)
        {
            let s = self.show(rt);
            self.error(r.span, format!("{s}: illegal return type for method"));
        }
        self.set_signature(id, tps, ps, ret, ret.unwrap_or(TypeId::VOID));
        if optional {
            self.optional_methods.insert(id);
        }
        self.bind(id);
        id
    }

    /// True when the extern declaration has abstract methods.
    pub fn has_abstract_methods(&self, ext: DeclId) -> bool {
        self.decl(ext).is_some_and(|i| {
            i.members.iter().any(|m| {
                matches!(
                    self.decl_kind(*m),
                    Some(DeclKind::Method { is_abstract: true })
                )
            })
        })
    }

    /// The initializer `= { ... }` of an instance of extern type `inst_ty`.
    pub fn check_initializer(&mut self, inst: &Ident, inst_ty: TypeId, decls: &[Decl]) {
        let Ty::Extern(n) = self.ty(inst_ty).clone() else {
            if !self.is_err(inst_ty) {
                self.check_impl_signatures(inst_ty, decls);
                self.error(
                    inst.span,
                    format!(
                        "{}: initializers only allowed for extern instances",
                        inst.name
                    ),
                );
            }
            return;
        };
        let no_abstracts = !self.has_abstract_methods(n.decl);
        let subst = self.extern_subst(n.decl, &n.args);
        let abstracts: Vec<DeclId> = self
            .decl(n.decl)
            .map(|i| i.members.clone())
            .unwrap_or_default()
            .into_iter()
            .filter(|m| {
                matches!(
                    self.decl_kind(*m),
                    Some(DeclKind::Method { is_abstract: true })
                )
            })
            .collect();
        let mut implemented: Vec<DeclId> = Vec::new();
        self.scoped(ScopeKind::Block, |c| {
            for d in decls {
                match &d.kind {
                    D::Function {
                        ret,
                        name,
                        type_params,
                        params,
                        body,
                    } => {
                        if let Some(a) = c.check_method_impl(
                            inst_ty,
                            &n.name,
                            &abstracts,
                            &subst,
                            ret,
                            name,
                            type_params,
                            params,
                            body,
                        ) {
                            if implemented.contains(&a) {
                                c.error(
                                    name.span,
                                    format!("{}: Duplicates declaration {}", name.name, name.name),
                                );
                            }
                            implemented.push(a);
                        }
                    }
                    _ => {
                        let cx = BodyCx {
                            place: Place::ControlTop,
                            ..c.cx.clone()
                        };
                        c.with_cx(cx, |c| c.check_decl(d));
                    }
                }
            }
        });
        if no_abstracts {
            self.error(
                inst.span,
                format!(
                    "{}: instance initializers for extern without abstract methods",
                    inst.name
                ),
            );
            return;
        }
        for a in abstracts {
            if !implemented.contains(&a) && !self.optional_methods.contains(&a) {
                let an = self.decl_name(a);
                let asp = self.decl_span(a);
                self.error_note(
                    inst.span,
                    format!("{}: {an} abstract method not implemented", inst.name),
                    asp,
                    "declared here",
                );
            }
        }
    }

    /// Checks only the signatures of the functions of an invalid initializer (their types and
    /// duplicate names).
    fn check_impl_signatures(&mut self, inst_ty: TypeId, decls: &[Decl]) {
        let none = crate::generics::Subst::new();
        self.scoped(ScopeKind::Block, |c| {
            for d in decls {
                if let D::Function {
                    ret,
                    name,
                    type_params,
                    params,
                    body,
                } = &d.kind
                {
                    c.check_method_impl(
                        inst_ty,
                        "",
                        &[],
                        &none,
                        ret,
                        name,
                        type_params,
                        params,
                        body,
                    );
                }
            }
        });
    }

    /// The binding of an extern's type parameters to the type arguments of an instance.
    pub fn extern_subst(&self, ext: DeclId, args: &[TypeId]) -> crate::generics::Subst {
        self.decl(ext)
            .map(|i| {
                i.type_params
                    .iter()
                    .copied()
                    .zip(args.iter().copied())
                    .collect()
            })
            .unwrap_or_default()
    }

    #[allow(clippy::too_many_arguments)]
    fn check_method_impl(
        &mut self,
        inst_ty: TypeId,
        ext_name: &str,
        abstracts: &[DeclId],
        subst: &crate::generics::Subst,
        ret: &koi_syntax::ast::Type,
        name: &Ident,
        tps: &TypeParams,
        params: &[koi_syntax::ast::Param],
        body: &koi_syntax::ast::Block,
    ) -> Option<DeclId> {
        let id = self.new_decl(DeclInfo::new(
            &name.name,
            name.span,
            DeclKind::MethodImpl,
            TypeId::ERROR,
        ));
        let (tp, rt, ps) = self.with_parent(id, |c| {
            c.scoped(ScopeKind::Params, |c| {
                let tp = c.declare_type_params(tps);
                let rt = c.resolve_type(ret);
                let ps = c.declare_params(params, ParamOwner::ExternMethod);
                (tp, rt, ps)
            })
        });
        self.set_signature(id, tp.clone(), ps.clone(), Some(rt), rt);
        if !tps.is_empty() && !abstracts.is_empty() {
            self.error(
                name.span,
                format!(
                    "{}: abstract method implementations cannot be generic",
                    name.name
                ),
            );
            return None;
        }
        if abstracts.is_empty() {
            // The initializer itself is an error; the signature was checked for duplicates.
            return None;
        }
        let matched = self.match_abstract(abstracts, subst, name, rt, &ps, ext_name);
        let cx = BodyCx {
            place: Place::MethodImpl,
            ret: Some(rt),
            owner: Some(id),
            this_ty: Some(inst_ty),
            ..BodyCx::top()
        };
        self.with_parent(id, |c| {
            c.with_cx(cx, |c| {
                c.scoped(ScopeKind::Params, |c| {
                    c.reinsert(&tp);
                    c.reinsert(&ps);
                    c.scoped(ScopeKind::Body, |c| c.check_stmts(&body.stmts));
                })
            })
        });
        if rt != TypeId::VOID && !self.is_err(rt) && !Self::always_returns(&body.stmts) {
            self.error(
                name.span,
                format!(
                    "Function '{}' does not return a value on all paths",
                    name.name
                ),
            );
        }
        matched
    }

    /// Finds the abstract method an implementation implements, checking its signature.
    fn match_abstract(
        &mut self,
        abstracts: &[DeclId],
        subst: &crate::generics::Subst,
        name: &Ident,
        rt: TypeId,
        ps: &[DeclId],
        ext_name: &str,
    ) -> Option<DeclId> {
        let cand = abstracts.iter().copied().find(|a| {
            self.decl(*a).is_some_and(|i| {
                i.name == name.name
                    && i.params.len() >= ps.len()
                    && i.params[ps.len()..].iter().all(|p| {
                        self.decl(*p)
                            .and_then(|x| x.param())
                            .is_some_and(|x| x.optional)
                    })
            })
        });
        let Some(a) = cand else {
            if !abstracts.is_empty() {
                self.error(
                    name.span,
                    format!("{}: no matching abstract method in {ext_name}", name.name),
                );
            }
            return None;
        };
        let sig = self.sig_of(a, subst, false);
        let mine = self.param_tys(ps);
        let params_ok = sig.params.iter().zip(&mine).all(|(x, y)| {
            x.dir == y.dir && (x.ty == y.ty || self.is_err(y.ty) || self.out.types.has_vars(x.ty))
        });
        let ret_ok = sig.ret == rt || self.is_err(rt) || self.out.types.has_vars(sig.ret);
        if !params_ok || !ret_ok {
            let asp = self.decl_span(a);
            self.error_note(
                name.span,
                format!(
                    "{}: the implementation does not match the abstract method's signature",
                    name.name
                ),
                asp,
                "abstract method declared here",
            );
        }
        Some(a)
    }
}
