//! What the interpreter's run reports to the tracer besides statements: actions and their
//! arguments, table hits, decisions on state (guards), the traffic manager's events, copies
//! (clones, multicast replicas) and what each instance sent.

use super::*;

impl<'p> Tracer<'p> {
    /// An action body starts with control-plane `args` (or the pending direct call's).
    pub fn action(&mut self, args: &[Bits]) {
        let f = match self.pending.take() {
            Some(f) => f,
            None => args.iter().map(|a| self.constant(a.clone())).collect(),
        };
        self.frames.push(f);
    }

    /// The innermost action body ended.
    pub fn action_end(&mut self) {
        self.frames.pop();
    }

    /// The architecture wrote `value` into `slot`.
    pub fn arch_write(&mut self, slot: SlotId, value: &Bits) {
        let w = self
            .p
            .phv
            .slots
            .get(slot)
            .map_or(value.width(), |s| s.width);
        let n = match self.setup.write_kind(slot) {
            // PSA's `iin.ingress_port`: the port the packet came in on, as before the parser.
            _ if self.psa_port_copy(slot) => self.add(Node::Port(w)),
            WriteKind::Input(what) => self.input(what, value.resize(w), w),
            WriteKind::Opaque => self.add(Node::Opaque(w)),
            WriteKind::Constant => self.constant(value.resize(w)),
        };
        if let Some(x) = self.slots.get_mut(slot.index() as usize) {
            *x = n;
        }
    }

    /// A table was applied: the entry hit, if any.
    pub fn table(&mut self, t: TableId, hit: Option<u32>) {
        if self.failed.is_some() {
            return;
        }
        let Some(table) = self.p.tables.get(t) else {
            self.fail("table");
            return;
        };
        let meter = table.direct_meter;
        // As the interpreter: applying the table forgets its direct meter's colour; a hit
        // executes the meter for the entry.
        if let Some(m) = meter {
            self.meter_colors.retain(|(e, _)| *e != m);
        }
        if let Some(i) = hit {
            if State::hit_recorded(table) {
                self.state.push(StateOp::TableHit(t, i));
            }
            if let Some(m) = meter {
                let slot = self.next_read();
                self.state.push(StateOp::DirectMeter(t, i, slot));
                self.meter_colors.push((m, slot));
            }
        }
    }

    /// A `Branch` or `Switch` whose condition may be state-dependent went to `to`: unless
    /// its value is a constant of the megaflow, the program gets a guard that it goes there
    /// again.
    pub fn guard_jump(
        &mut self,
        t: &koi_ir::Terminator,
        to: koi_ir::BlockId,
        params: &[Bits],
        k: &Known<'_>,
    ) {
        use koi_ir::Terminator;
        if self.failed.is_some() {
            return;
        }
        let guard = match t {
            Terminator::Branch { cond, then, .. } => self
                .expr(cond, params, k)
                .map(|n| (n, Test::Truth(to == *then))),
            Terminator::Switch {
                value,
                cases,
                default,
            } => self.expr(value, params, k).map(|n| {
                let cases = cases.iter().map(|(c, b)| (c.clone(), *b == to)).collect();
                let default = *default == to;
                (n, Test::Cases { cases, default })
            }),
            _ => None,
        };
        match guard {
            Some((n, _)) if self.konst_deep(n, k).is_some() => {}
            Some((n, test)) => self.state.push(StateOp::Guard { n, test }),
            None => self.fail("state-dependent decision"),
        }
    }

