//! Corpus samples built by hand as lowering would build them (p4c's control-plane names, the
//! actions and tables p4c keeps, `NoAction` and `@defaultonly` as its frontend adds them),
//! whose generated P4Info must equal p4c's golden: semantically (`koi_proto::compare`) and,
//! the arenas being in p4c's order, as text.

mod common;

use common::*;
use koi_ir::types::{Translation, TypeDecl};
use koi_ir::*;

/// v1model's standard metadata fields the samples use.
fn std_meta(b: &mut B) -> (SlotId, SlotId) {
    let spec = b.meta("standard_metadata.egress_spec", 9);
    let port = b.meta("standard_metadata.egress_port", 9);
    b.p.intrinsics.push(("egress_spec".into(), spec));
    b.p.intrinsics.push(("egress_port".into(), port));
    (spec, port)
}

/// Action profile and action selector constructed in tables' `implementation`, named by the
/// property's `@name`; a `selector` key left out of the match fields.
#[test]
fn action_profile_bmv2() {
    let mut b = B::new(Architecture::V1Model);
    let hash1 = b.meta("meta.hash1", 32);
    b.parser("ParserI", Role::Parser, &[]);
    b.control("VerifyChecksumI", Role::VerifyChecksum, vec![], &[]);
    let no_action = b.no_action();
    let drop = b.action("IngressI.drop", vec![], vec![mark_to_drop()]);
    let ap = b.p.externs.push(Extern {
        preamble: Preamble::new("ap"),
        type_name: "action_profile".into(),
        type_args: vec![],
        ctor_args: vec![ConstArg::Bits(bits(32, 128))],
        kind: ExternKind::ActionProfile { size: 128 },
    });
    let ap_ws = b.p.externs.push(Extern {
        preamble: Preamble::new("ap_ws"),
        type_name: "action_selector".into(),
        type_args: vec![],
        ctor_args: vec![
            ConstArg::Enum {
                ty: "HashAlgorithm".into(),
                member: "identity".into(),
            },
            ConstArg::Bits(bits(32, 1024)),
            ConstArg::Bits(bits(32, 10)),
        ],
        kind: ExternKind::ActionSelector {
            algo: HashAlgo::Identity,
            size: 1024,
            output_width: 10,
        },
    });
    let mut t = b.table(
        "IngressI.indirect",
        vec![],
        &[drop, no_action],
        no_action,
        true,
    );
    t.implementation = Some(ap);
    let indirect = b.p.tables.push(t);
    let key = b.key(hash1, "meta.hash1", MatchKind::Selector);
    let mut t = b.table(
        "IngressI.indirect_ws",
        vec![key],
        &[drop, no_action],
        no_action,
        true,
    );
    t.implementation = Some(ap_ws);
    let indirect_ws = b.p.tables.push(t);
    b.control("IngressI", Role::Ingress, vec![], &[indirect, indirect_ws]);
    b.control("EgressI", Role::Egress, vec![], &[]);
    b.control("ComputeChecksumI", Role::ComputeChecksum, vec![], &[]);
    b.deparser("DeparserI", Role::Deparser, &[]);
    check_golden("action_profile-bmv2", &b.finish(), true);
}

/// One declared action selector shared by two tables: `table_ids` lists both.
#[test]
fn action_selector_shared_bmv2() {
    let mut b = B::new(Architecture::V1Model);
    let hash1 = b.meta("meta.hash1", 32);
    b.parser("ParserI", Role::Parser, &[]);
    b.control("VerifyChecksumI", Role::VerifyChecksum, vec![], &[]);
    let no_action = b.no_action();
    let drop = b.action("IngressI.drop", vec![], vec![mark_to_drop()]);
    let sel = b.p.externs.push(Extern {
        preamble: Preamble::new("IngressI.as"),
        type_name: "action_selector".into(),
        type_args: vec![],
        ctor_args: vec![],
        kind: ExternKind::ActionSelector {
            algo: HashAlgo::Identity,
            size: 1024,
            output_width: 10,
        },
    });
    let mut ids = Vec::new();
    for name in ["IngressI.indirect_ws", "IngressI.indirect_ws_1"] {
        let key = b.key(hash1, "meta.hash1", MatchKind::Selector);
        let mut t = b.table(name, vec![key], &[drop, no_action], no_action, true);
        t.implementation = Some(sel);
        ids.push(b.p.tables.push(t));
    }
    b.control("IngressI", Role::Ingress, vec![], &ids);
    b.control("EgressI", Role::Egress, vec![], &[]);
    b.control("ComputeChecksumI", Role::ComputeChecksum, vec![], &[]);
    b.deparser("DeparserI", Role::Deparser, &[]);
    check_golden("action_selector_shared-bmv2", &b.finish(), true);
}

