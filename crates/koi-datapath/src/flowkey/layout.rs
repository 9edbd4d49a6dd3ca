//! The key layout and its uses: packing, extraction from a PHV, PHV masks to key masks, and
//! the printed table.

use super::Decision;
use super::closure::{self, Closure};
use super::facts::{Facts, Origin, ParseItem};
use super::hashkey::{self, HashKey};
use koi_ir::entity::EntityId;
use koi_ir::{Bits, HeaderId, Pipeline, SlotId, SlotKind};
use std::fmt;
use std::ops::Range;

/// Where a key field's value comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Source {
    /// Parsed from the packet: a header field or validity bit written by `extract`, a
    /// stack's next index, a `lookahead` destination.
    Packet,
    /// Given by the architecture when the packet arrives: ingress port, packet length,
    /// instance type, metadata preserved across resubmit/recirculate/clone.
    Architecture,
}

impl Source {
    pub fn name(self) -> &'static str {
        match self {
            Source::Packet => "packet",
            Source::Architecture => "architecture",
        }
    }
}

/// One field of the key: bits of one PHV slot.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KeyField {
    pub slot: SlotId,
    /// The slot's name (`hdr.ipv4.dst`, `hdr.vlan.$valid`, `std.ingress_port`).
    pub name: String,
    /// The header the slot belongs to (fields, validity, varbit lengths).
    pub header: Option<HeaderId>,
    /// PHV bit offset of the field's first (most significant) bit.
    pub phv_offset: u32,
    /// Width in bits: the slot's, or less when decisions need only some of its bits.
    pub width: u32,
    /// The slot's width.
    pub slot_width: u32,
    /// Value bit index (0 = least significant) of the field's lowest bit within the slot.
    pub lsb: u32,
    /// Key bit offset of the field's first bit (key bit `k` is bit `63 - k % 64` of word
    /// `k / 64`: most significant first, as in the PHV).
    pub key_offset: u32,
    pub source: Source,
}

/// A group of consecutive key fields: one header, a lookahead, or the architecture inputs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KeyGroup {
    pub name: String,
    pub header: Option<HeaderId>,
    /// The header's lookup-stage hint (`@koi_stage(N)`, see [`crate::stages`](mod@crate::stages)).
    pub stage: Option<u32>,
    /// Indices into [`FlowKeyLayout::fields`].
    pub fields: Range<usize>,
    /// The key words the group's bits occupy.
    pub words: Range<usize>,
}

/// Key bits (the low bits of the last key word) that tell where a parse stopped short.
pub const STOP_BITS: u32 = 24;
const STOP_MASK: u64 = (1 << STOP_BITS) - 1;

/// [`FlowKeyLayout::set_stop`] with the layout's stop word `word`.
#[inline]
pub(crate) fn write_stop(key: &mut [u64], word: usize, needed_bits: u64) {
    if let Some(w) = key.get_mut(word) {
        *w = (*w & !STOP_MASK) | needed_bits.min(STOP_MASK);
    }
}

/// Whether a key mask covers an influence report.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Coverage {
    /// The key bits set describe the influence exactly or conservatively.
    Covered,
    /// The slot may hold a state-derived value: the decision must not be cached.
    StateDependent,
    /// Some influencing bits are outside the key (the analysis does not know the slot, or
    /// the bits): do not cache.
    Uncovered,
}

/// A bit copy from the PHV to the key (at most 64 bits).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct CopyOp {
    phv: u32,
    key: u32,
    len: u32,
}

/// What mapping an influence on one slot needs.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
struct SlotCover {
    in_closure: bool,
    tainted: bool,
    /// The key field of the slot itself.
    field: Option<usize>,
    /// Key words and bits of the key fields its value may be computed from.
    derived: Vec<(usize, u64)>,
}

