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
use koi_ports::PortSpec;
use koi_state::{State, SystemClock};
use std::collections::HashSet;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use std::thread::JoinHandle;
use std::time::Instant;

use crate::ports::{Dest, Ingress, Outbox, Outputs};
pub use crate::ports::{MAX_PASSES, PatchEnd, PortSlot, PortTable};

/// Drops that belong to no port.
#[derive(Debug, Default)]
pub struct Counters {
    pub unknown_port: AtomicU64,
    pub pipeline_errors: AtomicU64,
    /// Packets the program sent nowhere.
    pub program_drops: AtomicU64,
    /// Cache misses dropped by the slow-path rate limit (`--upcall-rate`).
    pub upcall_limit: AtomicU64,
    /// Cache misses dropped because their port's slow-path queue was full
    /// ([`crate::upcall`]).
    pub upcall_queue_full: AtomicU64,
    /// Not drops: slow-path runs of queued misses (each a flow's queued packets), the time
    /// they took in all, and the misses queued now.
    pub upcalls: AtomicU64,
    pub upcall_ns: AtomicU64,
    pub upcall_queued: AtomicU64,
    /// Packets that arrived while their pipeline had no program.
    pub no_program: AtomicU64,
    /// Packets dropped after passing through [`MAX_PASSES`] pipelines over patch ports.
    pub patch_loop: AtomicU64,
}

