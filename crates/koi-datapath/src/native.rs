//! Native code (Cranelift JIT): what the fast path's code generators share.
//!
//! Two parts of the fast path become machine code once they are hot: action programs' output
//! writes (`program::jit`) and parse-path templates, which check a packet's parse path and
//! extract its flow key (`fastparse::jit`). This module holds what both need: the datapath's
//! [`Jit`] (the host's instruction set, how hot is hot, a limit on code kept), ownership of a
//! module's code (`Code`, freed with the last user of its functions), and the big-endian
//! loads and stores of packet fields both emit.
//!
//! Every generated function reads and writes only within bounds its caller checks first; the
//! `unsafe` that calls it stays in the module that generated it, beside that check.

// Freeing a module's code is unsafe (nothing may call into it afterwards); see `Code`.
#![allow(unsafe_code)]

use cranelift_codegen::ir::types::{I8, I16, I32, I64};
use cranelift_codegen::ir::{InstBuilder, MemFlagsData, Type, Value};
use cranelift_codegen::isa::OwnedTargetIsa;
use cranelift_codegen::settings::{self, Configurable};
use cranelift_frontend::{FunctionBuilder, FunctionBuilderContext};
use cranelift_jit::{JITBuilder, JITModule};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

/// The JIT of one datapath.
pub struct Jit {
    pub(crate) isa: Option<OwnedTargetIsa>,
    /// Runs (of a program, or matches of a template) before it is compiled.
    pub(crate) after: u32,
    /// Modules with code at a time.
    pub(crate) limit: usize,
    pub(crate) live: Arc<AtomicUsize>,
    pub(crate) fctx: FunctionBuilderContext,
    /// Compiles allowed per second of the datapath's clock (0: unlimited), as a token bucket
    /// of `burst` tokens (scaled by 10^9), last refilled at `refilled_ns`.
    rate: u64,
    burst: u64,
    tokens: u128,
    refilled_ns: u64,
    /// Native output code shared by programs that differ only in the constants they write
    /// (see `program::jit`).
    pub(crate) shapes: crate::program::Shapes,
}

impl std::fmt::Debug for Jit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Jit")
            .field("enabled", &self.isa.is_some())
            .field("after", &self.after)
            .field("limit", &self.limit)
            .field("live", &self.live.load(Ordering::Relaxed))
            .finish()
    }
}

impl Jit {
    /// A JIT that compiles what has run `after` times, at most `limit` modules at a time and
    /// `rate` compiles per second (bursts of `burst`; 0: unlimited); `after: None` (or a host
    /// Cranelift does not support): never.
    pub fn new(after: Option<u32>, limit: usize, rate: u64, burst: u64) -> Jit {
        let isa = after.and_then(|_| host_isa());
        Jit {
            isa,
            after: after.unwrap_or(u32::MAX),
            limit,
            live: Arc::new(AtomicUsize::new(0)),
            fctx: FunctionBuilderContext::new(),
            rate,
            burst,
            tokens: u128::from(burst) * 1_000_000_000,
            refilled_ns: 0,
            shapes: crate::program::Shapes::default(),
        }
    }

    /// Whether a compile may start at `now_ns` (the datapath's clock): below the limit of
    /// modules, and a token in the bucket (which it takes). A compile takes about half a
    /// millisecond on the forwarding thread, so a churn of hot programs must not starve the
    /// packets already cached, as the slow path's own rate limit ensures for new flows.
    pub(crate) fn admit(&mut self, now_ns: u64) -> bool {
        if self.live() >= self.limit {
            return false;
        }
        if self.rate == 0 {
            return true;
        }
        let elapsed = now_ns.saturating_sub(self.refilled_ns);
        self.refilled_ns = self.refilled_ns.max(now_ns);
        let cap = u128::from(self.burst) * 1_000_000_000;
        self.tokens = (self.tokens + u128::from(elapsed) * u128::from(self.rate)).min(cap);
        if self.tokens < 1_000_000_000 {
            return false;
        }
        self.tokens -= 1_000_000_000;
        true
    }

    /// Whether anything gets compiled.
    pub fn enabled(&self) -> bool {
        self.isa.is_some()
    }

    /// Modules that have code now.
    pub fn live(&self) -> usize {
        self.live.load(Ordering::Relaxed)
    }

    /// A fresh module for one unit of code, unless the JIT is off or at its limit; its code
    /// may call the functions `helpers` names.
    pub(crate) fn module(&self, helpers: &[(&str, *const u8)]) -> Option<JITModule> {
        if self.live() >= self.limit {
            return None;
        }
        let isa = self.isa.clone()?;
        let mut builder = JITBuilder::with_isa(isa, cranelift_module::default_libcall_names());
        for (name, f) in helpers {
            builder.symbol(*name, *f);
        }
        Some(JITModule::new(builder))
    }

    /// Takes ownership of `module`, whose definitions are finalized.
    pub(crate) fn keep(&self, module: JITModule) -> Code {
        self.live.fetch_add(1, Ordering::Relaxed);
        Code {
            module: Mutex::new(Some(module)),
            live: Arc::clone(&self.live),
        }
    }
}

/// Owns a module's code and frees it on drop. Whoever holds function pointers into the module
/// must hold its `Code` and drop the pointers with it.
pub(crate) struct Code {
    module: Mutex<Option<JITModule>>,
    live: Arc<AtomicUsize>,
}

