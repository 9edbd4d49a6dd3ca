//! Lowering of individual constructs: small v1model and ubpf programs are parsed, checked and
//! lowered, and the printed IR or the pipeline's structure is checked.

use koi_ir::{ActionScope, Architecture, MatchKind, Pattern, Pipeline, Role};

const HEADERS: &str = r#"
#include <core.p4>
#include <v1model.p4>
header eth_t { bit<48> dst; bit<48> src; bit<16> type; }
header h_t { bit<8> a; bit<8> b; }
struct headers { eth_t eth; h_t h; h_t[2] s; }
struct meta_t { bit<8> x; bit<16> y; }
"#;

const DEFAULT_PARSER: &str = r#"
parser P(packet_in pkt, out headers hdr, inout meta_t meta, inout standard_metadata_t sm) {
    state start { pkt.extract(hdr.eth); transition accept; }
}
"#;

const TAIL: &str = r#"
control V(inout headers hdr, inout meta_t meta) { apply { } }
control E(inout headers hdr, inout meta_t meta, inout standard_metadata_t sm) { apply { } }
control C(inout headers hdr, inout meta_t meta) { apply { } }
control D(packet_out pkt, in headers hdr) { apply { pkt.emit(hdr); } }
V1Switch(P(), V(), I(), E(), C(), D()) main;
"#;

/// Lowers a program; panics with the diagnostics if anything fails.
fn lower(src: &str) -> Pipeline {
    match try_lower(src) {
        Ok(p) => p,
        Err(e) => panic!("{e}"),
    }
}

fn try_lower(src: &str) -> Result<Pipeline, String> {
    try_lower_with(src, koi_syntax::PpOptions::default())
}

fn try_lower_with(src: &str, opts: koi_syntax::PpOptions) -> Result<Pipeline, String> {
    let (sm, program, diags) = koi_syntax::parse_str("test.p4", src, &opts);
    let render =
        |d: &koi_syntax::Diagnostics| -> String { d.list.iter().map(|x| x.render(&sm)).collect() };
    if diags.has_errors() {
        return Err(render(&diags));
    }
    let (checked, sdiags) = koi_sema::check(&program, &koi_sema::CheckOptions::default());
    if sdiags.has_errors() {
        return Err(render(&sdiags));
    }
    koi_lower::lower(&program, &checked).map_err(|d| render(&d))
}

/// A v1model program with the given ingress control (named `I`) and the default parser.
fn with_ingress(ingress: &str) -> Pipeline {
    lower(&format!("{HEADERS}{DEFAULT_PARSER}{ingress}{TAIL}"))
}

fn ingress_text(p: &Pipeline) -> String {
    let text = p.to_string();
    let start = text.find("control I {").expect("no ingress control");
    let end = text[start..]
        .find("\n}\n")
        .map_or(text.len(), |e| start + e);
    text[start..end].to_string()
}

#[test]
fn v1model_package_binds_every_role_and_shares_the_phv() {
    let p = with_ingress(
        "control I(inout headers hdr, inout meta_t meta, inout standard_metadata_t sm) {
            apply { meta.x = 1; }
        }",
    );
    assert_eq!(p.arch, Architecture::V1Model);
    for role in Architecture::V1Model.roles() {
        assert!(p.block(*role).is_some(), "{role:?} unbound");
    }
    assert!(p.phv.header_by_name("hdr.eth").is_some());
    assert!(p.phv.slot_by_name("meta.x").is_some());
    assert!(p.intrinsic("egress_spec").is_some());
    let deparser = p.to_string();
    assert!(deparser.contains("emit(hdr.eth)") && deparser.contains("emit(hdr.s[1])"));
}

