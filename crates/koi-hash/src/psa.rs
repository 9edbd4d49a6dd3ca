//! PSA's `Hash` and `InternetChecksum` externs, as BMv2's psa_switch computes them.
//!
//! **Hash.** p4c's PSA back end (`PsaCodeGenerator::convertHashAlgorithm`,
//! `backends/bmv2/psa_switch/psaSwitch.cpp`) maps `CRC16`, `CRC16_CUSTOM`, `CRC32`,
//! `CRC32_CUSTOM` and `IDENTITY` to BMv2's calculations `crc16`, `crc16_custom`, `crc32`,
//! `crc32_custom` and `identity` (the same functions as v1model's, see [`crate::v1model`]);
//! it maps no calculation for `ONES_COMPLEMENT16` and `TARGET_DEFAULT`. psa_switch's
//! `PSA_Hash` (`targets/psa_switch/externs/psa_hash.cpp`) serialises the data **right-aligned**:
//! `ceil(bits / 8)` bytes with the padding zeros at the front
//! ([`BitString::to_right_aligned_bytes`]) — unlike v1model, which pads at the end.
//! `get_hash(data)` writes the output truncated to `O`; `get_hash(base, data, max)` writes
//! `base + (H % max)` (64-bit), truncated.
//!
//! **InternetChecksum.** psa_switch's `PSA_InternetChecksum`
//! (`targets/psa_switch/externs/psa_internet_checksum.cpp`) keeps a 16-bit `sum`. `add(data)`
//! reads the concatenated data as one big number and, while what is left of it is not zero,
//! adds its low 16 bits to `sum` in ones'-complement arithmetic and shifts it right by 16;
//! `subtract` does the same adding the complement of each 16-bit chunk. `get()` is `~sum`,
//! `get_state()` is `sum`, `set_state(s)` sets `sum = s`, `clear()` sets `sum = 0`.
//! (psa_switch asserts that the data is a multiple of 16 bits; [`InternetChecksum`] accepts any
//! length, reading the data right-aligned as psa_switch's big-number arithmetic would.)

use crate::bits::BitString;
use crate::checksum::{csum16, ones_add};
use crate::crc::{CRC32, CrcParams};
use crate::v1model::{Calculation, ConfigError, HashAlgorithm, hash_result, truncate};

/// PSA's `enum PSA_HashAlgorithm_t`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum PsaHashAlgorithm {
    /// BMv2 `identity`: the first 64 bits of the right-aligned bytes.
    Identity,
    /// CRC-32/ISO-HDLC.
    Crc32,
    /// Configurable CRC-32, CRC-32/ISO-HDLC initially.
    Crc32Custom,
    /// CRC-16/ARC.
    Crc16,
    /// Configurable CRC-16, CRC-16/ARC initially.
    Crc16Custom,
    /// Not supported by p4c's BMv2 PSA back end; koi computes the Internet checksum
    /// ([`crate::checksum::csum16`]) of the right-aligned bytes.
    OnesComplement16,
    /// Not supported by p4c's BMv2 PSA back end; koi uses CRC-32/ISO-HDLC.
    TargetDefault,
}

impl PsaHashAlgorithm {
    /// All members, in declaration order.
    pub const ALL: [PsaHashAlgorithm; 7] = [
        PsaHashAlgorithm::Identity,
        PsaHashAlgorithm::Crc32,
        PsaHashAlgorithm::Crc32Custom,
        PsaHashAlgorithm::Crc16,
        PsaHashAlgorithm::Crc16Custom,
        PsaHashAlgorithm::OnesComplement16,
        PsaHashAlgorithm::TargetDefault,
    ];

