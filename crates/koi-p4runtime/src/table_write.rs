//! `TableEntry` writes (spec "TableEntry", "Default Entry", "Constant Tables", "Direct
//! Resources", "Idle-timeout").
//!
//! - INSERT: a new entry (`ALREADY_EXISTS` for a match key and priority in use,
//!   `RESOURCE_EXHAUSTED` when the table holds `size` entries, `INVALID_ARGUMENT` for a keyless
//!   table), with its action (required), direct counter value and meter config, idle timeout
//!   and cookies (`metadata`, `controller_metadata`).
//! - MODIFY: full-snapshot semantics on an existing entry (`NOT_FOUND`): an unset action keeps
//!   the action, an unset counter keeps the count, an unset meter config resets the meter;
//!   timeout and cookies are replaced. A const entry (or any entry of a `const entries` table)
//!   only takes direct resources: an action, a timeout or a cookie is `PERMISSION_DENIED`.
//! - DELETE: only the key fields count; `NOT_FOUND` if there is no such entry;
//!   `PERMISSION_DENIED` for const entries and tables.
//! - Priorities: required (> 0) exactly when the table has ternary, range or optional fields,
//!   else 0 (`INVALID_ARGUMENT`). `is_const` set, `time_since_last_hit` set, a timeout on a
//!   table without `support_timeout`, a counter value or meter config on a table without the
//!   direct resource: `INVALID_ARGUMENT`. `meter_counter_data`: `UNIMPLEMENTED`.
//! - Default entry (`is_default_action`): MODIFY only (`INVALID_ARGUMENT` otherwise), with an
//!   empty match, priority 0 and no timeout (`INVALID_ARGUMENT`); an unset action restores the
//!   program's default and clears the cookies; a const default action, and the default entry
//!   of a table with an action profile (a constant `NoAction` for P4Runtime), are
//!   `PERMISSION_DENIED`. koi keeps no direct resources for default entries: a counter value
//!   or meter config for one is `UNIMPLEMENTED`.
//! - v1model executes a direct counter on every hit, whatever the action, so any action takes
//!   direct resource configs.

use crate::action::{self, Use};
use crate::counters;
use crate::entries;
use crate::error::{Result, denied, exists, invalid, not_found, unimplemented};
use crate::matches::Strs;
use crate::meters;
use crate::oneshot;
use crate::schema::TableInfo;
use crate::undo::Step;
use crate::write::{Cx, Effect, Op};
use koi_ir::MatchKind;
use koi_proto::p4runtime::{TableAction, TableEntry, table_action};
use koi_state::handles::split_handle;
use koi_state::meter::Meter;
use koi_state::{ActionSpec, Cookie, CounterValue, EntryAction, EntrySpec};

pub(crate) fn write(cx: &mut Cx, op: Op, te: &TableEntry) -> Result<Effect> {
    let info = entries::table_for_write(cx.schema, te.table_id)?;
    if te.is_const {
        return Err(invalid(format!(
            "table {}: is_const must be false in a write",
            info.name
        )));
    }
    if op != Op::Delete {
        if te.time_since_last_hit.is_some() {
            return Err(invalid(format!(
                "table {}: time_since_last_hit is for reads",
                info.name
            )));
        }
        if te.meter_counter_data.is_some() {
            return Err(unimplemented(format!(
                "table {}: koi keeps no per-colour meter counters",
                info.name
            )));
        }
    }
    if te.is_default_action {
        return default_entry(cx, op, info, te);
    }
    match op {
        Op::Insert => insert(cx, info, te),
        Op::Modify => modify(cx, info, te),
        Op::Delete => delete(cx, info, te),
    }
}

/// What an entry carries besides its key and action, validated.
struct Extras {
    counter: Option<CounterValue>,
    /// The direct meter (`None` when the table has none).
    meter: Option<Meter>,
    timeout: Option<u64>,
    cookie: Cookie,
}

