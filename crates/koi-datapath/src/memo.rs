//! Lazy tracing and the trace memo: a slow-path run records what its tracer is to be given,
//! and its action program is taken from an earlier run that recorded exactly the same, or
//! else built by feeding the record to a tracer after the run.
//!
//! # Theory of operation
//!
//! A slow-path run has the interpreter process the packet while the observer follows it for
//! the megaflow: its mask, its recording, and its action program, which the tracer
//! ([`crate::program::Tracer`]) builds by following the run symbolically. The tracer is a
//! deterministic function of what it is given:
//! - the parse: where the headers are, their validity, the parser's assignments
//!   ([`crate::fastparse::Parsed::trace_start`]), and the megaflow mask when the run's
//!   recording starts;
//! - the run's events, in order ([`Ev`]): each statement executed (by its address in the
//!   pipeline, which outlives the datapath's runs) with its arguments, each action call,
//!   architecture write, instance, copy, packet out, extern result, table decision, guard,
//!   traffic manager event, and each influence that grew the megaflow mask, which the tracer
//!   consults to fold into constants the fields the megaflow fixes (not those on hash keys,
//!   [`crate::flowkey::HashKey`]: their bits are no field's, so the tracer folds nothing from
//!   them, and leaving them out lets runs whose hashes fall in different blocks share one
//!   program);
//! - the parts of the PHV it reads as constants ([`crate::program::Known`]'s `fixed`, the
//!   initial values of metadata and of headers not parsed), and the per-packet inputs and
//!   extern results it reads, which only the check at installation uses.
//!
//! The observer records the first two in a [`TraceLog`] (the inputs and extern results go
//! to a side list, no part of the log's identity) instead of running the tracer. When the
//! run ends:
//! - if the memo holds a run with the same log whose PHV bits match, the tracer would be
//!   given the same, so it would build the same program: that program is used;
//! - else a tracer is fed the log ([`replay`]), with the mask grown as during the run, and
//!   builds the program. A run whose program was compiled and checked, which read no state
//!   and no extern result, took no state-dependent decision and had no traffic-manager
//!   input added to its mask, is kept in the memo with the PHV bits its tracer read.
//!
//! Either way the program is checked on the packet against the interpreter's outcome, as
//! every compiled program is, and installed with the run's own mask. Logs are compared
//! whole, never by hash alone. The memo is emptied by every control-plane change that
//! invalidates megaflows, and when it is full.

use crate::flowkey::FlowKeyLayout;
use crate::program::{Known, Program, TraceFacts, Tracer, WriteKind};
use koi_interp::{CopyKind, TmEvent};
use koi_ir::entity::EntityId;
use koi_ir::{Bits, BlockId, FieldListId, Pipeline, Role, SlotId, Stmt, TableId, Terminator};
use std::cell::RefCell;
use std::collections::HashMap;
use std::hash::Hasher;
use std::sync::Arc;

/// Runs kept at most (each holds its log, a few kilobytes).
const MAX_ENTRIES: usize = 1024;

/// Runs kept per log, with different PHV bits (the latest ones).
const PER_LOG: usize = 4;

/// A [`Hasher`] that writes everything it is given, in order, as words: what derived `Hash`
/// implementations feed it is then compared exactly.
pub(crate) struct Sig<'a>(pub &'a mut Vec<u64>);

impl Hasher for Sig<'_> {
    fn finish(&self) -> u64 {
        0
    }

    fn write(&mut self, bytes: &[u8]) {
        self.0.push(bytes.len() as u64 | 1 << 63);
        for c in bytes.chunks(8) {
            let mut w = [0u8; 8];
            w[..c.len()].copy_from_slice(c);
            self.0.push(u64::from_le_bytes(w));
        }
    }

    fn write_u8(&mut self, x: u8) {
        self.0.push(u64::from(x));
    }

    fn write_u16(&mut self, x: u16) {
        self.0.push(u64::from(x));
    }

    fn write_u32(&mut self, x: u32) {
        self.0.push(u64::from(x));
    }

    fn write_u64(&mut self, x: u64) {
        self.0.push(x);
    }

    fn write_u128(&mut self, x: u128) {
        self.0.extend([x as u64, (x >> 64) as u64]);
    }

    fn write_usize(&mut self, x: usize) {
        self.0.push(x as u64);
    }

    fn write_isize(&mut self, x: isize) {
        self.0.push(x as u64);
    }
}

