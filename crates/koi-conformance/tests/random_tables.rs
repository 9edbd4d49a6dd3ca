//! Acceptance property test of the cached datapath (BRIEF §4): random packets and random table
//! entries through corpus programs with the caches on (koi's [`Datapath`]) and off (the
//! [`Interpreter`] alone), comparing every output and state change.
//!
//! For each program that compiles and has tables the control plane can write (koi's
//! `examples/*.p4` with their entries files, koi's own `tests/stf/v1model` STF tests and
//! `tests/stf/state` programs, and every v1model program of p4c's STF corpus at `$KOI_CORPUS`,
//! by default `../shared/corpus`, when present):
//!
//! - the state starts as the STF's control-plane statements (or the example's entries file)
//!   leave it, then gets random entries in every non-const table (keys of each field's width
//!   and match kind, biased towards values found in the packets; random actions among the
//!   table's with random arguments; random priorities; members and groups for tables with
//!   action profiles and selectors), and sometimes a random default action; entries the
//!   state refuses are skipped;
//! - packets are the STF's own, mutated (bits flipped in the first 64 bytes, truncated, other
//!   ingress ports among those the STF uses), fully random byte strings, and for the examples
//!   Ethernet (sometimes VLAN-tagged) / IPv4 / TCP or UDP frames with fields drawn from the
//!   addresses the entries use or at random;
//! - every packet goes through both engines twice (the second pass in a shuffled order), on
//!   two copies of the state, with equal manual clocks; at one to three random points of the
//!   second pass (and sometimes one of the first) a random table write (add, delete, modify,
//!   set default) is applied to both copies and the datapath told (`on_table_write`); each
//!   outcome must be equal, and so must the final states (their `Debug` text, tables' lookup
//!   indexes left out: see [`canonical`]);
//! - the datapath's self-checks must report no mismatch, and overall the caches must have hit.
//!
//! The datapath's cache configuration is random too (microflow tier on or off, tiny caches
//! that evict). Everything derives from one seed, printed: `KOI_RANDOM_TABLES_SEED=0x...`
//! reruns with another one, `KOI_RANDOM_TABLES_ONLY=substring` restricts the programs (each
//! program's randomness depends only on the seed and its name), `KOI_RANDOM_TABLES_PACKETS=N`
//! changes the number of distinct packets per program, `KOI_RANDOM_TABLES_ROUNDS=N` the number
//! of rounds (fresh entries, packets and cache configuration) per program, and
//! `KOI_RANDOM_TABLES_VERBOSE=1` prints each program's statistics.

use koi_conformance::compile;
use koi_datapath::{Datapath, DatapathConfig, DatapathStats, Summary};
use koi_interp::{InterpError, Interpreter, Options, Outcome};
use koi_ir::{ActionScope, Bits, ExternId, MatchKind, Pattern, Pipeline, TableId};
use koi_state::schema::{KeySchema, TableSchema};
use koi_state::{ActionSpec, EntrySpec, ManualClock, State};
use koi_stf::Stmt;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// The seed used unless `KOI_RANDOM_TABLES_SEED` says otherwise.
const DEFAULT_SEED: u64 = 0x6b6f_695f_7261_6e64;
/// Distinct packets per program (each goes through twice).
const DEFAULT_PACKETS: usize = 96;
/// Rounds per program, each with fresh entries, packets and cache configuration.
const DEFAULT_ROUNDS: u64 = 6;
/// Simulated time between two packets.
const GAP_NS: u64 = 1_000;

// ---------------------------------------------------------------------------------------------
// Randomness

/// xorshift64*: small, deterministic, good enough for test inputs.
struct Rng(u64);

impl Rng {
    fn new(seed: u64) -> Rng {
        // splitmix64 of the seed, so that close seeds give unrelated streams (never 0).
        let mut z = seed.wrapping_add(0x9e37_79b9_7f4a_7c15);
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        Rng((z ^ (z >> 31)) | 1)
    }

    fn next(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    /// Uniform in `0..n` (0 when `n` is 0).
    fn below(&mut self, n: u64) -> u64 {
        if n == 0 { 0 } else { self.next() % n }
    }

    fn index(&mut self, n: usize) -> usize {
        self.below(n as u64) as usize
    }

    /// True with probability `num / den`.
    fn chance(&mut self, num: u64, den: u64) -> bool {
        self.below(den) < num
    }

    fn pick<'a, T>(&mut self, items: &'a [T]) -> Option<&'a T> {
        match items.len() {
            0 => None,
            n => items.get(self.index(n)),
        }
    }

    fn bytes(&mut self, n: usize) -> Vec<u8> {
        (0..n).map(|_| self.next() as u8).collect()
    }

    /// A uniformly random value of `width` bits.
    fn bits(&mut self, width: u32) -> Bits {
        let limbs: Vec<u64> = (0..width.div_ceil(64).max(1))
            .map(|_| self.next())
            .collect();
        Bits::from_limbs(width, &limbs)
    }

    fn shuffle<T>(&mut self, v: &mut [T]) {
        for i in (1..v.len()).rev() {
            let j = self.index(i + 1);
            v.swap(i, j);
        }
    }
}

/// FNV-1a, to derive each program's seed from its name.
fn fnv(s: &str) -> u64 {
    s.bytes().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3)
    })
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

// ---------------------------------------------------------------------------------------------
// Programs

