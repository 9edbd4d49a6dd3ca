//! koi's hash and checksum algorithms, bit-exact with the reference targets.
//!
//! Every P4 hash or checksum takes a list of fields of arbitrary widths, concatenated
//! MSB-first into a [`BitString`]; the modules below turn it into the values the reference
//! targets compute:
//!
//! - [`v1model`]: `HashAlgorithm`, `hash(...)`, `verify_checksum` / `update_checksum`, as
//!   BMv2 simple_switch computes them (custom CRC parameters included), and koi's FNV
//!   members.
//! - [`psa`]: `PSA_HashAlgorithm_t`, the `Hash` and `InternetChecksum` externs, as BMv2
//!   psa_switch computes them.
//! - [`ubpf`]: ubpf_model's `hash` (lookup3) and `csum_replace2` / `csum_replace4`, as p4c's
//!   uBPF back end compiles them.
//! - [`crc`], [`checksum`], [`lookup3`], [`fnv`], [`hashkit`]: the underlying algorithms
//!   (Rocksoft-model CRCs, the Internet checksum and its RFC 1624 incremental update, Bob
//!   Jenkins' lookup3, FNV-1 and FNV-1a, and the key hashes of libmemcached's hashkit as
//!   twemproxy computes them: one_at_a_time, md5, hsieh, murmur, jenkins).
//! - [`bits`]: the bit-string input and the two byte layouts BMv2 uses for it.
//!
//! No function here panics on any input, and the crate has no `unsafe` code.

pub mod bits;
pub mod checksum;
pub mod crc;
pub mod fnv;
pub mod hashkit;
pub mod lookup3;
pub mod psa;
pub mod ubpf;
pub mod v1model;

pub use bits::BitString;
