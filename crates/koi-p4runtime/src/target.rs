//! The [`Target`]: what the P4Runtime server knows of one loaded program besides koi-state.
//!
//! - The resolved P4Info (module `schema`): P4Info ids to koi-state's tables, actions,
//!   parameters, externs, value sets and digests, controller header layouts, translations.
//! - The strings given data-plane values by `@p4runtime_translation(..., string)` types.
//! - The controller's own data that koi-state does not keep: the P4Runtime ids of action
//!   profile members and groups (koi-state numbers them itself) with each group's member
//!   list as written, one-shot action sets, the replica lists and cookies of multicast groups
//!   and clone sessions as written, digest configurations, and the default entries' cookies.
//!   Table entries keep their cookies in koi-state ([`koi_state::Cookie`]).
//!
//! Everything here changes only through [`crate::apply`] and [`crate::rollback`] (and
//! [`crate::idle_notifications`], which marks entries in koi-state).

use crate::error::Result;
use crate::schema::Schema;
use crate::translate::Strings;
use koi_ir::{ExternId, TableId};
use koi_proto::p4info::P4Info;
use koi_proto::p4runtime::{
    ActionProfileActionSet, CloneSessionEntry, Replica, action_profile_group, digest_entry,
};
use koi_state::{Cookie, State};
use std::collections::{BTreeMap, HashMap};

/// What the P4Runtime server knows of one loaded program besides koi-state: maps from P4Info
/// ids to koi-state's tables/actions/params/externs/value sets/digests, the controller header
/// layouts, the digest configs written by the controller, `@p4runtime_translation` maps, and
/// the controller's ids and cookies of members, groups, multicast groups and clone sessions.
#[derive(Clone, Debug)]
pub struct Target {
    pub(crate) p4info: P4Info,
    pub(crate) schema: Schema,
    pub(crate) strings: Strings,
    pub(crate) data: Data,
}

impl Target {
    /// `p4info` is koi's own P4Info for the program that `state` was built from. Refused
    /// (`INVALID_ARGUMENT`) when an object of the P4Info is not in the state.
    pub fn new(p4info: P4Info, state: &State) -> Result<Target> {
        let schema = Schema::build(&p4info, state)?;
        Ok(Target {
            p4info,
            schema,
            strings: Strings::default(),
            data: Data::default(),
        })
    }

    pub fn p4info(&self) -> &P4Info {
        &self.p4info
    }

    /// The target of a new program (its own `p4info`) whose `state` was carried over from
    /// `old`'s by `koi_state::carry`, which keeps entry, member and group handles: the
    /// controller's records that koi-state does not hold follow by name. Member and group ids
    /// of profiles that still exist, one-shot action sets, default-entry cookies of tables
    /// that still exist, digest configs of digests that still exist, multicast and clone
    /// records, and the `@p4runtime_translation` strings given out so far.
    pub fn carried(old: &Target, p4info: P4Info, state: &State) -> Result<Target> {
        let mut t = Target::new(p4info, state)?;
        t.strings = old.strings.clone();
        t.data.mc = old.data.mc.clone();
        t.data.clones = old.data.clones.clone();
        let table_by_name: HashMap<&str, TableId> = t
            .schema
            .tables
            .iter()
            .map(|i| (i.name.as_str(), i.table))
            .collect();
        let profile_by_name: HashMap<&str, ExternId> = t
            .schema
            .profiles
            .iter()
            .map(|p| (p.name.as_str(), p.ext))
            .collect();
        let os = &old.schema;
        let old_table = |k: &TableId| Some(os.tables.get(*os.table_of.get(k)?)?.name.as_str());
        let old_profile =
            |k: &ExternId| Some(os.profiles.get(*os.profile_of.get(k)?)?.name.as_str());
        let old_digest = |k: &u32| Some(os.digests.get(*k)?.name.as_str());
        t.data.default_cookies = renamed(&old.data.default_cookies, old_table, |n| {
            table_by_name.get(n).copied()
        })
        .collect();
        t.data.profiles = renamed(&old.data.profiles, old_profile, |n| {
            profile_by_name.get(n).copied()
        })
        .collect();
        t.data.digests = renamed(&old.data.digests, old_digest, |n| {
            t.schema.digest_by_name.get(n).copied()
        })
        .collect();
        Ok(t)
    }
}

