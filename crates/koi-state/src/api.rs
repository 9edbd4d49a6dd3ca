//! The table part of the control-plane API, by P4 names: add, modify, delete, read and clear
//! entries, set and reset default actions. Names resolve as [`crate::names`] says; every
//! refused operation leaves the state unchanged.

use crate::error::{Result, StateError};
use crate::names::{resolve, resolve_key_field};
use crate::schema::check_args;
use crate::state::{ExternState, State};
use crate::table::{Entry, EntryAction, NewEntry, TableState};
use koi_ir::entity::EntityId;
use koi_ir::{ActionCall, ActionId, ActionScope, Bits, Pattern, TableId};

/// What an entry or a default action runs, as the control plane names it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ActionSpec {
    /// An action of the table (by name) with one argument per parameter, of its width.
    Action { name: String, args: Vec<Bits> },
    /// A member of the table's action profile.
    Member(u32),
    /// A group of the table's action selector.
    Group(u32),
}

impl ActionSpec {
    /// An action with arguments.
    pub fn action(name: &str, args: Vec<Bits>) -> ActionSpec {
        ActionSpec::Action {
            name: name.to_string(),
            args,
        }
    }
}

/// A table entry as the control plane writes it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EntrySpec {
    /// One pattern per match field, in key order (selector fields excluded).
    pub keys: Vec<Pattern>,
    pub action: ActionSpec,
    /// Larger wins; required exactly for tables with ternary, range or optional fields.
    pub priority: Option<u32>,
    /// Idle timeout, for tables with `support_timeout`.
    pub timeout_ns: Option<u64>,
}

impl State {
    fn table_ref(&self, id: TableId) -> Result<&TableState> {
        self.table_by_id(id).ok_or(StateError::Unknown {
            kind: "table",
            name: id.to_string(),
        })
    }

    /// Resolves `name` among the actions of table `t`.
    pub fn table_action_id(&self, t: TableId, name: &str) -> Result<ActionId> {
        let table = self.table_ref(t)?;
        let items = table
            .schema
            .actions
            .iter()
            .filter_map(|(a, _)| Some((self.action_schema(*a)?.name.as_str(), *a)));
        resolve("action", name, items).map_err(|e| match e {
            StateError::Unknown { .. } => StateError::ActionNotInTable {
                table: table.name().to_string(),
                action: name.to_string(),
            },
            other => other,
        })
    }

    /// The match field of table `t` that an STF key name designates (STF.md §4.1).
    pub fn key_field(&self, t: TableId, name: &str) -> Result<usize> {
        let table = self.table_ref(t)?;
        let names: Vec<&str> = table.schema.keys.iter().map(|k| k.name.as_str()).collect();
        resolve_key_field(&names, name).ok_or(StateError::Unknown {
            kind: "match field",
            name: format!("{} of table {}", name, table.name()),
        })
    }

    /// The match patterns of an STF `add` whose fields are named (STF.md §4.1): each name
    /// resolves with [`resolve_key_field`], fields left out get the wildcard p4c's runner
    /// gives them (exact 0, ternary and optional `0&&&0`, LPM `0/0`), except range fields,
    /// which p4c's runner cannot leave out either.
    pub fn named_keys(&self, t: TableId, named: &[(String, Pattern)]) -> Result<Vec<Pattern>> {
        let table = self.table_ref(t)?;
        let mut keys: Vec<Option<Pattern>> = vec![None; table.schema.keys.len()];
        for (name, p) in named {
            let i = self.key_field(t, name)?;
            if let Some(k) = keys.get_mut(i) {
                *k = Some(p.clone());
            }
        }
        keys.into_iter()
            .enumerate()
            .map(|(i, k)| match (k, &table.schema.keys[i].kind) {
                (Some(p), _) => Ok(p),
                (None, koi_ir::MatchKind::Range) => Err(StateError::BadKey {
                    table: table.name().to_string(),
                    field: table.schema.keys[i].name.clone(),
                    why: "a range field must be given".into(),
                }),
                (None, _) => table.schema.wildcard(i).ok_or(StateError::KeyCount {
                    table: table.name().to_string(),
                    expected: table.schema.keys.len(),
                    found: i,
                }),
            })
            .collect()
    }

