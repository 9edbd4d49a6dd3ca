//! Replicas of a [`State`], one per forwarding thread, so that threads forward at once
//! without sharing a lock: each thread looks tables up in its own replica and counts there,
//! and only what v1model gives per-packet semantics across packets (registers, meters) is
//! reached in the one master state.
//!
//! **What lives where.**
//! - Tables (entries, keys, actions, defaults), action profiles and selectors, value sets,
//!   multicast groups and clone sessions: copied in every replica, read without a lock
//!   shared with other threads. The control plane changes the master; a replica then
//!   [`State::follow`]s: the slots of each table that the update changed (the master keeps a
//!   journal of them while an update runs), or the whole table when the journal cannot say;
//!   profiles, value sets, multicast and mirroring when the update reported a change to
//!   anything but tables.
//! - Counters (direct and indexed) and hit times: counted in the replica, which holds what it
//!   counted since they were last taken; [`State::fold_into`] adds them to the master's
//!   (and the latest hit time wins) and zeroes the replica's. A replica notes each cell it
//!   counts from zero, so a fold costs the cells counted since the last one. The master's
//!   counters are then exact whenever every replica has been folded.
//! - Registers, meters and direct meters: only the master's are used. A replica's first
//!   access in a packet takes the master's lock and holds it until [`State::packet_done`],
//!   so that a packet's reads and writes of them are atomic (v1model's `@atomic`, and
//!   stronger: the whole packet), and packets that touch no register or meter never take it.
//! - Digests: queued in the replica; its thread delivers them.
//!
//! **Protocol** (what `koi-runtime`'s images do): a thread forwards a batch under its
//! replica's lock. A control-plane update (one at a time) folds every replica in turn (its
//! lock, then the master's), runs on the master with the journal on, then makes each replica
//! in turn fold again and follow (its lock, then the master's), and ends the journal. A thread
//! is held up only while its own replica folds and follows, never while the update runs or
//! waits for another thread; the change reaches every replica before the update returns. A
//! fold after the master changed adds a replica's counts of an entry only to that same entry
//! (same handle), so counts of an entry deleted meanwhile go with it. Locks are always taken
//! replica first, then master (a thread's packet that uses a register does the same), so
//! nothing waits in a cycle.

use crate::state::{ExternState, State};
use crate::value_set::DigestQueue;
use koi_ir::entity::EntityId;
use koi_ir::{ExternId, TableId};
use parking_lot::lock_api::ArcMutexGuard;
use parking_lot::{Mutex, RawMutex};
use std::sync::Arc;

/// The master state, shared by the control plane and every replica.
pub type Master = Arc<Mutex<State>>;

/// A replica's tie to its master.
pub(crate) struct Link {
    master: Master,
    /// The master's lock, while a packet uses registers or meters.
    held: Option<ArcMutexGuard<RawMutex, State>>,
    /// Entries whose counter or hit time this replica moved from zero since the last fold.
    pub(crate) hits: Vec<(TableId, u32)>,
    /// Indexed counter cells likewise.
    pub(crate) counts: Vec<(ExternId, u64)>,
}

impl Link {
    fn hold(&mut self) -> &mut State {
        let master = &self.master;
        self.held.get_or_insert_with(|| master.lock_arc())
    }
}

impl Clone for Link {
    fn clone(&self) -> Link {
        Link {
            master: Arc::clone(&self.master),
            held: None,
            hits: self.hits.clone(),
            counts: self.counts.clone(),
        }
    }
}

impl std::fmt::Debug for Link {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Link")
            .field("held", &self.held.is_some())
            .field("hits", &self.hits.len())
            .field("counts", &self.counts.len())
            .finish_non_exhaustive()
    }
}

impl State {
    /// A replica of `of`, the contents of `master` (whose lock the caller holds): the same
    /// tables and configuration, no counts, no digests.
    pub fn replica(master: &Master, of: &State) -> State {
        let mut r = of.clone();
        for t in &mut r.tables {
            t.forget_counts();
        }
        for x in &mut r.externs {
            if let ExternState::Counter(a) = x {
                a.clear();
            }
        }
        r.digests = DigestQueue::default();
        r.digests.capacity = of.digests.capacity;
        r.link = Some(Box::new(Link {
            master: Arc::clone(master),
            held: None,
            hits: Vec::new(),
            counts: Vec::new(),
        }));
        r
    }

