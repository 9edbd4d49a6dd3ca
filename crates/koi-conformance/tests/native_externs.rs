//! User-defined extern functions in C (docs/externs.md): each case of the ABI (scalars by
//! value, wide `bit<N>`, `out`/`inout` by pointer, headers and structs, results), the BPF map
//! emulation, prebuilt shared objects, the build cache, compiler errors, and how the cached
//! datapath treats impure and `@pure` functions; BMv2 extern modules in C++. The C and C++
//! files are in `tests/externs/`, built with the system's compilers by the test.

use koi_datapath::Datapath;
use koi_interp::Interpreter;
use koi_ir::Pipeline;
use koi_state::{ManualClock, State};
use koi_syntax::PpOptions;
use std::path::{Path, PathBuf};

fn c_file(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/externs")
        .join(name)
}

/// A v1model program with headers `headers`, the extern declarations `externs`, the
/// ingress body `ingress`, extracting and emitting `hdrs` (fields of `hs_t`).
fn program(headers: &str, externs: &str, ingress: &str, hdrs: &[&str]) -> String {
    let extract: String = hdrs
        .iter()
        .map(|h| format!("pk.extract(hd.{h}); "))
        .collect();
    let emit: String = hdrs.iter().map(|h| format!("pk.emit(hd.{h}); ")).collect();
    format!(
        "#include <core.p4>\n#include <v1model.p4>\n{headers}\nstruct m_t {{ }}\n{externs}\n\
         parser P(packet_in pk, out hs_t hd, inout m_t m, inout standard_metadata_t sm) {{\n\
         state start {{ {extract} transition accept; }} }}\n\
         control V(inout hs_t hd, inout m_t m) {{ apply {{ }} }}\n\
         control I(inout hs_t hd, inout m_t m, inout standard_metadata_t sm) {{\n\
         apply {{ sm.egress_spec = 2; {ingress} }} }}\n\
         control E(inout hs_t hd, inout m_t m, inout standard_metadata_t sm) {{ apply {{ }} }}\n\
         control C(inout hs_t hd, inout m_t m) {{ apply {{ }} }}\n\
         control D(packet_out pk, in hs_t hd) {{ apply {{ {emit} }} }}\n\
         V1Switch(P(), V(), I(), E(), C(), D()) main;\n"
    )
}

/// The lowered program, its extern functions bound to `c` (built in `cache`).
fn pipeline(p4: &str, c: Option<&Path>, cache: &Path) -> Result<Pipeline, String> {
    let compiled =
        koi_conformance::compile_str("t.p4", p4, &PpOptions::default()).map_err(|e| e.render())?;
    let mut p = compiled.pipeline;
    koi_native::bind_in(&mut p, c, cache).map_err(|e| e.to_string())?;
    Ok(p)
}

/// Each packet's outputs `(port, bytes)` through the interpreter.
fn send(p: &Pipeline, packets: &[Vec<u8>]) -> Vec<Vec<(u64, Vec<u8>)>> {
    let mut state = State::new(p).unwrap_or_else(|e| panic!("{e}"));
    let mut interp = Interpreter::new(p).unwrap_or_else(|e| panic!("{e}"));
    let clock = ManualClock::new(0);
    packets
        .iter()
        .map(|pkt| {
            let o = interp
                .process(&mut state, pkt, 1, &clock)
                .unwrap_or_else(|e| panic!("{e}"));
            assert_eq!(o.report.aborted, None);
            o.outputs.into_iter().map(|o| (o.port, o.bytes)).collect()
        })
        .collect()
}

/// Why the interpreter stopped processing `pkt`, which sent nothing.
fn aborted(p: &Pipeline, pkt: &[u8]) -> String {
    let mut state = State::new(p).unwrap();
    let mut interp = Interpreter::new(p).unwrap();
    let o = interp
        .process(&mut state, pkt, 1, &ManualClock::new(0))
        .unwrap();
    assert!(o.outputs.is_empty());
    o.report.aborted.unwrap_or_default()
}

