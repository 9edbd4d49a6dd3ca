//! `examples/appswitch/appswitch.p4`, the memcached load balancer, packet by packet through
//! `koi trace` with its example entries: binary-protocol requests to the service address go
//! to the server the key's CRC-32 falls to on the ring (or a pinned key's server), rewritten
//! with both checksums right (checked here from scratch, not incrementally); replies get the
//! service address back; other traffic is switched unchanged; what cannot be routed (several
//! datagrams, an IP fragment, no key, a key over 250 bytes, a truncated key, a header that
//! is not a request) goes to the fallback and never to a server. The key hashes are computed
//! here independently (bitwise CRC-32/ISO-HDLC and CRC-16/ARC, FNV-1 and FNV-1a).

mod ctl_support;
mod e2e;
use e2e::csum16;
use std::process::Command;

const PROGRAM: &str = "examples/appswitch/appswitch.p4";
const ENTRIES: &str = "examples/appswitch/appswitch.entries";

const CLIENT_MAC: [u8; 6] = [2, 0, 0, 0, 0, 1];
const VIP_MAC: [u8; 6] = [2, 0, 0, 0, 0, 0x64];
const CLIENT: [u8; 4] = [10, 0, 0, 1];
const VIP: [u8; 4] = [10, 0, 0, 100];
/// Server A (port 2) and B (port 3): MAC, address.
const A: ([u8; 6], [u8; 4], u16) = ([2, 0, 0, 0, 0, 0x0b], [10, 0, 0, 11], 2);
const B: ([u8; 6], [u8; 4], u16) = ([2, 0, 0, 0, 0, 0x0c], [10, 0, 0, 12], 3);

fn crc32(data: &[u8]) -> u32 {
    let mut c = u32::MAX;
    for &b in data {
        c ^= u32::from(b);
        for _ in 0..8 {
            c = if c & 1 != 0 {
                (c >> 1) ^ 0xedb8_8320
            } else {
                c >> 1
            };
        }
    }
    !c
}

fn crc16_arc(data: &[u8]) -> u16 {
    let mut c: u16 = 0;
    for &b in data {
        c ^= u16::from(b);
        for _ in 0..8 {
            c = if c & 1 != 0 {
                (c >> 1) ^ 0xa001
            } else {
                c >> 1
            };
        }
    }
    c
}

/// The ring point of twemproxy's FNV hash `mode` (`fnv1a_64`, `fnv1_64`, `fnv1a_32`,
/// `fnv1_32`) as twemproxy computes it on x86: FNV over the key's bytes read as signed chars
/// (a byte of 0x80 or more sign-extended), the 64-bit ones cut to their low 32 bits.
fn fnv_point(mode: &str, key: &[u8]) -> u32 {
    let (basis, prime) = if mode.ends_with("_64") {
        (0xcbf2_9ce4_8422_2325u64, 0x100_0000_01b3u64)
    } else {
        (0x811c_9dc5, 0x0100_0193)
    };
    let mask = if mode.ends_with("_64") {
        u64::MAX
    } else {
        0xffff_ffff
    };
    let a = mode.starts_with("fnv1a");
    let h = key.iter().fold(basis, |h, &b| {
        let v = (b as i8 as i64 as u64) & mask;
        if a {
            ((h ^ v).wrapping_mul(prime)) & mask
        } else {
            (h.wrapping_mul(prime) & mask) ^ v
        }
    });
    h as u32
}

