//! Registers, counters and meter arrays: arrays of a declared size, indexed by the data
//! plane and the control plane. Arrays of up to [`DENSE_MAX`] cells are one vector once
//! written (the data plane indexes it directly); larger ones store only the cells that were
//! written, so any declared size costs nothing until used.

use crate::meter::Meter;
use koi_ir::{Bits, CounterUnit, MeterUnit};
use std::collections::HashMap;

/// The largest array kept as a vector.
pub const DENSE_MAX: u64 = 1 << 16;

/// `size` cells of `T`, all `init` until written.
#[derive(Clone)]
pub struct Cells<T> {
    size: u64,
    init: T,
    /// Every cell, once one was written (arrays of at most [`DENSE_MAX`] cells).
    dense: Vec<T>,
    /// The cells written (larger arrays).
    changed: HashMap<u64, T, foldhash::fast::RandomState>,
}

impl<T: Clone> Cells<T> {
    pub fn new(size: u64, init: T) -> Cells<T> {
        Cells {
            size,
            init,
            dense: Vec::new(),
            changed: HashMap::default(),
        }
    }

    pub fn len(&self) -> u64 {
        self.size
    }

    pub fn is_empty(&self) -> bool {
        self.size == 0
    }

    /// The cell at `index`; `None` out of range.
    #[inline]
    pub fn get(&self, index: u64) -> Option<&T> {
        if index >= self.size {
            return None;
        }
        if !self.dense.is_empty() {
            return self.dense.get(index as usize);
        }
        Some(self.changed.get(&index).unwrap_or(&self.init))
    }

    /// The cell at `index` for writing; `None` out of range.
    #[inline]
    pub fn get_mut(&mut self, index: u64) -> Option<&mut T> {
        if index >= self.size {
            return None;
        }
        if self.size <= DENSE_MAX {
            if self.dense.is_empty() {
                self.dense = vec![self.init.clone(); self.size as usize];
            }
            return self.dense.get_mut(index as usize);
        }
        let init = &self.init;
        Some(self.changed.entry(index).or_insert_with(|| init.clone()))
    }

    /// Every cell back to `init`.
    pub fn reset_to(&mut self, init: T) {
        self.init = init;
        self.dense = Vec::new();
        self.changed.clear();
    }

    /// The first `limit` cells (all when the array is smaller).
    pub fn first(&self, limit: u64) -> Vec<T> {
        (0..self.size.min(limit))
            .filter_map(|i| self.get(i).cloned())
            .collect()
    }
}

impl<T: Clone + PartialEq> Cells<T> {
    /// The cells that differ from the initial value, in index order.
    fn differing(&self) -> Vec<(u64, &T)> {
        let mut v: Vec<(u64, &T)> = if self.dense.is_empty() {
            self.changed
                .iter()
                .filter(|(_, c)| **c != self.init)
                .map(|(i, c)| (*i, c))
                .collect()
        } else {
            (0..)
                .zip(&self.dense)
                .filter(|(_, c)| **c != self.init)
                .collect()
        };
        v.sort_unstable_by_key(|(i, _)| *i);
        v
    }
}

impl<T: Clone + PartialEq> Cells<T> {
    /// How many cells are not `zero`.
    pub(crate) fn count_not(&self, zero: &T) -> u64 {
        let diff = self.differing();
        if self.init == *zero {
            diff.len() as u64
        } else {
            let zeros = diff.iter().filter(|(_, c)| *c == zero).count() as u64;
            self.size - zeros
        }
    }

    /// A copy of `size` cells (larger or smaller than `self`): cell `i` below both sizes keeps
    /// its value, cells beyond `self`'s size are `zero`. Also returns how many cells at or
    /// above `size` were not `zero` (dropped). Costs the cells written, plus when every cell
    /// was set to a value other than `zero` ([`Cells::reset_to`]) and the array grows, the
    /// smaller of the old size and the growth.
    pub(crate) fn resized(&self, size: u64, zero: &T) -> (Cells<T>, u64) {
        let diff = self.differing();
        let beyond = diff.iter().filter(|(i, _)| *i >= size);
        let lost = if self.init == *zero {
            beyond.count() as u64
        } else {
            let zeros = beyond.filter(|(_, c)| *c == zero).count() as u64;
            self.size.saturating_sub(size) - zeros
        };
        let mut out;
        if self.init == *zero || size <= self.size {
            out = Cells::new(size, self.init.clone());
        } else if size - self.size <= self.size {
            out = Cells::new(size, self.init.clone());
            for i in self.size..size {
                if let Some(c) = out.get_mut(i) {
                    *c = zero.clone();
                }
            }
        } else {
            out = Cells::new(size, zero.clone());
            for i in 0..self.size {
                if let Some(c) = out.get_mut(i) {
                    *c = self.init.clone();
                }
            }
        }
        for (i, c) in diff.into_iter().filter(|(i, _)| *i < size) {
            if let Some(slot) = out.get_mut(i) {
                *slot = c.clone();
            }
        }
        (out, lost)
    }
}

