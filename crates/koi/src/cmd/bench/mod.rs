//! `koi bench PROG.p4 [--entries FILE] (--flows N | --pcap FILE) [--seconds S] [--warmup S]
//! [--no-microflow] [--max-megaflows N] [--no-profile] [--json]`: the cached datapath's speed,
//! measured the way the Open vSwitch baseline is (`bench/ovs-dpdk/` in the shared directory).
//!
//! The packets are held in memory and replayed, in order and over and over, through the whole
//! cached datapath ([`koi_datapath::Datapath::process_with`]: parse, microflow, megaflow, action
//! program or slow path) on one thread pinned to one core, into a sink that only counts what
//! comes out. A warm-up (at least one pass over every packet, which fills the caches) comes
//! first; the counters are then zeroed and the run is timed for `--seconds`, checking the clock
//! every 1024 packets.
//!
//! Reported: packets per second by the wall clock, TSC cycles per packet overall (read around
//! the timed run) and per datapath stage (the datapath's own profile counters), hit rates per
//! cache tier, slow-path cycles per upcall, megaflows and subtables, and the caches' memory per
//! megaflow; as text, or as one JSON object with `--json` (see [`report::Report`]). A progress
//! bar goes to stderr when it is a terminal and `--json` is not given.
//!
//! `--flows N` synthesises the baseline's traffic ([`traffic`], a port of `gen_pcap.py`);
//! `koi bench --write-pcap FILE --flows N` writes it to a pcap file for other tools instead of
//! running anything. The clock given to the datapath is a manual clock set to the elapsed time
//! at every clock check (cheap, and enough for meters and rate limits).

mod pcap;
pub mod report;
mod threads;
pub mod traffic;

use clap::Args;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use koi_datapath::{Datapath, DatapathConfig};
use koi_state::{ManualClock, State};
use report::Report;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::{Duration, Instant};

