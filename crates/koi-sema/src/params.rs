//! Parameters of every kind of declaration: directions, which types each kind of callable may
//! take (the spec's tables of run-time and constructor parameters), default values,
//! `@optional`, and the rule that directionless action parameters come last.

use crate::checker::Checker;
use crate::decls::{DeclId, DeclInfo, DeclKind, ParamInfo};
use crate::types::{ParamTy, Ty, TypeId};
use koi_syntax::ast::{Direction, ExprKind, Param};

/// The kind of declaration whose parameters are being declared.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ParamOwner {
    Action,
    Function,
    ExternFunction,
    ExternMethod,
    /// Apply parameters of parsers, controls and their types.
    Parser,
    Control,
    /// Constructor parameters of a parser.
    ParserCtor,
    ControlCtor,
    ExternCtor,
    Package,
}

impl ParamOwner {
    fn is_ctor(self) -> bool {
        matches!(
            self,
            ParamOwner::ParserCtor
                | ParamOwner::ControlCtor
                | ParamOwner::ExternCtor
                | ParamOwner::Package
        )
    }
}

impl Checker<'_> {
    /// Declares parameters in the current scope and returns their declarations.
    pub fn declare_params(&mut self, params: &[Param], owner: ParamOwner) -> Vec<DeclId> {
        let mut out = Vec::with_capacity(params.len());
        let mut seen_directionless = false;
        for (index, p) in params.iter().enumerate() {
            self.check_annotations(&p.annotations);
            let ty = self.resolve_type(&p.ty);
            let optional = p.annotations.iter().any(|a| a.name.name == "optional");
            if optional
                && matches!(
                    owner,
                    ParamOwner::ParserCtor
                        | ParamOwner::ControlCtor
                        | ParamOwner::Action
                        | ParamOwner::Function
                )
            {
                self.error(
                    p.name.span,
                    format!("{}: optional parameter not allowed here", p.name.name),
                );
            }
            if owner == ParamOwner::Action {
                if p.direction.is_none() {
                    seen_directionless = true;
                } else if seen_directionless {
                    self.error(
                        p.name.span,
                        format!(
                            "{}: direction-less action parameters have to be at the end",
                            p.name.name
                        ),
                    );
                }
            }
            if !self.is_err(ty) {
                self.check_param_type(p, ty, owner);
            }
            let default = self.check_param_default(p, ty, optional);
            let info = ParamInfo {
                dir: p.direction,
                index,
                optional,
                default,
            };
            let kind = if owner.is_ctor() {
                DeclKind::CtorParam(info)
            } else {
                DeclKind::Param(info)
            };
            out.push(self.declare(DeclInfo::new(&p.name.name, p.name.span, kind, ty)));
        }
        out
    }

    fn check_param_default(
        &mut self,
        p: &Param,
        ty: TypeId,
        optional: bool,
    ) -> Option<koi_syntax::ast::NodeId> {
        let d = p.default.as_ref()?;
        if optional {
            self.error(
                p.name.span,
                format!(
                    "{}: optional parameters cannot have default values",
                    p.name.name
                ),
            );
            return None;
        }
        // As p4c (`hasOut`): `inout` parameters are written back too.
        if matches!(p.direction, Some(Direction::Out | Direction::InOut)) {
            self.error(
                p.name.span,
                format!("{}: out parameters cannot have default values", p.name.name),
            );
            return None;
        }
        if matches!(d.kind, ExprKind::Dots) {
            if !self.is_err(ty) && !self.has_default_value(ty, 0) {
                self.error(
                    d.span,
                    format!(
                        "...: could not find default value for type {}",
                        self.show(ty)
                    ),
                );
            }
            return Some(d.id);
        }
        if !self.check_expr_ok(d, ty) {
            return None;
        }
        if !self.is_ctk(d) {
            self.error(
                d.span,
                "default parameter values must be compile-time constants",
            );
        }
        Some(d.id)
    }

    fn check_param_type(&mut self, p: &Param, ty: TypeId, owner: ParamOwner) {
        let name = &p.name.name;
        let tyname = self.show(ty);
        let has_dir = p.direction.is_some();
        if owner.is_ctor() && has_dir {
            self.error(
                p.name.span,
                format!(
                    "{name}: invalid direction. Constructor parameters cannot have a direction"
                ),
            );
            return;
        }
        let t = self.ty(ty).clone();
        let msg = match &t {
            Ty::Void | Ty::DontCare => Some(format!("{name}: parameter cannot have type {tyname}")),
            Ty::String | Ty::Extern(_) if has_dir => Some(format!(
                "{name}: a parameter with type {tyname} cannot have a direction"
            )),
            Ty::InfInt if has_dir => Some(format!(
                "{name}: parameters with type int must be directionless"
            )),
            Ty::InfInt if owner == ParamOwner::Action => Some(format!(
                "{name}: actions cannot have parameters with type int"
            )),
            Ty::Table { .. } | Ty::State | Ty::Action { .. } | Ty::ValueSet(_) => {
                Some(format!("{name}: parameter cannot have type {tyname}"))
            }
            Ty::Parser(_) | Ty::Control(_) | Ty::Package(_) if !self.block_param_ok(&t, owner) => {
                Some(format!("{name}: parameter cannot have type {tyname}"))
            }
            Ty::Parser(b) | Ty::Control(b)
                if matches!(
                    self.decl_kind(b.decl),
                    Some(DeclKind::Parser | DeclKind::Control)
                ) =>
            {
                Some(format!(
                    "{name}: parameter cannot have type {tyname}; use a parser or control type"
                ))
            }
            Ty::Extern(_) if owner == ParamOwner::Action || owner == ParamOwner::Function => {
                Some(format!("{name}: parameter cannot have type {tyname}"))
            }
            _ => None,
        };
        if let Some(m) = msg {
            self.error(p.name.span, m);
        }
    }

    /// Types whose values have a default (what `...` initialises them with).
    pub fn has_default_value(&self, ty: TypeId, depth: u32) -> bool {
        if depth > 32 {
            return false;
        }
        match self.ty(ty) {
            Ty::Bit(_)
            | Ty::Int(_)
            | Ty::InfInt
            | Ty::Varbit(_)
            | Ty::Bool
            | Ty::String
            | Ty::ErrorType => true,
            Ty::Enum(_) | Ty::NewType { .. } | Ty::Error => true,
            Ty::Agg(a) => a
                .fields
                .iter()
                .all(|f| self.has_default_value(f.ty, depth + 1)),
            Ty::Stack { elem, .. } => self.has_default_value(*elem, depth + 1),
            Ty::Tuple(ts) => ts.iter().all(|t| self.has_default_value(*t, depth + 1)),
            _ => false,
        }
    }

    /// Parsers, controls and packages as parameters: only as constructor parameters, and only
    /// where the spec's table allows.
    fn block_param_ok(&self, t: &Ty, owner: ParamOwner) -> bool {
        match owner {
            ParamOwner::Package => true,
            ParamOwner::ParserCtor => matches!(t, Ty::Parser(_)),
            ParamOwner::ControlCtor => matches!(t, Ty::Control(_)),
            ParamOwner::ExternMethod => true,
            _ => false,
        }
    }

    /// The signature entries of declared parameters.
    pub fn param_tys(&self, ids: &[DeclId]) -> Vec<ParamTy> {
        ids.iter()
            .filter_map(|d| self.decl(*d))
            .map(|i| ParamTy {
                name: i.name.clone(),
                dir: i.param().and_then(|p| p.dir),
                ty: i.ty,
            })
            .collect()
    }
}
