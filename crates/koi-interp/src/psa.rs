//! The PSA architecture as BMv2's psa_switch runs it (`targets/psa_switch/psa_switch.cpp`;
//! PSA 1.2 §6), with its packet replication engine and queues.
//!
//! **Ingress.** A packet from a port (`packet_path` NORMAL), a resubmitted one (RESUBMIT,
//! `resubmit_meta` as the ingress deparser set it) or a recirculated one (RECIRCULATE, from
//! port `PSA_PORT_RECIRCULATE`, `recirculate_meta` as the egress deparser set it) starts with
//! all metadata 0 and its headers invalid. IngressParser runs (a parser error is recorded in
//! `parser_error` and never drops; an explicit `reject` or a `select` without a match accepts,
//! as p4c compiles PSA programs for BMv2); then Ingress with the output metadata's initial
//! values (`drop` true, the rest 0); then IngressDeparser, whose emitted headers followed by
//! the unparsed payload are the packet that goes on. Then, in this order: an ingress clone if
//! `clone` and the session is configured (the packet as received, to each copy of the
//! session, CLONE_I2E, `clone_i2e_meta`); nothing more if `drop`; a resubmission if
//! `resubmit` (the packet as received); one copy per replica of `multicast_group` if it is
//! not 0 (NORMAL_MULTICAST, `instance` the replica's id); else one copy to `egress_port`
//! (NORMAL_UNICAST). Each copy carries `normal_meta`.
//!
//! **Egress.** Each copy starts with fresh metadata and headers, the metadata its path
//! carries, `egress_port` and `packet_path`; EgressParser, Egress (output metadata 0: no
//! clone, no drop), EgressDeparser; then an egress clone if `clone` (the deparsed packet,
//! CLONE_E2E, `clone_e2e_meta`), a drop if `drop`, a recirculation if the egress port is
//! `PSA_PORT_RECIRCULATE`, else the packet leaves on its port.
//!
//! Copies are processed one at a time in the order they are queued, so the outputs of a port
//! come in psa_switch's order; resubmissions and recirculations count against
//! [`crate::Options::max_passes`], every copy against [`crate::Options::max_instances`].
//! Timestamps are microseconds of the injected clock.

use crate::exec::{Ctx, Pkt, Stop};
use crate::observer::{CopyKind, InstanceEvent, Observer, TmEvent};
use crate::options::{DropReason, InterpError, Output};
use crate::parse::ParseEnd;
use crate::phv::BitWriter;
use koi_ir::{Bits, BlockRef, ControlId, ParserId, Pipeline, Role, SlotId};
use koi_state::MirrorTarget;
use std::collections::VecDeque;

/// `PSA_PORT_RECIRCULATE`.
pub const PORT_RECIRCULATE: u64 = 0xffff_fffa;

/// `PSA_PacketPath_t`'s members, in declaration order (their codes).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u64)]
pub enum PacketPath {
    Normal = 0,
    NormalUnicast = 1,
    NormalMulticast = 2,
    CloneI2E = 3,
    CloneE2E = 4,
    Resubmit = 5,
    Recirculate = 6,
}

impl PacketPath {
    /// The member's name.
    pub fn name(self) -> &'static str {
        match self {
            PacketPath::Normal => "NORMAL",
            PacketPath::NormalUnicast => "NORMAL_UNICAST",
            PacketPath::NormalMulticast => "NORMAL_MULTICAST",
            PacketPath::CloneI2E => "CLONE_I2E",
            PacketPath::CloneE2E => "CLONE_E2E",
            PacketPath::Resubmit => "RESUBMIT",
            PacketPath::Recirculate => "RECIRCULATE",
        }
    }
}

