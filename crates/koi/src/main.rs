//! The `koi` command: a thin layer over koi's libraries that parses the command line and
//! dispatches to one subcommand module under `cmd/`.

mod cmd;

use clap::{Parser, Subcommand};
use std::process::ExitCode;

/// The slow path allocates and frees some hundred small objects per new flow (the
/// interpreter's values, the symbolic trace, the megaflow); mimalloc's per-thread free lists
/// make those a fraction of glibc malloc's cost (see docs/benchmarks.md).
#[global_allocator]
static ALLOC: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[derive(Parser)]
#[command(
    name = "koi",
    version,
    about = "koi: a protocol-independent software switch programmed in P4-16"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Check a P4-16 program: preprocess, parse, resolve names and type-check it (like p4test).
    Check(cmd::check::CheckArgs),
    /// Compile a P4-16 program (which must instantiate `main`) and print a compiler output.
    Compile(cmd::compile::CompileArgs),
    /// Run one STF packet test (PROG.p4 TEST.stf) through the cached datapath (`--no-cache`:
    /// the reference interpreter alone).
    Test(cmd::test::TestArgs),
    /// Run every STF test under a directory; ends with `N passed, M failed`.
    Conformance(cmd::conformance::ConformanceArgs),
    /// Show what the pipeline does with packets: parser states, tables, actions, outputs.
    Trace(cmd::trace::TraceArgs),
    /// Run the switch: forward packets between ports (AF_PACKET, pcap files, TAP) until SIGINT.
    Run(cmd::run::RunArgs),
    /// Control a running `koi run` through its control socket (one command, stdin, or a prompt).
    Ctl(cmd::ctl::CtlArgs),
    /// Measure the cached datapath: replay packets from memory on one pinned core; print Mpps,
    /// cycles per packet and per stage, cache hit rates and sizes.
    Bench(cmd::bench::BenchArgs),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    // The frontend recurses over the program's structure; run it with a generous stack so that
    // deeply nested (but valid) programs cannot overflow it.
    let worker = std::thread::Builder::new()
        .name("koi-main".into())
        .stack_size(256 << 20)
        .spawn(move || match cli.command {
            Command::Check(a) => cmd::check::run(&a),
            Command::Compile(a) => cmd::compile::run(&a),
            Command::Test(a) => cmd::test::run(&a),
            Command::Conformance(a) => cmd::conformance::run(&a),
            Command::Trace(a) => cmd::trace::run(&a),
            Command::Run(a) => cmd::run::run(&a),
            Command::Ctl(a) => cmd::ctl::run(&a),
            Command::Bench(a) => cmd::bench::run(&a),
        });
    match worker.map(|h| h.join()) {
        Ok(Ok(code)) => code,
        Ok(Err(_)) => ExitCode::from(3),
        Err(e) => {
            eprintln!("koi: cannot start: {e}");
            ExitCode::from(2)
        }
    }
}
