//! `PacketReplicationEngineEntry` (spec "PacketReplicationEngineEntry"): multicast groups
//! and clone sessions, on koi-state's multicast engine ([`koi_state::pre`]) and mirroring.
//!
//! A multicast group's replicas become one node per distinct `instance` (the node's
//! replication id, in order of first appearance) with that instance's ports. Ports are SDN
//! ports translated 1:1 (koi has no port map): a `port` bytestring (`OUT_OF_RANGE` if it is
//! not one) or the deprecated `egress_port`, at most the switch's largest port
//! (`INVALID_ARGUMENT`). Group ids are 1..=65535 (v1model's `mcast_grp` is 16 bits), instances
//! at most 65535, `(port, instance)` pairs unique (`INVALID_ARGUMENT`); backup replicas are
//! `UNIMPLEMENTED`. INSERT of an existing group is `ALREADY_EXISTS`, MODIFY and DELETE of a
//! missing one `NOT_FOUND`; MODIFY replaces the group's nodes in one step (a refusal leaves
//! the old ones). The `metadata` cookie is kept for reads.
//!
//! A clone session (ids 1..=32767, BMv2's) with one replica of instance 0 copies to that
//! port; any other replica list copies through a multicast group of its own, numbered
//! [`CLONE_GROUP_BASE`] + session id (out of reach of the data plane's 16-bit `mcast_grp` and
//! hidden from multicast reads). koi-state can neither truncate clones nor give them a class
//! of service: a non-zero `packet_length_bytes` or `class_of_service` is `UNIMPLEMENTED`.
//!
//! Reads give back the replicas as written when koi-state still replicates to exactly those
//! (else as koi-state has them, e.g. after `koi ctl`), with id 0 reading every group or
//! session.

use crate::bytestring::{encode_uint, uint};
use crate::error::{Result, exists, invalid, not_found, out_of_range, unimplemented};
use crate::target::{McRecord, Target};
use crate::undo::Step;
use crate::write::{Cx, Effect, Op};
use koi_ir::Bits;
use koi_proto::p4runtime::{
    CloneSessionEntry, Entity, MulticastGroupEntry, PacketReplicationEngineEntry, Replica, entity,
    packet_replication_engine_entry::Type as P, replica::PortKind,
};
use koi_state::pre::MAX_MIRROR_SESSION;
use koi_state::{MirrorTarget, State};
use std::collections::HashSet;

/// The first id of the multicast groups that clone sessions copy through.
pub const CLONE_GROUP_BASE: u32 = 1 << 31;

/// The largest multicast group id (v1model's `mcast_grp` is `bit<16>`).
pub const MAX_MULTICAST_GROUP: u32 = 0xffff;

/// The port of a replica.
#[allow(deprecated)]
fn port_of(r: &Replica, what: &str) -> Result<u64> {
    match &r.port_kind {
        Some(PortKind::Port(b)) => uint(b, 32)
            .map(|v| v.low_u64())
            .map_err(|e| out_of_range(e.message(&format!("{what}, replica port"), 32))),
        Some(PortKind::EgressPort(p)) => Ok(u64::from(*p)),
        None => Err(invalid(format!("{what}: a replica without port"))),
    }
}

/// The nodes of a replica list: (instance, ports) in order of first appearance.
fn nodes(s: &State, replicas: &[Replica], what: &str) -> Result<Vec<(u64, Vec<u64>)>> {
    let mut seen = HashSet::new();
    let mut out: Vec<(u64, Vec<u64>)> = Vec::new();
    for r in replicas {
        if !r.backup_replicas.is_empty() {
            return Err(unimplemented(format!("{what}: koi has no backup replicas")));
        }
        let port = port_of(r, what)?;
        if port > u64::from(s.pre.max_port) {
            return Err(invalid(format!(
                "{what}: port {port} is above the largest port {}",
                s.pre.max_port
            )));
        }
        let rid = u64::from(r.instance);
        if rid > 0xffff {
            return Err(invalid(format!(
                "{what}: instance {rid} does not fit the 16-bit replication id"
            )));
        }
        if !seen.insert((port, rid)) {
            return Err(invalid(format!(
                "{what}: replica (port {port}, instance {rid}) is listed twice"
            )));
        }
        match out.iter_mut().find(|(i, _)| *i == rid) {
            Some((_, ports)) => ports.push(port),
            None => out.push((rid, vec![port])),
        }
    }
    Ok(out)
}