/// The pipeline's statements and terminators by address, for [`replay`].
pub(crate) struct Sites<'p> {
    stmts: HashMap<usize, &'p Stmt, foldhash::fast::RandomState>,
    terms: HashMap<usize, &'p Terminator, foldhash::fast::RandomState>,
}

impl std::fmt::Debug for Sites<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Sites")
            .field("stmts", &self.stmts.len())
            .field("terms", &self.terms.len())
            .finish()
    }
}

impl<'p> Sites<'p> {
    pub fn new(p: &'p Pipeline) -> Sites<'p> {
        let mut s = Sites {
            stmts: HashMap::default(),
            terms: HashMap::default(),
        };
        crate::flowkey::for_each_stmt(p, &mut |st| {
            s.stmts.insert(addr(st), st);
        });
        for body in crate::flowkey::bodies(p) {
            for t in body.blocks.values().filter_map(|b| b.term.as_ref()) {
                s.terms.insert(addr(t), t);
            }
        }
        s
    }
}

fn addr<T>(x: &T) -> usize {
    std::ptr::from_ref(x).addr()
}

/// A range of [`TraceLog::bits`].
type Span = (u32, u32);

/// One thing the tracer is given (see the module documentation).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
enum Ev {
    Stmt {
        at: usize,
        args: Span,
    },
    Action {
        args: Span,
    },
    ActionEnd,
    /// An architecture write of a value the tracer takes as a constant.
    ArchWrite {
        slot: SlotId,
        value: u32,
    },
    /// An architecture write of a per-packet input (its value in [`Side::written`]).
    ArchInput {
        slot: SlotId,
    },
    /// An architecture write of a value the program cannot compute (`width` bits).
    ArchOpaque {
        slot: SlotId,
        width: u32,
    },
    Instance(Role),
    Enqueued,
    CopyBegin(CopyKind),
    MetadataReset(Option<FieldListId>),
    CopyEnd,
    PacketOut(u64),
    ParserFailed,
    /// An extern's result (in [`Side::results`]: the tracer takes it only as a read).
    ExternResult,
    Influence {
        slot: SlotId,
        mask: u32,
    },
    GuardJump {
        at: usize,
        to: BlockId,
        args: Span,
    },
    GuardTable {
        table: TableId,
        keys: Span,
    },
    Table {
        table: TableId,
        hit: Option<u32>,
    },
    Tm(u32),
}

/// What a slow-path run gives its tracer (see the module documentation); equal logs give
/// the tracer the same.
///
/// Logs are compared on `head`, `words` and `tms`: `words` encodes every event and every
/// value of `evs` and `bits` one to one (a variant's tag fixes how many words follow), so
/// that two logs compare as two word slices.
#[derive(Clone, Debug, Default)]
pub(crate) struct TraceLog {
    /// The parse and the megaflow mask when the recording started.
    head: Vec<u64>,
    evs: Vec<Ev>,
    bits: Vec<Bits>,
    tms: Vec<TmEvent>,
    /// `evs` and `bits`, in the order they were added, as words.
    words: Vec<u64>,
}

impl PartialEq for TraceLog {
    fn eq(&self, o: &TraceLog) -> bool {
        self.words == o.words && self.head == o.head && self.tms == o.tms
    }
}

impl TraceLog {
    /// The log without what only its replay reads (a memo entry's, compared only).
    fn compared(&self) -> TraceLog {
        TraceLog {
            head: self.head.clone(),
            evs: Vec::new(),
            bits: Vec::new(),
            tms: self.tms.clone(),
            words: self.words.clone(),
        }
    }
}

/// `ev` as words (the first `n` of the array): its variant's tag in the top bits of the
/// first (below them at most one field of 32 bits), then its other fields a word each.
#[inline(always)]
fn encode(ev: &Ev) -> ([u64; 3], usize) {
    let span = |(s, n): Span| u64::from(s) << 32 | u64::from(n);
    let tag = |t: u64, a: u32| t << 58 | u64::from(a);
    let one = |a| ([a, 0, 0], 1);
    let two = |a, b| ([a, b, 0], 2);
    match ev {
        Ev::Stmt { at, args } => ([tag(1, 0), *at as u64, span(*args)], 3),
        Ev::Action { args } => two(tag(2, 0), span(*args)),
        Ev::ActionEnd => one(tag(3, 0)),
        Ev::ArchWrite { slot, value } => two(tag(4, *value), u64::from(slot.index())),
        Ev::ArchInput { slot } => one(tag(5, slot.index())),
        Ev::ArchOpaque { slot, width } => two(tag(6, *width), u64::from(slot.index())),
        Ev::Instance(r) => one(tag(7, *r as u32)),
        Ev::Enqueued => one(tag(8, 0)),
        Ev::CopyBegin(k) => one(tag(9, *k as u32)),
        Ev::MetadataReset(f) => two(tag(10, 0), f.map_or(u64::MAX, |f| u64::from(f.index()))),
        Ev::CopyEnd => one(tag(11, 0)),
        Ev::PacketOut(port) => two(tag(12, 0), *port),
        Ev::ParserFailed => one(tag(13, 0)),
        Ev::ExternResult => one(tag(14, 0)),
        Ev::Influence { slot, mask } => two(tag(15, *mask), u64::from(slot.index())),
        Ev::GuardJump { at, to, args } => ([tag(16, to.index()), *at as u64, span(*args)], 3),
        Ev::GuardTable { table, keys } => two(tag(17, table.index()), span(*keys)),
        Ev::Table { table, hit } => two(tag(18, table.index()), hit.map_or(u64::MAX, u64::from)),
        Ev::Tm(i) => one(tag(19, *i)),
    }
}

/// The per-packet values a run's tracer reads that are no part of its log: the
/// architecture's writes of inputs (at the slot's width) and extern results, in order.
#[derive(Clone, Debug, Default)]
pub(crate) struct Side {
    pub written: Vec<Bits>,
    results: Vec<Option<Bits>>,
}

/// The record of one run: its log, its side values and the mask its recording started with.
#[derive(Debug, Default)]
pub(crate) struct Recorder {
    pub log: TraceLog,
    pub side: Side,
    pub mask0: Vec<u64>,
    /// The span of the last arguments added (statements of one action share them).
    last_args: Option<Span>,
    /// A hash of the log so far (the memo's index; logs are compared whole).
    hash: u64,
}

impl Recorder {
    /// Starts the record of a run: its parse and the mask so far.
    pub fn start(&mut self, parsed: &crate::fastparse::Parsed, mask: &[u64]) {
        self.log.head.clear();
        self.log.evs.clear();
        self.log.bits.clear();
        self.log.tms.clear();
        self.log.words.clear();
        self.side.written.clear();
        self.side.results.clear();
        self.last_args = None;
        let mut h = Sig(&mut self.log.head);
        parsed.trace_start(&mut h);
        std::hash::Hash::hash(mask, &mut h);
        self.hash = 0;
        for i in 0..self.log.head.len() {
            self.mix(self.log.head[i]);
        }
        self.mask0.clear();
        self.mask0.extend_from_slice(mask);
    }

