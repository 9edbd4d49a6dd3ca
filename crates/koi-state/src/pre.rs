//! The packet replication engine: multicast groups of nodes, each node a replication id and a
//! set of ports (BMv2's `McSimplePre`). Node handles are the lowest free, so 0, 1, 2, ... in
//! creation order as STF files assume. A group replicates to its nodes in association order,
//! each node to its ports in ascending order. A node belongs to at most one group. LAGs are
//! accepted and kept but replicate nothing (simple_switch programs do not use them).

use crate::error::{Result, StateError};
use crate::handles::Slots;
use std::collections::{BTreeMap, BTreeSet};

/// A multicast node.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct McNode {
    pub rid: u16,
    pub ports: BTreeSet<u32>,
    pub lags: BTreeSet<u32>,
    pub group: Option<u32>,
}

/// One copy a group makes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Replica {
    pub rid: u16,
    pub port: u32,
}

/// Groups and nodes.
#[derive(Clone, Debug, Default)]
pub struct Pre {
    groups: BTreeMap<u32, Vec<u32>>,
    nodes: Slots<McNode>,
    /// Largest port number a node may list.
    pub max_port: u32,
}

fn err<T>(msg: String) -> Result<T> {
    Err(StateError::Multicast(msg))
}

impl Pre {
    pub fn new(max_port: u32) -> Pre {
        Pre {
            max_port,
            ..Pre::default()
        }
    }

    pub fn group_create(&mut self, group: u32) -> Result<()> {
        if self.groups.contains_key(&group) {
            return err(format!("group {group} already exists"));
        }
        self.groups.insert(group, Vec::new());
        Ok(())
    }

    /// Destroys a group; its nodes are dissociated, not destroyed.
    pub fn group_destroy(&mut self, group: u32) -> Result<()> {
        let Some(nodes) = self.groups.remove(&group) else {
            return err(format!("group {group} does not exist"));
        };
        for n in nodes {
            if let Some(node) = self.nodes.get_mut(n) {
                node.group = None;
            }
        }
        Ok(())
    }

    fn check_ports(&self, ports: &[u64]) -> Result<BTreeSet<u32>> {
        ports
            .iter()
            .map(|&p| match u32::try_from(p) {
                Ok(p) if p <= self.max_port => Ok(p),
                _ => err(format!("port {p} is above {}", self.max_port)),
            })
            .collect()
    }

    fn check_lags(lags: &[u64]) -> Result<BTreeSet<u32>> {
        lags.iter()
            .map(|&l| u32::try_from(l).or_else(|_| err(format!("bad LAG index {l}"))))
            .collect()
    }

    /// Creates a node; returns its handle.
    pub fn node_create(&mut self, rid: u64, ports: &[u64], lags: &[u64]) -> Result<u32> {
        let rid = u16::try_from(rid)
            .or_else(|_| err(format!("replication id {rid} does not fit in 16 bits")))?;
        let ports = self.check_ports(ports)?;
        let lags = Pre::check_lags(lags)?;
        Ok(self.nodes.insert(McNode {
            rid,
            ports,
            lags,
            group: None,
        }))
    }

    /// Replaces a node's ports and LAGs.
    pub fn node_update(&mut self, node: u32, ports: &[u64], lags: &[u64]) -> Result<()> {
        let ports = self.check_ports(ports)?;
        let lags = Pre::check_lags(lags)?;
        let Some(n) = self.nodes.get_mut(node) else {
            return err(format!("node {node} does not exist"));
        };
        n.ports = ports;
        n.lags = lags;
        Ok(())
    }

    /// Destroys a node, dissociating it from its group first.
    pub fn node_destroy(&mut self, node: u32) -> Result<()> {
        let Some(n) = self.nodes.remove(node) else {
            return err(format!("node {node} does not exist"));
        };
        if let Some(g) = n.group.and_then(|g| self.groups.get_mut(&g)) {
            g.retain(|x| *x != node);
        }
        Ok(())
    }

    pub fn associate(&mut self, group: u32, node: u32) -> Result<()> {
        if !self.groups.contains_key(&group) {
            return err(format!("group {group} does not exist"));
        }
        let Some(n) = self.nodes.get_mut(node) else {
            return err(format!("node {node} does not exist"));
        };
        if let Some(g) = n.group {
            return err(format!("node {node} is already associated with group {g}"));
        }
        n.group = Some(group);
        self.groups.entry(group).or_default().push(node);
        Ok(())
    }

