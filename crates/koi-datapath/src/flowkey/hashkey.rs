//! Hashes as flow-key fields (Open vSwitch's `dp_hash`, made general): a v1model `hash` of
//! packet fields that only the parser writes is computed from the flow key itself, into
//! key words of its own, so that a megaflow can match the hash's bits instead of the bytes
//! it is computed from.
//!
//! Without it, a decision on a hash's result (a consistent-hash ring over a memcached key,
//! an ECMP bucket of a 5-tuple) makes the megaflow match every bit hashed: one megaflow per
//! key or per connection. With it, a megaflow matches the result's bits the decisions read
//! (a bucket, a ring arc's leading bits), and every packet whose data hashes there shares it.
//!
//! **Which hashes.** A `hash` statement of a control or an action (not a parser) whose
//! algorithm is not `random` (CRC-16, CRC-32, identity, csum16, xor16, the FNV hashes and
//! the other fixed ones, and the custom CRCs `crc16_custom` / `crc32_custom` with the
//! parameters the control plane set), whose result goes to a whole slot of at
//! most 64 bits that some decision depends on, whose base and maximum are constants, and
//! whose data are fields of headers (no stack elements, no union members) that nothing but
//! the ingress parser's `extract` writes: no assignment, `setValid`/`setInvalid`, copy or
//! extern writes them or their validity anywhere in the program. Each such field, its
//! varbit length and its header's validity must be whole fields of the key. Then the
//! field's value when the hash runs is its value at the end of the parse, which the key
//! holds, and the hash of the key's data is the hash the statement computes.
//!
//! **Soundness.** The key is a superset of what it was (the hashed fields stay key fields:
//! the analysis still counts them as what the result is computed from), so nothing the
//! mask can say is lost. The slow path's observer follows, through the run, which slots hold
//! a copy of a hash key's bits (the statement's result, then plain copies, slices and
//! zero-extending casts of it); a decision on such a slot adds the hash key's bits it read
//! to the mask instead of the hashed fields. Within one megaflow every decision is fixed, so
//! the same statements run in the same order on every packet, and the copies hold the same
//! hash bits. A resubmitted or recirculated pass (a second parse) is followed without them.
//! A custom CRC's parameters are state: the fast path computes it with a copy of them
//! ([`crate::customcrc`], taken before each batch), and a change of them flushes the flow
//! caches (as every write that is not a table's does), so no megaflow learnt with the old
//! parameters outlives them.
//!
//! **Cost.** The fast path computes only the hash keys that some installed megaflow matches,
//! after the key's lookup hash: that hash reads the hash keys' words as 0 (they are a
//! function of the other words), so the hash a native parse-path template gives with the key
//! serves as it is. The microflow tier and the signature cache check what the hash finds
//! against the whole key, hash keys included.

use super::KeyField;
use super::facts::{Facts, Origin};
use koi_hash::bits::BitString;
use koi_hash::v1model::{Calculation, HashAlgorithm, hash_result};
use koi_ir::entity::EntityId;
use koi_ir::{Builtin, Expr, Place, SlotId, SlotKind, Stmt, Ty};

/// One hashed field: where its value and what says whether it counts are in the key.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Piece {
    /// Key bit of the header's validity bit (an invalid header's fields are left out).
    pub valid: u32,
    /// Key offset and width of the field (a varbit's at its maximum width).
    pub off: u32,
    pub width: u32,
    /// A varbit's length field (key offset, width): its value is the low `length` bits.
    pub length: Option<(u32, u32)>,
}

/// What a hash key computes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Calc {
    /// An algorithm with a fixed definition.
    Fixed(HashAlgorithm),
    /// A custom CRC: the index of its calculation ([`koi_ir::Pipeline::calculations`]),
    /// run with the parameters [`HashBuf`] holds a copy of.
    Custom(u32),
}

/// One hash computed into the key.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HashKey {
    /// The statement, by its address in the pipeline (which outlives the datapath).
    pub(crate) stmt: usize,
    /// `crc32(hdr.mc_key.key, hdr.mc_key_t1.b)`, for key printouts.
    pub name: String,
    pub(crate) calc: Calc,
    /// The result's slot, its name and its width.
    pub dst: SlotId,
    pub dst_name: String,
    pub width: u32,
    pub(crate) base: u64,
    pub(crate) max: Option<u64>,
    pub(crate) data: Vec<Piece>,
    /// Key offset of the result (a word of its own; the value in the word's top `width` bits).
    pub key_offset: u32,
}