/// Creates multicast group `g` with `nodes` (validated).
fn build(s: &mut State, g: u32, nodes: &[(u64, Vec<u64>)]) -> Result<()> {
    s.pre.group_create(g)?;
    for (rid, ports) in nodes {
        let n = s.pre.node_create(*rid, ports, &[])?;
        s.pre.associate(g, n)?;
    }
    Ok(())
}

/// Removes group `g` with its nodes if it exists, recording how to put it back.
fn take_group(cx: &mut Cx, g: u32) -> Result<()> {
    let before = match cx.s.pre.group_image(g) {
        Some(_) => Some(cx.s.pre.group_remove_with_nodes(g)?),
        None => None,
    };
    cx.undo.push(Step::McGroup { group: g, before });
    Ok(())
}

pub(crate) fn write(cx: &mut Cx, op: Op, p: &PacketReplicationEngineEntry) -> Result<Effect> {
    match &p.r#type {
        Some(P::MulticastGroupEntry(m)) => multicast(cx, op, m),
        Some(P::CloneSessionEntry(c)) => clone_session(cx, op, c),
        None => Err(invalid("a packet replication engine entry without entry")),
    }
}

fn multicast(cx: &mut Cx, op: Op, m: &MulticastGroupEntry) -> Result<Effect> {
    let g = m.multicast_group_id;
    let what = format!("multicast group {g}");
    if g == 0 || g > MAX_MULTICAST_GROUP {
        return Err(invalid(format!(
            "{what}: ids are 1..={MAX_MULTICAST_GROUP}"
        )));
    }
    let present = cx.s.pre.group_image(g).is_some();
    match (op, present) {
        (Op::Insert, true) => return Err(exists(format!("{what} exists already"))),
        (Op::Modify | Op::Delete, false) => {
            return Err(not_found(format!("{what} does not exist")));
        }
        _ => {}
    }
    let ns = match op {
        Op::Delete => None,
        _ => Some(nodes(cx.s, &m.replicas, &what)?),
    };
    take_group(cx, g)?;
    let record = match ns {
        Some(ns) => {
            build(cx.s, g, &ns)?;
            Some(McRecord {
                replicas: m.replicas.clone(),
                metadata: m.metadata.clone(),
            })
        }
        None => None,
    };
    let before = match record {
        Some(r) => cx.data.mc.insert(g, r),
        None => cx.data.mc.remove(&g),
    };
    cx.undo.push(Step::McRecord { group: g, before });
    Ok(Effect::All)
}

fn clone_session(cx: &mut Cx, op: Op, c: &CloneSessionEntry) -> Result<Effect> {
    let id = c.session_id;
    let what = format!("clone session {id}");
    if id == 0 || id > MAX_MIRROR_SESSION {
        return Err(invalid(format!("{what}: ids are 1..={MAX_MIRROR_SESSION}")));
    }
    let before = cx.s.mirroring.get(u64::from(id));
    match (op, before.is_some()) {
        (Op::Insert, true) => return Err(exists(format!("{what} exists already"))),
        (Op::Modify | Op::Delete, false) => {
            return Err(not_found(format!("{what} does not exist")));
        }
        _ => {}
    }
    let ns = match op {
        Op::Delete => None,
        _ => {
            if c.class_of_service != 0 {
                return Err(unimplemented(format!(
                    "{what}: koi has no class of service for clones"
                )));
            }
            if c.packet_length_bytes < 0 {
                return Err(invalid(format!("{what}: packet_length_bytes is negative")));
            }
            if c.packet_length_bytes != 0 {
                return Err(unimplemented(format!(
                    "{what}: koi does not truncate clones"
                )));
            }
            Some(nodes(cx.s, &c.replicas, &what)?)
        }
    };
    let hidden = CLONE_GROUP_BASE + id;
    cx.undo.push(Step::Mirror {
        session: id,
        before,
    });
    take_group(cx, hidden)?;
    let record = match ns {
        None => {
            cx.s.mirroring.delete(u64::from(id))?;
            None
        }
        Some(ns) => {
            let target = match ns.as_slice() {
                [(0, ports)] if ports.len() == 1 => MirrorTarget::Port(ports[0] as u32),
                _ => {
                    build(cx.s, hidden, &ns)?;
                    MirrorTarget::Group(hidden)
                }
            };
            cx.s.mirroring_add(u64::from(id), target)?;
            Some(c.clone())
        }
    };
    let before = match record {
        Some(r) => cx.data.clones.insert(id, r),
        None => cx.data.clones.remove(&id),
    };
    cx.undo.push(Step::CloneRecord {
        session: id,
        before,
    });
    Ok(Effect::All)
}

