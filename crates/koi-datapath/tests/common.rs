//! Compiling P4 text for the tests.

#![allow(dead_code)]

use koi_ir::Pipeline;
use std::path::Path;

/// The start of the small v1model programs of the tests: Ethernet and `h` headers, metadata.
pub const ETH_H_HEADERS: &str = r#"
#include <core.p4>
#include <v1model.p4>
header eth_t { bit<48> dst; bit<48> src; bit<16> type; }
header h_t { bit<8> a; bit<8> b; }
struct headers { eth_t eth; h_t h; }
struct meta_t { bit<8> x; bit<16> y; }
"#;

/// Parses Ethernet, then `h` when the EtherType is 0x88b5.
pub const ETH_H_PARSER: &str = r#"
parser P(packet_in pkt, out headers hdr, inout meta_t meta, inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.eth);
        transition select(hdr.eth.type) { 0x88b5: parse_h; default: accept; }
    }
    state parse_h { pkt.extract(hdr.h); transition accept; }
}
"#;

/// The rest after an ingress control `I`: empty controls, a deparser emitting both headers.
pub const ETH_H_TAIL: &str = r#"
control V(inout headers hdr, inout meta_t meta) { apply { } }
control E(inout headers hdr, inout meta_t meta, inout standard_metadata_t sm) { apply { } }
control C(inout headers hdr, inout meta_t meta) { apply { } }
control D(packet_out pkt, in headers hdr) { apply { pkt.emit(hdr.eth); pkt.emit(hdr.h); } }
V1Switch(P(), V(), I(), E(), C(), D()) main;
"#;

/// A program of [`ETH_H_HEADERS`], `parser`, `ingress` (control `I`) and [`ETH_H_TAIL`].
pub fn eth_h_program(parser: &str, ingress: &str) -> Pipeline {
    let src = format!("{ETH_H_HEADERS}{parser}{ingress}{ETH_H_TAIL}");
    compile_str(&src).unwrap_or_else(|e| panic!("{e}"))
}

/// Compiles a P4 program given as text (koi's built-in `core.p4`/`v1model.p4`).
pub fn compile_str(src: &str) -> Result<Pipeline, String> {
    compile_with(src, koi_syntax::PpOptions::default())
}

pub fn compile_with(src: &str, opts: koi_syntax::PpOptions) -> Result<Pipeline, String> {
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

/// Compiles the program in file `path`, including from `include` and the file's directory.
pub fn compile_file(path: &Path, include: Option<&Path>) -> Result<Pipeline, String> {
    let src = std::fs::read_to_string(path).map_err(|e| e.to_string())?;
    let dir = path.parent().unwrap_or(Path::new(".")).to_path_buf();
    let mut include_dirs: Vec<_> = include.map(Path::to_path_buf).into_iter().collect();
    include_dirs.push(dir);
    let opts = koi_syntax::PpOptions {
        include_dirs,
        defines: Vec::new(),
    };
    compile_with(&src, opts)
}

/// The interpreter alone and the cached datapath side by side, each with its own copy of the
/// same state, for tests that compare them packet by packet.
pub struct Twin<'p> {
    pub dp: koi_datapath::Datapath<'p>,
    pub interp: koi_interp::Interpreter<'p>,
    /// The datapath's state and the interpreter's.
    pub sd: koi_state::State,
    pub si: koi_state::State,
    pub clock: koi_state::ManualClock,
    /// The drops of the last packet sent.
    pub drops: Vec<koi_interp::DropReason>,
}

