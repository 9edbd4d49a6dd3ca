//! AppSwitch end to end: `examples/appswitch/appswitch --config POOL.yml --port N=IF...` (koi
//! run and its P4Runtime controller, one command, which finds the servers by ARP and learns
//! the client's place from its frames) in the switch namespace, three real memcached servers
//! with UDP on, each in a namespace of its own, and a client in a fourth. The client stores
//! and reads back 120 keys of 16, 80 and 250 bytes with memcached's binary protocol over UDP,
//! then with the ASCII protocol, sent to the service address: every reply comes from the service address (the client's
//! socket is connected to it and takes nothing else), every value reads back, and each server,
//! asked directly, holds exactly the keys twemproxy's placement gives it (ketama.py, itself
//! checked against twemproxy in `appswitch_ring.rs`). Then one server is killed: it is
//! ejected, and every request goes to the two others as twemproxy would place them; it comes
//! back and is restored. Three times: with twemproxy's `ketama` and `crc32a`, the hosts found;
//! with `modula` and `crc16`, the hosts given; with `ketama` and twemproxy's default hash
//! `fnv1a_64` (koi's FNV extension of v1model), the hosts found. Needs root, memcached and
//! the Python venv (finsy, PyYAML); see `e2e/mod.rs`.

mod e2e;
use e2e::*;
use std::time::Duration;

/// The client: argv = service address, N keys, `binary` or `ascii`. Stores each key (a SET
/// over UDP, one datagram, the frame header's request id = the key's number) and reads it
/// back (GET), checking every reply; prints `ok N` or what went wrong.
const CLIENT: &str = r#"
import socket, struct, sys
vip, n, proto = sys.argv[1], int(sys.argv[2]), sys.argv[3]
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.connect((vip, 11211))   # replies from anywhere else are not received
s.settimeout(3)
def key_of(i):
    size = (16, 80, 250)[i % 3]
    return (f"key-{i}-" + "x" * size)[:size].encode()
def call(rid, opcode, key, extras=b"", value=b""):
    body = extras + key + value
    hdr = struct.pack("!BBHBBHIIQ", 0x80, opcode, len(key), len(extras), 0, 0, len(body), rid, 0)
    for attempt in range(3):
        s.send(struct.pack("!HHHH", rid, 0, 1, 0) + hdr + body)
        try:
            while True:
                d = s.recv(65536)
                r = struct.unpack("!HHHH", d[:8])
                if r[0] == rid:
                    break
        except socket.timeout:
            continue
        magic, op, klen, elen, _, status, blen, opaque, _ = struct.unpack("!BBHBBHIIQ", d[8:32])
        if magic != 0x81 or status != 0 or opaque != rid:
            sys.exit(f"key {rid}: reply magic {magic:#x} status {status} opaque {opaque}")
        return d[32 + elen + klen:32 + blen]
    sys.exit(f"key {rid}: no reply")
def text(rid, line, until):
    for attempt in range(3):
        s.send(struct.pack("!HHHH", rid, 0, 1, 0) + line)
        try:
            while True:
                d = s.recv(65536)
                if struct.unpack("!H", d[:2])[0] == rid and d.endswith(until):
                    return d[8:]
        except socket.timeout:
            continue
    sys.exit(f"key {rid}: no reply to {line[:20]!r}")
for i in range(n):
    v = b"%s%d" % (proto.encode(), i)
    if proto == "binary":
        call(i, 0x01, key_of(i), extras=struct.pack("!II", 0, 0), value=v)
    else:
        r = text(i, b"set %s 0 0 %d\r\n%s\r\n" % (key_of(i), len(v), v), b"\r\n")
        if r != b"STORED\r\n":
            sys.exit(f"key {i}: set: {r!r}")
for i in range(n):
    v = b"%s%d" % (proto.encode(), i)
    if proto == "binary":
        got = call(i, 0x00, key_of(i))
    else:
        r = text(i, b"get %s\r\n" % key_of(i), b"END\r\n")
        got = r.split(b"\r\n")[1] if r.startswith(b"VALUE ") else r
    if got != v:
        sys.exit(f"key {i}: read back {got!r}")
print("ok", n, flush=True)
"#;

/// Run in a server's namespace: argv = its address, N keys, the pool file, ketama.py's
/// folder, the live servers' addresses (comma-separated). Asks the server (memcached's ASCII
/// protocol over TCP) which keys it holds, and prints `holds H, ketama says K, wrong W`.
const SERVER_CHECK: &str = r#"
import socket, sys
addr, n, pool_file, here = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
sys.path.insert(0, here)
import ketama
pool = ketama.Pool.load(pool_file)
live = [s for s in pool.servers if s.addr in sys.argv[5].split(",")]
def key_of(i):
    size = (16, 80, 250)[i % 3]
    return (f"key-{i}-" + "x" * size)[:size].encode()
c = socket.create_connection((addr, 11211), timeout=5)
def ask(line):
    c.sendall(line)
    d = b""
    while not d.endswith(b"END\r\n"):
        d += c.recv(65536)
    return d
