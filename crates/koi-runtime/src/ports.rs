//! The switch's ports as the forwarding threads see them: a [`PortTable`] snapshot (the open
//! ports, each bound to a pipeline and a poll thread, and the patch ports joining two
//! pipelines), replaced whole when a port is added or removed, and the per-thread buffers an
//! output goes through ([`Outputs`]: the batch's output packets; [`Outbox`]: which of them go
//! to which port, and the packets handed over patch ports).
//!
//! Port numbers are each pipeline's own: an output to port N of pipeline P is found with one
//! lookup of (P, N), which gives either an open port or the far end of a patch port.

use koi_ports::Port;
use std::collections::HashMap;
use std::ops::Range;
use std::sync::{Arc, Mutex};

/// The most pipelines a packet passes through over patch ports (the first included).
pub const MAX_PASSES: u8 = 8;

/// A port of a pipeline: (pipeline index, port number); one end of a patch port is one.
pub type PatchEnd = (usize, u64);

/// One numbered port, bound to a pipeline.
pub struct PortSlot {
    pub num: u64,
    /// Index of its pipeline in [`crate::Switch::pipelines`].
    pub pipeline: usize,
    /// The poll thread that receives from it (for as long as it exists).
    pub thread: usize,
    /// The port; outputs to it are sent through this one.
    pub port: Mutex<Box<dyn Port>>,
    /// More receive sides of the same interface, each read by another poll thread (AF_PACKET
    /// sockets in one fanout group: the kernel spreads the frames over them by flow).
    pub spread: Vec<(usize, Mutex<Box<dyn Port>>)>,
    /// The device has one receive side for several poll threads: the thread that reads it
    /// hands each frame to the thread of its flow ([`koi_ports::flow_hash`]).
    pub soft_spread: bool,
    /// Its misses queued for the slow path, and dropped at a full queue.
    pub upcalls: crate::upcall::UpcallCounters,
    /// Its misses (and those of what it sends over patch ports) run in its batch, never
    /// deferred: a pcap file waits for the reader, and a named pipe's read may block the
    /// thread while queued misses wait.
    pub lossless: bool,
}

impl PortSlot {
    /// Port `num` of `pipeline` over `ports` (what [`koi_ports::open_spread`] opened): the
    /// first one on poll thread `thread` (and for sending), the others on the threads after
    /// it, one each.
    /// `soft_spread`: see [`PortSlot::soft_spread`] (only with one port and several threads).
    pub(crate) fn new(
        num: u64,
        pipeline: usize,
        thread: usize,
        threads: usize,
        ports: Vec<Box<dyn Port>>,
        soft_spread: bool,
    ) -> Option<PortSlot> {
        let soft_spread = soft_spread && ports.len() == 1 && threads > 1;
        let mut it = ports.into_iter();
        let port = Mutex::new(it.next()?);
        let spread = it
            .enumerate()
            .map(|(k, p)| ((thread + 1 + k) % threads.max(1), Mutex::new(p)))
            .collect();
        Some(PortSlot {
            num,
            pipeline,
            thread,
            port,
            spread,
            soft_spread,
            upcalls: Default::default(),
            lossless: false,
        })
    }

    /// The receive side read by poll thread `t`, if any: the port itself or a spread one.
    pub(crate) fn receiver(&self, t: usize) -> Option<&Mutex<Box<dyn Port>>> {
        if self.thread == t {
            return Some(&self.port);
        }
        self.spread.iter().find(|(u, _)| *u == t).map(|(_, p)| p)
    }

    /// Each receive side's counters with its poll thread: the port first.
    fn sides(&self) -> impl Iterator<Item = (usize, koi_ports::Stats)> + '_ {
        let stats = |m: &Mutex<Box<dyn Port>>| m.lock().unwrap_or_else(|p| p.into_inner()).stats();
        std::iter::once((self.thread, stats(&self.port)))
            .chain(self.spread.iter().map(move |(t, p)| (*t, stats(p))))
    }

    /// The port's counters, its spread receive sides' added in (they send nothing).
    pub fn stats(&self) -> koi_ports::Stats {
        let mut total = koi_ports::Stats::default();
        for (_, s) in self.sides() {
            total.add(&s);
        }
        total
    }

    /// Each receive side's packets received and dropped for a full ring, by poll thread
    /// (for `port_show`).
    pub fn rx_by_thread(&self) -> Vec<(usize, u64, u64)> {
        self.sides()
            .map(|(t, s)| (t, s.rx_packets, s.drop_ring_full))
            .collect()
    }
}

