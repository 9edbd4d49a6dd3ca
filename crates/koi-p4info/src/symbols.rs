//! The control-plane symbols of a pipeline, their ids and their aliases, as p4c's
//! `P4RuntimeSymbolTable` computes them.
//!
//! Symbols are collected from the whole pipeline, including objects P4Info then leaves out
//! (`@hidden` tables and actions, direct counters and meters no table uses), because p4c
//! collects them too and they take part in id probing and alias uniqueness; only the actions
//! p4c's frontend keeps count (see `usage.rs`). A controller
//! header's symbol is its header *type* name (`packet_in_header_t`): that name is hashed for
//! its id and counts for the other objects' aliases, while its P4Info name and alias are the
//! `@controller_header` argument.
//!
//! Ids come from [`koi_proto::ids::allocate`] (hash of the name, `@id`s first, probing in
//! name order per prefix); aliases from [`koi_proto::ids::aliases`] over all symbol names.

use std::collections::HashMap;

use koi_ir::externs::ExternKind;
use koi_ir::pipeline::Pipeline;
use koi_proto::ids::{Prefix, Symbol, aliases, allocate};

use crate::error::Problem;
use crate::usage::ActionUse;

/// The P4Info prefix of an extern instance, if P4Info describes that kind of extern.
pub(crate) fn extern_prefix(kind: &ExternKind) -> Option<Prefix> {
    match kind {
        ExternKind::Counter { .. } => Some(Prefix::Counter),
        ExternKind::DirectCounter { .. } => Some(Prefix::DirectCounter),
        ExternKind::Meter { .. } => Some(Prefix::Meter),
        ExternKind::DirectMeter { .. } => Some(Prefix::DirectMeter),
        ExternKind::Register { .. } => Some(Prefix::Register),
        ExternKind::ActionProfile { .. } | ExternKind::ActionSelector { .. } => {
            Some(Prefix::ActionProfile)
        }
        ExternKind::Checksum16
        | ExternKind::Hash { .. }
        | ExternKind::Checksum { .. }
        | ExternKind::InternetChecksum
        | ExternKind::Random { .. }
        | ExternKind::Other => None,
    }
}

/// The P4Info kind of a prefix, for messages.
pub(crate) fn kind_name(prefix: Prefix) -> &'static str {
    match prefix {
        Prefix::Action => "action",
        Prefix::Table => "table",
        Prefix::ValueSet => "value set",
        Prefix::ControllerHeader => "controller header",
        Prefix::ActionProfile => "action profile",
        Prefix::Counter => "counter",
        Prefix::DirectCounter => "direct counter",
        Prefix::Meter => "meter",
        Prefix::DirectMeter => "direct meter",
        Prefix::Register => "register",
        Prefix::Digest => "digest",
        Prefix::Other(_) => "extern",
    }
}

/// Every symbol of the pipeline, in p4c's collection order (controls' listed actions, then
/// tables, externs, value sets, digests, controller headers; duplicates keep the first `@id`).
pub(crate) fn collect(p: &Pipeline, uses: &ActionUse) -> Vec<Symbol> {
    let sym = |prefix: Prefix, name: &str, id: Option<u32>| Symbol {
        prefix,
        name: name.to_string(),
        id_annotation: id,
    };
    let mut out = Vec::new();
    // One symbol per control-plane name (specialisations share theirs).
    let mut seen = std::collections::HashSet::new();
    for a in p.actions.values() {
        let name = a.control_plane_name();
        if uses.listed_name(name) && seen.insert(name) {
            out.push(sym(Prefix::Action, name, a.preamble.id));
        }
    }
    for t in p.tables.values() {
        out.push(sym(Prefix::Table, &t.preamble.name, t.preamble.id));
    }
    for e in p.externs.values() {
        if let Some(prefix) = extern_prefix(&e.kind) {
            out.push(sym(prefix, &e.preamble.name, e.preamble.id));
        }
    }
    for v in p.value_sets.values() {
        out.push(sym(Prefix::ValueSet, &v.preamble.name, v.preamble.id));
    }
    for d in p.digests.values() {
        out.push(sym(Prefix::Digest, &d.preamble.name, d.preamble.id));
    }
    for h in &p.controller_headers {
        out.push(sym(Prefix::ControllerHeader, &h.type_name, h.preamble.id));
    }
    out
}

/// Ids and aliases of all symbols.
#[derive(Clone, Debug, Default)]
pub(crate) struct Symbols {
    ids: HashMap<(Prefix, String), u32>,
    aliases: HashMap<String, String>,
}

impl Symbols {
    /// Allocates ids and aliases; `@id` problems are reported and the object gets a hashed id.
    pub fn new(p: &Pipeline, uses: &ActionUse, problems: &mut Vec<Problem>) -> Symbols {
        let symbols = collect(p, uses);
        let ids = match allocate(&symbols) {
            Ok(ids) => ids,
            Err(e) => {
                for error in e.errors {
                    let kind = match &error {
                        koi_proto::ids::IdError::WrongPrefix { index, .. }
                        | koi_proto::ids::IdError::DuplicateId { index, .. }
                        | koi_proto::ids::IdError::Exhausted { index, .. } => symbols
                            .get(*index)
                            .map_or("object", |s| kind_name(s.prefix)),
                    };
                    problems.push(Problem::Id { kind, error });
                }
                e.ids
            }
        };
        let names: Vec<&str> = symbols.iter().map(|s| s.name.as_str()).collect();
        let alias_list = aliases(&names);
        let mut out = Symbols::default();
        for ((s, id), alias) in symbols.iter().zip(ids).zip(alias_list) {
            out.ids.entry((s.prefix, s.name.clone())).or_insert(id);
            out.aliases.entry(s.name.clone()).or_insert(alias);
        }
        out
    }

    /// The id of the symbol `name` of kind `prefix` (0 if unknown).
    pub fn id(&self, prefix: Prefix, name: &str) -> u32 {
        self.ids
            .get(&(prefix, name.to_string()))
            .copied()
            .unwrap_or(0)
    }

    /// The alias of `name` (the name itself if unknown).
    pub fn alias(&self, name: &str) -> String {
        self.aliases
            .get(name)
            .cloned()
            .unwrap_or_else(|| name.to_string())
    }
}
