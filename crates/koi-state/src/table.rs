//! One table's entries: adding, modifying, deleting and looking them up, its default action,
//! and the per-entry direct counter, direct meter and idle time.
//!
//! Priorities are kept in one convention: **a larger number wins** (P4Runtime's, and STF's).
//! simple_switch_CLI's "smaller wins" priorities are converted at the CLI edge
//! ([`crate::cli`]), and `const entries` of a table with `largest_priority_wins = false` when
//! the state is created.

use crate::arrays::CounterValue;
use crate::error::{Result, StateError};
use crate::handles::{Slots, make_handle, split_handle};
use crate::matcher::Matcher;
use crate::meter::Meter;
use crate::schema::{LookupKind, TableSchema, canonical};
use koi_ir::{ActionCall, Bits, MatchKind, Pattern};
use std::sync::atomic::{AtomicU64, Ordering};

/// What an entry (or the default) runs: an action, or for tables with an action profile a
/// member, or for tables with an action selector a group.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum EntryAction {
    Action(ActionCall),
    Member(u32),
    Group(u32),
}

/// Opaque data a controller stores with an entry and reads back (P4Runtime's `metadata` and
/// `controller_metadata`); the data plane never looks at it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Cookie {
    pub metadata: Vec<u8>,
    pub controller_metadata: u64,
}

/// An installed entry.
#[derive(Clone, Debug, PartialEq)]
pub struct Entry {
    pub handle: u32,
    /// Canonical patterns, one per match field (see [`crate::schema::canonical`]).
    pub keys: Vec<Pattern>,
    pub action: EntryAction,
    /// Larger wins; `None` for tables that order entries without priorities.
    pub priority: Option<u32>,
    pub is_const: bool,
    /// The direct counter's value.
    pub counter: CounterValue,
    /// The direct meter.
    pub meter: Meter,
    /// Idle timeout, for tables with `support_timeout`.
    pub timeout_ns: Option<u64>,
    /// When the entry was added or last hit.
    pub last_hit_ns: u64,
    /// When the control plane was last told the entry is idle (P4Runtime's idle timeout
    /// notifications); a notification restarts the idle time as a hit does, without
    /// changing [`Entry::last_hit_ns`].
    pub idle_notified_ns: Option<u64>,
    /// The control plane's cookie (empty unless set).
    pub cookie: Cookie,
}

impl Entry {
    /// No packet counted, no hit time (a replica's copy, see [`crate::replica`]).
    pub(crate) fn forget_counts(&mut self) {
        self.counter = CounterValue::default();
        self.last_hit_ns = 0;
    }
}

/// A new entry, before validation.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NewEntry {
    pub keys: Vec<Pattern>,
    pub action: EntryAction,
    pub priority: Option<u32>,
    pub timeout_ns: Option<u64>,
}

/// The entries of one table.
#[derive(Clone)]
pub struct TableState {
    pub schema: TableSchema,
    entries: Slots<Entry>,
    versions: Vec<u8>,
    matcher: Matcher,
    default: EntryAction,
    /// Renewed by every change of what lookups see (entries, their keys and actions, the
    /// default action), so that a replica knows whether it is current ([`crate::replica`]).
    generation: u64,
    /// While a control-plane update runs on a master state: the slots it changed.
    journal: Option<Journal>,
}

/// What the table holds (not its bookkeeping for replicas: two tables with the same
/// entries show the same).
impl std::fmt::Debug for TableState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TableState")
            .field("schema", &self.schema)
            .field("entries", &self.entries)
            .field("versions", &self.versions)
            .field("matcher", &self.matcher)
            .field("default", &self.default)
            .finish_non_exhaustive()
    }
}

/// The slots of a table that changed since generation `from` (or `all`: too many to list,
/// or a change of the whole table), for replicas to catch up slot by slot.
#[derive(Clone, Debug)]
pub(crate) struct Journal {
    pub(crate) from: u64,
    pub(crate) slots: Vec<u32>,
    pub(crate) all: bool,
}

/// A number no table had before: two tables with the same generation hold the same entries
/// (one was made from the other, and neither changed since).
fn next_generation() -> u64 {
    static NEXT: AtomicU64 = AtomicU64::new(1);
    NEXT.fetch_add(1, Ordering::Relaxed)
}

/// More slots changed in one update than this: replicas copy the whole table.
const JOURNAL_MAX: usize = 1024;

