//! Corpus samples about types (see `goldens.rs`):
//!
//! - `v1model-p4runtime-enumint-types1`: user `type`s defined on `typedef`s and on each
//!   other, with and without `@p4runtime_translation`, and a serializable enum, used as table
//!   keys, action parameters, packet metadata and value set fields. Lowering resolves
//!   `typedef`s, so the IR names only the `type`s and the enum: `Custom10_t` (`typedef
//!   Custom1_t`) is `Custom1_t`, `Custom0_t` (`typedef bit<8>`) is plain `bit<8>`.
//! - `p4rt_digest_complex`: a PSA `Digest` of a struct holding a header with a nested struct
//!   (flattened in `type_info`), a translated `type` and specialized generic structs.

mod common;

use common::*;
use koi_ir::types::{Translation, TypeDecl};
use koi_ir::*;

/// The fields of `custom_t` the program matches on: name and named type (after `typedef`s).
const FIELDS: [(&str, u32, Option<&str>); 26] = [
    ("addr0", 48, None),
    ("addr1", 48, Some("Eth1_t")),
    ("addr2", 48, Some("Eth2_t")),
    ("e", 8, None),
    ("e0", 8, None),
    ("e1", 8, Some("Custom1_t")),
    ("e2", 8, Some("Custom2_t")),
    ("e00", 8, None),
    ("e01", 8, Some("Custom01_t")),
    ("e02", 8, Some("Custom02_t")),
    ("e10", 8, Some("Custom1_t")),
    ("e11", 8, Some("Custom11_t")),
    ("e12", 8, Some("Custom12_t")),
    ("e20", 8, Some("Custom2_t")),
    ("e21", 8, Some("Custom21_t")),
    ("e22", 8, Some("Custom22_t")),
    ("e001", 8, Some("Custom001_t")),
    ("e002", 8, Some("Custom002_t")),
    ("e101", 8, Some("Custom101_t")),
    ("e102", 8, Some("Custom102_t")),
    ("e201", 8, Some("Custom201_t")),
    ("e202", 8, Some("Custom202_t")),
    ("e220", 8, Some("Custom22_t")),
    ("e0020010", 8, Some("Custom002001_t")),
    ("e0020020", 8, Some("Custom002002_t")),
    ("s0", 8, Some("serenum_t")),
];

/// The `type` declarations: name, what it is defined as, translation (uri suffix, width).
/// A `type`: name, definition, translation (uri suffix, width).
type NewTypeRow = (&'static str, P4Type, Option<(&'static str, u32)>);

fn newtypes() -> Vec<NewTypeRow> {
    let bit8 = || P4Type::Bit(8);
    let nt = |n: &str| P4Type::NewType(n.into());
    vec![
        ("Eth1_t", P4Type::Bit(48), None),
        ("Eth2_t", P4Type::Bit(48), Some(("EthernetAddress", 49))),
        ("Custom1_t", bit8(), None),
        ("Custom2_t", bit8(), Some(("My_Byte2", 12))),
        ("Custom01_t", bit8(), None),
        ("Custom02_t", bit8(), Some(("My_Byte3", 13))),
        ("Custom11_t", nt("Custom1_t"), None),
        ("Custom12_t", nt("Custom1_t"), Some(("My_Byte4", 14))),
        ("Custom21_t", nt("Custom2_t"), None),
        ("Custom22_t", nt("Custom2_t"), Some(("My_Byte5", 15))),
        ("Custom001_t", bit8(), None),
        ("Custom002_t", bit8(), Some(("My_Byte6", 16))),
        ("Custom101_t", nt("Custom1_t"), None),
        ("Custom102_t", nt("Custom1_t"), Some(("My_Byte7", 17))),
        ("Custom201_t", nt("Custom2_t"), None),
        ("Custom202_t", nt("Custom2_t"), Some(("My_Byte8", 18))),
        ("Custom002001_t", nt("Custom002_t"), None),
        ("Custom002002_t", nt("Custom002_t"), Some(("My_Byte9", 19))),
    ]
}

