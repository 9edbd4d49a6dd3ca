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

use crate::flowkey::FlowKeyLayout;
use crate::native::Jit;
use std::sync::Arc;

mod jit;
use koi_ir::entity::EntityId;
use koi_ir::{
    BinOp, Cast, Expr, HeaderRef, Keyset, Pattern, Pipeline, Place, Role, SlotId, SlotKind, Stmt,
    Target, Transition, Ty,
};

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
    /// v1model: an `advance` that is not whole bytes is an error (uBPF advances by bits,
    /// which the fast parser leaves to the interpreter).
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

impl FastParser {
    /// The specialised parser of `p`'s parser with flow key `layout`, or `None` if the
    /// parser does something it does not follow. `margin` is the interpreter's
    /// `parser_state_margin`.
    pub fn new(p: &Pipeline, layout: &FlowKeyLayout, margin: u64) -> Option<FastParser> {
        let Some(koi_ir::BlockRef::Parser(pid)) = p.block(Role::Parser) else {
            return None;
        };
        let parser = p.parsers.get(pid)?;
        let mut inputs = match p.arch {
            koi_ir::Architecture::V1Model => Inputs {
                port: p.intrinsic("ingress_port"),
                len: p.intrinsic("packet_length"),
                unknown: p
                    .intrinsic("ingress_global_timestamp")
                    .into_iter()
                    .collect(),
                vars: Vec::new(),
                wide: Vec::new(),
                over: Vec::new(),
            },
            koi_ir::Architecture::Ubpf => Inputs {
                port: p.intrinsic("input_port"),
                len: p.intrinsic("packet_length"),
                unknown: Vec::new(),
                vars: Vec::new(),
                wide: Vec::new(),
                over: Vec::new(),
            },
            _ => return None,
        };
        // The slots the parser assigns (and `lookahead`s write): plain metadata, locals and
        // temporaries, and the fields of headers the parser fills by assignments only (no
        // `extract` or copy moves packet bits into them: the header a `lookahead` of a header
        // type lowers to), which it holds as variables.
        let (scratch, overridable) = assigned_headers(p, parser);
        for st in parser.states.values() {
            for s in &st.stmts {
                if let Stmt::Assign { dst, .. } | Stmt::Lookahead { dst } = s {
                    let Place::Slot(d) = dst else {
                        return None;
                    };
                    let slot = p.phv.slots.get(*d)?;
                    let plain = match slot.kind {
                        SlotKind::Metadata | SlotKind::Local | SlotKind::Temp => true,
                        SlotKind::HeaderField(h) if matches!(s, Stmt::Assign { .. }) => {
                            if overridable.contains(&h) {
                                fixed_offset(p, h, *d)?;
                                if !inputs.over.contains(d) {
                                    inputs.over.push(*d);
                                }
                            }
                            scratch.contains(&h) || overridable.contains(&h)
                        }
                        _ => false,
                    };
                    // A wide `lookahead` target that nothing assigns: read through slices.
                    let wide = slot.width > 64
                        && matches!(s, Stmt::Lookahead { .. })
                        && !assigned_in(parser, *d);
                    if wide && !inputs.wide.contains(d) {
                        inputs.wide.push(*d);
                    }
                    if !plain
                        || (slot.width > 64 && !wide)
                        || Some(*d) == inputs.port
                        || Some(*d) == inputs.len
                        || inputs.unknown.contains(d)
                    {
                        return None;
                    }
                    if inputs.var(*d).is_none() {
                        inputs.vars.push(*d);
                    }
                }
            }
        }
        let mut assigns = Vec::new();
        let headers = p.phv.headers.len();
        let stacks: Vec<Vec<u32>> = p
            .phv
            .stacks
            .values()
            .map(|s| s.elems.iter().map(|h| h.index()).collect())
            .collect();
        let mut siblings = vec![Vec::new(); headers];
        for u in p.phv.unions.values() {
            for &m in &u.members {
                siblings[m.index() as usize] = u
                    .members
                    .iter()
                    .filter(|x| **x != m)
                    .map(|x| x.index())
                    .collect();
            }
        }
        let mut states = Vec::with_capacity(parser.states.len());
        for (_, st) in parser.states.iter() {
            let mut ops = Vec::new();
            for s in &st.stmts {
                ops.push(match s {
                    Stmt::Extract {
                        header: HeaderRef::Header(h),
                        varbit_bits: Some(e),
                    } => {
                        let (fixed, max) = varbit_last(p, *h)?;
                        let (e, _) = key_expr(p, &inputs, e)?;
                        Op::ExtractVar {
                            h: h.index(),
                            fixed,
                            e,
                            max,
                        }
                    }
                    Stmt::Extract {
                        header,
                        varbit_bits: None,
                    } => match header {
                        HeaderRef::Header(h) => Op::Extract {
                            h: h.index(),
                            bits: fixed_width(p, *h)?,
                        },
                        HeaderRef::Next(s) => {
                            let stack = p.phv.stacks.get(*s)?;
                            let bits = fixed_width(p, *stack.elems.first()?)?;
                            Op::ExtractNext {
                                stack: s.index(),
                                bits,
                            }
                        }
                        _ => return None,
                    },
                    Stmt::Advance {
                        bits: Expr::Const(b),
                    } => {
                        let n = u32::try_from(b.to_u64()?).ok()?;
                        // v1model rejects advances that are not whole bytes: leave them to
                        // the interpreter.
                        if n % 8 != 0 {
                            return None;
                        }
                        Op::Advance(n)
                    }
                    Stmt::Advance { bits } => Op::AdvanceBy(key_expr(p, &inputs, bits)?.0),
                    Stmt::Assign {
                        dst: Place::Slot(d),
                        value,
                    } => {
                        let (e, _) = key_expr(p, &inputs, value)?;
                        let var = inputs.var(*d)?;
                        assigns.push((*d, e.clone()));
                        Op::Assign {
                            id: (assigns.len() - 1) as u32,
                            var,
                            e,
                            over: inputs.over.contains(d),
                        }
                    }
                    Stmt::Lookahead {
                        dst: Place::Slot(d),
                    } => {
                        let var = inputs.var(*d)?;
                        let w = p.phv.slots.get(*d)?.width;
                        assigns.push((*d, Ex::Ahead(w)));
                        Op::Lookahead {
                            id: (assigns.len() - 1) as u32,
                            var,
                            w,
                            wide: inputs.wide.contains(d),
                        }
                    }
                    Stmt::Verify { cond, .. } => {
                        // A range on one value, or any condition the fast parser computes
                        // (it holds when it is 1).
                        let (e, lo, hi, outside) =
                            verify_range(p, &inputs, cond).or_else(|| {
                                let (e, w) = key_expr(p, &inputs, cond)?;
                                (w == 1).then_some((e, 1, 1, false))
                            })?;
                        Op::Verify { e, lo, hi, outside }
                    }
                    Stmt::SetInvalid(HeaderRef::Header(h)) => Op::SetInvalid(h.index()),
                    Stmt::SetValid(HeaderRef::Header(h)) => {
                        let zero = p.arch == koi_ir::Architecture::V1Model;
                        let mut zeros = Vec::new();
                        if zero && scratch.contains(h) {
                            for f in &p.phv.headers.get(*h)?.fields {
                                let Some(var) = inputs.var(*f) else {
                                    continue;
                                };
                                let w = p.phv.slots.get(*f)?.width;
                                assigns.push((*f, Ex::Const(0, w)));
                                zeros.push(((assigns.len() - 1) as u32, var));
                            }
                        }
                        Op::SetValid {
                            h: h.index(),
                            zero,
                            zeros,
                        }
                    }
                    Stmt::CopyHeader {
                        dst: HeaderRef::Header(d),
                        src: HeaderRef::Header(s),
                    } if same_layout(p, *d, *s) => Op::Copy {
                        dst: d.index(),
                        src: s.index(),
                    },
                    _ => return None,
                });
            }
            let to = |t: &Target| match t {
                Target::State(s) => To::State(s.index()),
                Target::Accept => To::Accept,
                Target::Reject => To::Reject,
            };
            let trans = match st.transition.as_ref()? {
                Transition::Goto(t) => Trans::Goto(to(t)),
                Transition::Select { keys, cases } => {
                    let mut ks = Vec::new();
                    let mut widths = Vec::new();
                    for k in keys {
                        let (e, w) = key_expr(p, &inputs, k)?;
                        ks.push(e);
                        widths.push(w);
                    }
                    let mut cs = Vec::new();
                    for c in cases {
                        let mut pats = Vec::new();
                        for (ks, w) in c.keysets.iter().zip(&widths) {
                            pats.push(match ks {
                                Keyset::Pattern(pt) => pattern(pt, *w)?,
                                Keyset::ValueSet(_) => return None,
                            });
                        }
                        if pats.len() != widths.len() {
                            return None;
                        }
                        cs.push((pats, to(&c.next)));
                    }
                    Trans::Select {
                        keys: ks,
                        cases: cs,
                    }
                }
            };
            states.push(St { ops, trans });
        }
        let mut key = Vec::new();
        for f in layout.fields() {
            let slot = p.phv.slots.get(f.slot)?;
            let kind = slot.kind;
            match kind {
                SlotKind::HeaderField(h) if inputs.over.contains(&f.slot) => {
                    let hd = p.phv.headers.get(h)?;
                    key.push(KeyOp::Over {
                        var: inputs.var(f.slot)?,
                        h: h.index(),
                        off: slot.offset - hd.offset + (f.slot_width - f.lsb - f.width),
                        lsb: f.lsb,
                        len: f.width,
                        key: f.key_offset,
                    });
                }
                SlotKind::HeaderField(_) if inputs.var(f.slot).is_some() && f.width <= 64 => {
                    key.push(KeyOp::Var {
                        var: inputs.var(f.slot)?,
                        lsb: f.lsb,
                        len: f.width,
                        key: f.key_offset,
                    });
                }
                SlotKind::HeaderField(h) if matches!(slot.ty, Ty::Varbit(_)) => {
                    let hd = p.phv.headers.get(h)?;
                    varbit_last(p, h)?;
                    key.push(KeyOp::Varbit {
                        h: h.index(),
                        rel: slot.offset - hd.offset,
                        lsb: f.lsb,
                        len: f.width,
                        key: f.key_offset,
                    });
                }
                SlotKind::HeaderField(h) => {
                    let hd = p.phv.headers.get(h)?;
                    fixed_offset(p, h, f.slot)?;
                    let rel = slot.offset - hd.offset;
                    let mut start = rel + (f.slot_width - f.lsb - f.width);
                    let mut left = f.width;
                    let mut k = f.key_offset;
                    while left > 0 {
                        // Continue the previous copy when this field follows it both in the
                        // header and in the key (whole headers become a few 64-bit copies).
                        if let Some(KeyOp::Field {
                            h: ph,
                            off: po,
                            len: pl,
                            key: pk,
                        }) = key.last_mut()
                            && *ph == h.index()
                            && *po + *pl == start
                            && *pk + *pl == k
                            && *pl < 64
                        {
                            let n = left.min(64 - *pl);
                            *pl += n;
                            start += n;
                            k += n;
                            left -= n;
                            continue;
                        }
                        let len = left.min(64);
                        key.push(KeyOp::Field {
                            h: h.index(),
                            off: start,
                            len,
                            key: k,
                        });
                        start += len;
                        k += len;
                        left -= len;
                    }
                }
                SlotKind::Validity(h) => key.push(KeyOp::Valid {
                    h: h.index(),
                    key: f.key_offset,
                }),
                SlotKind::VarbitLength(v) if f.width <= 64 => {
                    let SlotKind::HeaderField(h) = p.phv.slots.get(v)?.kind else {
                        return None;
                    };
                    varbit_last(p, h)?;
                    key.push(KeyOp::VarbitLen {
                        h: h.index(),
                        lsb: f.lsb,
                        len: f.width,
                        key: f.key_offset,
                    });
                }
                SlotKind::NextIndex(s) if f.width <= 64 => key.push(KeyOp::Next {
                    stack: s.index(),
                    lsb: f.lsb,
                    len: f.width,
                    key: f.key_offset,
                }),
                SlotKind::Metadata | SlotKind::Local | SlotKind::Temp
                    if inputs.wide.contains(&f.slot) =>
                {
                    let mut left = f.width;
                    let mut off = f.slot_width - f.lsb - f.width;
                    let mut k = f.key_offset;
                    while left > 0 {
                        let len = left.min(64);
                        key.push(KeyOp::Ahead {
                            var: inputs.var(f.slot)?,
                            off,
                            len,
                            key: k,
                        });
                        off += len;
                        k += len;
                        left -= len;
                    }
                }
                SlotKind::Metadata | SlotKind::Local | SlotKind::Temp if f.width <= 64 => {
                    if let Some(var) = inputs.var(f.slot) {
                        key.push(KeyOp::Var {
                            var,
                            lsb: f.lsb,
                            len: f.width,
                            key: f.key_offset,
                        });
                    } else if Some(f.slot) == inputs.port {
                        key.push(KeyOp::Port {
                            lsb: f.lsb,
                            len: f.width,
                            key: f.key_offset,
                        });
                    } else if Some(f.slot) == inputs.len {
                        key.push(KeyOp::Len {
                            lsb: f.lsb,
                            len: f.width,
                            key: f.key_offset,
                        });
                    } else if inputs.unknown.contains(&f.slot) || written_by_parser(p, f.slot) {
                        return None;
                    }
                    // Otherwise zero when the parser ends (the parser writes only headers).
                }
                _ => return None,
            }
        }
        let vars_read = !inputs.over.is_empty()
            || key.iter().any(|k| matches!(k, KeyOp::Var { .. }))
            || states.iter().any(|st| match &st.trans {
                Trans::Select { keys, .. } => keys.iter().any(reads_var),
                Trans::Goto(_) => false,
            })
            || states.iter().any(|st| {
                st.ops.iter().any(|o| match o {
                    Op::Verify { e, .. } | Op::AdvanceBy(e) | Op::ExtractVar { e, .. } => {
                        reads_var(e)
                    }
                    _ => false,
                })
            });
        Some(FastParser {
            states,
            start: parser.start.index(),
            headers,
            stacks,
            siblings,
            key,
            words: layout.key_words().max(1),
            stop_word: layout.stop_word(),
            margin,
            hdr_over: (0..headers)
                .map(|h| {
                    let over = &inputs.over;
                    over.iter()
                        .filter(|s| {
                            p.phv.slots.get(**s).map(|x| x.kind)
                                == Some(SlotKind::HeaderField(koi_ir::HeaderId::new(h as u32)))
                        })
                        .filter_map(|s| inputs.var(*s))
                        .collect()
                })
                .collect(),
            var_slots: inputs.vars,
            vars_read,
            assigns,
            v1model: p.arch == koi_ir::Architecture::V1Model,
        })
    }