    /// Whether this state is a replica of a master.
    pub fn is_replica(&self) -> bool {
        self.link.is_some()
    }

    /// The state whose registers and meters the data plane uses: the master for a replica
    /// (its lock taken, until [`State::packet_done`]), else this one.
    pub(crate) fn stateful(&mut self) -> &mut State {
        if self.link.is_some() {
            return self
                .link
                .as_deref_mut()
                .map(Link::hold)
                .expect("a replica has a link");
        }
        self
    }

    /// Ends a packet: a replica releases the master's lock if the packet took it.
    #[inline]
    pub fn packet_done(&mut self) {
        if let Some(l) = &mut self.link {
            l.held = None;
        }
    }

    /// Adds what this replica counted since the last fold to `master`'s counters (the later
    /// hit time wins) and zeroes its own.
    pub fn fold_into(&mut self, master: &mut State) {
        let Some(link) = self.link.as_deref_mut() else {
            return;
        };
        link.held = None;
        for (t, i) in link.hits.drain(..) {
            let Some(e) = self
                .tables
                .get_mut(t.index() as usize)
                .and_then(|x| x.entry_at_mut(i))
            else {
                continue;
            };
            let (c, at, handle) = (
                std::mem::take(&mut e.counter),
                std::mem::take(&mut e.last_hit_ns),
                e.handle,
            );
            // Only to the same entry: one the master deleted (and perhaps replaced at this
            // slot) since this replica last followed it takes no counts.
            if let Some(m) = master
                .table_by_id_mut(t)
                .and_then(|x| x.entry_at_mut(i))
                .filter(|m| m.handle == handle)
            {
                m.counter.packets = m.counter.packets.wrapping_add(c.packets);
                m.counter.bytes = m.counter.bytes.wrapping_add(c.bytes);
                m.last_hit_ns = m.last_hit_ns.max(at);
            }
        }
        for (x, i) in link.counts.drain(..) {
            let Some(ExternState::Counter(a)) = self.externs.get_mut(x.index() as usize) else {
                continue;
            };
            let Some(c) = a.get_mut(i).map(std::mem::take) else {
                continue;
            };
            if let Some(m) = master.counter_array_mut(x).and_then(|a| a.get_mut(i)) {
                m.packets = m.packets.wrapping_add(c.packets);
                m.bytes = m.bytes.wrapping_add(c.bytes);
            }
        }
        master.now_ns = master.now_ns.max(self.now_ns);
    }

    /// Starts (`on`) or ends the master's journal of the table slots an update changes.
    pub fn journal(&mut self, on: bool) {
        for t in &mut self.tables {
            t.journal(on);
        }
    }

    /// Makes this replica see what `master` holds after an update: every table it changed
    /// (by the master's journal, see [`State::journal`]), and with `others` (the update
    /// reported a change beyond tables) action profiles, value sets, multicast, mirroring and
    /// custom CRC parameters.
    pub fn follow(&mut self, master: &State, others: bool) {
        for (mine, theirs) in self.tables.iter_mut().zip(&master.tables) {
            mine.follow(theirs);
        }
        if others {
            for (mine, theirs) in self.externs.iter_mut().zip(&master.externs) {
                if let ExternState::Profile(p) = theirs {
                    *mine = ExternState::Profile(p.clone());
                }
            }
            self.value_sets.clone_from(&master.value_sets);
            self.pre.clone_from(&master.pre);
            self.mirroring.clone_from(&master.mirroring);
            self.follow_calcs(master);
        }
    }

    /// Notes that this replica counted entry `i` of table `t` from zero.
    #[inline]
    pub(crate) fn note_hit(&mut self, t: TableId, i: u32) {
        if let Some(l) = &mut self.link {
            l.hits.push((t, i));
        }
    }

    /// Notes that this replica counted cell `i` of counter `c` from zero.
    #[inline]
    pub(crate) fn note_count(&mut self, c: ExternId, i: u64) {
        if let Some(l) = &mut self.link {
            l.counts.push((c, i));
        }
    }
}