    /// Table `t`, whose key may be state-dependent, was looked up with `keys` (its match
    /// fields' values, selector fields excluded): each key computed from a state-dependent
    /// value gets a guard that it is the same again (the others are in the megaflow's mask).
    pub fn guard_table(&mut self, t: TableId, keys: &[Bits], k: &Known<'_>) {
        if self.failed.is_some() {
            return;
        }
        let Some(table) = self.p.tables.get(t) else {
            self.fail("table");
            return;
        };
        let fields = table
            .keys
            .iter()
            .filter(|x| x.field.kind != koi_ir::MatchKind::Selector);
        for (key, v) in fields.zip(keys) {
            let Some(n) = self.expr(&key.expr, &[], k) else {
                self.fail("state-dependent table key");
                return;
            };
            let n = self.resized(n, key.field.width, k);
            if self.reaches_state(n) {
                let test = Test::Cases {
                    cases: vec![(v.clone(), true)],
                    default: false,
                };
                self.state.push(StateOp::Guard { n, test });
            }
        }
        // (Selector fields are not guarded: a state-dependent one leaves the run uncached,
        // by the datapath's influence tracking.)
    }

    /// Whether `n` depends on a value read from the state (a register, a meter's colour,
    /// `random`) or on the payload (or on a value the compiler does not model).
    pub(super) fn reaches_state(&self, n: N) -> bool {
        self.reaches(n, |x| {
            matches!(
                x,
                Node::RegVal { .. } | Node::PayloadCsum { .. } | Node::Opaque(_)
            )
        })
    }

    /// Whether `n` or a node it is computed from is a `leaf`.
    pub(super) fn reaches(&self, n: N, leaf: fn(&Node) -> bool) -> bool {
        let node = &self.nodes[n as usize];
        leaf(node) || node.any_operand(|a| self.reaches(a, leaf))
    }

    pub(super) fn const_slot(&self, s: Option<SlotId>, k: &Known<'_>) -> Option<u64> {
        match s {
            None => Some(0),
            Some(s) => self.konst_deep(self.slots[s.index() as usize], k)?.to_u64(),
        }
    }

    /// The constant value of `n` if the megaflow fixes every input it is computed from
    /// (the operations evaluated as [`Tracer::fold`] does).
    pub(super) fn konst_deep(&self, n: N, k: &Known<'_>) -> Option<Bits> {
        if let Some(b) = self.konst(n, k) {
            return Some(b);
        }
        let c = |x: N| self.konst_deep(x, k);
        match &self.nodes[n as usize] {
            Node::Mux(cond, a, b) => c(if truth(&c(*cond)?) { *a } else { *b }),
            n => operation(n, c),
        }
    }

    /// The key slots a traffic-manager input (egress port, multicast group, priority) that
    /// the megaflow does not fix yet is computed from (`hdr.routes[0].port` for a source
    /// route): matching them whole fixes it, as Open vSwitch un-wildcards a field an output
    /// action takes its port from. Empty if there is none, or an input is computed from
    /// something else (nothing to do: the run is not compiled).
    pub fn tm_inputs(&self, k: &Known<'_>) -> Vec<SlotId> {
        let mut out = Vec::new();
        let inputs = match self.setup.xdp {
            // An eBPF filter: its verdict, and the port it sends an accepted packet to.
            None if let Some(accept) = self.setup.ebpf => [accept, self.setup.port, None],
            // XDP: the action, then the port it sends to (the input port or the output port).
            Some((action, port)) => {
                let to = match self.const_slot(action, k) {
                    Some(koi_interp::ebpf::XDP_REDIRECT) => port,
                    Some(_) => self.setup.port,
                    None => None,
                };
                [action, to, None]
            }
            None => match &self.setup.psa {
                Some(psa) => psa.tm_inputs(),
                None => [
                    self.setup.egress_spec,
                    self.setup.mcast_grp,
                    self.setup.priority,
                ],
            },
        };
        for s in inputs.into_iter().flatten() {
            let n = self.slots[s.index() as usize];
            if self.konst_deep(n, k).is_none() && !self.leaves(n, &mut out) {
                return Vec::new();
            }
        }
        out
    }

