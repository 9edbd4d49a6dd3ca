//! P4Runtime P4Info generation from koi's IR, reproducing what p4c writes for the same
//! program: same objects, names, aliases, ids, annotations and `type_info`.
//!
//! ```text
//! koi_ir::Pipeline ──generate()──► koi_proto::p4info::P4Info ──to_text()──► text format
//! ```
//!
//! [`generate`] reads only the control-plane side of the IR ([`koi_ir::types::Preamble`]s,
//! table keys and properties, action parameters, extern kinds and type arguments, value sets,
//! digests, controller headers, the [`koi_ir::types::TypeTable`], package annotations) plus,
//! to decide whether `type_info` is present, whether controls call v1model extern functions.
//! Problems (bad or repeated `@id`s, repeated names, dangling references, malformed
//! annotations) are all collected into one [`P4InfoError`].
//!
//! # Conventions (p4c's; `koi_proto`'s crate documentation has the golden evidence)
//!
//! - **Names** are the IR's preamble names (lowering computes p4c's fully qualified names);
//!   an action's is its control-plane name, so the specialisations of one action (a
//!   directional parameter bound per table) are one P4Info action, which every table using
//!   one of them refers to.
//!   **Aliases** are the shortest unique suffixes over every symbol p4c collects (hidden
//!   objects and unused direct resources too, controller headers by header type name, only
//!   the actions p4c keeps; `symbols.rs`). **Ids** are
//!   p4c's: `@id`s first, else the Jenkins hash of the name, probing per prefix in name order;
//!   controller headers are hashed under their header type's name.
//! - **Annotations** (`annotations.rs`): unstructured ones as p4c prints them, minus `@name`,
//!   `@id`, `@brief`, `@description` and the ones a message represents as fields; structured
//!   ones in `structured_annotations`; `@brief`/`@description` in `doc`. `@hidden` tables,
//!   actions, controller headers and packet metadata fields are left out (they still get
//!   ids).
//! - **Field ids** (match fields, parameters, metadata, value set fields) come from p4c's
//!   field id allocator (`fields.rs`); a table's `selector` keys take an id but are not listed.
//! - **Tables** (`tables.rs`): `const_default_action_id` for `const default_action`,
//!   `initial_default_action` always (arguments as big-endian bytes of the parameter's P4Info
//!   width), `size` (0 means p4c's default 1024), implementation, direct counter then direct
//!   meter, `NOTIFY_CONTROL` idle timeout, `is_const_table`, `has_initial_entries`.
//! - **Externs** (`resources.rs`): action profiles and selectors (`table_ids` sorted by table
//!   name; `max_group_size` and size semantics from annotations, on selectors only), counters,
//!   meters and registers (index type from the architecture's type parameter), direct
//!   counters and meters only when a table uses them, digests (annotated only as PSA
//!   instances), value sets, controller packet metadata.
//! - **Types** (`types.rs`): `type_info` lists the named types referred to; a user `type`
//!   gives `type_name` and its translated width, a serializable enum no `type_name`, a plain
//!   enum a `type_name` and no width. `type_info` is present exactly when p4c creates it
//!   (`package.rs`): a table, an extern instance, a table action with parameters, a controller
//!   header with fields, a PSA digest, or (v1model) an extern function call in a control.
//! - **`pkg_info`** (`package.rs`): `arch`, `@pkginfo(...)` fields,
//!   `@platform_property(...)`, the package's other annotations and documentation.
//!
//! # What the IR must say (for lowering)
//!
//! - Actions: P4Info lists the ones tables refer to or controls call (`CallAction` in a
//!   control body), which is what p4c's frontend leaves; parameters only for table actions
//!   (`usage.rs`). Other actions in the arena are ignored, so an action called from an apply
//!   block must stay a `CallAction` (or be otherwise referenced) to be listed. Tables without
//!   `default_action` carry the implicit `@defaultonly NoAction`; `NoAction` keeps its
//!   `@noWarn("unused")`. The order of the arenas is the order of the text.
//! - Widths are P4 widths (a `type` with `@p4runtime_translation` keeps its own width in the
//!   IR; P4Info's width comes from the translation). `type_name` on keys, parameters and
//!   metadata names the first user `type` (after `typedef`s) or the (serializable) enum.
//! - A value set of `bit<W>` has one field with an empty name.
//! - Extern `type_args` are the source's type arguments (the counter/meter/register index
//!   type, the register cell type).

mod annotations;
mod error;
mod fields;
mod package;
mod resources;
mod symbols;
mod tables;
mod types;
mod usage;

use koi_ir::pipeline::Pipeline;
use koi_ir::types::Annotation;
use koi_proto::ids::Prefix;
use koi_proto::p4info::{P4Info, Preamble};

pub use error::{P4InfoError, Problem};
pub use koi_proto::p4info;

