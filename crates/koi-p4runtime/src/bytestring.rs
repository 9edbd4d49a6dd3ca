//! P4Runtime bytestrings (spec "Bytestrings"): integers as big-endian byte strings.
//!
//! Received strings may be of any length: a `bit<W>` value is in range when, without its
//! leading zero bits, it has at most `W` bits (so zero-padded values such as p4lang's tutorial
//! controllers send, `\x00\x00\x00\x01` for a `bit<9>`, are accepted); an `int<W>` value when,
//! without its redundant sign bits, it has at most `W` bits. An empty string is never valid.
//! Both refusals are `OUT_OF_RANGE` for the callers. Produced strings are canonical: the
//! shortest that holds the value (at least one byte), which gives read-write symmetry.

use koi_ir::Bits;

/// Why a byte string is not a value of the expected width.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BadBytes {
    /// The string is empty.
    Empty,
    /// The value needs `needed` bits.
    TooWide { needed: u64 },
}

impl BadBytes {
    /// A message for a value of `what` expected to fit `width` bits.
    pub fn message(self, what: &str, width: u32) -> String {
        match self {
            BadBytes::Empty => format!("{what}: empty bytestring"),
            BadBytes::TooWide { needed } => {
                format!("{what}: a value of {needed} bits does not fit in {width} bits")
            }
        }
    }
}

/// Significant bits of a byte (0 for 0).
fn bit_len(b: u8) -> u64 {
    u64::from(8 - b.leading_zeros())
}

/// The unsigned value of `bytes` as a `bit<width>`.
pub fn uint(bytes: &[u8], width: u32) -> Result<Bits, BadBytes> {
    if bytes.is_empty() {
        return Err(BadBytes::Empty);
    }
    let start = bytes.iter().position(|b| *b != 0).unwrap_or(bytes.len());
    let s = &bytes[start..];
    let Some(first) = s.first() else {
        return Ok(Bits::zero(width));
    };
    let needed = (s.len() as u64 - 1) * 8 + bit_len(*first);
    if needed > u64::from(width) {
        return Err(BadBytes::TooWide { needed });
    }
    Ok(Bits::from_be_bytes(width, s))
}

/// The two's complement value of `bytes` as an `int<width>`.
pub fn int(bytes: &[u8], width: u32) -> Result<Bits, BadBytes> {
    if bytes.is_empty() {
        return Err(BadBytes::Empty);
    }
    // Drop sign-extension bytes: a 0x00 before a byte whose top bit is 0, a 0xff before one
    // whose top bit is 1.
    let mut start = 0;
    while start + 1 < bytes.len() {
        let (b, next) = (bytes[start], bytes[start + 1]);
        let redundant = (b == 0 && next & 0x80 == 0) || (b == 0xff && next & 0x80 != 0);
        if !redundant {
            break;
        }
        start += 1;
    }
    let s = &bytes[start..];
    let negative = s[0] & 0x80 != 0;
    let top = if negative { !s[0] } else { s[0] };
    let needed = if s.len() == 1 && top == 0 {
        1
    } else {
        (s.len() as u64 - 1) * 8 + bit_len(top) + 1
    };
    if needed > u64::from(width) {
        return Err(BadBytes::TooWide { needed });
    }
    let n = (s.len() * 8) as u32;
    let v = Bits::from_be_bytes(n, s);
    Ok(if n >= width {
        v.resize(width)
    } else {
        v.sext(width)
    })
}

/// The canonical (shortest) string of an unsigned value.
pub fn encode_uint(v: &Bits) -> Vec<u8> {
    let mut b = v.to_be_bytes();
    let lead = b.iter().position(|x| *x != 0).unwrap_or(b.len());
    let lead = lead.min(b.len().saturating_sub(1));
    b.drain(..lead);
    if b.is_empty() {
        b.push(0);
    }
    b
}

/// The canonical (shortest) string of a signed value (two's complement of its width).
pub fn encode_int(v: &Bits) -> Vec<u8> {
    let w = v.width();
    let full = w.div_ceil(8) * 8;
    let mut b = if full > w {
        v.sext(full).to_be_bytes()
    } else {
        v.to_be_bytes()
    };
    let mut lead = 0;
    while lead + 1 < b.len() {
        let (x, next) = (b[lead], b[lead + 1]);
        if (x == 0 && next & 0x80 == 0) || (x == 0xff && next & 0x80 != 0) {
            lead += 1;
        } else {
            break;
        }
    }
    b.drain(..lead);
    if b.is_empty() {
        b.push(0);
    }
    b
}

