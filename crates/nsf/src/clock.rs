//! Where the engine's times come from.
//!
//! Every time stamped on a note's identity — the sequence time of its
//! originator id, `created`, `modified`, `added` — and a new database's
//! creation time is read from the engine's [`Clock`]
//! (`EngineConfig::clock`), never from the system directly. Production
//! runs the [`SystemClock`]; tests (and simulations of replication
//! between replicas whose clocks disagree) set a [`ManualClock`] and
//! know exactly which time each edit carries.
//!
//! A settable clock can go back, and so can a system clock. The rule that
//! keeps identities ordered (I22): an edit's sequence time is never
//! earlier than the sequence time of the version it follows —
//! `max(clock, previous)`, so a clock that stands still or goes back gives
//! an equal time, never an earlier one; the sequence number still rises.

use crate::Timestamp;
use parking_lot::Mutex;
use std::fmt::Debug;
use std::time::Duration;

/// A source of the current time.
pub trait Clock: Send + Sync + Debug {
    fn now(&self) -> Timestamp;
}

/// The system's real-time clock.
#[derive(Clone, Copy, Debug, Default)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> Timestamp {
        Timestamp::now()
    }
}

/// A clock that says what it is told: the time it was set to, until set
/// again or advanced.
#[derive(Debug)]
pub struct ManualClock {
    now: Mutex<Timestamp>,
}

impl ManualClock {
    pub fn new(start: Timestamp) -> ManualClock {
        ManualClock {
            now: Mutex::new(start),
        }
    }

    /// Sets the time (earlier than before is allowed: see the module docs
    /// for what that does to sequence times).
    pub fn set(&self, t: Timestamp) {
        *self.now.lock() = t;
    }

    /// Moves the time forward by `by` (saturating at the largest time).
    pub fn advance(&self, by: Duration) {
        let micros = i64::try_from(by.as_micros()).unwrap_or(i64::MAX);
        let mut now = self.now.lock();
        *now = Timestamp(now.0.saturating_add(micros));
    }
}

impl Clock for ManualClock {
    fn now(&self) -> Timestamp {
        *self.now.lock()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_manual_clock_says_what_it_was_told() {
        let c = ManualClock::new(Timestamp(10));
        assert_eq!(c.now(), Timestamp(10));
        c.advance(Duration::from_millis(2));
        assert_eq!(c.now(), Timestamp(2_010));
        c.set(Timestamp(5));
        assert_eq!(c.now(), Timestamp(5));
        c.set(Timestamp(i64::MAX - 1));
        c.advance(Duration::from_secs(1));
        assert_eq!(c.now(), Timestamp(i64::MAX));
    }
}
