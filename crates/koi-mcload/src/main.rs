//! `mcload`: a memcached load generator for koi's AppSwitch benchmarks (and anyone's
//! memcached): GETs and SETs of keys of a chosen length over UDP or TCP, in memcached's
//! binary or ASCII protocol, closed loop (each client one request in flight) or open loop (a
//! fixed total rate, whatever the answers do), with the answers' latency percentiles.
//!
//! Several `--target`s make the client pick the server by the key itself (a hash of the
//! key, modulo their number): the "clients hash themselves" floor that a proxy or the switch
//! is measured against.
//!
//!     mcload --target 10.0.0.100:11211 --transport udp --protocol binary \
//!            --keys 10000 --key-len 16 --gets 0.5 --clients 8 --seconds 10 [--rate 50000]

mod load;
mod proto;

use clap::Parser;
use proto::Protocol;
use std::net::SocketAddr;
use std::time::Duration;

#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Transport {
    Udp,
    Tcp,
}

#[derive(Parser, Debug, Clone)]
#[command(
    name = "mcload",
    about = "memcached load generator: throughput and latency percentiles"
)]
pub struct Args {
    /// A server (or the service address in front of several); repeat for the client to
    /// spread the keys itself.
    #[arg(long, required = true, value_name = "ADDR:PORT")]
    pub target: Vec<SocketAddr>,
    #[arg(long, value_enum, default_value_t = Transport::Udp)]
    pub transport: Transport,
    #[arg(long, value_enum, default_value_t = Protocol::Binary)]
    pub protocol: Protocol,
    /// Distinct keys, chosen uniformly.
    #[arg(long, default_value_t = 10_000)]
    pub keys: u32,
    /// Bytes per key (at most 250).
    #[arg(long, default_value_t = 16, value_parser = clap::value_parser!(u16).range(8..=250))]
    pub key_len: u16,
    /// Bytes per value stored.
    #[arg(long, default_value_t = 32)]
    pub value_len: usize,
    /// The share of GETs (the rest are SETs).
    #[arg(long, default_value_t = 0.5)]
    pub gets: f64,
    /// Concurrent clients, each with its own sockets.
    #[arg(long, default_value_t = 4)]
    pub clients: usize,
    /// Open loop: this many requests a second in all, spread over the clients; without it,
    /// closed loop (each client sends its next request when the last is answered).
    #[arg(long)]
    pub rate: Option<f64>,
    /// Measured seconds.
    #[arg(long, default_value_t = 5.0)]
    pub seconds: f64,
    /// Seconds of load before measuring.
    #[arg(long, default_value_t = 1.0)]
    pub warmup: f64,
    /// Milliseconds after which an unanswered request counts as lost.
    #[arg(long, default_value_t = 200)]
    pub timeout_ms: u64,
    /// Store every key once before the run (so that GETs hit).
    #[arg(long)]
    pub preload: bool,
    /// Print the result as one JSON object.
    #[arg(long)]
    pub json: bool,
}

impl Args {
    pub fn timeout(&self) -> Duration {
        Duration::from_millis(self.timeout_ms)
    }

    /// Key `i`: `k<i>` padded with `x` to the key length.
    pub fn key(&self, i: u32) -> Vec<u8> {
        let mut k = format!("k{i}").into_bytes();
        k.resize(usize::from(self.key_len), b'x');
        k
    }
}

fn main() {
    let args = Args::parse();
    if !(0.0..=1.0).contains(&args.gets) || args.clients == 0 {
        eprintln!("mcload: --gets is a share from 0 to 1 and --clients at least 1");
        std::process::exit(2);
    }
    let r = match load::run(&args) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("mcload: {e}");
            std::process::exit(1);
        }
    };
    let p = |q: f64| r.percentile_us(q);
    if args.json {
        println!(
            "{{\"requests_per_s\": {:.1}, \"answered\": {}, \"lost\": {}, \"failed\": {}, \
             \"p50_us\": {:.1}, \"p95_us\": {:.1}, \"p99_us\": {:.1}, \"p999_us\": {:.1}}}",
            r.rate(),
            r.latencies.len(),
            r.lost,
            r.failed,
            p(0.5),
            p(0.95),
            p(0.99),
            p(0.999)
        );
    } else {
        println!(
            "{:.0} requests/s answered ({} in {:.1} s; {} lost, {} failed); latency us: \
             p50 {:.1} p95 {:.1} p99 {:.1} p99.9 {:.1}",
            r.rate(),
            r.latencies.len(),
            r.seconds,
            r.lost,
            r.failed,
            p(0.5),
            p(0.95),
            p(0.99),
            p(0.999)
        );
    }
}
