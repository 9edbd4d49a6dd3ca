//! `TableEntry` reads (spec "Wildcard Reads", "Direct Resources", "Idle-timeout", "Constant
//! Tables"): entries as the controller wrote them (canonical bytestrings, don't-care fields
//! left out, one-shot action sets as written, cookies), const entries included.
//!
//! Table id 0 reads every entry of every table and takes no other filter
//! (`INVALID_ARGUMENT`). Otherwise an empty match reads every entry of the table, a match
//! (with its priority, or any priority when 0) the entry with that key, `is_default_action`
//! the default entry only; `priority`, an action id (direct tables only, else
//! `UNIMPLEMENTED`), `controller_metadata` and `metadata` filter. `counter_data`,
//! `meter_config` and `time_since_last_hit` set in the request ask for them in the answer
//! (a meter with the default config shows no `meter_config`); `time_since_last_hit` on a table
//! without idle timeout is `INVALID_ARGUMENT`, and is measured up to koi-state's `now_ns`.
//! Entries of tables with idle timeout always show their `idle_timeout_ns`.

use crate::action;
use crate::counters;
use crate::entries;
use crate::error::{Result, invalid, unimplemented};
use crate::matches::Strs;
use crate::meters;
use crate::schema::TableInfo;
use crate::target::Target;
use koi_proto::p4runtime::{
    Entity, TableAction, TableEntry, entity, table_action::Type as A, table_entry::IdleTimeout,
};
use koi_state::{Entry, EntryAction, State};

/// What a read asks for besides the entries.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Want {
    pub counter: bool,
    pub meter: bool,
    pub since: bool,
}

