//! The control-plane API: every match kind with priorities, defaults, const entries, handles,
//! and refused operations that leave the state unchanged.

use koi_control::command;
use koi_ir::*;
use koi_state::{ActionSpec, EntrySpec, Lookup, MeterRate, MirrorTarget, State, StateError, cli};

fn b(w: u32, v: u128) -> Bits {
    Bits::from_u128(w, v)
}

struct P {
    p: Pipeline,
}

fn pipeline() -> P {
    let mut p = Pipeline::new(Architecture::V1Model);
    let k8 = Expr::Slot(p.phv.add_slot("meta.k", Ty::Bits(8), SlotKind::Metadata));
    let k32 = Expr::Slot(
        p.phv
            .add_slot("hdr.ipv4.dst", Ty::Bits(32), SlotKind::Metadata),
    );
    let nop = p.actions.push(Action::new("NoAction", vec![], vec![]));
    let set = p.actions.push(Action::new(
        "ingress.set",
        vec![ActionParam::bits("v", 8)],
        vec![],
    ));
    let only_default = p.actions.push(Action::new("ingress.dflt", vec![], vec![]));
    let mk = |name: &str, keys: Vec<(Expr, &str, u32, MatchKind)>| {
        let mut t = Table::new(name, nop);
        t.keys = keys
            .into_iter()
            .map(|(expr, n, w, k)| TableKey {
                expr,
                field: MatchField::new(n, w, k),
            })
            .collect();
        t.actions = vec![
            TableAction::new(set),
            TableAction {
                action: nop,
                scope: ActionScope::TableAndDefault,
                annotations: vec![],
            },
            TableAction {
                action: only_default,
                scope: ActionScope::DefaultOnly,
                annotations: vec![],
            },
        ];
        t.size = 4;
        t
    };
    use MatchKind::*;
    let exact = mk("ingress.exact_t", vec![(k8.clone(), "meta.k", 8, Exact)]);
    let tern = mk("ingress.tern_t", vec![(k8.clone(), "meta.k", 8, Ternary)]);
    let lpm = mk(
        "ingress.lpm_t",
        vec![(k32.clone(), "hdr.ipv4.dst", 32, Lpm)],
    );
    let range = mk("ingress.range_t", vec![(k8.clone(), "meta.k", 8, Range)]);
    let opt = mk("ingress.opt_t", vec![(k8.clone(), "meta.k", 8, Optional)]);
    let mut cst = mk("ingress.const_t", vec![(k8.clone(), "meta.k", 8, Ternary)]);
    cst.entries_const = true;
    cst.default_action.is_const = true;
    for (i, v) in [1u64, 2].iter().enumerate() {
        cst.entries.push(koi_ir::Entry {
            keys: vec![Pattern::Any],
            call: ActionCall {
                action: set,
                args: vec![b(8, u128::from(*v))],
            },
            priority: Some(10 - i as u32),
            is_const: true,
            annotations: vec![],
        });
    }
    for t in [exact, tern, lpm, range, opt, cst] {
        p.tables.push(t);
    }
    p.externs.push(Extern {
        preamble: Preamble::new("ingress.reg"),
        type_name: "register".into(),
        type_args: vec![],
        ctor_args: vec![],
        kind: ExternKind::Register {
            size: 4,
            elem: Ty::Bits(16),
            index_width: 32,
        },
    });
    p.externs.push(Extern {
        preamble: Preamble::new("ingress.ctr"),
        type_name: "counter".into(),
        type_args: vec![],
        ctor_args: vec![],
        kind: ExternKind::Counter {
            size: 2,
            unit: CounterUnit::Packets,
            index_width: 32,
        },
    });
    p.externs.push(Extern {
        preamble: Preamble::new("ingress.mtr"),
        type_name: "meter".into(),
        type_args: vec![],
        ctor_args: vec![],
        kind: ExternKind::Meter {
            size: 2,
            unit: MeterUnit::Packets,
            index_width: 32,
        },
    });
    P { p }
}

