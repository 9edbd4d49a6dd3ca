//! Match kinds and patterns, shared by parser `select` cases, table entries and value sets.

use crate::types::Annotation;
use crate::value::Bits;
use std::cmp::Ordering;
use std::fmt;

/// A table key's match kind.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum MatchKind {
    Exact,
    Ternary,
    Lpm,
    /// v1model/PSA `range`.
    Range,
    /// v1model/PSA `optional`.
    Optional,
    /// v1model `selector`: an input of the action selector's hash, not a lookup key.
    Selector,
    /// A match kind this crate does not know (P4Info's `other_match_type`).
    Other(String),
}

impl MatchKind {
    /// The P4 name of the match kind.
    pub fn name(&self) -> &str {
        match self {
            MatchKind::Exact => "exact",
            MatchKind::Ternary => "ternary",
            MatchKind::Lpm => "lpm",
            MatchKind::Range => "range",
            MatchKind::Optional => "optional",
            MatchKind::Selector => "selector",
            MatchKind::Other(n) => n,
        }
    }

    /// Whether entries of a table with a key of this kind need a priority (several entries
    /// may match one key).
    pub fn needs_priority(&self) -> bool {
        matches!(
            self,
            MatchKind::Ternary | MatchKind::Range | MatchKind::Optional
        )
    }
}

impl fmt::Display for MatchKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// The set of values one key component matches.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Pattern {
    /// Exactly this value.
    Exact(Bits),
    /// `value &&& mask`: `k & mask == value & mask`.
    Mask { value: Bits, mask: Bits },
    /// A prefix of `len` most significant bits (LPM).
    Prefix { value: Bits, len: u32 },
    /// `lo .. hi`, inclusive, unsigned.
    Range { lo: Bits, hi: Bits },
    /// `_` / `default`: everything.
    Any,
}

impl Pattern {
    /// Whether `key` is in the set. Patterns of another width than `key` compare after
    /// resizing to the key's width (a verified IR has equal widths).
    pub fn matches(&self, key: &Bits) -> bool {
        let w = key.width();
        match self {
            Pattern::Exact(v) => v.resize(w) == *key,
            Pattern::Mask { value, mask } => key.and(mask) == value.resize(w).and(mask),
            Pattern::Prefix { value, len } => {
                let m = Bits::prefix_mask(w, *len);
                key.and(&m) == value.resize(w).and(&m)
            }
            Pattern::Range { lo, hi } => {
                key.cmp_u(lo) != Ordering::Less && key.cmp_u(hi) != Ordering::Greater
            }
            Pattern::Any => true,
        }
    }

    /// The widths of the constants in the pattern (for verification).
    pub fn widths(&self) -> Vec<u32> {
        match self {
            Pattern::Exact(v) | Pattern::Prefix { value: v, .. } => vec![v.width()],
            Pattern::Mask { value, mask } => vec![value.width(), mask.width()],
            Pattern::Range { lo, hi } => vec![lo.width(), hi.width()],
            Pattern::Any => vec![],
        }
    }
}

/// `5`, `0x800 &&& 0xf00`, `10.0.0.0/8`-style `value/len`, `lo .. hi`, `_`.
impl fmt::Display for Pattern {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Pattern::Exact(v) => write!(f, "{v}"),
            Pattern::Mask { value, mask } => write!(f, "{value} &&& {mask}"),
            Pattern::Prefix { value, len } => write!(f, "{value}/{len}"),
            Pattern::Range { lo, hi } => write!(f, "{lo} .. {hi}"),
            Pattern::Any => f.write_str("_"),
        }
    }
}

/// A control-plane-visible match field: of a table key or of a value set.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MatchField {
    /// P4Info name: the key expression as written (`hdr.ethernet.dstAddr`) or its `@name`.
    pub name: String,
    pub width: u32,
    pub kind: MatchKind,
    /// Named type for P4Info's `type_name` (translated `type`s).
    pub type_name: Option<String>,
    /// `@id` annotation.
    pub id: Option<u32>,
    pub annotations: Vec<Annotation>,
}

impl MatchField {
    pub fn new(name: &str, width: u32, kind: MatchKind) -> MatchField {
        MatchField {
            name: name.to_string(),
            width,
            kind,
            type_name: None,
            id: None,
            annotations: Vec::new(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn b(w: u32, v: u128) -> Bits {
        Bits::from_u128(w, v)
    }

    #[test]
    fn patterns_match_as_p4_says() {
        let k = b(16, 0x0806);
        assert!(Pattern::Exact(b(16, 0x806)).matches(&k));
        assert!(!Pattern::Exact(b(16, 0x800)).matches(&k));
        assert!(
            Pattern::Mask {
                value: b(16, 0x800),
                mask: b(16, 0xff00)
            }
            .matches(&k)
        );
        assert!(
            Pattern::Prefix {
                value: b(16, 0x0800),
                len: 8
            }
            .matches(&k)
        );
        assert!(
            !Pattern::Prefix {
                value: b(16, 0x0800),
                len: 16
            }
            .matches(&k)
        );
        assert!(
            Pattern::Range {
                lo: b(16, 0x800),
                hi: b(16, 0x806)
            }
            .matches(&k)
        );
        assert!(
            !Pattern::Range {
                lo: b(16, 0x807),
                hi: b(16, 0x900)
            }
            .matches(&k)
        );
        assert!(Pattern::Any.matches(&k));
        assert_eq!(
            Pattern::Prefix {
                value: b(32, 0x0a00_0000),
                len: 8
            }
            .to_string(),
            "32w0xa000000/8"
        );
        assert!(MatchKind::Optional.needs_priority() && !MatchKind::Lpm.needs_priority());
    }
}
