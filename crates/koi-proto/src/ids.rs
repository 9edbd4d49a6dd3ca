//! p4c-compatible P4Runtime id allocation and aliases.
//!
//! A P4Info object id is `(prefix << 24) | low24`, where the 8-bit [`Prefix`] says what kind of
//! object it is (P4Runtime spec §6.3, `P4Ids.Prefix`). p4c (`control-plane/
//! p4RuntimeSymbolTable.cpp`) chooses `low24` as follows, and [`allocate`] does the same:
//!
//! 1. Objects are collected in program order. An object whose (prefix, name) was already
//!    collected is the same symbol: it gets the first one's id, and its own `@id` is ignored.
//! 2. An `@id(v)` is taken as is when its top byte is 0 or already the right prefix (the prefix
//!    is or-ed in); another top byte is an error ([`IdError::WrongPrefix`]). An `@id` equal to
//!    one already assigned is an error ([`IdError::DuplicateId`]). All `@id`s are placed
//!    before any hashed id, so an `@id` always wins.
//! 3. Every other object, per prefix, in **bytewise ascending order of name** (p4c iterates a
//!    `std::map<cstring, …>`, i.e. `strcmp` order), gets
//!    `h = jenkins_one_at_a_time(name)` (32 bits, over the name's UTF-8 bytes), and then the
//!    first of `h, h+1, h+2, …` (32-bit wrapping) whose `(prefix << 24) | (h & 0xffffff)` is not
//!    yet taken: linear probing on the low 24 bits, wrapping from `0xffffff` to `0x000000`.
//!    If all 2^24 values of the prefix are taken, [`IdError::Exhausted`].
//!
//! The name is the object's fully qualified control-plane name without a leading dot, which is
//! also its `preamble.name` — except for controller headers (`packet_in`/`packet_out`), which
//! p4c hashes under the *header type's* name (e.g. `packet_in_header_t`) while the P4Info
//! calls them by their `@controller_header("…")` argument. Checked against every id of every
//! golden P4Info in p4c's corpus (see `tests/corpus.rs`).
//!
//! Aliases ([`aliases`]) are p4c's shortest unique suffixes: the fewest trailing `.`-separated
//! components of the name that no other symbol's name (of any kind) also ends with.

use std::collections::{BTreeMap, HashMap, HashSet};

/// The kind of a P4Info object, i.e. the top 8 bits of its id.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Prefix {
    /// 0x01
    Action,
    /// 0x02
    Table,
    /// 0x03
    ValueSet,
    /// 0x04: a header type annotated `@controller_header`.
    ControllerHeader,
    /// 0x11: action profile or action selector.
    ActionProfile,
    /// 0x12
    Counter,
    /// 0x13
    DirectCounter,
    /// 0x14
    Meter,
    /// 0x15
    DirectMeter,
    /// 0x16
    Register,
    /// 0x17
    Digest,
    /// Any other prefix, e.g. an architecture-specific extern type (0x81..=0xfe).
    Other(u8),
}

impl Prefix {
    /// The 8-bit prefix value.
    pub fn byte(self) -> u8 {
        match self {
            Prefix::Action => 0x01,
            Prefix::Table => 0x02,
            Prefix::ValueSet => 0x03,
            Prefix::ControllerHeader => 0x04,
            Prefix::ActionProfile => 0x11,
            Prefix::Counter => 0x12,
            Prefix::DirectCounter => 0x13,
            Prefix::Meter => 0x14,
            Prefix::DirectMeter => 0x15,
            Prefix::Register => 0x16,
            Prefix::Digest => 0x17,
            Prefix::Other(b) => b,
        }
    }

    /// The prefix of a byte value (named variants for the standard ones).
    pub fn from_byte(b: u8) -> Prefix {
        match b {
            0x01 => Prefix::Action,
            0x02 => Prefix::Table,
            0x03 => Prefix::ValueSet,
            0x04 => Prefix::ControllerHeader,
            0x11 => Prefix::ActionProfile,
            0x12 => Prefix::Counter,
            0x13 => Prefix::DirectCounter,
            0x14 => Prefix::Meter,
            0x15 => Prefix::DirectMeter,
            0x16 => Prefix::Register,
            0x17 => Prefix::Digest,
            b => Prefix::Other(b),
        }
    }

