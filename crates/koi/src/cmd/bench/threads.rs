//! `koi bench --threads N`: N forwarding threads, each with its own datapath (caches,
//! compiled programs) and its own replica of one master state (`koi_state::replica`:
//! tables copied, counters counted apart, registers and meters in the master under its
//! lock for the rest of a packet), as `koi run --threads N`'s poll threads use a pipeline
//! image's state. Each thread replays the
//! packets from its own place in the list (thread t from packet t·len/N), pinned to a core of
//! its own when it can be; they warm up apart, then run the timed part together. The report
//! is the single-thread one over all threads: the total rate (wall clock), cycles per packet
//! summed over the threads' cores, the counters of every thread added up; the cache figures
//! are thread 0's (each thread has caches of its own).

use super::report::{self, Report};
use super::{BenchArgs, Failure, Runner, StateRef, pin, print_report};
use indicatif::ProgressBar;
use koi_datapath::{CacheInfo, Datapath, DatapathConfig, DatapathStats};
use koi_ir::Pipeline;
use koi_state::{ManualClock, State};
use std::collections::BTreeMap;
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

/// What one thread measured.
struct Measured {
    core: Option<usize>,
    warm_seconds: f64,
    warm_packets: u64,
    first_pass_cycles: u64,
    warm_outputs: u64,
    warm_stats: DatapathStats,
    packets: u64,
    /// The timed part's wall-clock seconds.
    seconds: f64,
    cycles: u64,
    stats: DatapathStats,
    outputs: u64,
    errors: u64,
    first_error: Option<String>,
    info: CacheInfo,
    empty_bytes: usize,
    replayed: BTreeMap<&'static str, u64>,
}

#[allow(clippy::too_many_arguments)]
pub(super) fn bench(
    a: &BenchArgs,
    p: &Pipeline,
    state: State,
    packets: Vec<(u64, Vec<u8>)>,
    config: DatapathConfig,
    source: report::Source,
) -> Result<(), Failure> {
    let n = a.threads;
    let master: koi_state::Master = Arc::new(parking_lot::Mutex::new(state));
    let replicas: Vec<parking_lot::Mutex<State>> = {
        let m = master.lock();
        (0..n)
            .map(|_| parking_lot::Mutex::new(State::replica(&master, &m)))
            .collect()
    };
    let ready = Barrier::new(n);
    let base = a.core.unwrap_or(0);
    let cpus = std::thread::available_parallelism().map_or(1, |c| c.get());
    let results: Vec<Result<Measured, String>> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..n)
            .map(|t| {
                let (shared, ready, packets, config) = (&replicas[t], &ready, &packets, &config);
                s.spawn(move || {
                    one_thread(a, p, t, shared, ready, packets, config, (base + t) % cpus)
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().unwrap_or_else(|_| Err("a thread panicked".into())))
            .collect()
    });
    let mut runs = Vec::new();
    for r in results {
        runs.push(r.map_err(|e| (1, format!("koi: {e}")))?);
    }
    let mut stats = DatapathStats::default();
    let mut warm_stats = DatapathStats::default();
    let (mut total, mut cycles, mut outputs, mut errors) = (0, 0, 0, 0);
    let (mut warm_packets, mut warm_outputs, mut first_pass_cycles) = (0, 0, 0);
    let mut first_error = None;
    for r in &runs {
        stats.add(&r.stats);
        warm_stats.add(&r.warm_stats);
        total += r.packets;
        cycles += r.cycles;
        outputs += r.outputs;
        errors += r.errors;
        warm_packets += r.warm_packets;
        warm_outputs += r.warm_outputs;
        first_pass_cycles += r.first_pass_cycles;
        if first_error.is_none() {
            first_error = r.first_error.clone();
        }
    }
    let first = &runs[0];
    // The timed parts ran together: the wall clock is the longest of them.
    let seconds = runs.iter().map(|r| r.seconds).fold(1e-9, f64::max);
    let report = Report::new(report::Inputs {
        program: a
            .program
            .as_deref()
            .or(a.pof_config.as_deref())
            .unwrap_or(std::path::Path::new("")),
        entries: a.entries.as_deref(),
        source,
        port: a.port,
        ports: super::ports_of(&packets),
        core: first.core,
        microflow: !a.no_microflow,
        jit: !a.no_jit,
        batch: a.batch,
        profile: !a.no_profile,
        seconds_asked: a.seconds,
        warmup: report::WarmupInputs {
            seconds: first.warm_seconds,
            packets: warm_packets,
            first_pass_packets: (packets.len() * n) as u64,
            first_pass_cycles,
            outputs: warm_outputs,
            stats: warm_stats,
        },
        packets: total,
        seconds,
        cycles,
        stats,
        info: first.info,
        replayed: first.replayed.clone(),
        empty_bytes: first.empty_bytes,
        outputs,
        errors,
        first_error,
        threads: runs
            .iter()
            .map(|r| report::ThreadRun {
                core: r.core,
                packets: r.packets,
                mpps: r.packets as f64 / r.seconds.max(1e-9) / 1e6,
            })
            .collect(),
    });
    print_report(a, &report, warm_outputs + outputs)
}

/// Thread `t`: warms up, waits for the others, runs `--seconds`.
#[allow(clippy::too_many_arguments)]
fn one_thread(
    a: &BenchArgs,
    p: &Pipeline,
    t: usize,
    shared: &parking_lot::Mutex<State>,
    ready: &Barrier,
    packets: &[(u64, Vec<u8>)],
    config: &DatapathConfig,
    cpu: usize,
) -> Result<Measured, String> {
    let core = pin(Some(cpu)).ok();
    let mut dp = Datapath::with_config(p, koi_interp::Options::default(), config.clone())
        .map_err(|e| e.to_string())?;
    let empty_bytes = dp.cache_info().memory_bytes;
    let mut run = Runner {
        dp: &mut dp,
        state: StateRef::Replica(shared),
        packets,
        batch: a.batch,
        clock: ManualClock::new(0),
        next: t * packets.len() / a.threads,
        outputs: 0,
        errors: 0,
        first_error: None,
    };
    let origin = Instant::now();
    let bar = ProgressBar::hidden();
    let (first_pass_cycles, warm_packets) = run.warm_up(origin, a.warmup, &bar);
    let warm_seconds = origin.elapsed().as_secs_f64();
    let (warm_stats, warm_outputs) = run.end_warm_up();
    ready.wait();
    let (n, cycles, seconds) = run.timed(origin, Duration::from_secs_f64(a.seconds), &bar);
    let stats = run.dp.stats();
    let (outputs, errors, first_error) = (run.outputs, run.errors, run.first_error.take());
    Ok(Measured {
        core,
        warm_seconds,
        warm_packets,
        first_pass_cycles,
        warm_outputs,
        warm_stats,
        packets: n,
        seconds,
        cycles,
        stats,
        outputs,
        errors,
        first_error,
        info: dp.cache_info(),
        empty_bytes,
        replayed: dp.not_compiled_reasons().clone(),
    })
}
