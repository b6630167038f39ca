//! The write queue: how writes to one database are combined, who runs
//! them, and how each caller gets its result.
//!
//! A write is queued with a completion; whoever finds the writer lock
//! free runs the queue — up to [`MAX_GROUP`] writes as one transaction
//! (`commit.rs`) — registers one callback for the group's durability and
//! lets go of the lock without waiting. The log's writer thread hands
//! every write its result right after the fdatasync that covers the
//! batch (I2). A caller that finds the lock taken just leaves its write
//! queued: the holder, or the caller it hands the lock to, runs it.
//!
//! ```text
//!   submit/enqueue ─▶ queue ─▶ drain (writer lock) ─▶ take_group ─▶ run_group
//!                                                           │ execute (commit.rs)
//!   Slot::wait ◀── done(result) ◀── when_durable callback ◀─┘ (log writer thread)
//! ```
//!
//! Hand-off: a write queued while the lock is held is run by the holder,
//! which looks at the queue again after letting go (or has woken a
//! queued submitter, which then tries the lock itself); its submitter's
//! own `try_lock` came after the push, so one of them always sees it.

use super::apply::WriteOp;
use super::commit::Executed;
use super::Database;
use crate::dbcore::Durability;
use crate::{NoteMeta, NsfError, NsfResult};
use parking_lot::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Instant;
use translog::LogError;

/// Writes combined into one transaction at most (bounds the log batch and
/// the work one writer-lock holder does for others).
const MAX_GROUP: usize = 64;

/// Groups a `run_queued` call runs before it hands the rest back to its
/// caller to schedule (a runtime task must not run a busy queue forever).
pub(super) const RUNNER_GROUPS: usize = 4;

/// Writer-lock counters shared by an engine and all its databases.
#[derive(Default)]
pub(crate) struct LockCounters {
    writes: AtomicU64,
    waits: AtomicU64,
    wait_micros: AtomicU64,
}

impl LockCounters {
    pub fn snapshot(&self) -> crate::LockStats {
        crate::LockStats {
            waits: self.waits.load(Ordering::Relaxed),
            wait_micros: self.wait_micros.load(Ordering::Relaxed),
            writes: self.writes.load(Ordering::Relaxed),
        }
    }

    /// Records one write that waited from `since` until `until`.
    fn waited(&self, since: Instant, until: Instant) {
        crate::waits::DB_WRITER_LOCK.record(until.saturating_duration_since(since));
        let micros = until.saturating_duration_since(since).as_micros();
        self.waits.fetch_add(1, Ordering::Relaxed);
        self.wait_micros
            .fetch_add(u64::try_from(micros).unwrap_or(u64::MAX), Ordering::Relaxed);
    }
}

/// One write's outcome inside a combined transaction.
pub(super) type WriteResult = NsfResult<Option<NoteMeta>>;

/// What is done with a write's result once it is known: called exactly
/// once, on the thread that ran the write (failures, unlogged mode) or on
/// the log's writer thread once the commit is durable. It must not block.
pub(super) type WriteDone = Box<dyn FnOnce(WriteResult) + Send>;

/// A write waiting in the database's queue.
pub(super) struct Queued {
    op: WriteOp,
    done: WriteDone,
    /// When it was queued, and the database's count of runs that found
    /// the writer lock taken (for the lock-wait statistics).
    queued_at: Instant,
    contended_at: u64,
    ticket: u64,
    /// A blocking submitter's slot, to wake it to run the queue itself.
    waiter: Option<Arc<Slot>>,
    /// Answered once installed (visible to readers), not once durable:
    /// only for derived data that a lost commit leaves to be redone
    /// (`Database::index_write_visible`, I54).
    early: bool,
}

/// Where a blocking caller's result is left.
#[derive(Default)]
pub(super) struct Slot {
    state: Mutex<SlotState>,
    ready: parking_lot::Condvar,
}

#[derive(Default)]
struct SlotState {
    result: Option<WriteResult>,
    /// A writer-lock holder left with this write still queued: run the
    /// queue.
    kicked: bool,
}

impl Slot {
    fn fill(&self, r: WriteResult) {
        self.state.lock().result = Some(r);
        self.ready.notify_one();
    }

    fn kick(&self) {
        self.state.lock().kicked = true;
        self.ready.notify_one();
    }

