//! A poll thread's slow-path queues: the cache misses its batches handed back, waiting to be
//! run by the interpreter, so that the fast path never waits behind them.
//!
//! Open vSwitch's kernel datapath hands misses to handler threads through per-port queues;
//! its userspace datapath runs them on the poll (PMD) thread that owns the caches. koi does
//! the second with the first's queues: a thread's megaflow caches are its own (no lock, no
//! cross-thread installs to revalidate), and on a machine whose cores all poll, a handler
//! thread would only take its time from a poll thread through the scheduler. What the
//! queues buy is the order of the work:
//!
//! - **Hits first, under load.** While the slow path keeps up, misses run where they are,
//!   in the batch, and a port's frames are handled in the order they came. Once a round of
//!   the thread (receiving from every ready port) has spent [`INLINE_BUDGET`], or a port
//!   had a full batch waiting (the thread is behind), the thread **defers** for
//!   [`HOLD`]: a batch runs its cache hits at once and hands back its misses
//!   ([`koi_datapath::Datapath::process_batch_deferring`]), which are copied into the queue
//!   of the port they came from. The thread runs queued misses only after it has received
//!   from every ready port: while it is behind, for a [`BEHIND_SHARE`] of the time the
//!   rounds take (saved up over rounds), else for up to [`SLICE`] before it polls again. So the rings are drained at fast-path speed, and a
//!   flood of misses cannot make the kernel drop an established flow's packets at a full
//!   ring. (While deferring, frames of different flows from one port may leave in another
//!   order than they came: a hit overtakes another flow's miss.)
//! - **Fair.** Queues are served in turn, one flow at a time: a port flooding new flows fills
//!   only its own queue, whose newest packets are dropped when it is full (counted per port,
//!   `upcall_queue_full`); another port's misses wait at most one turn.
//! - **In order within a flow.** While a flow (its flow-key hash) has packets queued, its
//!   new packets queue behind them even if they would hit; when the flow's first queued
//!   packet runs, every queued packet of the flow runs right after it.
//! - **Bounded by what the slow path sustains.** Each queue holds [`QUEUE_TIME`] of slow-path
//!   work at the measured cost per run (between [`MIN_QUEUE`] and [`MAX_QUEUE`] packets),
//!   so a miss waits at most about that long, whatever a run costs on this machine and
//!   program. No fixed rate is needed; `--upcall-rate` still caps the runs per second when
//!   given.
//!
//! A queued packet has not been processed at all (the fast path only looked it up), so it
//! can run on whatever program the pipeline has when its turn comes: a swap in between
//! leaves it to the new program, and [`Upcalls::forget_flows`] drops the old program's flow
//! hashes.

use crate::ports::Ingress;
use std::cell::{Cell, RefCell};
use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// Slow-path time a round may spend on misses where they are before the thread defers.
pub const INLINE_BUDGET: Duration = Duration::from_millis(1);
/// How long the thread keeps deferring once it started (and while misses are queued).
pub const HOLD: Duration = Duration::from_millis(100);

/// How long a thread runs queued misses at most before it polls its ports again, when no
/// port was behind.
pub const SLICE: Duration = Duration::from_micros(500);
/// The share of a round's time (receiving and running hits) the slow path gets while the
/// thread is behind: 1 in 4, so that at least four fifths of its time drain the rings.
pub const BEHIND_SHARE: u32 = 4;
/// Slow-path work a port's queue holds, at the measured cost per run.
pub const QUEUE_TIME: Duration = Duration::from_millis(20);
/// The least and most packets a port's queue holds.
pub const MIN_QUEUE: usize = 16;
pub const MAX_QUEUE: usize = 4096;
/// The cost per run assumed before any was measured.
const FIRST_COST_NS: f64 = 50_000.0;

/// A port's slow-path counters (cumulative).
#[derive(Debug, Default)]
pub struct UpcallCounters {
    /// Packets queued for the slow path.
    pub queued: AtomicU64,
    /// Packets dropped because the port's queue was full.
    pub queue_full: AtomicU64,
}

impl UpcallCounters {
    pub fn get(&self) -> (u64, u64) {
        (
            self.queued.load(Ordering::Relaxed),
            self.queue_full.load(Ordering::Relaxed),
        )
    }
}

/// One packet waiting for the slow path.
struct Entry {
    bytes: Vec<u8>,
    passes: u8,
    lossless: bool,
    /// Its flow-key hash under the program it was looked up with (`None`: no key, or the
    /// program changed since).
    hash: Option<u64>,
}

