//! Integer literals: `5`, `0x1F`, `0b1010_1010`, `0o17`, `0d99`, and width-prefixed forms such
//! as `8w5`, `16s0xFF` or `32w0d255`. Underscores are digit separators. Values are of arbitrary
//! precision.

use crate::ast::IntLit;
use num_bigint::BigUint;

/// Scans the integer literal at the start of `s` (which starts with a digit), like p4c's lexer:
/// the literal ends at the first character that cannot continue it. Returns the number of bytes
/// consumed and the literal, or an error message.
pub(super) fn scan(s: &[u8]) -> (usize, Result<IntLit, String>) {
    let lead = s.iter().take_while(|b| b.is_ascii_digit()).count();
    let after = s.get(lead).copied().unwrap_or(0);
    let width_digit = s.get(lead + 1).is_some_and(|b| b.is_ascii_digit());
    if (after == b'w' || after == b's') && width_digit {
        let width = std::str::from_utf8(s.get(..lead).unwrap_or(&[]))
            .ok()
            .and_then(|w| w.parse::<u32>().ok());
        let (len, value) = scan_value(s.get(lead + 1..).unwrap_or(&[]));
        let total = lead + 1 + len;
        let Some(width) = width else {
            return (total, Err("integer literal width is too large".into()));
        };
        let lit = value.map(|(value, radix)| IntLit {
            value,
            width: Some((after == b's', width)),
            negative: false,
            radix,
        });
        return (total, lit);
    }
    let (len, value) = scan_value(s);
    let lit = value.map(|(value, radix)| IntLit {
        value,
        width: None,
        negative: false,
        radix,
    });
    (len, lit)
}

/// Scans an unsized value: `0x..`, `0o..`, `0b..`, `0d..` or decimal digits, all with `_`.
fn scan_value(s: &[u8]) -> (usize, Result<(BigUint, u32), String>) {
    let radix = match (s.first(), s.get(1)) {
        (Some(b'0'), Some(b'x' | b'X')) => 16,
        (Some(b'0'), Some(b'o' | b'O')) => 8,
        (Some(b'0'), Some(b'b' | b'B')) => 2,
        (Some(b'0'), Some(b'd' | b'D')) => 10,
        _ => 0,
    };
    let (skip, radix) = if radix == 0 { (0, 10) } else { (2, radix) };
    let body = s.get(skip..).unwrap_or(&[]);
    let len = body
        .iter()
        .take_while(|b| **b == b'_' || (**b as char).is_digit(radix))
        .count();
    let digits: Vec<u8> = body
        .iter()
        .take(len)
        .copied()
        .filter(|b| *b != b'_')
        .collect();
    if digits.is_empty() {
        let what = String::from_utf8_lossy(s.get(..skip + len).unwrap_or(&[])).into_owned();
        return (
            skip + len,
            Err(format!("malformed integer literal '{what}'")),
        );
    }
    match BigUint::parse_bytes(&digits, radix) {
        Some(v) => (skip + len, Ok((v, radix))),
        None => (skip + len, Err("malformed integer literal".into())),
    }
}

/// Parses a whole string as one integer literal (used by tests and tools).
pub fn parse_int(text: &str) -> Option<IntLit> {
    let bytes = text.as_bytes();
    if !bytes.first().is_some_and(|b| b.is_ascii_digit()) {
        return None;
    }
    match scan(bytes) {
        (len, Ok(lit)) if len == bytes.len() => Some(lit),
        _ => None,
    }
}
