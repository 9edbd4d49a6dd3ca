//! Direct counters and meters (in table entries and as their own entities), idle timeouts and
//! idle-timeout notifications.

mod common;

use common::*;
use koi_proto::p4runtime::{
    self as p4, CounterData, DirectCounterEntry, DirectMeterEntry, MeterConfig, TableEntry,
    entity::Entity as E, update::Type,
};
use tonic::Code;

fn keyed(r: &Rig, mac: &[u8]) -> TableEntry {
    entry(
        r.table("t_exact"),
        vec![exact(1, mac), exact(2, b"\x01")],
        direct(action(r.action("fwd_m"), &[b"\x02"])),
        0,
    )
}

fn cfg(cir: i64, pir: i64) -> MeterConfig {
    MeterConfig {
        cir,
        cburst: 10,
        pir,
        pburst: 20,
        eburst: 0,
    }
}

fn hit(r: &mut Rig, mac: u8, bytes: usize, now: u64) {
    let t = r.s.table_id("I.t_exact").unwrap();
    let tb = r.s.table_by_id(t).unwrap();
    let e = tb
        .entries()
        .find(|e| e.keys[0] == koi_ir::Pattern::Exact(koi_ir::Bits::from_u64(48, u64::from(mac))))
        .expect("entry");
    let i = tb.index_of(e.handle).unwrap();
    r.s.record_hit(t, i, bytes, now);
}

fn with_resources(r: &Rig) -> TableEntry {
    TableEntry {
        table_id: r.table("t_exact"),
        counter_data: Some(CounterData::default()),
        meter_config: Some(MeterConfig::default()),
        ..Default::default()
    }
}

#[test]
fn direct_resources_in_table_entries() {
    let mut r = rig("tables.p4");
    let mut w = keyed(&r, b"\x01");
    w.counter_data = Some(CounterData {
        byte_count: 100,
        packet_count: 2,
    });
    w.meter_config = Some(cfg(1000, 2000));
    r.insert(te(w.clone())).unwrap();
    // Read without asking: neither; asking: both, as written.
    assert_eq!(r.entries("I.t_exact"), vec![keyed(&r, b"\x01")]);
    assert_eq!(r.read_entries(with_resources(&r)), vec![w.clone()]);
    // Hits count.
    hit(&mut r, 1, 64, 5);
    let got = r.read_entries(with_resources(&r));
    assert_eq!(
        got[0].counter_data,
        Some(CounterData {
            byte_count: 164,
            packet_count: 3
        })
    );
    // MODIFY without counter keeps it; without meter config resets the meter.
    r.modify(te(keyed(&r, b"\x01"))).unwrap();
    let got = r.read_entries(with_resources(&r));
    assert_eq!(
        got[0].counter_data,
        Some(CounterData {
            byte_count: 164,
            packet_count: 3
        })
    );
    assert_eq!(got[0].meter_config, None);
    // MODIFY with both sets both.
    r.modify(te(w.clone())).unwrap();
    assert_eq!(r.read_entries(with_resources(&r)), vec![w]);
    // An entry inserted without them starts at zero and unmetered.
    r.insert(te(keyed(&r, b"\x02"))).unwrap();
    let got = r.read_entries(with_resources(&r));
    assert_eq!(got[1].counter_data, Some(CounterData::default()));
    assert_eq!(got[1].meter_config, None);
}