/// The flow key of one pipeline: fields, packing, decisions, parser specialisation info.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FlowKeyLayout {
    fields: Vec<KeyField>,
    groups: Vec<KeyGroup>,
    bits: u32,
    words: usize,
    /// The word whose low [`STOP_BITS`] bits hold where the parse stopped short
    /// ([`FlowKeyLayout::set_stop`]): the last, or one more when the fields leave too little
    /// room in it.
    stop_word: usize,
    decisions: Vec<Decision>,
    opaque: Vec<HeaderId>,
    opaque_names: Vec<String>,
    ops: Vec<CopyOp>,
    cover: Vec<SlotCover>,
    /// Per slot: whether it holds state when the packet arrives (a timestamp, a queue depth).
    state_input: Vec<bool>,
    /// Hashes computed into the key, each in a word of its own after the fields
    /// ([`super::hashkey`]).
    hash_keys: Vec<HashKey>,
    /// PSA: whether CLONE_I2E and CLONE_E2E copies' egress parses are modelled (`Facts`).
    psa_clones: [bool; 2],
    /// The slots of the headers a resubmitted (`[0]`) or recirculated (`[1]`) packet holds
    /// for its next parse, where that pass is modelled (`Facts::next_passes`).
    next_pass: [Option<Vec<SlotId>>; 2],
}

impl FlowKeyLayout {
    /// Analyses `p` and lays its flow key out.
    pub fn new(p: &Pipeline) -> FlowKeyLayout {
        let facts = Facts::gather(p);
        let cl = closure::run(&facts);
        let mut source: Vec<Option<Source>> = facts
            .arch_input
            .iter()
            .map(|&a| a.then_some(Source::Architecture))
            .collect();
        for w in &facts.writes {
            let s = match w.origin {
                Origin::Packet => Source::Packet,
                Origin::Arch => Source::Architecture,
                _ => continue,
            };
            if let Some(x) = source.get_mut(w.dst)
                && x.is_none()
            {
                *x = Some(s);
            }
        }
        let mut l = FlowKeyLayout {
            fields: Vec::new(),
            groups: Vec::new(),
            bits: 0,
            words: 1,
            stop_word: 0,
            decisions: Vec::new(),
            opaque: Vec::new(),
            opaque_names: Vec::new(),
            ops: Vec::new(),
            cover: Vec::new(),
            state_input: facts.state_input.clone(),
            psa_clones: facts.psa_clones,
            next_pass: facts.next_pass.clone(),
            hash_keys: Vec::new(),
        };
        l.pack(&facts, &cl, &source);
        l.copy_ops();
        l.covers(&facts, &cl, &source);
        l.decisions = facts
            .decisions
            .iter()
            .zip(&cl.decision_reads)
            .zip(&cl.state_dependent)
            .map(|((d, r), &st)| Decision {
                kind: d.kind,
                location: d.location.clone(),
                reads: r
                    .iter()
                    .filter(|&&n| n < facts.nslots)
                    .map(|&n| SlotId::new(n as u32))
                    .collect(),
                state_dependent: st,
            })
            .collect();
        l.opaque(&facts, &source);
        l
    }

