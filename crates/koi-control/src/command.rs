//! The simple_switch_CLI command language: one line in, one typed [`Command`] out.
//!
//! Lines are split on whitespace; `#` starts a comment. Table keys and action parameters stay
//! text here, because their meaning depends on the table's key widths and match kinds and on the
//! action's parameters (a `table_add`'s last word after `=>` is a priority only when the action
//! has one parameter fewer): the switch resolves them with [`crate::value`].

use std::fmt;

#[derive(Clone, Debug, PartialEq)]
pub enum Command {
    TableAdd {
        table: String,
        action: String,
        keys: Vec<String>,
        /// Action parameters, possibly followed by a priority.
        params: Vec<String>,
    },
    TableSetDefault {
        table: String,
        action: String,
        params: Vec<String>,
    },
    TableResetDefault {
        table: String,
    },
    TableDelete {
        table: String,
        handle: u64,
    },
    TableModify {
        table: String,
        action: String,
        handle: u64,
        params: Vec<String>,
    },
    TableDump {
        table: String,
    },
    TableDumpEntry {
        table: String,
        handle: u64,
    },
    TableNumEntries {
        table: String,
    },
    TableClear {
        table: String,
    },
    TableInfo {
        table: String,
    },
    ShowTables,
    ShowActions,
    /// `table_indirect_add T keys => MEMBER [prio]` (or `_with_group` with a group handle).
    TableIndirectAdd {
        table: String,
        keys: Vec<String>,
        handle: u64,
        group: bool,
        priority: Option<u32>,
    },
    TableIndirectSetDefault {
        table: String,
        handle: u64,
        group: bool,
    },
    ActProfCreateMember {
        profile: String,
        action: String,
        params: Vec<String>,
    },
    ActProfDeleteMember {
        profile: String,
        member: u64,
    },
    ActProfModifyMember {
        profile: String,
        action: String,
        member: u64,
        params: Vec<String>,
    },
    ActProfCreateGroup {
        profile: String,
    },
    ActProfDeleteGroup {
        profile: String,
        group: u64,
    },
    ActProfAddMemberToGroup {
        profile: String,
        member: u64,
        group: u64,
    },
    ActProfRemoveMemberFromGroup {
        profile: String,
        member: u64,
        group: u64,
    },
    ActProfDump {
        profile: String,
    },
    McMgrpCreate {
        group: u64,
    },
    McMgrpDestroy {
        group: u64,
    },
    McNodeCreate {
        rid: u64,
        ports: Vec<u64>,
        lags: Vec<u64>,
    },
    McNodeUpdate {
        node: u64,
        ports: Vec<u64>,
        lags: Vec<u64>,
    },
    McNodeDestroy {
        node: u64,
    },
    McNodeAssociate {
        group: u64,
        node: u64,
    },
    McNodeDissociate {
        group: u64,
        node: u64,
    },
    McDump,
    MirroringAdd {
        session: u64,
        port: u64,
    },
    MirroringAddMc {
        session: u64,
        group: u64,
    },
    MirroringDelete {
        session: u64,
    },
    MirroringGet {
        session: u64,
    },
    RegisterRead {
        register: String,
        index: Option<u64>,
    },
    RegisterWrite {
        register: String,
        index: u64,
        value: String,
    },
    RegisterReset {
        register: String,
    },
    CounterRead {
        counter: String,
        index: u64,
    },
    CounterWrite {
        counter: String,
        index: u64,
        packets: u64,
        bytes: u64,
    },
    CounterReset {
        counter: String,
    },
    /// Rates are (rate per microsecond, burst) pairs, as simple_switch_CLI takes them.
    MeterSetRates {
        meter: String,
        index: Option<u64>,
        rates: Vec<(f64, u64)>,
    },
    MeterGetRates {
        meter: String,
        index: u64,
    },
    /// `set_crc16_parameters` / `set_crc32_parameters NAME POLY INIT XOR REFLECT_DATA
    /// REFLECT_REMAINDER`: the parameters of a custom CRC calculation (`calc_N`).
    SetCrcParameters {
        width: u32,
        calc: String,
        poly: u64,
        init: u64,
        xorout: u64,
        reflect_data: bool,
        reflect_remainder: bool,
    },
    /// `show_calculations` (koi's): the custom CRC calculations and their parameters.
    ShowCalculations,
}

