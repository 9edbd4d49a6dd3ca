//! P4Info of small programs compiled from source (parse, check, lower, generate): what the
//! annotations and declarations of a program become in the P4Info, as p4c writes them.

use koi_proto::p4info::P4Info;

/// Compiles `src` (a v1model program) and generates its P4Info; panics on a compile error.
fn p4info(src: &str) -> Result<P4Info, koi_p4info::P4InfoError> {
    let (sm, ast, diags) = koi_syntax::parse_str("t.p4", src, &koi_syntax::PpOptions::default());
    let render = |d: &koi_syntax::Diagnostics| -> String {
        d.list.iter().map(|x| x.render(&sm)).collect::<String>()
    };
    assert!(!diags.has_errors(), "{}", render(&diags));
    let (checked, sdiags) = koi_sema::check(&ast, &koi_sema::CheckOptions::default());
    assert!(!sdiags.has_errors(), "{}", render(&sdiags));
    let pipeline = koi_lower::lower(&ast, &checked).unwrap_or_else(|d| panic!("{}", render(&d)));
    koi_p4info::generate(&pipeline)
}

/// A v1model program whose ingress is `ingress` (a control named `I`), after `decls`.
fn v1model(decls: &str, ingress: &str) -> String {
    format!(
        "#include <core.p4>\n#include <v1model.p4>\n\
         header h_t {{ bit<8> a; bit<9> p; }}\nstruct hs {{ h_t h; }}\nstruct m_t {{ }}\n{decls}\n\
         parser P(packet_in pk, out hs hdr, inout m_t m, inout standard_metadata_t sm) {{\n\
             state start {{ pk.extract(hdr.h); transition accept; }}\n}}\n\
         control V(inout hs hdr, inout m_t m) {{ apply {{ }} }}\n\
         {ingress}\n\
         control E(inout hs hdr, inout m_t m, inout standard_metadata_t sm) {{ apply {{ }} }}\n\
         control C(inout hs hdr, inout m_t m) {{ apply {{ }} }}\n\
         control D(packet_out pk, in hs hdr) {{ apply {{ pk.emit(hdr.h); }} }}\n\
         V1Switch(P(), V(), I(), E(), C(), D()) main;\n"
    )
}

fn selector_program(max_group_size: &str) -> String {
    v1model(
        "",
        &format!(
            "control I(inout hs hdr, inout m_t m, inout standard_metadata_t sm) {{\n\
                 @max_group_size({max_group_size})\n\
                 action_selector(HashAlgorithm.crc16, 32w1024, 32w14) sel;\n\
                 action fwd(bit<9> p) {{ sm.egress_spec = p; }}\n\
                 table t {{ key = {{ hdr.h.a: exact; hdr.h.p: selector; }}\n\
                     actions = {{ fwd; }} implementation = sel; }}\n\
                 apply {{ t.apply(); }}\n}}"
        ),
    )
}

#[test]
fn sized_literals_in_annotations_are_integers() {
    for (arg, want) in [("16", 16), ("32w16", 16), ("32w0x20", 32), ("8w300", 44)] {
        let info = p4info(&selector_program(arg)).unwrap_or_else(|e| panic!("{arg}: {e}"));
        assert_eq!(info.action_profiles.len(), 1);
        assert_eq!(info.action_profiles[0].max_group_size, want, "{arg}");
    }
}

#[test]
fn a_malformed_annotation_is_reported_once_with_its_text() {
    let e = p4info(&selector_program("\"many\"")).expect_err("a string is not a size");
    assert_eq!(
        e.to_string(),
        "cannot generate P4Info: action profile I.sel: annotation @max_group_size(\"many\"): \
         expected an integer"
    );
}