    /// Sleeps until filled; `run` runs the queue when kicked, and whenever
    /// a long wait passes (a safety net: the hand-off never strands a
    /// write).
    fn wait(&self, run: impl Fn()) -> WriteResult {
        let mut st = self.state.lock();
        loop {
            if let Some(done) = st.result.take() {
                return done;
            }
            let timed_out = !st.kicked
                && self
                    .ready
                    .wait_for(&mut st, std::time::Duration::from_millis(100))
                    .timed_out();
            if (timed_out || std::mem::take(&mut st.kicked)) && st.result.is_none() {
                parking_lot::MutexGuard::unlocked(&mut st, &run);
            }
        }
    }
}

/// A failure shared by every write of a combined transaction, for each.
pub(super) fn replicate(e: &NsfError) -> NsfError {
    match e {
        NsfError::LogFull => NsfError::LogFull,
        NsfError::LogArchiveNeeded { waiting_extents } => NsfError::LogArchiveNeeded {
            waiting_extents: *waiting_extents,
        },
        NsfError::TransactionTooLarge {
            size,
            limit,
            capacity,
        } => NsfError::TransactionTooLarge {
            size: *size,
            limit: *limit,
            capacity: *capacity,
        },
        NsfError::EngineClosed => NsfError::EngineClosed,
        NsfError::DatabaseDeleted(path) => NsfError::DatabaseDeleted(path.clone()),
        NsfError::LogFailed(r) => NsfError::LogFailed(r.clone()),
        NsfError::DatabaseFailed { path, reason } => NsfError::DatabaseFailed {
            path: path.clone(),
            reason: reason.clone(),
        },
        other => NsfError::Invalid(format!(
            "the transaction this write was combined into failed: {other}"
        )),
    }
}

impl Database {
    /// Queues a write and returns once it is durable (I2) or has failed.
    ///
    /// Writes to one database are combined: whoever finds the writer lock
    /// free runs every queued write — up to [`MAX_GROUP`] of them in one
    /// transaction, each behind a savepoint so a failing write is undone
    /// alone (I4) — appends that one batch to the log, registers one
    /// callback for its durability, and lets go of the lock without
    /// waiting. So a commit costs no thread hand-off of its own, one
    /// log batch and page image per group rather than per write, and one
    /// wake-up when durable.
    ///
    /// A write counts as a lock wait if a run of the queue found the
    /// writer lock taken while it was queued (its own submitter's, or a
    /// deferred `run_queued`); the wait lasts from when it was queued
    /// until its group started. Writes that a deferred run picks up
    /// without contention waited by design, for company, and do not count.
    ///
    /// A blocking submitter runs the queue until its own write has been
    /// run, then hands the lock on: it wakes the next blocking submitter
    /// still queued, which runs the queue in turn, so no caller is kept
    /// working for others while its own answer waits.
    pub(super) fn submit(&self, op: WriteOp) -> WriteResult {
        self.submit_as(op, false)
    }

    /// [`Self::submit`], answered once the write is installed (`early`)
    /// rather than once it is durable.
    pub(super) fn submit_as(&self, op: WriteOp, early: bool) -> WriteResult {
        let slot = Arc::new(Slot::default());
        let filled = slot.clone();
        let (ticket, _) = self.enqueue(op, Box::new(move |r| filled.fill(r)), Some(slot.clone()));
        if early {
            if let Some(w) = self.queue.lock().iter_mut().find(|w| w.ticket == ticket) {
                w.early = true;
            }
        }
        self.drain(Some(ticket), None);
        slot.wait(|| {
            self.drain(Some(ticket), None);
        })
    }

    /// Queues a write; returns its ticket and whether the queue was empty.
    pub(super) fn enqueue(
        &self,
        op: WriteOp,
        done: WriteDone,
        waiter: Option<Arc<Slot>>,
    ) -> (u64, bool) {
        self.locks.writes.fetch_add(1, Ordering::Relaxed);
        let ticket = self.tickets.fetch_add(1, Ordering::Relaxed);
        let mut q = self.queue.lock();
        let first = q.is_empty();
        q.push_back(Queued {
            op,
            done,
            queued_at: Instant::now(),
            contended_at: self.contended.load(Ordering::Relaxed),
            ticket,
            waiter,
            early: false,
        });
        (ticket, first)
    }

