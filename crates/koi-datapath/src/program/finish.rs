//! The end of a traced run: the facts that let another run reuse its program, and the
//! program built from the trace (its outputs' operations, reads renumbered, unused nodes
//! dropped).

use super::*;

impl<'p> Tracer<'p> {
    /// What the run read outside its trace, if its program can be reused for another run
    /// with the same trace ([`crate::memo`]): `None` if it read state or extern results
    /// (anything but its inputs at the start and the `written` architecture writes of inputs).
    pub fn facts(&self, written: usize) -> Option<TraceFacts> {
        if self.reads as usize != self.inputs.len() + written {
            return None;
        }
        Some(TraceFacts {
            // The constants from the PHV the parser's assignments did not replace.
            phv_reads: self
                .consts
                .iter()
                .filter(|&&(i, n, ..)| self.initial.get(i as usize) == Some(&n))
                .map(|&(_, _, off, w)| (off, w))
                .collect(),
            inputs: self.inputs.clone(),
        })
    }

    /// The run ended: the program, or why there is none.
    /// With the program: the register values the run read, for [`Scratch::preset_reads`].
    #[allow(clippy::type_complexity)]
    pub fn finish(mut self, _k: &Known<'_>) -> Result<(Program, Vec<Option<Bits>>), &'static str> {
        if let Some(why) = self.failed {
            return Err(why);
        }
        if self.passes.is_empty() {
            return Err("no traffic manager event");
        }
        let mut results = Vec::with_capacity(self.passes.len());
        for pass in std::mem::take(&mut self.passes) {
            results.push(match pass {
                Pass::Dropped(why) => Res::Drop(why),
                Pass::Sent {
                    port,
                    emitted,
                    slots,
                    cut,
                } => Res::Send(port, self.out_prog(&emitted, &slots, cut)?),
            });
        }
        for op in &self.state {
            let opaque = match op {
                StateOp::Count(_, n)
                | StateOp::RegRead(_, n, _)
                | StateOp::Meter(_, n, _)
                | StateOp::Guard { n, .. } => self.reaches_opaque(*n),
                StateOp::RegWrite(_, n, v) | StateOp::Random { lo: n, hi: v, .. } => {
                    self.reaches_opaque(*n) || self.reaches_opaque(*v)
                }
                StateOp::Digest {
                    receiver, fields, ..
                } => {
                    self.reaches_opaque(*receiver)
                        || fields.iter().any(|(_, n, _)| self.reaches_opaque(*n))
                }
                StateOp::TableHit(..) | StateOp::DirectMeter(..) | StateOp::Input { .. } => false,
            };
            if opaque {
                return Err("opaque value in a state update");
            }
        }
        let reads = std::mem::take(&mut self.read_values);
        let mut p = Program {
            nodes: self.nodes,
            widths: Vec::new(),
            narrow: Vec::new(),
            pure: Vec::new(),
            lin: Vec::new(),
            wide: false,
            plans: Vec::new(),
            guarded: self
                .state
                .iter()
                .any(|op| matches!(op, StateOp::Guard { .. })),
            state: self.state,
            results,
            jit: jit::JitCell::default(),
        };
        p.compact();
        // The inputs nothing uses (every run has the arrival time and the length).
        let mut used = vec![false; self.reads as usize];
        for n in &p.nodes {
            if let Node::RegVal { t, .. } = n
                && let Some(u) = used.get_mut(*t as usize)
            {
                *u = true;
            }
        }
        p.state.retain(|op| {
            !matches!(op, StateOp::Input { t, .. } if !used.get(*t as usize).copied().unwrap_or(false))
        });
        let reads = p.renumber_reads(reads);
        Ok((p, reads))
    }

    /// How the packet that emitted `emitted` with final values `slots` is built.
    pub(super) fn out_prog(
        &self,
        emitted: &[HeaderId],
        slots: &[N],
        cut: Vec<N>,
    ) -> Result<OutProg, &'static str> {
        if cut.iter().any(|n| self.reaches_opaque(*n)) {
            return Err("opaque truncate length");
        }
        let mut fields = Vec::with_capacity(64);
        for h in emitted {
            let hd = self.p.phv.headers.get(*h).ok_or("header")?;
            for f in &hd.fields {
                if self.is_varbit(*f) {
                    let (n, len) = self.varbit_node(slots, *f).ok_or("varbit changed")?;
                    if len > 0 {
                        fields.push((n, len));
                    }
                    continue;
                }
                let w = self.p.phv.slots.get(*f).ok_or("slot")?.width;
                fields.push((slots[f.index() as usize], w));
            }
        }
        let prefix_bits: u32 = fields.iter().map(|(_, w)| *w).sum();
        let prefix_bytes = prefix_bits.div_ceil(8) as usize;
        let copy_input = prefix_bytes * 8 == self.cursor_bits as usize;
        let mut out: Vec<OutOp> = Vec::with_capacity(fields.len());
        let mut at = 0u32;
        for (n, w) in fields {
            // Nodes reaching the output must be computable.
            if self.reaches_opaque(n) {
                return Err("opaque value in the output");
            }
            match self.nodes[n as usize] {
                Node::Pkt { off, .. } => {
                    if let Some(OutOp::Copy { src, dst, len }) = out.last_mut()
                        && *src + *len == off
                        && *dst + *len == at
                    {
                        *len += w;
                    } else {
                        out.push(OutOp::Copy {
                            src: off,
                            dst: at,
                            len: w,
                        });
                    }
                }
                Node::Const(ref b) if at.is_multiple_of(8) && w.is_multiple_of(8) => {
                    out.push(OutOp::Bytes {
                        dst: (at / 8) as usize,
                        bytes: b.to_be_bytes(),
                    })
                }
                Node::Const(ref b) => out.push(OutOp::Const {
                    dst: at,
                    value: b.clone(),
                }),
                _ => out.push(OutOp::Write {
                    dst: at,
                    n,
                    narrow: false,
                }),
            }
            at += w;
        }
        if copy_input {
            out.retain(|op| !matches!(op, OutOp::Copy { src, dst, .. } if src == dst));
        }
        Ok(OutProg {
            prefix_bytes,
            copy_input,
            out,
            payload_start: self.payload_start,
            cut,
        })
    }