#[allow(deprecated)]
fn extras(cx: &Cx, info: &TableInfo, te: &TableEntry) -> Result<Extras> {
    let counter = match (&te.counter_data, info.direct_counter) {
        (Some(_), None) => {
            return Err(invalid(format!(
                "table {} has no direct counter",
                info.name
            )));
        }
        (Some(d), Some(_)) => Some(counters::value(&info.name, d)?),
        (None, _) => None,
    };
    let meter = match (&te.meter_config, info.direct_meter) {
        (Some(_), None) => {
            return Err(invalid(format!("table {} has no direct meter", info.name)));
        }
        (Some(c), Some(m)) => {
            let ty = cx.schema.direct_meters.get(m).map_or(0, |m| m.meter_type);
            Some(meters::meter(&info.name, c, ty)?)
        }
        (None, Some(_)) => Some(Meter::default()),
        (None, None) => None,
    };
    let timeout = match te.idle_timeout_ns {
        0 => None,
        t if t < 0 => {
            return Err(invalid(format!(
                "table {}: idle_timeout_ns {t} is negative",
                info.name
            )));
        }
        _ if !info.support_timeout => {
            return Err(invalid(format!(
                "table {} does not support idle timeouts",
                info.name
            )));
        }
        t => Some(t as u64),
    };
    Ok(Extras {
        counter,
        meter,
        timeout,
        cookie: Cookie {
            metadata: te.metadata.clone(),
            controller_metadata: te.controller_metadata,
        },
    })
}

/// The entry action of `ta` for an entry of `info`; whether it made a one-shot group.
fn entry_action(cx: &mut Cx, info: &TableInfo, ta: &TableAction) -> Result<(ActionSpec, bool)> {
    use table_action::Type as T;
    let owner = format!("table {}", info.name);
    let profile = info.profile.and_then(|p| cx.schema.profiles.get(p));
    let pdata = profile.and_then(|p| cx.data.profiles.get(&p.ext));
    let oneshots = pdata.is_some_and(|d| !d.oneshots.is_empty());
    let mixing = || {
        invalid(format!(
            "{owner}: its action selector is programmed with one-shot action sets"
        ))
    };
    match &ta.r#type {
        None => Err(invalid(format!(
            "{owner}: a table action without an action"
        ))),
        Some(T::Action(a)) => {
            if profile.is_some() {
                return Err(invalid(format!(
                    "{owner} has an action profile: its entries take members or groups"
                )));
            }
            let scope_of = |id: u32| info.actions.get(&id).copied();
            let spec =
                action::decode_spec(cx.schema, cx.strings, &owner, &scope_of, a, Use::Entry)?;
            Ok((spec, false))
        }
        Some(T::ActionProfileMemberId(id)) => {
            let Some(p) = profile else {
                return Err(invalid(format!("{owner} has no action profile")));
            };
            if oneshots {
                return Err(mixing());
            }
            let h = pdata.and_then(|d| d.members.get(id)).copied();
            let h = h.ok_or_else(|| not_found(format!("{} has no member {id}", p.name)))?;
            Ok((ActionSpec::Member(h), false))
        }
        Some(T::ActionProfileGroupId(id)) => {
            let Some(p) = profile.filter(|p| p.with_selector) else {
                return Err(invalid(format!("{owner} has no action selector")));
            };
            if oneshots {
                return Err(mixing());
            }
            let h = pdata.and_then(|d| d.groups.get(id)).map(|g| g.handle);
            let h = h.ok_or_else(|| not_found(format!("{} has no group {id}", p.name)))?;
            Ok((ActionSpec::Group(h), false))
        }
        Some(T::ActionProfileActionSet(set)) => {
            let g = oneshot::create(cx, info, set)?;
            Ok((ActionSpec::Group(g), true))
        }
    }
}

