//! The writer thread: the only code that writes log records to disk.
//!
//! One thread owns the extent files. It takes whatever committers have
//! appended since its last round, writes it at the extents' offsets
//! (preparing a new extent when the stream crosses into one), fdatasyncs
//! every extent it touched, and only then publishes the new durable LSN.
//! Any failure poisons the log (I11): the error is recorded, waiters are
//! woken with it, and the thread exits without retrying, because after a
//! failed fsync the kernel may have dropped the dirty pages and a retry
//! that "succeeds" would acknowledge data that is not on disk.

use crate::extent::ExtentSet;
use crate::shared::Shared;
use crate::LogError;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::thread::{self, JoinHandle};
use storage::backend::write_all_at;
use storage::{FileHandle, Lsn};

/// Starts the writer thread.
pub(crate) fn spawn(shared: Arc<Shared>, extents: ExtentSet) -> Result<JoinHandle<()>, LogError> {
    let writer = Writer {
        shared,
        extents,
        spare: Vec::new(),
    };
    thread::Builder::new()
        .name("translog-writer".into())
        .spawn(move || writer.run())
        .map_err(|e| LogError::io("translog-writer thread", e))
}

struct Writer {
    shared: Arc<Shared>,
    extents: ExtentSet,
    /// The previous round's buffer, handed back to be refilled.
    spare: Vec<u8>,
}

impl Writer {
    fn run(mut self) {
        while let Some((start, chunk)) = self.shared.take_chunk(std::mem::take(&mut self.spare)) {
            match self.write(start, &chunk) {
                Ok(end) => self.shared.mark_durable(end),
                Err(e) => {
                    // I11: poison, never retry.
                    self.shared.poison(e.to_string());
                    return;
                }
            }
            self.spare = chunk;
        }
    }

    /// Writes `chunk` (the log bytes from `start`) and makes it durable;
    /// returns the LSN after it.
    fn write(&mut self, start: Lsn, chunk: &[u8]) -> Result<Lsn, LogError> {
        let geo = self.shared.geo;
        // I8, I31: only extents below both the redo LSN and (archive
        // style) the archive mark may be recycled.
        let free_below = self.shared.reusable_below();
        let mut touched: Vec<(u64, Arc<dyn FileHandle>)> = Vec::new();
        let (mut pos, mut rest) = (start, chunk);
        while !rest.is_empty() {
            let seq = geo.seq_of(pos);
            let n = rest.len().min(geo.room_left(pos) as usize);
            let h = self.extents.handle(seq, free_below)?;
            write_all_at(h.as_ref(), &rest[..n], geo.file_offset(pos))
                .map_err(|e| LogError::io(self.extents.path(seq), e))?;
            touched.push((seq, h));
            pos = Lsn(pos.0 + n as u64);
            rest = &rest[n..];
        }
        for (seq, h) in &touched {
            // I2 / I1: the chunk's commits are acknowledged, and its pages
            // may be written to databases, only after this fdatasync.
            h.sync_data()
                .map_err(|e| LogError::io(self.extents.path(*seq), e))?;
            self.shared.counters.fsyncs.fetch_add(1, Ordering::Relaxed);
        }
        let counters = &self.shared.counters;
        counters
            .bytes_written
            .fetch_add(chunk.len() as u64, Ordering::Relaxed);
        self.extents.close_below(geo.seq_of(Lsn(pos.0 - 1)));
        Ok(pos)
    }
}