/// Where an output to a pipeline's port goes.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Dest {
    /// The open port at this index of the table.
    Port(usize),
    /// The other end of a patch port.
    Patch(PatchEnd),
}

/// The switch's ports at one moment, replaced whole when a port is added or removed
/// ([`crate::Switch::add_port`], [`crate::Switch::remove_port`]); a poll thread takes the
/// current table before each round of polling and keeps it for that round, so a port removed
/// meanwhile is closed once no thread uses it. Indexes as a slice of its ports.
pub struct PortTable {
    slots: Vec<Arc<PortSlot>>,
    /// The patch ports, each pair once, sorted.
    patches: Vec<(PatchEnd, PatchEnd)>,
    /// Every port and patch port end to where its outputs go.
    /// Looked up for every output packet: foldhash, not SipHash.
    dests: HashMap<PatchEnd, Dest, foldhash::fast::RandomState>,
}

impl std::ops::Deref for PortTable {
    type Target = [Arc<PortSlot>];
    fn deref(&self) -> &[Arc<PortSlot>] {
        &self.slots
    }
}

impl PortTable {
    /// The table of `slots` and `patches`, which the caller has checked
    /// ([`PortTable::taken`]).
    pub(crate) fn new(
        slots: Vec<Arc<PortSlot>>,
        mut patches: Vec<(PatchEnd, PatchEnd)>,
    ) -> PortTable {
        for p in &mut patches {
            if p.1 < p.0 {
                *p = (p.1, p.0);
            }
        }
        patches.sort_unstable();
        let mut dests: HashMap<PatchEnd, Dest, foldhash::fast::RandomState> = slots
            .iter()
            .enumerate()
            .map(|(i, s)| ((s.pipeline, s.num), Dest::Port(i)))
            .collect();
        for &(a, b) in &patches {
            dests.insert(a, Dest::Patch(b));
            dests.insert(b, Dest::Patch(a));
        }
        PortTable {
            slots,
            patches,
            dests,
        }
    }

    /// Where an output to `end` goes (`None`: no such port).
    #[inline]
    pub(crate) fn dest(&self, end: PatchEnd) -> Option<Dest> {
        self.dests.get(&end).copied()
    }

    /// Whether `end` is a port or a patch port end already.
    pub(crate) fn taken(&self, end: PatchEnd) -> bool {
        self.dests.contains_key(&end)
    }

    /// The patch ports, each pair once, sorted.
    pub fn patches(&self) -> &[(PatchEnd, PatchEnd)] {
        &self.patches
    }

    /// The pipelines (indices) with a patch port.
    pub(crate) fn patch_pipelines(&self) -> impl Iterator<Item = usize> + '_ {
        self.patches.iter().flat_map(|(a, b)| [a.0, b.0])
    }

    /// The table with `slots` instead of its ports (the same patch ports).
    pub(crate) fn with_slots(&self, slots: Vec<Arc<PortSlot>>) -> PortTable {
        PortTable::new(slots, self.patches.clone())
    }

    /// The index of the open port `end`.
    pub(crate) fn port_index(&self, end: PatchEnd) -> Option<usize> {
        match self.dest(end)? {
            Dest::Port(i) => Some(i),
            Dest::Patch(_) => None,
        }
    }
}

/// Where a packet enters a pipeline, and how many pipelines it has passed through then (this
/// one included: 1 for a packet from a port).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Ingress {
    pub pipeline: usize,
    pub port: u64,
    pub passes: u8,
    /// It came from a [`PortSlot::lossless`] port (its misses are never deferred to a
    /// slow-path queue, so never dropped at a full one).
    pub lossless: bool,
}

/// Packets handed over patch ports (or to another poll thread by a software spread), back to
/// back in one buffer that is reused (no allocation per packet), in the order they were sent.
#[derive(Debug, Default)]
pub(crate) struct Patched {
    bytes: Vec<u8>,
    items: Vec<(Ingress, Range<usize>)>,
}

impl Patched {
    pub fn push(&mut self, to: Ingress, packet: &[u8]) {
        let at = self.bytes.len();
        self.bytes.extend_from_slice(packet);
        self.items.push((to, at..self.bytes.len()));
    }

    pub fn is_empty(&self) -> bool {
        self.items.is_empty()
    }

