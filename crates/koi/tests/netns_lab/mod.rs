//! The network-namespace lab the `koi run` end-to-end tests share: a switch namespace wired
//! by veth pairs to two host namespaces, removed (and a running switch killed) on drop; and
//! L2 test frames (ethertype 0x88b5, locally administered MACs).

#![allow(dead_code)]

use std::process::{Child, Command};
use std::time::Duration;

/// A bound on waiting for something that should happen; never a timing assertion.
pub const PATIENCE: Duration = Duration::from_secs(20);
pub const MAC_1: [u8; 6] = [0x02, 0, 0, 0, 0x01, 0x01];
pub const MAC_2: [u8; 6] = [0x02, 0, 0, 0, 0x01, 0x02];

pub fn ip(args: &[&str]) -> bool {
    Command::new("ip")
        .args(args)
        .output()
        .is_ok_and(|o| o.status.success())
}

/// Namespaces `<tag>s` (the switch: `s1`, `s2`), `<tag>a` (`h1`, peer of `s1`) and `<tag>b`
/// (`h2`, peer of `s2`); all deleted on drop, and a still-running switch is killed.
pub struct Lab {
    pub s: String,
    pub a: String,
    pub b: String,
    pub child: Option<Child>,
}

impl Lab {
    pub fn new(prefix: &str) -> Option<Lab> {
        let tag = format!("{prefix}{}", std::process::id());
        let lab = Lab {
            s: format!("{tag}s"),
            a: format!("{tag}a"),
            b: format!("{tag}b"),
            child: None,
        };
        if !ip(&["netns", "add", &lab.s]) {
            eprintln!("SKIP: cannot create network namespaces (needs root / CAP_NET_ADMIN)");
            return None;
        }
        assert!(ip(&["netns", "add", &lab.a]) && ip(&["netns", "add", &lab.b]));
        for (ns, host, sw) in [(&lab.a, "h1", "s1"), (&lab.b, "h2", "s2")] {
            assert!(ip(&[
                "-n", ns, "link", "add", host, "type", "veth", "peer", "name", sw, "netns", &lab.s
            ]));
            assert!(ip(&["-n", ns, "link", "set", host, "up"]));
            assert!(ip(&["-n", &lab.s, "link", "set", sw, "up"]));
        }
        Some(lab)
    }
}

impl Drop for Lab {
    fn drop(&mut self) {
        if let Some(c) = &mut self.child {
            let _ = c.kill();
            let _ = c.wait();
        }
        for ns in [&self.s, &self.a, &self.b] {
            ip(&["netns", "del", ns]);
        }
    }
}

pub fn frame(dst: [u8; 6], src: [u8; 6], seq: u32) -> Vec<u8> {
    let mut f = Vec::with_capacity(64);
    f.extend_from_slice(&dst);
    f.extend_from_slice(&src);
    f.extend_from_slice(&[0x88, 0xb5]);
    f.extend_from_slice(b"KOI");
    f.extend_from_slice(&seq.to_be_bytes());
    f.resize(64, 0xee);
    f
}
