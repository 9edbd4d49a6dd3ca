//! koi's P4Runtime v1 server: the gRPC service standard controllers (p4runtime-shell, finsy,
//! ONOS, p4lang's tutorial controllers) use to program a running koi, over the switch
//! runtime's control API (`koi_runtime`).
//!
//! ```text
//!   gRPC (tonic, its own tokio runtime) ─► Service (service.rs)
//!        │ device id ─► Device (device.rs): arbitration, streams, codec Target, digests
//!        ├─ Write / Read (rw.rs) ─► koi_p4runtime codec ─► Image::update / Image::read
//!        ├─ Set/GetForwardingPipelineConfig (config.rs) ─► Program, Pipeline::load
//!        ├─ StreamChannel: arbitration (arbitration.rs), PacketOut ─► Switch::packet_out
//!        └─ koi.pof.v1.Pof (pof_channel.rs): POF configurations ─► koi_runtime::pof
//!   poll threads ─► EventSink (queue) ─► device task: PacketIn, DigestList (digests.rs),
//!                                         IdleTimeoutNotification (periodic scan)
//! ```
//!
//! Each pipeline of the switch is one device (its P4Runtime device id). [`Server::start`]
//! binds the address (localhost by default in `koi run`; TLS and mutual TLS optional), starts
//! the service on a small tokio runtime of its own, and a task per device that delivers what
//! the data plane produced. What P4Runtime writes is the state `koi ctl` reads, and the
//! reverse: both go through the same images.

pub mod arbitration;
pub mod config;
pub mod connections;
pub mod device;
pub mod digests;
pub mod pof_channel;
pub mod rw;
pub mod service;
pub mod status;

use device::{Device, Event, lock};
use koi_proto::p4runtime::p4_runtime_server::P4RuntimeServer;
use koi_runtime::Switch;
use std::collections::HashMap;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::sync::{mpsc, watch};

/// How often the devices look for idle entries.
pub const IDLE_SCAN: Duration = Duration::from_millis(20);
/// How long a stopping server waits for open calls to finish.
pub const GRACE: Duration = Duration::from_secs(2);
/// The largest request accepted (a device config can be large; BMv2 accepts as much).
pub const MAX_MESSAGE: usize = 256 << 20;
/// Streams one connection may have open at once (a controller needs a few; more are refused
/// by HTTP/2 flow control, not queued).
pub const MAX_STREAMS: u32 = 1024;
/// A request (a Write, a Read's whole answer, a pipeline config being compiled) that has not
/// been answered within this long is cancelled with DEADLINE_EXCEEDED, freeing what it held;
/// a client's own `grpc-timeout` may be shorter. StreamChannel is not cut: its answer is a
/// stream that lasts as long as the controller.
pub const REQUEST_TIMEOUT: Duration = Duration::from_secs(120);
/// The server pings every connection that has been quiet this long (HTTP/2 keepalive) and
/// closes it when the ping is not answered within [`KEEPALIVE_TIMEOUT`]: a controller whose
/// host vanished gives up its streams (and its primary role) instead of holding them.
pub const KEEPALIVE: Duration = Duration::from_secs(30);
/// See [`KEEPALIVE`].
pub const KEEPALIVE_TIMEOUT: Duration = Duration::from_secs(20);

/// TLS for the server.
#[derive(Clone, Debug)]
pub struct Tls {
    /// PEM certificate chain and key of the server.
    pub cert: PathBuf,
    pub key: PathBuf,
    /// With a CA (PEM), clients must present a certificate it signed (mutual TLS).
    pub client_ca: Option<PathBuf>,
}

/// How to run the server.
#[derive(Clone, Debug)]
pub struct ServerConfig {
    pub addr: SocketAddr,
    pub tls: Option<Tls>,
    /// Connections served at once (see [`connections`]; [`connections::MAX_CONNECTIONS`] by
    /// default).
    pub max_connections: usize,
}

impl ServerConfig {
    /// Plain TCP on `addr`, the default connection limit.
    pub fn new(addr: SocketAddr) -> ServerConfig {
        ServerConfig {
            addr,
            tls: None,
            max_connections: connections::MAX_CONNECTIONS,
        }
    }
}

