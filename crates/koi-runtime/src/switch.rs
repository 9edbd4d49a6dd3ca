//! The **switch**: its ports, its pipelines, its poll threads, and the control API that every
//! client uses (`koi ctl` through [`crate::ctl_socket`], the P4Runtime server, the metrics
//! endpoint, tests).
//!
//! ```text
//!   ports (AF_PACKET, AF_XDP, pcap, TAP) ─► poll threads ─► pipeline's current image
//!        ▲                                   (a Datapath per image: caches + interpreter)
//!        └───────── outputs by port number ◄─┘   └─► CPU port: Events::packet_in; digests
//!   control API: Switch::{pipeline, command, packet_out, ports, stats}
//!                Pipeline::{load, image, set_events}   Image::{update, read}
//! ```
//!
//! Each port is bound to one pipeline, and port numbers are the pipeline's own: a program
//! sends only to its pipeline's ports (and its CPU port). A **patch port** (P4rt-OVS's) joins
//! port `a` of one pipeline to port `b` of another inside the process: what the first sends to
//! `a` enters the second as if received on `b`, and the reverse, so that pipelines can be
//! chained (a firewall in front of a router). A packet crosses at most [`MAX_PASSES`]
//! pipelines; beyond that it is dropped and counted (`patch_loop`), so a loop of patch ports
//! cannot spin. Each poll thread owns a share of the ports' receive sides and, for each
//! pipeline its ports feed, an engine over that pipeline's current image (see
//! [`crate::poll`]); packets handed over a patch port are processed by the same thread, after
//! the batch that sent them. Sending goes through each port's own mutex, so any thread can
//! send to any port. [`Switch::start`] opens everything and starts the threads; [`Switch::stop`] asks
//! them to finish and [`Switch::join`] waits for them.

use crate::lock;
use crate::pipeline::{Pipeline, PipelineConfig};
use crate::program::Program;
use koi_datapath::DatapathConfig;
use koi_ports::{Port, PortSpec};
use koi_state::{State, SystemClock};
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Instant;

/// The most pipelines a packet passes through over patch ports (the first included).
pub const MAX_PASSES: u8 = 8;

/// One end of a patch port: (pipeline index, port number).
pub type PatchEnd = (usize, u64);

/// A packet handed over a patch port: the pipeline (index) and port it enters on, how many
/// pipelines it has passed through, its bytes.
pub(crate) type Patched = (usize, u64, u8, Vec<u8>);

/// One numbered port, bound to a pipeline.
pub struct PortSlot {
    pub num: u64,
    /// Index of its pipeline in [`Switch::pipelines`].
    pub pipeline: usize,
    pub port: Mutex<Box<dyn Port>>,
}

/// Drops that belong to no port.
#[derive(Debug, Default)]
pub struct Counters {
    pub unknown_port: AtomicU64,
    pub pipeline_errors: AtomicU64,
    /// Packets the program sent nowhere.
    pub program_drops: AtomicU64,
    /// Cache misses dropped by the slow-path rate limit (`--upcall-rate`).
    pub upcall_limit: AtomicU64,
    /// Packets that arrived while their pipeline had no program.
    pub no_program: AtomicU64,
    /// Packets dropped after passing through [`MAX_PASSES`] pipelines over patch ports.
    pub patch_loop: AtomicU64,
}

