//! Conversions between [`Bits`] and big-endian (network order) byte strings, including reading
//! and writing a field at any bit offset of a buffer: how headers are extracted from and
//! emitted to packets, and how the PHV stores fields.
//!
//! Bit offsets count from the most significant bit of byte 0 (network bit order), so a field
//! of `width` bits at offset `o` occupies packet bits `o .. o + width`, most significant first.

use super::Bits;

/// A read or write past the end of a buffer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OutOfBounds;

impl std::fmt::Display for OutOfBounds {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("bit range outside of the buffer")
    }
}

impl std::error::Error for OutOfBounds {}

/// The byte range and trailing padding of `width` bits at bit offset `bit_off`.
fn span(bit_off: usize, width: u32, len: usize) -> Result<(usize, usize, u32), OutOfBounds> {
    let end_bit = bit_off.checked_add(width as usize).ok_or(OutOfBounds)?;
    if end_bit > len.checked_mul(8).ok_or(OutOfBounds)? {
        return Err(OutOfBounds);
    }
    let first = bit_off / 8;
    let last = end_bit.div_ceil(8);
    let pad = (last * 8 - end_bit) as u32;
    Ok((first, last, pad))
}

/// The 8 bytes of `buf` at `at`, if it has them.
#[inline]
fn window8(buf: &[u8], at: usize) -> Option<[u8; 8]> {
    buf.get(at..at.checked_add(8)?)?.try_into().ok()
}

/// The big-endian number in `bytes` (at most 16 of them).
#[inline]
fn be_u128(bytes: &[u8]) -> u128 {
    // A loop, not a copy into a 16-byte buffer: a copy of a variable length is a memcpy call,
    // and fields are mostly a few bytes.
    bytes.iter().fold(0, |v, &b| (v << 8) | u128::from(b))
}

/// Stores the low `out.len()` (at most 16) bytes of `v` big-endian in `out`.
#[inline]
fn put_be_u128(out: &mut [u8], mut v: u128) {
    for o in out.iter_mut().rev() {
        *o = v as u8;
        v >>= 8;
    }
}

impl Bits {
    /// The big-endian number in `bytes`, zero-extended or truncated (keeping the low bits) to
    /// `width` bits.
    #[inline]
    pub fn from_be_bytes(width: u32, bytes: &[u8]) -> Bits {
        if width <= 128 {
            return Bits::small(width, be_u128(&bytes[bytes.len().saturating_sub(16)..]));
        }
        let mut out = Bits::zero(width);
        let limbs = out.limbs_mut();
        for (k, &byte) in bytes.iter().rev().enumerate() {
            let (li, sh) = (k / 8, (k % 8) * 8);
            match limbs.get_mut(li) {
                Some(l) => *l |= u64::from(byte) << sh,
                None => break,
            }
        }
        out.normalize();
        out
    }

    /// The value as `ceil(width / 8)` big-endian bytes (right-aligned: padding is in the high
    /// bits of the first byte).
    pub fn to_be_bytes(&self) -> Vec<u8> {
        let n = self.width.div_ceil(8) as usize;
        let mut out = vec![0; n];
        self.put_be_bytes(&mut out);
        out
    }

    /// Calls `f` with the value as [`Bits::to_be_bytes`] gives it, without allocating when
    /// the value is at most 128 bits wide.
    pub fn with_be_bytes<R>(&self, f: impl FnOnce(&[u8]) -> R) -> R {
        let n = self.width.div_ceil(8) as usize;
        if n <= 16 {
            let mut buf = [0u8; 16];
            self.put_be_bytes(&mut buf[..n]);
            return f(&buf[..n]);
        }
        f(&self.to_be_bytes())
    }

    /// Writes the value as `out.len()` big-endian bytes (`ceil(width / 8)` of them).
    #[inline]
    fn put_be_bytes(&self, out: &mut [u8]) {
        let n = out.len();
        if let Some(v) = self.as_small() {
            put_be_u128(out, v);
            return;
        }
        let limbs = self.limbs();
        for (o, k) in out.iter_mut().zip((0..n).rev()) {
            *o = (limbs[k / 8] >> ((k % 8) * 8)) as u8;
        }
    }

