//! The load itself: client threads, closed or open loop, over UDP or TCP, and the report
//! (answers' latencies, requests lost to the timeout, answers that were errors).

use crate::proto::{self, Op, Protocol};
use crate::{Args, Transport};
use std::collections::VecDeque;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream, UdpSocket};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// What a run measured (after the warm-up).
#[derive(Debug, Default)]
pub struct Report {
    /// Each answered request's latency, nanoseconds.
    pub latencies: Vec<u64>,
    /// Requests not answered within the timeout.
    pub lost: u64,
    /// Answers that were not what the request asked for (an error status).
    pub failed: u64,
    pub seconds: f64,
}

impl Report {
    pub fn rate(&self) -> f64 {
        self.latencies.len() as f64 / self.seconds.max(1e-9)
    }

    /// The `q` quantile of the latencies, microseconds (0 without answers).
    pub fn percentile_us(&self, q: f64) -> f64 {
        if self.latencies.is_empty() {
            return 0.0;
        }
        let i = ((self.latencies.len() as f64 * q).ceil() as usize).clamp(1, self.latencies.len());
        self.latencies[i - 1] as f64 / 1e3
    }

    /// Counts an answer: its latency (nanoseconds) if it answered well, else a failure.
    fn answer(&mut self, ok: bool, latency_ns: u64) {
        if ok {
            self.latencies.push(latency_ns);
        } else {
            self.failed += 1;
        }
    }

    fn add(&mut self, other: Report) {
        self.latencies.extend(other.latencies);
        self.lost += other.lost;
        self.failed += other.failed;
    }
}

/// xorshift64*: the clients' choice of operation and key (seeded per client).
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    fn unit(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64
    }
}

/// The next request into `req` (numbered `id`): a GET or, else, a SET of `value`, of a key
/// chosen uniformly; returns the key.
fn next_request(args: &Args, rng: &mut Rng, id: u32, value: &[u8], req: &mut Vec<u8>) -> Vec<u8> {
    let op = if rng.unit() < args.gets {
        Op::Get
    } else {
        Op::Set
    };
    let key = args.key((rng.next() % u64::from(args.keys.max(1))) as u32);
    req.clear();
    let udp = args.transport == Transport::Udp;
    proto::request(req, args.protocol, udp, id, op, &key, value);
    key
}

/// Which target holds `key` when the client spreads keys itself (FNV-1a, modulo).
fn target_of(key: &[u8], n: usize) -> usize {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for &b in key {
        h = (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3);
    }
    (h % n as u64) as usize
}

/// When the phases end: warm-up, then the measured part.
#[derive(Clone, Copy)]
struct Clock {
    start: Instant,
    measure: Instant,
    end: Instant,
}

impl Clock {
    fn ns(&self, t: Instant) -> u64 {
        t.duration_since(self.start).as_nanos() as u64
    }
}

pub fn run(args: &Args) -> Result<Report, String> {
    if args.preload {
        preload(args)?;
    }
    let start = Instant::now() + Duration::from_millis(50);
    let measure = start + Duration::from_secs_f64(args.warmup);
    let clock = Clock {
        start,
        measure,
        end: measure + Duration::from_secs_f64(args.seconds),
    };
    let results: Vec<Result<Report, String>> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..args.clients)
            .map(|c| {
                s.spawn(move || match args.rate {
                    None => closed(args, c, clock),
                    Some(rate) => open(args, c, clock, rate / args.clients as f64),
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().unwrap_or_else(|_| Err("a client panicked".into())))
            .collect()
    });
    let mut report = Report {
        seconds: args.seconds,
        ..Report::default()
    };
    for r in results {
        report.add(r?);
    }
    report.latencies.sort_unstable();
    Ok(report)
}

/// One connection to a target.
enum Conn {
    Udp(UdpSocket),
    Tcp(TcpStream, Vec<u8>),
}

fn connect(args: &Args, to: SocketAddr) -> Result<Conn, String> {
    match args.transport {
        Transport::Udp => {
            let bind: SocketAddr = if to.is_ipv4() {
                "0.0.0.0:0".parse().unwrap()
            } else {
                "[::]:0".parse().unwrap()
            };
            let s = UdpSocket::bind(bind).map_err(|e| format!("bind: {e}"))?;
            s.connect(to).map_err(|e| format!("{to}: {e}"))?;
            Ok(Conn::Udp(s))
        }
        Transport::Tcp => {
            let s = TcpStream::connect_timeout(&to, Duration::from_secs(5))
                .map_err(|e| format!("{to}: {e}"))?;
            let _ = s.set_nodelay(true);
            Ok(Conn::Tcp(s, Vec::new()))
        }
    }
}

