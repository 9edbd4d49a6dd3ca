//! Gathering the facts the flow-key analysis works on: one walk over every parser state,
//! control block and action block of a [`Pipeline`], recording
//!
//! - **writes**: for each statement, the slots (or action-parameter nodes) it writes and the
//!   expressions or nodes the written value is computed from, whether the value comes from
//!   extern state, and whether it comes from the packet or the architecture (a key source);
//! - **decisions**: every expression whose value chooses what happens to the packet, with the
//!   control-flow position it controls (see [`super::DecisionKind`]);
//! - **calls**: which actions each block may run (direct calls and table applications), for
//!   the control-dependence part of the state analysis;
//! - the **architecture's own flows** (v1model: the traffic manager sets `egress_port` from
//!   `egress_spec`, `mcast_grp` and clone sessions; `verify_checksum` sets
//!   `checksum_error`; `parser_error` has no sources: the parse's own decisions fix it;
//!   PSA: the ingress metadata copied from the parser's, the egress metadata from ingress's
//!   output metadata and the clone session, and the egress parser's headers from the headers
//!   the ingress deparser emitted (and, with clones, those the ingress parser extracted and
//!   the egress deparser emitted), see [`Facts::repacked`]).
//!
//! Nodes are PHV slots (`0..slots`) followed by one node per action parameter: a parameter's
//! value comes from a table entry (decided by the table's keys) or from the arguments of a
//! direct call, which are data flow like assignments.

use super::DecisionKind;
use koi_ir::entity::EntityId;
use koi_ir::{
    ActionId, Architecture, Body, Builtin, Expr, ExternKind, HashAlgo, HeaderId, HeaderRef,
    MatchKind, Pipeline, Place, Role, SlotId, Stmt, TableId, Terminator, Transition,
};

/// A slot or an action-parameter node.
pub(crate) type Node = usize;

/// Which graph a position belongs to.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub(crate) enum BodyKey {
    Parser(u32),
    Control(u32),
    Action(u32),
}

/// A block of a control or action body, or a state of a parser.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub(crate) struct Loc {
    pub body: BodyKey,
    pub node: usize,
}

/// What a written value is computed from.
#[derive(Clone, Debug)]
pub(crate) enum Src<'a> {
    /// The assigned value: reads may be narrowed to the bits the written bits need.
    Value(&'a Expr, Option<ActionId>),
    /// An expression read whole (hash data, extern inputs, ...).
    Full(&'a Expr, Option<ActionId>),
    /// A node read whole.
    Node(Node),
}

/// How a write's value originates.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Origin {
    /// Computed from its sources (none: a constant or a table-supplied parameter).
    Data,
    /// From extern state (registers, meters, random, time): state-derived.
    State,
    /// From the packet (`extract`, `lookahead`): a key source.
    Packet,
    /// From the architecture (`packet_length()`): a key source.
    Arch,
}

/// One write of one node.
#[derive(Clone, Debug)]
pub(crate) struct Write<'a> {
    pub dst: Node,
    /// For a slice assignment, the bits `hi..=lo` written.
    pub range: Option<(u32, u32)>,
    pub srcs: Vec<Src<'a>>,
    pub origin: Origin,
    /// Where the write happens (`None`: the architecture, outside any block).
    pub loc: Option<Loc>,
}

/// One decision.
#[derive(Clone, Debug)]
pub(crate) struct DecisionFact<'a> {
    pub kind: DecisionKind,
    pub location: String,
    pub reads: Vec<Src<'a>>,
    /// The terminator (block or state) whose successors the decision chooses.
    pub controls: Option<Loc>,
    /// The table whose action choice the decision makes.
    pub table: Option<TableId>,
    /// The decision involves randomness of its own (a random action selector).
    pub random: bool,
}

/// The control-flow graph of one body: successors per node, `n` standing for the exit.
#[derive(Clone, Debug, Default)]
pub(crate) struct Graph {
    pub succ: Vec<Vec<usize>>,
    /// Nodes ending in `exit` (which ends the whole architecture block, even from an action).
    pub exits: Vec<usize>,
}