/// A program to test, with where its initial control-plane state and its packets come from.
struct Subject {
    name: String,
    program: PathBuf,
    opts: koi_syntax::PpOptions,
    /// Its STF test (corpus programs): initial state and packets to mutate.
    stf: Option<PathBuf>,
    /// A simple_switch_CLI entries file (examples).
    entries: Option<PathBuf>,
    /// Whether to make up Ethernet/IPv4 frames (examples) rather than random bytes (programs
    /// without an STF file, which parse small headers).
    frames: bool,
}

fn corpus() -> Option<PathBuf> {
    let p = std::env::var_os("KOI_CORPUS")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared/corpus")
        });
    p.is_dir().then_some(p)
}

/// A program with its STF file; `include`: the corpus's headers.
fn stf_subject(t: koi_conformance::corpus::TestCase, include: Option<&Path>) -> Subject {
    let mut opts = koi_syntax::PpOptions {
        include_dirs: include.map(Path::to_path_buf).into_iter().collect(),
        defines: Vec::new(),
    };
    if let Some(dir) = t.program.parent() {
        opts.include_dirs.push(dir.to_path_buf());
    }
    Subject {
        name: t.name,
        program: t.program,
        opts,
        stf: Some(t.stf),
        entries: None,
        frames: false,
    }
}

fn subjects() -> Vec<Subject> {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..");
    let mut out: Vec<Subject> = ["l2l3_acl", "l2", "l2l3", "l2_forward"]
        .iter()
        .map(|n| Subject {
            name: format!("examples/{n}"),
            program: root.join(format!("examples/{n}.p4")),
            opts: koi_syntax::PpOptions::default(),
            stf: None,
            entries: Some(root.join(format!("examples/{n}.entries"))),
            frames: true,
        })
        .collect();
    // koi's own STF tests, and the programs of its state tests (action selectors, digests).
    for t in koi_conformance::corpus::discover(&root.join("tests/stf/v1model")) {
        let mut su = stf_subject(t, None);
        su.name = format!("tests/stf/v1model/{}", su.name);
        out.push(su);
    }
    let state_dir = root.join("tests/stf/state");
    let mut own: Vec<PathBuf> = std::fs::read_dir(&state_dir)
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "p4"))
        .collect();
    own.sort();
    for program in own {
        let stem = program.file_stem().unwrap_or_default().to_string_lossy();
        out.push(Subject {
            name: format!("tests/stf/state/{stem}"),
            program,
            opts: koi_syntax::PpOptions::default(),
            stf: None,
            entries: None,
            frames: false,
        });
    }
    match corpus() {
        Some(c) => {
            let include = c.join("../reference/p4include");
            for t in koi_conformance::corpus::discover(&c.join("stf/v1model")) {
                let mut su = stf_subject(t, Some(&include));
                su.name = format!("corpus/{}", su.name);
                out.push(su);
            }
        }
        // Straight to stderr: the test harness swallows a passing test's output.
        None => {
            let _ = std::io::Write::write_all(
                &mut std::io::stderr(),
                b"SKIP corpus absent: only koi's own programs are tested\n",
            );
        }
    }
    if let Ok(only) = std::env::var("KOI_RANDOM_TABLES_ONLY") {
        out.retain(|s| s.name.contains(&only));
    }
    out
}

// ---------------------------------------------------------------------------------------------
// Packets

/// The initial state and the packets of one subject, before randomisation.
struct Setup {
    state: State,
    /// Packets of the STF file (port, bytes).
    seeds: Vec<(u64, Vec<u8>)>,
    /// Ports the STF file (or the example) uses.
    ports: Vec<u64>,
    /// Made-up Ethernet frames (for the examples, which have no STF).
    frames: bool,
}

/// The state after the STF's control-plane statements or the entries file, the STF's packets
/// and ports. `None`: the subject cannot run (bad STF, no state).
fn setup(s: &Subject, p: &Pipeline) -> Option<Setup> {
    if let Some(stf) = &s.stf {
        let text = std::fs::read_to_string(stf).ok()?;
        let lines = koi_stf::parse(&text).ok()?;
        let (state, _) = koi_conformance::stf::prepare(p, &lines).ok()?;
        let mut ports = Vec::new();
        let mut seeds = Vec::new();
        for l in &lines {
            match &l.stmt {
                Stmt::Packet { port, data } => {
                    ports.push(*port);
                    seeds.push((*port, data.clone()));
                }
                Stmt::Expect { port, .. } => ports.push(*port),
                _ => {}
            }
        }
        ports.sort_unstable();
        ports.dedup();
        if ports.is_empty() {
            ports.push(0);
        }
        return Some(Setup {
            state,
            seeds,
            ports,
            frames: false,
        });
    }
    let mut state = State::new(p).ok()?;
    if let Some(e) = &s.entries
        && let Ok(text) = std::fs::read_to_string(e)
    {
        for line in text.lines() {
            if let Ok(Some(c)) = koi_control::command::parse(line) {
                let _ = koi_state::cli::execute(&mut state, &c);
            }
        }
    }
    Some(Setup {
        state,
        seeds: Vec::new(),
        ports: vec![0, 1, 2, 3, 4],
        frames: s.frames,
    })
}

/// A mutation of `base`: bits flipped in the first 64 bytes, sometimes truncated.
fn mutate(rng: &mut Rng, base: &[u8]) -> Vec<u8> {
    let mut p = base.to_vec();
    if !p.is_empty() && rng.chance(3, 4) {
        let head = p.len().min(64);
        for _ in 0..1 + rng.below(4) {
            let bit = rng.index(head * 8);
            p[bit / 8] ^= 0x80 >> (bit % 8);
        }
    }
    if !p.is_empty() && rng.chance(1, 5) {
        p.truncate(rng.index(p.len()));
    }
    p
}