/// A replica to `port` with `instance`, as reads show it.
fn replica(port: u32, instance: u16) -> Replica {
    Replica {
        port_kind: Some(PortKind::Port(encode_uint(&Bits::from_u64(
            32,
            u64::from(port),
        )))),
        instance: u32::from(instance),
        backup_replicas: Vec::new(),
    }
}

/// The replicas koi-state's group `g` makes.
fn group_replicas(s: &State, g: u32) -> Vec<Replica> {
    s.replicate(g)
        .iter()
        .map(|r| replica(r.port, r.rid))
        .collect()
}

/// The (port, instance) pairs of a replica list, sorted; `None` if one is malformed.
fn pairs(rs: &[Replica]) -> Option<Vec<(u64, u32)>> {
    let mut v: Vec<(u64, u32)> = rs
        .iter()
        .map(|r| port_of(r, "").ok().map(|p| (p, r.instance)))
        .collect::<Option<_>>()?;
    v.sort_unstable();
    Some(v)
}

/// The written replicas when they are what koi-state has, else koi-state's.
fn as_written(written: Option<&[Replica]>, actual: Vec<Replica>) -> Vec<Replica> {
    match written {
        Some(w) if pairs(w).is_some() && pairs(w) == pairs(&actual) => w.to_vec(),
        _ => actual,
    }
}

pub(crate) fn read(
    t: &Target,
    s: &State,
    p: &PacketReplicationEngineEntry,
    out: &mut dyn FnMut(Entity),
) -> Result<()> {
    let wrap = |x: P| Entity {
        entity: Some(entity::Entity::PacketReplicationEngineEntry(
            PacketReplicationEngineEntry { r#type: Some(x) },
        )),
    };
    match &p.r#type {
        Some(P::MulticastGroupEntry(m)) => {
            for (g, _) in s.pre.groups() {
                if g > MAX_MULTICAST_GROUP
                    || (m.multicast_group_id != 0 && m.multicast_group_id != g)
                {
                    continue;
                }
                let rec = t.data.mc.get(&g);
                out(wrap(P::MulticastGroupEntry(MulticastGroupEntry {
                    multicast_group_id: g,
                    replicas: as_written(rec.map(|r| &r.replicas[..]), group_replicas(s, g)),
                    metadata: rec.map(|r| r.metadata.clone()).unwrap_or_default(),
                })));
            }
            Ok(())
        }
        Some(P::CloneSessionEntry(c)) => {
            for (id, target) in s.mirroring.iter() {
                if c.session_id != 0 && c.session_id != id {
                    continue;
                }
                let actual = match target {
                    MirrorTarget::Port(p) => vec![replica(p, 0)],
                    MirrorTarget::Group(g) => group_replicas(s, g),
                };
                let rec = t.data.clones.get(&id);
                let replicas = as_written(rec.map(|r| &r.replicas[..]), actual);
                let entry = match rec {
                    Some(r) if r.replicas == replicas => r.clone(),
                    _ => CloneSessionEntry {
                        session_id: id,
                        replicas,
                        ..Default::default()
                    },
                };
                out(wrap(P::CloneSessionEntry(entry)));
            }
            Ok(())
        }
        None => Err(invalid("a packet replication engine entry without entry")),
    }
}
