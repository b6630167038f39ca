//! Attachment write-back: the engine-wide limit on attachment chunks in
//! the disk's queue, kept by a few writer threads.
//!
//! With `attachment_writeback = N` (N > 0) every attachment chunk is
//! written and fdatasynced by one of N writer threads, one chunk per
//! thread at a time: at most N chunks (of at most 1 MiB) are ever queued
//! ahead of a log write, while N ≥ 2 keeps the disk streaming (module
//! docs of `attach`). With 0 the thread storing the attachment writes
//! its chunks itself and nothing waits.
//!
//! Why threads of their own rather than turns taken by the storing
//! threads: those may run at the lowest CPU priority (the server stores
//! uploads at nice 19, so that bulk copying never delays a commit). A
//! turn granted to such a thread waited for a CPU behind every normal
//! thread before its write was even issued, and the disk idled
//! meanwhile; the uploads stalled on a disk that had nothing to do. A
//! writer thread only issues I/O and waits for it, so it costs almost no
//! CPU while running at the priority of the thread that opened the engine:
//! the disk gets the next chunk as soon as it finishes one. The storing
//! thread hands its chunk buffer over and gets it back with the result,
//! so no byte is copied on the way.

use std::io;
use std::sync::{mpsc, Arc, Mutex};
use std::thread::JoinHandle;
use storage::backend::AlignedBuf;
use storage::FileHandle;

/// Which step of a chunk's write-back failed.
#[derive(Debug)]
pub(crate) enum Failed {
    /// The write itself.
    Write(io::Error),
    /// The fdatasync after it.
    Sync(io::Error),
}

/// One chunk to write and sync, with where to send the buffer back.
struct Job {
    handle: Arc<dyn FileHandle>,
    buf: AlignedBuf,
    len: usize,
    offset: u64,
    done: mpsc::SyncSender<(AlignedBuf, Result<(), Failed>)>,
}

/// The writer threads and the queue feeding them (see the module docs).
pub(crate) struct Writeback {
    limit: usize,
    queue: Option<mpsc::Sender<Job>>,
    threads: Vec<JoinHandle<()>>,
}

impl Writeback {
    /// Starts `limit` writer threads (none for 0). They run at the
    /// priority of the calling thread.
    pub fn new(limit: usize) -> io::Result<Writeback> {
        let mut wb = Writeback {
            limit,
            queue: None,
            threads: Vec::new(),
        };
        if limit == 0 {
            return Ok(wb);
        }
        let (tx, rx) = mpsc::channel::<Job>();
        let rx = Arc::new(Mutex::new(rx));
        for i in 0..limit {
            let rx = rx.clone();
            let t = std::thread::Builder::new()
                .name(format!("folio-blobio-{i}"))
                .spawn(move || serve(&rx))?;
            wb.threads.push(t);
        }
        wb.queue = Some(tx);
        Ok(wb)
    }

    /// The configured limit (0: each storing thread writes its own).
    pub fn limit(&self) -> usize {
        self.limit
    }

    /// Writes `buf[..len]` at `offset` of `handle` and fdatasyncs it on a
    /// writer thread, waiting for a free one; gives the buffer back with
    /// the result. Only with a limit above 0.
    pub fn write_synced(
        &self,
        handle: &Arc<dyn FileHandle>,
        buf: AlignedBuf,
        len: usize,
        offset: u64,
    ) -> (AlignedBuf, Result<(), Failed>) {
        let (done, result) = mpsc::sync_channel(1);
        let job = Job {
            handle: handle.clone(),
            buf,
            len,
            offset,
            done,
        };
        let sent = match &self.queue {
            Some(queue) => queue.send(job).map_err(|e| e.0),
            None => Err(job),
        };
        if let Err(job) = sent {
            // No writer thread (a limit of 0): write here.
            return run(job);
        }
        result.recv().unwrap_or_else(|_| {
            // The writer died mid-job (a panic below it): the chunk's fate
            // is unknown, so it counts as a failed write.
            let e = io::Error::other("an attachment writer thread stopped");
            (AlignedBuf::zeroed(len), Err(Failed::Write(e)))
        })
    }
}

/// A writer thread: jobs until the queue closes.
fn serve(rx: &Mutex<mpsc::Receiver<Job>>) {
    loop {
        let job = match rx.lock() {
            Ok(rx) => rx.recv(),
            Err(_) => return,
        };
        let Ok(job) = job else { return };
        let done = job.done.clone();
        // The storing thread waits for this answer; if it is gone, so is
        // the buffer's purpose.
        let _ = done.send(run(job));
    }
}

