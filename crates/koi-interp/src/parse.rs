//! Parser execution: states, `extract` (fixed and varbit), `lookahead`, `advance`,
//! `verify`, `select` (values, masks, prefixes, ranges, value sets, default), and parser
//! errors with BMv2's checks and their order (`src/bm_sim/parser.cpp`): a full stack is
//! `StackOutOfBounds` before anything else; a varbit or `advance` size that is not a whole
//! number of bytes is `ParserInvalidArgument` on v1model; too few bytes is `PacketTooShort`,
//! checked before a varbit above its maximum (`HeaderTooShort`); a parse that visits more
//! states than `8 * bits + margin` ends with `ParserTimeout`.

use crate::exec::{Ctx, Pkt, Stop};
use crate::observer::{Decision, Observer, Replay, Step};
use koi_ir::{
    Architecture, Bits, Expr, HeaderId, HeaderRef, Keyset, ParserId, StateId, Stmt, Target,
    Transition, Ty, Value,
};

pub const PACKET_TOO_SHORT: u32 = 1;
pub const NO_MATCH: u32 = 2;
pub const STACK_OUT_OF_BOUNDS: u32 = 3;
pub const HEADER_TOO_SHORT: u32 = 4;
pub const PARSER_TIMEOUT: u32 = 5;
pub const PARSER_INVALID_ARGUMENT: u32 = 6;

/// How a parse ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ParseEnd {
    Accept,
    /// An explicit transition to `reject`.
    Reject,
    /// A runtime error (its code), also `verify(false, e)`.
    Error(u32),
    /// A `select` no case of which matched (`error.NoMatch`; v1model as p4c compiles it
    /// for BMv2 accepts instead).
    NoMatch,
    /// The packet is abandoned.
    Abort(String),
}

