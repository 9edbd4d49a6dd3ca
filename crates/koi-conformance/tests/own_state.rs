//! koi's own tests of v1model behaviours that an STF file cannot observe or set up: digests
//! and counters (STF only compares packets, STF.md §4 and §9.9) and action selectors (STF has
//! no `act_prof_*` commands), and registers of structs as the control plane sees them. The
//! programs are `tests/stf/state/*.p4` (and one STF program of `tests/stf/v1model`); each
//! says what it pins down and where the expected behaviour comes from. The control plane is driven through
//! simple_switch_CLI commands (`koi_state::cli::execute`), the data plane through
//! `koi_interp::Interpreter`.

use koi_conformance::compile;
use koi_interp::Interpreter;
use koi_ir::{Bits, Pipeline};
use koi_state::{CounterValue, ManualClock, State};
use std::path::PathBuf;

fn pipeline(name: &str) -> Pipeline {
    pipeline_in("state", name)
}

/// The pipeline of `tests/stf/<dir>/<name>`.
fn pipeline_in(dir: &str, name: &str) -> Pipeline {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/stf")
        .join(dir)
        .join(name);
    match compile(&path, &koi_syntax::PpOptions::default()) {
        Ok(c) => c.pipeline,
        Err(e) => panic!("{} does not compile:\n{}", path.display(), e.render()),
    }
}

/// Runs a simple_switch_CLI command; returns what it prints.
fn cli(state: &mut State, line: &str) -> String {
    let c = koi_control::command::parse(line)
        .unwrap_or_else(|e| panic!("`{line}` does not parse: {e}"))
        .unwrap_or_else(|| panic!("`{line}` is empty"));
    koi_state::cli::execute(state, &c).unwrap_or_else(|e| panic!("`{line}` was refused: {e}"))
}

/// Sends `packet` on `port`; returns (port, bytes) of every packet sent.
fn send(
    interp: &mut Interpreter<'_>,
    state: &mut State,
    clock: &ManualClock,
    port: u64,
    packet: &[u8],
) -> Vec<(u64, Vec<u8>)> {
    let o = interp
        .process(state, packet, port, clock)
        .expect("the packet is processed");
    assert_eq!(o.report.aborted, None);
    o.outputs.into_iter().map(|o| (o.port, o.bytes)).collect()
}

fn field(fields: &[(String, Bits)], name: &str) -> u64 {
    fields
        .iter()
        .find(|(n, _)| n == name)
        .unwrap_or_else(|| panic!("no field {name} in {fields:?}"))
        .1
        .low_u64()
}

#[test]
fn digests_are_sent_per_ingress_pass_even_when_dropped() {
    let p = pipeline("digest-counter.p4");
    let mut state = State::new(&p).unwrap();
    let mut interp = Interpreter::new(&p).unwrap();
    let clock = ManualClock::new(0);

    // No digest call: no message.
    let out = send(&mut interp, &mut state, &clock, 3, &[0, 0, 0x12, 0x34]);
    assert_eq!(out, vec![(0, vec![0, 0, 0x12, 0x34])]);
    assert!(state.take_digests().is_empty());

    // A digest call: one message, receiver 7, the data's values in the struct's field order.
    send(&mut interp, &mut state, &clock, 3, &[1, 0, 0x12, 0x34]);
    let d = state.take_digests();
    assert_eq!(d.len(), 1, "{d:?}");
    assert_eq!(d[0].name, "learn_t");
    assert_eq!(d[0].receiver, 7);
    let names: Vec<&str> = d[0].fields.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(names, ["val", "port"]);
    assert_eq!(field(&d[0].fields, "val"), 0x1234);
    assert_eq!(field(&d[0].fields, "port"), 3);
    assert!(state.take_digests().is_empty(), "taking empties the queue");

    // Digest and mark_to_drop: the packet is dropped, the digest is still sent (it comes
    // before the drop decision at the end of ingress).
    let out = send(&mut interp, &mut state, &clock, 5, &[3, 0, 0xAB, 0xCD]);
    assert!(out.is_empty(), "{out:?}");
    let d = state.take_digests();
    assert_eq!(d.len(), 1, "{d:?}");
    assert_eq!(field(&d[0].fields, "val"), 0xABCD);
    assert_eq!(field(&d[0].fields, "port"), 5);

    // Messages queue up in packet order until taken.
    send(&mut interp, &mut state, &clock, 1, &[1, 0, 0, 1]);
    send(&mut interp, &mut state, &clock, 2, &[1, 0, 0, 2]);
    let vals: Vec<u64> = state
        .take_digests()
        .iter()
        .map(|m| field(&m.fields, "val"))
        .collect();
    assert_eq!(vals, [1, 2]);
}