holds = {i for i in range(n) if ask(b"get " + key_of(i) + b"\r\n").startswith(b"VALUE")}
says = {i for i in range(n) if ketama.place(pool, key_of(i), live).addr == addr}
c.sendall(b"flush_all\r\n")
print(f"holds {len(holds)}, ketama says {len(says)}, wrong {len(holds ^ says)}", flush=True)
"#;

/// A request without a key (binary NOOP) to the service: the switch cannot route it by key,
/// so it goes to the fallback (here server 10.0.0.11, standing in for a proxy), whose answer
/// comes back from the service address. Prints `noop ok`.
const NOOP: &str = r#"
import socket, struct, sys
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.connect((sys.argv[1], 11211))
s.settimeout(3)
for attempt in range(3):
    s.send(struct.pack("!HHHH", 999, 0, 1, 0) + struct.pack("!BBHBBHIIQ", 0x80, 0x0a, 0, 0, 0, 0, 0, 999, 0))
    try:
        d = s.recv(65536)
    except socket.timeout:
        continue
    if d[8] == 0x81 and d[9] == 0x0a and struct.unpack("!I", d[20:24])[0] == 999:
        print("noop ok", flush=True)
        sys.exit(0)
sys.exit("no answer to the NOOP")
"#;

const POOL: &str = "\
koi:
  listen: 10.0.0.100:11211
  hash: crc32a
  distribution: ketama
  auto_eject_hosts: true
  server_failure_limit: 2
  server_retry_timeout: 2000
  servers:
   - 10.0.0.11:11211:1
   - 10.0.0.12:11211:1
   - 10.0.0.13:11211:2 third
";

/// Host i: MAC, address.
const HOSTS: [(&str, &str); 4] = [
    ("02:00:00:00:00:01", "10.0.0.1"),
    ("02:00:00:00:00:0b", "10.0.0.11"),
    ("02:00:00:00:00:0c", "10.0.0.12"),
    ("02:00:00:00:00:0d", "10.0.0.13"),
];

#[test]
fn appswitch_spreads_keys_as_twemproxy_would_and_replies_come_from_the_service() {
    end_to_end(
        "appswitch_spreads_keys_as_twemproxy_would_and_replies_come_from_the_service",
        "ketama",
        "crc32a",
        false,
    );
}

/// The same with twemproxy's `modula` distribution and its `crc16` hash: the switch takes the
/// key's hash (three crc16_custom calculations the controller sets to XMODEM) modulo the
/// slots, and an ejection rewrites the slots. Here the hosts are given (`--host`) rather
/// than found.
#[test]
fn appswitch_with_modula_and_crc16_places_keys_as_twemproxy_would() {
    end_to_end(
        "appswitch_with_modula_and_crc16_places_keys_as_twemproxy_would",
        "modula",
        "crc16",
        true,
    );
}

/// The same with twemproxy's default hash, `fnv1a_64`: the ring is indexed by the low 32 bits
/// of the key's 64-bit FNV-1a.
#[test]
fn appswitch_with_fnv1a_64_places_keys_as_twemproxy_would() {
    end_to_end(
        "appswitch_with_fnv1a_64_places_keys_as_twemproxy_would",
        "ketama",
        "fnv1a_64",
        false,
    );
}