/// An Ethernet/IPv4/UDP frame with both checksums computed (`udp_csum`: else 0, none).
fn frame(
    macs: ([u8; 6], [u8; 6]),
    ips: ([u8; 4], [u8; 4]),
    ports: (u16, u16),
    payload: &[u8],
    udp_csum: bool,
) -> Vec<u8> {
    let udp_len = 8 + payload.len() as u16;
    let mut udp = Vec::new();
    udp.extend_from_slice(&ports.0.to_be_bytes());
    udp.extend_from_slice(&ports.1.to_be_bytes());
    udp.extend_from_slice(&udp_len.to_be_bytes());
    udp.extend_from_slice(&[0, 0]);
    udp.extend_from_slice(payload);
    if udp_csum {
        let mut ph = Vec::new();
        ph.extend_from_slice(&ips.0);
        ph.extend_from_slice(&ips.1);
        ph.extend_from_slice(&[0, 17]);
        ph.extend_from_slice(&udp_len.to_be_bytes());
        ph.extend_from_slice(&udp);
        let c = match csum16(&ph) {
            0 => 0xffff,
            c => c,
        };
        udp[6..8].copy_from_slice(&c.to_be_bytes());
    }
    let mut ip = vec![0x45, 0];
    ip.extend_from_slice(&(20 + udp_len).to_be_bytes());
    ip.extend_from_slice(&[0, 1, 0, 0, 64, 17, 0, 0]);
    ip.extend_from_slice(&ips.0);
    ip.extend_from_slice(&ips.1);
    let c = csum16(&ip);
    ip[10..12].copy_from_slice(&c.to_be_bytes());
    let mut f = Vec::new();
    f.extend_from_slice(&macs.1);
    f.extend_from_slice(&macs.0);
    f.extend_from_slice(&[0x08, 0x00]);
    f.extend_from_slice(&ip);
    f.extend_from_slice(&udp);
    f
}

/// memcached's UDP frame header and a binary request: `opcode`, `extras`, `key` (its length
/// field `key_len`, normally the key's length).
fn binary(
    seq: u16,
    datagrams: u16,
    magic: u8,
    opcode: u8,
    extras: &[u8],
    key: &[u8],
    key_len: u16,
) -> Vec<u8> {
    let mut m = Vec::new();
    m.extend_from_slice(&7u16.to_be_bytes());
    m.extend_from_slice(&seq.to_be_bytes());
    m.extend_from_slice(&datagrams.to_be_bytes());
    m.extend_from_slice(&[0, 0]);
    m.extend_from_slice(&[magic, opcode]);
    m.extend_from_slice(&key_len.to_be_bytes());
    m.push(extras.len() as u8);
    m.extend_from_slice(&[0, 0, 0]);
    m.extend_from_slice(&((extras.len() + key.len()) as u32).to_be_bytes());
    m.extend_from_slice(&0xabcdu32.to_be_bytes());
    m.extend_from_slice(&[0; 8]);
    m.extend_from_slice(extras);
    m.extend_from_slice(key);
    m
}

/// memcached's UDP frame header and an ASCII request made of `parts`.
fn ascii(parts: &[&[u8]]) -> Vec<u8> {
    let mut m = vec![0, 7, 0, 0, 0, 1, 0, 0];
    for p in parts {
        m.extend_from_slice(p);
    }
    m
}

fn get(key: &[u8]) -> Vec<u8> {
    binary(0, 1, 0x80, 0x00, &[], key, key.len() as u16)
}

/// A request from the client to the service.
fn request(payload: &[u8], udp_csum: bool) -> Vec<u8> {
    frame(
        (CLIENT_MAC, VIP_MAC),
        (CLIENT, VIP),
        (40000, 11211),
        payload,
        udp_csum,
    )
}

