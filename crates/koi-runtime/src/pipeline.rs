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
    cache: Option<DatapathConfig>,
    threads: usize,
    image: RwLock<Option<Arc<Image>>>,
    /// The current image's generation (0: none), read by the poll threads before each batch.
    generation: AtomicU64,
    /// The last generation handed out; held while loading, so loads are serialised.
    loads: Mutex<u64>,
    events: RwLock<Option<Arc<dyn Events>>>,
    pub counters: PipelineCounters,
}

impl Pipeline {
    pub(crate) fn new(
        config: PipelineConfig,
        cache: Option<DatapathConfig>,
        threads: usize,
    ) -> Pipeline {
        Pipeline {
            config,
            cache,
            threads,
            image: RwLock::new(None),
            generation: AtomicU64::new(0),
            loads: Mutex::new(0),
            events: RwLock::new(None),
            counters: PipelineCounters::default(),
        }
    }

    pub fn name(&self) -> &str {
        &self.config.name
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
    /// without loading it; `init` runs on the new state as [`Pipeline::load`] would.
    pub fn verify(
        &self,
        program: &Program,
        init: impl FnOnce(&mut State) -> Result<(), String>,
    ) -> Result<State, String> {
        let mut state = State::new(&program.pipeline).map_err(|e| e.to_string())?;
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
        let mut loads = lock(&self.loads);
        *loads += 1;
        let image = Arc::new(Image::new(
            program,
            *loads,
            state,
            self.cache.clone(),
            self.threads,
        ));
        *self.image.write().unwrap_or_else(|p| p.into_inner()) = Some(Arc::clone(&image));
        self.generation.store(*loads, Ordering::Release);
        tracing::info!(
            pipeline = self.name(),
            program = image.program().name,
            generation = *loads,
            "program loaded"
        );
        Ok(image)
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