fn psa_counter(name: &str, unit: CounterUnit, member: &str) -> Extern {
    Extern {
        preamble: Preamble::new(name),
        type_name: "Counter".into(),
        type_args: vec![P4Type::Bit(10), P4Type::Bit(12)],
        ctor_args: vec![
            ConstArg::Bits(bits(32, 1024)),
            ConstArg::Enum {
                ty: "PSA_CounterType_t".into(),
                member: member.into(),
            },
        ],
        kind: ExternKind::Counter {
            size: 1024,
            unit,
            index_width: 12,
        },
    }
}

/// PSA counters of the three units, a meter and a register.
#[test]
fn psa_example_dpdk_externs() {
    let mut b = B::new(Architecture::Psa);
    let eth = b.header(
        "hdr.ethernet",
        "ethernet_t",
        &[("dstAddr", 48), ("srcAddr", 48), ("etherType", 16)],
    );
    let port_out = b.meta("user_meta.port_out", 32);
    let color_out =
        b.p.phv
            .add_slot("ingress.color_out", Ty::Bits(32), SlotKind::Local);
    b.parser("IngressParserImpl", Role::IngressParser, &[eth]);
    let no_action = b.no_action();
    let c0 = psa_counter(
        "ingress.counter0",
        CounterUnit::PacketsAndBytes,
        "PACKETS_AND_BYTES",
    );
    let c0 = b.p.externs.push(c0);
    let c1 = b.p.externs.push(psa_counter(
        "ingress.counter1",
        CounterUnit::Packets,
        "PACKETS",
    ));
    let c2 =
        b.p.externs
            .push(psa_counter("ingress.counter2", CounterUnit::Bytes, "BYTES"));
    let reg = b.p.externs.push(Extern {
        preamble: Preamble::new("ingress.reg"),
        type_name: "Register".into(),
        type_args: vec![P4Type::Bit(32), P4Type::Bit(12)],
        ctor_args: vec![ConstArg::Bits(bits(32, 1024))],
        kind: ExternKind::Register {
            size: 1024,
            elem: Ty::Bits(32),
            index_width: 12,
        },
    });
    let meter = b.p.externs.push(Extern {
        preamble: Preamble::new("ingress.meter0"),
        type_name: "Meter".into(),
        type_args: vec![P4Type::Bit(12)],
        ctor_args: vec![ConstArg::Bits(bits(32, 1024))],
        kind: ExternKind::Meter {
            size: 1024,
            unit: MeterUnit::Bytes,
            index_width: 12,
        },
    });
    let execute = b.action(
        "ingress.execute",
        vec![ActionParam::bits("index", 12)],
        vec![
            Stmt::ExternCall {
                instance: meter,
                method: "execute_meter".into(),
                args: vec![Arg::In(Expr::Param(0)), Arg::Out(Place::Slot(color_out))],
                result: None,
            },
            Stmt::ExternCall {
                instance: reg,
                method: "write".into(),
                args: vec![Arg::In(Expr::Param(0)), Arg::In(Expr::Slot(port_out))],
                result: None,
            },
        ],
    );
    let src = b.field(eth, "srcAddr");
    let key = b.key(src, "hdr.ethernet.srcAddr", MatchKind::Exact);
    let t = b.table(
        "ingress.tbl",
        vec![key],
        &[no_action, execute],
        no_action,
        false,
    );
    let tbl = b.p.tables.push(t);
    let count = |c: ExternId, i: u64| Stmt::ExternCall {
        instance: c,
        method: "count".into(),
        args: vec![Arg::In(Expr::bits(12, i.into()))],
        result: None,
    };
    let mut body = BodyBuilder::new();
    let cond = Expr::Slot(port_out).eq(Expr::bits(32, 1));
    let (then, otherwise) = body.branch(cond);
    body.switch_to(then);
    body.apply(tbl);
    for (c, i) in [(c0, 1023), (c1, 512), (c2, 1023)] {
        body.push(count(c, i));
    }
    body.push(Stmt::ExternCall {
        instance: reg,
        method: "read".into(),
        args: vec![Arg::Out(Place::Slot(port_out)), Arg::In(Expr::bits(12, 1))],
        result: None,
    });
    body.terminate(Terminator::Return);
    body.switch_to(otherwise);
    let ingress = body.finish();
    b.p.add_control("ingress", ingress, Some(Role::Ingress));
    b.deparser("IngressDeparserImpl", Role::IngressDeparser, &[eth]);
    b.parser("EgressParserImpl", Role::EgressParser, &[]);
    b.control("egress", Role::Egress, vec![], &[]);
    b.deparser("EgressDeparserImpl", Role::EgressDeparser, &[]);
    check_golden("psa-example-dpdk-externs", &b.finish(), true);
}

