//! `TransLog`: the public face of the log.
//!
//! A thin facade: appends and waits go to the shared state, records reach
//! the disk through the writer thread, and a checkpoint strings the steps
//! together in the order I8 requires — append the Checkpoint record, wait
//! until it is durable, update the control file (I9), and only then let
//! the extents below the new redo LSN be recycled.

use crate::control::ControlFile;
use crate::extent::ExtentSet;
use crate::geometry::Geometry;
use crate::recovery::Retired;
use crate::shared::{Shared, StartPoint};
use crate::space::{Reserve, SpacePolicy};
use crate::{
    writer, Appended, ArchiveReport, Batch, LogConfig, LogError, LogInfo, LogStyle, RecoveryReport,
};
use parking_lot::Mutex;
use std::path::Path;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;
use storage::{Backend, Lsn};

/// The server-wide write-ahead log.
pub struct TransLog {
    pub(crate) shared: Arc<Shared>,
    /// Also serialises checkpoints, so control updates follow LSN order.
    pub(crate) control: Mutex<ControlFile>,
    writer: Mutex<Option<JoinHandle<()>>>,
    pub(crate) cfg: LogConfig,
    pub(crate) backend: Arc<dyn Backend>,
    /// Serialises archive runs.
    pub(crate) archiving: Mutex<()>,
}

impl TransLog {
    /// Opens or creates the log in `cfg.dir`, running restart recovery
    /// first against database files found at `data_dir.join(path)`.
    pub fn open(
        backend: Arc<dyn Backend>,
        data_dir: &Path,
        cfg: LogConfig,
    ) -> Result<(Arc<TransLog>, RecoveryReport), LogError> {
        crate::open::open(backend, data_dir, cfg, &Retired::new())
    }

    /// [`TransLog::open`], skipping the committed batches of *retired*
    /// database instances — (path, instance id) pairs whose log records
    /// must never be applied (design.md I29: a database detached because
    /// it failed, or one that fixup replaced by a new instance).
    pub fn open_retiring(
        backend: Arc<dyn Backend>,
        data_dir: &Path,
        cfg: LogConfig,
        retired: &Retired,
    ) -> Result<(Arc<TransLog>, RecoveryReport), LogError> {
        crate::open::open(backend, data_dir, cfg, retired)
    }

    /// Starts a recovered log: the writer thread runs from here on.
    pub(crate) fn start(
        backend: Arc<dyn Backend>,
        cfg: LogConfig,
        mut control: ControlFile,
        mut start: StartPoint,
    ) -> Result<Arc<TransLog>, LogError> {
        let geo = Geometry::new(cfg.extent_size);
        let space = SpacePolicy::new(geo, &cfg);
        let archive = cfg.style == LogStyle::Archive;
        let log_id = control.data().log_id;
        let counters_extents = Arc::default();
        let mut extents = ExtentSet::new(
            backend.clone(),
            cfg.dir.clone(),
            geo,
            log_id,
            Arc::clone(&counters_extents),
        )?;
        if archive {
            start.archived_lsn = archive_start(&mut control, geo, extents.oldest())?;
        }
        let shared = Arc::new(Shared::new(
            geo,
            space,
            archive,
            cfg.full_wait,
            start,
            counters_extents,
        ));
        extents.trim(shared.reusable_below(), space.max_extents())?;
        let handle = writer::spawn(shared.clone(), extents)?;
        Ok(Arc::new(TransLog {
            shared,
            control: Mutex::new(control),
            writer: Mutex::new(Some(handle)),
            cfg,
            backend,
            archiving: Mutex::new(()),
        }))
    }

    /// Appends a whole batch (Begin, page records, Commit) contiguously
    /// (I3). Does not wait for durability: call [`Self::wait_durable`] with
    /// the returned `end_lsn` before acknowledging the commit (I2).
    ///
    /// If the log has no room, raises [`Self::checkpoint_wanted`] and waits
    /// up to `full_wait` for a checkpoint to free space, then fails with
    /// [`LogError::Full`]. Fails with [`LogError::Failed`] once the log is
    /// poisoned (I11), [`LogError::TooLarge`] for a record larger than an
    /// extent, [`LogError::TransactionTooLarge`] at once (never waiting)
    /// for a batch larger than half the log, and
    /// [`LogError::Invalid`] for a bad path or delta.
    pub fn append(&self, batch: &Batch) -> Result<Appended, LogError> {
        self.shared.append_batch(batch, true)
    }

