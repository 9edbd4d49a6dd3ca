//! More corpus samples built by hand (see `goldens.rs`): value sets in sub-parser instances,
//! controller packet metadata with translated types, annotations on inlined controls,
//! `@pkginfo`/`@platform_property`, and a PSA enum action parameter.

mod common;

use common::*;
use koi_ir::types::{Translation, TypeDecl};
use koi_ir::*;

/// Two instances of one sub-parser, each with a `value_set<bit<16>>`: qualified by the
/// instance path, aliases of two components; no `type_info` (nothing creates one).
#[test]
fn issue1955() {
    let mut b = B::new(Architecture::V1Model);
    let eth = [("dstAddr", 48), ("srcAddr", 48), ("etherType", 16)];
    let ipv4 = [
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
    let e1 = b.header("hdr.ethernet_1", "ethernet_t", &eth);
    let i1 = b.header("hdr.ipv4_1", "ipv4_t", &ipv4);
    let e2 = b.header("hdr.ethernet_2", "ethernet_t", &eth);
    let i2 = b.header("hdr.ipv4_2", "ipv4_t", &ipv4);
    // The sub-parsers are inlined: p1's states then p2's, each with its value set.
    let mut prs = Parser::new("parserImpl");
    let mut from = prs.start;
    for (inst, e, i) in [("p1", e1, i1), ("p2", e2, i2)] {
        let vs = b.p.value_sets.push(ValueSet {
            preamble: Preamble::new(format!("parserImpl.{inst}.ipv4_ethertypes")),
            size: 8,
            fields: vec![MatchField::new("", 16, MatchKind::Exact)],
        });
        let start = prs.add_state(&format!("{inst}_start"));
        let parse_ipv4 = prs.add_state(&format!("{inst}_parse_ipv4"));
        let done = prs.add_state(&format!("{inst}_done"));
        prs.set_transition(from, Transition::Goto(Target::State(start)));
        prs.push(
            start,
            Stmt::Extract {
                header: HeaderRef::Header(e),
                varbit_bits: None,
            },
        );
        let ether_type = b.field(e, "etherType");
        let cases = vec![
            SelectCase {
                keysets: vec![Keyset::ValueSet(vs)],
                next: Target::State(parse_ipv4),
            },
            SelectCase::default_to(1, Target::State(done)),
        ];
        let select = Transition::Select {
            keys: vec![Expr::Slot(ether_type)],
            cases,
        };
        prs.set_transition(start, select);
        prs.push(
            parse_ipv4,
            Stmt::Extract {
                header: HeaderRef::Header(i),
                varbit_bits: None,
            },
        );
        prs.set_transition(parse_ipv4, Transition::Goto(Target::State(done)));
        from = done;
    }
    prs.set_transition(from, Transition::Goto(Target::Accept));
    b.p.add_parser(prs, Some(Role::Parser));
    b.control("verifyChecksum", Role::VerifyChecksum, vec![], &[]);
    b.control("ingressImpl", Role::Ingress, vec![], &[]);
    b.control("egressImpl", Role::Egress, vec![], &[]);
    b.control("updateChecksum", Role::ComputeChecksum, vec![], &[]);
    b.deparser("deparserImpl", Role::Deparser, &[e1, i1, e2, i2]);
    let p = b.finish();
    let info = koi_p4info::generate(&p).unwrap_or_default();
    assert_eq!(info.type_info, None);
    check_golden("issue1955", &p, true);
}

/// `@controller_header("packet_out")` with a translated field; a translated key and
/// parameter; `const default_action = NoAction`.
#[test]
fn custom_type_restricted_fields() {
    let mut b = B::new(Architecture::V1Model);
    for (name, w) in [
        ("EthernetAddr_t", 48),
        ("IPv4Addr_t", 32),
        ("CustomAddr_t", 32),
    ] {
        b.decl(TypeDecl::NewType {
            annotations: Vec::new(),
            name: name.into(),
            ty: P4Type::Bit(w),
            translation: Some(Translation {
                uri: format!("com.fingerhutpress/andysp4arch/v1/{name}"),
                sdn_bitwidth: Some(32),
            }),
        });
    }
    let cpu = b.header(
        "hdr.cpu",
        "packet_out_t",
        &[
            ("egress_port", 9),
            ("queue_id", 7),
            ("not_actually_useful", 48),
        ],
    );
    let eth = b.header(
        "hdr.ethernet",
        "ethernet_t",
        &[("dstAddr", 48), ("srcAddr", 48), ("etherType", 16)],
    );
    let ip_dst = b.meta("hdr.ipv4.dstAddr", 32);
    let custom_src = b.meta("hdr.andycustom.srcAddr", 32);
    let ingress_port = b.meta("standard_metadata.ingress_port", 9);
    let spec = b.meta("standard_metadata.egress_spec", 9);
    let mut header = ControllerHeader {
        preamble: Preamble::new("packet_out"),
        type_name: "packet_out_t".into(),
        fields: Vec::new(),
    };
    header
        .preamble
        .annotations
        .push(Annotation::text("controller_header", "\"packet_out\""));
    for (name, width, ty) in [
        ("egress_port", 9, None),
        ("queue_id", 7, None),
        ("not_actually_useful", 48, Some("EthernetAddr_t")),
    ] {
        header.fields.push(externs::MetadataField {
            name: name.into(),
            width,
            type_name: ty.map(String::from),
            id: None,
            annotations: vec![],
        });
    }
    b.p.controller_headers.push(header);
    b.parser("parserImpl", Role::Parser, &[cpu, eth]);
    b.control("verifyChecksum", Role::VerifyChecksum, vec![], &[]);
    let no_action = b.no_action();
    let my_drop = b.action("ingressImpl.my_drop", vec![], vec![mark_to_drop()]);
    let set_addr = b.action(
        "ingressImpl.set_addr",
        vec![typed_param("new_dstAddr", 32, "IPv4Addr_t")],
        vec![
            Stmt::assign(Place::Slot(ip_dst), Expr::Param(0)),
            Stmt::assign(Place::Slot(spec), Expr::Slot(ingress_port)),
        ],
    );
    let mut key = b.key(custom_src, "hdr.andycustom.srcAddr", MatchKind::Exact);
    key.field.type_name = Some("CustomAddr_t".into());
    let acts = [set_addr, my_drop, no_action];
    let t = b.table("ingressImpl.t1", vec![key], &acts, no_action, true);
    let t1 = b.p.tables.push(t);
    b.control("ingressImpl", Role::Ingress, vec![], &[t1]);
    b.control("egressImpl", Role::Egress, vec![], &[]);
    b.control("updateChecksum", Role::ComputeChecksum, vec![], &[]);
    b.deparser("deparserImpl", Role::Deparser, &[eth]);
    // p4c lists `my_drop` before `set_addr` (declaration order); so does the arena.
    check_golden("custom-type-restricted-fields", &b.finish(), true);
}

/// A table of an inlined sub-control instance, renamed by `@name`, keeps its own
/// annotations (`@my_anno_4`); the controls' annotations go nowhere.
#[test]
fn annotation_inline_propagate() {
    let mut b = B::new(Architecture::V1Model);
    let h = b.header("hdr.hdr", "hdr_t", &[("field", 16)]);
    b.parser("MyParser", Role::Parser, &[h]);
    b.control("MyVerifyChecksum", Role::VerifyChecksum, vec![], &[]);
    let no_action = b.no_action();
    let f = b.field(h, "field");
    let set_hdr = b.action(
        "MyIngress.inner.set_hdr",
        vec![ActionParam::bits("val", 16)],
        vec![Stmt::assign(Place::Slot(f), Expr::Param(0))],
    );
    let mut t = b.table(
        "MyIngress.inner.inner_table",
        vec![],
        &[set_hdr, no_action],
        no_action,
        false,
    );
    t.preamble.annotations.push(Annotation::flag("my_anno_4"));
    let t = b.p.tables.push(t);
    let mut body = BodyBuilder::new();
    let (hit, miss) = (body.new_block(), body.new_block());
    body.terminate(Terminator::Apply {
        table: t,
        next: ApplyNext::HitMiss { hit, miss },
    });
    body.switch_to(miss);
    body.push(Stmt::assign(Place::Slot(f), Expr::bits(16, 1)));
    body.terminate(Terminator::Return);
    body.switch_to(hit);
    let c =
        b.p.add_control("MyIngress", body.finish(), Some(Role::Ingress));
    b.p.controls[c]
        .preamble
        .annotations
        .push(Annotation::flag("my_anno_5"));
    b.control("MyEgress", Role::Egress, vec![], &[]);
    b.control("MyComputeChecksum", Role::ComputeChecksum, vec![], &[]);
    b.deparser("MyDeparser", Role::Deparser, &[]);
    check_golden("annotation-inline-propagate", &b.finish(), true);
}

/// `@pkginfo` and `@platform_property` on the package fill `pkg_info`, and are not copied as
/// annotations; nothing creates `type_info`.
#[test]
fn pkginfo_annotation() {
    let mut b = B::new(Architecture::V1Model);
    b.parser("ParserI", Role::Parser, &[]);
    b.control("VerifyChecksumI", Role::VerifyChecksum, vec![], &[]);
    b.control("IngressI", Role::Ingress, vec![], &[]);
    b.control("EgressI", Role::Egress, vec![], &[]);
    b.control("ComputeChecksumI", Role::ComputeChecksum, vec![], &[]);
    b.deparser("DeparserI", Role::Deparser, &[]);
    b.p.annotations = vec![
        Annotation::text(
            "pkginfo",
            "\n  name = \"some_name\",\n  organization = \"some_org\",\n  version = \
             \"some_version\",\n  contact = \"some_contact\",\n  url = \"some_url\"\n",
        ),
        Annotation::text(
            "platform_property",
            "\n  multicast_group_table_size = 10,\n  multicast_group_table_total_replicas = \
             20,\n  multicast_group_table_max_replicas_per_entry = 30\n",
        ),
    ];
    check_golden("pkginfo_annotation", &b.finish(), true);
}

/// A PSA action parameter of the non-serializable enum `PSA_MeterColor_t`: `type_name`, no
/// `bitwidth`, the enum in `type_info.enums`.
#[test]
fn psa_meter1() {
    let mut b = B::new(Architecture::Psa);
    b.decl(TypeDecl::Enum {
        name: "PSA_MeterColor_t".into(),
        members: vec!["RED".into(), "GREEN".into(), "YELLOW".into()],
    });
    let eth = b.header(
        "hdr.ethernet",
        "ethernet_t",
        &[("dstAddr", 48), ("srcAddr", 48), ("etherType", 16)],
    );
    let c1 = b.p.phv.add_slot("MyIC.c1", Ty::Bits(2), SlotKind::Local);
    b.parser("MyIP", Role::IngressParser, &[eth]);
    let meter0 = b.p.externs.push(Extern {
        preamble: Preamble::new("MyIC.meter0"),
        type_name: "Meter".into(),
        type_args: vec![P4Type::Bit(12)],
        ctor_args: vec![
            ConstArg::Bits(bits(32, 1024)),
            ConstArg::Enum {
                ty: "PSA_MeterType_t".into(),
                member: "PACKETS".into(),
            },
        ],
        kind: ExternKind::Meter {
            size: 1024,
            unit: MeterUnit::Packets,
            index_width: 12,
        },
    });
    let no_action = b.no_action();
    let execute = b.action(
        "MyIC.execute",
        vec![
            ActionParam::bits("index", 12),
            typed_param("color", 2, "PSA_MeterColor_t"),
        ],
        vec![Stmt::ExternCall {
            instance: meter0,
            method: "execute_meter".into(),
            args: vec![Arg::In(Expr::Param(0)), Arg::In(Expr::Param(1))],
            result: Some(Place::Slot(c1)),
        }],
    );
    let src = b.field(eth, "srcAddr");
    let key = b.key(src, "hdr.ethernet.srcAddr", MatchKind::Exact);
    let t = b.table(
        "MyIC.tbl",
        vec![key],
        &[no_action, execute],
        no_action,
        false,
    );
    let tbl = b.p.tables.push(t);
    b.control("MyIC", Role::Ingress, vec![], &[tbl]);
    b.deparser("MyID", Role::IngressDeparser, &[]);
    b.parser("MyEP", Role::EgressParser, &[]);
    b.control("MyEC", Role::Egress, vec![], &[]);
    b.deparser("MyED", Role::EgressDeparser, &[]);
    check_golden("psa-meter1", &b.finish(), true);
}
