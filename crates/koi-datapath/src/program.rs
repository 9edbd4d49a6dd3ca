//! Compiled action programs: what a megaflow does to a packet, as a short list of operations
//! on the packet's bytes, derived from the slow-path run by symbolic execution.
//!
//! # How a program is derived
//!
//! While the slow path runs the interpreter on a packet whose parse the [`FastParser`]
//! followed, a [`Tracer`] follows the same run symbolically, from the end of the parse: every
//! PHV slot holds a small expression ([`Node`]) over the **inputs** of the run: packet bits at
//! fixed offsets (the parse path, hence every header's offset, is fixed by the megaflow's
//! mask), the ingress port, constants (action data of the entries hit, values written by the
//! architecture), per-packet **inputs** the program reads when it runs (timestamps, the
//! packet's length on arrival), and **opaque** values (anything the tracer does not model,
//! such as the packet's length in egress). Decisions are not traced: the megaflow's mask
//! already fixes them (or a guard checks them, below), so the run is a
//! straight line of assignments, header operations, checksum updates, counter updates and
//! table hits, which the tracer executes over expressions (folding constants, and reading a
//! packet field as the constant the megaflow's mask pins it to when it is fully masked).
//!
//! A varbit field is its packet bits, as many as its `extract` gave it: the megaflow's mask
//! fixes the size (its inputs are parser operands), so its emit copies that many bits and a
//! checksum over it sums them; copied whole into a temporary (as aggregate arguments are), it
//! is the same bits.
//!
//! At the end, the deparser's `emit`s give the output's header fields in order, each with its
//! expression; fields whose expression is "the input bits at the same offset" cost nothing,
//! others become writes (a constant, a copied field, an expression such as `ttl - 1`, or a
//! checksum over fields). The program is:
//!
//! 1. state updates, in run order: direct counters and idle times of the entries hit, indexed
//!    counters, register reads and writes, meters (indexed, and direct ones executed by a
//!    table hit), `random` values (drawn per packet from the interpreter's generator), the
//!    digest message ingress sends (its values as `digest` saw them) (a value read or colour is kept for the expressions that use it:
//!    `v = r.read(i); r.write(i, v + 1); hdr.x = v + 1` is one read, one write and one output
//!    field), and **guards**: a decision on a state-dependent value (a register value, a
//!    colour, `random`, a checksum over the payload) becomes a `StateOp::Guard`, its
//!    condition's expression and the way the run took (`if (v > 3)` taken false: `guard
//!    (read0 + 1 > 3) is false`; a table keyed by a register value: the key's expression
//!    and value; an egress port or multicast group computed from state: its value, as the
//!    traffic manager's event shows it), so that the program applies to exactly the packets
//!    (and states) that take
//!    the recorded way: it checks its guards as it runs, after the reads they use, and if one
//!    fails undoes its register writes, meter executions and draws and reports that it did
//!    not apply (table hits, counters and digests, which nothing reads, run after every guard
//!    held);
//! 2. per packet instance, in the interpreter's order (the traffic manager's queue: one for
//!    unicast, one per replica for multicast, one per copy of an ingress-to-egress or
//!    egress-to-egress clone; each egress pass starts from the PHV its instance was queued
//!    with: a replica with its `egress_rid`, an I2E clone from the PHV the parse left with
//!    its metadata reset but for the clone's field list, an E2E clone from the PHV egress
//!    left, likewise reset): the output, built as the input bytes copied with the
//!    changed fields written (when the output header layout has the input's length), or as the
//!    output headers assembled field by field (push and pop of headers), then the payload; and
//!    its port, or a drop with its reason.
//!
//! uBPF programs are one pass (parser, pipeline, deparser; `hash` with lookup3 and the
//! `csum_replace` updates modelled) whose output leaves on
//! `output_port`, or is dropped when `mark_to_drop` left its flag set: the same model without
//! the traffic manager.
//!
//! The tracer gives up (the megaflow then replays its recording through the interpreter) on
//! everything outside that model: resubmission, recirculation, uBPF `truncate`, logs,
//! hashes with the `random` algorithm, hashes whose inputs are not modelled, a varbit that is
//! read other than by an `emit` or a checksum (or is written), a value that the traffic
//! manager reads (egress port, multicast group, priority, a clone's session) not
//! being constant, or an opaque value reaching the output.
//!
//! # Why it is exact
//!
//! The expressions are evaluated with the interpreter's own operations on [`Bits`], and the
//! semantics of each statement are the interpreter's (v1model `setValid` zeroing fields,
//! `mark_to_drop`, `update_checksum` with invalid headers' fields left out). Because one
//! compiled program must serve every packet of the megaflow, only values the mask fixes are
//! folded. As a check, each program is run on the packet that created it and its output
//! compared with the interpreter's before it is installed (with the register values the
//! interpreter read); a mismatch leaves the megaflow
//! with its replay ([`crate::DatapathStats::compile_mismatch`], which the tests require to be
//! zero over the corpus).
//!
//! Checksums are recomputed over their fields, not updated incrementally: `update_checksum`
//! defines the field as the checksum of the listed fields, which an RFC 1624 update equals
//! only when the incoming checksum was right, so recomputing (20 bytes for IPv4) is the exact
//! choice. A `csum16` with the payload (`update_checksum_with_payload`, the TCP and UDP
//! checksums) sums the fields, then continues over the packet's bytes after the parse
//! ([`Node::PayloadCsum`]); its check (`verify_checksum_with_payload`) is computed per packet
//! too, but a decision on it is not cached (the flow key does not hold the payload).
//! A program that updates a checksum incrementally itself (uBPF `csum_replace2` and
//! `csum_replace4`, RFC 1624) gets exactly that update as an operation ([`Node::CsumReplace`]).
//!
//! # Running a program
//!
//! [`Program::run`] interprets the program: state updates (and guards), then each output,
//! its values evaluated once per packet, children first. A table hit is an operation only when the
//! table has a direct counter or idle timeout ([`State::hit_recorded`]); otherwise it
//! changes no state. Once a program has run [`Jit`]'s threshold of times, its output writes,
//! and the values its state updates and guards use, become native code (module
//! `program::jit`), checked against this interpreter before use.

use crate::fastparse::{Ex, FastParser, NONE, Parsed};
use crate::flowkey::FlowKeyLayout;
use koi_hash::BitString;
use koi_hash::v1model::{Calculation, HashAlgorithm};
use koi_interp::DropReason;
use koi_ir::entity::EntityId;
use koi_ir::{
    Architecture, BinOp, Bits, Builtin, Cast, Expr, ExternId, ExternKind, HashAlgo, HeaderId,
    HeaderRef, Pipeline, Place, SlotId, SlotKind, StackId, Stmt, TableId, Ty, UnOp, Value,
};
use koi_state::State;
use std::sync::Arc;

mod jit;
pub use crate::native::Jit;
pub use jit::JitEvent;
pub(crate) use jit::Shapes;

type N = u32;

/// A symbolic value.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Node {
    Const(Bits),
    /// `w` bits of the input packet at bit `off`: the value `slot` had when the parse ended.
    Pkt {
        off: u32,
        w: u32,
        slot: SlotId,
    },
    /// The ingress port, `w` bits.
    Port(u32),
    /// A value the program cannot compute (timestamps, lengths).
    Opaque(u32),
    Un(UnOp, N),
    Bin(BinOp, N, N),
    Slice(N, u32, u32),
    Cast(Cast, N),
    Mux(N, N, N),
    /// A v1model hash or checksum calculation over `data`, truncated to `w` bits (64: the
    /// calculation's whole output, as `verify_checksum` compares it).
    Hash {
        algo: HashAlgo,
        data: Vec<N>,
        w: u32,
    },
    /// `base + hash % max` as v1model's `hash` computes it, in `w` bits.
    HashResult {
        hash: N,
        base: u64,
        max: u64,
        w: u32,
    },
    /// The value register read number `t` found (resized to `w` bits), or `fallback` when
    /// the index was out of range (the destination then kept its value).
    RegVal {
        t: u32,
        w: u32,
        fallback: N,
    },
    /// uBPF `csum_replace2`/`csum_replace4` (`four`): checksum `csum` (16 bits) updated for
    /// `old` replaced by `new`, RFC 1624 (16 bits).
    CsumReplace {
        csum: N,
        old: N,
        new: N,
        four: bool,
    },
    /// v1model `csum16` with the payload (`update_checksum_with_payload`): `csum` (the
    /// `csum16` of the fields, 16 bits, an `odd` number of bytes long) continued over the
    /// packet's bytes from byte `start` (the end of the parse) to its end (16 bits).
    PayloadCsum {
        csum: N,
        start: u32,
        odd: bool,
    },
}

impl Node {
    /// Whether `f` holds for one of the node's operands.
    fn any_operand(&self, mut f: impl FnMut(N) -> bool) -> bool {
        match self {
            Node::Const(_) | Node::Pkt { .. } | Node::Port(_) | Node::Opaque(_) => false,
            Node::Un(_, a) | Node::Slice(a, ..) | Node::Cast(_, a) => f(*a),
            Node::Bin(_, a, b) => f(*a) || f(*b),
            Node::Mux(c, a, b) => f(*c) || f(*a) || f(*b),
            Node::Hash { data, .. } => data.iter().any(|d| f(*d)),
            Node::HashResult { hash, .. } => f(*hash),
            Node::RegVal { fallback, .. } => f(*fallback),
            Node::CsumReplace { csum, old, new, .. } => f(*csum) || f(*old) || f(*new),
            Node::PayloadCsum { csum, .. } => f(*csum),
        }
    }
}

/// The value of a [`Node::PayloadCsum`].
fn payload_csum(csum: u64, pkt: &[u8], start: u32, odd: bool) -> u64 {
    let mut c = koi_hash::checksum::Csum16::resume(csum as u16, odd);
    c.feed(pkt.get(start as usize..).unwrap_or(&[]));
    u64::from(c.finish())
}

/// The value of a [`Node::CsumReplace`], as the interpreter computes it.
fn csum_replace(csum: u64, old: u64, new: u64, four: bool) -> u64 {
    let c = csum as u16;
    u64::from(if four {
        koi_hash::ubpf::csum_replace4(c, old as u32, new as u32)
    } else {
        koi_hash::ubpf::csum_replace2(c, old as u16, new as u16)
    })
}

/// A state update of a program.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
enum StateOp {
    /// A table entry was hit: its direct counter and idle time.
    TableHit(TableId, u32),
    /// `counter.count(index)`.
    Count(ExternId, N),
    /// `register.read(_, index)`: the value at `index` (if in range) into read slot `t`.
    RegRead(ExternId, N, u32),
    /// `register.write(index, value)`.
    RegWrite(ExternId, N, N),
    /// `meter.execute_meter(index, _)`: the colour into read slot `t`.
    Meter(ExternId, N, u32),
    /// A table hit executes its direct meter for the entry: the colour into read slot `t`.
    DirectMeter(TableId, u32, u32),
    /// `random(lo, hi)`: a value drawn into read slot `t`.
    Random { lo: N, hi: N, t: u32 },
    /// A digest message sent at the end of ingress: its receiver and each field's value
    /// (name, value, width), computed when `digest` was called.
    Digest {
        digest: koi_ir::DigestId,
        name: String,
        receiver: N,
        fields: Vec<(String, N, u32)>,
    },
    /// A decision on a state-dependent value (a register value, a meter colour, `random`, a
    /// checksum over the payload) took the recorded way only if `n`'s value passes `test`:
    /// otherwise the program does not apply to this packet ([`Program::run`]).
    Guard { n: N, test: Test },
    /// An architecture input known only when the packet is processed, into read slot `t`.
    Input { what: Input, t: u32 },
}

/// A per-packet architecture input a program reads ([`StateOp::Input`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Input {
    /// A timestamp (v1model's `ingress_global_timestamp`, `enq_timestamp`,
    /// `egress_global_timestamp`): the time the packet is processed, in microseconds (the
    /// clock is read once per batch: every timestamp of a packet is the same).
    Now,
    /// The time a packet spent queued (v1model's `deq_timedelta`): none, as the timestamps
    /// are equal.
    Zero,
    /// The packet's length in bytes as it arrived (`packet_length` before the parser).
    Len,
}

/// What a guard (`StateOp::Guard`) requires of its value.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
enum Test {
    /// A branch's condition: true or false.
    Truth(bool),
    /// A `switch` (or a table key): the first case equal to the value, else the default, is
    /// the recorded way (`true`).
    Cases {
        cases: Vec<(Bits, bool)>,
        default: bool,
    },
}

impl Test {
    /// Whether value `v` takes the recorded way.
    fn holds(&self, v: &Bits) -> bool {
        match self {
            Test::Truth(t) => truth(v) == *t,
            Test::Cases { cases, default } => cases
                .iter()
                .find(|(c, _)| {
                    if c.width() == v.width() {
                        c == v
                    } else {
                        *c == v.resize(c.width())
                    }
                })
                .map_or(*default, |(_, way)| *way),
        }
    }

    /// [`Test::holds`] for a value of at most 64 bits.
    #[inline]
    fn holds64(&self, v: u64) -> bool {
        match self {
            Test::Truth(t) => (v != 0) == *t,
            // As `holds`: the value resized to the case's width.
            Test::Cases { cases, default } => cases
                .iter()
                .find(|(c, _)| match c.width() {
                    w @ 0..=64 => c.low_u64() == v & mask64(w),
                    _ => c.to_u64() == Some(v),
                })
                .map_or(*default, |(_, way)| *way),
        }
    }
}

/// How to undo a state update of a guarded program whose guard failed.
#[derive(Debug)]
enum Undo {
    Reg(ExternId, u64, Bits),
    Meter(ExternId, u64, koi_state::meter::Meter),
    DirectMeter(TableId, u32, koi_state::meter::Meter),
}

/// An output operation.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
enum OutOp {
    /// Copy `len` bits of the input at `src` to output bit `dst`.
    Copy { src: u32, dst: u32, len: u32 },
    /// Write a constant at output bit `dst`.
    Const { dst: u32, value: Bits },
    /// Write constant bytes at output byte `dst`.
    Bytes { dst: usize, bytes: Vec<u8> },
    /// Write node `n`'s value at output bit `dst`; `narrow`: computed in `u64`s.
    Write { dst: u32, n: N, narrow: bool },
}

/// What a compiled program hands on, in order: packets to send and dropped instances.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Emitted<'a> {
    Packet(u64, &'a [u8]),
    Drop(&'a DropReason),
    /// A digest message was queued in the state.
    Digest,
}

/// One packet instance's fate: sent on a port (with how its bytes are built) or dropped.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
enum Res {
    Send(u64, OutProg),
    Drop(DropReason),
}

/// How one output packet is built from the input.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
struct OutProg {
    /// Output header bytes (rounded up) before the payload.
    prefix_bytes: usize,
    /// Whether the output starts as a copy of the input's first `prefix_bytes` bytes.
    copy_input: bool,
    out: Vec<OutOp>,
    payload_start: usize,
    /// v1model `truncate` lengths (bytes) the instance was given: the output is cut to the
    /// smallest.
    cut: Vec<N>,
}

impl OutProg {
    /// The output packet's layout.
    fn layout(&self) -> OutLayout {
        OutLayout {
            prefix_bytes: self.prefix_bytes,
            payload_start: self.payload_start,
            copy_input: self.copy_input,
        }
    }

    #[inline]
    fn begin(&self, pkt: &[u8], out: &mut Vec<u8>) -> bool {
        self.layout().begin(pkt, out)
    }

    #[inline]
    fn end(&self, pkt: &[u8], out: &mut Vec<u8>, whole: bool) {
        self.layout().end(pkt, out, whole)
    }
}

/// Where an output packet's headers and payload come from: see [`OutProg`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct OutLayout {
    prefix_bytes: usize,
    payload_start: usize,
    copy_input: bool,
}

impl OutLayout {
    /// Starts the output packet in `out`: its headers' bytes before the writes (at least
    /// `prefix_bytes` of them). When the output headers have the input's layout, one copy of
    /// the whole packet (the payload is then already in place: returns true); else the copied
    /// or zeroed prefix.
    #[inline]
    fn begin(&self, pkt: &[u8], out: &mut Vec<u8>) -> bool {
        out.clear();
        let whole = self.copy_input
            && self.prefix_bytes == self.payload_start
            && pkt.len() >= self.payload_start;
        if whole {
            out.extend_from_slice(pkt);
        } else {
            if self.copy_input {
                out.extend_from_slice(pkt.get(..self.prefix_bytes).unwrap_or(pkt));
            }
            out.resize(self.prefix_bytes, 0);
        }
        whole
    }

    /// Ends the output packet: appends the payload unless [`OutLayout::begin`] copied it.
    #[inline]
    fn end(&self, pkt: &[u8], out: &mut Vec<u8>, whole: bool) {
        if !whole && let Some(payload) = pkt.get(self.payload_start..) {
            out.extend_from_slice(payload);
        }
    }
}

/// A compiled action program.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Program {
    nodes: Vec<Node>,
    /// Each node's width.
    widths: Vec<u32>,
    /// Whether some operation needs [`Bits`] arithmetic (a value wider than 64 bits).
    wide: bool,
    /// For narrow `Hash` nodes: the data as packet ranges and computed values.
    plans: Vec<Option<HashPlan>>,
    /// Per node: [`Program::is_narrow`].
    narrow: Vec<bool>,
    /// Per node: no register read below it (its value depends on the packet alone, so a
    /// run computes it once however many state updates index with it: [`Program::index`]).
    pure: Vec<bool>,
    /// The nodes the outputs use, children first, each evaluated once per packet into
    /// [`Scratch`] ([`Program::eval_all`]); empty when some value is wide (then each write
    /// evaluates its expression on its own).
    lin: Vec<N>,
    state: Vec<StateOp>,
    /// Whether `state` has a [`StateOp::Guard`].
    guarded: bool,
    /// The instances' fates in the interpreter's order (several for multicast).
    results: Vec<Res>,
    /// Native code, once the program is hot ([`Jit`]).
    jit: jit::JitCell,
}

/// Hashes what defines the program (its nodes, state operations and results; the rest is
/// derived from them), for the set the datapath interns programs in: the whole program
/// would hash its derived tables again.
impl std::hash::Hash for Program {
    fn hash<H: std::hash::Hasher>(&self, h: &mut H) {
        self.nodes.hash(h);
        self.state.hash(h);
        self.results.hash(h);
    }
}

/// One piece of a hash's data.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
enum Elem {
    /// `len` bits of the input packet at bit `off` (consecutive packet fields merged).
    Pkt {
        off: u32,
        len: u32,
    },
    Node(N),
}

/// A hash's data laid out for [`Program::eval64`].
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
struct HashPlan {
    elems: Vec<Elem>,
    bits: u32,
    /// Every piece starts and ends on a byte and the data fits [`ALIGNED_MAX`] bytes: the
    /// data is assembled with byte copies in a stack buffer.
    aligned: bool,
}

/// The largest hash input the byte-aligned path assembles on the stack.
const ALIGNED_MAX: usize = 128;

/// Per-thread scratch space for running programs.
#[derive(Debug, Default)]
pub struct Scratch {
    vals: Vec<Option<Bits>>,
    bits: BitString,
    buf: Vec<u8>,
    /// Node values of [`Program::eval_all`].
    regs: Vec<u64>,
    /// The register values read by the program being run, by read number.
    reads: Vec<Option<Bits>>,
    /// The same for native code: per read, a flag (read in range) and the value's low bits;
    /// kept by [`Scratch::set_read`] (sized per run: [`Program::run`]) and
    /// [`Scratch::preset_reads`].
    jit_reads: Vec<u64>,
    /// The state updates a guarded program made so far, to undo if a guard fails.
    undo: Vec<Undo>,
    /// The indices computed in this run, of nodes without register reads below them (a
    /// connection table's hash indexes every register it reads and writes).
    indices: Vec<(N, u64)>,
}

