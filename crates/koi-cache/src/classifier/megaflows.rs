//! The classifier's megaflow slots: a slab of at most `limit` entries with generations, and
//! the clock hand that picks eviction victims.
//!
//! A slot is reused after its megaflow leaves, with its generation bumped, so a
//! [`MegaflowId`] held elsewhere (the microflow cache, the datapath's batch) that names a
//! departed megaflow no longer resolves. A slot whose generation reaches `u32::MAX` is retired
//! instead of reused, so generations never wrap and a stale id can never alias a new
//! megaflow (a slot reused 100,000 times a second would retire after 12 hours, costing one
//! slot of memory). Apart from retired slots, the slab never holds more than `limit` slots.
//!
//! Eviction is segmented, so that a churn of new flows cannot push out established ones:
//!
//! - A new megaflow is **on probation** until its first hit after the insert, which
//!   **promotes** it. Probationary megaflows wait in insertion order (a FIFO of ids).
//! - At the limit, while at least [`min_probation`] megaflows are on probation, the victim is
//!   the oldest of them: a flood of one-packet flows evicts only its own members, and a new
//!   flow that is hit again before `on_probation / insert rate` seconds have passed (a TCP
//!   flow's second packet, one round trip later) is promoted and stays.
//! - With fewer on probation, the victim is chosen among the promoted ones by their **hit
//!   rate**: the hand samples the next [`SAMPLE`] promoted megaflows, scores each by the hits
//!   it had since the hand last looked at it, plus half its previous score (an average that
//!   forgets), and evicts the lowest scored. A flow of a thousand packets a second outlives
//!   a thousand flows of one packet a second each, whichever was hit last; one no longer hit
//!   sees its score halve at each turn of the hand.
//!
//! Each victim costs O(1) amortised: at most [`SAMPLE`] megaflows looked at (slots without
//! a promoted megaflow are skipped, a turn at most), and every id the FIFO drops was pushed
//! by an insert (ids of megaflows promoted or removed since are skipped, and compacted away
//! when they outnumber the live ones).

use crate::key::MegaflowId;
use std::collections::VecDeque;

/// Promoted megaflows the hand looks at for each victim.
pub(crate) const SAMPLE: usize = 8;

/// Megaflows kept on probation at least, at the limit, before promoted ones are evicted: an
/// eighth of the limit (at least one).
pub(crate) fn min_probation(limit: usize) -> usize {
    (limit / 8).max(1)
}

/// A megaflow's place in the tag index: its tag and its position in that tag's list.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct TagRef {
    pub(crate) tag: u32,
    pub(crate) pos: u32,
}

/// One live megaflow.
#[derive(Debug)]
pub(crate) struct Megaflow<V> {
    pub(crate) value: V,
    /// Its subtable, and its local index there.
    pub(crate) subtable: u32,
    pub(crate) local: u32,
    pub(crate) hits: u64,
    /// `hits` when the hand last looked at it, and its score then (see the module docs).
    pub(crate) hits_seen: u64,
    pub(crate) score: u64,
    /// Not hit since its insert (see the module docs).
    pub(crate) probation: bool,
    pub(crate) tags: Box<[TagRef]>,
}

#[derive(Debug)]
struct Slot<V> {
    generation: u32,
    flow: Option<Megaflow<V>>,
}

/// The slab of megaflows.
#[derive(Debug)]
pub(crate) struct Megaflows<V> {
    slots: Vec<Slot<V>>,
    free: Vec<u32>,
    len: usize,
    limit: usize,
    /// Slots retired at the last generation.
    retired: usize,
    hand: usize,
    /// Ids of megaflows put on probation, oldest first (some promoted or gone since).
    probation: VecDeque<MegaflowId>,
    /// Megaflows on probation now.
    on_probation: usize,
}

impl<V> Megaflows<V> {
    pub(crate) fn new(limit: usize) -> Self {
        Megaflows {
            slots: Vec::new(),
            free: Vec::new(),
            len: 0,
            limit: limit.min(u32::MAX as usize / 2),
            retired: 0,
            hand: 0,
            probation: VecDeque::new(),
            on_probation: 0,
        }
    }

    /// Megaflows on probation (not hit since their insert).
    pub(crate) fn on_probation(&self) -> usize {
        self.on_probation
    }

