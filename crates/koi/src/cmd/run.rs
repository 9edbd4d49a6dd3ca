//! `koi run PROG.p4 --port N=SPEC... [--entries FILE] [--threads N]`: the switch. Compiles the
//! program, opens the ports (`N=IFNAME` is AF_PACKET on that interface, `N=pcap:IN,OUT` pcap
//! files, `N=tap:NAME` a TAP device), loads the entries, then forwards: each poll thread owns a
//! share of the ports' receive sides, sleeps in `poll(2)` until one has packets, takes a batch
//! of up to 32 and runs each packet through its own cached datapath ([`Datapath`]: microflow
//! cache, megaflow classifier, and on a miss the reference interpreter with wildcard tracking,
//! whose run is installed as a megaflow), then sends the outputs to the ports by number (an
//! output to a port number koi does not have is counted as a drop). Cache misses beyond
//! `--upcall-rate` per second and thread are dropped (counted as `upcall_limit`); the caches'
//! sizes and hit counters are shown by `koi ctl cache_show` and the metrics. `--no-cache` runs
//! every packet through the reference interpreter alone, as koi did before the caches.
//! SIGINT or SIGTERM stops it; it then prints every port's counters and each thread's cache
//! counters.
//!
//! A control socket (`--ctl PATH`, by default `/run/koi/koi.sock`, `$XDG_RUNTIME_DIR/koi.sock`
//! or `/tmp/koi-$UID.sock`: see [`super::ctl_server`]) lets `koi ctl` change and read the
//! state while the switch runs.
//!
//! Sharing: the runtime [`State`] sits behind one mutex, taken per packet (the datapath reads
//! tables on a miss and updates counters, meters and registers on every packet). The flow
//! caches are per thread, and stay consistent with the state through the invalidation log of
//! [`cache`]: the control socket records every change it makes under the state lock, and a
//! thread applies the changes recorded since its last packet before it processes the next
//! one, under the same lock; so no packet is forwarded by a flow computed from a state that a
//! `koi ctl` command has already changed. Each port sits behind its own mutex so any thread
//! can send to it; outputs are copied out of the state lock's critical section and sent after
//! it, so a thread never holds two of these locks at once and there is no lock order to get
//! wrong (the invalidation log's own lock is only ever taken inside the state lock).

pub mod cache;

use super::frontend::pp_options;
use cache::{CacheBoard, Change, InvalidationLog, Publisher};
use clap::Args;
use koi_datapath::{Datapath, DatapathConfig, PathTaken};
use koi_interp::Interpreter;
use koi_ports::{Batch, Poller, Port, PortSpec, Readiness, Wake};
use koi_state::{State, SystemClock};
use std::collections::HashMap;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

#[derive(Args, Debug)]
pub struct RunArgs {
    /// Add a directory to the `#include` search path.
    #[arg(short = 'I', value_name = "DIR")]
    pub include: Vec<PathBuf>,
    /// Define a preprocessor macro (`NAME` or `NAME=VALUE`).
    #[arg(short = 'D', value_name = "NAME[=VAL]")]
    pub define: Vec<String>,
    /// A port: `N=IFNAME` (AF_PACKET), `N=xdp:IFNAME[@QUEUE]` (AF_XDP, generic mode),
    /// `N=pcap:IN,OUT`, `N=tap:NAME`. Repeat for each port.
    #[arg(long = "port", value_name = "N=SPEC", required = true)]
    pub ports: Vec<String>,
    /// simple_switch_CLI commands to run before forwarding (table_add, mc_*, ...).
    #[arg(long, value_name = "FILE")]
    pub entries: Option<PathBuf>,
    /// Control socket for `koi ctl` (mode 0600). Default: `/run/koi/koi.sock` if `/run/koi` is
    /// writable, else `$XDG_RUNTIME_DIR/koi.sock`, else `/tmp/koi-$UID.sock`.
    #[arg(long, value_name = "PATH")]
    pub ctl: Option<PathBuf>,
    /// Serve Prometheus metrics (port, drop, table and cache counters) at `http://ADDR/metrics`.
    #[arg(long, value_name = "ADDR")]
    pub metrics: Option<std::net::SocketAddr>,
    /// Poll threads; the ports are dealt out among them. Each has its own flow caches.
    #[arg(long, default_value_t = 1)]
    pub threads: usize,
    /// Forward every packet through the reference interpreter alone, without flow caches.
    #[arg(long, conflicts_with_all = ["max_megaflows", "upcall_rate", "no_microflow"])]
    pub no_cache: bool,
    /// Megaflows per poll thread; beyond it the least recently hit ones are evicted.
    #[arg(long, value_name = "N", default_value_t = DatapathConfig::default().max_megaflows)]
    pub max_megaflows: usize,
    /// Cache misses (slow-path runs) allowed per second and poll thread; further misses are
    /// dropped and counted as `upcall_limit`. 0: unlimited.
    #[arg(long, value_name = "N", default_value_t = UPCALL_RATE)]
    pub upcall_rate: u64,
    /// Do without the microflow (exact-match) cache tier: every lookup goes to the megaflows.
    #[arg(long)]
    pub no_microflow: bool,
    /// The P4-16 program.
    pub program: PathBuf,
}

