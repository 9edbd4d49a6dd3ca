//! Lookup stages for the megaflow classifier's staged lookup (PISCES §4.3, OVS's staged
//! lookup): the key's words grouped by header group, by default in key order (the
//! architecture inputs, such as the ingress port, instance type and preserved metadata,
//! first, then the headers in parse order), reordered by `@koi_stage(N)` annotations.
//!
//! The classifier hashes a subtable's masked words stage by stage and stops at the first
//! stage no megaflow of the subtable has, so a packet that differs from every megaflow in its
//! ingress port or Ethernet header costs one or two words of hashing. A program can put the
//! fields that tell its flows apart first (say, the IPv4 header of a router that serves few
//! VLANs) by annotating header instances or types:
//!
//! ```text
//! @koi_stage(1) header ipv4_t { ... }      // every ipv4_t header
//! struct headers_t {
//!     @koi_stage(0) ipv4_t ipv4;           // this instance (overrides the type's)
//!     ...
//! }
//! ```
//!
//! Lowering keeps the annotation as the header's [`koi_ir::phv::Header::stage`] (one on a
//! struct field applies to every header below it, on a stack to its elements, on a union to
//! its members unless a member's own field has one; a malformed one is a warning and is
//! ignored), and the layout copies it to the header's
//! [`KeyGroup::stage`](crate::KeyGroup::stage). The rule:
//!
//! 1. Each group of [`FlowKeyLayout::groups`] has a **stage number**: its `@koi_stage(N)`,
//!    or, without one, its index in the groups (0, 1, 2, ... in key order; the key printout
//!    lists the groups in that order).
//! 2. Each key word gets the smallest number of the groups with bits in it (a word belongs to
//!    one stage; a small header packed into the tail of a larger one's last word goes with
//!    whichever is looked up first). A word no group touches (none today) takes the number
//!    of the word before it.
//! 3. The words with equal numbers form one stage; stages are looked up by increasing number.
//!
//! Without annotations the numbers increase along the key, so the stages are the groups' word
//! runs in key order. The classifier takes stages as word ranges
//! (`koi_cache::ClassifierConfig::stages`), so a stage whose words are not contiguous is
//! given as its runs of consecutive words, one after the other in lookup order: one filter
//! check per run instead of one per stage, the same answers.

use crate::flowkey::FlowKeyLayout;
use std::ops::Range;

/// The stages of `layout`'s key: word ranges in lookup order, partitioning
/// `0..layout.key_words()`; what `koi_cache::ClassifierConfig::stages` takes.
pub fn stages(layout: &FlowKeyLayout) -> Vec<Range<usize>> {
    stages_of(
        layout.key_words(),
        layout.groups().iter().map(|g| (g.words.clone(), g.stage)),
    )
}

