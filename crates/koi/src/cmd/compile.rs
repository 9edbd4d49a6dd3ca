//! `koi compile`: checks a program that instantiates `main`, lowers it to koi's IR and prints a
//! compiler output (`--emit ir`, `--emit p4info`, `--emit device-config`, or `--emit ast` for
//! debugging the frontend).

use super::frontend::{Outcome, SourceArgs, print_diagnostics, run_frontend};
use clap::{Args, ValueEnum};
use std::process::ExitCode;

#[derive(Clone, Copy, Debug, ValueEnum)]
pub enum Emit {
    /// The lowered pipeline in koi's IR.
    Ir,
    /// The P4Info of the lowered pipeline, in protobuf text format (as p4c writes it).
    P4info,
    /// The device config a P4Runtime controller sends in SetForwardingPipelineConfig: the
    /// program preprocessed, with its flags (see koi_runtime::program).
    DeviceConfig,
    /// The parsed program's syntax tree (for debugging the frontend).
    Ast,
}

#[derive(Args, Debug)]
pub struct CompileArgs {
    #[command(flatten)]
    pub source: SourceArgs,
    /// What to print.
    #[arg(long, value_enum, default_value = "ir")]
    pub emit: Emit,
}

pub fn run(args: &CompileArgs) -> ExitCode {
    match run_frontend(&args.source, true) {
        Outcome::Io(msg) => {
            eprintln!("koi: {msg}");
            ExitCode::from(2)
        }
        Outcome::Checked {
            sm,
            diags,
            program,
            checked,
        } => {
            print_diagnostics(&sm, &diags);
            if diags.has_errors() {
                return ExitCode::from(1);
            }
            match args.emit {
                Emit::Ast => println!("{program:#?}"),
                Emit::DeviceConfig => {
                    let flags = koi_runtime::Flags {
                        include: args.source.include.clone(),
                        define: args.source.define.clone(),
                        externs: None,
                    };
                    match koi_runtime::Program::compile_file(&args.source.file, &flags) {
                        Ok(p) => {
                            use std::io::Write;
                            let mut out = std::io::stdout().lock();
                            if out
                                .write_all(&p.device_config)
                                .and_then(|()| out.flush())
                                .is_err()
                            {
                                return ExitCode::from(2);
                            }
                        }
                        Err(e) => {
                            eprint!("{e}");
                            return ExitCode::from(1);
                        }
                    }
                }
                Emit::Ir | Emit::P4info => {
                    let p = match koi_lower::lower(&program, &checked) {
                        Ok(p) => p,
                        Err(d) => {
                            print_diagnostics(&sm, &d);
                            return ExitCode::from(1);
                        }
                    };
                    if matches!(args.emit, Emit::Ir) {
                        print!("{p}");
                    } else {
                        match koi_p4info::generate(&p) {
                            Ok(info) => print!("{}", koi_p4info::to_text(&info)),
                            Err(e) => {
                                eprintln!("koi: {e}");
                                return ExitCode::from(1);
                            }
                        }
                    }
                }
            }
            ExitCode::SUCCESS
        }
    }
}
