//! A connection's socket with deadlines: a client may not keep the server
//! waiting for its bytes, nor stop reading what the server sends.
//!
//! ```text
//!   hyper / the native task ──▶ Guarded<S> ──▶ S (TCP, under TLS if on)
//!     poll_read  pending ──▶ past the owner's read deadline? ─▶ TimedOut
//!     poll_write pending ──▶ no byte taken for `stall`?      ─▶ TimedOut
//! ```
//!
//! Why in the stream: the HTTP side is driven by hyper, which has no idle
//! timeout and no write timeout of its own and only polls the stream; a
//! deadline checked where it waits for the socket covers every way a
//! client can stall (a header, the wait between requests, a TLS handshake,
//! an answer it does not read) without a timer task per connection. The
//! read deadline depends on the connection's state, which only its owner
//! knows, so the owner supplies it ([`ReadDeadline`]); it is looked up
//! only when a read has to wait, and a timer is armed only then.
//!
//! An error here ends the connection: hyper drops it, the native task
//! stops, and whatever a job had in flight for it fails instead of waiting
//! for a client that is gone.

use crate::stats::Stats;
use std::future::Future;
use std::io::{self, IoSlice};
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::time::{Instant, Sleep};

/// Tells a guarded stream how long it may wait for the client's bytes.
pub(crate) trait ReadDeadline: Send + Sync + Unpin + 'static {
    /// When waiting for the client's next bytes must end; `None`: no limit
    /// (the server is the one working).
    fn read_deadline(&self) -> Option<Instant>;
    /// The client sent something.
    fn bytes_read(&self);
}

/// No read deadline: the owner times its reads itself.
pub(crate) struct OwnReads;

impl ReadDeadline for OwnReads {
    fn read_deadline(&self) -> Option<Instant> {
        None
    }
    fn bytes_read(&self) {}
}

impl<T: ReadDeadline> ReadDeadline for Arc<T> {
    fn read_deadline(&self) -> Option<Instant> {
        (**self).read_deadline()
    }
    fn bytes_read(&self) {
        (**self).bytes_read()
    }
}

/// A stream whose waits for the client are bounded (see module docs).
pub(crate) struct Guarded<S, D> {
    inner: S,
    reads: D,
    stall: Duration,
    stats: Arc<Stats>,
    read_timer: Option<Pin<Box<Sleep>>>,
    write_timer: Option<Pin<Box<Sleep>>>,
    /// A write is waiting for the client to take bytes (the write timer
    /// runs for this stall).
    stalled: bool,
}

impl<S, D: ReadDeadline> Guarded<S, D> {
    pub(crate) fn new(inner: S, reads: D, stall: Duration, stats: Arc<Stats>) -> Self {
        Guarded {
            inner,
            reads,
            stall,
            stats,
            read_timer: None,
            write_timer: None,
            stalled: false,
        }
    }

    /// After a read found nothing: the error that ends the connection if
    /// its read deadline is past (arming the timer that wakes us at it).
    fn read_expired(&mut self, cx: &mut Context<'_>) -> Option<io::Error> {
        let deadline = self.reads.read_deadline()?;
        if deadline <= Instant::now() || fires(&mut self.read_timer, deadline, cx) {
            self.stats.connection_timed_out();
            return Some(io::Error::new(
                io::ErrorKind::TimedOut,
                "the client sent nothing in time",
            ));
        }
        None
    }

    /// Follows a write's outcome: progress ends a stall, waiting starts or
    /// continues one, and a stall longer than `stall` becomes an error.
    fn write_outcome<T>(
        &mut self,
        r: Poll<io::Result<T>>,
        cx: &mut Context<'_>,
    ) -> Poll<io::Result<T>> {
        if r.is_ready() {
            self.stalled = false;
            return r;
        }
        if !self.stalled {
            self.stalled = true;
            let at = Instant::now() + self.stall;
            match &mut self.write_timer {
                Some(t) => t.as_mut().reset(at),
                None => self.write_timer = Some(Box::pin(tokio::time::sleep_until(at))),
            }
        }
        let timer = self.write_timer.as_mut().expect("armed above");
        if timer.as_mut().poll(cx).is_ready() {
            self.stats.connection_timed_out();
            return Poll::Ready(Err(io::Error::new(
                io::ErrorKind::TimedOut,
                format!("the client read nothing for {} s", self.stall.as_secs_f64()),
            )));
        }
        Poll::Pending
    }
}

