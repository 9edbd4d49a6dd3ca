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
//! **The state locks.** The master [`State`] sits behind one mutex. With one poll thread, the
//! thread takes it for a whole batch, and the control plane for a whole request. With
//! several, each thread forwards with its own replica of the state behind its own mutex
//! ([`koi_state::replica`]: tables copied, counters counted apart, registers and meters
//! reached in the master for the rest of the packet), so threads share no lock unless their
//! packets use registers or meters. A control-plane request ([`Image::update`]: `koi ctl`
//! commands, P4Runtime `Write` batches; [`Image::read`]) runs one at a time: it adds every
//! replica's counts into the master (each replica's lock in turn, then the master's), runs on
//! the master, then makes each replica in turn take over what changed, and records the change
//! for the caches after the last one. A thread waits only while its own replica is folded or
//! brought up to date. So counters read exact, and what `update` changed (and reports for the
//! caches) reaches every thread before that thread's next packet after `update` returns (see
//! [`crate::cache`]); a packet forwarded during the request sees the state before or after it.

//! **Retired images.** A swap that carries the state over ([`crate::Pipeline::reload`]) copies
//! it under the old image's state lock and marks the old image retired before it releases the
//! lock. Whoever takes the lock of a retired image afterwards (a poll thread with a batch, a
//! control-plane request) finds it retired and goes to the new image instead: nothing lands on
//! a state that has already been copied, so counts carried over are exact.

use crate::cache::{CacheBoard, Change, InvalidationLog};
use crate::lock;
use crate::program::Program;
use koi_datapath::DatapathConfig;
use koi_interp::Interpreter;
use koi_ir::TableId;
use koi_state::{Clock, State};
use parking_lot::{Mutex as StateLock, MutexGuard as StateGuard};
use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicBool, Ordering};
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
    /// The master state (the control plane's, and with one poll thread that thread's).
    state: koi_state::Master,
    /// With several poll threads, a replica of the master per thread.
    replicas: Vec<StateLock<State>>,
    /// Held by an update (and a read, and a swap) from start to end: one at a time.
    updates: Mutex<()>,
    pub(crate) invalidations: InvalidationLog,
    pub(crate) caches: CacheBoard,
    injector: Mutex<Option<Injector>>,
    loaded: Instant,
    /// Set (under the state lock) when a newer image took over this one's state.
    retired: AtomicBool,
    /// The generation whose state this image's was carried over from, if it was.
    carried_from: Option<u64>,
}

/// The whole state of an image locked: every replica and the master
/// ([`Image::lock_for_swap`]); derefs to the master.
pub(crate) struct Quiet<'a> {
    _one: std::sync::MutexGuard<'a, ()>,
    _replicas: Vec<StateGuard<'a, State>>,
    master: StateGuard<'a, State>,
}

impl std::ops::Deref for Quiet<'_> {
    type Target = State;
    fn deref(&self) -> &State {
        &self.master
    }
}

/// The image was retired: its state went to a newer image of the pipeline; the request
/// should go there ([`crate::Pipeline::image`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Retired;

impl std::fmt::Display for Retired {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("the program was replaced during the request: try again")
    }
}

impl std::error::Error for Retired {}

/// What an [`Image::update`] changed, for the flow caches; the changes are recorded when the
/// update ends, before the state lock is released.
#[derive(Debug, Default)]
pub struct Changes {
    /// The changes in the order reported, each once.
    list: Vec<Change>,
    seen: HashSet<Change>,
    /// Entry changes per table, to turn many into one table change.
    entries: HashMap<TableId, usize>,
    all: bool,
}

/// More changes to single entries of one table than this are recorded as a change to the
/// table (a thread then drops its flows once rather than entry by entry).
pub const MAX_ENTRY_CHANGES: usize = 64;

impl Changes {
    fn add(&mut self, c: Change) {
        if self.all || !self.seen.insert(c) {
            return;
        }
        if let Change::Entry(t, _) = c {
            *self.entries.entry(t).or_default() += 1;
        }
        self.list.push(c);
    }