/// A command line that could not be understood; nothing was changed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CommandError(pub String);

impl fmt::Display for CommandError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for CommandError {}

/// Names of all commands, for help and completion.
pub const COMMANDS: &[&str] = &[
    "table_add",
    "table_set_default",
    "table_reset_default",
    "table_delete",
    "table_modify",
    "table_dump",
    "table_dump_entry",
    "table_num_entries",
    "table_clear",
    "table_info",
    "show_tables",
    "show_actions",
    "table_indirect_add",
    "table_indirect_add_with_group",
    "table_indirect_set_default",
    "table_indirect_set_default_with_group",
    "act_prof_create_member",
    "act_prof_delete_member",
    "act_prof_modify_member",
    "act_prof_create_group",
    "act_prof_delete_group",
    "act_prof_add_member_to_group",
    "act_prof_remove_member_from_group",
    "act_prof_dump",
    "mc_mgrp_create",
    "mc_mgrp_destroy",
    "mc_node_create",
    "mc_node_update",
    "mc_node_destroy",
    "mc_node_associate",
    "mc_node_dissociate",
    "mc_dump",
    "mirroring_add",
    "mirroring_add_mc",
    "mirroring_delete",
    "mirroring_get",
    "register_read",
    "register_write",
    "register_reset",
    "counter_read",
    "counter_write",
    "counter_reset",
    "meter_set_rates",
    "meter_array_set_rates",
    "meter_get_rates",
    "set_crc16_parameters",
    "set_crc32_parameters",
    "show_calculations",
];

