//! Checks koi-proto against p4c's golden P4Info files (`samples/*.p4info.txtpb` of the corpus):
//! text-format parsing and round trip, `compare`, and id/alias allocation.
//!
//! The corpus is found through `KOI_CORPUS`, else `../../../shared/corpus` from this crate; when
//! it is absent every test prints a skip line and passes.

use std::path::{Path, PathBuf};

use koi_proto::compare;
use koi_proto::ids::{Prefix, Symbol, aliases, allocate};
use koi_proto::p4info::{P4Info, Preamble};
use koi_proto::{p4info_from_text, p4info_to_text};

fn corpus() -> Option<PathBuf> {
    let dir = match std::env::var_os("KOI_CORPUS") {
        Some(d) => PathBuf::from(d),
        None => Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/corpus"),
    };
    if dir.join("samples").is_dir() {
        Some(dir)
    } else {
        // Straight to stderr: the test harness swallows a passing test's output.
        let _ = std::io::Write::write_fmt(
            &mut std::io::stderr(),
            format_args!(
                "SKIP {}\n",
                format_args!("no corpus at {} (set KOI_CORPUS)", dir.display())
            ),
        );
        None
    }
}

/// Every golden P4Info file, sorted, with its text.
fn goldens() -> Vec<(PathBuf, String)> {
    let Some(dir) = corpus() else {
        return Vec::new();
    };
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir.join("samples"))
        .map(|rd| rd.filter_map(|e| e.ok().map(|e| e.path())).collect())
        .unwrap_or_default();
    files.retain(|p| p.to_string_lossy().ends_with(".p4info.txtpb"));
    files.sort();
    files
        .into_iter()
        .map(|p| {
            let text = std::fs::read_to_string(&p).unwrap_or_default();
            (p, text)
        })
        .collect()
}

fn short(p: &Path) -> String {
    p.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
}

#[test]
fn goldens_parse_round_trip_and_self_compare() {
    let files = goldens();
    if files.is_empty() {
        return;
    }
    let (mut identical, mut failures) = (0, Vec::new());
    for (path, text) in &files {
        let name = short(path);
        let p = match p4info_from_text(text) {
            Ok(p) => p,
            Err(e) => {
                failures.push(format!("{name}: parse: {e}"));
                continue;
            }
        };
        let printed = p4info_to_text(&p);
        if printed == *text {
            identical += 1;
        }
        match p4info_from_text(&printed) {
            Ok(q) if q == p => {}
            Ok(_) => failures.push(format!("{name}: reparsed message differs")),
            Err(e) => failures.push(format!("{name}: reparse: {e}")),
        }
        let diffs = compare(&p, &p);
        if !diffs.is_empty() {
            failures.push(format!("{name}: compare(x, x) = {diffs:?}"));
        }
    }
    eprintln!(
        "{} golden P4Infos: all parse and round-trip; {identical} reprinted byte-identical",
        files.len()
    );
    assert!(failures.is_empty(), "{failures:#?}");
    assert_eq!(identical, files.len(), "printing differs from p4c's bytes");
}

/// The name of the header type annotated `@controller_header("<cpm>")` in the P4 source.
fn controller_header_type(p4: &str, cpm: &str) -> Option<String> {
    let anno = format!("@controller_header(\"{cpm}\")");
    let rest = &p4[p4.find(&anno)? + anno.len()..];
    let rest = &rest[rest.find("header")? + "header".len()..];
    let ident: String = rest
        .trim_start()
        .chars()
        .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
        .collect();
    (!ident.is_empty()).then_some(ident)
}

/// Every preamble of a P4Info with the prefix its section implies.
fn preambles(p: &P4Info) -> Vec<(Prefix, Preamble)> {
    let mut v = Vec::new();
    let mut add = |prefix, pre: &Option<Preamble>| {
        if let Some(pre) = pre {
            v.push((prefix, pre.clone()));
        }
    };
    p.tables
        .iter()
        .for_each(|x| add(Prefix::Table, &x.preamble));
    p.actions
        .iter()
        .for_each(|x| add(Prefix::Action, &x.preamble));
    p.action_profiles
        .iter()
        .for_each(|x| add(Prefix::ActionProfile, &x.preamble));
    p.counters
        .iter()
        .for_each(|x| add(Prefix::Counter, &x.preamble));
    p.direct_counters
        .iter()
        .for_each(|x| add(Prefix::DirectCounter, &x.preamble));
    p.meters
        .iter()
        .for_each(|x| add(Prefix::Meter, &x.preamble));
    p.direct_meters
        .iter()
        .for_each(|x| add(Prefix::DirectMeter, &x.preamble));
    let cpm = &p.controller_packet_metadata;
    cpm.iter()
        .for_each(|x| add(Prefix::ControllerHeader, &x.preamble));
    p.value_sets
        .iter()
        .for_each(|x| add(Prefix::ValueSet, &x.preamble));
    p.registers
        .iter()
        .for_each(|x| add(Prefix::Register, &x.preamble));
    p.digests
        .iter()
        .for_each(|x| add(Prefix::Digest, &x.preamble));
    for e in &p.externs {
        let prefix = Prefix::from_byte(u8::try_from(e.extern_type_id).unwrap_or(0));
        e.instances.iter().for_each(|x| add(prefix, &x.preamble));
    }
    v
}

