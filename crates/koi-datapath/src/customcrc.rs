//! The custom CRCs (`crc16_custom`, `crc32_custom`) as a forwarding thread computes them: a
//! copy of the parameters the control plane set in the state ([`koi_state::State::custom_crc`]),
//! taken before each batch. Compiled programs and hash keys run where the state is lent to
//! the interpreter or not at hand, so they read this copy. A change of the parameters flushes
//! the flow caches (as every write that is not a table's does), so no megaflow learnt with the
//! old parameters outlives them, and the next batch copies the new ones.

use koi_hash::crc::Crc;
use koi_hash::v1model::Calculation;
use koi_ir::HashAlgo;

/// The custom CRCs by calculation index ([`koi_ir::Pipeline::calculations`]), and the
/// last one [`CustomCrcs::checksum_extending`] computed.
#[derive(Clone, Debug, Default)]
pub struct CustomCrcs {
    crcs: Vec<Crc>,
    last: Last,
}

/// A custom CRC's bytes and its running state after them.
#[derive(Clone, Debug, Default)]
struct Last {
    calc: Option<u32>,
    bytes: Vec<u8>,
    reg: u64,
}

impl CustomCrcs {
    /// Copies the parameters from `state` where they differ (a comparison of a few numbers
    /// per calculation when nothing changed; a table is built only for a changed one).
    pub fn sync(&mut self, state: &koi_state::State) {
        let mut i = 0;
        while let Some(c) = state.custom_crc(i) {
            match self.crcs.get_mut(i as usize) {
                Some(m) if m.params() == c.params() => {}
                Some(m) => {
                    *m = c.clone();
                    self.last.calc = None;
                }
                None => self.crcs.push(c.clone()),
            }
            i += 1;
        }
        self.crcs.truncate(i as usize);
    }

    /// Custom calculation `i`'s CRC of `bytes` (0 if there is no such calculation).
    #[inline]
    pub fn checksum(&self, i: u32, bytes: &[u8]) -> u64 {
        self.crcs.get(i as usize).map_or(0, |c| c.checksum(bytes))
    }

    /// [`CustomCrcs::checksum`], resumed from the last CRC this computed when that one had the
    /// same parameters and its bytes begin these: programs hash a key and its extensions
    /// (twemproxy's `crc16` takes the CRCs of a key and of its two shorter prefixes, as
    /// AppSwitch computes them), which then cost one pass over the key, not one each.
    pub fn checksum_extending(&mut self, i: u32, bytes: &[u8]) -> u64 {
        let Some(c) = self.crcs.get(i as usize) else {
            return 0;
        };
        let last = &mut self.last;
        let resumable = last
            .calc
            .and_then(|j| self.crcs.get(j as usize))
            .is_some_and(|l| l.params() == c.params())
            && bytes.starts_with(&last.bytes);
        let reg = if resumable {
            c.update(last.reg, &bytes[last.bytes.len()..])
        } else {
            c.update(c.start(), bytes)
        };
        last.calc = Some(i);
        last.bytes.clear();
        last.bytes.extend_from_slice(bytes);
        last.reg = reg;
        c.finish(reg)
    }

    /// v1model hash `algo` of `bytes`, as the interpreter computes it: a custom CRC with the
    /// copied parameters, a fixed algorithm by its definition (0 for `random` and the others
    /// without a definition over bytes).
    #[inline]
    pub fn compute(&self, algo: HashAlgo, bytes: &[u8]) -> u64 {
        match algo.calculation() {
            Some(i) => self.checksum(i, bytes),
            None => crate::program::v1_algo(algo)
                .and_then(|a| Calculation::new(a).compute_bytes(bytes))
                .unwrap_or(0),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use koi_hash::crc::{CRC16_ARC, CRC16_XMODEM, CRC32_ISO_HDLC};

    #[test]
    fn extending_equals_computing_afresh() {
        let crc = |p| Crc::new(p).unwrap_or_else(|e| panic!("{e}"));
        let mut c = CustomCrcs {
            crcs: vec![
                crc(CRC16_XMODEM),
                crc(CRC16_XMODEM),
                crc(CRC16_ARC),
                crc(CRC32_ISO_HDLC),
            ],
            last: Last::default(),
        };
        let key: Vec<u8> = (0..300u32).map(|i| (i * 37 + 11) as u8).collect();
        // Prefixes growing, shrinking, repeated, from calculations with the same and with
        // other parameters, and other bytes of the same length.
        let mut other = key.clone();
        other[3] ^= 1;
        let runs: [(u32, &[u8]); 12] = [
            (0, &key[..248]),
            (1, &key[..249]),
            (0, &key[..250]),
            (0, &key[..250]),
            (2, &key[..251]),
            (1, &key[..252]),
            (1, &key[..7]),
            (3, &key[..9]),
            (3, &key[..300]),
            (0, &other[..300]),
            (0, &key[..0]),
            (1, &key[..1]),
        ];
        for (i, bytes) in runs {
            assert_eq!(
                c.checksum_extending(i, bytes),
                c.checksum(i, bytes),
                "calculation {i} over {} bytes",
                bytes.len()
            );
        }
        assert_eq!(c.checksum_extending(9, &key), 0);
    }
}
