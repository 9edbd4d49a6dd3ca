//! One-shot action selector programming (spec "One Shot Action Selector Programming"): a
//! table entry whose action is an `ActionProfileActionSet` gets a group of its own in the
//! selector, with a member per action (two equal actions are two members), which the
//! controller never sees: reads give the action set back as written, and the members and
//! group are deleted with the entry (or replaced when it is modified).
//!
//! Refused: a table without an action selector and a selector already programmed with
//! `ActionProfileMember`/`Group` (`INVALID_ARGUMENT`), more actions than `max_group_size`
//! (`INVALID_ARGUMENT`), more members than the selector holds (`RESOURCE_EXHAUSTED`); weights
//! as for groups ([`crate::profile::check_weight`]; watch ports are kept for reads and
//! otherwise ignored); a `group_action` and selection modes or size semantics other than the
//! selector's default are `UNIMPLEMENTED`.

use crate::action::{self, Use};
use crate::error::{Result, exhausted, invalid, unimplemented};
use crate::profile::check_weight;
use crate::schema::TableInfo;
use crate::undo::Step;
use crate::write::Cx;
use koi_ir::ExternId;
use koi_proto::p4runtime::ActionProfileActionSet;
use koi_state::ActionSpec;

/// Creates the group of a one-shot action set for an entry of `info`; returns its handle.
pub(crate) fn create(cx: &mut Cx, info: &TableInfo, set: &ActionProfileActionSet) -> Result<u32> {
    let pinfo = info.profile.and_then(|p| cx.schema.profiles.get(p));
    let Some(pinfo) = pinfo.filter(|p| p.with_selector) else {
        return Err(invalid(format!(
            "table {} has no action selector: it takes no action profile action set",
            info.name
        )));
    };
    let ext = pinfo.ext;
    if cx.data.profiles.get(&ext).is_some_and(|p| p.explicit()) {
        return Err(invalid(format!(
            "{} is programmed with members and groups: one-shot action sets cannot be mixed in",
            pinfo.name
        )));
    }
    if set.group_action.is_some() {
        return Err(unimplemented(format!(
            "table {}: koi does not compose group actions",
            info.name
        )));
    }
    if set.action_selection_mode != 0 || set.size_semantics != 0 {
        return Err(unimplemented(format!(
            "{}: koi has no per-group selection modes or size semantics",
            pinfo.name
        )));
    }
    let n = set.action_profile_actions.len();
    if pinfo.max_group_size > 0 && n > pinfo.max_group_size as usize {
        return Err(invalid(format!(
            "{}: {n} actions, above the group size limit {}",
            pinfo.name, pinfo.max_group_size
        )));
    }
    let owner = format!("table {}", info.name);
    let scope_of = |id: u32| info.actions.get(&id).copied();
    let mut specs = Vec::with_capacity(n);
    for a in &set.action_profile_actions {
        check_weight(pinfo, a.weight, &pinfo.name)?;
        let Some(act) = &a.action else {
            return Err(invalid(format!(
                "{owner}: an action profile action without action"
            )));
        };
        specs.push(action::decode_spec(
            cx.schema,
            cx.strings,
            &owner,
            &scope_of,
            act,
            Use::Entry,
        )?);
    }
    let used = cx.s.profile_by_id(ext).map_or(0, |p| p.members.len());
    if pinfo.size > 0 && (used + n) as u64 > pinfo.size {
        return Err(exhausted(format!(
            "{} holds {} members: no room for {n} more",
            pinfo.name, pinfo.size
        )));
    }
    let name = pinfo.name.clone();
    let mut handles = Vec::with_capacity(n);
    for spec in specs {
        let ActionSpec::Action { name: a, args } = spec else {
            continue;
        };
        let h = cx.s.profile_add_member(&name, &a, &args)?;
        cx.undo.push(Step::MemberAdded {
            profile: ext,
            handle: h,
        });
        handles.push(h);
    }
    let g = cx.s.profile_create_group(&name)?;
    cx.undo.push(Step::GroupAdded {
        profile: ext,
        handle: g,
    });
    for h in handles {
        cx.s.profile_add_to_group(&name, h, g)?;
    }
    let before = cx
        .data
        .profiles
        .entry(ext)
        .or_default()
        .oneshots
        .insert(g, set.clone());
    cx.undo.push(Step::OneShot {
        profile: ext,
        handle: g,
        before,
    });
    Ok(g)
}

/// Whether group `g` of profile `ext` was made for a one-shot action set.
pub(crate) fn is_oneshot(cx: &Cx, ext: ExternId, g: u32) -> bool {
    cx.data
        .profiles
        .get(&ext)
        .is_some_and(|p| p.oneshots.contains_key(&g))
}

/// Deletes the group of a one-shot action set and its members (no entry uses it any more).
pub(crate) fn remove(cx: &mut Cx, ext: ExternId, g: u32) -> Result<()> {
    let before = cx
        .data
        .profiles
        .get_mut(&ext)
        .and_then(|p| p.oneshots.remove(&g));
    cx.undo.push(Step::OneShot {
        profile: ext,
        handle: g,
        before,
    });
    let name = cx.s.extern_name(ext).unwrap_or_default().to_string();
    let members =
        cx.s.profile_by_id(ext)
            .and_then(|p| p.groups.get(g))
            .map(|x| x.members.clone())
            .unwrap_or_default();
    cx.s.profile_delete_group(&name, g)?;
    cx.undo.push(Step::GroupRemoved {
        profile: ext,
        handle: g,
        members: members.clone(),
    });
    for m in members {
        let Some(call) = cx.s.profile_member(ext, m).cloned() else {
            continue;
        };
        cx.s.profile_delete_member(&name, m)?;
        cx.undo.push(Step::MemberRemoved {
            profile: ext,
            handle: m,
            call,
        });
    }
    Ok(())
}
