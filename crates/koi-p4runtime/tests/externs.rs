//! Indexed counters and meters, registers (of bits and of a struct), value sets, digest
//! configurations and digest data, packet-in / packet-out, with packets through koi's
//! interpreter where the data plane is involved.

mod common;

use common::*;
use koi_proto::p4runtime::{
    self as p4, CounterData, CounterEntry, DigestEntry, Index, MeterConfig, MeterEntry, P4Data,
    PacketMetadata, PacketOut, RegisterEntry, ValueSetEntry, ValueSetMember, digest_entry,
    entity::Entity as E, p4_data::Data as D, update::Type,
};
use koi_state::ManualClock;
use tonic::Code;

fn idx(i: i64) -> Option<Index> {
    Some(Index { index: i })
}

fn counter(r: &Rig, name: &str, i: Option<Index>, d: Option<CounterData>) -> E {
    E::CounterEntry(CounterEntry {
        counter_id: r.counter(name),
        index: i,
        data: d,
    })
}

fn cd(bytes: i64, packets: i64) -> Option<CounterData> {
    Some(CounterData {
        byte_count: bytes,
        packet_count: packets,
    })
}

#[test]
fn counter_entries() {
    let mut r = rig("externs.p4");
    let w = counter(&r, "c_pkts", idx(3), cd(10, 2));
    assert_eq!(r.modify(w.clone()), Ok(koi_p4runtime::Effect::None));
    assert_eq!(
        r.read(counter(&r, "c_pkts", idx(3), None)).unwrap(),
        vec![w.clone()]
    );
    // Wildcards: every cell, every counter.
    assert_eq!(r.read(counter(&r, "c_pkts", None, None)).unwrap().len(), 8);
    assert_eq!(
        r.read(E::CounterEntry(Default::default())).unwrap().len(),
        12
    );
    // An unset index writes every cell.
    r.modify(counter(&r, "c_bytes", None, cd(5, 0))).unwrap();
    let all = r.read(counter(&r, "c_bytes", None, None)).unwrap();
    assert!(
        all.iter()
            .all(|e| matches!(e, E::CounterEntry(c) if c.data == cd(5, 0)))
    );
    // Unset data changes nothing.
    r.modify(counter(&r, "c_pkts", idx(3), None)).unwrap();
    assert_eq!(
        r.read(counter(&r, "c_pkts", idx(3), None)).unwrap(),
        vec![w.clone()]
    );
    // Refusals.
    assert_eq!(r.refused(Type::Insert, w.clone()), Code::InvalidArgument);
    assert_eq!(r.refused(Type::Delete, w), Code::InvalidArgument);
    assert_eq!(
        r.refused(Type::Modify, counter(&r, "c_pkts", idx(-1), cd(1, 1))),
        Code::InvalidArgument
    );
    assert_eq!(
        r.refused(Type::Modify, counter(&r, "c_pkts", idx(8), cd(1, 1))),
        Code::OutOfRange
    );
    assert_eq!(
        r.refused(Type::Modify, counter(&r, "c_pkts", idx(i64::MAX), cd(1, 1))),
        Code::OutOfRange
    );
    assert_eq!(
        r.refused(Type::Modify, counter(&r, "c_pkts", idx(0), cd(-1, 1))),
        Code::InvalidArgument
    );
    let unknown = E::CounterEntry(CounterEntry {
        counter_id: 0x1200_0001,
        ..Default::default()
    });
    assert_eq!(r.refused(Type::Modify, unknown.clone()), Code::NotFound);
    assert_eq!(r.read(unknown).unwrap_err().code, Code::NotFound);
    let zero = E::CounterEntry(CounterEntry::default());
    assert_eq!(r.refused(Type::Modify, zero), Code::InvalidArgument);
    assert_eq!(
        r.read(counter(&r, "c_pkts", idx(9), None))
            .unwrap_err()
            .code,
        Code::OutOfRange
    );
}

fn meter(r: &Rig, i: Option<Index>, c: Option<MeterConfig>) -> E {
    E::MeterEntry(MeterEntry {
        meter_id: r.meter("m_pkts"),
        index: i,
        config: c,
        counter_data: None,
    })
}

fn mc(cir: i64, pir: i64) -> Option<MeterConfig> {
    Some(MeterConfig {
        cir,
        cburst: 2,
        pir,
        pburst: 4,
        eburst: 0,
    })
}

