//! The interpreter's functions that generated code calls for what is not worth generating
//! inline (hashes, uBPF's lookup3, `csum_replace`, the payload checksum, saturating
//! arithmetic), with the C ABI Cranelift calls them by.

use super::*;

/// The functions generated code calls: the interpreter's own, for what is not worth
/// generating inline.
pub(super) const HELPERS: [(&str, *const u8); 5] = [
    ("koi_jit_hash", koi_jit_hash as *const u8),
    ("koi_jit_lookup3", koi_jit_lookup3 as *const u8),
    ("koi_jit_csum_replace", koi_jit_csum_replace as *const u8),
    ("koi_jit_sat", koi_jit_sat as *const u8),
    ("koi_jit_payload_csum", koi_jit_payload_csum as *const u8),
];

/// v1model hash `algo` (an index into [`HashAlgo::FIXED`]) of the `len` bytes at `data`.
pub(super) extern "C" fn koi_jit_hash(algo: u64, data: *const u8, len: u64) -> u64 {
    let Some(a) = HashAlgo::FIXED
        .get(algo as usize)
        .and_then(|a| crate::program::v1_algo(*a))
    else {
        return 0;
    };
    // SAFETY: generated code passes a stack buffer of `len` initialised bytes (`Lower::hash`).
    let data = unsafe { std::slice::from_raw_parts(data, len as usize) };
    koi_hash::v1model::Calculation::new(a)
        .compute_bytes(data)
        .unwrap_or(0)
}

/// uBPF `lookup3` over `n` values at `vals` of the widths at `widths`.
pub(super) extern "C" fn koi_jit_lookup3(vals: *const u64, widths: *const u64, n: u64) -> u64 {
    // SAFETY: generated code passes two stack arrays of `n` initialised words each
    // (`Lower::lookup3`).
    let (vals, widths) = unsafe {
        (
            std::slice::from_raw_parts(vals, n as usize),
            std::slice::from_raw_parts(widths, n as usize),
        )
    };
    let elems: Vec<koi_hash::ubpf::Element> = vals
        .iter()
        .zip(widths)
        .map(|(v, w)| koi_hash::ubpf::Element {
            value: *v,
            width: *w as u32,
        })
        .collect();
    u64::from(koi_hash::ubpf::hash(&elems).unwrap_or(0))
}

/// [`super::csum_replace`].
pub(super) extern "C" fn koi_jit_csum_replace(csum: u64, old: u64, new: u64, four: u64) -> u64 {
    crate::program::csum_replace(csum, old, new, four != 0)
}

/// [`super::payload_csum`] over the `len` bytes at `pkt`.
pub(super) extern "C" fn koi_jit_payload_csum(
    csum: u64,
    pkt: *const u8,
    len: u64,
    start: u64,
    odd: u64,
) -> u64 {
    // SAFETY: generated code passes the packet pointer and length it was called with
    // (`OutFn`'s `pkt` and `len`: the packet's bytes).
    let pkt = unsafe { std::slice::from_raw_parts(pkt, len as usize) };
    crate::program::payload_csum(csum, pkt, start as u32, odd != 0)
}

/// Saturating signed addition (`op` 0) or subtraction (1), as `arith64`.
pub(super) extern "C" fn koi_jit_sat(op: u64, x: u64, y: u64, wa: u64, wb: u64) -> u64 {
    let op = if op == 0 {
        BinOp::AddSatS
    } else {
        BinOp::SubSatS
    };
    crate::program::arith64(op, x, y, wa as u32, wb as u32)
}