    /// Groups the key slots (header by header in parse order, architecture inputs first) and
    /// assigns key offsets.
    fn pack(&mut self, f: &Facts<'_>, cl: &Closure, source: &[Option<Source>]) {
        let p = f.p;
        let header_of = |s: SlotId| -> Option<HeaderId> {
            match p.phv.slots.get(s)?.kind {
                SlotKind::HeaderField(h) | SlotKind::Validity(h) => Some(h),
                SlotKind::VarbitLength(v) => match p.phv.slots.get(v)?.kind {
                    SlotKind::HeaderField(h) => Some(h),
                    _ => None,
                },
                SlotKind::NextIndex(st) => p.phv.stacks.get(st)?.elems.first().copied(),
                _ => None,
            }
        };
        let key_slot = |n: usize| {
            cl.demand.get(n).is_some_and(Option::is_some)
                && source.get(n).is_some_and(Option::is_some)
        };
        let mut order: Vec<ParseItem> = f.parse_order.clone();
        for h in p.phv.headers.keys() {
            if !order.contains(&ParseItem::Header(h)) {
                order.push(ParseItem::Header(h));
            }
        }
        let mut groups: Vec<(String, Option<HeaderId>, Vec<SlotId>)> = Vec::new();
        let parse_slots: Vec<SlotId> = order
            .iter()
            .filter_map(|i| match i {
                ParseItem::Slot(s) => Some(*s),
                ParseItem::Header(_) => None,
            })
            .collect();
        let arch: Vec<SlotId> = (0..f.nslots)
            .filter(|&n| key_slot(n))
            .map(|n| SlotId::new(n as u32))
            .filter(|&s| header_of(s).is_none() && !parse_slots.contains(&s))
            .collect();
        if !arch.is_empty() {
            groups.push(("architecture".into(), None, arch));
        }
        for item in &order {
            match *item {
                ParseItem::Slot(s) if key_slot(s.index() as usize) => {
                    let name = p.phv.slots.get(s).map_or("?", |x| x.name.as_str());
                    groups.push((name.to_string(), None, vec![s]));
                }
                ParseItem::Slot(_) => {}
                ParseItem::Header(h) => {
                    let Some(hd) = p.phv.headers.get(h) else {
                        continue;
                    };
                    let mut slots = vec![hd.valid];
                    for &fs in &hd.fields {
                        slots.push(fs);
                        slots.extend(p.phv.slots.get(fs).and_then(|x| x.length));
                    }
                    if let Some((st, 0)) = hd.stack {
                        slots.extend(p.phv.stacks.get(st).map(|s| s.next_index));
                    }
                    slots.retain(|s| key_slot(s.index() as usize));
                    if !slots.is_empty() {
                        groups.push((hd.name.clone(), Some(h), slots));
                    }
                }
            }
        }
        let mut cursor: u32 = 0;
        for (name, header, slots) in groups {
            let spans: Vec<(SlotId, u32, u32)> = slots
                .iter()
                .filter_map(|&s| {
                    let slot = p.phv.slots.get(s)?;
                    let d = cl.demand.get(s.index() as usize)?.as_ref()?;
                    let (lsb, w) = demanded_span(d, slot.width);
                    Some((s, lsb, w))
                })
                .filter(|x| x.2 > 0)
                .collect();
            let total: u32 = spans.iter().map(|x| x.2).sum();
            let used = cursor % 64;
            if used != 0 && total > 64 - used {
                cursor = cursor.next_multiple_of(64);
            }
            let (start_field, start_bit) = (self.fields.len(), cursor);
            for (s, lsb, w) in spans {
                let Some(slot) = p.phv.slots.get(s) else {
                    continue;
                };
                self.fields.push(KeyField {
                    slot: s,
                    name: slot.name.clone(),
                    header: header_of(s),
                    phv_offset: slot.offset + (slot.width - lsb - w),
                    width: w,
                    slot_width: slot.width,
                    lsb,
                    key_offset: cursor,
                    source: source
                        .get(s.index() as usize)
                        .copied()
                        .flatten()
                        .unwrap_or(Source::Packet),
                });
                cursor += w;
            }
            let words = (start_bit / 64) as usize..(cursor.div_ceil(64) as usize).max(1);
            self.groups.push(KeyGroup {
                name,
                header,
                stage: header
                    .and_then(|h| p.phv.headers.get(h))
                    .and_then(|h| h.stage),
                fields: start_field..self.fields.len(),
                words,
            });
        }
        self.bits = self.fields.iter().map(|f| f.width).sum();
        let demanded: Vec<bool> = cl.demand.iter().map(Option::is_some).collect();
        self.hash_keys = hashkey::find(f, &demanded, &self.fields);
        for k in &mut self.hash_keys {
            cursor = cursor.next_multiple_of(64);
            k.key_offset = cursor;
            cursor += 64;
        }
        self.words = (cursor.div_ceil(64) as usize).max(1);
        if self.words as u32 * 64 - cursor < STOP_BITS {
            self.words += 1;
        }
        self.stop_word = self.words - 1;
    }

    /// The PHV-to-key copies, adjacent fields merged, split at 64 bits.
    fn copy_ops(&mut self) {
        let mut runs: Vec<CopyOp> = Vec::new();
        for f in &self.fields {
            match runs.last_mut() {
                Some(r) if r.phv + r.len == f.phv_offset && r.key + r.len == f.key_offset => {
                    r.len += f.width
                }
                _ => runs.push(CopyOp {
                    phv: f.phv_offset,
                    key: f.key_offset,
                    len: f.width,
                }),
            }
        }
        for r in runs {
            let mut done = 0;
            while done < r.len {
                let len = (r.len - done).min(64);
                self.ops.push(CopyOp {
                    phv: r.phv + done,
                    key: r.key + done,
                    len,
                });
                done += len;
            }
        }
    }

