//! Arbitrary-width bit vectors ([`Bits`]) and runtime values ([`Value`]).
//!
//! `Bits` is P4's `bit<W>`/`int<W>` value: exactly `width` bits, any width (0 and 640 included),
//! with no signedness of its own. Operations that depend on signedness come in two flavours
//! (`shr_u`/`shr_s`, `cmp_u`/`cmp_s`, `add_sat_u`/`add_sat_s`, `resize`/`sext`), as in
//! Cranelift; arithmetic wraps at the width.
//!
//! Storage: little-endian `u64` limbs, inline (no allocation) up to 128 bits, boxed above.
//! Invariant: the bits above `width` in the top limb are zero, so derived equality and hashing
//! compare values exactly.
//!
//! No operation panics, whatever the operands: values come from packets and the control plane.
//! A binary operation on operands of different widths (which a verified IR never produces)
//! resizes the right operand to the left one's width (zero-extension or truncation); a slice or
//! bit index beyond the width reads zeros; division by zero yields 0.

mod arith;
mod bytes;
#[cfg(test)]
mod tests;

pub use bytes::OutOfBounds;

use std::fmt;

/// Limbs at most this many are stored inline.
const INLINE_LIMBS: usize = 2;

#[derive(Clone, PartialEq, Eq, Hash)]
enum Limbs {
    Inline([u64; INLINE_LIMBS]),
    Heap(Box<[u64]>),
}

/// A bit vector of a fixed width (P4 `bit<W>` or `int<W>` bits).
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct Bits {
    width: u32,
    limbs: Limbs,
}

/// The low `width` bits set (all 128 for `width >= 128`).
#[inline]
fn low_mask(width: u32) -> u128 {
    if width >= 128 {
        u128::MAX
    } else {
        (1u128 << width) - 1
    }
}

/// Number of 64-bit limbs for `width` bits.
fn limb_count(width: u32) -> usize {
    width.div_ceil(64) as usize
}

impl Bits {
    /// The zero value of `width` bits.
    #[inline]
    pub fn zero(width: u32) -> Bits {
        let n = limb_count(width);
        let limbs = if n <= INLINE_LIMBS {
            Limbs::Inline([0; INLINE_LIMBS])
        } else {
            Limbs::Heap(vec![0; n].into_boxed_slice())
        };
        Bits { width, limbs }
    }

    /// All ones (`-1` as a signed value).
    #[inline]
    pub fn ones(width: u32) -> Bits {
        if width <= 64 {
            return Bits::from_u64(width, u64::MAX);
        }
        if width <= 128 {
            return Bits::small(width, u128::MAX);
        }
        let mut b = Bits::zero(width);
        b.limbs_mut().fill(u64::MAX);
        b.normalize();
        b
    }

    /// `v` truncated to `width` bits.
    #[inline]
    pub fn from_u64(width: u32, v: u64) -> Bits {
        if width <= 64 {
            // Inline storage, the bits above the width cleared (none for 0 bits).
            let v = if width == 64 {
                v
            } else {
                v & ((1u64 << width) - 1)
            };
            return Bits {
                width,
                limbs: Limbs::Inline([v, 0]),
            };
        }
        Bits::from_limbs(width, &[v])
    }

    /// `v` truncated to `width` bits.
    pub fn from_u128(width: u32, v: u128) -> Bits {
        if width <= 128 {
            return Bits::small(width, v);
        }
        Bits::from_limbs(width, &[v as u64, (v >> 64) as u64])
    }

    /// `v` truncated to `width` bits, for `width <= 128` (inline storage, no allocation).
    #[inline]
    fn small(width: u32, v: u128) -> Bits {
        debug_assert!(width <= 128);
        let v = v & low_mask(width);
        Bits {
            width,
            limbs: Limbs::Inline([v as u64, (v >> 64) as u64]),
        }
    }

    /// The two's complement of `v` at `width` bits (sign-extended, then truncated).
    pub fn from_i128(width: u32, v: i128) -> Bits {
        let fill = if v < 0 { u64::MAX } else { 0 };
        let mut b = Bits::zero(width);
        for (i, limb) in b.limbs_mut().iter_mut().enumerate() {
            *limb = match i {
                0 => v as u64,
                1 => ((v as u128) >> 64) as u64,
                _ => fill,
            };
        }
        b.normalize();
        b
    }