    /// The prefix of a full 32-bit id.
    pub fn of_id(id: u32) -> Prefix {
        Prefix::from_byte(id.to_be_bytes()[0])
    }

    /// `self.byte() << 24`.
    pub fn base(self) -> u32 {
        u32::from(self.byte()) << 24
    }
}

/// One object to give an id to.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Symbol {
    /// Its kind.
    pub prefix: Prefix,
    /// The name p4c hashes: the fully qualified control-plane name without a leading dot
    /// (for a controller header: the header type's name).
    pub name: String,
    /// The value of its `@id` annotation, if any.
    pub id_annotation: Option<u32>,
}

impl Symbol {
    /// A symbol without `@id`.
    pub fn new(prefix: Prefix, name: impl Into<String>) -> Symbol {
        Symbol {
            prefix,
            name: name.into(),
            id_annotation: None,
        }
    }

    /// A symbol with an `@id`.
    pub fn with_id(prefix: Prefix, name: impl Into<String>, id: u32) -> Symbol {
        Symbol {
            prefix,
            name: name.into(),
            id_annotation: Some(id),
        }
    }
}

/// Why an id could not be allocated. `index` is the position of the symbol in the input.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum IdError {
    /// The `@id` has a non-zero top byte that is not the object's prefix.
    #[error("{name}: @id {id:#010x} has the wrong 8-bit prefix (expected {prefix:#04x})")]
    WrongPrefix {
        /// Position in the input.
        index: usize,
        /// The symbol's name.
        name: String,
        /// The annotation's value.
        id: u32,
        /// The expected prefix byte.
        prefix: u8,
    },
    /// Two objects of the same kind have the same `@id`.
    #[error("{name}: @id {id:#010x} is assigned to multiple declarations")]
    DuplicateId {
        /// Position in the input.
        index: usize,
        /// The symbol's name.
        name: String,
        /// The full id (prefix included).
        id: u32,
    },
    /// Every id of the prefix is taken.
    #[error("{name}: no available id to represent it in P4Runtime")]
    Exhausted {
        /// Position in the input.
        index: usize,
        /// The symbol's name.
        name: String,
    },
}

/// The errors of an allocation, with the ids allocated anyway (see [`allocate`]).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{}", .errors.iter().map(ToString::to_string).collect::<Vec<_>>().join("; "))]
pub struct IdErrors {
    /// One id per input symbol; a symbol whose `@id` was rejected has a hashed id.
    pub ids: Vec<u32>,
    /// Every error, in input order for `@id` errors.
    pub errors: Vec<IdError>,
}

/// Jenkins' one-at-a-time hash of `bytes`, as p4c computes it (full 32 bits).
pub fn jenkins_one_at_a_time(bytes: &[u8]) -> u32 {
    let mut h: u32 = 0;
    for &b in bytes {
        h = h.wrapping_add(u32::from(b));
        h = h.wrapping_add(h << 10);
        h ^= h >> 6;
    }
    h = h.wrapping_add(h << 3);
    h ^= h >> 11;
    h.wrapping_add(h << 15)
}

/// The id `name` gets when nothing else of its kind collides with it.
pub fn hashed_id(prefix: Prefix, name: &str) -> u32 {
    prefix.base() | (jenkins_one_at_a_time(name.as_bytes()) & 0x00ff_ffff)
}

/// First free id probing upward from `start` on the low 24 bits; `None` if all are taken.
fn probe(prefix: Prefix, start: u32, taken: &HashSet<u32>) -> Option<u32> {
    let mut v = start;
    for _ in 0..=0x00ff_ffffu32 {
        let id = prefix.base() | (v & 0x00ff_ffff);
        if !taken.contains(&id) {
            return Some(id);
        }
        v = v.wrapping_add(1);
    }
    None
}

