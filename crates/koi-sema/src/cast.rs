//! Explicit casts `(T) e`, exactly as the spec's list of legal casts allows them: between
//! `bit<1>` and `bool`, `int` to `bool` (values 0 and 1), between `bit<W>` and `int<W>`, between
//! widths of the same signedness, to and from `int`, between a `type` and its base type,
//! between a serializable enum and its underlying type, and of list and struct-valued
//! expressions to the types they can initialise.

use crate::checker::Checker;
use crate::constant;
use crate::types::{Ty, TypeId};
use koi_syntax::ast::{Expr, ExprKind, Type};

impl Checker<'_> {
    pub fn check_cast(&mut self, e: &Expr, t: &Type, a: &Expr) -> TypeId {
        let to = self.resolve_type(t);
        let from = self.check_expr(a);
        if self.is_err(to) || self.is_err(from) {
            return TypeId::ERROR;
        }
        if matches!(a.kind, ExprKind::List { .. } | ExprKind::StructInit { .. }) {
            if !self.castable_target(to) {
                self.error(t.span, format!("{}: cast not supported", self.show(to)));
                return TypeId::ERROR;
            }
            if !self.coerce(a, to) {
                return TypeId::ERROR;
            }
            self.fold_cast(e, a, to);
            return to;
        }
        if !self.cast_allowed(from, to, 0) {
            let (f, x) = (self.show(from), self.show(to));
            self.error(
                e.span,
                format!("cast not supported: cannot cast {f} to {x}"),
            );
            return TypeId::ERROR;
        }
        if to == TypeId::BOOL && from == TypeId::INF_INT {
            if let Some(v) = self.const_of(a).and_then(|v| v.as_int()).cloned() {
                if v != 0.into() && v != 1.into() {
                    self.error(
                        e.span,
                        format!("(bool){v}: Only 0 and 1 can be cast to booleans"),
                    );
                    return TypeId::ERROR;
                }
            } else {
                self.error(
                    e.span,
                    "only compile-time known int values can be cast to bool",
                );
                return TypeId::ERROR;
            }
        }
        self.fold_cast(e, a, to);
        to
    }

    fn fold_cast(&mut self, e: &Expr, a: &Expr, to: TypeId) {
        match self.converted_const(a) {
            Some(v) => {
                let from = self.type_of(a);
                if let Some(r) = constant::convert(&self.out.types, &v, from, to) {
                    self.set_const(e, r);
                }
            }
            None if self.is_ctk(a) => self.set_ctk(e),
            None => {}
        }
    }

    /// Types a list or struct-valued expression may be cast to (not tuples: p4c does not
    /// support casts to tuple types).
    fn castable_target(&self, to: TypeId) -> bool {
        matches!(self.ty(to), Ty::Agg(_) | Ty::Stack { .. } | Ty::List(_))
    }

    /// p4c's `canCastBetween(dest, src)`: whether a value of type `src` may be cast to `dest`
    /// (how p4c relates a for-in loop variable to the elements it iterates over).
    pub fn p4c_can_cast(&self, dest: TypeId, src: TypeId) -> bool {
        if dest == src {
            return true;
        }
        let repr = |t: TypeId| match self.ty(t) {
            Ty::Enum(e) => e.repr,
            _ => None,
        };
        match (self.ty(src), self.ty(dest)) {
            (_, Ty::NewType { base, .. }) if *base == src => true,
            (Ty::Bit(a) | Ty::Int(a), Ty::Bit(b) | Ty::Int(b)) => {
                a == b || matches!(self.ty(src), Ty::Bit(_)) == matches!(self.ty(dest), Ty::Bit(_))
            }
            (Ty::Bit(1), Ty::Bool) | (Ty::Bool, Ty::Bit(1)) => true,
            (Ty::Bit(_) | Ty::Int(_), Ty::Enum(_)) => repr(dest) == Some(src),
            (Ty::Bit(_) | Ty::Int(_), Ty::InfInt) => true,
            (Ty::InfInt, Ty::Bit(_) | Ty::Int(_) | Ty::Bool | Ty::InfInt) => true,
            (Ty::NewType { base, .. }, _) => *base == dest,
            (Ty::Enum(e), Ty::Bit(_) | Ty::Int(_)) => e.repr == Some(dest),
            (Ty::Enum(e), Ty::Enum(_)) => e.repr.is_some() && e.repr == repr(dest),
            _ => false,
        }
    }

    /// The spec's explicit casts between two (non-literal) types.
    fn cast_allowed(&self, from: TypeId, to: TypeId, depth: u32) -> bool {
        if depth > 16 {
            return false;
        }
        if from == to {
            return self.is_castable_kind(to);
        }
        let (f, t) = (self.ty(from), self.ty(to));
        match (f, t) {
            (Ty::Bit(1), Ty::Bool) | (Ty::Bool, Ty::Bit(1)) => true,
            (Ty::InfInt, Ty::Bool) => true,
            (Ty::InvalidHeader, Ty::Agg(a)) => a.kind != crate::types::AggKind::Struct,
            (Ty::Bit(a), Ty::Int(b)) | (Ty::Int(a), Ty::Bit(b)) => a == b,
            (Ty::Bit(_), Ty::Bit(_)) | (Ty::Int(_), Ty::Int(_)) => true,
            (Ty::Bit(_) | Ty::Int(_), Ty::InfInt) | (Ty::InfInt, Ty::Bit(_) | Ty::Int(_)) => true,
            (Ty::NewType { base, .. }, _) if self.cast_allowed(*base, to, depth + 1) => true,
            (_, Ty::NewType { base, .. }) => {
                from == *base || (from == TypeId::INF_INT && self.out.types.fixed(*base).is_some())
            }
            (Ty::Enum(e), _) if e.repr.is_some_and(|r| self.cast_allowed(r, to, depth + 1)) => true,
            (_, Ty::Enum(e)) => e
                .repr
                .is_some_and(|r| self.cast_allowed(from, r, depth + 1)),
            _ => false,
        }
    }

    fn is_castable_kind(&self, t: TypeId) -> bool {
        !matches!(
            self.ty(t),
            Ty::Extern(_)
                | Ty::Parser(_)
                | Ty::Control(_)
                | Ty::Package(_)
                | Ty::Table { .. }
                | Ty::Void
                | Ty::State
                | Ty::Action { .. }
                | Ty::TypeName(_)
                | Ty::Var { .. }
        )
    }
}
