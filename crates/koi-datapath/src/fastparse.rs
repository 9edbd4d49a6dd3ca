//! The parser specialised to the program (PISCES's parser specialisation): it walks the P4
//! parser's state graph over the packet bytes without building a PHV, records only where each
//! header starts, and fills the flow key straight from the packet.
//!
//! It is compiled from the IR parser when every state does only what it can follow exactly:
//! fixed-width `extract`s into headers or `stack.next`, varbit `extract`s (the varbit the
//! header's last field, its size a value the packet gives, as IPv4 and TCP options are
//! parsed), `advance`s by a constant or by a value the packet gives, `lookahead`s into
//! variables (wider than 64 bits when the parser reads them through slices only, as a
//! `lookahead` of a header type lowers to), `setValid`/`setInvalid` and header copies (as
//! sub-parsers lower to), assignments to metadata, locals and temporaries, to the fields of
//! headers that no `extract` or copy fills (the header a `lookahead` of a header type lowers
//! to), which it holds as variables, and to fields of extracted headers outside stacks,
//! unions and header copies (a variable over the packet's bits until the header is
//! extracted again), `select`s and `verify`s. The values these use are up to 64 bits: header
//! fields, validity bits, stack indices, fields of stack elements at run-time indices
//! (`stack.last`), the ingress port, the packet length, constants and the variables assigned
//! before, combined by slices, concatenations, casts, arithmetic, shifts, comparisons and
//! logic; a `select` matches them against values, masks, prefixes and ranges. Anything else
//! (a wide `lookahead` read whole, assignments to fields of stack elements, union members or
//! copied headers, value sets) leaves the program without a fast parser: its packets take
//! the interpreter's parser.
//!
//! At run time a parse stops where the P4 parser errs or rejects (a full stack, a failed
//! `verify`, `reject`, a `select` without a match, a packet too short for an `extract`, an
//! `advance` or a `lookahead`, and for v1model an `advance` or a varbit size that is not
//! whole bytes, a varbit size above its maximum), with the headers parsed until then, as the
//! architectures go on: v1model to ingress with `parser_error` set, uBPF sending the packet
//! out unchanged. A stop on the packet's end (`PacketTooShort`) is marked
//! ([`Parsed::short`], with the bits the parse needed, which the key holds): a longer packet
//! would have parsed on, so the megaflow of such a run, and the template of its path, hold
//! only for packets shorter than the parse needed (a size read from the packet that decided
//! where it stopped is pinned, as for the later offsets below).
//! [`FastParser::parse`] answers `false` (the interpreter's parser takes the packet) past the
//! state budget.
//! When it answers `true`, the header offsets and the key are exactly what the interpreter's
//! parse and [`crate::FlowKeyLayout::extract`] give (the datapath checks this on every
//! slow-path packet: [`crate::DatapathStats::fast_parse_mismatch`]).
//!
//! Most packets do not walk the state graph: each parse path seen becomes a **template**
//! (the `select` bits that chose it, and the key extraction resolved to packet offsets), and
//! a packet matching a template's bits gets its key from the template. A template that keeps
//! matching gets native code doing both at once (module `fastparse::jit`). A value that moves
//! the later headers (an `advance` amount, a varbit size) is pinned: the template holds for
//! the packet bits it was computed from only. A variable's value is pinned likewise, through
//! the packet bits it was computed from when it decided (its **provenance**, which the parse
//! records: a variable may be overwritten after it decided, and the key holds its final
//! value); a variable in the key is then a constant of the template. Templates are tried
//! most used first, except that a packet first tries the template its value names in the
//! bits that tell the native templates apart (an IP protocol number between a UDP and a
//! TCP path: `Pick`), so that a mix of paths does not pay for the ones ranked first.
//!
//! The flow key is the headers' final bits. A parse that moves a header's bits after a
//! decision read them (extracted again, copied over, zeroed by `setValid`), overwrites a
//! field a decision read, or reads a `lookahead` again into a variable a decision read, has
//! a key that need not tell its path from another's: [`FastParser::key`] leaves such a packet
//! to the interpreter's path, which checks a megaflow's recorded decisions as it replays them
//! (its own megaflow is never compiled).
//!
//! # Where the parts are
//!
//! This file holds the types (operations, expressions, the parse's result, templates);
//! `build` makes the fast parser from the IR parser, `walk` runs it over a packet,
//! `template` makes and matches parse-path templates, `jit` gives templates native code.