#[test]
fn ids_and_aliases_match_p4c() {
    let files = goldens();
    if files.is_empty() {
        return;
    }
    let (mut total, mut id_ok, mut alias_ok) = (0usize, 0usize, 0usize);
    let mut mismatches = Vec::new();
    for (path, text) in &files {
        let name = short(path);
        let Ok(p) = p4info_from_text(text) else {
            mismatches.push(format!("{name}: does not parse"));
            continue;
        };
        let source_path = path.with_file_name(name.trim_end_matches(".p4info.txtpb"));
        let source = std::fs::read_to_string(&source_path).unwrap_or_default();
        let pre = preambles(&p);
        let symbols: Vec<Symbol> = pre
            .iter()
            .map(|(prefix, pr)| {
                let hashed = if *prefix == Prefix::ControllerHeader {
                    controller_header_type(&source, &pr.name).unwrap_or_else(|| pr.name.clone())
                } else {
                    pr.name.clone()
                };
                Symbol::new(*prefix, hashed)
            })
            .collect();
        let ids = match allocate(&symbols) {
            Ok(ids) => ids,
            Err(e) => e.ids,
        };
        let names: Vec<&str> = pre.iter().map(|(_, pr)| pr.name.as_str()).collect();
        let als = aliases(&names);
        for (i, (prefix, pr)) in pre.iter().enumerate() {
            total += 1;
            if ids[i] == pr.id && Prefix::of_id(pr.id) == *prefix {
                id_ok += 1;
            } else {
                mismatches.push(format!(
                    "{name}: {prefix:?} {:?}: id {:#010x}, computed {:#010x}",
                    pr.name, pr.id, ids[i]
                ));
            }
            if als[i] == pr.alias {
                alias_ok += 1;
            } else {
                mismatches.push(format!(
                    "{name}: {:?}: alias {:?}, computed {:?}",
                    pr.name, pr.alias, als[i]
                ));
            }
        }
    }
    eprintln!(
        "ids: {id_ok}/{total} match p4c; aliases: {alias_ok}/{total} match ({} files)",
        files.len()
    );
    assert!(mismatches.is_empty(), "{mismatches:#?}");
}

#[test]
fn mutated_golden_gives_expected_differences() {
    let Some(dir) = corpus() else {
        return;
    };
    let path = dir.join("samples/basic_routing-bmv2.p4.p4info.txtpb");
    let Ok(text) = std::fs::read_to_string(&path) else {
        eprintln!("SKIP: {} not found", path.display());
        return;
    };
    let expected = p4info_from_text(&text).expect("golden parses");
    let mut actual = expected.clone();

    // Orders p4c does not give meaning to: no differences.
    actual.tables.reverse();
    actual.actions.reverse();
    for t in &mut actual.tables {
        t.action_refs.reverse();
    }
    assert_eq!(compare(&expected, &actual), Vec::<String>::new());

    let t = actual
        .tables
        .iter_mut()
        .find(|t| {
            t.preamble
                .as_ref()
                .is_some_and(|p| p.name == "ingress.ipv4_fib")
        })
        .expect("table ingress.ipv4_fib");
    t.match_fields[1].bitwidth = 16;
    t.match_fields[0].name = "meta.vrf".into();
    t.size = 1024;
    t.action_refs.retain(|r| r.id != 21257015); // NoAction
    if let Some(pre) = t.preamble.as_mut() {
        pre.annotations.push("@hidden".into());
    }
    let a = actual
        .actions
        .iter_mut()
        .find(|a| {
            a.preamble
                .as_ref()
                .is_some_and(|p| p.name == "ingress.set_vrf")
        })
        .expect("action ingress.set_vrf");
    a.params[0].bitwidth = 13;
    actual.actions.retain(|a| {
        a.preamble
            .as_ref()
            .is_none_or(|p| p.name != "ingress.on_miss")
    });
    actual.pkg_info = None;

    // Deleting `ingress.on_miss` leaves the tables that used it with a reference to an id the
    // actual P4Info no longer names: reported as the named ref missing plus an unknown one.
    let on_miss = "action ref 'ingress.on_miss' missing";
    let dangling = "action ref #0x0158c260 unexpected";
    let want = [
        "pkg_info: set != unset".to_string(),
        "table ingress.ipv4_fib: annotations [] != [\"@hidden\"]".into(),
        "table ingress.ipv4_fib: match field 1 'meta.ingress_metadata.vrf' name \"meta.ingress_metadata.vrf\" != \"meta.vrf\"".into(),
        "table ingress.ipv4_fib: match field 2 'hdr.ipv4.dstAddr' bitwidth 32 != 16".into(),
        format!("table ingress.ipv4_fib: {on_miss}"),
        "table ingress.ipv4_fib: action ref 'NoAction' missing".into(),
        format!("table ingress.ipv4_fib: {dangling}"),
        "table ingress.ipv4_fib: size 131072 != 1024".into(),
        format!("table ingress.ipv4_fib_lpm: {on_miss}"),
        format!("table ingress.ipv4_fib_lpm: {dangling}"),
        format!("table ingress.nexthop: {on_miss}"),
        format!("table ingress.nexthop: {dangling}"),
        "action ingress.set_vrf: param 1 'vrf' bitwidth 12 != 13".into(),
        "action ingress.on_miss: missing".into(),
    ];
    assert_eq!(compare(&expected, &actual), want);
}
