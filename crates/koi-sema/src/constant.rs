//! Compile-time evaluation: folding of operators over [`Value`]s with P4's arithmetic
//! (infinite precision for `int`, wrap-around or saturation at the width of `bit<W>`/`int<W>`)
//! and value conversions for casts. Undefined operations (division by zero, negative shift
//! amounts, division of negative `int`s) are reported as `Err` messages, never panics.

use crate::types::{Ty, TypeId, TypeTable};
use crate::value::{Value, pow2, wrap};
use koi_syntax::ast::{BinOp, UnOp};
use num_bigint::BigInt;
use num_traits::{One, Signed, ToPrimitive, Zero};

/// The largest shift amount folded for `int` values (larger shifts would allocate huge
/// numbers).
const MAX_INF_SHIFT: u64 = 1 << 16;

/// The largest number of bits an `int` value may have (larger results are reported instead
/// of computed, so that constant folding cannot exhaust memory).
const MAX_INF_BITS: u64 = 1 << 17;

fn too_large(bits: u64) -> Result<Option<Value>, String> {
    Err(format!("the result ({bits} bits) is too large to evaluate"))
}

/// The arithmetic of an integer type.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Arith {
    Inf,
    Fixed { signed: bool, width: u32 },
}

impl Arith {
    pub fn of(types: &TypeTable, ty: TypeId) -> Option<Arith> {
        match types.get(ty) {
            Ty::InfInt => Some(Arith::Inf),
            Ty::Bit(w) => Some(Arith::Fixed {
                signed: false,
                width: *w,
            }),
            Ty::Int(w) => Some(Arith::Fixed {
                signed: true,
                width: *w,
            }),
            Ty::Enum(e) => e.repr.and_then(|r| Arith::of(types, r)),
            _ => None,
        }
    }

    fn norm(self, v: BigInt) -> BigInt {
        match self {
            Arith::Inf => v,
            Arith::Fixed { signed, width } => wrap(&v, signed, width),
        }
    }

    fn bounds(self) -> Option<(BigInt, BigInt)> {
        match self {
            Arith::Inf => None,
            Arith::Fixed {
                signed: false,
                width,
            } => Some((BigInt::zero(), pow2(width) - 1)),
            Arith::Fixed {
                signed: true,
                width: 0,
            } => Some((BigInt::zero(), BigInt::zero())),
            Arith::Fixed {
                signed: true,
                width,
            } => {
                let h = pow2(width - 1);
                Some((-h.clone(), h - 1))
            }
        }
    }
}

/// Folds a unary operator applied to a value of type `ty`.
pub fn fold_unary(types: &TypeTable, op: UnOp, v: &Value, ty: TypeId) -> Option<Value> {
    match (op, v) {
        (UnOp::Not, Value::Bool(b)) => Some(Value::Bool(!b)),
        (UnOp::Plus, _) => Some(v.clone()),
        (UnOp::Neg, _) => {
            let a = Arith::of(types, ty)?;
            Some(Value::Int(a.norm(-v.as_int()?.clone())))
        }
        (UnOp::BitNot, _) => {
            let a = Arith::of(types, ty)?;
            Some(Value::Int(a.norm(!v.as_int()?.clone())))
        }
        _ => None,
    }
}

/// Folds a binary operator whose operands both have type `ty` (after implicit casts; for
/// shifts `ty` is the left operand's type). `Ok(None)` when the operator does not fold.
pub fn fold_binary(
    types: &TypeTable,
    op: BinOp,
    l: &Value,
    r: &Value,
    ty: TypeId,
) -> Result<Option<Value>, String> {
    match op {
        BinOp::Eq => return Ok(Some(Value::Bool(values_equal(l, r)))),
        BinOp::Ne => return Ok(Some(Value::Bool(!values_equal(l, r)))),
        BinOp::And | BinOp::Or => {
            let (Some(a), Some(b)) = (l.as_bool(), r.as_bool()) else {
                return Ok(None);
            };
            return Ok(Some(Value::Bool(if op == BinOp::And {
                a && b
            } else {
                a || b
            })));
        }
        _ => {}
    }
    if let (BinOp::Concat, Value::Str(a), Value::Str(b)) = (op, l, r) {
        return Ok(Some(Value::Str(format!("{a}{b}"))));
    }
    let (Some(a), Some(b)) = (l.as_int(), r.as_int()) else {
        return Ok(None);
    };
    let Some(ar) = Arith::of(types, ty) else {
        return Ok(None);
    };
    fold_int(op, a, b, ar)
}

