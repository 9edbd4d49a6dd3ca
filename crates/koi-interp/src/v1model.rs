//! The v1model architecture as simple_switch runs it (`targets/simple_switch/
//! simple_switch.cpp`), with the traffic manager.
//!
//! A packet instance goes Parser, VerifyChecksum, Ingress; then, in this order: an ingress
//! clone if requested and its session configured (the packet as it entered ingress, parsed
//! again with only `ingress_port` set, then all metadata reset, the field list copied,
//! `instance_type` 1); a pending digest is sent; a resubmission if requested (the original
//! bytes, metadata reset, field list kept, `instance_type` 6, `packet_length` as received);
//! else multicast if `mcast_grp` is not 0 (`instance_type` 5, one copy per replica with
//! `egress_rid` set, the whole PHV copied); else a drop if `egress_spec` is the drop port;
//! else unicast to `egress_spec` (`instance_type` 0). Enqueueing drops a packet whose
//! `priority` is not below the number of queues, and sets `enq_timestamp`.
//!
//! Egress: `egress_port`, `egress_spec` = drop port + 1 (truncated to its width, so not the
//! drop port), `packet_length` from BMv2's length register (the ingress length plus or minus
//! the headers made valid or invalid), timestamps and queueing fields; the Egress control;
//! an egress clone if requested (the PHV's headers as they are, metadata reset, field list
//! copied, `instance_type` 2, the same payload, egress again without parsing); a drop if
//! `egress_spec` is the drop port; ComputeChecksum and the deparser; then recirculation if
//! requested (the deparsed bytes back to the parser, metadata reset, field list kept,
//! `instance_type` 4), else the packet leaves on `egress_port`, cut to the `truncate`
//! length. Copies (multicast, clones, resubmission, recirculation) do not inherit a
//! `truncate`. Timestamps are microseconds of the injected clock.
//!
//! Instances are processed one at a time in the order BMv2 enqueues them (FIFO), so
//! per-port output order is BMv2's; resubmissions and recirculations are bounded by
//! [`crate::Options::max_passes`] and all instances by [`crate::Options::max_instances`].

use crate::exec::{Ctx, Pkt, Stop};
use crate::observer::{CopyKind, InstanceEvent, Observer, TmEvent};
use crate::options::{DropReason, Output};
use crate::parse::ParseEnd;
use crate::phv::BitWriter;
use koi_ir::{Bits, FieldListId, Role, SlotId};
use koi_state::MirrorTarget;
use std::collections::VecDeque;

const INGRESS_CLONE: u64 = 1;
const EGRESS_CLONE: u64 = 2;
const RECIRC: u64 = 4;
const REPLICATION: u64 = 5;
const RESUBMIT: u64 = 6;

enum Job {
    Ingress(Pkt),
    Egress(Pkt, u64),
}

struct Tm {
    queue: VecDeque<Job>,
    instances: u32,
}