#[test]
fn tables_get_p4c_names_keys_and_implicit_no_action() {
    let p = with_ingress(
        "control I(inout headers hdr, inout meta_t meta, inout standard_metadata_t sm) {
            action fwd(bit<9> port) { sm.egress_spec = port; }
            @name(\"drop_it\") action drop() { mark_to_drop(sm); }
            table t {
                key = { hdr.eth.dst: exact; hdr.h.isValid(): exact; hdr.eth.type[7:0]: ternary;
                        meta.x & 0xf: lpm @name(\"low\"); }
                actions = { fwd; drop; }
                size = 64;
            }
            apply { t.apply(); }
        }",
    );
    let t = &p.tables[p.table_by_name("I.t").expect("table I.t")];
    let names: Vec<&str> = t.keys.iter().map(|k| k.field.name.as_str()).collect();
    assert_eq!(
        names,
        ["hdr.eth.dst", "hdr.h.$valid$", "hdr.eth.type[7:0]", "low"]
    );
    assert_eq!(t.keys[1].field.width, 1);
    assert_eq!(t.keys[3].field.kind, MatchKind::Lpm);
    assert_eq!(t.size, 64);
    let acts: Vec<&str> = t
        .actions
        .iter()
        .map(|a| p.actions[a.action].preamble.name.as_str())
        .collect();
    assert_eq!(acts, ["I.fwd", "I.drop_it", "NoAction"]);
    assert_eq!(t.actions[2].scope, ActionScope::DefaultOnly);
    assert_eq!(
        p.actions[t.default_action.call.action].preamble.name,
        "NoAction"
    );
    // P4Info order: NoAction (top level) first, then the control's actions by declaration.
    let order: Vec<&str> = p
        .actions
        .values()
        .map(|a| a.preamble.name.as_str())
        .collect();
    assert_eq!(order, ["NoAction", "I.fwd", "I.drop_it"]);
}

#[test]
fn const_entries_get_priorities_and_patterns() {
    let p = with_ingress(
        "control I(inout headers hdr, inout meta_t meta, inout standard_metadata_t sm) {
            action set(bit<8> v) { meta.x = v; }
            table t {
                key = { hdr.h.a: ternary; hdr.h.b: exact; }
                actions = { set; }
                const entries = {
                    (0x10 &&& 0xf0, 1) : set(1);
                    (_, 2) : set(2);
                }
                const default_action = set(7);
            }
            apply { t.apply(); }
        }",
    );
    let t = &p.tables[p.table_by_name("I.t").unwrap()];
    assert!(t.entries_const && t.default_action.is_const);
    assert_eq!(t.default_action.call.args[0].to_u64(), Some(7));
    assert_eq!(t.entries.len(), 2);
    assert!(matches!(t.entries[0].keys[0], Pattern::Mask { .. }));
    assert_eq!(t.entries[1].keys[0], Pattern::Any);
    assert_eq!(t.entries[0].priority, Some(2));
    assert_eq!(t.entries[1].priority, Some(1));
}

#[test]
fn if_hit_miss_and_action_run_are_apply_edges() {
    let p = with_ingress(
        "control I(inout headers hdr, inout meta_t meta, inout standard_metadata_t sm) {
            action a() { meta.x = 1; }
            action b() { meta.x = 2; }
            table t { key = { hdr.h.a: exact; } actions = { a; b; } }
            table u { key = { hdr.h.b: exact; } actions = { a; } }
            apply {
                if (!t.apply().hit) { meta.y = 3; }
                switch (u.apply().action_run) {
                    a: { meta.y = 4; }
                    default: { }
                }
            }
        }",
    );
    let text = ingress_text(&p);
    assert!(text.contains("apply I.t hit bb"), "{text}");
    assert!(text.contains("apply I.u { I.a => bb"), "{text}");
}

#[test]
fn signed_operators_and_casts_follow_the_source_types() {
    let p = with_ingress(
        "control I(inout headers hdr, inout meta_t meta, inout standard_metadata_t sm) {
            apply {
                int<8> s = (int<8>)hdr.h.a;
                if (s < -1) { meta.x = (bit<8>)(s >> 1); }
                meta.y = (bit<16>)(int<16>)s |+| 16w1;
                meta.x = hdr.h.a |-| 3;
            }
        }",
    );
    let text = ingress_text(&p);
    assert!(text.contains("<s"), "{text}");
    assert!(text.contains(">>s"), "{text}");
    assert!(text.contains("|-|"), "{text}");
}