fn ipv4_checksum(h: &[u8]) -> u16 {
    let mut sum: u32 = h
        .chunks(2)
        .map(|c| u32::from(u16::from_be_bytes([c[0], *c.get(1).unwrap_or(&0)])))
        .sum();
    while sum > 0xffff {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    !(sum as u16)
}

/// An Ethernet frame for the examples and its ingress port, mostly coherent with their entries
/// files (host `02:00:00:00:01:0N` on port 1 + N % 2 in VLAN 100 or 200, router
/// `02:00:00:00:00:fe`, routes in 198.19.0.0/16, ACL sources in 198.18.200.0/20), often not.
fn frame(rng: &mut Rng) -> (u64, Vec<u8>) {
    let side = rng.below(2);
    let port = match rng.below(8) {
        0 => 3 + rng.below(2),
        _ => 1 + side,
    };
    let host = |rng: &mut Rng| -> Vec<u8> {
        match rng.below(4) {
            0 => vec![2, 0, 0, 0, 1, rng.below(8) as u8],
            _ => vec![2, 0, 0, 0, 1, (2 * rng.below(4) + side) as u8],
        }
    };
    let dst = match rng.below(10) {
        0..=3 => host(rng),
        4..=7 => vec![2, 0, 0, 0, 0, 0xfe],
        8 => vec![2, 0, 0, 0, 2, rng.below(4) as u8],
        _ => rng.bytes(6),
    };
    let src = match rng.below(8) {
        0 => rng.bytes(6),
        _ => host(rng),
    };
    let mut f = dst;
    f.extend(src);
    if rng.chance(1, 3) {
        let vid: u16 = match rng.below(4) {
            0 | 1 => [100, 200][side as usize],
            2 => [200, 100][side as usize],
            _ => rng.below(4096) as u16,
        };
        let tci = (rng.below(8) as u16) << 13 | vid;
        f.extend([0x81, 0x00]);
        f.extend(tci.to_be_bytes());
    }
    match rng.below(10) {
        0 => {
            f.extend(rng.bytes(2));
            let n = rng.index(50);
            f.extend(rng.bytes(n));
            return (port, f);
        }
        1 => {
            f.extend([0x86, 0xdd]);
            let n = rng.index(60);
            f.extend(rng.bytes(n));
            return (port, f);
        }
        _ => f.extend([0x08, 0x00]),
    }
    let proto: u8 = match rng.below(8) {
        0..=2 => 6,
        3..=5 => 17,
        6 => 1,
        _ => rng.next() as u8,
    };
    let src: [u8; 4] = match rng.below(3) {
        0 | 1 => [198, 18, 200 + rng.below(16) as u8, rng.below(17) as u8],
        _ => rng.next().to_be_bytes()[..4].try_into().unwrap_or([0; 4]),
    };
    let dst: [u8; 4] = match rng.below(4) {
        0 | 1 => [198, 19, (rng.below(16) * 16) as u8, rng.below(17) as u8],
        2 => [198, 19, rng.next() as u8, rng.next() as u8],
        _ => rng.next().to_be_bytes()[..4].try_into().unwrap_or([0; 4]),
    };
    let l4_port = |rng: &mut Rng| -> u16 {
        match rng.below(4) {
            0 => *rng.pick(&[53u16, 80, 22, 443]).unwrap_or(&80),
            1 => 40000 + rng.below(16) as u16,
            _ => rng.next() as u16,
        }
    };
    let mut l4 = Vec::new();
    let (sp, dp) = (l4_port(rng), l4_port(rng));
    l4.extend(sp.to_be_bytes());
    l4.extend(dp.to_be_bytes());
    let n = rng.index(24);
    let payload = rng.bytes(n);
    if proto == 6 {
        l4.extend(rng.bytes(8));
        l4.extend([0x50, rng.next() as u8]);
        l4.extend(rng.bytes(6));
    } else {
        l4.extend(((8 + payload.len()) as u16).to_be_bytes());
        l4.extend([0, 0]);
    }
    l4.extend(payload);
    let ttl = *rng.pick(&[0u8, 1, 2, 64, 255]).unwrap_or(&64);
    let mut ip = vec![0x45, rng.next() as u8];
    ip.extend(((20 + l4.len()) as u16).to_be_bytes());
    ip.extend(rng.bytes(2));
    ip.extend([0x40, 0x00, ttl, proto, 0, 0]);
    ip.extend(src);
    ip.extend(dst);
    let sum = if rng.chance(9, 10) {
        ipv4_checksum(&ip)
    } else {
        rng.next() as u16
    };
    ip[10..12].copy_from_slice(&sum.to_be_bytes());
    f.extend(ip);
    f.extend(l4);
    if rng.chance(1, 2) && f.len() < 60 {
        f.resize(60, 0);
    }
    (port, f)
}

/// `n` distinct-ish packets (port, bytes) biased towards what the program parses.
fn packets(rng: &mut Rng, su: &Setup, n: usize) -> Vec<(u64, Vec<u8>)> {
    let mut out = Vec::with_capacity(n);
    while out.len() < n {
        let port_of = |rng: &mut Rng, def: u64| -> u64 {
            match rng.below(5) {
                0 => *rng.pick(&su.ports).unwrap_or(&def),
                1 if rng.chance(1, 4) => rng.below(512),
                _ => def,
            }
        };
        let r = rng.below(20);
        if r < 2 {
            // Fully random bytes.
            let len = rng.index(100);
            let port = *rng.pick(&su.ports).unwrap_or(&0);
            out.push((port, rng.bytes(len)));
        } else if let Some((port, base)) = rng.pick(&su.seeds).cloned() {
            let data = if r < 6 { base } else { mutate(rng, &base) };
            let port = port_of(rng, port);
            out.push((port, data));
        } else if su.frames {
            let (port, f) = frame(rng);
            let data = if r < 16 { f } else { mutate(rng, &f) };
            let port = port_of(rng, port);
            out.push((port, data));
        } else {
            let len = rng.index(100);
            let port = *rng.pick(&su.ports).unwrap_or(&0);
            out.push((port, rng.bytes(len)));
        }
    }
    out
}

// ---------------------------------------------------------------------------------------------
// Table entries

/// Draws values for keys and arguments, half of the time from the packets themselves and
/// sometimes from the ports in use (so that entries have a chance to match).
struct Values<'a> {
    packets: &'a [(u64, Vec<u8>)],
    /// Ingress ports in use (for port keys and port arguments).
    ports: &'a [u64],
}

