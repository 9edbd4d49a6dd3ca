//! Identifying table entries (spec "TableEntry": "The `match` and `priority` fields are used
//! to uniquely identify an entry within a table"): a `TableEntry`'s table, match key and
//! priority to koi-state's table and entry handle, and an entry back to those key fields.

use crate::error::{Result, invalid, not_found};
use crate::matches::{self, Strs};
use crate::schema::{Schema, TableInfo};
use crate::translate::Strings;
use koi_ir::Pattern;
use koi_proto::p4runtime::TableEntry;
use koi_state::{Entry, State};

/// The table of a write (0 is `INVALID_ARGUMENT`, an unknown id `NOT_FOUND`).
pub(crate) fn table_for_write(schema: &Schema, id: u32) -> Result<&TableInfo> {
    crate::write::object(&schema.tables, id, "table")
}

/// The table of a read with a non-zero id (unknown: `NOT_FOUND`).
pub(crate) fn table_for_read(schema: &Schema, id: u32) -> Result<&TableInfo> {
    schema
        .tables
        .get(id)
        .ok_or_else(|| not_found(format!("no table with id {id} in the P4Info")))
}

/// The priority of an entry of `info` in a write: positive exactly when the table has
/// ternary, range or optional fields, else 0 (`INVALID_ARGUMENT` otherwise).
pub(crate) fn priority(info: &TableInfo, p: i32) -> Result<Option<u32>> {
    match (info.needs_priority, p) {
        (true, p) if p > 0 => Ok(Some(p as u32)),
        (true, p) => Err(invalid(format!(
            "table {} has ternary, range or optional fields: entries need a priority above 0, not {p}",
            info.name
        ))),
        (false, 0) => Ok(None),
        (false, p) => Err(invalid(format!(
            "table {} takes no entry priority, got {p}",
            info.name
        ))),
    }
}

/// The match patterns of `te` for table `info`; `None` when a string value is unknown to a
/// lookup.
pub(crate) fn keys(
    info: &TableInfo,
    te: &TableEntry,
    strs: &mut Strs,
) -> Result<Option<Vec<Pattern>>> {
    if info.fields.is_empty() && !te.r#match.is_empty() {
        return Err(invalid(format!("table {} has no match fields", info.name)));
    }
    let owner = format!("table {}", info.name);
    matches::decode(&owner, &info.fields, &te.r#match, strs)
}

/// The handle of the entry of `info` with these keys and priority.
pub(crate) fn find(
    s: &State,
    info: &TableInfo,
    keys: &[Pattern],
    prio: Option<u32>,
) -> Result<Option<u32>> {
    s.table_find(info.table, keys, prio)
        .map_err(|e| invalid(e.to_string()))
}

/// The entry of a write that names an existing entry (MODIFY, DELETE, direct resources):
/// its handle, `NOT_FOUND` if there is none.
pub(crate) fn existing(
    s: &State,
    strings: &Strings,
    info: &TableInfo,
    te: &TableEntry,
) -> Result<u32> {
    let prio = priority(info, te.priority)?;
    let missing = || {
        not_found(format!(
            "table {} has no entry with this match key",
            info.name
        ))
    };
    let Some(k) = keys(info, te, &mut Strs::Lookup(strings))? else {
        return Err(missing());
    };
    find(s, info, &k, prio)?.ok_or_else(missing)
}

/// The entry with `handle`.
pub(crate) fn entry<'s>(s: &'s State, info: &TableInfo, handle: u32) -> Result<&'s Entry> {
    s.table_by_id(info.table)
        .and_then(|t| t.get(handle))
        .ok_or_else(|| not_found(format!("table {} has no entry {handle}", info.name)))
}

/// A `TableEntry` holding only the key fields of `e` (table, match, priority).
pub(crate) fn key_message(info: &TableInfo, strings: &Strings, e: &Entry) -> TableEntry {
    TableEntry {
        table_id: info.id,
        r#match: matches::encode(&info.fields, &e.keys, strings),
        priority: e
            .priority
            .map_or(0, |p| i32::try_from(p).unwrap_or(i32::MAX)),
        ..Default::default()
    }
}
