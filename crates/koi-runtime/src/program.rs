//! A compiled P4 program as the switch loads it: koi's IR, its P4Info, and the self-contained
//! **device config** it can be rebuilt from.
//!
//! # The device config
//!
//! P4Runtime's `SetForwardingPipelineConfig` carries a target-specific blob next to the P4Info
//! (`p4_device_config`); for BMv2 it is the compiler's JSON, for koi it is the P4 program itself,
//! since koi compiles in-process. `koi compile --emit device-config PROG.p4` writes it:
//!
//! ```text
//! koi-device-config 1
//! name: l2_learning.p4
//! define: DEBUG=1
//! include: /home/me/p4/include
//!
//! <the program, preprocessed: every #include expanded and every macro replaced>
//! ```
//!
//! The first line is the magic and format version. Header lines `KEY: VALUE` follow until an
//! empty line: `name` (the file name diagnostics show), and for information only the `define`
//! and `include` flags it was preprocessed with (they are already applied: the text needs no
//! file and no flag to compile again). Then the preprocessed program, UTF-8.
//!
//! [`Program::from_device_config`] accepts, in this order:
//! 1. koi's device config, as above;
//! 2. any of these wrapped in p4lang's `p4.tmp.P4DeviceConfig` message (its `device_data`), as
//!    p4lang's tutorial controllers send the file they are given;
//! 3. a plain P4-16 program (UTF-8 text that includes only koi's built-in headers, such as
//!    `<core.p4>` and `<v1model.p4>`), as p4runtime-shell sends the file it is given.
//!
//! A BMv2 JSON file (what p4c's bmv2 backend writes) is refused with a message saying so.

use koi_proto::p4info::P4Info;
use koi_syntax::PpOptions;
use prost::Message;
use std::path::{Path, PathBuf};

/// The first line of a device config.
pub const MAGIC: &str = "koi-device-config 1";
/// The largest device config accepted, in bytes.
pub const MAX_DEVICE_CONFIG: usize = 64 << 20;

/// A compiled program.
#[derive(Debug)]
pub struct Program {
    /// The file name of its source, as diagnostics show it.
    pub name: String,
    pub pipeline: koi_ir::Pipeline,
    /// Its P4Info, or why koi could not derive one (the program still runs; P4Runtime needs
    /// it).
    pub p4info: Result<P4Info, String>,
    /// The device config that compiles to this program (see the module doc).
    pub device_config: Vec<u8>,
    /// The POF configuration it was compiled from, for a POF pipeline ([`crate::pof`]),
    /// kept current as entry changes are written to its tables.
    pub pof: Option<crate::pof::PofSlot>,
}

/// How a program file is preprocessed (`-I` directories and `-D` definitions) and where the
/// implementation of its extern functions is (`--extern FILE`: C or a shared object).
#[derive(Clone, Debug, Default)]
pub struct Flags {
    pub include: Vec<PathBuf>,
    pub define: Vec<String>,
    pub externs: Option<PathBuf>,
}

impl Flags {
    /// The preprocessor options of these flags.
    pub fn pp_options(&self) -> PpOptions {
        let defines = self
            .define
            .iter()
            .map(|d| match d.split_once('=') {
                Some((n, v)) => (n.to_string(), Some(v.to_string())),
                None => (d.clone(), None),
            })
            .collect();
        PpOptions {
            include_dirs: self.include.clone(),
            defines,
        }
    }
}

impl Program {
    /// Compiles the program at `path`; `Err` holds every diagnostic, rendered.
    pub fn compile_file(path: &Path, flags: &Flags) -> Result<Program, String> {
        let mut compiled =
            koi_conformance::compile(path, &flags.pp_options()).map_err(|e| e.render())?;
        if flags.externs.is_some() {
            koi_native::bind(&mut compiled.pipeline, flags.externs.as_deref())
                .map_err(|e| format!("koi: {}: {e}", path.display()))?;
        }
        let name = path.file_name().map_or_else(
            || path.display().to_string(),
            |n| n.to_string_lossy().into(),
        );
        let header = header(&name, flags);
        Ok(Program::new(name, compiled, header))
    }

