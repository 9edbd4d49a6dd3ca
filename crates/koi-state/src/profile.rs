//! Action profiles and action selectors (BMv2's `ActionProfile`): members are actions with
//! arguments, groups are sets of members. A table with `implementation = <profile>` has
//! entries pointing at a member, or with a selector at a group too; a group's member for a
//! packet is `members[hash % count]` with the members in ascending handle order and `hash`
//! the selector's algorithm over the table's `selector` fields (computed by the
//! interpreter). Members and groups get the lowest free handle. A member used by an entry
//! or a group, and a group used by an entry, cannot be deleted.

use crate::handles::Slots;
use koi_ir::{ActionCall, ActionId, HashAlgo};
use std::collections::BTreeSet;

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Member {
    pub call: ActionCall,
    /// Entries and groups that refer to the member.
    pub refs: u32,
}

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Group {
    pub members: BTreeSet<u32>,
    /// Entries that refer to the group.
    pub refs: u32,
}

/// One action profile or selector.
#[derive(Clone, Debug)]
pub struct Profile {
    pub name: String,
    /// The selector's algorithm, for action selectors.
    pub selector: Option<HashAlgo>,
    pub size: u64,
    /// Actions its members may run: the actions of the tables that use it.
    pub actions: Vec<ActionId>,
    pub members: Slots<Member>,
    pub groups: Slots<Group>,
}

impl Profile {
    pub fn new(name: &str, selector: Option<HashAlgo>, size: u64) -> Profile {
        Profile {
            name: name.to_string(),
            selector,
            size,
            actions: Vec::new(),
            members: Slots::default(),
            groups: Slots::default(),
        }
    }

    /// The member a group chooses for a hash value; `None` for an unknown or empty group.
    pub fn choose(&self, group: u32, hash: u64) -> Option<u32> {
        let g = self.groups.get(group)?;
        let n = g.members.len() as u64;
        if n == 0 {
            return None;
        }
        g.members.iter().nth((hash % n) as usize).copied()
    }

    /// Removes every member and group.
    pub fn clear(&mut self) {
        self.members.clear();
        self.groups.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use koi_ir::entity::EntityId;

    #[test]
    fn groups_choose_members_by_hash_in_handle_order() {
        let mut p = Profile::new("sel", Some(HashAlgo::Crc16), 16);
        let call = ActionCall {
            action: ActionId::new(0),
            args: vec![],
        };
        for _ in 0..3 {
            p.members.insert(Member {
                call: call.clone(),
                refs: 0,
            });
        }
        let g = p.groups.insert(Group::default());
        assert_eq!(p.choose(g, 7), None);
        let grp = p.groups.get_mut(g).unwrap();
        grp.members.insert(2);
        grp.members.insert(0);
        assert_eq!(p.choose(g, 0), Some(0));
        assert_eq!(p.choose(g, 1), Some(2));
        assert_eq!(p.choose(g, 5), Some(2));
        assert_eq!(p.choose(9, 5), None);
    }
}
