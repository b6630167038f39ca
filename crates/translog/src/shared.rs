//! The state shared by committers, the checkpointer and the writer thread.
//!
//! One mutex guards the tail of the log: the next LSN, the bytes appended
//! but not yet handed to the writer, and the space bookkeeping. Appending a
//! batch serialises all its records into that buffer in one critical
//! section (I3) and returns; the writer thread takes whatever accumulated,
//! writes and fdatasyncs it, and wakes everyone waiting on the new durable
//! LSN. While one fdatasync is in flight the next batches pile up behind
//! it, so N concurrent committers share about one fsync per wave: group
//! commit falls out of the structure, with no timers.
//!
//! ```text
//!  append ──lock──> buf [buf_start .. end) ──take──> writer: write, fdatasync
//!                                                        │
//!  wait_durable <──────────── durable_cv ◄───────────────┘ durable = end of chunk
//! ```
//! A committer that should not sleep (a connection task with many
//! requests in flight) registers a callback with `when_durable` instead of
//! calling `wait_durable`: the writer runs every callback whose LSN the
//! fdatasync just covered, right after it publishes the new durable LSN,
//! so one fsync wakes every waiting connection in one go with no thread in
//! between.
//!
//! The buffer is a contiguous image of the LSN range it covers: when a
//! record moves to the next extent, the Skip record and zero padding up to
//! the extent end are in it too, so the writer only cuts it at extent
//! boundaries.
//!
//! Checkpoint redo LSNs must be record boundaries for recovery to start
//! there. Callers pass LSNs they observed (`end_lsn`, `durable_lsn`, a
//! batch's `start_lsn`...); those that are not known boundaries are rounded
//! down to a batch start recorded at most every `P/16` bytes, which only
//! makes recovery replay a little more (I5 makes that harmless).

use crate::batch::{Appended, Batch, TxnId};
use crate::geometry::{Geometry, Placement};
use crate::record::{self, Body};
use crate::space::{Reserve, SpacePolicy};
use crate::LogError;
use parking_lot::{Condvar, Mutex, MutexGuard};
use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};
use storage::Lsn;

/// The life of a running log.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Lifecycle {
    Running,
    /// `shutdown` called: no new appends; the writer drains the buffer.
    ShuttingDown,
    Stopped,
    /// A write or fsync failed (I11); the message names the original error.
    Failed(String),
}

impl Lifecycle {
    fn check(&self) -> Result<(), LogError> {
        match self {
            Lifecycle::Running => Ok(()),
            Lifecycle::Failed(reason) => Err(LogError::Failed {
                reason: reason.clone(),
            }),
            Lifecycle::ShuttingDown | Lifecycle::Stopped => Err(LogError::ShutDown),
        }
    }
}

/// Where a running log starts (from restart recovery).
#[derive(Clone, Copy, Debug)]
pub(crate) struct StartPoint {
    pub(crate) end: Lsn,
    pub(crate) redo_lsn: Lsn,
    pub(crate) checkpoint_lsn: Lsn,
    pub(crate) next_txn: u64,
    pub(crate) epoch: u32,
    /// The archive mark from the control file (I31).
    pub(crate) archived_lsn: Lsn,
}

/// The tail of the log, guarded by `Shared::state`.
pub(crate) struct State {
    end: Lsn,
    buf: Vec<u8>,
    buf_start: Lsn,
    durable: Lsn,
    redo_lsn: Lsn,
    checkpoint_lsn: Lsn,
    next_txn: u64,
    epoch: u32,
    /// Known batch starts at or above the redo LSN, ascending.
    boundaries: VecDeque<Lsn>,
    full_waiters: usize,
    lifecycle: Lifecycle,
    /// The archive mark (I31): extents below it have verified copies.
    archived: Lsn,
    /// Archive style: the last append was refused for want of archiving.
    archive_needed: bool,
    last_archive: Option<SystemTime>,
}

/// Statistics counters.
#[derive(Debug, Default)]
pub(crate) struct Counters {
    pub(crate) records: AtomicU64,
    pub(crate) commits: AtomicU64,
    pub(crate) fsyncs: AtomicU64,
    pub(crate) bytes_written: AtomicU64,
    pub(crate) full_events: AtomicU64,
    pub(crate) checkpoints: AtomicU64,
    pub(crate) extents: Arc<AtomicU64>,
}