/// A direct meter named by `@name(".namedmeter")`; actions renamed by `@name`; an unused
/// action (`m_action`) absent as p4c removes it.
#[test]
fn named_meter_1_bmv2() {
    let mut b = B::new(Architecture::V1Model);
    let eth = b.header(
        "hdr.ethernet",
        "ethernet_t",
        &[("dstAddr", 48), ("srcAddr", 48), ("etherType", 16)],
    );
    let tag = b.meta("meta.meta.meter_tag", 32);
    let (spec, _) = std_meta(&mut b);
    b.parser("ParserImpl", Role::Parser, &[eth]);
    b.control("verifyChecksum", Role::VerifyChecksum, vec![], &[]);
    let meter = b.p.externs.push(Extern {
        preamble: Preamble::new("namedmeter"),
        type_name: "direct_meter".into(),
        type_args: vec![P4Type::Bit(32)],
        ctor_args: vec![ConstArg::Enum {
            ty: "MeterType".into(),
            member: "packets".into(),
        }],
        kind: ExternKind::DirectMeter {
            unit: MeterUnit::Packets,
        },
    });
    let read = Stmt::ExternCall {
        instance: meter,
        method: "read".into(),
        args: vec![Arg::Out(Place::Slot(tag))],
        result: None,
    };
    let no_action = b.no_action();
    let drop = b.action("ingress._drop", vec![], vec![mark_to_drop()]);
    let nop = b.action("ingress._nop", vec![], vec![]);
    let m_action_2 = b.action(
        "ingress.m_action_2",
        vec![ActionParam::bits("meter_idx", 9)],
        vec![
            Stmt::assign(Place::Slot(spec), Expr::Param(0)),
            read.clone(),
        ],
    );
    let nop_2 = b.action("ingress._nop_2", vec![], vec![read]);
    let key = b.key(tag, "meta.meta.meter_tag", MatchKind::Exact);
    let mut t = b.table(
        "ingress.m_filter",
        vec![key],
        &[drop, nop, no_action],
        no_action,
        false,
    );
    t.size = 16;
    let m_filter = b.p.tables.push(t);
    let src = b.field(eth, "srcAddr");
    let key = b.key(src, "hdr.ethernet.srcAddr", MatchKind::Exact);
    let acts = [m_action_2, nop_2, no_action];
    let mut t = b.table("ingress.m_table", vec![key], &acts, no_action, false);
    t.size = 16384;
    t.direct_meter = Some(meter);
    let m_table = b.p.tables.push(t);
    b.control("ingress", Role::Ingress, vec![], &[m_table, m_filter]);
    b.control("egress", Role::Egress, vec![], &[]);
    b.control("computeChecksum", Role::ComputeChecksum, vec![], &[]);
    b.deparser("DeparserImpl", Role::Deparser, &[eth]);
    check_golden("named_meter_1-bmv2", &b.finish(), true);
}

