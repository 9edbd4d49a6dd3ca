//! Values between the controller's representation and the data plane's: plain bytestrings,
//! and `@p4runtime_translation` types (spec "User-defined types", "PSA Metadata Translation").
//!
//! - A plain `bit<W>` value is a bytestring of at most `W` significant bits.
//! - `@p4runtime_translation(uri, bit<S>)` on `type bit<W> T`: the controller writes S-bit
//!   values and koi translates them **1:1** (koi has no out-of-band translation table such as
//!   a port map): the controller value is the data-plane value, so it must fit `W` bits as
//!   well as `S` (`OUT_OF_RANGE` otherwise), and reads give the data-plane value back.
//! - `@p4runtime_translation(uri, string)`: each distinct string gets the next unused
//!   data-plane value of its type (0, 1, 2, ... in order of first use), kept for the life of
//!   the [`crate::Target`] (a rolled-back update does not take it back, so the mapping stays
//!   stable). Reads show the string back; a data-plane value no string was given for (from a
//!   program's own entries, or written by `koi ctl`) reads as its decimal digits. A lookup
//!   that must not allocate (a read's match key, a packet-out) refuses or misses an unknown
//!   string.
//!
//! For match kinds other than exact and optional, a translated field must be matched "de
//! facto exactly" (spec "Translation of Match Fields": full mask, full prefix, one-value
//! range), see module `matches`.

use crate::bytestring::{self, BadBytes};
use crate::error::{Result, exhausted, invalid, out_of_range};
use koi_ir::Bits;
use std::collections::HashMap;

/// How the controller represents a value.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Sdn {
    /// As the data plane: a bytestring of the P4 width.
    Plain,
    /// A translated type with a `bit<S>` controller type.
    Bits(u32),
    /// A translated type with a `string` controller type, named by the type's name.
    Str(String),
}

/// A value's P4 width and controller representation.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Codec {
    /// The data plane's width.
    pub width: u32,
    pub sdn: Sdn,
}

/// The string translations given out so far, per translated type.
#[derive(Clone, Debug, Default)]
pub struct Strings {
    types: HashMap<String, StringMap>,
}

#[derive(Clone, Debug, Default)]
struct StringMap {
    to_dp: HashMap<String, Bits>,
    from_dp: HashMap<Bits, String>,
    next: u128,
}

impl Strings {
    fn known(&self, ty: &str, s: &str) -> Option<&Bits> {
        self.types.get(ty)?.to_dp.get(s)
    }

    fn allocate(&mut self, ty: &str, s: &str, width: u32) -> Result<Bits> {
        let map = self.types.entry(ty.to_string()).or_default();
        if let Some(v) = map.to_dp.get(s) {
            return Ok(v.clone());
        }
        let fits = width >= 128 || map.next < (1u128 << width);
        if !fits || map.next == u128::MAX {
            return Err(exhausted(format!(
                "type {ty}: every {width}-bit value has a string already"
            )));
        }
        let v = Bits::from_u128(width, map.next);
        map.next += 1;
        map.to_dp.insert(s.to_string(), v.clone());
        map.from_dp.insert(v.clone(), s.to_string());
        Ok(v)
    }

    fn string_of(&self, ty: &str, v: &Bits) -> Option<&str> {
        self.types.get(ty)?.from_dp.get(v).map(|s| s.as_str())
    }
}

fn bad(e: BadBytes, what: &dyn Fn() -> String, width: u32) -> crate::error::P4Error {
    out_of_range(e.message(&what(), width))
}

impl Codec {
    /// A plain `bit<width>` value.
    pub fn plain(width: u32) -> Codec {
        Codec {
            width,
            sdn: Sdn::Plain,
        }
    }

    /// The controller's width (P4Info's `bitwidth`; 0 for a string).
    pub fn sdn_width(&self) -> u32 {
        match self.sdn {
            Sdn::Plain => self.width,
            Sdn::Bits(s) => s,
            Sdn::Str(_) => 0,
        }
    }

    /// Whether the value is translated.
    pub fn translated(&self) -> bool {
        self.sdn != Sdn::Plain
    }