/// The packets one port (of one pipeline) handed back, oldest first.
struct Queue {
    pipeline: usize,
    port: u64,
    entries: VecDeque<Entry>,
}

/// What [`Upcalls::pop_flow`] gives: where the packets entered, and the packets.
pub(crate) struct Flow {
    pub into: Ingress,
    pub packets: Vec<Vec<u8>>,
}

/// A poll thread's slow-path queues.
pub(crate) struct Upcalls {
    queues: Vec<Queue>,
    /// Flows (pipeline, flow-key hash) with packets queued, and how many. Shared: the batch
    /// asks it for every packet while its summaries add to it.
    pending: RefCell<HashMap<(usize, u64), u32>>,
    /// The queue served next.
    next: usize,
    /// Packets queued, all queues together.
    len: usize,
    /// Buffers of packets that ran, for the next ones queued.
    spare: Vec<Vec<u8>>,
    /// Nanoseconds per slow-path run, smoothed.
    cost_ns: f64,
    /// Whether this round defers misses, when it started, and until when the thread defers.
    deferring: Cell<bool>,
    round: Instant,
    hold_until: Cell<Instant>,
    /// Slow-path time earned while behind (nanoseconds; negative: overspent).
    credit: i64,
}

impl Default for Upcalls {
    fn default() -> Self {
        Upcalls {
            queues: Vec::new(),
            pending: RefCell::new(HashMap::new()),
            next: 0,
            len: 0,
            spare: Vec::new(),
            cost_ns: FIRST_COST_NS,
            deferring: Cell::new(false),
            round: Instant::now(),
            hold_until: Cell::new(Instant::now()),
            credit: 0,
        }
    }
}

impl Upcalls {
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// A round of the thread begins: it defers if misses are queued or it began deferring
    /// less than [`HOLD`] ago.
    pub fn begin_round(&mut self) {
        let now = Instant::now();
        self.round = now;
        self.deferring
            .set(self.len > 0 || now < self.hold_until.get());
    }

    /// A port had more waiting than a batch takes: defer from now on.
    pub fn behind(&self) {
        self.start_deferring(Instant::now());
    }

    fn start_deferring(&self, now: Instant) {
        self.deferring.set(true);
        self.hold_until.set(now + HOLD);
    }

    /// How long the slow path may run at the end of this round: [`SLICE`], or while the
    /// thread is `behind`, what it earned (a [`BEHIND_SHARE`] of each round's time so far,
    /// saved up to at most a slice, less what runs overspent).
    pub fn allowance(&mut self, behind: bool) -> Duration {
        if !behind {
            self.credit = 0;
            return SLICE;
        }
        let earned = self.round.elapsed().as_nanos() as i64 / i64::from(BEHIND_SHARE);
        self.credit = (self.credit + earned).min(SLICE.as_nanos() as i64);
        Duration::from_nanos(self.credit.max(0) as u64)
    }

    /// Charges a run of `took` to the time earned while behind.
    pub fn charge(&mut self, took: Duration) {
        self.credit -= took.as_nanos() as i64;
    }

    /// Whether a packet of the round that needs the slow path is deferred.
    pub fn defers_miss(&self) -> bool {
        if self.deferring.get() {
            return true;
        }
        let now = Instant::now();
        if now.duration_since(self.round) >= INLINE_BUDGET {
            self.start_deferring(now);
            return true;
        }
        false
    }

    /// Packets a port's queue holds at most now.
    pub fn capacity(&self) -> usize {
        let n = QUEUE_TIME.as_nanos() as f64 / self.cost_ns.max(1.0);
        (n as usize).clamp(MIN_QUEUE, MAX_QUEUE)
    }

    /// Whether some queue is at its capacity (then a lossless port is not read: its batch's
    /// misses, and those of what it sends over patch ports, may land in any queue).
    pub fn is_full(&self) -> bool {
        let cap = self.capacity();
        self.queues.iter().any(|q| q.entries.len() >= cap)
    }

    /// Whether a packet of `pipeline` with flow-key hash `hash` must queue behind packets of
    /// its flow.
    #[inline]
    pub fn waits(&self, pipeline: usize, hash: u64) -> bool {
        if self.len == 0 {
            return false;
        }
        self.pending.borrow().contains_key(&(pipeline, hash))
    }

    /// Notes that a batch handed back a packet of `pipeline` with flow-key hash `hash` (so
    /// that the rest of the batch queues behind it), before [`Upcalls::push`] queues it.
    pub fn note(&self, pipeline: usize, hash: Option<u64>) {
        if let Some(h) = hash {
            *self.pending.borrow_mut().entry((pipeline, h)).or_default() += 1;
        }
    }