/// Everything the analysis needs from the pipeline.
pub(crate) struct Facts<'a> {
    pub p: &'a Pipeline,
    pub nslots: usize,
    /// First parameter node of each action.
    pub param_base: Vec<usize>,
    pub nnodes: usize,
    pub writes: Vec<Write<'a>>,
    pub decisions: Vec<DecisionFact<'a>>,
    /// Slots the architecture provides as inputs (`ingress_port`, preserved metadata, ...).
    pub arch_input: Vec<bool>,
    /// Slots holding state when the packet arrives (queue depths, timestamps).
    pub state_input: Vec<bool>,
    /// Per body, its graph.
    pub graphs: Vec<(BodyKey, Graph)>,
    /// Actions each position may run.
    pub calls: Vec<(Loc, ActionId)>,
    /// Slots some expression reads (anywhere, for any purpose).
    pub read_anywhere: Vec<bool>,
    /// Headers and lookahead slots in parse order, first occurrence first.
    pub parse_order: Vec<ParseItem>,
    /// PSA: the egress parser, whose packet is what the ingress deparser emitted (followed by
    /// the payload): what it extracts is not a key source but data computed from
    /// [`Facts::repacked`]. (A run whose egress parser reads past the emitted headers, into
    /// the payload, is not cached: `crate::observe`.)
    pub egress_parser: Option<BodyKey>,
    /// PSA: every slot of every header the ingress deparser may emit (their fields, varbit
    /// lengths and validity), the sources of what the egress parser extracts; with clones,
    /// also those of the headers the ingress parser extracts and the egress deparser emits
    /// ([`Facts::psa_repacked`]).
    pub repacked: Vec<Src<'a>>,
    /// PSA: whether the egress parse of a CLONE_I2E (`[0]`) and of a CLONE_E2E (`[1]`) copy
    /// is modelled by [`Facts::repacked`]. A clone that is not is never cached
    /// (`crate::observe`).
    pub psa_clones: [bool; 2],
    /// The slots of the headers a resubmitted (`[0]`) or recirculated (`[1]`) packet holds
    /// when its next parse reads it, where the analysis models that pass
    /// ([`Facts::next_passes`]); `None`: such a pass is never cached (`crate::observe`).
    pub next_pass: [Option<Vec<SlotId>>; 2],
}

/// A packet source in parse order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum ParseItem {
    Header(HeaderId),
    Slot(SlotId),
}

