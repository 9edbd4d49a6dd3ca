//! AppSwitch's key placement is twemproxy's:
//!
//! - `examples/appswitch/ketama.py` against the real twemproxy (Debian's `nutcracker`) and
//!   three real memcached servers in a network namespace: 300 keys of 16, 80, 250, 1, 2 and
//!   3 bytes stored through twemproxy land on the server ketama.py names, with the hashes
//!   `crc32a`, `crc32`, `crc16`, `fnv1a_64`, `fnv1_64`, `fnv1a_32`, `fnv1_32`, `md5`,
//!   `murmur`, `jenkins`, `hsieh` and `one_at_a_time` and the
//!   distributions `ketama` and `modula`, servers named by address, by address and port, and
//!   by name, one weighted twice (`check_placement.py`); the same with 300 keys of bytes of
//!   0x80 and more (which twemproxy's FNV, one_at_a_time and hsieh read as signed chars);
//! - the switch's entries that ketama.py writes for a pool, traced through
//!   `examples/appswitch/appswitch.p4` with `koi trace`: each of the same 300 printable keys'
//!   and 300 keys of high bytes' requests goes to the port of the server ketama.py places it
//!   on, for every hash and distribution, so the switch places them where twemproxy does
//!   (signed chars included); and with `random`, requests spread over every server.
//!
//! Needs root, memcached, nutcracker and the Python venv (PyYAML); see `e2e/mod.rs`.

mod ctl_support;
mod e2e;
use ctl_support::write_pcap;
use e2e::*;
use std::process::Command;
use std::time::Duration;

const POOL: &str = "\
beta:
  listen: 10.0.0.100:11211
  hash: HASH
  distribution: DIST
  servers:
   - 10.0.0.11:11211:1
   - 10.0.0.12:11212:1
   - 10.0.0.13:11211:2 third
";

/// The (hash, distribution) pairs whose placement is checked: twemproxy's ketama and modula
/// over its 32-bit and its 15-bit CRC-32, its `crc16`, its four FNV hashes and its five
/// hashkit hashes.
const PLACEMENTS: [(&str, &str); 24] = [
    ("crc32a", "ketama"),
    ("crc32", "ketama"),
    ("crc16", "ketama"),
    ("fnv1a_64", "ketama"),
    ("fnv1_64", "ketama"),
    ("fnv1a_32", "ketama"),
    ("fnv1_32", "ketama"),
    ("crc32a", "modula"),
    ("crc32", "modula"),
    ("crc16", "modula"),
    ("fnv1a_64", "modula"),
    ("fnv1_64", "modula"),
    ("fnv1a_32", "modula"),
    ("fnv1_32", "modula"),
    ("md5", "ketama"),
    ("murmur", "ketama"),
    ("jenkins", "ketama"),
    ("hsieh", "ketama"),
    ("one_at_a_time", "ketama"),
    ("md5", "modula"),
    ("murmur", "modula"),
    ("jenkins", "modula"),
    ("hsieh", "modula"),
    ("one_at_a_time", "modula"),
];

/// How many keys each placement is checked with, through twemproxy and through the switch
/// (the same keys: `key_of(0..KEYS)`).
const KEYS: usize = 300;

/// Hosts of the traced topology: address = MAC @ switch port.
const HOSTS: [&str; 4] = [
    "10.0.0.1=02:00:00:00:00:01@1",
    "10.0.0.11=02:00:00:00:00:0b@2",
    "10.0.0.12=02:00:00:00:00:0c@3",
    "10.0.0.13=02:00:00:00:00:0d@4",
];

/// The key `check_placement.py` and this test use: `key-I-xxx...` of 16, 80 or 250 bytes,
/// or a short one of 1, 2 or 3 bytes (i / 6 in base 94, a printable character per digit,
/// lowest first), in turn; with `high`, every byte but the digits of I is `0x80 | b`, and a
/// short key's digits are 0xa1 to 0xfe (`check_placement.key_of`).
fn key_of(i: usize, high: bool) -> Vec<u8> {
    let size = [16, 80, 250, 1, 2, 3][i % 6];
    if size <= 3 {
        let mut n = i / 6;
        let base = if high { 0xa1 } else { 33 };
        return (0..size)
            .map(|_| {
                let c = base + (n % 94) as u8;
                n /= 94;
                c
            })
            .collect();
    }
    let mut k = format!("key-{i}-").into_bytes();
    k.resize(size.max(k.len()), b'x');
    k.truncate(size);
    if high {
        for b in &mut k {
            if !b.is_ascii_digit() {
                *b |= 0x80;
            }
        }
    }
    k
}

