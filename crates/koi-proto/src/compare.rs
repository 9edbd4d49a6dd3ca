//! Semantic comparison of two P4Infos, entity by entity.
//!
//! [`compare`] returns one readable line per difference, `expected` first:
//!
//! ```text
//! table ingress.t: match field 2 'hdr.x' bitwidth 8 != 16
//! table ingress.t: action ref 'ingress.drop' missing
//! action ingress.a: unexpected
//! ```
//!
//! Top-level entities of each kind are matched by `preamble.name`; `missing` means present only
//! in `expected`, `unexpected` present only in `actual`. Ids that refer to other objects
//! (`action_refs[].id`, `const_default_action_id`, `initial_default_action.action_id`,
//! `implementation_id`, `direct_resource_ids`, `table_ids`, `direct_table_id`) are compared by
//! the *name* of the object they refer to on each side, so one wrong id shows up once (on the
//! object's own preamble) instead of at every reference.
//!
//! Order-insensitive, because p4c's order carries no meaning for P4Runtime:
//! - the entity lists themselves (matched by name) and `externs` (matched by `extern_type_id`,
//!   instances by name);
//! - `Table.action_refs` (matched by action name), `Table.direct_resource_ids`,
//!   `ActionProfile.table_ids`, `initial_default_action.arguments` (matched by `param_id`);
//! - every `annotations` list of strings (compared as multisets);
//! - `type_info.error.members` (compared as a set: P4Runtime names errors, it never numbers them);
//! - `type_info` maps (by key, as protobuf maps are unordered).
//!
//! Matched by id, with their order checked separately (one `... order [..] != [..]` line):
//! `Table.match_fields` and `ValueSet.match` (p4c: key order), `Action.params` (parameter
//! order) and `ControllerPacketMetadata.metadata` (header field order). Their order is what p4c
//! prints and mirrors the program, but clients address them by id.
//!
//! Everything else (type specs, struct/header members, enum members, structured annotations,
//! documentation, `Any` payloads) is compared structurally and in order.

use std::fmt::Display;

use prost::Message;

use crate::diff::diff_message;

mod pairs;
use crate::p4info::{
    Action, ActionProfile, ActionRef, ControllerPacketMetadata, Counter, Digest, DirectCounter,
    DirectMeter, Extern, MatchField, Meter, P4Info, P4TypeInfo, Preamble, Register, Table,
    TableActionCall, ValueSet, action, action_ref, controller_packet_metadata, match_field, table,
};
use crate::text::push_escaped;

/// The parts of a match field or an action parameter that [`Cmp::described`] compares.
struct Described<'a> {
    annotations: &'a [String],
    type_name: &'a Option<crate::p4info::P4NamedType>,
    doc: &'a Option<crate::p4info::Documentation>,
    structured: &'a [crate::p4info::StructuredAnnotation],
}

/// A [`Described`] view of a match field or an action parameter (same field names).
macro_rules! described {
    ($x:expr) => {
        Described {
            annotations: &$x.annotations,
            type_name: &$x.type_name,
            doc: &$x.doc,
            structured: &$x.structured_annotations,
        }
    };
}
use pairs::{Names, Pair, pair_up};

