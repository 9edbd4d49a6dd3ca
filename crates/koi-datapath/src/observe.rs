//! The slow path's observer of one packet's interpreter run ([`DpObserver`]): on a miss it
//! tracks which key bits each decision read (the megaflow's mask), records the run for the
//! tracer and the trace memo, and tags the megaflow with the tables and entries it used; on a
//! hit without a compiled program it replays the recorded decisions; and it checks what the
//! tracer compiled against the interpreter's output. [`crate::datapath`] drives it.

use crate::datapath::*;
use crate::fastparse::{FastParser, Parsed};
use crate::flowkey::{Coverage, FlowKeyLayout};
use crate::memo::{Recorder, Sites, TraceMemo};
use crate::program::{Emitted, Known, Program, Scratch, Tracer, TracerSetup};
use koi_cache::{FlowCache, MegaflowId};
use koi_interp::{Observer, Outcome, Output, Replay, Step, TmEvent};
use koi_ir::{ExternKind, HashAlgo, Pipeline, SlotId, TableId, entity::EntityId};
use std::collections::BTreeMap;
use std::ops::Range;
use std::sync::Arc;

/// Where the observer is in the run.
pub(crate) enum Mode {
    /// Before the first parse ended: tracking influences.
    Deciding,
    /// A miss: recording the run for a megaflow.
    Recording,
    /// A hit: replaying `flow` from position `at`.
    Replaying { flow: Arc<Megaflow>, at: usize },
    /// Neither (a diverged replay): the interpreter evaluates everything.
    Evaluating,
}

/// The observer of one packet's run: wildcard tracking and recording on a miss, replay on
/// a hit.
pub(crate) struct DpObserver<'a> {
    pub(crate) pipeline: &'a Pipeline,
    pub(crate) layout: &'a FlowKeyLayout,
    pub(crate) cache: &'a mut FlowCache<Arc<Megaflow>>,
    pub(crate) stats: &'a mut DatapathStats,
    pub(crate) packet: &'a [u8],
    pub(crate) port: u64,
    pub(crate) fast: Option<&'a FastParser>,
    pub(crate) parsed: &'a mut Parsed,
    pub(crate) fast_key: &'a mut Vec<u64>,
    pub(crate) phv0: Vec<u8>,
    pub(crate) drop_port: u64,
    pub(crate) setup: &'a Arc<TracerSetup>,
    pub(crate) scratch: &'a mut Scratch,
    pub(crate) reasons: &'a mut BTreeMap<&'static str, u64>,
    pub(crate) programs: &'a mut Programs,
    /// The fast path just looked this packet's key up and missed: the first parse need not
    /// look it up again (same key, same caches).
    pub(crate) known_miss: bool,
    /// The guarded megaflow the packet fit none of the programs of: the run is added to it
    /// as an arm.
    pub(crate) extend: Option<MegaflowId>,
    /// A state-dependent branch, `switch` or table key is being decided: the tracer guards
    /// it when it is reported.
    pub(crate) guard_pending: bool,
    /// The run has state-dependent decisions: cached only with a compiled (guarded)
    /// program, never as a replay.
    pub(crate) guarded: bool,
    pub(crate) mode: Mode,
    pub(crate) key: Vec<u64>,
    pub(crate) mask: Vec<u64>,
    pub(crate) cacheable: bool,
    pub(crate) min_len_bits: u64,
    /// The packet was shorter than this for its parser (`u64::MAX`: it was long enough).
    pub(crate) max_len_bits: u64,
    /// The bits of packet the first parse needed when the packet was too short (0: it was
    /// not), which the key holds ([`FlowKeyLayout::set_stop`]).
    pub(crate) short_bits: u64,
    pub(crate) parses: u32,
    pub(crate) tags: Vec<u32>,
    pub(crate) recording: Vec<Rec>,
    /// The trace memo (`None`: not used), the pipeline's statements by address, and the
    /// run's record for its tracer ([`crate::memo`]), kept while `recording_trace`.
    pub(crate) memo: Option<&'a mut TraceMemo>,
    pub(crate) sites: &'a Sites<'a>,
    pub(crate) rec: &'a mut Recorder,
    pub(crate) recording_trace: bool,
    /// The run has executed a statement that writes a value from extern state
    /// ([`crate::flowkey::writes_state`]) or reads a timestamp, or decided on a timestamp.
    /// Until it has, no value of the run is state-derived, so a slot the static analysis
    /// marks as possibly state-derived (say, one written from `random` on a path this run
    /// does not take) is data like any other.
    pub(crate) state_seen: bool,
    /// How far each later parse may read ([`Passes`]), and whether PSA's egress parser is
    /// running.
    pub(crate) passes: Passes,
    pub(crate) egress_parse: bool,
    /// A parse after the first (a resubmitted or recirculated packet's) is running.
    pub(crate) later_parse: bool,
    /// The slots that hold a copy of a hash key's bits now ([`crate::flowkey::HashKey`]):
    /// a decision on one masks those bits of the hash key.
    pub(crate) copies: Vec<(SlotId, HashCopy)>,
    /// The data of a hash key being computed, and the custom CRCs (the datapath's).
    pub(crate) hash_buf: &'a mut crate::flowkey::HashBuf,
    /// The datapath's set of hash keys a megaflow may match (bit `i`: hash key `i`).
    pub(crate) hash_used: &'a mut u64,
}

