//! The switch's ports as the forwarding threads see them: a [`PortTable`] snapshot (the open
//! ports, each bound to a pipeline and a poll thread, and the patch ports joining two
//! pipelines), replaced whole when a port is added or removed, and the per-thread buffers an
//! output goes through ([`Outbox`]: the ports to flush, the packets handed over patch ports).
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
    pub port: Mutex<Box<dyn Port>>,
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
    dests: HashMap<PatchEnd, Dest>,
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
        let mut dests: HashMap<PatchEnd, Dest> = slots
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
}

/// Packets handed over patch ports, back to back in one buffer that is reused (no allocation
/// per packet), in the order they were sent.
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

/// A thread's buffers for the outputs of one batch: the ports it sent to (to flush once, after
/// the batch) and the packets it handed over patch ports (to run after the batch).
#[derive(Debug, Default)]
pub(crate) struct Outbox {
    /// By index in the port table the outputs went through.
    pub touched: Vec<bool>,
    pub patched: Patched,
}

impl Outbox {
    /// An outbox for `table`.
    pub fn for_table(table: &PortTable) -> Outbox {
        Outbox {
            touched: vec![false; table.len()],
            patched: Patched::default(),
        }
    }
}
