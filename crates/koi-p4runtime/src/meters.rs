//! `MeterEntry` and `DirectMeterEntry` (spec "MeterEntry & DirectMeterEntry"), and the
//! `MeterConfig` of table entries.
//!
//! koi's meters are BMv2's two-rate three-colour markers ([`koi_state::meter`]): a config is
//! `cir`/`pir` in units (bytes or packets, the meter's unit) per second and `cburst`/`pburst`
//! in units, kept as rates per microsecond, which read back as written. An unset config
//! resets the meter to the default (unconfigured: every packet green), as MODIFY without a
//! config does. Refused with `INVALID_ARGUMENT`: negative values, `cir` above `pir`, `eburst`
//! on a two-rate meter, and for single-rate meter types (`MeterSpec.type`) a `pir`/`pburst`
//! other than `cir`/`cburst`; `eburst` on a single-rate three-colour meter is `UNIMPLEMENTED`
//! (koi's meters are two-rate). koi keeps no per-colour counters: `MeterCounterData` in a
//! request is `UNIMPLEMENTED`. Both entities are MODIFY only; indices, wildcards and direct
//! entries work as for counters ([`crate::counters`]).

use crate::counters::{cells, index, selected};
use crate::entries;
use crate::error::{Result, invalid, unimplemented};
use crate::schema::TableInfo;
use crate::target::Target;
use crate::undo::Step;
use crate::write::{Cx, Effect, Op, modify_only, object};
use koi_proto::p4info::meter_spec;
use koi_proto::p4runtime::{DirectMeterEntry, Entity, Index, MeterConfig, MeterEntry, entity};
use koi_state::meter::Meter;
use koi_state::{MeterRate, State};

/// A meter configured as `cfg` says, for a meter of type `meter_type` (`MeterSpec.Type`).
pub(crate) fn meter(what: &str, cfg: &MeterConfig, meter_type: i32) -> Result<Meter> {
    let vals = [cfg.cir, cfg.cburst, cfg.pir, cfg.pburst, cfg.eburst];
    if vals.iter().any(|v| *v < 0) {
        return Err(invalid(format!(
            "{what}: meter rates and bursts cannot be negative"
        )));
    }
    let single = (cfg.pir, cfg.pburst) == (cfg.cir, cfg.cburst);
    match meter_spec::Type::try_from(meter_type).unwrap_or(meter_spec::Type::TwoRateThreeColor) {
        meter_spec::Type::TwoRateThreeColor if cfg.eburst != 0 => {
            return Err(invalid(format!("{what}: eburst is for single-rate meters")));
        }
        meter_spec::Type::SingleRateTwoColor if !single || cfg.eburst != 0 => {
            return Err(invalid(format!(
                "{what}: a single-rate two-colour meter takes pir = cir, pburst = cburst, no eburst"
            )));
        }
        meter_spec::Type::SingleRateThreeColor if !single => {
            return Err(invalid(format!(
                "{what}: a single-rate meter takes pir = cir and pburst = cburst"
            )));
        }
        meter_spec::Type::SingleRateThreeColor if cfg.eburst != 0 => {
            return Err(unimplemented(format!(
                "{what}: koi's meters are two-rate: no excess burst"
            )));
        }
        _ => {}
    }
    let rate = |per_second: i64, burst: i64| MeterRate {
        rate: per_second as f64 / 1e6,
        burst: burst as u64,
    };
    let mut m = Meter::default();
    m.set_rates(&[rate(cfg.cir, cfg.cburst), rate(cfg.pir, cfg.pburst)])
        .map_err(|why| invalid(format!("{what}: {why}")))?;
    Ok(m)
}

/// The config of `m`; `None` for an unconfigured meter.
pub(crate) fn config(m: &Meter) -> Option<MeterConfig> {
    let [c, p] = m.rates()?;
    let per_second = |r: f64| (r * 1e6).round() as i64;
    Some(MeterConfig {
        cir: per_second(c.rate),
        cburst: i64::try_from(c.burst).unwrap_or(i64::MAX),
        pir: per_second(p.rate),
        pburst: i64::try_from(p.burst).unwrap_or(i64::MAX),
        eburst: 0,
    })
}

/// The meter an optional config gives (unset: the default).
fn meter_of(what: &str, cfg: Option<&MeterConfig>, meter_type: i32) -> Result<Meter> {
    cfg.map_or(Ok(Meter::default()), |c| meter(what, c, meter_type))
}

fn no_color_counters(what: &str) -> crate::error::P4Error {
    unimplemented(format!("{what}: koi keeps no per-colour meter counters"))
}

pub(crate) fn write(cx: &mut Cx, op: Op, m: &MeterEntry) -> Result<Effect> {
    modify_only(op, "meter entries")?;
    let info = object(&cx.schema.meters, m.meter_id, "meter")?;
    if m.counter_data.is_some() {
        return Err(no_color_counters(&info.name));
    }
    let new = meter_of(&info.name, m.config.as_ref(), info.meter_type)?;
    match &m.index {
        Some(i) => {
            let i = index(&info.name, i, info.size)?;
            let cell =
                cx.s.meter_cell_mut(info.ext, i)
                    .ok_or_else(|| invalid(format!("{} is not a meter", info.name)))?;
            let old = Box::new(std::mem::replace(cell, new));
            cx.undo.push(Step::MeterCell {
                ext: info.ext,
                index: i,
                old,
            });
        }
        None => {
            let arr =
                cx.s.meter_array_mut(info.ext)
                    .ok_or_else(|| invalid(format!("{} is not a meter", info.name)))?;
            let old = Box::new(arr.clone());
            arr.cells.reset_to(new);
            cx.undo.push(Step::MeterAll { ext: info.ext, old });
        }
    }
    Ok(Effect::All)
}