use crate::flowkey::FlowKeyLayout;
use crate::native::Jit;
use std::sync::Arc;

mod build;
mod jit;
mod template;
mod walk;

use koi_ir::entity::EntityId;
use koi_ir::{
    BinOp, Cast, Expr, HeaderRef, Keyset, Pattern, Pipeline, Place, Role, SlotId, SlotKind, Stmt,
    Target, Transition, Ty,
};

// What the parts share, and the run-time helpers other modules use.
pub(crate) use build::path_fixed;
use build::*;
pub use walk::{read_bits, write_key};

/// No offset: the header was not extracted.
pub const NONE: u32 = u32::MAX;

#[derive(Clone, Debug)]
enum Op {
    Extract {
        h: u32,
        bits: u32,
    },
    ExtractNext {
        stack: u32,
        bits: u32,
    },
    Advance(u32),
    /// `advance(e)` by a value the packet gives (bits; a whole number of bytes, else the
    /// interpreter's parser takes the packet).
    AdvanceBy(Ex),
    /// `extract(h, e)` of a header whose last field is a varbit of at most `max` bits: its
    /// `fixed` bits, then `e` bits of varbit.
    ExtractVar {
        h: u32,
        fixed: u32,
        e: Ex,
        max: u32,
    },
    /// `vars[var] = e` (a metadata, local or temporary slot written by the parser).
    Assign {
        id: u32,
        var: u32,
        e: Ex,
        /// The variable holds a field of an extracted header ([`Ex::Over`]).
        over: bool,
    },
    /// `vars[var] = pkt.lookahead<bit<w>>()` (assignment `id`, its value [`Ex::Ahead`]).
    /// A `wide` one (more than 64 bits) records where it read ([`Parsed::ahead_at`]): the
    /// parser reads it through slices only ([`Ex::AheadSlice`]).
    Lookahead {
        id: u32,
        var: u32,
        w: u32,
        wide: bool,
    },
    /// `verify(lo <= e <= hi, ...)` (with `outside`: `verify(e < lo || e > hi)`, as `!=`
    /// gives): the parse goes on only when it holds (else it stops on the error).
    Verify {
        e: Ex,
        lo: u64,
        hi: u64,
        outside: bool,
    },
    /// `h.setInvalid()`: the header is invalid, its fields keep their values.
    SetInvalid(u32),
    /// `h.setValid()`: a header that was invalid becomes valid with its fields zeroed (v1model;
    /// uBPF keeps them, `zero: false`); the other members of its union become invalid. The
    /// fields of a header held in variables are zeroed by assignments (`zeros`: assignment
    /// id, variable).
    SetValid {
        h: u32,
        zero: bool,
        zeros: Vec<(u32, u32)>,
    },
    /// `dst = src` for two headers: fields and validity; if valid, the other members of
    /// `dst`'s union become invalid.
    Copy {
        dst: u32,
        src: u32,
    },
}

#[derive(Clone, Copy, Debug)]
enum To {
    State(u32),
    Accept,
    Reject,
}