impl<'a> Facts<'a> {
    pub fn gather(p: &'a Pipeline) -> Facts<'a> {
        let nslots = p.phv.slots.len();
        let mut param_base = Vec::with_capacity(p.actions.len());
        let mut next = nslots;
        for a in p.actions.values() {
            param_base.push(next);
            next += a.params.len();
        }
        let mut f = Facts {
            p,
            nslots,
            param_base,
            nnodes: next,
            writes: Vec::new(),
            decisions: Vec::new(),
            arch_input: vec![false; nslots],
            state_input: vec![false; nslots],
            graphs: Vec::new(),
            calls: Vec::new(),
            read_anywhere: vec![false; nslots],
            parse_order: Vec::new(),
            egress_parser: None,
            repacked: Vec::new(),
            psa_clones: [false; 2],
            next_pass: [None, None],
        };
        f.architecture_inputs();
        f.psa_repacked();
        f.next_passes();
        for (role, block) in p.package.clone() {
            let name = p.block_name(block).unwrap_or("?").to_string();
            match block {
                koi_ir::BlockRef::Parser(id) => f.parser(id, &name),
                koi_ir::BlockRef::Control(id) => f.control(id, role, &name),
            }
        }
        for (id, a) in p.actions.iter() {
            let key = BodyKey::Action(id.index());
            let name = format!("action {}", a.preamble.name);
            f.body(key, &a.body, Some(id), &name, false);
        }
        f.architecture_flows();
        f
    }

    /// The node of parameter `n` of `action`.
    pub(super) fn param_node(&self, action: ActionId, n: u32) -> Option<Node> {
        let a = self.p.actions.get(action)?;
        ((n as usize) < a.params.len())
            .then(|| self.param_base[action.index() as usize] + n as usize)
    }

    fn intrinsic(&self, name: &str) -> Option<usize> {
        self.p
            .intrinsic(name)
            .map(|s| s.index() as usize)
            .filter(|&s| s < self.nslots)
    }

    fn architecture_inputs(&mut self) {
        let (inputs, state): (&[&str], &[&str]) = match self.p.arch {
            Architecture::V1Model => (
                &["ingress_port", "packet_length", "instance_type"],
                &[
                    "enq_timestamp",
                    "enq_qdepth",
                    "deq_timedelta",
                    "deq_qdepth",
                    "ingress_global_timestamp",
                    "egress_global_timestamp",
                ],
            ),
            Architecture::Ubpf => (&["input_port", "packet_length"], &[]),
            // Set before the ingress parser runs (the PHV the key is taken from holds them);
            // the ingress control's copies are the architecture's writes (below).
            Architecture::Psa => (
                &["ipin.ingress_port", "ipin.packet_path"],
                &["iin.ingress_timestamp", "ein.egress_timestamp"],
            ),
            // (An eBPF filter's blocks see no port: its packet leaves where it came in, the
            // port the architecture's `input_port` slot holds.)
            Architecture::Ebpf => (&["input_port"], &[]),
            Architecture::Xdp => (&["imd.input_port"], &[]),
        };
        for n in inputs {
            if let Some(s) = self.intrinsic(n) {
                self.arch_input[s] = true;
            }
        }
        for n in state {
            if let Some(s) = self.intrinsic(n) {
                self.state_input[s] = true;
            }
        }
        // Metadata preserved by resubmit, recirculate and clone arrives with the new instance.
        for fl in self.p.field_lists.values() {
            for s in &fl.slots {
                if let Some(x) = self.arch_input.get_mut(s.index() as usize) {
                    *x = true;
                }
            }
        }
    }

    /// The traffic manager's, the parser's and the checksum unit's writes of standard
    /// metadata (v1model; PSA's in [`Facts::psa_flows`]).
    fn architecture_flows(&mut self) {
        match self.p.arch {
            Architecture::V1Model => {}
            Architecture::Psa => return self.psa_flows(),
            Architecture::Xdp => return self.xdp_flows(),
            Architecture::Ebpf => return self.ebpf_flows(),
            Architecture::Ubpf => return,
        }
        let spec = self.intrinsic("egress_spec");
        let grp = self.intrinsic("mcast_grp");
        let mut port_srcs: Vec<Src<'a>> = spec
            .iter()
            .chain(grp.iter())
            .map(|&n| Src::Node(n))
            .collect();
        let p = self.p;
        for_each_stmt(p, &mut |s| {
            if let Stmt::Builtin(Builtin::Clone { session, .. }) = s {
                port_srcs.push(Src::Full(session, None));
            }
        });
        let tm_reads: Vec<Src<'a>> = spec
            .iter()
            .chain(grp.iter())
            .chain(self.intrinsic("priority").iter())
            .map(|&n| Src::Node(n))
            .collect();
        self.decide(
            DecisionKind::TrafficManager,
            "traffic manager: egress_spec, mcast_grp, priority".into(),
            tm_reads,
            None,
        );
        if let Some(port) = self.intrinsic("egress_port") {
            self.arch_write(port, port_srcs);
        }
        if let (Some(rid), Some(g)) = (self.intrinsic("egress_rid"), grp) {
            self.arch_write(rid, vec![Src::Node(g)]);
        }
        // `parser_error` is not written from data: the parser's error is a function of the
        // way the parse took and of the packet's length, which a megaflow fixes already (the
        // parser's own decisions are in its mask, a runt's key records where its parse
        // stopped, and a program runs only on packets at least as long as its run needed).
        // A decision on it adds nothing to the mask; as the sources of its value, the
        // parser's decision fields, it added all of them whole, a megaflow per value of a
        // field a `select` tells one value of from the rest (a UDP port).
    }

    /// PSA's writes between blocks: the ingress control's input metadata copied from the
    /// parser's; the egress blocks' port, instance, class of service and packet path from
    /// ingress's output metadata (the packet replication engine's choice); the traffic
    /// manager's decision on what ingress's output metadata says (the class of service
    /// among it: egress receives it, and a compiled program takes it as a constant); a
    /// clone's port, instance and path from the clone session. (Resubmissions and
    /// recirculations are not cached: `crate::observe`.)
    fn psa_flows(&mut self) {
        let node = |f: &Self, n: &str| f.intrinsic(n).map(Src::Node);
        // Where an egress instance goes and what it is: a unicast's port, a multicast
        // group's replicas, or a clone session's (ingress's or egress's).
        let dest: &[&str] = &[
            "iout.egress_port",
            "iout.multicast_group",
            "iout.clone",
            "iout.clone_session_id",
            "eout.clone",
            "eout.clone_session_id",
        ];
        let copies = [
            ("iin.ingress_port", &["ipin.ingress_port"][..]),
            ("iin.packet_path", &["ipin.packet_path"]),
            ("ein.egress_port", dest),
            ("epin.egress_port", dest),
            ("edin.egress_port", dest),
            ("ein.instance", dest),
            ("ein.class_of_service", &["iout.class_of_service"]),
            ("ein.packet_path", dest),
            ("epin.packet_path", dest),
        ];
        for (dst, srcs) in copies {
            let Some(d) = self.intrinsic(dst) else {
                continue;
            };
            let srcs = srcs.iter().filter_map(|n| node(self, n)).collect();
            self.arch_write(d, srcs);
        }
        let tm: Vec<Src<'a>> = [
            "iout.drop",
            "iout.resubmit",
            "iout.multicast_group",
            "iout.egress_port",
            "iout.class_of_service",
            "iout.clone",
            "iout.clone_session_id",
            "eout.drop",
            "eout.clone",
            "eout.clone_session_id",
        ]
        .iter()
        .filter_map(|n| node(self, n))
        .collect();
        self.decide(
            DecisionKind::TrafficManager,
            "traffic manager: drop, resubmit, multicast_group, egress_port, class_of_service, clone"
                .into(),
            tm,
            None,
        );
    }