fn set(v: u64) -> ActionSpec {
    ActionSpec::action("set", vec![b(8, u128::from(v))])
}

fn entry(keys: Vec<Pattern>, prio: Option<u32>, v: u64) -> EntrySpec {
    EntrySpec {
        keys,
        action: set(v),
        priority: prio,
        timeout_ns: None,
    }
}

/// The argument of the action a key hits (or `None` on a miss).
fn hit(s: &State, table: &str, key: Bits) -> Option<u64> {
    let t = s.table_id(table).unwrap();
    match s.lookup(t, &[key], None)? {
        Lookup::Hit { entry, .. } => match &entry.action {
            koi_state::EntryAction::Action(c) => c.args.first().map(|a| a.low_u64()),
            _ => None,
        },
        Lookup::Miss { .. } => None,
    }
}

#[test]
fn every_match_kind_with_priorities() {
    let P { p } = pipeline();
    let mut s = State::new(&p).unwrap();
    s.table_add("exact_t", entry(vec![Pattern::Exact(b(8, 5))], None, 1))
        .unwrap();
    assert_eq!(hit(&s, "exact_t", b(8, 5)), Some(1));
    assert_eq!(hit(&s, "exact_t", b(8, 6)), None);

    let m = |v, m| Pattern::Mask {
        value: b(8, v),
        mask: b(8, m),
    };
    s.table_add("tern_t", entry(vec![m(0x10, 0xf0)], Some(1), 1))
        .unwrap();
    s.table_add("tern_t", entry(vec![m(0x12, 0xff)], Some(5), 2))
        .unwrap();
    s.table_add("tern_t", entry(vec![m(0x00, 0x00)], Some(5), 3))
        .unwrap();
    assert_eq!(
        hit(&s, "tern_t", b(8, 0x12)),
        Some(2),
        "larger priority wins"
    );
    assert_eq!(hit(&s, "tern_t", b(8, 0x13)), Some(3), "tie: lowest handle");
    let pf = |v, len| Pattern::Prefix {
        value: b(32, v),
        len,
    };
    s.table_add("lpm_t", entry(vec![pf(0x0a00_0000, 8)], None, 1))
        .unwrap();
    s.table_add("lpm_t", entry(vec![pf(0x0a01_0000, 16)], None, 2))
        .unwrap();
    s.table_add("lpm_t", entry(vec![pf(0, 0)], None, 3))
        .unwrap();
    assert_eq!(hit(&s, "lpm_t", b(32, 0x0a01_0203)), Some(2));
    assert_eq!(hit(&s, "lpm_t", b(32, 0x0a02_0203)), Some(1));
    assert_eq!(hit(&s, "lpm_t", b(32, 0x0b00_0000)), Some(3));
    let r = |lo, hi| Pattern::Range {
        lo: b(8, lo),
        hi: b(8, hi),
    };
    s.table_add("range_t", entry(vec![r(1, 8)], Some(1), 1))
        .unwrap();
    s.table_add("range_t", entry(vec![r(6, 12)], Some(2), 2))
        .unwrap();
    assert_eq!(hit(&s, "range_t", b(8, 7)), Some(2));
    assert_eq!(hit(&s, "range_t", b(8, 2)), Some(1));
    assert_eq!(hit(&s, "range_t", b(8, 13)), None);
    s.table_add("opt_t", entry(vec![Pattern::Exact(b(8, 47))], Some(2), 1))
        .unwrap();
    s.table_add("opt_t", entry(vec![Pattern::Any], Some(1), 2))
        .unwrap();
    assert_eq!(hit(&s, "opt_t", b(8, 47)), Some(1));
    assert_eq!(hit(&s, "opt_t", b(8, 48)), Some(2));
    // Const entries in source order: the first has the higher priority.
    assert_eq!(hit(&s, "const_t", b(8, 0)), Some(1));
}

