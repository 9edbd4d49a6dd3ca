//! The simple_switch_CLI commands on externs, multicast and mirroring (see [`crate::cli`]).

use crate::arrays::CounterValue;
use crate::cli::{meter_rates, mirror_text, parse_args};
use crate::cli_format as fmt;
use crate::error::{Result, StateError};
use crate::pre::MirrorTarget;
use crate::state::{ExternState, State};
use koi_control::command::Command;
use koi_control::value;
use koi_ir::Bits;

fn to_u32(what: &str, v: u64) -> Result<u32> {
    u32::try_from(v).map_err(|_| StateError::Command(format!("{what} {v} is too large")))
}

/// Executes a command that is not about tables.
pub fn execute(s: &mut State, c: &Command) -> Result<String> {
    use Command::*;
    match c {
        McMgrpCreate { .. }
        | McMgrpDestroy { .. }
        | McNodeCreate { .. }
        | McNodeUpdate { .. }
        | McNodeDestroy { .. }
        | McNodeAssociate { .. }
        | McNodeDissociate { .. }
        | McDump => multicast(s, c),
        MirroringAdd { session, port } => {
            let p = to_u32("port", *port)?;
            s.mirroring_add(*session, MirrorTarget::Port(p))
                .map(|_| String::new())
        }
        MirroringAddMc { session, group } => {
            let g = to_u32("group", *group)?;
            s.mirroring_add(*session, MirrorTarget::Group(g))
                .map(|_| String::new())
        }
        MirroringDelete { session } => s.mirroring.delete(*session).map(|_| String::new()),
        MirroringGet { session } => {
            s.mirror_session(*session)
                .map(mirror_text)
                .ok_or(StateError::Mirroring(
                    "Invalid mirroring operation (SESSION_NOT_FOUND)".into(),
                ))
        }
        ActProfCreateMember { .. }
        | ActProfDeleteMember { .. }
        | ActProfModifyMember { .. }
        | ActProfCreateGroup { .. }
        | ActProfDeleteGroup { .. }
        | ActProfAddMemberToGroup { .. }
        | ActProfRemoveMemberFromGroup { .. }
        | ActProfDump { .. } => profiles(s, c),
        SetCrcParameters {
            width,
            calc,
            poly,
            init,
            xorout,
            reflect_data,
            reflect_remainder,
        } => {
            let params = koi_hash::crc::CrcParams {
                width: *width,
                poly: *poly,
                init: *init,
                refin: *reflect_data,
                refout: *reflect_remainder,
                xorout: *xorout,
            };
            s.set_custom_crc(calc, params).map(|_| String::new())
        }
        ShowCalculations => Ok(s
            .calculations()
            .map(|(name, p)| {
                format!(
                    "{name}: crc{}_custom polynomial {:#x} initial remainder {:#x} final xor \
                     value {:#x} reflect data {} reflect remainder {}",
                    p.width, p.poly, p.init, p.xorout, p.refin, p.refout
                )
            })
            .collect::<Vec<_>>()
            .join("\n")),
        _ => arrays(s, c),
    }
}

fn multicast(s: &mut State, c: &Command) -> Result<String> {
    use Command::*;
    Ok(match c {
        McMgrpCreate { group } => {
            s.pre.group_create(to_u32("group", *group)?)?;
            format!("Creating multicast group {group}")
        }
        McMgrpDestroy { group } => {
            s.pre.group_destroy(to_u32("group", *group)?)?;
            format!("Destroying multicast group {group}")
        }
        McNodeCreate { rid, ports, lags } => {
            let h = s.pre.node_create(*rid, ports, lags)?;
            format!(
                "Creating node with rid {rid} , port map {} and lag map {}\nnode was created with handle {h}",
                fmt::port_map(ports),
                fmt::port_map(lags)
            )
        }
        McNodeUpdate { node, ports, lags } => {
            s.pre.node_update(to_u32("node", *node)?, ports, lags)?;
            format!(
                "Updating node {node} with port map {} and lag map {}",
                fmt::port_map(ports),
                fmt::port_map(lags)
            )
        }
        McNodeDestroy { node } => {
            s.pre.node_destroy(to_u32("node", *node)?)?;
            format!("Destroying node {node}")
        }
        McNodeAssociate { group, node } => {
            s.pre
                .associate(to_u32("group", *group)?, to_u32("node", *node)?)?;
            format!("Associating node {node} to multicast group {group}")
        }
        McNodeDissociate { group, node } => {
            s.pre
                .dissociate(to_u32("group", *group)?, to_u32("node", *node)?)?;
            format!("Dissociating node {node} from multicast group {group}")
        }
        _ => fmt::mc_dump(s),
    })
}