    /// Adds to `out` the slots of the packet fields (and the ingress port) `n` is computed
    /// from; `false` if it is computed from anything else.
    pub(super) fn leaves(&self, n: N, out: &mut Vec<SlotId>) -> bool {
        match &self.nodes[n as usize] {
            Node::Const(_) => true,
            Node::Pkt { slot, w, .. } => {
                let whole = self.p.phv.slots.get(*slot).is_some_and(|s| s.width == *w);
                if whole && !out.contains(slot) {
                    out.push(*slot);
                }
                whole
            }
            Node::Port(_) => match self.setup.port {
                Some(s) => {
                    if !out.contains(&s) {
                        out.push(s);
                    }
                    true
                }
                None => false,
            },
            Node::Un(_, a) | Node::Slice(a, ..) | Node::Cast(_, a) => self.leaves(*a, out),
            Node::Bin(_, a, b) => self.leaves(*a, out) && self.leaves(*b, out),
            Node::Mux(c, a, b) => {
                self.leaves(*c, out) && self.leaves(*a, out) && self.leaves(*b, out)
            }
            _ => false,
        }
    }

    /// A traffic-manager event. What the traffic manager read (egress port, multicast group,
    /// priority) must be fixed by the megaflow for its decisions to be the same for every
    /// packet of it.
    pub fn tm(&mut self, ev: &koi_interp::TmEvent, k: &Known<'_>) {
        use koi_interp::TmEvent;
        if self.failed.is_some() {
            return;
        }
        if let Some(xdp) = self.setup.xdp {
            return self.xdp_tm(ev, xdp, k);
        }
        if let Some(accept) = self.setup.ebpf {
            return self.ebpf_tm(ev, accept, k);
        }
        if self.setup.psa.is_some() {
            return self.psa_tm(ev, k);
        }
        // Inputs computed from state (`egress_spec = r.read(..)`, a group from a register):
        // guarded to the values this event shows.
        let (spec, grp) = (self.setup.egress_spec, self.setup.mcast_grp);
        match ev {
            TmEvent::Unicast { port } => {
                self.pin_tm_input(grp, 0, k);
                self.pin_tm_input(spec, *port, k);
            }
            TmEvent::Multicast { group, .. } => self.pin_tm_input(grp, *group, k),
            TmEvent::Drop(DropReason::Ingress) => {
                self.pin_tm_input(grp, 0, k);
                self.pin_tm_input(spec, self.drop_port, k);
            }
            TmEvent::Drop(DropReason::Egress) => self.pin_tm_input(spec, self.drop_port, k),
            _ => {}
        }
        let spec = self.const_slot(self.setup.egress_spec, k);
        let grp = self.const_slot(self.setup.mcast_grp, k);
        let prio = self.const_slot(self.setup.priority, k);
        let fixed = match ev {
            TmEvent::Unicast { port } => spec == Some(*port) && grp == Some(0) && prio.is_some(),
            TmEvent::Multicast { group, copies } => {
                // The replicas just queued start without the packet's `truncate`.
                let n = self.queue.len();
                for q in self.queue.range_mut(n.saturating_sub(*copies)..) {
                    q.1.clear();
                }
                grp == Some(*group) && *group != 0 && prio.is_some()
            }
            // The session is a constant (see `Builtin::Clone`) and mirroring sessions are
            // control-plane state, so what the session sends is the same for the megaflow.
            TmEvent::Clone { .. } => self.copying.is_some(),
            TmEvent::Drop(DropReason::NoReplicas) if self.copying.is_some() => true,
            TmEvent::Drop(DropReason::Ingress) => spec == Some(self.drop_port) && grp == Some(0),
            TmEvent::Drop(DropReason::Egress) => spec == Some(self.drop_port),
            TmEvent::Drop(DropReason::NoReplicas) => grp.is_some_and(|g| g != 0),
            TmEvent::Drop(DropReason::PriorityOutOfRange) => prio.is_some(),
            TmEvent::Digest { .. } => match self.pending_digest.take() {
                Some(op) => {
                    self.state.push(op);
                    true
                }
                None => false,
            },
            TmEvent::Drop(DropReason::Ubpf) => self.ubpf,
            _ => {
                self.fail("traffic manager event");
                return;
            }
        };
        self.verdict(ev, fixed, "traffic manager input not constant");
    }