    /// XDP: the output action and port choose what happens to the packet, and the input
    /// port is where `XDP_PASS` and `XDP_TX` send it (a compiled program sends to a port the
    /// megaflow fixes).
    fn xdp_flows(&mut self) {
        let reads: Vec<Src<'a>> = ["omd.output_action", "omd.output_port", "imd.input_port"]
            .iter()
            .filter_map(|n| self.intrinsic(n).map(Src::Node))
            .collect();
        self.decide(
            DecisionKind::TrafficManager,
            "xdp: output_action, output_port, input_port".into(),
            reads,
            None,
        );
    }

    /// eBPF filters: the verdict (`accept`) chooses what happens to the packet, and the input
    /// port is where an accepted packet goes (a compiled program sends to a port the megaflow
    /// fixes).
    fn ebpf_flows(&mut self) {
        let reads: Vec<Src<'a>> = ["accept", "input_port"]
            .iter()
            .filter_map(|n| self.intrinsic(n).map(Src::Node))
            .collect();
        self.decide(
            DecisionKind::TrafficManager,
            "ebpf filter: accept, input_port".into(),
            reads,
            None,
        );
    }

    /// PSA: the egress parser and what its packet may hold (see [`Facts::repacked`]): the
    /// headers the ingress deparser may emit; with ingress clones ([`Facts::psa_clones`]),
    /// the headers the ingress parser extracts (a CLONE_I2E copy is the packet as it came
    /// in); with egress clones, the headers the egress deparser may emit (a CLONE_E2E copy
    /// is the packet as egress deparsed it).
    fn psa_repacked(&mut self) {
        let p = self.p;
        if p.arch != Architecture::Psa {
            return;
        }
        if let Some(koi_ir::BlockRef::Parser(id)) = p.block(Role::EgressParser) {
            self.egress_parser = Some(BodyKey::Parser(id.index()));
        }
        let emitted = |role| match p.block(role) {
            Some(koi_ir::BlockRef::Control(d)) => p.controls.get(d).map(|c| emitted_headers(p, c)),
            _ => None,
        };
        let Some(ingress_emits) = emitted(Role::IngressDeparser) else {
            return;
        };
        let mut headers = ingress_emits;
        // An ingress clone's egress parse reads the packet as received: modelled when the
        // ingress parser reads it only by extracting headers (no `advance` past bytes, no
        // `lookahead` of bits it may not extract).
        if assigned(p, "iout.clone") {
            let parsed = match p.block(Role::IngressParser) {
                Some(koi_ir::BlockRef::Parser(id)) => {
                    p.parsers.get(id).and_then(|x| extracted_headers(p, x))
                }
                _ => None,
            };
            if let Some(parsed) = parsed {
                headers.extend(parsed);
                self.psa_clones[0] = true;
            }
        }
        if assigned(p, "eout.clone")
            && let Some(e) = emitted(Role::EgressDeparser)
        {
            headers.extend(e);
            self.psa_clones[1] = true;
        }
        self.repacked = header_slots(p, headers)
            .into_iter()
            .map(|s| s.index() as usize)
            .filter(|&s| s < self.nslots)
            .map(Src::Node)
            .collect();
    }

