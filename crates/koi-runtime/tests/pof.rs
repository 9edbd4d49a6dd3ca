//! POF pipelines in the runtime: a switch started with an empty POF configuration, changed
//! with `pof_*` commands through [`Switch::command`] (what `koi ctl` sends), each change
//! compiled and swapped in with the state carried over. What the pipeline does with a packet
//! is read with `trace` (the running image, nothing sent).

mod common;

use koi_runtime::{PipelineConfig, PipelineSetup, Program, Switch, SwitchConfig};
use std::path::PathBuf;
use std::sync::Arc;

fn example() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../examples/pof/kpofvs.pof")
}

fn pof_switch() -> Arc<Switch> {
    let program = Program::from_pof("pof", koi_pof::Config::default()).unwrap();
    Switch::start(SwitchConfig {
        pipelines: vec![PipelineSetup {
            config: PipelineConfig {
                name: "default".into(),
                device_id: 1,
                cpu_port: None,
            },
            program: Some(Arc::new(program)),
            init: None,
        }],
        ports: vec![],
        patches: vec![],
        threads: 1,
        cache: Some(Default::default()),
    })
    .expect("switch")
}

fn ipv4_hex(dst: [u8; 4]) -> String {
    let mut p = vec![0, 0, 0, 0, 0, 2, 0, 0, 0, 0, 0, 1, 0x08, 0x00];
    p.extend([0x45, 0, 0, 28, 0, 1, 0, 0, 64, 17, 0, 0, 10, 0, 1, 1]);
    p.extend(dst);
    p.extend([0x30, 0x39, 0x00, 0x35, 0, 8, 0, 0]);
    p.iter().map(|b| format!("{b:02x}")).collect()
}

/// The ports `trace` says a packet to `dst` received on port 1 goes to.
fn goes_to(sw: &Switch, dst: [u8; 4]) -> Vec<u64> {
    let t = sw
        .command(None, &format!("trace 1 {}", ipv4_hex(dst)))
        .unwrap();
    t.lines()
        .filter_map(|l| l.strip_prefix("result: port "))
        .map(|l| l.split(':').next().unwrap().parse().unwrap())
        .collect()
}

const FWD2: &str = "modify_field ipv4.ttl -1 calculate_checksum ipv4.checksum 0 160 counter 2";