/// The stages of a key of `words` words whose groups, in key order, occupy the given word
/// ranges with the given stage hints (the rule of the module documentation).
fn stages_of(
    words: usize,
    groups: impl Iterator<Item = (Range<usize>, Option<u32>)>,
) -> Vec<Range<usize>> {
    // Step 1 and 2: the number of every word touched by a group.
    let mut number: Vec<Option<u64>> = vec![None; words];
    for (i, (r, hint)) in groups.enumerate() {
        let n = hint.map_or(i as u64, u64::from);
        let (start, end) = (r.start.min(words), r.end.min(words));
        for x in number.get_mut(start..end).unwrap_or_default() {
            *x = Some(x.map_or(n, |m| m.min(n)));
        }
    }
    // Untouched words: the number of the word before (or, at the start, of the first touched).
    let Some(first) = number.iter().copied().flatten().next() else {
        return std::iter::once(0..words).collect();
    };
    let mut prev = first;
    let number: Vec<u64> = number
        .into_iter()
        .map(|n| {
            prev = n.unwrap_or(prev);
            prev
        })
        .collect();
    // Step 3: stages by increasing number; each stage's words as runs of consecutive words.
    let mut order: Vec<usize> = (0..words).collect();
    order.sort_by_key(|&w| (number[w], w));
    let mut out: Vec<Range<usize>> = Vec::new();
    for w in order {
        match out.last_mut() {
            Some(last) if last.end == w && number[last.start] == number[w] => last.end = w + 1,
            _ => out.push(w..w + 1),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Compiles `src`; returns the pipeline and the rendered warnings.
    fn compile(src: &str) -> (koi_ir::Pipeline, String) {
        let opts = koi_syntax::PpOptions::default();
        let (sm, program, diags) = koi_syntax::parse_str("test.p4", src, &opts);
        let render = |d: &koi_syntax::Diagnostics| -> String {
            d.list.iter().map(|x| x.render(&sm)).collect()
        };
        assert!(!diags.has_errors(), "{}", render(&diags));
        let (checked, sdiags) = koi_sema::check(&program, &koi_sema::CheckOptions::default());
        assert!(!sdiags.has_errors(), "{}", render(&sdiags));
        let p = koi_lower::lower(&program, &checked).unwrap_or_else(|d| panic!("{}", render(&d)));
        (p, render(&sdiags))
    }

    /// A router keyed on the ingress port, Ethernet, IPv4 and TCP fields, with annotations
    /// spliced in: `eth`, `ipv4`, `tcp` before each instance of the headers struct and
    /// `ipv4_t` before the IPv4 header type. Panics on any diagnostic.
    fn router(eth: &str, ipv4: &str, tcp: &str, ipv4_t: &str) -> koi_ir::Pipeline {
        let (p, warnings) = router_warnings(eth, ipv4, tcp, ipv4_t);
        assert!(warnings.is_empty(), "{warnings}");
        p
    }

    fn router_warnings(
        eth: &str,
        ipv4: &str,
        tcp: &str,
        ipv4_t: &str,
    ) -> (koi_ir::Pipeline, String) {
        compile(&format!(
            r#"
#include <core.p4>
#include <v1model.p4>
header eth_t {{ bit<48> dst; bit<48> src; bit<16> type; }}
{ipv4_t} header ipv4_t {{ bit<8> ttl; bit<8> proto; bit<16> csum; bit<32> src; bit<32> dst; }}
header tcp_t {{ bit<16> sport; bit<16> dport; bit<32> seq; }}
struct headers {{ {eth} eth_t eth; {ipv4} ipv4_t ipv4; {tcp} tcp_t tcp; }}
struct meta_t {{ bit<8> x; }}
parser P(packet_in pkt, out headers hdr, inout meta_t meta, inout standard_metadata_t sm) {{
    state start {{
        pkt.extract(hdr.eth);
        transition select(hdr.eth.type) {{ 0x800: ip; default: accept; }}
    }}
    state ip {{
        pkt.extract(hdr.ipv4);
        transition select(hdr.ipv4.proto) {{ 6: tcp; default: accept; }}
    }}
    state tcp {{ pkt.extract(hdr.tcp); transition accept; }}
}}
control I(inout headers hdr, inout meta_t meta, inout standard_metadata_t sm) {{
    action to(bit<9> p) {{ sm.egress_spec = p; }}
    table t {{
        key = {{
            sm.ingress_port: exact; hdr.eth.dst: exact; hdr.ipv4.src: exact;
            hdr.ipv4.dst: exact; hdr.tcp.dport: exact; hdr.tcp.seq: exact;
        }}
        actions = {{ to; }}
    }}
    apply {{ t.apply(); }}
}}
control V(inout headers hdr, inout meta_t meta) {{ apply {{ }} }}
control E(inout headers hdr, inout meta_t meta, inout standard_metadata_t sm) {{ apply {{ }} }}
control C(inout headers hdr, inout meta_t meta) {{ apply {{ }} }}
control D(packet_out pkt, in headers hdr) {{ apply {{ pkt.emit(hdr); }} }}
V1Switch(P(), V(), I(), E(), C(), D()) main;
"#
        ))
    }

    /// `(name, words, stage hint)` of each group.
    fn groups(l: &FlowKeyLayout) -> Vec<(String, Range<usize>, Option<u32>)> {
        l.groups()
            .iter()
            .map(|g| (g.name.clone(), g.words.clone(), g.stage))
            .collect()
    }

    /// The stages of `router`'s key, checked against the classifier's validation.
    fn router_stages(eth: &str, ipv4: &str, tcp: &str, ipv4_t: &str) -> Vec<Range<usize>> {
        let l = FlowKeyLayout::new(&router(eth, ipv4, tcp, ipv4_t));
        let st = stages(&l);
        koi_cache::StageLayout::new(l.key_words(), &st).unwrap_or_else(|e| panic!("{e}"));
        st
    }

    #[test]
    fn annotations_reorder_the_stages() {
        let l = FlowKeyLayout::new(&router("", "@koi_stage(2)", "", "@koi_stage(6)"));
        println!("{l}");
        // The key: the ingress port; eth validity, dst, type (65 bits: a new word, and one bit
        // of the next); ipv4 validity, proto, src, dst (73 bits: too many for the rest of
        // word 2); tcp validity, dport, seq (49 bits: they fit the rest of ipv4's last word);
        // where a parse stopped short (24 bits: too many for the 6 left, a word of its own,
        // which no group touches and which goes with the word before it).
        let g = |n: &str, w: Range<usize>, s: Option<u32>| (n.to_string(), w, s);
        assert_eq!(
            groups(&l),
            [
                g("architecture", 0..1, None),
                g("hdr.eth", 1..3, None),
                g("hdr.ipv4", 3..5, Some(2)),
                g("hdr.tcp", 4..5, None),
            ]
        );
        assert_eq!(l.key_words(), 6);
        // Default numbers: architecture 0, eth 1, ipv4 2, tcp 3: key order (word 4, shared
        // by ipv4 and tcp, goes with ipv4).
        assert_eq!(router_stages("", "", "", ""), [0..1, 1..3, 3..6]);
        // The instance annotation `@koi_stage(2)` wins over the type's `@koi_stage(6)`;
        // 2 is ipv4's default number anyway.
        assert_eq!(stages(&l), [0..1, 1..3, 3..6]);
        // The type's annotation alone: ipv4 after everything but the word tcp shares with it.
        assert_eq!(
            router_stages("", "", "", "@koi_stage(6)"),
            [0..1, 1..3, 4..6, 3..4]
        );
        // IPv4 in stage 0, with the architecture inputs (tcp's word comes along: it is
        // ipv4's last word), then Ethernet.
        assert_eq!(
            router_stages("", "@koi_stage(0)", "", "@koi_stage(6)"),
            [0..1, 3..6, 1..3]
        );
        // TCP in stage 0 with the architecture inputs (equal numbers are one stage, given as
        // two runs); the word it shares with IPv4 goes to the smaller number; Ethernet last.
        assert_eq!(
            router_stages("@koi_stage(9)", "", "@koi_stage(0)", ""),
            [0..1, 4..6, 3..4, 1..3]
        );
        // Ethernet and TCP in stage 2, IPv4 after them in 7.
        assert_eq!(
            router_stages("@koi_stage(2)", "@koi_stage(7)", "@koi_stage(2)", ""),
            [0..1, 1..3, 4..6, 3..4]
        );
    }

    #[test]
    fn a_malformed_annotation_warns_and_is_ignored() {
        let (p, warnings) = router_warnings("", "@koi_stage(first)", "@koi_stage(0)", "");
        // Line 7 of the program text, the instance's annotation.
        assert!(
            warnings.starts_with("test.p4:7:") && warnings.contains("warning: @koi_stage:"),
            "{warnings}"
        );
        assert_eq!(warnings.matches("warning").count(), 1, "{warnings}");
        let l = FlowKeyLayout::new(&p);
        assert_eq!(
            l.groups().iter().map(|g| g.stage).collect::<Vec<_>>(),
            [None, None, None, Some(0)]
        );
        // The well-formed one on tcp still applies.
        assert_eq!(stages(&l), [0..1, 4..6, 1..3, 3..4]);
    }

    #[test]
    fn the_rule_on_synthetic_groups() {
        // Default: key order, shared words with the earlier group.
        let d = |r: Range<usize>| (r, None);
        assert_eq!(
            stages_of(4, [d(0..1), d(1..3), d(2..3), d(3..4)].into_iter()),
            [0..1, 1..3, 3..4]
        );
        // Words no group touches go with the word before; leading ones with the first.
        assert_eq!(stages_of(6, [d(1..2), d(3..4)].into_iter()), [0..3, 3..6]);
        let none = stages_of(3, std::iter::empty());
        assert_eq!((none.len(), none.first()), (1, Some(&(0..3))));
        // A hint replaces the number; equal numbers merge, non-contiguous words as runs.
        assert_eq!(
            stages_of(
                4,
                [d(0..1), (1..2, Some(5)), (2..3, Some(0)), d(3..4)].into_iter()
            ),
            [0..1, 2..3, 3..4, 1..2]
        );
        // Large hints sort after every default number.
        assert_eq!(
            stages_of(2, [(0..1, Some(u32::MAX)), d(1..2)].into_iter()),
            [1..2, 0..1]
        );
        // Groups beyond the key are clipped.
        assert_eq!(stages_of(2, [d(0..1), d(1..9)].into_iter()), [0..1, 1..2]);
    }

    proptest! {
        /// Whatever the groups and hints, the stages partition the key and the classifier
        /// accepts them; a stage's runs are consecutive.
        #[test]
        fn stages_always_partition_the_key(
            words in 1usize..12,
            groups in proptest::collection::vec((0usize..14, 0usize..4, proptest::option::of(0u32..6)), 0..8),
        ) {
            let gs: Vec<(Range<usize>, Option<u32>)> =
                groups.iter().map(|&(s, len, h)| (s..s + len, h)).collect();
            let st = stages_of(words, gs.iter().cloned());
            let mut seen = vec![false; words];
            for r in &st {
                prop_assert!(r.start < r.end && r.end <= words);
                for w in r.clone() {
                    prop_assert!(!std::mem::replace(&mut seen[w], true));
                }
            }
            prop_assert!(seen.iter().all(|&x| x));
            prop_assert!(koi_cache::StageLayout::new(words, &st).is_ok());
        }
    }
}