/// A consistent copy of the state, for `info`.
#[derive(Clone, Debug)]
pub(crate) struct Snapshot {
    pub(crate) end: Lsn,
    pub(crate) durable: Lsn,
    pub(crate) redo_lsn: Lsn,
    pub(crate) checkpoint_lsn: Lsn,
    pub(crate) epoch: u32,
    pub(crate) checkpoint_wanted: bool,
    pub(crate) failed: Option<String>,
    pub(crate) archived: Lsn,
    pub(crate) awaiting_archive: u64,
    pub(crate) archive_needed: bool,
    pub(crate) last_archive: Option<SystemTime>,
}

/// A checkpoint record that has been appended.
#[derive(Clone, Copy, Debug)]
pub(crate) struct CheckpointRecord {
    pub(crate) lsn: Lsn,
    pub(crate) end: Lsn,
    pub(crate) redo_lsn: Lsn,
}

/// Called once with the outcome when an LSN becomes durable (or never
/// will: the log failed or stopped). Runs on the writer thread: it must
/// not block, and must never wait for the log.
pub type DurableFn = Box<dyn FnOnce(Result<(), LogError>) + Send>;

pub(crate) struct Shared {
    pub(crate) geo: Geometry,
    /// Callbacks waiting for their LSN to be durable (`when_durable`).
    /// Locked only while `state` is held, so a registration cannot slip
    /// between a durable-LSN update and the collection of callbacks.
    callbacks: Mutex<Vec<(Lsn, DurableFn)>>,
    pub(crate) space: SpacePolicy,
    /// Archive style: extents are kept until archived (I31).
    archive: bool,
    full_wait: Duration,
    state: Mutex<State>,
    /// Wakes the writer: bytes appended, shutdown.
    work: Condvar,
    /// Wakes `wait_durable`: durable LSN advanced, failure, stop.
    durable_cv: Condvar,
    /// Wakes appends waiting for space: checkpoint, failure, shutdown.
    space_cv: Condvar,
    /// Wakes the checkpointer.
    wanted_cv: Condvar,
    durable: AtomicU64,
    pub(crate) counters: Counters,
}

impl Shared {
    pub(crate) fn new(
        geo: Geometry,
        space: SpacePolicy,
        archive: bool,
        full_wait: Duration,
        start: StartPoint,
        extents: Arc<AtomicU64>,
    ) -> Self {
        let state = State {
            end: start.end,
            buf: Vec::new(),
            buf_start: start.end,
            durable: start.end,
            redo_lsn: start.redo_lsn,
            checkpoint_lsn: start.checkpoint_lsn,
            next_txn: start.next_txn,
            epoch: start.epoch,
            boundaries: VecDeque::from([start.end]),
            full_waiters: 0,
            lifecycle: Lifecycle::Running,
            archived: start.archived_lsn,
            archive_needed: false,
            last_archive: None,
        };
        Shared {
            geo,
            callbacks: Mutex::new(Vec::new()),
            space,
            archive,
            full_wait,
            state: Mutex::new(state),
            work: Condvar::new(),
            durable_cv: Condvar::new(),
            space_cv: Condvar::new(),
            wanted_cv: Condvar::new(),
            durable: AtomicU64::new(start.end.0),
            counters: Counters {
                extents,
                ..Counters::default()
            },
        }
    }

    /// Waits (up to `full_wait`) until `records` records of up to a full
    /// page image each would fit, without appending anything. Lets a
    /// caller wait for space *before* it pins pages for a batch, so that a
    /// full log never waits on a checkpoint that is waiting on it.
    ///
    /// Room for more than the largest batch accepted is never waited for:
    /// a batch that large is refused by the append at once, and a smaller
    /// one (deltas, not images) needs no more than the largest.
    pub(crate) fn wait_for_room(&self, records: usize) -> Result<(), LogError> {
        let max = crate::record::MAX_PAGE_RECORD_LEN;
        let fit = usize::try_from(self.space.batch_limit() / max).unwrap_or(usize::MAX);
        let lens = vec![max; records.min(fit).max(1)];
        let mut st = self.state.lock();
        self.reserve(&mut st, &lens, Reserve::Batch, true)
            .map(|_| ())
    }

