//! Parameterised CRCs (the Rocksoft model), bit-exact with BMv2's `crc_custom`.
//!
//! BMv2 (`src/bm_sim/calculations.cpp`, struct `crc_custom<T>`) computes every CRC with one
//! MSB-first table-driven loop over bytes:
//!
//! ```text
//! reg = init
//! for each byte b:
//!     d   = (refin ? reflect8(b) : b) ^ (reg >> (width - 8))
//!     reg = table[d] ^ (reg << 8)            (truncated to width bits)
//! return (refout ? reflect(reg, width) : reg) ^ xorout
//! ```
//!
//! where `table[d]` is `d << (width - 8)` divided by `poly` bit by bit. `init` is the value of
//! the unreflected register, as in the Rocksoft model and the CRC catalogues, so a catalogue
//! entry (width, poly, init, refin, refout, xorout) plugs in directly. BMv2's fixed `crc16`
//! and `crc32` are the same loop with fixed tables (`src/bm_sim/crc_tables.h`); see
//! [`CRC16_ARC`] and [`CRC32_ISO_HDLC`].
//!
//! [`Crc`] supports any width from 8 to 64 bits; BMv2 instantiates 8, 16, 32 and 64.
//! Every CRC runs eight bytes at a time (slicing by 8: least significant bit first when the
//! input is reflected, most significant bit first when not); CRC-32 as
//! zlib defines it, v1model's `crc32`, is the `crc32fast` crate's (carry-less multiplication
//! on CPUs that have it), which the tests check against the table loop.

/// The parameters of a CRC, as the CRC catalogues and BMv2's `crc_config_t` give them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct CrcParams {
    /// Width in bits, 8 to 64.
    pub width: u32,
    /// Generator polynomial, without its top bit (normal, unreflected form).
    pub poly: u64,
    /// Initial value of the unreflected register.
    pub init: u64,
    /// Reflect each input byte (BMv2 `data_reflected`).
    pub refin: bool,
    /// Reflect the final register (BMv2 `remainder_reflected`).
    pub refout: bool,
    /// XORed into the result (BMv2 `final_xor_value`).
    pub xorout: u64,
}

/// Why a [`CrcParams`] cannot be used.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CrcError {
    /// The width is not in 8..=64.
    BadWidth(u32),
}

impl std::fmt::Display for CrcError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            CrcError::BadWidth(w) => write!(f, "CRC width {w} is not between 8 and 64"),
        }
    }
}

impl std::error::Error for CrcError {}

const fn mask(width: u32) -> u64 {
    if width >= 64 {
        u64::MAX
    } else {
        (1u64 << width) - 1
    }
}

/// Reverses the low `width` bits of `v` (higher bits are dropped).
pub const fn reflect(v: u64, width: u32) -> u64 {
    if width == 0 {
        return 0;
    }
    let w = if width > 64 { 64 } else { width };
    v.reverse_bits() >> (64 - w)
}

const fn make_table(width: u32, poly: u64) -> [u64; 256] {
    let m = mask(width);
    let top = 1u64 << (width - 1);
    let mut table = [0u64; 256];
    let mut d = 0;
    while d < 256 {
        let mut rem = ((d as u64) << (width - 8)) & m;
        let mut bit = 0;
        while bit < 8 {
            rem = if rem & top != 0 {
                ((rem << 1) ^ poly) & m
            } else {
                (rem << 1) & m
            };
            bit += 1;
        }
        table[d] = rem;
        d += 1;
    }
    table
}

/// The tables of a reflected CRC (input and output reflected, as CRC-32 and CRC-16/ARC
/// are) run least significant bit first, eight bytes at a time ("slicing by 8"): `t[0][x]`
/// is the register contribution of byte `x`, `t[k][x]` that of byte `x` followed by `k`
/// bytes more. Linear over GF(2), so the same result as the byte loop, without reflecting
/// every byte.
const fn make_reflected(width: u32, poly: u64) -> [[u64; 256]; 8] {
    let rpoly = reflect(poly, width);
    let mut t = [[0u64; 256]; 8];
    let mut d = 0;
    while d < 256 {
        let mut r = d as u64;
        let mut bit = 0;
        while bit < 8 {
            r = if r & 1 != 0 { (r >> 1) ^ rpoly } else { r >> 1 };
            bit += 1;
        }
        t[0][d] = r;
        d += 1;
    }
    extend_slices(t, false)
}

