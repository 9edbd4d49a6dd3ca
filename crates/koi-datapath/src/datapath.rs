//! The cached datapath: the fast path (specialised parser, microflow and megaflow caches,
//! compiled action programs), the slow path with wildcard tracking, replayed megaflows for runs
//! the compiler does not cover, invalidation on table writes, and the bounds.
//!
//! # How a packet goes through
//!
//! **Fast path** ([`Datapath::process_with`], [`Datapath::process`]): the program's
//! specialised parser ([`crate::fastparse`]) computes the flow key straight from the packet
//! bytes, usually through a parse-path template (a few `u64` compares and copies); the key is
//! looked up in the microflow tier, then the megaflow classifier; a hit whose megaflow has a
//! compiled action program ([`crate::program`]) runs it: table-entry hits and counters, the
//! output built from the input bytes with the changed fields written, the verdict. Nothing is
//! allocated and the interpreter is not involved.
//!
//! **Interpreter path**, for everything else: the packet is run by koi's interpreter with an
//! observer (`DpObserver`) that switches mode when the packet's first parse ends
//! (`Observer::parsed`):
//!
//! - the PHV's flow key is extracted ([`FlowKeyLayout::extract`]) and looked up in the
//!   [`FlowCache`] (microflow tier, then megaflow classifier);
//! - **hit** (a megaflow without a program, or a packet the fast parser does not follow): the
//!   rest of the run **replays** the megaflow's recorded decisions: every branch, `switch`,
//!   parser `select` and table application takes its recorded outcome (table entry and action
//!   call), so no condition is evaluated and no table is looked up, while every other
//!   statement (assignments, header operations, extern calls with their state, direct counters
//!   of the recorded entry, the traffic manager and the deparser) executes with the
//!   interpreter's own code. Outputs and state changes are therefore the interpreter's by
//!   construction, given that the decisions are the same, which the megaflow's mask
//!   guarantees (the soundness claim of [`crate`]);
//! - **miss**: the slow path. The run is evaluated normally and **recorded**: each
//!   decision's outcome (`Observer::decided`) and each traffic-manager event, while every
//!   influence report (`Observer::influence`) is mapped to key bits by
//!   [`FlowKeyLayout::mask_for`] and accumulated into the megaflow mask, from the first parse
//!   on; the run's effects are recorded for a [`crate::program::Tracer`], which follows
//!   them symbolically after the run to compile it, unless the **trace memo** holds an
//!   earlier run with the same record, whose program it then is ([`crate::memo`]).
//!   The run is installed as a megaflow (mask, key) → recording and program (when the
//!   compiler covers the run and the program reproduces the interpreter's output on this
//!   packet), tagged with the tables it applied, unless it is **uncacheable**: an influence
//!   that is not [`Coverage::Covered`] (outside the key, or state-dependent other than
//!   below), a failed packet-length check, a table with a `random` action selector, an
//!   aborted run, or no first parse. Identical programs are shared by all their megaflows.
//!
//! **Decisions on state.** A branch, `switch` or table key that may depend on state (a
//! register value, a meter colour, `random`, a checksum over the payload:
//! [`Coverage::StateDependent`]) does not make the run uncacheable when it is compiled: the
//! tracer gives the program a **guard** per such decision (its condition's expression and the
//! way the run took; for a table, each key computed from state and its value), and the
//! branch's state-derived operands put nothing in the mask. Such a megaflow is **guarded**:
//! cached only with its program, never replayed. A hit runs its programs in turn, the one that
//! applied last first, until one's guards hold ([`Program::run`] undoes a failing program's
//! register writes, meter executions and draws); a packet that fits none takes the slow path
//! (rate-limited as a miss), whose run is added to the megaflow as one more **arm** (at most
//! [`MAX_ARMS`] programs), valid only for the key bits that run depended on beyond the
//! megaflow's mask. Until the first state-dependent decision every packet of the megaflow
//! takes the same way (the mask fixes it); after it, the guards fix the way, and the arm's
//! extra bits the rest, so each arm is exact for the packets it applies to.
//!
//! The recording also holds the traffic manager's events (unicast, multicast and clone copy
//! counts, resubmission, recirculation, drops, digests), which the traffic manager still
//! computes on replay; a replay whose events or decisions do not fit the recording (say a
//! multicast group whose membership changed) **diverges**: from that point the run is simply
//! evaluated, which is always correct, and is counted in [`DatapathStats::diverged`].
//!
//! **Packet length.** A megaflow is valid only for packets at least as long as the longest
//! successful length check of the recorded run (extracts, lookaheads, the parser's state
//! budget, uBPF's truncation fit); for runs with more than one parser pass (resubmission,
//! recirculation) the recorded packet's own length, since later passes' checks are relative
//! to the re-parsed bytes.
//!
//! **Consistency.** [`Datapath::on_table_write`] removes every megaflow that applied the
//! table, before the next packet; [`Datapath::invalidate_all`] flushes for other
//! control-plane changes that decisions read (parser value sets, action profiles).
//!
//! **Bounds.** The megaflow classifier holds at most [`DatapathConfig::max_megaflows`]
//! (least recently hit evicted), the microflow tier a fixed array; with
//! [`DatapathConfig::upcall_rate`] a token bucket admits at most that many slow-path runs per
//! second and drops the other misses ([`PathTaken::Limited`]), so a flood of new flows costs a
//! parse and a lookup per packet and cannot starve the cached flows. The packets of a guarded
//! megaflow none of whose programs applied count as misses too.
//!
//! **Packets too short for the parser** (runts, v1model's `PacketTooShort`) are cached like
//! others: the run's megaflow holds only for packets shorter than its parse needed (a longer
//! one would have parsed on), and the key holds where the parse stopped
//! ([`FlowKeyLayout::set_stop`], matched by every megaflow), so that a runt and a long
//! packet with the same headers never share a megaflow; parse-path templates are bounded
//! the same way. A runt the fast parser gives no key is a slow-path run, rate-limited as a
//! miss.
//!
//! # Where the parts are
//!
//! This file holds the datapath and a packet's way through it; `config` its configuration,
//! `stats` its counters and reports, `inspect` what the control plane reads of it and the
//! invalidations table writes call.

