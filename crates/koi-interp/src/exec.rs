//! The execution context ([`Ctx`]) and one packet instance ([`Pkt`]); statements that touch
//! the PHV: assignments, header validity, header copies, stack pushes and pops, `emit`.
//! Parser statements are in [`crate::parse`], calls in [`crate::control`] and
//! [`crate::externs`].

use crate::eval::Env;
use crate::observer::{Decision, Observer};
use crate::options::{Options, Report, Rng};
use crate::phv::{BitWriter, Phv};
use crate::prepared::Prepared;
use koi_ir::{
    Architecture, Bits, Expr, ExternId, FieldListId, HeaderId, HeaderRef, Pipeline, Place, Role,
    StackId, Stmt, Ty, Value,
};
use koi_state::{Clock, DigestMessage, State};

/// Why execution stopped before the end of a block.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Stop {
    /// P4 `exit`: the current architecture block ends.
    Exit,
    /// The parser rejects with this error code.
    Reject(u32),
    /// The packet is abandoned (failed assertion, unsupported extern, step limit).
    Abort(String),
}

/// Effects requested during a block, applied by the architecture at its end.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Effects {
    /// Clone session and field list (the last call wins).
    pub clone: Option<(u64, Option<FieldListId>)>,
    pub resubmit: Option<Option<FieldListId>>,
    pub recirculate: Option<Option<FieldListId>>,
    pub digest: Option<DigestMessage>,
    /// uBPF's hidden flag: `mark_to_drop` sets it, `mark_to_pass` clears it.
    pub ubpf_drop: bool,
}

/// One packet instance.
#[derive(Clone, Debug)]
pub struct Pkt {
    pub phv: Phv,
    /// The bytes this pass parses; after parsing, the unparsed payload is what follows
    /// `cursor`.
    pub data: Vec<u8>,
    /// Bits the parser consumed.
    pub cursor: usize,
    /// The length in bytes when it entered the parser (counters and meters count it).
    pub ingress_len: usize,
    /// BMv2's packet length register: the length plus headers made valid, minus headers
    /// made invalid (`standard_metadata.packet_length` in egress).
    pub len_reg: i64,
    /// `truncate` length.
    pub truncate: Option<u64>,
    pub fx: Effects,
    /// Colours of direct meters from the table being applied, for `read`.
    pub meter_colors: Vec<(ExternId, u64)>,
    /// The deparser's output, while it runs.
    pub emit: Option<BitWriter>,
    /// PSA's checksum units' sums for this packet (each packet starts with them clear).
    pub units: Vec<(ExternId, crate::psa_externs::Unit)>,
}

impl Pkt {
    /// A new instance of `data` with a zeroed PHV.
    pub fn new(p: &Pipeline, data: Vec<u8>) -> Pkt {
        let len = data.len();
        Pkt {
            phv: Phv::new(p),
            data,
            cursor: 0,
            ingress_len: len,
            len_reg: len as i64,
            truncate: None,
            fx: Effects::default(),
            meter_colors: Vec::new(),
            emit: None,
            units: Vec::new(),
        }
    }
}

/// What a run uses besides the packet.
/// Value lists a run keeps for reuse (nested action calls need one each).
const MAX_KEPT_LISTS: usize = 16;

pub struct Ctx<'a, O: Observer> {
    pub p: &'a Pipeline,
    pub prep: &'a Prepared,
    pub opts: &'a Options,
    pub state: &'a mut State,
    pub clock: &'a dyn Clock,
    pub rng: &'a mut Rng,
    pub obs: &'a mut O,
    pub report: &'a mut Report,
    pub role: Role,
    /// Emptied value lists kept for reuse (action arguments, table keys): a run calls
    /// actions and applies tables without allocating a list for each.
    pub lists: &'a mut Vec<Vec<Bits>>,
}