    /// Appends a batch as one contiguous run of records (I3), waiting for
    /// space up to `full_wait` if `wait`, else failing with `Full` at once.
    pub(crate) fn append_batch(&self, batch: &Batch, wait: bool) -> Result<Appended, LogError> {
        let bodies = batch.records(self.geo)?;
        let lens: Vec<u64> = bodies.iter().map(Body::encoded_len).collect();
        let size = lens.iter().sum();
        if size > self.space.batch_limit() {
            return Err(LogError::TransactionTooLarge {
                size,
                limit: self.space.batch_limit(),
                capacity: self.space.capacity(),
            });
        }
        let mut st = self.state.lock();
        let places = self.reserve(&mut st, &lens, Reserve::Batch, wait)?;
        let txn = st.next_txn;
        st.next_txn = txn
            .checked_add(1)
            .ok_or_else(|| LogError::Invalid("transaction ids exhausted".into()))?;
        // I3: all records of the batch go into the buffer in this one
        // critical section, so nothing can interleave with them.
        let lsns = self.encode(&mut st, txn, &bodies, &places);
        st.note_boundary(lsns[0], self.geo.payload() / 16);
        self.counters.commits.fetch_add(1, Ordering::Relaxed);
        self.after_append(&st);
        Ok(appended(txn, &lsns, st.end))
    }

    /// Appends a Checkpoint record for `redo` (rounded down to a known
    /// boundary) without waiting for space.
    pub(crate) fn append_checkpoint(
        &self,
        redo: Lsn,
        reserve: Reserve,
    ) -> Result<CheckpointRecord, LogError> {
        let mut st = self.state.lock();
        st.lifecycle.check()?;
        if redo < st.redo_lsn || redo > st.end {
            return Err(LogError::Invalid(format!(
                "checkpoint redo {redo} is outside the log ({} .. {})",
                st.redo_lsn, st.end
            )));
        }
        let redo_lsn = st.round_down(redo);
        let body = Body::Checkpoint {
            redo_lsn,
            next_txn: st.next_txn,
            time_micros: now_micros(),
        };
        let places = self.reserve(&mut st, &[body.encoded_len()], reserve, false)?;
        let lsn = self.encode(&mut st, 0, &[body], &places)[0];
        self.after_append(&st);
        Ok(CheckpointRecord {
            lsn,
            end: st.end,
            redo_lsn,
        })
    }

    /// Records a checkpoint whose control-file update is durable: only now
    /// may extents below `redo_lsn` be recycled (I8).
    pub(crate) fn complete_checkpoint(&self, rec: CheckpointRecord) {
        let mut st = self.state.lock();
        st.redo_lsn = st.redo_lsn.max(rec.redo_lsn);
        st.checkpoint_lsn = st.checkpoint_lsn.max(rec.lsn);
        let redo = st.redo_lsn;
        st.boundaries.retain(|b| *b >= redo);
        self.counters.checkpoints.fetch_add(1, Ordering::Relaxed);
        self.space_cv.notify_all();
    }

    /// Placements for `lens`, waiting up to `full_wait` for space if `wait`.
    /// In archive style, when no checkpoint could make room (the archive
    /// mark holds the log back), fails at once with `ArchiveNeeded`.
    fn reserve(
        &self,
        st: &mut MutexGuard<'_, State>,
        lens: &[u64],
        reserve: Reserve,
        wait: bool,
    ) -> Result<Vec<Placement>, LogError> {
        let started = Instant::now();
        let deadline = started.checked_add(self.full_wait).unwrap_or(started);
        let mut waited = false;
        loop {
            st.lifecycle.check()?;
            if let Some(places) = self.space.place(self.oldest(st), st.end, lens, reserve) {
                if waited {
                    crate::waits::LOG_ROOM.since(started);
                }
                return Ok(places);
            }
            if self.archive_bound(st, lens, reserve) {
                return Err(self.archive_needed(st));
            }
            if !wait || Instant::now() >= deadline {
                if waited {
                    crate::waits::LOG_ROOM.since(started);
                }
                return Err(self.full(st, started.elapsed()));
            }
            waited = true;
            st.full_waiters += 1;
            self.wanted_cv.notify_all();
            self.space_cv.wait_until(st, deadline);
            st.full_waiters -= 1;
        }
    }