use crate::error::Problem as P;
use crate::symbols::Symbols;
use crate::types::TypeInfoBuilder;
use crate::usage::ActionUse;

/// The P4Info of `pipeline`, or every problem that prevents a correct one (duplicate or
/// malformed `@id`s, duplicate names, references to missing objects, malformed annotations).
pub fn generate(pipeline: &Pipeline) -> Result<P4Info, P4InfoError> {
    let mut g = Gen::new(pipeline);
    let mut info = P4Info {
        pkg_info: g.pkg_info(),
        tables: g.tables(),
        actions: g.actions(),
        action_profiles: g.action_profiles(),
        controller_packet_metadata: g.controller_headers(),
        value_sets: g.value_sets(),
        digests: g.digests(),
        ..P4Info::default()
    };
    g.counters_meters_registers(&mut info);
    g.check_unique_names(&info);
    let mut problems = g.problems;
    problems.append(&mut g.types.problems);
    if !problems.is_empty() {
        return Err(P4InfoError { problems });
    }
    let types = g.types.info;
    if g.needs_type_info || types != p4info::P4TypeInfo::default() {
        info.type_info = Some(types);
    }
    Ok(info)
}

/// The P4Info in text format, as p4c writes it (`--p4runtime-files x.txtpb`).
pub fn to_text(info: &P4Info) -> String {
    koi_proto::p4info_to_text(info)
}

/// Generation state: the pipeline, its symbols, `type_info` being built, problems found.
pub(crate) struct Gen<'p> {
    p: &'p Pipeline,
    symbols: Symbols,
    types: TypeInfoBuilder<'p>,
    problems: Vec<P>,
    /// Which actions are listed, with which parameters.
    uses: ActionUse,
    /// Whether p4c would have created `type_info` (see the crate documentation).
    needs_type_info: bool,
}

/// Whether an object is annotated `@hidden` (P4Info leaves it out).
pub(crate) fn hidden(anns: &[Annotation]) -> bool {
    anns.iter().any(|a| a.name == "hidden")
}

impl<'p> Gen<'p> {
    fn new(p: &'p Pipeline) -> Gen<'p> {
        let mut problems = Vec::new();
        let uses = ActionUse::new(p);
        let symbols = Symbols::new(p, &uses, &mut problems);
        Gen {
            p,
            symbols,
            types: TypeInfoBuilder::new(&p.types, &p.errors),
            problems,
            needs_type_info: package::creates_type_info(p, &uses),
            uses,
        }
    }

    /// The P4Info preamble of an IR object of kind `prefix`; `skip` names annotations the
    /// object's P4Info message represents otherwise.
    fn preamble(&self, prefix: Prefix, pre: &koi_ir::types::Preamble, skip: &[&str]) -> Preamble {
        let converted = annotations::convert(&pre.annotations, skip);
        Preamble {
            id: self.symbols.id(prefix, &pre.name),
            name: pre.name.clone(),
            alias: self.symbols.alias(&pre.name),
            annotations: converted.annotations,
            structured_annotations: converted.structured,
            doc: annotations::doc(&pre.annotations),
            ..Preamble::default()
        }
    }

    /// Reports every name used by two objects of one P4Info kind.
    fn check_unique_names(&mut self, info: &P4Info) {
        fn names<'a, T>(xs: &'a [T], pre: impl Fn(&'a T) -> &'a Option<Preamble>) -> Vec<&'a str> {
            xs.iter()
                .filter_map(|x| pre(x).as_ref().map(|p| p.name.as_str()))
                .collect()
        }
        let lists: [(&'static str, Vec<&str>); 11] = [
            ("table", names(&info.tables, |x| &x.preamble)),
            ("action", names(&info.actions, |x| &x.preamble)),
            (
                "action profile",
                names(&info.action_profiles, |x| &x.preamble),
            ),
            ("counter", names(&info.counters, |x| &x.preamble)),
            (
                "direct counter",
                names(&info.direct_counters, |x| &x.preamble),
            ),
            ("meter", names(&info.meters, |x| &x.preamble)),
            ("direct meter", names(&info.direct_meters, |x| &x.preamble)),
            (
                "controller packet metadata",
                names(&info.controller_packet_metadata, |x| &x.preamble),
            ),
            ("value set", names(&info.value_sets, |x| &x.preamble)),
            ("register", names(&info.registers, |x| &x.preamble)),
            ("digest", names(&info.digests, |x| &x.preamble)),
        ];
        for (kind, list) in lists {
            let mut seen = std::collections::HashSet::new();
            let mut reported = std::collections::HashSet::new();
            for n in list {
                if !seen.insert(n) && reported.insert(n) {
                    self.problems.push(P::DuplicateName {
                        kind,
                        name: n.to_string(),
                    });
                }
            }
        }
    }
}
