//! A simulated network link: a rate-limiting, delaying TCP proxy built
//! into the tool, since kernel traffic shaping (`tc`) is not available
//! on the machines the benchmarks run on.
//!
//! Each accepted connection is relayed to the upstream address through
//! two independent one-way pipes. A pipe models a link as a serial line
//! followed by a propagation delay:
//!
//! ```text
//!   read chunk ─▶ transmit: starts when the line is free, takes n ÷ rate
//!              ─▶ propagate: arrives `delay` after its last bit left
//!              ─▶ written to the other side at that instant (queue)
//! ```
//!
//! This is a token bucket with an empty bucket (no burst beyond one
//! chunk of [`CHUNK`] bytes): the line is busy until `done`, so `B` bytes
//! in one direction take at least `B ÷ rate` after the first byte was
//! read, plus the delay, and never less, because a tokio timer never
//! fires early. A transfer's elapsed time is therefore bounded below by
//! `bytes ÷ rate + delay`, which the unit test asserts (a bound that
//! cannot flake). The delay pipelines: chunks in flight queue behind
//! each other, so it adds latency, not a throughput limit. The queue
//! between the reader and the writer is bounded, so a fast sender is
//! held back by TCP as by a real slow link.
//!
//! A `lan` link relays with no limit and no delay (`copy_bidirectional`).
//! The proxy counts the bytes relayed each way, an independent check on
//! the client's own count of bytes on the wire.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{mpsc, oneshot};
use tokio::time::Instant;

/// Bytes read and transmitted at a time on a rate-limited link (about
/// one Ethernet frame, so pacing is smooth at kbit rates).
pub const CHUNK: usize = 1460;
/// Chunks queued between a pipe's reader and writer.
const QUEUE: usize = 64;
/// One-way delay of the kbit links (WORKLOADS.md "replication").
pub const KBIT_DELAY: Duration = Duration::from_millis(50);

/// A link's rate and delay, named as on the command line.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Link {
    /// As given: `lan`, `256kbit`, `56kbit`, `2mbit`.
    pub name: String,
    /// Bits per second each way; `None` for no limit.
    pub bits_per_s: Option<u64>,
    /// One-way delay.
    pub delay: Duration,
}

impl Link {
    /// Bytes per second each way, `None` for no limit.
    pub fn bytes_per_s(&self) -> Option<f64> {
        self.bits_per_s.map(|b| b as f64 / 8.0)
    }
}

impl std::str::FromStr for Link {
    type Err = String;

    /// `lan` (no limit, no delay), or `Nkbit` / `Nmbit` (that rate each
    /// way, with [`KBIT_DELAY`]).
    fn from_str(s: &str) -> Result<Link, String> {
        if s == "lan" {
            return Ok(Link {
                name: s.into(),
                bits_per_s: None,
                delay: Duration::ZERO,
            });
        }
        let bad = || format!("link {s:?}: use lan, or a rate such as 56kbit or 2mbit");
        let (digits, unit) = s
            .find(|c: char| !c.is_ascii_digit())
            .map(|i| s.split_at(i))
            .ok_or_else(bad)?;
        let n: u64 = digits.parse().map_err(|_| bad())?;
        let scale = match unit {
            "kbit" => 1_000,
            "mbit" => 1_000_000,
            _ => return Err(bad()),
        };
        match n.checked_mul(scale) {
            Some(bits) if bits > 0 => Ok(Link {
                name: s.into(),
                bits_per_s: Some(bits),
                delay: KBIT_DELAY,
            }),
            _ => Err(bad()),
        }
    }
}

/// Bytes relayed, each way, over every connection of a proxy.
#[derive(Debug, Default)]
pub struct Relayed {
    /// From the client to the upstream server.
    pub up: AtomicU64,
    /// From the upstream server to the client.
    pub down: AtomicU64,
}

