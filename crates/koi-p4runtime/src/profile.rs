//! `ActionProfileMember` and `ActionProfileGroup` (spec "Member Programming", "Group
//! Programming").
//!
//! The controller names members and groups with its own ids; koi-state numbers them itself,
//! and the [`crate::Target`] keeps the mapping (and each group's member list as written, for
//! reads). Members: INSERT (`ALREADY_EXISTS`; action required; `RESOURCE_EXHAUSTED` past the
//! profile's size), MODIFY and DELETE (`NOT_FOUND`; `FAILED_PRECONDITION` while a group or an
//! entry uses it). Groups (selectors only): members must exist (`NOT_FOUND`) and appear once
//! (`INVALID_ARGUMENT`); `max_size` follows the spec's rules and may not change in a MODIFY
//! (`INVALID_ARGUMENT`), more members than it is `RESOURCE_EXHAUSTED`; DELETE of a group an
//! entry uses is `FAILED_PRECONDITION`. Weights: 0 (or non-zero when `weights_disallowed`) is
//! `INVALID_ARGUMENT`, and a weight above 1 is `UNIMPLEMENTED` because koi-state's selectors
//! choose among a group's members evenly (hash modulo the member count); watch ports are kept
//! for reads and otherwise ignored. A selector programmed with one-shot action sets takes no
//! members or groups (`INVALID_ARGUMENT`). Reads: profile id 0 reads every profile, member
//! (group) id 0 every member (group); members and groups made by one-shots or by `koi ctl`
//! are not shown.

use crate::action::{self, Use};
use crate::error::{Result, exhausted, exists, invalid, not_found, precondition, unimplemented};
use crate::schema::ProfileInfo;
use crate::target::{GroupData, Target};
use crate::undo::{Step, set_group_members};
use crate::write::{Cx, Effect, Op, object};
use koi_proto::p4runtime::{ActionProfileGroup, ActionProfileMember, Entity, entity};
use koi_state::{ActionSpec, State};
use std::collections::{BTreeSet, HashSet};

/// Checks a member weight against the profile's rules.
pub(crate) fn check_weight(p: &ProfileInfo, w: i32, what: &str) -> Result<()> {
    match (p.weights_disallowed, w) {
        (true, 0) | (false, 1) => Ok(()),
        (true, w) => Err(invalid(format!(
            "{what}: weights are disallowed, got weight {w}"
        ))),
        (false, w) if w < 1 => Err(invalid(format!("{what}: weight {w} is not valid"))),
        (false, w) => Err(unimplemented(format!(
            "{what}: weight {w}: koi's selectors choose members evenly"
        ))),
    }
}

fn one_shot_mode(cx: &Cx, p: &ProfileInfo) -> Result<()> {
    let used = cx
        .data
        .profiles
        .get(&p.ext)
        .is_some_and(|d| !d.oneshots.is_empty());
    if used {
        return Err(invalid(format!(
            "{} is programmed with one-shot action sets: no members or groups",
            p.name
        )));
    }
    Ok(())
}