    #[inline]
    fn mix(&mut self, x: u64) {
        self.hash = (self.hash ^ x)
            .wrapping_mul(0x9e37_79b9_7f4a_7c15)
            .rotate_left(29);
    }

    /// Adds event `ev` to the log. (Inlined into each kind of event's method, where the
    /// variant is known and its encoding folds.)
    #[inline(always)]
    fn push(&mut self, ev: Ev) {
        // (Three words an event, those past its own zeros: a copy of fixed length.)
        let (w, _) = encode(&ev);
        self.log.words.extend_from_slice(&w);
        // (One step of the hash for the event: it only indexes the memo.)
        self.mix(w[0] ^ w[1].rotate_left(17) ^ w[2]);
        self.log.evs.push(ev);
    }

    fn bits(&mut self, b: &Bits) -> u32 {
        // (A value's words: tag 0 with its width, its limb count, then its limbs.)
        // Values of up to two limbs take four words, of fixed length.
        let limbs = b.limbs();
        let w = u64::from(b.width());
        match *limbs {
            [] => self.log.words.extend_from_slice(&[w, 0, 0, 0]),
            [a] => self.log.words.extend_from_slice(&[w, 1, a, 0]),
            [a, c] => self.log.words.extend_from_slice(&[w, 2, a, c]),
            _ => {
                self.log.words.extend_from_slice(&[w, limbs.len() as u64]);
                self.log.words.extend_from_slice(limbs);
            }
        }
        self.mix(w ^ b.low_u64());
        self.log.bits.push(b.clone());
        (self.log.bits.len() - 1) as u32
    }

