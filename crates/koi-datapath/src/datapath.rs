//! The cached datapath, first version: the slow path with wildcard tracking, megaflows that
//! replay recorded decisions, and invalidation on table writes.
//!
//! # How a packet goes through
//!
//! [`Datapath::process`] runs koi's interpreter with an observer ([`DpObserver`]) that
//! switches mode when the packet's first parse ends (`Observer::parsed`):
//!
//! - the PHV's flow key is extracted ([`FlowKeyLayout::extract`]) and looked up in the
//!   [`FlowCache`] (microflow tier, then megaflow classifier);
//! - **hit** (and the packet is at least the megaflow's minimum length): the rest of the run
//!   **replays** the megaflow's recorded decisions: every branch, `switch`, parser `select`
//!   and table application takes its recorded outcome (table entry and action call), so no
//!   condition is evaluated and no table is looked up, while every other statement
//!   (assignments, header operations, extern calls with their state, direct counters of the
//!   recorded entry, the traffic manager and the deparser) executes with the interpreter's own
//!   code. Outputs and state changes are therefore the interpreter's by construction, given
//!   that the decisions are the same, which the megaflow's mask guarantees (the soundness
//!   claim of [`crate`]);
//! - **miss**: the slow path. The run is evaluated normally and **recorded**: each
//!   decision's outcome (`Observer::decided`) and each traffic-manager event, while every
//!   influence report (`Observer::influence`) is mapped to key bits by
//!   [`FlowKeyLayout::mask_for`] and accumulated into the megaflow mask, from the first parse
//!   on. The run is installed as a megaflow (mask, key) → recording, tagged with the tables
//!   it applied, unless it is **uncacheable**: an influence that is not
//!   [`Coverage::Covered`] (state-dependent or outside the key), a failed packet-length
//!   check, a table with a `random` action selector, an aborted run, or no first parse.
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
//! What this version does not do yet: compiled action programs (replay still walks the IR),
//! batching, a slow-path rate limit, and crediting direct counters of several entries per
//! megaflow (each replay credits the entry its recording hit, which is exact).

use crate::flowkey::{Coverage, FlowKeyLayout};
use crate::stages::stages;
use koi_cache::{ClassifierConfig, FlowCache, MicroflowConfig, Tier};
use koi_interp::{
    DropReason, InterpError, Interpreter, Observer, Options, Outcome, Replay, Step, TmEvent,
};
use koi_ir::{ExternKind, HashAlgo, Pipeline, SlotId, TableId, entity::EntityId};
use koi_state::{Clock, State};
use std::sync::Arc;

/// A traffic-manager event as recorded (ports left out: they are computed on replay).
#[derive(Clone, Debug, PartialEq, Eq)]
enum TmKind {
    Unicast,
    Multicast(usize),
    Clone(usize),
    Resubmit,
    Recirculate,
    Drop(DropReason),
    Digest,
}

impl TmKind {
    fn of(ev: &TmEvent) -> TmKind {
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
enum Rec {
    Step(Step),
    Tm(TmKind),
}

/// What a megaflow stores: the recorded run after the first parse, and the shortest packet
/// it is valid for.
#[derive(Debug)]
pub struct Megaflow {
    recording: Vec<Rec>,
    min_len: usize,
}

impl Megaflow {
    /// Recorded decisions and traffic-manager events.
    pub fn len(&self) -> usize {
        self.recording.len()
    }

    /// Whether nothing was recorded (a program without decisions after its parser).
    pub fn is_empty(&self) -> bool {
        self.recording.is_empty()
    }

    /// The shortest packet (bytes) the megaflow is valid for.
    pub fn min_len(&self) -> usize {
        self.min_len
    }
}

/// Counters of the datapath.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DatapathStats {
    pub microflow_hits: u64,
    pub megaflow_hits: u64,
    /// Lookups that found a megaflow the packet is too short for (counted as misses too).
    pub too_short: u64,
    pub misses: u64,
    /// Slow-path runs that could not be summarised as a megaflow.
    pub uncacheable: u64,
    pub installs: u64,
    /// Replays that stopped fitting their recording and were finished by evaluation.
    pub diverged: u64,
    /// Megaflows removed by invalidation.
    pub invalidated: u64,
}

/// The interpreter behind a megaflow cache.
#[derive(Debug)]
pub struct Datapath<'p> {
    pipeline: &'p Pipeline,
    interp: Interpreter<'p>,
    layout: FlowKeyLayout,
    cache: FlowCache<Arc<Megaflow>>,
    stats: DatapathStats,
}

impl<'p> Datapath<'p> {
    /// A datapath for `pipeline` with default interpreter options.
    pub fn new(pipeline: &'p Pipeline) -> Result<Datapath<'p>, InterpError> {
        Datapath::with_options(pipeline, Options::default())
    }

    /// A datapath whose interpreter uses `options`.
    pub fn with_options(
        pipeline: &'p Pipeline,
        options: Options,
    ) -> Result<Datapath<'p>, InterpError> {
        let interp = Interpreter::with_options(pipeline, options)?;
        let layout = FlowKeyLayout::new(pipeline);
        let words = layout.key_words().max(1);
        let mut cfg = ClassifierConfig::new(words);
        if layout.key_words() > 0 {
            cfg.stages = stages(&layout);
        }
        let mf = MicroflowConfig::new(words);
        let cache = FlowCache::new(&cfg, Some(&mf))
            .or_else(|_| FlowCache::new(&ClassifierConfig::new(words), Some(&mf)))
            .map_err(|_| InterpError::Unsupported("flow cache configuration"))?;
        Ok(Datapath {
            pipeline,
            interp,
            layout,
            cache,
            stats: DatapathStats::default(),
        })
    }