#[test]
fn functions_are_inlined_with_copy_in_copy_out() {
    let src = format!(
        "{HEADERS}
        bit<8> twice(in bit<8> v, inout bit<16> acc) {{ acc = acc + 1; return v + v; }}
        {DEFAULT_PARSER}
        control I(inout headers hdr, inout meta_t meta, inout standard_metadata_t sm) {{
            apply {{ meta.x = twice(hdr.h.a, meta.y); }}
        }}
        {TAIL}"
    );
    let p = lower(&src);
    let text = ingress_text(&p);
    assert!(text.contains("I.twice.acc = meta.y"), "{text}");
    assert!(text.contains("meta.y = I.twice.acc"), "{text}");
    assert!(text.contains("meta.x = I.twice.$ret"), "{text}");
}

#[test]
fn sub_controls_are_inlined_with_their_tables_qualified() {
    let src = format!(
        "{HEADERS}{DEFAULT_PARSER}
        control Sub(inout headers hdr, inout bit<8> v) {{
            action set() {{ v = 9; }}
            table inner {{ key = {{ hdr.h.a: exact; }} actions = {{ set; }} }}
            apply {{ inner.apply(); if (v == 9) {{ return; }} v = 1; }}
        }}
        control I(inout headers hdr, inout meta_t meta, inout standard_metadata_t sm) {{
            Sub() c;
            apply {{ c.apply(hdr, meta.x); }}
        }}
        {TAIL}"
    );
    let p = lower(&src);
    assert!(p.table_by_name("I.c.inner").is_some());
    assert!(p.action_by_name("I.c.set").is_some());
    let set = &p.actions[p.action_by_name("I.c.set").unwrap()];
    assert!(format!("{p}").contains("meta.x = 8w9") || !set.body.blocks.is_empty());
}

#[test]
fn parser_if_becomes_select_states_and_sub_parsers_are_spliced() {
    let src = format!(
        "{HEADERS}
        parser Sub(packet_in pkt, out h_t h) {{
            state start {{ pkt.extract(h); transition accept; }}
        }}
        parser P(packet_in pkt, out headers hdr, inout meta_t meta, inout standard_metadata_t sm) {{
            Sub() sub;
            state start {{
                pkt.extract(hdr.eth);
                if (hdr.eth.type == 0x800) {{ meta.x = 1; }} else {{ meta.x = 2; }}
                transition select(hdr.eth.type) {{
                    0x800 &&& 0xff00: inner;
                    0x900 .. 0x9ff: stack;
                    default: accept;
                }}
            }}
            state inner {{ sub.apply(pkt, hdr.h); transition accept; }}
            state stack {{ pkt.extract(hdr.s.next); transition select(hdr.s.last.a) {{ 1: stack; default: accept; }} }}
        }}
        control I(inout headers hdr, inout meta_t meta, inout standard_metadata_t sm) {{ apply {{ }} }}
        {TAIL}"
    );
    let p = lower(&src);
    let text = p.to_string();
    assert!(text.contains("state P.sub.start"), "{text}");
    assert!(text.contains("extract(hdr.s.next)"), "{text}");
    assert!(text.contains(".."), "{text}");
    assert!(text.contains("&&&"), "{text}");
    let prs = &p.parsers[match p.block(Role::Parser) {
        Some(koi_ir::BlockRef::Parser(id)) => id,
        _ => panic!("no parser"),
    }];
    assert!(prs.states.len() >= 6, "{text}");
}

#[test]
fn struct_and_header_assignment_and_equality_are_per_slot() {
    let p = with_ingress(
        "control I(inout headers hdr, inout meta_t meta, inout standard_metadata_t sm) {
            apply {
                h_t tmp = { 1, 2 };
                meta_t m2 = meta;
                if (tmp == hdr.h) { meta = m2; }
                hdr.s[0] = hdr.h;
                hdr.h.setInvalid();
            }
        }",
    );
    let text = ingress_text(&p);
    assert!(text.contains("hdr.s[0] = hdr.h"), "{text}");
    assert!(text.contains("hdr.h.setInvalid()"), "{text}");
    assert!(text.contains("I.m2.x = meta.x"), "{text}");
}

