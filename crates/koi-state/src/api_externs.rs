//! The extern part of the control-plane API, by P4 names: registers, counters (indexed and
//! direct), meters (indexed and direct), action profile members and groups, value sets,
//! multicast and clone sessions, digests.

use crate::arrays::CounterValue;
use crate::error::{Result, StateError};
use crate::meter::MeterRate;
use crate::pre::MirrorTarget;
use crate::profile::{Group, Member, Profile};
use crate::schema::check_args;
use crate::state::{ExternState, State};
use crate::value_set::DigestMessage;
use koi_ir::entity::EntityId;
use koi_ir::{ActionCall, ActionId, Bits, Pattern, TableId, ValueSetId};

fn wrong(name: &str, expected: &'static str) -> StateError {
    StateError::WrongKind {
        name: name.to_string(),
        expected,
    }
}

fn out_of_range(name: &str, index: u64, size: u64) -> StateError {
    StateError::IndexOutOfRange {
        name: name.to_string(),
        index,
        size,
    }
}

/// The largest register [`State::register_read_all`] reads at once.
pub const READ_ALL_LIMIT: u64 = 1 << 20;

fn direct_table(name: &str, table: Option<TableId>) -> Result<TableId> {
    table.ok_or_else(|| StateError::WrongKind {
        name: name.to_string(),
        expected: "direct resource attached to a table",
    })
}

impl State {
    fn extern_mut(&mut self, name: &str) -> Result<(String, &mut ExternState)> {
        let id = self.extern_id(name)?;
        let full = self.extern_name(id).unwrap_or(name).to_string();
        let st = self.extern_state_mut(id).ok_or(StateError::Unknown {
            kind: "extern",
            name: name.to_string(),
        })?;
        Ok((full, st))
    }

    fn extern_ref(&self, name: &str) -> Result<(String, &ExternState)> {
        let id = self.extern_id(name)?;
        let full = self.extern_name(id).unwrap_or(name).to_string();
        let st = self.extern_state(id).ok_or(StateError::Unknown {
            kind: "extern",
            name: name.to_string(),
        })?;
        Ok((full, st))
    }

    /// The value of register `name` at `index`.
    pub fn register_read(&self, name: &str, index: u64) -> Result<Bits> {
        let (full, st) = self.extern_ref(name)?;
        let ExternState::Register(r) = st else {
            return Err(wrong(&full, "register"));
        };
        r.get(index)
            .cloned()
            .ok_or_else(|| out_of_range(&full, index, r.len()))
    }

    /// Every value of register `name`.
    pub fn register_read_all(&self, name: &str) -> Result<Vec<Bits>> {
        match self.extern_ref(name)? {
            (full, ExternState::Register(r)) if r.len() > READ_ALL_LIMIT => {
                Err(StateError::IndexOutOfRange {
                    name: full,
                    index: READ_ALL_LIMIT,
                    size: r.len(),
                })
            }
            (_, ExternState::Register(r)) => Ok(r.values(READ_ALL_LIMIT)),
            (full, _) => Err(wrong(&full, "register")),
        }
    }

    /// Writes `value` (any width, as long as its value fits the element) at `index`.
    pub fn register_write(&mut self, name: &str, index: u64, value: &Bits) -> Result<()> {
        let (full, st) = self.extern_mut(name)?;
        let ExternState::Register(r) = st else {
            return Err(wrong(&full, "register"));
        };
        if value.resize(r.width).resize(value.width()) != *value {
            return Err(StateError::ValueTooWide {
                name: full,
                width: r.width,
            });
        }
        if r.set(index, value) {
            Ok(())
        } else {
            Err(out_of_range(&full, index, r.len()))
        }
    }

    /// Sets every value of register `name` to 0.
    pub fn register_reset(&mut self, name: &str) -> Result<()> {
        match self.extern_mut(name)? {
            (_, ExternState::Register(r)) => {
                r.reset();
                Ok(())
            }
            (full, _) => Err(wrong(&full, "register")),
        }
    }

    /// Counter `name` at `index`; for a direct counter `index` is an entry handle of its
    /// table (as simple_switch_CLI takes it).
    pub fn counter_read(&self, name: &str, index: u64) -> Result<CounterValue> {
        let (full, st) = self.extern_ref(name)?;
        match st {
            ExternState::Counter(c) => c
                .get(index)
                .ok_or_else(|| out_of_range(&full, index, c.len())),
            ExternState::DirectCounter { table, .. } => {
                let t = direct_table(&full, *table)?;
                self.direct_entry(t, index).map(|e| e.counter)
            }
            _ => Err(wrong(&full, "counter")),
        }
    }