    /// Assignment `id` of the parser: destination slot and value.
    pub fn assignment(&self, id: u32) -> Option<&(SlotId, Ex)> {
        self.assigns.get(id as usize)
    }

    /// The parser's variables ([`Ex::Var`]: metadata, locals and temporaries it assigns).
    pub fn vars(&self) -> usize {
        self.var_slots.len()
    }

    /// The variable that holds `slot`.
    pub fn var_of(&self, slot: SlotId) -> Option<u32> {
        self.var_slots
            .iter()
            .position(|s| *s == slot)
            .map(|v| v as u32)
    }

    /// A [`Parsed`] sized for this parser.
    pub fn new_parsed(&self) -> Parsed {
        Parsed {
            short_bits: 0,
            hdr_off: vec![NONE; self.headers],
            varbit: vec![0; self.headers],
            valid: vec![false; self.headers],
            next: vec![0; self.stacks.len()],
            cursor: 0,
            vars: vec![0; self.var_slots.len()],
            assigned: Vec::with_capacity(8),
            reextracted: false,
            record: false,
            selects: Vec::with_capacity(8),
            verified: Vec::new(),
            advanced: Vec::new(),
            stack_reads: Vec::new(),
            assigned_reads: Vec::with_capacity(8),
            lookaheads: Vec::new(),
            ahead_end: 0,
            prov: vec![(0, 0); self.var_slots.len()],
            ahead_at: vec![NONE; self.var_slots.len()],
            ovr: vec![false; self.var_slots.len()],
            prov_ranges: Vec::new(),
            pins: Vec::new(),
            unpinned: false,
            stopped_unrecorded: false,
            visited: 0,
        }
    }