/// How long a poll thread sleeps at most before it checks for shutdown and retries idle ports.
const POLL_MS: i32 = 100;
/// Default `--upcall-rate`.
const UPCALL_RATE: u64 = 50_000;
/// Token bucket depth of the slow-path rate limit.
const UPCALL_BURST: u64 = 2_000;

/// One numbered port.
pub(super) struct Slot {
    pub(super) num: u64,
    pub(super) port: Mutex<Box<dyn Port>>,
}

/// Drops that belong to no port.
#[derive(Default)]
pub(super) struct Counters {
    pub(super) unknown_port: AtomicU64,
    pub(super) pipeline_errors: AtomicU64,
    /// Packets the program sent nowhere.
    pub(super) program_drops: AtomicU64,
    /// Cache misses dropped by the slow-path rate limit (`--upcall-rate`).
    pub(super) upcall_limit: AtomicU64,
}

impl Counters {
    /// The drops by reason, as `stats`, the metrics and the exit summary name them.
    pub(super) fn by_reason(&self) -> [(&'static str, u64); 4] {
        let get = |a: &AtomicU64| a.load(Ordering::Relaxed);
        [
            ("program", get(&self.program_drops)),
            ("unknown_port", get(&self.unknown_port)),
            ("pipeline_error", get(&self.pipeline_errors)),
            ("upcall_limit", get(&self.upcall_limit)),
        ]
    }
}

pub fn run(a: &RunArgs) -> ExitCode {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        // The code generator logs every function it compiles at `info`: not koi's news.
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info,cranelift=warn"));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .try_init();
    match switch(a) {
        Ok(()) => ExitCode::SUCCESS,
        Err((code, msg)) => {
            eprintln!("{msg}");
            ExitCode::from(code)
        }
    }
}

fn parse_port(s: &str) -> Result<(u64, PortSpec), String> {
    let (n, spec) = s
        .split_once('=')
        .ok_or_else(|| format!("--port {s}: expected N=SPEC"))?;
    let n: u64 = n
        .trim()
        .parse()
        .map_err(|_| format!("--port {s}: `{n}` is not a port number"))?;
    Ok((n, PortSpec::parse(spec).map_err(|e| e.to_string())?))
}

pub(super) fn lock<T: ?Sized>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// The datapath configuration of the cache flags; `None` with `--no-cache`.
fn cache_config(a: &RunArgs) -> Result<Option<DatapathConfig>, String> {
    if a.no_cache {
        return Ok(None);
    }
    if a.max_megaflows == 0 {
        return Err("koi: --max-megaflows must be at least 1".into());
    }
    Ok(Some(DatapathConfig {
        max_megaflows: a.max_megaflows,
        microflow: !a.no_microflow,
        upcall_rate: a.upcall_rate,
        upcall_burst: UPCALL_BURST,
        ..DatapathConfig::default()
    }))
}

fn switch(a: &RunArgs) -> Result<(), (u8, String)> {
    let mut specs = Vec::new();
    for s in &a.ports {
        let (n, spec) = parse_port(s).map_err(|e| (2, format!("koi: {e}")))?;
        if specs.iter().any(|(m, _)| *m == n) {
            return Err((2, format!("koi: port {n} given twice")));
        }
        specs.push((n, spec));
    }
    let config = cache_config(a).map_err(|e| (2, e))?;
    let opts = pp_options(&a.include, &a.define);
    let compiled = koi_conformance::compile(&a.program, &opts).map_err(|e| (1, e.render()))?;
    let p = &compiled.pipeline;
    let mut state = State::new(p).map_err(|e| (1, format!("koi: {e}")))?;
    if let Some(f) = &a.entries {
        let n = super::entries::load(&mut state, f).map_err(|e| (1, format!("koi: {e}")))?;
        tracing::info!(commands = n, file = %f.display(), "entries loaded");
    }
    // Fail before opening ports if the datapath cannot run this pipeline.
    match &config {
        Some(c) => Datapath::with_config(p, koi_interp::Options::default(), c.clone())
            .map(drop)
            .map_err(|e| (1, format!("koi: {e}")))?,
        None => Interpreter::new(p)
            .map(drop)
            .map_err(|e| (1, format!("koi: {e}")))?,
    }
    let ctl_path = a
        .ctl
        .clone()
        .unwrap_or_else(|| super::ctl_server::default_path(true));
    let ctl =
        super::ctl_server::CtlSocket::bind(&ctl_path).map_err(|e| (1, format!("koi: {e}")))?;
    eprintln!("koi: control socket {}", ctl.path().display());
    let metrics = match a.metrics {
        Some(addr) => {
            let l = std::net::TcpListener::bind(addr)
                .map_err(|e| (1, format!("koi: --metrics {addr}: {e}")))?;
            eprintln!("koi: metrics at http://{addr}/metrics");
            Some(l)
        }
        None => None,
    };
    let mut slots = Vec::new();
    for (n, spec) in &specs {
        let port = koi_ports::open(spec).map_err(|e| (1, format!("koi: port {n}: {e}")))?;
        tracing::info!(port = n, name = port.name(), "port open");
        slots.push(Slot {
            num: *n,
            port: Mutex::new(port),
        });
    }
    let stop = Arc::new(AtomicBool::new(false));
    for sig in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        signal_hook::flag::register(sig, Arc::clone(&stop))
            .map_err(|e| (1, format!("koi: cannot handle signals: {e}")))?;
    }
    let threads = a.threads.clamp(1, slots.len().max(1));
    let by_num: HashMap<u64, usize> = slots.iter().enumerate().map(|(i, s)| (s.num, i)).collect();
    let state = Mutex::new(state);
    let counters = Counters::default();
    let clock = SystemClock::new();
    let invalidations = InvalidationLog::default();
    let caches = CacheBoard::new(config, threads);
    let shared = Shared {
        pipeline: p,
        slots: &slots,
        by_num: &by_num,
        state: &state,
        invalidations: &invalidations,
        caches: &caches,
        counters: &counters,
        clock: &clock,
        stop: &stop,
    };
    tracing::info!(
        ports = slots.len(),
        threads,
        cache = caches.config.is_some(),
        "forwarding"
    );
    std::thread::scope(|s| {
        for t in 0..threads {
            let mine: Vec<usize> = (t..slots.len()).step_by(threads).collect();
            let shared = &shared;
            let spawned = std::thread::Builder::new()
                .name(format!("koi-poll-{t}"))
                .spawn_scoped(s, move || shared.poll_loop(t, &mine));
            if let Err(e) = spawned {
                tracing::error!(error = %e, "cannot start a poll thread");
                stop.store(true, Ordering::Relaxed);
            }
        }
        let (shared, ctl) = (&shared, &ctl);
        let spawned = std::thread::Builder::new()
            .name("koi-ctl".into())
            .spawn_scoped(s, move || super::ctl_server::serve(ctl, shared));
        if let Err(e) = spawned {
            tracing::error!(error = %e, "cannot start the control socket thread");
            stop.store(true, Ordering::Relaxed);
        }
        if let Some(l) = &metrics {
            let spawned = std::thread::Builder::new()
                .name("koi-metrics".into())
                .spawn_scoped(s, move || super::metrics::serve(l, shared));
            if let Err(e) = spawned {
                tracing::error!(error = %e, "cannot start the metrics thread");
                stop.store(true, Ordering::Relaxed);
            }
        }
    });
    tracing::info!("stopped");
    for slot in &slots {
        let mut port = lock(&slot.port);
        let _ = port.flush();
        println!("port {} ({}): {}", slot.num, port.name(), port.stats());
    }
    let drops: Vec<String> = counters
        .by_reason()
        .iter()
        .map(|(r, n)| format!("{r} {n}"))
        .collect();
    println!("drops without a port: {}", drops.join(" "));
    for (t, snap) in caches.snapshots().iter().enumerate() {
        if let Some(s) = snap {
            let st = &s.stats;
            println!(
                "cache (thread {t}): packets {} microflow_hits {} megaflow_hits {} misses {} \
                 upcalls_limited {} megaflows {}",
                st.packets,
                st.microflow_hits,
                st.megaflow_hits,
                st.misses,
                st.upcalls_limited,
                s.info.megaflows
            );
        }
    }
    Ok(())
}