#[test]
fn masks_report_the_bits_a_lookup_depended_on() {
    let P { p } = pipeline();
    let mut s = State::new(&p).unwrap();
    let m = |v, m| Pattern::Mask {
        value: b(8, v),
        mask: b(8, m),
    };
    s.table_add("tern_t", entry(vec![m(0x10, 0xf0)], Some(5), 1))
        .unwrap();
    s.table_add("tern_t", entry(vec![m(0x01, 0x03)], Some(1), 2))
        .unwrap();
    let t = s.table_id("tern_t").unwrap();
    let mut masks = Vec::new();
    s.lookup(t, &[b(8, 0x21)], Some(&mut masks));
    // The first entry misses: its bit 0x20 (where 0x21 differs from 0x10 under 0xf0) is
    // enough to show that; the second hits: its bits 0x03.
    assert_eq!(masks, [b(8, 0x23)]);
    s.lookup(t, &[b(8, 0x12)], Some(&mut masks));
    assert_eq!(masks, [b(8, 0xf0)]);
}

fn snapshot(s: &State) -> String {
    let tables: Vec<String> = s
        .tables()
        .map(|t| {
            format!(
                "{:?} {:?}",
                t.entries().collect::<Vec<_>>(),
                t.default_action()
            )
        })
        .collect();
    format!("{tables:?} {:?}", s.register_read_all("reg"))
}

#[test]
fn refused_operations_change_nothing() {
    let P { p } = pipeline();
    let mut s = State::new(&p).unwrap();
    s.table_add("exact_t", entry(vec![Pattern::Exact(b(8, 5))], None, 1))
        .unwrap();
    let before = snapshot(&s);
    let e = |k: Vec<Pattern>, pr, a: ActionSpec| EntrySpec {
        keys: k,
        action: a,
        priority: pr,
        timeout_ns: None,
    };
    let x = Pattern::Exact(b(8, 9));
    let cases: Vec<(&str, EntrySpec)> = vec![
        ("nope", entry(vec![x.clone()], None, 1)),
        ("exact_t", entry(vec![], None, 1)),
        ("exact_t", entry(vec![Pattern::Exact(b(9, 1))], None, 1)),
        ("exact_t", entry(vec![Pattern::Any], None, 1)),
        ("exact_t", entry(vec![Pattern::Exact(b(8, 5))], None, 1)),
        ("exact_t", entry(vec![x.clone()], Some(1), 1)),
        ("tern_t", entry(vec![x.clone()], None, 1)),
        (
            "exact_t",
            e(vec![x.clone()], None, ActionSpec::action("bogus", vec![])),
        ),
        (
            "exact_t",
            e(vec![x.clone()], None, ActionSpec::action("set", vec![])),
        ),
        (
            "exact_t",
            e(
                vec![x.clone()],
                None,
                ActionSpec::action("set", vec![b(9, 1)]),
            ),
        ),
        (
            "exact_t",
            e(vec![x.clone()], None, ActionSpec::action("dflt", vec![])),
        ),
        ("exact_t", e(vec![x.clone()], None, ActionSpec::Member(0))),
        ("const_t", entry(vec![x.clone()], Some(1), 1)),
    ];
    for (t, spec) in cases {
        assert!(s.table_add(t, spec.clone()).is_err(), "{t} {spec:?}");
        assert_eq!(snapshot(&s), before);
    }
    for k in 10..13 {
        s.table_add("exact_t", entry(vec![Pattern::Exact(b(8, k))], None, 1))
            .unwrap();
    }
    let full = snapshot(&s);
    let err = s.table_add("exact_t", entry(vec![x], None, 1)).unwrap_err();
    assert!(matches!(err, StateError::TableFull { .. }));
    assert_eq!(snapshot(&s), full);
    assert!(matches!(
        s.table_delete("exact_t", 99),
        Err(StateError::UnknownHandle { .. })
    ));
    assert!(matches!(
        s.table_delete("const_t", 0),
        Err(StateError::ConstTable { .. })
    ));
    assert!(matches!(
        s.table_set_default("const_t", set(1)),
        Err(StateError::ConstDefault { .. })
    ));
    assert!(
        s.table_modify("exact_t", 0, ActionSpec::action("set", vec![b(3, 1)]))
            .is_err()
    );
    assert!(s.register_write("reg", 4, &b(16, 1)).is_err());
    assert!(s.register_write("reg", 0, &b(32, 0x1_0000)).is_err());
    assert!(s.register_read("ctr", 0).is_err());
    assert_eq!(snapshot(&s), full);
    let rates = [
        MeterRate {
            rate: 2.0,
            burst: 1,
        },
        MeterRate {
            rate: 1.0,
            burst: 1,
        },
    ];
    assert!(s.meter_set_rates("mtr", Some(0), &rates).is_err());
    assert_eq!(s.meter_get_rates("mtr", 0), Ok(None));
}

