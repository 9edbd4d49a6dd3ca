//! The two fixed points of the analysis: which nodes hold **state-derived** values (and so
//! which decisions are state-dependent), and the **dependency closure** of the decisions with
//! the bits of each slot that matter.
//!
//! Both are flow-insensitive: a node's value may come from any of its writes, wherever they
//! are in the pipeline and whatever ran before. That over-approximates every run, which is
//! what soundness needs: a slot left out of the key must be unable to influence any decision
//! on any path, and a decision reported cacheable must be unable to depend on state on any
//! path.

use super::facts::{BodyKey, Facts, Graph, Loc, Node, Origin, Src};
use super::reads::{expr_demand, expr_nodes};
use super::region::{PostDom, controlled, reachable};
use koi_ir::entity::EntityId;
use koi_ir::{Bits, SlotId};
use std::collections::{HashMap, HashSet};

/// The result of both fixed points.
pub(crate) struct Closure {
    /// Per node: holds a state-derived value on some path.
    pub tainted: Vec<bool>,
    /// Per decision: depends on state.
    pub state_dependent: Vec<bool>,
    /// Per slot: the bits some decision depends on (`None`: no decision depends on it).
    pub demand: Vec<Option<Bits>>,
    /// Per node: the write indices of the node.
    pub writes_to: Vec<Vec<usize>>,
    /// Per write: the nodes its value is computed from.
    pub src_nodes: Vec<Vec<Node>>,
    /// Per decision: the nodes it reads.
    pub decision_reads: Vec<Vec<Node>>,
}

fn src_nodes(f: &Facts<'_>, srcs: &[Src<'_>]) -> Vec<Node> {
    let mut out = Vec::new();
    for s in srcs {
        match s {
            Src::Value(e, c) | Src::Full(e, c) => {
                expr_nodes(f.p, e, *c, &f.param_base, &mut |n| out.push(n))
            }
            Src::Node(n) => out.push(*n),
        }
    }
    // Ids outside the pipeline's arenas (an unverified IR) are dropped, never indexed.
    out.retain(|&n| n < f.nnodes);
    out.sort_unstable();
    out.dedup();
    out
}

pub(crate) fn run(f: &Facts<'_>) -> Closure {
    let mut writes_to = vec![Vec::new(); f.nnodes];
    for (i, w) in f.writes.iter().enumerate() {
        if let Some(v) = writes_to.get_mut(w.dst) {
            v.push(i);
        }
    }
    let src: Vec<Vec<Node>> = f.writes.iter().map(|w| src_nodes(f, &w.srcs)).collect();
    let dreads: Vec<Vec<Node>> = f.decisions.iter().map(|d| src_nodes(f, &d.reads)).collect();
    let (tainted, state_dependent) = taint(f, &src, &dreads);
    let demand = demand(f, &writes_to);
    Closure {
        tainted,
        state_dependent,
        demand,
        writes_to,
        src_nodes: src,
        decision_reads: dreads,
    }
}

/// The state fixed point: data flow from state-derived writes, plus control dependence on
/// state-dependent decisions (a write that runs or not depending on state is state-derived;
/// an action chosen by a state-dependent table or reached under a state-dependent branch
/// writes state-derived values; an action that may `exit` under state makes everything after
/// its call sites state-dependent).
fn taint(f: &Facts<'_>, src: &[Vec<Node>], dreads: &[Vec<Node>]) -> (Vec<bool>, Vec<bool>) {
    let mut tainted = vec![false; f.nnodes];
    for (s, &st) in f.state_input.iter().enumerate() {
        tainted[s] = st;
    }
    let graphs: HashMap<BodyKey, (&Graph, PostDom)> = f
        .graphs
        .iter()
        .map(|(k, g)| (*k, (g, PostDom::new(g))))
        .collect();
    let mut locs: HashSet<Loc> = HashSet::new();
    let mut actions = vec![false; f.p.actions.len()];
    let mut dstate = vec![false; f.decisions.len()];
    let loc_tainted = |locs: &HashSet<Loc>, actions: &[bool], l: &Loc| {
        locs.contains(l)
            || matches!(l.body, BodyKey::Action(a) if actions.get(a as usize) == Some(&true))
    };
    loop {
        let mut changed = false;
        loop {
            let mut inner = false;
            for (w, s) in f.writes.iter().zip(src) {
                if tainted.get(w.dst) != Some(&false) {
                    continue;
                }
                let by_loc = w.loc.is_some_and(|l| loc_tainted(&locs, &actions, &l));
                if (w.origin == Origin::State || by_loc || s.iter().any(|&n| tainted[n]))
                    && let Some(t) = tainted.get_mut(w.dst)
                {
                    *t = true;
                    inner = true;
                }
            }
            if !inner {
                break;
            }
        }
        for (i, d) in f.decisions.iter().enumerate() {
            if !dstate[i] && (d.random || dreads[i].iter().any(|&n| tainted[n])) {
                dstate[i] = true;
                changed = true;
            }
            if !dstate[i] {
                continue;
            }
            if let Some(l) = d.controls
                && let Some((g, pd)) = graphs.get(&l.body)
            {
                for node in controlled(g, pd, l.node) {
                    changed |= locs.insert(Loc { body: l.body, node });
                }
            }
            let table = d.table.and_then(|t| f.p.tables.get(t));
            for a in table.map_or(&[][..], |t| &t.actions[..]) {
                if let Some(x) = actions.get_mut(a.action.index() as usize) {
                    changed |= !std::mem::replace(x, true);
                }
            }
        }
        for (l, a) in &f.calls {
            if loc_tainted(&locs, &actions, l)
                && let Some(x) = actions.get_mut(a.index() as usize)
            {
                changed |= !std::mem::replace(x, true);
            }
        }
        // Actions that may exit under state cut their callers short under state.
        for (l, a) in &f.calls {
            let Some((ag, _)) = graphs.get(&BodyKey::Action(a.index())) else {
                continue;
            };
            let exits_by_state = ag.exits.iter().any(|&b| {
                let loc = Loc {
                    body: BodyKey::Action(a.index()),
                    node: b,
                };
                loc_tainted(&locs, &actions, &loc)
            });
            if exits_by_state && let Some((g, _)) = graphs.get(&l.body) {
                for node in reachable(g, l.node) {
                    changed |= locs.insert(Loc { body: l.body, node });
                }
            }
        }
        if !changed {
            return (tainted, dstate);
        }
    }
}