    /// A later pass of the parser (v1model's `resubmit` and `recirculate`, PSA's
    /// resubmission and recirculation) reads another packet than the first parse: a
    /// resubmitted packet is the packet as it came in, a recirculated one the packet as the
    /// deparser emitted it. Its fields are in
    /// no key, so what such a pass extracts is modelled as computed from the headers that
    /// packet holds: those the parser extracts (when it reads the packet only by extracting
    /// headers, no `lookahead` or `advance`), or those the deparser may emit. A decision
    /// here, on all of those slots whole, puts them in the key; the observer masks them
    /// (and what they are computed from) only in a run that takes such a pass, and bounds
    /// the pass's reads by what the packet holds.
    fn next_passes(&mut self) {
        let p = self.p;
        let (parser, deparser) = match p.arch {
            Architecture::V1Model => (Role::Parser, Role::Deparser),
            Architecture::Psa => (Role::IngressParser, Role::EgressDeparser),
            _ => return,
        };
        let (mut resubmits, mut recirculates) = (false, false);
        for_each_stmt(p, &mut |s| match s {
            Stmt::Builtin(Builtin::Resubmit { .. }) => resubmits = true,
            Stmt::Builtin(Builtin::Recirculate { .. }) => recirculates = true,
            _ => {}
        });
        if p.arch == Architecture::Psa {
            // PSA recirculates what egress sends to PSA_PORT_RECIRCULATE: modelled in a
            // program that names that port (one that sends there only by a port the control
            // plane gives is not cached).
            resubmits = assigned(p, "iout.resubmit");
            let mut named = false;
            for_each_stmt(p, &mut |s| {
                s.for_each_expr(&mut |e| {
                    named |= names_const(e, koi_interp::psa::PORT_RECIRCULATE)
                });
            });
            recirculates = named;
        }
        let extracted = match p.block(parser) {
            Some(koi_ir::BlockRef::Parser(id)) => {
                p.parsers.get(id).and_then(|x| extracted_headers(p, x))
            }
            _ => None,
        };
        let emitted = match p.block(deparser) {
            Some(koi_ir::BlockRef::Control(d)) => p.controls.get(d).map(|c| emitted_headers(p, c)),
            _ => None,
        };
        let passes = [
            (
                resubmits,
                extracted,
                "next pass: the headers a resubmitted packet holds",
            ),
            (
                recirculates,
                emitted,
                "next pass: the headers a recirculated packet holds",
            ),
        ];
        for (i, (taken, headers, location)) in passes.into_iter().enumerate() {
            let Some(headers) = headers.filter(|_| taken) else {
                continue;
            };
            let slots: Vec<SlotId> = header_slots(p, headers)
                .into_iter()
                .filter(|s| (s.index() as usize) < self.nslots)
                .collect();
            let reads = slots
                .iter()
                .map(|s| Src::Node(s.index() as usize))
                .collect();
            self.decide(DecisionKind::TrafficManager, location.into(), reads, None);
            self.next_pass[i] = Some(slots);
        }
    }

    fn arch_write(&mut self, dst: Node, srcs: Vec<Src<'a>>) {
        self.writes.push(Write {
            dst,
            range: None,
            srcs,
            origin: Origin::Data,
            loc: None,
        });
    }

    fn parser(&mut self, id: koi_ir::ParserId, name: &str) {
        let Some(parser) = self.p.parsers.get(id) else {
            return;
        };
        let key = BodyKey::Parser(id.index());
        let n = parser.states.len();
        let mut g = Graph {
            succ: vec![Vec::new(); n],
            exits: Vec::new(),
        };
        let target = |t: &koi_ir::Target| match t {
            koi_ir::Target::State(s) => (s.index() as usize).min(n),
            _ => n,
        };
        for (sid, st) in parser.states.iter() {
            let loc = Loc {
                body: key,
                node: sid.index() as usize,
            };
            let where_ = format!("parser {name}, state {}", st.name);
            for s in &st.stmts {
                self.stmt(s, loc, None, &where_);
            }
            match &st.transition {
                Some(Transition::Goto(t)) => g.succ[loc.node].push(target(t)),
                Some(Transition::Select { keys, cases }) => {
                    g.succ[loc.node] = cases.iter().map(|c| target(&c.next)).collect();
                    g.succ[loc.node].push(n); // no case matches: reject
                    let reads = keys.iter().map(|k| Src::Value(k, None)).collect();
                    self.decide(
                        DecisionKind::Select,
                        format!("{where_}: select"),
                        reads,
                        Some(loc),
                    );
                }
                None => g.succ[loc.node].push(n),
            }
        }
        self.graphs.push((key, g));
        if self.egress_parser != Some(key) {
            self.parse_order_of(parser);
        }
    }