    /// Compiles a device config (raw, wrapped in `P4DeviceConfig`, or P4 source: see the
    /// module doc).
    pub fn from_device_config(bytes: &[u8]) -> Result<Program, String> {
        if bytes.len() > MAX_DEVICE_CONFIG {
            return Err(format!(
                "the device config is {} bytes, more than koi accepts ({MAX_DEVICE_CONFIG})",
                bytes.len()
            ));
        }
        let bytes = unwrap_device_config(bytes);
        let text = std::str::from_utf8(bytes).map_err(|e| {
            format!("the device config is neither koi's device config, a P4DeviceConfig message nor P4 source (not UTF-8: {e})")
        })?;
        if let Some(rest) = text.strip_prefix(MAGIC) {
            let (head, body) = split_header(rest)?;
            let name = head
                .iter()
                .find(|(k, _)| *k == "name")
                .map_or("device_config.p4", |(_, v)| v)
                .to_string();
            let mut compiled = koi_conformance::compile_str(&name, body, &PpOptions::default())
                .map_err(|e| e.render())?;
            koi_native::bind(&mut compiled.pipeline, None).map_err(no_c_in_device_configs)?;
            let header = text[..text.len() - body.len()].to_string();
            return Ok(Program::new(name, compiled, header));
        }
        if text.trim_start().starts_with('{') {
            return Err(
                "the device config looks like a BMv2 JSON file: koi compiles P4 itself; \
                 send the P4 program, or what `koi compile --emit device-config PROG.p4` writes"
                    .into(),
            );
        }
        let name = "device_config.p4".to_string();
        let mut compiled = koi_conformance::compile_str(&name, text, &PpOptions::default())
            .map_err(|e| e.render())?;
        koi_native::bind(&mut compiled.pipeline, None).map_err(no_c_in_device_configs)?;
        let header = header(&name, &Flags::default());
        Ok(Program::new(name, compiled, header))
    }

    /// An error if the program calls extern functions that no `--extern` file implements
    /// (`compile_file` without one compiles them, for `koi compile`).
    pub fn require_externs(&self) -> Result<(), String> {
        match &self.pipeline.natives.lib {
            None if !self.pipeline.natives.fns.is_empty() => {
                let e = koi_native::Error::Missing(
                    self.pipeline
                        .natives
                        .fns
                        .iter()
                        .map(|f| f.name.clone())
                        .collect(),
                );
                Err(format!("koi: {}: {e}", self.name))
            }
            _ => Ok(()),
        }
    }

    pub(crate) fn new(
        name: String,
        compiled: koi_conformance::Compiled,
        header: String,
    ) -> Program {
        let mut device_config = header.into_bytes();
        device_config.extend_from_slice(compiled.sm.expanded.text.as_bytes());
        let p4info = koi_p4info::generate(&compiled.pipeline).map_err(|e| e.to_string());
        Program {
            name,
            pipeline: compiled.pipeline,
            p4info,
            device_config,
            pof: None,
        }
    }
}

/// Why a device config calling user extern functions is refused.
fn no_c_in_device_configs(e: koi_native::Error) -> String {
    format!(
        "{e}; a device config carries no C code: load such a program with \
         `koi run PROG.p4 --extern FILE` or `koi ctl load PROG.p4 --extern FILE`"
    )
}

/// The device config's header lines for a program named `name` preprocessed with `flags`,
/// with the empty line that ends them.
pub(crate) fn header(name: &str, flags: &Flags) -> String {
    let one_line = |s: &str| s.replace(['\n', '\r'], " ");
    let mut h = format!("{MAGIC}\nname: {}\n", one_line(name));
    for d in &flags.define {
        h.push_str(&format!("define: {}\n", one_line(d)));
    }
    for i in &flags.include {
        h.push_str(&format!(
            "include: {}\n",
            one_line(&i.display().to_string())
        ));
    }
    h.push('\n');
    h
}

/// A device config's `KEY: VALUE` header lines.
type Header<'a> = Vec<(&'a str, &'a str)>;

/// The header's `KEY: VALUE` lines (after the magic) and the program text after the empty
/// line.
fn split_header(rest: &str) -> Result<(Header<'_>, &str), String> {
    let rest = rest
        .strip_prefix('\n')
        .ok_or("koi device config: the first line must be exactly `koi-device-config 1`")?;
    let mut head = Vec::new();
    let mut at = 0;
    for line in rest.split_inclusive('\n') {
        at += line.len();
        let l = line.trim_end_matches(['\n', '\r']);
        if l.is_empty() {
            return Ok((head, &rest[at..]));
        }
        let (k, v) = l
            .split_once(':')
            .ok_or_else(|| format!("koi device config: header line `{l}` is not `KEY: VALUE`"))?;
        head.push((k.trim(), v.trim()));
    }
    Err("koi device config: no empty line ends the header".into())
}