/// A piece of a slot holding bits of a hash key: the slot's value bits `at..at + width`
/// (bit 0 the least significant) are the hash key's bits `lsb..lsb + width`. A slot may hold
/// several pieces (a concatenation of hash bits); its bits outside them are zero.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct HashCopy {
    pub key: u16,
    pub lsb: u32,
    pub width: u32,
    pub at: u32,
}

/// How far each parse after the first may read. [`crate::flowkey`] takes what such a parse
/// extracts as computed from the headers its packet holds; a parse that reads past them
/// reads the payload, which no key holds, and the run is not cached.
///
/// - PSA's egress parse reads the headers its copy holds: a normal instance's, those the
///   ingress deparser emitted; a CLONE_I2E copy's, those the ingress parser extracted (the
///   packet as received); a CLONE_E2E copy's, those the egress deparser emitted.
/// - A resubmitted packet's parse (v1model, PSA) reads the packet as received: the headers
///   the first parse extracted. A recirculated packet's (v1model, PSA) reads the headers the
///   deparser emitted. The run masks those headers whole, and what they are computed from,
///   when it takes such a pass ([`DpObserver::next_pass`]).
#[derive(Debug, Default)]
pub(crate) struct Passes {
    /// The bits the ingress deparser, the egress deparser (last; v1model's deparser) and the
    /// first ingress parse emitted or extracted.
    ingress_emitted: u64,
    egress_emitted: u64,
    ingress_parsed: u64,
    /// The headers the first ingress parse extracted (by instance), and whether one was
    /// extracted twice (its first bytes then held by no key); followed only where a later
    /// parse reads the packet as it came in (`FlowKeyLayout::reparses_arrival`).
    extracted: Vec<koi_ir::HeaderId>,
    reextracted: bool,
    /// The copy being made, between `copy_begin` and `copy_end`.
    copying: Option<koi_interp::CopyKind>,
    /// The bound of each instance queued for egress, in queue order, and the current egress
    /// pass's.
    queued: std::collections::VecDeque<u64>,
    bound: u64,
    /// The bits a resubmitted or recirculated packet's parse may read (set by the traffic
    /// manager's event that starts it).
    next_bound: u64,
    /// The resubmissions and recirculations so far.
    later: u32,
}

/// The widest slot whose hash key pieces are followed (a decision's mask is read as 128 bits).
const COPY_MAX_BITS: u32 = 128;

impl<'a> DpObserver<'a> {
    pub(crate) fn tracking(&self) -> bool {
        matches!(self.mode, Mode::Deciding | Mode::Recording)
    }

    /// A PSA run whose egress parses are bounded ([`Passes`]): only while tracking (a
    /// replay keeps no bounds, so its packets allocate nothing for them).
    fn psa_tracking(&self) -> bool {
        self.pipeline.arch == koi_ir::Architecture::Psa && self.tracking()
    }

    /// A resubmission (`recirculated` false) or recirculation starts another parse: masks
    /// the headers its packet holds whole, with what they are computed from, and bounds the
    /// parse's reads by them (`Passes`). `false`: the pass is not modelled, or its headers'
    /// values may come from state, and the run is not cached.
    fn next_pass(&mut self, recirculated: bool) -> bool {
        let Some(slots) = self.layout.next_pass(recirculated) else {
            return false;
        };
        let passes = &mut self.passes;
        passes.later += 1;
        if recirculated {
            passes.next_bound = passes.egress_emitted;
        } else if passes.reextracted {
            // (The bytes of a header's first extraction are in no key.)
            return false;
        } else {
            passes.next_bound = passes.ingress_parsed;
        }
        for &s in slots {
            let Some(w) = self.pipeline.phv.slots.get(s).map(|x| x.width) else {
                continue;
            };
            let whole = koi_ir::Bits::ones(w);
            self.record(|r| r.influence(s, &whole));
            match self.layout.mask_for(s, &whole, &mut self.mask) {
                Coverage::Covered => {}
                Coverage::StateDependent if !self.state_seen => {}
                _ => return false,
            }
        }
        true
    }

    pub(crate) fn diverge(&mut self) {
        self.mode = Mode::Evaluating;
        self.stats.diverged += 1;
    }

