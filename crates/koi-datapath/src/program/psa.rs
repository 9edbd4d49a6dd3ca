//! The tracer through PSA's two pipelines: ingress's output metadata as the traffic manager
//! reads it, each egress pass from a fresh PHV with the metadata PSA carries to it
//! (`normal_meta`), and the egress parser's extracts as the headers the ingress deparser
//! emitted, field for field.
//!
//! A run is compiled only when what decides the packet's path is fixed by the megaflow
//! (`drop`, `resubmit`, `clone` and `clone_session_id`, `multicast_group`, `egress_port` and
//! `class_of_service` of ingress, `drop`, `clone` and `clone_session_id` of egress:
//! constants of the run, the megaflow matching what they are computed from) and each egress
//! parser extracts exactly the headers its copy holds, each at the offset it has there and
//! with the same field widths: the packet that leaves is then egress's emitted headers
//! followed by the payload after the ingress parse, as for v1model. A normal instance holds
//! the headers the ingress deparser emitted; a CLONE_I2E copy the headers the ingress parse
//! extracted (the packet as received: compiled when they lie back to back from the packet's
//! start), with `clone_i2e_meta`; a CLONE_E2E copy the headers the egress deparser emitted,
//! with `clone_e2e_meta`. Anything else (an egress parser that reads part of a header, or
//! fewer headers than its copy holds) leaves the run replayed. Resubmissions and
//! recirculations are not cached at all (`crate::observe`).

use super::*;
use std::collections::VecDeque;

/// PSA's slots the tracer watches.
#[derive(Debug)]
pub(super) struct PsaSetup {
    /// `normal_meta`: the slots an egress pass starts with from ingress.
    normal: Vec<SlotId>,
    /// `iin.ingress_port`: the input port, written after the ingress parser.
    port_copy: Option<SlotId>,
    drop: Option<SlotId>,
    resubmit: Option<SlotId>,
    clone: Option<SlotId>,
    group: Option<SlotId>,
    port: Option<SlotId>,
    /// `iout.class_of_service`: the traffic manager's class for the packet, which egress
    /// receives as `istd.class_of_service`.
    cos: Option<SlotId>,
    egress_drop: Option<SlotId>,
    egress_clone: Option<SlotId>,
    /// The clone sessions ingress and egress name.
    session: Option<SlotId>,
    egress_session: Option<SlotId>,
    /// `clone_i2e_meta` and `clone_e2e_meta`: what a clone carries to its egress pass.
    clone_i2e: Vec<SlotId>,
    clone_e2e: Vec<SlotId>,
}

impl PsaSetup {
    pub(super) fn new(p: &Pipeline) -> PsaSetup {
        PsaSetup {
            normal: carried(p, "NM"),
            port_copy: p.intrinsic("iin.ingress_port"),
            drop: p.intrinsic("iout.drop"),
            resubmit: p.intrinsic("iout.resubmit"),
            clone: p.intrinsic("iout.clone"),
            group: p.intrinsic("iout.multicast_group"),
            port: p.intrinsic("iout.egress_port"),
            cos: p.intrinsic("iout.class_of_service"),
            egress_drop: p.intrinsic("eout.drop"),
            egress_clone: p.intrinsic("eout.clone"),
            session: p.intrinsic("iout.clone_session_id"),
            egress_session: p.intrinsic("eout.clone_session_id"),
            clone_i2e: carried(p, "CI2E"),
            clone_e2e: carried(p, "CE2E"),
        }
    }

    /// The traffic manager's inputs: the port or group a unicast or multicast takes, and
    /// the class of service (egress reads it as a constant of the run, as v1model's egress
    /// reads its priority).
    pub(super) fn tm_inputs(&self) -> [Option<SlotId>; 3] {
        [self.port, self.group, self.cos]
    }
}

/// The slots of the metadata PSA carries to a pass under `key` (`NM`: `normal_meta`, ...).
fn carried(p: &Pipeline, key: &str) -> Vec<SlotId> {
    p.intrinsics
        .iter()
        .filter(|(k, _)| k == key)
        .map(|(_, s)| *s)
        .collect()
}

/// An instance queued for egress: the headers its packet holds, in order from its start,
/// and the metadata it carries (slot, value).
#[derive(Debug)]
pub(super) struct Queued {
    headers: Vec<HeaderId>,
    carried: Vec<(SlotId, N)>,
}

/// What the tracer keeps of PSA's passes.
#[derive(Debug, Default)]
pub(super) struct PsaTrace {
    /// The instances queued for egress, in order.
    pub(super) queued: VecDeque<Queued>,
    /// The headers the ingress parse extracted, in packet order, when they lie back to back
    /// from the packet's start (what a CLONE_I2E copy's egress parser reads).
    pub(super) parsed: Option<Vec<HeaderId>>,
    /// The clone being made, between `copy_begin` and `copy_end`.
    pub(super) copy: Option<koi_interp::CopyKind>,
    /// The current egress pass: the headers ingress emitted, the PHV it was queued with, and
    /// the bits its parser extracted so far.
    emitted: Vec<HeaderId>,
    from: Vec<N>,
    read: u32,
}

