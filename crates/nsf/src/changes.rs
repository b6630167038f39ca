//! Commit notification: the last change sequence a database has made
//! durable, and a way to wait for it to pass a value without polling.
//!
//! The queue publishes a group's new last sequence only once the group
//! is durable (I23): from the log writer's `when_durable` callback for a
//! logged database, right after its pages are synced for an unlogged
//! one. A commit is installed (visible, I13) before it is durable, so a
//! waiter woken by a publication reads the change. A change of the
//! instance's lifecycle (`state.rs`) wakes waiters too, so they learn
//! that no change will come (failed, engine shut down).
//!
//! Waiters use the usual listen-then-check order of `event-listener`,
//! which works from a plain thread (blocking, with a deadline) and from
//! any async runtime (the listener is a future), so this crate needs no
//! runtime of its own:
//!
//! ```text
//!   waiter: check ─▶ listen ─▶ check again ─▶ wait ─┐
//!      ▲                                          │ woken
//!      └──────────────────────────────────────────┘
//!   publisher: store seq (fetch_max) ─▶ notify all
//! ```

use crate::Seq;
use event_listener::{Event, EventListener};
use std::sync::atomic::{AtomicU64, Ordering};

/// A database's durable change sequence and the waiters for it.
pub(crate) struct Changes {
    durable: AtomicU64,
    event: Event,
}

impl Changes {
    /// `seq`: the last change sequence of the file as opened (all of it
    /// durable).
    pub fn new(seq: Seq) -> Changes {
        Changes {
            durable: AtomicU64::new(seq.0),
            event: Event::new(),
        }
    }

    /// The last change sequence known durable.
    pub fn durable(&self) -> Seq {
        Seq(self.durable.load(Ordering::Acquire))
    }

    /// A commit that took the database to `seq` is durable (I23): waiters
    /// are woken if that is news.
    pub fn publish(&self, seq: Seq) {
        if self.durable.fetch_max(seq.0, Ordering::AcqRel) < seq.0 {
            self.event.notify(usize::MAX);
        }
    }

    /// Wakes every waiter to look again (the lifecycle changed).
    pub fn wake_all(&self) {
        self.event.notify(usize::MAX);
    }

    /// A listener to wait on; made *before* the last look at the
    /// condition, so no publication between the two is missed.
    pub fn listen(&self) -> EventListener {
        self.event.listen()
    }
}