    pub(super) fn reaches_opaque(&self, n: N) -> bool {
        self.reaches(n, |x| matches!(x, Node::Opaque(_)))
    }
}

impl Program {
    /// Numbers the reads the state updates make 0, 1, ... in order (dropped inputs left
    /// gaps: each read number costs native code a slot per packet); returns `values` (by old
    /// number) by new number.
    pub(super) fn renumber_reads(&mut self, values: Vec<Option<Bits>>) -> Vec<Option<Bits>> {
        fn slot(op: &mut StateOp) -> Option<&mut u32> {
            match op {
                StateOp::RegRead(_, _, t)
                | StateOp::Meter(_, _, t)
                | StateOp::DirectMeter(_, _, t)
                | StateOp::Random { t, .. }
                | StateOp::Input { t, .. } => Some(t),
                _ => None,
            }
        }
        let mut map: std::collections::HashMap<u32, u32> = std::collections::HashMap::new();
        let mut out = Vec::new();
        for op in &mut self.state {
            if let Some(t) = slot(op) {
                let new = *map.entry(*t).or_insert_with(|| {
                    out.push(values.get(*t as usize).cloned().flatten());
                    (out.len() - 1) as u32
                });
                *t = new;
            }
        }
        for n in &mut self.nodes {
            if let Node::RegVal { t, .. } = n
                && let Some(new) = map.get(t)
            {
                *t = *new;
            }
        }
        out
    }

