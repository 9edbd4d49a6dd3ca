//! The slow path's trace memo: new flows on a way already traced take the program of an
//! earlier run (and give the interpreter's outputs), and a program that holds a packet value
//! as a constant is never given to a packet with another value.

mod common;

use common::Twin;
use koi_ir::Pipeline;

/// The megaflow fixes the whole destination (compared with 0x77). With `c` (the low byte of
/// the Ethernet source) 1 the program writes `h.b + 1` into `h.a` (an operation on packet
/// bits); with `c == 2` it compares `h.b` with 9 first, so the megaflow fixes `h.b` and the
/// tracer folds `h.b + 1` into the program as a constant.
const INGRESS: &str = r#"
control I(inout headers hdr, inout meta_t meta, inout standard_metadata_t sm) {
    action to(bit<9> port) { sm.egress_spec = port; }
    table fwd { key = { hdr.eth.dst: exact; } actions = { to; } default_action = to(2); }
    apply {
        fwd.apply();
        if (hdr.eth.dst == 0x77) {
            sm.egress_spec = 3;
        }
        if (hdr.eth.src[7:0] == 1) {
            hdr.h.a = hdr.h.b + 1;
        } else if (hdr.eth.src[7:0] == 2) {
            if (hdr.h.b == 9) {
                sm.egress_spec = 4;
            }
            hdr.h.a = hdr.h.b + 1;
        }
    }
}
"#;

fn program() -> Pipeline {
    common::eth_h_program(common::ETH_H_PARSER, INGRESS)
}

/// A frame to `dst` from `c` with EtherType 0x88b5 and `h = (a, b)`.
fn frame(dst: u8, a: u8, b: u8, c: u8) -> Vec<u8> {
    vec![0, 0, 0, 0, 0, dst, 0, 0, 0, 0, 0, c, 0x88, 0xb5, a, b]
}

#[test]
fn new_flows_on_a_traced_way_take_the_memo_program() {
    let p = program();
    let mut t = Twin::new(&p, |_| {});
    // Ten destinations (ten megaflows: `fwd` matches the whole destination), one way.
    for dst in 0..10u8 {
        let (out, _) = t.send(&frame(dst, 1, 10 + dst, 1), 1);
        assert_eq!(out[0].1[14], 11 + dst, "h.a = h.b + 1");
    }
    let s = t.dp.stats();
    assert_eq!((s.misses, s.installs, s.compiled), (10, 10, 10), "{s:?}");
    assert_eq!(s.memo_hits, 9, "all but the first from the memo: {s:?}");
    // Their megaflows are hit by more packets of the same flows.
    for dst in 0..10u8 {
        t.send(&frame(dst, 7, 20 + dst, 1), 1);
    }
    assert_eq!(t.dp.stats().misses, 10);
}

#[test]
fn a_program_holding_a_packet_value_is_not_given_to_another_value() {
    let p = program();
    let mut t = Twin::new(&p, |_| {});
    // One way (`h.b != 9`), but each program writes its own `h.b + 1` as a constant.
    for b in 0..8u8 {
        let (out, _) = t.send(&frame(1, 100, b, 2), 1);
        assert_eq!(out[0].1[14], b + 1);
    }
    let s = t.dp.stats();
    assert_eq!((s.misses, s.compiled), (8, 8), "{s:?}");
    assert_eq!(s.memo_hits, 0, "{s:?}");
    // Another destination with a value seen lately: the same program, from the memo.
    let (out, _) = t.send(&frame(2, 50, 6, 2), 1);
    assert_eq!(out[0].1[14], 7);
    assert_eq!(t.dp.stats().memo_hits, 1);
}

#[test]
fn without_the_memo_every_run_is_traced() {
    let p = program();
    let mut t = Twin::new(&p, |_| {});
    let config = koi_datapath::DatapathConfig {
        trace_memo: false,
        jit_after: Some(1),
        ..Default::default()
    };
    t.dp = koi_datapath::Datapath::with_config(&p, koi_interp::Options::default(), config)
        .unwrap_or_else(|e| panic!("{e}"));
    for dst in 0..4u8 {
        t.send(&frame(dst, 1, 2, 1), 1);
    }
    let s = t.dp.stats();
    assert_eq!((s.compiled, s.memo_hits), (4, 0), "{s:?}");
}

#[test]
fn a_table_write_empties_the_memo() {
    let p = program();
    let mut t = Twin::new(&p, |_| {});
    t.send(&frame(1, 1, 2, 1), 1);
    t.send(&frame(2, 1, 2, 1), 1);
    assert_eq!(t.dp.stats().memo_hits, 1);
    let fwd = p
        .tables
        .iter()
        .find(|(_, x)| x.preamble.name.ends_with("fwd"));
    t.dp.on_table_write(fwd.map(|(id, _)| id).expect("fwd"));
    t.send(&frame(3, 1, 2, 1), 1);
    assert_eq!(t.dp.stats().memo_hits, 1, "traced again");
    t.send(&frame(4, 1, 2, 1), 1);
    assert_eq!(t.dp.stats().memo_hits, 2);
}
