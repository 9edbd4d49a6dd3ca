//! The statement part of fact gathering: what each statement writes, from what, and which
//! decisions it makes (see [`super::facts`]).

use super::DecisionKind;
use super::facts::{Facts, Loc, Origin, Src, Write, place_slots, ref_headers};
use koi_ir::entity::EntityId;
use koi_ir::stmt::Operand;
use koi_ir::{
    ActionId, Arg, Builtin, Expr, ExternId, ExternKind, HashAlgo, HeaderId, HeaderRef, Pipeline,
    SlotId, Stmt,
};

/// Whether statement `s` writes a value from extern state ([`Origin::State`]: a register or
/// meter read, `random`, a timestamp, a checksum over the payload): the only way a value of a
/// run becomes state-derived. A run that has executed none of these so far holds no
/// state-derived value, whatever the static analysis says each slot *may* hold.
pub(crate) fn writes_state(p: &Pipeline, s: &Stmt) -> bool {
    match s {
        Stmt::ExternCall {
            instance,
            args,
            result,
            ..
        } => {
            extern_origin(p, *instance) == Origin::State
                && (result.is_some()
                    || args
                        .iter()
                        .any(|a| matches!(a, Arg::Out(_) | Arg::InOut(_))))
        }
        Stmt::Builtin(b) => builtin_origin(p, b) == Origin::State,
        _ => false,
    }
}

/// How what a call of extern instance `e` writes originates: from its arguments alone for
/// `Checksum16`, from its state for every other extern.
fn extern_origin(p: &Pipeline, e: ExternId) -> Origin {
    match p.externs.get(e).map(|e| &e.kind) {
        Some(ExternKind::Checksum16 | ExternKind::Hash { .. }) => Origin::Data,
        _ => Origin::State,
    }
}

/// How what builtin `b` writes originates: from state for `random` (and a `random` hash), a
/// timestamp, and a checksum over the payload (bits no flow key holds, so a decision on it
/// is not cached, as a state-dependent one), and the user's extern functions not declared
/// `@pure` (C code that may keep state); from its operands otherwise.
fn builtin_origin(p: &Pipeline, b: &Builtin) -> Origin {
    match b {
        Builtin::Native { func, .. } => match p.natives.fns.get(*func as usize) {
            Some(f) if f.pure => Origin::Data,
            _ => Origin::State,
        },
        Builtin::Hash {
            algo: HashAlgo::Random,
            ..
        }
        | Builtin::Random { .. }
        | Builtin::TimestampNs { .. }
        | Builtin::VerifyChecksum {
            with_payload: true, ..
        }
        | Builtin::UpdateChecksum {
            with_payload: true, ..
        } => Origin::State,
        _ => Origin::Data,
    }
}