    /// The end of a traffic-manager event: the run is not compiled unless what the event
    /// depends on is `fixed` by the megaflow (`why` says what is not); a drop ends the
    /// instance.
    fn verdict(&mut self, ev: &koi_interp::TmEvent, fixed: bool, why: &'static str) {
        if !fixed {
            self.fail(why);
        } else if let koi_interp::TmEvent::Drop(d) = ev {
            self.passes.push(Pass::Dropped(d.clone()));
        }
    }

    /// XDP's verdict: the output action (and the port it sends to) must be fixed by the
    /// megaflow; a packet the parser rejected is dropped with the action still `XDP_ABORTED`.
    fn xdp_tm(
        &mut self,
        ev: &koi_interp::TmEvent,
        (action, port): (Option<SlotId>, Option<SlotId>),
        k: &Known<'_>,
    ) {
        use koi_interp::TmEvent;
        use koi_interp::ebpf::{XDP_PASS, XDP_REDIRECT, XDP_TX};
        let a = self.const_slot(action, k);
        let fixed = match ev {
            TmEvent::Unicast { port: to } => match a {
                Some(XDP_PASS | XDP_TX) => self.const_slot(self.setup.port, k) == Some(*to),
                Some(XDP_REDIRECT) => self.const_slot(port, k) == Some(*to),
                _ => false,
            },
            TmEvent::Drop(DropReason::Filter) => {
                a.is_some_and(|a| !(XDP_PASS..=XDP_REDIRECT).contains(&a))
            }
            _ => false,
        };
        self.verdict(ev, fixed, "xdp output action or port not constant");
    }

    /// An eBPF filter's verdict: an accepted packet goes back out of its input port, which
    /// the megaflow must fix, as must `accept`; a packet the parser rejected is dropped.
    fn ebpf_tm(&mut self, ev: &koi_interp::TmEvent, accept: Option<SlotId>, k: &Known<'_>) {
        use koi_interp::TmEvent;
        let verdict = self.const_slot(accept, k);
        let fixed = match ev {
            TmEvent::Unicast { port } => {
                verdict.is_some_and(|a| a != 0)
                    && self.const_slot(self.setup.port, k) == Some(*port)
            }
            // (After a rejected parse `accept` is not read: the parse's way fixes the drop.)
            TmEvent::Drop(DropReason::Filter) => verdict == Some(0) || self.parse_rejected,
            _ => false,
        };
        self.verdict(ev, fixed, "ebpf verdict or input port not constant");
    }

    /// A pass through ingress or egress starts. An egress pass starts from the PHV its
    /// instance was queued with.
    pub fn instance(&mut self, role: koi_ir::Role) {
        if self.failed.is_some() || role != koi_ir::Role::Egress {
            return;
        }
        if self.setup.psa.is_some() {
            return self.psa_egress();
        }
        self.emitted.clear();
        match self.queue.pop_front() {
            Some((q, cut)) => {
                self.slots = q;
                self.cut = cut;
            }
            None => self.fail("egress pass without a queued instance"),
        }
    }

    /// An instance was queued for egress with the current PHV.
    pub fn enqueued(&mut self) {
        if self.failed.is_none() {
            self.queue.push_back((self.slots.clone(), self.cut.clone()));
            if self.setup.psa.is_some() {
                self.psa_enqueued();
            }
        }
    }

    /// A clone starts: the packet as it entered (an ingress clone, re-parsed as the first
    /// parse went) or as egress left it.
    pub fn copy_begin(&mut self, kind: koi_interp::CopyKind) {
        if self.failed.is_some() {
            return;
        }
        self.psa.copy = Some(kind);
        let from = match kind {
            koi_interp::CopyKind::IngressClone => self.initial.clone(),
            koi_interp::CopyKind::EgressClone => self.slots.clone(),
        };
        let cut = std::mem::take(&mut self.cut);
        self.copying = Some((std::mem::replace(&mut self.slots, from), cut));
    }