/// A running proxy; dropping it stops accepting and cuts its
/// connections.
pub struct Proxy {
    /// Where clients connect.
    pub addr: SocketAddr,
    /// Bytes relayed so far.
    pub relayed: Arc<Relayed>,
    stop: Option<oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Proxy {
    /// Starts a proxy on an ephemeral loopback port relaying to
    /// `upstream` over `link`, on a thread of its own.
    pub fn start(upstream: SocketAddr, link: Link) -> Result<Proxy, String> {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| format!("proxy runtime: {e}"))?;
        let listener = rt
            .block_on(TcpListener::bind("127.0.0.1:0"))
            .map_err(|e| format!("proxy listen: {e}"))?;
        let addr = listener.local_addr().map_err(|e| e.to_string())?;
        let relayed = Arc::new(Relayed::default());
        let (stop, stopped) = oneshot::channel();
        let counts = relayed.clone();
        let thread = std::thread::spawn(move || {
            rt.block_on(async move {
                tokio::select! {
                    _ = stopped => {}
                    _ = accept_loop(listener, upstream, link, counts) => {}
                }
            })
        });
        Ok(Proxy {
            addr,
            relayed,
            stop: Some(stop),
            thread: Some(thread),
        })
    }

    /// Bytes relayed (up, down) so far.
    pub fn bytes(&self) -> (u64, u64) {
        (
            self.relayed.up.load(Ordering::Relaxed),
            self.relayed.down.load(Ordering::Relaxed),
        )
    }
}

impl Drop for Proxy {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

async fn accept_loop(
    listener: TcpListener,
    upstream: SocketAddr,
    link: Link,
    counts: Arc<Relayed>,
) {
    while let Ok((client, _)) = listener.accept().await {
        let (link, counts) = (link.clone(), counts.clone());
        tokio::spawn(async move {
            if let Ok(server) = TcpStream::connect(upstream).await {
                relay(client, server, &link, &counts).await;
            }
        });
    }
}

/// Relays one connection until both directions are closed.
async fn relay(client: TcpStream, server: TcpStream, link: &Link, counts: &Relayed) {
    let _ = client.set_nodelay(true);
    let _ = server.set_nodelay(true);
    let (cr, cw) = client.into_split();
    let (sr, sw) = server.into_split();
    tokio::join!(
        pipe(cr, sw, link, &counts.up),
        pipe(sr, cw, link, &counts.down)
    );
}

/// One direction: read, transmit at the link's rate, delay, write.
async fn pipe(mut from: OwnedReadHalf, mut to: OwnedWriteHalf, link: &Link, count: &AtomicU64) {
    let Some(rate) = link.bytes_per_s() else {
        let _ = tokio::io::copy(
            &mut from,
            &mut CountingWriter {
                inner: &mut to,
                count,
            },
        )
        .await;
        let _ = to.shutdown().await;
        return;
    };
    let (tx, mut rx) = mpsc::channel::<(Instant, Vec<u8>)>(QUEUE);
    let delay = link.delay;
    let reader = async move {
        let mut line_free = Instant::now();
        loop {
            let mut buf = vec![0u8; CHUNK];
            let n = match from.read(&mut buf).await {
                Ok(0) | Err(_) => break,
                Ok(n) => n,
            };
            buf.truncate(n);
            let start = line_free.max(Instant::now());
            // Rounded up to the nanosecond, so the chunks' times add up
            // to at least bytes ÷ rate.
            line_free = start + Duration::from_nanos((n as f64 * 1e9 / rate).ceil() as u64);
            if tx.send((line_free + delay, buf)).await.is_err() {
                break;
            }
        }
    };
    let writer = async {
        while let Some((arrives, bytes)) = rx.recv().await {
            tokio::time::sleep_until(arrives).await;
            if to.write_all(&bytes).await.is_err() {
                break;
            }
            count.fetch_add(bytes.len() as u64, Ordering::Relaxed);
        }
        let _ = to.shutdown().await;
    };
    tokio::join!(reader, writer);
}

/// Counts what `tokio::io::copy` writes on an unlimited link.
struct CountingWriter<'a> {
    inner: &'a mut OwnedWriteHalf,
    count: &'a AtomicU64,
}