#[derive(Args, Debug)]
pub struct BenchArgs {
    /// Add a directory to the `#include` search path.
    #[arg(short = 'I', value_name = "DIR")]
    pub include: Vec<PathBuf>,
    /// Define a preprocessor macro (`NAME` or `NAME=VALUE`).
    #[arg(short = 'D', value_name = "NAME[=VAL]")]
    pub define: Vec<String>,
    /// The C file (or prebuilt shared object) implementing the program's extern functions.
    #[arg(long = "extern", value_name = "FILE")]
    pub externs: Option<PathBuf>,
    /// simple_switch_CLI commands to run first (table_add, mc_*, ...), as `koi run` takes them.
    #[arg(long, value_name = "FILE")]
    pub entries: Option<PathBuf>,
    /// Replay the packets of this pcap file, arriving on --port, or on PORT when given as
    /// `PORT=FILE`. Several files (`--pcap 1=inside.pcap --pcap 2=outside.pcap`) are merged
    /// in the order of their packets' timestamps (equal ones in the order the files were
    /// given); a batch holds packets of one port, as a poll thread's batch does.
    #[arg(long, value_name = "[PORT=]FILE", conflicts_with = "flows")]
    pub pcap: Vec<String>,
    /// Replay the Open vSwitch baseline's traffic with N distinct flows (see --traffic).
    #[arg(long, value_name = "N")]
    pub flows: Option<usize>,
    /// Which traffic --flows synthesises (gen_pcap.py's kinds).
    #[arg(long, value_enum, default_value_t = traffic::Kind::L2l3)]
    pub traffic: traffic::Kind,
    /// Seconds to measure.
    #[arg(long, default_value_t = 5.0, value_name = "S")]
    pub seconds: f64,
    /// Seconds of warm-up before measuring (at least one pass over every packet).
    #[arg(long, default_value_t = 1.0, value_name = "S")]
    pub warmup: f64,
    /// Turn the microflow (exact-match) cache off: every hit is a megaflow lookup.
    #[arg(long)]
    pub no_microflow: bool,
    /// Signature-cache entries (0: none): the 8-byte hints from a key's hash to its megaflow
    /// between the microflow cache and the classifier.
    #[arg(long, default_value_t = koi_datapath::SIGNATURE_ENTRIES)]
    pub signature_entries: usize,
    /// Keep every action program interpreted (no native code for hot programs).
    #[arg(long)]
    pub no_jit: bool,
    /// Run the tracer on every slow-path run (no trace memo: a new flow on a way already
    /// seen does not take that way's program).
    #[arg(long)]
    pub no_trace_memo: bool,
    /// Packets handed to the datapath at once: their keys are computed (and their microflow
    /// sets prefetched) before any is looked up. 1: one packet at a time.
    #[arg(long, default_value_t = koi_datapath::BATCH, value_parser = batch_size)]
    pub batch: usize,
    /// Do not measure cycles per stage (saves the datapath's counter reads; the overall
    /// cycles per packet are still measured).
    #[arg(long)]
    pub no_profile: bool,
    /// Megaflow limit.
    #[arg(long, value_name = "N", default_value_t = DatapathConfig::default().max_megaflows)]
    pub max_megaflows: usize,
    /// Print one JSON object instead of text.
    #[arg(long)]
    pub json: bool,
    /// After the run, print the first N megaflows (mask, key, action program) on stderr,
    /// as `koi ctl dump_flows` shows them.
    #[arg(long, value_name = "N")]
    pub dump_flows: Option<usize>,
    /// Forwarding threads, each with its own caches and its own replica of one state (tables
    /// copied, counters apart, registers and meters shared), as `koi run --threads N`'s poll
    /// threads use a pipeline's: every
    /// thread replays the packets from its own place in the list, pinned to a core of its own
    /// (from `--core`, else 0) when it can be. The report gives the total rate.
    #[arg(long, value_name = "N", default_value_t = 1, value_parser = thread_count)]
    pub threads: usize,
    /// The ingress port the packets arrive on (those of a `--pcap PORT=FILE`: PORT; as `koi
    /// trace --port`; at most 511 for v1model, whose port numbers are 9 bits).
    #[arg(long, value_name = "P", default_value_t = 1)]
    pub port: u64,
    /// The CPU to pin the benchmark thread to (default: the last one the process may use).
    #[arg(long, value_name = "N")]
    pub core: Option<usize>,
    /// Write the --flows traffic to a pcap file (as gen_pcap.py does) and exit.
    #[arg(long, value_name = "FILE", requires = "flows", conflicts_with_all = ["pcap", "program", "pof_config"])]
    pub write_pcap: Option<PathBuf>,
    /// Benchmark a POF configuration (docs/pof.md) instead of a P4 program: the program koi
    /// compiles it to.
    #[arg(long, value_name = "FILE", conflicts_with = "program")]
    pub pof_config: Option<PathBuf>,
    /// The P4-16 program.
    #[arg(required_unless_present_any = ["write_pcap", "pof_config"])]
    pub program: Option<PathBuf>,
}

/// The pipeline a POF configuration file compiles to, and the table writes of its entries.
fn pof_pipeline(
    f: &std::path::Path,
) -> Result<(koi_ir::Pipeline, Vec<koi_pof::TableWrite>), (u8, String)> {
    let name = f.display().to_string();
    let text = std::fs::read_to_string(f).map_err(|e| (2, format!("koi: {name}: {e}")))?;
    let config = koi_pof::parse(&text).map_err(|e| (1, e.render(&name)))?;
    koi_pof::compile(&config)
        .map(|(g, p)| (p, g.writes))
        .map_err(|e| (1, e.render(&name)))
}

/// A `--batch` value: 1 to 1024.
fn batch_size(s: &str) -> Result<usize, String> {
    match s.parse::<usize>() {
        Ok(n @ 1..=1024) => Ok(n),
        _ => Err(format!("{s}: expected a number of packets from 1 to 1024")),
    }
}

/// A `--threads` value: 1 to 256.
fn thread_count(s: &str) -> Result<usize, String> {
    match s.parse::<usize>() {
        Ok(n @ 1..=256) => Ok(n),
        _ => Err(format!("{s}: expected a number of threads from 1 to 256")),
    }
}