    pub(super) fn show(&self, n: N, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.nodes[n as usize] {
            Node::Const(b) => write!(f, "{b}"),
            Node::Pkt { off, w, .. } => write!(f, "pkt[{off}+:{w}]"),
            Node::Port(_) => write!(f, "in_port"),
            Node::Opaque(_) => write!(f, "?"),
            Node::RegVal { t, .. } => write!(f, "read{t}"),
            Node::CsumReplace {
                csum,
                old,
                new,
                four,
            } => {
                write!(f, "csum_replace{}(", if *four { 4 } else { 2 })?;
                self.show(*csum, f)?;
                write!(f, ", ")?;
                self.show(*old, f)?;
                write!(f, ", ")?;
                self.show(*new, f)?;
                write!(f, ")")
            }
            Node::PayloadCsum { csum, start, .. } => {
                write!(f, "csum16_payload(")?;
                self.show(*csum, f)?;
                write!(f, ", pkt[{start}..])")
            }
            Node::Un(op, a) => {
                let s = match op {
                    UnOp::Not => "!",
                    UnOp::BitNot => "~",
                    UnOp::Neg => "-",
                };
                write!(f, "{s}(")?;
                self.show(*a, f)?;
                write!(f, ")")
            }
            Node::Bin(op, a, b) => {
                write!(f, "(")?;
                self.show(*a, f)?;
                write!(f, " {} ", op.symbol())?;
                self.show(*b, f)?;
                write!(f, ")")
            }
            Node::Slice(a, hi, lo) => {
                self.show(*a, f)?;
                write!(f, "[{hi}:{lo}]")
            }
            Node::Cast(c, a) => {
                match c {
                    Cast::Resize { width, signed } => {
                        write!(f, "({}{width})", if *signed { "int" } else { "bit" })?
                    }
                    Cast::ToBool => write!(f, "(bool)")?,
                    Cast::FromBool => write!(f, "(bit<1>)")?,
                }
                self.show(*a, f)
            }
            Node::Mux(c, a, b) => {
                write!(f, "(")?;
                self.show(*c, f)?;
                write!(f, " ? ")?;
                self.show(*a, f)?;
                write!(f, " : ")?;
                self.show(*b, f)?;
                write!(f, ")")
            }
            Node::Hash { algo, data, w } => {
                write!(f, "{}<{w}>(", algo.name())?;
                for (i, d) in data.iter().enumerate() {
                    if i > 0 {
                        write!(f, ", ")?;
                    }
                    self.show(*d, f)?;
                }
                write!(f, ")")
            }
            Node::HashResult {
                hash, base, max, ..
            } => {
                write!(f, "{base} + ")?;
                self.show(*hash, f)?;
                write!(f, " % {max}")
            }
        }
    }

