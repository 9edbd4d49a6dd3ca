//! [`Batch`]: up to [`BATCH_SIZE`] packets, in buffers that are allocated
//! once and reused, so that receiving allocates nothing.

use crate::BATCH_SIZE;

/// A reusable set of packet buffers. Each buffer keeps its capacity across batches.
#[derive(Debug)]
pub struct Batch {
    bufs: Vec<Vec<u8>>,
    len: usize,
}

impl Batch {
    /// A batch of [`BATCH_SIZE`] buffers of `max_len` bytes of capacity each.
    pub fn new(max_len: usize) -> Batch {
        Batch::with_capacity(BATCH_SIZE, max_len)
    }

    /// A batch of `n` buffers (at most [`BATCH_SIZE`]) of `max_len` bytes of capacity each.
    pub fn with_capacity(n: usize, max_len: usize) -> Batch {
        Batch {
            bufs: (0..n.clamp(1, BATCH_SIZE))
                .map(|_| Vec::with_capacity(max_len))
                .collect(),
            len: 0,
        }
    }

    /// Forgets the packets (keeps the buffers).
    pub fn clear(&mut self) {
        self.len = 0;
    }

    /// How many packets fit.
    pub fn capacity(&self) -> usize {
        self.bufs.len()
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// True when no more packets fit.
    pub fn is_full(&self) -> bool {
        self.len == self.bufs.len()
    }

    /// Appends a copy of `data`; false if the batch is full.
    pub fn push(&mut self, data: &[u8]) -> bool {
        match self.slot() {
            Some(b) => {
                b.extend_from_slice(data);
                self.commit();
                true
            }
            None => false,
        }
    }

    /// The next free buffer, emptied, for a port to fill in place; [`Batch::commit`] adds it.
    pub fn slot(&mut self) -> Option<&mut Vec<u8>> {
        let b = self.bufs.get_mut(self.len)?;
        b.clear();
        Some(b)
    }

    /// Adds the buffer last returned by [`Batch::slot`] to the batch.
    pub fn commit(&mut self) {
        if self.len < self.bufs.len() {
            self.len += 1;
        }
    }

    /// The packets in order, as a slice (for a datapath that takes them all at once).
    pub fn packets(&self) -> &[Vec<u8>] {
        &self.bufs[..self.len]
    }

    /// The `i`th packet.
    pub fn get(&self, i: usize) -> Option<&[u8]> {
        self.bufs[..self.len].get(i).map(Vec::as_slice)
    }

    /// The packets in order.
    pub fn iter(&self) -> impl Iterator<Item = &[u8]> {
        self.bufs[..self.len].iter().map(Vec::as_slice)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn push_until_full_and_reuse() {
        let mut b = Batch::with_capacity(2, 16);
        assert!(b.push(b"ab"));
        assert!(b.push(b"cde"));
        assert!(!b.push(b"f"));
        assert!(b.is_full());
        assert_eq!(b.iter().collect::<Vec<_>>(), vec![&b"ab"[..], &b"cde"[..]]);
        b.clear();
        assert!(b.is_empty());
        assert!(b.push(b"x"));
        assert_eq!(b.get(0), Some(&b"x"[..]));
        assert_eq!(b.get(1), None);
    }
}