#[test]
fn pof_commands_change_the_running_pipeline_and_keep_its_state() {
    let sw = pof_switch();
    assert_eq!(
        goes_to(&sw, [10, 0, 2, 7]),
        Vec::<u64>::new(),
        "empty: drops"
    );
    let out = sw
        .command(None, &format!("pof_load {}", example().display()))
        .unwrap();
    assert!(out.contains("loaded"), "{out}");
    assert_eq!(goes_to(&sw, [10, 0, 2, 7]), vec![2]);
    assert_eq!(goes_to(&sw, [10, 0, 1, 7]), vec![1]);

    // The counter's value survives every change.
    sw.command(None, "counter_write pof.pof_counter 2 5 500")
        .unwrap();
    let out = sw
        .command(
            None,
            &format!("pof_entry_modify entry ipv4_fwd 2 match 10.0.2.0/24 {{ {FWD2} output 3 }}"),
        )
        .unwrap();
    assert!(out.contains("1 entries modified"), "{out}");
    assert!(
        out.contains("not recompiled"),
        "the same shape: a write: {out}"
    );
    assert_eq!(goes_to(&sw, [10, 0, 2, 7]), vec![3]);
    let c = sw.command(None, "counter_read pof.pof_counter 2").unwrap();
    assert!(c.contains("(packets=5, bytes=500)"), "{c}");

    // A longer prefix wins; removing it restores the /24.
    sw.command(
        None,
        &format!("pof_entry_add entry ipv4_fwd 3 match 10.0.2.7/32 {{ {FWD2} output 4 }}"),
    )
    .unwrap();
    assert_eq!(goes_to(&sw, [10, 0, 2, 7]), vec![4]);
    assert_eq!(goes_to(&sw, [10, 0, 2, 8]), vec![3]);
    sw.command(None, "pof_entry_remove ipv4_fwd 3").unwrap();
    assert_eq!(goes_to(&sw, [10, 0, 2, 7]), vec![3]);

    // Refused changes change nothing and say why.
    let before = sw.command(None, "pof_show").unwrap();
    let e = sw.command(None, "pof_table_remove ipv4_fwd").unwrap_err();
    assert!(e.contains("goes to table ipv4_fwd"), "{e}");
    let e = sw
        .command(
            None,
            "pof_entry_add entry ipv4_fwd 9 match 10.0.9.0/24 { output }",
        )
        .unwrap_err();
    assert!(e.starts_with("pof_entry_add:1:"), "{e}");
    let e = sw
        .command(
            None,
            "pof_entry_add entry ipv4_fwd 2 match 10.0.9.0/24 { output 1 }",
        )
        .unwrap_err();
    assert!(e.contains("exists already"), "{e}");
    let e = sw
        .command(None, "pof_entry_add table x exact { key ipv4.dst }")
        .unwrap_err();
    assert!(e.contains("takes only entry"), "{e}");
    let e = sw
        .command(
            None,
            "pof_entry_modify entry ipv4_fwd 77 match 10.0.9.0/24 { output 1 }",
        )
        .unwrap_err();
    assert!(e.contains("no entry 77"), "{e}");
    assert_eq!(sw.command(None, "pof_show").unwrap(), before);
    assert_eq!(goes_to(&sw, [10, 0, 2, 7]), vec![3]);

    // pof_show prints a configuration that parses back to the running one.
    let shown = koi_pof::parse(&before).unwrap();
    let running = sw.pipeline(None).unwrap().image().unwrap();
    assert_eq!(Some(&shown), running.program().pof_config().as_deref());
    assert!(before.contains("eth@0 ipv4_fwd@112"), "{before}");
    // The generated tables are ordinary tables to the rest of koi ctl.
    let dump = sw.command(None, "table_dump pof.t_ipv4_fwd").unwrap();
    assert!(dump.contains("a_ipv4_fwd_0"), "{dump}");
    let p4 = sw.command(None, "pof_p4").unwrap();
    assert!(p4.contains("table t_ipv4_fwd"), "{p4}");

    // Tables and protocols are added and removed at run time too. Neither changes the
    // program until a table is reached: nothing to write.
    let out = sw
        .command(None, "pof_protocol_add protocol udp { field dport 16 16 }")
        .unwrap();
    assert!(
        out.contains("not recompiled") && out.contains("as 0 table writes"),
        "{out}"
    );
    let out = sw
        .command(
            None,
            "pof_table_add table l4 exact size 4 { key udp.dport }",
        )
        .unwrap();
    assert!(out.contains("not recompiled"), "{out}");
    let out = sw.command(
        None,
        &format!("pof_entry_modify entry ipv4_fwd 2 match 10.0.2.0/24 {{ {FWD2} output 3 goto l4 shift 160 }}"),
    )
    .unwrap();
    assert!(
        out.contains("; recompiled in") && out.contains("state carried over"),
        "{out}"
    );
    assert_eq!(
        goes_to(&sw, [10, 0, 2, 7]),
        vec![3],
        "l4 misses: the output stands"
    );
    sw.command(None, "pof_entry_add entry l4 1 match 53 { output 6 }")
        .unwrap();
    assert_eq!(goes_to(&sw, [10, 0, 2, 7]), vec![6]);
    let e = sw.command(None, "pof_protocol_remove udp").unwrap_err();
    assert!(e.contains("table l4"), "{e}");
    let c = sw.command(None, "counter_read pof.pof_counter 2").unwrap();
    assert!(c.contains("(packets=5, bytes=500)"), "{c}");
    sw.stop();
    sw.join();
}