/// A used and an unused direct counter (the unused one is not listed); a const default
/// action with an argument.
#[test]
fn unused_counter_bmv2() {
    let mut b = B::new(Architecture::V1Model);
    let h = b.header("h.h", "hdr", &[("a", 32)]);
    let (spec, _) = std_meta(&mut b);
    b.parser("p", Role::Parser, &[h]);
    b.control("vrfy", Role::VerifyChecksum, vec![], &[]);
    let direct = |name: &str| Extern {
        preamble: Preamble::new(name),
        type_name: "direct_counter".into(),
        type_args: vec![],
        ctor_args: vec![ConstArg::Enum {
            ty: "CounterType".into(),
            member: "packets".into(),
        }],
        kind: ExternKind::DirectCounter {
            unit: CounterUnit::Packets,
        },
    };
    let c = b.p.externs.push(direct("ingress.c"));
    b.p.externs.push(direct("ingress.c1"));
    let my_action = b.action(
        "ingress.my_action",
        vec![ActionParam::bits("a", 9)],
        vec![Stmt::assign(Place::Slot(spec), Expr::Param(0))],
    );
    let mut t = b.table("ingress.t", vec![], &[my_action], my_action, true);
    t.default_action.call.args = vec![bits(9, 0)];
    t.direct_counter = Some(c);
    let t = b.p.tables.push(t);
    b.control("ingress", Role::Ingress, vec![], &[t]);
    b.control("egress", Role::Egress, vec![], &[]);
    b.control("update", Role::ComputeChecksum, vec![], &[]);
    b.deparser("deparser", Role::Deparser, &[h]);
    check_golden("unused-counter-bmv2", &b.finish(), true);
}