impl<'a> Facts<'a> {
    pub(super) fn stmt(&mut self, s: &'a Stmt, loc: Loc, ctx: Option<ActionId>, where_: &str) {
        let p = self.p;
        s.for_each_expr(&mut |e| {
            super::reads::expr_nodes(p, e, ctx, &self.param_base, &mut |n| {
                if let Some(x) = self.read_anywhere.get_mut(n) {
                    *x = true;
                }
            })
        });
        match s {
            Stmt::Assign { dst, value } => {
                self.write(dst, vec![Src::Value(value, ctx)], Origin::Data, loc, ctx)
            }
            Stmt::SetValid(h) | Stmt::SetInvalid(h) => {
                self.header_use(h, ctx, where_);
                for hd in ref_headers(p, h) {
                    let union = p.phv.headers.get(hd).and_then(|x| x.union);
                    let members = union
                        .and_then(|u| p.phv.unions.get(u))
                        .map(|u| u.members.clone());
                    for m in members.unwrap_or_else(|| vec![hd]) {
                        if let Some(x) = p.phv.headers.get(m) {
                            self.write_slot(x.valid, Vec::new(), Origin::Data, loc);
                        }
                    }
                }
            }
            Stmt::CopyHeader { dst, src } => {
                self.header_use(dst, ctx, where_);
                self.header_use(src, ctx, where_);
                let srcs = ref_headers(p, src);
                for d in ref_headers(p, dst) {
                    for sh in &srcs {
                        self.copy_header(d, *sh, loc);
                    }
                }
            }
            Stmt::PushFront { stack, .. } | Stmt::PopFront { stack, .. } => {
                let Some(st) = p.phv.stacks.get(*stack) else {
                    return;
                };
                for &d in &st.elems {
                    for &sh in &st.elems {
                        self.copy_header(d, sh, loc);
                    }
                }
                let ni = st.next_index.index() as usize;
                self.writes.push(Write {
                    dst: ni,
                    range: None,
                    srcs: vec![Src::Node(ni)],
                    origin: Origin::Data,
                    loc: Some(loc),
                });
            }
            Stmt::Extract {
                header,
                varbit_bits,
            } => {
                self.header_use(header, ctx, where_);
                // PSA's egress parser: what it extracts comes from the emitted headers; the
                // header's validity (and a stack's next index) from the parse's way alone,
                // which its own decisions fix (a run whose egress parse runs out of emitted
                // headers is not cached).
                let (origin, srcs) = match self.egress_parser == Some(loc.body) {
                    true => (Origin::Data, self.repacked.clone()),
                    false => (Origin::Packet, Vec::new()),
                };
                if let Some(b) = varbit_bits {
                    let r = vec![Src::Value(b, ctx)];
                    self.decide(
                        DecisionKind::ParserOperand,
                        format!("{where_}: varbit size"),
                        r,
                        None,
                    );
                }
                if let HeaderRef::Next(st) = header
                    && let Some(stack) = p.phv.stacks.get(*st)
                {
                    self.write_slot(stack.next_index, Vec::new(), origin, loc);
                }
                for h in ref_headers(p, header) {
                    let Some(hd) = p.phv.headers.get(h) else {
                        continue;
                    };
                    for &f in &hd.fields {
                        self.write_slot(f, srcs.clone(), origin, loc);
                        if let Some(l) = p.phv.slots.get(f).and_then(|x| x.length) {
                            self.write_slot(l, srcs.clone(), origin, loc);
                        }
                    }
                    self.write_slot(hd.valid, Vec::new(), origin, loc);
                    let union = hd.union.and_then(|u| p.phv.unions.get(u));
                    for &m in union.map_or(&[][..], |u| &u.members) {
                        if let (true, Some(x)) = (m != h, p.phv.headers.get(m)) {
                            self.write_slot(x.valid, Vec::new(), Origin::Data, loc);
                        }
                    }
                }
            }
            Stmt::Lookahead { dst } if self.egress_parser == Some(loc.body) => {
                self.write(dst, self.repacked.clone(), Origin::Data, loc, ctx)
            }
            Stmt::Lookahead { dst } => self.write(dst, Vec::new(), Origin::Packet, loc, ctx),
            Stmt::PacketLength { dst } => self.write(dst, Vec::new(), Origin::Arch, loc, ctx),
            Stmt::Advance { bits } => {
                let r = vec![Src::Value(bits, ctx)];
                self.decide(
                    DecisionKind::ParserOperand,
                    format!("{where_}: advance"),
                    r,
                    None,
                );
            }
            Stmt::Verify { cond, .. } => {
                let r = vec![Src::Value(cond, ctx)];
                self.decide(DecisionKind::Verify, format!("{where_}: verify"), r, None);
            }
            Stmt::Emit(h) => {
                self.header_use(h, ctx, where_);
                let valid = Expr::IsValid(h.clone());
                let mut r = Vec::new();
                valid.for_each_read(&p.phv, &mut |s| r.push(Src::Node(s.index() as usize)));
                let names: Vec<&str> = ref_headers(p, h)
                    .into_iter()
                    .filter_map(|x| p.phv.headers.get(x).map(|x| x.name.as_str()))
                    .collect();
                let loc = format!("{where_}: emit {}", names.join("|"));
                self.decide(DecisionKind::Emit, loc, r, None);
            }
            Stmt::CallAction { action, args } => {
                self.calls.push((loc, *action));
                for (i, a) in args.iter().enumerate() {
                    if let Some(n) = self.param_node(*action, i as u32) {
                        self.writes.push(Write {
                            dst: n,
                            range: None,
                            srcs: vec![Src::Value(a, ctx)],
                            origin: Origin::Data,
                            loc: Some(loc),
                        });
                    }
                }
            }
            Stmt::ExternCall {
                instance,
                args,
                result,
                ..
            } => {
                let origin = extern_origin(p, *instance);
                let mut srcs: Vec<Src<'a>> = Vec::new();
                for a in args {
                    match a {
                        Arg::In(e) => srcs.push(Src::Full(e, ctx)),
                        Arg::InOut(pl) => place_slots(p, pl)
                            .for_each(|s| srcs.push(Src::Node(s.index() as usize))),
                        Arg::Out(_) => {}
                    }
                }
                for a in args {
                    if let Arg::Out(pl) | Arg::InOut(pl) = a {
                        self.write(pl, srcs.clone(), origin, loc, ctx);
                    }
                }
                if let Some(r) = result {
                    self.write(r, srcs, origin, loc, ctx);
                }
            }
            Stmt::Builtin(b) => self.builtin(b, loc, ctx, where_),
        }
    }

