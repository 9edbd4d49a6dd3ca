//! `koi run [PROG.p4] --port N=SPEC... [--entries FILE] [--threads N] ...`: the switch. This
//! module only turns the command line into a [`SwitchConfig`], starts the switch and its
//! servers (control socket, metrics), waits for SIGINT or SIGTERM and prints the counters;
//! the switch itself is `koi_runtime` ([`Switch`]).
//!
//! The P4Runtime server (`koi_p4runtime_server`) listens on `--grpc ADDR` (default
//! `127.0.0.1:9559`; `--grpc none`: no server), with TLS when given a certificate. Without a
//! program (as `simple_switch_grpc --no-p4`), the ports open and what arrives is dropped and
//! counted (`no_program`) until a controller loads a program.

use clap::Args;
use koi_datapath::DatapathConfig;
use koi_ports::PortSpec;
use koi_runtime::ctl_socket::{self, CtlSocket};
use koi_runtime::switch::PatchEnd;
use koi_runtime::{Flags, PipelineConfig, PipelineSetup, Program, StateInit, Switch, SwitchConfig};
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, atomic::Ordering};

#[derive(Args, Debug)]
pub struct RunArgs {
    /// Add a directory to the `#include` search path.
    #[arg(short = 'I', value_name = "DIR")]
    pub include: Vec<PathBuf>,
    /// Define a preprocessor macro (`NAME` or `NAME=VALUE`).
    #[arg(short = 'D', value_name = "NAME[=VAL]")]
    pub define: Vec<String>,
    /// The C file (or prebuilt shared object) implementing the program's extern functions
    /// (docs/externs.md).
    #[arg(long = "extern", value_name = "FILE")]
    pub externs: Option<PathBuf>,
    /// A port: `N=IFNAME` (AF_PACKET), `N=xdp:IFNAME[@QUEUE]` (AF_XDP: driver-mode XDP where the driver has it,
    /// else generic; `xdp-native:`, `xdp-generic:` force one),
    /// `N=pcap:IN,OUT`, `N=tap:NAME`; `@PIPELINE` at the end binds it to that pipeline
    /// (default: the first). Port numbers are each pipeline's own. Repeat for each port.
    #[arg(long = "port", value_name = "N=SPEC[@PIPELINE]", required = true)]
    pub ports: Vec<String>,
    /// simple_switch_CLI commands to run before forwarding (table_add, mc_*, ...), for the
    /// first pipeline or, with `PIPELINE=`, for that one. Repeatable.
    #[arg(long, value_name = "[PIPELINE=]FILE")]
    pub entries: Vec<String>,
    /// Another pipeline, with its program (none after `=`: it waits for a controller), its
    /// P4Runtime device id after `:` (default: `--device-id` plus its place among the
    /// pipelines). The positional program, if given, is pipeline `default`, the first.
    #[arg(long = "pipeline", value_name = "NAME[:DEVICE_ID]=[PROG.p4]")]
    pub pipelines: Vec<String>,
    /// A patch port: port N of pipeline A joined to port M of pipeline B inside the switch
    /// (what A sends to N enters B on M, and the reverse). A packet passes through at most 8
    /// pipelines; beyond that it is dropped (`patch_loop`).
    #[arg(long = "patch", value_name = "A:N=B:M")]
    pub patches: Vec<String>,
    /// Control socket for `koi ctl` (mode 0600). Default: `/run/koi/koi.sock` if `/run/koi` is
    /// writable, else `$XDG_RUNTIME_DIR/koi.sock`, else `/tmp/koi-$UID.sock`.
    #[arg(long, value_name = "PATH")]
    pub ctl: Option<PathBuf>,
    /// Serve Prometheus metrics (port, drop, table and cache counters) at `http://ADDR/metrics`.
    #[arg(long, value_name = "ADDR")]
    pub metrics: Option<std::net::SocketAddr>,
    /// Poll threads (default: one per core); the ports are dealt out among them, and a port
    /// that can spread its traffic by flow (AF_PACKET fanout) is read by every thread. Each
    /// thread has its own flow caches and its own replica of each pipeline's state.
    #[arg(long, value_name = "N", value_parser = thread_count)]
    pub threads: Option<usize>,
    /// Forward every packet through the reference interpreter alone, without flow caches.
    #[arg(long, conflicts_with_all = ["max_megaflows", "upcall_rate", "no_microflow"])]
    pub no_cache: bool,
    /// Megaflows per poll thread; beyond it the least recently hit ones are evicted.
    #[arg(long, value_name = "N", default_value_t = DatapathConfig::default().max_megaflows)]
    pub max_megaflows: usize,
    /// Cache misses (slow-path runs) allowed per second and poll thread; further misses are
    /// dropped and counted as `upcall_limit`. 0 (the default): no fixed rate: misses wait in
    /// per-port queues that hold 20 ms of slow-path work at its measured cost (beyond it they
    /// are dropped and counted as `upcall_queue_full`), and run after the cache hits.
    #[arg(long, value_name = "N", default_value_t = 0)]
    pub upcall_rate: u64,
    /// Do without the microflow (exact-match) cache tier: every lookup goes to the megaflows.
    #[arg(long)]
    pub no_microflow: bool,
    /// The P4Runtime device id of the first pipeline (the others follow it, unless given).
    #[arg(long, value_name = "N", default_value_t = 1)]
    pub device_id: u64,
    /// The CPU port (v1model, as BMv2's `--cpu-port`): what the program sends there goes to
    /// the P4Runtime controller as PacketIn, and the controller's PacketOut enters the
    /// program on it. Must not be one of the `--port` numbers.
    #[arg(long, value_name = "N")]
    pub cpu_port: Option<u64>,
    /// The P4Runtime server's address, or `none` for no server. Localhost by default: to
    /// expose it, give an address and TLS (`--grpc-tls-cert`, `--grpc-tls-key`).
    #[arg(long, value_name = "ADDR|none", default_value = "127.0.0.1:9559")]
    pub grpc: String,
    /// PEM certificate (chain) of the P4Runtime server: serve gRPC over TLS.
    #[arg(long, value_name = "FILE", requires = "grpc_tls_key")]
    pub grpc_tls_cert: Option<PathBuf>,
    /// PEM private key of the P4Runtime server's certificate.
    #[arg(long, value_name = "FILE", requires = "grpc_tls_cert")]
    pub grpc_tls_key: Option<PathBuf>,
    /// PEM CA certificate: P4Runtime clients must present a certificate it signed (mutual
    /// TLS).
    #[arg(long, value_name = "FILE", requires = "grpc_tls_cert")]
    pub grpc_tls_client_ca: Option<PathBuf>,
    /// P4Runtime connections served at once. A newcomer beyond them takes the seat of the
    /// oldest connection that has made no call; when every seat has made calls it is
    /// refused (RESOURCE_EXHAUSTED, with the reason).
    #[arg(long, value_name = "N", default_value_t = koi_p4runtime_server::connections::MAX_CONNECTIONS,
          value_parser = clap::value_parser!(usize))]
    pub grpc_max_connections: usize,
    /// Run a POF pipeline (docs/pof.md) instead of a P4 program: the first pipeline starts
    /// with an empty POF configuration (it drops everything) or `--pof-config`'s, and `koi
    /// ctl pof_*` commands change it while it forwards.
    #[arg(long, conflicts_with = "program")]
    pub pof: bool,
    /// The POF configuration the `--pof` pipeline starts with.
    #[arg(long, value_name = "FILE", requires = "pof")]
    pub pof_config: Option<PathBuf>,
    /// The P4-16 program. Without one, the switch forwards nothing until a controller loads
    /// a program.
    pub program: Option<PathBuf>,
}

