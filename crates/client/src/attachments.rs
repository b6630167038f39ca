//! Attachment uploads and downloads, streamed: neither side ever holds a
//! whole file.
//!
//! ```text
//!   upload     content ─read 1 MiB─▶ Chunk ─▶ … ─▶ End ─▶ AttachmentStored
//!                  ▲ next read once the previous chunk is queued
//!   download   Item(header) ─▶ Chunk ─▶ … ─▶ AttachmentSent
//!                  └─ written to `out` as they come, at most a few chunks queued
//! ```
//!
//! **Uploads** read the content a chunk at a time and read the next only
//! once the connection task has queued the previous one, so memory stays
//! at about one chunk per upload plus the connection's output limit. A
//! chunk goes to the socket from the buffer it was read into: the
//! connection task queues it as it is (no copy into a frame buffer), and
//! once written the buffer goes back to the connection's [`ChunkPool`]
//! for the next chunk, so a steady upload neither copies nor allocates. The
//! server may refuse an upload before its end (413 too large, 404 no such
//! document, docs/protocol.md §5.5): the upload checks for an early answer
//! before each chunk, stops reading, sends the `End` the protocol still
//! requires, and returns the refusal; the connection stays usable.
//!
//! An upload that cannot finish (its content fails to read, or its future
//! is dropped) cannot be cancelled either: the protocol has no cancel
//! frame, and an `End` would make the server store a truncated file. So
//! the connection is closed (every other call on it fails with
//! [`ClientError::Closed`] naming the upload) and the server discards the
//! partial upload.
//!
//! **Downloads** are written to the caller's writer chunk by chunk. The
//! connection task queues at most [`DOWNLOAD_QUEUE`] chunks for a
//! download; when the writer is slower than the network it stops reading
//! the socket, and TCP slows the server down.

use crate::client::Client;
use crate::driver::{Answer, Command, Delivery, Route};
use crate::error::ClientError;
use bytes::Bytes;
use protocol::{DbHandle, Request, RequestId, Response, Unid};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::sync::oneshot::error::TryRecvError;
use tokio::sync::{mpsc, oneshot};

/// Bytes read from an upload's content per chunk.
pub const UPLOAD_CHUNK: usize = 1024 * 1024;
/// Chunks of one download queued for its writer before the connection
/// stops reading.
pub const DOWNLOAD_QUEUE: usize = 4;

/// An attachment's header, as a download reports it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AttachmentInfo {
    /// File name.
    pub name: String,
    /// MIME type.
    pub mime: String,
    /// Content size in bytes.
    pub size: u64,
}

impl Client {
    /// Uploads `content` as attachment `name` of document `unid` and
    /// returns the size stored. `size`, if known, lets the server refuse
    /// a too large file before any byte is sent. See the module docs for
    /// early refusals and for what a failing `content` does.
    pub async fn put_attachment(
        &self,
        db: DbHandle,
        unid: Unid,
        name: &str,
        mime: &str,
        size: Option<u64>,
        mut content: impl AsyncRead + Unpin,
    ) -> Result<u64, ClientError> {
        let request = Request::PutAttachment {
            db,
            unid,
            name: name.into(),
            mime: mime.into(),
            size,
        };
        self.upload(request, &mut content).await.and_then(stored)
    }

    /// Sends `request` (of the upload shape) with what `content` reads as
    /// its chunks; the server's answer, maybe an early refusal.
    pub(crate) async fn upload(
        &self,
        request: Request,
        content: &mut (impl AsyncRead + Unpin),
    ) -> Result<Response, ClientError> {
        let (answer_tx, mut answer) = oneshot::channel();
        let (started_tx, started) = oneshot::channel();
        self.submit(Command::Request {
            request,
            route: Route::Answer(answer_tx),
            started: Some(started_tx),
        })?;
        let Ok(id) = started.await else {
            // Never sent: the answer says why.
            return self.answer(answer).await;
        };
        let mut upload = Upload {
            client: self,
            id,
            ended: false,
        };
        let early = upload.send_content(content, &mut answer).await?;
        upload.end()?;
        match early {
            Some(answer) => answer,
            None => self.answer(answer).await,
        }
    }

    /// Downloads attachment `name` of document `unid` into `out`, writing
    /// each chunk as it arrives, and flushes `out` at the end.
    pub async fn get_attachment(
        &self,
        db: DbHandle,
        unid: Unid,
        name: &str,
        mut out: impl AsyncWrite + Unpin,
    ) -> Result<AttachmentInfo, ClientError> {
        let request = Request::GetAttachment {
            db,
            unid,
            name: name.into(),
        };
        let (tx, mut rx) = mpsc::channel(DOWNLOAD_QUEUE);
        self.submit(Command::Request {
            request,
            route: Route::Download(tx),
            started: None,
        })?;
        let mut header = None;
        let mut written = 0u64;
        loop {
            match rx.recv().await.ok_or_else(|| self.closed_error())? {
                Delivery::Item(Response::AttachmentHeader { name, mime, size }) => {
                    header = Some(AttachmentInfo { name, mime, size })
                }
                Delivery::Item(other) => {
                    return Err(ClientError::unexpected("AttachmentHeader", &other))
                }
                Delivery::Chunk(data) => {
                    out.write_all(&data).await?;
                    written += data.len() as u64;
                }
                Delivery::Final(answer) => {
                    out.flush().await?;
                    return downloaded(header, answer?, written);
                }
            }
        }
    }
}

