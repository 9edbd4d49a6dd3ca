//! The fast parser at run time: walking the state graph over a packet's bytes (when no
//! template matches), the values its operations compute, and filling the flow key.

use super::*;

impl FastParser {
    /// Assignment `id` of the parser: destination slot and value.
    pub fn assignment(&self, id: u32) -> Option<&(SlotId, Ex)> {
        self.assigns.get(id as usize)
    }

    /// The parser's variables ([`Ex::Var`]: metadata, locals and temporaries it assigns).
    pub fn vars(&self) -> usize {
        self.var_slots.len()
    }

    /// The variable that holds `slot`.
    pub fn var_of(&self, slot: SlotId) -> Option<u32> {
        self.var_slots
            .iter()
            .position(|s| *s == slot)
            .map(|v| v as u32)
    }

    /// A [`Parsed`] sized for this parser.
    pub fn new_parsed(&self) -> Parsed {
        Parsed {
            short_bits: 0,
            hdr_off: vec![NONE; self.headers],
            varbit: vec![0; self.headers],
            valid: vec![false; self.headers],
            next: vec![0; self.stacks.len()],
            cursor: 0,
            vars: vec![0; self.var_slots.len()],
            assigned: Vec::with_capacity(8),
            reextracted: false,
            record: false,
            selects: Vec::with_capacity(8),
            verified: Vec::new(),
            advanced: Vec::new(),
            stack_reads: Vec::new(),
            assigned_reads: Vec::with_capacity(8),
            lookaheads: Vec::new(),
            ahead_end: 0,
            prov: vec![(0, 0); self.var_slots.len()],
            ahead_at: vec![NONE; self.var_slots.len()],
            ovr: vec![false; self.var_slots.len()],
            prov_ranges: Vec::new(),
            pins: Vec::new(),
            unpinned: false,
            stopped_unrecorded: false,
            visited: 0,
        }
    }

