//! Native code for hot parse-path templates (Cranelift JIT).
//!
//! A [`Template`] that has matched [`crate::native::Jit`]'s threshold of packets becomes one
//! function `fn(pkt, len, port, key) -> matched`: the length checks, each `select` bit check
//! as a big-endian load compared with its value (a branch out on the first difference), each
//! exclusion check (a default case taken after exact values) compared with every value it
//! excludes (a branch out on an equal one), the range checks, the port checks, then every key word computed in a register from its constant part, the loads
//! and copies of packet fields and the port and length pieces, and stored, with the key's
//! microflow hash ([`koi_cache::WordHash`], one folded multiply per pair of words). It
//! writes only when the packet matches, so a miss leaves the key as it was, as
//! [`Template::matches`] does.
//!
//! Exactness: every read is of the bytes a field spans, which lie below the template's
//! minimum length, checked first; [`Template::matches`] and [`Template::fill`] read the same
//! bits. After compiling, the code runs on the packet at hand and is kept only if it gives
//! the same key (and debug builds compare every template key with a full parse).

// Calling generated code is unsafe (each block says why it is sound).
#![allow(unsafe_code)]

use super::Template;
use crate::native::{self, Code, Jit, shl, ushr};
use cranelift_codegen::ir::condcodes::IntCC;
use cranelift_codegen::ir::types::{I8, I64};
use cranelift_codegen::ir::{AbiParam, InstBuilder, Value};
use cranelift_frontend::FunctionBuilder;
use cranelift_module::{Linkage, Module};

/// A template's code: reads `len` bytes at `pkt` received on `port`; if the packet takes
/// the template's path, writes the key's words at `key` and their hash at `hash` and returns
/// 1, else returns 0.
type TplFn =
    unsafe extern "C" fn(pkt: *const u8, len: u64, port: u64, key: *mut u64, hash: *mut u64) -> u8;

/// A template's native code.
pub(super) struct TemplateCode {
    f: TplFn,
    /// Key words the code writes.
    words: usize,
    _code: Code,
}

impl std::fmt::Debug for TemplateCode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "TemplateCode({} words)", self.words)
    }
}

impl TemplateCode {
    /// Whether `pkt` takes the template's path; if so its key is in `key` and, when `key`
    /// is exactly the template's words, its hash in `hash`. `None`: `key` is too short for
    /// the code (use the template itself).
    #[inline]
    pub(super) fn run(
        &self,
        pkt: &[u8],
        port: u64,
        key: &mut [u64],
        hash: &mut Option<u64>,
    ) -> Option<bool> {
        if key.len() < self.words {
            return None;
        }
        let mut h = 0u64;
        // SAFETY: the code reads packet bytes below the template's minimum length only after
        // checking that `len` (the packet's length) reaches it, writes `self.words` words at
        // `key`, checked above to be within `key`, and one word at `hash`, a local; `pkt`,
        // `key` and `h` do not overlap.
        let m = unsafe {
            (self.f)(
                pkt.as_ptr(),
                pkt.len() as u64,
                port,
                key.as_mut_ptr(),
                &raw mut h,
            )
        };
        if m != 0 && key.len() == self.words {
            *hash = Some(h);
        }
        Some(m != 0)
    }
}