fn only(out: &[(u64, Vec<u8>)]) -> &[u8] {
    assert_eq!(out.len(), 1, "{out:?}");
    &out[0].1
}

const SCALARS_HDR: &str = "header h_t { bit<8> a; bit<16> b; bit<32> c; bit<64> d; bit<12> e; \
     bit<4> f; bit<16> r; int<8> s; int<16> s2; bit<8> t; }\nstruct hs_t { h_t h; }";
const SCALARS_EXT: &str = "extern bit<16> mix(in bit<8> a, in bit<16> b, in bit<32> c, \
     in bit<64> d, in bit<12> e);\nextern int<16> twice(in int<8> s);\n\
     extern bool odd(in bit<8> t);";
const SCALARS_ING: &str = "hd.h.r = mix(hd.h.a, hd.h.b, hd.h.c, hd.h.d, hd.h.e); \
     hd.h.s2 = twice(hd.h.s); if (odd(hd.h.t)) { hd.h.f = 1; } else { hd.h.f = 0; }";

fn scalars_packet(t: u8) -> Vec<u8> {
    let mut p = vec![0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77];
    p.extend([0x88, 0x99, 0xaa, 0xbb, 0xcc, 0xdd, 0xee, 0xff]);
    p.extend([0xab, 0xcd, 0, 0, 0xfd, 0, 0, t]);
    p
}

fn check_scalars(p: &Pipeline) {
    let out = send(p, &[scalars_packet(7), scalars_packet(8)]);
    let r = (0x11u32 * 3 + 0x2233 * 5 + 0x4455 + 0x8899 + 0xabc * 7) & 0xffff;
    let odd = only(&out[0]);
    assert_eq!(odd.len(), 23);
    // bit<12> e is passed whole, bit<4> f set from the bool result.
    assert_eq!(&odd[15..17], &[0xab, 0xc1]);
    assert_eq!(u16::from_be_bytes([odd[17], odd[18]]), r as u16);
    // int<8> -3 doubled: int<16> -6.
    assert_eq!(&odd[20..22], &[0xff, 0xfa]);
    let even = only(&out[1]);
    assert_eq!(&even[15..17], &[0xab, 0xc0]);
}

#[test]
fn scalars_are_passed_by_value_as_the_smallest_fitting_c_integer() {
    let cache = tempfile::tempdir().unwrap();
    let p4 = program(SCALARS_HDR, SCALARS_EXT, SCALARS_ING, &["h"]);
    let p =
        pipeline(&p4, Some(&c_file("scalars.c")), cache.path()).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(p.natives.fns.len(), 3);
    assert!(p.natives.fns.iter().all(|f| !f.pure));
    check_scalars(&p);
}

#[test]
fn a_prebuilt_shared_object_is_linked_to_the_wrapper() {
    let dir = tempfile::tempdir().unwrap();
    let so = dir.path().join("libscalars.so");
    let st = std::process::Command::new("cc")
        .args(["-shared", "-fPIC", "-O2", "-o"])
        .arg(&so)
        .arg(c_file("scalars.c"))
        .status()
        .unwrap_or_else(|e| panic!("cc: {e}"));
    assert!(st.success());
    let p4 = program(SCALARS_HDR, SCALARS_EXT, SCALARS_ING, &["h"]);
    let p = pipeline(&p4, Some(&so), &dir.path().join("cache")).unwrap_or_else(|e| panic!("{e}"));
    check_scalars(&p);
}

