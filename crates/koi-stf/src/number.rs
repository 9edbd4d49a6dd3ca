//! Numbers of STF table entries as written: decimal, `0x` hex or `0b` binary, where hex and
//! binary digits may be `*` (don't care). Their meaning depends on the key: an exact value, a
//! ternary value and mask (mask from the digits written), or an LPM prefix (length from the
//! digits written), converted to big-endian bytes of a given bit width.

use std::fmt;

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Number {
    /// 2, 10 or 16.
    radix: u32,
    /// The digits without prefix or `_`, possibly with `*`.
    digits: String,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum NumberError {
    /// The value needs more than the key's width.
    TooWide { text: String, width: u32 },
    /// `*` digits where only a plain value is allowed.
    Wildcard { text: String },
    /// A decimal number where the match kind needs hex or binary digits.
    Decimal { text: String },
}

impl fmt::Display for NumberError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            NumberError::TooWide { text, width } => {
                write!(f, "value {text} does not fit in {width} bits")
            }
            NumberError::Wildcard { text } => {
                write!(
                    f,
                    "value {text} has '*' digits where a plain value is needed"
                )
            }
            NumberError::Decimal { text } => write!(
                f,
                "value {text} is decimal; ternary and lpm values are written in hex or binary"
            ),
        }
    }
}

impl Number {
    /// Lexes a number at the start of `s`; returns it and the bytes consumed.
    pub(crate) fn lex(s: &str) -> Result<(Number, usize), String> {
        let (radix, start) = match s.get(..2) {
            Some("0x") | Some("0X") => (16, 2),
            Some("0b") | Some("0B") => (2, 2),
            _ => (10, 0),
        };
        let body = &s[start..];
        let ok = |c: char| match radix {
            16 => c.is_ascii_hexdigit() || c == '*' || c == '_',
            2 => c == '0' || c == '1' || c == '*' || c == '_',
            _ => c.is_ascii_digit(),
        };
        let len = body.find(|c: char| !ok(c)).unwrap_or(body.len());
        let digits: String = body[..len].chars().filter(|&c| c != '_').collect();
        if digits.is_empty() {
            return Err(format!("malformed number '{}'", &s[..start + len]));
        }
        if let Some(c) = body[len..].chars().next()
            && (c.is_ascii_alphanumeric() || c == '_')
        {
            return Err(format!("malformed number '{}{c}'", &s[..start + len]));
        }
        Ok((Number { radix, digits }, start + len))
    }

    /// A plain decimal number.
    pub fn decimal(v: u64) -> Number {
        Number {
            radix: 10,
            digits: v.to_string(),
        }
    }

    pub fn is_decimal(&self) -> bool {
        self.radix == 10
    }

    pub fn digits(&self) -> &str {
        &self.digits
    }

    /// The number as written (with its `0x`/`0b` prefix).
    pub fn text(&self) -> String {
        match self.radix {
            16 => format!("0x{}", self.digits),
            2 => format!("0b{}", self.digits),
            _ => self.digits.clone(),
        }
    }

    pub fn has_wildcards(&self) -> bool {
        self.digits.contains('*')
    }

    /// The value as big-endian bytes of `ceil(width / 8)` bytes; errors if it does not fit or
    /// has `*` digits.
    pub fn exact(&self, width: u32) -> Result<Vec<u8>, NumberError> {
        if self.has_wildcards() {
            return Err(NumberError::Wildcard { text: self.text() });
        }
        let v = self.value_bytes(width, |c| c)?;
        Ok(v)
    }

    /// Value and mask of a ternary key: `*` digits and digits not written are don't-care.
    pub fn ternary(&self, width: u32) -> Result<(Vec<u8>, Vec<u8>), NumberError> {
        if self.is_decimal() {
            return Err(NumberError::Decimal { text: self.text() });
        }
        let value = self.value_bytes(width, |c| if c == '*' { '0' } else { c })?;
        let full = if self.radix == 16 { 'f' } else { '1' };
        let mask_digits: String = self
            .digits
            .chars()
            .map(|c| if c == '*' { '0' } else { full })
            .collect();
        let mask = Number {
            radix: self.radix,
            digits: mask_digits,
        };
        let mask = mask.truncated_bytes(width);
        Ok((value, mask))
    }

    /// Value and prefix length of an LPM key: the prefix is the number of digits written that
    /// are not `*`, times 4 (hex) or 1 (binary), at most `width`.
    pub fn lpm(&self, width: u32) -> Result<(Vec<u8>, u32), NumberError> {
        if self.is_decimal() {
            return Err(NumberError::Decimal { text: self.text() });
        }
        let value = self.value_bytes(width, |c| if c == '*' { '0' } else { c })?;
        let per = if self.radix == 16 { 4 } else { 1 };
        let known = self.digits.chars().filter(|&c| c != '*').count() as u32;
        Ok((value, (known * per).min(width)))
    }

    /// The value with `*` digits mapped by `map`, checked against `width`.
    fn value_bytes(&self, width: u32, map: impl Fn(char) -> char) -> Result<Vec<u8>, NumberError> {
        let digits: String = self.digits.chars().map(map).collect();
        let n = Number {
            radix: self.radix,
            digits,
        };
        let full = n.to_bytes_unbounded();
        if significant_bits(&full) > width as usize {
            return Err(NumberError::TooWide {
                text: self.text(),
                width,
            });
        }
        Ok(fit(&full, width))
    }

    /// The value cut to its low `width` bits.
    fn truncated_bytes(&self, width: u32) -> Vec<u8> {
        let full = self.to_bytes_unbounded();
        let mut v = fit(&full, width);
        let extra = (v.len() as u32 * 8).saturating_sub(width);
        if let Some(first) = v.first_mut()
            && extra > 0
        {
            *first &= 0xffu8 >> extra;
        }
        v
    }

    /// Big-endian bytes of the value (no `*` digits expected), minimal length >= 1.
    fn to_bytes_unbounded(&self) -> Vec<u8> {
        koi_control::value::digits_to_bytes(&self.digits, self.radix).unwrap_or_else(|| vec![0])
    }
}

fn significant_bits(be: &[u8]) -> usize {
    for (i, b) in be.iter().enumerate() {
        if *b != 0 {
            return (be.len() - i) * 8 - b.leading_zeros() as usize;
        }
    }
    0
}

/// Big-endian `be` resized to `ceil(width/8)` bytes (dropping high bytes, padding with zeros).
fn fit(be: &[u8], width: u32) -> Vec<u8> {
    let n = width.div_ceil(8) as usize;
    let mut out = vec![0u8; n];
    for (i, b) in be.iter().rev().take(n).enumerate() {
        out[n - 1 - i] = *b;
    }
    out
}
