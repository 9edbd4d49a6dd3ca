//! The custom CRCs (`crc16_custom`, `crc32_custom`) as a forwarding thread computes them: a
//! copy of the parameters the control plane set in the state ([`koi_state::State::custom_crc`]),
//! taken before each batch. Compiled programs and hash keys run where the state is lent to
//! the interpreter or not at hand, so they read this copy. A change of the parameters flushes
//! the flow caches (as every write that is not a table's does), so no megaflow learnt with the
//! old parameters outlives them, and the next batch copies the new ones.

use koi_hash::crc::Crc;
use koi_hash::v1model::Calculation;
use koi_ir::HashAlgo;

/// The custom CRCs by calculation index ([`koi_ir::Pipeline::calculations`]).
#[derive(Clone, Debug, Default)]
pub struct CustomCrcs(Vec<Crc>);

impl CustomCrcs {
    /// Copies the parameters from `state` where they differ (a comparison of a few numbers
    /// per calculation when nothing changed; a table is built only for a changed one).
    pub fn sync(&mut self, state: &koi_state::State) {
        let mut i = 0;
        while let Some(c) = state.custom_crc(i) {
            match self.0.get_mut(i as usize) {
                Some(m) if m.params() == c.params() => {}
                Some(m) => *m = c.clone(),
                None => self.0.push(c.clone()),
            }
            i += 1;
        }
        self.0.truncate(i as usize);
    }

    /// Custom calculation `i`'s CRC of `bytes` (0 if there is no such calculation).
    #[inline]
    pub fn checksum(&self, i: u32, bytes: &[u8]) -> u64 {
        self.0.get(i as usize).map_or(0, |c| c.checksum(bytes))
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