#[test]
fn wide_values_outs_headers_and_structs_follow_p4c_conventions() {
    let cache = tempfile::tempdir().unwrap();
    let headers = "header w_t { bit<128> w; bit<96> x; bit<8> y; bit<32> a32; bit<32> b32; \
         bit<16> c16; bit<16> hsum; bit<16> lsum; bit<32> sv; }\n\
         header h_t { bit<8> a; bit<16> b; }\nstruct pair_t { bit<8> p; bit<32> q; }\n\
         struct hs_t { w_t w; h_t h; }";
    let externs = "extern bit<8> wide_in(in bit<128> w);\n\
         extern void wide_out(in bit<8> k, out bit<96> x);\n\
         extern void scalars_out(in bit<32> a, out bit<32> b, inout bit<16> c);\n\
         extern bit<16> hdr_in(in h_t h);\nextern void hdr_inout(inout h_t h);\n\
         extern bit<32> struct_in(in pair_t s);";
    let ingress = "hd.w.y = wide_in(hd.w.w); wide_out(hd.w.y, hd.w.x); \
         scalars_out(hd.w.a32, hd.w.b32, hd.w.c16); hd.w.hsum = hdr_in(hd.h); \
         h_t none; hd.w.lsum = hdr_in(none); pair_t pr = { hd.h.a, hd.w.a32 }; \
         hd.w.sv = struct_in(pr); hdr_inout(hd.h);";
    let p4 = program(headers, externs, ingress, &["w", "h"]);
    let p =
        pipeline(&p4, Some(&c_file("pointers.c")), cache.path()).unwrap_or_else(|e| panic!("{e}"));
    let packet = |b: u16| {
        let mut p: Vec<u8> = (1..=16).collect();
        p.extend([0; 12]);
        p.push(0);
        p.extend([0, 0, 1, 0, 0, 0, 0, 0, 0, 0x21]);
        p.extend([0; 8]);
        p.push(5);
        p.extend(b.to_be_bytes());
        p
    };
    let out = send(&p, &[packet(0x0102), packet(0xdead)]);
    let o = only(&out[0]);
    assert_eq!(o.len(), 50);
    // wide_in saw the most significant byte first: 0x01 ^ 0x10.
    assert_eq!(o[28], 0x11);
    // wide_out wrote 12 bytes, the first the most significant.
    assert_eq!(&o[16..28], &(0x11..0x1d).collect::<Vec<u8>>()[..]);
    // out bit<32> b = a + 1; inout bit<16> c doubled.
    assert_eq!(&o[33..37], &257u32.to_be_bytes());
    assert_eq!(&o[37..39], &66u16.to_be_bytes());
    // A valid header by value, an invalid one (ebpf_valid == 0).
    assert_eq!(&o[39..41], &0x107u16.to_be_bytes());
    assert_eq!(&o[41..43], &0xffffu16.to_be_bytes());
    // A struct by value.
    assert_eq!(&o[43..47], &5256u32.to_be_bytes());
    // The inout header written back: a incremented, still valid.
    assert_eq!(&o[47..50], &[6, 1, 2]);
    // b == 0xdead: the function cleared ebpf_valid, so the header is not emitted.
    let o = only(&out[1]);
    assert_eq!(o.len(), 47);
    assert_eq!(&o[39..41], &(5u16 + 0xdead).to_be_bytes());
}

#[test]
fn bpf_map_helpers_keep_state_across_packets() {
    let cache = tempfile::tempdir().unwrap();
    let headers = "header h_t { bit<16> k; bit<32> n; }\nstruct hs_t { h_t h; }";
    let externs = "extern bit<32> count_key(in bit<16> k);";
    let p4 = program(headers, externs, "hd.h.n = count_key(hd.h.k);", &["h"]);
    let p = pipeline(&p4, Some(&c_file("maps.c")), cache.path()).unwrap_or_else(|e| panic!("{e}"));
    let keys = [1u16, 1, 2, 3, 1, 3, 1];
    let packets: Vec<Vec<u8>> = keys
        .iter()
        .map(|k| [k.to_be_bytes().to_vec(), vec![0; 4]].concat())
        .collect();
    let counts: Vec<u32> = send(&p, &packets)
        .iter()
        .map(|o| {
            let b = only(o);
            u32::from_be_bytes([b[2], b[3], b[4], b[5]])
        })
        .collect();
    // Key 3 does not fit a 2-entry map until key 1's entry is deleted at its third packet;
    // then key 1 does not fit.
    assert_eq!(counts, vec![1, 2, 1, u32::MAX, 3, 1, u32::MAX]);
}