/// The P4Runtime server's configuration, `None` for `--grpc none`.
fn grpc_config(a: &RunArgs) -> Result<Option<koi_p4runtime_server::ServerConfig>, String> {
    if a.grpc == "none" {
        if a.grpc_tls_cert.is_some() {
            return Err("koi: --grpc none with --grpc-tls-cert: TLS for which server?".into());
        }
        return Ok(None);
    }
    let addr: std::net::SocketAddr = a
        .grpc
        .parse()
        .map_err(|_| format!("koi: --grpc {}: expected IP:PORT or none", a.grpc))?;
    let tls = match (&a.grpc_tls_cert, &a.grpc_tls_key) {
        (Some(cert), Some(key)) => Some(koi_p4runtime_server::Tls {
            cert: cert.clone(),
            key: key.clone(),
            client_ca: a.grpc_tls_client_ca.clone(),
        }),
        _ => None,
    };
    Ok(Some(koi_p4runtime_server::ServerConfig {
        addr,
        tls,
        max_connections: a.grpc_max_connections,
    }))
}

/// Token bucket depth of the slow-path rate limit.
const UPCALL_BURST: u64 = 2_000;

pub fn run(a: &RunArgs) -> ExitCode {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        // The code generator logs every function it compiles at `info`: not koi's news.
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info,cranelift=warn"));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .try_init();
    match switch(a) {
        Ok(()) => ExitCode::SUCCESS,
        Err((code, msg)) => {
            eprintln!("{msg}");
            ExitCode::from(code)
        }
    }
}