pub(crate) fn write_member(cx: &mut Cx, op: Op, m: &ActionProfileMember) -> Result<Effect> {
    let p = object(&cx.schema.profiles, m.action_profile_id, "action profile")?;
    if m.member_id == 0 {
        return Err(invalid(format!("{}: a member id of 0 in a write", p.name)));
    }
    let id = m.member_id;
    let handle = cx
        .data
        .profiles
        .get(&p.ext)
        .and_then(|d| d.members.get(&id))
        .copied();
    let missing = || not_found(format!("{} has no member {id}", p.name));
    let owner = p.name.clone();
    let scope_of = |a: u32| p.actions.get(&a).copied();
    let mut spec = || -> Result<(String, Vec<koi_ir::Bits>)> {
        let Some(a) = &m.action else {
            return Err(invalid(format!("{owner}: member {id} needs an action")));
        };
        match action::decode_spec(cx.schema, cx.strings, &owner, &scope_of, a, Use::Member)? {
            ActionSpec::Action { name, args } => Ok((name, args)),
            _ => Err(invalid(format!("{owner}: member {id} needs an action"))),
        }
    };
    match op {
        Op::Insert => {
            if handle.is_some() {
                return Err(exists(format!("{} has a member {id} already", p.name)));
            }
            let (a, args) = spec()?;
            one_shot_mode(cx, p)?;
            let used = cx.s.profile_by_id(p.ext).map_or(0, |x| x.members.len());
            if p.size > 0 && used as u64 >= p.size {
                return Err(exhausted(format!(
                    "{} is full ({} members)",
                    p.name, p.size
                )));
            }
            let h = cx.s.profile_add_member(&p.name, &a, &args)?;
            cx.undo.push(Step::MemberAdded {
                profile: p.ext,
                handle: h,
            });
            let before = cx
                .data
                .profiles
                .entry(p.ext)
                .or_default()
                .set_member(id, Some(h));
            cx.undo.push(Step::MemberId {
                profile: p.ext,
                id,
                before,
            });
        }
        Op::Modify => {
            let h = handle.ok_or_else(missing)?;
            let (a, args) = spec()?;
            let old = cx.s.profile_member(p.ext, h).cloned().ok_or_else(missing)?;
            cx.s.profile_modify_member(&p.name, h, &a, &args)?;
            cx.undo.push(Step::MemberChanged {
                profile: p.ext,
                handle: h,
                call: old,
            });
        }
        Op::Delete => {
            let h = handle.ok_or_else(missing)?;
            let refs =
                cx.s.profile_by_id(p.ext)
                    .and_then(|x| x.members.get(h))
                    .map_or(0, |x| x.refs);
            if refs > 0 {
                return Err(precondition(format!(
                    "{}: member {id} is used by a group or an entry",
                    p.name
                )));
            }
            let call = cx.s.profile_member(p.ext, h).cloned().ok_or_else(missing)?;
            cx.s.profile_delete_member(&p.name, h)?;
            cx.undo.push(Step::MemberRemoved {
                profile: p.ext,
                handle: h,
                call,
            });
            let before = cx
                .data
                .profiles
                .entry(p.ext)
                .or_default()
                .set_member(id, None);
            cx.undo.push(Step::MemberId {
                profile: p.ext,
                id,
                before,
            });
        }
    }
    Ok(Effect::All)
}

/// The koi-state member handles of a group's members, validated.
fn group_members(cx: &Cx, p: &ProfileInfo, g: &ActionProfileGroup) -> Result<BTreeSet<u32>> {
    let what = format!("{}, group {}", p.name, g.group_id);
    let data = cx.data.profiles.get(&p.ext);
    let mut seen = HashSet::with_capacity(g.members.len().min(1 << 16));
    let mut handles = BTreeSet::new();
    for m in &g.members {
        if !seen.insert(m.member_id) {
            return Err(invalid(format!(
                "{what}: member {} is listed twice",
                m.member_id
            )));
        }
        check_weight(p, m.weight, &what)?;
        let h = data.and_then(|d| d.members.get(&m.member_id)).copied();
        let h = h.ok_or_else(|| not_found(format!("{what}: no member {}", m.member_id)))?;
        handles.insert(h);
    }
    if g.max_size < 0 {
        return Err(invalid(format!(
            "{what}: max_size {} is negative",
            g.max_size
        )));
    }
    if p.max_group_size > 0 && !(1..=p.max_group_size).contains(&g.max_size) {
        return Err(invalid(format!(
            "{what}: max_size {} is not in 1..={}",
            g.max_size, p.max_group_size
        )));
    }
    if g.max_size > 0 && g.members.len() > g.max_size as usize {
        return Err(exhausted(format!(
            "{what}: {} members, above its max_size {}",
            g.members.len(),
            g.max_size
        )));
    }
    Ok(handles)
}