impl Tracer<'_> {
    fn psa_setup(&self) -> Option<&PsaSetup> {
        self.setup.psa.as_ref()
    }

    /// Whether the architecture's write of `slot` is PSA's copy of the input port.
    pub(super) fn psa_port_copy(&self, slot: SlotId) -> bool {
        self.psa_setup().is_some_and(|s| s.port_copy == Some(slot))
    }

    /// The bits of header `h` (fixed-size headers only).
    fn header_bits(&self, h: HeaderId) -> Option<u32> {
        let hd = self.p.phv.headers.get(h)?;
        let mut bits = 0u32;
        for &f in &hd.fields {
            let s = self.p.phv.slots.get(f)?;
            if matches!(s.ty, Ty::Varbit(_)) {
                return None;
            }
            bits = bits.checked_add(s.width)?;
        }
        Some(bits)
    }

    /// An egress pass starts: a fresh PHV (every slot zero) but for the metadata the instance
    /// queued carries (`normal_meta`, or a clone's), its packet the headers it holds.
    pub(super) fn psa_egress(&mut self) {
        let (Some((q, cut)), Some(emitted)) = (self.queue.pop_front(), self.psa.queued.pop_front())
        else {
            self.fail("egress pass without a queued instance");
            return;
        };
        let p = self.p;
        let mut slots = Vec::with_capacity(q.len());
        for (_, slot) in p.phv.slots.iter() {
            slots.push(self.constant(Bits::zero(slot.width)));
        }
        for (s, v) in emitted.carried {
            if let Some(d) = slots.get_mut(s.index() as usize) {
                *d = v;
            }
        }
        self.slots = slots;
        self.cut = cut;
        self.emitted.clear();
        self.psa.emitted = emitted.headers;
        self.psa.from = q;
        self.psa.read = 0;
    }

    /// An instance is queued for egress: a normal one holds the headers the ingress deparser
    /// emitted and carries `normal_meta`; an ingress clone the headers the ingress parse
    /// extracted and `clone_i2e_meta` (as ingress left it); an egress clone the headers the
    /// egress deparser emitted and `clone_e2e_meta`.
    pub(super) fn psa_enqueued(&mut self) {
        let setup = Arc::clone(&self.setup);
        let Some(s) = setup.psa.as_ref() else {
            return;
        };
        let (headers, meta, from) = match self.psa.copy {
            None => (self.emitted.clone(), &s.normal, &self.slots),
            Some(koi_interp::CopyKind::IngressClone) => {
                let (Some(parsed), Some((from, _))) = (&self.psa.parsed, &self.copying) else {
                    self.fail("PSA clone of a packet not parsed back to back");
                    return;
                };
                (parsed.clone(), &s.clone_i2e, from)
            }
            Some(koi_interp::CopyKind::EgressClone) => {
                (self.emitted.clone(), &s.clone_e2e, &self.slots)
            }
        };
        let carried = meta
            .iter()
            .filter_map(|&m| Some((m, *from.get(m.index() as usize)?)))
            .collect();
        self.psa.queued.push_back(Queued { headers, carried });
    }

    /// The headers the ingress parse extracted, in packet order, if they lie back to back
    /// from the packet's start up to where the parse ended (fixed-size headers, each
    /// extracted once, valid).
    pub(super) fn psa_parsed(&self, parsed: &Parsed) -> Option<Vec<HeaderId>> {
        let mut at: Vec<(u32, HeaderId)> = Vec::new();
        for (h, _) in self.p.phv.headers.iter() {
            let i = h.index() as usize;
            let off = *parsed.hdr_off.get(i)?;
            if off == NONE {
                continue;
            }
            if !parsed.valid.get(i).copied().unwrap_or(false) {
                return None;
            }
            at.push((off, h));
        }
        at.sort_unstable_by_key(|&(off, _)| off);
        let mut next = 0u32;
        for &(off, h) in &at {
            if off != next {
                return None;
            }
            next = next.checked_add(self.header_bits(h)?)?;
        }
        (next == parsed.cursor).then(|| at.into_iter().map(|(_, h)| h).collect())
    }

    /// The egress parser extracts `h`: the header ingress emitted at this offset, field for
    /// field (`None`: it is not one of the same shape).
    pub(super) fn psa_extract(&mut self, h: HeaderId) -> Option<()> {
        let mut off = 0u32;
        let mut at = None;
        for &e in &self.psa.emitted {
            if off == self.psa.read {
                at = Some(e);
                break;
            }
            off = off.checked_add(self.header_bits(e)?)?;
        }
        let e = at?;
        let (dst, src) = (self.p.phv.headers.get(h)?, self.p.phv.headers.get(e)?);
        if dst.union.is_some() || dst.fields.len() != src.fields.len() {
            return None;
        }
        for (&d, &s) in dst.fields.iter().zip(&src.fields) {
            let (dw, sw) = (
                self.p.phv.slots.get(d)?.width,
                self.p.phv.slots.get(s)?.width,
            );
            if dw != sw {
                return None;
            }
        }
        let bits = self.header_bits(h)?;
        for (&d, &s) in dst.fields.iter().zip(&src.fields) {
            let v = *self.psa.from.get(s.index() as usize)?;
            *self.slots.get_mut(d.index() as usize)? = v;
        }
        self.set_slot_const(dst.valid, Bits::from_bool(true));
        self.psa.read = self.psa.read.checked_add(bits)?;
        Some(())
    }

    /// Whether a clone request (`flag`, to `session`) is a constant of the run: no clone, or
    /// one to a session the run fixes.
    fn clone_fixed(&self, flag: Option<SlotId>, session: Option<SlotId>, k: &Known<'_>) -> bool {
        match self.const_slot(flag, k) {
            Some(0) => true,
            Some(_) => self.const_slot(session, k).is_some(),
            None => false,
        }
    }

    /// PSA's traffic manager: what it did must follow from constants of the run.
    pub(super) fn psa_tm(&mut self, ev: &koi_interp::TmEvent, k: &Known<'_>) {
        use koi_interp::TmEvent;
        let Some(s) = self.psa_setup() else {
            return;
        };
        let (drop, resubmit, clone, group, port) = (s.drop, s.resubmit, s.clone, s.group, s.port);
        let (edrop, eclone, cos) = (s.egress_drop, s.egress_clone, s.cos);
        let (session, esession) = (s.session, s.egress_session);
        let c = |slot| self.const_slot(slot, k);
        let nonzero = |v: Option<u64>| v.is_some_and(|v| v != 0);
        let cloned = |flag, sess| self.clone_fixed(flag, sess, k);
        // What egress receives is a constant of the run: the class of service too.
        let sends = cloned(clone, session)
            && c(resubmit) == Some(0)
            && c(drop) == Some(0)
            && c(cos).is_some();
        // While a clone is made, the PHV is the clone's: what asked for it is the packet's
        // it is made from.
        let parent = |slot: Option<SlotId>| match (slot, &self.copying) {
            (Some(s), Some((from, _))) => {
                self.konst_deep(*from.get(s.index() as usize)?, k)?.to_u64()
            }
            _ => c(slot),
        };
        let fixed = match ev {
            TmEvent::Clone { .. } => match self.psa.copy {
                Some(koi_interp::CopyKind::IngressClone) => {
                    self.psa.parsed.is_some() && nonzero(parent(clone)) && parent(session).is_some()
                }
                Some(koi_interp::CopyKind::EgressClone) => {
                    nonzero(parent(eclone)) && parent(esession).is_some()
                }
                None => false,
            },
            TmEvent::Unicast { port: to } => sends && c(group) == Some(0) && c(port) == Some(*to),
            TmEvent::Multicast { group: g, .. } => sends && *g != 0 && c(group) == Some(*g),
            TmEvent::Drop(DropReason::NoReplicas) => sends && nonzero(c(group)),
            TmEvent::Drop(DropReason::Ingress) => cloned(clone, session) && nonzero(c(drop)),
            TmEvent::Drop(DropReason::Egress) => cloned(eclone, esession) && nonzero(c(edrop)),
            _ => false,
        };
        if !fixed {
            self.fail("traffic manager input not constant");
            return;
        }
        if let TmEvent::Drop(why) = ev {
            self.passes.push(Pass::Dropped(why.clone()));
        }
    }

    /// An egress pass sends its packet on `port`: its parser must have extracted exactly the
    /// headers its copy holds (the rest of the packet is then the payload after the ingress
    /// parse), and what drops or clones it must be constants of the run.
    pub(super) fn psa_packet_out(&mut self, port: u64, k: &Known<'_>) {
        let Some(s) = self.psa_setup() else {
            return;
        };
        let (edrop, eclone, esession) = (s.egress_drop, s.egress_clone, s.egress_session);
        let mut bits = Some(0u32);
        for &e in &self.psa.emitted {
            bits = bits.and_then(|b| b.checked_add(self.header_bits(e)?));
        }
        if bits != Some(self.psa.read) || !self.psa.read.is_multiple_of(8) {
            self.fail("egress parser not over the emitted headers");
            return;
        }
        if self.const_slot(edrop, k) != Some(0) || !self.clone_fixed(eclone, esession, k) {
            self.fail("traffic manager input not constant");
            return;
        }
        self.sent(port);
    }
}