impl Values<'_> {
    fn value(&self, rng: &mut Rng, width: u32) -> Bits {
        match rng.below(10) {
            0..=4 => {
                if let Some((_, p)) = rng.pick(self.packets)
                    && (p.len() * 8) as u64 >= u64::from(width)
                {
                    let room = (p.len() * 8 - width as usize) / 8;
                    let off = rng.index(room.min(64) + 1) * 8;
                    if let Ok(b) = Bits::read_bits(p, off, width) {
                        return b;
                    }
                }
                rng.bits(width)
            }
            5 => Bits::from_u64(width, rng.below(8)),
            6 => Bits::from_u64(width, *rng.pick(self.ports).unwrap_or(&0)),
            _ => rng.bits(width),
        }
    }

    fn pattern(&self, rng: &mut Rng, k: &KeySchema) -> Pattern {
        let w = k.width;
        match k.kind {
            MatchKind::Lpm => {
                let len = match rng.below(4) {
                    0 => w,
                    _ => rng.below(u64::from(w) + 1) as u32,
                };
                let value = self.value(rng, w).and(&Bits::prefix_mask(w, len));
                Pattern::Prefix { value, len }
            }
            MatchKind::Ternary => {
                let mask = match rng.below(6) {
                    0 => Bits::ones(w),
                    1 => Bits::zero(w),
                    2 => Bits::prefix_mask(w, rng.below(u64::from(w) + 1) as u32),
                    _ => rng.bits(w),
                };
                let value = self.value(rng, w).and(&mask);
                Pattern::Mask { value, mask }
            }
            MatchKind::Optional => match rng.chance(1, 3) {
                true => Pattern::Any,
                false => Pattern::Exact(self.value(rng, w)),
            },
            MatchKind::Range => {
                if rng.chance(1, 5) {
                    return Pattern::Range {
                        lo: Bits::zero(w),
                        hi: Bits::ones(w),
                    };
                }
                let a = self.value(rng, w);
                let b = match rng.below(3) {
                    0 => a.add(&Bits::from_u64(w, rng.below(16))),
                    1 => self.value(rng, w),
                    _ => rng.bits(w),
                };
                let (lo, hi) = match a.cmp_u(&b) {
                    std::cmp::Ordering::Greater => (b, a),
                    _ => (a, b),
                };
                Pattern::Range { lo, hi }
            }
            MatchKind::Exact | MatchKind::Selector | MatchKind::Other(_) => {
                Pattern::Exact(self.value(rng, w))
            }
        }
    }

    /// An action of table `t` (one allowed as an entry, or as the default) with arguments.
    fn action(
        &self,
        rng: &mut Rng,
        state: &State,
        t: &TableSchema,
        default: bool,
    ) -> Option<(String, Vec<Bits>)> {
        let allowed: Vec<_> = t
            .actions
            .iter()
            .filter(|(_, s)| match default {
                true => *s != ActionScope::TableOnly,
                false => *s != ActionScope::DefaultOnly,
            })
            .collect();
        let (a, _) = rng.pick(&allowed)?;
        let schema = state.action_schema(*a)?;
        let args = schema
            .params
            .iter()
            .map(|(_, w)| self.value(rng, *w))
            .collect();
        Some((schema.name.clone(), args))
    }
}

/// The members and groups created in each action profile.
#[derive(Default)]
struct Profiles {
    members: BTreeMap<ExternId, Vec<u32>>,
    groups: BTreeMap<ExternId, Vec<u32>>,
}

/// Creates members (and groups of them, for selectors) in every action profile.
fn fill_profiles(rng: &mut Rng, v: &Values, state: &mut State, log: &mut Vec<String>) -> Profiles {
    let mut out = Profiles::default();
    let tables: Vec<TableSchema> = state.tables().map(|t| t.schema.clone()).collect();
    for t in &tables {
        let Some(ext) = t.implementation else {
            continue;
        };
        if out.members.contains_key(&ext) {
            continue;
        }
        let Some(name) = state.extern_name(ext).map(str::to_string) else {
            continue;
        };
        let mut members = Vec::new();
        for _ in 0..1 + rng.below(4) {
            let Some((action, args)) = v.action(rng, state, t, false) else {
                break;
            };
            if let Ok(m) = state.profile_add_member(&name, &action, &args) {
                log.push(format!("profile {name}: member {m} = {action}{args:?}"));
                members.push(m);
            }
        }
        let mut groups = Vec::new();
        for _ in 0..rng.below(3) {
            let Ok(g) = state.profile_create_group(&name) else {
                break;
            };
            log.push(format!("profile {name}: group {g}"));
            for m in &members {
                if rng.chance(2, 3) && state.profile_add_to_group(&name, *m, g).is_ok() {
                    log.push(format!("profile {name}: member {m} into group {g}"));
                }
            }
            groups.push(g);
        }
        out.members.insert(ext, members);
        out.groups.insert(ext, groups);
    }
    out
}