/// Lists every difference between `expected` and `actual`; empty when they are equivalent.
pub fn compare(expected: &P4Info, actual: &P4Info) -> Vec<String> {
    let mut c = Cmp {
        en: Names::new(expected),
        an: Names::new(actual),
        out: Vec::new(),
    };
    c.pkg_info(expected, actual);
    entities(
        &mut c,
        "table",
        &expected.tables,
        &actual.tables,
        |x| &x.preamble,
        Cmp::table,
    );
    entities(
        &mut c,
        "action",
        &expected.actions,
        &actual.actions,
        |x| &x.preamble,
        Cmp::action,
    );
    let (e, a) = (&expected.action_profiles, &actual.action_profiles);
    entities(
        &mut c,
        "action profile",
        e,
        a,
        |x| &x.preamble,
        Cmp::action_profile,
    );
    let (e, a) = (&expected.counters, &actual.counters);
    entities(&mut c, "counter", e, a, |x| &x.preamble, Cmp::counter);
    let (e, a) = (&expected.direct_counters, &actual.direct_counters);
    entities(
        &mut c,
        "direct counter",
        e,
        a,
        |x| &x.preamble,
        Cmp::direct_counter,
    );
    entities(
        &mut c,
        "meter",
        &expected.meters,
        &actual.meters,
        |x| &x.preamble,
        Cmp::meter,
    );
    let (e, a) = (&expected.direct_meters, &actual.direct_meters);
    entities(
        &mut c,
        "direct meter",
        e,
        a,
        |x| &x.preamble,
        Cmp::direct_meter,
    );
    let (e, a) = (
        &expected.controller_packet_metadata,
        &actual.controller_packet_metadata,
    );
    entities(
        &mut c,
        "controller packet metadata",
        e,
        a,
        |x| &x.preamble,
        Cmp::packet_metadata,
    );
    let (e, a) = (&expected.value_sets, &actual.value_sets);
    entities(&mut c, "value set", e, a, |x| &x.preamble, Cmp::value_set);
    let (e, a) = (&expected.registers, &actual.registers);
    entities(&mut c, "register", e, a, |x| &x.preamble, Cmp::register);
    entities(
        &mut c,
        "digest",
        &expected.digests,
        &actual.digests,
        |x| &x.preamble,
        Cmp::digest,
    );
    c.externs(&expected.externs, &actual.externs);
    c.type_info(expected.type_info.as_ref(), actual.type_info.as_ref());
    c.out
}

fn entities<T>(
    c: &mut Cmp,
    kind: &str,
    e: &[T],
    a: &[T],
    pre: impl Fn(&T) -> &Option<Preamble>,
    each: impl Fn(&mut Cmp, &str, &T, &T),
) {
    let name = |x: &T| pre(x).as_ref().map(|p| p.name.clone()).unwrap_or_default();
    for p in pair_up(e, a, name) {
        match p {
            Pair::Both(x, y) => {
                let ctx = format!("{kind} {}", name(x));
                c.preamble(&ctx, pre(x), pre(y));
                each(c, &ctx, x, y);
            }
            Pair::Missing(x) => c.out.push(format!("{kind} {}: missing", name(x))),
            Pair::Unexpected(y) => c.out.push(format!("{kind} {}: unexpected", name(y))),
            Pair::Duplicate(side, x) => {
                c.out
                    .push(format!("{kind} {}: duplicate in {side}", name(x)));
            }
        }
    }
}

fn quote(s: &str) -> String {
    let mut out = String::new();
    push_escaped(&mut out, s.as_bytes());
    out
}

fn hex(id: &u32) -> String {
    format!("{id:#010x}")
}

fn match_kind(m: &Option<match_field::Match>) -> String {
    match m {
        None => "(unset)".to_string(),
        Some(match_field::Match::MatchType(t)) => match match_field::MatchType::try_from(*t) {
            Ok(t) => t.as_str_name().to_string(),
            Err(_) => t.to_string(),
        },
        Some(match_field::Match::OtherMatchType(s)) => quote(s),
    }
}

fn scope(s: i32) -> String {
    action_ref::Scope::try_from(s).map_or_else(|_| s.to_string(), |x| x.as_str_name().into())
}

fn idle(s: i32) -> String {
    table::IdleTimeoutBehavior::try_from(s)
        .map_or_else(|_| s.to_string(), |x| x.as_str_name().into())
}

/// Elements matched by a numeric id within their parent (match fields, params, metadata).
trait IdNamed {
    fn id_name(&self) -> (u32, &str);
}

impl IdNamed for MatchField {
    fn id_name(&self) -> (u32, &str) {
        (self.id, &self.name)
    }
}

impl IdNamed for action::Param {
    fn id_name(&self) -> (u32, &str) {
        (self.id, &self.name)
    }
}

impl IdNamed for controller_packet_metadata::Metadata {
    fn id_name(&self) -> (u32, &str) {
        (self.id, &self.name)
    }
}