impl<O: Observer> Ctx<'_, O> {
    pub fn now_ns(&self) -> u64 {
        self.clock.now_ns()
    }

    /// An empty value list, reused if one is kept.
    #[inline]
    pub fn list(&mut self) -> Vec<Bits> {
        self.lists.pop().unwrap_or_default()
    }

    /// Keeps `list`'s allocation for [`Ctx::list`].
    #[inline]
    pub fn keep(&mut self, mut list: Vec<Bits>) {
        if self.lists.len() < MAX_KEPT_LISTS && list.capacity() > 0 {
            list.clear();
            self.lists.push(list);
        }
    }

    pub fn env<'e>(&'e self, pkt: &'e Pkt, params: &'e [Bits]) -> Env<'e> {
        Env {
            p: self.p,
            phv: &pkt.phv,
            params,
        }
    }

    /// Reports the reads of `e` relevant to bits `mask` of its value.
    pub fn influence(&mut self, d: Decision, pkt: &Pkt, e: &Expr, mask: &Bits, params: &[Bits]) {
        if !O::TRACKS_READS {
            return;
        }
        let env = Env {
            p: self.p,
            phv: &pkt.phv,
            params,
        };
        let obs = &mut *self.obs;
        env.reads(e, mask, &mut |s, m| obs.influence(d, s, &m));
    }

    /// Reports every read of `e` (full masks).
    pub fn influence_all(&mut self, d: Decision, pkt: &Pkt, e: &Expr, params: &[Bits]) {
        if !O::TRACKS_READS {
            return;
        }
        let env = Env {
            p: self.p,
            phv: &pkt.phv,
            params,
        };
        let obs = &mut *self.obs;
        env.all_reads(e, &mut |s, m| obs.influence(d, s, &m));
    }

    /// Reports the reads a header reference involves (and its validity if `validity`).
    pub fn influence_header(
        &mut self,
        d: Decision,
        pkt: &Pkt,
        h: &HeaderRef,
        params: &[Bits],
        validity: bool,
    ) {
        if !O::TRACKS_READS {
            return;
        }
        let env = Env {
            p: self.p,
            phv: &pkt.phv,
            params,
        };
        let obs = &mut *self.obs;
        env.header_reads(h, &mut |s, m| obs.influence(d, s, &m), validity);
    }

    /// Runs one statement.
    pub fn stmt(&mut self, pkt: &mut Pkt, s: &Stmt, params: &[Bits]) -> Result<(), Stop> {
        if O::TRACES_EFFECTS {
            self.obs.stmt(s, params);
        }
        match s {
            Stmt::Assign { dst, value } => {
                let v = self.env(pkt, params).eval(value);
                self.write_place(pkt, dst, &v, params);
                Ok(())
            }
            Stmt::SetValid(h) => {
                self.with_header(pkt, h, params, |c, pkt, h| c.set_valid(pkt, h));
                Ok(())
            }
            Stmt::SetInvalid(h) => {
                self.with_header(pkt, h, params, |c, pkt, h| c.set_invalid(pkt, h));
                Ok(())
            }
            Stmt::CopyHeader { dst, src } => {
                self.copy_header(pkt, dst, src, params);
                Ok(())
            }
            Stmt::PushFront { stack, count } => {
                self.shift_stack(pkt, *stack, i64::from(*count));
                Ok(())
            }
            Stmt::PopFront { stack, count } => {
                self.shift_stack(pkt, *stack, -i64::from(*count));
                Ok(())
            }
            Stmt::Emit(h) => {
                self.emit(pkt, h, params);
                Ok(())
            }
            Stmt::Extract { .. }
            | Stmt::Lookahead { .. }
            | Stmt::Advance { .. }
            | Stmt::PacketLength { .. }
            | Stmt::Verify { .. } => self.parser_stmt(pkt, s, params),
            Stmt::CallAction { action, args } => {
                let mut vals = self.list();
                let env = self.env(pkt, params);
                vals.extend(args.iter().map(|a| env.bits(a)));
                let r = self.call_action(pkt, *action, &vals);
                self.keep(vals);
                r
            }
            Stmt::ExternCall {
                instance,
                method,
                args,
                result,
            } => self.extern_call(pkt, *instance, method, args, result.as_ref(), params),
            Stmt::Builtin(b) => self.builtin(pkt, b, params),
        }
    }

    /// The width of the value a place holds.
    pub fn place_width(&self, pkt: &Pkt, place: &Place, params: &[Bits]) -> (u32, bool) {
        let slot_ty = |s| self.p.phv.slots.get(s).map_or(Ty::Bits(0), |x| x.ty);
        match place {
            Place::Slot(s) => (slot_ty(*s).width(), slot_ty(*s) == Ty::Bool),
            Place::Slice { hi, lo, .. } => (hi.saturating_sub(*lo).saturating_add(1), false),
            Place::StackField {
                stack,
                index,
                field,
            } => {
                let env = self.env(pkt, params);
                let first = self
                    .p
                    .phv
                    .stacks
                    .get(*stack)
                    .and_then(|st| st.elems.first())
                    .and_then(|h| self.p.phv.headers.get(*h))
                    .and_then(|h| h.fields.get(*field as usize).copied());
                let s = env.stack_field_slot(*stack, index, *field).or(first);
                s.map_or((0, false), |s| (slot_ty(s).width(), slot_ty(s) == Ty::Bool))
            }
        }
    }

    /// Stores `v` in `place`.
    pub fn write_place(&mut self, pkt: &mut Pkt, place: &Place, v: &Value, params: &[Bits]) {
        match place {
            Place::Slot(s) => pkt.phv.set_value(self.p, *s, v),
            Place::Slice { slot, hi, lo } => {
                let w = hi.saturating_sub(*lo).saturating_add(1);
                let cur = pkt.phv.raw(self.p, *slot);
                let new = cur.with_slice(*lo, &v.to_bits().resize(w));
                pkt.phv.set_raw(self.p, *slot, &new);
            }
            Place::StackField {
                stack,
                index,
                field,
            } => {
                self.influence_all(Decision::StackIndex, pkt, index, params);
                let s = self
                    .env(pkt, params)
                    .stack_field_slot(*stack, index, *field);
                if let Some(s) = s {
                    pkt.phv.set_value(self.p, s, v);
                }
            }
        }
    }

    fn with_header(
        &mut self,
        pkt: &mut Pkt,
        h: &HeaderRef,
        params: &[Bits],
        f: impl FnOnce(&mut Self, &mut Pkt, HeaderId),
    ) {
        self.influence_header(Decision::StackIndex, pkt, h, params, false);
        if let Some(id) = self.env(pkt, params).header(h) {
            f(self, pkt, id);
        }
    }

    /// The bytes a header adds to the packet (fixed fields and current varbit lengths).
    pub fn header_bytes(&self, pkt: &Pkt, h: HeaderId) -> i64 {
        let Some(hd) = self.p.phv.headers.get(h) else {
            return 0;
        };
        let bits: u64 = hd
            .fields
            .iter()
            .filter_map(|f| self.p.phv.slots.get(*f).map(|s| (f, s)))
            .map(|(f, s)| match s.ty {
                Ty::Varbit(_) => match pkt.phv.value(self.p, *f) {
                    Value::Varbit { bits, .. } => u64::from(bits.width()),
                    _ => 0,
                },
                t => u64::from(t.width()),
            })
            .sum();
        (bits / 8) as i64
    }

    /// `setValid()`: an invalid header becomes valid with its fields zeroed on v1model and
    /// PSA (BMv2's `add_header`); the other members of its union become invalid.
    pub fn set_valid(&mut self, pkt: &mut Pkt, h: HeaderId) {
        if !pkt.phv.valid(self.p, h) {
            if matches!(self.p.arch, Architecture::V1Model | Architecture::Psa) {
                pkt.phv.zero_fields(self.p, h);
            }
            pkt.phv.set_valid(self.p, h, true);
            pkt.len_reg += self.header_bytes(pkt, h);
        }
        self.invalidate_siblings(pkt, h);
    }

    /// `setInvalid()`.
    pub fn set_invalid(&mut self, pkt: &mut Pkt, h: HeaderId) {
        if pkt.phv.valid(self.p, h) {
            pkt.len_reg -= self.header_bytes(pkt, h);
            pkt.phv.set_valid(self.p, h, false);
        }
    }

    /// Makes the other members of `h`'s union invalid.
    pub fn invalidate_siblings(&mut self, pkt: &mut Pkt, h: HeaderId) {
        let Some(u) = self.p.phv.headers.get(h).and_then(|x| x.union) else {
            return;
        };
        let members = self.p.phv.unions.get(u).map_or(&[][..], |u| &u.members[..]);
        for &m in members.iter().filter(|m| **m != h) {
            pkt.phv.set_valid(self.p, m, false);
        }
    }

    fn copy_header(&mut self, pkt: &mut Pkt, dst: &HeaderRef, src: &HeaderRef, params: &[Bits]) {
        self.influence_header(Decision::StackIndex, pkt, dst, params, false);
        self.influence_header(Decision::StackIndex, pkt, src, params, false);
        let env = self.env(pkt, params);
        let (Some(d), s) = (env.header(dst), env.header(src)) else {
            return;
        };
        match s {
            Some(s) => {
                let snapshot = pkt.phv.clone();
                pkt.phv.copy_header(self.p, d, &snapshot, s);
                if pkt.phv.valid(self.p, d) {
                    self.invalidate_siblings(pkt, d);
                }
            }
            None => pkt.phv.set_valid(self.p, d, false),
        }
    }

    /// `push_front(n)` for `by > 0`, `pop_front(n)` for `by < 0`.
    fn shift_stack(&mut self, pkt: &mut Pkt, stack: StackId, by: i64) {
        let Some(st) = self.p.phv.stacks.get(stack) else {
            return;
        };
        let n = st.elems.len() as i64;
        let snapshot = pkt.phv.clone();
        for i in 0..n {
            let src = i - by;
            let dst = st.elems[i as usize];
            if (0..n).contains(&src) {
                pkt.phv
                    .copy_header(self.p, dst, &snapshot, st.elems[src as usize]);
            } else {
                pkt.phv.set_valid(self.p, dst, false);
            }
        }
        let next = snapshot.raw(self.p, st.next_index).to_u64().unwrap_or(0) as i64;
        let new = (next + by).clamp(0, n) as u64;
        pkt.phv
            .set_raw(self.p, st.next_index, &Bits::from_u64(32, new));
    }

    /// The wire bits of header `h`: its fields in order, varbits at their current length.
    pub fn wire_bits(&self, pkt: &Pkt, h: HeaderId) -> Bits {
        let Some(hd) = self.p.phv.headers.get(h) else {
            return Bits::zero(0);
        };
        let has_varbit = hd
            .fields
            .iter()
            .any(|f| matches!(self.p.phv.slots.get(*f).map(|s| s.ty), Some(Ty::Varbit(_))));
        if !has_varbit {
            return pkt.phv.read_at(hd.offset, hd.width);
        }
        hd.fields.iter().fold(Bits::zero(0), |acc, f| {
            acc.concat(&pkt.phv.value(self.p, *f).to_bits())
        })
    }

    fn emit(&mut self, pkt: &mut Pkt, h: &HeaderRef, params: &[Bits]) {
        self.influence_header(Decision::Emit, pkt, h, params, true);
        let Some(id) = self.env(pkt, params).header(h) else {
            return;
        };
        if !pkt.phv.valid(self.p, id) {
            return;
        }
        let Some(hd) = self.p.phv.headers.get(id) else {
            return;
        };
        let has_varbit = hd
            .fields
            .iter()
            .any(|f| matches!(self.p.phv.slots.get(*f).map(|s| s.ty), Some(Ty::Varbit(_))));
        if !has_varbit {
            // The header's bits straight from the PHV (a byte copy when aligned).
            if let Some(w) = pkt.emit.as_mut() {
                w.push_range(pkt.phv.bytes(), hd.offset as usize, hd.width as usize);
            }
            return;
        }
        let bits = self.wire_bits(pkt, id);
        if let Some(w) = pkt.emit.as_mut() {
            w.push(&bits);
        }
    }
}
