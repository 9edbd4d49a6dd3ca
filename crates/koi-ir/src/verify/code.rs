//! Verification of code: statements in their context, control and action bodies (every block
//! terminated, jumps in range, conditions bool, table applications outside actions), parser
//! states and `select`s, and the absence of recursive action calls.

use super::layout::oor;
use super::typing::{
    TypeEnv, check_header_ref, expect_bits, expect_bool, expect_same, is_validity, place_type,
    type_of,
};
use super::{ErrorKind, Verifier};
use crate::control::{ApplyNext, Body, Terminator};
use crate::entity::EntityId;
use crate::expr::{Expr, HeaderRef, Place};
use crate::externs::ExternKind;
use crate::ids::{ActionId, ParserId};
use crate::parser::{Keyset, Target, Transition};
use crate::pipeline::BlockRef;
use crate::stmt::{Arg, Builtin, Stmt};
use crate::types::Ty;

/// Where code runs: what it may do.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Ctx {
    Parser,
    Control { deparser: bool },
    Action,
}

impl Ctx {
    fn name(self) -> &'static str {
        match self {
            Ctx::Parser => "a parser",
            Ctx::Control { deparser: true } => "a deparser",
            Ctx::Control { deparser: false } => "a control",
            Ctx::Action => "an action",
        }
    }
}

type Check = Result<(), ErrorKind>;

fn only_in(ok: bool, what: &'static str, ctx: Ctx) -> Check {
    if ok {
        Ok(())
    } else {
        Err(ErrorKind::NotAllowedHere {
            what,
            context: ctx.name(),
        })
    }
}

fn count(expected: usize, found: usize) -> Check {
    if expected == found {
        Ok(())
    } else {
        Err(ErrorKind::CountMismatch { expected, found })
    }
}