#[test]
fn counters_count_packets_and_received_bytes() {
    let p = pipeline("digest-counter.p4");
    let mut state = State::new(&p).unwrap();
    let mut interp = Interpreter::new(&p).unwrap();
    let clock = ManualClock::new(0);
    // Entry handle 0 for key 1; key 2 has no entry (a miss).
    cli(&mut state, "table_add t hit 1 =>");

    // Index 1: a 4-byte and a 10-byte packet; index 2: one 6-byte packet, dropped in ingress
    // (it was counted before the drop).
    send(&mut interp, &mut state, &clock, 0, &[0, 1, 0, 0]);
    send(
        &mut interp,
        &mut state,
        &clock,
        0,
        &[0, 1, 0, 0, 9, 9, 9, 9, 9, 9],
    );
    send(&mut interp, &mut state, &clock, 0, &[2, 2, 0, 0, 9, 9]);

    let cv = |packets, bytes| CounterValue { packets, bytes };
    assert_eq!(state.counter_read("c", 0).unwrap(), cv(0, 0));
    assert_eq!(state.counter_read("c", 1).unwrap(), cv(2, 14));
    assert_eq!(state.counter_read("c", 2).unwrap(), cv(1, 6));
    assert!(
        state.counter_read("c", 4).is_err(),
        "index 4 is out of range"
    );
    // The direct counter counts hits of its entry only (the miss on key 2 counts nowhere).
    assert_eq!(state.counter_read("dc", 0).unwrap(), cv(2, 14));

    // What simple_switch_CLI prints for it.
    let text = cli(&mut state, "counter_read c 1");
    assert!(
        text.contains("packets=2") && text.contains("bytes=14"),
        "{text}"
    );
    // counter_reset zeroes every cell; counting goes on from there.
    cli(&mut state, "counter_reset c");
    assert_eq!(state.counter_read("c", 1).unwrap(), cv(0, 0));
    send(&mut interp, &mut state, &clock, 0, &[0, 1, 0, 0]);
    assert_eq!(state.counter_read("c", 1).unwrap(), cv(1, 4));
    assert_eq!(state.counter_read("dc", 0).unwrap(), cv(3, 18));
}

#[test]
fn action_selector_picks_the_hash_mod_n_th_member() {
    let p = pipeline("selector.p4");
    let mut state = State::new(&p).unwrap();
    let mut interp = Interpreter::new(&p).unwrap();
    let clock = ManualClock::new(0);
    let prof = "sel";

    // Members 0, 1, 2 write 0xA0, 0xA1, 0xA2.
    for v in ["0xA0", "0xA1", "0xA2"] {
        cli(
            &mut state,
            &format!("act_prof_create_member {prof} set_out {v}"),
        );
    }
    // Group 0: members 2 and 0 (added out of order). Group 1: member 1 only.
    cli(&mut state, &format!("act_prof_create_group {prof}"));
    cli(&mut state, &format!("act_prof_create_group {prof}"));
    cli(
        &mut state,
        &format!("act_prof_add_member_to_group {prof} 2 0"),
    );
    cli(
        &mut state,
        &format!("act_prof_add_member_to_group {prof} 0 0"),
    );
    cli(
        &mut state,
        &format!("act_prof_add_member_to_group {prof} 1 1"),
    );
    // Key 1 -> group 0, key 2 -> group 1, key 3 -> member 2 directly.
    cli(&mut state, "table_indirect_add_with_group t 1 => 0");
    cli(&mut state, "table_indirect_add_with_group t 2 => 1");
    cli(&mut state, "table_indirect_add t 3 => 2");

    let out = |interp: &mut Interpreter<'_>, state: &mut State, k: u8, sel: u8| {
        let o = send(interp, state, &clock, 0, &[k, sel, 0]);
        assert_eq!(o.len(), 1, "{o:?}");
        o[0].1[2]
    };
    // Group 0 = {0, 2} in handle order; identity hash = sel: even sel -> member 0 (A0),
    // odd sel -> member 2 (A2).
    for sel in 0..8u8 {
        let want = if sel % 2 == 0 { 0xA0 } else { 0xA2 };
        assert_eq!(out(&mut interp, &mut state, 1, sel), want, "sel {sel}");
    }
    // A one-member group always picks it.
    for sel in [0u8, 1, 7, 255] {
        assert_eq!(out(&mut interp, &mut state, 2, sel), 0xA1);
    }
    // An entry pointing at a member runs it whatever the selector input.
    for sel in [0u8, 1] {
        assert_eq!(out(&mut interp, &mut state, 3, sel), 0xA2);
    }
    // Growing group 0 to {0, 1, 2}: sel % 3 picks the member.
    cli(
        &mut state,
        &format!("act_prof_add_member_to_group {prof} 1 0"),
    );
    for sel in 0..6u8 {
        assert_eq!(
            out(&mut interp, &mut state, 1, sel),
            0xA0 + sel % 3,
            "sel {sel}"
        );
    }
    // A miss runs the default action (out unchanged).
    assert_eq!(out(&mut interp, &mut state, 9, 0), 0);
}

/// A register of a struct seen from the control plane (`tests/stf/v1model/register-of-struct.p4`,
/// whose STF test covers the data plane): a cell holds the struct packed, its fields' bits in
/// order with the first highest, so `register_read` prints that number and `register_write`
/// of such a number is what the program's `read` unpacks.
#[test]
fn register_of_struct_cells_are_the_fields_packed() {
    let p = pipeline_in("v1model", "register-of-struct.p4");
    let mut state = State::new(&p).unwrap();
    let mut interp = Interpreter::new(&p).unwrap();
    let clock = ManualClock::new(0);

    // Write cell 3: x = 0xAB, y = 0x1234, flag = true, inner.c = 5.
    let write = [1, 3, 0xAB, 0x12, 0x34, 1, 0x50, 0, 0, 0, 0, 0];
    send(&mut interp, &mut state, &clock, 0, &write);
    let packed: u64 = (0xAB << 21) | (0x1234 << 5) | (1 << 4) | 5;
    let printed = cli(&mut state, "register_read I.cells 3");
    assert_eq!(printed.trim(), format!("I.cells[3]= {packed}"));

    // A cell written by the control plane: x = 0x01, y = 0xBEEF, flag = false, c = 0xA.
    let packed: u64 = (0x01 << 21) | (0xBEEF << 5) | 0xA;
    cli(&mut state, &format!("register_write I.cells 6 {packed}"));
    let out = send(
        &mut interp,
        &mut state,
        &clock,
        0,
        &[0, 6, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0],
    );
    assert_eq!(
        out,
        vec![(1, vec![0, 6, 0, 0, 0, 0, 0, 0x01, 0xBE, 0xEF, 0, 0xA0])]
    );
}