    /// The hash key pieces `slot` holds (none if it holds none).
    fn pieces_of(&self, slot: SlotId) -> impl Iterator<Item = HashCopy> + '_ {
        self.copies
            .iter()
            .filter(move |(s, _)| *s == slot)
            .map(|(_, c)| *c)
    }

    /// Follows statement `s` (about to run) for the slots holding hash key bits: a hash
    /// key's statement in the first pass makes its result one; a copy, slice,
    /// zero-extending cast or concatenation of such values assigned to a whole slot makes
    /// that slot one; any other
    /// write ends what the written slots held (a statement that writes other than through
    /// places, such as `extract` or an extern's arguments, ends all of them).
    fn follow_copies(&mut self, s: &koi_ir::Stmt) {
        use koi_ir::{Builtin, Place, Stmt};
        let copy = match s {
            Stmt::Builtin(Builtin::Hash {
                dst: Place::Slot(d),
                ..
            }) => self
                .layout
                .hash_key_of(s)
                .filter(|_| self.parses == 1)
                .and_then(|k| {
                    let key = u16::try_from(k).ok()?;
                    let width = self.layout.hash_keys().get(k)?.width;
                    let c = HashCopy {
                        key,
                        lsb: 0,
                        width,
                        at: 0,
                    };
                    Some((*d, Some(vec![c])))
                })
                .unwrap_or((*d, None)),
            Stmt::Assign {
                dst: Place::Slot(d),
                value,
            } => {
                let w = self.pipeline.phv.slots.get(*d).map_or(0, |x| x.width);
                let pieces = self
                    .pieces_in(value)
                    .filter(|_| w <= COPY_MAX_BITS)
                    .map(|(p, _)| window(&p, 0, w))
                    .filter(|p| !p.is_empty());
                (*d, pieces)
            }
            Stmt::Assign {
                dst: Place::Slice { slot, .. },
                ..
            } => (*slot, None),
            Stmt::Builtin(b) => {
                let mut written = Vec::new();
                b.for_each_operand(&mut |o| {
                    if let koi_ir::stmt::Operand::Write(p) = o {
                        written.push(match p {
                            Place::Slot(x) | Place::Slice { slot: x, .. } => Some(*x),
                            Place::StackField { .. } => None,
                        });
                    }
                });
                for w in written {
                    match w {
                        Some(x) => self.copies.retain(|(s, _)| *s != x),
                        None => self.copies.clear(),
                    }
                }
                return;
            }
            _ => {
                self.copies.clear();
                return;
            }
        };
        self.copies.retain(|(s, _)| *s != copy.0);
        if let (d, Some(pieces)) = copy {
            self.copies.extend(pieces.into_iter().map(|c| (d, c)));
        }
    }

    /// The hash key pieces `e`'s value holds and its width, if it is a slot holding some, a
    /// slice of such a value, a zero-extending width cast of one, or a concatenation of two
    /// (every bit of the value a hash key's or zero).
    fn pieces_in(&self, e: &koi_ir::Expr) -> Option<(Vec<HashCopy>, u32)> {
        use koi_ir::{BinOp, Cast, Expr};
        let (pieces, width) = match e {
            Expr::Slot(s) => {
                let w = self.pipeline.phv.slots.get(*s)?.width;
                (self.pieces_of(*s).collect::<Vec<_>>(), w)
            }
            Expr::Slice { value, hi, lo } => {
                let (p, _) = self.pieces_in(value)?;
                let w = hi.checked_sub(*lo)? + 1;
                (window(&p, *lo, w), w)
            }
            Expr::Cast(
                Cast::Resize {
                    signed: false,
                    width,
                },
                a,
            ) => (window(&self.pieces_in(a)?.0, 0, *width), *width),
            Expr::Binary(BinOp::Concat, a, b) => {
                let (hi, wa) = self.pieces_in(a)?;
                let (mut lo, wb) = self.pieces_in(b)?;
                lo.extend(hi.into_iter().map(|c| HashCopy { at: c.at + wb, ..c }));
                (lo, wa.checked_add(wb)?)
            }
            _ => return None,
        };
        (!pieces.is_empty() && width <= COPY_MAX_BITS).then_some((pieces, width))
    }

    /// Whether statement `s` reads a slot holding state the architecture wrote (a
    /// timestamp): what it writes is state-derived, as a register read's value.
    pub(crate) fn reads_state_input(&self, s: &koi_ir::Stmt) -> bool {
        let mut found = false;
        s.for_each_expr(&mut |e| {
            e.for_each_slot(&mut |slot| found |= self.layout.state_input(slot));
        });
        found
    }

    /// Whether table `t` chooses actions at random (an action selector with `random`).
    pub(crate) fn random_selector(&self, t: TableId) -> bool {
        let imp = self.pipeline.tables.get(t).and_then(|x| x.implementation);
        matches!(
            imp.and_then(|e| self.pipeline.externs.get(e))
                .map(|e| &e.kind),
            Some(ExternKind::ActionSelector {
                algo: HashAlgo::Random,
                ..
            })
        )
    }

    /// The first parse ended: look the key up, then replay or record.
    pub(crate) fn first_parse(&mut self, phv: &[u8]) {
        self.layout.extract(phv, &mut self.key);
        self.layout.set_stop(&mut self.key, self.short_bits);
        self.layout.fill_hash_keys(&mut self.key, self.hash_buf);
        let found = if self.known_miss {
            None
        } else {
            self.cache
                .lookup(&self.key)
                .map(|(id, v, tier)| (id, Arc::clone(v), tier))
        };
        match found {
            // Never replayed: its decisions on state are evaluated, and the run becomes an arm.
            Some((id, flow, _)) if flow.guarded => {
                self.extend = Some(id);
                self.stats.misses += 1;
                self.mode = Mode::Recording;
                self.start_tracer(phv);
            }
            Some((_, flow, tier)) if flow.fits_len(self.packet.len()) => {
                match tier {
                    Tier::Microflow => self.stats.microflow_hits += 1,
                    Tier::Megaflow => self.stats.megaflow_hits += 1,
                }
                self.mode = Mode::Replaying { flow, at: 0 };
            }
            found => {
                if found.is_some() {
                    self.stats.too_short += 1;
                }
                self.stats.misses += 1;
                self.mode = Mode::Recording;
                self.start_tracer(phv);
            }
        }
    }

    /// On a miss: runs the fast parser to check it agrees with the interpreter, and starts
    /// recording what a tracer is to follow of the run to compile it ([`crate::memo`]).
    pub(crate) fn start_tracer(&mut self, phv: &[u8]) {
        let Some(fast) = self.fast else {
            return;
        };
        self.parsed.record = true;
        let ok = fast.parse(self.packet, self.port, self.parsed, self.fast_key);
        self.parsed.record = false;
        if !ok {
            return;
        }
        self.layout.fill_hash_keys(self.fast_key, self.hash_buf);
        if self.fast_key[..] != self.key[..] {
            self.stats.fast_parse_mismatch += 1;
            return;
        }
        self.phv0 = phv.to_vec();
        self.rec.start(self.parsed, &self.mask);
        self.recording_trace = true;
    }

    /// Runs `f` on the run's record for its tracer, if it is being compiled (which happens
    /// only in [`Mode::Recording`], which the run then keeps).
    #[inline]
    pub(crate) fn record(&mut self, f: impl FnOnce(&mut Recorder)) {
        if self.recording_trace {
            f(self.rec);
        }
    }

    /// The run ended: check a replay used its whole recording, install a recorded run with
    /// its compiled program.
    pub(crate) fn finish(self, outcome: &Outcome, digest: Option<&koi_state::DigestMessage>) {
        let complete = outcome.report.aborted.is_none();
        let DpObserver {
            mode,
            stats,
            cache,
            key,
            mut mask,
            cacheable,
            min_len_bits,
            max_len_bits,
            parses,
            mut tags,
            recording,
            packet,
            port,
            layout,
            phv0,
            scratch,
            reasons,
            programs,
            extend,
            guarded,
            mut memo,
            sites,
            rec,
            recording_trace,
            pipeline,
            setup,
            drop_port,
            fast,
            parsed,
            ..
        } = self;
        match mode {
            Mode::Replaying { flow, at } if at != flow.recording.len() => stats.diverged += 1,
            Mode::Recording if cacheable && complete => {
                let mut min_len = usize::try_from(min_len_bits.div_ceil(8)).unwrap_or(usize::MAX);
                // (Another pass parsed the packet again, or a recirculated copy of it;
                // PSA's egress parser reads only what its copy's headers hold (`Passes`),
                // and its other passes are not cached.)
                if parses > 1 && pipeline.arch != koi_ir::Architecture::Psa {
                    min_len = min_len.max(packet.len());
                }
                // (A packet of `n` bytes is too short for `b` bits when `8n < b`, that is,
                // when `n < ceil(b / 8)`.)
                let max_len = match max_len_bits {
                    u64::MAX => usize::MAX,
                    b => usize::try_from(b.div_ceil(8)).unwrap_or(usize::MAX),
                };
                tags.sort_unstable();
                tags.dedup();
                // The memo's program for the same record, else a tracer's (which may widen
                // the mask); either is checked on the packet.
                let reusable = !guarded && extend.is_none() && parses == 1;
                let found = memo
                    .as_deref()
                    .filter(|_| recording_trace && reusable)
                    .and_then(|m| m.find(rec, &phv0));
                let built = match found {
                    Some((p, reads)) => Ok((Built::Memo(p), reads)),
                    None => fast
                        .filter(|_| recording_trace)
                        .and_then(|f| Tracer::new(pipeline, setup, drop_port, f, parsed, &phv0))
                        .ok_or("parse not specialised")
                        .and_then(|mut t| {
                            let fixed = std::cell::RefCell::new(Vec::new());
                            let mut grown = rec.mask0.clone();
                            let widened = crate::memo::replay(
                                rec, sites, &mut t, pipeline, layout, &mut grown, &phv0, &fixed,
                            )?;
                            // (The run's influences again, and the inputs a traffic-manager
                            // event added.)
                            for (m, g) in mask.iter_mut().zip(&grown) {
                                *m |= g;
                            }
                            // What the memo keeps of a run that can be reused.
                            let keep = memo
                                .is_some()
                                .then(|| t.facts(rec.side.written.len()))
                                .flatten()
                                .filter(|_| reusable && !widened)
                                .map(|facts| (facts, fixed.into_inner()));
                            let k = Known {
                                layout,
                                mask: &mask,
                                phv0: &phv0,
                                fixed: None,
                            };
                            let (p, reads) = t.finish(&k)?;
                            Ok((Built::Traced(Box::new(p), keep), reads))
                        }),
                };
                let compiled = built.and_then(|(b, reads)| {
                    scratch.preset_reads(reads);
                    let p = match &b {
                        Built::Memo(p) => &**p,
                        Built::Traced(p, _) => p,
                    };
                    if !checks_out(p, packet, port, outcome, digest, scratch) {
                        stats.compile_mismatch += 1;
                        if let (Built::Memo(_), Some(m)) = (&b, memo.as_deref_mut()) {
                            m.clear();
                        }
                        return Err(MISMATCH);
                    }
                    Ok(match b {
                        Built::Memo(p) => {
                            stats.memo_hits += 1;
                            p
                        }
                        Built::Traced(p, keep) => {
                            let p = intern(programs, *p);
                            if let (Some(m), Some((facts, fixed))) = (memo, keep)
                                && !p.is_guarded()
                            {
                                m.insert(rec, Arc::clone(&p), facts, &fixed, &phv0);
                            }
                            p
                        }
                    })
                });
                // A run with state-dependent decisions is cached only as a guarded program.
                let program = match compiled {
                    Ok(p) => {
                        stats.compiled += 1;
                        Some(p)
                    }
                    Err(_) if guarded => {
                        stats.uncacheable += 1;
                        return;
                    }
                    Err(why) => {
                        if why != MISMATCH {
                            stats.not_compiled += 1;
                        }
                        *reasons.entry(why).or_default() += 1;
                        None
                    }
                };
                if let Some(id) = extend {
                    match program.and_then(|p| {
                        extended(cache, id, &key, &mask, min_len..max_len, p, &mut tags)
                    }) {
                        Some((mask, flow)) => {
                            let key = flow.key.clone();
                            match cache.install(&mask, &key, Arc::new(flow), &tags) {
                                Ok(_) => stats.installs += 1,
                                Err(_) => stats.uncacheable += 1,
                            }
                        }
                        None => stats.uncacheable += 1,
                    }
                    return;
                }
                let flow = Arc::new(Megaflow {
                    recording,
                    lens: min_len..max_len,
                    guarded: program.as_ref().is_some_and(|p| p.is_guarded()),
                    program,
                    key: key.clone(),
                    arms: Vec::new(),
                    last: Default::default(),
                });
                match cache.install(&mask, &key, flow, &tags) {
                    Ok(_) => stats.installs += 1,
                    Err(_) => stats.uncacheable += 1,
                }
            }
            Mode::Recording | Mode::Deciding => stats.uncacheable += 1,
            _ => {}
        }
    }
}

