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
//! Eviction is CLOCK (second chance), the usual approximation of LRU: every hit sets the
//! megaflow's `referenced` bit; the hand sweeps the slots, clearing set bits and evicting the
//! first megaflow whose bit is already clear. A megaflow that was hit since the hand last
//! passed survives; a flood of new one-packet flows (inserted with the bit clear) evicts its
//! own members first. Each victim costs O(1) amortised: every bit the hand clears was set by a
//! hit.

use crate::key::MegaflowId;

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
    /// Hit since the clock hand last passed.
    pub(crate) referenced: bool,
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
        }
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
        s.flow = Some(flow);
        self.len += 1;
        Some(MegaflowId {
            slot,
            generation: s.generation,
        })
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

    /// Picks the next eviction victim by the clock policy (see the module docs).
    pub(crate) fn clock_victim(&mut self) -> Option<u32> {
        let n = self.slots.len();
        for _ in 0..=2 * n {
            if self.hand >= n {
                self.hand = 0;
            }
            let slot = self.hand;
            self.hand += 1;
            if let Some(flow) = self.slots.get_mut(slot).and_then(|s| s.flow.as_mut()) {
                if !flow.referenced {
                    return u32::try_from(slot).ok();
                }
                flow.referenced = false;
            }
        }
        None
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
        self.slots.capacity() * size_of::<Slot<V>>() + self.free.capacity() * 4 + tags
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
            referenced: false,
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