/// The devices of the switch by id, made when first asked for (pipelines may be added).
pub struct Devices {
    switch: Arc<Switch>,
    map: Mutex<HashMap<u64, Arc<Device>>>,
    handle: tokio::runtime::Handle,
    /// Turns true when the server stops.
    pub(crate) stop: watch::Receiver<bool>,
}

impl Devices {
    /// The device with P4Runtime id `id`.
    pub fn get(&self, id: u64) -> Option<Arc<Device>> {
        let mut map = lock(&self.map);
        let Some(pipeline) = self.switch.pipeline_by_device(id) else {
            // A removed pipeline's device goes with it.
            map.remove(&id);
            return None;
        };
        if let Some(d) = map.get(&id)
            && Arc::ptr_eq(&d.pipeline, &pipeline)
        {
            return Some(Arc::clone(d));
        }
        let (d, rx) = Device::new(Arc::clone(&self.switch), pipeline);
        self.handle
            .spawn(device_task(Arc::clone(&d), rx, self.stop.clone()));
        map.insert(id, Arc::clone(&d));
        Some(d)
    }
}

/// Delivers a device's events, digest lists and idle notifications until the server stops.
async fn device_task(
    d: Arc<Device>,
    mut rx: mpsc::Receiver<Event>,
    mut stop: watch::Receiver<bool>,
) {
    let mut idle = tokio::time::interval(IDLE_SCAN);
    idle.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut digest_due: Option<Instant> = None;
    loop {
        let wake = digest_due.map_or_else(
            || tokio::time::Instant::now() + Duration::from_secs(3600),
            tokio::time::Instant::from_std,
        );
        tokio::select! {
            ev = rx.recv() => match ev {
                Some(ev) => {
                    d.on_event(ev);
                    digest_due = d.digest_tick();
                }
                None => break,
            },
            _ = tokio::time::sleep_until(wake) => {
                digest_due = d.digest_tick();
            }
            _ = idle.tick() => d.idle_scan(),
            _ = stop.changed() => break,
        }
    }
    d.pipeline.set_events(None);
}