/// A select key or part of one, evaluated to at most 64 bits.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Ex {
    /// Field `slot`: `w` bits at bit `off` of header `h` (0 if not extracted).
    Field {
        h: u32,
        off: u32,
        w: u32,
        slot: SlotId,
    },
    Valid(u32),
    Next(u32),
    Port(u32),
    Len(u32),
    /// A value and its width.
    Const(u64, u32),
    /// A slot the parser assigned (index into [`Parsed::vars`]).
    Var(u32, u32),
    /// `(value >> lo) & mask(w)`
    Slice(Box<Ex>, u32, u32),
    /// `a << wb | b`
    Concat(Box<Ex>, Box<Ex>, u32),
    /// Truncation to `w` bits (zero extension is free).
    Trunc(Box<Ex>, u32),
    /// Sign extension from `from` to `to` bits.
    Sext(Box<Ex>, u32, u32),
    /// A binary operation on values of at most 64 bits (the left operand's width `w`, the
    /// right one's `wb`), as compiled programs compute it (`program::arith64`, the
    /// interpreter's operators bit for bit): `stack.last`'s index is `next - 1`, parsers
    /// compute with their fields and compare them.
    Bin(BinOp, Box<Ex>, Box<Ex>, u32, u32),
    /// `!b`, `~x`, `-x` on a value of `w` bits.
    Un(koi_ir::UnOp, Box<Ex>, u32),
    /// The `w` packet bits at the cursor when a `lookahead` ran (only as the value of an
    /// [`Op::Lookahead`] assignment: [`Parsed::lookaheads`] says where).
    Ahead(u32),
    /// A field of an extracted header that a parser assignment may overwrite (variable
    /// `var`): the variable's value once assigned ([`Parsed::ovr`]), else the packet bits
    /// (`field`, an [`Ex::Field`]).
    Over {
        var: u32,
        field: Box<Ex>,
    },
    /// Bits `hi..=lo` of the wide `lookahead` variable `var` of `w` bits: packet bits where
    /// its `lookahead` last read ([`Parsed::ahead_at`]; 0 before any).
    AheadSlice {
        var: u32,
        hi: u32,
        lo: u32,
        w: u32,
    },
    /// The field `w` bits at bit `off` of stack element `elems[index]` (headers of one
    /// type), as [`Ex::Field`] reads it; 0 for an index past the stack, as the
    /// interpreter's out-of-range read (`stack.last` before any `extract(stack.next)`).
    StackField {
        elems: Vec<u32>,
        /// The field's slot in each element.
        slots: Vec<SlotId>,
        index: Box<Ex>,
        off: u32,
        w: u32,
    },
}

#[derive(Clone, Copy, Debug)]
enum Pat {
    Mask { v: u64, m: u64 },
    Range { lo: u64, hi: u64 },
}

#[derive(Clone, Debug)]
enum Trans {
    Goto(To),
    Select {
        keys: Vec<Ex>,
        cases: Vec<(Vec<Pat>, To)>,
    },
}

#[derive(Clone, Debug)]
struct St {
    ops: Vec<Op>,
    trans: Trans,
}

/// Where one key field comes from.
#[derive(Clone, Debug)]
enum KeyOp {
    /// `len` (1..=64) bits at bit `off` of header `h`, to key bit `key`.
    Field {
        h: u32,
        off: u32,
        len: u32,
        key: u32,
    },
    Valid {
        h: u32,
        key: u32,
    },
    /// Bits `lsb .. lsb + len` of a value.
    Next {
        stack: u32,
        lsb: u32,
        len: u32,
        key: u32,
    },
    Port {
        lsb: u32,
        len: u32,
        key: u32,
    },
    Len {
        lsb: u32,
        len: u32,
        key: u32,
    },
    Var {
        var: u32,
        lsb: u32,
        len: u32,
        key: u32,
    },
    /// Bits `lsb .. lsb + len` of the varbit field `rel` bits into header `h` (its last
    /// field), to key bit `key`: the varbit's value is its packet bits as a number (of the
    /// length its `extract` gave it), zero-extended to the slot's width.
    Varbit {
        h: u32,
        rel: u32,
        lsb: u32,
        len: u32,
        key: u32,
    },
    /// Bits `lsb .. lsb + len` of an overridable field (variable `var`): the variable once
    /// assigned, else the `len` packet bits at bit `off` of header `h`.
    Over {
        var: u32,
        h: u32,
        off: u32,
        lsb: u32,
        len: u32,
        key: u32,
    },
    /// `len` (1..=64) bits at bit `off` of wide `lookahead` variable `var` (packet bits where
    /// it read), to key bit `key`.
    Ahead {
        var: u32,
        off: u32,
        len: u32,
        key: u32,
    },
    /// Bits `lsb .. lsb + len` of the length of header `h`'s varbit.
    VarbitLen {
        h: u32,
        lsb: u32,
        len: u32,
        key: u32,
    },
}

impl KeyOp {
    /// For [`KeyOp::Varbit`] with a varbit of `n` bits: the `(packet offset from the
    /// header's start, length (1..=64), key bit)` of the pieces it copies (the rest of its
    /// key bits are zero).
    fn varbit_pieces(
        rel: u32,
        lsb: u32,
        len: u32,
        key: u32,
        n: u32,
    ) -> impl Iterator<Item = (u32, u32, u32)> {
        let c = n.min(lsb + len).saturating_sub(lsb);
        let (off, k) = (rel + n.saturating_sub(lsb + c), key + len - c);
        (0..c)
            .step_by(64)
            .map(move |d| (off + d, (c - d).min(64), k + d))
    }
}