/// Guarded megaflow `id` with one more arm: `program`, made by a run whose own mask is `mask`
/// on a packet with key `key`, for packets of `lens` bytes (the arm applies to the key bits
/// that run depended on beyond the megaflow's mask). Returns the megaflow's mask and the new
/// megaflow (tried from the new arm on); `tags` gets the megaflow's. `None` if the megaflow
/// is gone or has [`MAX_ARMS`] programs.
pub(crate) fn extended(
    cache: &FlowCache<Arc<Megaflow>>,
    id: MegaflowId,
    key: &[u64],
    mask: &[u64],
    lens: Range<usize>,
    program: Arc<Program>,
    tags: &mut Vec<u32>,
) -> Option<(Vec<u64>, Megaflow)> {
    let c = cache.classifier();
    let flow = c.get(id)?;
    if flow.arms.len() + 1 >= MAX_ARMS {
        return None;
    }
    let old = c.mask(id)?.to_vec();
    let extra = (0..)
        .zip(mask.iter().zip(&old).zip(key))
        .filter(|(_, ((m, o), _))| *m & !*o != 0)
        .map(|(w, ((m, o), k))| (w, m & !o, k & m & !o))
        .collect();
    tags.extend(c.tags(id)?);
    tags.sort_unstable();
    tags.dedup();
    let mut arms = flow.arms.clone();
    arms.push(Arm {
        program,
        lens,
        extra,
    });
    let last = std::sync::atomic::AtomicU8::new(arms.len() as u8);
    let flow = Megaflow {
        recording: flow.recording.clone(),
        lens: flow.lens.clone(),
        program: flow.program.clone(),
        key: flow.key.clone(),
        guarded: true,
        arms,
        last,
    };
    Some((old, flow))
}

