//! Native code for hot action programs (Cranelift JIT).
//!
//! A compiled [`Program`] is interpreted node by node: a `match` per node and per output
//! operation, operand widths looked up, values kept in a scratch array. Once a program has
//! run [`Jit`]'s threshold of times (it is shared by every megaflow with the same program, so hot
//! means hot traffic), its output writes are compiled to machine code: for each packet the
//! program sends, one function `fn(pkt, port, out)` that loads the packet fields it needs
//! with byte-swapped loads, computes the values in registers (selects for conditions, the
//! Internet checksum as a sum of 16-bit words), and stores them into the output headers.
//! Each value the program's state updates use (a register or meter index, a value written,
//! a guard's condition) that is not a constant gets a function `fn(pkt, port, reads) -> u64`
//! too ([`Compiled::val`]), which the state updates call instead of interpreting the value.
//! Copying the packet, the state updates themselves, the payload and `truncate` stay in Rust
//! ([`Program::run`]).
//!
//! What the functions do is exactly what [`Program::run`]'s interpreter does, with two
//! guards that make that true:
//! - a program is compiled only if every node and operation its outputs use has a lowering
//!   here (programs with values wider than 64 bits keep the interpreter). The arithmetic,
//!   `csum16` and the field accesses are inline; hashes other than `csum16` (their data
//!   assembled in a stack buffer), uBPF's `lookup3`, `csum_replace` and saturating signed
//!   arithmetic call the interpreter's own functions ([`HELPERS`]); register values read by
//!   the program's state updates are passed in (`reads`);
//! - a function reads only packet bytes below [`Compiled::need`] and writes only output
//!   bytes below the output's header length; the caller checks the packet's length first
//!   (shorter packets take the interpreter, which reads missing bytes as zero).
//!
//! After compiling, the datapath runs both on the packet at hand and keeps the code only if
//! the outputs, and the state values (computed with no register read), are identical
//! ([`Program::jit_checks_out`]).
//!
//! **Shared code.** Programs that differ only in the constants they write (a route's next-hop
//! MAC addresses: one program per route, the same operations) share one module: a program
//! with no state operation is compiled with its written constants loaded from a table (the
//! functions' `reads` argument, unused without state) instead of as immediates, and its code
//! is kept by the operations' shape ([`Shapes`]); the next program of that shape takes the
//! code with its own table, checked out on its packet like any compile. Besides the compile
//! it saves, a mix of routes then calls one function instead of one per route, which the
//! processor predicts.
//!
//! Programs with state operations share code too when every value those operations use is
//! a constant (a counter per session, indexed by a table's action parameter: one program
//! per session). Their constants differ beyond the ones they write (a session's tunnel id in
//! a checksum, the index of its counter), so their shape leaves out the values of every
//! narrow constant node as well, and the code loads those from the table too (before the
//! written ones); the state operations run in Rust as always, from each program's own nodes.
//! Without this, a thousand sessions are a thousand modules, and a mix of them spends its
//! time fetching code.
//!
//! Memory: each module (a program's, or a shape's) is freed when the last megaflow using it
//! goes; at most [`Jit::limit`] modules have code at a time.

// Calling generated code is unsafe (each block says why it is sound).
#![allow(unsafe_code)]

use super::{Elem, HashPlan, N, Node, OutOp, OutProg, Program, Res, mask64};
use crate::native::{self, Code, Jit};
use cranelift_codegen::ir::condcodes::IntCC;
use cranelift_codegen::ir::types::I64;
use cranelift_codegen::ir::{AbiParam, InstBuilder, StackSlotData, StackSlotKind, Value};
use cranelift_frontend::FunctionBuilder;
use cranelift_jit::JITModule;
use cranelift_module::{FuncId, Linkage, Module};
use koi_ir::{BinOp, Bits, Cast, HashAlgo, UnOp};
use std::collections::HashMap;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, OnceLock, Weak};

/// The code of one output: writes the output headers of `out` from `pkt` (`len` bytes), the
/// ingress port and the register values the program read (`reads`: per read, a flag and the
/// value). `out` has at least the output's header bytes; `pkt` at least [`Compiled::need`];
/// `reads` at least [`Compiled::reads`] pairs.
type OutFn =
    unsafe extern "C" fn(pkt: *const u8, port: u64, out: *mut u8, reads: *const u64, len: u64);

/// The code of a value the program's state updates use (an index, a value written, a
/// guard's): computes it from `pkt` (`len` bytes), the ingress port and the register values
/// read so far (`reads`, as for [`OutFn`]). `pkt` has at least [`Compiled::need`] bytes and
/// `reads` at least [`Compiled::reads`] pairs.
type ValFn = unsafe extern "C" fn(pkt: *const u8, port: u64, reads: *const u64, len: u64) -> u64;

/// The functions generated code calls: the interpreter's own, for what is not worth
/// generating inline.
const HELPERS: [(&str, *const u8); 5] = [
    ("koi_jit_hash", koi_jit_hash as *const u8),
    ("koi_jit_lookup3", koi_jit_lookup3 as *const u8),
    ("koi_jit_csum_replace", koi_jit_csum_replace as *const u8),
    ("koi_jit_sat", koi_jit_sat as *const u8),
    ("koi_jit_payload_csum", koi_jit_payload_csum as *const u8),
];

/// The v1model algorithms [`koi_jit_hash`] computes, by code.
const HASH_ALGOS: [HashAlgo; 5] = [
    HashAlgo::Crc32,
    HashAlgo::Crc16,
    HashAlgo::Identity,
    HashAlgo::Csum16,
    HashAlgo::Xor16,
];

