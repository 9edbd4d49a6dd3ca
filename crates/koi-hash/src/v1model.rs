//! v1model's `HashAlgorithm`, `hash` and `verify_checksum` / `update_checksum`, as BMv2's
//! simple_switch computes them.
//!
//! p4c's BMv2 back end turns each `hash`, `verify_checksum*` and `update_checksum*` call into a
//! BMv2 "calculation" named by the algorithm (`crc32`, `crc32_custom`, `crc16`,
//! `crc16_custom`, `random`, `identity`, `csum16`, `xor16`) over the data tuple. BMv2's
//! `BufBuilder` serialises the tuple into bytes ([`BitString::as_bytes`]: fields concatenated
//! MSB-first, the last byte zero-padded on the right; fields of **invalid headers are left
//! out**; the `_with_payload` variants append the packet's unparsed bytes after that), then
//! runs the algorithm over the bytes (`src/bm_sim/calculations.cpp`):
//!
//! | algorithm | definition |
//! |---|---|
//! | `crc16` | CRC-16/ARC: poly 0x8005, init 0, refin, refout, xorout 0 |
//! | `crc32` | CRC-32/ISO-HDLC: poly 0x04C11DB7, init 0xFFFFFFFF, refin, refout, xorout 0xFFFFFFFF |
//! | `crc16_custom` | configurable, default = `crc16` |
//! | `crc32_custom` | configurable, default = `crc32` |
//! | `csum16` | Internet checksum ([`crate::checksum::csum16`]) |
//! | `xor16` | XOR of big-endian 16-bit words, odd byte padded after ([`crate::checksum::xor16`]) |
//! | `identity` | the **first** `min(8, len)` bytes as a big-endian number ([`identity`]) |
//! | `random` | no BMv2 calculation of that name exists: see [`HashAlgorithm::Random`] |
//!
//! koi adds four members after the standard ones (a koi extension; BMv2 has no such
//! calculations): `fnv1a_32`, `fnv1a_64`, `fnv1_32` and `fnv1_64`, the standard FNV hashes
//! ([`crate::fnv`]) over the same bytes as the CRCs (so a list that is not a whole number of
//! bytes is hashed with its right zero padding), 32 or 64 bits wide before `hash` takes its
//! modulo and truncates.
//!
//! Five more (koi's extension too) are the key hashes of libmemcached's hashkit as twemproxy
//! computes them on x86-64 ([`crate::hashkit`]), 32 bits wide, over the same bytes:
//! `hashkit_one_at_a_time`, `hashkit_md5`, `hashkit_hsieh`, `hashkit_murmur` and
//! `hashkit_jenkins`.
//!
//! `hash(result, algo, base, data, max)` then writes `(H % max) + base` computed in 64 bits,
//! truncated to `result`'s width; simple_switch treats `max == 0` as 1 (result = `base`)
//! (`modify_field_with_hash_based_offset` in `targets/simple_switch/primitives.cpp`). See
//! [`hash_result`].
//!
//! `update_checksum` writes the calculation's output truncated to the checksum field's width;
//! `verify_checksum` compares the (untruncated) output with the field's value and on a mismatch
//! sets `standard_metadata.checksum_error` (`CalcBasedChecksum` in `src/bm_sim/checksums.cpp`).
//! Both do nothing when the condition is false, and verification is skipped when the checksum
//! field's header is invalid. See [`Calculation::update`] and [`Calculation::verify`].

use crate::bits::BitString;
use crate::checksum::{csum16, xor16};
use crate::crc::{CRC16, CRC16_ARC, CRC32, CRC32_ISO_HDLC, Crc, CrcError, CrcParams};
use crate::fnv;
use crate::hashkit;

