//! Numbers and match keys as simple_switch_CLI writes them, turned into big-endian bytes of a
//! key's or parameter's width: decimal, `0x` hex, IPv4 `10.1.2.3` (32 bits), IPv6
//! `2001:db8::1` (128 bits), MAC `00:12:34:56:78:9a` (48 bits); ternary `v&&&m`, LPM `v/len`,
//! range `lo->hi`.

use std::fmt;

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ValueError {
    Malformed(String),
    TooWide { text: String, width: u32 },
    BadPrefix { text: String, width: u32 },
}

impl fmt::Display for ValueError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ValueError::Malformed(t) => write!(f, "'{t}' is not a number"),
            ValueError::TooWide { text, width } => {
                write!(f, "'{text}' does not fit in {width} bits")
            }
            ValueError::BadPrefix { text, width } => {
                write!(
                    f,
                    "'{text}': prefix length must be a decimal number from 0 to {width}"
                )
            }
        }
    }
}

/// A parsed key of one match kind, as bytes of the key's width.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum KeyValue {
    Exact(Vec<u8>),
    Ternary { value: Vec<u8>, mask: Vec<u8> },
    Lpm { value: Vec<u8>, prefix_len: u32 },
    Range { lo: Vec<u8>, hi: Vec<u8> },
}

/// The match kinds the CLI knows (`optional` is written like `ternary`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MatchKind {
    Exact,
    Ternary,
    Lpm,
    Range,
    Optional,
}

/// Parses one number in any of the CLI's forms into `ceil(width/8)` big-endian bytes.
pub fn parse_value(text: &str, width: u32) -> Result<Vec<u8>, ValueError> {
    let full = parse_unbounded(text)?;
    fit(&full, width).ok_or_else(|| ValueError::TooWide {
        text: text.to_string(),
        width,
    })
}

/// Parses a match key of the given kind.
pub fn parse_key(text: &str, kind: MatchKind, width: u32) -> Result<KeyValue, ValueError> {
    match kind {
        MatchKind::Exact => Ok(KeyValue::Exact(parse_value(text, width)?)),
        MatchKind::Ternary | MatchKind::Optional => {
            let (v, m) = text
                .split_once("&&&")
                .ok_or_else(|| ValueError::Malformed(format!("{text} (expected VALUE&&&MASK)")))?;
            Ok(KeyValue::Ternary {
                value: parse_value(v, width)?,
                mask: parse_value(m, width)?,
            })
        }
        MatchKind::Lpm => {
            let (v, l) = text
                .split_once('/')
                .ok_or_else(|| ValueError::Malformed(format!("{text} (expected VALUE/LENGTH)")))?;
            let bad = || ValueError::BadPrefix {
                text: text.to_string(),
                width,
            };
            let prefix_len: u32 = l.parse().map_err(|_| bad())?;
            if prefix_len > width {
                return Err(bad());
            }
            Ok(KeyValue::Lpm {
                value: parse_value(v, width)?,
                prefix_len,
            })
        }
        MatchKind::Range => {
            let (lo, hi) = text
                .split_once("->")
                .ok_or_else(|| ValueError::Malformed(format!("{text} (expected LOW->HIGH)")))?;
            Ok(KeyValue::Range {
                lo: parse_value(lo, width)?,
                hi: parse_value(hi, width)?,
            })
        }
    }
}

/// Big-endian bytes of any CLI number form, minimal length.
fn parse_unbounded(text: &str) -> Result<Vec<u8>, ValueError> {
    let bad = || ValueError::Malformed(text.to_string());
    if let Some(hex) = text.strip_prefix("0x").or_else(|| text.strip_prefix("0X")) {
        return digits_to_bytes(hex, 16).ok_or_else(bad);
    }
    if text.contains(':') {
        if let Some(mac) = parse_mac(text) {
            return Ok(mac.to_vec());
        }
        return text
            .parse::<std::net::Ipv6Addr>()
            .map(|a| a.octets().to_vec())
            .map_err(|_| bad());
    }
    if text.contains('.') {
        return text
            .parse::<std::net::Ipv4Addr>()
            .map(|a| a.octets().to_vec())
            .map_err(|_| bad());
    }
    digits_to_bytes(text, 10).ok_or_else(bad)
}

