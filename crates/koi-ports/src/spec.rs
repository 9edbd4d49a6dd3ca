//! Port specifications as `koi run --port N=SPEC` takes them: `IFNAME` (AF_PACKET on that
//! interface), `xdp:IFNAME[@QUEUE]` (AF_XDP on that queue of the interface; without a queue,
//! queue 0, or with several poll threads one socket per queue: see [`open_spread`]),
//! `pcap:IN,OUT` (files; either may be empty) and `tap:NAME`.

use crate::afpacket::{AfPacketConfig, AfPacketPort};
use crate::pcap::PcapPort;
use crate::tap::TapPort;
use crate::xdp::{XdpConfig, XdpMode, XdpPort};
use crate::{Port, PortError, Result};
use std::path::PathBuf;

/// A parsed port specification.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PortSpec {
    AfPacket(String),
    Pcap {
        input: Option<PathBuf>,
        output: Option<PathBuf>,
    },
    Tap(String),
    Xdp {
        ifname: String,
        queue: u32,
        mode: XdpMode,
        /// No queue was named: several poll threads may take a queue each.
        spread: bool,
    },
}

fn bad(s: &str, why: &str) -> PortError {
    PortError::Spec(s.to_string(), why.to_string())
}

fn check_ifname(s: &str, name: &str) -> Result<()> {
    if name.is_empty() || name.len() > 15 || name.contains(['/', ' ', ',', ':', '\0']) {
        return Err(bad(
            s,
            "an interface name is 1 to 15 characters without `/ ,:`",
        ));
    }
    Ok(())
}

impl PortSpec {
    /// Parses `IFNAME`, `xdp:IFNAME[@QUEUE]` (also `xdp-native:` and `xdp-generic:`),
    /// `pcap:IN,OUT` or `tap:NAME`.
    pub fn parse(s: &str) -> Result<PortSpec> {
        let xdp = [
            ("xdp:", XdpMode::Auto),
            ("xdp-native:", XdpMode::Native),
            ("xdp-generic:", XdpMode::Generic),
        ]
        .into_iter()
        .find_map(|(p, m)| s.strip_prefix(p).map(|r| (r, m)));
        if let Some((rest, mode)) = xdp {
            let (name, queue) = match rest.rsplit_once('@') {
                Some((n, q)) => {
                    let q = q
                        .parse::<u32>()
                        .ok()
                        .filter(|&q| q < 4096)
                        .ok_or_else(|| bad(s, "the queue after `@` is a number below 4096"))?;
                    (n, Some(q))
                }
                None => (rest, None),
            };
            check_ifname(s, name)?;
            return Ok(PortSpec::Xdp {
                ifname: name.to_string(),
                queue: queue.unwrap_or(0),
                mode,
                spread: queue.is_none(),
            });
        }
        if let Some(rest) = s.strip_prefix("pcap:") {
            let (i, o) = rest.split_once(',').unwrap_or((rest, ""));
            let path = |p: &str| (!p.is_empty()).then(|| PathBuf::from(p));
            let (input, output) = (path(i), path(o));
            if input.is_none() && output.is_none() {
                return Err(bad(s, "pcap: needs an input or an output file"));
            }
            return Ok(PortSpec::Pcap { input, output });
        }
        if let Some(name) = s.strip_prefix("tap:") {
            check_ifname(s, name)?;
            return Ok(PortSpec::Tap(name.to_string()));
        }
        check_ifname(s, s)?;
        Ok(PortSpec::AfPacket(s.to_string()))
    }
}

/// Opens the port `spec` describes.
pub fn open(spec: &PortSpec) -> Result<Box<dyn Port>> {
    Ok(match spec {
        PortSpec::AfPacket(n) => Box::new(AfPacketPort::open(n, AfPacketConfig::default())?),
        PortSpec::Pcap { input, output } => {
            Box::new(PcapPort::open(input.as_deref(), output.as_deref())?)
        }
        PortSpec::Tap(n) => Box::new(TapPort::open(n)?),
        PortSpec::Xdp {
            ifname,
            queue,
            mode,
            ..
        } => Box::new(XdpPort::open(
            ifname,
            XdpConfig {
                queue: *queue,
                mode: *mode,
                ..XdpConfig::default()
            },
        )?),
    })
}

