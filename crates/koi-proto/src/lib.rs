//! koi's protobuf definitions and P4Info tooling.
//!
//! - Generated prost types for koi's own `.proto` files (in `proto/`, compiled by `build.rs`
//!   with protox, no `protoc` needed): [`p4info`] (package `p4.config.v1`: P4Info and P4 type
//!   specs), [`p4runtime`] (package `p4.v1`: the P4Runtime messages, and the gRPC service's
//!   tonic server `p4_runtime_server` and client `p4_runtime_client`), `p4::tmp`
//!   (`P4DeviceConfig`) and [`google_rpc`] (`google.rpc.Status`). The files are wire- and
//!   text-compatible with the P4Runtime 1.5 protos (checked by `tests/proto_compat.rs`).
//! - Protobuf text format in and out: [`p4info_from_text`], [`p4info_to_text`], and the generic
//!   [`text::message_from_text`] / [`text::message_to_text`], over the embedded descriptor set
//!   [`FILE_DESCRIPTOR_SET`] ([`descriptor_pool`]).
//! - [`compare()`]: entity-by-entity P4Info comparison with readable difference lines.
//! - [`ids`]: p4c-compatible id allocation and aliases.
//!
//! # p4c's P4Info conventions, as observed in the golden files
//!
//! What p4c (commit 34b86e9b of its test data) writes in the 445 `*.p4info.txtpb` goldens of
//! the corpus, for the future P4Info generator. Counts are over those files.
//!
//! **File.** Two comment lines `# proto-file: p4/config/v1/p4info.proto` and
//! `# proto-message: p4.config.v1.P4Info`, a blank line, then C++ `TextFormat` output
//! ([`text`] reproduces it byte for byte on all 445 files). Sections appear in field-number
//! order: `pkg_info`, `tables`, `actions`, `action_profiles`, `counters`, `direct_counters`,
//! `meters`, `direct_meters`, `controller_packet_metadata`, `value_sets`, `registers`,
//! `digests`, `type_info`. No golden has `externs`.
//!
//! **`pkg_info`.** `arch` is `"v1model"` (318 files), `"psa"` (115) or `"ubpf"` (10); the two
//! programs without `main` (issue407-2/-3) have no `pkg_info` at all. The other fields appear in
//! one golden only, from `@pkginfo(...)` and `@platform_property(...)` annotations
//! (`pkginfo_annotation.p4`: name, version, organization, contact, url, platform_properties).
//!
//! **Names.** `preamble.name` is the fully qualified control-plane name: the instance path of
//! the enclosing control/parser instances plus the object's name, joined by `.`
//! (`ingress.bd`, `MyIngress.inner.inner_table` for table `inner_table` in local instance
//! `inner` of control instance `MyIngress`). A control instantiated anonymously in the package
//! (`V1Switch(..., IngressI(), ...)`) contributes its type name. `@name("x")` replaces the
//! object's own last component (`@name("inner_table") table table1` → `….inner_table`; a
//! control's own `@name` does not change the path, its instance name does); `@name(".x")`
//! (leading dot) makes the name absolute, `x`, with the dot dropped. Top-level actions used by
//! controls (`NoAction` from core.p4, psa.p4's `send_to_port`) are named without a prefix.
//! An action profile/selector constructed in place in a table's `implementation` property is
//! named by the property's `@name` (`@name("ap") implementation = action_profile(...)` → `ap`,
//! no control prefix); one declared as an instance is named like any instance
//! (`IngressI.as`). Non-ASCII names are printed as octal escapes of their UTF-8 bytes.
//!
//! **Aliases** are the shortest unique suffix of whole `.`-components among all preamble names
//! of the P4Info, all kinds together ([`ids::aliases`]; 1572/1572 match): `ingress.on_miss`
//! stays whole when `egress.on_miss` exists, `p1.ipv4_ethertypes` when `p2.ipv4_ethertypes`
//! exists. Controller packet metadata: alias = name (`packet_in`, `packet_out`).
//!
//! **Ids.** `(prefix << 24) | (jenkins_one_at_a_time(name) & 0xffffff)` for all 1572 objects,
//! hashing `preamble.name`, except controller packet metadata, hashed under the name of the
//! header *type* carrying `@controller_header` (see [`ids`]). No golden uses `@id` and no two
//! names collide, so the probing rule is from p4c's source, not from the goldens.
//!
//! **`annotations`** hold the source annotations as written (`"@my_anno_4"`, `"@__debug"`,
//! `"@min_width(32)"`, `"@mode(\"fair\")"`, `"@noWarn(\"unused\")"`) minus the ones p4c
//! consumes: no golden preamble contains `@name` or `@id`. `NoAction` (core.p4) and psa.p4's
//! actions carry `@noWarn("unused")` (191 actions). Controller packet metadata carry
//! `@controller_header("packet_in")`. A key element's annotations go on its match field
//! (`@hidden` in graph-annotationless-key). Action refs carry the annotations written on the
//! entry of the `actions` list (`@defaultonly`, and a misspelt `@defaut_only` kept verbatim,
//! which does not set a scope).
//!
//! **Tables.**
//! - `match_fields`: key elements in key order, ids 1, 2, 3, … (all 424 tables); an element
//!   with match kind `selector` is left out (action_profile-bmv2's `indirect_ws`). The name is the
//!   key element's `@name` if any (`48w1: exact @name("key")` → `key`), else the expression's
//!   source text (`hdr.ipv4.dstAddr`, `meta.data[0].da`, `hdr.ipv4.hdrChecksum[4:0]`,
//!   `h.h[h.i.index].a`), with `.isValid()` written `.$valid$` (bitwidth 1); a struct field
//!   declared with `@name(".x")` restarts the name at `x` (switch_p4_16.p4:
//!   `meta.ingress_metadata.ifindex` → `ingress_metadata.ifindex`). `bitwidth` is the width of
//!   the key; `type_name` names a user `type` (59 match fields, 61 params, 43 packet metadata),
//!   and then `bitwidth` is the translated width, or unset when the type translates to a string
//!   (`sdn_string`, issue2283_1) or is a non-serializable enum (psa-meter1's
//!   `PSA_MeterColor_t` param, listed in `type_info.enums`). Match types seen: EXACT 519,
//!   TERNARY 168, LPM 30, OPTIONAL 5, RANGE 3; never `other_match_type`.
//! - `action_refs` in the order of the `actions` property. When the table has no
//!   `default_action` and `NoAction` is not in its list, p4c appends `NoAction` as the last ref
//!   with annotation `@defaultonly` and scope `DEFAULT_ONLY` (all 171 such tables) and makes it
//!   the default. `@defaultonly` in the source gives the same pair. `TABLE_ONLY`/`@tableonly`
//!   does not occur in the goldens.
//! - `initial_default_action { action_id }` is present on every table (the declared default,
//!   else `NoAction`), with `arguments` when the default action has some: `param_id` and the
//!   value as big-endian bytes of the full parameter width, not shortened (`bit<9>` 0 →
//!   `"\000\000"`, `bit<32>` 10 → `"\000\000\000\n"`). `const_default_action_id` is set
//!   exactly when the source says `const default_action` (44/44), equal to the initial
//!   default's id.
//! - `size`: the `size` property evaluated (`1024 * 1024` → 1048576), else **1024** (all 261
//!   tables without one).
//! - `implementation_id`: the action profile/selector; its `table_ids` list every table using
//!   it. `direct_resource_ids`: the table's direct counter and/or direct meter, whose
//!   `direct_table_id` points back.
//! - `idle_timeout_behavior: NOTIFY_CONTROL` for v1model `support_timeout = true` and PSA
//!   `psa_idle_timeout = PSA_IdleTimeout_t.NOTIFY_CONTROL` (2 tables), otherwise unset.
//! - `const entries` → `is_const_table: true` and `has_initial_entries: true` (18 tables);
//!   non-const `entries` → `has_initial_entries: true` only (9).
//!
//! **Actions.** Every action left after p4c's frontend, table-referenced or not (78 listed
//! actions are used by no table, only called from apply blocks); actions p4c removed as unused
//! are absent. A top-level action used by several controls appears once. `params`: the
//! directionless parameters in order, ids 1, 2, … (all 1013 actions), with `bitwidth` and, for
//! user `type`s, `type_name`.
//!
//! **Action profiles.** `size` from the constructor, `with_selector: true` for selectors;
//! `max_group_size` and `sum_of_weights {}` from `@max_group_size`/`@selector_size_semantics`
//! annotations (selector only).
//!
//! **Counters / meters.** `spec.unit` from the counter/meter type (`packets` → PACKETS,
//! `bytes` → BYTES, `packets_and_bytes` → BOTH; 38, 20 and 12 specs); `size` for indexed ones;
//! no meter prints a `type` (all TWO_RATE_THREE_COLOR, the default). `index_type_name` (a user
//! `type` as index) appears twice: a counter (psa-custom-type-counter-index) and a register
//! (psa-example-register2).
//!
//! **Registers.** `type_spec` of the cell (`bitstring { bit { bitwidth: 16 } }`), `size`.
//!
//! **Digests.** v1model `digest<T>(..., data)`: named after `T` (`mac_learn_digest`,
//! `test_digest_t`) with `type_spec { struct { name: "T" } }` and `T` in `type_info.structs`;
//! an untyped list `{ a }` gives a name like `digest_0` and a `tuple` type spec. PSA `Digest<T>`
//! instances are named by instance path (`MyID.digest`).
//!
//! **Value sets.** `match` fields with ids 1, …; a value set of a plain `bit<W>` has one
//! unnamed field of that width, EXACT; `size` from the declaration.
//!
//! **Controller packet metadata.** One entry per header type annotated
//! `@controller_header("packet_in" | "packet_out")`, named by the annotation argument;
//! `metadata` are the header's fields in order, ids 1, 2, …, with `bitwidth` and `type_name`.
//!
//! **`type_info`** lists the named types referenced by the above (structs, headers,
//! serializable enums, `new_types` with `original_type` or `translated_type`, `error`). It is
//! present in 267 files (`type_info {}` when empty) and absent in 178, which the sections alone
//! do not predict (20 files have an empty `type_info` and nothing else). p4c's source creates it
//! whenever it processes a table or any extern instance. [`compare()`] treats absent and empty
//! as equal.