/// The effect of a write to `info`'s entry `handle` (`None`: a new entry), unless it
/// changed action profiles too (every flow is then suspect).
fn effect(info: &TableInfo, handle: Option<u32>, profiles_changed: bool) -> Effect {
    if profiles_changed {
        return Effect::All;
    }
    match handle {
        Some(h) => Effect::Entry(info.table, split_handle(h).0),
        // Keys all exact: a new entry takes only packets that missed the table.
        None if !info.needs_priority && info.fields.iter().all(|f| f.kind == MatchKind::Exact) => {
            Effect::Misses(info.table)
        }
        None => Effect::Table(info.table),
    }
}

fn insert(cx: &mut Cx, info: &TableInfo, te: &TableEntry) -> Result<Effect> {
    if info.is_const {
        return Err(denied(format!(
            "table {} has const entries: no entry can be inserted",
            info.name
        )));
    }
    if info.fields.is_empty() {
        return Err(invalid(format!(
            "table {} has no match key: only its default entry can be written",
            info.name
        )));
    }
    let keys = entries::keys(info, te, &mut Strs::Alloc(cx.strings))?
        .ok_or_else(|| invalid("unknown string"))?;
    let prio = entries::priority(info, te.priority)?;
    let ex = extras(cx, info, te)?;
    let Some(ta) = &te.action else {
        return Err(invalid(format!(
            "table {}: an inserted entry needs an action",
            info.name
        )));
    };
    if entries::find(cx.s, info, &keys, prio)?.is_some() {
        return Err(exists(format!(
            "table {} already has an entry with this match key and priority",
            info.name
        )));
    }
    let (spec, made) = entry_action(cx, info, ta)?;
    let handle = cx.s.table_add_id(
        info.table,
        EntrySpec {
            keys,
            action: spec,
            priority: prio,
            timeout_ns: ex.timeout,
        },
    )?;
    cx.undo.push(Step::EntryAdded {
        table: info.table,
        handle,
    });
    let mut e = cx.s.table_entry_mut(info.table, handle)?;
    if let Some(c) = ex.counter {
        e.set_counter(c);
    }
    if let Some(m) = ex.meter {
        *e.meter_mut() = m;
    }
    e.set_cookie(ex.cookie);
    Ok(effect(info, None, made))
}

/// The one-shot group entry `action` runs, if any.
fn oneshot_group(
    cx: &Cx,
    info: &TableInfo,
    action: &EntryAction,
) -> Option<(koi_ir::ExternId, u32)> {
    let EntryAction::Group(g) = action else {
        return None;
    };
    let ext = cx.schema.profiles.get(info.profile?)?.ext;
    oneshot::is_oneshot(cx, ext, *g).then_some((ext, *g))
}

fn modify(cx: &mut Cx, info: &TableInfo, te: &TableEntry) -> Result<Effect> {
    let handle = entries::existing(cx.s, cx.strings, info, te)?;
    let old = entries::entry(cx.s, info, handle)?.clone();
    let ex = extras(cx, info, te)?;
    if info.is_const || old.is_const {
        let what = if te.action.is_some() {
            Some("an action")
        } else if ex.timeout.is_some() {
            Some("an idle timeout")
        } else if ex.cookie != Cookie::default() {
            Some("metadata")
        } else {
            None
        };
        if let Some(what) = what {
            return Err(denied(format!(
                "table {}: the entry is const: only its direct resources can be modified, not {what}",
                info.name
            )));
        }
    }
    let new = match &te.action {
        Some(ta) => Some(entry_action(cx, info, ta)?),
        None => None,
    };
    let old_oneshot = match new {
        Some(_) => oneshot_group(cx, info, &old.action),
        None => None,
    };
    let made = new.as_ref().is_some_and(|(_, m)| *m);
    cx.undo.push(Step::EntryChanged {
        table: info.table,
        old: Box::new(old),
    });
    if let Some((spec, _)) = new {
        cx.s.table_modify(&info.name, handle, spec)?;
    }
    let mut e = cx.s.table_entry_mut(info.table, handle)?;
    if let Some(c) = ex.counter {
        e.set_counter(c);
    }
    if let Some(m) = ex.meter {
        *e.meter_mut() = m;
    }
    if !(info.is_const || e.get().is_const) {
        e.set_timeout_ns(ex.timeout);
        e.set_cookie(ex.cookie);
    }
    if let Some((ext, g)) = old_oneshot {
        oneshot::remove(cx, ext, g)?;
    }
    Ok(effect(info, Some(handle), made || old_oneshot.is_some()))
}