impl<'p> Twin<'p> {
    /// Both over `p`, with the state `setup` configures.
    pub fn new(p: &'p Pipeline, setup: impl FnOnce(&mut koi_state::State)) -> Twin<'p> {
        let mut sd = koi_state::State::new(p).unwrap_or_else(|e| panic!("{e}"));
        setup(&mut sd);
        // Programs get native code from their first hit, so every test through a twin also
        // compares the JIT's code with the interpreter.
        let config = koi_datapath::DatapathConfig {
            jit_after: Some(1),
            ..koi_datapath::DatapathConfig::default()
        };
        Twin {
            dp: koi_datapath::Datapath::with_config(p, koi_interp::Options::default(), config)
                .unwrap_or_else(|e| panic!("{e}")),
            interp: koi_interp::Interpreter::new(p).unwrap_or_else(|e| panic!("{e}")),
            si: sd.clone(),
            sd,
            clock: koi_state::ManualClock::new(0),
            drops: Vec::new(),
        }
    }

    /// Sends `pkt` on `port` through both; asserts they give the same outputs, in order, and
    /// the same drops. Returns the outputs and the path the datapath took.
    pub fn send(
        &mut self,
        pkt: &[u8],
        port: u64,
    ) -> (Vec<(u64, Vec<u8>)>, koi_datapath::PathTaken) {
        let want = self
            .interp
            .process(&mut self.si, pkt, port, &self.clock)
            .unwrap_or_else(|e| panic!("{e}"));
        let mut got = Vec::new();
        let s = self
            .dp
            .process_with(&mut self.sd, pkt, port, &self.clock, &mut |to, bytes| {
                got.push((to, bytes.to_vec()))
            })
            .unwrap_or_else(|e| panic!("{e}"));
        let w: Vec<_> = want
            .outputs
            .iter()
            .map(|o| (o.port, o.bytes.clone()))
            .collect();
        assert_eq!(got, w, "packet {pkt:?}");
        assert_eq!(s.drops, want.report.drops, "packet {pkt:?}");
        assert_eq!(self.dp.stats().jit_mismatch, 0, "native code differed");
        self.drops = s.drops;
        (got, s.path)
    }
}

/// Asserts that the packets at `slow` took the slow path and every other one ran a compiled
/// program (a microflow or megaflow hit).
pub fn assert_compiled_except(paths: &[koi_datapath::PathTaken], slow: &[usize]) {
    use koi_datapath::{PathTaken, Tier};
    for (i, p) in paths.iter().enumerate() {
        if slow.contains(&i) {
            assert_eq!(*p, PathTaken::Slow, "packet {i}: {paths:?}");
        } else {
            assert!(
                matches!(p, PathTaken::Compiled(Tier::Microflow | Tier::Megaflow)),
                "packet {i}: {paths:?}"
            );
        }
    }
}

/// A small deterministic generator (xorshift64).
pub struct Rng(pub u64);

impl Rng {
    /// The next value (never `None`, unlike an iterator's: hence not `Iterator`).
    #[allow(clippy::should_implement_trait)]
    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
}

/// The Internet checksum of `b` (RFC 1071: the complement of the ones'-complement sum of its
/// big-endian 16-bit words, an odd last byte padded with zero), computed here independently
/// of koi's.
pub fn csum(b: &[u8]) -> u16 {
    let mut s: u32 = b
        .chunks(2)
        .map(|c| u32::from(u16::from_be_bytes([c[0], *c.get(1).unwrap_or(&0)])))
        .sum();
    while s > 0xffff {
        s = (s & 0xffff) + (s >> 16);
    }
    !(s as u16)
}

/// The start of the small PSA programs of the tests: Ethernet, then `h = (a, b)`, no
/// metadata.
pub const PSA_HEADERS: &str = r#"
#include <core.p4>
#include <psa.p4>
header eth_t { bit<48> dst; bit<48> src; bit<16> type; }
header h_t { bit<8> a; bit<8> b; }
struct headers_t { eth_t eth; h_t h; }
struct meta_t { }
struct empty_t { }
"#;

/// The blocks of a PSA test program over [`PSA_HEADERS`], as text: the parsers' states, the
/// controls' bodies (declarations, then `apply { ... }`) and the deparsers' `apply` bodies.
/// By default both parsers extract `eth` and `h`, both controls do nothing and both
/// deparsers emit `eth` and `h`.
pub struct PsaBlocks<'a> {
    pub ingress_parser: &'a str,
    pub ingress: &'a str,
    pub ingress_deparser: &'a str,
    pub egress_parser: &'a str,
    pub egress: &'a str,
    pub egress_deparser: &'a str,
}

impl Default for PsaBlocks<'_> {
    fn default() -> Self {
        let parse = "state start { pkt.extract(hdr.eth); pkt.extract(hdr.h); transition accept; }";
        let emit = "pkt.emit(hdr.eth); pkt.emit(hdr.h);";
        PsaBlocks {
            ingress_parser: parse,
            ingress: "apply { }",
            ingress_deparser: emit,
            egress_parser: parse,
            egress: "apply { }",
            egress_deparser: emit,
        }
    }
}

