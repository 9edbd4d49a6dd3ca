//! What the state needs to know about the pipeline's control-plane objects, copied from the
//! [`Pipeline`] when the state is created (names, key widths and match kinds, action
//! parameters, scopes), so that the state stands on its own; and the canonical form of match
//! values per match kind.

use crate::error::{Result, StateError};
use koi_ir::{
    ActionId, ActionScope, Bits, DefaultAction, ExternId, MatchKind, Pattern, Pipeline, Table,
    TableId,
};
use std::cmp::Ordering;

/// How a table's entries are looked up, from its match kinds (BMv2's table `match_type`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LookupKind {
    /// Only exact fields (or none): one hash lookup.
    Exact,
    /// Exact fields and one LPM field: longest prefix wins.
    Lpm,
    /// Some ternary or optional field and no range field: highest priority wins.
    Ternary,
    /// Some range field: highest priority wins.
    Range,
}

impl LookupKind {
    /// BMv2's name (`show_tables`, `table_add` messages).
    pub fn name(self) -> &'static str {
        match self {
            LookupKind::Exact => "exact",
            LookupKind::Lpm => "lpm",
            LookupKind::Ternary => "ternary",
            LookupKind::Range => "range",
        }
    }

    /// Whether entries carry priorities.
    pub fn needs_priority(self) -> bool {
        matches!(self, LookupKind::Ternary | LookupKind::Range)
    }
}

/// A match field the control plane supplies (selector fields are not match fields).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KeySchema {
    pub name: String,
    pub width: u32,
    pub kind: MatchKind,
    /// Position among the IR table's keys (selector keys included).
    pub position: usize,
}

/// A table as the control plane sees it.
#[derive(Clone, Debug)]
pub struct TableSchema {
    pub id: TableId,
    pub name: String,
    /// Match fields in order.
    pub keys: Vec<KeySchema>,
    /// Positions among the IR keys of the `selector` fields, hashed by an action selector.
    pub selector_keys: Vec<usize>,
    pub actions: Vec<(ActionId, ActionScope)>,
    pub default_action: DefaultAction,
    pub entries_const: bool,
    pub size: u64,
    pub implementation: Option<ExternId>,
    pub direct_counter: Option<ExternId>,
    pub direct_meter: Option<ExternId>,
    pub support_timeout: bool,
    pub largest_priority_wins: bool,
    pub lookup: LookupKind,
}

/// Whether a table key is one of the lookup's keys ([`TableSchema::keys`], in the table's
/// order), rather than an action selector's input ([`TableSchema::selector_keys`]).
pub fn is_lookup_key(k: &koi_ir::TableKey) -> bool {
    k.field.kind != MatchKind::Selector
}

impl TableSchema {
    pub fn from_ir(id: TableId, t: &Table) -> TableSchema {
        let mut keys = Vec::new();
        let mut selector_keys = Vec::new();
        for (i, k) in t.keys.iter().enumerate() {
            if !is_lookup_key(k) {
                selector_keys.push(i);
            } else {
                keys.push(KeySchema {
                    name: k.field.name.clone(),
                    width: k.field.width,
                    kind: k.field.kind.clone(),
                    position: i,
                });
            }
        }
        TableSchema {
            id,
            name: t.preamble.name.clone(),
            lookup: lookup_kind(&keys),
            keys,
            selector_keys,
            actions: t.actions.iter().map(|a| (a.action, a.scope)).collect(),
            default_action: t.default_action.clone(),
            entries_const: t.entries_const,
            size: t.size,
            implementation: t.implementation,
            direct_counter: t.direct_counter,
            direct_meter: t.direct_meter,
            support_timeout: t.support_timeout,
            largest_priority_wins: t.largest_priority_wins,
        }
    }

    /// The scope of `action` in this table, if it is one of its actions.
    pub fn scope(&self, action: ActionId) -> Option<ActionScope> {
        self.actions
            .iter()
            .find(|(a, _)| *a == action)
            .map(|(_, s)| *s)
    }

    /// The wildcard for match field `i` (what an STF `add` leaves out): 0 for exact, `0&&&0`
    /// for ternary and optional, `0/0` for LPM, the full range for range.
    pub fn wildcard(&self, i: usize) -> Option<Pattern> {
        let k = self.keys.get(i)?;
        Some(match k.kind {
            MatchKind::Exact | MatchKind::Selector | MatchKind::Other(_) => {
                Pattern::Exact(Bits::zero(k.width))
            }
            _ => Pattern::Any,
        })
    }
}