    /// Headers and lookahead destinations in depth-first order of the parse graph.
    fn parse_order_of(&mut self, parser: &koi_ir::Parser) {
        let mut seen = vec![false; parser.states.len()];
        let mut stack = vec![parser.start];
        while let Some(s) = stack.pop() {
            let Some(st) = parser.states.get(s) else {
                continue;
            };
            if std::mem::replace(&mut seen[s.index() as usize], true) {
                continue;
            }
            for stmt in &st.stmts {
                match stmt {
                    Stmt::Extract { header, .. } => {
                        for h in ref_headers(self.p, header) {
                            self.push_parse_item(ParseItem::Header(h));
                        }
                    }
                    Stmt::Lookahead { dst } | Stmt::PacketLength { dst } => {
                        for s in place_slots(self.p, dst) {
                            self.push_parse_item(ParseItem::Slot(s));
                        }
                    }
                    _ => {}
                }
            }
            let targets: Vec<koi_ir::StateId> = match &st.transition {
                Some(Transition::Goto(koi_ir::Target::State(t))) => vec![*t],
                Some(Transition::Select { cases, .. }) => cases
                    .iter()
                    .filter_map(|c| match c.next {
                        koi_ir::Target::State(t) => Some(t),
                        _ => None,
                    })
                    .collect(),
                _ => Vec::new(),
            };
            stack.extend(targets.into_iter().rev());
        }
    }

    fn push_parse_item(&mut self, item: ParseItem) {
        if !self.parse_order.contains(&item) {
            self.parse_order.push(item);
        }
    }

    fn control(&mut self, id: koi_ir::ControlId, role: Role, name: &str) {
        let Some(c) = self.p.controls.get(id) else {
            return;
        };
        let where_ = format!("{} {name}", role.name());
        self.body(BodyKey::Control(id.index()), &c.body, None, &where_, true);
    }

    fn body(
        &mut self,
        key: BodyKey,
        body: &'a Body,
        ctx: Option<ActionId>,
        name: &str,
        apply: bool,
    ) {
        let n = body.blocks.len();
        let mut g = Graph {
            succ: vec![Vec::new(); n],
            exits: Vec::new(),
        };
        for (bid, b) in body.blocks.iter() {
            let loc = Loc {
                body: key,
                node: bid.index() as usize,
            };
            let where_ = format!("{name} {bid}");
            for s in &b.stmts {
                self.stmt(s, loc, ctx, &where_);
            }
            let Some(t) = &b.term else {
                g.succ[loc.node].push(n);
                continue;
            };
            g.succ[loc.node] = t
                .successors()
                .iter()
                .map(|s| (s.index() as usize).min(n))
                .collect();
            match t {
                Terminator::Branch { cond, .. } => {
                    let r = vec![Src::Value(cond, ctx)];
                    self.decide(
                        DecisionKind::Branch,
                        format!("{where_}: branch"),
                        r,
                        Some(loc),
                    );
                }
                Terminator::Switch { value, .. } => {
                    let r = vec![Src::Value(value, ctx)];
                    self.decide(
                        DecisionKind::Switch,
                        format!("{where_}: switch"),
                        r,
                        Some(loc),
                    );
                }
                Terminator::Apply { table, .. } if apply => self.apply(*table, loc, &where_),
                Terminator::Return => g.succ[loc.node].push(n),
                Terminator::Exit => {
                    g.succ[loc.node].push(n);
                    g.exits.push(loc.node);
                }
                Terminator::Goto(_) | Terminator::Apply { .. } => {}
            }
        }
        self.graphs.push((key, g));
    }