    fn direct_entry(&self, t: TableId, handle: u64) -> Result<&crate::table::Entry> {
        let tb = self.table_by_id(t).ok_or(StateError::Unknown {
            kind: "table",
            name: t.to_string(),
        })?;
        u32::try_from(handle)
            .ok()
            .and_then(|h| tb.get(h))
            .ok_or(StateError::UnknownHandle {
                table: tb.name().to_string(),
                handle: handle as u32,
            })
    }

    fn direct_entry_mut(&mut self, t: TableId, handle: u64) -> Result<&mut crate::table::Entry> {
        self.direct_entry(t, handle)?;
        self.table_by_id_mut(t)
            .and_then(|tb| tb.get_mut(handle as u32))
            .ok_or(StateError::Unknown {
                kind: "entry",
                name: handle.to_string(),
            })
    }

    /// Sets counter `name` at `index` (or of entry `index` for a direct counter).
    pub fn counter_write(&mut self, name: &str, index: u64, v: CounterValue) -> Result<()> {
        let (full, st) = self.extern_mut(name)?;
        match st {
            ExternState::Counter(c) => {
                let size = c.len();
                let cell = c
                    .get_mut(index)
                    .ok_or_else(|| out_of_range(&full, index, size))?;
                *cell = v;
                Ok(())
            }
            ExternState::DirectCounter { table, .. } => {
                let t = direct_table(&full, *table)?;
                self.direct_entry_mut(t, index)?.counter = v;
                Ok(())
            }
            _ => Err(wrong(&full, "counter")),
        }
    }

    /// Sets every cell of counter `name` (or every entry's direct counter) to 0.
    pub fn counter_reset(&mut self, name: &str) -> Result<()> {
        let (full, st) = self.extern_mut(name)?;
        match st {
            ExternState::Counter(c) => {
                c.reset();
                Ok(())
            }
            ExternState::DirectCounter { table, .. } => {
                let t = direct_table(&full, *table)?;
                let handles: Vec<u32> = self
                    .table_by_id(t)
                    .map(|tb| tb.entries().map(|e| e.handle).collect())
                    .unwrap_or_default();
                for h in handles {
                    self.direct_entry_mut(t, u64::from(h))?.counter = CounterValue::default();
                }
                Ok(())
            }
            _ => Err(wrong(&full, "counter")),
        }
    }

    /// Configures meter `name`: at `index`, at every index when `index` is `None`, or for a
    /// direct meter the meter of entry `index`. `rates` is `[committed, peak]`.
    pub fn meter_set_rates(
        &mut self,
        name: &str,
        index: Option<u64>,
        rates: &[MeterRate],
    ) -> Result<()> {
        let (full, st) = self.extern_mut(name)?;
        let bad = |why: String| StateError::Meter {
            meter: full.clone(),
            why,
        };
        match (st, index) {
            (ExternState::Meter(a), None) => {
                let mut probe = crate::meter::Meter::default();
                probe.set_rates(rates).map_err(bad)?;
                a.cells.reset_to(probe);
                Ok(())
            }
            (ExternState::Meter(a), Some(i)) => {
                let size = a.cells.len();
                let mut probe = crate::meter::Meter::default();
                probe.set_rates(rates).map_err(bad)?;
                let cell = a
                    .cells
                    .get_mut(i)
                    .ok_or_else(|| out_of_range(&full, i, size))?;
                *cell = probe;
                Ok(())
            }
            (ExternState::DirectMeter { table, .. }, Some(h)) => {
                let t = direct_table(&full, *table)?;
                let mut probe = crate::meter::Meter::default();
                probe.set_rates(rates).map_err(bad)?;
                self.direct_entry_mut(t, h)?.meter = probe;
                Ok(())
            }
            (ExternState::DirectMeter { .. }, None) => {
                Err(bad("a direct meter needs an entry handle".into()))
            }
            _ => Err(wrong(&full, "meter")),
        }
    }

    /// The `[committed, peak]` rates of meter `name` at `index` (entry for a direct meter);
    /// `None` when unconfigured.
    pub fn meter_get_rates(&self, name: &str, index: u64) -> Result<Option<[MeterRate; 2]>> {
        let (full, st) = self.extern_ref(name)?;
        match st {
            ExternState::Meter(a) => a
                .cells
                .get(index)
                .map(|m| m.rates())
                .ok_or_else(|| out_of_range(&full, index, a.cells.len())),
            ExternState::DirectMeter { table, .. } => {
                let t = direct_table(&full, *table)?;
                Ok(self.direct_entry(t, index)?.meter.rates())
            }
            _ => Err(wrong(&full, "meter")),
        }
    }

