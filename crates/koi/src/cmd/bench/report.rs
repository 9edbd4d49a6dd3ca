//! What `koi bench` reports: the numbers derived from one run ([`Report::new`]), printed as text
//! ([`Report::text`]) or serialised as one JSON object (`--json`; the field names below are the
//! JSON keys, and a number that could not be measured is `null`).
//!
//! Rates and per-packet figures are over the timed run only (after the warm-up, with the
//! datapath's counters zeroed); `warmup` has the warm-up's own figures, including the first
//! pass over every packet, which with distinct flows is the cold-cache (slow-path) cost.
//! Stage cycles come from the datapath's profile counters and read 0 where the datapath does
//! not measure that stage (`stages_profiled` is false when all of them are 0); `other` is what
//! the TSC saw around the run minus the stages (the replay loop, the sink, and anything the
//! stages do not cover).

use koi_datapath::{CacheInfo, DatapathStats};
use serde::Serialize;
use std::fmt::Write;
use std::path::Path;

/// Where the packets came from.
#[derive(Clone, Debug, Serialize)]
pub struct Source {
    /// The pcap file (`--pcap`).
    pub pcap: Option<String>,
    /// Distinct flows synthesised (`--flows`).
    pub flows: Option<usize>,
    /// Which traffic was synthesised (`l2l3`, `trivial`).
    pub kind: Option<&'static str>,
    /// Packets in the replayed list.
    pub frames: usize,
}

/// The warm-up's measurements.
pub struct WarmupInputs {
    pub seconds: f64,
    pub packets: u64,
    pub first_pass_packets: u64,
    pub first_pass_cycles: u64,
    pub outputs: u64,
    pub stats: DatapathStats,
}

/// Everything a report is computed from.
pub struct Inputs<'a> {
    pub program: &'a Path,
    pub entries: Option<&'a Path>,
    pub source: Source,
    pub port: u64,
    /// The ingress ports of the replayed packets.
    pub ports: Vec<u64>,
    pub core: Option<usize>,
    pub microflow: bool,
    pub jit: bool,
    pub batch: usize,
    pub profile: bool,
    pub seconds_asked: f64,
    pub warmup: WarmupInputs,
    /// Packets of the timed run.
    pub packets: u64,
    /// Its wall-clock seconds.
    pub seconds: f64,
    /// Its TSC cycles (0: no TSC).
    pub cycles: u64,
    pub stats: DatapathStats,
    pub info: CacheInfo,
    /// Why megaflows got no compiled program (each then replays the interpreter), with how
    /// many.
    pub replayed: std::collections::BTreeMap<&'static str, u64>,
    /// The caches' memory before the first packet.
    pub empty_bytes: usize,
    pub outputs: u64,
    pub errors: u64,
    pub first_error: Option<String>,
    /// Each forwarding thread's part of the timed run (one for a single thread).
    pub threads: Vec<ThreadRun>,
}

/// One forwarding thread's part of the timed run (`koi bench --threads N`).
#[derive(Clone, Debug, Serialize)]
pub struct ThreadRun {
    /// The CPU it was pinned to (`null`: not pinned).
    pub core: Option<usize>,
    pub packets: u64,
    pub mpps: f64,
}

/// Cycles per packet in each datapath stage.
#[derive(Clone, Debug, Serialize)]
pub struct Stages {
    pub parse: f64,
    pub microflow: f64,
    pub megaflow: f64,
    pub actions: f64,
    pub slow_path: f64,
    /// Overall cycles per packet minus the stages' (`null` without a TSC).
    pub other: Option<f64>,
}

/// Shares of the timed run's packets.
#[derive(Clone, Debug, Serialize)]
pub struct HitRates {
    /// Hits in the microflow (exact-match) cache.
    pub microflow: f64,
    /// Hits in the megaflow classifier (after a microflow miss).
    pub megaflow: f64,
    /// Both tiers.
    pub total: f64,
    /// Hits executed by a compiled action program (part of `total`).
    pub compiled: f64,
    /// Slow-path runs.
    pub miss: f64,
    /// Misses dropped by the slow-path rate limit.
    pub limited: f64,
}

