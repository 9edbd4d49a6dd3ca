//! Action specifications (spec "Action Specification"): a P4Runtime `Action` to the action
//! and arguments koi-state runs, and back.
//!
//! The action must be one of the table's (or, for a member, of its profile's tables),
//! `INVALID_ARGUMENT` otherwise; one used against its scope (a `@defaultonly` action in an
//! entry, a `@tableonly` one as the default) is `PERMISSION_DENIED`. Every parameter must be
//! given exactly once with a known id (`INVALID_ARGUMENT`), its value a bytestring of the
//! parameter's width (`OUT_OF_RANGE`) or of its translated type.

use crate::error::{Result, denied, invalid};
use crate::matches::Strs;
use crate::schema::{ActionInfo, Schema};
use crate::translate::Strings;
use koi_ir::{ActionCall, Bits};
use koi_proto::p4info::action_ref::Scope;
use koi_proto::p4runtime::{Action, action};
use koi_state::ActionSpec;

/// Where an action is used.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Use {
    Entry,
    Default,
    Member,
}

/// The action and arguments of `a`; `scope_of` gives the scope of the actions allowed there.
/// `None` when a string argument is unknown to a lookup.
pub(crate) fn decode<'s>(
    schema: &'s Schema,
    strs: &mut Strs,
    owner: &str,
    scope_of: &dyn Fn(u32) -> Option<Scope>,
    a: &Action,
    usage: Use,
) -> Result<Option<(&'s ActionInfo, Vec<Bits>)>> {
    let info = schema.actions.get(a.action_id);
    let name = || info.map_or_else(|| format!("id {}", a.action_id), |i| i.name.clone());
    let (Some(info), Some(scope)) = (info, scope_of(a.action_id)) else {
        return Err(invalid(format!(
            "action {} is not an action of {owner}",
            name()
        )));
    };
    match (usage, scope) {
        (Use::Entry | Use::Member, Scope::DefaultOnly) => {
            return Err(denied(format!(
                "action {} may only be the default action of {owner}",
                info.name
            )));
        }
        (Use::Default, Scope::TableOnly) => {
            return Err(denied(format!(
                "action {} may not be the default action of {owner}",
                info.name
            )));
        }
        _ => {}
    }
    let mut given: Vec<Option<&action::Param>> = vec![None; info.params.len()];
    for p in &a.params {
        let Some(pos) = info.params.iter().position(|x| x.id == p.param_id) else {
            return Err(invalid(format!(
                "action {} has no parameter with id {}",
                info.name, p.param_id
            )));
        };
        if given[pos].replace(p).is_some() {
            return Err(invalid(format!(
                "action {}: parameter {} is given twice",
                info.name, info.params[pos].name
            )));
        }
    }
    let mut args = Vec::with_capacity(given.len());
    for (pi, p) in info.params.iter().zip(given) {
        let Some(p) = p else {
            return Err(invalid(format!(
                "action {}: parameter {} is missing",
                info.name, pi.name
            )));
        };
        let what = || format!("action {}, parameter {}", info.name, pi.name);
        match strs.value(&pi.codec, &p.value, &what)? {
            Some(v) => args.push(v),
            None => return Ok(None),
        }
    }
    Ok(Some((info, args)))
}

/// As [`decode`], for writes: the koi-state action spec.
pub(crate) fn decode_spec(
    schema: &Schema,
    strings: &mut Strings,
    owner: &str,
    scope_of: &dyn Fn(u32) -> Option<Scope>,
    a: &Action,
    usage: Use,
) -> Result<ActionSpec> {
    let (info, args) = decode(schema, &mut Strs::Alloc(strings), owner, scope_of, a, usage)?
        .ok_or_else(|| invalid(format!("{owner}: unknown string")))?;
    Ok(ActionSpec::action(&info.name, args))
}

/// The P4Runtime `Action` of a call (action id 0 if P4Info does not list the action).
pub(crate) fn encode(schema: &Schema, strings: &Strings, call: &ActionCall) -> Action {
    let id = schema.action_of.get(&call.action).copied().unwrap_or(0);
    let params = match schema.actions.get(id) {
        Some(info) => info
            .params
            .iter()
            .zip(&call.args)
            .map(|(p, v)| action::Param {
                param_id: p.id,
                value: p.codec.encode(v, strings),
            })
            .collect(),
        None => Vec::new(),
    };
    Action {
        action_id: id,
        params,
    }
}