#[test]
fn meter_entries() {
    let mut r = rig("externs.p4");
    let w = meter(&r, idx(2), mc(1_000, 2_000));
    r.modify(w.clone()).unwrap();
    assert_eq!(r.read(meter(&r, idx(2), None)).unwrap(), vec![w.clone()]);
    // Unconfigured cells show no config.
    assert_eq!(
        r.read(meter(&r, idx(1), None)).unwrap(),
        vec![meter(&r, idx(1), None)]
    );
    assert_eq!(r.read(E::MeterEntry(Default::default())).unwrap().len(), 8);
    // The meter marks as configured: 250000 packets/s is one per 4 us.
    let ext = r.s.extern_id("I.m_pkts").unwrap();
    r.modify(meter(&r, idx(0), mc(250_000, 500_000))).unwrap();
    let colours: Vec<u64> = (0..3)
        .map(|_| r.s.execute_meter(ext, 0, 64, 0).unwrap().code())
        .collect();
    // Buckets of 2 (committed) and 4 (peak) packets.
    assert_eq!(colours, [0, 0, 1]);
    // No config resets; no index writes every cell.
    r.modify(meter(&r, idx(2), None)).unwrap();
    assert_eq!(
        r.read(meter(&r, idx(2), None)).unwrap(),
        vec![meter(&r, idx(2), None)]
    );
    r.modify(meter(&r, None, mc(7, 8))).unwrap();
    let all = r.read(meter(&r, None, None)).unwrap();
    assert!(
        all.iter()
            .all(|e| matches!(e, E::MeterEntry(m) if m.config == mc(7, 8)))
    );
    // Refusals.
    assert_eq!(
        r.refused(Type::Modify, meter(&r, idx(0), mc(9, 8))),
        Code::InvalidArgument
    );
    assert_eq!(
        r.refused(Type::Modify, meter(&r, idx(8), mc(1, 1))),
        Code::OutOfRange
    );
    assert_eq!(
        r.refused(Type::Insert, meter(&r, idx(0), mc(1, 1))),
        Code::InvalidArgument
    );
    let colours = E::MeterEntry(MeterEntry {
        meter_id: r.meter("m_pkts"),
        counter_data: Some(Default::default()),
        ..Default::default()
    });
    assert_eq!(
        r.refused(Type::Modify, colours.clone()),
        Code::Unimplemented
    );
    assert_eq!(r.read(colours).unwrap_err().code, Code::Unimplemented);
}

fn bits(v: &[u8]) -> P4Data {
    P4Data {
        data: Some(D::Bitstring(v.to_vec())),
    }
}

fn strukt(members: Vec<P4Data>) -> P4Data {
    P4Data {
        data: Some(D::Struct(p4::P4StructLike { members })),
    }
}

fn reg(r: &Rig, name: &str, i: Option<Index>, d: Option<P4Data>) -> E {
    E::RegisterEntry(RegisterEntry {
        register_id: r.register(name),
        index: i,
        data: d,
    })
}

