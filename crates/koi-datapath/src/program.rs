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
//! the traffic manager. XDP programs are one pass too, the verdict (`omd.output_action`) and
//! its port fixed by the megaflow. PSA programs are followed through both pipelines
//! (`program::psa`): the egress pass starts from `normal_meta` and its parser's headers are
//! the ones the ingress deparser emitted.
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
//!
//! # Where the parts are
//!
//! This file holds the types (nodes, operations, programs, the tracer's state); `trace`
//! executes the run's statements symbolically, `events` takes the run's other events
//! (tables, guards, the traffic manager, copies), `finish` builds the program at the end,
//! `run` runs programs, `jit` gives them native code, `display` prints them.

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

mod display;
mod events;
mod finish;
mod jit;
mod psa;
mod run;
mod trace;

pub use crate::native::Jit;
pub use jit::JitEvent;
pub(crate) use jit::Shapes;
// The helpers the parts share: the interpreter's arithmetic (native code and the fast
// parser use it too) and the tracer's folding.
use run::*;
pub(crate) use run::{arith64, unary64, v1_algo};
use trace::*;

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
    /// The custom CRCs, as the datapath copied them before the batch.
    pub(crate) customs: crate::customcrc::CustomCrcs,
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
    /// uBPF's semantics (no traffic manager, `mark_to_drop` a flag).
    ubpf: bool,
    /// The slot of the port the packet came in on (`Node::Port`).
    port: Option<SlotId>,
    /// XDP: `omd.output_action` and `omd.output_port`, which choose where the packet goes.
    xdp: Option<(Option<SlotId>, Option<SlotId>)>,
    /// eBPF filters: the `accept` slot, which chooses whether the packet goes back out of
    /// its input port, as it came in.
    ebpf: Option<Option<SlotId>>,
    /// PSA: the traffic manager's inputs and the metadata carried to egress.
    psa: Option<psa::PsaSetup>,
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
        let ubpf = p.arch == Architecture::Ubpf;
        let ebpf = (p.arch == Architecture::Ebpf).then(|| p.intrinsic("accept"));
        let psa = (p.arch == Architecture::Psa).then(|| psa::PsaSetup::new(p));
        let xdp = (p.arch == Architecture::Xdp).then(|| {
            (
                p.intrinsic("omd.output_action"),
                p.intrinsic("omd.output_port"),
            )
        });
        let opaque: Vec<SlotId> = p.intrinsic("packet_length").into_iter().collect();
        let inputs: Vec<(SlotId, Input)> = [
            ("ingress_global_timestamp", Input::Now),
            ("egress_global_timestamp", Input::Now),
            ("enq_timestamp", Input::Now),
            ("deq_timedelta", Input::Zero),
            ("iin.ingress_timestamp", Input::Now),
            ("ein.egress_timestamp", Input::Now),
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
            .or_else(|| p.intrinsic("input_port"))
            .or_else(|| p.intrinsic("imd.input_port"))
            .or_else(|| p.intrinsic("ipin.ingress_port"));
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
            port,
            xdp,
            ebpf,
            psa,
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
    /// The parser stopped on an error or a `reject` ([`Tracer::parser_failed`]).
    parse_rejected: bool,
    /// What the start of the run read of the PHV: where its per-packet inputs are (bit
    /// offset, width; the first read slots), and the slots that started as constants from it
    /// (slot, node, bit offset, width).
    inputs: Vec<(u32, u32)>,
    consts: Vec<(u32, N, u32, u32)>,
    /// PSA: what the egress pass parses ([`psa`]).
    psa: psa::PsaTrace,
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