impl tokio::io::AsyncWrite for CountingWriter<'_> {
    fn poll_write(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        buf: &[u8],
    ) -> std::task::Poll<std::io::Result<usize>> {
        let r = std::pin::Pin::new(&mut *self.inner).poll_write(cx, buf);
        if let std::task::Poll::Ready(Ok(n)) = r {
            self.count.fetch_add(n as u64, Ordering::Relaxed);
        }
        r
    }

    fn poll_flush(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        std::pin::Pin::new(&mut *self.inner).poll_flush(cx)
    }

    fn poll_shutdown(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        std::pin::Pin::new(&mut *self.inner).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Read, Write};

    fn pattern(n: usize) -> Vec<u8> {
        (0..n).map(|i| (i * 7 + i / 251) as u8).collect()
    }

    #[test]
    fn links_parse_and_bad_ones_are_named() {
        let l: Link = "56kbit".parse().unwrap();
        assert_eq!((l.bits_per_s, l.delay), (Some(56_000), KBIT_DELAY));
        assert_eq!("2mbit".parse::<Link>().unwrap().bits_per_s, Some(2_000_000));
        assert_eq!("lan".parse::<Link>().unwrap().bits_per_s, None);
        for bad in ["", "kbit", "0kbit", "56", "56kb", "fast"] {
            let e = bad.parse::<Link>().unwrap_err();
            assert!(e.contains(&format!("{bad:?}")), "{e}");
        }
    }

    /// Both directions: every byte arrives intact and in order, and no
    /// sooner than bytes ÷ rate + delay after the transfer began.
    #[test]
    fn a_rate_limited_link_relays_intact_and_no_faster_than_its_rate() {
        let upstream = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let up_addr = upstream.local_addr().unwrap();
        let link = Link {
            name: "800kbit".into(),
            bits_per_s: Some(800_000),
            delay: Duration::from_millis(20),
        };
        let rate = link.bytes_per_s().unwrap();
        let proxy = Proxy::start(up_addr, link.clone()).unwrap();
        let bytes = pattern(40_000); // 0.4 s at 100 kB/s
        let echo = bytes.clone();
        let server = std::thread::spawn(move || {
            let (mut s, _) = upstream.accept().unwrap();
            let mut got = Vec::new();
            s.read_to_end(&mut got).unwrap();
            let uploaded_at = std::time::Instant::now();
            s.write_all(&echo).unwrap();
            (got, uploaded_at)
        });
        let started = std::time::Instant::now();
        let mut c = std::net::TcpStream::connect(proxy.addr).unwrap();
        c.write_all(&bytes).unwrap();
        c.shutdown(std::net::Shutdown::Write).unwrap();
        let mut down = Vec::new();
        c.read_to_end(&mut down).unwrap();
        let finished = std::time::Instant::now();
        let (up, uploaded_at) = server.join().unwrap();
        assert!(up == bytes, "uploaded bytes intact");
        assert!(down == bytes, "downloaded bytes intact");
        let floor = Duration::from_secs_f64(bytes.len() as f64 / rate) + link.delay;
        let up_took = uploaded_at - started;
        let down_took = finished - uploaded_at;
        assert!(up_took >= floor, "up {up_took:?} < {floor:?}");
        assert!(down_took >= floor, "down {down_took:?} < {floor:?}");
        assert_eq!(proxy.bytes(), (40_000, 40_000));
    }

    #[test]
    fn a_lan_link_relays_everything_and_counts_it() {
        let upstream = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let proxy = Proxy::start(upstream.local_addr().unwrap(), "lan".parse().unwrap()).unwrap();
        let bytes = pattern(1 << 20);
        let expected = bytes.clone();
        let server = std::thread::spawn(move || {
            let (mut s, _) = upstream.accept().unwrap();
            let mut got = Vec::new();
            s.read_to_end(&mut got).unwrap();
            got
        });
        let mut c = std::net::TcpStream::connect(proxy.addr).unwrap();
        c.write_all(&bytes).unwrap();
        c.shutdown(std::net::Shutdown::Write).unwrap();
        drop(c);
        assert!(server.join().unwrap() == expected);
        assert_eq!(proxy.bytes().0, 1 << 20);
    }
}
