//! An upload's bytes, handed from a connection to the job storing them.
//!
//! Both front ends receive attachment content asynchronously (protocol
//! `Chunk` frames, an HTTP body stream) while the engine stores it from a
//! blocking `std::io::Read` on a worker thread. A small bounded channel
//! joins the two: when it is full the connection stops reading its
//! socket, so TCP slows the client instead of the server buffering the
//! file. The reader ends only at an explicit [`Piece::End`]; a channel
//! closed without one (the client went away mid-upload) makes it fail,
//! so a truncated attachment is never committed (I16).

use bytes::Bytes;
use std::io::Read;
use tokio::sync::mpsc;

/// Upload pieces waiting for their job, per upload, for the HTTP API
/// (pieces are the body's frames, usually tens of kilobytes; the native
/// protocol's pieces are whole chunks and it queues fewer).
pub(crate) const UPLOAD_QUEUE: usize = 16;

/// An upload's next piece.
pub(crate) enum Piece {
    /// Content bytes, in order.
    Data(Bytes),
    /// The content is complete.
    End,
}

/// An upload's pieces as a `Read` (see the module docs).
pub(crate) struct UploadReader {
    rx: mpsc::Receiver<Piece>,
    current: Bytes,
    done: bool,
}

impl UploadReader {
    pub(crate) fn new(rx: mpsc::Receiver<Piece>) -> UploadReader {
        UploadReader {
            rx,
            current: Bytes::new(),
            done: false,
        }
    }
}

impl Read for UploadReader {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        while self.current.is_empty() {
            if self.done {
                return Ok(0);
            }
            match self.rx.blocking_recv() {
                Some(Piece::Data(b)) => self.current = b,
                Some(Piece::End) => self.done = true,
                None => {
                    return Err(std::io::Error::new(
                        std::io::ErrorKind::ConnectionAborted,
                        "the connection closed before the upload ended",
                    ))
                }
            }
        }
        let n = buf.len().min(self.current.len());
        buf[..n].copy_from_slice(&self.current.split_to(n));
        Ok(n)
    }
}

/// CPU priority of threads storing uploads (a nice value: lower weight).
const BULK_NICE: i32 = 19;

/// Runs an upload's job on a thread of its own at the lowest CPU priority.
///
/// Storing an attachment is bulk work: copying megabytes out of the
/// socket, into pages and onto the disk. When the cores are busy, a
/// commit or a read should not queue behind it for a time slice, so the
/// thread runs at nice 19: the scheduler's weight 15 against 1024 for a
/// normal thread. The weights add up, which is why not a milder nice: at
/// nice 10 (weight 110) thirty concurrent uploads outweighed three normal
/// threads and small operations' p99 jumped between 6 and 22 ms from run
/// to run; at 19 thirty uploads weigh less than half of one. When the
/// cores are idle the uploads still get all of them. A thread of its
/// own, not a pool thread, because a pool thread could never take its
/// priority back without privileges.
pub(crate) fn spawn_bulk<F: FnOnce() + Send + 'static>(work: F) {
    let slot = std::sync::Arc::new(parking_lot::Mutex::new(Some(work)));
    let theirs = slot.clone();
    let spawned = std::thread::Builder::new()
        .name("folio-upload".into())
        .spawn(move || {
            lower_priority();
            if let Some(work) = theirs.lock().take() {
                work()
            }
        });
    if let Err(e) = spawned {
        // The job must still run and answer: on the worker pool, then.
        tracing::warn!("cannot start an upload thread ({e}); using the worker pool");
        if let Some(work) = slot.lock().take() {
            tokio::task::spawn_blocking(work);
        }
    }
}

fn lower_priority() {
    // SAFETY: gettid and setpriority take and return plain integers;
    // PRIO_PROCESS with a thread id changes only the calling thread.
    let r = unsafe {
        let tid = libc::syscall(libc::SYS_gettid) as libc::id_t;
        libc::setpriority(libc::PRIO_PROCESS, tid, BULK_NICE)
    };
    if r != 0 {
        tracing::debug!(
            "could not lower an upload thread's priority: {}",
            std::io::Error::last_os_error()
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ends_at_end_and_fails_when_cut_off() {
        let (tx, rx) = mpsc::channel(4);
        tx.try_send(Piece::Data(Bytes::from_static(b"hello ")))
            .unwrap();
        tx.try_send(Piece::Data(Bytes::from_static(b"world")))
            .unwrap();
        tx.try_send(Piece::End).unwrap();
        let mut s = String::new();
        UploadReader::new(rx).read_to_string(&mut s).unwrap();
        assert_eq!(s, "hello world");

        let (tx, rx) = mpsc::channel(4);
        tx.try_send(Piece::Data(Bytes::from_static(b"partial")))
            .unwrap();
        drop(tx);
        let mut v = Vec::new();
        let e = UploadReader::new(rx).read_to_end(&mut v).unwrap_err();
        assert_eq!(e.kind(), std::io::ErrorKind::ConnectionAborted);
    }
}
