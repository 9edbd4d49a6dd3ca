//! The Prometheus endpoint of `koi run --metrics ADDR`: an HTTP server (hyper) that answers
//! `GET /metrics` with per-port packet, byte and drop counters, drops that belong to no port,
//! per pipeline (label `pipeline`) the packets to and from its controller and the number of
//! entries of every table of its program and, per poll thread (label `thread`), the flow
//! caches' sizes (`koi_cache_megaflows`, `koi_cache_guarded_megaflows`, `koi_cache_subtables`,
//! `koi_cache_microflow_entries`, `koi_cache_memory_bytes`) and counters (`koi_cache_lookups_total{tier="microflow|megaflow|
//! miss"}`, `koi_cache_upcalls_limited_total`), in Prometheus' text exposition format (0.0.4).
//! The cache numbers are the snapshots the poll threads publish about every 100 ms; without
//! caches (`--no-cache`) they are left out. It reads the counters under short locks and never
//! blocks forwarding for long. [`render`] is the one place that writes the text: a new counter
//! goes there. No client can stall another's scrape: see [`serve`] and its limits.

use crate::cache::Snapshot;
use crate::lock;
use crate::pipeline::PipelineCounters;
use crate::switch::Switch;
use http_body_util::Full;
use hyper::body::{Bytes, Incoming};
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::{TokioIo, TokioTimer};
use std::fmt::Write as _;
use std::net::TcpListener;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

/// Connections served at once; more are answered `503 Service Unavailable` and closed.
pub const MAX_CONNECTIONS: usize = 32;
/// A request's headers must arrive whole within this long of the connection's start (a client
/// that sends a byte a second is cut off).
pub const HEADER_TIMEOUT: Duration = Duration::from_secs(2);
/// A connection is closed this long after it was accepted, whatever it is doing (reading,
/// waiting for the counters, or a client taking its reply slowly).
pub const CONNECTION_DEADLINE: Duration = Duration::from_secs(10);
/// How often the server looks at the switch's stop flag.
const POLL: Duration = Duration::from_millis(100);

/// Serves `GET /metrics` on `listener` until the switch stops, from a small tokio runtime of its
/// own: HTTP/1.1 by hyper, one request per connection, every connection its own task with the
/// limits above, so that no client (silent, slow or many) stalls another's scrape.
pub fn serve(listener: TcpListener, shared: Arc<Switch>) {
    let rt = match tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .max_blocking_threads(4)
        .thread_name("koi-metrics")
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            tracing::error!(error = %e, "metrics: cannot start the server's runtime");
            return;
        }
    };
    rt.block_on(accept_loop(listener, shared));
}

async fn accept_loop(listener: TcpListener, shared: Arc<Switch>) {
    let listener = match listener
        .set_nonblocking(true)
        .and_then(|()| tokio::net::TcpListener::from_std(listener))
    {
        Ok(l) => l,
        Err(e) => {
            tracing::error!(error = %e, "metrics: cannot poll the listener");
            return;
        }
    };
    let places = Arc::new(tokio::sync::Semaphore::new(MAX_CONNECTIONS));
    while !shared.stopping() {
        let (stream, _) = match tokio::time::timeout(POLL, listener.accept()).await {
            Err(_) => continue,
            Ok(Ok(s)) => s,
            Ok(Err(e)) => {
                tracing::debug!(error = %e, "metrics: accept");
                // A persistent failure (too many open files) must not spin.
                tokio::time::sleep(POLL).await;
                continue;
            }
        };
        let Ok(place) = Arc::clone(&places).try_acquire_owned() else {
            tokio::spawn(refuse(stream));
            continue;
        };
        let shared = Arc::clone(&shared);
        tokio::spawn(async move {
            let conn = hyper::server::conn::http1::Builder::new()
                .timer(TokioTimer::new())
                .header_read_timeout(HEADER_TIMEOUT)
                .keep_alive(false)
                .serve_connection(
                    TokioIo::new(stream),
                    hyper::service::service_fn(move |req| answer(req, Arc::clone(&shared))),
                );
            match tokio::time::timeout(CONNECTION_DEADLINE, conn).await {
                Ok(Ok(())) => {}
                Ok(Err(e)) => tracing::debug!(error = %e, "metrics: client"),
                Err(_) => tracing::debug!("metrics: client past the connection deadline"),
            }
            drop(place);
        });
    }
}

/// Tells a client beyond [`MAX_CONNECTIONS`] to come back, without reading its request.
async fn refuse(stream: tokio::net::TcpStream) {
    use tokio::io::AsyncWriteExt as _;
    let body = format!("too many metrics connections (at most {MAX_CONNECTIONS}), try again\n");
    let reply = format!(
        "HTTP/1.1 503 Service Unavailable\r\nContent-Type: text/plain\r\nContent-Length: {}\r\n\
         Retry-After: 1\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    let mut stream = stream;
    let _ = tokio::time::timeout(HEADER_TIMEOUT, async {
        stream.write_all(reply.as_bytes()).await?;
        stream.shutdown().await?;
        // Take (a little of) the request before closing: closing with unread data resets the
        // connection, and the client would not see the reason.
        let mut buf = [0u8; 4096];
        let mut left = 16 * buf.len();
        while left > 0 {
            match tokio::io::AsyncReadExt::read(&mut stream, &mut buf).await? {
                0 => break,
                n => left = left.saturating_sub(n),
            }
        }
        std::io::Result::Ok(())
    })
    .await;
}

async fn answer(
    req: Request<Incoming>,
    shared: Arc<Switch>,
) -> Result<Response<Full<Bytes>>, std::convert::Infallible> {
    let (status, body, ctype) = match (req.method(), req.uri().path()) {
        (&Method::GET, "/metrics") => {
            // The counters are read under the switch's locks: off the runtime's thread, so a
            // lock held for long (a program being swapped) delays this scrape only.
            match tokio::task::spawn_blocking(move || render(&shared)).await {
                Ok(text) => (StatusCode::OK, text, "text/plain; version=0.0.4"),
                Err(_) => (
                    StatusCode::INTERNAL_SERVER_ERROR,
                    "internal error while reading the counters\n".into(),
                    "text/plain",
                ),
            }
        }
        (&Method::GET, _) => (
            StatusCode::NOT_FOUND,
            "not found: try /metrics\n".into(),
            "text/plain",
        ),
        _ => (
            StatusCode::METHOD_NOT_ALLOWED,
            "only GET\n".into(),
            "text/plain",
        ),
    };
    let mut resp = Response::new(Full::new(Bytes::from(body)));
    *resp.status_mut() = status;
    if let Ok(v) = hyper::header::HeaderValue::from_str(ctype) {
        resp.headers_mut().insert(hyper::header::CONTENT_TYPE, v);
    }
    Ok(resp)
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
            ("truncated", st.drop_truncated),
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