/// Packets between two clock checks.
const CHECK_EVERY: usize = 1024;

pub fn run(a: &BenchArgs) -> ExitCode {
    match bench(a) {
        Ok(()) => ExitCode::SUCCESS,
        Err((code, msg)) => {
            eprintln!("{msg}");
            ExitCode::from(code)
        }
    }
}

type Failure = (u8, String);

fn usage(msg: impl std::fmt::Display) -> Failure {
    (2, format!("koi: {msg}"))
}

fn bench(a: &BenchArgs) -> Result<(), Failure> {
    if a.flows == Some(0) {
        return Err(usage("--flows must be at least 1"));
    }
    if let Some(out) = &a.write_pcap {
        let n = a.flows.unwrap_or(1);
        let frames = traffic::pcap_frames(a.traffic, n);
        traffic::write_pcap(out, &frames).map_err(usage)?;
        println!(
            "{}: {} frames, {n} distinct flows",
            out.display(),
            frames.len()
        );
        return Ok(());
    }
    for (name, v) in [("--seconds", a.seconds), ("--warmup", a.warmup)] {
        if !(0.0..1e6).contains(&v) {
            return Err(usage(format!("{name} {v}: expected seconds (0 or more)")));
        }
    }
    let program = match (&a.program, &a.pof_config) {
        (Some(p), _) | (None, Some(p)) => p,
        (None, None) => return Err(usage("give the program")),
    };
    let (packets, source) = load_packets(a)?;
    let (mut pipeline, pof_writes) = match &a.pof_config {
        Some(f) => pof_pipeline(f)?,
        None => {
            let opts = super::frontend::pp_options(&a.include, &a.define);
            let p = koi_conformance::compile(program, &opts)
                .map_err(|e| (if e.unreadable() { 2 } else { 1 }, e.render()))?
                .pipeline;
            (p, Vec::new())
        }
    };
    koi_native::bind(&mut pipeline, a.externs.as_deref()).map_err(|e| (1, format!("koi: {e}")))?;
    let p = &pipeline;
    p.arch
        .check_port(a.port)
        .map_err(|e| usage(format!("--port {}: {e}", a.port)))?;
    let mut state = State::new(p).map_err(|e| (1, format!("koi: {e}")))?;
    koi_pof::install(&mut state, &pof_writes).map_err(|e| (1, format!("koi: {e}")))?;
    if let Some(f) = &a.entries {
        super::entries::load(&mut state, f).map_err(|e| (e.code(), format!("koi: {e}")))?;
    }
    let config = DatapathConfig {
        profile: (!a.no_profile).then_some(koi_ports::tsc as koi_datapath::CycleCounter),
        microflow: !a.no_microflow,
        signature_entries: a.signature_entries,
        max_megaflows: a.max_megaflows.max(1),
        jit_after: if a.no_jit {
            None
        } else {
            DatapathConfig::default().jit_after
        },
        trace_memo: !a.no_trace_memo,
        ..Default::default()
    };
    let mut dp = Datapath::with_config(p, koi_interp::Options::default(), config.clone())
        .map_err(|e| (1, format!("koi: {e}")))?;
    let empty_bytes = dp.cache_info().memory_bytes;
    if a.threads > 1 {
        // Before this thread is pinned: the threads pin themselves, each to a CPU of its own.
        return threads::bench(a, p, state, packets, config, source);
    }
    let core = match pin(a.core) {
        Ok(c) => Some(c),
        Err(e) if a.core.is_some() => return Err(usage(e)),
        Err(e) => {
            eprintln!("koi: warning: running unpinned: {e}");
            None
        }
    };

    let bar = progress_bar(a);
    let mut run = Runner {
        dp: &mut dp,
        state: StateRef::Own(&mut state),
        packets: &packets,
        batch: a.batch,
        clock: ManualClock::new(0),
        next: 0,
        outputs: 0,
        errors: 0,
        first_error: None,
    };
    let origin = Instant::now();

    bar.set_message("warm-up");
    let (first_pass_cycles, warm_packets) = run.warm_up(origin, a.warmup, &bar);
    let warm_secs = origin.elapsed().as_secs_f64();
    if run.errors == warm_packets {
        bar.finish_and_clear();
        return Err((
            1,
            format!(
                "koi: every packet failed: {}",
                run.first_error.as_deref().unwrap_or("?")
            ),
        ));
    }
    let (warm_stats, warm_outputs) = run.end_warm_up();

    bar.set_message("measuring");
    let (n, cycles, secs) = run.timed(origin, Duration::from_secs_f64(a.seconds), &bar);
    bar.finish_and_clear();

    let stats = run.dp.stats();
    let (outputs, errors, first_error) = (run.outputs, run.errors, run.first_error.take());
    let info = dp.cache_info();
    let report = Report::new(report::Inputs {
        program,
        entries: a.entries.as_deref(),
        source,
        port: a.port,
        ports: ports_of(&packets),
        core,
        microflow: !a.no_microflow,
        jit: !a.no_jit,
        batch: a.batch,
        profile: !a.no_profile,
        seconds_asked: a.seconds,
        warmup: report::WarmupInputs {
            seconds: warm_secs,
            packets: warm_packets,
            first_pass_packets: packets.len() as u64,
            first_pass_cycles,
            outputs: warm_outputs,
            stats: warm_stats,
        },
        packets: n,
        seconds: secs,
        cycles,
        stats,
        info,
        replayed: dp.not_compiled_reasons().clone(),
        empty_bytes,
        outputs,
        errors,
        first_error,
        threads: vec![report::ThreadRun {
            core,
            packets: n,
            mpps: n as f64 / secs.max(1e-9) / 1e6,
        }],
    });
    if let Some(n) = a.dump_flows {
        for f in dp.dump_flows(n) {
            eprint!("{f}");
        }
    }
    print_report(a, &report, warm_outputs + outputs)
}