use crate::fastparse::{FastParser, Parsed, Templates};
use crate::flowkey::FlowKeyLayout;
use crate::memo::{Recorder, Sites, TraceMemo};
use crate::program::{Emitted, Jit, JitEvent, Program, Scratch, TracerSetup};
use crate::stages::stages;
pub use koi_cache::Tier;
use koi_cache::{ClassifierConfig, FlowCache, MegaflowId, MicroflowConfig};
use koi_interp::{DropReason, InterpError, Interpreter, Options, Outcome, Output, Step, TmEvent};
use koi_ir::{Pipeline, TableId, entity::EntityId};
use koi_state::{Clock, State};
use std::collections::{BTreeMap, HashSet};
use std::ops::Range;
use std::sync::Arc;

use crate::observe::{DpObserver, Mode};

mod config;
mod inspect;
mod stats;
pub use config::*;
pub use stats::*;

/// What [`Datapath::process_batch_deferring`] asks its caller, who keeps the packets it hands
/// back.
pub trait Deferral {
    /// Whether a packet whose flow key hashes to `hash` must be handed back too, because a
    /// packet of its flow was handed back before it (and it must not overtake that one).
    fn waits(&self, hash: u64) -> bool;
    /// Whether a packet that needs the slow path is handed back rather than run now.
    fn defers_miss(&self) -> bool;
}

/// What [`Datapath::process_batch`] hands each output packet: the packet's index in the
/// batch, the port and the bytes.
pub trait BatchSink: FnMut(usize, u64, &[u8]) {}

impl<T: FnMut(usize, u64, &[u8]) + ?Sized> BatchSink for T {}

/// What [`Datapath::process_batch`] hands each packet's summary (after its outputs): the
/// packet's index in the batch and its summary or error.
pub trait BatchDone: FnMut(usize, Result<&Summary, &InterpError>) {}

impl<T: FnMut(usize, Result<&Summary, &InterpError>) + ?Sized> BatchDone for T {}

/// What a compiled program emits, as the caller wants it: packets to `sink`, drops into
/// `drops` (digests are in the state already).
pub(crate) fn emitter<'a>(
    drops: &'a mut Vec<DropReason>,
    mut sink: impl FnMut(u64, &[u8]) + 'a,
) -> impl FnMut(Emitted<'_>) + 'a {
    move |e| match e {
        Emitted::Packet(to, bytes) => sink(to, bytes),
        Emitted::Drop(why) => drops.push(why.clone()),
        Emitted::Digest => {}
    }
}

/// A traffic-manager event as recorded (ports left out: they are computed on replay).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum TmKind {
    Unicast,
    Multicast(usize),
    Clone(usize),
    Resubmit,
    Recirculate,
    Drop(DropReason),
    Digest,
}

impl TmKind {
    pub(crate) fn of(ev: &TmEvent) -> TmKind {
        match ev {
            TmEvent::Unicast { .. } => TmKind::Unicast,
            TmEvent::Multicast { copies, .. } => TmKind::Multicast(*copies),
            TmEvent::Clone { copies, .. } => TmKind::Clone(*copies),
            TmEvent::Resubmit => TmKind::Resubmit,
            TmEvent::Recirculate => TmKind::Recirculate,
            TmEvent::Drop(r) => TmKind::Drop(r.clone()),
            TmEvent::Digest { .. } => TmKind::Digest,
        }
    }
}

/// One recorded event.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Rec {
    Step(Step),
    Tm(TmKind),
}

/// What a megaflow stores: the recorded run after the first parse, and the lengths of the
/// packets it is valid for.
#[derive(Debug)]
pub struct Megaflow {
    pub(crate) recording: Vec<Rec>,
    /// The lengths (bytes) of the packets it is valid for: at least what its run's parse
    /// read; below what it needed when its run stopped on a packet too short for its parser
    /// (`PacketTooShort`), which a longer packet of the same parse would have passed (else
    /// no bound, `usize::MAX`).
    pub(crate) lens: Range<usize>,
    pub(crate) program: Option<Arc<Program>>,
    /// The key of the packet that made it (masked when shown).
    pub(crate) key: Vec<u64>,
    /// Whether `program` is guarded ([`Program::is_guarded`]): the megaflow is then never
    /// replayed, and a packet whose guards fail tries `arms`, then takes the slow path,
    /// which adds the arm it compiles.
    pub(crate) guarded: bool,
    /// Programs for the other ways of the state-dependent decisions, tried in order.
    pub(crate) arms: Vec<Arm>,
    /// The program (0: `program`, `i`: arm `i - 1`) that applied last: tried first, as
    /// state-dependent decisions tend to go the same way for a while (a meter's colour, a
    /// register past a threshold).
    pub(crate) last: std::sync::atomic::AtomicU8,
}