    /// The number whose little-endian limbs are `limbs`, zero-extended or truncated to `width`.
    #[inline]
    pub fn from_limbs(width: u32, limbs: &[u64]) -> Bits {
        if width <= 128 {
            let lo = limbs.first().copied().unwrap_or(0) as u128;
            let hi = limbs.get(1).copied().unwrap_or(0) as u128;
            return Bits::small(width, lo | (hi << 64));
        }
        let mut b = Bits::zero(width);
        for (dst, src) in b.limbs_mut().iter_mut().zip(limbs) {
            *dst = *src;
        }
        b.normalize();
        b
    }

    /// A 1-bit value: 1 for `true`.
    #[inline]
    pub fn from_bool(v: bool) -> Bits {
        Bits::from_u64(1, v as u64)
    }

    /// A mask of `width` bits whose `len` most significant bits are set (an LPM prefix mask).
    pub fn prefix_mask(width: u32, len: u32) -> Bits {
        let len = len.min(width);
        Bits::ones(width).shl(u64::from(width - len))
    }

    #[inline]
    pub fn width(&self) -> u32 {
        self.width
    }

    /// The low limb of an inline value (all of it for at most 64 bits).
    #[inline]
    fn low_inline(&self) -> Option<u64> {
        match &self.limbs {
            Limbs::Inline([lo, _]) => Some(*lo),
            Limbs::Heap(_) => None,
        }
    }

    /// The value as a `u128` when it is stored inline (`width <= 128`).
    #[inline]
    fn as_small(&self) -> Option<u128> {
        match &self.limbs {
            Limbs::Inline([lo, hi]) if self.width <= 128 => {
                Some(*lo as u128 | ((*hi as u128) << 64))
            }
            _ => None,
        }
    }

    /// The little-endian limbs (`ceil(width / 64)` of them).
    #[inline]
    pub fn limbs(&self) -> &[u64] {
        let n = limb_count(self.width);
        match &self.limbs {
            Limbs::Inline(a) => &a[..n],
            Limbs::Heap(v) => v,
        }
    }

    #[inline]
    fn limbs_mut(&mut self) -> &mut [u64] {
        let n = limb_count(self.width);
        match &mut self.limbs {
            Limbs::Inline(a) => &mut a[..n],
            Limbs::Heap(v) => v,
        }
    }

    /// Clears the bits above `width` in the top limb (restores the invariant).
    #[inline]
    fn normalize(&mut self) {
        let rem = self.width % 64;
        if rem != 0
            && let Some(top) = self.limbs_mut().last_mut()
        {
            *top &= (1u64 << rem) - 1;
        }
    }

    #[inline]
    pub fn is_zero(&self) -> bool {
        if let Some(v) = self.as_small() {
            return v == 0;
        }
        self.limbs().iter().all(|&l| l == 0)
    }

    /// Bit `i` (0 = least significant); false beyond the width.
    pub fn bit(&self, i: u32) -> bool {
        if i >= self.width {
            return false;
        }
        (self.limbs()[(i / 64) as usize] >> (i % 64)) & 1 == 1
    }

    /// Sets bit `i`; does nothing beyond the width.
    pub fn set_bit(&mut self, i: u32, v: bool) {
        if i >= self.width {
            return;
        }
        let limb = &mut self.limbs_mut()[(i / 64) as usize];
        let m = 1u64 << (i % 64);
        if v {
            *limb |= m;
        } else {
            *limb &= !m;
        }
    }

    /// The most significant bit: true for a negative signed value.
    pub fn is_negative(&self) -> bool {
        self.width > 0 && self.bit(self.width - 1)
    }

    /// The value as an unsigned number, if it fits in 64 bits.
    #[inline]
    pub fn to_u64(&self) -> Option<u64> {
        let l = self.limbs();
        if l.iter().skip(1).any(|&x| x != 0) {
            return None;
        }
        Some(l.first().copied().unwrap_or(0))
    }