#[test]
fn externs_and_builtins_are_lowered() {
    let p = with_ingress(
        "control I(inout headers hdr, inout meta_t meta, inout standard_metadata_t sm) {
            counter(32w16, CounterType.packets) c;
            register<bit<16>>(8) r;
            apply {
                c.count((bit<32>)hdr.h.a);
                r.read(meta.y, 32w1);
                hash(meta.y, HashAlgorithm.crc16, 16w0, { hdr.eth.dst, hdr.h }, 16w1024);
                clone(CloneType.I2E, 32w5);
                digest<meta_t>(1, meta);
            }
        }",
    );
    assert!(p.extern_by_name("I.c").is_some() && p.extern_by_name("I.r").is_some());
    assert_eq!(p.digests.len(), 1);
    assert_eq!(p.digests.values().next().unwrap().preamble.name, "meta_t");
    let text = ingress_text(&p);
    assert!(text.contains("I.c.count("), "{text}");
    assert!(text.contains("hash("), "{text}");
}

#[test]
fn loops_lower_to_cfg_loops() {
    let p = with_ingress(
        "control I(inout headers hdr, inout meta_t meta, inout standard_metadata_t sm) {
            apply {
                for (bit<8> i = 0; i < 4; i = i + 1) { meta.x = meta.x + i; }
                for (bit<8> j in 8w1 .. 8w3) { meta.y = meta.y + 1; }
            }
        }",
    );
    assert!(ingress_text(&p).contains("goto"));
}

#[test]
fn ubpf_pipeline_lowers() {
    let src = r#"
#include <core.p4>
#include <ubpf_model.p4>
header h_t { bit<8> a; bit<16> c; }
struct H { h_t h; }
struct M { }
parser prs(packet_in p, out H h, inout M m, inout standard_metadata std) {
    state start { p.extract(h.h); transition accept; }
}
control pipe(inout H h, inout M m, inout standard_metadata std) {
    Register<bit<32>, bit<32>>(4) reg;
    action a(bit<8> v) { h.h.a = v; h.h.c = csum_replace2(h.h.c, 16w1, 16w2); }
    table t { key = { h.h.a: exact; } actions = { a; } }
    apply {
        bit<32> x = reg.read(0);
        reg.write(0, x + 1);
        t.apply();
        mark_to_pass();
    }
}
control dep(packet_out p, in H h) { apply { p.emit(h.h); } }
ubpf(prs(), pipe(), dep()) main;
"#;
    let p = lower(src);
    assert_eq!(p.arch, Architecture::Ubpf);
    assert!(p.table_by_name("pipe.t").is_some());
    assert!(p.to_string().contains("csum_replace"));
}

#[test]
fn unsupported_architectures_are_diagnosed_not_panicked() {
    let src = r#"
#include <core.p4>
control C();
package Top(C c);
control c() { apply { } }
Top(c()) main;
"#;
    let err = try_lower(src).unwrap_err();
    assert!(err.contains("koi does not support"), "{err}");
}

#[test]
fn overlapping_sub_control_arguments_are_copied_not_aliased() {
    let src = format!(
        "{HEADERS}{DEFAULT_PARSER}
        control Sub(inout bit<8> a, inout bit<8> b) {{ apply {{ a = 1; b = a + b; }} }}
        control I(inout headers hdr, inout meta_t meta, inout standard_metadata_t sm) {{
            Sub() c;
            apply {{ c.apply(meta.x, meta.x); }}
        }}
        {TAIL}"
    );
    let p = lower(&src);
    let text = ingress_text(&p);
    assert!(text.contains("I.c.a = meta.x"), "{text}");
    assert!(text.contains("meta.x = I.c.b"), "{text}");
}

#[test]
fn exit_in_an_inlined_action_copies_out_first() {
    let p = with_ingress(
        "control I(inout headers hdr, inout meta_t meta, inout standard_metadata_t sm) {
            action a(inout bit<8> v, inout bit<8> w) { v = 3; exit; }
            action b(inout bit<8> v) { v = 4; exit; }
            apply { b(meta.x); a(meta.x, meta.x); }
        }",
    );
    let text = ingress_text(&p);
    // `b` binds its parameter to `meta.x` directly: `exit` needs no copy-out.
    assert!(text.contains("I.b();"), "{text}");
    // `a`'s arguments overlap: inlined with copies, performed before `exit`.
    let copy = text.find("meta.x = I.a.v").expect(&text);
    let exit = text.find("exit").expect(&text);
    assert!(copy < exit, "{text}");
}

