//! The text simple_switch_CLI prints: match keys (`EXACT-0a:00:00:01`, `LPM-0a:00:00:00/8`,
//! `TERNARY-06 &&& ff`, `RANGE-01 -> 05`), action data, table dumps, `mc_dump`.

use crate::cli::{entry_action_text, state_priority_to_cli};
use crate::error::Result;
use crate::state::State;
use crate::table::Entry;
use koi_ir::{Bits, Pattern, TableId};

/// Bytes as `aa:bb:cc`.
pub fn bytes(b: &Bits) -> String {
    let v: Vec<String> = b.to_be_bytes().iter().map(|x| format!("{x:02x}")).collect();
    v.join(":")
}

/// A value in decimal (hexadecimal with `0x` when wider than 128 bits).
pub fn decimal(b: &Bits) -> String {
    match b.to_u128() {
        Some(v) => v.to_string(),
        None => format!("{b:#x}"),
    }
}

/// Values as hex bytes, joined by `sep`.
pub fn hex_list(vals: &[Bits], sep: &str) -> String {
    vals.iter().map(bytes).collect::<Vec<_>>().join(sep)
}

/// One match key as BMv2 prints it.
pub fn key(p: &Pattern) -> String {
    match p {
        Pattern::Exact(v) => format!("EXACT-{}", bytes(v)),
        Pattern::Prefix { value, len } => format!("LPM-{}/{len}", bytes(value)),
        Pattern::Mask { value, mask } => format!("TERNARY-{} &&& {}", bytes(value), bytes(mask)),
        Pattern::Range { lo, hi } => format!("RANGE-{} -> {}", bytes(lo), bytes(hi)),
        Pattern::Any => "ANY".to_string(),
    }
}

/// The `action:` and `runtime data:` lines.
pub fn action_lines(name: &str, args: &[Bits]) -> String {
    format!(
        "action:              {name}\nruntime data:        {}",
        hex_list(args, "\t")
    )
}

/// What `table_add` prints for a new entry.
pub fn added(s: &State, t: TableId, handle: u32) -> String {
    let Some(tb) = s.table_by_id(t) else {
        return format!("Entry has been added with handle {handle}");
    };
    let Some(e) = tb.get(handle) else {
        return format!("Entry has been added with handle {handle}");
    };
    let keys: Vec<String> = e.keys.iter().map(key).collect();
    format!(
        "Adding entry to {} match table {}\nmatch key:           {}\n{}\nEntry has been added with handle {handle}",
        tb.lookup_kind().name(),
        tb.name(),
        keys.join("\t"),
        action_text(s, e),
    )
}

fn action_text(s: &State, e: &Entry) -> String {
    format!("action:              {}", entry_action_text(s, &e.action))
}

/// One entry, as `table_dump_entry` prints it.
pub fn entry(s: &State, t: TableId, e: &Entry) -> String {
    let mut out = format!("Dumping entry {:#x}\nMatch key:\n", e.handle);
    if let Some(tb) = s.table_by_id(t) {
        for (k, p) in tb.schema.keys.iter().zip(&e.keys) {
            out.push_str(&format!("* {:<20}: {}\n", k.name, key(p)));
        }
    }
    if let Some(p) = e.priority {
        out.push_str(&format!("Priority: {}\n", state_priority_to_cli(p)));
    }
    out.push_str(&format!(
        "Action entry: {}",
        entry_action_text(s, &e.action)
    ));
    out
}

/// `table_dump`.
pub fn dump_table(s: &State, t: TableId) -> Result<String> {
    let mut out = String::from("==========\nTABLE ENTRIES\n");
    if let Some(tb) = s.table_by_id(t) {
        for e in tb.entries() {
            out.push_str(&format!("**********\n{}\n", entry(s, t, e)));
        }
        out.push_str(&format!(
            "==========\nDumping default entry\nAction entry: {}\n==========",
            entry_action_text(s, tb.default_action())
        ));
    }
    Ok(out)
}

/// `table_info` / one line of `show_tables`.
pub fn table_info(s: &State, t: TableId) -> String {
    let Some(tb) = s.table_by_id(t) else {
        return String::new();
    };
    let imp = tb
        .schema
        .implementation
        .and_then(|e| s.extern_name(e))
        .unwrap_or("None");
    let keys: Vec<String> = tb
        .schema
        .keys
        .iter()
        .map(|k| format!("{}({}, {})", k.name, k.kind, k.width))
        .collect();
    format!(
        "{:<30} [implementation={imp}, mk={}]",
        tb.name(),
        keys.join(",\t")
    )
}

/// `show_tables`.
pub fn show_tables(s: &State) -> String {
    s.tables()
        .map(|t| table_info(s, t.schema.id))
        .collect::<Vec<_>>()
        .join("\n")
}

/// `show_actions`.
pub fn show_actions(s: &State) -> String {
    s.actions
        .iter()
        .map(|a| {
            let ps: Vec<String> = a.params.iter().map(|(n, w)| format!("{n}({w})")).collect();
            format!("{:<30} [{}]", a.name, ps.join(",\t"))
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// A port list as BMv2's port map string: one digit per port, the highest port first.
pub fn port_map(ports: &[u64]) -> String {
    let Some(&max) = ports.iter().max() else {
        return String::new();
    };
    let max = max.min(4095);
    (0..=max)
        .rev()
        .map(|p| if ports.contains(&p) { '1' } else { '0' })
        .collect()
}

/// `mc_dump`.
pub fn mc_dump(s: &State) -> String {
    let mut out = String::from("==========\nMC ENTRIES\n");
    for (g, nodes) in s.pre.groups() {
        out.push_str(&format!("**********\nmgrp({g})\n"));
        for &n in nodes {
            if let Some(node) = s.pre.node(n) {
                let ports: Vec<String> = node.ports.iter().map(|p| p.to_string()).collect();
                let lags: Vec<String> = node.lags.iter().map(|p| p.to_string()).collect();
                out.push_str(&format!(
                    "  -> (L1h={n}, rid={}) -> (ports=[{}], lags=[{}])\n",
                    node.rid,
                    ports.join(", "),
                    lags.join(", ")
                ));
            }
        }
    }
    out.push_str("==========\nLAGS\n==========");
    out
}

/// `act_prof_dump`.
pub fn profile_dump(s: &State, name: &str) -> Result<String> {
    let p = s.profile(name)?;
    let mut out = String::from("==========\nMEMBERS\n");
    for (h, m) in p.members.iter() {
        let a = s
            .action_schema(m.call.action)
            .map_or("?".to_string(), |x| x.name.clone());
        out.push_str(&format!(
            "**********\nDumping member {h}\nAction entry: {a} - {}\n",
            hex_list(&m.call.args, ", ")
        ));
    }
    out.push_str("==========\nGROUPS\n");
    for (h, g) in p.groups.iter() {
        let ms: Vec<String> = g.members.iter().map(|m| m.to_string()).collect();
        out.push_str(&format!(
            "**********\nDumping group {h}\nMembers: [{}]\n",
            ms.join(", ")
        ));
    }
    out.push_str("==========");
    Ok(out)
}
