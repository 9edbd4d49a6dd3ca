//! Match keys of table entries and value set members (spec "Match Format"): `FieldMatch`
//! lists to one koi [`Pattern`] per field and back.
//!
//! Writing: field ids must be the table's, each at most once, each with the form of its
//! match kind (`INVALID_ARGUMENT` otherwise). A "don't care" field is omitted: an omitted
//! ternary, optional, LPM or range field matches everything, an omitted exact field is an
//! error, and a don't-care written out (ternary mask 0, LPM prefix 0, the full range) is
//! refused with `INVALID_ARGUMENT`, as are masked-off bits set in a ternary value and bits past
//! an LPM prefix. Values follow [`crate::bytestring`] (`OUT_OF_RANGE` when too wide); ternary
//! values and masks are compared as numbers (a zero-padded value longer than its mask is
//! accepted). Translated fields ([`crate::translate`]) must be matched de facto exactly
//! (`UNIMPLEMENTED` otherwise). Reading: the canonical form, don't-care fields omitted.

use crate::bytestring::{encode_uint, uint};
use crate::error::{Result, invalid, out_of_range, unimplemented};
use crate::schema::FieldInfo;
use crate::translate::{Codec, Sdn, Strings};
use koi_ir::{Bits, MatchKind, Pattern};
use koi_proto::p4runtime::FieldMatch;
use koi_proto::p4runtime::field_match::{self, FieldMatchType as F};
use std::cmp::Ordering;

/// How string translations are resolved: allocating (writes) or looking up only (reads).
pub(crate) enum Strs<'a> {
    Alloc(&'a mut Strings),
    Lookup(&'a Strings),
}

impl Strs<'_> {
    /// The data-plane value of a controller value; `None` for an unknown string when looking
    /// up.
    pub fn value(
        &mut self,
        c: &Codec,
        bytes: &[u8],
        what: &dyn Fn() -> String,
    ) -> Result<Option<Bits>> {
        match self {
            Strs::Alloc(s) => c.decode(bytes, s, what).map(Some),
            Strs::Lookup(s) => c.lookup(bytes, s, what),
        }
    }
}

/// The patterns of `matches` for `fields` (one per field, in field order); `None` when a
/// string value is unknown to a lookup (no entry can have it).
pub(crate) fn decode(
    owner: &str,
    fields: &[FieldInfo],
    matches: &[FieldMatch],
    strs: &mut Strs,
) -> Result<Option<Vec<Pattern>>> {
    let mut given: Vec<Option<&FieldMatch>> = vec![None; fields.len()];
    for m in matches {
        let Some(pos) = fields.iter().position(|f| f.id == m.field_id) else {
            return Err(invalid(format!(
                "{owner} has no match field with id {}",
                m.field_id
            )));
        };
        if given[pos].replace(m).is_some() {
            return Err(invalid(format!(
                "{owner}: match field {} is given twice",
                fields[pos].name
            )));
        }
    }
    let mut out = Vec::with_capacity(fields.len());
    for (f, m) in fields.iter().zip(given) {
        match field(owner, f, m, strs)? {
            Some(p) => out.push(p),
            None => return Ok(None),
        }
    }
    Ok(Some(out))
}

fn kind_name(m: &F) -> &'static str {
    match m {
        F::Exact(_) => "exact",
        F::Ternary(_) => "ternary",
        F::Lpm(_) => "lpm",
        F::Range(_) => "range",
        F::Optional(_) => "optional",
        F::Other(_) => "other",
    }
}

/// A plain number of `width` bits (a mask).
fn number(bytes: &[u8], width: u32, what: &dyn Fn() -> String) -> Result<Bits> {
    uint(bytes, width).map_err(|e| out_of_range(e.message(&what(), width)))
}