impl<'a> Verifier<'a> {
    fn env(&self, params: Option<&'a [crate::control::ActionParam]>) -> TypeEnv<'a> {
        TypeEnv {
            pipeline: self.p,
            params,
        }
    }

    fn header_ref(&self, h: &HeaderRef, ctx: Ctx, env: &TypeEnv) -> Check {
        if matches!(h, HeaderRef::Next(_) | HeaderRef::Last(_)) {
            only_in(ctx == Ctx::Parser, "stack .next/.last", ctx)?;
        }
        check_header_ref(h, env)
    }

    fn expr_is(&self, e: &Expr, ty: Ty, env: &TypeEnv) -> Check {
        expect_same(ty, type_of(e, env)?).map(|_| ())
    }

    fn bits(&self, e: &Expr, env: &TypeEnv) -> Result<u32, ErrorKind> {
        expect_bits(type_of(e, env)?)
    }

    fn cond(&self, e: &Expr, env: &TypeEnv) -> Check {
        expect_bool(type_of(e, env)?)
    }

    pub(super) fn check_stmt(&self, s: &Stmt, ctx: Ctx, env: &TypeEnv) -> Check {
        let parser = ctx == Ctx::Parser;
        match s {
            Stmt::Assign { dst, value } => {
                expect_same(place_type(dst, env)?, type_of(value, env)?).map(|_| ())
            }
            Stmt::SetValid(h) | Stmt::SetInvalid(h) => self.header_ref(h, ctx, env),
            Stmt::CopyHeader { dst, src } => {
                self.header_ref(dst, ctx, env)?;
                self.header_ref(src, ctx, env)?;
                self.same_header_type(dst, src)
            }
            Stmt::PushFront { stack, .. } | Stmt::PopFront { stack, .. } => {
                check_header_ref(&HeaderRef::Next(*stack), env)
            }
            Stmt::Extract {
                header,
                varbit_bits,
            } => {
                only_in(parser, "extract", ctx)?;
                self.header_ref(header, ctx, env)?;
                self.extract_varbit(header, varbit_bits.as_ref(), env)
            }
            Stmt::Lookahead { dst } => {
                only_in(parser, "lookahead", ctx)?;
                match place_type(dst, env)? {
                    found @ Ty::Varbit(_) => Err(ErrorKind::ExpectedBits { found }),
                    _ => Ok(()),
                }
            }
            Stmt::Advance { bits } => {
                only_in(parser, "advance", ctx)?;
                self.bits(bits, env).map(|_| ())
            }
            Stmt::PacketLength { dst } => {
                only_in(parser, "packet_in.length", ctx)?;
                expect_same(Ty::Bits(32), place_type(dst, env)?).map(|_| ())
            }
            Stmt::Verify { cond, error } => {
                only_in(parser, "verify", ctx)?;
                self.cond(cond, env)?;
                self.error_code(*error)
            }
            Stmt::Emit(h) => {
                only_in(ctx == Ctx::Control { deparser: true }, "emit", ctx)?;
                self.header_ref(h, ctx, env)
            }
            Stmt::CallAction { action, args } => self.call_action(*action, args, env),
            Stmt::ExternCall {
                instance,
                method,
                args,
                result,
            } => self.extern_call(*instance, method, args, result.as_ref(), env),
            Stmt::Builtin(b) => self.builtin(b, env),
        }
    }

    fn error_code(&self, code: u32) -> Check {
        if (code as usize) < self.p.errors.len() {
            Ok(())
        } else {
            Err(ErrorKind::UnknownError { code })
        }
    }

    /// Both sides of a header copy have the same field types (stack refs use element 0).
    fn same_header_type(&self, a: &HeaderRef, b: &HeaderRef) -> Check {
        let phv = &self.p.phv;
        let field_tys = |h: &HeaderRef| -> Vec<Ty> {
            let id = match h {
                HeaderRef::Header(h) => Some(*h),
                HeaderRef::Next(s) | HeaderRef::Last(s) | HeaderRef::Index(s, _) => {
                    phv.stacks.get(*s).and_then(|s| s.elems.first().copied())
                }
            };
            let fields = id
                .and_then(|h| phv.headers.get(h))
                .map_or(&[][..], |h| &h.fields);
            fields
                .iter()
                .filter_map(|&f| phv.slots.get(f))
                .map(|s| s.ty)
                .collect()
        };
        let (ta, tb) = (field_tys(a), field_tys(b));
        if ta.len() != tb.len() {
            return count(ta.len(), tb.len());
        }
        ta.into_iter()
            .zip(tb)
            .try_for_each(|(x, y)| expect_same(x, y).map(|_| ()))
    }

    /// The size argument of `extract` is present exactly when the header has a varbit field.
    fn extract_varbit(&self, h: &HeaderRef, bits: Option<&Expr>, env: &TypeEnv) -> Check {
        let phv = &self.p.phv;
        let id = match h {
            HeaderRef::Header(h) => Some(*h),
            HeaderRef::Next(s) | HeaderRef::Last(s) | HeaderRef::Index(s, _) => {
                phv.stacks.get(*s).and_then(|s| s.elems.first().copied())
            }
        };
        let has_varbit = id.and_then(|h| phv.headers.get(h)).is_some_and(|h| {
            h.fields.iter().any(|&f| {
                phv.slots
                    .get(f)
                    .is_some_and(|s| matches!(s.ty, Ty::Varbit(_)))
            })
        });
        match bits {
            Some(b) => {
                count(has_varbit as usize, 1)?;
                self.bits(b, env).map(|_| ())
            }
            None => count(has_varbit as usize, 0),
        }
    }

    fn call_action(&self, action: ActionId, args: &[Expr], env: &TypeEnv) -> Check {
        let a = self
            .p
            .actions
            .get(action)
            .ok_or(oor("action", action.index()))?;
        count(a.params.len(), args.len())?;
        for (p, e) in a.params.iter().zip(args) {
            self.expr_is(e, p.ty, env)?;
        }
        Ok(())
    }

    fn extern_call(
        &self,
        instance: crate::ids::ExternId,
        method: &str,
        args: &[Arg],
        result: Option<&Place>,
        env: &TypeEnv,
    ) -> Check {
        let ext = self
            .p
            .externs
            .get(instance)
            .ok_or(oor("extern", instance.index()))?;
        let methods: &[&str] = match ext.kind {
            // (eBPF's `CounterArray`: `increment`, `add`.)
            ExternKind::Counter { .. } => &["count", "increment", "add"],
            ExternKind::DirectCounter { .. } => &["count"],
            // v1model's names, then PSA's (`execute`, and DPDK's `dpdk_execute` in psa.p4).
            ExternKind::Meter { .. } => &["execute_meter", "execute", "dpdk_execute"],
            ExternKind::DirectMeter { .. } => &["read", "execute", "dpdk_execute"],
            ExternKind::Register { .. } => &["read", "write"],
            ExternKind::Checksum16 => &["get"],
            ExternKind::Hash { .. } => &["get_hash", "get_hash_mod"],
            ExternKind::Checksum { .. } => &["clear", "update", "get"],
            ExternKind::InternetChecksum => {
                &["clear", "add", "subtract", "get", "get_state", "set_state"]
            }
            ExternKind::Random { .. } => &["read"],
            ExternKind::ActionProfile { .. } | ExternKind::ActionSelector { .. } => &[],
            ExternKind::Other => &[method],
        };
        if !methods.contains(&method) {
            return Err(ErrorKind::UnknownMethod {
                method: method.to_string(),
            });
        }
        for a in args {
            match a {
                Arg::In(e) => type_of(e, env).map(|_| ())?,
                Arg::Out(p) | Arg::InOut(p) => place_type(p, env).map(|_| ())?,
            }
        }
        result.map_or(Ok(()), |r| place_type(r, env).map(|_| ()))
    }

    fn builtin(&self, b: &Builtin, env: &TypeEnv) -> Check {
        use Builtin::*;
        let all = |es: &[Expr]| es.iter().try_for_each(|e| type_of(e, env).map(|_| ()));
        let field_list = |fl: &Option<crate::ids::FieldListId>| match fl {
            Some(fl) if !self.p.field_lists.contains(*fl) => Err(oor("field list", fl.index())),
            _ => Ok(()),
        };
        match b {
            MarkToDrop | MarkToPass => Ok(()),
            Hash {
                dst,
                base,
                data,
                max,
                ..
            } => {
                expect_bits(place_type(dst, env)?)?;
                self.bits(base, env)?;
                max.as_ref().map_or(Ok(0), |m| self.bits(m, env))?;
                all(data)
            }
            VerifyChecksum {
                cond,
                data,
                checksum,
                ..
            } => {
                self.cond(cond, env)?;
                self.bits(checksum, env)?;
                all(data)
            }
            UpdateChecksum {
                cond,
                data,
                checksum,
                ..
            } => {
                self.cond(cond, env)?;
                expect_bits(place_type(checksum, env)?)?;
                all(data)
            }
            Clone {
                session,
                field_list: fl,
                ..
            } => {
                self.bits(session, env)?;
                field_list(fl)
            }
            Resubmit { field_list: fl } | Recirculate { field_list: fl } => field_list(fl),
            Truncate { bytes } => self.bits(bytes, env).map(|_| ()),
            Digest {
                digest,
                receiver,
                data,
            } => {
                let d = self
                    .p
                    .digests
                    .get(*digest)
                    .ok_or(oor("digest", digest.index()))?;
                self.bits(receiver, env)?;
                count(d.fields.len(), data.len())?;
                d.fields
                    .iter()
                    .zip(data)
                    .try_for_each(|((_, w), e)| self.expr_is(e, Ty::Bits(*w), env))
            }
            Random { dst, lo, hi } => {
                let t = expect_bits(place_type(dst, env)?)?;
                self.expr_is(lo, Ty::Bits(t), env)?;
                self.expr_is(hi, Ty::Bits(t), env)
            }
            LogMsg { args, .. } => all(args),
            Assert { cond } | Assume { cond } => self.cond(cond, env),
            TimestampNs { dst } => expect_bits(place_type(dst, env)?).map(|_| ()),
            CsumReplace {
                dst,
                csum,
                old,
                new,
            } => {
                expect_same(Ty::Bits(16), place_type(dst, env)?)?;
                self.expr_is(csum, Ty::Bits(16), env)?;
                let w = self.bits(old, env)?;
                if w != 16 && w != 32 {
                    return Err(ErrorKind::WidthMismatch {
                        expected: 16,
                        found: w,
                    });
                }
                self.expr_is(new, Ty::Bits(w), env)
            }
            Native { func, args, ret } => {
                let Some(f) = self.p.natives.fns.get(*func as usize) else {
                    return Err(oor("native function", *func));
                };
                if f.params.len() != args.len() {
                    return Err(oor("native argument", args.len() as u32));
                }
                for (p, a) in f.params.iter().zip(args) {
                    let n = p.ty.leaves().len();
                    let reads = if p.dir.reads() { n } else { 0 };
                    let writes = if p.dir.writes() { n } else { 0 };
                    if a.reads.len() != reads || a.writes.len() != writes {
                        return Err(oor("native argument leaf", a.reads.len() as u32));
                    }
                    all(&a.reads)?;
                    let valid = a.writes.iter().filter(|w| is_validity(w, env)).count();
                    if valid != a.headers.len() {
                        return Err(oor("native header", a.headers.len() as u32));
                    }
                    for w in a.writes.iter().filter(|w| !is_validity(w, env)) {
                        place_type(w, env)?;
                    }
                }
                ret.as_ref()
                    .map_or(Ok(()), |r| place_type(r, env).map(|_| ()))
            }
        }
    }

    /// Checks a body's blocks: statements, terminators, jump targets.
    pub(super) fn check_body(&mut self, loc: &str, body: &Body, ctx: Ctx, env: &TypeEnv) {
        if !body.blocks.contains(body.entry) {
            self.err(loc, oor("block", body.entry.index()));
        }
        for (id, block) in body.blocks.iter() {
            for (i, s) in block.stmts.iter().enumerate() {
                if let Err(k) = self.check_stmt(s, ctx, env) {
                    self.err(format!("{loc} {id} stmt {i}"), k);
                }
            }
            let r = match &block.term {
                None => Err(ErrorKind::Unterminated),
                Some(t) => self.check_term(t, body, ctx, env),
            };
            if let Err(k) = r {
                self.err(format!("{loc} {id} terminator"), k);
            }
        }
    }

    fn check_term(&self, t: &Terminator, body: &Body, ctx: Ctx, env: &TypeEnv) -> Check {
        if let Some(b) = t
            .successors()
            .into_iter()
            .find(|b| !body.blocks.contains(*b))
        {
            return Err(oor("block", b.index()));
        }
        match t {
            Terminator::Branch { cond, .. } => self.cond(cond, env),
            Terminator::Switch { value, cases, .. } => {
                let w = self.bits(value, env)?;
                cases.iter().try_for_each(|(v, _)| {
                    expect_same(Ty::Bits(w), Ty::Bits(v.width())).map(|_| ())
                })
            }
            Terminator::Apply { table, next } => {
                only_in(ctx != Ctx::Action, "table application", ctx)?;
                let t = self
                    .p
                    .tables
                    .get(*table)
                    .ok_or(oor("table", table.index()))?;
                if let ApplyNext::Actions { cases, .. } = next
                    && let Some((a, _)) = cases.iter().find(|(a, _)| t.action_ref(*a).is_none())
                {
                    let action = self
                        .p
                        .actions
                        .get(*a)
                        .map_or(a.to_string(), |a| a.preamble.name.clone());
                    return Err(ErrorKind::ActionNotAllowed { action });
                }
                Ok(())
            }
            Terminator::Goto(_) | Terminator::Return | Terminator::Exit => Ok(()),
        }
    }

    pub(super) fn check_controls(&mut self) {
        let deparsers: Vec<_> = self
            .p
            .package
            .iter()
            .filter(|(r, _)| r.is_deparser())
            .filter_map(|(_, b)| match b {
                BlockRef::Control(c) => Some(*c),
                BlockRef::Parser(_) => None,
            })
            .collect();
        let env = self.env(None);
        for (id, c) in self.p.controls.iter() {
            let ctx = Ctx::Control {
                deparser: deparsers.contains(&id),
            };
            let loc = format!("control {}", c.preamble.name);
            self.check_body(&loc, &c.body, ctx, &env);
        }
    }

    pub(super) fn check_actions(&mut self) {
        for (id, a) in self.p.actions.iter() {
            let env = self.env(Some(&a.params));
            let loc = format!("action {}", a.preamble.name);
            self.check_body(&loc, &a.body, Ctx::Action, &env);
            for p in &a.params {
                if let found @ Ty::Varbit(_) = p.ty {
                    self.err(
                        format!("{loc} parameter {}", p.name),
                        ErrorKind::ExpectedBits { found },
                    );
                }
            }
            if self.calls_reach(id, id) {
                self.err(loc, ErrorKind::RecursiveAction);
            }
        }
    }

    /// Whether `target` is reachable by action calls from the body of `from` (depth-first,
    /// visiting each action once).
    fn calls_reach(&self, from: ActionId, target: ActionId) -> bool {
        let mut seen = vec![false; self.p.actions.len()];
        let mut todo = vec![from];
        while let Some(a) = todo.pop() {
            let Some(action) = self.p.actions.get(a) else {
                continue;
            };
            for s in action.body.blocks.values().flat_map(|b| &b.stmts) {
                if let Stmt::CallAction { action: callee, .. } = s {
                    if *callee == target {
                        return true;
                    }
                    if let Some(flag) = seen.get_mut(callee.index() as usize)
                        && !*flag
                    {
                        *flag = true;
                        todo.push(*callee);
                    }
                }
            }
        }
        false
    }

    pub(super) fn check_parsers(&mut self) {
        for id in self.p.parsers.keys() {
            self.check_parser(id);
        }
    }

    fn check_parser(&mut self, id: ParserId) {
        let p = &self.p.parsers[id];
        let env = self.env(None);
        let loc = format!("parser {}", p.preamble.name);
        if !p.states.contains(p.start) {
            self.err(&loc, oor("state", p.start.index()));
        }
        for st in p.states.values() {
            let sloc = format!("{loc} state {}", st.name);
            for (i, s) in st.stmts.iter().enumerate() {
                if let Err(k) = self.check_stmt(s, Ctx::Parser, &env) {
                    self.err(format!("{sloc} stmt {i}"), k);
                }
            }
            let r = match &st.transition {
                None => Err(ErrorKind::NoTransition),
                Some(t) => self.check_transition(id, t, &env),
            };
            if let Err(k) = r {
                self.err(format!("{sloc} transition"), k);
            }
        }
    }

    fn check_transition(&self, parser: ParserId, t: &Transition, env: &TypeEnv) -> Check {
        let p = &self.p.parsers[parser];
        let target = |t: &Target| match t {
            Target::State(s) if !p.states.contains(*s) => Err(oor("state", s.index())),
            _ => Ok(()),
        };
        match t {
            Transition::Goto(t) => target(t),
            Transition::Select { keys, cases } => {
                let mut widths = Vec::new();
                for k in keys {
                    widths.push(match type_of(k, env)? {
                        Ty::Bool => 1,
                        other => expect_bits(other)?,
                    });
                }
                cases.iter().try_for_each(|c| {
                    target(&c.next)?;
                    self.check_keysets(&c.keysets, &widths)
                })
            }
        }
    }

    /// Each keyset matches the widths of the keys it covers; together they cover all keys.
    fn check_keysets(&self, keysets: &[Keyset], widths: &[u32]) -> Check {
        let mut at = 0;
        for k in keysets {
            let covered: Vec<u32> = match k {
                Keyset::Pattern(p) => {
                    let w = widths.get(at).copied().unwrap_or(0);
                    if let Some(&bad) = p.widths().iter().find(|&&pw| pw != w) {
                        return Err(ErrorKind::WidthMismatch {
                            expected: w,
                            found: bad,
                        });
                    }
                    vec![w]
                }
                Keyset::ValueSet(v) => {
                    let vs = self
                        .p
                        .value_sets
                        .get(*v)
                        .ok_or(oor("value set", v.index()))?;
                    vs.fields.iter().map(|f| f.width).collect()
                }
            };
            if at + covered.len() > widths.len() {
                return count(widths.len(), at + covered.len());
            }
            for (&w, &key) in covered.iter().zip(&widths[at..]) {
                if key != w {
                    return Err(ErrorKind::WidthMismatch {
                        expected: key,
                        found: w,
                    });
                }
            }
            at += covered.len();
        }
        count(widths.len(), at)
    }
}
