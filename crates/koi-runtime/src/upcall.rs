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
//! A pcap file's packets never defer (see `PortSlot::lossless`): the file waits for the
//! thread, so nothing is lost by running its misses at once, and a named pipe's read may
//! block the thread while queued misses would wait for it.
//!
//! A queued packet has not been processed at all (the fast path only looked it up), so it
//! can run on whatever program the pipeline has when its turn comes: a swap in between
//! leaves it to the new program, and [`Upcalls::forget_flows`] drops the old program's flow
//! hashes.

use crate::ports::Ingress;
use koi_datapath::Deferral;
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

/// Flows with packets queued: (pipeline, flow-key hash) -> how many. The key is a hash
/// already, so it is not hashed again (SipHash cost more than the rest of a dropped miss).
type Pending = HashMap<(usize, u64), u32, std::hash::BuildHasherDefault<Prehashed>>;

/// The hasher of [`Pending`]: the flow-key hash, mixed with the pipeline.
#[derive(Default)]
struct Prehashed(u64);

impl std::hash::Hasher for Prehashed {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0 ^ u64::from(b)).wrapping_mul(0x100_0000_01b3);
        }
    }

    fn write_u64(&mut self, v: u64) {
        self.0 ^= v;
    }

    fn write_usize(&mut self, v: usize) {
        self.0 ^= (v as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    }
}

/// A poll thread's slow-path queues.
pub(crate) struct Upcalls {
    queues: Vec<Queue>,
    /// Flows (pipeline, flow-key hash) with packets queued, and how many. Shared: the batch
    /// asks it for every packet while its summaries add to it.
    pending: RefCell<Pending>,
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
            pending: RefCell::new(Pending::default()),
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
        self.deferring.set(true);
        self.hold_until.set(Instant::now() + HOLD);
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

    /// Packets a port's queue holds at most now.
    pub fn capacity(&self) -> usize {
        let n = QUEUE_TIME.as_nanos() as f64 / self.cost_ns.max(1.0);
        (n as usize).clamp(MIN_QUEUE, MAX_QUEUE)
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

    /// The queue of packets entering as `into` says, for one batch: what it hands back goes
    /// there ([`Session::take`]); [`Session::done`] tells how many were queued and dropped.
    pub fn session(&mut self, into: Ingress) -> Session<'_> {
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
        let queue = &mut self.queues[q];
        let room = cap.saturating_sub(queue.entries.len());
        Session {
            into,
            queue: RefCell::new(queue),
            spare: RefCell::new(&mut self.spare),
            pending: &self.pending,
            any_queued: self.len > 0,
            mode: Mode {
                deferring: &self.deferring,
                round: self.round,
                hold_until: &self.hold_until,
            },
            room: Cell::new(room),
            queued: Cell::new(0),
            dropped: Cell::new(0),
            len: &mut self.len,
        }
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
            lossless: false,
        };
        let (hash, passes) = (first.hash, first.passes);
        let mut packets = vec![first.bytes];
        // The flow's other queued packets, if it has any: the pending count says how many.
        let more = hash.map_or(0, |h| {
            self.pending
                .borrow()
                .get(&(into.pipeline, h))
                .map_or(0, |&n| n.saturating_sub(1))
        });
        if more > 0 {
            let mut left = more;
            let mut k = 0;
            while k < queue.entries.len() && left > 0 {
                let e = &queue.entries[k];
                if e.hash == hash && e.passes == passes {
                    if let Some(e) = queue.entries.remove(k) {
                        packets.push(e.bytes);
                    }
                    left -= 1;
                } else {
                    k += 1;
                }
            }
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

/// The deferring state of a round, as a batch's session sees it.
struct Mode<'a> {
    deferring: &'a Cell<bool>,
    round: Instant,
    hold_until: &'a Cell<Instant>,
}

/// One batch's view of the queues ([`Upcalls::session`]): whether a packet waits behind its
/// flow, whether a miss is deferred, and the queue the packets it hands back go to. It is the
/// batch's [`Deferral`]; what the batch hands back goes in with [`Session::take`].
pub(crate) struct Session<'a> {
    into: Ingress,
    queue: RefCell<&'a mut Queue>,
    spare: RefCell<&'a mut Vec<Vec<u8>>>,
    pending: &'a RefCell<Pending>,
    /// Whether anything was queued before this batch (else no packet can wait).
    any_queued: bool,
    mode: Mode<'a>,
    /// Packets the queue takes yet.
    room: Cell<usize>,
    queued: Cell<usize>,
    dropped: Cell<usize>,
    len: &'a mut usize,
}