    fn span(&mut self, v: &[Bits]) -> Span {
        if let Some((s, n)) = self.last_args
            && self.log.bits.get(s as usize..(s + n) as usize) == Some(v)
        {
            return (s, n);
        }
        let s = self.log.bits.len() as u32;
        for b in v {
            self.bits(b);
        }
        let span = (s, v.len() as u32);
        self.last_args = Some(span);
        span
    }

    pub fn stmt(&mut self, s: &Stmt, params: &[Bits]) {
        let args = self.span(params);
        self.push(Ev::Stmt { at: addr(s), args });
    }

    pub fn action(&mut self, args: &[Bits]) {
        let args = self.span(args);
        self.push(Ev::Action { args });
    }

    pub fn action_end(&mut self) {
        self.push(Ev::ActionEnd);
    }

    /// An architecture write: `kind` tells whether the tracer takes its value as a
    /// constant; an input's value is given at the slot's width `w`.
    pub fn arch_write(&mut self, slot: SlotId, value: &Bits, kind: WriteKind, w: u32) {
        let ev = match kind {
            WriteKind::Constant => Ev::ArchWrite {
                slot,
                value: self.bits(value),
            },
            WriteKind::Input(_) => {
                self.side.written.push(value.resize(w));
                Ev::ArchInput { slot }
            }
            WriteKind::Opaque => Ev::ArchOpaque {
                slot,
                width: value.width(),
            },
        };
        self.push(ev);
    }

    pub fn instance(&mut self, role: Role) {
        self.push(Ev::Instance(role));
    }

    pub fn enqueued(&mut self) {
        self.push(Ev::Enqueued);
    }

    pub fn copy_begin(&mut self, kind: CopyKind) {
        self.push(Ev::CopyBegin(kind));
    }

    pub fn metadata_reset(&mut self, fl: Option<FieldListId>) {
        self.push(Ev::MetadataReset(fl));
    }

    pub fn copy_end(&mut self) {
        self.push(Ev::CopyEnd);
    }

    pub fn packet_out(&mut self, port: u64) {
        self.push(Ev::PacketOut(port));
    }

    pub fn parser_failed(&mut self) {
        self.push(Ev::ParserFailed);
    }

    pub fn extern_result(&mut self, result: Option<&Bits>) {
        self.side.results.push(result.cloned());
        self.push(Ev::ExternResult);
    }

    pub fn influence(&mut self, slot: SlotId, mask: &Bits) {
        let mask = self.bits(mask);
        self.push(Ev::Influence { slot, mask });
    }

    pub fn guard_jump(&mut self, t: &Terminator, to: BlockId, params: &[Bits]) {
        let args = self.span(params);
        self.push(Ev::GuardJump {
            at: addr(t),
            to,
            args,
        });
    }

    pub fn guard_table(&mut self, table: TableId, keys: &[Bits]) {
        let keys = self.span(keys);
        self.push(Ev::GuardTable { table, keys });
    }

    pub fn table(&mut self, table: TableId, hit: Option<u32>) {
        self.push(Ev::Table { table, hit });
    }

