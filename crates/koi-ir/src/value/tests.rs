//! Tests of [`Bits`]: examples, wide values, and property tests against `u128` arithmetic for
//! widths up to 128.

use super::*;
use proptest::prelude::*;
use std::cmp::Ordering;

fn mask(w: u32) -> u128 {
    if w >= 128 {
        u128::MAX
    } else {
        (1u128 << w) - 1
    }
}

/// The value `v` of width `w` read as signed, in an i128 (w <= 128).
fn signed(w: u32, v: u128) -> i128 {
    if w == 0 {
        0
    } else if w == 128 {
        v as i128
    } else if v >> (w - 1) & 1 == 1 {
        (v | !mask(w)) as i128
    } else {
        v as i128
    }
}

fn b(w: u32, v: u128) -> Bits {
    Bits::from_u128(w, v)
}

#[test]
fn small_values_print_and_convert() {
    assert_eq!(b(8, 5).to_string(), "8w5");
    assert_eq!(b(16, 0x800).to_string(), "16w0x800");
    assert_eq!(format!("{:?}", b(4, 0)), "4w0x0");
    assert_eq!(b(8, 0x1ff).to_u64(), Some(0xff));
    assert_eq!(Bits::from_i128(8, -1), Bits::ones(8));
    assert_eq!(Bits::from_i128(8, -2).to_i128(), Some(-2));
    assert_eq!(Bits::zero(0).to_string(), "0w0");
    assert_eq!(Bits::from_bool(true), b(1, 1));
}

#[test]
fn wide_values_are_exact() {
    let x = Bits::ones(640);
    assert_eq!(x.count_ones(), 640);
    assert_eq!(x.add(&Bits::from_u64(640, 1)), Bits::zero(640));
    let top = Bits::from_u64(640, 1).shl(639);
    assert!(top.is_negative());
    assert_eq!(top.shr_u(639), Bits::from_u64(640, 1));
    assert_eq!(top.shr_s(639), Bits::ones(640));
    assert_eq!(top.to_u128(), None);
    assert_eq!(top.to_i128(), None);
    assert_eq!(Bits::from_i128(640, -5).to_i128(), Some(-5));
    let big = Bits::from_u128(200, u128::MAX).shl(70);
    let (q, r) = big
        .add(&Bits::from_u64(200, 7))
        .divrem_u(&Bits::from_u64(200, 1 << 35));
    assert_eq!(q, Bits::from_u128(200, u128::MAX).shl(35));
    assert_eq!(r, Bits::from_u64(200, 7));
    assert_eq!(
        format!("{:#x}", Bits::from_u64(130, 1).shl(129)),
        "0x200000000000000000000000000000000"
    );
}

#[test]
fn division_by_zero_is_zero() {
    assert_eq!(b(8, 9).udiv(&b(8, 0)), b(8, 0));
    assert_eq!(b(8, 9).urem(&b(8, 0)), b(8, 0));
    assert_eq!(Bits::ones(300).udiv(&Bits::zero(300)), Bits::zero(300));
}

#[test]
fn mismatched_widths_and_out_of_range_do_not_panic() {
    assert_eq!(b(8, 0xff).add(&b(16, 0x101)), b(8, 0));
    assert_eq!(b(8, 0xf0).slice(20, 4), b(17, 0xf));
    assert_eq!(b(8, 0xf0).slice(1, 4).width(), 0);
    assert!(!b(8, 0xff).bit(100));
    let mut x = b(8, 0);
    x.set_bit(100, true);
    assert_eq!(x, b(8, 0));
    assert_eq!(b(8, 1).shl(u64::MAX), b(8, 0));
    assert_eq!(Bits::from_i128(8, -1).shr_s(u64::MAX), Bits::ones(8));
}

#[test]
fn prefix_masks() {
    assert_eq!(Bits::prefix_mask(32, 24), b(32, 0xffff_ff00));
    assert_eq!(Bits::prefix_mask(32, 0), b(32, 0));
    assert_eq!(Bits::prefix_mask(32, 40), Bits::ones(32));
    assert_eq!(b(32, 0xffff_ff00).prefix_len(), Some(24));
    assert_eq!(b(32, 0xff00_ff00).prefix_len(), None);
}