    /// The entries or the default action of table `t` changed.
    pub fn table(&mut self, t: TableId) {
        self.add(Change::Table(t));
    }

    /// Entry `index` of table `t` changed (action, parameters, direct meter) or went.
    pub fn entry(&mut self, t: TableId, index: u32) {
        self.add(Change::Entry(t, index));
    }

    /// What misses table `t` changed (its default action, or an entry was added to a table
    /// whose keys are all exact).
    pub fn misses(&mut self, t: TableId) {
        self.add(Change::Misses(t));
    }

    /// Something else changed (action profiles, multicast, registers, meters...): every
    /// cached flow is suspect.
    pub fn all(&mut self) {
        self.all = true;
        self.list.clear();
        self.seen.clear();
        self.entries.clear();
    }

    /// Whether nothing was reported.
    pub fn is_empty(&self) -> bool {
        !self.all && self.list.is_empty()
    }

    /// The changes to record: whole tables first (a table change makes its finer changes
    /// redundant, and too many entry changes of one table become a table change), then the
    /// finer changes of the other tables, in the order reported.
    fn finish(self) -> Vec<Change> {
        if self.all {
            return vec![Change::All];
        }
        let mut whole: Vec<TableId> = Vec::new();
        for c in &self.list {
            let t = match *c {
                Change::Table(t) => t,
                Change::Entry(t, _) if self.entries[&t] > MAX_ENTRY_CHANGES => t,
                _ => continue,
            };
            if !whole.contains(&t) {
                whole.push(t);
            }
        }
        // Tables first as they were named, then the tables made whole.
        whole.sort_by_key(|t| !self.seen.contains(&Change::Table(*t)));
        let mut out: Vec<Change> = whole.iter().map(|&t| Change::Table(t)).collect();
        out.extend(self.list.into_iter().filter(|c| match *c {
            Change::Table(_) => false,
            Change::Entry(t, _) | Change::Misses(t) => !whole.contains(&t),
            Change::All => true,
        }));
        out
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
        carried_from: Option<u64>,
    ) -> Image {
        let master = Arc::new(StateLock::new(state));
        let replicas = if threads > 1 {
            let m = master.lock();
            (0..threads)
                .map(|_| StateLock::new(State::replica(&master, &m)))
                .collect()
        } else {
            Vec::new()
        };
        Image {
            program,
            generation,
            state: master,
            replicas,
            updates: Mutex::new(()),
            invalidations: InvalidationLog::default(),
            caches: CacheBoard::new(cache, threads),
            injector: Mutex::new(None),
            loaded: Instant::now(),
            retired: AtomicBool::new(false),
            carried_from,
        }
    }

    pub fn program(&self) -> &Arc<Program> {
        &self.program
    }

    /// The image's number in its pipeline (1 for the first program loaded, then 2, ...).
    pub fn generation(&self) -> u64 {
        self.generation
    }

    /// The generation of the image whose state was carried over to this one
    /// ([`crate::Pipeline::reload`]); `None` when it started afresh.
    pub fn carried_from(&self) -> Option<u64> {
        self.carried_from
    }

    /// When the image was loaded.
    pub fn loaded_at(&self) -> Instant {
        self.loaded
    }