/// Fills `t[1..8]` from `t[0]`: `t[k][x]` is `t[k - 1][x]` run through one more zero byte,
/// the register shifting right (reflected) or left (`msb_first`).
const fn extend_slices(mut t: [[u64; 256]; 8], msb_first: bool) -> [[u64; 256]; 8] {
    let mut k = 1;
    while k < 8 {
        let mut d = 0;
        while d < 256 {
            let prev = t[k - 1][d];
            t[k][d] = if msb_first {
                (prev << 8) ^ t[0][(prev >> 56) as usize]
            } else {
                (prev >> 8) ^ t[0][(prev & 0xFF) as usize]
            };
            d += 1;
        }
        k += 1;
    }
    t
}

/// The tables of a CRC whose input is not reflected (CRC-16/XMODEM, CRC-8/SMBUS), run most
/// significant bit first, eight bytes at a time: the register is kept in the top `width` bits
/// of 64 (the polynomial shifted up alike), `t[0][x]` is the register after byte `x` entered
/// an empty one, `t[k][x]` after byte `x` and `k` bytes more. The mirror image of
/// [`make_reflected`].
const fn make_msb_first(width: u32, poly: u64) -> [[u64; 256]; 8] {
    let lpoly = poly << (64 - width);
    let mut t = [[0u64; 256]; 8];
    let mut d = 0;
    while d < 256 {
        let mut r = (d as u64) << 56;
        let mut bit = 0;
        while bit < 8 {
            r = if r >> 63 != 0 {
                (r << 1) ^ lpoly
            } else {
                r << 1
            };
            bit += 1;
        }
        t[0][d] = r;
        d += 1;
    }
    extend_slices(t, true)
}

/// A CRC ready to run: its parameters, its 256-entry table and its slicing tables.
#[derive(Clone, PartialEq, Eq)]
pub struct Crc {
    params: CrcParams,
    table: [u64; 256],
    /// The slicing tables: [`make_reflected`]'s when `refin` is set, else
    /// [`make_msb_first`]'s.
    slices: [[u64; 256]; 8],
}

impl std::fmt::Debug for Crc {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Crc").field("params", &self.params).finish()
    }
}

impl Crc {
    /// Builds the CRC; `poly`, `init` and `xorout` are truncated to `width` bits.
    pub const fn new(params: CrcParams) -> Result<Crc, CrcError> {
        if params.width < 8 || params.width > 64 {
            return Err(CrcError::BadWidth(params.width));
        }
        Ok(Self::build(params))
    }

    /// Builds a CRC whose width is known to be in 8..=64 (checked by the callers).
    const fn build(params: CrcParams) -> Crc {
        let m = mask(params.width);
        let params = CrcParams {
            width: params.width,
            poly: params.poly & m,
            init: params.init & m,
            refin: params.refin,
            refout: params.refout,
            xorout: params.xorout & m,
        };
        Crc {
            params,
            table: make_table(params.width, params.poly),
            slices: if params.refin {
                make_reflected(params.width, params.poly)
            } else {
                make_msb_first(params.width, params.poly)
            },
        }
    }

    /// The parameters (with `poly`, `init` and `xorout` truncated to the width).
    pub const fn params(&self) -> &CrcParams {
        &self.params
    }

    /// The CRC of `bytes`.
    pub fn checksum(&self, bytes: &[u8]) -> u64 {
        self.finish(self.update(self.start(), bytes))
    }

    /// Whether this is zlib's CRC-32 (v1model's `crc32`), run by `crc32fast`: folded with
    /// carry-less multiplies where the CPU has them, several times faster than tables on
    /// keys of a hundred bytes.
    fn is_zlib(&self) -> bool {
        self.params == CRC32_ISO_HDLC
    }

    /// The running state before any byte: with [`Crc::update`] and [`Crc::finish`], a CRC
    /// computed in parts (`finish(update(update(start(), a), b))` is the CRC of `a` then
    /// `b`), so that the CRC of a message and of its extension share the work.
    pub fn start(&self) -> u64 {
        let p = &self.params;
        if self.is_zlib() {
            0
        } else if p.refin {
            reflect(p.init, p.width)
        } else {
            p.init << (64 - p.width)
        }
    }