/// `t`'s code for keys of `words` words hashed with `seed`, if every read lies within its
/// minimum length.
pub(super) fn compile(
    jit: &mut Jit,
    t: &Template,
    words: usize,
    seed: u64,
) -> Option<TemplateCode> {
    let mut module = jit.module(&[])?;
    let mut ctx = module.make_context();
    let ptr = module.target_config().pointer_type();
    let sig = &mut ctx.func.signature;
    sig.params.push(AbiParam::new(ptr));
    sig.params.push(AbiParam::new(I64));
    sig.params.push(AbiParam::new(I64));
    sig.params.push(AbiParam::new(ptr));
    sig.params.push(AbiParam::new(ptr));
    sig.returns.push(AbiParam::new(I8));
    let mut b = FunctionBuilder::new(&mut ctx.func, &mut jit.fctx);
    let entry = b.create_block();
    let fail = b.create_block();
    b.append_block_params_for_function_params(entry);
    b.switch_to_block(entry);
    b.seal_block(entry);
    let params = b.block_params(entry).to_vec();
    let (pkt, len, port, key) = (params[0], params[1], params[2], params[3]);
    let ok = body(
        &mut b,
        t,
        words,
        seed,
        pkt,
        len,
        port,
        [key, params[4]],
        fail,
    )
    .is_some();
    if ok {
        let one = b.ins().iconst(I8, 1);
        b.ins().return_(&[one]);
    } else {
        b.ins().jump(fail, &[]);
    }
    b.switch_to_block(fail);
    b.seal_block(fail);
    let zero = b.ins().iconst(I8, 0);
    b.ins().return_(&[zero]);
    b.finalize(module.target_config());
    if !ok {
        return None;
    }
    let id = module
        .declare_function("template", Linkage::Local, &ctx.func.signature)
        .ok()?;
    module.define_function(id, &mut ctx).ok()?;
    module.clear_context(&mut ctx);
    module.finalize_definitions().ok()?;
    let code = module.get_finalized_function(id);
    // SAFETY: `code` is the finalized function `template` of `module`, whose signature is
    // (pointer, i64, i64, pointer, pointer) -> i8 with the platform's default C calling convention,
    // which is `TplFn`'s.
    let f = unsafe { std::mem::transmute::<*const u8, TplFn>(code) };
    Some(TemplateCode {
        f,
        words,
        _code: jit.keep(module),
    })
}

