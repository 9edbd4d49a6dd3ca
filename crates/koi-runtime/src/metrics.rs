//! The Prometheus endpoint of `koi run --metrics ADDR`: a small HTTP server that answers
//! `GET /metrics` with per-port packet, byte and drop counters, drops that belong to no port,
//! per pipeline (label `pipeline`) the packets to and from its controller and the number of
//! entries of every table of its program and, per poll thread (label `thread`), the flow
//! caches' sizes (`koi_cache_megaflows`, `koi_cache_guarded_megaflows`, `koi_cache_subtables`,
//! `koi_cache_microflow_entries`, `koi_cache_memory_bytes`) and counters (`koi_cache_lookups_total{tier="microflow|megaflow|
//! miss"}`, `koi_cache_upcalls_limited_total`), in Prometheus' text exposition format (0.0.4).
//! The cache numbers are the snapshots the poll threads publish about every 100 ms; without
//! caches (`--no-cache`) they are left out. It reads the counters under short locks and never
//! blocks forwarding for long.

use crate::cache::Snapshot;
use crate::lock;
use crate::pipeline::PipelineCounters;
use crate::switch::Switch;
use std::fmt::Write as _;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

/// Longest request line or header line read.
const MAX_LINE: u64 = 8192;

/// Accepts connections on `listener` until the switch stops.
pub fn serve(listener: &TcpListener, shared: &Switch) {
    if let Err(e) = listener.set_nonblocking(true) {
        tracing::error!(error = %e, "metrics: cannot poll the listener");
        return;
    }
    while !shared.stopping() {
        match listener.accept() {
            Ok((stream, _)) => {
                if let Err(e) = answer(stream, shared) {
                    tracing::debug!(error = %e, "metrics: client");
                }
            }
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                std::thread::sleep(Duration::from_millis(50));
            }
            Err(e) => {
                tracing::warn!(error = %e, "metrics: accept");
                std::thread::sleep(Duration::from_millis(50));
            }
        }
    }
}