/// v1model hash `algo` (an index into [`HASH_ALGOS`]) of the `len` bytes at `data`.
extern "C" fn koi_jit_hash(algo: u64, data: *const u8, len: u64) -> u64 {
    let Some(a) = HASH_ALGOS
        .get(algo as usize)
        .and_then(|a| super::v1_algo(*a))
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
extern "C" fn koi_jit_lookup3(vals: *const u64, widths: *const u64, n: u64) -> u64 {
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
extern "C" fn koi_jit_csum_replace(csum: u64, old: u64, new: u64, four: u64) -> u64 {
    super::csum_replace(csum, old, new, four != 0)
}

/// [`super::payload_csum`] over the `len` bytes at `pkt`.
extern "C" fn koi_jit_payload_csum(
    csum: u64,
    pkt: *const u8,
    len: u64,
    start: u64,
    odd: u64,
) -> u64 {
    // SAFETY: generated code passes the packet pointer and length it was called with
    // (`OutFn`'s `pkt` and `len`: the packet's bytes).
    let pkt = unsafe { std::slice::from_raw_parts(pkt, len as usize) };
    super::payload_csum(csum, pkt, start as u32, odd != 0)
}

/// Saturating signed addition (`op` 0) or subtraction (1), as `arith64`.
extern "C" fn koi_jit_sat(op: u64, x: u64, y: u64, wa: u64, wb: u64) -> u64 {
    let op = if op == 0 {
        BinOp::AddSatS
    } else {
        BinOp::SubSatS
    };
    super::arith64(op, x, y, wa as u32, wb as u32)
}

/// A program's native code.
pub(super) struct Compiled {
    /// Set when the program is one packet sent to a fixed port, with no state operation, no
    /// register read and no `truncate` (the common forwarding case): that packet's function
    /// with what [`super::Program::run_unicast`] needs, so that a hit runs it after one length
    /// check.
    pub(super) unicast: Option<Unicast>,
    /// Per result of the program (in order): the function of a sent packet.
    outs: Vec<Option<OutFn>>,
    /// Per result: the output bytes its function may write.
    out_lens: Vec<usize>,
    /// Packet bytes the functions read.
    pub(super) need: usize,
    /// Register reads the functions use (pairs in `reads`).
    pub(super) reads: usize,
    /// Per node of the program: the function of a value its state updates use, if it has
    /// one.
    vals: Box<[Option<ValFn>]>,
    /// The constants the output functions write, when they load them (shared code: passed
    /// as their `reads`); empty otherwise.
    consts: Box<[u64]>,
    _code: Keep,
}

/// What keeps a program's functions alive: its own module, or its shape's.
enum Keep {
    Own(#[allow(dead_code)] Box<Code>),
    Shared(#[allow(dead_code)] Arc<SharedOuts>),
}

/// The output functions of one shape of program (see the module doc), shared by the
/// programs of that shape.
pub(crate) struct SharedOuts {
    outs: Vec<Option<OutFn>>,
    out_lens: Vec<usize>,
    need: usize,
    _code: Code,
}

/// A program's operations with the constants it writes left out: programs with equal shapes
/// can share output code (see the module doc).
#[derive(Clone, PartialEq, Eq, Hash)]
struct ShapeKey {
    outs: Vec<Option<OutProg>>,
    nodes: Vec<super::Node>,
    widths: Vec<u32>,
    /// The values of the narrow constant nodes are left out too (see [`const_table`]).
    loose: bool,
}

/// The shared output code by shape. Entries whose code is gone are dropped as more are added.
#[derive(Default)]
pub(crate) struct Shapes {
    map: HashMap<ShapeKey, Weak<SharedOuts>>,
}

impl std::fmt::Debug for Shapes {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Shapes({})", self.map.len())
    }
}

impl Shapes {
    fn get(&self, k: &ShapeKey) -> Option<Arc<SharedOuts>> {
        self.map.get(k).and_then(Weak::upgrade)
    }

    fn insert(&mut self, k: ShapeKey, s: &Arc<SharedOuts>) {
        if self.map.len() >= 64 && self.map.len().is_power_of_two() {
            self.map.retain(|_, w| w.strong_count() > 0);
        }
        self.map.insert(k, Arc::downgrade(s));
    }
}

/// `p`'s shape (see [`ShapeKey`]); `loose`: without the values of its narrow constant nodes.
fn shape_of(p: &Program, loose: bool) -> ShapeKey {
    let outs = p
        .results
        .iter()
        .map(|r| match r {
            Res::Send(_, o) => {
                let mut o = o.clone();
                for op in &mut o.out {
                    match op {
                        OutOp::Const { value, .. } => *value = Bits::zero(value.width()),
                        OutOp::Bytes { bytes, .. } => bytes.iter_mut().for_each(|b| *b = 0),
                        OutOp::Copy { .. } | OutOp::Write { .. } => {}
                    }
                }
                Some(o)
            }
            Res::Drop(_) => None,
        })
        .collect();
    let nodes = p
        .nodes
        .iter()
        .zip(const_slots(p, loose))
        .map(|(n, slot)| match n {
            Node::Const(b) if slot.is_some() => Node::Const(Bits::zero(b.width())),
            n => n.clone(),
        })
        .collect();
    ShapeKey {
        outs,
        nodes,
        widths: p.widths.clone(),
        loose,
    }
}

/// Per node of `p`: its entry in the constant table of loose shared code (see
/// [`const_table`]), for the narrow constant nodes when `loose`; `None` for the others.
fn const_slots(p: &Program, loose: bool) -> impl Iterator<Item = Option<u32>> + '_ {
    let mut next = 0;
    p.nodes.iter().enumerate().map(move |(i, n)| {
        let slot = matches!(n, Node::Const(_)) && loose && p.is_narrow(i as N);
        slot.then(|| {
            next += 1;
            next - 1
        })
    })
}

/// The constants `p`'s shared code loads, in the order it loads them: when `loose`, first
/// the value of each narrow constant node, in node order ([`const_slots`]); then the
/// constants the outputs write: per sent packet, per operation, the bytes of a constant
/// written at a byte boundary in whole bytes (and constant bytes) as they are to be stored,
/// 8 to an entry (see [`raw_entries`]); any other constant in pieces of at most 56 bits
/// (most significant first, as [`Lower::write_const`] writes them).
fn const_table(p: &Program, loose: bool) -> Box<[u64]> {
    let mut t: Vec<u64> = p
        .nodes
        .iter()
        .zip(const_slots(p, loose))
        .filter_map(|(n, slot)| match n {
            Node::Const(b) if slot.is_some() => Some(b.low_u64()),
            _ => None,
        })
        .collect();
    for r in &p.results {
        let Res::Send(_, o) = r else { continue };
        for op in &o.out {
            match op {
                OutOp::Const { dst, value } if whole_bytes(*dst, value) => {
                    raw_entries(&value.to_be_bytes(), &mut t);
                }
                OutOp::Const { value, .. } => t.extend(pieces56(value).map(|(_, _, v)| v)),
                OutOp::Bytes { bytes, .. } => raw_entries(bytes, &mut t),
                OutOp::Copy { .. } | OutOp::Write { .. } => {}
            }
        }
    }
    t.into_boxed_slice()
}

/// `value` in pieces of at most 56 bits, most significant first: each piece's offset from
/// the value's most significant bit, its width and its bits.
fn pieces56(value: &Bits) -> impl Iterator<Item = (u32, u32, u64)> + '_ {
    let w = value.width();
    (0..w).step_by(56).map(move |done| {
        let n = (w - done).min(56);
        // Bits [w - done - n, w - done) of the value.
        (done, n, bits_at(value, w - done - n, n))
    })
}

/// Whether a constant written at output bit `dst` covers whole bytes from a byte boundary.
fn whole_bytes(dst: u32, value: &Bits) -> bool {
    dst.is_multiple_of(8) && value.width().is_multiple_of(8) && value.width() > 0
}

/// `bytes` as table entries of 8, each read back by the processor's loads (little-endian) as
/// the bytes in order, so that the code stores them without reordering.
fn raw_entries(bytes: &[u8], t: &mut Vec<u64>) {
    for piece in bytes.chunks(8) {
        let mut e = [0u8; 8];
        e[..piece.len()].copy_from_slice(piece);
        t.push(u64::from_le_bytes(e));
    }
}

/// The most constants a unicast plan holds (a program with more keeps the general path).
const UNICAST_CONSTS: usize = 6;

/// See [`Compiled::unicast`].
pub(super) struct Unicast {
    pub(super) f: OutFn,
    /// What `f` takes as its `reads`: the program's constants if its code is shared (see
    /// [`Compiled::consts`]), else nothing it reads. Kept here, beside the function, so that
    /// a hit reads them from the plan it already holds.
    consts: [u64; UNICAST_CONSTS],
    pub(super) to: u64,
    /// Packet bytes the function reads.
    pub(super) need: usize,
    pub(super) layout: super::OutLayout,
}

impl Unicast {
    /// Runs the function on `pkt` (from `port`) into `out`, as [`super::Program::run`] does
    /// with [`Compiled::call`]; `None` if `pkt` is shorter than the function reads.
    #[inline(always)]
    pub(super) fn run(&self, pkt: &[u8], port: u64, out: &mut Vec<u8>) -> Option<u64> {
        if pkt.len() < self.need {
            return None;
        }
        let whole = self.layout.begin(pkt, out);
        debug_assert!(out.len() >= self.layout.prefix_bytes);
        // SAFETY: `f` is the program's only output function, compiled with an output length
        // of `prefix_bytes` (its writes were checked to lie below it when the plan was made)
        // and no register reads: it reads packet bytes below `need` (checked above), writes
        // output bytes below `prefix_bytes` (`begin` leaves at least that many in `out`) and
        // reads through its `reads` argument only the constants it loads, all in `consts`
        // (the program's own table, of its shape's length, at most `UNICAST_CONSTS` entries
        // when the plan was made: see `const_table`).
        unsafe {
            (self.f)(
                pkt.as_ptr(),
                port,
                out.as_mut_ptr(),
                self.consts.as_ptr(),
                pkt.len() as u64,
            )
        };
        self.layout.end(pkt, out, whole);
        Some(self.to)
    }
}

impl Compiled {
    /// Node `n`'s value by its function, if it has one and `pkt` and `reads` are as long as
    /// the functions assume.
    #[inline]
    pub(super) fn val(&self, n: N, pkt: &[u8], port: u64, reads: &[u64]) -> Option<u64> {
        let f = self.vals.get(n as usize).copied().flatten()?;
        if pkt.len() < self.need || reads.len() < 2 * self.reads {
            return None;
        }
        // SAFETY: `f` was compiled for node `n` of this program; it reads packet bytes below
        // `self.need` and the first `2 * self.reads` words of `reads` (see `Lower::need` and
        // `Lower::reads`), both checked above to be within the buffers, and writes nothing.
        Some(unsafe { f(pkt.as_ptr(), port, reads.as_ptr(), pkt.len() as u64) })
    }

    /// The nodes with a function ([`Compiled::val`]).
    pub(super) fn val_nodes(&self) -> impl Iterator<Item = N> + '_ {
        (0..)
            .zip(self.vals.iter())
            .filter(|(_, f)| f.is_some())
            .map(|(n, _)| n)
    }

    /// The function of result `i`, if it has one.
    #[inline]
    fn out(&self, i: usize) -> Option<OutFn> {
        self.outs.get(i).copied().flatten()
    }

    /// Runs result `i`'s function on `pkt` (from `port`) into `out`, whose first `out_len`
    /// bytes are the output headers of the result's packet. `false` (nothing done) if there
    /// is no function or a buffer is shorter than the code assumes.
    #[inline]
    pub(super) fn call(
        &self,
        i: usize,
        pkt: &[u8],
        port: u64,
        out: &mut [u8],
        out_len: usize,
        reads: &[u64],
    ) -> bool {
        let (Some(f), Some(len)) = (self.out(i), self.out_lens.get(i)) else {
            return false;
        };
        if pkt.len() < self.need
            || out.len() < out_len
            || out_len < *len
            || reads.len() < 2 * self.reads
        {
            return false;
        }
        // Shared code reads its constants where other code reads register values.
        let arg = if matches!(self._code, Keep::Shared(_)) {
            self.consts.as_ptr()
        } else {
            reads.as_ptr()
        };
        // SAFETY: `f` was compiled for result `i` of this program (or one of its shape); it
        // reads packet bytes below `self.need`, writes output bytes below `len` and reads the
        // first `2 * self.reads` words of `reads` (see `Lower::need`, `Lower::out_len` and
        // `Lower::reads`), or, shared, only the constants of `self.consts` (the program's
        // table, of its shape's length), all checked above to be within the buffers; `out`
        // does not overlap the others (it is borrowed mutably).
        unsafe { f(pkt.as_ptr(), port, out.as_mut_ptr(), arg, pkt.len() as u64) };
        true
    }
}

