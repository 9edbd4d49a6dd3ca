//! `koi run PROG.p4 --port N=SPEC... [--entries FILE] [--threads N]`: the switch. Compiles the
//! program, opens the ports (`N=IFNAME` is AF_PACKET on that interface, `N=pcap:IN,OUT` pcap
//! files, `N=tap:NAME` a TAP device), loads the entries, then forwards: each poll thread owns a
//! share of the ports' receive sides, sleeps in `poll(2)` until one has packets, takes a batch
//! of up to 32, runs each packet through its own reference interpreter and sends the outputs
//! to the ports by number (an output to a port number koi does not have is counted as a drop).
//! SIGINT or SIGTERM stops it; it then prints every port's counters.
//!
//! A control socket (`--ctl PATH`, by default `/run/koi/koi.sock`, `$XDG_RUNTIME_DIR/koi.sock`
//! or `/tmp/koi-$UID.sock`: see [`super::ctl_server`]) lets `koi ctl` change and read the
//! state while the switch runs.
//!
//! Sharing: the runtime [`State`] sits behind one mutex, taken per packet; this is the place
//! the cached datapath (microflow/megaflow caches with per-thread lookups) will replace. Each
//! port sits behind its own mutex so any thread can send to it; a thread never holds two of
//! these locks at once, so there is no lock order to get wrong.

use super::frontend::pp_options;
use clap::Args;
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
    /// A port: `N=IFNAME` (AF_PACKET), `N=pcap:IN,OUT`, `N=tap:NAME`. Repeat for each port.
    #[arg(long = "port", value_name = "N=SPEC", required = true)]
    pub ports: Vec<String>,
    /// simple_switch_CLI commands to run before forwarding (table_add, mc_*, ...).
    #[arg(long, value_name = "FILE")]
    pub entries: Option<PathBuf>,
    /// Control socket for `koi ctl` (mode 0600). Default: `/run/koi/koi.sock` if `/run/koi` is
    /// writable, else `$XDG_RUNTIME_DIR/koi.sock`, else `/tmp/koi-$UID.sock`.
    #[arg(long, value_name = "PATH")]
    pub ctl: Option<PathBuf>,
    /// Serve Prometheus metrics (port, drop and table counters) at `http://ADDR/metrics`.
    #[arg(long, value_name = "ADDR")]
    pub metrics: Option<std::net::SocketAddr>,
    /// Poll threads; the ports are dealt out among them.
    #[arg(long, default_value_t = 1)]
    pub threads: usize,
    /// The P4-16 program.
    pub program: PathBuf,
}

/// How long a poll thread sleeps at most before it checks for shutdown and retries idle ports.
const POLL_MS: i32 = 100;

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
}

pub fn run(a: &RunArgs) -> ExitCode {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
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

fn switch(a: &RunArgs) -> Result<(), (u8, String)> {
    let mut specs = Vec::new();
    for s in &a.ports {
        let (n, spec) = parse_port(s).map_err(|e| (2, format!("koi: {e}")))?;
        if specs.iter().any(|(m, _)| *m == n) {
            return Err((2, format!("koi: port {n} given twice")));
        }
        specs.push((n, spec));
    }
    let opts = pp_options(&a.include, &a.define);
    let compiled = koi_conformance::compile(&a.program, &opts).map_err(|e| (1, e.render()))?;
    let p = &compiled.pipeline;
    let mut state = State::new(p).map_err(|e| (1, format!("koi: {e}")))?;
    if let Some(f) = &a.entries {
        let n = super::entries::load(&mut state, f).map_err(|e| (1, format!("koi: {e}")))?;
        tracing::info!(commands = n, file = %f.display(), "entries loaded");
    }
    // Fail before opening ports if the interpreter cannot run this pipeline.
    Interpreter::new(p).map_err(|e| (1, format!("koi: {e}")))?;
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
    let shared = Shared {
        pipeline: p,
        slots: &slots,
        by_num: &by_num,
        state: &state,
        counters: &counters,
        clock: &clock,
        stop: &stop,
    };
    tracing::info!(ports = slots.len(), threads, "forwarding");
    std::thread::scope(|s| {
        for t in 0..threads {
            let mine: Vec<usize> = (t..slots.len()).step_by(threads).collect();
            let shared = &shared;
            let spawned = std::thread::Builder::new()
                .name(format!("koi-poll-{t}"))
                .spawn_scoped(s, move || shared.poll_loop(&mine));
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
    println!(
        "drops without a port: program {} unknown_port {} pipeline_error {}",
        counters.program_drops.load(Ordering::Relaxed),
        counters.unknown_port.load(Ordering::Relaxed),
        counters.pipeline_errors.load(Ordering::Relaxed)
    );
    Ok(())
}

/// What the poll threads and the control socket share.
pub(super) struct Shared<'a> {
    pub(super) pipeline: &'a koi_ir::Pipeline,
    pub(super) slots: &'a [Slot],
    by_num: &'a HashMap<u64, usize>,
    pub(super) state: &'a Mutex<State>,
    pub(super) counters: &'a Counters,
    pub(super) clock: &'a SystemClock,
    pub(super) stop: &'a AtomicBool,
}

impl Shared<'_> {
    /// Forwards packets received on the ports `mine` (indices into `slots`) until stopped.
    fn poll_loop(&self, mine: &[usize]) {
        let mut interp = match Interpreter::new(self.pipeline) {
            Ok(i) => i,
            Err(e) => {
                tracing::error!(error = %e, "cannot start the interpreter");
                self.stop.store(true, Ordering::Relaxed);
                return;
            }
        };
        let mut batch = Batch::new(koi_ports::DEFAULT_SNAPLEN);
        let mut poller = Poller::new();
        let mut ready: Vec<Readiness> = Vec::with_capacity(mine.len());
        let mut touched = vec![false; self.slots.len()];
        while !self.stop.load(Ordering::Relaxed) {
            ready.clear();
            ready.extend(mine.iter().map(|&i| lock(&self.slots[i].port).readiness()));
            if let Err(e) = poller.wait(&ready, POLL_MS) {
                tracing::error!(error = %e, "poll failed");
                self.stop.store(true, Ordering::Relaxed);
                return;
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
                for pkt in batch.iter() {
                    self.forward(&mut interp, pkt, slot.num, &mut touched);
                }
                for (j, t) in touched.iter_mut().enumerate() {
                    if std::mem::take(t) {
                        let _ = lock(&self.slots[j].port).flush();
                    }
                }
            }
        }
    }

    /// Runs one packet through the pipeline and sends what comes out.
    fn forward(&self, interp: &mut Interpreter<'_>, pkt: &[u8], port: u64, touched: &mut [bool]) {
        let outcome = {
            let mut state = lock(self.state);
            interp.process(&mut state, pkt, port, self.clock)
        };
        let outcome = match outcome {
            Ok(o) => o,
            Err(e) => {
                tracing::debug!(port, error = %e, "pipeline error");
                self.counters
                    .pipeline_errors
                    .fetch_add(1, Ordering::Relaxed);
                return;
            }
        };
        if outcome.outputs.is_empty() {
            self.counters.program_drops.fetch_add(1, Ordering::Relaxed);
        }
        for out in &outcome.outputs {
            let Some(&j) = self.by_num.get(&out.port) else {
                self.counters.unknown_port.fetch_add(1, Ordering::Relaxed);
                continue;
            };
            // Failures are counted by the port itself.
            if let Err(e) = lock(&self.slots[j].port).send(&out.bytes) {
                tracing::debug!(port = out.port, error = %e, "send failed");
            }
            touched[j] = true;
        }
    }
}