#[test]
fn psa_pipelines_bind_six_blocks_named_after_their_types() {
    let src = r#"
#include <core.p4>
#include <bmv2/psa.p4>
header eth_t { bit<48> dst; bit<48> src; bit<16> type; }
struct H { eth_t eth; }
struct M { }
struct E { }
struct N { bit<8> v; }
parser IP(packet_in pkt, out H hdr, inout M m, in psa_ingress_parser_input_metadata_t i,
          in E r, in E c) {
    state start { pkt.extract(hdr.eth); transition accept; }
}
control IC(inout H hdr, inout M m, in psa_ingress_input_metadata_t i,
           inout psa_ingress_output_metadata_t o) {
    Counter<bit<32>, bit<8>>(256, PSA_CounterType_t.PACKETS) cnt;
    action fwd(PortId_t p) { send_to_port(o, p); cnt.count((bit<8>)hdr.eth.type); }
    table t { key = { hdr.eth.dst: exact; } actions = { fwd; NoAction; } }
    apply { t.apply(); }
}
control ID(packet_out pkt, out E c, out E r, out N n, inout H hdr, in M m,
           in psa_ingress_output_metadata_t o) {
    apply { if (psa_normal(o)) { n.v = 1; } pkt.emit(hdr.eth); }
}
parser EP(packet_in pkt, out H hdr, inout M m, in psa_egress_parser_input_metadata_t i,
          in N n, in E c, in E c2) {
    state start { transition accept; }
}
control EC(inout H hdr, inout M m, in psa_egress_input_metadata_t i,
           inout psa_egress_output_metadata_t o) { apply { } }
control ED(packet_out pkt, out E c, out E r, inout H hdr, in M m,
           in psa_egress_output_metadata_t o, in psa_egress_deparser_input_metadata_t d) {
    apply { }
}
IngressPipeline(IP(), IC(), ID()) ip;
EgressPipeline(EP(), EC(), ED()) ep;
PSA_Switch(ip, PacketReplicationEngine(), ep, BufferingQueueingEngine()) main;
"#;
    // (koi's own psa.p4, built in.)
    let p = try_lower_with(src, koi_syntax::PpOptions::default()).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(p.arch, Architecture::Psa);
    assert!(p.table_by_name("IC.t").is_some());
    assert!(p.extern_by_name("IC.cnt").is_some());
    assert!(p.action_by_name("send_to_port").is_some() || p.to_string().contains("send_to_port"));
    assert_eq!(p.package.len(), 6);
    // The standard metadata the traffic manager uses, by kind and field.
    for n in [
        "ipin.ingress_port",
        "iin.parser_error",
        "iout.drop",
        "iout.multicast_group",
        "epin.packet_path",
        "ein.instance",
        "eout.clone",
        "edin.egress_port",
    ] {
        assert!(p.intrinsic(n).is_some(), "no intrinsic {n}");
    }
    // normal_meta: one storage for the ingress deparser's out and the egress parser's in.
    let nm: Vec<_> = p.intrinsics.iter().filter(|(k, _)| k == "NM").collect();
    assert_eq!(nm.len(), 1, "{nm:?}");
    assert_eq!(p.phv.slots[nm[0].1].width, 8);
}

#[test]
fn ebpf_and_xdp_packages_bind_their_blocks_and_verdicts() {
    let ebpf = r#"
#include <core.p4>
#include <ebpf_model.p4>
header h_t { bit<8> a; }
struct H { h_t h; }
parser prs(packet_in p, out H hdr) { state start { p.extract(hdr.h); transition accept; } }
control pipe(inout H hdr, out bool pass) {
    table t { key = { hdr.h.a: exact; } actions = { NoAction; } implementation = hash_table(8); }
    apply { t.apply(); pass = true; }
}
ebpfFilter(prs(), pipe()) main;
"#;
    let p =
        try_lower_with(ebpf, koi_syntax::PpOptions::default()).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(p.arch, Architecture::Ebpf);
    assert_eq!(p.package.len(), 2);
    assert!(p.intrinsic("accept").is_some());
    // The eBPF table implementation is not an action profile.
    assert!(p.tables.values().all(|t| t.implementation.is_none()));
    let xdp = r#"
#include <core.p4>
#include <xdp_model.p4>
header h_t { bit<8> a; }
struct H { h_t h; }
parser prs(packet_in p, out H hdr) { state start { p.extract(hdr.h); transition accept; } }
control sw(inout H hdr, in xdp_input imd, out xdp_output omd) {
    apply { omd.output_action = xdp_action.XDP_TX; omd.output_port = imd.input_port; }
}
control dep(in H hdr, packet_out pk) { apply { pk.emit(hdr.h); } }
xdp(prs(), sw(), dep()) main;
"#;
    let p = try_lower_with(xdp, koi_syntax::PpOptions::default()).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(p.arch, Architecture::Xdp);
    assert_eq!(p.package.len(), 3);
    for n in ["imd.input_port", "omd.output_action", "omd.output_port"] {
        assert!(p.intrinsic(n).is_some(), "no intrinsic {n}");
    }
}