/// A program's JIT state: how often it ran and, once compiled, its code (`None` if it cannot
/// be compiled or its code did not check out). Ignored by comparisons and hashes.
#[derive(Default)]
pub(super) struct JitCell {
    runs: AtomicU32,
    code: OnceLock<Option<Compiled>>,
}

impl JitCell {
    /// The program's code, once compiled.
    #[inline]
    pub(super) fn get(&self) -> Option<&Compiled> {
        self.code.get().and_then(Option::as_ref)
    }
}

impl Clone for JitCell {
    fn clone(&self) -> Self {
        JitCell::default()
    }
}

impl PartialEq for JitCell {
    fn eq(&self, _: &Self) -> bool {
        true
    }
}

impl Eq for JitCell {}

impl std::hash::Hash for JitCell {
    fn hash<H: std::hash::Hasher>(&self, _: &mut H) {}
}

impl std::fmt::Debug for JitCell {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let state = match self.code.get() {
            None => "pending",
            Some(None) => "interpreted",
            Some(Some(_)) => "compiled",
        };
        write!(f, "JitCell({state})")
    }
}

/// What [`Jit::consider`] did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum JitEvent {
    /// Nothing (not hot yet, already decided, or the JIT is off).
    None,
    /// Hot, but the compile rate or the module limit says not now (tried again later).
    Deferred,
    /// The program was compiled and its code checked out.
    Compiled,
    /// The program has something without a lowering, or the limit was reached.
    NotCompiled,
    /// The code's output differed from the interpreter's (a bug; the program stays
    /// interpreted).
    Mismatch,
}

impl Jit {
    /// Counts a run of `p` (about to run on `pkt` from `port` at `now_ns`); compiles it when
    /// it has become hot and the compile rate allows, and keeps the code if it gives the
    /// interpreter's output on `pkt`.
    #[inline]
    pub fn consider(&mut self, p: &Program, pkt: &[u8], port: u64, now_ns: u64) -> JitEvent {
        if self.isa.is_none() || p.jit.code.get().is_some() {
            return JitEvent::None;
        }
        // Not an atomic increment: the count only has to grow (one thread runs a datapath).
        let runs = p.jit.runs.load(Ordering::Relaxed).saturating_add(1);
        p.jit.runs.store(runs, Ordering::Relaxed);
        if runs < self.after {
            return JitEvent::None;
        }
        self.compile_checked(p, pkt, port, now_ns)
    }

    #[inline(never)]
    fn compile_checked(&mut self, p: &Program, pkt: &[u8], port: u64, now_ns: u64) -> JitEvent {
        if p.results.iter().all(|r| !matches!(r, Res::Send(..))) && p.state_values().is_empty() {
            // Only drops: nothing to generate.
            let _ = p.jit.code.set(None);
            return JitEvent::None;
        }
        // Code of the program's shape costs no compile, so no token: a thousand sessions of
        // one shape get it as soon as they are hot. (Tried once, then with every token.)
        let reused = match self.sharing(p) {
            Some(loose) if p.jit.runs.load(Ordering::Relaxed) == self.after => self.reuse(p, loose),
            _ => None,
        };
        let c = match reused {
            Some(c) => Some(c),
            None if !self.admit(now_ns) => return JitEvent::Deferred,
            None => self.compile(p),
        };
        let Some(c) = c else {
            let _ = p.jit.code.set(None);
            return JitEvent::NotCompiled;
        };
        if pkt.len() >= c.need && !p.jit_checks_out(&c, pkt, port) {
            let _ = p.jit.code.set(None);
            return JitEvent::Mismatch;
        }
        let _ = p.jit.code.set(Some(c));
        JitEvent::Compiled
    }

