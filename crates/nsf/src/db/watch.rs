//! Waiting for a database's change sequence to pass a value: how a
//! background task (the mail router, replication) learns of new
//! changes without polling.
//!
//! A waiter names the last sequence it has seen and gets the first
//! durable sequence past it (I23): blocking, with a timeout, from a plain
//! thread ([`Database::wait_for_change`]), or as a future from an async
//! task ([`Database::next_change`], runtime-agnostic; put it in a
//! `select!` beside a stop signal, or under a timeout). Either returns an
//! error as soon as no change can come: the engine was shut down
//! (`EngineClosed`) or the database refuses writes (`DatabaseFailed`).
//!
//! The open-database cache: a waiter borrows the `Database`, so whoever
//! waits holds its `Arc`, and an instance in use is never closed (I19).
//! A database being waited on therefore stays open — meant for the few
//! databases a server task watches, not for thousands.

use super::Database;
use crate::{NsfResult, Seq};
use event_listener::Listener;
use std::time::{Duration, Instant};

impl Database {
    /// The last change sequence known durable: what waiters are woken
    /// for. It may trail [`Database::last_seq`], which a commit moves when
    /// it becomes visible, before it is durable (I13).
    pub fn durable_seq(&self) -> Seq {
        self.core.changes.durable()
    }

    /// Waits until the database's durable change sequence passes `after`
    /// and returns it; after `timeout`, returns the sequence unchanged
    /// (at most `after`). Fails at once, or when it happens while
    /// waiting, if no change can come: `EngineClosed` after a shutdown,
    /// `DatabaseFailed` for a database that refuses writes.
    pub fn wait_for_change(&self, after: Seq, timeout: Duration) -> NsfResult<Seq> {
        let deadline = Instant::now().checked_add(timeout);
        loop {
            if let Some(answer) = self.change_after(after) {
                return answer;
            }
            let listener = self.core.changes.listen();
            if let Some(answer) = self.change_after(after) {
                return answer;
            }
            match deadline {
                Some(at) => {
                    if listener.wait_deadline(at).is_none() {
                        return self.change_after(after).unwrap_or(Ok(self.durable_seq()));
                    }
                }
                None => listener.wait(),
            }
        }
    }

    /// [`Database::wait_for_change`] for async tasks, without a timeout
    /// of its own: it needs no particular runtime, and the caller bounds
    /// it (`tokio::time::timeout`, a `select!` with its stop signal).
    pub async fn next_change(&self, after: Seq) -> NsfResult<Seq> {
        loop {
            if let Some(answer) = self.change_after(after) {
                return answer;
            }
            let listener = self.core.changes.listen();
            if let Some(answer) = self.change_after(after) {
                return answer;
            }
            listener.await;
        }
    }

    /// The answer for a waiter on `after`, if there is one yet: the
    /// durable sequence once past it, or why no change can come.
    fn change_after(&self, after: Seq) -> Option<NsfResult<Seq>> {
        let durable = self.durable_seq();
        if durable > after {
            return Some(Ok(durable));
        }
        self.core.check_writable().err().map(Err)
    }
}
