//! The poll threads: each owns a share of the ports' receive sides, sleeps in `poll(2)` until
//! one has packets, takes a batch of up to 32 and runs it through the engine of the port's
//! pipeline, then sends the outputs by port number.
//!
//! **Engines.** A thread keeps one engine per pipeline its ports feed: the cached datapath
//! ([`Datapath`]: microflow cache, megaflow classifier, the interpreter on a miss) or, without
//! caches, the reference interpreter, built over the pipeline's current [`Image`] and holding
//! it (an `Arc`). Before every batch the thread compares the pipeline's generation with its
//! engine's (one atomic load); when a new program was loaded, it drops the old engine and
//! builds one over the new image. So a packet is processed wholly by one image, and an old
//! image lives until the last thread has moved on.
//!
//! **Misses.** A batch runs its cache hits and hands its misses back into the thread's
//! slow-path queues ([`crate::upcall`]), which the thread works through after receiving from
//! every ready port: hits never wait behind misses, and a flood of misses cannot keep the
//! thread from draining its rings.
//!
//! **Consistency.** A batch runs under its image's state lock, after the thread's caches have
//! caught up with the image's invalidation log ([`crate::cache`]); digests the batch produced
//! go to the pipeline's controller before the lock is released. Outputs are copied out of the
//! locked section and sent after it, so a thread never holds the state lock and a port lock at
//! once.

use crate::cache::Publisher;
use crate::image::Image;
use crate::lock;
use crate::pipeline::Pipeline;
use crate::ports::{Ingress, Outbox, Outputs, Patched, PortTable};
use crate::switch::Switch;
use crate::upcall::Upcalls;
use koi_datapath::{Datapath, PathTaken, Summary};
use koi_interp::{InterpError, Interpreter};
use koi_ports::{Batch, Poller, Readiness, Wake};
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Instant;

/// How long a poll thread sleeps at most before it checks for shutdown, new programs and idle
/// ports.
const POLL_MS: i32 = 100;

/// How a thread processes one pipeline's packets.
enum Kind<'p> {
    /// No flow caches.
    Interpreter(Box<Interpreter<'p>>),
    /// The cached datapath, up to date with the image's invalidation log's epoch `seen`.
    Cached { dp: Box<Datapath<'p>>, seen: u64 },
}

/// A thread's engine over one image, with its side of the image's cache board.
struct Engine<'p> {
    kind: Kind<'p>,
    publisher: Publisher<'p>,
}

self_cell::self_cell!(
    /// An engine and the image it runs (which it borrows from).
    struct EngineCell {
        owner: Arc<Image>,
        #[not_covariant]
        dependent: Engine,
    }
);

/// A thread's engine for one pipeline: the generation it was built for (0: none), and the
/// engine if that generation has an image the thread could build one for.
struct Slot {
    generation: u64,
    engine: Option<EngineCell>,
}

impl Engine<'_> {
    fn new(image: &Image, thread: usize) -> Result<Engine<'_>, String> {
        let kind = match image.caches.config.as_ref() {
            Some(c) => {
                // Changes recorded before this point concern caches that are still empty.
                let seen = image.invalidations.epoch();
                let dp = Datapath::with_config(
                    &image.program().pipeline,
                    koi_interp::Options::default(),
                    c.clone(),
                )
                .map_err(|e| e.to_string())?;
                Kind::Cached {
                    dp: Box::new(dp),
                    seen,
                }
            }
            None => Kind::Interpreter(Box::new(
                Interpreter::new(&image.program().pipeline).map_err(|e| e.to_string())?,
            )),
        };
        Ok(Engine {
            kind,
            publisher: Publisher::new(&image.caches, thread),
        })
    }

    /// Catches up with the invalidation log without the state lock and publishes the cache
    /// snapshot if due (`now`: the thread is stopping or leaving the image).
    fn idle(&mut self, image: &Image, now: bool) {
        if let Kind::Cached { dp, seen } = &mut self.kind {
            *seen = image.invalidations.catch_up(*seen, dp);
            self.publisher.tick(dp, *seen, now);
        }
    }
}

