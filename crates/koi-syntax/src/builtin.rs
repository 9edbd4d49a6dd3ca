//! koi's built-in architecture headers (`core.p4`, `v1model.p4`, `ubpf_model.p4`, `psa.p4`,
//! `ebpf_model.p4`, `xdp_model.p4`), compiled into the binary so that `#include <v1model.p4>`
//! works without any `-I`.
//!
//! They are declaration-compatible with p4c's headers of the same names: programs written for
//! p4c compile unchanged. They take precedence over `-I` directories for `<...>` includes,
//! because they declare exactly what koi's engine implements. `bmv2/psa.p4`, the name p4c's
//! PSA programs include for BMv2, is koi's `psa.p4`.

/// The text of a built-in header, by the name used in `#include <NAME>`.
pub fn header(name: &str) -> Option<&'static str> {
    match name {
        "core.p4" => Some(include_str!("../../../p4include/core.p4")),
        "v1model.p4" => Some(include_str!("../../../p4include/v1model.p4")),
        "ubpf_model.p4" => Some(include_str!("../../../p4include/ubpf_model.p4")),
        "psa.p4" | "bmv2/psa.p4" => Some(include_str!("../../../p4include/psa.p4")),
        "ebpf_model.p4" => Some(include_str!("../../../p4include/ebpf_model.p4")),
        "xdp_model.p4" => Some(include_str!("../../../p4include/xdp_model.p4")),
        _ => None,
    }
}

/// Names of all built-in headers.
pub const HEADERS: &[&str] = &[
    "core.p4",
    "v1model.p4",
    "ubpf_model.p4",
    "psa.p4",
    "bmv2/psa.p4",
    "ebpf_model.p4",
    "xdp_model.p4",
];
