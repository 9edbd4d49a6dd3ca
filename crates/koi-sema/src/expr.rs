//! Expression checking: the dispatcher over expression kinds, literals, list and
//! struct-valued expressions, and type references. Operators, member accesses, calls and casts
//! have their own modules.
//!
//! Every checked expression gets its natural type in `Checked::expr_types` (an untyped literal
//! is `int`, `{1, true}` is `tuple<int, bool>`, `{a = 1}` is a struct-literal type); converting
//! it to the type its context needs records an implicit cast (see `coerce.rs`).

use crate::checker::{Checker, MAX_DEPTH};
use crate::constant;
use crate::typeref::Generic;
use crate::types::{Field, MAX_BITS_WIDTH, Ty, TypeId};
use crate::value::{Value, fits, wrap};
use koi_syntax::ast::{Expr, ExprKind, IntLit};
use num_bigint::BigInt;

impl Checker<'_> {
    /// Checks an expression and returns its (natural) type.
    pub fn check_expr(&mut self, e: &Expr) -> TypeId {
        if self.depth > MAX_DEPTH {
            self.error(e.span, "expression is nested too deeply");
            self.set_type(e, TypeId::ERROR);
            return TypeId::ERROR;
        }
        self.depth += 1;
        let ty = self.check_expr_kind(e);
        self.depth -= 1;
        self.set_type(e, ty);
        ty
    }

    fn check_expr_kind(&mut self, e: &Expr) -> TypeId {
        match &e.kind {
            ExprKind::Int(lit) => self.check_int_lit(e, lit),
            ExprKind::Bool(b) => {
                self.set_const(e, Value::Bool(*b));
                TypeId::BOOL
            }
            ExprKind::Str(s) => {
                self.set_const(e, Value::Str(s.clone()));
                TypeId::STRING
            }
            ExprKind::Path(p) => self.check_path_expr(e, p),
            ExprKind::Member(base, name) => self.check_member(e, base, name),
            ExprKind::Index(base, idx) => self.check_index(e, base, idx),
            ExprKind::Slice(base, hi, lo) => self.check_slice(e, base, hi, lo),
            ExprKind::SliceWidth(base, lo, w) => self.check_slice_width(e, base, lo, w),
            ExprKind::InvalidHeader => {
                self.set_ctk(e);
                self.intern(Ty::InvalidHeader)
            }
            ExprKind::Call {
                callee,
                type_args,
                args,
            } => self.check_call(e, callee, type_args, args),
            ExprKind::Unary(op, a) => self.check_unary(e, *op, a),
            ExprKind::Binary(op, l, r) => self.check_binary(e, *op, l, r),
            ExprKind::Ternary(c, a, b) => self.check_ternary(e, c, a, b),
            ExprKind::Cast(t, a) => self.check_cast(e, t, a),
            ExprKind::List { items, .. } => self.check_list_expr(e, items),
            ExprKind::StructInit { fields, .. } => self.check_struct_init(e, fields),
            ExprKind::TypeRef(t) => {
                let ty = self.resolve_type_g(t, Generic::Infer);
                if self.is_err(ty) {
                    return ty;
                }
                self.intern(Ty::TypeName(ty))
            }
            ExprKind::DontCare => TypeId::DONT_CARE,
            ExprKind::Default | ExprKind::Mask(..) | ExprKind::Range(..) => {
                self.error(
                    e.span,
                    "a keyset expression is only allowed in a select case or table entry",
                );
                TypeId::ERROR
            }
            ExprKind::Dots => {
                self.error(
                    e.span,
                    "'...' is only allowed at the end of a list or struct expression",
                );
                TypeId::ERROR
            }
            ExprKind::Invalid => TypeId::ERROR,
        }
    }

    fn check_int_lit(&mut self, e: &Expr, lit: &IntLit) -> TypeId {
        let mut v = BigInt::from(lit.value.clone());
        if lit.negative {
            v = -v;
        }
        let Some((signed, w)) = lit.width else {
            self.set_const(e, Value::Int(v));
            return TypeId::INF_INT;
        };
        if w > MAX_BITS_WIDTH {
            self.error(
                e.span,
                format!("{w}: this implementation does not support bitstrings this large"),
            );
            return TypeId::ERROR;
        }
        if signed && w == 0 {
            self.error(e.span, "Width of signed type cannot be zero");
            return TypeId::ERROR;
        }
        if !fits(&v, signed, w) {
            let kind = if signed { "int" } else { "bit" };
            self.warning(
                e.span,
                format!("value does not fit in {kind}<{w}>; it is truncated"),
            );
        }
        self.set_const(e, Value::Int(wrap(&v, signed, w)));
        if signed {
            self.out.types.int(w)
        } else {
            self.out.types.bit(w)
        }
    }

    /// `{ e1, e2 }`: a tuple of the items' types, until the context gives it another type.
    fn check_list_expr(&mut self, e: &Expr, items: &[Expr]) -> TypeId {
        let tys: Vec<TypeId> = items.iter().map(|i| self.check_expr(i)).collect();
        if tys.iter().any(|t| self.is_err(*t)) {
            return TypeId::ERROR;
        }
        if let Some(vals) = items
            .iter()
            .map(|i| self.const_of(i).cloned())
            .collect::<Option<Vec<Value>>>()
        {
            self.set_const(e, Value::Tuple(vals));
        } else if items.iter().all(|i| self.is_ctk(i)) {
            self.set_ctk(e);
        }
        self.intern(Ty::Tuple(tys))
    }

    /// `{ a = e1, b = e2 }`
    fn check_struct_init(&mut self, e: &Expr, fields: &[(koi_syntax::ast::Ident, Expr)]) -> TypeId {
        let mut fs: Vec<Field> = Vec::new();
        let mut failed = false;
        for (name, value) in fields {
            let ty = self.check_expr(value);
            failed |= self.is_err(ty);
            if fs.iter().any(|f| f.name == name.name) {
                let n = &name.name;
                self.error(name.span, format!("{n}: Duplicates declaration {n}"));
                failed = true;
                continue;
            }
            fs.push(Field {
                name: name.name.clone(),
                ty,
            });
        }
        if failed {
            return TypeId::ERROR;
        }
        let vals: Option<Vec<(String, Value)>> = fields
            .iter()
            .map(|(n, v)| self.const_of(v).cloned().map(|c| (n.name.clone(), c)))
            .collect();
        match vals {
            Some(v) => self.set_const(e, Value::Struct(v)),
            None if fields.iter().all(|(_, v)| self.is_ctk(v)) => self.set_ctk(e),
            None => {}
        }
        self.intern(Ty::StructLit(fs))
    }

    /// Checks `e` where a value of type `expected` is needed, inserting implicit casts.
    /// Returns the expected type, or the error type when the value does not convert.
    pub fn check_expr_as(&mut self, e: &Expr, expected: TypeId) -> TypeId {
        if matches!(e.kind, ExprKind::Dots) {
            // `...`: the default value of the expected type.
            self.set_type(e, expected);
            if let Some(v) = crate::constant::default_value(&self.out.types, expected) {
                self.set_const(e, v);
            } else {
                self.set_ctk(e);
            }
            return expected;
        }
        self.check_expr(e);
        if self.coerce(e, expected) {
            expected
        } else {
            TypeId::ERROR
        }
    }

    /// Like [`Checker::check_expr_as`]; true when the value converts.
    pub fn check_expr_ok(&mut self, e: &Expr, expected: TypeId) -> bool {
        let t = self.check_expr_as(e, expected);
        !self.is_err(t)
    }

    /// The compile-time value of `e` after its implicit cast (if any).
    pub fn converted_const(&mut self, e: &Expr) -> Option<Value> {
        let v = self.const_of(e)?.clone();
        let Some(to) = self.out.casts.get(&e.id).copied() else {
            return Some(v);
        };
        let from = self.type_of(e);
        constant::convert(&self.out.types, &v, from, to)
    }

    /// Checks a condition (must be `bool`).
    pub fn check_condition(&mut self, e: &Expr, what: &str) {
        let t = self.check_expr(e);
        if t != TypeId::BOOL && !self.is_err(t) {
            let s = self.show(t);
            self.error(
                e.span,
                format!("Condition of {what} does not evaluate to a bool but {s}"),
            );
        }
    }
}