#[test]
fn direct_counter_entries() {
    let mut r = rig("tables.p4");
    r.insert(te(keyed(&r, b"\x01"))).unwrap();
    r.insert(te(keyed(&r, b"\x02"))).unwrap();
    let key = |r: &Rig, mac: &[u8]| {
        let mut k = keyed(r, mac);
        k.action = None;
        k
    };
    let w = DirectCounterEntry {
        table_entry: Some(key(&r, b"\x02")),
        data: Some(CounterData {
            byte_count: 9,
            packet_count: 1,
        }),
    };
    assert_eq!(
        r.modify(E::DirectCounterEntry(w.clone())),
        Ok(koi_p4runtime::Effect::None)
    );
    // Read by key, by table, everything.
    assert_eq!(
        r.read(E::DirectCounterEntry(w.clone())).unwrap(),
        vec![E::DirectCounterEntry(w.clone())]
    );
    let by_table = DirectCounterEntry {
        table_entry: Some(TableEntry {
            table_id: r.table("t_exact"),
            ..Default::default()
        }),
        data: None,
    };
    assert_eq!(r.read(E::DirectCounterEntry(by_table)).unwrap().len(), 2);
    assert_eq!(
        r.read(E::DirectCounterEntry(Default::default()))
            .unwrap()
            .len(),
        2
    );
    // Unset data changes nothing.
    let unset = DirectCounterEntry {
        table_entry: Some(key(&r, b"\x02")),
        data: None,
    };
    r.modify(E::DirectCounterEntry(unset)).unwrap();
    assert_eq!(
        r.read(E::DirectCounterEntry(w.clone())).unwrap(),
        vec![E::DirectCounterEntry(w.clone())]
    );
    // Refusals.
    assert_eq!(
        r.refused(Type::Insert, E::DirectCounterEntry(w.clone())),
        Code::InvalidArgument
    );
    assert_eq!(
        r.refused(Type::Delete, E::DirectCounterEntry(w.clone())),
        Code::InvalidArgument
    );
    let missing = DirectCounterEntry {
        table_entry: Some(key(&r, b"\x09")),
        data: w.data,
    };
    assert_eq!(
        r.refused(Type::Modify, E::DirectCounterEntry(missing.clone())),
        Code::NotFound
    );
    assert_eq!(
        r.read(E::DirectCounterEntry(missing)).unwrap_err().code,
        Code::NotFound
    );
    let no_counter = DirectCounterEntry {
        table_entry: Some(entry(r.table("t_lpm"), vec![], None, 0)),
        data: w.data,
    };
    assert_eq!(
        r.refused(Type::Modify, E::DirectCounterEntry(no_counter)),
        Code::InvalidArgument
    );
    let no_entry = DirectCounterEntry {
        table_entry: None,
        data: w.data,
    };
    assert_eq!(
        r.refused(Type::Modify, E::DirectCounterEntry(no_entry)),
        Code::InvalidArgument
    );
    let neg = DirectCounterEntry {
        table_entry: Some(key(&r, b"\x02")),
        data: Some(CounterData {
            byte_count: 0,
            packet_count: -1,
        }),
    };
    assert_eq!(
        r.refused(Type::Modify, E::DirectCounterEntry(neg)),
        Code::InvalidArgument
    );
    let mut dflt = key(&r, b"\x02");
    dflt.r#match.clear();
    dflt.is_default_action = true;
    let d = DirectCounterEntry {
        table_entry: Some(dflt),
        data: w.data,
    };
    assert_eq!(
        r.refused(Type::Modify, E::DirectCounterEntry(d)),
        Code::Unimplemented
    );
}

