//! `mcload` against a real memcached (Debian's, UDP and TCP on) in a throwaway network
//! namespace: every transport, protocol and loop answers every request, none lost or failed,
//! at the asked rate in open loop. Needs root and memcached; without them the test says SKIP
//! and passes, unless `KOI_E2E_REQUIRED` is set (scripts/test.sh sets it as root).

use std::process::{Child, Command};
use std::time::{Duration, Instant};

struct Ns {
    name: String,
    server: Option<Child>,
}

impl Drop for Ns {
    fn drop(&mut self) {
        if let Some(c) = &mut self.server {
            let _ = c.kill();
            let _ = c.wait();
        }
        let _ = Command::new("ip")
            .args(["netns", "del", &self.name])
            .status();
    }
}

fn skip(why: &str) {
    assert!(
        std::env::var_os("KOI_E2E_REQUIRED").is_none(),
        "{why} (KOI_E2E_REQUIRED is set)"
    );
    eprintln!("SKIP: {why}");
}

fn field(json: &str, name: &str) -> f64 {
    let at = json
        .find(&format!("\"{name}\": "))
        .unwrap_or_else(|| panic!("{name} in {json}"));
    json[at + name.len() + 4..]
        .split([',', '}'])
        .next()
        .unwrap()
        .trim()
        .parse()
        .unwrap()
}

#[test]
fn every_mode_is_answered_by_a_real_memcached() {
    if Command::new("memcached").arg("-h").output().is_err() {
        skip("memcached is not installed");
        return;
    }
    let name = format!("koimcl{}", std::process::id());
    if !Command::new("ip")
        .args(["netns", "add", &name])
        .status()
        .is_ok_and(|s| s.success())
    {
        skip("cannot create network namespaces (needs root)");
        return;
    }
    let mut ns = Ns { name, server: None };
    let ip = |args: &[&str]| Command::new("ip").args(args).status().unwrap();
    assert!(ip(&["-n", &ns.name, "link", "set", "lo", "up"]).success());
    ns.server = Some(
        Command::new("ip")
            .args([
                "netns",
                "exec",
                &ns.name,
                "memcached",
                "-u",
                "root",
                "-l",
                "127.0.0.1",
            ])
            .args(["-p", "11211", "-U", "11211"])
            .spawn()
            .expect("memcached"),
    );
    let deadline = Instant::now() + Duration::from_secs(10);
    while !Command::new("ip")
        .args([
            "netns",
            "exec",
            &ns.name,
            "bash",
            "-c",
            "exec 3<>/dev/tcp/127.0.0.1/11211",
        ])
        .status()
        .is_ok_and(|s| s.success())
    {
        assert!(Instant::now() < deadline, "memcached did not start");
        std::thread::sleep(Duration::from_millis(50));
    }
    for transport in ["udp", "tcp"] {
        for protocol in ["binary", "ascii"] {
            for rate in [None, Some("2000")] {
                let mut c = Command::new("ip");
                c.args(["netns", "exec", &ns.name, env!("CARGO_BIN_EXE_mcload")]);
                c.args(["--target", "127.0.0.1:11211", "--transport", transport]);
                c.args([
                    "--protocol",
                    protocol,
                    "--seconds",
                    "0.5",
                    "--warmup",
                    "0.2",
                ]);
                c.args([
                    "--clients",
                    "2",
                    "--keys",
                    "500",
                    "--key-len",
                    "80",
                    "--preload",
                ]);
                c.args(["--timeout-ms", "1000", "--json"]);
                if let Some(r) = rate {
                    c.args(["--rate", r]);
                }
                let out = c.output().unwrap();
                let text = String::from_utf8_lossy(&out.stdout);
                let what = format!("{transport} {protocol} {rate:?}");
                assert!(
                    out.status.success(),
                    "{what}: {text}{}",
                    String::from_utf8_lossy(&out.stderr)
                );
                assert!(field(&text, "answered") > 0.0, "{what}: {text}");
                assert_eq!(field(&text, "lost"), 0.0, "{what}: {text}");
                assert_eq!(field(&text, "failed"), 0.0, "{what}: {text}");
                assert!(field(&text, "p50_us") > 0.0, "{what}: {text}");
                if rate.is_some() {
                    // 2,000 a second for half a second.
                    assert!(
                        (field(&text, "answered") - 1000.0).abs() <= 20.0,
                        "{what}: {text}"
                    );
                }
            }
        }
    }
}
