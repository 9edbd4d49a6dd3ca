//! What a control plane beside simple_switch_CLI needs from the state (P4Runtime's, in
//! `koi-p4runtime`): finding an entry by its match key, the parts of an entry it may change
//! besides the action (direct counter and meter, idle timeout, its cookie), id-addressed
//! access to counter and meter arrays and profiles, the P4 widths of user-defined types, and
//! exact undos of its own operations, so that a refused batch can be rolled back to the very
//! state it started from (entry handles, member and group handles, multicast nodes included).
//!
//! The undos put back what the matching operation returned or replaced; they skip the checks
//! of the operations they undo (a const default action is put back as it was), and are meant
//! to be applied newest first.

use crate::arrays::{CounterArray, CounterValue, MeterArray};
use crate::error::{Result, StateError};
use crate::meter::Meter;
use crate::profile::{Group, Member, Profile};
use crate::state::{ExternState, State};
use crate::table::{Cookie, Entry, EntryAction, TableState};
use koi_ir::entity::EntityId;
use koi_ir::{ActionCall, ExternId, MatchKind, Pattern, TableId, ValueSetId};

/// The parts of an installed entry a control plane may change besides its action.
#[derive(Debug)]
pub struct EntryMut<'a> {
    entry: &'a mut Entry,
}

impl EntryMut<'_> {
    /// The entry as it is now.
    pub fn get(&self) -> &Entry {
        self.entry
    }

    pub fn set_counter(&mut self, v: CounterValue) {
        self.entry.counter = v;
    }

    /// The direct meter (configure it with [`Meter::set_rates`], unconfigure with
    /// [`Meter::reset`]).
    pub fn meter_mut(&mut self) -> &mut Meter {
        &mut self.entry.meter
    }

    pub fn set_timeout_ns(&mut self, t: Option<u64>) {
        self.entry.timeout_ns = t;
    }

    pub fn set_cookie(&mut self, c: Cookie) {
        self.entry.cookie = c;
    }

    pub fn set_idle_notified_ns(&mut self, t: Option<u64>) {
        self.entry.idle_notified_ns = t;
    }
}

fn unknown_table(t: TableId) -> StateError {
    StateError::Unknown {
        kind: "table",
        name: t.to_string(),
    }
}