impl Drop for Code {
    fn drop(&mut self) {
        let module = match self.module.get_mut() {
            Ok(m) => m.take(),
            Err(poisoned) => poisoned.into_inner().take(),
        };
        if let Some(m) = module {
            // SAFETY: the only pointers into this module's code are held next to this `Code`
            // by its owner (a program's `Compiled`, a template's `TemplateCode`), which is
            // being dropped with it; nothing runs the code afterwards.
            unsafe { m.free_memory() };
        }
        self.live.fetch_sub(1, Ordering::Relaxed);
    }
}

/// The host's instruction set with speed optimisations, if Cranelift supports it.
fn host_isa() -> Option<OwnedTargetIsa> {
    let mut flags = settings::builder();
    flags.set("opt_level", "speed").ok()?;
    flags.set("is_pic", "false").ok()?;
    flags.set("use_colocated_libcalls", "false").ok()?;
    cranelift_native::builder()
        .ok()?
        .finish(settings::Flags::new(flags))
        .ok()
}

/// Loads and stores of fields: unaligned, and never trapping (the bounds are checked).
pub(crate) fn flags() -> MemFlagsData {
    MemFlagsData::new().with_notrap()
}

/// A 64-bit constant.
pub(crate) fn k(b: &mut FunctionBuilder<'_>, v: u64) -> Value {
    b.ins().iconst(I64, v as i64)
}

/// `v`'s low `w` bits.
pub(crate) fn and_mask(b: &mut FunctionBuilder<'_>, v: Value, w: u32) -> Value {
    if w >= 64 {
        return v;
    }
    let m = k(b, (1u64 << w) - 1);
    b.ins().band(v, m)
}

/// `v << by` for a constant `by` below 64.
pub(crate) fn shl(b: &mut FunctionBuilder<'_>, v: Value, by: u32) -> Value {
    if by == 0 {
        return v;
    }
    let s = k(b, u64::from(by));
    b.ins().ishl(v, s)
}

/// `v >> by` (logical) for a constant `by`; 0 from 64 on.
pub(crate) fn ushr(b: &mut FunctionBuilder<'_>, v: Value, by: u32) -> Value {
    match by {
        0 => v,
        64.. => k(b, 0),
        _ => {
            let s = k(b, u64::from(by));
            b.ins().ushr(v, s)
        }
    }
}

/// The `w` (1 to 64) bits at bit `off` of `base`, as `fastparse::read_bits` reads them, from
/// the bytes they span; `None` if those are more than 8. The bytes read end at
/// `(off + w).div_ceil(8)`: the caller bounds it.
pub(crate) fn read_bits(
    b: &mut FunctionBuilder<'_>,
    base: Value,
    off: u32,
    w: u32,
) -> Option<Value> {
    if w == 0 || w > 64 {
        return None;
    }
    let first = (off / 8) as usize;
    let shift = off % 8;
    let n = (shift + w).div_ceil(8) as usize;
    if n > 8 {
        return None;
    }
    let raw = load_be(b, base, first, n);
    let v = ushr(b, raw, n as u32 * 8 - shift - w);
    Some(and_mask(b, v, w))
}

/// The `n` bytes at `base + at`, big-endian, as a 64-bit value (`n` at most 8).
pub(crate) fn load_be(b: &mut FunctionBuilder<'_>, base: Value, at: usize, n: usize) -> Value {
    let mut acc: Option<Value> = None;
    let mut done = 0;
    while done < n {
        let c = chunk(n - done);
        let ty = int_type(c);
        let raw = b.ins().load(ty, flags(), base, (at + done) as i32);
        let v = if c == 1 { raw } else { b.ins().bswap(raw) };
        let v = if ty == I64 {
            v
        } else {
            b.ins().uextend(I64, v)
        };
        acc = Some(match acc {
            None => v,
            Some(a) => {
                let s = k(b, 8 * c as u64);
                let a = b.ins().ishl(a, s);
                b.ins().bor(a, v)
            }
        });
        done += c;
    }
    acc.unwrap_or_else(|| k(b, 0))
}

/// Stores the low `8 n` bits of `v` at `base + at`, big-endian (`n` at most 8).
pub(crate) fn store_be(b: &mut FunctionBuilder<'_>, v: Value, base: Value, at: usize, n: usize) {
    let mut done = 0;
    while done < n {
        let c = chunk(n - done);
        let rest = n - done - c;
        let part = if rest == 0 {
            v
        } else {
            let s = k(b, 8 * rest as u64);
            b.ins().ushr(v, s)
        };
        let ty = int_type(c);
        let part = if ty == I64 {
            part
        } else {
            b.ins().ireduce(ty, part)
        };
        let part = if c == 1 { part } else { b.ins().bswap(part) };
        b.ins().store(flags(), part, base, (at + done) as i32);
        done += c;
    }
}

/// The largest load or store size (bytes) for `n` remaining bytes.
pub(crate) fn chunk(n: usize) -> usize {
    match n {
        8.. => 8,
        4..=7 => 4,
        2..=3 => 2,
        _ => 1,
    }
}

pub(crate) fn int_type(bytes: usize) -> Type {
    match bytes {
        8 => I64,
        4 => I32,
        2 => I16,
        _ => I8,
    }
}
