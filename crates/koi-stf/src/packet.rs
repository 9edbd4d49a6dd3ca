//! `packet` and `expect` lines, and the comparison of an expected packet with a received one
//! (p4c's `compare_pkt`: nibble by nibble, `*` matches any nibble, a prefix match unless the
//! expectation ends in `$`).

use crate::Stmt;
use std::fmt;

/// An expected packet: one entry per nibble (`None` for `*`), and whether the length must be
/// exact (`$`). An `expect PORT` with no data matches any one packet.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Expected {
    pub nibbles: Vec<Option<u8>>,
    pub exact_len: bool,
    /// True for `expect PORT` with no data at all.
    pub any: bool,
}

/// Why a received packet does not match its expectation.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Mismatch {
    /// The received packet is shorter than the expectation (lengths in nibbles/2 = bytes).
    TooShort { expected: usize, got: usize },
    /// The expectation ends in `$` and the packet is longer.
    TooLong { expected: usize, got: usize },
    /// First differing nibble: byte offset and the nibble values.
    Differs {
        byte: usize,
        expected: String,
        got: String,
    },
}

impl fmt::Display for Mismatch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Mismatch::TooShort { expected, got } => {
                write!(f, "packet too short: expected {expected} bytes, got {got}")
            }
            Mismatch::TooLong { expected, got } => {
                write!(
                    f,
                    "packet too long: expected exactly {expected} bytes, got {got}"
                )
            }
            Mismatch::Differs {
                byte,
                expected,
                got,
            } => write!(f, "byte {byte} differs: expected {expected}, got {got}"),
        }
    }
}

impl Expected {
    /// Compares a received packet with this expectation.
    pub fn compare(&self, got: &[u8]) -> Result<(), Mismatch> {
        if self.any {
            return Ok(());
        }
        let got_nibbles = got.len() * 2;
        if got_nibbles < self.nibbles.len() {
            return Err(Mismatch::TooShort {
                expected: self.nibbles.len().div_ceil(2),
                got: got.len(),
            });
        }
        if self.exact_len && got_nibbles > self.nibbles.len() {
            return Err(Mismatch::TooLong {
                expected: self.nibbles.len().div_ceil(2),
                got: got.len(),
            });
        }
        for (i, want) in self.nibbles.iter().enumerate() {
            let Some(want) = want else { continue };
            let byte = got[i / 2];
            let have = if i % 2 == 0 { byte >> 4 } else { byte & 0xf };
            if have != *want {
                let start = i / 2 * 2;
                return Err(Mismatch::Differs {
                    byte: i / 2,
                    expected: self.render_byte(start),
                    got: format!("{byte:02X}"),
                });
            }
        }
        Ok(())
    }

    fn render_byte(&self, nibble: usize) -> String {
        (nibble..nibble + 2)
            .map(|i| match self.nibbles.get(i) {
                Some(Some(n)) => char::from_digit(*n as u32, 16)
                    .unwrap_or('?')
                    .to_ascii_uppercase(),
                Some(None) => '*',
                None => ' ',
            })
            .collect::<String>()
            .trim_end()
            .to_string()
    }
}

impl fmt::Display for Expected {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.any {
            return f.write_str("<any packet>");
        }
        for n in &self.nibbles {
            match n {
                Some(v) => write!(f, "{v:X}")?,
                None => f.write_str("*")?,
            }
        }
        if self.exact_len {
            f.write_str("$")?;
        }
        Ok(())
    }
}

/// Splits the text after `packet`/`expect` into the port and the data tokens.
fn port_and_data(rest: &str) -> Result<(u64, &str), String> {
    let rest = rest.trim_start();
    let len = rest
        .find(|c: char| !c.is_ascii_alphanumeric())
        .unwrap_or(rest.len());
    let (port, data) = rest.split_at(len);
    if port.is_empty() {
        return Err("expected a port number".into());
    }
    let port = port
        .parse::<u64>()
        .map_err(|_| format!("invalid port '{port}'"))?;
    Ok((port, data))
}

pub(crate) fn parse_packet(rest: &str) -> Result<Stmt, String> {
    let (port, data) = port_and_data(rest)?;
    let mut nibbles = Vec::new();
    for c in data.chars().filter(|c| !c.is_whitespace()) {
        match c.to_digit(16) {
            Some(d) => nibbles.push(d as u8),
            None => return Err(format!("invalid packet data character '{c}'")),
        }
    }
    if nibbles.len() % 2 != 0 {
        return Err(format!(
            "packet data has an odd number of hex digits ({})",
            nibbles.len()
        ));
    }
    let data = nibbles.chunks(2).map(|p| (p[0] << 4) | p[1]).collect();
    Ok(Stmt::Packet { port, data })
}

pub(crate) fn parse_expect(rest: &str) -> Result<Stmt, String> {
    let (port, data) = port_and_data(rest)?;
    let mut nibbles = Vec::new();
    let mut exact_len = false;
    let mut any = true;
    for c in data.chars().filter(|c| !c.is_whitespace()) {
        if exact_len {
            return Err("'$' must be the last token of an expect line".into());
        }
        any = false;
        match c {
            '*' => nibbles.push(None),
            '$' => exact_len = true,
            _ => match c.to_digit(16) {
                Some(d) => nibbles.push(Some(d as u8)),
                None => return Err(format!("invalid expect data character '{c}'")),
            },
        }
    }
    Ok(Stmt::Expect {
        port,
        expected: Expected {
            nibbles,
            exact_len,
            any,
        },
    })
}