impl Scratch {
    /// Stores what read number `t` found.
    fn set_read(&mut self, t: u32, v: Option<Bits>) {
        let t = t as usize;
        // Native code's copy (a flag and the low bits), when a run sized it.
        if let Some(pair) = self.jit_reads.get_mut(2 * t..2 * t + 2) {
            pair[0] = u64::from(v.is_some());
            pair[1] = v.as_ref().map_or(0, Bits::low_u64);
        }
        if self.reads.len() <= t {
            self.reads.resize(t + 1, None);
        }
        self.reads[t] = v;
    }

    /// Presets the register reads a run without state sees (the check at installation),
    /// with native code's copy.
    pub fn preset_reads(&mut self, reads: Vec<Option<Bits>>) {
        self.jit_reads.clear();
        for v in &reads {
            self.jit_reads
                .extend([u64::from(v.is_some()), v.as_ref().map_or(0, Bits::low_u64)]);
        }
        self.reads = reads;
    }
}

impl Program {
    /// Packets sent (more than one for multicast).
    pub fn outputs(&self) -> usize {
        self.results
            .iter()
            .filter(|r| matches!(r, Res::Send(..)))
            .count()
    }

    /// Whether the program has guards: it applies only to the packets whose state-dependent
    /// decisions take the recorded ways.
    pub fn is_guarded(&self) -> bool {
        self.guarded
    }

    /// Whether the program runs as native code ([`Jit`]).
    pub fn is_native(&self) -> bool {
        self.jit.get().is_some()
    }

    /// Operations run per packet (state updates and output writes), for reports.
    pub fn ops(&self) -> usize {
        self.state.len()
            + self
                .results
                .iter()
                .map(|r| match r {
                    Res::Send(_, o) => o.out.len(),
                    Res::Drop(_) => 0,
                })
                .sum::<usize>()
    }

