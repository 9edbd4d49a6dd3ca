//! `RegisterEntry` (spec "RegisterEntry"): register cells as `P4Data` of the register's type
//! spec ([`crate::p4data`]; a struct cell is its fields packed, first field highest).
//!
//! Writes are MODIFY only (`INVALID_ARGUMENT` for INSERT and DELETE) and need `data`
//! (`INVALID_ARGUMENT`); an unset index writes every cell (at any size). Indices as for
//! counters: below 0 `INVALID_ARGUMENT`, past the size `OUT_OF_RANGE`. Reads: register id 0
//! reads every register, an unset index every cell (at most 2^20 cells per register,
//! `RESOURCE_EXHAUSTED` beyond).

use crate::counters::{cells, index};
use crate::error::{Result, invalid};
use crate::p4data::{Types, pack, unpack};
use crate::target::Target;
use crate::undo::Step;
use crate::write::{Cx, Effect, Op, modify_only, object};
use koi_proto::p4runtime::{Entity, Index, RegisterEntry, entity};
use koi_state::State;

pub(crate) fn write(cx: &mut Cx, op: Op, r: &RegisterEntry) -> Result<Effect> {
    modify_only(op, "register entries")?;
    let info = object(&cx.schema.registers, r.register_id, "register")?;
    let i = match &r.index {
        Some(i) => Some(index(&info.name, i, info.size)?),
        None => None,
    };
    let Some(data) = &r.data else {
        return Err(invalid(format!(
            "{}: a register write needs data",
            info.name
        )));
    };
    let Some(spec) = &info.spec else {
        return Err(invalid(format!("{} has no type in the P4Info", info.name)));
    };
    let width =
        cx.s.register(info.ext)
            .map(|a| a.width)
            .ok_or_else(|| invalid(format!("{} is not a register", info.name)))?;
    let types = Types::of(cx.schema);
    let widths = types.leaf_widths(spec, width)?;
    let values = types.decode(cx.strings, spec, data, &widths, &info.name)?;
    let cell = pack(&values).map_or_else(|| koi_ir::Bits::zero(width), |v| v.resize(width));
    let Some(arr) = cx.s.register_mut(info.ext) else {
        return Err(invalid(format!("{} is not a register", info.name)));
    };
    match i {
        Some(i) => {
            let old = arr
                .get(i)
                .cloned()
                .unwrap_or_else(|| koi_ir::Bits::zero(width));
            arr.set(i, &cell);
            cx.undo.push(Step::RegisterCell {
                ext: info.ext,
                index: i,
                old,
            });
        }
        None => {
            let old = Box::new(arr.clone());
            arr.fill(&cell);
            cx.undo.push(Step::RegisterAll { ext: info.ext, old });
        }
    }
    Ok(Effect::All)
}

pub(crate) fn read(
    t: &Target,
    s: &State,
    r: &RegisterEntry,
    out: &mut dyn FnMut(Entity),
) -> Result<()> {
    let types = Types::of(&t.schema);
    for info in t.schema.registers.select(r.register_id, "register")? {
        let range = cells(&info.name, r.index.as_ref(), info.size)?;
        let (Some(arr), Some(spec)) = (s.register(info.ext), &info.spec) else {
            continue;
        };
        let widths = types.leaf_widths(spec, arr.width)?;
        for i in range {
            let Some(cell) = arr.get(i) else {
                continue;
            };
            let data = types.encode(&t.strings, spec, &unpack(cell, &widths))?;
            out(Entity {
                entity: Some(entity::Entity::RegisterEntry(RegisterEntry {
                    register_id: info.id,
                    index: Some(Index { index: i as i64 }),
                    data: Some(data),
                })),
            });
        }
    }
    Ok(())
}