/// Where the headers of one packet are.
#[derive(Clone, Debug, Default)]
pub struct Parsed {
    /// When the parse stopped because the packet is too short for an `extract`, an
    /// `advance` or a `lookahead` (`PacketTooShort`; a longer packet would have parsed on):
    /// the bits of packet it needed (from the packet's start), which the key holds
    /// ([`crate::FlowKeyLayout::set_stop`]); else 0 ([`Parsed::short`]).
    pub short_bits: u64,
    /// Bit offset in the packet of the bits each header's fields hold (by `HeaderId`
    /// index: extracted there, or copied from a header extracted there), [`NONE`] if they
    /// are all zero (never written, or zeroed by `setValid`).
    pub hdr_off: Vec<u32>,
    /// Whether each header is valid (a header can hold bits and be invalid: `setInvalid`,
    /// a union sibling extracted after it).
    pub valid: Vec<bool>,
    /// Each stack's next index.
    pub next: Vec<u32>,
    /// The length (bits) of each header's varbit field, as its `extract` set it (0 for
    /// headers without one, or not extracted).
    pub varbit: Vec<u32>,
    /// Bits consumed.
    pub cursor: u32,
    /// Values of the slots the parser assigned.
    pub vars: Vec<u64>,
    /// The assignments run, in order (see [`FastParser::assignment`]).
    pub assigned: Vec<u32>,
    /// Whether a header's bits moved (extracted again, copied over, zeroed by `setValid`)
    /// after a `select`, `verify` or assignment read them, or its validity changed after an
    /// assignment read it: what was read is no longer in the final headers, which parse-path
    /// templates and the tracer start from.
    pub reextracted: bool,
    /// Run every assignment and record it in `assigned` (for the slow path's tracer); when
    /// false, assignments whose values neither the key nor a `select` reads are skipped.
    pub record: bool,
    /// The `select` keys evaluated, in order: (state, key index, value).
    /// Each with the stack element it read through a run-time index ([`NONE`]: none).
    selects: Vec<(u32, u32, u64, u32)>,
    /// The `verify`s that passed, in order: (state, op index).
    verified: Vec<(u32, u32, u32)>,
    /// The `advance`s by a packet value, in order: (state, op index, bits).
    advanced: Vec<(u32, u32, u64)>,
    /// The stack elements reads through a run-time index ([`Ex::StackField`]) named, in
    /// the order they were read ([`NONE`]: an index past the stack).
    pub(crate) stack_reads: Vec<u32>,
    /// Per entry of `assigned`: the range of `stack_reads` its expression made.
    pub(crate) assigned_reads: Vec<(u32, u32)>,
    /// The cursor (bits) at each `lookahead` assigned, in order.
    pub(crate) lookaheads: Vec<u32>,
    /// The end (bits) of the furthest `lookahead`: a packet must be this long too.
    ahead_end: u32,
    /// Where each variable's value comes from (with [`FastParser`]'s `vars_read`): a range
    /// of `prov_ranges`, the packet bits (offset, length) it was computed from.
    prov: Vec<(u32, u32)>,
    prov_ranges: Vec<(u32, u32)>,
    /// Per variable: the cursor where its wide `lookahead` last read ([`NONE`]: not yet).
    pub(crate) ahead_at: Vec<u32>,
    /// Per variable holding an overridable field: whether an assignment overwrote the
    /// field since its header's bits last moved.
    ovr: Vec<bool>,
    /// The packet bits the variables that decided the path were computed from (a
    /// `select`, `verify`, `advance` or varbit size reading a variable): a parse-path
    /// template pins them. `unpinned`: one came from something else (the port, the length).
    pins: Vec<(u32, u32)>,
    unpinned: bool,
    /// The parse stopped early on a value the record of the path does not hold (a failed
    /// `verify`, an `advance` that is not whole bytes): no parse-path template. The other
    /// early stops (a full stack, a `reject`, a `select` without match) follow from the
    /// path itself or from the `select` values it records.
    stopped_unrecorded: bool,
    /// States visited.
    visited: u64,
}