/// `N=SPEC[@PIPELINE]`: the port number, its spec and its pipeline's name if given (a final
/// `@WORD` that names a pipeline; AF_XDP's `@QUEUE` is a number).
fn parse_port<'a>(
    s: &'a str,
    names: &[String],
) -> Result<(u64, PortSpec, Option<&'a str>), String> {
    let (n, spec) = s
        .split_once('=')
        .ok_or_else(|| format!("--port {s}: expected N=SPEC"))?;
    let n: u64 = n
        .trim()
        .parse()
        .map_err(|_| format!("--port {s}: `{n}` is not a port number"))?;
    let (spec, pipeline) = match spec.rsplit_once('@') {
        Some((sp, name)) if names.iter().any(|x| x == name) => (sp, Some(name)),
        Some((_, name)) if name.parse::<u32>().is_err() => {
            return Err(format!("--port {s}: no pipeline `{name}`"));
        }
        _ => (spec, None),
    };
    Ok((
        n,
        PortSpec::parse(spec).map_err(|e| e.to_string())?,
        pipeline,
    ))
}

/// A pipeline of the command line: name, device id, program file.
struct PipelineArg {
    name: String,
    device_id: Option<u64>,
    program: Option<PathBuf>,
}

/// `--pipeline NAME[:DEVICE_ID]=[PROG.p4]`.
fn parse_pipeline(s: &str) -> Result<PipelineArg, String> {
    let (head, prog) = s
        .split_once('=')
        .ok_or_else(|| format!("--pipeline {s}: expected NAME=PROG.p4 (or NAME= for none)"))?;
    let (name, id) = match head.split_once(':') {
        Some((n, id)) => (
            n,
            Some(
                id.parse::<u64>()
                    .map_err(|_| format!("--pipeline {s}: `{id}` is not a device id"))?,
            ),
        ),
        None => (head, None),
    };
    koi_runtime::pipeline::check_name(name).map_err(|e| format!("--pipeline {s}: {e}"))?;
    Ok(PipelineArg {
        name: name.to_string(),
        device_id: id,
        program: (!prog.is_empty()).then(|| PathBuf::from(prog)),
    })
}

/// `A:N=B:M`.
fn parse_patch(s: &str, names: &[String]) -> Result<(PatchEnd, PatchEnd), String> {
    let end = |e: &str| -> Result<PatchEnd, String> {
        let (name, n) = e
            .rsplit_once(':')
            .ok_or_else(|| format!("--patch {s}: expected PIPELINE:PORT=PIPELINE:PORT"))?;
        let p = names
            .iter()
            .position(|x| x == name)
            .ok_or_else(|| format!("--patch {s}: no pipeline `{name}`"))?;
        let n = n
            .parse()
            .map_err(|_| format!("--patch {s}: `{n}` is not a port number"))?;
        Ok((p, n))
    };
    let (a, b) = s
        .split_once('=')
        .ok_or_else(|| format!("--patch {s}: expected PIPELINE:PORT=PIPELINE:PORT"))?;
    Ok((end(a)?, end(b)?))
}