    /// Parses `pkt` received on `port` into `out` and writes the flow key into `key` (at
    /// least the layout's words). `false`: the packet needs the interpreter's parser.
    pub fn parse(&self, pkt: &[u8], port: u64, out: &mut Parsed, key: &mut [u64]) -> bool {
        out.hdr_off.fill(NONE);
        out.varbit.fill(0);
        out.valid.fill(false);
        out.next.fill(0);
        out.vars.fill(0);
        out.assigned.clear();
        out.reextracted = false;
        out.selects.clear();
        out.verified.clear();
        out.advanced.clear();
        out.stack_reads.clear();
        out.assigned_reads.clear();
        out.lookaheads.clear();
        out.ahead_end = 0;
        out.ahead_at.fill(NONE);
        out.ovr.fill(false);
        if self.vars_read {
            out.prov.fill((0, 0));
            out.prov_ranges.clear();
            out.pins.clear();
            out.unpinned = false;
        }
        out.stopped_unrecorded = false;
        out.short_bits = 0;
        let total = (pkt.len() as u64) * 8;
        let limit = self.margin + 8 * total;
        let mut cursor: u64 = 0;
        let mut state = self.start;
        let mut visited: u64 = 0;
        // A parse that stops early (an error, a `reject`, a `select` without match) ends
        // there (`break 'states`), with the headers parsed until then: v1model goes on to
        // ingress (`parser_error` says which error; the tracer follows the architecture's
        // write), uBPF sends the packet out unchanged (`Tracer::parser_failed`).
        'states: loop {
            visited += 1;
            if visited > limit {
                return false;
            }
            let Some(st) = self.states.get(state as usize) else {
                return false;
            };
            for (oi, op) in st.ops.iter().enumerate() {
                match *op {
                    Op::Extract { h, bits } => {
                        if cursor + u64::from(bits) > total {
                            out.short_bits = cursor + u64::from(bits);
                            break 'states;
                        }
                        self.set_header(out, h, cursor as u32);
                        cursor += u64::from(bits);
                    }
                    Op::ExtractNext { stack, bits } => {
                        let Some(elems) = self.stacks.get(stack as usize) else {
                            return false;
                        };
                        let i = out.next[stack as usize] as usize;
                        let Some(&h) = elems.get(i) else {
                            break 'states;
                        };
                        if cursor + u64::from(bits) > total {
                            out.short_bits = cursor + u64::from(bits);
                            break 'states;
                        }
                        self.set_header(out, h, cursor as u32);
                        out.next[stack as usize] += 1;
                        cursor += u64::from(bits);
                    }
                    Op::Advance(bits) => {
                        if cursor + u64::from(bits) > total {
                            out.short_bits = cursor + u64::from(bits);
                            break 'states;
                        }
                        cursor += u64::from(bits);
                    }
                    // The interpreter's order: a size that is not whole bytes (v1model's
                    // `ParserInvalidArgument`), too few bytes, a size above the maximum
                    // (`HeaderTooShort`).
                    Op::ExtractVar {
                        h,
                        fixed,
                        ref e,
                        max,
                    } => {
                        let bits = match self.size(e, pkt, out, port) {
                            Ok(bits) => bits,
                            Err(Stop::Parse) => {
                                out.stopped_unrecorded = true;
                                break 'states;
                            }
                            Err(Stop::Interpreter) => return false,
                        };
                        let end = cursor.saturating_add(u64::from(fixed)).saturating_add(bits);
                        if end > total {
                            // (The size decided where the parse stopped: a template pins it.)
                            out.advanced.push((state, oi as u32, bits));
                            out.short_bits = end;
                            break 'states;
                        }
                        if bits > u64::from(max) {
                            out.stopped_unrecorded = true;
                            break 'states;
                        }
                        self.set_header(out, h, cursor as u32);
                        out.varbit[h as usize] = bits as u32;
                        out.advanced.push((state, oi as u32, bits));
                        cursor = end;
                    }
                    Op::AdvanceBy(ref e) => {
                        let bits = match self.size(e, pkt, out, port) {
                            Ok(bits) => bits,
                            Err(Stop::Parse) => {
                                out.stopped_unrecorded = true;
                                break 'states;
                            }
                            Err(Stop::Interpreter) => return false,
                        };
                        if cursor.saturating_add(bits) > total {
                            out.advanced.push((state, oi as u32, bits));
                            out.short_bits = cursor.saturating_add(bits);
                            break 'states;
                        }
                        out.advanced.push((state, oi as u32, bits));
                        cursor += bits;
                    }
                    Op::Verify {
                        ref e,
                        lo,
                        hi,
                        outside,
                    } => {
                        let n = out.stack_reads.len();
                        if self.vars_read {
                            pin_vars(e, out);
                        }
                        let v = eval(e, pkt, out, port);
                        if (lo <= v && v <= hi) == outside {
                            {
                                out.stopped_unrecorded = true;
                                break 'states;
                            }
                        }
                        let elem = out.stack_reads.get(n).copied().unwrap_or(NONE);
                        out.verified.push((state, oi as u32, elem));
                    }
                    // (`setValid`/`setInvalid` also change the packet length v1model counts
                    // for egress; compiled programs never use it: the tracer treats
                    // `packet_length` as opaque.)
                    Op::SetInvalid(h) => self.set_valid(out, h, false),
                    Op::SetValid { h, zero, ref zeros } => {
                        if !out.valid.get(h as usize).copied().unwrap_or(true) {
                            if zero {
                                self.move_bits(out, h, NONE);
                                for &(id, var) in zeros {
                                    out.vars[var as usize] = 0;
                                    if let Some(p) = out.prov.get_mut(var as usize) {
                                        *p = (0, 0);
                                    }
                                    if self.vars_read || out.record {
                                        let n = out.stack_reads.len() as u32;
                                        out.assigned.push(id);
                                        out.assigned_reads.push((n, n));
                                    }
                                }
                            }
                            self.set_valid(out, h, true);
                        }
                        self.invalidate_siblings(out, h);
                    }
                    Op::Copy { dst, src } => {
                        let (Some(&at), Some(&v)) =
                            (out.hdr_off.get(src as usize), out.valid.get(src as usize))
                        else {
                            return false;
                        };
                        self.move_bits(out, dst, at);
                        self.set_valid(out, dst, v);
                        if v {
                            self.invalidate_siblings(out, dst);
                        }
                    }
                    Op::Lookahead { id, var, w, wide } => {
                        // Too short: `PacketTooShort` (see `Parsed::short`).
                        let end = cursor + u64::from(w);
                        if end > total {
                            out.short_bits = end;
                            break 'states;
                        }
                        out.ahead_end = out.ahead_end.max(end as u32);
                        // Read again after a decision read it: the decided value is in no
                        // key (a lookahead's bits are not key fields), as for moved bits.
                        if !out.reextracted && self.decided_by(out).any(|e| reads_var_at(e, var)) {
                            out.reextracted = true;
                        }
                        if wide {
                            out.ahead_at[var as usize] = cursor as u32;
                            if self.vars_read || out.record {
                                let n = out.stack_reads.len() as u32;
                                out.assigned.push(id);
                                out.assigned_reads.push((n, n));
                                out.lookaheads.push(cursor as u32);
                            }
                            continue;
                        }
                        if !(self.vars_read || out.record) {
                            continue;
                        }
                        out.vars[var as usize] = read_bits(pkt, cursor as u32, w);
                        if self.vars_read {
                            let at = out.prov_ranges.len() as u32;
                            out.prov_ranges.push((cursor as u32, w));
                            out.prov[var as usize] = (at, at + 1);
                        }
                        let n = out.stack_reads.len() as u32;
                        out.assigned.push(id);
                        out.assigned_reads.push((n, n));
                        out.lookaheads.push(cursor as u32);
                    }
                    Op::Assign {
                        id,
                        var,
                        ref e,
                        over,
                    } => {
                        if !(self.vars_read || out.record) {
                            continue;
                        }
                        let n = out.stack_reads.len() as u32;
                        if self.vars_read {
                            let at = out.prov_ranges.len() as u32;
                            provenance(e, out);
                            out.prov[var as usize] = (at, out.prov_ranges.len() as u32);
                        }
                        let v = eval(e, pkt, out, port);
                        out.vars[var as usize] = v;
                        // (After the value: it may read the field it overwrites.) A field a
                        // decision read is gone from the key once overwritten: the key no
                        // longer tells this path from others (as for moved bits).
                        if over {
                            if !out.reextracted
                                && self.decided_by(out).any(|e| reads_var_at(e, var))
                            {
                                out.reextracted = true;
                            }
                            out.ovr[var as usize] = true;
                        }
                        out.assigned.push(id);
                        out.assigned_reads.push((n, out.stack_reads.len() as u32));
                    }
                }
            }
            let to = match &st.trans {
                Trans::Goto(t) => *t,
                Trans::Select { keys, cases } => {
                    let mut vals = [0u64; 8];
                    let n = keys.len();
                    if n > vals.len() {
                        return false;
                    }
                    for (i, (v, k)) in vals.iter_mut().zip(keys).enumerate() {
                        let n = out.stack_reads.len();
                        if self.vars_read {
                            pin_vars(k, out);
                        }
                        *v = eval(k, pkt, out, port);
                        let elem = out.stack_reads.get(n).copied().unwrap_or(NONE);
                        out.selects.push((state, i as u32, *v, elem));
                    }
                    let found = cases.iter().find(|(pats, _)| {
                        pats.iter().zip(&vals[..n]).all(|(p, v)| match *p {
                            Pat::Mask { v: pv, m } => v & m == pv & m,
                            Pat::Range { lo, hi } => lo <= *v && *v <= hi,
                        })
                    });
                    match found {
                        Some((_, t)) => *t,
                        None => break 'states,
                    }
                }
            };
            match to {
                To::State(s) => state = s,
                To::Accept => break,
                To::Reject => break 'states,
            }
        }
        out.cursor = cursor as u32;
        out.visited = visited;
        self.fill_key(pkt, port, out, key);
        true
    }

    /// A size the packet gives (an `advance` amount, a varbit size), in bits, with what it
    /// was computed from pinned; a size that is not whole bytes stops the parse there on
    /// v1model (`ParserInvalidArgument`) and leaves the packet to the interpreter elsewhere.
    fn size(&self, e: &Ex, pkt: &[u8], out: &mut Parsed, port: u64) -> Result<u64, Stop> {
        if self.vars_read {
            pin_vars(e, out);
        }
        let bits = eval(e, pkt, out, port);
        match (bits.is_multiple_of(8), self.v1model) {
            (true, _) => Ok(bits),
            (false, true) => Err(Stop::Parse),
            (false, false) => Err(Stop::Interpreter),
        }
    }

    /// The flow key of `pkt` (as [`FastParser::parse`] computes it), through the parse-path
    /// templates when one fits, else by a full parse that then becomes a template. `false`:
    /// the packet needs the interpreter's parser. A template matched `jit`'s threshold of
    /// times gets native code when `jit` admits a compile at `now_ns`; native templates also
    /// give the key's microflow hash in `hash`.
    #[allow(clippy::too_many_arguments)]
    #[inline(always)]
    pub fn key(
        &self,
        pkt: &[u8],
        port: u64,
        t: &mut Templates,
        jit: &mut Jit,
        now_ns: u64,
        key: &mut [u64],
        hash: &mut Option<u64>,
    ) -> bool {
        *hash = None;
        // The common case first, in a small function: the native code of a template (the
        // one the pick guesses, then the most used first) takes the packet. (Debug builds
        // take the general path, which checks every template key against a full parse.)
        let mut first = 0;
        if !cfg!(debug_assertions) {
            if let Some(i) = t.guess(pkt)
                && let Some(code) = t.list.get(i).and_then(|tpl| tpl.code.as_ref())
                && code.run(pkt, port, key, hash) == Some(true)
            {
                t.guessed += 1;
                t.hit(i);
                return true;
            }
            while let Some(code) = t.list.get(first).and_then(|tpl| tpl.code.as_ref()) {
                match code.run(pkt, port, key, hash) {
                    Some(true) => {
                        t.hit(first);
                        return true;
                    }
                    Some(false) => first += 1,
                    None => break,
                }
            }
        }
        self.key_from(first, pkt, port, t, jit, now_ns, key, hash)
    }

    /// [`FastParser::key`] trying the templates from the `first`th (those before it did not
    /// take the packet). Out of line: the common case does not need it.
    #[allow(clippy::too_many_arguments)]
    #[inline(never)]
    fn key_from(
        &self,
        first: usize,
        pkt: &[u8],
        port: u64,
        t: &mut Templates,
        jit: &mut Jit,
        now_ns: u64,
        key: &mut [u64],
        hash: &mut Option<u64>,
    ) -> bool {
        let n = self.words.min(key.len());
        let seed = t.hash_seed;
        // The pick's guess first (in release builds [`FastParser::key`] tried it already
        // when it has native code), then the templates in rank order.
        let guess = if first == 0 { t.guess(pkt) } else { None };
        let order = guess
            .into_iter()
            .chain((first..t.list.len()).filter(move |&i| Some(i) != guess));
        for i in order {
            let tpl = &mut t.list[i];
            let mut compiled = None;
            let hit = match tpl.code.as_ref().and_then(|c| c.run(pkt, port, key, hash)) {
                Some(hit) => hit,
                None if tpl.matches(pkt, port) => {
                    tpl.fill(pkt, port, &mut key[..n]);
                    tpl.matched = tpl.matched.saturating_add(1);
                    if tpl.matched >= jit.after
                        && !tpl.jit_tried
                        && jit.enabled()
                        && jit.admit(now_ns)
                    {
                        tpl.jit_tried = true;
                        compiled =
                            Some(self.compile_template(tpl, jit, seed, pkt, port, &key[..n]));
                    }
                    true
                }
                None => false,
            };
            match compiled {
                Some(Some(true)) => {
                    t.native += 1;
                    t.repick();
                }
                Some(Some(false)) => t.native_mismatch += 1,
                _ => {}
            }
            if hit {
                if cfg!(debug_assertions) {
                    // The invariant templates rest on: the same key as a full parse.
                    let mut p = self.new_parsed();
                    let mut k = vec![0; n];
                    assert!(
                        self.parse(pkt, port, &mut p, &mut k),
                        "template for a bad parse"
                    );
                    assert_eq!(k[..], key[..n], "template key differs from the parser's");
                }
                if Some(i) == guess {
                    t.guessed += 1;
                }
                t.hit(i);
                return true;
            }
        }
        self.key_by_parse(pkt, port, t, key)
    }

    /// [`FastParser::key`] when no template fits: a full parse, whose path becomes a
    /// template if it can. Out of line, so that a template hit runs a small function.
    #[inline(never)]
    fn key_by_parse(&self, pkt: &[u8], port: u64, t: &mut Templates, key: &mut [u64]) -> bool {
        t.parses += 1;
        let mut parsed = t.scratch.take().unwrap_or_else(|| self.new_parsed());
        t.short = false;
        // A path on which a header's bits moved after a decision read them: the key (the
        // headers' final bits) does not tell that path from others, so the packet takes the
        // interpreter's path, which checks a megaflow's recorded decisions as it replays them.
        let ok = self.parse(pkt, port, &mut parsed, key) && !parsed.reextracted;
        t.short = parsed.short();
        if ok && let Some(tpl) = self.template(&parsed, pkt, port) {
            if t.list.len() == TEMPLATES {
                t.list.pop();
            }
            t.list.insert(0, tpl);
            t.repick();
        }
        t.scratch = Some(parsed);
        ok
    }

    /// Gives `tpl` native code if it can have some and the code computes `key` (the
    /// template's key) for `pkt`: `Some(true)`; `Some(false)`: the code's key differed;
    /// `None`: no code.
    #[inline(never)]
    fn compile_template(
        &self,
        tpl: &mut Template,
        jit: &mut Jit,
        seed: u64,
        pkt: &[u8],
        port: u64,
        key: &[u64],
    ) -> Option<bool> {
        let code = jit::compile(jit, tpl, self.words, seed)?;
        let mut k = vec![0; self.words];
        let mut h = None;
        let want = koi_cache::WordHash::from_seed(Some(seed)).hash(key);
        if code.run(pkt, port, &mut k, &mut h) != Some(true)
            || k[..key.len()] != *key
            || (key.len() == self.words && h != Some(want))
        {
            return Some(false);
        }
        tpl.code = Some(Arc::new(code));
        Some(true)
    }

    /// The template of the path `p` took, if it can have one.
    fn template(&self, p: &Parsed, pkt: &[u8], port: u64) -> Option<Template> {
        // (A template of a parse stopped by a failed condition would have to check it.)
        if p.unpinned || p.reextracted || p.stopped_unrecorded {
            return None;
        }
        let mut checks = Vec::new();
        let mut excludes = Vec::new();
        let mut port_checks = Vec::new();
        let mut ranges = Vec::new();
        for &(state, i, value, elem) in &p.selects {
            let Trans::Select { keys, cases } = &self.states.get(state as usize)?.trans else {
                return None;
            };
            let key = keys.get(i as usize)?;
            if reads_var(key) {
                pin_fields(key, p, pkt, port, &mut ranges, &mut port_checks)?;
                continue;
            }
            match key {
                Ex::Field { h, off, w, .. } => {
                    let base = *p.hdr_off.get(*h as usize)?;
                    if base == NONE {
                        continue; // reads as 0 on this path whatever the packet
                    }
                    match default_after_exact(keys.len(), cases, value, mask(*w)) {
                        Some(values) => excludes.push((base + off, *w, values)),
                        None => checks.push(Check {
                            off: base + off,
                            len: *w,
                            value,
                        }),
                    }
                }
                Ex::Slice(inner, lo, w) => match &**inner {
                    Ex::Field { h, off, w: fw, .. } if lo + w <= *fw => {
                        let base = *p.hdr_off.get(*h as usize)?;
                        if base == NONE {
                            continue;
                        }
                        checks.push(Check {
                            off: base + off + (fw - lo - w),
                            len: *w,
                            value,
                        });
                    }
                    _ => return None,
                },
                // Fixed by the path itself.
                Ex::Valid(_) | Ex::Next(_) | Ex::Const(..) => {}
                Ex::Port(w) => port_checks.push((*w, value)),
                Ex::StackField { index, off, w, .. } if path_fixed(index) => {
                    // The element the index named then (its bits have not moved since).
                    let base = match elem {
                        NONE => continue, // past the stack: 0 whatever the packet
                        h => *p.hdr_off.get(h as usize)?,
                    };
                    if base == NONE {
                        continue;
                    }
                    checks.push(Check {
                        off: base + off,
                        len: *w,
                        value,
                    });
                }
                _ => return None,
            }
        }
        for &(state, oi, elem) in &p.verified {
            // (A `!=` that held would need a check of its own: no template.)
            let Some(Op::Verify {
                e,
                lo,
                hi,
                outside: false,
            }) = self.states.get(state as usize)?.ops.get(oi as usize)
            else {
                return None;
            };
            if reads_var(e) {
                pin_fields(e, p, pkt, port, &mut ranges, &mut port_checks)?;
                continue;
            }
            let (off, len) = match e {
                Ex::Field { h, off, w, .. } => match *p.hdr_off.get(*h as usize)? {
                    NONE => continue, // reads as 0 on this path whatever the packet
                    base => (base + off, *w),
                },
                Ex::Slice(inner, lo_bit, w) => match &**inner {
                    Ex::Field { h, off, w: fw, .. } if lo_bit + w <= *fw => {
                        match *p.hdr_off.get(*h as usize)? {
                            NONE => continue,
                            base => (base + off + (fw - lo_bit - w), *w),
                        }
                    }
                    _ => return None,
                },
                // Fixed by the path itself.
                Ex::Valid(_) | Ex::Next(_) | Ex::Const(..) => continue,
                Ex::StackField { index, off, w, .. } if path_fixed(index) => match elem {
                    NONE => continue,
                    h => match *p.hdr_off.get(h as usize)? {
                        NONE => continue,
                        base => (base + off, *w),
                    },
                },
                _ => return None,
            };
            ranges.push((off, len, *lo, *hi));
        }
        // Each `advance` by a packet value and each varbit size: the path's later offsets
        // hold for that value only, which the fields it is computed from (pinned whole) fix.
        for &(state, oi, _) in &p.advanced {
            let (Some(Op::AdvanceBy(e)) | Some(Op::ExtractVar { e, .. })) =
                self.states.get(state as usize)?.ops.get(oi as usize)
            else {
                return None;
            };
            pin_fields(e, p, pkt, port, &mut ranges, &mut port_checks)?;
        }
        for &(off, len) in &p.pins {
            let v = read_bits(pkt, off, len);
            ranges.push((off, len, v, v));
        }
        let budget = p.visited.saturating_sub(self.margin).div_ceil(64);
        let min_len = (p.cursor.max(p.ahead_end).div_ceil(8) as usize).max(budget as usize);
        let mut key_base = vec![0u64; self.words];
        // A parse stopped on the packet's end holds for the packets that end before the bits
        // it needed (`8 len < short_bits`), and their keys say so.
        let max_len = match p.short() {
            true => {
                crate::flowkey::write_stop(&mut key_base, self.stop_word, p.short_bits);
                usize::try_from(p.short_bits.div_ceil(8)).ok()?
            }
            false => usize::MAX,
        };
        if min_len >= max_len {
            return None;
        }
        let mut copies: Vec<Copy> = Vec::new();
        let (mut port_ops, mut len_ops) = (Vec::new(), Vec::new());
        for op in &self.key {
            match *op {
                KeyOp::Field { h, off, len, key } => {
                    let base = p.hdr_off[h as usize];
                    if base == NONE {
                        continue;
                    }
                    let off = base + off;
                    match copies.last_mut() {
                        Some(c)
                            if c.off + c.len == off
                                && c.key + c.len == key
                                && c.len + len <= 64 =>
                        {
                            c.len += len
                        }
                        _ => copies.push(Copy { off, len, key }),
                    }
                }
                KeyOp::Valid { h, key } => {
                    if p.valid[h as usize] {
                        write_key(&mut key_base, key, 1, 1);
                    }
                }
                KeyOp::Next {
                    stack,
                    lsb,
                    len,
                    key,
                } => write_key(
                    &mut key_base,
                    key,
                    len,
                    u64::from(p.next[stack as usize]) >> lsb,
                ),
                KeyOp::Port { lsb, len, key } => port_ops.push((lsb, len, key)),
                KeyOp::Len { lsb, len, key } => len_ops.push((lsb, len, key)),
                // A variable computed from packet bits: a constant for the bits pinned.
                KeyOp::Var { var, lsb, len, key } => {
                    let v = pin_var(p, pkt, var, &mut ranges)?;
                    write_key(&mut key_base, key, len, v >> lsb);
                }
                // Overwritten: a constant for the bits pinned; else the packet's bits.
                KeyOp::Over {
                    var,
                    h,
                    off,
                    lsb,
                    len,
                    key,
                } => {
                    if p.ovr[var as usize] {
                        let v = pin_var(p, pkt, var, &mut ranges)?;
                        write_key(&mut key_base, key, len, v >> lsb);
                    } else {
                        let base = p.hdr_off[h as usize];
                        if base != NONE {
                            copies.push(Copy {
                                off: base + off,
                                len,
                                key,
                            });
                        }
                    }
                }
                // (Where the `lookahead` read is fixed on the path.)
                KeyOp::Ahead { var, off, len, key } => {
                    let at = p.ahead_at[var as usize];
                    if at != NONE {
                        copies.push(Copy {
                            off: at + off,
                            len,
                            key,
                        });
                    }
                }
                KeyOp::VarbitLen { h, lsb, len, key } => write_key(
                    &mut key_base,
                    key,
                    len,
                    u64::from(p.varbit[h as usize]) >> lsb,
                ),
                // (The varbit's length is fixed on the path: its size is pinned.)
                KeyOp::Varbit {
                    h,
                    rel,
                    lsb,
                    len,
                    key,
                } => {
                    let base = p.hdr_off[h as usize];
                    if base == NONE {
                        continue;
                    }
                    let n = p.varbit[h as usize];
                    for (off, len, key) in KeyOp::varbit_pieces(rel, lsb, len, key, n) {
                        copies.push(Copy {
                            off: base + off,
                            len,
                            key,
                        });
                    }
                }
            }
        }
        // Copies split at key-word boundaries, then as loads where the length allows.
        let mut loads = Vec::new();
        let mut rest = Vec::new();
        for c in copies {
            let mut c = c;
            loop {
                let room = 64 - c.key % 64;
                let len = c.len.min(room);
                let piece = Copy {
                    off: c.off,
                    len,
                    key: c.key,
                };
                match Load::new(piece.off, piece.len, min_len) {
                    Some(mut l) => {
                        l.word = (piece.key / 64) as usize;
                        l.kshl = 64 - piece.key % 64 - piece.len;
                        loads.push(l);
                    }
                    None => rest.push(piece),
                }
                if len == c.len {
                    break;
                }
                c = Copy {
                    off: c.off + len,
                    len: c.len - len,
                    key: c.key + len,
                };
            }
        }
        if loads.iter().any(|l| l.word >= self.words) {
            return None;
        }
        let (mut check_loads, mut slow_checks) = (Vec::new(), Vec::new());
        for c in checks {
            match Load::new(c.off, c.len, min_len) {
                Some(l) => check_loads.push((l, c.value)),
                None => slow_checks.push(c),
            }
        }
        Some(Template {
            min_len,
            max_len,
            checks: slow_checks,
            excludes,
            port_checks,
            check_loads,
            key_base,
            loads,
            copies: rest,
            port_ops,
            len_ops,
            matched: 0,
            code: None,
            jit_tried: false,
            recent: 0,
            ranges,
        })
    }

    /// `extract(h)` at bit `at`.
    fn set_header(&self, out: &mut Parsed, h: u32, at: u32) {
        self.move_bits(out, h, at);
        self.set_valid(out, h, true);
        self.invalidate_siblings(out, h);
    }

    /// Header `h` now holds the bits at `at` ([`NONE`]: zeros).
    fn move_bits(&self, out: &mut Parsed, h: u32, at: u32) {
        let Some(&old) = out.hdr_off.get(h as usize) else {
            return;
        };
        // Overwritten fields get the header's new bits: the tracer, which follows the
        // assignments from the end of the parse, does not model that.
        if let Some(vars) = self.hdr_over.get(h as usize) {
            for &v in vars {
                if std::mem::take(&mut out.ovr[v as usize]) {
                    out.reextracted = true;
                }
            }
        }
        if old != at {
            if !out.reextracted && self.read_so_far(out, h, false) {
                out.reextracted = true;
            }
            out.hdr_off[h as usize] = at;
            out.varbit[h as usize] = 0;
        }
    }

    /// Header `h` is now valid or not.
    fn set_valid(&self, out: &mut Parsed, h: u32, v: bool) {
        let Some(&old) = out.valid.get(h as usize) else {
            return;
        };
        if old != v {
            if !out.reextracted && self.read_so_far(out, h, true) {
                out.reextracted = true;
            }
            out.valid[h as usize] = v;
        }
    }

    /// Whether a `select`, `verify` or assignment run so far read header `h`'s fields (or,
    /// with `validity`, an assignment read its validity).
    #[inline(never)]
    fn read_so_far(&self, out: &Parsed, h: u32, validity: bool) -> bool {
        let assigned = out
            .assigned
            .iter()
            .filter_map(|&id| self.assigns.get(id as usize).map(|(_, e)| e));
        if validity {
            return assigned.into_iter().any(|e| reads(e, h, true));
        }
        if out.stack_reads.contains(&h) {
            return true;
        }
        self.decided_by(out)
            .chain(assigned)
            .any(|e| reads(e, h, false))
    }

    /// The expressions of the `select`s, `verify`s, `advance`s and varbit sizes run so far.
    fn decided_by<'s>(&'s self, out: &'s Parsed) -> impl Iterator<Item = &'s Ex> + 's {
        let selected = out.selects.iter().filter_map(|&(st, i, ..)| {
            match &self.states.get(st as usize)?.trans {
                Trans::Select { keys, .. } => keys.get(i as usize),
                Trans::Goto(_) => None,
            }
        });
        let verified = out.verified.iter().filter_map(|&(st, oi, _)| {
            match self.states.get(st as usize)?.ops.get(oi as usize)? {
                Op::Verify { e, .. } => Some(e),
                _ => None,
            }
        });
        let advanced = out.advanced.iter().filter_map(|&(st, oi, _)| {
            match self.states.get(st as usize)?.ops.get(oi as usize)? {
                Op::AdvanceBy(e) | Op::ExtractVar { e, .. } => Some(e),
                _ => None,
            }
        });
        selected.chain(verified).chain(advanced)
    }

    /// The other members of `h`'s union become invalid (their fields keep their values).
    fn invalidate_siblings(&self, out: &mut Parsed, h: u32) {
        if let Some(sib) = self.siblings.get(h as usize) {
            for &s in sib {
                self.set_valid(out, s, false);
            }
        }
    }

    fn fill_key(&self, pkt: &[u8], port: u64, out: &Parsed, key: &mut [u64]) {
        let n = self.words.min(key.len());
        key[..n].fill(0);
        for op in &self.key {
            match *op {
                KeyOp::Field {
                    h,
                    off,
                    len,
                    key: k,
                } => {
                    let base = out.hdr_off[h as usize];
                    if base != NONE {
                        write_key(key, k, len, read_bits(pkt, base + off, len));
                    }
                }
                KeyOp::Valid { h, key: k } => {
                    if out.valid[h as usize] {
                        write_key(key, k, 1, 1);
                    }
                }
                KeyOp::Next {
                    stack,
                    lsb,
                    len,
                    key: k,
                } => write_key(key, k, len, u64::from(out.next[stack as usize]) >> lsb),
                KeyOp::Port { lsb, len, key: k } => write_key(key, k, len, port >> lsb),
                KeyOp::Len { lsb, len, key: k } => {
                    write_key(key, k, len, (pkt.len() as u64) >> lsb)
                }
                KeyOp::Var {
                    var,
                    lsb,
                    len,
                    key: k,
                } => write_key(key, k, len, out.vars[var as usize] >> lsb),
                KeyOp::VarbitLen {
                    h,
                    lsb,
                    len,
                    key: k,
                } => write_key(key, k, len, u64::from(out.varbit[h as usize]) >> lsb),
                KeyOp::Over {
                    var,
                    h,
                    off,
                    lsb,
                    len,
                    key: k,
                } => {
                    if out.ovr[var as usize] {
                        write_key(key, k, len, out.vars[var as usize] >> lsb);
                    } else {
                        let base = out.hdr_off[h as usize];
                        if base != NONE {
                            write_key(key, k, len, read_bits(pkt, base + off, len));
                        }
                    }
                }
                KeyOp::Ahead {
                    var,
                    off,
                    len,
                    key: k,
                } => {
                    let at = out.ahead_at[var as usize];
                    if at != NONE {
                        write_key(key, k, len, read_bits(pkt, at + off, len));
                    }
                }
                KeyOp::Varbit {
                    h,
                    rel,
                    lsb,
                    len,
                    key: k,
                } => {
                    let base = out.hdr_off[h as usize];
                    let n = out.varbit[h as usize];
                    if base == NONE {
                        continue;
                    }
                    for (off, len, k) in KeyOp::varbit_pieces(rel, lsb, len, k, n) {
                        write_key(key, k, len, read_bits(pkt, base + off, len));
                    }
                }
            }
        }
        if out.short() {
            crate::flowkey::write_stop(key, self.stop_word, out.short_bits);
        }
    }
}