    /// The flow-key layout.
    pub fn layout(&self) -> &FlowKeyLayout {
        &self.layout
    }

    /// The counters.
    pub fn stats(&self) -> DatapathStats {
        self.stats
    }

    /// Megaflows installed now.
    pub fn megaflows(&self) -> usize {
        self.cache.classifier().len()
    }

    /// Processes one packet received on `port`: the same outputs, report and state changes
    /// as [`Interpreter::process`].
    pub fn process(
        &mut self,
        state: &mut State,
        packet: &[u8],
        port: u64,
        clock: &dyn Clock,
    ) -> Result<Outcome, InterpError> {
        let words = self.layout.key_words().max(1);
        let mut obs = DpObserver {
            pipeline: self.pipeline,
            layout: &self.layout,
            cache: &mut self.cache,
            stats: &mut self.stats,
            packet_len: packet.len(),
            mode: Mode::Deciding,
            key: vec![0; words],
            mask: vec![0; words],
            cacheable: true,
            min_len_bits: 0,
            parses: 0,
            tags: Vec::new(),
            recording: Vec::new(),
        };
        let outcome = self.interp.run(state, packet, port, clock, &mut obs)?;
        obs.finish(outcome.report.aborted.is_none());
        Ok(outcome)
    }

    /// A write to table `t` (entry added, modified or removed, default action changed):
    /// removes the megaflows that applied it. Call before the next packet.
    pub fn on_table_write(&mut self, t: TableId) {
        let n = self.cache.classifier_mut().remove_tagged(t.index());
        self.stats.invalidated += n as u64;
    }

    /// Removes every megaflow (for control-plane changes not tied to one table).
    pub fn invalidate_all(&mut self) {
        let n = self.cache.classifier_mut().clear();
        self.stats.invalidated += n as u64;
    }
}

/// Where the observer is in the run.
enum Mode {
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
struct DpObserver<'a> {
    pipeline: &'a Pipeline,
    layout: &'a FlowKeyLayout,
    cache: &'a mut FlowCache<Arc<Megaflow>>,
    stats: &'a mut DatapathStats,
    packet_len: usize,
    mode: Mode,
    key: Vec<u64>,
    mask: Vec<u64>,
    cacheable: bool,
    min_len_bits: u64,
    parses: u32,
    tags: Vec<u32>,
    recording: Vec<Rec>,
}

impl DpObserver<'_> {
    fn tracking(&self) -> bool {
        matches!(self.mode, Mode::Deciding | Mode::Recording)
    }

    fn diverge(&mut self) {
        self.mode = Mode::Evaluating;
        self.stats.diverged += 1;
    }

    /// Whether table `t` chooses actions at random (an action selector with `random`).
    fn random_selector(&self, t: TableId) -> bool {
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
    fn first_parse(&mut self, phv: &[u8]) {
        self.layout.extract(phv, &mut self.key);
        let found = self
            .cache
            .lookup(&self.key)
            .map(|(_, v, tier)| (Arc::clone(v), tier));
        match found {
            Some((flow, tier)) if self.packet_len >= flow.min_len => {
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
            }
        }
    }

    /// The run ended (`complete`: not aborted): check a replay used its whole recording,
    /// install a recorded run.
    fn finish(self, complete: bool) {
        let DpObserver {
            mode,
            stats,
            cache,
            key,
            mask,
            cacheable,
            min_len_bits,
            parses,
            mut tags,
            recording,
            packet_len,
            ..
        } = self;
        match mode {
            Mode::Replaying { flow, at } if at != flow.recording.len() => stats.diverged += 1,
            Mode::Recording if cacheable && complete => {
                let mut min_len = usize::try_from(min_len_bits.div_ceil(8)).unwrap_or(usize::MAX);
                if parses > 1 {
                    min_len = min_len.max(packet_len);
                }
                tags.sort_unstable();
                tags.dedup();
                let flow = Arc::new(Megaflow { recording, min_len });
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

impl Observer for DpObserver<'_> {
    const TRACKS_READS: bool = true;
    const WANTS_MASKS: bool = true;
    const REPLAYS: bool = true;

    fn influence(&mut self, _d: koi_interp::Decision, slot: SlotId, mask: &koi_ir::Bits) {
        if self.tracking() && self.layout.mask_for(slot, mask, &mut self.mask) != Coverage::Covered
        {
            self.cacheable = false;
        }
    }

    fn packet_length_check(&mut self, needed_bits: u64, ok: bool) {
        if self.tracking() {
            self.cacheable &= ok;
            self.min_len_bits = self.min_len_bits.max(needed_bits);
        }
    }

    fn parsed(&mut self, phv: &[u8]) {
        self.parses += 1;
        if self.parses == 1 {
            self.first_parse(phv);
        }
    }

    fn decided(&mut self, step: &Step) {
        if !matches!(self.mode, Mode::Recording) {
            return;
        }
        if let Step::Table { table, .. } = step {
            self.tags.push(table.index());
            if self.random_selector(*table) {
                self.cacheable = false;
            }
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