/// Equal when of the same size with the same value in every cell (however stored).
impl<T: Clone + PartialEq> PartialEq for Cells<T> {
    fn eq(&self, other: &Self) -> bool {
        self.size == other.size && self.init == other.init && self.differing() == other.differing()
    }
}

/// The size, the initial value and the cells that differ from it.
impl<T: Clone + PartialEq + std::fmt::Debug> std::fmt::Debug for Cells<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Cells")
            .field("size", &self.size)
            .field("init", &self.init)
            .field("cells", &self.differing())
            .finish()
    }
}

/// A register array: `size` values of `width` bits, all 0 at load.
#[derive(Clone, Debug, PartialEq)]
pub struct RegisterArray {
    pub width: u32,
    cells: Cells<Bits>,
}

impl RegisterArray {
    pub fn new(size: u64, width: u32) -> RegisterArray {
        RegisterArray {
            width,
            cells: Cells::new(size, Bits::zero(width)),
        }
    }

    pub fn len(&self) -> u64 {
        self.cells.len()
    }

    pub fn is_empty(&self) -> bool {
        self.cells.is_empty()
    }

    pub fn get(&self, index: u64) -> Option<&Bits> {
        self.cells.get(index)
    }

    /// Stores `v` (resized to the element width) at `index`; false when out of range.
    pub fn set(&mut self, index: u64, v: &Bits) -> bool {
        let w = self.width;
        match self.cells.get_mut(index) {
            Some(slot) => {
                *slot = v.resize(w);
                true
            }
            None => false,
        }
    }

    /// The first `limit` values.
    pub fn values(&self, limit: u64) -> Vec<Bits> {
        self.cells.first(limit)
    }

    /// All values back to 0.
    pub fn reset(&mut self) {
        self.cells.reset_to(Bits::zero(self.width));
    }

    /// How many values are not 0.
    pub fn count_nonzero(&self) -> u64 {
        self.cells.count_not(&Bits::zero(self.width))
    }

    /// A copy with `size` cells: values below both sizes kept, new cells 0; and how many
    /// non-zero values at or above `size` were dropped.
    pub fn resized(&self, size: u64) -> (RegisterArray, u64) {
        let (cells, lost) = self.cells.resized(size, &Bits::zero(self.width));
        (
            RegisterArray {
                width: self.width,
                cells,
            },
            lost,
        )
    }

    /// Every value set to `v` (resized to the element width), at any size.
    pub fn fill(&mut self, v: &Bits) {
        self.cells.reset_to(v.resize(self.width));
    }
}

/// A counter's value. BMv2 counts both packets and bytes whatever the counter's type; the
/// type says which the control plane is meant to read.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CounterValue {
    pub packets: u64,
    pub bytes: u64,
}

impl CounterValue {
    /// Counts one packet of `bytes` bytes.
    pub fn count(&mut self, bytes: usize) {
        self.packets = self.packets.wrapping_add(1);
        self.bytes = self.bytes.wrapping_add(bytes as u64);
    }
}

/// A counter array.
#[derive(Clone, Debug, PartialEq)]
pub struct CounterArray {
    pub unit: CounterUnit,
    cells: Cells<CounterValue>,
}

impl CounterArray {
    pub fn new(size: u64, unit: CounterUnit) -> CounterArray {
        CounterArray {
            unit,
            cells: Cells::new(size, CounterValue::default()),
        }
    }

    /// Every cell back to zero.
    pub(crate) fn clear(&mut self) {
        self.cells.reset_to(CounterValue::default());
    }

    pub fn len(&self) -> u64 {
        self.cells.len()
    }

    pub fn is_empty(&self) -> bool {
        self.cells.is_empty()
    }

    pub fn get(&self, index: u64) -> Option<CounterValue> {
        self.cells.get(index).copied()
    }

    pub fn get_mut(&mut self, index: u64) -> Option<&mut CounterValue> {
        self.cells.get_mut(index)
    }

    pub fn reset(&mut self) {
        self.cells.reset_to(CounterValue::default());
    }

    /// How many cells are not 0 (packets or bytes).
    pub fn count_nonzero(&self) -> u64 {
        self.cells.count_not(&CounterValue::default())
    }

    /// A copy with `size` cells: values below both sizes kept, new cells 0; and how many
    /// non-zero cells at or above `size` were dropped.
    pub fn resized(&self, size: u64) -> (CounterArray, u64) {
        let (cells, lost) = self.cells.resized(size, &CounterValue::default());
        (
            CounterArray {
                unit: self.unit,
                cells,
            },
            lost,
        )
    }