/// A binary GET of `key` from 10.0.0.1 to the service, UDP checksum 0.
fn get_request(key: &[u8]) -> Vec<u8> {
    let mut mc = vec![0, 7, 0, 0, 0, 1, 0, 0, 0x80, 0x00];
    mc.extend_from_slice(&(key.len() as u16).to_be_bytes());
    mc.extend_from_slice(&[0, 0, 0, 0]);
    mc.extend_from_slice(&(key.len() as u32).to_be_bytes());
    mc.extend_from_slice(&[0; 12]);
    mc.extend_from_slice(key);
    let (vip_mac, client_mac) = ([2, 0, 0, 0, 0, 0x64], [2, 0, 0, 0, 0, 1]);
    let mut f = udp_frame(vip_mac, client_mac, [10, 0, 0, 1], [10, 0, 0, 100], 64, &mc);
    // To memcached's port (no UDP checksum to mend).
    f[36..38].copy_from_slice(&11211u16.to_be_bytes());
    f
}

#[test]
fn the_switch_routes_every_key_where_ketama_places_it() {
    let test = "the_switch_routes_every_key_where_ketama_places_it";
    let Some(py) = venv_python(test, "KOI_PYTHON", "import yaml") else {
        return;
    };
    let dir = std::env::temp_dir().join(format!("koi-appswitch-ring-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    // Printable keys, then as many of high bytes.
    let n = 2 * KEYS;
    let keys: Vec<Vec<u8>> = (0..n).map(|i| key_of(i % KEYS, i >= KEYS)).collect();
    let pcap = dir.join("requests.pcap");
    write_pcap(
        &pcap,
        &keys.iter().map(|k| get_request(k)).collect::<Vec<_>>(),
    );
    for (hash, dist) in PLACEMENTS {
        let pool = dir.join(format!("pool-{hash}-{dist}.yml"));
        std::fs::write(&pool, POOL.replace("HASH", hash).replace("DIST", dist)).unwrap();
        let entries = entries_for(&py, &pool, &dir.join(format!("{hash}-{dist}.entries")));
        let ketama = repo().join("examples/appswitch/ketama.py");
        // Where ketama.py places each key: the server's switch port.
        let script = format!(
            "import sys; sys.path.insert(0, {dir:?})\n\
             import ketama, check_placement\n\
             pool = ketama.Pool.load({pool:?})\n\
             ports = {{'10.0.0.11': 2, '10.0.0.12': 3, '10.0.0.13': 4}}\n\
             for i in range({n}):\n\
             \x20   k = check_placement.key_of(i % {KEYS}, i >= {KEYS})\n\
             \x20   assert list(k) == {keys:?}[i], i\n\
             \x20   print(ports[ketama.place(pool, k).addr])\n",
            keys = keys,
            dir = ketama.parent().unwrap().display().to_string(),
            pool = pool.display().to_string(),
        );
        // (A file: the keys' list is longer than one argument may be.)
        let script_path = dir.join(format!("place-{hash}-{dist}.py"));
        std::fs::write(&script_path, script).unwrap();
        let out = Command::new(&py).arg(&script_path).output().unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let want: Vec<String> = String::from_utf8_lossy(&out.stdout)
            .lines()
            .map(|l| format!("port {l}:"))
            .collect();
        assert_eq!(want.len(), n);
        let got = trace(&entries, &pcap);
        assert_eq!(got.len(), n, "{hash}/{dist}: a result per request");
        for (i, (g, w)) in got.iter().zip(&want).enumerate() {
            assert!(
                g.starts_with(&format!("result: {w}")),
                "{hash}/{dist}: key {i} ({} bytes): ketama.py says {w}, the switch: {g}",
                keys[i].len()
            );
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// The switch's entries that ketama.py writes for `pool`, in a file at `path`.
fn entries_for(
    py: &std::path::Path,
    pool: &std::path::Path,
    path: &std::path::Path,
) -> std::path::PathBuf {
    let out = Command::new(py)
        .arg(repo().join("examples/appswitch/ketama.py"))
        .arg(pool)
        .arg("02:00:00:00:00:64")
        .args(HOSTS)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    std::fs::write(path, &out.stdout).unwrap();
    path.to_path_buf()
}

/// `koi trace` of the requests in `pcap` through appswitch.p4 with `entries`: each packet's
/// `result:` line.
fn trace(entries: &std::path::Path, pcap: &std::path::Path) -> Vec<String> {
    let out = Command::new(env!("CARGO_BIN_EXE_koi"))
        .args(["trace", "examples/appswitch/appswitch.p4", "--entries"])
        .arg(entries)
        .args(["--port", "1", "--pcap"])
        .arg(pcap)
        .current_dir(repo())
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    text.lines()
        .filter(|l| l.starts_with("result:"))
        .map(str::to_string)
        .collect()
}

#[test]
fn random_distribution_spreads_requests_over_every_server() {
    let test = "random_distribution_spreads_requests_over_every_server";
    let Some(py) = venv_python(test, "KOI_PYTHON", "import yaml") else {
        return;
    };
    let dir = std::env::temp_dir().join(format!("koi-appswitch-random-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    // The same key 150 times: with `random`, the key does not decide the server.
    let n = 150;
    let pcap = dir.join("requests.pcap");
    write_pcap(&pcap, &vec![get_request(&key_of(0, false)); n]);
    let pool = dir.join("pool.yml");
    std::fs::write(
        &pool,
        POOL.replace("HASH", "crc32a").replace("DIST", "random"),
    )
    .unwrap();
    let entries = entries_for(&py, &pool, &dir.join("random.entries"));
    let got = trace(&entries, &pcap);
    assert_eq!(got.len(), n, "a result per request");
    let mut per_port = [0usize; 3];
    for g in &got {
        let port = (2..=4).find(|p| g.starts_with(&format!("result: port {p}:")));
        let Some(port) = port else {
            panic!("a request not sent to a server: {g}");
        };
        per_port[port - 2] += 1;
    }
    // Twemproxy's random picks each live server alike (weights do not count): each of the
    // three gets a third of 150 requests, give or take; below 20 is a 1-in-10^5 event.
    for (i, &c) in per_port.iter().enumerate() {
        assert!(
            c >= 20,
            "server on port {} got {c} of {n}: {per_port:?}",
            i + 2
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// The servers started in the test's namespace (killed, and the namespace deleted, on drop).
struct Place {
    ns: String,
    dir: std::path::PathBuf,
    children: Vec<std::process::Child>,
}

impl Drop for Place {
    fn drop(&mut self) {
        for c in &mut self.children {
            let _ = c.kill();
            let _ = c.wait();
        }
        let _ = Command::new("ip").args(["netns", "del", &self.ns]).status();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

#[test]
fn ketama_places_keys_where_twemproxy_does() {
    let test = "ketama_places_keys_where_twemproxy_does";
    if !tools(test, &["memcached", "nutcracker"]) {
        return;
    }
    let Some(py) = venv_python(test, "KOI_PYTHON", "import yaml") else {
        return;
    };
    let ns = format!("koiplace{}", std::process::id());
    if ip(&["netns", "add", &ns]).is_err() {
        unavailable(test, "cannot create network namespaces (needs root)");
        return;
    }
    let mut place = Place {
        ns: ns.clone(),
        dir: std::env::temp_dir().join(format!("koi-place-{}", std::process::id())),
        children: Vec::new(),
    };
    std::fs::create_dir_all(&place.dir).unwrap();
    ip(&["-n", &ns, "link", "set", "lo", "up"]).unwrap();
    let in_ns = |prog: &str| {
        let mut c = Command::new("ip");
        c.args(["netns", "exec", &ns, prog]);
        c
    };
    for port in ["11211", "11212", "11213"] {
        let c = in_ns("memcached")
            .args(["-u", "root", "-l", "127.0.0.1", "-p", port, "-U", "0"])
            .spawn()
            .expect("start memcached");
        place.children.push(c);
    }
    for port in ["11211", "11212", "11213"] {
        let up = eventually(Duration::from_secs(10), || {
            in_ns("bash")
                .args(["-c", &format!("exec 3<>/dev/tcp/127.0.0.1/{port}")])
                .status()
                .is_ok_and(|s| s.success())
        });
        assert!(up, "memcached listens on {port}");
    }
    for (hash, dist) in PLACEMENTS {
        let pool = place.dir.join(format!("{hash}-{dist}.yml"));
        std::fs::write(
            &pool,
            format!(
                "alpha:\n  listen: 127.0.0.1:22121\n  hash: {hash}\n  distribution: {dist}\n  \
                 servers:\n   - 127.0.0.1:11211:1\n   - 127.0.0.1:11212:1\n   - 127.0.0.1:11213:2 third\n"
            ),
        )
        .unwrap();
        let pid = place.dir.join(format!("{hash}-{dist}.pid"));
        let mut proxy = in_ns("nutcracker")
            .arg("-c")
            .arg(&pool)
            .args(["-s", "22222", "-p"])
            .arg(&pid)
            .arg("-o")
            .arg(place.dir.join(format!("{hash}-{dist}.log")))
            .spawn()
            .expect("start nutcracker");
        let up = eventually(Duration::from_secs(10), || {
            in_ns("bash")
                .args(["-c", "exec 3<>/dev/tcp/127.0.0.1/22121"])
                .status()
                .is_ok_and(|s| s.success())
        });
        if !up {
            let _ = proxy.kill();
            panic!("nutcracker does not listen");
        }
        // Printable keys (the switch's test's), then keys of high bytes.
        for high in [&[][..], &["high"][..]] {
            let out = in_ns(py.to_str().unwrap())
                .arg(repo().join("examples/appswitch/check_placement.py"))
                .arg(&pool)
                .arg(KEYS.to_string())
                .args(high)
                .output()
                .unwrap();
            let text = String::from_utf8_lossy(&out.stdout);
            let placed = format!("placed {KEYS} keys: {KEYS} as twemproxy");
            if !out.status.success() || !text.contains(&placed) {
                let _ = proxy.kill();
                let _ = proxy.wait();
                panic!(
                    "{hash}/{dist} {high:?}: {text}{}",
                    String::from_utf8_lossy(&out.stderr)
                );
            }
        }
        let _ = proxy.kill();
        let _ = proxy.wait();
    }
}