/// v1model's `enum HashAlgorithm`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum HashAlgorithm {
    /// CRC-32/ISO-HDLC.
    Crc32,
    /// A CRC-32 whose parameters the control plane may change; CRC-32/ISO-HDLC by default.
    Crc32Custom,
    /// CRC-16/ARC.
    Crc16,
    /// A CRC-16 whose parameters the control plane may change; CRC-16/ARC by default.
    Crc16Custom,
    /// p4c emits the calculation name `random`, but BMv2 registers no hash of that name (its
    /// `calculations.cpp` registers xxh64, crc16, crc32, crcCCITT, cksum16, csum16, toeplitz,
    /// identity, round_robin, round_robin_consistent, xor16, xor32 and crc{8,16,32,64}_custom;
    /// simple_switch adds hash_ex and bmv2_hash), so there is no reference output: the caller
    /// supplies a random value ([`Calculation::compute`] returns `None`).
    Random,
    /// The first 64 bits of the serialised data ([`identity`]).
    Identity,
    /// The Internet checksum.
    Csum16,
    /// XOR of 16-bit words.
    Xor16,
    /// FNV-1a, 32 bits (koi's extension).
    Fnv1a32,
    /// FNV-1a, 64 bits (koi's extension).
    Fnv1a64,
    /// FNV-1, 32 bits (koi's extension).
    Fnv1_32,
    /// FNV-1, 64 bits (koi's extension).
    Fnv1_64,
    /// FNV-1a, 32 bits, over bytes read as signed chars, as twemproxy computes it (koi's
    /// extension; [`fnv`]).
    Fnv1a32Signed,
    /// FNV-1a, 64 bits, over bytes read as signed chars (koi's extension).
    Fnv1a64Signed,
    /// FNV-1, 32 bits, over bytes read as signed chars (koi's extension).
    Fnv1_32Signed,
    /// FNV-1, 64 bits, over bytes read as signed chars (koi's extension).
    Fnv1_64Signed,
    /// Twemproxy's `one_at_a_time` (koi's extension; [`hashkit`]).
    HashkitOneAtATime,
    /// Twemproxy's `md5`: the first 4 bytes of the MD5 digest, little-endian (koi's extension).
    HashkitMd5,
    /// Twemproxy's `hsieh` (koi's extension).
    HashkitHsieh,
    /// Twemproxy's `murmur` (koi's extension).
    HashkitMurmur,
    /// Twemproxy's `jenkins` (koi's extension).
    HashkitJenkins,
}

impl HashAlgorithm {
    /// All the algorithms, in declaration order.
    pub const ALL: [HashAlgorithm; 21] = [
        HashAlgorithm::Crc32,
        HashAlgorithm::Crc32Custom,
        HashAlgorithm::Crc16,
        HashAlgorithm::Crc16Custom,
        HashAlgorithm::Random,
        HashAlgorithm::Identity,
        HashAlgorithm::Csum16,
        HashAlgorithm::Xor16,
        HashAlgorithm::Fnv1a32,
        HashAlgorithm::Fnv1a64,
        HashAlgorithm::Fnv1_32,
        HashAlgorithm::Fnv1_64,
        HashAlgorithm::Fnv1a32Signed,
        HashAlgorithm::Fnv1a64Signed,
        HashAlgorithm::Fnv1_32Signed,
        HashAlgorithm::Fnv1_64Signed,
        HashAlgorithm::HashkitOneAtATime,
        HashAlgorithm::HashkitMd5,
        HashAlgorithm::HashkitHsieh,
        HashAlgorithm::HashkitMurmur,
        HashAlgorithm::HashkitJenkins,
    ];