    /// Per slot: its own field, the key bits its value may derive from, its taint.
    fn covers(&mut self, f: &Facts<'_>, cl: &Closure, source: &[Option<Source>]) {
        let mut field_of = vec![None; f.nslots];
        for (i, k) in self.fields.iter().enumerate() {
            field_of[k.slot.index() as usize] = Some(i);
        }
        self.cover = vec![SlotCover::default(); f.nslots];
        let mut seen = vec![false; f.nnodes];
        for s in 0..f.nslots {
            if cl.demand[s].is_none() {
                continue;
            }
            let mut words = vec![0u64; self.words];
            seen.fill(false);
            seen[s] = true;
            let mut stack = vec![s];
            while let Some(n) = stack.pop() {
                if n != s
                    && n < f.nslots
                    && source[n].is_some()
                    && let Some(fi) = field_of[n]
                {
                    let k = &self.fields[fi];
                    set_range(&mut words, k.key_offset, k.width);
                }
                for &wi in cl.writes_to.get(n).map_or(&[][..], |v| &v[..]) {
                    for &m in &cl.src_nodes[wi] {
                        if !std::mem::replace(&mut seen[m], true) {
                            stack.push(m);
                        }
                    }
                }
            }
            self.cover[s] = SlotCover {
                in_closure: true,
                tainted: cl.tainted[s],
                field: field_of[s],
                derived: words
                    .iter()
                    .enumerate()
                    .filter(|(_, w)| **w != 0)
                    .map(|(i, w)| (i, *w))
                    .collect(),
            };
        }
    }

    /// Headers whose fields nothing reads or rewrites: the fast path may copy their bytes
    /// between packet and output without parsing fields.
    fn opaque(&mut self, f: &Facts<'_>, source: &[Option<Source>]) {
        let p = f.p;
        let mut rewritten = vec![false; f.nslots];
        for w in &f.writes {
            if w.origin != Origin::Packet && w.dst < f.nslots {
                rewritten[w.dst] = true;
            }
        }
        for (h, hd) in p.phv.headers.iter() {
            let valid = hd.valid.index() as usize;
            if source.get(valid) != Some(&Some(Source::Packet)) {
                continue;
            }
            let mut slots = Vec::new();
            for &fs in &hd.fields {
                slots.push(fs.index() as usize);
                slots.extend(
                    p.phv
                        .slots
                        .get(fs)
                        .and_then(|x| x.length)
                        .map(|l| l.index() as usize),
                );
            }
            if slots.iter().all(|&s| !f.read_anywhere[s] && !rewritten[s]) {
                self.opaque.push(h);
                self.opaque_names.push(hd.name.clone());
            }
        }
    }

    /// The key fields, in key order.
    pub fn fields(&self) -> &[KeyField] {
        &self.fields
    }

    /// The hashes computed into the key ([`super::hashkey`]), after the fields.
    pub fn hash_keys(&self) -> &[HashKey] {
        &self.hash_keys
    }

    /// The key words the hash keys take (one each, consecutive): a function of the other
    /// words, so the cache's lookup hash leaves them out ([`koi_cache::FlowCache::exclude_from_hash`]).
    pub fn hash_key_words(&self) -> std::ops::Range<usize> {
        match (self.hash_keys.first(), self.hash_keys.last()) {
            (Some(a), Some(b)) => (a.key_offset / 64) as usize..(b.key_offset / 64) as usize + 1,
            _ => 0..0,
        }
    }

    /// Computes every hash key of `key` from its fields.
    #[inline]
    pub(crate) fn fill_hash_keys(&self, key: &mut [u64], buf: &mut hashkey::HashBuf) {
        for k in &self.hash_keys {
            k.fill(key, buf);
        }
    }