impl Parsed {
    /// Whether the parse stopped because the packet is too short for it (`PacketTooShort`).
    #[inline]
    pub fn short(&self) -> bool {
        self.short_bits != 0
    }

    /// Feeds `h` what the slow path's tracer starts from ([`crate::program::Tracer::new`]):
    /// where the headers are, their validity, varbit lengths, the cursor, and the parser's
    /// assignments with the stack elements and `lookahead` cursors they read.
    pub(crate) fn trace_start<H: std::hash::Hasher>(&self, h: &mut H) {
        use std::hash::Hash;
        self.cursor.hash(h);
        self.reextracted.hash(h);
        self.hdr_off.hash(h);
        self.valid.hash(h);
        self.varbit.hash(h);
        self.lookaheads.hash(h);
        self.assigned.hash(h);
        self.assigned_reads.hash(h);
        self.stack_reads.hash(h);
    }
}

/// Why [`FastParser::size`] gave no size.
enum Stop {
    /// The parse stops on an error there (as the architecture goes on from a parser error).
    Parse,
    /// The interpreter's parser takes the packet.
    Interpreter,
}

/// A check of a parse-path template: `len` packet bits at bit `off` equal `value`.
#[derive(Clone, Copy, Debug)]
struct Check {
    off: u32,
    len: u32,
    value: u64,
}

/// A copy of `len` (1..=64) packet bits at bit `off` to key bit `key`.
#[derive(Clone, Copy, Debug)]
struct Copy {
    off: u32,
    len: u32,
    key: u32,
}

/// A [`Copy`] or [`Check`] resolved, when the template's minimum length guarantees it, to one
/// unaligned 8-byte big-endian load at `byte`: the value is `(load << shl) >> shr`, and a copy
/// ORs it `<< kshl` into key word `word` (a copy never straddles key words).
#[derive(Clone, Copy, Debug)]
struct Load {
    byte: usize,
    shl: u32,
    shr: u32,
    kshl: u32,
    word: usize,
}

impl Load {
    /// The load for `len` (1..=64) packet bits at bit `off`, if `off`'s 8-byte window lies
    /// within `min_len` bytes and holds the field.
    fn new(off: u32, len: u32, min_len: usize) -> Option<Load> {
        let byte = (off / 8) as usize;
        let shl = off % 8;
        (len > 0 && shl + len <= 64 && byte + 8 <= min_len).then_some(Load {
            byte,
            shl,
            shr: 64 - len,
            kshl: 0,
            word: 0,
        })
    }

    #[inline(always)]
    fn value(&self, pkt: &[u8]) -> u64 {
        match pkt
            .get(self.byte..self.byte + 8)
            .and_then(|w| <[u8; 8]>::try_from(w).ok())
        {
            Some(b) => (u64::from_be_bytes(b) << self.shl) >> self.shr,
            None => 0,
        }
    }
}

/// One parse path, as the fast parser followed it for some packet: the `select` key bits
/// that chose it (any packet with the same bits there, long enough, takes the same path:
/// the headers are at the same offsets) and the key extraction for it, resolved to packet
/// offsets and constants.
#[derive(Clone, Debug)]
struct Template {
    min_len: usize,
    /// Packets this long or longer do not take the path (`usize::MAX`: any length does):
    /// its parse stopped on the packet's end ([`Parsed::short`]).
    max_len: usize,
    checks: Vec<Check>,
    /// Exclusion checks: `len` packet bits at bit `off` equal none of the values. A
    /// `select` on one field that took its default after cases of exact values (a UDP port
    /// told from 2152) holds for every packet without those values, not only for the value
    /// of the packet that made the template: otherwise every flow would need a template.
    excludes: Vec<(u32, u32, Vec<u64>)>,
    /// Port checks: the ingress port's low `w` bits equal `value`.
    port_checks: Vec<(u32, u64)>,
    /// Range checks of the `verify`s on the path: `len` packet bits at bit `off` lie in
    /// `[lo, hi]`.
    ranges: Vec<(u32, u32, u64, u64)>,
    /// The checks and copies that [`Load`]s do (most of them); the others stay in `checks`
    /// and `copies`.
    check_loads: Vec<(Load, u64)>,
    key_base: Vec<u64>,
    loads: Vec<Load>,
    copies: Vec<Copy>,
    port_ops: Vec<(u32, u32, u32)>,
    len_ops: Vec<(u32, u32, u32)>,
    /// Packets matched (counted until the template has native code).
    matched: u32,
    /// Native code doing [`Template::matches`] and [`Template::fill`] at once, once hot.
    code: Option<Arc<jit::TemplateCode>>,
    /// Whether a compile was tried (it is not retried).
    jit_tried: bool,
    /// Hits since the templates were last ranked (halved at each ranking).
    recent: u64,
}