/// Another compiled program of a guarded megaflow: the run of a packet of the megaflow whose
/// state-dependent decisions went another way.
#[derive(Clone, Debug)]
pub(crate) struct Arm {
    pub(crate) program: Arc<Program>,
    /// As [`Megaflow`]'s, for this arm's run.
    pub(crate) lens: Range<usize>,
    /// The key bits the arm's run depended on beyond the megaflow's mask: (word, mask,
    /// value) for each word with some.
    pub(crate) extra: Vec<(usize, u64, u64)>,
}

impl Arm {
    /// Whether the arm applies to a packet with key `key` and `len` bytes.
    fn fits(&self, key: &[u64], len: usize) -> bool {
        self.lens.contains(&len)
            && self
                .extra
                .iter()
                .all(|&(w, m, v)| key.get(w).is_some_and(|k| k & m == v))
    }
}

/// Most programs a guarded megaflow holds (its first and its arms); the runs of packets that
/// fit none of them are not cached.
pub const MAX_ARMS: usize = 8;

impl Megaflow {
    /// Recorded decisions and traffic-manager events.
    pub fn len(&self) -> usize {
        self.recording.len()
    }

    /// Whether nothing was recorded (a program without decisions after its parser).
    pub fn is_empty(&self) -> bool {
        self.recording.is_empty()
    }

    /// The lengths (bytes) of the packets the megaflow is valid for.
    pub fn lens(&self) -> Range<usize> {
        self.lens.clone()
    }

    /// Whether a packet of `len` bytes may be of the megaflow.
    #[inline]
    pub fn fits_len(&self, len: usize) -> bool {
        self.lens.contains(&len)
    }

    /// Whether hits run a compiled action program instead of a replay.
    pub fn is_compiled(&self) -> bool {
        self.program.is_some()
    }

    /// The compiled action program, if the run could be compiled.
    pub fn program(&self) -> Option<&Program> {
        self.program.as_deref()
    }

    /// The programs of a guarded megaflow (the first one's and its other arms'), in the
    /// order they are tried.
    pub fn programs(&self) -> impl Iterator<Item = &Program> {
        self.program
            .as_deref()
            .into_iter()
            .chain(self.arms.iter().map(|a| &*a.program))
    }
}

/// How one packet went through the datapath.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PathTaken {
    /// A cache hit executed by the megaflow's compiled action program.
    Compiled(Tier),
    /// A cache hit replayed by the interpreter (the megaflow has no compiled program).
    Replayed(Tier),
    /// A miss: the slow path.
    Slow,
    /// A miss dropped by the slow-path rate limit.
    Limited,
    /// Not processed: handed back by [`Datapath::process_batch_deferring`] for the caller to
    /// run later with [`Datapath::process_with`] (nothing was sent and the state is as it
    /// was). With the flow key's hash, if the fast parser gave the packet a key.
    Deferred(Option<u64>),
}

/// What [`Datapath::process_with`] reports for one packet (the outputs went to the sink).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Summary {
    pub path: PathTaken,
    /// Packet instances dropped, with their reasons.
    pub drops: Vec<DropReason>,
    /// Why processing stopped early, if it did.
    pub aborted: Option<String>,
}

impl Summary {
    /// A packet a compiled program executed (a cache hit), with its drops.
    #[inline]
    fn compiled(tier: Tier, drops: Vec<DropReason>) -> Summary {
        Summary {
            path: PathTaken::Compiled(tier),
            drops,
            aborted: None,
        }
    }
}

/// The interpreter behind a megaflow cache.
#[derive(Debug)]
pub struct Datapath<'p> {
    pipeline: &'p Pipeline,
    interp: Interpreter<'p>,
    layout: FlowKeyLayout,
    cache: FlowCache<Arc<Megaflow>>,
    stats: DatapathStats,
    config: DatapathConfig,
    fast: Option<FastParser>,
    parsed: Parsed,
    fast_key: Vec<u64>,
    /// The keys of a batch ([`Datapath::process_batch`]).
    batch_keys: Vec<u64>,
    scratch: Scratch,
    out: Vec<u8>,
    /// Slow-path tokens (scaled by 10^9) and when they were last refilled.
    tokens: u128,
    refilled_ns: u64,
    reasons: BTreeMap<&'static str, u64>,
    /// Compiled programs, shared by every megaflow with the same one: flows that differ only
    /// in fields the program copies share a program, which stays in the CPU caches.
    programs: Programs,
    templates: Templates,
    jit: Jit,
    tracer_setup: Arc<TracerSetup>,
    memo: TraceMemo,
    /// The pipeline's statements by address, for the tracer fed after a run.
    sites: Sites<'p>,
    /// A slow-path run's record for its tracer.
    rec: Recorder,
    /// The flow cache's counters at the last [`Datapath::reset_stats`].
    cache_base: (u64, u64),
    /// The data of a hash key being computed ([`FlowKeyLayout::hash_keys`]), and the
    /// custom CRCs' parameters as the state had them at the last batch.
    hash_buf: crate::flowkey::HashBuf,
    /// Whether the program has custom CRCs (whose parameters [`Datapath::sync_hash`] copies).
    hash_custom: bool,
    /// The hash keys some slow-path run has masked bits of (bit `i`: hash key `i`): the
    /// only ones the fast path computes. Megaflows are installed only by this datapath's
    /// slow path, which sets a hash key's bit before a megaflow can match it.
    hash_used: u64,
}

/// The set of shared programs (hashed with foldhash: programs are compared whole).
pub(crate) type Programs = HashSet<Arc<Program>, foldhash::fast::RandomState>;

