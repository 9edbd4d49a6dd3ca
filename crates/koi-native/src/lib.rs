//! User-defined extern functions: C code that implements the extern functions a P4 program
//! declares, as p4c-ebpf and p4c-ubpf users link theirs (docs/externs.md). This crate is,
//! with the cached datapath's JIT, the only place koi runs machine code it did not compile
//! from Rust, and the only one that calls foreign code; its `unsafe` is confined to
//! [`ffi`].
//!
//! [`bind`] gives a lowered pipeline's [`koi_ir::Natives`] their implementation from
//! `--extern FILE`:
//! - a **C file** is compiled with the system's C compiler (`$CC`, else `cc`) as
//!   `cc -shared -fPIC -O2` into a shared object, together with a header koi generates
//!   (`koi_extern.h`, also reachable as `test.h`: the program's types as p4c declares them,
//!   integer typedefs, byte-order macros and a user-space emulation of the BPF map helpers)
//!   and a wrapper with one uniform entry point per function; the compiler's errors are
//!   returned as they are;
//! - a **shared object** (`.so`, or any ELF file) already built is linked to a wrapper built
//!   the same way, which declares the functions with p4c's prototypes;
//! - a **C++ file** (`.cpp`, `.cc`, `.cxx`) is a BMv2 extern module, as simple_switch's
//!   `--load-modules` takes them: compiled with the system's C++ compiler (`$CXX`, else
//!   `c++`) against koi's implementation of BMv2's extern API ([`bmv2`]).
//!
//! The result is cached by the hash of everything that goes into the build (the generated
//! sources, the user's file, the compiler and flags) under `$KOI_CACHE_DIR`, else
//! `$XDG_CACHE_HOME/koi/extern`, else `~/.cache/koi/extern`; a header the user's file
//! includes is not part of the key. At load, probes compiled into the wrapper check that the
//! compiler lays out every struct as koi does.

// `unsafe` is allowed in `ffi` only.
#![deny(unsafe_code)]

mod bmv2;
mod cgen;
mod ffi;

use koi_ir::{NativeLib, Natives, Pipeline};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;

pub use cgen::header;

/// Why extern functions could not be given their implementation.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("{0}")]
    Io(String),
    /// The C compiler failed: its command line and what it printed.
    #[error("compiling the extern functions failed:\n$ {command}\n{output}")]
    Compile { command: String, output: String },
    #[error("loading the extern functions: {0}")]
    Load(String),
    #[error("{0}")]
    Unsupported(String),
    /// The program calls extern functions and no implementation was given.
    #[error(
        "the program calls extern function{} {} with no built-in implementation: give the C \
         file that implements {} with --extern FILE",
        if .0.len() == 1 { "" } else { "s" },
        .0.join(", "),
        if .0.len() == 1 { "it" } else { "them" }
    )]
    Missing(Vec<String>),
}

/// A loaded implementation.
struct Lib {
    loaded: ffi::Loaded,
    origin: String,
}

impl NativeLib for Lib {
    fn call(&self, func: usize, args: &mut [Vec<u8>], ret: &mut [u8]) -> Result<(), String> {
        self.loaded.call(func, args, ret)
    }

    fn origin(&self) -> &str {
        &self.origin
    }
}

/// Binds the pipeline's extern functions to the code in `file` (a C file or a shared
/// object). Without `file`, a pipeline that calls extern functions is an error
/// ([`Error::Missing`]); a `file` for a pipeline that calls none is ignored.
pub fn bind(pipeline: &mut Pipeline, file: Option<&Path>) -> Result<(), Error> {
    bind_in(pipeline, file, &cache_dir())
}

/// [`bind`] with the built objects cached in `cache`.
pub fn bind_in(pipeline: &mut Pipeline, file: Option<&Path>, cache: &Path) -> Result<(), Error> {
    if pipeline.natives.fns.is_empty() {
        return Ok(());
    }
    let Some(file) = file else {
        return Err(Error::Missing(
            pipeline
                .natives
                .fns
                .iter()
                .map(|f| f.name.clone())
                .collect(),
        ));
    };
    let lib = load(&pipeline.natives, file, cache)?;
    pipeline.natives.lib = Some(lib);
    Ok(())
}

