//! What the data plane (the interpreter, later the datapath's slow path) does to the state
//! while processing a packet: table lookups and hits (direct counters, direct meters, idle
//! time), register, counter and meter accesses by extern id, profile members, value set
//! membership, replication, clone sessions, digests.

use crate::arrays::{CounterValue, RegisterArray};
use crate::meter::{Color, Meter, tokens};
use crate::pre::{MirrorTarget, Replica};
use crate::state::{ExternState, State};
use crate::table::{Entry, EntryAction};
use crate::value_set::DigestMessage;
use koi_ir::entity::EntityId;
use koi_ir::{ActionCall, Bits, ExternId, TableId, ValueSetId};

/// The result of looking a key up in a table.
#[derive(Clone, Debug, PartialEq)]
pub enum Lookup<'a> {
    /// Entry `index` matched.
    Hit { index: u32, entry: &'a Entry },
    /// No entry matched: the default action runs.
    Miss { default: &'a EntryAction },
}

impl State {
    /// Looks `keys` (one value per match field, selector fields excluded) up in table `t`.
    /// With `masks`, also returns per field the key bits the result depended on. An unknown
    /// table is a miss with no action (`None`).
    pub fn lookup(
        &self,
        t: TableId,
        keys: &[Bits],
        masks: Option<&mut Vec<Bits>>,
    ) -> Option<Lookup<'_>> {
        let tb = self.table_by_id(t)?;
        Some(match tb.lookup(keys, masks) {
            Some(index) => match tb.entry_at(index) {
                Some(entry) => Lookup::Hit { index, entry },
                None => Lookup::Miss {
                    default: tb.default_action(),
                },
            },
            None => Lookup::Miss {
                default: tb.default_action(),
            },
        })
    }

    /// Records a hit of entry `index` of table `t` by a packet of `bytes` bytes (its length
    /// when it entered the parser): the direct counter counts it and, in a table with
    /// `support_timeout`, its idle time restarts. A hit in a table with neither changes
    /// nothing ([`State::hit_recorded`]).
    pub fn record_hit(&mut self, t: TableId, index: u32, bytes: usize, now_ns: u64) {
        let replica = self.link.is_some();
        let Some(tb) = self.table_by_id_mut(t) else {
            return;
        };
        let (counted, timed) = (
            tb.schema.direct_counter.is_some(),
            tb.schema.support_timeout,
        );
        let Some(e) = tb.entry_at_mut(index) else {
            return;
        };
        let fresh = e.last_hit_ns == 0 && e.counter == CounterValue::default();
        if counted {
            e.counter.count(bytes);
        }
        if timed {
            // A replica's 0 means "not hit since the last fold".
            e.last_hit_ns = if replica { now_ns.max(1) } else { now_ns };
        }
        if replica && fresh && (counted || timed) {
            self.note_hit(t, index);
        }
    }

    /// Whether [`State::record_hit`] changes anything for table `t`'s hits.
    pub fn hit_recorded(t: &koi_ir::Table) -> bool {
        t.direct_counter.is_some() || t.support_timeout
    }

    /// Executes the direct meter of entry `index` of table `t`; `None` if the table has none.
    pub fn execute_direct_meter(
        &mut self,
        t: TableId,
        index: u32,
        bytes: usize,
        now_ns: u64,
    ) -> Option<Color> {
        let s = self.stateful();
        let m = s.table_by_id(t)?.schema.direct_meter?;
        let ExternState::DirectMeter { unit, .. } = s.extern_state(m)? else {
            return None;
        };
        let n = tokens(*unit, bytes);
        let e = s.table_by_id_mut(t)?.entry_at_mut(index)?;
        Some(e.meter.execute(now_ns, n))
    }

    /// Executes meter `m` at `index`; `None` when out of range or not a meter.
    pub fn execute_meter(
        &mut self,
        m: ExternId,
        index: u64,
        bytes: usize,
        now_ns: u64,
    ) -> Option<Color> {
        let ExternState::Meter(a) = self.stateful().extern_state_mut(m)? else {
            return None;
        };
        let n = tokens(a.unit, bytes);
        let cell = a.cells.get_mut(index)?;
        Some(cell.execute(now_ns, n))
    }

    /// The cell of meter `m` at `index`, for writing (the cached datapath saves and restores
    /// one around an execution it may have to undo); `None` when out of range or not a meter.
    pub fn meter_cell_mut(&mut self, m: ExternId, index: u64) -> Option<&mut Meter> {
        let ExternState::Meter(a) = self.stateful().extern_state_mut(m)? else {
            return None;
        };
        a.cells.get_mut(index)
    }

    /// The direct meter cell of entry `index` of table `t`, for writing (as
    /// [`State::meter_cell_mut`]); `None` if the table has no direct meter or no such entry.
    pub fn direct_meter_cell_mut(&mut self, t: TableId, index: u32) -> Option<&mut Meter> {
        let s = self.stateful();
        s.table_by_id(t)?.schema.direct_meter?;
        Some(&mut s.table_by_id_mut(t)?.entry_at_mut(index)?.meter)
    }

    /// Register `r` of this state (a replica's are not the ones packets use: the data plane
    /// reads registers through [`State::register_mut`]).
    pub fn register(&self, r: ExternId) -> Option<&RegisterArray> {
        match self.extern_state(r)? {
            ExternState::Register(a) => Some(a),
            _ => None,
        }
    }

    /// Register `r`, for reading and writing, as packets use it: a replica's master's (its
    /// lock held until [`State::packet_done`]).
    pub fn register_mut(&mut self, r: ExternId) -> Option<&mut RegisterArray> {
        match self.stateful().extern_state_mut(r)? {
            ExternState::Register(a) => Some(a),
            _ => None,
        }
    }

    /// Counts a packet of `bytes` bytes in counter `c` at `index`; false if out of range.
    pub fn count(&mut self, c: ExternId, index: u64, bytes: usize) -> bool {
        let fresh = match self.counter_array_mut(c).and_then(|a| a.get_mut(index)) {
            Some(cell) => {
                let fresh = *cell == CounterValue::default();
                cell.count(bytes);
                fresh
            }
            None => return false,
        };
        if fresh {
            self.note_count(c, index);
        }
        true
    }

    /// Adds `packets` to the packet count of counter `c` at `index` (eBPF's
    /// `CounterArray.add`); false if out of range.
    pub fn count_add(&mut self, c: ExternId, index: u64, packets: u64) -> bool {
        let fresh = match self.counter_array_mut(c).and_then(|a| a.get_mut(index)) {
            Some(cell) => {
                let fresh = *cell == CounterValue::default();
                cell.packets = cell.packets.wrapping_add(packets);
                fresh
            }
            None => return false,
        };
        if fresh {
            self.note_count(c, index);
        }
        true
    }

    /// The action of member `m` of the profile `p`.
    pub fn profile_member(&self, p: ExternId, m: u32) -> Option<&ActionCall> {
        match self.extern_state(p)? {
            ExternState::Profile(prof) => prof.members.get(m).map(|x| &x.call),
            _ => None,
        }
    }

    /// The member group `g` of profile `p` chooses for `hash`; `None` for an unknown or
    /// empty group.
    pub fn profile_choose(&self, p: ExternId, g: u32, hash: u64) -> Option<u32> {
        match self.extern_state(p)? {
            ExternState::Profile(prof) => prof.choose(g, hash),
            _ => None,
        }
    }

    /// Whether `keys` is a member of value set `v`.
    pub fn value_set_contains(&self, v: ValueSetId, keys: &[Bits]) -> bool {
        self.value_sets
            .get(v.index() as usize)
            .is_some_and(|s| s.contains(keys))
    }

    /// The copies multicast group `g` makes.
    pub fn replicate(&self, g: u32) -> Vec<Replica> {
        self.pre.replicate(g)
    }

    /// Where clone session `s` copies to, if configured.
    pub fn mirror_session(&self, s: u64) -> Option<MirrorTarget> {
        self.mirroring.get(s)
    }

    /// Queues a digest message for the control plane.
    pub fn push_digest(&mut self, m: DigestMessage) {
        self.digests.push(m);
    }

    /// Entries of tables with `support_timeout` idle for longer than their timeout at
    /// `now_ns`: `(table, handle)` pairs for idle-timeout notifications.
    pub fn idle_entries(&self, now_ns: u64) -> Vec<(TableId, u32)> {
        self.tables()
            .filter(|t| t.schema.support_timeout)
            .flat_map(|t| {
                t.entries()
                    .filter(move |e| {
                        e.timeout_ns
                            .is_some_and(|to| now_ns.saturating_sub(e.last_hit_ns) > to)
                    })
                    .map(move |e| (t.schema.id, e.handle))
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use koi_ir::{ExternId, Pipeline};

    #[test]
    fn unknown_ids_are_misses_not_panics() {
        let p = Pipeline::new(koi_ir::Architecture::V1Model);
        let mut s = State::new(&p).unwrap();
        assert!(s.lookup(TableId::new(3), &[], None).is_none());
        assert!(s.execute_meter(ExternId::new(0), 0, 1, 0).is_none());
        assert!(!s.count(ExternId::new(0), 0, 1));
        assert!(s.register(ExternId::new(9)).is_none());
        assert!(!s.value_set_contains(ValueSetId::new(0), &[]));
        s.record_hit(TableId::new(0), 0, 1, 0);
        assert!(s.execute_direct_meter(TableId::new(0), 0, 1, 0).is_none());
        assert!(s.replicate(1).is_empty());
        assert!(s.idle_entries(0).is_empty());
    }
}