struct Cmp {
    en: Names,
    an: Names,
    out: Vec<String>,
}

impl Cmp {
    /// `ctx: what e != a` when `e != a`.
    fn ne<T: PartialEq + Display>(&mut self, ctx: &str, what: &str, e: T, a: T) {
        if e != a {
            self.out.push(format!("{ctx}: {what} {e} != {a}"));
        }
    }

    fn ne_str(&mut self, ctx: &str, what: &str, e: &str, a: &str) {
        if e != a {
            self.out
                .push(format!("{ctx}: {what} {} != {}", quote(e), quote(a)));
        }
    }

    /// Structural comparison of one sub-message (`full_name` is its protobuf name).
    fn msg<M: Message + PartialEq + std::fmt::Debug>(
        &mut self,
        ctx: &str,
        what: &str,
        full_name: &str,
        e: &M,
        a: &M,
    ) {
        let mut lines = Vec::new();
        diff_message(full_name, what, e, a, &mut lines);
        self.out
            .extend(lines.into_iter().map(|l| format!("{ctx}: {l}")));
    }

    fn opt<M: Message + PartialEq + std::fmt::Debug + Default>(
        &mut self,
        ctx: &str,
        what: &str,
        full_name: &str,
        e: &Option<M>,
        a: &Option<M>,
    ) {
        let lead = if what.is_empty() {
            format!("{ctx}:")
        } else {
            format!("{ctx}: {what}")
        };
        match (e, a) {
            (Some(_), None) => self.out.push(format!("{lead} set != unset")),
            (None, Some(_)) => self.out.push(format!("{lead} unset != set")),
            (Some(x), Some(y)) => self.msg(ctx, what, full_name, x, y),
            (None, None) => {}
        }
    }

    fn list<M: Message + PartialEq + std::fmt::Debug>(
        &mut self,
        ctx: &str,
        what: &str,
        full_name: &str,
        e: &[M],
        a: &[M],
    ) {
        for i in 0..e.len().max(a.len()) {
            let w = format!("{what}[{i}]");
            match (e.get(i), a.get(i)) {
                (Some(x), Some(y)) => self.msg(ctx, &w, full_name, x, y),
                (Some(_), None) => self.out.push(format!("{ctx}: {w} missing")),
                (None, Some(_)) => self.out.push(format!("{ctx}: {w} unexpected")),
                (None, None) => {}
            }
        }
    }

    /// The annotations, type name and documentation that match fields and action parameters
    /// both carry.
    fn described(&mut self, ctx: &str, head: &str, e: Described<'_>, a: Described<'_>) {
        let at = |w: &str| format!("{head} {w}");
        self.annotations(ctx, &at("annotations"), e.annotations, a.annotations);
        let named = "p4.config.v1.P4NamedType";
        self.opt(ctx, &at("type_name"), named, e.type_name, a.type_name);
        let doc = "p4.config.v1.Documentation";
        self.opt(ctx, &at("doc"), doc, e.doc, a.doc);
        let sa = "p4.config.v1.StructuredAnnotation";
        self.list(
            ctx,
            &at("structured_annotations"),
            sa,
            e.structured,
            a.structured,
        );
    }

    /// Annotation strings as multisets.
    fn annotations(&mut self, ctx: &str, what: &str, e: &[String], a: &[String]) {
        let (mut es, mut as_) = (e.to_vec(), a.to_vec());
        es.sort();
        as_.sort();
        if es != as_ {
            let show = |v: &[String]| v.iter().map(|s| quote(s)).collect::<Vec<_>>().join(", ");
            self.out
                .push(format!("{ctx}: {what} [{}] != [{}]", show(&es), show(&as_)));
        }
    }

    /// Sets of referenced objects, by name.
    fn refs(&mut self, ctx: &str, what: &str, e: &[u32], a: &[u32]) {
        let mut es: Vec<String> = e.iter().map(|&i| self.en.of(i)).collect();
        let mut as_: Vec<String> = a.iter().map(|&i| self.an.of(i)).collect();
        es.sort();
        as_.sort();
        if es != as_ {
            self.out.push(format!(
                "{ctx}: {what} [{}] != [{}]",
                es.join(", "),
                as_.join(", ")
            ));
        }
    }