#[test]
fn bytes_at_bit_offsets() {
    let buf = [0b1010_1100u8, 0b0101_0011, 0xff];
    assert_eq!(Bits::read_bits(&buf, 0, 4), Ok(b(4, 0b1010)));
    assert_eq!(Bits::read_bits(&buf, 4, 8), Ok(b(8, 0b1100_0101)));
    assert_eq!(Bits::read_bits(&buf, 3, 3), Ok(b(3, 0b011)));
    assert_eq!(Bits::read_bits(&buf, 20, 4), Ok(b(4, 0xf)));
    assert_eq!(Bits::read_bits(&buf, 21, 4), Err(OutOfBounds));
    assert_eq!(Bits::read_bits(&buf, usize::MAX, 4), Err(OutOfBounds));
    let mut out = [0u8; 3];
    b(9, 0x1ff).write_bits(&mut out, 3).unwrap();
    assert_eq!(out, [0b0001_1111, 0b1111_0000, 0]);
    assert_eq!(b(4, 1).write_bits(&mut out, 21), Err(OutOfBounds));
    assert_eq!(b(12, 0xabc).to_be_bytes(), vec![0x0a, 0xbc]);
    assert_eq!(Bits::from_be_bytes(12, &[0xff, 0xab, 0xcd]), b(12, 0xbcd));
}

/// A width and two values of that width.
fn operands() -> impl Strategy<Value = (u32, u128, u128)> {
    (0u32..=128, any::<u128>(), any::<u128>()).prop_map(|(w, a, b)| (w, a & mask(w), b & mask(w)))
}