#[test]
fn int_literals_given_to_new_types_lower_as_their_underlying_type() {
    let p = lower(&format!(
        "{HEADERS}{DEFAULT_PARSER}
        type bit<9> port_t;
        type port_t egress_t;
        const port_t CPU = 64;
        control I(inout headers hdr, inout meta_t meta, inout standard_metadata_t sm) {{
            action fwd(egress_t p) {{ sm.egress_spec = (bit<9>)(port_t)p; }}
            table t {{ key = {{ hdr.h.a: exact; }} actions = {{ fwd; }} default_action = fwd(5); }}
            apply {{
                port_t p = 3;
                p = CPU;
                sm.egress_spec = (bit<9>)p;
                t.apply();
            }}
        }}
        {TAIL}"
    ));
    let text = ingress_text(&p);
    assert!(text.contains("I.p = 9w3;"), "{text}");
    assert!(text.contains("I.p = 9w64;"), "{text}");
    let t = &p.tables[p.table_by_name("I.t").expect("table I.t")];
    assert_eq!(t.default_action.call.args.len(), 1);
    assert_eq!(t.default_action.call.args[0].to_string(), "9w5");
}

#[test]
fn for_in_loops_over_literal_ranges_and_list_expressions() {
    let ingress = |body: &str| {
        ingress_text(&with_ingress(&format!(
            "control I(inout headers hdr, inout meta_t meta, inout standard_metadata_t sm) {{
                apply {{ {body} }}
            }}"
        )))
    };
    // Literal bounds take the loop variable's type.
    let text = ingress("for (bit<8> i in 1 .. 3) { meta.x = meta.x + i; }");
    assert!(text.contains("$hi = 8w3;"), "{text}");
    assert!(text.contains("I.i = 8w1;"), "{text}");
    assert!(text.contains("I.i = I.i + 8w1;"), "{text}");
    // A list expression, plain or cast to a list type: one iteration per element, each
    // element evaluated before the first iteration.
    for list in ["{1, 2, 5}", "(list<bit<8>>){1, 2, 5}"] {
        let text = ingress(&format!(
            "for (bit<8> v in {list}) {{ meta.x = meta.x + v; }}"
        ));
        for (i, c) in ["8w1", "8w2", "8w5"].iter().enumerate() {
            let item = if i == 0 {
                "$item".to_string()
            } else {
                format!("$item_{i}")
            };
            assert!(text.contains(&format!("{item} = {c};")), "{list}: {text}");
            assert!(
                text.contains(&format!("meta.x = meta.x + {item};")),
                "{list}: {text}"
            );
        }
    }
    let text = ingress("for (bit<8> v in {hdr.h.a, 2}) { hdr.h.a = 0; meta.x = meta.x + v; }");
    let (copy, clear) = (text.find("$item = hdr.h.a;"), text.find("hdr.h.a = 8w0;"));
    assert!(copy.is_some() && copy < clear, "{text}");
    assert!(text.contains("meta.x = meta.x + $item;"), "{text}");
    // Elements of another type are converted to the loop variable's (p4c's canCastBetween).
    let text = ingress("for (bit<8> v in (list<bit<16>>){300, 2}) { meta.x = meta.x + v; }");
    assert!(text.contains("$item = (bit<8>)16w0x12c;"), "{text}");
    assert!(text.contains("meta.x = meta.x + $item;"), "{text}");
}