    fn apply(&mut self, table: TableId, loc: Loc, where_: &str) {
        let Some(t) = self.p.tables.get(table) else {
            return;
        };
        for a in &t.actions {
            self.calls.push((loc, a.action));
        }
        let random = t
            .implementation
            .and_then(|i| self.p.externs.get(i))
            .is_some_and(|e| {
                matches!(
                    e.kind,
                    ExternKind::ActionSelector {
                        algo: HashAlgo::Random,
                        ..
                    }
                )
            });
        let (mut keys, mut sel) = (Vec::new(), Vec::new());
        for k in &t.keys {
            self.mark_reads(&k.expr, None);
            match k.field.kind {
                MatchKind::Selector => sel.push(Src::Value(&k.expr, None)),
                _ => keys.push(Src::Value(&k.expr, None)),
            }
        }
        let tname = &t.preamble.name;
        self.decisions.push(DecisionFact {
            kind: DecisionKind::TableKey,
            location: format!("{where_}: table {tname}"),
            reads: keys,
            controls: Some(loc),
            table: Some(table),
            random,
        });
        if !sel.is_empty() {
            self.decisions.push(DecisionFact {
                kind: DecisionKind::Selector,
                location: format!("{where_}: selector of table {tname}"),
                reads: sel,
                controls: Some(loc),
                table: Some(table),
                random,
            });
        }
    }

    pub(super) fn decide(
        &mut self,
        kind: DecisionKind,
        location: String,
        reads: Vec<Src<'a>>,
        controls: Option<Loc>,
    ) {
        for r in &reads {
            if let Src::Value(e, c) | Src::Full(e, c) = r {
                self.mark_reads(e, *c);
            }
        }
        self.decisions.push(DecisionFact {
            kind,
            location,
            reads,
            controls,
            table: None,
            random: false,
        });
    }

    fn mark_reads(&mut self, e: &Expr, ctx: Option<ActionId>) {
        let (p, ra) = (self.p, &mut self.read_anywhere);
        super::reads::expr_nodes(p, e, ctx, &self.param_base, &mut |n| {
            if let Some(x) = ra.get_mut(n) {
                *x = true;
            }
        });
    }

    pub(super) fn write(
        &mut self,
        dst: &'a Place,
        srcs: Vec<Src<'a>>,
        origin: Origin,
        loc: Loc,
        ctx: Option<ActionId>,
    ) {
        if let Place::StackField { index, .. } = dst {
            let r = vec![Src::Value(index, ctx)];
            self.decide(
                DecisionKind::StackIndex,
                "stack index of a write".into(),
                r,
                None,
            );
        }
        let range = match dst {
            Place::Slice { hi, lo, .. } => Some((*hi, *lo)),
            _ => None,
        };
        for s in place_slots(self.p, dst) {
            self.writes.push(Write {
                dst: s.index() as usize,
                range,
                srcs: srcs.clone(),
                origin,
                loc: Some(loc),
            });
        }
    }

    pub(super) fn write_slot(&mut self, dst: SlotId, srcs: Vec<Src<'a>>, origin: Origin, loc: Loc) {
        self.writes.push(Write {
            dst: dst.index() as usize,
            range: None,
            srcs,
            origin,
            loc: Some(loc),
        });
    }

    /// A header reference used by a statement: a run-time index or next index decides which
    /// header the statement touches.
    pub(super) fn header_use(&mut self, h: &'a HeaderRef, ctx: Option<ActionId>, where_: &str) {
        match h {
            HeaderRef::Header(_) => {}
            HeaderRef::Index(_, e) => {
                let r = vec![Src::Value(e, ctx)];
                self.decide(
                    DecisionKind::StackIndex,
                    format!("{where_}: stack index"),
                    r,
                    None,
                );
            }
            HeaderRef::Next(s) | HeaderRef::Last(s) => {
                if let Some(st) = self.p.phv.stacks.get(*s) {
                    let r = vec![Src::Node(st.next_index.index() as usize)];
                    self.decide(
                        DecisionKind::StackIndex,
                        format!("{where_}: stack next"),
                        r,
                        None,
                    );
                }
            }
        }
    }
}