/// How many private copies of built objects this process has opened (their names).
static COPIES: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// Builds (or finds in `cache`) and loads the implementation of `natives` in `file`. Each
/// call loads a private instance: the C code's statics and BPF maps start afresh and are
/// shared by nothing else (a shared object the user prebuilt and koi links to is one
/// instance per process, as the dynamic loader gives it).
pub fn load(natives: &Natives, file: &Path, cache: &Path) -> Result<Arc<dyn NativeLib>, Error> {
    let so = build(natives, file, cache)?;
    let layout = cgen::layout_values(&natives.fns)?;
    // The dynamic loader opens a file only once per process (by its device and inode), so
    // two pipelines bound to the same build would share its statics and BPF maps: each load
    // opens a copy of its own, removed once opened (the mapping stays).
    let n = COPIES.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let copy = so.with_file_name(format!("koi_extern.{}-{n}.so", std::process::id()));
    std::fs::copy(&so, &copy).map_err(|e| Error::Io(format!("copying {}: {e}", so.display())))?;
    let loaded = ffi::Loaded::open(&copy, &natives.fns, &layout);
    let _ = std::fs::remove_file(&copy);
    let loaded = loaded?;
    Ok(Arc::new(Lib {
        loaded,
        origin: file.display().to_string(),
    }))
}

/// The directory the built objects are cached in.
pub fn cache_dir() -> PathBuf {
    let env = |k: &str| {
        std::env::var_os(k)
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
    };
    if let Some(d) = env("KOI_CACHE_DIR") {
        return d;
    }
    if let Some(d) = env("XDG_CACHE_HOME") {
        return d.join("koi").join("extern");
    }
    if let Some(h) = env("HOME") {
        return h.join(".cache").join("koi").join("extern");
    }
    std::env::temp_dir().join("koi-extern-cache")
}

/// Whether `bytes` are a shared object rather than C source.
fn is_shared_object(path: &Path, bytes: &[u8]) -> bool {
    bytes.starts_with(b"\x7fELF") || path.extension().is_some_and(|e| e == "so")
}

/// What a build compiles besides the common flags.
struct Plan {
    /// The generated files, `(path in the build directory, text)`; the wrapper first.
    files: Vec<(String, String)>,
    /// The compiler: its environment variable and the default.
    compiler: (&'static str, &'static str),
    flags: &'static [&'static str],
    /// Whether the user's file is compiled (or linked) beside the wrapper, rather than
    /// included by it (a C file).
    user_on_command_line: bool,
}

impl Plan {
    fn new(natives: &Natives, file: &Path, prebuilt: bool) -> Result<Plan, Error> {
        let fns = &natives.fns;
        if !prebuilt && bmv2::is_cxx(file) {
            let mut files = vec![
                ("koi_wrapper.cpp".to_string(), bmv2::wrapper(fns)?),
                ("koi_bm.h".to_string(), bmv2::SHIM.to_string()),
            ];
            files.extend(
                bmv2::HEADERS
                    .iter()
                    .map(|h| (h.to_string(), "#include <koi_bm.h>\n".to_string())),
            );
            return Ok(Plan {
                files,
                compiler: ("CXX", "c++"),
                flags: &["-std=c++17", "-fvisibility=hidden"],
                user_on_command_line: true,
            });
        }
        let src = if prebuilt {
            cgen::Source::Prebuilt
        } else {
            cgen::Source::C(file)
        };
        Ok(Plan {
            files: vec![
                ("koi_wrapper.c".to_string(), cgen::wrapper(fns, &src)?),
                ("koi_extern.h".to_string(), cgen::header(fns)?),
                (
                    "test.h".to_string(),
                    "#include \"koi_extern.h\"\n".to_string(),
                ),
            ],
            compiler: ("CC", "cc"),
            flags: &["-Werror=implicit-function-declaration"],
            user_on_command_line: prebuilt,
        })
    }
}