/// The slots of PSA's standard metadata and of the metadata it carries between blocks
/// (koi-lower's `psa` module records them as intrinsics).
#[derive(Clone, Debug, Default)]
pub struct PsaSlots {
    pub ipin_port: Option<SlotId>,
    pub ipin_path: Option<SlotId>,
    pub iin_port: Option<SlotId>,
    pub iin_path: Option<SlotId>,
    pub iin_timestamp: Option<SlotId>,
    pub iin_error: Option<SlotId>,
    pub iout_cos: Option<SlotId>,
    pub iout_clone: Option<SlotId>,
    pub iout_session: Option<SlotId>,
    pub iout_drop: Option<SlotId>,
    pub iout_resubmit: Option<SlotId>,
    pub iout_group: Option<SlotId>,
    pub iout_port: Option<SlotId>,
    pub epin_port: Option<SlotId>,
    pub epin_path: Option<SlotId>,
    pub ein_cos: Option<SlotId>,
    pub ein_port: Option<SlotId>,
    pub ein_path: Option<SlotId>,
    pub ein_instance: Option<SlotId>,
    pub ein_timestamp: Option<SlotId>,
    pub ein_error: Option<SlotId>,
    pub eout_clone: Option<SlotId>,
    pub eout_session: Option<SlotId>,
    pub eout_drop: Option<SlotId>,
    pub edin_port: Option<SlotId>,
    /// `normal_meta`, `clone_i2e_meta`, `clone_e2e_meta`, `resubmit_meta`,
    /// `recirculate_meta`: every slot of each.
    pub normal: Vec<SlotId>,
    pub clone_i2e: Vec<SlotId>,
    pub clone_e2e: Vec<SlotId>,
    pub resubmit: Vec<SlotId>,
    pub recirculate: Vec<SlotId>,
}

/// The six blocks of a PSA program and its slots.
#[derive(Clone, Debug)]
pub struct PsaPrep {
    pub ingress_parser: ParserId,
    pub ingress: ControlId,
    pub ingress_deparser: ControlId,
    pub egress_parser: ParserId,
    pub egress: ControlId,
    pub egress_deparser: ControlId,
    pub slots: PsaSlots,
}

impl PsaPrep {
    pub fn new(p: &Pipeline) -> Result<PsaPrep, InterpError> {
        let parser = |r: Role| match p.block(r) {
            Some(BlockRef::Parser(x)) if p.parsers.contains(x) => Ok(x),
            _ => Err(InterpError::MissingRole(r.name())),
        };
        let control = |r: Role| match p.block(r) {
            Some(BlockRef::Control(x)) if p.controls.contains(x) => Ok(x),
            _ => Err(InterpError::MissingRole(r.name())),
        };
        let s = |n: &str| p.intrinsic(n);
        let all = |n: &str| -> Vec<SlotId> {
            p.intrinsics
                .iter()
                .filter(|(k, _)| k == n)
                .map(|(_, s)| *s)
                .collect()
        };
        let slots = PsaSlots {
            ipin_port: s("ipin.ingress_port"),
            ipin_path: s("ipin.packet_path"),
            iin_port: s("iin.ingress_port"),
            iin_path: s("iin.packet_path"),
            iin_timestamp: s("iin.ingress_timestamp"),
            iin_error: s("iin.parser_error"),
            iout_cos: s("iout.class_of_service"),
            iout_clone: s("iout.clone"),
            iout_session: s("iout.clone_session_id"),
            iout_drop: s("iout.drop"),
            iout_resubmit: s("iout.resubmit"),
            iout_group: s("iout.multicast_group"),
            iout_port: s("iout.egress_port"),
            epin_port: s("epin.egress_port"),
            epin_path: s("epin.packet_path"),
            ein_cos: s("ein.class_of_service"),
            ein_port: s("ein.egress_port"),
            ein_path: s("ein.packet_path"),
            ein_instance: s("ein.instance"),
            ein_timestamp: s("ein.egress_timestamp"),
            ein_error: s("ein.parser_error"),
            eout_clone: s("eout.clone"),
            eout_session: s("eout.clone_session_id"),
            eout_drop: s("eout.drop"),
            edin_port: s("edin.egress_port"),
            normal: all("NM"),
            clone_i2e: all("CI2E"),
            clone_e2e: all("CE2E"),
            resubmit: all("RESUB"),
            recirculate: all("RECIRC"),
        };
        Ok(PsaPrep {
            ingress_parser: parser(Role::IngressParser)?,
            ingress: control(Role::Ingress)?,
            ingress_deparser: control(Role::IngressDeparser)?,
            egress_parser: parser(Role::EgressParser)?,
            egress: control(Role::Egress)?,
            egress_deparser: control(Role::EgressDeparser)?,
            slots,
        })
    }
}

/// The values of carried metadata slots.
type Carried = Vec<(SlotId, Bits)>;

/// A packet waiting for a pass.
enum Job {
    Ingress {
        bytes: Vec<u8>,
        port: u64,
        path: PacketPath,
        carried: Carried,
    },
    Egress {
        bytes: Vec<u8>,
        port: u64,
        path: PacketPath,
        instance: u64,
        cos: u64,
        carried: Carried,
    },
}