    /// A reference to one object, by name.
    fn one_ref(&mut self, ctx: &str, what: &str, e: u32, a: u32) {
        let (x, y) = (self.en.of(e), self.an.of(a));
        self.ne(ctx, what, x, y);
    }

    fn preamble(&mut self, ctx: &str, e: &Option<Preamble>, a: &Option<Preamble>) {
        let (e, a) = (e.clone().unwrap_or_default(), a.clone().unwrap_or_default());
        self.ne(ctx, "id", hex(&e.id), hex(&a.id));
        self.ne_str(ctx, "alias", &e.alias, &a.alias);
        self.annotations(ctx, "annotations", &e.annotations, &a.annotations);
        const LOC: &str = "p4.config.v1.SourceLocation";
        let (el, al) = (&e.annotation_locations, &a.annotation_locations);
        self.list(ctx, "annotation_locations", LOC, el, al);
        self.opt(ctx, "doc", "p4.config.v1.Documentation", &e.doc, &a.doc);
        const SA: &str = "p4.config.v1.StructuredAnnotation";
        let (es, as_) = (&e.structured_annotations, &a.structured_annotations);
        self.list(ctx, "structured_annotations", SA, es, as_);
    }

    fn pkg_info(&mut self, e: &P4Info, a: &P4Info) {
        let (mut e, mut a) = (e.pkg_info.clone(), a.pkg_info.clone());
        if let (Some(x), Some(y)) = (&mut e, &mut a) {
            let (ea, aa) = (
                std::mem::take(&mut x.annotations),
                std::mem::take(&mut y.annotations),
            );
            self.annotations("pkg_info", "annotations", &ea, &aa);
        }
        self.opt("pkg_info", "", "p4.config.v1.PkgInfo", &e, &a);
    }

    /// Lines for elements matched by id, plus one line if their order differs.
    fn by_id<T: IdNamed>(
        &mut self,
        ctx: &str,
        what: &str,
        e: &[T],
        a: &[T],
        each: impl Fn(&mut Self, &str, &str, &T, &T),
    ) {
        let id_name = T::id_name;
        for p in pair_up(e, a, |x| id_name(x).0) {
            let label = |x: &T| format!("{what} {} '{}'", id_name(x).0, id_name(x).1);
            match p {
                Pair::Both(x, y) => {
                    let l = label(x);
                    self.ne_str(ctx, &format!("{l} name"), id_name(x).1, id_name(y).1);
                    each(self, ctx, &l, x, y);
                }
                Pair::Missing(x) => self.out.push(format!("{ctx}: {} missing", label(x))),
                Pair::Unexpected(y) => self.out.push(format!("{ctx}: {} unexpected", label(y))),
                Pair::Duplicate(side, x) => {
                    self.out
                        .push(format!("{ctx}: {} duplicate in {side}", label(x)));
                }
            }
        }
        let (ei, ai): (Vec<u32>, Vec<u32>) = (
            e.iter().map(|x| id_name(x).0).collect(),
            a.iter().map(|x| id_name(x).0).collect(),
        );
        let (mut es, mut as_) = (ei.clone(), ai.clone());
        es.sort_unstable();
        as_.sort_unstable();
        if es == as_ && ei != ai {
            self.out
                .push(format!("{ctx}: {what} order {ei:?} != {ai:?}"));
        }
    }