#[test]
fn each_load_of_a_program_has_its_own_c_state() {
    let cache = tempfile::tempdir().unwrap();
    let headers = "header h_t { bit<16> k; bit<32> n; }\nstruct hs_t { h_t h; }";
    let externs = "extern bit<32> count_key(in bit<16> k);";
    let p4 = program(headers, externs, "hd.h.n = count_key(hd.h.k);", &["h"]);
    let load =
        || pipeline(&p4, Some(&c_file("maps.c")), cache.path()).unwrap_or_else(|e| panic!("{e}"));
    let count = |p: &Pipeline, n: usize| -> Vec<u32> {
        let packets = vec![[1u16.to_be_bytes().to_vec(), vec![0; 4]].concat(); n];
        send(p, &packets)
            .iter()
            .map(|o| {
                let b = only(o);
                u32::from_be_bytes([b[2], b[3], b[4], b[5]])
            })
            .collect()
    };
    // Two loads of the same build (the second found in the cache), used in turn: each
    // counts from 1, as two programs loaded apart would.
    let a = load();
    let b = load();
    assert_eq!(count(&a, 2), vec![1, 2]);
    assert_eq!(count(&b, 1), vec![1]);
    assert_eq!(count(&a, 1), vec![3]);
    // Nothing but the build itself is left in the cache.
    let files: Vec<String> = std::fs::read_dir(cache.path())
        .unwrap()
        .flat_map(|d| std::fs::read_dir(d.unwrap().path()).unwrap())
        .map(|f| f.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|f| f.ends_with(".so"))
        .collect();
    assert_eq!(files, vec!["koi_extern.so".to_string()]);
}

#[test]
fn a_program_calling_extern_functions_needs_their_implementation() {
    let cache = tempfile::tempdir().unwrap();
    let p4 = program(SCALARS_HDR, SCALARS_EXT, SCALARS_ING, &["h"]);
    let e = pipeline(&p4, None, cache.path()).unwrap_err();
    assert!(
        e.contains("mix, twice, odd") && e.contains("--extern FILE"),
        "{e}"
    );
    // Without a binding, the interpreter refuses the packet rather than guessing.
    let mut p = koi_conformance::compile_str("t.p4", &p4, &PpOptions::default())
        .unwrap_or_else(|e| panic!("{}", e.render()))
        .pipeline;
    p.natives.lib = None;
    let why = aborted(&p, &scalars_packet(1));
    assert!(why.contains("mix has no implementation"), "{why}");
}

#[test]
fn compiler_errors_are_shown() {
    let cache = tempfile::tempdir().unwrap();
    let p4 = program(
        "header h_t { bit<8> t; bit<8> f; }\nstruct hs_t { h_t h; }",
        "extern bool odd(in bit<8> t);",
        "if (odd(hd.h.t)) { hd.h.f = 1; }",
        &["h"],
    );
    let e = pipeline(&p4, Some(&c_file("broken.c")), cache.path()).unwrap_err();
    assert!(e.contains("compiling the extern functions failed"), "{e}");
    assert!(e.contains("broken.c:5:17: error"), "{e}");
    // Nothing half-built is left in the cache.
    let left: Vec<_> = std::fs::read_dir(cache.path()).unwrap().collect();
    assert!(left.is_empty(), "{left:?}");
}

#[test]
fn a_missing_function_is_a_compile_error_not_a_crash() {
    let cache = tempfile::tempdir().unwrap();
    let p4 = program(
        "header h_t { bit<8> t; bit<8> f; }\nstruct hs_t { h_t h; }",
        "extern bool no_such_function(in bit<8> t);",
        "if (no_such_function(hd.h.t)) { hd.h.f = 1; }",
        &["h"],
    );
    let e = pipeline(&p4, Some(&c_file("scalars.c")), cache.path()).unwrap_err();
    assert!(e.contains("no_such_function"), "{e}");
}