    /// Computes the hash keys of `key` in set `used` (bit `i`: hash key `i`; those past 64
    /// always), and zeroes the others: a megaflow that matches none of a hash key's bits
    /// does not need it, and the fast path need not pay for it.
    #[inline]
    pub(crate) fn fill_used_hash_keys(
        &self,
        key: &mut [u64],
        buf: &mut hashkey::HashBuf,
        used: u64,
    ) {
        for (i, k) in self.hash_keys.iter().enumerate() {
            if i >= 64 || used >> i & 1 == 1 {
                k.fill(key, buf);
            } else if let Some(w) = key.get_mut((k.key_offset / 64) as usize) {
                *w = 0;
            }
        }
    }

    /// The hash key statement `s` computes, if it is one.
    pub(crate) fn hash_key_of(&self, s: &koi_ir::Stmt) -> Option<usize> {
        let a = hashkey::addr(s);
        self.hash_keys.iter().position(|k| k.stmt == a)
    }

    /// The field groups, in key order.
    pub fn groups(&self) -> &[KeyGroup] {
        &self.groups
    }

    /// The key width in `u64` words (at least 1: an empty key is one zero word).
    pub fn key_words(&self) -> usize {
        self.words
    }

    /// Writes into `key` that its packet was too short for its parse, which needed
    /// `needed_bits` bits of it (`PacketTooShort`; 0: the packet was long enough). Every
    /// megaflow matches this value ([`FlowKeyLayout::stop_mask`]): the packets of one stopped
    /// where its run's did, and a packet long enough for its parse never shares a megaflow
    /// with one that was not. (Needs above `2^STOP_BITS - 1` bits share the largest value;
    /// a megaflow's length bounds tell them apart.)
    pub fn set_stop(&self, key: &mut [u64], needed_bits: u64) {
        write_stop(key, self.stop_word, needed_bits);
    }

    /// The word [`FlowKeyLayout::set_stop`] writes.
    pub(crate) fn stop_word(&self) -> usize {
        self.stop_word
    }

    /// Where `key`'s parse stopped short ([`FlowKeyLayout::set_stop`]; 0: it did not).
    pub fn stop(&self, key: &[u64]) -> u64 {
        key.get(self.stop_word).map_or(0, |w| w & STOP_MASK)
    }

    /// Adds to `mask` the bits [`FlowKeyLayout::set_stop`] writes.
    pub fn stop_mask(&self, mask: &mut [u64]) {
        if let Some(w) = mask.get_mut(self.stop_word) {
            *w |= STOP_MASK;
        }
    }

    /// The number of key bits holding fields (the rest is padding, always zero).
    pub fn key_bits(&self) -> u32 {
        self.bits
    }

    /// PSA: whether the analysis models the egress parse of an ingress (`egress` false) or
    /// egress clone: what it extracts is then computed from the headers that copy may hold.
    pub fn psa_clone_modelled(&self, egress: bool) -> bool {
        self.psa_clones[usize::from(egress)]
    }

    /// Whether a later parse of the analysis's model reads the packet as it came in (a PSA
    /// ingress clone's egress parse, a resubmission's): then a run must know whether its
    /// first parse extracted a header twice.
    pub fn reparses_arrival(&self) -> bool {
        self.psa_clones[0] || self.next_pass[0].is_some()
    }

    /// The slots of the headers the packet of a later parser pass holds (a resubmitted one,
    /// `recirculated` false, or a recirculated one), `None` when the analysis does not model
    /// that pass: its run is then not cached.
    pub fn next_pass(&self, recirculated: bool) -> Option<&[SlotId]> {
        self.next_pass[usize::from(recirculated)].as_deref()
    }

    /// Whether `slot` holds state the architecture writes (a timestamp, a queue depth): a
    /// value of the run read from it is state-derived.
    pub fn state_input(&self, slot: SlotId) -> bool {
        self.state_input
            .get(slot.index() as usize)
            .copied()
            .unwrap_or(false)
    }

    /// Whether `slot` may hold a state-derived value ([`Coverage::StateDependent`]).
    pub fn tainted(&self, slot: SlotId) -> bool {
        self.cover
            .get(slot.index() as usize)
            .is_some_and(|c| c.in_closure && c.tainted)
    }

    /// `slot`'s key field if it holds the whole slot (of `slot_width` bits).
    pub fn whole_field(&self, slot: SlotId, slot_width: u32) -> Option<&KeyField> {
        self.field_of(slot)
            .filter(|f| f.lsb == 0 && f.width == slot_width)
    }