/// `given_hosts`: every host's place passed with `--host`; else the controller finds the
/// servers by ARP and learns the client from its frames.
fn end_to_end(test: &str, distribution: &str, hash: &str, given_hosts: bool) {
    if !tools(test, &["memcached"]) {
        return;
    }
    let Some(py) = venv_python(test, "KOI_PYTHON", "import finsy, yaml") else {
        return;
    };
    let Some(lab) = Lab::new(test, 4, Layout::HostPerNs) else {
        return;
    };
    for (i, (mac, addr)) in HOSTS.iter().enumerate() {
        lab.ipv4_host(i + 1, mac, &format!("{addr}/24"), "10.0.0.254");
    }
    let pool = lab.dir.join("pool.yml");
    std::fs::write(
        &pool,
        POOL.replace(
            "distribution: ketama",
            &format!("distribution: {distribution}"),
        )
        .replace("hash: crc32a", &format!("hash: {hash}")),
    )
    .unwrap();
    let mut servers: Vec<Proc> = (2..=4)
        .map(|i| {
            Proc::spawn(lab.cmd(&lab.host(i).ns, "memcached").args([
                "-u",
                "root",
                "-l",
                HOSTS[i - 1].1,
                "-p",
                "11211",
                "-U",
                "11211",
            ]))
        })
        .collect();
    let mut args: Vec<String> = vec![
        repo()
            .join("examples/appswitch/appswitch")
            .display()
            .to_string(),
        "--config".into(),
        pool.display().to_string(),
        "--koi".into(),
        env!("CARGO_BIN_EXE_koi").into(),
    ];
    args.extend([
        "--check-interval".into(),
        "0.3".into(),
        "--ctl".into(),
        lab.dir.join("koi.sock").display().to_string(),
        "--fallback".into(),
        "10.0.0.11:11211".into(),
    ]);
    for (i, (mac, addr)) in HOSTS.iter().enumerate() {
        let h = lab.host(i + 1);
        args.extend(["--port".into(), format!("{}={}", i + 1, h.sw_if)]);
        if given_hosts {
            args.extend(["--host".into(), format!("{addr}={mac}@{}", i + 1)]);
        }
    }
    let mut switch = Proc::spawn(
        lab.cmd(&lab.sw, &py)
            .args(&args)
            .env("PROTOCOL_BUFFERS_PYTHON_IMPLEMENTATION", "python"),
    );
    assert!(
        switch.wait_line("ready:", Duration::from_secs(90)),
        "appswitch did not come up:\n{}",
        switch.output_so_far()
    );
    if !given_hosts {
        // Every server was found by ARP, at its own MAC and port, before the placement.
        let log = switch.output_so_far();
        for (i, (mac, addr)) in HOSTS.iter().enumerate().skip(1) {
            let found = format!("found {addr} (");
            let line = log.lines().find(|l| l.starts_with(&found));
            assert!(
                line.is_some_and(|l| l.ends_with(&format!("at {mac} on port {}", i + 1))),
                "{addr} not found by ARP at {mac} on port {}:\n{log}",
                i + 1
            );
        }
    }
    let n = 120;
    let client = |what: &str, switch: &Proc, proto: &str| {
        let out = run(
            lab.cmd(&lab.host(1).ns, &py)
                .args(["-c", CLIENT, "10.0.0.100", &n.to_string(), proto]),
            Duration::from_secs(120),
        );
        assert!(
            out.ok() && out.stdout.contains(&format!("ok {n}")),
            "client ({what}): {}\nappswitch: {}",
            out.show(),
            switch.output_so_far()
        );
    };
    // Each server, asked directly, holds the keys ketama places on it among `live` servers
    // (and is emptied for the next round); returns how many it held.
    let here = repo().join("examples/appswitch");
    let check = |i: usize, live: &str| -> usize {
        let addr = HOSTS[i - 1].1;
        let out = run(
            lab.cmd(&lab.host(i).ns, &py).args([
                "-c",
                SERVER_CHECK,
                addr,
                &n.to_string(),
                pool.to_str().unwrap(),
                here.to_str().unwrap(),
                live,
            ]),
            Duration::from_secs(60),
        );
        assert!(out.ok(), "server {addr}: {}", out.show());
        let line = out.stdout.trim().to_string();
        assert!(line.ends_with("wrong 0"), "server {addr}: {line}");
        line.split_whitespace()
            .nth(1)
            .and_then(|h| h.trim_end_matches(',').parse().ok())
            .unwrap()
    };
    let all = "10.0.0.11,10.0.0.12,10.0.0.13";
    for proto in ["binary", "ascii"] {
        client("all servers up", &switch, proto);
        let held: Vec<usize> = (2..=4).map(|i| check(i, all)).collect();
        assert!(
            held.iter().all(|&h| h > 0),
            "{proto}: every server got keys: {held:?}"
        );
        assert_eq!(
            held.iter().sum::<usize>(),
            n,
            "{proto}: every key on exactly one server"
        );
    }

    let noop = run(
        lab.cmd(&lab.host(1).ns, &py)
            .args(["-c", NOOP, "10.0.0.100"]),
        Duration::from_secs(30),
    );
    assert!(
        noop.stdout.contains("noop ok"),
        "fallback: {}\nappswitch: {}",
        noop.show(),
        switch.output_so_far()
    );

    // Server `third` dies: ejected after two missed probes; every request then goes to the
    // two live servers, as twemproxy would place them.
    servers[2].kill();
    assert!(
        switch.wait_line("ejected third", Duration::from_secs(20)),
        "not ejected:\n{}",
        switch.output_so_far()
    );
    client("third ejected", &switch, "binary");
    let live = "10.0.0.11,10.0.0.12";
    let held: Vec<usize> = (2..=3).map(|i| check(i, live)).collect();
    assert_eq!(
        held.iter().sum::<usize>(),
        n,
        "every key on a live server: {held:?}"
    );

    // It comes back: restored on its first answer after the retry timeout.
    servers[2] = Proc::spawn(
        lab.cmd(&lab.host(4).ns, "memcached")
            .args(["-u", "root", "-l", HOSTS[3].1, "-p", "11211", "-U", "11211"]),
    );
    assert!(
        switch.wait_line("restored third", Duration::from_secs(20)),
        "not restored:\n{}",
        switch.output_so_far()
    );
    client("third restored", &switch, "ascii");
    let held: Vec<usize> = (2..=4).map(|i| check(i, all)).collect();
    assert_eq!(
        held.iter().sum::<usize>(),
        n,
        "every key where the full ring says: {held:?}"
    );
    // SIGTERM stops appswitch, which stops koi.
    let _ = std::process::Command::new("kill")
        .args(["-TERM", &switch.pid().to_string()])
        .status();
    let out = switch.finish(Duration::from_secs(20));
    assert!(out.stdout.contains("stopped"), "{}", out.show());
    for s in &mut servers {
        s.kill();
    }
}
