//! `ValueSetEntry` (spec "ValueSetEntry"): the members of a parser value set.
//!
//! MODIFY only (`INVALID_ARGUMENT` for INSERT and DELETE): the members given replace the set's
//! (none empties it). Each member's `FieldMatch` list follows the table rules
//! ([`crate::matches`]: don't-care fields left out, no priority); more members than the set's
//! size is `RESOURCE_EXHAUSTED`, a member given twice `ALREADY_EXISTS`. Reads: id 0 reads every
//! value set, each as one entry with all its members.

use crate::error::{Result, exhausted, exists, invalid};
use crate::matches::{self, Strs};
use crate::target::Target;
use crate::undo::Step;
use crate::write::{Cx, Effect, Op, modify_only, object};
use koi_ir::Pattern;
use koi_proto::p4runtime::{Entity, ValueSetEntry, ValueSetMember, entity};
use koi_state::State;
use koi_state::schema::canonical;
use std::collections::HashSet;

pub(crate) fn write(cx: &mut Cx, op: Op, v: &ValueSetEntry) -> Result<Effect> {
    modify_only(op, "value set entries")?;
    let info = object(&cx.schema.value_sets, v.value_set_id, "value set")?;
    if v.members.len() > info.size as usize {
        return Err(exhausted(format!(
            "value set {}: {} members, above its size {}",
            info.name,
            v.members.len(),
            info.size
        )));
    }
    let owner = format!("value set {}", info.name);
    let mut members: Vec<Vec<Pattern>> = Vec::with_capacity(v.members.len());
    let mut seen = HashSet::new();
    for m in &v.members {
        let ps = matches::decode(
            &owner,
            &info.fields,
            &m.r#match,
            &mut Strs::Alloc(cx.strings),
        )?
        .ok_or_else(|| invalid(format!("{owner}: unknown string")))?;
        let ps = info
            .fields
            .iter()
            .zip(&ps)
            .map(|(f, p)| canonical(&f.kind, f.codec.width, p))
            .collect::<std::result::Result<Vec<Pattern>, String>>()
            .map_err(|why| invalid(format!("{owner}: {why}")))?;
        if !seen.insert(ps.clone()) {
            return Err(exists(format!("{owner}: a member is given twice")));
        }
        members.push(ps);
    }
    let old =
        cx.s.value_set_members_by_id(info.vs)
            .map(|m| m.to_vec())
            .unwrap_or_default();
    cx.undo.push(Step::ValueSet {
        vs: info.vs,
        members: old,
    });
    cx.s.value_set_clear(&info.name)?;
    for m in &members {
        cx.s.value_set_add(&info.name, m)?;
    }
    Ok(Effect::All)
}

pub(crate) fn read(
    t: &Target,
    s: &State,
    v: &ValueSetEntry,
    out: &mut dyn FnMut(Entity),
) -> Result<()> {
    for info in t.schema.value_sets.select(v.value_set_id, "value set")? {
        let members = s
            .value_set_members_by_id(info.vs)
            .unwrap_or_default()
            .iter()
            .map(|m| ValueSetMember {
                r#match: matches::encode(&info.fields, m, &t.strings),
            })
            .collect();
        out(Entity {
            entity: Some(entity::Entity::ValueSetEntry(ValueSetEntry {
                value_set_id: info.id,
                members,
            })),
        });
    }
    Ok(())
}
