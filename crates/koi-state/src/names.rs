//! Resolving the names the control plane writes to objects of the pipeline.
//!
//! A name is looked up as p4c's runners and simple_switch_CLI do: first an exact match on
//! the full control-plane name (`MyIngress.ipv4_lpm`); then a unique object whose name ends
//! with `.` and the name (`ipv4_lpm`, `MyIngress.ipv4_lpm`: simple_switch_CLI's suffix map);
//! then a unique object whose name ends with the name as a plain string (`v4_lpm`: p4c's STF
//! runner, `tableByName` in `bmv2stf.py`). More than one candidate at a step is an error, not a
//! guess.

use crate::error::{Result, StateError};

/// Resolves `query` among `items` (name, value) by the rules of the module doc.
pub fn resolve<'a, T: Copy>(
    kind: &'static str,
    query: &str,
    items: impl Iterator<Item = (&'a str, T)> + Clone,
) -> Result<T> {
    if let Some((_, v)) = items.clone().find(|(n, _)| *n == query) {
        return Ok(v);
    }
    let dotted = format!(".{query}");
    if let Some(v) = unique(
        kind,
        query,
        items.clone().filter(|(n, _)| n.ends_with(&dotted)),
    )? {
        return Ok(v);
    }
    match unique(kind, query, items.filter(|(n, _)| n.ends_with(query)))? {
        Some(v) => Ok(v),
        None => Err(StateError::Unknown {
            kind,
            name: query.to_string(),
        }),
    }
}

/// The only candidate, `None` if there is none, an error if there are several.
fn unique<'a, T: Copy>(
    kind: &'static str,
    query: &str,
    mut candidates: impl Iterator<Item = (&'a str, T)>,
) -> Result<Option<T>> {
    let Some((first, v)) = candidates.next() else {
        return Ok(None);
    };
    let rest: Vec<&str> = candidates.map(|(n, _)| n).collect();
    if rest.is_empty() {
        return Ok(Some(v));
    }
    let mut all = vec![first];
    all.extend(rest);
    Err(StateError::Ambiguous {
        kind,
        name: query.to_string(),
        candidates: all.join(", "),
    })
}

/// Resolves an STF key field name to a key position, as p4c's bmv2 runner does
/// (`TableKeyInstance.set`, STF.md §4.1): `$N` already rewritten to `[N]` by the reader; an
/// exact match, then `name$`, then `name.$valid$`, then `X.valid` as `X.$valid$`; otherwise
/// any key ending with `.name` or `.name$`, the last such key winning.
pub fn resolve_key_field(keys: &[&str], name: &str) -> Option<usize> {
    let exact = |want: &str| keys.iter().position(|k| *k == want);
    let valid_form = name.strip_suffix(".valid").map(|x| format!("{x}.$valid$"));
    exact(name)
        .or_else(|| exact(&format!("{name}$")))
        .or_else(|| exact(&format!("{name}.$valid$")))
        .or_else(|| valid_form.as_deref().and_then(exact))
        .or_else(|| {
            let (a, b) = (format!(".{name}"), format!(".{name}$"));
            keys.iter()
                .rposition(|k| k.ends_with(&a) || k.ends_with(&b))
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    const NAMES: [(&str, u32); 4] = [
        ("MyIngress.ipv4_lpm", 0),
        ("MyIngress.c.t", 1),
        ("MyEgress.c.t", 2),
        ("ingress.t1", 3),
    ];

    fn r(q: &str) -> Result<u32> {
        resolve("table", q, NAMES.iter().copied())
    }

    #[test]
    fn exact_then_dotted_then_plain_suffix() {
        assert_eq!(r("MyIngress.ipv4_lpm"), Ok(0));
        assert_eq!(r("ipv4_lpm"), Ok(0));
        assert_eq!(r("v4_lpm"), Ok(0));
        assert_eq!(r("MyIngress.c.t"), Ok(1));
        assert_eq!(r("t1"), Ok(3));
        assert!(matches!(r("c.t"), Err(StateError::Ambiguous { .. })));
        assert!(matches!(r("nope"), Err(StateError::Unknown { .. })));
        // "t" is a dotted suffix of three tables: ambiguous, not a guess.
        assert!(matches!(r("t"), Err(StateError::Ambiguous { .. })));
    }

    #[test]
    fn key_fields_resolve_like_the_stf_runner() {
        let keys = [
            "hdr.ipv4.dstAddr",
            "hdr.h.$valid$",
            "standard_metadata.mcast_grp",
            "x[7:0]",
            "hdr.s[0].f",
        ];
        assert_eq!(resolve_key_field(&keys, "hdr.ipv4.dstAddr"), Some(0));
        assert_eq!(resolve_key_field(&keys, "ipv4.dstAddr"), Some(0));
        assert_eq!(resolve_key_field(&keys, "hdr.h.$valid"), Some(1));
        assert_eq!(resolve_key_field(&keys, "hdr.h"), Some(1));
        assert_eq!(resolve_key_field(&keys, "hdr.h.valid"), Some(1));
        assert_eq!(resolve_key_field(&keys, "mcast_grp"), Some(2));
        assert_eq!(resolve_key_field(&keys, "x[7:0]"), Some(3));
        assert_eq!(resolve_key_field(&keys, "s[0].f"), Some(4));
        assert_eq!(resolve_key_field(&keys, "nope"), None);
        let dup = ["a.f", "b.f"];
        assert_eq!(resolve_key_field(&dup, "f"), Some(1));
    }
}