    fn unnote(&self, pipeline: usize, hash: Option<u64>, n: u32) {
        let Some(h) = hash else {
            return;
        };
        let mut pending = self.pending.borrow_mut();
        if let Some(c) = pending.get_mut(&(pipeline, h)) {
            *c = c.saturating_sub(n);
            if *c == 0 {
                pending.remove(&(pipeline, h));
            }
        }
    }

    /// Queues a packet [`Upcalls::note`]d; false (and un-noted) if its port's queue is full,
    /// unless it came from a lossless port (read only while no queue is full: the rest of
    /// its batch goes in).
    pub fn push(&mut self, into: Ingress, packet: &[u8], hash: Option<u64>) -> bool {
        let cap = self.capacity();
        let q = match self
            .queues
            .iter()
            .position(|q| q.pipeline == into.pipeline && q.port == into.port)
        {
            Some(q) => q,
            None => {
                self.queues.push(Queue {
                    pipeline: into.pipeline,
                    port: into.port,
                    entries: VecDeque::new(),
                });
                self.queues.len() - 1
            }
        };
        if !into.lossless && self.queues[q].entries.len() >= cap {
            self.unnote(into.pipeline, hash, 1);
            return false;
        }
        let mut bytes = self.spare.pop().unwrap_or_default();
        bytes.clear();
        bytes.extend_from_slice(packet);
        self.queues[q].entries.push_back(Entry {
            bytes,
            passes: into.passes,
            lossless: into.lossless,
            hash,
        });
        self.len += 1;
        true
    }

    /// The next queue's oldest packet with every other queued packet of its flow (same hash
    /// and pass), in order; queues take turns.
    pub fn pop_flow(&mut self) -> Option<Flow> {
        if self.len == 0 {
            return None;
        }
        let n = self.queues.len();
        let q = (0..n)
            .map(|k| (self.next + k) % n)
            .find(|&q| !self.queues[q].entries.is_empty())?;
        self.next = (q + 1) % n;
        let queue = &mut self.queues[q];
        let first = queue.entries.pop_front()?;
        let into = Ingress {
            pipeline: queue.pipeline,
            port: queue.port,
            passes: first.passes,
            lossless: first.lossless,
        };
        let (hash, passes) = (first.hash, first.passes);
        let mut packets = vec![first.bytes];
        if hash.is_some() {
            let mut kept = VecDeque::with_capacity(queue.entries.len());
            for e in queue.entries.drain(..) {
                if e.hash == hash && e.passes == passes {
                    packets.push(e.bytes);
                } else {
                    kept.push_back(e);
                }
            }
            queue.entries = kept;
        }
        self.len -= packets.len();
        self.unnote(into.pipeline, hash, packets.len() as u32);
        Some(Flow { into, packets })
    }

    /// Takes back the buffers of packets that ran, and the time their run took.
    pub fn done(&mut self, flow: Flow, took: Duration) {
        const WEIGHT: f64 = 1.0 / 16.0;
        self.cost_ns += (took.as_nanos() as f64 - self.cost_ns) * WEIGHT;
        if self.spare.len() < MAX_QUEUE {
            self.spare.extend(flow.packets);
        }
    }