    /// Runs the program on `pkt` (received on `port`): updates `state`, then builds each
    /// output packet in `out` and hands it, and each drop, to `emit`, in the interpreter's
    /// order. `state: None` computes the outputs only (the check at installation).
    ///
    /// A guarded program returns false when a guard fails: the packet's state-dependent
    /// decisions go another way than the program's. It then leaves `state` and the
    /// generator as they were and emits nothing.
    #[allow(clippy::too_many_arguments)]
    pub fn run(
        &self,
        pkt: &[u8],
        port: u64,
        state: Option<(&mut State, &mut koi_interp::Rng)>,
        now_ns: u64,
        out: &mut Vec<u8>,
        scratch: &mut Scratch,
        emit: &mut dyn FnMut(Emitted<'_>),
    ) -> bool {
        self.fresh_values(scratch);
        // Without a state (the check at installation), the register reads are the ones the
        // interpreter made (`Scratch::preset_reads`).
        if let Some((state, rng)) = state {
            let digests = if self.guarded {
                match self.update_state_guarded(pkt, port, state, rng, now_ns, scratch) {
                    Some(d) => d,
                    None => return false,
                }
            } else {
                self.update_state(pkt, port, state, rng, now_ns, scratch)
            };
            for _ in 0..digests {
                emit(Emitted::Digest);
            }
        }
        let code = self.jit.get().filter(|c| pkt.len() >= c.need);
        self.emit_results(pkt, port, code, out, scratch, emit);
        true
    }

    /// Whether every guard holds for `pkt` with the reads preset in `s` (the check at
    /// installation: the guards are exact for the packet that made the program).
    pub fn guards_hold(&self, pkt: &[u8], port: u64, s: &mut Scratch) -> bool {
        self.fresh_values(s);
        self.state.iter().all(|op| match op {
            StateOp::Guard { n, test } => test.holds(&self.value(*n, pkt, port, s)),
            _ => true,
        })
    }

    /// The common case in one step: a program without state operations that sends one packet
    /// and has native code for it (with no register reads): builds the packet in `out` and
    /// returns its port, as [`Program::run`] would; `None` (nothing done) for any other
    /// program, or a packet shorter than the code assumes.
    #[inline(always)]
    pub fn run_unicast(&self, pkt: &[u8], port: u64, out: &mut Vec<u8>) -> Option<u64> {
        self.jit.get()?.unicast.as_ref()?.run(pkt, port, out)
    }

    /// Builds each output packet (with `code` where it has a function) and hands it, and
    /// each drop, to `emit`.
    fn emit_results(
        &self,
        pkt: &[u8],
        port: u64,
        code: Option<&jit::Compiled>,
        out: &mut Vec<u8>,
        scratch: &mut Scratch,
        emit: &mut dyn FnMut(Emitted<'_>),
    ) {
        let mut evaluated = false;
        for (i, r) in self.results.iter().enumerate() {
            match r {
                Res::Send(to, o) => {
                    let native = code.map(|c| (c, i));
                    self.output(o, pkt, port, native, &mut evaluated, out, scratch);
                    emit(Emitted::Packet(*to, out));
                }
                Res::Drop(why) => emit(Emitted::Drop(why)),
            }
        }
    }

    /// Whether `code` gives the interpreter's outputs for `pkt` (at least `code.need` bytes),
    /// and each state value's, twice: with no register read (both take the fallbacks), and
    /// with every read in range and set to a different value.
    fn jit_checks_out(&self, code: &jit::Compiled, pkt: &[u8], port: u64) -> bool {
        let unread = vec![None; code.reads];
        let read: Vec<Option<Bits>> = (1..=code.reads as u64)
            .map(|t| Some(Bits::from_u64(64, t.wrapping_mul(0x9e37_79b9_7f4a_7c15))))
            .collect();
        [unread, read]
            .into_iter()
            .all(|reads| self.jit_checks_out_with(code, pkt, port, reads))
    }

    /// [`Program::jit_checks_out`] with the register reads `reads`.
    fn jit_checks_out_with(
        &self,
        code: &jit::Compiled,
        pkt: &[u8],
        port: u64,
        reads: Vec<Option<Bits>>,
    ) -> bool {
        let mut s = Scratch::default();
        let mut out = Vec::new();
        let mut got = Vec::new();
        s.preset_reads(reads);
        self.fresh_values(&mut s);
        self.emit_results(pkt, port, None, &mut out, &mut s, &mut |e| {
            if let Emitted::Packet(to, b) = e {
                got.push((to, b.to_vec()));
            }
        });
        let mut i = 0;
        let mut same = true;
        self.emit_results(pkt, port, Some(code), &mut out, &mut s, &mut |e| {
            if let Emitted::Packet(to, b) = e {
                same &= got.get(i).is_some_and(|(t, x)| *t == to && x[..] == *b);
                i += 1;
            }
        });
        same && i == got.len()
            && code.val_nodes().all(|n| {
                self.fresh_values(&mut s);
                code.val(n, pkt, port, &s.jit_reads) == Some(self.eval64(n, pkt, port, &mut s))
            })
    }

    fn update_state(
        &self,
        pkt: &[u8],
        port: u64,
        state: &mut State,
        rng: &mut koi_interp::Rng,
        now_ns: u64,
        scratch: &mut Scratch,
    ) -> usize {
        self.fresh_reads(scratch);
        let mut digests = 0;
        for op in &self.state {
            digests += usize::from(self.apply(op, pkt, port, state, rng, now_ns, scratch));
        }
        digests
    }

    /// [`Program::update_state`] for a guarded program: the updates that give values
    /// (register reads and writes, meters, `random`) and the guards in run order, each update
    /// logged so that a failing guard can undo them (then `None`); once every guard held, the
    /// updates nothing reads (table hits, counters, digests), in their order.
    fn update_state_guarded(
        &self,
        pkt: &[u8],
        port: u64,
        state: &mut State,
        rng: &mut koi_interp::Rng,
        now_ns: u64,
        scratch: &mut Scratch,
    ) -> Option<usize> {
        let rng0 = rng.clone();
        scratch.undo.clear();
        self.fresh_reads(scratch);
        for op in &self.state {
            match op {
                StateOp::TableHit(..) | StateOp::Count(..) | StateOp::Digest { .. } => continue,
                StateOp::Guard { n, test } => {
                    let holds = if self.is_narrow(*n) {
                        test.holds64(self.value64(*n, pkt, port, scratch))
                    } else {
                        test.holds(&self.eval(*n, pkt, port, scratch))
                    };
                    if !holds {
                        undo(state, &mut scratch.undo);
                        *rng = rng0;
                        return None;
                    }
                    continue;
                }
                StateOp::RegWrite(r, n, _) => {
                    let idx = self.index(*n, pkt, port, scratch);
                    if let Some(old) = state.register_mut(*r).and_then(|a| a.get(idx)) {
                        scratch.undo.push(Undo::Reg(*r, idx, old.clone()));
                    }
                }
                StateOp::Meter(m, n, _) => {
                    let idx = self.index(*n, pkt, port, scratch);
                    if let Some(c) = state.meter_cell_mut(*m, idx) {
                        scratch.undo.push(Undo::Meter(*m, idx, c.clone()));
                    }
                }
                StateOp::DirectMeter(t, i, _) => {
                    if let Some(c) = state.direct_meter_cell_mut(*t, *i) {
                        scratch.undo.push(Undo::DirectMeter(*t, *i, c.clone()));
                    }
                }
                StateOp::RegRead(..) | StateOp::Random { .. } | StateOp::Input { .. } => {}
            }
            self.apply(op, pkt, port, state, rng, now_ns, scratch);
        }
        let mut digests = 0;
        for op in &self.state {
            if matches!(
                op,
                StateOp::TableHit(..) | StateOp::Count(..) | StateOp::Digest { .. }
            ) {
                digests += usize::from(self.apply(op, pkt, port, state, rng, now_ns, scratch));
            }
        }
        Some(digests)
    }

    /// Applies state update `op`; true if it queued a digest message.
    #[allow(clippy::too_many_arguments)]
    fn apply(
        &self,
        op: &StateOp,
        pkt: &[u8],
        port: u64,
        state: &mut State,
        rng: &mut koi_interp::Rng,
        now_ns: u64,
        scratch: &mut Scratch,
    ) -> bool {
        match op {
            StateOp::TableHit(t, i) => state.record_hit(*t, *i, pkt.len(), now_ns),
            StateOp::Count(c, n) => {
                let idx = self.index(*n, pkt, port, scratch);
                state.count(*c, idx, pkt.len());
            }
            StateOp::RegRead(r, n, t) => {
                let idx = self.index(*n, pkt, port, scratch);
                let v = state.register_mut(*r).and_then(|a| a.get(idx).cloned());
                scratch.set_read(*t, v);
            }
            StateOp::Meter(m, n, t) => {
                let idx = self.index(*n, pkt, port, scratch);
                let c = state
                    .execute_meter(*m, idx, pkt.len(), now_ns)
                    .map(|c| Bits::from_u64(64, c.code()));
                scratch.set_read(*t, c);
            }
            StateOp::DirectMeter(tb, i, t) => {
                let c = state
                    .execute_direct_meter(*tb, *i, pkt.len(), now_ns)
                    .map(|c| Bits::from_u64(64, c.code()));
                scratch.set_read(*t, c);
            }
            StateOp::Random { lo, hi, t } => {
                let lo = self.index(*lo, pkt, port, scratch);
                let hi = self.index(*hi, pkt, port, scratch);
                scratch.set_read(*t, Some(Bits::from_u64(64, rng.range(lo, hi))));
            }
            StateOp::Digest { .. } => {
                if let Some(m) = self.digest_message(op, pkt, port, scratch) {
                    state.push_digest(m);
                    return true;
                }
            }
            StateOp::RegWrite(r, n, v) => {
                let idx = self.index(*n, pkt, port, scratch);
                let v = self.value(*v, pkt, port, scratch);
                if let Some(a) = state.register_mut(*r) {
                    a.set(idx, &v);
                }
            }
            StateOp::Input { what, t } => {
                let v = match what {
                    Input::Now => now_ns / 1000,
                    Input::Zero => 0,
                    Input::Len => pkt.len() as u64,
                };
                scratch.set_read(*t, Some(Bits::from_u64(64, v)));
            }
            // Checked by `update_state_guarded` (a program without guards has none).
            StateOp::Guard { .. } => {}
        }
        false
    }

    /// The message of a [`StateOp::Digest`] for `pkt`.
    fn digest_message(
        &self,
        op: &StateOp,
        pkt: &[u8],
        port: u64,
        scratch: &mut Scratch,
    ) -> Option<koi_state::DigestMessage> {
        let StateOp::Digest {
            digest,
            name,
            receiver,
            fields,
        } = op
        else {
            return None;
        };
        let receiver = if self.is_narrow(*receiver) {
            self.eval64(*receiver, pkt, port, scratch)
        } else {
            self.eval(*receiver, pkt, port, scratch).low_u64()
        };
        let fields = fields
            .iter()
            .map(|(f, n, w)| (f.clone(), self.value(*n, pkt, port, scratch).resize(*w)))
            .collect();
        Some(koi_state::DigestMessage {
            digest: *digest,
            name: name.clone(),
            receiver,
            fields,
        })
    }

    /// The digest messages the program sends for `pkt` (without a state: the check at
    /// installation).
    pub fn digests(
        &self,
        pkt: &[u8],
        port: u64,
        scratch: &mut Scratch,
    ) -> Vec<koi_state::DigestMessage> {
        self.fresh_values(scratch);
        self.state
            .iter()
            .filter_map(|op| self.digest_message(op, pkt, port, scratch))
            .collect()
    }

    /// Node `n`'s value as bits, through the `u64` evaluator when it is narrow.
    fn value(&self, n: N, pkt: &[u8], port: u64, scratch: &mut Scratch) -> Bits {
        if self.is_narrow(n) {
            Bits::from_u64(self.widths[n as usize], self.value64(n, pkt, port, scratch))
        } else {
            self.eval(n, pkt, port, scratch)
        }
    }

    /// A narrow node's value, by its native code when it has some ([`jit::Compiled::val`]:
    /// the values state updates use, once the program is hot), else by [`Program::eval64`].
    #[inline]
    fn value64(&self, n: N, pkt: &[u8], port: u64, scratch: &mut Scratch) -> u64 {
        if let Some(v) = self
            .jit
            .get()
            .and_then(|c| c.val(n, pkt, port, &scratch.jit_reads))
        {
            return v;
        }
        self.eval64(n, pkt, port, scratch)
    }

    /// Sizes native code's copy of this run's reads (all unread) before the state updates.
    #[inline]
    fn fresh_reads(&self, scratch: &mut Scratch) {
        if let Some(c) = self.jit.get().filter(|c| c.reads > 0) {
            scratch.jit_reads.clear();
            scratch.jit_reads.resize(2 * c.reads, 0);
        }
    }

    /// The narrow values the state updates use (indices, values written, guards'), for
    /// native code: each that is not a constant, once.
    pub(super) fn state_values(&self) -> Vec<N> {
        let mut v: Vec<N> = Vec::new();
        for op in &self.state {
            match op {
                StateOp::Count(_, n)
                | StateOp::RegRead(_, n, _)
                | StateOp::Meter(_, n, _)
                | StateOp::Guard { n, .. } => v.push(*n),
                StateOp::RegWrite(_, n, w) | StateOp::Random { lo: n, hi: w, .. } => {
                    v.extend([*n, *w])
                }
                StateOp::TableHit(..)
                | StateOp::DirectMeter(..)
                | StateOp::Digest { .. }
                | StateOp::Input { .. } => {}
            }
        }
        v.retain(|&n| self.is_narrow(n) && !matches!(self.nodes[n as usize], Node::Const(_)));
        v.sort_unstable();
        v.dedup();
        v
    }

    /// Per node: whether its value depends on the packet (its bytes, its port, a value the
    /// program cannot compute), through its operands too. (Operands come before the nodes
    /// that use them.)
    pub(super) fn packet_derived(&self) -> Vec<bool> {
        let mut from: Vec<bool> = Vec::with_capacity(self.nodes.len());
        for node in &self.nodes {
            let f = match node {
                Node::Pkt { .. } | Node::Port(_) | Node::Opaque(_) | Node::PayloadCsum { .. } => {
                    true
                }
                n => n.any_operand(|a| from.get(a as usize).copied().unwrap_or(true)),
            };
            from.push(f);
        }
        from
    }

    /// Forgets the values [`Program::eval`] and [`Program::index`] kept from the previous
    /// packet.
    fn fresh_values(&self, scratch: &mut Scratch) {
        scratch.indices.clear();
        if self.wide {
            scratch.vals.clear();
            scratch.vals.resize(self.nodes.len(), None);
        }
    }

    /// An index operand's value (the interpreter's: saturated to `u64::MAX`). One that
    /// depends on the packet alone is computed once per run ([`Scratch::indices`]).
    fn index(&self, n: N, pkt: &[u8], port: u64, scratch: &mut Scratch) -> u64 {
        // A constant (a session's counter index) first: one look at the node, none at the
        // program's other tables, which a mix of thousands of programs keeps out of cache.
        if let Some(Node::Const(b)) = self.nodes.get(n as usize) {
            return b.to_u64().unwrap_or(u64::MAX);
        }
        if self.is_narrow(n) {
            let pure = self.pure.get(n as usize).copied().unwrap_or(false);
            if pure && let Some(&(_, v)) = scratch.indices.iter().find(|(m, _)| *m == n) {
                return v;
            }
            let v = self.value64(n, pkt, port, scratch);
            if pure {
                scratch.indices.push((n, v));
            }
            v
        } else {
            self.eval(n, pkt, port, scratch)
                .to_u64()
                .unwrap_or(u64::MAX)
        }
    }

    /// Builds output `o` in `out`: by result `native.1`'s native code when it has some, else
    /// by interpreting its writes (their values evaluated once per packet: `evaluated`).
    #[allow(clippy::too_many_arguments)]
    fn output(
        &self,
        o: &OutProg,
        pkt: &[u8],
        port: u64,
        native: Option<(&jit::Compiled, usize)>,
        evaluated: &mut bool,
        out: &mut Vec<u8>,
        scratch: &mut Scratch,
    ) {
        let whole = o.begin(pkt, out);
        let done = native
            .is_some_and(|(c, i)| c.call(i, pkt, port, out, o.prefix_bytes, &scratch.jit_reads));
        if !done && !*evaluated && !self.lin.is_empty() {
            self.eval_all(pkt, port, scratch);
            *evaluated = true;
        }
        let ops: &[OutOp] = if done { &[] } else { &o.out };
        for op in ops {
            match op {
                OutOp::Copy { src, dst, len } => copy_bits(pkt, *src, out, *dst, *len),
                OutOp::Const { dst, value } => {
                    let _ = value.write_bits(out, *dst as usize);
                }
                OutOp::Bytes { dst, bytes } => {
                    if let Some(d) = out.get_mut(*dst..*dst + bytes.len()) {
                        d.copy_from_slice(bytes);
                    }
                }
                OutOp::Write {
                    dst,
                    n,
                    narrow: true,
                } => {
                    let v = match scratch.regs.get(*n as usize) {
                        Some(v) if !self.lin.is_empty() => *v,
                        _ => self.eval64(*n, pkt, port, scratch),
                    };
                    write_bits64(out, *dst, self.widths[*n as usize], v);
                }
                OutOp::Write { dst, n, .. } => {
                    let v = self.eval(*n, pkt, port, scratch);
                    let _ = v.write_bits(out, *dst as usize);
                }
            }
        }
        o.end(pkt, out, whole);
        if !o.cut.is_empty() {
            let t = o
                .cut
                .iter()
                .map(|n| self.index(*n, pkt, port, scratch))
                .min()
                .unwrap_or(u64::MAX);
            out.truncate(usize::try_from(t).unwrap_or(usize::MAX));
        }
    }

    /// A narrow `Hash` node's value (kept out of [`Program::eval64`] so that the common
    /// nodes stay cheap).
    /// With `regs`: the data's computed values are there ([`Program::eval_all`]).
    #[inline(never)]
    #[allow(clippy::too_many_arguments)]
    fn hash64(
        &self,
        n: N,
        algo: HashAlgo,
        w: u32,
        pkt: &[u8],
        port: u64,
        s: &mut Scratch,
        regs: Option<&[u64]>,
    ) -> u64 {
        if algo == HashAlgo::Lookup3 {
            let Node::Hash { data, .. } = &self.nodes[n as usize] else {
                return 0;
            };
            let elems: Vec<koi_hash::ubpf::Element> = data
                .iter()
                .map(|d| koi_hash::ubpf::Element {
                    value: match regs {
                        Some(r) => r[*d as usize],
                        None => self.eval64(*d, pkt, port, s),
                    },
                    width: self.widths[*d as usize],
                })
                .collect();
            return u64::from(koi_hash::ubpf::hash(&elems).unwrap_or(0)) & mask64(w);
        }
        let Some(Some(plan)) = self.plans.get(n as usize) else {
            return self.eval(n, pkt, port, s).low_u64();
        };
        if plan.aligned && algo == HashAlgo::Csum16 {
            // The Internet checksum summed piece by piece, without assembling the data.
            let mut sum = koi_hash::checksum::Csum16::default();
            for e in &plan.elems {
                match *e {
                    Elem::Pkt { off, len } => {
                        let (a, k) = ((off / 8) as usize, (len / 8) as usize);
                        sum.feed(pkt.get(a..a + k).unwrap_or(&[]));
                    }
                    Elem::Node(d) => {
                        let k = (self.widths[d as usize] / 8) as usize;
                        let v = match regs {
                            Some(r) => r[d as usize],
                            None => self.eval64(d, pkt, port, s),
                        };
                        sum.feed(&v.to_be_bytes()[8 - k..]);
                    }
                }
            }
            return koi_hash::v1model::truncate(u64::from(sum.finish()), w);
        }
        if plan.aligned {
            let mut buf = [0u8; ALIGNED_MAX];
            let mut at = 0usize;
            for e in &plan.elems {
                match *e {
                    Elem::Pkt { off, len } => {
                        let (a, k) = ((off / 8) as usize, (len / 8) as usize);
                        if let (Some(d), Some(src)) = (buf.get_mut(at..at + k), pkt.get(a..a + k)) {
                            copy_small(d, src);
                        }
                        at += k;
                    }
                    Elem::Node(d) => {
                        let k = (self.widths[d as usize] / 8) as usize;
                        let v = match regs {
                            Some(r) => r[d as usize],
                            None => self.eval64(d, pkt, port, s),
                        };
                        if let Some(dst) = buf.get_mut(at..at + k) {
                            copy_small(dst, &v.to_be_bytes()[8 - k..]);
                        }
                        at += k;
                    }
                }
            }
            let data = &buf[..at];
            let h = match algo {
                HashAlgo::Csum16 => u64::from(koi_hash::checksum::csum16(data)),
                _ => v1_algo(algo)
                    .and_then(|a| Calculation::new(a).compute_bytes(data))
                    .unwrap_or(0),
            };
            return koi_hash::v1model::truncate(h, w);
        }
        let mut buf = std::mem::take(&mut s.buf);
        let nbytes = plan.bits.div_ceil(8) as usize;
        buf.clear();
        buf.resize(nbytes, 0);
        let mut at = 0u32;
        for e in &plan.elems {
            match *e {
                Elem::Pkt { off, len } => {
                    copy_bits(pkt, off, &mut buf, at, len);
                    at += len;
                }
                Elem::Node(d) => {
                    let dw = self.widths[d as usize];
                    let v = match regs {
                        Some(r) => r[d as usize],
                        None => self.eval64(d, pkt, port, s),
                    };
                    write_bits64(&mut buf, at, dw, v);
                    at += dw;
                }
            }
        }
        let h = v1_algo(algo)
            .and_then(|a| Calculation::new(a).compute_bytes(&buf))
            .unwrap_or(0);
        s.buf = buf;
        koi_hash::v1model::truncate(h, w)
    }

    /// Whether node `n` and everything below it are at most 64 bits wide (computed once per
    /// program: [`Program::narrow`]).
    #[inline]
    fn is_narrow(&self, n: N) -> bool {
        match self.narrow.get(n as usize) {
            Some(b) => *b,
            None => self.narrow_below(n),
        }
    }

    fn narrow_below(&self, n: N) -> bool {
        self.widths[n as usize] <= 64
            && match &self.nodes[n as usize] {
                Node::Const(_) | Node::Pkt { .. } | Node::Port(_) | Node::Opaque(_) => true,
                Node::Un(_, a) | Node::Slice(a, ..) | Node::Cast(_, a) => self.is_narrow(*a),
                Node::Bin(_, a, b) => self.is_narrow(*a) && self.is_narrow(*b),
                Node::Mux(c, a, b) => {
                    self.is_narrow(*c) && self.is_narrow(*a) && self.is_narrow(*b)
                }
                Node::Hash { data, .. } => data.iter().all(|d| self.is_narrow(*d)),
                Node::HashResult { hash, .. } => self.is_narrow(*hash),
                Node::RegVal { fallback, .. } => self.is_narrow(*fallback),
                Node::CsumReplace { csum, old, new, .. } => {
                    self.is_narrow(*csum) && self.is_narrow(*old) && self.is_narrow(*new)
                }
                Node::PayloadCsum { csum, .. } => self.is_narrow(*csum),
            }
    }

    /// Evaluates every node of [`Program::lin`] once, children first, into `s.regs`.
    fn eval_all(&self, pkt: &[u8], port: u64, s: &mut Scratch) {
        // Every node of `lin` is written before a later one reads it: no clearing needed.
        let mut regs = std::mem::take(&mut s.regs);
        if regs.len() < self.nodes.len() {
            regs.resize(self.nodes.len(), 0);
        }
        for &n in &self.lin {
            let v = self.step(n, pkt, port, s, &regs);
            regs[n as usize] = v;
        }
        s.regs = regs;
    }

    /// Node `n`'s value from its operands' values in `r` (as [`Program::eval64`]).
    #[inline]
    fn step(&self, n: N, pkt: &[u8], port: u64, s: &mut Scratch, r: &[u64]) -> u64 {
        let w = self.widths[n as usize];
        let v = |a: &N| r[*a as usize];
        match &self.nodes[n as usize] {
            Node::Const(b) => b.low_u64(),
            Node::Pkt { off, w, .. } => crate::fastparse::read_bits(pkt, *off, *w),
            Node::Port(w) => port & mask64(*w),
            Node::Opaque(_) => 0,
            Node::Un(op, a) => unary64(*op, v(a), w),
            Node::Bin(op, a, b) => arith64(
                *op,
                v(a),
                v(b),
                self.widths[*a as usize],
                self.widths[*b as usize],
            ),
            Node::Slice(a, hi, lo) => (v(a) >> lo) & mask64(hi - lo + 1),
            Node::Cast(c, a) => cast64(*c, v(a), self.widths[*a as usize]),
            // Both sides are computed (nodes have no effects); the condition picks.
            Node::Mux(c, a, b) => {
                if v(c) != 0 {
                    v(a)
                } else {
                    v(b)
                }
            }
            Node::Hash { algo, w, .. } => self.hash64(n, *algo, *w, pkt, port, s, Some(r)),
            Node::HashResult { hash, base, max, w } => {
                koi_hash::v1model::hash_result(v(hash), *base, *max, (*w).min(64))
            }
            Node::RegVal { t, w, fallback } => match s.reads.get(*t as usize) {
                Some(Some(x)) => x.resize(*w).low_u64(),
                _ => v(fallback),
            },
            Node::CsumReplace {
                csum,
                old,
                new,
                four,
            } => csum_replace(v(csum), v(old), v(new), *four),
            Node::PayloadCsum { csum, start, odd } => payload_csum(v(csum), pkt, *start, *odd),
        }
    }

    /// The nodes the outputs' writes use, children first; empty if some node is wide or
    /// a node's operand does not come before it.
    fn output_nodes(&self) -> Vec<N> {
        let mut used = vec![false; self.nodes.len()];
        let mut stack: Vec<N> = Vec::new();
        for r in &self.results {
            if let Res::Send(_, o) = r {
                for op in &o.out {
                    if let OutOp::Write { n, .. } = op {
                        stack.push(*n);
                    }
                }
            }
        }
        while let Some(n) = stack.pop() {
            if std::mem::replace(&mut used[n as usize], true) {
                continue;
            }
            let kids: Vec<N> = match &self.nodes[n as usize] {
                Node::Un(_, a) | Node::Slice(a, ..) | Node::Cast(_, a) => vec![*a],
                Node::Bin(_, a, b) => vec![*a, *b],
                Node::Mux(c, a, b) => vec![*c, *a, *b],
                // A planned hash reads packet ranges itself: only its computed pieces.
                Node::Hash {
                    algo: HashAlgo::Lookup3,
                    data,
                    ..
                } => data.clone(),
                Node::Hash { data, .. } => match self.plans.get(n as usize) {
                    Some(Some(plan)) => plan
                        .elems
                        .iter()
                        .filter_map(|e| match e {
                            Elem::Node(d) => Some(*d),
                            Elem::Pkt { .. } => None,
                        })
                        .collect(),
                    _ => data.clone(),
                },
                Node::HashResult { hash, .. } => vec![*hash],
                Node::RegVal { fallback, .. } => vec![*fallback],
                Node::CsumReplace { csum, old, new, .. } => vec![*csum, *old, *new],
                Node::PayloadCsum { csum, .. } => vec![*csum],
                _ => Vec::new(),
            };
            for k in kids {
                if k >= n || self.widths[k as usize] > 64 {
                    return Vec::new();
                }
                stack.push(k);
            }
        }
        let lin: Vec<N> = (0..self.nodes.len() as N)
            .filter(|&n| used[n as usize])
            .collect();
        if lin.iter().any(|&n| self.widths[n as usize] > 64) {
            return Vec::new();
        }
        lin
    }

    /// Node `n`'s value, for a narrow node: the same bits as [`Program::eval`], in a `u64`.
    fn eval64(&self, n: N, pkt: &[u8], port: u64, s: &mut Scratch) -> u64 {
        let w = self.widths[n as usize];
        match &self.nodes[n as usize] {
            Node::Const(b) => b.low_u64(),
            Node::Pkt { off, w, .. } => crate::fastparse::read_bits(pkt, *off, *w),
            Node::Port(w) => port & mask64(*w),
            Node::Opaque(_) => 0,
            Node::Un(op, a) => unary64(*op, self.eval64(*a, pkt, port, s), w),
            Node::Bin(op, a, b) => {
                let wa = self.widths[*a as usize];
                let wb = self.widths[*b as usize];
                let x = self.eval64(*a, pkt, port, s);
                let y = self.eval64(*b, pkt, port, s);
                arith64(*op, x, y, wa, wb)
            }
            Node::Slice(a, hi, lo) => (self.eval64(*a, pkt, port, s) >> lo) & mask64(hi - lo + 1),
            Node::Cast(c, a) => {
                let wa = self.widths[*a as usize];
                cast64(*c, self.eval64(*a, pkt, port, s), wa)
            }
            Node::Mux(c, a, b) => {
                if self.eval64(*c, pkt, port, s) != 0 {
                    self.eval64(*a, pkt, port, s)
                } else {
                    self.eval64(*b, pkt, port, s)
                }
            }
            Node::Hash { algo, w, .. } => self.hash64(n, *algo, *w, pkt, port, s, None),
            Node::HashResult { hash, base, max, w } => {
                let h = self.eval64(*hash, pkt, port, s);
                koi_hash::v1model::hash_result(h, *base, *max, (*w).min(64))
            }
            // (`w` is at most 64: the value resized to it is its low `w` bits.)
            Node::RegVal { t, w, fallback } => match s.reads.get(*t as usize) {
                Some(Some(v)) => v.low_u64() & mask64(*w),
                _ => self.eval64(*fallback, pkt, port, s),
            },
            Node::CsumReplace {
                csum,
                old,
                new,
                four,
            } => {
                let c = self.eval64(*csum, pkt, port, s);
                let o = self.eval64(*old, pkt, port, s);
                let n = self.eval64(*new, pkt, port, s);
                csum_replace(c, o, n, *four)
            }
            Node::PayloadCsum { csum, start, odd } => {
                payload_csum(self.eval64(*csum, pkt, port, s), pkt, *start, *odd)
            }
        }
    }

    fn eval(&self, n: N, pkt: &[u8], port: u64, s: &mut Scratch) -> Bits {
        if s.vals.len() != self.nodes.len() {
            s.vals.clear();
            s.vals.resize(self.nodes.len(), None);
        }
        if let Some(Some(v)) = s.vals.get(n as usize) {
            return v.clone();
        }
        let v = match &self.nodes[n as usize] {
            Node::Const(b) => b.clone(),
            Node::Pkt { off, w, .. } => {
                Bits::read_bits(pkt, *off as usize, *w).unwrap_or_else(|_| Bits::zero(*w))
            }
            Node::Port(w) => Bits::from_u64(*w, port),
            Node::Opaque(w) => Bits::zero(*w),
            Node::Un(op, a) => unary(*op, &self.eval(*a, pkt, port, s)),
            Node::Bin(op, a, b) => {
                let x = self.eval(*a, pkt, port, s);
                let y = self.eval(*b, pkt, port, s);
                arith(*op, &x, &y)
            }
            Node::Slice(a, hi, lo) => self.eval(*a, pkt, port, s).slice(*hi, *lo),
            Node::Cast(c, a) => cast(*c, &self.eval(*a, pkt, port, s)),
            Node::Mux(c, a, b) => {
                if self.eval(*c, pkt, port, s).is_zero() {
                    self.eval(*b, pkt, port, s)
                } else {
                    self.eval(*a, pkt, port, s)
                }
            }
            Node::Hash {
                algo: HashAlgo::Lookup3,
                data,
                w,
            } => {
                let elems: Vec<koi_hash::ubpf::Element> = data
                    .iter()
                    .map(|d| {
                        let v = self.eval(*d, pkt, port, s);
                        koi_hash::ubpf::Element {
                            value: v.low_u64(),
                            width: v.width(),
                        }
                    })
                    .collect();
                Bits::from_u64(*w, u64::from(koi_hash::ubpf::hash(&elems).unwrap_or(0)))
            }
            Node::Hash { algo, data, w } => {
                let mut bits = std::mem::take(&mut s.bits);
                bits.clear();
                for d in data {
                    let v = self.eval(*d, pkt, port, s);
                    v.with_be_bytes(|b| bits.push(b, v.width() as usize));
                }
                let h = v1_algo(*algo)
                    .and_then(|a| Calculation::new(a).compute(&bits))
                    .unwrap_or(0);
                s.bits = bits;
                Bits::from_u64((*w).min(64), koi_hash::v1model::truncate(h, *w))
            }
            Node::RegVal { t, w, fallback } => match s.reads.get(*t as usize) {
                Some(Some(v)) => v.resize(*w),
                _ => self.eval(*fallback, pkt, port, s),
            },
            Node::CsumReplace {
                csum,
                old,
                new,
                four,
            } => {
                let c = self.eval(*csum, pkt, port, s).low_u64();
                let o = self.eval(*old, pkt, port, s).low_u64();
                let n = self.eval(*new, pkt, port, s).low_u64();
                Bits::from_u64(16, csum_replace(c, o, n, *four))
            }
            Node::PayloadCsum { csum, start, odd } => {
                let c = self.eval(*csum, pkt, port, s).low_u64();
                Bits::from_u64(16, payload_csum(c, pkt, *start, *odd))
            }
            Node::HashResult { hash, base, max, w } => {
                let h = self.eval(*hash, pkt, port, s).low_u64();
                Bits::from_u64(
                    *w,
                    koi_hash::v1model::hash_result(h, *base, *max, (*w).min(64)),
                )
            }
        };
        if let Some(slot) = s.vals.get_mut(n as usize) {
            *slot = Some(v.clone());
        }
        v
    }
}

/// Undoes the logged state updates, latest first.
fn undo(state: &mut State, log: &mut Vec<Undo>) {
    while let Some(u) = log.pop() {
        match u {
            Undo::Reg(r, i, v) => {
                if let Some(a) = state.register_mut(r) {
                    a.set(i, &v);
                }
            }
            Undo::Meter(m, i, c) => {
                if let Some(x) = state.meter_cell_mut(m, i) {
                    *x = c;
                }
            }
            Undo::DirectMeter(t, i, c) => {
                if let Some(x) = state.direct_meter_cell_mut(t, i) {
                    *x = c;
                }
            }
        }
    }
}

fn mask64(w: u32) -> u64 {
    if w >= 64 { u64::MAX } else { (1u64 << w) - 1 }
}

/// Sign-extends the `w`-bit value `x` to an `i128`.
fn sext(x: u64, w: u32) -> i128 {
    if w == 0 {
        return 0;
    }
    if (x >> (w - 1)) & 1 == 1 {
        i128::from((x | !mask64(w)) as i64)
    } else {
        i128::from(x)
    }
}

/// The interpreter's unary operators on a `u64` value of `w` (at most 64) bits.
pub(crate) fn unary64(op: UnOp, x: u64, w: u32) -> u64 {
    match op {
        UnOp::Not => u64::from(x == 0),
        UnOp::BitNot => !x & mask64(w),
        UnOp::Neg => x.wrapping_neg() & mask64(w),
    }
}

fn cast64(c: Cast, x: u64, wa: u32) -> u64 {
    match c {
        Cast::Resize { width, signed } => {
            if signed && width > wa && wa > 0 && (x >> (wa - 1)) & 1 == 1 {
                (x | !mask64(wa)) & mask64(width)
            } else {
                x & mask64(width)
            }
        }
        Cast::ToBool | Cast::FromBool => u64::from(x != 0),
    }
}

/// The interpreter's binary operators on `u64` values of widths `wa` and `wb` (at most 64;
/// the result too), bit for bit what [`arith`] computes on [`Bits`].
pub(crate) fn arith64(op: BinOp, x: u64, y: u64, wa: u32, wb: u32) -> u64 {
    use BinOp::*;
    let m = mask64(wa);
    let sx = || sext(x, wa);
    let sy = || sext(y, wb);
    match op {
        Add => x.wrapping_add(y) & m,
        Sub => x.wrapping_sub(y) & m,
        Mul => x.wrapping_mul(y) & m,
        Div => x.checked_div(y).unwrap_or(0),
        Mod => x.checked_rem(y).unwrap_or(0),
        AddSatU => x.checked_add(y).map_or(m, |v| v.min(m)),
        SubSatU => x.saturating_sub(y),
        AddSatS | SubSatS => {
            let v = if op == AddSatS {
                sx() + sy()
            } else {
                sx() - sy()
            };
            let (lo, hi) = if wa == 0 {
                (0, 0)
            } else {
                (-(1i128 << (wa - 1)), (1i128 << (wa - 1)) - 1)
            };
            (v.clamp(lo, hi) as u64) & m
        }
        BitAnd => x & y,
        BitOr => x | y,
        BitXor => x ^ y,
        Shl => {
            if y >= u64::from(wa) {
                0
            } else {
                (x << y) & m
            }
        }
        ShrU => {
            if y >= u64::from(wa) {
                0
            } else {
                x >> y
            }
        }
        ShrS => {
            let amt = y.min(127) as u32;
            ((sx() >> amt.min(127)) as u64) & m
        }
        Concat => {
            if wb >= 64 {
                y
            } else {
                (x << wb) | y
            }
        }
        Eq => u64::from(x == y),
        Ne => u64::from(x != y),
        LtU => u64::from(x < y),
        LeU => u64::from(x <= y),
        GtU => u64::from(x > y),
        GeU => u64::from(x >= y),
        LtS => u64::from(sx() < sy()),
        LeS => u64::from(sx() <= sy()),
        GtS => u64::from(sx() > sy()),
        GeS => u64::from(sx() >= sy()),
        And => u64::from(x != 0 && y != 0),
        Or => u64::from(x != 0 || y != 0),
    }
}

/// Writes the low `w` (at most 64) bits of `v` at bit `at` of `buf`, MSB first.
#[inline]
fn write_bits64(buf: &mut [u8], at: u32, w: u32, v: u64) {
    if w == 0 {
        return;
    }
    let first = (at / 8) as usize;
    if at.is_multiple_of(8) && w.is_multiple_of(8) {
        let n = (w / 8) as usize;
        match buf.get_mut(first..first + n) {
            Some([d]) => *d = v as u8,
            Some([a, b]) => [*a, *b] = (v as u16).to_be_bytes(),
            Some(d) => copy_small(d, &v.to_be_bytes()[8 - n..]),
            None => {}
        }
        return;
    }
    // Read-modify-write of the (at most 9) bytes the field spans, in a u128 window.
    let shift = at % 8;
    let n = (shift + w).div_ceil(8) as usize;
    let Some(span) = buf.get_mut(first..first + n) else {
        return;
    };
    let mut win: u128 = 0;
    for b in span.iter() {
        win = win << 8 | u128::from(*b);
    }
    let low = (n as u32) * 8 - shift - w;
    let m = (u128::from(mask64(w))) << low;
    win = (win & !m) | ((u128::from(v & mask64(w))) << low);
    for (i, b) in span.iter_mut().enumerate() {
        *b = (win >> (8 * (n - 1 - i))) as u8;
    }
}

/// `d.copy_from_slice(s)` for the few bytes of a field, without a call to `memcpy`.
#[inline(always)]
fn copy_small(d: &mut [u8], s: &[u8]) {
    for (x, y) in d.iter_mut().zip(s) {
        *x = *y;
    }
}

/// Copies `len` bits from `src` bit `from` to `dst` bit `to` (bytes when aligned).
fn copy_bits(src: &[u8], from: u32, dst: &mut [u8], to: u32, len: u32) {
    if from.is_multiple_of(8) && to.is_multiple_of(8) && len.is_multiple_of(8) {
        let (a, b, n) = ((from / 8) as usize, (to / 8) as usize, (len / 8) as usize);
        if let (Some(s), Some(d)) = (src.get(a..a + n), dst.get_mut(b..b + n)) {
            d.copy_from_slice(s);
        }
        return;
    }
    let mut done = 0;
    while done < len {
        let n = (len - done).min(64);
        if let Ok(v) = Bits::read_bits(src, (from + done) as usize, n) {
            let _ = v.write_bits(dst, (to + done) as usize);
        }
        done += n;
    }
}

fn v1_algo(a: HashAlgo) -> Option<HashAlgorithm> {
    Some(match a {
        HashAlgo::Crc32 => HashAlgorithm::Crc32,
        HashAlgo::Crc16 => HashAlgorithm::Crc16,
        HashAlgo::Identity => HashAlgorithm::Identity,
        HashAlgo::Csum16 => HashAlgorithm::Csum16,
        HashAlgo::Xor16 => HashAlgorithm::Xor16,
        // Custom CRCs take parameters from the control plane; random is random.
        _ => return None,
    })
}

fn truth(b: &Bits) -> bool {
    !b.is_zero()
}

/// The interpreter's binary operators, on bits (bools as 1-bit values): its own functions.
fn arith(op: BinOp, x: &Bits, y: &Bits) -> Bits {
    koi_interp::eval::arith(op, x, y).to_bits()
}

fn unary(op: UnOp, v: &Bits) -> Bits {
    koi_interp::eval::unary(op, Value::Bits(v.clone())).to_bits()
}

fn cast(c: Cast, v: &Bits) -> Bits {
    koi_interp::eval::cast(c, Value::Bits(v.clone())).to_bits()
}

/// An instance that ended during the traced run.
#[derive(Debug)]
enum Pass {
    Sent {
        port: u64,
        emitted: Vec<HeaderId>,
        slots: Vec<N>,
        cut: Vec<N>,
    },
    Dropped(DropReason),
}

/// What the tracer needs to know about the megaflow being built.
pub struct Known<'a> {
    pub layout: &'a FlowKeyLayout,
    /// The megaflow mask so far (it only grows).
    pub mask: &'a [u64],
    /// The PHV when the parse ended (the interpreter's byte layout).
    pub phv0: &'a [u8],
    /// Where the tracer notes each part of `phv0` it reads (bit offset, width): what a
    /// program it makes depends on beyond its trace ([`crate::memo`]).
    pub fixed: Option<&'a std::cell::RefCell<Vec<(u32, u32)>>>,
}

impl Known<'_> {
    /// The `w` bits at bit `off` of the PHV when the parse ended, noted in `fixed`.
    fn phv(&self, off: u32, w: u32) -> Bits {
        if let Some(f) = self.fixed {
            f.borrow_mut().push((off, w));
        }
        phv_value(self.phv0, off, w)
    }
}