    /// Parses `pkt` received on `port` into `out` and writes the flow key into `key` (at
    /// least the layout's words). `false`: the packet needs the interpreter's parser.
    pub fn parse(&self, pkt: &[u8], port: u64, out: &mut Parsed, key: &mut [u64]) -> bool {
        out.hdr_off.fill(NONE);
        out.varbit.fill(0);
        out.valid.fill(false);
        out.next.fill(0);
        out.vars.fill(0);
        out.assigned.clear();
        out.reextracted = false;
        out.selects.clear();
        out.verified.clear();
        out.advanced.clear();
        out.stack_reads.clear();
        out.assigned_reads.clear();
        out.lookaheads.clear();
        out.ahead_end = 0;
        out.ahead_at.fill(NONE);
        out.ovr.fill(false);
        if self.vars_read {
            out.prov.fill((0, 0));
            out.prov_ranges.clear();
            out.pins.clear();
            out.unpinned = false;
        }
        out.stopped_unrecorded = false;
        out.short_bits = 0;
        let total = (pkt.len() as u64) * 8;
        let limit = self.margin + 8 * total;
        let mut cursor: u64 = 0;
        let mut state = self.start;
        let mut visited: u64 = 0;
        // A parse that stops early (an error, a `reject`, a `select` without match) ends
        // there (`break 'states`), with the headers parsed until then: v1model goes on to
        // ingress (`parser_error` says which error; the tracer follows the architecture's
        // write), uBPF sends the packet out unchanged (`Tracer::parser_failed`).
        'states: loop {
            visited += 1;
            if visited > limit {
                return false;
            }
            let Some(st) = self.states.get(state as usize) else {
                return false;
            };
            for (oi, op) in st.ops.iter().enumerate() {
                match *op {
                    Op::Extract { h, bits } => {
                        if cursor + u64::from(bits) > total {
                            out.short_bits = cursor + u64::from(bits);
                            break 'states;
                        }
                        self.set_header(out, h, cursor as u32);
                        cursor += u64::from(bits);
                    }
                    Op::ExtractNext { stack, bits } => {
                        let Some(elems) = self.stacks.get(stack as usize) else {
                            return false;
                        };
                        let i = out.next[stack as usize] as usize;
                        let Some(&h) = elems.get(i) else {
                            break 'states;
                        };
                        if cursor + u64::from(bits) > total {
                            out.short_bits = cursor + u64::from(bits);
                            break 'states;
                        }
                        self.set_header(out, h, cursor as u32);
                        out.next[stack as usize] += 1;
                        cursor += u64::from(bits);
                    }
                    Op::Advance(bits) => {
                        if cursor + u64::from(bits) > total {
                            out.short_bits = cursor + u64::from(bits);
                            break 'states;
                        }
                        cursor += u64::from(bits);
                    }
                    // The interpreter's order: a size that is not whole bytes (v1model's
                    // `ParserInvalidArgument`), too few bytes, a size above the maximum
                    // (`HeaderTooShort`).
                    Op::ExtractVar {
                        h,
                        fixed,
                        ref e,
                        max,
                    } => {
                        let bits = match self.size(e, pkt, out, port) {
                            Ok(bits) => bits,
                            Err(Stop::Parse) => {
                                out.stopped_unrecorded = true;
                                break 'states;
                            }
                            Err(Stop::Interpreter) => return false,
                        };
                        let end = cursor.saturating_add(u64::from(fixed)).saturating_add(bits);
                        if end > total {
                            // (The size decided where the parse stopped: a template pins it.)
                            out.advanced.push((state, oi as u32, bits));
                            out.short_bits = end;
                            break 'states;
                        }
                        if bits > u64::from(max) {
                            out.stopped_unrecorded = true;
                            break 'states;
                        }
                        self.set_header(out, h, cursor as u32);
                        out.varbit[h as usize] = bits as u32;
                        out.advanced.push((state, oi as u32, bits));
                        cursor = end;
                    }
                    Op::AdvanceBy(ref e) => {
                        let bits = match self.size(e, pkt, out, port) {
                            Ok(bits) => bits,
                            Err(Stop::Parse) => {
                                out.stopped_unrecorded = true;
                                break 'states;
                            }
                            Err(Stop::Interpreter) => return false,
                        };
                        if cursor.saturating_add(bits) > total {
                            out.advanced.push((state, oi as u32, bits));
                            out.short_bits = cursor.saturating_add(bits);
                            break 'states;
                        }
                        out.advanced.push((state, oi as u32, bits));
                        cursor += bits;
                    }
                    Op::Verify {
                        ref e,
                        lo,
                        hi,
                        outside,
                    } => {
                        let n = out.stack_reads.len();
                        if self.vars_read {
                            pin_vars(e, out);
                        }
                        let v = eval(e, pkt, out, port);
                        if (lo <= v && v <= hi) == outside {
                            {
                                out.stopped_unrecorded = true;
                                break 'states;
                            }
                        }
                        let elem = out.stack_reads.get(n).copied().unwrap_or(NONE);
                        out.verified.push((state, oi as u32, elem));
                    }
                    // (`setValid`/`setInvalid` also change the packet length v1model counts
                    // for egress; compiled programs never use it: the tracer treats
                    // `packet_length` as opaque.)
                    Op::SetInvalid(h) => self.set_valid(out, h, false),
                    Op::SetValid { h, zero, ref zeros } => {
                        if !out.valid.get(h as usize).copied().unwrap_or(true) {
                            if zero {
                                self.move_bits(out, h, NONE);
                                for &(id, var) in zeros {
                                    out.vars[var as usize] = 0;
                                    if let Some(p) = out.prov.get_mut(var as usize) {
                                        *p = (0, 0);
                                    }
                                    if self.vars_read || out.record {
                                        let n = out.stack_reads.len() as u32;
                                        out.assigned.push(id);
                                        out.assigned_reads.push((n, n));
                                    }
                                }
                            }
                            self.set_valid(out, h, true);
                        }
                        self.invalidate_siblings(out, h);
                    }
                    Op::Copy { dst, src } => {
                        let (Some(&at), Some(&v)) =
                            (out.hdr_off.get(src as usize), out.valid.get(src as usize))
                        else {
                            return false;
                        };
                        self.move_bits(out, dst, at);
                        self.set_valid(out, dst, v);
                        if v {
                            self.invalidate_siblings(out, dst);
                        }
                    }
                    Op::Lookahead { id, var, w, wide } => {
                        // Too short: `PacketTooShort` (see `Parsed::short`).
                        let end = cursor + u64::from(w);
                        if end > total {
                            out.short_bits = end;
                            break 'states;
                        }
                        out.ahead_end = out.ahead_end.max(end as u32);
                        // Read again after a decision read it: the decided value is in no
                        // key (a lookahead's bits are not key fields), as for moved bits.
                        if !out.reextracted && self.decided_by(out).any(|e| reads_var_at(e, var)) {
                            out.reextracted = true;
                        }
                        if wide {
                            out.ahead_at[var as usize] = cursor as u32;
                            if self.vars_read || out.record {
                                let n = out.stack_reads.len() as u32;
                                out.assigned.push(id);
                                out.assigned_reads.push((n, n));
                                out.lookaheads.push(cursor as u32);
                            }
                            continue;
                        }
                        if !(self.vars_read || out.record) {
                            continue;
                        }
                        out.vars[var as usize] = read_bits(pkt, cursor as u32, w);
                        if self.vars_read {
                            let at = out.prov_ranges.len() as u32;
                            out.prov_ranges.push((cursor as u32, w));
                            out.prov[var as usize] = (at, at + 1);
                        }
                        let n = out.stack_reads.len() as u32;
                        out.assigned.push(id);
                        out.assigned_reads.push((n, n));
                        out.lookaheads.push(cursor as u32);
                    }
                    Op::Assign {
                        id,
                        var,
                        ref e,
                        over,
                    } => {
                        if !(self.vars_read || out.record) {
                            continue;
                        }
                        let n = out.stack_reads.len() as u32;
                        if self.vars_read {
                            let at = out.prov_ranges.len() as u32;
                            provenance(e, out);
                            out.prov[var as usize] = (at, out.prov_ranges.len() as u32);
                        }
                        let v = eval(e, pkt, out, port);
                        out.vars[var as usize] = v;
                        // (After the value: it may read the field it overwrites.) A field a
                        // decision read is gone from the key once overwritten: the key no
                        // longer tells this path from others (as for moved bits).
                        if over {
                            if !out.reextracted
                                && self.decided_by(out).any(|e| reads_var_at(e, var))
                            {
                                out.reextracted = true;
                            }
                            out.ovr[var as usize] = true;
                        }
                        out.assigned.push(id);
                        out.assigned_reads.push((n, out.stack_reads.len() as u32));
                    }
                }
            }
            let to = match &st.trans {
                Trans::Goto(t) => *t,
                Trans::Select { keys, cases } => {
                    let mut vals = [0u64; 8];
                    let n = keys.len();
                    if n > vals.len() {
                        return false;
                    }
                    for (i, (v, k)) in vals.iter_mut().zip(keys).enumerate() {
                        let n = out.stack_reads.len();
                        if self.vars_read {
                            pin_vars(k, out);
                        }
                        *v = eval(k, pkt, out, port);
                        let elem = out.stack_reads.get(n).copied().unwrap_or(NONE);
                        out.selects.push((state, i as u32, *v, elem));
                    }
                    let found = cases.iter().find(|(pats, _)| {
                        pats.iter().zip(&vals[..n]).all(|(p, v)| match *p {
                            Pat::Mask { v: pv, m } => v & m == pv & m,
                            Pat::Range { lo, hi } => lo <= *v && *v <= hi,
                        })
                    });
                    match found {
                        Some((_, t)) => *t,
                        None => break 'states,
                    }
                }
            };
            match to {
                To::State(s) => state = s,
                To::Accept => break,
                To::Reject => break 'states,
            }
        }
        out.cursor = cursor as u32;
        out.visited = visited;
        self.fill_key(pkt, port, out, key);
        true
    }

    /// A size the packet gives (an `advance` amount, a varbit size), in bits, with what it
    /// was computed from pinned; a size that is not whole bytes stops the parse there on
    /// v1model (`ParserInvalidArgument`) and leaves the packet to the interpreter elsewhere.
    pub(super) fn size(
        &self,
        e: &Ex,
        pkt: &[u8],
        out: &mut Parsed,
        port: u64,
    ) -> Result<u64, Stop> {
        if self.vars_read {
            pin_vars(e, out);
        }
        let bits = eval(e, pkt, out, port);
        match (bits.is_multiple_of(8), self.v1model) {
            (true, _) => Ok(bits),
            (false, true) => Err(Stop::Parse),
            (false, false) => Err(Stop::Interpreter),
        }
    }

    /// The flow key of `pkt` (as [`FastParser::parse`] computes it), through the parse-path
    /// templates when one fits, else by a full parse that then becomes a template. `false`:
    /// the packet needs the interpreter's parser. A template matched `jit`'s threshold of
    /// times gets native code when `jit` admits a compile at `now_ns`; native templates also
    /// give the key's microflow hash in `hash`.
    #[allow(clippy::too_many_arguments)]
    #[inline(always)]
    pub fn key(
        &self,
        pkt: &[u8],
        port: u64,
        t: &mut Templates,
        jit: &mut Jit,
        now_ns: u64,
        key: &mut [u64],
        hash: &mut Option<u64>,
    ) -> bool {
        *hash = None;
        // The common case first, in a small function: the native code of a template (the
        // one the pick guesses, then the most used first) takes the packet. (Debug builds
        // take the general path, which checks every template key against a full parse.)
        let mut first = 0;
        if !cfg!(debug_assertions) {
            if let Some(i) = t.guess(pkt)
                && let Some(code) = t.list.get(i).and_then(|tpl| tpl.code.as_ref())
                && code.run(pkt, port, key, hash) == Some(true)
            {
                t.guessed += 1;
                t.hit(i);
                return true;
            }
            while let Some(code) = t.list.get(first).and_then(|tpl| tpl.code.as_ref()) {
                match code.run(pkt, port, key, hash) {
                    Some(true) => {
                        t.hit(first);
                        return true;
                    }
                    Some(false) => first += 1,
                    None => break,
                }
            }
        }
        self.key_from(first, pkt, port, t, jit, now_ns, key, hash)
    }

    /// [`FastParser::key`] trying the templates from the `first`th (those before it did not
    /// take the packet). Out of line: the common case does not need it.
    #[allow(clippy::too_many_arguments)]
    #[inline(never)]
    pub(super) fn key_from(
        &self,
        first: usize,
        pkt: &[u8],
        port: u64,
        t: &mut Templates,
        jit: &mut Jit,
        now_ns: u64,
        key: &mut [u64],
        hash: &mut Option<u64>,
    ) -> bool {
        let n = self.words.min(key.len());
        let seed = t.hash_seed;
        // The pick's guess first (in release builds [`FastParser::key`] tried it already
        // when it has native code), then the templates in rank order.
        let guess = if first == 0 { t.guess(pkt) } else { None };
        let order = guess
            .into_iter()
            .chain((first..t.list.len()).filter(move |&i| Some(i) != guess));
        for i in order {
            let tpl = &mut t.list[i];
            let mut compiled = None;
            let hit = match tpl.code.as_ref().and_then(|c| c.run(pkt, port, key, hash)) {
                Some(hit) => hit,
                None if tpl.matches(pkt, port) => {
                    tpl.fill(pkt, port, &mut key[..n]);
                    tpl.matched = tpl.matched.saturating_add(1);
                    if tpl.matched >= jit.after
                        && !tpl.jit_tried
                        && jit.enabled()
                        && jit.admit(now_ns)
                    {
                        tpl.jit_tried = true;
                        compiled =
                            Some(self.compile_template(tpl, jit, seed, pkt, port, &key[..n]));
                    }
                    true
                }
                None => false,
            };
            match compiled {
                Some(Some(true)) => {
                    t.native += 1;
                    t.repick();
                }
                Some(Some(false)) => t.native_mismatch += 1,
                _ => {}
            }
            if hit {
                if cfg!(debug_assertions) {
                    // The invariant templates rest on: the same key as a full parse.
                    let mut p = self.new_parsed();
                    let mut k = vec![0; n];
                    assert!(
                        self.parse(pkt, port, &mut p, &mut k),
                        "template for a bad parse"
                    );
                    assert_eq!(k[..], key[..n], "template key differs from the parser's");
                }
                if Some(i) == guess {
                    t.guessed += 1;
                }
                t.hit(i);
                return true;
            }
        }
        self.key_by_parse(pkt, port, t, key)
    }

    /// [`FastParser::key`] when no template fits: a full parse, whose path becomes a
    /// template if it can. Out of line, so that a template hit runs a small function.
    #[inline(never)]
    pub(super) fn key_by_parse(
        &self,
        pkt: &[u8],
        port: u64,
        t: &mut Templates,
        key: &mut [u64],
    ) -> bool {
        t.parses += 1;
        let mut parsed = t.scratch.take().unwrap_or_else(|| self.new_parsed());
        t.short = false;
        // A path on which a header's bits moved after a decision read them: the key (the
        // headers' final bits) does not tell that path from others, so the packet takes the
        // interpreter's path, which checks a megaflow's recorded decisions as it replays them.
        let ok = self.parse(pkt, port, &mut parsed, key) && !parsed.reextracted;
        t.short = parsed.short();
        if ok && let Some(tpl) = self.template(&parsed, pkt, port) {
            if t.list.len() == TEMPLATES {
                t.list.pop();
            }
            t.list.insert(0, tpl);
            t.repick();
        }
        t.scratch = Some(parsed);
        ok
    }

    /// `extract(h)` at bit `at`.
    pub(super) fn set_header(&self, out: &mut Parsed, h: u32, at: u32) {
        self.move_bits(out, h, at);
        self.set_valid(out, h, true);
        self.invalidate_siblings(out, h);
    }

    /// Header `h` now holds the bits at `at` ([`NONE`]: zeros).
    pub(super) fn move_bits(&self, out: &mut Parsed, h: u32, at: u32) {
        let Some(&old) = out.hdr_off.get(h as usize) else {
            return;
        };
        // Overwritten fields get the header's new bits: the tracer, which follows the
        // assignments from the end of the parse, does not model that.
        if let Some(vars) = self.hdr_over.get(h as usize) {
            for &v in vars {
                if std::mem::take(&mut out.ovr[v as usize]) {
                    out.reextracted = true;
                }
            }
        }
        if old != at {
            if !out.reextracted && self.read_so_far(out, h, false) {
                out.reextracted = true;
            }
            out.hdr_off[h as usize] = at;
            out.varbit[h as usize] = 0;
        }
    }

    /// Header `h` is now valid or not.
    pub(super) fn set_valid(&self, out: &mut Parsed, h: u32, v: bool) {
        let Some(&old) = out.valid.get(h as usize) else {
            return;
        };
        if old != v {
            if !out.reextracted && self.read_so_far(out, h, true) {
                out.reextracted = true;
            }
            out.valid[h as usize] = v;
        }
    }

    /// Whether a `select`, `verify` or assignment run so far read header `h`'s fields (or,
    /// with `validity`, an assignment read its validity).
    #[inline(never)]
    pub(super) fn read_so_far(&self, out: &Parsed, h: u32, validity: bool) -> bool {
        let assigned = out
            .assigned
            .iter()
            .filter_map(|&id| self.assigns.get(id as usize).map(|(_, e)| e));
        if validity {
            return assigned.into_iter().any(|e| reads(e, h, true));
        }
        if out.stack_reads.contains(&h) {
            return true;
        }
        self.decided_by(out)
            .chain(assigned)
            .any(|e| reads(e, h, false))
    }

    /// The expressions of the `select`s, `verify`s, `advance`s and varbit sizes run so far.
    pub(super) fn decided_by<'s>(&'s self, out: &'s Parsed) -> impl Iterator<Item = &'s Ex> + 's {
        let selected = out.selects.iter().filter_map(|&(st, i, ..)| {
            match &self.states.get(st as usize)?.trans {
                Trans::Select { keys, .. } => keys.get(i as usize),
                Trans::Goto(_) => None,
            }
        });
        let verified = out.verified.iter().filter_map(|&(st, oi, _)| {
            match self.states.get(st as usize)?.ops.get(oi as usize)? {
                Op::Verify { e, .. } => Some(e),
                _ => None,
            }
        });
        let advanced = out.advanced.iter().filter_map(|&(st, oi, _)| {
            match self.states.get(st as usize)?.ops.get(oi as usize)? {
                Op::AdvanceBy(e) | Op::ExtractVar { e, .. } => Some(e),
                _ => None,
            }
        });
        selected.chain(verified).chain(advanced)
    }

    /// The other members of `h`'s union become invalid (their fields keep their values).
    pub(super) fn invalidate_siblings(&self, out: &mut Parsed, h: u32) {
        if let Some(sib) = self.siblings.get(h as usize) {
            for &s in sib {
                self.set_valid(out, s, false);
            }
        }
    }

    pub(super) fn fill_key(&self, pkt: &[u8], port: u64, out: &Parsed, key: &mut [u64]) {
        let n = self.words.min(key.len());
        key[..n].fill(0);
        for op in &self.key {
            match *op {
                KeyOp::Field {
                    h,
                    off,
                    len,
                    key: k,
                } => {
                    let base = out.hdr_off[h as usize];
                    if base != NONE {
                        write_key(key, k, len, read_bits(pkt, base + off, len));
                    }
                }
                KeyOp::Valid { h, key: k } => {
                    if out.valid[h as usize] {
                        write_key(key, k, 1, 1);
                    }
                }
                KeyOp::Next {
                    stack,
                    lsb,
                    len,
                    key: k,
                } => write_key(key, k, len, u64::from(out.next[stack as usize]) >> lsb),
                KeyOp::Port { lsb, len, key: k } => write_key(key, k, len, port >> lsb),
                KeyOp::Len { lsb, len, key: k } => {
                    write_key(key, k, len, (pkt.len() as u64) >> lsb)
                }
                KeyOp::Var {
                    var,
                    lsb,
                    len,
                    key: k,
                } => write_key(key, k, len, out.vars[var as usize] >> lsb),
                KeyOp::VarbitLen {
                    h,
                    lsb,
                    len,
                    key: k,
                } => write_key(key, k, len, u64::from(out.varbit[h as usize]) >> lsb),
                KeyOp::Over {
                    var,
                    h,
                    off,
                    lsb,
                    len,
                    key: k,
                } => {
                    if out.ovr[var as usize] {
                        write_key(key, k, len, out.vars[var as usize] >> lsb);
                    } else {
                        let base = out.hdr_off[h as usize];
                        if base != NONE {
                            write_key(key, k, len, read_bits(pkt, base + off, len));
                        }
                    }
                }
                KeyOp::Ahead {
                    var,
                    off,
                    len,
                    key: k,
                } => {
                    let at = out.ahead_at[var as usize];
                    if at != NONE {
                        write_key(key, k, len, read_bits(pkt, at + off, len));
                    }
                }
                KeyOp::Varbit {
                    h,
                    rel,
                    lsb,
                    len,
                    key: k,
                } => {
                    let base = out.hdr_off[h as usize];
                    let n = out.varbit[h as usize];
                    if base == NONE {
                        continue;
                    }
                    for (off, len, k) in KeyOp::varbit_pieces(rel, lsb, len, k, n) {
                        write_key(key, k, len, read_bits(pkt, base + off, len));
                    }
                }
            }
        }
        if out.short() {
            crate::flowkey::write_stop(key, self.stop_word, out.short_bits);
        }
    }
}