    pub fn clear(&mut self) {
        self.bytes.clear();
        self.items.clear();
    }

    /// The packets in order, one `(ingress, packet)` each.
    pub fn iter(&self) -> impl Iterator<Item = (Ingress, &[u8])> {
        self.items
            .iter()
            .map(|(to, r)| (*to, &self.bytes[r.clone()]))
    }

    /// Appends `other`'s packets, in order.
    pub fn append(&mut self, other: &Patched) {
        let base = self.bytes.len();
        self.bytes.extend_from_slice(&other.bytes);
        self.items.extend(
            other
                .items
                .iter()
                .map(|(to, r)| (*to, r.start + base..r.end + base)),
        );
    }

    /// Calls `f` with each run of consecutive packets that enter the same way, in order.
    pub fn runs(&self, mut f: impl FnMut(Ingress, &[&[u8]])) {
        let mut run: Vec<&[u8]> = Vec::new();
        let mut packets = self.iter().peekable();
        while let Some((to, p)) = packets.next() {
            run.push(p);
            if packets.peek().is_none_or(|(next, _)| *next != to) {
                f(to, &run);
                run.clear();
            }
        }
    }
}

/// The output packets of one batch, copied out of the state lock's critical section (the
/// one copy an output makes before its port takes it): `bytes` holds them back to back,
/// `outs` each one's packet index, port number and place in `bytes`. Reused.
#[derive(Debug, Default)]
pub(crate) struct Outputs {
    bytes: Vec<u8>,
    outs: Vec<(usize, u64, Range<usize>)>,
}

impl Outputs {
    pub fn clear(&mut self) {
        self.bytes.clear();
        self.outs.clear();
    }

    /// Adds an output of packet `packet` to port `port`; returns its index.
    pub fn push(&mut self, packet: usize, port: u64, bytes: &[u8]) -> usize {
        let at = self.bytes.len();
        self.bytes.extend_from_slice(bytes);
        self.outs.push((packet, port, at..self.bytes.len()));
        self.outs.len() - 1
    }

    /// The outputs in order: index, packet index, port.
    pub fn iter(&self) -> impl Iterator<Item = (usize, usize, u64)> + '_ {
        self.outs
            .iter()
            .enumerate()
            .map(|(i, &(k, port, _))| (i, k, port))
    }

    /// Output `i`'s port number and bytes.
    pub fn get(&self, i: usize) -> (u64, &[u8]) {
        let (_, port, r) = &self.outs[i];
        (*port, &self.bytes[r.clone()])
    }
}

/// A thread's buffers for the outputs of one batch: which outputs (of an [`Outputs`]) go to
/// which port (sent after the batch, each port locked once for all of its packets, so that
/// threads sending to one port meet on its lock once a batch rather than once a packet), and
/// the packets it handed over patch ports (to run after the batch).
#[derive(Debug, Default)]
pub(crate) struct Outbox {
    /// By index in the port table: whether packets are queued for it.
    pub touched: Vec<bool>,
    /// Per queued packet: its port's index in the table and its index in the outputs.
    queued: Vec<(usize, usize)>,
    pub patched: Patched,
}

impl Outbox {
    /// An outbox for `table`.
    pub fn for_table(table: &PortTable) -> Outbox {
        Outbox {
            touched: vec![false; table.len()],
            ..Outbox::default()
        }
    }

    /// Queues output `i` for the port at index `j`.
    pub fn queue(&mut self, j: usize, i: usize) {
        self.queued.push((j, i));
        self.touched[j] = true;
    }

    /// The outputs queued for the port at index `j`, in order.
    pub fn queued_for(&self, j: usize) -> impl Iterator<Item = usize> + '_ {
        self.queued
            .iter()
            .filter_map(move |&(k, i)| (k == j).then_some(i))
    }

    /// Forgets the queued packets.
    pub fn clear_queued(&mut self) {
        self.queued.clear();
    }
}

/// What a poll thread is handed by the others (software spread): the frames, as they are to
/// enter their pipelines, and a wake-up for its `poll(2)`.
#[derive(Debug)]
pub(crate) struct Inbox {
    pub queue: Mutex<Patched>,
    pub wake: koi_ports::Wakeup,
}

impl Inbox {
    pub fn new() -> std::io::Result<Inbox> {
        Ok(Inbox {
            queue: Mutex::new(Patched::default()),
            wake: koi_ports::Wakeup::new()?,
        })
    }
}