    fn profile_mut(&mut self, name: &str) -> Result<&mut Profile> {
        match self.extern_mut(name)? {
            (_, ExternState::Profile(p)) => Ok(p),
            (full, _) => Err(wrong(&full, "action profile")),
        }
    }

    /// The action profile or selector `name`.
    pub fn profile(&self, name: &str) -> Result<&Profile> {
        match self.extern_ref(name)? {
            (_, ExternState::Profile(p)) => Ok(p),
            (full, _) => Err(wrong(&full, "action profile")),
        }
    }

    /// Resolves `action` among the actions of profile `profile`'s tables. Tables binding an
    /// action's directional parameters differently run different specialisations of it: a
    /// member could not run both, so such a name is ambiguous.
    pub fn profile_action(&self, profile: &str, action: &str) -> Result<ActionId> {
        let p = self.profile(profile)?;
        // Each control-plane name once: which specialisation is decided below.
        let mut seen = std::collections::HashSet::new();
        let items: Vec<(&str, ActionId)> = p
            .actions
            .iter()
            .filter_map(|a| Some((self.action_schema(*a)?.name.as_str(), *a)))
            .filter(|(n, _)| seen.insert(*n))
            .collect();
        let a = crate::names::resolve("action", action, items.into_iter())?;
        let name = self.action_schema(a).map(|x| x.name.as_str());
        let same: Vec<&str> = p
            .actions
            .iter()
            .filter_map(|b| self.action_schema(*b))
            .filter(|x| Some(x.name.as_str()) == name)
            .map(|x| x.ir_name.as_str())
            .collect();
        if same.len() > 1 {
            return Err(StateError::Ambiguous {
                kind: "action",
                name: action.to_string(),
                candidates: same.join(", "),
            });
        }
        Ok(a)
    }

    fn member_call(&self, profile: &str, action: &str, args: &[Bits]) -> Result<ActionCall> {
        let a = self.profile_action(profile, action)?;
        if let Some(s) = self.action_schema(a) {
            check_args(s, args)?;
        }
        Ok(ActionCall {
            action: a,
            args: args.to_vec(),
        })
    }

    /// Creates a member of profile `profile` running `action(args)`; returns its handle.
    pub fn profile_add_member(
        &mut self,
        profile: &str,
        action: &str,
        args: &[Bits],
    ) -> Result<u32> {
        let call = self.member_call(profile, action, args)?;
        let p = self.profile_mut(profile)?;
        if p.size > 0 && p.members.len() as u64 >= p.size {
            return Err(StateError::Profile {
                profile: p.name.clone(),
                why: format!("full ({} members)", p.size),
            });
        }
        Ok(p.members.insert(Member { call, refs: 0 }))
    }

    /// Changes the action of member `m`.
    pub fn profile_modify_member(
        &mut self,
        profile: &str,
        m: u32,
        action: &str,
        args: &[Bits],
    ) -> Result<()> {
        let call = self.member_call(profile, action, args)?;
        let p = self.profile_mut(profile)?;
        let name = p.name.clone();
        let member = p.members.get_mut(m).ok_or(StateError::Profile {
            profile: name,
            why: format!("no member {m}"),
        })?;
        member.call = call;
        Ok(())
    }

    /// Deletes member `m` (refused while an entry or a group uses it).
    pub fn profile_delete_member(&mut self, profile: &str, m: u32) -> Result<()> {
        let p = self.profile_mut(profile)?;
        let bad = |why: String| StateError::Profile {
            profile: p.name.clone(),
            why,
        };
        match p.members.get(m) {
            None => Err(bad(format!("no member {m}"))),
            Some(x) if x.refs > 0 => Err(bad(format!("member {m} is still used"))),
            Some(_) => {
                p.members.remove(m);
                Ok(())
            }
        }
    }

    /// Creates an empty group; returns its handle.
    pub fn profile_create_group(&mut self, profile: &str) -> Result<u32> {
        let p = self.profile_mut(profile)?;
        if p.selector.is_none() {
            return Err(StateError::Profile {
                profile: p.name.clone(),
                why: "groups need an action selector".into(),
            });
        }
        Ok(p.groups.insert(Group::default()))
    }

