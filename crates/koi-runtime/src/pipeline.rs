//! A **pipeline**: a named place in the switch that runs one program at a time (its current
//! [`Image`]), with the ports bound to it, its P4Runtime device id, its CPU port, and the
//! controller that takes its packet-ins and digests ([`Events`]).
//!
//! [`Pipeline::load`] compiles nothing (the [`Program`] is compiled already, away from the
//! forwarding threads): it builds the new image's state, checks that the datapath can run the
//! program, and swaps the image in. The poll threads notice the new generation before their
//! next batch and move to it; the old image is freed when the last of them has left it. A
//! pipeline may have no image yet (`koi run` without a program): its ports' packets are
//! dropped and counted until a controller loads one.

use crate::image::Image;
use crate::lock;
use crate::program::Program;
use koi_datapath::{Datapath, DatapathConfig};
use koi_interp::Interpreter;
use koi_state::{DigestMessage, State};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, RwLock};

/// What the switch hands to a pipeline's controller (the P4Runtime server). Called on poll
/// threads with the state lock held: implementations must not block (queue and return).
pub trait Events: Send + Sync {
    /// A packet the program sent to the CPU port, whole (its `packet_in` header first).
    fn packet_in(&self, image: &Image, bytes: &[u8]);
    /// Digest messages the program produced, oldest first.
    fn digests(&self, image: &Image, messages: Vec<DigestMessage>);
}

/// How a pipeline is set up.
#[derive(Clone, Debug)]
pub struct PipelineConfig {
    /// Its name (`default` for the one pipeline of `koi run PROG.p4`).
    pub name: String,
    /// Its P4Runtime device id.
    pub device_id: u64,
    /// The port number whose output goes to the controller and whose input comes from it
    /// (v1model's CPU port, as BMv2's `--cpu-port`); not one of the switch's ports.
    pub cpu_port: Option<u64>,
}

/// Checks that `name` can name a pipeline (in `--pipeline`, `@NAME`, `koi ctl --pipeline`):
/// a letter, then letters, digits, `_` or `-`.
pub fn check_name(name: &str) -> Result<(), String> {
    if name.starts_with(|c: char| c.is_ascii_alphabetic())
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
    {
        Ok(())
    } else {
        Err(format!(
            "`{name}`: a pipeline name is a letter then letters, digits, `_` or `-`"
        ))
    }
}

/// Counters of one pipeline.
#[derive(Debug, Default)]
pub struct PipelineCounters {
    /// Packets received while the pipeline had no program.
    pub no_program: AtomicU64,
    /// Packets sent to the CPU port while no controller took them.
    pub to_cpu_unclaimed: AtomicU64,
    /// Packets sent to the controller.
    pub packet_ins: AtomicU64,
    /// Packets injected by the controller.
    pub packet_outs: AtomicU64,
    /// Digest messages handed to the controller.
    pub digests: AtomicU64,
}

/// A pipeline of the switch.
pub struct Pipeline {
    config: PipelineConfig,
    /// Its index among the switch's pipelines.
    index: usize,
    cache: Option<DatapathConfig>,
    threads: usize,
    image: RwLock<Option<Arc<Image>>>,
    /// The current image's generation (0: none), read by the poll threads before each batch.
    generation: AtomicU64,
    /// The last generation handed out; held while loading, so loads are serialised.
    loads: Mutex<u64>,
    events: RwLock<Option<Arc<dyn Events>>>,
    pub counters: PipelineCounters,
    /// Set when the pipeline is removed from the switch.
    removed: std::sync::atomic::AtomicBool,
    /// The numbers of its ports (the switch keeps them current): a program whose
    /// architecture's port numbers are narrower than one of them is refused.
    port_numbers: Mutex<std::collections::BTreeSet<u64>>,
    /// Held while a `pof_*` command edits the POF configuration, so that two edits never
    /// start from the same configuration ([`crate::pof`]).
    pub(crate) pof_edit: Mutex<()>,
}

impl Pipeline {
    pub(crate) fn new(
        config: PipelineConfig,
        index: usize,
        cache: Option<DatapathConfig>,
        threads: usize,
    ) -> Pipeline {
        Pipeline {
            config,
            index,
            cache,
            threads,
            image: RwLock::new(None),
            generation: AtomicU64::new(0),
            loads: Mutex::new(0),
            events: RwLock::new(None),
            counters: PipelineCounters::default(),
            removed: std::sync::atomic::AtomicBool::new(false),
            port_numbers: Mutex::new(Default::default()),
            pof_edit: Mutex::new(()),
        }
    }

