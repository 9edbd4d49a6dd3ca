//! `@koi_stage(N)` on header instances and types becomes the PHV headers' lookup-stage hint
//! (`koi_ir::phv::Header::stage`); a malformed one is a warning and is ignored.

use koi_ir::Pipeline;

/// Lowers `src`; returns the pipeline and the rendered warnings (panics on errors).
fn lower(src: &str) -> (Pipeline, Vec<String>) {
    let opts = koi_syntax::PpOptions::default();
    let (sm, program, diags) = koi_syntax::parse_str("test.p4", src, &opts);
    let render = |d: &koi_syntax::Diagnostics| -> Vec<String> {
        d.list.iter().map(|x| x.render(&sm)).collect()
    };
    assert!(!diags.has_errors(), "{:?}", render(&diags));
    let (checked, sdiags) = koi_sema::check(&program, &koi_sema::CheckOptions::default());
    assert!(!sdiags.has_errors(), "{:?}", render(&sdiags));
    let p = koi_lower::lower(&program, &checked).unwrap_or_else(|d| panic!("{:?}", render(&d)));
    (p, render(&sdiags))
}

/// A v1model program whose headers are declared by `decls` (a `struct headers` included),
/// with a parser extracting `hdr.eth`.
fn program(decls: &str) -> String {
    format!(
        r#"
#include <core.p4>
#include <v1model.p4>
{decls}
struct meta_t {{ bit<8> x; }}
parser P(packet_in pkt, out headers hdr, inout meta_t meta, inout standard_metadata_t sm) {{
    state start {{ pkt.extract(hdr.eth); transition accept; }}
}}
control I(inout headers hdr, inout meta_t meta, inout standard_metadata_t sm) {{ apply {{ }} }}
control V(inout headers hdr, inout meta_t meta) {{ apply {{ }} }}
control E(inout headers hdr, inout meta_t meta, inout standard_metadata_t sm) {{ apply {{ }} }}
control C(inout headers hdr, inout meta_t meta) {{ apply {{ }} }}
control D(packet_out pkt, in headers hdr) {{ apply {{ pkt.emit(hdr); }} }}
V1Switch(P(), V(), I(), E(), C(), D()) main;
"#
    )
}

/// The stage hint of every PHV header, by name.
fn hints(p: &Pipeline) -> Vec<(String, Option<u32>)> {
    p.phv
        .headers
        .values()
        .map(|h| (h.name.clone(), h.stage))
        .collect()
}

#[test]
fn instance_annotations_override_type_annotations() {
    let (p, warnings) = lower(&program(
        r#"
header eth_t { bit<48> dst; bit<48> src; bit<16> type; }
@koi_stage(3) header ip_t { bit<8> ttl; }
header l4_t { bit<16> port; }
header_union u_t { @koi_stage(7) ip_t a; l4_t b; }
struct inner_t { l4_t x; @koi_stage(9) l4_t y; }
struct headers {
    eth_t eth;
    @koi_stage(1) ip_t ip1;
    ip_t ip2;
    @koi_stage(0) l4_t l4;
    @koi_stage(2) ip_t[2] ips;
    l4_t[2] l4s;
    u_t u;
    @koi_stage(5) u_t v;
    @koi_stage(4) inner_t inner;
}
"#,
    ));
    assert!(warnings.is_empty(), "{warnings:?}");
    let expect = [
        ("hdr.eth", None),
        ("hdr.ip1", Some(1)),
        ("hdr.ip2", Some(3)),
        ("hdr.l4", Some(0)),
        ("hdr.ips[0]", Some(2)),
        ("hdr.ips[1]", Some(2)),
        ("hdr.l4s[0]", None),
        ("hdr.l4s[1]", None),
        ("hdr.u.a", Some(7)),
        ("hdr.u.b", None),
        ("hdr.v.a", Some(7)),
        ("hdr.v.b", Some(5)),
        ("hdr.inner.x", Some(4)),
        ("hdr.inner.y", Some(9)),
    ];
    let expect: Vec<(String, Option<u32>)> =
        expect.iter().map(|(n, s)| (n.to_string(), *s)).collect();
    assert_eq!(hints(&p), expect);
    // The IR printer shows the hint.
    let text = p.to_string();
    assert!(
        text.lines()
            .any(|l| l == "  header hdr.ip1: ip_t (8 bits) @koi_stage(1)"),
        "{text}"
    );
    assert!(
        text.lines()
            .any(|l| l == "  header hdr.eth: eth_t (112 bits)"),
        "{text}"
    );
}

#[test]
fn malformed_annotations_warn_and_are_ignored() {
    let (p, warnings) = lower(&program(
        r#"
@koi_stage(4) header eth_t { bit<48> dst; bit<48> src; bit<16> type; }
@koi_stage header a_t { bit<8> x; }
struct headers {
    @koi_stage(x) eth_t eth;
    @koi_stage(-1) a_t a;
    @koi_stage(1, 2) a_t b;
    @koi_stage("2") a_t c;
    @koi_stage(4294967296) a_t d;
    @koi_stage(2) a_t e;
}
"#,
    ));
    // Each warning names its annotation's position (`decls` starts on line 4).
    let expected_positions = [
        "test.p4:6:1:",
        "test.p4:8:5:",
        "test.p4:9:5:",
        "test.p4:10:5:",
        "test.p4:11:5:",
        "test.p4:12:5:",
    ];
    assert_eq!(warnings.len(), expected_positions.len(), "{warnings:#?}");
    for (w, pos) in warnings.iter().zip(expected_positions) {
        assert!(w.starts_with(pos), "{w}");
        assert!(
            w.contains("warning: @koi_stage: expected one non-negative integer literal"),
            "{w}"
        );
    }
    // A malformed instance annotation falls back to the type's.
    let expect = [
        ("hdr.eth", Some(4)),
        ("hdr.a", None),
        ("hdr.b", None),
        ("hdr.c", None),
        ("hdr.d", None),
        ("hdr.e", Some(2)),
    ];
    let expect: Vec<(String, Option<u32>)> =
        expect.iter().map(|(n, s)| (n.to_string(), *s)).collect();
    assert_eq!(hints(&p), expect);
}