#[test]
fn builds_are_cached_by_content() {
    let cache = tempfile::tempdir().unwrap();
    let src = tempfile::tempdir().unwrap();
    let c = src.path().join("f.c");
    std::fs::copy(c_file("scalars.c"), &c).unwrap();
    let p4 = program(SCALARS_HDR, SCALARS_EXT, SCALARS_ING, &["h"]);
    let p = koi_conformance::compile_str("t.p4", &p4, &PpOptions::default())
        .unwrap_or_else(|e| panic!("{}", e.render()))
        .pipeline;
    let a = koi_native::build(&p.natives, &c, cache.path()).unwrap();
    let built = std::fs::metadata(&a).unwrap().modified().unwrap();
    let b = koi_native::build(&p.natives, &c, cache.path()).unwrap();
    assert_eq!(a, b);
    assert_eq!(std::fs::metadata(&b).unwrap().modified().unwrap(), built);
    // A changed file is built again, apart.
    let text = std::fs::read_to_string(&c).unwrap();
    std::fs::write(&c, text.replace("s * 2", "s * 3")).unwrap();
    let d = koi_native::build(&p.natives, &c, cache.path()).unwrap();
    assert_ne!(a, d);
    assert_eq!(std::fs::read_dir(cache.path()).unwrap().count(), 2);
}

const STATE_HDR: &str = "header h_t { bit<8> k; bit<32> x; bit<32> o; }\nstruct hs_t { h_t h; }";

fn state_packet(k: u8, x: u32) -> Vec<u8> {
    [
        vec![k],
        x.to_be_bytes().to_vec(),
        vec![0; 4],
        b"payload".to_vec(),
    ]
    .concat()
}

#[test]
fn the_datapath_does_not_cache_packets_that_call_an_impure_extern() {
    let cache = tempfile::tempdir().unwrap();
    let p4 = program(
        STATE_HDR,
        "extern bit<32> counter_next(in bit<8> k);",
        "hd.h.o = counter_next(hd.h.k);",
        &["h"],
    );
    let p = pipeline(&p4, Some(&c_file("state.c")), cache.path()).unwrap_or_else(|e| panic!("{e}"));
    let mut dp = Datapath::new(&p).unwrap_or_else(|e| panic!("{e}"));
    let mut state = State::new(&p).unwrap();
    let clock = ManualClock::new(0);
    let pkt = state_packet(7, 1);
    let mut seen = Vec::new();
    for _ in 0..5 {
        let o = dp.process(&mut state, &pkt, 1, &clock).unwrap();
        let b = &o.outputs[0].bytes;
        seen.push(u32::from_be_bytes([b[5], b[6], b[7], b[8]]));
    }
    // Every identical packet called the C function (its count grew each time).
    let first = seen[0] >> 8;
    let want: Vec<u32> = (0..5).map(|i| ((first + i) << 8) + 7).collect();
    assert_eq!(seen, want);
    let s = dp.stats();
    assert_eq!((s.installs, s.uncacheable), (0, 5), "{s:?}");
    assert_eq!(s.microflow_hits + s.megaflow_hits, 0, "{s:?}");
}

