//! User-defined extern functions implemented in C ("native" functions): their declarations
//! with the C types of their parameters, the C memory layout of those types, and the handle
//! of the loaded code that implements them ([`NativeLib`], provided by `koi-native`).
//!
//! The ABI follows what p4c's eBPF and uBPF backends generate for an extern function call
//! (docs/externs.md): `bit<N>`/`int<N>` up to 64 bits as the smallest fitting `uintN_t`/
//! `intN_t` (host byte order), wider ones as a big-endian byte array `u8[ceil(N/8)]` (which
//! C passes as a pointer to its first byte), `bool` as `u8`, structs and headers as the C
//! struct of their fields in order (a header ends with `u8 ebpf_valid`); `in` parameters by
//! value, `out` and `inout` ones by pointer; the result by value.

use std::fmt;
use std::sync::Arc;

/// The C type of a P4 value passed to a native function.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CType {
    /// `bool`: `u8` (0 or 1).
    Bool,
    /// `bit<N>` / `int<N>`: a scalar up to 64 bits, a big-endian byte array above.
    Bits { width: u32, signed: bool },
    /// A struct (`header: false`) or header (`header: true`: `u8 ebpf_valid` follows the
    /// fields), named as in the P4 program.
    Struct {
        name: String,
        header: bool,
        fields: Vec<(String, CType)>,
    },
}

/// One scalar piece of a value in its C layout, in P4 field order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Leaf {
    /// Byte offset in the value.
    pub offset: usize,
    pub kind: LeafKind,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LeafKind {
    /// A `bool` as one byte.
    Bool,
    /// A scalar of `bytes` (1, 2, 4 or 8) bytes in host byte order holding `width` bits.
    Int {
        bytes: usize,
        width: u32,
        signed: bool,
    },
    /// `width` bits as a big-endian byte array of `width.div_ceil(8)` bytes.
    Wide { width: u32 },
    /// A header's `ebpf_valid` byte.
    Valid,
}

impl CType {
    /// `(size, alignment)` in bytes under the C ABI of x86-64 and AArch64 (natural alignment).
    pub fn size_align(&self) -> (usize, usize) {
        match self {
            CType::Bool => (1, 1),
            CType::Bits { width, .. } => match scalar_bytes(*width) {
                Some(b) => (b, b),
                None => (width.div_ceil(8) as usize, 1),
            },
            CType::Struct { header, fields, .. } => {
                let (mut size, mut align) = (0usize, 1usize);
                for (_, f) in fields {
                    let (s, a) = f.size_align();
                    size = size.next_multiple_of(a) + s;
                    align = align.max(a);
                }
                if *header {
                    size += 1;
                }
                (size.next_multiple_of(align), align)
            }
        }
    }

    /// The scalar pieces of the type with their offsets, in field order (a header's validity
    /// last).
    pub fn leaves(&self) -> Vec<Leaf> {
        let mut out = Vec::new();
        self.leaves_at(0, &mut out);
        out
    }

    fn leaves_at(&self, base: usize, out: &mut Vec<Leaf>) {
        match self {
            CType::Bool => out.push(Leaf {
                offset: base,
                kind: LeafKind::Bool,
            }),
            CType::Bits { width, signed } => out.push(Leaf {
                offset: base,
                kind: match scalar_bytes(*width) {
                    Some(bytes) => LeafKind::Int {
                        bytes,
                        width: *width,
                        signed: *signed,
                    },
                    None => LeafKind::Wide { width: *width },
                },
            }),
            CType::Struct { header, fields, .. } => {
                let mut at = 0usize;
                for (_, f) in fields {
                    let (s, a) = f.size_align();
                    at = at.next_multiple_of(a);
                    f.leaves_at(base + at, out);
                    at += s;
                }
                if *header {
                    out.push(Leaf {
                        offset: base + at,
                        kind: LeafKind::Valid,
                    });
                }
            }
        }
    }

    /// Whether C passes an `in` value of this type as a pointer (an array: a wide `bit<N>`).
    pub fn is_array(&self) -> bool {
        matches!(self, CType::Bits { width, .. } if scalar_bytes(*width).is_none())
    }