/// Prints `report` as `--json` asks, after a warning if no packet came out (`outputs`, the
/// warm-up's included).
fn print_report(a: &BenchArgs, report: &Report, outputs: u64) -> Result<(), Failure> {
    if outputs == 0 {
        eprintln!(
            "koi: warning: the program sent none of the packets anywhere (check --entries and --port)"
        );
    }
    if a.json {
        let text = serde_json::to_string(report).map_err(|e| (1, format!("koi: {e}")))?;
        println!("{text}");
    } else {
        print!("{}", report.text());
    }
    Ok(())
}

/// Packets to replay, each with its ingress port.
type Packets = Vec<(u64, Vec<u8>)>;

/// The packets to replay, each with its ingress port, and a description of where they came
/// from.
fn load_packets(a: &BenchArgs) -> Result<(Packets, report::Source), Failure> {
    if !a.pcap.is_empty() {
        let files = a
            .pcap
            .iter()
            .map(|arg| pcap::parse_arg(arg, a.port))
            .collect::<Result<Vec<_>, _>>()
            .map_err(usage)?;
        let packets = pcap::load(&files, koi_ports::DEFAULT_SNAPLEN).map_err(usage)?;
        let frames = packets.len();
        let named = a.pcap.len() > 1 || a.pcap[0].contains('=');
        let pcap = files
            .iter()
            .map(|(port, f)| {
                if named {
                    format!("{port}={}", f.display())
                } else {
                    f.display().to_string()
                }
            })
            .collect::<Vec<_>>()
            .join(" ");
        return Ok((
            packets,
            report::Source {
                pcap: Some(pcap),
                flows: None,
                kind: None,
                frames,
            },
        ));
    }
    let Some(n) = a.flows else {
        return Err(usage("give the traffic: --flows N or --pcap FILE"));
    };
    let packets: Packets = traffic::frames(a.traffic, n)
        .into_iter()
        .map(|f| (a.port, f))
        .collect();
    let frames = packets.len();
    Ok((
        packets,
        report::Source {
            pcap: None,
            flows: Some(n),
            kind: Some(a.traffic.name()),
            frames,
        },
    ))
}

