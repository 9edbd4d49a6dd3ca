//! The Prometheus endpoint of `koi run --metrics ADDR`: a small HTTP server that answers
//! `GET /metrics` with per-port packet, byte and drop counters, drops that belong to no port,
//! and the number of entries of every table, in Prometheus' text exposition format (0.0.4).
//! It reads the counters under short locks and never blocks forwarding for long.

use super::run::{Shared, lock};
use std::fmt::Write as _;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::Ordering;
use std::time::Duration;

/// Longest request line or header line read.
const MAX_LINE: u64 = 8192;

/// Accepts connections on `listener` until the switch stops.
pub(super) fn serve(listener: &TcpListener, shared: &Shared<'_>) {
    if let Err(e) = listener.set_nonblocking(true) {
        tracing::error!(error = %e, "metrics: cannot poll the listener");
        return;
    }
    while !shared.stop.load(Ordering::Relaxed) {
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

fn answer(stream: TcpStream, shared: &Shared<'_>) -> std::io::Result<()> {
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
pub(super) fn render(shared: &Shared<'_>) -> String {
    let mut m = String::new();
    let ports: Vec<(u64, String, koi_ports::Stats)> = shared
        .slots
        .iter()
        .map(|s| {
            let p = lock(&s.port);
            (s.num, p.name().to_string(), p.stats())
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
    let c = shared.counters;
    let _ = writeln!(
        m,
        "# HELP koi_drops_total Packets dropped by the switch, by reason.\n# TYPE koi_drops_total counter"
    );
    for (reason, v) in [
        ("program", &c.program_drops),
        ("unknown_port", &c.unknown_port),
        ("pipeline_error", &c.pipeline_errors),
    ] {
        let _ = writeln!(
            m,
            "koi_drops_total{{reason=\"{reason}\"}} {}",
            v.load(Ordering::Relaxed)
        );
    }
    let tables: Vec<(String, usize)> = {
        let state = lock(shared.state);
        state
            .tables()
            .map(|t| (t.name().to_string(), t.len()))
            .collect()
    };
    let _ = writeln!(
        m,
        "# HELP koi_table_entries Entries installed in the table.\n# TYPE koi_table_entries gauge"
    );
    for (name, n) in tables {
        let _ = writeln!(m, "koi_table_entries{{table=\"{}\"}} {n}", escape(&name));
    }
    m
}

/// A label value with `\`, `"` and newlines escaped.
fn escape(s: &str) -> String {
    s.replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}