    /// The algorithm named by a `HashAlgorithm` member (`"crc16"`, ...) or BMv2 calculation
    /// name (the same strings).
    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|a| a.name() == name)
    }

    /// The member's name, which is also the BMv2 calculation name p4c emits.
    pub const fn name(self) -> &'static str {
        match self {
            HashAlgorithm::Crc32 => "crc32",
            HashAlgorithm::Crc32Custom => "crc32_custom",
            HashAlgorithm::Crc16 => "crc16",
            HashAlgorithm::Crc16Custom => "crc16_custom",
            HashAlgorithm::Random => "random",
            HashAlgorithm::Identity => "identity",
            HashAlgorithm::Csum16 => "csum16",
            HashAlgorithm::Xor16 => "xor16",
            HashAlgorithm::Fnv1a32 => "fnv1a_32",
            HashAlgorithm::Fnv1a64 => "fnv1a_64",
            HashAlgorithm::Fnv1_32 => "fnv1_32",
            HashAlgorithm::Fnv1_64 => "fnv1_64",
            HashAlgorithm::Fnv1a32Signed => "fnv1a_32_signed",
            HashAlgorithm::Fnv1a64Signed => "fnv1a_64_signed",
            HashAlgorithm::Fnv1_32Signed => "fnv1_32_signed",
            HashAlgorithm::Fnv1_64Signed => "fnv1_64_signed",
            HashAlgorithm::HashkitOneAtATime => "hashkit_one_at_a_time",
            HashAlgorithm::HashkitMd5 => "hashkit_md5",
            HashAlgorithm::HashkitHsieh => "hashkit_hsieh",
            HashAlgorithm::HashkitMurmur => "hashkit_murmur",
            HashAlgorithm::HashkitJenkins => "hashkit_jenkins",
        }
    }

    /// Width of the values the algorithm produces (all fit in a `u64`).
    pub const fn output_width(self) -> u32 {
        match self {
            HashAlgorithm::Crc32
            | HashAlgorithm::Crc32Custom
            | HashAlgorithm::Fnv1a32
            | HashAlgorithm::Fnv1_32
            | HashAlgorithm::Fnv1a32Signed
            | HashAlgorithm::Fnv1_32Signed
            | HashAlgorithm::HashkitOneAtATime
            | HashAlgorithm::HashkitMd5
            | HashAlgorithm::HashkitHsieh
            | HashAlgorithm::HashkitMurmur
            | HashAlgorithm::HashkitJenkins => 32,
            HashAlgorithm::Crc16
            | HashAlgorithm::Crc16Custom
            | HashAlgorithm::Csum16
            | HashAlgorithm::Xor16 => 16,
            HashAlgorithm::Random
            | HashAlgorithm::Identity
            | HashAlgorithm::Fnv1a64
            | HashAlgorithm::Fnv1_64
            | HashAlgorithm::Fnv1a64Signed
            | HashAlgorithm::Fnv1_64Signed => 64,
        }
    }
}

/// BMv2's `identity` hash: the first `min(8, len)` bytes of `bytes` as a big-endian number.
///
/// With the v1model byte layout this is the data's value only when the data is at most 64
/// bits and a whole number of bytes; a shorter non-byte-aligned list keeps its right padding
/// (12 bits `0x456` serialise to `45 60` and give `0x4560`), a longer list gives its first
/// 64 bits.
pub fn identity(bytes: &[u8]) -> u64 {
    bytes
        .iter()
        .take(8)
        .fold(0u64, |acc, &b| (acc << 8) | u64::from(b))
}

/// Why a custom CRC configuration was refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ConfigError {
    /// The calculation's algorithm is not `crc16_custom` / `crc32_custom`.
    NotCustomCrc,
    /// The configuration's width is not the calculation's (16 for `crc16_custom`, 32 for
    /// `crc32_custom`).
    WidthMismatch {
        /// The calculation's CRC width.
        expected: u32,
        /// The width given.
        got: u32,
    },
    /// The parameters are not a usable CRC.
    Crc(CrcError),
}

impl std::fmt::Display for ConfigError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ConfigError::NotCustomCrc => write!(f, "not a custom CRC calculation"),
            ConfigError::WidthMismatch { expected, got } => {
                write!(
                    f,
                    "CRC width {got} given for a crc{expected}_custom calculation"
                )
            }
            ConfigError::Crc(e) => e.fmt(f),
        }
    }
}

impl std::error::Error for ConfigError {}

/// A BMv2 calculation: one per `hash` / checksum call site, because the control plane sets the
/// parameters of each `crc16_custom` / `crc32_custom` calculation separately (runtime_CLI
/// `set_crc16_parameters <calculation> <polynomial> <initial remainder> <final xor value>
/// <reflect data?> <reflect remainder?>`, and `set_crc32_parameters`).
#[derive(Clone, Debug)]
pub struct Calculation {
    algorithm: HashAlgorithm,
    /// The CRC for the custom algorithms; `None` for the others.
    custom: Option<Box<Crc>>,
}

impl Calculation {
    /// A calculation with BMv2's initial parameters (custom CRCs start as `crc16` /
    /// `crc32`).
    pub fn new(algorithm: HashAlgorithm) -> Self {
        let custom = match algorithm {
            HashAlgorithm::Crc16Custom => Some(Box::new(CRC16.clone())),
            HashAlgorithm::Crc32Custom => Some(Box::new(CRC32.clone())),
            _ => None,
        };
        Self { algorithm, custom }
    }