fn parse_mac(text: &str) -> Option<[u8; 6]> {
    let parts: Vec<&str> = text.split(':').collect();
    if parts.len() != 6 {
        return None;
    }
    let mut out = [0u8; 6];
    for (o, p) in out.iter_mut().zip(parts) {
        if p.len() != 2 {
            return None;
        }
        *o = u8::from_str_radix(p, 16).ok()?;
    }
    Some(out)
}

/// Big-endian bytes (minimal length, at least one) of a number written with `digits` in
/// `radix`; `None` when a digit is not one of that radix or there are none.
pub fn digits_to_bytes(digits: &str, radix: u32) -> Option<Vec<u8>> {
    if digits.is_empty() {
        return None;
    }
    let mut acc: Vec<u8> = vec![0]; // little endian
    for c in digits.chars() {
        let d = c.to_digit(radix)?;
        let mut carry = d;
        for b in acc.iter_mut() {
            let v = (*b as u32) * radix + carry;
            *b = (v & 0xff) as u8;
            carry = v >> 8;
        }
        while carry > 0 {
            acc.push((carry & 0xff) as u8);
            carry >>= 8;
        }
    }
    acc.reverse();
    Some(acc)
}

/// `be` as exactly `ceil(width/8)` bytes, or `None` when its value needs more than `width` bits.
fn fit(be: &[u8], width: u32) -> Option<Vec<u8>> {
    let first = be.iter().position(|b| *b != 0).unwrap_or(be.len());
    let sig = &be[first..];
    let bits = match sig.first() {
        Some(b) => sig.len() * 8 - b.leading_zeros() as usize,
        None => 0,
    };
    if bits > width as usize {
        return None;
    }
    let n = width.div_ceil(8) as usize;
    let mut out = vec![0u8; n];
    out[n - sig.len()..].copy_from_slice(sig);
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn number_forms() {
        assert_eq!(parse_value("10", 9).unwrap(), vec![0, 10]);
        assert_eq!(parse_value("0x0800", 16).unwrap(), vec![8, 0]);
        assert_eq!(parse_value("10.1.2.3", 32).unwrap(), vec![10, 1, 2, 3]);
        assert_eq!(
            parse_value("00:12:34:56:78:9a", 48).unwrap(),
            vec![0, 0x12, 0x34, 0x56, 0x78, 0x9a]
        );
        let v6 = parse_value("2001:db8::1", 128).unwrap();
        assert_eq!(v6.len(), 16);
        assert_eq!((v6[0], v6[1], v6[15]), (0x20, 0x01, 1));
        assert!(matches!(
            parse_value("512", 9),
            Err(ValueError::TooWide { .. })
        ));
        assert!(matches!(
            parse_value("1x", 8),
            Err(ValueError::Malformed(_))
        ));
        assert!(matches!(parse_value("", 8), Err(ValueError::Malformed(_))));
    }

    #[test]
    fn key_forms() {
        assert_eq!(
            parse_key("10.0.0.0/8", MatchKind::Lpm, 32).unwrap(),
            KeyValue::Lpm {
                value: vec![10, 0, 0, 0],
                prefix_len: 8
            }
        );
        assert!(parse_key("10.0.0.0/33", MatchKind::Lpm, 32).is_err());
        assert_eq!(
            parse_key("0x25&&&0xf0", MatchKind::Ternary, 8).unwrap(),
            KeyValue::Ternary {
                value: vec![0x25],
                mask: vec![0xf0]
            }
        );
        assert_eq!(
            parse_key("1->5", MatchKind::Range, 8).unwrap(),
            KeyValue::Range {
                lo: vec![1],
                hi: vec![5]
            }
        );
        assert!(parse_key("7", MatchKind::Ternary, 8).is_err());
    }
}