/// The datapath configuration of the cache flags; `None` with `--no-cache`.
fn cache_config(a: &RunArgs) -> Result<Option<DatapathConfig>, String> {
    if a.no_cache {
        return Ok(None);
    }
    if a.max_megaflows == 0 {
        return Err("koi: --max-megaflows must be at least 1".into());
    }
    Ok(Some(DatapathConfig {
        max_megaflows: a.max_megaflows,
        microflow: !a.no_microflow,
        upcall_rate: a.upcall_rate,
        upcall_burst: UPCALL_BURST,
        ..DatapathConfig::default()
    }))
}

/// The switch's configuration from the command line; compiles the programs.
fn config(a: &RunArgs) -> Result<SwitchConfig, (u8, String)> {
    let usage = |e: String| (2, format!("koi: {e}"));
    let mut args = Vec::new();
    if a.program.is_some() || a.pipelines.is_empty() {
        args.push(PipelineArg {
            name: "default".into(),
            device_id: None,
            program: a.program.clone(),
        });
    }
    for p in &a.pipelines {
        args.push(parse_pipeline(p).map_err(usage)?);
    }
    let names: Vec<String> = args.iter().map(|p| p.name.clone()).collect();
    for (i, n) in names.iter().enumerate() {
        if names[..i].contains(n) {
            return Err(usage(format!("--pipeline {n}: two pipelines of that name")));
        }
    }
    let mut ports = Vec::new();
    for s in &a.ports {
        let (n, spec, pipeline) = parse_port(s, &names).map_err(usage)?;
        let p = pipeline.map_or(0, |name| names.iter().position(|x| x == name).unwrap_or(0));
        ports.push((n, spec, p));
    }
    let mut patches = Vec::new();
    for s in &a.patches {
        patches.push(parse_patch(s, &names).map_err(usage)?);
    }
    let mut entries: Vec<Vec<PathBuf>> = vec![Vec::new(); args.len()];
    for e in &a.entries {
        let (p, file) = match e.split_once('=') {
            Some((name, f)) if names.iter().any(|x| x == name) => {
                (names.iter().position(|x| x == name).unwrap_or(0), f)
            }
            _ => (0, e.as_str()),
        };
        if args[p].program.is_none() && !(p == 0 && a.pof) {
            return Err(usage(format!(
                "--entries {e}: pipeline {} has no program to load them into",
                names[p]
            )));
        }
        entries[p].push(PathBuf::from(file));
    }
    let cache = cache_config(a).map_err(|e| (2, e))?;
    let flags = Flags {
        include: a.include.clone(),
        define: a.define.clone(),
        externs: a.externs.clone(),
    };
    let mut pipelines = Vec::new();
    for (k, (p, files)) in args.into_iter().zip(entries).enumerate() {
        let program = match &p.program {
            Some(path) => {
                let p = Program::compile_file(path, &flags).map_err(|e| (1, e))?;
                p.require_externs().map_err(|e| (1, e))?;
                Some(Arc::new(p))
            }
            None if k == 0 && a.pof => Some(Arc::new(
                match &a.pof_config {
                    Some(path) => Program::from_pof_file(path),
                    None => Program::from_pof("pof", koi_pof::Config::default()),
                }
                .map_err(|e| (1, e))?,
            )),
            None => None,
        };
        let init: Option<StateInit> = (!files.is_empty()).then(|| {
            Box::new(move |state: &mut koi_state::State| {
                for f in &files {
                    let n = super::entries::load(state, f)?;
                    tracing::info!(commands = n, file = %f.display(), "entries loaded");
                }
                Ok(())
            }) as Box<_>
        });
        pipelines.push(PipelineSetup {
            config: PipelineConfig {
                name: p.name,
                device_id: p.device_id.unwrap_or(a.device_id + k as u64),
                cpu_port: a.cpu_port,
            },
            program,
            init,
        });
    }
    // A port number the program's architecture cannot hold would be cut short in every
    // packet's metadata: refuse it.
    for (n, _, p) in &ports {
        if let Some(prog) = pipelines.get(*p).and_then(|pl| pl.program.as_ref()) {
            prog.pipeline
                .arch
                .check_port(*n)
                .map_err(|e| usage(format!("--port {n}: {e}")))?;
        }
    }
    if let Some(cpu) = a.cpu_port {
        for pl in &pipelines {
            if let Some(prog) = &pl.program {
                prog.pipeline
                    .arch
                    .check_port(cpu)
                    .map_err(|e| usage(format!("--cpu-port {cpu}: {e}")))?;
            }
        }
    }
    Ok(SwitchConfig {
        pipelines,
        ports,
        patches,
        threads: a
            .threads
            .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get())),
        cache,
    })
}