#[test]
fn the_datapath_caches_packets_that_call_a_pure_extern() {
    let cache = tempfile::tempdir().unwrap();
    let p4 = program(
        STATE_HDR,
        "@pure extern bit<32> square(in bit<32> x);",
        "bit<32> s = square(hd.h.x); hd.h.o = s; if (s > 100) { sm.egress_spec = 3; }",
        &["h"],
    );
    let p = pipeline(&p4, Some(&c_file("state.c")), cache.path()).unwrap_or_else(|e| panic!("{e}"));
    assert!(p.natives.fns[0].pure);
    let mut dp = Datapath::new(&p).unwrap_or_else(|e| panic!("{e}"));
    let mut interp = Interpreter::new(&p).unwrap();
    let (mut sd, mut si) = (State::new(&p).unwrap(), State::new(&p).unwrap());
    let clock = ManualClock::new(0);
    for x in [5u32, 5, 20, 20, 5, 20] {
        let pkt = state_packet(1, x);
        let want = interp.process(&mut si, &pkt, 1, &clock).unwrap();
        let got = dp.process(&mut sd, &pkt, 1, &clock).unwrap();
        assert_eq!(got, want);
        let o = &got.outputs[0];
        assert_eq!(o.port, if x * x > 100 { 3 } else { 2 });
        assert_eq!(&o.bytes[5..9], &(x * x).to_be_bytes());
    }
    let s = dp.stats();
    // One megaflow per value of x (the result, and so the branch, depends on it).
    assert_eq!((s.installs, s.uncacheable), (2, 0), "{s:?}");
    assert_eq!(s.microflow_hits + s.megaflow_hits, 4, "{s:?}");
}

/// p4c's corpus, if present (`$KOI_CORPUS`, else `../shared/corpus`).
fn corpus() -> Option<PathBuf> {
    let p = std::env::var_os("KOI_CORPUS")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/corpus"));
    p.is_dir().then_some(p)
}

#[test]
fn p4c_ubpf_checksum_extern_module_runs_unchanged() {
    let Some(root) = corpus() else {
        eprintln!("corpus absent: p4c's uBPF extern module not tried");
        return;
    };
    let cache = tempfile::tempdir().unwrap();
    let p4 = std::fs::read_to_string(c_file("checksum_ubpf.p4")).unwrap();
    let c = root.join("extern_modules/extern-checksum-ubpf.c");
    let p = pipeline(&p4, Some(&c), cache.path()).unwrap_or_else(|e| panic!("{e}"));
    // An IPv4 header with a correct checksum (0x64bf), then with a wrong one.
    let ip = |csum: u16| {
        let mut h = hex("4500002800010000400600000a00020f0a010001");
        h[10..12].copy_from_slice(&csum.to_be_bytes());
        [h, vec![0, 0, 0]].concat()
    };
    let out = send(&p, &[ip(0x64bf), ip(0x64be)]);
    let good = only(&out[0]);
    assert_eq!(good[20], 1, "verify_ipv4_checksum of a correct header");
    // incremental_checksum for dstAddr 10.1.0.1 -> 10.0.0.1: the header's new checksum.
    assert_eq!(&good[21..23], &[0x64, 0xc0]);
    assert_eq!(only(&out[1])[20], 0, "verify_ipv4_checksum of a wrong one");
}

const BMV2_HDR: &str = "header h_t { bit<32> a; bit<32> b; bit<32> sum; int<8> s; int<8> s2; \
     bit<72> w; bit<72> w2; bit<8> n; bit<8> x; bit<8> y; bit<8> q; bit<8> fl; }\n\
     struct hs_t { h_t h; }";
const BMV2_EXT: &str = "extern void arith(out bit<32> sum, in bit<32> a, in bit<32> b);\n\
     extern void negate(inout int<8> s, out int<8> s2);\n\
     extern void wide(in bit<72> w, out bit<72> w2, out bit<8> n);\n\
     extern void divide(in bit<8> x, in bit<8> y, out bit<8> q);\n\
     extern void flag(in bool b, out bit<8> f);";
const BMV2_ING: &str = "arith(hd.h.sum, hd.h.a, hd.h.b); negate(hd.h.s, hd.h.s2); \
     wide(hd.h.w, hd.h.w2, hd.h.n); divide(hd.h.x, hd.h.y, hd.h.q); flag(hd.h.x == 7, hd.h.fl);";

fn bmv2_packet(x: u8, y: u8) -> Vec<u8> {
    let mut p = Vec::new();
    p.extend(0x1234_5678u32.to_be_bytes());
    p.extend(0x9abc_def1u32.to_be_bytes());
    p.extend([0; 4]);
    p.extend([(-100i8) as u8, 0]);
    p.extend(hex("8f0000000000000001"));
    p.extend([0; 9]);
    p.extend([0, x, y, 0, 0]);
    p
}

