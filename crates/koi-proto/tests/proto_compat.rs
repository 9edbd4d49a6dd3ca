//! koi's `.proto` files must be the P4Runtime interface exactly: this compiles the reference
//! P4Runtime protos with protox and compares their descriptors with the ones koi embeds —
//! packages, imports, messages, fields (name, number, label, type, type name, oneof, options),
//! enums and values, services and methods. Comments and file-level language options (Go/Java
//! package names) are not part of the interface and are ignored.
//!
//! The reference protos are found through `KOI_P4RUNTIME_PROTO`, else
//! `../../../shared/reference/p4runtime/proto` from this crate; when absent the test prints a
//! skip line and passes.

use std::path::{Path, PathBuf};

use prost::Message;
use prost_types::{DescriptorProto, EnumDescriptorProto, FileDescriptorProto, FileDescriptorSet};

const FILES: &[&str] = &[
    "google/rpc/status.proto",
    "p4/config/v1/p4types.proto",
    "p4/config/v1/p4info.proto",
    "p4/v1/p4data.proto",
    "p4/v1/p4runtime.proto",
];

fn reference_dir() -> Option<PathBuf> {
    let dir = match std::env::var_os("KOI_P4RUNTIME_PROTO") {
        Some(d) => PathBuf::from(d),
        None => {
            Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/reference/p4runtime/proto")
        }
    };
    if FILES.iter().all(|f| dir.join(f).is_file()) {
        Some(dir)
    } else {
        eprintln!(
            "SKIP: reference protos not found in {} (set KOI_P4RUNTIME_PROTO)",
            dir.display()
        );
        None
    }
}

fn normalize_enum(e: &mut EnumDescriptorProto) {
    e.value.sort_by_key(|v| v.number);
}

fn normalize_message(m: &mut DescriptorProto) {
    m.field.sort_by_key(|f| f.number);
    m.nested_type.sort_by(|a, b| a.name.cmp(&b.name));
    m.nested_type.iter_mut().for_each(normalize_message);
    m.enum_type.sort_by(|a, b| a.name.cmp(&b.name));
    m.enum_type.iter_mut().for_each(normalize_enum);
}

fn normalize(mut f: FileDescriptorProto) -> FileDescriptorProto {
    f.source_code_info = None;
    f.options = None;
    f.dependency.sort();
    f.message_type.sort_by(|a, b| a.name.cmp(&b.name));
    f.message_type.iter_mut().for_each(normalize_message);
    f.enum_type.sort_by(|a, b| a.name.cmp(&b.name));
    f.enum_type.iter_mut().for_each(normalize_enum);
    f
}

fn by_name(set: FileDescriptorSet, name: &str) -> Option<FileDescriptorProto> {
    set.file
        .into_iter()
        .find(|f| f.name() == name)
        .map(normalize)
}

#[test]
fn koi_protos_equal_the_p4runtime_interface() {
    let Some(dir) = reference_dir() else {
        return;
    };
    let reference = protox::compile(FILES, [&dir]).expect("reference protos compile");
    let koi = FileDescriptorSet::decode(koi_proto::FILE_DESCRIPTOR_SET).expect("embedded set");
    for file in FILES {
        let r = by_name(reference.clone(), file).expect("reference file");
        let k = by_name(koi.clone(), file).expect("koi file");
        assert_eq!(r.package, k.package, "{file}: package");
        assert_eq!(r.dependency, k.dependency, "{file}: imports");
        assert_eq!(
            r.message_type.len(),
            k.message_type.len(),
            "{file}: message count"
        );
        for (rm, km) in r.message_type.iter().zip(&k.message_type) {
            assert_eq!(rm, km, "{file}: message {}", rm.name());
        }
        assert_eq!(r.enum_type, k.enum_type, "{file}: enums");
        assert_eq!(r.service, k.service, "{file}: services");
        assert_eq!(r, k, "{file}");
    }
}
