//! The packet header vector of one packet instance, stored as bytes in packet bit order (the
//! layout of [`koi_ir::phv`]), so that extracting or emitting a header is one bit copy; and
//! the bit writer the deparser emits into.

use koi_ir::{Bits, HeaderId, Pipeline, SlotId, Ty, Value};

/// One instance's PHV.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Phv {
    bytes: Vec<u8>,
}

impl Phv {
    /// An all-zero PHV (headers invalid, metadata 0) for `p`.
    pub fn new(p: &Pipeline) -> Phv {
        Phv {
            bytes: vec![0; p.phv.width.div_ceil(8) as usize],
        }
    }

    /// The PHV's bytes (packet bit order).
    pub fn bytes(&self) -> &[u8] {
        &self.bytes
    }

    /// `width` bits at bit `offset` (zeros outside the PHV).
    #[inline]
    pub fn read_at(&self, offset: u32, width: u32) -> Bits {
        Bits::read_bits(&self.bytes, offset as usize, width).unwrap_or_else(|_| Bits::zero(width))
    }

    /// Writes `v` at bit `offset` (nothing outside the PHV).
    #[inline]
    pub fn write_at(&mut self, offset: u32, v: &Bits) {
        let _ = v.write_bits(&mut self.bytes, offset as usize);
    }

    /// Copies `width` bits of `src` from bit `start` to bit `offset` (nothing if either range
    /// is outside its buffer); a byte copy when everything is byte-aligned.
    pub fn copy_from(&mut self, offset: u32, src: &[u8], start: usize, width: u32) {
        let (o, w) = (offset as usize, width as usize);
        if o.is_multiple_of(8) && start.is_multiple_of(8) && w.is_multiple_of(8) {
            let from = src.get(start / 8..(start + w) / 8);
            let to = self.bytes.get_mut(o / 8..(o + w) / 8);
            if let (Some(from), Some(to)) = (from, to) {
                to.copy_from_slice(from);
            }
            return;
        }
        if let Ok(v) = Bits::read_bits(src, start, width) {
            self.write_at(offset, &v);
        }
    }

    /// Zeroes `width` bits at bit `offset` (nothing if the range is outside the PHV).
    pub fn zero_at(&mut self, offset: u32, width: u32) {
        let (o, w) = (offset as usize, width as usize);
        if o.is_multiple_of(8) && w.is_multiple_of(8) {
            if let Some(to) = self.bytes.get_mut(o / 8..(o + w) / 8) {
                to.fill(0);
            }
            return;
        }
        self.write_at(offset, &Bits::zero(width));
    }

    /// Writes `v` resized to `width` at bit `offset`.
    #[inline]
    fn write_resized(&mut self, offset: u32, width: u32, v: &Bits) {
        if v.width() == width {
            self.write_at(offset, v);
        } else {
            self.write_at(offset, &v.resize(width));
        }
    }

    /// The raw bits of slot `s`.
    #[inline]
    pub fn raw(&self, p: &Pipeline, s: SlotId) -> Bits {
        match p.phv.slots.get(s) {
            Some(slot) => self.read_at(slot.offset, slot.width),
            None => Bits::zero(0),
        }
    }

    /// Writes the raw bits of slot `s` (resized to its width).
    pub fn set_raw(&mut self, p: &Pipeline, s: SlotId, v: &Bits) {
        if let Some(slot) = p.phv.slots.get(s) {
            self.write_resized(slot.offset, slot.width, v);
        }
    }

    /// The typed value of slot `s`: a bool, bits, or a varbit of its current length.
    pub fn value(&self, p: &Pipeline, s: SlotId) -> Value {
        let Some(slot) = p.phv.slots.get(s) else {
            return Value::Bits(Bits::zero(0));
        };
        let raw = self.read_at(slot.offset, slot.width);
        match slot.ty {
            Ty::Bool => Value::Bool(!raw.is_zero()),
            Ty::Bits(_) => Value::Bits(raw),
            Ty::Varbit(max) => {
                let len = slot
                    .length
                    .map_or(0, |l| self.raw(p, l).to_u64().unwrap_or(0))
                    .min(u64::from(max)) as u32;
                Value::Varbit {
                    max,
                    bits: raw.resize(len),
                }
            }
        }
    }

    /// Stores a typed value in slot `s` (a varbit sets the length slot too).
    pub fn set_value(&mut self, p: &Pipeline, s: SlotId, v: &Value) {
        let Some(slot) = p.phv.slots.get(s) else {
            return;
        };
        match v {
            Value::Varbit { bits, .. } => {
                let len = bits.width().min(slot.width);
                self.write_at(slot.offset, &bits.resize(slot.width));
                if let Some(l) = slot.length {
                    self.set_raw(p, l, &Bits::from_u64(64, u64::from(len)));
                }
            }
            Value::Bits(b) => self.write_resized(slot.offset, slot.width, b),
            Value::Bool(v) => self.write_resized(slot.offset, slot.width, &Bits::from_bool(*v)),
        }
    }

    pub fn valid(&self, p: &Pipeline, h: HeaderId) -> bool {
        p.phv
            .headers
            .get(h)
            .is_some_and(|hd| !self.raw(p, hd.valid).is_zero())
    }