fn lookup_kind(keys: &[KeySchema]) -> LookupKind {
    let any = |f: fn(&MatchKind) -> bool| keys.iter().any(|k| f(&k.kind));
    if any(|k| *k == MatchKind::Range) {
        LookupKind::Range
    } else if any(|k| matches!(k, MatchKind::Ternary | MatchKind::Optional)) {
        LookupKind::Ternary
    } else if any(|k| *k == MatchKind::Lpm) {
        LookupKind::Lpm
    } else {
        LookupKind::Exact
    }
}

/// An action: its name and parameters (name, width).
///
/// `name` is the control-plane name (P4Info's, the CLI's), shared by the specialisations of
/// one source action (one per binding of its directional parameters in a table's action
/// list), so it designates an action only within one table; `ir_name` is unique.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ActionSchema {
    pub name: String,
    pub ir_name: String,
    pub params: Vec<(String, u32)>,
}

/// Schemas of every table and action of a pipeline, by id.
#[derive(Clone, Debug)]
pub struct Schema {
    pub tables: Vec<TableSchema>,
    pub actions: Vec<ActionSchema>,
}

impl Schema {
    pub fn new(p: &Pipeline) -> Schema {
        Schema {
            tables: p
                .tables
                .iter()
                .map(|(id, t)| TableSchema::from_ir(id, t))
                .collect(),
            actions: p
                .actions
                .values()
                .map(|a| ActionSchema {
                    name: a.control_plane_name().to_string(),
                    ir_name: a.preamble.name.clone(),
                    params: a
                        .params
                        .iter()
                        .map(|p| (p.name.clone(), p.ty.width()))
                        .collect(),
                })
                .collect(),
        }
    }
}

/// The canonical form of a match value for a field of `kind` and `width`: exact fields hold
/// [`Pattern::Exact`], ternary and optional fields [`Pattern::Mask`] (value already masked,
/// BMv2's `0&&&0` for a wildcard), LPM fields [`Pattern::Prefix`] (value masked to the
/// prefix), range fields [`Pattern::Range`]. `Err` carries why the value does not suit.
pub fn canonical(
    kind: &MatchKind,
    width: u32,
    p: &Pattern,
) -> std::result::Result<Pattern, String> {
    if let Some(w) = p.widths().into_iter().find(|w| *w != width) {
        return Err(format!("value of {w} bits for a field of {width} bits"));
    }
    let ones = Bits::ones(width);
    let out = match (kind, p) {
        (MatchKind::Exact, Pattern::Exact(v)) => Pattern::Exact(v.clone()),
        (MatchKind::Exact, _) => return Err("an exact field takes a single value".into()),
        (MatchKind::Ternary | MatchKind::Optional, _) => ternary(p, width)?,
        (MatchKind::Lpm, _) => lpm(p, width)?,
        (MatchKind::Range, Pattern::Exact(v)) => Pattern::Range {
            lo: v.clone(),
            hi: v.clone(),
        },
        (MatchKind::Range, Pattern::Range { lo, hi }) => {
            if lo.cmp_u(hi) == Ordering::Greater {
                return Err("range low bound above its high bound".into());
            }
            p.clone()
        }
        (MatchKind::Range, Pattern::Any) => Pattern::Range {
            lo: Bits::zero(width),
            hi: ones,
        },
        (MatchKind::Range, _) => return Err("a range field takes LOW->HIGH".into()),
        (MatchKind::Selector | MatchKind::Other(_), _) => {
            return Err(format!("match kind {kind} cannot be matched"));
        }
    };
    Ok(out)
}

fn ternary(p: &Pattern, width: u32) -> std::result::Result<Pattern, String> {
    let (value, mask) = match p {
        Pattern::Exact(v) => (v.clone(), Bits::ones(width)),
        Pattern::Mask { value, mask } => (value.and(mask), mask.clone()),
        Pattern::Prefix { value, len } => {
            let m = Bits::prefix_mask(width, *len);
            (value.and(&m), m)
        }
        Pattern::Any => (Bits::zero(width), Bits::zero(width)),
        Pattern::Range { .. } => return Err("a ternary field takes VALUE&&&MASK".into()),
    };
    Ok(Pattern::Mask { value, mask })
}

