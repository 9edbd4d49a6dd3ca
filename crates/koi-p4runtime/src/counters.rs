//! `CounterEntry` and `DirectCounterEntry` (spec "CounterEntry & DirectCounterEntry").
//!
//! Both are MODIFY only (`INVALID_ARGUMENT` for INSERT and DELETE); unset `data` changes
//! nothing; an unset index writes every cell. Counts are never negative (`INVALID_ARGUMENT`).
//! An index below 0 is `INVALID_ARGUMENT`, at or past the size `OUT_OF_RANGE`. Reads: counter
//! id 0 reads every counter, an unset index every cell (arrays of more than 2^20 cells are
//! refused with `RESOURCE_EXHAUSTED` rather than answered cell by cell); a direct counter
//! read without table id reads every table's, without match every entry of the table. koi
//! counts packets and bytes whatever the counter's unit, and reports both. The default entry
//! has no direct counter in koi (`UNIMPLEMENTED`).

use crate::entries;
use crate::error::{Result, exhausted, invalid, out_of_range, unimplemented};
use crate::matches::Strs;
use crate::schema::{Schema, TableInfo};
use crate::target::Target;
use crate::undo::Step;
use crate::write::{Cx, Effect, Op, modify_only, object};
use koi_proto::p4runtime::{CounterData, CounterEntry, DirectCounterEntry, Entity, Index, entity};
use koi_state::{CounterValue, State};

/// The most cells a wildcard read answers for one array.
pub const READ_LIMIT: u64 = koi_state::api_externs::READ_ALL_LIMIT;

/// A counter value from the controller.
pub(crate) fn value(what: &str, d: &CounterData) -> Result<CounterValue> {
    match (u64::try_from(d.packet_count), u64::try_from(d.byte_count)) {
        (Ok(packets), Ok(bytes)) => Ok(CounterValue { packets, bytes }),
        _ => Err(invalid(format!("{what}: counts cannot be negative"))),
    }
}

/// A counter value for the controller.
pub(crate) fn data(v: CounterValue) -> CounterData {
    CounterData {
        byte_count: i64::try_from(v.bytes).unwrap_or(i64::MAX),
        packet_count: i64::try_from(v.packets).unwrap_or(i64::MAX),
    }
}

/// The cell an `Index` names in an array of `size` cells.
pub(crate) fn index(name: &str, i: &Index, size: u64) -> Result<u64> {
    let Ok(i) = u64::try_from(i.index) else {
        return Err(invalid(format!("{name}: index {} is negative", i.index)));
    };
    if i >= size {
        return Err(out_of_range(format!(
            "{name}: index {i} is out of range (size {size})"
        )));
    }
    Ok(i)
}

/// Refuses a wildcard read of an array too large to answer cell by cell.
pub(crate) fn check_wildcard(name: &str, size: u64) -> Result<()> {
    if size > READ_LIMIT {
        return Err(exhausted(format!(
            "{name} has {size} cells: a wildcard read answers at most {READ_LIMIT}"
        )));
    }
    Ok(())
}

pub(crate) fn write(cx: &mut Cx, op: Op, c: &CounterEntry) -> Result<Effect> {
    modify_only(op, "counter entries")?;
    let info = object(&cx.schema.counters, c.counter_id, "counter")?;
    if let Some(i) = &c.index {
        index(&info.name, i, info.size)?;
    }
    let Some(d) = &c.data else {
        return Ok(Effect::None);
    };
    let v = value(&info.name, d)?;
    let missing = || invalid(format!("{} is not a counter", info.name));
    let arr = cx.s.counter_array_mut(info.ext).ok_or_else(missing)?;
    match &c.index {
        Some(i) => {
            let i = index(&info.name, i, info.size)?;
            let cell = arr.get_mut(i).ok_or_else(missing)?;
            let old = std::mem::replace(cell, v);
            cx.undo.push(Step::CounterCell {
                ext: info.ext,
                index: i,
                old,
            });
        }
        None => {
            let old = Box::new(arr.clone());
            arr.fill(v);
            cx.undo.push(Step::CounterAll { ext: info.ext, old });
        }
    }
    Ok(Effect::None)
}

/// The table of a direct resource request, which must have one (`has`).
fn direct_table<'a>(
    schema: &'a Schema,
    table_id: u32,
    has: fn(&TableInfo) -> bool,
    what: &str,
) -> Result<&'a TableInfo> {
    let info = entries::table_for_write(schema, table_id)?;
    if !has(info) {
        return Err(invalid(format!("table {} has no {what}", info.name)));
    }
    Ok(info)
}

