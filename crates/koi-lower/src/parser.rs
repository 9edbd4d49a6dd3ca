//! Parsers: states with their statements and transitions, `select` with every keyset kind and
//! value sets, and sub-parsers inlined by splicing their state graph (states named
//! `instance.state`, `accept` continuing after the call, `reject` rejecting).

use crate::ctx::{Bind, BlockInst, Lowerer, R, internal, unsupported};
use crate::names;
use crate::sink::{ParserBuilder, Pos, Sink};
use koi_ir::{
    Keyset, MatchField, MatchKind, Parser, Pattern, Role, SelectCase, StateId, Target, Transition,
    Ty as IrTy, ValueSet, ValueSetId,
};
use koi_sema::types::Ty;
use koi_sema::{DeclId, Resolution};
use koi_syntax::Span;
use koi_syntax::ast::{self, ExprKind, TransitionKind};
use std::collections::HashMap;

/// Where the transitions of the parser being lowered go.
#[derive(Clone, Debug, Default)]
pub struct Targets {
    pub states: HashMap<String, StateId>,
    pub accept: Option<StateId>,
}

impl Lowerer<'_> {
    /// Lowers a top-level parser instance bound to `role`.
    pub fn lower_parser(&mut self, inst: &BlockInst, binds: Vec<Bind>, role: Role) -> R<()> {
        let Some(d) = self.idx.decls.get(&inst.decl).copied() else {
            return internal(Span::DUMMY, "parser declaration not found");
        };
        let ast::DeclKind::Parser { locals, states, .. } = &d.kind else {
            return unsupported(d.span, "this block as a parser");
        };
        let parser = Parser::new(&inst.path);
        let start = parser.start;
        self.sink = Sink::Parser(ParserBuilder {
            parser,
            current: start,
        });
        self.flow = Default::default();
        let saved = self.enter_block(inst);
        let r = self
            .bind_params(inst.decl, binds)
            .and_then(|_| self.block_locals(locals))
            .and_then(|_| self.parser_states(states, "", None, d.span));
        self.leave_block(saved);
        r?;
        let Sink::Parser(pb) = std::mem::take(&mut self.sink) else {
            return internal(d.span, "lost the parser");
        };
        let mut parser = pb.parser;
        for (_, s) in parser.states.iter_mut() {
            if s.transition.is_none() {
                s.transition = Some(Transition::Goto(Target::Reject));
            }
        }
        self.p.add_parser(parser, Some(role));
        Ok(())
    }

    /// Lowers the states of a parser at the cursor: the cursor jumps to its `start`.
    /// `prefix` names the states of an inlined parser; `accept` is where its `accept` goes.
    fn parser_states(
        &mut self,
        states: &[ast::ParserState],
        prefix: &str,
        accept: Option<StateId>,
        span: Span,
    ) -> R<()> {
        let mut targets = Targets {
            states: HashMap::new(),
            accept,
        };
        let entry = self.cursor_state(span)?;
        let reuse_entry = prefix.is_empty() && self.state_is_empty(entry);
        for s in states {
            let id = if reuse_entry && s.name.name == "start" {
                entry
            } else {
                self.add_state(&format!("{prefix}{}", s.name.name))?
            };
            targets.states.insert(s.name.name.clone(), id);
        }
        if prefix.is_empty()
            && !reuse_entry
            && let Sink::Parser(pb) = &mut self.sink
            && let Some(st) = pb.parser.states.get_mut(entry)
        {
            st.name = "$init".to_string();
        }
        let Some(&start) = targets.states.get("start") else {
            return internal(span, "parser without start state");
        };
        if start != entry {
            self.jump(Pos::State(start));
        }
        for s in states {
            let id = targets.states[&s.name.name];
            self.switch_to(Pos::State(id));
            self.push_frame();
            let r = self.state(s, &targets);
            self.pop_frame();
            r?;
        }
        Ok(())
    }

    fn cursor_state(&self, span: Span) -> R<StateId> {
        match &self.sink {
            Sink::Parser(pb) => Ok(pb.current),
            _ => internal(span, "not in a parser"),
        }
    }

    /// Whether a state has no statements and no transition yet.
    fn state_is_empty(&self, id: StateId) -> bool {
        match &self.sink {
            Sink::Parser(pb) => pb
                .parser
                .states
                .get(id)
                .is_some_and(|s| s.stmts.is_empty() && s.transition.is_none()),
            _ => false,
        }
    }

    fn add_state(&mut self, name: &str) -> R<StateId> {
        let name = self.unique_name(&format!("$state:{name}"));
        let name = name.trim_start_matches("$state:").to_string();
        match &mut self.sink {
            Sink::Parser(pb) => Ok(pb.parser.add_state(&name)),
            _ => internal(Span::DUMMY, "not in a parser"),
        }
    }

    fn set_transition(&mut self, t: Transition) {
        if let Sink::Parser(pb) = &mut self.sink
            && pb
                .parser
                .states
                .get(pb.current)
                .is_some_and(|s| s.transition.is_none())
        {
            pb.parser.set_transition(pb.current, t);
        }
    }

    fn state(&mut self, s: &ast::ParserState, targets: &Targets) -> R<()> {
        for st in &s.body {
            self.stmt(st)?;
        }
        let Some(t) = &s.transition else {
            self.set_transition(Transition::Goto(Target::Reject));
            return Ok(());
        };
        let tr = match &t.kind {
            TransitionKind::Direct(p) => Transition::Goto(self.target(&p.name, targets)?),
            TransitionKind::Select { exprs, cases } => self.select(exprs, cases, targets)?,
        };
        self.set_transition(tr);
        Ok(())
    }

    fn target(&self, name: &ast::Ident, targets: &Targets) -> R<Target> {
        match name.name.as_str() {
            "accept" => Ok(targets.accept.map_or(Target::Accept, Target::State)),
            "reject" => Ok(Target::Reject),
            n => match targets.states.get(n) {
                Some(s) => Ok(Target::State(*s)),
                None => internal(name.span, format!("unknown state {n}")),
            },
        }
    }

    fn select(
        &mut self,
        exprs: &[ast::Expr],
        cases: &[ast::SelectCase],
        targets: &Targets,
    ) -> R<Transition> {
        let mut keys = Vec::new();
        let mut widths = Vec::new();
        for e in exprs {
            let (x, t) = match self.union_stack_scalar(e)? {
                Some(v) => v,
                None => self.rvalue_s(e)?,
            };
            let w = match t.ty {
                IrTy::Bits(w) => w,
                IrTy::Bool => 1,
                IrTy::Varbit(_) => return unsupported(e.span, "a varbit select key"),
            };
            keys.push(x);
            widths.push(w);
        }
        let mut out = Vec::new();
        for c in cases {
            let keysets = self.keysets(&c.keyset, &widths)?;
            out.push(SelectCase {
                keysets,
                next: self.target(&c.next.name, targets)?,
            });
        }
        Ok(Transition::Select { keys, cases: out })
    }

    fn keysets(&mut self, ks: &ast::Expr, widths: &[u32]) -> R<Vec<Keyset>> {
        if matches!(ks.kind, ExprKind::Default | ExprKind::DontCare) {
            return Ok(vec![Keyset::Pattern(Pattern::Any); widths.len()]);
        }
        let items: Vec<&ast::Expr> = match &ks.kind {
            ExprKind::List { items, .. } if widths.len() != 1 || items.len() != 1 => {
                items.iter().collect()
            }
            ExprKind::List { items, .. } => items.iter().collect(),
            _ => vec![ks],
        };
        let mut out = Vec::new();
        let mut at = 0;
        for item in items {
            if let Some(vs) = self.value_set_ref(item) {
                at += self.p.value_sets[vs].fields.len();
                out.push(Keyset::ValueSet(vs));
                continue;
            }
            let w = widths.get(at).copied().unwrap_or(0);
            let kind = MatchKind::Ternary;
            let p = self.pattern(item, &kind, w)?;
            out.push(Keyset::Pattern(p));
            at += 1;
        }
        Ok(out)
    }

    fn value_set_ref(&self, e: &ast::Expr) -> Option<ValueSetId> {
        let Some(Resolution::Decl(d)) = self.ck.resolutions.get(&e.id) else {
            return None;
        };
        match self.lookup(*d) {
            Some(Bind::ValueSet(v)) => Some(*v),
            _ => None,
        }
    }

    /// The value set declared by `d` in the current parser instance.
    pub fn value_set(&mut self, id: DeclId, d: &ast::Decl, size: &ast::Expr) -> R<ValueSetId> {
        let key = (self.path.clone(), id);
        if let Some(v) = self.value_sets.get(&key) {
            return Ok(*v);
        }
        let ast::DeclKind::ValueSet { name, .. } = &d.kind else {
            return internal(d.span, "not a value set");
        };
        let ty = self.decl(id)?.ty;
        let ty = self.subst_ty(ty);
        let elem = match self.types.get(ty) {
            Ty::ValueSet(e) => *e,
            _ => ty,
        };
        let mut fields = Vec::new();
        if let Some(s) = self.scalar(elem) {
            fields.push(MatchField::new("", s.width(), MatchKind::Exact));
        } else if let Some(a) = self.types.agg(elem).cloned() {
            for f in &a.fields {
                let s = self.scalar_or(f.ty, d.span)?;
                fields.push(MatchField::new(&f.name, s.width(), MatchKind::Exact));
            }
        } else {
            return unsupported(d.span, "a value set of this type");
        }
        let cp = names::cp_name(&self.path, &d.annotations, &name.name);
        let vs = ValueSet {
            preamble: names::preamble(cp, &d.annotations),
            size: self.const_u64(size)? as u32,
            fields,
        };
        let v = self.p.value_sets.push(vs);
        self.value_sets.insert(key, v);
        Ok(v)
    }

    /// `p.apply(...)` of a sub-parser, inside a parser: its states spliced in.
    pub fn inline_parser(
        &mut self,
        inst: &BlockInst,
        binds: Vec<Bind>,
        d: &ast::Decl,
        span: Span,
    ) -> R<()> {
        let ast::DeclKind::Parser { locals, states, .. } = &d.kind else {
            return internal(span, "not a parser");
        };
        if !self.in_parser() {
            return unsupported(span, "applying a parser outside a parser");
        }
        let saved = self.enter_block(inst);
        let r = self.inline_parser_inner(inst, binds, locals, states, span);
        self.leave_block(saved);
        r
    }

    fn inline_parser_inner(
        &mut self,
        inst: &BlockInst,
        binds: Vec<Bind>,
        locals: &[ast::Decl],
        states: &[ast::ParserState],
        span: Span,
    ) -> R<()> {
        self.bind_params(inst.decl, binds)?;
        self.block_locals(locals)?;
        let cont = self.add_state(&format!("{}.$accept", inst.path))?;
        let prefix = format!("{}.", inst.path);
        self.parser_states(states, &prefix, Some(cont), span)?;
        self.switch_to(Pos::State(cont));
        Ok(())
    }
}