    /// The C spelling of the type (a wide `bit<N>` as `u8`, its element type).
    pub fn c_name(&self) -> String {
        match self {
            CType::Bool => "u8".into(),
            CType::Bits { width, signed } => match (scalar_bytes(*width), signed) {
                (Some(b), false) => format!("u{}", b * 8),
                (Some(b), true) => format!("i{}", b * 8),
                (None, _) => "u8".into(),
            },
            CType::Struct { name, .. } => format!("struct {name}"),
        }
    }
}

/// The bytes of the scalar holding `width` bits, `None` above 64 (a byte array).
pub fn scalar_bytes(width: u32) -> Option<usize> {
    match width {
        0..=8 => Some(1),
        9..=16 => Some(2),
        17..=32 => Some(4),
        33..=64 => Some(8),
        _ => None,
    }
}

/// A parameter direction.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NativeDir {
    In,
    Out,
    InOut,
}

impl NativeDir {
    pub fn reads(self) -> bool {
        self != NativeDir::Out
    }

    pub fn writes(self) -> bool {
        self != NativeDir::In
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NativeParam {
    pub name: String,
    pub dir: NativeDir,
    pub ty: CType,
}

/// The declaration of an extern function the program calls and the user implements.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NativeFn {
    pub name: String,
    pub params: Vec<NativeParam>,
    /// The result (`None`: `void`); a scalar type.
    pub ret: Option<CType>,
    /// Declared `@pure`: its results depend only on its arguments and it has no effect
    /// beyond its `out` parameters, so the cached datapath may cache packets that call it.
    pub pure: bool,
}

/// Loaded code implementing a pipeline's native functions.
pub trait NativeLib: Send + Sync {
    /// Calls function `func` (an index into [`Natives::fns`]) with one buffer per parameter
    /// in its C layout (read back for `out`/`inout` ones) and a buffer for the result.
    fn call(&self, func: usize, args: &mut [Vec<u8>], ret: &mut [u8]) -> Result<(), String>;
    /// Where the code came from (for messages).
    fn origin(&self) -> &str;
}

/// A pipeline's native functions and, once bound, their implementation.
#[derive(Clone, Default)]
pub struct Natives {
    pub fns: Vec<NativeFn>,
    pub lib: Option<Arc<dyn NativeLib>>,
}

impl Natives {
    pub fn index(&self, name: &str) -> Option<usize> {
        self.fns.iter().position(|f| f.name == name)
    }
}

impl fmt::Debug for Natives {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Natives")
            .field("fns", &self.fns)
            .field("lib", &self.lib.as_ref().map(|l| l.origin().to_string()))
            .finish()
    }
}

/// Two pipelines are equal whatever code implements their native functions.
impl PartialEq for Natives {
    fn eq(&self, other: &Natives) -> bool {
        self.fns == other.fns
    }
}

impl Eq for Natives {}

#[cfg(test)]
mod tests {
    use super::*;

    fn bits(width: u32) -> CType {
        CType::Bits {
            width,
            signed: false,
        }
    }

    #[test]
    fn header_layout_is_c_layout_with_valid_byte_last() {
        // struct { u8 a; u16 b; u32 c; u8 d[9]; u64 e; u8 ebpf_valid; }
        let h = CType::Struct {
            name: "h".into(),
            header: true,
            fields: vec![
                ("a".into(), bits(4)),
                ("b".into(), bits(16)),
                ("c".into(), bits(20)),
                ("d".into(), bits(72)),
                ("e".into(), bits(48)),
            ],
        };
        let offs: Vec<usize> = h.leaves().iter().map(|l| l.offset).collect();
        assert_eq!(offs, vec![0, 2, 4, 8, 24, 32]);
        assert_eq!(h.size_align(), (40, 8));
        assert_eq!(h.leaves()[5].kind, LeafKind::Valid);
        assert!(bits(65).is_array() && !bits(64).is_array());
        assert_eq!(bits(33).c_name(), "u64");
    }
}