    /// The member's P4 name (`"CRC16"`, ...).
    pub const fn name(self) -> &'static str {
        match self {
            PsaHashAlgorithm::Identity => "IDENTITY",
            PsaHashAlgorithm::Crc32 => "CRC32",
            PsaHashAlgorithm::Crc32Custom => "CRC32_CUSTOM",
            PsaHashAlgorithm::Crc16 => "CRC16",
            PsaHashAlgorithm::Crc16Custom => "CRC16_CUSTOM",
            PsaHashAlgorithm::OnesComplement16 => "ONES_COMPLEMENT16",
            PsaHashAlgorithm::TargetDefault => "TARGET_DEFAULT",
        }
    }

    /// The member named `name`.
    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|a| a.name() == name)
    }

    /// The BMv2 calculation p4c names for this member, if any.
    pub const fn bmv2_calculation(self) -> Option<HashAlgorithm> {
        match self {
            PsaHashAlgorithm::Identity => Some(HashAlgorithm::Identity),
            PsaHashAlgorithm::Crc32 => Some(HashAlgorithm::Crc32),
            PsaHashAlgorithm::Crc32Custom => Some(HashAlgorithm::Crc32Custom),
            PsaHashAlgorithm::Crc16 => Some(HashAlgorithm::Crc16),
            PsaHashAlgorithm::Crc16Custom => Some(HashAlgorithm::Crc16Custom),
            PsaHashAlgorithm::OnesComplement16 | PsaHashAlgorithm::TargetDefault => None,
        }
    }
}

/// One instance of PSA's `Hash<O>` extern.
#[derive(Clone, Debug)]
pub struct PsaHash {
    algorithm: PsaHashAlgorithm,
    calc: Option<Calculation>,
}

impl PsaHash {
    /// A `Hash(algo)` instance with BMv2's initial parameters.
    pub fn new(algorithm: PsaHashAlgorithm) -> Self {
        Self {
            algorithm,
            calc: algorithm.bmv2_calculation().map(Calculation::new),
        }
    }

    /// The algorithm.
    pub fn algorithm(&self) -> PsaHashAlgorithm {
        self.algorithm
    }

    /// Sets the parameters of a `CRC16_CUSTOM` / `CRC32_CUSTOM` instance (width 16 / 32).
    pub fn set_custom_crc(&mut self, params: CrcParams) -> Result<(), ConfigError> {
        match &mut self.calc {
            Some(c) => c.set_custom_crc(params),
            None => Err(ConfigError::NotCustomCrc),
        }
    }

    /// The hash of `data` before truncation to `O`.
    pub fn compute(&self, data: &BitString) -> u64 {
        let bytes = data.to_right_aligned_bytes();
        match &self.calc {
            Some(c) => c.compute_bytes(&bytes).unwrap_or(0),
            None => match self.algorithm {
                PsaHashAlgorithm::OnesComplement16 => u64::from(csum16(&bytes)),
                _ => CRC32.checksum(&bytes),
            },
        }
    }

    /// `get_hash(data)` for an `O` of `out_width` bits.
    pub fn get_hash(&self, data: &BitString, out_width: u32) -> u64 {
        truncate(self.compute(data), out_width)
    }

    /// `get_hash(base, data, max)` for an `O` of `out_width` bits: `base + (H % max)`
    /// truncated. psa_switch divides by `max` unchecked; koi returns `base` when `max` is 0,
    /// as v1model does.
    pub fn get_hash_mod(&self, base: u64, data: &BitString, max: u64, out_width: u32) -> u64 {
        hash_result(self.compute(data), base, max, out_width)
    }
}

/// One instance of PSA's `InternetChecksum` extern.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct InternetChecksum {
    sum: u16,
}

impl InternetChecksum {
    /// A cleared instance.
    pub const fn new() -> Self {
        Self { sum: 0 }
    }

    /// `clear()`: the sum becomes 0.
    pub fn clear(&mut self) {
        self.sum = 0;
    }

    /// `add(data)`.
    pub fn add(&mut self, data: &BitString) {
        for w in nonzero_chunks(data) {
            self.sum = ones_add(self.sum, w);
        }
    }

    /// `subtract(data)`.
    pub fn subtract(&mut self, data: &BitString) {
        for w in nonzero_chunks(data) {
            self.sum = ones_add(self.sum, !w);
        }
    }

    /// `get()`: the checksum, `~sum`.
    pub const fn get(&self) -> u16 {
        !self.sum
    }

    /// `get_state()`: the running sum.
    pub const fn get_state(&self) -> u16 {
        self.sum
    }

    /// `set_state(s)`.
    pub fn set_state(&mut self, state: u16) {
        self.sum = state;
    }

    /// psa_switch's `get_verify(dst, expected)`: whether `expected` equals `get()`.
    pub const fn get_verify(&self, expected: u16) -> bool {
        expected == !self.sum
    }
}