    /// The running state `reg` after `bytes` more.
    pub fn update(&self, reg: u64, bytes: &[u8]) -> u64 {
        if self.is_zlib() {
            let mut h = crc32fast::Hasher::new_with_initial(reg as u32);
            h.update(bytes);
            u64::from(h.finalize())
        } else if self.params.refin {
            self.update_reflected(reg, bytes)
        } else {
            self.update_msb_first(reg, bytes)
        }
    }

    /// The CRC of the bytes the running state `reg` went through.
    pub fn finish(&self, reg: u64) -> u64 {
        let p = &self.params;
        if self.is_zlib() {
            return reg;
        }
        let m = mask(p.width);
        let out = match (p.refin, p.refout) {
            (true, true) => reg,
            (true, false) => reflect(reg, p.width),
            (false, refout) => {
                let reg = reg >> (64 - p.width);
                if refout { reflect(reg, p.width) } else { reg }
            }
        };
        (out ^ p.xorout) & m
    }

    /// The CRC of `bytes` by the byte loop of the module documentation (BMv2's), which the
    /// sliced loops are tested against.
    #[cfg_attr(not(test), allow(dead_code))]
    fn checksum_bytewise(&self, bytes: &[u8]) -> u64 {
        let p = &self.params;
        let m = mask(p.width);
        let shift = p.width - 8;
        let mut reg = p.init;
        for &b in bytes {
            let b = if p.refin { b.reverse_bits() } else { b };
            let d = (u64::from(b) ^ (reg >> shift)) & 0xFF;
            let next = if p.width > 8 { reg << 8 } else { 0 };
            reg = (self.table[d as usize] ^ next) & m;
        }
        let out = if p.refout { reflect(reg, p.width) } else { reg };
        (out ^ p.xorout) & m
    }

    /// [`Crc::update`] for a CRC with `refin`: the register kept reflected, eight bytes at
    /// a time, then byte by byte.
    fn update_reflected(&self, mut reg: u64, bytes: &[u8]) -> u64 {
        let t = &self.slices;
        let mut chunks = bytes.chunks_exact(8);
        for c in &mut chunks {
            let mut b = [0u8; 8];
            b.copy_from_slice(c);
            let v = reg ^ u64::from_le_bytes(b);
            reg = t[7][(v & 0xFF) as usize]
                ^ t[6][((v >> 8) & 0xFF) as usize]
                ^ t[5][((v >> 16) & 0xFF) as usize]
                ^ t[4][((v >> 24) & 0xFF) as usize]
                ^ t[3][((v >> 32) & 0xFF) as usize]
                ^ t[2][((v >> 40) & 0xFF) as usize]
                ^ t[1][((v >> 48) & 0xFF) as usize]
                ^ t[0][(v >> 56) as usize];
        }
        for &b in chunks.remainder() {
            reg = (reg >> 8) ^ t[0][((reg ^ u64::from(b)) & 0xFF) as usize];
        }
        reg
    }

    /// [`Crc::update`] for a CRC without `refin`: the register kept in the top bits of 64,
    /// eight bytes at a time, then byte by byte.
    fn update_msb_first(&self, mut reg: u64, bytes: &[u8]) -> u64 {
        let t = &self.slices;
        let mut chunks = bytes.chunks_exact(8);
        for c in &mut chunks {
            let mut b = [0u8; 8];
            b.copy_from_slice(c);
            let v = reg ^ u64::from_be_bytes(b);
            reg = t[7][(v >> 56) as usize]
                ^ t[6][((v >> 48) & 0xFF) as usize]
                ^ t[5][((v >> 40) & 0xFF) as usize]
                ^ t[4][((v >> 32) & 0xFF) as usize]
                ^ t[3][((v >> 24) & 0xFF) as usize]
                ^ t[2][((v >> 16) & 0xFF) as usize]
                ^ t[1][((v >> 8) & 0xFF) as usize]
                ^ t[0][(v & 0xFF) as usize];
        }
        for &b in chunks.remainder() {
            reg = (reg << 8) ^ t[0][((reg >> 56) ^ u64::from(b)) as usize];
        }
        reg
    }

