//! Handle allocation as BMv2 does it: the lowest free index first, so that handles are
//! 0, 1, 2, ... in creation order and a freed handle is reused by the next creation.
//!
//! Table entries add a version in the bits above 24 (BMv2's `HANDLE_SET(version, index)`):
//! an entry handle names one entry, and a handle kept after its entry was deleted does not
//! name the entry that later reuses the index.

use std::collections::BTreeSet;

/// Objects stored under small integer handles.
#[derive(Clone, Debug)]
pub struct Slots<T> {
    items: Vec<Option<T>>,
    free: BTreeSet<u32>,
    count: usize,
}

impl<T> Default for Slots<T> {
    fn default() -> Self {
        Slots {
            items: Vec::new(),
            free: BTreeSet::new(),
            count: 0,
        }
    }
}

impl<T> Slots<T> {
    /// The index the next [`Slots::insert`] will use.
    pub fn next_index(&self) -> u32 {
        self.free
            .first()
            .copied()
            .unwrap_or(u32::try_from(self.items.len()).unwrap_or(u32::MAX))
    }

    /// Stores `v` at the lowest free index and returns it.
    pub fn insert(&mut self, v: T) -> u32 {
        let i = self.next_index();
        self.free.remove(&i);
        match self.items.get_mut(i as usize) {
            Some(slot) => *slot = Some(v),
            None => self.items.push(Some(v)),
        }
        self.count += 1;
        i
    }

    /// Stores `v` at index `i` if it is free (to undo a [`Slots::remove`] exactly); false if
    /// `i` is taken.
    pub fn insert_at(&mut self, i: u32, v: T) -> bool {
        let at = i as usize;
        if self.items.get(at).is_some_and(|x| x.is_some()) {
            return false;
        }
        while self.items.len() <= at {
            self.free.insert(self.items.len() as u32);
            self.items.push(None);
        }
        self.free.remove(&i);
        self.items[at] = Some(v);
        self.count += 1;
        true
    }

    /// Removes and returns the object at `i`.
    pub fn remove(&mut self, i: u32) -> Option<T> {
        let v = self.items.get_mut(i as usize)?.take()?;
        self.free.insert(i);
        self.count -= 1;
        Some(v)
    }

    pub fn get(&self, i: u32) -> Option<&T> {
        self.items.get(i as usize)?.as_ref()
    }

    pub fn get_mut(&mut self, i: u32) -> Option<&mut T> {
        self.items.get_mut(i as usize)?.as_mut()
    }

    pub fn len(&self) -> usize {
        self.count
    }

    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    /// All `(index, object)` pairs in index order.
    pub fn iter(&self) -> impl Iterator<Item = (u32, &T)> {
        self.items
            .iter()
            .enumerate()
            .filter_map(|(i, v)| v.as_ref().map(|v| (i as u32, v)))
    }

    /// All objects, mutably, in index order.
    pub fn values_mut(&mut self) -> impl Iterator<Item = &mut T> {
        self.items.iter_mut().filter_map(|v| v.as_mut())
    }

    /// Removes everything; handles start again at 0.
    pub fn clear(&mut self) {
        *self = Slots::default();
    }
}

/// Bits of an entry handle that hold the index.
pub const INDEX_BITS: u32 = 24;
const INDEX_MASK: u32 = (1 << INDEX_BITS) - 1;

/// An entry handle from an index and the version of its slot.
pub fn make_handle(index: u32, version: u8) -> u32 {
    (u32::from(version) << INDEX_BITS) | (index & INDEX_MASK)
}

/// The index and version of an entry handle.
pub fn split_handle(handle: u32) -> (u32, u8) {
    (handle & INDEX_MASK, (handle >> INDEX_BITS) as u8)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lowest_free_index_first() {
        let mut s = Slots::default();
        assert_eq!((s.insert('a'), s.insert('b'), s.insert('c')), (0, 1, 2));
        assert_eq!(s.remove(1), Some('b'));
        assert_eq!(s.remove(1), None);
        assert_eq!(s.next_index(), 1);
        assert_eq!(s.insert('d'), 1);
        assert_eq!(s.insert('e'), 3);
        assert_eq!(s.len(), 4);
        let all: Vec<_> = s.iter().map(|(i, c)| (i, *c)).collect();
        assert_eq!(all, [(0, 'a'), (1, 'd'), (2, 'c'), (3, 'e')]);
        assert_eq!(make_handle(5, 1), (1 << 24) | 5);
        assert_eq!(split_handle(make_handle(5, 3)), (5, 3));
        assert!(!s.insert_at(2, 'x'));
        assert_eq!(s.remove(2), Some('c'));
        assert!(s.insert_at(2, 'c'));
        assert!(s.insert_at(6, 'g'));
        assert_eq!(s.next_index(), 4);
        assert_eq!(s.insert(' '), 4);
        assert_eq!(s.len(), 6);
        s.clear();
        assert!(s.is_empty());
        assert_eq!(s.insert('z'), 0);
    }
}