/// Allocates an id for every symbol, as p4c does (see the module documentation). The result
/// has one id per input symbol, in input order. All errors are reported together; a symbol
/// whose `@id` is rejected still gets a hashed id, as in p4c, so that later stages can go on.
pub fn allocate(symbols: &[Symbol]) -> Result<Vec<u32>, IdErrors> {
    let mut errors = Vec::new();
    let mut taken: HashSet<u32> = HashSet::new();
    // (prefix, name) -> assigned id, or None if it still needs a hashed one.
    let mut table: HashMap<(Prefix, &str), Option<u32>> = HashMap::new();
    for (index, s) in symbols.iter().enumerate() {
        let key = (s.prefix, s.name.as_str());
        if table.contains_key(&key) {
            continue;
        }
        let mut assigned = None;
        if let Some(v) = s.id_annotation {
            let top = v & 0xff00_0000;
            if top != 0 && top != s.prefix.base() {
                errors.push(IdError::WrongPrefix {
                    index,
                    name: s.name.clone(),
                    id: v,
                    prefix: s.prefix.byte(),
                });
            } else {
                let id = v | s.prefix.base();
                if taken.insert(id) {
                    assigned = Some(id);
                } else {
                    errors.push(IdError::DuplicateId {
                        index,
                        name: s.name.clone(),
                        id,
                    });
                }
            }
        }
        table.insert(key, assigned);
    }

    // Hashed ids, per prefix, names in bytewise order.
    let mut pending: BTreeMap<(Prefix, &str), usize> = BTreeMap::new();
    for (index, s) in symbols.iter().enumerate() {
        let key = (s.prefix, s.name.as_str());
        if table.get(&key) == Some(&None) {
            pending.entry(key).or_insert(index);
        }
    }
    for ((prefix, name), index) in pending {
        let h = jenkins_one_at_a_time(name.as_bytes());
        match probe(prefix, h, &taken) {
            Some(id) => {
                taken.insert(id);
                table.insert((prefix, name), Some(id));
            }
            None => errors.push(IdError::Exhausted {
                index,
                name: name.to_string(),
            }),
        }
    }

    let ids: Vec<u32> = symbols
        .iter()
        .map(|s| {
            table
                .get(&(s.prefix, s.name.as_str()))
                .copied()
                .flatten()
                .unwrap_or(s.prefix.base())
        })
        .collect();
    if errors.is_empty() {
        Ok(ids)
    } else {
        Err(IdErrors { ids, errors })
    }
}