#[test]
fn register_entries_of_bits_and_structs() {
    let mut r = rig("externs.p4");
    let w = reg(&r, "r32", idx(5), Some(bits(b"\x01\x02\x03")));
    r.modify(w.clone()).unwrap();
    assert_eq!(
        r.read(reg(&r, "r32", idx(5), None)).unwrap(),
        vec![w.clone()]
    );
    assert_eq!(
        r.read(reg(&r, "r32", idx(4), None)).unwrap(),
        vec![reg(&r, "r32", idx(4), Some(bits(b"\x00")))]
    );
    assert_eq!(r.read(reg(&r, "r32", None, None)).unwrap().len(), 16);
    assert_eq!(
        r.read(E::RegisterEntry(Default::default())).unwrap().len(),
        20
    );
    // Structs are packed first field highest.
    let p = strukt(vec![bits(b"\x12\x34"), bits(b"\x05")]);
    let wp = reg(&r, "r_pair", idx(0), Some(p.clone()));
    r.modify(wp.clone()).unwrap();
    assert_eq!(r.read(reg(&r, "r_pair", idx(0), None)).unwrap(), vec![wp]);
    let ext = r.s.extern_id("I.r_pair").unwrap();
    assert_eq!(
        r.s.register(ext).unwrap().get(0),
        Some(&koi_ir::Bits::from_u64(24, 0x123405))
    );
    // The program increments the second field: the layout is the data plane's.
    let mut it = koi_interp::Interpreter::new(&r.pipeline).unwrap();
    let frame = [vec![0u8; 12], vec![0x12, 0x34]].concat();
    it.process(&mut r.s, &frame, 1, &ManualClock::new(0))
        .unwrap();
    let after = strukt(vec![bits(b"\x12\x34"), bits(b"\x06")]);
    assert_eq!(
        r.read(reg(&r, "r_pair", idx(0), None)).unwrap(),
        vec![reg(&r, "r_pair", idx(0), Some(after))]
    );
    // Wildcard writes.
    r.modify(reg(&r, "r32", None, Some(bits(b"\x09")))).unwrap();
    assert!(
        r.read(reg(&r, "r32", None, None))
            .unwrap()
            .iter()
            .all(|e| *e == {
                let E::RegisterEntry(x) = e else {
                    unreachable!()
                };
                reg(&r, "r32", x.index, Some(bits(b"\x09")))
            })
    );
    // Refusals: shape, width, index, type, no data.
    let cases = [
        (
            reg(&r, "r32", idx(0), Some(bits(b"\x01\x00\x00\x00\x00"))),
            Code::OutOfRange,
        ),
        (
            reg(&r, "r32", idx(0), Some(strukt(vec![]))),
            Code::InvalidArgument,
        ),
        (
            reg(&r, "r_pair", idx(0), Some(bits(b"\x01"))),
            Code::InvalidArgument,
        ),
        (
            reg(&r, "r_pair", idx(0), Some(strukt(vec![bits(b"\x01")]))),
            Code::InvalidArgument,
        ),
        (
            reg(
                &r,
                "r_pair",
                idx(0),
                Some(strukt(vec![bits(b"\x01"), bits(b"\x01\x00")])),
            ),
            Code::OutOfRange,
        ),
        (
            reg(&r, "r_pair", idx(0), Some(P4Data { data: None })),
            Code::InvalidArgument,
        ),
        (
            reg(&r, "r32", idx(16), Some(bits(b"\x01"))),
            Code::OutOfRange,
        ),
        (
            reg(&r, "r32", idx(-5), Some(bits(b"\x01"))),
            Code::InvalidArgument,
        ),
        (reg(&r, "r32", idx(0), None), Code::InvalidArgument),
    ];
    for (i, (e, code)) in cases.into_iter().enumerate() {
        assert_eq!(r.refused(Type::Modify, e), code, "case {i}");
    }
    assert_eq!(
        r.refused(Type::Insert, reg(&r, "r32", idx(0), Some(bits(b"\x01")))),
        Code::InvalidArgument
    );
}

fn vs(r: &Rig, members: &[&[u8]]) -> E {
    E::ValueSetEntry(ValueSetEntry {
        value_set_id: r.value_set("vs_types"),
        members: members
            .iter()
            .map(|m| ValueSetMember {
                r#match: vec![exact(1, m)],
            })
            .collect(),
    })
}