/// A random entry for table `t`, or `None` if it cannot have one.
fn entry(
    rng: &mut Rng,
    v: &Values,
    state: &State,
    profiles: &Profiles,
    t: &TableSchema,
) -> Option<EntrySpec> {
    if t.entries_const || t.keys.is_empty() {
        return None;
    }
    let keys = t.keys.iter().map(|k| v.pattern(rng, k)).collect();
    let action = action_spec(rng, v, state, profiles, t, false)?;
    // Few distinct priorities sometimes, so that overlapping entries tie.
    let spread = if rng.chance(1, 4) { 3 } else { 1000 };
    let priority = t
        .lookup
        .needs_priority()
        .then(|| 1 + rng.below(spread) as u32);
    Some(EntrySpec {
        keys,
        action,
        priority,
        timeout_ns: None,
    })
}

fn action_spec(
    rng: &mut Rng,
    v: &Values,
    state: &State,
    profiles: &Profiles,
    t: &TableSchema,
    default: bool,
) -> Option<ActionSpec> {
    if let Some(ext) = t.implementation
        && !default
    {
        let members = profiles.members.get(&ext).map(Vec::as_slice).unwrap_or(&[]);
        let groups = profiles.groups.get(&ext).map(Vec::as_slice).unwrap_or(&[]);
        return match rng.chance(1, 2) {
            true if !groups.is_empty() => rng.pick(groups).map(|g| ActionSpec::Group(*g)),
            _ => rng.pick(members).map(|m| ActionSpec::Member(*m)),
        };
    }
    let (name, args) = v.action(rng, state, t, default)?;
    Some(ActionSpec::Action { name, args })
}

/// A table write applied to both states: returns the table written and a description, or
/// `None` if this attempt did nothing. Both states must accept or refuse it alike.
fn table_write(
    rng: &mut Rng,
    v: &Values,
    si: &mut State,
    sd: &mut State,
    profiles: &Profiles,
) -> Result<Option<(TableId, String)>, String> {
    let tables: Vec<TableSchema> = si.tables().map(|t| t.schema.clone()).collect();
    let Some(t) = rng.pick(&tables) else {
        return Ok(None);
    };
    let name = t.name.clone();
    let handles: Vec<u32> = si
        .table_by_id(t.id)
        .map(|tb| {
            tb.entries()
                .filter(|e| !e.is_const)
                .map(|e| e.handle)
                .collect()
        })
        .unwrap_or_default();
    let (what, a, b) = match rng.below(4) {
        0 => {
            let Some(e) = entry(rng, v, si, profiles, t) else {
                return Ok(None);
            };
            let what = format!("table_add {name} {e:?}");
            let (a, b) = (
                si.table_add_id(t.id, e.clone()).map(|_| ()),
                sd.table_add_id(t.id, e).map(|_| ()),
            );
            (what, a, b)
        }
        1 => {
            let Some(h) = rng.pick(&handles).copied() else {
                return Ok(None);
            };
            let what = format!("table_delete {name} {h}");
            (what, si.table_delete(&name, h), sd.table_delete(&name, h))
        }
        2 => {
            let Some(h) = rng.pick(&handles).copied() else {
                return Ok(None);
            };
            let Some(act) = action_spec(rng, v, si, profiles, t, false) else {
                return Ok(None);
            };
            let what = format!("table_modify {name} {h} {act:?}");
            let (a, b) = (
                si.table_modify(&name, h, act.clone()),
                sd.table_modify(&name, h, act),
            );
            (what, a, b)
        }
        _ => {
            let Some(act) = action_spec(rng, v, si, profiles, t, true) else {
                return Ok(None);
            };
            let what = format!("table_set_default {name} {act:?}");
            let (a, b) = (
                si.table_set_default(&name, act.clone()),
                sd.table_set_default(&name, act),
            );
            (what, a, b)
        }
    };
    match (a, b) {
        (Ok(()), Ok(())) => Ok(Some((t.id, what))),
        (Err(_), Err(_)) => Ok(None),
        (a, b) => Err(format!(
            "{what}: the two copies of the state answered differently: {a:?} / {b:?}"
        )),
    }
}

// ---------------------------------------------------------------------------------------------
// The property

/// What one program's run amounted to.
#[derive(Default)]
struct Ran {
    stats: DatapathStats,
    entries: usize,
    writes: usize,
    packets: usize,
    /// Packets that produced at least one output.
    sent: usize,
}

impl Ran {
    fn add(&mut self, r: &Ran) {
        self.entries += r.entries;
        self.writes += r.writes;
        self.packets += r.packets;
        self.sent += r.sent;
        let (t, x) = (&mut self.stats, &r.stats);
        t.microflow_hits += x.microflow_hits;
        t.megaflow_hits += x.megaflow_hits;
        t.misses += x.misses;
        t.uncacheable += x.uncacheable;
        t.installs += x.installs;
        t.diverged += x.diverged;
        t.invalidated += x.invalidated;
        t.too_short += x.too_short;
        t.compiled += x.compiled;
        t.compiled_hits += x.compiled_hits;
        t.not_compiled += x.not_compiled;
        t.compile_mismatch += x.compile_mismatch;
        t.fast_parse_mismatch += x.fast_parse_mismatch;
        t.jit_compiled += x.jit_compiled;
        t.jit_mismatch += x.jit_mismatch;
        t.memo_hits += x.memo_hits;
    }
}

/// Why a program was not tested.
type Skip = &'static str;