fn delete(cx: &mut Cx, info: &TableInfo, te: &TableEntry) -> Result<Effect> {
    if info.is_const {
        return Err(denied(format!(
            "table {} has const entries: they cannot be deleted",
            info.name
        )));
    }
    let handle = entries::existing(cx.s, cx.strings, info, te)?;
    let old = entries::entry(cx.s, info, handle)?.clone();
    if old.is_const {
        return Err(denied(format!(
            "table {}: the entry is const: it cannot be deleted",
            info.name
        )));
    }
    let oneshot = oneshot_group(cx, info, &old.action);
    cx.s.table_delete(&info.name, handle)?;
    cx.undo.push(Step::EntryRemoved {
        table: info.table,
        entry: Box::new(old),
    });
    if let Some((ext, g)) = oneshot {
        oneshot::remove(cx, ext, g)?;
    }
    Ok(effect(info, Some(handle), oneshot.is_some()))
}

#[allow(deprecated)]
fn default_entry(cx: &mut Cx, op: Op, info: &TableInfo, te: &TableEntry) -> Result<Effect> {
    let name = &info.name;
    if !te.r#match.is_empty() || te.priority != 0 {
        return Err(invalid(format!(
            "table {name}: the default entry has no match key and no priority"
        )));
    }
    if te.idle_timeout_ns != 0 {
        return Err(invalid(format!(
            "table {name}: the default entry has no idle timeout"
        )));
    }
    if op != Op::Modify {
        return Err(invalid(format!(
            "table {name}: the default entry always exists: it can only be modified, not {}",
            op.name()
        )));
    }
    if info.const_default {
        return Err(denied(format!("table {name}: the default action is const")));
    }
    if info.profile.is_some() {
        return Err(denied(format!(
            "table {name} has an action profile: its default entry is a constant NoAction"
        )));
    }
    if (te.counter_data.is_some() && info.direct_counter.is_none())
        || (te.meter_config.is_some() && info.direct_meter.is_none())
    {
        return Err(invalid(format!("table {name} has no such direct resource")));
    }
    if te.counter_data.is_some() || te.meter_config.is_some() {
        return Err(unimplemented(format!(
            "table {name}: koi keeps no direct resources for the default entry"
        )));
    }
    let old_action =
        cx.s.table_by_id(info.table)
            .map(|t| t.default_action().clone())
            .ok_or_else(|| not_found(format!("table {name}")))?;
    let cookie = match &te.action {
        None => {
            cx.s.table_reset_default(name)?;
            Cookie::default()
        }
        Some(TableAction {
            r#type: Some(table_action::Type::Action(a)),
        }) => {
            let owner = format!("table {name}");
            let scope_of = |id: u32| info.actions.get(&id).copied();
            let spec =
                action::decode_spec(cx.schema, cx.strings, &owner, &scope_of, a, Use::Default)?;
            cx.s.table_set_default(name, spec)?;
            Cookie {
                metadata: te.metadata.clone(),
                controller_metadata: te.controller_metadata,
            }
        }
        Some(_) => {
            return Err(invalid(format!(
                "table {name}: the default entry takes an action"
            )));
        }
    };
    cx.undo.push(Step::DefaultChanged {
        table: info.table,
        action: old_action,
    });
    let before = if cookie == Cookie::default() {
        cx.data.default_cookies.remove(&info.table)
    } else {
        cx.data.default_cookies.insert(info.table, cookie)
    };
    cx.undo.push(Step::DefaultCookie {
        table: info.table,
        before,
    });
    Ok(Effect::Misses(info.table))
}
