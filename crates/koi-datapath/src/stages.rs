//! Lookup stages for the megaflow classifier's staged lookup (PISCES §4.3, OVS's staged
//! lookup): the key's words grouped by header group in parse order, the architecture inputs
//! (ingress port, instance type, preserved metadata) first.
//!
//! A stage is the run of words one or more consecutive groups occupy; groups sharing a word
//! share a stage. The classifier hashes a subtable's masked words stage by stage and stops
//! at the first stage no megaflow of the subtable has, so a packet that differs from every
//! megaflow in its ingress port or Ethernet header costs one or two words of hashing.
//!
//! Overrides by annotation (`@koi_stage(N)` on a header type or instance) are not
//! supported: lowering does not keep annotations on PHV headers (`koi_ir::phv::Header` has
//! none, and the pipeline's type table only lists the types the control plane sees), so only
//! the default grouping is produced.

use crate::flowkey::FlowKeyLayout;
use std::ops::Range;

/// The stages of `layout`'s key: word ranges in lookup order, partitioning
/// `0..layout.key_words()`; what `koi_cache::ClassifierConfig::stages` takes.
pub fn stages(layout: &FlowKeyLayout) -> Vec<Range<usize>> {
    let words = layout.key_words();
    let mut out: Vec<Range<usize>> = Vec::new();
    for g in layout.groups() {
        let r = g.words.start.min(words)..g.words.end.min(words);
        if r.is_empty() {
            continue;
        }
        match out.last_mut() {
            Some(last) if r.start < last.end => last.end = last.end.max(r.end),
            Some(last) if r.start > last.end => {
                // Padding words between groups go to the earlier stage.
                last.end = r.start;
                out.push(r);
            }
            _ => out.push(r),
        }
    }
    match out.last_mut() {
        Some(last) => last.end = words,
        None => out.push(0..words),
    }
    out
}
