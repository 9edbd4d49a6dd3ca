//! Undo logs: each update records, as it changes koi-state or the [`Target`], how to take the
//! change back; [`rollback`] applies them newest first. Every step restores exactly what was
//! there (entry handles, member, group and node handles, counter values, meter buckets), so a
//! rolled-back batch leaves the state as a copy taken before it.

use crate::target::{GroupData, McRecord, Target};
use koi_ir::{ActionCall, Bits, ExternId, Pattern, TableId, ValueSetId};
use koi_proto::p4runtime::{ActionProfileActionSet, CloneSessionEntry, digest_entry};
use koi_state::{
    Cookie, CounterValue, Entry, EntryAction, GroupImage, MirrorTarget, State, arrays, meter,
};
use std::collections::BTreeSet;

/// One change, with what it replaced.
#[derive(Clone, Debug)]
pub(crate) enum Step {
    EntryAdded {
        table: TableId,
        handle: u32,
    },
    EntryRemoved {
        table: TableId,
        entry: Box<Entry>,
    },
    EntryChanged {
        table: TableId,
        old: Box<Entry>,
    },
    DefaultChanged {
        table: TableId,
        action: EntryAction,
    },
    DefaultCookie {
        table: TableId,
        before: Option<Cookie>,
    },
    MemberAdded {
        profile: ExternId,
        handle: u32,
    },
    MemberChanged {
        profile: ExternId,
        handle: u32,
        call: ActionCall,
    },
    MemberRemoved {
        profile: ExternId,
        handle: u32,
        call: ActionCall,
    },
    MemberId {
        profile: ExternId,
        id: u32,
        before: Option<u32>,
    },
    GroupAdded {
        profile: ExternId,
        handle: u32,
    },
    GroupMembers {
        profile: ExternId,
        handle: u32,
        before: BTreeSet<u32>,
    },
    GroupRemoved {
        profile: ExternId,
        handle: u32,
        members: BTreeSet<u32>,
    },
    GroupData {
        profile: ExternId,
        id: u32,
        before: Option<GroupData>,
    },
    OneShot {
        profile: ExternId,
        handle: u32,
        before: Option<ActionProfileActionSet>,
    },
    RegisterCell {
        ext: ExternId,
        index: u64,
        old: Bits,
    },
    RegisterAll {
        ext: ExternId,
        old: Box<arrays::RegisterArray>,
    },
    CounterCell {
        ext: ExternId,
        index: u64,
        old: CounterValue,
    },
    CounterAll {
        ext: ExternId,
        old: Box<arrays::CounterArray>,
    },
    MeterCell {
        ext: ExternId,
        index: u64,
        old: Box<meter::Meter>,
    },
    MeterAll {
        ext: ExternId,
        old: Box<arrays::MeterArray>,
    },
    McGroup {
        group: u32,
        before: Option<GroupImage>,
    },
    McRecord {
        group: u32,
        before: Option<McRecord>,
    },
    Mirror {
        session: u32,
        before: Option<MirrorTarget>,
    },
    CloneRecord {
        session: u32,
        before: Option<CloneSessionEntry>,
    },
    ValueSet {
        vs: ValueSetId,
        members: Vec<Vec<Pattern>>,
    },
    Digest {
        id: u32,
        before: Option<digest_entry::Config>,
    },
}

/// How to take back updates applied so far (for `ROLLBACK_ON_ERROR` and `DATAPLANE_ATOMIC`
/// batches): pass the same `Undo` to every [`crate::apply`] of a batch, then give it to
/// [`crate::rollback`] if the batch must not stay (or drop it if it may).
#[derive(Clone, Debug, Default)]
pub struct Undo {
    pub(crate) steps: Vec<Step>,
}

impl Undo {
    /// Whether nothing was recorded.
    pub fn is_empty(&self) -> bool {
        self.steps.is_empty()
    }

    /// How many changes were recorded.
    pub fn len(&self) -> usize {
        self.steps.len()
    }

    pub(crate) fn push(&mut self, s: Step) {
        self.steps.push(s);
    }

    pub(crate) fn append(&mut self, other: &mut Undo) {
        self.steps.append(&mut other.steps);
    }
}

/// Restores the state (and the Target's own data) to what it was before the updates recorded
/// in `undo`, newest first. The flow caches should then be invalidated whole.
pub fn rollback(t: &mut Target, s: &mut State, undo: Undo) {
    for step in undo.steps.into_iter().rev() {
        let r = undo_step(t, s, step);
        debug_assert!(r.is_ok(), "undo failed: {r:?}");
    }
}

fn profile_name(s: &State, e: ExternId) -> String {
    s.extern_name(e).unwrap_or_default().to_string()
}

fn action_name(s: &State, call: &ActionCall) -> String {
    s.action_schema(call.action)
        .map(|a| a.name.clone())
        .unwrap_or_default()
}