/// The answer's outcome: `Some(true)` answered well, `Some(false)` an error answer, `None`
/// lost (timed out).
fn exchange(conn: &mut Conn, args: &Args, id: u32, req: &[u8], deadline: Instant) -> Option<bool> {
    match conn {
        Conn::Udp(s) => {
            s.send(req).ok()?;
            let mut buf = [0u8; 65536];
            loop {
                let left = deadline.checked_duration_since(Instant::now())?;
                s.set_read_timeout(Some(left.max(Duration::from_micros(1))))
                    .ok()?;
                let n = s.recv(&mut buf).ok()?;
                if let Some((rid, ok)) = proto::udp_reply(&buf[..n], args.protocol)
                    && rid == id as u16
                {
                    return Some(ok && !is_error(&buf[8..n], args.protocol));
                }
            }
        }
        Conn::Tcp(s, rx) => {
            s.write_all(req).ok()?;
            let mut buf = [0u8; 65536];
            loop {
                if let Some(len) = proto::answer_len(rx, args.protocol) {
                    let ok = !is_error(&rx[..len], args.protocol);
                    rx.drain(..len);
                    return Some(ok);
                }
                let left = deadline.checked_duration_since(Instant::now())?;
                s.set_read_timeout(Some(left.max(Duration::from_micros(1))))
                    .ok()?;
                let n = s.read(&mut buf).ok()?;
                if n == 0 {
                    return None;
                }
                rx.extend_from_slice(&buf[..n]);
            }
        }
    }
}

/// Whether an answer is an error (a GET miss is not).
fn is_error(answer: &[u8], protocol: Protocol) -> bool {
    match protocol {
        Protocol::Binary => {
            let status = answer
                .get(6..8)
                .map_or(0xffff, |s| u16::from_be_bytes([s[0], s[1]]));
            status != 0 && status != 1
        }
        Protocol::Ascii => {
            answer.starts_with(b"ERROR")
                || answer.starts_with(b"CLIENT_ERROR")
                || answer.starts_with(b"SERVER_ERROR")
        }
    }
}

fn connections(args: &Args) -> Result<Vec<Conn>, String> {
    args.target.iter().map(|&t| connect(args, t)).collect()
}

/// Stores every key once (several clients' worth of connections, closed loop).
fn preload(args: &Args) -> Result<(), String> {
    let mut conns = connections(args)?;
    let value = vec![b'v'; args.value_len];
    let mut req = Vec::new();
    for i in 0..args.keys {
        let key = args.key(i);
        let t = target_of(&key, conns.len());
        req.clear();
        let udp = args.transport == Transport::Udp;
        proto::request(&mut req, args.protocol, udp, i, Op::Set, &key, &value);
        let deadline = Instant::now() + args.timeout() * 5;
        if exchange(&mut conns[t], args, i, &req, deadline) != Some(true) {
            return Err(format!("preload: key {i} was not stored"));
        }
    }
    Ok(())
}

/// A closed-loop client: one request in flight at a time.
fn closed(args: &Args, c: usize, clock: Clock) -> Result<Report, String> {
    let mut conns = connections(args)?;
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15 ^ (c as u64 + 1).wrapping_mul(0x2545_f491));
    let value = vec![b'v'; args.value_len];
    let udp = args.transport == Transport::Udp;
    let mut report = Report::default();
    let mut req = Vec::new();
    let mut id: u32 = (c as u32) << 24;
    while Instant::now() < clock.start {
        std::hint::spin_loop();
    }
    loop {
        let t0 = Instant::now();
        if t0 >= clock.end {
            break;
        }
        id = id.wrapping_add(1);
        let key = next_request(args, &mut rng, id, &value, &mut req);
        let t = target_of(&key, conns.len());
        let got = exchange(&mut conns[t], args, id, &req, t0 + args.timeout());
        if t0 < clock.measure {
            if got.is_none() && !udp {
                conns[t] = connect(args, args.target[t])?;
            }
            continue;
        }
        match got {
            Some(ok) => report.answer(ok, t0.elapsed().as_nanos() as u64),
            None => {
                report.lost += 1;
                if !udp {
                    // A TCP stream out of step with its requests: start afresh.
                    conns[t] = connect(args, args.target[t])?;
                }
            }
        }
    }
    Ok(report)
}

