//! Replicas of a state for forwarding threads (`koi_state::replica`), driven the way
//! `koi-runtime`'s images drive them: every control-plane change runs on the master between
//! a fold of every replica and their catching up. What each replica looks up must be what
//! the master would (exact and ternary tables, after random adds, modifies, deletes,
//! clears and default changes); counts made in replicas must add up in the master; and
//! registers written by threads at once through their replicas must count exactly.

mod common;

use koi_control::command;
use koi_ir::{Bits, Pipeline, TableId};
use koi_state::{Lookup, Master, State, cli};
use parking_lot::Mutex;
use proptest::prelude::*;
use std::sync::Arc;

fn compile(src: &str) -> Pipeline {
    common::compile("replica.p4", src)
}

const PROGRAM: &str = r#"
#include <core.p4>
#include <v1model.p4>
header eth_t { bit<48> dst; bit<48> src; bit<16> type; }
struct headers { eth_t eth; }
struct meta_t { bit<32> v; }
parser P(packet_in pkt, out headers hdr, inout meta_t m, inout standard_metadata_t sm) {
    state start { pkt.extract(hdr.eth); transition accept; }
}
control I(inout headers hdr, inout meta_t m, inout standard_metadata_t sm) {
    register<bit<32>>(4) seen;
    counter(4, CounterType.packets_and_bytes) c;
    direct_counter(CounterType.packets_and_bytes) dc;
    action fwd(bit<9> port) { sm.egress_spec = port; }
    action drop() { mark_to_drop(sm); }
    table ex {
        key = { hdr.eth.dst: exact; }
        actions = { fwd; drop; }
        default_action = drop();
        counters = dc;
    }
    table tern {
        key = { hdr.eth.src: ternary; }
        actions = { fwd; drop; }
        default_action = drop();
    }
    apply { ex.apply(); tern.apply(); c.count(0); }
}
control V(inout headers hdr, inout meta_t m) { apply { } }
control E(inout headers hdr, inout meta_t m, inout standard_metadata_t sm) { apply { } }
control C(inout headers hdr, inout meta_t m) { apply { } }
control D(packet_out pkt, in headers hdr) { apply { pkt.emit(hdr.eth); } }
V1Switch(P(), V(), I(), E(), C(), D()) main;
"#;

/// A master and `n` replicas, as an image holds them.
struct Image {
    master: Master,
    replicas: Vec<Mutex<State>>,
}

impl Image {
    fn new(p: &Pipeline, n: usize) -> Image {
        let master: Master = Arc::new(Mutex::new(State::new(p).unwrap()));
        let replicas = {
            let m = master.lock();
            (0..n)
                .map(|_| Mutex::new(State::replica(&master, &m)))
                .collect()
        };
        Image { master, replicas }
    }

    /// Runs `f` on the master the way an image's update does: every replica folded in turn,
    /// `f` with the journal on, every replica folded again and following in turn.
    fn update<R>(&self, f: impl FnOnce(&mut State) -> R) -> R {
        for r in &self.replicas {
            r.lock().fold_into(&mut self.master.lock());
        }
        let out = {
            let mut m = self.master.lock();
            m.journal(true);
            f(&mut m)
        };
        for r in &self.replicas {
            let mut r = r.lock();
            let mut m = self.master.lock();
            r.fold_into(&mut m);
            // Every change is followed as if it touched more than tables.
            r.follow(&m, true);
        }
        self.master.lock().journal(false);
        out
    }

    /// The master after a fold of every replica.
    fn read<R>(&self, f: impl FnOnce(&State) -> R) -> R {
        self.update(|m| f(m))
    }
}

fn cli_run(s: &mut State, line: &str) -> Result<String, String> {
    let c = command::parse(line)
        .map_err(|e| e.to_string())?
        .ok_or("empty")?;
    cli::execute(s, &c).map_err(|e| e.to_string())
}

/// What a lookup gave, comparable across states: hit index and action, or the default.
fn seen(s: &State, t: TableId, key: u64) -> String {
    match s.lookup(t, &[Bits::from_u64(48, key)], None) {
        Some(Lookup::Hit { index, entry }) => format!("hit {index} {:?}", entry.action),
        Some(Lookup::Miss { default }) => format!("miss {default:?}"),
        None => "none".into(),
    }
}