#[test]
fn a_bmv2_extern_module_in_cpp_runs_against_koi_data_and_field() {
    let cache = tempfile::tempdir().unwrap();
    let p4 = program(BMV2_HDR, BMV2_EXT, BMV2_ING, &["h"]);
    let p = pipeline(&p4, Some(&c_file("bmv2_ops.cpp")), cache.path())
        .unwrap_or_else(|e| panic!("{e}"));
    let out = send(&p, &[bmv2_packet(200, 7), bmv2_packet(7, 1)]);
    let o = only(&out[0]);
    let (a, b) = (0x1234_5678u128, 0x9abc_def1u128);
    let sum = ((a * b + a - (b >> 1)) & 0xffff_ffff) as u32;
    assert_eq!(&o[8..12], &sum.to_be_bytes(), "arithmetic, kept in bit<32>");
    // -100 * -3 = 300, wrapped into int<8>: 44; -100 >> 1 = -50.
    assert_eq!(o[12], (-50i8) as u8, "inout int<8> shifted arithmetically");
    assert_eq!(o[13], 44, "int<8> wrapped");
    // (w << 4) | 0xf in 72 bits; widths 72 + 72, and w2 >= 2^71.
    assert_eq!(&o[23..32], &hex("f0000000000000001f")[..]);
    assert_eq!(o[32], 145);
    assert_eq!(o[35], 200 / 7);
    assert_eq!(o[36], 0x55);
    let o = only(&out[1]);
    assert_eq!((o[35], o[36]), (7, 0xaa));
    // An exception is an error of that packet, not a crash.
    let why = aborted(&p, &bmv2_packet(7, 0));
    assert!(why.contains("divide: zero divisor"), "{why}");
}

#[test]
fn a_bmv2_module_must_register_each_function_as_p4_declares_it() {
    let cache = tempfile::tempdir().unwrap();
    let cpp = c_file("bmv2_ops.cpp");
    let with = |ext: &str, ing: &str| {
        let p4 = program(BMV2_HDR, ext, ing, &["h"]);
        pipeline(&p4, Some(&cpp), cache.path()).unwrap_err()
    };
    let e = with("extern void missing(out bit<8> q);", "missing(hd.h.q);");
    assert!(e.contains("registers no extern function missing"), "{e}");
    let e = with("extern void flag(in bool b);", "flag(true);");
    assert!(
        e.contains("flag is registered with 2 parameters and declared in P4 with 1"),
        "{e}"
    );
    let e = with("extern bit<8> flag(in bool b);", "hd.h.q = flag(true);");
    assert!(e.contains("returns a value"), "{e}");
    let e = with(
        "extern void flag(in h_t b, out bit<8> f);",
        "flag(hd.h, hd.h.q);",
    );
    assert!(
        e.contains("takes bit<N>, int<N> and bool parameters"),
        "{e}"
    );
}

#[test]
fn p4c_bmv2_extern_module_runs_unchanged() {
    let Some(root) = corpus() else {
        eprintln!("corpus absent: p4c's BMv2 extern module not tried");
        return;
    };
    let dir = root.join("stf/v1model");
    let cpp = root.join("extern_modules/extern-funcs-bmv2.cpp");
    for run in [
        koi_conformance::stf::RunOptions::default(),
        koi_conformance::stf::RunOptions { cache: true },
    ] {
        let r = koi_conformance::corpus::run_test_with_externs(
            "extern-funcs-bmv2",
            &dir.join("extern-funcs-bmv2.p4"),
            &dir.join("extern-funcs-bmv2.stf"),
            &PpOptions::default(),
            &run,
            Some(&cpp),
        );
        assert!(r.verdict.passed(), "{}", r.verdict.reason());
        assert_eq!(r.packets_checked, 2);
    }
}

fn hex(s: &str) -> Vec<u8> {
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
        .collect()
}