impl Session<'_> {
    /// Queues a packet the batch handed back (`hash`: its flow-key hash), or drops it if the
    /// queue is full; true if queued.
    pub fn take(&self, packet: &[u8], hash: Option<u64>) -> bool {
        let room = self.room.get();
        if room == 0 {
            self.dropped.set(self.dropped.get() + 1);
            return false;
        }
        self.room.set(room - 1);
        let mut bytes = self.spare.borrow_mut().pop().unwrap_or_default();
        bytes.clear();
        bytes.extend_from_slice(packet);
        self.queue.borrow_mut().entries.push_back(Entry {
            bytes,
            passes: self.into.passes,
            hash,
        });
        if let Some(h) = hash {
            *self
                .pending
                .borrow_mut()
                .entry((self.into.pipeline, h))
                .or_default() += 1;
        }
        self.queued.set(self.queued.get() + 1);
        true
    }

    /// Ends the batch: (packets queued, packets dropped at the full queue).
    pub fn done(self) -> (usize, usize) {
        let (queued, dropped) = (self.queued.get(), self.dropped.get());
        *self.len += queued;
        (queued, dropped)
    }
}

impl Deferral for Session<'_> {
    #[inline]
    fn waits(&self, hash: u64) -> bool {
        (self.any_queued || self.queued.get() > 0)
            && self
                .pending
                .borrow()
                .contains_key(&(self.into.pipeline, hash))
    }

    fn defers_miss(&self) -> bool {
        let m = &self.mode;
        if m.deferring.get() {
            return true;
        }
        let now = Instant::now();
        if now.duration_since(m.round) >= INLINE_BUDGET {
            m.deferring.set(true);
            m.hold_until.set(now + HOLD);
            return true;
        }
        false
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
        let s = u.session(into(port));
        let queued = s.take(&[byte], hash);
        s.done();
        queued
    }

    fn waits(u: &mut Upcalls, hash: u64) -> bool {
        u.session(into(1)).waits(hash)
    }

    fn defers(u: &mut Upcalls) -> bool {
        u.session(into(1)).defers_miss()
    }

    #[test]
    fn ports_take_turns_and_a_flow_runs_whole() {
        let mut u = Upcalls::default();
        // Port 1: flows A, B, A; port 2: flow C.
        assert!(queue(&mut u, 1, 1, Some(10)));
        assert!(queue(&mut u, 1, 2, Some(20)));
        assert!(queue(&mut u, 1, 3, Some(10)));
        assert!(queue(&mut u, 2, 4, Some(30)));
        assert!(waits(&mut u, 10) && waits(&mut u, 20) && waits(&mut u, 30));
        let f = u.pop_flow().unwrap_or_else(|| panic!("queued"));
        assert_eq!((f.into.port, f.packets), (1, vec![vec![1], vec![3]]));
        assert!(!waits(&mut u, 10), "flow A has nothing queued any more");
        let f = u.pop_flow().unwrap_or_else(|| panic!("queued"));
        assert_eq!((f.into.port, f.packets), (2, vec![vec![4]]));
        let f = u.pop_flow().unwrap_or_else(|| panic!("queued"));
        assert_eq!((f.into.port, f.packets), (1, vec![vec![2]]));
        assert!(u.pop_flow().is_none() && u.is_empty());
        assert!(!waits(&mut u, 20) && !waits(&mut u, 30));
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
            !waits(&mut u, 99_999),
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
        assert!(!defers(&mut u), "a quiet thread runs misses where they are");
        std::thread::sleep(INLINE_BUDGET);
        assert!(defers(&mut u), "the round spent its budget");
        u.begin_round();
        assert!(u.deferring.get(), "deferring holds into the next rounds");
        let mut quiet = Upcalls::default();
        quiet.behind();
        quiet.begin_round();
        assert!(defers(&mut quiet), "a thread that is behind defers");
        quiet.hold_until.set(Instant::now());
        quiet.begin_round();
        assert!(
            !defers(&mut quiet),
            "and stops when the hold is over and nothing is queued"
        );
        assert!(queue(&mut quiet, 1, 0, None));
        quiet.begin_round();
        assert!(
            defers(&mut quiet),
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
        assert!(!waits(&mut u, 10));
        // Without hashes, each packet runs on its own, in order.
        for b in 1..=3u8 {
            let f = u.pop_flow().unwrap_or_else(|| panic!("queued"));
            assert_eq!(f.packets, vec![vec![b]]);
        }
    }
}