    /// Adds to `out` (a key mask) the key bits of `slot`'s own key field, if the field holds
    /// the whole slot (`false` if not): the bits a packet field's value as parsed is, without
    /// the fields its later values may be computed from (which [`Self::mask_for`] adds).
    pub fn mask_field(&self, slot: SlotId, slot_width: u32, out: &mut [u64]) -> bool {
        let Some(f) = self.whole_field(slot, slot_width) else {
            return false;
        };
        set_range(out, f.key_offset, f.width);
        true
    }

    pub fn field_of(&self, slot: SlotId) -> Option<&KeyField> {
        let i = self.cover.get(slot.index() as usize)?.field?;
        self.fields.get(i)
    }

    /// Every decision of the program.
    pub fn decisions(&self) -> &[Decision] {
        &self.decisions
    }

    /// The decisions that may depend on extern state: never cached.
    pub fn state_dependent(&self) -> impl Iterator<Item = &Decision> {
        self.decisions.iter().filter(|d| d.state_dependent)
    }

    /// Parsed headers whose fields the program never reads nor modifies (only their validity
    /// and emission matter): PISCES parser specialisation may copy them as opaque bytes.
    pub fn opaque_headers(&self) -> &[HeaderId] {
        &self.opaque
    }

    /// The flow key of the PHV in `phv` (the interpreter's byte layout, bit 0 the MSB of byte
    /// 0) into `out` (at least [`Self::key_words`] words; extra words are zeroed, missing
    /// ones skipped; PHV bytes past the buffer read as zero).
    pub fn extract(&self, phv: &[u8], out: &mut [u64]) {
        out.fill(0);
        for op in &self.ops {
            let v = read_phv(phv, op.phv, op.len);
            write_key(out, op.key, op.len, v);
        }
    }

    /// The key fields `mask` covers, as `name=value/mask` (hex; `/mask` left out when the
    /// whole field is masked), separated by commas; `key` gives the values.
    pub fn describe(&self, mask: &[u64], key: &[u64]) -> String {
        let mut out = Vec::new();
        for (i, f) in self.fields.iter().enumerate() {
            let (Some(m), Some(v)) = (self.read_field(mask, i), self.read_field(key, i)) else {
                continue;
            };
            if m.is_zero() {
                continue;
            }
            let v = v.and(&m);
            if m == Bits::ones(f.width) {
                out.push(format!("{}={v:#x}", f.name));
            } else {
                out.push(format!("{}={v:#x}/{m:#x}", f.name));
            }
        }
        for k in &self.hash_keys {
            let w = (k.key_offset / 64) as usize;
            let shift = 64 - k.width.clamp(1, 64);
            let (Some(m), Some(v)) = (mask.get(w), key.get(w)) else {
                continue;
            };
            let (m, v) = (m >> shift, v >> shift);
            match m {
                0 => {}
                m if m == u64::MAX >> shift => out.push(format!("{}={:#x}", k.name, v & m)),
                m => out.push(format!("{}={:#x}/{m:#x}", k.name, v & m)),
            }
        }
        if self.stop(mask) != 0 && self.stop(key) != 0 {
            out.push(format!("too_short_for_bit={}", self.stop(key)));
        }
        out.join(",")
    }

    /// Field `i`'s value in `key` (for tests and traces).
    pub fn read_field(&self, key: &[u64], i: usize) -> Option<Bits> {
        let f = self.fields.get(i)?;
        let mut out = Bits::zero(f.width);
        for b in 0..f.width {
            let k = (f.key_offset + b) as usize;
            let bit = key.get(k / 64).is_some_and(|w| w >> (63 - k % 64) & 1 == 1);
            out.set_bit(f.width - 1 - b, bit);
        }
        Some(out)
    }