#[test]
fn entry_changes_of_known_shapes_are_written_and_a_new_shape_recompiles() {
    let sw = pof_switch();
    sw.command(None, &format!("pof_load {}", example().display()))
        .unwrap();
    let pl = sw.pipeline(None).unwrap();
    let generation = pl.generation();
    let entries = |sw: &Switch| {
        sw.command(None, "table_num_entries pof.t_ipv4_fwd")
            .unwrap()
            .trim()
            .to_string()
    };
    assert!(entries(&sw).ends_with('2'), "{}", entries(&sw));
    sw.command(None, "counter_write pof.pof_counter 3 7 700")
        .unwrap();

    // Add: one write, the program as it was.
    let out = sw
        .command(
            None,
            &format!("pof_entry_add entry ipv4_fwd 3 match 10.0.3.0/24 {{ {FWD2} output 3 }}"),
        )
        .unwrap();
    assert!(
        out.contains("not recompiled") && out.contains("as 1 table writes"),
        "{out}"
    );
    assert_eq!(pl.generation(), generation, "no new image");
    assert_eq!(goes_to(&sw, [10, 0, 3, 1]), vec![3]);
    assert!(entries(&sw).ends_with('3'), "{}", entries(&sw));

    // Modify the match and the port: the entry deleted and added again.
    let out = sw
        .command(
            None,
            &format!("pof_entry_modify entry ipv4_fwd 3 match 10.0.4.0/24 {{ {FWD2} output 4 }}"),
        )
        .unwrap();
    assert!(out.contains("as 2 table writes"), "{out}");
    assert_eq!(goes_to(&sw, [10, 0, 3, 1]), Vec::<u64>::new());
    assert_eq!(goes_to(&sw, [10, 0, 4, 1]), vec![4]);
    // Modify the port alone: the entry's action modified.
    let out = sw
        .command(
            None,
            &format!("pof_entry_modify entry ipv4_fwd 3 match 10.0.4.0/24 {{ {FWD2} output 5 }}"),
        )
        .unwrap();
    assert!(out.contains("as 1 table writes"), "{out}");
    assert_eq!(goes_to(&sw, [10, 0, 4, 1]), vec![5]);
    let dump = sw.command(None, "table_dump pof.t_ipv4_fwd").unwrap();
    assert!(dump.contains("LPM-0a:00:04:00/24"), "{dump}");
    assert_eq!(pl.generation(), generation);

    // Two entries matching the same: refused before any write.
    let before = sw.command(None, "pof_show").unwrap();
    let dump_before = sw.command(None, "table_dump pof.t_ipv4_fwd").unwrap();
    let e = sw
        .command(
            None,
            &format!(
                "pof_entry_add entry ipv4_fwd 4 match 10.0.6.0/24 {{ {FWD2} output 6 }} entry ipv4_fwd 5 match 10.0.1.0/24 {{ {FWD2} output 6 }}"
            ),
        )
        .unwrap_err();
    assert!(
        e.contains("entry 5 of table ipv4_fwd matches what entry 1 matches"),
        "{e}"
    );
    assert_eq!(goes_to(&sw, [10, 0, 6, 1]), Vec::<u64>::new());
    assert_eq!(sw.command(None, "pof_show").unwrap(), before);
    assert_eq!(
        sw.command(None, "table_dump pof.t_ipv4_fwd").unwrap(),
        dump_before
    );
    // More entries than the table holds: refused before any write.
    let many: String = (0..15)
        .map(|i| format!("entry eth {} match {} {{ group 1 }} ", 10 + i, 0x1000 + i))
        .collect();
    let e = sw
        .command(None, &format!("pof_entry_add {many}"))
        .unwrap_err();
    assert!(e.contains("more than its size 16"), "{e}");
    assert_eq!(sw.command(None, "pof_show").unwrap(), before);
    assert_eq!(pl.generation(), generation);

    // Remove: one write.
    let out = sw.command(None, "pof_entry_remove ipv4_fwd 3").unwrap();
    assert!(out.contains("as 1 table writes"), "{out}");
    assert_eq!(goes_to(&sw, [10, 0, 4, 1]), Vec::<u64>::new());
    assert!(entries(&sw).ends_with('2'), "{}", entries(&sw));
    assert_eq!(pl.generation(), generation);

    // A new shape recompiles, the state carried over and the entries written again.
    let out = sw
        .command(
            None,
            "pof_entry_modify entry ipv4_fwd 2 match 10.0.2.0/24 { counter 2 drop }",
        )
        .unwrap();
    assert!(
        out.contains("; recompiled in") && out.contains("state carried over"),
        "{out}"
    );
    assert_eq!(pl.generation(), generation + 1);
    assert_eq!(goes_to(&sw, [10, 0, 2, 7]), Vec::<u64>::new());
    assert_eq!(goes_to(&sw, [10, 0, 1, 7]), vec![1]);
    assert!(entries(&sw).ends_with('2'), "{}", entries(&sw));
    let c = sw.command(None, "counter_read pof.pof_counter 3").unwrap();
    assert!(c.contains("(packets=7, bytes=700)"), "{c}");
    // And the new program's entries are written to in turn.
    let out = sw
        .command(
            None,
            "pof_entry_modify entry ipv4_fwd 2 match 10.0.2.0/24 { counter 3 drop }",
        )
        .unwrap();
    assert!(out.contains("not recompiled"), "{out}");
    assert_eq!(pl.generation(), generation + 1);
    sw.stop();
    sw.join();
}

#[test]
fn a_write_the_table_refuses_undoes_the_commands_other_writes() {
    let sw = pof_switch();
    sw.command(None, &format!("pof_load {}", example().display()))
        .unwrap();
    // Entry 2's table entry deleted behind the configuration's back (handle 1: the second
    // written).
    sw.command(None, "table_delete pof.t_ipv4_fwd 1").unwrap();
    let dump = sw.command(None, "table_dump pof.t_ipv4_fwd").unwrap();
    assert!(
        dump.contains("0a:00:01:00/24") && !dump.contains("0a:00:02:00/24"),
        "{dump}"
    );
    let before = sw.command(None, "pof_show").unwrap();
    // Entry 1's match changes (deleted, then added), then entry 2's delete finds nothing.
    let e = sw
        .command(
            None,
            &format!(
                "pof_entry_modify entry ipv4_fwd 1 match 10.0.5.0/24 {{ {FWD2} output 1 }} entry ipv4_fwd 2 match 10.0.6.0/24 {{ {FWD2} output 2 }}"
            ),
        )
        .unwrap_err();
    assert!(e.contains("entry 2 of table ipv4_fwd"), "{e}");
    assert_eq!(sw.command(None, "table_dump pof.t_ipv4_fwd").unwrap(), dump);
    assert_eq!(sw.command(None, "pof_show").unwrap(), before);
    assert_eq!(goes_to(&sw, [10, 0, 1, 7]), vec![1], "entry 1 is back");
    assert_eq!(goes_to(&sw, [10, 0, 5, 7]), Vec::<u64>::new());
    sw.stop();
    sw.join();
}