    pub fn dissociate(&mut self, group: u32, node: u32) -> Result<()> {
        let Some(members) = self.groups.get_mut(&group) else {
            return err(format!("group {group} does not exist"));
        };
        match self.nodes.get_mut(node) {
            Some(n) if n.group == Some(group) => {
                n.group = None;
                members.retain(|x| *x != node);
                Ok(())
            }
            _ => err(format!("node {node} is not associated with group {group}")),
        }
    }

    /// The copies `group` makes (none for an unknown group).
    pub fn replicate(&self, group: u32) -> Vec<Replica> {
        let Some(nodes) = self.groups.get(&group) else {
            return Vec::new();
        };
        nodes
            .iter()
            .filter_map(|&n| self.nodes.get(n))
            .flat_map(|n| n.ports.iter().map(|&port| Replica { rid: n.rid, port }))
            .collect()
    }

    /// Groups with their node handles, in group order.
    pub fn groups(&self) -> impl Iterator<Item = (u32, &[u32])> {
        self.groups.iter().map(|(g, n)| (*g, &n[..]))
    }

    pub fn node(&self, node: u32) -> Option<&McNode> {
        self.nodes.get(node)
    }

    /// How many groups exist.
    pub fn group_count(&self) -> usize {
        self.groups.len()
    }

    /// How many nodes exist (associated with a group or not).
    pub fn node_count(&self) -> usize {
        self.nodes.len()
    }

    /// Removes every group and node.
    pub fn clear(&mut self) {
        self.groups.clear();
        self.nodes.clear();
    }

    /// A copy of `group` and its nodes (with their handles), if it exists.
    pub fn group_image(&self, group: u32) -> Option<GroupImage> {
        let nodes = self.groups.get(&group)?;
        Some(GroupImage {
            group,
            nodes: nodes
                .iter()
                .filter_map(|&n| Some((n, self.nodes.get(n)?.clone())))
                .collect(),
        })
    }

    /// Destroys `group` and every node associated with it; returns what it was.
    pub fn group_remove_with_nodes(&mut self, group: u32) -> Result<GroupImage> {
        let Some(image) = self.group_image(group) else {
            return err(format!("group {group} does not exist"));
        };
        for (n, _) in &image.nodes {
            self.nodes.remove(*n);
        }
        self.groups.remove(&group);
        Ok(image)
    }

    /// Puts back a group [`Pre::group_remove_with_nodes`] removed, its nodes under their old
    /// handles (an exact undo); refused, changing nothing, if the group or a handle is taken.
    pub fn group_restore(&mut self, image: &GroupImage) -> Result<()> {
        let g = image.group;
        if self.groups.contains_key(&g) {
            return err(format!("group {g} already exists"));
        }
        if let Some((n, _)) = image
            .nodes
            .iter()
            .find(|(n, _)| self.nodes.get(*n).is_some())
        {
            return err(format!("node {n} already exists"));
        }
        for (n, node) in &image.nodes {
            let node = McNode {
                group: Some(g),
                ..node.clone()
            };
            self.nodes.insert_at(*n, node);
        }
        self.groups
            .insert(g, image.nodes.iter().map(|(n, _)| *n).collect());
        Ok(())
    }
}

/// A multicast group with its nodes in association order, each with its handle.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GroupImage {
    pub group: u32,
    pub nodes: Vec<(u32, McNode)>,
}

/// A clone (mirroring) session: copies go to a port or to a multicast group.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MirrorTarget {
    Port(u32),
    Group(u32),
}

/// The largest clone session id (BMv2's `MAX_MIRROR_SESSION_ID`).
pub const MAX_MIRROR_SESSION: u32 = 32767;

/// Clone sessions by id.
#[derive(Clone, Debug, Default)]
pub struct Mirroring {
    sessions: BTreeMap<u32, MirrorTarget>,
}

impl Mirroring {
    /// Configures (or reconfigures) a session.
    pub fn add(&mut self, session: u64, target: MirrorTarget) -> Result<()> {
        let s = Mirroring::id(session)?;
        self.sessions.insert(s, target);
        Ok(())
    }