/// The datapath's counters over the timed run.
#[derive(Clone, Debug, Serialize)]
pub struct Counters {
    /// Packets as the datapath counted them (0 where it does not count them).
    pub packets: u64,
    pub microflow_hits: u64,
    pub megaflow_hits: u64,
    /// Megaflow hits found through the signature cache.
    pub signature_hits: u64,
    /// Lookups that skipped the bypassed microflow tier.
    pub microflow_bypassed: u64,
    pub compiled_hits: u64,
    pub misses: u64,
    pub too_short: u64,
    pub uncacheable: u64,
    pub installs: u64,
    /// Installs whose program came from the trace memo (no tracer run).
    pub memo_hits: u64,
    pub upcalls_limited: u64,
    pub diverged: u64,
    pub invalidated: u64,
    /// Total cycles per stage.
    pub cycles_parse: u64,
    pub cycles_microflow: u64,
    pub cycles_megaflow: u64,
    pub cycles_actions: u64,
    pub cycles_slow_path: u64,
}

impl Counters {
    fn of(s: &DatapathStats) -> Counters {
        Counters {
            packets: s.packets,
            microflow_hits: s.microflow_hits,
            megaflow_hits: s.megaflow_hits,
            signature_hits: s.signature_hits,
            microflow_bypassed: s.microflow_bypassed,
            compiled_hits: s.compiled_hits,
            misses: s.misses,
            too_short: s.too_short,
            uncacheable: s.uncacheable,
            installs: s.installs,
            memo_hits: s.memo_hits,
            upcalls_limited: s.upcalls_limited,
            diverged: s.diverged,
            invalidated: s.invalidated,
            cycles_parse: s.cycles.parse,
            cycles_microflow: s.cycles.microflow,
            cycles_megaflow: s.cycles.megaflow,
            cycles_actions: s.cycles.actions,
            cycles_slow_path: s.cycles.slow_path,
        }
    }
}

/// The caches at the end of the run.
#[derive(Clone, Debug, Serialize)]
pub struct Cache {
    pub megaflows: usize,
    pub max_megaflows: usize,
    /// Megaflows with a compiled action program.
    pub compiled: usize,
    /// Megaflows whose program runs as native code.
    pub native: usize,
    /// Megaflows with decisions on state (guarded programs), and their programs (arms).
    pub guarded: usize,
    pub guarded_programs: usize,
    /// Classifier subtables (distinct masks).
    pub subtables: usize,
    pub microflows: usize,
    pub microflow_capacity: usize,
    /// Whether the microflow tier was bypassed at the end (hit rate too low to pay).
    pub microflow_bypassed: bool,
    pub signature_capacity: usize,
    /// Bytes used by the tiers (keys, masks, tables; not the action programs).
    pub memory_bytes: usize,
    /// `memory_bytes` of the empty caches (the microflow table, empty classifier tables).
    pub empty_bytes: usize,
    /// What the megaflows added to the empty caches' memory, per megaflow (hash tables grow
    /// in steps, so this is an average over the current size).
    pub bytes_per_megaflow: Option<f64>,
}

/// The warm-up.
#[derive(Clone, Debug, Serialize)]
pub struct Warmup {
    pub seconds: f64,
    pub packets: u64,
    /// The first pass over every packet (cold caches).
    pub first_pass_packets: u64,
    pub first_pass_cycles_per_packet: Option<f64>,
    /// Slow-path runs during the warm-up.
    pub upcalls: u64,
    pub installs: u64,
    pub uncacheable: u64,
    /// Slow-path cycles per upcall during the warm-up (profile counters).
    pub slow_path_cycles_per_upcall: Option<f64>,
    pub outputs_per_packet: f64,
}