/// What a tracer read outside its trace (see [`crate::memo`]): the parts of the PHV it
/// turned into constants (bit offset, width), and where each per-packet input it read at
/// the start comes from in the PHV (the first read slots; the architecture's later writes
/// of inputs take the next ones, in order).
#[derive(Clone, Debug, Default)]
pub struct TraceFacts {
    pub phv_reads: Vec<(u32, u32)>,
    pub inputs: Vec<(u32, u32)>,
}

impl TraceFacts {
    /// The read values a run on the packet with PHV `phv0` gives the program's inputs, whose
    /// architecture writes of inputs were `written` (for [`Scratch::preset_reads`]).
    pub fn reads(&self, phv0: &[u8], written: &[Bits]) -> Vec<Option<Bits>> {
        self.inputs
            .iter()
            .map(|&(off, w)| Some(phv_value(phv0, off, w)))
            .chain(written.iter().cloned().map(Some))
            .collect()
    }
}

/// How a [`Tracer`] starts, per pipeline (computed once per datapath, not per run): each PHV
/// slot's initial value, and the architecture's slots the tracer watches.
#[derive(Debug)]
pub struct TracerSetup {
    /// `Some(uBPF?)` for the architectures the tracer follows.
    ubpf: Option<bool>,
    slots: Vec<SlotInit>,
    egress_spec: Option<SlotId>,
    mcast_grp: Option<SlotId>,
    priority: Option<SlotId>,
    checksum_error: Option<SlotId>,
    /// Slots with values the program cannot compute (the packet's length in egress).
    opaque: Vec<SlotId>,
    /// Slots the architecture writes with a per-packet input ([`Input`]): timestamps.
    inputs: Vec<(SlotId, Input)>,
}

/// A PHV slot's value when tracing starts.
#[derive(Clone, Copy, Debug)]
enum SlotInit {
    /// Field `slot` of header `h`, `rel` bits into it: packet bits when the header was
    /// parsed, else its PHV value (at bit `phv_off`).
    Header {
        h: u32,
        rel: u32,
        w: u32,
        slot: SlotId,
        phv_off: u32,
    },
    Port(u32),
    Opaque(u32),
    /// A per-packet input the architecture set before the parser (the arrival timestamp, the
    /// packet's length), `w` bits at PHV bit `off`.
    Input {
        what: Input,
        off: u32,
        w: u32,
    },
    /// The varbit field `slot` (its header's last field) of header `h`, `rel` bits into it:
    /// as many packet bits as the parse's `extract` gave it.
    Varbit {
        h: u32,
        rel: u32,
        slot: SlotId,
    },
    /// A field of a header the pipeline does not have (the tracer gives up).
    Missing,
    /// Its value in the PHV when the parse ended.
    Phv {
        off: u32,
        w: u32,
    },
}

/// How the tracer takes the value of an architecture write.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WriteKind {
    /// As a constant of the program.
    Constant,
    /// As a per-packet input the program reads (a timestamp): the value matters only to the
    /// check at installation.
    Input(Input),
    /// As a value the program cannot compute (the packet's length in egress).
    Opaque,
}

impl TracerSetup {
    /// How the tracer takes the value of an architecture write of `slot`.
    pub fn write_kind(&self, slot: SlotId) -> WriteKind {
        if let Some(&(_, what)) = self.inputs.iter().find(|(s, _)| *s == slot) {
            WriteKind::Input(what)
        } else if self.opaque.contains(&slot) {
            WriteKind::Opaque
        } else {
            WriteKind::Constant
        }
    }

    pub fn new(p: &Pipeline) -> TracerSetup {
        let ubpf = match p.arch {
            Architecture::V1Model => Some(false),
            Architecture::Ubpf => Some(true),
            _ => None,
        };
        let opaque: Vec<SlotId> = p.intrinsic("packet_length").into_iter().collect();
        let inputs: Vec<(SlotId, Input)> = [
            ("ingress_global_timestamp", Input::Now),
            ("egress_global_timestamp", Input::Now),
            ("enq_timestamp", Input::Now),
            ("deq_timedelta", Input::Zero),
        ]
        .iter()
        .filter_map(|(n, what)| Some((p.intrinsic(n)?, *what)))
        .collect();
        // Set before the parser: the arrival time, the packet's length.
        let before = |id: SlotId| {
            if p.intrinsic("packet_length") == Some(id) {
                Some(Input::Len)
            } else if p.intrinsic("ingress_global_timestamp") == Some(id) {
                Some(Input::Now)
            } else {
                None
            }
        };
        let port = p
            .intrinsic("ingress_port")
            .or_else(|| p.intrinsic("input_port"));
        let slots = p
            .phv
            .slots
            .iter()
            .map(|(id, slot)| match slot.kind {
                SlotKind::HeaderField(h) => match p.phv.headers.get(h) {
                    Some(hd) if matches!(slot.ty, Ty::Varbit(_)) => SlotInit::Varbit {
                        h: h.index(),
                        rel: slot.offset - hd.offset,
                        slot: id,
                    },
                    Some(hd) => SlotInit::Header {
                        h: h.index(),
                        rel: slot.offset - hd.offset,
                        w: slot.width,
                        slot: id,
                        phv_off: slot.offset,
                    },
                    None => SlotInit::Missing,
                },
                _ if Some(id) == port => SlotInit::Port(slot.width),
                _ if let Some(what) = before(id) => SlotInit::Input {
                    what,
                    off: slot.offset,
                    w: slot.width,
                },
                _ if opaque.contains(&id) => SlotInit::Opaque(slot.width),
                _ => SlotInit::Phv {
                    off: slot.offset,
                    w: slot.width,
                },
            })
            .collect();
        TracerSetup {
            ubpf,
            slots,
            // uBPF: the port the packet leaves on.
            egress_spec: p
                .intrinsic("egress_spec")
                .or_else(|| p.intrinsic("output_port")),
            mcast_grp: p.intrinsic("mcast_grp"),
            priority: p.intrinsic("priority"),
            checksum_error: p.intrinsic("checksum_error"),
            opaque,
            inputs,
        }
    }
}

/// What [`Tracer::parser_value`] follows a parser assignment's expression with: the parse,
/// the stack elements the expression's run-time indices named (in evaluation order), the
/// node of each variable assigned so far, and where the `lookahead`s read.
struct ParserCx<'a, 'r> {
    parsed: &'a Parsed,
    reads: &'r mut std::slice::Iter<'a, u32>,
    vars: &'r [Option<N>],
    /// The cursor of each `lookahead`, in order, and the slot a `lookahead` being followed
    /// writes (`None`: a later assignment overwrites it).
    aheads: &'r mut std::slice::Iter<'a, u32>,
    ahead_slot: Option<SlotId>,
}

/// Follows one slow-path run symbolically; see the module documentation.
#[derive(Debug)]
pub struct Tracer<'p> {
    p: &'p Pipeline,
    /// Each varbit field: its slot, the node it started with (its packet bits) and the
    /// length the parse gave it. A varbit is followed only unchanged and only into emits
    /// and checksums; any other read, or a write, leaves the run uncompiled.
    varbits: Vec<(SlotId, N, u32)>,
    drop_port: u64,
    nodes: Vec<Node>,
    slots: Vec<N>,
    frames: Vec<Vec<N>>,
    pending: Option<Vec<N>>,
    failed: Option<&'static str>,
    emitted: Vec<HeaderId>,
    state: Vec<StateOp>,
    /// The instances that ended so far: sent (port, headers emitted, final values) or dropped.
    passes: Vec<Pass>,
    /// The PHV as the parse left it: where an ingress clone starts.
    initial: Vec<N>,
    /// The instances queued for egress passes, in the traffic manager's order: each the PHV
    /// it was queued with (the packet, a multicast replica with its `egress_rid`, a clone)
    /// and its `truncate` lengths.
    queue: std::collections::VecDeque<(Vec<N>, Vec<N>)>,
    /// While a clone is being made: the PHV and `truncate` lengths of the packet it is made
    /// from (the current ones are the clone's).
    copying: Option<(Vec<N>, Vec<N>)>,
    /// The current instance's `truncate` lengths (v1model).
    cut: Vec<N>,
    /// The last `digest` called in ingress: sent when ingress ends.
    pending_digest: Option<StateOp>,
    /// Register reads: how many, the values the interpreter read (for the check at
    /// installation), and the read whose value the next extern report carries.
    reads: u32,
    read_values: Vec<Option<Bits>>,
    pending_read: Option<u32>,
    /// Direct meters with a colour from the table being applied, and its read slot.
    meter_colors: Vec<(ExternId, u32)>,
    /// A uBPF program: no traffic manager; `mark_to_drop`/`mark_to_pass` set a flag the
    /// interpreter reports as a drop, and any `output_port` is a port.
    ubpf: bool,
    /// The architecture slots it watches (`egress_spec`, ...) and the slots' initial values.
    setup: Arc<TracerSetup>,
    payload_start: usize,
    cursor_bits: u32,
    /// What the start of the run read of the PHV: where its per-packet inputs are (bit
    /// offset, width; the first read slots), and the slots that started as constants from it
    /// (slot, node, bit offset, width).
    inputs: Vec<(u32, u32)>,
    consts: Vec<(u32, N, u32, u32)>,
}