    /// Whether `p` may take its shape's code: `Some(false)` by its shape, when it has no
    /// state operation; `Some(true)` by its loose shape, when no value its state operations
    /// use comes from the packet (its outputs must read no register: see
    /// [`Jit::compile_outs`]); `None`: it has code of its own.
    ///
    /// Shared code is the outputs' only: the values of the state operations are then
    /// interpreted. Constants (a session's counter index) cost nothing so, nor do tests of
    /// what the state gave (a meter's colour against red) much; a value computed from the
    /// packet (a meter indexed by a source address) keeps its native code, in a module of
    /// the program's own.
    fn sharing(&self, p: &Program) -> Option<bool> {
        if !p.results.iter().any(|r| matches!(r, Res::Send(..))) {
            return None;
        }
        if p.state.is_empty() {
            return Some(false);
        }
        let from_packet = p.packet_derived();
        (!p.state_values().iter().any(|&n| from_packet[n as usize])).then_some(true)
    }

    /// `p`'s code, if every output can be lowered: its shape's (see the module doc and
    /// [`Jit::sharing`]), else its own.
    fn compile(&mut self, p: &Program) -> Option<Compiled> {
        match self.sharing(p) {
            Some(false) => self.compile_shared(p, false),
            Some(true) => self.compile_shared(p, true).or_else(|| self.compile_own(p)),
            None => self.compile_own(p),
        }
    }

    /// `p`'s code from its shape's (`loose`: its loose shape's), if a program of that shape
    /// has code: no compile.
    fn reuse(&mut self, p: &Program, loose: bool) -> Option<Compiled> {
        let s = self.shapes.get(&shape_of(p, loose))?;
        Some(shared_code(p, s, const_table(p, loose)))
    }

    /// `p`'s code from its shape's (`loose`: its loose shape's), compiled first if no program
    /// of that shape has code.
    fn compile_shared(&mut self, p: &Program, loose: bool) -> Option<Compiled> {
        let key = shape_of(p, loose);
        let consts = const_table(p, loose);
        let s = match self.shapes.get(&key) {
            Some(s) => s,
            None => {
                let s = Arc::new(self.compile_outs(p, consts.len(), loose)?);
                self.shapes.insert(key, &s);
                s
            }
        };
        Some(shared_code(p, s, consts))
    }
    /// The output functions of `p`'s shape (`loose`: its loose shape): `p`'s, with the
    /// constants they write (and, loose, its narrow constant nodes) loaded from the table
    /// [`const_table`] makes (`consts` entries), passed as their `reads`.
    fn compile_outs(&mut self, p: &Program, consts: usize, loose: bool) -> Option<SharedOuts> {
        let mut module = self.module(&HELPERS)?;
        let d = self.define_outs(&mut module, p, Some(loose))?;
        // (`reads` carries only constants: outputs that read a register keep their own code.)
        if d.reads != 0 || d.consts as usize != consts {
            return None;
        }
        module.finalize_definitions().ok()?;
        Some(SharedOuts {
            outs: finalized_outs(&module, &d.ids),
            out_lens: d.out_lens,
            need: d.need,
            _code: self.keep(module),
        })
    }

    /// Defines in `module` an output function per packet `p` sends (`None` per drop), with
    /// the constants it writes as immediates or (`shared`) loaded from the table passed as
    /// `reads` (`Some(true)`: its narrow constant nodes too, from the table's start); `None`
    /// if one cannot be lowered.
    fn define_outs(
        &mut self,
        module: &mut JITModule,
        p: &Program,
        shared: Option<bool>,
    ) -> Option<Outs> {
        if module.target_config().pointer_type() != I64 {
            return None;
        }
        let slots: Vec<Option<u32>> = const_slots(p, shared == Some(true)).collect();
        let mut d = Outs {
            consts: slots.iter().flatten().count() as u32,
            ..Outs::default()
        };
        for (i, r) in p.results.iter().enumerate() {
            let Res::Send(_, o) = r else {
                d.ids.push(None);
                d.out_lens.push(0);
                continue;
            };
            d.out_lens.push(o.prefix_bytes);
            let mut ctx = module.make_context();
            // `OutFn`: (pkt, port, out, reads or constants, len).
            let ptr = module.target_config().pointer_type();
            let (b, params) = entry(&mut ctx, &mut self.fctx, &[ptr, I64, ptr, ptr, I64], false);
            let mut low = Lower::new(p, b, module, &params, params[2], o.prefix_bytes);
            if shared.is_some() {
                low.consts = Some(params[3]);
                low.next_const = d.consts;
                low.const_slots = &slots;
            }
            let ok = low.output(o).is_some();
            d.need = d.need.max(low.need);
            d.reads = d.reads.max(low.reads);
            d.consts = low.next_const;
            let Lower { mut b, .. } = low;
            b.ins().return_(&[]);
            b.finalize(module.target_config());
            if !ok {
                return None;
            }
            let id = module
                .declare_function(&format!("out{i}"), Linkage::Local, &ctx.func.signature)
                .ok()?;
            module.define_function(id, &mut ctx).ok()?;
            module.clear_context(&mut ctx);
            d.ids.push(Some(id));
        }
        Some(d)
    }

    /// `p`'s own code (constants as immediates).
    fn compile_own(&mut self, p: &Program) -> Option<Compiled> {
        let mut module = self.module(&HELPERS)?;
        let Outs {
            ids,
            out_lens,
            mut need,
            mut reads,
            ..
        } = self.define_outs(&mut module, p, None)?;
        // The values the state updates use: a function each, if it can be lowered.
        let mut val_ids = Vec::new();
        for n in p.state_values() {
            let mut ctx = module.make_context();
            // `ValFn`: (pkt, port, reads, len) -> value; no output (`node` writes none).
            let ptr = module.target_config().pointer_type();
            let (b, params) = entry(&mut ctx, &mut self.fctx, &[ptr, I64, ptr, I64], true);
            let params = [params[0], params[1], params[2], params[2], params[3]];
            let mut low = Lower::new(p, b, &mut module, &params, params[2], 0);
            let v = low.node(n);
            let ret = v.unwrap_or_else(|| low.k(0));
            let (low_need, low_reads) = (low.need, low.reads);
            let Lower { mut b, .. } = low;
            b.ins().return_(&[ret]);
            b.finalize(module.target_config());
            if v.is_none() {
                module.clear_context(&mut ctx);
                continue;
            }
            need = need.max(low_need);
            reads = reads.max(low_reads);
            let id = module
                .declare_function(&format!("val{n}"), Linkage::Local, &ctx.func.signature)
                .ok()?;
            module.define_function(id, &mut ctx).ok()?;
            module.clear_context(&mut ctx);
            val_ids.push((n, id));
        }
        module.finalize_definitions().ok()?;
        let mut vals: Box<[Option<ValFn>]> = vec![None; p.nodes.len()].into_boxed_slice();
        for (n, id) in val_ids {
            let code = module.get_finalized_function(id);
            // SAFETY: `code` is a finalized function of `module` whose signature is
            // (pointer, i64, pointer, i64) -> i64 with the platform's default C calling
            // convention, which is `ValFn`'s.
            vals[n as usize] = Some(unsafe { std::mem::transmute::<*const u8, ValFn>(code) });
        }
        let outs = finalized_outs(&module, &ids);
        let unicast = match (&p.results[..], &p.state[..], &outs[..]) {
            ([Res::Send(to, o)], [], [Some(f)])
                if reads == 0 && o.cut.is_empty() && out_lens.first() <= Some(&o.prefix_bytes) =>
            {
                Some(Unicast {
                    f: *f,
                    consts: [0; UNICAST_CONSTS],
                    to: *to,
                    need,
                    layout: o.layout(),
                })
            }
            _ => None,
        };
        Some(Compiled {
            unicast,
            outs,
            out_lens,
            need,
            reads,
            vals,
            consts: Box::new([]),
            _code: Keep::Own(Box::new(self.keep(module))),
        })
    }
}