/// Parses one line. Returns `Ok(None)` for a blank or comment line.
pub fn parse(line: &str) -> Result<Option<Command>, CommandError> {
    let line = match line.find('#') {
        Some(i) => &line[..i],
        None => line,
    };
    let words: Vec<&str> = line.split_whitespace().collect();
    let Some((&cmd, rest)) = words.split_first() else {
        return Ok(None);
    };
    let mut a = Args { cmd, rest, pos: 0 };
    let c = match cmd {
        "table_add" => {
            let (table, action) = (a.word("table name")?, a.word("action name")?);
            let (keys, params) = a.split_arrow()?;
            Command::TableAdd {
                table,
                action,
                keys,
                params,
            }
        }
        "table_set_default" => Command::TableSetDefault {
            table: a.word("table name")?,
            action: a.word("action name")?,
            params: a.rest(),
        },
        "table_reset_default" => Command::TableResetDefault {
            table: a.word("table name")?,
        },
        "table_delete" => Command::TableDelete {
            table: a.word("table name")?,
            handle: a.num("entry handle")?,
        },
        "table_modify" => Command::TableModify {
            table: a.word("table name")?,
            action: a.word("action name")?,
            handle: a.num("entry handle")?,
            params: a.rest(),
        },
        "table_dump" => Command::TableDump {
            table: a.word("table name")?,
        },
        "table_dump_entry" => Command::TableDumpEntry {
            table: a.word("table name")?,
            handle: a.num("entry handle")?,
        },
        "table_num_entries" => Command::TableNumEntries {
            table: a.word("table name")?,
        },
        "table_clear" => Command::TableClear {
            table: a.word("table name")?,
        },
        "table_info" => Command::TableInfo {
            table: a.word("table name")?,
        },
        "show_tables" => Command::ShowTables,
        "show_actions" => Command::ShowActions,
        "table_indirect_add" | "table_indirect_add_with_group" => {
            let table = a.word("table name")?;
            let (keys, after) = a.split_arrow()?;
            let what = if cmd.ends_with("group") {
                "group handle"
            } else {
                "member handle"
            };
            let handle = after
                .first()
                .ok_or_else(|| CommandError(format!("{cmd}: missing {what} after '=>'")))
                .and_then(|h| number(cmd, what, h))?;
            let priority = match after.get(1) {
                Some(p) => Some(number(cmd, "priority", p)? as u32),
                None => None,
            };
            if after.len() > 2 {
                return Err(CommandError(format!(
                    "{cmd}: too many arguments after '=>'"
                )));
            }
            Command::TableIndirectAdd {
                table,
                keys,
                handle,
                group: cmd.ends_with("group"),
                priority,
            }
        }
        "table_indirect_set_default" | "table_indirect_set_default_with_group" => {
            Command::TableIndirectSetDefault {
                table: a.word("table name")?,
                handle: a.num("handle")?,
                group: cmd.ends_with("group"),
            }
        }
        "act_prof_create_member" => Command::ActProfCreateMember {
            profile: a.word("action profile name")?,
            action: a.word("action name")?,
            params: a.rest(),
        },
        "act_prof_delete_member" => Command::ActProfDeleteMember {
            profile: a.word("action profile name")?,
            member: a.num("member handle")?,
        },
        "act_prof_modify_member" => Command::ActProfModifyMember {
            profile: a.word("action profile name")?,
            action: a.word("action name")?,
            member: a.num("member handle")?,
            params: a.rest(),
        },
        "act_prof_create_group" => Command::ActProfCreateGroup {
            profile: a.word("action profile name")?,
        },
        "act_prof_delete_group" => Command::ActProfDeleteGroup {
            profile: a.word("action profile name")?,
            group: a.num("group handle")?,
        },
        "act_prof_add_member_to_group" => Command::ActProfAddMemberToGroup {
            profile: a.word("action profile name")?,
            member: a.num("member handle")?,
            group: a.num("group handle")?,
        },
        "act_prof_remove_member_from_group" => Command::ActProfRemoveMemberFromGroup {
            profile: a.word("action profile name")?,
            member: a.num("member handle")?,
            group: a.num("group handle")?,
        },
        "act_prof_dump" => Command::ActProfDump {
            profile: a.word("action profile name")?,
        },
        "mc_mgrp_create" => Command::McMgrpCreate {
            group: a.num("group id")?,
        },
        "mc_mgrp_destroy" => Command::McMgrpDestroy {
            group: a.num("group id")?,
        },
        "mc_node_create" => {
            let rid = a.num("replication id")?;
            let (ports, lags) = a.ports_and_lags()?;
            Command::McNodeCreate { rid, ports, lags }
        }
        "mc_node_update" => {
            let node = a.num("node handle")?;
            let (ports, lags) = a.ports_and_lags()?;
            Command::McNodeUpdate { node, ports, lags }
        }
        "mc_node_destroy" => Command::McNodeDestroy {
            node: a.num("node handle")?,
        },
        "mc_node_associate" => Command::McNodeAssociate {
            group: a.num("group handle")?,
            node: a.num("node handle")?,
        },
        "mc_node_dissociate" => Command::McNodeDissociate {
            group: a.num("group handle")?,
            node: a.num("node handle")?,
        },
        "mc_dump" => Command::McDump,
        "mirroring_add" => Command::MirroringAdd {
            session: a.num("mirror id")?,
            port: a.num("egress port")?,
        },
        "mirroring_add_mc" => Command::MirroringAddMc {
            session: a.num("mirror id")?,
            group: a.num("multicast group")?,
        },
        "mirroring_delete" => Command::MirroringDelete {
            session: a.num("mirror id")?,
        },
        "mirroring_get" => Command::MirroringGet {
            session: a.num("mirror id")?,
        },
        "register_read" => Command::RegisterRead {
            register: a.word("register name")?,
            index: a.opt_num("index")?,
        },
        "register_write" => Command::RegisterWrite {
            register: a.word("register name")?,
            index: a.num("index")?,
            value: a.word("value")?,
        },
        "register_reset" => Command::RegisterReset {
            register: a.word("register name")?,
        },
        "counter_read" => Command::CounterRead {
            counter: a.word("counter name")?,
            index: a.num("index")?,
        },
        "counter_write" => Command::CounterWrite {
            counter: a.word("counter name")?,
            index: a.num("index")?,
            packets: a.num("packet count")?,
            bytes: a.num("byte count")?,
        },
        "counter_reset" => Command::CounterReset {
            counter: a.word("counter name")?,
        },
        "meter_set_rates" => Command::MeterSetRates {
            meter: a.word("meter name")?,
            index: Some(a.num("index")?),
            rates: a.rates()?,
        },
        "meter_array_set_rates" => Command::MeterSetRates {
            meter: a.word("meter name")?,
            index: None,
            rates: a.rates()?,
        },
        "meter_get_rates" => Command::MeterGetRates {
            meter: a.word("meter name")?,
            index: a.num("index")?,
        },
        "set_crc16_parameters" | "set_crc32_parameters" => {
            let width = if cmd == "set_crc16_parameters" {
                16
            } else {
                32
            };
            let calc = a.word("calculation name")?;
            let limit = (1u64 << width) - 1;
            let mut value = |what: &str| -> Result<u64, CommandError> {
                let v = a.num(what)?;
                if v > limit {
                    return Err(CommandError(format!(
                        "{cmd}: {what} {v:#x} does not fit in {width} bits"
                    )));
                }
                Ok(v)
            };
            let (poly, init, xorout) = (
                value("polynomial")?,
                value("initial remainder")?,
                value("final xor value")?,
            );
            Command::SetCrcParameters {
                width,
                calc,
                poly,
                init,
                xorout,
                reflect_data: a.flag("reflect data?")?,
                reflect_remainder: a.flag("reflect remainder?")?,
            }
        }
        "show_calculations" => Command::ShowCalculations,
        _ => return Err(CommandError(format!("unknown command '{cmd}'"))),
    };
    a.finish()?;
    Ok(Some(c))
}