pub(crate) fn write_group(cx: &mut Cx, op: Op, g: &ActionProfileGroup) -> Result<Effect> {
    let p = object(&cx.schema.profiles, g.action_profile_id, "action profile")?;
    if !p.with_selector {
        return Err(invalid(format!(
            "{} is not an action selector: it has no groups",
            p.name
        )));
    }
    if g.group_id == 0 {
        return Err(invalid(format!("{}: a group id of 0 in a write", p.name)));
    }
    let id = g.group_id;
    let existing = cx
        .data
        .profiles
        .get(&p.ext)
        .and_then(|d| d.groups.get(&id))
        .cloned();
    let missing = || not_found(format!("{} has no group {id}", p.name));
    let record = |handle: u32| GroupData {
        handle,
        members: g.members.clone(),
        max_size: g.max_size,
    };
    let before = match op {
        Op::Insert => {
            if existing.is_some() {
                return Err(exists(format!("{} has a group {id} already", p.name)));
            }
            one_shot_mode(cx, p)?;
            let members = group_members(cx, p, g)?;
            let h = cx.s.profile_create_group(&p.name)?;
            cx.undo.push(Step::GroupAdded {
                profile: p.ext,
                handle: h,
            });
            set_group_members(cx.s, p.ext, h, &members)?;
            cx.data
                .profiles
                .entry(p.ext)
                .or_default()
                .set_group(id, Some(record(h)))
        }
        Op::Modify => {
            let old = existing.ok_or_else(missing)?;
            if old.max_size != g.max_size {
                return Err(invalid(format!(
                    "{}, group {id}: max_size was {}, it cannot change",
                    p.name, old.max_size
                )));
            }
            let members = group_members(cx, p, g)?;
            let before =
                cx.s.profile_by_id(p.ext)
                    .and_then(|x| x.groups.get(old.handle))
                    .map(|x| x.members.clone())
                    .ok_or_else(missing)?;
            cx.undo.push(Step::GroupMembers {
                profile: p.ext,
                handle: old.handle,
                before,
            });
            set_group_members(cx.s, p.ext, old.handle, &members)?;
            cx.data
                .profiles
                .entry(p.ext)
                .or_default()
                .set_group(id, Some(record(old.handle)))
        }
        Op::Delete => {
            let old = existing.ok_or_else(missing)?;
            let grp =
                cx.s.profile_by_id(p.ext)
                    .and_then(|x| x.groups.get(old.handle))
                    .cloned()
                    .ok_or_else(missing)?;
            if grp.refs > 0 {
                return Err(precondition(format!(
                    "{}: group {id} is used by an entry",
                    p.name
                )));
            }
            cx.s.profile_delete_group(&p.name, old.handle)?;
            cx.undo.push(Step::GroupRemoved {
                profile: p.ext,
                handle: old.handle,
                members: grp.members,
            });
            cx.data
                .profiles
                .entry(p.ext)
                .or_default()
                .set_group(id, None)
        }
    };
    cx.undo.push(Step::GroupData {
        profile: p.ext,
        id,
        before,
    });
    Ok(Effect::All)
}

pub(crate) fn read_members(
    t: &Target,
    s: &State,
    m: &ActionProfileMember,
    out: &mut dyn FnMut(Entity),
) -> Result<()> {
    for p in t
        .schema
        .profiles
        .select(m.action_profile_id, "action profile")?
    {
        let Some(d) = t.data.profiles.get(&p.ext) else {
            continue;
        };
        for (&id, &h) in &d.members {
            if m.member_id != 0 && m.member_id != id {
                continue;
            }
            let Some(call) = s.profile_member(p.ext, h) else {
                continue;
            };
            out(Entity {
                entity: Some(entity::Entity::ActionProfileMember(ActionProfileMember {
                    action_profile_id: p.id,
                    member_id: id,
                    action: Some(action::encode(&t.schema, &t.strings, call)),
                })),
            });
        }
    }
    Ok(())
}

pub(crate) fn read_groups(
    t: &Target,
    g: &ActionProfileGroup,
    out: &mut dyn FnMut(Entity),
) -> Result<()> {
    for p in t
        .schema
        .profiles
        .select(g.action_profile_id, "action profile")?
    {
        let Some(d) = t.data.profiles.get(&p.ext) else {
            continue;
        };
        for (&id, rec) in &d.groups {
            if g.group_id != 0 && g.group_id != id {
                continue;
            }
            out(Entity {
                entity: Some(entity::Entity::ActionProfileGroup(ActionProfileGroup {
                    action_profile_id: p.id,
                    group_id: id,
                    members: rec.members.clone(),
                    max_size: rec.max_size,
                })),
            });
        }
    }
    Ok(())
}