impl<'p> Tracer<'p> {
    /// A tracer for a run whose parse ended with the PHV `phv0` and the headers where
    /// `parsed` says; `None` if the run cannot be compiled (not v1model or uBPF, a parse the fast
    /// parser did not follow).
    pub fn new(
        p: &'p Pipeline,
        setup: &Arc<TracerSetup>,
        drop_port: u64,
        fast: &FastParser,
        parsed: &Parsed,
        phv0: &[u8],
    ) -> Option<Tracer<'p>> {
        let ubpf = setup.ubpf?;
        if !parsed.cursor.is_multiple_of(8) || parsed.reextracted {
            return None;
        }
        let mut t = Tracer {
            p,
            drop_port,
            nodes: Vec::with_capacity(2 * setup.slots.len()),
            slots: Vec::with_capacity(setup.slots.len()),
            frames: Vec::new(),
            pending: None,
            failed: None,
            emitted: Vec::new(),
            // (Every run starts with its inputs: the arrival time and the length.)
            state: Vec::with_capacity(8),
            passes: Vec::new(),
            initial: Vec::new(),
            queue: std::collections::VecDeque::new(),
            copying: None,
            cut: Vec::new(),
            pending_digest: None,
            reads: 0,
            read_values: Vec::with_capacity(4),
            pending_read: None,
            meter_colors: Vec::new(),
            ubpf,
            setup: Arc::clone(setup),
            payload_start: (parsed.cursor / 8) as usize,
            cursor_bits: parsed.cursor,
            varbits: Vec::new(),
            inputs: Vec::new(),
            consts: Vec::with_capacity(setup.slots.len()),
        };
        for init in &setup.slots {
            let node = match *init {
                SlotInit::Header {
                    h,
                    rel,
                    w,
                    slot,
                    phv_off,
                } => match parsed.hdr_off.get(h as usize).copied()? {
                    NONE => {
                        t.consts
                            .push((t.slots.len() as u32, t.nodes.len() as N, phv_off, w));
                        Node::Const(phv_value(phv0, phv_off, w))
                    }
                    off => Node::Pkt {
                        off: off + rel,
                        w,
                        slot,
                    },
                },
                SlotInit::Port(w) => Node::Port(w),
                SlotInit::Opaque(w) => Node::Opaque(w),
                SlotInit::Input { what, off, w } => {
                    t.inputs.push((off, w));
                    let n = t.input(what, phv_value(phv0, off, w), w);
                    t.slots.push(n);
                    continue;
                }
                SlotInit::Varbit { h, rel, slot } => {
                    let len = parsed.varbit.get(h as usize).copied()?;
                    let node = match parsed.hdr_off.get(h as usize).copied()? {
                        off if off != NONE && len > 0 => Node::Pkt {
                            off: off + rel,
                            w: len,
                            slot,
                        },
                        // (Never evaluated: emits and checksums leave it out.)
                        _ => Node::Const(Bits::zero(0)),
                    };
                    let n = t.add(node);
                    t.varbits.push((slot, n, len));
                    t.slots.push(n);
                    continue;
                }
                SlotInit::Phv { off, w } => {
                    t.consts
                        .push((t.slots.len() as u32, t.nodes.len() as N, off, w));
                    Node::Const(phv_value(phv0, off, w))
                }
                SlotInit::Missing => return None,
            };
            let n = t.add(node);
            t.slots.push(n);
        }
        // The parser's assignments, in the order they ran, with the stack elements each read.
        // A variable read before any assignment has its value at the start of the parse, 0.
        let mut vars: Vec<Option<N>> = vec![None; fast.vars()];
        let mut aheads = parsed.lookaheads.iter();
        for (i, id) in parsed.assigned.iter().enumerate() {
            let (dst, e) = fast.assignment(*id)?;
            let &(from, to) = parsed.assigned_reads.get(i)?;
            let mut reads = parsed.stack_reads.get(from as usize..to as usize)?.iter();
            // A `lookahead` is its slot's value when the parse ended if nothing wrote the slot
            // after it. An overwritten one is not followed: the flow key holds the slot's final
            // value only, so the megaflow would not fix the path it decided.
            let last_write = matches!(e, Ex::Ahead(_))
                && !parsed.assigned[i + 1..]
                    .iter()
                    .any(|j| fast.assignment(*j).is_some_and(|(d, _)| d == dst));
            let mut cx = ParserCx {
                parsed,
                reads: &mut reads,
                vars: &vars,
                aheads: &mut aheads,
                ahead_slot: last_write.then_some(*dst),
            };
            let n = t.parser_value(e, &mut cx)?;
            let w = p.phv.slots.get(*dst)?.width;
            let n = if t.width(n) != w {
                t.add(Node::Cast(
                    Cast::Resize {
                        width: w,
                        signed: false,
                    },
                    n,
                ))
            } else {
                n
            };
            *t.slots.get_mut(dst.index() as usize)? = n;
            if let Some(v) = fast.var_of(*dst).and_then(|v| vars.get_mut(v as usize)) {
                *v = Some(n);
            }
        }
        t.initial = t.slots.clone();
        Some(t)
    }

    /// A value the parser computed, as a node; `reads` are the stack elements its run-time
    /// indices named, in evaluation order.
    fn parser_value(&mut self, e: &Ex, cx: &mut ParserCx<'_, '_>) -> Option<N> {
        let parsed = cx.parsed;
        Some(match e {
            Ex::Field { h, off, w, slot } => {
                let base = *parsed.hdr_off.get(*h as usize)?;
                if base == NONE {
                    self.add(Node::Const(Bits::zero(*w)))
                } else {
                    self.add(Node::Pkt {
                        off: base + off,
                        w: *w,
                        slot: *slot,
                    })
                }
            }
            Ex::Valid(h) => {
                let v = *parsed.valid.get(*h as usize)?;
                self.add(Node::Const(Bits::from_bool(v)))
            }
            // The index when the parse ended, not necessarily when the assignment ran.
            Ex::Next(_) => return None,
            Ex::Port(w) => self.add(Node::Port(*w)),
            Ex::Len(w) => self.add(Node::Opaque(*w)),
            Ex::Const(v, w) => self.add(Node::Const(Bits::from_u64(*w, *v))),
            // Only while its slot keeps these bits to the end of the parse: the megaflow fixes
            // a `lookahead` through that slot's final value, which an overwritten one is not.
            Ex::Ahead(w) => {
                let off = *cx.aheads.next()?;
                self.add(Node::Pkt {
                    off,
                    w: *w,
                    slot: cx.ahead_slot?,
                })
            }
            // An overwritten field: its last assignment on this path, else the packet's bits
            // (a header extracted again after an assignment leaves the run untraced).
            Ex::Over { var, field } => match *cx.vars.get(*var as usize)? {
                Some(n) => n,
                None => self.parser_value(field, cx)?,
            },
            // Bits of a wide `lookahead`'s value (the node its last run gave the variable).
            Ex::AheadSlice { var, hi, lo, .. } => match *cx.vars.get(*var as usize)? {
                Some(n) => self.add(Node::Slice(n, *hi, *lo)),
                None => self.add(Node::Const(Bits::zero(hi - lo + 1))),
            },
            // The variable's last assignment on this path, else its value at the start.
            Ex::Var(v, w) => match *cx.vars.get(*v as usize)? {
                Some(n) => n,
                None => self.add(Node::Const(Bits::zero(*w))),
            },
            Ex::Bin(op, a, b, ..) => {
                let a = self.parser_value(a, cx)?;
                let b = self.parser_value(b, cx)?;
                self.add(Node::Bin(*op, a, b))
            }
            Ex::Un(op, a, _) => {
                let a = self.parser_value(a, cx)?;
                self.add(Node::Un(*op, a))
            }
            // The element the index named then (a path-fixed index reads no other element).
            Ex::StackField {
                elems,
                slots,
                index,
                off,
                w,
            } if crate::fastparse::path_fixed(index) => {
                let h = *cx.reads.next()?;
                let Some(i) = elems.iter().position(|&x| x == h) else {
                    return Some(self.add(Node::Const(Bits::zero(*w))));
                };
                match *parsed.hdr_off.get(h as usize)? {
                    NONE => self.add(Node::Const(Bits::zero(*w))),
                    base => self.add(Node::Pkt {
                        off: base + off,
                        w: *w,
                        slot: *slots.get(i)?,
                    }),
                }
            }
            Ex::StackField { .. } => return None,
            Ex::Slice(v, lo, w) => {
                let v = self.parser_value(v, cx)?;
                self.add(Node::Slice(v, lo + w - 1, *lo))
            }
            Ex::Concat(a, b, _) => {
                let a = self.parser_value(a, cx)?;
                let b = self.parser_value(b, cx)?;
                self.add(Node::Bin(BinOp::Concat, a, b))
            }
            Ex::Trunc(v, w) => {
                let v = self.parser_value(v, cx)?;
                self.add(Node::Cast(
                    Cast::Resize {
                        width: *w,
                        signed: false,
                    },
                    v,
                ))
            }
            Ex::Sext(v, _, to) => {
                let v = self.parser_value(v, cx)?;
                self.add(Node::Cast(
                    Cast::Resize {
                        width: *to,
                        signed: true,
                    },
                    v,
                ))
            }
        })
    }

    fn add(&mut self, n: Node) -> N {
        self.nodes.push(n);
        (self.nodes.len() - 1) as N
    }

    /// For a checksum over `data` and, with `payload`, the packet's payload: `Some(None)`
    /// without the payload; `Some(Some(odd))` for `csum16` over whole bytes of data (`odd`:
    /// an odd number of them), which [`Node::PayloadCsum`] continues over the payload;
    /// `None` for anything else (not followed).
    fn payload_parity(&self, payload: bool, algo: HashAlgo, data: &[N]) -> Option<Option<bool>> {
        if !payload {
            return Some(None);
        }
        let bits: u32 = data.iter().map(|n| self.width(*n)).sum();
        (algo == HashAlgo::Csum16 && bits.is_multiple_of(8)).then_some(Some((bits / 8) % 2 == 1))
    }

    fn is_varbit(&self, slot: SlotId) -> bool {
        self.p
            .phv
            .slots
            .get(slot)
            .is_some_and(|s| matches!(s.ty, Ty::Varbit(_)))
    }

    /// Varbit `slot`'s node and length in `slots` (a pass's values), if it still holds the
    /// packet bits a parse's `extract` gave a varbit field.
    fn varbit_node(&self, slots: &[N], slot: SlotId) -> Option<(N, u32)> {
        let &(_, n, len) = self.varbits.iter().find(|v| v.0 == slot)?;
        (*slots.get(slot.index() as usize)? == n).then_some((n, len))
    }

    fn fail(&mut self, why: &'static str) {
        if self.failed.is_none() {
            self.failed = Some(why);
        }
    }

    /// Why the run cannot be compiled, if it cannot.
    pub fn failed(&self) -> Option<&'static str> {
        self.failed
    }

    fn width(&self, n: N) -> u32 {
        node_width(&self.nodes, n)
    }

    /// The constant value of `n`, if the megaflow fixes it.
    fn konst(&self, n: N, k: &Known<'_>) -> Option<Bits> {
        match &self.nodes[n as usize] {
            Node::Const(b) => Some(b.clone()),
            Node::Pkt { slot, w, .. } => {
                let s = self.p.phv.slots.get(*slot)?;
                // (A varbit's bits are not its slot's: never a constant.)
                if *w != s.width {
                    return None;
                }
                fully_masked(k, *slot, s.width).then(|| k.phv(s.offset, s.width))
            }
            Node::Port(_) => {
                let slot = self.p.intrinsic("ingress_port")?;
                let s = self.p.phv.slots.get(slot)?;
                fully_masked(k, slot, s.width).then(|| k.phv(s.offset, s.width))
            }
            _ => None,
        }
    }

    fn constant(&mut self, b: Bits) -> N {
        self.add(Node::Const(b))
    }

    /// Builds a node, folding it when its operands are constants.
    fn fold(&mut self, n: Node, k: &Known<'_>) -> N {
        let c = |x: N| self.konst(x, k);
        let folded = match &n {
            Node::Bin(op, a, _) if *op == BinOp::And && c(*a).is_some_and(|x| !truth(&x)) => {
                Some(Bits::from_bool(false))
            }
            Node::Bin(op, a, _) if *op == BinOp::Or && c(*a).is_some_and(|x| truth(&x)) => {
                Some(Bits::from_bool(true))
            }
            Node::Mux(cond, a, b) => match c(*cond) {
                Some(x) => return if truth(&x) { *a } else { *b },
                None => None,
            },
            n => operation(n, c),
        };
        match folded {
            Some(b) => self.constant(b),
            None => self.add(n),
        }
    }

    fn expr(&mut self, e: &Expr, params: &[Bits], k: &Known<'_>) -> Option<N> {
        Some(match e {
            Expr::Const(b) => self.constant(b.clone()),
            Expr::Bool(b) => self.constant(Bits::from_bool(*b)),
            Expr::Slot(s) if self.is_varbit(*s) => return None,
            Expr::Slot(s) => *self.slots.get(s.index() as usize)?,
            Expr::Param(i) => match self.frames.last() {
                Some(f) => *f.get(*i as usize)?,
                None => self.constant(params.get(*i as usize)?.clone()),
            },
            Expr::IsValid(h) => {
                let h = self.header(h, params, k)?;
                match h {
                    Some(h) => {
                        let v = self.p.phv.headers.get(h)?.valid;
                        self.slots[v.index() as usize]
                    }
                    None => self.constant(Bits::from_bool(false)),
                }
            }
            Expr::StackField {
                stack,
                index,
                field,
            } => {
                let i = self.expr(index, params, k)?;
                if self.konst(i, k).is_none() {
                    // An index no decision fixed: a choice among the elements.
                    return self.stack_read(*stack, i, *field, k);
                }
                match self.stack_slot(*stack, index, *field, params, k)? {
                    Ok(s) => self.slots[s.index() as usize],
                    Err(w) => self.constant(Bits::zero(w)),
                }
            }
            Expr::Unary(op, a) => {
                let a = self.expr(a, params, k)?;
                self.fold(Node::Un(*op, a), k)
            }
            Expr::Binary(op, a, b) => {
                let a = self.expr(a, params, k)?;
                let b = self.expr(b, params, k)?;
                self.fold(Node::Bin(*op, a, b), k)
            }
            Expr::Slice { value, hi, lo } => {
                let v = self.expr(value, params, k)?;
                self.fold(Node::Slice(v, *hi, *lo), k)
            }
            Expr::Cast(c, v) => {
                let v = self.expr(v, params, k)?;
                self.fold(Node::Cast(*c, v), k)
            }
            Expr::Mux {
                cond,
                then,
                otherwise,
            } => {
                let c = self.expr(cond, params, k)?;
                let a = self.expr(then, params, k)?;
                let b = self.expr(otherwise, params, k)?;
                self.fold(Node::Mux(c, a, b), k)
            }
        })
    }

    /// The header a reference denotes (`Some(None)`: an index out of range); `None` if it
    /// is not fixed.
    fn header(
        &mut self,
        h: &HeaderRef,
        params: &[Bits],
        k: &Known<'_>,
    ) -> Option<Option<HeaderId>> {
        match h {
            HeaderRef::Header(h) => Some(Some(*h)),
            HeaderRef::Index(s, e) => {
                let i = self.expr(e, params, k)?;
                let i = self.konst(i, k)?.to_u64().unwrap_or(u64::MAX);
                let st = self.p.phv.stacks.get(*s)?;
                Some(
                    usize::try_from(i)
                        .ok()
                        .and_then(|i| st.elems.get(i).copied()),
                )
            }
            HeaderRef::Next(_) | HeaderRef::Last(_) => None,
        }
    }

    fn stack_slot(
        &mut self,
        stack: StackId,
        index: &Expr,
        field: u32,
        params: &[Bits],
        k: &Known<'_>,
    ) -> Option<Result<SlotId, u32>> {
        let i = self.expr(index, params, k)?;
        let i = self.konst(i, k)?.to_u64().unwrap_or(u64::MAX);
        let st = self.p.phv.stacks.get(stack)?;
        let h = usize::try_from(i).ok().and_then(|i| st.elems.get(i));
        match h {
            Some(h) => Some(Ok(*self
                .p
                .phv
                .headers
                .get(*h)?
                .fields
                .get(field as usize)?)),
            None => {
                let h = self.p.phv.headers.get(*st.elems.first()?)?;
                let s = self.p.phv.slots.get(*h.fields.get(field as usize)?)?;
                Some(Err(s.width))
            }
        }
    }

    /// Field `field` of element `i` (a value) of `stack`, as the interpreter reads it: the
    /// element's field, or 0 past the end.
    fn stack_read(&mut self, stack: StackId, i: N, field: u32, k: &Known<'_>) -> Option<N> {
        let elems = self.stack_elems(stack, i, field, k)?;
        let st = self.p.phv.stacks.get(stack)?;
        let first = self.p.phv.headers.get(*st.elems.first()?)?;
        let w = self
            .p
            .phv
            .slots
            .get(*first.fields.get(field as usize)?)?
            .width;
        let mut acc = self.constant(Bits::zero(w));
        for (eq, slot) in elems.into_iter().rev() {
            let v = self.slots[slot.index() as usize];
            acc = self.fold(Node::Mux(eq, v, acc), k);
        }
        Some(acc)
    }

    /// For each element of `stack` index `i` (a value) can reach: the condition that `i` is
    /// its index, and the slot of its field `field`.
    fn stack_elems(
        &mut self,
        stack: StackId,
        i: N,
        field: u32,
        k: &Known<'_>,
    ) -> Option<Vec<(N, SlotId)>> {
        let elems = self.p.phv.stacks.get(stack)?.elems.clone();
        let wi = self.width(i);
        let mut out = Vec::with_capacity(elems.len());
        for (j, h) in elems.iter().enumerate() {
            if wi < 64 && (j as u64) >> wi != 0 {
                break; // the index cannot reach this element, nor the ones after it
            }
            let slot = *self.p.phv.headers.get(*h)?.fields.get(field as usize)?;
            let jn = self.constant(Bits::from_u64(wi, j as u64));
            let eq = self.fold(Node::Bin(BinOp::Eq, i, jn), k);
            out.push((eq, slot));
        }
        Some(out)
    }

    /// `v` zero-extended or truncated to `w` bits.
    fn resized(&mut self, v: N, w: u32, k: &Known<'_>) -> N {
        if self.width(v) == w {
            return v;
        }
        let c = Cast::Resize {
            width: w,
            signed: false,
        };
        self.fold(Node::Cast(c, v), k)
    }

    /// Writes `v` into field `field` of element `i` (a value) of `stack`.
    fn stack_write(&mut self, stack: StackId, i: N, field: u32, v: N, k: &Known<'_>) -> Option<()> {
        for (eq, slot) in self.stack_elems(stack, i, field, k)? {
            let w = self.p.phv.slots.get(slot)?.width;
            let v = self.resized(v, w, k);
            let old = self.slots[slot.index() as usize];
            let m = self.fold(Node::Mux(eq, v, old), k);
            self.slots[slot.index() as usize] = m;
        }
        Some(())
    }

    fn write_place(&mut self, dst: &Place, v: N, params: &[Bits], k: &Known<'_>) -> Option<()> {
        let (slot, hi_lo) = match dst {
            Place::Slot(s) => (*s, None),
            Place::Slice { slot, hi, lo } => (*slot, Some((*hi, *lo))),
            Place::StackField {
                stack,
                index,
                field,
            } => {
                let i = self.expr(index, params, k)?;
                if self.konst(i, k).is_none() {
                    // An index no decision fixed: every element keeps its value unless it
                    // is the one indexed (none past the end).
                    return self.stack_write(*stack, i, *field, v, k);
                }
                match self.stack_slot(*stack, index, *field, params, k)? {
                    Ok(s) => (s, None),
                    Err(_) => return Some(()),
                }
            }
        };
        let s = self.p.phv.slots.get(slot)?;
        let w = s.width;
        let v = match hi_lo {
            None => self.resized(v, w, k),
            Some((hi, lo)) => {
                // old[w-1:hi+1] ++ v ++ old[lo-1:0]
                let old = self.slots[slot.index() as usize];
                let mut acc = self.resized(v, hi - lo + 1, k);
                if hi + 1 < w {
                    let top = self.fold(Node::Slice(old, w - 1, hi + 1), k);
                    acc = self.fold(Node::Bin(BinOp::Concat, top, acc), k);
                }
                if lo > 0 {
                    let bottom = self.fold(Node::Slice(old, lo - 1, 0), k);
                    acc = self.fold(Node::Bin(BinOp::Concat, acc, bottom), k);
                }
                acc
            }
        };
        self.slots[slot.index() as usize] = v;
        Some(())
    }

    fn set_slot_const(&mut self, s: SlotId, v: Bits) {
        let w = self.p.phv.slots.get(s).map_or(v.width(), |x| x.width);
        let n = self.constant(v.resize(w));
        if let Some(x) = self.slots.get_mut(s.index() as usize) {
            *x = n;
        }
    }

    fn validity(&self, h: HeaderId, k: &Known<'_>) -> Option<bool> {
        let v = self.p.phv.headers.get(h)?.valid;
        self.konst(self.slots[v.index() as usize], k)
            .map(|b| truth(&b))
    }

    fn set_valid(&mut self, h: HeaderId, k: &Known<'_>) -> Option<()> {
        let hd = self.p.phv.headers.get(h)?.clone();
        if !self.validity(h, k)? {
            for f in &hd.fields {
                let w = self.p.phv.slots.get(*f)?.width;
                self.set_slot_const(*f, Bits::zero(w));
            }
            self.set_slot_const(hd.valid, Bits::from_bool(true));
        }
        self.invalidate_siblings(h);
        Some(())
    }

    fn invalidate_siblings(&mut self, h: HeaderId) {
        let Some(u) = self.p.phv.headers.get(h).and_then(|x| x.union) else {
            return;
        };
        let members: Vec<HeaderId> = self
            .p
            .phv
            .unions
            .get(u)
            .map_or(Vec::new(), |u| u.members.clone());
        for m in members.into_iter().filter(|m| *m != h) {
            if let Some(v) = self.p.phv.headers.get(m).map(|x| x.valid) {
                self.set_slot_const(v, Bits::from_bool(false));
            }
        }
    }

    fn copy_header(&mut self, dst: HeaderId, src: HeaderId) -> Option<()> {
        let d = self.p.phv.headers.get(dst)?;
        let s = self.p.phv.headers.get(src)?;
        for (a, b) in d.fields.iter().zip(&s.fields) {
            self.slots[a.index() as usize] = self.slots[b.index() as usize];
        }
        self.slots[d.valid.index() as usize] = self.slots[s.valid.index() as usize];
        Some(())
    }

    /// A statement of the run (from the end of the first parse on).
    pub fn stmt(&mut self, s: &Stmt, params: &[Bits], k: &Known<'_>) {
        // While an ingress clone is made, the statements are its parse, which ends as the
        // first parse did (the same bytes, the same ingress port).
        if self.failed.is_some() || self.copying.is_some() {
            return;
        }
        if self.exec(s, params, k).is_none() {
            // (A builtin by its name: what `koi bench` reports a replay for.)
            self.fail(match s {
                Stmt::Builtin(b) => b.name(),
                _ => "statement",
            });
        }
    }

    fn exec(&mut self, s: &Stmt, params: &[Bits], k: &Known<'_>) -> Option<()> {
        match s {
            // A varbit copied whole (as an aggregate's element is copied in): the copy holds
            // the same packet bits and length.
            Stmt::Assign {
                dst: Place::Slot(d),
                value: Expr::Slot(s),
            } if self.is_varbit(*d) => {
                let (n, len) = self.varbit_node(&self.slots, *s)?;
                self.varbits.retain(|v| v.0 != *d);
                self.varbits.push((*d, n, len));
                *self.slots.get_mut(d.index() as usize)? = n;
                Some(())
            }
            Stmt::Assign { dst, value } => {
                let v = self.expr(value, params, k)?;
                self.write_place(dst, v, params, k)
            }
            Stmt::SetValid(h) => match self.header(h, params, k)? {
                Some(h) => self.set_valid(h, k),
                None => Some(()),
            },
            Stmt::SetInvalid(h) => {
                if let Some(h) = self.header(h, params, k)? {
                    let v = self.p.phv.headers.get(h)?.valid;
                    self.set_slot_const(v, Bits::from_bool(false));
                }
                Some(())
            }
            Stmt::CopyHeader { dst, src } => {
                let d = self.header(dst, params, k)?;
                let s = self.header(src, params, k)?;
                match (d, s) {
                    (Some(d), Some(s)) => {
                        self.copy_header(d, s)?;
                        if self.validity(d, k)? {
                            self.invalidate_siblings(d);
                        }
                        Some(())
                    }
                    (Some(d), None) => {
                        let v = self.p.phv.headers.get(d)?.valid;
                        self.set_slot_const(v, Bits::from_bool(false));
                        Some(())
                    }
                    (None, _) => Some(()),
                }
            }
            Stmt::PushFront { stack, count } => self.shift(*stack, i64::from(*count), k),
            Stmt::PopFront { stack, count } => self.shift(*stack, -i64::from(*count), k),
            Stmt::Emit(h) => {
                let h = self.header(h, params, k)?;
                if let Some(h) = h
                    && self.validity(h, k)?
                {
                    self.emitted.push(h);
                }
                Some(())
            }
            Stmt::CallAction { args, .. } => {
                let mut a = Vec::with_capacity(args.len());
                for e in args {
                    a.push(self.expr(e, params, k)?);
                }
                self.pending = Some(a);
                Some(())
            }
            Stmt::ExternCall {
                instance,
                method,
                args,
                result,
            } => {
                let kind = &self.p.externs.get(*instance)?.kind;
                match (kind, method.as_str()) {
                    (ExternKind::Counter { .. }, "count") if result.is_none() => {
                        let idx = match args.first() {
                            Some(koi_ir::Arg::In(e)) => self.expr(e, params, k)?,
                            _ => self.constant(Bits::zero(32)),
                        };
                        self.state.push(StateOp::Count(*instance, idx));
                        Some(())
                    }
                    (ExternKind::DirectCounter { .. }, "count") => Some(()),
                    (ExternKind::Register { elem, .. }, "read") => {
                        if !matches!(elem, Ty::Bits(_)) {
                            return None;
                        }
                        let idx = self.index_arg(args, 0, params, k)?;
                        let dst = extern_dst(result, args)?;
                        let (w, old) = self.place_value(&dst, params, k)?;
                        // Out of range: a return value reads as zero, an `out` argument keeps
                        // its value (the interpreter's semantics).
                        let fallback = match result {
                            Some(_) => self.constant(Bits::zero(w)),
                            None => old,
                        };
                        let t = self.next_read();
                        self.state.push(StateOp::RegRead(*instance, idx, t));
                        self.pending_read = Some(t);
                        let v = self.add(Node::RegVal { t, w, fallback });
                        self.write_place(&dst, v, params, k)
                    }
                    (ExternKind::Meter { .. }, "execute_meter") => {
                        let idx = self.index_arg(args, 0, params, k)?;
                        let dst = extern_dst(result, args)?;
                        // An index out of range executes nothing and writes nothing.
                        let (w, old) = self.place_value(&dst, params, k)?;
                        let t = self.next_read();
                        self.state.push(StateOp::Meter(*instance, idx, t));
                        self.pending_read = Some(t);
                        let v = self.add(Node::RegVal {
                            t,
                            w,
                            fallback: old,
                        });
                        self.write_place(&dst, v, params, k)
                    }
                    (ExternKind::DirectMeter { .. }, "read") => {
                        let dst = extern_dst(result, args)?;
                        // No colour (the table missed, or was not applied): nothing is written.
                        let Some(&(_, t)) = self.meter_colors.iter().find(|(e, _)| e == instance)
                        else {
                            return Some(());
                        };
                        let (w, old) = self.place_value(&dst, params, k)?;
                        self.pending_read = Some(t);
                        let v = self.add(Node::RegVal {
                            t,
                            w,
                            fallback: old,
                        });
                        self.write_place(&dst, v, params, k)
                    }
                    (ExternKind::Register { .. }, "write") => {
                        let idx = self.index_arg(args, 0, params, k)?;
                        let value = match args
                            .iter()
                            .filter(|a| matches!(a, koi_ir::Arg::In(_)))
                            .nth(1)
                        {
                            Some(koi_ir::Arg::In(e)) => self.expr(e, params, k)?,
                            _ => return Some(()),
                        };
                        self.state.push(StateOp::RegWrite(*instance, idx, value));
                        Some(())
                    }
                    _ => None,
                }
            }
            Stmt::Builtin(b) => self.builtin(b, params, k),
            Stmt::Extract { .. }
            | Stmt::Lookahead { .. }
            | Stmt::Advance { .. }
            | Stmt::Verify { .. }
            | Stmt::PacketLength { .. } => None,
        }
    }

    /// A new read slot (a register value or meter colour kept for the program's expressions).
    fn next_read(&mut self) -> u32 {
        self.reads += 1;
        self.reads - 1
    }

    /// A per-packet input (`w` bits), read into a read slot by the program; `value` is what
    /// the interpreter's run had (for the check at installation).
    fn input(&mut self, what: Input, value: Bits, w: u32) -> N {
        let t = self.next_read();
        self.state.push(StateOp::Input { what, t });
        let i = t as usize;
        if self.read_values.len() <= i {
            self.read_values.resize(i + 1, None);
        }
        self.read_values[i] = Some(value);
        let fallback = self.constant(Bits::zero(w));
        self.add(Node::RegVal { t, w, fallback })
    }

    /// The `i`th `in` argument of an extern call (an index: 0 when there is none).
    fn index_arg(
        &mut self,
        args: &[koi_ir::Arg],
        i: usize,
        params: &[Bits],
        k: &Known<'_>,
    ) -> Option<N> {
        match args
            .iter()
            .filter(|a| matches!(a, koi_ir::Arg::In(_)))
            .nth(i)
        {
            Some(koi_ir::Arg::In(e)) => self.expr(e, params, k),
            _ => Some(self.constant(Bits::zero(64))),
        }
    }

    /// A place's width and current value.
    fn place_value(&mut self, p: &Place, params: &[Bits], k: &Known<'_>) -> Option<(u32, N)> {
        match p {
            Place::Slot(s) => Some((
                self.p.phv.slots.get(*s)?.width,
                *self.slots.get(s.index() as usize)?,
            )),
            Place::Slice { slot, hi, lo } => {
                let old = *self.slots.get(slot.index() as usize)?;
                let v = self.fold(Node::Slice(old, *hi, *lo), k);
                Some((hi - lo + 1, v))
            }
            Place::StackField {
                stack,
                index,
                field,
            } => match self.stack_slot(*stack, index, *field, params, k)? {
                Ok(s) => Some((
                    self.p.phv.slots.get(s)?.width,
                    *self.slots.get(s.index() as usize)?,
                )),
                Err(_) => None,
            },
        }
    }

    /// The interpreter reported an extern call's result: the value of the register read
    /// just traced, if that is what it was.
    pub fn extern_result(&mut self, result: Option<&Bits>) {
        if let Some(t) = self.pending_read.take() {
            let t = t as usize;
            if self.read_values.len() <= t {
                self.read_values.resize(t + 1, None);
            }
            self.read_values[t] = result.cloned();
        }
    }

    fn shift(&mut self, stack: StackId, by: i64, k: &Known<'_>) -> Option<()> {
        let st = self.p.phv.stacks.get(stack)?.clone();
        let n = st.elems.len() as i64;
        let before = self.slots.clone();
        for i in 0..n {
            let src = i - by;
            let dst = self.p.phv.headers.get(st.elems[i as usize])?;
            if (0..n).contains(&src) {
                let s = self.p.phv.headers.get(st.elems[src as usize])?;
                for (a, b) in dst.fields.iter().zip(&s.fields) {
                    self.slots[a.index() as usize] = before[b.index() as usize];
                }
                self.slots[dst.valid.index() as usize] = before[s.valid.index() as usize];
            } else {
                let v = dst.valid;
                self.set_slot_const(v, Bits::from_bool(false));
            }
        }
        let next = self
            .konst(before[st.next_index.index() as usize], k)?
            .to_u64()? as i64;
        let new = (next + by).clamp(0, n) as u64;
        self.set_slot_const(st.next_index, Bits::from_u64(32, new));
        Some(())
    }

    /// The data list of a hash or checksum: invalid headers' fields left out.
    fn data(&mut self, data: &[Expr], params: &[Bits], k: &Known<'_>) -> Option<Vec<N>> {
        let mut out = Vec::with_capacity(data.len());
        for e in data {
            if let Expr::Slot(s) = e
                && let Some(SlotKind::HeaderField(h)) = self.p.phv.slots.get(*s).map(|x| x.kind)
                && !self.validity(h, k)?
            {
                continue;
            }
            if let Expr::Slot(s) = e
                && self.is_varbit(*s)
            {
                let (n, len) = self.varbit_node(&self.slots, *s)?;
                if len > 0 {
                    out.push(n);
                }
                continue;
            }
            let n = self.expr(e, params, k)?;
            out.push(n);
        }
        Some(out)
    }

    fn builtin(&mut self, b: &Builtin, params: &[Bits], k: &Known<'_>) -> Option<()> {
        match b {
            // uBPF's drop flag: the straight-line run fixes it, the interpreter reports it.
            Builtin::MarkToDrop | Builtin::MarkToPass if self.ubpf => Some(()),
            Builtin::MarkToDrop => {
                if let Some(s) = self.setup.egress_spec {
                    self.set_slot_const(s, Bits::from_u64(64, self.drop_port));
                }
                if let Some(s) = self.setup.mcast_grp {
                    self.set_slot_const(s, Bits::zero(64));
                }
                Some(())
            }
            Builtin::UpdateChecksum {
                cond,
                data,
                checksum,
                algo,
                with_payload,
            } => {
                let c = self.expr(cond, params, k)?;
                let fixed = self.konst(c, k);
                if fixed.as_ref().is_some_and(|b| !truth(b)) {
                    return Some(());
                }
                v1_algo(*algo)?;
                let data = self.data(data, params, k)?;
                let (slot, w) = match checksum {
                    Place::Slot(s) => (*s, self.p.phv.slots.get(*s)?.width),
                    _ => return None,
                };
                let odd = self.payload_parity(*with_payload, *algo, &data)?;
                let h = self.add(Node::Hash {
                    algo: *algo,
                    data,
                    w: w.min(64),
                });
                let h = match odd {
                    Some(odd) if w == 16 => self.add(Node::PayloadCsum {
                        csum: h,
                        start: u32::try_from(self.payload_start).ok()?,
                        odd,
                    }),
                    Some(_) => return None,
                    None => h,
                };
                // A condition that varies within the megaflow (it decides nothing the mask
                // covers): the field keeps its value when it is false.
                let h = match fixed {
                    Some(_) => h,
                    None if w <= 64 => {
                        let old = self.slots[slot.index() as usize];
                        self.fold(Node::Mux(c, h, old), k)
                    }
                    None => return None,
                };
                self.write_place(checksum, h, params, k)
            }
            Builtin::VerifyChecksum {
                cond,
                data,
                checksum,
                algo,
                with_payload,
            } => {
                let c = self.expr(cond, params, k)?;
                let fixed = self.konst(c, k);
                if fixed.as_ref().is_some_and(|b| !truth(b)) {
                    return Some(());
                }
                if let Expr::Slot(s) = checksum
                    && let Some(SlotKind::HeaderField(h)) = self.p.phv.slots.get(*s).map(|x| x.kind)
                    && !self.validity(h, k)?
                {
                    return Some(());
                }
                v1_algo(*algo)?;
                let data = self.data(data, params, k)?;
                let odd = self.payload_parity(*with_payload, *algo, &data)?;
                let h = self.add(Node::Hash {
                    algo: *algo,
                    data,
                    w: 64,
                });
                let h = match odd {
                    Some(odd) => self.add(Node::PayloadCsum {
                        csum: h,
                        start: u32::try_from(self.payload_start).ok()?,
                        odd,
                    }),
                    None => h,
                };
                let field = self.expr(checksum, params, k)?;
                let field = self.fold(
                    Node::Cast(
                        Cast::Resize {
                            width: 64,
                            signed: false,
                        },
                        field,
                    ),
                    k,
                );
                let bad = self.fold(Node::Bin(BinOp::Ne, h, field), k);
                // A condition that varies within the megaflow: only a checked mismatch counts.
                let bad = match fixed {
                    Some(_) => bad,
                    None => self.fold(Node::Bin(BinOp::And, c, bad), k),
                };
                let s = self.setup.checksum_error?;
                let prev = self.slots[s.index() as usize];
                let one = self.constant(Bits::from_u64(self.p.phv.slots.get(s)?.width, 1));
                let v = self.fold(Node::Mux(bad, one, prev), k);
                self.slots[s.index() as usize] = v;
                Some(())
            }
            Builtin::Hash {
                dst,
                algo,
                base,
                data,
                max,
            } => {
                if *algo == HashAlgo::Lookup3 {
                    // uBPF's lookup3 over every argument's value and width (valid or not),
                    // 32 bits into the destination.
                    let mut elems = Vec::with_capacity(data.len());
                    for d in data {
                        let n = self.expr(d, params, k)?;
                        if self.width(n) > 64 {
                            return None;
                        }
                        elems.push(n);
                    }
                    let h = self.add(Node::Hash {
                        algo: HashAlgo::Lookup3,
                        data: elems,
                        w: 32,
                    });
                    return self.write_place(dst, h, params, k);
                }
                v1_algo(*algo)?;
                let w = match dst {
                    Place::Slot(s) => self.p.phv.slots.get(*s)?.width,
                    _ => return None,
                };
                let data = self.data(data, params, k)?;
                let h = self.add(Node::Hash {
                    algo: *algo,
                    data,
                    w: 64,
                });
                let base = self.expr(base, params, k)?;
                let base = self.konst(base, k)?.low_u64();
                let v = match max {
                    Some(m) => {
                        let m = self.expr(m, params, k)?;
                        let max = self.konst(m, k)?.low_u64();
                        self.add(Node::HashResult {
                            hash: h,
                            base,
                            max,
                            w: w.min(64),
                        })
                    }
                    None => self.resized(h, w, k),
                };
                self.write_place(dst, v, params, k)
            }
            Builtin::CsumReplace {
                dst,
                csum,
                old,
                new,
            } => {
                let csum = self.expr(csum, params, k)?;
                let old = self.expr(old, params, k)?;
                let new = self.expr(new, params, k)?;
                let four = self.width(old) == 32;
                let n = self.add(Node::CsumReplace {
                    csum,
                    old,
                    new,
                    four,
                });
                self.write_place(dst, n, params, k)
            }
            Builtin::Random { dst, lo, hi } => {
                // Drawn per packet by the program, from the interpreter's generator.
                let lo = self.expr(lo, params, k)?;
                let hi = self.expr(hi, params, k)?;
                let (w, _) = self.place_value(dst, params, k)?;
                let t = self.next_read();
                self.state.push(StateOp::Random { lo, hi, t });
                self.pending_read = Some(t);
                let fallback = self.constant(Bits::zero(w));
                let v = self.add(Node::RegVal { t, w, fallback });
                self.write_place(dst, v, params, k)
            }
            Builtin::Digest {
                digest,
                receiver,
                data,
            } => {
                let dg = self.p.digests.get(*digest)?;
                let fields_w = dg.fields.clone();
                let name = dg.preamble.name.clone();
                let receiver = self.expr(receiver, params, k)?;
                let mut fields = Vec::with_capacity(fields_w.len());
                for ((f, w), e) in fields_w.into_iter().zip(data) {
                    let n = self.expr(e, params, k)?;
                    fields.push((f, n, w));
                }
                self.pending_digest = Some(StateOp::Digest {
                    digest: *digest,
                    name,
                    receiver,
                    fields,
                });
                Some(())
            }
            Builtin::Truncate { bytes } if !self.ubpf => {
                let n = self.expr(bytes, params, k)?;
                self.cut.push(n);
                Some(())
            }
            Builtin::Clone { session, .. } => {
                // The traffic manager's events make the clone; its session must be the same
                // for every packet of the megaflow.
                let n = self.expr(session, params, k)?;
                self.konst(n, k).map(|_| ())
            }
            Builtin::Assert { cond } | Builtin::Assume { cond } => {
                let c = self.expr(cond, params, k)?;
                truth(&self.konst(c, k)?).then_some(())
            }
            _ => None,
        }
    }

    /// An action body starts with control-plane `args` (or the pending direct call's).
    pub fn action(&mut self, args: &[Bits]) {
        let f = match self.pending.take() {
            Some(f) => f,
            None => args.iter().map(|a| self.constant(a.clone())).collect(),
        };
        self.frames.push(f);
    }

    /// The innermost action body ended.
    pub fn action_end(&mut self) {
        self.frames.pop();
    }

    /// The architecture wrote `value` into `slot`.
    pub fn arch_write(&mut self, slot: SlotId, value: &Bits) {
        let w = self
            .p
            .phv
            .slots
            .get(slot)
            .map_or(value.width(), |s| s.width);
        let n = match self.setup.write_kind(slot) {
            WriteKind::Input(what) => self.input(what, value.resize(w), w),
            WriteKind::Opaque => self.add(Node::Opaque(w)),
            WriteKind::Constant => self.constant(value.resize(w)),
        };
        if let Some(x) = self.slots.get_mut(slot.index() as usize) {
            *x = n;
        }
    }

    /// A table was applied: the entry hit, if any.
    pub fn table(&mut self, t: TableId, hit: Option<u32>) {
        if self.failed.is_some() {
            return;
        }
        let Some(table) = self.p.tables.get(t) else {
            self.fail("table");
            return;
        };
        let meter = table.direct_meter;
        // As the interpreter: applying the table forgets its direct meter's colour; a hit
        // executes the meter for the entry.
        if let Some(m) = meter {
            self.meter_colors.retain(|(e, _)| *e != m);
        }
        if let Some(i) = hit {
            if State::hit_recorded(table) {
                self.state.push(StateOp::TableHit(t, i));
            }
            if let Some(m) = meter {
                let slot = self.next_read();
                self.state.push(StateOp::DirectMeter(t, i, slot));
                self.meter_colors.push((m, slot));
            }
        }
    }

    /// A `Branch` or `Switch` whose condition may be state-dependent went to `to`: unless
    /// its value is a constant of the megaflow, the program gets a guard that it goes there
    /// again.
    pub fn guard_jump(
        &mut self,
        t: &koi_ir::Terminator,
        to: koi_ir::BlockId,
        params: &[Bits],
        k: &Known<'_>,
    ) {
        use koi_ir::Terminator;
        if self.failed.is_some() {
            return;
        }
        let guard = match t {
            Terminator::Branch { cond, then, .. } => self
                .expr(cond, params, k)
                .map(|n| (n, Test::Truth(to == *then))),
            Terminator::Switch {
                value,
                cases,
                default,
            } => self.expr(value, params, k).map(|n| {
                let cases = cases.iter().map(|(c, b)| (c.clone(), *b == to)).collect();
                let default = *default == to;
                (n, Test::Cases { cases, default })
            }),
            _ => None,
        };
        match guard {
            Some((n, _)) if self.konst_deep(n, k).is_some() => {}
            Some((n, test)) => self.state.push(StateOp::Guard { n, test }),
            None => self.fail("state-dependent decision"),
        }
    }

    /// Table `t`, whose key may be state-dependent, was looked up with `keys` (its match
    /// fields' values, selector fields excluded): each key computed from a state-dependent
    /// value gets a guard that it is the same again (the others are in the megaflow's mask).
    pub fn guard_table(&mut self, t: TableId, keys: &[Bits], k: &Known<'_>) {
        if self.failed.is_some() {
            return;
        }
        let Some(table) = self.p.tables.get(t) else {
            self.fail("table");
            return;
        };
        let fields = table
            .keys
            .iter()
            .filter(|x| x.field.kind != koi_ir::MatchKind::Selector);
        for (key, v) in fields.zip(keys) {
            let Some(n) = self.expr(&key.expr, &[], k) else {
                self.fail("state-dependent table key");
                return;
            };
            let n = self.resized(n, key.field.width, k);
            if self.reaches_state(n) {
                let test = Test::Cases {
                    cases: vec![(v.clone(), true)],
                    default: false,
                };
                self.state.push(StateOp::Guard { n, test });
            }
        }
        // (Selector fields are not guarded: a state-dependent one leaves the run uncached,
        // by the datapath's influence tracking.)
    }

    /// Whether `n` depends on a value read from the state (a register, a meter's colour,
    /// `random`) or on the payload (or on a value the compiler does not model).
    fn reaches_state(&self, n: N) -> bool {
        self.reaches(n, |x| {
            matches!(
                x,
                Node::RegVal { .. } | Node::PayloadCsum { .. } | Node::Opaque(_)
            )
        })
    }

    /// Whether `n` or a node it is computed from is a `leaf`.
    fn reaches(&self, n: N, leaf: fn(&Node) -> bool) -> bool {
        let node = &self.nodes[n as usize];
        leaf(node) || node.any_operand(|a| self.reaches(a, leaf))
    }

    fn const_slot(&self, s: Option<SlotId>, k: &Known<'_>) -> Option<u64> {
        match s {
            None => Some(0),
            Some(s) => self.konst_deep(self.slots[s.index() as usize], k)?.to_u64(),
        }
    }

    /// The constant value of `n` if the megaflow fixes every input it is computed from
    /// (the operations evaluated as [`Tracer::fold`] does).
    fn konst_deep(&self, n: N, k: &Known<'_>) -> Option<Bits> {
        if let Some(b) = self.konst(n, k) {
            return Some(b);
        }
        let c = |x: N| self.konst_deep(x, k);
        match &self.nodes[n as usize] {
            Node::Mux(cond, a, b) => c(if truth(&c(*cond)?) { *a } else { *b }),
            n => operation(n, c),
        }
    }

    /// The key slots a traffic-manager input (egress port, multicast group, priority) that
    /// the megaflow does not fix yet is computed from (`hdr.routes[0].port` for a source
    /// route): matching them whole fixes it, as Open vSwitch un-wildcards a field an output
    /// action takes its port from. Empty if there is none, or an input is computed from
    /// something else (nothing to do: the run is not compiled).
    pub fn tm_inputs(&self, k: &Known<'_>) -> Vec<SlotId> {
        let mut out = Vec::new();
        for s in [
            self.setup.egress_spec,
            self.setup.mcast_grp,
            self.setup.priority,
        ]
        .into_iter()
        .flatten()
        {
            let n = self.slots[s.index() as usize];
            if self.konst_deep(n, k).is_none() && !self.leaves(n, &mut out) {
                return Vec::new();
            }
        }
        out
    }

    /// Adds to `out` the slots of the packet fields (and the ingress port) `n` is computed
    /// from; `false` if it is computed from anything else.
    fn leaves(&self, n: N, out: &mut Vec<SlotId>) -> bool {
        match &self.nodes[n as usize] {
            Node::Const(_) => true,
            Node::Pkt { slot, w, .. } => {
                let whole = self.p.phv.slots.get(*slot).is_some_and(|s| s.width == *w);
                if whole && !out.contains(slot) {
                    out.push(*slot);
                }
                whole
            }
            Node::Port(_) => match self.p.intrinsic("ingress_port") {
                Some(s) => {
                    if !out.contains(&s) {
                        out.push(s);
                    }
                    true
                }
                None => false,
            },
            Node::Un(_, a) | Node::Slice(a, ..) | Node::Cast(_, a) => self.leaves(*a, out),
            Node::Bin(_, a, b) => self.leaves(*a, out) && self.leaves(*b, out),
            Node::Mux(c, a, b) => {
                self.leaves(*c, out) && self.leaves(*a, out) && self.leaves(*b, out)
            }
            _ => false,
        }
    }

    /// A traffic-manager event. What the traffic manager read (egress port, multicast group,
    /// priority) must be fixed by the megaflow for its decisions to be the same for every
    /// packet of it.
    pub fn tm(&mut self, ev: &koi_interp::TmEvent, k: &Known<'_>) {
        use koi_interp::TmEvent;
        if self.failed.is_some() {
            return;
        }
        // Inputs computed from state (`egress_spec = r.read(..)`, a group from a register):
        // guarded to the values this event shows.
        let (spec, grp) = (self.setup.egress_spec, self.setup.mcast_grp);
        match ev {
            TmEvent::Unicast { port } => {
                self.pin_tm_input(grp, 0, k);
                self.pin_tm_input(spec, *port, k);
            }
            TmEvent::Multicast { group, .. } => self.pin_tm_input(grp, *group, k),
            TmEvent::Drop(DropReason::Ingress) => {
                self.pin_tm_input(grp, 0, k);
                self.pin_tm_input(spec, self.drop_port, k);
            }
            TmEvent::Drop(DropReason::Egress) => self.pin_tm_input(spec, self.drop_port, k),
            _ => {}
        }
        let spec = self.const_slot(self.setup.egress_spec, k);
        let grp = self.const_slot(self.setup.mcast_grp, k);
        let prio = self.const_slot(self.setup.priority, k);
        let fixed = match ev {
            TmEvent::Unicast { port } => spec == Some(*port) && grp == Some(0) && prio.is_some(),
            TmEvent::Multicast { group, copies } => {
                // The replicas just queued start without the packet's `truncate`.
                let n = self.queue.len();
                for q in self.queue.range_mut(n.saturating_sub(*copies)..) {
                    q.1.clear();
                }
                grp == Some(*group) && *group != 0 && prio.is_some()
            }
            // The session is a constant (see `Builtin::Clone`) and mirroring sessions are
            // control-plane state, so what the session sends is the same for the megaflow.
            TmEvent::Clone { .. } => self.copying.is_some(),
            TmEvent::Drop(DropReason::NoReplicas) if self.copying.is_some() => true,
            TmEvent::Drop(DropReason::Ingress) => spec == Some(self.drop_port) && grp == Some(0),
            TmEvent::Drop(DropReason::Egress) => spec == Some(self.drop_port),
            TmEvent::Drop(DropReason::NoReplicas) => grp.is_some_and(|g| g != 0),
            TmEvent::Drop(DropReason::PriorityOutOfRange) => prio.is_some(),
            TmEvent::Digest { .. } => match self.pending_digest.take() {
                Some(op) => {
                    self.state.push(op);
                    true
                }
                None => false,
            },
            TmEvent::Drop(DropReason::Ubpf) => self.ubpf,
            _ => {
                self.fail("traffic manager event");
                return;
            }
        };
        if !fixed {
            self.fail("traffic manager input not constant");
            return;
        }
        if let TmEvent::Drop(why) = ev {
            self.passes.push(Pass::Dropped(why.clone()));
        }
    }

    /// A pass through ingress or egress starts. An egress pass starts from the PHV its
    /// instance was queued with.
    pub fn instance(&mut self, role: koi_ir::Role) {
        if self.failed.is_some() || role != koi_ir::Role::Egress {
            return;
        }
        self.emitted.clear();
        match self.queue.pop_front() {
            Some((q, cut)) => {
                self.slots = q;
                self.cut = cut;
            }
            None => self.fail("egress pass without a queued instance"),
        }
    }

    /// An instance was queued for egress with the current PHV.
    pub fn enqueued(&mut self) {
        if self.failed.is_none() {
            self.queue.push_back((self.slots.clone(), self.cut.clone()));
        }
    }

    /// A clone starts: the packet as it entered (an ingress clone, re-parsed as the first
    /// parse went) or as egress left it.
    pub fn copy_begin(&mut self, kind: koi_interp::CopyKind) {
        if self.failed.is_some() {
            return;
        }
        let from = match kind {
            koi_interp::CopyKind::IngressClone => self.initial.clone(),
            koi_interp::CopyKind::EgressClone => self.slots.clone(),
        };
        let cut = std::mem::take(&mut self.cut);
        self.copying = Some((std::mem::replace(&mut self.slots, from), cut));
    }

    /// The clone's metadata is zeroed but for field list `fl`, taken from the packet it is
    /// made from.
    pub fn metadata_reset(&mut self, fl: Option<koi_ir::FieldListId>) {
        if self.failed.is_some() {
            return;
        }
        let Some((from, _)) = &self.copying else {
            // Resubmission and recirculation: not compiled.
            self.fail("metadata reset outside a clone");
            return;
        };
        let from = from.clone();
        let p = self.p;
        for (id, slot) in p.phv.slots.iter() {
            if koi_interp::prepared::reset_by_copies(p, slot) {
                self.set_slot_const(id, Bits::zero(slot.width));
            }
        }
        if let Some(list) = fl.and_then(|f| self.p.field_lists.get(f)) {
            for s in &list.slots {
                let i = s.index() as usize;
                self.slots[i] = from[i];
            }
        }
    }

    /// The clone is made: back to the packet it was made from.
    pub fn copy_end(&mut self) {
        if let Some((from, cut)) = self.copying.take() {
            self.slots = from;
            self.cut = cut;
        }
    }

    /// A packet leaves on `port`: egress did not drop it, which must hold for every packet of
    /// the megaflow.
    /// The parser stopped on an error or a `reject`: uBPF then sends the packet as it came
    /// in (nothing emitted, the whole input as payload); v1model goes on to ingress.
    pub fn parser_failed(&mut self) {
        if self.ubpf {
            self.emitted.clear();
            self.payload_start = 0;
            self.cursor_bits = 0;
        }
    }

    pub fn packet_out(&mut self, port: u64, k: &Known<'_>) {
        if self.failed.is_some() {
            return;
        }
        // An `egress_spec` egress computed from state: guarded not to be the drop port.
        let not_dropped = match self.setup.egress_spec {
            Some(s) if !self.ubpf => {
                let n = self.slots[s.index() as usize];
                let w = self.width(n);
                let state = self.reaches_state(n) && self.konst_deep(n, k).is_none();
                if state {
                    let drop = Bits::from_u64(w, self.drop_port);
                    let test = Test::Cases {
                        cases: vec![(drop, false)],
                        default: true,
                    };
                    self.state.push(StateOp::Guard { n, test });
                }
                state
            }
            _ => false,
        };
        match self.const_slot(self.setup.egress_spec, k) {
            _ if not_dropped => self.sent(port),
            Some(s) if s != self.drop_port || self.ubpf => self.sent(port),
            _ => self.fail("egress_spec not constant"),
        }
    }

    /// The current instance was sent on `port`.
    fn sent(&mut self, port: u64) {
        let emitted = std::mem::take(&mut self.emitted);
        self.passes.push(Pass::Sent {
            port,
            emitted,
            slots: self.slots.clone(),
            cut: self.cut.clone(),
        });
    }

    /// A traffic-manager input (`slot`) computed from state is guarded to equal `value`, and
    /// is that constant from then on; any other input is left as it is.
    fn pin_tm_input(&mut self, slot: Option<SlotId>, value: u64, k: &Known<'_>) {
        let Some(s) = slot else {
            return;
        };
        let n = self.slots[s.index() as usize];
        if !self.reaches_state(n) || self.konst_deep(n, k).is_some() {
            return;
        }
        let v = Bits::from_u64(self.width(n), value);
        let test = Test::Cases {
            cases: vec![(v.clone(), true)],
            default: false,
        };
        self.state.push(StateOp::Guard { n, test });
        self.set_slot_const(s, v);
    }

    /// What the run read outside its trace, if its program can be reused for another run
    /// with the same trace ([`crate::memo`]): `None` if it read state or extern results
    /// (anything but its inputs at the start and the `written` architecture writes of inputs).
    pub fn facts(&self, written: usize) -> Option<TraceFacts> {
        if self.reads as usize != self.inputs.len() + written {
            return None;
        }
        Some(TraceFacts {
            // The constants from the PHV the parser's assignments did not replace.
            phv_reads: self
                .consts
                .iter()
                .filter(|&&(i, n, ..)| self.initial.get(i as usize) == Some(&n))
                .map(|&(_, _, off, w)| (off, w))
                .collect(),
            inputs: self.inputs.clone(),
        })
    }

    /// The run ended: the program, or why there is none.
    /// With the program: the register values the run read, for [`Scratch::preset_reads`].
    #[allow(clippy::type_complexity)]
    pub fn finish(mut self, _k: &Known<'_>) -> Result<(Program, Vec<Option<Bits>>), &'static str> {
        if let Some(why) = self.failed {
            return Err(why);
        }
        if self.passes.is_empty() {
            return Err("no traffic manager event");
        }
        let mut results = Vec::with_capacity(self.passes.len());
        for pass in std::mem::take(&mut self.passes) {
            results.push(match pass {
                Pass::Dropped(why) => Res::Drop(why),
                Pass::Sent {
                    port,
                    emitted,
                    slots,
                    cut,
                } => Res::Send(port, self.out_prog(&emitted, &slots, cut)?),
            });
        }
        for op in &self.state {
            let opaque = match op {
                StateOp::Count(_, n)
                | StateOp::RegRead(_, n, _)
                | StateOp::Meter(_, n, _)
                | StateOp::Guard { n, .. } => self.reaches_opaque(*n),
                StateOp::RegWrite(_, n, v) | StateOp::Random { lo: n, hi: v, .. } => {
                    self.reaches_opaque(*n) || self.reaches_opaque(*v)
                }
                StateOp::Digest {
                    receiver, fields, ..
                } => {
                    self.reaches_opaque(*receiver)
                        || fields.iter().any(|(_, n, _)| self.reaches_opaque(*n))
                }
                StateOp::TableHit(..) | StateOp::DirectMeter(..) | StateOp::Input { .. } => false,
            };
            if opaque {
                return Err("opaque value in a state update");
            }
        }
        let reads = std::mem::take(&mut self.read_values);
        let mut p = Program {
            nodes: self.nodes,
            widths: Vec::new(),
            narrow: Vec::new(),
            pure: Vec::new(),
            lin: Vec::new(),
            wide: false,
            plans: Vec::new(),
            guarded: self
                .state
                .iter()
                .any(|op| matches!(op, StateOp::Guard { .. })),
            state: self.state,
            results,
            jit: jit::JitCell::default(),
        };
        p.compact();
        // The inputs nothing uses (every run has the arrival time and the length).
        let mut used = vec![false; self.reads as usize];
        for n in &p.nodes {
            if let Node::RegVal { t, .. } = n
                && let Some(u) = used.get_mut(*t as usize)
            {
                *u = true;
            }
        }
        p.state.retain(|op| {
            !matches!(op, StateOp::Input { t, .. } if !used.get(*t as usize).copied().unwrap_or(false))
        });
        let reads = p.renumber_reads(reads);
        Ok((p, reads))
    }

    /// How the packet that emitted `emitted` with final values `slots` is built.
    fn out_prog(
        &self,
        emitted: &[HeaderId],
        slots: &[N],
        cut: Vec<N>,
    ) -> Result<OutProg, &'static str> {
        if cut.iter().any(|n| self.reaches_opaque(*n)) {
            return Err("opaque truncate length");
        }
        let mut fields = Vec::with_capacity(64);
        for h in emitted {
            let hd = self.p.phv.headers.get(*h).ok_or("header")?;
            for f in &hd.fields {
                if self.is_varbit(*f) {
                    let (n, len) = self.varbit_node(slots, *f).ok_or("varbit changed")?;
                    if len > 0 {
                        fields.push((n, len));
                    }
                    continue;
                }
                let w = self.p.phv.slots.get(*f).ok_or("slot")?.width;
                fields.push((slots[f.index() as usize], w));
            }
        }
        let prefix_bits: u32 = fields.iter().map(|(_, w)| *w).sum();
        let prefix_bytes = prefix_bits.div_ceil(8) as usize;
        let copy_input = prefix_bytes * 8 == self.cursor_bits as usize;
        let mut out: Vec<OutOp> = Vec::with_capacity(fields.len());
        let mut at = 0u32;
        for (n, w) in fields {
            // Nodes reaching the output must be computable.
            if self.reaches_opaque(n) {
                return Err("opaque value in the output");
            }
            match self.nodes[n as usize] {
                Node::Pkt { off, .. } => {
                    if let Some(OutOp::Copy { src, dst, len }) = out.last_mut()
                        && *src + *len == off
                        && *dst + *len == at
                    {
                        *len += w;
                    } else {
                        out.push(OutOp::Copy {
                            src: off,
                            dst: at,
                            len: w,
                        });
                    }
                }
                Node::Const(ref b) if at.is_multiple_of(8) && w.is_multiple_of(8) => {
                    out.push(OutOp::Bytes {
                        dst: (at / 8) as usize,
                        bytes: b.to_be_bytes(),
                    })
                }
                Node::Const(ref b) => out.push(OutOp::Const {
                    dst: at,
                    value: b.clone(),
                }),
                _ => out.push(OutOp::Write {
                    dst: at,
                    n,
                    narrow: false,
                }),
            }
            at += w;
        }
        if copy_input {
            out.retain(|op| !matches!(op, OutOp::Copy { src, dst, .. } if src == dst));
        }
        Ok(OutProg {
            prefix_bytes,
            copy_input,
            out,
            payload_start: self.payload_start,
            cut,
        })
    }

    fn reaches_opaque(&self, n: N) -> bool {
        self.reaches(n, |x| matches!(x, Node::Opaque(_)))
    }
}