    /// The algorithm.
    pub fn algorithm(&self) -> HashAlgorithm {
        self.algorithm
    }

    /// The current CRC parameters of a custom CRC calculation.
    pub fn custom_params(&self) -> Option<&CrcParams> {
        self.custom.as_deref().map(Crc::params)
    }

    /// Sets the parameters of a `crc16_custom` / `crc32_custom` calculation (BMv2
    /// `CustomCrcMgr::update_config`). `params.width` must be the calculation's width;
    /// `poly`, `init` and `xorout` are truncated to it.
    pub fn set_custom_crc(&mut self, params: CrcParams) -> Result<(), ConfigError> {
        let expected = match self.algorithm {
            HashAlgorithm::Crc16Custom => 16,
            HashAlgorithm::Crc32Custom => 32,
            _ => return Err(ConfigError::NotCustomCrc),
        };
        if params.width != expected {
            return Err(ConfigError::WidthMismatch {
                expected,
                got: params.width,
            });
        }
        let crc = Crc::new(params).map_err(ConfigError::Crc)?;
        self.custom = Some(Box::new(crc));
        Ok(())
    }

    /// Restores BMv2's initial parameters of a custom CRC calculation.
    pub fn reset_custom_crc(&mut self) {
        *self = Self::new(self.algorithm);
    }

    /// The calculation's output over already-serialised bytes, or `None` for
    /// [`HashAlgorithm::Random`].
    pub fn compute_bytes(&self, bytes: &[u8]) -> Option<u64> {
        Some(match self.algorithm {
            HashAlgorithm::Crc32 => CRC32.checksum(bytes),
            HashAlgorithm::Crc16 => CRC16.checksum(bytes),
            HashAlgorithm::Crc16Custom | HashAlgorithm::Crc32Custom => match &self.custom {
                Some(crc) => crc.checksum(bytes),
                None => return None,
            },
            HashAlgorithm::Random => return None,
            HashAlgorithm::Identity => identity(bytes),
            HashAlgorithm::Csum16 => u64::from(csum16(bytes)),
            HashAlgorithm::Xor16 => u64::from(xor16(bytes)),
            HashAlgorithm::Fnv1a32 => u64::from(fnv::fnv1a_32(bytes)),
            HashAlgorithm::Fnv1a64 => fnv::fnv1a_64(bytes),
            HashAlgorithm::Fnv1_32 => u64::from(fnv::fnv1_32(bytes)),
            HashAlgorithm::Fnv1_64 => fnv::fnv1_64(bytes),
            HashAlgorithm::Fnv1a32Signed => u64::from(fnv::fnv1a_32_signed(bytes)),
            HashAlgorithm::Fnv1a64Signed => fnv::fnv1a_64_signed(bytes),
            HashAlgorithm::Fnv1_32Signed => u64::from(fnv::fnv1_32_signed(bytes)),
            HashAlgorithm::Fnv1_64Signed => fnv::fnv1_64_signed(bytes),
            HashAlgorithm::HashkitOneAtATime => u64::from(hashkit::one_at_a_time(bytes)),
            HashAlgorithm::HashkitMd5 => u64::from(hashkit::md5(bytes)),
            HashAlgorithm::HashkitHsieh => u64::from(hashkit::hsieh(bytes)),
            HashAlgorithm::HashkitMurmur => u64::from(hashkit::murmur(bytes)),
            HashAlgorithm::HashkitJenkins => u64::from(hashkit::jenkins(bytes)),
        })
    }

    /// The calculation's output over the data tuple `data` (serialised with BMv2's layout,
    /// [`BitString::as_bytes`]), or `None` for [`HashAlgorithm::Random`].
    pub fn compute(&self, data: &BitString) -> Option<u64> {
        self.compute_bytes(data.as_bytes())
    }

    /// `hash(result, algo, base, data, max)` with a `result` of `result_width` bits: see
    /// [`hash_result`]. `None` for [`HashAlgorithm::Random`].
    pub fn hash(&self, data: &BitString, base: u64, max: u64, result_width: u32) -> Option<u64> {
        self.compute(data)
            .map(|h| hash_result(h, base, max, result_width))
    }

