//! `pkg_info`, and whether p4c would have created `type_info`.
//!
//! `pkg_info.arch` is the architecture's name (`v1model`, `psa`, `ubpf`). The package
//! instance's `@pkginfo(name = "...", version = "...", organization = "...", contact = "...",
//! url = "...")` sets those fields (and `arch`, which p4c lets the user override with a
//! warning); `@platform_property(multicast_group_table_size = n, ...)` sets
//! `platform_properties`; the package's other annotations are copied and `@brief` /
//! `@description` fill `doc`.
//!
//! p4c creates `type_info` as a side effect of processing a table, an extern instance, an
//! action parameter, a controller header field, a digest, or (v1model only) an extern
//! function call in a control's apply block or in an action, whether or not anything ends up
//! in it; [`creates_type_info`] mirrors that, so that an empty `type_info {}` is printed
//! exactly where p4c prints one.

use koi_ir::pipeline::{Architecture, Pipeline};
use koi_ir::stmt::Stmt;
use koi_proto::p4info::{PkgInfo, PlatformProperties};

use crate::annotations::{self, KvValue};
use crate::error::Problem;
use crate::usage::ActionUse;
use crate::{Gen, hidden};

/// Whether p4c would have created `type_info` for `p` (see the module documentation).
pub(crate) fn creates_type_info(p: &Pipeline, uses: &ActionUse) -> bool {
    let tables = p.tables.values().any(|t| !hidden(&t.preamble.annotations));
    let externs = !p.externs.is_empty() || (p.arch == Architecture::Psa && !p.digests.is_empty());
    let params = p.actions.iter().any(|(id, a)| {
        uses.in_table(id) && !hidden(&a.preamble.annotations) && !a.params.is_empty()
    });
    let headers = p.controller_headers.iter().any(|h| {
        !hidden(&h.preamble.annotations) && h.fields.iter().any(|f| !hidden(&f.annotations))
    });
    let calls = p.arch == Architecture::V1Model && {
        let actions = p.actions.iter().filter(|(id, _)| uses.runs(*id));
        let bodies = p
            .controls
            .values()
            .map(|c| &c.body)
            .chain(actions.map(|(_, a)| &a.body));
        bodies
            .flat_map(|b| b.blocks.values())
            .flat_map(|b| &b.stmts)
            .any(|s| matches!(s, Stmt::Builtin(_)))
    };
    tables || externs || params || headers || calls
}

impl Gen<'_> {
    /// `pkg_info` from the architecture and the package's annotations.
    pub(crate) fn pkg_info(&mut self) -> Option<PkgInfo> {
        let p = self.p;
        let anns = &p.annotations;
        let converted = annotations::convert(anns, &["pkginfo", "platform_property"]);
        let mut info = PkgInfo {
            arch: p.arch.name().to_string(),
            annotations: converted.annotations,
            structured_annotations: converted.structured,
            doc: annotations::doc(anns),
            ..PkgInfo::default()
        };
        for a in anns {
            let is_pkginfo = match a.name.as_str() {
                "pkginfo" => true,
                "platform_property" => false,
                _ => continue,
            };
            let Some(kvs) = annotations::key_values(a) else {
                self.bad(a, "key = value pairs");
                continue;
            };
            for (k, v) in kvs {
                if is_pkginfo {
                    let field = match k.as_str() {
                        "name" => &mut info.name,
                        "version" => &mut info.version,
                        "organization" => &mut info.organization,
                        "contact" => &mut info.contact,
                        "url" => &mut info.url,
                        "arch" => &mut info.arch,
                        _ => continue,
                    };
                    match v {
                        KvValue::Str(s) => *field = s,
                        _ => self.bad(a, "string values"),
                    }
                } else {
                    let props = info
                        .platform_properties
                        .get_or_insert_with(PlatformProperties::default);
                    let field = match k.as_str() {
                        "multicast_group_table_size" => &mut props.multicast_group_table_size,
                        "multicast_group_table_total_replicas" => {
                            &mut props.multicast_group_table_total_replicas
                        }
                        "multicast_group_table_max_replicas_per_entry" => {
                            &mut props.multicast_group_table_max_replicas_per_entry
                        }
                        _ => continue,
                    };
                    match v {
                        KvValue::Int(i) if i32::try_from(i).is_ok() => {
                            *field = i32::try_from(i).unwrap_or_default()
                        }
                        _ => self.bad(a, "integer values"),
                    }
                }
            }
        }
        Some(info)
    }

    fn bad(&mut self, a: &koi_ir::types::Annotation, expected: &'static str) {
        self.problems.push(Problem::BadAnnotation {
            owner: "package".to_string(),
            annotation: annotations::to_string(a),
            expected,
        });
    }
}