/// A v1model digest of a struct with `type`s (translated and not, one defined on another),
/// an enum and `error`; translated keys and parameters.
#[test]
fn v1model_digest_custom_type() {
    let mut b = B::new(Architecture::V1Model);
    let translated = |name: &str, w: u32| TypeDecl::NewType {
        annotations: Vec::new(),
        name: name.into(),
        ty: P4Type::Bit(w),
        translation: Some(Translation {
            uri: format!("com.fingerhutpress/andysp4arch/v1/{name}"),
            sdn_bitwidth: Some(32),
        }),
    };
    b.decl(TypeDecl::NewType {
        annotations: Vec::new(),
        name: "foo_t".into(),
        ty: P4Type::Bit(32),
        translation: None,
    });
    b.decl(TypeDecl::NewType {
        annotations: Vec::new(),
        name: "bar_t".into(),
        ty: P4Type::NewType("foo_t".into()),
        translation: None,
    });
    b.decl(translated("EthernetAddr_t", 48));
    b.decl(translated("IPv4Addr_t", 32));
    b.decl(TypeDecl::Enum {
        name: "MyPacketTypes".into(),
        members: vec!["IPv4".into(), "Other".into()],
    });
    b.decl(TypeDecl::Struct {
        name: "test_digest_t".into(),
        members: vec![
            member("in_mac_srcAddr", P4Type::NewType("EthernetAddr_t".into())),
            member("my_parser_error", P4Type::Error),
            member("pkt_type", P4Type::Enum("MyPacketTypes".into())),
            member("bar", P4Type::NewType("bar_t".into())),
        ],
        annotations: vec![],
    });
    let eth = b.header(
        "hdr.ethernet",
        "ethernet_t",
        &[("dstAddr", 48), ("srcAddr", 48), ("etherType", 16)],
    );
    let ipv4_fields = [
        ("version", 4),
        ("ihl", 4),
        ("diffserv", 8),
        ("totalLen", 16),
        ("identification", 16),
        ("flags", 3),
        ("fragOffset", 13),
        ("ttl", 8),
        ("protocol", 8),
        ("hdrChecksum", 16),
        ("srcAddr", 32),
        ("dstAddr", 32),
    ];
    let ipv4 = b.header("hdr.ipv4", "ipv4_t", &ipv4_fields);
    let d_mac = b.meta("meta.test_digest.in_mac_srcAddr", 48);
    let d_err = b.meta("meta.test_digest.my_parser_error", 32);
    let d_type = b.meta("meta.test_digest.pkt_type", 32);
    let d_bar = b.meta("meta.test_digest.bar", 32);
    let (spec, port) = std_meta(&mut b);
    b.parser("MyParser", Role::Parser, &[eth, ipv4]);
    b.control("MyVerifyChecksum", Role::VerifyChecksum, vec![], &[]);
    let digest = b.p.digests.push(Digest {
        preamble: Preamble::new("test_digest_t"),
        ty: P4Type::Struct("test_digest_t".into()),
        fields: vec![
            ("in_mac_srcAddr".into(), 48),
            ("my_parser_error".into(), 32),
            ("pkt_type".into(), 32),
            ("bar".into(), 32),
        ],
    });
    let no_action = b.no_action();
    let (eth_dst, eth_src) = (b.field(eth, "dstAddr"), b.field(eth, "srcAddr"));
    let (ip_dst, ttl) = (b.field(ipv4, "dstAddr"), b.field(ipv4, "ttl"));
    let set_dmac = b.action(
        "MyIngress.set_dmac",
        vec![typed_param("dstAddr", 48, "EthernetAddr_t")],
        vec![Stmt::assign(Place::Slot(eth_dst), Expr::Param(0))],
    );
    let drop = b.action("MyIngress.drop", vec![], vec![]);
    let set_nhop = b.action(
        "MyIngress.set_nhop",
        vec![
            typed_param("dstAddr", 32, "IPv4Addr_t"),
            ActionParam::bits("port", 9),
        ],
        vec![
            Stmt::assign(Place::Slot(ip_dst), Expr::Param(0)),
            Stmt::assign(Place::Slot(spec), Expr::Param(1)),
        ],
    );
    let too_short = b.p.error_code("PacketTooShort").unwrap_or_default();
    let send_digest = b.action(
        "MyIngress.send_digest",
        vec![],
        vec![
            Stmt::assign(Place::Slot(d_mac), Expr::Slot(eth_src)),
            Stmt::assign(Place::Slot(d_err), Expr::bits(32, too_short.into())),
            Stmt::assign(Place::Slot(d_type), Expr::bits(32, 0)),
            Stmt::assign(Place::Slot(d_bar), Expr::bits(32, 777)),
            Stmt::Builtin(Builtin::Digest {
                digest,
                receiver: Expr::bits(32, 1),
                data: vec![d_mac, d_err, d_type, d_bar]
                    .into_iter()
                    .map(Expr::Slot)
                    .collect(),
            }),
        ],
    );
    let rewrite_mac = b.action(
        "MyEgress.rewrite_mac",
        vec![typed_param("srcAddr", 48, "EthernetAddr_t")],
        vec![
            Stmt::assign(Place::Slot(eth_src), Expr::Param(0)),
            Stmt::assign(
                Place::Slot(ttl),
                Expr::binary(BinOp::Sub, Expr::Slot(ttl), Expr::bits(8, 1)),
            ),
        ],
    );
    let typed_key = |b: &B, kind: MatchKind| {
        let mut k = b.key(ip_dst, "hdr.ipv4.dstAddr", kind);
        k.field.type_name = Some("IPv4Addr_t".into());
        k
    };
    let acts = [set_dmac, drop, no_action];
    let t = b.table(
        "MyIngress.forward",
        vec![typed_key(&b, MatchKind::Exact)],
        &acts,
        no_action,
        false,
    );
    let forward = b.p.tables.push(t);
    let acts = [set_nhop, drop, no_action];
    let t = b.table(
        "MyIngress.ipv4_lpm",
        vec![typed_key(&b, MatchKind::Lpm)],
        &acts,
        no_action,
        false,
    );
    let ipv4_lpm = b.p.tables.push(t);
    let key = b.key(port, "standard_metadata.egress_port", MatchKind::Exact);
    let acts = [rewrite_mac, no_action];
    let t = b.table("MyEgress.send_frame", vec![key], &acts, no_action, false);
    let send_frame = b.p.tables.push(t);
    let mut ingress = BodyBuilder::new();
    ingress.apply(ipv4_lpm);
    ingress.apply(forward);
    ingress.push(Stmt::CallAction {
        action: send_digest,
        args: vec![],
    });
    b.p.add_control("MyIngress", ingress.finish(), Some(Role::Ingress));
    b.control("MyEgress", Role::Egress, vec![], &[send_frame]);
    b.control("MyComputeChecksum", Role::ComputeChecksum, vec![], &[]);
    b.deparser("MyDeparser", Role::Deparser, &[eth, ipv4]);
    check_golden("v1model-digest-custom-type", &b.finish(), true);
}