fn field(
    owner: &str,
    f: &FieldInfo,
    m: Option<&FieldMatch>,
    strs: &mut Strs,
) -> Result<Option<Pattern>> {
    let what = || format!("{owner}, match field {}", f.name);
    let c = &f.codec;
    let (w, sw) = (c.width, c.sdn_width());
    let Some(m) = m else {
        return match f.kind {
            MatchKind::Exact => Err(invalid(format!(
                "{}: an exact field cannot be left out",
                what()
            ))),
            MatchKind::Other(_) | MatchKind::Selector => Err(unimplemented(format!(
                "{}: match kind {} is not supported",
                what(),
                f.kind
            ))),
            _ => Ok(Some(Pattern::Any)),
        };
    };
    let Some(mt) = &m.field_match_type else {
        return Err(invalid(format!("{}: no match value", what())));
    };
    if let F::Other(_) = mt {
        return Err(unimplemented(format!("{}: other match types", what())));
    }
    let strings = matches!(c.sdn, Sdn::Str(_));
    if strings && !matches!(mt, F::Exact(_) | F::Optional(_)) {
        return Err(unimplemented(format!(
            "{}: a field of a string type can only be matched exactly",
            what()
        )));
    }
    let exact_only = |ok: bool, how: &str| -> Result<()> {
        if c.translated() && !ok {
            return Err(unimplemented(format!(
                "{}: a translated field must be matched exactly ({how})",
                what()
            )));
        }
        Ok(())
    };
    let p = match (mt, &f.kind) {
        (F::Exact(e), MatchKind::Exact) => strs.value(c, &e.value, &what)?.map(Pattern::Exact),
        (F::Optional(o), MatchKind::Optional) => {
            strs.value(c, &o.value, &what)?.map(Pattern::Exact)
        }
        (F::Lpm(l), MatchKind::Lpm) => {
            let len = u32::try_from(l.prefix_len)
                .ok()
                .filter(|n| (1..=sw).contains(n));
            let Some(len) = len else {
                return Err(invalid(format!(
                    "{}: prefix length {} is not in 1..={sw} (a don't-care is left out)",
                    what(),
                    l.prefix_len
                )));
            };
            exact_only(len == sw, "prefix length of the full width")?;
            let Some(v) = strs.value(c, &l.value, &what)? else {
                return Ok(None);
            };
            let len = if c.translated() { w } else { len };
            if !v.and(&Bits::prefix_mask(w, len).not()).is_zero() {
                return Err(invalid(format!(
                    "{}: value has bits set past the /{len} prefix",
                    what()
                )));
            }
            Some(Pattern::Prefix { value: v, len })
        }
        (F::Ternary(t), MatchKind::Ternary) => {
            let mask = number(&t.mask, sw, &what)?;
            if mask.is_zero() {
                return Err(invalid(format!(
                    "{}: mask 0 is a don't-care, which is left out",
                    what()
                )));
            }
            exact_only(mask == Bits::ones(sw), "a mask of all ones")?;
            let Some(v) = strs.value(c, &t.value, &what)? else {
                return Ok(None);
            };
            if c.translated() {
                Some(Pattern::Exact(v))
            } else {
                if v.and(&mask) != v {
                    return Err(invalid(format!(
                        "{}: value has bits set outside its mask",
                        what()
                    )));
                }
                Some(Pattern::Mask { value: v, mask })
            }
        }
        (F::Range(r), MatchKind::Range) => {
            let lo = number(&r.low, sw, &what)?;
            let hi = number(&r.high, sw, &what)?;
            if lo.cmp_u(&hi) == Ordering::Greater {
                return Err(invalid(format!("{}: low bound above high bound", what())));
            }
            if lo.is_zero() && hi == Bits::ones(sw) {
                return Err(invalid(format!(
                    "{}: the full range is a don't-care, which is left out",
                    what()
                )));
            }
            exact_only(lo == hi, "a one-value range")?;
            let lo = strs.value(c, &r.low, &what)?;
            let hi = strs.value(c, &r.high, &what)?;
            lo.zip(hi).map(|(lo, hi)| Pattern::Range { lo, hi })
        }
        (mt, kind) => {
            return Err(invalid(format!(
                "{}: the field is {kind}, the match is {}",
                what(),
                kind_name(mt)
            )));
        }
    };
    Ok(p)
}

/// The `FieldMatch` list of canonical `keys` (one per field), don't-care fields left out.
pub(crate) fn encode(fields: &[FieldInfo], keys: &[Pattern], strings: &Strings) -> Vec<FieldMatch> {
    fields
        .iter()
        .zip(keys)
        .filter_map(|(f, p)| {
            let t = encode_field(f, p, strings)?;
            Some(FieldMatch {
                field_id: f.id,
                field_match_type: Some(t),
            })
        })
        .collect()
}

fn encode_field(f: &FieldInfo, p: &Pattern, strings: &Strings) -> Option<F> {
    let c = &f.codec;
    let (w, sw) = (c.width, c.sdn_width());
    let v = |b: &Bits| c.encode(b, strings);
    let full = |b: &Bits| *b == Bits::ones(w);
    Some(match (&f.kind, p) {
        (_, Pattern::Any) => return None,
        (MatchKind::Ternary | MatchKind::Optional, Pattern::Mask { mask, .. })
            if mask.is_zero() =>
        {
            return None;
        }
        (MatchKind::Optional, Pattern::Mask { value, mask }) if full(mask) => {
            F::Optional(field_match::Optional { value: v(value) })
        }
        (MatchKind::Ternary | MatchKind::Optional, Pattern::Mask { value, mask }) => {
            if c.translated() && full(mask) {
                F::Ternary(field_match::Ternary {
                    value: v(value),
                    mask: encode_uint(&Bits::ones(sw)),
                })
            } else {
                F::Ternary(field_match::Ternary {
                    value: encode_uint(value),
                    mask: encode_uint(mask),
                })
            }
        }
        (MatchKind::Lpm, Pattern::Prefix { len: 0, .. }) => return None,
        (MatchKind::Lpm, Pattern::Prefix { value, len }) => {
            let (value, prefix_len) = if c.translated() && *len == w {
                (v(value), sw)
            } else {
                (encode_uint(value), *len)
            };
            F::Lpm(field_match::Lpm {
                value,
                prefix_len: i32::try_from(prefix_len).unwrap_or(i32::MAX),
            })
        }
        (MatchKind::Range, Pattern::Range { lo, hi }) if lo.is_zero() && full(hi) => return None,
        (MatchKind::Range, Pattern::Range { lo, hi }) => {
            let (low, high) = if c.translated() && lo == hi {
                (v(lo), v(hi))
            } else {
                (encode_uint(lo), encode_uint(hi))
            };
            F::Range(field_match::Range { low, high })
        }
        (_, Pattern::Exact(x)) => F::Exact(field_match::Exact { value: v(x) }),
        (_, Pattern::Mask { value, .. } | Pattern::Prefix { value, .. }) => {
            F::Exact(field_match::Exact { value: v(value) })
        }
        (_, Pattern::Range { lo, .. }) => F::Exact(field_match::Exact { value: v(lo) }),
    })
}