/// One run's results.
#[derive(Clone, Debug, Serialize)]
pub struct Report {
    pub program: String,
    pub entries: Option<String>,
    pub traffic: Source,
    /// The ingress port (`--port`).
    pub port: u64,
    /// The ingress ports the packets arrived on (`--pcap PORT=FILE`; else `[port]`).
    pub ports: Vec<u64>,
    /// The CPU the run was pinned to (`null`: not pinned).
    pub core: Option<usize>,
    pub microflow: bool,
    /// Whether hot action programs were compiled to native code (not `--no-jit`).
    pub jit: bool,
    /// Packets handed to the datapath at once (`--batch`).
    pub batch: usize,
    /// Whether the datapath was asked to count cycles per stage (not `--no-profile`).
    pub profile: bool,
    /// `--seconds` as asked.
    pub seconds_asked: f64,
    pub warmup: Warmup,
    /// Packets of the timed run.
    pub packets: u64,
    /// Its wall-clock duration.
    pub seconds: f64,
    /// Million packets per second (wall clock).
    pub mpps: f64,
    pub ns_per_packet: f64,
    /// The TSC's rate measured over the run (`null`: no TSC).
    pub tsc_mhz: Option<f64>,
    /// TSC cycles per packet, everything included.
    pub cycles_per_packet: Option<f64>,
    pub stage_cycles_per_packet: Stages,
    /// Whether the datapath reported any stage cycles.
    pub stages_profiled: bool,
    /// Slow-path cycles per upcall in the timed run (`null`: no upcall; see `warmup`).
    pub slow_path_cycles_per_upcall: Option<f64>,
    pub hit_rate: HitRates,
    pub counters: Counters,
    pub cache: Cache,
    /// Packets that came out (any port) per packet in.
    pub outputs_per_packet: f64,
    /// Packets the datapath failed on.
    pub errors: u64,
    pub first_error: Option<String>,
    /// Why megaflows installed so far got no compiled program (each hit then replays the
    /// interpreter: the cost of the interpreter per packet), with how many.
    pub replayed: std::collections::BTreeMap<&'static str, u64>,
    /// Each forwarding thread's part (`--threads`; one entry for a single thread). With
    /// several, `mpps` is their total, `cycles_per_packet` their cores' cycles summed per
    /// packet, the counters and hit rates every thread's added up, and `cache` thread 0's.
    pub threads: Vec<ThreadRun>,
}

/// `a / b`, or `None` when `b` is 0.
fn ratio(a: f64, b: f64) -> Option<f64> {
    (b != 0.0).then(|| a / b)
}