/// Runs one program both ways, `rounds` times with fresh random entries, packets and cache
/// configuration. `Ok(Err(why))`: the program cannot run (does not compile, has no writable
/// table, ...). `ctx` tells, if this panics, where it was.
fn check(
    s: &Subject,
    seed: u64,
    rounds: u64,
    n_packets: usize,
    ctx: &mut String,
) -> Result<Result<Ran, Skip>, String> {
    let Ok(compiled) = compile(&s.program, &s.opts) else {
        return Ok(Err("does not compile"));
    };
    let p = &compiled.pipeline;
    let Some(su) = setup(s, p) else {
        return Ok(Err("bad STF file or no state"));
    };
    let writable = su
        .state
        .tables()
        .filter(|t| {
            !t.schema.entries_const && !t.schema.keys.is_empty()
                || !t.schema.default_action.is_const
        })
        .count();
    if writable == 0 {
        return Ok(Err("no writable table"));
    }
    let mut total = Ran::default();
    for round in 0..rounds {
        let r = match run_round(s, p, &su, seed, round, n_packets, ctx)? {
            Ok(r) => r,
            Err(why) => return Ok(Err(why)),
        };
        total.add(&r);
    }
    Ok(Ok(total))
}

/// One round of [`check`].
fn run_round(
    s: &Subject,
    p: &Pipeline,
    su: &Setup,
    seed: u64,
    round: u64,
    n_packets: usize,
    ctx: &mut String,
) -> Result<Result<Ran, Skip>, String> {
    let mut rng = Rng::new(seed.wrapping_add(round));
    let config = DatapathConfig {
        seed: Some(rng.next()),
        microflow: rng.chance(3, 4),
        microflow_entries: if rng.chance(1, 4) { 2 } else { 8192 },
        // No signature cache, a tiny one (colliding signatures, stale hints) or the default.
        signature_entries: [0, 4, koi_datapath::SIGNATURE_ENTRIES][rng.index(3)],
        max_megaflows: if rng.chance(1, 4) {
            1 + rng.index(8)
        } else {
            65_536
        },
        // Native code from the first, second or third hit of a program, or none.
        jit_after: (!rng.chance(1, 4)).then(|| 1 + rng.index(3) as u32),
        // The batches' prefetches (hints only: the answers must not change).
        prefetch: rng
            .chance(1, 2)
            .then_some(koi_ports::prefetch as koi_datapath::Prefetch),
        ..DatapathConfig::default()
    };
    // Or prefetches passed to each batch, as `koi run` and `koi bench` do.
    let passed_prefetch = config.prefetch.is_none() && rng.chance(1, 2);
    let (Ok(mut interp), Ok(mut dp)) = (
        Interpreter::new(p),
        Datapath::with_config(p, Options::default(), config.clone()),
    ) else {
        return Ok(Err("no interpreter or datapath for it"));
    };
    let pkts = packets(&mut rng, su, n_packets);
    let values = Values {
        packets: &pkts,
        ports: &su.ports,
    };
    let mut state = su.state.clone();
    // The control-plane log, to reproduce a failure.
    let mut log = vec![format!(
        "datapath config: microflow {} ({} entries), max {} megaflows",
        config.microflow, config.microflow_entries, config.max_megaflows
    )];
    let profiles = fill_profiles(&mut rng, &values, &mut state, &mut log);
    let tables: Vec<TableSchema> = state.tables().map(|t| t.schema.clone()).collect();
    let mut ran = Ran::default();
    for t in &tables {
        let want = match t.size {
            0..=4 => 1 + rng.below(t.size.max(1)),
            _ => 1 + rng.below(10),
        };
        for _ in 0..want {
            let Some(e) = entry(&mut rng, &values, &state, &profiles, t) else {
                break;
            };
            let what = format!("table_add {} {e:?}", t.name);
            if state.table_add_id(t.id, e).is_ok() {
                log.push(what);
                ran.entries += 1;
            }
        }
        if rng.chance(1, 4)
            && let Some(act) = action_spec(&mut rng, &values, &state, &profiles, t, true)
        {
            let what = format!("table_set_default {} {act:?}", t.name);
            if state.table_set_default(&t.name, act).is_ok() {
                log.push(what);
            }
        }
    }
    let (mut si, mut sd) = (state.clone(), state);
    let (ci, cd) = (ManualClock::new(0), ManualClock::new(0));
    // Pass 1 in order, pass 2 shuffled. Table writes at one to three random points in the
    // middle of pass 2 (the packets before them mostly hit what pass 1 installed, those after
    // them must not hit what the writes invalidated), and sometimes one in pass 1.
    let n = pkts.len();
    let mut order: Vec<(u32, usize)> = (0..n).map(|i| (1, i)).collect();
    let mut second: Vec<(u32, usize)> = (0..n).map(|i| (2, i)).collect();
    rng.shuffle(&mut second);
    order.extend(second);
    let mut write_at: Vec<usize> = (0..1 + rng.below(3))
        .map(|_| n + n / 4 + rng.index(n / 2 + 1))
        .collect();
    if rng.chance(1, 2) {
        write_at.push(rng.index(n));
    }
    let fail = |log: &[String], msg: String| -> String {
        format!(
            "{} ({}), program seed {seed:#x}, round {round}: {msg}\n  control plane after the \
             initial state (the STF's statements or the entries file):\n    {}",
            s.name,
            s.program.display(),
            log.join("\n    ")
        )
    };
    // A third of the rounds hand the datapath its packets in batches
    // (`Datapath::process_batch`): runs of up to 70 consecutive packets on one port, with no
    // table write inside; both clocks then advance once per batch.
    let batched = rng.chance(1, 3);
    let mut step = 0;
    while step < order.len() {
        for _ in write_at.iter().filter(|w| **w == step) {
            for _ in 0..20 {
                match table_write(&mut rng, &values, &mut si, &mut sd, &profiles) {
                    Ok(Some((t, what))) => {
                        dp.on_table_write(t);
                        log.push(format!("before packet #{step}: {what}"));
                        ran.writes += 1;
                        break;
                    }
                    Ok(None) => {}
                    Err(e) => return Err(fail(&log, e)),
                }
            }
        }
        if batched {
            let port = pkts[order[step].1].0;
            let most = 1 + rng.index(70);
            let mut end = step + 1;
            while end < order.len()
                && end - step < most
                && pkts[order[end].1].0 == port
                && !write_at.contains(&end)
            {
                end += 1;
            }
            let batch: Vec<&[u8]> = order[step..end]
                .iter()
                .map(|(_, i)| &pkts[*i].1[..])
                .collect();
            *ctx = format!(
                "{}, program seed {seed:#x}, round {round}, packets #{step} to #{} on port                  {port} in one batch",
                s.name,
                end - 1
            );
            let want: Vec<_> = batch
                .iter()
                .map(|data| interp.process(&mut si, data, port, &ci))
                .collect();
            let mut outs: Vec<Vec<(u64, Vec<u8>)>> = vec![Vec::new(); batch.len()];
            let mut sums = vec![None; batch.len()];
            let mut sink = |k: usize, to: u64, bytes: &[u8]| outs[k].push((to, bytes.to_vec()));
            let mut done = |k: usize, r: Result<&Summary, &InterpError>| {
                sums[k] = Some(r.cloned().map_err(Clone::clone));
            };
            if passed_prefetch {
                let fetch = Some(koi_ports::prefetch);
                dp.process_batch_prefetching(
                    &mut sd, &batch, port, &cd, fetch, &mut sink, &mut done,
                );
            } else {
                dp.process_batch(&mut sd, &batch, port, &cd, &mut sink, &mut done);
            }
            ci.advance_ns(GAP_NS);
            cd.advance_ns(GAP_NS);
            for (k, a) in want.iter().enumerate() {
                let (pass, i) = order[step + k];
                ran.packets += 1;
                ran.sent += usize::from(a.as_ref().is_ok_and(|o| !o.outputs.is_empty()));
                let a = a.as_ref().map(|o| {
                    let outs: Vec<_> = o
                        .outputs
                        .iter()
                        .map(|x| (x.port, x.bytes.clone()))
                        .collect();
                    (outs, o.report.drops.clone(), o.report.aborted.clone())
                });
                let b = match sums[k].take() {
                    Some(Ok(sum)) => Ok((std::mem::take(&mut outs[k]), sum.drops, sum.aborted)),
                    Some(Err(e)) => Err(e),
                    None => return Err(fail(&log, format!("packet #{} had no summary", step + k))),
                };
                if a.as_ref().map_err(|e| format!("{e:?}"))
                    != b.as_ref().map_err(|e| format!("{e:?}"))
                {
                    return Err(fail(
                        &log,
                        format!(
                            "pass {pass}, packet #{} (index {i}, {k} in a batch of {}) on port \
                             {port}: {}\n  interpreter {a:?}\n  datapath    {b:?}",
                            step + k,
                            batch.len(),
                            hex(batch[k])
                        ),
                    ));
                }
            }
            step = end;
            continue;
        }
        let (pass, i) = &order[step];
        let (port, data) = &pkts[*i];
        *ctx = format!(
            "{}, program seed {seed:#x}, round {round}, pass {pass}, packet #{step} on port \
             {port}: {}",
            s.name,
            hex(data)
        );
        let a = interp.process(&mut si, data, *port, &ci);
        let b = dp.process(&mut sd, data, *port, &cd);
        ci.advance_ns(GAP_NS);
        cd.advance_ns(GAP_NS);
        ran.packets += 1;
        ran.sent += usize::from(a.as_ref().is_ok_and(|o| !o.outputs.is_empty()));
        if a != b {
            return Err(fail(
                &log,
                format!(
                    "pass {pass}, packet #{step} (index {i}) on port {port}: {}\n  \
                     interpreter {}\n  datapath    {}",
                    hex(data),
                    show(&a),
                    show(&b)
                ),
            ));
        }
        step += 1;
    }
    let (a, b) = (canonical(&si), canonical(&sd));
    if a != b {
        let at = a.bytes().zip(b.bytes()).take_while(|(x, y)| x == y).count();
        let from = at.saturating_sub(200);
        let upto = |s: &str| (at + 100).min(s.len());
        return Err(fail(
            &log,
            format!(
                "the final states differ:\n  interpreter ...{}\n  datapath    ...{}",
                a.get(from..upto(&a)).unwrap_or(""),
                b.get(from..upto(&b)).unwrap_or("")
            ),
        ));
    }
    ran.stats = dp.stats();
    if ran.stats.compile_mismatch + ran.stats.fast_parse_mismatch + ran.stats.jit_mismatch > 0 {
        return Err(fail(
            &log,
            format!(
                "{} compiled programs differed from the interpreter, {} fast-parser keys differed, {} native programs differed",
                ran.stats.compile_mismatch, ran.stats.fast_parse_mismatch, ran.stats.jit_mismatch
            ),
        ));
    }
    Ok(Ok(ran))
}