/// A v1model program whose ingress instantiates `Sub(inst)`, a control with the constructor
/// parameters `params` and the body `body`.
fn with_sub_control(params: &str, body: &str, inst: &str) -> Pipeline {
    lower(&format!(
        "{HEADERS}{DEFAULT_PARSER}
        enum Mode {{ Fast, Slow }}
        enum bit<8> Code {{ A = 3, B = 4 }}
        control Sub(inout meta_t meta)({params}) {{ {body} }}
        control I(inout headers hdr, inout meta_t meta, inout standard_metadata_t sm) {{
            Sub({inst}) s;
            apply {{ s.apply(meta); }}
        }}
        {TAIL}"
    ))
}

#[test]
fn enum_members_bind_directionless_constructor_parameters() {
    // Passed positionally, by name, or taken from the parameter's default value.
    for (params, inst) in [
        ("Mode m, Code c", "Mode.Slow, Code.B"),
        ("Mode m, Code c", "c = Code.B, m = Mode.Slow"),
        ("Mode m = Mode.Slow, Code c = Code.B", ""),
        ("Mode m, Code c = Code.B", "Mode.Slow"),
    ] {
        let text = ingress_text(&with_sub_control(
            params,
            "apply { if (m == Mode.Slow) { meta.x = (bit<8>)c; } }",
            inst,
        ));
        // `Mode.Slow` is the enum's second member (code 1); `Code.B` is 4.
        assert!(
            text.contains("if 32w1 == 32w1 goto"),
            "{params} / {inst}: {text}"
        );
        assert!(text.contains("meta.x = 8w4;"), "{params} / {inst}: {text}");
    }
    // A local constant initialised from a constructor parameter, used in the body and in an
    // action.
    let text = ingress_text(&with_sub_control(
        "Mode m, Code c",
        "const Mode k = m; const bit<8> v = (bit<8>)c + 1;
         action a() { if (k == Mode.Fast) { meta.x = v; } }
         apply { a(); if (k == Mode.Fast) { meta.y = 7; } }",
        "Mode.Fast, Code.A",
    ));
    assert!(text.contains("if 32w0 == 32w0 goto"), "{text}");
    assert!(text.contains("meta.y = 16w7;"), "{text}");
    // `v` depends on `c` through an operation: computed once when the control runs.
    assert!(text.contains("I.s.v = 8w3 + 8w1;"), "{text}");
}

#[test]
fn top_level_actions_are_listed_at_their_first_use_in_the_earliest_instance() {
    // `Sub`'s table (applied first) uses `NoAction` implicitly; `I` is entered before `Sub`
    // and lists `NoAction` first, so P4Info (following p4c) lists it there: first.
    let p = lower(&format!(
        "{HEADERS}{DEFAULT_PARSER}
        action top_a() {{ }}
        control Sub(inout meta_t meta) {{
            action b() {{ meta.x = 2; }}
            table t2 {{ key = {{ meta.y: exact; }} actions = {{ b; }} }}
            apply {{ t2.apply(); }}
        }}
        control I(inout headers hdr, inout meta_t meta, inout standard_metadata_t sm) {{
            Sub() s;
            action a() {{ meta.x = 1; }}
            table t1 {{ key = {{ meta.x: exact; }} actions = {{ NoAction; top_a; a; }} }}
            apply {{ s.apply(meta); t1.apply(); }}
        }}
        {TAIL}"
    ));
    let order: Vec<&str> = p
        .actions
        .values()
        .map(|a| a.preamble.name.as_str())
        .collect();
    assert_eq!(order, ["NoAction", "top_a", "I.a", "I.s.b"]);
}