/// What the fast path did with a packet.
enum Fast {
    /// Executed by a compiled program (its outputs and drops went to the caller's `emit`).
    Done(Tier),
    /// Not handled: use the interpreter path (a miss, a megaflow without a program, a
    /// packet the fast parser does not follow). `extend`: the guarded megaflow none of whose
    /// programs applied to the packet (the miss's run becomes one more of its arms).
    Interp {
        miss: bool,
        extend: Option<MegaflowId>,
    },
}

impl<'p> Datapath<'p> {
    /// A datapath for `pipeline` with default interpreter options and configuration.
    pub fn new(pipeline: &'p Pipeline) -> Result<Datapath<'p>, InterpError> {
        Datapath::with_config(pipeline, Options::default(), DatapathConfig::default())
    }

    /// A datapath whose interpreter uses `options`.
    pub fn with_options(
        pipeline: &'p Pipeline,
        options: Options,
    ) -> Result<Datapath<'p>, InterpError> {
        Datapath::with_config(pipeline, options, DatapathConfig::default())
    }

    /// A datapath with interpreter `options` and cache `config`.
    pub fn with_config(
        pipeline: &'p Pipeline,
        options: Options,
        config: DatapathConfig,
    ) -> Result<Datapath<'p>, InterpError> {
        let interp = Interpreter::with_options(pipeline, options)?;
        let layout = FlowKeyLayout::new(pipeline);
        let words = layout.key_words().max(1);
        let mut cfg = ClassifierConfig::new(words);
        cfg.max_megaflows = config.max_megaflows.max(1);
        cfg.seed = config.seed;
        if layout.key_words() > 0 {
            cfg.stages = stages(&layout);
        }
        let mut mf = MicroflowConfig::new(words);
        mf.entries = config.microflow_entries.max(2).next_power_of_two();
        if let Some(s) = config.seed {
            mf.seed = s;
        }
        let mf = config.microflow.then_some(mf);
        let cache = FlowCache::new(&cfg, mf.as_ref())
            .or_else(|_| {
                let mut plain = ClassifierConfig::new(words);
                plain.max_megaflows = cfg.max_megaflows;
                FlowCache::new(&plain, mf.as_ref())
            })
            .map_err(|_| InterpError::Unsupported("flow cache configuration"))?
            .with_signatures(config.signature_entries);
        // (The hash keys are computed after the lookup hash, which the native parse-path
        // templates give with the key.)
        let mut cache = cache;
        cache.exclude_from_hash(layout.hash_key_words());
        let fast = FastParser::new(pipeline, &layout, interp.options().parser_state_margin);
        let parsed = fast
            .as_ref()
            .map(FastParser::new_parsed)
            .unwrap_or_default();
        let tokens = u128::from(config.upcall_burst) * 1_000_000_000;
        let jit = Jit::new(
            config.jit_after,
            config.jit_limit,
            config.jit_rate,
            config.jit_burst,
        );
        let hash_seed = cache.hash_seed();
        let hash_custom = !pipeline.calculations.is_empty();
        Ok(Datapath {
            pipeline,
            interp,
            fast_key: vec![0; words],
            batch_keys: vec![0; words * BATCH],
            layout,
            cache,
            stats: DatapathStats::default(),
            config,
            fast,
            parsed,
            scratch: Scratch::default(),
            out: Vec::with_capacity(2048),
            tokens,
            refilled_ns: 0,
            reasons: BTreeMap::new(),
            programs: Programs::default(),
            templates: Templates::new(hash_seed),
            jit,
            tracer_setup: Arc::new(TracerSetup::new(pipeline)),
            memo: TraceMemo::default(),
            sites: Sites::new(pipeline),
            rec: Recorder::default(),
            cache_base: (0, 0),
            hash_buf: crate::flowkey::HashBuf::default(),
            hash_custom,
            hash_used: 0,
        })
    }

    /// Processes one packet received on `port`, handing each output packet to `sink` (port,
    /// bytes): the same outputs, in the same order, and state changes as
    /// [`Interpreter::process`]. A hit with a compiled program allocates nothing.
    pub fn process_with(
        &mut self,
        state: &mut State,
        packet: &[u8],
        port: u64,
        clock: &dyn Clock,
        sink: &mut dyn FnMut(u64, &[u8]),
    ) -> Result<Summary, InterpError> {
        let mut drops = Vec::new();
        let fast = self.fast_path(
            state,
            packet,
            port,
            clock,
            &mut emitter(&mut drops, &mut *sink),
        );
        let r = self.finish(fast, drops, state, packet, port, clock, sink);
        state.packet_done();
        r
    }

    /// Processes `packets`, all received on `port`, in order: for each packet, exactly what
    /// [`Datapath::process_with`] does, with the packet's index in `packets` given to `sink`
    /// with each of its outputs and to `done` with its summary (after its outputs; lent, so
    /// that a cache hit's summary is a few bytes written in place rather than a struct moved
    /// through the call).
    ///
    /// The difference is the order of the work: the flow keys of up to [`BATCH`] packets are
    /// computed first (the specialised parser reads only the packet), with the microflow set
    /// of each key prefetched ([`DatapathConfig::prefetch`]), then the packets are looked up
    /// and executed one by one, so that each sees the cache as the packets before it left it.
    /// The memory latency of one packet's key and lookup overlaps the work on the others, and
    /// the per-packet overhead is paid once per batch. The clock is read once per batch.
    pub fn process_batch<P: AsRef<[u8]>>(
        &mut self,
        state: &mut State,
        packets: &[P],
        port: u64,
        clock: &dyn Clock,
        sink: &mut dyn FnMut(usize, u64, &[u8]),
        done: &mut dyn FnMut(usize, Result<&Summary, &InterpError>),
    ) {
        let prefetch = self.config.prefetch;
        self.process_batch_prefetching(state, packets, port, clock, prefetch, sink, done);
    }

    /// [`Datapath::process_batch`] with `prefetch` instead of [`DatapathConfig::prefetch`]:
    /// a function the compiler can inline into the batch loop (`koi_ports::prefetch` is one
    /// instruction), where the configured one is called through a pointer; `sink` and `done`
    /// are called directly too (not through `dyn`), so that a hit's calls can be inlined.
    #[allow(clippy::too_many_arguments)]
    pub fn process_batch_prefetching<P: AsRef<[u8]>, F: Fn(*const u8) + Copy>(
        &mut self,
        state: &mut State,
        packets: &[P],
        port: u64,
        clock: &dyn Clock,
        prefetch: Option<F>,
        sink: &mut (impl BatchSink + ?Sized),
        done: &mut (impl BatchDone + ?Sized),
    ) {
        self.batches(state, packets, port, clock, prefetch, None, sink, done);
    }

    /// [`Datapath::process_batch_prefetching`] that may hand packets back unprocessed, to
    /// `done` as [`PathTaken::Deferred`], for the caller to run later with
    /// [`Datapath::process_with`]: a packet that would take the slow path (a miss, a guarded
    /// megaflow none of whose programs applies, a packet the fast parser gives no key) when
    /// [`Deferral::defers_miss`] says so, and a packet whose flow key hash
    /// [`Deferral::waits`] names (its flow has a packet handed back before it, which it must
    /// not overtake). So a hit need not wait behind a miss. A hit of a megaflow without a
    /// compiled program (a replay) is a hit and runs. Without a fast parser every packet
    /// runs, as with `process_batch_prefetching`.
    #[allow(clippy::too_many_arguments)]
    pub fn process_batch_deferring<P: AsRef<[u8]>, F: Fn(*const u8) + Copy>(
        &mut self,
        state: &mut State,
        packets: &[P],
        port: u64,
        clock: &dyn Clock,
        prefetch: Option<F>,
        deferral: &dyn Deferral,
        sink: &mut (impl BatchSink + ?Sized),
        done: &mut (impl BatchDone + ?Sized),
    ) {
        self.batches(
            state,
            packets,
            port,
            clock,
            prefetch,
            Some(deferral),
            sink,
            done,
        );
    }

    #[allow(clippy::too_many_arguments)]
    fn batches<P: AsRef<[u8]>, F: Fn(*const u8) + Copy>(
        &mut self,
        state: &mut State,
        packets: &[P],
        port: u64,
        clock: &dyn Clock,
        prefetch: Option<F>,
        defer: Option<&dyn Deferral>,
        sink: &mut (impl BatchSink + ?Sized),
        done: &mut (impl BatchDone + ?Sized),
    ) {
        // Two instances: without profiling, no clock reads and no cycle sums at all.
        let profile = self.config.profile.is_some();
        for (c, chunk) in packets.chunks(BATCH).enumerate() {
            let base = c * BATCH;
            let at = (base, port);
            if profile {
                self.batch::<_, _, true>(state, chunk, at, clock, prefetch, defer, sink, done);
            } else {
                self.batch::<_, _, false>(state, chunk, at, clock, prefetch, defer, sink, done);
            }
        }
    }

    /// [`Datapath::process_batch`] for at most [`BATCH`] packets received on `port` whose
    /// indices start at `base` (`at`: both); `PROF`: with [`DatapathConfig::profile`];
    /// `defer`: as [`Datapath::process_batch_deferring`]'s `deferral`, if deferring.
    #[allow(clippy::too_many_arguments)]
    fn batch<P: AsRef<[u8]>, F: Fn(*const u8) + Copy, const PROF: bool>(
        &mut self,
        state: &mut State,
        packets: &[P],
        (base, port): (usize, u64),
        clock: &dyn Clock,
        prefetch: Option<F>,
        defer: Option<&dyn Deferral>,
        sink: &mut (impl BatchSink + ?Sized),
        done: &mut (impl BatchDone + ?Sized),
    ) {
        if self.fast.is_none() {
            for (i, p) in packets.iter().enumerate() {
                let r = self.process_with(state, p.as_ref(), port, clock, &mut |to, b| {
                    sink(base + i, to, b)
                });
                done(base + i, r.as_ref());
            }
            return;
        }
        self.sync_hash(state);
        let prof = self.config.profile.filter(|_| PROF);
        let now = clock.now_ns();
        let words = self.fast_key.len();
        let mut keys = std::mem::take(&mut self.batch_keys);
        keys.resize(words * BATCH, 0);
        let mut hashes = [None; BATCH];
        // Packets too short for the parser without a key: slow-path runs (never cached),
        // rate-limited as misses.
        let mut runts = [false; BATCH];
        let t0 = prof.map_or(0, |f| f());
        if let Some(f) = prefetch {
            // The headers of every packet of the batch, so that their misses overlap.
            for p in packets {
                f(p.as_ref().as_ptr());
            }
        }
        for (((p, key), hash), runt) in packets
            .iter()
            .zip(keys.chunks_exact_mut(words))
            .zip(hashes.iter_mut())
            .zip(runts.iter_mut())
        {
            *hash = self.key_of(p.as_ref(), port, now, key);
            *runt = hash.is_none() && self.templates.short;
            if let (Some(h), Some(f)) = (*hash, prefetch) {
                self.cache.prefetch(h, f);
            }
        }
        self.stats.cycles.parse += prof.map_or(0, |f| f()).wrapping_sub(t0);
        // The hits' summary, rewritten in place for each.
        let mut hit = Summary::compiled(Tier::Microflow, Vec::new());
        for (i, (p, key)) in packets.iter().zip(keys.chunks_exact(words)).enumerate() {
            let packet = p.as_ref();
            if let (Some(d), Some(h)) = (defer, hashes[i])
                && d.waits(h)
            {
                self.defer(base + i, hashes[i], done);
                continue;
            }
            self.stats.packets += 1;
            hit.drops.clear();
            let fast = match hashes[i] {
                Some(h) => {
                    let mut emit = emitter(&mut hit.drops, |to, b| sink(base + i, to, b));
                    self.cached::<_, PROF>(state, packet, port, now, key, h, &mut emit)
                }
                None => Fast::Interp {
                    miss: runts[i],
                    extend: None,
                },
            };
            match fast {
                // The common case, without a call.
                Fast::Done(tier) => {
                    state.packet_done();
                    hit.path = PathTaken::Compiled(tier);
                    done(base + i, Ok(&hit));
                }
                // Slow-path work (a miss, or no key), when the caller defers it: handed back.
                Fast::Interp { miss, .. }
                    if (miss || hashes[i].is_none()) && defer.is_some_and(|d| d.defers_miss()) =>
                {
                    self.stats.packets -= 1;
                    self.defer(base + i, hashes[i], done);
                }
                _ => {
                    let drops = std::mem::take(&mut hit.drops);
                    let r = self.finish(fast, drops, state, packet, port, clock, &mut |to, b| {
                        sink(base + i, to, b)
                    });
                    state.packet_done();
                    done(base + i, r.as_ref());
                }
            }
        }
        self.batch_keys = keys;
    }

    /// Hands packet `i` back unprocessed ([`PathTaken::Deferred`]).
    #[cold]
    fn defer(&mut self, i: usize, hash: Option<u64>, done: &mut (impl BatchDone + ?Sized)) {
        self.stats.deferred += 1;
        let summary = Summary {
            path: PathTaken::Deferred(hash),
            drops: Vec::new(),
            aborted: None,
        };
        done(i, Ok(&summary));
    }

    /// The summary of a packet the fast path handled, or its run on the interpreter path.
    #[allow(clippy::too_many_arguments)]
    fn finish(
        &mut self,
        fast: Fast,
        drops: Vec<DropReason>,
        state: &mut State,
        packet: &[u8],
        port: u64,
        clock: &dyn Clock,
        sink: &mut dyn FnMut(u64, &[u8]),
    ) -> Result<Summary, InterpError> {
        match fast {
            Fast::Done(tier) => Ok(Summary::compiled(tier, drops)),
            Fast::Interp { miss, extend } => {
                if miss && !self.admit_upcall(clock) {
                    return Ok(Summary {
                        path: PathTaken::Limited,
                        drops: Vec::new(),
                        aborted: None,
                    });
                }
                let (outcome, path) = self.interp_path(state, packet, port, clock, miss, extend)?;
                for o in &outcome.outputs {
                    sink(o.port, &o.bytes);
                }
                Ok(Summary {
                    path,
                    drops: outcome.report.drops,
                    aborted: outcome.report.aborted,
                })
            }
        }
    }

    /// Processes one packet received on `port`: the same outputs, report and state changes
    /// as [`Interpreter::process`]. (No slow-path rate limit: every packet is processed.)
    pub fn process(
        &mut self,
        state: &mut State,
        packet: &[u8],
        port: u64,
        clock: &dyn Clock,
    ) -> Result<Outcome, InterpError> {
        let mut outcome = Outcome::default();
        let fast = self.fast_path(state, packet, port, clock, &mut |e| match e {
            Emitted::Packet(to, bytes) => outcome.outputs.push(Output {
                port: to,
                bytes: bytes.to_vec(),
            }),
            Emitted::Drop(why) => outcome.report.drops.push(why.clone()),
            Emitted::Digest => outcome.report.digests += 1,
        });
        match fast {
            Fast::Done(_) => Ok(outcome),
            Fast::Interp { miss, extend } => Ok(self
                .interp_path(state, packet, port, clock, miss, extend)?
                .0),
        }
    }

    /// Copies the custom CRCs' parameters for the hash keys and compiled programs, if the
    /// program has custom CRCs: the control plane changes them only between batches.
    #[inline]
    fn sync_hash(&mut self, state: &State) {
        if self.hash_custom {
            self.hash_buf.customs.sync(state);
            self.scratch.customs.sync(state);
        }
    }

    /// Takes a slow-path token; false if the rate limit is exhausted.
    fn admit_upcall(&mut self, clock: &dyn Clock) -> bool {
        let rate = self.config.upcall_rate;
        if rate == 0 {
            return true;
        }
        const SCALE: u128 = 1_000_000_000;
        let now = clock.now_ns();
        let elapsed = now.saturating_sub(self.refilled_ns);
        self.refilled_ns = now;
        let cap = u128::from(self.config.upcall_burst.max(1)) * SCALE;
        self.tokens = (self.tokens + u128::from(elapsed) * u128::from(rate)).min(cap);
        if self.tokens >= SCALE {
            self.tokens -= SCALE;
            true
        } else {
            self.stats.upcalls_limited += 1;
            false
        }
    }

    /// The fast path: specialised parse, cache lookup, compiled program.
    fn fast_path(
        &mut self,
        state: &mut State,
        packet: &[u8],
        port: u64,
        clock: &dyn Clock,
        emit: &mut dyn FnMut(Emitted<'_>),
    ) -> Fast {
        self.stats.packets += 1;
        self.sync_hash(state);
        if self.fast.is_none() {
            return Fast::Interp {
                miss: false,
                extend: None,
            };
        }
        let prof = self.config.profile;
        let t0 = prof.map_or(0, |f| f());
        let now = clock.now_ns();
        let mut key = std::mem::take(&mut self.fast_key);
        let hash = self.key_of(packet, port, now, &mut key);
        self.stats.cycles.parse += prof.map_or(0, |f| f()).wrapping_sub(t0);
        let fast = match hash {
            Some(h) => self.cached::<_, true>(state, packet, port, now, &key, h, emit),
            None => Fast::Interp {
                miss: self.templates.short,
                extend: None,
            },
        };
        self.fast_key = key;
        fast
    }

    /// The flow key of `packet` by the specialised parser, into `key`, and its hash; `None`
    /// if the parser does not follow the packet (or there is none).
    #[inline(always)]
    fn key_of(&mut self, packet: &[u8], port: u64, now: u64, key: &mut [u64]) -> Option<u64> {
        let fast = self.fast.as_ref()?;
        let mut hash = None;
        if !fast.key(
            packet,
            port,
            &mut self.templates,
            &mut self.jit,
            now,
            key,
            &mut hash,
        ) {
            return None;
        }
        // The lookup hash reads the hash keys' words as 0 (as the parser leaves them), so it
        // can be taken before they are computed from the fields.
        let hash = hash.unwrap_or_else(|| self.cache.hash(key));
        if !self.layout.hash_keys().is_empty() {
            self.layout
                .fill_used_hash_keys(key, &mut self.hash_buf, self.hash_used);
        }
        Some(hash)
    }

    /// The fast path after the key: cache lookup and compiled program.
    #[allow(clippy::too_many_arguments)]
    #[inline]
    fn cached<E: FnMut(Emitted<'_>) + ?Sized, const PROF: bool>(
        &mut self,
        state: &mut State,
        packet: &[u8],
        port: u64,
        now: u64,
        key: &[u64],
        hash: u64,
        emit: &mut E,
    ) -> Fast {
        let prof = self.config.profile.filter(|_| PROF);
        let t1 = prof.map_or(0, |f| f());
        let found = self.cache.lookup_hashed(key, hash);
        let t2 = prof.map_or(0, |f| f());
        let Some((id, flow, tier)) = found else {
            self.stats.cycles.megaflow += t2.wrapping_sub(t1);
            return Fast::Interp {
                miss: true,
                extend: None,
            };
        };
        match tier {
            Tier::Microflow => self.stats.cycles.microflow += t2.wrapping_sub(t1),
            Tier::Megaflow => self.stats.cycles.megaflow += t2.wrapping_sub(t1),
        }
        if flow.guarded {
            // (The megaflow stays borrowed from the cache: the hit uses the other fields.)
            let mut hit = GuardedHit {
                jit: &mut self.jit,
                stats: &mut self.stats,
                rng: self.interp.rng_mut(),
                out: &mut self.out,
                scratch: &mut self.scratch,
            };
            return hit.run(
                state, packet, port, now, key, id, flow, tier, emit, prof, t2,
            );
        }
        let Some(prog) = flow
            .program
            .as_ref()
            .filter(|_| flow.fits_len(packet.len()))
        else {
            return Fast::Interp {
                miss: false,
                extend: None,
            };
        };
        // As the interpreter does: the state learns the time of every packet.
        state.set_now_ns(now);
        // The common case first: native code that sends one packet (a program that has it
        // needs no compile). Else the program may be due for a compile, which this packet
        // then runs.
        let mut sent = prog.run_unicast(packet, port, &mut self.out);
        if sent.is_none() {
            let ev = self.jit.consider(prog, packet, port, now);
            self.stats.count_jit(ev);
            sent = prog.run_unicast(packet, port, &mut self.out);
        }
        if let Some(to) = sent {
            emit(Emitted::Packet(to, &self.out));
        } else {
            prog.run(
                packet,
                port,
                Some((state, self.interp.rng_mut())),
                now,
                &mut self.out,
                &mut self.scratch,
                &mut |e| emit(e),
            );
        }
        match tier {
            Tier::Microflow => self.stats.microflow_hits += 1,
            Tier::Megaflow => self.stats.megaflow_hits += 1,
        }
        self.stats.compiled_hits += 1;
        let t3 = prof.map_or(0, |f| f());
        self.stats.cycles.actions += t3.wrapping_sub(t2);
        Fast::Done(tier)
    }

    /// The interpreter path: replay of a megaflow without a program, or the slow path
    /// (`extend`: a guarded megaflow none of whose programs applied).
    fn interp_path(
        &mut self,
        state: &mut State,
        packet: &[u8],
        port: u64,
        clock: &dyn Clock,
        known_miss: bool,
        extend: Option<MegaflowId>,
    ) -> Result<(Outcome, PathTaken), InterpError> {
        let prof = self.config.profile;
        let t0 = prof.map_or(0, |f| f());
        let misses = self.stats.misses;
        let hits = (self.stats.microflow_hits, self.stats.megaflow_hits);
        let words = self.layout.key_words().max(1);
        let drop_port = u64::from(self.interp.options().drop_port);
        // Every megaflow matches where its parse stopped short (if it did).
        let mut mask = vec![0; words];
        self.layout.stop_mask(&mut mask);
        let mut obs = DpObserver {
            pipeline: self.pipeline,
            layout: &self.layout,
            cache: &mut self.cache,
            stats: &mut self.stats,
            packet,
            port,
            mode: Mode::Deciding,
            known_miss,
            extend,
            guard_pending: false,
            guarded: false,
            key: vec![0; words],
            mask,
            cacheable: true,
            min_len_bits: 0,
            max_len_bits: u64::MAX,
            short_bits: 0,
            parses: 0,
            tags: Vec::with_capacity(8),
            recording: Vec::with_capacity(16),
            fast: self.fast.as_ref(),
            parsed: &mut self.parsed,
            fast_key: &mut self.fast_key,
            phv0: Vec::new(),
            drop_port,
            setup: &self.tracer_setup,
            scratch: &mut self.scratch,
            reasons: &mut self.reasons,
            programs: &mut self.programs,
            memo: self.config.trace_memo.then_some(&mut self.memo),
            sites: &self.sites,
            rec: &mut self.rec,
            recording_trace: false,
            state_seen: false,
            passes: Default::default(),
            egress_parse: false,
            later_parse: false,
            copies: Vec::new(),
            hash_buf: &mut self.hash_buf,
            hash_used: &mut self.hash_used,
        };
        let dropped = state.digests_dropped();
        let outcome = self.interp.run(state, packet, port, clock, &mut obs)?;
        // The message the run sent, for the check of a compiled program (none if the queue
        // was full: the program is then not checked and not installed).
        let digest = (outcome.report.digests == 1 && state.digests_dropped() == dropped)
            .then(|| state.last_digest().cloned())
            .flatten();
        obs.finish(&outcome, digest.as_ref());
        let path = if self.stats.misses != misses {
            PathTaken::Slow
        } else if self.stats.microflow_hits != hits.0 {
            PathTaken::Replayed(Tier::Microflow)
        } else if self.stats.megaflow_hits != hits.1 {
            PathTaken::Replayed(Tier::Megaflow)
        } else {
            PathTaken::Slow
        };
        let t1 = prof.map_or(0, |f| f());
        match path {
            PathTaken::Replayed(_) => self.stats.cycles.actions += t1.wrapping_sub(t0),
            _ => self.stats.cycles.slow_path += t1.wrapping_sub(t0),
        }
        Ok((outcome, path))
    }
}