    /// Every cell set to `v`, at any size.
    pub fn fill(&mut self, v: CounterValue) {
        self.cells.reset_to(v);
    }
}

/// A meter array.
#[derive(Clone, Debug, PartialEq)]
pub struct MeterArray {
    pub unit: MeterUnit,
    pub cells: Cells<Meter>,
}

impl MeterArray {
    pub fn new(size: u64, unit: MeterUnit) -> MeterArray {
        MeterArray {
            unit,
            cells: Cells::new(size, Meter::default()),
        }
    }

    /// How many meters are configured.
    pub fn count_configured(&self) -> u64 {
        self.cells.count_not(&Meter::default())
    }

    /// A copy with `size` meters: meters below both sizes kept (configuration and buckets),
    /// new ones unconfigured; and how many configured meters at or above `size` were
    /// dropped.
    pub fn resized(&self, size: u64) -> (MeterArray, u64) {
        let (cells, lost) = self.cells.resized(size, &Meter::default());
        (
            MeterArray {
                unit: self.unit,
                cells,
            },
            lost,
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn registers_and_counters_stay_in_range() {
        let mut r = RegisterArray::new(4, 640);
        assert!(r.set(3, &Bits::ones(640)));
        assert!(!r.set(4, &Bits::ones(640)));
        assert_eq!(r.get(3), Some(&Bits::ones(640)));
        assert_eq!(r.get(u64::MAX), None);
        r.reset();
        assert!(r.get(3).unwrap().is_zero());
        assert_eq!(r.values(2), [Bits::zero(640), Bits::zero(640)]);
        let huge = RegisterArray::new(u64::MAX, 32);
        assert_eq!(huge.get(u64::MAX - 1), Some(&Bits::zero(32)));
        let mut c = CounterArray::new(2, CounterUnit::Bytes);
        c.get_mut(1).unwrap().count(64);
        c.get_mut(1).unwrap().count(10);
        assert_eq!(
            c.get(1),
            Some(CounterValue {
                packets: 2,
                bytes: 74
            })
        );
        assert!(c.get_mut(2).is_none());
        c.reset();
        assert_eq!(c.get(1), Some(CounterValue::default()));
        let v = CounterValue {
            packets: 3,
            bytes: 9,
        };
        c.fill(v);
        assert_eq!((c.get(0), c.get(1), c.get(2)), (Some(v), Some(v), None));
        let mut big = RegisterArray::new(u64::MAX, 8);
        assert_eq!(big.resized(3).1, 0);
        big.fill(&Bits::from_u64(8, 7));
        assert_eq!(big.get(u64::MAX - 1), Some(&Bits::from_u64(8, 7)));
    }

    #[test]
    fn resizing_keeps_the_first_cells_and_counts_the_dropped_ones() {
        let b = |v| Bits::from_u64(8, v);
        let mut r = RegisterArray::new(4, 8);
        r.set(1, &b(5));
        r.set(3, &b(6));
        let (small, lost) = r.resized(2);
        assert_eq!((small.values(9), lost), (vec![b(0), b(5)], 1));
        let (big, lost) = r.resized(6);
        assert_eq!(big.values(9), [0, 5, 0, 6, 0, 0].map(b));
        assert_eq!((lost, big.count_nonzero()), (0, 2));
        // Every cell set at once, then one back to 0: growing by more and by less than the
        // old size, shrinking, dense and sparse.
        r.fill(&b(7));
        r.set(2, &b(0));
        assert_eq!(r.count_nonzero(), 3);
        assert_eq!(
            r.resized(10).0.values(10),
            [7, 7, 0, 7, 0, 0, 0, 0, 0, 0].map(b)
        );
        assert_eq!(r.resized(6).0.values(10), [7, 7, 0, 7, 0, 0].map(b));
        assert_eq!(r.resized(1).1, 2);
        let mut huge = RegisterArray::new(DENSE_MAX * 4, 8);
        huge.fill(&b(1));
        huge.set(DENSE_MAX * 3, &b(0));
        assert_eq!(huge.count_nonzero(), DENSE_MAX * 4 - 1);
        let (h, lost) = huge.resized(DENSE_MAX * 5);
        assert_eq!(lost, 0);
        assert_eq!(h.count_nonzero(), DENSE_MAX * 4 - 1);
        assert_eq!(h.get(DENSE_MAX * 4 + 1), Some(&b(0)));
        assert_eq!(huge.resized(DENSE_MAX).1, DENSE_MAX * 3 - 1);
        let mut c = CounterArray::new(3, CounterUnit::Packets);
        c.get_mut(2).unwrap().count(10);
        assert_eq!((c.count_nonzero(), c.resized(2).1), (1, 1));
    }
}