impl State {
    /// The P4 width of the user-defined `type` named `name` (a `type` of a `type` resolved).
    pub fn type_width(&self, name: &str) -> Option<u32> {
        self.type_widths
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, w)| *w)
    }

    fn table_mut_by_id(&mut self, t: TableId) -> Result<&mut TableState> {
        self.table_by_id_mut(t).ok_or(unknown_table(t))
    }

    /// The handle of the entry of table `t` with these match patterns (one per match field,
    /// any form [`crate::schema::canonical`] takes) and priority.
    pub fn table_find(
        &self,
        t: TableId,
        keys: &[Pattern],
        priority: Option<u32>,
    ) -> Result<Option<u32>> {
        self.table_by_id(t)
            .ok_or(unknown_table(t))?
            .find(keys, priority)
    }

    /// The changeable parts of entry `handle` of table `t` (const entries included: their
    /// direct resources may change).
    pub fn table_entry_mut(&mut self, t: TableId, handle: u32) -> Result<EntryMut<'_>> {
        let tb = self.table_mut_by_id(t)?;
        let name = tb.name().to_string();
        match tb.get_mut(handle) {
            Some(entry) => Ok(EntryMut { entry }),
            None => Err(StateError::UnknownHandle {
                table: name,
                handle,
            }),
        }
    }

    /// Undoes [`State::table_add_id`]: deletes the entry and gives its handle back, so that
    /// the next add gets the handle it got.
    pub fn table_unadd(&mut self, t: TableId, handle: u32) -> Result<Entry> {
        let e = self.table_mut_by_id(t)?.unadd(handle)?;
        self.adjust_refs(t, &e.action, -1);
        Ok(e)
    }

    /// Undoes a delete: puts back the entry it returned (counter, meter, cookie and all)
    /// under its old handle.
    pub fn table_restore(&mut self, t: TableId, e: Entry) -> Result<()> {
        let action = e.action.clone();
        self.table_mut_by_id(t)?.restore(e)?;
        self.adjust_refs(t, &action, 1);
        Ok(())
    }

    /// Undoes changes to an entry: makes the entry with `old`'s handle exactly `old` again
    /// (action, direct counter and meter, idle timeout and time, cookie). Refused if no entry
    /// has that handle or its match key differs.
    pub fn table_replace(&mut self, t: TableId, old: Entry) -> Result<()> {
        let tb = self.table_mut_by_id(t)?;
        let name = tb.name().to_string();
        let Some(e) = tb.get_mut(old.handle) else {
            return Err(StateError::UnknownHandle {
                table: name,
                handle: old.handle,
            });
        };
        if e.keys != old.keys || e.priority != old.priority {
            return Err(StateError::Command(format!(
                "table {name}: entry {} has another match key",
                old.handle
            )));
        }
        let action = old.action.clone();
        let before = std::mem::replace(e, old);
        self.adjust_refs(t, &before.action, -1);
        self.adjust_refs(t, &action, 1);
        Ok(())
    }

    /// Undoes a change of the default action of table `t` (const or not): sets it to
    /// `action`, which it was.
    pub fn table_restore_default(&mut self, t: TableId, action: EntryAction) -> Result<()> {
        let tb = self.table_mut_by_id(t)?;
        let before = tb.default_action().clone();
        tb.set_default(action.clone());
        self.adjust_refs(t, &before, -1);
        self.adjust_refs(t, &action, 1);
        Ok(())
    }

    /// The action profile or selector with extern id `e`.
    pub fn profile_by_id(&self, e: ExternId) -> Option<&Profile> {
        match self.extern_state(e)? {
            ExternState::Profile(p) => Some(p),
            _ => None,
        }
    }

    fn profile_by_id_mut(&mut self, e: ExternId) -> Result<&mut Profile> {
        match self.extern_state_mut(e) {
            Some(ExternState::Profile(p)) => Ok(p),
            _ => Err(StateError::Unknown {
                kind: "action profile",
                name: e.to_string(),
            }),
        }
    }

    /// Undoes the delete of member `handle` of profile `e`: puts it back running `call`,
    /// unused (the entries and groups that used it are put back after it).
    pub fn profile_restore_member(
        &mut self,
        e: ExternId,
        handle: u32,
        call: ActionCall,
    ) -> Result<()> {
        let p = self.profile_by_id_mut(e)?;
        if p.members.insert_at(handle, Member { call, refs: 0 }) {
            Ok(())
        } else {
            Err(StateError::Profile {
                profile: p.name.clone(),
                why: format!("member {handle} exists"),
            })
        }
    }

    /// Undoes the delete of group `handle` of profile `e`: puts it back empty and unused (its
    /// members are added back with [`State::profile_add_to_group`]).
    pub fn profile_restore_group(&mut self, e: ExternId, handle: u32) -> Result<()> {
        let p = self.profile_by_id_mut(e)?;
        if p.groups.insert_at(handle, Group::default()) {
            Ok(())
        } else {
            Err(StateError::Profile {
                profile: p.name.clone(),
                why: format!("group {handle} exists"),
            })
        }
    }

    /// The components of value set `v`: (name, width, match kind) each.
    pub fn value_set_fields(&self, v: ValueSetId) -> Option<&[(String, u32, MatchKind)]> {
        self.value_sets
            .get(v.index() as usize)
            .map(|x| &x.fields[..])
    }

    /// The members of value set `v`.
    pub fn value_set_members_by_id(&self, v: ValueSetId) -> Option<&[Vec<Pattern>]> {
        self.value_sets.get(v.index() as usize).map(|x| x.members())
    }

    /// The control-plane name of value set `v`.
    pub fn value_set_name(&self, v: ValueSetId) -> Option<&str> {
        self.value_sets
            .get(v.index() as usize)
            .map(|x| x.name.as_str())
    }

    /// Counter array `c`, for writing.
    pub fn counter_array_mut(&mut self, c: ExternId) -> Option<&mut CounterArray> {
        match self.extern_state_mut(c)? {
            ExternState::Counter(a) => Some(a),
            _ => None,
        }
    }

    /// Counter array `c`.
    pub fn counter_array(&self, c: ExternId) -> Option<&CounterArray> {
        match self.extern_state(c)? {
            ExternState::Counter(a) => Some(a),
            _ => None,
        }
    }

    /// Meter array `m`, for writing.
    pub fn meter_array_mut(&mut self, m: ExternId) -> Option<&mut MeterArray> {
        match self.extern_state_mut(m)? {
            ExternState::Meter(a) => Some(a),
            _ => None,
        }
    }

    /// Meter array `m`.
    pub fn meter_array(&self, m: ExternId) -> Option<&MeterArray> {
        match self.extern_state(m)? {
            ExternState::Meter(a) => Some(a),
            _ => None,
        }
    }
}