impl Report {
    pub fn new(i: Inputs<'_>) -> Report {
        let n = i.packets as f64;
        let s = &i.stats;
        let per = |x: u64| ratio(x as f64, n).unwrap_or(0.0);
        let cycles_per_packet = (i.cycles > 0)
            .then_some(i.cycles as f64)
            .and_then(|c| ratio(c, n));
        let c = &s.cycles;
        let staged = c.parse + c.microflow + c.megaflow + c.actions + c.slow_path;
        let stages = Stages {
            parse: per(c.parse),
            microflow: per(c.microflow),
            megaflow: per(c.megaflow),
            actions: per(c.actions),
            slow_path: per(c.slow_path),
            other: cycles_per_packet.map(|t| t - per(staged)),
        };
        let w = &i.warmup;
        let ws = &w.stats;
        let info = &i.info;
        Report {
            program: i.program.display().to_string(),
            entries: i.entries.map(|e| e.display().to_string()),
            traffic: i.source,
            port: i.port,
            ports: i.ports,
            core: i.core,
            microflow: i.microflow,
            jit: i.jit,
            batch: i.batch,
            profile: i.profile,
            seconds_asked: i.seconds_asked,
            warmup: Warmup {
                seconds: w.seconds,
                packets: w.packets,
                first_pass_packets: w.first_pass_packets,
                first_pass_cycles_per_packet: (w.first_pass_cycles > 0)
                    .then(|| ratio(w.first_pass_cycles as f64, w.first_pass_packets as f64))
                    .flatten(),
                upcalls: ws.misses,
                installs: ws.installs,
                uncacheable: ws.uncacheable,
                slow_path_cycles_per_upcall: (ws.cycles.slow_path > 0)
                    .then(|| ratio(ws.cycles.slow_path as f64, ws.misses as f64))
                    .flatten(),
                outputs_per_packet: ratio(w.outputs as f64, w.packets as f64).unwrap_or(0.0),
            },
            packets: i.packets,
            seconds: i.seconds,
            mpps: ratio(n, i.seconds * 1e6).unwrap_or(0.0),
            ns_per_packet: ratio(i.seconds * 1e9, n).unwrap_or(0.0),
            // Cycles are summed over the threads' cores.
            tsc_mhz: (i.cycles > 0)
                .then(|| {
                    ratio(
                        i.cycles as f64,
                        i.seconds * 1e6 * i.threads.len().max(1) as f64,
                    )
                })
                .flatten(),
            cycles_per_packet,
            stage_cycles_per_packet: stages,
            stages_profiled: staged > 0,
            slow_path_cycles_per_upcall: ratio(c.slow_path as f64, s.misses as f64),
            hit_rate: HitRates {
                microflow: per(s.microflow_hits),
                megaflow: per(s.megaflow_hits),
                total: per(s.microflow_hits + s.megaflow_hits),
                compiled: per(s.compiled_hits),
                miss: per(s.misses),
                limited: per(s.upcalls_limited),
            },
            counters: Counters::of(s),
            cache: Cache {
                megaflows: info.megaflows,
                max_megaflows: info.max_megaflows,
                compiled: info.compiled,
                native: info.native,
                guarded: info.guarded,
                guarded_programs: info.guarded_programs,
                subtables: info.subtables,
                microflows: info.microflows,
                microflow_capacity: info.microflow_capacity,
                microflow_bypassed: info.microflow_bypassed,
                signature_capacity: info.signature_capacity,
                memory_bytes: info.memory_bytes,
                empty_bytes: i.empty_bytes,
                bytes_per_megaflow: ratio(
                    info.memory_bytes.saturating_sub(i.empty_bytes) as f64,
                    info.megaflows as f64,
                ),
            },
            outputs_per_packet: per(i.outputs),
            errors: i.errors,
            first_error: i.first_error,
            replayed: i.replayed,
            threads: i.threads,
        }
    }