fn answer(stream: TcpStream, shared: &Switch) -> std::io::Result<()> {
    stream.set_nonblocking(false)?;
    stream.set_read_timeout(Some(Duration::from_secs(2)))?;
    stream.set_write_timeout(Some(Duration::from_secs(2)))?;
    let mut reader = BufReader::new(stream.try_clone()?.take(MAX_LINE * 64));
    let mut request = String::new();
    reader.read_line(&mut request)?;
    // Skip the headers.
    loop {
        let mut h = String::new();
        if reader.read_line(&mut h)? == 0 || h == "\r\n" || h == "\n" {
            break;
        }
    }
    let mut words = request.split_whitespace();
    let (method, path) = (words.next().unwrap_or(""), words.next().unwrap_or(""));
    let (status, body, ctype) = match (method, path) {
        ("GET", "/metrics") => ("200 OK", render(shared), "text/plain; version=0.0.4"),
        ("GET", _) => (
            "404 Not Found",
            "not found: try /metrics\n".into(),
            "text/plain",
        ),
        _ => ("405 Method Not Allowed", "only GET\n".into(), "text/plain"),
    };
    let mut out = stream;
    write!(
        out,
        "HTTP/1.1 {status}\r\nContent-Type: {ctype}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )?;
    out.flush()
}

/// The metrics text.
pub fn render(shared: &Switch) -> String {
    let mut m = String::new();
    let ports: Vec<(u64, String, koi_ports::Stats)> = shared
        .ports()
        .iter()
        .map(|s| {
            let name = lock(&s.port).name().to_string();
            (s.num, name, s.stats())
        })
        .collect();
    let per_port =
        |m: &mut String, name: &str, help: &str, f: &dyn Fn(&koi_ports::Stats) -> u64| {
            let _ = writeln!(m, "# HELP {name} {help}\n# TYPE {name} counter");
            for (num, pname, st) in &ports {
                let _ = writeln!(
                    m,
                    "{name}{{port=\"{num}\",name=\"{}\"}} {}",
                    escape(pname),
                    f(st)
                );
            }
        };
    per_port(
        &mut m,
        "koi_port_rx_packets_total",
        "Packets received on the port.",
        &|s| s.rx_packets,
    );
    per_port(
        &mut m,
        "koi_port_rx_bytes_total",
        "Bytes received on the port.",
        &|s| s.rx_bytes,
    );
    per_port(
        &mut m,
        "koi_port_tx_packets_total",
        "Packets sent on the port.",
        &|s| s.tx_packets,
    );
    per_port(
        &mut m,
        "koi_port_tx_bytes_total",
        "Bytes sent on the port.",
        &|s| s.tx_bytes,
    );
    let _ = writeln!(
        m,
        "# HELP koi_port_drops_total Frames the port lost, by reason.\n# TYPE koi_port_drops_total counter"
    );
    for (num, pname, st) in &ports {
        for (reason, v) in [
            ("too_big", st.drop_too_big),
            ("link_down", st.drop_link_down),
            ("error", st.drop_error),
            ("ring_full", st.drop_ring_full),
        ] {
            let _ = writeln!(
                m,
                "koi_port_drops_total{{port=\"{num}\",name=\"{}\",reason=\"{reason}\"}} {v}",
                escape(pname)
            );
        }
    }
    let c = &shared.counters;
    let _ = writeln!(
        m,
        "# HELP koi_drops_total Packets dropped by the switch, by reason.\n# TYPE koi_drops_total counter"
    );
    for (reason, v) in c.by_reason() {
        let _ = writeln!(m, "koi_drops_total{{reason=\"{reason}\"}} {v}");
    }
    slow_path(&mut m, shared);
    pipelines(&mut m, shared);
    let snaps: Vec<(String, usize, Snapshot)> = shared
        .pipelines()
        .iter()
        .filter_map(|pl| Some((escape(pl.name()), pl.image()?)))
        .filter(|(_, image)| image.caches.config.is_some())
        .flat_map(|(name, image)| {
            let snaps = image.caches.snapshots();
            snaps
                .into_iter()
                .enumerate()
                .filter_map(move |(t, s)| Some((name.clone(), t, s?)))
        })
        .collect();
    if !snaps.is_empty() {
        caches(&mut m, &snaps);
    }
    m
}

/// The slow path: runs of queued misses and their time, misses queued now, and per port the
/// misses queued and dropped at a full queue.
fn slow_path(m: &mut String, shared: &Switch) {
    let c = &shared.counters;
    let get = |a: &AtomicU64| a.load(std::sync::atomic::Ordering::Relaxed);
    let _ = writeln!(
        m,
        "# HELP koi_upcalls_total Slow-path runs of queued misses (a flow's queued packets each).\n\
         # TYPE koi_upcalls_total counter\nkoi_upcalls_total {}\n\
         # HELP koi_upcall_seconds_total Time the slow-path runs took.\n\
         # TYPE koi_upcall_seconds_total counter\nkoi_upcall_seconds_total {:.6}\n\
         # HELP koi_upcall_queued Cache misses waiting for the slow path now.\n\
         # TYPE koi_upcall_queued gauge\nkoi_upcall_queued {}",
        get(&c.upcalls),
        get(&c.upcall_ns) as f64 / 1e9,
        get(&c.upcall_queued)
    );
    let _ = writeln!(
        m,
        "# HELP koi_port_upcalls_total Cache misses of the port, queued for the slow path or dropped at its full queue.\n\
         # TYPE koi_port_upcalls_total counter"
    );
    for slot in shared.ports().iter() {
        let name = escape(lock(&slot.port).name());
        let (queued, full) = slot.upcalls.get();
        for (what, v) in [("queued", queued), ("queue_full", full)] {
            let _ = writeln!(
                m,
                "koi_port_upcalls_total{{port=\"{}\",name=\"{name}\",result=\"{what}\"}} {v}",
                slot.num
            );
        }
    }
}

/// Per pipeline: its controller's packets and digests, and its tables' sizes.
fn pipelines(m: &mut String, shared: &Switch) {
    type Count = (
        &'static str,
        &'static str,
        fn(&PipelineCounters) -> &AtomicU64,
    );
    let counts: [Count; 5] = [
        (
            "koi_pipeline_no_program_total",
            "Packets dropped because the pipeline had no program.",
            |c| &c.no_program,
        ),
        (
            "koi_pipeline_packet_ins_total",
            "Packets sent to the controller (CPU port).",
            |c| &c.packet_ins,
        ),
        (
            "koi_pipeline_packet_outs_total",
            "Packets injected by the controller.",
            |c| &c.packet_outs,
        ),
        (
            "koi_pipeline_to_cpu_unclaimed_total",
            "Packets sent to the CPU port while no controller was connected.",
            |c| &c.to_cpu_unclaimed,
        ),
        (
            "koi_pipeline_digests_total",
            "Digest messages handed to the controller.",
            |c| &c.digests,
        ),
    ];
    for (name, help, f) in counts {
        let _ = writeln!(m, "# HELP {name} {help}\n# TYPE {name} counter");
        for pl in shared.live_pipelines() {
            let v = f(&pl.counters).load(Ordering::Relaxed);
            let _ = writeln!(m, "{name}{{pipeline=\"{}\"}} {v}", escape(pl.name()));
        }
    }
    let _ = writeln!(
        m,
        "# HELP koi_table_entries Entries installed in the table.\n# TYPE koi_table_entries gauge"
    );
    for pl in shared.live_pipelines() {
        let Some(image) = pl.image() else {
            continue;
        };
        let tables: Vec<(String, usize)> = image.read(|state| {
            state
                .tables()
                .map(|t| (t.name().to_string(), t.len()))
                .collect()
        });
        for (name, n) in tables {
            let _ = writeln!(
                m,
                "koi_table_entries{{table=\"{}\",pipeline=\"{}\"}} {n}",
                escape(&name),
                escape(pl.name())
            );
        }
    }
}

/// The flow caches' gauges and counters: one sample per pipeline (its escaped name) and poll
/// thread that has published a snapshot.
fn caches(m: &mut String, snaps: &[(String, usize, Snapshot)]) {
    type Gauge = (&'static str, &'static str, fn(&Snapshot) -> usize);
    let gauges: [Gauge; 5] = [
        ("koi_cache_megaflows", "Megaflows installed.", |s| {
            s.info.megaflows
        }),
        (
            "koi_cache_guarded_megaflows",
            "Megaflows whose programs check decisions on state per packet (guards).",
            |s| s.info.guarded,
        ),
        (
            "koi_cache_subtables",
            "Subtables (distinct masks) of the megaflow classifier.",
            |s| s.info.subtables,
        ),
        (
            "koi_cache_microflow_entries",
            "Occupied entries of the microflow cache.",
            |s| s.info.microflows,
        ),
        (
            "koi_cache_memory_bytes",
            "Bytes used by the flow caches.",
            |s| s.info.memory_bytes,
        ),
    ];
    for (name, help, f) in gauges {
        let _ = writeln!(m, "# HELP {name} {help}\n# TYPE {name} gauge");
        for (pl, t, s) in snaps {
            let _ = writeln!(m, "{name}{{thread=\"{t}\",pipeline=\"{pl}\"}} {}", f(s));
        }
    }
    let _ = writeln!(
        m,
        "# HELP koi_cache_evictions_total Megaflows evicted at the limit: new ones never hit again, or established ones.\n\
         # TYPE koi_cache_evictions_total counter"
    );
    for (pl, t, s) in snaps {
        let i = &s.info;
        for (kind, v) in [
            ("new", i.probation_evictions),
            ("established", i.evictions - i.probation_evictions),
        ] {
            let _ = writeln!(
                m,
                "koi_cache_evictions_total{{thread=\"{t}\",pipeline=\"{pl}\",kind=\"{kind}\"}} {v}"
            );
        }
    }
    let _ = writeln!(
        m,
        "# HELP koi_cache_lookups_total Flow cache lookups by the tier that answered (miss: none).\n\
         # TYPE koi_cache_lookups_total counter"
    );
    for (pl, t, s) in snaps {
        for (tier, v) in [
            ("microflow", s.stats.microflow_hits),
            ("megaflow", s.stats.megaflow_hits),
            ("miss", s.stats.misses),
        ] {
            let _ = writeln!(
                m,
                "koi_cache_lookups_total{{thread=\"{t}\",pipeline=\"{pl}\",tier=\"{tier}\"}} {v}"
            );
        }
    }
    let _ = writeln!(
        m,
        "# HELP koi_cache_upcalls_limited_total Cache misses dropped by the slow-path rate limit.\n\
         # TYPE koi_cache_upcalls_limited_total counter"
    );
    for (pl, t, s) in snaps {
        let _ = writeln!(
            m,
            "koi_cache_upcalls_limited_total{{thread=\"{t}\",pipeline=\"{pl}\"}} {}",
            s.stats.upcalls_limited
        );
    }
}

/// A label value with `\`, `"` and newlines escaped.
fn escape(s: &str) -> String {
    s.replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}