/// What `koi trace` sends for `packet` in on port 1 with the example entries plus `extra`:
/// `(port, bytes)`, or `None` when nothing is sent.
fn trace(packet: &[u8], port: u16, extra: &str) -> Option<(u16, Vec<u8>)> {
    let root = concat!(env!("CARGO_MANIFEST_DIR"), "/../..");
    let base = std::fs::read_to_string(format!("{root}/{ENTRIES}")).unwrap();
    let path = std::env::temp_dir().join(format!(
        "koi-appswitch-{}-{:x}.entries",
        std::process::id(),
        crc32(extra.as_bytes()) ^ crc32(packet)
    ));
    std::fs::write(&path, format!("{base}\n{extra}\n")).unwrap();
    let hex: String = packet.iter().map(|b| format!("{b:02x}")).collect();
    let out = Command::new(env!("CARGO_BIN_EXE_koi"))
        .args(["trace", PROGRAM, "--entries"])
        .arg(&path)
        .args(["--port", &port.to_string(), "--packet", &hex])
        .current_dir(root)
        .output()
        .expect("run koi trace");
    let _ = std::fs::remove_file(&path);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "koi trace: {}{}",
        stdout,
        String::from_utf8_lossy(&out.stderr)
    );
    let result = stdout
        .lines()
        .find(|l| l.starts_with("result:"))
        .unwrap_or_else(|| panic!("no result line:\n{stdout}"));
    if result.contains("no packet sent") {
        return None;
    }
    // "result: port 3: 83 bytes: 0200..."
    let mut parts = result.trim_start_matches("result: port ").splitn(3, ": ");
    let port: u16 = parts.next()?.parse().ok()?;
    let bytes = parts.nth(1)?.trim();
    let bytes = (0..bytes.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&bytes[i..i + 2], 16).unwrap())
        .collect();
    Some((port, bytes))
}

/// The request as the server (MAC, address) should receive it.
fn to_server(payload: &[u8], server: ([u8; 6], [u8; 4], u16), udp_csum: bool) -> (u16, Vec<u8>) {
    (
        server.2,
        frame(
            (CLIENT_MAC, server.0),
            (CLIENT, server.1),
            (40000, 11211),
            payload,
            udp_csum,
        ),
    )
}

/// A key whose CRC-32 is below 2^31 (`low`) or not.
fn key_in_half(low: bool) -> Vec<u8> {
    (0..)
        .map(|i| format!("key:{i}").into_bytes())
        .find(|k| (crc32(k) < 0x8000_0000) == low)
        .unwrap()
}

#[test]
fn the_key_routes_the_request_to_its_server_on_the_ring() {
    assert_eq!(crc32(b"user:1000"), 0x9f74_17e3);
    let (a, b) = (key_in_half(true), key_in_half(false));
    for (key, server) in [(&a, A), (&b, B)] {
        let m = get(key);
        assert_eq!(
            trace(&request(&m, true), 1, ""),
            Some(to_server(&m, server, true))
        );
        // Without a UDP checksum, none after.
        assert_eq!(
            trace(&request(&m, false), 1, ""),
            Some(to_server(&m, server, false))
        );
        // A SET with its 8 bytes of extras, by the same key.
        let set = binary(
            0,
            1,
            0x80,
            0x01,
            &[0, 0, 0, 7, 0, 0, 0, 0],
            key,
            key.len() as u16,
        );
        assert_eq!(
            trace(&request(&set, true), 1, ""),
            Some(to_server(&set, server, true))
        );
    }
    // Keys of 1 and 250 bytes.
    for len in [1, 250] {
        let key: Vec<u8> = (0..len).map(|i| b'a' + (i % 26) as u8).collect();
        let server = if crc32(&key) < 0x8000_0000 { A } else { B };
        let m = get(&key);
        assert_eq!(
            trace(&request(&m, true), 1, ""),
            Some(to_server(&m, server, true)),
            "{len}"
        );
    }
}