fn run(job: Job) -> (AlignedBuf, Result<(), Failed>) {
    let data = &job.buf[..job.len];
    let result = job
        .handle
        .write_bulk_at(data, job.offset)
        .map_err(Failed::Write)
        .and_then(|()| job.handle.sync_data().map_err(Failed::Sync));
    (job.buf, result)
}

impl Drop for Writeback {
    fn drop(&mut self) {
        // Closing the queue ends every writer once it is idle; no job can
        // be pending, as each caller waits for its own.
        self.queue = None;
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use storage::backend::{Backend, FaultBackend, FaultKind, FaultOp, FaultRule, MemBackend};
    use storage::OpenMode;

    /// Counts writes in progress across threads, to check the limit.
    struct Counting {
        inner: Arc<dyn FileHandle>,
        inside: AtomicUsize,
        most: AtomicUsize,
    }

    impl FileHandle for Counting {
        fn read_at(&self, buf: &mut [u8], offset: u64) -> io::Result<usize> {
            self.inner.read_at(buf, offset)
        }
        fn write_at(&self, buf: &[u8], offset: u64) -> io::Result<usize> {
            let now = self.inside.fetch_add(1, Ordering::SeqCst) + 1;
            self.most.fetch_max(now, Ordering::SeqCst);
            std::thread::yield_now();
            let r = self.inner.write_at(buf, offset);
            self.inside.fetch_sub(1, Ordering::SeqCst);
            r
        }
        fn sync_data(&self) -> io::Result<()> {
            self.inner.sync_data()
        }
        fn sync_fs(&self) -> io::Result<()> {
            self.inner.sync_fs()
        }
        fn len(&self) -> io::Result<u64> {
            self.inner.len()
        }
        fn set_len(&self, len: u64) -> io::Result<()> {
            self.inner.set_len(len)
        }
    }

    #[test]
    fn writes_are_synced_within_the_limit_and_buffers_come_back() {
        let backend = MemBackend::new();
        for limit in [0, 1, 2, 3] {
            let wb = Writeback::new(limit).unwrap();
            assert_eq!(wb.threads.len(), limit);
            let file = backend
                .open(std::path::Path::new("wb"), OpenMode::CreateOrOpen)
                .unwrap();
            let counting = Arc::new(Counting {
                inner: file,
                inside: AtomicUsize::new(0),
                most: AtomicUsize::new(0),
            });
            let handle: Arc<dyn FileHandle> = counting.clone();
            std::thread::scope(|s| {
                for t in 0..8u8 {
                    let (wb, handle) = (&wb, &handle);
                    s.spawn(move || {
                        let mut buf = AlignedBuf::zeroed(4096);
                        for i in 0..50u64 {
                            buf[..8].copy_from_slice(&i.to_le_bytes());
                            buf[8] = t;
                            let offset = (u64::from(t) * 50 + i) * 4096;
                            let (back, r) = wb.write_synced(handle, buf, 4096, offset);
                            r.unwrap();
                            buf = back;
                        }
                    });
                }
            });
            let most = counting.most.load(Ordering::SeqCst);
            assert!((1..=limit.max(8)).contains(&most), "{limit}: {most}");
            if limit > 0 {
                assert!(most <= limit, "limit {limit}: {most} writes at once");
            }
            let mut page = [0u8; 9];
            for t in 0..8u8 {
                for i in 0..50u64 {
                    let offset = (u64::from(t) * 50 + i) * 4096;
                    storage::backend::read_exact_at(&*handle, &mut page, offset).unwrap();
                    assert_eq!(page[..8], i.to_le_bytes());
                    assert_eq!(page[8], t);
                }
            }
        }
    }

    #[test]
    fn a_failed_write_or_sync_is_reported_with_the_buffer() {
        let backend = FaultBackend::new(Arc::new(MemBackend::new()));
        let handle = backend
            .open(std::path::Path::new("wb"), OpenMode::CreateOrOpen)
            .unwrap();
        for limit in [0, 2] {
            let wb = Writeback::new(limit).unwrap();
            backend.add_rule(FaultRule::new(FaultOp::Write, FaultKind::Eio));
            let (buf, r) = wb.write_synced(&handle, AlignedBuf::zeroed(4096), 4096, 0);
            assert!(matches!(r, Err(Failed::Write(_))), "{limit}: {r:?}");
            backend.add_rule(FaultRule::new(FaultOp::Sync, FaultKind::Eio));
            let (buf, r) = wb.write_synced(&handle, buf, 4096, 0);
            assert!(matches!(r, Err(Failed::Sync(_))), "{limit}: {r:?}");
            let (_, r) = wb.write_synced(&handle, buf, 4096, 0);
            assert!(r.is_ok(), "{limit}: {r:?}");
        }
    }
}
