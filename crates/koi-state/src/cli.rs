//! Executes simple_switch_CLI commands ([`koi_control::command::Command`]) against a
//! [`State`] and returns the text simple_switch_CLI prints (entry handles and the like), for
//! `koi ctl`, `--entries` files and the CLI lines of STF files.
//!
//! BMv2's readings are kept: for a table with ternary, optional or range fields the last
//! word of a `table_add` is its priority, and a CLI priority is "smaller wins" (converted
//! here to the state's "larger wins": `u32::MAX - p`); keys are written positionally in the
//! CLI forms of [`koi_control::value`] (`v&&&m`, `v/len`, `lo->hi`). A refused command
//! changes nothing and returns the error.

use crate::api::{ActionSpec, EntrySpec};
use crate::cli_format as fmt;
use crate::error::{Result, StateError};
use crate::meter::MeterRate;
use crate::pre::MirrorTarget;
use crate::state::State;
use crate::table::EntryAction;
use koi_control::command::Command;
use koi_control::value::{self, KeyValue};
use koi_ir::{ActionId, Bits, MatchKind, Pattern, TableId};

/// A simple_switch_CLI priority (smaller wins) as the state's priority (larger wins).
pub fn cli_priority_to_state(p: u32) -> u32 {
    u32::MAX - p
}

/// The state's priority as simple_switch_CLI shows it.
pub fn state_priority_to_cli(p: u32) -> u32 {
    u32::MAX - p
}

fn cmd_err(msg: String) -> StateError {
    StateError::Command(msg)
}

fn to_u32(what: &str, v: u64) -> Result<u32> {
    u32::try_from(v).map_err(|_| cmd_err(format!("{what} {v} is too large")))
}

/// Executes one command; returns what simple_switch_CLI prints for it (possibly nothing).
pub fn execute(s: &mut State, c: &Command) -> Result<String> {
    use Command::*;
    match c {
        TableAdd {
            table,
            action,
            keys,
            params,
        } => table_add(s, table, action, keys, params),
        TableSetDefault {
            table,
            action,
            params,
        } => table_set_default(s, table, action, params),
        TableResetDefault { table } => s.table_reset_default(table).map(|_| String::new()),
        TableDelete { table, handle } => {
            let name = s.table(table)?.name().to_string();
            s.table_delete(table, to_u32("handle", *handle)?)?;
            Ok(format!("Deleting entry {handle} from {name}"))
        }
        TableModify {
            table,
            action,
            handle,
            params,
        } => table_modify(s, table, action, *handle, params),
        TableDump { table } => fmt::dump_table(s, s.table_id(table)?),
        TableDumpEntry { table, handle } => {
            let t = s.table_id(table)?;
            let e = s.table_entry(table, to_u32("handle", *handle)?)?;
            Ok(fmt::entry(s, t, e))
        }
        TableNumEntries { table } => Ok(s.table(table)?.len().to_string()),
        TableClear { table } => s.table_clear(table).map(|_| String::new()),
        TableInfo { table } => Ok(fmt::table_info(s, s.table_id(table)?)),
        ShowTables => Ok(fmt::show_tables(s)),
        ShowActions => Ok(fmt::show_actions(s)),
        TableIndirectAdd {
            table,
            keys,
            handle,
            group,
            priority,
        } => table_indirect_add(s, table, keys, *handle, *group, *priority),
        TableIndirectSetDefault {
            table,
            handle,
            group,
        } => {
            let h = to_u32("handle", *handle)?;
            let spec = if *group {
                ActionSpec::Group(h)
            } else {
                ActionSpec::Member(h)
            };
            s.table_set_default(table, spec).map(|_| String::new())
        }
        _ => crate::cli_externs::execute(s, c),
    }
}

