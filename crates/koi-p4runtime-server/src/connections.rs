//! The server's TCP connections, bounded so that no client can lock controllers out.
//!
//! Every accepted connection is registered ([`Registry`]) and wrapped ([`Tracked`]), and every
//! call on it passes [`Registry::admit`] (the service's interceptor), which counts it. Up to
//! `max` connections are served. A connection that arrives when all seats are taken takes the
//! seat of the oldest *silent* connection (one that has made no call: a TCP connection that
//! never spoke gRPC, or a client still connecting); that connection is closed. When every
//! seat is held by a connection that has made calls, the newcomer is served in refusal: each
//! of its calls is answered `RESOURCE_EXHAUSTED` with the reason, and it is closed after
//! [`REFUSED_LINGER`]. At most [`MAX_REFUSED`] such connections are open at once; beyond
//! them a connection is closed at once. Connections that made calls and then went quiet are
//! not evicted: HTTP/2 keepalive (`KEEPALIVE`) closes those whose peer is gone.
//!
//! Why silent connections and not idle ones: a primary controller may be quiet for hours
//! between writes; a flood of connections must never take its seat (and with it the
//! mastership), while connections that never made a call are what such a flood is made of.

use std::io;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Waker};
use std::time::{Duration, Instant};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;
use tonic::transport::server::Connected;

/// Connections served at once unless `ServerConfig::max_connections` says otherwise.
pub const MAX_CONNECTIONS: usize = 256;
/// Connections held open at once only to be told why they are refused.
pub const MAX_REFUSED: usize = 32;
/// How long a refused connection stays open to answer its calls with the reason.
pub const REFUSED_LINGER: Duration = Duration::from_secs(2);

/// One connection's record.
#[derive(Debug)]
pub struct Conn {
    id: u64,
    peer: Option<SocketAddr>,
    accepted: Instant,
    refused: bool,
    calls: AtomicU64,
    closed: AtomicBool,
    reader: Mutex<Option<Waker>>,
}

impl Conn {
    /// Closes the connection: its next read sees the end of the stream, its writes fail.
    fn close(&self) {
        self.closed.store(true, Ordering::Release);
        if let Some(w) = lock(&self.reader).take() {
            w.wake();
        }
    }

    /// Calls made on the connection.
    pub fn calls(&self) -> u64 {
        self.calls.load(Ordering::Relaxed)
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

#[derive(Debug, Default)]
struct Seats {
    served: Vec<Arc<Conn>>,
    refused: Vec<Arc<Conn>>,
    next_id: u64,
}

/// The open connections.
#[derive(Debug)]
pub struct Registry {
    max: usize,
    seats: Mutex<Seats>,
    /// Connections closed to give their seat to a newcomer, and newcomers refused.
    evicted: AtomicU64,
    refused: AtomicU64,
}

/// What the server knows of a call's connection (a request extension, see [`Connected`]).
#[derive(Clone, Debug)]
pub struct ConnInfo(pub Arc<Conn>);

impl Registry {
    /// A registry serving at most `max` connections at once (at least one).
    pub fn new(max: usize) -> Arc<Registry> {
        Arc::new(Registry {
            max: max.max(1),
            seats: Mutex::new(Seats::default()),
            evicted: AtomicU64::new(0),
            refused: AtomicU64::new(0),
        })
    }

    /// Registers an accepted connection: `None` when it is to be closed at once (all seats
    /// and all refusal places taken).
    pub fn accept(self: &Arc<Self>, stream: TcpStream) -> Option<Tracked> {
        let peer = stream.peer_addr().ok();
        let mut s = lock(&self.seats);
        let refused = if s.served.len() < self.max {
            false
        } else if let Some(i) = s.served.iter().position(|c| c.calls() == 0) {
            // `served` is in the order of arrival: the first silent one is the oldest.
            let old = s.served.remove(i);
            tracing::warn!(
                peer = ?old.peer,
                age_ms = old.accepted.elapsed().as_millis() as u64,
                max = self.max,
                "P4Runtime: all connections taken; closing one that made no call for a newcomer"
            );
            self.evicted.fetch_add(1, Ordering::Relaxed);
            old.close();
            false
        } else if s.refused.len() < MAX_REFUSED {
            true
        } else {
            self.refused.fetch_add(1, Ordering::Relaxed);
            return None;
        };
        s.next_id += 1;
        let conn = Arc::new(Conn {
            id: s.next_id,
            peer,
            accepted: Instant::now(),
            refused,
            calls: AtomicU64::new(0),
            closed: AtomicBool::new(false),
            reader: Mutex::new(None),
        });
        if refused {
            self.refused.fetch_add(1, Ordering::Relaxed);
            tracing::warn!(
                ?peer,
                max = self.max,
                "P4Runtime: too many connections; refusing one"
            );
            s.refused.push(Arc::clone(&conn));
            let c = Arc::clone(&conn);
            tokio::spawn(async move {
                tokio::time::sleep(REFUSED_LINGER).await;
                c.close();
            });
        } else {
            s.served.push(Arc::clone(&conn));
        }
        Some(Tracked {
            io: stream,
            conn,
            registry: Arc::clone(self),
        })
    }

    /// Admits a call on the connection `info` describes (`None`: a connection not made by
    /// this registry, admitted), counting it; a refused connection's calls get the reason.
    pub fn admit(&self, info: Option<&ConnInfo>) -> Result<(), tonic::Status> {
        let Some(ConnInfo(c)) = info else {
            return Ok(());
        };
        if c.refused {
            return Err(tonic::Status::resource_exhausted(format!(
                "koi: too many P4Runtime connections ({} open, each has made calls): close one \
                 and try again",
                self.max
            )));
        }
        c.calls.fetch_add(1, Ordering::Relaxed);
        Ok(())
    }

    /// Connections served now, and connections held open in refusal.
    pub fn open(&self) -> (usize, usize) {
        let s = lock(&self.seats);
        (s.served.len(), s.refused.len())
    }

    /// Connections closed for a newcomer, and connections refused, since the start.
    pub fn counts(&self) -> (u64, u64) {
        (
            self.evicted.load(Ordering::Relaxed),
            self.refused.load(Ordering::Relaxed),
        )
    }

    fn forget(&self, id: u64) {
        let mut s = lock(&self.seats);
        s.served.retain(|c| c.id != id);
        s.refused.retain(|c| c.id != id);
    }
}

/// An accepted connection: the stream, and its record, which may close it.
pub struct Tracked {
    io: TcpStream,
    conn: Arc<Conn>,
    registry: Arc<Registry>,
}

impl Drop for Tracked {
    fn drop(&mut self) {
        self.registry.forget(self.conn.id);
    }
}

impl Connected for Tracked {
    type ConnectInfo = ConnInfo;
    fn connect_info(&self) -> ConnInfo {
        ConnInfo(Arc::clone(&self.conn))
    }
}

fn closed() -> io::Error {
    io::Error::new(io::ErrorKind::ConnectionAborted, "closed by the server")
}

impl AsyncRead for Tracked {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        if self.conn.closed.load(Ordering::Acquire) {
            return Poll::Ready(Ok(()));
        }
        let r = Pin::new(&mut self.io).poll_read(cx, buf);
        if r.is_pending() {
            *lock(&self.conn.reader) = Some(cx.waker().clone());
            // Closed between the check and the waker's registration: wake now.
            if self.conn.closed.load(Ordering::Acquire) {
                return Poll::Ready(Ok(()));
            }
        }
        r
    }
}

impl AsyncWrite for Tracked {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        if self.conn.closed.load(Ordering::Acquire) {
            return Poll::Ready(Err(closed()));
        }
        Pin::new(&mut self.io).poll_write(cx, buf)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.io).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.io).poll_shutdown(cx)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        if self.conn.closed.load(Ordering::Acquire) {
            return Poll::Ready(Err(closed()));
        }
        Pin::new(&mut self.io).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.io.is_write_vectored()
    }
}