/// The direct meter of table `info` (its P4Info type).
fn direct_meter_type(t: &crate::schema::Schema, info: &TableInfo) -> i32 {
    info.direct_meter
        .and_then(|m| t.direct_meters.get(m))
        .map_or(0, |m| m.meter_type)
}

pub(crate) fn write_direct(cx: &mut Cx, op: Op, d: &DirectMeterEntry) -> Result<Effect> {
    modify_only(op, "direct meter entries")?;
    let Some(te) = &d.table_entry else {
        return Err(invalid("a direct meter entry needs its table entry"));
    };
    let info = entries::table_for_write(cx.schema, te.table_id)?;
    if info.direct_meter.is_none() {
        return Err(invalid(format!("table {} has no direct meter", info.name)));
    }
    if d.counter_data.is_some() {
        return Err(no_color_counters(&info.name));
    }
    if te.is_default_action {
        return Err(unimplemented(format!(
            "table {}: koi keeps no direct meter for the default entry",
            info.name
        )));
    }
    let handle = entries::existing(cx.s, cx.strings, info, te)?;
    let new = meter_of(
        &info.name,
        d.config.as_ref(),
        direct_meter_type(cx.schema, info),
    )?;
    let old = Box::new(entries::entry(cx.s, info, handle)?.clone());
    *cx.s.table_entry_mut(info.table, handle)?.meter_mut() = new;
    cx.undo.push(Step::EntryChanged {
        table: info.table,
        old,
    });
    Ok(Effect::Entry(
        info.table,
        koi_state::handles::split_handle(handle).0,
    ))
}

pub(crate) fn read(
    t: &Target,
    s: &State,
    m: &MeterEntry,
    out: &mut dyn FnMut(Entity),
) -> Result<()> {
    if m.counter_data.is_some() {
        return Err(no_color_counters("meter entries"));
    }
    for info in t.schema.meters.select(m.meter_id, "meter")? {
        let range = cells(&info.name, m.index.as_ref(), info.size)?;
        let Some(arr) = s.meter_array(info.ext) else {
            continue;
        };
        for i in range {
            out(Entity {
                entity: Some(entity::Entity::MeterEntry(MeterEntry {
                    meter_id: info.id,
                    index: Some(Index { index: i as i64 }),
                    config: arr.cells.get(i).and_then(config),
                    counter_data: None,
                })),
            });
        }
    }
    Ok(())
}

pub(crate) fn read_direct(
    t: &Target,
    s: &State,
    d: &DirectMeterEntry,
    out: &mut dyn FnMut(Entity),
) -> Result<()> {
    if d.counter_data.is_some() {
        return Err(no_color_counters("direct meter entries"));
    }
    let te = d.table_entry.clone().unwrap_or_default();
    let tables: Vec<&TableInfo> = if te.table_id == 0 {
        t.schema
            .tables
            .iter()
            .filter(|x| x.direct_meter.is_some())
            .collect()
    } else {
        let info = entries::table_for_read(&t.schema, te.table_id)?;
        if info.direct_meter.is_none() {
            return Err(invalid(format!("table {} has no direct meter", info.name)));
        }
        vec![info]
    };
    for info in tables {
        for e in selected(t, s, info, &te)? {
            out(Entity {
                entity: Some(entity::Entity::DirectMeterEntry(DirectMeterEntry {
                    table_entry: Some(entries::key_message(info, &t.strings, e)),
                    config: config(&e.meter),
                    counter_data: None,
                })),
            });
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use tonic::Code;

    fn cfg(cir: i64, cburst: i64, pir: i64, pburst: i64) -> MeterConfig {
        MeterConfig {
            cir,
            cburst,
            pir,
            pburst,
            eburst: 0,
        }
    }

    #[test]
    fn configs_round_trip_and_bad_ones_are_refused() {
        for c in [
            cfg(1, 1, 1, 1),
            cfg(1_000, 10, 2_000, 20),
            cfg(125_000_000, 1500, 250_000_000, 3000),
            cfg(0, 0, 0, 0),
            cfg(3, 7, 1 << 50, 9),
        ] {
            let m = meter("m", &c, 0).unwrap();
            assert_eq!(config(&m), Some(c));
        }
        assert_eq!(config(&Meter::default()), None);
        let code =
            |c: MeterConfig, ty: meter_spec::Type| meter("m", &c, ty as i32).unwrap_err().code;
        let two = meter_spec::Type::TwoRateThreeColor;
        assert_eq!(code(cfg(2, 1, 1, 1), two), Code::InvalidArgument);
        assert_eq!(code(cfg(-1, 1, 1, 1), two), Code::InvalidArgument);
        let mut e = cfg(1, 1, 1, 1);
        e.eburst = 5;
        assert_eq!(code(e, two), Code::InvalidArgument);
        assert_eq!(
            code(e, meter_spec::Type::SingleRateThreeColor),
            Code::Unimplemented
        );
        assert_eq!(
            code(cfg(1, 1, 2, 1), meter_spec::Type::SingleRateTwoColor),
            Code::InvalidArgument
        );
        assert!(
            meter(
                "m",
                &cfg(5, 2, 5, 2),
                meter_spec::Type::SingleRateTwoColor as i32
            )
            .is_ok()
        );
    }
}