#[test]
fn direct_meter_entries() {
    let mut r = rig("tables.p4");
    r.insert(te(keyed(&r, b"\x01"))).unwrap();
    let mut k = keyed(&r, b"\x01");
    k.action = None;
    let w = DirectMeterEntry {
        table_entry: Some(k.clone()),
        config: Some(cfg(500, 800)),
        counter_data: None,
    };
    r.modify(E::DirectMeterEntry(w.clone())).unwrap();
    assert_eq!(
        r.read(E::DirectMeterEntry(w.clone())).unwrap(),
        vec![E::DirectMeterEntry(w.clone())]
    );
    let got = r.read_entries(with_resources(&r));
    assert_eq!(got[0].meter_config, Some(cfg(500, 800)));
    // An unset config resets the meter.
    let reset = DirectMeterEntry {
        table_entry: Some(k.clone()),
        config: None,
        counter_data: None,
    };
    r.modify(E::DirectMeterEntry(reset.clone())).unwrap();
    assert_eq!(
        r.read(E::DirectMeterEntry(w.clone())).unwrap(),
        vec![E::DirectMeterEntry(reset)]
    );
    // cir above pir, per-colour counters, INSERT.
    let bad = DirectMeterEntry {
        config: Some(cfg(900, 800)),
        ..w.clone()
    };
    assert_eq!(
        r.refused(Type::Modify, E::DirectMeterEntry(bad)),
        Code::InvalidArgument
    );
    let colours = DirectMeterEntry {
        counter_data: Some(Default::default()),
        ..w.clone()
    };
    assert_eq!(
        r.refused(Type::Modify, E::DirectMeterEntry(colours.clone())),
        Code::Unimplemented
    );
    assert_eq!(
        r.read(E::DirectMeterEntry(colours)).unwrap_err().code,
        Code::Unimplemented
    );
    assert_eq!(
        r.refused(Type::Insert, E::DirectMeterEntry(w.clone())),
        Code::InvalidArgument
    );
    let mut missing = k.clone();
    missing.r#match[0] = exact(1, b"\x07");
    let m = DirectMeterEntry {
        table_entry: Some(missing),
        ..w
    };
    assert_eq!(
        r.refused(Type::Modify, E::DirectMeterEntry(m)),
        Code::NotFound
    );
}

#[test]
fn idle_timeouts_and_notifications() {
    let mut r = rig("tables.p4");
    r.s.set_now_ns(1_000);
    let mut w = keyed(&r, b"\x01");
    w.idle_timeout_ns = 1_000;
    r.insert(te(w.clone())).unwrap();
    let mut never = keyed(&r, b"\x02");
    never.idle_timeout_ns = 0;
    r.insert(te(never.clone())).unwrap();
    assert_eq!(r.entries("I.t_exact"), vec![w.clone(), never.clone()]);
    // time_since_last_hit when asked, measured to the state's now.
    r.s.set_now_ns(1_600);
    let q = TableEntry {
        table_id: r.table("t_exact"),
        time_since_last_hit: Some(Default::default()),
        ..Default::default()
    };
    let got = r.read_entries(q.clone());
    assert_eq!(
        got[0].time_since_last_hit,
        Some(p4::table_entry::IdleTimeout { elapsed_ns: 600 })
    );
    assert_eq!(
        got[1].time_since_last_hit,
        Some(p4::table_entry::IdleTimeout { elapsed_ns: 600 })
    );
    // Not idle before the timeout; idle at it; notified once per timeout.
    assert!(koi_p4runtime::idle_notifications(&mut r.t, &mut r.s, 1_999).is_empty());
    let n = koi_p4runtime::idle_notifications(&mut r.t, &mut r.s, 2_000);
    assert_eq!(n, vec![w.clone()]);
    assert!(koi_p4runtime::idle_notifications(&mut r.t, &mut r.s, 2_500).is_empty());
    assert_eq!(
        koi_p4runtime::idle_notifications(&mut r.t, &mut r.s, 3_000),
        vec![w.clone()]
    );
    // A hit restarts the idle time; time_since_last_hit follows the hits only.
    hit(&mut r, 1, 60, 3_100);
    assert!(koi_p4runtime::idle_notifications(&mut r.t, &mut r.s, 4_000).is_empty());
    assert_eq!(
        koi_p4runtime::idle_notifications(&mut r.t, &mut r.s, 4_100),
        vec![w.clone()]
    );
    r.s.set_now_ns(4_200);
    assert_eq!(
        r.read_entries(q)[0].time_since_last_hit.unwrap().elapsed_ns,
        1_100
    );
    // MODIFY changes the timeout (0: never idle).
    let mut m = w.clone();
    m.idle_timeout_ns = 0;
    r.modify(te(m)).unwrap();
    assert!(koi_p4runtime::idle_notifications(&mut r.t, &mut r.s, 100_000).is_empty());
}