/// Annotations of `type`s go to their `type_info.new_types` entries wherever the type is used
/// (action parameters, a `type` over a `type`, match fields, digests, registers),
/// unstructured ones printed as p4c prints them and structured ones kept.
#[test]
fn new_types_keep_their_annotations() {
    let src = v1model(
        "@a1 type bit<9> port_t;\n\
         @a2 @s[k = 1] @sai(x::y >> 2) type port_t eport_t;\n\
         @a3 type bit<8> k_t;\n\
         @a4 type bit<16> d_t;\n\
         @a5 @brief(\"not kept: P4NewTypeSpec has no documentation\") type bit<32> r_t;\n\
         struct dg_t { d_t d; }",
        "control I(inout hs hdr, inout m_t m, inout standard_metadata_t sm) {\n\
             register<r_t>(8) reg;\n\
             action fwd(eport_t p) { sm.egress_spec = (bit<9>)(port_t)p; }\n\
             table t { key = { (k_t)hdr.h.a: exact @name(\"k\"); } actions = { fwd; } }\n\
             apply { t.apply(); digest<dg_t>(1, { (d_t)16w1 }); reg.write(0, (r_t)32w1); }\n}",
    );
    let info = p4info(&src).unwrap_or_else(|e| panic!("{e}"));
    let t = &info.type_info.expect("type_info").new_types;
    let anns = |k: &str| t.get(k).map(|n| n.annotations.clone());
    assert_eq!(anns("eport_t").unwrap(), ["@a2", "@sai(x : : y > > 2)"]);
    assert_eq!(t["eport_t"].structured_annotations.len(), 1);
    assert_eq!(t["eport_t"].structured_annotations[0].name, "s");
    assert_eq!(anns("k_t").unwrap(), ["@a3"]);
    assert_eq!(anns("d_t").unwrap(), ["@a4"]);
    assert_eq!(anns("r_t").unwrap(), ["@a5"]);
}

/// The registers P4Info lists for an ingress with `decl` as its local and `body` as its
/// apply block, after `decls` at top level.
fn registers(decls: &str, decl: &str, body: &str) -> Vec<String> {
    let src = v1model(
        decls,
        &format!(
            "control I(inout hs hdr, inout m_t m, inout standard_metadata_t sm) {{\n\
                 {decl}\n\
                 apply {{ {body} }}\n}}"
        ),
    );
    let info = p4info(&src).unwrap_or_else(|e| panic!("{e}"));
    info.registers
        .iter()
        .map(|r| r.preamble.as_ref().unwrap().name.clone())
        .collect()
}

#[test]
fn unused_instances_of_a_typedefd_extern_type_are_left_out_as_p4c_does() {
    let td = "typedef register<bit<8>> R;";
    // p4c removes a @noSideEffects read whose result nothing reads, then the instance of a
    // typedef'd type that nothing uses (issue2735-bmv2.p4).
    let dead = "bit<8> v; r.read(v, 0);";
    assert!(registers(td, "R(4) r;", dead).is_empty());
    assert!(registers(td, "R(4) r;", "").is_empty());
    // A dead read whose target is also assigned, never read: still dead.
    assert!(registers(td, "R(4) r;", "bit<8> v; v = 1; r.read(v, 0);").is_empty());
    // Kept: the read's result is used, the register is written, the value lands in a header
    // (an output of the block), or the instance is declared with the extern type itself
    // (p4c keeps every such instance, used or not).
    let kept = ["I.r"];
    assert_eq!(
        registers(td, "R(4) r;", "bit<8> v; r.read(v, 0); hdr.h.a = v;"),
        kept
    );
    assert_eq!(registers(td, "R(4) r;", "r.write(0, 1);"), kept);
    assert_eq!(registers(td, "R(4) r;", "r.read(hdr.h.a, 0);"), kept);
    assert_eq!(
        registers(
            td,
            "R(4) r;",
            "bit<8> v; r.read(v, 0); r.read(v, 1); hdr.h.a = v;"
        ),
        kept
    );
    assert_eq!(registers("", "register<bit<8>>(4) r;", dead), kept);
    assert_eq!(registers("", "register<bit<8>>(4) r;", ""), kept);
}