/// Opens the port `spec` describes for `threads` poll threads, as receive sides that spread
/// the interface's traffic over the threads by flow (send through the first):
/// - an AF_PACKET interface: one socket per thread in one fanout group (the kernel hands
///   each frame to one of them by its flow hash);
/// - `xdp:IFNAME` without a queue: one AF_XDP socket per receive queue, queues 0, 1, ... up
///   to one per thread or the interface's number of queues, whichever is fewer (the device
///   spreads flows over its queues: RSS on a NIC, the sender's queue choice on a veth);
/// - otherwise (one thread, a named queue, pcap, TAP) the one port [`open`] gives.
pub fn open_spread(spec: &PortSpec, threads: usize) -> Result<Vec<Box<dyn Port>>> {
    match spec {
        PortSpec::AfPacket(n) if threads > 1 => {
            let cfg = AfPacketConfig {
                fanout: Some(0),
                ..AfPacketConfig::default()
            };
            let first = AfPacketPort::open(n, cfg.clone())?;
            let group = first.fanout_group();
            let mut all: Vec<Box<dyn Port>> = vec![Box::new(first)];
            for _ in 1..threads {
                let cfg = AfPacketConfig {
                    fanout: group,
                    ..cfg.clone()
                };
                all.push(Box::new(AfPacketPort::open(n, cfg)?));
            }
            Ok(all)
        }
        PortSpec::Xdp {
            ifname,
            mode,
            spread: true,
            ..
        } if threads > 1 => {
            let cfg = |queue| XdpConfig {
                queue,
                mode: *mode,
                map_entries: 64.max(threads as u32),
                ..XdpConfig::default()
            };
            let mut all: Vec<Box<dyn Port>> = vec![Box::new(XdpPort::open(ifname, cfg(0))?)];
            for q in 1..threads as u32 {
                match XdpPort::open(ifname, cfg(q)) {
                    Ok(p) => all.push(Box::new(p)),
                    Err(e) => {
                        tracing::info!(port = %ifname, queues = q, error = %e, "AF_XDP: one socket per queue the interface has");
                        break;
                    }
                }
            }
            Ok(all)
        }
        _ => Ok(vec![open(spec)?]),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_the_four_kinds() {
        assert_eq!(
            PortSpec::parse("veth0").ok(),
            Some(PortSpec::AfPacket("veth0".into()))
        );
        assert_eq!(
            PortSpec::parse("pcap:a.pcap,b.pcap").ok(),
            Some(PortSpec::Pcap {
                input: Some("a.pcap".into()),
                output: Some("b.pcap".into())
            })
        );
        assert_eq!(
            PortSpec::parse("pcap:,b.pcap").ok(),
            Some(PortSpec::Pcap {
                input: None,
                output: Some("b.pcap".into())
            })
        );
        assert_eq!(
            PortSpec::parse("tap:tap0").ok(),
            Some(PortSpec::Tap("tap0".into()))
        );
        assert_eq!(
            PortSpec::parse("xdp:veth0").ok(),
            Some(PortSpec::Xdp {
                ifname: "veth0".into(),
                queue: 0,
                mode: XdpMode::Auto,
                spread: true,
            })
        );
        assert_eq!(
            PortSpec::parse("xdp:eth1@3").ok(),
            Some(PortSpec::Xdp {
                ifname: "eth1".into(),
                queue: 3,
                mode: XdpMode::Auto,
                spread: false,
            })
        );
        assert_eq!(
            PortSpec::parse("xdp-native:eth1@2").ok(),
            Some(PortSpec::Xdp {
                ifname: "eth1".into(),
                queue: 2,
                mode: XdpMode::Native,
                spread: false,
            })
        );
        assert_eq!(
            PortSpec::parse("xdp-generic:veth3").ok(),
            Some(PortSpec::Xdp {
                ifname: "veth3".into(),
                queue: 0,
                mode: XdpMode::Generic,
                spread: true,
            })
        );
    }

    #[test]
    fn rejects_nonsense() {
        for s in [
            "",
            "pcap:",
            "pcap:,",
            "tap:",
            "a/b",
            "sixteen-chars-xx",
            "xdp:",
            "xdp:@1",
            "xdp:eth0@",
            "xdp:eth0@x",
            "xdp:eth0@-1",
            "xdp:eth0@99999",
            "xdp:a/b",
        ] {
            assert!(PortSpec::parse(s).is_err(), "{s}");
        }
    }
}