/// The parse-path templates of one datapath, most hit first: they are tried in order, and
/// ranked again every [`RANK_EVERY`] hits (as OVS ranks its classifier's subtables), not on
/// every hit, since moving a template costs more than a few extra misses.
#[derive(Clone, Debug, Default)]
pub struct Templates {
    list: Vec<Template>,
    /// Hits until the next ranking.
    until_rank: u32,
    scratch: Option<Parsed>,
    /// Packets whose key came from a template, and from a full parse.
    pub hits: u64,
    pub parses: u64,
    /// Templates given native code, and codes whose key differed from the template's on
    /// the packet at hand (left without code; a bug if ever nonzero).
    pub native: u64,
    pub native_mismatch: u64,
    /// Packets whose key came from the template the pick guessed (see [`Pick`]).
    pub guessed: u64,
    /// The seed of the microflow key hash ([`koi_cache::WordHash`]) native templates compute.
    pub hash_seed: u64,
    /// The last packet [`FastParser::key`] parsed in full was too short for the parser
    /// ([`Parsed::short`]); with no key given, its run is a slow-path run, never cached.
    pub short: bool,
    /// Which native template to try first for a packet, when some packet bits tell them
    /// apart (see [`Pick`]); recomputed whenever the list or its native code changes.
    pick: Option<Pick>,
}

/// A guess at a packet's template from packet bits that native templates check against
/// different values (as an IP protocol number tells a UDP path from a TCP one): the
/// template whose value the packet holds is tried first, so that a mix of paths does not
/// pay for the templates ranked before its own. Only the order changes: a
/// guess that does not take the packet leaves it to the templates in rank order, and any
/// template that takes a packet gives the same key (that of its parse).
#[derive(Clone, Debug)]
struct Pick {
    /// The packet bits read: `len` (1..=64) at bit `off`.
    off: u32,
    len: u32,
    /// The value each template checks, with its index in the list.
    wants: Vec<(u64, usize)>,
}

impl Templates {
    /// No templates yet; native ones will hash keys with `hash_seed`.
    pub fn new(hash_seed: u64) -> Templates {
        Templates {
            hash_seed,
            ..Templates::default()
        }
    }
}

/// At most this many templates are kept.
const TEMPLATES: usize = 8;

/// Template hits between two rankings.
const RANK_EVERY: u32 = 1024;

impl Templates {
    /// The template to try first for `pkt`, if the pick names one (see [`Pick`]).
    #[inline]
    fn guess(&self, pkt: &[u8]) -> Option<usize> {
        let p = self.pick.as_ref()?;
        let v = read_bits(pkt, p.off, p.len);
        p.wants.iter().find(|w| w.0 == v).map(|w| w.1)
    }

    /// Recomputes the pick from the leading templates with native code (those the common
    /// case tries): of the packet bits they check, those whose values tell the most of them
    /// apart (at least two), each value naming the first template that checks it (one for
    /// whole packets if there is one).
    #[inline(never)]
    fn repick(&mut self) {
        self.pick = None;
        let native = self.list.iter().take_while(|t| t.code.is_some()).count();
        if native < 2 {
            return;
        }
        // Each template's value checks as (bit offset, bits, value), loads or not.
        let checked = |t: &Template| {
            let loads = t
                .check_loads
                .iter()
                .map(|(l, v)| (l.byte as u32 * 8 + l.shl, 64 - l.shr, *v));
            let others = t.checks.iter().map(|c| (c.off, c.len, c.value));
            loads.chain(others).collect::<Vec<_>>()
        };
        let checks: Vec<Vec<(u32, u32, u64)>> = self.list[..native].iter().map(checked).collect();
        // Templates of whole packets before those of runts (which take only packets shorter
        // than their path needs), in rank order otherwise.
        let mut order: Vec<usize> = (0..native).collect();
        order.sort_by_key(|&i| self.list[i].max_len != usize::MAX);
        for &(off, len, _) in checks.iter().flatten() {
            let mut wants: Vec<(u64, usize)> = Vec::with_capacity(native);
            for (i, cs) in order.iter().map(|&i| (i, &checks[i])) {
                if let Some(&(_, _, v)) = cs.iter().find(|c| c.0 == off && c.1 == len)
                    && wants.iter().all(|w| w.0 != v)
                {
                    wants.push((v, i));
                }
            }
            if wants.len() >= 2
                && self
                    .pick
                    .as_ref()
                    .is_none_or(|p| wants.len() > p.wants.len())
            {
                self.pick = Some(Pick { off, len, wants });
            }
        }
    }