    /// `head` names the field within `ctx`, e.g. `match field 1 "x"`.
    fn match_field(&mut self, ctx: &str, head: &str, e: &MatchField, a: &MatchField) {
        let at = |w: &str| format!("{head} {w}");
        self.ne(ctx, &at("bitwidth"), e.bitwidth, a.bitwidth);
        self.ne(
            ctx,
            &at("match"),
            match_kind(&e.r#match),
            match_kind(&a.r#match),
        );
        self.described(ctx, head, described!(e), described!(a));
    }

    fn match_fields(&mut self, ctx: &str, e: &[MatchField], a: &[MatchField]) {
        self.by_id(ctx, "match field", e, a, Self::match_field);
    }

    fn table(&mut self, ctx: &str, e: &Table, a: &Table) {
        self.match_fields(ctx, &e.match_fields, &a.match_fields);
        let (en, an) = (&self.en, &self.an);
        let mut pairs = Vec::new();
        // Key action refs by the referenced action's name on each side.
        let ek: Vec<(String, &ActionRef)> =
            e.action_refs.iter().map(|r| (en.of(r.id), r)).collect();
        let ak: Vec<(String, &ActionRef)> =
            a.action_refs.iter().map(|r| (an.of(r.id), r)).collect();
        for p in pair_up(&ek, &ak, |(n, _)| n.clone()) {
            pairs.push(match p {
                Pair::Both(x, y) => (x.0.clone(), Some(x.1), Some(y.1), ""),
                Pair::Missing(x) => (x.0.clone(), Some(x.1), None, "missing"),
                Pair::Unexpected(y) => (y.0.clone(), None, Some(y.1), "unexpected"),
                Pair::Duplicate(side, x) => (x.0.clone(), None, None, side),
            });
        }
        for (name, x, y, what) in pairs {
            let w = format!("action ref {name}");
            match (x, y) {
                (Some(x), Some(y)) => {
                    self.ne(ctx, &format!("{w} scope"), scope(x.scope), scope(y.scope));
                    let (ea, aa) = (&x.annotations, &y.annotations);
                    self.annotations(ctx, &format!("{w} annotations"), ea, aa);
                    let sa = "p4.config.v1.StructuredAnnotation";
                    let (es, as_) = (&x.structured_annotations, &y.structured_annotations);
                    self.list(ctx, &format!("{w} structured_annotations"), sa, es, as_);
                }
                (None, None) => self.out.push(format!("{ctx}: {w} duplicate in {what}")),
                _ => self.out.push(format!("{ctx}: {w} {what}")),
            }
        }
        let (ed, ad) = (e.const_default_action_id, a.const_default_action_id);
        self.one_ref(ctx, "const_default_action", ed, ad);
        self.initial_default(ctx, &e.initial_default_action, &a.initial_default_action);
        self.one_ref(
            ctx,
            "implementation",
            e.implementation_id,
            a.implementation_id,
        );
        let (er, ar) = (&e.direct_resource_ids, &a.direct_resource_ids);
        self.refs(ctx, "direct resources", er, ar);
        self.ne(ctx, "size", e.size, a.size);
        let (ei, ai) = (idle(e.idle_timeout_behavior), idle(a.idle_timeout_behavior));
        self.ne(ctx, "idle_timeout_behavior", ei, ai);
        self.ne(ctx, "is_const_table", e.is_const_table, a.is_const_table);
        self.ne(
            ctx,
            "has_initial_entries",
            e.has_initial_entries,
            a.has_initial_entries,
        );
        let any = "google.protobuf.Any";
        self.opt(
            ctx,
            "other_properties",
            any,
            &e.other_properties,
            &a.other_properties,
        );
    }

    fn initial_default(
        &mut self,
        ctx: &str,
        e: &Option<TableActionCall>,
        a: &Option<TableActionCall>,
    ) {
        let what = "initial_default_action";
        let (x, y) = match (e, a) {
            (Some(x), Some(y)) => (x, y),
            (Some(_), None) => return self.out.push(format!("{ctx}: {what} set != unset")),
            (None, Some(_)) => return self.out.push(format!("{ctx}: {what} unset != set")),
            (None, None) => return,
        };
        self.one_ref(ctx, what, x.action_id, y.action_id);
        for p in pair_up(&x.arguments, &y.arguments, |arg| arg.param_id) {
            let arg = |id: u32| format!("{what} argument {id}");
            match p {
                Pair::Both(u, v) if u.value != v.value => {
                    let (mut s, mut t) = (String::new(), String::new());
                    push_escaped(&mut s, &u.value);
                    push_escaped(&mut t, &v.value);
                    self.out
                        .push(format!("{ctx}: {} {s} != {t}", arg(u.param_id)));
                }
                Pair::Both(..) => {}
                Pair::Missing(u) => self.out.push(format!("{ctx}: {} missing", arg(u.param_id))),
                Pair::Unexpected(v) => {
                    self.out
                        .push(format!("{ctx}: {} unexpected", arg(v.param_id)));
                }
                Pair::Duplicate(side, u) => {
                    let l = arg(u.param_id);
                    self.out.push(format!("{ctx}: {l} duplicate in {side}"));
                }
            }
        }
    }

    fn param(&mut self, ctx: &str, head: &str, e: &action::Param, a: &action::Param) {
        let at = |w: &str| format!("{head} {w}");
        self.ne(ctx, &at("bitwidth"), e.bitwidth, a.bitwidth);
        self.described(ctx, head, described!(e), described!(a));
    }

    fn action(&mut self, ctx: &str, e: &Action, a: &Action) {
        self.by_id(ctx, "param", &e.params, &a.params, Self::param);
    }

    fn action_profile(&mut self, ctx: &str, e: &ActionProfile, a: &ActionProfile) {
        self.refs(ctx, "tables", &e.table_ids, &a.table_ids);
        self.ne(ctx, "with_selector", e.with_selector, a.with_selector);
        self.ne(ctx, "size", e.size, a.size);
        self.ne(ctx, "max_group_size", e.max_group_size, a.max_group_size);
        let (es, as_) = (&e.selector_size_semantics, &a.selector_size_semantics);
        if es != as_ {
            self.out
                .push(format!("{ctx}: selector_size_semantics {es:?} != {as_:?}"));
        }
        self.ne(
            ctx,
            "weights_disallowed",
            e.weights_disallowed,
            a.weights_disallowed,
        );
    }

    fn counter(&mut self, ctx: &str, e: &Counter, a: &Counter) {
        self.opt(ctx, "spec", "p4.config.v1.CounterSpec", &e.spec, &a.spec);
        self.ne(ctx, "size", e.size, a.size);
        let (ei, ai) = (&e.index_type_name, &a.index_type_name);
        self.opt(ctx, "index_type_name", "p4.config.v1.P4NamedType", ei, ai);
    }

    fn direct_counter(&mut self, ctx: &str, e: &DirectCounter, a: &DirectCounter) {
        self.opt(ctx, "spec", "p4.config.v1.CounterSpec", &e.spec, &a.spec);
        self.one_ref(ctx, "direct_table", e.direct_table_id, a.direct_table_id);
    }

    fn meter(&mut self, ctx: &str, e: &Meter, a: &Meter) {
        self.opt(ctx, "spec", "p4.config.v1.MeterSpec", &e.spec, &a.spec);
        self.ne(ctx, "size", e.size, a.size);
        let (ei, ai) = (&e.index_type_name, &a.index_type_name);
        self.opt(ctx, "index_type_name", "p4.config.v1.P4NamedType", ei, ai);
    }

    fn direct_meter(&mut self, ctx: &str, e: &DirectMeter, a: &DirectMeter) {
        self.opt(ctx, "spec", "p4.config.v1.MeterSpec", &e.spec, &a.spec);
        self.one_ref(ctx, "direct_table", e.direct_table_id, a.direct_table_id);
    }

    fn metadata(
        &mut self,
        ctx: &str,
        head: &str,
        e: &controller_packet_metadata::Metadata,
        a: &controller_packet_metadata::Metadata,
    ) {
        let at = |w: &str| format!("{head} {w}");
        self.ne(ctx, &at("bitwidth"), e.bitwidth, a.bitwidth);
        self.annotations(ctx, &at("annotations"), &e.annotations, &a.annotations);
        self.opt(
            ctx,
            &at("type_name"),
            "p4.config.v1.P4NamedType",
            &e.type_name,
            &a.type_name,
        );
        let sa = "p4.config.v1.StructuredAnnotation";
        let (es, as_) = (&e.structured_annotations, &a.structured_annotations);
        self.list(ctx, &at("structured_annotations"), sa, es, as_);
    }

    fn packet_metadata(
        &mut self,
        ctx: &str,
        e: &ControllerPacketMetadata,
        a: &ControllerPacketMetadata,
    ) {
        self.by_id(ctx, "metadata", &e.metadata, &a.metadata, Self::metadata);
    }

    fn value_set(&mut self, ctx: &str, e: &ValueSet, a: &ValueSet) {
        self.match_fields(ctx, &e.r#match, &a.r#match);
        self.ne(ctx, "size", e.size, a.size);
    }

    fn register(&mut self, ctx: &str, e: &Register, a: &Register) {
        const TS: &str = "p4.config.v1.P4DataTypeSpec";
        self.opt(ctx, "type_spec", TS, &e.type_spec, &a.type_spec);
        self.ne(ctx, "size", e.size, a.size);
        let (ei, ai) = (&e.index_type_name, &a.index_type_name);
        self.opt(ctx, "index_type_name", "p4.config.v1.P4NamedType", ei, ai);
    }

    fn digest(&mut self, ctx: &str, e: &Digest, a: &Digest) {
        const TS: &str = "p4.config.v1.P4DataTypeSpec";
        self.opt(ctx, "type_spec", TS, &e.type_spec, &a.type_spec);
    }

    fn externs(&mut self, e: &[Extern], a: &[Extern]) {
        for p in pair_up(e, a, |x| x.extern_type_id) {
            let label =
                |x: &Extern| format!("extern {} ({:#04x})", x.extern_type_name, x.extern_type_id);
            match p {
                Pair::Both(x, y) => {
                    let kind = label(x);
                    self.ne_str(
                        &kind,
                        "extern_type_name",
                        &x.extern_type_name,
                        &y.extern_type_name,
                    );
                    let kind = format!("{} instance", x.extern_type_name);
                    entities(
                        self,
                        &kind,
                        &x.instances,
                        &y.instances,
                        |i| &i.preamble,
                        |c, ctx, i, j| {
                            c.opt(ctx, "info", "google.protobuf.Any", &i.info, &j.info);
                        },
                    );
                }
                Pair::Missing(x) => self.out.push(format!("{}: missing", label(x))),
                Pair::Unexpected(y) => self.out.push(format!("{}: unexpected", label(y))),
                Pair::Duplicate(side, x) => {
                    self.out.push(format!("{}: duplicate in {side}", label(x)));
                }
            }
        }
    }

    fn type_info(&mut self, e: Option<&P4TypeInfo>, a: Option<&P4TypeInfo>) {
        let (mut e, mut a) = (e.cloned(), a.cloned());
        // Error members: a set (P4Runtime refers to errors by name only).
        let members = |t: &mut Option<P4TypeInfo>| {
            let mut m = t
                .as_mut()
                .and_then(|t| t.error.as_mut())
                .map(|err| std::mem::take(&mut err.members))
                .unwrap_or_default();
            m.sort();
            m.dedup();
            m
        };
        let (em, am) = (members(&mut e), members(&mut a));
        let only = |x: &[String], y: &[String]| -> Vec<String> {
            x.iter()
                .filter(|m| !y.contains(m))
                .map(|m| quote(m))
                .collect()
        };
        let (missing, unexpected) = (only(&em, &am), only(&am, &em));
        if !missing.is_empty() {
            self.out.push(format!(
                "type_info: error members missing: {}",
                missing.join(", ")
            ));
        }
        if !unexpected.is_empty() {
            let u = unexpected.join(", ");
            self.out
                .push(format!("type_info: error members unexpected: {u}"));
        }
        // An absent type_info and an empty one mean the same.
        let (e, a) = (e.unwrap_or_default(), a.unwrap_or_default());
        self.msg("type_info", "", "p4.config.v1.P4TypeInfo", &e, &a);
    }
}