    /// Counts a hit of the live megaflow in `slot`, promoted if it was on probation.
    #[inline]
    pub(crate) fn touch(&mut self, slot: u32) -> Option<(MegaflowId, &Megaflow<V>)> {
        let s = self.slots.get_mut(slot as usize)?;
        let id = MegaflowId {
            slot,
            generation: s.generation,
        };
        let flow = s.flow.as_mut()?;
        flow.hits = flow.hits.wrapping_add(1);
        if flow.probation {
            flow.probation = false;
            self.on_probation -= 1;
        }
        Some((id, flow))
    }

    /// Takes the live megaflow `id` off probation (a second slow-path run of its flow
    /// replaced its value: the flow has had a second packet).
    pub(crate) fn promote(&mut self, id: MegaflowId) {
        if let Some(flow) = self.get_mut(id)
            && flow.probation
        {
            flow.probation = false;
            self.on_probation -= 1;
        }
    }

    /// [`Megaflows::touch`] by id.
    #[inline]
    pub(crate) fn touch_id(&mut self, id: MegaflowId) -> Option<&Megaflow<V>> {
        self.get(id)?;
        self.touch(id.slot).map(|(_, f)| f)
    }

    pub(crate) fn len(&self) -> usize {
        self.len
    }

    pub(crate) fn limit(&self) -> usize {
        self.limit
    }

    pub(crate) fn is_full(&self) -> bool {
        self.len >= self.limit
    }

    /// The live megaflow named by `id`.
    #[inline]
    pub(crate) fn get(&self, id: MegaflowId) -> Option<&Megaflow<V>> {
        let slot = self.slots.get(id.slot as usize)?;
        (slot.generation == id.generation)
            .then_some(slot.flow.as_ref())
            .flatten()
    }

    /// The live megaflow named by `id`, mutably.
    #[inline]
    pub(crate) fn get_mut(&mut self, id: MegaflowId) -> Option<&mut Megaflow<V>> {
        let slot = self.slots.get_mut(id.slot as usize)?;
        if slot.generation != id.generation {
            return None;
        }
        slot.flow.as_mut()
    }

    /// The live megaflow in slot `slot`, with its id.
    #[inline]
    pub(crate) fn at(&self, slot: u32) -> Option<(MegaflowId, &Megaflow<V>)> {
        let s = self.slots.get(slot as usize)?;
        let id = MegaflowId {
            slot,
            generation: s.generation,
        };
        Some((id, s.flow.as_ref()?))
    }

    /// The live megaflow in slot `slot`, mutably, with its id.
    #[inline]
    pub(crate) fn at_mut(&mut self, slot: u32) -> Option<(MegaflowId, &mut Megaflow<V>)> {
        let s = self.slots.get_mut(slot as usize)?;
        let id = MegaflowId {
            slot,
            generation: s.generation,
        };
        Some((id, s.flow.as_mut()?))
    }

    /// The slot the next [`Megaflows::alloc`] will use, or `None` when full.
    pub(crate) fn next_slot(&self) -> Option<u32> {
        if self.is_full() {
            return None;
        }
        match self.free.last() {
            Some(&slot) => Some(slot),
            None => u32::try_from(self.slots.len()).ok(),
        }
    }

    /// Stores `flow` in a free slot (the one [`Megaflows::next_slot`] named).
    pub(crate) fn alloc(&mut self, flow: Megaflow<V>) -> Option<MegaflowId> {
        let slot = self.next_slot()?;
        if self.free.last() == Some(&slot) {
            self.free.pop();
        } else {
            self.grow();
            self.slots.push(Slot {
                generation: 0,
                flow: None,
            });
        }
        let s = self.slots.get_mut(slot as usize)?;
        let mut flow = flow;
        flow.probation = true;
        s.flow = Some(flow);
        self.len += 1;
        let id = MegaflowId {
            slot,
            generation: s.generation,
        };
        self.on_probation += 1;
        self.probation.push_back(id);
        if self.probation.len() > 2 * self.on_probation.max(16) {
            self.compact_probation();
        }
        Some(id)
    }

    /// Drops the FIFO's ids of megaflows promoted or gone.
    fn compact_probation(&mut self) {
        let slots = &self.slots;
        self.probation.retain(|id| {
            slots.get(id.slot as usize).is_some_and(|s| {
                s.generation == id.generation && s.flow.as_ref().is_some_and(|f| f.probation)
            })
        });
    }

    /// Grows the slab's capacity geometrically, but never past the limit.
    fn grow(&mut self) {
        if self.slots.len() == self.slots.capacity() {
            let want = self.slots.capacity().max(16);
            let room = (self.limit + self.retired)
                .saturating_sub(self.slots.len())
                .max(1);
            self.slots.reserve_exact(want.min(room));
            // Room for every slot to be free, so that `free` never reallocates.
            let need = self.slots.capacity().saturating_sub(self.free.len());
            self.free.reserve_exact(need);
        }
    }