fn values_equal(l: &Value, r: &Value) -> bool {
    match (l.as_int(), r.as_int()) {
        (Some(a), Some(b)) => a == b,
        _ => l == r,
    }
}

fn fold_int(op: BinOp, a: &BigInt, b: &BigInt, ar: Arith) -> Result<Option<Value>, String> {
    let int = |v: BigInt| Ok(Some(Value::Int(ar.norm(v))));
    let boolean = |v: bool| Ok(Some(Value::Bool(v)));
    match op {
        BinOp::Add => int(a + b),
        BinOp::Sub => int(a - b),
        BinOp::Mul => {
            let bits = a.bits() + b.bits();
            if ar == Arith::Inf && bits > MAX_INF_BITS {
                return too_large(bits);
            }
            int(a * b)
        }
        BinOp::Div | BinOp::Mod => fold_div(op, a, b, ar),
        BinOp::AddSat | BinOp::SubSat => {
            let v = if op == BinOp::AddSat { a + b } else { a - b };
            match ar.bounds() {
                Some((lo, hi)) => int(v.clamp(lo, hi)),
                None => int(v),
            }
        }
        BinOp::Shl | BinOp::Shr => fold_shift(op, a, b, ar),
        BinOp::BitAnd => int(a & b),
        BinOp::BitOr => int(a | b),
        BinOp::BitXor => int(a ^ b),
        BinOp::Lt => boolean(a < b),
        BinOp::Le => boolean(a <= b),
        BinOp::Gt => boolean(a > b),
        BinOp::Ge => boolean(a >= b),
        _ => Ok(None),
    }
}

fn fold_div(op: BinOp, a: &BigInt, b: &BigInt, ar: Arith) -> Result<Option<Value>, String> {
    if b.is_zero() {
        return Err("Division by zero".into());
    }
    if a.is_negative() || b.is_negative() {
        return Err("Division is not defined for negative numbers".into());
    }
    let v = if op == BinOp::Div { a / b } else { a % b };
    Ok(Some(Value::Int(ar.norm(v))))
}

fn fold_shift(op: BinOp, a: &BigInt, b: &BigInt, ar: Arith) -> Result<Option<Value>, String> {
    if b.is_negative() {
        return Err("Shifts with negative amounts are not permitted".into());
    }
    let amount = b.to_u64().unwrap_or(u64::MAX);
    let v = match ar {
        Arith::Fixed { signed, width } => {
            if amount >= u64::from(width) {
                if op == BinOp::Shr && signed && a.is_negative() {
                    -BigInt::one()
                } else {
                    BigInt::zero()
                }
            } else if op == BinOp::Shl {
                a << (amount as usize)
            } else {
                a >> (amount as usize)
            }
        }
        Arith::Inf => {
            if op == BinOp::Shr {
                if amount > MAX_INF_SHIFT {
                    if a.is_negative() {
                        -BigInt::one()
                    } else {
                        BigInt::zero()
                    }
                } else {
                    a >> (amount as usize)
                }
            } else if amount > MAX_INF_SHIFT {
                return Err(format!("shift amount {b} is too large"));
            } else if a.bits() + amount > MAX_INF_BITS {
                return too_large(a.bits() + amount);
            } else {
                a << (amount as usize)
            }
        }
    };
    Ok(Some(Value::Int(ar.norm(v))))
}

/// `a ++ b` for bit strings of widths `wa` and `wb`, as a value of the result arithmetic.
pub fn fold_concat(a: &BigInt, wa: u32, b: &BigInt, wb: u32, result: Arith) -> Value {
    let ua = wrap(a, false, wa);
    let ub = wrap(b, false, wb);
    let v = (ua << (wb as usize)) | ub;
    Value::Int(result.norm(v))
}

/// The default value of a type (what `...` initialises it with), when it is a simple one.
pub fn default_value(types: &TypeTable, ty: TypeId) -> Option<Value> {
    match types.get(ty) {
        Ty::Bit(_) | Ty::Int(_) | Ty::InfInt => Some(Value::Int(BigInt::zero())),
        Ty::Bool => Some(Value::Bool(false)),
        Ty::String => Some(Value::Str(String::new())),
        Ty::ErrorType => Some(Value::Error("NoError".into())),
        _ => None,
    }
}

/// Converts a value to type `to` (for casts, implicit or explicit). `None` when the value has
/// no representation in `to`.
pub fn convert(types: &TypeTable, v: &Value, _from: TypeId, to: TypeId) -> Option<Value> {
    convert_at(types, v, to, 0)
}