#[test]
fn ascii_requests_are_routed_by_their_key_too() {
    let (a, b) = (key_in_half(true), key_in_half(false));
    for (key, server) in [(&a, A), (&b, B)] {
        for m in [
            ascii(&[b"get ", key, b"\r\n"]),
            ascii(&[b"gets ", key, b"\r\n"]),
            ascii(&[b"set ", key, b" 0 0 1\r\nv\r\n"]),
            ascii(&[b"add ", key, b" 5 60 2 noreply\r\nvv\r\n"]),
            ascii(&[b"delete ", key, b"\r\n"]),
            ascii(&[b"incr ", key, b" 1\r\n"]),
            ascii(&[b"touch ", key, b" 10\r\n"]),
        ] {
            assert_eq!(
                trace(&request(&m, true), 1, ""),
                Some(to_server(&m, server, true)),
                "{}",
                String::from_utf8_lossy(&m[8..])
            );
        }
    }
    // Keys of 1 and 250 bytes.
    for len in [1, 250] {
        let key: Vec<u8> = (0..len).map(|i| b'a' + (i % 26) as u8).collect();
        let server = if crc32(&key) < 0x8000_0000 { A } else { B };
        let m = ascii(&[b"get ", &key, b"\r\n"]);
        assert_eq!(
            trace(&request(&m, true), 1, ""),
            Some(to_server(&m, server, true)),
            "{len}"
        );
    }
}

#[test]
fn a_pinned_key_wins_over_the_ring_and_the_hash_mode_is_twemproxys() {
    let key = key_in_half(false);
    let m = get(&key);
    let pin = format!(
        "table_add pinned to_server {} {} {} => 02:00:00:00:00:0b 10.0.0.11 11211 2",
        crc32(&key),
        crc16_arc(&key),
        key.len()
    );
    assert_eq!(
        trace(&request(&m, true), 1, &pin),
        Some(to_server(&m, A, true))
    );
    // twemproxy's `crc32`: bits 30..16 of the CRC; a ring over 0..0x7fff.
    let ring15 = "table_set_default hash_mode hash_crc32\n\
                  table_delete ring 0\ntable_delete ring 1\n\
                  table_add ring to_server 0->0x3fff => 02:00:00:00:00:0b 10.0.0.11 11211 2 1\n\
                  table_add ring to_server 0x4000->0x7fff => 02:00:00:00:00:0c 10.0.0.12 11211 3 1";
    for i in 0..6 {
        let key = format!("k{i}").into_bytes();
        let point = (crc32(&key) >> 16) & 0x7fff;
        let server = if point < 0x4000 { A } else { B };
        let m = get(&key);
        assert_eq!(
            trace(&request(&m, true), 1, ring15),
            Some(to_server(&m, server, true))
        );
    }
}

/// The FNV hash modes: the ring (the example's halves) is indexed by the key's FNV, for keys
/// of 1 to 250 bytes, binary and ASCII requests, keys with bytes of 0x80 and more hashed as
/// twemproxy reads them, as signed chars.
#[test]
fn fnv_hash_modes_index_the_ring_by_the_keys_fnv() {
    assert_eq!(fnv_point("fnv1a_64", b"foobar"), 0xf739_67e8);
    assert_eq!(fnv_point("fnv1a_32", b"foobar"), 0xbf9c_f968);
    assert_eq!(fnv_point("fnv1_64", b"foobar"), 0xa4dd_a9c2);
    assert_eq!(fnv_point("fnv1_32", b"foobar"), 0x31f0_b262);
    // Twemproxy's nc_fnv.c functions, built with gcc on x86, for "cl\xc3\xa9-\xff".
    let high = b"cl\xc3\xa9-\xff";
    assert_eq!(fnv_point("fnv1a_64", high), 0xfb81_d4fa);
    assert_eq!(fnv_point("fnv1a_32", high), 0x0afc_865a);
    assert_eq!(fnv_point("fnv1_64", high), 0x1764_b6e0);
    assert_eq!(fnv_point("fnv1_32", high), 0xce85_87a0);
    let mut keys: Vec<Vec<u8>> = vec![
        b"a".to_vec(),
        b"k7".to_vec(),
        b"foobar".to_vec(),
        b"user:1000".to_vec(),
        vec![b'z'; 250],
        "clé-été".as_bytes().to_vec(),
        vec![0xff; 3],
        (0x80..=0xfe).collect(),
    ];
    keys.extend((0..4).map(|i| format!("key:{i}").into_bytes()));
    for mode in ["fnv1a_64", "fnv1_64", "fnv1a_32", "fnv1_32"] {
        let extra = format!("table_set_default hash_mode hash_{mode}");
        let mut sides = [0; 2];
        for key in &keys {
            let low = fnv_point(mode, key) < 0x8000_0000;
            sides[usize::from(!low)] += 1;
            let server = if low { A } else { B };
            let m = get(key);
            assert_eq!(
                trace(&request(&m, true), 1, &extra),
                Some(to_server(&m, server, true)),
                "{mode} {key:?}"
            );
        }
        assert!(sides[0] > 0 && sides[1] > 0, "{mode}: keys on both halves");
        let m = ascii(&[b"get ", &keys[3], b"\r\n"]);
        let server = if fnv_point(mode, &keys[3]) < 0x8000_0000 {
            A
        } else {
            B
        };
        assert_eq!(
            trace(&request(&m, true), 1, &extra),
            Some(to_server(&m, server, true)),
            "{mode} ascii"
        );
    }
}