/// The ingress ports in `packets`, in order, each once.
fn ports_of(packets: &[(u64, Vec<u8>)]) -> Vec<u64> {
    let mut ports: Vec<u64> = packets.iter().map(|&(p, _)| p).collect();
    ports.sort_unstable();
    ports.dedup();
    ports
}

/// Pins the calling thread to `core`, or to the last CPU it may run on; returns the CPU.
fn pin(core: Option<usize>) -> Result<usize, String> {
    use nix::sched::{CpuSet, sched_getaffinity, sched_setaffinity};
    use nix::unistd::Pid;
    let me = Pid::from_raw(0);
    let allowed = sched_getaffinity(me).map_err(|e| format!("sched_getaffinity: {e}"))?;
    let cpu = match core {
        Some(c) => c,
        None => (0..CpuSet::count())
            .rev()
            .find(|&c| allowed.is_set(c).unwrap_or(false))
            .ok_or("no CPU in the affinity mask")?,
    };
    let mut set = CpuSet::new();
    set.set(cpu)
        .map_err(|e| format!("--core {cpu}: not a CPU number ({e})"))?;
    sched_setaffinity(me, &set).map_err(|e| format!("cannot pin to CPU {cpu}: {e}"))?;
    Ok(cpu)
}

/// The progress bar: hidden with `--json` or when stderr is not a terminal.
fn progress_bar(a: &BenchArgs) -> ProgressBar {
    let total_ms = ((a.warmup + a.seconds) * 1000.0).ceil() as u64;
    let stderr_tty = std::io::IsTerminal::is_terminal(&std::io::stderr());
    if a.json || !stderr_tty {
        return ProgressBar::hidden();
    }
    let bar = ProgressBar::with_draw_target(Some(total_ms.max(1)), ProgressDrawTarget::stderr());
    if let Ok(style) = ProgressStyle::with_template("{bar:40} {elapsed:>3}/{duration} {msg}") {
        bar.set_style(style.progress_chars("=> "));
    }
    bar
}

/// The replay loop's state.
/// Where a runner's state is: its own, or the thread's replica of a master state, behind
/// the replica's lock taken for each batch (as `koi run`'s poll threads each hold a replica
/// of a pipeline image's state).
enum StateRef<'a> {
    Own(&'a mut State),
    Replica(&'a parking_lot::Mutex<State>),
}

impl StateRef<'_> {
    /// Runs `f` on the state, under the replica's lock for a replica.
    fn with<R>(&mut self, f: impl FnOnce(&mut State) -> R) -> R {
        match self {
            StateRef::Own(s) => f(s),
            StateRef::Replica(m) => f(&mut m.lock()),
        }
    }
}

struct Runner<'a, 'p> {
    dp: &'a mut Datapath<'p>,
    state: StateRef<'a>,
    /// The packets with their ingress ports.
    packets: &'a [(u64, Vec<u8>)],
    /// Packets per [`Datapath::process_batch`] call (at most: a batch ends where the ingress
    /// port changes).
    batch: usize,
    clock: ManualClock,
    /// The next packet to send.
    next: usize,
    /// Packets that came out (all ports).
    outputs: u64,
    /// Packets the datapath refused with an error.
    errors: u64,
    first_error: Option<String>,
}

impl Runner<'_, '_> {
    /// Sends the next `n` packets, `batch` at a time, a batch ending early where the ingress
    /// port changes (the packet list is replayed in a loop, so a batch may wrap around it).
    fn burst(&mut self, mut n: usize) {
        let mut batch: Vec<&[u8]> = Vec::with_capacity(self.batch);
        while n > 0 {
            let port = self.packets[self.next].0;
            let mut k = 1;
            let limit = n.min(self.batch);
            while k < limit && self.packets[(self.next + k) % self.packets.len()].0 == port {
                k += 1;
            }
            n -= k;
            if k == 1 {
                self.one();
                continue;
            }
            batch.clear();
            for _ in 0..k {
                batch.push(&self.packets[self.next].1);
                self.next += 1;
                if self.next == self.packets.len() {
                    self.next = 0;
                }
            }
            let mut outputs = 0u64;
            let mut errors = 0u64;
            let mut first_error = None;
            let (dp, clock) = (&mut *self.dp, &self.clock);
            self.state.with(|state| {
                dp.process_batch_prefetching(
                    state,
                    &batch,
                    port,
                    clock,
                    Some(koi_ports::prefetch),
                    &mut |_, _, _| outputs += 1,
                    &mut |_, r| {
                        if let Err(e) = r {
                            errors += 1;
                            first_error.get_or_insert_with(|| e.to_string());
                        }
                    },
                )
            });
            self.outputs += outputs;
            self.errors += errors;
            if self.first_error.is_none() {
                self.first_error = first_error;
            }
        }
    }