    /// The oldest LSN the log must keep: extents wholly below it may be
    /// reused (I8; in archive style also I31).
    fn oldest(&self, st: &State) -> Lsn {
        if self.archive {
            st.redo_lsn.min(st.archived)
        } else {
            st.redo_lsn
        }
    }

    /// Whether `lens` would not fit even if a checkpoint moved the redo
    /// LSN to the end: only archiving can make room.
    fn archive_bound(&self, st: &State, lens: &[u64], reserve: Reserve) -> bool {
        self.archive
            && self
                .space
                .place(st.archived.min(st.end), st.end, lens, reserve)
                .is_none()
    }

    /// Completed extents at or above the archive mark.
    fn awaiting_archive(&self, st: &State) -> u64 {
        if !self.archive {
            return 0;
        }
        let first = self.geo.seq_of(st.archived).max(1);
        self.geo.seq_of(st.durable).saturating_sub(first)
    }

    fn archive_needed(&self, st: &mut State) -> LogError {
        self.counters.full_events.fetch_add(1, Ordering::Relaxed);
        let used = st.end.0 - self.oldest(st).0;
        let capacity = self.space.capacity();
        let waiting_extents = self.awaiting_archive(st);
        if !st.archive_needed {
            tracing::warn!(
                used,
                capacity,
                waiting_extents,
                "transaction log full: extents wait to be archived; writes are refused \
                 until `folio archive` copies them to the archive directory"
            );
        }
        st.archive_needed = true;
        LogError::ArchiveNeeded {
            used,
            capacity,
            waiting_extents,
        }
    }

    /// Archive style: the first extent below `mark` lies wholly below it,
    /// and its verified copy and the control file's mark are durable
    /// (I31): it may be reused once the redo LSN has passed it too.
    pub(crate) fn complete_archive(&self, mark: Lsn) {
        let mut st = self.state.lock();
        st.archived = st.archived.max(mark);
        st.archive_needed = false;
        self.space_cv.notify_all();
    }

    /// Archive style: a run of `TransLog::archive` finished.
    pub(crate) fn note_archive_run(&self) {
        self.state.lock().last_archive = Some(SystemTime::now());
    }

    /// The archive mark and the durable LSN, for an archive run.
    pub(crate) fn archive_window(&self) -> (Lsn, Lsn) {
        let st = self.state.lock();
        (st.archived, st.durable)
    }

    fn full(&self, st: &State, waited: Duration) -> LogError {
        self.counters.full_events.fetch_add(1, Ordering::Relaxed);
        let used = st.end.0 - self.oldest(st).0;
        let capacity = self.space.capacity();
        tracing::warn!(
            used,
            capacity,
            ?waited,
            "transaction log full; append refused"
        );
        LogError::Full {
            used,
            capacity,
            waited,
        }
    }

    /// Extents with a seq below this may be recycled or removed.
    pub(crate) fn reusable_below(&self) -> u64 {
        let st = self.state.lock();
        self.geo.seq_of(self.oldest(&st))
    }