    pub fn tm(&mut self, ev: &TmEvent) {
        self.mix(std::hash::BuildHasher::hash_one(
            &foldhash::fast::FixedState::default(),
            ev,
        ));
        self.log.tms.push(ev.clone());
        self.push(Ev::Tm((self.log.tms.len() - 1) as u32));
    }
}

/// Feeds tracer `t` the run that `rec` recorded, growing `mask` (from the mask the
/// recording started with) as the run did; the tracer notes in `fixed` the PHV bits it
/// folds. Returns whether a traffic-manager event added its inputs to the mask.
#[allow(clippy::too_many_arguments)]
pub(crate) fn replay<'p>(
    rec: &Recorder,
    sites: &Sites<'p>,
    t: &mut Tracer<'p>,
    p: &Pipeline,
    layout: &FlowKeyLayout,
    mask: &mut [u64],
    phv0: &[u8],
    fixed: &RefCell<Vec<(u32, u32)>>,
) -> Result<bool, &'static str> {
    let log = &rec.log;
    let bits = |(s, n): Span| &log.bits[s as usize..(s + n) as usize];
    let (mut written, mut results) = (rec.side.written.iter(), rec.side.results.iter());
    let mut widened = false;
    for ev in &log.evs {
        let k = Known {
            layout,
            mask,
            phv0,
            fixed: Some(fixed),
        };
        match ev {
            Ev::Stmt { at, args } => {
                let s = sites
                    .stmts
                    .get(at)
                    .ok_or("statement outside the pipeline")?;
                t.stmt(s, bits(*args), &k);
            }
            Ev::Action { args } => t.action(bits(*args)),
            Ev::ActionEnd => t.action_end(),
            Ev::ArchWrite { slot, value } => t.arch_write(*slot, &log.bits[*value as usize]),
            Ev::ArchInput { slot } => {
                t.arch_write(*slot, written.next().ok_or("missing input")?);
            }
            Ev::ArchOpaque { slot, width } => t.arch_write(*slot, &Bits::zero(*width)),
            Ev::Instance(role) => t.instance(*role),
            Ev::Enqueued => t.enqueued(),
            Ev::CopyBegin(kind) => t.copy_begin(*kind),
            Ev::MetadataReset(fl) => t.metadata_reset(*fl),
            Ev::CopyEnd => t.copy_end(),
            Ev::PacketOut(port) => t.packet_out(*port, &k),
            Ev::ParserFailed => t.parser_failed(),
            Ev::ExternResult => {
                t.extern_result(results.next().ok_or("missing result")?.as_ref());
            }
            Ev::Influence { slot, mask: m } => {
                layout.mask_for(*slot, &log.bits[*m as usize], mask);
            }
            Ev::GuardJump { at, to, args } => {
                let term = sites
                    .terms
                    .get(at)
                    .ok_or("terminator outside the pipeline")?;
                t.guard_jump(term, *to, bits(*args), &k);
            }
            Ev::GuardTable { table, keys } => t.guard_table(*table, bits(*keys), &k),
            Ev::Table { table, hit } => t.table(*table, *hit),
            Ev::Tm(i) => {
                let ev = &log.tms[*i as usize];
                // The packet fields the traffic manager's inputs are computed from, matched
                // whole if the megaflow does not fix them yet, so that the program sends to
                // a fixed port (only fields the key holds whole; else the run is replayed).
                let slots = t.tm_inputs(&k);
                if !slots.is_empty() {
                    widened = true;
                    let width = |s: SlotId| p.phv.slots.get(s).map_or(0, |x| x.width);
                    if slots
                        .iter()
                        .all(|&s| layout.whole_field(s, width(s)).is_some())
                    {
                        for s in slots {
                            layout.mask_field(s, width(s), mask);
                        }
                    }
                }
                let k = Known {
                    layout,
                    mask,
                    phv0,
                    fixed: Some(fixed),
                };
                t.tm(ev, &k);
            }
        }
    }
    Ok(widened)
}

/// One memoised run: its program, what its tracer read, and the PHV bits it read (a bit mask
/// over the PHV and their values).
struct Entry {
    log: TraceLog,
    program: Arc<Program>,
    mask: Vec<u8>,
    values: Vec<u8>,
    facts: TraceFacts,
}

impl Entry {
    fn fits(&self, phv0: &[u8]) -> bool {
        masked_eq(phv0, &self.mask, &self.values)
    }
}

/// Sets bits `off..off + w` of `mask`, in network order (as `Bits::read_bits` reads the PHV);
/// bits past its end are left out (a read there is of zeros, the same for every PHV of this
/// length).
fn set_bits(mask: &mut [u8], off: u32, w: u32) {
    let (mut bit, end) = (u64::from(off), u64::from(off) + u64::from(w));
    while bit < end {
        let at = (bit / 8) as usize;
        // Whole bytes at once.
        if bit % 8 == 0 && end - bit >= 8 {
            let n = (((end - bit) / 8) as usize).min(mask.len().saturating_sub(at));
            if n == 0 {
                return;
            }
            mask[at..at + n].fill(0xff);
            bit += 8 * n as u64;
            continue;
        }
        let Some(m) = mask.get_mut(at) else {
            return;
        };
        let first = (bit % 8) as u32;
        let n = (8 - u64::from(first)).min(end - bit) as u32;
        // `n` bits from bit `first` of the byte, counted from its top.
        *m |= ((0xffu16 << (8 - n)) as u8) >> first;
        bit += u64::from(n);
    }
}