    /// Adds to `out` (a key mask of [`Self::key_words`] words) the key bits that cover bits
    /// `bits` (a mask of the slot's width, bit 0 least significant: what
    /// `Observer::influence` reports) of `slot`: the slot's own bits if it is a key field,
    /// and every key field its value may be computed from. The result says whether the mask
    /// is sound for caching.
    pub fn mask_for(&self, slot: SlotId, bits: &Bits, out: &mut [u64]) -> Coverage {
        let Some(c) = self.cover.get(slot.index() as usize) else {
            return Coverage::Uncovered;
        };
        if !c.in_closure {
            return if bits.is_zero() {
                Coverage::Covered
            } else {
                Coverage::Uncovered
            };
        }
        let mut cov = Coverage::Covered;
        // Without a field of its own, the slot's initial value is a constant: only the
        // sources of its writes (below) can make it vary.
        if let Some(f) = c.field.and_then(|i| self.fields.get(i)) {
            if bits.width() <= 64 && f.lsb + f.width <= 64 {
                // (Most fields: in u64 arithmetic.)
                if field_bits64(bits.low_u128() as u64, f.lsb, f.width, f.key_offset, out) {
                    cov = Coverage::Uncovered;
                }
            } else if bits.width() <= 128 {
                if field_bits128(bits.low_u128(), f.lsb, f.width, f.key_offset, out) {
                    cov = Coverage::Uncovered;
                }
            } else {
                for i in (0..bits.width()).filter(|&i| bits.bit(i)) {
                    if i < f.lsb || i >= f.lsb + f.width {
                        cov = Coverage::Uncovered;
                        continue;
                    }
                    let k = f.key_offset + (f.lsb + f.width - 1 - i);
                    set_range(out, k, 1);
                }
            }
        }
        for &(w, m) in &c.derived {
            if let Some(x) = out.get_mut(w) {
                *x |= m;
            }
        }
        if c.tainted {
            cov = cov.max(Coverage::StateDependent);
        }
        cov
    }
}

/// The contiguous span (lowest bit, width) covering the set bits of `d` in a slot of
/// `width` bits; the whole slot for non-`bit<W>` masks.
fn demanded_span(d: &Bits, width: u32) -> (u32, u32) {
    let hi = (0..d.width()).rev().find(|&i| d.bit(i));
    let lo = (0..d.width()).find(|&i| d.bit(i));
    match (hi, lo) {
        (Some(hi), Some(lo)) if d.width() == width => (lo, hi - lo + 1),
        _ => (0, width),
    }
}

/// The low `w` bits set (all 128 for `w >= 128`).
/// Defines `$name(v, lsb, width, key_offset, out) -> bool` over `$t`: adds to `out` the key
/// bits (a field of `width` bits at key bit `key_offset`) of the mask `v` over a slot whose
/// field bits start at value bit `lsb`, whole words at a time, reversed into key order, run by
/// run of set bits (a prefix mask is one run); returns whether `v` has bits outside the field.
macro_rules! field_bits {
    ($name:ident, $t:ty, $low:ident) => {
        fn $name(v: $t, lsb: u32, width: u32, key_offset: u32, out: &mut [u64]) -> bool {
            let field = $low(width) << lsb;
            let mut m = (v & field) >> lsb;
            if m == $low(width) {
                set_range(out, key_offset, width);
            } else {
                while m != 0 {
                    let i = m.trailing_zeros();
                    let len = (!(m >> i)).trailing_zeros();
                    m &= !($low(len) << i);
                    set_range(out, key_offset + (width - i - len), len);
                }
            }
            v & !field != 0
        }
    };
}

// The u64 one for fields within 64 bits (most), which u128 arithmetic would slow.
field_bits!(field_bits64, u64, low_mask64);
field_bits!(field_bits128, u128, low_mask128);

fn low_mask64(w: u32) -> u64 {
    if w >= 64 { u64::MAX } else { (1u64 << w) - 1 }
}

fn low_mask128(w: u32) -> u128 {
    if w >= 128 {
        u128::MAX
    } else {
        (1u128 << w) - 1
    }
}

/// Sets key bits `start .. start + len` of `words`.
fn set_range(words: &mut [u64], start: u32, len: u32) {
    let mut k = start;
    let end = start + len;
    while k < end {
        let (w, off) = ((k / 64) as usize, k % 64);
        let n = (64 - off).min(end - k);
        let m = if n == 64 {
            u64::MAX
        } else {
            ((1u64 << n) - 1) << (64 - off - n)
        };
        if let Some(x) = words.get_mut(w) {
            *x |= m;
        }
        k += n;
    }
}