    /// Counts a hit of template `i`, and ranks the templates by their recent hits (the
    /// newest first among equals) every [`RANK_EVERY`] hits.
    #[inline]
    fn hit(&mut self, i: usize) {
        self.hits += 1;
        self.list[i].recent += 1;
        self.until_rank = self.until_rank.saturating_sub(1);
        if self.until_rank == 0 {
            self.rank();
        }
    }

    #[inline(never)]
    fn rank(&mut self) {
        self.until_rank = RANK_EVERY;
        // A stable sort of at most `TEMPLATES` elements (an insertion sort: no allocation).
        self.list.sort_by_key(|t| std::cmp::Reverse(t.recent));
        for t in &mut self.list {
            t.recent /= 2;
        }
        self.repick();
    }
}

/// The specialised parser of one pipeline.
#[derive(Clone, Debug)]
pub struct FastParser {
    states: Vec<St>,
    start: u32,
    headers: usize,
    /// Per stack: its elements' header indices.
    stacks: Vec<Vec<u32>>,
    /// Per header: the other members of its union.
    siblings: Vec<Vec<u32>>,
    key: Vec<KeyOp>,
    words: usize,
    /// The key word holding where a parse stopped short ([`crate::FlowKeyLayout::set_stop`]).
    stop_word: usize,
    margin: u64,
    /// The assignments: destination slot and value.
    assigns: Vec<(SlotId, Ex)>,
    /// The slot of each variable ([`Ex::Var`]).
    var_slots: Vec<SlotId>,
    /// Whether the key, a `select`, a `verify` or an `advance` reads a variable (else the
    /// assignments and `lookahead`s only matter to the slow path, which records them).
    vars_read: bool,
    /// Per header: the variables holding its overridable fields.
    hdr_over: Vec<Vec<u32>>,
    /// v1model and PSA: an `advance` that is not whole bytes is an error (uBPF, eBPF and XDP
    /// advance by bits, which the fast parser leaves to the interpreter).
    v1model: bool,
}

/// Architecture inputs the fast parser knows at the start of a parse, and the slots the
/// parser assigns.
struct Inputs {
    port: Option<SlotId>,
    len: Option<SlotId>,
    /// Slots set before the parser with values it cannot know (timestamps).
    unknown: Vec<SlotId>,
    vars: Vec<SlotId>,
    /// The variables (among `vars`) only a `lookahead` wider than 64 bits writes.
    wide: Vec<SlotId>,
    /// The variables (among `vars`) that are fields of extracted headers.
    over: Vec<SlotId>,
}

impl Inputs {
    fn var(&self, s: SlotId) -> Option<u32> {
        self.vars.iter().position(|v| *v == s).map(|i| i as u32)
    }
}

#[cfg(test)]
mod tests {
    use super::read_bits;
    use proptest::prelude::*;

    /// Bit `i` of `data` in network order (0: the first byte's top bit); 0 past the end.
    fn bit(data: &[u8], i: u32) -> u64 {
        data.get((i / 8) as usize)
            .map_or(0, |b| u64::from((b >> (7 - i % 8)) & 1))
    }

    proptest! {
        /// Any field, anywhere (across the end too): the bits one by one.
        #[test]
        fn read_bits_reads_the_bits_one_by_one(
            data in proptest::collection::vec(any::<u8>(), 0..24),
            bit_off in 0u32..200,
            len in 1u32..=64,
        ) {
            let want = (bit_off..bit_off + len).fold(0u64, |v, i| (v << 1) | bit(&data, i));
            prop_assert_eq!(read_bits(&data, bit_off, len), want);
        }
    }
}