impl Slot {
    /// Makes the engine current with `pipeline`'s image; true if it changed.
    fn refresh(&mut self, pipeline: &Pipeline, thread: usize) -> bool {
        let want = pipeline.generation();
        if self.generation == want {
            return false;
        }
        if let Some(old) = &mut self.engine {
            old.with_dependent_mut(|image, e| e.idle(image, true));
        }
        self.engine = None;
        self.generation = want;
        let Some(image) = pipeline.image() else {
            return true;
        };
        self.generation = image.generation();
        match EngineCell::try_new(image, |img| Engine::new(img, thread)) {
            Ok(e) => self.engine = Some(e),
            Err(e) => tracing::error!(
                pipeline = pipeline.name(),
                error = %e,
                "cannot run the program on this thread; its packets are dropped"
            ),
        }
        true
    }
}

/// What became of one packet of a batch: the path it took (`None` on the interpreter
/// alone), why processing stopped early if it did, or the pipeline's error.
type Fate = Result<(Option<PathTaken>, Option<String>), String>;

/// A poll thread's reusable buffers.
#[derive(Default)]
struct Work {
    outputs: Outputs,
    fates: Vec<Fate>,
    /// The ports a batch sent to, and the packets it handed over patch ports.
    out: Outbox,
    /// Patched packets being run through their next pipeline (a buffer kept for reuse).
    pending: Patched,
    /// The thread's number (which replica of an image's state it forwards with).
    thread: usize,
    /// Software spread: per thread the frames to hand over, and what was handed to this one
    /// (buffers kept for reuse).
    handoff: Vec<Patched>,
    handed: Patched,
    /// The slow-path queues: misses waiting for the interpreter.
    upcalls: Upcalls,
}