/// An open-loop client: requests at `rate` a second, answers read by a thread per target.
fn open(args: &Args, c: usize, clock: Clock, rate: f64) -> Result<Report, String> {
    if rate <= 0.0 {
        return Err("--rate must be positive".into());
    }
    let conns = connections(args)?;
    let stop = Arc::new(AtomicBool::new(false));
    let mut senders = Vec::new();
    let mut readers = Vec::new();
    for conn in conns {
        let sent: Arc<Vec<AtomicU64>> = Arc::new((0..65536).map(|_| AtomicU64::new(0)).collect());
        let order: Arc<Mutex<VecDeque<u64>>> = Arc::new(Mutex::new(VecDeque::new()));
        match conn {
            Conn::Udp(s) => {
                let r = s.try_clone().map_err(|e| e.to_string())?;
                let (sent2, stop2, protocol) =
                    (Arc::clone(&sent), Arc::clone(&stop), args.protocol);
                readers.push(std::thread::spawn(move || {
                    read_udp(r, protocol, clock, &sent2, &stop2)
                }));
                senders.push((Sender::Udp(s), sent, order));
            }
            Conn::Tcp(s, _) => {
                let r = s.try_clone().map_err(|e| e.to_string())?;
                let (order2, stop2, protocol) =
                    (Arc::clone(&order), Arc::clone(&stop), args.protocol);
                readers.push(std::thread::spawn(move || {
                    read_tcp(r, protocol, clock, &order2, &stop2)
                }));
                senders.push((Sender::Tcp(s), sent, order));
            }
        }
    }
    let mut rng = Rng(0xd1b5_4a32_d192_ed03 ^ (c as u64 + 1).wrapping_mul(0x9e37_79b9));
    let value = vec![b'v'; args.value_len];
    let interval = Duration::from_secs_f64(1.0 / rate);
    let mut req = Vec::new();
    let mut measured_sent = 0u64;
    let mut id: u32 = 0;
    // Clients start staggered within one interval, so that their sends interleave.
    let mut next = clock.start + interval.mul_f64(c as f64 / args.clients as f64);
    while next < clock.end {
        let now = Instant::now();
        if next > now {
            let wait = next - now;
            if wait > Duration::from_micros(200) {
                std::thread::sleep(wait - Duration::from_micros(100));
            }
            while Instant::now() < next {
                std::hint::spin_loop();
            }
        }
        id = id.wrapping_add(1);
        let key = next_request(args, &mut rng, id, &value, &mut req);
        let t = target_of(&key, senders.len());
        let (tx, sent, order) = &mut senders[t];
        // The send time, +1 so that 0 means "answered"; the top bit marks the warm-up.
        let at = clock.ns(Instant::now()) + 1;
        let mark = if next < clock.measure {
            at | 1 << 63
        } else {
            at
        };
        match tx {
            Sender::Udp(s) => {
                sent[(id & 0xffff) as usize].store(mark, Ordering::Release);
                let _ = s.send(&req);
            }
            Sender::Tcp(s) => {
                order
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .push_back(mark);
                if s.write_all(&req).is_err() {
                    return Err("the TCP connection closed".into());
                }
            }
        }
        if next >= clock.measure {
            measured_sent += 1;
        }
        next += interval;
    }
    std::thread::sleep(args.timeout());
    stop.store(true, Ordering::Release);
    let mut report = Report::default();
    for r in readers {
        let r = r.join().map_err(|_| "a reader panicked".to_string())?;
        report.add(r);
    }
    report.lost = measured_sent.saturating_sub(report.latencies.len() as u64 + report.failed);
    Ok(report)
}

enum Sender {
    Udp(UdpSocket),
    Tcp(TcpStream),
}

fn read_udp(
    s: UdpSocket,
    protocol: Protocol,
    clock: Clock,
    sent: &[AtomicU64],
    stop: &AtomicBool,
) -> Report {
    let mut report = Report::default();
    let mut buf = [0u8; 65536];
    let _ = s.set_read_timeout(Some(Duration::from_millis(20)));
    while !stop.load(Ordering::Acquire) {
        let Ok(n) = s.recv(&mut buf) else {
            continue;
        };
        let now = clock.ns(Instant::now());
        let Some((rid, ok)) = proto::udp_reply(&buf[..n], protocol) else {
            continue;
        };
        let at = sent[usize::from(rid)].swap(0, Ordering::AcqRel);
        if at == 0 || at & (1 << 63) != 0 {
            continue;
        }
        report.answer(
            ok && !is_error(&buf[8..n], protocol),
            now.saturating_sub(at - 1),
        );
    }
    report
}

fn read_tcp(
    mut s: TcpStream,
    protocol: Protocol,
    clock: Clock,
    order: &Mutex<VecDeque<u64>>,
    stop: &AtomicBool,
) -> Report {
    let mut report = Report::default();
    let mut rx = Vec::new();
    let mut buf = [0u8; 65536];
    let _ = s.set_read_timeout(Some(Duration::from_millis(20)));
    while !stop.load(Ordering::Acquire) {
        while let Some(len) = proto::answer_len(&rx, protocol) {
            let now = clock.ns(Instant::now());
            let at = order.lock().unwrap_or_else(|p| p.into_inner()).pop_front();
            let ok = !is_error(&rx[..len], protocol);
            rx.drain(..len);
            match at {
                Some(at) if at & (1 << 63) == 0 => report.answer(ok, now.saturating_sub(at - 1)),
                _ => {}
            }
        }
        match s.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => rx.extend_from_slice(&buf[..n]),
            Err(_) => continue,
        }
    }
    report
}