#[test]
fn handles_default_actions_and_versions() {
    let P { p } = pipeline();
    let mut s = State::new(&p).unwrap();
    let h0 = s
        .table_add("exact_t", entry(vec![Pattern::Exact(b(8, 1))], None, 1))
        .unwrap();
    let h1 = s
        .table_add("exact_t", entry(vec![Pattern::Exact(b(8, 2))], None, 2))
        .unwrap();
    assert_eq!((h0, h1), (0, 1));
    s.table_delete("exact_t", h0).unwrap();
    let h2 = s
        .table_add("exact_t", entry(vec![Pattern::Exact(b(8, 3))], None, 3))
        .unwrap();
    assert_eq!(h2, 1 << 24, "the freed index is reused with a new version");
    assert!(
        s.table_entry("exact_t", 0).is_err(),
        "the old handle names nothing"
    );
    s.table_modify("exact_t", h1, set(7)).unwrap();
    assert_eq!(hit(&s, "exact_t", b(8, 2)), Some(7));
    s.table_set_default("exact_t", ActionSpec::action("dflt", vec![]))
        .unwrap();
    assert!(s.table_set_default("ingress.exact_t", set(1)).is_ok());
    s.table_reset_default("exact_t").unwrap();
    assert_eq!(s.table_clear("exact_t"), Ok(2));
    assert!(s.table("exact_t").unwrap().is_empty());
}

fn run(s: &mut State, line: &str) -> Result<String, StateError> {
    let c = command::parse(line).unwrap().unwrap();
    cli::execute(s, &c)
}