    /// Keeps only the nodes the program uses (renumbered).
    pub(super) fn compact(&mut self) {
        let mut map: Vec<Option<N>> = vec![None; self.nodes.len()];
        let mut nodes = Vec::with_capacity(self.nodes.len().min(32));
        fn visit(n: N, old: &[Node], map: &mut [Option<N>], nodes: &mut Vec<Node>) -> N {
            if let Some(m) = map[n as usize] {
                return m;
            }
            let mut node = old[n as usize].clone();
            match &mut node {
                Node::Un(_, a) | Node::Slice(a, ..) | Node::Cast(_, a) => {
                    *a = visit(*a, old, map, nodes)
                }
                Node::Bin(_, a, b) => {
                    *a = visit(*a, old, map, nodes);
                    *b = visit(*b, old, map, nodes);
                }
                Node::Mux(c, a, b) => {
                    *c = visit(*c, old, map, nodes);
                    *a = visit(*a, old, map, nodes);
                    *b = visit(*b, old, map, nodes);
                }
                Node::Hash { data, .. } => {
                    for d in data.iter_mut() {
                        *d = visit(*d, old, map, nodes);
                    }
                }
                Node::HashResult { hash, .. } => *hash = visit(*hash, old, map, nodes),
                Node::RegVal { fallback, .. } => *fallback = visit(*fallback, old, map, nodes),
                Node::CsumReplace {
                    csum, old: o, new, ..
                } => {
                    *csum = visit(*csum, old, map, nodes);
                    *o = visit(*o, old, map, nodes);
                    *new = visit(*new, old, map, nodes);
                }
                Node::PayloadCsum { csum, .. } => *csum = visit(*csum, old, map, nodes),
                _ => {}
            }
            nodes.push(node);
            let id = (nodes.len() - 1) as N;
            map[n as usize] = Some(id);
            id
        }
        for op in &mut self.state {
            match op {
                StateOp::Count(_, n)
                | StateOp::RegRead(_, n, _)
                | StateOp::Meter(_, n, _)
                | StateOp::Guard { n, .. } => *n = visit(*n, &self.nodes, &mut map, &mut nodes),
                StateOp::RegWrite(_, n, v) | StateOp::Random { lo: n, hi: v, .. } => {
                    *n = visit(*n, &self.nodes, &mut map, &mut nodes);
                    *v = visit(*v, &self.nodes, &mut map, &mut nodes);
                }
                StateOp::Digest {
                    receiver, fields, ..
                } => {
                    *receiver = visit(*receiver, &self.nodes, &mut map, &mut nodes);
                    for (_, n, _) in fields.iter_mut() {
                        *n = visit(*n, &self.nodes, &mut map, &mut nodes);
                    }
                }
                StateOp::TableHit(..) | StateOp::DirectMeter(..) | StateOp::Input { .. } => {}
            }
        }
        for r in &mut self.results {
            if let Res::Send(_, o) = r {
                for op in &mut o.out {
                    if let OutOp::Write { n, .. } = op {
                        *n = visit(*n, &self.nodes, &mut map, &mut nodes);
                    }
                }
                for n in &mut o.cut {
                    *n = visit(*n, &self.nodes, &mut map, &mut nodes);
                }
            }
        }
        self.widths = (0..nodes.len() as N)
            .map(|n| node_width(&nodes, n))
            .collect();
        self.narrow.clear();
        self.plans = nodes
            .iter()
            .map(|node| match node {
                Node::Hash { data, .. } => {
                    let mut elems: Vec<Elem> = Vec::new();
                    let mut bits = 0;
                    for &d in data {
                        let w = self.widths[d as usize];
                        bits += w;
                        match (&nodes[d as usize], elems.last_mut()) {
                            (Node::Pkt { off, w, .. }, Some(Elem::Pkt { off: o, len }))
                                if *o + *len == *off =>
                            {
                                *len += *w
                            }
                            (Node::Pkt { off, w, .. }, _) => {
                                elems.push(Elem::Pkt { off: *off, len: *w })
                            }
                            _ => elems.push(Elem::Node(d)),
                        }
                    }
                    let aligned = bits % 8 == 0
                        && (bits / 8) as usize <= ALIGNED_MAX
                        && elems.iter().all(|e| match *e {
                            Elem::Pkt { off, len } => off % 8 == 0 && len % 8 == 0,
                            Elem::Node(d) => self.widths[d as usize].is_multiple_of(8),
                        });
                    Some(HashPlan {
                        elems,
                        bits,
                        aligned,
                    })
                }
                _ => None,
            })
            .collect();
        self.nodes = nodes;
        self.narrow = (0..self.nodes.len() as N)
            .map(|n| self.narrow_below(n))
            .collect();
        // Children come before their parents (`visit`), so one pass in order suffices.
        let mut pure: Vec<bool> = Vec::with_capacity(self.nodes.len());
        for node in &self.nodes {
            let p = !matches!(node, Node::RegVal { .. })
                && !node.any_operand(|a| !pure.get(a as usize).copied().unwrap_or(false));
            pure.push(p);
        }
        self.pure = pure;
        let mut wide = false;
        let mut results = std::mem::take(&mut self.results);
        for r in &mut results {
            if let Res::Send(_, o) = r {
                for op in &mut o.out {
                    if let OutOp::Write { n, narrow, .. } = op {
                        *narrow = self.is_narrow(*n);
                        wide |= !*narrow;
                    }
                }
            }
        }
        self.results = results;
        for op in &self.state {
            match op {
                StateOp::Count(_, n)
                | StateOp::RegRead(_, n, _)
                | StateOp::Meter(_, n, _)
                | StateOp::Guard { n, .. } => wide |= !self.is_narrow(*n),
                StateOp::RegWrite(_, n, v) | StateOp::Random { lo: n, hi: v, .. } => {
                    wide |= !self.is_narrow(*n) || !self.is_narrow(*v);
                }
                StateOp::Digest {
                    receiver, fields, ..
                } => {
                    wide |= !self.is_narrow(*receiver)
                        || fields.iter().any(|(_, n, _)| !self.is_narrow(*n));
                }
                StateOp::TableHit(..) | StateOp::DirectMeter(..) | StateOp::Input { .. } => {}
            }
        }
        self.wide = wide;
        self.lin = if wide {
            Vec::new()
        } else {
            self.output_nodes()
        };
    }
}