    pub fn delete(&mut self, session: u64) -> Result<()> {
        let s = Mirroring::id(session)?;
        match self.sessions.remove(&s) {
            Some(_) => Ok(()),
            None => Err(StateError::Mirroring(format!(
                "session {session} does not exist"
            ))),
        }
    }

    /// Every session in id order.
    pub fn iter(&self) -> impl Iterator<Item = (u32, MirrorTarget)> + '_ {
        self.sessions.iter().map(|(s, t)| (*s, *t))
    }

    /// How many sessions are configured.
    pub fn len(&self) -> usize {
        self.sessions.len()
    }

    pub fn is_empty(&self) -> bool {
        self.sessions.is_empty()
    }

    pub fn get(&self, session: u64) -> Option<MirrorTarget> {
        let s = u32::try_from(session).ok()?;
        self.sessions.get(&s).copied()
    }

    fn id(session: u64) -> Result<u32> {
        match u32::try_from(session) {
            Ok(s) if s <= MAX_MIRROR_SESSION => Ok(s),
            _ => Err(StateError::Mirroring(format!(
                "session {session} is above {MAX_MIRROR_SESSION}"
            ))),
        }
    }

    pub fn clear(&mut self) {
        self.sessions.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn groups_replicate_nodes_in_association_order() {
        let mut pre = Pre::new(511);
        assert_eq!(pre.node_create(5, &[3, 0], &[]), Ok(0));
        assert_eq!(pre.node_create(10, &[7], &[]), Ok(1));
        pre.group_create(1113).unwrap();
        pre.associate(1113, 1).unwrap();
        pre.associate(1113, 0).unwrap();
        let r = |rid, port| Replica { rid, port };
        assert_eq!(pre.replicate(1113), [r(10, 7), r(5, 0), r(5, 3)]);
        assert!(pre.associate(1113, 0).is_err());
        assert!(pre.node_create(1 << 16, &[1], &[]).is_err());
        assert!(pre.node_create(1, &[512], &[]).is_err());
        pre.dissociate(1113, 1).unwrap();
        assert!(pre.dissociate(1113, 1).is_err());
        assert_eq!(pre.replicate(1113), [r(5, 0), r(5, 3)]);
        pre.node_destroy(0).unwrap();
        assert!(pre.replicate(1113).is_empty());
        assert_eq!(pre.node_create(1, &[2], &[]), Ok(0));
        assert!(pre.group_create(1113).is_err());
        pre.group_destroy(1113).unwrap();
        assert!(pre.replicate(1113).is_empty());
    }

    #[test]
    fn group_images_restore_exactly() {
        let mut pre = Pre::new(511);
        pre.node_create(1, &[1], &[]).unwrap();
        pre.group_create(7).unwrap();
        let a = pre.node_create(2, &[2, 3], &[]).unwrap();
        let b = pre.node_create(3, &[4], &[]).unwrap();
        pre.associate(7, b).unwrap();
        pre.associate(7, a).unwrap();
        let before = pre.replicate(7);
        let image = pre.group_remove_with_nodes(7).unwrap();
        assert!(pre.replicate(7).is_empty() && pre.node(a).is_none());
        assert_eq!(pre.node_create(9, &[9], &[]), Ok(1));
        assert!(pre.group_restore(&image).is_err());
        pre.node_destroy(1).unwrap();
        pre.group_restore(&image).unwrap();
        assert_eq!(pre.replicate(7), before);
        assert_eq!(pre.group_image(7), Some(image));
        assert!(pre.group_remove_with_nodes(8).is_err());
    }

    #[test]
    fn mirroring_sessions() {
        let mut m = Mirroring::default();
        m.add(5, MirrorTarget::Port(7)).unwrap();
        assert_eq!(m.get(5), Some(MirrorTarget::Port(7)));
        m.add(5, MirrorTarget::Group(22)).unwrap();
        assert_eq!(m.get(5), Some(MirrorTarget::Group(22)));
        assert!(m.add(32768, MirrorTarget::Port(1)).is_err());
        m.add(2, MirrorTarget::Port(1)).unwrap();
        let all: Vec<_> = m.iter().collect();
        assert_eq!(
            all,
            [(2, MirrorTarget::Port(1)), (5, MirrorTarget::Group(22))]
        );
        m.delete(5).unwrap();
        assert!(m.delete(5).is_err());
        assert_eq!(m.get(5), None);
    }
}