#[test]
fn value_set_entries() {
    let mut r = rig("externs.p4");
    let w = vs(&r, &[b"\x88\xb5", b"\x12\x34"]);
    r.modify(w.clone()).unwrap();
    assert_eq!(r.read(vs(&r, &[])).unwrap(), vec![w.clone()]);
    assert_eq!(
        r.read(E::ValueSetEntry(Default::default())).unwrap(),
        vec![w]
    );
    let id = r.s.value_set_id("P.vs_types").unwrap();
    assert!(r.s.value_set_contains(id, &[koi_ir::Bits::from_u64(16, 0x88b5)]));
    // Duplicates, too many members, wrong widths, INSERT.
    assert_eq!(
        r.refused(Type::Modify, vs(&r, &[b"\x01", b"\x00\x01"])),
        Code::AlreadyExists
    );
    assert_eq!(
        r.refused(
            Type::Modify,
            vs(&r, &[b"\x01", b"\x02", b"\x03", b"\x04", b"\x05"])
        ),
        Code::ResourceExhausted
    );
    assert_eq!(
        r.refused(Type::Modify, vs(&r, &[b"\x01\x00\x00"])),
        Code::OutOfRange
    );
    assert_eq!(
        r.refused(Type::Insert, vs(&r, &[b"\x01"])),
        Code::InvalidArgument
    );
    let no_field = E::ValueSetEntry(ValueSetEntry {
        value_set_id: r.value_set("vs_types"),
        members: vec![ValueSetMember { r#match: vec![] }],
    });
    assert_eq!(r.refused(Type::Modify, no_field), Code::InvalidArgument);
    // An empty list empties the set.
    r.modify(vs(&r, &[])).unwrap();
    assert_eq!(r.read(vs(&r, &[])).unwrap(), vec![vs(&r, &[])]);
    assert!(!r.s.value_set_contains(id, &[koi_ir::Bits::from_u64(16, 0x88b5)]));
}

fn config(t: i64, n: i32, ack: i64) -> Option<digest_entry::Config> {
    Some(digest_entry::Config {
        max_timeout_ns: t,
        max_list_size: n,
        ack_timeout_ns: ack,
    })
}

#[test]
fn digest_entries_and_digest_data() {
    let mut r = rig("externs.p4");
    let id = r.digest("learn_t");
    let d = |c| {
        E::DigestEntry(DigestEntry {
            digest_id: id,
            config: c,
        })
    };
    assert_eq!(koi_p4runtime::digest_config(&r.t, id), None);
    assert_eq!(
        r.insert(d(config(1000, 10, 5000))),
        Ok(koi_p4runtime::Effect::None)
    );
    assert_eq!(
        koi_p4runtime::digest_config(&r.t, id),
        config(1000, 10, 5000)
    );
    assert_eq!(
        r.read(E::DigestEntry(Default::default())).unwrap(),
        vec![d(config(1000, 10, 5000))]
    );
    assert_eq!(
        r.refused(Type::Insert, d(config(1, 1, 1))),
        Code::AlreadyExists
    );
    r.modify(d(config(0, 1, 0))).unwrap();
    assert_eq!(r.read(d(None)).unwrap(), vec![d(config(0, 1, 0))]);
    assert_eq!(r.refused(Type::Modify, d(None)), Code::InvalidArgument);
    assert_eq!(
        r.refused(Type::Modify, d(config(-1, 1, 0))),
        Code::InvalidArgument
    );
    r.delete(d(None)).unwrap();
    assert_eq!(r.refused(Type::Delete, d(None)), Code::NotFound);
    assert_eq!(r.refused(Type::Modify, d(config(1, 1, 1))), Code::NotFound);
    assert!(r.read(d(None)).unwrap().is_empty());
    let unknown = E::DigestEntry(DigestEntry {
        digest_id: 0x1700_0001,
        config: None,
    });
    assert_eq!(r.refused(Type::Insert, unknown.clone()), Code::NotFound);
    assert_eq!(r.read(unknown).unwrap_err().code, Code::NotFound);

    // A packet through the program sends a learn_t digest; its data is the struct.
    let mut it = koi_interp::Interpreter::new(&r.pipeline).unwrap();
    let frame = [
        vec![0xff; 6],
        vec![0x00, 0x11, 0x22, 0x33, 0x44, 0x55],
        vec![0x12, 0x34],
    ]
    .concat();
    it.process(&mut r.s, &frame, 7, &ManualClock::new(0))
        .unwrap();
    let msgs = r.s.take_digests();
    assert_eq!(msgs.len(), 1);
    let (got_id, data) = koi_p4runtime::digest_data(&r.t, &msgs[0]).unwrap();
    assert_eq!(got_id, id);
    let expected = strukt(vec![
        bits(b"\x11\x22\x33\x44\x55"),
        bits(b"\x07"),
        strukt(vec![bits(b"\x01"), bits(b"\x02")]),
        bits(b"\x01"),
        // A bool member (the frame's EtherType is 0x1234).
        P4Data {
            data: Some(D::Bool(true)),
        },
    ]);
    assert_eq!(data, expected);
    let mut other = msgs[0].clone();
    other.name = "nope".into();
    assert_eq!(
        koi_p4runtime::digest_data(&r.t, &other).unwrap_err().code,
        Code::NotFound
    );
    other.name = msgs[0].name.clone();
    other.fields.pop();
    assert_eq!(
        koi_p4runtime::digest_data(&r.t, &other).unwrap_err().code,
        Code::InvalidArgument
    );
}

fn md(id: u32, v: &[u8]) -> PacketMetadata {
    PacketMetadata {
        metadata_id: id,
        value: v.to_vec(),
    }
}

#[test]
fn packet_out_and_packet_in_through_the_program() {
    let mut r = rig("externs.p4");
    let pipeline = r.pipeline.clone();
    let mut it = koi_interp::Interpreter::new(&pipeline).unwrap();
    let clock = ManualClock::new(0);
    let payload = [
        vec![0x02; 6],
        vec![0x04; 6],
        vec![0x12, 0x34],
        b"data".to_vec(),
    ]
    .concat();
    // packet_out: egress_port 9 bits, flag 1, pad 6 in front of the payload.
    let po = PacketOut {
        payload: payload.clone(),
        metadata: vec![md(1, b"\x00\x05"), md(2, b"\x01"), md(3, b"\x00")],
    };
    let bytes = koi_p4runtime::packet_out(&r.t, &po).unwrap();
    // 0b0_0000_0101 (port 5), 0b1 (flag), 0b00_0000 (pad).
    assert_eq!(bytes[..2], [0x02, 0xc0]);
    assert_eq!(bytes[2..], payload[..]);
    let out = it.process(&mut r.s, &bytes, 64, &clock).unwrap();
    assert_eq!(out.outputs.len(), 1);
    assert_eq!((out.outputs[0].port, &out.outputs[0].bytes), (5, &payload));
    // Refusals: missing, repeated, unknown metadata; too wide a value.
    let bad = |m: Vec<PacketMetadata>| {
        koi_p4runtime::packet_out(
            &r.t,
            &PacketOut {
                payload: vec![],
                metadata: m,
            },
        )
        .unwrap_err()
        .code
    };
    assert_eq!(
        bad(vec![md(1, b"\x05"), md(2, b"\x01")]),
        Code::InvalidArgument
    );
    assert_eq!(
        bad(vec![
            md(1, b"\x05"),
            md(1, b"\x05"),
            md(2, b"\x01"),
            md(3, b"\x00")
        ]),
        Code::InvalidArgument
    );
    assert_eq!(
        bad(vec![
            md(1, b"\x05"),
            md(2, b"\x01"),
            md(3, b"\x00"),
            md(4, b"\x00")
        ]),
        Code::InvalidArgument
    );
    assert_eq!(
        bad(vec![md(1, b"\x02\x00"), md(2, b"\x01"), md(3, b"\x00")]),
        Code::OutOfRange
    );
    assert_eq!(
        bad(vec![md(1, b"\x05"), md(2, b"\x02"), md(3, b"\x00")]),
        Code::OutOfRange
    );

    // packet_in: a member forwarding to the CPU port (64) makes the program add packet_in.
    let m = E::ActionProfileMember(p4::ActionProfileMember {
        action_profile_id: r.profile("ap"),
        member_id: 1,
        action: Some(action(r.action("fwd"), &[b"\x40"])),
    });
    r.insert(m).unwrap();
    r.insert(te(entry(
        r.table("t_ap"),
        vec![exact(1, &[0x02; 6])],
        member(1),
        0,
    )))
    .unwrap();
    let out = it.process(&mut r.s, &payload, 3, &clock).unwrap();
    assert_eq!(out.outputs[0].port, 64);
    let pi = koi_p4runtime::packet_in(&r.t, &out.outputs[0].bytes).unwrap();
    // ingress_port is a translated port_t (controller bit<32>): 3; pad 0; reason 7.
    assert_eq!(
        pi.metadata,
        vec![md(1, b"\x03"), md(2, b"\x00"), md(3, b"\x07")]
    );
    assert_eq!(pi.payload, payload);
    assert_eq!(
        koi_p4runtime::packet_in(&r.t, b"\x00").unwrap_err().code,
        Code::InvalidArgument
    );
}

#[test]
fn programs_without_controller_headers_pass_packets_through() {
    let r = rig("tables.p4");
    let pi = koi_p4runtime::packet_in(&r.t, b"abc").unwrap();
    assert_eq!((pi.payload, pi.metadata), (b"abc".to_vec(), vec![]));
    let po = PacketOut {
        payload: b"xyz".to_vec(),
        metadata: vec![],
    };
    assert_eq!(koi_p4runtime::packet_out(&r.t, &po).unwrap(), b"xyz");
    let po = PacketOut {
        payload: vec![],
        metadata: vec![md(1, b"\x01")],
    };
    assert_eq!(
        koi_p4runtime::packet_out(&r.t, &po).unwrap_err().code,
        Code::InvalidArgument
    );
}