fn lpm(p: &Pattern, width: u32) -> std::result::Result<Pattern, String> {
    let (value, len) = match p {
        Pattern::Exact(v) => (v.clone(), width),
        Pattern::Prefix { value, len } if *len <= width => (value.clone(), *len),
        Pattern::Prefix { len, .. } => return Err(format!("prefix length {len} above {width}")),
        Pattern::Mask { value, mask } => match mask.prefix_len() {
            Some(len) => (value.clone(), len),
            None => return Err("an LPM mask must be a prefix mask".into()),
        },
        Pattern::Any => (Bits::zero(width), 0),
        Pattern::Range { .. } => return Err("an LPM field takes VALUE/LENGTH".into()),
    };
    Ok(Pattern::Prefix {
        value: value.and(&Bits::prefix_mask(width, len)),
        len,
    })
}

/// The bits of a key that a canonical pattern looks at (for megaflow masks).
pub fn pattern_mask(p: &Pattern, width: u32) -> Bits {
    match p {
        Pattern::Exact(_) => Bits::ones(width),
        Pattern::Mask { mask, .. } => mask.resize(width),
        Pattern::Prefix { len, .. } => Bits::prefix_mask(width, *len),
        Pattern::Range { lo, hi } if lo.is_zero() && *hi == Bits::ones(width) => Bits::zero(width),
        Pattern::Range { .. } => Bits::ones(width),
        Pattern::Any => Bits::zero(width),
    }
}

/// Checks a list of action arguments against an action's parameters.
pub fn check_args(action: &ActionSchema, args: &[Bits]) -> Result<()> {
    if args.len() != action.params.len() {
        return Err(StateError::ArgCount {
            action: action.name.clone(),
            expected: action.params.len(),
            found: args.len(),
        });
    }
    for ((name, w), v) in action.params.iter().zip(args) {
        if v.width() != *w {
            return Err(StateError::BadArg {
                action: action.name.clone(),
                param: name.clone(),
                why: format!("value of {} bits for a parameter of {w} bits", v.width()),
            });
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn b(w: u32, v: u128) -> Bits {
        Bits::from_u128(w, v)
    }

    #[test]
    fn canonical_forms_per_kind() {
        let t = MatchKind::Ternary;
        assert_eq!(
            canonical(&t, 8, &Pattern::Exact(b(8, 5))),
            Ok(Pattern::Mask {
                value: b(8, 5),
                mask: b(8, 0xff)
            })
        );
        assert_eq!(
            canonical(
                &t,
                8,
                &Pattern::Mask {
                    value: b(8, 0xff),
                    mask: b(8, 0x0f)
                }
            ),
            Ok(Pattern::Mask {
                value: b(8, 0x0f),
                mask: b(8, 0x0f)
            })
        );
        assert_eq!(
            canonical(&MatchKind::Lpm, 32, &Pattern::Exact(b(32, 7))),
            Ok(Pattern::Prefix {
                value: b(32, 7),
                len: 32
            })
        );
        assert_eq!(
            canonical(
                &MatchKind::Lpm,
                16,
                &Pattern::Prefix {
                    value: b(16, 0x0aff),
                    len: 8
                }
            ),
            Ok(Pattern::Prefix {
                value: b(16, 0x0a00),
                len: 8
            })
        );
        assert_eq!(
            canonical(&MatchKind::Range, 8, &Pattern::Any),
            Ok(Pattern::Range {
                lo: b(8, 0),
                hi: b(8, 255)
            })
        );
        assert!(canonical(&MatchKind::Exact, 8, &Pattern::Any).is_err());
        assert!(canonical(&MatchKind::Exact, 8, &Pattern::Exact(b(9, 1))).is_err());
        assert!(
            canonical(
                &MatchKind::Range,
                8,
                &Pattern::Range {
                    lo: b(8, 5),
                    hi: b(8, 1)
                }
            )
            .is_err()
        );
        assert!(
            canonical(
                &MatchKind::Lpm,
                8,
                &Pattern::Mask {
                    value: b(8, 0),
                    mask: b(8, 0x0f)
                }
            )
            .is_err()
        );
    }
}