    fn numeric(&self, bytes: &[u8], what: &dyn Fn() -> String) -> Result<Bits> {
        match self.sdn {
            Sdn::Bits(s) => {
                let v = bytestring::uint(bytes, s).map_err(|e| bad(e, what, s))?;
                bytestring::uint(&bytestring::encode_uint(&v), self.width).map_err(|e| {
                    out_of_range(format!(
                        "{} (translated 1:1 to the data plane's {} bits)",
                        e.message(&what(), self.width),
                        self.width
                    ))
                })
            }
            _ => bytestring::uint(bytes, self.width).map_err(|e| bad(e, what, self.width)),
        }
    }

    fn text<'b>(bytes: &'b [u8], what: &dyn Fn() -> String) -> Result<&'b str> {
        match std::str::from_utf8(bytes) {
            Ok("") => Err(invalid(format!("{}: empty string", what()))),
            Ok(s) => Ok(s),
            Err(_) => Err(invalid(format!("{}: not a UTF-8 string", what()))),
        }
    }

    /// The data-plane value of a controller value (allocating one for a new string).
    pub fn decode(
        &self,
        bytes: &[u8],
        strings: &mut Strings,
        what: &dyn Fn() -> String,
    ) -> Result<Bits> {
        match &self.sdn {
            Sdn::Str(ty) => strings.allocate(ty, Codec::text(bytes, what)?, self.width),
            _ => self.numeric(bytes, what),
        }
    }

    /// As [`Codec::decode`] without allocating: `None` for a string no value was given for.
    pub fn lookup(
        &self,
        bytes: &[u8],
        strings: &Strings,
        what: &dyn Fn() -> String,
    ) -> Result<Option<Bits>> {
        match &self.sdn {
            Sdn::Str(ty) => Ok(strings.known(ty, Codec::text(bytes, what)?).cloned()),
            _ => self.numeric(bytes, what).map(Some),
        }
    }

    /// The controller's canonical representation of a data-plane value.
    pub fn encode(&self, v: &Bits, strings: &Strings) -> Vec<u8> {
        match &self.sdn {
            Sdn::Str(ty) => match strings.string_of(ty, v) {
                Some(s) => s.as_bytes().to_vec(),
                None => v
                    .to_u128()
                    .map_or_else(|| format!("{v:#x}"), |x| x.to_string())
                    .into_bytes(),
            },
            _ => bytestring::encode_uint(v),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tonic::Code;

    fn what() -> String {
        "param p".into()
    }

    #[test]
    fn bit_translations_are_one_to_one_and_range_checked() {
        let c = Codec {
            width: 9,
            sdn: Sdn::Bits(32),
        };
        let mut s = Strings::default();
        assert_eq!(
            c.decode(b"\x00\x00\x01\x05", &mut s, &what),
            Ok(Bits::from_u64(9, 0x105))
        );
        assert_eq!(c.encode(&Bits::from_u64(9, 0x105), &s), b"\x01\x05");
        let e = c.decode(b"\x00\x00\x02\x00", &mut s, &what).unwrap_err();
        assert_eq!(e.code, Code::OutOfRange);
        let e = c
            .decode(b"\x01\x00\x00\x00\x00", &mut s, &what)
            .unwrap_err();
        assert_eq!(e.code, Code::OutOfRange);
        assert_eq!(c.sdn_width(), 32);
    }

    #[test]
    fn strings_get_stable_values() {
        let c = Codec {
            width: 2,
            sdn: Sdn::Str("vrf_t".into()),
        };
        let mut s = Strings::default();
        assert_eq!(c.lookup(b"red", &s, &what), Ok(None));
        let red = c.decode(b"red", &mut s, &what).unwrap();
        let blue = c.decode(b"blue", &mut s, &what).unwrap();
        assert_eq!((red.to_u64(), blue.to_u64()), (Some(0), Some(1)));
        assert_eq!(c.decode(b"red", &mut s, &what), Ok(red.clone()));
        assert_eq!(c.lookup(b"red", &s, &what), Ok(Some(red.clone())));
        assert_eq!(c.encode(&red, &s), b"red");
        assert_eq!(c.encode(&Bits::from_u64(2, 3), &s), b"3");
        c.decode(b"c", &mut s, &what).unwrap();
        c.decode(b"d", &mut s, &what).unwrap();
        let e = c.decode(b"e", &mut s, &what).unwrap_err();
        assert_eq!(e.code, Code::ResourceExhausted);
        let e = c.decode(b"", &mut s, &what).unwrap_err();
        assert_eq!(e.code, Code::InvalidArgument);
        let e = c.decode(b"\xff", &mut s, &what).unwrap_err();
        assert_eq!(e.code, Code::InvalidArgument);
    }
}