/// An upload whose `End` is owed: dropping it unsent closes the connection.
struct Upload<'a> {
    client: &'a Client,
    id: RequestId,
    ended: bool,
}

impl Upload<'_> {
    /// Sends `content` chunk by chunk until its end, or until the server
    /// answers early (that answer is returned).
    async fn send_content(
        &mut self,
        content: &mut (impl AsyncRead + Unpin),
        answer: &mut oneshot::Receiver<Answer>,
    ) -> Result<Option<Answer>, ClientError> {
        let pool = self.client.chunk_pool();
        loop {
            match answer.try_recv() {
                Ok(early) => return Ok(Some(early)),
                Err(TryRecvError::Closed) => return Err(self.client.closed_error()),
                Err(TryRecvError::Empty) => {}
            }
            let mut buf = pool.take();
            let len = read_chunk(content, &mut buf).await?;
            if len == 0 {
                pool.give(buf);
                return Ok(None);
            }
            let chunk = Bytes::from_owner(PooledChunk {
                buf,
                len,
                pool: pool.clone(),
            });
            self.send_chunk(chunk).await?;
        }
    }

    /// Hands a chunk to the connection task; returns once it is queued.
    async fn send_chunk(&self, data: Bytes) -> Result<(), ClientError> {
        let (queued, is_queued) = oneshot::channel();
        self.client.submit(Command::Chunk {
            id: self.id,
            data,
            queued,
        })?;
        is_queued.await.map_err(|_| self.client.closed_error())
    }

    fn end(&mut self) -> Result<(), ClientError> {
        self.ended = true;
        self.client.submit(Command::End { id: self.id })
    }
}

impl Drop for Upload<'_> {
    fn drop(&mut self) {
        if !self.ended {
            let _ = self.client.submit(Command::Abandon { id: self.id });
        }
    }
}

/// Fills `chunk` with up to [`UPLOAD_CHUNK`] bytes; empty at the end of
/// the content.
/// Fills `chunk` from `content` as far as it goes; returns how far.
async fn read_chunk(
    content: &mut (impl AsyncRead + Unpin),
    chunk: &mut [u8],
) -> std::io::Result<usize> {
    let mut filled = 0;
    while filled < chunk.len() {
        match content.read(&mut chunk[filled..]).await {
            Ok(0) => break,
            Ok(n) => filled += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(filled)
}

/// Upload chunk buffers of one connection, kept for reuse (module docs).
/// Two are enough for one upload at a time: one being written while the
/// next is read; more uploads at once allocate more, and the pool keeps
/// at most [`POOL_KEEP`].
#[derive(Default)]
pub(crate) struct ChunkPool(std::sync::Mutex<Vec<Vec<u8>>>);

/// Chunk buffers a pool keeps.
const POOL_KEEP: usize = 2;

impl ChunkPool {
    /// A buffer of [`UPLOAD_CHUNK`] bytes (their content is whatever the
    /// last chunk left there).
    fn take(&self) -> Vec<u8> {
        let kept = self.0.lock().ok().and_then(|mut p| p.pop());
        kept.unwrap_or_else(|| vec![0; UPLOAD_CHUNK])
    }

    fn give(&self, buf: Vec<u8>) {
        if let Ok(mut p) = self.0.lock() {
            if p.len() < POOL_KEEP && buf.len() == UPLOAD_CHUNK {
                p.push(buf);
            }
        }
    }
}

/// A chunk's bytes, owned by the `Bytes` the connection task queues: when
/// the last reference goes (the chunk is written), the buffer goes back
/// to its pool.
struct PooledChunk {
    buf: Vec<u8>,
    len: usize,
    pool: std::sync::Arc<ChunkPool>,
}

impl AsRef<[u8]> for PooledChunk {
    fn as_ref(&self) -> &[u8] {
        &self.buf[..self.len]
    }
}

impl Drop for PooledChunk {
    fn drop(&mut self) {
        self.pool.give(std::mem::take(&mut self.buf));
    }
}

fn stored(response: Response) -> Result<u64, ClientError> {
    match response {
        Response::AttachmentStored { size } => Ok(size),
        other => Err(ClientError::unexpected("AttachmentStored", &other)),
    }
}

/// The download's header, if the server's account of it adds up.
fn downloaded(
    header: Option<AttachmentInfo>,
    response: Response,
    written: u64,
) -> Result<AttachmentInfo, ClientError> {
    let sent = match response {
        Response::AttachmentSent { size } => size,
        other => return Err(ClientError::unexpected("AttachmentSent", &other)),
    };
    let header = header.ok_or_else(|| {
        ClientError::UnexpectedResponse("a download ended without its AttachmentHeader".into())
    })?;
    if sent != written || header.size != written {
        return Err(ClientError::UnexpectedResponse(format!(
            "download of {:?}: header said {} bytes, the server sent {written} and claims {sent}",
            header.name, header.size
        )));
    }
    Ok(header)
}