fn convert_at(types: &TypeTable, v: &Value, to: TypeId, depth: u32) -> Option<Value> {
    if depth > 32 {
        return None;
    }
    match types.get(to) {
        Ty::Bit(_) | Ty::Int(_) | Ty::InfInt => {
            let ar = Arith::of(types, to)?;
            let i = match v {
                Value::Bool(b) => BigInt::from(u8::from(*b)),
                _ => v.as_int()?.clone(),
            };
            Some(Value::Int(ar.norm(i)))
        }
        Ty::Bool => match v {
            Value::Bool(_) => Some(v.clone()),
            Value::Int(i) if i.is_zero() => Some(Value::Bool(false)),
            Value::Int(i) if i.is_one() => Some(Value::Bool(true)),
            _ => None,
        },
        Ty::NewType { base, .. } => convert_at(types, v, *base, depth + 1),
        Ty::Enum(e) => match (v, e.repr) {
            (Value::Enum { .. }, _) => Some(v.clone()),
            (Value::Int(i), Some(r)) => {
                let Value::Int(i) = convert_at(types, &Value::Int(i.clone()), r, depth + 1)? else {
                    return None;
                };
                Some(Value::Enum {
                    ty: to,
                    member: String::new(),
                    repr: Some(i),
                })
            }
            _ => None,
        },
        Ty::Agg(a) => {
            let fields = match v {
                Value::Tuple(vs) => a.fields.iter().zip(vs).collect::<Vec<_>>(),
                Value::Struct(fs) => a
                    .fields
                    .iter()
                    .filter_map(|f| fs.iter().find(|(n, _)| *n == f.name).map(|(_, x)| (f, x)))
                    .collect(),
                _ => return None,
            };
            let out = fields
                .into_iter()
                .map(|(f, x)| Some((f.name.clone(), convert_at(types, x, f.ty, depth + 1)?)))
                .collect::<Option<Vec<_>>>()?;
            Some(Value::Struct(out))
        }
        Ty::Tuple(ts) => match v {
            Value::Tuple(vs) if vs.len() == ts.len() => ts
                .iter()
                .zip(vs)
                .map(|(t, x)| convert_at(types, x, *t, depth + 1))
                .collect::<Option<Vec<_>>>()
                .map(Value::Tuple),
            _ => None,
        },
        Ty::List(t) | Ty::Stack { elem: t, .. } => match v {
            Value::Tuple(vs) => vs
                .iter()
                .map(|x| convert_at(types, x, *t, depth + 1))
                .collect::<Option<Vec<_>>>()
                .map(Value::Tuple),
            _ => None,
        },
        _ => Some(v.clone()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn int(i: i64) -> Value {
        Value::Int(BigInt::from(i))
    }

    #[test]
    fn fixed_width_arithmetic_wraps_and_saturates() {
        let mut t = TypeTable::new();
        let b8 = t.bit(8);
        let i8 = t.int(8);
        assert_eq!(
            fold_binary(&t, BinOp::Add, &int(250), &int(10), b8),
            Ok(Some(int(4)))
        );
        assert_eq!(
            fold_binary(&t, BinOp::AddSat, &int(250), &int(10), b8),
            Ok(Some(int(255)))
        );
        assert_eq!(
            fold_binary(&t, BinOp::SubSat, &int(-100), &int(100), i8),
            Ok(Some(int(-128)))
        );
        assert_eq!(
            fold_binary(&t, BinOp::Shl, &int(1), &int(9), b8),
            Ok(Some(int(0)))
        );
        assert_eq!(fold_unary(&t, UnOp::BitNot, &int(0), b8), Some(int(255)));
    }

    #[test]
    fn undefined_operations_are_errors() {
        let t = TypeTable::new();
        assert!(fold_binary(&t, BinOp::Div, &int(1), &int(0), TypeId::INF_INT).is_err());
        assert!(fold_binary(&t, BinOp::Div, &int(-8), &int(2), TypeId::INF_INT).is_err());
        assert!(fold_binary(&t, BinOp::Shl, &int(1), &int(-1), TypeId::INF_INT).is_err());
        assert!(fold_binary(&t, BinOp::Shl, &int(1), &int(1 << 40), TypeId::INF_INT).is_err());
    }

    #[test]
    fn conversions() {
        let mut t = TypeTable::new();
        let b4 = t.bit(4);
        assert_eq!(convert(&t, &int(17), TypeId::INF_INT, b4), Some(int(1)));
        assert_eq!(
            convert(&t, &int(1), TypeId::INF_INT, TypeId::BOOL),
            Some(Value::Bool(true))
        );
        assert_eq!(convert(&t, &int(2), TypeId::INF_INT, TypeId::BOOL), None);
    }
}