/// Whether `phv & mask == values` (all of one length).
fn masked_eq(phv: &[u8], mask: &[u8], values: &[u8]) -> bool {
    if phv.len() != mask.len() || mask.len() != values.len() {
        return false;
    }
    // Eight bytes at a time, then the rest.
    let word = |b: &[u8]| u64::from_ne_bytes(b.try_into().unwrap_or([0; 8]));
    let (p8, m8, v8) = (
        phv.chunks_exact(8),
        mask.chunks_exact(8),
        values.chunks_exact(8),
    );
    let tails = (p8.remainder(), m8.remainder(), v8.remainder());
    p8.zip(m8)
        .zip(v8)
        .all(|((p, m), v)| word(p) & word(m) == word(v))
        && tails
            .0
            .iter()
            .zip(tails.1)
            .zip(tails.2)
            .all(|((p, m), v)| p & m == *v)
}

/// The memo: runs by their log (by its hash, each then compared whole), the latest first.
#[derive(Default)]
pub(crate) struct TraceMemo {
    entries: HashMap<u64, Vec<Entry>, foldhash::fast::RandomState>,
    len: usize,
}

impl std::fmt::Debug for TraceMemo {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TraceMemo")
            .field("entries", &self.entries.len())
            .finish()
    }
}

impl TraceMemo {
    /// The program of a run recorded as `rec`'s, for a packet whose PHV was `phv0` when the
    /// parse ended, with the read values its check needs.
    pub fn find(&self, rec: &Recorder, phv0: &[u8]) -> Option<(Arc<Program>, Vec<Option<Bits>>)> {
        if self.entries.is_empty() {
            return None;
        }
        let e = self
            .entries
            .get(&rec.hash)?
            .iter()
            .find(|e| e.log == rec.log && e.fits(phv0))?;
        Some((
            Arc::clone(&e.program),
            e.facts.reads(phv0, &rec.side.written),
        ))
    }

    /// Keeps the run recorded as `rec` with `program`; its tracer read `facts` and `fixed`
    /// (bit offset, width) of `phv0`.
    pub fn insert(
        &mut self,
        rec: &Recorder,
        program: Arc<Program>,
        facts: TraceFacts,
        fixed: &[(u32, u32)],
        phv0: &[u8],
    ) {
        let mut mask = vec![0u8; phv0.len()];
        for &(off, w) in facts.phv_reads.iter().chain(fixed) {
            set_bits(&mut mask, off, w);
        }
        let values = phv0.iter().zip(&mask).map(|(p, m)| p & m).collect();
        if self.len >= MAX_ENTRIES {
            self.clear();
        }
        let runs = self.entries.entry(rec.hash).or_default();
        // (One for the same log with other PHV bits: the oldest goes first.)
        if runs.len() >= PER_LOG {
            runs.pop();
            self.len -= 1;
        }
        runs.insert(
            0,
            Entry {
                log: rec.log.compared(),
                program,
                mask,
                values,
                facts,
            },
        );
        self.len += 1;
    }