/// `p`'s code from `s`, its shape's, with `consts`, its constant table ([`const_table`]).
fn shared_code(p: &Program, s: Arc<SharedOuts>, consts: Box<[u64]>) -> Compiled {
    let mut inline = [0; UNICAST_CONSTS];
    // (A program with state operations runs them in `Program::run`: no unicast plan.)
    let fits = consts.len() <= UNICAST_CONSTS && p.state.is_empty();
    if let Some(dst) = inline.get_mut(..consts.len()) {
        dst.copy_from_slice(&consts);
    }
    let unicast = match (&p.results[..], &s.outs[..]) {
        ([Res::Send(to, o)], [Some(f)])
            if fits && o.cut.is_empty() && s.out_lens.first() <= Some(&o.prefix_bytes) =>
        {
            Some(Unicast {
                f: *f,
                consts: inline,
                to: *to,
                need: s.need,
                layout: o.layout(),
            })
        }
        _ => None,
    };
    Compiled {
        unicast,
        outs: s.outs.clone(),
        out_lens: s.out_lens.clone(),
        need: s.need,
        reads: 0,
        vals: vec![None; p.nodes.len()].into_boxed_slice(),
        consts,
        _code: Keep::Shared(s),
    }
}

/// The output functions [`Jit::define_outs`] defined: their ids, each output's bytes, the
/// packet bytes and register reads they use, and the constants they load.
#[derive(Default)]
struct Outs {
    ids: Vec<Option<FuncId>>,
    out_lens: Vec<usize>,
    need: usize,
    reads: usize,
    consts: u32,
}

/// The functions `ids` of `module`, whose definitions are finalized.
fn finalized_outs(module: &JITModule, ids: &[Option<FuncId>]) -> Vec<Option<OutFn>> {
    ids.iter()
        .map(|id| {
            id.map(|id| {
                let code = module.get_finalized_function(id);
                // SAFETY: `code` is a finalized function of `module` defined by
                // `Jit::define_outs`, whose signature is (pointer, i64, pointer, pointer, i64)
                // with the platform's default C calling convention, which is `OutFn`'s.
                unsafe { std::mem::transmute::<*const u8, OutFn>(code) }
            })
        })
        .collect()
}

/// A function with parameters of types `params` (and an `i64` result if `ret`) in `ctx`:
/// its builder, positioned in its entry block, and the parameters' values.
fn entry<'f>(
    ctx: &'f mut cranelift_codegen::Context,
    fctx: &'f mut cranelift_frontend::FunctionBuilderContext,
    params: &[cranelift_codegen::ir::Type],
    ret: bool,
) -> (FunctionBuilder<'f>, Vec<Value>) {
    for t in params {
        ctx.func.signature.params.push(AbiParam::new(*t));
    }
    if ret {
        ctx.func.signature.returns.push(AbiParam::new(I64));
    }
    let mut b = FunctionBuilder::new(&mut ctx.func, fctx);
    let block = b.create_block();
    b.append_block_params_for_function_params(block);
    b.switch_to_block(block);
    b.seal_block(block);
    let params = b.block_params(block).to_vec();
    (b, params)
}

/// Lowers one output of a program into a function body.
struct Lower<'a, 'f> {
    p: &'a Program,
    b: FunctionBuilder<'f>,
    module: &'a mut JITModule,
    pkt: Value,
    /// The packet's length in bytes.
    pkt_len: Value,
    port: Value,
    out: Value,
    reads_ptr: Value,
    /// Register reads used so far (one more than the largest read number).
    reads: usize,
    /// Node values computed so far (all in the one block, so they dominate what follows).
    vals: HashMap<N, Value>,
    /// Packet bytes read so far.
    need: usize,
    /// Output bytes that may be written.
    out_len: usize,
    /// Shared code: written constants are loaded from this table (the `reads` argument),
    /// the next one at this index (see [`const_table`]).
    consts: Option<Value>,
    next_const: u32,
    /// Loose shared code: per node, the table entry of its value (see [`const_slots`]).
    const_slots: &'a [Option<u32>],
}

impl<'a, 'f> Lower<'a, 'f> {
    /// Lowering into `b`, whose parameters are `params` (`pkt`, `port`, an unused slot,
    /// `reads`, `len`), writing into `out` (`out_len` bytes; 0: no output).
    fn new(
        p: &'a Program,
        b: FunctionBuilder<'f>,
        module: &'a mut JITModule,
        params: &[Value],
        out: Value,
        out_len: usize,
    ) -> Self {
        Lower {
            p,
            b,
            module,
            pkt: params[0],
            port: params[1],
            out,
            reads_ptr: params[3],
            pkt_len: params[4],
            vals: HashMap::new(),
            need: 0,
            out_len,
            reads: 0,
            consts: None,
            next_const: 0,
            const_slots: &[],
        }
    }

    /// Shared code: stores the table's next entries as `n` bytes at output byte `dst`, as
    /// they lie there (see [`raw_entries`]). `None` outside the output.
    fn store_raw(&mut self, base: Value, dst: usize, n: usize) -> Option<()> {
        if dst + n > self.out_len {
            return None;
        }
        let mut at = 0;
        while at < n {
            let slot = 8 * self.next_const as i32;
            self.next_const += 1;
            let piece = (n - at).min(8);
            let mut done = 0;
            while done < piece {
                let c = native::chunk(piece - done);
                let v = self.b.ins().load(
                    native::int_type(c),
                    native::flags(),
                    base,
                    slot + done as i32,
                );
                self.b
                    .ins()
                    .store(native::flags(), v, self.out, (dst + at + done) as i32);
                done += c;
            }
            at += piece;
        }
        Some(())
    }

    /// A constant the output writes: an immediate, or the table's next entry (shared code).
    fn written(&mut self, v: u64) -> Value {
        let Some(base) = self.consts else {
            return self.k(v);
        };
        let at = 8 * self.next_const as i32;
        self.next_const += 1;
        self.b.ins().load(I64, native::flags(), base, at)
    }

    fn k(&mut self, v: u64) -> Value {
        native::k(&mut self.b, v)
    }

    fn and_mask(&mut self, v: Value, w: u32) -> Value {
        native::and_mask(&mut self.b, v, w)
    }

    fn bool64(&mut self, cc: IntCC, x: Value, y: Value) -> Value {
        let c = self.b.ins().icmp(cc, x, y);
        self.b.ins().uextend(I64, c)
    }

    fn nonzero(&mut self, x: Value) -> Value {
        let z = self.k(0);
        self.bool64(IntCC::NotEqual, x, z)
    }

    /// `x` (`w` bits) sign-extended to 64 bits.
    fn sext(&mut self, x: Value, w: u32) -> Value {
        match w {
            0 => self.k(0),
            64.. => x,
            _ => {
                let s = self.k(u64::from(64 - w));
                let up = self.b.ins().ishl(x, s);
                self.b.ins().sshr(up, s)
            }
        }
    }

    fn load_be(&mut self, base: Value, at: usize, n: usize) -> Value {
        native::load_be(&mut self.b, base, at, n)
    }

    fn store_be(&mut self, v: Value, at: usize, n: usize) {
        native::store_be(&mut self.b, v, self.out, at, n)
    }

