//! Compiles koi's `.proto` files (under `proto/`) with protox, a protobuf compiler written in
//! Rust, so that no system `protoc` is needed. Generates prost message types and the P4Runtime gRPC
//! service (tonic server and client) and writes the encoded `FileDescriptorSet` that the crate embeds for text format.

use std::path::PathBuf;

use prost::Message as _;

/// The proto files koi compiles, relative to `proto/`.
const PROTOS: &[&str] = &[
    "google/rpc/status.proto",
    "p4/config/v1/p4types.proto",
    "p4/config/v1/p4info.proto",
    "p4/v1/p4data.proto",
    "p4/v1/p4runtime.proto",
    "p4/tmp/p4config.proto",
    "koi/pof/v1/pof.proto",
];

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let root = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR")?).join("proto");
    println!("cargo:rerun-if-changed=proto");
    for p in PROTOS {
        println!("cargo:rerun-if-changed={}", root.join(p).display());
    }

    // Source info keeps the proto comments, which prost turns into doc comments.
    let fds = protox::Compiler::new([&root])?
        .include_imports(true)
        .include_source_info(true)
        .open_files(PROTOS)?
        .file_descriptor_set();

    // The embedded copy needs no comments; imports (google/protobuf/any.proto) stay in so
    // that the set is self-contained.
    let mut embedded = fds.clone();
    for f in &mut embedded.file {
        f.source_code_info = None;
    }
    let out = PathBuf::from(std::env::var("OUT_DIR")?);
    std::fs::write(
        out.join("koi_proto_descriptor.bin"),
        embedded.encode_to_vec(),
    )?;

    tonic_prost_build::configure()
        .build_server(true)
        .build_client(true)
        // Deterministic iteration for `type_info`'s maps.
        .btree_map(".")
        .compile_fds(fds)?;
    Ok(())
}