    /// The value `update_checksum` writes to a checksum field of `field_width` bits.
    /// `None` for [`HashAlgorithm::Random`].
    pub fn update(&self, data: &BitString, field_width: u32) -> Option<u64> {
        self.compute(data).map(|v| truncate(v, field_width))
    }

    /// Whether `verify_checksum` accepts `field_value` (the checksum field's value): BMv2
    /// compares the calculation's 64-bit output with it, without truncation. `None` for
    /// [`HashAlgorithm::Random`].
    pub fn verify(&self, data: &BitString, field_value: u64) -> Option<bool> {
        self.compute(data).map(|v| v == field_value)
    }
}

/// `v` truncated to its low `width` bits (`width >= 64` keeps all of it).
pub const fn truncate(v: u64, width: u32) -> u64 {
    if width >= 64 {
        v
    } else {
        v & ((1u64 << width) - 1)
    }
}

/// The value `hash(result, algo, base, data, max)` writes to a `result` of `result_width` bits,
/// given the calculation's output `hash`: `(hash % max) + base` in 64-bit arithmetic (wrapping),
/// with `max == 0` treated as 1 so the result is `base`, truncated to `result_width`. `base`
/// and `max` are the low 64 bits of the P4 values.
pub const fn hash_result(hash: u64, base: u64, max: u64, result_width: u32) -> u64 {
    let max = if max == 0 { 1 } else { max };
    truncate((hash % max).wrapping_add(base), result_width)
}

/// The CRC parameters a control plane can set for `crc16_custom` (see
/// [`Calculation::set_custom_crc`]); this is also their initial value.
pub const CRC16_CUSTOM_DEFAULT: CrcParams = CRC16_ARC;
/// The initial parameters of `crc32_custom`.
pub const CRC32_CUSTOM_DEFAULT: CrcParams = CRC32_ISO_HDLC;

#[cfg(test)]
mod tests {
    use super::*;

    fn data(bytes: &[u8]) -> BitString {
        BitString::from_bytes(bytes)
    }

    #[test]
    fn names_round_trip() {
        for a in HashAlgorithm::ALL {
            assert_eq!(HashAlgorithm::from_name(a.name()), Some(a));
        }
        assert_eq!(HashAlgorithm::from_name("crc64"), None);
    }

    #[test]
    fn algorithms_on_check_string() {
        let d = data(b"123456789");
        let run = |a| Calculation::new(a).compute(&d);
        assert_eq!(run(HashAlgorithm::Crc16), Some(0xBB3D));
        assert_eq!(run(HashAlgorithm::Crc16Custom), Some(0xBB3D));
        assert_eq!(run(HashAlgorithm::Crc32), Some(0xCBF4_3926));
        assert_eq!(run(HashAlgorithm::Crc32Custom), Some(0xCBF4_3926));
        assert_eq!(run(HashAlgorithm::Identity), Some(0x3132_3334_3536_3738));
        assert_eq!(run(HashAlgorithm::Random), None);
        // "12" "34" "56" "78" "9\0"
        let x = 0x3132 ^ 0x3334 ^ 0x3536 ^ 0x3738 ^ 0x3900;
        assert_eq!(run(HashAlgorithm::Xor16), Some(x));
        let s: u32 = 0x3132 + 0x3334 + 0x3536 + 0x3738 + 0x3900;
        let folded = (s & 0xFFFF) + (s >> 16);
        assert_eq!(
            run(HashAlgorithm::Csum16),
            Some(u64::from(!(folded as u16)))
        );
    }