    /// Empties slot `slot`, bumping its generation; returns the megaflow that was there.
    pub(crate) fn free(&mut self, slot: u32) -> Option<(MegaflowId, Megaflow<V>)> {
        let s = self.slots.get_mut(slot as usize)?;
        let flow = s.flow.take()?;
        if flow.probation {
            self.on_probation -= 1;
        }
        let id = MegaflowId {
            slot,
            generation: s.generation,
        };
        if s.generation == u32::MAX {
            self.retired += 1;
        } else {
            s.generation += 1;
            self.free.push(slot);
        }
        self.len -= 1;
        Some((id, flow))
    }

    /// Picks the next eviction victim (see the module docs); `None` if nothing is live.
    pub(crate) fn victim(&mut self) -> Option<u32> {
        if self.on_probation >= min_probation(self.limit) {
            return self.oldest_on_probation();
        }
        self.sampled_victim().or_else(|| self.oldest_on_probation())
    }

    /// The oldest megaflow on probation.
    fn oldest_on_probation(&mut self) -> Option<u32> {
        while let Some(id) = self.probation.pop_front() {
            if self.get(id).is_some_and(|f| f.probation) {
                return Some(id.slot);
            }
        }
        None
    }

    /// The lowest scored of the next [`SAMPLE`] promoted megaflows from the hand (scoring
    /// each it looks at); `None` if there is none.
    fn sampled_victim(&mut self) -> Option<u32> {
        let n = self.slots.len();
        let mut best: Option<(u64, usize)> = None;
        let mut looked = 0;
        for _ in 0..n {
            if self.hand >= n {
                self.hand = 0;
            }
            let slot = self.hand;
            self.hand += 1;
            let Some(flow) = self.slots.get_mut(slot).and_then(|s| s.flow.as_mut()) else {
                continue;
            };
            if flow.probation {
                continue;
            }
            let recent = flow.hits.wrapping_sub(flow.hits_seen);
            flow.hits_seen = flow.hits;
            flow.score = flow.score / 2 + recent;
            if best.is_none_or(|(s, _)| flow.score < s) {
                best = Some((flow.score, slot));
            }
            looked += 1;
            if looked == SAMPLE {
                break;
            }
        }
        best.and_then(|(_, slot)| u32::try_from(slot).ok())
    }

    /// Slots of all live megaflows.
    pub(crate) fn live_slots(&self) -> impl Iterator<Item = u32> + '_ {
        self.slots
            .iter()
            .enumerate()
            .filter(|(_, s)| s.flow.is_some())
            .map(|(i, _)| i as u32)
    }

    /// Heap bytes of the slab, including each megaflow's tag list.
    pub(crate) fn memory_bytes(&self) -> usize {
        let tags: usize = self
            .slots
            .iter()
            .filter_map(|s| s.flow.as_ref())
            .map(|f| f.tags.len() * size_of::<TagRef>())
            .sum();
        self.slots.capacity() * size_of::<Slot<V>>()
            + self.free.capacity() * 4
            + self.probation.capacity() * size_of::<MegaflowId>()
            + tags
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn flow() -> Megaflow<u8> {
        Megaflow {
            value: 0,
            subtable: 0,
            local: 0,
            hits: 0,
            hits_seen: 0,
            score: 0,
            probation: false,
            tags: Box::new([]),
        }
    }

    #[test]
    fn slots_are_reused_with_new_generations_and_retired_at_the_last() {
        let mut m = Megaflows::new(2);
        let a = m.alloc(flow()).unwrap_or_else(|| panic!("room"));
        assert!(m.free(a.slot).is_some());
        let b = m.alloc(flow()).unwrap_or_else(|| panic!("room"));
        assert_eq!((b.slot, b.generation), (a.slot, a.generation + 1));
        assert!(m.get(a).is_none());
        m.slots[0].generation = u32::MAX;
        assert!(m.free(0).is_some());
        let c = m.alloc(flow()).unwrap_or_else(|| panic!("room"));
        assert_eq!(c.slot, 1, "slot 0 is retired");
        let d = m.alloc(flow()).unwrap_or_else(|| panic!("room"));
        assert_eq!(d.slot, 2, "the limit counts live megaflows");
        assert!(m.alloc(flow()).is_none());
        assert!(
            m.get(MegaflowId {
                slot: 0,
                generation: u32::MAX
            })
            .is_none()
        );
    }
}