/// A running P4Runtime server.
pub struct Server {
    addr: SocketAddr,
    stop: watch::Sender<bool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

fn read(path: &PathBuf, what: &str) -> Result<Vec<u8>, String> {
    std::fs::read(path).map_err(|e| format!("{what} {}: {e}", path.display()))
}

/// The server's TLS configuration from PEM files.
fn tls_config(t: &Tls) -> Result<tonic::transport::ServerTlsConfig, String> {
    let identity = tonic::transport::Identity::from_pem(
        read(&t.cert, "--grpc-tls-cert")?,
        read(&t.key, "--grpc-tls-key")?,
    );
    let mut c = tonic::transport::ServerTlsConfig::new().identity(identity);
    if let Some(ca) = &t.client_ca {
        c = c.client_ca_root(tonic::transport::Certificate::from_pem(read(
            ca,
            "--grpc-tls-client-ca",
        )?));
    }
    Ok(c)
}

impl Server {
    /// Binds `cfg.addr` and serves P4Runtime for `switch` on a thread of its own until
    /// [`Server::shutdown`] (or drop).
    pub fn start(switch: Arc<Switch>, cfg: ServerConfig) -> Result<Server, String> {
        let listener = std::net::TcpListener::bind(cfg.addr)
            .map_err(|e| format!("P4Runtime server: cannot listen on {}: {e}", cfg.addr))?;
        let addr = listener
            .local_addr()
            .map_err(|e| format!("P4Runtime server: {e}"))?;
        listener
            .set_nonblocking(true)
            .map_err(|e| format!("P4Runtime server: {e}"))?;
        let tls = cfg.tls.as_ref().map(tls_config).transpose()?;
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .thread_name("koi-p4rt")
            .enable_all()
            .build()
            .map_err(|e| format!("P4Runtime server: cannot start its runtime: {e}"))?;
        let (stop_tx, stop_rx) = watch::channel(false);
        let devices = Arc::new(Devices {
            switch: Arc::clone(&switch),
            map: Mutex::new(HashMap::new()),
            handle: runtime.handle().clone(),
            stop: stop_rx.clone(),
        });
        // Devices exist from the start, so that packet-ins and digests are counted even
        // before a controller connects.
        for p in switch.live_pipelines() {
            devices.get(p.device_id());
        }
        let listener = {
            let _guard = runtime.enter();
            tokio::net::TcpListener::from_std(listener)
                .map_err(|e| format!("P4Runtime server: {e}"))?
        };
        let mut builder = tonic::transport::Server::builder()
            .max_concurrent_streams(MAX_STREAMS)
            .timeout(REQUEST_TIMEOUT)
            .http2_keepalive_interval(Some(KEEPALIVE))
            .http2_keepalive_timeout(Some(KEEPALIVE_TIMEOUT));
        if let Some(tls) = tls {
            builder = builder
                .tls_config(tls)
                .map_err(|e| format!("P4Runtime server: TLS: {e}"))?;
        }
        let svc = P4RuntimeServer::new(service::Service::new(Arc::clone(&devices)))
            .max_decoding_message_size(MAX_MESSAGE)
            .max_encoding_message_size(MAX_MESSAGE);
        let conns = connections::Registry::new(cfg.max_connections);
        let admit = Arc::clone(&conns);
        let svc = tonic::service::interceptor::InterceptedService::new(
            svc,
            move |req: tonic::Request<()>| {
                admit.admit(connections::conn_info(req.extensions()))?;
                Ok(req)
            },
        );
        // The POF controller channel beside P4Runtime (pof_channel.rs), through the same
        // connection limit.
        let admit = Arc::clone(&conns);
        let pof = tonic::service::interceptor::InterceptedService::new(
            koi_proto::pof::pof_server::PofServer::new(pof_channel::PofService::new(Arc::clone(
                &devices,
            )))
            .max_decoding_message_size(MAX_MESSAGE)
            .max_encoding_message_size(MAX_MESSAGE),
            move |req: tonic::Request<()>| {
                admit.admit(connections::conn_info(req.extensions()))?;
                Ok(req)
            },
        );
        let router = builder.add_service(svc).add_service(pof);
        let mut stop = stop_rx;
        let thread = std::thread::Builder::new()
            .name("koi-p4rt-server".into())
            .spawn(move || {
                runtime.block_on(async move {
                    // Each Write answers at once: no Nagle delay on the replies.
                    let incoming = tonic::transport::server::TcpIncoming::from(listener)
                        .with_nodelay(Some(true))
                        .with_keepalive(Some(KEEPALIVE));
                    // Every connection registered, and closed at once when it cannot be
                    // served (connections.rs).
                    let incoming =
                        tokio_stream::StreamExt::filter_map(incoming, move |r| match r {
                            Ok(s) => conns.accept(s).map(Ok),
                            Err(e) => Some(Err(e)),
                        });
                    let mut stopped = stop.clone();
                    let shutdown = async move {
                        let _ = stop.changed().await;
                    };
                    let serve = router.serve_with_incoming_shutdown(incoming, shutdown);
                    // Streams end when asked to stop; a client that keeps a call open gets
                    // `GRACE` before the runtime drops it.
                    let grace = async move {
                        let _ = stopped.changed().await;
                        tokio::time::sleep(GRACE).await;
                    };
                    tokio::select! {
                        r = serve => if let Err(e) = r {
                            tracing::error!(error = %e, "P4Runtime server failed");
                        },
                        _ = grace => {}
                    }
                });
                runtime.shutdown_timeout(Duration::from_secs(1));
            })
            .map_err(|e| format!("P4Runtime server: cannot start its thread: {e}"))?;
        tracing::info!(%addr, tls = cfg.tls.is_some(), "P4Runtime server listening");
        Ok(Server {
            addr,
            stop: stop_tx,
            thread: Some(thread),
        })
    }

    /// The address the server listens on.
    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }

    /// Stops serving and waits for the server's thread.
    pub fn shutdown(mut self) {
        self.stop_now();
    }

    fn stop_now(&mut self) {
        let _ = self.stop.send(true);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.stop_now();
    }
}