/// Why a run whose compiled program did not give the interpreter's output is replayed.
pub(crate) const MISMATCH: &str = "output differed from the interpreter";

/// A slow-path run's program before its check: the trace memo's, or a tracer's with what the
/// memo is to keep of the run (if it can be reused: what it read, and the PHV bits it folded).
pub(crate) enum Built {
    Memo(Arc<Program>),
    Traced(
        Box<Program>,
        Option<(crate::program::TraceFacts, Vec<(u32, u32)>)>,
    ),
}

/// The shared copy of program `p`. Programs no megaflow uses any more are dropped when the
/// set has grown to twice what was live at the last sweep.
// A program's only interior mutability is its JIT cell, which its hash and equality ignore.
#[allow(clippy::mutable_key_type)]
pub(crate) fn intern(set: &mut Programs, p: Program) -> Arc<Program> {
    if let Some(a) = set.get(&p) {
        return Arc::clone(a);
    }
    if set.len() >= 1024 && set.len().is_power_of_two() {
        set.retain(|a| Arc::strong_count(a) > 1);
    }
    let a = Arc::new(p);
    set.insert(Arc::clone(&a));
    a
}

/// Whether `p` run on the packet that made it gives the interpreter's outcome.
pub(crate) fn checks_out(
    p: &Program,
    packet: &[u8],
    port: u64,
    outcome: &Outcome,
    digest: Option<&koi_state::DigestMessage>,
    s: &mut Scratch,
) -> bool {
    let r = &outcome.report;
    if !r.logs.is_empty() || r.assert_failures != 0 || r.passes != 0 || r.digests > 1 {
        return false;
    }
    if !p.guards_hold(packet, port, s) {
        return false;
    }
    let sent = p.digests(packet, port, s);
    match (r.digests, digest) {
        (0, _) if sent.is_empty() => {}
        (1, Some(d)) if sent.len() == 1 && sent[0] == *d => {}
        _ => return false,
    }
    let (mut outputs, mut drops) = (Vec::new(), Vec::new());
    let mut buf = Vec::new();
    p.run(packet, port, None, 0, &mut buf, s, &mut |e| match e {
        Emitted::Packet(to, bytes) => outputs.push(Output {
            port: to,
            bytes: bytes.to_vec(),
        }),
        Emitted::Drop(why) => drops.push(why.clone()),
        Emitted::Digest => {}
    });
    outputs == outcome.outputs && drops == r.drops
}