    /// Records that the pipeline has (`true`) or no longer has port `num`. Adding one that
    /// the running program's port numbers cannot hold is refused (nothing recorded).
    pub(crate) fn note_port(&self, num: u64, present: bool) -> Result<(), String> {
        let mut ports = lock(&self.port_numbers);
        if !present {
            ports.remove(&num);
            return Ok(());
        }
        if let Some(image) = self.image() {
            image
                .program()
                .pipeline
                .arch
                .check_port(num)
                .map_err(|e| format!("port {num}: {e}"))?;
        }
        ports.insert(num);
        Ok(())
    }

    pub fn name(&self) -> &str {
        &self.config.name
    }

    /// Whether it was removed from the switch ([`crate::Switch::remove_pipeline`]).
    pub fn is_removed(&self) -> bool {
        self.removed.load(Ordering::Acquire)
    }

    /// Marks it removed and drops its image (the poll threads let go of it when they next
    /// look at the generation).
    pub(crate) fn remove(&self) {
        let mut loads = lock(&self.loads);
        self.removed.store(true, Ordering::Release);
        *loads += 1;
        *self.image.write().unwrap_or_else(|p| p.into_inner()) = None;
        self.generation.store(*loads, Ordering::Release);
    }

    /// Its index among the switch's pipelines ([`crate::Switch::pipelines`]).
    pub fn index(&self) -> usize {
        self.index
    }

    pub fn device_id(&self) -> u64 {
        self.config.device_id
    }

    pub fn cpu_port(&self) -> Option<u64> {
        self.config.cpu_port
    }

    /// The poll threads' cache configuration (`None`: interpreter only).
    pub fn cache_config(&self) -> Option<&DatapathConfig> {
        self.cache.as_ref()
    }