    /// Runs `f` on the state under the state lock, between two batches of every poll thread.
    /// `f` says what it changed through its [`Changes`]; every poll thread's caches drop
    /// what they computed from the old state before their next packet. A change `f` does not
    /// report is a bug: report [`Changes::all`] when unsure. A retired image runs nothing
    /// ([`Retired`]): the caller takes the pipeline's current image and tries again.
    pub fn update<R>(&self, f: impl FnOnce(&mut State, &mut Changes) -> R) -> Result<R, Retired> {
        let mut changes = Changes::default();
        if self.replicas.is_empty() {
            let mut master = self.state.lock();
            if self.is_retired() {
                return Err(Retired);
            }
            let r = f(&mut master, &mut changes);
            for c in changes.finish() {
                self.invalidations.record(c);
            }
            return Ok(r);
        }
        let _one = lock(&self.updates);
        self.fold_all();
        let r = {
            let mut master = self.state.lock();
            if self.is_retired() {
                return Err(Retired);
            }
            master.journal(true);
            f(&mut master, &mut changes)
        };
        let list = changes.finish();
        let others = list.contains(&Change::All);
        for replica in &self.replicas {
            let mut replica = replica.lock();
            let mut master = self.state.lock();
            replica.fold_into(&mut master);
            replica.follow(&master, others);
        }
        self.state.lock().journal(false);
        // Recorded once every replica follows: a flow a thread cached from its replica
        // before it followed is dropped at its next batch, and none is cached from an old
        // table after that.
        for c in list {
            self.invalidations.record(c);
        }
        Ok(r)
    }

    /// Runs `f` on the state for reading, with every thread's counts added in. A retired
    /// image's state is what was carried over, as it was then.
    pub fn read<R>(&self, f: impl FnOnce(&State) -> R) -> R {
        let _one = lock(&self.updates);
        self.fold_all();
        f(&self.state.lock())
    }

    /// Adds what every replica counted to the master's counters, one replica at a time
    /// (its lock, then the master's).
    fn fold_all(&self) {
        for replica in &self.replicas {
            let mut replica = replica.lock();
            replica.fold_into(&mut self.state.lock());
        }
    }

    /// The state poll thread `thread` forwards with, locked, unless the image is retired:
    /// its replica, or the master when there is only one thread.
    pub(crate) fn lock_for_thread(&self, thread: usize) -> Result<StateGuard<'_, State>, Retired> {
        let state = match self.replicas.len() {
            0 => self.state.lock(),
            n => self.replicas[thread % n].lock(),
        };
        if self.retired.load(Ordering::Acquire) {
            return Err(Retired);
        }
        Ok(state)
    }

    /// The whole state locked even when retired (no update running, every thread between
    /// batches, counts added in), for the swap that carries the state over.
    pub(crate) fn lock_for_swap(&self) -> Quiet<'_> {
        let one = lock(&self.updates);
        let mut replicas: Vec<StateGuard<'_, State>> =
            self.replicas.iter().map(|r| r.lock()).collect();
        let mut master = self.state.lock();
        for r in &mut replicas {
            r.fold_into(&mut master);
        }
        Quiet {
            _one: one,
            _replicas: replicas,
            master,
        }
    }

    /// Marks the image retired; call with its state lock held (from [`Image::lock_for_swap`]).
    pub(crate) fn retire(&self) {
        self.retired.store(true, Ordering::Release);
    }

    /// Whether a newer image took this one's state over.
    pub fn is_retired(&self) -> bool {
        self.retired.load(Ordering::Acquire)
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
            let mut state = self.state.lock();
            if self.is_retired() {
                return Err(Retired.to_string());
            }
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

#[cfg(test)]
mod tests {
    use super::*;
    use koi_ir::entity::EntityId;

    #[test]
    fn changes_are_kept_as_fine_as_is_worth_it() {
        let (a, b) = (TableId::new(0), TableId::new(1));
        let mut c = Changes::default();
        c.entry(a, 3);
        c.entry(a, 3);
        c.misses(a);
        c.entry(b, 1);
        c.table(b);
        assert_eq!(
            c.finish(),
            vec![Change::Table(b), Change::Entry(a, 3), Change::Misses(a)]
        );
        let mut c = Changes::default();
        for i in 0..=MAX_ENTRY_CHANGES as u32 {
            c.entry(a, i);
        }
        c.misses(b);
        assert_eq!(c.finish(), vec![Change::Table(a), Change::Misses(b)]);
        let mut c = Changes::default();
        c.entry(a, 1);
        c.all();
        c.misses(b);
        assert_eq!(c.finish(), vec![Change::All]);
        assert!(Changes::default().finish().is_empty());
    }
}