fn profiles(s: &mut State, c: &Command) -> Result<String> {
    use Command::*;
    match c {
        ActProfCreateMember {
            profile,
            action,
            params,
        } => {
            let args = member_args(s, profile, action, params)?;
            let h = s.profile_add_member(profile, action, &args)?;
            Ok(format!("Member has been created with handle {h}"))
        }
        ActProfDeleteMember { profile, member } => s
            .profile_delete_member(profile, to_u32("member", *member)?)
            .map(|_| String::new()),
        ActProfModifyMember {
            profile,
            action,
            member,
            params,
        } => {
            let args = member_args(s, profile, action, params)?;
            s.profile_modify_member(profile, to_u32("member", *member)?, action, &args)
                .map(|_| String::new())
        }
        ActProfCreateGroup { profile } => {
            let h = s.profile_create_group(profile)?;
            Ok(format!("Group has been created with handle {h}"))
        }
        ActProfDeleteGroup { profile, group } => s
            .profile_delete_group(profile, to_u32("group", *group)?)
            .map(|_| String::new()),
        ActProfAddMemberToGroup {
            profile,
            member,
            group,
        } => s
            .profile_add_to_group(
                profile,
                to_u32("member", *member)?,
                to_u32("group", *group)?,
            )
            .map(|_| String::new()),
        ActProfRemoveMemberFromGroup {
            profile,
            member,
            group,
        } => s
            .profile_remove_from_group(
                profile,
                to_u32("member", *member)?,
                to_u32("group", *group)?,
            )
            .map(|_| String::new()),
        ActProfDump { profile } => fmt::profile_dump(s, profile),
        _ => Err(StateError::Command("not an action profile command".into())),
    }
}

fn member_args(s: &State, profile: &str, action: &str, params: &[String]) -> Result<Vec<Bits>> {
    let a = s.profile_action(profile, action)?;
    parse_args(s, a, params)
}

fn register_width(s: &State, name: &str) -> Result<u32> {
    let id = s.extern_id(name)?;
    match s.extern_state(id) {
        Some(ExternState::Register(r)) => Ok(r.width),
        _ => Err(StateError::WrongKind {
            name: name.to_string(),
            expected: "register",
        }),
    }
}

fn arrays(s: &mut State, c: &Command) -> Result<String> {
    use Command::*;
    match c {
        RegisterRead {
            register,
            index: Some(i),
        } => {
            let v = s.register_read(register, *i)?;
            Ok(format!("{register}[{i}]= {}", fmt::decimal(&v)))
        }
        RegisterRead {
            register,
            index: None,
        } => {
            let all = s.register_read_all(register)?;
            let vals: Vec<String> = all.iter().map(fmt::decimal).collect();
            Ok(format!("{register}= {}", vals.join(", ")))
        }
        RegisterWrite {
            register,
            index,
            value: text,
        } => {
            let w = register_width(s, register)?;
            let v = value::parse_value(text, w).map_err(|e| StateError::Command(e.to_string()))?;
            s.register_write(register, *index, &Bits::from_be_bytes(w, &v))
                .map(|_| String::new())
        }
        RegisterReset { register } => s.register_reset(register).map(|_| String::new()),
        CounterRead { counter, index } => {
            let v = s.counter_read(counter, *index)?;
            Ok(format!(
                "{counter}[{index}]=  BmCounterValue(packets={}, bytes={})",
                v.packets, v.bytes
            ))
        }
        CounterWrite {
            counter,
            index,
            packets,
            bytes,
        } => {
            let v = CounterValue {
                packets: *packets,
                bytes: *bytes,
            };
            s.counter_write(counter, *index, v).map(|_| String::new())
        }
        CounterReset { counter } => s.counter_reset(counter).map(|_| String::new()),
        MeterSetRates {
            meter,
            index,
            rates,
        } => s
            .meter_set_rates(meter, *index, &meter_rates(rates))
            .map(|_| String::new()),
        MeterGetRates { meter, index } => Ok(match s.meter_get_rates(meter, *index)? {
            None => String::new(),
            Some(rates) => rates
                .iter()
                .enumerate()
                .map(|(i, r)| format!("{i}: info rate = {}, burst size = {}", r.rate, r.burst))
                .collect::<Vec<_>>()
                .join("\n"),
        }),
        other => Err(StateError::Command(format!(
            "command not supported: {other:?}"
        ))),
    }
}