    #[test]
    fn fnv_over_the_data_bytes() {
        let run = |a, d: &BitString| Calculation::new(a).compute(d);
        let d = data(b"foobar");
        assert_eq!(run(HashAlgorithm::Fnv1a32, &d), Some(0xbf9c_f968));
        assert_eq!(run(HashAlgorithm::Fnv1a64, &d), Some(0x8594_4171_f739_67e8));
        assert_eq!(run(HashAlgorithm::Fnv1_32, &d), Some(0x31f0_b262));
        assert_eq!(run(HashAlgorithm::Fnv1_64, &d), Some(0x340d_8765_a4dd_a9c2));
        // Fields concatenated MSB-first: 4 bits 0x6 then 12 bits 0x161 are the bytes "a" "a"
        // (0x61 0x61); 12 bits 0x616 are "a" then 0x60 (right zero padding).
        let mut two = BitString::new();
        two.push_u64(0x6, 4);
        two.push_u64(0x161, 12);
        assert_eq!(
            run(HashAlgorithm::Fnv1a64, &two),
            Some(fnv::fnv1a_64(b"aa"))
        );
        let mut odd = BitString::new();
        odd.push_u64(0x616, 12);
        assert_eq!(
            run(HashAlgorithm::Fnv1a32, &odd),
            Some(u64::from(fnv::fnv1a_32(&[0x61, 0x60])))
        );
        // hash(): the 64-bit value modulo max, truncated to the result.
        let c = Calculation::new(HashAlgorithm::Fnv1a64);
        assert_eq!(c.hash(&data(b"a"), 0, 1 << 32, 32), Some(0x8601_ec8c));
        assert_eq!(c.hash(&data(b"a"), 0, 0, 64), Some(0));
        assert_eq!(c.hash(&data(b"a"), 0, u64::MAX, 16), Some(0xec8c));
    }

    #[test]
    fn identity_takes_the_first_bytes() {
        assert_eq!(identity(&[]), 0);
        assert_eq!(identity(&[0x12, 0x34]), 0x1234);
        assert_eq!(
            identity(&[1, 2, 3, 4, 5, 6, 7, 8, 9, 10]),
            0x0102_0304_0506_0708
        );
        let mut bits = BitString::new();
        bits.push_u64(0x456, 12);
        let c = Calculation::new(HashAlgorithm::Identity);
        assert_eq!(c.compute(&bits), Some(0x4560));
    }

    #[test]
    fn custom_crc_configuration() {
        let mut c = Calculation::new(HashAlgorithm::Crc16Custom);
        assert_eq!(c.custom_params(), Some(&CRC16_CUSTOM_DEFAULT));
        let xmodem = crate::crc::CRC16_XMODEM;
        assert_eq!(c.set_custom_crc(xmodem), Ok(()));
        assert_eq!(c.compute(&data(b"123456789")), Some(0x31C3));
        assert_eq!(
            c.set_custom_crc(CRC32_CUSTOM_DEFAULT),
            Err(ConfigError::WidthMismatch {
                expected: 16,
                got: 32
            })
        );
        c.reset_custom_crc();
        assert_eq!(c.compute(&data(b"123456789")), Some(0xBB3D));
        let mut plain = Calculation::new(HashAlgorithm::Crc16);
        assert_eq!(plain.set_custom_crc(xmodem), Err(ConfigError::NotCustomCrc));
        assert_eq!(plain.custom_params(), None);

        let mut c32 = Calculation::new(HashAlgorithm::Crc32Custom);
        let iscsi = CrcParams {
            poly: 0x1EDC_6F41,
            ..CRC32_CUSTOM_DEFAULT
        };
        assert_eq!(c32.set_custom_crc(iscsi), Ok(()));
        assert_eq!(c32.compute(&data(b"123456789")), Some(0xE306_9283));
    }

    #[test]
    fn hash_result_semantics() {
        assert_eq!(hash_result(0x1234, 0, 0x100, 16), 0x34);
        assert_eq!(hash_result(0x1234, 5, 0x100, 16), 0x39);
        // max == 0: the result is base.
        assert_eq!(hash_result(0x1234, 7, 0, 16), 7);
        // Truncated to the result's width; 64-bit wrap-around before that.
        assert_eq!(hash_result(0xFF, 0x100, 0x1000, 8), 0xFF);
        assert_eq!(hash_result(1, u64::MAX, 2, 64), 0);
    }

    #[test]
    fn checksum_update_and_verify() {
        let c = Calculation::new(HashAlgorithm::Csum16);
        let d = data(&[0x12, 0x34]);
        assert_eq!(c.update(&d, 16), Some(0xEDCB));
        assert_eq!(c.update(&d, 8), Some(0xCB));
        assert_eq!(c.verify(&d, 0xEDCB), Some(true));
        // No truncation before comparing: an 8-bit field cannot hold 0xEDCB.
        assert_eq!(c.verify(&d, 0xCB), Some(false));
        assert_eq!(Calculation::new(HashAlgorithm::Random).verify(&d, 0), None);
    }
}