/// A top-level action with directional parameters that a table's action list binds and the
/// apply block also calls with the same arguments is one action (p4c lists one, DASH's
/// `tunnel_decap`): the call binds the locations as the table does. Called with other
/// arguments, it keeps a copy-in/copy-out action of its own.
#[test]
fn a_table_bound_action_called_directly_is_one_action() {
    let src = format!(
        "{HEADERS}{DEFAULT_PARSER}
        action decap(inout headers hdr, inout meta_t meta) {{ hdr.h.setInvalid(); meta.x = 1; }}
        control I(inout headers hdr, inout meta_t meta, inout standard_metadata_t sm) {{
            table t {{ key = {{ hdr.eth.type: exact; }} actions = {{ decap(hdr, meta); }} }}
            apply {{
                if (hdr.h.a == 3) {{ decap(hdr, meta); }}
                t.apply();
            }}
        }}
        {TAIL}"
    );
    let p = lower(&src);
    let names: Vec<&str> = p
        .actions
        .iter()
        .map(|(_, a)| a.preamble.name.as_str())
        .filter(|n| n.ends_with("decap"))
        .collect();
    assert_eq!(names, ["decap"], "{p}");
    let t = p.table_by_name("I.t").expect("table I.t");
    let decap = p.action_by_name("decap").unwrap();
    assert!(p.tables[t].actions.iter().any(|a| a.action == decap));
    assert!(ingress_text(&p).contains("decap("), "{p}");

    // Other arguments than the table's: a second action, as before.
    let other = src.replace(
        "if (hdr.h.a == 3) { decap(hdr, meta); }",
        "headers h2 = hdr; meta_t m2 = meta; if (hdr.h.a == 3) { decap(h2, m2); }",
    );
    assert_ne!(other, src);
    let p = lower(&other);
    let n = p
        .actions
        .iter()
        .filter(|(_, a)| a.preamble.name.ends_with("decap"))
        .count();
    assert_eq!(n, 2, "{p}");
}

/// An `if` whose condition is known at compile time lowers only the branch taken (p4c's
/// frontend folds it): DASH's macro-expanded `if (E.VXLAN == E.NVGRE) { push_nvgre(..); }`
/// leaves `push_nvgre` unused, so it is not lowered (and P4Info does not list it).
#[test]
fn constant_if_conditions_lower_only_the_branch_taken() {
    let src = format!(
        "{HEADERS}{DEFAULT_PARSER}
        enum bit<8> Encap {{ VXLAN = 1, NVGRE = 2 }}
        action push_vxlan(inout headers hdr) {{ hdr.h.a = 1; }}
        action push_nvgre(inout headers hdr) {{ hdr.h.a = 2; }}
        control I(inout headers hdr, inout meta_t meta, inout standard_metadata_t sm) {{
            apply {{
                if (Encap.VXLAN == Encap.VXLAN) {{ push_vxlan(hdr); }}
                if (Encap.VXLAN == Encap.NVGRE) {{ push_nvgre(hdr); }} else {{ meta.x = 7; }}
            }}
        }}
        {TAIL}"
    );
    let p = lower(&src);
    let text = ingress_text(&p);
    assert!(text.contains("push_vxlan"), "{text}");
    assert!(!text.contains("push_nvgre"), "{text}");
    assert!(text.contains("8w7"), "{text}");
    assert!(p.action_by_name("push_nvgre").is_none(), "{p}");
}

#[test]
fn a_direct_resource_property_may_be_a_list_of_one() {
    // `counters = { c };` (p4c's eBPF PSA programs write `psa_direct_counter = { c };`) names
    // the table's direct counter as `counters = c;` does.
    let p = with_ingress(
        "control I(inout headers hdr, inout meta_t meta, inout standard_metadata_t sm) {
            direct_counter(CounterType.packets) c;
            direct_meter<bit<8>>(MeterType.packets) m;
            action a() { m.read(meta.x); }
            table t {
                key = { hdr.h.a: exact; }
                actions = { a; }
                counters = { c };
                meters = { m };
            }
            apply { t.apply(); }
        }",
    );
    let t = &p.tables[p.table_by_name("I.t").expect("table I.t")];
    let name = |e: Option<koi_ir::ExternId>| e.map(|e| p.externs[e].preamble.name.clone());
    assert_eq!(name(t.direct_counter).as_deref(), Some("I.c"));
    assert_eq!(name(t.direct_meter).as_deref(), Some("I.m"));
    // Several are refused, with the reason (a P4Runtime table entry carries one counter).
    let err = try_lower(&format!(
        "{HEADERS}{DEFAULT_PARSER}
        control I(inout headers hdr, inout meta_t meta, inout standard_metadata_t sm) {{
            direct_counter(CounterType.packets) c1;
            direct_counter(CounterType.packets) c2;
            table t {{ key = {{ hdr.h.a: exact; }} actions = {{ NoAction; }} counters = {{ c1, c2 }}; }}
            apply {{ t.apply(); }}
        }}{TAIL}"
    ))
    .expect_err("two direct counters lowered");
    assert!(err.contains("several direct counters"), "{err}");
}