    /// The current image, if a program is loaded.
    pub fn image(&self) -> Option<Arc<Image>> {
        self.image.read().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// The current image's generation (0: none).
    #[inline]
    pub fn generation(&self) -> u64 {
        self.generation.load(Ordering::Acquire)
    }

    /// Checks that `program` can run here (its state can be built and the datapath takes it)
    /// without loading it; `init` runs on the new state as [`Pipeline::load`] would, after a
    /// POF program's entries are written to its tables ([`crate::pof`]).
    pub fn verify(
        &self,
        program: &Program,
        init: impl FnOnce(&mut State) -> Result<(), String>,
    ) -> Result<State, String> {
        // Its ports (and the CPU port) must fit the architecture's port numbers, which
        // would otherwise cut them short in every packet's metadata.
        let arch = program.pipeline.arch;
        for n in lock(&self.port_numbers).iter().chain(&self.config.cpu_port) {
            arch.check_port(*n)
                .map_err(|e| format!("port {n} of pipeline {}: {e}", self.name()))?;
        }
        let mut state = State::new(&program.pipeline).map_err(|e| e.to_string())?;
        // A POF program's tables start with its configuration's entries.
        if let Some(pof) = program.pof() {
            koi_pof::install(&mut state, &pof.generated.writes)?;
        }
        init(&mut state)?;
        match &self.cache {
            Some(c) => {
                Datapath::with_config(&program.pipeline, koi_interp::Options::default(), c.clone())
                    .map(drop)
                    .map_err(|e| e.to_string())?
            }
            None => Interpreter::new(&program.pipeline)
                .map(drop)
                .map_err(|e| e.to_string())?,
        }
        Ok(state)
    }

    /// Loads `program` with a fresh state (`init` runs on it first, e.g. an entries file) and
    /// swaps it in; returns the new image. On error nothing changes.
    pub fn load(
        &self,
        program: Arc<Program>,
        init: impl FnOnce(&mut State) -> Result<(), String>,
    ) -> Result<Arc<Image>, String> {
        let state = self.verify(&program, init)?;
        let loads = lock(&self.loads);
        let old = self.image();
        // Retiring the old image sends requests that race the swap to the new one.
        let guard = old.as_ref().map(|o| o.lock_for_swap());
        let image = self.publish(loads, program, state, old.as_deref(), false);
        drop(guard);
        Ok(image)
    }

    /// Loads `program` and carries the running image's state over to it: `carry(old state,
    /// old program, new state)` runs under the old image's state lock, between two batches of
    /// every poll thread, and the new image takes over before the lock is released, so no
    /// packet or control-plane change lands in between (the old image is retired: see
    /// [`Image`]). Returns the new image and what `carry` returned (`None` when there was no
    /// image to carry from). When `carry` fails nothing changes and its error is returned.
    pub fn reload<R>(
        &self,
        program: Arc<Program>,
        carry: impl FnOnce(&State, &Program, &mut State) -> Result<R, String>,
    ) -> Result<(Arc<Image>, Option<R>), String> {
        let mut state = self.verify(&program, |_| Ok(()))?;
        let loads = lock(&self.loads);
        let old = self.image();
        let Some(old) = old else {
            return Ok((self.publish(loads, program, state, None, false), None));
        };
        let guard = old.lock_for_swap();
        let report = carry(&guard, old.program(), &mut state)?;
        let image = self.publish(loads, program, state, Some(&old), true);
        drop(guard);
        Ok((image, Some(report)))
    }

    /// Swaps in a new image of `program` with `state` as generation `loads + 1` and retires
    /// `old` (whose state lock the caller holds); `carried`: `state` was carried over from
    /// `old`'s.
    fn publish(
        &self,
        mut loads: std::sync::MutexGuard<'_, u64>,
        program: Arc<Program>,
        state: State,
        old: Option<&Image>,
        carried: bool,
    ) -> Arc<Image> {
        *loads += 1;
        let image = Arc::new(Image::new(
            program,
            *loads,
            state,
            self.cache.clone(),
            self.threads,
            old.filter(|_| carried).map(Image::generation),
        ));
        *self.image.write().unwrap_or_else(|p| p.into_inner()) = Some(Arc::clone(&image));
        self.generation.store(*loads, Ordering::Release);
        if let Some(old) = old {
            old.retire();
        }
        tracing::info!(
            pipeline = self.name(),
            program = image.program().name,
            generation = *loads,
            "program loaded"
        );
        image
    }

    /// Runs `f` on the current image's state ([`Image::update`]), following the pipeline to
    /// a newer image if a swap retires the one it found first.
    pub fn update<R>(
        &self,
        mut f: impl FnMut(&mut State, &mut crate::Changes) -> R,
    ) -> Result<R, String> {
        loop {
            let image = self.image().ok_or_else(|| {
                format!(
                    "pipeline {} has no program yet (a P4Runtime controller loads one)",
                    self.name()
                )
            })?;
            if let Ok(r) = image.update(&mut f) {
                return Ok(r);
            }
        }
    }

    /// Sets (or with `None` removes) the controller that takes packet-ins and digests.
    pub fn set_events(&self, events: Option<Arc<dyn Events>>) {
        *self.events.write().unwrap_or_else(|p| p.into_inner()) = events;
    }

    /// The controller, if one is set.
    pub(crate) fn events(&self) -> Option<Arc<dyn Events>> {
        self.events
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    /// Hands the digests waiting in `state` to the controller; leaves them queued (bounded,
    /// overflow counted) when there is none. Called with the state lock held.
    pub(crate) fn deliver_digests(&self, image: &Image, state: &mut State) {
        if state.last_digest().is_none() {
            return;
        }
        if let Some(ev) = self.events() {
            let msgs = state.take_digests();
            self.counters
                .digests
                .fetch_add(msgs.len() as u64, Ordering::Relaxed);
            ev.digests(image, msgs);
        }
    }

    /// Hands a packet sent to the CPU port to the controller, or counts it as unclaimed.
    pub(crate) fn packet_in(&self, image: &Image, bytes: &[u8]) {
        match self.events() {
            Some(ev) => {
                self.counters.packet_ins.fetch_add(1, Ordering::Relaxed);
                ev.packet_in(image, bytes);
            }
            None => {
                self.counters
                    .to_cpu_unclaimed
                    .fetch_add(1, Ordering::Relaxed);
            }
        }
    }
}

impl std::fmt::Debug for Pipeline {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Pipeline")
            .field("config", &self.config)
            .field("generation", &self.generation())
            .finish_non_exhaustive()
    }
}