    /// The clone's metadata is zeroed but for field list `fl`, taken from the packet it is
    /// made from.
    pub fn metadata_reset(&mut self, fl: Option<koi_ir::FieldListId>) {
        if self.failed.is_some() {
            return;
        }
        let Some((from, _)) = &self.copying else {
            // Resubmission and recirculation: not compiled.
            self.fail("metadata reset outside a clone");
            return;
        };
        let from = from.clone();
        let p = self.p;
        for (id, slot) in p.phv.slots.iter() {
            if koi_interp::prepared::reset_by_copies(p, slot) {
                self.set_slot_const(id, Bits::zero(slot.width));
            }
        }
        if let Some(list) = fl.and_then(|f| self.p.field_lists.get(f)) {
            for s in &list.slots {
                let i = s.index() as usize;
                self.slots[i] = from[i];
            }
        }
    }

    /// The clone is made: back to the packet it was made from.
    pub fn copy_end(&mut self) {
        self.psa.copy = None;
        if let Some((from, cut)) = self.copying.take() {
            self.slots = from;
            self.cut = cut;
        }
    }

    /// A packet leaves on `port`: egress did not drop it, which must hold for every packet of
    /// the megaflow.
    /// The parser stopped on an error or a `reject`: uBPF then sends the packet as it came
    /// in (nothing emitted, the whole input as payload); v1model goes on to ingress.
    pub fn parser_failed(&mut self) {
        self.parse_rejected = true;
        if self.ubpf {
            self.emitted.clear();
            self.payload_start = 0;
            self.cursor_bits = 0;
        }
    }

    pub fn packet_out(&mut self, port: u64, k: &Known<'_>) {
        if self.failed.is_some() {
            return;
        }
        if self.setup.psa.is_some() {
            return self.psa_packet_out(port, k);
        }
        // An eBPF filter's packet leaves as it came in: nothing emitted, all of it payload.
        if self.setup.ebpf.is_some() {
            self.emitted.clear();
            self.payload_start = 0;
            self.cursor_bits = 0;
            return self.sent(port);
        }
        // An `egress_spec` egress computed from state: guarded not to be the drop port.
        let not_dropped = match self.setup.egress_spec {
            Some(s) if !self.ubpf => {
                let n = self.slots[s.index() as usize];
                let w = self.width(n);
                let state = self.reaches_state(n) && self.konst_deep(n, k).is_none();
                if state {
                    let drop = Bits::from_u64(w, self.drop_port);
                    let test = Test::Cases {
                        cases: vec![(drop, false)],
                        default: true,
                    };
                    self.state.push(StateOp::Guard { n, test });
                }
                state
            }
            _ => false,
        };
        match self.const_slot(self.setup.egress_spec, k) {
            _ if not_dropped => self.sent(port),
            Some(s) if s != self.drop_port || self.ubpf => self.sent(port),
            _ => self.fail("egress_spec not constant"),
        }
    }

    /// The current instance was sent on `port`.
    pub(super) fn sent(&mut self, port: u64) {
        let emitted = std::mem::take(&mut self.emitted);
        self.passes.push(Pass::Sent {
            port,
            emitted,
            slots: self.slots.clone(),
            cut: self.cut.clone(),
        });
    }

    /// A traffic-manager input (`slot`) computed from state is guarded to equal `value`, and
    /// is that constant from then on; any other input is left as it is.
    pub(super) fn pin_tm_input(&mut self, slot: Option<SlotId>, value: u64, k: &Known<'_>) {
        let Some(s) = slot else {
            return;
        };
        let n = self.slots[s.index() as usize];
        if !self.reaches_state(n) || self.konst_deep(n, k).is_some() {
            return;
        }
        let v = Bits::from_u64(self.width(n), value);
        let test = Test::Cases {
            cases: vec![(v.clone(), true)],
            default: false,
        };
        self.state.push(StateOp::Guard { n, test });
        self.set_slot_const(s, v);
    }
}