    /// The program of `pipeline` changed: its queued packets' flow hashes mean nothing now.
    pub fn forget_flows(&mut self, pipeline: usize) {
        self.pending.borrow_mut().retain(|(p, _), _| *p != pipeline);
        for q in self.queues.iter_mut().filter(|q| q.pipeline == pipeline) {
            for e in &mut q.entries {
                e.hash = None;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn into(port: u64) -> Ingress {
        Ingress {
            pipeline: 0,
            port,
            passes: 1,
            lossless: false,
        }
    }

    fn queue(u: &mut Upcalls, port: u64, byte: u8, hash: Option<u64>) -> bool {
        u.note(0, hash);
        u.push(into(port), &[byte], hash)
    }

    #[test]
    fn ports_take_turns_and_a_flow_runs_whole() {
        let mut u = Upcalls::default();
        // Port 1: flows A, B, A; port 2: flow C.
        assert!(queue(&mut u, 1, 1, Some(10)));
        assert!(queue(&mut u, 1, 2, Some(20)));
        assert!(queue(&mut u, 1, 3, Some(10)));
        assert!(queue(&mut u, 2, 4, Some(30)));
        assert!(u.waits(0, 10) && u.waits(0, 20) && u.waits(0, 30));
        let f = u.pop_flow().unwrap_or_else(|| panic!("queued"));
        assert_eq!((f.into.port, f.packets), (1, vec![vec![1], vec![3]]));
        assert!(!u.waits(0, 10), "flow A has nothing queued any more");
        let f = u.pop_flow().unwrap_or_else(|| panic!("queued"));
        assert_eq!((f.into.port, f.packets), (2, vec![vec![4]]));
        let f = u.pop_flow().unwrap_or_else(|| panic!("queued"));
        assert_eq!((f.into.port, f.packets), (1, vec![vec![2]]));
        assert!(u.pop_flow().is_none() && u.is_empty());
        assert!(!u.waits(0, 20) && !u.waits(0, 30));
    }

    #[test]
    fn a_full_queue_drops_only_its_own_port() {
        let mut u = Upcalls::default();
        let cap = u.capacity();
        for i in 0..cap {
            assert!(queue(&mut u, 1, 0, Some(i as u64)));
        }
        assert!(!queue(&mut u, 1, 0, Some(99_999)));
        assert!(
            !u.waits(0, 99_999),
            "a dropped packet leaves no flow waiting"
        );
        assert!(queue(&mut u, 2, 0, Some(99_999)));
        assert_eq!(u.len, cap + 1);
    }

    #[test]
    fn the_capacity_follows_the_measured_cost() {
        let mut u = Upcalls::default();
        for _ in 0..200 {
            assert!(queue(&mut u, 1, 0, None));
            let f = u.pop_flow().unwrap_or_else(|| panic!("queued"));
            u.done(f, Duration::from_micros(10));
        }
        assert!((9_900.0..=10_100.0).contains(&u.cost_ns), "{}", u.cost_ns);
        assert!((1900..=2100).contains(&u.capacity()), "{}", u.capacity());
        for _ in 0..200 {
            assert!(queue(&mut u, 1, 0, None));
            let f = u.pop_flow().unwrap_or_else(|| panic!("queued"));
            u.done(f, Duration::from_millis(5));
        }
        assert_eq!(u.capacity(), MIN_QUEUE);
    }

    #[test]
    fn misses_are_deferred_once_a_round_spent_its_budget_and_for_a_while_after() {
        let mut u = Upcalls::default();
        u.begin_round();
        assert!(
            !u.defers_miss(),
            "a quiet thread runs misses where they are"
        );
        std::thread::sleep(INLINE_BUDGET);
        assert!(u.defers_miss(), "the round spent its budget");
        u.begin_round();
        assert!(u.deferring.get(), "deferring holds into the next rounds");
        let mut quiet = Upcalls::default();
        quiet.behind();
        quiet.begin_round();
        assert!(quiet.defers_miss(), "a thread that is behind defers");
        quiet.hold_until.set(Instant::now());
        quiet.begin_round();
        assert!(
            !quiet.defers_miss(),
            "and stops when the hold is over and nothing is queued"
        );
        assert!(queue(&mut quiet, 1, 0, None));
        quiet.begin_round();
        assert!(
            quiet.defers_miss(),
            "misses queued: the next ones queue behind them"
        );
    }

    #[test]
    fn behind_the_slow_path_gets_a_share_of_the_rounds() {
        let mut u = Upcalls::default();
        assert_eq!(u.allowance(false), SLICE);
        u.begin_round();
        std::thread::sleep(Duration::from_millis(2));
        let a = u.allowance(true);
        assert_eq!(a, SLICE, "a quarter of 2 ms, at most a slice: {a:?}");
        u.charge(Duration::from_millis(5));
        u.begin_round();
        assert_eq!(
            u.allowance(true),
            Duration::ZERO,
            "overspent: nothing until earned back"
        );
        assert_eq!(
            u.allowance(false),
            SLICE,
            "not behind: a slice, the debt forgotten"
        );
    }

    #[test]
    fn a_new_program_forgets_the_flows() {
        let mut u = Upcalls::default();
        assert!(queue(&mut u, 1, 1, Some(10)));
        assert!(queue(&mut u, 1, 2, Some(20)));
        assert!(queue(&mut u, 1, 3, Some(10)));
        u.forget_flows(0);
        assert!(!u.waits(0, 10));
        // Without hashes, each packet runs on its own, in order.
        for b in 1..=3u8 {
            let f = u.pop_flow().unwrap_or_else(|| panic!("queued"));
            assert_eq!(f.packets, vec![vec![b]]);
        }
    }
}
