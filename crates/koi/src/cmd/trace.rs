//! `koi trace PROG.p4 [--entries FILE] (--packet HEX | --pcap FILE)`: runs packets through the
//! reference interpreter and prints, for each, the parser states taken, every table looked up
//! with its key and the entry hit (or the miss), the actions and their parameters, extern
//! calls, and the packets that come out on which ports.

use super::frontend::pp_options;
use clap::Args;
use koi_interp::{Interpreter, TraceObserver};
use koi_state::{ManualClock, State};
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Args, Debug)]
pub struct TraceArgs {
    /// Add a directory to the `#include` search path.
    #[arg(short = 'I', value_name = "DIR")]
    pub include: Vec<PathBuf>,
    /// Define a preprocessor macro (`NAME` or `NAME=VALUE`).
    #[arg(short = 'D', value_name = "NAME[=VAL]")]
    pub define: Vec<String>,
    /// simple_switch_CLI commands to run first (table_add, mc_*, mirroring_*, register_*...).
    #[arg(long, value_name = "FILE")]
    pub entries: Option<PathBuf>,
    /// A packet in hex (spaces and `:` allowed).
    #[arg(long, value_name = "HEX", conflicts_with = "pcap")]
    pub packet: Option<String>,
    /// A pcap file whose packets are traced in order.
    #[arg(long, value_name = "FILE")]
    pub pcap: Option<PathBuf>,
    /// The ingress port the packets arrive on (as `koi bench --port`, default 1; at most 511
    /// for v1model, whose port numbers are 9 bits).
    #[arg(long, value_name = "P", default_value_t = 1)]
    pub port: u64,
    /// The C file (or prebuilt shared object) implementing the program's extern functions.
    #[arg(long = "extern", value_name = "FILE")]
    pub externs: Option<PathBuf>,
    /// The P4-16 program.
    pub program: PathBuf,
}

pub fn run(a: &TraceArgs) -> ExitCode {
    match trace(a) {
        Ok(()) => ExitCode::SUCCESS,
        Err((code, msg)) => {
            eprintln!("{msg}");
            ExitCode::from(code)
        }
    }
}

fn trace(a: &TraceArgs) -> Result<(), (u8, String)> {
    let packets = packets(a).map_err(|e| (2, format!("koi: {e}")))?;
    let opts = pp_options(&a.include, &a.define);
    let mut compiled = koi_conformance::compile(&a.program, &opts)
        .map_err(|e| (if e.unreadable() { 2 } else { 1 }, e.render()))?;
    koi_native::bind(&mut compiled.pipeline, a.externs.as_deref())
        .map_err(|e| (1, format!("koi: {e}")))?;
    let p = &compiled.pipeline;
    p.arch
        .check_port(a.port)
        .map_err(|e| (2, format!("koi: --port {}: {e}", a.port)))?;
    let mut state = State::new(p).map_err(|e| (1, format!("koi: {e}")))?;
    if let Some(f) = &a.entries {
        super::entries::load(&mut state, f).map_err(|e| (e.code(), format!("koi: {e}")))?;
    }
    let mut interp = Interpreter::new(p).map_err(|e| (1, format!("koi: {e}")))?;
    let clock = ManualClock::new(0);
    for (i, pkt) in packets.iter().enumerate() {
        let mut obs = TraceObserver::new();
        let out = interp
            .run(&mut state, pkt, a.port, &clock, &mut obs)
            .map_err(|e| (1, format!("koi: packet {}: {e}", i + 1)))?;
        if packets.len() > 1 {
            println!("=== packet {}", i + 1);
        }
        print!("{}", obs.text());
        if out.outputs.is_empty() {
            println!("result: no packet sent");
        }
        for o in &out.outputs {
            let hex: String = o.bytes.iter().map(|b| format!("{b:02x}")).collect();
            println!("result: port {}: {} bytes: {hex}", o.port, o.bytes.len());
        }
        clock.advance_ns(1_000);
    }
    Ok(())
}

fn packets(a: &TraceArgs) -> Result<Vec<Vec<u8>>, String> {
    if let Some(h) = &a.packet {
        return koi_runtime::command::parse_hex(h).map(|p| vec![p]);
    }
    let Some(path) = &a.pcap else {
        return Err("give a packet with --packet HEX or --pcap FILE".into());
    };
    let mut reader = koi_ports::pcap::open_reader(path).map_err(|e| e.to_string())?;
    let mut out = Vec::new();
    while let Some(p) = reader.next_packet() {
        let p = p.map_err(|e| format!("{}: {e}", path.display()))?;
        out.push(p.data.into_owned());
    }
    Ok(out)
}