#[test]
fn replies_carry_the_service_address_and_other_traffic_is_switched() {
    let reply = binary(0, 1, 0x81, 0x00, &[0, 0, 0, 0], b"", 0);
    let from_b = frame(
        (B.0, CLIENT_MAC),
        (B.1, CLIENT),
        (11211, 40000),
        &reply,
        true,
    );
    let seen = frame(
        (VIP_MAC, CLIENT_MAC),
        (VIP, CLIENT),
        (11211, 40000),
        &reply,
        true,
    );
    assert_eq!(trace(&from_b, 3, ""), Some((1, seen)));
    // DNS from the client to server A's address: switched to A's port unchanged.
    let dns = frame(
        (CLIENT_MAC, A.0),
        (CLIENT, A.1),
        (40000, 53),
        b"\x12\x34\x01\x00",
        true,
    );
    assert_eq!(trace(&dns, 1, ""), Some((2, dns.clone())));
    // ARP for the service address: answered by the switch with the service's MAC.
    let ask = |target: [u8; 4]| {
        let mut f = vec![0xff; 6];
        f.extend_from_slice(&CLIENT_MAC);
        f.extend_from_slice(&[0x08, 0x06, 0, 1, 0x08, 0, 6, 4, 0, 1]);
        f.extend_from_slice(&CLIENT_MAC);
        f.extend_from_slice(&CLIENT);
        f.extend_from_slice(&[0; 6]);
        f.extend_from_slice(&target);
        f
    };
    let mut answer = CLIENT_MAC.to_vec();
    answer.extend_from_slice(&VIP_MAC);
    answer.extend_from_slice(&[0x08, 0x06, 0, 1, 0x08, 0, 6, 4, 0, 2]);
    answer.extend_from_slice(&VIP_MAC);
    answer.extend_from_slice(&VIP);
    answer.extend_from_slice(&CLIENT_MAC);
    answer.extend_from_slice(&CLIENT);
    assert_eq!(trace(&ask(VIP), 1, ""), Some((1, answer)));
    // ARP for a server: flooded to the other ports (the first copy: port 2).
    assert_eq!(trace(&ask(A.1), 1, ""), Some((2, ask(A.1))));
    // An unknown destination MAC: flooded, as a learning switch does (the first copy: port 2).
    let unknown = frame(
        (CLIENT_MAC, [2, 0, 0, 0, 0, 0x99]),
        (CLIENT, A.1),
        (1, 2),
        b"x",
        true,
    );
    assert_eq!(trace(&unknown, 1, ""), Some((2, unknown.clone())));
    // A server's answer to the controller's ARP request (from the service address) goes to
    // the controller, behind the packet-in header (ingress port 3, 9 bits, then 7 bits of
    // padding); with no `arp_answers` entry, it is switched like any frame.
    let mut told = VIP_MAC.to_vec();
    told.extend_from_slice(&A.0);
    told.extend_from_slice(&[0x08, 0x06, 0, 1, 0x08, 0, 6, 4, 0, 2]);
    told.extend_from_slice(&A.0);
    told.extend_from_slice(&A.1);
    told.extend_from_slice(&VIP_MAC);
    told.extend_from_slice(&VIP);
    let to_controller = "table_add arp_answers to_controller 10.0.0.100 =>";
    let mut packet_in = vec![3 >> 1, (3 & 1) << 7];
    packet_in.extend_from_slice(&told);
    assert_eq!(trace(&told, 3, to_controller), Some((255, packet_in)));
    assert_ne!(trace(&told, 3, "").map(|(port, _)| port), Some(255));
}

