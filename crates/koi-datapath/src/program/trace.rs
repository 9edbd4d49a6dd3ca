//! The tracer's symbolic execution: the parse's values as nodes, then the run's statements,
//! expressions, header and stack operations and built-in calls over those nodes.

use super::*;

impl<'p> Tracer<'p> {
    /// A tracer for a run whose parse ended with the PHV `phv0` and the headers where
    /// `parsed` says; `None` if the run cannot be compiled (not v1model or uBPF, a parse the fast
    /// parser did not follow).
    pub fn new(
        p: &'p Pipeline,
        setup: &Arc<TracerSetup>,
        drop_port: u64,
        fast: &FastParser,
        parsed: &Parsed,
        phv0: &[u8],
    ) -> Option<Tracer<'p>> {
        let ubpf = setup.ubpf;
        if !parsed.cursor.is_multiple_of(8) || parsed.reextracted {
            return None;
        }
        let mut t = Tracer {
            p,
            drop_port,
            nodes: Vec::with_capacity(2 * setup.slots.len()),
            slots: Vec::with_capacity(setup.slots.len()),
            frames: Vec::new(),
            pending: None,
            failed: None,
            parse_rejected: false,
            emitted: Vec::new(),
            // (Every run starts with its inputs: the arrival time and the length.)
            state: Vec::with_capacity(8),
            passes: Vec::new(),
            initial: Vec::new(),
            queue: std::collections::VecDeque::new(),
            copying: None,
            cut: Vec::new(),
            pending_digest: None,
            reads: 0,
            read_values: Vec::with_capacity(4),
            pending_read: None,
            meter_colors: Vec::new(),
            ubpf,
            setup: Arc::clone(setup),
            payload_start: (parsed.cursor / 8) as usize,
            cursor_bits: parsed.cursor,
            varbits: Vec::new(),
            inputs: Vec::new(),
            consts: Vec::with_capacity(setup.slots.len()),
            psa: Default::default(),
        };
        for init in &setup.slots {
            let node = match *init {
                SlotInit::Header {
                    h,
                    rel,
                    w,
                    slot,
                    phv_off,
                } => match parsed.hdr_off.get(h as usize).copied()? {
                    NONE => {
                        t.consts
                            .push((t.slots.len() as u32, t.nodes.len() as N, phv_off, w));
                        Node::Const(phv_value(phv0, phv_off, w))
                    }
                    off => Node::Pkt {
                        off: off + rel,
                        w,
                        slot,
                    },
                },
                SlotInit::Port(w) => Node::Port(w),
                SlotInit::Opaque(w) => Node::Opaque(w),
                SlotInit::Input { what, off, w } => {
                    t.inputs.push((off, w));
                    let n = t.input(what, phv_value(phv0, off, w), w);
                    t.slots.push(n);
                    continue;
                }
                SlotInit::Varbit { h, rel, slot } => {
                    let len = parsed.varbit.get(h as usize).copied()?;
                    let node = match parsed.hdr_off.get(h as usize).copied()? {
                        off if off != NONE && len > 0 => Node::Pkt {
                            off: off + rel,
                            w: len,
                            slot,
                        },
                        // (Never evaluated: emits and checksums leave it out.)
                        _ => Node::Const(Bits::zero(0)),
                    };
                    let n = t.add(node);
                    t.varbits.push((slot, n, len));
                    t.slots.push(n);
                    continue;
                }
                SlotInit::Phv { off, w } => {
                    t.consts
                        .push((t.slots.len() as u32, t.nodes.len() as N, off, w));
                    Node::Const(phv_value(phv0, off, w))
                }
                SlotInit::Missing => return None,
            };
            let n = t.add(node);
            t.slots.push(n);
        }
        // The parser's assignments, in the order they ran, with the stack elements each read.
        // A variable read before any assignment has its value at the start of the parse, 0.
        let mut vars: Vec<Option<N>> = vec![None; fast.vars()];
        let mut aheads = parsed.lookaheads.iter();
        for (i, id) in parsed.assigned.iter().enumerate() {
            let (dst, e) = fast.assignment(*id)?;
            let &(from, to) = parsed.assigned_reads.get(i)?;
            let mut reads = parsed.stack_reads.get(from as usize..to as usize)?.iter();
            // A `lookahead` is its slot's value when the parse ended if nothing wrote the slot
            // after it. An overwritten one is not followed: the flow key holds the slot's final
            // value only, so the megaflow would not fix the path it decided.
            let last_write = matches!(e, Ex::Ahead(_))
                && !parsed.assigned[i + 1..]
                    .iter()
                    .any(|j| fast.assignment(*j).is_some_and(|(d, _)| d == dst));
            let mut cx = ParserCx {
                parsed,
                reads: &mut reads,
                vars: &vars,
                aheads: &mut aheads,
                ahead_slot: last_write.then_some(*dst),
            };
            let n = t.parser_value(e, &mut cx)?;
            let w = p.phv.slots.get(*dst)?.width;
            let n = if t.width(n) != w {
                t.add(Node::Cast(
                    Cast::Resize {
                        width: w,
                        signed: false,
                    },
                    n,
                ))
            } else {
                n
            };
            *t.slots.get_mut(dst.index() as usize)? = n;
            if let Some(v) = fast.var_of(*dst).and_then(|v| vars.get_mut(v as usize)) {
                *v = Some(n);
            }
        }
        t.initial = t.slots.clone();
        if setup.psa.is_some() {
            t.psa.parsed = t.psa_parsed(parsed);
        }
        Some(t)
    }

    /// A value the parser computed, as a node; `reads` are the stack elements its run-time
    /// indices named, in evaluation order.
    pub(super) fn parser_value(&mut self, e: &Ex, cx: &mut ParserCx<'_, '_>) -> Option<N> {
        let parsed = cx.parsed;
        Some(match e {
            Ex::Field { h, off, w, slot } => {
                let base = *parsed.hdr_off.get(*h as usize)?;
                if base == NONE {
                    self.add(Node::Const(Bits::zero(*w)))
                } else {
                    self.add(Node::Pkt {
                        off: base + off,
                        w: *w,
                        slot: *slot,
                    })
                }
            }
            Ex::Valid(h) => {
                let v = *parsed.valid.get(*h as usize)?;
                self.add(Node::Const(Bits::from_bool(v)))
            }
            // The index when the parse ended, not necessarily when the assignment ran.
            Ex::Next(_) => return None,
            Ex::Port(w) => self.add(Node::Port(*w)),
            Ex::Len(w) => self.add(Node::Opaque(*w)),
            Ex::Const(v, w) => self.add(Node::Const(Bits::from_u64(*w, *v))),
            // Only while its slot keeps these bits to the end of the parse: the megaflow fixes
            // a `lookahead` through that slot's final value, which an overwritten one is not.
            Ex::Ahead(w) => {
                let off = *cx.aheads.next()?;
                self.add(Node::Pkt {
                    off,
                    w: *w,
                    slot: cx.ahead_slot?,
                })
            }
            // An overwritten field: its last assignment on this path, else the packet's bits
            // (a header extracted again after an assignment leaves the run untraced).
            Ex::Over { var, field } => match *cx.vars.get(*var as usize)? {
                Some(n) => n,
                None => self.parser_value(field, cx)?,
            },
            // Bits of a wide `lookahead`'s value (the node its last run gave the variable).
            Ex::AheadSlice { var, hi, lo, .. } => match *cx.vars.get(*var as usize)? {
                Some(n) => self.add(Node::Slice(n, *hi, *lo)),
                None => self.add(Node::Const(Bits::zero(hi - lo + 1))),
            },
            // The variable's last assignment on this path, else its value at the start.
            Ex::Var(v, w) => match *cx.vars.get(*v as usize)? {
                Some(n) => n,
                None => self.add(Node::Const(Bits::zero(*w))),
            },
            Ex::Bin(op, a, b, ..) => {
                let a = self.parser_value(a, cx)?;
                let b = self.parser_value(b, cx)?;
                self.add(Node::Bin(*op, a, b))
            }
            Ex::Un(op, a, _) => {
                let a = self.parser_value(a, cx)?;
                self.add(Node::Un(*op, a))
            }
            // The element the index named then (a path-fixed index reads no other element).
            Ex::StackField {
                elems,
                slots,
                index,
                off,
                w,
            } if crate::fastparse::path_fixed(index) => {
                let h = *cx.reads.next()?;
                let Some(i) = elems.iter().position(|&x| x == h) else {
                    return Some(self.add(Node::Const(Bits::zero(*w))));
                };
                match *parsed.hdr_off.get(h as usize)? {
                    NONE => self.add(Node::Const(Bits::zero(*w))),
                    base => self.add(Node::Pkt {
                        off: base + off,
                        w: *w,
                        slot: *slots.get(i)?,
                    }),
                }
            }
            Ex::StackField { .. } => return None,
            Ex::Slice(v, lo, w) => {
                let v = self.parser_value(v, cx)?;
                self.add(Node::Slice(v, lo + w - 1, *lo))
            }
            Ex::Concat(a, b, _) => {
                let a = self.parser_value(a, cx)?;
                let b = self.parser_value(b, cx)?;
                self.add(Node::Bin(BinOp::Concat, a, b))
            }
            Ex::Trunc(v, w) => {
                let v = self.parser_value(v, cx)?;
                self.add(Node::Cast(
                    Cast::Resize {
                        width: *w,
                        signed: false,
                    },
                    v,
                ))
            }
            Ex::Sext(v, _, to) => {
                let v = self.parser_value(v, cx)?;
                self.add(Node::Cast(
                    Cast::Resize {
                        width: *to,
                        signed: true,
                    },
                    v,
                ))
            }
        })
    }

    pub(super) fn add(&mut self, n: Node) -> N {
        self.nodes.push(n);
        (self.nodes.len() - 1) as N
    }

    /// For a checksum over `data` and, with `payload`, the packet's payload: `Some(None)`
    /// without the payload; `Some(Some(odd))` for `csum16` over whole bytes of data (`odd`:
    /// an odd number of them), which [`Node::PayloadCsum`] continues over the payload;
    /// `None` for anything else (not followed).
    pub(super) fn payload_parity(
        &self,
        payload: bool,
        algo: HashAlgo,
        data: &[N],
    ) -> Option<Option<bool>> {
        if !payload {
            return Some(None);
        }
        let bits: u32 = data.iter().map(|n| self.width(*n)).sum();
        (algo == HashAlgo::Csum16 && bits.is_multiple_of(8)).then_some(Some((bits / 8) % 2 == 1))
    }

    pub(super) fn is_varbit(&self, slot: SlotId) -> bool {
        self.p
            .phv
            .slots
            .get(slot)
            .is_some_and(|s| matches!(s.ty, Ty::Varbit(_)))
    }

    /// Varbit `slot`'s node and length in `slots` (a pass's values), if it still holds the
    /// packet bits a parse's `extract` gave a varbit field.
    pub(super) fn varbit_node(&self, slots: &[N], slot: SlotId) -> Option<(N, u32)> {
        let &(_, n, len) = self.varbits.iter().find(|v| v.0 == slot)?;
        (*slots.get(slot.index() as usize)? == n).then_some((n, len))
    }

    pub(super) fn fail(&mut self, why: &'static str) {
        if self.failed.is_none() {
            self.failed = Some(why);
        }
    }

    /// Why the run cannot be compiled, if it cannot.
    pub fn failed(&self) -> Option<&'static str> {
        self.failed
    }

    pub(super) fn width(&self, n: N) -> u32 {
        node_width(&self.nodes, n)
    }

    /// The constant value of `n`, if the megaflow fixes it.
    pub(super) fn konst(&self, n: N, k: &Known<'_>) -> Option<Bits> {
        match &self.nodes[n as usize] {
            Node::Const(b) => Some(b.clone()),
            Node::Pkt { slot, w, .. } => {
                let s = self.p.phv.slots.get(*slot)?;
                // (A varbit's bits are not its slot's: never a constant.)
                if *w != s.width {
                    return None;
                }
                fully_masked(k, *slot, s.width).then(|| k.phv(s.offset, s.width))
            }
            Node::Port(_) => {
                let slot = self.setup.port?;
                let s = self.p.phv.slots.get(slot)?;
                fully_masked(k, slot, s.width).then(|| k.phv(s.offset, s.width))
            }
            _ => None,
        }
    }

    pub(super) fn constant(&mut self, b: Bits) -> N {
        self.add(Node::Const(b))
    }

    /// Builds a node, folding it when its operands are constants.
    pub(super) fn fold(&mut self, n: Node, k: &Known<'_>) -> N {
        let c = |x: N| self.konst(x, k);
        let folded = match &n {
            Node::Bin(op, a, _) if *op == BinOp::And && c(*a).is_some_and(|x| !truth(&x)) => {
                Some(Bits::from_bool(false))
            }
            Node::Bin(op, a, _) if *op == BinOp::Or && c(*a).is_some_and(|x| truth(&x)) => {
                Some(Bits::from_bool(true))
            }
            Node::Mux(cond, a, b) => match c(*cond) {
                Some(x) => return if truth(&x) { *a } else { *b },
                None => None,
            },
            n => operation(n, c),
        };
        match folded {
            Some(b) => self.constant(b),
            None => self.add(n),
        }
    }

    pub(super) fn expr(&mut self, e: &Expr, params: &[Bits], k: &Known<'_>) -> Option<N> {
        Some(match e {
            Expr::Const(b) => self.constant(b.clone()),
            Expr::Bool(b) => self.constant(Bits::from_bool(*b)),
            Expr::Slot(s) if self.is_varbit(*s) => return None,
            Expr::Slot(s) => *self.slots.get(s.index() as usize)?,
            Expr::Param(i) => match self.frames.last() {
                Some(f) => *f.get(*i as usize)?,
                None => self.constant(params.get(*i as usize)?.clone()),
            },
            Expr::IsValid(h) => {
                let h = self.header(h, params, k)?;
                match h {
                    Some(h) => {
                        let v = self.p.phv.headers.get(h)?.valid;
                        self.slots[v.index() as usize]
                    }
                    None => self.constant(Bits::from_bool(false)),
                }
            }
            Expr::StackField {
                stack,
                index,
                field,
            } => {
                let i = self.expr(index, params, k)?;
                if self.konst(i, k).is_none() {
                    // An index no decision fixed: a choice among the elements.
                    return self.stack_read(*stack, i, *field, k);
                }
                match self.stack_slot(*stack, index, *field, params, k)? {
                    Ok(s) => self.slots[s.index() as usize],
                    Err(w) => self.constant(Bits::zero(w)),
                }
            }
            Expr::Unary(op, a) => {
                let a = self.expr(a, params, k)?;
                self.fold(Node::Un(*op, a), k)
            }
            Expr::Binary(op, a, b) => {
                let a = self.expr(a, params, k)?;
                let b = self.expr(b, params, k)?;
                self.fold(Node::Bin(*op, a, b), k)
            }
            Expr::Slice { value, hi, lo } => {
                let v = self.expr(value, params, k)?;
                self.fold(Node::Slice(v, *hi, *lo), k)
            }
            Expr::Cast(c, v) => {
                let v = self.expr(v, params, k)?;
                self.fold(Node::Cast(*c, v), k)
            }
            Expr::Mux {
                cond,
                then,
                otherwise,
            } => {
                let c = self.expr(cond, params, k)?;
                let a = self.expr(then, params, k)?;
                let b = self.expr(otherwise, params, k)?;
                self.fold(Node::Mux(c, a, b), k)
            }
        })
    }

    /// The header a reference denotes (`Some(None)`: an index out of range); `None` if it
    /// is not fixed.
    pub(super) fn header(
        &mut self,
        h: &HeaderRef,
        params: &[Bits],
        k: &Known<'_>,
    ) -> Option<Option<HeaderId>> {
        match h {
            HeaderRef::Header(h) => Some(Some(*h)),
            HeaderRef::Index(s, e) => {
                let i = self.expr(e, params, k)?;
                let i = self.konst(i, k)?.to_u64().unwrap_or(u64::MAX);
                let st = self.p.phv.stacks.get(*s)?;
                Some(
                    usize::try_from(i)
                        .ok()
                        .and_then(|i| st.elems.get(i).copied()),
                )
            }
            HeaderRef::Next(_) | HeaderRef::Last(_) => None,
        }
    }

    pub(super) fn stack_slot(
        &mut self,
        stack: StackId,
        index: &Expr,
        field: u32,
        params: &[Bits],
        k: &Known<'_>,
    ) -> Option<Result<SlotId, u32>> {
        let i = self.expr(index, params, k)?;
        let i = self.konst(i, k)?.to_u64().unwrap_or(u64::MAX);
        let st = self.p.phv.stacks.get(stack)?;
        let h = usize::try_from(i).ok().and_then(|i| st.elems.get(i));
        match h {
            Some(h) => Some(Ok(*self
                .p
                .phv
                .headers
                .get(*h)?
                .fields
                .get(field as usize)?)),
            None => {
                let h = self.p.phv.headers.get(*st.elems.first()?)?;
                let s = self.p.phv.slots.get(*h.fields.get(field as usize)?)?;
                Some(Err(s.width))
            }
        }
    }

    /// Field `field` of element `i` (a value) of `stack`, as the interpreter reads it: the
    /// element's field, or 0 past the end.
    pub(super) fn stack_read(
        &mut self,
        stack: StackId,
        i: N,
        field: u32,
        k: &Known<'_>,
    ) -> Option<N> {
        let elems = self.stack_elems(stack, i, field, k)?;
        let st = self.p.phv.stacks.get(stack)?;
        let first = self.p.phv.headers.get(*st.elems.first()?)?;
        let w = self
            .p
            .phv
            .slots
            .get(*first.fields.get(field as usize)?)?
            .width;
        let mut acc = self.constant(Bits::zero(w));
        for (eq, slot) in elems.into_iter().rev() {
            let v = self.slots[slot.index() as usize];
            acc = self.fold(Node::Mux(eq, v, acc), k);
        }
        Some(acc)
    }

    /// For each element of `stack` index `i` (a value) can reach: the condition that `i` is
    /// its index, and the slot of its field `field`.
    pub(super) fn stack_elems(
        &mut self,
        stack: StackId,
        i: N,
        field: u32,
        k: &Known<'_>,
    ) -> Option<Vec<(N, SlotId)>> {
        let elems = self.p.phv.stacks.get(stack)?.elems.clone();
        let wi = self.width(i);
        let mut out = Vec::with_capacity(elems.len());
        for (j, h) in elems.iter().enumerate() {
            if wi < 64 && (j as u64) >> wi != 0 {
                break; // the index cannot reach this element, nor the ones after it
            }
            let slot = *self.p.phv.headers.get(*h)?.fields.get(field as usize)?;
            let jn = self.constant(Bits::from_u64(wi, j as u64));
            let eq = self.fold(Node::Bin(BinOp::Eq, i, jn), k);
            out.push((eq, slot));
        }
        Some(out)
    }

    /// `v` zero-extended or truncated to `w` bits.
    pub(super) fn resized(&mut self, v: N, w: u32, k: &Known<'_>) -> N {
        if self.width(v) == w {
            return v;
        }
        let c = Cast::Resize {
            width: w,
            signed: false,
        };
        self.fold(Node::Cast(c, v), k)
    }

    /// Writes `v` into field `field` of element `i` (a value) of `stack`.
    pub(super) fn stack_write(
        &mut self,
        stack: StackId,
        i: N,
        field: u32,
        v: N,
        k: &Known<'_>,
    ) -> Option<()> {
        for (eq, slot) in self.stack_elems(stack, i, field, k)? {
            let w = self.p.phv.slots.get(slot)?.width;
            let v = self.resized(v, w, k);
            let old = self.slots[slot.index() as usize];
            let m = self.fold(Node::Mux(eq, v, old), k);
            self.slots[slot.index() as usize] = m;
        }
        Some(())
    }

    pub(super) fn write_place(
        &mut self,
        dst: &Place,
        v: N,
        params: &[Bits],
        k: &Known<'_>,
    ) -> Option<()> {
        let (slot, hi_lo) = match dst {
            Place::Slot(s) => (*s, None),
            Place::Slice { slot, hi, lo } => (*slot, Some((*hi, *lo))),
            Place::StackField {
                stack,
                index,
                field,
            } => {
                let i = self.expr(index, params, k)?;
                if self.konst(i, k).is_none() {
                    // An index no decision fixed: every element keeps its value unless it
                    // is the one indexed (none past the end).
                    return self.stack_write(*stack, i, *field, v, k);
                }
                match self.stack_slot(*stack, index, *field, params, k)? {
                    Ok(s) => (s, None),
                    Err(_) => return Some(()),
                }
            }
        };
        let s = self.p.phv.slots.get(slot)?;
        let w = s.width;
        let v = match hi_lo {
            None => self.resized(v, w, k),
            Some((hi, lo)) => {
                // old[w-1:hi+1] ++ v ++ old[lo-1:0]
                let old = self.slots[slot.index() as usize];
                let mut acc = self.resized(v, hi - lo + 1, k);
                if hi + 1 < w {
                    let top = self.fold(Node::Slice(old, w - 1, hi + 1), k);
                    acc = self.fold(Node::Bin(BinOp::Concat, top, acc), k);
                }
                if lo > 0 {
                    let bottom = self.fold(Node::Slice(old, lo - 1, 0), k);
                    acc = self.fold(Node::Bin(BinOp::Concat, acc, bottom), k);
                }
                acc
            }
        };
        self.slots[slot.index() as usize] = v;
        Some(())
    }

    pub(super) fn set_slot_const(&mut self, s: SlotId, v: Bits) {
        let w = self.p.phv.slots.get(s).map_or(v.width(), |x| x.width);
        let n = self.constant(v.resize(w));
        if let Some(x) = self.slots.get_mut(s.index() as usize) {
            *x = n;
        }
    }

    pub(super) fn validity(&self, h: HeaderId, k: &Known<'_>) -> Option<bool> {
        let v = self.p.phv.headers.get(h)?.valid;
        self.konst(self.slots[v.index() as usize], k)
            .map(|b| truth(&b))
    }

    pub(super) fn set_valid(&mut self, h: HeaderId, k: &Known<'_>) -> Option<()> {
        let hd = self.p.phv.headers.get(h)?.clone();
        if !self.validity(h, k)? {
            for f in &hd.fields {
                let w = self.p.phv.slots.get(*f)?.width;
                self.set_slot_const(*f, Bits::zero(w));
            }
            self.set_slot_const(hd.valid, Bits::from_bool(true));
        }
        self.invalidate_siblings(h);
        Some(())
    }

    pub(super) fn invalidate_siblings(&mut self, h: HeaderId) {
        let Some(u) = self.p.phv.headers.get(h).and_then(|x| x.union) else {
            return;
        };
        let members: Vec<HeaderId> = self
            .p
            .phv
            .unions
            .get(u)
            .map_or(Vec::new(), |u| u.members.clone());
        for m in members.into_iter().filter(|m| *m != h) {
            if let Some(v) = self.p.phv.headers.get(m).map(|x| x.valid) {
                self.set_slot_const(v, Bits::from_bool(false));
            }
        }
    }

    pub(super) fn copy_header(&mut self, dst: HeaderId, src: HeaderId) -> Option<()> {
        let d = self.p.phv.headers.get(dst)?;
        let s = self.p.phv.headers.get(src)?;
        for (a, b) in d.fields.iter().zip(&s.fields) {
            self.slots[a.index() as usize] = self.slots[b.index() as usize];
        }
        self.slots[d.valid.index() as usize] = self.slots[s.valid.index() as usize];
        Some(())
    }

    /// A statement of the run (from the end of the first parse on).
    pub fn stmt(&mut self, s: &Stmt, params: &[Bits], k: &Known<'_>) {
        // While an ingress clone is made, the statements are its parse, which ends as the
        // first parse did (the same bytes, the same ingress port).
        if self.failed.is_some() || self.copying.is_some() {
            return;
        }
        if self.exec(s, params, k).is_none() {
            // (A builtin by its name: what `koi bench` reports a replay for.)
            self.fail(match s {
                Stmt::Builtin(b) => b.name(),
                _ => "statement",
            });
        }
    }

    pub(super) fn exec(&mut self, s: &Stmt, params: &[Bits], k: &Known<'_>) -> Option<()> {
        match s {
            // A varbit copied whole (as an aggregate's element is copied in): the copy holds
            // the same packet bits and length.
            Stmt::Assign {
                dst: Place::Slot(d),
                value: Expr::Slot(s),
            } if self.is_varbit(*d) => {
                let (n, len) = self.varbit_node(&self.slots, *s)?;
                self.varbits.retain(|v| v.0 != *d);
                self.varbits.push((*d, n, len));
                *self.slots.get_mut(d.index() as usize)? = n;
                Some(())
            }
            Stmt::Assign { dst, value } => {
                let v = self.expr(value, params, k)?;
                self.write_place(dst, v, params, k)
            }
            Stmt::SetValid(h) => match self.header(h, params, k)? {
                Some(h) => self.set_valid(h, k),
                None => Some(()),
            },
            Stmt::SetInvalid(h) => {
                if let Some(h) = self.header(h, params, k)? {
                    let v = self.p.phv.headers.get(h)?.valid;
                    self.set_slot_const(v, Bits::from_bool(false));
                }
                Some(())
            }
            Stmt::CopyHeader { dst, src } => {
                let d = self.header(dst, params, k)?;
                let s = self.header(src, params, k)?;
                match (d, s) {
                    (Some(d), Some(s)) => {
                        self.copy_header(d, s)?;
                        if self.validity(d, k)? {
                            self.invalidate_siblings(d);
                        }
                        Some(())
                    }
                    (Some(d), None) => {
                        let v = self.p.phv.headers.get(d)?.valid;
                        self.set_slot_const(v, Bits::from_bool(false));
                        Some(())
                    }
                    (None, _) => Some(()),
                }
            }
            Stmt::PushFront { stack, count } => self.shift(*stack, i64::from(*count), k),
            Stmt::PopFront { stack, count } => self.shift(*stack, -i64::from(*count), k),
            Stmt::Emit(h) => {
                let h = self.header(h, params, k)?;
                if let Some(h) = h
                    && self.validity(h, k)?
                {
                    self.emitted.push(h);
                }
                Some(())
            }
            Stmt::CallAction { args, .. } => {
                let mut a = Vec::with_capacity(args.len());
                for e in args {
                    a.push(self.expr(e, params, k)?);
                }
                self.pending = Some(a);
                Some(())
            }
            Stmt::ExternCall {
                instance,
                method,
                args,
                result,
            } => {
                let kind = &self.p.externs.get(*instance)?.kind;
                match (kind, method.as_str()) {
                    // (An eBPF `CounterArray`'s `increment` counts as `count` does.)
                    (ExternKind::Counter { .. }, "count" | "increment") if result.is_none() => {
                        let idx = match args.first() {
                            Some(koi_ir::Arg::In(e)) => self.expr(e, params, k)?,
                            _ => self.constant(Bits::zero(32)),
                        };
                        self.state.push(StateOp::Count(*instance, idx));
                        Some(())
                    }
                    (ExternKind::DirectCounter { .. }, "count") => Some(()),
                    (ExternKind::Register { elem, .. }, "read") => {
                        if !matches!(elem, Ty::Bits(_)) {
                            return None;
                        }
                        let idx = self.index_arg(args, 0, params, k)?;
                        let dst = extern_dst(result, args)?;
                        let (w, old) = self.place_value(&dst, params, k)?;
                        // Out of range: a return value reads as zero, an `out` argument keeps
                        // its value (the interpreter's semantics).
                        let fallback = match result {
                            Some(_) => self.constant(Bits::zero(w)),
                            None => old,
                        };
                        let t = self.next_read();
                        self.state.push(StateOp::RegRead(*instance, idx, t));
                        self.pending_read = Some(t);
                        let v = self.add(Node::RegVal { t, w, fallback });
                        self.write_place(&dst, v, params, k)
                    }
                    (ExternKind::Meter { .. }, "execute_meter") => {
                        let idx = self.index_arg(args, 0, params, k)?;
                        let dst = extern_dst(result, args)?;
                        // An index out of range executes nothing and writes nothing.
                        let (w, old) = self.place_value(&dst, params, k)?;
                        let t = self.next_read();
                        self.state.push(StateOp::Meter(*instance, idx, t));
                        self.pending_read = Some(t);
                        let v = self.add(Node::RegVal {
                            t,
                            w,
                            fallback: old,
                        });
                        self.write_place(&dst, v, params, k)
                    }
                    (ExternKind::DirectMeter { .. }, "read") => {
                        let dst = extern_dst(result, args)?;
                        // No colour (the table missed, or was not applied): nothing is written.
                        let Some(&(_, t)) = self.meter_colors.iter().find(|(e, _)| e == instance)
                        else {
                            return Some(());
                        };
                        let (w, old) = self.place_value(&dst, params, k)?;
                        self.pending_read = Some(t);
                        let v = self.add(Node::RegVal {
                            t,
                            w,
                            fallback: old,
                        });
                        self.write_place(&dst, v, params, k)
                    }
                    (ExternKind::Register { .. }, "write") => {
                        let idx = self.index_arg(args, 0, params, k)?;
                        let value = match args
                            .iter()
                            .filter(|a| matches!(a, koi_ir::Arg::In(_)))
                            .nth(1)
                        {
                            Some(koi_ir::Arg::In(e)) => self.expr(e, params, k)?,
                            _ => return Some(()),
                        };
                        self.state.push(StateOp::RegWrite(*instance, idx, value));
                        Some(())
                    }
                    _ => None,
                }
            }
            Stmt::Builtin(b) => self.builtin(b, params, k),
            // (Only PSA's egress parser runs after the first parse and is followed.)
            Stmt::Extract {
                header: koi_ir::HeaderRef::Header(h),
                varbit_bits: None,
            } if self.setup.psa.is_some() => self.psa_extract(*h),
            Stmt::Extract { .. }
            | Stmt::Lookahead { .. }
            | Stmt::Advance { .. }
            | Stmt::Verify { .. }
            | Stmt::PacketLength { .. } => None,
        }
    }

    /// A new read slot (a register value or meter colour kept for the program's expressions).
    pub(super) fn next_read(&mut self) -> u32 {
        self.reads += 1;
        self.reads - 1
    }

    /// A per-packet input (`w` bits), read into a read slot by the program; `value` is what
    /// the interpreter's run had (for the check at installation).
    pub(super) fn input(&mut self, what: Input, value: Bits, w: u32) -> N {
        let t = self.next_read();
        self.state.push(StateOp::Input { what, t });
        let i = t as usize;
        if self.read_values.len() <= i {
            self.read_values.resize(i + 1, None);
        }
        self.read_values[i] = Some(value);
        let fallback = self.constant(Bits::zero(w));
        self.add(Node::RegVal { t, w, fallback })
    }

    /// The `i`th `in` argument of an extern call (an index: 0 when there is none).
    pub(super) fn index_arg(
        &mut self,
        args: &[koi_ir::Arg],
        i: usize,
        params: &[Bits],
        k: &Known<'_>,
    ) -> Option<N> {
        match args
            .iter()
            .filter(|a| matches!(a, koi_ir::Arg::In(_)))
            .nth(i)
        {
            Some(koi_ir::Arg::In(e)) => self.expr(e, params, k),
            _ => Some(self.constant(Bits::zero(64))),
        }
    }

    /// A place's width and current value.
    pub(super) fn place_value(
        &mut self,
        p: &Place,
        params: &[Bits],
        k: &Known<'_>,
    ) -> Option<(u32, N)> {
        match p {
            Place::Slot(s) => Some((
                self.p.phv.slots.get(*s)?.width,
                *self.slots.get(s.index() as usize)?,
            )),
            Place::Slice { slot, hi, lo } => {
                let old = *self.slots.get(slot.index() as usize)?;
                let v = self.fold(Node::Slice(old, *hi, *lo), k);
                Some((hi - lo + 1, v))
            }
            Place::StackField {
                stack,
                index,
                field,
            } => match self.stack_slot(*stack, index, *field, params, k)? {
                Ok(s) => Some((
                    self.p.phv.slots.get(s)?.width,
                    *self.slots.get(s.index() as usize)?,
                )),
                Err(_) => None,
            },
        }
    }

    /// The interpreter reported an extern call's result: the value of the register read
    /// just traced, if that is what it was.
    pub fn extern_result(&mut self, result: Option<&Bits>) {
        if let Some(t) = self.pending_read.take() {
            let t = t as usize;
            if self.read_values.len() <= t {
                self.read_values.resize(t + 1, None);
            }
            self.read_values[t] = result.cloned();
        }
    }

    pub(super) fn shift(&mut self, stack: StackId, by: i64, k: &Known<'_>) -> Option<()> {
        let st = self.p.phv.stacks.get(stack)?.clone();
        let n = st.elems.len() as i64;
        let before = self.slots.clone();
        for i in 0..n {
            let src = i - by;
            let dst = self.p.phv.headers.get(st.elems[i as usize])?;
            if (0..n).contains(&src) {
                let s = self.p.phv.headers.get(st.elems[src as usize])?;
                for (a, b) in dst.fields.iter().zip(&s.fields) {
                    self.slots[a.index() as usize] = before[b.index() as usize];
                }
                self.slots[dst.valid.index() as usize] = before[s.valid.index() as usize];
            } else {
                let v = dst.valid;
                self.set_slot_const(v, Bits::from_bool(false));
            }
        }
        let next = self
            .konst(before[st.next_index.index() as usize], k)?
            .to_u64()? as i64;
        let new = (next + by).clamp(0, n) as u64;
        self.set_slot_const(st.next_index, Bits::from_u64(32, new));
        Some(())
    }

    /// The data list of a hash or checksum: invalid headers' fields left out.
    pub(super) fn data(&mut self, data: &[Expr], params: &[Bits], k: &Known<'_>) -> Option<Vec<N>> {
        let mut out = Vec::with_capacity(data.len());
        for e in data {
            if let Expr::Slot(s) = e
                && let Some(SlotKind::HeaderField(h)) = self.p.phv.slots.get(*s).map(|x| x.kind)
                && !self.validity(h, k)?
            {
                continue;
            }
            if let Expr::Slot(s) = e
                && self.is_varbit(*s)
            {
                let (n, len) = self.varbit_node(&self.slots, *s)?;
                if len > 0 {
                    out.push(n);
                }
                continue;
            }
            let n = self.expr(e, params, k)?;
            out.push(n);
        }
        Some(out)
    }

    pub(super) fn builtin(&mut self, b: &Builtin, params: &[Bits], k: &Known<'_>) -> Option<()> {
        match b {
            // uBPF's drop flag: the straight-line run fixes it, the interpreter reports it.
            Builtin::MarkToDrop | Builtin::MarkToPass if self.ubpf => Some(()),
            Builtin::MarkToDrop => {
                if let Some(s) = self.setup.egress_spec {
                    self.set_slot_const(s, Bits::from_u64(64, self.drop_port));
                }
                if let Some(s) = self.setup.mcast_grp {
                    self.set_slot_const(s, Bits::zero(64));
                }
                Some(())
            }
            Builtin::UpdateChecksum {
                cond,
                data,
                checksum,
                algo,
                with_payload,
            } => {
                let c = self.expr(cond, params, k)?;
                let fixed = self.konst(c, k);
                if fixed.as_ref().is_some_and(|b| !truth(b)) {
                    return Some(());
                }
                v1_algo(*algo)?;
                let data = self.data(data, params, k)?;
                let (slot, w) = match checksum {
                    Place::Slot(s) => (*s, self.p.phv.slots.get(*s)?.width),
                    _ => return None,
                };
                let odd = self.payload_parity(*with_payload, *algo, &data)?;
                let h = self.add(Node::Hash {
                    algo: *algo,
                    data,
                    w: w.min(64),
                });
                let h = match odd {
                    Some(odd) if w == 16 => self.add(Node::PayloadCsum {
                        csum: h,
                        start: u32::try_from(self.payload_start).ok()?,
                        odd,
                    }),
                    Some(_) => return None,
                    None => h,
                };
                // A condition that varies within the megaflow (it decides nothing the mask
                // covers): the field keeps its value when it is false.
                let h = match fixed {
                    Some(_) => h,
                    None if w <= 64 => {
                        let old = self.slots[slot.index() as usize];
                        self.fold(Node::Mux(c, h, old), k)
                    }
                    None => return None,
                };
                self.write_place(checksum, h, params, k)
            }
            Builtin::VerifyChecksum {
                cond,
                data,
                checksum,
                algo,
                with_payload,
            } => {
                let c = self.expr(cond, params, k)?;
                let fixed = self.konst(c, k);
                if fixed.as_ref().is_some_and(|b| !truth(b)) {
                    return Some(());
                }
                if let Expr::Slot(s) = checksum
                    && let Some(SlotKind::HeaderField(h)) = self.p.phv.slots.get(*s).map(|x| x.kind)
                    && !self.validity(h, k)?
                {
                    return Some(());
                }
                v1_algo(*algo)?;
                let data = self.data(data, params, k)?;
                let odd = self.payload_parity(*with_payload, *algo, &data)?;
                let h = self.add(Node::Hash {
                    algo: *algo,
                    data,
                    w: 64,
                });
                let h = match odd {
                    Some(odd) => self.add(Node::PayloadCsum {
                        csum: h,
                        start: u32::try_from(self.payload_start).ok()?,
                        odd,
                    }),
                    None => h,
                };
                let field = self.expr(checksum, params, k)?;
                let field = self.fold(
                    Node::Cast(
                        Cast::Resize {
                            width: 64,
                            signed: false,
                        },
                        field,
                    ),
                    k,
                );
                let bad = self.fold(Node::Bin(BinOp::Ne, h, field), k);
                // A condition that varies within the megaflow: only a checked mismatch counts.
                let bad = match fixed {
                    Some(_) => bad,
                    None => self.fold(Node::Bin(BinOp::And, c, bad), k),
                };
                let s = self.setup.checksum_error?;
                let prev = self.slots[s.index() as usize];
                let one = self.constant(Bits::from_u64(self.p.phv.slots.get(s)?.width, 1));
                let v = self.fold(Node::Mux(bad, one, prev), k);
                self.slots[s.index() as usize] = v;
                Some(())
            }
            Builtin::Hash {
                dst,
                algo,
                base,
                data,
                max,
            } => {
                if *algo == HashAlgo::Lookup3 {
                    // uBPF's lookup3 over every argument's value and width (valid or not),
                    // 32 bits into the destination.
                    let mut elems = Vec::with_capacity(data.len());
                    for d in data {
                        let n = self.expr(d, params, k)?;
                        if self.width(n) > 64 {
                            return None;
                        }
                        elems.push(n);
                    }
                    let h = self.add(Node::Hash {
                        algo: HashAlgo::Lookup3,
                        data: elems,
                        w: 32,
                    });
                    return self.write_place(dst, h, params, k);
                }
                // A fixed algorithm, or a custom CRC (run with the parameters the datapath
                // copies before each batch: a change of them flushes the caches).
                if algo.calculation().is_none() {
                    v1_algo(*algo)?;
                }
                let w = match dst {
                    Place::Slot(s) => self.p.phv.slots.get(*s)?.width,
                    _ => return None,
                };
                let data = self.data(data, params, k)?;
                let h = self.add(Node::Hash {
                    algo: *algo,
                    data,
                    w: 64,
                });
                let base = self.expr(base, params, k)?;
                let base = self.konst(base, k)?.low_u64();
                let v = match max {
                    Some(m) => {
                        let m = self.expr(m, params, k)?;
                        let max = self.konst(m, k)?.low_u64();
                        self.add(Node::HashResult {
                            hash: h,
                            base,
                            max,
                            w: w.min(64),
                        })
                    }
                    None => self.resized(h, w, k),
                };
                self.write_place(dst, v, params, k)
            }
            Builtin::CsumReplace {
                dst,
                csum,
                old,
                new,
            } => {
                let csum = self.expr(csum, params, k)?;
                let old = self.expr(old, params, k)?;
                let new = self.expr(new, params, k)?;
                let four = self.width(old) == 32;
                let n = self.add(Node::CsumReplace {
                    csum,
                    old,
                    new,
                    four,
                });
                self.write_place(dst, n, params, k)
            }
            Builtin::Random { dst, lo, hi } => {
                // Drawn per packet by the program, from the interpreter's generator.
                let lo = self.expr(lo, params, k)?;
                let hi = self.expr(hi, params, k)?;
                let (w, _) = self.place_value(dst, params, k)?;
                let t = self.next_read();
                self.state.push(StateOp::Random { lo, hi, t });
                self.pending_read = Some(t);
                let fallback = self.constant(Bits::zero(w));
                let v = self.add(Node::RegVal { t, w, fallback });
                self.write_place(dst, v, params, k)
            }
            Builtin::Digest {
                digest,
                receiver,
                data,
            } => {
                let dg = self.p.digests.get(*digest)?;
                let fields_w = dg.fields.clone();
                let name = dg.preamble.name.clone();
                let receiver = self.expr(receiver, params, k)?;
                let mut fields = Vec::with_capacity(fields_w.len());
                for ((f, w), e) in fields_w.into_iter().zip(data) {
                    let n = self.expr(e, params, k)?;
                    fields.push((f, n, w));
                }
                self.pending_digest = Some(StateOp::Digest {
                    digest: *digest,
                    name,
                    receiver,
                    fields,
                });
                Some(())
            }
            Builtin::Truncate { bytes } if !self.ubpf => {
                let n = self.expr(bytes, params, k)?;
                self.cut.push(n);
                Some(())
            }
            Builtin::Clone { session, .. } => {
                // The traffic manager's events make the clone; its session must be the same
                // for every packet of the megaflow.
                let n = self.expr(session, params, k)?;
                self.konst(n, k).map(|_| ())
            }
            Builtin::Assert { cond } | Builtin::Assume { cond } => {
                let c = self.expr(cond, params, k)?;
                truth(&self.konst(c, k)?).then_some(())
            }
            _ => None,
        }
    }
}

