//! Lowering: a checked P4-16 program (the AST of `koi-syntax` and the side tables of
//! `koi-sema`) to koi's IR, a [`koi_ir::Pipeline`].
//!
//! # Steps
//!
//! 1. **Architecture** ([`arch`]): `main`'s package type selects the architecture (v1model's
//!    `V1Switch`, ubpf's `ubpf`, PSA's `PSA_Switch` with its two pipeline packages
//!    ([`psa`]), eBPF's `ebpfFilter`, XDP's `xdp`). Each package argument is a block
//!    instance (`MyIngress()`, named after its type, or a top-level instance, named after the
//!    instance); constructor arguments are bound as constants or instances.
//! 2. **PHV**: one shared storage per architecture parameter (headers, user metadata, standard
//!    metadata), allocated from the type of the first block that has it ([`loc`]): structs are
//!    flattened, headers, stacks and unions become PHV headers (with the lookup-stage hint of
//!    a `@koi_stage(N)` on the instance, an enclosing struct field, or the header type); a
//!    stack of unions is its unions plus a next-index slot, its run-time indices expanded
//!    into a branch per element ([`ustack`]); an array of bits inside a header (`bit<8>
//!    arr[16]`) is its elements as consecutive fields (a run-time index reads through a
//!    choice among them and writes each element it names); the standard
//!    metadata fields become the pipeline's intrinsics. Every local and temporary
//!    gets its own slots, and each block instance its own locals.
//! 3. **Blocks**: each role's block is lowered with its parameters bound to the shared
//!    storage. Controls become CFGs ([`stmt`], [`control`]); parsers become state graphs
//!    ([`parser`]), `if` split into `select` states. Sub-controls and sub-parsers are inlined
//!    (arguments that are plain locations aliased, others copied in); functions and actions
//!    with directional parameters are inlined with explicit copy-in/copy-out ([`call`]);
//!    other direct action calls stay `CallAction`s.
//! 4. **Expressions** ([`expr`]): constants come from sema's folding ([`consts`]); operators
//!    take their signed/unsigned variant from the operand types; implicit casts are applied;
//!    a run-time value cast to `int` becomes a signed value of at least 64 bits (exact while
//!    its arithmetic fits there); aggregate assignment and equality are per slot; enums and
//!    errors become codes.
//! 5. **Objects**: tables ([`table`]), actions, extern instances, digests, field lists, value
//!    sets, control-plane types and controller headers ([`externs`]) are created on first use,
//!    once per block instance, with p4c's control-plane names and annotations ([`names`]). A
//!    register of a struct keeps each cell packed (the fields' bits in order, the first
//!    highest): `write` packs its argument, `read` unpacks into its out argument.
//!    What p4c's front end removes as unused where the control plane would see it
//!    ([`unused`]) is left out: dead calls of `@noSideEffects` extern methods, then the
//!    instances of a `typedef`'d extern type nothing else refers to.
//! 6. **Order** ([`order`]): actions and tables are renumbered in p4c's order (by block
//!    instance, then declaration), which P4Info follows.
//! 7. **Verification**: in debug builds [`koi_ir::verify`] runs on the result; a violation is
//!    an internal error (a koi bug).
//!
//! Unsupported constructs give an error diagnostic `koi does not support X yet` at their span;
//! lowering never panics.
//!
//! # Example
//!
//! ```text
//! control MyIngress(inout headers hdr, inout metadata meta,
//!                   inout standard_metadata_t standard_metadata) {
//!     action drop() { mark_to_drop(standard_metadata); }
//!     table t { key = { hdr.eth.dst: exact; } actions = { drop; } }
//!     apply { if (hdr.eth.isValid()) { t.apply(); } }
//! }
//! ```
//!
//! becomes an action `MyIngress.drop` (`mark_to_drop()`), a table `MyIngress.t` with key
//! `hdr.eth.dst` (exact) and actions `MyIngress.drop` and `@defaultonly NoAction` (the
//! default), and the control
//!
//! ```text
//! bb0: branch isValid(hdr.eth) bb1 bb2
//! bb1: apply MyIngress.t -> bb3
//! bb3: goto bb4
//! bb2: goto bb4
//! bb4: return
//! ```

pub mod arch;
mod builtin;
pub mod call;
pub mod consts;
pub mod control;
mod ctx;
pub mod expr;
pub mod externs;
pub mod loc;
pub mod names;
mod native;
pub mod order;
pub mod parser;
pub mod psa;
mod sink;
pub mod stmt;
pub mod table;
pub mod unused;
mod ustack;

use koi_ir::Pipeline;
use koi_syntax::ast::Program;
use koi_syntax::{Diagnostic, Diagnostics};

/// Lowers a checked program to a pipeline, or returns the diagnostics explaining why it cannot.
pub fn lower(program: &Program, checked: &koi_sema::Checked) -> Result<Pipeline, Diagnostics> {
    let mut diags = Diagnostics::default();
    match lower_inner(program, checked) {
        Ok(p) => {
            if cfg!(debug_assertions)
                && let Err(errs) = koi_ir::verify(&p)
            {
                for e in errs.iter().take(20) {
                    diags.push(Diagnostic::global(format!(
                        "internal error: lowering produced invalid IR: {e}"
                    )));
                }
                return Err(diags);
            }
            Ok(p)
        }
        Err(d) => {
            diags.push(*d);
            Err(diags)
        }
    }
}

fn lower_inner(program: &Program, checked: &koi_sema::Checked) -> ctx::R<Pipeline> {
    let Some(main) = &checked.main else {
        return Err(Box::new(Diagnostic::global(
            "the program has no `main` to compile",
        )));
    };
    let package = checked
        .decl(main.package)
        .map(|d| d.name.clone())
        .unwrap_or_default();
    let main_decl = program.decls.iter().find(|d| {
        d.name()
            .is_some_and(|n| checked.decl_at(n.span) == Some(main.decl))
    });
    let Some(main_decl) = main_decl else {
        return ctx::internal(koi_syntax::Span::DUMMY, "main declaration not found");
    };
    let arch = match arch::arch_of(&package) {
        None => {
            return ctx::unsupported(
                main_decl.span,
                format!("the architecture of package {package}"),
            );
        }
        Some(a) => a,
    };
    // An instance applied twice with different arguments needs its parameters in storage of
    // its own, which is known only once every application has been seen: then lowering
    // starts over (each round adds instances; a program has finitely many).
    let mut shared = std::collections::HashSet::new();
    let mut l = loop {
        let mut l = ctx::Lowerer::new(program, checked, Pipeline::new(arch));
        l.shared_params = shared.clone();
        l.lower_main(main_decl)?;
        if l.rebind.is_subset(&shared) {
            break l;
        }
        shared.extend(std::mem::take(&mut l.rebind));
    };
    let (ak, tk) = (
        std::mem::take(&mut l.action_keys),
        std::mem::take(&mut l.table_keys),
    );
    order::sort(&mut l.p, &ak, &tk);
    Ok(l.p)
}