/// A `verify` condition as a range of one value: `e == c`, `e >= c`, `e > c`, `e <= c`,
/// `e < c` (unsigned), with the constant on either side; `None` for anything else (the
/// program then has no fast parser).
fn verify_range(p: &Pipeline, inputs: &Inputs, cond: &Expr) -> Option<(Ex, u64, u64, bool)> {
    let Expr::Binary(op, a, b) = cond else {
        return None;
    };
    let (e, c, flipped) = match (&**a, &**b) {
        (x, Expr::Const(c)) => (x, c, false),
        (Expr::Const(c), x) => (x, c, true),
        _ => return None,
    };
    let (ex, w) = key_expr(p, inputs, e)?;
    let c = c.to_u64()?;
    let max = mask(w);
    if c > max {
        return None;
    }
    // `e op c`, or `c op e` when flipped.
    use koi_ir::BinOp::*;
    if *op == Ne {
        return Some((ex, c, c, true));
    }
    let (lo, hi) = match (op, flipped) {
        (Eq, _) => (c, c),
        (GeU, false) | (LeU, true) => (c, max),
        (GtU, false) | (LtU, true) => (c.checked_add(1)?, max),
        (LeU, false) | (GeU, true) => (0, c),
        (LtU, false) | (GtU, true) => (0, c.checked_sub(1)?),
        _ => return None,
    };
    (lo <= hi).then_some((ex, lo, hi, false))
}