    /// Sends the next packet alone.
    fn one(&mut self) {
        let i = self.next;
        self.next = if i + 1 == self.packets.len() {
            0
        } else {
            i + 1
        };
        let mut outputs = 0u64;
        let (dp, clock) = (&mut *self.dp, &self.clock);
        let (port, packet) = (self.packets[i].0, &self.packets[i].1);
        let r = self
            .state
            .with(|state| dp.process_with(state, packet, port, clock, &mut |_, _| outputs += 1));
        self.outputs += outputs;
        if let Err(e) = r {
            self.errors += 1;
            if self.first_error.is_none() {
                self.first_error = Some(e.to_string());
            }
        }
    }

    /// The warm-up: one pass over every packet (its TSC cycles are the cold-cache cost),
    /// then more passes until `secs` after `origin`; returns the first pass's cycles and the
    /// packets sent.
    fn warm_up(&mut self, origin: Instant, secs: f64, bar: &ProgressBar) -> (u64, u64) {
        let t0 = koi_ports::tsc();
        self.burst(self.packets.len());
        let first_pass_cycles = koi_ports::tsc().wrapping_sub(t0);
        let mut packets = self.packets.len() as u64;
        let budget = Duration::from_secs_f64(secs);
        while origin.elapsed() < budget {
            self.burst(CHECK_EVERY);
            packets += CHECK_EVERY as u64;
            self.tick(origin, bar);
        }
        (first_pass_cycles, packets)
    }

    /// Ends the warm-up: returns its datapath counters and outputs, and zeroes the counts for
    /// the timed run.
    fn end_warm_up(&mut self) -> (koi_datapath::DatapathStats, u64) {
        let warm = (self.dp.stats(), self.outputs);
        self.dp.reset_stats();
        self.outputs = 0;
        self.errors = 0;
        self.first_error = None;
        warm
    }

    /// The timed run: bursts until `budget` has passed (at least one), the progress bar
    /// showing the rate; returns the packets sent, the TSC cycles and the seconds it took.
    fn timed(&mut self, origin: Instant, budget: Duration, bar: &ProgressBar) -> (u64, u64, f64) {
        let start = Instant::now();
        let c0 = koi_ports::tsc();
        let mut n = 0u64;
        let mut next_msg = Duration::ZERO;
        loop {
            self.burst(CHECK_EVERY);
            n += CHECK_EVERY as u64;
            let el = self.tick(origin, bar);
            let timed = start.elapsed();
            if timed >= budget {
                break;
            }
            if el >= next_msg {
                next_msg = el + Duration::from_millis(250);
                let mpps = n as f64 / timed.as_secs_f64().max(1e-9) / 1e6;
                bar.set_message(format!("measuring: {mpps:.2} Mpps"));
            }
        }
        let cycles = koi_ports::tsc().wrapping_sub(c0);
        (n, cycles, start.elapsed().as_secs_f64())
    }

    /// The clock check between bursts: sets the datapath's clock and the progress bar to the
    /// time since `origin`, which it returns.
    fn tick(&mut self, origin: Instant, bar: &ProgressBar) -> Duration {
        let el = origin.elapsed();
        self.clock
            .set_ns(u64::try_from(el.as_nanos()).unwrap_or(u64::MAX));
        bar.set_position(u64::try_from(el.as_millis()).unwrap_or(u64::MAX));
        el
    }
}