impl Program {
    /// Numbers the reads the state updates make 0, 1, ... in order (dropped inputs left
    /// gaps: each read number costs native code a slot per packet); returns `values` (by old
    /// number) by new number.
    fn renumber_reads(&mut self, values: Vec<Option<Bits>>) -> Vec<Option<Bits>> {
        fn slot(op: &mut StateOp) -> Option<&mut u32> {
            match op {
                StateOp::RegRead(_, _, t)
                | StateOp::Meter(_, _, t)
                | StateOp::DirectMeter(_, _, t)
                | StateOp::Random { t, .. }
                | StateOp::Input { t, .. } => Some(t),
                _ => None,
            }
        }
        let mut map: std::collections::HashMap<u32, u32> = std::collections::HashMap::new();
        let mut out = Vec::new();
        for op in &mut self.state {
            if let Some(t) = slot(op) {
                let new = *map.entry(*t).or_insert_with(|| {
                    out.push(values.get(*t as usize).cloned().flatten());
                    (out.len() - 1) as u32
                });
                *t = new;
            }
        }
        for n in &mut self.nodes {
            if let Node::RegVal { t, .. } = n
                && let Some(new) = map.get(t)
            {
                *t = *new;
            }
        }
        out
    }

    fn show(&self, n: N, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.nodes[n as usize] {
            Node::Const(b) => write!(f, "{b}"),
            Node::Pkt { off, w, .. } => write!(f, "pkt[{off}+:{w}]"),
            Node::Port(_) => write!(f, "in_port"),
            Node::Opaque(_) => write!(f, "?"),
            Node::RegVal { t, .. } => write!(f, "read{t}"),
            Node::CsumReplace {
                csum,
                old,
                new,
                four,
            } => {
                write!(f, "csum_replace{}(", if *four { 4 } else { 2 })?;
                self.show(*csum, f)?;
                write!(f, ", ")?;
                self.show(*old, f)?;
                write!(f, ", ")?;
                self.show(*new, f)?;
                write!(f, ")")
            }
            Node::PayloadCsum { csum, start, .. } => {
                write!(f, "csum16_payload(")?;
                self.show(*csum, f)?;
                write!(f, ", pkt[{start}..])")
            }
            Node::Un(op, a) => {
                let s = match op {
                    UnOp::Not => "!",
                    UnOp::BitNot => "~",
                    UnOp::Neg => "-",
                };
                write!(f, "{s}(")?;
                self.show(*a, f)?;
                write!(f, ")")
            }
            Node::Bin(op, a, b) => {
                write!(f, "(")?;
                self.show(*a, f)?;
                write!(f, " {} ", op.symbol())?;
                self.show(*b, f)?;
                write!(f, ")")
            }
            Node::Slice(a, hi, lo) => {
                self.show(*a, f)?;
                write!(f, "[{hi}:{lo}]")
            }
            Node::Cast(c, a) => {
                match c {
                    Cast::Resize { width, signed } => {
                        write!(f, "({}{width})", if *signed { "int" } else { "bit" })?
                    }
                    Cast::ToBool => write!(f, "(bool)")?,
                    Cast::FromBool => write!(f, "(bit<1>)")?,
                }
                self.show(*a, f)
            }
            Node::Mux(c, a, b) => {
                write!(f, "(")?;
                self.show(*c, f)?;
                write!(f, " ? ")?;
                self.show(*a, f)?;
                write!(f, " : ")?;
                self.show(*b, f)?;
                write!(f, ")")
            }
            Node::Hash { algo, data, w } => {
                write!(f, "{}<{w}>(", algo.name())?;
                for (i, d) in data.iter().enumerate() {
                    if i > 0 {
                        write!(f, ", ")?;
                    }
                    self.show(*d, f)?;
                }
                write!(f, ")")
            }
            Node::HashResult {
                hash, base, max, ..
            } => {
                write!(f, "{base} + ")?;
                self.show(*hash, f)?;
                write!(f, " % {max}")
            }
        }
    }