/// Whether `e`'s value is fixed by the parse path (a stack's next index, constants): the
/// same for every packet that takes the path.
pub(crate) fn path_fixed(e: &Ex) -> bool {
    match e {
        Ex::Next(_) | Ex::Const(..) => true,
        Ex::Bin(_, a, b, ..) => path_fixed(a) && path_fixed(b),
        Ex::Un(_, a, _) => path_fixed(a),
        Ex::Slice(v, ..) | Ex::Trunc(v, _) | Ex::Sext(v, ..) => path_fixed(v),
        _ => false,
    }
}

/// Pins every input of `e` (a value the parse path depends on) to its value in `pkt`: the
/// header fields it reads as ranges of one value each (`(off, len, v, v)`), the ingress port
/// as a port check. `None` if `e` reads anything else (variables, the packet length, a
/// stack element through a run-time index).
fn pin_fields(
    e: &Ex,
    p: &Parsed,
    pkt: &[u8],
    port: u64,
    ranges: &mut Vec<(u32, u32, u64, u64)>,
    port_checks: &mut Vec<(u32, u64)>,
) -> Option<()> {
    match e {
        Ex::Field { h, off, w, .. } => match *p.hdr_off.get(*h as usize)? {
            NONE => {} // 0 on this path whatever the packet
            base => {
                let v = read_bits(pkt, base + off, *w);
                ranges.push((base + off, *w, v, v));
            }
        },
        Ex::Const(..) | Ex::Valid(_) | Ex::Next(_) => {}
        Ex::Port(w) => port_checks.push((*w, port & mask(*w))),
        Ex::Slice(v, ..) | Ex::Trunc(v, _) | Ex::Sext(v, ..) | Ex::Un(_, v, _) => {
            pin_fields(v, p, pkt, port, ranges, port_checks)?
        }
        Ex::Concat(a, b, _) | Ex::Bin(_, a, b, ..) => {
            pin_fields(a, p, pkt, port, ranges, port_checks)?;
            pin_fields(b, p, pkt, port, ranges, port_checks)?;
        }
        // (The parse pinned what the variables were computed from: `Parsed::pins`.)
        Ex::Var(..) | Ex::AheadSlice { .. } | Ex::Over { .. } => {}
        Ex::Len(_) | Ex::Ahead(_) | Ex::StackField { .. } => return None,
    }
    Some(())
}