fn metadata_field(name: &str, width: u32, ty: Option<&str>) -> externs::MetadataField {
    externs::MetadataField {
        name: name.into(),
        width,
        type_name: ty.map(String::from),
        id: None,
        annotations: vec![],
    }
}

fn controller_header(
    name: &str,
    ty: &str,
    fields: Vec<externs::MetadataField>,
) -> ControllerHeader {
    let mut preamble = Preamble::new(name);
    preamble.annotations.push(Annotation::text(
        "controller_header",
        &format!("\"{name}\""),
    ));
    ControllerHeader {
        preamble,
        type_name: ty.into(),
        fields,
    }
}

#[test]
fn v1model_p4runtime_enumint_types1() {
    let mut b = B::new(Architecture::V1Model);
    for (name, ty, tr) in newtypes() {
        b.decl(TypeDecl::NewType {
            annotations: Vec::new(),
            name: name.into(),
            ty,
            translation: tr.map(|(uri, w)| Translation {
                uri: format!("mycompany.com/{uri}"),
                sdn_bitwidth: Some(w),
            }),
        });
    }
    b.decl(TypeDecl::SerEnum {
        name: "serenum_t".into(),
        members: vec![("A".into(), bits(8, 1)), ("B".into(), bits(8, 3))],
    });
    let eth = b.header(
        "hdr.ethernet",
        "ethernet_t",
        &[("dstAddr", 48), ("srcAddr", 48), ("etherType", 16)],
    );
    let mut custom_fields: Vec<(&str, u32)> = FIELDS.iter().map(|f| (f.0, f.1)).collect();
    custom_fields.pop();
    custom_fields.extend([
        ("my_nested_struct1.x", 7),
        ("my_nested_struct1.y", 9),
        ("checksum", 16),
        ("s0", 8),
    ]);
    let custom = b.header("hdr.custom", "custom_t", &custom_fields);
    let spec = b.meta("standard_metadata.egress_spec", 9);

    // Controller headers: packet_out carries the same fields as custom_t, without s0.
    let punt = vec![metadata_field("punt_reason", 8, None)];
    b.p.controller_headers
        .push(controller_header("packet_in", "packet_in_header_t", punt));
    let out_fields = FIELDS[..25]
        .iter()
        .map(|(n, w, t)| metadata_field(n, *w, *t))
        .collect();
    b.p.controller_headers.push(controller_header(
        "packet_out",
        "packet_out_header_t",
        out_fields,
    ));

    b.p.value_sets.push(ValueSet {
        preamble: Preamble::new("ParserImpl.valueset1"),
        size: 4,
        fields: [("addr0", 48), ("e", 8), ("e0", 8), ("e00", 8)]
            .iter()
            .map(|(n, w)| MatchField::new(n, *w, MatchKind::Exact))
            .collect(),
    });
    b.parser("ParserImpl", Role::Parser, &[eth, custom]);
    b.control("verifyChecksum", Role::VerifyChecksum, vec![], &[]);

    let set_output = b.action(
        "ingress.set_output",
        vec![ActionParam::bits("out_port", 9)],
        vec![Stmt::assign(Place::Slot(spec), Expr::Param(0))],
    );
    let params = FIELDS
        .iter()
        .map(|(n, w, t)| match t {
            Some(t) => typed_param(n, *w, t),
            None => ActionParam::bits(n, *w),
        })
        .collect();
    let assigns = FIELDS
        .iter()
        .enumerate()
        .map(|(i, (n, _, _))| {
            let dst = b.field(custom, n);
            Stmt::assign(Place::Slot(dst), Expr::Param(i as u32))
        })
        .collect();
    let set_headers = b.action("ingress.set_headers", params, assigns);
    let my_drop = b.action("ingress.my_drop", vec![], vec![]);
    let keys = FIELDS
        .iter()
        .map(|(n, _, t)| {
            let slot = b.field(custom, n);
            let mut k = b.key(slot, &format!("hdr.custom.{n}"), MatchKind::Exact);
            k.field.type_name = t.map(String::from);
            k
        })
        .collect();
    let acts = [set_output, set_headers, my_drop];
    let t = b.table("ingress.custom_table", keys, &acts, my_drop, false);
    let table = b.p.tables.push(t);
    let mut ingress = BodyBuilder::new();
    let (then, otherwise) = ingress.branch(Expr::is_valid(custom));
    ingress.switch_to(then);
    ingress.apply(table);
    ingress.terminate(Terminator::Return);
    ingress.switch_to(otherwise);
    b.p.add_control("ingress", ingress.finish(), Some(Role::Ingress));
    b.control("egress", Role::Egress, vec![], &[]);
    b.control("computeChecksum", Role::ComputeChecksum, vec![], &[]);
    b.deparser("DeparserImpl", Role::Deparser, &[eth, custom]);
    check_golden("v1model-p4runtime-enumint-types1", &b.finish(), true);
}