#[cfg(test)]
mod tests {
    use super::*;

    fn u(w: u32, v: u128) -> Bits {
        Bits::from_u128(w, v)
    }

    #[test]
    fn valid_encodings_of_the_spec_table() {
        assert_eq!(uint(b"\x63", 8), Ok(u(8, 99)));
        assert_eq!(uint(b"\x00\x63", 16), Ok(u(16, 99)));
        assert_eq!(uint(b"\x63", 16), Ok(u(16, 99)));
        assert_eq!(uint(b"\x30\x64", 16), Ok(u(16, 0x3064)));
        assert_eq!(uint(b"\x00\x30\x64", 16), Ok(u(16, 0x3064)));
        assert_eq!(uint(b"\x00\x63", 12), Ok(u(12, 99)));
        assert_eq!(uint(b"\x00\x00\x63", 12), Ok(u(12, 99)));
        assert_eq!(int(b"\x63", 8), Ok(u(8, 99)));
        assert_eq!(int(b"\x9d", 8), Ok(Bits::from_i128(8, -99)));
        assert_eq!(int(b"\xff\x9d", 8), Ok(Bits::from_i128(8, -99)));
        assert_eq!(int(b"\xfd\x1d", 12), Ok(Bits::from_i128(12, -739)));
        assert_eq!(int(b"\x00\x00", 16), Ok(u(16, 0)));
        assert_eq!(int(b"\x00", 16), Ok(u(16, 0)));
        assert_eq!(int(b"\xff", 1), Ok(Bits::from_i128(1, -1)));
    }

    #[test]
    fn invalid_encodings_of_the_spec_table() {
        assert_eq!(uint(b"\x01\x63", 8), Err(BadBytes::TooWide { needed: 9 }));
        assert_eq!(uint(b"", 8), Err(BadBytes::Empty));
        assert_eq!(
            uint(b"\x01\x00\x63", 16),
            Err(BadBytes::TooWide { needed: 17 })
        );
        assert_eq!(uint(b"\x10\x63", 12), Err(BadBytes::TooWide { needed: 13 }));
        assert_eq!(
            uint(b"\x01\x00\x63", 12),
            Err(BadBytes::TooWide { needed: 17 })
        );
        assert_eq!(
            uint(b"\x00\x40\x63", 12),
            Err(BadBytes::TooWide { needed: 15 })
        );
        assert_eq!(int(b"\x00\x9d", 8), Err(BadBytes::TooWide { needed: 9 }));
        assert_eq!(int(b"\x8d\x1d", 12), Err(BadBytes::TooWide { needed: 16 }));
        assert_eq!(int(b"", 16), Err(BadBytes::Empty));
    }

    #[test]
    fn canonical_encodings_are_shortest_and_round_trip() {
        assert_eq!(encode_uint(&u(16, 99)), b"\x63");
        assert_eq!(encode_uint(&u(12, 0)), b"\x00");
        assert_eq!(
            encode_uint(&u(48, 0x0a0000000001)),
            b"\x0a\x00\x00\x00\x00\x01"
        );
        assert_eq!(encode_int(&Bits::from_i128(8, -99)), b"\x9d");
        assert_eq!(encode_int(&Bits::from_i128(12, -739)), b"\xfd\x1d");
        assert_eq!(encode_int(&u(16, 0)), b"\x00");
        assert_eq!(encode_int(&u(16, 128)), b"\x00\x80");
        assert_eq!(encode_int(&Bits::from_i128(16, -128)), b"\x80");
        for w in [1u32, 7, 8, 9, 12, 16, 33, 64, 65, 128, 200] {
            for v in [0u128, 1, 5, 127, 128, 255, 256, u128::MAX] {
                let b = Bits::from_u128(w, v);
                assert_eq!(uint(&encode_uint(&b), w), Ok(b.clone()), "uint {w} {v}");
                assert_eq!(int(&encode_int(&b), w), Ok(b), "int {w} {v}");
            }
        }
        // A huge zero-padded string is still in range.
        let mut long = vec![0u8; 100_000];
        long.push(7);
        assert_eq!(uint(&long, 3), Ok(u(3, 7)));
    }
}