impl Counters {
    /// The drops by reason, as `stats`, the metrics and the exit summary name them.
    pub fn by_reason(&self) -> [(&'static str, u64); 6] {
        let get = |a: &AtomicU64| a.load(Ordering::Relaxed);
        [
            ("program", get(&self.program_drops)),
            ("unknown_port", get(&self.unknown_port)),
            ("pipeline_error", get(&self.pipeline_errors)),
            ("upcall_limit", get(&self.upcall_limit)),
            ("no_program", get(&self.no_program)),
            ("patch_loop", get(&self.patch_loop)),
        ]
    }
}

/// What runs on a program's fresh state before it forwards (an entries file).
pub type StateInit = Box<dyn FnOnce(&mut State) -> Result<(), String> + Send>;

/// A pipeline to set up, with the program to load into it at start (if any).
pub struct PipelineSetup {
    pub config: PipelineConfig,
    pub program: Option<Arc<Program>>,
    /// Runs on the program's fresh state before forwarding starts (an entries file).
    pub init: Option<StateInit>,
}

/// How to start a switch.
pub struct SwitchConfig {
    pub pipelines: Vec<PipelineSetup>,
    /// The ports: number (the pipeline's own), how to open it, and the index of its pipeline
    /// in `pipelines`.
    pub ports: Vec<(u64, PortSpec, usize)>,
    /// Patch ports: (pipeline index, port number) pairs joined inside the process.
    pub patches: Vec<(PatchEnd, PatchEnd)>,
    /// Poll threads (at most one per port is used).
    pub threads: usize,
    /// The flow caches' configuration; `None`: every packet through the interpreter.
    pub cache: Option<DatapathConfig>,
}

/// A running switch. Shared (`Arc`) by its poll threads and its control clients.
pub struct Switch {
    pub(crate) ports: Vec<PortSlot>,
    /// (pipeline index, port number) to index in `ports`.
    by_num: HashMap<(usize, u64), usize>,
    /// (pipeline index, port number) of one end of a patch to the other end.
    patches: HashMap<(usize, u64), (usize, u64)>,
    pipelines: Vec<Arc<Pipeline>>,
    pub counters: Counters,
    clock: SystemClock,
    stop: AtomicBool,
    started: Instant,
    threads: Mutex<Vec<JoinHandle<()>>>,
}

impl Switch {
    /// Opens the ports, loads the pipelines' programs and starts the poll threads. Fails (and
    /// opens nothing that stays open) if a port cannot be opened or a program not loaded.
    pub fn start(cfg: SwitchConfig) -> Result<Arc<Switch>, String> {
        let threads = cfg.threads.clamp(1, cfg.ports.len().max(1));
        let mut pipelines = Vec::new();
        let mut seen_ids = Vec::new();
        for p in &cfg.pipelines {
            if seen_ids.contains(&p.config.device_id) {
                return Err(format!(
                    "two pipelines have device id {}",
                    p.config.device_id
                ));
            }
            seen_ids.push(p.config.device_id);
            pipelines.push(Arc::new(Pipeline::new(
                p.config.clone(),
                pipelines.len(),
                cfg.cache.clone(),
                threads,
            )));
        }
        let mut by_num = HashMap::new();
        for (i, (n, _, p)) in cfg.ports.iter().enumerate() {
            let Some(pl) = pipelines.get(*p) else {
                return Err(format!("port {n}: no pipeline {p}"));
            };
            if by_num.insert((*p, *n), i).is_some() {
                return Err(format!("port {n} of pipeline {} given twice", pl.name()));
            }
            if pl.cpu_port() == Some(*n) {
                return Err(format!(
                    "port {n} is the CPU port of pipeline {}: it cannot be a port too",
                    pl.name()
                ));
            }
        }
        let mut patches = HashMap::new();
        for &(a, b) in &cfg.patches {
            for (p, n) in [a, b] {
                let Some(pl) = pipelines.get(p) else {
                    return Err(format!("patch port {n}: no pipeline {p}"));
                };
                if by_num.contains_key(&(p, n))
                    || patches.contains_key(&(p, n))
                    || pl.cpu_port() == Some(n)
                {
                    return Err(format!(
                        "patch port {n} of pipeline {}: the number is taken",
                        pl.name()
                    ));
                }
            }
            if a == b {
                return Err(format!("patch port {}: joined to itself", a.1));
            }
            patches.insert(a, b);
            patches.insert(b, a);
        }
        for (setup, pl) in cfg.pipelines.into_iter().zip(&pipelines) {
            if let Some(program) = setup.program {
                let init = setup.init.unwrap_or_else(|| Box::new(|_| Ok(())));
                pl.load(program, init)?;
            }
        }
        let mut ports = Vec::new();
        for (n, spec, p) in &cfg.ports {
            let port = koi_ports::open(spec).map_err(|e| format!("port {n}: {e}"))?;
            tracing::info!(port = n, name = port.name(), "port open");
            ports.push(PortSlot {
                num: *n,
                pipeline: *p,
                port: Mutex::new(port),
            });
        }
        let sw = Arc::new(Switch {
            ports,
            by_num,
            patches,
            pipelines,
            counters: Counters::default(),
            clock: SystemClock::new(),
            stop: AtomicBool::new(false),
            started: Instant::now(),
            threads: Mutex::new(Vec::new()),
        });
        for t in 0..threads {
            let mine: Vec<usize> = (t..sw.ports.len()).step_by(threads).collect();
            let s = Arc::clone(&sw);
            let spawned = std::thread::Builder::new()
                .name(format!("koi-poll-{t}"))
                .spawn(move || crate::poll::poll_loop(&s, t, &mine));
            match spawned {
                Ok(h) => lock(&sw.threads).push(h),
                Err(e) => {
                    sw.stop();
                    sw.join();
                    return Err(format!("cannot start a poll thread: {e}"));
                }
            }
        }
        tracing::info!(
            ports = sw.ports.len(),
            threads,
            pipelines = sw.pipelines.len(),
            "forwarding"
        );
        Ok(sw)
    }