/// The dependency closure: starting from the decisions' reads, through every write of every
/// node read, the bits of each slot that some decision may depend on.
fn demand(f: &Facts<'_>, writes_to: &[Vec<usize>]) -> Vec<Option<Bits>> {
    let mut d = Demand {
        f,
        demand: vec![None; f.nslots],
        params: vec![false; f.nnodes.saturating_sub(f.nslots)],
        work: Vec::new(),
    };
    for dec in &f.decisions {
        for s in &dec.reads {
            d.feed(s, None);
        }
    }
    while let Some(n) = d.work.pop() {
        let dem = if n < f.nslots {
            d.demand[n].clone()
        } else {
            None
        };
        for &wi in writes_to.get(n).map_or(&[][..], |v| &v[..]) {
            let w = &f.writes[wi];
            let sub = match (&dem, w.range) {
                (Some(x), None) => Some(x.clone()),
                (Some(x), Some((hi, lo))) => {
                    let s = x.slice(hi, lo);
                    if s.is_zero() {
                        continue;
                    }
                    Some(s)
                }
                (None, _) => None,
            };
            for s in &w.srcs {
                d.feed(s, sub.as_ref());
            }
        }
    }
    d.demand
}

/// The state of the closure's worklist.
struct Demand<'f, 'a> {
    f: &'f Facts<'a>,
    demand: Vec<Option<Bits>>,
    params: Vec<bool>,
    work: Vec<Node>,
}

impl Demand<'_, '_> {
    /// Demands bits `d` of source `s`'s value.
    fn feed(&mut self, s: &Src<'_>, d: Option<&Bits>) {
        let f = self.f;
        let mut found: Vec<(Node, Option<Bits>)> = Vec::new();
        match s {
            Src::Value(e, c) => {
                expr_demand(f.p, e, *c, &f.param_base, d, &mut |n, m| found.push((n, m)))
            }
            Src::Full(e, c) => expr_demand(f.p, e, *c, &f.param_base, None, &mut |n, m| {
                found.push((n, m))
            }),
            Src::Node(n) => found.push((*n, None)),
        }
        for (n, m) in found {
            self.add(n, m);
        }
    }

    /// Demands bits `m` (all if `None`) of node `n`.
    fn add(&mut self, n: Node, m: Option<Bits>) {
        let f = self.f;
        if n >= f.nslots {
            if let Some(x) = self.params.get_mut(n - f.nslots)
                && !std::mem::replace(x, true)
            {
                self.work.push(n);
            }
            return;
        }
        let w =
            f.p.phv
                .slots
                .get(SlotId::new(n as u32))
                .map_or(0, |s| s.width);
        let m = m.map_or_else(|| Bits::ones(w), |m| m.resize(w));
        let new = match &self.demand[n] {
            Some(old) => old.or(&m),
            None => m,
        };
        if self.demand[n].as_ref() != Some(&new) {
            self.demand[n] = Some(new);
            self.work.push(n);
        }
    }
}