    /// Keeps only the nodes the program uses (renumbered).
    fn compact(&mut self) {
        let mut map: Vec<Option<N>> = vec![None; self.nodes.len()];
        let mut nodes = Vec::with_capacity(self.nodes.len().min(32));
        fn visit(n: N, old: &[Node], map: &mut [Option<N>], nodes: &mut Vec<Node>) -> N {
            if let Some(m) = map[n as usize] {
                return m;
            }
            let mut node = old[n as usize].clone();
            match &mut node {
                Node::Un(_, a) | Node::Slice(a, ..) | Node::Cast(_, a) => {
                    *a = visit(*a, old, map, nodes)
                }
                Node::Bin(_, a, b) => {
                    *a = visit(*a, old, map, nodes);
                    *b = visit(*b, old, map, nodes);
                }
                Node::Mux(c, a, b) => {
                    *c = visit(*c, old, map, nodes);
                    *a = visit(*a, old, map, nodes);
                    *b = visit(*b, old, map, nodes);
                }
                Node::Hash { data, .. } => {
                    for d in data.iter_mut() {
                        *d = visit(*d, old, map, nodes);
                    }
                }
                Node::HashResult { hash, .. } => *hash = visit(*hash, old, map, nodes),
                Node::RegVal { fallback, .. } => *fallback = visit(*fallback, old, map, nodes),
                Node::CsumReplace {
                    csum, old: o, new, ..
                } => {
                    *csum = visit(*csum, old, map, nodes);
                    *o = visit(*o, old, map, nodes);
                    *new = visit(*new, old, map, nodes);
                }
                Node::PayloadCsum { csum, .. } => *csum = visit(*csum, old, map, nodes),
                _ => {}
            }
            nodes.push(node);
            let id = (nodes.len() - 1) as N;
            map[n as usize] = Some(id);
            id
        }
        for op in &mut self.state {
            match op {
                StateOp::Count(_, n)
                | StateOp::RegRead(_, n, _)
                | StateOp::Meter(_, n, _)
                | StateOp::Guard { n, .. } => *n = visit(*n, &self.nodes, &mut map, &mut nodes),
                StateOp::RegWrite(_, n, v) | StateOp::Random { lo: n, hi: v, .. } => {
                    *n = visit(*n, &self.nodes, &mut map, &mut nodes);
                    *v = visit(*v, &self.nodes, &mut map, &mut nodes);
                }
                StateOp::Digest {
                    receiver, fields, ..
                } => {
                    *receiver = visit(*receiver, &self.nodes, &mut map, &mut nodes);
                    for (_, n, _) in fields.iter_mut() {
                        *n = visit(*n, &self.nodes, &mut map, &mut nodes);
                    }
                }
                StateOp::TableHit(..) | StateOp::DirectMeter(..) | StateOp::Input { .. } => {}
            }
        }
        for r in &mut self.results {
            if let Res::Send(_, o) = r {
                for op in &mut o.out {
                    if let OutOp::Write { n, .. } = op {
                        *n = visit(*n, &self.nodes, &mut map, &mut nodes);
                    }
                }
                for n in &mut o.cut {
                    *n = visit(*n, &self.nodes, &mut map, &mut nodes);
                }
            }
        }
        self.widths = (0..nodes.len() as N)
            .map(|n| node_width(&nodes, n))
            .collect();
        self.narrow.clear();
        self.plans = nodes
            .iter()
            .map(|node| match node {
                Node::Hash { data, .. } => {
                    let mut elems: Vec<Elem> = Vec::new();
                    let mut bits = 0;
                    for &d in data {
                        let w = self.widths[d as usize];
                        bits += w;
                        match (&nodes[d as usize], elems.last_mut()) {
                            (Node::Pkt { off, w, .. }, Some(Elem::Pkt { off: o, len }))
                                if *o + *len == *off =>
                            {
                                *len += *w
                            }
                            (Node::Pkt { off, w, .. }, _) => {
                                elems.push(Elem::Pkt { off: *off, len: *w })
                            }
                            _ => elems.push(Elem::Node(d)),
                        }
                    }
                    let aligned = bits % 8 == 0
                        && (bits / 8) as usize <= ALIGNED_MAX
                        && elems.iter().all(|e| match *e {
                            Elem::Pkt { off, len } => off % 8 == 0 && len % 8 == 0,
                            Elem::Node(d) => self.widths[d as usize].is_multiple_of(8),
                        });
                    Some(HashPlan {
                        elems,
                        bits,
                        aligned,
                    })
                }
                _ => None,
            })
            .collect();
        self.nodes = nodes;
        self.narrow = (0..self.nodes.len() as N)
            .map(|n| self.narrow_below(n))
            .collect();
        // Children come before their parents (`visit`), so one pass in order suffices.
        let mut pure: Vec<bool> = Vec::with_capacity(self.nodes.len());
        for node in &self.nodes {
            let p = !matches!(node, Node::RegVal { .. })
                && !node.any_operand(|a| !pure.get(a as usize).copied().unwrap_or(false));
            pure.push(p);
        }
        self.pure = pure;
        let mut wide = false;
        let mut results = std::mem::take(&mut self.results);
        for r in &mut results {
            if let Res::Send(_, o) = r {
                for op in &mut o.out {
                    if let OutOp::Write { n, narrow, .. } = op {
                        *narrow = self.is_narrow(*n);
                        wide |= !*narrow;
                    }
                }
            }
        }
        self.results = results;
        for op in &self.state {
            match op {
                StateOp::Count(_, n)
                | StateOp::RegRead(_, n, _)
                | StateOp::Meter(_, n, _)
                | StateOp::Guard { n, .. } => wide |= !self.is_narrow(*n),
                StateOp::RegWrite(_, n, v) | StateOp::Random { lo: n, hi: v, .. } => {
                    wide |= !self.is_narrow(*n) || !self.is_narrow(*v);
                }
                StateOp::Digest {
                    receiver, fields, ..
                } => {
                    wide |= !self.is_narrow(*receiver)
                        || fields.iter().any(|(_, n, _)| !self.is_narrow(*n));
                }
                StateOp::TableHit(..) | StateOp::DirectMeter(..) | StateOp::Input { .. } => {}
            }
        }
        self.wide = wide;
        self.lin = if wide {
            Vec::new()
        } else {
            self.output_nodes()
        };
    }
}

