//! Registers and counters: arrays indexed by the data plane and the control plane.

use koi_ir::{Bits, CounterUnit};

/// A register array: `size` values of `width` bits, all 0 at load.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RegisterArray {
    pub width: u32,
    values: Vec<Bits>,
}

impl RegisterArray {
    pub fn new(size: u64, width: u32) -> RegisterArray {
        let n = usize::try_from(size).unwrap_or(usize::MAX).min(MAX_ARRAY);
        RegisterArray {
            width,
            values: vec![Bits::zero(width); n],
        }
    }

    pub fn len(&self) -> u64 {
        self.values.len() as u64
    }

    pub fn is_empty(&self) -> bool {
        self.values.is_empty()
    }

    pub fn get(&self, index: u64) -> Option<&Bits> {
        self.values.get(usize::try_from(index).ok()?)
    }

    /// Stores `v` (resized to the element width) at `index`; false when out of range.
    pub fn set(&mut self, index: u64, v: &Bits) -> bool {
        let w = self.width;
        match usize::try_from(index)
            .ok()
            .and_then(|i| self.values.get_mut(i))
        {
            Some(slot) => {
                *slot = v.resize(w);
                true
            }
            None => false,
        }
    }

    pub fn values(&self) -> &[Bits] {
        &self.values
    }

    /// All values back to 0.
    pub fn reset(&mut self) {
        let w = self.width;
        self.values.iter_mut().for_each(|v| *v = Bits::zero(w));
    }
}

/// The largest array the state allocates (entries beyond are out of range): 16M elements.
pub const MAX_ARRAY: usize = 1 << 24;

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
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CounterArray {
    pub unit: CounterUnit,
    cells: Vec<CounterValue>,
}

impl CounterArray {
    pub fn new(size: u64, unit: CounterUnit) -> CounterArray {
        let n = usize::try_from(size).unwrap_or(usize::MAX).min(MAX_ARRAY);
        CounterArray {
            unit,
            cells: vec![CounterValue::default(); n],
        }
    }

    pub fn len(&self) -> u64 {
        self.cells.len() as u64
    }

    pub fn is_empty(&self) -> bool {
        self.cells.is_empty()
    }

    pub fn get(&self, index: u64) -> Option<CounterValue> {
        self.cells.get(usize::try_from(index).ok()?).copied()
    }

    pub fn get_mut(&mut self, index: u64) -> Option<&mut CounterValue> {
        self.cells.get_mut(usize::try_from(index).ok()?)
    }

    pub fn reset(&mut self) {
        self.cells
            .iter_mut()
            .for_each(|c| *c = CounterValue::default());
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
    }
}