    /// `w` bits of the packet at bit `off` (as `read_bits`).
    fn read_pkt(&mut self, off: u32, w: u32) -> Option<Value> {
        if w == 0 {
            return Some(self.k(0));
        }
        let v = native::read_bits(&mut self.b, self.pkt, off, w)?;
        self.need = self.need.max((off + w).div_ceil(8) as usize);
        Some(v)
    }

    /// Writes the low `w` bits of `v` at output bit `at` (as `write_bits64`).
    fn write_bits(&mut self, at: u32, w: u32, v: Value) -> Option<()> {
        self.write_bits_at(self.out, self.out_len, at, w, v)
    }

    /// Writes the low `w` bits of `v` at bit `at` of the `len` bytes at `base`.
    fn write_bits_at(&mut self, base: Value, len: usize, at: u32, w: u32, v: Value) -> Option<()> {
        if w == 0 {
            return Some(());
        }
        let first = (at / 8) as usize;
        let shift = at % 8;
        let n = (shift + w).div_ceil(8) as usize;
        if n > 8 || first + n > len {
            return None;
        }
        if shift == 0 && w.is_multiple_of(8) {
            native::store_be(&mut self.b, v, base, first, n);
            return Some(());
        }
        // Read-modify-write of the bytes the field spans.
        let win = self.load_be(base, first, n);
        let low = n as u32 * 8 - shift - w;
        let m = mask64(w) << low;
        let keep = self.k(!m & mask64(n as u32 * 8));
        let kept = self.b.ins().band(win, keep);
        let v = self.and_mask(v, w);
        let s = self.k(u64::from(low));
        let placed = self.b.ins().ishl(v, s);
        let win = self.b.ins().bor(kept, placed);
        native::store_be(&mut self.b, win, base, first, n);
        Some(())
    }

    /// Writes the output's header operations.
    fn output(&mut self, o: &OutProg) -> Option<()> {
        for op in &o.out {
            match op {
                OutOp::Copy { src, dst, len } => {
                    let mut done = 0;
                    while done < *len {
                        // Whole 8-byte pieces when both sides are byte-aligned.
                        let aligned = (src + done) % 8 == 0 && (dst + done) % 8 == 0;
                        let n = (len - done).min(if aligned { 64 } else { 56 });
                        let v = self.read_pkt(src + done, n)?;
                        self.write_bits(dst + done, n, v)?;
                        done += n;
                    }
                }
                OutOp::Const { dst, value } => match self.consts {
                    Some(base) if whole_bytes(*dst, value) => {
                        let n = (value.width() / 8) as usize;
                        self.store_raw(base, (*dst / 8) as usize, n)?;
                    }
                    _ => self.write_const(*dst, value)?,
                },
                OutOp::Bytes { dst, bytes } if self.consts.is_some() => {
                    let base = self.consts?;
                    self.store_raw(base, *dst, bytes.len())?;
                }
                OutOp::Bytes { dst, bytes } => {
                    if dst + bytes.len() > self.out_len {
                        return None;
                    }
                    let mut at = 0;
                    while at < bytes.len() {
                        let n = (bytes.len() - at).min(8);
                        let v = bytes[at..at + n]
                            .iter()
                            .fold(0u64, |a, b| (a << 8) | u64::from(*b));
                        let v = self.written(v);
                        self.store_be(v, dst + at, n);
                        at += n;
                    }
                }
                OutOp::Write { dst, n, narrow } => {
                    if !narrow {
                        return None;
                    }
                    let v = self.node(*n)?;
                    let w = self.p.widths[*n as usize];
                    self.write_bits(*dst, w, v)?;
                }
            }
        }
        Some(())
    }

    /// A constant of any width, written in pieces of at most 56 bits, most significant first.
    fn write_const(&mut self, dst: u32, value: &Bits) -> Option<()> {
        for (at, n, v) in pieces56(value) {
            let v = self.written(v);
            self.write_bits(dst + at, n, v)?;
        }
        Some(())
    }

    /// Node `n`'s value (computed once).
    fn node(&mut self, n: N) -> Option<Value> {
        if let Some(v) = self.vals.get(&n) {
            return Some(*v);
        }
        let p = self.p;
        if !p.is_narrow(n) {
            return None;
        }
        let w = p.widths[n as usize];
        let v = match &p.nodes[n as usize] {
            Node::Const(b) => match (self.consts, self.const_slots.get(n as usize)) {
                (Some(base), Some(Some(slot))) => {
                    let at = i32::try_from(8 * slot).ok()?;
                    self.b.ins().load(I64, native::flags(), base, at)
                }
                _ => self.k(b.low_u64()),
            },
            Node::Pkt { off, w, .. } => self.read_pkt(*off, *w)?,
            Node::Port(w) => {
                let port = self.port;
                self.and_mask(port, *w)
            }
            Node::Opaque(_) => self.k(0),
            Node::Un(op, a) => {
                let x = self.node(*a)?;
                match op {
                    UnOp::Not => {
                        let z = self.k(0);
                        self.bool64(IntCC::Equal, x, z)
                    }
                    UnOp::BitNot => {
                        let v = self.b.ins().bnot(x);
                        self.and_mask(v, w)
                    }
                    UnOp::Neg => {
                        let v = self.b.ins().ineg(x);
                        self.and_mask(v, w)
                    }
                }
            }
            Node::Bin(op, a, c) => {
                let (wa, wb) = (p.widths[*a as usize], p.widths[*c as usize]);
                let x = self.node(*a)?;
                let y = self.node(*c)?;
                self.bin(*op, x, y, wa, wb)?
            }
            Node::Slice(a, hi, lo) => {
                let x = self.node(*a)?;
                let v = if *lo == 0 {
                    x
                } else {
                    let s = self.k(u64::from(*lo));
                    self.b.ins().ushr(x, s)
                };
                self.and_mask(v, hi - lo + 1)
            }
            Node::Cast(c, a) => {
                let wa = p.widths[*a as usize];
                let x = self.node(*a)?;
                match c {
                    Cast::Resize { width, signed } => {
                        if *signed && *width > wa && wa > 0 {
                            let s = self.sext(x, wa);
                            self.and_mask(s, *width)
                        } else {
                            self.and_mask(x, *width)
                        }
                    }
                    Cast::ToBool | Cast::FromBool => self.nonzero(x),
                }
            }
            Node::Mux(c, a, e) => {
                let c = self.node(*c)?;
                let x = self.node(*a)?;
                let y = self.node(*e)?;
                self.b.ins().select(c, x, y)
            }
            Node::Hash {
                algo: HashAlgo::Csum16,
                w,
                ..
            } => {
                let plan = p.plans.get(n as usize)?.as_ref()?;
                let h = self.csum16(plan)?;
                self.and_mask(h, *w)
            }
            Node::HashResult { hash, base, max, w } => {
                let h = self.node(*hash)?;
                let max = if *max == 0 { 1 } else { *max };
                let r = if max == 1 {
                    self.k(0)
                } else {
                    let m = self.k(max);
                    self.b.ins().urem(h, m)
                };
                let base = self.k(*base);
                let v = self.b.ins().iadd(r, base);
                self.and_mask(v, (*w).min(64))
            }
            Node::Hash {
                algo: HashAlgo::Lookup3,
                data,
                w,
            } => {
                let h = self.lookup3(data)?;
                self.and_mask(h, *w)
            }
            Node::Hash { algo, w, .. } => {
                let plan = p.plans.get(n as usize)?.as_ref()?;
                let h = self.hash(*algo, plan)?;
                self.and_mask(h, *w)
            }
            Node::RegVal { t, w, fallback } => {
                // The read's flag and value (resized to `w` bits), else the fallback.
                let fallback = self.node(*fallback)?;
                let t = *t as usize;
                self.reads = self.reads.max(t + 1);
                let at = i32::try_from(16 * t).ok()?;
                let flag = self.b.ins().load(I64, native::flags(), self.reads_ptr, at);
                let v = self
                    .b
                    .ins()
                    .load(I64, native::flags(), self.reads_ptr, at + 8);
                let v = self.and_mask(v, *w);
                self.b.ins().select(flag, v, fallback)
            }
            Node::CsumReplace {
                csum,
                old,
                new,
                four,
            } => {
                let args = [
                    self.node(*csum)?,
                    self.node(*old)?,
                    self.node(*new)?,
                    self.k(u64::from(*four)),
                ];
                self.helper("koi_jit_csum_replace", &args)?
            }
            Node::PayloadCsum { csum, start, odd } => {
                let args = [
                    self.node(*csum)?,
                    self.pkt,
                    self.pkt_len,
                    self.k(u64::from(*start)),
                    self.k(u64::from(*odd)),
                ];
                self.helper("koi_jit_payload_csum", &args)?
            }
        };
        self.vals.insert(n, v);
        Some(v)
    }

