//! PSA through the interpreter with koi's own psa.p4: `examples/psa_l2.p4`'s unicast,
//! flooding and default drop with the report's reasons; a program that recirculates or
//! resubmits every packet forever is stopped at the pass limit with a reported drop; random
//! packets never make a PSA program panic.

use koi_control::command;
use koi_interp::{DropReason, Interpreter, Options};
use koi_ir::Pipeline;
use koi_state::{ManualClock, State, cli};
use proptest::prelude::*;
use std::path::Path;

fn lower_text(name: &str, text: &str) -> Pipeline {
    let (_sm, program, diags) =
        koi_syntax::parse_str(name, text, &koi_syntax::PpOptions::default());
    assert!(!diags.has_errors(), "parse errors");
    let (checked, d) = koi_sema::check(&program, &koi_sema::CheckOptions::default());
    assert!(!d.has_errors(), "type errors");
    koi_lower::lower(&program, &checked).unwrap_or_else(|_| panic!("lowering failed"))
}

fn psa_l2() -> (Pipeline, &'static str) {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let text = std::fs::read_to_string(root.join("examples/psa_l2.p4")).expect("example");
    (
        lower_text("psa_l2.p4", &text),
        include_str!("../../../examples/psa_l2.entries"),
    )
}

fn loaded(p: &Pipeline, entries: &str) -> State {
    let mut s = State::new(p).unwrap();
    for line in entries.lines() {
        if let Some(c) = command::parse(line).unwrap() {
            cli::execute(&mut s, &c).unwrap_or_else(|e| panic!("{line}: {e}"));
        }
    }
    s
}

fn eth(dst: [u8; 6]) -> Vec<u8> {
    let mut f = dst.to_vec();
    f.extend_from_slice(&[2, 0, 0, 0, 0, 0x0a, 0x88, 0xb5]);
    f.resize(60, 0x5a);
    f
}

#[test]
fn psa_l2_unicasts_floods_and_drops_by_default() {
    let (p, entries) = psa_l2();
    let mut s = loaded(&p, entries);
    let mut i = Interpreter::new(&p).unwrap();
    let clock = ManualClock::new(0);
    let to_b = eth([2, 0, 0, 0, 0, 0x0b]);
    let o = i.process(&mut s, &to_b, 1, &clock).unwrap();
    assert_eq!(o.outputs.len(), 1);
    assert_eq!((o.outputs[0].port, &o.outputs[0].bytes), (2, &to_b));
    assert!(o.report.drops.is_empty());

    let bcast = eth([0xff; 6]);
    let o = i.process(&mut s, &bcast, 1, &clock).unwrap();
    let ports: Vec<u64> = o.outputs.iter().map(|x| x.port).collect();
    assert_eq!(ports, [2, 3]);
    assert!(o.outputs.iter().all(|x| x.bytes == bcast));

    // No entry: the ingress's `drop` stays true.
    let o = i
        .process(&mut s, &eth([2, 0, 0, 0, 0, 0x0c]), 1, &clock)
        .unwrap();
    assert!(o.outputs.is_empty());
    assert_eq!(o.report.drops, [DropReason::Ingress]);
    // Too short for the Ethernet header: a parser error, not a drop by the parser; the
    // table is not applied (the header is invalid), so PSA's default drop.
    let o = i.process(&mut s, &[1, 2, 3], 1, &clock).unwrap();
    assert!(o.outputs.is_empty());
    assert_eq!(o.report.drops, [DropReason::Ingress]);
}

const LOOP: &str = r#"
#include <core.p4>
#include <psa.p4>
header h_t { bit<8> n; }
struct H { h_t h; }
struct E { }
parser IP(packet_in pkt, out H hdr, inout E m, in psa_ingress_parser_input_metadata_t i,
          in E r, in E c) {
    state start { pkt.extract(hdr.h); transition accept; }
}
control Ig(inout H hdr, inout E m, in psa_ingress_input_metadata_t i,
           inout psa_ingress_output_metadata_t o) {
    apply {
        hdr.h.n = hdr.h.n + 1;
        if (RESUBMIT) {
            o.drop = false;
            o.resubmit = true;
        } else {
            send_to_port(o, PSA_PORT_RECIRCULATE);
        }
    }
}
control ID(packet_out pkt, out E a, out E b, out E c, inout H hdr, in E m,
           in psa_ingress_output_metadata_t o) {
    apply { pkt.emit(hdr.h); }
}
parser EP(packet_in pkt, out H hdr, inout E m, in psa_egress_parser_input_metadata_t i,
          in E n, in E a, in E b) {
    state start { transition accept; }
}
control Eg(inout H hdr, inout E m, in psa_egress_input_metadata_t i,
           inout psa_egress_output_metadata_t o) { apply { } }
control ED(packet_out pkt, out E a, out E b, inout H hdr, in E m,
           in psa_egress_output_metadata_t o, in psa_egress_deparser_input_metadata_t d) {
    apply { }
}
IngressPipeline(IP(), Ig(), ID()) ip;
EgressPipeline(EP(), Eg(), ED()) ep;
PSA_Switch(ip, PacketReplicationEngine(), ep, BufferingQueueingEngine()) main;
"#;

#[test]
fn endless_recirculation_and_resubmission_stop_at_the_pass_limit() {
    for resubmit in [false, true] {
        let text = LOOP.replace("RESUBMIT", if resubmit { "true" } else { "false" });
        let p = lower_text("loop.p4", &text);
        let mut s = State::new(&p).unwrap();
        let opts = Options {
            max_passes: 5,
            ..Options::default()
        };
        let mut i = Interpreter::with_options(&p, opts).unwrap();
        let o = i
            .process(&mut s, &[0, 1, 2], 0, &ManualClock::new(0))
            .unwrap();
        assert!(o.outputs.is_empty(), "resubmit {resubmit}: {o:?}");
        assert_eq!(o.report.passes, 5, "resubmit {resubmit}");
        assert_eq!(o.report.drops, [DropReason::Limit], "resubmit {resubmit}");
        assert!(o.report.aborted.is_none());
    }
}

proptest! {
    #[test]
    fn random_packets_never_make_a_psa_program_panic(
        data in proptest::collection::vec(any::<u8>(), 0..80),
        port in 0u64..8,
    ) {
        static P: std::sync::OnceLock<(Pipeline, &'static str)> = std::sync::OnceLock::new();
        let (p, entries) = P.get_or_init(psa_l2);
        let mut s = loaded(p, entries);
        let mut i = Interpreter::new(p).unwrap();
        let o = i.process(&mut s, &data, port, &ManualClock::new(0)).unwrap();
        prop_assert!(o.report.aborted.is_none());
        prop_assert!(o.outputs.len() <= 2);
    }
}