/// Where an extern call writes what it produces: its return place, else its first `out`
/// argument (as the interpreter does).
pub(super) fn extern_dst(result: &Option<Place>, args: &[koi_ir::Arg]) -> Option<Place> {
    match result {
        Some(p) => Some(p.clone()),
        None => args.iter().find_map(|a| match a {
            koi_ir::Arg::Out(p) | koi_ir::Arg::InOut(p) => Some(p.clone()),
            koi_ir::Arg::In(_) => None,
        }),
    }
}

/// The width of node `n` of `nodes`.
pub(super) fn node_width(nodes: &[Node], n: N) -> u32 {
    match &nodes[n as usize] {
        Node::Const(b) => b.width(),
        Node::Pkt { w, .. } | Node::Port(w) | Node::Opaque(w) => *w,
        Node::Un(_, a) => node_width(nodes, *a),
        Node::Bin(op, a, b) => match op {
            BinOp::Concat => node_width(nodes, *a) + node_width(nodes, *b),
            o if o.is_comparison() || matches!(o, BinOp::And | BinOp::Or) => 1,
            _ => node_width(nodes, *a),
        },
        Node::Slice(_, hi, lo) => hi - lo + 1,
        Node::Cast(Cast::Resize { width, .. }, _) => *width,
        Node::Cast(_, _) => 1,
        Node::Mux(_, a, _) => node_width(nodes, *a),
        Node::Hash { w, .. } | Node::HashResult { w, .. } | Node::RegVal { w, .. } => *w,
        Node::CsumReplace { .. } | Node::PayloadCsum { .. } => 16,
    }
}

