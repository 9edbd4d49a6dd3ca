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

impl Bits {
    /// The big-endian number in `bytes`, zero-extended or truncated (keeping the low bits) to
    /// `width` bits.
    pub fn from_be_bytes(width: u32, bytes: &[u8]) -> Bits {
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
        let limbs = self.limbs();
        (0..n)
            .rev()
            .map(|k| (limbs[k / 8] >> ((k % 8) * 8)) as u8)
            .collect()
    }

    /// Reads `width` bits at bit offset `bit_off` of `buf` (network bit order).
    pub fn read_bits(buf: &[u8], bit_off: usize, width: u32) -> Result<Bits, OutOfBounds> {
        let (first, last, pad) = span(bit_off, width, buf.len())?;
        let covered = ((last - first) * 8) as u32;
        let raw = Bits::from_be_bytes(covered, &buf[first..last]);
        Ok(raw.shr_u(u64::from(pad)).resize(width))
    }

    /// Writes this value at bit offset `bit_off` of `buf`, leaving the surrounding bits alone.
    pub fn write_bits(&self, buf: &mut [u8], bit_off: usize) -> Result<(), OutOfBounds> {
        let (first, last, pad) = span(bit_off, self.width, buf.len())?;
        if pad == 0 && bit_off.is_multiple_of(8) {
            buf[first..last].copy_from_slice(&self.to_be_bytes());
            return Ok(());
        }
        let covered = ((last - first) * 8) as u32;
        let raw = Bits::from_be_bytes(covered, &buf[first..last]);
        let new = raw.with_slice(pad, self);
        buf[first..last].copy_from_slice(&new.to_be_bytes());
        Ok(())
    }
}