/// What the poll threads, the control socket and the metrics share.
pub(super) struct Shared<'a> {
    pub(super) pipeline: &'a koi_ir::Pipeline,
    pub(super) slots: &'a [Slot],
    by_num: &'a HashMap<u64, usize>,
    pub(super) state: &'a Mutex<State>,
    /// Control-plane changes the poll threads' caches must catch up with; appended to only
    /// while holding `state`.
    pub(super) invalidations: &'a InvalidationLog,
    pub(super) caches: &'a CacheBoard,
    pub(super) counters: &'a Counters,
    pub(super) clock: &'a SystemClock,
    pub(super) stop: &'a AtomicBool,
}

/// How a poll thread processes packets.
enum Engine<'p> {
    /// `--no-cache`.
    Interpreter(Box<Interpreter<'p>>),
    /// The cached datapath, up to date with the invalidation log's epoch `seen`.
    Cached { dp: Box<Datapath<'p>>, seen: u64 },
}

/// The output packets of one input packet, copied out of the state lock's critical section:
/// `bytes` holds them back to back, `outs` their ports and lengths. Reused across packets.
#[derive(Default)]
struct Outputs {
    bytes: Vec<u8>,
    /// Per output: the index of the packet it came from, its port and its length.
    outs: Vec<(usize, u64, usize)>,
}

impl Outputs {
    fn clear(&mut self) {
        self.bytes.clear();
        self.outs.clear();
    }

    fn push(&mut self, packet: usize, port: u64, bytes: &[u8]) {
        self.bytes.extend_from_slice(bytes);
        self.outs.push((packet, port, bytes.len()));
    }

    /// The outputs in order: packet index, port, bytes.
    fn iter(&self) -> impl Iterator<Item = (usize, u64, &[u8])> {
        let mut at = 0;
        self.outs.iter().map(move |&(k, port, len)| {
            let b = &self.bytes[at..at + len];
            at += len;
            (k, port, b)
        })
    }
}

/// What became of one packet of a batch: the path it took (`None` on the interpreter
/// alone), why processing stopped early if it did, or the pipeline's error.
type Fate = Result<(Option<PathTaken>, Option<String>), String>;

impl Shared<'_> {
    /// The engine of a poll thread, or why there is none.
    fn engine(&self) -> Result<Engine<'_>, String> {
        Ok(match &self.caches.config {
            Some(c) => {
                // Changes recorded before this point concern caches that are still empty.
                let seen = self.invalidations.epoch();
                let dp =
                    Datapath::with_config(self.pipeline, koi_interp::Options::default(), c.clone())
                        .map_err(|e| e.to_string())?;
                Engine::Cached {
                    dp: Box::new(dp),
                    seen,
                }
            }
            None => Engine::Interpreter(Box::new(
                Interpreter::new(self.pipeline).map_err(|e| e.to_string())?,
            )),
        })
    }

    /// Forwards packets received on the ports `mine` (indices into `slots`) until stopped;
    /// `t` numbers the thread.
    fn poll_loop(&self, t: usize, mine: &[usize]) {
        let mut engine = match self.engine() {
            Ok(e) => e,
            Err(e) => {
                tracing::error!(error = %e, "cannot start the datapath");
                self.stop.store(true, Ordering::Relaxed);
                return;
            }
        };
        let mut publisher = Publisher::new(self.caches, t);
        let mut outputs = Outputs::default();
        let mut fates: Vec<Fate> = Vec::new();
        let mut batch = Batch::new(koi_ports::DEFAULT_SNAPLEN);
        let mut poller = Poller::new();
        let mut ready: Vec<Readiness> = Vec::with_capacity(mine.len());
        let mut touched = vec![false; self.slots.len()];
        while !self.stop.load(Ordering::Relaxed) {
            if let Engine::Cached { dp, seen } = &mut engine {
                // Idle caches catch up too, so that what they show and hold is current.
                *seen = self.invalidations.catch_up(*seen, dp);
                publisher.tick(dp, *seen, false);
            }
            ready.clear();
            ready.extend(mine.iter().map(|&i| lock(&self.slots[i].port).readiness()));
            if let Err(e) = poller.wait(&ready, POLL_MS) {
                tracing::error!(error = %e, "poll failed");
                self.stop.store(true, Ordering::Relaxed);
                break;
            }
            for (k, &i) in mine.iter().enumerate() {
                let slot = &self.slots[i];
                let wake = poller.wake(k);
                if wake == Wake::Nothing && ready[k] != Readiness::Idle {
                    continue;
                }
                {
                    let mut port = lock(&slot.port);
                    if wake == Wake::Error {
                        port.handle_error();
                    }
                    if let Err(e) = port.recv_batch(&mut batch) {
                        tracing::debug!(port = slot.num, error = %e, "receive failed");
                    }
                }
                self.forward(
                    &mut engine,
                    &mut outputs,
                    &mut fates,
                    batch.packets(),
                    slot.num,
                    &mut touched,
                );
                for (j, t) in touched.iter_mut().enumerate() {
                    if std::mem::take(t) {
                        let _ = lock(&self.slots[j].port).flush();
                    }
                }
            }
        }
        if let Engine::Cached { dp, seen } = &engine {
            publisher.tick(dp, *seen, true);
        }
    }

    /// Runs the packets received on `port` through the pipeline (the cached datapath takes
    /// them as one batch) and sends what comes out, in order.
    fn forward(
        &self,
        engine: &mut Engine<'_>,
        outputs: &mut Outputs,
        fates: &mut Vec<Fate>,
        packets: &[Vec<u8>],
        port: u64,
        touched: &mut [bool],
    ) {
        outputs.clear();
        fates.clear();
        {
            let mut state = lock(self.state);
            match engine {
                Engine::Interpreter(interp) => {
                    for (k, pkt) in packets.iter().enumerate() {
                        let fate = interp.process(&mut state, pkt, port, self.clock).map(|o| {
                            for out in &o.outputs {
                                outputs.push(k, out.port, &out.bytes);
                            }
                            (None, o.report.aborted)
                        });
                        fates.push(fate.map_err(|e| e.to_string()));
                    }
                }
                Engine::Cached { dp, seen } => {
                    *seen = self.invalidations.catch_up(*seen, dp);
                    dp.process_batch_prefetching(
                        &mut state,
                        packets,
                        port,
                        self.clock,
                        Some(koi_ports::prefetch),
                        &mut |k, p, b| outputs.push(k, p, b),
                        &mut |_, r| {
                            fates.push(
                                r.map(|s| (Some(s.path), s.aborted.clone()))
                                    .map_err(|e| e.to_string()),
                            )
                        },
                    );
                }
            }
        }
        let mut sent = outputs.iter().peekable();
        for (k, fate) in fates.iter().enumerate() {
            let mine = std::iter::from_fn(|| sent.next_if(|(j, _, _)| *j == k));
            let (path, aborted) = match fate {
                Ok(r) => r,
                Err(e) => {
                    tracing::debug!(port, error = %e, "pipeline error");
                    self.counters
                        .pipeline_errors
                        .fetch_add(1, Ordering::Relaxed);
                    mine.for_each(drop);
                    continue;
                }
            };
            if let Some(why) = aborted {
                tracing::debug!(port, why, "processing stopped early");
            }
            if *path == Some(PathTaken::Limited) {
                self.counters.upcall_limit.fetch_add(1, Ordering::Relaxed);
                mine.for_each(drop);
                continue;
            }
            let mut any = false;
            for (_, out_port, bytes) in mine {
                any = true;
                let Some(&j) = self.by_num.get(&out_port) else {
                    self.counters.unknown_port.fetch_add(1, Ordering::Relaxed);
                    continue;
                };
                // Failures are counted by the port itself.
                if let Err(e) = lock(&self.slots[j].port).send(bytes) {
                    tracing::debug!(port = out_port, error = %e, "send failed");
                }
                touched[j] = true;
            }
            if !any {
                self.counters.program_drops.fetch_add(1, Ordering::Relaxed);
            }
        }
    }

    /// Records, under the state lock held as `_state`, that a control-plane command changed
    /// the state: `change` for the flow caches of every poll thread.
    pub(super) fn state_changed(&self, _state: &mut State, change: Change) {
        self.invalidations.record(change);
    }
}