impl TableState {
    pub fn new(schema: TableSchema) -> TableState {
        let lpm = schema.keys.iter().position(|k| k.kind == MatchKind::Lpm);
        let widths: Vec<u32> = schema.keys.iter().map(|k| k.width).collect();
        let matcher = Matcher::with_widths(schema.lookup, lpm, &widths);
        let default = EntryAction::Action(schema.default_action.call.clone());
        TableState {
            schema,
            entries: Slots::default(),
            versions: Vec::new(),
            matcher,
            default,
            generation: next_generation(),
            journal: None,
        }
    }

    /// Notes a change of what lookups see: of slot `index`, of the default action (`None`
    /// with `whole` false), or of the whole table (`whole`).
    fn touched(&mut self, index: Option<u32>, whole: bool) {
        self.generation = next_generation();
        if let Some(j) = &mut self.journal {
            match index {
                _ if whole => j.all = true,
                Some(i) if j.slots.len() < JOURNAL_MAX => j.slots.push(i),
                Some(_) => j.all = true,
                None => {}
            }
        }
    }

    pub fn name(&self) -> &str {
        &self.schema.name
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// All entries in handle-index order.
    pub fn entries(&self) -> impl Iterator<Item = &Entry> {
        self.entries.iter().map(|(_, e)| e)
    }

    pub fn default_action(&self) -> &EntryAction {
        &self.default
    }

    /// The canonical patterns of `keys`, or why they do not suit the table.
    pub fn canonical_keys(&self, keys: &[Pattern]) -> Result<Vec<Pattern>> {
        let s = &self.schema;
        if s.keys.is_empty() {
            return Err(StateError::Keyless {
                table: s.name.clone(),
            });
        }
        if keys.len() != s.keys.len() {
            return Err(StateError::KeyCount {
                table: s.name.clone(),
                expected: s.keys.len(),
                found: keys.len(),
            });
        }
        s.keys
            .iter()
            .zip(keys)
            .map(|(k, p)| {
                canonical(&k.kind, k.width, p).map_err(|why| StateError::BadKey {
                    table: s.name.clone(),
                    field: k.name.clone(),
                    why,
                })
            })
            .collect()
    }

    fn check_priority(&self, priority: Option<u32>) -> Result<u32> {
        let table = self.schema.name.clone();
        match (self.schema.lookup.needs_priority(), priority) {
            (true, Some(p)) => Ok(p),
            (true, None) => Err(StateError::MissingPriority { table }),
            (false, None) => Ok(0),
            (false, Some(_)) => Err(StateError::UnexpectedPriority { table }),
        }
    }

    /// Adds an entry whose action was already validated; returns its handle.
    pub fn add(&mut self, e: NewEntry, is_const: bool, now_ns: u64) -> Result<u32> {
        let keys = self.canonical_keys(&e.keys)?;
        let prio = self.check_priority(e.priority)?;
        let entries = &self.entries;
        let dup = self
            .matcher
            .find_duplicate(&keys, prio, |i| entries.get(i).map(|e| &e.keys[..]));
        if let Some(i) = dup {
            return Err(StateError::DuplicateEntry {
                table: self.schema.name.clone(),
                handle: self.handle_of(i),
            });
        }
        let size = self.schema.size;
        if size > 0 && self.entries.len() as u64 >= size {
            return Err(StateError::TableFull {
                table: self.schema.name.clone(),
                size,
            });
        }
        let index = self.entries.next_index();
        let handle = self.handle_of(index);
        self.touched(Some(index), false);
        self.matcher.insert(&keys, prio, index);
        self.entries.insert(Entry {
            handle,
            keys,
            action: e.action,
            priority: e.priority,
            is_const,
            counter: CounterValue::default(),
            meter: Meter::default(),
            timeout_ns: e.timeout_ns,
            last_hit_ns: now_ns,
            idle_notified_ns: None,
            cookie: Cookie::default(),
        });
        Ok(handle)
    }

    /// The handle of the entry with these match patterns and priority, if any (the entry an
    /// add of the same key would duplicate).
    pub fn find(&self, keys: &[Pattern], priority: Option<u32>) -> Result<Option<u32>> {
        let keys = self.canonical_keys(keys)?;
        let prio = priority.unwrap_or(0);
        let entries = &self.entries;
        let found = self
            .matcher
            .find_duplicate(&keys, prio, |i| entries.get(i).map(|e| &e.keys[..]));
        Ok(found
            .and_then(|i| self.entries.get(i))
            .filter(|e| e.priority.unwrap_or(0) == prio)
            .map(|e| e.handle))
    }

    /// Puts back an entry [`TableState::delete`] returned, under its old handle (the undo of
    /// a delete); refused if the handle's slot is taken or its keys are.
    pub fn restore(&mut self, e: Entry) -> Result<()> {
        let (index, version) = split_handle(e.handle);
        let prio = e.priority.unwrap_or(0);
        let entries = &self.entries;
        let taken = entries.get(index).is_some()
            || self
                .matcher
                .find_duplicate(&e.keys, prio, |i| entries.get(i).map(|x| &x.keys[..]))
                .is_some();
        if taken {
            return Err(StateError::DuplicateEntry {
                table: self.schema.name.clone(),
                handle: e.handle,
            });
        }
        let v = index as usize;
        if self.versions.len() <= v {
            self.versions.resize(v + 1, 0);
        }
        self.versions[v] = version;
        self.touched(Some(index), false);
        self.matcher.insert(&e.keys, prio, index);
        self.entries.insert_at(index, e);
        Ok(())
    }

    /// Deletes an entry that was just added (the undo of an add): as [`TableState::delete`],
    /// but the next entry added at its index gets the handle it had.
    pub fn unadd(&mut self, handle: u32) -> Result<Entry> {
        let e = self.delete(handle)?;
        let (index, _) = split_handle(handle);
        self.touched(Some(index), false);
        if let Some(v) = self.versions.get_mut(index as usize) {
            *v = v.wrapping_sub(1);
        }
        Ok(e)
    }

    /// Removes every entry, const ones included, and forgets the slots' versions (so the
    /// table is as [`TableState::new`] made it, default action aside); returns the entries
    /// in handle order. For [`crate::carry`], which rebuilds a table entry by entry.
    pub(crate) fn take_all(&mut self) -> Vec<Entry> {
        let entries: Vec<Entry> = self.entries().cloned().collect();
        let default = self.default.clone();
        let (generation, journal) = (self.generation, self.journal.take());
        *self = TableState::new(self.schema.clone());
        self.default = default;
        self.generation = generation;
        self.journal = journal;
        self.touched(None, true);
        entries
    }

    /// The version of each slot (the bits above [`crate::handles::INDEX_BITS`] of the handle
    /// the next entry at that index gets).
    pub(crate) fn versions(&self) -> &[u8] {
        &self.versions
    }

    /// Sets the slots' versions (of an empty table: [`TableState::take_all`] first).
    pub(crate) fn set_versions(&mut self, versions: Vec<u8>) {
        self.touched(None, true);
        self.versions = versions;
    }

    /// Stores `e` (canonical keys, checked by the caller) at the lowest free index with that
    /// slot's handle, whatever `e.handle` was; returns the handle. Refused if its match key is
    /// taken. No size check.
    pub(crate) fn insert_entry(&mut self, mut e: Entry) -> Result<u32> {
        let prio = e.priority.unwrap_or(0);
        let entries = &self.entries;
        if let Some(i) = self
            .matcher
            .find_duplicate(&e.keys, prio, |i| entries.get(i).map(|x| &x.keys[..]))
        {
            return Err(StateError::DuplicateEntry {
                table: self.schema.name.clone(),
                handle: self.handle_of(i),
            });
        }
        let index = self.entries.next_index();
        e.handle = self.handle_of(index);
        let handle = e.handle;
        self.touched(Some(index), false);
        self.matcher.insert(&e.keys, prio, index);
        self.entries.insert(e);
        Ok(handle)
    }

    fn handle_of(&self, index: u32) -> u32 {
        make_handle(
            index,
            self.versions.get(index as usize).copied().unwrap_or(0),
        )
    }

    /// The index of the entry named by `handle`, if it exists.
    pub fn index_of(&self, handle: u32) -> Option<u32> {
        let (index, version) = split_handle(handle);
        let current = self.versions.get(index as usize).copied().unwrap_or(0);
        (current == version && self.entries.get(index).is_some()).then_some(index)
    }

    fn mutable_index(&self, handle: u32) -> Result<u32> {
        let table = self.schema.name.clone();
        let index = self.index_of(handle).ok_or(StateError::UnknownHandle {
            table: table.clone(),
            handle,
        })?;
        if self.schema.entries_const {
            return Err(StateError::ConstTable { table });
        }
        if self.entries.get(index).is_some_and(|e| e.is_const) {
            return Err(StateError::ConstEntry { table, handle });
        }
        Ok(index)
    }

    pub fn get(&self, handle: u32) -> Option<&Entry> {
        self.entries.get(self.index_of(handle)?)
    }

    /// The entry named by `handle`, for the control plane to change (replicas take the
    /// change over); the data plane uses [`TableState::entry_at_mut`].
    pub fn get_mut(&mut self, handle: u32) -> Option<&mut Entry> {
        let i = self.index_of(handle)?;
        self.touched(Some(i), false);
        self.entries.get_mut(i)
    }

    /// The entry at `index` (as returned by [`TableState::lookup`]).
    pub fn entry_at(&self, index: u32) -> Option<&Entry> {
        self.entries.get(index)
    }

    /// The entry at `index`, for the data plane to count a hit or run its meter (not
    /// for changes that replicas need to see: [`TableState::get_mut`]).
    pub fn entry_at_mut(&mut self, index: u32) -> Option<&mut Entry> {
        self.entries.get_mut(index)
    }

    /// Replaces the action of an entry (validated by the caller).
    pub fn modify(&mut self, handle: u32, action: EntryAction) -> Result<()> {
        let i = self.mutable_index(handle)?;
        self.touched(Some(i), false);
        if let Some(e) = self.entries.get_mut(i) {
            e.action = action;
        }
        Ok(())
    }

    /// Deletes an entry; returns it.
    pub fn delete(&mut self, handle: u32) -> Result<Entry> {
        let i = self.mutable_index(handle)?;
        let e = self.entries.remove(i).ok_or(StateError::UnknownHandle {
            table: self.schema.name.clone(),
            handle,
        })?;
        self.matcher.remove(&e.keys, i);
        self.touched(Some(i), false);
        let v = i as usize;
        if self.versions.len() <= v {
            self.versions.resize(v + 1, 0);
        }
        self.versions[v] = self.versions[v].wrapping_add(1);
        Ok(e)
    }

    /// Deletes every entry that is not const; returns the deleted entries.
    pub fn clear(&mut self) -> Result<Vec<Entry>> {
        if self.schema.entries_const {
            return Err(StateError::ConstTable {
                table: self.schema.name.clone(),
            });
        }
        let handles: Vec<u32> = self
            .entries()
            .filter(|e| !e.is_const)
            .map(|e| e.handle)
            .collect();
        handles.into_iter().map(|h| self.delete(h)).collect()
    }

    /// Sets the default action (validated by the caller, const-ness included).
    pub fn set_default(&mut self, action: EntryAction) {
        self.touched(None, false);
        self.default = action;
    }

    /// Restores the program's default action.
    pub fn reset_default(&mut self) {
        self.touched(None, false);
        self.default = EntryAction::Action(self.schema.default_action.call.clone());
    }

    /// The index of the entry `keys` (one value per match field) hits. With `masks`, also
    /// the key bits the result depended on.
    pub fn lookup(&self, keys: &[Bits], masks: Option<&mut Vec<Bits>>) -> Option<u32> {
        if keys.len() != self.schema.keys.len() || keys.is_empty() {
            if let Some(m) = masks {
                m.clear();
            }
            return None;
        }
        let entries = &self.entries;
        self.matcher
            .lookup(keys, |i| entries.get(i).map(|e| &e.keys[..]), masks)
    }

    /// Starts (`on`) or ends the journal of changed slots ([`crate::replica`]).
    pub(crate) fn journal(&mut self, on: bool) {
        self.journal = on.then(|| Journal {
            from: self.generation,
            slots: Vec::new(),
            all: false,
        });
    }

    /// Makes this table a replica's: no journal, and no entry counted or hit (a replica's
    /// counts are what it counted since they were last taken into the master's).
    pub(crate) fn forget_counts(&mut self) {
        self.journal = None;
        for e in self.entries.values_mut() {
            e.forget_counts();
        }
    }

    /// Makes this replica's table what lookups see of `master`'s: slot by slot when the
    /// master's journal covers the change since this table's generation, else whole. Either
    /// way, entries come with their direct counters at zero and no hit time (a replica's
    /// counts are what it counted since they were last taken into the master's).
    pub(crate) fn follow(&mut self, master: &TableState) {
        if self.generation == master.generation {
            return;
        }
        match &master.journal {
            Some(j) if !j.all && j.from == self.generation => {
                for &i in &j.slots {
                    if let Some(old) = self.entries.remove(i) {
                        self.matcher.remove(&old.keys, i);
                    }
                    if let Some(e) = master.entries.get(i) {
                        let mut e = e.clone();
                        e.forget_counts();
                        self.matcher.insert(&e.keys, e.priority.unwrap_or(0), i);
                        self.entries.insert_at(i, e);
                    }
                    let v = i as usize;
                    if self.versions.len() <= v {
                        self.versions.resize(v + 1, 0);
                    }
                    self.versions[v] = master.versions.get(v).copied().unwrap_or(0);
                }
                self.default = master.default.clone();
            }
            _ => {
                *self = master.clone();
                self.forget_counts();
            }
        }
        self.generation = master.generation;
    }

    /// The lookup kind, for messages.
    pub fn lookup_kind(&self) -> LookupKind {
        self.schema.lookup
    }
}