/// The headers a reference may denote.
pub(crate) fn ref_headers(p: &Pipeline, h: &HeaderRef) -> Vec<HeaderId> {
    match h {
        HeaderRef::Header(h) => vec![*h],
        HeaderRef::Next(s) | HeaderRef::Last(s) | HeaderRef::Index(s, _) => p
            .phv
            .stacks
            .get(*s)
            .map(|s| s.elems.clone())
            .unwrap_or_default(),
    }
}

/// The slots a place may denote.
pub(crate) fn place_slots<'p>(p: &'p Pipeline, pl: &'p Place) -> impl Iterator<Item = SlotId> + 'p {
    let v: Vec<SlotId> = match pl {
        Place::Slot(s) | Place::Slice { slot: s, .. } => vec![*s],
        Place::StackField { stack, field, .. } => p
            .phv
            .stacks
            .get(*stack)
            .map(|st| {
                st.elems
                    .iter()
                    .filter_map(|&h| p.phv.headers.get(h)?.fields.get(*field as usize).copied())
                    .collect()
            })
            .unwrap_or_default(),
    };
    v.into_iter().filter(|s| p.phv.slots.contains(*s))
}

/// Calls `f` on every statement of every parser, control and action.
pub(crate) fn for_each_stmt<'a>(p: &'a Pipeline, f: &mut impl FnMut(&'a Stmt)) {
    for parser in p.parsers.values() {
        parser
            .states
            .values()
            .flat_map(|s| &s.stmts)
            .for_each(&mut *f);
    }
    for b in bodies(p) {
        b.blocks.values().flat_map(|b| &b.stmts).for_each(&mut *f);
    }
}

/// The bodies of every control and action.
pub(crate) fn bodies(p: &Pipeline) -> impl Iterator<Item = &koi_ir::Body> {
    p.controls
        .values()
        .map(|c| &c.body)
        .chain(p.actions.values().map(|a| &a.body))
}

/// The headers control `c` (a deparser) may emit, itself or in the actions it may call.
fn emitted_headers(p: &Pipeline, c: &koi_ir::Control) -> Vec<HeaderId> {
    let mut out = Vec::new();
    // (An action may emit too, when a deparser calls it.)
    let bodies = std::iter::once(&c.body).chain(p.actions.values().map(|a| &a.body));
    for b in bodies.flat_map(|b| b.blocks.values()) {
        for s in &b.stmts {
            if let Stmt::Emit(h) = s {
                out.extend(ref_headers(p, h));
            }
        }
    }
    out
}

/// Whether `e` holds the constant `value` anywhere.
fn names_const(e: &Expr, value: u64) -> bool {
    if let Expr::Const(b) = e
        && b.width() <= 64
        && b.low_u64() == value
    {
        return true;
    }
    let mut found = false;
    e.for_each_child(|c| found |= names_const(c, value));
    found
}

/// Whether some assignment writes the intrinsic `name`.
fn assigned(p: &Pipeline, name: &str) -> bool {
    let Some(slot) = p.intrinsic(name) else {
        return false;
    };
    let mut found = false;
    for_each_stmt(p, &mut |s| {
        if let Stmt::Assign { dst, .. } = s {
            found |= place_slots(p, dst).any(|d| d == slot);
        }
    });
    found
}

/// Every slot of `headers` (their fields, varbit lengths and validity), each once.
fn header_slots(p: &Pipeline, headers: impl IntoIterator<Item = HeaderId>) -> Vec<SlotId> {
    let mut slots: Vec<SlotId> = Vec::new();
    let mut add = |s: SlotId| {
        if !slots.contains(&s) {
            slots.push(s);
        }
    };
    for h in headers {
        let Some(hd) = p.phv.headers.get(h) else {
            continue;
        };
        for &f in &hd.fields {
            add(f);
            if let Some(l) = p.phv.slots.get(f).and_then(|x| x.length) {
                add(l);
            }
        }
        add(hd.valid);
    }
    slots
}

/// The headers `parser` extracts, if extracting is the only way it reads the packet (`None`
/// when it has a `lookahead` or an `advance`).
fn extracted_headers(p: &Pipeline, parser: &koi_ir::Parser) -> Option<Vec<HeaderId>> {
    let mut out = Vec::new();
    for st in parser.states.values() {
        for s in &st.stmts {
            match s {
                Stmt::Extract { header, .. } => out.extend(ref_headers(p, header)),
                Stmt::Lookahead { .. } | Stmt::Advance { .. } => return None,
                _ => {}
            }
        }
    }
    Some(out)
}