/// p4c's alias of each name: its shortest suffix of whole `.`-separated components that is
/// not also a suffix of another name in `names` (duplicates count once). Same order as input.
pub fn aliases<S: AsRef<str>>(names: &[S]) -> Vec<String> {
    // Count, for every component suffix, how many distinct names end with it.
    let distinct: HashSet<&str> = names.iter().map(AsRef::as_ref).collect();
    let mut count: HashMap<Vec<&str>, usize> = HashMap::new();
    for name in &distinct {
        let comps: Vec<&str> = name.split('.').collect();
        for k in 1..=comps.len() {
            *count.entry(comps[comps.len() - k..].to_vec()).or_insert(0) += 1;
        }
    }
    names
        .iter()
        .map(|name| {
            let comps: Vec<&str> = name.as_ref().split('.').collect();
            let mut k = comps.len();
            for n in 1..=comps.len() {
                if count.get(&comps[comps.len() - n..]).copied().unwrap_or(0) < 2 {
                    k = n;
                    break;
                }
            }
            comps[comps.len() - k..].join(".")
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hash_matches_known_p4c_ids() {
        // From p4c's golden P4Infos.
        assert_eq!(hashed_id(Prefix::Action, "NoAction"), 21257015);
        assert_eq!(hashed_id(Prefix::Table, "IngressI.indirect"), 46872340);
        assert_eq!(hashed_id(Prefix::ActionProfile, "ap"), 294074782);
        assert_eq!(jenkins_one_at_a_time(b""), 0);
    }

    /// Two distinct names whose hashes agree on the low 24 bits (found by search).
    fn colliding_pair() -> (String, String) {
        let mut seen: HashMap<u32, String> = HashMap::new();
        for i in 0u32.. {
            let name = format!("c.t{i}");
            let low = jenkins_one_at_a_time(name.as_bytes()) & 0x00ff_ffff;
            if let Some(other) = seen.insert(low, name.clone()) {
                return (other, name);
            }
        }
        unreachable!("the loop only ends by returning")
    }

    #[test]
    fn collisions_probe_upward_in_name_order() {
        let (a, b) = colliding_pair();
        let (first, second) = if a < b { (a, b) } else { (b, a) };
        let h = hashed_id(Prefix::Table, &first);
        let next = Prefix::Table.base() | ((h + 1) & 0x00ff_ffff);
        // Input order does not matter: the name that sorts first gets the hash.
        for syms in [
            vec![
                Symbol::new(Prefix::Table, &first),
                Symbol::new(Prefix::Table, &second),
            ],
            vec![
                Symbol::new(Prefix::Table, &second),
                Symbol::new(Prefix::Table, &first),
            ],
        ] {
            let ids = allocate(&syms).unwrap_or_default();
            let get = |n: &str| syms.iter().position(|s| s.name == n).map(|i| ids[i]);
            assert_eq!(get(&first), Some(h));
            assert_eq!(get(&second), Some(next));
        }
        // Same names as actions do not collide with the tables.
        let syms = [
            Symbol::new(Prefix::Table, &first),
            Symbol::new(Prefix::Action, &second),
        ];
        let ids = allocate(&syms).unwrap_or_default();
        assert_eq!(ids[1], hashed_id(Prefix::Action, &second));
        // An @id on the hash of `first` pushes `first` (and then `second`) up.
        let syms = [
            Symbol::new(Prefix::Table, &first),
            Symbol::new(Prefix::Table, &second),
            Symbol::with_id(Prefix::Table, "z", h & 0x00ff_ffff),
        ];
        let ids = allocate(&syms).unwrap_or_default();
        assert_eq!(
            ids,
            [next, Prefix::Table.base() | ((h + 2) & 0x00ff_ffff), h]
        );
    }

    #[test]
    fn probing_wraps_within_24_bits() {
        let mut taken = HashSet::new();
        taken.insert(0x02ff_ffff);
        assert_eq!(probe(Prefix::Table, 0x12ff_ffff, &taken), Some(0x0200_0000));
        taken.insert(0x0200_0000);
        assert_eq!(probe(Prefix::Table, 0xffff_ffff, &taken), Some(0x0200_0001));
    }

    #[test]
    fn id_annotations() {
        let syms = [
            Symbol::with_id(Prefix::Table, "a", 0x12ab34),
            Symbol::with_id(Prefix::Action, "act1", 0x12ab34),
            Symbol::with_id(Prefix::Counter, "c", 0x1200_0005),
        ];
        assert_eq!(
            allocate(&syms),
            Ok(vec![0x0212_ab34, 0x0112_ab34, 0x1200_0005])
        );

        let syms = [
            Symbol::with_id(Prefix::Table, "tA", 0x12ab34),
            Symbol::with_id(Prefix::Table, "tB", 0x12ab34),
            Symbol::with_id(Prefix::Table, "tC", 0x0112_ab34),
        ];
        let Err(IdErrors { ids, errors }) = allocate(&syms) else {
            panic!("expected errors")
        };
        assert_eq!(ids[0], 0x0212_ab34);
        assert_eq!(ids[1], hashed_id(Prefix::Table, "tB"));
        assert_eq!(
            errors,
            [
                IdError::DuplicateId {
                    index: 1,
                    name: "tB".into(),
                    id: 0x0212_ab34
                },
                IdError::WrongPrefix {
                    index: 2,
                    name: "tC".into(),
                    id: 0x0112_ab34,
                    prefix: 2
                },
            ]
        );
        assert_eq!(
            errors[1].to_string(),
            "tC: @id 0x0112ab34 has the wrong 8-bit prefix (expected 0x02)"
        );
    }

    #[test]
    fn duplicates_share_the_first_id() {
        let syms = [
            Symbol::with_id(Prefix::Action, "a", 7),
            Symbol::with_id(Prefix::Action, "a", 9),
            Symbol::new(Prefix::Action, "b"),
            Symbol::new(Prefix::Action, "b"),
        ];
        let ids = allocate(&syms).unwrap_or_default();
        assert_eq!(ids[..2], [0x0100_0007, 0x0100_0007]);
        assert_eq!(ids[2], ids[3]);
    }

    #[test]
    fn aliases_are_shortest_unique_suffixes() {
        let names = [
            "ingress.t",
            "egress.t",
            "ingress.u",
            "NoAction",
            "a.b.c",
            "b.c",
            "x.y.c",
        ];
        assert_eq!(
            aliases(&names),
            [
                "ingress.t",
                "egress.t",
                "u",
                "NoAction",
                "a.b.c",
                "b.c",
                "y.c"
            ]
        );
        assert_eq!(aliases(&["p.q", "p.q"]), ["q", "q"]);
    }
}