/// `len` (1..=64) bits at PHV bit offset `bit`, right-aligned.
fn read_phv(phv: &[u8], bit: u32, len: u32) -> u64 {
    let first = (bit / 8) as usize;
    let shift = bit % 8;
    let nbytes = (shift + len).div_ceil(8) as usize;
    let mut v: u128 = 0;
    for i in 0..nbytes {
        v = (v << 8) | u128::from(phv.get(first + i).copied().unwrap_or(0));
    }
    let total = nbytes as u32 * 8;
    let v = v >> (total - shift - len);
    (v & ((1u128 << len) - 1)) as u64
}

/// ORs `len` (1..=64) bits `v` into the key at bit offset `key`.
fn write_key(out: &mut [u64], key: u32, len: u32, v: u64) {
    let v = if len == 64 {
        v
    } else {
        v & ((1u64 << len) - 1)
    };
    let (w, off) = ((key / 64) as usize, key % 64);
    if off + len <= 64 {
        if let Some(x) = out.get_mut(w) {
            *x |= v << (64 - off - len);
        }
        return;
    }
    let len1 = 64 - off;
    let len2 = len - len1;
    if let Some(x) = out.get_mut(w) {
        *x |= v >> len2;
    }
    if let Some(x) = out.get_mut(w + 1) {
        *x |= v << (64 - len2);
    }
}

impl fmt::Display for FlowKeyLayout {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let st = self.state_dependent().count();
        writeln!(
            f,
            "flow key: {} words, {} bits in {} fields; {} decisions, {} state-dependent",
            self.words,
            self.bits,
            self.fields.len(),
            self.decisions.len(),
            st
        )?;
        writeln!(
            f,
            "{:>5}  {:>9}  {:>5}  {:<32}  source",
            "word", "bits", "width", "field"
        )?;
        for g in &self.groups {
            let stage = g
                .stage
                .map_or(String::new(), |n| format!(" @koi_stage({n})"));
            writeln!(
                f,
                "  -- {} (words {}..{}){stage}",
                g.name, g.words.start, g.words.end
            )?;
            for k in &self.fields[g.fields.clone()] {
                let (a, b) = (k.key_offset, k.key_offset + k.width);
                let words = if (b - 1) / 64 == a / 64 {
                    format!("{}", a / 64)
                } else {
                    format!("{}-{}", a / 64, (b - 1) / 64)
                };
                let mut name = k.name.clone();
                if k.width < k.slot_width {
                    name = format!("{name}[{}:{}]", k.lsb + k.width - 1, k.lsb);
                }
                let range = format!("{a}..{b}");
                writeln!(
                    f,
                    "{words:>5}  {range:>9}  {:>5}  {name:<32}  {}",
                    k.width,
                    k.source.name()
                )?;
            }
        }
        if !self.hash_keys.is_empty() {
            writeln!(f, "  -- hash keys")?;
        }
        for k in &self.hash_keys {
            let (a, b) = (k.key_offset, k.key_offset + k.width);
            let range = format!("{a}..{b}");
            writeln!(
                f,
                "{:>5}  {range:>9}  {:>5}  {:<32}  hash of packet fields",
                a / 64,
                k.width,
                format!("{} -> {}", k.name, k.dst_name),
            )?;
        }
        for d in self.state_dependent() {
            writeln!(f, "state-dependent {}: {}", d.kind.name(), d.location)?;
        }
        if !self.opaque_names.is_empty() {
            writeln!(f, "opaque headers: {}", self.opaque_names.join(", "))?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn field_bits_in_u64_match_u128(
            v in any::<u64>(),
            lsb in 0u32..64,
            width in 1u32..=64,
            key_offset in 0u32..192,
            runs in any::<bool>(),
        ) {
            let width = width.min(64 - lsb).max(1);
            // Prefix-like masks (one run) as often as scattered ones.
            let v = if runs { v & !(v >> 1) | v.rotate_left(lsb) } else { v };
            let (mut a, mut b) = ([0u64; 4], [0u64; 4]);
            let outside64 = field_bits64(v, lsb, width, key_offset, &mut a);
            let outside128 = field_bits128(u128::from(v), lsb, width, key_offset, &mut b);
            prop_assert_eq!(outside64, outside128);
            prop_assert_eq!(a, b);
        }
    }
}
