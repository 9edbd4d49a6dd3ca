//! The tag index: for each invalidation tag, the slots of the megaflows that carry it.
//!
//! Each list is unordered; a megaflow remembers its position in each of its tags' lists
//! ([`TagRef`](super::megaflows::TagRef)), so that removing it is O(tags): swap-remove from
//! each list and fix the position of the megaflow that moved. An emptied list is dropped, so
//! the index holds only tags of live megaflows.

use crate::key::KeyHasher;
use hashbrown::HashTable;

#[derive(Debug)]
struct TagList {
    tag: u32,
    slots: Vec<u32>,
}

/// Tag → megaflow slots.
#[derive(Debug)]
pub(crate) struct TagIndex {
    lists: HashTable<TagList>,
    hasher: KeyHasher,
}

impl TagIndex {
    pub(crate) fn new(hasher: KeyHasher) -> Self {
        TagIndex {
            lists: HashTable::new(),
            hasher,
        }
    }

    fn hash(&self, tag: u32) -> u64 {
        self.hasher.hash(&[u64::from(tag)])
    }

    /// Adds `slot` to `tag`'s list; returns its position there.
    pub(crate) fn add(&mut self, tag: u32, slot: u32) -> u32 {
        let hash = self.hash(tag);
        let hasher = &self.hasher;
        let list = match self.lists.find_mut(hash, |l| l.tag == tag) {
            Some(list) => list,
            None => {
                let fresh = TagList {
                    tag,
                    slots: Vec::new(),
                };
                let entry = self
                    .lists
                    .insert_unique(hash, fresh, |l| hasher.hash(&[u64::from(l.tag)]));
                entry.into_mut()
            }
        };
        list.slots.push(slot);
        (list.slots.len() - 1) as u32
    }

    /// Removes the entry at `pos` of `tag`'s list. If another slot moved into `pos`, returns it.
    pub(crate) fn remove(&mut self, tag: u32, pos: u32) -> Option<u32> {
        let hash = self.hash(tag);
        let mut entry = self.lists.find_entry(hash, |l| l.tag == tag).ok()?;
        let slots = &mut entry.get_mut().slots;
        if pos as usize >= slots.len() {
            return None;
        }
        slots.swap_remove(pos as usize);
        let moved = slots.get(pos as usize).copied();
        if slots.is_empty() {
            entry.remove();
        } else if slots.capacity() > 16 && slots.len() * 4 < slots.capacity() {
            slots.shrink_to(slots.len() * 2);
        }
        moved
    }

    /// Removes `tag`'s whole list and returns it.
    pub(crate) fn take(&mut self, tag: u32) -> Vec<u32> {
        let hash = self.hash(tag);
        match self.lists.find_entry(hash, |l| l.tag == tag) {
            Ok(entry) => entry.remove().0.slots,
            Err(_) => Vec::new(),
        }
    }

    /// Number of megaflows carrying `tag`.
    pub(crate) fn count(&self, tag: u32) -> usize {
        self.lists
            .find(self.hash(tag), |l| l.tag == tag)
            .map_or(0, |l| l.slots.len())
    }

    pub(crate) fn clear(&mut self) {
        self.lists = HashTable::new();
    }

    /// Heap bytes of the index.
    pub(crate) fn memory_bytes(&self) -> usize {
        let lists: usize = self.lists.iter().map(|l| l.slots.capacity() * 4).sum();
        self.lists.allocation_size() + lists
    }
}
