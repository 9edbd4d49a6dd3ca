//! Any control-plane request is an answer or an error, never a panic: random
//! simple_switch_CLI lines against a state with every kind of table and extern.

use koi_control::command;
use koi_ir::*;
use koi_state::{State, cli};
use proptest::prelude::*;

fn pipeline() -> Pipeline {
    let mut p = Pipeline::new(Architecture::V1Model);
    let k = Expr::Slot(p.phv.add_slot("meta.k", Ty::Bits(8), SlotKind::Metadata));
    let w = Expr::Slot(p.phv.add_slot("meta.w", Ty::Bits(640), SlotKind::Metadata));
    let nop = p.actions.push(Action::new("NoAction", vec![], vec![]));
    let set = p
        .actions
        .push(Action::new("set", vec![ActionParam::bits("v", 8)], vec![]));
    let wide = p.actions.push(Action::new(
        "wide",
        vec![ActionParam::bits("v", 640)],
        vec![],
    ));
    for (name, kind, key, width) in [
        ("t_exact", MatchKind::Exact, k.clone(), 8),
        ("t_tern", MatchKind::Ternary, k.clone(), 8),
        ("t_lpm", MatchKind::Lpm, w.clone(), 640),
        ("t_range", MatchKind::Range, k.clone(), 8),
        ("t_opt", MatchKind::Optional, k.clone(), 8),
    ] {
        let mut t = Table::new(name, nop);
        t.keys.push(TableKey {
            expr: key,
            field: MatchField::new("k", width, kind),
        });
        t.actions = vec![
            TableAction::new(set),
            TableAction::new(wide),
            TableAction::new(nop),
        ];
        t.size = 8;
        p.tables.push(t);
    }
    let kinds = [
        (
            "reg",
            ExternKind::Register {
                size: 4,
                elem: Ty::Bits(640),
                index_width: 32,
            },
        ),
        (
            "ctr",
            ExternKind::Counter {
                size: 4,
                unit: CounterUnit::Bytes,
                index_width: 32,
            },
        ),
        (
            "mtr",
            ExternKind::Meter {
                size: 4,
                unit: MeterUnit::Bytes,
                index_width: 32,
            },
        ),
        (
            "prof",
            ExternKind::ActionSelector {
                algo: HashAlgo::Crc16,
                size: 4,
                output_width: 16,
            },
        ),
    ];
    for (n, kind) in kinds {
        p.externs.push(Extern {
            preamble: Preamble::new(n),
            type_name: "x".into(),
            type_args: vec![],
            ctor_args: vec![],
            kind,
        });
    }
    p
}

const WORDS: &[&str] = &[
    "table_add",
    "table_delete",
    "table_modify",
    "table_set_default",
    "table_reset_default",
    "table_clear",
    "table_dump",
    "table_num_entries",
    "table_indirect_add",
    "mc_mgrp_create",
    "mc_node_create",
    "mc_node_associate",
    "mc_node_dissociate",
    "mc_node_destroy",
    "mc_mgrp_destroy",
    "mc_node_update",
    "mc_dump",
    "mirroring_add",
    "mirroring_add_mc",
    "mirroring_get",
    "mirroring_delete",
    "register_read",
    "register_write",
    "register_reset",
    "counter_read",
    "counter_write",
    "counter_reset",
    "meter_set_rates",
    "meter_get_rates",
    "meter_array_set_rates",
    "act_prof_create_member",
    "act_prof_create_group",
    "act_prof_add_member_to_group",
    "act_prof_delete_member",
    "act_prof_dump",
    "t_exact",
    "t_tern",
    "t_lpm",
    "t_range",
    "t_opt",
    "reg",
    "ctr",
    "mtr",
    "prof",
    "set",
    "wide",
    "NoAction",
    "=>",
    "0",
    "1",
    "7",
    "255",
    "256",
    "4294967295",
    "18446744073709551615",
    "0x1f",
    "1&&&0xff",
    "0&&&0",
    "1->9",
    "9->1",
    "10.0.0.0/8",
    "0/641",
    "1.5:3",
    "0.1:1",
    "|",
    "::1",
    "00:11:22:33:44:55",
    "-1",
    "x",
    "",
];

proptest! {
    #![proptest_config(ProptestConfig { cases: 2000, .. ProptestConfig::default() })]

    #[test]
    fn random_cli_lines_never_panic(lines in proptest::collection::vec(
        (0usize..35, proptest::collection::vec(0usize..WORDS.len(), 0..8)), 1..12)) {
        let p = pipeline();
        let mut s = State::new(&p).unwrap();
        for (cmd, idx) in lines {
            let mut line = vec![WORDS[cmd]];
            line.extend(idx.iter().map(|i| WORDS[*i]));
            if let Ok(Some(c)) = command::parse(&line.join(" ")) {
                let _ = cli::execute(&mut s, &c);
            }
        }
    }
}
