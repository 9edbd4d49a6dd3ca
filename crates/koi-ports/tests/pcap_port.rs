//! pcap file ports: packets read from one file in order until its end, sent packets written to
//! another, and oversized records counted as drops.

use koi_ports::pcap::PcapPort;
use koi_ports::{Batch, Port, Readiness};
use pcap_file::pcap::{PcapPacket, PcapReader, PcapWriter};
use std::fs::File;
use std::time::Duration;

fn pkt(i: u8, len: usize) -> Vec<u8> {
    let mut f = vec![0x02, 0, 0, 0, 0, 0x0b, 0x02, 0, 0, 0, 0, 0x0a, 0x88, 0xb5];
    f.extend((0..len.saturating_sub(14)).map(|k| i.wrapping_add(k as u8)));
    f
}

#[test]
fn packets_round_trip_through_pcap_files() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (inp, out) = (dir.path().join("in.pcap"), dir.path().join("out.pcap"));
    // 40 packets (more than one batch) and one over the 9216-byte limit in the middle.
    let mut sent: Vec<Vec<u8>> = (0..40).map(|i| pkt(i, 60 + usize::from(i))).collect();
    {
        let mut w = PcapWriter::new(File::create(&inp).expect("create")).expect("writer");
        for (i, p) in sent.iter().enumerate() {
            let ts = Duration::from_micros(i as u64);
            w.write_packet(&PcapPacket::new(ts, p.len() as u32, p))
                .expect("write");
            if i == 20 {
                let big = pkt(99, 10_000);
                w.write_packet(&PcapPacket::new(ts, big.len() as u32, &big))
                    .expect("write");
            }
        }
    }

    let mut port = PcapPort::open(Some(&inp), Some(&out)).expect("open");
    assert_eq!(port.readiness(), Readiness::Always);
    let mut batch = Batch::new(koi_ports::DEFAULT_SNAPLEN);
    let mut got = Vec::new();
    let mut sizes = Vec::new();
    loop {
        let n = port.recv_batch(&mut batch).expect("recv");
        if n == 0 {
            break;
        }
        sizes.push(n);
        got.extend(batch.iter().map(<[u8]>::to_vec));
    }
    assert_eq!(got, sent);
    assert_eq!(sizes[0], koi_ports::BATCH_SIZE);
    assert!(port.at_eof());
    assert_eq!(port.readiness(), Readiness::Idle);
    let s = port.stats();
    assert_eq!((s.rx_packets, s.drop_too_big), (40, 1));

    sent.reverse();
    for p in &sent {
        port.send(p).expect("send");
    }
    assert!(port.send(&pkt(1, 10_000)).is_err());
    port.flush().expect("flush");
    assert_eq!(port.stats().tx_packets, 40);
    assert_eq!(port.stats().drop_too_big, 2);
    drop(port);

    let mut r = PcapReader::new(File::open(&out).expect("open out")).expect("reader");
    let mut written = Vec::new();
    while let Some(p) = r.next_packet() {
        written.push(p.expect("record").data.into_owned());
    }
    assert_eq!(written, sent);
}

#[test]
fn a_missing_input_file_is_an_error_not_a_panic() {
    let dir = tempfile::tempdir().expect("tempdir");
    assert!(PcapPort::open(Some(&dir.path().join("nope.pcap")), None).is_err());
    let mut w = PcapPort::open(None, Some(&dir.path().join("o.pcap"))).expect("open");
    let mut b = Batch::new(64);
    assert_eq!(w.recv_batch(&mut b).expect("recv"), 0);
    let mut r = PcapPort::open(None, None).expect("open nothing");
    assert!(r.send(&pkt(0, 60)).is_err());
    assert_eq!(r.stats().drop_link_down, 1);
}

fn open_err(p: &std::path::Path) -> String {
    match PcapPort::open(Some(p), None) {
        Ok(_) => panic!("{} opened", p.display()),
        Err(e) => e.to_string(),
    }
}

#[test]
fn an_empty_file_a_pcapng_file_and_other_link_types_are_refused_saying_why() {
    let dir = tempfile::tempdir().expect("tempdir");
    let empty = dir.path().join("empty.pcap");
    File::create(&empty).expect("create");
    assert_eq!(
        open_err(&empty),
        format!(
            "{}: empty file: not a pcap file (no pcap header)",
            empty.display()
        )
    );
    let ng = dir.path().join("x.pcapng");
    std::fs::write(
        &ng,
        [
            0x0a, 0x0d, 0x0d, 0x0a, 0x1c, 0, 0, 0, 0x4d, 0x3c, 0x2b, 0x1a,
        ],
    )
    .unwrap();
    assert_eq!(
        open_err(&ng),
        format!(
            "{}: a pcapng file: koi reads classic pcap files",
            ng.display()
        )
    );
    let raw = dir.path().join("raw.pcap");
    let header = pcap_file::pcap::PcapHeader {
        datalink: pcap_file::DataLink::RAW,
        ..Default::default()
    };
    let mut w = PcapWriter::with_header(File::create(&raw).expect("create"), header).unwrap();
    w.write_packet(&PcapPacket::new(Duration::ZERO, 20, &[0x45; 20]))
        .unwrap();
    drop(w);
    assert_eq!(
        open_err(&raw),
        format!(
            "{}: link type 101 (RAW): koi reads Ethernet (1) captures only",
            raw.display()
        )
    );
    let dir_err = open_err(dir.path());
    assert!(
        dir_err.ends_with("is a directory, not a pcap file"),
        "{dir_err}"
    );
}

/// A record shorter than the frame it captured (caplen < origlen) is dropped as `truncated`,
/// not as `too_big`.
#[test]
fn a_frame_captured_in_part_is_counted_as_truncated() {
    let dir = tempfile::tempdir().expect("tempdir");
    let inp = dir.path().join("in.pcap");
    {
        let mut w = PcapWriter::new(File::create(&inp).expect("create")).expect("writer");
        let whole = pkt(1, 60);
        w.write_packet(&PcapPacket::new(Duration::ZERO, 60, &whole))
            .unwrap();
        // 60 bytes recorded of a 1500-byte frame (a capture with snaplen 60).
        w.write_packet(&PcapPacket::new(Duration::ZERO, 1500, &whole))
            .unwrap();
    }
    let mut port = PcapPort::open(Some(&inp), None).expect("open");
    let mut batch = Batch::new(koi_ports::DEFAULT_SNAPLEN);
    while port.recv_batch(&mut batch).expect("recv") > 0 {}
    let s = port.stats();
    assert_eq!(
        (s.rx_packets, s.drop_truncated, s.drop_too_big),
        (1, 1, 0),
        "{s}"
    );
}