    /// The report as text, for people.
    pub fn text(&self) -> String {
        let f0 = |x: Option<f64>| x.map_or("-".to_string(), |v| format!("{v:.0}"));
        let pct = |x: f64| format!("{:.1}%", x * 100.0);
        let t = &self.traffic;
        let what = match (&t.pcap, t.flows) {
            (Some(p), _) => format!("{p} ({} packets)", t.frames),
            (None, Some(n)) => format!("{n} flows of {} traffic", t.kind.unwrap_or("?")),
            (None, None) => format!("{} packets", t.frames),
        };
        let mut o = String::new();
        let _ = writeln!(
            o,
            "koi bench {}{}: {what} on port {}, {}, microflow cache {}, JIT {}, batches of {}",
            self.program,
            self.entries
                .as_ref()
                .map_or(String::new(), |e| format!(" --entries {e}")),
            self.ports
                .iter()
                .map(u64::to_string)
                .collect::<Vec<_>>()
                .join(", "),
            self.core
                .map_or("not pinned".to_string(), |c| format!("pinned to CPU {c}")),
            if self.microflow { "on" } else { "off" },
            if self.jit { "on" } else { "off" },
            self.batch,
        );
        if self.threads.len() > 1 {
            let each: Vec<String> = self
                .threads
                .iter()
                .map(|t| {
                    format!(
                        "{:.2} Mpps{}",
                        t.mpps,
                        t.core.map_or(String::new(), |c| format!(" (CPU {c})"))
                    )
                })
                .collect();
            let _ = writeln!(
                o,
                "threads     {}, each with its own caches and replica of one state: {}",
                self.threads.len(),
                each.join(", ")
            );
        }
        let w = &self.warmup;
        let _ = writeln!(
            o,
            "warm-up     {} packets in {:.2} s; first pass {} packets at {} cycles/packet; {} upcalls ({} cycles each), {} installs, {} uncacheable",
            w.packets,
            w.seconds,
            w.first_pass_packets,
            f0(w.first_pass_cycles_per_packet),
            w.upcalls,
            f0(w.slow_path_cycles_per_upcall),
            w.installs,
            w.uncacheable,
        );
        let _ = writeln!(
            o,
            "throughput  {:.3} Mpps ({} packets in {:.2} s, {:.1} ns/packet)",
            self.mpps, self.packets, self.seconds, self.ns_per_packet
        );
        let s = &self.stage_cycles_per_packet;
        let _ = writeln!(
            o,
            "cycles      {} per packet (TSC {} MHz): parse {:.0}, microflow {:.0}, megaflow {:.0}, actions {:.0}, slow path {:.0}, other {}{}",
            f0(self.cycles_per_packet),
            f0(self.tsc_mhz),
            s.parse,
            s.microflow,
            s.megaflow,
            s.actions,
            s.slow_path,
            f0(s.other),
            match (self.profile, self.stages_profiled) {
                (false, _) => " (--no-profile)",
                (true, false) => " (the datapath reported no stage cycles)",
                (true, true) => "",
            },
        );
        let h = &self.hit_rate;
        let _ = writeln!(
            o,
            "hit rates   microflow {}, megaflow {} ({} of packets through the signature cache), total {} (compiled {}); miss {}, rate-limited {}",
            pct(h.microflow),
            pct(h.megaflow),
            pct(ratio(
                self.counters.signature_hits as f64,
                self.counters.packets as f64
            )
            .unwrap_or(0.0)),
            pct(h.total),
            pct(h.compiled),
            pct(h.miss),
            pct(h.limited),
        );
        let _ = writeln!(
            o,
            "slow path   {} upcalls, {} cycles/upcall, {} installs ({} with the trace memo's program), {} uncacheable",
            self.counters.misses,
            f0(self.slow_path_cycles_per_upcall),
            self.counters.installs,
            self.counters.memo_hits,
            self.counters.uncacheable,
        );
        let c = &self.cache;
        let _ = writeln!(
            o,
            "caches      {} megaflows (limit {}, {} compiled, {} native{}) in {} subtables; {} microflows of {}{}; signature cache of {}; {} bytes ({} when empty), {} bytes/megaflow",
            c.megaflows,
            c.max_megaflows,
            c.compiled,
            c.native,
            if c.guarded > 0 {
                format!(
                    ", {} guarded with {} programs for decisions on state",
                    c.guarded, c.guarded_programs
                )
            } else {
                String::new()
            },
            c.subtables,
            c.microflows,
            c.microflow_capacity,
            if c.microflow_bypassed {
                " (bypassed: too few hits)"
            } else {
                ""
            },
            c.signature_capacity,
            c.memory_bytes,
            c.empty_bytes,
            f0(c.bytes_per_megaflow),
        );
        if let Some((n, why)) = koi_runtime::cache::replays(&self.replayed) {
            let _ = writeln!(
                o,
                "replayed    {n} megaflows have no compiled program (each hit runs the interpreter): {why}"
            );
        }
        let _ = writeln!(
            o,
            "outputs     {:.2} per packet; {} errors{}",
            self.outputs_per_packet,
            self.errors,
            self.first_error
                .as_ref()
                .map_or(String::new(), |e| format!(" (first: {e})")),
        );
        o
    }
}
