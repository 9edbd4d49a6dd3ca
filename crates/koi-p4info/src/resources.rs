//! Extern instances (action profiles and selectors, counters, meters, registers, direct
//! counters and meters), digests, parser value sets and controller packet metadata.
//!
//! - Action profiles and selectors: `size` from the constructor, `with_selector`, `table_ids`
//!   of every table whose implementation it is (sorted by table name, as p4c's `std::set`);
//!   on selectors `@max_group_size(n)` sets `max_group_size` and
//!   `@selector_size_semantics("sum_of_weights" | "sum_of_members")` the size semantics
//!   (`@max_member_weight(n)` for the latter). Those three annotations are not copied.
//! - Counters and meters: the unit (`packets`, `bytes`, `packets_and_bytes`), `size`, and
//!   `index_type_name` when the index type parameter (v1model from 20200408: the first; psa:
//!   `Counter`'s second, `Meter`'s first) is a user `type`. Registers: the cell type's spec,
//!   `size`, index type from the second type parameter.
//! - Direct counters and meters appear only when a table uses them (p4c adds them while
//!   adding the table), with `direct_table_id`.
//! - Value sets: one unnamed EXACT field for a `bit<W>` element (the IR's single field with an
//!   empty name), else one field per struct member with its `@match` kind (`@match` is not
//!   copied).
//! - Controller packet metadata: named by `@controller_header`'s argument, alias the same,
//!   fields numbered over all header fields, `@hidden` ones left out.

use koi_ir::externs::{CounterUnit, Extern, ExternKind, MeterUnit};
use koi_ir::ids::ExternId;
use koi_ir::pipeline::Architecture;
use koi_proto::ids::Prefix;
use koi_proto::p4info::{
    self, ActionProfile, ControllerPacketMetadata, Counter, CounterSpec, DirectCounter,
    DirectMeter, Meter, MeterSpec, Register, ValueSet, action_profile, controller_packet_metadata,
    counter_spec, match_field, meter_spec,
};

use crate::error::Problem;
use crate::{Gen, annotations, fields, hidden};

/// Annotations an action profile's P4Info represents as fields.
const SELECTOR_ANNOTATIONS: [&str; 3] = [
    "max_group_size",
    "selector_size_semantics",
    "max_member_weight",
];

fn counter_spec(unit: CounterUnit) -> CounterSpec {
    let unit = match unit {
        CounterUnit::Packets => counter_spec::Unit::Packets,
        CounterUnit::Bytes => counter_spec::Unit::Bytes,
        CounterUnit::PacketsAndBytes => counter_spec::Unit::Both,
    };
    CounterSpec { unit: unit as i32 }
}

fn meter_spec(unit: MeterUnit) -> MeterSpec {
    let unit = match unit {
        MeterUnit::Packets => meter_spec::Unit::Packets,
        MeterUnit::Bytes => meter_spec::Unit::Bytes,
    };
    MeterSpec {
        unit: unit as i32,
        ..MeterSpec::default()
    }
}

fn int64(v: u64) -> i64 {
    i64::try_from(v).unwrap_or(i64::MAX)
}

fn int32(v: u64) -> i32 {
    i32::try_from(v).unwrap_or(i32::MAX)
}