    /// Validates `spec` for table `t`, as an entry or as the default action.
    fn entry_action(&self, t: TableId, spec: &ActionSpec, default: bool) -> Result<EntryAction> {
        let table = self.table_ref(t)?;
        let tname = table.name().to_string();
        let profile = table.schema.implementation;
        match spec {
            ActionSpec::Action { name, args } => {
                if profile.is_some() && !default {
                    return Err(StateError::Implementation {
                        table: tname,
                        why: "entries of a table with an action profile run members or groups"
                            .into(),
                    });
                }
                let a = self.table_action_id(t, name)?;
                self.check_call(table, a, args, default)?;
                Ok(EntryAction::Action(ActionCall {
                    action: a,
                    args: args.clone(),
                }))
            }
            ActionSpec::Member(m) => {
                let prof = self.profile_of(table)?;
                prof.members.get(*m).ok_or_else(|| StateError::Profile {
                    profile: prof.name.clone(),
                    why: format!("no member {m}"),
                })?;
                Ok(EntryAction::Member(*m))
            }
            ActionSpec::Group(g) => {
                let prof = self.profile_of(table)?;
                if prof.selector.is_none() {
                    return Err(StateError::Implementation {
                        table: tname,
                        why: "groups need an action selector".into(),
                    });
                }
                prof.groups.get(*g).ok_or_else(|| StateError::Profile {
                    profile: prof.name.clone(),
                    why: format!("no group {g}"),
                })?;
                Ok(EntryAction::Group(*g))
            }
        }
    }

    fn profile_of(&self, table: &TableState) -> Result<&crate::profile::Profile> {
        match table
            .schema
            .implementation
            .and_then(|e| self.extern_state(e))
        {
            Some(ExternState::Profile(p)) => Ok(p),
            _ => Err(StateError::Implementation {
                table: table.name().to_string(),
                why: "the table has no action profile".into(),
            }),
        }
    }

    fn check_call(
        &self,
        table: &TableState,
        a: ActionId,
        args: &[Bits],
        default: bool,
    ) -> Result<()> {
        let schema = self.action_schema(a).ok_or(StateError::Unknown {
            kind: "action",
            name: a.to_string(),
        })?;
        let names = || (table.name().to_string(), schema.name.clone());
        match (table.schema.scope(a), default) {
            (None, _) => {
                let (table, action) = names();
                return Err(StateError::ActionNotInTable { table, action });
            }
            (Some(ActionScope::DefaultOnly), false) => {
                let (table, action) = names();
                return Err(StateError::DefaultOnlyAction { table, action });
            }
            (Some(ActionScope::TableOnly), true) => {
                let (table, action) = names();
                return Err(StateError::TableOnlyAction { table, action });
            }
            _ => {}
        }
        check_args(schema, args)
    }

    /// Adds an entry to the table named `table`; returns its handle.
    pub fn table_add(&mut self, table: &str, spec: EntrySpec) -> Result<u32> {
        let t = self.table_id(table)?;
        self.table_add_id(t, spec)
    }

    /// Adds an entry to table `t`; returns its handle.
    pub fn table_add_id(&mut self, t: TableId, spec: EntrySpec) -> Result<u32> {
        if self.table_ref(t)?.schema.entries_const {
            return Err(StateError::ConstTable {
                table: self.table_ref(t)?.name().to_string(),
            });
        }
        let action = self.entry_action(t, &spec.action, false)?;
        let now = self.now_ns;
        let entry = NewEntry {
            keys: spec.keys,
            action: action.clone(),
            priority: spec.priority,
            timeout_ns: spec.timeout_ns,
        };
        let table = self.table_by_id_mut(t).ok_or(StateError::Unknown {
            kind: "table",
            name: t.to_string(),
        })?;
        let handle = table.add(entry, false, now)?;
        self.adjust_refs(t, &action, 1);
        Ok(handle)
    }

