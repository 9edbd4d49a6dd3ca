//! An **image**: one [`Program`] loaded into a pipeline, with the runtime state that belongs to
//! it (tables, registers, counters, meters, the multicast engine...), the invalidation log that
//! keeps the poll threads' flow caches consistent with that state, and the board where the
//! threads publish their caches' sizes and counters.
//!
//! A pipeline runs one image at a time; loading a program makes a new image and swaps it in
//! ([`crate::Pipeline::load`]). Poll threads hold the image they forward with (an `Arc`) and
//! move to the new one between two batches, so each packet is processed wholly by one image,
//! and the old image is freed once the last thread has left it.
//!
//! **The state lock.** The [`State`] sits behind one mutex. A poll thread takes it for a whole
//! batch; the control plane takes it for a whole request through [`Image::update`] (every
//! write: `koi ctl` commands, P4Runtime `Write` batches) or [`Image::read`]. So a request lands
//! between two batches, never inside one, and what `update` reports as changed reaches every
//! thread's caches before that thread's next packet (see [`crate::cache`]).

use crate::cache::{CacheBoard, Change, InvalidationLog};
use crate::lock;
use crate::program::Program;
use koi_datapath::DatapathConfig;
use koi_interp::Interpreter;
use koi_ir::TableId;
use koi_state::{Clock, State};
use std::sync::{Arc, Mutex};
use std::time::Instant;

self_cell::self_cell!(
    /// An interpreter over an image's program, kept for packets that the control plane
    /// injects ([`Image::inject`]).
    struct Injector {
        owner: Arc<Program>,
        #[not_covariant]
        dependent: Interpreter,
    }
);

/// A program loaded into a pipeline, with its state.
pub struct Image {
    program: Arc<Program>,
    /// Numbers the images of a pipeline, from 1, in load order.
    generation: u64,
    state: Mutex<State>,
    pub(crate) invalidations: InvalidationLog,
    pub(crate) caches: CacheBoard,
    injector: Mutex<Option<Injector>>,
    loaded: Instant,
}

/// What an [`Image::update`] changed, for the flow caches; the changes are recorded when the
/// update ends, before the state lock is released.
#[derive(Debug, Default)]
pub struct Changes {
    tables: Vec<TableId>,
    all: bool,
}

impl Changes {
    /// The entries or the default action of table `t` changed.
    pub fn table(&mut self, t: TableId) {
        if !self.all && !self.tables.contains(&t) {
            self.tables.push(t);
        }
    }

    /// Something else changed (action profiles, multicast, registers, meters...): every
    /// cached flow is suspect.
    pub fn all(&mut self) {
        self.all = true;
        self.tables.clear();
    }

    /// Whether nothing was reported.
    pub fn is_empty(&self) -> bool {
        !self.all && self.tables.is_empty()
    }
}

impl Image {
    /// An image of `program` with a fresh state. `cache` is the poll threads' cache
    /// configuration (`None`: interpreter only), `threads` their number.
    pub(crate) fn new(
        program: Arc<Program>,
        generation: u64,
        state: State,
        cache: Option<DatapathConfig>,
        threads: usize,
    ) -> Image {
        Image {
            program,
            generation,
            state: Mutex::new(state),
            invalidations: InvalidationLog::default(),
            caches: CacheBoard::new(cache, threads),
            injector: Mutex::new(None),
            loaded: Instant::now(),
        }
    }

    pub fn program(&self) -> &Arc<Program> {
        &self.program
    }

    /// The image's number in its pipeline (1 for the first program loaded, then 2, ...).
    pub fn generation(&self) -> u64 {
        self.generation
    }

    /// When the image was loaded.
    pub fn loaded_at(&self) -> Instant {
        self.loaded
    }

    /// Runs `f` on the state under the state lock, between two batches of every poll thread.
    /// `f` says what it changed through its [`Changes`]; every poll thread's caches drop
    /// what they computed from the old state before their next packet. A change `f` does not
    /// report is a bug: report [`Changes::all`] when unsure.
    pub fn update<R>(&self, f: impl FnOnce(&mut State, &mut Changes) -> R) -> R {
        let mut state = lock(&self.state);
        let mut changes = Changes::default();
        let r = f(&mut state, &mut changes);
        if changes.all {
            self.invalidations.record(Change::All);
        } else {
            for t in changes.tables {
                self.invalidations.record(Change::Table(t));
            }
        }
        r
    }

    /// Runs `f` on the state under the state lock, for reading.
    pub fn read<R>(&self, f: impl FnOnce(&State) -> R) -> R {
        f(&lock(&self.state))
    }

    /// The state lock, for the poll threads.
    pub(crate) fn lock_state(&self) -> std::sync::MutexGuard<'_, State> {
        lock(&self.state)
    }

    /// The poll threads' cache snapshots and configuration for this image.
    pub fn caches(&self) -> &CacheBoard {
        &self.caches
    }

    /// The number of control-plane changes recorded so far.
    pub fn changes_recorded(&self) -> u64 {
        self.invalidations.epoch()
    }

    /// Runs a packet, as if received on `port`, through the reference interpreter with the
    /// live state (its counters, registers and meters see it), for packets the control plane
    /// injects (P4Runtime PacketOut); returns the outputs `(port, bytes)` in order. The poll
    /// threads' caches need no news: a cached flow never holds a decision on state.
    pub fn inject(
        &self,
        port: u64,
        bytes: &[u8],
        clock: &dyn Clock,
    ) -> Result<Vec<(u64, Vec<u8>)>, String> {
        let mut injector = lock(&self.injector);
        if injector.is_none() {
            let built = Injector::try_new(Arc::clone(&self.program), |p| {
                Interpreter::new(&p.pipeline).map_err(|e| e.to_string())
            })?;
            *injector = Some(built);
        }
        let Some(inj) = injector.as_mut() else {
            return Err("no interpreter".into());
        };
        inj.with_dependent_mut(|_, interp| {
            let mut state = lock(&self.state);
            let out = interp
                .process(&mut state, bytes, port, clock)
                .map_err(|e| e.to_string())?;
            Ok(out.outputs.into_iter().map(|o| (o.port, o.bytes)).collect())
        })
    }
}

impl std::fmt::Debug for Image {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Image")
            .field("program", &self.program.name)
            .field("generation", &self.generation)
            .finish_non_exhaustive()
    }
}