    fn copy_header(&mut self, dst: HeaderId, src: HeaderId, loc: Loc) {
        let p = self.p;
        let (Some(d), Some(s)) = (p.phv.headers.get(dst), p.phv.headers.get(src)) else {
            return;
        };
        let mut pairs: Vec<(SlotId, SlotId)> = vec![(d.valid, s.valid)];
        for (&df, &sf) in d.fields.iter().zip(&s.fields) {
            pairs.push((df, sf));
            let len = |x: SlotId| p.phv.slots.get(x).and_then(|x| x.length);
            if let (Some(dl), Some(sl)) = (len(df), len(sf)) {
                pairs.push((dl, sl));
            }
        }
        for (dslot, sslot) in pairs {
            self.write_slot(
                dslot,
                vec![Src::Node(sslot.index() as usize)],
                Origin::Data,
                loc,
            );
        }
    }

    fn builtin(&mut self, b: &'a Builtin, loc: Loc, ctx: Option<ActionId>, where_: &str) {
        let reads = |b: &'a Builtin| {
            let mut v: Vec<Src<'a>> = Vec::new();
            b.for_each_operand(&mut |o| {
                if let Operand::Read(e) = o {
                    v.push(Src::Full(e, ctx))
                }
            });
            v
        };
        let origin = builtin_origin(self.p, b);
        match b {
            Builtin::MarkToDrop | Builtin::MarkToPass => {
                for n in ["egress_spec", "mcast_grp", "output_action"] {
                    if let Some(s) = self.p.intrinsic(n) {
                        self.write_slot(s, Vec::new(), Origin::Data, loc);
                    }
                }
            }
            Builtin::Hash { dst, .. } | Builtin::CsumReplace { dst, .. } => {
                self.write(dst, reads(b), origin, loc, ctx)
            }
            Builtin::Random { dst, .. } | Builtin::TimestampNs { dst } => {
                self.write(dst, Vec::new(), origin, loc, ctx)
            }
            Builtin::VerifyChecksum { .. } => {
                if let Some(s) = self.p.intrinsic("checksum_error") {
                    self.write_slot(s, reads(b), origin, loc);
                }
            }
            Builtin::UpdateChecksum { cond, checksum, .. } => {
                let r = vec![Src::Value(cond, ctx)];
                self.decide(
                    DecisionKind::Checksum,
                    format!("{where_}: update_checksum condition"),
                    r,
                    None,
                );
                self.write(checksum, reads(b), origin, loc, ctx);
            }
            Builtin::Assert { cond } | Builtin::Assume { cond } => {
                let r = vec![Src::Value(cond, ctx)];
                self.decide(
                    DecisionKind::Assert,
                    format!("{where_}: {}", b.name()),
                    r,
                    None,
                );
            }
            // A pure one's results come from its arguments, an impure one's from its state.
            Builtin::Native { args, ret, .. } => {
                for dst in args.iter().flat_map(|a| &a.writes).chain(ret) {
                    self.write(dst, reads(b), origin, loc, ctx);
                }
            }
            Builtin::Clone { .. }
            | Builtin::Resubmit { .. }
            | Builtin::Recirculate { .. }
            | Builtin::Truncate { .. }
            | Builtin::Digest { .. }
            | Builtin::LogMsg { .. } => {}
        }
    }
}