/// Pins (as ranges of one value each) the packet bits variable `var`'s final value was
/// computed from, and gives that value: a constant of any packet with those bits. `None` if
/// it came from anything else.
fn pin_var(
    p: &Parsed,
    pkt: &[u8],
    var: u32,
    ranges: &mut Vec<(u32, u32, u64, u64)>,
) -> Option<u64> {
    let (a, b) = *p.prov.get(var as usize)?;
    for &r in p.prov_ranges.get(a as usize..b as usize)? {
        if r == UNKNOWN {
            return None;
        }
        let v = read_bits(pkt, r.0, r.1);
        ranges.push((r.0, r.1, v, v));
    }
    p.vars.get(var as usize).copied()
}

/// An unknown source of a variable's value in [`Parsed::prov_ranges`].
const UNKNOWN: (u32, u32) = (NONE, 0);

/// Appends to `out.prov_ranges` the packet bits `e` is computed from ([`UNKNOWN`] for
/// anything else that varies: the port, the length, a run-time stack index).
fn provenance(e: &Ex, out: &mut Parsed) {
    match e {
        Ex::Field { h, off, w, .. } => {
            let base = out.hdr_off[*h as usize];
            if base != NONE {
                out.prov_ranges.push((base + off, *w));
            }
        }
        Ex::Var(i, _) => {
            let (a, b) = out.prov[*i as usize];
            for j in a..b {
                let r = out.prov_ranges[j as usize];
                out.prov_ranges.push(r);
            }
        }
        Ex::AheadSlice { .. } => {
            if let Some(r) = ahead_bits(e, out) {
                out.prov_ranges.push(r);
            }
        }
        Ex::Over { var, field } => {
            if out.ovr[*var as usize] {
                provenance(&Ex::Var(*var, 0), out);
            } else {
                provenance(field, out);
            }
        }
        Ex::Const(..) | Ex::Valid(_) | Ex::Next(_) => {}
        Ex::Port(_) | Ex::Len(_) | Ex::Ahead(_) | Ex::StackField { .. } => {
            out.prov_ranges.push(UNKNOWN)
        }
        Ex::Slice(v, ..) | Ex::Trunc(v, _) | Ex::Sext(v, ..) | Ex::Un(_, v, _) => {
            provenance(v, out)
        }
        Ex::Concat(a, b, _) | Ex::Bin(_, a, b, ..) => {
            provenance(a, out);
            provenance(b, out);
        }
    }
}

/// Adds to `out.pins` what the variables `e` reads were computed from.
fn pin_vars(e: &Ex, out: &mut Parsed) {
    match e {
        Ex::Var(i, _) => {
            let (a, b) = out.prov[*i as usize];
            for j in a..b {
                match out.prov_ranges[j as usize] {
                    UNKNOWN => out.unpinned = true,
                    r => out.pins.push(r),
                }
            }
        }
        Ex::Slice(v, ..) | Ex::Trunc(v, _) | Ex::Sext(v, ..) | Ex::Un(_, v, _) => pin_vars(v, out),
        Ex::Concat(a, b, _) | Ex::Bin(_, a, b, ..) => {
            pin_vars(a, out);
            pin_vars(b, out);
        }
        Ex::StackField { index, .. } => pin_vars(index, out),
        Ex::AheadSlice { .. } => {
            if let Some(r) = ahead_bits(e, out) {
                out.pins.push(r);
            }
        }
        Ex::Over { var, field } => {
            if out.ovr[*var as usize] {
                pin_vars(&Ex::Var(*var, 0), out);
            } else if let Ex::Field { h, off, w, .. } = **field {
                let base = out.hdr_off[h as usize];
                if base != NONE {
                    out.pins.push((base + off, w));
                }
            }
        }
        _ => {}
    }
}

/// The packet bits (offset, length) an [`Ex::AheadSlice`] reads now (`None`: its
/// `lookahead` has not run, it reads 0).
fn ahead_bits(e: &Ex, out: &Parsed) -> Option<(u32, u32)> {
    let Ex::AheadSlice { var, hi, lo, w } = *e else {
        return None;
    };
    let at = *out.ahead_at.get(var as usize)?;
    (at != NONE).then_some((at + (w - 1 - hi), hi - lo + 1))
}

/// Whether `e` reads a parser variable.
fn reads_var(e: &Ex) -> bool {
    match e {
        Ex::Var(..) | Ex::AheadSlice { .. } | Ex::Over { .. } => true,
        Ex::Slice(v, ..) | Ex::Trunc(v, _) | Ex::Sext(v, ..) => reads_var(v),
        Ex::Concat(a, b, _) | Ex::Bin(_, a, b, ..) => reads_var(a) || reads_var(b),
        Ex::Un(_, a, _) => reads_var(a),
        Ex::StackField { index, .. } => reads_var(index),
        _ => false,
    }
}

impl Template {
    #[inline]
    fn matches(&self, pkt: &[u8], port: u64) -> bool {
        (self.min_len..self.max_len).contains(&pkt.len())
            && self.check_loads.iter().all(|(l, v)| l.value(pkt) == *v)
            && self
                .checks
                .iter()
                .all(|c| read_bits(pkt, c.off, c.len) == c.value)
            && self
                .excludes
                .iter()
                .all(|(off, len, vs)| !vs.contains(&read_bits(pkt, *off, *len)))
            && self.port_checks.iter().all(|&(w, v)| port & mask(w) == v)
            && self.ranges.iter().all(|&(off, len, lo, hi)| {
                let v = read_bits(pkt, off, len);
                lo <= v && v <= hi
            })
    }

    #[inline]
    fn fill(&self, pkt: &[u8], port: u64, key: &mut [u64]) {
        key.copy_from_slice(&self.key_base[..key.len()]);
        for l in &self.loads {
            if let Some(w) = key.get_mut(l.word) {
                *w |= l.value(pkt) << l.kshl;
            }
        }
        for c in &self.copies {
            write_key(key, c.key, c.len, read_bits(pkt, c.off, c.len));
        }
        for &(lsb, len, k) in &self.port_ops {
            write_key(key, k, len, port >> lsb);
        }
        for &(lsb, len, k) in &self.len_ops {
            write_key(key, k, len, (pkt.len() as u64) >> lsb);
        }
    }
}