pub(crate) fn write_direct(cx: &mut Cx, op: Op, d: &DirectCounterEntry) -> Result<Effect> {
    modify_only(op, "direct counter entries")?;
    let Some(te) = &d.table_entry else {
        return Err(invalid("a direct counter entry needs its table entry"));
    };
    let info = direct_table(
        cx.schema,
        te.table_id,
        |t| t.direct_counter.is_some(),
        "direct counter",
    )?;
    if te.is_default_action {
        return Err(unimplemented(format!(
            "table {}: koi keeps no direct counter for the default entry",
            info.name
        )));
    }
    let handle = entries::existing(cx.s, cx.strings, info, te)?;
    let Some(dv) = &d.data else {
        return Ok(Effect::None);
    };
    let v = value(&info.name, dv)?;
    let old = Box::new(entries::entry(cx.s, info, handle)?.clone());
    cx.s.table_entry_mut(info.table, handle)?.set_counter(v);
    cx.undo.push(Step::EntryChanged {
        table: info.table,
        old,
    });
    Ok(Effect::None)
}

/// The cells a read of `index` (unset: all) of an array of `size` cells names.
pub(crate) fn cells(name: &str, i: Option<&Index>, size: u64) -> Result<std::ops::Range<u64>> {
    match i {
        Some(i) => index(name, i, size).map(|i| i..i + 1),
        None => check_wildcard(name, size).map(|_| 0..size),
    }
}

pub(crate) fn read(
    t: &Target,
    s: &State,
    c: &CounterEntry,
    out: &mut dyn FnMut(Entity),
) -> Result<()> {
    let list = t.schema.counters.select(c.counter_id, "counter")?;
    for info in list {
        let range = cells(&info.name, c.index.as_ref(), info.size)?;
        let Some(arr) = s.counter_array(info.ext) else {
            continue;
        };
        for i in range {
            let v = arr.get(i).unwrap_or_default();
            out(Entity {
                entity: Some(entity::Entity::CounterEntry(CounterEntry {
                    counter_id: info.id,
                    index: Some(Index { index: i as i64 }),
                    data: Some(data(v)),
                })),
            });
        }
    }
    Ok(())
}

pub(crate) fn read_direct(
    t: &Target,
    s: &State,
    d: &DirectCounterEntry,
    out: &mut dyn FnMut(Entity),
) -> Result<()> {
    let schema = &t.schema;
    let te = d.table_entry.clone().unwrap_or_default();
    let tables: Vec<&TableInfo> = if te.table_id == 0 {
        schema
            .tables
            .iter()
            .filter(|x| x.direct_counter.is_some())
            .collect()
    } else {
        let info = entries::table_for_read(schema, te.table_id)?;
        if info.direct_counter.is_none() {
            return Err(invalid(format!(
                "table {} has no direct counter",
                info.name
            )));
        }
        vec![info]
    };
    for info in tables {
        for e in selected(t, s, info, &te)? {
            out(Entity {
                entity: Some(entity::Entity::DirectCounterEntry(DirectCounterEntry {
                    table_entry: Some(entries::key_message(info, &t.strings, e)),
                    data: Some(data(e.counter)),
                })),
            });
        }
    }
    Ok(())
}

/// The entries of `info` a direct resource read names: all without a match key, else the one
/// entry with that key (`NOT_FOUND` if none).
pub(crate) fn selected<'s>(
    t: &Target,
    s: &'s State,
    info: &TableInfo,
    te: &koi_proto::p4runtime::TableEntry,
) -> Result<Vec<&'s koi_state::Entry>> {
    if te.is_default_action {
        return Err(unimplemented(format!(
            "table {}: koi keeps no direct resources for the default entry",
            info.name
        )));
    }
    let Some(table) = s.table_by_id(info.table) else {
        return Ok(Vec::new());
    };
    if te.r#match.is_empty() && te.priority == 0 {
        return Ok(table.entries().collect());
    }
    let prio = entries::priority(info, te.priority)?;
    let missing = || {
        crate::error::not_found(format!(
            "table {} has no entry with this match key",
            info.name
        ))
    };
    let keys = entries::keys(info, te, &mut Strs::Lookup(&t.strings))?.ok_or_else(missing)?;
    let h = entries::find(s, info, &keys, prio)?.ok_or_else(missing)?;
    Ok(table.get(h).into_iter().collect())
}
