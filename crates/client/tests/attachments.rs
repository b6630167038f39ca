//! Streamed attachments: byte-exact round trips through both clients,
//! early refusals that leave the connection usable, and an upload that
//! cannot finish.

mod common;

use client::{blocking, Client, ClientError, DbHandle, ErrorCode, Unid};
use common::{random_bytes, FakeServer, DB, MAX_ATTACHMENT};
use std::future::Future;
use std::io;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::time::timeout;

const GUARD: Duration = Duration::from_secs(60);
const FIVE_MIB: usize = 5 << 20;

async fn document(client: &Client) -> (DbHandle, Unid) {
    let (db, _) = client.open_database(DB).await.unwrap();
    let meta = client
        .create_document(db, r#"{"Form":"Memo"}"#)
        .await
        .unwrap();
    (db, meta.unid)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn five_mib_round_trip_byte_exact() {
    let server = FakeServer::start().await;
    let client = Client::connect(server.options()).await.unwrap();
    let (db, unid) = document(&client).await;
    let data = random_bytes(FIVE_MIB, 1);
    let put = client.put_attachment(
        db,
        unid,
        "big.bin",
        "x/y",
        Some(data.len() as u64),
        &data[..],
    );
    assert_eq!(timeout(GUARD, put).await.unwrap().unwrap(), FIVE_MIB as u64);
    assert!(server.attachment(unid, "big.bin").unwrap() == data);
    // Unknown size works the same.
    let put = client.put_attachment(db, unid, "big2.bin", "x/y", None, &data[..]);
    assert_eq!(timeout(GUARD, put).await.unwrap().unwrap(), FIVE_MIB as u64);

    let mut copy = Vec::new();
    let get = client.get_attachment(db, unid, "big.bin", &mut copy);
    let info = timeout(GUARD, get).await.unwrap().unwrap();
    assert_eq!((info.name.as_str(), info.mime.as_str()), ("big.bin", "x/y"));
    assert_eq!(info.size, FIVE_MIB as u64);
    assert!(copy == data, "the downloaded copy differs");
}

#[test]
fn five_mib_round_trip_through_the_blocking_client() {
    let fake = common::start_blocking();
    let client = blocking::Client::connect(fake.server.options()).unwrap();
    let (db, _) = client.open_database(DB).unwrap();
    let unid = client.create_document(db, "{}").unwrap().unid;
    let data = random_bytes(FIVE_MIB, 2);
    let stored = client
        .put_attachment(db, unid, "b.bin", "x/y", None, io::Cursor::new(&data))
        .unwrap();
    assert_eq!(stored, FIVE_MIB as u64);
    let mut copy = Vec::new();
    let info = client.get_attachment(db, unid, "b.bin", &mut copy).unwrap();
    assert_eq!(info.size, FIVE_MIB as u64);
    assert!(copy == data, "the downloaded copy differs");
}

#[tokio::test]
async fn an_upload_declared_too_large_is_refused_and_the_connection_goes_on() {
    let server = FakeServer::start().await;
    let client = Client::connect(server.options()).await.unwrap();
    let (db, unid) = document(&client).await;
    let data = random_bytes(1 << 20, 3);
    let claimed = Some(MAX_ATTACHMENT + 1);
    let err = client
        .put_attachment(db, unid, "huge.bin", "x/y", claimed, &data[..])
        .await
        .unwrap_err();
    assert_eq!(err.code(), Some(ErrorCode::TooLarge), "{err}");
    assert!(server.attachment(unid, "huge.bin").is_none());
    assert_connection_usable(&client, db, unid).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_endless_upload_stops_when_the_server_refuses_it() {
    let server = FakeServer::start().await;
    let client = Client::connect(server.options()).await.unwrap();
    let (db, unid) = document(&client).await;
    // The content never ends: the call can only return because the
    // client saw the server's 413 before the End and stopped reading.
    let endless = Endless::default();
    let read = endless.read.clone();
    let put = client.put_attachment(db, unid, "endless", "x/y", None, endless);
    let err = timeout(GUARD, put).await.unwrap().unwrap_err();
    assert_eq!(err.code(), Some(ErrorCode::TooLarge), "{err}");
    let read = read.load(Ordering::SeqCst);
    assert!(read > MAX_ATTACHMENT, "stopped after {read} bytes");
    assert_connection_usable(&client, db, unid).await;
}

#[tokio::test]
async fn uploads_and_downloads_for_missing_things_fail_alone() {
    let server = FakeServer::start().await;
    let client = Client::connect(server.options()).await.unwrap();
    let (db, unid) = document(&client).await;
    let nobody = Unid([0xee; 16]);
    let data = random_bytes(600_000, 4);
    let err = client
        .put_attachment(db, nobody, "a", "x/y", None, &data[..])
        .await
        .unwrap_err();
    assert_eq!(err.code(), Some(ErrorCode::NotFound), "{err}");
    let mut out = Vec::new();
    let err = client
        .get_attachment(db, unid, "never.bin", &mut out)
        .await
        .unwrap_err();
    assert_eq!(err.code(), Some(ErrorCode::NotFound), "{err}");
    assert!(out.is_empty());
    assert_connection_usable(&client, db, unid).await;
}

#[tokio::test]
async fn content_that_fails_to_read_closes_the_connection() {
    let server = FakeServer::start().await;
    let client = Client::connect(server.options()).await.unwrap();
    let (db, unid) = document(&client).await;
    let failing = Failing { left: 1 << 20 };
    let err = client
        .put_attachment(db, unid, "broken", "x/y", None, failing)
        .await
        .unwrap_err();
    assert!(matches!(err, ClientError::Io(_)), "{err:?}");
    // An End would have stored a truncated file; the connection closes
    // instead, and says why.
    let later = timeout(GUARD, client.statistics())
        .await
        .unwrap()
        .unwrap_err();
    let ClientError::Closed { reason } = later else {
        panic!("{later:?}")
    };
    assert!(reason.contains("abandoned"), "{reason}");
    assert!(server.attachment(unid, "broken").is_none());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_slow_download_holds_the_connection_back_but_loses_nothing() {
    let server = FakeServer::start().await;
    let client = Client::connect(server.options()).await.unwrap();
    let (db, unid) = document(&client).await;
    let data = random_bytes(2 << 20, 7);
    client
        .put_attachment(db, unid, "slow.bin", "x/y", None, &data[..])
        .await
        .unwrap();
    // The writer takes 16 KiB per millisecond, far slower than loopback:
    // the download's queue fills and the connection stops reading, while
    // other callers' requests queue behind it and complete afterwards.
    let mut others = tokio::task::JoinSet::new();
    let mut slow = Slow::default();
    let download = client.get_attachment(db, unid, "slow.bin", &mut slow);
    for _ in 0..20 {
        let client = client.clone();
        others.spawn(async move { client.statistics().await.unwrap().len() });
    }
    let info = timeout(GUARD, download).await.unwrap().unwrap();
    assert_eq!(info.size, data.len() as u64);
    assert!(slow.data == data, "the slow copy differs");
    let lengths = timeout(GUARD, others.join_all()).await.unwrap();
    assert_eq!(lengths, [3; 20]);
}

#[tokio::test]
async fn a_download_whose_writer_fails_leaves_the_connection_usable() {
    let server = FakeServer::start().await;
    let client = Client::connect(server.options()).await.unwrap();
    let (db, unid) = document(&client).await;
    let data = random_bytes(FIVE_MIB, 8);
    client
        .put_attachment(db, unid, "f.bin", "x/y", None, &data[..])
        .await
        .unwrap();
    let full = Full { left: 1 << 20 };
    let err = client
        .get_attachment(db, unid, "f.bin", full)
        .await
        .unwrap_err();
    assert!(matches!(err, ClientError::Io(_)), "{err:?}");
    // The rest of that download is read and dropped; the next one is whole.
    let mut copy = Vec::new();
    let get = client.get_attachment(db, unid, "f.bin", &mut copy);
    timeout(GUARD, get).await.unwrap().unwrap();
    assert!(copy == data, "the copy differs");
    assert_connection_usable(&client, db, unid).await;
}

/// A small upload and a statistics call still work.
async fn assert_connection_usable(client: &Client, db: DbHandle, unid: Unid) {
    assert_eq!(client.statistics().await.unwrap().len(), 3);
    let data = random_bytes(300_000, 6);
    let stored = client
        .put_attachment(db, unid, "after.bin", "x/y", None, &data[..])
        .await
        .unwrap();
    assert_eq!(stored, data.len() as u64);
}

/// Zeros forever, counting what was read.
#[derive(Default)]
struct Endless {
    read: Arc<AtomicU64>,
}

impl AsyncRead for Endless {
    fn poll_read(
        self: Pin<&mut Self>,
        _cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let n = buf.remaining();
        buf.put_slice(&vec![0; n]);
        self.read.fetch_add(n as u64, Ordering::SeqCst);
        Poll::Ready(Ok(()))
    }
}

/// `left` bytes, then an error.
struct Failing {
    left: usize,
}

impl AsyncRead for Failing {
    fn poll_read(
        mut self: Pin<&mut Self>,
        _cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        if self.left == 0 {
            return Poll::Ready(Err(io::Error::other("disk on fire")));
        }
        let n = buf.remaining().min(self.left);
        buf.put_slice(&vec![1; n]);
        self.left -= n;
        Poll::Ready(Ok(()))
    }
}

/// Accepts at most 16 KiB per millisecond.
#[derive(Default)]
struct Slow {
    data: Vec<u8>,
    pause: Option<Pin<Box<tokio::time::Sleep>>>,
}

impl AsyncWrite for Slow {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let pause = self
            .pause
            .get_or_insert_with(|| Box::pin(tokio::time::sleep(Duration::from_millis(1))));
        if pause.as_mut().poll(cx).is_pending() {
            return Poll::Pending;
        }
        self.pause = None;
        let n = buf.len().min(16 * 1024);
        self.data.extend_from_slice(&buf[..n]);
        Poll::Ready(Ok(n))
    }

    fn poll_flush(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
    }

    fn poll_shutdown(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
    }
}

/// Takes `left` bytes, then fails like a full disk.
struct Full {
    left: usize,
}

impl AsyncWrite for Full {
    fn poll_write(
        mut self: Pin<&mut Self>,
        _cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        if self.left == 0 {
            return Poll::Ready(Err(io::Error::from(io::ErrorKind::StorageFull)));
        }
        let n = buf.len().min(self.left);
        self.left -= n;
        Poll::Ready(Ok(n))
    }

    fn poll_flush(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
    }

    fn poll_shutdown(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
    }
}