/// The entries of `old` (keyed by an object of the old program) under the key of the new
/// program's object of the same name (`name`: the old key's name; `new`: the new key of a
/// name); those whose object is gone are left out.
fn renamed<'a, K: 'a, N, V: Clone + 'a>(
    old: impl IntoIterator<Item = (&'a K, &'a V)>,
    name: impl Fn(&K) -> Option<&'a str>,
    new: impl Fn(&str) -> Option<N>,
) -> impl Iterator<Item = (N, V)> {
    old.into_iter()
        .filter_map(move |(k, v)| Some((new(name(k)?)?, v.clone())))
}

/// A group of an action selector written with `ActionProfileGroup`.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct GroupData {
    /// koi-state's handle.
    pub handle: u32,
    /// The members as the controller wrote them (read back as written).
    pub members: Vec<action_profile_group::Member>,
    pub max_size: i32,
}

/// The controller's view of one action profile.
#[derive(Clone, Debug, Default)]
pub(crate) struct ProfileData {
    /// P4Runtime member id to koi-state member handle, and back.
    pub members: BTreeMap<u32, u32>,
    pub member_ids: HashMap<u32, u32>,
    /// P4Runtime group id to group, and koi-state group handle back to the id.
    pub groups: BTreeMap<u32, GroupData>,
    pub group_ids: HashMap<u32, u32>,
    /// One-shot action sets, by the handle of the group made for each.
    pub oneshots: HashMap<u32, ActionProfileActionSet>,
}

impl ProfileData {
    /// Maps member `id` to `handle` (or unmaps it); returns the previous handle.
    pub fn set_member(&mut self, id: u32, handle: Option<u32>) -> Option<u32> {
        let before = match handle {
            Some(h) => self.members.insert(id, h),
            None => self.members.remove(&id),
        };
        if let Some(h) = before {
            self.member_ids.remove(&h);
        }
        if let Some(h) = handle {
            self.member_ids.insert(h, id);
        }
        before
    }

    /// Sets group `id` (or removes it); returns what it was.
    pub fn set_group(&mut self, id: u32, g: Option<GroupData>) -> Option<GroupData> {
        let handle = g.as_ref().map(|g| g.handle);
        let before = match g {
            Some(g) => self.groups.insert(id, g),
            None => self.groups.remove(&id),
        };
        if let Some(b) = &before {
            self.group_ids.remove(&b.handle);
        }
        if let Some(h) = handle {
            self.group_ids.insert(h, id);
        }
        before
    }

    /// Whether members or groups were written with `ActionProfileMember`/`Group`.
    pub fn explicit(&self) -> bool {
        !self.members.is_empty() || !self.groups.is_empty()
    }
}

/// A multicast group as the controller wrote it.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct McRecord {
    pub replicas: Vec<Replica>,
    pub metadata: Vec<u8>,
}

/// The controller's data koi-state does not keep.
#[derive(Clone, Debug, Default)]
pub(crate) struct Data {
    pub default_cookies: HashMap<TableId, Cookie>,
    pub profiles: HashMap<ExternId, ProfileData>,
    pub mc: BTreeMap<u32, McRecord>,
    pub clones: BTreeMap<u32, CloneSessionEntry>,
    pub digests: BTreeMap<u32, digest_entry::Config>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn targets_and_undo_logs_can_live_behind_a_lock() {
        fn send_sync<T: Send + Sync + Clone>() {}
        send_sync::<Target>();
        send_sync::<crate::Undo>();
        let mut p = ProfileData::default();
        assert_eq!(p.set_member(5, Some(0)), None);
        assert_eq!(p.set_member(5, Some(1)), Some(0));
        assert_eq!(
            (p.member_ids.get(&1), p.member_ids.get(&0)),
            (Some(&5), None)
        );
        assert_eq!(p.set_member(5, None), Some(1));
        assert!(!p.explicit());
        let g = GroupData {
            handle: 3,
            members: vec![],
            max_size: 0,
        };
        assert_eq!(p.set_group(9, Some(g.clone())), None);
        assert_eq!(p.group_ids.get(&3), Some(&9));
        assert!(p.explicit());
        assert_eq!(p.set_group(9, None), Some(g));
        assert!(p.group_ids.is_empty());
    }
}