pub(super) fn eval(e: &Ex, pkt: &[u8], out: &mut Parsed, port: u64) -> u64 {
    match e {
        Ex::Field { h, off, w, .. } => {
            let base = out.hdr_off[*h as usize];
            if base == NONE {
                0
            } else {
                read_bits(pkt, base + off, *w)
            }
        }
        Ex::Valid(h) => u64::from(out.valid[*h as usize]),
        Ex::Next(s) => u64::from(out.next[*s as usize]),
        Ex::Port(w) => port & mask(*w),
        Ex::Len(w) => (pkt.len() as u64) & mask(*w),
        Ex::Const(v, _) => *v,
        Ex::Var(i, _) => out.vars[*i as usize],
        Ex::Slice(v, lo, w) => (eval(v, pkt, out, port) >> lo) & mask(*w),
        Ex::Concat(a, b, wb) => {
            let hi = eval(a, pkt, out, port);
            let lo = eval(b, pkt, out, port);
            if *wb >= 64 { lo } else { hi << wb | lo }
        }
        Ex::Trunc(v, w) => eval(v, pkt, out, port) & mask(*w),
        Ex::Sext(v, from, to) => {
            let x = eval(v, pkt, out, port);
            let sign = *from > 0 && (x >> (from - 1)) & 1 == 1;
            if sign {
                (x | !mask(*from)) & mask(*to)
            } else {
                x
            }
        }
        Ex::Bin(op, a, b, w, wb) => {
            let x = eval(a, pkt, out, port);
            let y = eval(b, pkt, out, port);
            crate::program::arith64(*op, x, y, *w, *wb)
        }
        // (Never evaluated: `Op::Lookahead` reads the packet itself.)
        Ex::Ahead(_) => 0,
        Ex::Over { var, field } => {
            if out.ovr[*var as usize] {
                out.vars[*var as usize]
            } else {
                eval(field, pkt, out, port)
            }
        }
        Ex::AheadSlice { .. } => match ahead_bits(e, out) {
            Some((off, len)) => read_bits(pkt, off, len),
            None => 0,
        },
        Ex::Un(op, a, w) => {
            let x = eval(a, pkt, out, port);
            crate::program::unary64(*op, x, *w)
        }
        Ex::StackField {
            elems,
            index,
            off,
            w,
            ..
        } => {
            let i = eval(index, pkt, out, port);
            let Some(&h) = usize::try_from(i).ok().and_then(|i| elems.get(i)) else {
                // Past the stack: recorded too, so that the reads line up with the
                // expressions that made them (`Tracer::parser_value`).
                out.stack_reads.push(NONE);
                return 0;
            };
            out.stack_reads.push(h);
            match out.hdr_off[h as usize] {
                NONE => 0,
                base => read_bits(pkt, base + off, *w),
            }
        }
    }
}