/// Emits the checks (branching to `fail`) and the key; `None` if something cannot be.
#[allow(clippy::too_many_arguments)]
fn body(
    b: &mut FunctionBuilder<'_>,
    t: &Template,
    words: usize,
    seed: u64,
    pkt: Value,
    len: Value,
    port: Value,
    [key, hash]: [Value; 2],
    fail: cranelift_codegen::ir::Block,
) -> Option<()> {
    let min_len = t.min_len;
    // A read of the bytes holding `n` bits at bit `off`, within the minimum length.
    let read = |b: &mut FunctionBuilder<'_>, off: u32, n: u32| -> Option<Value> {
        if (off + n).div_ceil(8) as usize > min_len {
            return None;
        }
        native::read_bits(b, pkt, off, n)
    };
    // Branches to `fail` unless `v == want`.
    let check = |b: &mut FunctionBuilder<'_>, v: Value, want: u64| {
        let w = native::k(b, want);
        let ne = b.ins().icmp(IntCC::NotEqual, v, w);
        let next = b.create_block();
        b.ins().brif(ne, fail, &[], next, &[]);
        b.switch_to_block(next);
        b.seal_block(next);
    };
    let min = native::k(b, min_len as u64);
    let short = b.ins().icmp(IntCC::UnsignedLessThan, len, min);
    let next = b.create_block();
    b.ins().brif(short, fail, &[], next, &[]);
    b.switch_to_block(next);
    b.seal_block(next);
    // A path that stopped on the packet's end: only packets shorter than it needed.
    if t.max_len != usize::MAX {
        let max = native::k(b, t.max_len as u64);
        let long = b.ins().icmp(IntCC::UnsignedGreaterThanOrEqual, len, max);
        let next = b.create_block();
        b.ins().brif(long, fail, &[], next, &[]);
        b.switch_to_block(next);
        b.seal_block(next);
    }
    for (l, want) in &t.check_loads {
        let v = load(b, pkt, l.byte, l.shl, l.shr, min_len)?;
        check(b, v, *want);
    }
    for c in &t.checks {
        let v = read(b, c.off, c.len)?;
        check(b, v, c.value);
    }
    for (off, n, values) in &t.excludes {
        let v = read(b, *off, *n)?;
        for &x in values {
            let k = native::k(b, x);
            let eq = b.ins().icmp(IntCC::Equal, v, k);
            let next = b.create_block();
            b.ins().brif(eq, fail, &[], next, &[]);
            b.switch_to_block(next);
            b.seal_block(next);
        }
    }
    for &(off, n, lo, hi) in &t.ranges {
        let v = read(b, off, n)?;
        for (cc, bound) in [
            (IntCC::UnsignedLessThan, lo),
            (IntCC::UnsignedGreaterThan, hi),
        ] {
            let k = native::k(b, bound);
            let out = b.ins().icmp(cc, v, k);
            let next = b.create_block();
            b.ins().brif(out, fail, &[], next, &[]);
            b.switch_to_block(next);
            b.seal_block(next);
        }
    }
    for &(w, want) in &t.port_checks {
        let v = native::and_mask(b, port, w);
        check(b, v, want);
    }
    // The key words, from their constant parts.
    let mut acc: Vec<Option<Value>> = vec![None; words];
    let base: Vec<u64> = (0..words)
        .map(|w| t.key_base.get(w).copied().unwrap_or(0))
        .collect();
    let mut or_into = |b: &mut FunctionBuilder<'_>, w: usize, v: Value| -> Option<()> {
        let slot = acc.get_mut(w)?;
        *slot = Some(match *slot {
            None => v,
            Some(x) => b.ins().bor(x, v),
        });
        Some(())
    };
    for l in &t.loads {
        let v = load(b, pkt, l.byte, l.shl, l.shr, min_len)?;
        let v = shl(b, v, l.kshl);
        or_into(b, l.word, v)?;
    }
    // `write_key`: `n` bits of `v` at key bit `at`, split at a word boundary.
    let mut put = |b: &mut FunctionBuilder<'_>, at: u32, n: u32, v: Value| -> Option<()> {
        let v = native::and_mask(b, v, n);
        let (w, off) = ((at / 64) as usize, at % 64);
        if off + n <= 64 {
            let v = shl(b, v, 64 - off - n);
            return or_into(b, w, v);
        }
        let n2 = off + n - 64;
        let s = native::k(b, u64::from(n2));
        let hi = b.ins().ushr(v, s);
        or_into(b, w, hi)?;
        let lo = shl(b, v, 64 - n2);
        or_into(b, w + 1, lo)
    };
    for c in &t.copies {
        let v = read(b, c.off, c.len)?;
        put(b, c.key, c.len, v)?;
    }
    for &(lsb, n, at) in &t.port_ops {
        let v = ushr(b, port, lsb);
        put(b, at, n, v)?;
    }
    for &(lsb, n, at) in &t.len_ops {
        let v = ushr(b, len, lsb);
        put(b, at, n, v)?;
    }
    // The words, stored, and their hash ([`koi_cache::WordHash`]): h = fold(h ^ a, b ^ pad)
    // per pair of words from the seed, a last odd word paired with 0.
    let mut finals = Vec::with_capacity(words);
    for (w, v) in acc.into_iter().enumerate() {
        let c = native::k(b, base[w]);
        let v = match v {
            None => c,
            Some(v) if base[w] == 0 => v,
            Some(v) => b.ins().bor(v, c),
        };
        b.ins().store(native::flags(), v, key, (w * 8) as i32);
        finals.push(v);
    }
    let pad_k = koi_cache::WordHash::from_seed(Some(seed)).pad();
    let pad = native::k(b, pad_k);
    let mut h = native::k(b, seed);
    for pair in finals.chunks(2) {
        let x = b.ins().bxor(h, pair[0]);
        let y = match pair.get(1) {
            Some(&v) => b.ins().bxor(v, pad),
            None => pad,
        };
        let lo = b.ins().imul(x, y);
        let hi = b.ins().umulhi(x, y);
        h = b.ins().bxor(lo, hi);
    }
    b.ins().store(native::flags(), h, hash, 0);
    Some(())
}

/// A [`super::Load`]: `(load64be(pkt + byte) << shl) >> shr`, its window within `min_len`.
fn load(
    b: &mut FunctionBuilder<'_>,
    pkt: Value,
    byte: usize,
    shl_by: u32,
    shr_by: u32,
    min_len: usize,
) -> Option<Value> {
    if byte + 8 > min_len || shl_by >= 64 || shr_by >= 64 {
        return None;
    }
    let raw = native::load_be(b, pkt, byte, 8);
    let v = shl(b, raw, shl_by);
    Some(ushr(b, v, shr_by))
}