/// `bytes`, or the `device_data` of the `P4DeviceConfig` message it holds. Text never
/// decodes as a message with `device_data` (its tag is the control character 0x1a).
fn unwrap_device_config(bytes: &[u8]) -> &[u8] {
    if bytes.starts_with(MAGIC.as_bytes()) {
        return bytes;
    }
    match koi_proto::p4::tmp::P4DeviceConfig::decode(bytes) {
        Ok(m) if !m.device_data.is_empty() => {
            // The data's place inside `bytes` (decode copied it).
            let n = m.device_data.len();
            bytes
                .windows(n)
                .position(|w| w == m.device_data.as_slice())
                .map_or(bytes, |i| &bytes[i..i + n])
        }
        _ => bytes,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const PROG: &str = r#"
#include <core.p4>
#include <v1model.p4>
#define PORT 2
header h_t { bit<8> f; }
struct hs { h_t h; }
struct m {}
parser P(packet_in pk, out hs h, inout m mm, inout standard_metadata_t sm) {
    state start { pk.extract(h.h); transition accept; }
}
control V(inout hs h, inout m mm) { apply {} }
control I(inout hs h, inout m mm, inout standard_metadata_t sm) {
    apply { sm.egress_spec = PORT; }
}
control E(inout hs h, inout m mm, inout standard_metadata_t sm) { apply {} }
control C(inout hs h, inout m mm) { apply {} }
control D(packet_out pk, in hs h) { apply { pk.emit(h.h); } }
V1Switch(P(), V(), I(), E(), C(), D()) main;
"#;

    #[test]
    fn a_device_config_compiles_to_the_same_program_raw_and_wrapped() {
        let p = Program::from_device_config(PROG.as_bytes()).unwrap();
        let cfg = String::from_utf8(p.device_config.clone()).unwrap();
        assert!(
            cfg.starts_with("koi-device-config 1\nname: device_config.p4\n\n"),
            "{cfg}"
        );
        assert!(
            !cfg.lines().any(|l| l.trim_start().starts_with('#')),
            "preprocessed: {cfg}"
        );
        assert!(cfg.contains("egress_spec = 2;"), "macros replaced: {cfg}");
        let again = Program::from_device_config(&p.device_config).unwrap();
        assert_eq!(again.device_config, p.device_config);
        assert_eq!(again.p4info, p.p4info);
        let wrapped = koi_proto::p4::tmp::P4DeviceConfig {
            reassign: true,
            extras: None,
            device_data: p.device_config.clone(),
        }
        .encode_to_vec();
        let third = Program::from_device_config(&wrapped).unwrap();
        assert_eq!(third.device_config, p.device_config);
        assert!(p.p4info.is_ok());
    }

    #[test]
    fn a_file_keeps_its_name_and_flags_in_the_header() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("prog.p4");
        std::fs::write(&f, PROG.replace("#define PORT 2\n", "")).unwrap();
        let flags = Flags {
            include: vec![dir.path().to_path_buf()],
            define: vec!["PORT=3".into()],
            externs: None,
        };
        let p = Program::compile_file(&f, &flags).unwrap();
        let cfg = String::from_utf8(p.device_config.clone()).unwrap();
        let want = format!(
            "koi-device-config 1\nname: prog.p4\ndefine: PORT=3\ninclude: {}\n\n",
            dir.path().display()
        );
        assert!(cfg.starts_with(&want), "{cfg}");
        assert!(cfg.contains("egress_spec = 3"), "{cfg}");
        let again = Program::from_device_config(cfg.as_bytes()).unwrap();
        assert_eq!(again.name, "prog.p4");
        assert_eq!(again.device_config, p.device_config);
    }

    #[test]
    fn bad_device_configs_say_why() {
        let e = Program::from_device_config(b"{\"header_types\": []}").unwrap_err();
        assert!(e.contains("BMv2 JSON"), "{e}");
        let e = Program::from_device_config(&[0xff, 0xfe, 0x00]).unwrap_err();
        assert!(e.contains("not UTF-8"), "{e}");
        let e = Program::from_device_config(b"koi-device-config 1\nname x\n\n").unwrap_err();
        assert!(e.contains("KEY: VALUE"), "{e}");
        let e = Program::from_device_config(b"koi-device-config 1\nname: x.p4\n").unwrap_err();
        assert!(e.contains("no empty line"), "{e}");
        let e = Program::from_device_config(b"koi-device-config 1\nname: x.p4\n\ncontrol {")
            .unwrap_err();
        assert!(e.contains("x.p4:1:"), "diagnostics name the file: {e}");
    }

    #[test]
    fn a_device_config_with_user_extern_functions_is_refused_and_a_file_needs_extern() {
        let prog = PROG
            .replace(
                "struct m {}",
                "struct m {}\nextern bit<8> twice(in bit<8> x);",
            )
            .replace(
                "sm.egress_spec = PORT;",
                "sm.egress_spec = PORT; h.h.f = twice(h.h.f);",
            );
        let e = Program::from_device_config(prog.as_bytes()).unwrap_err();
        assert!(
            e.contains("extern function twice") && e.contains("carries no C code"),
            "{e}"
        );
        // A file compiles without its C (koi compile), but cannot run without it.
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("prog.p4");
        std::fs::write(&f, &prog).unwrap();
        let p = Program::compile_file(&f, &Flags::default()).unwrap();
        let e = p.require_externs().unwrap_err();
        assert!(e.contains("twice") && e.contains("--extern FILE"), "{e}");
        let c = dir.path().join("twice.c");
        std::fs::write(
            &c,
            "unsigned char twice(unsigned char x) { return x * 2; }\n",
        )
        .unwrap();
        let flags = Flags {
            externs: Some(c),
            ..Flags::default()
        };
        let p = Program::compile_file(&f, &flags).unwrap();
        assert!(p.require_externs().is_ok());
        assert!(p.pipeline.natives.lib.is_some());
    }
}