/// The width of header `h` if it has no varbit field.
fn fixed_width(p: &Pipeline, h: koi_ir::HeaderId) -> Option<u32> {
    let hd = p.phv.headers.get(h)?;
    let varbit = hd
        .fields
        .iter()
        .any(|f| matches!(p.phv.slots.get(*f).map(|s| s.ty), Some(Ty::Varbit(_))));
    (!varbit).then_some(hd.width)
}

/// The fixed bits and the varbit's maximum of header `h` if its varbit field is its last
/// (the offsets of its other fields do not depend on the varbit's length).
fn varbit_last(p: &Pipeline, h: koi_ir::HeaderId) -> Option<(u32, u32)> {
    let hd = p.phv.headers.get(h)?;
    let last = p.phv.slots.get(*hd.fields.last()?)?;
    let Ty::Varbit(max) = last.ty else {
        return None;
    };
    let fixed = hd.width.checked_sub(max)?;
    let others = &hd.fields[..hd.fields.len() - 1];
    let fixed_fields = others.iter().all(|f| {
        p.phv
            .slots
            .get(*f)
            .is_some_and(|s| !matches!(s.ty, Ty::Varbit(_)))
    });
    fixed_fields.then_some((fixed, max))
}

/// `Some` if field `slot` of header `h` is at a fixed offset in the header's bits: it is
/// not a varbit and no varbit precedes it.
fn fixed_offset(p: &Pipeline, h: koi_ir::HeaderId, slot: SlotId) -> Option<()> {
    let hd = p.phv.headers.get(h)?;
    for f in &hd.fields {
        if matches!(p.phv.slots.get(*f)?.ty, Ty::Varbit(_)) {
            return None;
        }
        if *f == slot {
            return Some(());
        }
    }
    None
}

/// The headers whose fields parser `parser` assigns, outside stacks and unions and never
/// copied from or to: `(scratch, overridable)`. Scratch headers no `extract` fills either
/// (all their fields plain bits of up to 64): the fast parser holds their fields as
/// variables. Overridable headers are also extracted: it holds their assigned fields as
/// variables over the packet's bits ([`Ex::Over`]).
fn assigned_headers(
    p: &Pipeline,
    parser: &koi_ir::Parser,
) -> (Vec<koi_ir::HeaderId>, Vec<koi_ir::HeaderId>) {
    let (mut assigned, mut extracted, mut copied) = (Vec::new(), Vec::new(), Vec::new());
    for st in parser.states.values() {
        for s in &st.stmts {
            match s {
                Stmt::Assign {
                    dst: Place::Slot(d),
                    ..
                } => {
                    if let Some(SlotKind::HeaderField(h)) = p.phv.slots.get(*d).map(|x| x.kind) {
                        assigned.push(h);
                    }
                }
                Stmt::Extract {
                    header: HeaderRef::Header(h),
                    ..
                } => extracted.push(*h),
                Stmt::CopyHeader { dst, src } => {
                    for r in [dst, src] {
                        if let HeaderRef::Header(h) = r {
                            copied.push(*h);
                        }
                    }
                }
                _ => {}
            }
        }
    }
    let in_stack = |h: koi_ir::HeaderId| p.phv.stacks.values().any(|s| s.elems.contains(&h));
    let in_union = |h: koi_ir::HeaderId| p.phv.unions.values().any(|u| u.members.contains(&h));
    let plain = |h: koi_ir::HeaderId| {
        p.phv.headers.get(h).is_some_and(|hd| {
            hd.fields.iter().all(|f| {
                p.phv
                    .slots
                    .get(*f)
                    .is_some_and(|s| matches!(s.ty, Ty::Bits(_)) && s.width <= 64)
            })
        })
    };
    assigned.sort_by_key(|h| h.index());
    assigned.dedup();
    assigned.retain(|&h| !copied.contains(&h) && !in_stack(h) && !in_union(h));
    let (scratch, overridable): (Vec<_>, Vec<_>) =
        assigned.into_iter().partition(|h| !extracted.contains(h));
    (
        scratch.into_iter().filter(|&h| plain(h)).collect(),
        overridable,
    )
}

/// Whether headers `a` and `b` have the same type, without varbit fields (a header copy
/// then moves the same bits).
fn same_layout(p: &Pipeline, a: koi_ir::HeaderId, b: koi_ir::HeaderId) -> bool {
    let (Some(x), Some(y)) = (p.phv.headers.get(a), p.phv.headers.get(b)) else {
        return false;
    };
    x.type_name == y.type_name && fixed_width(p, a).is_some() && fixed_width(p, b).is_some()
}

/// Whether a state of `parser` assigns `slot`.
fn assigned_in(parser: &koi_ir::Parser, slot: SlotId) -> bool {
    parser.states.values().any(|st| {
        st.stmts.iter().any(|s| match s {
            Stmt::Assign { dst, .. } => dst.slot() == Some(slot),
            _ => false,
        })
    })
}

/// Whether any parser state writes `slot` other than through `extract`.
fn written_by_parser(p: &Pipeline, slot: SlotId) -> bool {
    p.parsers.values().any(|pr| {
        pr.states.values().any(|st| {
            st.stmts.iter().any(|s| match s {
                Stmt::Assign { dst, .. } | Stmt::Lookahead { dst } | Stmt::PacketLength { dst } => {
                    dst.slot() == Some(slot)
                }
                _ => false,
            })
        })
    })
}

/// Whether `e` reads variable `var` (or a slice of it).
fn reads_var_at(e: &Ex, var: u32) -> bool {
    match e {
        Ex::Var(v, _) | Ex::AheadSlice { var: v, .. } | Ex::Over { var: v, .. } => *v == var,
        Ex::Slice(a, ..) | Ex::Trunc(a, _) | Ex::Sext(a, ..) | Ex::Un(_, a, _) => {
            reads_var_at(a, var)
        }
        Ex::Concat(a, b, _) | Ex::Bin(_, a, b, ..) => reads_var_at(a, var) || reads_var_at(b, var),
        Ex::StackField { index, .. } => reads_var_at(index, var),
        _ => false,
    }
}

/// Whether `e` reads header `h`'s fields (`validity`: its validity).
fn reads(e: &Ex, h: u32, validity: bool) -> bool {
    match e {
        Ex::Field { h: x, .. } => !validity && *x == h,
        Ex::Valid(x) => validity && *x == h,
        Ex::Slice(a, ..) | Ex::Trunc(a, _) | Ex::Sext(a, ..) => reads(a, h, validity),
        Ex::Concat(a, b, _) | Ex::Bin(_, a, b, ..) => {
            reads(a, h, validity) || reads(b, h, validity)
        }
        Ex::Un(_, a, _) => reads(a, h, validity),
        Ex::Over { field, .. } => reads(field, h, validity),
        // The element it read is in `Parsed::stack_reads`.
        Ex::StackField { index, .. } => reads(index, h, validity),
        // (Packet bits, which no header operation moves.)
        Ex::Next(_)
        | Ex::Port(_)
        | Ex::Len(_)
        | Ex::Const(..)
        | Ex::Var(..)
        | Ex::Ahead(_)
        | Ex::AheadSlice { .. } => false,
    }
}

fn mask(w: u32) -> u64 {
    if w >= 64 { u64::MAX } else { (1u64 << w) - 1 }
}