/// The buffers a hash key's data is assembled in, and the custom CRCs as the state has
/// them.
#[derive(Clone, Debug, Default)]
pub struct HashBuf {
    bits: BitString,
    bytes: Vec<u8>,
    /// The custom CRCs, as the datapath copied them before the batch.
    pub(crate) customs: crate::customcrc::CustomCrcs,
}

impl HashKey {
    /// Whether the hash is a custom CRC (its parameters are the control plane's).
    pub fn is_custom(&self) -> bool {
        matches!(self.calc, Calc::Custom(_))
    }

    /// The hash of `key`'s data, as the statement computes it.
    pub(crate) fn compute(&self, key: &[u64], buf: &mut HashBuf) -> u64 {
        let whole = self.bytes(key, &mut buf.bytes);
        if !whole {
            self.bits(key, &mut buf.bits);
        }
        let h = match (self.calc, whole) {
            (Calc::Fixed(a), true) => Calculation::new(a).compute_bytes(&buf.bytes),
            (Calc::Fixed(a), false) => Calculation::new(a).compute(&buf.bits),
            // As the interpreter runs it: over the bytes, the last one zero-padded.
            (Calc::Custom(i), true) => Some(buf.customs.checksum_extending(i, &buf.bytes)),
            (Calc::Custom(i), false) => {
                Some(buf.customs.checksum_extending(i, buf.bits.as_bytes()))
            }
        };
        let h = h.unwrap_or(0);
        match self.max {
            Some(max) => hash_result(h, self.base, max, self.width),
            None => koi_hash::v1model::truncate(h, self.width),
        }
    }

    /// The data as bytes, when every piece counted is whole bytes (the usual case:
    /// whole-byte fields, varbits of whole bytes), wherever in the key it starts; `false`
    /// if one is not.
    fn bytes(&self, key: &[u64], out: &mut Vec<u8>) -> bool {
        out.clear();
        for p in &self.data {
            if read_key(key, p.valid, 1) == 0 {
                continue;
            }
            let (start, len) = self.span(key, p);
            if len % 8 != 0 {
                return false;
            }
            // Whole words of the piece, each from two of the key's.
            let (mut done, b) = (0, start % 64);
            let mut w = (start / 64) as usize;
            while len - done >= 64 {
                let hi = key.get(w).copied().unwrap_or(0);
                let v = match b {
                    0 => hi,
                    b => (hi << b) | (key.get(w + 1).copied().unwrap_or(0) >> (64 - b)),
                };
                out.extend_from_slice(&v.to_be_bytes());
                done += 64;
                w += 1;
            }
            let rest = len - done;
            if rest > 0 {
                let v = read_key(key, start + done, rest) << (64 - rest);
                out.extend_from_slice(&v.to_be_bytes()[..(rest / 8) as usize]);
            }
        }
        true
    }

    /// Where piece `p`'s value is in `key`: its first key bit and its length.
    fn span(&self, key: &[u64], p: &Piece) -> (u32, u32) {
        match p.length {
            Some((off, w)) => {
                let l = read_key(key, off, w).min(u64::from(p.width)) as u32;
                (p.off + p.width - l, l)
            }
            None => (p.off, p.width),
        }
    }

    /// The data as a bit string (any widths).
    fn bits(&self, key: &[u64], buf: &mut BitString) {
        buf.clear();
        for p in &self.data {
            if read_key(key, p.valid, 1) == 0 {
                continue;
            }
            let (start, len) = self.span(key, p);
            let mut done = 0;
            while done < len {
                let n = (len - done).min(64);
                buf.push_u64(read_key(key, start + done, n), n as usize);
                done += n;
            }
        }
    }

    /// Writes the hash of `key`'s data into `key`.
    pub(crate) fn fill(&self, key: &mut [u64], buf: &mut HashBuf) {
        let v = self.compute(key, buf);
        if let Some(w) = key.get_mut((self.key_offset / 64) as usize) {
            *w = match self.width {
                0 => 0,
                n => v << (64 - n),
            };
        }
    }

    /// The key mask bits of value bits `bits` of the result (bit 0 the least significant).
    pub(crate) fn mask(&self, bits: u64, out: &mut [u64]) {
        let bits = koi_hash::v1model::truncate(bits, self.width);
        if let (Some(w), n @ 1..) = (out.get_mut((self.key_offset / 64) as usize), self.width) {
            *w |= bits << (64 - n);
        }
    }
}