    /// Like [`Self::append`] but fails with `Full` at once instead of
    /// waiting for space.
    pub fn try_append(&self, batch: &Batch) -> Result<Appended, LogError> {
        self.shared.append_batch(batch, false)
    }

    /// Waits (up to `full_wait`) until a batch of `records` records, each
    /// at most a full page image, would fit; appends nothing. Callers that
    /// hold resources a checkpoint needs while appending wait here first,
    /// then use [`Self::try_append`].
    pub fn wait_for_room(&self, records: usize) -> Result<(), LogError> {
        self.shared.wait_for_room(records)
    }

    /// Blocks until every record below `lsn` is durable. Concurrent callers
    /// share the writer's fdatasyncs (group commit).
    pub fn wait_durable(&self, lsn: Lsn) -> Result<(), LogError> {
        self.shared.wait_durable(lsn)
    }

    /// Runs `f` with `Ok(())` once every record below `lsn` is durable (I2),
    /// or with the error if the log fails or stops first: the
    /// non-blocking form of [`Self::wait_durable`]. `f` runs on the log's
    /// writer thread right after the fdatasync (or at once, on the
    /// caller's thread, if the outcome is already known): it must not
    /// block and must never wait for the log.
    pub fn when_durable(&self, lsn: Lsn, f: crate::DurableFn) {
        self.shared.when_durable(lsn, f)
    }

    /// Everything below this LSN is durable. A page whose page LSN is below
    /// it may be written to its database (I1).
    pub fn durable_lsn(&self) -> Lsn {
        self.shared.durable_lsn()
    }

    /// Where the next record will be appended.
    pub fn end_lsn(&self) -> Lsn {
        self.shared.end_lsn()
    }

    /// Writes a checkpoint with this redo LSN, waits until it is durable,
    /// updates the control file (I8, I9) and frees the extents wholly below
    /// the redo LSN for recycling.
    ///
    /// The caller guarantees that every change logged below `redo_lsn` is
    /// in the database files and synced. `redo_lsn` must lie between the
    /// current redo LSN and `end_lsn()`; values other than `end_lsn()`,
    /// `durable_lsn()` or a batch's `start_lsn` may be rounded down to the
    /// nearest known batch start (replaying slightly more at restart).
    pub fn checkpoint(&self, redo_lsn: Lsn) -> Result<(), LogError> {
        self.checkpoint_with(redo_lsn, Reserve::Checkpoint)
    }

    pub(crate) fn checkpoint_with(&self, redo_lsn: Lsn, reserve: Reserve) -> Result<(), LogError> {
        let mut control = self.control.lock();
        let rec = self.shared.append_checkpoint(redo_lsn, reserve)?;
        self.shared.wait_durable(rec.end)?;
        // I8: the control file names the checkpoint only once its record is
        // durable. A failed control write poisons the log like any other
        // failed log write (I11).
        let update = control.update(|c| {
            c.checkpoint_lsn = rec.lsn;
            c.redo_lsn = rec.redo_lsn;
        });
        if let Err(e) = update {
            let reason = e.to_string();
            self.shared.poison(reason.clone());
            return Err(LogError::Failed { reason });
        }
        // I8: extents below the new redo LSN become recyclable only now.
        self.shared.complete_checkpoint(rec);
        Ok(())
    }

    /// Poisons the log for a failure outside it that leaves changes below
    /// the end only in the log (I11): a failed sync of the database files
    /// the log covers. Every later commit fails with `reason` until the
    /// log is reopened, whose recovery redoes those changes.
    pub fn fail(&self, reason: String) {
        self.shared.poison(reason);
    }