use std::sync::LazyLock;

use prost_reflect::DescriptorPool;

pub mod compare;
mod diff;
pub mod ids;
pub mod text;

pub use compare::compare;
pub use text::{p4info_from_text, p4info_to_text};

/// Types generated from koi's protos, in their protobuf package hierarchy (the short aliases
/// [`p4info`], [`p4runtime`] and [`google_rpc`] are the usual way in).
#[allow(missing_docs, clippy::all)]
pub mod p4 {
    /// Package `p4.v1`: P4Runtime messages.
    pub mod v1 {
        include!(concat!(env!("OUT_DIR"), "/p4.v1.rs"));
    }
    /// Package `p4.tmp`: the `P4DeviceConfig` wrapper around a target's device config.
    pub mod tmp {
        include!(concat!(env!("OUT_DIR"), "/p4.tmp.rs"));
    }
    /// Package `p4.config`.
    pub mod config {
        /// Package `p4.config.v1`: P4Info and P4 type specs.
        pub mod v1 {
            include!(concat!(env!("OUT_DIR"), "/p4.config.v1.rs"));
        }
    }
}

/// Types generated from koi's own protos.
#[allow(missing_docs, clippy::all)]
pub mod koi {
    /// Package `koi.pof`.
    pub mod pof {
        /// Package `koi.pof.v1`: the POF controller channel (docs/pof.md).
        pub mod v1 {
            include!(concat!(env!("OUT_DIR"), "/koi.pof.v1.rs"));
        }
    }
}