/// Whether the megaflow mask fixes every bit of `slot` (a key field of its full width).
pub(super) fn fully_masked(k: &Known<'_>, slot: SlotId, width: u32) -> bool {
    let Some(f) = k.layout.whole_field(slot, width) else {
        return false;
    };
    (f.key_offset..f.key_offset + f.width).all(|b| {
        k.mask
            .get((b / 64) as usize)
            .is_some_and(|w| w >> (63 - b % 64) & 1 == 1)
    })
}

/// The value of an operation node (`!`, `+`, a slice, a cast) whose operands `c` gives,
/// computed with the interpreter's operations; `None` for other nodes or an unknown operand.
pub(super) fn operation(n: &Node, c: impl Fn(N) -> Option<Bits>) -> Option<Bits> {
    match n {
        Node::Un(op, a) => c(*a).map(|x| unary(*op, &x)),
        Node::Bin(op, a, b) => Some(arith(*op, &c(*a)?, &c(*b)?)),
        Node::Slice(a, hi, lo) => c(*a).map(|x| x.slice(*hi, *lo)),
        Node::Cast(cs, a) => c(*a).map(|x| cast(*cs, &x)),
        _ => None,
    }
}

/// A slot's value in a PHV byte image.
#[inline]
pub(crate) fn phv_value(phv: &[u8], offset: u32, width: u32) -> Bits {
    Bits::read_bits(phv, offset as usize, width).unwrap_or_else(|_| Bits::zero(width))
}
