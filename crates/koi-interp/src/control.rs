//! Control and action bodies (CFGs of blocks), and table application: keys, lookup in the
//! state, action profiles and selectors, direct counters and meters, the action run, and the
//! successor chosen by hit, miss or action.

use crate::exec::{Ctx, Pkt, Stop};
use crate::observer::{Decision, Observer, Replay, Step, TableEvent};
use koi_hash::BitString;
use koi_ir::entity::EntityId;
use koi_ir::{
    ActionCall, ActionId, ApplyNext, Bits, BlockId, Body, ControlId, Role, TableId, Terminator,
};
use koi_state::{EntryAction, Lookup};

/// What a table application did.
struct Applied {
    hit: bool,
    action: Option<ActionId>,
}

impl<O: Observer> Ctx<'_, O> {
    /// Runs control `c` (an architecture block); `exit` ends it normally.
    pub fn run_control(&mut self, pkt: &mut Pkt, c: ControlId, role: Role) -> Result<(), Stop> {
        let Some(ctl) = self.p.controls.get(c) else {
            return Ok(());
        };
        self.role = role;
        self.obs.block(role, &ctl.preamble.name);
        match self.run_body(pkt, &ctl.body, &[]) {
            Err(Stop::Exit) | Ok(()) => Ok(()),
            Err(Stop::Reject(_)) => Ok(()),
            Err(e) => Err(e),
        }
    }

    /// Runs a body from its entry block until `return` (Ok) or `exit` (Err(Exit)).
    pub fn run_body(&mut self, pkt: &mut Pkt, body: &Body, params: &[Bits]) -> Result<(), Stop> {
        let mut b = body.entry;
        for _ in 0..self.opts.max_steps {
            let Some(block) = body.blocks.get(b) else {
                return Err(Stop::Abort(format!("jump to missing block {b}")));
            };
            for s in &block.stmts {
                self.stmt(pkt, s, params)?;
            }
            let Some(term) = &block.term else {
                return Err(Stop::Abort(format!("block {b} has no terminator")));
            };
            match self.terminator(pkt, b, term, params)? {
                Some(next) => b = next,
                None => return Ok(()),
            }
        }
        Err(Stop::Abort("step limit reached".into()))
    }

    /// The next block, `None` at `return`.
    fn terminator(
        &mut self,
        pkt: &mut Pkt,
        at: BlockId,
        t: &Terminator,
        params: &[Bits],
    ) -> Result<Option<BlockId>, Stop> {
        if O::REPLAYS
            && matches!(t, Terminator::Branch { .. } | Terminator::Switch { .. })
            && let Some(to) = self.replayed_jump(at, t)
        {
            return Ok(Some(to));
        }
        let next = self.evaluate_terminator(pkt, t, params)?;
        if O::REPLAYS
            && matches!(t, Terminator::Branch { .. } | Terminator::Switch { .. })
            && let Some(to) = next
        {
            if O::TRACES_EFFECTS {
                self.obs.jumped(t, to, params);
            }
            self.obs.decided(&Step::Jump { from: at, to });
        }
        Ok(next)
    }

    /// The recorded successor of a `Branch` or `Switch` at block `at`, if the observer offers
    /// one that is among the terminator's targets.
    fn replayed_jump(&mut self, at: BlockId, t: &Terminator) -> Option<BlockId> {
        let Replay::Use(step) = self.obs.replay() else {
            return None;
        };
        let fits = match (&step, t) {
            (
                Step::Jump { from, to },
                Terminator::Branch {
                    then, otherwise, ..
                },
            ) => *from == at && (to == then || to == otherwise),
            (Step::Jump { from, to }, Terminator::Switch { cases, default, .. }) => {
                *from == at && (to == default || cases.iter().any(|(_, b)| b == to))
            }
            _ => false,
        };
        match (fits, step) {
            (true, Step::Jump { to, .. }) => Some(to),
            _ => {
                self.obs.replay_diverged();
                None
            }
        }
    }

    fn evaluate_terminator(
        &mut self,
        pkt: &mut Pkt,
        t: &Terminator,
        params: &[Bits],
    ) -> Result<Option<BlockId>, Stop> {
        Ok(Some(match t {
            Terminator::Goto(b) => *b,
            Terminator::Branch {
                cond,
                then,
                otherwise,
            } => {
                self.influence_all(Decision::Branch, pkt, cond, params);
                match self.env(pkt, params).truth(cond) {
                    true => *then,
                    false => *otherwise,
                }
            }
            Terminator::Switch {
                value,
                cases,
                default,
            } => {
                let v = self.env(pkt, params).bits(value);
                let m = Bits::ones(v.width());
                self.influence(Decision::Switch, pkt, value, &m, params);
                cases
                    .iter()
                    .find(|(c, _)| *c == v)
                    .map_or(*default, |(_, b)| *b)
            }
            Terminator::Apply { table, next } => {
                let r = self.apply_table(pkt, *table)?;
                match next {
                    ApplyNext::Always(b) => *b,
                    ApplyNext::HitMiss { hit, miss } => match r.hit {
                        true => *hit,
                        false => *miss,
                    },
                    ApplyNext::Actions { cases, default } => cases
                        .iter()
                        .find(|(a, _)| Some(*a) == r.action)
                        .map_or(*default, |(_, b)| *b),
                }
            }
            Terminator::Return => return Ok(None),
            Terminator::Exit => return Err(Stop::Exit),
        }))
    }

    /// Calls action `a` with `args`; `exit` in it propagates.
    pub fn call_action(&mut self, pkt: &mut Pkt, a: ActionId, args: &[Bits]) -> Result<(), Stop> {
        let Some(action) = self.p.actions.get(a) else {
            return Err(Stop::Abort(format!("call of missing action {a}")));
        };
        self.obs.action(&action.preamble.name, args);
        let r = self.run_body(pkt, &action.body, args);
        if O::TRACES_EFFECTS {
            self.obs.action_end();
        }
        r
    }

    fn apply_table(&mut self, pkt: &mut Pkt, t: TableId) -> Result<Applied, Stop> {
        if O::REPLAYS
            && let Some((hit, call)) = self.replayed_table(t)
        {
            self.table_hit(pkt, t, hit);
            if let Some(c) = &call {
                self.call_action(pkt, c.action, &c.args)?;
            }
            return Ok(Applied {
                hit: hit.is_some(),
                action: call.map(|c| c.action),
            });
        }
        let (Some(table), Some(ts)) = (self.p.tables.get(t), self.state.table_by_id(t)) else {
            return Err(Stop::Abort(format!("apply of missing table {t}")));
        };
        // Only the keys the lookup and the selector use are evaluated (evaluation has no
        // side effects); a selector list is usually empty, and cloning it then is free.
        let mut keys = self.lists.pop().unwrap_or_default();
        let env = self.env(pkt, &[]);
        let key_at = |i: usize| {
            table
                .keys
                .get(i)
                .map(|k| env.bits(&k.expr).resize(k.field.width))
        };
        keys.extend(ts.schema.keys.iter().filter_map(|k| key_at(k.position)));
        let sel_positions = ts.schema.selector_keys.clone();
        let sel: Vec<Bits> = sel_positions.iter().filter_map(|i| key_at(*i)).collect();
        let mut masks = self.list();
        let found = self
            .state
            .lookup(t, &keys, O::WANTS_MASKS.then_some(&mut masks))
            .map(|l| match l {
                Lookup::Hit { index, entry } => (Some((index, entry.handle)), entry.action.clone()),
                Lookup::Miss { default } => (None, default.clone()),
            });
        let Some((hit, action)) = found else {
            return Err(Stop::Abort(format!("apply of missing table {t}")));
        };
        if O::TRACKS_READS {
            // The lookup's keys, in its order (the schema's rule, read from the pipeline's
            // table: the state stays free for `influence`).
            let lookup_keys = table
                .keys
                .iter()
                .filter(|k| koi_state::schema::is_lookup_key(k));
            for (i, k) in lookup_keys.enumerate() {
                let m = masks
                    .get(i)
                    .cloned()
                    .unwrap_or_else(|| Bits::ones(k.field.width));
                self.influence(Decision::TableKey, pkt, &k.expr, &m, &[]);
            }
        }
        let mut call = self.resolve_action(pkt, t, action, &sel, &sel_positions);
        let mut hit = hit;
        if call.is_none() && hit.is_some() {
            hit = None;
            let d = self
                .state
                .table_by_id(t)
                .map(|x| x.default_action().clone());
            call = d.and_then(|d| self.resolve_action(pkt, t, d, &sel, &sel_positions));
        }
        self.table_hit(pkt, t, hit.map(|h| h.0));
        let (an, args) = match &call {
            Some(c) => (
                self.p
                    .actions
                    .get(c.action)
                    .map_or("", |a| a.preamble.name.as_str()),
                &c.args[..],
            ),
            None => ("", &[][..]),
        };
        let ev = TableEvent {
            table: t,
            name: &table.preamble.name,
            keys: &keys,
            hit: hit.map(|h| h.1),
            action: call.as_ref().map_or(ActionId::new(u32::MAX), |c| c.action),
            action_name: an,
            args,
            masks: &masks,
        };
        self.obs.table(&ev);
        let action = call.as_ref().map(|c| c.action);
        let step = Step::Table {
            table: t,
            hit: hit.map(|h| h.0),
            call,
        };
        if O::REPLAYS {
            self.obs.decided(&step);
        }
        self.keep(keys);
        self.keep(masks);
        if let Step::Table { call: Some(c), .. } = &step {
            self.call_action(pkt, c.action, &c.args)?;
        }
        Ok(Applied {
            hit: hit.is_some(),
            action,
        })
    }

    /// The recorded result of applying table `t` (entry index, action call), if the observer
    /// offers one for this table whose action exists.
    fn replayed_table(&mut self, t: TableId) -> Option<(Option<u32>, Option<ActionCall>)> {
        let Replay::Use(step) = self.obs.replay() else {
            return None;
        };
        match step {
            Step::Table { table, hit, call }
                if table == t
                    && call
                        .as_ref()
                        .is_none_or(|c| self.p.actions.get(c.action).is_some()) =>
            {
                Some((hit, call))
            }
            _ => {
                self.obs.replay_diverged();
                None
            }
        }
    }

    /// Credits a hit: direct counter, idle time, direct meter colour for `read`.
    fn table_hit(&mut self, pkt: &mut Pkt, t: TableId, index: Option<u32>) {
        let meter = self
            .state
            .table_by_id(t)
            .and_then(|x| x.schema.direct_meter);
        if let Some(m) = meter {
            pkt.meter_colors.retain(|(e, _)| *e != m);
        }
        let Some(index) = index else {
            return;
        };
        let now = self.now_ns();
        self.state.record_hit(t, index, pkt.ingress_len, now);
        if let Some(m) = meter
            && let Some(c) = self
                .state
                .execute_direct_meter(t, index, pkt.ingress_len, now)
        {
            pkt.meter_colors.push((m, c.code()));
        }
    }

    /// The action call an entry's action designates: itself, its member's, or its group's
    /// member chosen by the selector hash. `None` for a missing member or an empty group.
    fn resolve_action(
        &mut self,
        pkt: &Pkt,
        t: TableId,
        a: EntryAction,
        sel: &[Bits],
        sel_positions: &[usize],
    ) -> Option<ActionCall> {
        let profile = self.state.table_by_id(t)?.schema.implementation;
        match a {
            EntryAction::Action(c) => Some(c),
            EntryAction::Member(m) => self.state.profile_member(profile?, m).cloned(),
            EntryAction::Group(g) => {
                let p = profile?;
                if let Some(table) = self.p.tables.get(t) {
                    for pos in sel_positions {
                        if let Some(k) = table.keys.get(*pos) {
                            self.influence_all(Decision::Selector, pkt, &k.expr, &[]);
                        }
                    }
                }
                let h = self.selector_hash(p, sel, pkt, t, sel_positions);
                let m = self.state.profile_choose(p, g, h)?;
                self.state.profile_member(p, m).cloned()
            }
        }
    }

    /// The action selector's hash of the `selector` fields (fields of invalid headers left
    /// out, as BMv2's field lists do).
    fn selector_hash(
        &mut self,
        p: koi_ir::ExternId,
        sel: &[Bits],
        pkt: &Pkt,
        t: TableId,
        pos: &[usize],
    ) -> u64 {
        let algo = match self.p.externs.get(p).map(|e| &e.kind) {
            Some(koi_ir::ExternKind::ActionSelector { algo, .. }) => *algo,
            _ => return 0,
        };
        let mut data = BitString::new();
        let table = self.p.tables.get(t);
        for (v, i) in sel.iter().zip(pos) {
            let skip = table
                .and_then(|tb| tb.keys.get(*i))
                .is_some_and(|k| self.invalid_header_field(pkt, &k.expr));
            if !skip {
                data.push(&v.to_be_bytes(), v.width() as usize);
            }
        }
        self.hash_value(algo, &data)
    }
}