    /// The catalogue check value: the CRC of the ASCII string `"123456789"`.
    pub fn check(&self) -> u64 {
        self.checksum(b"123456789")
    }
}

/// CRC-8/SMBUS: BMv2's `crc8_custom` default (poly 0x07, init 0, not reflected, xorout 0).
pub const CRC8_SMBUS: CrcParams = CrcParams {
    width: 8,
    poly: 0x07,
    init: 0,
    refin: false,
    refout: false,
    xorout: 0,
};

/// CRC-16/ARC: BMv2's `crc16` (v1model `HashAlgorithm.crc16`, PSA `CRC16`) and the default of
/// `crc16_custom` (poly 0x8005, init 0, reflected in and out, xorout 0).
pub const CRC16_ARC: CrcParams = CrcParams {
    width: 16,
    poly: 0x8005,
    init: 0,
    refin: true,
    refout: true,
    xorout: 0,
};

/// CRC-16/IBM-3740 ("CCITT-FALSE"): BMv2's `crcCCITT` (poly 0x1021, init 0xFFFF, not
/// reflected, xorout 0). No v1model or PSA algorithm names it.
pub const CRC16_IBM_3740: CrcParams = CrcParams {
    width: 16,
    poly: 0x1021,
    init: 0xFFFF,
    refin: false,
    refout: false,
    xorout: 0,
};

/// CRC-16/XMODEM (poly 0x1021, init 0, not reflected, xorout 0): what a control plane sets a
/// `crc16_custom` to for twemproxy's `crc16` (examples/appswitch) or Redis Cluster's slots.
pub const CRC16_XMODEM: CrcParams = CrcParams {
    width: 16,
    poly: 0x1021,
    init: 0,
    refin: false,
    refout: false,
    xorout: 0,
};

/// CRC-32/ISO-HDLC (the Ethernet/zlib CRC-32): BMv2's `crc32` (v1model `HashAlgorithm.crc32`,
/// PSA `CRC32`) and the default of `crc32_custom` (poly 0x04C11DB7, init 0xFFFFFFFF,
/// reflected in and out, xorout 0xFFFFFFFF).
pub const CRC32_ISO_HDLC: CrcParams = CrcParams {
    width: 32,
    poly: 0x04C1_1DB7,
    init: 0xFFFF_FFFF,
    refin: true,
    refout: true,
    xorout: 0xFFFF_FFFF,
};

/// BMv2's `crc64_custom` default: poly 0x1B, init 0, reflected in and out, xorout 0. (The
/// catalogue's CRC-64/GO-ISO has the same polynomial but init and xorout all ones.)
pub const CRC64_BMV2_DEFAULT: CrcParams = CrcParams {
    width: 64,
    poly: 0x1B,
    init: 0,
    refin: true,
    refout: true,
    xorout: 0,
};

/// Ready-made [`CRC16_ARC`].
pub static CRC16: Crc = Crc::build(CRC16_ARC);
/// Ready-made [`CRC32_ISO_HDLC`].
pub static CRC32: Crc = Crc::build(CRC32_ISO_HDLC);
/// Ready-made [`CRC16_IBM_3740`].
pub static CRC16_CCITT: Crc = Crc::build(CRC16_IBM_3740);

#[cfg(test)]
mod tests {
    use super::*;

    fn check(p: CrcParams) -> u64 {
        Crc::new(p).map(|c| c.check()).unwrap_or(u64::MAX)
    }

