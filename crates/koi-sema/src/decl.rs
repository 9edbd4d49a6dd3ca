//! Declarations: the program driver, the dispatcher over declaration kinds (with where each
//! kind may appear), constants, variables, functions, actions, extern functions and value
//! sets. Type declarations, blocks, externs, instantiations and tables have their own modules.

use crate::checker::{BodyCx, Checker, Place};
use crate::decls::{DeclId, DeclInfo, DeclKind};
use crate::params::ParamOwner;
use crate::scope::ScopeKind;
use crate::types::{AggKind, Ty, TypeId};
use koi_syntax::ast::{
    Block, Decl, DeclKind as D, Expr, FunctionProto, Ident, Param, Program, Type, TypeParams,
};

impl Checker<'_> {
    /// Checks a whole program.
    pub fn check_program(&mut self, prog: &Program) {
        for d in &prog.decls {
            if let Some(id) = self.check_decl(d) {
                self.out.top_level.push(id);
            }
        }
        self.check_main();
    }

    /// Checks one declaration in the current scope; returns what it declared.
    pub fn check_decl(&mut self, d: &Decl) -> Option<DeclId> {
        self.check_annotations(&d.annotations);
        if !self.decl_allowed_here(d) {
            return None;
        }
        let id = self.check_decl_kind(d);
        if let Some(id) = id
            && matches!(
                self.cx.place,
                Place::TopLevel | Place::ControlTop | Place::ParserTop
            )
        {
            self.register_control_plane_name(id, &d.annotations);
        }
        id
    }

    fn check_decl_kind(&mut self, d: &Decl) -> Option<DeclId> {
        match &d.kind {
            D::Const { ty, name, value } => Some(self.check_const(ty, name, value)),
            D::Var { ty, name, init } => Some(self.check_var(ty, name, init.as_ref())),
            D::Instantiation {
                ty,
                args,
                name,
                initializer,
            } => Some(self.check_instantiation(ty, args, name, initializer.as_deref())),
            D::Header {
                name,
                type_params,
                fields,
            } => Some(self.check_agg_decl(AggKind::Header, name, type_params, fields)),
            D::Struct {
                name,
                type_params,
                fields,
            } => Some(self.check_agg_decl(AggKind::Struct, name, type_params, fields)),
            D::HeaderUnion {
                name,
                type_params,
                fields,
            } => Some(self.check_agg_decl(AggKind::HeaderUnion, name, type_params, fields)),
            D::Enum {
                repr,
                name,
                members,
            } => Some(self.check_enum_decl(repr.as_ref(), name, members)),
            D::Error(ms) => {
                self.check_error_decl(ms);
                None
            }
            D::MatchKind(ms) => {
                self.check_match_kind_decl(ms);
                None
            }
            D::Typedef { ty, name } => Some(self.check_typedef(ty, name)),
            D::NewType { ty, name } => Some(self.check_newtype(ty, name)),
            D::Extern {
                name,
                type_params,
                methods,
            } => Some(self.check_extern(name, type_params, methods)),
            D::ExternFunction(p) => {
                let id = self.check_extern_function(p);
                if d.annotations.iter().any(|a| a.name.name == "pure") {
                    self.pure_functions.insert(id);
                }
                Some(id)
            }
            D::Function {
                ret,
                name,
                type_params,
                params,
                body,
            } => Some(self.check_function(ret, name, type_params, params, body)),
            D::Action { name, params, body } => Some(self.check_action(name, params, body)),
            D::ParserType {
                name,
                type_params,
                params,
            } => Some(self.check_block_type(true, name, type_params, params)),
            D::ControlType {
                name,
                type_params,
                params,
            } => Some(self.check_block_type(false, name, type_params, params)),
            D::PackageType {
                name,
                type_params,
                params,
            } => Some(self.check_package_type(name, type_params, params)),
            D::Parser { .. } => self.check_parser_decl(d),
            D::Control { .. } => self.check_control_decl(d),
            D::Table { name, properties } => Some(self.check_table(name, properties)),
            D::ValueSet { elem, size, name } => Some(self.check_value_set(elem, size, name)),
        }
    }

    /// The spec's rules on where each declaration may appear.
    fn decl_allowed_here(&mut self, d: &Decl) -> bool {
        let place = self.cx.place;
        let top = place == Place::TopLevel;
        let msg = match &d.kind {
            D::Var { .. } if top => Some("variables cannot be declared at the top level"),
            D::Table { .. } if place != Place::ControlTop => {
                Some("tables can only be declared in controls")
            }
            D::Action { .. } if !(top || place == Place::ControlTop) => {
                Some("actions can only be declared at the top level or in controls")
            }
            D::ValueSet { .. } if !(top || place == Place::ParserTop) => {
                Some("value sets can only be declared at the top level or in parsers")
            }
            D::Function { .. }
            | D::ExternFunction(_)
            | D::Extern { .. }
            | D::Parser { .. }
            | D::Control { .. }
                if !top =>
            {
                Some("this declaration is only allowed at the top level")
            }
            D::Header { .. }
            | D::Struct { .. }
            | D::HeaderUnion { .. }
            | D::Enum { .. }
            | D::ParserType { .. }
            | D::ControlType { .. }
            | D::PackageType { .. }
            | D::Error(_)
            | D::MatchKind(_)
                if !top =>
            {
                Some("type declarations are only allowed at the top level")
            }
            _ => None,
        };
        match msg {
            Some(m) => {
                let (span, name) = match d.name() {
                    Some(n) => (n.span, n.name.clone()),
                    None => (d.span, String::new()),
                };
                self.error(span, format!("{name}: {m}"));
                false
            }
            None => true,
        }
    }

    /// Reports a local declaration that shadows a parameter (or constructor parameter) of an
    /// enclosing callable. As in p4c, a parser's or control's own locals only shadow (a
    /// warning there): the error is for declarations in blocks, states, actions and functions.
    fn check_shadowing(&mut self, name: &Ident) {
        if matches!(
            self.cx.place,
            Place::TopLevel | Place::ControlTop | Place::ParserTop
        ) {
            return;
        }
        if let Some((ScopeKind::Params, ds)) = self.scopes.lookup_with_kind(&name.name) {
            let d = ds[0];
            if matches!(
                self.decl_kind(d),
                Some(DeclKind::Param(_) | DeclKind::CtorParam(_))
            ) && !self.scopes.lookup_innermost(&name.name).contains(&d)
            {
                let prev = self.decl_span(d);
                self.error_note(
                    name.span,
                    format!(
                        "declaration of '{}' shadows a parameter '{}'",
                        name.name, name.name
                    ),
                    prev,
                    "parameter declared here",
                );
            }
        }
    }

    fn check_const(&mut self, ty: &Type, name: &Ident, value: &Expr) -> DeclId {
        let t = self.resolve_type(ty);
        if self.out.types.has_dont_care(t) {
            self.error(
                ty.span,
                format!("{}: the type of a constant cannot contain '_'", name.name),
            );
        }
        let bad_kind = matches!(
            self.ty(t),
            Ty::Extern(_) | Ty::Parser(_) | Ty::Control(_) | Ty::Package(_)
        );
        if bad_kind {
            self.error(
                name.span,
                format!("{}: Cannot declare constants of extern types", name.name),
            );
        }
        let ok = !bad_kind && !self.is_err(t) && self.check_expr_ok(value, t);
        if bad_kind || self.is_err(t) {
            self.check_expr(value);
        }
        let v = if ok {
            self.converted_const(value)
        } else {
            None
        };
        if ok && v.is_none() && !self.is_ctk(value) {
            self.error(
                value.span,
                format!("{}: expression must evaluate to a constant", name.name),
            );
        }
        self.check_shadowing(name);
        let mut info = DeclInfo::new(
            &name.name,
            name.span,
            DeclKind::Const,
            if ok { t } else { TypeId::ERROR },
        );
        info.value = v;
        self.declare(info)
    }

    fn check_var(&mut self, ty: &Type, name: &Ident, init: Option<&Expr>) -> DeclId {
        let t = self.resolve_type(ty);
        let why = match self.ty(t) {
            Ty::InfInt => Some("Cannot declare variables with type int".to_string()),
            Ty::Extern(_) | Ty::Parser(_) | Ty::Control(_) | Ty::Package(_) => Some(format!(
                "cannot declare variables of type '{}' (consider using an instantiation)",
                self.show(t)
            )),
            Ty::Void
            | Ty::String
            | Ty::MatchKind
            | Ty::Table { .. }
            | Ty::ValueSet(_)
            | Ty::State => Some(format!("cannot declare variables of type {}", self.show(t))),
            _ if self.out.types.has_dont_care(t) => {
                Some("the type of a variable cannot contain '_'".to_string())
            }
            _ => None,
        };
        if let Some(w) = &why {
            self.error(name.span, format!("{}: {w}", name.name));
        }
        let t = if why.is_some() { TypeId::ERROR } else { t };
        if let Some(e) = init {
            self.check_expr_as(e, t);
        }
        self.check_shadowing(name);
        self.declare(DeclInfo::new(&name.name, name.span, DeclKind::Var, t))
    }

    /// Re-makes already declared parameters visible in the current scope.
    pub fn reinsert(&mut self, ids: &[DeclId]) {
        for d in ids {
            let name = self.decl_name(*d);
            self.scopes.insert(&name, *d);
        }
    }

    fn check_function(
        &mut self,
        ret: &Type,
        name: &Ident,
        tps: &TypeParams,
        params: &[Param],
        body: &Block,
    ) -> DeclId {
        let id = self.new_decl(DeclInfo::new(
            &name.name,
            name.span,
            DeclKind::Function,
            TypeId::ERROR,
        ));
        let (tp_ids, ret_ty, p_ids) = self.with_parent(id, |c| {
            c.scoped(ScopeKind::Params, |c| {
                let tp = c.declare_type_params(tps);
                let r = c.resolve_type(ret);
                let ps = c.declare_params(params, ParamOwner::Function);
                (tp, r, ps)
            })
        });
        self.set_signature(id, tp_ids.clone(), p_ids.clone(), Some(ret_ty), ret_ty);
        self.defining.push(id);
        let cx = BodyCx {
            place: Place::Function,
            ret: Some(ret_ty),
            owner: Some(id),
            ..BodyCx::top()
        };
        self.with_parent(id, |c| {
            c.with_cx(cx, |c| {
                c.scoped(ScopeKind::Params, |c| {
                    c.reinsert(&tp_ids);
                    c.reinsert(&p_ids);
                    c.scoped(ScopeKind::Body, |c| c.check_stmts(&body.stmts));
                })
            })
        });
        self.defining.pop();
        if ret_ty != TypeId::VOID && !self.is_err(ret_ty) && !Self::always_returns(&body.stmts) {
            self.error(
                name.span,
                format!(
                    "Function '{}' does not return a value on all paths",
                    name.name
                ),
            );
        }
        self.bind(id);
        id
    }

    /// Records the signature of a callable declaration.
    pub fn set_signature(
        &mut self,
        id: DeclId,
        tps: Vec<DeclId>,
        params: Vec<DeclId>,
        ret: Option<TypeId>,
        ty: TypeId,
    ) {
        if let Some(i) = self.decl_mut(id) {
            i.type_params = tps;
            i.params = params;
            i.ret = ret;
            i.ty = ty;
        }
    }

    fn check_action(&mut self, name: &Ident, params: &[Param], body: &Block) -> DeclId {
        let id = self.new_decl(DeclInfo::new(
            &name.name,
            name.span,
            DeclKind::Action,
            TypeId::ERROR,
        ));
        let ty = self.intern(Ty::Action { decl: id });
        let p_ids = self.with_parent(id, |c| {
            c.scoped(ScopeKind::Params, |c| {
                c.declare_params(params, ParamOwner::Action)
            })
        });
        self.set_signature(id, Vec::new(), p_ids.clone(), Some(TypeId::VOID), ty);
        let cx = BodyCx {
            place: Place::Action,
            owner: Some(id),
            ..BodyCx::top()
        };
        self.defining.push(id);
        self.with_parent(id, |c| {
            c.with_cx(cx, |c| {
                c.scoped(ScopeKind::Params, |c| {
                    c.reinsert(&p_ids);
                    c.scoped(ScopeKind::Body, |c| c.check_stmts(&body.stmts));
                })
            })
        });
        self.defining.pop();
        self.bind(id);
        id
    }

    fn check_extern_function(&mut self, p: &FunctionProto) -> DeclId {
        let id = self.new_decl(DeclInfo::new(
            &p.name.name,
            p.name.span,
            DeclKind::ExternFunction,
            TypeId::ERROR,
        ));
        let (tps, ret, ps) = self.with_parent(id, |c| {
            c.scoped(ScopeKind::Params, |c| {
                let tps = c.declare_type_params(&p.type_params);
                let ret = match &p.ret {
                    Some(r) => c.resolve_type(r),
                    None => {
                        c.error(
                            p.name.span,
                            format!("{}: extern functions need a return type", p.name.name),
                        );
                        TypeId::ERROR
                    }
                };
                let ps = c.declare_params(&p.params, ParamOwner::ExternFunction);
                (tps, ret, ps)
            })
        });
        self.set_signature(id, tps, ps, Some(ret), ret);
        self.bind(id);
        id
    }

    fn check_value_set(&mut self, elem: &Type, size: &Expr, name: &Ident) -> DeclId {
        let et = self.resolve_type(elem);
        let ok = match self.ty(et) {
            Ty::Bit(_)
            | Ty::Int(_)
            | Ty::Enum(_)
            | Ty::Error
            | Ty::NewType { .. }
            | Ty::Tuple(_) => true,
            Ty::Agg(a) => a.kind == AggKind::Struct,
            _ => false,
        };
        if !ok {
            let s = self.show(et);
            self.error(
                elem.span,
                format!("{}: value_set elements cannot have type {s}", name.name),
            );
        }
        let st = self.check_expr(size);
        if !self.is_err(st) && self.const_of(size).and_then(|v| v.as_int()).is_none() {
            self.error(
                size.span,
                format!("{}: value_set size must be constant", name.name),
            );
        }
        let ty = if ok {
            self.intern(Ty::ValueSet(et))
        } else {
            TypeId::ERROR
        };
        self.declare(DeclInfo::new(&name.name, name.span, DeclKind::ValueSet, ty))
    }
}
