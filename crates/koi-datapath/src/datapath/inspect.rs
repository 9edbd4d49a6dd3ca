//! Looking into a datapath, and changing its caches from the control plane: what it holds
//! (`dump_flows`, cache info, counters), and the invalidations that table writes call.

use super::*;

impl Datapath<'_> {
    /// Whether the program has a specialised parser (without one, every packet takes the
    /// interpreter's parser and hits are replayed).
    pub fn has_fast_parser(&self) -> bool {
        self.fast.is_some()
    }

    /// The installed megaflows, like `ovs-appctl dpctl/dump-flows`: for each, its hits, the
    /// key fields its mask covers (`name=value/mask` in hex) and its compiled program, marked
    /// `(native)` once it runs as native code (or `replay` with the number of recorded
    /// steps). At most `limit` megaflows.
    pub fn dump_flows(&self, limit: usize) -> Vec<String> {
        let c = self.cache.classifier();
        c.iter()
            .take(limit)
            .map(|(id, flow)| {
                let mut s = format!("hits={} ", c.hits(id).unwrap_or(0));
                if let Some(mask) = c.mask(id) {
                    s.push_str(&self.layout.describe(mask, &flow.key));
                }
                match &flow.program {
                    Some(_) => {
                        for (i, p) in flow.programs().enumerate() {
                            if let Some(arm) = i.checked_sub(1).and_then(|a| flow.arms.get(a)) {
                                s.push_str(&format!("  else (arm {i}"));
                                if !arm.extra.is_empty() {
                                    // The key bits the arm matches beyond the megaflow's mask.
                                    let (mut m, mut k) =
                                        (vec![0; flow.key.len()], flow.key.clone());
                                    for &(w, bits, v) in &arm.extra {
                                        if let (Some(x), Some(y)) = (m.get_mut(w), k.get_mut(w)) {
                                            *x = bits;
                                            *y = (*y & !bits) | v;
                                        }
                                    }
                                    s.push_str(", where ");
                                    s.push_str(&self.layout.describe(&m, &k));
                                }
                                s.push(')');
                            }
                            s.push_str(if p.is_native() {
                                " actions (native):\n"
                            } else {
                                " actions:\n"
                            });
                            for l in p.to_string().lines() {
                                s.push_str("    ");
                                s.push_str(l);
                                s.push('\n');
                            }
                        }
                    }
                    None => s.push_str(&format!(" replay of {} steps\n", flow.recording.len())),
                }
                s
            })
            .collect()
    }

    /// Why installed megaflows got no compiled program, with counts.
    pub fn not_compiled_reasons(&self) -> &BTreeMap<&'static str, u64> {
        &self.reasons
    }

    /// The configuration.
    pub fn config(&self) -> &DatapathConfig {
        &self.config
    }

    /// Sizes of the caches (O(microflow entries): for reports, not per packet).
    pub fn cache_info(&self) -> CacheInfo {
        let c = self.cache.classifier();
        CacheInfo {
            megaflows: c.len(),
            max_megaflows: c.limit(),
            compiled: c.iter().filter(|(_, m)| m.is_compiled()).count(),
            native: c
                .iter()
                .filter(|(_, m)| m.program.as_ref().is_some_and(|p| p.is_native()))
                .count(),
            guarded: c.iter().filter(|(_, m)| m.guarded).count(),
            guarded_programs: c
                .iter()
                .filter(|(_, m)| m.guarded)
                .map(|(_, m)| m.programs().count())
                .sum(),
            subtables: c.subtable_count(),
            microflows: self.cache.microflow().map_or(0, |m| m.occupied()),
            microflow_capacity: self.cache.microflow().map_or(0, |m| m.capacity()),
            signature_capacity: self.cache.signatures().map_or(0, |s| s.capacity()),
            microflow_bypassed: self.cache.microflow_bypassed(),
            memory_bytes: self.cache.memory_bytes(),
            on_probation: c.on_probation(),
            evictions: c.stats().evictions,
            probation_evictions: c.stats().probation_evictions,
        }
    }

    /// Zeroes the counters (for benchmarks after a warm-up).
    pub fn reset_stats(&mut self) {
        self.stats = DatapathStats::default();
        self.cache_base = self.cache_counts();
        self.templates.hits = 0;
        self.templates.parses = 0;
    }

    /// The flow cache's own counters behind [`DatapathStats::signature_hits`] and
    /// [`DatapathStats::microflow_bypassed`].
    pub(super) fn cache_counts(&self) -> (u64, u64) {
        (
            self.cache.signatures().map_or(0, |s| s.stats().hits),
            self.cache.bypassed_lookups(),
        )
    }

    /// The flow-key layout.
    pub fn layout(&self) -> &FlowKeyLayout {
        &self.layout
    }

    /// The counters.
    pub fn stats(&self) -> DatapathStats {
        let mut s = self.stats;
        s.jit_mismatch += self.templates.native_mismatch;
        s.jit_templates = self.templates.native;
        s.jit_modules = self.jit.live() as u64;
        s.template_hits = self.templates.hits;
        s.template_guesses = self.templates.guessed;
        s.full_parses = self.templates.parses;
        let (hits, bypassed) = self.cache_counts();
        s.signature_hits = hits.wrapping_sub(self.cache_base.0);
        s.microflow_bypassed = bypassed.wrapping_sub(self.cache_base.1);
        s
    }

    /// Megaflows installed now.
    pub fn megaflows(&self) -> usize {
        self.cache.classifier().len()
    }

    /// A write to table `t` (entry added, modified or removed, default action changed):
    /// removes the megaflows that applied it. Call before the next packet.
    pub fn on_table_write(&mut self, t: TableId) {
        self.invalidate_tagged(t.index());
    }

    /// A change to entry `index` of table `t` (its action, parameters or direct meter, or its
    /// removal): removes the megaflows that hit that entry. Packets that hit another entry or
    /// missed are decided as before. Call before the next packet.
    pub fn on_entry_write(&mut self, t: TableId, index: u32) {
        self.invalidate_tagged(entry_tag(t, Some(index)));
    }

    /// A change to what misses table `t` (its default action, or an entry added to a table
    /// whose keys are all exact, which only a packet that missed can now hit): removes the
    /// megaflows that missed the table. Call before the next packet.
    pub fn on_table_misses(&mut self, t: TableId) {
        self.invalidate_tagged(entry_tag(t, None));
    }

    /// Removes the megaflows tagged `tag` and empties the trace memo.
    pub(super) fn invalidate_tagged(&mut self, tag: u32) {
        self.memo.clear();
        let n = self.cache.classifier_mut().remove_tagged(tag);
        self.stats.invalidated += n as u64;
    }

    /// Removes every megaflow, like `ovs-appctl dpctl/del-flows`, with no control-plane
    /// change: the trace memo is kept.
    pub fn flush(&mut self) {
        let n = self.cache.classifier_mut().clear();
        self.stats.invalidated += n as u64;
    }

    /// Removes every megaflow (for control-plane changes not tied to one table).
    pub fn invalidate_all(&mut self) {
        self.memo.clear();
        let n = self.cache.classifier_mut().clear();
        self.stats.invalidated += n as u64;
    }
}