/// Types generated from `google/rpc/status.proto`.
#[allow(missing_docs, clippy::all)]
pub mod google {
    /// Package `google.rpc`.
    pub mod rpc {
        include!(concat!(env!("OUT_DIR"), "/google.rpc.rs"));
    }
}

pub use google::rpc as google_rpc;
pub use koi::pof::v1 as pof;
pub use p4::config::v1 as p4info;
pub use p4::v1 as p4runtime;

/// The encoded `FileDescriptorSet` of koi's protos and their imports
/// (`google/protobuf/any.proto`), without source info.
pub const FILE_DESCRIPTOR_SET: &[u8] =
    include_bytes!(concat!(env!("OUT_DIR"), "/koi_proto_descriptor.bin"));

static POOL: LazyLock<Result<DescriptorPool, String>> =
    LazyLock::new(|| DescriptorPool::decode(FILE_DESCRIPTOR_SET).map_err(|e| e.to_string()));

/// The descriptor pool of [`FILE_DESCRIPTOR_SET`], built once.
pub fn descriptor_pool() -> Result<&'static DescriptorPool, Error> {
    POOL.as_ref().map_err(|e| Error::Descriptor(e.clone()))
}

/// Errors of text-format parsing and printing.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Error {
    /// The embedded descriptor set could not be loaded (a build problem, not an input one).
    #[error("koi-proto's embedded descriptors are unusable: {0}")]
    Descriptor(String),
    /// No message of that full name in koi's protos.
    #[error("no protobuf message named '{0}'")]
    UnknownMessage(String),
    /// The text is not valid text format for the message. `line` and `column` are 1-based
    /// (0 when unknown).
    #[error("{line}:{column}: {message}")]
    Parse {
        /// Line of the error.
        line: usize,
        /// Column of the error, in characters.
        column: usize,
        /// What is wrong.
        message: String,
    },
    /// A message could not be converted between its generated and reflected forms.
    #[error("cannot decode message: {0}")]
    Decode(String),
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pool_has_all_packages() {
        let pool = descriptor_pool().expect("embedded pool loads");
        for name in [
            "p4.config.v1.P4Info",
            "p4.config.v1.P4TypeInfo",
            "p4.v1.WriteRequest",
            "p4.v1.P4Data",
            "google.rpc.Status",
            "google.protobuf.Any",
        ] {
            assert!(pool.get_message_by_name(name).is_some(), "{name}");
        }
        assert!(pool.get_service_by_name("p4.v1.P4Runtime").is_some());
    }
}