/// The state's `Debug` text without the tables' lookup indexes (`matcher: ...`). Those are
/// derived from the entries, which are compared, but their iteration order is not canonical:
/// an LPM matcher creates a hash map per prefix length with a freshly seeded hasher, so two
/// copies of a state that each got the same entry of a new prefix length print it in
/// different orders.
fn canonical(s: &State) -> String {
    let text = format!("{s:?}");
    let mut out = String::with_capacity(text.len());
    let mut rest = text.as_str();
    while let Some(i) = rest.find("matcher: ") {
        out.push_str(&rest[..i]);
        rest = &rest[i..];
        match rest.find(", default: ") {
            Some(j) => rest = &rest[j..],
            None => break,
        }
    }
    out.push_str(rest);
    out
}

/// An outcome with its output packets in hex.
fn show(r: &Result<Outcome, InterpError>) -> String {
    match r {
        Ok(o) => {
            let outs: Vec<String> = o
                .outputs
                .iter()
                .map(|x| format!("port {}: {}", x.port, hex(&x.bytes)))
                .collect();
            format!("outputs [{}], {:?}", outs.join(", "), o.report)
        }
        Err(e) => format!("error {e:?}"),
    }
}

fn parse_seed(s: &str) -> Option<u64> {
    let s = s.trim();
    match s.strip_prefix("0x") {
        Some(h) => u64::from_str_radix(h, 16).ok(),
        None => s.parse().ok(),
    }
}