impl Counters {
    /// The drops by reason, as `stats`, the metrics and the exit summary name them.
    pub fn by_reason(&self) -> [(&'static str, u64); 7] {
        let get = |a: &AtomicU64| a.load(Ordering::Relaxed);
        [
            ("program", get(&self.program_drops)),
            ("unknown_port", get(&self.unknown_port)),
            ("pipeline_error", get(&self.pipeline_errors)),
            ("upcall_limit", get(&self.upcall_limit)),
            ("upcall_queue_full", get(&self.upcall_queue_full)),
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
    /// Poll threads (ports added later are dealt out among them too).
    pub threads: usize,
    /// The flow caches' configuration; `None`: every packet through the interpreter.
    pub cache: Option<DatapathConfig>,
}

/// A running switch. Shared (`Arc`) by its poll threads and its control clients.
pub struct Switch {
    ports: RwLock<Arc<PortTable>>,
    /// Bumped each time the port table is replaced.
    ports_version: AtomicU64,
    /// Serialises the additions and removals of ports and pipelines.
    changes: Mutex<()>,
    poll_threads: usize,
    /// Every pipeline ever added, by index (a removed one stays, marked, so that indices
    /// hold); replaced whole when one is added.
    pipelines: RwLock<Arc<Vec<Arc<Pipeline>>>>,
    /// The flow cache configuration new pipelines get.
    cache: Option<DatapathConfig>,
    pub counters: Counters,
    clock: SystemClock,
    stop: AtomicBool,
    started: Instant,
    threads: Mutex<Vec<JoinHandle<()>>>,
    /// Per poll thread, what other threads hand it (software spread).
    pub(crate) inboxes: Vec<crate::ports::Inbox>,
}

/// Whether ports of this kind get a software spread when they have one receive side for
/// several poll threads: the live devices (a TAP device, an AF_XDP port on an interface with
/// one queue). Files are replayed as they are.
fn soft_spread(spec: &PortSpec) -> bool {
    matches!(spec, PortSpec::Tap(_) | PortSpec::Xdp { spread: true, .. })
}

/// Whether a port is read only as fast as its misses are run, rather than have them dropped
/// at a full slow-path queue: a file, which waits for the reader, unlike a live device.
fn lossless(spec: &PortSpec) -> bool {
    matches!(spec, PortSpec::Pcap { .. })
}

impl Switch {
    /// Opens the ports, loads the pipelines' programs and starts the poll threads. Fails (and
    /// opens nothing that stays open) if a port cannot be opened or a program not loaded.
    pub fn start(cfg: SwitchConfig) -> Result<Arc<Switch>, String> {
        let threads = cfg.threads.max(1);
        let mut pipelines = Vec::new();
        let mut seen_ids = Vec::new();
        for p in &cfg.pipelines {
            crate::pipeline::check_name(&p.config.name)?;
            if pipelines
                .iter()
                .any(|x: &Arc<Pipeline>| x.name() == p.config.name)
            {
                return Err(format!("two pipelines are named {}", p.config.name));
            }
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
        // The ports and patch port ends given so far.
        let mut taken: HashSet<PatchEnd> = HashSet::new();
        for (n, _, p) in &cfg.ports {
            let Some(pl) = pipelines.get(*p) else {
                return Err(format!("port {n}: no pipeline {p}"));
            };
            if !taken.insert((*p, *n)) {
                return Err(format!("port {n} of pipeline {} given twice", pl.name()));
            }
            if pl.cpu_port() == Some(*n) {
                return Err(format!(
                    "port {n} is the CPU port of pipeline {}: it cannot be a port too",
                    pl.name()
                ));
            }
        }
        for &(a, b) in &cfg.patches {
            for (p, n) in [a, b] {
                let Some(pl) = pipelines.get(p) else {
                    return Err(format!("patch port {n}: no pipeline {p}"));
                };
                if taken.contains(&(p, n)) || pl.cpu_port() == Some(n) {
                    return Err(format!(
                        "patch port {n} of pipeline {}: the number is taken",
                        pl.name()
                    ));
                }
            }
            if a == b {
                return Err(format!("patch port {}: joined to itself", a.1));
            }
            taken.extend([a, b]);
        }
        // Every port and patch port is the pipeline's before its program loads, which
        // refuses a number its architecture's ports cannot hold.
        for &(p, n) in &taken {
            pipelines[p].note_port(n, true)?;
        }
        for (setup, pl) in cfg.pipelines.into_iter().zip(&pipelines) {
            if let Some(program) = setup.program {
                let init = setup.init.unwrap_or_else(|| Box::new(|_| Ok(())));
                pl.load(program, init)?;
            }
        }
        let mut ports = Vec::new();
        for (i, (n, spec, p)) in cfg.ports.iter().enumerate() {
            let opened =
                koi_ports::open_spread(spec, threads).map_err(|e| format!("port {n}: {e}"))?;
            let (name, spread) = (opened[0].name().to_string(), opened.len());
            tracing::info!(port = n, name, threads = spread, "port open");
            let mut slot = PortSlot::new(*n, *p, i % threads, threads, opened, soft_spread(spec))
                .ok_or_else(|| format!("port {n}: nothing opened"))?;
            slot.lossless = lossless(spec);
            ports.push(Arc::new(slot));
        }
        let inboxes = (0..threads)
            .map(|_| crate::ports::Inbox::new())
            .collect::<std::io::Result<Vec<_>>>()
            .map_err(|e| format!("cannot make the poll threads' wake-ups: {e}"))?;
        let sw = Arc::new(Switch {
            ports: RwLock::new(Arc::new(PortTable::new(ports, cfg.patches))),
            ports_version: AtomicU64::new(1),
            changes: Mutex::new(()),
            poll_threads: threads,
            pipelines: RwLock::new(Arc::new(pipelines)),
            cache: cfg.cache.clone(),
            counters: Counters::default(),
            clock: SystemClock::new(),
            stop: AtomicBool::new(false),
            started: Instant::now(),
            threads: Mutex::new(Vec::new()),
            inboxes,
        });
        for t in 0..threads {
            let s = Arc::clone(&sw);
            let spawned = std::thread::Builder::new()
                .name(format!("koi-poll-{t}"))
                .spawn(move || crate::poll::poll_loop(&s, t));
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
            ports = sw.ports().len(),
            threads,
            pipelines = sw.pipelines().len(),
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
        for slot in self.ports().iter() {
            let _ = lock(&slot.port).flush();
        }
    }

    /// Every pipeline by index, in the order they were added, removed ones included (see
    /// [`Pipeline::is_removed`]).
    pub fn pipelines(&self) -> Arc<Vec<Arc<Pipeline>>> {
        self.pipelines
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    /// The pipelines in use, in the order they were added.
    pub fn live_pipelines(&self) -> Vec<Arc<Pipeline>> {
        self.pipelines()
            .iter()
            .filter(|p| !p.is_removed())
            .cloned()
            .collect()
    }

    /// The pipeline named `name`, or with `None` the first one (in use).
    pub fn pipeline(&self, name: Option<&str>) -> Option<Arc<Pipeline>> {
        let all = self.pipelines();
        let mut live = all.iter().filter(|p| !p.is_removed());
        match name {
            None => live.next().cloned(),
            Some(n) => live.find(|p| p.name() == n).cloned(),
        }
    }

    /// The pipeline (in use) with P4Runtime device id `id`.
    pub fn pipeline_by_device(&self, id: u64) -> Option<Arc<Pipeline>> {
        self.pipelines()
            .iter()
            .find(|p| !p.is_removed() && p.device_id() == id)
            .cloned()
    }

    /// Adds a pipeline (P4rt-OVS's pipeline ids: its own ports, program, state and P4Runtime
    /// device), with `program` loaded if given; ports are added to it with
    /// [`Switch::add_port`].
    pub fn add_pipeline(
        &self,
        config: PipelineConfig,
        program: Option<Arc<Program>>,
    ) -> Result<Arc<Pipeline>, String> {
        let _changes = lock(&self.changes);
        let all = self.pipelines();
        crate::pipeline::check_name(&config.name)?;
        for p in all.iter().filter(|p| !p.is_removed()) {
            if p.name() == config.name {
                return Err(format!("there is a pipeline {} already", config.name));
            }
            if p.device_id() == config.device_id {
                return Err(format!(
                    "pipeline {} has device id {} already",
                    p.name(),
                    config.device_id
                ));
            }
        }
        let pl = Arc::new(Pipeline::new(
            config,
            all.len(),
            self.cache.clone(),
            self.poll_threads,
        ));
        if let Some(program) = program {
            pl.load(program, |_| Ok(()))?;
        }
        let mut next = (*all).clone();
        next.push(Arc::clone(&pl));
        *self.pipelines.write().unwrap_or_else(|p| p.into_inner()) = Arc::new(next);
        tracing::info!(
            pipeline = pl.name(),
            device_id = pl.device_id(),
            "pipeline added"
        );
        Ok(pl)
    }

    /// Removes pipeline `name`, which must have no ports and no patch ports left: its program
    /// and state are dropped once no poll thread uses them, its P4Runtime device is gone.
    pub fn remove_pipeline(&self, name: &str) -> Result<(), String> {
        let _changes = lock(&self.changes);
        let pl = self
            .pipeline(Some(name))
            .ok_or_else(|| format!("no pipeline {name}"))?;
        let table = self.ports();
        let ports: Vec<String> = table
            .iter()
            .filter(|s| s.pipeline == pl.index())
            .map(|s| s.num.to_string())
            .collect();
        if !ports.is_empty() {
            return Err(format!(
                "pipeline {name} still has ports {}: port_remove them first",
                ports.join(", ")
            ));
        }
        if table.patch_pipelines().any(|p| p == pl.index()) {
            return Err(format!("pipeline {name} has patch ports"));
        }
        pl.remove();
        tracing::info!(pipeline = name, "pipeline removed");
        Ok(())
    }

    /// The patch ports: each pair once, as ((pipeline index, port), (pipeline index, port)).
    pub fn patches(&self) -> Vec<(PatchEnd, PatchEnd)> {
        self.ports().patches().to_vec()
    }

    /// The ports, as they are now (a snapshot: see [`PortTable`]).
    pub fn ports(&self) -> Arc<PortTable> {
        self.ports.read().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// Bumped each time a port is added or removed.
    pub(crate) fn ports_version(&self) -> u64 {
        self.ports_version.load(Ordering::Acquire)
    }

    /// The number of poll threads.
    pub fn poll_threads(&self) -> usize {
        self.poll_threads
    }

    /// Opens `spec` as port `num` of `pipeline` and starts forwarding from it (on the poll
    /// thread with the fewest ports, within one polling round, at most 100 ms).
    pub fn add_port(&self, pipeline: &Pipeline, num: u64, spec: &PortSpec) -> Result<(), String> {
        let _changes = lock(&self.changes);
        let table = self.ports();
        let end = (pipeline.index(), num);
        if table.taken(end) || pipeline.cpu_port() == Some(num) {
            return Err(format!(
                "pipeline {} already has a port {num}",
                pipeline.name()
            ));
        }
        pipeline.note_port(num, true)?;
        let opened = match koi_ports::open_spread(spec, self.poll_threads) {
            Ok(o) => o,
            Err(e) => {
                let _ = pipeline.note_port(num, false);
                return Err(format!("port {num}: {e}"));
            }
        };
        let mut load = vec![0usize; self.poll_threads];
        for s in table.iter() {
            load[s.thread] += 1;
        }
        let thread = (0..self.poll_threads).min_by_key(|&t| load[t]).unwrap_or(0);
        tracing::info!(
            port = num,
            name = opened[0].name(),
            pipeline = pipeline.name(),
            thread,
            threads = opened.len(),
            "port added"
        );
        let mut slot = PortSlot::new(
            num,
            pipeline.index(),
            thread,
            self.poll_threads,
            opened,
            soft_spread(spec),
        )
        .ok_or_else(|| {
            let _ = pipeline.note_port(num, false);
            format!("port {num}: nothing opened")
        })?;
        slot.lossless = lossless(spec);
        let mut slots = table.to_vec();
        slots.push(Arc::new(slot));
        self.publish_ports(table.with_slots(slots));
        Ok(())
    }

    /// Stops forwarding from and to port `num` of `pipeline` and closes it once no poll
    /// thread uses it; what it had queued to send is flushed first.
    pub fn remove_port(&self, pipeline: &Pipeline, num: u64) -> Result<(), String> {
        let _changes = lock(&self.changes);
        let table = self.ports();
        let Some(i) = table.port_index((pipeline.index(), num)) else {
            return Err(format!("pipeline {} has no port {num}", pipeline.name()));
        };
        let _ = lock(&table[i].port).flush();
        let mut slots = table.to_vec();
        let gone = slots.remove(i);
        let _ = pipeline.note_port(num, false);
        tracing::info!(
            port = num,
            name = lock(&gone.port).name(),
            pipeline = pipeline.name(),
            "port removed"
        );
        self.publish_ports(table.with_slots(slots));
        Ok(())
    }

    fn publish_ports(&self, table: PortTable) {
        *self.ports.write().unwrap_or_else(|p| p.into_inner()) = Arc::new(table);
        self.ports_version.fetch_add(1, Ordering::AcqRel);
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
        let pipelines = self.pipelines();
        pipeline
            .counters
            .packet_outs
            .fetch_add(1, Ordering::Relaxed);
        if outs.is_empty() {
            self.counters.program_drops.fetch_add(1, Ordering::Relaxed);
        }
        let table = self.ports();
        let mut out = Outbox::for_table(&table);
        let mut outputs = Outputs::default();
        for (port, b) in &outs {
            let i = outputs.push(0, *port, b);
            let from = Ingress {
                pipeline: pipeline.index(),
                port: pipeline.cpu_port().unwrap_or_default(),
                passes: 1,
                lossless: false,
            };
            self.send(&table, &mut out, pipeline, &image, &outputs, i, from);
        }
        // A retired image's digests were delivered before it retired.
        let _ = image.update(|s, _| pipeline.deliver_digests(&image, s));
        // What went over patch ports, through the next pipelines' interpreters, hop after hop
        // (each counts towards MAX_PASSES, so this ends).
        let mut pending = std::mem::take(&mut out.patched);
        while !pending.is_empty() {
            for (to, bytes) in pending.iter() {
                let next = &pipelines[to.pipeline];
                let Some(img) = next.image() else {
                    self.counters.no_program.fetch_add(1, Ordering::Relaxed);
                    next.counters.no_program.fetch_add(1, Ordering::Relaxed);
                    continue;
                };
                for (port, b) in &img.inject(to.port, bytes, &self.clock)? {
                    let i = outputs.push(0, *port, b);
                    self.send(&table, &mut out, next, &img, &outputs, i, to);
                }
                let _ = img.update(|s, _| next.deliver_digests(&img, s));
            }
            pending.clear();
            std::mem::swap(&mut pending, &mut out.patched);
        }
        self.flush(&table, &mut out, &outputs);
        Ok(())
    }

    /// Sends output `i` of `outputs`, made by `pipeline`'s `image`, to its port: the
    /// controller for the CPU port, else the pipeline's port of that number (queued in `out`
    /// for [`Switch::flush`]), or, for a patch port, into `out`'s patched packets (`from`:
    /// where the packet that made it entered `pipeline`; its passes, the pipelines passed
    /// through with this one, and whether it came from a lossless port carry over to the
    /// peer, and one pass past [`MAX_PASSES`] it is dropped). An unknown number is counted.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn send(
        &self,
        table: &PortTable,
        out: &mut Outbox,
        pipeline: &Pipeline,
        image: &crate::Image,
        outputs: &Outputs,
        i: usize,
        from: Ingress,
    ) {
        let passes = from.passes;
        let (port, bytes) = outputs.get(i);
        if pipeline.cpu_port() == Some(port) {
            pipeline.packet_in(image, bytes);
            return;
        }
        match table.dest((pipeline.index(), port)) {
            Some(Dest::Port(j)) => out.queue(j, i),
            Some(Dest::Patch((p, n))) if passes < MAX_PASSES => {
                let to = Ingress {
                    pipeline: p,
                    port: n,
                    passes: passes + 1,
                    lossless: from.lossless,
                };
                out.patched.push(to, bytes);
            }
            Some(Dest::Patch(_)) => {
                self.counters.patch_loop.fetch_add(1, Ordering::Relaxed);
            }
            None => {
                self.counters.unknown_port.fetch_add(1, Ordering::Relaxed);
            }
        }
    }

    /// Sends the outputs queued in `out` (indices into `outputs`), port by port (each port
    /// locked once), flushes those ports and clears the queue.
    pub(crate) fn flush(&self, table: &PortTable, out: &mut Outbox, outputs: &Outputs) {
        for j in 0..out.touched.len() {
            if !std::mem::take(&mut out.touched[j]) {
                continue;
            }
            let mut port = lock(&table[j].port);
            for i in out.queued_for(j) {
                // Failures are counted by the port itself.
                if let Err(e) = port.send(outputs.get(i).1) {
                    tracing::debug!(port = table[j].num, error = %e, "send failed");
                }
            }
            let _ = port.flush();
        }
        out.clear_queued();
    }

    /// Every port's counters added up.
    pub fn port_totals(&self) -> koi_ports::Stats {
        let mut total = koi_ports::Stats::default();
        for slot in self.ports().iter() {
            total.add(&slot.stats());
        }
        total
    }
}
