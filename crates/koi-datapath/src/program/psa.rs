//! The tracer through PSA's two pipelines: ingress's output metadata as the traffic manager
//! reads it, each egress pass from a fresh PHV with the metadata PSA carries to it
//! (`normal_meta`), and the egress parser's extracts as the headers the ingress deparser
//! emitted, field for field.
//!
//! A run is compiled only when what decides the packet's path is fixed by the megaflow
//! (`drop`, `resubmit`, `clone`, `multicast_group`, `egress_port` and `class_of_service` of
//! ingress, `drop` and `clone` of egress: constants of the run, the megaflow matching what
//! they are computed from) and the egress parser extracts exactly the
//! headers the ingress deparser emitted, each at the offset ingress emitted it and with the
//! same field widths: the packet that leaves is then egress's emitted headers followed by
//! the payload after the ingress parse, as for v1model. Anything else (an egress parser that
//! reads part of a header, or fewer headers than were emitted) leaves the run replayed, as
//! does a clone. Resubmissions and recirculations are not cached at all (`crate::observe`).

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
}

impl PsaSetup {
    pub(super) fn new(p: &Pipeline) -> PsaSetup {
        PsaSetup {
            normal: p
                .intrinsics
                .iter()
                .filter(|(k, _)| k == "NM")
                .map(|(_, s)| *s)
                .collect(),
            port_copy: p.intrinsic("iin.ingress_port"),
            drop: p.intrinsic("iout.drop"),
            resubmit: p.intrinsic("iout.resubmit"),
            clone: p.intrinsic("iout.clone"),
            group: p.intrinsic("iout.multicast_group"),
            port: p.intrinsic("iout.egress_port"),
            cos: p.intrinsic("iout.class_of_service"),
            egress_drop: p.intrinsic("eout.drop"),
            egress_clone: p.intrinsic("eout.clone"),
        }
    }

    /// The traffic manager's inputs: the port or group a unicast or multicast takes, and
    /// the class of service (egress reads it as a constant of the run, as v1model's egress
    /// reads its priority).
    pub(super) fn tm_inputs(&self) -> [Option<SlotId>; 3] {
        [self.port, self.group, self.cos]
    }
}

/// What the tracer keeps of PSA's passes.
#[derive(Debug, Default)]
pub(super) struct PsaTrace {
    /// Per instance queued for egress, the headers the ingress deparser emitted.
    pub(super) queued: VecDeque<Vec<HeaderId>>,
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

    /// An egress pass starts: a fresh PHV (every slot zero) but for `normal_meta`, taken from
    /// the instance queued.
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
        let normal = self.psa_setup().map_or(&[][..], |s| &s.normal[..]);
        for s in normal {
            let i = s.index() as usize;
            if let (Some(d), Some(&v)) = (slots.get_mut(i), q.get(i)) {
                *d = v;
            }
        }
        self.slots = slots;
        self.cut = cut;
        self.emitted.clear();
        self.psa.emitted = emitted;
        self.psa.from = q;
        self.psa.read = 0;
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

    /// PSA's traffic manager: what it did must follow from constants of the run.
    pub(super) fn psa_tm(&mut self, ev: &koi_interp::TmEvent, k: &Known<'_>) {
        use koi_interp::TmEvent;
        let Some(s) = self.psa_setup() else {
            return;
        };
        // A clone's egress pass parses another packet (the one received, or the one egress
        // deparsed), which the tracer does not follow: replayed.
        if matches!(ev, TmEvent::Clone { .. }) {
            self.fail("PSA clone");
            return;
        }
        let (drop, resubmit, clone, group, port) = (s.drop, s.resubmit, s.clone, s.group, s.port);
        let (edrop, eclone, cos) = (s.egress_drop, s.egress_clone, s.cos);
        let c = |slot| self.const_slot(slot, k);
        let nonzero = |v: Option<u64>| v.is_some_and(|v| v != 0);
        // What egress receives is a constant of the run: the class of service too.
        let sends =
            c(clone) == Some(0) && c(resubmit) == Some(0) && c(drop) == Some(0) && c(cos).is_some();
        let fixed = match ev {
            TmEvent::Unicast { port: to } => sends && c(group) == Some(0) && c(port) == Some(*to),
            TmEvent::Multicast { group: g, .. } => sends && *g != 0 && c(group) == Some(*g),
            TmEvent::Drop(DropReason::NoReplicas) => sends && nonzero(c(group)),
            TmEvent::Drop(DropReason::Ingress) => c(clone) == Some(0) && nonzero(c(drop)),
            TmEvent::Drop(DropReason::Egress) => c(eclone) == Some(0) && nonzero(c(edrop)),
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
    /// headers ingress emitted (the rest of the packet is then the payload after the ingress
    /// parse), and nothing may drop or clone it.
    pub(super) fn psa_packet_out(&mut self, port: u64, k: &Known<'_>) {
        let Some(s) = self.psa_setup() else {
            return;
        };
        let (edrop, eclone) = (s.egress_drop, s.egress_clone);
        let mut bits = Some(0u32);
        for &e in &self.psa.emitted {
            bits = bits.and_then(|b| b.checked_add(self.header_bits(e)?));
        }
        if bits != Some(self.psa.read) || !self.psa.read.is_multiple_of(8) {
            self.fail("egress parser not over the emitted headers");
            return;
        }
        if self.const_slot(edrop, k) != Some(0) || self.const_slot(eclone, k) != Some(0) {
            self.fail("traffic manager input not constant");
            return;
        }
        self.sent(port);
    }
}
