//! P4 operations on [`Bits`]: resizing, bitwise, wrapping and saturating arithmetic, shifts,
//! comparisons, concatenation and slicing. All wrap at the width of the left operand and never
//! panic (see the module doc of [`crate::value`]).

use super::Bits;
use std::borrow::Cow;
use std::cmp::Ordering;

impl Bits {
    /// `other` at this value's width (zero-extended or truncated when the widths differ).
    fn coerce<'a>(&self, other: &'a Bits) -> Cow<'a, Bits> {
        if other.width == self.width {
            Cow::Borrowed(other)
        } else {
            Cow::Owned(other.resize(self.width))
        }
    }

    /// Zero-extends or truncates to `width` (a cast between `bit<>` widths).
    #[inline]
    pub fn resize(&self, width: u32) -> Bits {
        // A result of at most 64 bits from an inline value (the common case): u64 arithmetic.
        if width <= 64
            && let Some(v) = self.low_inline()
        {
            return Bits::from_u64(width, v);
        }
        if width <= 128
            && let Some(a) = self.as_small()
        {
            return Bits::small(width, a);
        }
        Bits::from_limbs(width, self.limbs())
    }

    /// Sign-extends or truncates to `width` (a cast from `int<>` to a wider type).
    pub fn sext(&self, width: u32) -> Bits {
        let r = self.resize(width);
        if width <= self.width || !self.is_negative() {
            return r;
        }
        r.or(&Bits::ones(width).shl(u64::from(self.width)))
    }

    /// Extends to `width` with sign extension if `signed`, else zero extension; truncates
    /// when narrower.
    pub fn cast(&self, width: u32, signed: bool) -> Bits {
        if signed {
            self.sext(width)
        } else {
            self.resize(width)
        }
    }

    #[inline]
    fn zip_with(&self, other: &Bits, f: impl Fn(u64, u64) -> u64) -> Bits {
        if let (Some(a), Some(b)) = (self.as_small(), other.as_small()) {
            // `b` truncated to this width (zero-extension is implicit).
            let b = Bits::small(self.width, b).as_small().unwrap_or(0);
            let lo = f(a as u64, b as u64) as u128;
            let hi = f((a >> 64) as u64, (b >> 64) as u64) as u128;
            return Bits::small(self.width, lo | (hi << 64));
        }
        let other = self.coerce(other);
        let mut out = self.clone();
        for (a, b) in out.limbs_mut().iter_mut().zip(other.limbs()) {
            *a = f(*a, *b);
        }
        out.normalize();
        out
    }

    /// Bitwise complement `~a`.
    #[inline]
    pub fn not(&self) -> Bits {
        if let Some(a) = self.as_small() {
            return Bits::small(self.width, !a);
        }
        let mut out = self.clone();
        for l in out.limbs_mut() {
            *l = !*l;
        }
        out.normalize();
        out
    }

    #[inline]
    pub fn and(&self, other: &Bits) -> Bits {
        self.zip_with(other, |a, b| a & b)
    }

    #[inline]
    pub fn or(&self, other: &Bits) -> Bits {
        self.zip_with(other, |a, b| a | b)
    }

    #[inline]
    pub fn xor(&self, other: &Bits) -> Bits {
        self.zip_with(other, |a, b| a ^ b)
    }

    /// Wrapping addition; also returns the carry out of the top limb (before truncation).
    #[inline]
    fn add_carry(&self, other: &Bits) -> Bits {
        if let (Some(a), Some(b)) = (self.as_small(), other.as_small()) {
            return Bits::small(self.width, a.wrapping_add(b));
        }
        let other = self.coerce(other);
        let mut out = self.clone();
        let mut carry = false;
        for (a, b) in out.limbs_mut().iter_mut().zip(other.limbs()) {
            let (s1, c1) = a.overflowing_add(*b);
            let (s2, c2) = s1.overflowing_add(carry as u64);
            *a = s2;
            carry = c1 || c2;
        }
        out.normalize();
        out
    }

    /// Wrapping `a + b`.
    #[inline]
    pub fn add(&self, other: &Bits) -> Bits {
        self.add_carry(other)
    }

    /// Wrapping `a - b`.
    #[inline]
    pub fn sub(&self, other: &Bits) -> Bits {
        if let (Some(a), Some(b)) = (self.as_small(), other.as_small()) {
            let b = Bits::small(self.width, b).as_small().unwrap_or(0);
            return Bits::small(self.width, a.wrapping_sub(b));
        }
        let other = self.coerce(other);
        let mut out = self.clone();
        let mut borrow = false;
        for (a, b) in out.limbs_mut().iter_mut().zip(other.limbs()) {
            let (d1, b1) = a.overflowing_sub(*b);
            let (d2, b2) = d1.overflowing_sub(borrow as u64);
            *a = d2;
            borrow = b1 || b2;
        }
        out.normalize();
        out
    }

    /// Wrapping two's complement negation `-a`.
    pub fn neg(&self) -> Bits {
        Bits::zero(self.width).sub(self)
    }

    /// Wrapping `a * b` (the low `width` bits of the product).
    pub fn mul(&self, other: &Bits) -> Bits {
        let other = self.coerce(other);
        let (a, b) = (self.limbs(), other.limbs());
        let n = a.len();
        let mut out = Bits::zero(self.width);
        let dst = out.limbs_mut();
        for i in 0..n {
            let mut carry: u128 = 0;
            for j in 0..n - i {
                let cur = dst[i + j] as u128 + (a[i] as u128) * (b[j] as u128) + carry;
                dst[i + j] = cur as u64;
                carry = cur >> 64;
            }
        }
        out.normalize();
        out
    }

    /// Unsigned quotient and remainder; both are 0 when dividing by zero.
    pub fn divrem_u(&self, other: &Bits) -> (Bits, Bits) {
        let d = self.coerce(other);
        let w = self.width;
        if d.is_zero() {
            return (Bits::zero(w), Bits::zero(w));
        }
        if w <= 128 {
            let (a, b) = (self.low_u128(), d.low_u128());
            return (Bits::from_u128(w, a / b), Bits::from_u128(w, a % b));
        }
        // Restoring long division, one bit at a time: fine for the rare wide division.
        let mut q = Bits::zero(w);
        let mut r = Bits::zero(w);
        for i in (0..w).rev() {
            let top = r.is_negative();
            r = r.shl(1);
            r.set_bit(0, self.bit(i));
            if top || r.cmp_u(&d) != Ordering::Less {
                r = r.sub(&d);
                q.set_bit(i, true);
            }
        }
        (q, r)
    }

    /// Unsigned `a / b` (0 when `b` is 0).
    pub fn udiv(&self, other: &Bits) -> Bits {
        self.divrem_u(other).0
    }

    /// Unsigned `a % b` (0 when `b` is 0).
    pub fn urem(&self, other: &Bits) -> Bits {
        self.divrem_u(other).1
    }

    /// The largest signed value of `width` bits (`0111...`).
    pub fn max_signed(width: u32) -> Bits {
        Bits::ones(width).shr_u(1)
    }

    /// The smallest signed value of `width` bits (`1000...`).
    pub fn min_signed(width: u32) -> Bits {
        Bits::max_signed(width).not()
    }

    /// Unsigned saturating `a |+| b`.
    pub fn add_sat_u(&self, other: &Bits) -> Bits {
        let sum = self.add(other);
        if sum.cmp_u(self) == Ordering::Less {
            Bits::ones(self.width)
        } else {
            sum
        }
    }

    /// Signed saturating `a |+| b`.
    pub fn add_sat_s(&self, other: &Bits) -> Bits {
        let other = self.coerce(other);
        let sum = self.add(&other);
        let (sa, sb, ss) = (self.is_negative(), other.is_negative(), sum.is_negative());
        match (sa == sb, ss != sa) {
            (true, true) if sa => Bits::min_signed(self.width),
            (true, true) => Bits::max_signed(self.width),
            _ => sum,
        }
    }

    /// Unsigned saturating `a |-| b` (0 when `b > a`).
    pub fn sub_sat_u(&self, other: &Bits) -> Bits {
        if self.cmp_u(other) == Ordering::Less {
            Bits::zero(self.width)
        } else {
            self.sub(other)
        }
    }

    /// Signed saturating `a |-| b`.
    pub fn sub_sat_s(&self, other: &Bits) -> Bits {
        let other = self.coerce(other);
        let diff = self.sub(&other);
        let (sa, sb, sd) = (self.is_negative(), other.is_negative(), diff.is_negative());
        match (sa != sb, sd != sa) {
            (true, true) if sa => Bits::min_signed(self.width),
            (true, true) => Bits::max_signed(self.width),
            _ => diff,
        }
    }

    /// `a << n`; 0 when `n >= width`.
    #[inline]
    pub fn shl(&self, n: u64) -> Bits {
        let w = self.width;
        if n >= u64::from(w) {
            return Bits::zero(w);
        }
        if let Some(a) = self.as_small() {
            return Bits::small(w, a << n);
        }
        let (ls, bs) = ((n / 64) as usize, (n % 64) as u32);
        let src = self.limbs();
        let mut out = Bits::zero(w);
        let dst = out.limbs_mut();
        for (j, d) in dst.iter_mut().skip(ls).enumerate() {
            let mut v = src[j] << bs;
            if bs > 0 && j > 0 {
                v |= src[j - 1] >> (64 - bs);
            }
            *d = v;
        }
        out.normalize();
        out
    }

    /// Logical `a >> n` (for `bit<W>`); 0 when `n >= width`.
    #[inline]
    pub fn shr_u(&self, n: u64) -> Bits {
        let w = self.width;
        if n >= u64::from(w) {
            return Bits::zero(w);
        }
        if let Some(a) = self.as_small() {
            return Bits::small(w, a >> n);
        }
        let (ls, bs) = ((n / 64) as usize, (n % 64) as u32);
        let src = self.limbs();
        let mut out = Bits::zero(w);
        let dst = out.limbs_mut();
        for (i, d) in dst.iter_mut().enumerate() {
            let j = i + ls;
            if j >= src.len() {
                break;
            }
            let mut v = src[j] >> bs;
            if bs > 0 && j + 1 < src.len() {
                v |= src[j + 1] << (64 - bs);
            }
            *d = v;
        }
        out
    }

    /// Arithmetic `a >> n` (for `int<W>`): fills with the sign bit.
    pub fn shr_s(&self, n: u64) -> Bits {
        let w = self.width;
        if !self.is_negative() {
            return self.shr_u(n);
        }
        if n >= u64::from(w) {
            return Bits::ones(w);
        }
        self.shr_u(n).or(&Bits::ones(w).shl(u64::from(w) - n))
    }

    /// Unsigned comparison.
    #[inline]
    pub fn cmp_u(&self, other: &Bits) -> Ordering {
        if let (Some(a), Some(b)) = (self.as_small(), other.as_small()) {
            let b = Bits::small(self.width, b).as_small().unwrap_or(0);
            return a.cmp(&b);
        }
        let other = self.coerce(other);
        self.limbs().iter().rev().cmp(other.limbs().iter().rev())
    }

    /// Signed (two's complement) comparison.
    pub fn cmp_s(&self, other: &Bits) -> Ordering {
        let other = self.coerce(other);
        match (self.is_negative(), other.is_negative()) {
            (true, false) => Ordering::Less,
            (false, true) => Ordering::Greater,
            _ => self.cmp_u(&other),
        }
    }

    /// `a ++ b`: `a` in the high bits, `b` in the low bits; width is the sum of the widths.
    pub fn concat(&self, low: &Bits) -> Bits {
        let w = self.width.saturating_add(low.width);
        self.resize(w).shl(u64::from(low.width)).or(&low.resize(w))
    }

    /// `a[hi:lo]`: bits `lo..=hi`, width `hi - lo + 1` (0 if `hi < lo`). Bits beyond the
    /// width read as zero.
    #[inline]
    pub fn slice(&self, hi: u32, lo: u32) -> Bits {
        if hi < lo {
            return Bits::zero(0);
        }
        let w = (hi - lo).saturating_add(1);
        if let Some(a) = self.as_small()
            && w <= 128
        {
            let v = if lo >= self.width { 0 } else { a >> lo };
            return Bits::small(w, v);
        }
        self.shr_u(u64::from(lo)).resize(w)
    }

    /// Replaces bits `lo..lo + value.width()` with `value` (an assignment to a slice); bits
    /// beyond the width are dropped.
    #[inline]
    pub fn with_slice(&self, lo: u32, value: &Bits) -> Bits {
        let w = self.width;
        if let (Some(a), Some(v)) = (self.as_small(), value.as_small()) {
            if lo >= w {
                return self.clone();
            }
            let field = super::low_mask(value.width) << lo;
            return Bits::small(w, (a & !field) | ((v << lo) & field));
        }
        let field = Bits::ones(value.width).resize(w).shl(u64::from(lo));
        let placed = value.resize(w).shl(u64::from(lo));
        self.and(&field.not()).or(&placed)
    }
}
