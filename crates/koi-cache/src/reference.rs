//! The reference classifier: a linear scan over (mask, masked key, value, tags).
//!
//! Obviously correct and slow; it is the oracle that the property tests hold the
//! [`Classifier`](crate::Classifier) to. It has the same replacement semantics (inserting an
//! existing (mask, masked key) replaces the value and tags) and no limit.

use crate::key::masked_eq;

#[derive(Clone, Debug)]
struct Entry<V> {
    mask: Box<[u64]>,
    masked: Box<[u64]>,
    value: V,
    tags: Vec<u32>,
}

/// A linear-scan megaflow table.
#[derive(Clone, Debug)]
pub struct Reference<V> {
    width: usize,
    entries: Vec<Entry<V>>,
}

impl<V> Reference<V> {
    /// An empty table for keys of `width` words.
    pub fn new(width: usize) -> Self {
        Reference {
            width,
            entries: Vec::new(),
        }
    }

    /// Number of megaflows.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    fn position(&self, mask: &[u64], key: &[u64]) -> Option<usize> {
        self.entries
            .iter()
            .position(|e| *e.mask == *mask && masked_eq(key, mask, &e.masked))
    }

    /// Adds `key & mask` → `value`, or replaces the value and tags of an existing entry with
    /// the same mask and masked key, returning the old value. Wrong widths are ignored.
    pub fn insert(&mut self, mask: &[u64], key: &[u64], value: V, tags: &[u32]) -> Option<V> {
        if mask.len() != self.width || key.len() != self.width {
            return None;
        }
        if let Some(i) = self.position(mask, key) {
            let e = self.entries.get_mut(i)?;
            e.tags = tags.to_vec();
            return Some(core::mem::replace(&mut e.value, value));
        }
        let masked = key.iter().zip(mask).map(|(k, m)| k & m).collect();
        self.entries.push(Entry {
            mask: mask.into(),
            masked,
            value,
            tags: tags.to_vec(),
        });
        None
    }

    /// Removes the entry with this mask and masked key.
    pub fn remove(&mut self, mask: &[u64], key: &[u64]) -> Option<V> {
        let i = self.position(mask, key)?;
        Some(self.entries.remove(i).value)
    }

    /// Removes every entry carrying `tag`; returns how many.
    pub fn remove_tagged(&mut self, tag: u32) -> usize {
        let before = self.entries.len();
        self.entries.retain(|e| !e.tags.contains(&tag));
        before - self.entries.len()
    }

    /// Removes everything.
    pub fn clear(&mut self) {
        self.entries.clear();
    }

    /// The first entry (in insertion order) that `key` matches.
    pub fn lookup(&self, key: &[u64]) -> Option<&V> {
        self.entries
            .iter()
            .find(|e| key.len() == self.width && masked_eq(key, &e.mask, &e.masked))
            .map(|e| &e.value)
    }

    /// All entries that `key` matches, in insertion order.
    pub fn matching<'a>(&'a self, key: &'a [u64]) -> impl Iterator<Item = &'a V> + 'a {
        let width = self.width;
        self.entries
            .iter()
            .filter(move |e| key.len() == width && masked_eq(key, &e.mask, &e.masked))
            .map(|e| &e.value)
    }

    /// The value of the entry with exactly this mask and masked key.
    pub fn get(&self, mask: &[u64], key: &[u64]) -> Option<&V> {
        self.position(mask, key)
            .and_then(|i| self.entries.get(i))
            .map(|e| &e.value)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scans() {
        let mut r = Reference::new(2);
        assert_eq!(r.insert(&[0xff, 0], &[0x1234, 9], 'a', &[1]), None);
        assert_eq!(r.insert(&[0, 1], &[0, 1], 'b', &[2]), None);
        assert_eq!(r.lookup(&[0x34, 0]), Some(&'a'));
        assert_eq!(r.matching(&[0x34, 1]).count(), 2);
        assert_eq!(r.insert(&[0xff, 0], &[0x34, 0], 'c', &[2]), Some('a'));
        assert_eq!(r.remove_tagged(2), 2);
        assert!(r.is_empty());
    }
}