impl Observer for DpObserver<'_> {
    const TRACKS_READS: bool = true;
    const WANTS_MASKS: bool = true;
    const REPLAYS: bool = true;
    const TRACES_EFFECTS: bool = true;

    fn stmt(&mut self, s: &koi_ir::Stmt, params: &[koi_ir::Bits]) {
        if let koi_ir::Stmt::Extract {
            header: koi_ir::HeaderRef::Header(h),
            ..
        } = s
            && self.parses == 0
            && self.tracking()
            && self.layout.reparses_arrival()
        {
            let p = &mut self.passes;
            p.reextracted |= p.extracted.contains(h);
            p.extracted.push(*h);
        }
        if !self.state_seen
            && (crate::flowkey::writes_state(self.pipeline, s) || self.reads_state_input(s))
        {
            self.state_seen = true;
        }
        if self.tracking() && (!self.copies.is_empty() || !self.layout.hash_keys().is_empty()) {
            self.follow_copies(s);
        }
        self.record(|r| r.stmt(s, params));
    }

    fn action(&mut self, _name: &str, args: &[koi_ir::Bits]) {
        self.record(|r| r.action(args));
    }

    fn action_end(&mut self) {
        self.record(|r| r.action_end());
    }

    fn arch_write(&mut self, slot: SlotId, value: &koi_ir::Bits) {
        self.copies.retain(|(s, _)| *s != slot);
        let (setup, p) = (self.setup, self.pipeline);
        self.record(|r| {
            let w = p.phv.slots.get(slot).map_or(value.width(), |s| s.width);
            r.arch_write(slot, value, setup.write_kind(slot), w);
        });
    }

    fn instance(&mut self, role: koi_ir::Role, _ev: &koi_interp::observer::InstanceEvent) {
        self.copies.clear();
        if role == koi_ir::Role::Egress && self.psa_tracking() {
            self.passes.bound = self.passes.queued.pop_front().unwrap_or(0);
        }
        self.record(|r| r.instance(role));
    }

    fn enqueued(&mut self, _port: u64) {
        if self.psa_tracking() {
            let psa = &mut self.passes;
            let bound = match psa.copying {
                None => psa.ingress_emitted,
                Some(koi_interp::CopyKind::IngressClone) => psa.ingress_parsed,
                Some(koi_interp::CopyKind::EgressClone) => psa.egress_emitted,
            };
            psa.queued.push_back(bound);
        }
        self.record(|r| r.enqueued());
    }

    fn copy_begin(&mut self, kind: koi_interp::CopyKind) {
        self.copies.clear();
        self.passes.copying = Some(kind);
        self.record(|r| r.copy_begin(kind));
    }

    fn metadata_reset(&mut self, fl: Option<koi_ir::FieldListId>) {
        self.copies.clear();
        self.record(|r| r.metadata_reset(fl));
    }

    fn copy_end(&mut self) {
        self.passes.copying = None;
        self.record(|r| r.copy_end());
    }

    fn packet_out(&mut self, o: &Output) {
        self.record(|r| r.packet_out(o.port));
    }

    fn parser_end(&mut self, error: Option<&str>) {
        if error.is_some() {
            self.record(|r| r.parser_failed());
        }
    }

    fn extern_call(&mut self, ev: &koi_interp::observer::ExternEvent<'_>) {
        self.record(|r| r.extern_result(ev.result));
    }

    /// C code not declared `@pure` is a black box (it may keep state, read the clock...):
    /// the run is not cached, so every packet that calls it takes the interpreter.
    fn native_call(&mut self, _name: &str, pure: bool) {
        if !pure {
            self.cacheable = false;
        }
    }

    fn influence(&mut self, d: koi_interp::Decision, slot: SlotId, mask: &koi_ir::Bits) {
        use koi_interp::Decision;
        if !self.tracking() {
            return;
        }
        // A decision on a timestamp (or a queue depth) itself: state the architecture wrote.
        if self.layout.state_input(slot) {
            self.state_seen = true;
        }
        // A copy of a hash key's bits: those bits of the hash key, not the fields hashed.
        if self.copies.iter().any(|(s, _)| *s == slot) {
            let m = mask.low_u128();
            let pieces: Vec<HashCopy> = self.pieces_of(slot).collect();
            for c in pieces {
                let bits = (m.checked_shr(c.at).unwrap_or(0) as u64) & low_bits(c.width);
                let bits = bits.checked_shl(c.lsb).unwrap_or(0);
                if let Some(k) = self.layout.hash_keys().get(usize::from(c.key)) {
                    k.mask(bits, &mut self.mask);
                    if bits != 0 && c.key < 64 {
                        *self.hash_used |= 1 << c.key;
                    }
                }
            }
            // (Not recorded for the tracer: hash key bits are no field's, so it folds
            // nothing from them; `crate::memo`.)
            return;
        }
        let compiling = self.recording_trace;
        // A branch or `switch` on a state-dependent value: the compiled program checks the
        // condition per packet (a guard), exactly, so the state-derived value puts nothing
        // in the mask (its other operands do, as usual).
        if compiling
            && matches!(d, Decision::Branch | Decision::Switch)
            && self.state_seen
            && self.layout.tainted(slot)
        {
            self.guarded = true;
            self.guard_pending = true;
            return;
        }
        // (The tracer sees the mask grow as it did during the run.)
        self.record(|r| r.influence(slot, mask));
        match self.layout.mask_for(slot, mask, &mut self.mask) {
            Coverage::Covered => {}
            // No value of this run comes from state yet: the slot holds data, which the mask
            // covers.
            Coverage::StateDependent if !self.state_seen => {}
            // A state-dependent table key is guarded too (the mask keeps the bits its value
            // may come from: the guard covers only keys computed from state). A header's
            // validity at `emit` is followed as the rest of the path, which the guards fix.
            Coverage::StateDependent
                if compiling && matches!(d, Decision::TableKey | Decision::Emit) =>
            {
                self.guarded = true;
                self.guard_pending |= d == Decision::TableKey;
            }
            _ => self.cacheable = false,
        }
    }

    fn jumped(&mut self, t: &koi_ir::Terminator, to: koi_ir::BlockId, params: &[koi_ir::Bits]) {
        if std::mem::take(&mut self.guard_pending) {
            self.record(|r| r.guard_jump(t, to, params));
        }
    }

    fn table(&mut self, ev: &koi_interp::observer::TableEvent<'_>) {
        if std::mem::take(&mut self.guard_pending) {
            self.record(|r| r.guard_table(ev.table, ev.keys));
        }
    }

    fn block(&mut self, role: koi_ir::Role, _name: &str) {
        self.egress_parse = role == koi_ir::Role::EgressParser;
        // (Before the first resubmission or recirculation, a parse after the first is an
        // ingress clone's, of the packet the first parse read, as it read it.)
        self.later_parse = matches!(role, koi_ir::Role::Parser | koi_ir::Role::IngressParser)
            && self.passes.later > 0;
    }

    fn deparsed(&mut self, role: koi_ir::Role, emitted_bits: u64) {
        match role {
            koi_ir::Role::IngressDeparser => self.passes.ingress_emitted = emitted_bits,
            koi_ir::Role::EgressDeparser | koi_ir::Role::Deparser => {
                self.passes.egress_emitted = emitted_bits
            }
            _ => {}
        }
    }

    fn packet_length_check(&mut self, needed_bits: u64, ok: bool) {
        if self.egress_parse {
            if self.tracking() {
                self.cacheable &= ok && needed_bits <= self.passes.bound;
            }
            return;
        }
        if self.tracking() {
            // (A later pass reads what its packet holds: `Passes`.)
            self.cacheable &= ok && (!self.later_parse || needed_bits <= self.passes.next_bound);
            self.min_len_bits = self.min_len_bits.max(needed_bits);
        }
    }

    fn packet_too_short(&mut self, needed_bits: u64) {
        if self.egress_parse {
            self.cacheable &= !self.tracking();
            return;
        }
        if self.parses == 0 {
            self.short_bits = needed_bits;
        }
        if self.tracking() {
            // (A later pass's packet holds less than its parse needs: past what it holds.)
            self.cacheable &= !self.later_parse;
            self.max_len_bits = self.max_len_bits.min(needed_bits);
        }
    }

    fn parsed(&mut self, phv: &[u8]) {
        self.parses += 1;
        if self.parses == 1 {
            // (Every length check of the first parse so far was its own: `min_len_bits`.)
            self.passes.ingress_parsed = self.min_len_bits;
        }
        // A second pass (resubmitted, recirculated) parses another packet: its hashes are
        // not the key's.
        self.copies.clear();
        if self.parses == 1 {
            self.first_parse(phv);
        }
    }

    fn decided(&mut self, step: &Step) {
        if !matches!(self.mode, Mode::Recording) {
            return;
        }
        // A state-dependent decision nothing guarded.
        if std::mem::take(&mut self.guard_pending) {
            self.cacheable = false;
        }
        if let Step::Table { table, hit, .. } = step {
            self.tags.push(table.index());
            self.tags.push(entry_tag(*table, *hit));
            if self.random_selector(*table) {
                self.cacheable = false;
            }
            let (t, h) = (*table, *hit);
            self.record(|r| r.table(t, h));
        }
        self.recording.push(Rec::Step(step.clone()));
    }

    fn replay(&mut self) -> Replay {
        let Mode::Replaying { flow, at } = &mut self.mode else {
            return Replay::Evaluate;
        };
        match flow.recording.get(*at) {
            Some(Rec::Step(s)) => {
                *at += 1;
                Replay::Use(s.clone())
            }
            _ => {
                self.diverge();
                Replay::Evaluate
            }
        }
    }

    fn replay_diverged(&mut self) {
        self.diverge();
    }

    fn tm(&mut self, ev: &TmEvent) {
        // A resubmission or recirculation is cached where the flow-key analysis models the
        // next parse (`Passes`).
        if self.tracking() {
            match ev {
                TmEvent::Resubmit => self.cacheable &= self.next_pass(false),
                TmEvent::Recirculate => self.cacheable &= self.next_pass(true),
                _ => {}
            }
        }
        // PSA clones whose egress parse the flow-key analysis does not model (`Passes`), or
        // ingress clones of a packet whose parse extracted a header twice (the bytes of its
        // first extraction then held by no key), are not cached; other clones are.
        if self.psa_tracking() {
            let modelled = |egress| self.layout.psa_clone_modelled(egress);
            let cached = match (ev, self.passes.copying) {
                (TmEvent::Clone { .. }, Some(koi_interp::CopyKind::IngressClone)) => {
                    modelled(false) && !self.passes.reextracted
                }
                (TmEvent::Clone { .. }, Some(koi_interp::CopyKind::EgressClone)) => modelled(true),
                (TmEvent::Clone { .. }, None) => false,
                _ => true,
            };
            self.cacheable &= cached;
        }
        // (The tracer fed the record adds the event's inputs to the mask first.)
        self.record(|r| r.tm(ev));
        match &mut self.mode {
            Mode::Recording => self.recording.push(Rec::Tm(TmKind::of(ev))),
            Mode::Replaying { flow, at } => match flow.recording.get(*at) {
                Some(Rec::Tm(k)) if *k == TmKind::of(ev) => *at += 1,
                _ => self.diverge(),
            },
            Mode::Deciding | Mode::Evaluating => {}
        }
    }
}

/// The pieces of bits `lo..lo + width` of a value holding `pieces`, as a value of its own
/// (bit `lo` its bit 0).
fn window(pieces: &[HashCopy], lo: u32, width: u32) -> Vec<HashCopy> {
    let hi = lo.saturating_add(width);
    pieces
        .iter()
        .filter_map(|c| {
            let (s0, s1) = (c.at.max(lo), (c.at + c.width).min(hi));
            (s0 < s1).then(|| HashCopy {
                key: c.key,
                lsb: c.lsb + (s0 - c.at),
                width: s1 - s0,
                at: s0 - lo,
            })
        })
        .collect()
}

/// The low `n` bits set (`n >= 64`: all).
fn low_bits(n: u32) -> u64 {
    match n {
        0 => 0,
        n if n >= 64 => u64::MAX,
        n => (1 << n) - 1,
    }
}