    /// Serialises records at their placements; returns their LSNs.
    fn encode(
        &self,
        st: &mut State,
        txn: u64,
        bodies: &[Body<'_>],
        places: &[Placement],
    ) -> Vec<Lsn> {
        let epoch = st.epoch;
        for (body, place) in bodies.iter().zip(places) {
            if let Some(at) = place.skip_at {
                // I10: every record, Skip included, carries the epoch.
                record::encode(&mut st.buf, at, epoch, 0, &Body::Skip);
            }
            let pad = place.start.0 - st.buf_start.0 - st.buf.len() as u64;
            st.buf.resize(st.buf.len() + pad as usize, 0);
            record::encode(&mut st.buf, place.start, epoch, txn, body);
            st.end = Lsn(place.start.0 + body.encoded_len());
        }
        debug_assert_eq!(st.buf_start.0 + st.buf.len() as u64, st.end.0);
        self.counters
            .records
            .fetch_add(bodies.len() as u64, Ordering::Relaxed);
        self.work.notify_one();
        places.iter().map(|p| p.start).collect()
    }

    fn after_append(&self, st: &State) {
        if self
            .space
            .checkpoint_wanted(st.redo_lsn, st.end, st.full_waiters)
        {
            self.wanted_cv.notify_all();
        }
    }

    /// Blocks until everything below `lsn` is durable (I2).
    pub(crate) fn wait_durable(&self, lsn: Lsn) -> Result<(), LogError> {
        if lsn <= self.durable_lsn() {
            return Ok(());
        }
        let mut st = self.state.lock();
        if lsn > st.end {
            return Err(LogError::Invalid(format!(
                "cannot wait for {lsn}: the log ends at {}",
                st.end
            )));
        }
        let started = Instant::now();
        while st.durable < lsn {
            if let Lifecycle::Failed(_) | Lifecycle::Stopped = st.lifecycle {
                return st.lifecycle.check();
            }
            self.durable_cv.wait(&mut st);
        }
        drop(st);
        crate::waits::LOG_DURABLE.since(started);
        Ok(())
    }

    /// Runs `f` once everything below `lsn` is durable (I2), on the writer
    /// thread, or at once if it already is or never will be.
    pub(crate) fn when_durable(&self, lsn: Lsn, f: DurableFn) {
        let st = self.state.lock();
        let now = match &st.lifecycle {
            _ if lsn <= st.durable => Some(Ok(())),
            Lifecycle::Failed(_) | Lifecycle::Stopped => Some(st.lifecycle.check()),
            _ if lsn > st.end => Some(Err(LogError::Invalid(format!(
                "cannot wait for {lsn}: the log ends at {}",
                st.end
            )))),
            _ => None,
        };
        match now {
            Some(r) => {
                drop(st);
                f(r);
            }
            None => self.callbacks.lock().push((lsn, f)),
        }
    }

    /// Takes the callbacks whose LSN is at or below `durable` (`None`:
    /// all of them). Called with `state` held.
    fn due_callbacks(&self, durable: Option<Lsn>) -> Vec<DurableFn> {
        let mut all = self.callbacks.lock();
        let (due, rest): (Vec<_>, Vec<_>) = std::mem::take(&mut *all)
            .into_iter()
            .partition(|(lsn, _)| durable.is_none_or(|d| *lsn <= d));
        *all = rest;
        due.into_iter().map(|(_, f)| f).collect()
    }

    pub(crate) fn durable_lsn(&self) -> Lsn {
        Lsn(self.durable.load(Ordering::Acquire))
    }

    pub(crate) fn end_lsn(&self) -> Lsn {
        self.state.lock().end
    }

    pub(crate) fn checkpoint_wanted(&self) -> bool {
        let st = self.state.lock();
        st.lifecycle == Lifecycle::Running && self.wanted(&st)
    }

    fn wanted(&self, st: &State) -> bool {
        self.space
            .checkpoint_wanted(st.redo_lsn, st.end, st.full_waiters)
    }

    /// Blocks until a checkpoint is wanted (true), or the timeout passes
    /// or the log stops running (false).
    pub(crate) fn wait_checkpoint_wanted(&self, timeout: Duration) -> bool {
        let deadline = Instant::now().checked_add(timeout);
        let mut st = self.state.lock();
        loop {
            if st.lifecycle != Lifecycle::Running {
                return false;
            }
            if self.wanted(&st) {
                return true;
            }
            match deadline {
                Some(d) if self.wanted_cv.wait_until(&mut st, d).timed_out() => {
                    return st.lifecycle == Lifecycle::Running && self.wanted(&st);
                }
                Some(_) => {}
                None => self.wanted_cv.wait(&mut st),
            }
        }
    }

    /// I11: the first failure poisons the log for good; later ones keep
    /// the original message.
    pub(crate) fn poison(&self, reason: String) {
        let mut st = self.state.lock();
        if !matches!(st.lifecycle, Lifecycle::Failed(_)) {
            tracing::error!(%reason, "transaction log failed; refusing writes until reopened");
            st.lifecycle = Lifecycle::Failed(reason);
        }
        self.wake_all();
        // I11: nothing not yet durable will be; its waiters hear why.
        let failed = self.due_callbacks(None);
        let outcome = st.lifecycle.clone();
        drop(st);
        for f in failed {
            f(outcome.check());
        }
    }

    fn wake_all(&self) {
        self.work.notify_all();
        self.durable_cv.notify_all();
        self.space_cv.notify_all();
        self.wanted_cv.notify_all();
    }

    /// Writer side: the bytes accumulated since the last call, swapped
    /// with `spare`; `None` when the writer should exit.
    pub(crate) fn take_chunk(&self, mut spare: Vec<u8>) -> Option<(Lsn, Vec<u8>)> {
        let mut st = self.state.lock();
        loop {
            if let Lifecycle::Failed(_) = st.lifecycle {
                return None;
            }
            if !st.buf.is_empty() {
                spare.clear();
                std::mem::swap(&mut st.buf, &mut spare);
                let start = st.buf_start;
                st.buf_start = st.end;
                return Some((start, spare));
            }
            if st.lifecycle != Lifecycle::Running {
                return None;
            }
            self.work.wait(&mut st);
        }
    }

    /// Writer side: everything below `end` is written and fdatasynced.
    pub(crate) fn mark_durable(&self, end: Lsn) {
        let mut st = self.state.lock();
        debug_assert!(end <= st.end && end >= st.durable);
        // I2: committers waiting for LSNs below `end` are released only
        // now, after the fdatasync that made them durable.
        st.durable = end;
        self.durable.store(end.0, Ordering::Release);
        self.durable_cv.notify_all();
        let due = self.due_callbacks(Some(end));
        drop(st);
        for f in due {
            f(Ok(()));
        }
    }

    /// Stops new appends; the writer drains what is buffered and exits.
    pub(crate) fn begin_shutdown(&self) {
        let mut st = self.state.lock();
        if st.lifecycle == Lifecycle::Running {
            st.lifecycle = Lifecycle::ShuttingDown;
        }
        self.wake_all();
    }

    /// After the writer exited: the final outcome of the log.
    pub(crate) fn finish_shutdown(&self) -> Result<(), LogError> {
        let mut st = self.state.lock();
        if st.lifecycle == Lifecycle::ShuttingDown {
            st.lifecycle = Lifecycle::Stopped;
        }
        self.wake_all();
        // The writer drained everything appended; whatever is left can
        // only be beyond the end, and will never be durable.
        let orphans = self.due_callbacks(None);
        let outcome = st.lifecycle.clone();
        drop(st);
        for f in orphans {
            f(outcome.check().and(Err(LogError::ShutDown)));
        }
        match outcome {
            Lifecycle::Failed(_) => outcome.check(),
            _ => Ok(()),
        }
    }

    pub(crate) fn snapshot(&self) -> Snapshot {
        let st = self.state.lock();
        Snapshot {
            end: st.end,
            durable: st.durable,
            redo_lsn: st.redo_lsn,
            checkpoint_lsn: st.checkpoint_lsn,
            epoch: st.epoch,
            checkpoint_wanted: st.lifecycle == Lifecycle::Running && self.wanted(&st),
            failed: match &st.lifecycle {
                Lifecycle::Failed(r) => Some(r.clone()),
                _ => None,
            },
            archived: st.archived,
            awaiting_archive: self.awaiting_archive(&st),
            archive_needed: st.archive_needed,
            last_archive: st.last_archive,
        }
    }
}

impl State {
    /// Remembers `lsn` (a batch start) if the last one is `stride` back.
    fn note_boundary(&mut self, lsn: Lsn, stride: u64) {
        let due = self.boundaries.back().is_none_or(|b| lsn.0 >= b.0 + stride);
        if due {
            self.boundaries.push_back(lsn);
        }
    }

    /// The largest known record boundary at or below `lsn`. The end and
    /// the durable LSN are boundaries (appends and writer chunks hold
    /// whole batches), as is the current redo LSN.
    fn round_down(&self, lsn: Lsn) -> Lsn {
        if lsn == self.end || lsn == self.durable {
            return lsn;
        }
        let below = self.boundaries.partition_point(|b| *b <= lsn);
        below
            .checked_sub(1)
            .and_then(|i| self.boundaries.get(i).copied())
            .map_or(self.redo_lsn, |b| b.max(self.redo_lsn))
    }
}

fn appended(txn: u64, lsns: &[Lsn], end: Lsn) -> Appended {
    let n = lsns.len();
    Appended {
        txn: TxnId(txn),
        start_lsn: lsns[0],
        page_lsns: lsns[1..n - 1].to_vec(),
        commit_lsn: lsns[n - 1],
        end_lsn: end,
    }
}

fn now_micros() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_micros()).unwrap_or(i64::MAX))
}