    // Check values from the CRC catalogue (reveng.sourceforge.io/crc-catalogue).
    #[test]
    fn catalogue_check_values() {
        assert_eq!(check(CRC8_SMBUS), 0xF4);
        assert_eq!(check(CRC16_ARC), 0xBB3D);
        assert_eq!(check(CRC16_IBM_3740), 0x29B1);
        assert_eq!(check(CRC32_ISO_HDLC), 0xCBF4_3926);
        let go_iso = CrcParams {
            init: u64::MAX,
            xorout: u64::MAX,
            ..CRC64_BMV2_DEFAULT
        };
        assert_eq!(check(go_iso), 0xB909_56C7_75A4_1001);
        // More entries, exercising non-palindromic init values and mixed reflection.
        let riello = CrcParams {
            width: 16,
            poly: 0x1021,
            init: 0xB2AA,
            refin: true,
            refout: true,
            xorout: 0,
        };
        assert_eq!(check(riello), 0x63D0);
        let xmodem = CRC16_XMODEM;
        assert_eq!(check(xmodem), 0x31C3);
        let bzip2 = CrcParams {
            width: 32,
            poly: 0x04C1_1DB7,
            init: 0xFFFF_FFFF,
            refin: false,
            refout: false,
            xorout: 0xFFFF_FFFF,
        };
        assert_eq!(check(bzip2), 0xFC89_1918);
        let castagnoli = CrcParams {
            width: 32,
            poly: 0x1EDC_6F41,
            init: 0xFFFF_FFFF,
            refin: true,
            refout: true,
            xorout: 0xFFFF_FFFF,
        };
        assert_eq!(check(castagnoli), 0xE306_9283);
        let ecma = CrcParams {
            width: 64,
            poly: 0x42F0_E1EB_A9EA_3693,
            init: 0,
            refin: false,
            refout: false,
            xorout: 0,
        };
        assert_eq!(check(ecma), 0x6C40_DF5F_0B49_7347);
        let crc24 = CrcParams {
            width: 24,
            poly: 0x86_4CFB,
            init: 0xB7_04CE,
            refin: false,
            refout: false,
            xorout: 0,
        };
        assert_eq!(check(crc24), 0x21_CF02);
    }

    #[test]
    fn statics_match_params() {
        assert_eq!(CRC16.check(), 0xBB3D);
        assert_eq!(CRC32.check(), 0xCBF4_3926);
        assert_eq!(CRC16_CCITT.check(), 0x29B1);
    }

    #[test]
    fn tables_match_bmv2_crc_tables_h() {
        // First entries of table_crc16, table_crc32 and table_crcCCITT in BMv2's crc_tables.h.
        assert_eq!(&CRC16.table[..4], &[0x0000, 0x8005, 0x800F, 0x000A]);
        assert_eq!(CRC16.table[255], 0x0202);
        assert_eq!(
            &CRC32.table[..4],
            &[0x0000_0000, 0x04C1_1DB7, 0x0982_3B6E, 0x0D43_26D9]
        );
        assert_eq!(CRC32.table[255], 0xB1F7_40B4);
        assert_eq!(&CRC16_CCITT.table[..4], &[0x0000, 0x1021, 0x2042, 0x3063]);
        assert_eq!(CRC16_CCITT.table[255], 0x1EF0);
    }

    #[test]
    fn bad_widths_are_rejected() {
        for w in [0, 7, 65, 1000] {
            let p = CrcParams {
                width: w,
                ..CRC16_ARC
            };
            assert_eq!(Crc::new(p), Err(CrcError::BadWidth(w)));
        }
    }

    #[test]
    fn empty_input_is_init_through_output_stage() {
        assert_eq!(CRC32.checksum(&[]), 0);
        assert_eq!(CRC16.checksum(&[]), 0);
        assert_eq!(CRC16_CCITT.checksum(&[]), 0xFFFF);
    }

    #[test]
    fn oversized_parameters_are_truncated() {
        let p = CrcParams {
            poly: 0xF_8005,
            init: 0xF_0000,
            xorout: 0xF_0000,
            ..CRC16_ARC
        };
        let c = Crc::new(p).ok();
        assert_eq!(c.map(|c| c.check()), Some(0xBB3D));
    }

    mod props {
        use super::super::*;
        use proptest::prelude::*;

        /// Bit-at-a-time Rocksoft-model CRC: each message bit (after optional byte reflection)
        /// is XORed into the register's top bit before the shift.
        fn bitwise(p: &CrcParams, data: &[u8]) -> u64 {
            let m = mask(p.width);
            let top = 1u64 << (p.width - 1);
            let mut reg = p.init & m;
            for &b in data {
                let b = if p.refin { b.reverse_bits() } else { b };
                for i in (0..8).rev() {
                    let feedback = (reg & top != 0) ^ ((b >> i) & 1 == 1);
                    reg = (reg << 1) & m;
                    if feedback {
                        reg ^= p.poly & m;
                    }
                }
            }
            let out = if p.refout { reflect(reg, p.width) } else { reg };
            (out ^ p.xorout) & m
        }