    /// Deletes group `g` (refused while an entry uses it).
    pub fn profile_delete_group(&mut self, profile: &str, g: u32) -> Result<()> {
        let p = self.profile_mut(profile)?;
        let name = p.name.clone();
        let bad = |why: String| StateError::Profile {
            profile: name.clone(),
            why,
        };
        let group = p
            .groups
            .get(g)
            .ok_or_else(|| bad(format!("no group {g}")))?;
        if group.refs > 0 {
            return Err(bad(format!("group {g} is still used")));
        }
        let members: Vec<u32> = group.members.iter().copied().collect();
        for m in members {
            if let Some(x) = p.members.get_mut(m) {
                x.refs = x.refs.saturating_sub(1);
            }
        }
        p.groups.remove(g);
        Ok(())
    }

    /// Adds member `m` to group `g`.
    pub fn profile_add_to_group(&mut self, profile: &str, m: u32, g: u32) -> Result<()> {
        let p = self.profile_mut(profile)?;
        let name = p.name.clone();
        let bad = |why: String| StateError::Profile {
            profile: name.clone(),
            why,
        };
        if p.members.get(m).is_none() {
            return Err(bad(format!("no member {m}")));
        }
        let group = p
            .groups
            .get_mut(g)
            .ok_or_else(|| bad(format!("no group {g}")))?;
        if !group.members.insert(m) {
            return Err(bad(format!("member {m} is already in group {g}")));
        }
        if let Some(x) = p.members.get_mut(m) {
            x.refs += 1;
        }
        Ok(())
    }

    /// Removes member `m` from group `g`.
    pub fn profile_remove_from_group(&mut self, profile: &str, m: u32, g: u32) -> Result<()> {
        let p = self.profile_mut(profile)?;
        let name = p.name.clone();
        let group = p.groups.get_mut(g).ok_or_else(|| StateError::Profile {
            profile: name.clone(),
            why: format!("no group {g}"),
        })?;
        if !group.members.remove(&m) {
            return Err(StateError::Profile {
                profile: name,
                why: format!("member {m} is not in group {g}"),
            });
        }
        if let Some(x) = p.members.get_mut(m) {
            x.refs = x.refs.saturating_sub(1);
        }
        Ok(())
    }

    /// Resolves a value set name.
    pub fn value_set_id(&self, name: &str) -> Result<ValueSetId> {
        crate::names::resolve(
            "value set",
            name,
            self.value_sets
                .iter()
                .enumerate()
                .map(|(i, v)| (v.name.as_str(), ValueSetId::new(i as u32))),
        )
    }

    fn value_set_mut(&mut self, name: &str) -> Result<&mut crate::value_set::ValueSetState> {
        let id = self.value_set_id(name)?;
        self.value_sets
            .get_mut(id.index() as usize)
            .ok_or(StateError::Unknown {
                kind: "value set",
                name: name.to_string(),
            })
    }

    /// Adds a member (one pattern per component) to value set `name`.
    pub fn value_set_add(&mut self, name: &str, member: &[Pattern]) -> Result<()> {
        self.value_set_mut(name)?.add(member)
    }

    /// Removes a member from value set `name`.
    pub fn value_set_remove(&mut self, name: &str, member: &[Pattern]) -> Result<()> {
        self.value_set_mut(name)?.remove(member)
    }

    /// Removes every member of value set `name`.
    pub fn value_set_clear(&mut self, name: &str) -> Result<()> {
        self.value_set_mut(name)?.clear();
        Ok(())
    }

    /// The members of value set `name`.
    pub fn value_set_members(&self, name: &str) -> Result<&[Vec<Pattern>]> {
        let id = self.value_set_id(name)?;
        Ok(self
            .value_sets
            .get(id.index() as usize)
            .map_or(&[][..], |v| v.members()))
    }

    /// Configures clone session `session` to copy to `target`.
    pub fn mirroring_add(&mut self, session: u64, target: MirrorTarget) -> Result<()> {
        if let MirrorTarget::Port(p) = target
            && p > self.pre.max_port
        {
            return Err(StateError::Mirroring(format!(
                "port {p} is above {}",
                self.pre.max_port
            )));
        }
        self.mirroring.add(session, target)
    }

    /// Takes every digest message waiting, oldest first.
    pub fn take_digests(&mut self) -> Vec<DigestMessage> {
        self.digests.take()
    }

    /// The newest digest message waiting, if any.
    pub fn last_digest(&self) -> Option<&DigestMessage> {
        self.digests.last()
    }

    /// Digest messages dropped because the queue was full.
    pub fn digests_dropped(&self) -> u64 {
        self.digests.dropped
    }
}
