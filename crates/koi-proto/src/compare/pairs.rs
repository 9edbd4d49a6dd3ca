//! Helpers of [`super::compare`]: resolving ids to names and matching two lists by key.

use std::collections::hash_map::Entry;
use std::collections::{HashMap, HashSet};
use std::hash::Hash;

use crate::p4info::{P4Info, Preamble};

/// Id → name of every object with a preamble, for resolving references.
pub(super) struct Names(HashMap<u32, String>);

impl Names {
    pub(super) fn new(p: &P4Info) -> Self {
        let mut m = HashMap::new();
        let mut add = |pre: &Option<Preamble>| {
            if let Some(pre) = pre {
                m.entry(pre.id).or_insert_with(|| pre.name.clone());
            }
        };
        p.tables.iter().for_each(|x| add(&x.preamble));
        p.actions.iter().for_each(|x| add(&x.preamble));
        p.action_profiles.iter().for_each(|x| add(&x.preamble));
        p.counters.iter().for_each(|x| add(&x.preamble));
        p.direct_counters.iter().for_each(|x| add(&x.preamble));
        p.meters.iter().for_each(|x| add(&x.preamble));
        p.direct_meters.iter().for_each(|x| add(&x.preamble));
        p.controller_packet_metadata
            .iter()
            .for_each(|x| add(&x.preamble));
        p.value_sets.iter().for_each(|x| add(&x.preamble));
        p.registers.iter().for_each(|x| add(&x.preamble));
        p.digests.iter().for_each(|x| add(&x.preamble));
        for ext in &p.externs {
            ext.instances.iter().for_each(|x| add(&x.preamble));
        }
        Names(m)
    }

    /// `'name'`, `(none)` for id 0, or `#0x........` for an id that names nothing.
    pub(super) fn of(&self, id: u32) -> String {
        match (id, self.0.get(&id)) {
            (0, _) => "(none)".to_string(),
            (_, Some(n)) => format!("'{n}'"),
            (_, None) => format!("#{id:#010x}"),
        }
    }
}

/// One element of two lists matched by key.
pub(super) enum Pair<'x, T> {
    Both(&'x T, &'x T),
    Missing(&'x T),
    Unexpected(&'x T),
    Duplicate(&'static str, &'x T),
}

/// Matches `e` and `a` by `key`: expected order first, then what only `actual` has.
pub(super) fn pair_up<'x, T, K: Eq + Hash>(
    e: &'x [T],
    a: &'x [T],
    key: impl Fn(&T) -> K,
) -> Vec<Pair<'x, T>> {
    let mut by_key: HashMap<K, &T> = HashMap::new();
    let mut pairs = Vec::new();
    for x in a {
        match by_key.entry(key(x)) {
            Entry::Occupied(_) => pairs.push(Pair::Duplicate("actual", x)),
            Entry::Vacant(v) => {
                v.insert(x);
            }
        }
    }
    let mut seen = HashSet::new();
    for x in e {
        let k = key(x);
        if seen.contains(&k) {
            pairs.push(Pair::Duplicate("expected", x));
            continue;
        }
        match by_key.get(&k) {
            Some(y) => pairs.push(Pair::Both(x, y)),
            None => pairs.push(Pair::Missing(x)),
        }
        seen.insert(k);
    }
    let mut done = HashSet::new();
    for y in a {
        let k = key(y);
        if !seen.contains(&k) && done.insert(k) {
            pairs.push(Pair::Unexpected(y));
        }
    }
    pairs
}