    pub fn set_valid(&mut self, p: &Pipeline, h: HeaderId, v: bool) {
        if let Some(hd) = p.phv.headers.get(h) {
            self.set_raw(p, hd.valid, &Bits::from_bool(v));
        }
    }

    /// Zeroes every field of `h` and its varbit lengths (not its validity).
    pub fn zero_fields(&mut self, p: &Pipeline, h: HeaderId) {
        let Some(hd) = p.phv.headers.get(h) else {
            return;
        };
        self.zero_at(hd.offset, hd.width);
        for &f in &hd.fields {
            if let Some(l) = p.phv.slots.get(f).and_then(|s| s.length) {
                self.set_raw(p, l, &Bits::zero(64));
            }
        }
    }

    /// Copies fields, varbit lengths and validity of header `src` of `from` to header `dst`.
    pub fn copy_header(&mut self, p: &Pipeline, dst: HeaderId, from: &Phv, src: HeaderId) {
        let (Some(d), Some(s)) = (p.phv.headers.get(dst), p.phv.headers.get(src)) else {
            return;
        };
        for (&df, &sf) in d.fields.iter().zip(&s.fields) {
            let v = from.value(p, sf);
            self.set_value(p, df, &v);
        }
        let valid = from.valid(p, src);
        self.set_valid(p, dst, valid);
    }

    /// Zeroes the bit ranges `ranges` (`(offset, width)`).
    pub fn zero_ranges(&mut self, ranges: &[(u32, u32)]) {
        for &(o, w) in ranges {
            self.zero_at(o, w);
        }
    }
}

/// Bits appended one after the other (the deparser's output).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct BitWriter {
    bytes: Vec<u8>,
    bits: usize,
    /// `(start, length)` in bits of each chunk pushed.
    pub chunks: Vec<(usize, usize)>,
}

impl BitWriter {
    pub fn new() -> BitWriter {
        BitWriter::default()
    }

    /// An empty writer with room for `bytes` bytes and `chunks` chunks.
    pub fn with_capacity(bytes: usize, chunks: usize) -> BitWriter {
        BitWriter {
            bytes: Vec::with_capacity(bytes),
            bits: 0,
            chunks: Vec::with_capacity(chunks),
        }
    }

    pub fn len_bits(&self) -> usize {
        self.bits
    }

    /// Appends `v` as one chunk.
    pub fn push(&mut self, v: &Bits) {
        let w = v.width() as usize;
        let start = self.bits;
        self.bits += w;
        self.bytes.resize(self.bits.div_ceil(8), 0);
        let _ = v.write_bits(&mut self.bytes, start);
        self.chunks.push((start, w));
    }

    /// Appends `width` bits of `data` from bit `start` as one chunk, as pushing
    /// `Bits::read_bits(data, start, width)` would (zeros if they are outside `data`).
    pub fn push_range(&mut self, data: &[u8], start: usize, width: usize) {
        let aligned =
            self.bits.is_multiple_of(8) && start.is_multiple_of(8) && width.is_multiple_of(8);
        match data.get(start / 8..(start + width).div_ceil(8)) {
            Some(src) if aligned => {
                let at = self.bits;
                self.bytes.truncate(at / 8);
                self.bytes.extend_from_slice(src);
                self.bits += width;
                self.chunks.push((at, width));
            }
            _ => {
                let w = width as u32;
                let v = Bits::read_bits(data, start, w).unwrap_or_else(|_| Bits::zero(w));
                self.push(&v);
            }
        }
    }

    /// Appends the bits of `data` from bit `start` to its end.
    pub fn push_tail(&mut self, data: &[u8], start: usize) {
        let total = data.len() * 8;
        if start >= total {
            return;
        }
        if self.bits.is_multiple_of(8) && start.is_multiple_of(8) {
            self.bytes.truncate(self.bits / 8);
            self.bytes.extend_from_slice(&data[start / 8..]);
            self.bits += total - start;
            return;
        }
        let mut at = start;
        while at < total {
            let n = (total - at).min(64) as u32;
            let v = Bits::read_bits(data, at, n).unwrap_or_else(|_| Bits::zero(n));
            self.push(&v);
            self.chunks.pop();
            at += n as usize;
        }
    }

    /// The bytes, the last one padded with zero bits.
    pub fn into_bytes(self) -> Vec<u8> {
        self.bytes
    }

    /// The bits of chunk `i`.
    pub fn chunk(&self, i: usize) -> Option<Bits> {
        let (s, w) = *self.chunks.get(i)?;
        Bits::read_bits(&self.bytes, s, w as u32).ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bit_writer_handles_unaligned_tails() {
        let mut w = BitWriter::new();
        w.push(&Bits::from_u64(4, 0xa));
        w.push_tail(&[0x12, 0x34], 4);
        assert_eq!(w.len_bits(), 16);
        assert_eq!(w.clone().into_bytes(), [0xa2, 0x34]);
        assert_eq!(w.chunk(0), Some(Bits::from_u64(4, 0xa)));
        let mut a = BitWriter::new();
        a.push(&Bits::from_u64(8, 1));
        a.push_tail(&[9, 8, 7], 8);
        assert_eq!(a.into_bytes(), [1, 8, 7]);
        let mut e = BitWriter::new();
        e.push_tail(&[1], 8);
        assert_eq!(e.len_bits(), 0);
    }
}