proptest! {
    #[test]
    fn from_u64_is_the_value_truncated(w in 0u32..=200, v in any::<u64>()) {
        let want = Bits::from_limbs(w, &[v]);
        prop_assert_eq!(Bits::from_u64(w, v), want.clone());
        prop_assert_eq!(Bits::from_u64(w, v).to_u128(), want.to_u128());
    }

    #[test]
    fn arithmetic_matches_u128((w, x, y) in operands()) {
        let (bx, by) = (b(w, x), b(w, y));
        let m = mask(w);
        prop_assert_eq!(bx.add(&by), b(w, x.wrapping_add(y) & m));
        prop_assert_eq!(bx.sub(&by), b(w, x.wrapping_sub(y) & m));
        prop_assert_eq!(bx.mul(&by), b(w, x.wrapping_mul(y) & m));
        prop_assert_eq!(bx.neg(), b(w, x.wrapping_neg() & m));
        prop_assert_eq!(bx.udiv(&by), b(w, x.checked_div(y).unwrap_or(0)));
        prop_assert_eq!(bx.urem(&by), b(w, x.checked_rem(y).unwrap_or(0)));
        prop_assert_eq!(bx.and(&by), b(w, x & y));
        prop_assert_eq!(bx.or(&by), b(w, x | y));
        prop_assert_eq!(bx.xor(&by), b(w, x ^ y));
        prop_assert_eq!(bx.not(), b(w, !x & m));
    }

    #[test]
    fn saturating_matches_u128((w, x, y) in operands()) {
        let (bx, by) = (b(w, x), b(w, y));
        let m = mask(w);
        let add_u = x.checked_add(y).filter(|s| s & !m == 0).unwrap_or(m);
        prop_assert_eq!(bx.add_sat_u(&by), b(w, add_u));
        prop_assert_eq!(bx.sub_sat_u(&by), b(w, x.saturating_sub(y)));
        if w > 0 {
            let (sx, sy) = (signed(w, x), signed(w, y));
            let (lo, hi) = (signed(w, 1u128 << (w - 1)), signed(w, m >> 1));
            let clamp = |v: Option<i128>, neg: bool| match v {
                Some(v) if v < lo => lo,
                Some(v) if v > hi => hi,
                Some(v) => v,
                None if neg => lo,
                None => hi,
            };
            let add_s = clamp(sx.checked_add(sy), sx < 0);
            let sub_s = clamp(sx.checked_sub(sy), sx < 0);
            prop_assert_eq!(bx.add_sat_s(&by), Bits::from_i128(w, add_s));
            prop_assert_eq!(bx.sub_sat_s(&by), Bits::from_i128(w, sub_s));
        }
    }

    #[test]
    fn shifts_match_u128((w, x, _y) in operands(), n in 0u64..140) {
        let bx = b(w, x);
        let m = mask(w);
        let shl = if n >= u64::from(w) { 0 } else { (x << n) & m };
        let shr = if n >= u64::from(w) { 0 } else { x >> n };
        prop_assert_eq!(bx.shl(n), b(w, shl));
        prop_assert_eq!(bx.shr_u(n), b(w, shr));
        let sx = signed(w, x);
        let sar = if w == 0 { 0 } else { sx >> n.min(127) };
        prop_assert_eq!(bx.shr_s(n), Bits::from_i128(w, sar));
    }

    #[test]
    fn comparisons_match_u128((w, x, y) in operands()) {
        let (bx, by) = (b(w, x), b(w, y));
        prop_assert_eq!(bx.cmp_u(&by), x.cmp(&y));
        prop_assert_eq!(bx.cmp_s(&by), signed(w, x).cmp(&signed(w, y)));
        prop_assert_eq!(bx == by, x == y);
        prop_assert_eq!(bx.to_i128(), Some(signed(w, x)));
        prop_assert_eq!(bx.to_u128(), Some(x));
    }

    #[test]
    fn concat_slice_resize_match_u128((w, x, _y) in operands(), w2 in 0u32..=64, y2 in any::<u64>(),
                                      lo in 0u32..130, len in 0u32..130) {
        let y2 = (y2 as u128) & mask(w2);
        let (bx, by) = (b(w, x), b(w2, y2));
        let cat = bx.concat(&by);
        prop_assert_eq!(cat.width(), w + w2);
        prop_assert_eq!(cat.slice(w2 + w, w2), b(w + 1, x));
        prop_assert_eq!(cat.resize(w2), by.clone());
        if lo < w && len > 0 {
            let hi = (lo + len - 1).min(w - 1);
            let expect = (x >> lo) & mask(hi - lo + 1);
            prop_assert_eq!(bx.slice(hi, lo), b(hi - lo + 1, expect));
        }
        let nw = len;
        prop_assert_eq!(bx.resize(nw), b(nw, x & mask(nw)));
        if nw <= 128 {
            prop_assert_eq!(bx.sext(nw), Bits::from_i128(nw, signed(w, x)));
        }
    }

    #[test]
    fn bytes_roundtrip_and_offsets(
        (w, x, _y) in operands(),
        off in 0usize..40,
        fill in any::<u8>(),
        room in 0usize..12,
    ) {
        let bx = b(w, x);
        prop_assert_eq!(Bits::from_be_bytes(w, &bx.to_be_bytes()), bx.clone());
        // From exactly the bytes the field needs (no 8-byte window past it) to some more.
        let mut buf = vec![fill; (off + w as usize).div_ceil(8) + room];
        let before = buf.clone();
        bx.write_bits(&mut buf, off).unwrap();
        prop_assert_eq!(Bits::read_bits(&buf, off, w).unwrap(), bx.clone());
        // Bits outside the written range are untouched, checked bit by bit.
        for i in (0..off).chain(off + w as usize..buf.len() * 8) {
            let bit = |v: &[u8]| v[i / 8] >> (7 - i % 8) & 1;
            prop_assert_eq!(bit(&buf), bit(&before));
        }
        // Reading matches a bit-by-bit reference.
        let mut naive = Bits::zero(w);
        for k in 0..w {
            let i = off + (w - 1 - k) as usize;
            naive.set_bit(k, buf[i / 8] >> (7 - i % 8) & 1 == 1);
        }
        prop_assert_eq!(naive, bx);
    }

    #[test]
    fn wide_identities(a in proptest::collection::vec(any::<u64>(), 10),
                       c in proptest::collection::vec(any::<u64>(), 10), w in 129u32..640, n in 0u64..700) {
        let (x, y) = (Bits::from_limbs(w, &a), Bits::from_limbs(w, &c));
        prop_assert_eq!(x.add(&y).sub(&y), x.clone());
        prop_assert_eq!(x.mul(&Bits::from_u64(w, 2)), x.shl(1));
        prop_assert_eq!(x.shl(n).shr_u(n), x.and(&Bits::ones(w).shr_u(n)));
        if !y.is_zero() {
            let (q, r) = x.divrem_u(&y);
            prop_assert_eq!(q.mul(&y).add(&r), x.clone());
            prop_assert_eq!(r.cmp_u(&y), Ordering::Less);
        }
        prop_assert_eq!(Bits::from_be_bytes(w, &x.to_be_bytes()), x.clone());
        prop_assert_eq!(x.neg().add(&x), Bits::zero(w));
        prop_assert_eq!(x.sub_sat_u(&x.add_sat_u(&y)), Bits::zero(w));
    }
}