/// Builds the wrapper shared object for `natives` and `file` in `cache` (unless it is there
/// already) and returns its path.
pub fn build(natives: &Natives, file: &Path, cache: &Path) -> Result<PathBuf, Error> {
    let io =
        |what: &str, p: &Path, e: std::io::Error| Error::Io(format!("{what} {}: {e}", p.display()));
    let file = std::fs::canonicalize(file).map_err(|e| io("reading", file, e))?;
    let user = std::fs::read(&file).map_err(|e| io("reading", &file, e))?;
    let prebuilt = is_shared_object(&file, &user);
    let plan = Plan::new(natives, &file, prebuilt)?;
    let cc = std::env::var(plan.compiler.0)
        .ok()
        .filter(|c| !c.is_empty())
        .unwrap_or_else(|| plan.compiler.1.into());
    let dir_of = file.parent().unwrap_or(Path::new("/")).to_path_buf();
    let mut flags: Vec<String> = ["-shared", "-fPIC", "-O2"]
        .iter()
        .chain(plan.flags)
        .map(|s| s.to_string())
        .collect();
    flags.push("-Wl,--no-undefined".into());
    flags.push(format!("-I{}", dir_of.display()));
    let mut key = Fnv::new();
    let generated = plan
        .files
        .iter()
        .flat_map(|(name, text)| [name.as_bytes(), text.as_bytes()]);
    for part in generated.chain([
        &user[..],
        cc.as_bytes(),
        flags.join(" ").as_bytes(),
        file.as_os_str().as_encoded_bytes(),
    ]) {
        key.write(&(part.len() as u64).to_le_bytes());
        key.write(part);
    }
    let dir = cache.join(key.hex());
    let so = dir.join("koi_extern.so");
    if so.is_file() {
        return Ok(so);
    }
    std::fs::create_dir_all(cache).map_err(|e| io("creating", cache, e))?;
    // A directory of this build's own: another process, or another thread of this one
    // (tests build the same file side by side), may be building the same key.
    static BUILDS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let n = BUILDS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let tmp = cache.join(format!("{}.tmp{}-{n}", key.hex(), std::process::id()));
    let _ = std::fs::remove_dir_all(&tmp);
    std::fs::create_dir_all(&tmp).map_err(|e| io("creating", &tmp, e))?;
    for (name, text) in &plan.files {
        let p = tmp.join(name);
        if let Some(d) = p.parent() {
            std::fs::create_dir_all(d).map_err(|e| io("creating", d, e))?;
        }
        std::fs::write(&p, text).map_err(|e| io("writing", &p, e))?;
    }
    let mut cmd = Command::new(&cc);
    cmd.args(&flags)
        .arg(format!("-I{}", tmp.display()))
        .arg("-o")
        .arg(tmp.join("koi_extern.so"))
        .arg(tmp.join(&plan.files[0].0));
    if plan.user_on_command_line {
        cmd.arg(&file);
    }
    if prebuilt {
        cmd.arg(format!("-Wl,-rpath,{}", dir_of.display()));
    }
    let command = format!("{cmd:?}").replace('"', "");
    let out = cmd.output().map_err(|e| Error::Compile {
        command: command.clone(),
        output: format!("cannot run {cc}: {e}"),
    })?;
    if !out.status.success() {
        let _ = std::fs::remove_dir_all(&tmp);
        let mut output = String::from_utf8_lossy(&out.stderr).into_owned();
        output.push_str(&String::from_utf8_lossy(&out.stdout));
        return Err(Error::Compile { command, output });
    }
    // Another process may have built the same: either copy will do.
    if std::fs::rename(&tmp, &dir).is_err() {
        let _ = std::fs::remove_dir_all(&tmp);
    }
    if so.is_file() {
        Ok(so)
    } else {
        Err(Error::Io(format!("{} was not built", so.display())))
    }
}

/// 128-bit FNV-1a (two 64-bit lanes with different offsets), for cache keys.
struct Fnv(u64, u64);

impl Fnv {
    fn new() -> Fnv {
        Fnv(0xcbf2_9ce4_8422_2325, 0x6c62_272e_07bb_0142)
    }

    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0 ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3);
            self.1 = (self.1 ^ u64::from(b.rotate_left(3))).wrapping_mul(0x0100_0000_01b3);
        }
    }

    fn hex(&self) -> String {
        format!("{:016x}{:016x}", self.0, self.1)
    }
}