/// One line per operation: `hit TABLE#ENTRY`, `count EXTERN[i]`, `out[BIT+:W] = EXPR`
/// (bit offsets in the output), `copy`, then each output (`output:PORT`) or drop in order.
impl std::fmt::Display for Program {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        for op in &self.state {
            match op {
                StateOp::TableHit(t, i) => writeln!(f, "hit {t}#{i}")?,
                StateOp::Count(c, n) => {
                    write!(f, "count {c}[")?;
                    self.show(*n, f)?;
                    writeln!(f, "]")?;
                }
                StateOp::DirectMeter(tb, i, t) => {
                    writeln!(f, "read{t} = execute {tb}#{i}'s meter")?
                }
                StateOp::Meter(m, n, t) => {
                    write!(f, "read{t} = execute {m}[")?;
                    self.show(*n, f)?;
                    writeln!(f, "]")?;
                }
                StateOp::RegRead(r, n, t) => {
                    write!(f, "read{t} = {r}[")?;
                    self.show(*n, f)?;
                    writeln!(f, "]")?;
                }
                StateOp::RegWrite(r, n, v) => {
                    write!(f, "{r}[")?;
                    self.show(*n, f)?;
                    write!(f, "] = ")?;
                    self.show(*v, f)?;
                    writeln!(f)?;
                }
                StateOp::Random { lo, hi, t } => {
                    write!(f, "read{t} = random(")?;
                    self.show(*lo, f)?;
                    write!(f, ", ")?;
                    self.show(*hi, f)?;
                    writeln!(f, ")")?;
                }
                StateOp::Digest {
                    name,
                    receiver,
                    fields,
                    ..
                } => {
                    write!(f, "digest {name} to ")?;
                    self.show(*receiver, f)?;
                    write!(f, ":")?;
                    for (field, n, _) in fields {
                        write!(f, " {field}=")?;
                        self.show(*n, f)?;
                    }
                    writeln!(f)?;
                }
                StateOp::Input { what, t } => match what {
                    Input::Now => writeln!(f, "read{t} = now (us)")?,
                    Input::Zero => writeln!(f, "read{t} = 0 (time queued)")?,
                    Input::Len => writeln!(f, "read{t} = packet length")?,
                },
                StateOp::Guard { n, test } => {
                    write!(f, "guard ")?;
                    self.show(*n, f)?;
                    match test {
                        Test::Truth(t) => writeln!(f, " is {t}")?,
                        Test::Cases { cases, default } => {
                            let way: Vec<String> = cases
                                .iter()
                                .filter(|(_, w)| *w)
                                .map(|(c, _)| format!("{c}"))
                                .collect();
                            let not: Vec<String> = cases
                                .iter()
                                .filter(|(_, w)| !*w)
                                .map(|(c, _)| format!("{c}"))
                                .collect();
                            match default {
                                false => writeln!(f, " in [{}]", way.join(", "))?,
                                true if way.is_empty() => {
                                    writeln!(f, " not in [{}]", not.join(", "))?
                                }
                                true => writeln!(
                                    f,
                                    " in [{}] or not in [{}]",
                                    way.join(", "),
                                    not.join(", ")
                                )?,
                            }
                        }
                    }
                }
            }
        }
        for r in &self.results {
            let (port, o) = match r {
                Res::Drop(why) => {
                    writeln!(f, "drop ({why:?})")?;
                    continue;
                }
                Res::Send(port, o) => (port, o),
            };
            match o.copy_input {
                true => writeln!(f, "out = pkt[0..{}]", o.prefix_bytes)?,
                false => writeln!(f, "out = {} header bytes", o.prefix_bytes)?,
            }
            for op in &o.out {
                match op {
                    OutOp::Copy { src, dst, len } => {
                        writeln!(f, "out[{dst}+:{len}] = pkt[{src}+:{len}]")?
                    }
                    OutOp::Const { dst, value } => {
                        writeln!(f, "out[{dst}+:{}] = {value}", value.width())?
                    }
                    OutOp::Bytes { dst, bytes } => {
                        write!(f, "out[{}+:{}] = 0x", dst * 8, bytes.len() * 8)?;
                        for b in bytes {
                            write!(f, "{b:02x}")?;
                        }
                        writeln!(f)?;
                    }
                    OutOp::Write { dst, n, .. } => {
                        write!(f, "out[{dst}+:{}] = ", self.widths[*n as usize])?;
                        self.show(*n, f)?;
                        writeln!(f)?;
                    }
                }
            }
            writeln!(f, "out += pkt[{}..]", o.payload_start)?;
            for n in &o.cut {
                write!(f, "truncate ")?;
                self.show(*n, f)?;
                writeln!(f)?;
            }
            writeln!(f, "output:{port}")?;
        }
        Ok(())
    }
}

/// Where an extern call writes what it produces: its return place, else its first `out`
/// argument (as the interpreter does).
fn extern_dst(result: &Option<Place>, args: &[koi_ir::Arg]) -> Option<Place> {
    match result {
        Some(p) => Some(p.clone()),
        None => args.iter().find_map(|a| match a {
            koi_ir::Arg::Out(p) | koi_ir::Arg::InOut(p) => Some(p.clone()),
            koi_ir::Arg::In(_) => None,
        }),
    }
}

/// The width of node `n` of `nodes`.
fn node_width(nodes: &[Node], n: N) -> u32 {
    match &nodes[n as usize] {
        Node::Const(b) => b.width(),
        Node::Pkt { w, .. } | Node::Port(w) | Node::Opaque(w) => *w,
        Node::Un(_, a) => node_width(nodes, *a),
        Node::Bin(op, a, b) => match op {
            BinOp::Concat => node_width(nodes, *a) + node_width(nodes, *b),
            o if o.is_comparison() || matches!(o, BinOp::And | BinOp::Or) => 1,
            _ => node_width(nodes, *a),
        },
        Node::Slice(_, hi, lo) => hi - lo + 1,
        Node::Cast(Cast::Resize { width, .. }, _) => *width,
        Node::Cast(_, _) => 1,
        Node::Mux(_, a, _) => node_width(nodes, *a),
        Node::Hash { w, .. } | Node::HashResult { w, .. } | Node::RegVal { w, .. } => *w,
        Node::CsumReplace { .. } | Node::PayloadCsum { .. } => 16,
    }
}

/// Whether the megaflow mask fixes every bit of `slot` (a key field of its full width).
fn fully_masked(k: &Known<'_>, slot: SlotId, width: u32) -> bool {
    let Some(f) = k.layout.whole_field(slot, width) else {
        return false;
    };
    (f.key_offset..f.key_offset + f.width).all(|b| {
        k.mask
            .get((b / 64) as usize)
            .is_some_and(|w| w >> (63 - b % 64) & 1 == 1)
    })
}

/// The value of an operation node (`!`, `+`, a slice, a cast) whose operands `c` gives,
/// computed with the interpreter's operations; `None` for other nodes or an unknown operand.
fn operation(n: &Node, c: impl Fn(N) -> Option<Bits>) -> Option<Bits> {
    match n {
        Node::Un(op, a) => c(*a).map(|x| unary(*op, &x)),
        Node::Bin(op, a, b) => Some(arith(*op, &c(*a)?, &c(*b)?)),
        Node::Slice(a, hi, lo) => c(*a).map(|x| x.slice(*hi, *lo)),
        Node::Cast(cs, a) => c(*a).map(|x| cast(*cs, &x)),
        _ => None,
    }
}

/// A slot's value in a PHV byte image.
#[inline]
pub(crate) fn phv_value(phv: &[u8], offset: u32, width: u32) -> Bits {
    Bits::read_bits(phv, offset as usize, width).unwrap_or_else(|_| Bits::zero(width))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const OPS: [BinOp; 28] = [
        BinOp::Add,
        BinOp::Sub,
        BinOp::Mul,
        BinOp::Div,
        BinOp::Mod,
        BinOp::AddSatU,
        BinOp::AddSatS,
        BinOp::SubSatU,
        BinOp::SubSatS,
        BinOp::BitAnd,
        BinOp::BitOr,
        BinOp::BitXor,
        BinOp::Shl,
        BinOp::ShrU,
        BinOp::ShrS,
        BinOp::Concat,
        BinOp::Eq,
        BinOp::Ne,
        BinOp::LtU,
        BinOp::LeU,
        BinOp::GtU,
        BinOp::GeU,
        BinOp::LtS,
        BinOp::LeS,
        BinOp::GtS,
        BinOp::GeS,
        BinOp::And,
        BinOp::Or,
    ];

    proptest! {
        /// The `u64` evaluator computes the interpreter's `Bits` operators bit for bit.
        #[test]
        fn narrow_arithmetic_equals_bits(
            op in 0..OPS.len(),
            wa in 1u32..=64,
            wb in 1u32..=64,
            x in any::<u64>(),
            y in any::<u64>(),
            small in any::<bool>(),
        ) {
            let op = OPS[op];
            let shift = matches!(op, BinOp::Shl | BinOp::ShrU | BinOp::ShrS);
            // Operands of the same width except for shifts and concatenation.
            let wb = if shift || op == BinOp::Concat { wb } else { wa };
            let wb = if op == BinOp::Concat { wb.min(64 - wa.min(63)) } else { wb };
            prop_assume!(op != BinOp::Concat || wa + wb <= 64);
            let y = if small { y % 70 } else { y };
            let (x, y) = (x & mask64(wa), y & mask64(wb));
            let bits = arith(op, &Bits::from_u64(wa, x), &Bits::from_u64(wb, y));
            prop_assert_eq!(arith64(op, x, y, wa, wb), bits.low_u64(), "{:?} {} {}", op, wa, wb);
        }

        /// A narrow slot read from a PHV image equals `Bits::read_bits`.
        #[test]
        fn phv_value_equals_read_bits(
            phv in proptest::collection::vec(any::<u8>(), 0..24),
            offset in 0u32..200,
            width in 0u32..=130,
        ) {
            let want = Bits::read_bits(&phv, offset as usize, width).unwrap_or_else(|_| Bits::zero(width));
            prop_assert_eq!(phv_value(&phv, offset, width), want);
        }

        /// Writing a value into a buffer at any bit offset equals `Bits::write_bits`.
        #[test]
        fn write_bits64_equals_bits(at in 0u32..40, w in 1u32..=64, v in any::<u64>(), fill in any::<u8>()) {
            let mut a = vec![fill; 16];
            let mut b = a.clone();
            write_bits64(&mut a, at, w, v);
            Bits::from_u64(w, v).write_bits(&mut b, at as usize).unwrap();
            prop_assert_eq!(a, b);
        }
    }

    #[test]
    fn unary_and_casts_equal_bits() {
        for w in [1u32, 7, 8, 13, 32, 63, 64] {
            for x in [0u64, 1, 0x5a5a_5a5a_5a5a_5a5a, u64::MAX] {
                let x = x & mask64(w);
                let b = Bits::from_u64(w, x);
                assert_eq!(!x & mask64(w), unary(UnOp::BitNot, &b).low_u64());
                assert_eq!(x.wrapping_neg() & mask64(w), unary(UnOp::Neg, &b).low_u64());
                for to in [1u32, 9, 32, 64] {
                    let signed = cast(
                        Cast::Resize {
                            width: to,
                            signed: true,
                        },
                        &b,
                    )
                    .low_u64();
                    let sx = if to > w && (x >> (w - 1)) & 1 == 1 {
                        (x | !mask64(w)) & mask64(to)
                    } else {
                        x & mask64(to)
                    };
                    assert_eq!(sx, signed, "sext {w} -> {to} of {x:#x}");
                }
            }
        }
    }
}
