//! What the datapath counts and reports: its counters, per-stage cycles and what its caches
//! hold (`koi bench`, `koi ctl cache_show`, metrics).

use super::*;

/// Counters of the datapath.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DatapathStats {
    pub microflow_hits: u64,
    pub megaflow_hits: u64,
    /// Lookups that found a megaflow the packet is too short or too long for (counted as
    /// misses too).
    pub too_short: u64,
    pub misses: u64,
    /// Slow-path runs that could not be summarised as a megaflow.
    pub uncacheable: u64,
    pub installs: u64,
    /// Replays that stopped fitting their recording and were finished by evaluation.
    pub diverged: u64,
    /// Megaflows removed by invalidation.
    pub invalidated: u64,
    /// Hits executed by a compiled action program (a subset of the hits).
    pub compiled_hits: u64,
    /// Misses dropped by the slow-path rate limit (not counted in `misses`).
    pub upcalls_limited: u64,
    /// Packets processed.
    pub packets: u64,
    /// Cycles per stage (with [`DatapathConfig::profile`]).
    pub cycles: StageCycles,
    /// Megaflows installed with a compiled action program.
    pub compiled: u64,
    /// Megaflows installed without one (see [`Datapath::not_compiled_reasons`]).
    pub not_compiled: u64,
    /// Compiled programs whose output differed from the interpreter's on the packet that
    /// made them (left uncompiled; a bug if ever nonzero).
    pub compile_mismatch: u64,
    /// Slow-path packets whose fast-parser key differed from the interpreter's (a bug if
    /// ever nonzero; such runs are not compiled).
    pub fast_parse_mismatch: u64,
    /// Megaflow hits found through the signature cache (a subset of `megaflow_hits`, and of
    /// the replayed ones).
    pub signature_hits: u64,
    /// Lookups that skipped the microflow tier while it was bypassed for its low hit rate.
    pub microflow_bypassed: u64,
    /// Hot programs given native code ([`DatapathConfig::jit_after`]).
    pub jit_compiled: u64,
    /// Hot parse-path templates given native code.
    pub jit_templates: u64,
    /// Modules of native code alive now (programs of one shape share one).
    pub jit_modules: u64,
    /// Flow keys the fast path took from a parse-path template, and from a full run of the
    /// specialised parser.
    pub template_hits: u64,
    pub full_parses: u64,
    /// Template hits by the template guessed from the packet (one load that tells the
    /// native templates apart), not tried in rank order.
    pub template_guesses: u64,
    /// Hits of hot programs whose compile was put off by [`DatapathConfig::jit_rate`] or the
    /// module limit (counted per hit until the compile happens).
    pub jit_deferred: u64,
    /// Hot programs left interpreted: something without a native lowering, or the limit of
    /// programs with code reached.
    pub jit_not_compiled: u64,
    /// Native code whose output differed from the interpreter's on the packet at hand, or
    /// whose flow key differed from its parse-path template's (left without code; a bug if
    /// ever nonzero).
    pub jit_mismatch: u64,
    /// Slow-path runs that took their program from the trace memo instead of a tracer
    /// ([`crate::memo`]; a subset of `compiled`).
    pub memo_hits: u64,
    /// Packets [`Datapath::process_batch_deferring`] handed back unprocessed (misses, and
    /// packets of flows with a packet waiting): not counted in `packets` until the caller
    /// runs them.
    pub deferred: u64,
}