/// Forwards packets received on the ports given to thread `t` until the switch stops; the
/// ports are those of the switch's current port table, looked at again when it changes.
pub(crate) fn poll_loop(sw: &Switch, t: usize) {
    let mut slots: Vec<Slot> = sw
        .pipelines()
        .iter()
        .map(|_| Slot {
            generation: 0,
            engine: None,
        })
        .collect();
    let mut work = Work {
        thread: t,
        ..Work::default()
    };
    let mut batch = Batch::new(koi_ports::DEFAULT_SNAPLEN);
    let mut poller = Poller::new();
    let mut ready: Vec<Readiness> = Vec::new();
    // The ports and the pipelines, as of the port table's version (a pipeline gets packets
    // only through a port, so a new one comes with a new version).
    let (mut version, mut table, mut pipelines) = (0, sw.ports(), sw.pipelines());
    // The ports this thread receives from, by index in the table.
    let mut mine: Vec<usize> = Vec::new();
    let mut used: Vec<usize> = Vec::new();
    while !sw.stopping() {
        if sw.ports_version() != version {
            version = sw.ports_version();
            table = sw.ports();
            pipelines = sw.pipelines();
            mine = (0..table.len())
                .filter(|&i| table[i].receiver(t).is_some())
                .collect();
            used = mine.iter().map(|&i| table[i].pipeline).collect();
            // Pipelines behind patch ports take this thread's packets too.
            used.extend(table.patch_pipelines());
            used.sort_unstable();
            used.dedup();
            work.out = Outbox::for_table(&table);
            // Pipelines added since: a slot each. Pipelines this thread no longer serves:
            // their engines (and images) go.
            slots.resize_with(pipelines.len(), || Slot {
                generation: 0,
                engine: None,
            });
            for (p, slot) in slots.iter_mut().enumerate() {
                if !used.contains(&p)
                    && let Some(mut e) = slot.engine.take()
                {
                    e.with_dependent_mut(|image, e| e.idle(image, true));
                    slot.generation = 0;
                }
            }
        }
        for &p in &used {
            let slot = &mut slots[p];
            if slot.refresh(&pipelines[p], t) {
                work.upcalls.forget_flows(p);
            }
            if let Some(e) = &mut slot.engine {
                // Idle caches catch up too, so that what they show and hold is current.
                e.with_dependent_mut(|image, e| e.idle(image, false));
            }
        }
        ready.clear();
        ready.extend(
            mine.iter()
                .filter_map(|&i| table[i].receiver(t).map(|r| lock(r).readiness())),
        );
        // Last: what other threads handed over.
        ready.push(sw.inboxes[t].wake.readiness());
        // With misses waiting, only a look at the ports.
        let wait_ms = if work.upcalls.is_empty() { POLL_MS } else { 0 };
        if let Err(e) = poller.wait(&ready, wait_ms) {
            tracing::error!(error = %e, "poll failed");
            sw.stop();
            break;
        }
        // Whether a port had more waiting than a batch takes: the thread is behind.
        let mut behind = false;
        work.upcalls.begin_round();
        for (k, &i) in mine.iter().enumerate() {
            let slot = &table[i];
            let wake = poller.wake(k);
            if wake == Wake::Nothing && ready[k] != Readiness::Idle {
                continue;
            }
            {
                let Some(rx) = slot.receiver(t) else {
                    continue;
                };
                let mut port = lock(rx);
                if wake == Wake::Error {
                    port.handle_error();
                }
                if let Err(e) = port.recv_batch(&mut batch) {
                    tracing::debug!(port = slot.num, error = %e, "receive failed");
                }
            }
            if batch.packets().is_empty() {
                continue;
            }
            if batch.packets().len() == batch.capacity() {
                behind = true;
                work.upcalls.behind();
            }
            let into = Ingress {
                pipeline: slot.pipeline,
                port: slot.num,
                passes: 1,
                lossless: slot.lossless,
            };
            let lanes = (&*table, &pipelines[..]);
            if slot.soft_spread {
                let kept = hand_over(sw, t, into, batch.packets(), &mut work);
                run_batch(sw, lanes, &mut slots, t, into, &kept, &mut work, true);
            } else {
                let packets = batch.packets();
                run_batch(sw, lanes, &mut slots, t, into, packets, &mut work, true);
            }
            run_patched(sw, lanes, &mut slots, t, &mut work);
        }
        // What other threads handed over, in the order they did.
        let inbox = &sw.inboxes[t];
        if poller.wake(mine.len()) != Wake::Nothing {
            inbox.wake.clear();
            let mut handed = std::mem::take(&mut work.handed);
            std::mem::swap(&mut handed, &mut *lock(&inbox.queue));
            let lanes = (&*table, &pipelines[..]);
            handed.runs(|into, packets| {
                run_batch(sw, lanes, &mut slots, t, into, packets, &mut work, true);
                run_patched(sw, lanes, &mut slots, t, &mut work);
            });
            handed.clear();
            work.handed = handed;
        }
        if !work.upcalls.is_empty() {
            let lanes = (&*table, &pipelines[..]);
            run_upcalls(sw, lanes, &mut slots, t, &mut work, behind);
        }
    }
    for slot in &mut slots {
        if let Some(e) = &mut slot.engine {
            e.with_dependent_mut(|image, e| e.idle(image, true));
        }
    }
}

/// Runs queued misses, flow by flow in turn, for as long as [`Upcalls::allowance`] gives (a
/// share of the rounds while the thread is `behind`, a port having had a full batch waiting;
/// else a [`crate::upcall::SLICE`]); what they send over patch ports runs after each.
fn run_upcalls(
    sw: &Switch,
    lanes: (&PortTable, &[Arc<Pipeline>]),
    slots: &mut [Slot],
    t: usize,
    work: &mut Work,
    behind: bool,
) {
    let allowed = work.upcalls.allowance(behind);
    if allowed.is_zero() {
        return;
    }
    let start = Instant::now();
    while let Some(flow) = work.upcalls.pop_flow() {
        let t0 = Instant::now();
        run_batch(sw, lanes, slots, t, flow.into, &flow.packets, work, false);
        run_patched(sw, lanes, slots, t, work);
        let took = t0.elapsed();
        sw.counters.upcalls.fetch_add(1, Ordering::Relaxed);
        sw.counters
            .upcall_ns
            .fetch_add(took.as_nanos() as u64, Ordering::Relaxed);
        sw.counters
            .upcall_queued
            .fetch_sub(flow.packets.len() as u64, Ordering::Relaxed);
        work.upcalls.done(flow, took);
        if behind {
            work.upcalls.charge(took);
        }
        if start.elapsed() >= allowed {
            break;
        }
    }
}