/// A PSA `Digest<digest_t>` instance in a deparser, named by its instance path.
#[test]
fn p4rt_digest_complex() {
    let mut b = B::new(Architecture::Psa);
    b.decl(TypeDecl::Struct {
        name: "s_t".into(),
        members: vec![member("f8", P4Type::Bit(8)), member("f16", P4Type::Bit(16))],
        annotations: vec![],
    });
    b.decl(TypeDecl::Struct {
        name: "s2_t_bit32".into(),
        members: vec![member("f16", P4Type::Bit(16)), member("f", P4Type::Bit(32))],
        annotations: vec![],
    });
    b.decl(TypeDecl::Struct {
        name: "s3_t".into(),
        members: vec![member("f", P4Type::Bit(64))],
        annotations: vec![],
    });
    b.decl(TypeDecl::Header {
        name: "h_t".into(),
        members: vec![
            member("s", P4Type::Struct("s_t".into())),
            member("f32", P4Type::Bit(32)),
        ],
        annotations: vec![],
    });
    b.decl(TypeDecl::NewType {
        annotations: Vec::new(),
        name: "PortId_t".into(),
        ty: P4Type::Bit(32),
        translation: Some(Translation {
            uri: "p4.org/psa/v1/PortId_t".into(),
            sdn_bitwidth: Some(32),
        }),
    });
    b.decl(TypeDecl::Struct {
        name: "digest_t".into(),
        members: vec![
            member("h", P4Type::Header("h_t".into())),
            member("port", P4Type::NewType("PortId_t".into())),
            member("s2", P4Type::Struct("s2_t_bit32".into())),
            member("s3", P4Type::Struct("s3_t".into())),
        ],
        annotations: vec![],
    });
    let h = b.header("hdr.h", "h_t", &[("s.f8", 8), ("s.f16", 16), ("f32", 32)]);
    let ingress_port = b.meta("c.ingress_port", 32);
    let egress_port = b.meta("d.egress_port", 32);
    let digest = b.p.digests.push(Digest {
        preamble: Preamble::new("MyID.digest"),
        ty: P4Type::Struct("digest_t".into()),
        fields: vec![
            ("h.s.f8".into(), 8),
            ("h.s.f16".into(), 16),
            ("h.f32".into(), 32),
            ("port".into(), 32),
            ("s2.f16".into(), 16),
            ("s2.f".into(), 32),
            ("s3.f".into(), 64),
        ],
    });
    b.parser("MyIP", Role::IngressParser, &[h]);
    let forward = Stmt::assign(Place::Slot(egress_port), Expr::Slot(ingress_port));
    b.control("MyIC", Role::Ingress, vec![forward], &[]);
    let mut data: Vec<Expr> = ["s.f8", "s.f16", "f32"]
        .iter()
        .map(|f| Expr::Slot(b.field(h, f)))
        .collect();
    data.extend([
        Expr::Slot(egress_port),
        Expr::bits(16, 10),
        Expr::bits(32, 20),
        Expr::bits(64, 30),
    ]);
    let pack = Stmt::Builtin(Builtin::Digest {
        digest,
        receiver: Expr::bits(32, 0),
        data,
    });
    b.control("MyID", Role::IngressDeparser, vec![pack], &[]);
    b.parser("MyEP", Role::EgressParser, &[]);
    b.control("MyEC", Role::Egress, vec![], &[]);
    b.deparser("MyED", Role::EgressDeparser, &[]);
    check_golden("p4rt_digest_complex", &b.finish(), true);
}