    /// The interpreter's binary operator `op` (as `arith64`), or `None` without a lowering.
    fn bin(&mut self, op: BinOp, x: Value, y: Value, wa: u32, wb: u32) -> Option<Value> {
        use BinOp::*;
        let v = match op {
            Add => {
                let v = self.b.ins().iadd(x, y);
                self.and_mask(v, wa)
            }
            Sub => {
                let v = self.b.ins().isub(x, y);
                self.and_mask(v, wa)
            }
            Mul => {
                let v = self.b.ins().imul(x, y);
                self.and_mask(v, wa)
            }
            Div | Mod => {
                let z = self.k(0);
                let one = self.k(1);
                let is_zero = self.b.ins().icmp(IntCC::Equal, y, z);
                let d = self.b.ins().select(is_zero, one, y);
                let q = if op == Div {
                    self.b.ins().udiv(x, d)
                } else {
                    self.b.ins().urem(x, d)
                };
                self.b.ins().select(is_zero, z, q)
            }
            AddSatU => {
                let m = self.k(mask64(wa));
                let (s, over) = self.b.ins().uadd_overflow(x, y);
                let min = self.b.ins().umin(s, m);
                self.b.ins().select(over, m, min)
            }
            SubSatU => {
                let z = self.k(0);
                let d = self.b.ins().isub(x, y);
                let ge = self.b.ins().icmp(IntCC::UnsignedGreaterThanOrEqual, x, y);
                self.b.ins().select(ge, d, z)
            }
            AddSatS | SubSatS => {
                let args = [
                    self.k(u64::from(op == SubSatS)),
                    x,
                    y,
                    self.k(u64::from(wa)),
                    self.k(u64::from(wb)),
                ];
                self.helper("koi_jit_sat", &args)?
            }
            BitAnd => self.b.ins().band(x, y),
            BitOr => self.b.ins().bor(x, y),
            BitXor => self.b.ins().bxor(x, y),
            Shl | ShrU => {
                let z = self.k(0);
                let lim = self.k(u64::from(wa));
                let big = self.b.ins().icmp(IntCC::UnsignedGreaterThanOrEqual, y, lim);
                let v = if op == Shl {
                    let v = self.b.ins().ishl(x, y);
                    self.and_mask(v, wa)
                } else {
                    self.b.ins().ushr(x, y)
                };
                self.b.ins().select(big, z, v)
            }
            ShrS => {
                if wa == 0 {
                    return Some(self.k(0));
                }
                let sx = self.sext(x, wa);
                let lim = self.k(63);
                let amt = self.b.ins().umin(y, lim);
                let v = self.b.ins().sshr(sx, amt);
                self.and_mask(v, wa)
            }
            Concat => {
                if wb >= 64 {
                    y
                } else {
                    let s = self.k(u64::from(wb));
                    let hi = self.b.ins().ishl(x, s);
                    self.b.ins().bor(hi, y)
                }
            }
            Eq => self.bool64(IntCC::Equal, x, y),
            Ne => self.bool64(IntCC::NotEqual, x, y),
            LtU => self.bool64(IntCC::UnsignedLessThan, x, y),
            LeU => self.bool64(IntCC::UnsignedLessThanOrEqual, x, y),
            GtU => self.bool64(IntCC::UnsignedGreaterThan, x, y),
            GeU => self.bool64(IntCC::UnsignedGreaterThanOrEqual, x, y),
            LtS | LeS | GtS | GeS => {
                let sx = self.sext(x, wa);
                let sy = self.sext(y, wb);
                let cc = match op {
                    LtS => IntCC::SignedLessThan,
                    LeS => IntCC::SignedLessThanOrEqual,
                    GtS => IntCC::SignedGreaterThan,
                    _ => IntCC::SignedGreaterThanOrEqual,
                };
                self.bool64(cc, sx, sy)
            }
            And | Or => {
                let a = self.nonzero(x);
                let c = self.nonzero(y);
                if op == And {
                    self.b.ins().band(a, c)
                } else {
                    self.b.ins().bor(a, c)
                }
            }
        };
        Some(v)
    }

    /// A call of helper `name` (one of [`HELPERS`]) with 64-bit arguments; its result.
    fn helper(&mut self, name: &str, args: &[Value]) -> Option<Value> {
        let mut sig = self.module.make_signature();
        sig.params.extend(args.iter().map(|_| AbiParam::new(I64)));
        sig.returns.push(AbiParam::new(I64));
        let id = self
            .module
            .declare_function(name, Linkage::Import, &sig)
            .ok()?;
        let f = self.module.declare_func_in_func(id, self.b.func);
        let call = self.b.ins().call(f, args);
        self.b.inst_results(call).first().copied()
    }

    /// A zeroed stack buffer of `len` bytes (a multiple of 8) and its address.
    fn stack_buffer(&mut self, len: usize) -> Option<Value> {
        let size = u32::try_from(len).ok()?;
        let slot = self.b.create_sized_stack_slot(StackSlotData::new(
            StackSlotKind::ExplicitSlot,
            size,
            3,
        ));
        let addr = self.b.ins().stack_addr(I64, slot, 0);
        let zero = self.k(0);
        for at in (0..len).step_by(8) {
            self.b
                .ins()
                .store(native::flags(), zero, addr, i32::try_from(at).ok()?);
        }
        Some(addr)
    }