    /// Adds a thread that belongs to the switch (a server): it is joined by [`Switch::join`]
    /// and must return soon after [`Switch::stopping`] turns true.
    pub fn spawn(
        self: &Arc<Self>,
        name: &str,
        f: impl FnOnce(Arc<Switch>) + Send + 'static,
    ) -> Result<(), String> {
        let s = Arc::clone(self);
        let h = std::thread::Builder::new()
            .name(name.into())
            .spawn(move || f(s))
            .map_err(|e| format!("cannot start thread {name}: {e}"))?;
        lock(&self.threads).push(h);
        Ok(())
    }

    /// Asks every thread to finish.
    pub fn stop(&self) {
        self.stop.store(true, Ordering::Relaxed);
    }

    /// Whether the switch is stopping.
    #[inline]
    pub fn stopping(&self) -> bool {
        self.stop.load(Ordering::Relaxed)
    }

    /// Waits for every thread of the switch to finish (after [`Switch::stop`]), then flushes
    /// the ports.
    pub fn join(&self) {
        loop {
            let Some(h) = lock(&self.threads).pop() else {
                break;
            };
            let _ = h.join();
        }
        for slot in &self.ports {
            let _ = lock(&slot.port).flush();
        }
    }

    /// The pipelines, in the order they were configured.
    pub fn pipelines(&self) -> &[Arc<Pipeline>] {
        &self.pipelines
    }

    /// The pipeline named `name`, or with `None` the first one.
    pub fn pipeline(&self, name: Option<&str>) -> Option<&Arc<Pipeline>> {
        match name {
            None => self.pipelines.first(),
            Some(n) => self.pipelines.iter().find(|p| p.name() == n),
        }
    }

    /// The pipeline with P4Runtime device id `id`.
    pub fn pipeline_by_device(&self, id: u64) -> Option<&Arc<Pipeline>> {
        self.pipelines.iter().find(|p| p.device_id() == id)
    }

    /// The pipelines (indices) with a patch port.
    pub(crate) fn patch_pipelines(&self) -> impl Iterator<Item = usize> + '_ {
        self.patches.keys().map(|&(p, _)| p)
    }

    /// The patch ports: each pair once, as ((pipeline index, port), (pipeline index, port)).
    pub fn patches(&self) -> Vec<(PatchEnd, PatchEnd)> {
        let mut v: Vec<_> = self
            .patches
            .iter()
            .filter(|(a, b)| a < b)
            .map(|(a, b)| (*a, *b))
            .collect();
        v.sort_unstable();
        v
    }

    /// The ports.
    pub fn ports(&self) -> &[PortSlot] {
        &self.ports
    }

    /// The switch's clock (what the data plane's timestamps, meters and idle times use).
    pub fn clock(&self) -> &SystemClock {
        &self.clock
    }

    /// When the switch started.
    pub fn started(&self) -> Instant {
        self.started
    }