/// Key bits `off..off + len` (`len <= 64`) as a number.
fn read_key(key: &[u64], off: u32, len: u32) -> u64 {
    let mut v = 0u64;
    let mut done = 0;
    while done < len {
        let k = off + done;
        let (w, b) = ((k / 64) as usize, k % 64);
        let n = (64 - b).min(len - done);
        let word = key.get(w).copied().unwrap_or(0);
        let part = (word << b) >> (64 - n);
        v = if n == 64 { part } else { (v << n) | part };
        done += n;
    }
    v
}

/// The hashes of `f`'s pipeline that can be key fields, given the key's `fields`; their
/// `key_offset`s are left for the layout to assign.
pub(crate) fn find(f: &Facts<'_>, demanded: &[bool], fields: &[KeyField]) -> Vec<HashKey> {
    let p = f.p;
    // Slots written only by the ingress parser's extracts.
    let mut parsed_only = vec![true; f.nslots];
    for w in &f.writes {
        if w.origin != Origin::Packet
            && let Some(x) = parsed_only.get_mut(w.dst)
        {
            *x = false;
        }
    }
    let whole = |s: SlotId| {
        let width = p.phv.slots.get(s).map(|x| x.width)?;
        fields
            .iter()
            .find(|k| k.slot == s && k.lsb == 0 && k.width == width)
            .map(|k| (k.key_offset, k.width))
    };
    let ok = |s: SlotId| parsed_only.get(s.index() as usize) == Some(&true);
    let mut out = Vec::new();
    let stmts = super::bodies(p).flat_map(|b| b.blocks.values().flat_map(|b| &b.stmts));
    for s in stmts {
        let Stmt::Builtin(Builtin::Hash {
            dst: Place::Slot(dst),
            algo,
            base: Expr::Const(base),
            data,
            max,
        }) = s
        else {
            continue;
        };
        // The algorithms with a fixed definition, and the custom CRCs (not random).
        let calc = match (algo.calculation(), crate::program::v1_algo(*algo)) {
            (Some(i), _) => Calc::Custom(i),
            (None, Some(a)) => Calc::Fixed(a),
            (None, None) => continue,
        };
        let max = match max {
            Some(Expr::Const(m)) => Some(m.low_u64()),
            Some(_) => continue,
            None => None,
        };
        let Some(slot) = p.phv.slots.get(*dst) else {
            continue;
        };
        if !matches!(slot.ty, Ty::Bits(_))
            || slot.width > 64
            || demanded.get(dst.index() as usize) != Some(&true)
        {
            continue;
        }
        let mut pieces = Vec::new();
        let mut names = Vec::new();
        let all = data.iter().all(|e| {
            let Expr::Slot(fs) = e else {
                return false;
            };
            let Some(x) = p.phv.slots.get(*fs) else {
                return false;
            };
            let SlotKind::HeaderField(h) = x.kind else {
                return false;
            };
            let Some(hd) = p.phv.headers.get(h) else {
                return false;
            };
            if hd.stack.is_some() || hd.union.is_some() || !ok(*fs) || !ok(hd.valid) {
                return false;
            }
            let length = match x.length {
                Some(l) if ok(l) => match whole(l) {
                    Some(at) => Some(at),
                    None => return false,
                },
                Some(_) => return false,
                None => None,
            };
            let (Some((off, width)), Some((valid, _))) = (whole(*fs), whole(hd.valid)) else {
                return false;
            };
            pieces.push(Piece {
                valid,
                off,
                width,
                length,
            });
            names.push(x.name.clone());
            true
        });
        if !all || out.iter().any(|k: &HashKey| k.stmt == addr(s)) {
            continue;
        }
        out.push(HashKey {
            stmt: addr(s),
            name: format!("{}({})", algo.name(), names.join(", ")),
            calc,
            dst: *dst,
            dst_name: slot.name.clone(),
            width: slot.width,
            base: base.low_u64(),
            max,
            data: pieces,
            key_offset: 0,
        });
    }
    out
}

/// A statement's identity: its address in the pipeline.
pub(crate) fn addr(s: &Stmt) -> usize {
    std::ptr::from_ref(s) as usize
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn key_bits_read_across_words() {
        let key = [0x0123_4567_89ab_cdef, 0xfedc_ba98_7654_3210];
        assert_eq!(read_key(&key, 0, 64), 0x0123_4567_89ab_cdef);
        assert_eq!(read_key(&key, 4, 8), 0x12);
        assert_eq!(read_key(&key, 60, 8), 0xff);
        assert_eq!(read_key(&key, 56, 16), 0xeffe);
        assert_eq!(read_key(&key, 64, 64), 0xfedc_ba98_7654_3210);
        assert_eq!(read_key(&key, 1, 64), 0x0246_8acf_1357_9bdf);
        assert_eq!(read_key(&key, 0, 0), 0);
    }
}