impl<O: Observer> Ctx<'_, O> {
    fn set(&mut self, pkt: &mut Pkt, s: Option<SlotId>, v: u64) {
        // The value at the slot's width (truncated, as a write resizes it), written and
        // reported without reading it back.
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

    fn get(&self, pkt: &Pkt, s: Option<SlotId>) -> u64 {
        s.map_or(0, |s| pkt.phv.raw(self.p, s).to_u64().unwrap_or(u64::MAX))
    }

    fn now_us(&self) -> u64 {
        self.now_ns() / 1000
    }

    /// Processes one packet received on `port`; returns the packets sent.
    pub fn run_v1model(
        &mut self,
        data: &[u8],
        port: u64,
    ) -> Result<Vec<Output>, (Vec<Output>, String)> {
        let mut pkt = Pkt::new(self.p, data.to_vec());
        let i = self.prep.intr.clone();
        self.set(&mut pkt, i.ingress_port, port);
        self.set(&mut pkt, i.packet_length, data.len() as u64);
        let now = self.now_us();
        self.set(&mut pkt, i.ingress_global_timestamp, now);
        let mut tm = Tm {
            queue: VecDeque::from([Job::Ingress(pkt)]),
            instances: 1,
        };
        let mut out = Vec::new();
        while let Some(job) = tm.queue.pop_front() {
            let r = match job {
                Job::Ingress(p) => self.ingress(&mut tm, p),
                Job::Egress(p, port) => self.egress(&mut tm, p, port, &mut out),
            };
            if let Err(Stop::Abort(why)) = r {
                return Err((out, why));
            }
        }
        Ok(out)
    }

    /// Parser and VerifyChecksum: `parser_error` and `checksum_error` set; explicit
    /// `reject` accepts, as p4c compiles it for BMv2; a select without match accepts too
    /// (p4c-bm2-ss has no `NoMatch` handling: BMv2 takes its default transition, accept).
    fn v1_parse(&mut self, pkt: &mut Pkt) -> Result<(), Stop> {
        let b = self.prep.blocks.clone();
        let end = self.run_parser(pkt, b.parser);
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
        let i = self.prep.intr.clone();
        self.set(pkt, i.parser_error, code);
        self.set(pkt, i.checksum_error, 0);
        if let Some(v) = b.verify {
            self.run_control(pkt, v, Role::VerifyChecksum)?;
        }
        Ok(())
    }

    fn ingress(&mut self, tm: &mut Tm, mut pkt: Pkt) -> Result<(), Stop> {
        // `pkt.data` is never modified in ingress: it is the packet as it entered.
        let ingress_size = pkt.len_reg;
        let ev = InstanceEvent {
            instance_type: self.get(&pkt, self.prep.intr.instance_type) as u32,
            egress_port: None,
            rid: None,
            packet_path: None,
        };
        self.obs.instance(Role::Ingress, &ev);
        self.v1_parse(&mut pkt)?;
        self.run_control(&mut pkt, self.prep.blocks.ingress, Role::Ingress)?;
        if let Some((session, fl)) = pkt.fx.clone.take() {
            self.ingress_clone(tm, &pkt, &pkt.data, ingress_size, session, fl)?;
        }
        if let Some(d) = pkt.fx.digest.take() {
            self.obs.tm(&TmEvent::Digest {
                name: d.name.clone(),
            });
            self.report.digests += 1;
            self.state.push_digest(d);
        }
        if let Some(fl) = pkt.fx.resubmit.take() {
            let original = pkt.data.clone();
            return self.resubmit(tm, &pkt, original, ingress_size, fl);
        }
        let i = self.prep.intr.clone();
        let group = self.get(&pkt, i.mcast_grp);
        if group != 0 {
            self.set(&mut pkt, i.instance_type, REPLICATION);
            let n = self.multicast(tm, &pkt, group);
            self.obs.tm(&TmEvent::Multicast { group, copies: n });
            return Ok(());
        }
        let spec = self.get(&pkt, i.egress_spec);
        if spec == u64::from(self.opts.drop_port) {
            self.drop_instance(DropReason::Ingress);
            return Ok(());
        }
        self.set(&mut pkt, i.instance_type, 0);
        self.obs.tm(&TmEvent::Unicast { port: spec });
        self.enqueue(tm, pkt, spec);
        Ok(())
    }

    fn drop_instance(&mut self, why: DropReason) {
        self.obs.tm(&TmEvent::Drop(why.clone()));
        self.report.drops.push(why);
    }

    /// A fresh instance whose metadata is zero but for the field list copied from `from`.
    fn copy_field_list(&mut self, to: &mut Pkt, from: &Pkt, fl: Option<FieldListId>) {
        self.obs.metadata_reset(fl);
        to.phv.zero_ranges(&self.prep.meta_ranges);
        let Some(list) = fl.and_then(|f| self.p.field_lists.get(f)) else {
            return;
        };
        for &s in &list.slots {
            let v = from.phv.raw(self.p, s);
            to.phv.set_raw(self.p, s, &v);
        }
    }

    fn ingress_clone(
        &mut self,
        tm: &mut Tm,
        pkt: &Pkt,
        original: &[u8],
        size: i64,
        session: u64,
        fl: Option<FieldListId>,
    ) -> Result<(), Stop> {
        let Some(target) = self.state.mirror_session(session) else {
            return Ok(());
        };
        self.obs.copy_begin(CopyKind::IngressClone);
        let mut c = Pkt::new(self.p, original.to_vec());
        c.ingress_len = pkt.ingress_len;
        c.len_reg = size;
        let port = self.get(pkt, self.prep.intr.ingress_port);
        self.set(&mut c, self.prep.intr.ingress_port, port);
        let b = self.prep.blocks.clone();
        if let ParseEnd::Abort(why) = self.run_parser(&mut c, b.parser) {
            return Err(Stop::Abort(why));
        }
        self.copy_field_list(&mut c, pkt, fl);
        self.set(&mut c, self.prep.intr.instance_type, INGRESS_CLONE);
        self.send_clone(tm, c, session, target);
        self.obs.copy_end();
        Ok(())
    }

    fn send_clone(&mut self, tm: &mut Tm, c: Pkt, session: u64, target: MirrorTarget) {
        let copies = match target {
            MirrorTarget::Group(g) => self.multicast(tm, &c, u64::from(g)),
            MirrorTarget::Port(p) => {
                self.enqueue(tm, c, u64::from(p));
                1
            }
        };
        self.obs.tm(&TmEvent::Clone { session, copies });
    }

    fn resubmit(
        &mut self,
        tm: &mut Tm,
        pkt: &Pkt,
        original: Vec<u8>,
        size: i64,
        fl: Option<FieldListId>,
    ) -> Result<(), Stop> {
        self.obs.tm(&TmEvent::Resubmit);
        if !self.count_pass(tm) {
            return Ok(());
        }
        let mut r = Pkt::new(self.p, original);
        r.ingress_len = pkt.ingress_len;
        r.len_reg = size;
        self.copy_field_list(&mut r, pkt, fl);
        let i = self.prep.intr.clone();
        self.set(&mut r, i.instance_type, RESUBMIT);
        self.set(&mut r, i.packet_length, size.max(0) as u64);
        tm.queue.push_back(Job::Ingress(r));
        Ok(())
    }

    /// Counts a resubmission or recirculation; false (and a drop) beyond the limit.
    fn count_pass(&mut self, tm: &mut Tm) -> bool {
        if self.report.passes >= self.opts.max_passes || tm.instances >= self.opts.max_instances {
            self.drop_instance(DropReason::Limit);
            return false;
        }
        self.report.passes += 1;
        tm.instances += 1;
        true
    }

    /// One copy per replica of `group`; returns how many.
    fn multicast(&mut self, tm: &mut Tm, pkt: &Pkt, group: u64) -> usize {
        let replicas = u32::try_from(group).map_or(Vec::new(), |g| self.state.replicate(g));
        if replicas.is_empty() {
            self.drop_instance(DropReason::NoReplicas);
        }
        for r in &replicas {
            let mut c = pkt.clone();
            c.truncate = None;
            c.fx = Default::default();
            self.set(&mut c, self.prep.intr.egress_rid, u64::from(r.rid));
            self.enqueue(tm, c, u64::from(r.port));
        }
        replicas.len()
    }

    fn enqueue(&mut self, tm: &mut Tm, mut pkt: Pkt, port: u64) {
        let i = self.prep.intr.clone();
        if self.get(&pkt, i.priority) >= self.opts.priority_queues {
            self.drop_instance(DropReason::PriorityOutOfRange);
            return;
        }
        if tm.instances >= self.opts.max_instances {
            self.drop_instance(DropReason::Limit);
            return;
        }
        tm.instances += 1;
        let now = self.now_us();
        self.set(&mut pkt, i.enq_timestamp, now);
        self.set(&mut pkt, i.enq_qdepth, 0);
        tm.queue.push_back(Job::Egress(pkt, port));
        self.obs.enqueued(port);
    }

    fn egress(
        &mut self,
        tm: &mut Tm,
        mut pkt: Pkt,
        port: u64,
        out: &mut Vec<Output>,
    ) -> Result<(), Stop> {
        let i = self.prep.intr.clone();
        // The pass starts (reported before the traffic manager's writes below, which belong
        // to it).
        let ev = InstanceEvent {
            instance_type: self.get(&pkt, i.instance_type) as u32,
            egress_port: Some(port),
            rid: Some(self.get(&pkt, i.egress_rid)),
            packet_path: None,
        };
        self.obs.instance(Role::Egress, &ev);
        let now = self.now_us();
        self.set(&mut pkt, i.egress_global_timestamp, now);
        let enq = self.get(&pkt, i.enq_timestamp);
        self.set(&mut pkt, i.deq_timedelta, now.saturating_sub(enq));
        self.set(&mut pkt, i.deq_qdepth, 0);
        self.set(&mut pkt, i.egress_port, port);
        self.set(&mut pkt, i.egress_spec, u64::from(self.opts.drop_port) + 1);
        let len = pkt.len_reg.max(0) as u64;
        self.set(&mut pkt, i.packet_length, len);
        pkt.fx.clone = None;
        let b = self.prep.blocks.clone();
        if let Some(e) = b.egress {
            self.run_control(&mut pkt, e, Role::Egress)?;
        }
        if let Some((session, fl)) = pkt.fx.clone.take()
            && let Some(target) = self.state.mirror_session(session)
        {
            self.obs.copy_begin(CopyKind::EgressClone);
            let mut c = pkt.clone();
            c.truncate = None;
            c.fx = Default::default();
            self.copy_field_list(&mut c, &pkt, fl);
            self.set(&mut c, i.instance_type, EGRESS_CLONE);
            self.send_clone(tm, c, session, target);
            self.obs.copy_end();
        }
        if self.get(&pkt, i.egress_spec) == u64::from(self.opts.drop_port) {
            self.drop_instance(DropReason::Egress);
            return Ok(());
        }
        if let Some(c) = b.compute {
            self.run_control(&mut pkt, c, Role::ComputeChecksum)?;
        }
        let bytes = self.deparse(&mut pkt, b.deparser)?;
        if let Some(fl) = pkt.fx.recirculate.take() {
            return self.recirculate(tm, &pkt, bytes, fl);
        }
        let mut bytes = bytes;
        if let Some(t) = pkt.truncate {
            bytes.truncate(usize::try_from(t).unwrap_or(usize::MAX));
        }
        let o = Output { port, bytes };
        self.obs.packet_out(&o);
        out.push(o);
        Ok(())
    }

    /// Runs the deparser: the valid headers emitted, then the unparsed payload.
    pub fn deparse(&mut self, pkt: &mut Pkt, d: koi_ir::ControlId) -> Result<Vec<u8>, Stop> {
        pkt.emit = Some(BitWriter::with_capacity(pkt.data.len() + 64, 16));
        self.run_control(pkt, d, Role::Deparser)?;
        let mut w = pkt.emit.take().unwrap_or_default();
        self.obs.deparsed(Role::Deparser, w.len_bits() as u64);
        if !w.len_bits().is_multiple_of(8) {
            let pad = 8 - w.len_bits() % 8;
            w.push(&Bits::zero(pad as u32));
        }
        w.push_tail(&pkt.data, pkt.cursor);
        Ok(w.into_bytes())
    }

    fn recirculate(
        &mut self,
        tm: &mut Tm,
        pkt: &Pkt,
        bytes: Vec<u8>,
        fl: Option<FieldListId>,
    ) -> Result<(), Stop> {
        self.obs.tm(&TmEvent::Recirculate);
        if !self.count_pass(tm) {
            return Ok(());
        }
        let len = bytes.len() as u64;
        let mut r = Pkt::new(self.p, bytes);
        self.copy_field_list(&mut r, pkt, fl);
        let i = self.prep.intr.clone();
        self.set(&mut r, i.instance_type, RECIRC);
        self.set(&mut r, i.packet_length, len);
        tm.queue.push_back(Job::Ingress(r));
        Ok(())
    }
}