#[test]
fn random_packets_and_entries_give_the_same_results_with_and_without_caches() {
    let seed = std::env::var("KOI_RANDOM_TABLES_SEED")
        .ok()
        .and_then(|s| parse_seed(&s))
        .unwrap_or(DEFAULT_SEED);
    let n_packets = std::env::var("KOI_RANDOM_TABLES_PACKETS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(DEFAULT_PACKETS);
    let rounds = std::env::var("KOI_RANDOM_TABLES_ROUNDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(DEFAULT_ROUNDS);
    println!(
        "seed {seed:#x} (KOI_RANDOM_TABLES_SEED), {rounds} rounds (KOI_RANDOM_TABLES_ROUNDS) of \
         {n_packets} packets (KOI_RANDOM_TABLES_PACKETS) per program"
    );
    let verbose = std::env::var_os("KOI_RANDOM_TABLES_VERBOSE").is_some();
    let subjects = subjects();
    let start = std::time::Instant::now();
    let (mut ran, mut total, mut failures) = (0, Ran::default(), Vec::new());
    let mut skipped = BTreeMap::new();
    for s in &subjects {
        let pseed = seed ^ fnv(&s.name);
        let mut ctx = String::new();
        let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            check(s, pseed, rounds, n_packets, &mut ctx)
        }));
        match r {
            Ok(Ok(Ok(r))) => {
                ran += 1;
                if verbose {
                    let x = &r.stats;
                    println!(
                        "{}: {} entries, {} writes, {} packets ({} sent); hits {} + {} ({} \
                         compiled), {} misses, {} uncacheable",
                        s.name,
                        r.entries,
                        r.writes,
                        r.packets,
                        r.sent,
                        x.microflow_hits,
                        x.megaflow_hits,
                        x.compiled_hits,
                        x.misses,
                        x.uncacheable
                    );
                }
                total.add(&r);
            }
            Ok(Ok(Err(why))) => skipped
                .entry(why)
                .or_insert_with(Vec::new)
                .push(s.name.as_str()),
            Ok(Err(e)) => failures.push(e),
            Err(p) => {
                let msg = p
                    .downcast_ref::<String>()
                    .cloned()
                    .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
                    .unwrap_or_default();
                failures.push(format!(
                    "{} ({}), program seed {pseed:#x}: panicked at {ctx}: {msg}",
                    s.name,
                    s.program.display()
                ));
            }
        }
    }
    let st = &total.stats;
    println!(
        "{ran} of {} programs in {:.1} s: {} random entries, {} table writes between packets, \
         {} packets ({} sent something); hits {} microflow + {} megaflow ({} compiled), {} misses, {} uncacheable, \
         {} installs ({} with the trace memo's program), {} invalidated, {} diverged",
        subjects.len(),
        start.elapsed().as_secs_f64(),
        total.entries,
        total.writes,
        total.packets,
        total.sent,
        st.microflow_hits,
        st.megaflow_hits,
        st.compiled_hits,
        st.misses,
        st.uncacheable,
        st.installs,
        st.memo_hits,
        st.invalidated,
        st.diverged
    );
    for (why, names) in &skipped {
        println!("not tested, {why}: {} ({})", names.len(), names.join(" "));
    }
    assert!(
        failures.is_empty(),
        "{} of {} programs differ (seed {seed:#x}; rerun one with KOI_RANDOM_TABLES_SEED={seed:#x} \
         KOI_RANDOM_TABLES_ONLY=NAME, and KOI_RANDOM_TABLES_PACKETS and \
         KOI_RANDOM_TABLES_ROUNDS as they were):\n{}",
        failures.len(),
        subjects.len(),
        failures.join("\n\n")
    );
    assert!(ran >= 4.min(subjects.len()), "only {ran} programs ran");
    assert!(total.entries > 0, "no random entry was accepted");
    assert!(total.writes > 0, "no table write between packets");
    assert_eq!(
        st.compile_mismatch + st.fast_parse_mismatch + st.jit_mismatch,
        0
    );
    assert!(st.jit_compiled > 0, "no program got native code");
    assert!(
        st.memo_hits > 0,
        "no slow-path run took its program from the trace memo"
    );
    assert!(
        st.compiled_hits + st.microflow_hits + st.megaflow_hits > 0,
        "the caches never hit"
    );
}