    /// A v1model hash (not `csum16`) of a plan's data: the data's bits assembled in a stack
    /// buffer as the interpreter assembles them, then the interpreter's calculation.
    fn hash(&mut self, algo: HashAlgo, plan: &HashPlan) -> Option<Value> {
        if algo == HashAlgo::Csum16 {
            return self.csum16(plan);
        }
        let code = HASH_ALGOS.iter().position(|a| *a == algo)?;
        super::v1_algo(algo)?;
        let nbytes = plan.bits.div_ceil(8) as usize;
        if nbytes > 256 {
            return None;
        }
        let buf = self.stack_buffer(nbytes.div_ceil(8) * 8)?;
        let mut at = 0u32;
        for e in &plan.elems {
            match *e {
                Elem::Pkt { off, len } => {
                    let mut done = 0;
                    while done < len {
                        let n = (len - done).min(32);
                        let v = self.read_pkt(off + done, n)?;
                        self.write_bits_at(buf, nbytes, at + done, n, v)?;
                        done += n;
                    }
                    at += len;
                }
                Elem::Node(d) => {
                    let v = self.node(d)?;
                    let w = self.p.widths[d as usize];
                    // In pieces of at most 32 bits, most significant first.
                    let mut done = 0;
                    while done < w {
                        let n = (w - done).min(32);
                        let rest = w - done - n;
                        let piece = if rest == 0 {
                            v
                        } else {
                            let s = self.k(u64::from(rest));
                            self.b.ins().ushr(v, s)
                        };
                        let piece = self.and_mask(piece, n);
                        self.write_bits_at(buf, nbytes, at + done, n, piece)?;
                        done += n;
                    }
                    at += w;
                }
            }
        }
        let args = [self.k(code as u64), buf, self.k(nbytes as u64)];
        self.helper("koi_jit_hash", &args)
    }

    /// uBPF `lookup3` over the values of `data` (as the interpreter: values and widths).
    fn lookup3(&mut self, data: &[N]) -> Option<Value> {
        let n = data.len();
        let vals = self.stack_buffer(8 * n.max(1))?;
        let widths = self.stack_buffer(8 * n.max(1))?;
        for (i, d) in data.iter().enumerate() {
            let v = self.node(*d)?;
            let w = self.k(u64::from(self.p.widths[*d as usize]));
            let at = i32::try_from(8 * i).ok()?;
            self.b.ins().store(native::flags(), v, vals, at);
            self.b.ins().store(native::flags(), w, widths, at);
        }
        let args = [vals, widths, self.k(n as u64)];
        self.helper("koi_jit_lookup3", &args)
    }

    /// The Internet checksum (`csum16`) of a hash plan: its bits cut into big-endian 16-bit
    /// words (the last one padded with zeros), summed, folded, inverted.
    fn csum16(&mut self, plan: &HashPlan) -> Option<Value> {
        let mut acc = Words::default();
        for e in &plan.elems {
            match *e {
                Elem::Pkt { off, len } => {
                    let mut done = 0;
                    while done < len {
                        let at = off + done;
                        if acc.fill == 0 && at % 8 == 0 && len - done >= 16 {
                            // Whole words straight from the packet: up to four at once, as
                            // 32-bit chunks (2^16 = 1 modulo 0xffff, so a chunk adds what
                            // its two words add once folded).
                            let first = (at / 8) as usize;
                            let bytes = match len - done {
                                64.. => 8,
                                32.. => 4,
                                _ => 2,
                            };
                            self.need = self.need.max(first + bytes);
                            let x = self.load_be(self.pkt, first, bytes);
                            let w = if bytes == 8 {
                                let lo = self.and_mask(x, 32);
                                let s = self.k(32);
                                let hi = self.b.ins().ushr(x, s);
                                acc.max += 2 * u128::from(u32::MAX);
                                self.b.ins().iadd(lo, hi)
                            } else {
                                acc.max += if bytes == 4 {
                                    u128::from(u32::MAX)
                                } else {
                                    0xffff
                                };
                                x
                            };
                            acc.sum = Some(match acc.sum {
                                None => w,
                                Some(s) => self.b.ins().iadd(s, w),
                            });
                            done += 8 * bytes as u32;
                            continue;
                        }
                        let n = (len - done).min(16 - acc.fill);
                        let v = self.read_pkt(at, n)?;
                        self.feed(&mut acc, v, n);
                        done += n;
                    }
                }
                Elem::Node(d) => {
                    let v = self.node(d)?;
                    let w = self.p.widths[d as usize];
                    self.feed(&mut acc, v, w);
                }
            }
        }
        if let Some(w) = acc.word.take() {
            acc.max += 0xffff;
            acc.sum = Some(match acc.sum {
                None => w,
                Some(s) => self.b.ins().iadd(s, w),
            });
        }
        let mut sum = acc.sum.unwrap_or_else(|| self.k(0));
        // Folds until the largest sum the words can make fits 16 bits.
        let mut max = acc.max;
        if max >= 1 << 64 {
            return None;
        }
        while max > 0xffff {
            let lo = self.and_mask(sum, 16);
            let s = self.k(16);
            let hi = self.b.ins().ushr(sum, s);
            sum = self.b.ins().iadd(lo, hi);
            max = fold_max(max);
        }
        let inv = self.b.ins().bnot(sum);
        Some(self.and_mask(inv, 16))
    }

    /// Appends the `w` bits of `v` (most significant first) to the checksum's words.
    fn feed(&mut self, acc: &mut Words, v: Value, mut w: u32) {
        while w > 0 {
            let t = w.min(16 - acc.fill);
            let part = if w > t {
                let s = self.k(u64::from(w - t));
                self.b.ins().ushr(v, s)
            } else {
                v
            };
            let part = self.and_mask(part, t);
            let up = 16 - acc.fill - t;
            let part = if up > 0 {
                let s = self.k(u64::from(up));
                self.b.ins().ishl(part, s)
            } else {
                part
            };
            acc.word = Some(match acc.word {
                None => part,
                Some(x) => self.b.ins().bor(x, part),
            });
            acc.fill += t;
            w -= t;
            if acc.fill == 16 {
                acc.max += 0xffff;
                let word = acc.word.take().unwrap_or(part);
                acc.sum = Some(match acc.sum {
                    None => word,
                    Some(s) => self.b.ins().iadd(s, word),
                });
                acc.fill = 0;
            }
        }
    }
}

/// A checksum's words so far: their sum, the largest value the sum can have, and the word
/// being filled (`fill` bits).
#[derive(Default)]
struct Words {
    sum: Option<Value>,
    max: u128,
    word: Option<Value>,
    fill: u32,
}

/// The largest `(x & 0xffff) + (x >> 16)` for `x` up to `m`: at `m` itself, or just below the
/// last multiple of 2^16 (all low bits set).
fn fold_max(m: u128) -> u128 {
    let q = m >> 16;
    if q == 0 {
        m
    } else {
        ((m & 0xffff) + q).max(0xffff + q - 1)
    }
}

/// Bits `[lo, lo + n)` of `b` (`n` at most 64).
fn bits_at(b: &Bits, lo: u32, n: u32) -> u64 {
    let limbs = b.limbs();
    let (i, s) = ((lo / 64) as usize, lo % 64);
    let low = limbs.get(i).copied().unwrap_or(0) >> s;
    let high = if s == 0 {
        0
    } else {
        limbs.get(i + 1).copied().unwrap_or(0) << (64 - s)
    };
    (low | high) & mask64(n)
}

#[cfg(test)]
mod tests {
    use super::fold_max;

    #[test]
    fn fold_max_is_the_largest_fold_up_to_its_bound() {
        let fold = |x: u128| (x & 0xffff) + (x >> 16);
        let mut best = 0;
        for m in 0..0x4_0000u128 {
            best = best.max(fold(m));
            assert_eq!(fold_max(m), best, "bound {m:#x}");
        }
        // Past the range walked: the last value below each multiple of 2^16 and the bound.
        for m in [
            0xffff_ffffu128,
            0x1_0000_0000,
            0x1_2345_6789,
            u64::MAX.into(),
        ] {
            let q = m >> 16;
            assert_eq!(fold_max(m), fold(m).max(fold((q << 16) - 1)));
        }
    }
}