    /// The value as an unsigned number, if it fits in 128 bits.
    pub fn to_u128(&self) -> Option<u128> {
        let l = self.limbs();
        if l.iter().skip(2).any(|&x| x != 0) {
            return None;
        }
        Some(self.low_u128())
    }

    /// The low 64 bits (zero-extended if narrower).
    #[inline]
    pub fn low_u64(&self) -> u64 {
        self.limbs().first().copied().unwrap_or(0)
    }

    /// The low 128 bits (zero-extended if narrower).
    #[inline]
    pub fn low_u128(&self) -> u128 {
        if let Some(v) = self.as_small() {
            return v;
        }
        let l = self.limbs();
        let lo = l.first().copied().unwrap_or(0) as u128;
        let hi = l.get(1).copied().unwrap_or(0) as u128;
        lo | (hi << 64)
    }

    /// The value read as two's complement, if it fits in an `i128`.
    pub fn to_i128(&self) -> Option<i128> {
        if self.width <= 128 {
            return Some(self.sext(128).low_u128() as i128);
        }
        let sign = self.bit(127);
        (127..self.width)
            .all(|i| self.bit(i) == sign)
            .then(|| self.low_u128() as i128)
    }

    /// Shift amount for shift operations: the value, saturated to `u64::MAX`.
    pub fn to_shift_amount(&self) -> u64 {
        self.to_u64().unwrap_or(u64::MAX)
    }

    pub fn count_ones(&self) -> u32 {
        self.limbs().iter().map(|l| l.count_ones()).sum()
    }

    /// Number of consecutive set bits from the most significant end.
    pub fn leading_ones(&self) -> u32 {
        (0..self.width).rev().take_while(|&i| self.bit(i)).count() as u32
    }

    /// The prefix length if this is a prefix mask (ones then zeros), else `None`.
    pub fn prefix_len(&self) -> Option<u32> {
        let len = self.leading_ones();
        (self.count_ones() == len).then_some(len)
    }
}

impl Default for Bits {
    /// The zero-width value.
    fn default() -> Bits {
        Bits::zero(0)
    }
}

/// `WwV`, P4's width-prefixed literal syntax: decimal below 256, hexadecimal above
/// (`8w5`, `16w0x800`).
impl fmt::Display for Bits {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.to_u64() {
            Some(v) if v < 256 => write!(f, "{}w{}", self.width, v),
            _ => write!(f, "{}w{:#x}", self.width, self),
        }
    }
}

impl fmt::LowerHex for Bits {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let limbs = self.limbs();
        let top = limbs.iter().rposition(|&l| l != 0);
        let mut s = String::new();
        match top {
            None => s.push('0'),
            Some(top) => {
                s.push_str(&format!("{:x}", limbs[top]));
                for l in limbs[..top].iter().rev() {
                    s.push_str(&format!("{l:016x}"));
                }
            }
        }
        f.pad_integral(true, "0x", &s)
    }
}

impl fmt::Debug for Bits {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}w{:#x}", self.width, self)
    }
}

/// A runtime value of any IR type ([`crate::Ty`]).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Value {
    Bits(Bits),
    Bool(bool),
    /// A `varbit<max>` value: `bits.width()` is the current length (at most `max`).
    Varbit {
        max: u32,
        bits: Bits,
    },
}

impl Value {
    /// The value as bits: a bool is one bit, a varbit its current bits.
    #[inline]
    pub fn to_bits(&self) -> Bits {
        match self {
            Value::Bits(b) | Value::Varbit { bits: b, .. } => b.clone(),
            Value::Bool(v) => Bits::from_bool(*v),
        }
    }

    /// The value as a bool: true when any bit is set.
    #[inline]
    pub fn to_bool(&self) -> bool {
        match self {
            Value::Bool(v) => *v,
            Value::Bits(b) | Value::Varbit { bits: b, .. } => !b.is_zero(),
        }
    }
}

impl fmt::Display for Value {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Value::Bits(b) => write!(f, "{b}"),
            Value::Bool(v) => write!(f, "{v}"),
            Value::Varbit { max, bits } => write!(f, "varbit<{max}>({bits})"),
        }
    }
}