    /// Changes the action of entry `handle`.
    pub fn table_modify(&mut self, table: &str, handle: u32, action: ActionSpec) -> Result<()> {
        let t = self.table_id(table)?;
        let new = self.entry_action(t, &action, false)?;
        let old = self
            .table_ref(t)?
            .get(handle)
            .map(|e| e.action.clone())
            .ok_or(StateError::UnknownHandle {
                table: table.to_string(),
                handle,
            })?;
        if let Some(tb) = self.table_by_id_mut(t) {
            tb.modify(handle, new.clone())?;
        }
        self.adjust_refs(t, &old, -1);
        self.adjust_refs(t, &new, 1);
        Ok(())
    }

    /// Deletes entry `handle`.
    pub fn table_delete(&mut self, table: &str, handle: u32) -> Result<()> {
        let t = self.table_id(table)?;
        let tb = self.table_by_id_mut(t).ok_or(StateError::Unknown {
            kind: "table",
            name: table.to_string(),
        })?;
        let e = tb.delete(handle)?;
        self.adjust_refs(t, &e.action, -1);
        Ok(())
    }

    /// Deletes every entry that is not const; returns how many were deleted.
    pub fn table_clear(&mut self, table: &str) -> Result<usize> {
        let t = self.table_id(table)?;
        let tb = self.table_by_id_mut(t).ok_or(StateError::Unknown {
            kind: "table",
            name: table.to_string(),
        })?;
        let gone = tb.clear()?;
        for e in &gone {
            self.adjust_refs(t, &e.action, -1);
        }
        Ok(gone.len())
    }

    /// The entry `handle` of `table`.
    pub fn table_entry(&self, table: &str, handle: u32) -> Result<&Entry> {
        let tb = self.table(table)?;
        tb.get(handle).ok_or(StateError::UnknownHandle {
            table: tb.name().to_string(),
            handle,
        })
    }

    /// Sets the default action of `table`.
    pub fn table_set_default(&mut self, table: &str, action: ActionSpec) -> Result<()> {
        let t = self.table_id(table)?;
        let tb = self.table_ref(t)?;
        if tb.schema.default_action.is_const {
            return Err(StateError::ConstDefault {
                table: tb.name().to_string(),
            });
        }
        let new = self.entry_action(t, &action, true)?;
        let old = tb.default_action().clone();
        if let Some(tb) = self.table_by_id_mut(t) {
            tb.set_default(new.clone());
        }
        self.adjust_refs(t, &old, -1);
        self.adjust_refs(t, &new, 1);
        Ok(())
    }

    /// Restores the program's default action of `table`.
    pub fn table_reset_default(&mut self, table: &str) -> Result<()> {
        let t = self.table_id(table)?;
        let old = self.table_ref(t)?.default_action().clone();
        if let Some(tb) = self.table_by_id_mut(t) {
            tb.reset_default();
        }
        self.adjust_refs(t, &old, -1);
        Ok(())
    }

    /// Counts a reference from table `t` to a profile member or group (+1) or removes one.
    pub(crate) fn adjust_refs(&mut self, t: TableId, action: &EntryAction, delta: i64) {
        let Some(ext) = self.table_by_id(t).and_then(|tb| tb.schema.implementation) else {
            return;
        };
        let Some(ExternState::Profile(p)) = self.externs.get_mut(ext.index() as usize) else {
            return;
        };
        let refs = match action {
            EntryAction::Member(m) => p.members.get_mut(*m).map(|m| &mut m.refs),
            EntryAction::Group(g) => p.groups.get_mut(*g).map(|g| &mut g.refs),
            EntryAction::Action(_) => None,
        };
        if let Some(r) = refs {
            *r = (i64::from(*r) + delta).clamp(0, i64::from(u32::MAX)) as u32;
        }
    }
}