/// The PSA program of `b`: parsers `IP`/`EP`, controls `I`/`E`, deparsers `ID`/`ED`.
pub fn psa_program(b: &PsaBlocks<'_>) -> String {
    format!(
        r#"{PSA_HEADERS}
parser IP(packet_in pkt, out headers_t hdr, inout meta_t m,
          in psa_ingress_parser_input_metadata_t istd, in empty_t r, in empty_t rc) {{
    {ip}
}}
control I(inout headers_t hdr, inout meta_t m, in psa_ingress_input_metadata_t istd,
          inout psa_ingress_output_metadata_t ostd) {{
    {i}
}}
control ID(packet_out pkt, out empty_t c, out empty_t r, out empty_t n, inout headers_t hdr,
           in meta_t m, in psa_ingress_output_metadata_t istd) {{
    apply {{ {id} }}
}}
parser EP(packet_in pkt, out headers_t hdr, inout meta_t m,
          in psa_egress_parser_input_metadata_t istd, in empty_t n, in empty_t c,
          in empty_t ce) {{
    {ep}
}}
control E(inout headers_t hdr, inout meta_t m, in psa_egress_input_metadata_t istd,
          inout psa_egress_output_metadata_t ostd) {{
    {e}
}}
control ED(packet_out pkt, out empty_t c, out empty_t r, inout headers_t hdr, in meta_t m,
           in psa_egress_output_metadata_t istd, in psa_egress_deparser_input_metadata_t e) {{
    apply {{ {ed} }}
}}
IngressPipeline(IP(), I(), ID()) ip;
EgressPipeline(EP(), E(), ED()) ep;
PSA_Switch(ip, PacketReplicationEngine(), ep, BufferingQueueingEngine()) main;
"#,
        ip = b.ingress_parser,
        i = b.ingress,
        id = b.ingress_deparser,
        ep = b.egress_parser,
        e = b.egress,
        ed = b.egress_deparser,
    )
}

/// A PSA program that parses Ethernet and `h` in both pipelines and emits both: ingress runs
/// `ingress` (its `apply` body), egress runs `egress`.
pub fn psa_passes(ingress: &str, egress: &str) -> String {
    psa_program(&PsaBlocks {
        ingress: &format!("apply {{ {ingress} }}"),
        egress: &format!("apply {{ {egress} }}"),
        ..PsaBlocks::default()
    })
}

/// Ethernet to 02::0b from 02::0a (type 0x88b5), then `h = (a, b)`, then `seq`s to 60 bytes.
pub fn eth_h_frame(a: u8, b: u8, seq: u8) -> Vec<u8> {
    let mut f = vec![2, 0, 0, 0, 0, 0x0b, 2, 0, 0, 0, 0, 0x0a, 0x88, 0xb5, a, b];
    f.resize(60, seq);
    f
}

/// Adds to `table` an entry matching one field of `width` bits exactly on `key`.
pub fn exact_entry(
    s: &mut koi_state::State,
    table: &str,
    key: u64,
    width: u32,
    action: &str,
    args: Vec<koi_ir::Bits>,
) {
    let spec = koi_state::EntrySpec {
        keys: vec![koi_ir::Pattern::Exact(koi_ir::Bits::from_u64(width, key))],
        action: koi_state::ActionSpec::action(action, args),
        priority: None,
        timeout_ns: None,
    };
    s.table_add(table, spec).unwrap_or_else(|e| panic!("{e}"));
}

/// A hit replayed by the interpreter.
pub fn replayed(p: koi_datapath::PathTaken) -> bool {
    use koi_datapath::{PathTaken, Tier};
    matches!(p, PathTaken::Replayed(Tier::Microflow | Tier::Megaflow))
}

/// A hit run by a compiled program.
pub fn compiled(p: koi_datapath::PathTaken) -> bool {
    use koi_datapath::{PathTaken, Tier};
    matches!(p, PathTaken::Compiled(Tier::Microflow | Tier::Megaflow))
}