/// Whether a timer set to `deadline` has fired (setting it if needed).
pub(crate) fn fires(
    timer: &mut Option<Pin<Box<Sleep>>>,
    deadline: Instant,
    cx: &mut Context<'_>,
) -> bool {
    let t = timer.get_or_insert_with(|| Box::pin(tokio::time::sleep_until(deadline)));
    if t.deadline() != deadline {
        t.as_mut().reset(deadline);
    }
    t.as_mut().poll(cx).is_ready()
}

impl<S: AsyncRead + Unpin, D: ReadDeadline> AsyncRead for Guarded<S, D> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        let before = buf.filled().len();
        match Pin::new(&mut this.inner).poll_read(cx, buf) {
            Poll::Ready(Ok(())) => {
                if buf.filled().len() > before {
                    this.reads.bytes_read();
                }
                Poll::Ready(Ok(()))
            }
            Poll::Ready(Err(e)) => Poll::Ready(Err(e)),
            Poll::Pending => match this.read_expired(cx) {
                Some(e) => Poll::Ready(Err(e)),
                None => Poll::Pending,
            },
        }
    }
}

impl<S: AsyncWrite + Unpin, D: ReadDeadline> AsyncWrite for Guarded<S, D> {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        let r = Pin::new(&mut this.inner).poll_write(cx, buf);
        this.write_outcome(r, cx)
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        let r = Pin::new(&mut this.inner).poll_write_vectored(cx, bufs);
        this.write_outcome(r, cx)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        let r = Pin::new(&mut this.inner).poll_flush(cx);
        this.write_outcome(r, cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        let r = Pin::new(&mut this.inner).poll_shutdown(cx);
        this.write_outcome(r, cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use parking_lot::Mutex;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    /// A read deadline the test moves.
    struct Settable(Mutex<Option<Instant>>);

    impl ReadDeadline for Settable {
        fn read_deadline(&self) -> Option<Instant> {
            *self.0.lock()
        }
        fn bytes_read(&self) {}
    }

    fn runtime() -> tokio::runtime::Runtime {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .start_paused(true)
            .build()
            .unwrap()
    }

    #[test]
    fn a_read_waits_until_its_deadline_and_no_longer() {
        runtime().block_on(async {
            let (ours, mut theirs) = tokio::io::duplex(64);
            let deadline = Arc::new(Settable(Mutex::new(None)));
            let stats = Arc::new(Stats::new());
            let mut g = Guarded::new(
                ours,
                deadline.clone(),
                Duration::from_secs(1),
                stats.clone(),
            );
            theirs.write_all(b"hi").await.unwrap();
            let mut buf = [0u8; 8];
            assert_eq!(g.read(&mut buf).await.unwrap(), 2);
            let start = Instant::now();
            *deadline.0.lock() = Some(start + Duration::from_secs(5));
            let e = g.read(&mut buf).await.unwrap_err();
            assert_eq!(e.kind(), io::ErrorKind::TimedOut);
            let waited = start.elapsed();
            assert!(
                waited >= Duration::from_secs(5) && waited < Duration::from_secs(6),
                "{waited:?}"
            );
            assert_eq!(stats.connections_timed_out(), 1);
        });
    }

    #[test]
    fn a_write_the_client_does_not_take_fails_after_the_stall_time() {
        runtime().block_on(async {
            let (ours, mut theirs) = tokio::io::duplex(16);
            let stats = Arc::new(Stats::new());
            let mut g = Guarded::new(ours, OwnReads, Duration::from_secs(3), stats);
            let start = Instant::now();
            // The client reads slowly but steadily: no stall.
            let reader = tokio::spawn(async move {
                let mut buf = [0u8; 16];
                for _ in 0..4 {
                    tokio::time::sleep(Duration::from_secs(2)).await;
                    theirs.read_exact(&mut buf).await.unwrap();
                }
                theirs
            });
            g.write_all(&[7u8; 64]).await.unwrap();
            let _theirs = reader.await.unwrap();
            assert!(start.elapsed() >= Duration::from_secs(6));
            // Then it stops reading.
            let stopped = Instant::now();
            let e = g.write_all(&[7u8; 64]).await.unwrap_err();
            assert_eq!(e.kind(), io::ErrorKind::TimedOut);
            let waited = stopped.elapsed();
            assert!(
                waited >= Duration::from_secs(3) && waited < Duration::from_secs(4),
                "{waited:?}"
            );
        });
    }
}
