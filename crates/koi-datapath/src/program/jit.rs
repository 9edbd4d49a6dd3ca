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
//!
//! Where the parts are: this file holds the compiled code's types and [`Jit`]'s compile and
//! check; `lower` lowers nodes to Cranelift IR, `shapes` shares code between programs of one
//! shape, `helpers` are the interpreter's functions generated code calls.

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

mod helpers;
mod lower;
mod shapes;
use helpers::*;
use lower::*;
use shapes::*;

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