fn number(cmd: &str, what: &str, w: &str) -> Result<u64, CommandError> {
    let v = match w.strip_prefix("0x") {
        Some(h) => u64::from_str_radix(h, 16),
        None => w.parse::<u64>(),
    };
    v.map_err(|_| CommandError(format!("{cmd}: {what} '{w}' is not a number")))
}

struct Args<'a> {
    cmd: &'a str,
    rest: &'a [&'a str],
    pos: usize,
}

impl Args<'_> {
    fn word(&mut self, what: &str) -> Result<String, CommandError> {
        let w = self
            .rest
            .get(self.pos)
            .ok_or_else(|| CommandError(format!("{}: missing {what}", self.cmd)))?;
        self.pos += 1;
        Ok(w.to_string())
    }

    fn num(&mut self, what: &str) -> Result<u64, CommandError> {
        let w = self.word(what)?;
        number(self.cmd, what, &w)
    }

    /// `true`/`1` or `false`/`0`, as simple_switch_CLI reads a yes-or-no argument.
    fn flag(&mut self, what: &str) -> Result<bool, CommandError> {
        match self.word(what)?.to_ascii_lowercase().as_str() {
            "true" | "1" => Ok(true),
            "false" | "0" => Ok(false),
            w => Err(CommandError(format!(
                "{}: {what} '{w}' is not true or false",
                self.cmd
            ))),
        }
    }

    fn opt_num(&mut self, what: &str) -> Result<Option<u64>, CommandError> {
        if self.pos >= self.rest.len() {
            return Ok(None);
        }
        self.num(what).map(Some)
    }

    fn rest(&mut self) -> Vec<String> {
        let r = self.rest[self.pos.min(self.rest.len())..]
            .iter()
            .map(|s| s.to_string())
            .collect();
        self.pos = self.rest.len();
        r
    }

    /// `k1 k2 ... => p1 p2 ...`
    fn split_arrow(&mut self) -> Result<(Vec<String>, Vec<String>), CommandError> {
        let all = self.rest();
        let Some(i) = all.iter().position(|w| w == "=>") else {
            return Err(CommandError(format!(
                "{}: missing '=>' between the match fields and the action parameters",
                self.cmd
            )));
        };
        let params = all[i + 1..].to_vec();
        let mut keys = all;
        keys.truncate(i);
        Ok((keys, params))
    }

    /// `PORT... [| LAG...]`
    fn ports_and_lags(&mut self) -> Result<(Vec<u64>, Vec<u64>), CommandError> {
        let all = self.rest();
        let mut ports = Vec::new();
        let mut lags = Vec::new();
        let mut in_lags = false;
        for w in &all {
            if w == "|" {
                in_lags = true;
                continue;
            }
            let v = number(self.cmd, "port", w)?;
            if in_lags { lags.push(v) } else { ports.push(v) }
        }
        Ok((ports, lags))
    }

    /// `RATE:BURST ...`
    fn rates(&mut self) -> Result<Vec<(f64, u64)>, CommandError> {
        let all = self.rest();
        if all.is_empty() {
            return Err(CommandError(format!(
                "{}: missing RATE:BURST pairs",
                self.cmd
            )));
        }
        all.iter()
            .map(|w| {
                let bad = || CommandError(format!("{}: '{w}' is not RATE:BURST", self.cmd));
                let (r, b) = w.split_once(':').ok_or_else(bad)?;
                let r: f64 = r.parse().map_err(|_| bad())?;
                let b: u64 = b.parse().map_err(|_| bad())?;
                if !r.is_finite() || r < 0.0 {
                    return Err(bad());
                }
                Ok((r, b))
            })
            .collect()
    }

    fn finish(&self) -> Result<(), CommandError> {
        if self.pos < self.rest.len() {
            return Err(CommandError(format!(
                "{}: unexpected '{}'",
                self.cmd, self.rest[self.pos]
            )));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn crc_parameters_are_read_as_simple_switch_cli_reads_them() {
        let c = parse("set_crc16_parameters calc_0 0x1021 0x0 0 false 1")
            .unwrap()
            .unwrap();
        assert_eq!(
            c,
            Command::SetCrcParameters {
                width: 16,
                calc: "calc_0".into(),
                poly: 0x1021,
                init: 0,
                xorout: 0,
                reflect_data: false,
                reflect_remainder: true,
            }
        );
        let c = parse("set_crc32_parameters calc_1 0x1EDC6F41 0xffffffff 0xffffffff true true")
            .unwrap()
            .unwrap();
        assert!(matches!(
            c,
            Command::SetCrcParameters {
                width: 32,
                poly: 0x1EDC6F41,
                ..
            }
        ));
        // A value wider than the CRC, a yes-or-no that is neither, a missing argument.
        assert!(parse("set_crc16_parameters calc_0 0x11021 0 0 false false").is_err());
        assert!(parse("set_crc16_parameters calc_0 0x1021 0 0 maybe false").is_err());
        assert!(parse("set_crc16_parameters calc_0 0x1021 0 0 false").is_err());
        assert_eq!(
            parse("show_calculations").unwrap(),
            Some(Command::ShowCalculations)
        );
    }

    #[test]
    fn table_add_splits_keys_and_params() {
        let c = parse("table_add acl drop 6&&&0xff 10.0.0.1&&&0xffffffff => 100 # comment")
            .unwrap()
            .unwrap();
        assert_eq!(
            c,
            Command::TableAdd {
                table: "acl".into(),
                action: "drop".into(),
                keys: vec!["6&&&0xff".into(), "10.0.0.1&&&0xffffffff".into()],
                params: vec!["100".into()],
            }
        );
        assert!(parse("table_add t a 1 2").unwrap_err().0.contains("=>"));
    }

    #[test]
    fn blank_and_comment_lines() {
        assert_eq!(parse("   ").unwrap(), None);
        assert_eq!(parse("# x").unwrap(), None);
    }

    #[test]
    fn multicast_and_mirroring() {
        assert_eq!(
            parse("mc_node_create 400 1 2 | 3").unwrap().unwrap(),
            Command::McNodeCreate {
                rid: 400,
                ports: vec![1, 2],
                lags: vec![3]
            }
        );
        assert_eq!(
            parse("mirroring_add_mc 5 1").unwrap().unwrap(),
            Command::MirroringAddMc {
                session: 5,
                group: 1
            }
        );
        assert!(
            parse("mc_mgrp_create x")
                .unwrap_err()
                .0
                .contains("not a number")
        );
        assert!(
            parse("mc_mgrp_create 1 2")
                .unwrap_err()
                .0
                .contains("unexpected")
        );
    }

    #[test]
    fn meters_and_registers() {
        assert_eq!(
            parse("meter_set_rates m 0 0.0001:1 0.0005:2")
                .unwrap()
                .unwrap(),
            Command::MeterSetRates {
                meter: "m".into(),
                index: Some(0),
                rates: vec![(0.0001, 1), (0.0005, 2)]
            }
        );
        assert_eq!(
            parse("register_read r").unwrap().unwrap(),
            Command::RegisterRead {
                register: "r".into(),
                index: None
            }
        );
        assert!(parse("frob").unwrap_err().0.contains("unknown command"));
    }

    #[test]
    fn every_listed_command_is_known() {
        for c in COMMANDS {
            let e = parse(c);
            if let Err(e) = e {
                assert!(!e.0.contains("unknown command"), "{c}: {e}");
            }
        }
    }

    #[test]
    fn example_entries_file_parses() {
        let text = include_str!("../../../examples/l2l3_acl.entries");
        let n = text
            .lines()
            .filter_map(|l| parse(l).unwrap_or_else(|e| panic!("{l}: {e}")))
            .count();
        assert_eq!(n, 53);
    }
}