#[derive(Clone, Debug)]
enum Op {
    AddExact(u8, u8),
    AddTern(u8, u8, u8, u32),
    Modify(u8, u8),
    Delete(u8),
    DeleteTern(u8),
    Default(u8),
    Clear,
    /// Replica `r` sees a packet to `dst` (a hit of `ex` counted), counted in `c[0]`.
    Packet(usize, u8),
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        4 => (0u8..12, 1u8..8).prop_map(|(k, p)| Op::AddExact(k, p)),
        2 => (0u8..8, 0u8..8, 1u8..8, 0u32..4).prop_map(|(v, m, p, pr)| Op::AddTern(v, m, p, pr)),
        2 => (0u8..6, 1u8..8).prop_map(|(h, p)| Op::Modify(h, p)),
        2 => (0u8..6).prop_map(Op::Delete),
        1 => (0u8..6).prop_map(Op::DeleteTern),
        1 => (1u8..8).prop_map(Op::Default),
        1 => Just(Op::Clear),
        6 => (0usize..2, 0u8..12).prop_map(|(r, k)| Op::Packet(r, k)),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn replicas_look_up_what_the_master_holds_and_their_counts_add_up(
        ops in proptest::collection::vec(op(), 1..60)
    ) {
        let p = compile(PROGRAM);
        let img = Image::new(&p, 2);
        let (ex, tern) = {
            let m = img.master.lock();
            (m.table_id("ex").unwrap(), m.table_id("tern").unwrap())
        };
        // Hits expected per entry handle (a handle names one entry: a deleted entry's
        // slot comes back under another handle).
        let (mut hits, mut packets) = (std::collections::HashMap::<u32, u64>::new(), 0u64);
        let handles = |m: &State| -> Vec<u32> {
            m.table("ex").unwrap().entries().map(|e| e.handle).collect()
        };
        for o in &ops {
            match o {
                Op::Packet(r, k) => {
                    let mut s = img.replicas[*r].lock();
                    let hit = match s.lookup(ex, &[Bits::from_u64(48, u64::from(*k))], None) {
                        Some(Lookup::Hit { index, entry }) => Some((index, entry.handle)),
                        _ => None,
                    };
                    if let Some((i, h)) = hit {
                        s.record_hit(ex, i, 64, 1_000);
                        *hits.entry(h).or_default() += 1;
                    }
                    let c = s.extern_id("c").unwrap();
                    prop_assert!(s.count(c, 0, 64));
                    s.packet_done();
                    packets += 1;
                }
                _ => {
                    let line = match o {
                        Op::AddExact(k, p) => format!("table_add ex fwd {k} => {p}"),
                        Op::AddTern(v, m, p, pr) => {
                            format!("table_add tern fwd {v}&&&{m} => {p} {pr}")
                        }
                        Op::Modify(h, p) => format!("table_modify ex fwd {h} {p}"),
                        Op::Delete(h) => format!("table_delete ex {h}"),
                        Op::DeleteTern(h) => format!("table_delete tern {h}"),
                        Op::Default(p) => format!("table_set_default ex fwd {p}"),
                        Op::Clear => "table_clear ex".into(),
                        Op::Packet(..) => unreachable!(),
                    };
                    let after = img.update(|m| {
                        let _ = cli_run(m, &line);
                        handles(m)
                    });
                    hits.retain(|h, _| after.contains(h));
                }
            }
            // Every replica looks up what the master holds.
            let m = img.master.lock();
            for r in &img.replicas {
                let r = r.lock();
                for key in 0..12u64 {
                    prop_assert_eq!(seen(&r, ex, key), seen(&m, ex, key));
                }
                for key in 0..64u64 {
                    prop_assert_eq!(seen(&r, tern, key), seen(&m, tern, key));
                }
                prop_assert_eq!(r.table("ex").unwrap().len(), m.table("ex").unwrap().len());
                prop_assert_eq!(r.table("tern").unwrap().len(), m.table("tern").unwrap().len());
            }
        }
        // The master's counts, after a fold, are what the replicas counted.
        img.read(|m| {
            assert_eq!(m.counter_read("c", 0).unwrap().packets, packets);
            for e in m.table("ex").unwrap().entries() {
                let want = hits.get(&e.handle).copied().unwrap_or(0);
                assert_eq!(e.counter.packets, want, "entry {}", e.handle);
                assert_eq!(e.counter.bytes, 64 * want, "entry {}", e.handle);
            }
        });
    }
}

/// Two threads, each with its own replica, increment one register cell read-modify-write
/// 20,000 times each, as packets would: the master's cell ends at exactly 40,000, and an
/// indexed counter counted in both replicas reads 40,000 after a fold.
#[test]
fn registers_are_shared_and_atomic_per_packet_counters_add_up() {
    let p = compile(PROGRAM);
    let img = Arc::new(Image::new(&p, 2));
    let (r, c) = {
        let m = img.master.lock();
        (m.extern_id("seen").unwrap(), m.extern_id("c").unwrap())
    };
    const N: u64 = 20_000;
    let threads: Vec<_> = (0..2)
        .map(|t| {
            let img = Arc::clone(&img);
            std::thread::spawn(move || {
                for i in 0..N {
                    // A batch of 32 packets under the replica's own lock.
                    let mut s = img.replicas[t].lock();
                    let reg = s.register_mut(r).unwrap();
                    let v = reg.get(1).unwrap().low_u64();
                    std::thread::yield_now();
                    let reg = s.register_mut(r).unwrap();
                    assert!(reg.set(1, &Bits::from_u64(32, v + 1)));
                    s.count(c, 2, 100);
                    s.packet_done();
                    if i % 1000 == 0 {
                        drop(s);
                        // A control-plane read in between folds the counts so far.
                        img.read(|m| m.counter_read("c", 2).unwrap());
                    }
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    img.read(|m| {
        assert_eq!(m.register_read("seen", 1).unwrap().low_u64(), 2 * N);
        let c = m.counter_read("c", 2).unwrap();
        assert_eq!((c.packets, c.bytes), (2 * N, 200 * N));
    });
    assert!(img.replicas[0].lock().is_replica());
    assert!(!img.master.lock().is_replica());
}