fn cli_kind(kind: &MatchKind) -> Result<value::MatchKind> {
    Ok(match kind {
        MatchKind::Exact => value::MatchKind::Exact,
        MatchKind::Ternary => value::MatchKind::Ternary,
        MatchKind::Optional => value::MatchKind::Optional,
        MatchKind::Lpm => value::MatchKind::Lpm,
        MatchKind::Range => value::MatchKind::Range,
        other => return Err(cmd_err(format!("match kind {other} cannot be written"))),
    })
}

fn bits(width: u32, bytes: &[u8]) -> Bits {
    Bits::from_be_bytes(width, bytes)
}

/// The patterns of a table's match fields written positionally.
pub fn parse_keys(s: &State, t: TableId, texts: &[String]) -> Result<Vec<Pattern>> {
    let tb = s.table_by_id(t).ok_or(cmd_err("unknown table".into()))?;
    let keys = &tb.schema.keys;
    if texts.len() != keys.len() {
        return Err(StateError::KeyCount {
            table: tb.name().to_string(),
            expected: keys.len(),
            found: texts.len(),
        });
    }
    keys.iter()
        .zip(texts)
        .map(|(k, text)| {
            let bad = |why: String| StateError::BadKey {
                table: tb.name().to_string(),
                field: k.name.clone(),
                why,
            };
            let kv = value::parse_key(text, cli_kind(&k.kind)?, k.width)
                .map_err(|e| bad(e.to_string()))?;
            let w = k.width;
            Ok(match kv {
                KeyValue::Exact(v) => Pattern::Exact(bits(w, &v)),
                KeyValue::Ternary { value, mask } => Pattern::Mask {
                    value: bits(w, &value),
                    mask: bits(w, &mask),
                },
                KeyValue::Lpm { value, prefix_len } => Pattern::Prefix {
                    value: bits(w, &value),
                    len: prefix_len,
                },
                KeyValue::Range { lo, hi } => Pattern::Range {
                    lo: bits(w, &lo),
                    hi: bits(w, &hi),
                },
            })
        })
        .collect()
}

/// The arguments of action `a` written positionally.
pub fn parse_args(s: &State, a: ActionId, texts: &[String]) -> Result<Vec<Bits>> {
    let schema = s
        .action_schema(a)
        .ok_or(cmd_err(format!("unknown action {a}")))?;
    if texts.len() != schema.params.len() {
        return Err(StateError::ArgCount {
            action: schema.name.clone(),
            expected: schema.params.len(),
            found: texts.len(),
        });
    }
    schema
        .params
        .iter()
        .zip(texts)
        .map(|((name, w), text)| {
            value::parse_value(text, *w)
                .map(|v| bits(*w, &v))
                .map_err(|e| StateError::BadArg {
                    action: schema.name.clone(),
                    param: name.clone(),
                    why: e.to_string(),
                })
        })
        .collect()
}

fn parse_priority(text: &str) -> Result<u32> {
    let v = match text.strip_prefix("0x") {
        Some(h) => u64::from_str_radix(h, 16),
        None => text.parse::<u64>(),
    };
    match v {
        Ok(p) if p <= i32::MAX as u64 => Ok(p as u32),
        _ => Err(cmd_err(format!(
            "table is ternary or range, but '{text}' is not a valid priority"
        ))),
    }
}

fn table_add(
    s: &mut State,
    table: &str,
    action: &str,
    keys: &[String],
    params: &[String],
) -> Result<String> {
    let t = s.table_id(table)?;
    let mut params = params.to_vec();
    let needs = s
        .table_by_id(t)
        .is_some_and(|tb| tb.lookup_kind().needs_priority());
    let priority = if needs {
        let p = params.pop().ok_or(cmd_err(
            "table is ternary or range, but no priority was given".into(),
        ))?;
        Some(cli_priority_to_state(parse_priority(&p)?))
    } else {
        None
    };
    let a = s.table_action_id(t, action)?;
    let args = parse_args(s, a, &params)?;
    let keys = parse_keys(s, t, keys)?;
    let name = s
        .action_schema(a)
        .map(|x| x.name.clone())
        .unwrap_or_default();
    let spec = EntrySpec {
        keys,
        action: ActionSpec::action(&name, args),
        priority,
        timeout_ns: None,
    };
    let h = s.table_add_id(t, spec)?;
    Ok(fmt::added(s, t, h))
}

