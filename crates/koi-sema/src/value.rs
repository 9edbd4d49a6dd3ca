//! Compile-time values: what a compile-time known expression evaluates to.
//!
//! Integers are infinite-precision [`BigInt`]s; a value of a fixed-width type is always kept
//! normalised to its type's range (`bit<W>`: `0 .. 2^W`, `int<W>`: two's complement range).

use crate::types::TypeId;
use num_bigint::BigInt;
use num_traits::{One, Signed, Zero};
use std::fmt;

/// A compile-time known value.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Value {
    /// An integer of type `int`, `bit<W>` or `int<W>` (normalised to the type).
    Int(BigInt),
    Bool(bool),
    Str(String),
    /// `error.X`
    Error(String),
    /// A `match_kind` member.
    MatchKind(String),
    /// An enum member; `repr` is the value of a serializable enum's member.
    Enum {
        ty: TypeId,
        member: String,
        repr: Option<BigInt>,
    },
    /// Tuple, list, header stack or array value.
    Tuple(Vec<Value>),
    /// Struct, header or union value, or a struct-valued expression, by field.
    Struct(Vec<(String, Value)>),
}

impl Value {
    pub fn as_int(&self) -> Option<&BigInt> {
        match self {
            Value::Int(i) => Some(i),
            Value::Enum { repr: Some(r), .. } => Some(r),
            _ => None,
        }
    }

    pub fn as_bool(&self) -> Option<bool> {
        match self {
            Value::Bool(b) => Some(*b),
            _ => None,
        }
    }

    /// The value as a `u64` when it is a non-negative integer that fits.
    pub fn as_u64(&self) -> Option<u64> {
        u64::try_from(self.as_int()?).ok()
    }
}

impl fmt::Display for Value {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Value::Int(i) => write!(f, "{i}"),
            Value::Bool(b) => write!(f, "{b}"),
            Value::Str(s) => write!(f, "{s:?}"),
            Value::Error(e) => write!(f, "error.{e}"),
            Value::MatchKind(m) => write!(f, "{m}"),
            Value::Enum { member, .. } => write!(f, "{member}"),
            Value::Tuple(vs) => {
                write!(f, "{{ ")?;
                for (i, v) in vs.iter().enumerate() {
                    write!(f, "{}{v}", if i > 0 { ", " } else { "" })?;
                }
                write!(f, " }}")
            }
            Value::Struct(fs) => {
                write!(f, "{{ ")?;
                for (i, (n, v)) in fs.iter().enumerate() {
                    write!(f, "{}{n} = {v}", if i > 0 { ", " } else { "" })?;
                }
                write!(f, " }}")
            }
        }
    }
}

/// `2^w`
pub fn pow2(w: u32) -> BigInt {
    BigInt::one() << (w as usize)
}

/// Wraps `v` into the range of `bit<w>` (`signed == false`) or `int<w>`.
pub fn wrap(v: &BigInt, signed: bool, w: u32) -> BigInt {
    if w == 0 {
        return BigInt::zero();
    }
    let m = pow2(w);
    let mut r = v % &m;
    if r.is_negative() {
        r += &m;
    }
    if signed && r >= pow2(w - 1) {
        r -= m;
    }
    r
}

/// True when `v` is representable in `bit<w>` / `int<w>` without wrapping.
pub fn fits(v: &BigInt, signed: bool, w: u32) -> bool {
    if signed {
        if w == 0 {
            return v.is_zero();
        }
        let half = pow2(w - 1);
        *v >= -half.clone() && *v < half
    } else {
        !v.is_negative() && *v < pow2(w)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wrapping() {
        assert_eq!(wrap(&BigInt::from(256), false, 8), BigInt::from(0));
        assert_eq!(wrap(&BigInt::from(-1), false, 8), BigInt::from(255));
        assert_eq!(wrap(&BigInt::from(128), true, 8), BigInt::from(-128));
        assert_eq!(wrap(&BigInt::from(-129), true, 8), BigInt::from(127));
        assert!(fits(&BigInt::from(-128), true, 8));
        assert!(!fits(&BigInt::from(128), true, 8));
        assert!(!fits(&BigInt::from(-1), false, 8));
    }
}