#[test]
fn table_misses_are_set_written_and_removed_at_run_time() {
    let sw = pof_switch();
    sw.command(None, &format!("pof_load {}", example().display()))
        .unwrap();
    let pl = sw.pipeline(None).unwrap();
    let generation = pl.generation();
    assert_eq!(goes_to(&sw, [10, 0, 9, 1]), Vec::<u64>::new(), "no route");

    // A miss of a new shape recompiles; its values are then written.
    let out = sw
        .command(None, "pof_miss_set miss ipv4_fwd { counter 5 output 4 }")
        .unwrap();
    assert!(
        out.contains("1 misses set") && out.contains("; recompiled in"),
        "{out}"
    );
    assert_eq!(pl.generation(), generation + 1);
    assert_eq!(goes_to(&sw, [10, 0, 9, 1]), vec![4]);
    assert_eq!(
        goes_to(&sw, [10, 0, 2, 7]),
        vec![2],
        "the entries still match"
    );
    let out = sw
        .command(None, "pof_miss_set miss ipv4_fwd { counter 6 output 5 }")
        .unwrap();
    assert!(
        out.contains("not recompiled") && out.contains("as 1 table writes"),
        "{out}"
    );
    assert_eq!(pl.generation(), generation + 1);
    assert_eq!(goes_to(&sw, [10, 0, 9, 1]), vec![5]);
    let shown = sw.command(None, "pof_show").unwrap();
    assert!(
        shown.contains("miss ipv4_fwd {\n  counter 6\n  output 5\n}"),
        "{shown}"
    );

    // A miss of a shape its table has already (eth's `group`) is written, and so is its removal.
    let default = |sw: &Switch| {
        let d = sw.command(None, "table_dump pof.t_eth").unwrap();
        d[d.find("Dumping default entry").unwrap()..].to_string()
    };
    let out = sw
        .command(None, "pof_miss_set miss eth { group 2 }")
        .unwrap();
    assert!(out.contains("not recompiled"), "{out}");
    assert!(
        default(&sw).contains("pof.a_eth_") && default(&sw).contains("00:02"),
        "{}",
        default(&sw)
    );
    let out = sw.command(None, "pof_miss_remove eth").unwrap();
    assert!(out.contains("not recompiled"), "{out}");
    assert!(default(&sw).contains("pof.pof_miss"), "{}", default(&sw));
    assert_eq!(pl.generation(), generation + 1);

    // Refused: nothing changes.
    let before = sw.command(None, "pof_show").unwrap();
    let e = sw.command(None, "pof_miss_remove eth").unwrap_err();
    assert!(e.contains("table eth has no miss"), "{e}");
    let e = sw
        .command(None, "pof_miss_set miss nowhere { drop }")
        .unwrap_err();
    assert!(e.contains("miss: no table nowhere"), "{e}");
    let e = sw
        .command(None, "pof_entry_add miss eth { drop }")
        .unwrap_err();
    assert!(e.contains("takes only entry"), "{e}");
    assert_eq!(sw.command(None, "pof_show").unwrap(), before);

    // Its removal (the last of its shape) recompiles: a miss does nothing again.
    let out = sw.command(None, "pof_miss_remove ipv4_fwd").unwrap();
    assert!(out.contains("; recompiled in"), "{out}");
    assert_eq!(goes_to(&sw, [10, 0, 9, 1]), Vec::<u64>::new());
    sw.stop();
    sw.join();
}

#[test]
fn a_p4_pipeline_takes_no_pof_edit_but_can_be_replaced_by_a_pof_load() {
    let sw = Switch::start(SwitchConfig {
        pipelines: vec![common::counting_pipeline(
            "default",
            1,
            2,
            common::count_program(&[]),
        )],
        ports: vec![],
        patches: vec![],
        threads: 1,
        cache: Some(Default::default()),
    })
    .unwrap();
    let e = sw.command(None, "pof_show").unwrap_err();
    assert!(e.contains("not a POF configuration"), "{e}");
    sw.command(None, &format!("pof_load {} --reset", example().display()))
        .unwrap();
    assert_eq!(goes_to(&sw, [10, 0, 2, 7]), vec![2]);
    sw.stop();
    sw.join();
}
