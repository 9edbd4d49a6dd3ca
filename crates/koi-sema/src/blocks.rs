//! Parser and control declarations and their types, and package types: type parameters,
//! apply and constructor parameters, locals, and the bodies (parser states are in
//! `parser_states.rs`).

use crate::checker::{BodyCx, Checker, Place};
use crate::decls::{DeclId, DeclInfo, DeclKind};
use crate::params::ParamOwner;
use crate::scope::ScopeKind;
use crate::types::{BlockTy, NominalTy, Ty, TypeId};
use koi_syntax::ast::{Decl, DeclKind as D, Ident, Param, TypeParams};

impl Checker<'_> {
    fn block_ty(
        &mut self,
        is_parser: bool,
        id: DeclId,
        name: &str,
        tps: &[DeclId],
        params: &[DeclId],
    ) -> TypeId {
        let b = BlockTy {
            decl: id,
            name: name.to_string(),
            args: tps.iter().map(|t| self.decl_ty(*t)).collect(),
            params: self.param_tys(params),
        };
        self.intern(if is_parser {
            Ty::Parser(b)
        } else {
            Ty::Control(b)
        })
    }

    /// `parser P<T>(...);` and `control C<T>(...);`
    pub fn check_block_type(
        &mut self,
        is_parser: bool,
        name: &Ident,
        tps: &TypeParams,
        params: &[Param],
    ) -> DeclId {
        let kind = if is_parser {
            DeclKind::ParserType
        } else {
            DeclKind::ControlType
        };
        let owner = if is_parser {
            ParamOwner::Parser
        } else {
            ParamOwner::Control
        };
        let id = self.new_decl(DeclInfo::new(&name.name, name.span, kind, TypeId::ERROR));
        self.defining.push(id);
        let (tp, ps) = self.with_parent(id, |c| {
            c.scoped(ScopeKind::Params, |c| {
                let tp = c.declare_type_params(tps);
                let ps = c.declare_params(params, owner);
                (tp, ps)
            })
        });
        self.defining.pop();
        let ty = self.block_ty(is_parser, id, &name.name, &tp, &ps);
        self.set_signature(id, tp, ps, None, ty);
        self.bind(id);
        id
    }

    /// `package P<T>(...);`
    pub fn check_package_type(
        &mut self,
        name: &Ident,
        tps: &TypeParams,
        params: &[Param],
    ) -> DeclId {
        let id = self.new_decl(DeclInfo::new(
            &name.name,
            name.span,
            DeclKind::PackageType,
            TypeId::ERROR,
        ));
        self.defining.push(id);
        let (tp, ps) = self.with_parent(id, |c| {
            c.scoped(ScopeKind::Params, |c| {
                let tp = c.declare_type_params(tps);
                let ps = c.declare_params(params, ParamOwner::Package);
                (tp, ps)
            })
        });
        self.defining.pop();
        let args = tp.iter().map(|t| self.decl_ty(*t)).collect();
        let ty = self.intern(Ty::Package(NominalTy {
            decl: id,
            name: name.name.clone(),
            args,
        }));
        self.set_signature(id, tp, Vec::new(), None, ty);
        if let Some(i) = self.decl_mut(id) {
            i.ctor_params = ps;
        }
        self.bind(id);
        id
    }

    /// The header of a parser or control declaration: its type and parameters.
    fn block_header(
        &mut self,
        is_parser: bool,
        name: &Ident,
        tps: &TypeParams,
        params: &[Param],
        ctor: &[Param],
    ) -> (DeclId, Vec<DeclId>) {
        let kind = if is_parser {
            DeclKind::Parser
        } else {
            DeclKind::Control
        };
        let id = self.new_decl(DeclInfo::new(&name.name, name.span, kind, TypeId::ERROR));
        let (po, co) = if is_parser {
            (ParamOwner::Parser, ParamOwner::ParserCtor)
        } else {
            (ParamOwner::Control, ParamOwner::ControlCtor)
        };
        let (tp, ps, cs) = self.with_parent(id, |c| {
            let tp = c.declare_type_params(tps);
            let ps = c.declare_params(params, po);
            let cs = c.declare_params(ctor, co);
            (tp, ps, cs)
        });
        let ty = self.block_ty(is_parser, id, &name.name, &tp, &ps);
        self.set_signature(id, tp.clone(), ps, None, ty);
        if let Some(i) = self.decl_mut(id) {
            i.ctor_params = cs;
        }
        (id, tp)
    }

    pub fn check_parser_decl(&mut self, d: &Decl) -> Option<DeclId> {
        let D::Parser {
            name,
            type_params,
            params,
            ctor_params,
            locals,
            states,
        } = &d.kind
        else {
            return None;
        };
        self.defining.push(DeclId(self.out.decls.len() as u32));
        let id = self.scoped(ScopeKind::Params, |c| {
            let (id, _) = c.block_header(true, name, type_params, params, ctor_params);
            let cx = BodyCx {
                place: Place::ParserTop,
                owner: Some(id),
                ..BodyCx::top()
            };
            c.with_parent(id, |c| {
                c.with_cx(cx, |c| {
                    c.scoped(ScopeKind::Body, |c| {
                        c.check_locals(id, locals);
                        c.check_parser_states(id, name, states);
                    })
                })
            });
            id
        });
        self.defining.pop();
        self.bind(id);
        Some(id)
    }

    pub fn check_control_decl(&mut self, d: &Decl) -> Option<DeclId> {
        let D::Control {
            name,
            type_params,
            params,
            ctor_params,
            locals,
            body,
        } = &d.kind
        else {
            return None;
        };
        self.defining.push(DeclId(self.out.decls.len() as u32));
        let id = self.scoped(ScopeKind::Params, |c| {
            let (id, _) = c.block_header(false, name, type_params, params, ctor_params);
            let cx = BodyCx {
                place: Place::ControlTop,
                owner: Some(id),
                ..BodyCx::top()
            };
            c.with_parent(id, |c| {
                c.with_cx(cx.clone(), |c| {
                    c.scoped(ScopeKind::Body, |c| {
                        c.check_locals(id, locals);
                        let apply = BodyCx {
                            place: Place::ControlApply,
                            ..cx
                        };
                        c.with_cx(apply, |c| c.check_block(body));
                    })
                })
            });
            id
        });
        self.defining.pop();
        self.bind(id);
        Some(id)
    }

    /// Parser and control locals; they become members of the block's declaration.
    fn check_locals(&mut self, owner: DeclId, locals: &[Decl]) {
        for l in locals {
            if let Some(d) = self.check_decl(l)
                && let Some(i) = self.decl_mut(owner)
            {
                i.members.push(d);
            }
        }
    }
}