/// `len` (1..=64) bits at bit offset `bit` of `data`, right-aligned; bits past the end read
/// as zero.
#[inline]
pub fn read_bits(data: &[u8], bit: u32, len: u32) -> u64 {
    let first = (bit / 8) as usize;
    let shift = bit % 8;
    // One unaligned 8-byte load when the field and the window fit.
    if shift + len <= 64
        && let Some(w) = data.get(first..first + 8)
        && let Ok(w) = <[u8; 8]>::try_from(w)
    {
        let v = u64::from_be_bytes(w) << shift;
        return if len == 0 { 0 } else { v >> (64 - len) };
    }
    if shift + len <= 64 {
        // Near the end: the bytes there are, zero-padded to the same 8-byte window.
        let mut w = [0u8; 8];
        let tail = data.get(first..).unwrap_or(&[]);
        let n = tail.len().min(8);
        w[..n].copy_from_slice(&tail[..n]);
        let v = u64::from_be_bytes(w) << shift;
        return if len == 0 { 0 } else { v >> (64 - len) };
    }
    let nbytes = (shift + len).div_ceil(8) as usize;
    let mut v: u128 = 0;
    for i in 0..nbytes {
        v = (v << 8) | u128::from(data.get(first + i).copied().unwrap_or(0));
    }
    let total = nbytes as u32 * 8;
    let v = v >> (total - shift - len);
    (v & ((1u128 << len) - 1)) as u64
}

/// ORs `len` (1..=64) bits `v` into the key at bit offset `key` (MSB-first words).
#[inline]
pub fn write_key(out: &mut [u64], key: u32, len: u32, v: u64) {
    let v = v & mask(len);
    let (w, off) = ((key / 64) as usize, key % 64);
    if off + len <= 64 {
        if let Some(x) = out.get_mut(w) {
            *x |= v << (64 - off - len);
        }
        return;
    }
    let len2 = off + len - 64;
    if let Some(x) = out.get_mut(w) {
        *x |= v >> len2;
    }
    if let Some(x) = out.get_mut(w + 1) {
        *x |= v << (64 - len2);
    }
}