    /// Injects a packet from the controller into `pipeline` as if received on its CPU port
    /// (P4Runtime PacketOut: the bytes start with the program's `packet_out` header), and
    /// sends what the program makes of it.
    pub fn packet_out(&self, pipeline: &Pipeline, bytes: &[u8]) -> Result<(), String> {
        let image = pipeline
            .image()
            .ok_or_else(|| format!("pipeline {} has no program", pipeline.name()))?;
        let cpu = pipeline
            .cpu_port()
            .ok_or_else(|| format!("pipeline {} has no CPU port", pipeline.name()))?;
        let outs = image.inject(cpu, bytes, &self.clock)?;
        pipeline
            .counters
            .packet_outs
            .fetch_add(1, Ordering::Relaxed);
        if outs.is_empty() {
            self.counters.program_drops.fetch_add(1, Ordering::Relaxed);
        }
        let mut touched = vec![false; self.ports.len()];
        let mut patched = Vec::new();
        for (port, b) in &outs {
            self.send(pipeline, &image, *port, b, &mut touched, 1, &mut patched);
        }
        // A retired image's digests were delivered before it retired.
        let _ = image.update(|s, _| pipeline.deliver_digests(&image, s));
        // What went over patch ports, through the next pipelines' interpreters.
        while let Some((p, port, passes, bytes)) = patched.pop() {
            let next = &self.pipelines[p];
            let Some(img) = next.image() else {
                self.counters.no_program.fetch_add(1, Ordering::Relaxed);
                next.counters.no_program.fetch_add(1, Ordering::Relaxed);
                continue;
            };
            let outs = img.inject(port, &bytes, &self.clock)?;
            for (out, b) in &outs {
                self.send(next, &img, *out, b, &mut touched, passes, &mut patched);
            }
            let _ = img.update(|s, _| next.deliver_digests(&img, s));
        }
        self.flush(&mut touched);
        Ok(())
    }

    /// Sends one output of `pipeline`'s `image` to `port`: the controller for the CPU port,
    /// else the pipeline's port of that number (an unknown number is counted). Marks the port
    /// in `touched` for [`Switch::flush`]. A patch port's output goes to `patched` (with `passes`, the pipelines the packet has
    /// passed through, this one included), unless it has passed through [`MAX_PASSES`].
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn send(
        &self,
        pipeline: &Pipeline,
        image: &crate::Image,
        port: u64,
        bytes: &[u8],
        touched: &mut [bool],
        passes: u8,
        patched: &mut Vec<Patched>,
    ) {
        if pipeline.cpu_port() == Some(port) {
            pipeline.packet_in(image, bytes);
            return;
        }
        if let Some(&(p, n)) = self.patches.get(&(pipeline.index(), port)) {
            if passes >= MAX_PASSES {
                self.counters.patch_loop.fetch_add(1, Ordering::Relaxed);
            } else {
                patched.push((p, n, passes + 1, bytes.to_vec()));
            }
            return;
        }
        let Some(&j) = self.by_num.get(&(pipeline.index(), port)) else {
            self.counters.unknown_port.fetch_add(1, Ordering::Relaxed);
            return;
        };
        // Failures are counted by the port itself.
        if let Err(e) = lock(&self.ports[j].port).send(bytes) {
            tracing::debug!(port, error = %e, "send failed");
        }
        touched[j] = true;
    }

    /// Flushes the ports marked in `touched` and clears the marks.
    pub(crate) fn flush(&self, touched: &mut [bool]) {
        for (j, t) in touched.iter_mut().enumerate() {
            if std::mem::take(t) {
                let _ = lock(&self.ports[j].port).flush();
            }
        }
    }

    /// Every port's counters added up.
    pub fn port_totals(&self) -> koi_ports::Stats {
        let mut total = koi_ports::Stats::default();
        for slot in &self.ports {
            let s = lock(&slot.port).stats();
            total.rx_packets += s.rx_packets;
            total.rx_bytes += s.rx_bytes;
            total.tx_packets += s.tx_packets;
            total.tx_bytes += s.tx_bytes;
            total.drop_too_big += s.drop_too_big;
            total.drop_link_down += s.drop_link_down;
            total.drop_error += s.drop_error;
            total.drop_ring_full += s.drop_ring_full;
        }
        total
    }
}