/// The connection of a call: plain TCP, or TCP under TLS.
pub fn conn_info(ext: &tonic::Extensions) -> Option<&ConnInfo> {
    ext.get::<ConnInfo>().or_else(|| {
        ext.get::<tonic::transport::server::TlsConnectInfo<ConnInfo>>()
            .map(|t| t.get_ref())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn pair(l: &tokio::net::TcpListener) -> (TcpStream, TcpStream) {
        let addr = l.local_addr().unwrap();
        let (c, s) = tokio::join!(TcpStream::connect(addr), l.accept());
        (c.unwrap(), s.unwrap().0)
    }

    #[tokio::test]
    async fn a_newcomer_takes_the_oldest_silent_seat_then_is_refused_with_the_reason() {
        let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let r = Registry::new(2);
        let mut clients = Vec::new();
        let mut t = Vec::new();
        for _ in 0..2 {
            let (c, s) = pair(&l).await;
            clients.push(c);
            t.push(r.accept(s).unwrap());
        }
        // The second one makes a call: the first is the oldest silent one.
        r.admit(Some(&t[1].connect_info())).unwrap();
        let (c, s) = pair(&l).await;
        clients.push(c);
        let third = r.accept(s).unwrap();
        assert!(
            t[0].conn.closed.load(Ordering::Acquire),
            "the silent one is closed"
        );
        assert!(!t[1].conn.closed.load(Ordering::Acquire));
        assert_eq!(r.counts(), (1, 0));
        drop(t.remove(0));
        assert_eq!(r.open(), (2, 0));
        // Both seats now held by connections that made calls: the next is refused.
        r.admit(Some(&third.connect_info())).unwrap();
        let (c, s) = pair(&l).await;
        clients.push(c);
        let fourth = r.accept(s).unwrap();
        let e = r.admit(Some(&fourth.connect_info())).unwrap_err();
        assert_eq!(e.code(), tonic::Code::ResourceExhausted);
        assert!(
            e.message().contains("too many P4Runtime connections (2"),
            "{e:?}"
        );
        assert_eq!(r.open(), (2, 1));
        drop(fourth);
        assert_eq!(r.open(), (2, 0));
    }

    #[tokio::test]
    async fn refusal_places_are_bounded_and_a_closed_connection_reads_its_end() {
        use tokio::io::AsyncReadExt;
        let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let r = Registry::new(1);
        let (c0, s0) = pair(&l).await;
        let mut held = r.accept(s0).unwrap();
        r.admit(Some(&held.connect_info())).unwrap();
        let mut keep = vec![c0];
        let mut refused = Vec::new();
        for _ in 0..MAX_REFUSED {
            let (c, s) = pair(&l).await;
            keep.push(c);
            refused.push(r.accept(s).unwrap());
        }
        let (c, s) = pair(&l).await;
        keep.push(c);
        assert!(
            r.accept(s).is_none(),
            "beyond the refusal places: closed at once"
        );
        assert_eq!(r.counts().1, MAX_REFUSED as u64 + 1);
        // A read blocked on a connection wakes with the end of the stream when it is closed.
        let conn = Arc::clone(&held.conn);
        let reader = tokio::spawn(async move {
            let mut b = [0u8; 8];
            held.read(&mut b).await.unwrap()
        });
        tokio::time::sleep(Duration::from_millis(50)).await;
        conn.close();
        let n = tokio::time::timeout(Duration::from_secs(5), reader)
            .await
            .expect("the read wakes")
            .unwrap();
        assert_eq!(n, 0);
    }
}