        proptest! {
            #[test]
            fn table_engine_equals_bitwise(
                width in 8u32..=64,
                poly in any::<u64>(),
                init in any::<u64>(),
                xorout in any::<u64>(),
                refin in any::<bool>(),
                refout in any::<bool>(),
                data in proptest::collection::vec(any::<u8>(), 0..40),
            ) {
                let p = CrcParams { width, poly, init, refin, refout, xorout };
                let crc = Crc::new(p);
                prop_assert!(crc.is_ok());
                if let Ok(crc) = crc {
                    prop_assert_eq!(crc.checksum(&data), bitwise(&p, &data));
                }
            }
        }
    }

    #[test]
    fn sliced_crcs_agree_with_the_byte_loop() {
        let mut x: u64 = 0x1234_5678_9abc_def1;
        let mut data = Vec::new();
        for _ in 0..300 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            data.push(x as u8);
        }
        let crcs = [
            CRC16_ARC,
            CRC32_ISO_HDLC,
            CrcParams {
                width: 64,
                poly: 0x42F0_E1EB_A9EA_3693,
                init: u64::MAX,
                refin: true,
                refout: true,
                xorout: u64::MAX,
            },
            CrcParams {
                width: 12,
                poly: 0x80F,
                init: 0x123,
                refin: true,
                refout: true,
                xorout: 0x5A5,
            },
            CrcParams {
                width: 24,
                poly: 0x86_4CFB,
                init: 0xB7_04CE,
                refin: true,
                refout: true,
                xorout: 0,
            },
            CrcParams {
                width: 16,
                poly: 0x1021,
                init: 0xFFFF,
                refin: true,
                refout: false,
                xorout: 0,
            },
            CRC16_XMODEM,
            CRC8_SMBUS,
            CrcParams {
                width: 64,
                poly: 0x42F0_E1EB_A9EA_3693,
                init: 0x1234,
                refin: false,
                refout: false,
                xorout: u64::MAX,
            },
            CrcParams {
                width: 12,
                poly: 0x80F,
                init: 0x123,
                refin: false,
                refout: true,
                xorout: 0x5A5,
            },
            CrcParams {
                width: 32,
                poly: 0x04C1_1DB7,
                init: u32::MAX as u64,
                refin: false,
                refout: false,
                xorout: u32::MAX as u64,
            },
        ];
        for params in crcs {
            let crc = Crc::new(params).unwrap();
            for n in (0..=40).chain([63, 64, 65, 250, 300]) {
                let sliced = crc.checksum(&data[..n]);
                // In two parts, resumed from the running state.
                let cut = n / 3;
                let parts =
                    crc.finish(crc.update(crc.update(crc.start(), &data[..cut]), &data[cut..n]));
                assert_eq!(parts, sliced, "{params:?} over {n} bytes in two parts");
                assert_eq!(
                    sliced,
                    crc.checksum_bytewise(&data[..n]),
                    "{params:?} over {n} bytes"
                );
            }
        }
    }

    #[test]
    fn crc32_equals_the_byte_loop_at_every_length() {
        // The folded CRC-32 changes method with the length (carry-less folding from 64 or
        // 128 bytes, a table loop below and for the rest).
        let data: Vec<u8> = (0..600u32)
            .map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8)
            .collect();
        for n in 0..data.len() {
            assert_eq!(
                CRC32.checksum(&data[..n]),
                CRC32.checksum_bytewise(&data[..n]),
                "CRC-32 over {n} bytes"
            );
            let (a, b) = data[..n].split_at(n / 2);
            assert_eq!(
                CRC32.finish(CRC32.update(CRC32.update(CRC32.start(), a), b)),
                CRC32.checksum(&data[..n]),
                "CRC-32 over {n} bytes in two parts"
            );
        }
    }

    #[test]
    fn reflect_reverses_low_bits() {
        assert_eq!(reflect(0b0001, 4), 0b1000);
        assert_eq!(reflect(0x8005, 16), 0xA001);
        assert_eq!(reflect(0xFF00, 8), 0);
        assert_eq!(reflect(1, 64), 1 << 63);
        assert_eq!(reflect(5, 0), 0);
    }
}