    /// Forgets every run.
    pub fn clear(&mut self) {
        self.entries.clear();
        self.len = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::hash::Hash;

    fn stream<T: Hash>(v: &T) -> Vec<u64> {
        let mut out = Vec::new();
        v.hash(&mut Sig(&mut out));
        out
    }

    #[test]
    fn streams_tell_values_apart() {
        // Strings of different lengths, and their split between fields.
        assert_ne!(stream(&("ab", "c")), stream(&("a", "bc")));
        assert_ne!(stream(&"abcdefgh"), stream(&"abcdefgh\0"));
        assert_eq!(stream(&("ab", 7u32)), stream(&("ab", 7u32)));
        let a = Bits::from_u64(8, 5);
        let b = Bits::from_u64(9, 5);
        assert_ne!(stream(&a), stream(&b));
        assert_ne!(stream(&Some(0u64)), stream(&None::<u64>));
    }

    proptest::proptest! {
        #[test]
        fn masked_compare_agrees_with_bytes(
            phv in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..40),
            mask_seed in proptest::collection::vec(proptest::prelude::any::<u8>(), 40),
            flip in 0usize..400,
        ) {
            let mask = &mask_seed[..phv.len()];
            let mut values: Vec<u8> = phv.iter().zip(mask).map(|(p, m)| p & m).collect();
            proptest::prop_assert!(masked_eq(&phv, mask, &values));
            if !values.is_empty() {
                // A PHV bit changed: equal again only outside the mask.
                let (i, b) = ((flip / 8) % values.len(), flip % 8);
                let mut other = phv.clone();
                other[i] ^= 0x80 >> b;
                proptest::prop_assert_eq!(masked_eq(&other, mask, &values), mask[i] & 0x80 >> b == 0);
                // A value bit changed: never equal.
                values[i] ^= 0x80 >> b;
                proptest::prop_assert!(!masked_eq(&phv, mask, &values));
            }
        }
    }

    proptest::proptest! {
        #[test]
        fn set_bits_sets_exactly_the_range(len in 0usize..12, off in 0u32..100, w in 0u32..100) {
            let mut mask = vec![0u8; len];
            set_bits(&mut mask, off, w);
            for bit in 0..(len as u32 * 8) {
                let set = mask[(bit / 8) as usize] & (0x80 >> (bit % 8)) != 0;
                proptest::prop_assert_eq!(set, bit >= off && bit < off + w, "bit {}", bit);
            }
        }
    }

    #[test]
    fn statements_of_one_action_share_their_arguments() {
        let mut r = Recorder::default();
        let stmt = Stmt::SetValid(koi_ir::HeaderRef::Header(
            <koi_ir::HeaderId as koi_ir::entity::EntityId>::new(0),
        ));
        let args = [Bits::from_u64(8, 1), Bits::from_u64(16, 2)];
        r.action(&args);
        r.stmt(&stmt, &args);
        r.stmt(&stmt, &args);
        assert_eq!(r.log.bits.len(), 2);
        // Other values take new room, even at the same place.
        let other = [Bits::from_u64(8, 1), Bits::from_u64(16, 3)];
        r.stmt(&stmt, &other);
        assert_eq!(r.log.bits.len(), 4);
        assert_eq!(&r.log.bits[2..], &other);
    }

    /// Adds one of a few events, chosen by `op`, with small fields (so that two sequences
    /// often share some).
    fn add(r: &mut Recorder, (op, a, b): (u8, u32, u64)) {
        let v = Bits::from_u64(1 + a % 3, b % 4);
        match op % 9 {
            0 => r.table(TableId::new(a % 3), (b % 3 != 0).then_some(b as u32 % 3)),
            1 => r.influence(SlotId::new(a % 3), &v),
            2 => r.packet_out(b % 3),
            3 => r.action(&[v]),
            4 => r.action_end(),
            5 => r.instance(if a % 2 == 0 {
                Role::Ingress
            } else {
                Role::Egress
            }),
            6 => r.arch_write(SlotId::new(a % 2), &v, WriteKind::Constant, v.width()),
            7 => r.extern_result((b % 2 == 0).then_some(&v)),
            _ => r.metadata_reset((a % 3 != 0).then(|| FieldListId::new(a % 2))),
        }
    }

    proptest::proptest! {
        #[test]
        fn logs_compare_as_their_events(
            x in proptest::collection::vec((0u8..9, 0u32..4, 0u64..6), 0..8),
            y in proptest::collection::vec((0u8..9, 0u32..4, 0u64..6), 0..8),
        ) {
            let (mut r, mut q) = (Recorder::default(), Recorder::default());
            x.iter().for_each(|&o| add(&mut r, o));
            y.iter().for_each(|&o| add(&mut q, o));
            let same = r.log.evs == q.log.evs && r.log.bits == q.log.bits;
            proptest::prop_assert_eq!(r.log == q.log, same);
            proptest::prop_assert!(r.log == r.log.compared());
            if same {
                proptest::prop_assert_eq!(r.hash, q.hash);
            }
        }
    }
}