fn thread_count(s: &str) -> Result<usize, String> {
    match s.parse::<usize>() {
        Ok(n @ 1..=256) => Ok(n),
        _ => Err(format!("{s}: expected a number of threads from 1 to 256")),
    }
}

fn switch(a: &RunArgs) -> Result<(), (u8, String)> {
    let grpc = grpc_config(a).map_err(|e| (2, e))?;
    let cfg = config(a)?;
    let ctl_path = a
        .ctl
        .clone()
        .unwrap_or_else(|| ctl_socket::default_path(true));
    let ctl = CtlSocket::bind(&ctl_path).map_err(|e| (1, format!("koi: {e}")))?;
    eprintln!("koi: control socket {}", ctl.path().display());
    let metrics = match a.metrics {
        Some(addr) => {
            let l = std::net::TcpListener::bind(addr)
                .map_err(|e| (1, format!("koi: --metrics {addr}: {e}")))?;
            eprintln!("koi: metrics at http://{addr}/metrics");
            Some(l)
        }
        None => None,
    };
    let stop = Arc::new(AtomicBool::new(false));
    for sig in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        signal_hook::flag::register(sig, Arc::clone(&stop))
            .map_err(|e| (1, format!("koi: cannot handle signals: {e}")))?;
    }
    let sw = Switch::start(cfg).map_err(|e| (1, format!("koi: {e}")))?;
    let started = sw
        .spawn("koi-ctl", move |sw| ctl_socket::serve(&ctl, &sw))
        .and_then(|()| match metrics {
            Some(l) => sw.spawn("koi-metrics", move |sw| koi_runtime::metrics::serve(l, sw)),
            None => Ok(()),
        });
    if let Err(e) = started {
        tracing::error!(error = %e, "cannot start a server");
        stop.store(true, Ordering::Relaxed);
    }
    let p4rt = match grpc {
        Some(g) => match koi_p4runtime_server::Server::start(Arc::clone(&sw), g) {
            Ok(s) => {
                eprintln!("koi: P4Runtime server at {}", s.local_addr());
                Some(s)
            }
            Err(e) => {
                sw.stop();
                sw.join();
                return Err((1, format!("koi: {e}")));
            }
        },
        None => None,
    };
    while !stop.load(Ordering::Relaxed) && !sw.stopping() {
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    if let Some(s) = p4rt {
        s.shutdown();
    }
    sw.stop();
    sw.join();
    tracing::info!("stopped");
    summary(&sw);
    Ok(())
}

/// Prints every port's counters, the drops without a port and each thread's cache counters.
fn summary(sw: &Switch) {
    for slot in sw.ports().iter() {
        let name = slot
            .port
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .name()
            .to_string();
        println!("port {} ({name}): {}", slot.num, slot.stats());
    }
    let drops: Vec<String> = sw
        .counters
        .by_reason()
        .iter()
        .map(|(r, n)| format!("{r} {n}"))
        .collect();
    println!("drops without a port: {}", drops.join(" "));
    for pl in sw.live_pipelines() {
        let Some(image) = pl.image() else {
            continue;
        };
        for (t, snap) in image.caches().snapshots().iter().enumerate() {
            if let Some(s) = snap {
                let st = &s.stats;
                println!(
                    "cache (thread {t}): packets {} microflow_hits {} megaflow_hits {} misses {} \
                     upcalls_limited {} megaflows {}",
                    st.packets,
                    st.microflow_hits,
                    st.megaflow_hits,
                    st.misses,
                    st.upcalls_limited,
                    s.info.megaflows
                );
            }
        }
    }
}
