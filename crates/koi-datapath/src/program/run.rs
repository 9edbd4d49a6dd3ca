//! Running a compiled program: its state updates and guards, then each output, its values
//! evaluated once per packet (the interpreter of [`Program`]'s nodes, in 64-bit words where
//! the values fit, else in [`Bits`]), and the arithmetic native code shares with it.

use super::*;

impl Program {
    /// Packets sent (more than one for multicast).
    pub fn outputs(&self) -> usize {
        self.results
            .iter()
            .filter(|r| matches!(r, Res::Send(..)))
            .count()
    }

    /// Whether the program has guards: it applies only to the packets whose state-dependent
    /// decisions take the recorded ways.
    pub fn is_guarded(&self) -> bool {
        self.guarded
    }

    /// Whether the program runs as native code ([`Jit`]).
    pub fn is_native(&self) -> bool {
        self.jit.get().is_some()
    }

    /// Operations run per packet (state updates and output writes), for reports.
    pub fn ops(&self) -> usize {
        self.state.len()
            + self
                .results
                .iter()
                .map(|r| match r {
                    Res::Send(_, o) => o.out.len(),
                    Res::Drop(_) => 0,
                })
                .sum::<usize>()
    }

    /// Runs the program on `pkt` (received on `port`): updates `state`, then builds each
    /// output packet in `out` and hands it, and each drop, to `emit`, in the interpreter's
    /// order. `state: None` computes the outputs only (the check at installation).
    ///
    /// A guarded program returns false when a guard fails: the packet's state-dependent
    /// decisions go another way than the program's. It then leaves `state` and the
    /// generator as they were and emits nothing.
    #[allow(clippy::too_many_arguments)]
    pub fn run(
        &self,
        pkt: &[u8],
        port: u64,
        state: Option<(&mut State, &mut koi_interp::Rng)>,
        now_ns: u64,
        out: &mut Vec<u8>,
        scratch: &mut Scratch,
        emit: &mut dyn FnMut(Emitted<'_>),
    ) -> bool {
        self.fresh_values(scratch);
        // Without a state (the check at installation), the register reads are the ones the
        // interpreter made (`Scratch::preset_reads`).
        if let Some((state, rng)) = state {
            let digests = if self.guarded {
                match self.update_state_guarded(pkt, port, state, rng, now_ns, scratch) {
                    Some(d) => d,
                    None => return false,
                }
            } else {
                self.update_state(pkt, port, state, rng, now_ns, scratch)
            };
            for _ in 0..digests {
                emit(Emitted::Digest);
            }
        }
        let code = self.jit.get().filter(|c| pkt.len() >= c.need);
        self.emit_results(pkt, port, code, out, scratch, emit);
        true
    }

    /// Whether every guard holds for `pkt` with the reads preset in `s` (the check at
    /// installation: the guards are exact for the packet that made the program).
    pub fn guards_hold(&self, pkt: &[u8], port: u64, s: &mut Scratch) -> bool {
        self.fresh_values(s);
        self.state.iter().all(|op| match op {
            StateOp::Guard { n, test } => test.holds(&self.value(*n, pkt, port, s)),
            _ => true,
        })
    }

    /// The common case in one step: a program without state operations that sends one packet
    /// and has native code for it (with no register reads): builds the packet in `out` and
    /// returns its port, as [`Program::run`] would; `None` (nothing done) for any other
    /// program, or a packet shorter than the code assumes.
    #[inline(always)]
    pub fn run_unicast(&self, pkt: &[u8], port: u64, out: &mut Vec<u8>) -> Option<u64> {
        self.jit.get()?.unicast.as_ref()?.run(pkt, port, out)
    }

    /// Builds each output packet (with `code` where it has a function) and hands it, and
    /// each drop, to `emit`.
    pub(super) fn emit_results(
        &self,
        pkt: &[u8],
        port: u64,
        code: Option<&jit::Compiled>,
        out: &mut Vec<u8>,
        scratch: &mut Scratch,
        emit: &mut dyn FnMut(Emitted<'_>),
    ) {
        let mut evaluated = false;
        for (i, r) in self.results.iter().enumerate() {
            match r {
                Res::Send(to, o) => {
                    let native = code.map(|c| (c, i));
                    self.output(o, pkt, port, native, &mut evaluated, out, scratch);
                    emit(Emitted::Packet(*to, out));
                }
                Res::Drop(why) => emit(Emitted::Drop(why)),
            }
        }
    }

    /// Whether `code` gives the interpreter's outputs for `pkt` (at least `code.need` bytes),
    /// and each state value's, twice: with no register read (both take the fallbacks), and
    /// with every read in range and set to a different value.
    pub(super) fn jit_checks_out(&self, code: &jit::Compiled, pkt: &[u8], port: u64) -> bool {
        let unread = vec![None; code.reads];
        let read: Vec<Option<Bits>> = (1..=code.reads as u64)
            .map(|t| Some(Bits::from_u64(64, t.wrapping_mul(0x9e37_79b9_7f4a_7c15))))
            .collect();
        [unread, read]
            .into_iter()
            .all(|reads| self.jit_checks_out_with(code, pkt, port, reads))
    }

    /// [`Program::jit_checks_out`] with the register reads `reads`.
    pub(super) fn jit_checks_out_with(
        &self,
        code: &jit::Compiled,
        pkt: &[u8],
        port: u64,
        reads: Vec<Option<Bits>>,
    ) -> bool {
        let mut s = Scratch::default();
        let mut out = Vec::new();
        let mut got = Vec::new();
        s.preset_reads(reads);
        self.fresh_values(&mut s);
        self.emit_results(pkt, port, None, &mut out, &mut s, &mut |e| {
            if let Emitted::Packet(to, b) = e {
                got.push((to, b.to_vec()));
            }
        });
        let mut i = 0;
        let mut same = true;
        self.emit_results(pkt, port, Some(code), &mut out, &mut s, &mut |e| {
            if let Emitted::Packet(to, b) = e {
                same &= got.get(i).is_some_and(|(t, x)| *t == to && x[..] == *b);
                i += 1;
            }
        });
        same && i == got.len()
            && code.val_nodes().all(|n| {
                self.fresh_values(&mut s);
                code.val(n, pkt, port, &s.jit_reads) == Some(self.eval64(n, pkt, port, &mut s))
            })
    }

    pub(super) fn update_state(
        &self,
        pkt: &[u8],
        port: u64,
        state: &mut State,
        rng: &mut koi_interp::Rng,
        now_ns: u64,
        scratch: &mut Scratch,
    ) -> usize {
        self.fresh_reads(scratch);
        let mut digests = 0;
        for op in &self.state {
            digests += usize::from(self.apply(op, pkt, port, state, rng, now_ns, scratch));
        }
        digests
    }

    /// [`Program::update_state`] for a guarded program: the updates that give values
    /// (register reads and writes, meters, `random`) and the guards in run order, each update
    /// logged so that a failing guard can undo them (then `None`); once every guard held, the
    /// updates nothing reads (table hits, counters, digests), in their order.
    pub(super) fn update_state_guarded(
        &self,
        pkt: &[u8],
        port: u64,
        state: &mut State,
        rng: &mut koi_interp::Rng,
        now_ns: u64,
        scratch: &mut Scratch,
    ) -> Option<usize> {
        let rng0 = rng.clone();
        scratch.undo.clear();
        self.fresh_reads(scratch);
        for op in &self.state {
            match op {
                StateOp::TableHit(..) | StateOp::Count(..) | StateOp::Digest { .. } => continue,
                StateOp::Guard { n, test } => {
                    let holds = if self.is_narrow(*n) {
                        test.holds64(self.value64(*n, pkt, port, scratch))
                    } else {
                        test.holds(&self.eval(*n, pkt, port, scratch))
                    };
                    if !holds {
                        undo(state, &mut scratch.undo);
                        *rng = rng0;
                        return None;
                    }
                    continue;
                }
                StateOp::RegWrite(r, n, _) => {
                    let idx = self.index(*n, pkt, port, scratch);
                    if let Some(old) = state.register_mut(*r).and_then(|a| a.get(idx)) {
                        scratch.undo.push(Undo::Reg(*r, idx, old.clone()));
                    }
                }
                StateOp::Meter(m, n, _) => {
                    let idx = self.index(*n, pkt, port, scratch);
                    if let Some(c) = state.meter_cell_mut(*m, idx) {
                        scratch.undo.push(Undo::Meter(*m, idx, c.clone()));
                    }
                }
                StateOp::DirectMeter(t, i, _) => {
                    if let Some(c) = state.direct_meter_cell_mut(*t, *i) {
                        scratch.undo.push(Undo::DirectMeter(*t, *i, c.clone()));
                    }
                }
                StateOp::RegRead(..) | StateOp::Random { .. } | StateOp::Input { .. } => {}
            }
            self.apply(op, pkt, port, state, rng, now_ns, scratch);
        }
        let mut digests = 0;
        for op in &self.state {
            if matches!(
                op,
                StateOp::TableHit(..) | StateOp::Count(..) | StateOp::Digest { .. }
            ) {
                digests += usize::from(self.apply(op, pkt, port, state, rng, now_ns, scratch));
            }
        }
        Some(digests)
    }

    /// Applies state update `op`; true if it queued a digest message.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn apply(
        &self,
        op: &StateOp,
        pkt: &[u8],
        port: u64,
        state: &mut State,
        rng: &mut koi_interp::Rng,
        now_ns: u64,
        scratch: &mut Scratch,
    ) -> bool {
        match op {
            StateOp::TableHit(t, i) => state.record_hit(*t, *i, pkt.len(), now_ns),
            StateOp::Count(c, n) => {
                let idx = self.index(*n, pkt, port, scratch);
                state.count(*c, idx, pkt.len());
            }
            StateOp::RegRead(r, n, t) => {
                let idx = self.index(*n, pkt, port, scratch);
                let v = state.register_mut(*r).and_then(|a| a.get(idx).cloned());
                scratch.set_read(*t, v);
            }
            StateOp::Meter(m, n, t) => {
                let idx = self.index(*n, pkt, port, scratch);
                let c = state
                    .execute_meter(*m, idx, pkt.len(), now_ns)
                    .map(|c| Bits::from_u64(64, c.code()));
                scratch.set_read(*t, c);
            }
            StateOp::DirectMeter(tb, i, t) => {
                let c = state
                    .execute_direct_meter(*tb, *i, pkt.len(), now_ns)
                    .map(|c| Bits::from_u64(64, c.code()));
                scratch.set_read(*t, c);
            }
            StateOp::Random { lo, hi, t } => {
                let lo = self.index(*lo, pkt, port, scratch);
                let hi = self.index(*hi, pkt, port, scratch);
                scratch.set_read(*t, Some(Bits::from_u64(64, rng.range(lo, hi))));
            }
            StateOp::Digest { .. } => {
                if let Some(m) = self.digest_message(op, pkt, port, scratch) {
                    state.push_digest(m);
                    return true;
                }
            }
            StateOp::RegWrite(r, n, v) => {
                let idx = self.index(*n, pkt, port, scratch);
                let v = self.value(*v, pkt, port, scratch);
                if let Some(a) = state.register_mut(*r) {
                    a.set(idx, &v);
                }
            }
            StateOp::Input { what, t } => {
                let v = match what {
                    Input::Now => now_ns / 1000,
                    Input::Zero => 0,
                    Input::Len => pkt.len() as u64,
                };
                scratch.set_read(*t, Some(Bits::from_u64(64, v)));
            }
            // Checked by `update_state_guarded` (a program without guards has none).
            StateOp::Guard { .. } => {}
        }
        false
    }

    /// The message of a [`StateOp::Digest`] for `pkt`.
    pub(super) fn digest_message(
        &self,
        op: &StateOp,
        pkt: &[u8],
        port: u64,
        scratch: &mut Scratch,
    ) -> Option<koi_state::DigestMessage> {
        let StateOp::Digest {
            digest,
            name,
            receiver,
            fields,
        } = op
        else {
            return None;
        };
        let receiver = if self.is_narrow(*receiver) {
            self.eval64(*receiver, pkt, port, scratch)
        } else {
            self.eval(*receiver, pkt, port, scratch).low_u64()
        };
        let fields = fields
            .iter()
            .map(|(f, n, w)| (f.clone(), self.value(*n, pkt, port, scratch).resize(*w)))
            .collect();
        Some(koi_state::DigestMessage {
            digest: *digest,
            name: name.clone(),
            receiver,
            fields,
        })
    }

    /// The digest messages the program sends for `pkt` (without a state: the check at
    /// installation).
    pub fn digests(
        &self,
        pkt: &[u8],
        port: u64,
        scratch: &mut Scratch,
    ) -> Vec<koi_state::DigestMessage> {
        self.fresh_values(scratch);
        self.state
            .iter()
            .filter_map(|op| self.digest_message(op, pkt, port, scratch))
            .collect()
    }

    /// Node `n`'s value as bits, through the `u64` evaluator when it is narrow.
    pub(super) fn value(&self, n: N, pkt: &[u8], port: u64, scratch: &mut Scratch) -> Bits {
        if self.is_narrow(n) {
            Bits::from_u64(self.widths[n as usize], self.value64(n, pkt, port, scratch))
        } else {
            self.eval(n, pkt, port, scratch)
        }
    }

    /// A narrow node's value, by its native code when it has some ([`jit::Compiled::val`]:
    /// the values state updates use, once the program is hot), else by [`Program::eval64`].
    #[inline]
    pub(super) fn value64(&self, n: N, pkt: &[u8], port: u64, scratch: &mut Scratch) -> u64 {
        if let Some(v) = self
            .jit
            .get()
            .and_then(|c| c.val(n, pkt, port, &scratch.jit_reads))
        {
            return v;
        }
        self.eval64(n, pkt, port, scratch)
    }

    /// Sizes native code's copy of this run's reads (all unread) before the state updates.
    #[inline]
    pub(super) fn fresh_reads(&self, scratch: &mut Scratch) {
        if let Some(c) = self.jit.get().filter(|c| c.reads > 0) {
            scratch.jit_reads.clear();
            scratch.jit_reads.resize(2 * c.reads, 0);
        }
    }

    /// The narrow values the state updates use (indices, values written, guards'), for
    /// native code: each that is not a constant, once.
    pub(super) fn state_values(&self) -> Vec<N> {
        let mut v: Vec<N> = Vec::new();
        for op in &self.state {
            match op {
                StateOp::Count(_, n)
                | StateOp::RegRead(_, n, _)
                | StateOp::Meter(_, n, _)
                | StateOp::Guard { n, .. } => v.push(*n),
                StateOp::RegWrite(_, n, w) | StateOp::Random { lo: n, hi: w, .. } => {
                    v.extend([*n, *w])
                }
                StateOp::TableHit(..)
                | StateOp::DirectMeter(..)
                | StateOp::Digest { .. }
                | StateOp::Input { .. } => {}
            }
        }
        v.retain(|&n| self.is_narrow(n) && !matches!(self.nodes[n as usize], Node::Const(_)));
        v.sort_unstable();
        v.dedup();
        v
    }

    /// Per node: whether its value depends on the packet (its bytes, its port, a value the
    /// program cannot compute), through its operands too. (Operands come before the nodes
    /// that use them.)
    pub(super) fn packet_derived(&self) -> Vec<bool> {
        let mut from: Vec<bool> = Vec::with_capacity(self.nodes.len());
        for node in &self.nodes {
            let f = match node {
                Node::Pkt { .. } | Node::Port(_) | Node::Opaque(_) | Node::PayloadCsum { .. } => {
                    true
                }
                n => n.any_operand(|a| from.get(a as usize).copied().unwrap_or(true)),
            };
            from.push(f);
        }
        from
    }

    /// Forgets the values [`Program::eval`] and [`Program::index`] kept from the previous
    /// packet.
    pub(super) fn fresh_values(&self, scratch: &mut Scratch) {
        scratch.indices.clear();
        if self.wide {
            scratch.vals.clear();
            scratch.vals.resize(self.nodes.len(), None);
        }
    }

    /// An index operand's value (the interpreter's: saturated to `u64::MAX`). One that
    /// depends on the packet alone is computed once per run ([`Scratch::indices`]).
    pub(super) fn index(&self, n: N, pkt: &[u8], port: u64, scratch: &mut Scratch) -> u64 {
        // A constant (a session's counter index) first: one look at the node, none at the
        // program's other tables, which a mix of thousands of programs keeps out of cache.
        if let Some(Node::Const(b)) = self.nodes.get(n as usize) {
            return b.to_u64().unwrap_or(u64::MAX);
        }
        if self.is_narrow(n) {
            let pure = self.pure.get(n as usize).copied().unwrap_or(false);
            if pure && let Some(&(_, v)) = scratch.indices.iter().find(|(m, _)| *m == n) {
                return v;
            }
            let v = self.value64(n, pkt, port, scratch);
            if pure {
                scratch.indices.push((n, v));
            }
            v
        } else {
            self.eval(n, pkt, port, scratch)
                .to_u64()
                .unwrap_or(u64::MAX)
        }
    }

    /// Builds output `o` in `out`: by result `native.1`'s native code when it has some, else
    /// by interpreting its writes (their values evaluated once per packet: `evaluated`).
    #[allow(clippy::too_many_arguments)]
    pub(super) fn output(
        &self,
        o: &OutProg,
        pkt: &[u8],
        port: u64,
        native: Option<(&jit::Compiled, usize)>,
        evaluated: &mut bool,
        out: &mut Vec<u8>,
        scratch: &mut Scratch,
    ) {
        let whole = o.begin(pkt, out);
        let done = native
            .is_some_and(|(c, i)| c.call(i, pkt, port, out, o.prefix_bytes, &scratch.jit_reads));
        if !done && !*evaluated && !self.lin.is_empty() {
            self.eval_all(pkt, port, scratch);
            *evaluated = true;
        }
        let ops: &[OutOp] = if done { &[] } else { &o.out };
        for op in ops {
            match op {
                OutOp::Copy { src, dst, len } => copy_bits(pkt, *src, out, *dst, *len),
                OutOp::Const { dst, value } => {
                    let _ = value.write_bits(out, *dst as usize);
                }
                OutOp::Bytes { dst, bytes } => {
                    if let Some(d) = out.get_mut(*dst..*dst + bytes.len()) {
                        d.copy_from_slice(bytes);
                    }
                }
                OutOp::Write {
                    dst,
                    n,
                    narrow: true,
                } => {
                    let v = match scratch.regs.get(*n as usize) {
                        Some(v) if !self.lin.is_empty() => *v,
                        _ => self.eval64(*n, pkt, port, scratch),
                    };
                    write_bits64(out, *dst, self.widths[*n as usize], v);
                }
                OutOp::Write { dst, n, .. } => {
                    let v = self.eval(*n, pkt, port, scratch);
                    let _ = v.write_bits(out, *dst as usize);
                }
            }
        }
        o.end(pkt, out, whole);
        if !o.cut.is_empty() {
            let t = o
                .cut
                .iter()
                .map(|n| self.index(*n, pkt, port, scratch))
                .min()
                .unwrap_or(u64::MAX);
            out.truncate(usize::try_from(t).unwrap_or(usize::MAX));
        }
    }

    /// A narrow `Hash` node's value (kept out of [`Program::eval64`] so that the common
    /// nodes stay cheap).
    /// With `regs`: the data's computed values are there ([`Program::eval_all`]).
    #[inline(never)]
    #[allow(clippy::too_many_arguments)]
    pub(super) fn hash64(
        &self,
        n: N,
        algo: HashAlgo,
        w: u32,
        pkt: &[u8],
        port: u64,
        s: &mut Scratch,
        regs: Option<&[u64]>,
    ) -> u64 {
        if algo == HashAlgo::Lookup3 {
            let Node::Hash { data, .. } = &self.nodes[n as usize] else {
                return 0;
            };
            let elems: Vec<koi_hash::ubpf::Element> = data
                .iter()
                .map(|d| koi_hash::ubpf::Element {
                    value: match regs {
                        Some(r) => r[*d as usize],
                        None => self.eval64(*d, pkt, port, s),
                    },
                    width: self.widths[*d as usize],
                })
                .collect();
            return u64::from(koi_hash::ubpf::hash(&elems).unwrap_or(0)) & mask64(w);
        }
        let Some(Some(plan)) = self.plans.get(n as usize) else {
            return self.eval(n, pkt, port, s).low_u64();
        };
        if plan.aligned && algo == HashAlgo::Csum16 {
            // The Internet checksum summed piece by piece, without assembling the data.
            let mut sum = koi_hash::checksum::Csum16::default();
            for e in &plan.elems {
                match *e {
                    Elem::Pkt { off, len } => {
                        let (a, k) = ((off / 8) as usize, (len / 8) as usize);
                        sum.feed(pkt.get(a..a + k).unwrap_or(&[]));
                    }
                    Elem::Node(d) => {
                        let k = (self.widths[d as usize] / 8) as usize;
                        let v = match regs {
                            Some(r) => r[d as usize],
                            None => self.eval64(d, pkt, port, s),
                        };
                        sum.feed(&v.to_be_bytes()[8 - k..]);
                    }
                }
            }
            return koi_hash::v1model::truncate(u64::from(sum.finish()), w);
        }
        if plan.aligned {
            let mut buf = [0u8; ALIGNED_MAX];
            let mut at = 0usize;
            for e in &plan.elems {
                match *e {
                    Elem::Pkt { off, len } => {
                        let (a, k) = ((off / 8) as usize, (len / 8) as usize);
                        if let (Some(d), Some(src)) = (buf.get_mut(at..at + k), pkt.get(a..a + k)) {
                            copy_small(d, src);
                        }
                        at += k;
                    }
                    Elem::Node(d) => {
                        let k = (self.widths[d as usize] / 8) as usize;
                        let v = match regs {
                            Some(r) => r[d as usize],
                            None => self.eval64(d, pkt, port, s),
                        };
                        if let Some(dst) = buf.get_mut(at..at + k) {
                            copy_small(dst, &v.to_be_bytes()[8 - k..]);
                        }
                        at += k;
                    }
                }
            }
            let data = &buf[..at];
            let h = match algo {
                HashAlgo::Csum16 => u64::from(koi_hash::checksum::csum16(data)),
                _ => s.customs.compute(algo, data),
            };
            return koi_hash::v1model::truncate(h, w);
        }
        let mut buf = std::mem::take(&mut s.buf);
        let nbytes = plan.bits.div_ceil(8) as usize;
        buf.clear();
        buf.resize(nbytes, 0);
        let mut at = 0u32;
        for e in &plan.elems {
            match *e {
                Elem::Pkt { off, len } => {
                    copy_bits(pkt, off, &mut buf, at, len);
                    at += len;
                }
                Elem::Node(d) => {
                    let dw = self.widths[d as usize];
                    let v = match regs {
                        Some(r) => r[d as usize],
                        None => self.eval64(d, pkt, port, s),
                    };
                    write_bits64(&mut buf, at, dw, v);
                    at += dw;
                }
            }
        }
        let h = s.customs.compute(algo, &buf);
        s.buf = buf;
        koi_hash::v1model::truncate(h, w)
    }

    /// Whether node `n` and everything below it are at most 64 bits wide (computed once per
    /// program: [`Program::narrow`]).
    #[inline]
    pub(super) fn is_narrow(&self, n: N) -> bool {
        match self.narrow.get(n as usize) {
            Some(b) => *b,
            None => self.narrow_below(n),
        }
    }

    pub(super) fn narrow_below(&self, n: N) -> bool {
        self.widths[n as usize] <= 64
            && match &self.nodes[n as usize] {
                Node::Const(_) | Node::Pkt { .. } | Node::Port(_) | Node::Opaque(_) => true,
                Node::Un(_, a) | Node::Slice(a, ..) | Node::Cast(_, a) => self.is_narrow(*a),
                Node::Bin(_, a, b) => self.is_narrow(*a) && self.is_narrow(*b),
                Node::Mux(c, a, b) => {
                    self.is_narrow(*c) && self.is_narrow(*a) && self.is_narrow(*b)
                }
                Node::Hash { data, .. } => data.iter().all(|d| self.is_narrow(*d)),
                Node::HashResult { hash, .. } => self.is_narrow(*hash),
                Node::RegVal { fallback, .. } => self.is_narrow(*fallback),
                Node::CsumReplace { csum, old, new, .. } => {
                    self.is_narrow(*csum) && self.is_narrow(*old) && self.is_narrow(*new)
                }
                Node::PayloadCsum { csum, .. } => self.is_narrow(*csum),
            }
    }

    /// Evaluates every node of [`Program::lin`] once, children first, into `s.regs`.
    pub(super) fn eval_all(&self, pkt: &[u8], port: u64, s: &mut Scratch) {
        // Every node of `lin` is written before a later one reads it: no clearing needed.
        let mut regs = std::mem::take(&mut s.regs);
        if regs.len() < self.nodes.len() {
            regs.resize(self.nodes.len(), 0);
        }
        for &n in &self.lin {
            let v = self.step(n, pkt, port, s, &regs);
            regs[n as usize] = v;
        }
        s.regs = regs;
    }

    /// Node `n`'s value from its operands' values in `r` (as [`Program::eval64`]).
    #[inline]
    pub(super) fn step(&self, n: N, pkt: &[u8], port: u64, s: &mut Scratch, r: &[u64]) -> u64 {
        let w = self.widths[n as usize];
        let v = |a: &N| r[*a as usize];
        match &self.nodes[n as usize] {
            Node::Const(b) => b.low_u64(),
            Node::Pkt { off, w, .. } => crate::fastparse::read_bits(pkt, *off, *w),
            Node::Port(w) => port & mask64(*w),
            Node::Opaque(_) => 0,
            Node::Un(op, a) => unary64(*op, v(a), w),
            Node::Bin(op, a, b) => arith64(
                *op,
                v(a),
                v(b),
                self.widths[*a as usize],
                self.widths[*b as usize],
            ),
            Node::Slice(a, hi, lo) => (v(a) >> lo) & mask64(hi - lo + 1),
            Node::Cast(c, a) => cast64(*c, v(a), self.widths[*a as usize]),
            // Both sides are computed (nodes have no effects); the condition picks.
            Node::Mux(c, a, b) => {
                if v(c) != 0 {
                    v(a)
                } else {
                    v(b)
                }
            }
            Node::Hash { algo, w, .. } => self.hash64(n, *algo, *w, pkt, port, s, Some(r)),
            Node::HashResult { hash, base, max, w } => {
                koi_hash::v1model::hash_result(v(hash), *base, *max, (*w).min(64))
            }
            Node::RegVal { t, w, fallback } => match s.reads.get(*t as usize) {
                Some(Some(x)) => x.resize(*w).low_u64(),
                _ => v(fallback),
            },
            Node::CsumReplace {
                csum,
                old,
                new,
                four,
            } => csum_replace(v(csum), v(old), v(new), *four),
            Node::PayloadCsum { csum, start, odd } => payload_csum(v(csum), pkt, *start, *odd),
        }
    }

    /// The nodes the outputs' writes use, children first; empty if some node is wide or
    /// a node's operand does not come before it.
    pub(super) fn output_nodes(&self) -> Vec<N> {
        let mut used = vec![false; self.nodes.len()];
        let mut stack: Vec<N> = Vec::new();
        for r in &self.results {
            if let Res::Send(_, o) = r {
                for op in &o.out {
                    if let OutOp::Write { n, .. } = op {
                        stack.push(*n);
                    }
                }
            }
        }
        while let Some(n) = stack.pop() {
            if std::mem::replace(&mut used[n as usize], true) {
                continue;
            }
            let kids: Vec<N> = match &self.nodes[n as usize] {
                Node::Un(_, a) | Node::Slice(a, ..) | Node::Cast(_, a) => vec![*a],
                Node::Bin(_, a, b) => vec![*a, *b],
                Node::Mux(c, a, b) => vec![*c, *a, *b],
                // A planned hash reads packet ranges itself: only its computed pieces.
                Node::Hash {
                    algo: HashAlgo::Lookup3,
                    data,
                    ..
                } => data.clone(),
                Node::Hash { data, .. } => match self.plans.get(n as usize) {
                    Some(Some(plan)) => plan
                        .elems
                        .iter()
                        .filter_map(|e| match e {
                            Elem::Node(d) => Some(*d),
                            Elem::Pkt { .. } => None,
                        })
                        .collect(),
                    _ => data.clone(),
                },
                Node::HashResult { hash, .. } => vec![*hash],
                Node::RegVal { fallback, .. } => vec![*fallback],
                Node::CsumReplace { csum, old, new, .. } => vec![*csum, *old, *new],
                Node::PayloadCsum { csum, .. } => vec![*csum],
                _ => Vec::new(),
            };
            for k in kids {
                if k >= n || self.widths[k as usize] > 64 {
                    return Vec::new();
                }
                stack.push(k);
            }
        }
        let lin: Vec<N> = (0..self.nodes.len() as N)
            .filter(|&n| used[n as usize])
            .collect();
        if lin.iter().any(|&n| self.widths[n as usize] > 64) {
            return Vec::new();
        }
        lin
    }

    /// Node `n`'s value, for a narrow node: the same bits as [`Program::eval`], in a `u64`.
    pub(super) fn eval64(&self, n: N, pkt: &[u8], port: u64, s: &mut Scratch) -> u64 {
        let w = self.widths[n as usize];
        match &self.nodes[n as usize] {
            Node::Const(b) => b.low_u64(),
            Node::Pkt { off, w, .. } => crate::fastparse::read_bits(pkt, *off, *w),
            Node::Port(w) => port & mask64(*w),
            Node::Opaque(_) => 0,
            Node::Un(op, a) => unary64(*op, self.eval64(*a, pkt, port, s), w),
            Node::Bin(op, a, b) => {
                let wa = self.widths[*a as usize];
                let wb = self.widths[*b as usize];
                let x = self.eval64(*a, pkt, port, s);
                let y = self.eval64(*b, pkt, port, s);
                arith64(*op, x, y, wa, wb)
            }
            Node::Slice(a, hi, lo) => (self.eval64(*a, pkt, port, s) >> lo) & mask64(hi - lo + 1),
            Node::Cast(c, a) => {
                let wa = self.widths[*a as usize];
                cast64(*c, self.eval64(*a, pkt, port, s), wa)
            }
            Node::Mux(c, a, b) => {
                if self.eval64(*c, pkt, port, s) != 0 {
                    self.eval64(*a, pkt, port, s)
                } else {
                    self.eval64(*b, pkt, port, s)
                }
            }
            Node::Hash { algo, w, .. } => self.hash64(n, *algo, *w, pkt, port, s, None),
            Node::HashResult { hash, base, max, w } => {
                let h = self.eval64(*hash, pkt, port, s);
                koi_hash::v1model::hash_result(h, *base, *max, (*w).min(64))
            }
            // (`w` is at most 64: the value resized to it is its low `w` bits.)
            Node::RegVal { t, w, fallback } => match s.reads.get(*t as usize) {
                Some(Some(v)) => v.low_u64() & mask64(*w),
                _ => self.eval64(*fallback, pkt, port, s),
            },
            Node::CsumReplace {
                csum,
                old,
                new,
                four,
            } => {
                let c = self.eval64(*csum, pkt, port, s);
                let o = self.eval64(*old, pkt, port, s);
                let n = self.eval64(*new, pkt, port, s);
                csum_replace(c, o, n, *four)
            }
            Node::PayloadCsum { csum, start, odd } => {
                payload_csum(self.eval64(*csum, pkt, port, s), pkt, *start, *odd)
            }
        }
    }

    pub(super) fn eval(&self, n: N, pkt: &[u8], port: u64, s: &mut Scratch) -> Bits {
        if s.vals.len() != self.nodes.len() {
            s.vals.clear();
            s.vals.resize(self.nodes.len(), None);
        }
        if let Some(Some(v)) = s.vals.get(n as usize) {
            return v.clone();
        }
        let v = match &self.nodes[n as usize] {
            Node::Const(b) => b.clone(),
            Node::Pkt { off, w, .. } => {
                Bits::read_bits(pkt, *off as usize, *w).unwrap_or_else(|_| Bits::zero(*w))
            }
            Node::Port(w) => Bits::from_u64(*w, port),
            Node::Opaque(w) => Bits::zero(*w),
            Node::Un(op, a) => unary(*op, &self.eval(*a, pkt, port, s)),
            Node::Bin(op, a, b) => {
                let x = self.eval(*a, pkt, port, s);
                let y = self.eval(*b, pkt, port, s);
                arith(*op, &x, &y)
            }
            Node::Slice(a, hi, lo) => self.eval(*a, pkt, port, s).slice(*hi, *lo),
            Node::Cast(c, a) => cast(*c, &self.eval(*a, pkt, port, s)),
            Node::Mux(c, a, b) => {
                if self.eval(*c, pkt, port, s).is_zero() {
                    self.eval(*b, pkt, port, s)
                } else {
                    self.eval(*a, pkt, port, s)
                }
            }
            Node::Hash {
                algo: HashAlgo::Lookup3,
                data,
                w,
            } => {
                let elems: Vec<koi_hash::ubpf::Element> = data
                    .iter()
                    .map(|d| {
                        let v = self.eval(*d, pkt, port, s);
                        koi_hash::ubpf::Element {
                            value: v.low_u64(),
                            width: v.width(),
                        }
                    })
                    .collect();
                Bits::from_u64(*w, u64::from(koi_hash::ubpf::hash(&elems).unwrap_or(0)))
            }
            Node::Hash { algo, data, w } => {
                let mut bits = std::mem::take(&mut s.bits);
                bits.clear();
                for d in data {
                    let v = self.eval(*d, pkt, port, s);
                    v.with_be_bytes(|b| bits.push(b, v.width() as usize));
                }
                let h = match algo.calculation() {
                    Some(c) => s.customs.checksum(c, bits.as_bytes()),
                    None => v1_algo(*algo)
                        .and_then(|a| Calculation::new(a).compute(&bits))
                        .unwrap_or(0),
                };
                s.bits = bits;
                Bits::from_u64((*w).min(64), koi_hash::v1model::truncate(h, *w))
            }
            Node::RegVal { t, w, fallback } => match s.reads.get(*t as usize) {
                Some(Some(v)) => v.resize(*w),
                _ => self.eval(*fallback, pkt, port, s),
            },
            Node::CsumReplace {
                csum,
                old,
                new,
                four,
            } => {
                let c = self.eval(*csum, pkt, port, s).low_u64();
                let o = self.eval(*old, pkt, port, s).low_u64();
                let n = self.eval(*new, pkt, port, s).low_u64();
                Bits::from_u64(16, csum_replace(c, o, n, *four))
            }
            Node::PayloadCsum { csum, start, odd } => {
                let c = self.eval(*csum, pkt, port, s).low_u64();
                Bits::from_u64(16, payload_csum(c, pkt, *start, *odd))
            }
            Node::HashResult { hash, base, max, w } => {
                let h = self.eval(*hash, pkt, port, s).low_u64();
                Bits::from_u64(
                    *w,
                    koi_hash::v1model::hash_result(h, *base, *max, (*w).min(64)),
                )
            }
        };
        if let Some(slot) = s.vals.get_mut(n as usize) {
            *slot = Some(v.clone());
        }
        v
    }
}

/// Undoes the logged state updates, latest first.
pub(super) fn undo(state: &mut State, log: &mut Vec<Undo>) {
    while let Some(u) = log.pop() {
        match u {
            Undo::Reg(r, i, v) => {
                if let Some(a) = state.register_mut(r) {
                    a.set(i, &v);
                }
            }
            Undo::Meter(m, i, c) => {
                if let Some(x) = state.meter_cell_mut(m, i) {
                    *x = c;
                }
            }
            Undo::DirectMeter(t, i, c) => {
                if let Some(x) = state.direct_meter_cell_mut(t, i) {
                    *x = c;
                }
            }
        }
    }
}

pub(super) fn mask64(w: u32) -> u64 {
    if w >= 64 { u64::MAX } else { (1u64 << w) - 1 }
}

/// Sign-extends the `w`-bit value `x` to an `i128`.
pub(super) fn sext(x: u64, w: u32) -> i128 {
    if w == 0 {
        return 0;
    }
    if (x >> (w - 1)) & 1 == 1 {
        i128::from((x | !mask64(w)) as i64)
    } else {
        i128::from(x)
    }
}

/// The interpreter's unary operators on a `u64` value of `w` (at most 64) bits.
pub(crate) fn unary64(op: UnOp, x: u64, w: u32) -> u64 {
    match op {
        UnOp::Not => u64::from(x == 0),
        UnOp::BitNot => !x & mask64(w),
        UnOp::Neg => x.wrapping_neg() & mask64(w),
    }
}

pub(super) fn cast64(c: Cast, x: u64, wa: u32) -> u64 {
    match c {
        Cast::Resize { width, signed } => {
            if signed && width > wa && wa > 0 && (x >> (wa - 1)) & 1 == 1 {
                (x | !mask64(wa)) & mask64(width)
            } else {
                x & mask64(width)
            }
        }
        Cast::ToBool | Cast::FromBool => u64::from(x != 0),
    }
}

/// The interpreter's binary operators on `u64` values of widths `wa` and `wb` (at most 64;
/// the result too), bit for bit what [`arith`] computes on [`Bits`].
pub(crate) fn arith64(op: BinOp, x: u64, y: u64, wa: u32, wb: u32) -> u64 {
    use BinOp::*;
    let m = mask64(wa);
    let sx = || sext(x, wa);
    let sy = || sext(y, wb);
    match op {
        Add => x.wrapping_add(y) & m,
        Sub => x.wrapping_sub(y) & m,
        Mul => x.wrapping_mul(y) & m,
        Div => x.checked_div(y).unwrap_or(0),
        Mod => x.checked_rem(y).unwrap_or(0),
        AddSatU => x.checked_add(y).map_or(m, |v| v.min(m)),
        SubSatU => x.saturating_sub(y),
        AddSatS | SubSatS => {
            let v = if op == AddSatS {
                sx() + sy()
            } else {
                sx() - sy()
            };
            let (lo, hi) = if wa == 0 {
                (0, 0)
            } else {
                (-(1i128 << (wa - 1)), (1i128 << (wa - 1)) - 1)
            };
            (v.clamp(lo, hi) as u64) & m
        }
        BitAnd => x & y,
        BitOr => x | y,
        BitXor => x ^ y,
        Shl => {
            if y >= u64::from(wa) {
                0
            } else {
                (x << y) & m
            }
        }
        ShrU => {
            if y >= u64::from(wa) {
                0
            } else {
                x >> y
            }
        }
        ShrS => {
            let amt = y.min(127) as u32;
            ((sx() >> amt.min(127)) as u64) & m
        }
        Concat => {
            if wb >= 64 {
                y
            } else {
                (x << wb) | y
            }
        }
        Eq => u64::from(x == y),
        Ne => u64::from(x != y),
        LtU => u64::from(x < y),
        LeU => u64::from(x <= y),
        GtU => u64::from(x > y),
        GeU => u64::from(x >= y),
        LtS => u64::from(sx() < sy()),
        LeS => u64::from(sx() <= sy()),
        GtS => u64::from(sx() > sy()),
        GeS => u64::from(sx() >= sy()),
        And => u64::from(x != 0 && y != 0),
        Or => u64::from(x != 0 || y != 0),
    }
}

/// Writes the low `w` (at most 64) bits of `v` at bit `at` of `buf`, MSB first.
#[inline]
pub(super) fn write_bits64(buf: &mut [u8], at: u32, w: u32, v: u64) {
    if w == 0 {
        return;
    }
    let first = (at / 8) as usize;
    if at.is_multiple_of(8) && w.is_multiple_of(8) {
        let n = (w / 8) as usize;
        match buf.get_mut(first..first + n) {
            Some([d]) => *d = v as u8,
            Some([a, b]) => [*a, *b] = (v as u16).to_be_bytes(),
            Some(d) => copy_small(d, &v.to_be_bytes()[8 - n..]),
            None => {}
        }
        return;
    }
    // Read-modify-write of the (at most 9) bytes the field spans, in a u128 window.
    let shift = at % 8;
    let n = (shift + w).div_ceil(8) as usize;
    let Some(span) = buf.get_mut(first..first + n) else {
        return;
    };
    let mut win: u128 = 0;
    for b in span.iter() {
        win = win << 8 | u128::from(*b);
    }
    let low = (n as u32) * 8 - shift - w;
    let m = (u128::from(mask64(w))) << low;
    win = (win & !m) | ((u128::from(v & mask64(w))) << low);
    for (i, b) in span.iter_mut().enumerate() {
        *b = (win >> (8 * (n - 1 - i))) as u8;
    }
}

/// `d.copy_from_slice(s)` for the few bytes of a field, without a call to `memcpy`.
#[inline(always)]
pub(super) fn copy_small(d: &mut [u8], s: &[u8]) {
    for (x, y) in d.iter_mut().zip(s) {
        *x = *y;
    }
}

/// Copies `len` bits from `src` bit `from` to `dst` bit `to` (bytes when aligned).
pub(super) fn copy_bits(src: &[u8], from: u32, dst: &mut [u8], to: u32, len: u32) {
    if from.is_multiple_of(8) && to.is_multiple_of(8) && len.is_multiple_of(8) {
        let (a, b, n) = ((from / 8) as usize, (to / 8) as usize, (len / 8) as usize);
        if let (Some(s), Some(d)) = (src.get(a..a + n), dst.get_mut(b..b + n)) {
            d.copy_from_slice(s);
        }
        return;
    }
    let mut done = 0;
    while done < len {
        let n = (len - done).min(64);
        if let Ok(v) = Bits::read_bits(src, (from + done) as usize, n) {
            let _ = v.write_bits(dst, (to + done) as usize);
        }
        done += n;
    }
}

/// The algorithms compiled programs compute ([`koi_interp::externs::v1model_algo`]'s, but
/// `random`, which is random).
pub(crate) fn v1_algo(a: HashAlgo) -> Option<HashAlgorithm> {
    match a {
        HashAlgo::Random => None,
        _ => koi_interp::externs::v1model_algo(a),
    }
}

pub(super) fn truth(b: &Bits) -> bool {
    !b.is_zero()
}

/// The interpreter's binary operators, on bits (bools as 1-bit values): its own functions.
pub(super) fn arith(op: BinOp, x: &Bits, y: &Bits) -> Bits {
    koi_interp::eval::arith(op, x, y).to_bits()
}

pub(super) fn unary(op: UnOp, v: &Bits) -> Bits {
    koi_interp::eval::unary(op, Value::Bits(v.clone())).to_bits()
}

pub(super) fn cast(c: Cast, v: &Bits) -> Bits {
    koi_interp::eval::cast(c, Value::Bits(v.clone())).to_bits()
}