    /// Reads `width` bits at bit offset `bit_off` of `buf` (network bit order).
    #[inline]
    pub fn read_bits(buf: &[u8], bit_off: usize, width: u32) -> Result<Bits, OutOfBounds> {
        // Most fields: at most 57 bits, so that they lie in the 8 bytes from their first one,
        // which the buffer has (then the field is within it too), in u64 arithmetic.
        if (1..=57).contains(&width)
            && let Some(w) = window8(buf, bit_off / 8)
        {
            let v = (u64::from_be_bytes(w) << (bit_off % 8)) >> (64 - width);
            return Ok(Bits::from_u64(width, v));
        }
        Bits::read_bits_wide(buf, bit_off, width)
    }

    /// [`Bits::read_bits`] for the other fields, out of line.
    #[inline(never)]
    fn read_bits_wide(buf: &[u8], bit_off: usize, width: u32) -> Result<Bits, OutOfBounds> {
        let (first, last, pad) = span(bit_off, width, buf.len())?;
        let n = last - first;
        if (1..=8).contains(&n)
            && let Some(w) = window8(buf, first)
        {
            // One 8-byte load when the buffer has the room: the field's bytes at the top.
            let v = (u64::from_be_bytes(w) >> ((8 - n) * 8)) >> pad;
            return Ok(Bits::small(width, u128::from(v)));
        }
        if n <= 16 {
            // Fits a u128: one load, one shift, one mask.
            let v = be_u128(&buf[first..last]) >> pad;
            return Ok(Bits::small(width, v));
        }
        let covered = ((last - first) * 8) as u32;
        let raw = Bits::from_be_bytes(covered, &buf[first..last]);
        Ok(raw.shr_u(u64::from(pad)).resize(width))
    }

    /// Writes this value at bit offset `bit_off` of `buf`, leaving the surrounding bits alone.
    #[inline]
    pub fn write_bits(&self, buf: &mut [u8], bit_off: usize) -> Result<(), OutOfBounds> {
        // As in `read_bits`: a field of at most 57 bits within the 8 bytes from its first one,
        // a read-modify-write of that window in u64 arithmetic.
        if (1..=57).contains(&self.width)
            && let Some(v) = self.low_inline()
            && let Some(w) = window8(buf, bit_off / 8)
        {
            let first = bit_off / 8;
            let shift = 64 - (bit_off % 8) as u32 - self.width;
            let mask = ((1u64 << self.width) - 1) << shift;
            let new = (u64::from_be_bytes(w) & !mask) | ((v << shift) & mask);
            buf[first..first + 8].copy_from_slice(&new.to_be_bytes());
            return Ok(());
        }
        self.write_bits_wide(buf, bit_off)
    }

    /// [`Bits::write_bits`] for the other fields, out of line.
    #[inline(never)]
    fn write_bits_wide(&self, buf: &mut [u8], bit_off: usize) -> Result<(), OutOfBounds> {
        let (first, last, pad) = span(bit_off, self.width, buf.len())?;
        if pad == 0 && bit_off.is_multiple_of(8) {
            self.put_be_bytes(&mut buf[first..last]);
            return Ok(());
        }
        let n = last - first;
        if (1..=8).contains(&n)
            && let Some(v) = self.as_small()
            && let Some(w) = window8(buf, first)
        {
            // Read-modify-write of an 8-byte window (the bytes beyond the field are written
            // back unchanged).
            let shift = (8 - n) as u32 * 8 + pad;
            let mask = (super::low_mask(self.width) as u64) << shift;
            let new = (u64::from_be_bytes(w) & !mask) | (((v as u64) << shift) & mask);
            buf[first..first + 8].copy_from_slice(&new.to_be_bytes());
            return Ok(());
        }
        if n <= 16
            && let Some(v) = self.as_small()
        {
            let dst = &mut buf[first..last];
            let mask = super::low_mask(self.width) << pad;
            let new = (be_u128(dst) & !mask) | ((v << pad) & mask);
            put_be_u128(dst, new);
            return Ok(());
        }
        let covered = ((last - first) * 8) as u32;
        let raw = Bits::from_be_bytes(covered, &buf[first..last]);
        let new = raw.with_slice(pad, self);
        buf[first..last].copy_from_slice(&new.to_be_bytes());
        Ok(())
    }
}