    /// Runs queued writes while this caller can take the writer lock and
    /// writes are queued. `own` is the caller's own write: once it has
    /// run, the caller hands the rest to the next blocking submitter still
    /// queued, if there is one. `budget` bounds the groups run (a
    /// `run_queued` turn); returns true if it ran out with writes queued.
    pub(super) fn drain(&self, own: Option<u64>, budget: Option<usize>) -> bool {
        loop {
            let Some(guard) = self.writer.try_lock() else {
                self.contended.fetch_add(1, Ordering::Relaxed);
                return false;
            };
            let mut own_done = false;
            let mut groups = 0;
            loop {
                let group = self.take_group();
                if group.is_empty() {
                    break;
                }
                own_done |= own.is_some_and(|t| group.iter().any(|w| w.ticket == t));
                self.run_group(group, own);
                groups += 1;
                if own_done && self.wake_next_waiter() {
                    return false; // the guard drops; the woken caller runs on
                }
                if budget.is_some_and(|b| groups >= b) {
                    drop(guard);
                    return !self.queue.lock().is_empty();
                }
            }
            drop(guard);
            if self.queue.lock().is_empty() {
                return false;
            }
        }
    }

    /// Wakes the first blocking submitter whose write is still queued, to
    /// run the queue; false if there is none.
    fn wake_next_waiter(&self) -> bool {
        let next = self.queue.lock().iter().find_map(|w| w.waiter.clone());
        match next {
            Some(slot) => {
                slot.kick();
                true
            }
            None => false,
        }
    }

    /// The next writes to run as one transaction: up to [`MAX_GROUP`]
    /// document writes, or one index transaction (those can be large and
    /// run alone).
    fn take_group(&self) -> Vec<Queued> {
        let mut q = self.queue.lock();
        let alone = q.front().is_some_and(|w| matches!(w.op, WriteOp::Index(_)));
        let n = if alone {
            1
        } else {
            q.iter()
                .take(MAX_GROUP)
                .take_while(|w| !matches!(w.op, WriteOp::Index(_)))
                .count()
        };
        q.drain(..n).collect()
    }

    /// Runs `group` as one transaction and hands each write its result:
    /// at once if the transaction failed or needs no log, else when the
    /// log has made it durable.
    fn run_group(&self, group: Vec<Queued>, own: Option<u64>) {
        let started = Instant::now();
        let contended = self.contended.load(Ordering::Relaxed);
        let mut ops = Vec::with_capacity(group.len());
        let mut dones = Vec::with_capacity(group.len());
        let mut early = Vec::with_capacity(group.len());
        for w in group {
            if Some(w.ticket) != own && w.contended_at != contended {
                self.locks.waited(w.queued_at, started);
            }
            ops.push(w.op);
            dones.push(Some(w.done));
            early.push(w.early);
        }
        let Executed {
            results,
            durable_at,
            new_seq,
        } = match self.execute(ops) {
            Ok(r) => r,
            Err(e) => {
                let copies: Vec<NsfError> = (1..dones.len()).map(|_| replicate(&e)).collect();
                for (done, err) in dones.into_iter().zip(std::iter::once(e).chain(copies)) {
                    if let Some(done) = done {
                        done(Err(err));
                    }
                }
                return;
            }
        };
        // Derived writes are answered now that they are installed (I54);
        // the rest once the group is durable (I2).
        let mut results: Vec<Option<WriteResult>> = results.into_iter().map(Some).collect();
        for ((done, r), early) in dones.iter_mut().zip(results.iter_mut()).zip(early) {
            if early {
                if let (Some(done), Some(r)) = (done.take(), r.take()) {
                    done(r);
                }
            }
        }
        let changes = self.core.changes.clone();
        let finish = move |durable: Result<(), LogError>| {
            if let (Ok(()), Some(seq)) = (&durable, new_seq) {
                // I23: waiters hear of the change once it is durable, and
                // before its writers, who may then wait for the next.
                changes.publish(seq);
            }
            let reason = durable.err().map(|e| match e {
                LogError::Failed { reason } => reason,
                other => other.to_string(),
            });
            for (done, r) in dones.into_iter().zip(results) {
                let (Some(done), Some(r)) = (done, r) else {
                    continue;
                };
                let r = match (&reason, r) {
                    (Some(reason), Ok(_)) => Err(NsfError::LogFailed(reason.clone())),
                    (_, r) => r,
                };
                done(r);
            }
        };
        match (&self.core.durability, durable_at) {
            // I2: acknowledged only once the commit record is durable.
            (Durability::Logged { log, .. }, Some(end)) => {
                log.when_durable(end, Box::new(finish));
            }
            // Nothing appended, or unlogged: synced already (I12).
            _ => finish(Ok(())),
        }
    }
}