#[test]
fn cli_commands_print_what_simple_switch_cli_prints() {
    let P { p } = pipeline();
    let mut s = State::new(&p).unwrap();
    let out = run(&mut s, "table_add tern_t set 0x10&&&0xf0 => 7 3").unwrap();
    assert!(out.contains("TERNARY-10 &&& f0"), "{out}");
    assert!(out.ends_with("Entry has been added with handle 0"));
    // CLI priority 1 beats CLI priority 3 (smaller wins at the CLI).
    run(&mut s, "table_add tern_t set 0x12&&&0xff => 9 1").unwrap();
    assert_eq!(hit(&s, "tern_t", b(8, 0x12)), Some(9));
    assert!(run(&mut s, "table_add tern_t set 0x12&&&0xff => 9").is_err());
    assert!(run(&mut s, "table_add exact_t set 1 => 9 1").is_err());
    let out = run(&mut s, "table_add lpm_t set 10.0.0.0/8 => 1").unwrap();
    assert!(out.contains("LPM-0a:00:00:00/8"), "{out}");
    assert_eq!(run(&mut s, "table_num_entries tern_t").unwrap(), "2");
    assert!(
        run(&mut s, "table_dump tern_t")
            .unwrap()
            .contains("Dumping entry 0x1")
    );
    let out = run(&mut s, "mc_node_create 5 0 3").unwrap();
    assert_eq!(
        out,
        "Creating node with rid 5 , port map 1001 and lag map \nnode was created with handle 0"
    );
    run(&mut s, "mc_mgrp_create 1113").unwrap();
    run(&mut s, "mc_node_associate 1113 0").unwrap();
    assert!(
        run(&mut s, "mc_dump")
            .unwrap()
            .contains("(L1h=0, rid=5) -> (ports=[0, 3], lags=[])")
    );
    run(&mut s, "mirroring_add 5 7").unwrap();
    assert_eq!(
        run(&mut s, "mirroring_get 5").unwrap(),
        "MirroringSessionConfig(mgid=None, port=7)"
    );
    run(&mut s, "mirroring_add_mc 5 22").unwrap();
    assert_eq!(s.mirror_session(5), Some(MirrorTarget::Group(22)));
    run(&mut s, "mirroring_delete 5").unwrap();
    assert!(run(&mut s, "mirroring_get 5").is_err());
    run(&mut s, "register_write reg 1 42").unwrap();
    assert_eq!(run(&mut s, "register_read reg 1").unwrap(), "reg[1]= 42");
    assert_eq!(
        run(&mut s, "register_read ingress.reg").unwrap(),
        "ingress.reg= 0, 42, 0, 0"
    );
    run(&mut s, "register_reset reg").unwrap();
    assert_eq!(s.register_read("reg", 1), Ok(b(16, 0)));
    run(&mut s, "counter_write ctr 1 3 300").unwrap();
    assert_eq!(
        run(&mut s, "counter_read ctr 1").unwrap(),
        "ctr[1]=  BmCounterValue(packets=3, bytes=300)"
    );
    run(&mut s, "meter_set_rates mtr 1 0.5:1 1:2").unwrap();
    assert_eq!(
        run(&mut s, "meter_get_rates mtr 1").unwrap(),
        "0: info rate = 0.5, burst size = 1\n1: info rate = 1, burst size = 2"
    );
    run(&mut s, "meter_array_set_rates mtr 0.5:1 1:2").unwrap();
    assert!(s.meter_get_rates("mtr", 0).unwrap().is_some());
    assert!(run(&mut s, "table_set_default exact_t set 300").is_err());
    assert!(run(&mut s, "table_delete tern_t 7").is_err());
    assert!(
        run(&mut s, "show_tables")
            .unwrap()
            .contains("ingress.lpm_t")
    );
    assert!(run(&mut s, "show_actions").unwrap().contains("ingress.set"));
}

#[test]
fn stf_named_keys_fill_the_fields_left_out() {
    let P { p } = pipeline();
    let s = State::new(&p).unwrap();
    let t = s.table_id("tern_t").unwrap();
    assert_eq!(s.named_keys(t, &[]), Ok(vec![Pattern::Any]));
    let x = Pattern::Exact(b(8, 3));
    assert_eq!(
        s.named_keys(t, &[("k".into(), x.clone())]),
        Ok(vec![x.clone()])
    );
    assert!(s.named_keys(t, &[("nope".into(), x.clone())]).is_err());
    let e = s.table_id("exact_t").unwrap();
    assert_eq!(s.named_keys(e, &[]), Ok(vec![Pattern::Exact(b(8, 0))]));
    let r = s.table_id("range_t").unwrap();
    assert!(s.named_keys(r, &[]).is_err());
    let l = s.table_id("lpm_t").unwrap();
    let named = [("ipv4.dst".to_string(), Pattern::Any)];
    assert_eq!(s.named_keys(l, &named).map(|v| v.len()), Ok(1));
    let bad = [("ipv4.dstAddr".to_string(), Pattern::Any)];
    assert!(matches!(
        s.named_keys(l, &bad),
        Err(StateError::Unknown { .. })
    ));
}