impl Gen<'_> {
    /// The tables whose `pick` property is `e`, as (name, id), sorted by name; `@hidden` ones
    /// only with `hidden_too` (p4c maps action profiles to every table, but adds direct
    /// resources while adding a non-hidden table).
    fn tables_using(
        &self,
        e: ExternId,
        hidden_too: bool,
        pick: impl Fn(&koi_ir::table::Table) -> Option<ExternId>,
    ) -> Vec<(String, u32)> {
        let mut out: Vec<(String, u32)> = self
            .p
            .tables
            .values()
            .filter(|t| pick(t) == Some(e) && (hidden_too || !hidden(&t.preamble.annotations)))
            .map(|t| {
                let n = t.preamble.name.clone();
                let id = self.symbols.id(Prefix::Table, &n);
                (n, id)
            })
            .collect();
        out.sort();
        out.dedup();
        out
    }

    fn annotation_int(&mut self, e: &Extern, name: &str) -> Option<i32> {
        let a = e.preamble.annotation(name)?;
        let v = annotations::int_arg(a).and_then(|v| i32::try_from(v).ok());
        if v.is_none() {
            self.problems.push(Problem::BadAnnotation {
                owner: format!("action profile {}", e.preamble.name),
                annotation: annotations::to_string(a),
                expected: "an integer",
            });
        }
        v
    }

    /// Action profiles and action selectors.
    pub(crate) fn action_profiles(&mut self) -> Vec<ActionProfile> {
        let p = self.p;
        let mut out = Vec::new();
        for (id, e) in p.externs.iter() {
            let (size, with_selector) = match e.kind {
                ExternKind::ActionProfile { size } => (size, false),
                ExternKind::ActionSelector { size, .. } => (size, true),
                _ => continue,
            };
            let mut ap = ActionProfile {
                preamble: Some(self.preamble(
                    Prefix::ActionProfile,
                    &e.preamble,
                    &SELECTOR_ANNOTATIONS,
                )),
                table_ids: self
                    .tables_using(id, true, |t| t.implementation)
                    .into_iter()
                    .map(|(_, id)| id)
                    .collect(),
                with_selector,
                size: int64(size),
                ..ActionProfile::default()
            };
            if with_selector {
                ap.max_group_size = self.annotation_int(e, "max_group_size").unwrap_or(0);
                ap.selector_size_semantics = self.size_semantics(e);
            }
            out.push(ap);
        }
        out
    }

    fn size_semantics(&mut self, e: &Extern) -> Option<action_profile::SelectorSizeSemantics> {
        use action_profile::{SelectorSizeSemantics as S, SumOfMembers, SumOfWeights};
        let a = e.preamble.annotation("selector_size_semantics")?;
        match annotations::string_arg(a).as_deref() {
            Some("sum_of_weights") => Some(S::SumOfWeights(SumOfWeights {})),
            Some("sum_of_members") => Some(S::SumOfMembers(SumOfMembers {
                max_member_weight: self.annotation_int(e, "max_member_weight").unwrap_or(0),
            })),
            _ => {
                self.problems.push(Problem::BadAnnotation {
                    owner: format!("action profile {}", e.preamble.name),
                    annotation: annotations::to_string(a),
                    expected: "\"sum_of_weights\" or \"sum_of_members\"",
                });
                None
            }
        }
    }

    /// The table using direct resource `e` (its P4Info id), or `None` when no table does.
    fn direct_table(&mut self, e: ExternId, kind: &'static str) -> Option<u32> {
        let p = self.p;
        let using = self.tables_using(e, false, |t| {
            if kind == "direct counter" {
                t.direct_counter
            } else {
                t.direct_meter
            }
        });
        if using.len() > 1 {
            self.problems.push(Problem::SharedDirectResource {
                kind,
                name: p
                    .externs
                    .get(e)
                    .map(|x| x.preamble.name.clone())
                    .unwrap_or_default(),
                tables: using.iter().map(|(n, _)| n.clone()).collect(),
            });
        }
        using.first().map(|(_, id)| *id)
    }

    /// The `index_type_name` of an indexed extern whose index type is type argument `index`.
    fn index_type(&mut self, e: &Extern, index: usize) -> Option<p4info::P4NamedType> {
        let owner = format!("extern {}", e.preamble.name);
        let ty = e.type_args.get(index)?;
        self.types.index_type_name(ty, &owner)
    }

    /// Counters, meters, registers, and the direct counters and meters tables use.
    pub(crate) fn counters_meters_registers(&mut self, info: &mut p4info::P4Info) {
        let p = self.p;
        let psa = p.arch == Architecture::Psa;
        for (id, e) in p.externs.iter() {
            match e.kind {
                ExternKind::Counter { size, unit, .. } => {
                    let index_type_name = self.index_type(e, usize::from(psa));
                    info.counters.push(Counter {
                        preamble: Some(self.preamble(Prefix::Counter, &e.preamble, &[])),
                        spec: Some(counter_spec(unit)),
                        size: int64(size),
                        index_type_name,
                    });
                }
                ExternKind::Meter { size, unit, .. } => {
                    let index_type_name = self.index_type(e, 0);
                    info.meters.push(Meter {
                        preamble: Some(self.preamble(Prefix::Meter, &e.preamble, &[])),
                        spec: Some(meter_spec(unit)),
                        size: int64(size),
                        index_type_name,
                    });
                }
                ExternKind::Register { size, elem, .. } => {
                    let owner = format!("register {}", e.preamble.name);
                    let cell = match e.type_args.first() {
                        Some(t) => t.clone(),
                        None => koi_ir::types::P4Type::Bit(elem.width()),
                    };
                    let type_spec = Some(self.types.spec(&cell, &owner));
                    let index_type_name = self.index_type(e, 1);
                    info.registers.push(Register {
                        preamble: Some(self.preamble(Prefix::Register, &e.preamble, &[])),
                        type_spec,
                        size: int32(size),
                        index_type_name,
                    });
                }
                ExternKind::DirectCounter { unit } => {
                    if let Some(direct_table_id) = self.direct_table(id, "direct counter") {
                        info.direct_counters.push(DirectCounter {
                            preamble: Some(self.preamble(Prefix::DirectCounter, &e.preamble, &[])),
                            spec: Some(counter_spec(unit)),
                            direct_table_id,
                        });
                    }
                }
                ExternKind::DirectMeter { unit } => {
                    if let Some(direct_table_id) = self.direct_table(id, "direct meter") {
                        info.direct_meters.push(DirectMeter {
                            preamble: Some(self.preamble(Prefix::DirectMeter, &e.preamble, &[])),
                            spec: Some(meter_spec(unit)),
                            direct_table_id,
                        });
                    }
                }
                _ => {}
            }
        }
    }

    /// Digests, once per name (several `digest<T>()` calls are one digest), with the type
    /// spec of their data. A PSA `Digest` instance carries its annotations; a v1model
    /// `digest()` call has none (p4c gives it none).
    pub(crate) fn digests(&mut self) -> Vec<p4info::Digest> {
        let p = self.p;
        let annotated = p.arch == Architecture::Psa;
        let mut seen = std::collections::HashSet::new();
        p.digests
            .values()
            .filter(|d| seen.insert(d.preamble.name.as_str()))
            .map(|d| {
                let owner = format!("digest {}", d.preamble.name);
                let mut preamble = self.preamble(Prefix::Digest, &d.preamble, &[]);
                if !annotated {
                    preamble.annotations.clear();
                    preamble.structured_annotations.clear();
                    preamble.doc = None;
                }
                p4info::Digest {
                    preamble: Some(preamble),
                    type_spec: Some(self.types.spec(&d.ty, &owner)),
                }
            })
            .collect()
    }

    /// Parser value sets.
    pub(crate) fn value_sets(&mut self) -> Vec<ValueSet> {
        let p = self.p;
        let mut out = Vec::new();
        for v in p.value_sets.values() {
            let owner = format!("value set {}", v.preamble.name);
            let r#match = match v.fields.as_slice() {
                [f] if f.name.is_empty() => vec![p4info::MatchField {
                    id: 1,
                    bitwidth: i32::try_from(f.width).unwrap_or(i32::MAX),
                    r#match: Some(match_field::Match::MatchType(
                        match_field::MatchType::Exact as i32,
                    )),
                    ..Default::default()
                }],
                fields => {
                    for f in fields {
                        if crate::tables::match_kind(&f.kind).is_none() {
                            self.problems.push(Problem::UnsupportedMatchKind {
                                owner: owner.clone(),
                                kind: f.kind.to_string(),
                            });
                        }
                    }
                    self.match_fields(&owner, fields.iter(), false, &["match"])
                }
            };
            out.push(ValueSet {
                preamble: Some(self.preamble(Prefix::ValueSet, &v.preamble, &[])),
                r#match,
                size: i32::try_from(v.size).unwrap_or(i32::MAX),
            });
        }
        out
    }

    /// Controller packet metadata (`packet_in`, `packet_out`), one per annotated header type.
    pub(crate) fn controller_headers(&mut self) -> Vec<ControllerPacketMetadata> {
        let p = self.p;
        let mut out = Vec::new();
        for h in &p.controller_headers {
            if hidden(&h.preamble.annotations) {
                continue;
            }
            let owner = format!("controller header {}", h.type_name);
            let named: Vec<(&str, Option<u32>)> =
                h.fields.iter().map(|f| (f.name.as_str(), f.id)).collect();
            let ids = fields::field_ids(&owner, &named, &mut self.problems);
            let mut metadata = Vec::new();
            for (f, id) in h.fields.iter().zip(ids) {
                if hidden(&f.annotations) {
                    continue;
                }
                let c = self
                    .types
                    .constrained(f.width, f.type_name.as_deref(), &owner);
                let anns = annotations::convert(&f.annotations, &[]);
                metadata.push(controller_packet_metadata::Metadata {
                    id,
                    name: f.name.clone(),
                    annotations: anns.annotations,
                    structured_annotations: anns.structured,
                    bitwidth: c.bitwidth,
                    type_name: c.type_name,
                    ..Default::default()
                });
            }
            let mut preamble = self.preamble(Prefix::ControllerHeader, &h.preamble, &[]);
            preamble.id = self.symbols.id(Prefix::ControllerHeader, &h.type_name);
            preamble.alias = h.preamble.name.clone();
            out.push(ControllerPacketMetadata {
                preamble: Some(preamble),
                metadata,
            });
        }
        out
    }
}