fn table_set_default(
    s: &mut State,
    table: &str,
    action: &str,
    params: &[String],
) -> Result<String> {
    let t = s.table_id(table)?;
    let a = s.table_action_id(t, action)?;
    let args = parse_args(s, a, params)?;
    let name = s
        .action_schema(a)
        .map(|x| x.name.clone())
        .unwrap_or_default();
    let tname = s
        .table_by_id(t)
        .map(|x| x.name().to_string())
        .unwrap_or_default();
    let text = fmt::action_lines(&name, &args);
    s.table_set_default(&tname, ActionSpec::action(&name, args))?;
    Ok(format!("Setting default action of {tname}\n{text}"))
}

fn table_modify(
    s: &mut State,
    table: &str,
    action: &str,
    handle: u64,
    params: &[String],
) -> Result<String> {
    let t = s.table_id(table)?;
    let a = s.table_action_id(t, action)?;
    let args = parse_args(s, a, params)?;
    let name = s
        .action_schema(a)
        .map(|x| x.name.clone())
        .unwrap_or_default();
    let tb = s.table_by_id(t).ok_or(cmd_err("unknown table".into()))?;
    let (tname, kind) = (tb.name().to_string(), tb.lookup_kind().name());
    let text = fmt::action_lines(&name, &args);
    s.table_modify(
        &tname,
        to_u32("handle", handle)?,
        ActionSpec::action(&name, args),
    )?;
    Ok(format!(
        "Modifying entry {handle} for {kind} match table {tname}\n{text}"
    ))
}

fn table_indirect_add(
    s: &mut State,
    table: &str,
    keys: &[String],
    handle: u64,
    group: bool,
    priority: Option<u32>,
) -> Result<String> {
    let t = s.table_id(table)?;
    let keys = parse_keys(s, t, keys)?;
    let h = to_u32("handle", handle)?;
    let action = if group {
        ActionSpec::Group(h)
    } else {
        ActionSpec::Member(h)
    };
    let needs = s
        .table_by_id(t)
        .is_some_and(|tb| tb.lookup_kind().needs_priority());
    let priority = match (needs, priority) {
        (true, Some(p)) => Some(cli_priority_to_state(p)),
        (true, None) => None,
        (false, p) => p,
    };
    let e = s.table_add_id(
        t,
        EntrySpec {
            keys,
            action,
            priority,
            timeout_ns: None,
        },
    )?;
    Ok(fmt::added(s, t, e))
}

/// The `(rate, burst)` pairs of a meter command as meter rates.
pub fn meter_rates(rates: &[(f64, u64)]) -> Vec<MeterRate> {
    rates
        .iter()
        .map(|&(rate, burst)| MeterRate { rate, burst })
        .collect()
}

/// How a mirroring session shows in `mirroring_get`.
pub fn mirror_text(t: MirrorTarget) -> String {
    match t {
        MirrorTarget::Port(p) => format!("MirroringSessionConfig(mgid=None, port={p})"),
        MirrorTarget::Group(g) => format!("MirroringSessionConfig(mgid={g}, port=None)"),
    }
}

/// The action an entry runs, for dumps.
pub fn entry_action_text(s: &State, a: &EntryAction) -> String {
    match a {
        EntryAction::Action(call) => {
            let name = s
                .action_schema(call.action)
                .map_or("?".to_string(), |x| x.name.clone());
            format!("{name} - {}", fmt::hex_list(&call.args, ", "))
        }
        EntryAction::Member(m) => format!("member {m}"),
        EntryAction::Group(g) => format!("group {g}"),
    }
}