/// The tag of the megaflows that hit entry `hit` of table `t` (`None`: missed it). A
/// megaflow is also tagged with the table's index (below 2^31); these tags have the top bit
/// set. Two entries may share a tag (a hash): a write then removes a few megaflows more than
/// it must, never fewer.
pub fn entry_tag(t: TableId, hit: Option<u32>) -> u32 {
    let h = hit.map_or(u64::from(u32::MAX), u64::from);
    let x = ((t.index() as u64) << 32 | h).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    0x8000_0000 | (x >> 33) as u32
}

/// What a hit of a guarded megaflow uses of the datapath, apart from its caches (which hold
/// the megaflow).
struct GuardedHit<'a> {
    jit: &'a mut Jit,
    stats: &'a mut DatapathStats,
    rng: &'a mut koi_interp::Rng,
    out: &'a mut Vec<u8>,
    scratch: &'a mut Scratch,
}

impl GuardedHit<'_> {
    /// A hit of a guarded megaflow: its programs are tried in order until one's guards
    /// hold (each that fails undoes its state updates), the one that applied last first; if
    /// none applies, the packet takes the slow path, whose run becomes another arm.
    #[allow(clippy::too_many_arguments)]
    #[inline(never)]
    fn run<E: FnMut(Emitted<'_>) + ?Sized>(
        &mut self,
        state: &mut State,
        packet: &[u8],
        port: u64,
        now: u64,
        key: &[u64],
        id: MegaflowId,
        flow: &Megaflow,
        tier: Tier,
        emit: &mut E,
        prof: Option<CycleCounter>,
        t2: u64,
    ) -> Fast {
        use std::sync::atomic::Ordering::Relaxed;
        state.set_now_ns(now);
        let len = packet.len();
        let fits = |i: usize| match i {
            0 => flow.program.as_ref().filter(|_| flow.fits_len(len)),
            i => flow
                .arms
                .get(i - 1)
                .filter(|a| a.fits(key, len))
                .map(|a| &a.program),
        };
        let last = usize::from(flow.last.load(Relaxed));
        let order = std::iter::once(last).chain((0..=flow.arms.len()).filter(|&i| i != last));
        let mut done = false;
        for i in order {
            let Some(prog) = fits(i) else {
                continue;
            };
            let ev = self.jit.consider(prog, packet, port, now);
            self.stats.count_jit(ev);
            if prog.run(
                packet,
                port,
                Some((state, &mut *self.rng)),
                now,
                &mut *self.out,
                &mut *self.scratch,
                &mut |e| emit(e),
            ) {
                if i != last {
                    flow.last.store(i as u8, Relaxed);
                }
                done = true;
                break;
            }
        }
        let t3 = prof.map_or(0, |f| f());
        self.stats.cycles.actions += t3.wrapping_sub(t2);
        if !done {
            return Fast::Interp {
                miss: true,
                extend: Some(id),
            };
        }
        match tier {
            Tier::Microflow => self.stats.microflow_hits += 1,
            Tier::Megaflow => self.stats.megaflow_hits += 1,
        }
        self.stats.compiled_hits += 1;
        Fast::Done(tier)
    }
}