impl<O: Observer> Ctx<'_, O> {
    /// Runs parser `id` on `pkt.data` from bit 0; `pkt.cursor` ends after the consumed bits.
    pub fn run_parser(&mut self, pkt: &mut Pkt, id: ParserId) -> ParseEnd {
        pkt.cursor = 0;
        let Some(parser) = self.p.parsers.get(id) else {
            return ParseEnd::Accept;
        };
        // (PSA's parsers are the ingress and egress parsers.)
        let role = self
            .p
            .package
            .iter()
            .find(|(_, b)| *b == koi_ir::BlockRef::Parser(id))
            .map_or(koi_ir::Role::Parser, |(r, _)| *r);
        self.obs.block(role, &parser.preamble.name);
        let limit = self.opts.parser_state_margin + 8 * (pkt.data.len() as u64) * 8;
        let mut state = parser.start;
        for visited in 0..limit {
            let Some(st) = parser.states.get(state) else {
                return ParseEnd::Accept;
            };
            // The state budget grows with the packet: a run that stayed within it needs a
            // packet long enough to grant it (reported like a length check).
            if O::TRACKS_READS {
                let needed = (visited + 1).saturating_sub(self.opts.parser_state_margin);
                self.obs.packet_length_check(needed.div_ceil(8), true);
            }
            self.obs.parser_state(&st.name);
            for s in &st.stmts {
                match self.stmt(pkt, s, &[]) {
                    Ok(()) => {}
                    Err(Stop::Reject(code)) => return ParseEnd::Error(code),
                    Err(Stop::Exit) => return ParseEnd::Accept,
                    Err(Stop::Abort(why)) => return ParseEnd::Abort(why),
                }
            }
            let target = match &st.transition {
                Some(Transition::Goto(t)) => *t,
                Some(Transition::Select { keys, cases }) => {
                    match self.select_step(pkt, parser, state, keys, cases) {
                        Some(t) => t,
                        None => return ParseEnd::NoMatch,
                    }
                }
                None => Target::Accept,
            };
            match target {
                Target::State(s) => state = s,
                Target::Accept => return ParseEnd::Accept,
                Target::Reject => return ParseEnd::Reject,
            }
        }
        if O::TRACKS_READS {
            let needed = limit
                .saturating_add(1)
                .saturating_sub(self.opts.parser_state_margin);
            self.obs.packet_length_check(needed.div_ceil(8), false);
        }
        ParseEnd::Error(PARSER_TIMEOUT)
    }

    /// A `select` of parser state `state`: replayed if the observer offers a fitting step,
    /// evaluated (and recorded) otherwise.
    fn select_step(
        &mut self,
        pkt: &Pkt,
        parser: &koi_ir::Parser,
        state: StateId,
        keys: &[Expr],
        cases: &[koi_ir::SelectCase],
    ) -> Option<Target> {
        if O::REPLAYS {
            if let Replay::Use(step) = self.obs.replay() {
                match step {
                    Step::Select { state: s, to }
                        if s == state && to.is_none_or(|t| cases.iter().any(|c| c.next == t)) =>
                    {
                        return to;
                    }
                    _ => self.obs.replay_diverged(),
                }
            }
            let to = self.select(pkt, parser, keys, cases);
            self.obs.decided(&Step::Select { state, to });
            return to;
        }
        self.select(pkt, parser, keys, cases)
    }

    fn select(
        &mut self,
        pkt: &Pkt,
        parser: &koi_ir::Parser,
        keys: &[Expr],
        cases: &[koi_ir::SelectCase],
    ) -> Option<Target> {
        let env = self.env(pkt, &[]);
        let vals: Vec<Bits> = keys.iter().map(|k| env.bits(k)).collect();
        // The bits each key's match depended on, for an observer tracking reads only.
        let mut masks: Vec<Bits> = match O::TRACKS_READS {
            true => vals.iter().map(|v| Bits::zero(v.width())).collect(),
            false => Vec::new(),
        };
        let mut found = None;
        for (i, c) in cases.iter().enumerate() {
            if self.case_matches(&vals, &c.keysets, &mut masks) {
                found = Some((i, c.next));
                break;
            }
        }
        for (k, m) in keys.iter().zip(&masks) {
            self.influence(Decision::Select, pkt, k, m, &[]);
        }
        // (State ids are the parser's own: a program with several parsers, as PSA has,
        // names each state in its parser.)
        let name = |t: Option<Target>| match t {
            Some(Target::State(s)) => parser
                .states
                .get(s)
                .map(|x| x.name.as_str())
                .unwrap_or_default(),
            Some(Target::Accept) => "accept",
            Some(Target::Reject) => "reject",
            None => "no match",
        };
        let next = name(found.map(|f| f.1));
        self.obs.select(&vals, found.map(|f| f.0), next);
        found.map(|f| f.1)
    }

    /// Whether `vals` match a case's `keysets`. For an observer tracking reads, `masks` (one
    /// per key, when given) gain the bits the outcome depended on: a case that matches, the
    /// whole of each key's pattern; one that does not, only what fails it: one bit of the
    /// first key whose value or masked value differs from its pattern's (any packet with
    /// that bit fails the case too, as a table miss needs one telling bit per entry), or
    /// the whole of a range's or a value set's keys.
    fn case_matches(&self, vals: &[Bits], keysets: &[Keyset], masks: &mut [Bits]) -> bool {
        let track = !masks.is_empty();
        let mut hit: Vec<(usize, Bits)> = Vec::new();
        let mut at = 0;
        for ks in keysets {
            match ks {
                Keyset::Pattern(p) => {
                    let Some(v) = vals.get(at) else {
                        return false;
                    };
                    if !p.matches(v) {
                        if let Some(m) = masks.get_mut(at) {
                            *m = m.or(&telling_bit(p, v));
                        }
                        return false;
                    }
                    if track {
                        hit.push((at, koi_state::schema::pattern_mask(p, v.width())));
                    }
                    at += 1;
                }
                Keyset::ValueSet(vs) => {
                    let n = self.p.value_sets.get(*vs).map_or(0, |v| v.fields.len());
                    let Some(part) = vals.get(at..at + n) else {
                        return false;
                    };
                    if track {
                        for (k, m) in masks.iter().enumerate().skip(at).take(n) {
                            hit.push((k, Bits::ones(m.width())));
                        }
                    }
                    if !self.state.value_set_contains(*vs, part) {
                        for m in masks.iter_mut().skip(at).take(n) {
                            *m = Bits::ones(m.width());
                        }
                        return false;
                    }
                    at += n;
                }
            }
        }
        for (k, m) in hit {
            if let Some(x) = masks.get_mut(k) {
                *x = x.or(&m);
            }
        }
        true
    }

    /// Runs a parser-only statement.
    pub fn parser_stmt(&mut self, pkt: &mut Pkt, s: &Stmt, params: &[Bits]) -> Result<(), Stop> {
        match s {
            Stmt::Extract {
                header,
                varbit_bits,
            } => self.extract(pkt, header, varbit_bits.as_ref()),
            Stmt::Lookahead { dst } => {
                let (w, is_bool) = self.place_width(pkt, dst, params);
                self.need(pkt, u64::from(w))?;
                let v = Bits::read_bits(&pkt.data, pkt.cursor, w).unwrap_or_else(|_| Bits::zero(w));
                let v = if is_bool {
                    Value::Bool(!v.is_zero())
                } else {
                    Value::Bits(v)
                };
                self.write_place(pkt, dst, &v, params);
                Ok(())
            }
            Stmt::Advance { bits } => {
                self.influence_all(Decision::ParserOperand, pkt, bits, params);
                let n = self.env(pkt, params).index(bits);
                self.whole_bytes(n)?;
                self.need(pkt, n)?;
                pkt.cursor = pkt.cursor.saturating_add(n as usize);
                Ok(())
            }
            Stmt::PacketLength { dst } => {
                let v = Value::Bits(Bits::from_u64(32, pkt.data.len() as u64));
                self.write_place(pkt, dst, &v, params);
                Ok(())
            }
            Stmt::Verify { cond, error } => {
                self.influence_all(Decision::Verify, pkt, cond, params);
                match self.env(pkt, params).truth(cond) {
                    true => Ok(()),
                    false => Err(Stop::Reject(*error)),
                }
            }
            _ => Ok(()),
        }
    }

    /// `ParserInvalidArgument` for a size that is not a whole number of bytes (BMv2: v1model
    /// and PSA).
    fn whole_bytes(&self, bits: u64) -> Result<(), Stop> {
        if matches!(self.p.arch, Architecture::V1Model | Architecture::Psa)
            && !bits.is_multiple_of(8)
        {
            return Err(Stop::Reject(PARSER_INVALID_ARGUMENT));
        }
        Ok(())
    }

    /// `PacketTooShort` unless `bits` more bits follow the cursor.
    fn need(&mut self, pkt: &Pkt, bits: u64) -> Result<(), Stop> {
        let have = (pkt.data.len() as u64) * 8;
        let end = (pkt.cursor as u64).saturating_add(bits);
        if end <= have {
            self.obs.packet_length_check(end, true);
            Ok(())
        } else {
            self.obs.packet_too_short(end);
            Err(Stop::Reject(PACKET_TOO_SHORT))
        }
    }

    /// The header an `extract` fills, and the stack to advance.
    fn extract_target(&mut self, pkt: &Pkt, h: &HeaderRef) -> Result<(HeaderId, bool), Stop> {
        self.influence_header(Decision::StackIndex, pkt, h, &[], false);
        let next = matches!(h, HeaderRef::Next(_));
        match self.env(pkt, &[]).header(h) {
            Some(id) => Ok((id, next)),
            None => Err(Stop::Reject(STACK_OUT_OF_BOUNDS)),
        }
    }

    fn extract(&mut self, pkt: &mut Pkt, h: &HeaderRef, varbit: Option<&Expr>) -> Result<(), Stop> {
        let (id, advance_stack) = self.extract_target(pkt, h)?;
        // (The pipeline outlives `self`: its header stays borrowed across the calls below.)
        let p = self.p;
        let Some(hd) = p.phv.headers.get(id) else {
            return Ok(());
        };
        let var = hd
            .fields
            .iter()
            .find_map(|f| match self.p.phv.slots.get(*f)?.ty {
                Ty::Varbit(max) => Some((*f, max)),
                _ => None,
            });
        let (fixed, var_bits) = match (var, varbit) {
            (Some((_, max)), Some(e)) => {
                self.influence_all(Decision::ParserOperand, pkt, e, &[]);
                let n = self.env(pkt, &[]).index(e);
                self.whole_bytes(n)?;
                (hd.width - max, Some((n, max)))
            }
            (Some((_, max)), None) => (hd.width - max, Some((0, max))),
            (None, _) => (hd.width, None),
        };
        let total = u64::from(fixed).saturating_add(var_bits.map_or(0, |v| v.0));
        self.need(pkt, total)?;
        if var_bits.is_some_and(|(n, max)| n > u64::from(max)) {
            return Err(Stop::Reject(HEADER_TOO_SHORT));
        }
        self.copy_in(pkt, id, var_bits.map(|v| v.0 as u32));
        pkt.cursor += total as usize;
        pkt.phv.set_valid(self.p, id, true);
        self.invalidate_siblings(pkt, id);
        if advance_stack && let HeaderRef::Next(s) = h {
            self.bump_next(pkt, *s);
        }
        self.obs.extract(&hd.name, total);
        Ok(())
    }

    /// Copies the header's bits from the packet at the cursor into the PHV.
    fn copy_in(&mut self, pkt: &mut Pkt, id: HeaderId, var_len: Option<u32>) {
        let Some(hd) = self.p.phv.headers.get(id) else {
            return;
        };
        let Some(len) = var_len else {
            pkt.phv
                .copy_from(hd.offset, &pkt.data, pkt.cursor, hd.width);
            return;
        };
        let mut at = pkt.cursor;
        for &f in &hd.fields {
            let Some(slot) = self.p.phv.slots.get(f) else {
                continue;
            };
            let w = match slot.ty {
                Ty::Varbit(_) => len,
                t => t.width(),
            };
            let v = Bits::read_bits(&pkt.data, at, w).unwrap_or_else(|_| Bits::zero(w));
            let value = match slot.ty {
                Ty::Varbit(max) => Value::Varbit { max, bits: v },
                _ => Value::Bits(v),
            };
            pkt.phv.set_value(self.p, f, &value);
            at += w as usize;
        }
    }

    fn bump_next(&mut self, pkt: &mut Pkt, s: koi_ir::StackId) {
        if let Some(st) = self.p.phv.stacks.get(s) {
            let n = pkt.phv.raw(self.p, st.next_index).to_u64().unwrap_or(0);
            pkt.phv.set_raw(
                self.p,
                st.next_index,
                &Bits::from_u64(32, n.saturating_add(1)),
            );
        }
    }
}

/// The bits of `v` that show it fails pattern `p`: for a value, a mask or a prefix, the most
/// significant bit in which `v` differs from the pattern where it looks; for a range, all of
/// the pattern's mask.
fn telling_bit(p: &koi_ir::Pattern, v: &Bits) -> Bits {
    use koi_ir::Pattern;
    let w = v.width();
    let (value, mask) = match p {
        Pattern::Exact(x) => (x.resize(w), Bits::ones(w)),
        Pattern::Mask { value, mask } => (value.resize(w), mask.resize(w)),
        Pattern::Prefix { value, len } => (value.resize(w), Bits::prefix_mask(w, *len)),
        Pattern::Range { .. } | Pattern::Any => return koi_state::schema::pattern_mask(p, w),
    };
    let diff = v.xor(&value).and(&mask);
    let mut one = Bits::zero(w);
    if let Some(i) = (0..w).rev().find(|&i| diff.bit(i)) {
        one.set_bit(i, true);
        return one;
    }
    // (Not reached for a pattern `v` fails; the whole mask is always enough.)
    mask
}