/// A select key as an [`Ex`] and its width.
fn key_expr(p: &Pipeline, inputs: &Inputs, e: &Expr) -> Option<(Ex, u32)> {
    Some(match e {
        Expr::Const(b) => (Ex::Const(b.to_u64()?, b.width()), b.width()),
        Expr::Bool(b) => (Ex::Const(u64::from(*b), 1), 1),
        Expr::Slot(s) => {
            let slot = p.phv.slots.get(*s)?;
            if slot.width > 64 {
                return None;
            }
            let e = match slot.kind {
                SlotKind::HeaderField(h) if inputs.over.contains(s) => {
                    let hd = p.phv.headers.get(h)?;
                    Ex::Over {
                        var: inputs.var(*s)?,
                        field: Box::new(Ex::Field {
                            h: h.index(),
                            off: slot.offset - hd.offset,
                            w: slot.width,
                            slot: *s,
                        }),
                    }
                }
                SlotKind::HeaderField(_) if inputs.var(*s).is_some() => {
                    Ex::Var(inputs.var(*s)?, slot.width)
                }
                SlotKind::HeaderField(h) => {
                    fixed_offset(p, h, *s)?;
                    let hd = p.phv.headers.get(h)?;
                    Ex::Field {
                        h: h.index(),
                        off: slot.offset - hd.offset,
                        w: slot.width,
                        slot: *s,
                    }
                }
                SlotKind::Validity(h) => Ex::Valid(h.index()),
                SlotKind::NextIndex(st) => Ex::Next(st.index()),
                SlotKind::Metadata | SlotKind::Local | SlotKind::Temp => {
                    if let Some(v) = inputs.var(*s) {
                        Ex::Var(v, slot.width)
                    } else if Some(*s) == inputs.port {
                        Ex::Port(slot.width)
                    } else if Some(*s) == inputs.len {
                        Ex::Len(slot.width)
                    } else if inputs.unknown.contains(s) || written_by_parser(p, *s) {
                        return None;
                    } else {
                        Ex::Const(0, slot.width)
                    }
                }
                SlotKind::VarbitLength(_) => return None,
            };
            (e, slot.width)
        }
        Expr::IsValid(HeaderRef::Header(h)) => (Ex::Valid(h.index()), 1),
        Expr::Slice { value, hi, lo } if matches!(&**value, Expr::Slot(s) if inputs.wide.contains(s)) =>
        {
            let Expr::Slot(s) = &**value else {
                return None;
            };
            let w = p.phv.slots.get(*s)?.width;
            if hi - lo + 1 > 64 || *hi >= w {
                return None;
            }
            let e = Ex::AheadSlice {
                var: inputs.var(*s)?,
                hi: *hi,
                lo: *lo,
                w,
            };
            (e, hi - lo + 1)
        }
        Expr::Slice { value, hi, lo } => {
            let (v, _) = key_expr(p, inputs, value)?;
            (Ex::Slice(Box::new(v), *lo, hi - lo + 1), hi - lo + 1)
        }
        Expr::Binary(BinOp::Concat, a, b) => {
            let (a, wa) = key_expr(p, inputs, a)?;
            let (b, wb) = key_expr(p, inputs, b)?;
            if wa + wb > 64 {
                return None;
            }
            (Ex::Concat(Box::new(a), Box::new(b), wb), wa + wb)
        }
        // (`++` is the arm above.)
        Expr::Binary(op, a, b) => {
            let (a, w) = key_expr(p, inputs, a)?;
            let (b, wb) = key_expr(p, inputs, b)?;
            if w != wb && !matches!(op, BinOp::Shl | BinOp::ShrU | BinOp::ShrS) {
                return None;
            }
            let bool_result = op.is_comparison() || matches!(op, BinOp::And | BinOp::Or);
            let rw = if bool_result { 1 } else { w };
            (Ex::Bin(*op, Box::new(a), Box::new(b), w, wb), rw)
        }
        Expr::Unary(op, a) => {
            let (a, w) = key_expr(p, inputs, a)?;
            (Ex::Un(*op, Box::new(a), w), w)
        }
        Expr::StackField {
            stack,
            index,
            field,
        } => {
            let st = p.phv.stacks.get(*stack)?;
            let (index, _) = key_expr(p, inputs, index)?;
            // The field's place in each element (one header type: the same in all).
            let mut at = None;
            let mut slots = Vec::with_capacity(st.elems.len());
            for &h in &st.elems {
                fixed_width(p, h)?;
                let hd = p.phv.headers.get(h)?;
                let id = *hd.fields.get(*field as usize)?;
                let slot = p.phv.slots.get(id)?;
                slots.push(id);
                let here = (slot.offset - hd.offset, slot.width);
                if slot.width > 64 || at.is_some_and(|a| a != here) {
                    return None;
                }
                at = Some(here);
            }
            let (off, w) = at?;
            let elems = st.elems.iter().map(|h| h.index()).collect();
            (
                Ex::StackField {
                    elems,
                    slots,
                    index: Box::new(index),
                    off,
                    w,
                },
                w,
            )
        }
        Expr::Cast(Cast::Resize { width, signed }, v) => {
            let (v, w) = key_expr(p, inputs, v)?;
            if *width > 64 {
                return None;
            }
            if *width == w {
                (v, w)
            } else if *signed && *width > w {
                (Ex::Sext(Box::new(v), w, *width), *width)
            } else {
                // Truncation, or zero extension (the mask keeps every bit).
                (Ex::Trunc(Box::new(v), *width), *width)
            }
        }
        Expr::Cast(Cast::ToBool | Cast::FromBool, v) => key_expr(p, inputs, v)?,
        _ => return None,
    })
}

/// A keyset pattern on a key of `w` bits.
/// For a `select` of one key (`keys` of them) whose value `v` (`m`: the key's mask) took
/// the default case after cases that are each one exact value: those values, which any
/// packet taking the same way must differ from. `None` for any other select or case.
fn default_after_exact(keys: usize, cases: &[(Vec<Pat>, To)], v: u64, m: u64) -> Option<Vec<u64>> {
    if keys != 1 {
        return None;
    }
    let mut values = Vec::new();
    for (pats, _) in cases {
        match pats.as_slice() {
            [Pat::Mask { v: pv, m: pm }] if *pm == m => {
                if *pv & m == v {
                    return None; // the packet took this exact case
                }
                values.push(*pv & m);
            }
            [Pat::Mask { m: 0, .. }] => return Some(values),
            _ => return None,
        }
    }
    None
}

fn pattern(pt: &Pattern, w: u32) -> Option<Pat> {
    let m = mask(w);
    Some(match pt {
        Pattern::Exact(v) => Pat::Mask {
            v: v.resize(w).to_u64()?,
            m,
        },
        Pattern::Mask { value, mask: mk } => Pat::Mask {
            v: value.resize(w).to_u64()?,
            m: mk.resize(w).to_u64()? & m,
        },
        Pattern::Prefix { value, len } => {
            let pm = if *len == 0 {
                0
            } else {
                (m >> (w - (*len).min(w))) << (w - (*len).min(w))
            };
            Pat::Mask {
                v: value.resize(w).to_u64()?,
                m: pm & m,
            }
        }
        Pattern::Range { lo, hi } => Pat::Range {
            lo: lo.resize(w).to_u64()?,
            hi: hi.resize(w).to_u64()?,
        },
        Pattern::Any => Pat::Mask { v: 0, m: 0 },
    })
}

fn eval(e: &Ex, pkt: &[u8], out: &mut Parsed, port: u64) -> u64 {
    match e {
        Ex::Field { h, off, w, .. } => {
            let base = out.hdr_off[*h as usize];
            if base == NONE {
                0
            } else {
                read_bits(pkt, base + off, *w)
            }
        }
        Ex::Valid(h) => u64::from(out.valid[*h as usize]),
        Ex::Next(s) => u64::from(out.next[*s as usize]),
        Ex::Port(w) => port & mask(*w),
        Ex::Len(w) => (pkt.len() as u64) & mask(*w),
        Ex::Const(v, _) => *v,
        Ex::Var(i, _) => out.vars[*i as usize],
        Ex::Slice(v, lo, w) => (eval(v, pkt, out, port) >> lo) & mask(*w),
        Ex::Concat(a, b, wb) => {
            let hi = eval(a, pkt, out, port);
            let lo = eval(b, pkt, out, port);
            if *wb >= 64 { lo } else { hi << wb | lo }
        }
        Ex::Trunc(v, w) => eval(v, pkt, out, port) & mask(*w),
        Ex::Sext(v, from, to) => {
            let x = eval(v, pkt, out, port);
            let sign = *from > 0 && (x >> (from - 1)) & 1 == 1;
            if sign {
                (x | !mask(*from)) & mask(*to)
            } else {
                x
            }
        }
        Ex::Bin(op, a, b, w, wb) => {
            let x = eval(a, pkt, out, port);
            let y = eval(b, pkt, out, port);
            crate::program::arith64(*op, x, y, *w, *wb)
        }
        // (Never evaluated: `Op::Lookahead` reads the packet itself.)
        Ex::Ahead(_) => 0,
        Ex::Over { var, field } => {
            if out.ovr[*var as usize] {
                out.vars[*var as usize]
            } else {
                eval(field, pkt, out, port)
            }
        }
        Ex::AheadSlice { .. } => match ahead_bits(e, out) {
            Some((off, len)) => read_bits(pkt, off, len),
            None => 0,
        },
        Ex::Un(op, a, w) => {
            let x = eval(a, pkt, out, port);
            crate::program::unary64(*op, x, *w)
        }
        Ex::StackField {
            elems,
            index,
            off,
            w,
            ..
        } => {
            let i = eval(index, pkt, out, port);
            let Some(&h) = usize::try_from(i).ok().and_then(|i| elems.get(i)) else {
                // Past the stack: recorded too, so that the reads line up with the
                // expressions that made them (`Tracer::parser_value`).
                out.stack_reads.push(NONE);
                return 0;
            };
            out.stack_reads.push(h);
            match out.hdr_off[h as usize] {
                NONE => 0,
                base => read_bits(pkt, base + off, *w),
            }
        }
    }
}

/// `len` (1..=64) bits at bit offset `bit` of `data`, right-aligned; bits past the end read
/// as zero.
#[inline]
pub fn read_bits(data: &[u8], bit: u32, len: u32) -> u64 {
    let first = (bit / 8) as usize;
    let shift = bit % 8;
    // One unaligned 8-byte load when the field and the window fit.
    if shift + len <= 64
        && let Some(w) = data.get(first..first + 8)
        && let Ok(w) = <[u8; 8]>::try_from(w)
    {
        let v = u64::from_be_bytes(w) << shift;
        return if len == 0 { 0 } else { v >> (64 - len) };
    }
    if shift + len <= 64 {
        // Near the end: the bytes there are, zero-padded to the same 8-byte window.
        let mut w = [0u8; 8];
        let tail = data.get(first..).unwrap_or(&[]);
        let n = tail.len().min(8);
        w[..n].copy_from_slice(&tail[..n]);
        let v = u64::from_be_bytes(w) << shift;
        return if len == 0 { 0 } else { v >> (64 - len) };
    }
    let nbytes = (shift + len).div_ceil(8) as usize;
    let mut v: u128 = 0;
    for i in 0..nbytes {
        v = (v << 8) | u128::from(data.get(first + i).copied().unwrap_or(0));
    }
    let total = nbytes as u32 * 8;
    let v = v >> (total - shift - len);
    (v & ((1u128 << len) - 1)) as u64
}

/// ORs `len` (1..=64) bits `v` into the key at bit offset `key` (MSB-first words).
#[inline]
pub fn write_key(out: &mut [u64], key: u32, len: u32, v: u64) {
    let v = v & mask(len);
    let (w, off) = ((key / 64) as usize, key % 64);
    if off + len <= 64 {
        if let Some(x) = out.get_mut(w) {
            *x |= v << (64 - off - len);
        }
        return;
    }
    let len2 = off + len - 64;
    if let Some(x) = out.get_mut(w) {
        *x |= v >> len2;
    }
    if let Some(x) = out.get_mut(w + 1) {
        *x |= v << (64 - len2);
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