/// Runs what the last batches sent over patch ports, pipeline after pipeline, in order; each
/// hop counts towards MAX_PASSES, so this ends.
fn run_patched(
    sw: &Switch,
    lanes: (&PortTable, &[Arc<Pipeline>]),
    slots: &mut [Slot],
    t: usize,
    work: &mut Work,
) {
    let mut pending = std::mem::take(&mut work.pending);
    std::mem::swap(&mut pending, &mut work.out.patched);
    while !pending.is_empty() {
        pending.runs(|into, packets| run_batch(sw, lanes, slots, t, into, packets, work, true));
        pending.clear();
        std::mem::swap(&mut pending, &mut work.out.patched);
    }
    work.pending = pending;
}

/// Software spread: hands each of `packets` (entering as `into`) whose flow belongs to
/// another thread to that thread (one lock and one wake-up per thread and batch); returns
/// the ones that are this thread's, in order.
fn hand_over<'b, P: AsRef<[u8]>>(
    sw: &Switch,
    t: usize,
    into: Ingress,
    packets: &'b [P],
    work: &mut Work,
) -> Vec<&'b [u8]> {
    let n = sw.inboxes.len();
    work.handoff.resize_with(n, Patched::default);
    let mut kept = Vec::with_capacity(packets.len());
    for p in packets {
        let p = p.as_ref();
        let to = (koi_ports::flow_hash(p) % n as u64) as usize;
        if to == t {
            kept.push(p);
        } else {
            work.handoff[to].push(into, p);
        }
    }
    for (to, h) in work.handoff.iter_mut().enumerate() {
        if !h.is_empty() {
            lock(&sw.inboxes[to].queue).append(h);
            sw.inboxes[to].wake.wake();
            h.clear();
        }
    }
    kept
}

/// Runs `packets`, entering as `into` says, through this thread's engine for that pipeline;
/// `lanes`: the port table and the pipelines this thread works with; `defer`: misses go to
/// the slow-path queues (else they run now).
#[allow(clippy::too_many_arguments)]
fn run_batch<P: AsRef<[u8]>>(
    sw: &Switch,
    lanes: (&PortTable, &[Arc<Pipeline>]),
    slots: &mut [Slot],
    t: usize,
    into: Ingress,
    packets: &[P],
    work: &mut Work,
    defer: bool,
) {
    let (table, pipelines) = lanes;
    let pipeline = &pipelines[into.pipeline];
    let engine = &mut slots[into.pipeline];
    loop {
        // A program loaded since the poll: these packets are the new image's.
        if engine.refresh(pipeline, t) {
            work.upcalls.forget_flows(into.pipeline);
        }
        match &mut engine.engine {
            Some(e) => {
                if forward(sw, table, pipeline, e, work, packets, into, defer) {
                    break;
                }
                // Retired while we waited for its lock: the batch goes to the new image,
                // untouched.
            }
            None => {
                let n = packets.len() as u64;
                sw.counters.no_program.fetch_add(n, Ordering::Relaxed);
                pipeline.counters.no_program.fetch_add(n, Ordering::Relaxed);
                break;
            }
        }
    }
}