#[test]
fn what_cannot_be_routed_goes_to_the_fallback_never_to_a_server() {
    let key = key_in_half(true);
    let proxy = "table_set_default fallback to_server 02:00:00:00:00:50 10.0.0.80 22122 4";
    let cases: Vec<(&str, Vec<u8>)> = vec![
        (
            "two datagrams",
            binary(0, 2, 0x80, 0x00, &[], &key, key.len() as u16),
        ),
        (
            "second datagram",
            binary(1, 2, 0x80, 0x00, &[], &key, key.len() as u16),
        ),
        ("no key (NOOP)", binary(0, 1, 0x80, 0x0a, &[], b"", 0)),
        ("a key over 250 bytes", get(&[b'x'; 251])),
        (
            "a truncated key",
            binary(0, 1, 0x80, 0x00, &[], &key, key.len() as u16 + 10),
        ),
        (
            "a reply's magic",
            binary(0, 1, 0x81, 0x00, &[], &key, key.len() as u16),
        ),
        (
            "an ASCII get of two keys",
            ascii(&[b"get ", &key, b" ", &key, b"\r\n"]),
        ),
        ("an ASCII get without a key", ascii(&[b"get \r\n"])),
        (
            "an ASCII key over 250 bytes",
            ascii(&[b"get ", &[b'k'; 251], b"\r\n"]),
        ),
        (
            "an ASCII gat (expiry first)",
            ascii(&[b"gat 10 ", &key, b"\r\n"]),
        ),
        ("an unknown ASCII command", ascii(&[b"stats\r\n"])),
        ("a short frame header", vec![0, 7, 0, 0]),
    ];
    for (what, m) in &cases {
        let pkt = request(m, true);
        assert_eq!(
            trace(&pkt, 1, ""),
            None,
            "{what}: dropped without a fallback"
        );
        let (port, out) = trace(&pkt, 1, proxy).unwrap_or_else(|| panic!("{what}: lost"));
        assert_eq!(port, 4, "{what}: to the proxy");
        let want = frame(
            (CLIENT_MAC, [2, 0, 0, 0, 0, 0x50]),
            (CLIENT, [10, 0, 0, 80]),
            (40000, 22122),
            m,
            true,
        );
        assert_eq!(out, want, "{what}: rewritten for the proxy");
    }
    // An IP fragment to the service address: to the fallback too.
    let mut frag = request(&get(&key), true);
    frag[20] = 0x20; // more fragments
    let c = {
        frag[24] = 0;
        frag[25] = 0;
        csum16(&frag[14..34])
    };
    frag[24..26].copy_from_slice(&c.to_be_bytes());
    assert_eq!(trace(&frag, 1, ""), None, "a fragment is not routed");
}

#[test]
fn the_ascii_parser_is_what_its_generator_writes() {
    let root = concat!(env!("CARGO_MANIFEST_DIR"), "/../..");
    let out = Command::new("python3")
        .arg("examples/appswitch/gen_ascii_parser.py")
        .current_dir(root)
        .output()
        .expect("run python3");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let committed =
        std::fs::read_to_string(format!("{root}/examples/appswitch/ascii_parser.p4")).unwrap();
    assert!(
        String::from_utf8_lossy(&out.stdout) == committed,
        "examples/appswitch/ascii_parser.p4 is stale: run \
         `python3 examples/appswitch/gen_ascii_parser.py > examples/appswitch/ascii_parser.p4`"
    );
}