/// The table action of `a` in table `info`, as the controller wrote it.
fn table_action(t: &Target, info: &TableInfo, a: &EntryAction) -> TableAction {
    let ext = info
        .profile
        .and_then(|p| t.schema.profiles.get(p))
        .map(|p| p.ext);
    let pdata = ext.and_then(|e| t.data.profiles.get(&e));
    let ty = match a {
        EntryAction::Action(call) => A::Action(action::encode(&t.schema, &t.strings, call)),
        EntryAction::Member(h) => A::ActionProfileMemberId(
            pdata
                .and_then(|d| d.member_ids.get(h))
                .copied()
                .unwrap_or(*h),
        ),
        EntryAction::Group(h) => match pdata.and_then(|d| d.oneshots.get(h)) {
            Some(set) => A::ActionProfileActionSet(set.clone()),
            None => A::ActionProfileGroupId(
                pdata
                    .and_then(|d| d.group_ids.get(h))
                    .copied()
                    .unwrap_or(*h),
            ),
        },
    };
    TableAction { r#type: Some(ty) }
}

/// Entry `e` of table `info` as a `TableEntry`.
#[allow(deprecated)]
pub(crate) fn entry_message(
    t: &Target,
    s: &State,
    info: &TableInfo,
    e: &Entry,
    want: Want,
) -> TableEntry {
    let mut m = entries::key_message(info, &t.strings, e);
    m.action = Some(table_action(t, info, &e.action));
    m.metadata = e.cookie.metadata.clone();
    m.controller_metadata = e.cookie.controller_metadata;
    m.is_const = e.is_const || info.is_const;
    if info.support_timeout {
        m.idle_timeout_ns = e
            .timeout_ns
            .map_or(0, |x| i64::try_from(x).unwrap_or(i64::MAX));
        if want.since {
            let elapsed = s.now_ns().saturating_sub(e.last_hit_ns);
            m.time_since_last_hit = Some(IdleTimeout {
                elapsed_ns: i64::try_from(elapsed).unwrap_or(i64::MAX),
            });
        }
    }
    if want.counter && info.direct_counter.is_some() {
        m.counter_data = Some(counters::data(e.counter));
    }
    if want.meter && info.direct_meter.is_some() {
        m.meter_config = meters::config(&e.meter);
    }
    m
}

/// The default entry of `info`.
#[allow(deprecated)]
fn default_message(t: &Target, s: &State, info: &TableInfo) -> Option<TableEntry> {
    let tb = s.table_by_id(info.table)?;
    let cookie = t.data.default_cookies.get(&info.table);
    Some(TableEntry {
        table_id: info.id,
        action: Some(table_action(t, info, tb.default_action())),
        is_default_action: true,
        is_const: info.const_default || info.profile.is_some(),
        metadata: cookie.map(|c| c.metadata.clone()).unwrap_or_default(),
        controller_metadata: cookie.map_or(0, |c| c.controller_metadata),
        ..Default::default()
    })
}

fn wrap(te: TableEntry) -> Entity {
    Entity {
        entity: Some(entity::Entity::TableEntry(te)),
    }
}

/// Answers a `TableEntry` read.
#[allow(deprecated)]
pub(crate) fn read(
    t: &Target,
    s: &State,
    te: &TableEntry,
    out: &mut dyn FnMut(Entity),
) -> Result<()> {
    if te.meter_counter_data.is_some() {
        return Err(unimplemented("koi keeps no per-colour meter counters"));
    }
    let want = Want {
        counter: te.counter_data.is_some(),
        meter: te.meter_config.is_some(),
        since: te.time_since_last_hit.is_some(),
    };
    if te.table_id == 0 {
        let filtered = !te.r#match.is_empty()
            || te.action.is_some()
            || te.priority != 0
            || te.controller_metadata != 0
            || !te.metadata.is_empty()
            || te.is_default_action;
        if filtered {
            return Err(invalid(
                "a read of every table (table id 0) takes no other filter",
            ));
        }
        for info in t.schema.tables.iter() {
            let Some(tb) = s.table_by_id(info.table) else {
                continue;
            };
            for e in tb.entries() {
                out(wrap(entry_message(t, s, info, e, want)));
            }
        }
        return Ok(());
    }
    let info = entries::table_for_read(&t.schema, te.table_id)?;
    if want.since && !info.support_timeout {
        return Err(invalid(format!(
            "table {} does not support idle timeouts",
            info.name
        )));
    }
    if te.is_default_action {
        if !te.r#match.is_empty() || te.priority != 0 {
            return Err(invalid(format!(
                "table {}: the default entry has no match key and no priority",
                info.name
            )));
        }
        if let Some(m) = default_message(t, s, info) {
            out(wrap(m));
        }
        return Ok(());
    }
    let action_filter = match &te.action {
        None => None,
        Some(TableAction {
            r#type: Some(A::Action(a)),
        }) => Some(
            t.schema
                .actions
                .get(a.action_id)
                .map(|_| a.action_id)
                .ok_or_else(|| invalid(format!("no action with id {}", a.action_id)))?,
        ),
        Some(_) => {
            return Err(unimplemented("reads filter by direct action ids only"));
        }
    };
    let Some(tb) = s.table_by_id(info.table) else {
        return Ok(());
    };
    let keys = if te.r#match.is_empty() {
        None
    } else {
        match entries::keys(info, te, &mut Strs::Lookup(&t.strings))? {
            Some(k) => Some(tb.canonical_keys(&k).map_err(|e| invalid(e.to_string()))?),
            None => return Ok(()),
        }
    };
    let keep = |e: &&Entry| {
        keys.as_ref().is_none_or(|k| *k == e.keys)
            && (te.priority == 0 || e.priority == u32::try_from(te.priority).ok())
            && action_filter
                .is_none_or(|a| matches!(&e.action, EntryAction::Action(c) if t.schema.action_of.get(&c.action) == Some(&a)))
            && (te.controller_metadata == 0
                || e.cookie.controller_metadata == te.controller_metadata)
            && (te.metadata.is_empty() || e.cookie.metadata == te.metadata)
    };
    let exact_key = keys.is_some() && (!info.needs_priority || te.priority > 0);
    if let (true, Some(k)) = (exact_key, &keys) {
        let prio = u32::try_from(te.priority).ok().filter(|p| *p > 0);
        let found = entries::find(s, info, k, prio)?.and_then(|h| tb.get(h));
        for e in found.into_iter().filter(keep) {
            out(wrap(entry_message(t, s, info, e, want)));
        }
        return Ok(());
    }
    for e in tb.entries().filter(keep) {
        out(wrap(entry_message(t, s, info, e, want)));
    }
    Ok(())
}