/// Runs the packets entering as `into` says through `engine` (the cached datapath takes them
/// as one batch; `defer`: its misses go to the slow-path queues) and sends what comes out, in
/// order. Returns false, having done nothing, when the engine's image was retired (its state
/// carried over to a newer image).
#[allow(clippy::too_many_arguments)]
fn forward<P: AsRef<[u8]>>(
    sw: &Switch,
    table: &PortTable,
    pipeline: &Pipeline,
    engine: &mut EngineCell,
    work: &mut Work,
    packets: &[P],
    into: Ingress,
    defer: bool,
) -> bool {
    let port = into.port;
    let Work {
        outputs,
        fates,
        out,
        thread,
        upcalls,
        ..
    } = work;
    outputs.clear();
    fates.clear();
    // Packets the batch queued for the slow path, and dropped at a full queue.
    let mut deferred = (0, 0);
    let done = engine.with_dependent_mut(|image, engine| {
        {
            let Ok(mut state) = image.lock_for_thread(*thread) else {
                return false;
            };
            match &mut engine.kind {
                Kind::Interpreter(interp) => {
                    for (k, pkt) in packets.iter().enumerate() {
                        let fate = interp
                            .process(&mut state, pkt.as_ref(), port, sw.clock())
                            .map(|o| {
                                for out in &o.outputs {
                                    outputs.push(k, out.port, &out.bytes);
                                }
                                (None, o.report.aborted)
                            });
                        fates.push(fate.map_err(|e| e.to_string()));
                    }
                }
                Kind::Cached { dp, seen } => {
                    *seen = image.invalidations.catch_up(*seen, dp);
                    let sink = &mut |k, p, b: &[u8]| {
                        outputs.push(k, p, b);
                    };
                    let prefetch = Some(koi_ports::prefetch);
                    let clock = sw.clock();
                    let fate = |r: Result<&Summary, &InterpError>| {
                        r.map(|s| (Some(s.path), s.aborted.clone()))
                            .map_err(|e| e.to_string())
                    };
                    // A file's misses run where they are: it waits for the thread anyway, and
                    // a queued miss must not wait behind a read that blocks (a named pipe).
                    if defer && !into.lossless {
                        // What the batch hands back goes straight into the port's queue.
                        let session = upcalls.session(into);
                        let done = &mut |k: usize, r: Result<&Summary, &InterpError>| {
                            if let Ok(s) = r
                                && let PathTaken::Deferred(h) = s.path
                            {
                                session.take(packets[k].as_ref(), h);
                            }
                            fates.push(fate(r));
                        };
                        dp.process_batch_deferring(
                            &mut state, packets, port, clock, prefetch, &session, sink, done,
                        );
                        deferred = session.done();
                    } else {
                        let done = &mut |_, r: Result<&Summary, &InterpError>| fates.push(fate(r));
                        dp.process_batch_prefetching(
                            &mut state, packets, port, clock, prefetch, sink, done,
                        );
                    }
                }
            }
            state.packet_done();
            pipeline.deliver_digests(image, &mut state);
        }
        let mut sent = outputs.iter().peekable();
        for (k, fate) in fates.iter().enumerate() {
            let mine = std::iter::from_fn(|| sent.next_if(|(_, j, _)| *j == k));
            let (path, aborted) = match fate {
                Ok(r) => r,
                Err(e) => {
                    tracing::debug!(port, error = %e, "pipeline error");
                    sw.counters.pipeline_errors.fetch_add(1, Ordering::Relaxed);
                    mine.for_each(drop);
                    continue;
                }
            };
            if let Some(why) = aborted {
                tracing::debug!(port, why, "processing stopped early");
            }
            if *path == Some(PathTaken::Limited) {
                sw.counters.upcall_limit.fetch_add(1, Ordering::Relaxed);
                mine.for_each(drop);
                continue;
            }
            if let Some(PathTaken::Deferred(_)) = *path {
                // Queued (or dropped at the full queue) by the batch.
                mine.for_each(drop);
                continue;
            }
            let mut any = false;
            for (i, _, _) in mine {
                any = true;
                sw.send(table, out, pipeline, image, outputs, i, into);
            }
            if !any {
                sw.counters.program_drops.fetch_add(1, Ordering::Relaxed);
            }
        }
        true
    });
    if deferred != (0, 0) {
        let (queued, dropped) = (deferred.0 as u64, deferred.1 as u64);
        sw.counters
            .upcall_queued
            .fetch_add(queued, Ordering::Relaxed);
        sw.counters
            .upcall_queue_full
            .fetch_add(dropped, Ordering::Relaxed);
        if let Some(i) = table.port_index((into.pipeline, port)) {
            let c = &table[i].upcalls;
            c.queued.fetch_add(queued, Ordering::Relaxed);
            c.queue_full.fetch_add(dropped, Ordering::Relaxed);
        }
    }
    sw.flush(table, out, outputs);
    done
}