/// The cached datapath caches AppSwitch's requests: the program draws `random` only for the
/// `random` distribution, and a run that draws nothing holds no state-derived value, so a
/// ring request's flow is cached (it was not while the static analysis alone decided: every
/// request then took the slow path). `koi bench --json` over requests for 50 keys, GETs and
/// SETs: every upcall installs a megaflow, none is uncacheable, keys share megaflows, and the
/// later passes hit. With the example's hash (CRC-32) and with FNV-1a (twemproxy's default
/// `fnv1a_64`).
#[test]
fn ring_requests_are_cached_flows() {
    for mode in ["crc32a", "fnv1a_64", "crc16"] {
        ring_requests_are_cached_with(mode);
    }
}

fn ring_requests_are_cached_with(mode: &str) {
    let dir =
        std::env::temp_dir().join(format!("koi-appswitch-cache-{}-{mode}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let root = concat!(env!("CARGO_MANIFEST_DIR"), "/../..");
    let entries = dir.join("appswitch.entries");
    let base = std::fs::read_to_string(format!("{root}/{ENTRIES}")).unwrap();
    // `crc16` is three `crc16_custom` calculations the controller sets to CRC-16/XMODEM
    // (ketama.py's XMODEM): custom CRCs are hash keys too, with the parameters set.
    let params = match mode {
        "crc16" => (0..3)
            .map(|i| format!("set_crc16_parameters calc_{i} 0x1021 0x0 0x0 false false\n"))
            .collect(),
        _ => String::new(),
    };
    std::fs::write(
        &entries,
        format!("{params}{base}\ntable_set_default hash_mode hash_{mode}\n"),
    )
    .unwrap();
    let mut frames = Vec::new();
    for i in 0..200u32 {
        let key = format!("key-{:02}-xxxxxxx", i % 50).into_bytes();
        let op = if (i / 50) % 2 == 0 { 0x00 } else { 0x01 };
        let extras: &[u8] = if op == 0x01 { &[0; 8] } else { &[] };
        frames.push(request(
            &binary(0, 1, 0x80, op, extras, &key, key.len() as u16),
            true,
        ));
    }
    let pcap = dir.join("requests.pcap");
    ctl_support::write_pcap(&pcap, &frames);
    let out = Command::new(env!("CARGO_BIN_EXE_koi"))
        .args(["bench", PROGRAM, "--entries"])
        .arg(&entries)
        .args(["--port", "1", "--pcap"])
        .arg(&pcap)
        .args(["--seconds", "0.2", "--warmup", "0", "--json"])
        .current_dir(root)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{mode}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let n = |path: &str| {
        report
            .pointer(path)
            .and_then(|v| v.as_u64())
            .unwrap_or(u64::MAX)
    };
    assert_eq!(n("/counters/uncacheable"), 0, "{mode}: {report}");
    assert_eq!(n("/warmup/uncacheable"), 0, "{mode}: {report}");
    // 50 keys, each with a GET and a SET, over a ring of two halves: the megaflows match
    // the key's hash (a hash key), not its bytes, and only its top bit (which half): one
    // megaflow per half and operation, installed once each, then hit.
    assert_eq!(n("/warmup/upcalls"), 4, "{mode}: {report}");
    assert_eq!(n("/warmup/installs"), 4, "{mode}: {report}");
    assert_eq!(n("/cache/megaflows"), 4, "{mode}: {report}");
    assert_eq!(n("/counters/misses"), 0, "{mode}: {report}");
    let _ = std::fs::remove_dir_all(&dir);
}