impl DatapathStats {
    /// Adds `o`'s counters to these (the datapaths of several threads), except the gauge
    /// `jit_modules`, of which the larger is kept.
    pub fn add(&mut self, o: &DatapathStats) {
        let DatapathStats {
            microflow_hits,
            megaflow_hits,
            too_short,
            misses,
            uncacheable,
            installs,
            diverged,
            invalidated,
            compiled_hits,
            upcalls_limited,
            packets,
            cycles,
            compiled,
            not_compiled,
            compile_mismatch,
            fast_parse_mismatch,
            signature_hits,
            microflow_bypassed,
            jit_compiled,
            jit_templates,
            jit_modules,
            template_hits,
            full_parses,
            template_guesses,
            jit_deferred,
            jit_not_compiled,
            jit_mismatch,
            memo_hits,
            deferred,
        } = o;
        self.microflow_hits += microflow_hits;
        self.megaflow_hits += megaflow_hits;
        self.too_short += too_short;
        self.misses += misses;
        self.uncacheable += uncacheable;
        self.installs += installs;
        self.diverged += diverged;
        self.invalidated += invalidated;
        self.compiled_hits += compiled_hits;
        self.upcalls_limited += upcalls_limited;
        self.packets += packets;
        self.cycles.parse += cycles.parse;
        self.cycles.microflow += cycles.microflow;
        self.cycles.megaflow += cycles.megaflow;
        self.cycles.actions += cycles.actions;
        self.cycles.slow_path += cycles.slow_path;
        self.compiled += compiled;
        self.not_compiled += not_compiled;
        self.compile_mismatch += compile_mismatch;
        self.fast_parse_mismatch += fast_parse_mismatch;
        self.signature_hits += signature_hits;
        self.microflow_bypassed += microflow_bypassed;
        self.jit_compiled += jit_compiled;
        self.jit_templates += jit_templates;
        self.jit_modules = self.jit_modules.max(*jit_modules);
        self.template_hits += template_hits;
        self.full_parses += full_parses;
        self.template_guesses += template_guesses;
        self.jit_deferred += jit_deferred;
        self.jit_not_compiled += jit_not_compiled;
        self.jit_mismatch += jit_mismatch;
        self.memo_hits += memo_hits;
        self.deferred += deferred;
    }

    /// Counts what [`Jit::consider`] did with a hot program.
    #[inline]
    pub(super) fn count_jit(&mut self, ev: JitEvent) {
        match ev {
            JitEvent::None => {}
            JitEvent::Deferred => self.jit_deferred += 1,
            JitEvent::Compiled => self.jit_compiled += 1,
            JitEvent::NotCompiled => self.jit_not_compiled += 1,
            JitEvent::Mismatch => self.jit_mismatch += 1,
        }
    }
}

/// Cycles spent per stage (only with [`DatapathConfig::profile`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct StageCycles {
    /// Fast parse and key extraction.
    pub parse: u64,
    /// Microflow lookups (hits and misses).
    pub microflow: u64,
    /// Megaflow classifier lookups (after a microflow miss).
    pub megaflow: u64,
    /// Action programs and replays of hits.
    pub actions: u64,
    /// Slow-path runs (interpreter, mask, install).
    pub slow_path: u64,
}

/// Sizes of the caches.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CacheInfo {
    pub megaflows: usize,
    pub max_megaflows: usize,
    /// Megaflows with a compiled action program.
    pub compiled: usize,
    /// Megaflows whose program has native code ([`DatapathConfig::jit_after`]).
    pub native: usize,
    /// Guarded megaflows (decisions on state), and their programs (one per way seen).
    pub guarded: usize,
    pub guarded_programs: usize,
    pub subtables: usize,
    /// Occupied microflow entries (0 without the tier).
    pub microflows: usize,
    pub microflow_capacity: usize,
    /// Signature-cache entries (0 without one).
    pub signature_capacity: usize,
    /// Whether the microflow tier is bypassed now for its low hit rate.
    pub microflow_bypassed: bool,
    /// Bytes used by the cache tiers (keys, masks, tables; not the action programs).
    pub memory_bytes: usize,
    /// Megaflows not hit since their insert (the first to be evicted).
    pub on_probation: usize,
    /// Megaflows evicted at the limit, and how many of them were on probation (new flows
    /// never hit again); the others were established ones, the least hit of a sample.
    pub evictions: u64,
    pub probation_evictions: u64,
}
