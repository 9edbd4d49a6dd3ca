//! Member access (`e.f`: fields, enum and error members, header stack properties, table apply
//! results), indexing (`e[i]` on stacks and tuples) and bit slices (`e[h:l]`).

use crate::checked::Resolution;
use crate::checker::Checker;
use crate::decls::DeclKind;
use crate::types::{AggKind, Ty, TypeId};
use crate::value::Value;
use koi_syntax::ast::{Expr, Ident};
use num_bigint::BigInt;
use num_traits::Signed;

impl Checker<'_> {
    pub fn check_member(&mut self, e: &Expr, base: &Expr, name: &Ident) -> TypeId {
        let bt = self.check_expr(base);
        if self.is_err(bt) {
            return bt;
        }
        match self.ty(bt).clone() {
            Ty::TypeName(t) => self.type_member(e, t, name),
            Ty::Agg(a) => match a.field(&name.name) {
                Some((i, f)) => {
                    self.resolve_to(e, Resolution::Field(i));
                    if let Some(Value::Struct(fs)) = self.converted_const(base)
                        && let Some((_, v)) = fs.iter().find(|(n, _)| *n == name.name)
                    {
                        self.set_const(e, v.clone());
                    }
                    f.ty
                }
                None => {
                    let what = match a.kind {
                        AggKind::Struct => "structure",
                        AggKind::Header => "header",
                        AggKind::HeaderUnion => "header_union",
                    };
                    self.error(
                        name.span,
                        format!("Field {} is not a member of {what} {}", name.name, a.name),
                    );
                    TypeId::ERROR
                }
            },
            Ty::Stack { elem, size } => self.stack_member(e, elem, size, name),
            Ty::TableResult { table } => match name.name.as_str() {
                "hit" => {
                    self.resolve_to(e, Resolution::TableHit);
                    TypeId::BOOL
                }
                "miss" => {
                    self.resolve_to(e, Resolution::TableMiss);
                    TypeId::BOOL
                }
                "action_run" => {
                    self.resolve_to(e, Resolution::ActionRun);
                    self.intern(Ty::ActionRun { table })
                }
                _ => self.no_member(base, name, bt),
            },
            _ => self.no_member(base, name, bt),
        }
    }

    fn no_member(&mut self, base: &Expr, name: &Ident, bt: TypeId) -> TypeId {
        let s = self.show(bt);
        let _ = base;
        self.error(
            name.span,
            format!(
                "Cannot extract field {} from a value of type {s}",
                name.name
            ),
        );
        TypeId::ERROR
    }

    /// `E.X` for enums and `error.X`.
    fn type_member(&mut self, e: &Expr, t: TypeId, name: &Ident) -> TypeId {
        match self.ty(t).clone() {
            Ty::ErrorType => {
                if !self.out.errors.contains(&name.name) {
                    self.error(
                        name.span,
                        format!("error.{}: declaration not found", name.name),
                    );
                    return TypeId::ERROR;
                }
                self.resolve_to(e, Resolution::ErrorMember(name.name.clone()));
                self.set_const(e, Value::Error(name.name.clone()));
                TypeId::ERROR_TYPE
            }
            Ty::Enum(en) => {
                if !en.members.contains(&name.name) {
                    self.error(
                        name.span,
                        format!("{}.{}: Invalid enum tag", en.name, name.name),
                    );
                    return TypeId::ERROR;
                }
                let repr = self.enum_member_value(en.decl, &name.name);
                self.resolve_to(
                    e,
                    Resolution::EnumMember {
                        ty: t,
                        member: name.name.clone(),
                    },
                );
                self.set_const(
                    e,
                    Value::Enum {
                        ty: t,
                        member: name.name.clone(),
                        repr,
                    },
                );
                t
            }
            _ => {
                let s = self.show(t);
                self.error(
                    name.span,
                    format!("Cannot extract field {} from type {s}", name.name),
                );
                TypeId::ERROR
            }
        }
    }

    fn enum_member_value(&self, decl: crate::decls::DeclId, member: &str) -> Option<BigInt> {
        match self.decl(decl)?.value.as_ref()? {
            Value::Struct(fs) => fs.iter().find(|(n, _)| n == member)?.1.as_int().cloned(),
            _ => None,
        }
    }

    fn stack_member(&mut self, e: &Expr, elem: TypeId, size: u32, name: &Ident) -> TypeId {
        let stack_only = matches!(name.name.as_str(), "size" | "lastIndex" | "next" | "last");
        if stack_only && !self.out.types.is_header_like(elem) && !self.is_err(elem) {
            // p4c: these belong to header stacks, not to arrays of other types.
            self.error(
                e.span,
                format!("'{}' can only be used on header stacks", name.name),
            );
            return TypeId::ERROR;
        }
        match name.name.as_str() {
            "size" => {
                self.resolve_to(e, Resolution::StackSize);
                self.set_const(e, Value::Int(BigInt::from(size)));
                self.out.types.bit(32)
            }
            "lastIndex" => {
                self.require_parser(e, "'lastIndex' for stacks can only be used in a parser");
                self.resolve_to(e, Resolution::StackLastIndex);
                self.out.types.bit(32)
            }
            "next" | "last" => {
                self.require_parser(
                    e,
                    "'last', and 'next' for stacks can only be used in a parser",
                );
                let r = if name.name == "next" {
                    Resolution::StackNext
                } else {
                    Resolution::StackLast
                };
                self.resolve_to(e, r);
                elem
            }
            _ => {
                let s = self.show(elem);
                self.error(
                    name.span,
                    format!("Cannot extract field {} from a stack of {s}", name.name),
                );
                TypeId::ERROR
            }
        }
    }

    fn require_parser(&mut self, e: &Expr, msg: &str) {
        if !self.cx.in_parser() {
            self.error(e.span, msg.to_string());
        }
    }

    pub fn check_index(&mut self, e: &Expr, base: &Expr, idx: &Expr) -> TypeId {
        let bt = self.check_expr(base);
        let it = self.check_expr(idx);
        if self.is_err(bt) || self.is_err(it) {
            return TypeId::ERROR;
        }
        let it = match self.out.types.enum_repr(it) {
            Some(r) => {
                self.set_cast(idx, r);
                r
            }
            None => it,
        };
        let iv = self.const_of(idx).and_then(|v| v.as_int()).cloned();
        match self.ty(bt).clone() {
            Ty::Stack { elem, size } => {
                if !self.out.types.is_integer(it) {
                    let s = self.show(it);
                    self.error(
                        idx.span,
                        format!("Array index must be an integer, but it has type {s}"),
                    );
                    return TypeId::ERROR;
                }
                if let Some(v) = iv {
                    if v.is_negative() {
                        self.error(idx.span, format!("{v}: Negative array index"));
                        return TypeId::ERROR;
                    }
                    if v >= BigInt::from(size) {
                        self.error(
                            idx.span,
                            format!("{v}: array index out of bounds (size {size})"),
                        );
                        return TypeId::ERROR;
                    }
                    if it == TypeId::INF_INT {
                        let b32 = self.out.types.bit(32);
                        self.set_cast(idx, b32);
                    }
                    if let Some(Value::Tuple(vs)) = self.converted_const(base)
                        && let Some(x) = usize::try_from(&v).ok().and_then(|i| vs.get(i))
                    {
                        self.set_const(e, x.clone());
                    }
                } else if it == TypeId::INF_INT {
                    let b32 = self.out.types.bit(32);
                    self.set_cast(idx, b32);
                }
                elem
            }
            Ty::Tuple(ts) => {
                let Some(i) = iv.as_ref().and_then(|v| usize::try_from(v).ok()) else {
                    self.error(
                        idx.span,
                        "Tuple index must be a non-negative compile-time constant",
                    );
                    return TypeId::ERROR;
                };
                let Some(t) = ts.get(i).copied() else {
                    self.error(
                        idx.span,
                        format!("Tuple index {i} out of bounds (size {})", ts.len()),
                    );
                    return TypeId::ERROR;
                };
                self.resolve_to(e, Resolution::Field(i));
                if let Some(Value::Tuple(vs)) = self.const_of(base).cloned()
                    && let Some(x) = vs.get(i)
                {
                    self.set_const(e, x.clone());
                }
                t
            }
            _ => {
                let s = self.show(bt);
                self.error(
                    e.span,
                    format!("Indexing applied to non-array and non-tuple type {s}"),
                );
                TypeId::ERROR
            }
        }
    }

    pub fn check_slice(&mut self, e: &Expr, base: &Expr, hi: &Expr, lo: &Expr) -> TypeId {
        let bt = self.check_expr(base);
        let h = self.slice_bound(hi);
        let l = self.slice_bound(lo);
        if self.is_err(bt) {
            return bt;
        }
        let bt = match self.out.types.enum_repr(bt) {
            Some(r) => {
                self.set_cast(base, r);
                r
            }
            None => bt,
        };
        let width = match self.ty(bt) {
            Ty::Bit(w) | Ty::Int(w) => Some(*w),
            Ty::InfInt => None,
            _ => {
                let s = self.show(bt);
                self.error(
                    e.span,
                    format!("bit extraction only defined for bit<> types, not {s}"),
                );
                return TypeId::ERROR;
            }
        };
        let (Some(h), Some(l)) = (h, l) else {
            return TypeId::ERROR;
        };
        if h < l {
            self.error(
                e.span,
                format!("[{h}:{l}]: bit slicing should be specified as [msb:lsb]"),
            );
            return TypeId::ERROR;
        }
        if let Some(w) = width {
            if h >= w {
                self.error(
                    e.span,
                    format!("[{h}:{l}]: bit index {h} greater than width {w}"),
                );
                return TypeId::ERROR;
            }
        } else if !self.folds_before_typing(base) {
            // p4c folds slices of integer constants before type checking; a slice of any other
            // int value reaches its type checker, which takes only bit<> and int<> values.
            self.error(
                e.span,
                "bit extraction only defined for bit<> types, not int",
            );
            return TypeId::ERROR;
        }
        let rt = self.out.types.bit(h - l + 1);
        if let Some(v) = self.converted_const(base).and_then(|v| v.as_int().cloned()) {
            let x = (v >> (l as usize)) & ((BigInt::from(1) << ((h - l + 1) as usize)) - 1);
            self.set_const(e, Value::Int(x));
        } else if self.is_ctk(base) {
            self.set_ctk(e);
        }
        rt
    }

    /// `e[lo +: w]`: the `w` bits of `e` starting at bit `lo`.
    pub fn check_slice_width(&mut self, e: &Expr, base: &Expr, lo: &Expr, w: &Expr) -> TypeId {
        let bt = self.check_expr(base);
        let lt = self.check_expr(lo);
        let wv = self.slice_bound(w);
        if self.is_err(bt) || self.is_err(lt) {
            return TypeId::ERROR;
        }
        let Some(wv) = wv else {
            return TypeId::ERROR;
        };
        if wv == 0 {
            self.error(w.span, "the width of a slice must be positive");
            return TypeId::ERROR;
        }
        let width = match self.ty(bt) {
            Ty::Bit(x) | Ty::Int(x) => *x,
            _ => {
                let s = self.show(bt);
                self.error(
                    e.span,
                    format!("bit extraction only defined for bit<> types, not {s}"),
                );
                return TypeId::ERROR;
            }
        };
        if !self.out.types.is_integer(lt) && self.out.types.enum_repr(lt).is_none() {
            let s = self.show(lt);
            self.error(
                lo.span,
                format!("slice bit index must be an integer, not {s}"),
            );
            return TypeId::ERROR;
        }
        if wv > width {
            self.error(
                e.span,
                format!("[+:{wv}]: slice width greater than width {width}"),
            );
            return TypeId::ERROR;
        }
        if self.const_of(lo).is_some() {
            let Some(l) = self.slice_bound(lo) else {
                return TypeId::ERROR;
            };
            let h = l.saturating_add(wv - 1);
            if h >= width {
                self.error(
                    e.span,
                    format!("[{l}+:{wv}]: bit index {h} greater than width {width}"),
                );
                return TypeId::ERROR;
            }
            if let Some(v) = self.converted_const(base).and_then(|v| v.as_int().cloned()) {
                let x = (v >> (l as usize)) & ((BigInt::from(1) << (wv as usize)) - 1);
                self.set_const(e, Value::Int(x));
            }
        } else if lt == TypeId::INF_INT {
            self.error(lo.span, "a non-constant slice index needs a fixed width");
            return TypeId::ERROR;
        }
        self.out.types.bit(wv)
    }

    /// Whether p4c's constant folding, which runs before its type checking, turns `e` (an `int`
    /// value) into a literal: literals, constants with such values, and operators over them.
    fn folds_before_typing(&self, e: &Expr) -> bool {
        use koi_syntax::ast::{ExprKind as E, UnOp};
        match &e.kind {
            E::Int(_) => true,
            E::Path(_) => match self.out.resolutions.get(&e.id) {
                Some(Resolution::Decl(d)) => self
                    .decl(*d)
                    .is_some_and(|i| i.kind == DeclKind::Const && i.value.is_some()),
                _ => false,
            },
            E::Unary(UnOp::Neg | UnOp::Plus, x) | E::Cast(_, x) => self.folds_before_typing(x),
            E::Binary(_, a, b) => self.folds_before_typing(a) && self.folds_before_typing(b),
            E::Ternary(c, a, b) => match self.const_of(c) {
                Some(Value::Bool(true)) => self.folds_before_typing(a),
                Some(Value::Bool(false)) => self.folds_before_typing(b),
                _ => false,
            },
            _ => false,
        }
    }

    /// A slice bound: a compile-time known non-negative integer.
    fn slice_bound(&mut self, b: &Expr) -> Option<u32> {
        let t = self.check_expr(b);
        if self.is_err(t) {
            return None;
        }
        if !self.out.types.is_integer(t) && self.out.types.enum_repr(t).is_none() {
            let s = self.show(t);
            self.error(
                b.span,
                format!("slice bit index must be an integer, not {s}"),
            );
            return None;
        }
        let Some(v) = self.const_of(b).and_then(|v| v.as_int()).cloned() else {
            self.error(b.span, "slice bit index values must be constants");
            return None;
        };
        if v.is_negative() {
            self.error(
                b.span,
                format!("{v}: expected slice indexes to be non-negative"),
            );
            return None;
        }
        match u32::try_from(&v) {
            Ok(x) if x < crate::types::MAX_WIDTH => Some(x),
            _ => {
                self.error(b.span, format!("{v}: slice index too large"));
                None
            }
        }
    }
}