fn undo_step(t: &mut Target, s: &mut State, step: Step) -> koi_state::error::Result<()> {
    use Step::*;
    let data = &mut t.data;
    match step {
        EntryAdded { table, handle } => s.table_unadd(table, handle).map(|_| ()),
        EntryRemoved { table, entry } => s.table_restore(table, *entry),
        EntryChanged { table, old } => s.table_replace(table, *old),
        DefaultChanged { table, action } => s.table_restore_default(table, action),
        DefaultCookie { table, before } => {
            match before {
                Some(c) => data.default_cookies.insert(table, c),
                None => data.default_cookies.remove(&table),
            };
            Ok(())
        }
        MemberAdded { profile, handle } => {
            s.profile_delete_member(&profile_name(s, profile), handle)
        }
        MemberChanged {
            profile,
            handle,
            call,
        } => s.profile_modify_member(
            &profile_name(s, profile),
            handle,
            &action_name(s, &call),
            &call.args,
        ),
        MemberRemoved {
            profile,
            handle,
            call,
        } => s.profile_restore_member(profile, handle, call),
        MemberId {
            profile,
            id,
            before,
        } => {
            data.profiles
                .entry(profile)
                .or_default()
                .set_member(id, before);
            Ok(())
        }
        GroupAdded { profile, handle } => s.profile_delete_group(&profile_name(s, profile), handle),
        GroupMembers {
            profile,
            handle,
            before,
        } => set_group_members(s, profile, handle, &before),
        GroupRemoved {
            profile,
            handle,
            members,
        } => {
            s.profile_restore_group(profile, handle)?;
            set_group_members(s, profile, handle, &members)
        }
        GroupData {
            profile,
            id,
            before,
        } => {
            data.profiles
                .entry(profile)
                .or_default()
                .set_group(id, before);
            Ok(())
        }
        OneShot {
            profile,
            handle,
            before,
        } => {
            let p = data.profiles.entry(profile).or_default();
            match before {
                Some(set) => p.oneshots.insert(handle, set),
                None => p.oneshots.remove(&handle),
            };
            Ok(())
        }
        RegisterCell { ext, index, old } => {
            if let Some(r) = s.register_mut(ext) {
                r.set(index, &old);
            }
            Ok(())
        }
        RegisterAll { ext, old } => {
            if let Some(r) = s.register_mut(ext) {
                *r = *old;
            }
            Ok(())
        }
        CounterCell { ext, index, old } => {
            if let Some(c) = s.counter_array_mut(ext).and_then(|a| a.get_mut(index)) {
                *c = old;
            }
            Ok(())
        }
        CounterAll { ext, old } => {
            if let Some(a) = s.counter_array_mut(ext) {
                *a = *old;
            }
            Ok(())
        }
        MeterCell { ext, index, old } => {
            if let Some(m) = s.meter_cell_mut(ext, index) {
                *m = *old;
            }
            Ok(())
        }
        MeterAll { ext, old } => {
            if let Some(a) = s.meter_array_mut(ext) {
                *a = *old;
            }
            Ok(())
        }
        McGroup { group, before } => {
            if s.pre.group_image(group).is_some() {
                s.pre.group_remove_with_nodes(group)?;
            }
            match before {
                Some(image) => s.pre.group_restore(&image),
                None => Ok(()),
            }
        }
        McRecord { group, before } => {
            match before {
                Some(r) => data.mc.insert(group, r),
                None => data.mc.remove(&group),
            };
            Ok(())
        }
        Mirror { session, before } => {
            let id = u64::from(session);
            match before {
                Some(target) => s.mirroring.add(id, target),
                None => s.mirroring.delete(id).or(Ok(())),
            }
        }
        CloneRecord { session, before } => {
            match before {
                Some(r) => data.clones.insert(session, r),
                None => data.clones.remove(&session),
            };
            Ok(())
        }
        ValueSet { vs, members } => {
            let name = s.value_set_name(vs).unwrap_or_default().to_string();
            s.value_set_clear(&name)?;
            members.iter().try_for_each(|m| s.value_set_add(&name, m))
        }
        Digest { id, before } => {
            match before {
                Some(c) => data.digests.insert(id, c),
                None => data.digests.remove(&id),
            };
            Ok(())
        }
    }
}

/// Makes group `handle` of profile `e` hold exactly `members`.
pub(crate) fn set_group_members(
    s: &mut State,
    e: ExternId,
    handle: u32,
    members: &BTreeSet<u32>,
) -> koi_state::error::Result<()> {
    let name = profile_name(s, e);
    let now: BTreeSet<u32> = s
        .profile_by_id(e)
        .and_then(|p| p.groups.get(handle))
        .map(|g| g.members.clone())
        .unwrap_or_default();
    for m in now.difference(members) {
        s.profile_remove_from_group(&name, *m, handle)?;
    }
    for m in members.difference(&now) {
        s.profile_add_to_group(&name, *m, handle)?;
    }
    Ok(())
}
