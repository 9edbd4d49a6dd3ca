//! Implicit conversions: where a value of one type may be used where another is expected.
//!
//! Per the spec, P4 converts implicitly only `int` to `bit<W>`/`int<W>`, a serializable enum to
//! its underlying type, and list / struct-valued expressions (`{1, 2}`, `{a = 1}`) to the
//! tuple, list, struct, header or stack type the context gives them (element by element, so
//! that `int` elements are cast too). Parser and control values convert structurally to parser
//! and control types with the same signature. Each conversion is recorded in
//! `Checked::casts` on the converted node.

use crate::checker::Checker;
use crate::types::{AggKind, Ty, TypeId};
use crate::value::fits;
use koi_syntax::Span;
use koi_syntax::ast::{Expr, ExprKind, Ident};

impl Checker<'_> {
    /// Converts the checked expression `e` to type `to`, recording the implicit cast, or
    /// reports why it cannot be converted.
    pub fn coerce(&mut self, e: &Expr, to: TypeId) -> bool {
        let from = self.type_of(e);
        if from == to || self.is_err(from) || self.is_err(to) {
            return true;
        }
        match &e.kind {
            ExprKind::List { items, dots } if self.is_list_target(to) => {
                return self.coerce_list(e, items, *dots, to);
            }
            ExprKind::StructInit { fields, dots } if self.out.types.agg(to).is_some() => {
                return self.coerce_struct_init(e, fields, *dots, to);
            }
            _ => {}
        }
        if matches!(self.ty(from), Ty::TypeName(_)) {
            self.error(e.span, "Type cannot be used here, expecting an expression.");
            return false;
        }
        if self.implicit_ok(e, from, to) {
            self.set_cast(e, to);
            return true;
        }
        if let ExprKind::Ternary(_, a, b) = &e.kind {
            let errs = self.diags.error_count();
            if self.coerce(a, to) && self.coerce(b, to) {
                self.set_cast(e, to);
                return true;
            }
            if self.diags.error_count() > errs {
                return false;
            }
        }
        self.mismatch(e.span, from, to);
        false
    }

    /// Reports that a value of type `found` is used where `expected` is needed.
    pub fn mismatch(&mut self, span: Span, found: TypeId, expected: TypeId) {
        let (f, x) = (self.show(found), self.show(expected));
        self.error(span, format!("type mismatch: expected {x}, found {f}"));
    }

    /// True when `from` converts implicitly to `to` (no list or struct expression involved).
    pub fn implicit_ok(&mut self, e: &Expr, from: TypeId, to: TypeId) -> bool {
        if from == to {
            return true;
        }
        match (self.ty(from).clone(), self.ty(to).clone()) {
            (Ty::Error, _) | (_, Ty::Error) | (_, Ty::DontCare) => true,
            (Ty::InfInt, Ty::Bit(w)) => self.warn_if_truncated(e, false, w),
            (Ty::InfInt, Ty::Int(w)) => self.warn_if_truncated(e, true, w),
            // As in p4c, an `int` value takes a new type whose underlying type is (through any
            // chain of new types) `bit<W>` or `int<W>` wherever it is unified with it (an
            // assignment, an initializer, an argument, a return value), though not in an
            // operation such as `==` or `+`.
            (Ty::InfInt, Ty::NewType { .. }) => match self.newtype_repr(to) {
                Some(r) => self.implicit_ok(e, from, r),
                None => false,
            },
            // p4c accepts fixed-width values where `int` is expected (constants, directionless
            // extern parameters).
            (Ty::Bit(_) | Ty::Int(_), Ty::InfInt) => true,
            (Ty::Enum(en), _) => en.repr == Some(to),
            (Ty::InvalidHeader, Ty::Agg(a)) => a.kind != crate::types::AggKind::Struct,
            (Ty::Parser(_), Ty::Parser(_))
            | (Ty::Control(_), Ty::Control(_))
            | (Ty::Extern(_), Ty::Extern(_))
            | (Ty::Package(_), Ty::Package(_)) => self.matches_with_wildcards(to, from),
            _ => false,
        }
    }

    /// The `bit<W>` or `int<W>` type under the new type `t` (through nested new types).
    fn newtype_repr(&self, t: TypeId) -> Option<TypeId> {
        let mut t = t;
        for _ in 0..32 {
            match self.ty(t) {
                Ty::NewType { base, .. } => t = *base,
                Ty::Bit(_) | Ty::Int(_) => return Some(t),
                _ => return None,
            }
        }
        None
    }

    /// Structural match where type variables and `_` in either type match anything.
    pub fn matches_with_wildcards(&mut self, to: TypeId, from: TypeId) -> bool {
        let mut vars = Vec::new();
        self.collect_vars(to, &mut vars, 0);
        self.collect_vars(from, &mut vars, 0);
        let mut inf = crate::generics::Infer::new(vars);
        inf.unify(&mut self.out.types, to, from)
    }

    fn collect_vars(&self, t: TypeId, out: &mut Vec<crate::decls::DeclId>, depth: u32) {
        if depth > 32 {
            return;
        }
        if let Ty::Var { decl, .. } = self.ty(t)
            && !out.contains(decl)
        {
            out.push(*decl);
        }
        for c in self.out.types.children(t) {
            self.collect_vars(c, out, depth + 1);
        }
    }

    fn warn_if_truncated(&mut self, e: &Expr, signed: bool, w: u32) -> bool {
        if let Some(v) = self.const_of(e).and_then(|v| v.as_int()).cloned()
            && !fits(&v, signed, w)
        {
            let kind = if signed { "int" } else { "bit" };
            self.warning(
                e.span,
                format!("{v}: value does not fit in {kind}<{w}>; it is truncated"),
            );
        }
        true
    }

    fn is_list_target(&self, to: TypeId) -> bool {
        match self.ty(to) {
            Ty::Agg(a) => a.kind != AggKind::HeaderUnion,
            Ty::Tuple(_) | Ty::List(_) | Ty::Stack { .. } => true,
            _ => false,
        }
    }

    /// `{ e1, e2, ... }` converted to a tuple, list, struct, header or stack type.
    fn coerce_list(&mut self, e: &Expr, items: &[Expr], dots: bool, to: TypeId) -> bool {
        let targets: Vec<TypeId> = match self.ty(to).clone() {
            Ty::Agg(a) => a.fields.iter().map(|f| f.ty).collect(),
            Ty::Tuple(ts) => ts,
            Ty::List(t) => vec![t; items.len()],
            Ty::Stack { elem, size } => vec![elem; size as usize],
            _ => Vec::new(),
        };
        let count_ok = if dots {
            items.len() <= targets.len()
        } else {
            items.len() == targets.len()
        };
        if !count_ok {
            let t = self.show(to);
            self.error(
                e.span,
                format!(
                    "type mismatch: a list of {} elements cannot be converted to {t}, which has {} elements",
                    items.len(),
                    targets.len()
                ),
            );
            return false;
        }
        let mut ok = true;
        for (item, t) in items.iter().zip(targets) {
            ok &= self.coerce(item, t);
        }
        if ok {
            self.set_cast(e, to);
        }
        ok
    }

    /// `{ f = e, ... }` converted to a struct or header type.
    fn coerce_struct_init(
        &mut self,
        e: &Expr,
        fields: &[(Ident, Expr)],
        dots: bool,
        to: TypeId,
    ) -> bool {
        let Some(agg) = self.out.types.agg(to).cloned() else {
            return false;
        };
        let mut ok = true;
        for (name, value) in fields {
            match agg.field(&name.name) {
                Some((_, f)) => ok &= self.coerce(value, f.ty),
                None => {
                    let t = self.show(to);
                    self.error(
                        name.span,
                        format!("Field {} is not a member of {t}", name.name),
                    );
                    ok = false;
                }
            }
        }
        let missing: Vec<&str> = agg
            .fields
            .iter()
            .filter(|f| !fields.iter().any(|(n, _)| n.name == f.name))
            .map(|f| f.name.as_str())
            .collect();
        if ok && !dots && !missing.is_empty() && agg.kind != AggKind::HeaderUnion {
            let t = self.show(to);
            self.error(
                e.span,
                format!(
                    "type mismatch: no value given for field {} of {t}",
                    missing.join(", ")
                ),
            );
            ok = false;
        }
        if ok {
            self.set_cast(e, to);
        }
        ok
    }
}
