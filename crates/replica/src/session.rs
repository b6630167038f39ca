//! Session bookkeeping shared by both machines: the session id, the
//! numbering of packets each way, and the idle clock.
//!
//! The transport under a session is expected to be reliable and ordered
//! (a TCP connection), but the machines do not trust it to be: every
//! packet is numbered, a number already seen is a duplicate and is
//! dropped (replaying a message would be harmless for most messages, but
//! dropping is harmless for all), and a number past the next one means a
//! message was lost or overtaken, which ends the session — resuming from
//! the history is always correct, guessing what the missing message said
//! never is. Packets naming another session are stale leftovers and are
//! ignored.

use crate::error::ReplicaError;
use crate::ids::{Opening, SessionId};
use crate::msg::Packet;
use nsf::Timestamp;
use std::collections::VecDeque;

/// What to do with an arriving packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Admit {
    /// The next packet: handle it.
    Next,
    /// A duplicate, or a packet of another session: ignore it.
    Ignore,
}

/// One session's numbering and clock.
#[derive(Debug)]
pub(crate) struct Session {
    id: Option<SessionId>,
    next_out: u32,
    next_in: u32,
    idle_timeout: i64,
    now: Timestamp,
    last_progress: Timestamp,
}

impl Session {
    pub(crate) fn new(opening: Opening, idle_timeout: i64, now: Timestamp) -> Session {
        Session {
            id: match opening {
                Opening::Initiate(id) => Some(id),
                Opening::Respond => None,
            },
            next_out: 0,
            next_in: 0,
            idle_timeout,
            now,
            last_progress: now,
        }
    }

    /// Wraps the next outgoing message. A responder has a session id once
    /// the peer's first packet was admitted, before it ever sends.
    pub(crate) fn wrap<M>(&mut self, body: M) -> Packet<M> {
        let n = self.next_out;
        self.next_out = self.next_out.saturating_add(1);
        Packet {
            session: self.id.unwrap_or(SessionId(0)),
            n,
            body,
        }
    }

    /// Checks an arriving packet's session and number. A responder adopts
    /// the session of the first packet numbered 0.
    pub(crate) fn admit(&mut self, session: SessionId, n: u32) -> Result<Admit, ReplicaError> {
        match self.id {
            None if n == 0 => self.id = Some(session),
            None => {
                return Err(ReplicaError::Gap {
                    expected: 0,
                    got: n,
                })
            }
            Some(id) if id != session => return Ok(Admit::Ignore),
            Some(_) => {}
        }
        if n < self.next_in {
            return Ok(Admit::Ignore);
        }
        if n > self.next_in {
            return Err(ReplicaError::Gap {
                expected: self.next_in,
                got: n,
            });
        }
        self.next_in = self.next_in.saturating_add(1);
        self.progress();
        Ok(Admit::Next)
    }

    /// Something moved: the idle clock starts again.
    pub(crate) fn progress(&mut self) {
        self.last_progress = self.now;
    }

    /// The driver's clock moved to `now` (never backwards). Returns the
    /// idle time if it reached the timeout.
    pub(crate) fn tick(&mut self, now: Timestamp) -> Option<i64> {
        if now > self.now {
            self.now = now;
        }
        let idle = self.now.0.saturating_sub(self.last_progress.0);
        (idle >= self.idle_timeout).then_some(idle)
    }

    pub(crate) fn now(&self) -> Timestamp {
        self.now
    }
}

/// A machine's session and the actions it queued for its driver, kept
/// together because sending is both numbering and queueing.
#[derive(Debug)]
pub(crate) struct Out<A> {
    pub(crate) session: Session,
    actions: VecDeque<A>,
}

impl<A> Out<A> {
    pub(crate) fn new(session: Session) -> Out<A> {
        Out {
            session,
            actions: VecDeque::new(),
        }
    }

    /// Queues `body` for the peer, numbered.
    pub(crate) fn send<M>(&mut self, body: M)
    where
        A: From<Packet<M>>,
    {
        let packet = self.session.wrap(body);
        self.actions.push_back(A::from(packet));
    }

    /// Queues a local action.
    pub(crate) fn push(&mut self, action: A) {
        self.actions.push_back(action);
    }

    pub(crate) fn pop(&mut self) -> Option<A> {
        self.actions.pop_front()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn duplicates_are_ignored_and_gaps_refused() {
        let mut s = Session::new(Opening::Respond, 10, Timestamp(0));
        assert_eq!(s.admit(SessionId(7), 0), Ok(Admit::Next));
        assert_eq!(s.admit(SessionId(7), 0), Ok(Admit::Ignore));
        assert_eq!(s.admit(SessionId(8), 1), Ok(Admit::Ignore));
        assert_eq!(
            s.admit(SessionId(7), 2),
            Err(ReplicaError::Gap {
                expected: 1,
                got: 2
            })
        );
        assert_eq!(s.admit(SessionId(7), 1), Ok(Admit::Next));
        assert_eq!(s.wrap(()).session, SessionId(7));
    }

    #[test]
    fn a_responder_needs_packet_zero_first() {
        let mut s = Session::new(Opening::Respond, 10, Timestamp(0));
        assert_eq!(
            s.admit(SessionId(1), 3),
            Err(ReplicaError::Gap {
                expected: 0,
                got: 3
            })
        );
    }

    #[test]
    fn the_idle_clock_restarts_on_progress() {
        let mut s = Session::new(Opening::Initiate(SessionId(1)), 10, Timestamp(0));
        assert_eq!(s.tick(Timestamp(9)), None);
        s.progress();
        assert_eq!(s.tick(Timestamp(18)), None);
        assert_eq!(s.tick(Timestamp(5)), None, "the clock never runs backwards");
        assert_eq!(s.tick(Timestamp(19)), Some(10));
    }
}
