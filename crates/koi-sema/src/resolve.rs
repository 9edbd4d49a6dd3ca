//! Name resolution of paths: what a (possibly dot-prefixed) name refers to, and the type and
//! compile-time value of a name used as an expression.

use crate::checked::Resolution;
use crate::checker::{Checker, Place};
use crate::decls::{DeclId, DeclKind};
use crate::types::{Ty, TypeId};
use crate::value::Value;
use koi_syntax::Span;
use koi_syntax::ast::{Expr, Path};

impl Checker<'_> {
    /// The declarations a path names (empty when none).
    pub fn lookup_path(&self, p: &Path) -> &[DeclId] {
        if p.global {
            self.scopes.lookup_global(&p.name.name)
        } else {
            self.scopes.lookup(&p.name.name)
        }
    }

    /// Reports an unknown name (or a self-reference of a declaration being defined).
    pub fn report_not_found(&mut self, name: &str, span: Span) {
        let selfref = self
            .defining
            .iter()
            .rev()
            .copied()
            .find(|d| self.decl(*d).is_some_and(|i| i.name == name));
        match selfref {
            Some(d) => {
                let kind = self.decl(d).map(|i| i.kind.describe()).unwrap_or("");
                self.error(
                    span,
                    format!(
                        "Self-referencing types not supported: '{name}' within '{kind} {name}'"
                    ),
                );
            }
            None => self.error(span, format!("{name}: declaration not found")),
        }
    }

    /// Checks a name used as an expression.
    pub fn check_path_expr(&mut self, e: &Expr, p: &Path) -> TypeId {
        let name = p.name.name.as_str();
        if !p.global && name == "error" {
            return self.intern(Ty::TypeName(TypeId::ERROR_TYPE));
        }
        if !p.global && name == "this" {
            return self.check_this(e);
        }
        // Inside a table the table's own name is the table (p4c: the table is declared in
        // the control before its properties), which no property may use.
        if let Some((t, at)) = &self.defining_table
            && !p.global
            && t == name
        {
            let at = *at;
            self.error_note(
                p.span,
                format!("{name}: Cannot refer to the containing table {name}"),
                at,
                "table declared here",
            );
            return TypeId::ERROR;
        }
        let found: Vec<DeclId> = self.lookup_path(p).to_vec();
        let Some(&d) = found.first() else {
            self.report_not_found(name, p.span);
            return TypeId::ERROR;
        };
        self.resolve_to(e, Resolution::Decl(d));
        self.path_to_decl(e, d)
    }

    fn check_this(&mut self, e: &Expr) -> TypeId {
        match self.cx.this_ty {
            Some(t) if self.cx.place == Place::MethodImpl => {
                self.set_ctk(e);
                t
            }
            _ => {
                self.error(
                    e.span,
                    "'this' can only be used in the definition of an abstract method",
                );
                TypeId::ERROR
            }
        }
    }

    /// The type (and compile-time facts) of a name referring to declaration `d`.
    fn path_to_decl(&mut self, e: &Expr, d: DeclId) -> TypeId {
        let Some(info) = self.decl(d) else {
            return TypeId::ERROR;
        };
        let (kind, ty, value, name) = (
            info.kind.clone(),
            info.ty,
            info.value.clone(),
            info.name.clone(),
        );
        match kind {
            DeclKind::Const => {
                match value {
                    Some(v) => self.set_const(e, v),
                    None => self.set_ctk(e),
                }
                ty
            }
            DeclKind::CtorParam(_) | DeclKind::Instance => {
                self.set_ctk(e);
                ty
            }
            DeclKind::Var | DeclKind::Param(_) => ty,
            DeclKind::MatchKindMember => {
                self.set_const(e, Value::MatchKind(name));
                TypeId::MATCH_KIND
            }
            DeclKind::Table | DeclKind::Action | DeclKind::State | DeclKind::ValueSet => {
                self.set_ctk(e);
                ty
            }
            k if k.is_type() => self.intern(Ty::TypeName(ty)),
            DeclKind::Function
            | DeclKind::ExternFunction
            | DeclKind::Method { .. }
            | DeclKind::MethodImpl => {
                self.error(
                    e.span,
                    format!("{name}: a function cannot be used as a value"),
                );
                TypeId::ERROR
            }
            _ => ty,
        }
    }
}