struct Queue {
    jobs: VecDeque<Job>,
    instances: u32,
}

impl<'a, O: Observer> Ctx<'a, O> {
    /// The program's PSA blocks and slots (borrowed from the pipeline's preparation, not
    /// from the context, so that the context stays free to use).
    fn psa(&self) -> Result<&'a PsaPrep, Stop> {
        let prep: &'a crate::prepared::Prepared = self.prep;
        prep.psa
            .as_ref()
            .ok_or_else(|| Stop::Abort("not a PSA program".into()))
    }

    /// Writes `v` (at the slot's width) into `s`, reported as the architecture's write.
    fn psa_set(&mut self, pkt: &mut Pkt, s: Option<SlotId>, v: u64) {
        if let Some(s) = s
            && let Some(slot) = self.p.phv.slots.get(s)
        {
            let value = Bits::from_u64(slot.width, v);
            pkt.phv.write_at(slot.offset, &value);
            if O::TRACES_EFFECTS {
                self.obs.arch_write(s, &value);
            }
        }
    }

    fn psa_get(&self, pkt: &Pkt, s: Option<SlotId>) -> u64 {
        s.map_or(0, |s| pkt.phv.raw(self.p, s).low_u64())
    }

    fn carried(&self, pkt: &Pkt, slots: &[SlotId]) -> Carried {
        slots.iter().map(|&s| (s, pkt.phv.raw(self.p, s))).collect()
    }

    /// Processes one packet received on `port`; returns the packets sent.
    pub fn run_psa(
        &mut self,
        data: &[u8],
        port: u64,
    ) -> Result<Vec<Output>, (Vec<Output>, String)> {
        let mut q = Queue {
            jobs: VecDeque::from([Job::Ingress {
                bytes: data.to_vec(),
                port,
                path: PacketPath::Normal,
                carried: Vec::new(),
            }]),
            instances: 1,
        };
        let mut out = Vec::new();
        while let Some(job) = q.jobs.pop_front() {
            let r = match job {
                Job::Ingress {
                    bytes,
                    port,
                    path,
                    carried,
                } => self.psa_ingress(&mut q, bytes, port, path, &carried),
                Job::Egress {
                    bytes,
                    port,
                    path,
                    instance,
                    cos,
                    carried,
                } => {
                    let e = EgressJob {
                        port,
                        path,
                        instance,
                        cos,
                    };
                    self.psa_egress(&mut q, bytes, e, &carried, &mut out)
                }
            };
            match r {
                Ok(()) => {}
                Err(Stop::Abort(why)) => return Err((out, why)),
                Err(_) => {}
            }
        }
        Ok(out)
    }

    /// A parser pass: the error code it ends with (0 for accept, an explicit `reject` and a
    /// `select` without a match, as on BMv2).
    fn psa_parse(&mut self, pkt: &mut Pkt, parser: ParserId) -> Result<u64, Stop> {
        let end = self.run_parser(pkt, parser);
        self.obs.parsed(pkt.phv.bytes());
        let code = match end {
            ParseEnd::Accept | ParseEnd::Reject | ParseEnd::NoMatch => 0,
            ParseEnd::Error(c) => u64::from(c),
            ParseEnd::Abort(why) => return Err(Stop::Abort(why)),
        };
        let name = (code != 0).then(|| {
            self.p
                .errors
                .get(code as usize)
                .cloned()
                .unwrap_or_default()
        });
        self.obs.parser_end(name.as_deref());
        Ok(code)
    }

    /// Runs deparser `d` in `role`: the emitted headers, then the unparsed payload.
    fn psa_deparse(&mut self, pkt: &mut Pkt, d: ControlId, role: Role) -> Result<Vec<u8>, Stop> {
        pkt.emit = Some(BitWriter::with_capacity(pkt.data.len() + 64, 16));
        self.run_control(pkt, d, role)?;
        let mut w = pkt.emit.take().unwrap_or_default();
        self.obs.deparsed(role, w.len_bits() as u64);
        if !w.len_bits().is_multiple_of(8) {
            let pad = 8 - w.len_bits() % 8;
            w.push(&Bits::zero(pad as u32));
        }
        w.push_tail(&pkt.data, pkt.cursor);
        Ok(w.into_bytes())
    }

    fn psa_drop(&mut self, why: DropReason) {
        self.obs.tm(&TmEvent::Drop(why.clone()));
        self.report.drops.push(why);
    }

    /// Counts a resubmission or recirculation; false (and a drop) beyond the limits.
    fn psa_pass(&mut self, q: &mut Queue) -> bool {
        if self.report.passes >= self.opts.max_passes || q.instances >= self.opts.max_instances {
            self.psa_drop(DropReason::Limit);
            return false;
        }
        self.report.passes += 1;
        q.instances += 1;
        true
    }

    /// Queues a copy for egress; false (and a drop) beyond the instance limit.
    fn psa_enqueue(&mut self, q: &mut Queue, bytes: Vec<u8>, e: EgressJob, carried: Carried) {
        if q.instances >= self.opts.max_instances {
            self.psa_drop(DropReason::Limit);
            return;
        }
        q.instances += 1;
        q.jobs.push_back(Job::Egress {
            bytes,
            port: e.port,
            path: e.path,
            instance: e.instance,
            cos: e.cos,
            carried,
        });
        self.obs.enqueued(e.port);
    }

    fn psa_ingress(
        &mut self,
        q: &mut Queue,
        bytes: Vec<u8>,
        port: u64,
        path: PacketPath,
        carried: &[(SlotId, Bits)],
    ) -> Result<(), Stop> {
        let prep = self.psa()?;
        let s = &prep.slots;
        let original = bytes.clone();
        let mut pkt = Pkt::new(self.p, bytes);
        for (slot, v) in carried {
            pkt.phv.set_raw(self.p, *slot, v);
        }
        let ev = InstanceEvent {
            instance_type: path as u32,
            egress_port: None,
            rid: None,
            packet_path: Some(path.name()),
        };
        self.obs.instance(Role::Ingress, &ev);
        self.psa_set(&mut pkt, s.ipin_port, port);
        self.psa_set(&mut pkt, s.ipin_path, path as u64);
        let error = self.psa_parse(&mut pkt, prep.ingress_parser)?;
        let now = self.now_ns() / 1000;
        for (slot, v) in [
            (s.iin_port, port),
            (s.iin_path, path as u64),
            (s.iin_timestamp, now),
            (s.iin_error, error),
            (s.iout_cos, 0),
            (s.iout_clone, 0),
            (s.iout_session, 0),
            (s.iout_drop, 1),
            (s.iout_resubmit, 0),
            (s.iout_group, 0),
            (s.iout_port, 0),
        ] {
            self.psa_set(&mut pkt, slot, v);
        }
        self.run_control(&mut pkt, prep.ingress, Role::Ingress)?;
        let deparsed = self.psa_deparse(&mut pkt, prep.ingress_deparser, Role::IngressDeparser)?;
        if self.psa_get(&pkt, s.iout_clone) != 0 {
            let session = self.psa_get(&pkt, s.iout_session);
            let meta = self.carried(&pkt, &s.clone_i2e);
            let cos = self.psa_get(&pkt, s.iout_cos);
            self.obs.copy_begin(CopyKind::IngressClone);
            self.psa_clone(q, session, &original, PacketPath::CloneI2E, cos, &meta);
            self.obs.copy_end();
        }
        if self.psa_get(&pkt, s.iout_drop) != 0 {
            self.psa_drop(DropReason::Ingress);
            return Ok(());
        }
        if self.psa_get(&pkt, s.iout_resubmit) != 0 {
            self.obs.tm(&TmEvent::Resubmit);
            if self.psa_pass(q) {
                q.jobs.push_back(Job::Ingress {
                    bytes: original,
                    port,
                    path: PacketPath::Resubmit,
                    carried: self.carried(&pkt, &s.resubmit),
                });
            }
            return Ok(());
        }
        let cos = self.psa_get(&pkt, s.iout_cos);
        let normal = self.carried(&pkt, &s.normal);
        let group = self.psa_get(&pkt, s.iout_group);
        if group != 0 {
            let replicas = u32::try_from(group).map_or(Vec::new(), |g| self.state.replicate(g));
            self.obs.tm(&TmEvent::Multicast {
                group,
                copies: replicas.len(),
            });
            if replicas.is_empty() {
                self.psa_drop(DropReason::NoReplicas);
            }
            for r in replicas {
                let e = EgressJob {
                    port: u64::from(r.port),
                    path: PacketPath::NormalMulticast,
                    instance: u64::from(r.rid),
                    cos,
                };
                self.psa_enqueue(q, deparsed.clone(), e, normal.clone());
            }
            return Ok(());
        }
        let egress_port = self.psa_get(&pkt, s.iout_port);
        self.obs.tm(&TmEvent::Unicast { port: egress_port });
        let e = EgressJob {
            port: egress_port,
            path: PacketPath::NormalUnicast,
            instance: 0,
            cos,
        };
        self.psa_enqueue(q, deparsed, e, normal);
        Ok(())
    }

    /// The copies of clone session `session` (none if it is not configured).
    fn psa_clone(
        &mut self,
        q: &mut Queue,
        session: u64,
        bytes: &[u8],
        path: PacketPath,
        cos: u64,
        meta: &[(SlotId, Bits)],
    ) {
        let Some(target) = self.state.mirror_session(session) else {
            return;
        };
        let copies: Vec<(u64, u64)> = match target {
            MirrorTarget::Port(p) => vec![(u64::from(p), 0)],
            MirrorTarget::Group(g) => self
                .state
                .replicate(g)
                .iter()
                .map(|r| (u64::from(r.port), u64::from(r.rid)))
                .collect(),
        };
        self.obs.tm(&TmEvent::Clone {
            session,
            copies: copies.len(),
        });
        for (port, instance) in copies {
            let e = EgressJob {
                port,
                path,
                instance,
                cos,
            };
            self.psa_enqueue(q, bytes.to_vec(), e, meta.to_vec());
        }
    }

    fn psa_egress(
        &mut self,
        q: &mut Queue,
        bytes: Vec<u8>,
        e: EgressJob,
        carried: &[(SlotId, Bits)],
        out: &mut Vec<Output>,
    ) -> Result<(), Stop> {
        let prep = self.psa()?;
        let s = &prep.slots;
        let mut pkt = Pkt::new(self.p, bytes);
        for (slot, v) in carried {
            pkt.phv.set_raw(self.p, *slot, v);
        }
        let ev = InstanceEvent {
            instance_type: e.path as u32,
            egress_port: Some(e.port),
            rid: Some(e.instance),
            packet_path: Some(e.path.name()),
        };
        self.obs.instance(Role::Egress, &ev);
        self.psa_set(&mut pkt, s.epin_port, e.port);
        self.psa_set(&mut pkt, s.epin_path, e.path as u64);
        let error = self.psa_parse(&mut pkt, prep.egress_parser)?;
        let now = self.now_ns() / 1000;
        for (slot, v) in [
            (s.ein_cos, e.cos),
            (s.ein_port, e.port),
            (s.ein_path, e.path as u64),
            (s.ein_instance, e.instance),
            (s.ein_timestamp, now),
            (s.ein_error, error),
            (s.eout_clone, 0),
            (s.eout_session, 0),
            (s.eout_drop, 0),
            (s.edin_port, e.port),
        ] {
            self.psa_set(&mut pkt, slot, v);
        }
        self.run_control(&mut pkt, prep.egress, Role::Egress)?;
        let deparsed = self.psa_deparse(&mut pkt, prep.egress_deparser, Role::EgressDeparser)?;
        if self.psa_get(&pkt, s.eout_clone) != 0 {
            let session = self.psa_get(&pkt, s.eout_session);
            let meta = self.carried(&pkt, &s.clone_e2e);
            self.obs.copy_begin(CopyKind::EgressClone);
            self.psa_clone(q, session, &deparsed, PacketPath::CloneE2E, e.cos, &meta);
            self.obs.copy_end();
        }
        if self.psa_get(&pkt, s.eout_drop) != 0 {
            self.psa_drop(DropReason::Egress);
            return Ok(());
        }
        if e.port == PORT_RECIRCULATE {
            self.obs.tm(&TmEvent::Recirculate);
            if self.psa_pass(q) {
                q.jobs.push_back(Job::Ingress {
                    bytes: deparsed,
                    port: PORT_RECIRCULATE,
                    path: PacketPath::Recirculate,
                    carried: self.carried(&pkt, &s.recirculate),
                });
            }
            return Ok(());
        }
        let o = Output {
            port: e.port,
            bytes: deparsed,
        };
        self.obs.packet_out(&o);
        out.push(o);
        Ok(())
    }
}

/// Where and how a copy enters egress.
#[derive(Clone, Copy, Debug)]
struct EgressJob {
    port: u64,
    path: PacketPath,
    instance: u64,
    cos: u64,
}