    /// True when, per the tuning, enough log has accumulated since the
    /// redo LSN, every allowed extent is in use, or an append is waiting
    /// for space: the caller should flush its dirty pages and checkpoint.
    pub fn checkpoint_wanted(&self) -> bool {
        self.shared.checkpoint_wanted()
    }

    /// Blocks until [`Self::checkpoint_wanted`] (returns true), the timeout
    /// passes, or the log stops running (both false). For the caller's
    /// checkpointer thread.
    pub fn wait_checkpoint_wanted(&self, timeout: Duration) -> bool {
        self.shared.wait_checkpoint_wanted(timeout)
    }

    /// Archive style: copies every completed extent not yet archived into
    /// `to` (or `archive_dir`), verifies each copy and only then moves the
    /// archive mark past it, so the log may reuse it (I31). Idempotent;
    /// a crash leaves at most a `.partial` copy that the next run replaces.
    /// Appends go on meanwhile. Fails with [`LogError::Invalid`] in other
    /// styles or without a directory, with [`LogError::Io`] naming the
    /// file if a copy cannot be written (the mark stays where it was), and
    /// with [`LogError::Failed`] if the control file cannot be updated.
    pub fn archive(&self, to: Option<&Path>) -> Result<ArchiveReport, LogError> {
        crate::archive::run(self, to)
    }

    /// Configuration, positions and counters.
    pub fn info(&self) -> LogInfo {
        let s = self.shared.snapshot();
        let c = &self.shared.counters;
        let get = |a: &std::sync::atomic::AtomicU64| a.load(Ordering::Relaxed);
        LogInfo {
            style: self.cfg.style,
            tuning: self.cfg.tuning,
            extent_size: self.cfg.extent_size,
            max_size: self.cfg.max_size,
            extents_on_disk: get(&c.extents),
            capacity: self.shared.space.capacity(),
            bytes_in_use: s.end.0 - s.redo_lsn.0,
            checkpoint_lsn: s.checkpoint_lsn,
            redo_lsn: s.redo_lsn,
            durable_lsn: s.durable,
            end_lsn: s.end,
            epoch: s.epoch,
            checkpoint_wanted: s.checkpoint_wanted,
            failed: s.failed,
            appends: get(&c.records),
            commits: get(&c.commits),
            fsyncs: get(&c.fsyncs),
            bytes_written: get(&c.bytes_written),
            log_full_events: get(&c.full_events),
            checkpoints: get(&c.checkpoints),
            archive_dir: self.cfg.archive_dir.clone(),
            archived_lsn: s.archived,
            extents_awaiting_archive: s.awaiting_archive,
            archive_needed: s.archive_needed,
            last_archive: s.last_archive,
        }
    }

    /// Refuses new appends, lets the writer flush and sync what was
    /// appended, and stops it. Idempotent. Fails with the original error if
    /// the log had failed.
    pub fn shutdown(&self) -> Result<(), LogError> {
        self.shared.begin_shutdown();
        if let Some(handle) = self.writer.lock().take() {
            if handle.join().is_err() {
                self.shared.poison("the log writer thread panicked".into());
            }
        }
        self.shared.finish_shutdown()
    }
}

/// The archive mark a log in archive style starts with. Extents below the
/// oldest one still on disk were recycled before archive style was on:
/// they can never be archived, so the mark starts at that extent (made
/// durable, I31) and a restore can roll forward only from there.
fn archive_start(
    control: &mut ControlFile,
    geo: Geometry,
    oldest: Option<u64>,
) -> Result<Lsn, LogError> {
    let mark = control.data().archived_lsn;
    let Some(oldest) = oldest.map(|s| geo.extent_start(s)) else {
        return Ok(mark);
    };
    if mark >= oldest {
        return Ok(mark);
    }
    tracing::warn!(
        from = %mark,
        to = %oldest,
        "archive style: the log below {oldest} was recycled before archiving began; \
         archived log starts there"
    );
    control.update(|c| c.archived_lsn = oldest)?;
    Ok(oldest)
}

impl Drop for TransLog {
    fn drop(&mut self) {
        if let Err(e) = self.shutdown() {
            tracing::warn!(error = %e, "transaction log shut down with an error");
        }
    }
}