/// The 16-bit chunks psa_switch's loop visits: the data as a right-aligned number, from its
/// least significant 16 bits up, stopping when the rest of the number is zero.
fn nonzero_chunks(data: &BitString) -> impl Iterator<Item = u16> {
    let mut bytes = data.to_right_aligned_bytes();
    if bytes.len() % 2 == 1 {
        bytes.insert(0, 0);
    }
    let words: Vec<u16> = bytes
        .chunks_exact(2)
        .map(|w| u16::from_be_bytes([w[0], w[1]]))
        .collect();
    let first_nonzero = words.iter().position(|&w| w != 0).unwrap_or(words.len());
    words.into_iter().skip(first_nonzero).rev()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bits(value: u64, width: usize) -> BitString {
        let mut b = BitString::new();
        b.push_u64(value, width);
        b
    }

    #[test]
    fn names_round_trip() {
        for a in PsaHashAlgorithm::ALL {
            assert_eq!(PsaHashAlgorithm::from_name(a.name()), Some(a));
        }
        assert_eq!(PsaHashAlgorithm::from_name("crc16"), None);
    }

    #[test]
    fn hash_pads_on_the_left() {
        let h = PsaHash::new(PsaHashAlgorithm::Identity);
        assert_eq!(h.get_hash(&bits(0x456, 12), 16), 0x0456);
        let crc = PsaHash::new(PsaHashAlgorithm::Crc16);
        let v1 = Calculation::new(HashAlgorithm::Crc16);
        assert_eq!(
            crc.compute(&bits(0x456, 12)),
            v1.compute_bytes(&[0x04, 0x56]).unwrap_or(u64::MAX)
        );
    }

    #[test]
    fn hash_mod_and_fallbacks() {
        let h = PsaHash::new(PsaHashAlgorithm::Crc16);
        let d = BitString::from_bytes(b"123456789");
        assert_eq!(h.get_hash_mod(6, &d, 10, 16), 6 + 0xBB3D % 10);
        assert_eq!(h.get_hash_mod(6, &d, 0, 16), 6);
        let t = PsaHash::new(PsaHashAlgorithm::TargetDefault);
        assert_eq!(t.get_hash(&d, 32), 0xCBF4_3926);
        let o = PsaHash::new(PsaHashAlgorithm::OnesComplement16);
        assert_eq!(o.get_hash(&bits(0x1234, 16), 16), 0xEDCB);
        let mut c = PsaHash::new(PsaHashAlgorithm::Crc16Custom);
        let xmodem = crate::crc::CRC16_XMODEM;
        assert_eq!(c.set_custom_crc(xmodem), Ok(()));
        assert_eq!(c.get_hash(&d, 16), 0x31C3);
        assert_eq!(
            PsaHash::new(PsaHashAlgorithm::OnesComplement16).set_custom_crc(xmodem),
            Err(ConfigError::NotCustomCrc)
        );
    }

    #[test]
    fn internet_checksum_operations() {
        let mut ck = InternetChecksum::new();
        ck.add(&bits(0x0001_F203_F4F5_F6F7, 64)); // RFC 1071 §3 example
        assert_eq!(ck.get_state(), 0xDDF2);
        assert_eq!(ck.get(), !0xDDF2);
        assert!(ck.get_verify(!0xDDF2));
        ck.subtract(&bits(0xF4F5_F6F7, 32));
        assert_eq!(ck.get_state(), ones_add(0x0001, 0xF203));
        ck.set_state(6);
        assert_eq!(ck.get_state(), 6);
        ck.clear();
        assert_eq!(ck.get_state(), 0);
    }

    #[test]
    fn internet_checksum_skips_leading_zero_words_only() {
        // Subtracting an all-zero value visits no chunk: the sum stays 0.
        let mut ck = InternetChecksum::new();
        ck.subtract(&bits(0, 32));
        assert_eq!(ck.get_state(), 0);
        // An interior zero word is visited: 0 + ~0 = 0xFFFF.
        ck.subtract(&bits(0x0000_0000_0001_0000, 64));
        assert_eq!(ck.get_state(), ones_add(ones_add(0, 0xFFFF), 0xFFFE));
    }
}
